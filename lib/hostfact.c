/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host facts kept between prepares (hostfact.h).
 *
 * Every fy_prepare reads the same few host files and lists /etc for the
 * versioned toolchain entries; a runner preparing one plan per action paid
 * that every time (the listing of /etc alone was a fifth of a prepare's
 * CPU). What was read is kept while the file's identity is unchanged:
 * device, inode, size, modification and change times (an entry made,
 * removed or renamed changes a directory's times; a write or a replaced
 * file changes a file's). A change made within the file system's timestamp
 * granularity of the read could leave those times as they were, so a read
 * is kept only when its times were already HOSTFACT_SETTLED_SEC older than
 * the clock before the read (git's rule for a racily clean index): a file
 * changed after that gets other times. Times in the future are never
 * settled. The identity is taken again after the read and must not have
 * moved. What is kept is the host's public configuration, never a secret;
 * a miss reads as before. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef _WIN32
#include <dirent.h>
#include <pthread.h>
#include <time.h>
#endif

#include "hostfact.h"
#include "internal.h"

static char *read_now(const char *path, size_t max) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    char *text = fd >= 0 ? util_read_fd(fd, max) : NULL;
    if (fd >= 0)
        close(fd);
    return text;
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

static size_t list_now(const char *dir, bool (*want)(const char *), char (*names)[HOSTFACT_NAME_MAX], size_t max) {
    size_t n = 0;
#ifndef _WIN32
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && n < max && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < HOSTFACT_NAME_MAX && want(e->d_name))
            memcpy(names[n++], e->d_name, len + 1);
    }
    if (d)
        closedir(d);
    qsort(names, n, HOSTFACT_NAME_MAX, cmp_name);
#else
    (void)dir, (void)want, (void)names, (void)max;
#endif
    return n;
}

#ifndef _WIN32

#define HOSTFACT_SETTLED_SEC 3
#define HOSTFACT_SLOTS 8

struct fact_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
};

