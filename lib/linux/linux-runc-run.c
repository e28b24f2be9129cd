/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OCI runtime adapter's run operations (linux-runc.c has the design):
 * the bundle, the middle process that mounts the overlay in a private
 * mount namespace and runs the runtime, supervision (output, limits,
 * deadline, cancel), the witnessed cleanup, and fy_gc's collection of the
 * bundles of hosts that died. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <jansson.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-plan.h"
#include "linux-probe-util.h"
#include "linux-runc.h"
#include "linux-spawn.h"
#include "linux-state.h"
#include "linux-syscall.h"

/* ------------------------------------------------------------------ */
/* start                                                              */
/* ------------------------------------------------------------------ */

#define RX_RUN_DIR "/run/forgeyard-runtime"
#define RX_DELETE_MS 10000

/* The attempt: the Linux backend's struct lx first (its stdio helpers and
 * output draining work on it), then what the adapter adds. */
struct rx {
    struct lx x;
    char *bundle;            /* RX_RUN_DIR/<id> */
    char *id;                /* the container id = the attempt's cgroup name */
    int err_rd;              /* the middle's setup failure: struct rx_err */
    bool err_seen, killed_tree;
    uint32_t err_step;
    int err_errno;
    char *runtime_msg;       /* runc's own error, from its log */
    const char **targets;    /* the layout's mount targets, checked in the image's root (middle_args) */
    uint32_t *tmpfs_modes;   /* ... a tmpfs target's mode, else 0 */
    uint32_t err_target;     /* the one refused there (index + 1), or 0 */
    uint64_t t_started;
    uint64_t *end_at;        /* a page shared with the middle: when the runtime ended (CLOCK_MONOTONIC, usec), or NULL */
};

struct rx_err {
    uint32_t step;
    int32_t err;
    uint32_t target; /* index + 1 into the mount targets, or 0 */
};

static void rx_close(int *fd) { lx_close_fd(fd); }
static size_t attempt_dirs(const struct rx *r, char **out, size_t max);

static int write_file(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -errno;
    int w = util_write_all(fd, text, strlen(text));
    if (w < 0) {
        close(fd);
        return w;
    }
    if (fchmod(fd, mode) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    close(fd);
    return 0;
}

/* Everything the middle process needs, computed before the fork. */
struct middle_args {
    int task_fds[LX_GO_MAX_FDS + 1];
    size_t ntask;
    int lower_fds[LX_MAX_LAYERS];
    size_t nlower;
    char *const *lowers;     /* the layers, top first, NULL-terminated */
    char overlay_tail[4096 - 64 * 1]; /* ",upperdir=...,workdir=...,userxattr" */
    const char *scratch, *upper, *work, *rootfs;
    const char *upper_opts;
    char overlay_opts[4096];
    uint32_t root_uid, root_gid;
    const char *const *argv;
    char *const *envp;
    int stdio[3];
    int err_wr;
    uint64_t *end_at; /* written once the runtime has ended, before the middle ends like it */
    /* What the middle needs to end the attempt when its host dies. */
    pid_t host;
    const char *procs[2 * (CG_NCTL + 1)]; /* cgroup.procs of the attempt's cgroups and the container's */
    size_t nprocs;
    const char *freeze;                   /* the container's v1 freezer.state, or NULL */
    const char *v2kill;                   /* the container's v2 cgroup.kill, or NULL */
    const char *const *delete_argv;       /* `runtime --root STATE delete --force ID` */
    const char *const *targets;           /* the layout's mount targets (NULL-terminated) */
    const uint32_t *tmpfs_modes;          /* per target: a tmpfs's mode, or 0 */
};

/* The signal the middle gets when the host's thread that forked it ends
 * (PR_SET_PDEATHSIG); getppid() then says whether the host itself died. */
#define RX_PDEATH_SIG SIGUSR1

static void mid_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    (void)syscall(SYS_nanosleep, &ts, NULL);
}

static void mid_write(const char *path, const char *text, size_t len) {
    if (!path)
        return;
    int fd = (int)syscall(SYS_open, path, O_WRONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        (void)syscall(SYS_write, fd, text, len);
        syscall(SYS_close, fd);
    }
}

/* SIGKILL to every process listed in a cgroup.procs but the middle
 * itself; how many were listed. */
static int mid_kill_listed(const char *path, pid_t self) {
    int fd = (int)syscall(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    static char buf[1 << 16];
    ssize_t n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
    int killed = 0;
    long pid = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] >= '0' && buf[i] <= '9') {
            pid = pid * 10 + (buf[i] - '0');
            continue;
        }
        if (pid > 0 && pid != self) {
            (void)syscall(SYS_kill, (pid_t)pid, SIGKILL);
            killed++;
        }
        pid = 0;
    }
    return killed;
}

/* The host died (a crash, SIGKILL): no one else will end the attempt
 * before its deadline. Everything of it but the middle is killed (the
 * container's cgroup frozen meanwhile where a v1 freezer holds it: the
 * middle is in the attempt's, so it never freezes that one), then the
 * runtime deletes the container, bounded. The bundle and the cgroups stay
 * for fy_gc, as a crashed host's record and cgroups do. */
__attribute__((noreturn)) static void middle_host_gone(const struct middle_args *m, pid_t self) {
    for (int round = 0; round < 100; round++) {
        mid_write(m->freeze, "FROZEN", 6);
        mid_write(m->v2kill, "1", 1);
        int listed = 0;
        for (size_t i = 0; i < m->nprocs; i++)
            listed += mid_kill_listed(m->procs[i], self);
        mid_write(m->freeze, "THAWED", 6);
        int st;
        while (syscall(SYS_wait4, -1, &st, WNOHANG | __WALL, NULL) > 0)
            ;
        if (!listed)
            break;
        mid_sleep_ms(20);
    }
    pid_t pid = sys_fork();
    if (pid == 0) {
        int null = (int)syscall(SYS_open, "/dev/null", O_RDWR | O_CLOEXEC, 0);
        for (int i = 0; i < 3 && null >= 0; i++)
            (void)syscall(SYS_dup2, null, i);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
        syscall(SYS_execve, m->delete_argv[0], (char *const *)m->delete_argv, envp);
        syscall(SYS_exit_group, 127);
    }
    if (pid > 0) {
        int st, i = 0;
        for (; i < RX_DELETE_MS / 50 && syscall(SYS_wait4, pid, &st, WNOHANG | __WALL, NULL) == 0; i++)
            mid_sleep_ms(50);
        if (i == RX_DELETE_MS / 50) {
            (void)syscall(SYS_kill, pid, SIGKILL);
            (void)syscall(SYS_wait4, pid, &st, __WALL, NULL);
        }
    }
    for (size_t i = 0; i < m->nprocs; i++)
        (void)mid_kill_listed(m->procs[i], self);
    syscall(SYS_exit_group, 137);
    __builtin_unreachable();
}

