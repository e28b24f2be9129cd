/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An action attempt: the policy for it, the execution root, the sandbox
 * (through the public lifecycle, whichever backend the policy gets), the
 * collected outputs and the ActionResult record. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "action.h"
#include "os.h"
#include "prepared.h"

struct fy_action_attempt {
    int origin_pid;
    const fy_action *action;   /* = own */
    fy_action *own;            /* a private copy: the caller may free or change its action */
    char *dir;                 /* the attempt's private directory (0700) */
    int dirfd, rootfd;         /* it, and the execution root in it */
    char rootname[40];         /* the execution root's name: random */
    char workname[48];         /* overlayfs's work directory beside it */
    int lowerfd;               /* the input directory, the overlay's lower (-1: materialised) */
    bool overlay;              /* the execution root is an overlay's upper (the backend mounts it) */
    bool cache_open;
    bool cache_unchecked;      /* the archive's cache entry is in use before its check (beside) */
    struct act_cache cache;    /* an archive's unpacked tree (its lock held for the attempt) */
    fy_prepared *prepared;
    fy_handle *handle;
    struct pathset inputs;
    struct pathset skeleton;   /* the skeleton's directories (the verdict beside the attempt) */
    struct tree_ids ids;       /* whose readability the input walk judges */
    struct tree_stats stats;
    char *digest;
    uint64_t input_usec;
    bool finished;
    /* The verdict's walk beside the attempt (fy_action_run only: see
     * speculative). */
    pthread_t walker;
    bool walker_running;
    /* The walker runs at SCHED_IDLE where its priority can be given back
     * (walker_idle), one thread, on the CPU the attempt leaves free; the
     * joiner gives it back (released) before waiting, and the walker does
     * not end until released, so that walker_tid is still its own. */
    pthread_mutex_t walk_mu;
    pthread_cond_t walk_cv;
    pid_t walker_tid;
    bool walker_idle, walk_done, walk_released;
    _Atomic(fy_handle *) walk_handle; /* published once started: the walker cancels it */
    atomic_bool walk_failed;
    bool walk_ok;
    int walk_r;
    fy_error *walk_err;
    struct tree_stats walk_stats;
    uint64_t walk_usec;
};

struct fy_action_result {
    int origin_pid;
    int outcome, exit_code;
    char *detail;
    fy_result *sandbox;
    char *json;
};

static int oom(fy_error **reterr, uint32_t step) {
    return err_set(reterr, FY_E_NOMEM, step, 0, NULL, "out of memory");
}

