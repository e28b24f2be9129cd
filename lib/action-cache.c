/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Archive input roots, unpacked once: a per-user, content-addressed cache
 * of read-only trees keyed by the archive's SHA-256, each used as the
 * overlay's lower exactly like a directory input (or materialised from,
 * where the backend cannot overlay).
 *
 *   CACHE/            0711, the caller's, no write bit for group or others
 *     entries/KEY/    a published tree (0711 above it: searchable, not listable)
 *     seals/KEY       "forgeyard-action-cache 1 SEAL\n": SEAL is the SHA-256
 *                     of every entry's path, type, mode, owner, size, inode,
 *                     link count, mtime and ctime, taken once published;
 *                     its mtime: last used (gc by age)
 *     locks/KEY.lock  flock: shared while an attempt uses the entry,
 *                     exclusive while it is (re)made or collected
 *     tmp/            staging; a tree is renamed into entries/ complete
 *
 * An entry is used only when its walk (the one the overlay path makes
 * anyway, with the same refusals) gives its seal again: any change to any
 * entry after publication (content or mode: ctime, which user space
 * cannot set back; a file added, removed or replaced) and any entry left
 * half-made or planted without its seal is refused, removed and made
 * again from the archive. Unpacking is the per-attempt unpacker's, entry
 * by entry relative to the staging directory, checking that the bytes it
 * read were the ones hashed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "action.h"

#define CACHE_MAX_AGE_SEC (14 * 86400)
#define SEAL_MAGIC "forgeyard-action-cache 1 "

static char *cache_dir(void) {
    const char *o = getenv("FORGEYARD_ACTION_CACHE");
    if (o && o[0] == '/')
        return util_strdup(o);
    if (geteuid() == 0)
        return util_strdup("/var/cache/forgeyard/actions");
    const char *x = getenv("XDG_CACHE_HOME");
    if (x && x[0] == '/')
        return util_asprintf("%s/forgeyard/actions", x);
    const char *home = getenv("HOME");
    if (home && home[0] == '/')
        return util_asprintf("%s/.cache/forgeyard/actions", home);
    return NULL;
}

static int mkdir_parents(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    return 0;
}

/* A directory of the cache: made if missing, then trusted only if the
 * caller owns it and nobody else may write it. */