__attribute__((noreturn)) static void middle_fail_at(const struct middle_args *m, uint32_t step, uint32_t target) {
    struct rx_err e = {step, errno, target};
    (void)syscall(SYS_write, m->err_wr, &e, sizeof e);
    syscall(SYS_exit_group, 125);
    __builtin_unreachable();
}

__attribute__((noreturn)) static void middle_fail(const struct middle_args *m, uint32_t step) {
    middle_fail_at(m, step, 0);
}

/* The image's root as the runtime will see it: every mount target of the
 * layout, or what of its path exists, is reached through directories of
 * the root alone, no symbolic link (the native backend resolves them in
 * the root and refuses what leads out). runc 1.1 made its /dev links
 * through an image whose /dev was a link to a host path, as the
 * container's root, on the host: into a host directory, another image's
 * cached layer, the host's output directory. */
static void middle_check_root(const struct middle_args *m) {
    int root = (int)syscall(SYS_open, m->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    if (root < 0)
        middle_fail(m, FY_STEP_MOUNT);
    for (uint32_t i = 0; m->targets && m->targets[i]; i++) {
        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                                          RESOLVE_NO_XDEV};
        int fd = sys_openat2(root, m->targets[i] + 1, &how, sizeof how);
        if (fd >= 0 && m->tmpfs_modes[i]) {
            /* runc 1.1 gives a tmpfs the mode of the directory it covers,
             * whatever its mode= says: the image's (a 0755 /tmp the
             * workload could not write, a 0777 home). The directory takes
             * the plan's mode first, in the attempt's upper. */
            char path[32] = "/proc/self/fd/";
            char digits[12];
            int nd = 0, at = 14;
            for (unsigned v = (unsigned)fd; nd == 0 || v; v /= 10)
                digits[nd++] = (char)('0' + v % 10);
            while (nd)
                path[at++] = digits[--nd];
            path[at] = '\0';
            if (syscall(SYS_chmod, path, m->tmpfs_modes[i]) < 0)
                middle_fail_at(m, FY_STEP_MOUNT, i + 1);
        }
        if (fd >= 0)
            syscall(SYS_close, fd);
        else if (errno != ENOENT) /* (missing: the runtime makes it, below no link) */
            middle_fail_at(m, FY_STEP_MOUNT, i + 1);
    }
    syscall(SYS_close, root);
}

/* The middle process (raw system calls only: the host may be threaded):
 * joins the attempt's cgroups, makes a private mount namespace with the
 * overlay root, runs the runtime as its child and ends the way it ended. */
__attribute__((noreturn)) static void middle_main(struct middle_args *m) {
    /* Tied to the host: a host that dies (SIGKILL included) ends the
     * attempt, as the other backends' pid 1 does. A host already gone
     * before this runs nothing. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, RX_PDEATH_SIG, 0, 0, 0) < 0 || syscall(SYS_getppid) != m->host)
        syscall(SYS_exit_group, 125);
    for (int sig = 1; sig < 65; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(sig, &sa, NULL);
    }
    /* runc and the container inherit this process's session keyring, and
     * runc runs with --no-new-keyring: a fresh, empty one of the attempt's
     * own (root's, from root's key quota), never the host program's, whose
     * keys the container would hold by possession with no seccomp filter
     * to stop keyctl(2). (runc's own new keyring is named and charged to
     * the container's uid, which every root caller's container shares: a
     * container that filled that quota would stop every other start.) */
    int kr = sys_own_session_keyring();
    if (kr < 0) {
        errno = -kr;
        middle_fail(m, FY_STEP_RUNTIME);
    }
    /* What runc and the container would inherit from the host's process
     * (a real-time policy: the v1 cpu cgroup below refused the task). */
    int reset = lx_reset_inherited();
    if (reset < 0) {
        errno = -reset;
        middle_fail(m, FY_STEP_SPAWN);
    }
    for (size_t i = 0; i < m->ntask; i++)
        if (syscall(SYS_write, m->task_fds[i], "0", 1) < 0)
            middle_fail(m, FY_STEP_CGROUP);
    if (syscall(SYS_unshare, CLONE_NEWNS) < 0 || syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        middle_fail(m, FY_STEP_MOUNT);
    if (syscall(SYS_mount, "tmpfs", m->scratch, "tmpfs", MS_NOSUID | MS_NODEV, m->upper_opts) < 0 ||
        syscall(SYS_mkdir, m->upper, 0755) < 0 || syscall(SYS_chown, m->upper, m->root_uid, m->root_gid) < 0 ||
        syscall(SYS_mkdir, m->work, 0700) < 0)
        middle_fail(m, FY_STEP_MOUNT);
    /* The layers are opened here, in the new namespace (overlayfs clones
     * only mounts of the caller's own), and named by fd: the option text
     * must fit a page. */
    char *o = m->overlay_opts, *end = m->overlay_opts + sizeof(m->overlay_opts);
    static const char head[] = "lowerdir=", pfx[] = "/proc/self/fd/";
    memcpy(o, head, sizeof(head) - 1);
    o += sizeof(head) - 1;
    size_t nl = 0;
    for (; nl < LX_MAX_LAYERS && m->lowers[nl]; nl++) {
        int fd = (int)syscall(SYS_open, m->lowers[nl], O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
            middle_fail(m, FY_STEP_MOUNT);
        if (end - o < 32)
            break;
        if (nl)
            *o++ = ':';
        memcpy(o, pfx, sizeof(pfx) - 1);
        o += sizeof(pfx) - 1;
        char digits[12];
        int nd = 0;
        for (unsigned v = (unsigned)fd; nd == 0 || v; v /= 10)
            digits[nd++] = (char)('0' + v % 10);
        while (nd)
            *o++ = digits[--nd];
    }
    size_t tl = 0;
    while (m->overlay_tail[tl])
        tl++;
    if (m->lowers[nl] || (size_t)(end - o) <= tl) {
        errno = E2BIG;
        middle_fail(m, FY_STEP_MOUNT);
    }
    memcpy(o, m->overlay_tail, tl + 1);
    if (syscall(SYS_mount, "overlay", m->rootfs, "overlay", MS_NOSUID | MS_NODEV, m->overlay_opts) < 0)
        middle_fail(m, FY_STEP_MOUNT);
    middle_check_root(m);
    pid_t self = (pid_t)syscall(SYS_getpid);
    pid_t pid = sys_fork();
    if (pid < 0)
        middle_fail(m, FY_STEP_SPAWN);
    if (pid == 0) {
        /* The runtime: dies with the middle (SIGKILLed at a hard kill). */
        if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || syscall(SYS_getppid) != self)
            syscall(SYS_exit_group, 127);
        for (int i = 0; i < 3; i++)
            if (syscall(SYS_dup2, m->stdio[i], i) < 0)
                middle_fail(m, FY_STEP_OUTPUT);
        if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
            for (int fd = 3; fd < 1024; fd++)
                if (fd != m->err_wr)
                    (void)syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        syscall(SYS_execve, m->argv[0], m->argv, m->envp);
        middle_fail(m, FY_STEP_RUNTIME);
    }
    /* Nothing of ours stays open (the host sees EOF on the output as soon
     * as the runtime is done with it); then the runtime's end, or the
     * host's death (the parent-death signal, and a poll of getppid() each
     * second: the signal comes when the forking thread ends, which may
     * not be the host's end). Every signal is still blocked here. */
    if (syscall(SYS_close_range, 0U, ~0U, 0U) < 0)
        for (int fd = 0; fd < 1024; fd++)
            (void)syscall(SYS_close, fd);
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, SIGCHLD);
    sigaddset(&wake, RX_PDEATH_SIG);
    for (;;) {
        int st = 0;
        long w = syscall(SYS_wait4, pid, &st, WNOHANG | __WALL, NULL);
        if (w == pid) {
            /* When it ended, for the host that reaps us late: its end, not
             * the host's lateness, is what a wall-clock limit judges. */
            struct timespec ts;
            if (m->end_at && syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) == 0)
                __atomic_store_n(m->end_at, (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u,
                                 __ATOMIC_RELEASE);
            pu_end_like(st, self);
        }
        if (w < 0 && errno != EINTR)
            syscall(SYS_exit_group, 126);
        if (syscall(SYS_getppid) != m->host)
            middle_host_gone(m, self);
        struct timespec second = {1, 0};
        (void)syscall(SYS_rt_sigtimedwait, &wake, NULL, &second, 8);
    }
}

