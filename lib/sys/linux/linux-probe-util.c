/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helpers linux-probe.c and vm/vm-probe.c share (see
 * linux-probe-util.h): one copy of the errno names, the deadline arithmetic,
 * the program lookup and the bounded wait-then-SIGKILL of a child. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
const char *pu_ename(int e) {
    const char *s = strerrorname_np(e);
    return s ? s : "unknown errno";
}

const char *pu_edesc(int e) {
    const char *s = strerrordesc_np(e);
    return s ? s : "unknown error";
}
#else
/* Without glibc >= 2.32 (strerrorname_np, strerrordesc_np): placeholders. */
const char *pu_ename(int e) {
    (void)e;
    return "errno";
}

const char *pu_edesc(int e) {
    (void)e;
    return "see errno";
}
#endif

uint64_t pu_deadline_after_ms(int ms) {
    return util_now_usec() + (uint64_t)ms * 1000u;
}

int pu_ms_left(uint64_t deadline) {
    uint64_t now = util_now_usec();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999) / 1000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

void pu_sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

bool pu_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Whether dir is one of the entries of the colon-separated list. */
static bool in_path_list(const char *list, const char *dir) {
    size_t dl = strlen(dir);
    for (const char *p = list; p && *p;) {
        const char *end = strchrnul(p, ':');
        if ((size_t)(end - p) == dl && memcmp(p, dir, dl) == 0)
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

char *pu_find_program(const char *name) {
    /* The system directories of both probes: the Linux probe's helper
     * programs (crun, runc, nft, pasta, bwrap) and the VM probe's VMMs
     * (QEMU, Firecracker, cloud-hypervisor), which some distributions
     * install in /usr/libexec. */
    static const char *const fallback[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                            "/usr/bin", "/sbin", "/bin", "/usr/libexec" };
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    struct stat st;
    for (const char *p = path; p && *p;) {
        const char *end = strchrnul(p, ':');
        size_t n = (size_t)(end - p);
        if (n > 0 && p[0] == '/' && n + strlen(name) + 2 < sizeof buf) {
            memcpy(buf, p, n);
            buf[n] = '/';
            strcpy(buf + n + 1, name);
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                return util_strdup(buf);
        }
        p = *end ? end + 1 : end;
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(fallback); i++) {
        if (in_path_list(path, fallback[i]))
            continue; /* looked at already */
        snprintf(buf, sizeof buf, "%s/%s", fallback[i], name);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return util_strdup(buf);
    }
    return NULL;
}

bool pu_wait_until(struct pu_proc *p, uint64_t deadline) {
    for (;;) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG | __WALL);
        if (r == p->pid) {
            p->reaped = true;
            p->status = st;
            return true;
        }
        if (r < 0 && errno == ECHILD) {
            /* Someone else reaped it (a host waitpid(-1)); nothing left. */
            p->reaped = true;
            p->status = -1;
            return true;
        }
        int left = pu_ms_left(deadline);
        if (left <= 0)
            return false;
        if (p->pidfd >= 0) {
            struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
            (void)poll(&pfd, 1, left);
        } else {
            pu_sleep_ms(left < 2 ? left : 2);
        }
    }
}

bool pu_finish(struct pu_proc *p, uint64_t deadline, bool *ret_killed) {
    bool killed = false;
    if (p->pid > 0 && !pu_wait_until(p, deadline)) {
        if (p->pidfd >= 0)
            (void)sys_pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
        else
            (void)kill(p->pid, SIGKILL);
        killed = true;
        (void)pu_wait_until(p, pu_deadline_after_ms(PU_KILL_GRACE_MS));
    }
    if (ret_killed)
        *ret_killed = killed;
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
    return p->pid <= 0 || p->reaped;
}

