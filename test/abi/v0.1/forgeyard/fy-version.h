/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: version (as released in 0.1.0; kept for the ABI test). */
#ifndef FORGEYARD_FY_VERSION_H
#define FORGEYARD_FY_VERSION_H

#include "fy-common.h"

#define FY_VERSION_MAJOR 0
#define FY_VERSION_MINOR 1
#define FY_VERSION_MICRO 0
#define FY_VERSION_STRING "0.1.0"

/* The version as one number: major * 65536 + minor * 256 + micro (usable in #if). */
#define FY_VERSION_NUMBER(major, minor, micro) ((major) * 65536 + (minor) * 256 + (micro))
#define FY_VERSION FY_VERSION_NUMBER(FY_VERSION_MAJOR, FY_VERSION_MINOR, FY_VERSION_MICRO)

/* True when the headers are at least the given version. */
#define FY_CHECK_VERSION(major, minor, micro) \
    (FY_VERSION >= FY_VERSION_NUMBER(major, minor, micro))

FY_BEGIN_DECLS

/* The version of the library actually loaded (FY_VERSION_NUMBER layout). */
FY_API uint32_t fy_version(void);
FY_API const char *fy_version_string(void);

FY_END_DECLS

#endif