static struct rx *rx_new(void) {
    struct rx *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    struct lx *x = &r->x;
    x->pidfd = x->epfd = x->timerfd = x->sync_wr = x->status_rd = x->state_fd = -1;
    x->cg.v2_fd = -1;
    x->notify_sock = x->notify_fd = -1;
    x->reaper = (struct lx_reaper){-1, -1, -1, -1};
    lxn_run_init(&x->net);
    for (int i = 0; i < 3; i++)
        x->child_stdio[i] = x->host_pipe[i] = x->drain_rd[i] = x->spool_fd[i] = -1;
    x->stdin_own = x->stdin_host = -1;
    r->err_rd = -1;
    return r;
}

/* A workspace path must not be reached through a symbolic link: checked
 * here (openat2 RESOLVE_NO_SYMLINKS), as the runtime resolves it again. */
static int check_no_symlinks(const char *path, fy_error **reterr) {
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
    int fd = sys_openat2(AT_FDCWD, path, &how, sizeof how);
    if (fd < 0) {
        int e = errno;
        return err_set(reterr, err_from_errno(e), FY_STEP_MOUNT, e, path, "workspace path %s: %s%s", path,
                       strerror(e), e == ELOOP ? " (a symbolic link in a workspace path is refused)" : "");
    }
    close(fd);
    return 0;
}

/* A working directory inside a host-backed mount must be there already:
 * runc makes a missing one, in the host's directory, owned by the
 * container's root (an image's WorkingDir below /work/build left
 * directories the workload could not write and later attempts inherited);
 * the native backend fails such an attempt, and so does this one. */
