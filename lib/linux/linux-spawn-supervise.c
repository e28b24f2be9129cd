/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Linux backend's run operations (linux-spawn.h): driving a started
 * sandbox to its result without ever blocking (lx_process) — the status
 * records on its pipe, seccomp notifications, deadlines, cgroup polling,
 * the disk watchdog — then terminate, hard kill and reap through the
 * pidfd, and finish(), which reports what was observed to attempt_finish. */
#include <errno.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attempt.h"
#include "handle.h"
#include "linux-plan.h"
#include "linux-seccomp.h"
#include "linux-spawn.h"
#include "linux-watch.h"
#include "linux-syscall.h"

/* ---- ending the sandbox ---- */

/* A setup step's EXDEV (linux-child.c may_make_in): what a mount point or
 * a planned file needed was in a host-backed directory. */
#define LX_NOT_MADE_IN_HOST " (the sandbox makes nothing in a host directory; a symbolic link of the image leads into one)"
#define END_TREE_BOUND_USEC 2000000 /* process mode: how long the supervisor gets */

/* Ends the sandbox. With a pid namespace, killing its init kills the whole
 * namespace; in process mode the supervisor (a child subreaper) is asked to
 * kill and reap the tree, and is killed itself if it has not within a bound. */
void lx_hard_kill(struct lx *x, const struct linux_plan *pl) {
    /* (Called again once the kill is hard: the cgroup and SIGKILL.) */
    /* Process mode: the supervisor, a child subreaper in the same cgroup,
     * kills its tree and reaps it (end_tree); killing the cgroup killed it
     * too, and its tree's corpses went to the host's nearest subreaper (the
     * host program itself, often) or to init, as zombies. The cgroup is
     * the fallback when the supervisor does not end in time. */
    bool by_supervisor = pl->process_mode && x->kill != KS_HARD && x->pidfd >= 0 && !x->reaped;
    /* With a cgroup of its own the whole tree dies at once, whatever it did
     * to escape the process tree. */
    if (!by_supervisor && (x->cg.v2_dir || x->cg.v1_dir[CG_FREEZER]))
        cg_kill(&pl->cg, &x->cg);
    if (x->pidfd >= 0 && !x->reaped) {
        if (by_supervisor) {
            sys_pidfd_send_signal(x->pidfd, FY_SIG_END_TREE, NULL, 0);
            x->hard_deadline = util_now_usec() + END_TREE_BOUND_USEC;
        } else {
            sys_pidfd_send_signal(x->pidfd, SIGKILL, NULL, 0);
        }
    }
    x->kill = KS_HARD;
}

/* Reaps the sandbox (its pid 1, or the supervisor at the process level)
 * through its pidfd, keeping the rusage the kernel hands over with it: the
 * pid 1 reaped every task of the sandbox, so its rusage covers them all.
 * 1 reaped, 0 still running (WNOHANG), -errno. */
static int reap_pidfd(struct lx *x, int flags) {
    siginfo_t si;
    struct rusage ru;
    memset(&si, 0, sizeof(si));
    memset(&ru, 0, sizeof(ru));
    if (syscall(SYS_waitid, FY_P_PIDFD, x->pidfd, &si, WEXITED | __WALL | flags, &ru) < 0) {
        if (errno != ECHILD)
            return -errno;
        /* The host reaped our pid 1 (a SIGCHLD set to SIG_IGN has the
         * kernel do it, a handler may waitpid(-1)): the kernel gives every
         * process that executes a program, forgeyard-init included,
         * SIGCHLD as its exit signal whatever it was cloned with. It has
         * ended when its pidfd is readable; what it reaped came on the
         * status pipe (CM_RUSAGE). */
        struct pollfd pfd = {.fd = x->pidfd, .events = POLLIN};
        int r = poll(&pfd, 1, (flags & WNOHANG) ? 0 : -1);
        if (r < 0)
            return -errno;
        return r > 0 ? 1 : 0;
    }
    if (si.si_pid == 0)
        return 0;
    x->ru = ru;
    x->have_ru = true;
    return 1;
}

