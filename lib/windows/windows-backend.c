/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Windows folder: one process-level backend, "windows-job", which can
 * run where the probe proved that a job object kills the whole tree, and
 * enforces a limit only where the probe proved that limit functionally. */
#include <string.h>

#include "backend.h"
#include "windows-backend.h"

bool win_verdict_enforced(const fy_caps *c, const char *key) {
    const char *v = caps_fact(c, key);
    size_t n = strlen(WIN_ENFORCED);
    return v && strncmp(v, WIN_ENFORCED, n) == 0 && (v[n] == 0 || v[n] == ':');
}

static bool job_usable(const fy_caps *c, struct strbuf *why) {
    if (win_verdict_enforced(c, WIN_R_JOB))
        return true;
    const char *v = caps_fact(c, WIN_R_JOB);
    strbuf_printf(why, "%sjob object: %s", why->len ? "; " : "", v ? v : "not probed");
    return false;
}

static bool verdict(const fy_caps *c, const char *key, const char **why) {
    if (win_verdict_enforced(c, key))
        return true;
    const char *v = caps_fact(c, key);
    *why = v ? v : "not probed";
    return false;
}

static bool job_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_MEMORY_LIMIT: return verdict(c, WIN_R_MEMORY, why);
    case FY_CONTROL_PIDS_LIMIT: return verdict(c, WIN_R_PROCESSES, why);
    case FY_CONTROL_CPU_LIMIT: return verdict(c, WIN_R_CPU, why);
    case FY_CONTROL_LOW_INTEGRITY: return verdict(c, WIN_R_INTEGRITY, why);
    case FY_CONTROL_IO_LIMIT:
        *why = "the windows-job backend sets no I/O limit";
        return false;
    case FY_CONTROL_USERNS: case FY_CONTROL_MOUNTNS: case FY_CONTROL_PIDNS: case FY_CONTROL_NETNS:
    case FY_CONTROL_IPCNS: case FY_CONTROL_UTSNS: case FY_CONTROL_CGROUPNS:
        *why = "Windows has no namespaces";
        return false;
    case FY_CONTROL_SECCOMP: case FY_CONTROL_LANDLOCK:
        *why = "a Linux kernel mechanism";
        return false;
    case FY_CONTROL_UID_RANGE:
        *why = "the windows-job backend runs the workload as the caller (a restricted token), not as another user";
        return false;
    case FY_CONTROL_DEVICES:
        *why = "the windows-job backend has no device allowlist: a leased device could not be enforced";
        return false;
    case FY_CONTROL_COLD_BOOT:
        *why = "the windows-job backend boots no kernel of its own";
        return false;
    default:
        *why = "unknown control";
        return false;
    }
}

const struct fy_backend_ops windows_job_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "windows-job",
    .level = FY_LEVEL_PROCESS,
    .cost = 10,
    .usable = job_usable,
    .can_enforce = job_can_enforce,
    .compile = win_compile,
    .plan_free = win_plan_free,
    .start = win_start,
    .process = win_process,
    .terminate = win_terminate,
    .destroy = win_destroy,
    .forget = win_forget,
    .get_fd = win_get_fd,
    .stdio_fd = win_stdio_fd,
    .next_deadline = win_next_deadline,
    .describe = win_describe,
};

static const struct fy_backend_ops *const windows_backends[] = {
    &windows_job_backend,
    NULL,
};

/* gc: nothing of an attempt outlives its host process (the job is
 * killed when its last handle closes, the host's included at its death)
 * but its workspace directory, which fy_gc removes (win_gc). */
const struct fy_backend_family family_windows = {
    .version = FY_BACKEND_FAMILY_VERSION,
    .name = "windows",
    .probe = win_probe,
    .gc = win_gc,
    .backends = windows_backends,
    .fingerprint = win_snapshot_fingerprint,
    .snapshot_load = win_snapshot_load,
    .snapshot_store = win_snapshot_store,
};