static int check_workdir_in_host(const struct fy_plan *np, fy_error **reterr) {
    const char *wd = np->workdir;
    for (size_t i = 0; wd && i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        size_t n = e->target ? strlen(e->target) : 0;
        if (e->kind != PE_HOST || !(e->flags & PLAN_WORKSPACE) || !n || strncmp(wd, e->target, n) != 0 ||
            (wd[n] != '/' && wd[n] != '\0'))
            continue;
        const char *rest = wd[n] ? wd + n + 1 : ".";
        int dir = open(e->host, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        int fd = dir >= 0 ? sys_openat2(dir, rest[0] ? rest : ".", &how, sizeof how) : -1;
        int err = errno;
        if (dir >= 0)
            close(dir);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        return err_set(reterr, err_from_errno(err), FY_STEP_EXEC, err, NULL,
                       "the working directory %s: %s (inside %s, the host's directory: the runtime would make "
                       "it there)",
                       wd, strerror(err), e->target);
    }
    return 0;
}

static int start_inner(fy_handle *h, fy_error **reterr) {
    const struct linux_plan *pl = h->pr->plan;
    const struct runc_plan *rp = pl->ext;
    const struct fy_plan *np = pl->np;
    struct rx *r = rx_new();
    if (!r)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
    h->b = r;
    struct lx *x = &r->x;
    struct middle_args m;
    memset(&m, 0, sizeof m);
    m.err_wr = -1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(m.task_fds); i++)
        m.task_fds[i] = -1;
    int rc = 0;
    char *paths[7 + 2 * (CG_NCTL + 1)] = {0};
    char *mid_paths[3] = {0};
    const char *delete_argv[] = {NULL, "--root", NULL, "delete", "--force", NULL, NULL};
    for (size_t i = 0; i < np->nentries; i++)
        if (np->entries[i].kind == PE_HOST && (np->entries[i].flags & PLAN_WORKSPACE) &&
            (rc = check_no_symlinks(np->entries[i].host, reterr)) < 0)
            return rc;
    if ((rc = check_workdir_in_host(np, reterr)) < 0)
        return rc;

    /* The bundle. */
    if (mkdir(RX_RUN_DIR, 0711) < 0 && errno != EEXIST)
        return lx_sys_err(reterr, FY_STEP_RUNTIME, RX_RUN_DIR);
    if (!(x->cg.name = cg_new_name()) || !(r->id = util_strdup(x->cg.name)) ||
        !(r->bundle = util_asprintf(RX_RUN_DIR "/%s", r->id)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
    if (mkdir(r->bundle, 0711) < 0)
        return lx_sys_err(reterr, FY_STEP_RUNTIME, r->bundle);
    paths[0] = util_asprintf("%s/files", r->bundle);
    paths[1] = util_asprintf("%s/rootfs", r->bundle);
    paths[2] = util_asprintf("%s/scratch", r->bundle);
    paths[3] = util_asprintf("%s/scratch/upper", r->bundle);
    paths[4] = util_asprintf("%s/scratch/work", r->bundle);
    paths[5] = util_asprintf("%s/state", r->bundle);
    paths[6] = util_asprintf("%s/config.json", r->bundle);
    for (size_t i = 0; i < 7; i++)
        if (!paths[i]) {
            rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
            goto out;
        }
    if (mkdir(paths[0], 0711) < 0 || mkdir(paths[1], 0755) < 0 || mkdir(paths[2], 0700) < 0 ||
        mkdir(paths[5], 0700) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "making the bundle");
        goto out;
    }
    for (size_t i = 0; i < rp->nfiles; i++) {
        char f[4200];
        snprintf(f, sizeof(f), "%s/%zu", paths[0], i);
        int e = write_file(f, rp->files[i], 0644);
        if (e < 0) {
            errno = -e;
            rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "writing the bundle's files");
            goto out;
        }
    }
    {
        /* The container's cgroup, relative: under the attempt's own cgroups
         * (runc runs in them), beside ours elsewhere. */
        const char *at = strstr(rp->config, "\"@CGROUP@\"");
        char *cfg = at ? util_asprintf("%.*s\"%s\"%s", (int)(at - rp->config), rp->config, r->id, at + 10) : NULL;
        int e = cfg ? write_file(paths[6], cfg, 0600) : -ENOMEM;
        free(cfg);
        if (e < 0) {
            errno = -e;
            rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "writing config.json");
            goto out;
        }
    }

    /* The attempt's cgroups, with the limits; the middle joins them. */
    if (pl->cg.enabled) {
        if ((rc = cg_create(&pl->cg, &x->cg, CG_PART_V2 | CG_PART_V1, reterr)) < 0)
            goto out;
        size_t n = 0;
        if ((rc = cg_open_tasks(&pl->cg, &x->cg, m.task_fds, LX_GO_MAX_FDS, &n, reterr)) < 0)
            goto out;
        m.ntask = n;
        if (x->cg.v2_dir) {
            char p[4200];
            snprintf(p, sizeof(p), "%s/cgroup.procs", x->cg.v2_dir);
            if ((m.task_fds[m.ntask] = open(p, O_WRONLY | O_CLOEXEC)) < 0) {
                rc = lx_sys_err(reterr, FY_STEP_CGROUP, p);
                goto out;
            }
            m.ntask++;
        }
    }

    /* What a crash of this host would leave: the attempt's cgroups, in the
     * bundle (runc_gc reads them; runc's own are in its state). */
    {
        struct strbuf cgs;
        strbuf_init(&cgs);
        if (x->cg.v2_dir)
            strbuf_printf(&cgs, "%s\n", x->cg.v2_dir);
        for (int c = 0; c < CG_NCTL; c++)
            if (x->cg.v1_dir[c])
                strbuf_printf(&cgs, "%s\n", x->cg.v1_dir[c]);
        char f[4200];
        snprintf(f, sizeof(f), "%s/cgroups", r->bundle);
        int e = cgs.oom ? -ENOMEM : write_file(f, cgs.buf ? cgs.buf : "", 0600);
        strbuf_free(&cgs);
        if (e < 0) {
            errno = -e;
            rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "recording the attempt's cgroups");
            goto out;
        }
    }

    /* The overlay (the middle opens the layers). */
    m.lowers = pl->overlay_lowers;
    if ((size_t)snprintf(m.overlay_tail, sizeof(m.overlay_tail), ",upperdir=%s,workdir=%s,userxattr", paths[3],
                         paths[4]) >= sizeof(m.overlay_tail)) {
        rc = err_set(reterr, FY_E_RANGE, FY_STEP_MOUNT, 0, NULL, "the overlay's options do not fit a page");
        goto out;
    }
    m.scratch = paths[2];
    m.upper = paths[3];
    m.work = paths[4];
    m.rootfs = paths[1];
    m.upper_opts = rp->upper_opts;
    m.root_uid = np->id_first;
    m.root_gid = np->id_first;
    if (!(r->targets = calloc(np->nentries + 1, sizeof(char *)))) {
        rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
        goto out;
    }
    if (!(r->tmpfs_modes = calloc(np->nentries + 1, sizeof(uint32_t)))) {
        rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0, n = 0; i < np->nentries; i++)
        if (np->entries[i].target && np->entries[i].target[0] == '/' && np->entries[i].target[1]) {
            r->tmpfs_modes[n] = np->entries[i].kind == PE_TMPFS ? (np->entries[i].mode & 07777) : 0;
            r->targets[n++] = np->entries[i].target;
        }
    m.targets = r->targets;
    m.tmpfs_modes = r->tmpfs_modes;

    /* What the middle kills if the host dies. */
    m.host = getpid();
    {
        char *dirs[2 * (CG_NCTL + 1)];
        size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
        for (size_t i = 0; i < n; i++) {
            if (dirs[i] && m.nprocs < FY_ARRAY_SIZE(m.procs) &&
                (paths[7 + m.nprocs] = util_asprintf("%s/cgroup.procs", dirs[i])))
                m.procs[m.nprocs] = paths[7 + m.nprocs], m.nprocs++;
            free(dirs[i]);
        }
        if (x->cg.v1_dir[CG_FREEZER])
            m.freeze = mid_paths[0] = util_asprintf("%s/%s/freezer.state", x->cg.v1_dir[CG_FREEZER], r->id);
        if (x->cg.v2_dir)
            m.v2kill = mid_paths[1] = util_asprintf("%s/%s/cgroup.kill", x->cg.v2_dir, r->id);
        mid_paths[2] = util_asprintf("%s/state", r->bundle);
        delete_argv[0] = rp->path;
        delete_argv[2] = mid_paths[2];
        delete_argv[5] = r->id;
        m.delete_argv = delete_argv;
        if (!mid_paths[2]) {
            rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
            goto out;
        }
    }

    /* Streams, the event loop's fds. */
    if ((x->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (x->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0 ||
        lx_epoll_watch(x, x->timerfd) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "epoll");
        goto out;
    }
    x->output_cap = np->limit[FY_LIMIT_OUTPUT];
    if ((rc = lx_setup_stdio(x, np, -1, reterr)) < 0)
        goto out;
    for (int i = 0; i < 3; i++)
        m.stdio[i] = x->child_stdio[i];
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "pipe");
        goto out;
    }
    r->err_rd = ep[0];
    m.err_wr = ep[1];

    /* --keep: the container stays (stopped) when its command ends, with
     * its cgroups, until runtime_delete. The kernel counts a refused fork
     * (pids.events, v1) and an OOM kill (memory.oom_control, v1) in the
     * container's cgroup below the attempt's, not in the attempt's; without
     * --keep runc removes that cgroup, with the counts, before we are told
     * the command ended, and a command that hit the limit and exited at
     * once read as an ordinary failure. rx_finish reads them first. */
    char *log = util_asprintf("%s/runtime.log", r->bundle);
    const char *argv[] = {rp->path, "--root", paths[5], "--log", log, "--log-format", "json", "run", "--keep",
                          "--bundle", r->bundle, "--no-new-keyring", r->id, NULL};
    char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    m.argv = argv;
    m.envp = envp;
    if (!log) {
        rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
        goto out;
    }
    /* (without the page, a host that reaps late judges by its reap) */
    void *page = mmap(NULL, sizeof(*r->end_at), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    r->end_at = m.end_at = page == MAP_FAILED ? NULL : page;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r->t_started = x->t_go = util_now_usec();
    pid_t pid = sys_fork_quiet_pidfd(&x->pidfd);
    if (pid == 0)
        middle_main(&m);
    int fe = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(log);
    if (pid < 0) {
        errno = fe;
        rc = lx_sys_err(reterr, FY_STEP_SPAWN, "fork");
        goto out;
    }
    x->pid = pid;
    if (x->pidfd < 0 && (x->pidfd = sys_pidfd_open(pid, 0)) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_SPAWN, "pidfd_open");
        kill(pid, SIGKILL);
        goto out;
    }
    if (lx_epoll_watch(x, x->pidfd) < 0 || lx_set_nonblock(r->err_rd) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "epoll");
        goto out;
    }
