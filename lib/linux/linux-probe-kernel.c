/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel interfaces the sandbox relies on (linux-probe.c has the rules):
 * no_new_privs, Landlock, seccomp and seccomp user notification, tried in
 * one forked child; pidfd, clone3, the execution of forgeyard-init and
 * openat2, tried from the parent. sec_child and sec_landlock, and the
 * children of fork_waiter and lp_clone3_child, run between fork and _exit:
 * plain system calls only. lp_clone3_child and lp_reap_pid are also the
 * cgroup probe's (linux-probe-cgroup.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "caps.h"
#include "forgeyard/fy-policy.h"
#include "linux-backend.h"
#include "linux-probe-init.h"
#include "linux-probe-internal.h"
#include "linux-probe-util.h"
#include "linux-seccomp.h"
#include "linux-syscall.h"

/* ------------------------------------------------------------------ */
/* seccomp, no_new_privs, Landlock                                    */
/* ------------------------------------------------------------------ */

enum sec_test { ST_NNP, ST_LANDLOCK, ST_SECCOMP, ST_NOTIF_AVAIL, ST_NOTIF_LISTENER, ST__N };
enum sec_op {
    SOP_NONE, SOP_SET_NNP, SOP_GET_NNP, SOP_LL_CREATE, SOP_LL_OPEN, SOP_LL_ADD, SOP_LL_RESTRICT,
    SOP_LL_INSIDE, SOP_LL_OUTSIDE_OPENED, SOP_LL_OUTSIDE_ERRNO, SOP_SECCOMP, SOP_PRCTL_SECCOMP,
    SOP_ACTION_AVAIL, SOP_LISTENER, SOP__N
};

static const char *const sec_op_name[SOP__N] = {
    [SOP_NONE] = "nothing",
    [SOP_SET_NNP] = "prctl(PR_SET_NO_NEW_PRIVS)",
    [SOP_GET_NNP] = "prctl(PR_GET_NO_NEW_PRIVS) did not read 1",
    [SOP_LL_CREATE] = "landlock_create_ruleset",
    [SOP_LL_OPEN] = "open(\"/dev\", O_PATH)",
    [SOP_LL_ADD] = "landlock_add_rule(/dev)",
    [SOP_LL_RESTRICT] = "landlock_restrict_self",
    [SOP_LL_INSIDE] = "open(\"/dev/null\") inside the ruleset",
    [SOP_LL_OUTSIDE_OPENED] = "open(\"/\") outside the ruleset was allowed",
    [SOP_LL_OUTSIDE_ERRNO] = "open(\"/\") outside the ruleset failed with an unexpected errno",
    [SOP_SECCOMP] = "seccomp(SECCOMP_SET_MODE_FILTER)",
    [SOP_PRCTL_SECCOMP] = "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)",
    [SOP_ACTION_AVAIL] = "seccomp(SECCOMP_GET_ACTION_AVAIL, SECCOMP_RET_USER_NOTIF)",
    [SOP_LISTENER] = "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)",
};

struct sec_report {
    uint32_t magic;
    struct ns_result r[ST__N];
};

struct sec_args {
    int landlock_abi;
};

#define SEC_OK(rep, t) ((rep)->r[t].state = 1)
#define SEC_FAIL(rep, t, o, e) \
    ((rep)->r[t].state = 2, (rep)->r[t].op = (o), (rep)->r[t].err = (e))

#ifndef SECCOMP_GET_ACTION_AVAIL
#  define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#  define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#  define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

static void sec_landlock(struct sec_report *rep) {
    struct landlock_ruleset_attr ra;
    memset(&ra, 0, sizeof ra);
    ra.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    int rs = sys_landlock_create_ruleset(&ra, sizeof ra, 0);
    if (rs < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_CREATE, errno);
        return;
    }
    int dir = open("/dev", O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (dir < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_OPEN, errno);
        close(rs);
        return;
    }
    struct landlock_path_beneath_attr pb;
    memset(&pb, 0, sizeof pb);
    pb.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    pb.parent_fd = dir;
    if (sys_landlock_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_ADD, errno);
        close(dir);
        close(rs);
        return;
    }
    close(dir);
    if (sys_landlock_restrict_self(rs, 0) < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_RESTRICT, errno);
        close(rs);
        return;
    }
    close(rs);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_INSIDE, errno);
        return;
    }
    close(in);
    int out = open("/", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (out >= 0) {
        close(out);
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_OUTSIDE_OPENED, 0);
    } else if (errno != EACCES) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_OUTSIDE_ERRNO, errno);
    } else {
        SEC_OK(rep, ST_LANDLOCK);
    }
}

