/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The disk watchdog for writable host-backed directories (build, output,
 * writable binds): where no filesystem quota is available, the library
 * walks them and ends the attempt when a byte or file-count quota is
 * crossed. The walk never follows symlinks and never leaves the directory's
 * filesystem (a bind mounted inside it is not the workload's to count). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "linux-watch.h"

_Static_assert(WATCH_MAX_DEPTH == 128, "the message below names the depth");

static void walk(int fd0, dev_t dev, struct watch_total *t, int depth) {
    DIR *d = fdopendir(fd0);
    if (!d) {
        close(fd0);
        t->unmeasured = "a directory the watchdog cannot read";
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        t->files++;
        t->bytes += (uint64_t)st.st_blocks * 512u;
        if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
            continue;
        if (depth + 1 > WATCH_MAX_DEPTH) {
            t->unmeasured = "a directory tree deeper than 128 levels";
            continue;
        }
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            walk(fd, dev, t, depth + 1);
        else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) /* (not gone or replaced meanwhile) */
            t->unmeasured = "a directory the watchdog cannot read";
    }
    closedir(d);
}

void watch_measure(const char *const *dirs, size_t n, struct watch_total *t) {
    t->bytes = t->files = 0;
    t->unmeasured = NULL;
    for (size_t i = 0; i < n; i++) {
        int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
            if (errno != ENOENT)
                t->unmeasured = "a directory the watchdog cannot read";
            continue;
        }
        if (fstat(fd, &st) < 0) {
            close(fd);
            continue;
        }
        walk(fd, st.st_dev, t, 0);
    }
}

/* ---- files without a name ---- */

struct unnamed {
    dev_t devs[64];
    size_t ndevs;
    struct {
        dev_t dev;
        ino_t ino;
    } seen[WATCH_MAX_UNNAMED];
    size_t nseen;
    size_t nfds;  /* descriptors looked at so far (WATCH_MAX_FDS) */
    size_t nmaps; /* mapping lines read so far (WATCH_MAX_MAPS) */
    struct watch_total *t;
};

static bool watched_dev(const struct unnamed *u, dev_t dev) {
    for (size_t i = 0; i < u->ndevs; i++)
        if (u->devs[i] == dev)
            return true;
    return false;
}

/* One regular file with no link left, on a watched filesystem: counted
 * once, however many descriptors and mappings hold it. */
static void count_file(struct unnamed *u, const struct stat *st) {
    if (!S_ISREG(st->st_mode) || st->st_nlink != 0 || !watched_dev(u, st->st_dev))
        return;
    for (size_t i = 0; i < u->nseen; i++)
        if (u->seen[i].dev == st->st_dev && u->seen[i].ino == st->st_ino)
            return;
    if (u->nseen == WATCH_MAX_UNNAMED) {
        u->t->unmeasured = "more open files without a name than the watchdog counts";
        return;
    }
    u->seen[u->nseen].dev = st->st_dev;
    u->seen[u->nseen].ino = st->st_ino;
    u->nseen++;
    u->t->files++;
    u->t->bytes += (uint64_t)st->st_blocks * 512u;
}

/* What /proc/PID/stat (readable by anyone) says of a task. */
struct task_stat {
    char state;          /* R, S, D, Z, X, ... */
    unsigned long flags; /* PF_* */
    unsigned long vsize; /* 0: no memory left (exiting) */
};

#define FY_KCMP_FILES 2 /* (linux/kcmp.h) */
#define FY_PF_EXITING 0x00000004ul
#define FY_PF_FORKNOEXEC 0x00000040ul

static bool read_task_stat(int dir, struct task_stat *ts) {
    char buf[1024];
    int fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* (the name may hold anything) */
    return p && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %*u %lu",
                       &ts->state, &ts->flags, &ts->vsize) == 3;
}

/* Whether a task whose descriptors the caller may not list (rootless: its
 * /proc entries belong to its user namespace's root, unmapped) hides
 * nothing. It holds nothing any more (a zombie, or exiting: its memory is
 * gone), or it is the workload's first process before it executed anything
 * (the library's, not dumpable, forked by the init: then the init's only
 * child, since a process the workload forked and orphaned to the init lives
 * only while the workload's command does). Anything else made itself not
 * dumpable (prctl PR_SET_DUMPABLE) and is not measurable. */
static bool hides_nothing(int tdir, int pdir, bool only_child_of_init) {
    struct task_stat ts;
    if (!read_task_stat(tdir, &ts))
        return true; /* gone meanwhile */
    if (ts.state == 'Z' || ts.state == 'X' || (ts.flags & FY_PF_EXITING) || !ts.vsize)
        return true;
    struct task_stat ps;
    return only_child_of_init && read_task_stat(pdir, &ps) && (ps.flags & FY_PF_FORKNOEXEC);
}

/* The descriptor table of one task (tdir: /proc/PID/task/TID; pdir: its
 * process). Every task is looked at: a thread made with CLONE_THREAD but
 * not CLONE_FILES has a table of its own, which /proc/PID/fd (the leader's)
 * does not show. */
