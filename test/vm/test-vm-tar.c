/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host's reader of a guest's tar streams (lib/vm/vm-tar.c), without a
 * VM: streams written by libarchive's pax writer (as any tar a guest could
 * produce) and by hand (what a hostile guest could). Names longer than
 * ustar's fields come back through pax headers, links are made and never
 * followed, what the host holds under a name is replaced and never written
 * through, and every malformed or oversized header is refused. */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "vm-tar.h"

static char scratch[64];

struct buf {
    uint8_t *p;
    size_t n, cap;
};

static la_ssize_t buf_write(struct archive *a, void *ud, const void *p, size_t n) {
    (void)a;
    struct buf *b = ud;
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2;
        uint8_t *q = realloc(b->p, cap);
        ck_assert_ptr_nonnull(q);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    return (la_ssize_t)n;
}

static struct archive *writer(struct buf *b) {
    memset(b, 0, sizeof(*b));
    struct archive *a = archive_write_new();
    ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_set_bytes_in_last_block(a, 1), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open(a, b, NULL, buf_write, NULL), ARCHIVE_OK);
    return a;
}

static void add_hardlink(struct archive *a, const char *path, const char *target) {
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_hardlink(e, target);
    archive_entry_set_size(e, 0);
    ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
}

static void add(struct archive *a, const char *path, mode_t type, const char *data, const char *link) {
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_size(e, data ? (la_int64_t)strlen(data) : 0);
    if (link)
        archive_entry_set_symlink(e, link);
    ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
    if (data)
        ck_assert_int_eq(archive_write_data(a, data, strlen(data)), (la_ssize_t)strlen(data));
    archive_entry_free(e);
}

static void finish(struct archive *a) {
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static int dest(const char *name) {
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", scratch, name);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Feeds the stream in pieces of step bytes (as frames arrive). */
static int feed(struct vmt *t, const struct buf *b, size_t step) {
    for (size_t off = 0; off < b->n; off += step) {
        size_t n = b->n - off < step ? b->n - off : step;
        if (vmt_feed(t, b->p + off, n) < 0)
            return -1;
    }
    return vmt_end(t);
}

static char *slurp_at(const char *rel) {
    char p[8192];
    snprintf(p, sizeof(p), "%s/%s", scratch, rel);
    FILE *f = fopen(p, "re");
    if (!f)
        return NULL;
    static char out[256];
    size_t n = fread(out, 1, sizeof(out) - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

/* A path of len bytes under prefix, in components of at most 200. */
static void long_path(char *out, size_t len, char fill) {
    for (size_t i = 0; i < len; i++)
        out[i] = (i % 201 == 200) ? '/' : fill;
    out[len] = '\0';
}

START_TEST(test_long_names) {
    static char deep[3001], name[256];
    long_path(deep, 3000, 'd');
    memset(name, 'n', 250);
    name[250] = '\0';
    struct buf b;
    struct archive *a = writer(&b);
    add(a, name, AE_IFREG, "a name of 250 bytes\n", NULL);
    char file[3400];
    /* (its directories are not named: the reader makes them) */
    snprintf(file, sizeof(file), "%s/%s", deep, "leaf.o");
    add(a, file, AE_IFREG, "three thousand bytes deep\n", NULL);
    static char target[2001];
    long_path(target, 2000, 't');
    add(a, "long-link", AE_IFLNK, NULL, target);
    add(a, "short-link", AE_IFLNK, NULL, "leaf.o");
    finish(a);

    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, dest("long")), 0);
    ck_assert_msg(feed(&t, &b, 4096) == 0, "refused: %s", t.error);
    char rel[3500];
    snprintf(rel, sizeof(rel), "long/%s", name);
    ck_assert_str_eq(slurp_at(rel), "a name of 250 bytes\n");
    snprintf(rel, sizeof(rel), "long/%s", file);
    ck_assert_str_eq(slurp_at(rel), "three thousand bytes deep\n");
    char got[4096], p[256];
    snprintf(p, sizeof(p), "%s/long/long-link", scratch);
    ssize_t n = readlink(p, got, sizeof(got) - 1);
    ck_assert_int_eq(n, 2000);
    got[n] = '\0';
    ck_assert_str_eq(got, target);
    snprintf(p, sizeof(p), "%s/long/short-link", scratch);
    n = readlink(p, got, sizeof(got) - 1);
    ck_assert_int_eq(n, 6);
    ck_assert_uint_eq(t.files, 2);
    ck_assert_uint_eq(t.links, 2);
    ck_assert_uint_eq(t.nlisted, 2);
    ck_assert_str_eq(t.listed[1].path, file);
    /* What the stream named includes the long ones (so the host never
     * removes them as gone from the guest). */
    vmt_seal(&t);
    ck_assert(vmt_named(&t, name));
    ck_assert(vmt_named(&t, file));
    ck_assert(vmt_named(&t, "long-link"));
    ck_assert(vmt_nameable(file, false));
    vmt_free(&t);
    free(b.p);
}
END_TEST

/* A link the stream made is never followed by a later entry: not to make
 * a directory, not to write a file. */
/* Control characters are a name's, as on any Linux file system: a tab or
 * a newline in one name refused the whole tree (the attempt ended as an
 * infrastructure failure). */
START_TEST(test_control_character_names) {
    struct buf b;
    struct archive *a = writer(&b);
    add(a, "tab\there\nnew\x1bline", AE_IFREG, "control characters\n", NULL);
    add(a, "ctl-link", AE_IFLNK, NULL, "tab\there\nnew\x1bline");
    add(a, "\r", AE_IFREG, "a carriage return\n", NULL);
    finish(a);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, dest("ctl")), 0);
    ck_assert_msg(feed(&t, &b, 4096) == 0, "refused: %s", t.error);
    ck_assert_str_eq(slurp_at("ctl/tab\there\nnew\x1bline"), "control characters\n");
    ck_assert_str_eq(slurp_at("ctl/ctl-link"), "control characters\n");
    ck_assert_str_eq(slurp_at("ctl/\r"), "a carriage return\n");
    vmt_free(&t);
    free(b.p);
}
END_TEST