static void sec_child(void *arg, int wfd) {
    const struct sec_args *a = arg;
    struct sec_report rep;
    memset(&rep, 0, sizeof rep);
    rep.magic = REPORT_MAGIC;

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        SEC_FAIL(&rep, ST_NNP, SOP_SET_NNP, errno);
    else if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        SEC_FAIL(&rep, ST_NNP, SOP_GET_NNP, 0);
    else
        SEC_OK(&rep, ST_NNP);

    if (a->landlock_abi > 0)
        sec_landlock(&rep);

    struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
    struct sock_fprog prog = { .len = 1, .filter = allow };
    if (sys_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) {
        SEC_OK(&rep, ST_SECCOMP);
    } else if (errno == ENOSYS) {
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
            SEC_OK(&rep, ST_SECCOMP);
        else
            SEC_FAIL(&rep, ST_SECCOMP, SOP_PRCTL_SECCOMP, errno);
    } else {
        SEC_FAIL(&rep, ST_SECCOMP, SOP_SECCOMP, errno);
    }

    uint32_t act = SECCOMP_RET_USER_NOTIF;
    if (sys_seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0)
        SEC_OK(&rep, ST_NOTIF_AVAIL);
    else
        SEC_FAIL(&rep, ST_NOTIF_AVAIL, SOP_ACTION_AVAIL, errno);

    if (rep.r[ST_NOTIF_AVAIL].state == 1) {
        int lfd = sys_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (lfd < 0) {
            SEC_FAIL(&rep, ST_NOTIF_LISTENER, SOP_LISTENER, errno);
        } else {
            close(lfd);
            SEC_OK(&rep, ST_NOTIF_LISTENER);
        }
    }
    lp_cw_report(wfd, &rep, sizeof rep);
}

static void sec_fmt_fail(const struct ns_result *r, char buf[REASON_MAX]) {
    const char *op = r->op >= 0 && r->op < SOP__N && sec_op_name[r->op] ? sec_op_name[r->op]
                                                                        : "?";
    if (r->err)
        lp_bappend(buf, "%s failed: " EFMT, op, EARG(r->err));
    else
        lp_bappend(buf, "%s", op);
}

