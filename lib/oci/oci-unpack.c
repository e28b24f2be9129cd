/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Verified, bounded, hostile-safe layer unpacking into the content-addressed
 * cache (the rules are in oci.h).
 *
 * One layer is three readers in a chain: the blob (a layout file or an
 * archive member; every byte hashed: the layer digest), a decompressor
 * (libarchive, format "raw", filters gzip/zstd/none only, never an external
 * program; every byte hashed: the diff_id, and bounded: stream bytes and
 * ratio), and a tar reader whose entries are created one by one relative
 * to the staging directory fd. The entry becomes visible in layers/ only
 * after both digests matched, syncfs(2) and rename(2). */
#include <archive.h>
#include <archive_entry.h>
#include <sodium.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lazy.h"

#include "oci-internal.h"

#define PATH_BUF 4097
#define RESOLVE_STRICT (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

#define CRING 4 /* buffers of the blob's ring */
/* Each read of the blob: large, so that the two threads hand a buffer over
 * 400 times for 100 MiB instead of 1,600 (each a wake-up and, with the
 * other CPU busy, two context switches), yet the ring (1 MiB) still fits
 * a core's L2 cache, where the write into the page cache and the hash read
 * it. Measured: 64 KiB reads 192-240 ms of CPU for a 100 MiB layer, 256
 * KiB 155-166 ms, 1 MiB 156-160 ms (tar -x: 120-145 ms). */
#define CBUF (256u << 10)

struct dirfix {
    char *path;
    mode_t mode;
    struct timespec mtime;
};


struct layer_ctx {
    /* Source of the compressed blob. */
    int blob_fd;
    struct archive *outer;
    /* The chain. */
    struct archive *dec, *tar;
    struct digest hc, hu;      /* the blob, the uncompressed stream */
    uint64_t ncomp, nunc, expect_comp;
    bool size_known;           /* expect_comp is the descriptor's (a docker-archive's layer has none); a
                                  descriptor's 0 is a size like any other (it turned the check off) */
    bool dec_failed;
    bool same;                 /* no compression: the diff_id is the blob's digest (hashed once) */
    const char *bound;         /* "stream" / "ratio" when a read callback stopped */
    /* Target. */
    int root;
    struct oci_limits lim;
    bool refuse_setid, may_trusted;
    uint32_t id_first, id_count;   /* owner shift (0: none) */
    uint64_t entries, bytes;
    struct dirfix *fix;
    size_t nfix, capfix, fixbytes;
    const char *blob;          /* digest or archive path, for messages */
    /* Progress. */
    oci_progress_fn progress;
    void *userdata;
    uint32_t layer, nlayers;
    uint64_t done_base, total, last_report;
    /* The blob's bytes, read into a ring of buffers that a second thread
     * hashes while this one extracts (the hash is over exactly the bytes
     * extracted: each buffer is hashed where it was read into, and reused
     * only once hashed and no longer libarchive's). Without the thread
     * (pthread_create failed) comp_read hashes them itself. */
    pthread_t hasher;
    bool threaded, hasher_stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t filled, hashed;        /* buffers read, buffers hashed */
    size_t clen[CRING];
    unsigned char *cbuf[CRING]; /* CBUF bytes each */
};

/* ---- the read chain ---- */

static void *hasher_main(void *arg) {
    struct layer_ctx *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (c->hashed == c->filled && !c->hasher_stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->hashed == c->filled)
            break; /* stopped, and nothing left */
        size_t slot = (size_t)(c->hashed % CRING), len = c->clen[slot];
        pthread_mutex_unlock(&c->mu);
        digest_update(&c->hc, c->cbuf[slot], len);
        pthread_mutex_lock(&c->mu);
        c->hashed++;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void hasher_start(struct layer_ctx *c) {
    c->filled = c->hashed = 0;
    c->hasher_stop = false;
    c->threaded = pthread_mutex_init(&c->mu, NULL) == 0;
    if (c->threaded && pthread_cond_init(&c->cv, NULL) != 0) {
        pthread_mutex_destroy(&c->mu);
        c->threaded = false;
    }
    if (c->threaded && util_thread_start(&c->hasher, false, true, hasher_main, c) != 0) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        c->threaded = false;
    }
}

/* Waits until every buffer read is hashed, and ends the thread
 * (idempotent): c->hc is then complete. */
static void hasher_finish(struct layer_ctx *c) {
    if (!c->threaded)
        return;
    pthread_mutex_lock(&c->mu);
    c->hasher_stop = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->hasher, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    c->threaded = false;
}

static la_ssize_t comp_read(struct archive *a, void *ud, const void **buf) {
    struct layer_ctx *c = ud;
    la_ssize_t n;
    size_t slot = (size_t)(c->filled % CRING);
    if (c->threaded) {
        /* The slot's last buffer (CRING reads ago: libarchive holds only
         * the one returned last) must be hashed before it is reused. */
        pthread_mutex_lock(&c->mu);
        while (c->filled >= CRING && c->hashed < c->filled - (CRING - 1))
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
    unsigned char *cb = c->cbuf[slot];
    if (c->outer) {
        n = archive_read_data(c->outer, cb, CBUF);
    } else {
        do
            n = read(c->blob_fd, cb, CBUF);
        while (n < 0 && errno == EINTR);
    }
    if (n < 0) {
        c->dec_failed = true;
        archive_set_error(a, EIO, "truncated: reading the layer blob failed");
        return -1;
    }
    if (c->threaded) {
        pthread_mutex_lock(&c->mu);
        c->clen[slot] = (size_t)n;
        c->filled++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    } else {
        digest_update(&c->hc, cb, (size_t)n);
    }
    c->ncomp += (uint64_t)n;
    if (c->size_known && c->ncomp > c->expect_comp) {
        c->bound = "size";
        archive_set_error(a, EFBIG, "the blob is larger than its descriptor");
        return -1;
    }
    if (c->progress && (c->ncomp - c->last_report >= (1u << 20) || n == 0)) {
        c->last_report = c->ncomp;
        c->progress(c->userdata, c->layer, c->nlayers, c->done_base + c->ncomp, c->total);
    }
    *buf = cb;
    return n;
}

/* The decompressed stream's next block, where the decompressor has it
 * (no copy: with no compression that is the blob's buffer itself, which
 * stays unused until CRING - 1 more reads, and the tar reader holds only
 * the block it was given last). 0 at the end. */
static la_ssize_t unc_next(struct layer_ctx *c, const void **buf) {
    size_t len = 0;
    la_int64_t off;
    int k = archive_read_data_block(c->dec, buf, &len, &off);
    if (k == ARCHIVE_EOF)
        return 0;
    if (k < ARCHIVE_WARN)
        return -1;
    if (off < 0 || (uint64_t)off != c->nunc) {
        archive_set_error(c->dec, EIO, "the decompressed stream has a hole");
        return -1;
    }
    if (!c->same)
        digest_update(&c->hu, *buf, len);
    c->nunc += (uint64_t)len;
    if (c->nunc > c->lim.stream_bytes)
        c->bound = "stream";
    else if (c->nunc > c->lim.ratio_floor && c->nunc / (c->ncomp ? c->ncomp : 1) > c->lim.ratio)
        c->bound = "ratio";
    return c->bound ? -1 : (la_ssize_t)len;
}

static la_ssize_t unc_read(struct archive *a, void *ud, const void **buf) {
    struct layer_ctx *c = ud;
    la_ssize_t n = unc_next(c, buf);
    if (n < 0 && c->bound) {
        archive_set_error(a, ERANGE, "bound");
        return -1;
    }
    if (n < 0) {
        c->dec_failed = true;
        archive_set_error(a, EIO, "%s", archive_error_string(c->dec) ? archive_error_string(c->dec) : "decompression failed");
        return -1;
    }
    return n;
}

/* ---- errors ---- */

static int fail_stream(struct layer_ctx *c, struct archive *a, fy_error **reterr) {
    if (c->bound && strcmp(c->bound, "size") == 0)
        return err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, c->blob,
                       "size: layer %s is larger than its descriptor's %llu bytes", c->blob,
                       (unsigned long long)c->expect_comp);
    if (c->bound && strcmp(c->bound, "stream") == 0)
        return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, c->blob,
                       "bytes: layer %s decompresses to more than %llu bytes", c->blob,
                       (unsigned long long)c->lim.stream_bytes);
    if (c->bound)
        return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, c->blob,
                       "ratio: layer %s decompresses more than %llu:1 (%llu bytes from %llu): a compression bomb",
                       c->blob, (unsigned long long)c->lim.ratio, (unsigned long long)c->nunc,
                       (unsigned long long)c->ncomp);
    const char *m = archive_error_string(a);
    return err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, c->blob, "truncated: layer %s is truncated or corrupt: %s",
                   c->blob, m ? m : "unreadable");
}