START_TEST(test_link_not_followed) {
    char outside[128];
    snprintf(outside, sizeof(outside), "%s/outside", scratch);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    struct buf b;
    struct archive *a = writer(&b);
    add(a, "l", AE_IFLNK, NULL, outside);
    add(a, "l/planted", AE_IFREG, "through the link\n", NULL);
    finish(a);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, dest("follow")), 0);
    ck_assert_int_eq(feed(&t, &b, 512), -1);
    ck_assert_str_eq(t.error, "tar entry: cannot reach its directory");
    vmt_free(&t);
    char p[256];
    snprintf(p, sizeof(p), "%s/planted", outside);
    ck_assert_int_eq(access(p, F_OK), -1);
    free(b.p);
}
END_TEST

/* A name holds one thing: what the host has there of another kind is
 * what the guest replaced. A directory gives way to a file or link, a
 * file or a link (to outside) to a directory, never written through. */
START_TEST(test_replaced_kinds) {
    char p[256];
    int root = dest("kinds");
    ck_assert_int_eq(mkdirat(root, "was-dir", 0755), 0);
    ck_assert_int_eq(mkdirat(root, "was-dir/sub", 0755), 0);
    int fd = openat(root, "was-dir/sub/f", O_WRONLY | O_CREAT | O_EXCL, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(mkdirat(root, "was-dir2", 0755), 0);
    fd = openat(root, "was-file", O_WRONLY | O_CREAT | O_EXCL, 0644);
    close(fd);
    char outside[128];
    snprintf(outside, sizeof(outside), "%s/outside2", scratch);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    ck_assert_int_eq(symlinkat(outside, root, "was-link"), 0);
    struct buf b;
    struct archive *a = writer(&b);
    add(a, "was-dir", AE_IFREG, "now a file\n", NULL);
    add(a, "was-dir2", AE_IFLNK, NULL, "was-dir");
    add(a, "was-file/", AE_IFDIR, NULL, NULL);
    add(a, "was-file/x", AE_IFREG, "in a directory\n", NULL);
    add(a, "was-link/", AE_IFDIR, NULL, NULL);
    add(a, "was-link/y", AE_IFREG, "not outside\n", NULL);
    finish(a);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, root), 0);
    ck_assert_msg(feed(&t, &b, 100) == 0, "refused: %s", t.error);
    vmt_free(&t);
    ck_assert_str_eq(slurp_at("kinds/was-dir"), "now a file\n");
    ck_assert_str_eq(slurp_at("kinds/was-file/x"), "in a directory\n");
    ck_assert_str_eq(slurp_at("kinds/was-link/y"), "not outside\n");
    struct stat st;
    snprintf(p, sizeof(p), "%s/kinds/was-dir2", scratch);
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    snprintf(p, sizeof(p), "%s/kinds/was-link", scratch);
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    snprintf(p, sizeof(p), "%s/y", outside);
    ck_assert_int_eq(access(p, F_OK), -1);
    free(b.p);
}
END_TEST

