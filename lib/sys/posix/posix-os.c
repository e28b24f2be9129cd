/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OS layer (os.h) on POSIX hosts: eventfd where there is one, poll. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os.h"

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

int os_open_own_dir(int at, const char *path, mode_t create_mode, mode_t forbid) {
    if (create_mode && mkdirat(at, path, create_mode) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == EACCES && fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != geteuid())
        return -EPERM; /* another user's, closed to us */
    if (fd < 0)
        return -errno;
    int r = fstat(fd, &st) < 0 ? -errno : !S_ISDIR(st.st_mode) ? -ENOTDIR
                                        : st.st_uid != geteuid() || (st.st_mode & forbid) ? -EPERM : 0;
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