static int trusted_dir(int at, const char *name, mode_t mode) {
    if (mkdirat(at, name, mode) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return -e;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

static void close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void action_cache_close(struct act_cache *c) {
    int *fds[] = {&c->root, &c->entries, &c->seals, &c->locks, &c->tmp, &c->memos, &c->archive, &c->lock, &c->entry};
    for (size_t i = 0; i < FY_ARRAY_SIZE(fds); i++)
        close_fd(fds[i]);
    free(c->dir);
    free(c->entry_path);
    c->dir = c->entry_path = NULL;
}

/* The entry's lock, held as op: the lock file still the one named (gc
 * unlinks a lock file it holds exclusively). */
static int lock_entry(struct act_cache *c, int op) {
    char name[80];
    snprintf(name, sizeof(name), "%s.lock", c->key);
    for (int tries = 0; tries < 100; tries++) {
        close_fd(&c->lock);
        if ((c->lock = openat(c->locks, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
            return -errno;
        int r;
        do
            r = flock(c->lock, op);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return -errno;
        struct stat a, b;
        if (fstat(c->lock, &a) == 0 && fstatat(c->locks, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev)
            return 0;
    }
    return -EAGAIN;
}

static int relock(struct act_cache *c, int op) {
    int r;
    do
        r = flock(c->lock, op);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

/* The archive's SHA-256 remembered by the file's identity (device,
 * inode, size, mtime and ctime, as git's index remembers a file): any
 * write to the file, or a new file in its place, moves its ctime, which
 * user space cannot set. Remembered only for a file whose ctime is older
 * than the hash by more than any timestamp granularity, so that a write
 * racing the hash cannot leave the same ctime behind. An entry is still
 * unpacked only from bytes whose SHA-256 is checked again as they are
 * read. */
#define MEMO_MAGIC "forgeyard-action-archive 1 "
#define MEMO_SETTLE_SEC 2

static void memo_name(const struct stat *st, char name[64]) {
    snprintf(name, 64, "%" PRIx64 "-%" PRIx64, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
}

static int memo_line(const struct stat *st, const char *hex, char *buf, size_t len) {
    return snprintf(buf, len, MEMO_MAGIC "%" PRIu64 " %" PRId64 ".%09ld %" PRId64 ".%09ld %s\n", (uint64_t)st->st_size,
                    (int64_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (int64_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec,
                    hex);
}

static bool memo_get(struct act_cache *c, const struct stat *st) {
    char name[64], buf[256], want[256];
    memo_name(st, name);
    int fd = openat(c->memos, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 65)
        return false;
    buf[n] = '\0';
    /* the line this file would have, with the remembered digest */
    char hex[65];
    memcpy(hex, buf + n - 65, 64);
    hex[64] = '\0';
    int wl = memo_line(st, hex, want, sizeof(want));
    size_t got = 0;
    return wl == n && memcmp(buf, want, (size_t)n) == 0 &&
           sodium_hex2bin(c->digest, 32, hex, 64, NULL, &got, NULL) == 0 && got == 32;
}

static void memo_put(struct act_cache *c, const struct stat *st, time_t hashed) {
    struct stat now;
    if (st->st_ctim.tv_sec + MEMO_SETTLE_SEC >= hashed || fstat(c->archive, &now) < 0 ||
        now.st_ctim.tv_sec != st->st_ctim.tv_sec || now.st_ctim.tv_nsec != st->st_ctim.tv_nsec)
        return;
    char name[64], hex[65], buf[256], tmp[96];
    memo_name(st, name);
    sodium_bin2hex(hex, sizeof(hex), c->digest, 32);
    int n = memo_line(st, hex, buf, sizeof(buf));
    snprintf(tmp, sizeof(tmp), "memo.%08x", randombytes_random());
    int fd = openat(c->tmp, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    bool ok = n > 0 && write(fd, buf, (size_t)n) == n;
    close(fd);
    if (!ok || renameat(c->tmp, tmp, c->memos, name) < 0)
        (void)unlinkat(c->tmp, tmp, 0);
}

int action_cache_open(const fy_action *a, struct act_cache *c, fy_error **reterr) {
    *c = (struct act_cache){.root = -1, .entries = -1, .seals = -1, .locks = -1, .tmp = -1, .memos = -1, .archive = -1,
                            .lock = -1, .entry = -1};
    if (!(c->dir = cache_dir()))
        return 0; /* no cache here: unpacked per attempt */
    int r = mkdir_parents(c->dir);
    if (r >= 0 && (mkdir(c->dir, 0711) < 0 && errno != EEXIST))
        r = -errno;
    if (r >= 0)
        r = c->root = trusted_dir(AT_FDCWD, c->dir, 0711);
    if (r >= 0)
        r = c->entries = trusted_dir(c->root, "entries", 0711);
    if (r >= 0)
        r = c->seals = trusted_dir(c->root, "seals", 0700);
    if (r >= 0)
        r = c->locks = trusted_dir(c->root, "locks", 0700);
    if (r >= 0)
        r = c->tmp = trusted_dir(c->root, "tmp", 0700);
    if (r >= 0)
        r = c->memos = trusted_dir(c->root, "archives", 0700);
    if (r < 0) {
        int e = -r;
        r = err_set(reterr, e == EPERM ? FY_E_DENIED : FY_E_IO, FY_STEP_INPUT, e, c->dir,
                    e == EPERM ? "the action cache %s (or a directory in it) is not the caller's, or others may write "
                                 "it: not trusted"
                               : "cannot open the action cache %s: %s",
                    c->dir, strerror(e));
        action_cache_close(c);
        return r;
    }
    struct stat st;
    if ((c->archive = open(a->input, O_RDONLY | O_NOCTTY | O_CLOEXEC)) < 0 || fstat(c->archive, &st) < 0) {
        int e = errno;
        action_cache_close(c);
        return err_set(reterr, e == ENOENT ? FY_E_NOTFOUND : FY_E_IO, FY_STEP_INPUT, e, a->input,
                       "cannot read the archive: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        action_cache_close(c);
        return err_set(reterr, FY_E_INVAL, FY_STEP_INPUT, 0, a->input, "the input archive is not a regular file");
    }
    if (!(c->remembered = memo_get(c, &st))) {
        time_t start = time(NULL);
        if ((r = tree_hash_fd(c->archive, c->digest, NULL)) < 0) {
            action_cache_close(c);
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, a->input, "cannot read the archive: %s", strerror(-r));
        }
        memo_put(c, &st, start);
    }
    sodium_bin2hex(c->key, sizeof(c->key), c->digest, sizeof(c->digest));
    if ((r = lock_entry(c, LOCK_SH)) < 0) {
        action_cache_close(c);
        return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, a->input, "cannot lock the cache entry: %s", strerror(-r));
    }
    return 0;
}

static int read_seal(const struct act_cache *c, unsigned char seal[32]) {
    int fd = openat(c->seals, c->key, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char buf[128];
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    size_t ml = strlen(SEAL_MAGIC);
    if (n != (ssize_t)(ml + 65) || memcmp(buf, SEAL_MAGIC, ml) != 0 || buf[ml + 64] != '\n')
        return -1;
    size_t got = 0;
    return sodium_hex2bin(seal, 32, buf + ml, 64, NULL, &got, NULL) == 0 && got == 32 ? 0 : -1;
}

static int write_seal(const struct act_cache *c, const unsigned char seal[32]) {
    char buf[128], hex[65], tmp[96];
    sodium_bin2hex(hex, sizeof(hex), seal, 32);
    int n = snprintf(buf, sizeof(buf), "%s%s\n", SEAL_MAGIC, hex);
    snprintf(tmp, sizeof(tmp), "%s.%08x", c->key, randombytes_random());
    int fd = openat(c->tmp, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int r = write(fd, buf, (size_t)n) == n && fsync(fd) == 0 ? 0 : -EIO;
    close(fd);
    if (r == 0 && renameat(c->tmp, tmp, c->seals, c->key) < 0)
        r = -errno;
    if (r < 0)
        (void)unlinkat(c->tmp, tmp, 0);
    return r;
}

/* Removes the entry's tree and seal (the exclusive lock held). */
static int remove_entry(struct act_cache *c) {
    (void)unlinkat(c->seals, c->key, 0);
    char aside[96];
    snprintf(aside, sizeof(aside), "%s.old.%08x", c->key, randombytes_random());
    if (renameat(c->entries, c->key, c->tmp, aside) < 0)
        return errno == ENOENT ? 0 : -errno;
    int fd = openat(c->tmp, aside, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return unlinkat(c->tmp, aside, 0) == 0 ? 0 : -errno; /* a planted file */
    uint64_t left = tree_remove_below(fd);
    close(fd);
    return left || unlinkat(c->tmp, aside, AT_REMOVEDIR) < 0 ? -EIO : 0;
}

/* Whether the published entry is what was sealed: 0 (c->entry, dirs,
 * st, *overlayable filled), 1 absent, 2 refused (changed, planted,
 * half-made). */
static int try_entry(struct act_cache *c, const fy_action *a, struct pathset *dirs, struct tree_stats *st,
                     bool *overlayable) {
    unsigned char want[32], got[32];
    struct stat sb;
    if (fstatat(c->entries, c->key, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT && read_seal(c, want) < 0 ? 1 : 2;
    if (read_seal(c, want) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 022))
        return 2;
    int fd = openat(c->entries, c->key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 2;
    struct tree_stats s = {0};
    struct pathset d = {0};
    fy_error *e = NULL;
    bool ok = false;
    if (tree_scan_lower(a, fd, &s, &d, &ok, got, &e) < 0 || sodium_memcmp(got, want, 32) != 0) {
        fy_error_free(e);
        pathset_free(&d);
        close(fd);
        return 2;
    }
    close_fd(&c->entry);
    c->entry = fd;
    pathset_free(dirs);
    *dirs = d;
    *st = s;
    *overlayable = ok;
    return 0;
}

/* The tree of the archive, unpacked into staging and published. */
static int build_entry(struct act_cache *c, const fy_action *a, fy_error **reterr) {
    char stage[96];
    snprintf(stage, sizeof(stage), "%s.%08x", c->key, randombytes_random());
    if (mkdirat(c->tmp, stage, 0755) < 0)
        return err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, c->dir, "cannot stage the cache entry: %s",
                       strerror(errno));
    int fd = openat(c->tmp, stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* Directories 0755, files 0444 or 0555: the caller's, nobody else may
     * write any of it. */
    const struct tree_owner own = {false, 0, 0, 0755};
    struct tree_stats st = {0};
    int r = 0;
    if (fd < 0)
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, c->dir, "cannot stage the cache entry: %s", strerror(errno));
    else if (fchmod(fd, 0755) < 0 || lseek(c->archive, 0, SEEK_SET) < 0)
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, c->dir, "cannot stage the cache entry: %s", strerror(errno));
    else
        r = tree_unpack(a, c->archive, c->digest, fd, &own, &st, reterr);
    /* Complete on disk before it has a name others use. */
    if (r >= 0 && (syncfs(fd) < 0 || renameat(c->tmp, stage, c->entries, c->key) < 0))
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, c->dir, "cannot publish the cache entry: %s",
                    strerror(errno));
    if (fd >= 0) {
        if (r < 0)
            tree_remove_below(fd);
        close(fd);
    }
    if (r < 0) {
        (void)unlinkat(c->tmp, stage, AT_REMOVEDIR);
        return r;
    }
    /* Sealed as published (the rename changed the tree's root). */
    int efd = openat(c->entries, c->key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct tree_stats s = {0};
    struct pathset d = {0};
    bool ok;
    unsigned char seal[32];
    r = efd < 0 ? err_set(reterr, FY_E_IO, FY_STEP_INPUT, errno, c->dir, "cannot open the cache entry")
                : tree_scan_lower(a, efd, &s, &d, &ok, seal, reterr);
    pathset_free(&d);
    if (efd >= 0)
        close(efd);
    if (r >= 0 && (r = write_seal(c, seal)) < 0)
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot seal the cache entry: %s", strerror(-r));
    return r;
}

/* Entries unused for CACHE_MAX_AGE_SEC, and staging left by a crash, that
 * nobody holds: removed. Best effort. */
static void gc(struct act_cache *c) {
    time_t now = time(NULL);
    int fd = openat(c->seals, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct act_cache one = *c;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (strlen(de->d_name) != 64 || strcmp(de->d_name, c->key) == 0 ||
            fstatat(c->seals, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now - st.st_mtime < CACHE_MAX_AGE_SEC)
            continue;
        char name[80];
        snprintf(name, sizeof(name), "%s.lock", de->d_name);
        int lfd = openat(c->locks, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) == 0) {
            snprintf(one.key, sizeof(one.key), "%s", de->d_name);
            if (remove_entry(&one) == 0)
                (void)unlinkat(c->locks, name, 0);
        }
        if (lfd >= 0)
            close(lfd);
    }
    closedir(d);
}

int action_cache_entry(struct act_cache *c, const fy_action *a, struct pathset *dirs, struct tree_stats *st,
                       bool *overlayable, fy_error **reterr) {
    int first = try_entry(c, a, dirs, st, overlayable), r;
    if (first == 0) {
        c->state = "hit";
    } else {
        /* Made (or made again) under the exclusive lock, then used under
         * the shared one (flock converts: someone may make it between). */
        if ((r = relock(c, LOCK_EX)) < 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot lock the cache entry: %s", strerror(-r));
        int again = try_entry(c, a, dirs, st, overlayable);
        if (again != 0) {
            if ((r = remove_entry(c)) < 0)
                return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot remove the refused cache entry %s: %s",
                               c->key, strerror(-r));
            if ((r = build_entry(c, a, reterr)) < 0)
                return r;
            gc(c);
        }
        c->state = again == 0 ? "hit" : first == 2 || again == 2 ? "rebuilt" : "built";
        if ((r = relock(c, LOCK_SH)) < 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot lock the cache entry: %s", strerror(-r));
        if (again != 0 && try_entry(c, a, dirs, st, overlayable) != 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, 0, c->dir, "the cache entry %s changed as it was made",
                           c->key);
    }
    /* used now (gc by age) */
    (void)utimensat(c->seals, c->key, NULL, AT_SYMLINK_NOFOLLOW);
    if (!(c->entry_path = util_asprintf("%s/entries/%s", c->dir, c->key)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
    return 0;
}
