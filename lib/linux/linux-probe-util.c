/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helpers linux-probe.c and vm/vm-probe.c share (see
 * linux-probe-util.h): one copy of the errno names, the deadline arithmetic,
 * the program lookup and the bounded wait-then-SIGKILL of a child. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    return fy_now_usec() + (uint64_t)ms * 1000u;
}

int pu_ms_left(uint64_t deadline) {
    uint64_t now = fy_now_usec();
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
                return fy_strdup(buf);
        }
        p = *end ? end + 1 : end;
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(fallback); i++) {
        snprintf(buf, sizeof buf, "%s/%s", fallback[i], name);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return fy_strdup(buf);
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
            (void)fy_sys_pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
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
