/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For the probe: whether forgeyard-init can be executed on this host. */
#ifndef FY_LINUX_PROBE_INIT_H
#define FY_LINUX_PROBE_INIT_H

#include <stdbool.h>
#include <stddef.h>

/* linux-spawn-init.c: executes forgeyard-init in its probe mode the way
 * fy_start would. 1 and what ran in why, or 0 and why not; -1 and why
 * when the probing process was short of descriptors, memory, processes or
 * file size (RLIMIT_FSIZE) at that moment (inconclusive). As root with
 * user namespaces, *owner: whether it also ran with its user namespace
 * made by the range's first id, as fy_start makes it (1, owner_why "ok";
 * 0 and why not), else -1. */
int lx_probe_exec_init(bool userns, char *why, size_t whylen, int *owner, char *owner_why, size_t owner_whylen);

#endif
