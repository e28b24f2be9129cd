/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Linux folder's entries in its family (linux-backend.c): the probe,
 * the orphan collector and the qualification suite. */
#ifndef FY_LINUX_BACKEND_H
#define FY_LINUX_BACKEND_H

#include <jansson.h>

#include "backend.h"

/* The facts the Linux probe records for the Linux plan (caps_fact): the
 * cgroup v1 hierarchies (mount point + our own cgroup path), whether v1
 * memory has memsw, our own cgroup v2 directory (or the delegated one),
 * the OCI runtime and bwrap found. */
#define LX_FACT_CG1_MEMORY  "linux.cg1_memory"
#define LX_FACT_CG1_PIDS    "linux.cg1_pids"
#define LX_FACT_CG1_CPU     "linux.cg1_cpu"
#define LX_FACT_CG1_FREEZER "linux.cg1_freezer"
#define LX_FACT_CG1_BLKIO   "linux.cg1_blkio"
#define LX_FACT_CG1_CPUACCT "linux.cg1_cpuacct"
#define LX_FACT_CG1_CPUSET  "linux.cg1_cpuset"
#define LX_FACT_CG1_MEMSW   "linux.cg1_memsw"   /* "1" when present */
#define LX_FACT_CG2_DIR     "linux.cg2_dir"
#define LX_FACT_OCI_RUNTIME "linux.oci_runtime"
#define LX_FACT_BWRAP       "linux.bwrap"
#define LX_FACT_OVERLAY     "linux.overlay"     /* "ok", LX_OVERLAY_DISK..., or why an overlay root cannot be made */
/* As root: "ok" when forgeyard-init ran with its user namespace made by
 * the range's first id (lx_owner_enter), else why not; absent otherwise. */
#define LX_FACT_USERNS_OWNER "linux.userns_owner"
/* The fact's prefix when the upper must go on disk (a tmpfs in a user
 * namespace without user xattrs, before Linux 6.6), then why. */
#define LX_OVERLAY_DISK     "disk upper: "
/* The compiled seccomp programs in their saved form (sc_program_save), so
 * that a persisted probe snapshot spares a new process libseccomp's work;
 * the plan holds each to the self check before use. The key of one. */
void lx_seccomp_fact_key(char *buf, size_t len, uint32_t cls, bool notify, bool init);

/* The folder's two backends (linux-backend.c): the plan compiler tells
 * them apart. */
extern const struct fy_backend_ops linux_namespace_backend;
extern const struct fy_backend_ops linux_container_backend;
extern const struct fy_backend_ops linux_process_backend;

/* linux-probe*.c: namespaces, cgroups, seccomp, Landlock, pidfd, ... */
int linux_probe(fy_caps *c, uint64_t flags, fy_error **reterr);
/* linux-probe-cgroup.c: fy_gc's sweep of attempt cgroups no record names
 * (state_gc_unrecorded_cgroups over this process's cgroup parents). */
unsigned linux_gc_unrecorded_cgroups(unsigned min_age_sec, const char *state_dir);
/* linux-snapshot.c: persisted probe snapshots (struct fy_backend_family). */
int linux_snapshot_fingerprint(struct strbuf *key);
char *linux_snapshot_load(const char *dir, const char *key, fy_error **reterr);
int linux_snapshot_store(const char *dir, const char *key, const char *snapshot);
/* linux-probe-kernel.c: the compiled seccomp programs, in their saved form
 * (lx_seccomp_fact_key), for a probe about to be persisted. */
int linux_snapshot_extras(fy_caps *c);
int linux_snapshot_verify(const fy_caps *c);
/* linux-proxy-service.c: the fetch-only proxy as the family's service
 * (backend.h proxy_*). */
int linux_proxy_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
void linux_proxy_config_free(void *cfg);
int linux_proxy_start(const void *cfg, int listener, void **ret, fy_error **reterr);
unsigned linux_proxy_stop(void *proxy);
char *linux_proxy_report(const void *proxy);
void linux_proxy_release(void *proxy);
void linux_proxy_forget(void *proxy);
/* linux-net-vm.c: restricted's router with a tap, and the DNS stub, as the
 * family's services (backend.h router_*, dns_*). */
int linux_router_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
void linux_router_config_free(void *cfg);
char *linux_router_describe(const void *cfg, const struct fy_plan *np);
int linux_router_start(const void *cfg, int *tap, void **ret, fy_error **reterr);
unsigned linux_router_stop(void *router);
char *linux_router_report(void *router);
void linux_router_release(void *router);
void linux_router_forget(void *router);
int linux_dns_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
void linux_dns_config_free(void *cfg);
int linux_dns_start(const void *cfg, int sock, void **ret, fy_error **reterr);
char *linux_dns_report(const void *dns);
/* linux-attach.c: the family's sandbox_attach service (backend.h). */
int linux_sandbox_attach(fy_handle *sb, const char *host_dir, const char *target, fy_error **reterr);
/* linux-qualify.c: the suite behind fy_qualify (groups QUALIFY_*). */
int linux_qualify_run(const fy_policy *policy, uint32_t groups, const char *tmp_parent, const char *const *plant_dirs,
                      json_t **ret, fy_error **reterr);

#endif
