/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parent side of the Linux namespace backend: creating the sandbox with
 * clone3, mapping its ids, and driving it to a typed result without ever
 * blocking (fy_handle_process) — reading the sandbox's status records,
 * supervising seccomp violations, draining output, enforcing deadlines,
 * reaping through a pidfd. No signal handlers, no waitpid(-1), no SIGCHLD
 * (the child's exit signal is 0, so a host reaper cannot steal it). */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "attempt.h"
#include "handle.h"
#include "linux-pack.h"
#include "linux-plan.h"
#include "linux-seccomp.h"
#include "linux-state.h"
#include "linux-watch.h"
#include "linux-syscall.h"
#include <sys/resource.h>

enum kill_stage { KS_NONE, KS_SOFT, KS_HARD };

struct lx {
    pid_t pid;
    int pidfd, epfd, timerfd;
    int sync_wr, status_rd;
    int notify_sock, notify_fd;
    int child_stdio[3];     /* closed in the parent after clone */
    int host_pipe[3];       /* FY_STDIO_PIPE: the host's end */
    int drain_rd[3];        /* FY_STDIO_FILE, FY_STDIO_CALLBACK: the pipe we drain ... */
    int spool_fd[3];        /* ... into this file (FY_STDIO_FILE), or to the callback */
    uint64_t stream_bytes[3]; /* what was delivered of each drained stream */
    char **envp;            /* plan envp + secret variables (secret strings in sodium memory) */
    unsigned char **secret_env;
    size_t nsecret_env;
    struct child_secret *secrets;
    struct child_args args;
    /* progress */
    bool reaped, status_eof, exec_seen, exit_seen, child_error;
    uint32_t err_step;
    int err_errno;
    uint32_t err_op; /* the failed mount operation + 1, or 0 */
    int wstatus;
    uint32_t landlock_abi;
    uint64_t tasks;             /* CM_TASKS: tasks created in the pid namespace */
    struct rusage ru;           /* handed over when the sandbox was reaped */
    bool have_ru;
    bool have_tasks;
    enum kill_stage kill;
    uint64_t grace_deadline;
    uint64_t hard_deadline;     /* process mode: SIGKILL the supervisor after this */
    uint64_t t_go, t_isolation, t_fs, t_exec, t_exit, t_reaped, t_eof;
    uint64_t output_bytes, output_cap;
    bool truncated;
    bool init_forked;           /* pid 1 is the fallback: a fork of the host */
    char *state_path;           /* our record in the state directory */
    char *state_dir;            /* ... and the directory, swept for orphans when we are freed */
    int state_fd;               /* ... open for appending the sandbox's pid */
    struct cg_run cg;
    uint64_t next_poll;         /* cgroup events are polled while limits apply */
    uint64_t next_watch;        /* the disk watchdog's next walk */
    struct cg_usage usage;
    int procs_left, cgroups_left;
    /* process mode: the per-attempt directory on the host */
    char *attempt_dir, *attempt_home, *attempt_tmp, *attempt_secrets;
    char *env_home, *env_tmpdir;
    const char *spool_created[3]; /* spool files this start created (unlinked if it fails) */
    bool scratch_left; /* cleanup could not remove it all */
};

static void close_fd(int *fd) {
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
    for (int i = 0; i < 3; i++)
        x->child_stdio[i] = x->host_pipe[i] = x->drain_rd[i] = x->spool_fd[i] = -1;
    return x;
}

static void remove_attempt_dir(struct lx *x) {
    if (!x->attempt_dir)
        return;
    x->scratch_left = state_remove_tree(x->attempt_dir) < 0; /* never follows planted symlinks */
    free(x->attempt_dir);
    x->attempt_dir = NULL;
}

static void forget_state(struct lx *x) {
    close_fd(&x->state_fd);
    if (x->state_path) {
        unlink(x->state_path);
        free(x->state_path);
        x->state_path = NULL;
    }
}

/* The platform-neutral plan the handle's sandbox was compiled from. */
static const struct fy_plan *neutral(const fy_handle *h) { return ((const struct linux_plan *)h->pr->plan)->np; }

static void lx_free(struct lx *x) {
    if (!x)
        return;
    free(x->state_path);
    free(x->state_dir);
    close_fd(&x->state_fd);
    if (x->cg.v2_fd >= 0)
        close(x->cg.v2_fd);
    x->cg.v2_fd = -1;
    free(x->cg.name);
    free(x->cg.v2_dir);
    for (int c = 0; c < CG_NCTL; c++)
        free(x->cg.v1_dir[c]);
    remove_attempt_dir(x);
    free(x->attempt_home);
    free(x->attempt_tmp);
    free(x->attempt_secrets);
    free(x->env_home);
    free(x->env_tmpdir);
    close_fd(&x->pidfd);
    close_fd(&x->epfd);
    close_fd(&x->timerfd);
    close_fd(&x->sync_wr);
    close_fd(&x->status_rd);
    close_fd(&x->notify_sock);
    close_fd(&x->notify_fd);
    for (int i = 0; i < 3; i++) {
        close_fd(&x->child_stdio[i]);
        close_fd(&x->host_pipe[i]);
        close_fd(&x->drain_rd[i]);
        close_fd(&x->spool_fd[i]);
    }
    for (size_t i = 0; i < x->nsecret_env; i++)
        secret_release(x->secret_env[i]);
    free(x->secret_env);
    free(x->envp);
    free(x->secrets);
    free(x);
}

static int sys_err(fy_error **reterr, uint32_t step, const char *what) {
    int e = errno;
    return err_set(reterr, err_from_errno(e), step, e, NULL, "%s: %s", what, strerror(e));
}

static int epoll_watch(struct lx *x, int fd) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    return epoll_ctl(x->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- setting up stdio and secrets ---- */

static int setup_stdio(struct lx *x, const struct fy_plan *np, int stdin_secret, fy_error **reterr) {
    for (int i = 0; i < 3; i++) {
        const struct plan_stdio *s = &np->stdio[i];
        int fds[2];
        if (i == 0 && stdin_secret >= 0) {
            const struct plan_secret *ps = &np->secrets[stdin_secret];
            if (pipe2(fds, O_CLOEXEC) < 0)
                return sys_err(reterr, FY_STEP_SECRET, "pipe");
            size_t want = ps->len + 4096;
            if (ps->len && fcntl(fds[1], F_SETPIPE_SZ, (int)(want > 1048576 ? 1048576 : want)) < 0 &&
                ps->len > 65536) {
                close(fds[0]);
                close(fds[1]);
                return sys_err(reterr, FY_STEP_SECRET, "cannot size the stdin pipe for the secret");
            }
            ssize_t w = ps->len ? write(fds[1], ps->value, ps->len) : 0;
            close(fds[1]);
            if (w < 0 || (size_t)w != ps->len) {
                close(fds[0]);
                return err_set(reterr, FY_E_IO, FY_STEP_SECRET, errno, NULL, "writing the stdin secret failed");
            }
            x->child_stdio[0] = fds[0];
            continue;
        }
        switch (s->mode) {
        case FY_STDIO_NULL:
            if ((x->child_stdio[i] = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY)) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "/dev/null");
            break;
        case FY_STDIO_FD:
            if ((x->child_stdio[i] = fcntl(s->fd, F_DUPFD_CLOEXEC, 3)) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "dup");
            break;
        case FY_STDIO_PIPE:
            if (pipe2(fds, O_CLOEXEC) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "pipe");
            x->child_stdio[i] = i == 0 ? fds[0] : fds[1];
            x->host_pipe[i] = i == 0 ? fds[1] : fds[0];
            break;
        case FY_STDIO_CALLBACK:
            if (pipe2(fds, O_CLOEXEC) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "pipe");
            x->child_stdio[i] = fds[1];
            x->drain_rd[i] = fds[0];
            if (set_nonblock(x->drain_rd[i]) < 0 || epoll_watch(x, x->drain_rd[i]) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "output pipe");
            break;
        case FY_STDIO_FILE:
            if (pipe2(fds, O_CLOEXEC) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "pipe");
            x->child_stdio[i] = fds[1];
            x->drain_rd[i] = fds[0];
            /* stdout and stderr may name the same file: share one spool fd. */
            if (i == 2 && x->spool_fd[1] >= 0 && np->stdio[1].mode == FY_STDIO_FILE &&
                strcmp(np->stdio[1].path, s->path) == 0) {
                if ((x->spool_fd[2] = fcntl(x->spool_fd[1], F_DUPFD_CLOEXEC, 3)) < 0)
                    return sys_err(reterr, FY_STEP_OUTPUT, "dup");
            } else if ((x->spool_fd[i] = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_APPEND,
                                              0600)) < 0) {
                int e = errno;
                return err_set(reterr, err_from_errno(e), FY_STEP_OUTPUT, e, NULL, "cannot create %s: %s", s->path,
                               strerror(e));
            } else {
                x->spool_created[i] = s->path;
            }
            if (set_nonblock(x->drain_rd[i]) < 0 || epoll_watch(x, x->drain_rd[i]) < 0)
                return sys_err(reterr, FY_STEP_OUTPUT, "output pipe");
            break;
        }
    }
    return 0;
}