static int apply_properties(const fy_action *a, fy_policy *p, fy_error **reterr) {
    VEC_EACH(&a->props, struct act_kv, kv) {
        int r = fy_policy_set_platform_property(p, kv->name, kv->value, reterr);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The policy of the attempt: the host's, with the action's command,
 * environment and workspace, and stricter where the action asks. */
static int action_policy(const fy_action *a, const fy_policy *host, const char *exec, const char *spool,
                         fy_policy **ret, fy_error **reterr) {
    fy_policy *p = policy_dup(host);
    if (!p)
        return oom(reterr, FY_STEP_PREPARE);
    int r = apply_properties(a, p, reterr);
    /* Exactly the declared environment. */
    VEC_EACH(&p->env_set, struct pol_env, e) {
        free(e->name);
        free(e->value);
    }
    p->env_set.n = 0;
    VEC_EACH(&p->env_allow, char *, s) free(*s);
    p->env_allow.n = 0;
    p->env_exact = true;
    VEC_EACH(&a->env, struct act_kv, kv)
        if (r >= 0 && policy_add_env(p, kv->name, kv->value) < 0)
            r = oom(reterr, FY_STEP_PREPARE);
    /* The workspace: the execution root is the build directory; no source
     * or output directory of the host's. */
    free(p->source);
    free(p->output);
    free(p->build);
    free(p->workdir);
    p->source = p->output = NULL;
    p->source_writable = false;
    p->build = util_strdup(exec);
    p->build_is_exec_root = true;
    p->workdir = a->workdir[0] ? util_asprintf("/work/build/%s", a->workdir) : util_strdup("/work/build");
    if (r >= 0 && (!p->build || !p->workdir))
        r = oom(reterr, FY_STEP_PREPARE);
    /* stdin from nothing, stdout and stderr spooled for their digests. */
    for (int i = 0; i < 3; i++) {
        if (p->stdio[i].fd >= 0)
            close(p->stdio[i].fd);
        free(p->stdio[i].path);
        p->stdio[i] = (struct pol_stdio){FY_STDIO_NULL, -1, NULL, NULL, NULL};
    }
    for (int i = 1; r >= 0 && i < 3; i++) {
        p->stdio[i].mode = FY_STDIO_FILE;
        if (!(p->stdio[i].path = util_asprintf("%s/%s", spool, i == 1 ? "stdout" : "stderr")))
            r = oom(reterr, FY_STEP_PREPARE);
    }
    if (r < 0) {
        policy_destroy(p);
        return r;
    }
    *ret = p;
    return 0;
}

/* ---- the attempt ---- */

static uint64_t remove_attempt_dir(fy_action_attempt *t) {
    uint64_t left = 0;
    if (t->lowerfd >= 0) {
        close(t->lowerfd);
        t->lowerfd = -1;
    }
    if (t->rootfd >= 0) {
        close(t->rootfd);
        t->rootfd = -1;
    }
    if (t->dirfd >= 0) {
        left += tree_remove_below(t->dirfd);
        close(t->dirfd);
        t->dirfd = -1;
    }
    if (t->dir) {
        if (rmdir(t->dir) < 0 && errno != ENOENT)
            left++;
        free(t->dir);
        t->dir = NULL;
    }
    return left;
}

static void join_walker(fy_action_attempt *t);

void fy_action_attempt_free(fy_action_attempt *t) {
    if (!t)
        return;
    if (t->origin_pid == util_getpid()) {
        join_walker(t);
        pthread_cond_destroy(&t->walk_cv);
        pthread_mutex_destroy(&t->walk_mu);
    }
    fy_error_free(t->walk_err);
    if (t->origin_pid == util_getpid()) {
        fy_handle_free(t->handle);   /* kills and reaps a running sandbox */
        fy_prepared_free(t->prepared);
        remove_attempt_dir(t);
    } else {
        /* inherited through a fork: the parent owns the sandbox and the files */
        fy_handle_free(t->handle);
        fy_prepared_free(t->prepared);
        if (t->rootfd >= 0)
            close(t->rootfd);
        if (t->dirfd >= 0)
            close(t->dirfd);
        if (t->lowerfd >= 0)
            close(t->lowerfd);
        free(t->dir);
    }
    if (t->cache_open)
        action_cache_close(&t->cache);
    pathset_free(&t->inputs);
    pathset_free(&t->skeleton);
    tree_ids_free(&t->ids);
    fy_action_free(t->own);
    free(t->digest);
    free(t);
}

/* Whether the sandbox's ids can search every directory above path (the
 * sandbox opens an overlay's lower with them), by mode bits or ACL. */
static bool ancestors_searchable(const struct tree_ids *ids, const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return false;
    for (char *slash = strrchr(buf, '/'); slash; slash = strrchr(buf, '/')) {
        *slash = '\0';
        struct stat st;
        const char *dir = buf[0] ? buf : "/";
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || !tree_ids_grant(ids, AT_FDCWD, dir, &st, 1))
            return false;
        if (!buf[0])
            break;
    }
    return true;
}

/* The overlay path, asked for before fy_prepare, once the lower (fd
 * t->lowerfd, the host path lower) can be offered: the policy's
 * build_lower and build_work. The backend then says whether it mounts it. */
static int offer_overlay(fy_action_attempt *t, fy_policy *p, const char *lower, bool check_ancestors,
                         fy_error **reterr) {
    /* overlayfs keeps its whiteouts and opaque marks in user xattrs of the
     * upper: the scratch directory's file system must take them. */
    bool xattrs = fsetxattr(t->rootfd, "user.forgeyard.probe", "1", 1, 0) == 0 &&
                  fremovexattr(t->rootfd, "user.forgeyard.probe") == 0;
    char *real = xattrs ? realpath(lower, NULL) : NULL;
    struct stat st;
    if (!real || fstat(t->lowerfd, &st) < 0 || (check_ancestors && !ancestors_searchable(&t->ids, real))) {
        free(real);
        return 0;
    }
    p->build_lower = real;
    p->build_lower_dev = (uint64_t)st.st_dev;
    p->build_lower_ino = (uint64_t)st.st_ino;
    if (!(p->build_work = util_asprintf("%s/%s", t->dir, t->workname)))
        return oom(reterr, FY_STEP_PREPARE);
    return 0;
}

/* A directory input: opened and offered as the lower before fy_prepare;
 * walked (check_lower) once the sandbox's ids are known. */
static int ask_overlay(fy_action_attempt *t, fy_policy *p, fy_error **reterr) {
    const fy_action *a = t->action;
    if ((t->lowerfd = open(a->input, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return err_set(reterr, errno == ENOENT ? FY_E_NOTFOUND : FY_E_IO, FY_STEP_INPUT, errno, a->input,
                       "cannot open the input root: %s", strerror(errno));
    return offer_overlay(t, p, a->input, false, reterr);
}

/* The walk of a directory input (what tree_materialise would refuse is
 * refused here), judged for the workload's own host ids: *ok when they
 * reach every entry and every directory above the input. */
static int check_lower(fy_action_attempt *t, unsigned threads, struct tree_stats *stats, struct pathset *dirs, bool *ok,
                       fy_error **reterr) {
    const fy_action *a = t->action;
    *ok = false;
    int r = tree_scan_lower(a, t->lowerfd, &t->ids, threads, stats, dirs, ok, NULL, reterr);
    if (r >= 0 && *ok) {
        char *real = realpath(a->input, NULL);
        struct stat s1, s2;
        /* still the directory walked */
        *ok = real && stat(real, &s1) == 0 && fstat(t->lowerfd, &s2) == 0 && s1.st_dev == s2.st_dev &&
              s1.st_ino == s2.st_ino && ancestors_searchable(&t->ids, real);
        free(real);
    }
    return r;
}

/* An archive: its tree from the cache (made there if missing or refused),
 * then as a directory input. No cache here: unpacked per attempt. */
static int ask_cache(fy_action_attempt *t, fy_policy *p, struct pathset *dirs, bool beside, fy_error **reterr) {
    int r = action_cache_open(t->action, &t->cache, reterr);
    t->cache_open = true;
    if (r < 0 || !t->cache.dir)
        return r;
    if (beside && !p->test_no_build_overlay && (r = action_cache_entry_unchecked(&t->cache)) <= 0) {
        /* A published entry, used at once: its check (the walk it gets
         * anyway) may then run beside the attempt, as a directory's. */
        if (r < 0)
            return oom(reterr, FY_STEP_INPUT);
        t->cache_unchecked = true;
        if ((t->lowerfd = fcntl(t->cache.entry, F_DUPFD_CLOEXEC, 3)) < 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, t->cache.entry_path, "cannot open the cache entry");
        return offer_overlay(t, p, t->cache.entry_path, true, reterr);
    }
    bool ok = false;
    if ((r = action_cache_entry(&t->cache, t->action, &t->ids, dirs, &t->stats, &ok, reterr)) < 0)
        return r;
    if ((t->lowerfd = fcntl(t->cache.entry, F_DUPFD_CLOEXEC, 3)) < 0)
        return err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, t->cache.entry_path, "cannot open the cache entry");
    return ok && !p->test_no_build_overlay ? offer_overlay(t, p, t->cache.entry_path, true, reterr) : 0;
}

/* ---- the verdict beside the attempt (fy_action_run) ---- */

/* Whether an attempt under p can run before the input walk's verdict is in,
 * to be discarded if the verdict refuses the overlay: when nothing it does
 * can reach beyond its own attempt directory. Its network is deny (no
 * peer, no job), no host path is writable to it (the action's policy
 * already has no source or output directory; its stdio is spooled into
 * the attempt directory and stdin is empty), no device is leased. A
 * discarded attempt has then changed nothing anyone sees; its redo, made
 * materialised, is the attempt the result describes. */
static bool speculative(const fy_policy *p) {
    if (p->net_mode != FY_NET_DENY || p->job_member || p->devices.n)
        return false;
    VEC_EACH(&p->binds, const struct pol_bind, b)
        if (b->flags & FY_BIND_WRITABLE)
            return false;
    return true;
}

/* Whether this process may give a SCHED_IDLE thread its normal policy
 * back (sched(7): CAP_SYS_NICE, or an RLIMIT_NICE that allows nice 0). */
static bool may_unidle(void) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) == 0 && (data[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32))))
        return true;
    struct rlimit rl;
    return getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur >= 20;
}