void lx_reap_blocking(struct lx *x, const struct linux_plan *pl) {
    if (x->pidfd < 0 || x->reaped)
        return;
    if (pl->process_mode) {
        struct pollfd pfd = {.fd = x->pidfd, .events = POLLIN};
        if (poll(&pfd, 1, END_TREE_BOUND_USEC / 1000) == 0)
            lx_hard_kill(x, pl); /* (again, hard: the supervisor did not end its tree in time) */
    }
    while (reap_pidfd(x, 0) == -EINTR)
        ;
    x->reaped = true;
}

/* ---- deadlines ---- */

static uint64_t earliest(uint64_t a, uint64_t b) { return !a ? b : !b ? a : a < b ? a : b; }

/* Whether the disk watchdog runs: writable host directories under a disk
 * or files quota, or a container's upper on disk (tmp_size). */
static bool watching(const struct linux_plan *pl) { return pl->nwatch || pl->upper_quota; }

uint64_t lx_next_deadline(fy_handle *h) {
    struct lx *x = h->b;
    uint64_t poll_at = x->reaped ? 0 : earliest(x->next_poll, watching(h->pr->plan) ? x->next_watch : 0);
    if (x->kill == KS_SOFT)
        return earliest(x->grace_deadline, poll_at);
    if (x->kill == KS_HARD && x->hard_deadline && !x->reaped)
        return x->hard_deadline;
    if (x->kill == KS_NONE && h->end == END_NONE)
        return earliest(x->reaped ? 0 : h->deadline, poll_at); /* (gone: no deadline is left to enforce) */
    return 0;
}

void lx_arm_timer(fy_handle *h, struct lx *x) {
    uint64_t t = lx_next_deadline(h);
    struct itimerspec its = {0};
    if (t) {
        its.it_value.tv_sec = (time_t)(t / 1000000u);
        its.it_value.tv_nsec = (long)(t % 1000000u) * 1000;
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
            its.it_value.tv_nsec = 1;
    }
    timerfd_settime(x->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

void lx_terminate(fy_handle *h) {
    struct lx *x = h->b;
    if (x->kill != KS_NONE || x->reaped)
        return;
    if (!h->cancel_started)
        h->cancel_started = util_now_usec();
    uint64_t grace = lx_neutral(h)->limit[FY_LIMIT_GRACE];
    if (grace == 0) {
        lx_hard_kill(x, h->pr->plan);
    } else {
        /* Soft: the sandbox's init forwards SIGTERM to the whole tree. */
        sys_pidfd_send_signal(x->pidfd, SIGTERM, NULL, 0);
        x->kill = KS_SOFT;
        x->grace_deadline = util_now_usec() + grace;
    }
    lx_arm_timer(h, x);
}

/* ---- processing ---- */

/* The disk watchdog: a walk of the writable host-backed directories. */
static void check_disk(fy_handle *h, struct lx *x, const struct linux_plan *pl) {
    if (pl->upper_quota && x->attempt_dir) {
        /* The container's writable root on disk, bounded as its tmpfs
         * would be (a nameless file held open counts too). */
        /* (Its upper alone: overlayfs's own work directory is mode 000,
         * which a rootless host cannot walk.) */
        char upper[PATH_MAX];
        snprintf(upper, sizeof(upper), "%s/upper", x->attempt_dir);
        const char *up[] = {upper};
        struct watch_total u;
        watch_measure(up, 1, &u);
        if (!x->reaped)
            watch_unnamed(x->pid, up, 1, &u);
        if (u.unmeasured || u.bytes > pl->upper_quota) {
            handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "tmp_size (the container's root, on disk)%s%s",
                       u.unmeasured ? ": not measurable: " : "", u.unmeasured ? u.unmeasured : "");
            lx_hard_kill(x, pl);
            return;
        }
    }
    if (!pl->nwatch)
        return;
    struct watch_total t;
    watch_measure(pl->watch_dirs, pl->nwatch, &t);
    if (!x->reaped)
        watch_unnamed(x->pid, pl->watch_dirs, pl->nwatch, &t);
    if (t.unmeasured) {
        /* What the walk cannot count may hold any amount: crossed. */
        handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "%s (not measurable: %s)",
                   pl->disk_quota != FY_UNLIMITED ? "disk" : "files", t.unmeasured);
        lx_hard_kill(x, pl);
    } else if (pl->disk_quota != FY_UNLIMITED && t.bytes > pl->disk_quota) {
        handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "disk");
        lx_hard_kill(x, pl);
    } else if (pl->files_quota != FY_UNLIMITED && t.files > pl->files_quota) {
        handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "files");
        lx_hard_kill(x, pl);
    }
}