out:
    for (size_t i = 0; i < m.ntask; i++)
        close(m.task_fds[i]);
    for (size_t i = 0; i < m.nlower; i++)
        close(m.lower_fds[i]);
    rx_close(&m.err_wr);
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->child_stdio[i]);
    for (size_t i = 0; i < FY_ARRAY_SIZE(paths); i++)
        free(paths[i]);
    for (size_t i = 0; i < FY_ARRAY_SIZE(mid_paths); i++)
        free(mid_paths[i]);
    if (rc < 0)
        return rc;
    lx_arm_timer(h, x);
    return 0;
}

/* ------------------------------------------------------------------ */
/* ending                                                             */
/* ------------------------------------------------------------------ */

/* Each cgroup directory of the attempt, and the container's one below it. */
static size_t attempt_dirs(const struct rx *r, char **out, size_t max) {
    const struct lx *x = &r->x;
    size_t n = 0;
    const char *dirs[CG_NCTL + 1];
    size_t nd = 0;
    if (x->cg.v2_dir)
        dirs[nd++] = x->cg.v2_dir;
    for (int c = 0; c < CG_NCTL; c++)
        if (x->cg.v1_dir[c])
            dirs[nd++] = x->cg.v1_dir[c];
    for (size_t i = 0; i < nd && n + 2 <= max; i++) {
        out[n++] = util_strdup(dirs[i]);
        out[n++] = util_asprintf("%s/%s", dirs[i], r->id);
    }
    return n;
}

static void signal_listed(const char *dir, int sig) {
    char p[4200], buf[16384];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    for (char *s = buf; *s;) {
        pid_t pid = (pid_t)strtol(s, &s, 10);
        if (pid > 0)
            kill(pid, sig);
        while (*s == '\n')
            s++;
    }
}

/* Every process of the attempt (the runtime, the container's tree):
 * frozen, killed, thawed. */
static void rx_kill_tree(struct rx *r) {
    struct lx *x = &r->x;
    char *dirs[2 * (CG_NCTL + 1)];
    size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
    const char *fz = x->cg.v1_dir[CG_FREEZER];
    char p[4200];
    if (fz) {
        snprintf(p, sizeof(p), "%s/freezer.state", fz);
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "FROZEN", 6);
            close(fd);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (dirs[i])
            signal_listed(dirs[i], SIGKILL);
    if (fz) {
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "THAWED", 6);
            close(fd);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    if (x->pidfd >= 0 && !x->reaped)
        sys_pidfd_send_signal(x->pidfd, SIGKILL, NULL, 0);
    r->killed_tree = true;
    x->kill = KS_HARD;
}

void lxr_terminate(fy_handle *h) {
    struct rx *r = h->b;
    struct lx *x = &r->x;
    if (x->kill != KS_NONE || x->reaped)
        return;
    if (!h->cancel_started)
        h->cancel_started = util_now_usec();
    uint64_t grace = x->reaped ? 0 : ((const struct linux_plan *)h->pr->plan)->np->limit[FY_LIMIT_GRACE];
    if (grace == 0) {
        rx_kill_tree(r);
    } else {
        /* Soft: SIGTERM to every process of the container (the runtime's
         * `kill --all`); a pid 1 without a handler ignores it, the grace
         * then ends in the hard kill. */
        char *dirs[2 * (CG_NCTL + 1)];
        size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
        for (size_t i = 1; i < n; i += 2)
            if (dirs[i])
                signal_listed(dirs[i], SIGTERM);
        for (size_t i = 0; i < n; i++)
            free(dirs[i]);
        x->kill = KS_SOFT;
        x->grace_deadline = util_now_usec() + grace;
    }
    lx_arm_timer(h, x);
}