static void *walk_main(void *arg) {
    fy_action_attempt *t = arg;
    struct pathset dirs = {0};
    /* The verdict is not on the attempt's path unless the attempt ends
     * first: it takes only CPU time nothing else wants (on a 2-CPU host,
     * two walking threads at the normal policy slowed the sandbox's start
     * and the workload by more than they hid). */
    pthread_mutex_lock(&t->walk_mu);
    if (!t->walk_released && may_unidle() &&
        sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){.sched_priority = 0}) == 0) {
        t->walker_tid = (pid_t)syscall(SYS_gettid);
        t->walker_idle = true;
    }
    bool idle = t->walker_idle;
    pthread_mutex_unlock(&t->walk_mu);
    tree_scan_yields = true; /* (beside the attempt: action.h) */
    uint64_t t0 = util_now_usec();
    if (t->cache_unchecked) {
        /* an archive's cache entry: refused (changed since it was sealed),
         * the attempt is made again and the entry with it */
        bool reachable = false;
        bool sealed = action_cache_check(&t->cache, t->action, &t->ids, idle ? 1 : 0, &t->walk_stats, &dirs,
                                          &reachable);
        t->walk_r = 0;
        t->walk_ok = sealed && reachable;
    } else {
        t->walk_r = check_lower(t, idle ? 1 : 0, &t->walk_stats, &dirs, &t->walk_ok, &t->walk_err);
    }
    t->walk_usec = util_now_usec() - t0;
    /* A directory the skeleton lacks would not be the workload's own
     * through the overlay (a file system whose link counts misled the
     * skeleton's listing, or a tree changed meanwhile). */
    if (t->walk_r >= 0 && t->walk_ok && !pathset_same(&dirs, &t->skeleton))
        t->walk_ok = false;
    pathset_free(&dirs);
    if (t->walk_r < 0 || !t->walk_ok) {
        /* The attempt is discarded: it need not run on. Whichever of this
         * store and the starter's publication comes second cancels. */
        atomic_store(&t->walk_failed, true);
        fy_handle *h = atomic_load(&t->walk_handle);
        if (h)
            (void)fy_handle_cancel(h, FY_CANCEL_SUPERSEDED, NULL);
    }
    pthread_mutex_lock(&t->walk_mu);
    t->walk_done = true;
    while (!t->walk_released)
        pthread_cond_wait(&t->walk_cv, &t->walk_mu);
    pthread_mutex_unlock(&t->walk_mu);
    return NULL;
}

/* Waits for the walker, its normal policy given back first if it has not
 * finished (never starved by a busy host while the attempt waits on it). */
static void join_walker(fy_action_attempt *t) {
    if (!t->walker_running)
        return;
    pthread_mutex_lock(&t->walk_mu);
    if (t->walker_idle && !t->walk_done)
        (void)sched_setscheduler(t->walker_tid, SCHED_OTHER, &(struct sched_param){.sched_priority = 0});
    t->walk_released = true;
    pthread_cond_signal(&t->walk_cv);
    pthread_mutex_unlock(&t->walk_mu);
    pthread_join(t->walker, NULL);
    t->walker_running = false;
}

/* The walk on a thread of its own (its signals blocked); false when no
 * thread could be made (the walk then runs before the start). */
static bool start_walker(fy_action_attempt *t) {
    t->walker_running = util_thread_start(&t->walker, false, false, walk_main, t) == 0;
    return t->walker_running;
}

static fy_action *action_copy(const fy_action *a) {
    char *doc = action_canonical_json(a);
    fy_action *c = NULL;
    if (doc && fy_action_from_json(doc, strlen(doc), &c, NULL) < 0)
        c = NULL;
    free(doc);
    return c;
}

/* fy_action_start; with beside, the input walk's verdict may run beside
 * the attempt (speculative), joined by finish. *redo (beside only): the
 * verdict refused the overlay before the start, no error set: start again
 * without beside. */

/* Removes the attempt directories in dir whose owner (named in them:
 * forgeyard-action-PIDNS-PID-START-XXXXXX) no longer runs: a host killed
 * during an action left its execution root, its outputs and spools there
 * for good (the sandbox's own record lists only the sandbox's). Only this
 * pid namespace's, and only directories of this user's. *removed (may be
 * NULL) counts them. */
