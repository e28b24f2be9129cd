/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state directory: one record per live sandbox, so that a restarted
 * host program can find and destroy what a crashed predecessor left.
 *
 * A record is a small text file in a 0700 directory the library owns:
 *     forgeyard-state 1
 *     owner PID STARTTIME        the host process that started the sandbox
 *     pidns INODE                its pid namespace (absent in records of
 *                                older builds: taken as the reader's)
 *     sandbox 0 0                nothing to kill yet
 *     cgroup PATH                zero or more
 *     scratch PATH               zero or one
 *     sandbox PID STARTTIME      appended once the sandbox exists: its pid 1
 *     helper PID STARTTIME       zero to four, appended: long-lived helpers
 *                                outside the sandbox (rootless restricted's pasta)
 * It is written complete under a temporary name (O_EXCL), renamed to its
 * own new name, and then only ever appended to, never replaced or
 * rewritten: on a filesystem mounted with discard a replaced or truncated
 * file costs a synchronous discard, and this is paid on every attempt. A
 * reader ignores a last line not yet complete, and the last sandbox line
 * wins. Start times (field 22 of /proc/PID/stat) make pid reuse
 * harmless. Pids mean something only in their own pid namespace: a record
 * of another one (a host in a container sharing the state directory) is
 * never judged nor acted on here, its own namespace's gc collects it. gc
 * parses records strictly and only ever touches cgroups named forgeyard-*
 * under /sys/fs/cgroup and scratch directories named forgeyard-attempt-*.
 *
 * (Why a namespace and not an OFD lock the owner holds on its record for
 * the attempt's life: such a lock belongs to the open file description,
 * which every fork(2) of the host copies; a prefork worker that never
 * calls the library would keep its dead parent's records from gc for as
 * long as it lives.) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "linux-probe-util.h"
#include "linux-state.h"
#include "linux-syscall.h"

#define RECORD_MAX 8192
/* A temporary record is a creator that died before naming it (before
 * anything else existed); this old, it is not being written. */
#define TMP_RECORD_GRACE_SEC 10

int state_default_dir(char *buf, size_t len) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (geteuid() == 0)
        n = snprintf(buf, len, "/run/forgeyard-sandbox");
    else if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/forgeyard-sandbox", xdg);
    else
        n = snprintf(buf, len, "/tmp/forgeyard-sandbox-%u", (unsigned)geteuid());
    return n > 0 && (size_t)n < len ? 0 : FY_E_RANGE;
}

uint64_t state_starttime(pid_t pid) { return pu_proc_starttime(pid); }

/* This process's start time, read once per process (a fork re-reads it). */
static uint64_t own_starttime(void) {
    static _Atomic int cached_pid;
    static _Atomic uint64_t cached_start;
    pid_t me = getpid();
    if (atomic_load_explicit(&cached_pid, memory_order_acquire) == me)
        return atomic_load_explicit(&cached_start, memory_order_relaxed);
    uint64_t st = state_starttime(me);
    if (st) {
        atomic_store_explicit(&cached_start, st, memory_order_relaxed);
        atomic_store_explicit(&cached_pid, me, memory_order_release);
    }
    return st;
}

/* This process's pid namespace (the inode of /proc/self/ns/pid), 0 when
 * it cannot be told. */
static uint64_t own_pidns(void) {
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Whether pid is a zombie (or dying: state Z or X in /proc/PID/stat): it
 * keeps its pid and start time until its parent reaps it, but runs
 * nothing, and what it owned is an orphan. Not a leader that ended its
 * own thread while its others run (also Z): that process is alive. */
static bool exited(pid_t pid) {
    char state = 0;
    pu_proc_stat_start(pid, &state);
    return (state == 'Z' || state == 'X') && pu_proc_zombie_ended(pid);
}

static bool alive_as(pid_t pid, uint64_t start) { return pu_proc_alive_as(pid, start); }

/* The owner's pid in an unrecorded cgroup's name: forgeyard-PID-<16 hex>
 * (an attempt's or a shell's), fy-probe-PID-<8 hex> (the cgroup probe's,
 * linux-probe-cgroup.c) or fy-probe-dev-PID-<8 hex> (the devices probe's,
 * linux-devices.c); 0 for any other name. */
static int unrecorded_owner(const char *name) {
    static const struct { const char *prefix; size_t hexlen; } forms[] = {
        {"forgeyard-", 16}, {"fy-probe-dev-", 8}, {"fy-probe-", 8}};
    for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
        size_t pl = strlen(forms[f].prefix);
        if (strncmp(name, forms[f].prefix, pl) != 0)
            continue;
        const char *p = name + pl;
        if (*p < '1' || *p > '9')
            return 0;
        long pid = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            if ((pid = pid * 10 + (*p - '0')) > 0x3fffffff)
                return 0;
        if (*p++ != '-' || strlen(p) != forms[f].hexlen)
            return 0;
        for (size_t i = 0; i < forms[f].hexlen; i++)
            if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
                return 0;
        return (int)pid;
    }
    return 0;
}

/* A state directory is acted on (records written, orphans destroyed) only
 * when it is the caller's alone: owned by the effective uid, written by no
 * group or other, not a link. Else another user who made it first (the
 * default /tmp/forgeyard-sandbox-UID of a caller without XDG_RUNTIME_DIR)
 * could plant records that make fy_gc kill a process of the caller's
 * choosing, or hide its orphans. 0, or a typed error. */
static int trusted_dir(const char *dir, uint32_t step, fy_error **reterr) {
    int fd = util_open_own_dir(AT_FDCWD, dir, 0, 022);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    struct stat st;
    if (fd == -EPERM && stat(dir, &st) == 0)
        return err_set(reterr, FY_E_UNSAFE, step, 0, NULL,
                       "state directory %s is not this user's alone (owner uid %u, mode %03o): refused", dir,
                       (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return err_set(reterr, fd == -ELOOP || fd == -ENOTDIR || fd == -EPERM ? FY_E_UNSAFE : err_from_errno(-fd), step,
                   -fd, NULL, "state directory %s: %s", dir, strerror(-fd));
}

int state_record(const char *dir, const char *name, const char *const *cgroups, size_t ncg, const char *scratch,
                 char **ret_path, int *ret_fd, fy_error **reterr) {
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "state directory %s: %s", dir,
                       strerror(errno));
    int tr = trusted_dir(dir, FY_STEP_SPAWN, reterr);
    if (tr < 0)
        return tr;
    struct strbuf sb;
    strbuf_init(&sb);
    /* sandbox 0 0: recorded before the sandbox exists (nothing to kill). */
    strbuf_printf(&sb, "forgeyard-state 1\nowner %d %llu\n", (int)getpid(), (unsigned long long)own_starttime());
    uint64_t ns = own_pidns();
    if (ns)
        strbuf_printf(&sb, "pidns %llu\n", (unsigned long long)ns);
    strbuf_printf(&sb, "sandbox 0 0\n");
    for (size_t i = 0; i < ncg; i++)
        if (cgroups[i])
            strbuf_printf(&sb, "cgroup %s\n", cgroups[i]);
    if (scratch)
        strbuf_printf(&sb, "scratch %s\n", scratch);
    char *path = util_asprintf("%s/%s.state", dir, name), *tmp = util_asprintf("%s/.%s.tmp", dir, name);
    int r = 0, fd = -1;
    if (sb.oom || !path || !tmp) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        goto out;
    }
    /* Complete before it has its name (a rename to a new name: nothing is
     * replaced, so nothing is flushed or discarded). */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, sb.buf, sb.len) != (ssize_t)sb.len || rename(tmp, path) < 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            fd = -1;
            unlink(tmp);
        }
        r = err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "recording the sandbox in %s: %s", dir,
                    strerror(e));
        goto out;
    }
    *ret_path = path;
    *ret_fd = fd;
    path = NULL;
