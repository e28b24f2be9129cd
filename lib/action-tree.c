/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The execution root of an action attempt: made from the input root
 * (a directory or an archive) before the sandbox starts, read for the
 * declared outputs after it is gone, then removed.
 *
 * Every path is walked one component at a time from a directory fd with
 * O_NOFOLLOW, so a link the workload left (or an archive planted) is never
 * followed; nothing here runs while a workload process exists (the attempt
 * is over: its whole tree was killed and reaped). Inputs are never written:
 * a file is hard-linked only when the sandbox's ids can neither write nor
 * re-mode it, otherwise it is copied read-only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <sodium.h>

#include "lazy.h"

#include "action.h"
#include "internal.h"

#ifndef FICLONE
#define FICLONE _IOW(0x94, 9, int)
#endif

#define TREE_DEPTH_MAX 256
#define UNDECLARED_LISTED 100
#define IOBUF (256u << 10)

static int fail(fy_error **reterr, int code, uint32_t step, int e, const char *path, const char *fmt, ...)
    FY_PRINTF(6, 7);
static int fail(fy_error **reterr, int code, uint32_t step, int e, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_setv(reterr, code, step, e, path, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- path sets ---- */

void pathset_free(struct pathset *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    *s = (struct pathset){0};
}

static int pathset_add(struct pathset *s, const char *p) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        char **v = realloc(s->v, cap * sizeof(char *));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    return (s->v[s->n] = strdup(p)) ? (s->n++, 0) : -ENOMEM;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool pathset_has(const struct pathset *s, const char *p) {
    return s->n && bsearch(&p, s->v, s->n, sizeof(char *), cmp_str);
}

void pathset_sort(struct pathset *s) {
    if (s->n)
        qsort(s->v, s->n, sizeof(char *), cmp_str);
}

bool pathset_same(struct pathset *a, struct pathset *b) {
    if (a->n != b->n)
        return false;
    pathset_sort(a);
    pathset_sort(b);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return false;
    return true;
}

/* ---- small fd helpers ---- */

static int open_dir(int at, const char *name) {
    return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static const struct tree_owner host_dirs = {false, 0, 0, 0755};

/* A directory just made: its owner and mode, exactly. */
static int own_dir(int fd, const struct tree_owner *mk) {
    if (mk->chown && fchown(fd, mk->uid, mk->gid) < 0)
        return -errno;
    return fchmod(fd, mk->dir_mode) < 0 ? -errno : 0;
}

/* The directory rel below at, one component at a time, never through a
 * link; with mk, missing components are made (owned as mk says). Returns an
 * fd or a negative errno (ELOOP: a link on the way; ENOTDIR: a file). */
static int walk(int at, const char *rel, const struct tree_owner *mk) {
    int fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char comp[256];
    for (const char *c = rel; c && *c;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len >= sizeof(comp)) {
            close(fd);
            return -ENAMETOOLONG;
        }
        memcpy(comp, c, len);
        comp[len] = '\0';
        int nfd = open_dir(fd, comp);
        if (nfd < 0 && errno == ENOENT && mk) {
            if (mkdirat(fd, comp, 0700) < 0 && errno != EEXIST) {
                int e2 = errno;
                close(fd);
                return -e2;
            }
            nfd = open_dir(fd, comp);
            int e2 = nfd >= 0 ? own_dir(nfd, mk) : 0;
            if (e2 < 0) {
                close(nfd);
                close(fd);
                return e2;
            }
        }
        if (nfd < 0) {
            int e2 = errno;
            close(fd);
            /* O_NOFOLLOW on a link to a directory: ELOOP (or ENOTDIR with
             * O_DIRECTORY on some kernels); tell them apart. */
            struct stat st;
            if (e2 == ENOTDIR && fstatat(at, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                e2 = ELOOP;
            return -e2;
        }
        close(fd);
        fd = nfd;
        c = e ? e + 1 : NULL;
    }
    return fd;
}

/* Splits rel into its directory ("" for none) and its last component. */
static void split(const char *rel, char *dir, size_t dirsz, const char **base) {
    const char *slash = strrchr(rel, '/');
    size_t n = slash ? (size_t)(slash - rel) : 0;
    if (n >= dirsz)
        n = dirsz - 1;
    memcpy(dir, rel, n);
    dir[n] = '\0';
    *base = slash ? slash + 1 : rel;
}

int tree_hash_fd(int fd, unsigned char digest[32], uint64_t *size) {
    struct digest st;
    unsigned char *buf = malloc(IOBUF);
    if (!buf || digest_init(&st) < 0) {
        free(buf);
        return -ENOMEM;
    }
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, IOBUF);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            digest_abandon(&st);
            return -e;
        }
        if (r == 0)
            break;
        digest_update(&st, buf, (size_t)r);
        total += (uint64_t)r;
    }
    free(buf);
    digest_final(&st, digest);
    if (size)
        *size = total;
    return 0;
}

/* ---- materialising the input root ---- */

struct mat {
    const fy_action *a;
    const struct tree_owner *own;
    uid_t first;
    uint32_t count;
    bool can_link;
    dev_t dst_dev;
    struct tree_stats *st;
    struct pathset *inputs;
    char path[PATH_MAX];   /* of the entry at hand, relative to the root */
    fy_error **reterr;
};

static bool mapped(const struct mat *m, uint32_t id) {
    return id >= m->first && id - m->first < m->count;
}

/* Whether the sandbox can neither write the file nor change its mode: not
 * owned by an id it maps, no write bit for group (with an ACL, the mask:
 * no named entry can grant write either) or others, readable and (when
 * executable) executable by others, which is what the sandbox's ids are. */
static bool linkable(const struct mat *m, int dir, const char *name, const struct stat *st) {
    mode_t md = st->st_mode;
    if (!(m->can_link && st->st_dev == m->dst_dev && !mapped(m, st->st_uid) && !mapped(m, st->st_gid) &&
          !(md & 0022) && (md & 0004) && (!(md & 0111) || (md & 0001)) && !(md & (S_ISUID | S_ISGID))))
        return false;
    /* A link keeps the file's ACL: a named entry that denies an id of the
     * sandbox what others get makes it a copy (which it can read). */
    const struct tree_ids ids = {.range = true, .first = m->first, .count = m->count};
    return tree_ids_grant(&ids, dir, name, st, (md & 0111) ? 5 : 4);
}

int tree_copy_data(int src, int dst, uint64_t size) {
    if (ioctl(dst, FICLONE, src) == 0)
        return 0;
    uint64_t done = 0;
    while (done < size) {
        ssize_t n = copy_file_range(src, NULL, dst, NULL, size - done > (1u << 30) ? (1u << 30) : size - done, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (uint64_t)n;
    }
    if (done == size)
        return 0;
    /* copy_file_range refused (EXDEV on old kernels, special file systems):
     * plain reads from where it stopped. */
    if (lseek(src, (off_t)done, SEEK_SET) < 0 || lseek(dst, (off_t)done, SEEK_SET) < 0)
        return -errno;
    char *buf = malloc(IOBUF);
    if (!buf)
        return -ENOMEM;
    int r = 0;
    while (done < size) {
        ssize_t n = read(src, buf, IOBUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EIO;
            break;
        }
        if ((r = util_write_all(dst, buf, (size_t)n)) < 0)
            break;
        done += (uint64_t)n;
    }
    free(buf);
    return r;
}

static int mat_file(struct mat *m, int src, int dst, const char *name, const struct stat *st) {
    if (linkable(m, src, name, st) && linkat(src, name, dst, name, 0) == 0) {
        m->st->linked++;
        return 0;
    }
    if ((m->st->bytes += (uint64_t)st->st_size) > m->a->limit[FY_ACTION_LIMIT_INPUT_BYTES])
        return fail(m->reterr, FY_E_RANGE, FY_STEP_INPUT, 0, m->path,
                    "the input root holds more than %" PRIu64 " bytes to copy (limits.input_bytes)",
                    m->a->limit[FY_ACTION_LIMIT_INPUT_BYTES]);
    int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st2;
    if (in < 0 || fstat(in, &st2) < 0 || st2.st_ino != st->st_ino || !S_ISREG(st2.st_mode)) {
        int e = in < 0 ? errno : EAGAIN;
        if (in >= 0)
            close(in);
        return fail(m->reterr, FY_E_IO, FY_STEP_INPUT, e, m->path, "cannot read the input file: %s", strerror(e));
    }
    int out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int r = out < 0 ? -errno : tree_copy_data(in, out, (uint64_t)st2.st_size);
    if (r >= 0 && fchmod(out, (st2.st_mode & 0111) ? 0555 : 0444) < 0)
        r = -errno;
    close(in);
    if (out >= 0)
        close(out);
    if (r < 0)
        return fail(m->reterr, FY_E_IO, FY_STEP_INPUT, -r, m->path, "cannot copy the input file: %s", strerror(-r));
    m->st->copied++;
    return 0;
}

static const char *type_name(mode_t md) {
    return S_ISFIFO(md) ? "a FIFO" : S_ISSOCK(md) ? "a socket" : S_ISCHR(md) ? "a character device"
         : S_ISBLK(md) ? "a block device" : S_ISDIR(md) ? "a directory" : S_ISLNK(md) ? "a symbolic link"
         : "a regular file";
}

static int mat_dir(struct mat *m, int src, int dst, int depth) {
    if (depth > TREE_DEPTH_MAX)
        return fail(m->reterr, FY_E_RANGE, FY_STEP_INPUT, 0, m->path, "the input root is nested deeper than %d",
                    TREE_DEPTH_MAX);
    int dfd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        int e = errno;
        if (dfd >= 0)
            close(dfd);
        return fail(m->reterr, FY_E_IO, FY_STEP_INPUT, e, m->path, "cannot read the input directory: %s", strerror(e));
    }
    size_t plen = strlen(m->path);
    int r = 0;
    struct dirent *de;
    while (r >= 0 && (errno = 0, de = readdir(d))) {
        const char *name = de->d_name;
        if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
            continue;
        if (plen + strlen(name) + 2 > sizeof(m->path)) {
            r = fail(m->reterr, FY_E_RANGE, FY_STEP_INPUT, 0, m->path, "an input path is longer than %d bytes",
                     PATH_MAX);
            break;
        }
        snprintf(m->path + plen, sizeof(m->path) - plen, "%s%s", plen ? "/" : "", name);
        if (++m->st->entries > m->a->limit[FY_ACTION_LIMIT_INPUT_ENTRIES]) {
            r = fail(m->reterr, FY_E_RANGE, FY_STEP_INPUT, 0, m->path,
                     "the input root has more than %" PRIu64 " entries (limits.input_entries)",
                     m->a->limit[FY_ACTION_LIMIT_INPUT_ENTRIES]);
            break;
        }
        struct stat st;
        if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot stat: %s", strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            int s2 = -1, d2 = -1;
            if (mkdirat(dst, name, 0700) < 0 || (s2 = open_dir(src, name)) < 0 || (d2 = open_dir(dst, name)) < 0 ||
                (errno = -own_dir(d2, m->own)) != 0)
                r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot make the directory: %s",
                         strerror(errno));
            else
                r = mat_dir(m, s2, d2, depth + 1);
            if (s2 >= 0)
                close(s2);
            if (d2 >= 0)
                close(d2);
        } else if (S_ISREG(st.st_mode)) {
            r = mat_file(m, src, dst, name, &st);
            if (r >= 0 && pathset_add(m->inputs, m->path) < 0)
                r = fail(m->reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
            if (n < 0 || (size_t)n >= sizeof(target) - 1) {
                r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, n < 0 ? errno : ENAMETOOLONG, m->path,
                         "cannot read the link");
            } else {
                target[n] = '\0';
                if (symlinkat(target, dst, name) < 0)
                    r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot make the link: %s",
                             strerror(errno));
                else if (pathset_add(m->inputs, m->path) < 0)
                    r = fail(m->reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
            }
        } else {
            r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, 0, m->path,
                     "the input root holds %s: only files, directories and links are inputs", type_name(st.st_mode));
        }
        m->path[plen] = '\0';
    }
    if (r >= 0 && errno)
        r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot read the input directory");
    closedir(d);
    return r;
}

