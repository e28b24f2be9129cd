/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pre-started shells (fy_shells_new(3)) for the Linux namespace and
 * container backends: the part of a start that depends on no attempt,
 * done before one is asked for. A shell is forgeyard-init executed in the
 * plan's fresh namespaces (user, mount, pid, ipc, uts), its ids mapped,
 * placed in a bare v2 cgroup of its own where the plan has one, and
 * recorded in the state directory for fy_gc; where the plan has v1 cgroups,
 * it joins them made bare (no limit: the claim writes the plan's). It holds
 * no host path, plan,
 * secret, environment or workload byte: it has only a socket to us, on
 * which it waits for one claim (linux-init-main.c, shell_main), and it
 * leaves by itself once idle_ms pass without one. A claim is lx_start's
 * pipeline from its first go-ahead on (linux-spawn.c, start_from): the
 * network namespace, the filesystem, the cgroups' limits, the workload,
 * all made for the attempt after the claim as in a cold start. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux-net.h"
#include "linux-plan.h"
#include "linux-probe-util.h"
#include "linux-spawn.h"
#include "linux-state.h"
#include "linux-syscall.h"

/* Whether the shell makes the sandbox's network namespace in advance: an
 * own namespace with only lo (a restricted plan's is linked to its router
 * at the start, by the host: made then). */
static bool shell_netns(const struct linux_plan *pl) { return pl->use_netns && !pl->net_router; }

/* Whether it is cloned into a network namespace we make for it (empty: no
 * link, no rule; restricted as root, lxn_direct), which the claiming
 * attempt gets its link and rules in. */
static bool shell_host_netns(const struct linux_plan *pl) { return pl->net_router && lxn_direct(pl->net); }

/* What a clone inherits from the thread that makes it and no plan sets:
 * the host's resource limits (the sandbox's own are applied below them,
 * never above), and the thread's no-new-privileges, seccomp filters and
 * capability bounding set. A shell made while the host had other ones than
 * a cold start would inherit now (the host lowered a hard limit, or
 * confined itself, after the fill) is no fit: its workload had the old
 * ones. */
static void inherited(struct strbuf *b) {
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        struct rlimit rl;
        if (getrlimit(r, &rl) == 0)
            strbuf_printf(b, " rl%d=%llx/%llx", r, (unsigned long long)rl.rlim_cur,
                          (unsigned long long)rl.rlim_max);
        else
            strbuf_printf(b, " rl%d=?", r);
    }
    char buf[4096];
    int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        strbuf_printf(b, " status=?%d", util_getpid()); /* (unreadable: never the same twice) */
        return;
    }
    buf[n] = 0;
    static const char *const keep[] = {"NoNewPrivs:", "Seccomp:", "Seccomp_filters:", "CapBnd:"};
    for (char *line = buf, *end; line && *line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        if (end)
            *end = 0;
        for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
            if (strncmp(line, keep[k], strlen(keep[k])) == 0)
                strbuf_printf(b, " %s", line);
    }
}

/* What a shell is made with: a plan may claim it only when its own key is
 * the same (namespaces, ids, cgroup parents, state directory, how init is
 * started, and what the host's thread hands down: inherited()). Everything
 * else of a plan is applied after the claim. */
static char *shell_key(const struct linux_plan *pl) {
    struct strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b, "clone=%llx root=%d uid=%s|gid=%s|cg=%d v2=%s group=%d limits=%d", (unsigned long long)pl->clone_flags,
                  pl->as_root, pl->uid_map, pl->gid_map, pl->cg.enabled, pl->cg.v2_parent ? pl->cg.v2_parent : "-",
                  pl->cg.v2_group, pl->cg.v2_limits);
    for (int c = 0; c < CG_NCTL; c++)
        strbuf_printf(&b, " v1=%s", pl->cg.v1_parent[c] ? pl->cg.v1_parent[c] : "-");
    strbuf_printf(&b, " state=%s netns=%d host-netns=%d", pl->np->state_dir ? pl->np->state_dir : "-", shell_netns(pl),
                  shell_host_netns(pl));
    inherited(&b);
    return strbuf_steal(&b);
}

static const char *shell_refusal(const struct linux_plan *pl) {
    if (pl->process_mode)
        return "the linux-process backend has no namespaces to make in advance";
    if (pl->overlay_disk)
        return "a container whose upper is on disk records that directory when its attempt starts, which a "
               "shell made before it could not";
    if (!pl->exec_init || pl->np->test_copy_init)
        return "the sandbox's init is a copy of the host here (forgeyard-init cannot be executed), and a copy "
               "made in advance would hold the host's memory of that moment";
    if (pl->cg.helper)
        return "the privileged helper makes the attempt's cgroups with its limits, at the start";
    return NULL;
}

