/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The functional capability probe for Linux.
 *
 * Nothing here is a version check: every capability is tried for real, in a
 * forked child where it changes process state (namespaces, seccomp, Landlock)
 * and in a child cgroup of our own cgroup where it needs one. A missing
 * capability gets the failing operation and errno as its reason and a hint
 * for the doctor.
 *
 * The probe is split by responsibility; what the pieces share is declared in
 * linux-probe-internal.h:
 * - linux-probe.c (this file): the entry point linux_probe(), which runs the
 *   probes in their order, and what they share: the reason buffers, small
 *   file reads and writes, the report children;
 * - linux-probe-ns.c: user, mount, pid, net, ipc, uts and cgroup namespaces,
 *   the id map and the new mount API, in one forked child;
 * - linux-probe-kernel.c: seccomp, seccomp-notify, Landlock, no_new_privs
 *   (one forked child), pidfd, clone3, exec-init and openat2;
 * - linux-probe-cgroup.c: cgroup v1/v2 discovery and the per-controller,
 *   freeze, kill and CLONE_INTO_CGROUP tests;
 * - linux-probe-tools.c: the helper programs (crun/runc, pasta, bwrap).
 *
 * Rules every linux-probe*.c file keeps:
 * - The host may be multi-threaded: children are made with a raw
 *   clone(CLONE_PIDFD) (no atfork handlers) and, until _exit, use plain system
 *   calls only (no malloc, stdio, locks); they report a fixed-size record over
 *   a CLOEXEC pipe. Signals are blocked around the clone and stay blocked in
 *   the child. The parent waits with a deadline on the pidfd, SIGKILLs through
 *   it and reaps only its own pid (never waitpid(-1)).
 * - cgroups: we only ever mkdir, write into and rmdir CHILDREN of the cgroup
 *   we are in ("fy-probe-<pid>-<random>"). Our own cgroup and its ancestors
 *   are only read.
 * - No global state, no output, no signal handlers; every fd is O_CLOEXEC. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-devices.h"
#include "linux-helper.h"
#include "linux-probe-internal.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

/* ------------------------------------------------------------------ */
/* small helpers (parent side)                                        */
/* ------------------------------------------------------------------ */

int lp_first_try_ms = -1;
int lp_retry_factor = 8;

int lp_try_deadline_ms(int base_ms, int attempt) {
    if (attempt == 0)
        return lp_first_try_ms >= 0 ? lp_first_try_ms : base_ms;
    return base_ms * lp_retry_factor;
}

/* Appends to a fixed buffer; silently truncates. */
FY_PRINTF(2, 3)
void lp_bappend(char buf[REASON_MAX], const char *fmt, ...) {
    size_t len = strnlen(buf, REASON_MAX);
    if (len + 1 >= REASON_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, REASON_MAX - len, fmt, ap);
    va_end(ap);
}

/* Reads a whole (small, pseudo) file. Returns 0 or -errno; *ret is
 * NUL-terminated and owned by the caller. */
int lp_read_file(const char *path, char **ret, size_t max) {
    *ret = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= max) {
                free(buf);
                close(fd);
                return -EFBIG;
            }
            char *n = realloc(buf, cap * 2);
            if (!n) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = n;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    *ret = buf;
    return 0;
}

/* Writes a string to an existing file (never creates). 0 or -errno. */
int lp_write_existing(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = strlen(s);
    ssize_t w;
    do
        w = write(fd, s, len);
    while (w < 0 && errno == EINTR);
    int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
    if (close(fd) < 0 && e == 0 && errno != EINTR)
        e = errno;
    return -e;
}

/* Reads one "Key:\tvalue" line of /proc/self/status. */
static bool status_field(const char *status, const char *key, char *out, size_t size) {
    size_t klen = strlen(key);
    for (const char *l = status; l && *l;) {
        const char *nl = strchr(l, '\n');
        if (strncmp(l, key, klen) == 0 && l[klen] == ':') {
            const char *v = l + klen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t n = nl ? (size_t)(nl - v) : strlen(v);
            if (n >= size)
                n = size - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return true;
        }
        l = nl ? nl + 1 : NULL;
    }
    return false;
}

