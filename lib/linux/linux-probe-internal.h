/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the pieces of the Linux probe share (linux-probe.c has the rules and
 * the map of the files). Private to lib/linux/linux-probe*.c. */
#ifndef FY_LINUX_PROBE_INTERNAL_H
#define FY_LINUX_PROBE_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "caps.h"
#include "linux-probe-util.h"

#define CHILD_DEADLINE_MS 1000

/* A probe child that does not report in time says the host was busy, not
 * that a mechanism is missing: it is run once more with lp_retry_factor
 * times its deadline, and a probe in which one timed out twice is marked
 * inconclusive (fy_probe_snapshot never saves it). attempt 0 or 1; the
 * white-box tests set lp_first_try_ms (0: every first try times out) and
 * lp_retry_factor. */
extern int lp_first_try_ms;
extern int lp_retry_factor;
int lp_try_deadline_ms(int base_ms, int attempt);
#define REPORT_MAGIC 0x66797062u /* "fypb" */

#define REASON_MAX 1024

/* ------------------------------------------------------------------ */
/* small helpers (parent side): linux-probe.c                         */
/* ------------------------------------------------------------------ */

/* Appends to a fixed buffer; silently truncates. */
void lp_bappend(char buf[REASON_MAX], const char *fmt, ...) FY_PRINTF(2, 3);

/* Reads a whole (small, pseudo) file. Returns 0 or -errno; *ret is
 * NUL-terminated and owned by the caller. */
int lp_read_file(const char *path, char **ret, size_t max);

/* Writes a string to an existing file (never creates). 0 or -errno. */
int lp_write_existing(const char *path, const char *s);

/* What /proc/self/status says about this process (read by linux_probe). */
struct self_status {
    bool have;
    uint64_t cap_eff;
    int seccomp_mode;    /* 0 none, 1 strict, 2 filter */
    int seccomp_filters; /* -1 unknown */
    int no_new_privs;
};

/* Appends "; this process already runs under ... seccomp filter(s) (outer
 * seccomp)" when it does. */
void lp_outer_seccomp_note(const struct self_status *st, char buf[REASON_MAX]);

/* ------------------------------------------------------------------ */
/* child processes: linux-probe.c                                     */
/* ------------------------------------------------------------------ */

struct child {
    struct pu_proc p;
    int rfd; /* report pipe, read end */
};

typedef void (*child_fn)(void *arg, int wfd);

/* Forks a child that runs fn(arg, wfd) and _exits. Signals are blocked
 * around the fork and stay blocked in the child. 0 or -errno. */
int lp_child_start(struct child *c, child_fn fn, void *arg, int extra_close_in_child);

/* Reads exactly len bytes before the deadline. Returns len, the number of
 * bytes read when EOF came first, -ETIMEDOUT or -errno. */
ssize_t lp_read_deadline(int fd, void *buf, size_t len, uint64_t deadline);

/* Reaps the child (pu_finish: SIGKILL after the deadline, then a bounded
 * grace) and closes its fds, the report pipe last. Returns true when the
 * child was reaped. */
bool lp_child_finish(struct child *c, uint64_t deadline, bool *ret_killed);

/* Async-signal-safe: writes a child's report (retries EINTR). */
void lp_cw_report(int wfd, const void *rep, size_t len);

/* One test in a child's report (struct ns_report, struct sec_report). */
struct ns_result {
    int32_t state; /* 0 not run, 1 ok, 2 failed */
    int32_t op;
    int32_t err;
};

/* ------------------------------------------------------------------ */
/* the probes, in the order linux_probe runs them                     */
/* ------------------------------------------------------------------ */

/* linux-probe-ns.c: user namespace and id map, mount namespace and mount
 * API, UTS, IPC, network, cgroup and pid namespaces; uid range. */
/* linux-probe-overlay.c: the container level's overlay root (LX_FACT_OVERLAY). */
void lp_probe_overlay(fy_caps *c);
void lp_probe_namespaces(fy_caps *c, bool is_root, bool has_sys_admin,
                         const struct self_status *st);

/* linux-probe-kernel.c */
void lp_probe_seccomp_landlock(fy_caps *c, const struct self_status *st);
void lp_probe_pidfd(fy_caps *c);
void lp_probe_clone3(fy_caps *c);
void lp_probe_exec_init(fy_caps *c);
void lp_probe_openat2(fy_caps *c);

/* linux-probe-kernel.c, also used by the cgroup probe: */
/* Bounded reap of a pid we own (SIGKILL after the deadline). */
void lp_reap_pid(pid_t pid, int pidfd, int ms);
/* clone3 with CLONE_PIDFD (and optionally CLONE_INTO_CGROUP). The child waits
 * for EOF on a pipe when hold is set, else exits 42 at once. Returns the pid
 * or -errno; *ret_pidfd and *ret_wfd receive the pidfd / pipe write end. */
pid_t lp_clone3_child(int cgroup_fd, bool hold, int *ret_pidfd, int *ret_wfd);

/* linux-probe-cgroup.c: discovery fills a struct cg_state (linux_probe
 * owns it and takes the paths it keeps), then the tests. The CG_* order is
 * the probe's own (cg1_name[], the host.cg1_* fields linux_probe fills), not
 * linux-cgroup.h's enum cg_ctl: the two headers are never included together. */
enum { CG_MEMORY, CG_PIDS, CG_CPU, CG_FREEZER, CG_BLKIO, CG_CPUACCT, CG__N };

struct cg1_ctl {
    char *dir;       /* mount point + our own path (owned) */
    bool tested;     /* its limit was tried (every controller but cpuacct, which has none) */
    bool ok;         /* ... and a child cgroup took it */
    bool usable;     /* we made and removed a child cgroup here (cpuacct: all it is checked for) */
    char why[REASON_MAX];
};

struct cg_state {
    /* discovery */
    bool any_v1;          /* a v1 hierarchy with real controllers is mounted */
    char *cg2_mount;      /* cgroup2 mount point (owned) */
    char *cg2_dir;        /* our own v2 directory (owned) */
    char cg2_path[PATH_MAX];
    bool cg2_in_proc;     /* /proc/self/cgroup has a 0:: line */
    struct cg1_ctl v1[CG__N];
    char *dev1_dir;       /* our v1 devices cgroup (linux-devices.c probes it; owned) */
    char *cpuset1_dir;    /* our v1 cpuset cgroup (the cgroup view's, linux-plan.c; owned) */
    bool memsw;
    /* v2 results */
    char v2_controllers[256]; /* our cgroup's cgroup.controllers */
    char v2_subtree[256];     /* our cgroup's cgroup.subtree_control */
    char v2_child_ctl[256];   /* the child's cgroup.controllers */
    bool v2_mkdir_ok;
    bool v2_rmdir_failed;
    char v2_why[REASON_MAX];  /* why v2 is unusable */
    bool v2_ctl_ok[4];        /* memory pids cpu io */
    char v2_ctl_why[4][REASON_MAX];
    bool v2_freeze_ok;
    char v2_freeze_why[REASON_MAX];
    bool v2_kill_ok;
    char v2_kill_why[REASON_MAX];
    bool into_ok;
    char into_why[REASON_MAX];
};

/* Parses /proc/self/cgroup and /proc/self/mountinfo. -ENOMEM only. */
int lp_cg_discover(struct cg_state *s);
void lp_cg_free(struct cg_state *s);
void lp_probe_cgroups(fy_caps *c, struct cg_state *s, bool is_root);

/* linux-probe-tools.c: crun/runc, nft, pasta, bwrap. */
int lp_probe_programs(fy_caps *c, bool is_root);

#endif