/* An archive entry's name as a normalised relative path ("" for the root). */
static int archive_name(const char *raw, char *out, size_t outsz) {
    while (raw[0] == '.' && raw[1] == '/')
        raw += 2;
    size_t n = strlen(raw);
    while (n && raw[n - 1] == '/')
        n--;
    if (n == 1 && raw[0] == '.')
        n = 0;
    if (n >= outsz)
        return -ENAMETOOLONG;
    memcpy(out, raw, n);
    out[n] = '\0';
    return 0;
}

/* The archive's bytes, as libarchive reads them, hashed on the way. */
struct arsrc { int fd; crypto_hash_sha256_state *h; char buf[1 << 16]; };

static la_ssize_t arsrc_read(struct archive *ar, void *data, const void **blk) {
    struct arsrc *s = data;
    ssize_t n;
    do
        n = read(s->fd, s->buf, sizeof(s->buf));
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (ar)
            archive_set_error(ar, errno, "cannot read the archive");
        return -1;
    }
    if (s->h)
        crypto_hash_sha256_update(s->h, (const unsigned char *)s->buf, (size_t)n);
    *blk = s->buf;
    return n;
}

static int mat_archive(struct mat *m, int dst, int fd, const unsigned char *expect) {
    if (lazy_open(&lazy_archive) < 0)
        return fail(m->reterr, FY_E_UNSUPPORTED, FY_STEP_INPUT, 0, m->a->input,
                    "an archive input needs libarchive, which cannot be loaded: %s", lazy_archive.why);
    struct archive *ar = archive_read_new();
    crypto_hash_sha256_state h;
    struct arsrc *src = malloc(sizeof(*src));
    if (!ar || !src) {
        archive_read_free(ar);
        free(src);
        return fail(m->reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
    }
    crypto_hash_sha256_init(&h);
    *src = (struct arsrc){.fd = fd, .h = expect ? &h : NULL};
    /* Only decoders built into libarchive: for a filter it lacks, or with
     * archive_read_support_filter_all (lrzip, lzop, grzip), it would run an
     * external program on the host over the untrusted archive (ARCHIVE_WARN
     * says so). */
    int r = 0;
    if (archive_read_support_format_tar(ar) != ARCHIVE_OK || archive_read_support_format_cpio(ar) != ARCHIVE_OK ||
        archive_read_support_filter_none(ar) != ARCHIVE_OK || archive_read_support_filter_gzip(ar) != ARCHIVE_OK ||
        archive_read_support_filter_bzip2(ar) != ARCHIVE_OK || archive_read_support_filter_xz(ar) != ARCHIVE_OK ||
        archive_read_support_filter_zstd(ar) != ARCHIVE_OK || archive_read_support_filter_lz4(ar) != ARCHIVE_OK) {
        r = fail(m->reterr, FY_E_UNSUPPORTED, FY_STEP_INPUT, 0, m->a->input,
                 "this libarchive lacks a built-in decoder (tar, cpio, gzip, bzip2, xz, zstd, lz4): %s",
                 archive_error_string(ar) ? archive_error_string(ar) : "no reason given");
        archive_read_free(ar);
        free(src);
        return r;
    }
    if (archive_read_open(ar, src, NULL, arsrc_read, NULL) != ARCHIVE_OK) {
        int e = archive_errno(ar);
        r = fail(m->reterr, e == ENOENT ? FY_E_NOTFOUND : e == EACCES || e == EISDIR ? FY_E_IO : FY_E_INVAL,
                 FY_STEP_INPUT, e, m->a->input, "cannot read the archive: %s", archive_error_string(ar));
        archive_read_free(ar);
        free(src);
        return r;
    }
    struct archive_entry *ent;
    int ar_r;
    while (r >= 0 && (ar_r = archive_read_next_header(ar, &ent)) == ARCHIVE_OK) {
        if (archive_name(archive_entry_pathname(ent) ? archive_entry_pathname(ent) : "", m->path, sizeof(m->path)) < 0 ||
            !m->path[0]) {
            if (!m->path[0] && archive_entry_filetype(ent) == AE_IFDIR)
                continue; /* the root itself */
            r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, 0, m->a->input, "an archive entry has an empty or too long name");
            break;
        }
        if ((r = action_check_relpath(m->path, false, m->path, m->reterr)) < 0) {
            if (m->reterr && *m->reterr && !(*m->reterr)->is_static)
                (*m->reterr)->step = FY_STEP_INPUT;
            break;
        }
        if (++m->st->entries > m->a->limit[FY_ACTION_LIMIT_INPUT_ENTRIES]) {
            r = fail(m->reterr, FY_E_RANGE, FY_STEP_INPUT, 0, m->path,
                     "the input archive has more than %" PRIu64 " entries (limits.input_entries)",
                     m->a->limit[FY_ACTION_LIMIT_INPUT_ENTRIES]);
            break;
        }
        char dir[PATH_MAX];
        const char *base;
        split(m->path, dir, sizeof(dir), &base);
        int pfd = walk(dst, dir, m->own);
        if (pfd < 0) {
            r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, -pfd, m->path,
                     pfd == -ELOOP || pfd == -ENOTDIR ? "the entry's directory is a link or a file in the archive"
                                                      : "cannot make the entry's directory");
            break;
        }
        const char *hard = archive_entry_hardlink(ent);
        mode_t type = archive_entry_filetype(ent);
        if (hard) {
            char t[PATH_MAX], tdir[PATH_MAX];
            const char *tbase;
            struct stat st;
            int tfd = -1;
            if (archive_name(hard, t, sizeof(t)) < 0 || action_check_relpath(t, false, NULL, NULL) < 0) {
                r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, 0, m->path, "a hard link to \"%s\" leaves the tree", hard);
            } else {
                split(t, tdir, sizeof(tdir), &tbase);
                if ((tfd = walk(dst, tdir, NULL)) < 0 || fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                    r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, 0, m->path,
                             "a hard link to \"%s\", which is not an earlier file of the archive", t);
                else if (linkat(tfd, tbase, pfd, base, 0) < 0)
                    r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot make the hard link: %s",
                             strerror(errno));
            }
            if (tfd >= 0)
                close(tfd);
            if (r >= 0 && pathset_add(m->inputs, m->path) < 0)
                r = fail(m->reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
        } else if (type == AE_IFDIR) {
            int d = walk(pfd, base, m->own);
            if (d < 0)
                r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, -d, m->path, "cannot make the directory");
            else
                close(d);
        } else if (type == AE_IFLNK) {
            const char *target = archive_entry_symlink(ent);
            if (!target || symlinkat(target, pfd, base) < 0)
                r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, target ? errno : 0, m->path,
                         "cannot make the link (a duplicate entry?)");
            else if (pathset_add(m->inputs, m->path) < 0)
                r = fail(m->reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
        } else if (type == AE_IFREG) {
            int64_t size = archive_entry_size(ent);
            if (size < 0 || (m->st->bytes += (uint64_t)size) > m->a->limit[FY_ACTION_LIMIT_INPUT_BYTES]) {
                r = fail(m->reterr, FY_E_RANGE, FY_STEP_INPUT, 0, m->path,
                         "the input archive unpacks to more than %" PRIu64 " bytes (limits.input_bytes)",
                         m->a->limit[FY_ACTION_LIMIT_INPUT_BYTES]);
            } else {
                int out = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0) {
                    r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, errno, m->path,
                             "cannot create the file (a duplicate entry?): %s", strerror(errno));
                } else {
                    const void *blk;
                    size_t len;
                    la_int64_t off;
                    int dr;
                    while (r >= 0 && (dr = archive_read_data_block(ar, &blk, &len, &off)) == ARCHIVE_OK) {
                        /* (sparse entries: offsets beyond the declared size are refused) */
                        if (off < 0 || (uint64_t)off + len > (uint64_t)size)
                            r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, 0, m->path,
                                     "the entry's data goes beyond its declared size");
                        else if (pwrite(out, blk, len, off) != (ssize_t)len)
                            r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot write the file");
                    }
                    if (r >= 0 && dr != ARCHIVE_EOF)
                        r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, archive_errno(ar), m->path,
                                 "the archive is damaged: %s", archive_error_string(ar));
                    if (r >= 0 && (ftruncate(out, size) < 0 ||
                                   fchmod(out, (archive_entry_perm(ent) & 0111) ? 0555 : 0444) < 0))
                        r = fail(m->reterr, FY_E_IO, FY_STEP_INPUT, errno, m->path, "cannot finish the file");
                    close(out);
                    m->st->copied++;
                    if (r >= 0 && pathset_add(m->inputs, m->path) < 0)
                        r = fail(m->reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
                }
            }
        } else {
            r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, 0, m->path,
                     "the input archive holds %s: only files, directories and links are inputs", type_name(type));
        }
        close(pfd);
    }
    if (r >= 0 && ar_r != ARCHIVE_EOF)
        r = fail(m->reterr, FY_E_INVAL, FY_STEP_INPUT, archive_errno(ar), m->a->input, "the archive is damaged: %s",
                 archive_error_string(ar));
    archive_read_free(ar);
    if (r >= 0 && expect) {
        /* What follows the last entry counts too: the digest is the file's. */
        const void *blk;
        la_ssize_t n;
        while ((n = arsrc_read(NULL, src, &blk)) > 0)
            ;
        unsigned char got[32];
        crypto_hash_sha256_final(&h, got);
        if (n < 0 || sodium_memcmp(got, expect, 32) != 0)
            r = fail(m->reterr, FY_E_STATE, FY_STEP_INPUT, n < 0 ? errno : 0, m->a->input,
                     "the archive changed while it was read");
    }
    free(src);
    return r;
}

int tree_unpack(const fy_action *a, int fd, const unsigned char digest[32], int dst, const struct tree_owner *own,
                struct tree_stats *st, fy_error **reterr) {
    struct pathset inputs = {0};
    struct mat m = {.a = a, .own = own, .st = st, .inputs = &inputs, .reterr = reterr};
    int r = mat_archive(&m, dst, fd, digest);
    pathset_free(&inputs);
    return r;
}