/* Hand-made headers, as a hostile guest would send them. */
static unsigned long long header_mtime;
static const char *header_pad; /* ustar's padding: the agent's nanoseconds */

static void header(struct buf *b, const char *name, char type, uint64_t size, const char *link) {
    uint8_t h[512];
    memset(h, 0, sizeof(h));
    memcpy(h, name, strnlen(name, 100));
    snprintf((char *)h + 100, 8, "%07o", 0644u);
    snprintf((char *)h + 108, 8, "%07o", 0u);
    snprintf((char *)h + 116, 8, "%07o", 0u);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011llo", header_mtime);
    memset(h + 148, ' ', 8);
    h[156] = (uint8_t)type;
    if (link)
        memcpy(h + 157, link, strnlen(link, 100));
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    if (header_pad)
        memcpy(h + 500, header_pad, strnlen(header_pad, 12));
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    buf_write(NULL, b, h, 512);
}

static void data(struct buf *b, const void *p, size_t n) {
    static const uint8_t zero[512];
    buf_write(NULL, b, p, n);
    buf_write(NULL, b, zero, (512 - n % 512) % 512);
}

static void pax(struct buf *b, const char *recs) {
    header(b, "PaxHeader", 'x', strlen(recs), NULL);
    data(b, recs, strlen(recs));
}

static void end(struct buf *b) {
    static const uint8_t zero[1024];
    buf_write(NULL, b, zero, sizeof(zero));
}

/* Parse-only: the refusal a stream meets, or NULL. */
static const char *verdict(const struct buf *b) {
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, -1), 0);
    int r = feed(&t, b, 333);
    const char *e = t.error;
    vmt_free(&t);
    return r == 0 ? NULL : e;
}

START_TEST(test_bad_pax) {
    static const struct {
        const char *recs, *why;
    } bad[] = {
        {"12 path=abc\n", NULL},                      /* a good one, for contrast */
        {"13 path=abc\n", "tar: a malformed extended header record"},
        {"11 path=abc\n", "tar: a malformed extended header record"},
        {"x path=abc\n", "tar: a malformed extended header record"},
        {"9 =value\n", "tar: a malformed extended header record"},
        {"10 path=\n\n", NULL},                       /* "path=\n": a file named by a newline */
        {"18 path=../escape\n", "tar entry: refused path"},
        {"14 path=/root\n", "tar entry: refused path"},
        {"23 GNU.sparse.map=0,10\n", "tar: a sparse file refused"},
        {"99999999999999999999999 path=x\n", "tar: a malformed extended header record"},
        {"29 size=99999999999999999999\n", "tar: an extended header's size refused"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct buf b;
        memset(&b, 0, sizeof(b));
        pax(&b, bad[i].recs);
        header(&b, "short", '0', 0, NULL);
        end(&b);
        const char *v = verdict(&b);
        if (bad[i].why) {
            ck_assert_msg(v && !strcmp(v, bad[i].why), "%zu: %s: %s", i, bad[i].recs, v ? v : "accepted");
        } else {
            ck_assert_msg(!v, "%zu: %s refused: %s", i, bad[i].recs, v);
        }
        free(b.p);
    }
    /* Two extended headers for one entry; one without its entry; a global
     * one; one too large; a component too long; a path too long. */
    struct buf b;
    memset(&b, 0, sizeof(b));
    pax(&b, "12 path=abc\n");
    pax(&b, "12 path=abd\n");
    header(&b, "x", '0', 0, NULL);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar: two extended headers for one entry");
    free(b.p);
    memset(&b, 0, sizeof(b));
    header(&b, "f", '0', 0, NULL);
    pax(&b, "12 path=abc\n");
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar: an extended header without its entry");
    free(b.p);
    memset(&b, 0, sizeof(b));
    header(&b, "g", 'g', 0, NULL);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar: a global extended header refused");
    free(b.p);
    memset(&b, 0, sizeof(b));
    header(&b, "PaxHeader", 'x', VMT_PAX_MAX + 1, NULL);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar: an extended header too large");
    free(b.p);
    static char recs[VMT_PAX_MAX], path[VMT_MAX_PATH + 2];
    memset(path, 'c', 256);
    path[256] = '\0';
    snprintf(recs, sizeof(recs), "%zu path=%s\n", strlen(path) + 10, path);
    memset(&b, 0, sizeof(b));
    pax(&b, recs);
    header(&b, "x", '0', 0, NULL);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar entry: refused path");
    free(b.p);
    long_path(path, VMT_MAX_PATH + 1, 'p');
    snprintf(recs, sizeof(recs), "%zu path=%s\n", strlen(path) + 11, path);
    memset(&b, 0, sizeof(b));
    pax(&b, recs);
    header(&b, "x", '0', 0, NULL);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar: an extended header's name refused");
    free(b.p);
    /* A link without a target, a link with data. */
    memset(&b, 0, sizeof(b));
    header(&b, "l", '2', 0, NULL);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar entry: a link without a target");
    free(b.p);
    memset(&b, 0, sizeof(b));
    header(&b, "l", '2', 5, "t");
    data(&b, "12345", 5);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar entry: link with data");
    free(b.p);
}
END_TEST

/* pax's size: a file's data is as long as the record says, not the
 * ustar field. */
START_TEST(test_pax_size) {
    struct buf b;
    memset(&b, 0, sizeof(b));
    pax(&b, "10 size=5\n");
    header(&b, "five", '0', 0, NULL);
    data(&b, "12345", 5);
    end(&b);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, dest("size")), 0);
    ck_assert_msg(feed(&t, &b, 7) == 0, "refused: %s", t.error);
    ck_assert_uint_eq(t.bytes, 5);
    vmt_free(&t);
    ck_assert_str_eq(slurp_at("size/five"), "12345");
    free(b.p);
}
END_TEST