/* runc's own error (its --log, JSON lines): the last message at level
 * error, or NULL. */
static char *runtime_error(const char *bundle) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/runtime.log", bundle);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *text = util_read_fd(fd, 1 << 20);
    close(fd);
    char *msg = NULL;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        json_t *j = json_loads(line, 0, NULL);
        const char *lvl = j ? json_string_value(json_object_get(j, "level")) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "msg")) : NULL;
        /* Only the runtime's own end ("runc run failed: ..."): a message
         * after the command ran (a cgroup it could not remove, which the
         * cleanup below witnesses) is not the command's failure. */
        if (lvl && m && (strcmp(lvl, "error") == 0 || strcmp(lvl, "fatal") == 0) && strstr(m, " run failed")) {
            free(msg);
            msg = util_strdup(m);
        }
        json_decref(j);
        line = end ? end + 1 : NULL;
    }
    free(text);
    return msg;
}

/* Cgroup directories named id that runc made beside ours (hierarchies the
 * library does not use: its own cgroup there, then id), removed when
 * empty; how many are left. */
static int runtime_cgroups_left(const char *id) {
    FILE *mi = fopen("/proc/self/mountinfo", "re");
    FILE *cg = fopen("/proc/self/cgroup", "re");
    int left = 0;
    char own[64][512];
    char ctl[64][256];
    size_t nown = 0;
    char line[4096];
    while (cg && nown < 64 && fgets(line, sizeof(line), cg)) {
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!a || !b)
            continue;
        *b = '\0';
        snprintf(ctl[nown], sizeof(ctl[nown]), "%s", a + 1);
        snprintf(own[nown], sizeof(own[nown]), "%.*s", (int)strcspn(b + 1, "\n"), b + 1);
        nown++;
    }
    while (mi && fgets(line, sizeof(line), mi)) {
        char *sep = strstr(line, " - ");
        char mnt[4096], fstype[32], opts[1024] = "";
        if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
            sscanf(sep + 3, "%31s %*s %1023s", fstype, opts) < 1)
            continue;
        bool v2 = strcmp(fstype, "cgroup2") == 0;
        if (!v2 && strcmp(fstype, "cgroup") != 0)
            continue;
        for (size_t i = 0; i < nown; i++) {
            bool match = v2 ? ctl[i][0] == '\0' : false;
            if (!v2 && ctl[i][0]) {
                /* every controller of the line among the mount's options */
                match = true;
                char c[256];
                snprintf(c, sizeof(c), "%s", ctl[i]);
                for (char *t = strtok(c, ","); t && match; t = strtok(NULL, ",")) {
                    char *hit = strstr(opts, t);
                    size_t tl = strlen(t);
                    match = hit && (hit == opts || hit[-1] == ',') && (hit[tl] == ',' || hit[tl] == '\0');
                }
            }
            if (!match)
                continue;
            char p[4700];
            snprintf(p, sizeof(p), "%s%s/%s", mnt, strcmp(own[i], "/") == 0 ? "" : own[i], id);
            if (rmdir(p) < 0 && errno != ENOENT)
                left++;
            break;
        }
    }
    if (mi)
        fclose(mi);
    if (cg)
        fclose(cg);
    return left;
}

/* Whether any mount of this process's namespace lies under dir. */
static int mounts_under(const char *dir) {
    FILE *mi = fopen("/proc/self/mountinfo", "re");
    if (!mi)
        return 0;
    char line[4096], mnt[4096];
    int n = 0;
    size_t dl = strlen(dir);
    while (fgets(line, sizeof(line), mi))
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strncmp(mnt, dir, dl) == 0 &&
            (mnt[dl] == '/' || mnt[dl] == '\0'))
            n++;
    fclose(mi);
    return n;
}

/* `runtime --root STATE delete --force ID` (bounded), then whether its
 * state is gone. */