void lp_probe_seccomp_landlock(fy_caps *c, const struct self_status *st) {
    /* Landlock ABI (no side effects: parent) */
    int abi = sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    int abi_err = abi < 0 ? errno : 0;

    struct sec_args a = { .landlock_abi = abi > 0 ? abi : 0 };
    struct sec_report rep;
    memset(&rep, 0, sizeof rep);
    char fail[REASON_MAX] = "";
    bool timed_out = false, transient = false;
    for (int t = 0; t < 2 && (t == 0 || timed_out || transient); t++) {
        fail[0] = '\0';
        timed_out = transient = false;
        struct child ch;
        int r = lp_child_start(&ch, sec_child, &a, -1);
        if (r < 0) {
            transient = pu_short_of(-r);
            lp_bappend(fail, "fork: " EFMT, EARG(-r));
            continue;
        }
        int ms = lp_try_deadline_ms(CHILD_DEADLINE_MS, t);
        uint64_t deadline = pu_deadline_after_ms(ms);
        ssize_t n = lp_read_deadline(ch.rfd, &rep, sizeof rep, deadline);
        bool killed = false;
        (void)lp_child_finish(&ch, deadline, &killed);
        if (n != (ssize_t)sizeof rep || rep.magic != REPORT_MAGIC) {
            if ((timed_out = killed || n == -ETIMEDOUT))
                lp_bappend(fail, "the seccomp/Landlock probe child did not report within %d ms", ms);
            else if (ch.p.reaped && ch.p.status != -1 && WIFSIGNALED(ch.p.status))
                lp_bappend(fail, "the seccomp/Landlock probe child was killed by signal %d%s",
                           WTERMSIG(ch.p.status),
                           WTERMSIG(ch.p.status) == SIGSYS ? " (SIGSYS: an outer seccomp filter)"
                                                        : "");
            else
                lp_bappend(fail, "the seccomp/Landlock probe child exited without a report");
            memset(&rep, 0, sizeof rep);
        }
    }
    if (timed_out || transient)
        c->inconclusive = true;
    bool ran = fail[0] == '\0';
    char why[REASON_MAX];

    /* no_new_privs */
    why[0] = '\0';
    if (!ran) {
        caps_set(c, FY_CAP_NO_NEW_PRIVS, false, 0, "%s", fail);
    } else if (rep.r[ST_NNP].state == 1) {
        caps_set(c, FY_CAP_NO_NEW_PRIVS, true, 1, "prctl(PR_SET_NO_NEW_PRIVS) took effect in a "
                 "child%s", st->no_new_privs ? " (this process already has it set)" : "");
    } else {
        sec_fmt_fail(&rep.r[ST_NNP], why);
        lp_outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_NO_NEW_PRIVS, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_NO_NEW_PRIVS, "a kernel >= 3.5 with prctl allowed");
    }

    /* seccomp */
    why[0] = '\0';
    if (!ran) {
        caps_set(c, FY_CAP_SECCOMP, false, 0, "%s", fail);
    } else if (rep.r[ST_SECCOMP].state == 1 && sc_api_level() < 3) {
        /* A filter loads, but not one the library can build. */
        caps_set(c, FY_CAP_SECCOMP, false, 0, "a seccomp filter loads, but libseccomp's API level here is %u: no "
                 "SECCOMP_RET_KILL_PROCESS, with which every profile's filter ends (a kernel < 4.14, or an outer "
                 "filter refusing SECCOMP_GET_ACTION_AVAIL)", sc_api_level());
        caps_set_hint(c, FY_CAP_SECCOMP, "a kernel >= 4.14; an outer seccomp profile must allow seccomp(2)'s "
                      "SECCOMP_GET_ACTION_AVAIL");
    } else if (rep.r[ST_SECCOMP].state == 1) {
        lp_bappend(why, "a seccomp filter (allow-all BPF) loaded in a child");
        lp_outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_SECCOMP, true, 1, "%s", why);
    } else {
        sec_fmt_fail(&rep.r[ST_SECCOMP], why);
        if (rep.r[ST_NNP].state != 1)
            lp_bappend(why, " (no_new_privs could not be set)");
        if (rep.r[ST_SECCOMP].err == EINVAL)
            lp_bappend(why, " (kernel built without CONFIG_SECCOMP_FILTER?)");
        lp_outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_SECCOMP, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_SECCOMP, "a kernel with CONFIG_SECCOMP_FILTER=y; an outer "
                      "seccomp profile must allow seccomp(2) and prctl(PR_SET_SECCOMP)");
    }

    /* user notification */
    why[0] = '\0';
    if (!ran) {
        caps_set(c, FY_CAP_SECCOMP_NOTIFY, false, 0, "%s", fail);
    } else if (rep.r[ST_NOTIF_LISTENER].state == 1) {
        caps_set(c, FY_CAP_SECCOMP_NOTIFY, true, 1, "SECCOMP_RET_USER_NOTIF is available and a "
                 "filter with a listener fd loaded in a child");
    } else {
        if (rep.r[ST_NOTIF_AVAIL].state != 1)
            sec_fmt_fail(&rep.r[ST_NOTIF_AVAIL], why);
        else
            sec_fmt_fail(&rep.r[ST_NOTIF_LISTENER], why);
        if (rep.r[ST_NOTIF_LISTENER].err == EBUSY)
            lp_bappend(why, " (an outer filter already has a listener)");
        lp_outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_SECCOMP_NOTIFY, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_SECCOMP_NOTIFY, "a kernel >= 5.0 (5.9 for addfd) and no outer "
                      "seccomp user-notification supervisor");
    }

    /* Landlock */
    why[0] = '\0';
    if (abi <= 0) {
        if (abi_err == ENOSYS)
            lp_bappend(why, "landlock_create_ruleset: ENOSYS (kernel without Landlock, < 5.13)");
        else if (abi_err == EOPNOTSUPP)
            lp_bappend(why, "landlock_create_ruleset: EOPNOTSUPP (Landlock built in but not "
                       "enabled at boot)");
        else
            lp_bappend(why, "landlock_create_ruleset(LANDLOCK_CREATE_RULESET_VERSION) failed: "
                       EFMT, EARG(abi_err));
        lp_outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_LANDLOCK, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_LANDLOCK, "%s", abi_err == EOPNOTSUPP
                      ? "add landlock to the lsm= kernel command line (or CONFIG_LSM)"
                      : "a kernel >= 5.13 with CONFIG_SECURITY_LANDLOCK=y and landlock in lsm=");
    } else if (!ran) {
        caps_set(c, FY_CAP_LANDLOCK, false, abi, "Landlock ABI %d, but %s", abi, fail);
    } else if (rep.r[ST_LANDLOCK].state == 1) {
        caps_set(c, FY_CAP_LANDLOCK, true, abi, "Landlock ABI %d; a restricted child could read "
                 "/dev/null inside its ruleset and got EACCES for / outside it", abi);
    } else {
        lp_bappend(why, "Landlock ABI %d, but the functional check failed: ", abi);
        sec_fmt_fail(&rep.r[ST_LANDLOCK], why);
        lp_outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_LANDLOCK, false, abi, "%s", why);
        caps_set_hint(c, FY_CAP_LANDLOCK, "check that no outer policy blocks the landlock_* "
                      "system calls");
    }
}