void action_sweep(const char *dir, uint64_t *removed) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        close(dfd);
        return;
    }
    uint64_t ns = 0, self_start = 0;
    int self = 0;
    os_self_identity(&ns, &self, &self_start);
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned long long ens = 0, estart = 0;
        int epid = 0, used = 0;
        char tail[8] = "";
        if (strncmp(de->d_name, "forgeyard-action-", 17) != 0 ||
            sscanf(de->d_name + 17, "%llx-%d-%llu-%6[A-Za-z0-9]%n", &ens, &epid, &estart, tail, &used) != 4 ||
            de->d_name[17 + used] != '\0' || strlen(tail) != 6 || ens != ns || epid <= 0)
            continue;
        if (os_process_alive_as(epid, estart))
            continue; /* its owner runs (or cannot be told not to) */
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (util_remove_tree_at(dfd, de->d_name, UTIL_RM_ONE_FS | UTIL_RM_OPEN_UP) >= 0 && removed)
            (*removed)++;
    }
    closedir(d);
    close(dfd);
}

/* Whether the directory dir is the directory (dev, ino) or below it:
 * walked up from dir through "..", which crosses links (already resolved
 * by the open) and mounts as the kernel does. */
static bool dir_within(const char *dir, dev_t dev, ino_t ino) {
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* One still to be made (the output directory is, when missing) is
     * where its nearest existing parent is: from there. */
    char *anc = NULL;
    if (fd < 0 && errno == ENOENT && (anc = util_strdup(dir))) {
        char *slash;
        while (fd < 0 && errno == ENOENT && (slash = strrchr(anc, '/'))) {
            if (slash == anc) {
                fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                break;
            }
            *slash = '\0';
            fd = open(anc, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        free(anc);
    }
    for (int depth = 0; fd >= 0 && depth < 4096; depth++) {
        struct stat st, up;
        if (fstat(fd, &st) < 0)
            break;
        if (st.st_dev == dev && st.st_ino == ino) {
            close(fd);
            return true;
        }
        int parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        fd = parent;
        if (fd >= 0 && fstat(fd, &up) == 0 && up.st_dev == st.st_dev && up.st_ino == st.st_ino)
            break; /* the root */
    }
    if (fd >= 0)
        close(fd);
    return false;
}

static int action_start(const fy_action *action, const fy_policy *policy, const fy_caps *caps, bool beside,
                        bool *redo, fy_action_attempt **ret, fy_error **reterr) {
    if (!action || !policy || !ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL, "action, policy or ret is NULL");
    *ret = NULL;
    if (action->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_PREPARE, 0, NULL, "action was created in another process");
    if (!action->argv)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, "$.arguments", "the action has no command");
    if (!action->input)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, "$.input_root", "the action has no input root");
    /* Refused now rather than after the command has run for nothing. */
    if (action->output_dir) {
        int r0 = tree_check_output_dir(action->output_dir, reterr);
        if (r0 < 0)
            return r0;
    }
    for (int i = 1; i < 3; i++) {
        struct stat kst;
        /* stdout_path, stderr_path: new files (kept at finish, never replacing one) */
        if (action->stdio_path[i] && lstat(action->stdio_path[i], &kst) == 0)
            return err_set(reterr, FY_E_STATE, FY_STEP_PREPARE, EEXIST, action->stdio_path[i],
                           "cannot keep the action's %s: the file exists (a new file is needed)",
                           i == 1 ? "stdout" : "stderr");
        /* ... in a directory that is there (else found only after the run) */
        if (action->stdio_path[i]) {
            char *dir = strdup(action->stdio_path[i]), *slash = dir ? strrchr(dir, '/') : NULL;
            if (slash)
                *(slash == dir ? slash + 1 : slash) = '\0';
            int e = !dir ? ENOMEM : stat(slash ? dir : ".", &kst) < 0 ? errno : !S_ISDIR(kst.st_mode) ? ENOTDIR : 0;
            free(dir);
            if (e)
                return err_set(reterr, e == ENOMEM ? FY_E_NOMEM : FY_E_INVAL, FY_STEP_PREPARE, e, action->stdio_path[i],
                               "cannot keep the action's %s: its directory: %s", i == 1 ? "stdout" : "stderr",
                               strerror(e));
        }
    }
    /* stdout and stderr kept in one file: each is a new file of its own
     * (the second could not be made after the run: stderr was lost). */
    if (action->stdio_path[1] && action->stdio_path[2] && strcmp(action->stdio_path[1], action->stdio_path[2]) == 0)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, "$.stderr_path",
                       "stdout_path and stderr_path name the same file (%s): each stream is kept in a new file of "
                       "its own", action->stdio_path[1]);
    /* What the host writes (the output directory, the kept stdout and
     * stderr) inside a directory input root: "the input root is never
     * written", and the next action on that root would take them as
     * inputs. Found by walking up from each, links and mounts as the
     * kernel takes them (a link elsewhere to a place in the root counts). */
    if (action->input_kind != FY_INPUT_ARCHIVE) {
        struct stat in_st;
        int infd = open(action->input, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bool have = infd >= 0 && fstat(infd, &in_st) == 0;
        if (infd >= 0)
            close(infd);
        const char *what[3] = {"$.output_directory", "$.stdout_path", "$.stderr_path"};
        for (int i = 0; have && i < 3; i++) {
            const char *path = i == 0 ? action->output_dir : action->stdio_path[i];
            if (!path)
                continue;
            char *dir = strdup(path), *slash = i > 0 && dir ? strrchr(dir, '/') : NULL;
            if (slash)
                *(slash == dir ? slash + 1 : slash) = '\0';
            else if (i > 0 && dir)
                strcpy(dir, "."); /* (a name of the working directory) */
            bool inside = dir && dir_within(dir, in_st.st_dev, in_st.st_ino);
            free(dir);
            if (inside)
                return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, what[i],
                               "%s is inside the input root %s, which is never written", path, action->input);
        }
    }
    /* The scratch directory inside a directory input root: the copy of the
     * input would hold the execution root it is being copied into. */
    if (action->scratch && action->input_kind != FY_INPUT_ARCHIVE) {
        size_t n = strlen(action->input);
        while (n > 1 && action->input[n - 1] == '/')
            n--;
        if (strncmp(action->scratch, action->input, n) == 0 && (action->scratch[n] == '/' || !action->scratch[n]))
            return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, "$.scratch_directory",
                           "the scratch directory %s is inside the input root %s: the attempt's copy of the input "
                           "would hold itself", action->scratch, action->input);
    }
    fy_action_attempt *t = calloc(1, sizeof(*t));
    if (!t)
        return oom(reterr, FY_STEP_PREPARE);
    t->origin_pid = util_getpid();
    t->dirfd = t->rootfd = t->lowerfd = -1;
    pthread_mutex_init(&t->walk_mu, NULL);
    pthread_cond_init(&t->walk_cv, NULL);
    atomic_init(&t->walk_handle, NULL);
    atomic_init(&t->walk_failed, false);
    int r = 0;
    if (!(t->own = action_copy(action)) || fy_action_digest(t->own, &t->digest, NULL) < 0) {
        r = oom(reterr, FY_STEP_PREPARE);
        goto fail;
    }
    t->action = t->own;
    /* The sandbox's host ids lie in the policy's range (as root), or are
     * the caller's. */
    if (tree_ids_init(&t->ids, policy->id_first, policy->id_count) < 0) {
        r = oom(reterr, FY_STEP_PREPARE);
        goto fail;
    }
    /* The attempt's private directory: the execution root and the spools. */
    const char *scratch = action->scratch ? action->scratch : getenv("TMPDIR");
    if (!scratch || scratch[0] != '/')
        scratch = "/tmp";
    /* (Named by its owner: a later start, or fy_gc, removes the directory
     * of an owner that died, a killed host's, which nothing else would.) */
    action_sweep(scratch, NULL);
    uint64_t pidns = 0, pstart = 0;
    int pid = 0;
    os_self_identity(&pidns, &pid, &pstart);
    if (!(t->dir = util_asprintf("%s/forgeyard-action-%llx-%d-%llu-XXXXXX", scratch, (unsigned long long)pidns, pid,
                                 (unsigned long long)pstart))) {
        r = oom(reterr, FY_STEP_PREPARE);
        goto fail;
    }
    if (!mkdtemp(t->dir)) {
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, scratch, "cannot make the attempt's directory: %s",
                    strerror(errno));
        free(t->dir);
        t->dir = NULL;
        goto fail;
    }
    /* The sandbox's own ids traverse the attempt's directory (0711) to the
     * execution root, whose name nobody else can list. */
    unsigned char rnd[16];
    randombytes_buf(rnd, sizeof(rnd));
    sodium_bin2hex(t->rootname, sizeof(t->rootname), rnd, sizeof(rnd));
    snprintf(t->workname, sizeof(t->workname), "%s.work", t->rootname);
    if ((t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fchmod(t->dirfd, 0711) < 0 ||
        mkdirat(t->dirfd, t->rootname, 0700) < 0 ||
        (t->rootfd = openat(t->dirfd, t->rootname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, t->dir, "cannot make the execution root: %s",
                    strerror(errno));
        goto fail;
    }
    char *exec = util_asprintf("%s/%s", t->dir, t->rootname);
    fy_policy *p = NULL;
    if (!exec) {
        r = oom(reterr, FY_STEP_PREPARE);
        goto fail;
    }
    r = action_policy(t->action, policy, exec, t->dir, &p, reterr);
    free(exec);
    if (r < 0)
        goto fail;
    struct pathset dirs = {0};
    uint64_t t0 = util_now_usec();
    bool directory = t->action->input_kind != FY_INPUT_ARCHIVE && !p->test_no_build_overlay;
    if (t->action->input_kind == FY_INPUT_ARCHIVE)
        r = ask_cache(t, p, &dirs, beside && redo, reterr);
    else if (directory)
        r = ask_overlay(t, p, reterr);
    if (r < 0) {
        pathset_free(&dirs);
        policy_destroy(p);
        goto fail;
    }
    uint64_t scan_usec = util_now_usec() - t0;
    r = fy_prepare(p, caps, (const char *const *)t->action->argv, &t->prepared, reterr);
    bool unchecked = t->cache_unchecked;
    beside = beside && (directory || unchecked);
    if (r >= 0 && (directory || unchecked)) {
        /* The walk, for the ids the backend gives the workload (its ACL
         * entries are judged for them); the overlay offered only if they
         * reach it all: else prepared again without it. Beside the attempt
         * where it may run first (speculative): then only the directories
         * are listed here (getdents' types, which also refuse special
         * files and count the entries), for the skeleton. */
        uint32_t wuid, wgid;
        const struct fy_backend_ops *ops = t->prepared->sel.backend;
        if (ops->workload_ids && ops->workload_ids(t->prepared->plan, &wuid, &wgid) == 0)
            tree_ids_exact(&t->ids, wuid, wgid);
        beside = beside && p->build_lower && ops->build_overlaid && ops->build_overlaid(t->prepared->plan) &&
                 speculative(p);
        t0 = util_now_usec();
        bool ok = false;
        if (beside) {
            r = tree_scan_dirs(t->action, t->lowerfd, &dirs, reterr);
        } else if (directory) {
            r = check_lower(t, 0, &t->stats, &dirs, &ok, reterr);
        } else if (!action_cache_check(&t->cache, t->action, &t->ids, 0, &t->stats, &dirs, &ok)) {
            /* an archive's entry that cannot wait for its check beside:
             * refused, it is removed and made again by the next start */
            pathset_free(&dirs);
            policy_destroy(p);
            *redo = true;
            r = FY_E_STATE;
            goto fail;
        }
        if (r >= 0 && beside && p->test_skeleton_short && dirs.n) {
            pathset_sort(&dirs);
            free(dirs.v[--dirs.n]);
        }
        scan_usec += util_now_usec() - t0;
        if (r >= 0 && !beside && !ok && p->build_lower) {
            free(p->build_lower);
            free(p->build_work);
            p->build_lower = p->build_work = NULL;
            fy_prepared_free(t->prepared);
            t->prepared = NULL;
            r = fy_prepare(p, caps, (const char *const *)t->action->argv, &t->prepared, reterr);
        }
    }
    bool asked = p->build_lower != NULL;
    policy_destroy(p);
    if (r < 0) {
        pathset_free(&dirs);
        goto fail;
    }
    /* Inputs after the negotiation: whether a file may be hard-linked
     * depends on the host ids the sandbox maps. */
    t0 = util_now_usec();
    const struct fy_plan *np = t->prepared->neutral;
    const struct fy_backend_ops *ops = t->prepared->sel.backend;
    uint32_t uid, gid;
    struct tree_owner own = {false, 0, 0, 0777};
    if (ops->workload_ids && ops->workload_ids(t->prepared->plan, &uid, &gid) == 0)
        own = (struct tree_owner){geteuid() == 0 || uid != geteuid(), uid, gid, 0755};
    if (own.chown ? fchown(t->rootfd, own.uid, own.gid) < 0 : fchmod(t->rootfd, own.dir_mode) < 0) {
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, t->dir, "cannot hand the execution root over: %s",
                    strerror(errno));
        goto fail;
    }
    t->overlay = asked && ops->build_overlaid && ops->build_overlaid(t->prepared->plan);
    if (t->overlay) {
        /* The backend mounts the input directory under this upper: a
         * skeleton of its directories, and overlayfs's work directory, both
         * the sandbox's own (its pid 1 mounts them). */
        int wfd = -1;
        if (mkdirat(t->dirfd, t->workname, 0700) < 0 ||
            (wfd = openat(t->dirfd, t->workname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
            (own.chown && fchown(wfd, own.uid, own.gid) < 0)) {
            r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, t->dir, "cannot make the overlay's work directory: %s",
                        strerror(errno));
        } else {
            r = tree_skeleton(t->action, t->lowerfd, t->rootfd, &dirs, &own, &t->stats, reterr);
        }
        if (wfd >= 0)
            close(wfd);
    } else {
        if (t->lowerfd >= 0)
            close(t->lowerfd);
        t->lowerfd = -1;
        t->stats = (struct tree_stats){0};
        r = tree_materialise(t->action, t->cache_open ? t->cache.entry : -1, t->rootfd, np->id_first, np->id_count,
                             &own, &t->stats, &t->inputs, reterr);
    }
    if (beside && t->overlay) {
        t->skeleton = dirs; /* what the verdict's walk must find */
        dirs = (struct pathset){0};
    }
    pathset_free(&dirs);
    t->input_usec = util_now_usec() - t0 + scan_usec;
    if (r < 0)
        goto fail;
    if (beside && t->overlay && !start_walker(t)) {
        /* no thread: the verdict first, as without it (released: it
         * neither idles this thread nor waits) */
        t->walk_released = true;
        walk_main(t);
        if (t->walk_r < 0) {
            r = t->walk_r;
            if (reterr && !*reterr) {
                *reterr = t->walk_err;
                t->walk_err = NULL;
            }
            goto fail;
        }
        if (!t->walk_ok) {
            *redo = true;
            r = FY_E_STATE;
            goto fail;
        }
    }
    if ((r = fy_start(t->prepared, &t->handle, reterr)) < 0)
        goto fail;
    if (t->walker_running) {
        atomic_store(&t->walk_handle, t->handle);
        if (atomic_load(&t->walk_failed))
            (void)fy_handle_cancel(t->handle, FY_CANCEL_SUPERSEDED, NULL);
    }
    *ret = t;
    return 0;
fail:
    fy_action_attempt_free(t);
    return r;
}

int fy_action_start(const fy_action *action, const fy_policy *policy, const fy_caps *caps, fy_action_attempt **ret,
                    fy_error **reterr) {
    return action_start(action, policy, caps, false, NULL, ret, reterr);
}

int fy_action_start_ex(const fy_action *action, const fy_policy *policy, const fy_caps *caps, uint32_t flags,
                       fy_action_attempt **ret, fy_error **reterr) {
    if (ret)
        *ret = NULL;
    if (flags & ~(uint32_t)FY_ACTION_START_SPECULATIVE)
        return err_set(reterr, FY_E_INVAL, FY_STEP_INPUT, 0, NULL, "unknown flags 0x%x", (unsigned)flags);
    if (!(flags & FY_ACTION_START_SPECULATIVE))
        return action_start(action, policy, caps, false, NULL, ret, reterr);
    /* A verdict that refused before the start (no error set): the start
     * the caller would make next, here and now. */
    bool redo = false;
    int r = action_start(action, policy, caps, true, &redo, ret, reterr);
    return r >= 0 || !redo ? r : action_start(action, policy, caps, false, NULL, ret, reterr);
}

fy_handle *fy_action_attempt_handle(fy_action_attempt *t) {
    return t && t->origin_pid == util_getpid() ? t->handle : NULL;
}

/* ---- the result ---- */

/* Moves the spool at path to keep, a new file (never replacing one). */
static int keep_file(const char *path, const char *keep) {
    if (link(path, keep) == 0)
        return 0;
    if (errno != EXDEV && errno != EPERM && errno != ENOENT)
        return -1;
    int in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0 && errno == ENOENT)
        in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : open(keep, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    int r = out < 0 || fstat(in, &st) < 0 ? -errno : tree_copy_data(in, out, (uint64_t)st.st_size);
    int e = r < 0 ? -r : 0;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    errno = e;
    return r < 0 ? -1 : 0;
}

static json_t *stream_json(const char *path, const char *keep, int *err) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    unsigned char d[32];
    uint64_t size = 0;
    if (fd < 0 && errno == ENOENT) {
        /* never opened: nothing was written */
        crypto_hash_sha256(d, (const unsigned char *)"", 0);
    } else if (fd < 0 || tree_hash_fd(fd, d, &size) < 0) {
        *err = fd < 0 ? errno : EIO;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (fd >= 0)
        close(fd);
    if (keep && keep_file(path, keep) < 0) {
        *err = errno;
        return NULL;
    }
    char hex[72];
    action_sha256_name(d, hex);
    return json_pack("{s:s,s:I,s:o}", "digest", hex, "size_bytes", (json_int_t)size, "path",
                     keep ? json_string(keep) : json_null());
}

static int finish(fy_action_attempt *t, fy_action_result **ret, bool *redo, fy_error **reterr) {
    if (!t || !ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_COLLECT, 0, NULL, "attempt or ret is NULL");
    *ret = NULL;
    if (t->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_COLLECT, 0, NULL, "attempt was created in another process");
    if (t->finished)
        return err_set(reterr, FY_E_STATE, FY_STEP_COLLECT, 0, NULL, "the attempt was finished already");
    t->finished = true;
    fy_result *sres = NULL;
    int r = fy_handle_wait(t->handle, FY_UNLIMITED, &sres, reterr);
    if (r < 0)
        return r;
    bool walked_beside = t->walker_running;
    if (walked_beside) {
        /* The verdict, before anything of the attempt is read: a refusal
         * (the walk's own error) or inputs the workload's ids do not reach
         * through the overlay discard the attempt (cancelled by the walker
         * as soon as it knew), which fy_action_run makes again. */
        join_walker(t);
        t->stats.entries += t->walk_stats.entries;
        if (t->walk_r < 0 || !t->walk_ok) {
            fy_result_free(sres);
            if (t->walk_r < 0) {
                if (reterr && !*reterr) {
                    *reterr = t->walk_err;
                    t->walk_err = NULL;
                }
                return t->walk_r;
            }
            *redo = true;
            return FY_E_STATE;
        }
    }
    fy_action_result *res = calloc(1, sizeof(*res));
    struct collected *col = NULL;
    json_t *root = json_object(), *sj = NULL;
    if (!res || !root) {
        r = oom(reterr, FY_STEP_COLLECT);
        goto out;
    }
    res->origin_pid = util_getpid();
    res->sandbox = sres;
    sres = NULL;
    res->outcome = fy_result_outcome(res->sandbox);
    res->exit_code = fy_result_exit_code(res->sandbox);
    uint64_t t0 = util_now_usec();
    /* Nothing is collected past a process that outlived the attempt (the
     * witness of its cleanup): it could change a file as it is hashed. */
    uint64_t survivors = 0;
    (void)fy_result_cleanup(res->sandbox, FY_LEFT_PROCESSES, &survivors);
    if (t->prepared->policy->test_survivor && !survivors)
        survivors = 1;
    if ((r = tree_collect(t->action, t->rootfd, t->lowerfd, &t->inputs, survivors, &col, reterr)) < 0)
        goto out;
    uint64_t collect_usec = util_now_usec() - t0;
    const char *detail = fy_result_detail(res->sandbox), *cdetail;
    int co = collected_outcome(col, &cdetail);
    /* The sandbox's own ending comes first: outputs of a failed attempt are
     * still listed, but only a succeeded or failed command is judged by them
     * (a survivor fails any). */
    if (co && (res->outcome == FY_OUTCOME_SUCCEEDED || res->outcome == FY_OUTCOME_FAILED ||
               co == FY_OUTCOME_INFRASTRUCTURE_FAILURE)) {
        res->outcome = co;
        detail = cdetail;
    }
    if (detail && !(res->detail = strdup(detail))) {
        r = oom(reterr, FY_STEP_COLLECT);
        goto out;
    }
    /* stdout and stderr: digests, sizes, kept where the action says. */
    json_t *streams[3] = {NULL, NULL, NULL};
    for (int i = 1; i < 3; i++) {
        char *spool = util_asprintf("%s/%s", t->dir, i == 1 ? "stdout" : "stderr");
        int e = 0;
        streams[i] = spool ? stream_json(spool, t->action->stdio_path[i], &e) : NULL;
        free(spool);
        if (!streams[i]) {
            json_decref(streams[1]);
            r = e ? err_set(reterr, FY_E_IO, FY_STEP_COLLECT, e, t->action->stdio_path[i],
                            "cannot keep the action's %s: %s", i == 1 ? "stdout" : "stderr", strerror(e))
                  : oom(reterr, FY_STEP_COLLECT);
            goto out;
        }
    }
    uint64_t c0 = util_now_usec();
    uint64_t left = remove_attempt_dir(t);
    uint64_t cleanup_usec = util_now_usec() - c0;
    char adigest[72] = "";
    if (t->cache_open && t->cache.dir)
        action_sha256_name(t->cache.digest, adigest);
    /* (a detail may quote what the workload named: text, U+FFFD for the rest) */
    char *dtext = res->detail ? util_utf8_lossy(res->detail) : NULL;
    json_t *detail_json = dtext ? json_string(dtext) : NULL;
    free(dtext);
    char *sjson = NULL;
    if (fy_result_to_json(res->sandbox, &sjson, NULL) < 0 || !(sj = json_loads(sjson, 0, NULL))) {
        json_decref(detail_json);
        free(sjson);
        json_decref(streams[1]);
        json_decref(streams[2]);
        r = oom(reterr, FY_STEP_JSON);
        goto out;
    }
    free(sjson);
    bool ok = json_object_set_new(root, "version", json_integer(1)) == 0 &&
              json_object_set_new(root, "action_digest", json_string(t->digest)) == 0 &&
              json_object_set_new(root, "outcome", json_string(fy_outcome_name((uint32_t)res->outcome))) == 0 &&
              json_object_set_new(root, "exit_code", res->exit_code >= 0 ? json_integer(res->exit_code) : json_null()) == 0 &&
              json_object_set_new(root, "detail", detail_json ? detail_json : json_null()) == 0 &&
              json_object_set_new(root, "stdout", streams[1]) == 0 &&
              json_object_set_new(root, "stderr", streams[2]) == 0 &&
              collected_to_json(col, root) == 0 &&
              json_object_set_new(root, "input", json_pack("{s:s,s:s,s:o,s:o,s:o,s:I,s:I,s:I,s:I}", "kind",
                                                           t->action->input_kind == FY_INPUT_ARCHIVE ? "archive" : "directory",
                                                           "root", t->overlay ? "overlay" : "materialised",
                                                           "cache", t->cache_open && t->cache.state
                                                                        ? json_string(t->cache.state) : json_null(),
                                                           "archive_digest", adigest[0] ? json_string(adigest)
                                                                                        : json_null(),
                                                           "archive_digest_remembered",
                                                           adigest[0] ? json_boolean(t->cache.remembered) : json_null(),
                                                           "entries", (json_int_t)t->stats.entries,
                                                           "linked", (json_int_t)t->stats.linked,
                                                           "copied", (json_int_t)t->stats.copied,
                                                           "copied_bytes", (json_int_t)t->stats.bytes)) == 0 &&
              json_object_set_new(root, "timings_usec",
                                  json_pack("{s:I,s:o,s:I,s:I}", "input", (json_int_t)t->input_usec,
                                            "input_walk_beside",
                                            walked_beside ? json_integer((json_int_t)t->walk_usec) : json_null(),
                                            "collect", (json_int_t)collect_usec,
                                            "cleanup", (json_int_t)cleanup_usec)) == 0 &&
              json_object_set_new(root, "cleanup", json_pack("{s:I}", "files_left", (json_int_t)left)) == 0 &&
              json_object_set(root, "sandbox", sj) == 0;
    if (!ok || !(res->json = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
        r = oom(reterr, FY_STEP_JSON);
        goto out;
    }
    *ret = res;
    res = NULL;
    r = 0;
out:
    /* No result, nothing handed out: what the collection put in the
     * output directory goes (the caller may try again into it). */
    if (r < 0 && col)
        tree_discard_outputs(t->action);
    collected_free(col);
    json_decref(root);
    json_decref(sj);
    fy_result_free(sres);
    fy_action_result_free(res);
    return r;
}

int fy_action_finish(fy_action_attempt *t, fy_action_result **ret, fy_error **reterr) {
    bool redo = false; /* (only after fy_action_start_ex with FY_ACTION_START_SPECULATIVE) */
    int r = finish(t, ret, &redo, reterr);
    if (redo)
        return err_set(reterr, FY_E_AGAIN, FY_STEP_INPUT, 0, NULL,
                       "the input walk's verdict refused the overlay this attempt was started on: it was cancelled "
                       "and nothing of it was kept; start the action again");
    return r;
}

/* The input walk's verdict beside the attempt where it may run first
 * (speculative); when the verdict refuses the overlay, the attempt is
 * discarded and made again the way fy_action_start makes it. */
int fy_action_run(const fy_action *action, const fy_policy *policy, const fy_caps *caps, fy_action_result **ret,
                  fy_error **reterr) {
    if (ret)
        *ret = NULL;
    for (int beside = 1; beside >= 0; beside--) {
        fy_action_attempt *t = NULL;
        bool redo = false;
        int r = action_start(action, policy, caps, beside, &redo, &t, reterr);
        if (r >= 0) {
            r = finish(t, ret, &redo, reterr);
            fy_action_attempt_free(t);
        }
        if (!redo)
            return r;
    }
    return err_set(reterr, FY_E_INTERNAL, FY_STEP_INPUT, 0, NULL, "the action was made again and refused again");
}

#define CHECK_RESULT(res, fail)                                                                \
    do {                                                                                       \
        if (!(res))                                                                            \
            return fail;                                                                       \
        if ((res)->origin_pid != util_getpid())                                                \
            return fail;                                                                       \
    } while (0)

int fy_action_result_outcome(const fy_action_result *res) {
    CHECK_RESULT(res, FY_E_INVAL);
    return res->outcome;
}

int fy_action_result_exit_code(const fy_action_result *res) {
    CHECK_RESULT(res, FY_E_INVAL);
    return res->exit_code;
}

const char *fy_action_result_detail(const fy_action_result *res) {
    CHECK_RESULT(res, NULL);
    return res->detail;
}

const fy_result *fy_action_result_sandbox(const fy_action_result *res) {
    CHECK_RESULT(res, NULL);
    return res->sandbox;
}

int fy_action_result_to_json(const fy_action_result *res, char **ret_json, fy_error **reterr) {
    if (!res || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "result or ret_json is NULL");
    if (res->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_JSON, 0, NULL, "result was created in another process");
    return (*ret_json = util_strdup(res->json)) ? 0 : oom(reterr, FY_STEP_JSON);
}

void fy_action_result_free(fy_action_result *res) {
    if (!res)
        return;
    fy_result_free(res->sandbox);
    free(res->detail);
    free(res->json);
    free(res);
}