/* Process mode: a private directory per attempt, on tmpfs when the host
 * has /dev/shm, owned by the workload's uid, removed at cleanup. */
static int setup_attempt_dir(struct lx *x, const struct linux_plan *pl, fy_error **reterr) {
    char tmpl[] = "/dev/shm/forgeyard-attempt-XXXXXX";
    char tmpl2[] = "/tmp/forgeyard-attempt-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (!d)
        d = mkdtemp(tmpl2);
    if (!d)
        return sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    x->attempt_dir = strdup(d);
    x->attempt_home = fy_asprintf("%s/home", d);
    x->attempt_tmp = fy_asprintf("%s/tmp", d);
    x->attempt_secrets = fy_asprintf("%s/secrets", d);
    x->env_home = fy_asprintf("HOME=%s/home", d);
    x->env_tmpdir = fy_asprintf("TMPDIR=%s/tmp", d);
    if (!x->attempt_dir || !x->attempt_home || !x->attempt_tmp || !x->attempt_secrets || !x->env_home ||
        !x->env_tmpdir) {
        if (!x->attempt_dir)
            rmdir(d);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_MOUNT, 0, NULL, "out of memory");
    }
    const char *dirs[] = {x->attempt_home, x->attempt_tmp, x->attempt_secrets};
    for (size_t i = 0; i < 3; i++)
        if (mkdir(dirs[i], 0700) < 0 || (pl->as_root && chown(dirs[i], pl->work_uid, pl->work_gid) < 0))
            return sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    if (chmod(x->attempt_dir, 0711) < 0)
        return sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    return 0;
}