#define UNSAFE(reason, fmt, ...) \
    err_set(reterr, FY_E_UNSAFE, FY_STEP_IMAGE, 0, entry, reason ": layer %s: " fmt, c->blob, __VA_ARGS__)

static int fail_os(struct layer_ctx *c, const char *entry, const char *what, int e, fy_error **reterr) {
    return err_set(reterr, err_from_errno(e), FY_STEP_IMAGE, e, entry, "layer %s: %s %s: %s", c->blob, what, entry,
                   strerror(e));
}

static int shift_owner(struct layer_ctx *c, struct archive_entry *e, int pfd, const char *leaf, const char *entry,
                       fy_error **reterr);

/* ---- names ---- */

/* The entry name in, normalised into out: relative, no "", "." or ".."
 * component; 0, or a typed refusal. */
static int norm_name(struct layer_ctx *c, const char *entry, char out[PATH_BUF], fy_error **reterr) {
    if (!entry)
        return err_set(reterr, FY_E_UNSAFE, FY_STEP_IMAGE, 0, NULL, "path: layer %s: an entry without a name", c->blob);
    size_t len = strlen(entry);
    if (len > c->lim.path_max)
        return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, NULL, "path: layer %s: an entry name of %zu bytes (at most %llu)",
                       c->blob, len, (unsigned long long)c->lim.path_max);
    if (entry[0] == '/')
        return UNSAFE("absolute", "the entry %s is absolute", entry);
    size_t o = 0;
    const char *p = entry;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return UNSAFE("traversal", "the entry %s climbs out with ..", entry);
        if (n > NAME_MAX) /* (no file system takes it: the failure was an untyped I/O error) */
            return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, c->blob,
                           "path: layer %s: an entry name with a component of %zu bytes (at most %d)", c->blob, n,
                           NAME_MAX);
        if (n && !(n == 1 && p[0] == '.')) {
            if (o)
                out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    out[o] = '\0';
    return 0;
}

/* Opens the directory that holds path's last component (creating missing
 * directories when create), never through a symlink or outside the layer;
 * *leaf points into path. Returns the fd or a negative error. */
static int open_parent(struct layer_ctx *c, char *path, bool create, const char **leaf, const char *entry,
                       fy_error **reterr) {
    char *slash = strrchr(path, '/');
    int cur = fcntl(c->root, F_DUPFD_CLOEXEC, 3);
    if (cur < 0)
        return fail_os(c, entry, "duplicating the layer fd for", errno, reterr);
    if (!slash) {
        *leaf = path;
        return cur;
    }
    *slash = '\0';
    *leaf = slash + 1;
    char *p = path;
    int r = 0;
    while (p && *p) {
        char *next = strchr(p, '/');
        if (next)
            *next = '\0';
        /* No O_NOFOLLOW: RESOLVE_NO_SYMLINKS makes a symlink, last component too, ELOOP. */
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_STRICT};
        int fd = sys_openat2(cur, p, &how, sizeof(how));
        if (fd < 0 && errno == ENOENT && create) {
            if ((mkdirat(cur, p, 0755) < 0 && errno != EEXIST) || fchmodat(cur, p, 0755, 0) < 0)
                r = fail_os(c, entry, "creating a parent of", errno, reterr);
            else if ((r = shift_owner(c, NULL, cur, p, entry, reterr)) == 0)
                fd = sys_openat2(cur, p, &how, sizeof(how));
        }
        if (fd < 0 && !r) {
            if (errno == ELOOP || errno == EXDEV)
                r = UNSAFE("symlink", "the entry %s would be reached through the symbolic link %s", entry, p);
            else if (errno == ENOTDIR)
                r = UNSAFE("notdir", "the entry %s is below %s, which is not a directory", entry, p);
            else if (errno == ENOENT)
                r = UNSAFE("hardlink", "the link target %s is not in the layer", entry);
            else
                r = fail_os(c, entry, "opening a parent of", errno, reterr);
        }
        if (next)
            *next = '/';
        if (r) {
            close(cur);
            *slash = '/';
            return r;
        }
        close(cur);
        cur = fd;
        p = next ? next + 1 : NULL;
    }
    *slash = '/';
    return cur;
}

/* Removes what is at leaf so that an entry can take its place; 1 when keep_dir
 * and a directory is there (kept), 0 when the place is free. */
static int clear_leaf(struct layer_ctx *c, int pfd, const char *leaf, bool keep_dir, const char *entry,
                      fy_error **reterr) {
    struct stat st;
    if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : fail_os(c, entry, "inspecting", errno, reterr);
    if (S_ISDIR(st.st_mode)) {
        if (keep_dir)
            return 1;
        /* (one of this layer's own: a lower layer's lies elsewhere, and
         * overlayfs hides it. A tar of a real tree never lists both, and
         * dropping what the layer put below it would leave its fix-ups
         * naming whatever takes the place.) */
        if (unlinkat(pfd, leaf, AT_REMOVEDIR) < 0)
            return errno == ENOTEMPTY || errno == EEXIST
                       ? UNSAFE("replace", "the entry %s takes the place of a directory the layer filled", entry)
                       : fail_os(c, entry, "replacing the directory", errno, reterr);
        return 0;
    }
    if (unlinkat(pfd, leaf, 0) < 0)
        return fail_os(c, entry, "replacing", errno, reterr);
    return 0;
}

