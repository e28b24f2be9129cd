/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Architectures forgeyard-init is not built for: the sandbox's init is a
 * copy of the host process (linux-child.c). */
#include <stddef.h>
const unsigned char lx_init_blob[1] = {0};
const size_t lx_init_blob_len = 0;
