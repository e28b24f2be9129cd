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

static char *cache_dir(void) { return util_cache_dir("FORGEYARD_ACTION_CACHE", "actions"); }

/* A directory of the cache: made if missing, then trusted only if the
 * caller owns it and nobody else may write it. */
static int trusted_dir(int at, const char *name, mode_t mode) { return util_open_own_dir(at, name, mode, 022); }

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
    int r = util_mkdir_parents(c->dir, 0755);
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
    /* (O_NONBLOCK: a FIFO in the archive's place is refused below, not
     * waited on for a writer for good; a regular file ignores the flag) */
    if ((c->archive = open(a->input, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
        fstat(c->archive, &st) < 0) {
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

/* The published entry opened (*fd) and its seal read (want), before any
 * walk: 0, 1 absent, 2 refused (not the caller's, writable by others, no
 * seal: planted or half-made). */
static int open_entry(struct act_cache *c, int *fd, unsigned char want[32]) {
    struct stat sb;
    *fd = -1;
    if (fstatat(c->entries, c->key, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT && read_seal(c, want) < 0 ? 1 : 2;
    if (read_seal(c, want) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 022))
        return 2;
    return (*fd = openat(c->entries, c->key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ? 2 : 0;
}

/* The walk of the entry fd against its seal want: 0 (dirs, st,
 * *overlayable filled), or 2 refused (changed since it was sealed). */
static int check_entry(int fd, const unsigned char want[32], const fy_action *a, const struct tree_ids *ids,
                       unsigned threads, struct pathset *dirs, struct tree_stats *st, bool *overlayable) {
    unsigned char got[32];
    struct tree_stats s = {0};
    struct pathset d = {0};
    fy_error *e = NULL;
    bool ok = false;
    if (tree_scan_lower(a, fd, ids, threads, &s, &d, &ok, got, &e) < 0 || sodium_memcmp(got, want, 32) != 0) {
        fy_error_free(e);
        pathset_free(&d);
        return 2;
    }
    pathset_free(dirs);
    *dirs = d;
    *st = s;
    *overlayable = ok;
    return 0;
}

/* Whether the published entry is what was sealed: 0 (c->entry, dirs,
 * st, *overlayable filled), 1 absent, 2 refused (changed, planted,
 * half-made). */
static int try_entry(struct act_cache *c, const fy_action *a, const struct tree_ids *ids, struct pathset *dirs,
                     struct tree_stats *st, bool *overlayable) {
    unsigned char want[32];
    int fd, r = open_entry(c, &fd, want);
    if (r == 0 && (r = check_entry(fd, want, a, ids, 0, dirs, st, overlayable)) == 0) {
        close_fd(&c->entry);
        c->entry = fd;
        return 0;
    }
    if (fd >= 0)
        close(fd);
    return r;
}

/* The tree of the archive, unpacked into staging and published. */
static int build_entry(struct act_cache *c, const fy_action *a, const struct tree_ids *ids, fy_error **reterr) {
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
                : tree_scan_lower(a, efd, ids, 0, &s, &d, &ok, seal, reterr);
    pathset_free(&d);
    if (efd >= 0)
        close(efd);
    if (r >= 0 && (r = write_seal(c, seal)) < 0)
        r = err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot seal the cache entry: %s", strerror(-r));
    return r;
}

/* ---- collection (fy_action_cache_gc, and after each build) ---- */

static bool is_key(const char *name, size_t len) {
    if (len < 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return len == 64 || name[64] == '.';
}

/* Removes the entry key (tree, seal, lock file) if nobody holds its lock:
 * 1 removed, 0 in use (kept), a negative errno when it could not be
 * removed whole. c's directory fds are used; its key and lock are not. */
static int collect_entry(struct act_cache *c, const char *key) {
    char name[80];
    snprintf(name, sizeof(name), "%.64s.lock", key);
    int lfd = openat(c->locks, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lfd < 0)
        return -errno;
    if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(lfd);
        return e == EWOULDBLOCK ? 0 : -e;
    }
    struct act_cache one = *c;
    snprintf(one.key, sizeof(one.key), "%.64s", key);
    int r = remove_entry(&one);
    /* a waiter that opened this lock file sees it unlinked and opens the new one */
    if (r == 0)
        (void)unlinkat(c->locks, name, 0);
    close(lfd);
    return r < 0 ? r : 1;
}

/* Staging a crash left in tmp/: a tree or seal being made, or an entry
 * set aside for removal (KEY.*: nobody holds KEY's lock, which the maker
 * holds exclusively until it is renamed), a memo being written (memo.*,
 * renamed at once by its writer: older than a minute). */
static uint64_t collect_staging(struct act_cache *c, time_t now) {
    uint64_t left = 0;
    int fd = openat(c->tmp, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        struct stat st;
        if ((n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) || fstatat(c->tmp, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        int lfd = -1;
        char lname[80] = "";
        if (strncmp(n, "memo.", 5) == 0) {
            if (now - st.st_mtime < 60)
                continue;
        } else if (is_key(n, len) && len > 64) {
            snprintf(lname, sizeof(lname), "%.64s.lock", n);
            lfd = openat(c->locks, lname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0) {
                if (lfd >= 0)
                    close(lfd);
                continue;
            }
        } else {
            continue; /* not ours to judge */
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(c->tmp, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                left += tree_remove_below(sub);
                close(sub);
            }
            left += unlinkat(c->tmp, n, AT_REMOVEDIR) < 0;
        } else {
            left += unlinkat(c->tmp, n, 0) < 0;
        }
        if (lfd >= 0) {
            /* its lock file too, when nothing of the entry is left */
            char key[65];
            snprintf(key, sizeof(key), "%.64s", n);
            if (fstatat(c->entries, key, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
                fstatat(c->seals, key, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                (void)unlinkat(c->locks, lname, 0);
            close(lfd);
        }
    }
    closedir(d);
    return left;
}

/* Bytes a tree holds (allocated blocks), bounded by depth. */
static uint64_t tree_bytes(int dir, int depth) {
    uint64_t sum = 0;
    int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        struct stat st;
        if ((n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) || fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        sum += (uint64_t)st.st_blocks * 512;
        if (S_ISDIR(st.st_mode) && depth < 256) {
            int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                sum += tree_bytes(sub, depth + 1);
                close(sub);
            }
        }
    }
    closedir(d);
    return sum;
}

struct gc_ent { char key[65]; int64_t used_ns; uint64_t bytes; bool gone; };

static int cmp_used(const void *a, const void *b) {
    const struct gc_ent *x = a, *y = b;
    return x->used_ns < y->used_ns ? -1 : x->used_ns > y->used_ns;
}

static int64_t mtime_ns(const struct stat *st) { return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec; }

/* Every entry (a published tree, or a seal alone) with when it was last
 * used (its seal's mtime, else the tree's) and its size. */
static int list_entries(struct act_cache *c, bool sizes, struct vec *out) {
    int dirs[2] = {c->entries, c->seals};
    for (int k = 0; k < 2; k++) {
        int fd = openat(dirs[k], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            return -errno;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *n = de->d_name;
            if (strlen(n) != 64 || !is_key(n, 64))
                continue;
            struct stat seal, tree;
            bool has_seal = fstatat(c->seals, n, &seal, AT_SYMLINK_NOFOLLOW) == 0;
            bool has_tree = fstatat(c->entries, n, &tree, AT_SYMLINK_NOFOLLOW) == 0;
            if (k == 1 && has_tree)
                continue; /* listed with the trees */
            struct gc_ent *e = vec_push(out);
            if (!e) {
                closedir(d);
                return -ENOMEM;
            }
            memcpy(e->key, n, 65);
            e->used_ns = has_seal ? mtime_ns(&seal) : has_tree ? mtime_ns(&tree) : 0;
            if (sizes && has_tree && S_ISDIR(tree.st_mode)) {
                int t = openat(c->entries, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (t >= 0) {
                    e->bytes = (uint64_t)tree.st_blocks * 512 + tree_bytes(t, 0);
                    close(t);
                }
            }
        }
        closedir(d);
    }
    return 0;
}

/* The remembered archive digests whose entry is gone. */
static void collect_memos(struct act_cache *c) {
    int fd = openat(c->memos, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char buf[256], key[65];
        int m = openat(c->memos, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n = m < 0 ? -1 : read(m, buf, sizeof(buf));
        if (m >= 0)
            close(m);
        struct stat st;
        if (n > 65) {
            memcpy(key, buf + n - 65, 64);
            key[64] = '\0';
            if (is_key(key, 64) && fstatat(c->seals, key, &st, AT_SYMLINK_NOFOLLOW) == 0)
                continue;
        }
        (void)unlinkat(c->memos, de->d_name, 0);
    }
    closedir(d);
}

/* Lock files of keys with neither an entry nor a seal (an archive refused
 * or a build that failed): removed while held exclusively (a maker holds
 * its key's lock until its entry is in place; lock_entry sees an unlinked
 * lock file and opens the new one). */
static void collect_orphan_locks(struct act_cache *c) {
    int fd = openat(c->locks, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        if (len != 69 || strcmp(n + 64, ".lock") != 0 || !is_key(n, 64))
            continue;
        char key[65];
        snprintf(key, sizeof(key), "%.64s", n);
        struct stat st;
        int lfd = openat(c->locks, n, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) == 0 &&
            fstatat(c->entries, key, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
            fstatat(c->seals, key, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
            (void)unlinkat(c->locks, n, 0);
        if (lfd >= 0)
            close(lfd);
    }
    closedir(d);
}

/* Entries unused for max_age_ns (< 0: no bound), then the least recently
 * used down to max_bytes (FY_UNLIMITED: no bound), staging left by a
 * crash, and memos of entries gone; never an entry whose lock anyone
 * holds (an attempt using it, a maker). *removed: entries removed;
 * *failed: entries or staging that could not be removed. */
static int collect(struct act_cache *c, int64_t max_age_ns, uint64_t max_bytes, uint64_t *removed, uint64_t *failed) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    *failed += collect_staging(c, now.tv_sec);
    struct vec v;
    vec_init(&v, sizeof(struct gc_ent));
    int r = list_entries(c, max_bytes != FY_UNLIMITED, &v);
    if (r < 0) {
        free(v.items);
        return r;
    }
    uint64_t total = 0;
    VEC_EACH(&v, struct gc_ent, e) {
        total += e->bytes;
        if (max_age_ns < 0 || now_ns - e->used_ns < max_age_ns)
            continue;
        int k = collect_entry(c, e->key);
        *removed += k > 0;
        *failed += k < 0;
        if (k > 0) {
            e->gone = true;
            total -= e->bytes;
        }
    }
    if (max_bytes != FY_UNLIMITED && total > max_bytes) {
        qsort(v.items, v.n, sizeof(struct gc_ent), cmp_used);
        VEC_EACH(&v, struct gc_ent, e) {
            if (total <= max_bytes)
                break;
            if (e->gone)
                continue;
            int k = collect_entry(c, e->key);
            *removed += k > 0;
            *failed += k < 0;
            if (k > 0)
                total -= e->bytes;
        }
    }
    free(v.items);
    collect_memos(c);
    collect_orphan_locks(c);
    return 0;
}

/* After a build: entries unused for CACHE_MAX_AGE_SEC. Best effort. */
static void gc(struct act_cache *c) {
    uint64_t removed = 0, failed = 0;
    (void)collect(c, (int64_t)CACHE_MAX_AGE_SEC * 1000000000, FY_UNLIMITED, &removed, &failed);
}

/* The entry taken into use: its seal's mtime is its last use (gc by age),
 * c->entry_path names it. 0 or -ENOMEM. */
static int use_entry(struct act_cache *c) {
    (void)utimensat(c->seals, c->key, NULL, AT_SYMLINK_NOFOLLOW);
    return (c->entry_path = util_asprintf("%s/entries/%s", c->dir, c->key)) ? 0 : -ENOMEM;
}

int action_cache_entry(struct act_cache *c, const fy_action *a, const struct tree_ids *ids, struct pathset *dirs,
                       struct tree_stats *st, bool *overlayable, fy_error **reterr) {
    int first = try_entry(c, a, ids, dirs, st, overlayable), r;
    if (first == 0) {
        c->state = "hit";
    } else {
        /* Made (or made again) under the exclusive lock, then used under
         * the shared one (flock converts: someone may make it between). */
        if ((r = relock(c, LOCK_EX)) < 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot lock the cache entry: %s", strerror(-r));
        int again = try_entry(c, a, ids, dirs, st, overlayable);
        if (again != 0) {
            if ((r = remove_entry(c)) < 0)
                return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot remove the refused cache entry %s: %s",
                               c->key, strerror(-r));
            if ((r = build_entry(c, a, ids, reterr)) < 0)
                return r;
            gc(c);
        }
        c->state = again == 0 ? "hit" : first == 2 || again == 2 ? "rebuilt" : "built";
        if ((r = relock(c, LOCK_SH)) < 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, -r, c->dir, "cannot lock the cache entry: %s", strerror(-r));
        if (again != 0 && try_entry(c, a, ids, dirs, st, overlayable) != 0)
            return err_set(reterr, FY_E_IO, FY_STEP_INPUT, 0, c->dir, "the cache entry %s changed as it was made",
                           c->key);
    }
    return use_entry(c) < 0 ? err_set(reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory") : 0;
}

int action_cache_entry_unchecked(struct act_cache *c) {
    int fd, r = open_entry(c, &fd, c->seal);
    if (r != 0) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (use_entry(c) < 0) {
        close(fd);
        return -ENOMEM;
    }
    close_fd(&c->entry);
    c->entry = fd;
    c->state = "hit";
    return 0;
}

bool action_cache_check(const struct act_cache *c, const fy_action *a, const struct tree_ids *ids, unsigned threads,
                        struct tree_stats *st, struct pathset *dirs, bool *overlayable) {
    return check_entry(c->entry, c->seal, a, ids, threads, dirs, st, overlayable) == 0;
}

int fy_action_cache_gc(const char *cache_dir_path, uint64_t max_bytes, uint64_t max_age_usec, uint64_t *ret_removed,
                       fy_error **reterr) {
    if (ret_removed)
        *ret_removed = 0;
    if (cache_dir_path && cache_dir_path[0] != '/')
        return err_set(reterr, FY_E_INVAL, FY_STEP_CLEANUP, 0, cache_dir_path, "the cache directory must be absolute");
    struct act_cache c = {.root = -1, .entries = -1, .seals = -1, .locks = -1, .tmp = -1, .memos = -1, .archive = -1,
                          .lock = -1, .entry = -1};
    if (!(c.dir = cache_dir_path ? util_strdup(cache_dir_path) : cache_dir()))
        return cache_dir_path ? err_set(reterr, FY_E_NOMEM, FY_STEP_CLEANUP, 0, NULL, "out of memory")
                              : err_set(reterr, FY_E_NOTFOUND, FY_STEP_CLEANUP, 0, NULL,
                                        "no action cache here (FORGEYARD_ACTION_CACHE, XDG_CACHE_HOME, a home of this user's, or a "
                                        "forgeyard-UID directory of its own in TMPDIR or /var/tmp)");
    struct stat st;
    if (lstat(c.dir, &st) < 0 && errno == ENOENT) {
        action_cache_close(&c);
        return 0; /* nothing was ever cached */
    }
    int r = c.root = trusted_dir(AT_FDCWD, c.dir, 0711);
    /* A directory that is no cache (no entries/: never used, or a mistyped
     * path) has nothing to collect: nothing is made in it. */
    struct stat est;
    if (r >= 0 && fstatat(c.root, "entries", &est, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
        action_cache_close(&c);
        return 0;
    }
    const char *names[] = {"entries", "seals", "locks", "tmp", "archives"};
    int *fds[] = {&c.entries, &c.seals, &c.locks, &c.tmp, &c.memos};
    mode_t modes[] = {0711, 0700, 0700, 0700, 0700};
    for (size_t i = 0; r >= 0 && i < FY_ARRAY_SIZE(names); i++)
        r = *fds[i] = trusted_dir(c.root, names[i], modes[i]);
    if (r < 0) {
        int e = -r;
        r = err_set(reterr, e == EPERM ? FY_E_DENIED : FY_E_IO, FY_STEP_CLEANUP, e, c.dir,
                    e == EPERM ? "the action cache %s (or a directory in it) is not the caller's, or others may write "
                                 "it: not trusted"
                               : "cannot open the action cache %s: %s",
                    c.dir, strerror(e));
        action_cache_close(&c);
        return r;
    }
    int64_t age = max_age_usec == FY_UNLIMITED || max_age_usec > (uint64_t)INT64_MAX / 1000 ? -1
                                                                                           : (int64_t)max_age_usec * 1000;
    uint64_t removed = 0, failed = 0;
    r = collect(&c, age, max_bytes, &removed, &failed);
    if (ret_removed)
        *ret_removed = removed;
    if (r < 0)
        r = err_set(reterr, r == -ENOMEM ? FY_E_NOMEM : FY_E_IO, FY_STEP_CLEANUP, -r, c.dir,
                    "cannot list the action cache %s: %s", c.dir, strerror(-r));
    else if (failed)
        r = err_set(reterr, FY_E_IO, FY_STEP_CLEANUP, 0, c.dir,
                    "%" PRIu64 " entr%s of the action cache %s could not be removed whole", failed,
                    failed == 1 ? "y" : "ies", c.dir);
    action_cache_close(&c);
    return r;
}