struct slot {
    char *path;                   /* NULL: free */
    bool (*want)(const char *);   /* a listing's filter; NULL for a text */
    size_t max;                   /* the read's bound (bytes, or names) */
    struct fact_id id;
    char *text;                   /* a text */
    char (*names)[HOSTFACT_NAME_MAX]; /* a listing: n names */
    size_t n;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[HOSTFACT_SLOTS];
static size_t next_victim;
static uint64_t n_kept, n_served;
static int64_t clock_offset;

/* A fork while another thread held the lock: the child forgets every slot
 * (what that thread was writing is not trusted; the memory is let go of). */
static void fork_child(void) {
    if (util_mutex_reclaim(&mu))
        memset(slots, 0, sizeof(slots));
}

__attribute__((constructor)) static void register_fork(void) { util_on_fork_child(fork_child); }

static bool id_of(const char *path, struct fact_id *id) {
    struct stat st;
    if (stat(path, &st) < 0)
        return false;
    *id = (struct fact_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
    return true;
}

static bool same(const struct fact_id *a, const struct fact_id *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtim.tv_sec == b->mtim.tv_sec &&
           a->mtim.tv_nsec == b->mtim.tv_nsec && a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

static time_t now_sec(void) { return time(NULL) + (time_t)__atomic_load_n(&clock_offset, __ATOMIC_RELAXED); }

/* Whether id's times were settled at `before` (file times are on the
 * realtime clock). */
static bool settled(const struct fact_id *id, time_t before) {
    return id->mtim.tv_sec + HOSTFACT_SETTLED_SEC <= before && id->ctim.tv_sec + HOSTFACT_SETTLED_SEC <= before;
}

/* The slot kept for (path, want, max), or NULL; under the lock. */
static struct slot *find(const char *path, bool (*want)(const char *), size_t max) {
    for (size_t i = 0; i < HOSTFACT_SLOTS; i++)
        if (slots[i].path && slots[i].want == want && slots[i].max == max && strcmp(slots[i].path, path) == 0)
            return &slots[i];
    return NULL;
}

static void slot_clear(struct slot *s) {
    free(s->path);
    free(s->text);
    free(s->names);
    *s = (struct slot){0};
}

/* Keeps a read (taking text or names) for (path, want, max); under the
 * lock. Frees what it does not keep. */
static void keep(const char *path, bool (*want)(const char *), size_t max, const struct fact_id *id, char *text,
                 char (*names)[HOSTFACT_NAME_MAX], size_t n) {
    struct slot *s = find(path, want, max);
    if (!s) {
        for (size_t i = 0; i < HOSTFACT_SLOTS && !s; i++)
            if (!slots[i].path)
                s = &slots[i];
        if (!s)
            s = &slots[next_victim++ % HOSTFACT_SLOTS];
    }
    slot_clear(s);
    if (!(s->path = util_strdup(path))) {
        free(text);
        free(names);
        return;
    }
    s->want = want;
    s->max = max;
    s->id = *id;
    s->text = text;
    s->names = names;
    s->n = n;
    n_kept++;
}

char *hostfact_text(const char *path, size_t max) {
    struct fact_id id, after;
    if (!id_of(path, &id))
        return read_now(path, max);
    pthread_mutex_lock(&mu);
    struct slot *s = find(path, NULL, max);
    char *copy = s && same(&s->id, &id) ? util_strdup(s->text) : NULL;
    if (copy)
        n_served++;
    pthread_mutex_unlock(&mu);
    if (copy)
        return copy;
    time_t before = now_sec();
    char *text = read_now(path, max);
    if (text && settled(&id, before) && id_of(path, &after) && same(&id, &after)) {
        char *kept = util_strdup(text);
        if (kept) {
            pthread_mutex_lock(&mu);
            keep(path, NULL, max, &id, kept, NULL, 0);
            pthread_mutex_unlock(&mu);
        }
    }
    return text;
}

size_t hostfact_names(const char *dir, bool (*want)(const char *), char (*names)[HOSTFACT_NAME_MAX], size_t max) {
    struct fact_id id, after;
    if (!want)
        return 0;
    if (!id_of(dir, &id))
        return list_now(dir, want, names, max);
    pthread_mutex_lock(&mu);
    struct slot *s = find(dir, want, max);
    bool hit = s && same(&s->id, &id);
    size_t n = hit ? s->n : 0;
    if (hit) {
        memcpy(names, s->names, n * HOSTFACT_NAME_MAX);
        n_served++;
    }
    pthread_mutex_unlock(&mu);
    if (hit)
        return n;
    time_t before = now_sec();
    n = list_now(dir, want, names, max);
    if (settled(&id, before) && id_of(dir, &after) && same(&id, &after)) {
        char (*kept)[HOSTFACT_NAME_MAX] = malloc((n ? n : 1) * HOSTFACT_NAME_MAX);
        if (kept) {
            memcpy(kept, names, n * HOSTFACT_NAME_MAX);
            pthread_mutex_lock(&mu);
            keep(dir, want, max, &id, NULL, kept, n);
            pthread_mutex_unlock(&mu);
        }
    }
    return n;
}

void hostfact_counts(uint64_t *kept, uint64_t *served) {
    pthread_mutex_lock(&mu);
    *kept = n_kept;
    *served = n_served;
    pthread_mutex_unlock(&mu);
}

void hostfact_test_clock(int64_t offset_sec) { __atomic_store_n(&clock_offset, offset_sec, __ATOMIC_RELAXED); }

#else /* Windows: nothing is kept (no /etc to read) */

char *hostfact_text(const char *path, size_t max) { return read_now(path, max); }

size_t hostfact_names(const char *dir, bool (*want)(const char *), char (*names)[HOSTFACT_NAME_MAX], size_t max) {
    return want ? list_now(dir, want, names, max) : 0;
}

void hostfact_counts(uint64_t *kept, uint64_t *served) { *kept = *served = 0; }

void hostfact_test_clock(int64_t offset_sec) { (void)offset_sec; }

#endif
