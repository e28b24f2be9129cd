/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parent side of the Linux namespace backend: creating the sandbox with
 * clone3, mapping its ids, and driving it to a typed result without ever
 * blocking (fy_handle_process) — reading the sandbox's status records,
 * supervising seccomp violations, draining output, enforcing deadlines,
 * reaping through a pidfd. No signal handlers, no waitpid(-1), no SIGCHLD
 * (the child's exit signal is 0, so a host reaper cannot steal it).
 *
 * This file: the per-attempt state's life (struct lx, linux-spawn.h), the
 * start pipeline (lx_start), destroy and the rest of the ops glue. Its
 * pieces: linux-spawn-io.c (stdio, output, secrets and the environment),
 * linux-spawn-init.c (forgeyard-init and the clone) and
 * linux-spawn-supervise.c (lx_process, deadlines, kill and reap, the
 * report). */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "handle.h"
#include "linux-plan.h"
#include "linux-net-user.h"
#include "linux-spawn.h"
#include "linux-state.h"
#include "linux-syscall.h"

void lx_close_fd(int *fd) {
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static struct lx *lx_new(void) {
    struct lx *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->pidfd = x->epfd = x->timerfd = x->sync_wr = x->status_rd = x->state_fd = -1;
    x->cg.v2_fd = -1;
    x->notify_sock = x->notify_fd = -1;
    x->args.owner_pidfd = -1;
    x->reaper = (struct lx_reaper){-1, -1, -1, -1};
    lxn_run_init(&x->net);
    for (int i = 0; i < 3; i++)
        x->child_stdio[i] = x->host_pipe[i] = x->drain_rd[i] = x->spool_fd[i] = -1;
    x->stdin_own = x->stdin_host = -1;
    return x;
}

void lx_remove_attempt_dir(struct lx *x) {
    if (!x->attempt_dir)
        return;
    x->scratch_left = state_remove_tree(x->attempt_dir) < 0; /* never follows planted symlinks */
    free(x->attempt_dir);
    x->attempt_dir = NULL;
}

void lx_forget_state(struct lx *x) {
    lx_close_fd(&x->state_fd);
    if (x->state_path) {
        unlink(x->state_path);
        free(x->state_path);
        x->state_path = NULL;
    }
}

/* The platform-neutral plan the handle's sandbox was compiled from. */
const struct fy_plan *lx_neutral(const fy_handle *h) { return ((const struct linux_plan *)h->pr->plan)->np; }

int lx_running_init(const fy_handle *h, pid_t *pid, int *pidfd) {
    if (!h->backend || strcmp(h->backend->name, "linux-namespace") != 0 || !h->b || h->result)
        return -1;
    const struct lx *x = h->b;
    if (x->pid <= 0 || x->pidfd < 0 || x->reaped)
        return -1;
    *pid = x->pid;
    *pidfd = x->pidfd;
    return 0;
}

static void lx_free(struct lx *x) {
    if (!x)
        return;
    free(x->state_path);
    free(x->state_dir);
    lx_close_fd(&x->state_fd);
    if (x->cg.v2_fd >= 0)
        close(x->cg.v2_fd);
    x->cg.v2_fd = -1;
    free(x->cg.name);
    free(x->cg.v2_dir);
    for (int c = 0; c < CG_NCTL; c++)
        free(x->cg.v1_dir[c]);
    x->net_left += lxn_teardown(&x->net);
    free(x->attempt_home);
    free(x->attempt_tmp);
    free(x->attempt_secrets);
    free(x->env_home);
    free(x->env_tmpdir);
    lx_close_fd(&x->pidfd);
    lx_close_fd(&x->args.owner_pidfd);
    /* (The reaper middle was waited for where the attempt ended; a forked
     * copy of the host only lets go of its fds.) */
    lx_close_fd(&x->reaper.rd);
    lx_close_fd(&x->reaper.go);
    lx_close_fd(&x->reaper.pidfd);
    lx_close_fd(&x->epfd);
    lx_close_fd(&x->timerfd);
    lx_close_fd(&x->sync_wr);
    lx_close_fd(&x->status_rd);
    lx_close_fd(&x->notify_sock);
    lx_close_fd(&x->notify_fd);
    for (int i = 0; i < 3; i++) {
        lx_close_fd(&x->child_stdio[i]);
        lx_close_fd(&x->host_pipe[i]);
        lx_close_fd(&x->drain_rd[i]);
        lx_close_fd(&x->spool_fd[i]);
    }
    lx_stdin_settle(x);
    lx_remove_attempt_dir(x); /* (last: with every descriptor of the attempt closed) */
    for (size_t i = 0; i < x->nsecret_env; i++)
        secret_release(x->secret_env[i]);
    free(x->secret_env);
    free(x->envp);
    free(x->secrets);
    free(x);
}

int lx_sys_err(fy_error **reterr, uint32_t step, const char *what) {
    int e = errno;
    return err_set(reterr, err_from_errno(e), step, e, NULL, "%s: %s", what, strerror(e));
}

int lx_epoll_watch(struct lx *x, int fd) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    return epoll_ctl(x->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int lx_set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- ids ---- */

static int write_proc_file(pid_t pid, const char *name, const char *text) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    return w == (ssize_t)strlen(text) ? 0 : -(w < 0 ? e : EIO);
}

int lx_map_ids(const struct linux_plan *pl, pid_t pid, fy_error **reterr) {
    int r;
    if (!pl->as_root && (r = write_proc_file(pid, "setgroups", "deny")) < 0)
        return err_set(reterr, err_from_errno(-r), FY_STEP_UID_MAP, -r, NULL, "setgroups deny: %s", strerror(-r));
    if ((r = write_proc_file(pid, "uid_map", pl->uid_map)) < 0)
        return err_set(reterr, err_from_errno(-r), FY_STEP_UID_MAP, -r, NULL, "writing uid_map \"%.*s\": %s",
                       (int)strcspn(pl->uid_map, "\n"), pl->uid_map, strerror(-r));
    if ((r = write_proc_file(pid, "gid_map", pl->gid_map)) < 0)
        return err_set(reterr, err_from_errno(-r), FY_STEP_UID_MAP, -r, NULL, "writing gid_map: %s", strerror(-r));
    return 0;
}

/* ---- start ---- */

/* Fallback when clone3 could not place the child in its cgroup v2: move it
 * before it starts the workload. */
/* A cgroup v2 migration moves one process, and the sandbox's init forks its
 * workload process first of all (early_workload), which then waits for the
 * go-ahead: both go. Init first: its write waits for a fork in flight to
 * end, and whatever it forks afterwards is born in the new cgroup; then the
 * children /proc lists by then (init's only thread; nothing of the sandbox
 * forks again before the go-ahead). */
static int write_pid(int fd, pid_t pid) {
    char val[32];
    snprintf(val, sizeof(val), "%d", (int)pid);
    return write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
}

int lx_write_proc_cgroup(const char *dir, pid_t pid, fy_error **reterr) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int e = fd < 0 ? -errno : write_pid(fd, pid);
    if (e == 0) {
        char kids[128], buf[256];
        snprintf(kids, sizeof(kids), "/proc/%d/task/%d/children", (int)pid, (int)pid);
        int kfd = open(kids, O_RDONLY | O_CLOEXEC);
        ssize_t len = kfd >= 0 ? read(kfd, buf, sizeof(buf) - 1) : 0;
        if (kfd >= 0)
            close(kfd);
        buf[len > 0 ? len : 0] = '\0';
        char *p = buf, *end;
        for (long v; e == 0 && (v = strtol(p, &end, 10)) > 0 && end != p; p = end)
            if ((e = write_pid(fd, (pid_t)v)) == -ESRCH)
                e = 0; /* (gone: its end is reported as the sandbox's) */
    }
    if (fd >= 0)
        close(fd);
    if (e < 0)
        return err_set(reterr, err_from_errno(-e), FY_STEP_CGROUP, -e, NULL, "placing the sandbox in %s: %s", dir,
                       strerror(-e));
    return 0;
}

/* The attempt's record in the state directory, so that fy_gc can destroy
 * what a crashed host process left: created before the cgroups exist,
 * naming the directories about to be made and no process; the sandbox's
 * pid is appended once it is placed (record_sandbox). */
int lx_record_state(const struct linux_plan *pl, const char *name, const char *scratch, char **ret_dir,
                    char **ret_path, int *ret_fd, fy_error **reterr) {
    char defdir[4096];
    const char *dir = pl->np->state_dir;
    int r = 0;
    if (!dir && (r = state_default_dir(defdir, sizeof(defdir))) == 0)
        dir = defdir;
    if (!dir)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, 0, NULL, "no state directory");
    char *planned[CG_NCTL + 1] = {0};
    const char *cgs[CG_NCTL + 1];
    size_t ncg = cg_planned_dirs(&pl->cg, name, planned, FY_ARRAY_SIZE(planned));
    for (size_t i = 0; i < ncg; i++) {
        if (!planned[i])
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        cgs[i] = planned[i];
    }
    if (r == 0 && !(*ret_dir = util_strdup(dir)))
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    if (r == 0)
        r = state_record(dir, name, cgs, ncg, scratch, ret_path, ret_fd, reterr);
    for (size_t i = 0; i < FY_ARRAY_SIZE(planned); i++)
        free(planned[i]);
    return r;
}