/* A returned file has the guest's modification time (ustar's seconds with
 * the agent's nanoseconds in the padding, or a pax record's fraction), not
 * the host's "now": an output built before its source changed must not
 * look newer than it. Padding that is not nine digits is no time. */
START_TEST(test_mtime) {
    struct buf b;
    memset(&b, 0, sizeof(b));
    header_mtime = 1000000000;
    header(&b, "old.o", '0', 2, NULL);
    data(&b, "o\n", 2);
    pax(&b, "27 mtime=1234567890.000005\n");
    header(&b, "frac.o", '0', 0, NULL);
    header_pad = "123456789";
    header(&b, "ns.o", '0', 0, NULL);
    header_pad = "12345678x";
    header(&b, "junk.o", '0', 0, NULL);
    header_pad = "1234";
    header(&b, "short.o", '0', 0, NULL);
    header_pad = "999999999999";
    header(&b, "long.o", '0', 0, NULL);
    header_pad = NULL;
    header_mtime = 0;
    end(&b);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, dest("mtime")), 0);
    ck_assert_msg(feed(&t, &b, 512) == 0, "refused: %s", t.error);
    vmt_free(&t);
    struct stat st;
    char p[256];
    snprintf(p, sizeof(p), "%s/mtime/old.o", scratch);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mtim.tv_sec, 1000000000);
    ck_assert_int_eq(st.st_mtim.tv_nsec, 0);
    snprintf(p, sizeof(p), "%s/mtime/frac.o", scratch);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mtim.tv_sec, 1234567890);
    ck_assert_int_eq(st.st_mtim.tv_nsec, 5000);
    static const struct {
        const char *name;
        long ns;
    } pads[] = {{"ns.o", 123456789}, {"junk.o", 0}, {"short.o", 0}, {"long.o", 999999999}};
    for (size_t i = 0; i < sizeof(pads) / sizeof(pads[0]); i++) {
        snprintf(p, sizeof(p), "%s/mtime/%s", scratch, pads[i].name);
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(st.st_mtim.tv_sec, 1000000000);
        ck_assert_msg(st.st_mtim.tv_nsec == pads[i].ns, "%s: %ld", pads[i].name, (long)st.st_mtim.tv_nsec);
    }
    free(b.p);
}
END_TEST

/* Hard links: another name of a file the stream made (libarchive's '1'
 * entries, a target named in a pax record when long); never a link to a
 * file the stream did not make, nor through a symbolic link. */
