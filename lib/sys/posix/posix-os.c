/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OS layer (os.h) on POSIX hosts: eventfd where there is one, poll. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "os.h"

#if defined(__x86_64__)
#define FY_BUILD_MACHINE "x86_64"
#elif defined(__aarch64__)
#define FY_BUILD_MACHINE "aarch64"
#endif
#ifdef __linux__
#include "linux-probe-util.h"
#include "linux-syscall.h"
#endif

extern char **environ;

int os_wake_open(void) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

void os_wake_signal(int w) {
    uint64_t one = 1;
    if (write(w, &one, sizeof(one)) < 0) {
        /* the eventfd counter is saturated: a wakeup is already pending */
    }
}

void os_wake_drain(int w) {
    uint64_t drain;
    if (read(w, &drain, sizeof(drain)) < 0) {
        /* EAGAIN: already consumed */
    }
}

void os_wake_close(int w) {
    if (w >= 0)
        close(w);
}

int os_wait2(int a, int b, int ms) {
    struct pollfd pfd[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
    if (poll(pfd, 2, ms) < 0 && errno != EINTR)
        return -errno;
    return 0;
}

int os_dup_cloexec(int fd) {
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return d < 0 ? -errno : d;
}

char **os_environ(void) { return environ; }

#define FORK_CHILD_MAX 16
static void (*fork_child_fns[FORK_CHILD_MAX])(void);
static unsigned fork_child_n;

static void fork_child_all(void) {
    for (unsigned i = 0; i < fork_child_n; i++)
        fork_child_fns[i]();
}

void os_on_fork_child(void (*fn)(void)) {
    /* constructors run one at a time, before any thread of ours exists */
    if (fork_child_n == 0 && pthread_atfork(NULL, NULL, fork_child_all) != 0)
        return;
    if (fork_child_n < FORK_CHILD_MAX)
        fork_child_fns[fork_child_n++] = fn;
}

/* A thread started beside its creator: the CPUs it may use, given back
 * once it runs on one of the others. */
struct beside { void *(*fn)(void *); void *arg; bool spread;
#ifdef __linux__
    cpu_set_t all;
#endif
};

static void *beside_main(void *p) {
    struct beside b = *(struct beside *)p;
    free(p);
#ifdef __linux__
    if (b.spread)
        (void)sched_setaffinity(0, sizeof(b.all), &b.all); /* (0: this thread) */
#endif
    return b.fn(b.arg);
}

int os_thread_start(void *th, bool detached, bool beside, void *(*fn)(void *), void *arg) {
    pthread_attr_t at;
    int e = pthread_attr_init(&at);
    if (e)
        return e;
    if (detached)
        (void)pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    struct beside *b = NULL;
    if (beside && (b = calloc(1, sizeof(*b)))) {
        *b = (struct beside){.fn = fn, .arg = arg};
#ifdef __linux__
        int me = sched_getcpu();
        if (me >= 0 && sched_getaffinity(0, sizeof(b->all), &b->all) == 0 && CPU_ISSET(me, &b->all) &&
            CPU_COUNT(&b->all) > 1) {
            cpu_set_t others = b->all;
            CPU_CLR(me, &others);
            b->spread = pthread_attr_setaffinity_np(&at, sizeof(others), &others) == 0;
        }
#endif
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    e = b ? pthread_create(&t, &at, beside_main, b) : pthread_create(&t, &at, fn, arg);
    if (e == EINVAL && b && b->spread) {
        /* The set was refused (the caller's CPUs changed meanwhile; the
         * start routine did not run): placed by the scheduler instead. */
        b->spread = false;
        pthread_attr_t plain;
        if (!(e = pthread_attr_init(&plain))) {
            if (detached)
                (void)pthread_attr_setdetachstate(&plain, PTHREAD_CREATE_DETACHED);
            e = pthread_create(&t, &plain, beside_main, b);
            pthread_attr_destroy(&plain);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (e)
        free(b);
    else if (!detached)
        *(pthread_t *)th = t;
    return e;
}

static char *joined(const char *a, const char *b, const char *c) {
    char *s = NULL;
    return asprintf(&s, "%s%s%s", a, b, c) < 0 ? NULL : s;
}

int os_open_no_links(const char *path, int flags) {
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int fd = sys_openat2(AT_FDCWD, path, &how, sizeof(how));
    if (fd >= 0 || errno != ENOSYS)
        return fd >= 0 ? fd : -errno;
    /* (before openat2, 5.6: one component at a time, none followed) */
    if (path[0] != '/')
        return -EINVAL;
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (const char *p = path + 1; dir >= 0;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char name[256];
        if (n == 0 || n >= sizeof(name)) {
            close(dir);
            return n ? -ENAMETOOLONG : -EINVAL;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        int next = slash ? openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                         : openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW);
        int e = errno;
        close(dir);
        if (next < 0)
            return e == ENOTDIR && slash ? -ELOOP : -e; /* (O_PATH|O_NOFOLLOW opens a link: not a directory) */
        if (!slash)
            return next;
        dir = next;
        p = slash + 1;
    }
    return -errno;
}

bool os_fd_on_kernel_fs(int fd) {
    static const unsigned long kernel_fs[] = {
        0x9fa0,     /* proc */        0x62656572, /* sysfs */     0x64626720, /* debugfs */
        0x74726163, /* tracefs */     0x73636673, /* securityfs */ 0x27e0eb,  /* cgroup */
        0x63677270, /* cgroup2 */     0xcafe4a11, /* bpf */       0x62656570, /* configfs */
        0x6e736673, /* nsfs */        0xde5e81e4, /* efivarfs */  0x42494e4d, /* binfmt_misc */
    };
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return true; /* (unknown: not a file to hand over) */
    for (size_t i = 0; i < sizeof(kernel_fs) / sizeof(kernel_fs[0]); i++)
        if ((unsigned long)sf.f_type == kernel_fs[i])
            return true;
    return false;
}

int os_uname(struct utsname *u) {
    if (uname(u) < 0)
        return -1;
    int per = personality(0xffffffff);
    if (per != -1 && (per & UNAME26)) {
        int fd = open("/proc/sys/kernel/osrelease", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, u->release, sizeof(u->release) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            return -1;
        u->release[n] = '\0';
        u->release[strcspn(u->release, "\n")] = '\0';
    }
#if defined(__x86_64__) || defined(__aarch64__)
    if (per != -1 && (per & PER_MASK) == PER_LINUX32)
        snprintf(u->machine, sizeof(u->machine), "%s", FY_BUILD_MACHINE);
#endif
    return 0;
}

char *os_cache_dir(const char *override, const char *leaf) {
    const char *o = override ? getenv(override) : NULL;
    if (o && o[0] == '/')
        return joined(o, "", "");
    if (geteuid() == 0)
        return joined("/var/cache/forgeyard/", leaf, "");
    const char *x = getenv("XDG_CACHE_HOME");
    if (x && x[0] == '/')
        return joined(x, "/forgeyard/", leaf);
    const char *home = getenv("HOME");
    struct stat st;
    if (home && home[0] == '/' && stat(home, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
        return joined(home, "/.cache/forgeyard/", leaf);
    /* No home of this user's: a directory of its own in the temporary
     * directory, which no other user may have made or may write. */
    const char *t = getenv("TMPDIR");
    char own[4096];
    int n = snprintf(own, sizeof(own), "%s/forgeyard-%u", t && t[0] == '/' ? t : "/var/tmp", (unsigned)geteuid());
    if (n < 0 || (size_t)n >= sizeof(own)) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = os_open_own_dir(AT_FDCWD, own, 0700, 077);
    if (fd < 0) {
        errno = fd == -ELOOP || fd == -ENOTDIR ? EPERM : -fd;
        return NULL;
    }
    close(fd);
    return joined(own, "/", leaf);
}

/* Whether a directory found at an own-directory path may be used: 0, or
 * the negative errno that refuses it. */
static int own_dir_refusal(int fd, struct stat *st, mode_t forbid, bool made) {
    return fstat(fd, st) < 0                 ? -errno
           : !S_ISDIR(st->st_mode)           ? -ENOTDIR
           : st->st_uid != geteuid()         ? -EPERM /* another user's */
           : (st->st_mode & forbid) && !made ? -EPERM
                                             : 0;
}

int os_open_own_dir(int at, const char *path, mode_t create_mode, mode_t forbid) {
    bool made = create_mode && mkdirat(at, path, create_mode) == 0;
    if (create_mode && !made && errno != EEXIST)
        return -errno;
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) {
        /* Closed to us: another user's (refused), or one of ours its owner
         * cannot use (made so under a umask of 0277 or 0177, say), which
         * gets its owner's bits back, through a descriptor that needs no
         * permission of ours on it. One descriptor at a time (a caller
         * with one left, fy_gc's test, still gets its typed error). */
        int pfd = openat(at, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
            return -errno;
        struct stat st;
        int r = own_dir_refusal(pfd, &st, forbid, made);
        if (r == 0) {
            char proc[64];
            snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
            if (chmod(proc, (st.st_mode & 07777) | 0700) < 0)
                r = -errno;
        }
        close(pfd);
        if (r < 0)
            return r;
        fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0)
        return -errno;
    struct stat st;
    int r = own_dir_refusal(fd, &st, forbid, made);
    /* Ours: what we made has exactly create_mode (the caller's umask took
     * bits off: 0277 left a state directory its owner could not write,
     * and every later start failed), and one of ours lacking an owner's
     * bit gets it back. Never a bit for group or other. */
    mode_t want = made ? create_mode & ~forbid : (st.st_mode & 07777) | 0700;
    if (r == 0 && (st.st_mode & 07777) != want && fchmod(fd, want) < 0)
        r = -errno;
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

int os_mkdir_parents(const char *path, mode_t mode) {
    char b[4096];
    if (snprintf(b, sizeof(b), "%s", path) >= (int)sizeof(b))
        return -ENAMETOOLONG;
    for (char *p = b + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(b, mode) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    return 0;
}

/* ---- os_remove_tree_at ---- */

struct rm {
    DIR *top;            /* the tree's top directory: where deep directories move up */
    unsigned flags;
    unsigned long moved; /* directories moved up so far */
    unsigned long seq;   /* the next name a directory moves up to */
    int err;             /* the first failure's errno */
};

static void rm_fail(struct rm *m, int e) {
    if (!m->err)
        m->err = e;
}

/* 0700 for at/name, a directory of ours, through an O_PATH descriptor of
 * it (never a name a link could redirect). 0 or -1 (errno). */
static int rm_open_up(int at, const char *name) {
#ifdef O_PATH
    int pfd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    char link[40];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", pfd);
    int r = chmod(link, 0700), e = errno;
    close(pfd);
    errno = e;
    return r;
#else
    return fchmodat(at, name, 0700, AT_SYMLINK_NOFOLLOW);
#endif
}

static int rm_at(struct rm *m, int at, const char *name, unsigned depth);

/* at/name unlinked where it is no directory: 1; 0 when nothing is there;
 * RM_DIR when it is a directory (EPERM: may be); else -errno. */
#define RM_DIR 2
static int rm_unlink(int at, const char *name) {
    if (unlinkat(at, name, 0) == 0)
        return 1;
    if (errno == ENOENT)
        return 0;
    return errno == EISDIR || errno == EPERM ? RM_DIR : -errno;
}

/* at/name, a directory below the open limit, renamed into the top
 * directory under a name of its own: 1, or -errno. */
static int rm_move_up(struct rm *m, int at, const char *name) {
    int k = rm_unlink(at, name); /* (DT_UNKNOWN: perhaps no directory) */
    if (k != RM_DIR)
        return k;
    bool opened = false;
    for (int tries = 0; tries < 64; tries++) {
        char to[48];
        snprintf(to, sizeof(to), ".fy-rm-%lu", m->seq++);
        if (renameat(at, name, dirfd(m->top), to) == 0) {
            m->moved++;
            return 1;
        }
        /* (a name the tree already has: the next; the top is removed whole) */
        if (errno == EEXIST || errno == ENOTEMPTY || errno == ENOTDIR || errno == EISDIR)
            continue;
        /* moving a directory to another parent writes its "..": it needs
         * write permission of its own */
        if (errno == EACCES && (m->flags & OS_RM_OPEN_UP) && !opened) {
            opened = true;
            if (rm_open_up(at, name) == 0)
                continue;
        }
        return -errno;
    }
    return -EEXIST;
}

/* Every entry of d (a directory at depth), each removed or moved up. */
static void rm_entries(struct rm *m, DIR *d, unsigned depth) {
    bool opened_up = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        bool deep = depth + 1 >= OS_RM_OPEN && (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN);
        int k = deep ? rm_move_up(m, dirfd(d), e->d_name) : rm_at(m, dirfd(d), e->d_name, depth + 1);
        if ((k == -EACCES || k == -EPERM) && (m->flags & OS_RM_OPEN_UP) && !opened_up) {
            /* d itself without write permission (a workload's chmod 555,
             * a read-only mount point made in it): its entries go once it
             * has it back, through its descriptor */
            opened_up = true;
            if (fchmod(dirfd(d), 0700) == 0)
                k = deep ? rm_move_up(m, dirfd(d), e->d_name) : rm_at(m, dirfd(d), e->d_name, depth + 1);
        }
        if (k < 0)
            rm_fail(m, -k);
    }
}

/* Opens at/name, a directory, for its entries: a DIR, or NULL with errno
 * (0: nothing there, or not a directory any more). */
static DIR *rm_open(struct rm *m, int at, const char *name, unsigned depth) {
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && (m->flags & OS_RM_OPEN_UP) && rm_open_up(at, name) == 0)
        fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            errno = 0;
        return NULL;
    }
    struct stat ds, ps;
    if ((m->flags & OS_RM_ONE_FS) && depth > 0 &&
        (fstat(fd, &ds) < 0 || fstat(at, &ps) < 0 || ds.st_dev != ps.st_dev)) {
        close(fd);
        errno = EXDEV;
        return NULL;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* at/name removed: 1, 0 (nothing there), or -errno. */
static int rm_at(struct rm *m, int at, const char *name, unsigned depth) {
    int k = rm_unlink(at, name);
    if (k != RM_DIR)
        return k;
    DIR *d = rm_open(m, at, name, depth);
    if (!d)
        return errno ? -errno : 0;
    rm_entries(m, d, depth);
    closedir(d);
    if (unlinkat(at, name, AT_REMOVEDIR) < 0)
        return errno == ENOENT ? 0 : -errno;
    return 1;
}

/* The top's entries, again while a pass moved directories up into it:
 * each move takes a whole subtree OS_RM_OPEN - 1 levels up, so this ends. */
static void rm_passes(struct rm *m) {
    for (;;) {
        unsigned long before = m->moved;
        rm_entries(m, m->top, 0);
        if (m->moved == before)
            break;
        rewinddir(m->top);
    }
}

int os_remove_below(int dirfd, unsigned flags) {
    struct rm m = {.flags = flags};
    if (!(m.top = rm_open(&m, dirfd, ".", 0)))
        return errno ? -errno : 0;
    rm_passes(&m);
    closedir(m.top);
    return m.err ? -m.err : 0;
}

int os_remove_tree_at(int at, const char *name, unsigned flags) {
    int k = rm_unlink(at, name);
    if (k != RM_DIR)
        return k;
    struct rm m = {.flags = flags};
    if (!(m.top = rm_open(&m, at, name, 0)))
        return errno ? -errno : 0;
    rm_passes(&m);
    closedir(m.top);
    /* (the verdict: the top is gone, or why not) */
    if (unlinkat(at, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return 1;
    rm_fail(&m, errno);
    return -m.err;
}

uint64_t os_process_start(int pid) {
    if (pid <= 0)
        return 0;
#ifdef __linux__
    uint64_t v = pu_proc_starttime(pid); /* (0 for none; a process started at tick 0 is still one) */
    return v ? v : (kill(pid, 0) == 0 || errno == EPERM ? 1 : 0);
#else
    return kill(pid, 0) == 0 || errno == EPERM ? 1 : 0;
#endif
}

bool os_process_alive_as(int pid, uint64_t start) {
    if (pid <= 0 || !start)
        return false;
#ifdef __linux__
    return pu_proc_alive_as(pid, start);
#else
    return kill(pid, 0) == 0 || errno != ESRCH; /* (no start time to tell a reused pid) */
#endif
}

void os_self_identity(uint64_t *pidns, int *pid, uint64_t *start) {
    *pid = (int)getpid();
    *start = os_process_start(*pid);
    *pidns = 0;
#ifdef __linux__
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0)
        *pidns = (uint64_t)st.st_ino;
#endif
}
