/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Descriptions of the Linux backends for capability negotiation: what each
 * needs from the host and which controls it can enforce there. */
#include <string.h>

#include "backend.h"
#include "linux-backend.h"
#include "linux-helper.h"
#include "linux-jobnet.h"
#include "linux-devices.h"
#include "linux-plan.h"
#include "linux-runc.h"
#include "linux-state.h"

static bool need(const fy_caps *c, uint32_t cap, struct strbuf *why) {
    if (caps_present(c, cap))
        return true;
    strbuf_printf(why, "%s%s: %s", why->len ? "; " : "", fy_cap_name(cap), fy_caps_reason(c, cap));
    return false;
}

static bool cap_for(const fy_caps *c, uint32_t cap, const char **why) {
    if (caps_present(c, cap))
        return true;
    *why = fy_caps_reason(c, cap);
    return false;
}

/* Controls both Linux backends enforce the same way (filters and cgroups). */
static bool common_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_SECCOMP: return cap_for(c, FY_CAP_SECCOMP, why);
    case FY_CONTROL_LANDLOCK: return cap_for(c, FY_CAP_LANDLOCK, why);
    case FY_CONTROL_MEMORY_LIMIT: return cap_for(c, FY_CAP_CGROUP_MEMORY, why);
    case FY_CONTROL_PIDS_LIMIT: return cap_for(c, FY_CAP_CGROUP_PIDS, why);
    case FY_CONTROL_CPU_LIMIT: return cap_for(c, FY_CAP_CGROUP_CPU, why);
    case FY_CONTROL_IO_LIMIT: return cap_for(c, FY_CAP_CGROUP_IO, why);
    case FY_CONTROL_COLD_BOOT:
        *why = "a fresh kernel per attempt needs a virtual machine; the Linux backends share the host's";
        return false;
    case FY_CONTROL_LOW_INTEGRITY:
        *why = "a Windows mechanism (mandatory integrity levels): only the windows-job backend enforces it";
        return false;
    default:
        *why = "unknown control";
        return false;
    }
}

static bool ns_usable(const fy_caps *c, struct strbuf *why) {
    bool ok = need(c, FY_CAP_USERNS, why);
    ok &= need(c, FY_CAP_MOUNTNS, why);
    ok &= need(c, FY_CAP_PIDNS, why);
    ok &= need(c, FY_CAP_PIDFD, why);
    /* (every path of the sandbox's tree is opened with openat2's
     * RESOLVE_NO_SYMLINKS/RESOLVE_BENEATH: there is no other walk) */
    ok &= need(c, FY_CAP_OPENAT2, why);
    return ok;
}

static bool ns_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_USERNS: return cap_for(c, FY_CAP_USERNS, why);
    case FY_CONTROL_MOUNTNS: return cap_for(c, FY_CAP_MOUNTNS, why);
    case FY_CONTROL_PIDNS: return cap_for(c, FY_CAP_PIDNS, why);
    case FY_CONTROL_NETNS: return cap_for(c, FY_CAP_NETNS, why);
    case FY_CONTROL_IPCNS: return cap_for(c, FY_CAP_IPCNS, why);
    case FY_CONTROL_UTSNS: return cap_for(c, FY_CAP_UTSNS, why);
    case FY_CONTROL_CGROUPNS: return cap_for(c, FY_CAP_CGROUPNS, why);
    case FY_CONTROL_UID_RANGE: return cap_for(c, FY_CAP_UID_RANGE, why);
    case FY_CONTROL_DEVICES:
        /* The probe placed a process under a list and saw it enforced. */
        if (caps_fact(c, LX_FACT_DEV_V1) ||
            (caps_fact(c, LX_FACT_DEV_BPF) && (caps_fact(c, LX_FACT_CG2_DIR) || caps_fact(c, LX_FACT_HELPER_CG2))))
            return true;
        *why = caps_fact(c, LX_FACT_DEV_REPORT) ? caps_fact(c, LX_FACT_DEV_REPORT)
                                                : "the probe did not look for a device cgroup";
        return false;
    default: return common_enforce(c, control, why);
    }
}

/* The run operations the namespace and container levels share: one
 * machinery (linux-spawn*.c), pre-started shells (linux-shell.c) included. */
#define LX_NS_RUN_OPS                                                                                          \
    .compile = linux_compile, .plan_free = linux_plan_free_hook, .start = lx_start, .process = lx_process,      \
    .terminate = lx_terminate, .destroy = lx_destroy, .forget = lx_forget, .get_fd = lx_get_fd,                 \
    .stdio_fd = lx_stdio_fd, .next_deadline = lx_next_deadline, .describe = linux_plan_describe,                \
    .unapplied = linux_plan_unapplied,                                                                         \
    .workload_ids = linux_plan_workload_ids, .build_overlaid = linux_plan_build_overlaid,                       \
    .shell_make = linux_shell_make, .shell_fits = linux_shell_fits, .shell_gone = linux_shell_gone,            \
    .shell_discard = lx_shell_discard, .shell_forget = linux_shell_forget, .start_shell = lx_start_shell,      \
    .job_make = ljn_make, .job_free = ljn_free, .job_forget = ljn_forget

const struct fy_backend_ops linux_namespace_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "linux-namespace",
    .level = FY_LEVEL_NAMESPACE,
    .cost = 20,
    .usable = ns_usable,
    .can_enforce = ns_can_enforce,
    LX_NS_RUN_OPS,
};

/* The container level: the namespace machinery over a verified image
 * (lib/oci, through the neutral plan) as an overlay root, which the probe
 * made once (lp_probe_overlay). */
