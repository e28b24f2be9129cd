/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One attempt on macOS (Darwin only; never run on a Mac yet): a private
 * attempt directory holding the plan's scratch, generated files and
 * secrets; a child that lowers its rlimits, switches to the dedicated uid
 * when there is one, applies the attempt's Seatbelt profile with
 * sandbox_init and replaces itself with the workload through posix_spawn
 * (POSIX_SPAWN_SETEXEC: a new process group, default signals, and every fd
 * but the three streams closed, since Seatbelt checks a file only when it
 * is opened); kqueue EVFILT_PROC to learn of the exit; the whole group (and
 * with a dedicated uid every process of it) killed and the directory
 * removed at the end, what was left counted in the result. */
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <limits.h>
#include <pwd.h>
#include <sandbox.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/event.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysctl.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apple-darwin.h"

/* What the child reports when it could not execute the workload. */
struct child_err {
    uint32_t step;
    int32_t err;
    char what[200];
};

struct apple_run {
    pid_t pid;                  /* the workload, leader of its own process group */
    int kq;                     /* EVFILT_PROC NOTE_EXIT on pid: the handle's fd */
    bool exited;                /* NOTE_EXIT seen: a zombie that still holds pid and its group */
    bool reaped, finished, have_status;
    bool dedicated;             /* runs as uid/gid, a slot of the plan's id range held by uid_lock */
    uint32_t uid, gid;
    int uid_lock;
    int wstatus;
    struct rusage ru;
    char attempt[PATH_MAX];     /* resolved; "" when not made */
    int host_end[3];            /* FY_STDIO_PIPE: the host's end */
    uint64_t t_exec, t_exit, hard_kill_at;
    uint64_t left_procs;        /* alive after the final kill */
    size_t profile_bytes;
    struct child_err setup;     /* setup.step != 0: the child failed before the workload ran */
};

static void close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static const struct apple_plan *plan_of(const fy_handle *h) { return h->pr->plan; }

/* ---- the attempt directory ---- */

static int mkdirs(const char *path, mode_t mode) {
    char p[PATH_MAX];
    if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
        return -ENAMETOOLONG;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return -errno;
        *s = '/';
    }
    if (mkdir(p, mode) < 0 && errno != EEXIST)
        return -errno;
    return chmod(p, mode) < 0 ? -errno : 0;
}

static int write_file(const char *path, const void *data, size_t len, mode_t mode, const struct apple_run *x) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        int r = mkdirs(dir, 0755);
        if (r < 0)
            return r;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            return -e;
        }
        p += n;
        len -= (size_t)n;
    }
    if (x->dedicated && fchown(fd, x->uid, x->gid) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return close(fd) < 0 ? -errno : 0;
}

/* Removes the attempt directory; false when something stayed. */
static bool remove_tree(const char *dir) {
    char *const paths[] = {(char *)dir, NULL};
    FTS *fts = fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL);
    if (!fts)
        return false;
    bool ok = true;
    for (FTSENT *e; (e = fts_read(fts));) {
        switch (e->fts_info) {
        case FTS_D:
            chmod(e->fts_path, 0700); /* a workload may have made it unreadable */
            break;
        case FTS_DP:
            ok = (rmdir(e->fts_path) == 0 || errno == ENOENT) && ok;
            break;
        case FTS_DNR: case FTS_ERR: case FTS_NS:
            ok = false;
            break;
        default:
            ok = (unlink(e->fts_path) == 0 || errno == ENOENT) && ok;
        }
    }
    fts_close(fts);
    struct stat st;
    return ok && lstat(dir, &st) < 0 && errno == ENOENT;
}

/* Where attempt directories go: the plan's state directory, else the
 * caller's own temporary directory (root's with a dedicated uid is
 * /private/tmp, which the uid can traverse). */