int tree_materialise(const fy_action *a, int from, int dst, uid_t ids_first, uint32_t ids_count,
                     const struct tree_owner *own, struct tree_stats *st, struct pathset *inputs, fy_error **reterr) {
    struct stat dst_st;
    if (fstat(dst, &dst_st) < 0)
        return fail(reterr, FY_E_IO, FY_STEP_INPUT, errno, NULL, "cannot stat the execution root");
    struct mat m = {.a = a, .own = own, .first = ids_first, .count = ids_count, .can_link = ids_count > 0 && geteuid() == 0,
                    .dst_dev = dst_st.st_dev, .st = st, .inputs = inputs, .reterr = reterr};
    int r;
    if (from >= 0) {
        /* never linked: a link would change the cache entry's inodes */
        m.can_link = false;
        r = mat_dir(&m, from, dst, 0);
    } else if (a->input_kind == FY_INPUT_ARCHIVE) {
        /* (O_NONBLOCK: a FIFO is refused, not waited on for a writer) */
        int fd = open(a->input, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return fail(reterr, errno == ENOENT ? FY_E_NOTFOUND : FY_E_IO, FY_STEP_INPUT, errno, a->input,
                        "cannot read the archive: %s", strerror(errno));
        struct stat ast;
        if (fstat(fd, &ast) < 0 || !S_ISREG(ast.st_mode)) {
            close(fd);
            return fail(reterr, FY_E_INVAL, FY_STEP_INPUT, 0, a->input, "the input archive is not a regular file");
        }
        r = mat_archive(&m, dst, fd, NULL);
        close(fd);
    } else {
        int src = open(a->input, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (src < 0)
            return fail(reterr, errno == ENOENT ? FY_E_NOTFOUND : FY_E_IO, FY_STEP_INPUT, errno, a->input,
                        "cannot open the input root: %s", strerror(errno));
        r = mat_dir(&m, src, dst, 0);
        close(src);
    }
    if (r < 0)
        return r;
    if (inputs->n)
        qsort(inputs->v, inputs->n, sizeof(char *), cmp_str);
    /* The working directory and the parents of the declared outputs. */
    int wd = walk(dst, a->workdir, own);
    if (wd < 0)
        return fail(reterr, FY_E_INVAL, FY_STEP_INPUT, -wd, "$.working_directory",
                    "the working directory \"%s\" %s", a->workdir,
                    wd == -ELOOP || wd == -ENOTDIR ? "is a link or a file in the input root" : "cannot be made");
    VEC_EACH(&a->outputs, struct act_output, o) {
        char dir[PATH_MAX];
        const char *base;
        split(o->path, dir, sizeof(dir), &base);
        int pfd = walk(wd, dir, own);
        if (pfd < 0) {
            close(wd);
            return fail(reterr, FY_E_INVAL, FY_STEP_INPUT, -pfd, o->path,
                        "the directory of the declared output \"%s\" %s", o->path,
                        pfd == -ELOOP || pfd == -ENOTDIR ? "is a link or a file in the input root" : "cannot be made");
        }
        close(pfd);
    }
    close(wd);
    return 0;
}

/* ---- the overlay path: the input directory as a read-only lower ---- */

/* ---- the readability verdict: mode bits, or the POSIX ACL ---- */

int tree_ids_init(struct tree_ids *ids, uint32_t first, uint32_t count) {
    *ids = (struct tree_ids){.range = geteuid() == 0, .first = first, .count = count, .uid = geteuid(), .gid = getegid()};
    if (ids->range)
        return 0;
    int n = getgroups(0, NULL);
    if (n <= 0)
        return 0;
    if (!(ids->groups = calloc((size_t)n, sizeof(gid_t))))
        return FY_E_NOMEM;
    n = getgroups(n, ids->groups);
    ids->ngroups = n > 0 ? (size_t)n : 0;
    return 0;
}

void tree_ids_exact(struct tree_ids *ids, uid_t uid, gid_t gid) {
    if (ids->range) {
        free(ids->groups);
        ids->groups = NULL;
        ids->ngroups = 0;
    }
    ids->range = false;
    ids->uid = uid;
    ids->gid = gid;
}

void tree_ids_free(struct tree_ids *ids) {
    free(ids->groups);
    ids->groups = NULL;
    ids->ngroups = 0;
}

/* The kernel's xattr form of an ACL (little-endian): a version, then
 * (tag, perm, id) entries. */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_XATTR_VERSION 2u
enum { A_USER_OBJ = 0x01, A_USER = 0x02, A_GROUP_OBJ = 0x04, A_GROUP = 0x08, A_MASK = 0x10, A_OTHER = 0x20 };
struct acl_e { uint16_t tag, perm; uint32_t id; };

#ifndef SYS_getxattrat
#define SYS_getxattrat 464 /* every architecture's number since 6.13 */
#endif
static atomic_bool no_getxattrat;

/* getxattr of the entry name of dir, not following a link: getxattrat
 * (6.13+), else through /proc/self/fd; of dir itself when name is NULL. */
static ssize_t xattr_at(int dir, const char *name, const char *attr, void *buf, size_t len) {
    if (!name)
        return fgetxattr(dir, attr, buf, len);
    if (!atomic_load_explicit(&no_getxattrat, memory_order_relaxed)) {
        struct { uint64_t value; uint32_t size, flags; } args = {(uint64_t)(uintptr_t)buf, (uint32_t)len, 0};
        long n = syscall(SYS_getxattrat, dir, name, AT_SYMLINK_NOFOLLOW, attr, &args, sizeof(args));
        if (n >= 0 || (errno != ENOSYS && errno != EINVAL && errno != E2BIG))
            return n;
        if (errno == ENOSYS)
            atomic_store(&no_getxattrat, true);
    }
    if (dir == AT_FDCWD)
        return lgetxattr(name, attr, buf, len);
    char path[64 + NAME_MAX];
    snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir, name);
    return lgetxattr(path, attr, buf, len);
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The entry's ACL into *ret (malloc'd) and *n: 0 with *n 0 when it has
 * none (or its file system keeps none), 0 with entries, or -1 when it
 * cannot be read or is malformed (then nothing may be assumed of it). */
static int read_acl(int dir, const char *name, struct acl_e **ret, size_t *n) {
    unsigned char small[512], *buf = small;
    *ret = NULL;
    *n = 0;
    ssize_t len = xattr_at(dir, name, ACL_XATTR, small, sizeof(small));
    if (len < 0 && errno == ERANGE) {
        ssize_t want = xattr_at(dir, name, ACL_XATTR, NULL, 0);
        if (want <= 0 || want > (1 << 20) || !(buf = malloc((size_t)want)))
            return -1;
        len = xattr_at(dir, name, ACL_XATTR, buf, (size_t)want);
    }
    int r = 0;
    if (len < 0) {
        r = errno == ENODATA || errno == EOPNOTSUPP ? 0 : -1;
    } else if (len < 4 || (len - 4) % 8 || le32(buf) != ACL_XATTR_VERSION) {
        r = -1;
    } else if (len > 4) {
        size_t k = (size_t)(len - 4) / 8;
        struct acl_e *v = calloc(k, sizeof(*v));
        if (!v) {
            r = -1;
        } else {
            for (size_t i = 0; i < k; i++) {
                const unsigned char *e = buf + 4 + 8 * i;
                v[i] = (struct acl_e){le16(e), (uint16_t)(le16(e + 2) & 7), le32(e + 4)};
            }
            *ret = v;
            *n = k;
        }
    }
    if (buf != small)
        free(buf);
    return r;
}

static bool in_range(const struct tree_ids *ids, uint32_t id) { return id >= ids->first && id - ids->first < ids->count; }

static bool in_groups(const struct tree_ids *ids, gid_t g, bool supplementary) {
    if (g == ids->gid)
        return true;
    for (size_t i = 0; supplementary && i < ids->ngroups; i++)
        if (ids->groups[i] == g)
            return true;
    return false;
}

/* The owner's, owning group's and others' bits and the mask, from the
 * mode or, where the ACL has them, its entries. */
static void acl_base(const struct stat *st, const struct acl_e *acl, size_t n, unsigned *uo, unsigned *go,
                     unsigned *oth, unsigned *mask) {
    unsigned md = st->st_mode;
    *uo = md >> 6 & 7, *go = md >> 3 & 7, *oth = md & 7, *mask = 7;
    for (size_t i = 0; i < n; i++)
        switch (acl[i].tag) {
        case A_USER_OBJ: *uo = acl[i].perm; break;
        case A_GROUP_OBJ: *go = acl[i].perm; break;
        case A_OTHER: *oth = acl[i].perm; break;
        case A_MASK: *mask = acl[i].perm; break;
        }
}

/* The kernel's check (acl_permission_check, posix_acl_permission) for the
 * caller, its supplementary groups counted or not. */
static bool caller_grant(const struct tree_ids *ids, const struct stat *st, const struct acl_e *acl, size_t n,
                         unsigned want, bool supplementary) {
    unsigned uo, go, oth, mask;
    acl_base(st, acl, n, &uo, &go, &oth, &mask);
    if (st->st_uid == ids->uid)
        return (uo & want) == want;
    for (size_t i = 0; i < n; i++)
        if (acl[i].tag == A_USER && acl[i].id == ids->uid)
            return (acl[i].perm & mask & want) == want;
    bool matched = false;
    if (in_groups(ids, st->st_gid, supplementary)) {
        matched = true;
        if ((go & (n ? mask : 7) & want) == want)
            return true;
    }
    for (size_t i = 0; i < n; i++)
        if (acl[i].tag == A_GROUP && in_groups(ids, acl[i].id, supplementary)) {
            matched = true;
            if ((acl[i].perm & mask & want) == want)
                return true;
        }
    return !matched && (oth & want) == want;
}

/* As root: what every id of the range is sure to get. An id of the range
 * may be the owner, a named user, in the owning or a named group (the
 * sandbox's own gid only: it keeps no supplementary groups), or none of
 * them: each entry that may apply to one of them must grant. */
static bool range_grant(const struct tree_ids *ids, const struct stat *st, const struct acl_e *acl, size_t n,
                        unsigned want) {
    unsigned uo, go, oth, mask;
    acl_base(st, acl, n, &uo, &go, &oth, &mask);
    unsigned p = oth;
    if (in_range(ids, st->st_uid))
        p &= uo;
    if (in_range(ids, st->st_gid))
        p &= go & (n ? mask : 7);
    for (size_t i = 0; i < n; i++)
        if ((acl[i].tag == A_USER || acl[i].tag == A_GROUP) && in_range(ids, acl[i].id))
            p &= acl[i].perm & mask;
    return (p & want) == want;
}

static bool grant(const struct tree_ids *ids, const struct stat *st, const struct acl_e *acl, size_t n, unsigned want) {
    if (ids->range)
        return range_grant(ids, st, acl, n, want);
    /* Rootless: the sandbox may keep the caller's supplementary groups or
     * not; the verdict holds either way. */
    return caller_grant(ids, st, acl, n, want, true) && caller_grant(ids, st, acl, n, want, false);
}

/* Inodes known to have no ACL, by (device, inode, ctime): half of a walk's
 * system calls are ACL reads that find none, and a CI worker hands the
 * same inodes (an input tree hard-linked from its content store, or the
 * same checkout) to attempt after attempt. Any change of an ACL, a mode or
 * an owner sets the inode's ctime to the current time, which user space
 * cannot set back; an entry is only made for an inode whose ctime was at
 * least NOACL_SETTLED_NS old when it was read, so a change made after that
 * read, even within the same clock tick as it, gives a ctime no entry has.
 * A reused inode number comes with a new ctime too. Bounded: a full table
 * is emptied. */
#define NOACL_SETTLED_NS 2000000000ll
#define NOACL_MAX (1u << 18)
struct noacl { uint64_t dev, ino, ctime_ns; };
static struct {
    pthread_mutex_t lock;
    struct noacl *v;    /* open addressing; ino 0 and dev 0: empty */
    size_t cap, n;
} noacl = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A fork while another thread used the memo: the child starts an empty
 * one (the table let go of, not freed: it may be half rehashed). */
static void noacl_fork_child(void) {
    if (util_mutex_reclaim(&noacl.lock)) {
        noacl.v = NULL;
        noacl.cap = noacl.n = 0;
    }
}

__attribute__((constructor)) static void noacl_register_fork(void) { util_on_fork_child(noacl_fork_child); }

static uint64_t ctime_ns(const struct stat *st) {
    return (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;
}

/* The slot of (dev, ino) in the table v of cap slots (a power of two, never
 * full): its entry, or the empty slot where it would go. */
static struct noacl *noacl_slot(struct noacl *v, size_t cap, uint64_t dev, uint64_t ino) {
    uint64_t h = (ino * 0x9E3779B97F4A7C15ull) ^ (dev * 0xC2B2AE3D27D4EB4Full);
    size_t i = (size_t)(h >> 17) & (cap - 1);
    while ((v[i].ino || v[i].dev) && !(v[i].ino == ino && v[i].dev == dev))
        i = (i + 1) & (cap - 1);
    return &v[i];
}

static bool noacl_known(const struct stat *st) {
    pthread_mutex_lock(&noacl.lock);
    const struct noacl *e = noacl.v ? noacl_slot(noacl.v, noacl.cap, st->st_dev, st->st_ino) : NULL;
    bool hit = e && (e->ino || e->dev) && e->ctime_ns == ctime_ns(st);
    pthread_mutex_unlock(&noacl.lock);
    return hit;
}

static void noacl_note(const struct stat *st) {
    struct timespec now;
    if ((!st->st_ino && !st->st_dev) || clock_gettime(CLOCK_REALTIME, &now) < 0)
        return;
    int64_t age = ((int64_t)now.tv_sec - (int64_t)st->st_ctim.tv_sec) * 1000000000ll +
                  ((int64_t)now.tv_nsec - (int64_t)st->st_ctim.tv_nsec);
    if (age < NOACL_SETTLED_NS)
        return;
    pthread_mutex_lock(&noacl.lock);
    if (!noacl.v || noacl.n + 1 > noacl.cap / 2) {
        /* grow (rehash), or empty a full table */
        size_t cap = !noacl.v ? 4096 : noacl.cap < NOACL_MAX ? noacl.cap * 2 : noacl.cap;
        struct noacl *v = calloc(cap, sizeof(*v));
        if (v) {
            for (size_t k = 0; noacl.v && cap != noacl.cap && k < noacl.cap; k++)
                if (noacl.v[k].ino || noacl.v[k].dev)
                    *noacl_slot(v, cap, noacl.v[k].dev, noacl.v[k].ino) = noacl.v[k];
            free(noacl.v);
            noacl.v = v;
            noacl.n = cap != noacl.cap ? noacl.n : 0;
            noacl.cap = cap;
        }
    }
    if (noacl.v && noacl.n + 1 <= noacl.cap / 2) {
        struct noacl *e = noacl_slot(noacl.v, noacl.cap, st->st_dev, st->st_ino);
        noacl.n += !e->ino && !e->dev;
        *e = (struct noacl){st->st_dev, st->st_ino, ctime_ns(st)};
    }
    pthread_mutex_unlock(&noacl.lock);
}

/* Tests: forget every entry (the next walk reads every ACL again). */
void tree_noacl_forget(void) {
    pthread_mutex_lock(&noacl.lock);
    free(noacl.v);
    noacl.v = NULL;
    noacl.cap = noacl.n = 0;
    pthread_mutex_unlock(&noacl.lock);
}

bool tree_ids_grant(const struct tree_ids *ids, int dir, const char *name, const struct stat *st, unsigned want) {
    struct acl_e *acl = NULL;
    size_t n = 0;
    if (noacl_known(st))
        return grant(ids, st, NULL, 0, want);
    if (read_acl(dir, name, &acl, &n) < 0)
        return false;
    if (!n)
        noacl_note(st);
    bool ok = grant(ids, st, acl, n, want);
    free(acl);
    return ok;
}

/* Whether the sandbox's ids reach an entry of the lower as they would its
 * materialised form (where a copy is readable): read it (and search or
 * execute it where any may), by its mode bits or its ACL. The ACL is read
 * only while the verdict is still yes. */
static bool reachable(const struct tree_ids *ids, int dir, const char *name, const struct stat *st) {
    mode_t md = st->st_mode;
    if (S_ISLNK(md))
        return true;
    unsigned want = S_ISDIR(md) || (md & 0111) ? 5 : 4;
    return tree_ids_grant(ids, dir, name, st, want);
}

/* The walk is the overlay path's whole per-file cost: one getdents64 per
 * directory into a large buffer, one fstatat per entry (the verdict needs
 * the type, mode and owner of every entry; nothing cheaper tells them), a
 * path built only for directories, errors and seals, and the input root's
 * top-level directories shared between this thread and one helper (the
 * walk is syscall-bound: two threads halve it on an idle second core). */
struct ld64 { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; };
#define DENTS_BUF (32u << 10)
#define SCAN_THREADS TREE_SCAN_THREADS

_Thread_local bool tree_scan_yields;
#define SCAN_YIELD_EVERY 64        /* entries between two sched_yield calls */

struct scan_shared {
    uint64_t root_mnt;         /* the input root's mount id (0: not known) */
    const fy_action *a;
    const struct tree_ids *ids;
    bool dirs_only;            /* tree_scan_dirs: the types getdents gives, no verdict */
    atomic_uint_fast64_t entries;
    atomic_bool stop;
    /* the top-level directories, handed out by next */
    char **top;
    size_t ntop;
    atomic_size_t next;
    unsigned char (*top_seal)[32];   /* one digest per top-level directory, or NULL */
};

struct scan {
    struct scan_shared *sh;
    struct pathset dirs;               /* this worker's, parents first */
    bool ok;
    int r;
    fy_error *err;
    struct digest *seal;               /* NULL: no seal */
    unsigned since_yield;              /* entries since the last sched_yield */
    bool yields;                       /* tree_scan_yields, of the thread that began the walk */
    char path[PATH_MAX];
};

/* One entry into the seal: what any change to it (content, mode, owner,
 * links, a replacement) changes: ctime cannot be set from user space. */
static void seal_entry(struct digest *h, const char *path, const struct stat *st) {
    uint64_t f[10] = {st->st_mode, st->st_uid, st->st_gid, (uint64_t)st->st_size, st->st_ino, st->st_nlink,
                      (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_ctim.tv_sec,
                      (uint64_t)st->st_ctim.tv_nsec};
    digest_update(h, path, strlen(path) + 1);
    digest_update(h, f, sizeof(f));
}

static int scan_fail(struct scan *s, int code, int e, const char *fmt, ...) FY_PRINTF(4, 5);
static int scan_fail(struct scan *s, int code, int e, const char *fmt, ...) {
    if (!s->err) {
        va_list ap;
        va_start(ap, fmt);
        err_setv(&s->err, code, FY_STEP_INPUT, e, s->path, fmt, ap);
        va_end(ap);
    }
    atomic_store(&s->sh->stop, true);
    return s->r = code;
}

static int scan_dir(struct scan *s, int src, int depth, bool top);

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif
/* fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW), and the mount id of what
 * it names into *mnt (0: not known): one statx. */
static int entry_stat(int dir, const char *name, struct stat *st, uint64_t *mnt) {
    struct statx sx;
    *mnt = 0;
    if (statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] ? 0 : AT_EMPTY_PATH),
              STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
        return errno == ENOSYS ? fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH)) : -1;
    memset(st, 0, sizeof(*st));
    st->st_mode = sx.stx_mode;
    st->st_uid = sx.stx_uid;
    st->st_gid = sx.stx_gid;
    st->st_size = (off_t)sx.stx_size;
    st->st_ino = sx.stx_ino;
    st->st_nlink = sx.stx_nlink;
    st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
    st->st_blocks = (blkcnt_t)sx.stx_blocks;
    st->st_blksize = (blksize_t)sx.stx_blksize;
    st->st_atim = (struct timespec){sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec};
    st->st_mtim = (struct timespec){sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec};
    st->st_ctim = (struct timespec){sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec};
    if (sx.stx_mask & STATX_MNT_ID)
        *mnt = sx.stx_mnt_id;
    return 0;
}

