/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host's reader of a guest's tar streams (vm-tar.h). Everything in the
 * stream is untrusted: sizes and checksums are checked before use, and a
 * path is created one component at a time with openat(O_NOFOLLOW) from the
 * destination, so that nothing lands outside it whatever the host directory
 * holds. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "vm-proto.h"
#include "vm-tar.h"

_Static_assert(VMT_MAX_DEPTH == VMP_TAR_DEPTH, "the reader's depth is the agent's");

int vmt_init(struct vmt *t, int root) {
    memset(t, 0, sizeof(*t));
    t->root = root;
    t->out = -1;
    t->owner_uid = t->owner_gid = -1;
    t->copy_budget = UINT64_MAX;
    t->hash = malloc(sizeof(crypto_hash_sha256_state));
    return t->hash ? 0 : -1;
}

static void pax_clear(struct vmt *t) {
    free(t->pax);
    free(t->pax_path);
    free(t->pax_link);
    t->pax = t->pax_path = t->pax_link = NULL;
    t->pax_len = t->pax_have = 0;
    t->pax_in = t->pax_ready = t->pax_size_set = t->pax_mtime_set = false;
    t->pax_size = 0;
}

void vmt_free(struct vmt *t) {
    if (t->out >= 0)
        close(t->out);
    if (t->root >= 0)
        close(t->root);
    t->out = t->root = -1;
    free(t->hash);
    t->hash = NULL;
    pax_clear(t);
    free(t->made);
    t->made = NULL;
    t->nmade = t->capmade = 0;
    for (size_t i = 0; i < t->nlisted; i++)
        free(t->listed[i].path);
    t->nlisted = 0;
    for (size_t i = 0; i < t->nseen; i++)
        free(t->seen[i]);
    free(t->seen);
    t->seen = NULL;
    t->nseen = t->capseen = 0;
}

static void note_seen(struct vmt *t, const char *path) {
    if (t->seen_oom)
        return;
    size_t len = strlen(path);
    while (len && path[len - 1] == '/')
        len--;
    if (t->nseen == t->capseen) {
        size_t cap = t->capseen ? t->capseen * 2 : 256;
        char **n = realloc(t->seen, cap * sizeof(*n));
        if (!n) {
            t->seen_oom = true;
            return;
        }
        t->seen = n;
        t->capseen = cap;
    }
    char *c = strndup(path, len);
    if (!c) {
        t->seen_oom = true;
        return;
    }
    t->seen[t->nseen++] = c;
    t->sealed = false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void vmt_seal(struct vmt *t) {
    if (!t->sealed && t->nseen)
        qsort(t->seen, t->nseen, sizeof(*t->seen), cmp_str);
    t->sealed = true;
}

bool vmt_named(const struct vmt *t, const char *rel) {
    return t->sealed && t->nseen && bsearch(&rel, t->seen, t->nseen, sizeof(*t->seen), cmp_str) != NULL;
}

bool vmt_nameable(const char *rel, bool dir) {
    if (!vmt_path_ok(rel))
        return false;
    size_t parts = 1;
    for (const char *c = rel; *c; c++)
        parts += *c == '/';
    if (parts > VMT_MAX_DEPTH) /* (the agent says a deeper entry was not sent) */
        return false;
    /* The agent names what its PATH_MAX buffer holds: a longer name, in
     * ustar's fields or not, goes into a pax extended header. */
    return strlen(rel) + (dir ? 1 : 0) < VMT_MAX_PATH;
}

/* The parent directory of path (its last component in *leaf), walked from
 * the root without following symlinks; missing directories made when make
 * is set (else -ENOENT). */
static int walk_parent(struct vmt *t, char *path, char **leaf, bool make) {
    int fd = dup(t->root);
    if (fd < 0)
        return -errno;
    char *p = path;
    for (;;) {
        char *e = strchr(p, '/');
        if (!e || !e[1]) {
            if (e)
                *e = '\0';
            *leaf = p;
            return fd;
        }
        *e = '\0';
        if (make && mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
            int er = errno;
            close(fd);
            return -er;
        }
        int n = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int er = errno;
        close(fd);
        if (n < 0)
            return -er;
        fd = n;
        p = e + 1;
    }
}

int vmt_remove(struct vmt *t, const char *rel) {
    if (t->root < 0 || !vmt_path_ok(rel))
        return -EINVAL;
    char path[VMT_MAX_PATH + 1];
    snprintf(path, sizeof(path), "%s", rel);
    char *leaf;
    int fd = walk_parent(t, path, &leaf, false);
    if (fd < 0)
        return fd == -ENOENT || fd == -ENOTDIR ? 0 : fd; /* its directory went first */
    int r = util_remove_tree_at(fd, leaf, UTIL_RM_OPEN_UP);
    close(fd);
    return r;
}

static int fail(struct vmt *t, const char *why, int os) {
    if (!t->error) {
        t->error = why;
        t->os_error = os;
    }
    return -1;
}

bool vmt_path_ok(const char *path) {
    size_t len = strlen(path);
    if (len == 0 || len > VMT_MAX_PATH || path[0] == '/')
        return false;
    int depth = 0;
    for (const char *p = path; *p;) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0 || l > VMT_MAX_NAME || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (++depth > VMT_MAX_DEPTH)
            return false;
        if (!e)
            break;
        p = e + 1;
        if (!*p) /* one trailing slash (a directory) */
            break;
    }
    /* (Control characters are a name's as on any Linux file system: a tab
     * or a newline in one name refused the whole tree, and the attempt
     * ended as an infrastructure failure. Nothing here reads a name as
     * text: it is opened relative to a directory and written escaped.) */
    return true;
}