static int attempt_base(const struct apple_plan *ap, char *out, size_t outlen) {
    const struct fy_plan *np = ap->np;
    if (np->state_dir)
        return snprintf(out, outlen, "%s", np->state_dir) < (int)outlen ? 0 : -ENAMETOOLONG;
    if (!ap->dedicated_uid) {
        size_t n = confstr(_CS_DARWIN_USER_TEMP_DIR, out, outlen);
        if (n > 0 && n <= outlen)
            return 0;
    }
    return snprintf(out, outlen, "/private/tmp") < (int)outlen ? 0 : -ENAMETOOLONG;
}

static int setup_err(fy_error **reterr, int e, uint32_t step, const char *what, const char *path) {
    return err_set(reterr, err_from_errno(e), step, e, NULL, "%s %s: %s", what, path, strerror(e));
}

/* The attempt directory with the plan's scratch, generated files and
 * secrets under fs/, and the plan's host paths checked. */
static int make_attempt(struct apple_run *x, const struct apple_plan *ap, fy_error **reterr) {
    const struct fy_plan *np = ap->np;
    char base[PATH_MAX], tmpl[PATH_MAX], path[PATH_MAX];
    int r = attempt_base(ap, base, sizeof(base));
    if (r < 0 || snprintf(tmpl, sizeof(tmpl), "%s/forgeyard-XXXXXXXXXXXX", base) >= (int)sizeof(tmpl))
        return err_set(reterr, FY_E_INVAL, FY_STEP_SPAWN, ENAMETOOLONG, NULL, "attempt directory name too long");
    if (!mkdtemp(tmpl))
        return setup_err(reterr, errno, FY_STEP_SPAWN, "mkdtemp", tmpl);
    /* Seatbelt matches resolved paths: the profile names the real one. */
    if (!realpath(tmpl, x->attempt)) {
        int e = errno;
        rmdir(tmpl);
        return setup_err(reterr, e, FY_STEP_SPAWN, "realpath", tmpl);
    }
    if (chmod(x->attempt, ap->dedicated_uid ? 0711 : 0700) < 0)
        return setup_err(reterr, errno, FY_STEP_SPAWN, "chmod", x->attempt);
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        snprintf(path, sizeof(path), "%s/fs%s", x->attempt, e->target);
        if (e->kind == PE_TMPFS && e->role != PR_DEV) {
            if ((r = mkdirs(path, e->mode)) < 0)
                return setup_err(reterr, -r, FY_STEP_MOUNT, "mkdir", path);
            if (x->dedicated && (e->flags & PLAN_OWNED) && chown(path, x->uid, x->gid) < 0)
                return setup_err(reterr, errno, FY_STEP_MOUNT, "chown", path);
        } else if (e->kind == PE_FILE) {
            if ((r = write_file(path, e->content, strlen(e->content), e->mode, x)) < 0)
                return setup_err(reterr, -r, FY_STEP_MOUNT, "write", path);
        } else if (e->kind == PE_HOST) {
            struct stat st;
            if (lstat(e->host, &st) < 0) {
                /* optional paths, and the minimal device set's nodes macOS
                 * lacks (/dev/full): left out (their rules match nothing) */
                if (((e->flags & PLAN_OPTIONAL) || e->role == PR_DEV) && errno == ENOENT)
                    continue;
                return setup_err(reterr, errno, FY_STEP_MOUNT, "host path", e->host);
            }
            if ((e->flags & PLAN_DIR) && !S_ISDIR(st.st_mode))
                return setup_err(reterr, ENOTDIR, FY_STEP_MOUNT, "host path", e->host);
            /* A workspace path is never reached through a symbolic link:
             * the resolved path must be the one the profile names. */
            char real[PATH_MAX], canon[PATH_MAX];
            if ((e->flags & PLAN_WORKSPACE) &&
                (!realpath(e->host, real) || sbpl_canonical_path(e->host, canon, sizeof(canon)) < 0 ||
                 strcmp(real, canon) != 0))
                return err_set(reterr, FY_E_POLICY, FY_STEP_MOUNT, ELOOP, NULL,
                               "%s is reached through a symbolic link; give its resolved path", e->host);
        }
    }
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *s = &np->secrets[i];
        if (s->delivery != FY_SECRET_FILE)
            continue;
        snprintf(path, sizeof(path), "%s/fs/run/secrets/%s", x->attempt, s->target);
        if ((r = write_file(path, s->value, s->len, 0400, x)) < 0)
            return setup_err(reterr, -r, FY_STEP_SECRET, "write", path);
    }
    return 0;
}