static void scan_fds(struct unnamed *u, int tdir, int pdir, bool only_child_of_init) {
    int fd = -1;
    for (int tries = 0; fd < 0; tries++) {
        fd = openat(tdir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
            break;
        if (errno == ENOENT || errno == ESRCH)
            return; /* gone meanwhile */
        if (errno != EACCES && errno != EPERM) {
            u->t->unmeasured = "a process whose descriptors the watchdog cannot examine";
            return;
        }
        if (hides_nothing(tdir, pdir, only_child_of_init))
            return;
        if (tries == 3) {
            u->t->unmeasured = "a process whose descriptors the watchdog cannot examine (not dumpable)";
            return;
        }
        usleep(1000); /* (an exec in progress: briefly not dumpable) */
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        u->t->unmeasured = "a process whose descriptors the watchdog cannot examine";
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        if (++u->nfds > WATCH_MAX_FDS) {
            u->t->unmeasured = "more open descriptors than the watchdog examines";
            break;
        }
        if (fstatat(dirfd(d), e->d_name, &st, 0) == 0)
            count_file(u, &st);
    }
    closedir(d);
}

/* Mappings of deleted files on a watched filesystem: the file, through
 * map_files (root), or not measurable. tdir: a live task of the process
 * (its threads share the mappings). */
static void scan_maps(struct unnamed *u, int tdir, int pdir, bool only_child_of_init) {
    int fd = openat(tdir, "maps", O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        else if (errno != ENOENT && errno != ESRCH &&
                 ((errno != EACCES && errno != EPERM) || !hides_nothing(tdir, pdir, only_child_of_init)))
            u->t->unmeasured = "a process whose mappings the watchdog cannot examine";
        return;
    }
    char line[4096 + 128];
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi, ino;
        unsigned maj, min;
        int path_at = 0;
        if (++u->nmaps > WATCH_MAX_MAPS) {
            u->t->unmeasured = "more mappings than the watchdog examines";
            break;
        }
        if (sscanf(line, "%lx-%lx %*s %*x %x:%x %lu %n", &lo, &hi, &maj, &min, &ino, &path_at) < 5 || !ino)
            continue;
        size_t len = strlen(line);
        while (len && line[len - 1] == '\n')
            line[--len] = '\0';
        static const char deleted[] = " (deleted)";
        if (len < sizeof(deleted) - 1 || strcmp(line + len - (sizeof(deleted) - 1), deleted) != 0 ||
            !watched_dev(u, makedev(maj, min)))
            continue;
        char name[64];
        snprintf(name, sizeof(name), "map_files/%lx-%lx", lo, hi);
        struct stat st;
        if (fstatat(tdir, name, &st, 0) == 0)
            count_file(u, &st);
        else if (errno != ENOENT && errno != ESRCH)
            u->t->unmeasured = "a mapped file without a name the watchdog cannot measure";
    }
    fclose(f);
}

void watch_unnamed(pid_t root, const char *const *dirs, size_t n, struct watch_total *t) {
    struct unnamed *u = calloc(1, sizeof(*u));
    pid_t *q = malloc(WATCH_MAX_PROCS * sizeof(pid_t));
    if (!u || !q) {
        free(u);
        free(q);
        t->unmeasured = "out of memory";
        return;
    }
    u->t = t;
    for (size_t i = 0; i < n && u->ndevs < sizeof(u->devs) / sizeof(u->devs[0]); i++) {
        struct stat st;
        if (stat(dirs[i], &st) == 0 && !watched_dev(u, st.st_dev))
            u->devs[u->ndevs++] = st.st_dev;
    }
    /* The tree, breadth first, through each task's children. */
    size_t nq = 0, init_children = 0;
    if (u->ndevs && root > 0)
        q[nq++] = root;
    for (size_t i = 0; i < nq && !t->unmeasured; i++) {
        if (i == 1)
            init_children = nq - 1;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d", (int)q[i]);
        int pdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pdir < 0)
            continue; /* gone meanwhile */
        /* Not the root (i == 0): the sandbox's init holds only what the
         * library gave it, and rootless its descriptors are not ours to
         * list. */
        bool only_child_of_init = i == 1 && init_children == 1;
        bool maps_done = i == 0;
        int tfd = openat(pdir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *td = tfd >= 0 ? fdopendir(tfd) : NULL;
        struct dirent *e;
        while (td && (e = readdir(td))) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9')
                continue;
            char tpath[300];
            snprintf(tpath, sizeof(tpath), "task/%s", e->d_name);
            int tdir = openat(pdir, tpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (tdir < 0)
                continue; /* gone meanwhile */
            if (i > 0) {
                /* Each table once: a thread that shares the leader's (the
                 * usual CLONE_FILES) is not listed again; one with its own,
                 * or where kcmp cannot tell, is. */
                pid_t tid = (pid_t)atol(e->d_name);
                if (tid == q[i] || syscall(SYS_kcmp, q[i], tid, FY_KCMP_FILES, 0, 0) != 0)
                    scan_fds(u, tdir, pdir, only_child_of_init);
                struct task_stat ts;
                if (!maps_done && read_task_stat(tdir, &ts) && ts.state != 'Z' && ts.vsize) {
                    /* (The mappings are shared; a leader that exited has
                     * none left to show: a live thread shows them.) */
                    scan_maps(u, tdir, pdir, only_child_of_init);
                    maps_done = true;
                }
            }
            int cfd = openat(tdir, "children", O_RDONLY | O_CLOEXEC);
            close(tdir);
            FILE *cf = cfd >= 0 ? fdopen(cfd, "re") : NULL;
            if (!cf) {
                if (cfd >= 0)
                    close(cfd);
                continue;
            }
            long child;
            while (fscanf(cf, "%ld", &child) == 1) {
                if (nq == WATCH_MAX_PROCS) {
                    t->unmeasured = "more processes than the watchdog examines";
                    break;
                }
                q[nq++] = (pid_t)child;
            }
            fclose(cf);
        }
        if (td)
            closedir(td);
        else if (tfd >= 0)
            close(tfd);
        close(pdir);
    }
    free(q);
    free(u);
}