/* One go-ahead to the child (see lx_start), with fds for it (the second
 * one carries its v1 cgroups' tasks files: cg_open_tasks). A child that
 * already ended (EPIPE) is not an error here: it reported why on its
 * status pipe, and the attempt's result carries that. */
static int send_go(struct lx *x, const int *fds, size_t nfds, fy_error **reterr) {
    if (nfds > LX_GO_MAX_FDS)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SPAWN, 0, NULL, "too many fds for the sandbox");
    /* A sandbox already gone (EPIPE) reported why on its status pipe. */
    if (lx_send_fds(x->sync_wr, 'g', fds, nfds) < 0 && errno != EPIPE && errno != ECONNRESET)
        return lx_sys_err(reterr, FY_STEP_SPAWN, "starting the sandbox");
    return 0;
}

static int send_trees(struct lx *x, const struct linux_plan *pl, fy_error **reterr) {
    int r = lx_send_trees(pl, x->sync_wr, &x->idmap_mapped, &x->idmap_planned);
    /* A sandbox already gone (EPIPE) reported why on its status pipe. */
    if (r < 0 && r != -EPIPE && r != -ECONNRESET)
        return err_set(reterr, err_from_errno(-r), FY_STEP_MOUNT, -r, NULL,
                       "handing the sandbox its workspace: %s", strerror(-r));
    return 0;
}