static void read_status(fy_handle *h, struct lx *x) {
    for (;;) {
        struct child_msg m;
        ssize_t n = read(x->status_rd, &m, sizeof(m));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return; /* EAGAIN */
        if (n == 0) {
            x->status_eof = true;
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->status_rd, NULL);
            return;
        }
        if (n != sizeof(m))
            continue; /* records are written atomically; a short one is ignored */
        switch (m.type) {
        case CM_ERROR:
            if (!x->child_error) {
                x->child_error = true;
                x->err_step = m.step;
                x->err_errno = m.err;
                x->err_op = m.aux;
            }
            break;
        case CM_STAGE:
            if (m.aux == FY_STAGE_ISOLATION)
                x->t_isolation = m.value;
            else if (m.aux == FY_STAGE_FILESYSTEM)
                x->t_fs = m.value;
            break;
        case CM_EXEC:
            x->exec_seen = true;
            x->t_exec = m.value;
            break;
        case CM_EXIT:
            x->exit_seen = true;
            x->wstatus = (int)m.aux;
            x->t_exit = m.value;
            break;
        case CM_TASKS:
            x->tasks = m.value;
            x->have_tasks = true;
            break;
        case CM_RUSAGE:
            x->have_init_ru = true;
            if (m.aux == RU_USER_USEC)
                x->init_ru.ru_utime = (struct timeval){(time_t)(m.value / 1000000u), (suseconds_t)(m.value % 1000000u)};
            else if (m.aux == RU_SYSTEM_USEC)
                x->init_ru.ru_stime = (struct timeval){(time_t)(m.value / 1000000u), (suseconds_t)(m.value % 1000000u)};
            else if (m.aux == RU_MAXRSS_KIB)
                x->init_ru.ru_maxrss = (long)m.value;
            break;
        case CM_LANDLOCK:
            x->landlock_abi = m.aux;
            break;
        }
    }
    (void)h;
}

static void receive_listener(struct lx *x) {
    char dummy;
    struct iovec iov = {.iov_base = &dummy, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(x->notify_sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            memcpy(&x->notify_fd, CMSG_DATA(c), sizeof(int));
            lx_epoll_watch(x, x->notify_fd);
        }
    }
    /* One listener per sandbox: the socket is done either way. */
    epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->notify_sock, NULL);
    lx_close_fd(&x->notify_sock);
}