static bool ctr_usable(const fy_caps *c, struct strbuf *why) {
    bool ok = ns_usable(c, why);
    const char *f = caps_fact(c, LX_FACT_OVERLAY);
    if (!f || (strcmp(f, "ok") != 0 && strncmp(f, LX_OVERLAY_DISK, strlen(LX_OVERLAY_DISK)) != 0)) {
        strbuf_printf(why, "%soverlay root: %s", why->len ? "; " : "", f ? f : "not probed");
        ok = false;
    }
    return ok;
}
const struct fy_backend_ops linux_container_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "linux-container",
    .level = FY_LEVEL_CONTAINER,
    .cost = 25,
    .usable = ctr_usable,
    .can_enforce = ns_can_enforce,
    LX_NS_RUN_OPS,
    .images = true,
};

static bool proc_usable(const fy_caps *c, struct strbuf *why) { return need(c, FY_CAP_PIDFD, why); }

static bool proc_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_IPCNS:
        /* Its one namespace: root's own, made without a user namespace. */
        if (c->host.is_root && caps_present(c, FY_CAP_IPCNS) && lx_may_sys_admin())
            return true;
        *why = "the linux-process backend makes an IPC namespace only as root (CAP_SYS_ADMIN)";
        return false;
    case FY_CONTROL_USERNS: case FY_CONTROL_MOUNTNS: case FY_CONTROL_PIDNS: case FY_CONTROL_NETNS:
    case FY_CONTROL_UTSNS: case FY_CONTROL_CGROUPNS:
        *why = "the linux-process backend uses no other namespace";
        return false;
    case FY_CONTROL_UID_RANGE:
        *why = "the linux-process backend has no user namespace to map ids in";
        return false;
    case FY_CONTROL_DEVICES:
        *why = "the linux-process backend has no /dev of the sandbox's own to lease devices into";
        return false;
    case FY_CONTROL_LANDLOCK:
        /* (its workspace paths' rules are opened with openat2's
         * RESOLVE_NO_SYMLINKS: no link on them is followed) */
        return common_enforce(c, control, why) && cap_for(c, FY_CAP_OPENAT2, why);
    default: return common_enforce(c, control, why);
    }
}

const struct fy_backend_ops linux_process_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "linux-process",
    .level = FY_LEVEL_PROCESS,
    .cost = 10,
    .usable = proc_usable,
    .can_enforce = proc_can_enforce,
    .compile = linux_compile,
    .plan_free = linux_plan_free_hook,
    .start = lx_start,
    .process = lx_process,
    .terminate = lx_terminate,
    .destroy = lx_destroy,
    .forget = lx_forget,
    .get_fd = lx_get_fd,
    .stdio_fd = lx_stdio_fd,
    .next_deadline = lx_next_deadline,
    .describe = linux_plan_describe,
    .unapplied = linux_plan_unapplied,
    .workload_ids = linux_plan_workload_ids,
};

/* fy_gc for this folder: the state directory (its default when NULL). */
static int linux_gc(const char *state_dir, uint64_t *destroyed, fy_error **reterr) {
    char def[4096];
    if (!state_dir) {
        int r = state_default_dir(def, sizeof(def));
        if (r < 0)
            return err_set(reterr, r, FY_STEP_CLEANUP, 0, NULL, "no default state directory");
        state_dir = def;
    }
    uint64_t n = 0;
    int r = state_gc(state_dir, &n, reterr);
    /* What no record names any more (its state directory deleted, its host
     * killed between the two): empty cgroups of dead owners only. */
    (void)linux_gc_unrecorded_cgroups(CG_UNRECORDED_MIN_AGE_SEC, state_dir);
    /* The OCI runtime adapter's bundles (their own directory, not records). */
    int left = linux_runc_gc(&n);
    *destroyed += n;
    if (r >= 0 && left)
        r = err_set(reterr, FY_E_IO, FY_STEP_CLEANUP, 0, NULL, "%d things of crashed runc attempts could not be removed",
                    left);
    return r;
}

static const struct fy_backend_ops *const linux_backends[] = {
    &linux_process_backend,
    &linux_namespace_backend,
    &linux_container_backend,
    &linux_runc_backend,
    &linux_crun_backend,
    NULL,
};

const struct fy_backend_family family_linux = {
    .version = FY_BACKEND_FAMILY_VERSION,
    .name = "linux",
    .probe = linux_probe,
    .delegated_cgroups = true,
    .gc = linux_gc,
    .qualify = linux_qualify_run,
    .backends = linux_backends,
    .fingerprint = linux_snapshot_fingerprint,
    .snapshot_load = linux_snapshot_load,
    .snapshot_store = linux_snapshot_store,
    .snapshot_extras = linux_snapshot_extras,
    .snapshot_verify = linux_snapshot_verify,
    .proxy_compile = linux_proxy_compile,
    .proxy_config_free = linux_proxy_config_free,
    .proxy_start = linux_proxy_start,
    .proxy_stop = linux_proxy_stop,
    .proxy_report = linux_proxy_report,
    .proxy_release = linux_proxy_release,
    .proxy_forget = linux_proxy_forget,
    .router_compile = linux_router_compile,
    .router_config_free = linux_router_config_free,
    .router_describe = linux_router_describe,
    .router_start = linux_router_start,
    .router_stop = linux_router_stop,
    .router_report = linux_router_report,
    .router_release = linux_router_release,
    .router_forget = linux_router_forget,
    .dns_compile = linux_dns_compile,
    .dns_config_free = linux_dns_config_free,
    .dns_start = linux_dns_start,
    .dns_report = linux_dns_report,
    .sandbox_attach = linux_sandbox_attach,
};
