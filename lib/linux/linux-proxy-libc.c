/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fy-proxy's C library beyond forgeyard-init's (linux-init-libc.c, whose
 * syscall(), errno, memory and file calls it shares): the socket calls
 * and string functions of the proxy's loop and request parser, each one
 * raw system call or a plain loop. The prototypes are glibc's. */
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int accept4(int fd, struct sockaddr *a, socklen_t *l, int f) { return (int)syscall(SYS_accept4, fd, a, l, f); }
int connect(int fd, const struct sockaddr *a, socklen_t l) { return (int)syscall(SYS_connect, fd, a, l); }
int getsockopt(int fd, int lv, int n, void *v, socklen_t *l) { return (int)syscall(SYS_getsockopt, fd, lv, n, v, l); }
ssize_t recvfrom(int fd, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l) {
    return syscall(SYS_recvfrom, fd, b, n, f, a, l);
}
ssize_t sendto(int fd, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l) {
    return syscall(SYS_sendto, fd, b, n, f, a, l);
}
int shutdown(int fd, int how) { return (int)syscall(SYS_shutdown, fd, how); }
int pipe2(int p[2], int f) { return (int)syscall(SYS_pipe2, p, f); }
ssize_t splice(int in, loff_t *oi, int out, loff_t *oo, size_t n, unsigned int f) {
    return syscall(SYS_splice, in, oi, out, oo, n, f);
}
/* poll(2) is ppoll: aarch64 has no poll, and the seccomp filter allows ppoll only. */
int poll(struct pollfd *fds, nfds_t n, int timeout) {
    struct timespec ts = {.tv_sec = timeout / 1000, .tv_nsec = (long)(timeout % 1000) * 1000000L};
    return (int)syscall(SYS_ppoll, fds, n, timeout < 0 ? NULL : &ts, NULL, 8);
}

int strcmp(const char *a, const char *b) {
    for (; *a && *a == *b; a++, b++)
        ;
    return (unsigned char)*a - (unsigned char)*b;
}
size_t strnlen(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n])
        n++;
    return n;
}
char *strchr(const char *s, int c) {
    for (;; s++) {
        if (*s == (char)c)
            return (char *)s;
        if (!*s)
            return NULL;
    }
}
void *memchr(const void *s, int c, size_t n) {
    const unsigned char *p = s;
    for (; n; n--, p++)
        if (*p == (unsigned char)c)
            return (void *)p;
    return NULL;
}
/* The compiler must not drop these stores (the credentials after use). */
void explicit_bzero(void *s, size_t n) {
    memset(s, 0, n);
    __asm__ volatile("" : : "r"(s) : "memory");
}
