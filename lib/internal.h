/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal helpers shared by the platform-neutral core and the backends. */
#ifndef FY_INTERNAL_H
#define FY_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgeyard/sandbox.h"

#ifdef __MINGW32__ /* the C99 printf of mingw-w64 (__USE_MINGW_ANSI_STDIO) */
#define FY_PRINTF(a, b) __attribute__((format(gnu_printf, a, b)))
#else
#define FY_PRINTF(a, b) __attribute__((format(printf, a, b)))
#endif
#define FY_UNUSED __attribute__((unused))
#define FY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors (error.c) ---- */
struct fy_error {
    int code;
    uint32_t step;
    int64_t os_code;
    char *message;
    char *location;
    bool is_static;
};
/* Creates an error into *reterr (when reterr is non-NULL) and returns code.
 * location may be NULL. Never fails: on ENOMEM a static error is used. */
int err_set(fy_error **reterr, int code, uint32_t step, int64_t os_code, const char *location,
            const char *fmt, ...) FY_PRINTF(6, 7);
int err_setv(fy_error **reterr, int code, uint32_t step, int64_t os_code, const char *location,
             const char *fmt, va_list ap) FY_PRINTF(6, 0);
/* Maps an errno to the closest FY_E_* code. */
int err_from_errno(int e);

/* ---- growable string (strbuf.c) ---- */
struct strbuf {
    char *buf;
    size_t len, cap;
    bool oom; /* sticky: an append failed */
};
void strbuf_init(struct strbuf *sb);
void strbuf_free(struct strbuf *sb);
void strbuf_append(struct strbuf *sb, const char *s);
void strbuf_appendn(struct strbuf *sb, const char *s, size_t n);
void strbuf_printf(struct strbuf *sb, const char *fmt, ...) FY_PRINTF(2, 3);
/* Returns the string (owned by the caller) or NULL on OOM; resets sb. */
char *strbuf_steal(struct strbuf *sb);

/* ---- arena (util.c): allocations freed together (immutable plans) ---- */
struct arena {
    void **items;
    size_t n, cap;
};
void *arena_keep(struct arena *a, void *p);   /* p, or NULL (p freed) on OOM; NULL in, NULL out */
char *arena_strdup(struct arena *a, const char *s); /* NULL for NULL or OOM */
char *arena_printf(struct arena *a, const char *fmt, ...) FY_PRINTF(2, 3);
void arena_free(struct arena *a);             /* frees every item; the arena is empty again */

/* ---- misc (util.c) ---- */
/* The whole of a regular file of at most max bytes, NUL-terminated
 * (malloc'd), or NULL (not regular, too large, short read, OOM). */
char *util_read_fd(int fd, size_t max);
char *util_strdup(const char *s);           /* NULL on NULL or OOM */
char *util_asprintf(const char *fmt, ...) FY_PRINTF(1, 2);
void util_bzero(void *p, size_t n);
uint64_t util_now_usec(void);                 /* CLOCK_MONOTONIC */
/* Publishes s in *slot (a string member of an otherwise immutable object,
 * built on first use) unless another thread was first: returns the one that
 * stays; s is freed when it is not. */
const char *util_publish_once(char *const *slot, char *s);

/* ---- SHA-256 of bulk data (digest.c) ----
 * OpenSSL's libcrypto, which uses the CPU's SHA extensions where there are
 * some (about 4x libsodium's portable code on the project's hosts): files,
 * archives, layers, outputs. Short strings keep using libsodium. */
struct digest { void *ctx; int sodium; }; /* sodium: libcrypto could not be loaded (lazy.h) */
int digest_init(struct digest *d);            /* 0, or FY_E_NOMEM */
void digest_update(struct digest *d, const void *data, size_t len);
void digest_final(struct digest *d, unsigned char out[32]); /* writes 32 bytes, releases d */
void digest_abandon(struct digest *d);         /* releases d without a result; NULL-safe, idempotent */

