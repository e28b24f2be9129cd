/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OS layer (os.h) on POSIX hosts: eventfd where there is one, poll. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
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