/* An octal field: digits, then spaces or NULs. */
static int octal(const uint8_t *f, size_t n, uint64_t *v) {
    size_t i = 0;
    uint64_t x = 0;
    while (i < n && f[i] == ' ')
        i++;
    size_t digits = 0;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (x >> 60)
            return -1;
        x = x * 8 + (uint64_t)(f[i] - '0');
    }
    if (!digits)
        return -1;
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return -1;
    *v = x;
    return 0;
}

/* The agent's nanoseconds of the modification time (vm-proto.h
 * VMP_TAR_NSEC_AT); anything else there is no value (0), never an error. */
static long padding_nsec(const uint8_t *h) {
    long ns = 0;
    for (size_t i = VMP_TAR_NSEC_AT; i < VMP_TAR_NSEC_AT + 9; i++) {
        if (h[i] < '0' || h[i] > '9')
            return 0;
        ns = ns * 10 + (h[i] - '0');
    }
    return ns;
}

/* The records of a pax extended header ("LEN key=value\n"; LEN counts the
 * whole record): path, linkpath and size are taken for the next entry;
 * other keys (times, ids) are ignored; a sparse file's map is refused, as
 * its data would be taken for the file's. */
static int parse_pax(struct vmt *t) {
    const char *p = t->pax;
    size_t n = t->pax_len, off = 0;
    while (off < n) {
        size_t len = 0, i = off;
        for (; i < n && p[i] >= '0' && p[i] <= '9' && len <= n; i++)
            len = len * 10 + (size_t)(p[i] - '0');
        if (i == off || i >= n || p[i] != ' ' || len > n - off || len < i - off + 3 || p[off + len - 1] != '\n')
            return fail(t, "tar: a malformed extended header record", 0);
        const char *kv = p + i + 1, *end = p + off + len - 1;
        const char *eq = memchr(kv, '=', (size_t)(end - kv));
        if (!eq || eq == kv)
            return fail(t, "tar: a malformed extended header record", 0);
        size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
        const char *v = eq + 1;
        if ((klen == 4 && !memcmp(kv, "path", 4)) || (klen == 8 && !memcmp(kv, "linkpath", 8))) {
            if (!vlen || vlen > VMT_MAX_PATH || memchr(v, '\0', vlen))
                return fail(t, "tar: an extended header's name refused", 0);
            char *c = strndup(v, vlen);
            if (!c)
                return fail(t, "tar: out of memory", ENOMEM);
            char **dst = klen == 4 ? &t->pax_path : &t->pax_link;
            free(*dst);
            *dst = c;
        } else if (klen == 4 && !memcmp(kv, "size", 4)) {
            uint64_t x = 0;
            if (!vlen || vlen > 19)
                return fail(t, "tar: an extended header's size refused", 0);
            for (size_t k = 0; k < vlen; k++) {
                if (v[k] < '0' || v[k] > '9')
                    return fail(t, "tar: an extended header's size refused", 0);
                x = x * 10 + (uint64_t)(v[k] - '0');
            }
            t->pax_size = x;
            t->pax_size_set = true;
        } else if (klen == 5 && !memcmp(kv, "mtime", 5)) {
            /* SECONDS[.FRACTION]; a negative or malformed one is ignored */
            uint64_t sec = 0;
            long ns = 0;
            size_t k = 0;
            for (; k < vlen && k < 12 && v[k] >= '0' && v[k] <= '9'; k++)
                sec = sec * 10 + (uint64_t)(v[k] - '0');
            bool ok = k > 0 && (k == vlen || v[k] == '.');
            if (ok && k < vlen) {
                long scale = 100000000;
                for (k++; k < vlen && ok; k++, scale /= 10) {
                    ok = v[k] >= '0' && v[k] <= '9';
                    ns += scale ? (v[k] - '0') * scale : 0;
                }
            }
            if (ok) {
                t->pax_mtime.tv_sec = (time_t)sec;
                t->pax_mtime.tv_nsec = ns;
                t->pax_mtime_set = true;
            }
        } else if (klen >= 10 && !memcmp(kv, "GNU.sparse", 10)) {
            return fail(t, "tar: a sparse file refused", 0);
        }
        off += len;
    }
    t->pax_ready = true;
    return 0;
}

