/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Linux backend's run operations (linux-spawn.h): forgeyard-init, the
 * sandbox's pid 1, executed from a sealed memfd with its plan packed into
 * another (lx_clone_exec_init), and the probe that finds whether this host
 * allows it (lx_probe_exec_init), from a middle process that makes raw
 * system calls only. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "linux-memfd.h"
#include "linux-pack.h"
#include "linux-plan.h"
#include "linux-probe-util.h"
#include "linux-spawn.h"
#include "linux-syscall.h"

/* ---- forgeyard-init ---- */

extern const unsigned char lx_init_blob[];
extern const size_t lx_init_blob_len;

/* ---- the owner of the sandbox's user namespace ---- */

/* The kernel makes a new user namespace's owner the effective uid of the
 * task that creates it, and charges the namespace's per-user counts
 * (inotify instances and watches, fanotify groups and marks, queued
 * signals, message-queue bytes, processes) up the chain of namespaces to
 * that uid in the parent. Cloned by root, one sandbox could hold root's
 * whole inotify budget (fs.inotify.max_user_instances) and every root
 * process of the host would then get EMFILE. So, as root, the clone runs
 * with real and effective uid `owner` (the id range's first, which no
 * host process runs as), the saved uid still 0 (to come back) and the
 * fsuid 0 (a clone into a cgroup checks the write access to its
 * cgroup.procs with it). Raw system calls: only the calling thread
 * changes (glibc's setresuid changes every thread of the host), and only
 * around the clone. 0: switched; 1: no owner to take; -errno (a caller
 * no longer root in all three ids: -EPERM).
 *
 * The kernel also makes the process non-dumpable (its suid_dumpable) and
 * clears the thread's parent-death signal at every change of the
 * effective uid: in the host (in_host), both are put back as they were.
 * Dumpability is the whole process's, so the host's threads take turns
 * (a mutex: the first thread's saved value is the one restored). The
 * reaper middle, a forked copy that must not take a lock another thread
 * may have held at the fork, changes only its own. */
static pthread_mutex_t owner_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;

/* A fork of the host waits for a switch in progress and leaves the mutex
 * free on both sides: a child never inherits it held by a thread it does
 * not have, nor a process made non-dumpable by a switch it will not end.
 * (glibc removes these handlers when the library is unloaded.) */
static void owner_prefork(void) { pthread_mutex_lock(&owner_mu); }
static void owner_postfork(void) { pthread_mutex_unlock(&owner_mu); }
static void owner_register(void) { (void)pthread_atfork(owner_prefork, owner_postfork, owner_postfork); }

int lx_owner_enter(uint32_t owner, bool in_host, struct lx_owner_save *sv) {
    sv->locked = false;
    sv->dumpable = -1;
    sv->pdeath = 0;
    if (!owner)
        return 1;
    /* (The plan names an owner only for a caller root in all three ids:
     * one that changed since is refused, never started as root's.) */
    if (!pu_root_in_all_ids())
        return -EPERM;
    if (in_host) {
        (void)pthread_once(&owner_once, owner_register);
        pthread_mutex_lock(&owner_mu);
        sv->locked = true;
        sv->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        (void)prctl(PR_GET_PDEATHSIG, &sv->pdeath, 0, 0, 0);
    }
    /* The effective capabilities the change of uid clears come back at
     * once (capset within the permitted set, which the saved uid 0 keeps):
     * the clone is then as privileged as root's (an LSM that refuses
     * unprivileged user namespaces, AppArmor's restriction, sees
     * CAP_SYS_ADMIN), with the effective uid owner. */
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct caps[2];
    memset(caps, 0, sizeof(caps));
    bool have_caps = syscall(SYS_capget, &hdr, caps) == 0;
    if (syscall(SYS_setresuid, (uid_t)owner, (uid_t)owner, (uid_t)-1) < 0) {
        int err = errno;
        if (sv->locked)
            pthread_mutex_unlock(&owner_mu);
        sv->locked = false;
        return -err;
    }
    (void)syscall(SYS_setfsuid, (uid_t)0);
    if (syscall(SYS_setfsuid, (uid_t)-1) != 0 || !have_caps || syscall(SYS_capset, &hdr, caps) < 0) {
        lx_owner_leave(sv);
        return -EPERM;
    }
    return 0;
}