/* The entry name of the directory src, whose path is s->path[0..plen). */
static int scan_entry(struct scan *s, int src, const char *name, unsigned char dtype, size_t plen, int depth,
                      bool top) {
    const struct scan_shared *sh = s->sh;
    if (s->yields && ++s->since_yield >= SCAN_YIELD_EVERY) {
        s->since_yield = 0;
        sched_yield();
    }
    size_t nl = strlen(name);
    if (plen + nl + 2 > sizeof(s->path))
        return scan_fail(s, FY_E_RANGE, 0, "an input path is longer than %d bytes", PATH_MAX);
    /* the path, in place (cheap); read only for directories, errors, seals */
    char *p = s->path + plen;
    if (plen)
        *p++ = '/';
    memcpy(p, name, nl + 1);
    struct stat st;
    uint64_t mnt = 0;
    if (sh->dirs_only && dtype != DT_UNKNOWN) {
        /* the type getdents gives: only directories go further */
        st.st_mode = DTTOIF(dtype);
    } else if (entry_stat(src, name, &st, &mnt) < 0) {
        return scan_fail(s, FY_E_IO, errno, "cannot stat: %s", strerror(errno));
    }
    /* A mount below the input root (another file system, or a bind of one
     * of its own): an overlay cannot have it in its lower layer (the
     * kernel refuses to clone a lower with locked submounts), so the root
     * is materialised instead of failing at the mount. */
    if (!sh->dirs_only && mnt && sh->root_mnt && mnt != sh->root_mnt)
        s->ok = false;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
        return scan_fail(s, FY_E_INVAL, 0, "the input root holds %s: only files, directories and links are inputs",
                         type_name(st.st_mode));
    if (!sh->dirs_only)
        s->ok = s->ok && reachable(sh->ids, src, name, &st);
    if (s->seal)
        seal_entry(s->seal, s->path, &st);
    if (!S_ISDIR(st.st_mode))
        return 0;
    if (top) {
        /* the walk of a top-level directory waits for the workers */
        if (s->sh->ntop % 64 == 0) {
            char **v = realloc(s->sh->top, (s->sh->ntop + 64) * sizeof(char *));
            if (!v)
                return scan_fail(s, FY_E_NOMEM, 0, "out of memory");
            s->sh->top = v;
        }
        if (!(s->sh->top[s->sh->ntop] = strdup(name)))
            return scan_fail(s, FY_E_NOMEM, 0, "out of memory");
        s->sh->ntop++;
        return 0;
    }
    int sub = open_dir(src, name);
    if (sub < 0)
        return scan_fail(s, FY_E_IO, errno, "cannot open the input directory: %s", strerror(errno));
    int r = pathset_add(&s->dirs, s->path) < 0 ? scan_fail(s, FY_E_NOMEM, 0, "out of memory")
                                               : scan_dir(s, sub, depth + 1, false);
    close(sub);
    return r;
}