static struct lx_shell *shell_new(void) {
    struct lx_shell *sh = calloc(1, sizeof(*sh));
    if (!sh)
        return NULL;
    sh->pid = -1;
    sh->pidfd = sh->sync = sh->state_fd = sh->netns = -1;
    sh->cg.v2_fd = -1;
    sh->reaper = (struct lx_reaper){-1, -1, -1, -1};
    return sh;
}

static void shell_free(struct lx_shell *sh) {
    pu_fork_close_fd(&sh->netns);
    lx_close_fd(&sh->pidfd);
    lx_close_fd(&sh->sync);
    lx_close_fd(&sh->state_fd);
    lx_close_fd(&sh->cg.v2_fd);
    lx_close_fd(&sh->reaper.rd);
    lx_close_fd(&sh->reaper.go);
    lx_close_fd(&sh->reaper.pidfd);
    free(sh->cg.name);
    free(sh->cg.v2_dir);
    for (int c = 0; c < CG_NCTL; c++)
        free(sh->cg.v1_dir[c]);
    free(sh->state_dir);
    free(sh->state_path);
    free(sh->key);
    free(sh);
}

/* Kills pid 1 (and so its pid namespace) and reaps it, bounded. */
static void kill_and_reap(struct lx_shell *sh) {
    if (sh->pid <= 0)
        return;
    if (sh->pidfd >= 0)
        (void)sys_pidfd_send_signal(sh->pidfd, SIGKILL, NULL, 0);
    if (sh->reaper.pid > 0) {
        struct rusage ru;
        (void)lx_reaper_finish(&sh->reaper, &ru); /* the middle reaps pid 1, then is reaped */
    } else if (sh->pidfd >= 0) {
        siginfo_t si;
        while (waitid(FY_P_PIDFD, (id_t)sh->pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
            ;
    }
    sh->pid = -1;
}

uint32_t lx_shell_discard(void *shell) {
    struct lx_shell *sh = shell;
    if (!sh)
        return 0;
    kill_and_reap(sh);
    /* Reaping a pid namespace's init means every process of it is gone;
     * the cgroup was only ever its own. */
    uint32_t left = (uint32_t)cg_remove_empty(&sh->cg);
    if (left == 0 && sh->state_path) {
        lx_close_fd(&sh->state_fd);
        if (unlink(sh->state_path) < 0 && errno != ENOENT)
            left++;
    }
    shell_free(sh);
    return left;
}

void linux_shell_forget(void *shell) {
    /* A forked copy of the host: its fds are copies; the shell is the
     * parent's, never signalled or removed from here. */
    struct lx_shell *sh = shell;
    if (sh) {
        sh->pid = sh->reaper.pid = -1;
        shell_free(sh);
    }
}

/* poll(2) of one descriptor, now: 1 ready (or hung up), 0 not, -1 error.
 * Never EINTR: poll is not restarted after a signal handler ran, whatever
 * SA_RESTART says, and a host's interval timer made every claimed shell
 * look gone (discarded; the attempt started cold). */
static int poll_now(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, 0)) < 0 && errno == EINTR)
        ;
    return r;
}

bool linux_shell_gone(void *shell) {
    struct lx_shell *sh = shell;
    if (sh->pidfd < 0 || poll_now(sh->pidfd) != 0)
        return true; /* ended (idle, killed) or cannot be watched */
    /* Its socket: a shell that said anything or hung up is not waiting. */
    return poll_now(sh->sync) != 0;
}

bool linux_shell_fits(const void *shell, const void *plan) {
    const struct lx_shell *sh = shell;
    const struct linux_plan *pl = plan;
    if (shell_refusal(pl))
        return false;
    char *key = shell_key(pl);
    bool same = key && strcmp(key, sh->key) == 0;
    free(key);
    return same;
}

