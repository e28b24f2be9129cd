/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef FY_LINUX_MEMFD_H
#define FY_LINUX_MEMFD_H

#include <stdbool.h>
#include <stddef.h>

/* A sealed memfd (close-on-exec) holding len bytes of data (exec: MFD_EXEC
 * where the kernel knows it, else MFD_NOEXEC_SEAL), or -errno. */
int lx_sealed_memfd(const char *name, const void *data, size_t len, bool exec);

#endif