/* Back to root in all three ids (the effective capabilities come back
 * with the effective uid 0), then what the kernel changed with them. A
 * thread that cannot come back must not go on. */
void lx_owner_leave(struct lx_owner_save *sv) {
    if (syscall(SYS_setresuid, (uid_t)0, (uid_t)0, (uid_t)0) < 0)
        abort();
    if (!sv->locked)
        return;
    if (sv->dumpable >= 0)
        (void)prctl(PR_SET_DUMPABLE, sv->dumpable, 0, 0, 0);
    if (sv->pdeath > 0)
        (void)prctl(PR_SET_PDEATHSIG, sv->pdeath, 0, 0, 0);
    sv->locked = false;
    pthread_mutex_unlock(&owner_mu);
}

/* Clones ca's child (CLONE_VM | CLONE_VFORK added) executing forgeyard-init
 * from init_fd with argv[1] = arg1 and a pipe to say it started on; keep
 * are the fds to keep across the exec. The pid, -1 when clone failed, or
 * 0 when its pipe could not be made (both: errno). When the pid is valid, *ret_started is 0 once forgeyard-init runs, the errno of
 * a failed exec, or -1 for a child that died first; *ret_clone3 says
 * whether clone3 (not clone(2)) served. */
static pid_t spawn_exec_init(const struct fy_clone_args *ca, int init_fd, const char *arg1, const int *keep,
                             size_t nkeep, uint32_t owner, bool in_host, int *ret_started, bool *ret_clone3) {
    int errp[2];
    if (nkeep > LX_EXEC_INIT_MAX_KEEP) {
        errno = E2BIG;
        return 0;
    }
    if (pipe2(errp, O_CLOEXEC) < 0)
        return 0;
    /* The fd in decimal, without stdio: the exec-init probe calls this in
     * a forked copy of a host that may be multi-threaded. */
    char errnum[16];
    size_t nd = 0;
    char digits[16];
    for (unsigned v = (unsigned)errp[1]; nd == 0 || v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    for (size_t k = 0; k < nd; k++)
        errnum[k] = digits[nd - 1 - k];
    errnum[nd] = '\0';
    char *argv[] = {(char *)"forgeyard-init", (char *)arg1, errnum, NULL};
    /* In a new user namespace, what init needs of it; else (the process
     * level, a probe without one) what the host holds, as before the exec. */
    uint64_t ambient = (ca->flags & CLONE_NEWUSER) ? LX_INIT_CAPS : ~0ULL;
    struct exec_init e = {.init_fd = init_fd, .argv = argv, .err_fd = errp[1], .nkeep = nkeep, .ambient = ambient};
    for (size_t i = 0; i < nkeep; i++)
        e.keep[i] = keep[i];
    struct fy_clone_args c = *ca;
    c.flags |= CLONE_VM | CLONE_VFORK;
    /* A new user namespace made by owner, not by us (lx_owner_enter). */
    struct lx_owner_save sv;
    int as_owner = (ca->flags & CLONE_NEWUSER) ? lx_owner_enter(owner, in_host, &sv) : 1;
    pid_t pid = as_owner < 0 ? -1 : linux_clone_exec_init(&c, &e);
    int clone_errno = as_owner < 0 ? -as_owner : errno;
    if (as_owner == 0)
        lx_owner_leave(&sv);
    close(errp[1]);
    *ret_clone3 = e.used_clone3;
    *ret_started = -1;
    if (pid > 0) {
        int started = -1;
        ssize_t n;
        do
            n = read(errp[0], &started, sizeof(started));
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof(started))
            *ret_started = started;
    }
    close(errp[0]);
    errno = clone_errno;
    return pid;
}

/* ---- the reaper middle ---- */

struct reaper_start {
    pid_t pid;      /* as spawn_exec_init */
    int started;
    int err;
    bool clone3;
};
struct reaper_end {
    int status;     /* pid 1's wait status, -1 when it was not ours to wait for */
    struct rusage ru;
};