int linux_shell_make(const void *plan, uint32_t idle_ms, void **ret, fy_error **reterr) {
    const struct linux_plan *pl = plan;
    const char *no = shell_refusal(pl);
    if (no)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SPAWN, 0, NULL, "pre-started shells: %s", no);
    struct lx_shell *sh = shell_new();
    int sync[2] = {-1, -1}, r = 0;
    if (!sh || !(sh->key = shell_key(pl)) || !(sh->cg.name = cg_new_name())) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        goto fail;
    }
    /* The record first, as for an attempt: a host that crashes from here
     * on leaves nothing fy_gc cannot find. */
    if ((r = lx_record_state(pl, sh->cg.name, NULL, &sh->state_dir, &sh->state_path, &sh->state_fd, reterr)) < 0 ||
        (r = cg_create(&pl->cg, &sh->cg, CG_PART_V2 | CG_PART_V2_BARE | CG_PART_V1 | CG_PART_V1_BARE, reterr)) < 0)
        goto fail;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0) {
        r = lx_sys_err(reterr, FY_STEP_SPAWN, "socketpair");
        goto fail;
    }
    struct fy_clone_args ca = {
        .flags = (pl->clone_flags & ~(uint64_t)LX_CHILD_UNSHARES) | CLONE_PIDFD | FY_CLONE_CLEAR_SIGHAND,
        .pidfd = (uint64_t)(uintptr_t)&sh->pidfd,
        .exit_signal = 0,
    };
    if (sh->cg.v2_fd >= 0) {
        ca.flags |= FY_CLONE_INTO_CGROUP;
        ca.cgroup = (uint64_t)sh->cg.v2_fd;
    }
    bool via_clone3 = true;
    int back = -1;
    if (shell_host_netns(pl) && ((sh->netns = lxn_new_attempt_netns()) < 0 || (r = lxn_enter(sh->netns, &back)) < 0)) {
        int e = sh->netns < 0 ? -sh->netns : -r;
        r = err_set(reterr, err_from_errno(e), FY_STEP_NETNS, e, NULL,
                    "pre-started shells: the network namespace of a restricted plan's shell: %s", strerror(e));
        goto fail;
    }
    /* The shell ends with this process, however many forks of it keep
     * their copy of sync[1] (-1 where pidfd_open is missing: then only
     * when the last copy is closed). */
    int owner_pidfd = lx_owner_pidfd();
    int cr = lx_clone_exec_shell(&ca, sync[0], owner_pidfd, idle_ms, shell_netns(pl), pl->userns_owner, &sh->reaper,
                                 &sh->pidfd, &sh->pid, &via_clone3);
    int ce = errno;
    if (owner_pidfd >= 0)
        close(owner_pidfd);
    if (back >= 0)
        lxn_leave(back);
    if (cr < 0) {
        errno = ce;
        r = lx_sys_err(reterr, FY_STEP_USERNS, "starting a pre-started shell");
        goto fail;
    }
    lx_close_fd(&sync[0]);
    sh->sync = sync[1];
    sync[1] = -1;
    if ((r = lx_map_ids(pl, sh->pid, reterr)) < 0 ||
        (sh->cg.v2_dir && !via_clone3 && (r = lx_write_proc_cgroup(sh->cg.v2_dir, sh->pid, reterr)) < 0) ||
        (r = state_record_sandbox(sh->state_fd, sh->pid, reterr)) < 0)
        goto fail;
    /* The go-ahead carries the tasks files of its v1 cgroups (made bare,
     * limited at the claim before anything of the attempt runs): it joins
     * them now, and the workload process it forks after its claim is born
     * in them, so that the claim migrates nothing (cg_open_tasks). */
    int tasks[LX_GO_MAX_FDS];
    size_t ntasks = 0;
    if ((r = cg_open_tasks(&pl->cg, &sh->cg, tasks, LX_GO_MAX_FDS, &ntasks, reterr)) < 0)
        goto fail;
    int sent = lx_send_fds(sh->sync, 'g', tasks, ntasks);
    for (size_t i = 0; i < ntasks; i++)
        close(tasks[i]);
    if (sent < 0) {
        r = lx_sys_err(reterr, FY_STEP_SPAWN, "the pre-started shell's go-ahead");
        goto fail;
    }
    /* It says when it is ready (its network namespace made): a shell
     * that failed on the way is never handed out. Bounded. */
    struct pollfd p = {.fd = sh->sync, .events = POLLIN};
    char byte = 0;
    int pr;
    while ((pr = poll(&p, 1, 10000)) < 0 && errno == EINTR)
        ;
    if (pr != 1 || recv(sh->sync, &byte, 1, MSG_DONTWAIT) != 1 || byte != 'R') {
        r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, pr == 0 ? ETIMEDOUT : EPIPE, NULL,
                    "the pre-started shell %s before it was ready", pr == 0 ? "did not answer" : "ended");
        goto fail;
    }
    *ret = sh;
    return 0;
fail:
    lx_close_fd(&sync[0]);
    lx_close_fd(&sync[1]);
    if (sh) {
        /* Nothing of an attempt was ever in it: discarding is all. */
        uint32_t left = lx_shell_discard(sh);
        (void)left; /* the record stays for fy_gc when something could not go */
    }
    return r;
}

void lx_shell_adopt(struct lx_shell *sh, struct lx *x) {
    x->pid = sh->pid;
    x->pidfd = sh->pidfd;
    x->reaper = sh->reaper;
    x->sync_wr = sh->sync;
    x->cg = sh->cg;
    x->state_dir = sh->state_dir;
    x->state_path = sh->state_path;
    x->state_fd = sh->state_fd;
    x->net.sandbox_fd = sh->netns; /* (lxn_begin_async keeps it as the sandbox's) */
    free(sh->key);
    free(sh);
}