static int setup_secrets(struct lx *x, const struct fy_plan *np, const struct linux_plan *pl, int *stdin_secret,
                         fy_error **reterr) {
    *stdin_secret = -1;
    size_t nenv = 0;
    for (size_t i = 0; i < np->nsecrets; i++)
        nenv += np->secrets[i].delivery == FY_SECRET_ENV;
    x->envp = calloc(pl->nenv + nenv + 1, sizeof(char *));
    x->secret_env = calloc(nenv + 1, sizeof(unsigned char *));
    x->secrets = calloc(np->nsecrets + 1, sizeof(*x->secrets));
    if (!x->envp || !x->secret_env || !x->secrets)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < pl->nenv; i++) {
        /* A secret variable replaces an explicitly set one of the same name. */
        bool shadowed = false;
        for (size_t k = 0; k < np->nsecrets; k++) {
            const struct plan_secret *d = &np->secrets[k];
            size_t tl = d->target ? strlen(d->target) : 0;
            shadowed |= d->delivery == FY_SECRET_ENV && strncmp(pl->envp[i], d->target, tl) == 0 &&
                        pl->envp[i][tl] == '=';
        }
        if (shadowed)
            continue;
        if (pl->process_mode && strncmp(pl->envp[i], "HOME=/home/forgeyard", 21) == 0)
            x->envp[n++] = x->env_home;
        else if (pl->process_mode && strcmp(pl->envp[i], "TMPDIR=/tmp") == 0)
            x->envp[n++] = x->env_tmpdir;
        else
            x->envp[n++] = pl->envp[i];
    }
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *ps = &np->secrets[i], *d = ps;
        if (d->delivery == FY_SECRET_ENV) {
            size_t tl = strlen(d->target);
            if (memchr(ps->value, 0, ps->len))
                return err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, NULL,
                               "secret %s contains a NUL byte and cannot be an environment variable", d->name);
            unsigned char *m = secret_alloc(NULL, tl + 1 + ps->len + 1);
            if (!m)
                return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
            memcpy(m, d->target, tl);
            m[tl] = '=';
            memcpy(m + tl + 1, ps->value, ps->len);
            m[tl + 1 + ps->len] = '\0';
            x->secret_env[x->nsecret_env++] = m;
            x->envp[n++] = (char *)m;
        } else if (d->delivery == FY_SECRET_FILE) {
            x->secrets[x->args.nsecrets++] = (struct child_secret){d->target, ps->value, ps->len};
        } else {
            *stdin_secret = (int)i;
        }
    }
    return 0;
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

static int map_ids(const struct linux_plan *pl, pid_t pid, fy_error **reterr) {
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
static int write_proc_cgroup(const char *dir, pid_t pid, fy_error **reterr) {
    char path[4200], val[32];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    snprintf(val, sizeof(val), "%d", (int)pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? write(fd, val, strlen(val)) : -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)strlen(val))
        return err_set(reterr, err_from_errno(e), FY_STEP_CGROUP, e, NULL, "placing the sandbox in %s: %s", dir,
                       strerror(e));
    return 0;
}

#define END_TREE_BOUND_USEC 2000000 /* process mode: how long the supervisor gets */

/* Ends the sandbox. With a pid namespace, killing its init kills the whole
 * namespace; in process mode the supervisor (a child subreaper) is asked to
 * kill and reap the tree, and is killed itself if it has not within a bound. */
static void hard_kill(struct lx *x, const struct linux_plan *pl) {
    /* With a cgroup of its own the whole tree dies at once, whatever it did
     * to escape the process tree. */
    if (x->cg.v2_dir || x->cg.v1_dir[CG_FREEZER])
        cg_kill(&pl->cg, &x->cg);
    if (x->pidfd >= 0 && !x->reaped) {
        if (pl->process_mode && x->kill != KS_HARD) {
            fy_sys_pidfd_send_signal(x->pidfd, FY_SIG_END_TREE, NULL, 0);
            x->hard_deadline = fy_now_usec() + END_TREE_BOUND_USEC;
        } else {
            fy_sys_pidfd_send_signal(x->pidfd, SIGKILL, NULL, 0);
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
    if (syscall(SYS_waitid, FY_P_PIDFD, x->pidfd, &si, WEXITED | __WALL | flags, &ru) < 0)
        return -errno;
    if (si.si_pid == 0)
        return 0;
    x->ru = ru;
    x->have_ru = true;
    return 1;
}

static void reap_blocking(struct lx *x, const struct linux_plan *pl) {
    if (x->pidfd < 0 || x->reaped)
        return;
    if (pl->process_mode) {
        struct pollfd pfd = {.fd = x->pidfd, .events = POLLIN};
        if (poll(&pfd, 1, END_TREE_BOUND_USEC / 1000) == 0)
            fy_sys_pidfd_send_signal(x->pidfd, SIGKILL, NULL, 0);
    }
    while (reap_pidfd(x, 0) == -EINTR)
        ;
    x->reaped = true;
}

static void arm_timer(fy_handle *h, struct lx *x);

/* The attempt's record in the state directory, so that fy_gc can destroy
 * what a crashed host process left: created before the cgroups exist,
 * naming the directories about to be made and no process; the sandbox's
 * pid is appended once it is placed (record_sandbox). */
static int record_state(fy_handle *h, struct lx *x, const struct linux_plan *pl, fy_error **reterr) {
    char defdir[4096];
    const char *dir = ((const struct linux_plan *)h->pr->plan)->np->state_dir;
    int r = 0;
    if (!dir && (r = state_default_dir(defdir, sizeof(defdir))) == 0)
        dir = defdir;
    if (!dir)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, 0, NULL, "no state directory");
    char *planned[CG_NCTL + 1] = {0};
    const char *cgs[CG_NCTL + 1];
    size_t ncg = cg_planned_dirs(&pl->cg, x->cg.name, planned, FY_ARRAY_SIZE(planned));
    for (size_t i = 0; i < ncg; i++) {
        if (!planned[i])
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        cgs[i] = planned[i];
    }
    if (r == 0 && !(x->state_dir = fy_strdup(dir)))
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    if (r == 0)
        r = state_record(dir, x->cg.name, cgs, ncg, x->attempt_dir, &x->state_path, &x->state_fd, reterr);
    for (size_t i = 0; i < FY_ARRAY_SIZE(planned); i++)
        free(planned[i]);
    return r;
}

/* ---- forgeyard-init ---- */

extern const unsigned char fy_init_blob[];
extern const size_t fy_init_blob_len;

#ifndef MFD_NOEXEC_SEAL
#  define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#  define MFD_EXEC 0x0010U
#endif

/* A sealed memfd holding len bytes (exec: MFD_EXEC where the kernel knows
 * it, else MFD_NOEXEC_SEAL), or -errno. */
static int sealed_memfd(const char *name, const void *data, size_t len, bool exec) {
    unsigned mode = exec ? MFD_EXEC : MFD_NOEXEC_SEAL;
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | mode);
    if (fd < 0 && errno == EINVAL) /* before Linux 6.3 */
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            return -e;
        }
        p += w;
        len -= (size_t)w;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Clones ca's child (CLONE_VM | CLONE_VFORK added) executing forgeyard-init
 * from init_fd with argv[1] = arg1 and a pipe to say it started on; keep
 * are the fds to keep across the exec. The pid, -1 when clone failed, or
 * 0 when its pipe could not be made (both: errno). When the pid is valid, *ret_started is 0 once forgeyard-init runs, the errno of
 * a failed exec, or -1 for a child that died first; *ret_clone3 says
 * whether clone3 (not clone(2)) served. */