static void supervise_seccomp(fy_handle *h, struct lx *x) {
    const struct linux_plan *pl = h->pr->plan;
    struct pollfd pfd = {.fd = x->notify_fd, .events = POLLIN};
    /* Bounded per call: a workload that keeps making noted calls from many
     * threads must not keep the deadline and the output waiting (the
     * listener stays readable; the next turn of the loop comes back). */
    for (int turn = 0; turn < 64 && poll(&pfd, 1, 0) > 0; turn++) {
        if (pfd.revents & (POLLHUP | POLLERR)) {
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->notify_fd, NULL);
            lx_close_fd(&x->notify_fd);
            return;
        }
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        memset(&req, 0, sizeof(req));
        if (ioctl(x->notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
            if (errno == EINTR || errno == ENOENT)
                continue;
            return;
        }
        memset(&resp, 0, sizeof(resp));
        resp.id = req.id;
        resp.error = -EPERM;
        if (sc_is_noted(pl->np->seccomp_class, req.data.arch, (int)req.data.nr)) {
            /* Denied, as the profile says, counted, and the attempt goes on. */
            x->ptrace_denied++;
            ioctl(x->notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
            continue;
        }
        char name[96];
        sc_syscall_name(req.data.arch, req.data.nr, name, sizeof(name));
        handle_end(h, END_VIOLATION, FY_STEP_SECCOMP, 0, "syscall %s", name);
        ioctl(x->notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        /* A denied dangerous call ends the attempt at once. */
        lx_hard_kill(x, h->pr->plan);
    }
}

/* Replaces len bytes of *json at at with text (kept as it was when out of
 * memory: the planned value then stands). */
static void splice_json(char **json, const char *at, size_t len, const char *text) {
    char *patched = NULL;
    if (asprintf(&patched, "%.*s%s%s", (int)(at - *json), *json, text, at + len) >= 0) {
        free(*json);
        *json = patched;
    }
}

/* When the sandbox ended, as closely as it can be known: not when the host
 * came to reap it, which may be long after (a host busy elsewhere, or
 * sleeping until fy_handle_get_timeout_usec). Its end lies after the last
 * time it was seen running, and no earlier than its command's exit (the
 * init ends the rest right after that); unknown without an exit report. */
static uint64_t gone_at(const struct lx *x) {
    if (!x->exit_seen || !x->t_exit || !x->t_reaped)
        return x->t_reaped;
    uint64_t t = x->t_exit > x->t_alive ? x->t_exit : x->t_alive;
    return t < x->t_reaped ? t : x->t_reaped;
}

/* Whether the sandbox ended, on its own, before the wall-clock limit: its
 * command's exit was reported with an earlier time, or it is gone without
 * one (a sandbox that ended without reporting is no timeout: attempt.c
 * says so). The host may drive its handle long after: what happened before
 * the deadline is not turned into a timeout by the host's delay. */
static bool ended_in_time(const fy_handle *h, const struct lx *x) {
    if (x->exit_seen)
        return x->t_exit < h->deadline;
    return x->reaped;
}

/* Reports what this backend observed of the attempt, after cleaning up;
 * attempt.c decides the outcome and builds the result. */
static void finish(fy_handle *h, struct lx *x) {
    fy_result *r = result_new();
    if (!r)
        return; /* retried on the next call */
    struct attempt_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.t_cleanup_begin = util_now_usec();
    const struct linux_plan *pl = h->pr->plan;
    /* Restricted: the network's removal starts now (the DNS stub told to
     * end, the uplink link's deletion on its thread) and runs while the
     * cgroups and the attempt's directory go; lxn_teardown below witnesses. */
    lxn_teardown_begin(&x->net);
    if (pl->cg.enabled)
        cg_usage(&pl->cg, &x->cg, &x->usage); /* the final figures, OOM kills included */
    rep.isolation_json = util_strdup(pl->isolation_json);
    rep.limits_json = util_strdup(pl->cgroup_json);
    if (rep.isolation_json && pl->ll_handled && x->landlock_abi != pl->ll_abi) {
        /* Report what the sandbox says it enforced, not what was planned. */
        const char *key = strstr(rep.isolation_json, "\"landlock_abi\":");
        char abi[48];
        snprintf(abi, sizeof(abi), "\"landlock_abi\":%u", x->landlock_abi);
        if (key)
            splice_json(&rep.isolation_json, key, strcspn(key, ",}"), abi);
    }
    const char *idm = rep.isolation_json ? strstr(rep.isolation_json, "\"workspace_idmap\":\"mapped\"") : NULL;
    if (idm && x->idmap_mapped < x->idmap_planned)
        splice_json(&rep.isolation_json, idm, strlen("\"workspace_idmap\":\"mapped\""),
                    x->idmap_mapped ? "\"workspace_idmap\":\"partial\"" : "\"workspace_idmap\":\"unmapped\"");
    const char *pd = rep.isolation_json ? strstr(rep.isolation_json, "\"ptrace_denied\":0") : NULL;
    if (pd && x->ptrace_denied) {
        char n[48];
        snprintf(n, sizeof(n), "\"ptrace_denied\":%llu", (unsigned long long)x->ptrace_denied);
        splice_json(&rep.isolation_json, pd, strlen("\"ptrace_denied\":0"), n);
    }
    const char *init_key = rep.isolation_json ? strstr(rep.isolation_json, "\"" LX_INIT_EXEC "\"") : NULL;
    if (init_key && x->init_forked)
        splice_json(&rep.isolation_json, init_key, strlen(LX_INIT_EXEC) + 2, "\"" LX_INIT_FORK "\"");

    /* What happened. */
    rep.exit_seen = x->exit_seen;
    rep.wstatus = x->wstatus;
    rep.sigsys_is_filter_kill = pl->bpf && !pl->seccomp_notify;
    if (x->child_error) {
        rep.setup_failed = true;
        rep.setup_step = x->err_step;
        rep.setup_errno = x->err_errno;
        const struct mount_op *op = x->err_op && x->err_op <= pl->nops ? &pl->ops[x->err_op - 1] : NULL;
        if (x->err_step == FY_STEP_EXEC && x->err_op == pl->nops + 1) /* (linux-child.c: the chdir) */
            rep.setup_detail = util_asprintf("the working directory %s: %s%s", pl->workdir ? pl->workdir : "(the attempt's)",
                                           strerror(x->err_errno),
                                           x->err_errno == EXDEV ? " (outside the sandbox's own file systems)" : "");
        else if (x->err_step == FY_STEP_SECRET && x->err_op == pl->nops + 1) /* (linux-child.c: its tmpfs) */
            rep.setup_detail = util_asprintf("%s: /run/secrets: %s%s", fy_step_name(x->err_step),
                                           strerror(x->err_errno), x->err_errno == EXDEV ? LX_NOT_MADE_IN_HOST : "");
        else if (x->err_step == FY_STEP_EXEC)
            rep.setup_detail = util_asprintf("cannot execute %s: %s", pl->argv[0], strerror(x->err_errno));
        else if (op && op->kind == MK_BIND)
            rep.setup_detail = util_asprintf("%s: %s /%s at %s: %s%s", fy_step_name(x->err_step),
                                           (op->flags & MF_DEVICE) ? "device" : "host path", op->src, op->dst,
                                           strerror(x->err_errno),
                                           x->err_errno == ELOOP   ? " (a symbolic link in a workspace path is refused)"
                                           : x->err_errno == EXDEV ? LX_NOT_MADE_IN_HOST
                                                                   : "");
        else if (op)
            rep.setup_detail = util_asprintf("%s: %s: %s%s", fy_step_name(x->err_step), op->dst, strerror(x->err_errno),
                                           x->err_errno == EXDEV ? LX_NOT_MADE_IN_HOST : "");
    }
    rep.oom_killed = x->usage.oom_kills != 0;
    rep.memory_limit = pl->cg.memory;
    rep.pids_limit_hit = x->usage.pids_max_events != 0;

    /* When (CLOCK_MONOTONIC, the same clock inside and out). */
    rep.t_isolation = x->t_isolation ? x->t_isolation : x->t_go;
    rep.t_filesystem = x->t_fs;
    rep.t_exec = x->t_exec;
    rep.t_exit = x->t_exit;
    rep.t_ended = x->t_reaped;
    rep.t_gone = gone_at(x);
    rep.t_output_eof = x->t_eof;

    /* Output and usage, from the sandbox's own cgroup where it has one. */
    rep.output_bytes = x->output_bytes;
    rep.output_truncated = x->truncated;
    rep.output_limit = x->output_cap;
    for (int i = 1; i < 3; i++) {
        uint32_t mode = lx_neutral(h)->stdio[i].mode;
        rep.stream_counted[i] = mode == FY_STDIO_FILE || mode == FY_STDIO_CALLBACK;
        rep.stream_bytes[i] = x->stream_bytes[i];
    }
    if (x->usage.have_cpu) {
        rep.usage[FY_USAGE_CPU_USER_USEC] = x->usage.cpu_user_usec;
        rep.usage[FY_USAGE_CPU_SYSTEM_USEC] = x->usage.cpu_system_usec;
        rep.usage_known |= (1u << FY_USAGE_CPU_USER_USEC) | (1u << FY_USAGE_CPU_SYSTEM_USEC);
    }
    if (x->usage.have_memory) {
        rep.usage[FY_USAGE_MEMORY_PEAK] = x->usage.memory_peak;
        rep.usage_known |= 1u << FY_USAGE_MEMORY_PEAK;
    }
    if (x->usage.have_io) {
        rep.usage[FY_USAGE_IO_READ_BYTES] = x->usage.io_read;
        rep.usage[FY_USAGE_IO_WRITE_BYTES] = x->usage.io_write;
        rep.usage_known |= (1u << FY_USAGE_IO_READ_BYTES) | (1u << FY_USAGE_IO_WRITE_BYTES);
    }
    if (x->have_tasks) {
        rep.usage[FY_USAGE_PROCESSES] = x->tasks;
        rep.usage_known |= 1u << FY_USAGE_PROCESSES;
    }
    rep.usage_source = x->cg.v2_dir && pl->cg.v2_limits ? "cgroup v2" : pl->cg.enabled ? "cgroup v1" : NULL;
    /* pid 1 started by the reaper middle: it reaped pid 1, with its rusage. */
    if (x->reaper.pid > 0 && lx_reaper_finish(&x->reaper, &x->ru))
        x->have_ru = true;
    if (!x->have_ru && x->have_init_ru) {
        x->ru = x->init_ru; /* the host reaped pid 1: what pid 1 said it reaped */
        x->have_ru = true;
    }
    if (x->have_ru && !x->usage.have_cpu && !x->usage.have_memory) {
        /* No cgroup measured them: the rusage of what the sandbox's pid 1
         * reaped (the kernel's when we reaped pid 1; else pid 1's own
         * report). Its memory figure is the largest single process, not
         * the sandbox's total. */
        rep.usage[FY_USAGE_CPU_USER_USEC] = (uint64_t)x->ru.ru_utime.tv_sec * 1000000u + (uint64_t)x->ru.ru_utime.tv_usec;
        rep.usage[FY_USAGE_CPU_SYSTEM_USEC] = (uint64_t)x->ru.ru_stime.tv_sec * 1000000u + (uint64_t)x->ru.ru_stime.tv_usec;
        rep.usage[FY_USAGE_MEMORY_PEAK] = (uint64_t)x->ru.ru_maxrss * 1024u;
        rep.usage_known |= (1u << FY_USAGE_CPU_USER_USEC) | (1u << FY_USAGE_CPU_SYSTEM_USEC) | (1u << FY_USAGE_MEMORY_PEAK);
        rep.usage_source = "rusage";
    }

    /* Cleanup, witnessed: the cgroup must be empty, then it goes. Mounts
     * lived only in the sandbox's mount namespace, which died with it. */
    if (cg_remove_empty(&x->cg))
        rep.left[FY_LEFT_PROCESSES] = (uint64_t)cg_count_procs(&pl->cg, &x->cg);
    rep.left[FY_LEFT_CGROUPS] = (uint64_t)cg_destroy(&pl->cg, &x->cg);
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->spool_fd[i]);
    lx_stdin_settle(x); /* (nothing of the sandbox reads it any more) */
    lx_close_fd(&x->notify_fd);
    lx_close_fd(&x->sync_wr);
    lx_remove_attempt_dir(x);
    /* Restricted: the router namespace and its links go now that nothing
     * of the sandbox runs (linux-net.c witnesses the uplink veth's end). */
    x->net_left += lxn_teardown(&x->net);
    rep.left[FY_LEFT_NETWORK] = x->net_left;
    rep.network_json = lxn_take_report(&x->net); /* fetch-only: the proxy's audit log */
    if (pl->delay_stage == FY_STAGE_CLEANUP && pl->delay_usec)
        usleep((useconds_t)pl->delay_usec); /* qualification: attributed to cleanup */
    rep.left[FY_LEFT_FILES] = x->scratch_left ? 1 : 0;
    if (!rep.left[FY_LEFT_CGROUPS] && !x->scratch_left)
        lx_forget_state(x); /* else the record stays for fy_gc */
    rep.t_cleanup_end = util_now_usec();
    attempt_finish(h, &rep, r);
}

int lx_process(fy_handle *h, fy_error **reterr) {
    struct lx *x = h->b;
    struct epoll_event evs[8];
    /* Consume readiness; the work below looks at every source anyway. */
    while (epoll_wait(x->epfd, evs, 8, 0) == 8)
        ;
    uint64_t expirations;
    if (read(x->timerfd, &expirations, sizeof(expirations)) < 0) {
        /* EAGAIN: not expired */
    }
    if (x->status_rd >= 0 && !x->status_eof)
        read_status(h, x);
    if (x->notify_sock >= 0)
        receive_listener(x);
    if (x->notify_fd >= 0)
        supervise_seccomp(h, x);
    for (int i = 1; i < 3; i++)
        if (x->drain_rd[i] >= 0)
            lx_drain_output(h, x, i);
    /* Reaped first: a sandbox that has ended needs no poll of its cgroups
     * (finish reads the final figures, OOM kills included). */
    if (!x->reaped) {
        int rr = reap_pidfd(x, WNOHANG);
        /* ECHILD: the host reaped our pid 1 (a SIGCHLD set to SIG_IGN has
         * the kernel do it, a handler may waitpid(-1)): the kernel makes
         * every process that executes a program, forgeyard-init included,
         * send SIGCHLD at its exit whatever it was cloned with. Its end is
         * known all the same (the pidfd is readable); only its rusage is
         * lost, and the cgroup has the usage. */
        if (rr == 1 || rr == -ECHILD) {
            x->reaped = true;
            x->t_reaped = util_now_usec();
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->pidfd, NULL);
            /* Everything it said before it ended, its exit and when,
             * before the deadline is judged. */
            if (!x->status_eof)
                read_status(h, x);
        } else if (rr == 0) {
            x->t_alive = util_now_usec();
        }
    }
    uint64_t now = util_now_usec();
    if (h->pr->plan && ((const struct linux_plan *)h->pr->plan)->cg.enabled && !x->reaped && now >= x->next_poll) {
        /* The cgroup says when a limit was hit; end the attempt at once. */
        const struct linux_plan *cpl = h->pr->plan;
        cg_usage(&cpl->cg, &x->cg, &x->usage);
        if (x->usage.oom_kills && h->end == END_NONE) {
            handle_end(h, END_OOM, FY_STEP_CGROUP_LIMIT, 0, "memory limit of %llu bytes",
                       (unsigned long long)cpl->cg.memory);
            lx_hard_kill(x, cpl);
        } else if (x->usage.pids_max_events && h->end == END_NONE) {
            handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "pids");
            lx_hard_kill(x, cpl);
        }
        x->next_poll = now + 100000;
    }
    const struct linux_plan *wpl = h->pr->plan;
    if (x->kill == KS_NONE && h->end == END_NONE && h->deadline && now >= h->deadline) {
        if (!ended_in_time(h, x)) {
            handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                       (unsigned long long)(lx_neutral(h)->limit[FY_LIMIT_WALL_TIME] / 1000));
            lx_terminate(h);
        } else if (!x->reaped) {
            /* Its command exited in time and the init is ending the rest:
             * what is left at the deadline ends now, the outcome still the
             * command's. */
            lx_hard_kill(x, h->pr->plan);
        }
    }
    if (x->kill == KS_SOFT && now >= x->grace_deadline)
        lx_hard_kill(x, h->pr->plan);
    /* The disk watchdog after the deadline's checks (a pass is bounded,
     * WATCH_MAX_FDS, but it is work on this thread), not once the attempt
     * is ending, and at most a fifth of the time: the next pass waits four
     * times as long as this one took, at least 500 ms. */
    if (watching(wpl) && !x->reaped && x->kill == KS_NONE && h->end == END_NONE && now >= x->next_watch) {
        check_disk(h, x, wpl);
        uint64_t after = util_now_usec(), took = after > now ? after - now : 0;
        x->next_watch = after + (4 * took > 500000 ? 4 * took : 500000);
    }
    if (x->child_error && x->kill == KS_NONE)
        lx_hard_kill(x, h->pr->plan); /* a failed setup leaves nothing half-built running */
    if (x->kill == KS_HARD && x->hard_deadline && now >= x->hard_deadline && !x->reaped) {
        lx_hard_kill(x, h->pr->plan); /* (again, hard: the supervisor did not end its tree in time) */
        x->hard_deadline = 0;
    }
    if (x->reaped && !x->status_eof)
        read_status(h, x);
    lx_arm_timer(h, x);
    if (!x->reaped || !x->status_eof || lx_outputs_open(x))
        return 0;
    if (!x->t_eof) {
        const struct linux_plan *dpl = h->pr->plan;
        if (dpl->delay_stage == FY_STAGE_OUTPUT && dpl->delay_usec)
            usleep((useconds_t)dpl->delay_usec); /* qualification: attributed to output capture */
        x->t_eof = util_now_usec();
    }
    if (watching(wpl) && h->end == END_NONE)
        check_disk(h, x, wpl); /* what the last interval wrote counts too */
    finish(h, x);
    if (!h->result)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    return 1;
}