/* ---- the process group ---- */

/* Sends sig to every live process of the group (and of the dedicated uid);
 * returns how many there were. */
static size_t signal_tree(struct apple_run *x, int sig) {
    if (x->pid <= 0)
        return 0;
    kill(-x->pid, sig);
    size_t live = 0;
    int which[2] = {KERN_PROC_PGRP, KERN_PROC_UID};
    int arg[2] = {x->pid, (int)x->uid};
    for (int w = 0; w < (x->dedicated ? 2 : 1); w++) {
        int mib[4] = {CTL_KERN, KERN_PROC, which[w], arg[w]};
        size_t len = 0;
        if (sysctl(mib, 4, NULL, &len, NULL, 0) < 0 || len == 0)
            continue;
        len += 16 * sizeof(struct kinfo_proc); /* it may grow meanwhile */
        struct kinfo_proc *kp = malloc(len);
        if (!kp || sysctl(mib, 4, kp, &len, NULL, 0) < 0) {
            free(kp);
            live++; /* unknown: assume something is there */
            continue;
        }
        for (size_t i = 0; i < len / sizeof(*kp); i++) {
            if (kp[i].kp_proc.p_stat == SZOMB)
                continue;
            kill(kp[i].kp_proc.p_pid, sig);
            live++;
        }
        free(kp);
    }
    return live;
}

/* SIGKILL until nothing of the tree is left but the unreaped leader, whose
 * zombie keeps the group's id from being reused meanwhile (bounded: 1 s);
 * how many were still alive. */
static uint64_t kill_tree(struct apple_run *x) {
    size_t live = 0;
    for (int round = 0; round < 200; round++) {
        if ((live = signal_tree(x, SIGKILL)) == 0)
            break;
        usleep(5000);
    }
    return live;
}

/* A uid of the plan's range no other attempt of this host holds: a lock
 * (flock, released when the holder dies) per uid. */
#define UID_LOCK_DIR "/private/var/run/forgeyard-uids"
static int take_uid(struct apple_run *x, const struct apple_plan *ap, fy_error **reterr) {
    const struct fy_plan *np = ap->np;
    if (mkdir(UID_LOCK_DIR, 0700) < 0 && errno != EEXIST)
        return setup_err(reterr, errno, FY_STEP_UID_MAP, "mkdir", UID_LOCK_DIR);
    uint32_t n = np->id_count < 4096 ? np->id_count : 4096;
    for (uint32_t i = 0; i < n; i++) {
        char path[128];
        snprintf(path, sizeof(path), UID_LOCK_DIR "/%u", np->id_first + i);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return setup_err(reterr, errno, FY_STEP_UID_MAP, "open", path);
        /* Never a uid an account of this Mac has: its processes would be
         * killed with the attempt's. */
        if (getpwuid(np->id_first + i) == NULL && flock(fd, LOCK_EX | LOCK_NB) == 0) {
            x->uid_lock = fd;
            x->uid = x->gid = np->id_first + i;
            x->dedicated = true;
            return 0;
        }
        close(fd);
    }
    return err_set(reterr, FY_E_INFRA, FY_STEP_UID_MAP, 0, "$.process.id_range",
                   "every uid of the range %u..%u is in use by another attempt", np->id_first, np->id_first + n - 1);
}

/* ---- start ---- */

static int rlimit_resource(uint32_t limit) {
    switch (limit) {
    case FY_LIMIT_NOFILE: return RLIMIT_NOFILE;
    case FY_LIMIT_FSIZE: return RLIMIT_FSIZE;
    case FY_LIMIT_STACK: return RLIMIT_STACK;
    default: return RLIMIT_CORE;
    }
}