START_TEST(test_hardlinks) {
    int root = dest("hard");
    int fd = openat(root, "host-file", O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    static char longname[201];
    memset(longname, 'h', 200);
    struct buf b;
    struct archive *a = writer(&b);
    add(a, longname, AE_IFREG, "shared\n", NULL);
    add_hardlink(a, "b", longname);
    add_hardlink(a, "sub/c", longname);
    finish(a);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, root), 0);
    ck_assert_msg(feed(&t, &b, 1000) == 0, "refused: %s", t.error);
    ck_assert_uint_eq(t.hardlinks, 2);
    vmt_seal(&t);
    ck_assert(vmt_named(&t, "sub/c"));
    vmt_free(&t);
    free(b.p);
    struct stat s1, s2, s3;
    char p[512];
    snprintf(p, sizeof(p), "%s/hard/%s", scratch, longname);
    ck_assert_int_eq(stat(p, &s1), 0);
    snprintf(p, sizeof(p), "%s/hard/b", scratch);
    ck_assert_int_eq(stat(p, &s2), 0);
    snprintf(p, sizeof(p), "%s/hard/sub/c", scratch);
    ck_assert_int_eq(stat(p, &s3), 0);
    ck_assert(s1.st_ino == s2.st_ino && s1.st_ino == s3.st_ino);
    ck_assert_uint_eq(s1.st_nlink, 3);
    ck_assert_str_eq(slurp_at("hard/sub/c"), "shared\n");
    /* Refused: a file the stream did not make, one through a link, a
     * target outside. */
    static const char *const refused[] = {"host-file", "l/x", "../etc/passwd"};
    for (size_t i = 0; i < 3; i++) {
        memset(&b, 0, sizeof(b));
        header(&b, "x", '0', 2, NULL);
        data(&b, "x\n", 2);
        header(&b, "l", '2', 0, ".");
        header(&b, "y", '1', 0, refused[i]);
        end(&b);
        snprintf(p, sizeof(p), "%s/hard", scratch);
        int rfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(rfd, 0);
        ck_assert_int_eq(vmt_init(&t, rfd), 0);
        ck_assert_int_eq(feed(&t, &b, 512), -1);
        ck_assert_msg(strstr(t.error, "hard link"), "%s: %s", refused[i], t.error);
        vmt_free(&t);
        free(b.p);
        snprintf(p, sizeof(p), "%s/hard/y", scratch);
        ck_assert_int_eq(access(p, F_OK), -1);
    }
}
END_TEST

/* A hard link the host cannot make (past ext4's 65,000 links per file)
 * is a copy of the file: the copies count against the output budget, and
 * one past it stops the stream (over_budget), never a disk filled by
 * 512-byte entries. */
START_TEST(test_hardlink_copies_bounded) {
    int root = dest("manylinks");
    struct statfs sf;
    ck_assert_int_eq(fstatfs(root, &sf), 0);
    static char blob[65536];
    memset(blob, 'B', sizeof(blob) - 1);
    struct buf b;
    struct archive *a = writer(&b);
    add(a, "big", AE_IFREG, blob, NULL);
    char name[32];
    for (int i = 0; i < 65100; i++) {
        snprintf(name, sizeof(name), "l%05d", i);
        add_hardlink(a, name, "big");
    }
    finish(a);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, root), 0);
    t.copy_budget = 10 * sizeof(blob);
    int r = feed(&t, &b, 65536);
    if (sf.f_type == 0xEF53) { /* ext2/3/4: at most 65,000 links */
        ck_assert_int_eq(r, -1);
        ck_assert_msg(t.over_budget, "%s", t.error ? t.error : "no error");
        ck_assert_uint_le(t.copied, 10 * sizeof(blob));
    } else {
        printf("test_hardlink_copies_bounded: not ext4 here (f_type %#lx): the links were links\n", (unsigned long)sf.f_type);
    }
    vmt_free(&t);
    free(b.p);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/manylinks'", scratch);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Long names cost the host memory (it remembers each to mirror what the
 * guest removed): their total is bounded, and a stream past it refused. */