/* Hands a claimed shell its attempt in one message, which is also its
 * first go-ahead (its ids were mapped when it was made): the packed
 * arguments in a sealed memfd, the status pipe, the seccomp notification
 * socket (when the plan has one) and the standard streams the plan names,
 * in that order (linux-init-main.c). The cgroups it was made in (v2, and the
 * v1 ones it joined) get the plan's limits first. */
/* How long a claimed shell may take to say it took its claim: it waits in
 * poll for nothing else, so only a host stalled that long misses it (and
 * then starts the attempt from nothing). */
#define SHELL_ACK_TIMEOUT_MS 5000

static int claim_shell(struct lx *x, const struct linux_plan *pl, int status[2], int nsock[2], fy_error **reterr) {
    int r = cg_create(&pl->cg, &x->cg, CG_PART_V2_LIMITS | CG_PART_V1_LIMITS, reterr);
    if (r < 0)
        return r;
    const struct child_args *a = &x->args;
    int plan_fd = lx_packed_memfd(a);
    if (plan_fd < 0)
        return err_set(reterr, err_from_errno(-plan_fd), FY_STEP_SPAWN, -plan_fd, NULL,
                       "the sandbox's arguments in a sealed memfd: %s", strerror(-plan_fd));
    int fds[6];
    size_t n = 0;
    fds[n++] = plan_fd;
    fds[n++] = status[1];
    if (nsock[1] >= 0)
        fds[n++] = nsock[1];
    for (int i = 0; i < 3; i++)
        if (a->stdio[i] >= 0)
            fds[n++] = a->stdio[i];
    int sent = lx_send_fds(x->sync_wr, 'C', fds, n);
    close(plan_fd);
    /* The shell says it took the claim ('A') before anything of it runs:
     * one that ended since its last look (killed, its idle limit) is lost,
     * and the attempt starts from nothing instead (BACKEND_SHELL_LOST). */
    struct pollfd pf = {.fd = x->sync_wr, .events = POLLIN};
    int pr = -1;
    if (sent >= 0)
        while ((pr = poll(&pf, 1, SHELL_ACK_TIMEOUT_MS)) < 0 && errno == EINTR)
            ;
    bool truncated = false;
    size_t nack = 0;
    if (pr != 1 || lx_recv_fds(x->sync_wr, NULL, 0, &nack, &truncated) != 'A' || nack || truncated)
        return BACKEND_SHELL_LOST;
    lx_close_fd(&status[1]);
    lx_close_fd(&nsock[1]);
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->child_stdio[i]);
    /* Its workspace's trees (linux-idmap.c), as for a fresh one. */
    if ((r = send_trees(x, pl, reterr)) < 0)
        return r;
    x->status_rd = status[0];
    x->notify_sock = nsock[0];
    status[0] = nsock[0] = -1;
    return 0;
}

