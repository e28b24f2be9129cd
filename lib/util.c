/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers without a better home. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "internal.h"

char *util_strdup(const char *s) { return s ? strdup(s) : NULL; }

char *util_asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

void util_bzero(void *p, size_t n) {
    if (p && n)
        sodium_memzero(p, n);
}

uint64_t util_now_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* getpid() is a cheap syscall on current glibc (no caching), and its answer
 * is what the fork check needs: the process we run in now. */
int util_getpid(void) { return (int)getpid(); }