static bool runtime_delete(const struct runc_plan *rp, const struct rx *r) {
    char state[4200], one[4300];
    snprintf(state, sizeof(state), "%s/state", r->bundle);
    snprintf(one, sizeof(one), "%s/%s", state, r->id);
    if (!pu_exists(one))
        return true;
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    const char *argv[] = {rp->path, "--root", state, "delete", "--force", r->id, NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    struct pu_proc pr;
    if (devnull >= 0 && pu_spawn(argv, envp, devnull, devnull, &pr) == 0)
        (void)pu_finish(&pr, pu_deadline_after_ms(RX_DELETE_MS), NULL);
    if (devnull >= 0)
        close(devnull);
    return !pu_exists(one);
}

static void rx_finish(fy_handle *h, struct rx *r) {
    struct lx *x = &r->x;
    fy_result *res = result_new();
    if (!res)
        return;
    struct attempt_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.t_cleanup_begin = util_now_usec();
    const struct linux_plan *pl = h->pr->plan;
    const struct runc_plan *rp = pl->ext;
    if (pl->cg.enabled)
        cg_usage(&pl->cg, &x->cg, &x->usage);
    rep.isolation_json = util_strdup(pl->isolation_json);
    rep.limits_json = util_strdup(pl->cgroup_json);
    if (r->err_seen) {
        rep.setup_failed = true;
        rep.setup_step = r->err_step;
        rep.setup_errno = r->err_errno;
        size_t nt = 0;
        while (r->targets && r->targets[nt])
            nt++;
        rep.setup_detail = r->err_target && r->err_target <= nt
                               ? util_asprintf("%s: the image's %s: %s%s", fy_step_name(r->err_step),
                                               r->targets[r->err_target - 1], strerror(r->err_errno),
                                               r->err_errno == ELOOP ? " (a symbolic link in the image's layout "
                                                                       "paths is refused)"
                                                                     : "")
                               : util_asprintf("%s: %s", fy_step_name(r->err_step), strerror(r->err_errno));
    } else if (x->exit_seen && WIFEXITED(x->wstatus) && (r->runtime_msg = runtime_error(r->bundle))) {
        /* The runtime failed (its log says so): not the command's exit. */
        rep.setup_failed = true;
        rep.setup_step = strstr(r->runtime_msg, "exec") ? FY_STEP_EXEC : FY_STEP_RUNTIME;
        rep.setup_detail = util_asprintf("%s: %s", rp->runtime, r->runtime_msg);
    } else if (x->exit_seen && !r->killed_tree) {
        rep.exit_seen = true;
        rep.wstatus = x->wstatus;
    }
    rep.oom_killed = x->usage.oom_kills != 0;
    rep.memory_limit = pl->cg.memory;
    rep.pids_limit_hit = x->usage.pids_max_events != 0;
    rep.t_isolation = r->t_started;
    rep.t_exit = x->t_exit ? x->t_exit : x->t_reaped;
    rep.t_ended = x->t_reaped;
    rep.t_gone = rep.t_exit;
    rep.t_output_eof = x->t_eof;
    rep.output_bytes = x->output_bytes;
    rep.output_truncated = x->truncated;
    rep.output_limit = x->output_cap;
    for (int i = 1; i < 3; i++) {
        uint32_t mode = pl->np->stdio[i].mode;
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
    rep.usage_source = x->cg.v2_dir && pl->cg.v2_limits ? "cgroup v2" : pl->cg.enabled ? "cgroup v1" : NULL;

    /* Cleanup, witnessed. Nothing of the attempt may run (the runtime and
     * its container were in the attempt's cgroups); the runtime's state
     * goes, then every cgroup, then the bundle. */
    if (pl->cg.enabled)
        rx_kill_tree(r);
    bool state_gone = runtime_delete(rp, r);
    int cgroups_left = runtime_cgroups_left(r->id);
    {
        char *dirs[2 * (CG_NCTL + 1)];
        size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
        for (size_t i = 1; i < n; i += 2)
            if (dirs[i] && rmdir(dirs[i]) < 0 && errno != ENOENT)
                cgroups_left++;
        for (size_t i = 0; i < n; i++)
            free(dirs[i]);
    }
    if (cg_remove_empty(&x->cg))
        rep.left[FY_LEFT_PROCESSES] = (uint64_t)cg_count_procs(&pl->cg, &x->cg);
    rep.left[FY_LEFT_CGROUPS] = (uint64_t)cg_destroy(&pl->cg, &x->cg) + (uint64_t)cgroups_left;
    rep.left[FY_LEFT_MOUNTS] = (uint64_t)mounts_under(r->bundle);
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->spool_fd[i]);
    lx_stdin_settle(x);
    bool files_left = state_remove_tree(r->bundle) < 0 || pu_exists(r->bundle);
    rep.left[FY_LEFT_FILES] = (files_left ? 1u : 0u) + (state_gone ? 0u : 1u);
    rep.t_cleanup_end = util_now_usec();
    attempt_finish(h, &rep, res);
}

static void read_err(struct rx *r) {
    struct rx_err e;
    if (r->err_rd >= 0 && read(r->err_rd, &e, sizeof e) == (ssize_t)sizeof e) {
        r->err_seen = true;
        r->err_step = e.step;
        r->err_errno = e.err;
        r->err_target = e.target;
    }
}

int lxr_process(fy_handle *h, fy_error **reterr) {
    struct rx *r = h->b;
    struct lx *x = &r->x;
    const struct linux_plan *pl = h->pr->plan;
    struct epoll_event evs[8];
    while (epoll_wait(x->epfd, evs, 8, 0) == 8)
        ;
    uint64_t expirations;
    (void)!read(x->timerfd, &expirations, sizeof(expirations));
    for (int i = 1; i < 3; i++)
        if (x->drain_rd[i] >= 0)
            lx_drain_output(h, x, i); /* a truncation hard-kills through lx_hard_kill */
    if (x->kill == KS_HARD && !r->killed_tree)
        rx_kill_tree(r);
    if (!x->reaped) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (syscall(SYS_waitid, FY_P_PIDFD, x->pidfd, &si, WEXITED | __WALL | WNOHANG, NULL) == 0 && si.si_pid) {
            x->reaped = true;
            x->exit_seen = true;
            x->wstatus = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status & 0x7f;
            x->t_reaped = util_now_usec();
            uint64_t end = r->end_at ? __atomic_load_n(r->end_at, __ATOMIC_ACQUIRE) : 0;
            x->t_exit = end && end <= x->t_reaped ? end : x->t_reaped;
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->pidfd, NULL);
            read_err(r);
        }
    }
    uint64_t now = util_now_usec();
    if (pl->cg.enabled && !x->reaped && now >= x->next_poll) {
        cg_usage(&pl->cg, &x->cg, &x->usage);
        if (x->usage.oom_kills && h->end == END_NONE) {
            handle_end(h, END_OOM, FY_STEP_CGROUP_LIMIT, 0, "memory limit of %llu bytes",
                       (unsigned long long)pl->cg.memory);
            rx_kill_tree(r);
        } else if (x->usage.pids_max_events && h->end == END_NONE) {
            handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "pids");
            rx_kill_tree(r);
        }
        x->next_poll = now + 100000;
    }
    /* (a runtime that ended before the deadline, reaped after it by a late
     * host, is no timeout) */
    if (x->kill == KS_NONE && h->end == END_NONE && h->deadline && now >= h->deadline &&
        !(x->reaped && x->t_exit < h->deadline)) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(pl->np->limit[FY_LIMIT_WALL_TIME] / 1000));
        lxr_terminate(h);
    }
    if (x->kill == KS_SOFT && now >= x->grace_deadline)
        rx_kill_tree(r);
    lx_arm_timer(h, x);
    if (!x->reaped || lx_outputs_open(x))
        return 0;
    if (!x->t_eof)
        x->t_eof = util_now_usec();
    rx_finish(h, r);
    if (!h->result)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    return 1;
}

static void rx_free(struct rx *r) {
    struct lx *x = &r->x;
    free(x->cg.name);
    free(x->cg.v2_dir);
    if (x->cg.v2_fd >= 0)
        close(x->cg.v2_fd);
    for (int c = 0; c < CG_NCTL; c++)
        free(x->cg.v1_dir[c]);
    lx_close_fd(&x->pidfd);
    lx_close_fd(&x->epfd);
    lx_close_fd(&x->timerfd);
    for (int i = 0; i < 3; i++) {
        lx_close_fd(&x->child_stdio[i]);
        lx_close_fd(&x->host_pipe[i]);
        lx_close_fd(&x->drain_rd[i]);
        lx_close_fd(&x->spool_fd[i]);
    }
    lx_stdin_settle(x);
    rx_close(&r->err_rd);
    free(r->targets);
    free(r->tmpfs_modes);
    free(r->bundle);
    free(r->id);
    free(r->runtime_msg);
    if (r->end_at)
        munmap(r->end_at, sizeof(*r->end_at));
    free(r);
}