/* Closes every fd but keep1 and keep2 (raw system calls). */
static void close_all_but(int keep1, int keep2) {
    int lo = keep1 < keep2 ? keep1 : keep2, hi = keep1 < keep2 ? keep2 : keep1;
    if (syscall(SYS_close_range, 0U, (unsigned)lo - 1, 0U) < 0 || syscall(SYS_close_range, (unsigned)lo + 1,
                                                                          (unsigned)hi - 1, 0U) < 0 ||
        syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U) < 0)
        for (int fd = 0; fd < 65536; fd++)
            if (fd != keep1 && fd != keep2)
                (void)syscall(SYS_close, fd);
}

/* The middle (a quiet fork of the host: async-signal-safe calls only). It
 * starts pid 1 as the host would, says how that went, lets go of every fd
 * of the host (other attempts' pipes among them: their sandboxes must see
 * their host's end), waits for the host to hold pid 1's pidfd, reaps pid 1
 * with its rusage, says so, and exits. Its own exit signal is 0. */
__attribute__((noreturn)) static void reaper_main(const struct fy_clone_args *ca, int init_fd, const char *fdnum,
                                                 const int *keep, size_t nkeep, uint32_t owner, int wr, int go) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    (void)sigaction(SIGCHLD, &sa, NULL);
    struct reaper_start st = {0};
    int pidfd = -1;
    struct fy_clone_args c = *ca;
    c.pidfd = (uint64_t)(uintptr_t)&pidfd;
    st.pid = spawn_exec_init(&c, init_fd, fdnum, keep, nkeep, owner, false, &st.started, &st.clone3);
    st.err = errno;
    if (st.pid > 0 && st.started != 0)
        (void)sys_pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
    (void)syscall(SYS_write, wr, &st, sizeof(st));
    close_all_but(wr, go);
    char b;
    while (syscall(SYS_read, go, &b, 1) < 0 && errno == EINTR)
        ;
    struct reaper_end end;
    memset(&end, 0, sizeof(end));
    end.status = -1;
    if (st.pid > 0) {
        int ws = 0;
        long r;
        while ((r = syscall(SYS_wait4, st.pid, &ws, __WALL, &end.ru)) < 0 && errno == EINTR)
            ;
        if (r == st.pid)
            end.status = ws;
    }
    (void)syscall(SYS_write, wr, &end, sizeof(end));
    syscall(SYS_exit_group, 0);
    __builtin_unreachable();
}

/* Starts pid 1 through the reaper middle. As spawn_exec_init, plus
 * *ret_pidfd (pid 1's, opened here) and the middle's state in rp. */
static pid_t spawn_via_reaper(const struct fy_clone_args *ca, int init_fd, const char *fdnum, const int *keep,
                              size_t nkeep, uint32_t owner, int *ret_started, bool *ret_clone3, int *ret_pidfd,
                              struct lx_reaper *rp) {
    int rep[2] = {-1, -1}, go[2] = {-1, -1};
    *ret_started = -1;
    if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
        int e = errno;
        if (rep[0] >= 0) {
            close(rep[0]);
            close(rep[1]);
        }
        errno = e;
        return 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int mfd = -1;
    pid_t mid = sys_fork_quiet_pidfd(&mfd);
    if (mid == 0) {
        syscall(SYS_close, rep[0]);
        syscall(SYS_close, go[1]);
        reaper_main(ca, init_fd, fdnum, keep, nkeep, owner, rep[1], go[0]);
    }
    int fork_err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(rep[1]);
    close(go[0]);
    if (mid < 0) {
        close(rep[0]);
        close(go[1]);
        errno = fork_err;
        return -1;
    }
    rp->pid = mid;
    rp->pidfd = mfd >= 0 ? mfd : sys_pidfd_open(mid, 0);
    rp->rd = rep[0];
    rp->go = go[1];
    struct reaper_start st;
    ssize_t n;
    while ((n = read(rp->rd, &st, sizeof(st))) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(st)) {
        errno = EIO; /* the middle died first */
        return -1;
    }
    *ret_clone3 = st.clone3;
    *ret_started = st.started;
    if (st.pid > 0) {
        /* pid 1 cannot be reaped (nor its pid reused) before the go. */
        *ret_pidfd = sys_pidfd_open(st.pid, 0);
        if (*ret_pidfd < 0)
            st.started = st.started ? st.started : errno;
        *ret_started = st.started;
    }
    if (write(rp->go, "g", 1) != 1) {
        /* (the middle is gone: it reaps nothing then) */
    }
    errno = st.err;
    return st.pid;
}