/* Process that created an object; objects refuse use after a host fork. */
int util_getpid(void);
/* In the child of a fork (os_on_fork_child): whether the process-wide lock
 * *m was held in the parent by a thread the child does not have (or by the
 * forking thread itself); either way it is free afterwards, so that what
 * it guards can be dropped and remade instead of waited for for ever.
 * (m is a pthread_mutex_t; void * keeps pthread.h out of this header.) */
bool util_mutex_reclaim(void *m);
/* os_on_fork_child (os.h) for every folder: fn runs in the child of each
 * fork() of the host (nothing on Windows). */
void util_on_fork_child(void (*fn)(void));
/* os_thread_start (os.h) for every folder: fn(arg) on a thread that takes
 * no signal of the host's; beside: it shares the caller's work now, so it
 * starts on another CPU. *th a pthread_t (unless detached). 0 or an errno. */
int util_thread_start(void *th, bool detached, bool beside, void *(*fn)(void *), void *arg);
/* os_cache_dir (os.h) for every folder: the user's cache directory for
 * leaf (malloc'd; $override first), or NULL with errno. */
char *util_cache_dir(const char *override, const char *leaf);
/* os_open_no_links (os.h) for every folder. */
int util_open_no_links(const char *path, int flags);
/* os_fd_on_kernel_fs (os.h) for every folder. */
bool util_fd_on_kernel_fs(int fd);
struct utsname;
/* os_uname (os.h) for every folder. */
int util_uname(struct utsname *u);
/* os_mkdir_parents (os.h) for every folder: path's missing parents made
 * with mode, not path itself. 0, or -errno. */
int util_mkdir_parents(const char *path, unsigned mode);
/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF) at s[0..n), or 0 when there is none. */
size_t util_utf8_seq_len(const unsigned char *s, size_t n);
/* Length of the longest well-formed UTF-8 prefix of s[0..n). */
size_t util_utf8_valid_prefix(const char *s, size_t n);
/* Whether s (NUL-terminated) is well-formed UTF-8 (JSON can carry it). */
bool util_utf8_valid(const char *s);
/* s with every byte that starts no well-formed UTF-8 sequence replaced by
 * U+FFFD: malloc'd, NULL on OOM (for messages and listings of names a
 * workload chose). */
char *util_utf8_lossy(const char *s);
/* The same over s[0..n) (NULs kept); *out_len (when not NULL) gets the
 * length of the result. */
char *util_utf8_lossy_n(const char *s, size_t n, size_t *out_len);
/* prefix then key into out (size bytes, cut to fit), the key's control
 * characters, DEL and backslash as \xNN: a caller's key in an error's
 * location must not reach a terminal or a log raw. */
void util_loc_key(char *out, size_t size, const char *prefix, const char *key);
#ifndef _WIN32
/* os_open_own_dir (os.h) for every folder: at/path, made with create_mode
 * (0: never made) when missing, opened only when it is the caller's alone
 * (owner, none of the forbid bits, not a link). An fd, or -errno (-EPERM:
 * not the caller's alone). */
int util_open_own_dir(int at, const char *path, unsigned create_mode, unsigned forbid);
/* os_remove_tree_at (os.h) for every folder: at/name and everything below
 * it, never following a link, at any depth. UTIL_RM_ONE_FS: never into
 * another file system (-EXDEV, the mount and its parents left);
 * UTIL_RM_OPEN_UP: directories of the caller's without permissions get
 * 0700 back. 1 removed, 0 nothing there, or -errno. */
#define UTIL_RM_ONE_FS 1u
#define UTIL_RM_OPEN_UP 2u
int util_remove_tree_at(int at, const char *name, unsigned flags);
/* The same below the directory dirfd, which stays: 0, or -errno. */
int util_remove_below(int dirfd, unsigned flags);
/* All n bytes of p written to fd (retried on EINTR and short writes): 0,
 * or -errno (-EIO for a write that wrote nothing). */
int util_write_all(int fd, const void *p, size_t n);
#endif
#define FY_CHECK_ORIGIN(obj) \
    do { if ((obj)->origin_pid != util_getpid()) return FY_E_FORKED; } while (0)

#endif