/* The child, after fork: only what the report pipe needs to say how it
 * failed; the workload replaces it on success. */
static void child(const struct apple_plan *ap, const struct apple_run *x, const char *profile, const char *exe,
                  char *const *argv, char *const *envp, const posix_spawn_file_actions_t *fa,
                  const posix_spawnattr_t *attr, int report) {
    struct child_err ce = {0};
    (void)umask(022); /* the sandbox's own, never the host's (forgeyard-sandbox(7)) */
    if (setpgid(0, 0) < 0) {
        ce = (struct child_err){FY_STEP_SPAWN, errno, "setpgid"};
        goto fail;
    }
    for (size_t i = 0; i < ap->nrlimits; i++) {
        uint64_t v = ap->rlimits[i].value;
        if (v == FY_UNLIMITED)
            continue; /* not limited by the plan: the host's own limit stays (macOS refuses raising some) */
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)v;
        if (setrlimit(rlimit_resource(ap->rlimits[i].limit), &rl) < 0) {
            ce = (struct child_err){FY_STEP_RLIMIT, errno, "setrlimit"};
            goto fail;
        }
    }
    if (x->dedicated) {
        if (setgroups(0, NULL) < 0 || setgid(x->gid) < 0 || setuid(x->uid) < 0 || setuid(0) == 0) {
            ce = (struct child_err){FY_STEP_CAPS, errno, "switching to the dedicated uid"};
            goto fail;
        }
    }
    char *err = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    if (sandbox_init(profile, 0, &err) != 0) {
        ce = (struct child_err){FY_STEP_SPAWN, EPERM, ""};
        snprintf(ce.what, sizeof(ce.what), "sandbox_init: %s", err ? err : "refused the profile");
        goto fail;
    }
#pragma GCC diagnostic pop
    pid_t self;
    int r = posix_spawn(&self, exe, fa, attr, argv, envp); /* POSIX_SPAWN_SETEXEC: returns only on failure */
    ce = (struct child_err){FY_STEP_EXEC, r, ""};
    snprintf(ce.what, sizeof(ce.what), "executing %s", exe);
fail:
    if (write(report, &ce, sizeof(ce)) < 0) {
        /* the parent sees EOF without a report and says so */
    }
    _exit(127);
}

/* argv[0] as the workload's PATH finds it (the host's files: Seatbelt
 * remaps nothing); argv[0] itself when nothing matches (exec then fails
 * with ENOENT, reported as the result). */
static char *find_exe(const struct fy_plan *np) {
    const char *a0 = np->argv[0];
    if (strchr(a0, '/'))
        return util_strdup(a0);
    char *copy = util_strdup(np->path_search ? np->path_search : "/usr/bin:/bin");
    char *found = NULL;
    for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *p = util_asprintf("%s/%s", dir, a0);
        if (p && access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found ? found : util_strdup(a0);
}

static void free_env(char **env) {
    for (size_t i = 0; env && env[i]; i++)
        util_bzero(env[i], strlen(env[i]));
    apple_env_free(env);
}

/* The environment with the ENV secrets (freed and wiped by free_env); NULL
 * on OOM or a secret an environment cannot carry (a NUL byte). */
static char **full_env(const struct fy_plan *np, const char *attempt) {
    char **base = apple_env(np, attempt);
    if (!base)
        return NULL;
    size_t n = 0;
    while (base[n])
        n++;
    char **env = realloc(base, (n + np->nsecrets + 1) * sizeof(char *));
    if (!env) {
        apple_env_free(base);
        return NULL;
    }
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *s = &np->secrets[i];
        if (s->delivery != FY_SECRET_ENV)
            continue;
        if (memchr(s->value, '\0', s->len) || !(env[n] = malloc(strlen(s->target) + 1 + s->len + 1))) {
            env[n] = NULL;
            free_env(env); /* no attempt runs without one of its secrets */
            return NULL;
        }
        snprintf(env[n], strlen(s->target) + 2, "%s=", s->target);
        memcpy(env[n] + strlen(s->target) + 1, s->value, s->len);
        env[n][strlen(s->target) + 1 + s->len] = '\0';
        n++;
    }
    env[n] = NULL;
    return env;
}