static int scan_dir(struct scan *s, int src, int depth, bool top) {
    if (depth > TREE_DEPTH_MAX)
        return scan_fail(s, FY_E_RANGE, 0, "the input root is nested deeper than %d", TREE_DEPTH_MAX);
    /* The directories alone: a directory whose link count is exactly 2
     * has none below it (where a file system counts links of directories;
     * one that does not says 1), so it need not be listed. The verdict's
     * walk lists everything and its directories must then be these. */
    struct stat ds;
    if (s->sh->dirs_only && !top && fstat(src, &ds) == 0 && S_ISDIR(ds.st_mode) && ds.st_nlink == 2)
        return 0;
    int dfd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return scan_fail(s, FY_E_IO, errno, "cannot read the input directory: %s", strerror(errno));
    /* The whole listing first (a recursion below reads its own). */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int r = 0;
    for (;;) {
        if (cap - len < DENTS_BUF) {
            char *nb = realloc(buf, cap + DENTS_BUF);
            if (!nb) {
                r = scan_fail(s, FY_E_NOMEM, 0, "out of memory");
                break;
            }
            buf = nb;
            cap += DENTS_BUF;
        }
        long n = syscall(SYS_getdents64, dfd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = scan_fail(s, FY_E_IO, errno, "cannot read the input directory: %s", strerror(errno));
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(dfd);
    /* Counted a directory at a time (one shared counter, seldom touched). */
    uint64_t count = 0;
    for (size_t o = 0; r >= 0 && o < len;) {
        const struct ld64 *e = (const struct ld64 *)(buf + o);
        o += e->reclen;
        count += !(e->name[0] == '.' && (!e->name[1] || (e->name[1] == '.' && !e->name[2])));
    }
    if (r >= 0 && atomic_fetch_add(&s->sh->entries, count) + count > s->sh->a->limit[FY_ACTION_LIMIT_INPUT_ENTRIES])
        r = scan_fail(s, FY_E_RANGE, 0, "the input root has more than %" PRIu64 " entries (limits.input_entries)",
                      s->sh->a->limit[FY_ACTION_LIMIT_INPUT_ENTRIES]);
    size_t plen = strlen(s->path);
    for (size_t o = 0; r >= 0 && o < len && !atomic_load_explicit(&s->sh->stop, memory_order_relaxed);) {
        const struct ld64 *e = (const struct ld64 *)(buf + o);
        o += e->reclen;
        const char *nm = e->name;
        if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
            continue;
        r = scan_entry(s, src, nm, e->type, plen, depth, top);
        s->path[plen] = '\0';
    }
    free(buf);
    return r < 0 ? r : s->r;
}

struct worker { struct scan s; int root; };

static void *scan_worker(void *arg) {
    struct worker *w = arg;
    struct scan *s = &w->s;
    struct scan_shared *sh = s->sh;
    for (size_t i; s->r >= 0 && !atomic_load(&sh->stop) && (i = atomic_fetch_add(&sh->next, 1)) < sh->ntop;) {
        struct digest h = {NULL};
        if (sh->top_seal) {
            if (digest_init(&h) < 0) {
                scan_fail(s, FY_E_NOMEM, 0, "out of memory");
                break;
            }
            s->seal = &h;
        }
        snprintf(s->path, sizeof(s->path), "%s", sh->top[i]);
        int sub = open_dir(w->root, sh->top[i]);
        if (sub < 0)
            scan_fail(s, FY_E_IO, errno, "cannot open the input directory: %s", strerror(errno));
        else if (pathset_add(&s->dirs, s->path) < 0)
            scan_fail(s, FY_E_NOMEM, 0, "out of memory");
        else
            scan_dir(s, sub, 1, false);
        if (sub >= 0)
            close(sub);
        if (sh->top_seal)
            digest_final(&h, sh->top_seal[i]);
        s->seal = NULL;
    }
    return NULL;
}

static int scan_tree(const fy_action *a, int src, const struct tree_ids *ids, bool dirs_only, unsigned threads,
                     struct tree_stats *st, struct pathset *dirs, bool *overlayable, unsigned char seal[32],
                     fy_error **reterr) {
    struct stat top;
    *overlayable = false;
    if (fstat(src, &top) < 0)
        return fail(reterr, FY_E_IO, FY_STEP_INPUT, errno, a->input, "cannot stat the input root");
    struct scan_shared sh = {.a = a, .ids = ids, .dirs_only = dirs_only};
    struct stat rst;
    if (!dirs_only && entry_stat(src, "", &rst, &sh.root_mnt) < 0)
        sh.root_mnt = 0;
    atomic_init(&sh.entries, 0);
    atomic_init(&sh.stop, false);
    atomic_init(&sh.next, 0);
    struct worker w[SCAN_THREADS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < SCAN_THREADS; i++) {
        w[i].s.sh = &sh;
        w[i].s.ok = true;
        w[i].s.yields = tree_scan_yields;
        w[i].root = src;
    }
    int r = 0;
    bool root_ok = true;
    struct digest rs = {NULL};
    if (seal && digest_init(&rs) < 0)
        return fail(reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
    {
        /* The root's own entries here; its directories listed for the workers. */
        w[0].s.seal = seal ? &rs : NULL;
        scan_dir(&w[0].s, src, 0, true);
        w[0].s.seal = NULL;
        root_ok = w[0].s.ok;
        w[0].s.ok = true;
    }
    if (w[0].s.r >= 0 && sh.ntop) {
        if (seal && !(sh.top_seal = calloc(sh.ntop, 32)))
            r = fail(reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
        pthread_t th[SCAN_THREADS];
        int started = 0;
        if (r >= 0) {
            int nthreads = threads && threads < SCAN_THREADS ? (int)threads : SCAN_THREADS;
            for (int i = 1; i < nthreads && sh.ntop > 1; i++, started++)
                if (util_thread_start(&th[i], false, true, scan_worker, &w[i]) != 0)
                    break; /* the walk is the same without it */
            scan_worker(&w[0]);
            for (int i = 1; i <= started; i++)
                pthread_join(th[i], NULL);
        }
    }
    /* The first failure (a worker's order), else the lists, parents first. */
    for (int i = 0; i < SCAN_THREADS && r >= 0; i++)
        if (w[i].s.r < 0) {
            r = w[i].s.r;
            if (reterr && !*reterr)
                *reterr = w[i].s.err;
            else
                fy_error_free(w[i].s.err);
            w[i].s.err = NULL;
        }
    bool ok = dirs_only || (root_ok && reachable(ids, src, NULL, &top));
    for (int i = 0; i < SCAN_THREADS; i++) {
        ok = ok && w[i].s.ok;
        for (size_t j = 0; r >= 0 && j < w[i].s.dirs.n; j++)
            if (pathset_add(dirs, w[i].s.dirs.v[j]) < 0)
                r = fail(reterr, FY_E_NOMEM, FY_STEP_INPUT, 0, NULL, "out of memory");
        fy_error_free(w[i].s.err);
        pathset_free(&w[i].s.dirs);
    }
    if (seal) {
        for (size_t i = 0; r >= 0 && sh.top_seal && i < sh.ntop; i++)
            digest_update(&rs, sh.top_seal[i], 32);
        digest_final(&rs, seal);
    }
    for (size_t i = 0; i < sh.ntop; i++)
        free(sh.top[i]);
    free(sh.top);
    free(sh.top_seal);
    st->entries += atomic_load(&sh.entries);
    *overlayable = r >= 0 && ok;
    return r;
}

int tree_scan_lower(const fy_action *a, int src, const struct tree_ids *ids, unsigned threads, struct tree_stats *st,
                    struct pathset *dirs, bool *overlayable, unsigned char seal[32], fy_error **reterr) {
    return scan_tree(a, src, ids, false, threads, st, dirs, overlayable, seal, reterr);
}

int tree_scan_dirs(const fy_action *a, int src, struct pathset *dirs, fy_error **reterr) {
    struct tree_stats st = {0};
    bool ok;
    return scan_tree(a, src, NULL, true, 0, &st, dirs, &ok, NULL, reterr);
}

/* Copies the lower's entry name (in the directory fds src, dst) into the
 * upper: a file read-only (as materialised), a link as a link, a directory
 * whole (its directories exist already: the skeleton has them all). */
static int seed(const fy_action *a, int src, int dst, const char *name, const struct tree_owner *own,
                struct tree_stats *st, int depth, fy_error **reterr) {
    struct stat sb;
    if (fstatat(src, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : fail(reterr, FY_E_IO, FY_STEP_INPUT, errno, name, "cannot stat the input");
    if (S_ISLNK(sb.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
        if (n < 0 || (size_t)n >= sizeof(target) - 1)
            return fail(reterr, FY_E_IO, FY_STEP_INPUT, n < 0 ? errno : ENAMETOOLONG, name, "cannot read the link");
        target[n] = '\0';
        if (symlinkat(target, dst, name) < 0)
            return fail(reterr, FY_E_IO, FY_STEP_INPUT, errno, name, "cannot make the link: %s", strerror(errno));
        return 0;
    }
    if (S_ISREG(sb.st_mode)) {
        struct mat m = {.a = a, .own = own, .st = st, .reterr = reterr};
        snprintf(m.path, sizeof(m.path), "%s", name);
        return mat_file(&m, src, dst, name, &sb);
    }
    if (!S_ISDIR(sb.st_mode) || depth > TREE_DEPTH_MAX)
        return fail(reterr, FY_E_INVAL, FY_STEP_INPUT, 0, name, "cannot seed the declared output");
    int s2 = open_dir(src, name), d2 = s2 < 0 ? -1 : walk(dst, name, own);
    DIR *d = NULL;
    int r = 0;
    if (s2 < 0 || d2 < 0) {
        r = fail(reterr, FY_E_IO, FY_STEP_INPUT, s2 < 0 ? errno : -d2, name, "cannot open the declared output");
    } else {
        int dfd = openat(s2, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!(d = dfd < 0 ? NULL : fdopendir(dfd))) {
            if (dfd >= 0)
                close(dfd);
            r = fail(reterr, FY_E_IO, FY_STEP_INPUT, errno, name, "cannot read the input directory");
        }
    }
    struct dirent *de;
    while (r >= 0 && d && (de = readdir(d)))
        if (!(de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2]))))
            r = seed(a, s2, d2, de->d_name, own, st, depth + 1, reterr);
    if (d)
        closedir(d);
    if (s2 >= 0)
        close(s2);
    if (d2 >= 0)
        close(d2);
    return r;
}

int tree_skeleton(const fy_action *a, int lower, int upper, const struct pathset *dirs, const struct tree_owner *own,
                  struct tree_stats *st, fy_error **reterr) {
    /* Every directory of the lower, the sandbox's own: the merged
     * directory takes the upper's owner and mode, so the workload may make
     * files anywhere (as in a materialised root) while every file stays
     * the lower's until overlayfs copies it up. */
    for (size_t i = 0; i < dirs->n; i++) {
        int fd = -1, e = 0;
        if (mkdirat(upper, dirs->v[i], 0700) < 0 ||
            (fd = openat(upper, dirs->v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            e = errno;
        else
            e = -own_dir(fd, own);
        if (fd >= 0)
            close(fd);
        if (e)
            return fail(reterr, FY_E_IO, FY_STEP_INPUT, e, dirs->v[i], "cannot make the directory: %s", strerror(e));
    }
    /* The working directory and the parents of the declared outputs, as
     * tree_materialise makes them: never where the lower has a file or a
     * link (the merged view would show the upper's directory instead). */
    int lw = walk(lower, a->workdir, NULL);
    if (lw == -ELOOP || lw == -ENOTDIR)
        return fail(reterr, FY_E_INVAL, FY_STEP_INPUT, -lw, "$.working_directory",
                    "the working directory \"%s\" is a link or a file in the input root", a->workdir);
    int wd = walk(upper, a->workdir, own);
    if (wd < 0) {
        if (lw >= 0)
            close(lw);
        return fail(reterr, FY_E_INVAL, FY_STEP_INPUT, -wd, "$.working_directory",
                    "the working directory \"%s\" cannot be made", a->workdir);
    }
    int r = 0;
    VEC_EACH(&a->outputs, struct act_output, o) {
        char dir[PATH_MAX];
        const char *base;
        split(o->path, dir, sizeof(dir), &base);
        int lp = lw >= 0 ? walk(lw, dir, NULL) : -ENOENT;
        int pfd = lp == -ELOOP || lp == -ENOTDIR ? lp : walk(wd, dir, own);
        if (pfd < 0) {
            r = fail(reterr, FY_E_INVAL, FY_STEP_INPUT, -pfd, o->path, "the directory of the declared output \"%s\" %s",
                     o->path, pfd == -ELOOP || pfd == -ENOTDIR ? "is a link or a file in the input root"
                                                               : "cannot be made");
        } else if (lp >= 0) {
            /* A declared output the lower has already: the upper gets its
             * copy, so that what is collected from the upper alone is what
             * the workload saw (minus what it removed: whiteouts). */
            r = seed(a, lp, pfd, base, own, st, 0, reterr);
        }
        if (lp >= 0)
            close(lp);
        if (pfd >= 0)
            close(pfd);
        if (r < 0)
            break;
    }
    if (lw >= 0)
        close(lw);
    close(wd);
    return r;
}

/* ---- removing ---- */

/* Any depth (a workload can nest directories deeper than any stack),
 * never through a link, directories it closed to their owner opened up,
 * never into another file system (util_remove_below). Safe because
 * nothing else writes the tree any more. */
uint64_t tree_remove_below(int top) { return util_remove_below(top, UTIL_RM_ONE_FS | UTIL_RM_OPEN_UP) < 0; }

/* ---- collecting the outputs ---- */

/* An overlay's mark of a removed lower entry (a 0/0 character device). */
static bool whiteout(const struct stat *st) { return S_ISCHR(st->st_mode) && st->st_rdev == 0; }

struct cfile { char *path; unsigned char digest[32]; uint64_t size; bool exec; };
struct clink { char *path, *target; };
struct cdir { char *path; uint64_t files; unsigned char digest[32]; };
struct cmiss { char *path; const char *why; };

struct collected {
    struct vec files, links, dirs, missing;  /* in declaration order, sorted inside directories */
    char *undeclared[UNDECLARED_LISTED];
    size_t nlisted;
    uint64_t undeclared_total;
    bool undeclared_truncated;
    int outcome;       /* 0, FY_OUTCOME_SANDBOX_VIOLATION, _RESOURCE_EXCEEDED or _INFRASTRUCTURE_FAILURE */
    char *detail;
    uint64_t bytes, entries;
};

/* A collected file whose SHA-256 is still to be taken: its fd (the file
 * moved into the output directory, or left where it is), read for exactly
 * size bytes. */
struct hjob { int fd; size_t file; uint64_t size; int err; unsigned char digest[32]; };
#define HJOBS 64 /* fds held at once, at most */

/* What a declared directory's tree digest takes, in order; replayed once
 * its files are hashed. kind 'F' (idx: a file), 'L' (idx: a link), 'D'. */
struct trec { char kind; size_t idx; char *path; };

struct col {
    const fy_action *a;
    struct collected *c;
    int out;           /* the output directory, or -1 */
    bool overlay;      /* the root is an overlay's upper: whiteouts are removed entries */
    fy_error **reterr;
    char buf_path[PATH_MAX];
    struct hjob jobs[HJOBS];
    size_t njobs;
    struct vec recs;   /* struct trec, of the directory output at hand */
};

static int stop(struct col *k, int outcome, const char *fmt, ...) FY_PRINTF(3, 4);
static int stop(struct col *k, int outcome, const char *fmt, ...) {
    if (!k->c->outcome) {
        va_list ap;
        va_start(ap, fmt);
        char *text = NULL;
        if (vasprintf(&text, fmt, ap) < 0)
            text = NULL;
        va_end(ap);
        /* The names and link targets in it are the workload's: a control
         * character (an escape sequence, a newline that starts a forged
         * log line) is shown as \xNN, never passed to a terminal or log. */
        size_t n = 0;
        for (const char *c = text; c && *c; c++)
            n += ((unsigned char)*c < 0x20 || *c == 0x7f) ? 4 : 1;
        char *out = text ? malloc(n + 1) : NULL, *w = out;
        for (const char *c = text; out && *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                w += sprintf(w, "\\x%02x", (unsigned char)*c);
            else
                *w++ = *c;
        if (w)
            *w = '\0';
        free(text);
        k->c->detail = out;
        k->c->outcome = outcome;
    }
    return 1; /* stop collecting */
}

/* Whether a link at rel (relative to the working directory wd, itself
 * relative to the execution root) to target stays in the tree, read as
 * text (the link is handed out, never followed). ".." only as the target's
 * leading components: the directories above a link are real ones, but a
 * name further on may be another link (d/up -> ".."), which a ".." after
 * it would climb out of (e -> "d/up/../.."): with the ".."s first, every
 * link lands inside, so every name below one does too. */
static bool link_inside(const char *wd, const char *rel, const char *target) {
    if (!target[0] || target[0] == '/')
        return false;
    long depth = wd[0] ? 1 : 0;
    for (const char *c = wd; (c = strchr(c, '/')); c++)
        depth++;
    for (const char *c = rel; (c = strchr(c, '/')); c++)
        depth++;
    bool down = false;
    for (const char *c = target; *c;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            if (down || --depth < 0)
                return false;
        } else if (len && !(len == 1 && c[0] == '.')) {
            down = true;
            depth++;
        }
        if (!e)
            break;
        c = e + 1;
    }
    return true;
}

static int push_link(struct vec *v, const char *path, const char *target) {
    struct clink *l = vec_push(v);
    if (!l)
        return -ENOMEM;
    if (!(l->path = strdup(path)) || !(l->target = strdup(target))) {
        free(l->path);
        v->n--;
        return -ENOMEM;
    }
    return 0;
}

/* why: a static string. */
static int push_missing(struct vec *v, const char *path, const char *why) {
    struct cmiss *m = vec_push(v);
    if (!m)
        return -ENOMEM;
    if (!(m->path = strdup(path))) {
        v->n--;
        return -ENOMEM;
    }
    m->why = why;
    return 0;
}

/* A regular output file: hashed (and copied into the output directory). */
/* An overlay's upper holds only inodes of its own (copy-up makes new ones;
 * metacopy and index are off), so a declared output file of the finished
 * attempt, singly linked, is moved into the output directory instead of
 * copied (same file system): then made the caller's, as a copy would be,
 * mode 0644 or 0755, without the extended attributes (ACLs included) the
 * workload may have set. Anything refused: moved back, and copied. */
static bool move_output(int dir, const char *name, int outdir, int fd, const struct stat *st) {
    if (renameat2(dir, name, outdir, name, RENAME_NOREPLACE) < 0)
        return false;
    struct stat now;
    bool ok = fstatat(outdir, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st->st_ino &&
              now.st_dev == st->st_dev;
    char names[4096];
    ssize_t n = ok ? flistxattr(fd, names, sizeof(names)) : -1;
    ok = ok && n >= 0;
    for (ssize_t i = 0; ok && i < n; i += (ssize_t)strlen(names + i) + 1)
        ok = fremovexattr(fd, names + i) == 0 || errno == ENODATA;
    ok = ok && (geteuid() != 0 || fchown(fd, geteuid(), getegid()) == 0) &&
         fchmod(fd, (st->st_mode & 0100) ? 0755 : 0644) == 0 && flistxattr(fd, names, sizeof(names)) == 0;
    if (!ok && renameat2(outdir, name, dir, name, RENAME_NOREPLACE) < 0)
        (void)unlinkat(outdir, name, 0); /* never leave a half-made output */
    return ok;
}

/* ---- hashing the collected files, on two threads ---- */

static void hash_job(struct hjob *j, unsigned char *buf) {
    struct digest hs = {NULL};
    if (digest_init(&hs) < 0) {
        j->err = ENOMEM;
        return;
    }
    uint64_t total = 0;
    while (total < j->size) {
        size_t want = j->size - total < IOBUF ? (size_t)(j->size - total) : IOBUF;
        ssize_t n = read(j->fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            j->err = n < 0 ? errno : EIO;
            digest_abandon(&hs);
            return;
        }
        digest_update(&hs, buf, (size_t)n);
        total += (uint64_t)n;
    }
    digest_final(&hs, j->digest);
    j->err = 0;
}

struct hpool { struct hjob *jobs; size_t n; atomic_size_t next; };

static void *hash_worker(void *arg) {
    struct hpool *hp = arg;
    unsigned char *buf = malloc(IOBUF);
    for (size_t i; (i = atomic_fetch_add(&hp->next, 1)) < hp->n;) {
        if (buf)
            hash_job(&hp->jobs[i], buf);
        else
            hp->jobs[i].err = ENOMEM;
    }
    free(buf);
    return NULL;
}

/* Hashes the pending files (a second thread takes half of them when there
 * is enough to hash: SHA-256 is the collect step's cost, and outputs are
 * independent files), closes them and fills their digests; keep false:
 * only closes them (collecting failed). The first failure, typed. */
static int col_flush(struct col *k, bool keep) {
    size_t n = k->njobs;
    k->njobs = 0;
    if (keep && n) {
        struct hpool hp = {.jobs = k->jobs, .n = n};
        atomic_init(&hp.next, 0);
        pthread_t th;
        bool helper = false;
        uint64_t bytes = 0;
        for (size_t i = 0; i < n; i++)
            bytes += k->jobs[i].size;
        if (n > 1 && bytes >= 2 * IOBUF)
            helper = util_thread_start(&th, false, true, hash_worker, &hp) == 0;
        hash_worker(&hp);
        if (helper)
            pthread_join(th, NULL);
    }
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        struct hjob *j = &k->jobs[i];
        close(j->fd);
        struct cfile *f = (struct cfile *)k->c->files.items + j->file;
        if (keep && !r && j->err)
            r = fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, j->err, f->path, "cannot collect the output: %s",
                     strerror(j->err));
        else if (keep)
            memcpy(f->digest, j->digest, 32);
    }
    return r;
}

static void recs_free(struct col *k) {
    VEC_EACH(&k->recs, struct trec, t) free(t->path);
    k->recs.n = 0;
}

static int rec_push(struct col *k, char kind, size_t idx, const char *path) {
    struct trec *t = vec_push(&k->recs);
    if (!t)
        return -1;
    *t = (struct trec){kind, idx, NULL};
    if (path && !(t->path = strdup(path))) {
        k->recs.n--;
        return -1;
    }
    return 0;
}

/* An output the command left closed to the collector (mode 000: rootless,
 * the collector is its owner without any privilege): the command's doing,
 * an output that could not be taken like a link out of the tree, not the
 * host's failure (an infrastructure failure, which workers retry). */
static bool closed_to_us(int e) {
    return e == EACCES || e == EPERM;
}

static int unreadable(struct col *k, const char *rel, int e) {
    return stop(k, FY_OUTCOME_SANDBOX_VIOLATION, "output \"%s\": cannot be read (%s): the command left it closed to "
                                                   "its owner", rel, strerror(e));
}

/* What the command closed to its owner by the mode's owner bits: a file
 * it may not read, a directory it may not list or search (mode 000, 0400).
 * The owner bits decide, not the collector's access: a root collector
 * reads through them, a rootless one (the owner) cannot, and the same
 * action had two outcomes by who ran it. */
static bool owner_closed(mode_t m) {
    return S_ISDIR(m) ? (m & (S_IRUSR | S_IXUSR)) != (S_IRUSR | S_IXUSR) : S_ISREG(m) && !(m & S_IRUSR);
}

/* The first directory of dir (relative to wd, walked already: no link)
 * that the command left closed to its owner (the walk opens each one for
 * reading, then looks up in it), or NULL. */
static const char *parent_closed(int wd, const char *dir, char *buf, size_t len) {
    for (const char *e = dir; *dir && e;) {
        e = strchr(e, '/');
        size_t n = e ? (size_t)(e - dir) : strlen(dir);
        struct stat st;
        if (n >= len)
            return NULL;
        memcpy(buf, dir, n);
        buf[n] = '\0';
        if (fstatat(wd, buf, &st, AT_SYMLINK_NOFOLLOW) == 0 && owner_closed(st.st_mode))
            return buf;
        if (e)
            e++;
    }
    return NULL;
}

static int col_file(struct col *k, int dir, const char *name, const char *rel, const struct stat *st, int outdir) {
    if (++k->c->entries > k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES])
        return stop(k, FY_OUTCOME_RESOURCE_EXCEEDED, "outputs: more than %" PRIu64 " entries (limits.output_entries)",
                    k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES]);
    if ((uint64_t)st->st_size > k->a->limit[FY_ACTION_LIMIT_OUTPUT_BYTES] - k->c->bytes)
        return stop(k, FY_OUTCOME_RESOURCE_EXCEEDED,
                    "output \"%s\": %" PRIu64 " bytes, beyond the %" PRIu64 " bytes of outputs allowed "
                    "(limits.output_bytes)", rel, (uint64_t)st->st_size, k->a->limit[FY_ACTION_LIMIT_OUTPUT_BYTES]);
    if (owner_closed(st->st_mode))
        return unreadable(k, rel, EACCES);
    int in = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st2;
    if (in < 0 && closed_to_us(errno))
        return unreadable(k, rel, errno);
    if (in < 0 || fstat(in, &st2) < 0 || st2.st_ino != st->st_ino || !S_ISREG(st2.st_mode)) {
        int e = in < 0 ? errno : EAGAIN;
        if (in >= 0)
            close(in);
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, e, rel, "cannot read the output: %s", strerror(e));
    }
    int out = -1;
    bool moved = k->overlay && outdir >= 0 && st2.st_nlink == 1 && move_output(dir, name, outdir, in, &st2);
    if (outdir >= 0 && !moved &&
        (out = openat(outdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      (st2.st_mode & 0100) ? 0755 : 0644)) < 0) {
        int e = errno;
        close(in);
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, e, rel, "cannot create the output copy: %s", strerror(e));
    }
    if (out < 0) {
        /* Nothing to copy: hashed with the others (col_flush). */
        struct cfile *f = vec_push(&k->c->files);
        if (!f || !(f->path = strdup(rel))) {
            if (f)
                k->c->files.n--;
            close(in);
            return fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
        }
        f->size = (uint64_t)st2.st_size;
        f->exec = (st2.st_mode & 0100) != 0;
        memset(f->digest, 0, sizeof(f->digest));
        k->c->bytes += f->size;
        k->jobs[k->njobs++] = (struct hjob){in, k->c->files.n - 1, f->size, 0, {0}};
        return k->njobs == HJOBS ? col_flush(k, true) : 0;
    }
    struct digest hs = {NULL};
    unsigned char *buf = malloc(IOBUF);
    uint64_t total = 0;
    int r = buf && digest_init(&hs) == 0 ? 0 : -ENOMEM;
    while (r >= 0 && total < (uint64_t)st2.st_size) {
        size_t want = (uint64_t)st2.st_size - total < IOBUF ? (size_t)((uint64_t)st2.st_size - total) : IOBUF;
        ssize_t n = read(in, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EIO;
            break;
        }
        digest_update(&hs, buf, (size_t)n);
        if (out >= 0)
            r = util_write_all(out, buf, (size_t)n);
        total += (uint64_t)n;
    }
    free(buf);
    close(in);
    if (out >= 0)
        close(out);
    if (r < 0) {
        digest_abandon(&hs);
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, -r, rel, "cannot collect the output: %s", strerror(-r));
    }
    struct cfile *f = vec_push(&k->c->files);
    if (!f || !(f->path = strdup(rel))) {
        if (f)
            k->c->files.n--;
        digest_abandon(&hs);
        return fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
    }
    digest_final(&hs, f->digest);
    f->size = total;
    f->exec = (st2.st_mode & 0100) != 0;
    k->c->bytes += total;
    return 0;
}

static int col_link(struct col *k, int dir, const char *name, const char *rel, int outdir) {
    if (++k->c->entries > k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES])
        return stop(k, FY_OUTCOME_RESOURCE_EXCEEDED, "outputs: more than %" PRIu64 " entries (limits.output_entries)",
                    k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES]);
    char target[PATH_MAX];
    ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);
    if (n < 0)
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, errno, rel, "cannot read the output link");
    target[n] = '\0';
    if (!util_utf8_valid(target))
        return stop(k, FY_OUTCOME_SANDBOX_VIOLATION, "output \"%s\" is a symbolic link whose target is not UTF-8 text",
                    rel);
    if (!link_inside(k->a->workdir, rel, target))
        return stop(k, FY_OUTCOME_SANDBOX_VIOLATION, "output \"%s\" is a symbolic link out of the tree (to \"%s\")",
                    rel, target);
    /* The output directory holds the working directory's outputs, not the
     * tree above it: there a link up to the execution root would point
     * beside or above the output directory, at the host's files. */
    if (k->out >= 0 && !link_inside("", rel, target))
        return stop(k, FY_OUTCOME_SANDBOX_VIOLATION,
                    "output \"%s\" is a symbolic link out of the output directory (to \"%s\", above the working "
                    "directory)", rel, target);
    if (outdir >= 0 && symlinkat(target, outdir, name) < 0)
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, errno, rel, "cannot create the output link");
    if (push_link(&k->c->links, rel, target) < 0)
        return fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
    return 0;
}