/* ------------------------------------------------------------------ */
/* pidfd, clone3, openat2                                             */
/* ------------------------------------------------------------------ */

/* Blocks signals, forks a child that waits for EOF on a pipe, and returns its
 * pid (or -errno); *ret_wfd is the write end that releases it. */
static pid_t fork_waiter(int *ret_wfd) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = sys_fork_quiet();
    if (pid == 0) {
        char b;
        close(p[1]);
        while (read(p[0], &b, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -e;
    }
    *ret_wfd = p[1];
    return pid;
}

/* Bounded reap of a pid we own (SIGKILL after the deadline). */
void lp_reap_pid(pid_t pid, int pidfd, int ms) {
    struct pu_proc p;
    memset(&p, 0, sizeof p);
    p.pid = pid;
    p.pidfd = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 3) : -1;
    (void)pu_finish(&p, pu_deadline_after_ms(ms), NULL);
}

void lp_probe_pidfd(fy_caps *c) {
    int wfd = -1;
    pid_t pid = fork_waiter(&wfd);
    if (pid < 0) {
        caps_set(c, FY_CAP_PIDFD, false, 0, "fork: " EFMT, EARG((int)-pid));
        return;
    }
    int pidfd = sys_pidfd_open(pid, 0);
    if (pidfd < 0) {
        int e = errno;
        close(wfd);
        lp_reap_pid(pid, -1, CHILD_DEADLINE_MS);
        caps_set(c, FY_CAP_PIDFD, false, 0, "pidfd_open: " EFMT "%s", EARG(e),
                 e == ENOSYS ? " (kernel < 5.3)" : "");
        caps_set_hint(c, FY_CAP_PIDFD, "a kernel >= 5.4 (pidfd_open, waitid(P_PIDFD))");
        return;
    }
    if (sys_pidfd_send_signal(pidfd, SIGKILL, NULL, 0) < 0) {
        int e = errno;
        close(wfd);
        lp_reap_pid(pid, pidfd, CHILD_DEADLINE_MS);
        close(pidfd);
        caps_set(c, FY_CAP_PIDFD, false, 0, "pidfd_send_signal(SIGKILL): " EFMT, EARG(e));
        caps_set_hint(c, FY_CAP_PIDFD, "a kernel >= 5.4 (pidfd_open, waitid(P_PIDFD))");
        return;
    }
    struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
    (void)poll(&pfd, 1, CHILD_DEADLINE_MS);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(FY_P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | __WALL);
    int e = errno;
    close(wfd);
    if (r < 0 && e == ECHILD && (pfd.revents & POLLIN)) {
        /* The kernel knew P_PIDFD (else EINVAL) and the child, killed
         * through its pidfd, had ended: another thread of the host reaped
         * it first (a waitpid(-1) with __WALL). */
        close(pidfd);
        caps_set(c, FY_CAP_PIDFD, true, 1, "pidfd_open, pidfd_send_signal(SIGKILL) and "
                 "waitid(P_PIDFD) worked on a child (reaped by another thread of the host)");
        return;
    }
    if (r < 0 || si.si_pid != pid) {
        lp_reap_pid(pid, pidfd, CHILD_DEADLINE_MS);
        close(pidfd);
        if (r < 0)
            caps_set(c, FY_CAP_PIDFD, false, 0, "waitid(P_PIDFD): " EFMT "%s", EARG(e),
                     e == EINVAL ? " (kernel < 5.4)" : "");
        else
            caps_set(c, FY_CAP_PIDFD, false, 0, "waitid(P_PIDFD) did not report the child "
                     "killed through its pidfd within %d ms", CHILD_DEADLINE_MS);
        caps_set_hint(c, FY_CAP_PIDFD, "a kernel >= 5.4 (pidfd_open, waitid(P_PIDFD))");
        return;
    }
    close(pidfd);
    if (si.si_code == CLD_KILLED && si.si_status == SIGKILL)
        caps_set(c, FY_CAP_PIDFD, true, 1, "pidfd_open, pidfd_send_signal(SIGKILL) and "
                 "waitid(P_PIDFD) worked on a child");
    else
        caps_set(c, FY_CAP_PIDFD, false, 0, "waitid(P_PIDFD) reported si_code %d status %d "
                 "instead of CLD_KILLED/SIGKILL", si.si_code, si.si_status);
}

