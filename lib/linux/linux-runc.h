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

/* What the runtime adapter adds to the Linux plan (pl->ext). */
struct runc_plan {
    const char *runtime;     /* "runc" */
    const char *path;        /* the runtime's program */
    const char *config;      /* config.json, paths relative to the bundle */
    const char **files;      /* PE_FILE contents, written to files/N */
    size_t nfiles;
    const char *upper_opts;  /* the tmpfs that holds the overlay's upper */
};

/* linux-runc-run.c: the run operations of both backends (struct
 * fy_backend_ops), and the bundles of hosts that died (fy_gc): destroyed, counted
 * in *destroyed; how many things could not be removed. */
int linux_runc_gc(uint64_t *destroyed);
int lxr_start(fy_handle *h, fy_error **reterr);
int lxr_process(fy_handle *h, fy_error **reterr);
void lxr_terminate(fy_handle *h);
void lxr_destroy(fy_handle *h);
void lxr_forget(fy_handle *h);
int lxr_get_fd(fy_handle *h);
uint64_t lxr_next_deadline(fy_handle *h);

extern const struct fy_backend_ops linux_runc_backend;
extern const struct fy_backend_ops linux_crun_backend;

#endif