int apple_start(fy_handle *h, fy_error **reterr) {
    const struct apple_plan *ap = plan_of(h);
    const struct fy_plan *np = ap->np;
    struct apple_run *x = calloc(1, sizeof(*x));
    if (!x)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    x->kq = -1;
    x->uid_lock = -1;
    x->host_end[0] = x->host_end[1] = x->host_end[2] = -1;
    h->b = x;
    int child_fd[3] = {-1, -1, -1}, report[2] = {-1, -1};
    char *profile = NULL, *exe = NULL, *workdir = NULL, **envp = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    bool fa_made = false, attr_made = false;
    int r = ap->dedicated_uid ? take_uid(x, ap, reterr) : 0;
    if (r < 0 || (r = make_attempt(x, ap, reterr)) < 0)
        goto fail;
    if ((r = apple_profile(ap, x->attempt, &profile, reterr)) < 0)
        goto fail;
    x->profile_bytes = strlen(profile);
    exe = find_exe(np);
    envp = full_env(np, x->attempt);
    workdir = apple_host_path(np, x->attempt, np->workdir);
    if (!workdir)
        workdir = util_asprintf("%s/fs", x->attempt);
    if (!exe || !envp || !workdir) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL,
                    "out of memory (or an environment secret holding a NUL byte)");
        goto fail;
    }
    for (int i = 0; i < 3; i++) {
        const struct plan_stdio *s = &np->stdio[i];
        if (s->mode == FY_STDIO_FD) {
            child_fd[i] = fcntl(s->fd, F_DUPFD_CLOEXEC, 3);
        } else if (s->mode == FY_STDIO_PIPE) {
            int p[2];
            if (pipe(p) < 0)
                goto os_fail;
            x->host_end[i] = i == 0 ? p[1] : p[0];
            child_fd[i] = i == 0 ? p[0] : p[1];
            fcntl(p[0], F_SETFD, FD_CLOEXEC);
            fcntl(p[1], F_SETFD, FD_CLOEXEC);
            fcntl(x->host_end[i], F_SETFL, O_NONBLOCK);
        } else {
            child_fd[i] = open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
        }
        if (child_fd[i] < 0)
            goto os_fail;
    }
    if (pipe(report) < 0 || fcntl(report[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(report[1], F_SETFD, FD_CLOEXEC) < 0)
        goto os_fail;
    /* Everything the child needs is made before fork (no allocation after). */
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    if ((errno = posix_spawn_file_actions_init(&fa)) != 0)
        goto os_fail;
    fa_made = true;
    if ((errno = posix_spawnattr_init(&attr)) != 0)
        goto os_fail;
    attr_made = true;
    for (int i = 0; i < 3; i++)
        if ((errno = posix_spawn_file_actions_adddup2(&fa, child_fd[i], i)) != 0)
            goto os_fail;
    if ((errno = posix_spawn_file_actions_addchdir_np(&fa, workdir)) != 0 ||
        (errno = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETEXEC | POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                                     POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_CLOEXEC_DEFAULT)) != 0 ||
        (errno = posix_spawnattr_setpgroup(&attr, 0)) != 0 || (errno = posix_spawnattr_setsigdefault(&attr, &all)) != 0 ||
        (errno = posix_spawnattr_setsigmask(&attr, &none)) != 0)
        goto os_fail;
    x->pid = fork();
    if (x->pid < 0)
        goto os_fail;
    if (x->pid == 0)
        child(ap, x, profile, exe, np->argv, envp, &fa, &attr, report[1]);
    setpgid(x->pid, x->pid); /* also here: a kill of the group never misses it */
    close_fd(&report[1]);
    for (int i = 0; i < 3; i++)
        close_fd(&child_fd[i]);
    /* EOF: the workload was executed (the pipe closed on exec); a report:
     * it was not, and why. */
    ssize_t n;
    while ((n = read(report[0], &x->setup, sizeof(x->setup))) < 0 && errno == EINTR) {
    }
    close_fd(&report[0]);
    if (n != (ssize_t)sizeof(x->setup))
        memset(&x->setup, 0, sizeof(x->setup));
    x->setup.what[sizeof(x->setup.what) - 1] = '\0';
    x->t_exec = util_now_usec();
    x->kq = kqueue();
    if (x->kq < 0)
        goto os_fail_started;
    fcntl(x->kq, F_SETFD, FD_CLOEXEC);
    struct kevent kev;
    EV_SET(&kev, x->pid, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, NULL);
    if (kevent(x->kq, &kev, 1, NULL, 0, NULL) < 0) {
        if (errno != ESRCH)
            goto os_fail_started;
        x->exited = true; /* already a zombie: no event will come */
    }
    r = 0;
    goto out;
os_fail_started:
    r = err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "kqueue: %s", strerror(errno));
    goto fail;