/* The start pipeline, from nothing (sh NULL) or claiming the pre-started
 * shell sh (linux-shell.c), which it consumes either way. */
static int start_from(fy_handle *h, struct lx_shell *sh, fy_error **reterr) {
    const struct linux_plan *pl = h->pr->plan;
    const struct fy_plan *np = pl->np;
    struct lx *x = lx_new();
    if (!x) {
        if (sh)
            (void)lx_shell_discard(sh);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    }
    int r = 0, sync[2] = {-1, -1}, status[2] = {-1, -1}, nsock[2] = {-1, -1};
    /* A claimed shell's process, socket, cgroup and record become the
     * attempt's: from here on they are released as the attempt's. */
    if (sh)
        lx_shell_adopt(sh, x);
    x->output_cap = np->limit[FY_LIMIT_OUTPUT];
    if ((x->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (x->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0) {
        r = lx_sys_err(reterr, FY_STEP_SPAWN, "epoll/timerfd");
        goto fail;
    }
    if (lx_epoll_watch(x, x->timerfd) < 0 || lx_epoll_watch(x, h->wake_fd) < 0) {
        r = lx_sys_err(reterr, FY_STEP_SPAWN, "epoll_ctl");
        goto fail;
    }
    int stdin_secret;
    /* The record exists before anything else the attempt leaves on the
     * host (its scratch directory, cgroups, secrets, the sandbox): a crash
     * from here on leaves nothing fy_gc cannot find. The scratch directory's
     * name is chosen and recorded first, and made after (fy_gc takes a
     * recorded one that is missing for removed); one that exists is
     * never taken over: another name, recorded anew (the record is
     * replaced whole, by a rename). (A claimed shell has no scratch.) */
    if (!sh && !(x->cg.name = cg_new_name())) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        goto fail;
    }
    bool shm_failed = false;
    for (int tries = 0;; tries++) {
        char *planned = NULL;
        if (!sh && pl->process_mode && !(planned = lx_plan_attempt_dir(shm_failed))) {
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
            goto fail;
        }
        if (!sh && !pl->process_mode && pl->overlay_disk && (r = lx_plan_upper_dir(pl, &planned, reterr)) < 0)
            goto fail;
        if (!sh && tries > 0) {
            lx_close_fd(&x->state_fd);
            free(x->state_dir);
            free(x->state_path);
            x->state_dir = x->state_path = NULL;
        }
        if (!sh && (r = lx_record_state(pl, x->cg.name, planned, &x->state_dir, &x->state_path, &x->state_fd,
                                        reterr)) < 0) {
            free(planned);
            goto fail;
        }
        if (!planned)
            break;
        r = pl->process_mode ? lx_setup_attempt_dir(x, pl, planned, &shm_failed, reterr)
                             : lx_setup_upper_dir(x, pl, planned, reterr);
        free(planned);
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        if (tries >= 100) {
            r = err_set(reterr, FY_E_IO, FY_STEP_MOUNT, EEXIST, NULL, "creating the attempt's scratch directory: %s",
                        strerror(EEXIST));
            goto fail;
        }
    }
    /* Restricted: the router (linux-net.c), on a thread of its own while
     * we clone the sandbox and it makes its network namespace and builds
     * its filesystem; lxn_finish waits for it. The sandbox runs nothing of
     * the workload before its second go-ahead, which waits for the router
     * and the rules. */
    if (pl->net_router && (r = lxn_begin_async(&x->net, pl->net, reterr)) < 0)
        goto fail;
    x->net.job = h->job; /* a job member: the job's network (linux-jobnet.c) */
    /* Rootless restricted: pasta outlives nothing of ours, but fy_gc finds it. */
    if (!sh && pl->net_router && lxnu_uplink_pid(&x->net) > 0 &&
        (r = state_record_helper(x->state_fd, lxnu_uplink_pid(&x->net), reterr)) < 0)
        goto fail;
    if ((r = lx_setup_secrets(x, np, pl, &stdin_secret, reterr)) < 0 ||
        (r = lx_setup_stdio(x, np, stdin_secret, reterr)) < 0)
        goto fail;
    lx_stdio_for_workload(x, pl);
    /* sync: the two go-aheads to the child (a socket, so that writing to a
     * child that already died is EPIPE without a SIGPIPE to the host), and
     * the host's liveness for its init afterwards. */
    if ((!sh && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0) || pipe2(status, O_CLOEXEC) < 0) {
        r = lx_sys_err(reterr, FY_STEP_SPAWN, "pipe");
        goto fail;
    }
    if (pl->seccomp_notify && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, nsock) < 0) {
        r = lx_sys_err(reterr, FY_STEP_SECCOMP, "socketpair");
        goto fail;
    }
    struct child_args *a = &x->args;
    a->plan = pl;
    a->owner_pid = util_getpid();
    /* Init ends the sandbox when this process exits (its pidfd), not only
     * when the last copy of sync[1] is closed: a fork(2) of the host keeps
     * one for as long as it lives. (-1 without pidfd_open: only the
     * latter. A claimed shell has the pidfd of its maker.) */
    if (!sh)
        a->owner_pidfd = lx_owner_pidfd();
    a->sync_fd = sync[0];
    a->status_fd = status[1];
    a->notify_sock = nsock[1];
    for (int i = 0; i < 3; i++)
        a->stdio[i] = x->child_stdio[i];
    a->envp = x->envp;
    a->secrets = x->secrets;
    a->workdir = x->attempt_dir;
    a->secrets_dir = pl->process_mode ? x->attempt_secrets : NULL;
    /* Restricted as root: the sandbox is (cloned, or its shell was) in the
     * namespace made for it, which holds its rules (lxn_direct). */
    a->netns_host = lxn_sandbox_netns(&x->net) >= 0;

    /* The start is a pipeline over two go-aheads. The child is cloned
     * straight into its cgroup v2 (if it has one), without its network and
     * cgroup namespaces (its own to create), and once its ids are mapped
     * builds its network and filesystem while we create its v1 cgroups.
     * The second go-ahead carries their tasks files, and it moves itself
     * into them (cg_open_tasks says why not us). It forks nothing and
     * executes nothing of the workload before that, so no process of the
     * workload ever runs unaccounted; its cgroup namespace is made only
     * then, rooted at its own cgroups. */
    const struct obs *obs = np->obs;
    obs_span(obs, "sandbox.resource", FY_SPAN_BEGIN, util_now_usec(), NULL);
    bool cloned_into = false;
    if (sh) {
        if ((r = claim_shell(x, pl, status, nsock, reterr)) < 0) {
            /* A lost shell: the attempt had nothing in it but the shell's
             * own cgroups and record, removed (and witnessed) below. */
            obs_span(obs, "sandbox.resource", FY_SPAN_END, util_now_usec(), "{\"cgroups\":false}");
            goto fail;
        }
        goto claimed;
    }
    if ((r = cg_create(&pl->cg, &x->cg, CG_PART_V2, reterr)) < 0) {
        obs_span(obs, "sandbox.resource", FY_SPAN_END, util_now_usec(), "{\"cgroups\":false}");
        goto fail;
    }
    int pidfd = -1;
    struct fy_clone_args ca = {
        .flags = (pl->clone_flags & ~(uint64_t)LX_CHILD_UNSHARES) | CLONE_PIDFD | FY_CLONE_CLEAR_SIGHAND,
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = 0,
    };
    if (x->cg.v2_fd >= 0 && !np->test_no_clone_into) {
        ca.flags |= FY_CLONE_INTO_CGROUP;
        ca.cgroup = (uint64_t)x->cg.v2_fd;
    }
    pid_t pid = -1;
    bool via_clone3 = true;
    /* Restricted as root (lxn_direct): the sandbox starts in the network
     * namespace made for it, which the host's user namespace owns; this
     * thread goes there for the clone only. */
    int net_back = -1, net_in = lxn_sandbox_netns(&x->net);
    if (net_in >= 0 && (r = lxn_enter(net_in, &net_back)) < 0) {
        r = err_set(reterr, err_from_errno(-r), FY_STEP_NETNS, -r, NULL,
                    "entering the sandbox's network namespace for the clone: %s", strerror(-r));
        goto fail;
    }
    /* Every signal blocked across the clone, so that the sandbox's init
     * starts with them blocked: until forgeyard-init has set its own
     * dispositions (lx_default_signals) it is a pid-namespace init with
     * SIGTERM at its default, which the kernel discards when it comes from
     * outside; blocked, a cancel that early stays pending and is served. */
    sigset_t all_sigs, old_sigs;
    sigfillset(&all_sigs);
    pthread_sigmask(SIG_SETMASK, &all_sigs, &old_sigs);
    int how = np->test_copy_init ? 0 : lx_clone_exec_init(a, &ca, &x->reaper, &pidfd, &pid, &via_clone3);
    /* A copy of the host: its user namespace made by the plan's owner as
     * well (lx_owner_enter; the executed init's clone does the same). */
    struct lx_owner_save owner_sv;
    int as_owner = how == 0 && (ca.flags & CLONE_NEWUSER) ? lx_owner_enter(pl->userns_owner, true, &owner_sv) : 1;
    if (how == 0 && as_owner < 0)
        errno = -as_owner;
    else if (how == 0)
        pid = sys_clone3(&ca, sizeof(ca));
    cloned_into = pid >= 0 && (ca.flags & FY_CLONE_INTO_CGROUP) && via_clone3;
    x->init_forked = how == 0;
    if (how == 0 && as_owner >= 0 && pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
        /* Older kernels: clone(2) with CLONE_PIDFD (5.2+), no new stack. */
        pid = (pid_t)syscall(SYS_clone, (unsigned long)((pl->clone_flags & ~(uint64_t)LX_CHILD_UNSHARES) | CLONE_PIDFD),
                             0, &pidfd, 0, 0);
    }
    if (pid == 0)
        linux_child_main(a); /* never returns */
    if (as_owner == 0) {
        int e = errno;
        lx_owner_leave(&owner_sv);
        errno = e;
    }
    if (net_back >= 0) {
        int e = errno;
        lxn_leave(net_back);
        errno = e;
    }
    {
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &old_sigs, NULL);
        errno = e;
    }
    if (pid < 0) {
        /* (the init's sealed memfds not made: the start's own step;
         * anything else is the clone's) */
        r = lx_sys_err(reterr, how == -2 ? FY_STEP_SPAWN : FY_STEP_USERNS,
                       how == -2 ? "the sandbox's init (its sealed memfd)" : "clone");
        goto fail;
    }
    x->pid = pid;
    x->pidfd = pidfd;
    lx_close_fd(&a->owner_pidfd);
    close(sync[0]);
    close(status[1]);
    sync[0] = status[1] = -1;
    if (nsock[1] >= 0)
        close(nsock[1]);
    nsock[1] = -1;
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->child_stdio[i]);
    x->sync_wr = sync[1];
    x->status_rd = status[0];
    x->notify_sock = nsock[0];
    sync[1] = status[0] = nsock[0] = -1;

    /* After the first go-ahead, while the sandbox builds its namespaces:
     * a root caller's workspace trees (linux-idmap.c), which init waits
     * for only when it reaches their binds. */
    if ((!pl->process_mode && (r = lx_map_ids(pl, pid, reterr)) < 0) || (r = send_go(x, NULL, 0, reterr)) < 0 ||
        (r = send_trees(x, pl, reterr)) < 0) {
        lx_hard_kill(x, pl);
        lx_reap_blocking(x, pl);
        goto fail;
    }