static void read_self_status(struct self_status *st) {
    memset(st, 0, sizeof *st);
    st->seccomp_filters = -1;
    char *s = NULL;
    if (lp_read_file("/proc/self/status", &s, 1u << 20) < 0)
        return;
    char v[64];
    st->have = true;
    if (status_field(s, "CapEff", v, sizeof v))
        st->cap_eff = strtoull(v, NULL, 16);
    if (status_field(s, "Seccomp", v, sizeof v))
        st->seccomp_mode = atoi(v);
    if (status_field(s, "Seccomp_filters", v, sizeof v))
        st->seccomp_filters = atoi(v);
    if (status_field(s, "NoNewPrivs", v, sizeof v))
        st->no_new_privs = atoi(v);
    free(s);
}

void lp_outer_seccomp_note(const struct self_status *st, char buf[REASON_MAX]) {
    if (st->seccomp_mode == 2) {
        if (st->seccomp_filters > 0)
            lp_bappend(buf, "; this process already runs under %d seccomp filter(s) "
                       "(outer seccomp)", st->seccomp_filters);
        else
            lp_bappend(buf, "; this process already runs under a seccomp filter (outer seccomp)");
    }
}

/* ------------------------------------------------------------------ */
/* child processes                                                    */
/* ------------------------------------------------------------------ */

/* Forks a child that runs fn(arg, wfd) and _exits. Signals are blocked
 * around the fork and stay blocked in the child. 0 or -errno. */
int lp_child_start(struct child *c, child_fn fn, void *arg, int extra_close_in_child) {
    memset(c, 0, sizeof *c);
    c->p.pid = -1;
    c->p.pidfd = -1;
    c->rfd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = sys_fork_quiet_pidfd(&pidfd);
    if (pid == 0) {
        close(p[0]);
        if (extra_close_in_child >= 0)
            close(extra_close_in_child);
        fn(arg, p[1]);
        _exit(0);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -e;
    }
    c->p.pid = pid;
    c->rfd = p[0];
    c->p.pidfd = pidfd;
    return 0;
}

/* Reads exactly len bytes before the deadline. Returns len, the number of
 * bytes read when EOF came first, -ETIMEDOUT or -errno. */