struct ent { char *name; struct stat st; };
static int cmp_ent(const void *a, const void *b) {
    return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* A directory's entries, sorted, at most max of them (more: -E2BIG). */
static int list_dir(int dir, struct ent **ret, size_t *n, uint64_t max) {
    *ret = NULL;
    *n = 0;
    int dfd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        int e = errno;
        if (dfd >= 0)
            close(dfd);
        return -e;
    }
    struct ent *v = NULL;
    size_t cap = 0;
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
            continue;
        if (*n >= max) {
            r = -E2BIG;
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            struct ent *nv = realloc(v, cap * sizeof(*v));
            if (!nv) {
                r = -ENOMEM;
                break;
            }
            v = nv;
        }
        if (!(v[*n].name = strdup(nm))) {
            r = -ENOMEM;
            break;
        }
        if (fstatat(dir, nm, &v[*n].st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = -errno;
            free(v[*n].name);
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (r >= 0 && *n)
        qsort(v, *n, sizeof(*v), cmp_ent);
    *ret = v;
    return r;
}

static void free_ents(struct ent *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
}

/* A record of the tree digest: its path relative to the declared
 * directory. */
struct trel { const char *rel; const struct trec *t; };

static int trel_cmp(const void *a, const void *b) {
    return strcmp(((const struct trel *)a)->rel, ((const struct trel *)b)->rel);
}

/* The tree digest of the declared directory dir (forgeyard-action(5)):
 * SHA-256 of "forgeyard-tree 1\n", then one record per entry below it, in
 * byte order of the entries' paths relative to it: a file "F" path NUL, its
 * 32-byte SHA-256, "x" or "-"; a link "L" path NUL target NUL; a directory
 * "D" path NUL. Only the content counts: the same tree declared under
 * another name, or reached in another order, has the same digest; an empty
 * directory's differs from an empty file's. 0, or -1: out of memory. */
static int tree_digest(const struct col *k, const char *dir, unsigned char out[32]) {
    size_t skip = strlen(dir) + 1, n = k->recs.n;
    struct trel *v = n ? calloc(n, sizeof(*v)) : NULL;
    if (n && !v)
        return -1;
    size_t i = 0;
    VEC_EACH(&k->recs, struct trec, t) {
        const char *path = t->kind == 'F'   ? ((const struct cfile *)k->c->files.items)[t->idx].path
                           : t->kind == 'L' ? ((const struct clink *)k->c->links.items)[t->idx].path
                                            : t->path;
        v[i++] = (struct trel){path + skip, t}; /* (every path is dir/...) */
    }
    qsort(v, n, sizeof(*v), trel_cmp);
    crypto_hash_sha256_state tree;
    crypto_hash_sha256_init(&tree);
    crypto_hash_sha256_update(&tree, (const unsigned char *)"forgeyard-tree 1\n", 17);
    for (i = 0; i < n; i++) {
        const struct trec *t = v[i].t;
        crypto_hash_sha256_update(&tree, (const unsigned char *)(t->kind == 'F' ? "F" : t->kind == 'L' ? "L" : "D"), 1);
        crypto_hash_sha256_update(&tree, (const unsigned char *)v[i].rel, strlen(v[i].rel) + 1);
        if (t->kind == 'F') {
            const struct cfile *f = (const struct cfile *)k->c->files.items + t->idx;
            crypto_hash_sha256_update(&tree, f->digest, 32);
            crypto_hash_sha256_update(&tree, (const unsigned char *)(f->exec ? "x" : "-"), 1);
        } else if (t->kind == 'L') {
            const struct clink *l = (const struct clink *)k->c->links.items + t->idx;
            crypto_hash_sha256_update(&tree, (const unsigned char *)l->target, strlen(l->target) + 1);
        }
    }
    crypto_hash_sha256_final(&tree, out);
    free(v);
    return 0;
}

/* A declared output directory, whole: rel is its path; its records (in
 * k->recs) give its tree digest. */
static int col_dir(struct col *k, int dir, const char *rel, int outdir, int depth, uint64_t *files) {
    if (depth > TREE_DEPTH_MAX)
        return stop(k, FY_OUTCOME_RESOURCE_EXCEEDED, "output \"%s\" is nested deeper than %d", rel, TREE_DEPTH_MAX);
    struct ent *v;
    size_t n;
    uint64_t room = k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES] - k->c->entries;
    int r = list_dir(dir, &v, &n, room + 1);
    if (r == -E2BIG) {
        free_ents(v, n);
        return stop(k, FY_OUTCOME_RESOURCE_EXCEEDED, "output \"%s\": more than %" PRIu64 " entries (limits.output_entries)",
                    rel, k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES]);
    }
    if (closed_to_us(-r))
        return unreadable(k, rel, -r); /* (readable, not searchable: 0400) */
    if (r < 0)
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, -r, rel, "cannot read the output directory");
    for (size_t i = 0; r == 0 && i < n; i++) {
        char *sub = NULL;
        if (asprintf(&sub, "%s/%s", rel, v[i].name) < 0) {
            r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
            break;
        }
        mode_t md = v[i].st.st_mode;
        if (!util_utf8_valid(v[i].name)) {
            /* (a result, as REAPI's, names outputs in text) */
            char *shown = util_utf8_lossy(sub);
            r = stop(k, FY_OUTCOME_SANDBOX_VIOLATION, "output \"%s\" has a name that is not UTF-8 text",
                     shown ? shown : rel);
            free(shown);
        } else if (k->overlay && whiteout(&v[i].st)) {
            /* removed by the workload: not there */
        } else if (S_ISREG(md)) {
            size_t at = k->c->files.n;
            r = col_file(k, dir, v[i].name, sub, &v[i].st, outdir);
            if (r == 0 && k->c->files.n > at) {
                if (rec_push(k, 'F', at, NULL) < 0)
                    r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
                (*files)++;
            }
        } else if (S_ISLNK(md)) {
            size_t at = k->c->links.n;
            r = col_link(k, dir, v[i].name, sub, outdir);
            if (r == 0 && k->c->links.n > at && rec_push(k, 'L', at, NULL) < 0)
                r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
        } else if (S_ISDIR(md)) {
            if (++k->c->entries > k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES]) {
                r = stop(k, FY_OUTCOME_RESOURCE_EXCEEDED, "outputs: more than %" PRIu64 " entries (limits.output_entries)",
                         k->a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES]);
            } else {
                int sd = owner_closed(md) ? (errno = EACCES, -1) : open_dir(dir, v[i].name), od = -1;
                if (sd >= 0 && outdir >= 0 && (mkdirat(outdir, v[i].name, 0755) < 0 || (od = open_dir(outdir, v[i].name)) < 0))
                    r = fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, errno, sub, "cannot create the output directory");
                else if (sd < 0 && closed_to_us(errno))
                    r = unreadable(k, sub, errno);
                else if (sd < 0)
                    r = fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, errno, sub, "cannot open the output directory");
                else if (rec_push(k, 'D', 0, sub) < 0)
                    r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
                else
                    r = col_dir(k, sd, sub, od, depth + 1, files);
                if (sd >= 0)
                    close(sd);
                if (od >= 0)
                    close(od);
            }
        } else {
            r = stop(k, FY_OUTCOME_SANDBOX_VIOLATION, "output \"%s\" is %s, not a file, link or directory", sub,
                     type_name(md));
        }
        free(sub);
    }
    free_ents(v, n);
    return r;
}

