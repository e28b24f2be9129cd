/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The child's arguments and plan as one self-contained blob, for the
 * sandbox's init when it is a program of its own (forgeyard-init, executed
 * from a sealed memfd) rather than a copy of the host process: only what
 * linux-child.c reads, pointers stored as offsets into the blob. */
#ifndef FY_LINUX_PACK_H
#define FY_LINUX_PACK_H

#include <stddef.h>

#include "linux-plan.h"

#define LX_PACK_MAGIC 0x46594950u /* "FYIP" */
#define LX_PACK_VERSION 2u

/* Host side: a malloc'ed blob (the caller wipes and frees it: it holds the
 * secrets). 0 or FY_E_NOMEM. */
int lx_pack(const struct child_args *a, unsigned char **ret_blob, size_t *ret_len);

/* Init side: turns the offsets of a blob (writable, len bytes) back into
 * pointers in place; the arguments, or NULL when the blob is not one. */
struct child_args *lx_unpack(unsigned char *blob, size_t len);

#endif
