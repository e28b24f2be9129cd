/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The external OCI runtime adapter (linux-runc.c): the container level run
 * by runc (or crun: the same command line) over the library's own image
 * cache, per-attempt cgroups and output capture, chosen only when the
 * policy names the runtime (fy_policy_set_runtime). Private to lib/linux/. */
#ifndef FY_LINUX_RUNC_H
#define FY_LINUX_RUNC_H

#include <stdbool.h>

#include "backend.h"

/* Facts of the runtime probe (caps_fact), per runtime NAME ("runc",
 * "crun"): linux.NAME (its path), linux.NAME_version, linux.NAME_verdict
 * ("ok" or why it cannot be used here) and linux.NAME_issues (its known
 * unfixed vulnerabilities; absent when none are known). */
#define LX_FACT_RUNTIME_PREFIX "linux."

/* linux-runc.c: finds and judges runc and crun (FY_CAP_OCI_RUNTIME). */
void lp_probe_runtimes(fy_caps *c, bool is_root);

/* linux-runc.c: the bundles of hosts that died (fy_gc): destroyed, counted
 * in *destroyed; how many things could not be removed. */
int linux_runc_gc(uint64_t *destroyed);

extern const struct fy_backend_ops linux_runc_backend;
extern const struct fy_backend_ops linux_crun_backend;

#endif