START_TEST(test_names_bounded) {
    static char path[VMT_MAX_PATH], recs[VMT_PAX_MAX];
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, -1), 0);
    int r = 0;
    size_t i;
    for (i = 0; r == 0 && i < VMT_MAX_ENTRIES / 2; i++) {
        long_path(path, 4000, 'a' + (char)(i % 26));
        snprintf(path + 3990, 10, "%09zu", i);
        snprintf(recs, sizeof(recs), "%zu path=%s/\n", strlen(path) + 12, path);
        struct buf b;
        memset(&b, 0, sizeof(b));
        pax(&b, recs);
        header(&b, "d", '5', 0, NULL);
        for (size_t off = 0; r == 0 && off < b.n; off += 512)
            r = vmt_feed(&t, b.p + off, 512);
        free(b.p);
    }
    ck_assert_int_eq(r, -1);
    ck_assert_str_eq(t.error, "tar: the names alone exceed what the host keeps");
    ck_assert_uint_le(i, VMT_NAMES_MAX / 4000 + 2);
    vmt_free(&t);
}
END_TEST

/* 'U': the guest's "unchanged since you copied it in". The host keeps
 * its own file (its inode, its content), names it (so it is not taken for
 * one the guest removed), and writes nothing; a 'U' with data is refused. */
START_TEST(test_unchanged) {
    int root = dest("unch");
    int fd = openat(root, "kept.o", O_WRONLY | O_CREAT | O_EXCL, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "host\n", 5), 5);
    close(fd);
    struct stat before, after;
    ck_assert_int_eq(fstatat(root, "kept.o", &before, 0), 0);
    struct buf b;
    memset(&b, 0, sizeof(b));
    header(&b, "kept.o", 'U', 0, NULL);
    pax(&b, "30 path=a/long/unchanged-name\n");
    header(&b, "x", 'U', 0, NULL);
    end(&b);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, root), 0);
    ck_assert_msg(feed(&t, &b, 512) == 0, "refused: %s", t.error);
    ck_assert_uint_eq(t.unchanged, 2);
    ck_assert_uint_eq(t.files, 0);
    vmt_seal(&t);
    ck_assert(vmt_named(&t, "kept.o"));
    ck_assert(vmt_named(&t, "a/long/unchanged-name"));
    vmt_free(&t);
    char p[256];
    snprintf(p, sizeof(p), "%s/unch/kept.o", scratch);
    ck_assert_int_eq(stat(p, &after), 0);
    ck_assert_uint_eq(after.st_ino, before.st_ino);
    ck_assert_str_eq(slurp_at("unch/kept.o"), "host\n");
    snprintf(p, sizeof(p), "%s/unch/a", scratch);
    ck_assert_int_eq(access(p, F_OK), -1);
    free(b.p);
    memset(&b, 0, sizeof(b));
    header(&b, "kept.o", 'U', 3, NULL);
    data(&b, "abc", 3);
    end(&b);
    ck_assert_str_eq(verdict(&b), "tar entry: an unchanged file with data");
    free(b.p);
}
END_TEST

/* The entries a stream may hold are bounded (each costs the host a name
 * to remember), and not below what real build trees hold. */
START_TEST(test_entries_bounded) {
    struct buf b;
    memset(&b, 0, sizeof(b));
    header(&b, "same-name", 'U', 0, NULL);
    struct vmt t;
    ck_assert_int_eq(vmt_init(&t, -1), 0);
    size_t i;
    int r = 0;
    for (i = 0; r == 0 && i <= VMT_MAX_ENTRIES; i++)
        r = vmt_feed(&t, b.p, 512);
    ck_assert_int_eq(r, -1);
    ck_assert_uint_eq(i, VMT_MAX_ENTRIES + 1);
    ck_assert_str_eq(t.error, "too many tar entries");
    ck_assert_uint_ge(VMT_MAX_ENTRIES, 500000);
    vmt_free(&t);
    free(b.p);
}
END_TEST

int main(void) {
    snprintf(scratch, sizeof(scratch), "/tmp/fy-vmtar.XXXXXX");
    if (!mkdtemp(scratch))
        return 1;
    Suite *s = suite_create("vm-tar");
    TCase *tc = tcase_create("reader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_link_not_followed);
    tcase_add_test(tc, test_control_character_names);
    tcase_add_test(tc, test_replaced_kinds);
    tcase_add_test(tc, test_bad_pax);
    tcase_add_test(tc, test_pax_size);
    tcase_add_test(tc, test_names_bounded);
    tcase_add_test(tc, test_unchanged);
    tcase_add_test(tc, test_mtime);
    tcase_add_test(tc, test_entries_bounded);
    tcase_add_test(tc, test_hardlinks);
    tcase_add_test(tc, test_hardlink_copies_bounded);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", scratch);
    if (system(cmd) != 0)
        failed++;
    return failed ? 1 : 0;
}