static int col_output(struct col *k, int wd, const struct act_output *o) {
    char dir[PATH_MAX];
    const char *base;
    split(o->path, dir, sizeof(dir), &base);
    int pfd = walk(wd, dir, NULL);
    if (pfd == -ELOOP)
        return stop(k, FY_OUTCOME_SANDBOX_VIOLATION,
                    "the directory of output \"%s\" was replaced by a symbolic link", o->path);
    char closed[PATH_MAX];
    if (closed_to_us(-pfd))
        return unreadable(k, o->path, -pfd); /* (its directory closed: the file was there) */
    if (pfd >= 0 && parent_closed(wd, dir, closed, sizeof(closed))) {
        close(pfd);
        return unreadable(k, o->path, EACCES);
    }
    if (pfd < 0)
        return push_missing(&k->c->missing, o->path, "its directory is gone") < 0
                   ? fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory") : 0;
    int out = -1, r = 0;
    struct stat st;
    const char *why = NULL;
    bool made = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !(k->overlay && whiteout(&st));
    /* The output's directory in the output directory, only for an output
     * that is there: a missing one leaves nothing behind (an empty "out/"
     * would make the output directory "not empty" for the next run). */
    if (made && k->out >= 0 && (out = walk(k->out, dir, &host_dirs)) < 0) {
        close(pfd);
        return fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, -out, o->path, "cannot make the output's directory");
    }
    if (!made) {
        why = "not made";
    } else if (S_ISLNK(st.st_mode)) {
        r = col_link(k, pfd, base, o->path, out);
    } else if (S_ISREG(st.st_mode)) {
        if (o->kind == FY_OUTPUT_DIRECTORY)
            why = "a file, declared a directory";
        else
            r = col_file(k, pfd, base, o->path, &st, out);
    } else if (S_ISDIR(st.st_mode)) {
        if (o->kind == FY_OUTPUT_FILE) {
            why = "a directory, declared a file";
        } else {
            int sd = owner_closed(st.st_mode) ? (errno = EACCES, -1) : open_dir(pfd, base), od = -1;
            if (sd < 0 && closed_to_us(errno)) {
                r = unreadable(k, o->path, errno);
            } else if (sd < 0 || (out >= 0 && (mkdirat(out, base, 0755) < 0 || (od = open_dir(out, base)) < 0))) {
                r = fail(k->reterr, FY_E_IO, FY_STEP_COLLECT, errno, o->path, "cannot open the output directory");
            } else {
                uint64_t files = 0;
                r = col_dir(k, sd, o->path, od, 1, &files);
                /* Its files hashed (a stopped collection still lists them), then its tree digest. */
                int fr = col_flush(k, r >= 0);
                if (r >= 0 && fr < 0)
                    r = fr;
                struct cdir *d = r == 0 ? vec_push(&k->c->dirs) : NULL;
                if (r == 0 && (!d || !(d->path = strdup(o->path)))) {
                    if (d)
                        k->c->dirs.n--;
                    r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
                } else if (d && tree_digest(k, o->path, d->digest) < 0) {
                    k->c->dirs.n--;
                    free(d->path);
                    r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
                } else if (d) {
                    d->files = files;
                }
                recs_free(k);
            }
            if (sd >= 0)
                close(sd);
            if (od >= 0)
                close(od);
        }
    } else {
        r = stop(k, FY_OUTCOME_SANDBOX_VIOLATION, "output \"%s\" is %s, not a file, link or directory", o->path,
                 type_name(st.st_mode));
    }
    int fr = col_flush(k, r >= 0); /* a declared file's own */
    if (r >= 0 && fr < 0)
        r = fr;
    if (why && push_missing(&k->c->missing, o->path, why) < 0)
        r = fail(k->reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
    close(pfd);
    if (out >= 0)
        close(out);
    return r;
}