out:
    free(path);
    free(tmp);
    strbuf_free(&sb);
    return r;
}

int state_record_sandbox(int fd, pid_t sandbox_pid, fy_error **reterr) {
    char line[64];
    int n = snprintf(line, sizeof(line), "sandbox %d %llu\n", (int)sandbox_pid,
                     (unsigned long long)state_starttime(sandbox_pid));
    if (write(fd, line, (size_t)n) != n) {
        int e = errno ? errno : EIO;
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "recording the sandbox: %s", strerror(e));
    }
    return 0;
}

int state_record_helper(int fd, pid_t pid, fy_error **reterr) {
    char line[64];
    int n = snprintf(line, sizeof(line), "helper %d %llu\n", (int)pid, (unsigned long long)state_starttime(pid));
    if (write(fd, line, (size_t)n) != n) {
        int e = errno ? errno : EIO;
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "recording a helper: %s", strerror(e));
    }
    return 0;
}

/* ---- gc ---- */

static bool safe_cgroup(const char *p) {
    const char *base = strrchr(p, '/');
    return strncmp(p, "/sys/fs/cgroup/", 15) == 0 && !strstr(p, "/../") && !strstr(p, "/./") && base &&
           strncmp(base + 1, "forgeyard-", 10) == 0 && !strchr(base + 1, '\n');
}

