/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers without a better home. */
#include <pthread.h>
#include <stdarg.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "internal.h"
#include "os.h"

char *util_strdup(const char *s) { return s ? strdup(s) : NULL; }

void util_loc_key(char *out, size_t size, const char *prefix, const char *key) {
    size_t n = (size_t)snprintf(out, size, "%s", prefix);
    for (const unsigned char *c = (const unsigned char *)(key ? key : ""); *c && n + 5 < size; c++) {
        if (*c < 0x20 || *c == 0x7f || *c == '\\')
            n += (size_t)snprintf(out + n, size - n, "\\x%02x", *c);
        else
            out[n++] = (char)*c;
    }
    if (n < size)
        out[n] = '\0';
}

static char *vformat(const char *fmt, va_list ap) {
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *util_asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

const char *util_publish_once(char *const *slot, char *s) {
    char *expected = NULL;
    if (__atomic_compare_exchange_n((char **)slot, &expected, s, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s;
    free(s);
    return expected;
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

void util_on_fork_child(void (*fn)(void)) { os_on_fork_child(fn); }

int util_thread_start(void *th, bool detached, bool beside, void *(*fn)(void *), void *arg) {
    return os_thread_start(th, detached, beside, fn, arg);
}

char *util_cache_dir(const char *override, const char *leaf) { return os_cache_dir(override, leaf); }
int util_uname(struct utsname *u) { return os_uname(u); }
int util_open_no_links(const char *path, int flags) { return os_open_no_links(path, flags); }
bool util_fd_on_kernel_fs(int fd) { return os_fd_on_kernel_fs(fd); }

int util_mkdir_parents(const char *path, unsigned mode) { return os_mkdir_parents(path, (mode_t)mode); }

#ifndef _WIN32
int util_open_own_dir(int at, const char *path, unsigned create_mode, unsigned forbid) {
    return os_open_own_dir(at, path, (mode_t)create_mode, (mode_t)forbid);
}

int util_write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static unsigned os_rm_flags(unsigned flags) {
    return ((flags & UTIL_RM_ONE_FS) ? OS_RM_ONE_FS : 0) | ((flags & UTIL_RM_OPEN_UP) ? OS_RM_OPEN_UP : 0);
}

int util_remove_tree_at(int at, const char *name, unsigned flags) {
    return os_remove_tree_at(at, name, os_rm_flags(flags));
}

int util_remove_below(int dirfd, unsigned flags) { return os_remove_below(dirfd, os_rm_flags(flags)); }
#endif

bool util_mutex_reclaim(void *m) {
    pthread_mutex_t *mu = m;
    if (pthread_mutex_trylock(mu) == 0) {
        pthread_mutex_unlock(mu);
        return false;
    }
    /* its owner does not exist here: a fresh lock in its place */
    pthread_mutex_init(mu, NULL);
    return true;
}

void *arena_keep(struct arena *a, void *p) {
    if (!p)
        return NULL;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        void **items = realloc(a->items, cap * sizeof(void *));
        if (!items) {
            free(p);
            return NULL;
        }
        a->items = items;
        a->cap = cap;
    }
    a->items[a->n++] = p;
    return p;
}

char *arena_strdup(struct arena *a, const char *s) { return s ? arena_keep(a, strdup(s)) : NULL; }

char *arena_printf(struct arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    return arena_keep(a, s);
}

void arena_free(struct arena *a) {
    for (size_t i = 0; i < a->n; i++)
        free(a->items[i]);
    free(a->items);
    a->items = NULL;
    a->n = a->cap = 0;
}

char *util_read_fd(int fd, size_t max) {
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > max)
        return NULL;
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size + 1);
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (buf && got != size) {
        free(buf);
        return NULL;
    }
    if (buf)
        buf[got] = '\0';
    return buf;
}

size_t util_utf8_seq_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

size_t util_utf8_valid_prefix(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, l;
    while (i < n && (l = util_utf8_seq_len(u + i, n - i)))
        i += l;
    return i;
}

bool util_utf8_valid(const char *s) {
    size_t n = strlen(s);
    return util_utf8_valid_prefix(s, n) == n;
}

char *util_utf8_lossy_n(const char *s, size_t n, size_t *out_len) {
    const unsigned char *u = (const unsigned char *)s;
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *buf = malloc(3 * n + 1), *o = buf;
    if (!buf)
        return NULL;
    for (size_t i = 0, l; i < n;) {
        if ((l = util_utf8_seq_len(u + i, n - i))) {
            memcpy(o, s + i, l);
            o += l;
            i += l;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    *o = '\0';
    if (out_len)
        *out_len = (size_t)(o - buf);
    return buf;
}

char *util_utf8_lossy(const char *s) {
    return util_utf8_lossy_n(s, strlen(s), NULL);
}