claimed:
    x->t_go = util_now_usec();
    /* (A claimed shell is in its v1 cgroups already, limited: claim_shell.) */
    r = sh ? 0 : cg_create(&pl->cg, &x->cg, CG_PART_V1, reterr);
    obs_span(obs, "sandbox.resource", FY_SPAN_END, util_now_usec(), "{\"cgroups\":%s}", pl->cg.enabled ? "true" : "false");
    /* The sandbox's pid goes into the record before the go-ahead: the
     * sandbox itself ends when we die, the record is for what it leaves.
     * With the go-ahead go its v1 cgroups' tasks files: it moves itself. */
    int tasks[LX_GO_MAX_FDS];
    size_t ntasks = 0;
    /* Restricted: the sandbox's init sends its network namespace once it
     * stands; its link to the router is made before the workload may run. */
    if (r == 0 && pl->net_router && a->netns_host) {
        /* (made by us: nothing to wait for from the sandbox) */
        r = lxn_finish(&x->net, lxn_sandbox_netns(&x->net), reterr);
    } else if (r == 0 && pl->net_router) {
        int ns = lxn_recv_netns(x->sync_wr, 30000);
        if (ns == -EPIPE) {
            /* The sandbox ended before its namespace stood: it reported why
             * on its status pipe, and the attempt's result carries that (as
             * for a go-ahead it can no longer read). Nothing of it runs. */
        } else if (ns < 0) {
            r = err_set(reterr, err_from_errno(-ns), FY_STEP_NETNS, -ns, NULL,
                        "restricted network: the sandbox's network namespace did not come: %s", strerror(-ns));
        } else {
            r = lxn_finish(&x->net, ns, reterr);
            close(ns);
        }
    }
    if (r == 0 && !sh)
        r = cg_open_tasks(&pl->cg, &x->cg, tasks, LX_GO_MAX_FDS, &ntasks, reterr);
    /* Not cloned into its v2 cgroup (no clone3, or the privileged helper's
     * cgroup, which only the helper may move it into): placed now, before
     * the go-ahead lets anything of the workload run. */
    if (r < 0 || (!sh && !cloned_into && x->cg.v2_dir && (r = cg_place(&pl->cg, &x->cg, x->pid, x->pidfd, reterr)) < 0) ||
        (!sh && (r = state_record_sandbox(x->state_fd, x->pid, reterr)) < 0) || (r = send_go(x, tasks, ntasks, reterr)) < 0) {
        for (size_t i = 0; i < ntasks; i++)
            close(tasks[i]);
        lx_hard_kill(x, pl);
        lx_reap_blocking(x, pl);
        goto fail;
    }
    for (size_t i = 0; i < ntasks; i++)
        close(tasks[i]);
    if (lx_set_nonblock(x->status_rd) < 0 || lx_epoll_watch(x, x->status_rd) < 0 || lx_epoll_watch(x, x->pidfd) < 0 ||
        (x->notify_sock >= 0 && (lx_set_nonblock(x->notify_sock) < 0 || lx_epoll_watch(x, x->notify_sock) < 0))) {
        r = lx_sys_err(reterr, FY_STEP_SPAWN, "epoll_ctl");
        lx_hard_kill(x, pl);
        lx_reap_blocking(x, pl);
        goto fail;
    }
    h->b = x;
    /* The first look at its cgroups in 100 ms, as every one after: one at
     * once would take CPU from the start it is making (a limit hit before
     * is reported all the same, from the final figures). */
    x->next_poll = util_now_usec() + 100000;
    lx_arm_timer(h, x);
    /* While the sandbox builds itself: the result will need it. */
    (void)prepared_contract_id(h->pr);
    return 0;