/* The parent of path, with what the host holds under its leaf: a
 * directory in the way of a file or link, or a non-directory in the way
 * of a directory, is what the guest replaced (a name holds one thing), and
 * is removed, never followed. *had says whether something else was there
 * (then *old is its stat). */
static int clear_leaf(struct vmt *t, char *path, char **leaf, bool dir, bool *had, struct stat *old) {
    int dfd = walk_parent(t, path, leaf, true);
    if (dfd < 0) {
        fail(t, "tar entry: cannot reach its directory", -dfd);
        return -1;
    }
    *had = fstatat(dfd, *leaf, old, AT_SYMLINK_NOFOLLOW) == 0;
    if (!*had || (dir && S_ISDIR(old->st_mode)))
        return dfd;
    int r = util_remove_tree_at(dfd, *leaf, UTIL_RM_OPEN_UP);
    if (r < 0) {
        close(dfd);
        fail(t, "tar entry: cannot replace what the host directory holds", -r);
        return -1;
    }
    return dfd;
}

/* The files this stream made, by inode (open addressing, at most half
 * full; an empty slot is inode 0): a hard link is made only to one of them. */
static size_t made_slot(const struct vmt *t, dev_t dev, ino_t ino) {
    size_t i = (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev) & (t->capmade - 1);
    while (t->made[i].ino && !(t->made[i].ino == ino && t->made[i].dev == dev))
        i = (i + 1) & (t->capmade - 1);
    return i;
}

static int made_add(struct vmt *t, const struct stat *st) {
    if (2 * (t->nmade + 1) > t->capmade) {
        size_t cap = t->capmade ? t->capmade * 2 : 1024;
        struct vmt_inode *n = calloc(cap, sizeof(*n)), *old = t->made;
        if (!n)
            return -1;
        size_t oldcap = t->capmade;
        t->made = n;
        t->capmade = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].ino)
                t->made[made_slot(t, old[i].dev, old[i].ino)] = old[i];
        free(old);
    }
    struct vmt_inode *e = &t->made[made_slot(t, st->st_dev, st->st_ino)];
    if (!e->ino) {
        e->dev = st->st_dev;
        e->ino = st->st_ino;
        t->nmade++;
    }
    return 0;
}

static bool made_here(const struct vmt *t, const struct stat *st) {
    return t->capmade && st->st_ino && t->made[made_slot(t, st->st_dev, st->st_ino)].ino == st->st_ino;
}

/* A '1' entry: path becomes another name of the regular file the stream
 * made under link (never a file it did not make, never through a link),
 * or, where the host cannot link (another file system, the link count),
 * a copy of it. */