/* Kills, reaps and removes everything (idempotent; also after a failed
 * start). */
void lxr_destroy(fy_handle *h) {
    struct rx *r = h->b;
    if (!r)
        return;
    struct lx *x = &r->x;
    const struct linux_plan *pl = h->pr->plan;
    if (!h->result) {
        if (x->pidfd >= 0 && !x->reaped) {
            rx_kill_tree(r);
            siginfo_t si;
            while (syscall(SYS_waitid, FY_P_PIDFD, x->pidfd, &si, WEXITED | __WALL, NULL) < 0 && errno == EINTR)
                ;
            x->reaped = true;
        }
        if (r->bundle) {
            if (r->id)
                (void)runtime_delete(pl->ext, r);
            if (r->id)
                (void)runtime_cgroups_left(r->id);
            if (pl->cg.enabled) {
                char *dirs[2 * (CG_NCTL + 1)];
                size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
                for (size_t i = 1; i < n; i += 2)
                    if (dirs[i])
                        (void)rmdir(dirs[i]);
                for (size_t i = 0; i < n; i++)
                    free(dirs[i]);
                (void)cg_destroy(&pl->cg, &x->cg);
            }
            for (int i = 0; i < 3; i++)
                if (x->spool_created[i])
                    unlink(x->spool_created[i]);
            (void)state_remove_tree(r->bundle);
        }
    }
    rx_free(r);
    h->b = NULL;
}

void lxr_forget(fy_handle *h) {
    struct rx *r = h->b;
    if (r)
        rx_free(r);
    h->b = NULL;
}

int lxr_start(fy_handle *h, fy_error **reterr) {
    int r = start_inner(h, reterr);
    if (r < 0)
        lxr_destroy(h); /* nothing of a failed start stays */
    return r;
}

/* ------------------------------------------------------------------ */
/* orphans                                                            */
/* ------------------------------------------------------------------ */

/* The bundles of hosts that died (RX_RUN_DIR/forgeyard-<pid>-<hex> whose
 * pid is gone): every process of the attempt's cgroups killed (the middle,
 * the runtime, the container), `runc delete --force`, the cgroups and the
 * bundle removed. A bundle whose host lives is never touched. */
int linux_runc_gc(uint64_t *destroyed) {
    DIR *d = opendir(RX_RUN_DIR);
    if (!d)
        return 0;
    int left = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0;
        char hex[64];
        if (sscanf(e->d_name, "forgeyard-%d-%63[0-9a-f]", &pid, hex) != 2 || pid <= 0)
            continue;
        char p[4200];
        snprintf(p, sizeof(p), "/proc/%d", pid);
        if (pu_exists(p))
            continue; /* its host lives (or the pid was reused: left for later) */
        struct rx r = {.bundle = util_asprintf(RX_RUN_DIR "/%s", e->d_name), .id = util_strdup(e->d_name)};
        char *cgs = NULL;
        if (r.bundle) {
            snprintf(p, sizeof(p), "%s/cgroups", r.bundle);
            int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            cgs = fd >= 0 ? util_read_fd(fd, 1 << 16) : NULL;
            if (fd >= 0)
                close(fd);
        }
        /* Frozen where a v1 freezer is among them, then everything killed. */
        for (int round = 0; round < 2 && cgs; round++)
            for (char *line = cgs; *line;) {
                size_t len = strcspn(line, "\n");
                char dir[4200];
                snprintf(dir, sizeof(dir), "%.*s", (int)len, line);
                if (round == 0 && strstr(dir, "/freezer/")) {
                    snprintf(p, sizeof(p), "%s/freezer.state", dir);
                    int fd = open(p, O_WRONLY | O_CLOEXEC);
                    if (fd >= 0) {
                        (void)!write(fd, "FROZEN", 6);
                        close(fd);
                    }
                }
                if (round == 1) {
                    signal_listed(dir, SIGKILL);
                    snprintf(p, sizeof(p), "%s/%s", dir, r.id ? r.id : "");
                    signal_listed(p, SIGKILL);
                    if (strstr(dir, "/freezer/")) {
                        snprintf(p, sizeof(p), "%s/freezer.state", dir);
                        int fd = open(p, O_WRONLY | O_CLOEXEC);
                        if (fd >= 0) {
                            (void)!write(fd, "THAWED", 6);
                            close(fd);
                        }
                    }
                }
                line += len;
                while (*line == '\n')
                    line++;
            }
        const char *rt = pu_exists("/usr/sbin/runc") ? "/usr/sbin/runc" : "/usr/bin/runc";
        char *found = pu_find_program("runc");
        struct runc_plan rp = {.runtime = "runc", .path = found ? found : rt};
        bool gone = r.bundle && r.id && runtime_delete(&rp, &r);
        free(found);
        if (r.id)
            left += runtime_cgroups_left(r.id);
        /* The container's cgroup below each of the attempt's, then the attempt's
         * (a killed task leaves its cgroup a moment later: a few tries). */
        for (int tries = 0; cgs && tries < 50; tries++) {
            int busy = 0;
            for (char *line = cgs; *line;) {
                size_t len = strcspn(line, "\n");
                char dir[4200];
                snprintf(dir, sizeof(dir), "%.*s", (int)len, line);
                snprintf(p, sizeof(p), "%s/%s", dir, r.id ? r.id : "");
                if (rmdir(p) < 0 && errno != ENOENT)
                    busy++;
                if (rmdir(dir) < 0 && errno != ENOENT)
                    busy++;
                line += len;
                while (*line == '\n')
                    line++;
            }
            if (!busy)
                break;
            if (tries == 49)
                left += busy;
            pu_sleep_ms(10);
        }
        if (r.bundle && (state_remove_tree(r.bundle) < 0 || pu_exists(r.bundle)))
            left++;
        if (gone)
            (*destroyed)++;
        free(cgs);
        free(r.bundle);
        free(r.id);
    }
    closedir(d);
    return left;
}

int lxr_get_fd(fy_handle *h) { return ((struct rx *)h->b)->x.epfd; }
uint64_t lxr_next_deadline(fy_handle *h) { return lx_next_deadline(h); }