static int write_all_at(int fd, const void *buf, size_t len, off_t off) {
    const char *p = buf;
    while (len) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        off += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- one entry ---- */

/* The entry's owner, shifted into the range (see struct oci_opts). */
static int shift_owner(struct layer_ctx *c, struct archive_entry *e, int pfd, const char *leaf, const char *entry,
                       fy_error **reterr) {
    if (!c->id_count)
        return 0;
    uint64_t u = e ? (uint64_t)archive_entry_uid(e) : 0, g = e ? (uint64_t)archive_entry_gid(e) : 0;
    uint32_t over = c->id_count > 65534 ? 65534 : 0;
    uid_t hu = c->id_first + (u < c->id_count ? (uint32_t)u : over);
    gid_t hg = c->id_first + (g < c->id_count ? (uint32_t)g : over);
    if (fchownat(pfd, leaf, hu, hg, AT_SYMLINK_NOFOLLOW) < 0)
        return fail_os(c, entry, "setting the owner of", errno, reterr);
    return 0;
}

static int put_file(struct layer_ctx *c, struct archive_entry *e, int pfd, const char *leaf, mode_t mode,
                    const char *entry, fy_error **reterr) {
    int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
    if (size < 0)
        size = 0;
    if ((uint64_t)size > c->lim.layer_bytes - c->bytes)
        return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, entry,
                       "bytes: layer %s: the entry %s (%lld bytes) takes the layer past its bound of %llu bytes",
                       c->blob, entry, (long long)size, (unsigned long long)c->lim.layer_bytes);
    c->bytes += (uint64_t)size;
    int r = clear_leaf(c, pfd, leaf, false, entry, reterr);
    if (r < 0)
        return r;
    int fd = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail_os(c, entry, "creating", errno, reterr);
    const void *buf;
    size_t len;
    la_int64_t off;
    while ((r = archive_read_data_block(c->tar, &buf, &len, &off)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        if (off < 0 || (uint64_t)off + len > (uint64_t)size) {
            close(fd);
            return err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, entry,
                           "corrupt: layer %s: the data of %s runs past its size", c->blob, entry);
        }
        if (len && write_all_at(fd, buf, len, (off_t)off) < 0) {
            r = fail_os(c, entry, "writing", errno, reterr);
            close(fd);
            return r;
        }
    }
    if (r != ARCHIVE_EOF) {
        close(fd);
        return fail_stream(c, c->tar, reterr);
    }
    /* Holes stay holes: the size is set, never written. */
    struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = archive_entry_mtime(e)}};
    if ((r = shift_owner(c, e, pfd, leaf, entry, reterr)) < 0) {
        close(fd);
        return r;
    }
    if (ftruncate(fd, (off_t)size) < 0 || fchmod(fd, mode) < 0 || futimens(fd, ts) < 0) {
        r = fail_os(c, entry, "finishing", errno, reterr);
        close(fd);
        return r;
    }
    /* Start writing the file back now, without waiting: the syncfs before
     * the layer is published then waits for what is left, not for all of
     * it (durability is still that syncfs's; this only overlaps the disk
     * with the rest of the extraction). */
    if (size > 0)
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    close(fd);
    return 0;
}

static int put_hardlink(struct layer_ctx *c, const char *target, int pfd, const char *leaf, const char *path,
                        const char *entry, fy_error **reterr) {
    char tpath[PATH_BUF];
    int r = norm_name(c, target, tpath, reterr);
    if (r < 0)
        return r;
    if (!tpath[0])
        return UNSAFE("hardlink", "the entry %s links to the layer's root", entry);
    const char *tleaf;
    int tfd = open_parent(c, tpath, false, &tleaf, target, reterr);
    if (tfd < 0)
        return tfd;
    struct stat st;
    if (fstatat(tfd, tleaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode)) {
        close(tfd);
        return UNSAFE("hardlink", "the entry %s links to %s, which is not a file already in the layer", entry, target);
    }
    /* (a link to itself: nothing to do; the entry's name as normalised, or
     * "./h" to h removed h, then failed to link it) */
    if (tfd == pfd || strcmp(tpath, path) == 0) {
        close(tfd);
        return 0;
    }
    r = clear_leaf(c, pfd, leaf, false, entry, reterr);
    if (r == 0 && linkat(tfd, tleaf, pfd, leaf, 0) < 0)
        r = fail_os(c, entry, "linking", errno, reterr);
    close(tfd);
    return r;
}

/* The directory pfd/name (name "." : pfd itself) marked opaque: it hides
 * the lower layers' directory of its path whole. */
static int mark_opaque(struct layer_ctx *c, int pfd, const char *name, const char *entry, fy_error **reterr) {
    int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return fail_os(c, entry, "opening the opaque directory of", errno, reterr);
    int r = 0;
    if (fsetxattr(dfd, "user.overlay.opaque", "y", 1, 0) < 0)
        r = err_set(reterr, errno == EPERM || errno == EACCES ? FY_E_DENIED : FY_E_UNSUPPORTED, FY_STEP_IMAGE, errno,
                    entry, "layer %s: marking %s opaque: user.overlay.opaque: %s (the cache's file system needs user "
                    "xattrs)", c->blob, entry, strerror(errno));
    /* For an overlay mounted without userxattr (init user namespace). */
    if (!r && c->may_trusted)
        (void)fsetxattr(dfd, "trusted.overlay.opaque", "y", 1, 0);
    close(dfd);
    return r;
}

static int put_whiteout(struct layer_ctx *c, int pfd, const char *leaf, const char *entry, fy_error **reterr) {
    if (strcmp(leaf, ".wh..wh..opq") == 0)
        return mark_opaque(c, pfd, ".", entry, reterr);
    const char *name = leaf + 4;
    if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return UNSAFE("whiteout", "the whiteout %s names no entry of its directory", entry);
    /* A whiteout hides the lower layers' entry only (the OCI layer spec):
     * what this layer made under the name (a layer is unpacked into an
     * empty directory of its own) stays; a directory of it becomes opaque
     * (it replaces the lower one whole). */
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISDIR(st.st_mode))
            return 0;
        return mark_opaque(c, pfd, name, entry, reterr);
    }
    if (mknodat(pfd, name, S_IFCHR | 0, makedev(0, 0)) < 0)
        return fail_os(c, entry, "making the whiteout", errno, reterr);
    return 0;
}