static int hard_link(struct vmt *t, char *path, const char *link, uint64_t size) {
    if (size)
        return fail(t, "tar entry: a hard link with data", 0);
    size_t ll = strlen(link);
    if (!vmt_path_ok(link) || link[ll - 1] == '/')
        return fail(t, "tar entry: a hard link's target refused", 0);
    t->hardlinks++;
    if (t->root < 0)
        return 0;
    char tp[VMT_MAX_PATH + 1], *tleaf;
    memcpy(tp, link, ll + 1);
    int tdfd = walk_parent(t, tp, &tleaf, false);
    int src = tdfd < 0 ? -1 : openat(tdfd, tleaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (tdfd >= 0)
        close(tdfd);
    struct stat st;
    if (src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode) || !made_here(t, &st)) {
        if (src >= 0)
            close(src);
        return fail(t, "tar entry: a hard link to a file the stream did not make", 0);
    }
    char *leaf;
    bool had;
    struct stat old;
    int dfd = clear_leaf(t, path, &leaf, false, &had, &old);
    if (dfd < 0) {
        close(src);
        return -1;
    }
    int r = linkat(src, "", dfd, leaf, AT_EMPTY_PATH);
    if (r < 0 && errno != EXDEV && errno != EMLINK) {
        char proc[40];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src);
        r = linkat(AT_FDCWD, proc, dfd, leaf, AT_SYMLINK_FOLLOW);
    }
    int er = errno;
    if (r < 0 && (er == EXDEV || er == EMLINK || er == EPERM) && (uint64_t)st.st_size > t->copy_budget) {
        /* (a copy per link past the file system's link count: never past
         * the output budget; 65,000 links of a 200 MiB file were 13 TB) */
        t->over_budget = true;
        close(dfd);
        close(src);
        return fail(t, "tar entry: a hard link the host can only copy, beyond the output limit", 0);
    }
    if (r < 0 && (er == EXDEV || er == EMLINK || er == EPERM)) {
        t->copy_budget -= (uint64_t)st.st_size;
        t->copied += (uint64_t)st.st_size;
        int out = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                         (st.st_mode & 0755) | 0600);
        r = out < 0 ? -1 : 0;
        er = errno;
        static uint8_t buf[65536];
        ssize_t n = 0;
        while (r == 0 && (n = read(src, buf, sizeof(buf))) > 0)
            if ((er = -util_write_all(out, buf, (size_t)n)) != 0)
                r = -1;
        if (n < 0 && r == 0) {
            r = -1;
            er = errno;
        }
        if (out >= 0) {
            struct timespec ts[2] = {st.st_mtim, st.st_mtim};
            (void)futimens(out, ts);
            close(out);
        }
    }
    close(dfd);
    close(src);
    return r < 0 ? fail(t, "tar entry: cannot make a hard link", er) : 0;
}