fail:
    if (sh && x->pid > 0 && !x->reaped) {
        /* The claimed shell: used or not, it is never handed out again. */
        lx_hard_kill(x, pl);
        lx_reap_blocking(x, pl);
    }
    for (int i = 0; i < 2; i++) {
        lx_close_fd(&sync[i]);
        lx_close_fd(&status[i]);
        lx_close_fd(&nsock[i]);
    }
    for (int i = 0; i < 3; i++)
        if (x->spool_created[i])
            unlink(x->spool_created[i]); /* nothing ran: leave no empty spool behind */
    /* The attempt directory with descriptors to spare (a start that failed
     * for want of them could not remove it, and its record was dropped:
     * nothing could ever find it); the record stays while anything of it
     * does, for fy_gc. */
    lx_close_fd(&x->epfd);
    lx_close_fd(&x->timerfd);
    lx_remove_attempt_dir(x);
    if (cg_destroy(&pl->cg, &x->cg) == 0 && !x->scratch_left)
        lx_forget_state(x); /* else the record stays, for fy_gc */
    (void)lx_reaper_finish(&x->reaper, &x->ru);
    lx_free(x);
    return r;
}

int lx_start(fy_handle *h, fy_error **reterr) { return start_from(h, NULL, reterr); }

int lx_start_shell(fy_handle *h, void *shell, fy_error **reterr) { return start_from(h, shell, reterr); }