/* The grandchild of pu_spawn: raw system calls only. */
__attribute__((noreturn)) static void spawn_exec(const char *const *argv, char *const *envp, int in, int out,
                                                int errfd, pid_t middle) {
    int e = 0;
    /* Dies with the middle process (which the caller SIGKILLs at its
     * deadline), and never outlives a middle that died before this. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || syscall(SYS_getppid) != middle)
        syscall(SYS_exit_group, 127);
    if (syscall(SYS_dup2, in, 0) < 0 || syscall(SYS_dup2, out, 1) < 0 || syscall(SYS_dup2, out, 2) < 0)
        e = errno;
    if (!e) {
        /* Everything above the standard streams goes at exec (the error
         * pipe is CLOEXEC); close_range where it exists. */
        if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
            for (int fd = 3; fd < 1024; fd++)
                if (fd != errfd)
                    (void)syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        syscall(SYS_execve, argv[0], argv, envp);
        e = errno;
    }
    (void)syscall(SYS_write, errfd, &e, sizeof e);
    syscall(SYS_exit_group, 127);
    __builtin_unreachable();
}

/* The middle process of pu_spawn (raw system calls only): a child of the
 * host that never executes anything, so its exit signal stays 0. The
 * kernel gives every process that executes a program SIGCHLD as its exit
 * signal (de_thread), so the program runs one level down, as our child,
 * and we end the way it ended. */
__attribute__((noreturn)) static void spawn_middle(const char *const *argv, char *const *envp, int fd_in,
                                                  int fd_out, int errfd) {
    for (int sig = 1; sig < 65; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(sig, &sa, NULL);
    }
    int in = fd_in > 2 ? fd_in : (int)syscall(SYS_fcntl, fd_in, F_DUPFD_CLOEXEC, 3);
    int out = fd_out > 2 ? fd_out : (int)syscall(SYS_fcntl, fd_out, F_DUPFD_CLOEXEC, 3);
    int efd = errfd > 2 ? errfd : (int)syscall(SYS_fcntl, errfd, F_DUPFD_CLOEXEC, 3);
    pid_t self = (pid_t)syscall(SYS_getpid);
    pid_t pid = in < 0 || out < 0 || efd < 0 ? -1 : sys_fork();
    if (pid == 0)
        spawn_exec(argv, envp, in, out, efd, self);
    if (pid < 0) {
        int e = errno;
        (void)syscall(SYS_write, efd, &e, sizeof e);
        syscall(SYS_exit_group, 127);
    }
    /* Nothing of ours stays open: the caller sees EOF on the program's
     * output as soon as the program is done with it. */
    if (syscall(SYS_close_range, 0U, ~0U, 0U) < 0)
        for (int fd = 0; fd < 1024; fd++)
            (void)syscall(SYS_close, fd);
    int st = 0;
    while (syscall(SYS_wait4, pid, &st, __WALL, NULL) < 0)
        if (errno != EINTR)
            syscall(SYS_exit_group, 127);
    if (WIFSIGNALED(st)) {
        /* End by the same signal, without a core dump of our own. */
        struct rlimit nocore = {0, 0};
        (void)syscall(SYS_setrlimit, RLIMIT_CORE, &nocore);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        (void)syscall(SYS_kill, self, WTERMSIG(st));
        syscall(SYS_kill, self, SIGKILL);
    }
    syscall(SYS_exit_group, WEXITSTATUS(st));
    __builtin_unreachable();
}

int pu_spawn(const char *const *argv, char *const *envp, int fd_in, int fd_out, struct pu_proc *p) {
    memset(p, 0, sizeof *p);
    p->pid = -1;
    p->pidfd = -1;
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0)
        return errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = sys_fork_quiet_pidfd(&pidfd);
    if (pid == 0) {
        syscall(SYS_close, ep[0]);
        spawn_middle(argv, envp, fd_in, fd_out, ep[1]);
    }
    int fork_err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(ep[1]);
    if (pid < 0) {
        close(ep[0]);
        return fork_err;
    }
    p->pid = pid;
    p->pidfd = pidfd;
    int child_err = 0;
    ssize_t n;
    while ((n = read(ep[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
        ;
    close(ep[0]);
    if (n == (ssize_t)sizeof child_err) {
        (void)pu_finish(p, pu_deadline_after_ms(PU_KILL_GRACE_MS), NULL);
        return child_err ? child_err : EIO;
    }
    return 0;
}