/* Files the action made that nobody declared: listed (the first ones),
 * counted, never collected. A bounded walk. */
struct und { struct col *k; const struct pathset *inputs; uint64_t budget; char path[PATH_MAX]; };

/* Whether the upper's directory hides the lower's (user.overlay.opaque). */
static bool opaque(int dir) {
    char v[2];
    return fgetxattr(dir, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

static bool declared(const fy_action *a, const char *rel) {
    size_t wl = strlen(a->workdir);
    if (wl) {
        if (strncmp(rel, a->workdir, wl) != 0 || rel[wl] != '/')
            return false;
        rel += wl + 1;
    }
    /* rel itself or one of its parents declared: each looked up (not a
     * scan of every output for every file). */
    for (size_t k = 0;; k++) {
        if ((rel[k] == '/' || !rel[k]) && action_output_find(a, rel, k) != (size_t)-1)
            return true;
        if (!rel[k])
            return false;
    }
}

/* The same directory of the overlay's lower is lname in the directory
 * lparent (lname NULL: lparent itself; lparent -1: none, or not an
 * overlay), where a file of the upper is an input the workload changed.
 * It is opened only for an upper directory that holds something (most of
 * a skeleton stays empty). */
static void und_walk(struct und *u, int dir, int lparent, const char *lname, int depth) {
    struct ent *v;
    size_t n;
    if (depth > TREE_DEPTH_MAX || !u->budget) {
        u->k->c->undeclared_truncated = true;
        return;
    }
    int r = list_dir(dir, &v, &n, u->budget);
    if (r == -E2BIG)
        u->k->c->undeclared_truncated = true;
    if (!n) {
        free_ents(v, n);
        return;
    }
    int lower = lparent < 0 || !lname ? lparent : !opaque(dir) ? open_dir(lparent, lname) : -1;
    u->budget = u->budget > n ? u->budget - n : 0;
    size_t plen = strlen(u->path);
    for (size_t i = 0; i < n; i++) {
        if (plen + strlen(v[i].name) + 2 > sizeof(u->path)) {
            u->k->c->undeclared_truncated = true; /* (not counted: the count is a lower bound, said) */
            continue;
        }
        snprintf(u->path + plen, sizeof(u->path) - plen, "%s%s", plen ? "/" : "", v[i].name);
        struct stat lst;
        bool input = u->k->overlay ? lower >= 0 && fstatat(lower, v[i].name, &lst, AT_SYMLINK_NOFOLLOW) == 0
                                   : pathset_has(u->inputs, u->path);
        if (S_ISDIR(v[i].st.st_mode)) {
            if (!declared(u->k->a, u->path)) {
                int sd = open_dir(dir, v[i].name);
                if (sd >= 0) {
                    und_walk(u, sd, lower, v[i].name, depth + 1);
                    close(sd);
                }
            }
        } else if (u->k->overlay && whiteout(&v[i].st)) {
            /* an input the workload removed */
        } else if (!input && !declared(u->k->a, u->path)) {
            struct collected *c = u->k->c;
            if (c->nlisted < UNDECLARED_LISTED && (c->undeclared[c->nlisted] = util_utf8_lossy(u->path)))
                c->nlisted++;
            c->undeclared_total++;
        }
        u->path[plen] = '\0';
    }
    free_ents(v, n);
    if (lower >= 0 && lower != lparent)
        close(lower);
}

/* 0 when the directory fd (path) holds nothing; else FY_E_STATE (fd is
 * left open either way). */
static int check_empty(int fd, const char *path, uint32_t step, fy_error **reterr) {
    struct ent *v;
    size_t n;
    int r = list_dir(fd, &v, &n, 1);
    free_ents(v, n);
    if (r < 0 || n)
        return fail(reterr, FY_E_STATE, step, r < 0 ? -r : ENOTEMPTY, path, "the output directory is not empty");
    return 0;
}

static int open_output_dir(const char *path, fy_error **reterr) {
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return fail(reterr, FY_E_IO, FY_STEP_COLLECT, errno, path, "cannot make the output directory: %s",
                    strerror(errno));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(reterr, FY_E_IO, FY_STEP_COLLECT, errno, path, "cannot open the output directory: %s",
                    strerror(errno));
    int r = check_empty(fd, path, FY_STEP_COLLECT, reterr);
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

/* Before the attempt starts: an output directory that exists and is not
 * empty is refused then, not after the command has run (collect refuses it
 * again, for one filled meanwhile). A missing one is made at collect. */
int tree_check_output_dir(const char *path, fy_error **reterr) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0)
        return fail(reterr, FY_E_IO, FY_STEP_PREPARE, errno, path, "cannot open the output directory: %s",
                    strerror(errno));
    int r = check_empty(fd, path, FY_STEP_PREPARE, reterr);
    close(fd);
    return r;
}

void tree_discard_outputs(const fy_action *a) {
    if (!a->output_dir)
        return;
    int fd = open(a->output_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        tree_remove_below(fd);
        close(fd);
    }
}

int tree_collect(const fy_action *a, int root, int lower, const struct pathset *inputs, uint64_t survivors,
                 struct collected **ret, fy_error **reterr) {
    *ret = NULL;
    struct collected *c = calloc(1, sizeof(*c));
    if (!c)
        return fail(reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
    vec_init(&c->files, sizeof(struct cfile));
    vec_init(&c->links, sizeof(struct clink));
    vec_init(&c->dirs, sizeof(struct cdir));
    vec_init(&c->missing, sizeof(struct cmiss));
    struct col k = {.a = a, .c = c, .out = -1, .overlay = lower >= 0, .reterr = reterr};
    vec_init(&k.recs, sizeof(struct trec));
    if (survivors) {
        stop(&k, FY_OUTCOME_INFRASTRUCTURE_FAILURE,
             "%" PRIu64 " process%s of the attempt outlived its end: no output is collected", survivors,
             survivors == 1 ? "" : "es");
        *ret = c;
        return 0;
    }
    int r = 0;
    if (a->output_dir && (k.out = open_output_dir(a->output_dir, reterr)) < 0)
        r = k.out;
    int wd = r < 0 ? -1 : walk(root, a->workdir, NULL);
    if (r >= 0 && wd < 0) {
        /* The workload replaced its own working directory: every output is gone. */
        if (wd == -ELOOP)
            stop(&k, FY_OUTCOME_SANDBOX_VIOLATION, "the working directory was replaced by a symbolic link");
        VEC_EACH(&a->outputs, struct act_output, o)
            if (r >= 0 && push_missing(&c->missing, o->path, "the working directory is gone") < 0)
                r = fail(reterr, FY_E_NOMEM, FY_STEP_COLLECT, 0, NULL, "out of memory");
    }
    VEC_EACH(&a->outputs, struct act_output, o) {
        if (r != 0 || wd < 0)
            break;
        r = col_output(&k, wd, o);
    }
    if (wd >= 0)
        close(wd);
    recs_free(&k);
    free(k.recs.items);
    if (r >= 0) {
        struct und u = {.k = &k, .inputs = inputs,
                        .budget = inputs->n + a->limit[FY_ACTION_LIMIT_OUTPUT_ENTRIES] + 1000};
        und_walk(&u, root, lower >= 0 && !opaque(root) ? lower : -1, NULL, 0);
    }
    if (r > 0)
        r = 0;
    if (k.out >= 0) {
        /* What was collected of a refused set of outputs is not handed out. */
        if (c->outcome || r < 0)
            tree_remove_below(k.out);
        close(k.out);
    }
    if (r < 0) {
        collected_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void collected_free(struct collected *c) {
    if (!c)
        return;
    VEC_EACH(&c->files, struct cfile, f) free(f->path);
    VEC_EACH(&c->links, struct clink, l) {
        free(l->path);
        free(l->target);
    }
    VEC_EACH(&c->dirs, struct cdir, d) free(d->path);
    VEC_EACH(&c->missing, struct cmiss, m) free(m->path);
    free(c->files.items);
    free(c->links.items);
    free(c->dirs.items);
    free(c->missing.items);
    for (size_t i = 0; i < c->nlisted; i++)
        free(c->undeclared[i]);
    free(c->detail);
    free(c);
}

int collected_outcome(const struct collected *c, const char **detail) {
    if (detail)
        *detail = c->detail;
    return c->outcome;
}

int collected_to_json(const struct collected *c, void *obj) {
    json_t *o = obj, *files = json_array(), *links = json_array(), *dirs = json_array(), *miss = json_array(),
           *und = json_object(), *list = json_array();
    bool ok = files && links && dirs && miss && und && list;
    char hex[72];
    VEC_EACH(&c->files, struct cfile, f) {
        action_sha256_name(f->digest, hex);
        ok = ok && json_array_append_new(files, json_pack("{s:s,s:s,s:I,s:b}", "path", f->path, "digest", hex,
                                                          "size_bytes", (json_int_t)f->size, "is_executable",
                                                          f->exec)) == 0;
    }
    VEC_EACH(&c->links, struct clink, l)
        ok = ok && json_array_append_new(links, json_pack("{s:s,s:s}", "path", l->path, "target", l->target)) == 0;
    VEC_EACH(&c->dirs, struct cdir, d) {
        action_sha256_name(d->digest, hex);
        ok = ok && json_array_append_new(dirs, json_pack("{s:s,s:s,s:I}", "path", d->path, "tree_digest", hex,
                                                         "files", (json_int_t)d->files)) == 0;
    }
    VEC_EACH(&c->missing, struct cmiss, m)
        ok = ok && json_array_append_new(miss, json_pack("{s:s,s:s}", "path", m->path, "why", m->why)) == 0;
    for (size_t i = 0; ok && i < c->nlisted; i++)
        ok = json_array_append_new(list, json_string(c->undeclared[i])) == 0;
    ok = ok && json_object_set_new(und, "count", json_integer((json_int_t)c->undeclared_total)) == 0 &&
         json_object_set_new(und, "truncated", json_boolean(c->undeclared_truncated)) == 0 &&
         json_object_set(und, "paths", list) == 0;
    ok = ok && json_object_set(o, "output_files", files) == 0 && json_object_set(o, "output_symlinks", links) == 0 &&
         json_object_set(o, "output_directories", dirs) == 0 && json_object_set(o, "missing_outputs", miss) == 0 &&
         json_object_set(o, "undeclared", und) == 0;
    json_decref(files); json_decref(links); json_decref(dirs); json_decref(miss); json_decref(und); json_decref(list);
    return ok ? 0 : FY_E_NOMEM;
}