os_fail:
    r = err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "starting the workload: %s",
                strerror(errno));
fail:
    apple_destroy(h);
out:
    for (int i = 0; i < 3; i++)
        close_fd(&child_fd[i]);
    close_fd(&report[0]);
    close_fd(&report[1]);
    if (fa_made)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_made)
        posix_spawnattr_destroy(&attr);
    free(profile);
    free(exe);
    free(workdir);
    free_env(envp);
    return r;
}

/* ---- running ---- */

static void finish(fy_handle *h, struct apple_run *x) {
    fy_result *res = result_new();
    if (!res)
        return; /* retried on the next process() */
    struct attempt_report rep = {0};
    rep.t_cleanup_begin = util_now_usec();
    /* The tree was killed before the leader was reaped; only where the
     * host reaped it (no zombie held the group's id) is it killed now. */
    if (!x->exited)
        x->left_procs = kill_tree(x);
    rep.left[FY_LEFT_PROCESSES] = x->left_procs;
    if (x->attempt[0]) {
        rep.left[FY_LEFT_FILES] = remove_tree(x->attempt) ? 0 : 1;
        x->attempt[0] = '\0';
    }
    rep.t_cleanup_end = util_now_usec();
    rep.exit_seen = x->have_status && !x->setup.step;
    rep.wstatus = x->wstatus;
    if (x->setup.step) {
        rep.setup_failed = true;
        rep.setup_step = x->setup.step;
        rep.setup_errno = x->setup.err;
        rep.setup_detail = util_asprintf("%s: %s", x->setup.what, strerror(x->setup.err));
    }
    rep.t_exec = x->t_exec;
    rep.t_exit = x->t_exit;
    rep.t_ended = x->t_exit;
    rep.usage_known = (1u << FY_USAGE_CPU_USER_USEC) | (1u << FY_USAGE_CPU_SYSTEM_USEC);
    rep.usage[FY_USAGE_CPU_USER_USEC] = (uint64_t)x->ru.ru_utime.tv_sec * 1000000u + (uint64_t)x->ru.ru_utime.tv_usec;
    rep.usage[FY_USAGE_CPU_SYSTEM_USEC] = (uint64_t)x->ru.ru_stime.tv_sec * 1000000u + (uint64_t)x->ru.ru_stime.tv_usec;
    rep.usage_source = "rusage";
    rep.isolation_json = util_asprintf("{\"mechanism\":\"seatbelt\",\"profile_bytes\":%zu,\"identity\":\"%s\","
                                       "\"namespaces\":\"unavailable\",\"darwin_verified\":false}",
                                       x->profile_bytes, x->dedicated ? "dedicated-uid" : "caller-uid");
    x->finished = true;
    attempt_finish(h, &rep, res);
}