static pid_t spawn_exec_init(const struct fy_clone_args *ca, int init_fd, const char *arg1, const int *keep,
                             size_t nkeep, int *ret_started, bool *ret_clone3) {
    int errp[2];
    if (nkeep > LX_EXEC_INIT_MAX_KEEP) {
        errno = E2BIG;
        return 0;
    }
    if (pipe2(errp, O_CLOEXEC) < 0)
        return 0;
    char errnum[16];
    snprintf(errnum, sizeof(errnum), "%d", errp[1]);
    char *argv[] = {(char *)"forgeyard-init", (char *)arg1, errnum, NULL};
    /* In a new user namespace, what init needs of it; else (the process
     * level, a probe without one) what the host holds, as before the exec. */
    uint64_t ambient = (ca->flags & CLONE_NEWUSER) ? LX_INIT_CAPS : ~0ULL;
    struct exec_init e = {.init_fd = init_fd, .argv = argv, .err_fd = errp[1], .nkeep = nkeep, .ambient = ambient};
    for (size_t i = 0; i < nkeep; i++)
        e.keep[i] = keep[i];
    struct fy_clone_args c = *ca;
    c.flags |= CLONE_VM | CLONE_VFORK;
    pid_t pid = linux_clone_exec_init(&c, &e);
    int clone_errno = errno;
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

/* Clones the sandbox executing forgeyard-init on the packed arguments.
 * 1: it runs (*ret_pid; the pidfd went where ca says); 0: not possible
 * here (nothing is left of the attempt): the caller clones a copy of
 * itself instead; -1: clone failed (errno). */
static int clone_exec_init(const struct child_args *a, const struct fy_clone_args *ca, int *pidfd, pid_t *ret_pid,
                           bool *ret_clone3) {
    /* Where the probe found that forgeyard-init cannot be executed (a host
     * whose policy forbids executing memfds, say), the init is a copy of
     * the host from the start: the plan says so (pl->exec_init). */
    if (!fy_init_blob_len || !a->plan->exec_init)
        return 0;
    unsigned char *blob = NULL;
    size_t len = 0;
    if (lx_pack(a, &blob, &len) < 0)
        return 0;
    int plan_fd = sealed_memfd("forgeyard-plan", blob, len, false); /* holds the secrets: wiped here */
    fy_explicit_bzero(blob, len);
    free(blob);
    int init_fd = plan_fd >= 0 ? sealed_memfd("forgeyard-init", fy_init_blob, fy_init_blob_len, true) : -1;
    int used = 0;
    if (init_fd >= 0) {
        char fdnum[16];
        snprintf(fdnum, sizeof(fdnum), "%d", plan_fd);
        const int keep[] = {plan_fd, a->sync_fd, a->status_fd, a->notify_sock, a->stdio[0], a->stdio[1], a->stdio[2]};
        int started;
        pid_t pid = spawn_exec_init(ca, init_fd, fdnum, keep, FY_ARRAY_SIZE(keep), &started, ret_clone3);
        if (pid <= 0) {
            used = pid < 0 && !(errno == EINVAL || errno == ENOSYS || errno == E2BIG) ? -1 : 0;
        } else if (started != 0) {
            /* The exec failed, or the child died first, although the probe
             * ran it: this attempt falls back to a copy of the host (a
             * later attempt tries again; a new probe snapshot records the
             * change for plans prepared from it). */
            siginfo_t si;
            fy_sys_pidfd_send_signal(*pidfd, SIGKILL, NULL, 0); /* if it lives on, confused */
            while (waitid(FY_P_PIDFD, (id_t)*pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
                ;
            close(*pidfd);
            *pidfd = -1;
        } else {
            *ret_pid = pid;
            used = 1;
        }
    }
    int e = errno;
    if (plan_fd >= 0)
        close(plan_fd);
    if (init_fd >= 0)
        close(init_fd);
    errno = e;
    return used;
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
};

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
    rep.pid = spawn_exec_init(&ca, init_fd, "probe", NULL, 0, &rep.started, &rep.via_clone3);
    rep.err = errno;
    if (rep.pid > 0) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        while (syscall(SYS_waitid, FY_P_PIDFD, pidfd, &si, WEXITED | __WALL, NULL) < 0 && errno == EINTR)
            ;
        rep.wcode = si.si_code;
        rep.wstatus = si.si_status;
    }
    (void)syscall(SYS_write, wfd, &rep, sizeof(rep));
    syscall(SYS_exit_group, 0);
    __builtin_unreachable();
}

/* The probe (linux-probe.c): executes forgeyard-init in its probe mode the
 * way fy_start does (CLONE_VM | CLONE_VFORK, in a new user namespace when
 * there are user namespaces), from a middle process so that the host's
 * SIGCHLD disposition and handlers never see it. 1 and what ran in why, or
 * 0 and why not. */
int lx_probe_exec_init(bool userns, char *why, size_t whylen) {
    if (!fy_init_blob_len) {
        snprintf(why, whylen, "forgeyard-init is not built for this architecture (x86-64 and aarch64 only)");
        return 0;
    }
    int init_fd = sealed_memfd("forgeyard-init", fy_init_blob, fy_init_blob_len, true);
    if (init_fd < 0) {
        snprintf(why, whylen, "a sealed memfd for forgeyard-init: %s", strerror(-init_fd));
        return 0;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(why, whylen, "pipe2: %s", strerror(errno));
        close(init_fd);
        return 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int mfd = -1;
    pid_t mid = fy_sys_fork_pidfd(&mfd);
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
    int ok = 0;
    if (mid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(fork_err));
    } else if (n != (ssize_t)sizeof(rep)) {
        snprintf(why, whylen, "the probe's process died before it reported");
    } else if (rep.pid > 0) {
        ok = rep.started == 0 && rep.wcode == CLD_EXITED && rep.wstatus == 0;
        if (ok)
            snprintf(why, whylen, "forgeyard-init (%zu bytes, embedded) executed from a sealed memfd%s%s",
                     (size_t)fy_init_blob_len, userns ? " in a new user namespace" : "",
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

/* One go-ahead to the child (see lx_start), with fds for it (the second
 * one carries its v1 cgroups' tasks files: cg_open_tasks). A child that
 * already ended (EPIPE) is not an error here: it reported why on its
 * status pipe, and the attempt's result carries that. */
static int send_go(struct lx *x, const int *fds, size_t nfds, fy_error **reterr) {
    if (nfds > LX_GO_MAX_FDS)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SPAWN, 0, NULL, "too many fds for the sandbox");
    /* A sandbox already gone (EPIPE) reported why on its status pipe. */
    if (lx_send_fds(x->sync_wr, 'g', fds, nfds) < 0 && errno != EPIPE && errno != ECONNRESET)
        return sys_err(reterr, FY_STEP_SPAWN, "starting the sandbox");
    return 0;
}

int lx_start(fy_handle *h, fy_error **reterr) {
    const struct linux_plan *pl = h->pr->plan;
    const struct fy_plan *np = pl->np;
    struct lx *x = lx_new();
    if (!x)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    int r = 0, sync[2] = {-1, -1}, status[2] = {-1, -1}, nsock[2] = {-1, -1};
    x->output_cap = np->limit[FY_LIMIT_OUTPUT];
    if ((x->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (x->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0) {
        r = sys_err(reterr, FY_STEP_SPAWN, "epoll/timerfd");
        goto fail;
    }
    if (epoll_watch(x, x->timerfd) < 0 || epoll_watch(x, h->wake_fd) < 0) {
        r = sys_err(reterr, FY_STEP_SPAWN, "epoll_ctl");
        goto fail;
    }
    int stdin_secret;
    if (pl->process_mode && (r = setup_attempt_dir(x, pl, reterr)) < 0)
        goto fail;
    /* The record exists before anything else the attempt leaves on the
     * host (cgroups, secrets, the sandbox): a crash from here on leaves
     * nothing fy_gc cannot find. */
    if (!(x->cg.name = cg_new_name())) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        goto fail;
    }
    if ((r = record_state(h, x, pl, reterr)) < 0)
        goto fail;
    if ((r = setup_secrets(x, np, pl, &stdin_secret, reterr)) < 0 ||
        (r = setup_stdio(x, np, stdin_secret, reterr)) < 0)
        goto fail;
    /* sync: the two go-aheads to the child (a socket, so that writing to a
     * child that already died is EPIPE without a SIGPIPE to the host), and
     * the host's liveness for its init afterwards. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0 || pipe2(status, O_CLOEXEC) < 0) {
        r = sys_err(reterr, FY_STEP_SPAWN, "pipe");
        goto fail;
    }
    if (pl->seccomp_notify && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, nsock) < 0) {
        r = sys_err(reterr, FY_STEP_SECCOMP, "socketpair");
        goto fail;
    }
    struct child_args *a = &x->args;
    a->plan = pl;
    a->sync_fd = sync[0];
    a->status_fd = status[1];
    a->notify_sock = nsock[1];
    for (int i = 0; i < 3; i++)
        a->stdio[i] = x->child_stdio[i];
    a->envp = x->envp;
    a->secrets = x->secrets;
    a->workdir = x->attempt_dir;
    a->secrets_dir = pl->process_mode ? x->attempt_secrets : NULL;

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
    obs_span(obs, "sandbox.resource", FY_SPAN_BEGIN, fy_now_usec(), NULL);
    if ((r = cg_create(&pl->cg, &x->cg, CG_PART_V2, reterr)) < 0) {
        obs_span(obs, "sandbox.resource", FY_SPAN_END, fy_now_usec(), "{\"cgroups\":false}");
        goto fail;
    }
    int pidfd = -1;
    struct fy_clone_args ca = {
        .flags = (pl->clone_flags & ~(uint64_t)LX_CHILD_UNSHARES) | CLONE_PIDFD | FY_CLONE_CLEAR_SIGHAND,
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = 0,
    };
    if (x->cg.v2_fd >= 0) {
        ca.flags |= FY_CLONE_INTO_CGROUP;
        ca.cgroup = (uint64_t)x->cg.v2_fd;
    }
    pid_t pid = -1;
    bool via_clone3 = true;
    int how = np->test_copy_init ? 0 : clone_exec_init(a, &ca, &pidfd, &pid, &via_clone3);
    if (how == 0)
        pid = fy_sys_clone3(&ca, sizeof(ca));
    bool cloned_into = pid >= 0 && x->cg.v2_fd >= 0 && via_clone3;
    x->init_forked = how == 0;
    if (how == 0 && pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
        /* Older kernels: clone(2) with CLONE_PIDFD (5.2+), no new stack. */
        pid = (pid_t)syscall(SYS_clone, (unsigned long)((pl->clone_flags & ~(uint64_t)LX_CHILD_UNSHARES) | CLONE_PIDFD),
                             0, &pidfd, 0, 0);
    }
    if (pid == 0)
        linux_child_main(a); /* never returns */
    if (pid < 0) {
        r = sys_err(reterr, FY_STEP_USERNS, "clone");
        goto fail;
    }
    x->pid = pid;
    x->pidfd = pidfd;
    close(sync[0]);
    close(status[1]);
    sync[0] = status[1] = -1;
    if (nsock[1] >= 0)
        close(nsock[1]);
    nsock[1] = -1;
    for (int i = 0; i < 3; i++)
        close_fd(&x->child_stdio[i]);
    x->sync_wr = sync[1];
    x->status_rd = status[0];
    x->notify_sock = nsock[0];
    sync[1] = status[0] = nsock[0] = -1;

    if ((!pl->process_mode && (r = map_ids(pl, pid, reterr)) < 0) || (r = send_go(x, NULL, 0, reterr)) < 0) {
        hard_kill(x, pl);
        reap_blocking(x, pl);
        goto fail;
    }
    x->t_go = fy_now_usec();
    r = cg_create(&pl->cg, &x->cg, CG_PART_V1, reterr);
    obs_span(obs, "sandbox.resource", FY_SPAN_END, fy_now_usec(), "{\"cgroups\":%s}", pl->cg.enabled ? "true" : "false");
    /* The sandbox's pid goes into the record before the go-ahead: the
     * sandbox itself ends when we die, the record is for what it leaves.
     * With the go-ahead go its v1 cgroups' tasks files: it moves itself. */
    int tasks[LX_GO_MAX_FDS];
    size_t ntasks = 0;
    if (r == 0)
        r = cg_open_tasks(&pl->cg, &x->cg, tasks, LX_GO_MAX_FDS, &ntasks, reterr);
    if (r < 0 || (!cloned_into && x->cg.v2_dir && (r = write_proc_cgroup(x->cg.v2_dir, pid, reterr)) < 0) ||
        (r = state_record_sandbox(x->state_fd, pid, reterr)) < 0 || (r = send_go(x, tasks, ntasks, reterr)) < 0) {
        for (size_t i = 0; i < ntasks; i++)
            close(tasks[i]);
        hard_kill(x, pl);
        reap_blocking(x, pl);
        goto fail;
    }
    for (size_t i = 0; i < ntasks; i++)
        close(tasks[i]);
    if (set_nonblock(x->status_rd) < 0 || epoll_watch(x, x->status_rd) < 0 || epoll_watch(x, x->pidfd) < 0 ||
        (x->notify_sock >= 0 && (set_nonblock(x->notify_sock) < 0 || epoll_watch(x, x->notify_sock) < 0))) {
        r = sys_err(reterr, FY_STEP_SPAWN, "epoll_ctl");
        hard_kill(x, pl);
        reap_blocking(x, pl);
        goto fail;
    }
    h->b = x;
    /* The first look at its cgroups in 100 ms, as every one after: one at
     * once would take CPU from the start it is making (a limit hit before
     * is reported all the same, from the final figures). */
    x->next_poll = fy_now_usec() + 100000;
    arm_timer(h, x);
    /* While the sandbox builds itself: the result will need it. */
    (void)prepared_contract_id(h->pr);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&sync[i]);
        close_fd(&status[i]);
        close_fd(&nsock[i]);
    }
    for (int i = 0; i < 3; i++)
        if (x->spool_created[i])
            unlink(x->spool_created[i]); /* nothing ran: leave no empty spool behind */
    if (cg_destroy(&pl->cg, &x->cg) == 0)
        forget_state(x); /* else the record stays, for fy_gc */
    lx_free(x);
    return r;
}

/* ---- deadlines ---- */

static uint64_t earliest(uint64_t a, uint64_t b) { return !a ? b : !b ? a : a < b ? a : b; }

uint64_t lx_next_deadline(fy_handle *h) {
    struct lx *x = h->b;
    uint64_t poll_at = x->reaped ? 0 : earliest(x->next_poll, ((const struct linux_plan *)h->pr->plan)->nwatch ? x->next_watch : 0);
    if (x->kill == KS_SOFT)
        return earliest(x->grace_deadline, poll_at);
    if (x->kill == KS_HARD && x->hard_deadline && !x->reaped)
        return x->hard_deadline;
    if (x->kill == KS_NONE && h->end == END_NONE)
        return earliest(h->deadline, poll_at);
    return 0;
}

static void arm_timer(fy_handle *h, struct lx *x) {
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
        h->cancel_started = fy_now_usec();
    uint64_t grace = neutral(h)->limit[FY_LIMIT_GRACE];
    if (grace == 0) {
        hard_kill(x, h->pr->plan);
    } else {
        /* Soft: the sandbox's init forwards SIGTERM to the whole tree. */
        fy_sys_pidfd_send_signal(x->pidfd, SIGTERM, NULL, 0);
        x->kill = KS_SOFT;
        x->grace_deadline = fy_now_usec() + grace;
    }
    arm_timer(h, x);
}

/* ---- processing ---- */

/* The disk watchdog: a walk of the writable host-backed directories. */
static void check_disk(fy_handle *h, struct lx *x, const struct linux_plan *pl) {
    struct watch_total t;
    watch_measure(pl->watch_dirs, pl->nwatch, &t);
    if (pl->disk_quota != FY_UNLIMITED && t.bytes > pl->disk_quota) {
        handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "disk");
        hard_kill(x, pl);
    } else if (pl->files_quota != FY_UNLIMITED && t.files > pl->files_quota) {
        handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "files");
        hard_kill(x, pl);
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
            epoll_watch(x, x->notify_fd);
        }
    }
    /* One listener per sandbox: the socket is done either way. */
    epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->notify_sock, NULL);
    close_fd(&x->notify_sock);
}