static int begin_entry(struct vmt *t) {
    const uint8_t *h = t->hdr;
    uint64_t sum, size, mode;
    if (octal(h + 148, 8, &sum) < 0)
        return fail(t, "tar header: bad checksum field", 0);
    uint64_t s = 0;
    for (size_t i = 0; i < 512; i++)
        s += (i >= 148 && i < 156) ? ' ' : h[i];
    if (s != sum)
        return fail(t, "tar header: checksum mismatch", 0);
    if (memcmp(h + 257, "ustar", 5) != 0)
        return fail(t, "tar header: not ustar", 0);
    if (octal(h + 124, 12, &size) < 0 || octal(h + 100, 8, &mode) < 0)
        return fail(t, "tar header: bad size or mode", 0);
    if (++t->entries > VMT_MAX_ENTRIES)
        return fail(t, "too many tar entries", 0);
    uint8_t type = h[156];
    if (type == 'x') {
        if (t->pax_ready)
            return fail(t, "tar: two extended headers for one entry", 0);
        if (size > VMT_PAX_MAX)
            return fail(t, "tar: an extended header too large", 0);
        if (!(t->pax = malloc(size ? (size_t)size : 1)))
            return fail(t, "tar: out of memory", ENOMEM);
        t->pax_len = (size_t)size;
        t->pax_have = 0;
        t->left = size;
        t->pad = (512 - size % 512) % 512;
        t->pax_in = true;
        if (!size) {
            t->pax_in = false;
            return parse_pax(t);
        }
        return 0;
    }
    if (type == 'g')
        return fail(t, "tar: a global extended header refused", 0);
    char path[VMT_MAX_PATH + 1];
    if (t->pax_path) {
        if (strlen(t->pax_path) >= sizeof(path))
            return fail(t, "tar entry: refused path", 0);
        memcpy(path, t->pax_path, strlen(t->pax_path) + 1);
    } else {
        char name[101], prefix[156];
        memcpy(name, h, 100);
        name[100] = '\0';
        memcpy(prefix, h + 345, 155);
        prefix[155] = '\0';
        int n = prefix[0] ? snprintf(path, sizeof(path), "%s/%s", prefix, name) : snprintf(path, sizeof(path), "%s", name);
        if (n < 0 || (size_t)n >= sizeof(path))
            return fail(t, "tar entry: refused path", 0);
    }
    if (t->pax_size_set)
        size = t->pax_size;
    uint64_t mt = 0;
    struct timespec mtime = {(time_t)(octal(h + 136, 12, &mt) == 0 ? mt : 0), 0};
    if (mtime.tv_sec)
        mtime.tv_nsec = padding_nsec(h);
    if (t->pax_mtime_set)
        mtime = t->pax_mtime;
    char link[VMT_MAX_PATH + 1] = "";
    if (type == '2' || type == '1') {
        if (t->pax_link)
            snprintf(link, sizeof(link), "%s", t->pax_link);
        else
            snprintf(link, sizeof(link), "%.100s", (const char *)h + 157);
    }
    pax_clear(t);
    if (!vmt_path_ok(path))
        return fail(t, "tar entry: refused path", 0);
    t->left = size;
    t->pad = (512 - size % 512) % 512;
    if (type == '0' || type == '\0' || type == '5' || type == '2' || type == 'U' || type == '1') {
        size_t len = strlen(path);
        if (len > VMT_NAMES_MAX - t->names_bytes)
            return fail(t, "tar: the names alone exceed what the host keeps", 0);
        t->names_bytes += len;
        note_seen(t, path);
    }
    if (type == 'U') {
        /* The guest's "unchanged since the host copied it in": the host
         * keeps what it has under that name (a claim that is false costs
         * the workload its own change, nothing of the host's). */
        if (size)
            return fail(t, "tar entry: an unchanged file with data", 0);
        t->unchanged++;
        return 0;
    }
    if (type == '1')
        return hard_link(t, path, link, size);
    if (type == '5' || type == '2') {
        if (size)
            return fail(t, type == '5' ? "tar entry: directory with data" : "tar entry: link with data", 0);
        if (type == '2' && !link[0])
            return fail(t, "tar entry: a link without a target", 0);
        if (type == '2')
            t->links++;
        if (t->root < 0)
            return 0;
        char *leaf;
        bool had;
        struct stat old;
        int dfd = clear_leaf(t, path, &leaf, type == '5', &had, &old);
        if (dfd < 0)
            return -1;
        int r, er;
        if (type == '5') {
            bool kept = had && S_ISDIR(old.st_mode);
            r = kept ? 0 : mkdirat(dfd, leaf, 0755);
            er = errno;
            if (r == 0 && !kept && t->owner_uid >= 0)
                (void)!fchownat(dfd, leaf, (uid_t)t->owner_uid, (gid_t)t->owner_gid, AT_SYMLINK_NOFOLLOW);
        } else {
            /* Made, never followed: this reader walks with O_NOFOLLOW, and
             * a link is the guest's to make, as it would be under a bind. */
            r = symlinkat(link, dfd, leaf);
            er = errno;
            if (r == 0 && had && fchownat(dfd, leaf, old.st_uid, old.st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
                /* (a new link's owner: the caller) */
            } else if (r == 0 && !had && t->owner_uid >= 0) {
                (void)!fchownat(dfd, leaf, (uid_t)t->owner_uid, (gid_t)t->owner_gid, AT_SYMLINK_NOFOLLOW);
            }
        }
        close(dfd);
        return r < 0 ? fail(t, type == '5' ? "tar entry: cannot make a directory" : "tar entry: cannot make a link", er) : 0;
    }
    if (type != '0' && type != '\0') {
        t->skipped++; /* not a regular file: its data is skipped, nothing made */
        return 0;
    }
    t->files++;
    memcpy(t->cur_path, path, strlen(path) + 1);
    t->cur_size = size;
    t->cur_mtime = mtime;
    crypto_hash_sha256_init(t->hash);
    if (t->root < 0)
        return 0;
    /* Never written through what the host directory holds under that name:
     * a FIFO (opening it for writing waits for a reader, past every
     * deadline), a device, or a hard link whose other name is outside the
     * tree (`cp -al`, ccache), which the guest would then rewrite. The name
     * is unlinked and made anew, exclusively; a regular file keeps its
     * owner. */
    char *leaf;
    bool had;
    struct stat old;
    int dfd = clear_leaf(t, path, &leaf, false, &had, &old);
    if (dfd < 0)
        return -1;
    t->out = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                    (mode_t)(mode & 0755) | 0600);
    int er = errno;
    close(dfd);
    if (t->out < 0)
        return fail(t, "tar entry: cannot create the file", er);
    struct stat st;
    if (fstat(t->out, &st) < 0 || !S_ISREG(st.st_mode))
        return fail(t, "tar entry: not a regular file on the host", EEXIST);
    if (made_add(t, &st) < 0)
        return fail(t, "tar: out of memory", ENOMEM);
    if (had && S_ISREG(old.st_mode) && (old.st_uid != st.st_uid || old.st_gid != st.st_gid) &&
        fchown(t->out, old.st_uid, old.st_gid) < 0) {
        /* (the caller's, as a new file's: its own to read) */
    } else if (!(had && S_ISREG(old.st_mode)) && t->owner_uid >= 0) {
        (void)!fchown(t->out, (uid_t)t->owner_uid, (gid_t)t->owner_gid);
    }
    return 0;
}