#define SWEEP_INTERVAL_USEC (60u * 1000u * 1000u)

void lx_destroy(fy_handle *h) {
    struct lx *x = h->b;
    if (!x)
        return;
    if (!x->reaped) {
        lx_hard_kill(x, h->pr->plan);
        lx_reap_blocking(x, h->pr->plan);
    }
    (void)lx_reaper_finish(&x->reaper, &x->ru);
    if (cg_destroy(&((const struct linux_plan *)h->pr->plan)->cg, &x->cg) == 0) {
        lx_remove_attempt_dir(x);
        if (!x->scratch_left)
            lx_forget_state(x);
    }
    /* A host that never calls fy_gc must not accumulate what crashed
     * owners left (cgroups, scratch): the records of dead owners in our
     * state directory are destroyed here, after our result, off the
     * attempt's own path, at most once a minute per process (a directory
     * scan per attempt cost a busy runner 5% of its throughput). Records
     * of live owners are never touched. The timestamp is housekeeping, not
     * a decision: nothing an attempt gets depends on it. Records of another
     * pid namespace (a host in a container sharing the directory) are
     * never judged here: their pids name nothing of ours. */
    static _Atomic uint64_t last_sweep;
    uint64_t now = util_now_usec(), last = atomic_load(&last_sweep);
    if (x->state_dir && (last == 0 || now - last >= SWEEP_INTERVAL_USEC) &&
        atomic_compare_exchange_strong(&last_sweep, &last, now)) {
        (void)state_gc(x->state_dir, NULL, NULL);
        cg_gc_unrecorded(&((const struct linux_plan *)h->pr->plan)->cg, x->state_dir);
    }
    lx_free(x);
    h->b = NULL;
}