static int put_entry(struct layer_ctx *c, struct archive_entry *e, fy_error **reterr) {
    const char *entry = archive_entry_pathname(e);
    char path[PATH_BUF];
    int r = norm_name(c, entry, path, reterr);
    if (r < 0)
        return r;
    mode_t type = archive_entry_filetype(e);
    const char *hard = archive_entry_hardlink(e);
    mode_t mode = archive_entry_perm(e) & 07777;
    if (mode & (S_ISUID | S_ISGID)) {
        if (c->refuse_setid && !hard)
            return UNSAFE("setid", "the entry %s is setuid or setgid (mode %04o)", entry, (unsigned)mode);
        mode &= ~(mode_t)(S_ISUID | S_ISGID);
    }
    if (!hard && (type == AE_IFCHR || type == AE_IFBLK))
        return UNSAFE("device", "the entry %s is a device node (%u:%u): devices are never unpacked", entry,
                      (unsigned)archive_entry_rdevmajor(e), (unsigned)archive_entry_rdevminor(e));
    if (!path[0])
        return 0; /* the layer's root ("./"): its mode stays the cache's */
    const char *leaf;
    int pfd = open_parent(c, path, true, &leaf, entry, reterr);
    if (pfd < 0)
        return pfd;
    if (strncmp(leaf, ".wh.", 4) == 0) {
        r = put_whiteout(c, pfd, leaf, entry, reterr);
    } else if (hard) {
        r = put_hardlink(c, hard, pfd, leaf, path, entry, reterr);
    } else if (type == AE_IFREG) {
        r = put_file(c, e, pfd, leaf, mode, entry, reterr);
    } else if (type == AE_IFDIR) {
        /* In place of this layer's whiteout: the lower directory is
         * replaced, not merged (its files showed through again). */
        struct stat wst;
        bool over_whiteout = fstatat(pfd, leaf, &wst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(wst.st_mode) &&
                             wst.st_rdev == makedev(0, 0);
        r = clear_leaf(c, pfd, leaf, true, entry, reterr);
        bool again = r == 1 && c->nfix && strcmp(c->fix[c->nfix - 1].path, path) == 0;
        if (r == 0 && mkdirat(pfd, leaf, 0700) < 0)
            r = fail_os(c, entry, "creating the directory", errno, reterr);
        if (r == 0 && over_whiteout)
            r = mark_opaque(c, pfd, leaf, entry, reterr);
        if (r >= 0 && shift_owner(c, e, pfd, leaf, entry, reterr) < 0)
            r = FY_E_IO;
        if (r >= 0 && again) {
            r = 0; /* (the same directory listed again: its last fix-up is this one's) */
            c->fix[c->nfix - 1].mode = mode;
            c->fix[c->nfix - 1].mtime = (struct timespec){.tv_sec = archive_entry_mtime(e)};
        } else if (r >= 0 && (c->fixbytes += strlen(path) + 1 + sizeof(struct dirfix)) > c->lim.fixup_bytes) {
            /* (what the directories' fix-ups, mode and mtime set when the
             * layer ends, hold in memory: each listed directory's path and
             * record; a directory listed again replaces its fix-up when it
             * is the last one, tar's order) */
            r = err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, c->blob,
                        "entries: layer %s lists directories whose fix-ups take more than %llu bytes", c->blob,
                        (unsigned long long)c->lim.fixup_bytes);
        } else if (r >= 0) {
            r = 0;
            if (c->nfix == c->capfix) {
                size_t ncap = c->capfix ? 2 * c->capfix : 64;
                struct dirfix *n = realloc(c->fix, ncap * sizeof(*n));
                if (!n)
                    r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
                else
                    c->fix = n, c->capfix = ncap;
            }
            if (!r) {
                struct dirfix *f = &c->fix[c->nfix];
                f->path = util_strdup(path);
                f->mode = mode;
                f->mtime = (struct timespec){.tv_sec = archive_entry_mtime(e)};
                if (f->path)
                    c->nfix++;
                else
                    r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
            }
        }
    } else if (type == AE_IFLNK) {
        const char *target = archive_entry_symlink(e);
        if (!target || !target[0] || strlen(target) > c->lim.path_max)
            r = err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, entry, "path: layer %s: the symbolic link %s has a bad target",
                        c->blob, entry);
        else if ((r = clear_leaf(c, pfd, leaf, false, entry, reterr)) == 0 && symlinkat(target, pfd, leaf) < 0)
            r = fail_os(c, entry, "creating the symbolic link", errno, reterr);
        if (r == 0)
            r = shift_owner(c, e, pfd, leaf, entry, reterr);
        if (r == 0) {
            struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = archive_entry_mtime(e)}};
            (void)utimensat(pfd, leaf, ts, AT_SYMLINK_NOFOLLOW);
        }
    } else if (type == AE_IFIFO) {
        if ((r = clear_leaf(c, pfd, leaf, false, entry, reterr)) == 0 &&
            (mknodat(pfd, leaf, S_IFIFO | (mode & 0777), 0) < 0 || fchmodat(pfd, leaf, mode & 0777, 0) < 0))
            r = fail_os(c, entry, "creating the fifo", errno, reterr); /* (its mode whatever our umask) */
        if (r == 0)
            r = shift_owner(c, e, pfd, leaf, entry, reterr);
    } else if (type == AE_IFSOCK) {
        r = 0; /* a socket in a tar is meaningless: skipped */
    } else {
        r = UNSAFE("type", "the entry %s has an unknown type %o", entry, (unsigned)type);
    }
    close(pfd);
    return r < 0 ? r : 0;
}

/* Directory modes and times, deepest first, once nothing more is written below. */
static int fix_dirs(struct layer_ctx *c, fy_error **reterr) {
    for (size_t i = c->nfix; i-- > 0;) {
        struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, .resolve = RESOLVE_STRICT};
        int fd = sys_openat2(c->root, c->fix[i].path, &how, sizeof(how));
        if (fd < 0)
            continue; /* replaced or whited out later in the layer */
        struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, c->fix[i].mtime};
        int r = fchmod(fd, c->fix[i].mode | S_IRWXU) < 0 || futimens(fd, ts) < 0 ? -1 : 0;
        int e = errno;
        close(fd);
        if (r < 0)
            return fail_os(c, c->fix[i].path, "setting the mode of", e, reterr);
    }
    return 0;
}

static int extract(struct layer_ctx *c, const char *diff_id, const char *digest, fy_error **reterr) {
    int r = 0;
    c->hc.ctx = c->hu.ctx = NULL;
    c->threaded = false;
    if (digest_init(&c->hc) < 0 || digest_init(&c->hu) < 0) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
        goto out;
    }
    hasher_start(c);
    if (lazy_open(&lazy_archive) < 0) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, NULL,
                    "unpacking a layer needs libarchive, which cannot be loaded: %s", lazy_archive.why);
        goto out;
    }
    c->dec = archive_read_new();
    c->tar = archive_read_new();
    if (!c->dec || !c->tar) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
        goto out;
    }
    /* Only built-in decoders: archive_read_support_filter_all would run
     * external programs (lrzip, lzop, grzip) for some formats. */
    if (archive_read_support_filter_gzip(c->dec) != ARCHIVE_OK ||
        archive_read_support_filter_zstd(c->dec) != ARCHIVE_OK ||
        archive_read_support_filter_none(c->dec) != ARCHIVE_OK || archive_read_support_format_raw(c->dec) != ARCHIVE_OK ||
        archive_read_support_format_tar(c->tar) != ARCHIVE_OK || archive_read_support_filter_none(c->tar) != ARCHIVE_OK) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, c->blob,
                    "this libarchive has no built-in gzip or zstd decoder: %s", archive_error_string(c->dec));
        goto out;
    }
    struct archive_entry *e;
    if (archive_read_open(c->dec, c, NULL, comp_read, NULL) != ARCHIVE_OK ||
        archive_read_next_header(c->dec, &e) != ARCHIVE_OK) {
        r = fail_stream(c, c->dec, reterr);
        goto out;
    }
    /* An uncompressed layer is one stream: both digests are the same hash. */
    c->same = archive_filter_count(c->dec) == 1 && archive_filter_code(c->dec, 0) == ARCHIVE_FILTER_NONE;
    if (archive_read_open(c->tar, c, NULL, unc_read, NULL) != ARCHIVE_OK) {
        r = fail_stream(c, c->tar, reterr);
        goto out;
    }
    for (;;) {
        int k = archive_read_next_header(c->tar, &e);
        if (k == ARCHIVE_EOF)
            break;
        if (k < ARCHIVE_WARN) {
            r = fail_stream(c, c->tar, reterr);
            goto out;
        }
        if (++c->entries > c->lim.entries) {
            r = err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, c->blob, "entries: layer %s has more than %llu entries",
                        c->blob, (unsigned long long)c->lim.entries);
            goto out;
        }
        if ((r = put_entry(c, e, reterr)) < 0)
            goto out;
    }
    /* Everything after the tar's end still counts for both digests. */
    la_ssize_t n;
    const void *rest;
    while ((n = unc_next(c, &rest)) > 0)
        ;
    if (n < 0) {
        r = fail_stream(c, c->dec, reterr);
        goto out;
    }
    const void *dummy;
    while ((n = comp_read(c->dec, c, &dummy)) > 0)
        ;
    if (n < 0) {
        r = fail_stream(c, c->dec, reterr);
        goto out;
    }
    unsigned char h[32];
    char got[OCI_DIGEST_LEN + 1];
    hasher_finish(c);
    digest_final(&c->hc, h);
    oci_digest_hex(h, got);
    char comp[OCI_DIGEST_LEN + 1];
    memcpy(comp, got, sizeof(comp));
    if (digest && digest[0] && strcmp(got, digest)) {
        r = err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, digest, "digest: layer blob %s has digest %s", digest, got);
        goto out;
    }
    if (c->size_known && c->ncomp != c->expect_comp) {
        r = err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, c->blob, "size: layer %s is %llu bytes, its descriptor says %llu",
                    c->blob, (unsigned long long)c->ncomp, (unsigned long long)c->expect_comp);
        goto out;
    }
    if (c->same) {
        memcpy(got, comp, sizeof(got));
    } else {
        digest_final(&c->hu, h);
        oci_digest_hex(h, got);
    }
    if (strcmp(got, diff_id)) {
        r = err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, diff_id,
                    "diff_id: layer %s uncompresses to %s, the config says %s", c->blob, got, diff_id);
        goto out;
    }
    r = fix_dirs(c, reterr);