static void end_file(struct vmt *t) {
    unsigned char d[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(t->hash, d);
    if (t->nlisted < VMT_LISTED) {
        struct vmt_file *f = &t->listed[t->nlisted];
        if ((f->path = strdup(t->cur_path))) {
            static const char x[] = "0123456789abcdef";
            for (size_t i = 0; i < sizeof(d); i++) {
                f->sha256[2 * i] = x[d[i] >> 4];
                f->sha256[2 * i + 1] = x[d[i] & 15];
            }
            f->sha256[64] = '\0';
            f->size = t->cur_size;
            t->nlisted++;
        }
    }
    if (t->out >= 0) {
        /* The guest's modification time (ustar's whole seconds unless a
         * pax record says more: an older time than the write's, never a
         * newer one, so make and ninja never take a stale output for a
         * fresh one), where the host's "now" made an output that was
         * built before its source changed on the host look up to date. */
        struct timespec ts[2] = {t->cur_mtime, t->cur_mtime};
        (void)futimens(t->out, ts);
        close(t->out);
    }
    t->out = -1;
    t->cur_path[0] = '\0';
}

int vmt_feed(struct vmt *t, const uint8_t *p, size_t n) {
    if (t->error)
        return -1;
    while (n) {
        if (t->ended) {
            /* Only zero padding may follow the end. */
            for (size_t i = 0; i < n; i++)
                if (p[i])
                    return fail(t, "data after the end of the tar stream", 0);
            return 0;
        }
        if (t->left) {
            size_t c = n < t->left ? n : (size_t)t->left;
            if (t->pax_in) {
                memcpy(t->pax + t->pax_have, p, c);
                t->pax_have += c;
            } else if (t->cur_path[0]) {
                crypto_hash_sha256_update(t->hash, p, c);
                int we = t->out >= 0 ? -util_write_all(t->out, p, c) : 0;
                if (we)
                    return fail(t, "writing an output file", we);
                t->bytes += c;
            }
            p += c;
            n -= c;
            t->left -= c;
            if (!t->left && t->pax_in) {
                t->pax_in = false;
                if (parse_pax(t) < 0)
                    return -1;
            } else if (!t->left && t->cur_path[0]) {
                end_file(t);
            }
            continue;
        }
        if (t->pad) {
            size_t c = n < t->pad ? n : (size_t)t->pad;
            p += c;
            n -= c;
            t->pad -= c;
            continue;
        }
        size_t c = 512 - t->hdr_have < n ? 512 - t->hdr_have : n;
        memcpy(t->hdr + t->hdr_have, p, c);
        t->hdr_have += c;
        p += c;
        n -= c;
        if (t->hdr_have < 512)
            continue;
        t->hdr_have = 0;
        bool zero = true;
        for (size_t i = 0; i < 512 && zero; i++)
            zero = t->hdr[i] == 0;
        if (zero) {
            if (t->pax_ready)
                return fail(t, "tar: an extended header without its entry", 0);
            if (++t->zero_blocks == 2)
                t->ended = true;
            continue;
        }
        if (t->zero_blocks)
            return fail(t, "tar: a lone zero block", 0);
        if (begin_entry(t) < 0)
            return -1;
        if (!t->left && t->cur_path[0])
            end_file(t);
    }
    return 0;
}

int vmt_end(struct vmt *t) {
    if (t->error)
        return -1;
    if (!t->ended)
        return fail(t, "the tar stream ended early", 0);
    return 0;
}