void lx_forget(fy_handle *h) {
    /* In a forked copy of the host: the fds are copies, closing them does not
     * affect the parent's sandbox; never signal it. */
    struct lx *x = h->b;
    if (x) {
        x->reaped = true;
        lxn_forget(&x->net); /* the parent's links are the parent's to remove */
        /* ... and its attempt directory (the process level's HOME, TMPDIR
         * and secrets, in use by the parent's workload) the parent's. */
        free(x->attempt_dir);
        x->attempt_dir = NULL;
    }
    lx_free(x);
    h->b = NULL;
}

int lx_get_fd(fy_handle *h) { return ((struct lx *)h->b)->epfd; }

int lx_stdio_fd(fy_handle *h, uint32_t stream) {
    struct lx *x = h->b;
    int fd = x->host_pipe[stream];
    if (fd < 0)
        return FY_E_STATE;
    /* stdin's write end is handed over (the caller closes it to send EOF);
     * stdout/stderr stay owned by the handle. */
    if (stream == FY_STDIN)
        x->host_pipe[FY_STDIN] = -1;
    return fd;
}

/* ---- plan hooks for the backend table ---- */

int linux_compile(const struct fy_plan *plan, const fy_caps *caps, void **ret, fy_error **reterr) {
    struct linux_plan *pl = NULL;
    int r = linux_plan_compile(plan, caps, &pl, reterr);
    if (r < 0)
        return r;
    *ret = pl;
    return 0;
}

void linux_plan_free_hook(void *plan) { linux_plan_free(plan); }