/* A container attempt's disk upper (linux-upper.c): IMAGE_CACHE/uppers/X,
 * X mkdtemp's six letters and digits, the path absolute with no "." or ".."
 * component and no empty one. */
static bool upper_scratch(const char *p) {
    size_t n = strlen(p);
    if (p[0] != '/' || n < 16 || strncmp(p + n - 14, "/uppers/", 8) != 0)
        return false;
    for (size_t i = n - 6; i < n; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9')))
            return false;
    return !strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../");
}

/* Exactly /dev/shm/forgeyard-attempt-X or /tmp/forgeyard-attempt-X, where X
 * has no '/': the directories the process level creates; or a container
 * attempt's disk upper; nothing else. */
static bool safe_scratch(const char *p) {
    static const char *const prefixes[] = {"/dev/shm/forgeyard-attempt-", "/tmp/forgeyard-attempt-"};
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(p, prefixes[i], n) == 0 && p[n] && !strchr(p + n, '/'))
            return true;
    }
    return upper_scratch(p);
}

/* Strict parser; 0 or FY_E_INVAL. Exposed for the fuzzer. */
int state_parse(const char *text, size_t len, struct state_record_view *out) {
    memset(out, 0, sizeof(*out));
    if (len > RECORD_MAX || memchr(text, '\0', len))
        return FY_E_INVAL;
    const char *p = text, *end = text + len;
    if (len < 18 || strncmp(p, "forgeyard-state 1\n", 18) != 0)
        return FY_E_INVAL;
    p += 18;
    bool have_owner = false, have_sandbox = false;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* an append still being written */
        size_t n = (size_t)(nl - p);
        char line[4200];
        if (n >= sizeof(line))
            return FY_E_INVAL;
        memcpy(line, p, n);
        line[n] = '\0';
        int pid = 0;
        unsigned long long st = 0;
        char tail;
        if (sscanf(line, "owner %d %llu%c", &pid, &st, &tail) == 2 && !have_owner && pid > 0) {
            out->owner = pid;
            out->owner_start = st;
            have_owner = true;
        } else if (sscanf(line, "pidns %llu%c", &st, &tail) == 1 && have_owner && !have_sandbox &&
                   !out->owner_pidns && st && line[6] >= '1' && line[6] <= '9') {
            /* Right after the owner, once, a plain positive number. */
            out->owner_pidns = st;
        } else if (sscanf(line, "sandbox %d %llu%c", &pid, &st, &tail) == 2 && pid >= 0 && (pid > 0 || st == 0) &&
                   (!have_sandbox || out->sandbox == 0)) {
            /* First "sandbox 0 0", then at most one appended with the pid. */
            out->sandbox = pid;
            out->sandbox_start = st;
            have_sandbox = true;
        } else if (sscanf(line, "helper %d %llu%c", &pid, &st, &tail) == 2 && pid > 0 && st &&
                   out->nhelpers < 4) {
            out->helpers[out->nhelpers] = pid;
            out->helper_start[out->nhelpers++] = st;
        } else if (strncmp(line, "cgroup ", 7) == 0 && safe_cgroup(line + 7) && out->ncg < 16) {
            out->cgroups[out->ncg++] = p + 7;
            out->cglen[out->ncg - 1] = n - 7;
        } else if (strncmp(line, "scratch ", 8) == 0 && safe_scratch(line + 8) && !out->scratch) {
            out->scratch = p + 8;
            out->scratchlen = n - 8;
        } else {
            return FY_E_INVAL;
        }
        p = nl + 1;
    }
    return have_owner && have_sandbox ? 0 : FY_E_INVAL;
}