/* The end the middle saw: pid 1's rusage into *ru (true), after which the
 * middle is reaped. Bounded: a middle that says nothing in time is killed. */
bool lx_reaper_finish(struct lx_reaper *rp, struct rusage *ru) {
    bool have = false;
    if (rp->rd >= 0) {
        struct pollfd pfd = {.fd = rp->rd, .events = POLLIN};
        struct reaper_end end;
        if (poll(&pfd, 1, 5000) == 1 && read(rp->rd, &end, sizeof(end)) == (ssize_t)sizeof(end) && end.status != -1) {
            *ru = end.ru;
            have = true;
        }
        close(rp->rd);
        rp->rd = -1;
    }
    if (rp->go >= 0) {
        close(rp->go);
        rp->go = -1;
    }
    if (rp->pid > 0) {
        if (rp->pidfd >= 0) {
            struct pollfd pfd = {.fd = rp->pidfd, .events = POLLIN};
            if (poll(&pfd, 1, 5000) == 0)
                sys_pidfd_send_signal(rp->pidfd, SIGKILL, NULL, 0);
        }
        siginfo_t si;
        while (waitid(P_PID, (id_t)rp->pid, &si, WEXITED | __WALL) < 0 && errno == EINTR)
            ;
        rp->pid = -1;
    }
    if (rp->pidfd >= 0) {
        close(rp->pidfd);
        rp->pidfd = -1;
    }
    return have;
}

/* Whether the host's SIGCHLD is anything but its default (ignored, a
 * handler, SA_NOCLDWAIT): then pid 1, which executes a program and so
 * raises SIGCHLD at its end, is started by the reaper middle. With the
 * default, a SIGCHLD changes nothing and is not delivered to any code. */
static bool sigchld_seen(void) {
    struct sigaction sa;
    if (sigaction(SIGCHLD, NULL, &sa) < 0)
        return true;
    return sa.sa_handler != SIG_DFL || (sa.sa_flags & SA_NOCLDWAIT);
}

int lx_packed_memfd(const struct child_args *a) {
    unsigned char *blob = NULL;
    size_t len = 0;
    if (lx_pack(a, &blob, &len) < 0)
        return -ENOMEM;
    int fd = lx_sealed_memfd("forgeyard-plan", blob, len, false); /* holds the secrets: wiped here */
    util_bzero(blob, len);
    free(blob);
    return fd;
}

/* Executes forgeyard-init from init_fd as ca's child with argv[1] = arg1
 * and the fds keep, directly or through the reaper middle (when reaper is
 * not NULL and the host's SIGCHLD is not at its default). 1: it runs
 * (*ret_pid, *pidfd); 0: not possible here; -1: clone failed (errno). */
