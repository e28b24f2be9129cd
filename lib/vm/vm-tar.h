/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host's reader of the tar streams a guest sends back (vm-tar.c):
 * ustar with pax extended headers (path, linkpath, size: names longer than
 * ustar's fields carry), regular files, directories and symbolic links,
 * hard links to files the stream made, and the agent's own type 'U' (a
 * file unchanged since the host copied it in: no data, the host keeps its
 * own); every path checked (relative, no "..", no empty part, bounded
 * length and depth), created fd-relative under the destination without
 * following any symlink, each file's SHA-256 recorded. A guest-written file
 * system is never mounted. */
#ifndef FY_VM_TAR_H
#define FY_VM_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define VMT_MAX_ENTRIES 1000000 /* (a node_modules tree passes 100,000) */
#define VMT_MAX_DEPTH 64
#define VMT_LISTED 256 /* files whose digest the result lists */
#define VMT_MAX_PATH 4096        /* a path's bytes, a directory's trailing slash included */
#define VMT_MAX_NAME 255         /* one component's */
#define VMT_PAX_MAX 16384        /* one extended header's records */
#define VMT_NAMES_MAX (64u << 20) /* all the names a stream may make the host remember */

struct vmt_file {
    char *path; /* owned */
    uint64_t size;
    char sha256[65];
};

struct vmt_inode {
    dev_t dev;
    ino_t ino;
};

struct vmt {
    int root;                  /* destination dirfd (owned); -1: parse only (fuzzing) */
    uint8_t hdr[512];
    size_t hdr_have;
    uint64_t left;             /* data bytes of the current entry */
    uint64_t pad;              /* padding after it */
    int out;                   /* the file being written, or -1 */
    int64_t owner_uid, owner_gid; /* what a name the stream makes anew is given (-1: the caller's) */
    void *hash;                /* its crypto_hash_sha256_state */
    char cur_path[VMT_MAX_PATH + 1]; /* the regular file whose data follows, or "" */
    uint64_t cur_size;
    struct timespec cur_mtime; /* the guest's, set on the file once written */
    /* A pax extended header: its records while they arrive (pax_in), then
     * what they said, for the next entry only. */
    char *pax;
    size_t pax_len, pax_have;
    bool pax_in, pax_ready, pax_size_set, pax_mtime_set;
    char *pax_path, *pax_link;
    uint64_t pax_size;
    struct timespec pax_mtime;
    uint64_t entries, files, links, hardlinks, unchanged, bytes, skipped;
    struct vmt_inode *made; /* the files this stream made (vm-tar.c) */
    size_t nmade, capmade;
    size_t names_bytes;
    int zero_blocks;
    bool ended;
    const char *error;         /* sticky: static text */
    int os_error;
    struct vmt_file listed[VMT_LISTED];
    size_t nlisted;
    /* Every path the stream named (files, directories, links, unchanged
     * files), sorted by vmt_seal: what the guest still has. */
    char **seen;
    size_t nseen, capseen;
    bool seen_oom, sealed;
    /* Bytes the host may still write beyond the stream's own (a hard link
     * it cannot make, EMLINK or EXDEV, is a copy of the file): the caller's
     * output budget; copied counts them. over_budget: a copy refused. */
    uint64_t copy_budget, copied;
    bool over_budget;
};

/* root: an O_DIRECTORY fd the reader takes over, or -1. */
int vmt_init(struct vmt *t, int root);
/* Feeds stream bytes; -1 on a malformed stream or a refused entry (t->error). */
int vmt_feed(struct vmt *t, const uint8_t *p, size_t n);
/* The stream is over: -1 when it ended inside an entry. */
int vmt_end(struct vmt *t);
void vmt_free(struct vmt *t);
/* Sorts what the stream named; then vmt_named answers whether it named
 * rel (a relative path without a trailing slash). */
void vmt_seal(struct vmt *t);
bool vmt_named(const struct vmt *t, const char *rel);
/* Removes rel under the destination (a file, a link, or a directory with
 * all it holds), never following a link: 1 removed, 0 not there, -errno. */
int vmt_remove(struct vmt *t, const char *rel);
/* Whether the guest's writer can name rel at all (a directory: with its
 * trailing slash): a path it cannot name is never taken for one the guest
 * removed. */
bool vmt_nameable(const char *rel, bool dir);
/* A relative path a guest may name (exported for the fuzzer and tests). */
bool vmt_path_ok(const char *path);

#endif