out:
    hasher_finish(c);
    digest_abandon(&c->hc);
    digest_abandon(&c->hu);
    archive_read_free(c->tar);
    archive_read_free(c->dec);
    c->tar = c->dec = NULL;
    for (size_t i = 0; i < c->nfix; i++)
        free(c->fix[i].path);
    free(c->fix);
    c->fix = NULL;
    c->nfix = c->capfix = c->fixbytes = 0;
    return r;
}

/* ---- the cache ---- */

bool oci_is_root(void) { return geteuid() == 0; }

char *oci_cache_dir(void) { return util_cache_dir("FORGEYARD_IMAGE_CACHE", "images"); }

struct cache {
    char *path;
    char layers_name[48];
    int root, layers, tmp, locks, gc;
};

static void cache_close(struct cache *k) {
    int *fds[] = {&k->root, &k->layers, &k->tmp, &k->locks, &k->gc};
    for (size_t i = 0; i < FY_ARRAY_SIZE(fds); i++)
        if (*fds[i] >= 0)
            close(*fds[i]), *fds[i] = -1;
    free(k->path);
    k->path = NULL;
}

static int mkdir_p(const char *path, mode_t mode) {
    return util_mkdir_parents(path, 0755) < 0 || (mkdir(path, mode) < 0 && errno != EEXIST) ? -1 : 0;
}

static int subdir(int root, const char *name, mode_t mode) {
    if (mkdirat(root, name, mode) < 0 && errno != EEXIST)
        return -1;
    return openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The cache's mark (the Cache Directory Tagging convention: backup tools
 * skip it): a directory is used as an image cache only when it carries
 * it, or holds nothing but what a cache holds (one made before the mark
 * existed, or empty: marked then). Never a directory that merely exists:
 * `image gc --cache /var` emptied /var/tmp. */
#define CACHE_TAG "CACHEDIR.TAG"
#define CACHE_TAG_TEXT                                                                                      \
    "Signature: 8a477f597d28d172789f06886806bc55\n# The forgeyard image layer cache (forgeyard(1), image " \
    "gc).\n"

static bool cache_entry_name(const char *n) {
    return !strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "layers") || !strncmp(n, "layers-", 7) ||
           !strcmp(n, "tmp") || !strcmp(n, "locks") || !strcmp(n, "gc.lock") || !strcmp(n, "uppers") ||
           !strcmp(n, CACHE_TAG);
}

/* 0 when root is marked or is marked now; else -1 with *other the name of
 * an entry no cache has (or "" when the mark could not be read or made). */
static int cache_mark(int root, char *other, size_t len) {
    char buf[64] = {0};
    int fd = -1;
    for (int tries = 0; tries < 50; tries++) { /* (a tag made by name may be read before it is written) */
        fd = openat(root, CACHE_TAG, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            break;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n >= 43 && !strncmp(buf, CACHE_TAG_TEXT, 43))
            return 0;
        if (n != 0)
            break;
        usleep(2000);
    }
    if (fd >= 0) {
        snprintf(other, len, "%s", CACHE_TAG);
        return -1;
    }
    int dfd = fcntl(root, F_DUPFD_CLOEXEC, 3);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        snprintf(other, len, "%s", "");
        return -1;
    }
    struct dirent *de;
    int r = 0;
    while (r == 0 && (de = readdir(d)))
        if (!cache_entry_name(de->d_name)) {
            snprintf(other, len, "%s", de->d_name);
            r = -1;
        }
    closedir(d);
    if (r < 0)
        return r;
    /* Written whole before it has its name (an unnamed file, then linked):
     * a process opening the cache meanwhile never reads it half made. */
    fd = openat(root, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && fchmod(fd, 0644) == 0 &&
              write(fd, CACHE_TAG_TEXT, strlen(CACHE_TAG_TEXT)) == (ssize_t)strlen(CACHE_TAG_TEXT);
    if (ok) {
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        ok = linkat(AT_FDCWD, proc, root, CACHE_TAG, AT_SYMLINK_FOLLOW) == 0;
        if (!ok && errno == EEXIST) { /* (made by another process meanwhile) */
            close(fd);
            return cache_mark(root, other, len);
        }
    } else if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        /* (no unnamed files here: made by name; a reader that comes
         * before the write retries, above) */
        fd = openat(root, CACHE_TAG, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            return cache_mark(root, other, len);
        ok = fd >= 0 && write(fd, CACHE_TAG_TEXT, strlen(CACHE_TAG_TEXT)) == (ssize_t)strlen(CACHE_TAG_TEXT);
    }
    if (fd >= 0)
        close(fd);
    if (!ok)
        snprintf(other, len, "%s", "");
    return ok ? 0 : -1;
}

/* Opens (create: makes) the cache at dir (NULL: the default). 0, 1 when
 * !create and there is no cache there, or an error. The layers directory
 * is mode 0700, and owner >= 0 its owner (a shifted range's first, which
 * the sandbox opens its layers as; else the caller's): no other user of
 * the host reaches the layers, whose entries keep the image's modes (a
 * 1777 /tmp, a 0666 file) that would otherwise let anyone change what
 * every later container of the image sees. (A caller's own cache was 0711:
 * another user of the host who guessed a layer's public diff_id wrote into
 * it where the home was 0755, the sixth exploration. The sandbox opens the
 * lowers as the caller, who needs no pass-through for others.) */