/* 0, or -1 with errno: the tree at at/name is gone (never into another
 * file system: a mount left under the tree, by a crash or anything the
 * library did not make, is not the attempt's to empty; the tree stays,
 * and says so). */
static int remove_tree_at(int at, const char *name) {
    int r = util_remove_tree_at(at, name, UTIL_RM_ONE_FS | UTIL_RM_OPEN_UP);
    if (r >= 0)
        return 0;
    errno = -r;
    return -1;
}

int state_remove_tree(const char *path) { return remove_tree_at(AT_FDCWD, path); }

/* Removes a recorded scratch directory. A disk upper goes only from an
 * "uppers" directory of the caller's own, opened without following a link
 * there (as lx_setup_upper_dir made it). */
static int remove_scratch(const char *dir) {
    if (!upper_scratch(dir))
        return state_remove_tree(dir);
    char parent[4200];
    const char *slash = strrchr(dir, '/');
    snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return errno == ENOENT ? 0 : -1;
    struct stat st;
    int r = fstat(pfd, &st) == 0 && st.st_uid == geteuid() ? remove_tree_at(pfd, slash + 1) : -1;
    close(pfd);
    return r;
}

static void kill_cgroup(const char *dir) {
    char path[4300];
    snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, "1", 1);
        close(fd);
        if (w == 1)
            return;
    }
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    int pid;
    while (f && fscanf(f, "%d", &pid) == 1)
        kill(pid, SIGKILL);
    if (f)
        fclose(f);
}

static int destroy_record(const struct state_record_view *v) {
    int left = 0;
    /* The sandbox itself, only if it is still the process we recorded. */
    if (v->sandbox && v->sandbox_start) {
        int pfd = sys_pidfd_open(v->sandbox, 0);
        if (pfd >= 0) {
            if (alive_as(v->sandbox, v->sandbox_start))
                sys_pidfd_send_signal(pfd, SIGKILL, NULL, 0);
            close(pfd);
        }
    }
    /* Helpers (pasta), likewise only if still the recorded process. */
    for (size_t i = 0; i < v->nhelpers; i++) {
        int pfd = sys_pidfd_open(v->helpers[i], 0);
        if (pfd >= 0) {
            if (alive_as(v->helpers[i], v->helper_start[i]))
                sys_pidfd_send_signal(pfd, SIGKILL, NULL, 0);
            close(pfd);
        }
    }
    for (size_t i = 0; i < v->ncg; i++) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%.*s", (int)v->cglen[i], v->cgroups[i]);
        bool gone = false;
        for (int k = 0; k < 100 && !gone; k++) {
            gone = rmdir(dir) == 0 || errno == ENOENT;
            if (!gone && errno == EBUSY) {
                kill_cgroup(dir);
                usleep(10000);
            } else if (!gone) {
                break;
            }
        }
        left += !gone;
    }
    if (v->scratch) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%.*s", (int)v->scratchlen, v->scratch);
        left += remove_scratch(dir) < 0;
    }
    return left;
}

unsigned state_gc_unrecorded_cgroups(const char *parent, unsigned min_age_sec, const char *state_dir) {
    DIR *d = parent ? opendir(parent) : NULL;
    if (!d)
        return 0;
    int sfd = state_dir ? open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    unsigned removed = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        int pid = unrecorded_owner(e->d_name);
        if (pid <= 0)
            continue;
        if (kill(pid, 0) == 0 ? !exited(pid) : errno != ESRCH)
            continue; /* its owner lives (or is not ours to judge); a zombie does not */
        char rec[300];
        snprintf(rec, sizeof(rec), "%s.state", e->d_name);
        if (sfd >= 0 && fstatat(sfd, rec, &st, AT_SYMLINK_NOFOLLOW) == 0)
            continue; /* recorded: state_gc's to judge (another pid namespace's owner may live) */
        /* (mtime: a cgroup directory's moves when a child cgroup is made or
         * removed in it; its ctime cannot be set back, so a test could not
         * age one) */
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
            st.st_mtime + (time_t)min_age_sec > now)
            continue;
        if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0)
            removed++;
    }
    closedir(d);
    if (sfd >= 0)
        close(sfd);
    return removed;
}

