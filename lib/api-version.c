/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: version and freeing library-allocated buffers. */
#include <stdlib.h>

#include "internal.h"

uint32_t fy_version(void) { return FY_VERSION; }

const char *fy_version_string(void) { return FY_VERSION_STRING; }

void fy_free(void *ptr) { free(ptr); }