static int exec_init_as(const struct fy_clone_args *ca, int init_fd, const char *arg1, const int *keep, size_t nkeep,
                        uint32_t owner, struct lx_reaper *reaper, int *pidfd, pid_t *ret_pid, bool *ret_clone3) {
    int used = 0, started;
    bool hide = reaper && sigchld_seen();
    pid_t pid = hide ? spawn_via_reaper(ca, init_fd, arg1, keep, nkeep, owner, &started, ret_clone3, pidfd, reaper)
                     : spawn_exec_init(ca, init_fd, arg1, keep, nkeep, owner, true, &started, ret_clone3);
    if (pid <= 0) {
        used = pid < 0 && !(errno == EINVAL || errno == ENOSYS || errno == E2BIG) ? -1 : 0;
        if (hide) {
            int e = errno;
            (void)lx_reaper_finish(reaper, &(struct rusage){0});
            errno = e;
        }
    } else if (started != 0) {
        /* The exec failed, or the child died first, although the probe
         * ran it: this attempt falls back to a copy of the host (a
         * later attempt tries again; a new probe snapshot records the
         * change for plans prepared from it). */
        if (*pidfd >= 0) {
            sys_pidfd_send_signal(*pidfd, SIGKILL, NULL, 0); /* if it lives on, confused */
            /* Ours: reaped here (a host that reaps every child may have
             * taken it: ECHILD). The reaper middle's: it reaps it. */
            siginfo_t si;
            while (!hide && waitid(FY_P_PIDFD, (id_t)*pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
                ;
            close(*pidfd);
        }
        *pidfd = -1;
        if (hide)
            (void)lx_reaper_finish(reaper, &(struct rusage){0});
    } else {
        *ret_pid = pid;
        used = 1;
    }
    return used;
}

/* Clones the sandbox executing forgeyard-init on the packed arguments.
 * 1: it runs (*ret_pid; the pidfd went where ca says, or, through the
 * reaper middle, is opened here); 0: not possible here (nothing is left of
 * the attempt): the caller clones a copy of itself instead; -1: clone
 * failed (errno); -2: its sealed memfds could not be made, the host being
 * short of descriptors, memory or file size (errno; nothing is left). */
int lx_clone_exec_init(const struct child_args *a, const struct fy_clone_args *ca, struct lx_reaper *reaper,
                       int *pidfd, pid_t *ret_pid,
                       bool *ret_clone3) {
    /* Where the probe found that forgeyard-init cannot be executed (a host
     * whose policy forbids executing memfds, say), the init is a copy of
     * the host from the start: the plan says so (pl->exec_init). */
    if (!lx_init_blob_len || !a->plan->exec_init)
        return 0;
    int plan_fd = lx_packed_memfd(a);
    int init_fd = plan_fd >= 0 ? lx_sealed_memfd("forgeyard-init", lx_init_blob, lx_init_blob_len, true) : plan_fd;
    int used = 0;
    if (init_fd < 0 && (pu_short_of(-init_fd) || init_fd == -ENOSPC)) {
        /* The host is short of descriptors, memory or file size right now:
         * a failed start that says so, not a copy of the host in the
         * sandbox's place (which then failed too, as "wait", no errno). */
        if (plan_fd >= 0)
            close(plan_fd);
        errno = -init_fd;
        return -2;
    }
    if (init_fd >= 0) {
        char fdnum[16];
        snprintf(fdnum, sizeof(fdnum), "%d", plan_fd);
        const int keep[] = {plan_fd,     a->sync_fd,  a->status_fd, a->notify_sock,
                            a->stdio[0], a->stdio[1], a->stdio[2],  a->owner_pidfd};
        used = exec_init_as(ca, init_fd, fdnum, keep, FY_ARRAY_SIZE(keep), a->plan->userns_owner, reaper, pidfd,
                            ret_pid, ret_clone3);
    }
    int e = errno;
    if (plan_fd >= 0)
        close(plan_fd);
    if (init_fd >= 0)
        close(init_fd);
    errno = e;
    return used;
}

int lx_owner_pidfd(void) {
    int fd = sys_pidfd_open(util_getpid(), 0);
    if (fd >= 0 && fd < 3) {
        /* (A host with stdin closed: fd 0 means "none" to a shell.) */
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = high;
    }
    return fd < 0 ? -1 : fd;
}

int lx_clone_exec_shell(const struct fy_clone_args *ca, int sync_fd, int owner_pidfd, uint32_t idle_ms, bool netns,
                        uint32_t owner, struct lx_reaper *reaper, int *pidfd, pid_t *ret_pid, bool *ret_clone3) {
    if (!lx_init_blob_len) {
        errno = ENOEXEC;
        return -1;
    }
    int init_fd = lx_sealed_memfd("forgeyard-init", lx_init_blob, lx_init_blob_len, true);
    if (init_fd < 0) {
        errno = -init_fd;
        return -1;
    }
    char arg1[64];
    snprintf(arg1, sizeof(arg1), "shell:%d:%u:%d:%d", sync_fd, (unsigned)idle_ms, netns ? 1 : 0,
             owner_pidfd >= 3 ? owner_pidfd : 0);
    const int keep[] = {sync_fd, owner_pidfd};
    int used = exec_init_as(ca, init_fd, arg1, keep, FY_ARRAY_SIZE(keep), owner, reaper, pidfd, ret_pid, ret_clone3);
    int e = errno;
    close(init_fd);
    errno = used == 0 ? (e ? e : ENOEXEC) : e;
    return used == 1 ? 1 : -1;
}

/* The probe (linux-probe.c): executes forgeyard-init in its probe mode the
 * way fy_start does (CLONE_VM | CLONE_VFORK, in a new user namespace when
 * there are user namespaces). 1 and what ran in why, or 0 and why not. */
/* What the exec-init probe's middle process reports. */
struct exec_probe_report {
    pid_t pid;     /* > 0 cloned; 0 no pipe; -1 clone failed */
    int err;       /* errno of a failed clone or pipe */
    int started;   /* 0 once forgeyard-init ran, else as spawn_exec_init */
    int wcode, wstatus;
    bool via_clone3;
    int owner;     /* as root, the same run with the user namespace made by
                      LX_PROBE_OWNER (lx_owner_enter): 1 it ran, 0 it did
                      not (owner_err, owner_started), -1 not tried */
    int owner_err, owner_started;
};

/* The id the probe's owned run takes: the default range's first. */
#define LX_PROBE_OWNER 100000u

static void probe_run(struct fy_clone_args *ca, int *pidfd, int init_fd, uint32_t owner, struct exec_probe_report *rep) {
    *pidfd = -1;
    rep->pid = spawn_exec_init(ca, init_fd, "probe", NULL, 0, owner, false, &rep->started, &rep->via_clone3);
    rep->err = errno;
    rep->wcode = rep->wstatus = 0;
    if (rep->pid > 0) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        while (syscall(SYS_waitid, FY_P_PIDFD, *pidfd, &si, WEXITED | __WALL, NULL) < 0 && errno == EINTR)
            ;
        rep->wcode = si.si_code;
        rep->wstatus = si.si_status;
        syscall(SYS_close, *pidfd);
    }
}

static bool probe_ran(const struct exec_probe_report *rep) {
    return rep->pid > 0 && rep->started == 0 && rep->wcode == CLD_EXITED && rep->wstatus == 0;
}

/* The probe's middle process: a quiet child of the host that never executes
 * anything (the kernel gives every process that executes a program SIGCHLD
 * as its exit signal, so forgeyard-init runs one level down, as our child,
 * with SIGCHLD at its default here). Raw system calls and stack only. */
__attribute__((noreturn)) static void exec_probe_middle(bool userns, int init_fd, int wfd) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    (void)sigaction(SIGCHLD, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
    struct exec_probe_report rep;
    memset(&rep, 0, sizeof(rep));
    int pidfd = -1;
    struct fy_clone_args ca = {
        .flags = CLONE_PIDFD | FY_CLONE_CLEAR_SIGHAND | (userns ? CLONE_NEWUSER : 0),
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = SIGCHLD,
    };
    /* As root, first the way fy_start clones (lx_owner_enter); where that
     * does not run, the same as root, and the refusal is reported. */
    rep.owner = -1;
    if (userns && pu_root_in_all_ids()) {
        probe_run(&ca, &pidfd, init_fd, LX_PROBE_OWNER, &rep);
        rep.owner = probe_ran(&rep);
        rep.owner_err = rep.pid < 0 ? rep.err : 0;
        rep.owner_started = rep.started;
    }
    if (rep.owner != 1)
        probe_run(&ca, &pidfd, init_fd, 0, &rep);
    (void)syscall(SYS_write, wfd, &rep, sizeof(rep));
    syscall(SYS_exit_group, 0);
    __builtin_unreachable();
}

/* The probe (linux-probe.c): executes forgeyard-init in its probe mode the
 * way fy_start does (CLONE_VM | CLONE_VFORK, in a new user namespace when
 * there are user namespaces), from a middle process so that the host's
 * SIGCHLD disposition and handlers never see it. 1 and what ran in why, or
 * 0 and why not. */
int lx_probe_exec_init(bool userns, char *why, size_t whylen, int *owner, char *owner_why, size_t owner_whylen) {
    *owner = -1;
    if (owner_whylen)
        owner_why[0] = '\0';
    if (!lx_init_blob_len) {
        snprintf(why, whylen, "forgeyard-init is not built for this architecture (x86-64 and aarch64 only)");
        return 0;
    }
    int init_fd = lx_sealed_memfd("forgeyard-init", lx_init_blob, lx_init_blob_len, true);
    if (init_fd < 0) {
        snprintf(why, whylen, "a sealed memfd for forgeyard-init: %s", strerror(-init_fd));
        return pu_short_of(-init_fd) ? -1 : 0;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        int e = errno;
        snprintf(why, whylen, "pipe2: %s", strerror(e));
        close(init_fd);
        return pu_short_of(e) ? -1 : 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int mfd = -1;
    pid_t mid = sys_fork_pidfd(&mfd);
    if (mid == 0) {
        syscall(SYS_close, p[0]);
        exec_probe_middle(userns, init_fd, p[1]);
    }
    int fork_err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[1]);
    close(init_fd);
    struct exec_probe_report rep;
    memset(&rep, 0, sizeof(rep));
    ssize_t n = 0;
    if (mid > 0) {
        while ((n = read(p[0], &rep, sizeof(rep))) < 0 && errno == EINTR)
            ;
        siginfo_t si;
        while (waitid(FY_P_PIDFD, (id_t)mfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
            ;
        close(mfd);
    }
    close(p[0]);
    if (n == (ssize_t)sizeof(rep) && rep.owner >= 0) {
        *owner = rep.owner;
        if (rep.owner == 1)
            snprintf(owner_why, owner_whylen, "ok");
        else if (rep.owner_err)
            snprintf(owner_why, owner_whylen, "the clone as uid %u: %s", LX_PROBE_OWNER, strerror(rep.owner_err));
        else
            snprintf(owner_why, owner_whylen, "forgeyard-init did not run when uid %u made its user namespace (%d)",
                     LX_PROBE_OWNER, rep.owner_started);
    }
    int ok = 0;
    if (mid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(fork_err));
        ok = pu_short_of(fork_err) ? -1 : 0;
    } else if (n != (ssize_t)sizeof(rep)) {
        snprintf(why, whylen, "the probe's process died before it reported");
    } else if (rep.pid > 0) {
        ok = probe_ran(&rep);
        /* As root: whose the namespace was (lx_owner_enter), for doctor. */
        char own[320] = "";
        if (*owner == 1)
            snprintf(own, sizeof(own), " made by uid %u, as a root caller's sandbox's is", LX_PROBE_OWNER);
        else if (*owner == 0)
            snprintf(own, sizeof(own), " made by root (%s)", owner_why);
        if (ok)
            snprintf(why, whylen, "forgeyard-init (%zu bytes, embedded) executed from a sealed memfd%s%s%s",
                     (size_t)lx_init_blob_len, userns ? " in a new user namespace" : "", own,
                     rep.via_clone3 ? "" : " (clone: no clone3)");
        else if (rep.started > 0)
            snprintf(why, whylen, "executing a sealed memfd: %s", strerror(rep.started));
        else
            snprintf(why, whylen, "the child died before forgeyard-init ran (%s %d): an outer seccomp or "
                     "security policy against execveat?", rep.wcode == CLD_EXITED ? "exit" : "signal",
                     rep.wstatus);
    } else if (rep.pid == 0) {
        snprintf(why, whylen, "pipe2: %s", strerror(rep.err));
    } else {
        snprintf(why, whylen, "clone(CLONE_VM|CLONE_VFORK%s): %s", userns ? "|CLONE_NEWUSER" : "",
                 strerror(rep.err));
    }
    return ok;
}