unsigned state_gc_unrecorded_in(const char *const *parents, size_t n, unsigned min_age_sec, const char *state_dir) {
    unsigned removed = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = parents[k] && parents[i] && strcmp(parents[k], parents[i]) == 0;
        if (!seen)
            removed += state_gc_unrecorded_cgroups(parents[i], min_age_sec, state_dir);
    }
    return removed;
}

int state_gc(const char *dir, uint64_t *ret_destroyed, fy_error **reterr) {
    uint64_t destroyed = 0;
    if (ret_destroyed)
        *ret_destroyed = 0;
    struct stat dst;
    if (lstat(dir, &dst) < 0 && errno == ENOENT)
        return 0;
    int tr = trusted_dir(dir, FY_STEP_CLEANUP, reterr);
    if (tr < 0)
        return tr;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        return err_set(reterr, err_from_errno(errno), FY_STEP_CLEANUP, errno, NULL, "%s: %s", dir, strerror(errno));
    }
    int r = 0;
    uint64_t self_ns = own_pidns();
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        struct stat st;
        if (e->d_name[0] == '.' && n > 4 && strcmp(e->d_name + n - 4, ".tmp") == 0 &&
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_mtime + TMP_RECORD_GRACE_SEC < time(NULL)) {
            unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        if (n < 7 || strcmp(e->d_name + n - 6, ".state") != 0)
            continue;
        /* (O_NONBLOCK: a FIFO planted here is never waited on; it is no record) */
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) {
            /* (gone meanwhile: another collector's; anything else is said:
             * a record skipped for want of descriptors is no clean host) */
            int oe = errno;
            if (oe == ELOOP && !r) /* (a symbolic link: planted, not followed) */
                r = err_set(reterr, FY_E_UNSAFE, FY_STEP_CLEANUP, oe, NULL,
                            "%s/%s is a symbolic link, not this user's record: not acted on", dir, e->d_name);
            else if (oe != ENOENT && !r)
                r = err_set(reterr, err_from_errno(oe), FY_STEP_CLEANUP, oe, NULL, "%s/%s: %s: not collected", dir,
                            e->d_name, strerror(oe));
            continue;
        }
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
            close(fd); /* (not ours: written by someone the directory once let in; or no file) */
            if (!r)
                r = err_set(reterr, FY_E_UNSAFE, FY_STEP_CLEANUP, 0, NULL,
                            "%s/%s is not this user's record: not acted on", dir, e->d_name);
            continue;
        }
        char buf[RECORD_MAX + 1];
        ssize_t len = read(fd, buf, sizeof(buf));
        close(fd);
        struct state_record_view v;
        if (len < 0 || len > RECORD_MAX || state_parse(buf, (size_t)len, &v) < 0) {
            if (!r)
                r = err_set(reterr, FY_E_INVAL, FY_STEP_CLEANUP, 0, NULL, "%s/%s is not a valid state record", dir,
                            e->d_name);
            continue;
        }
        /* Another pid namespace's (or ours cannot be told): its pids name
         * nothing here, or other processes; never judged from here. */
        if (v.owner_pidns && (!self_ns || v.owner_pidns != self_ns))
            continue;
        if (alive_as(v.owner, v.owner_start))
            continue; /* its owner still runs: not an orphan */
        if (destroy_record(&v) == 0) {
            /* (counted by the collector whose removal of the record
             * succeeded: another at the same time destroyed the same,
             * and each counted it) */
            if (unlinkat(dirfd(d), e->d_name, 0) == 0)
                destroyed++;
        } else if (!r) {
            r = err_set(reterr, FY_E_IO, FY_STEP_CLEANUP, 0, NULL, "could not remove everything recorded in %s/%s",
                        dir, e->d_name);
        }
    }
    closedir(d);
    if (ret_destroyed)
        *ret_destroyed = destroyed;
    return r;
}