static void supervise_seccomp(fy_handle *h, struct lx *x) {
    struct pollfd pfd = {.fd = x->notify_fd, .events = POLLIN};
    while (poll(&pfd, 1, 0) > 0) {
        if (pfd.revents & (POLLHUP | POLLERR)) {
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->notify_fd, NULL);
            close_fd(&x->notify_fd);
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
        char name[96];
        fy_seccomp_syscall_name(req.data.arch, req.data.nr, name, sizeof(name));
        handle_end(h, END_VIOLATION, FY_STEP_SECCOMP, 0, "syscall %s", name);
        memset(&resp, 0, sizeof(resp));
        resp.id = req.id;
        resp.error = -EPERM;
        ioctl(x->notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        /* A denied dangerous call ends the attempt at once. */
        hard_kill(x, h->pr->plan);
    }
}

/* The end of a drained stream: closed, and said to a callback. */
static void end_stream(fy_handle *h, struct lx *x, int i) {
    epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->drain_rd[i], NULL);
    close_fd(&x->drain_rd[i]);
    const struct plan_stdio *s = &neutral(h)->stdio[i];
    if (s->mode == FY_STDIO_CALLBACK && s->fn)
        s->fn(s->userdata, (uint32_t)i, NULL, 0);
}

static void drain_output(fy_handle *h, struct lx *x, int i) {
    char buf[65536];
    const struct plan_stdio *s = &neutral(h)->stdio[i];
    /* A bounded number of reads per call: a workload that writes as fast
     * as we read cannot keep the host's loop here (the fd stays readable,
     * so the next fy_handle_process goes on). */
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n = read(x->drain_rd[i], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return; /* EAGAIN */
        if (n == 0) {
            end_stream(h, x, i);
            return;
        }
        size_t keep = (size_t)n;
        if (x->output_cap != FY_UNLIMITED && x->output_bytes + keep > x->output_cap) {
            keep = x->output_cap > x->output_bytes ? (size_t)(x->output_cap - x->output_bytes) : 0;
            if (!x->truncated) {
                x->truncated = true;
                handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output");
                hard_kill(x, h->pr->plan);
            }
        }
        if (s->mode == FY_STDIO_CALLBACK) {
            if (keep && s->fn)
                s->fn(s->userdata, (uint32_t)i, buf, keep);
            x->output_bytes += keep;
            x->stream_bytes[i] += keep;
            if (x->truncated) {
                /* Nothing more is delivered: the stream ends here. */
                end_stream(h, x, i);
                return;
            }
            continue;
        }
        size_t off = 0;
        while (off < keep) {
            ssize_t w = write(x->spool_fd[i], buf + off, keep - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                handle_end(h, END_INFRA, FY_STEP_OUTPUT, errno, "writing captured output: %s", strerror(errno));
                hard_kill(x, h->pr->plan);
                break;
            }
            off += (size_t)w;
        }
        x->output_bytes += keep;
        x->stream_bytes[i] += keep;
    }
}

