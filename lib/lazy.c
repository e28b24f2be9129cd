/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries loaded on first use (lazy.h says why). Each is opened by the
 * soname of the major version the library was built against, read from the
 * library's own version header, so the ABI dlopen finds is the one the
 * callers were compiled for. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lazy.h"

#define FY_STR_(x) #x
#define FY_STR(x) FY_STR_(x)

/* libarchive 3.x has kept soname 13 since 3.0. */
struct lazylib lazy_archive = {.soname = "libarchive.so.13"};

#include <openssl/opensslv.h>
#if OPENSSL_VERSION_MAJOR >= 3
struct lazylib lazy_crypto = {.soname = "libcrypto.so." FY_STR(OPENSSL_VERSION_MAJOR)};
#else
struct lazylib lazy_crypto = {.soname = "libcrypto.so.1.1"};
#endif

#if __has_include(<bpf/libbpf_version.h>)
#include <bpf/libbpf_version.h>
struct lazylib lazy_bpf = {.soname = "libbpf.so." FY_STR(LIBBPF_MAJOR_VERSION)};
#else
struct lazylib lazy_bpf = {.soname = "libbpf.so.0"};
#endif

/* liblzma 5.x: soname 5. */
struct lazylib lazy_lzma = {.soname = "liblzma.so.5"};

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

/* A fork waits for a load in progress on another thread: glibc frees its
 * loader's lock in the child, which would otherwise find that library half
 * mapped (its dlopen then failed on an undefined symbol of a dependency, or
 * crashed: test-lazy's test_fork_while_loading). The forking thread holds
 * the lock across the fork; the child's copy is made anew. Registered
 * directly (this file is also the helper's, which has no OS layer). */
static void load_fork_prepare(void) { pthread_mutex_lock(&load_mu); }
static void load_fork_parent(void) { pthread_mutex_unlock(&load_mu); }
static void load_fork_child(void) { pthread_mutex_init(&load_mu, NULL); }

__attribute__((constructor)) static void load_register_fork(void) {
    pthread_atfork(load_fork_prepare, load_fork_parent, load_fork_child);
}

int lazy_open(struct lazylib *l) {
    pthread_mutex_lock(&load_mu);
    if (!l->tried) {
        /* RTLD_NOW: a missing symbol fails here, not in the middle of an
         * unpack; RTLD_LOCAL: nothing of it becomes visible to the host's
         * own lookups. */
        l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
        if (!l->handle) {
            const char *e = dlerror();
            snprintf(l->why, sizeof(l->why), "%s", e ? e : l->soname);
        }
        l->tried = true;
    }
    void *h = l->handle;
    pthread_mutex_unlock(&load_mu);
    return h ? 0 : -1;
}

void *lazy_sym(struct lazylib *l, const char *name) {
    void *p = lazy_open(l) == 0 ? dlsym(l->handle, name) : NULL;
    if (!p) {
        /* Every entry point checks lazy_open first: reaching here means a
         * path that forgot to, on a host without the library. */
        fprintf(stderr, "libforgeyard-sandbox: %s: %s is not available (%s)\n", l->soname, name,
                l->handle ? "no such symbol" : l->why);
        abort();
    }
    return p;
}