static int cache_open(const char *dir, const char *layers, bool create, int64_t owner, struct cache *k,
                      fy_error **reterr) {
    *k = (struct cache){.root = -1, .layers = -1, .tmp = -1, .locks = -1, .gc = -1};
    snprintf(k->layers_name, sizeof(k->layers_name), "%s", layers);
    k->path = dir ? util_strdup(dir) : oci_cache_dir();
    if (!k->path)
        return err_set(reterr, dir ? FY_E_NOMEM : FY_E_NOTFOUND, FY_STEP_IMAGE, 0, NULL,
                       "no image cache directory (FORGEYARD_IMAGE_CACHE, XDG_CACHE_HOME, a home of this user's, "
                       "or a forgeyard-UID directory of its own in TMPDIR or /var/tmp)");
    struct stat st;
    bool absent = k->path[0] == '/' && lstat(k->path, &st) < 0 && errno == ENOENT;
    if (!create && absent) {
        cache_close(k);
        return 1;
    }
    if (k->path[0] != '/' || (create && mkdir_p(k->path, 0755) < 0) ||
        (k->root = open(k->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        (absent && fchmod(k->root, 0755) < 0) /* (made now: whatever the caller's umask) */ ||
        fstat(k->root, &st) < 0) {
        int e = errno;
        int r = err_set(reterr, k->path[0] != '/' ? FY_E_INVAL : err_from_errno(e), FY_STEP_IMAGE, e, k->path,
                        "image cache %s: %s", k->path, k->path[0] != '/' ? "not absolute" : strerror(e));
        cache_close(k);
        return r;
    }
    /* Another user who can write here could plant a layer under its digest. */
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        int r = err_set(reterr, FY_E_DENIED, FY_STEP_IMAGE, 0, k->path,
                        "image cache %s is owned by uid %u or writable by others: not trusted", k->path,
                        (unsigned)st.st_uid);
        cache_close(k);
        return r;
    }
    char other[256];
    if (cache_mark(k->root, other, sizeof(other)) < 0) {
        int r = err_set(reterr, FY_E_DENIED, FY_STEP_IMAGE, 0, k->path,
                        other[0] ? "%s is no image cache: it holds \"%s\" and no %s of forgeyard's (name the cache "
                                   "itself, or an empty or new directory)"
                                 : "%s: its %s could not be read or made",
                        k->path, other[0] ? other : CACHE_TAG, CACHE_TAG);
        cache_close(k);
        return r;
    }
    if ((k->layers = subdir(k->root, layers, 0755)) < 0 || (k->tmp = subdir(k->root, "tmp", 0700)) < 0 ||
        (k->locks = subdir(k->root, "locks", 0700)) < 0 ||
        (k->gc = openat(k->root, "gc.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        int e = errno;
        int r = err_set(reterr, err_from_errno(e), FY_STEP_IMAGE, e, k->path, "image cache %s: %s", k->path, strerror(e));
        cache_close(k);
        return r;
    }
    struct stat lst;
    if (fstat(k->layers, &lst) < 0 ||
        (owner >= 0 && lst.st_uid != (uid_t)owner && fchown(k->layers, (uid_t)owner, (gid_t)owner) < 0) ||
        ((lst.st_mode & 07777) != 0700 && fchmod(k->layers, 0700) < 0)) {
        int e = errno;
        int r = err_set(reterr, err_from_errno(e), FY_STEP_IMAGE, e, k->path, "image cache %s/%s: %s", k->path,
                        layers, strerror(e));
        cache_close(k);
        return r;
    }
    /* The staging directory is the cache's own: what gc removes there is
     * what crashed unpacks (and removals) left. */
    if (fstat(k->tmp, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        int r = err_set(reterr, FY_E_DENIED, FY_STEP_IMAGE, 0, k->path,
                        "image cache %s: its tmp is owned by uid %u or open to others (mode %o): not the cache's own",
                        k->path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        cache_close(k);
        return r;
    }
    return 0;
}

/* A name unpack or gc stages in tmp: a layer key (64 hex digits), a dot
 * and 8 hex digits. */
static bool staged_name(const char *n) {
    size_t len = strlen(n);
    if (len != 64 + 1 + 8 || n[64] != '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (i != 64 && !((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    return true;
}

static int flock_retry(int fd, int op) {
    int r;
    do
        r = flock(fd, op);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Removes name under at (a tree, never following a symlink, never into
 * another file system), directories made writable where they are not:
 * 0, or -1. */
static int remove_tree(int at, const char *name) {
    return util_remove_tree_at(at, name, UTIL_RM_ONE_FS | UTIL_RM_OPEN_UP) < 0 ? -1 : 0;
}

/* A layer's disk use, for gc's size bound, every level of it: a walk that
 * holds one directory open at a time and a position per level on the heap
 * (going back up through ".."), so neither the stack nor the descriptors
 * grow with the depth (a recursion to a layer's 4,200 levels overran a
 * host thread's 128 KiB stack; counting only 64 levels let an image keep
 * any amount of data below them past gc's --max-size: the sixth
 * exploration). Nothing is followed: O_NOFOLLOW, and ".." of a directory
 * the walk entered is the one it came from (gc holds the cache's lock). */
static uint64_t tree_bytes(int at, const char *name) {
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    uint64_t n = (uint64_t)st.st_blocks * 512;
    int fd = S_ISDIR(st.st_mode) ? openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return n;
    }
    long *pos = NULL;
    size_t depth = 0, cap = 0;
    for (;;) {
        struct dirent *de = readdir(d);
        if (!de) {
            if (depth == 0)
                break;
            int up = openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            closedir(d);
            if (up < 0 || !(d = fdopendir(up))) {
                if (up >= 0)
                    close(up);
                d = NULL;
                break;
            }
            seekdir(d, pos[--depth]);
            continue;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        n += (uint64_t)st.st_blocks * 512;
        if (!S_ISDIR(st.st_mode))
            continue;
        if (depth == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            long *np = realloc(pos, ncap * sizeof(*np));
            if (!np)
                continue; /* (its contents uncounted: an estimate, only without memory) */
            pos = np;
            cap = ncap;
        }
        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
        if (!sd) {
            if (sub >= 0)
                close(sub);
            continue;
        }
        pos[depth++] = telldir(d);
        closedir(d);
        d = sd;
    }
    if (d)
        closedir(d);
    free(pos);
    return n;
}

static void limits_default(struct oci_limits *l, const struct oci_limits *in) {
    *l = in ? *in : (struct oci_limits){0};
    if (!l->layer_bytes)
        l->layer_bytes = OCI_DEFAULT_LAYER_BYTES;
    if (!l->stream_bytes)
        l->stream_bytes = OCI_DEFAULT_STREAM_BYTES;
    if (!l->entries)
        l->entries = OCI_DEFAULT_ENTRIES;
    if (!l->path_max || l->path_max > PATH_BUF - 1)
        l->path_max = PATH_BUF - 1;
    if (!l->ratio)
        l->ratio = OCI_DEFAULT_RATIO;
    if (!l->ratio_floor)
        l->ratio_floor = OCI_DEFAULT_RATIO_FLOOR;
    if (!l->fixup_bytes)
        l->fixup_bytes = OCI_DEFAULT_FIXUP_BYTES;
}

/* Opens layer i's compressed stream into c (blob_fd or outer). */
static int open_layer(struct oci_src *src, const struct oci_image *img, size_t i, struct layer_ctx *c,
                      fy_error **reterr) {
    char name[PATH_BUF];
    if (img->layer_paths)
        snprintf(name, sizeof(name), "%s", img->layer_paths[i]);
    else
        snprintf(name, sizeof(name), "blobs/sha256/%s", img->layer_digests[i] + 7);
    c->blob = img->layer_paths ? img->layer_paths[i] : img->layer_digests[i];
    if (src->ref->transport == OCI_LAYOUT) {
        /* (O_NONBLOCK: a FIFO in the layout is refused below, never waited on) */
        struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        c->blob_fd = sys_openat2(src->fd, name, &how, sizeof(how));
        struct stat st;
        if (c->blob_fd < 0 || fstat(c->blob_fd, &st) < 0 || !S_ISREG(st.st_mode))
            return err_set(reterr, c->blob_fd < 0 ? err_from_errno(errno) : FY_E_INVAL, FY_STEP_IMAGE, errno, c->blob,
                           "image %s: layer %s: %s", src->ref->path, name,
                           c->blob_fd < 0 ? strerror(errno) : "not a regular file");
        return 0;
    }
    if (!(c->outer = oci_archive_new_outer(src->fd, reterr)))
        return FY_E_IO;
    if (oci_archive_seek(c->outer, name) < 0)
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_IMAGE, 0, c->blob, "image %s: no layer %s in the archive",
                       src->ref->path, name);
    return 0;
}

/* The blobs each cached layer was verified from: locks/<layers>.<key>.blobs,
 * one "sha256:<hex>" a line. A layer in the cache serves an image only
 * when that image's blob for it is listed: naming a cached layer's diff_id
 * (often public, or guessed from a base image) is not enough (another
 * image's private layer was handed to an image whose blob did not even
 * exist); an unlisted blob is verified by unpacking it once more, then
 * listed. A layer without a blob digest (a docker-archive's: its manifest
 * names files, not blobs) is never listed, so it is verified at every
 * unpack: an empty line matched any docker-archive naming the diff_id,
 * one without the layer's file at all (the sixth exploration). */
static bool blob_recorded(const struct cache *k, const char *key, const char *digest) {
    char name[200], buf[8192];
    if (!digest[0])
        return false;
    snprintf(name, sizeof(name), "%s.%s.blobs", k->layers_name, key);
    int fd = openat(k->locks, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t dl = strlen(digest), have = 0;
    bool found = false;
    ssize_t n;
    while (!found && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while (!found && (nl = strchr(line, '\n'))) {
            found = (size_t)(nl - line) == dl && !memcmp(line, digest, dl);
            line = nl + 1;
        }
        have = strlen(line);
        memmove(buf, line, have);
    }
    close(fd);
    return found;
}

static void blob_record(const struct cache *k, const char *key, const char *digest) {
    char name[200], line[128];
    if (!digest[0])
        return; /* (nothing to name it by: verified every time) */
    snprintf(name, sizeof(name), "%s.%s.blobs", k->layers_name, key);
    int fd = openat(k->locks, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int len = snprintf(line, sizeof(line), "%s\n", digest);
    if (len > 0 && (size_t)len < sizeof(line))
        (void)!write(fd, line, (size_t)len); /* (one short append: whole; a lost one costs a verification) */
    close(fd);
}

static int unpack_layers(struct oci_src *src, struct oci_image *img, const struct oci_opts *o, struct cache *k,
                         fy_error **reterr) {
    struct layer_ctx *c = calloc(1, sizeof(*c));
    unsigned char *ring = malloc((size_t)CRING * CBUF);
    if (!c || !ring || !(img->layer_dirs = calloc(img->nlayers + 1, sizeof(char *)))) {
        free(c);
        free(ring);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
    }
    for (size_t i = 0; i < CRING; i++)
        c->cbuf[i] = ring + i * CBUF;
    limits_default(&c->lim, o ? &o->limits : NULL);
    c->refuse_setid = o && o->refuse_setid;
    if (o && o->hold) {
        if (!(img->lock_fds = malloc(img->nlayers * sizeof(int) + 1))) {
            free(c);
            free(ring);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
        }
        img->nlock_fds = img->nlayers;
        for (size_t i = 0; i < img->nlayers; i++)
            img->lock_fds[i] = -1;
    }
    c->id_first = o ? o->id_first : 0;
    c->id_count = o ? o->id_count : 0;
    c->may_trusted = geteuid() == 0;
    c->progress = o ? o->progress : NULL;
    c->userdata = o ? o->userdata : NULL;
    c->nlayers = (uint32_t)img->nlayers;
    /* (the progress's total: what will be unpacked; nobody asked, nothing read) */
    for (size_t i = 0; c->progress && i < img->nlayers; i++) {
        struct stat st;
        if (fstatat(k->layers, img->diff_ids[i] + 7, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !blob_recorded(k, img->diff_ids[i] + 7, img->layer_digests[i]))
            c->total += img->layer_sizes[i];
    }
    int r = 0;
    for (size_t i = 0; i < img->nlayers && r == 0; i++) {
        const char *key = img->diff_ids[i] + 7;
        if (!(img->layer_dirs[i] = util_asprintf("%s/%s/%s", k->path, k->layers_name, key))) {
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
            break;
        }
        /* One lock per layer (per cache directory): exclusive while it is
         * made, shared while it is used (a prepared plan holds it: gc skips
         * the layer). A layer present is only ever locked shared, so a
         * process that holds one may prepare the same image again. */
        char lockname[160], stage[96];
        snprintf(lockname, sizeof(lockname), "%s.%s.lock", k->layers_name, key);
        int lfd = openat(k->locks, lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        struct stat st;
        bool present = fstatat(k->layers, key, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        if (lfd < 0 || flock_retry(lfd, present ? LOCK_SH : LOCK_EX) < 0) {
            r = err_set(reterr, err_from_errno(errno), FY_STEP_IMAGE, errno, k->path, "locking layer %s: %s", key,
                        strerror(errno));
            if (lfd >= 0)
                close(lfd);
            break;
        }
        if (!present && fstatat(k->layers, key, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            present = true; /* (made while we waited for the lock) */
            (void)flock_retry(lfd, LOCK_SH);
        }
        /* A cached layer serves this image only for a blob it was verified
         * from; another is verified (unpacked, then dropped) first. */
        bool verify_only = present && !blob_recorded(k, key, img->layer_digests[i]);
        if (present && !verify_only) {
            (void)utimensat(k->layers, key, NULL, AT_SYMLINK_NOFOLLOW); /* used now (gc) */
            if (img->lock_fds)
                img->lock_fds[i] = lfd;
            else
                close(lfd);
            continue;
        }
        uint32_t rnd = randombytes_random();
        snprintf(stage, sizeof(stage), "%s.%08x", key, rnd);
        c->root = -1;
        c->blob_fd = -1;
        c->outer = NULL;
        c->layer = (uint32_t)i;
        c->expect_comp = img->layer_sizes[i];
        c->size_known = img->layer_digests[i][0] != 0; /* (a blob named by a descriptor) */
        c->ncomp = c->nunc = c->entries = c->bytes = c->last_report = 0;
        c->dec_failed = false;
        c->bound = NULL;
        if (mkdirat(k->tmp, stage, 0755) < 0 ||
            (c->root = openat(k->tmp, stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
            fchmod(c->root, 0755) < 0 /* (the layer's root: whatever our umask; "./" sets its own) */) {
            r = err_set(reterr, err_from_errno(errno), FY_STEP_IMAGE, errno, k->path, "staging layer %s: %s", key,
                        strerror(errno));
        } else if ((r = open_layer(src, img, i, c, reterr)) == 0 &&
                   (r = extract(c, img->diff_ids[i], img->layer_digests[i], reterr)) == 0) {
            if (verify_only)
                (void)utimensat(k->layers, key, NULL, AT_SYMLINK_NOFOLLOW); /* verified: the cached one serves */
            else if (syncfs(c->root) < 0 || renameat(k->tmp, stage, k->layers, key) < 0 || fsync(k->layers) < 0)
                r = err_set(reterr, err_from_errno(errno), FY_STEP_IMAGE, errno, k->path, "publishing layer %s: %s",
                            key, strerror(errno));
            if (r == 0)
                blob_record(k, key, img->layer_digests[i]);
        }
        c->done_base += img->layer_sizes[i];
        if (c->root >= 0)
            close(c->root);
        if (c->blob_fd >= 0)
            close(c->blob_fd);
        oci_archive_free_outer(c->outer);
        /* Staging never survives, whether published (gone already) or not. */
        (void)remove_tree(k->tmp, stage);
        if (r == 0 && img->lock_fds && flock_retry(lfd, LOCK_SH) == 0)
            img->lock_fds[i] = lfd;
        else
            close(lfd);
    }
    free(c);
    free(ring);
    return r;
}

int oci_unpack(const char *refstr, const struct oci_opts *opts, struct oci_image **ret, fy_error **reterr) {
    struct oci_ref ref;
    struct oci_src src = {.fd = -1};
    struct cache k = {.root = -1, .layers = -1, .tmp = -1, .locks = -1, .gc = -1};
    struct oci_image *img = NULL;
    *ret = NULL;
    int r = oci_ref_parse(refstr, &ref, reterr);
    if (r < 0)
        return r;
    if ((r = oci_src_open(&src, &ref, reterr)) < 0 || (r = oci_resolve_src(&src, &img, reterr)) < 0)
        goto out;
    char layers[48] = "layers";
    if (opts && opts->id_count) {
        if (geteuid() != 0) {
            r = err_set(reterr, FY_E_DENIED, FY_STEP_IMAGE, 0, NULL, "shifting image owners needs root");
            goto out;
        }
        snprintf(layers, sizeof(layers), "layers-%u-%u", opts->id_first, opts->id_count);
    }
    if ((r = cache_open(opts ? opts->cache_dir : NULL, layers, true,
                        opts && opts->id_count ? (int64_t)opts->id_first : -1, &k, reterr)) < 0)
        goto out;
    if (flock_retry(k.gc, LOCK_SH) < 0) {
        r = err_set(reterr, FY_E_IO, FY_STEP_IMAGE, errno, k.path, "locking the image cache: %s", strerror(errno));
        goto out;
    }
    r = unpack_layers(&src, img, opts, &k, reterr);
    for (size_t i = img->nlayers; r == 0 && i-- > 1;) {
        char v[2] = "";
        if (getxattr(img->layer_dirs[i], "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y') {
            img->first_visible = i;
            break;
        }
    }
out:
    cache_close(&k);
    oci_src_close(&src);
    oci_ref_free(&ref);
    if (r < 0)
        oci_image_free(img);
    else
        *ret = img;
    return r;
}

struct gc_item {
    char dir[48], name[72];
    time_t used;
    uint64_t bytes;
};

static int gc_cmp(const void *a, const void *b) {
    const struct gc_item *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

/* Appends the layers of the directory name (layers or layers-F-C) to *items. */
static int gc_collect(int root, const char *name, struct gc_item **items, size_t *n, size_t *cap, uint64_t *total) {
    int fd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (strlen(de->d_name) != 64 || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (*n == *cap) {
            size_t nc = *cap ? 2 * *cap : 64;
            struct gc_item *ni = realloc(*items, nc * sizeof(*ni));
            if (!ni) {
                r = -1;
                break;
            }
            *items = ni;
            *cap = nc;
        }
        struct gc_item *it = &(*items)[*n];
        snprintf(it->dir, sizeof(it->dir), "%s", name);
        snprintf(it->name, sizeof(it->name), "%s", de->d_name);
        it->used = st.st_mtim.tv_sec;
        it->bytes = tree_bytes(dirfd(d), de->d_name);
        *total += it->bytes;
        (*n)++;
    }
    closedir(d);
    return r;
}

int oci_gc(const char *dir, uint64_t max_bytes, uint64_t max_age_sec, uint64_t *removed, fy_error **reterr) {
    struct cache k;
    int r = cache_open(dir, "layers", false, -1, &k, reterr);
    if (r != 0) {
        if (r == 1 && removed)
            *removed = 0; /* no cache there: nothing to collect (and none made) */
        return r < 0 ? r : 0;
    }
    if (flock_retry(k.gc, LOCK_EX) < 0) {
        r = err_set(reterr, FY_E_IO, FY_STEP_IMAGE, errno, k.path, "locking the image cache: %s", strerror(errno));
        cache_close(&k);
        return r;
    }
    /* Nobody unpacks now: whatever is staged was left by a crash. */
    int fd = fcntl(k.tmp, F_DUPFD_CLOEXEC, 3);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    int failed = 0;
    while (d && (de = readdir(d)))
        if (staged_name(de->d_name))
            failed += remove_tree(k.tmp, de->d_name) < 0;
    if (d)
        closedir(d);
    else
        failed++;
    struct gc_item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0, count = 0;
    fd = fcntl(k.root, F_DUPFD_CLOEXEC, 3);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    while (d && (de = readdir(d)))
        if ((!strcmp(de->d_name, "layers") || !strncmp(de->d_name, "layers-", 7)) && strlen(de->d_name) < 48)
            failed += gc_collect(k.root, de->d_name, &items, &n, &cap, &total) < 0;
    if (d)
        closedir(d);
    else
        failed++;
    if (n)
        qsort(items, n, sizeof(*items), gc_cmp);
    time_t now = time(NULL);
    for (size_t i = 0; i < n; i++) {
        bool old = max_age_sec != UINT64_MAX && (uint64_t)(now - items[i].used) >= max_age_sec;
        if (!old && total <= max_bytes)
            continue;
        /* A layer a prepared plan holds (shared lock) is in use: kept. */
        char lockname[160];
        snprintf(lockname, sizeof(lockname), "%s.%s.lock", items[i].dir, items[i].name);
        int held = openat(k.locks, lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (held < 0 || flock(held, LOCK_EX | LOCK_NB) < 0) {
            if (held < 0 || errno != EWOULDBLOCK)
                failed++;
            if (held >= 0)
                close(held);
            continue;
        }
        /* Moved out of the layers first, then removed: a gc killed half
         * way leaves a staged name for the next gc, never a half layer
         * that unpack would take as whole. */
        int lfd = openat(k.root, items[i].dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char gone[96];
        snprintf(gone, sizeof(gone), "%.64s.%08x", items[i].name, randombytes_random());
        bool moved = lfd >= 0 && strlen(items[i].name) == 64 && renameat(lfd, items[i].name, k.tmp, gone) == 0;
        if (lfd < 0 || (moved ? remove_tree(k.tmp, gone) < 0 : remove_tree(lfd, items[i].name) < 0)) {
            failed++;
            if (lfd >= 0)
                close(lfd);
            close(held);
            continue;
        }
        close(lfd);
        (void)unlinkat(k.locks, lockname, 0);
        snprintf(lockname, sizeof(lockname), "%s.%s.blobs", items[i].dir, items[i].name);
        (void)unlinkat(k.locks, lockname, 0);
        close(held);
        total -= items[i].bytes;
        count++;
    }
    free(items);
    /* The lock files of layers that are not there (an unpack refused or
     * failed): nobody unpacks while gc holds the cache (gc.lock), and one
     * held by anyone is left. */
    fd = fcntl(k.locks, F_DUPFD_CLOEXEC, 3);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    while (d && (de = readdir(d))) {
        char dirname[48], key[72];
        size_t len = strlen(de->d_name);
        const char *dot = strchr(de->d_name, '.');
        if (len < 6 || strcmp(de->d_name + len - 5, ".lock") != 0 || !dot || (size_t)(dot - de->d_name) >= sizeof(dirname) ||
            len - 5 - (size_t)(dot - de->d_name) - 1 >= sizeof(key))
            continue;
        snprintf(dirname, sizeof(dirname), "%.*s", (int)(dot - de->d_name), de->d_name);
        snprintf(key, sizeof(key), "%.*s", (int)(len - 5 - (size_t)(dot - de->d_name) - 1), dot + 1);
        if (strcmp(dirname, "layers") != 0 && strncmp(dirname, "layers-", 7) != 0)
            continue;
        char layer[128];
        snprintf(layer, sizeof(layer), "%s/%s", dirname, key);
        struct stat st;
        if (fstatat(k.root, layer, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
            continue;
        int lock = openat(dirfd(d), de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0)
            (void)unlinkat(dirfd(d), de->d_name, 0);
        if (lock >= 0)
            close(lock);
    }
    if (d)
        closedir(d);
    if (removed)
        *removed = count;
    if (failed)
        r = err_set(reterr, FY_E_IO, FY_STEP_IMAGE, 0, k.path, "image cache %s: %d entries could not be removed",
                    k.path, failed);
    cache_close(&k);
    return r;
}