ssize_t lp_read_deadline(int fd, void *buf, size_t len, uint64_t deadline) {
    size_t got = 0;
    while (got < len) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int r = poll(&pfd, 1, pu_ms_left(deadline));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -ETIMEDOUT;
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Reaps the child (pu_finish: SIGKILL after the deadline, then a bounded
 * grace) and closes its fds, the report pipe last. Returns true when the
 * child was reaped. */
bool lp_child_finish(struct child *c, uint64_t deadline, bool *ret_killed) {
    bool reaped = pu_finish(&c->p, deadline, ret_killed);
    if (c->rfd >= 0)
        close(c->rfd);
    c->rfd = -1;
    return reaped;
}

/* Async-signal-safe helper for children (linux-probe-ns.c has the other,
 * cw_file). */
void lp_cw_report(int wfd, const void *rep, size_t len) {
    ssize_t w;
    do
        w = write(wfd, rep, len);
    while (w < 0 && errno == EINTR);
}

/* ------------------------------------------------------------------ */
/* entry point                                                        */
/* ------------------------------------------------------------------ */

/* Who the caller is, as the probe records it: root means effective uid 0
 * with CAP_SYS_ADMIN. */
static bool host_is_root(const struct self_status *st) {
    return geteuid() == 0 && st->have && (st->cap_eff & (UINT64_C(1) << 21)) != 0;
}

/* A saved probe is read, not trusted, for who the caller is: its key names
 * the ids it was made under, but its body is what the plan reads (the
 * rootless id map, the process level's user), so a body that says another
 * caller (edited: "root 0" made a root caller map host uid 0 into the
 * sandbox) is refused and the host probed again. */
int linux_snapshot_verify(const fy_caps *c) {
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    bool root = geteuid() == 0 && syscall(SYS_capget, &hdr, data) == 0 && (data[0].effective & (1u << 21));
    return c->host.is_root == root && c->host.uid == (uint32_t)getuid() && c->host.gid == (uint32_t)getgid() ? 0 : -1;
}

int linux_probe(fy_caps *c, uint64_t flags, fy_error **reterr) {
    (void)flags;
    if (!c)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "linux_probe: no caps");

    struct self_status st;
    read_self_status(&st);
    bool has_sys_admin = st.have && (st.cap_eff & (UINT64_C(1) << 21)) != 0;
    bool is_root = host_is_root(&st);

    c->host.is_root = is_root;
    c->host.uid = (uint32_t)getuid();
    c->host.gid = (uint32_t)getgid();
    struct utsname u;
    if (util_uname(&u) == 0 && !(c->host.kernel_release = util_strdup(u.release)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");

    lp_probe_namespaces(c, is_root, has_sys_admin, &st);
    lp_probe_seccomp_landlock(c, &st);
    lp_probe_pidfd(c);
    lp_probe_clone3(c);
    lp_probe_exec_init(c);
    lp_probe_openat2(c);
    if (caps_present(c, FY_CAP_USERNS) && caps_present(c, FY_CAP_MOUNTNS))
        lp_probe_overlay(c);
    else
        (void)caps_set_fact(c, LX_FACT_OVERLAY, "needs a user and a mount namespace");

    struct cg_state cg;
    memset(&cg, 0, sizeof cg);
    if (lp_cg_discover(&cg) < 0) {
        lp_cg_free(&cg);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");
    }
    if (c->host.cg2_delegated) {
        /* The host program delegated a v2 subtree: sandboxes live there. */
        struct statfs sfs;
        if (statfs(c->host.cg2_delegated, &sfs) < 0 || sfs.f_type != 0x63677270 /* CGROUP2_SUPER_MAGIC */) {
            int e = errno;
            lp_cg_free(&cg);
            return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, e, NULL, "%s is not a cgroup v2 directory",
                           c->host.cg2_delegated);
        }
        free(cg.cg2_dir);
        if (!(cg.cg2_dir = util_strdup(c->host.cg2_delegated))) {
            lp_cg_free(&cg);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");
        }
    }
    lp_probe_cgroups(c, &cg, is_root);
    static const char *const keys[CG__N] = { LX_FACT_CG1_MEMORY, LX_FACT_CG1_PIDS, LX_FACT_CG1_CPU,
                                             LX_FACT_CG1_FREEZER, LX_FACT_CG1_BLKIO, LX_FACT_CG1_CPUACCT };
    /* A hierarchy is offered to the plan only where the probe made a child
     * cgroup in it (and, but for cpuacct, set its limit there): the plan
     * makes every attempt's cgroups where these facts say, so a mounted
     * hierarchy the caller cannot write (a host that delegated only some
     * controllers) would fail every start. */
    int fr = 0;
    for (int i = 0; i < CG__N; i++)
        fr |= caps_set_fact(c, keys[i], (i == CG_CPUACCT ? cg.v1[i].usable : cg.v1[i].ok) ? cg.v1[i].dir : NULL);
    fr |= caps_set_fact(c, LX_FACT_CG1_MEMSW, cg.memsw ? "1" : NULL);
    /* (Only for the cgroup view: a runtime on a v1 host sizes itself only
     * when it finds cpuset, cpu and cpuacct cgroups of its own too.) */
    fr |= caps_set_fact(c, LX_FACT_CG1_CPUSET, is_root && cg.cpuset1_dir && access(cg.cpuset1_dir, W_OK) == 0
                                                   ? cg.cpuset1_dir : NULL);
    fr |= caps_set_fact(c, LX_FACT_CG2_DIR, cg.cg2_dir);
    /* The device allowlist (FY_CONTROL_DEVICES): v1 devices, v2 program. */
    fr |= lx_dev_probe(c, cg.dev1_dir, cg.cg2_dir);
    lp_cg_free(&cg);
    /* Unprivileged: the limits root would set, through the privileged helper. */
    if (!is_root && !fr)
        lx_helper_probe(c);
    if (fr || !c->host.cgroup_mode)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");

    return lp_probe_programs(c, is_root);
}