static bool outputs_open(const struct lx *x) {
    for (int i = 1; i < 3; i++)
        if (x->drain_rd[i] >= 0)
            return true;
    return false;
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

/* Reports what this backend observed of the attempt, after cleaning up;
 * attempt.c decides the outcome and builds the result. */
static void finish(fy_handle *h, struct lx *x) {
    fy_result *r = result_new();
    if (!r)
        return; /* retried on the next call */
    struct attempt_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.t_cleanup_begin = fy_now_usec();
    const struct linux_plan *pl = h->pr->plan;
    if (pl->cg.enabled)
        cg_usage(&pl->cg, &x->cg, &x->usage); /* the final figures, OOM kills included */
    rep.isolation_json = fy_strdup(pl->isolation_json);
    rep.limits_json = fy_strdup(pl->cgroup_json);
    if (rep.isolation_json && pl->ll_handled && x->landlock_abi != pl->ll_abi) {
        /* Report what the sandbox says it enforced, not what was planned. */
        const char *key = strstr(rep.isolation_json, "\"landlock_abi\":");
        char abi[48];
        snprintf(abi, sizeof(abi), "\"landlock_abi\":%u", x->landlock_abi);
        if (key)
            splice_json(&rep.isolation_json, key, strcspn(key, ",}"), abi);
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
        if (x->err_step == FY_STEP_EXEC)
            rep.setup_detail = fy_asprintf("cannot execute %s: %s", pl->argv[0], strerror(x->err_errno));
        else if (op && op->kind == MK_BIND)
            rep.setup_detail = fy_asprintf("%s: %s /%s at %s: %s%s", fy_step_name(x->err_step),
                                           (op->flags & MF_DEVICE) ? "device" : "host path", op->src, op->dst,
                                           strerror(x->err_errno),
                                           x->err_errno == ELOOP ? " (a symbolic link in a workspace path is refused)"
                                                                 : "");
        else if (op)
            rep.setup_detail = fy_asprintf("%s: %s: %s", fy_step_name(x->err_step), op->dst, strerror(x->err_errno));
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
    rep.t_output_eof = x->t_eof;

    /* Output and usage, from the sandbox's own cgroup where it has one. */
    rep.output_bytes = x->output_bytes;
    rep.output_truncated = x->truncated;
    rep.output_limit = x->output_cap;
    for (int i = 1; i < 3; i++) {
        uint32_t mode = neutral(h)->stdio[i].mode;
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
    if (x->have_ru && !x->usage.have_cpu && !x->usage.have_memory) {
        /* No cgroup measured them: the rusage of the sandbox's pid 1, which
         * reaped every task. Its memory figure is the largest single
         * process, not the sandbox's total. */
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
        close_fd(&x->spool_fd[i]);
    close_fd(&x->notify_fd);
    close_fd(&x->sync_wr);
    remove_attempt_dir(x);
    if (pl->delay_stage == FY_STAGE_CLEANUP && pl->delay_usec)
        usleep((useconds_t)pl->delay_usec); /* qualification: attributed to cleanup */
    rep.left[FY_LEFT_FILES] = x->scratch_left ? 1 : 0;
    if (!rep.left[FY_LEFT_CGROUPS] && !x->scratch_left)
        forget_state(x); /* else the record stays for fy_gc */
    rep.t_cleanup_end = fy_now_usec();
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
            drain_output(h, x, i);
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
            x->t_reaped = fy_now_usec();
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->pidfd, NULL);
        }
    }
    uint64_t now = fy_now_usec();
    if (h->pr->plan && ((const struct linux_plan *)h->pr->plan)->cg.enabled && !x->reaped && now >= x->next_poll) {
        /* The cgroup says when a limit was hit; end the attempt at once. */
        const struct linux_plan *cpl = h->pr->plan;
        cg_usage(&cpl->cg, &x->cg, &x->usage);
        if (x->usage.oom_kills && h->end == END_NONE) {
            handle_end(h, END_OOM, FY_STEP_CGROUP_LIMIT, 0, "memory limit of %llu bytes",
                       (unsigned long long)cpl->cg.memory);
            hard_kill(x, cpl);
        } else if (x->usage.pids_max_events && h->end == END_NONE) {
            handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "pids");
            hard_kill(x, cpl);
        }
        x->next_poll = now + 100000;
    }
    const struct linux_plan *wpl = h->pr->plan;
    if (wpl->nwatch && !x->reaped && now >= x->next_watch) {
        check_disk(h, x, wpl);
        x->next_watch = now + 500000;
    }
    if (x->kill == KS_NONE && h->end == END_NONE && h->deadline && now >= h->deadline) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(neutral(h)->limit[FY_LIMIT_WALL_TIME] / 1000));
        lx_terminate(h);
    }
    if (x->kill == KS_SOFT && now >= x->grace_deadline)
        hard_kill(x, h->pr->plan);
    if (x->child_error && x->kill == KS_NONE)
        hard_kill(x, h->pr->plan); /* a failed setup leaves nothing half-built running */
    if (x->kill == KS_HARD && x->hard_deadline && now >= x->hard_deadline && !x->reaped) {
        fy_sys_pidfd_send_signal(x->pidfd, SIGKILL, NULL, 0);
        x->hard_deadline = 0;
    }
    if (x->reaped && !x->status_eof)
        read_status(h, x);
    arm_timer(h, x);
    if (!x->reaped || !x->status_eof || outputs_open(x))
        return 0;
    if (!x->t_eof) {
        const struct linux_plan *dpl = h->pr->plan;
        if (dpl->delay_stage == FY_STAGE_OUTPUT && dpl->delay_usec)
            usleep((useconds_t)dpl->delay_usec); /* qualification: attributed to output capture */
        x->t_eof = fy_now_usec();
    }
    if (wpl->nwatch && h->end == END_NONE)
        check_disk(h, x, wpl); /* what the last interval wrote counts too */
    finish(h, x);
    if (!h->result)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    return 1;
}

void lx_destroy(fy_handle *h) {
    struct lx *x = h->b;
    if (!x)
        return;
    if (!x->reaped) {
        hard_kill(x, h->pr->plan);
        reap_blocking(x, h->pr->plan);
    }
    if (cg_destroy(&((const struct linux_plan *)h->pr->plan)->cg, &x->cg) == 0) {
        remove_attempt_dir(x);
        if (!x->scratch_left)
            forget_state(x);
    }
    /* A host that never calls fy_gc must not accumulate what crashed
     * owners left (cgroups, scratch): the records of dead owners in our
     * state directory are destroyed here, after our result, off the
     * attempt's own path. Records of live owners are never touched; when
     * there is nothing to do this is one directory scan. */
    if (x->state_dir)
        (void)state_gc(x->state_dir, NULL, NULL);
    lx_free(x);
    h->b = NULL;
}

void lx_forget(fy_handle *h) {
    /* In a forked copy of the host: the fds are copies, closing them does not
     * affect the parent's sandbox; never signal it. */
    struct lx *x = h->b;
    if (x)
        x->reaped = true;
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