int apple_process(fy_handle *h, fy_error **reterr) {
    struct apple_run *x = h->b;
    if (x->finished)
        return 1;
    uint64_t now = util_now_usec();
    if (!x->reaped && h->deadline && now >= h->deadline && h->end == END_NONE) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(plan_of(h)->np->limit[FY_LIMIT_WALL_TIME] / 1000));
        apple_terminate(h);
    }
    if (!x->reaped && x->hard_kill_at && now >= x->hard_kill_at) {
        signal_tree(x, SIGKILL);
        x->hard_kill_at = 0;
    }
    struct kevent ev;
    struct timespec zero = {0, 0};
    while (x->kq >= 0 && kevent(x->kq, NULL, 0, &ev, 1, &zero) > 0)
        if (ev.filter == EVFILT_PROC && ev.ident == (uintptr_t)x->pid && (ev.fflags & NOTE_EXIT))
            x->exited = true;
    if (!x->exited && !x->reaped) {
        /* A host that reaps every child itself (SIGCHLD handler) takes the
         * status: ECHILD ends the attempt without one. */
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)x->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
            x->reaped = true;
        else if (si.si_pid == x->pid)
            x->exited = true;
    }
    if (!x->exited && !x->reaped)
        return 0;
    if (!x->t_exit)
        x->t_exit = util_now_usec();
    if (!x->reaped) {
        /* The leader is a zombie: its group id cannot be reused until it is
         * reaped, so the rest of the tree is killed first. */
        x->left_procs = kill_tree(x);
        pid_t r;
        while ((r = wait4(x->pid, &x->wstatus, 0, &x->ru)) < 0 && errno == EINTR) {
        }
        x->reaped = true;
        x->have_status = r == x->pid;
    }
    finish(h, x);
    return x->finished ? 1 : 0;
}

void apple_terminate(fy_handle *h) {
    struct apple_run *x = h->b;
    if (!x || x->reaped || x->hard_kill_at)
        return;
    if (!h->cancel_started)
        h->cancel_started = util_now_usec();
    signal_tree(x, SIGTERM);
    uint64_t grace = plan_of(h)->np->limit[FY_LIMIT_GRACE];
    x->hard_kill_at = util_now_usec() + (grace == FY_UNLIMITED ? 10 * 1000000u : grace);
    if (x->hard_kill_at == 0)
        x->hard_kill_at = 1;
}

static void run_free(struct apple_run *x) {
    close_fd(&x->kq);
    close_fd(&x->uid_lock);
    for (int i = 0; i < 3; i++)
        close_fd(&x->host_end[i]);
    free(x);
}

void apple_destroy(fy_handle *h) {
    struct apple_run *x = h->b;
    if (!x)
        return;
    if (!x->finished) {
        kill_tree(x);
        if (!x->reaped && x->pid > 0 && wait4(x->pid, &x->wstatus, 0, &x->ru) == x->pid)
            x->reaped = true;
        if (x->attempt[0])
            remove_tree(x->attempt);
    }
    run_free(x);
    h->b = NULL;
}

void apple_forget(fy_handle *h) {
    /* A forked copy of the host: release memory; never signal the parent's
     * workload or remove its directory. */
    if (h->b)
        run_free(h->b);
    h->b = NULL;
}

int apple_get_fd(fy_handle *h) { return ((struct apple_run *)h->b)->kq; }

int apple_stdio_fd(fy_handle *h, uint32_t stream) {
    struct apple_run *x = h->b;
    int fd = x->host_end[stream];
    if (fd < 0)
        return FY_E_STATE;
    if (stream == FY_STDIN) /* handed over: the caller closes it to send EOF */
        x->host_end[FY_STDIN] = -1;
    return fd;
}

uint64_t apple_next_deadline(fy_handle *h) {
    struct apple_run *x = h->b;
    uint64_t d = x->reaped ? 0 : h->deadline;
    if (x->hard_kill_at && (!d || x->hard_kill_at < d))
        d = x->hard_kill_at;
    return d;
}