/* clone3 with CLONE_PIDFD (and optionally CLONE_INTO_CGROUP). The child waits
 * for EOF on a pipe when hold is set, else exits 42 at once. Returns the pid
 * or -errno; *ret_pidfd and *ret_wfd receive the pidfd / pipe write end. */
pid_t lp_clone3_child(int cgroup_fd, bool hold, int *ret_pidfd, int *ret_wfd) {
    int p[2] = { -1, -1 };
    if (hold && pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    int pidfd = -1;
    struct fy_clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_PIDFD;
    args.pidfd = (uint64_t)(uintptr_t)&pidfd;
    args.exit_signal = 0; /* invisible to the host's SIGCHLD disposition */
    size_t size = 64; /* CLONE_ARGS_SIZE_VER0 */
    if (cgroup_fd >= 0) {
        args.flags |= FY_CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)cgroup_fd;
        size = sizeof args; /* VER2 */
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = sys_clone3(&args, size);
    if (pid == 0) {
        if (hold) {
            char b;
            close(p[1]);
            while (read(p[0], &b, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
        _exit(42);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p[0] >= 0)
        close(p[0]);
    if (pid < 0) {
        if (p[1] >= 0)
            close(p[1]);
        return -e;
    }
    *ret_pidfd = pidfd;
    *ret_wfd = p[1];
    return pid;
}

void lp_probe_clone3(fy_caps *c) {
    int pidfd = -1, wfd = -1;
    pid_t pid = lp_clone3_child(-1, false, &pidfd, &wfd);
    if (pid < 0) {
        int e = (int)-pid;
        caps_set(c, FY_CAP_CLONE3, false, 0, "clone3(CLONE_PIDFD): " EFMT "%s", EARG(e),
                 e == ENOSYS ? " (kernel < 5.3, or an outer seccomp filter hides clone3)" : "");
        caps_set_hint(c, FY_CAP_CLONE3, "a kernel >= 5.7 with clone3 allowed by any outer "
                      "seccomp profile (clone is used as the fallback)");
        return;
    }
    struct pu_proc ch;
    memset(&ch, 0, sizeof ch);
    ch.pid = pid;
    ch.pidfd = pidfd;
    (void)pu_finish(&ch, pu_deadline_after_ms(CHILD_DEADLINE_MS), NULL);
    if (pidfd < 0)
        caps_set(c, FY_CAP_CLONE3, false, 0, "clone3 ran a child but returned no pidfd");
    else if (ch.reaped && ch.status != -1 && WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 42)
        caps_set(c, FY_CAP_CLONE3, true, 1, "clone3(CLONE_PIDFD) ran a child that exited 42");
    else if (ch.reaped && ch.status == -1)
        caps_set(c, FY_CAP_CLONE3, true, 1, "clone3(CLONE_PIDFD) ran a child (reaped by another thread "
                 "of the host before its status was read)");
    else
        caps_set(c, FY_CAP_CLONE3, false, 0, "the clone3 child did not exit as expected (wait "
                 "status 0x%x)", (unsigned)ch.status);
}

void lp_probe_exec_init(fy_caps *c) {
    char why[512], owner_why[256];
    int owner = -1;
    int ok = lx_probe_exec_init(caps_present(c, FY_CAP_USERNS), why, sizeof(why), &owner, owner_why, sizeof(owner_why));
    /* For linux-plan.c: whether a root caller's sandbox namespaces may be
     * made by the id range's first id ("ok"), or why not. */
    if (owner >= 0)
        (void)caps_set_fact(c, LX_FACT_USERNS_OWNER, owner_why);
    if (ok > 0) {
        caps_set(c, FY_CAP_EXEC_INIT, true, 1, "%s", why);
        return;
    }
    /* (short of descriptors or file size here and now: a probe saved with
     * exec-init missing made later runs' inits forks of the host) */
    if (ok < 0)
        c->inconclusive = true;
    caps_set(c, FY_CAP_EXEC_INIT, false, 0, "%s", why);
    caps_set_hint(c, FY_CAP_EXEC_INIT, "allow executing sealed memfds (vm.memfd_noexec below 2, no LSM or "
                  "seccomp rule against execveat): meanwhile the sandbox's pid 1 is a fork of this process, "
                  "whose memory it then starts with, at a cost that grows with this process's size");
}

void lp_probe_openat2(fy_caps *c) {
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        caps_set(c, FY_CAP_OPENAT2, false, 0, "open(\"/\"): " EFMT, EARG(errno));
        return;
    }
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    int fd = sys_openat2(root, ".", &how, sizeof how);
    if (fd < 0) {
        int e = errno;
        close(root);
        caps_set(c, FY_CAP_OPENAT2, false, 0, "openat2(RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH): "
                 EFMT "%s", EARG(e), e == ENOSYS ? " (kernel < 5.6)" : "");
        caps_set_hint(c, FY_CAP_OPENAT2, "a kernel >= 5.6 with openat2 allowed: the namespace and "
                      "container backends (and the process backend's Landlock rules) open every path with it");
        return;
    }
    close(fd);
    char why[REASON_MAX] = "";
    /* ".." from the dirfd must be refused with EXDEV. */
    fd = sys_openat2(root, "..", &how, sizeof how);
    int e = errno;
    if (fd >= 0) {
        close(fd);
        lp_bappend(why, "openat2(\"..\", RESOLVE_BENEATH) escaped the directory");
    } else if (e != EXDEV) {
        lp_bappend(why, "openat2(\"..\", RESOLVE_BENEATH) failed with " EFMT " instead of EXDEV",
                   EARG(e));
    }
    /* A symlink must be refused with ELOOP. /proc/self is one when /proc is mounted. */
    bool sym_checked = false;
    struct stat st;
    if (!why[0] && lstat("/proc/self", &st) == 0 && S_ISLNK(st.st_mode)) {
        sym_checked = true;
        fd = sys_openat2(root, "proc/self", &how, sizeof how);
        e = errno;
        if (fd >= 0) {
            close(fd);
            lp_bappend(why, "openat2(\"proc/self\", RESOLVE_NO_SYMLINKS) followed the symlink");
        } else if (e != ELOOP) {
            lp_bappend(why, "openat2(\"proc/self\", RESOLVE_NO_SYMLINKS) failed with " EFMT
                       " instead of ELOOP", EARG(e));
        }
    }
    close(root);
    if (why[0])
        caps_set(c, FY_CAP_OPENAT2, false, 0, "%s", why);
    else
        caps_set(c, FY_CAP_OPENAT2, true, 1, "openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH "
                 "works: \"..\" gave EXDEV%s", sym_checked ? ", a symlink gave ELOOP" : "");
}

/* ---- saved seccomp programs ---- */

void lx_seccomp_fact_key(char *buf, size_t len, uint32_t cls, bool notify, bool init) {
    if (init)
        snprintf(buf, len, "linux.seccomp.init");
    else
        snprintf(buf, len, "linux.seccomp.%u.%s", (unsigned)cls, notify ? "notify" : "kill");
}

int linux_snapshot_extras(fy_caps *c) {
    if (!caps_present(c, FY_CAP_SECCOMP))
        return 0;
    bool notify = caps_present(c, FY_CAP_SECCOMP_NOTIFY);
    static const uint32_t classes[] = { FY_SECCOMP_GENERAL_BUILD, FY_SECCOMP_NETWORKED_TEST };
    for (size_t i = 0; i <= FY_ARRAY_SIZE(classes); i++) {
        bool init = i == FY_ARRAY_SIZE(classes);
        uint32_t cls = init ? 0 : classes[i];
        /* One that does not compile is not recorded: the plan reports why. */
        const struct seccomp_program *p = sc_program_get(cls, init ? false : notify, init, NULL, NULL);
        if (!p)
            continue;
        char key[64];
        lx_seccomp_fact_key(key, sizeof(key), cls, init ? false : notify, init);
        char *saved = sc_program_save(p);
        int r = saved ? caps_set_fact(c, key, saved) : FY_E_NOMEM;
        free(saved);
        if (r < 0)
            return r;
    }
    return 0;
}
