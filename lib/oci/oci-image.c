/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Image references, the sources they name (a layout directory, an
 * oci-archive or a docker-archive tar) and the verified chain
 * index -> manifest -> config. Layers are read by oci-unpack.c through the
 * same sources (oci-internal.h). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lazy.h"

#include "oci-internal.h"

#define JSON_BLOB_MAX (4u << 20) /* a manifest, index or config */

/* ---- sources ---- */

void oci_src_close(struct oci_src *src) {
    if (src->fd >= 0)
        close(src->fd);
    src->fd = -1;
}

int oci_src_open(struct oci_src *src, const struct oci_ref *ref, fy_error **reterr) {
    src->ref = ref;
    /* (O_NONBLOCK: a FIFO given as an archive is refused below, never waited on) */
    src->fd = open(ref->path, (ref->transport == OCI_LAYOUT ? O_PATH | O_DIRECTORY : O_RDONLY | O_NONBLOCK) | O_CLOEXEC);
    if (src->fd < 0)
        return err_set(reterr, err_from_errno(errno), FY_STEP_IMAGE, errno, ref->path, "image %s: %s",
                       ref->path, strerror(errno));
    struct stat st;
    if (ref->transport != OCI_LAYOUT && (fstat(src->fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        oci_src_close(src);
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, ref->path, "image %s: not a regular file", ref->path);
    }
    return 0;
}

/* A name inside an archive, without "./" prefixes. */
static const char *strip_dot(const char *n) {
    while (n[0] == '.' && n[1] == '/')
        n += 2;
    while (n[0] == '/')
        n++;
    return n;
}

/* The outer archive reads its own dup of the file (closed with it). */
struct outer_src {
    int fd;
    char buf[65536];
};

static la_ssize_t outer_read(struct archive *a, void *ud, const void **buf) {
    struct outer_src *o = ud;
    ssize_t n;
    do
        n = read(o->fd, o->buf, sizeof(o->buf));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        archive_set_error(a, errno, "read: %s", strerror(errno));
    *buf = o->buf;
    return n;
}

static la_int64_t outer_skip(struct archive *a, void *ud, la_int64_t request) {
    struct outer_src *o = ud;
    off_t cur = lseek(o->fd, 0, SEEK_CUR), end = lseek(o->fd, 0, SEEK_END);
    if (cur < 0 || end < 0)
        return 0;
    la_int64_t n = request < end - cur ? request : end - cur;
    if (lseek(o->fd, cur + n, SEEK_SET) < 0)
        return 0;
    return n;
}

static int outer_close(struct archive *a, void *ud) {
    struct outer_src *o = ud;
    close(o->fd);
    free(o);
    return ARCHIVE_OK;
}

struct archive *oci_archive_new_outer(int fd, fy_error **reterr) {
    if (lazy_open(&lazy_archive) < 0) {
        err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, NULL, "an image archive needs libarchive, which cannot be loaded: %s",
                lazy_archive.why);
        return NULL;
    }
    struct archive *a = archive_read_new();
    struct outer_src *o = malloc(sizeof(*o));
    if (!a || !o) {
        archive_read_free(a);
        free(o);
        err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
        return NULL;
    }
    o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (o->fd < 0 || lseek(o->fd, 0, SEEK_SET) < 0) {
        int e = errno;
        if (o->fd >= 0)
            close(o->fd);
        free(o);
        archive_read_free(a);
        err_set(reterr, err_from_errno(e), FY_STEP_IMAGE, e, NULL, "opening the image archive: %s", strerror(e));
        return NULL;
    }
    /* tar only, no decompression filter: an archive of blobs is plain tar. */
    if (archive_read_support_format_tar(a) != ARCHIVE_OK || archive_read_support_filter_none(a) != ARCHIVE_OK ||
        archive_read_open2(a, o, NULL, outer_read, outer_skip, outer_close) != ARCHIVE_OK) {
        /* archive_read_open2 calls outer_close on failure once opened; free otherwise. */
        err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL, "opening the image archive: %s",
                archive_error_string(a) ? archive_error_string(a) : "not a tar file");
        archive_read_free(a);
        return NULL;
    }
    return a;
}

void oci_archive_free_outer(struct archive *a) {
    if (a)
        archive_read_free(a);
}

/* Positions an outer archive on the entry name; 0, or FY_E_NOTFOUND. */
int oci_archive_seek(struct archive *a, const char *name) {
    struct archive_entry *e;
    int r;
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        const char *p = archive_entry_pathname(e);
        if (p && strcmp(strip_dot(p), name) == 0 && archive_entry_filetype(e) == AE_IFREG)
            return 0;
    }
    return FY_E_NOTFOUND;
}

int oci_src_read(struct oci_src *src, const char *name, size_t max, char **ret, size_t *retlen,
                 fy_error **reterr) {
    *ret = NULL;
    *retlen = 0;
    if (src->ref->transport == OCI_LAYOUT) {
        /* (O_NONBLOCK: a FIFO in the layout is refused below, never waited on) */
        struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        int fd = sys_openat2(src->fd, name, &how, sizeof(how));
        if (fd < 0)
            return err_set(reterr, err_from_errno(errno), FY_STEP_IMAGE, errno, name, "image %s: %s: %s",
                           src->ref->path, name, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
            close(fd);
            return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, name,
                           "image %s: %s is not a regular file of at most %zu bytes", src->ref->path, name, max);
        }
        char *buf = malloc((size_t)st.st_size + 1);
        size_t n = 0;
        while (buf && n < (size_t)st.st_size) {
            ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
            if (k <= 0)
                break;
            n += (size_t)k;
        }
        close(fd);
        if (!buf || n != (size_t)st.st_size) {
            free(buf);
            return err_set(reterr, buf ? FY_E_IO : FY_E_NOMEM, FY_STEP_IMAGE, 0, name, "image %s: reading %s",
                           src->ref->path, name);
        }
        buf[n] = '\0';
        *ret = buf;
        *retlen = n;
        return 0;
    }
    struct archive *a = oci_archive_new_outer(src->fd, reterr);
    if (!a)
        return FY_E_IO;
    if (oci_archive_seek(a, name) < 0) {
        oci_archive_free_outer(a);
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_IMAGE, 0, name, "image %s: no %s in the archive",
                       src->ref->path, name);
    }
    struct strbuf sb;
    strbuf_init(&sb);
    char chunk[65536];
    la_ssize_t k;
    while ((k = archive_read_data(a, chunk, sizeof(chunk))) > 0 && sb.len + (size_t)k <= max)
        strbuf_appendn(&sb, chunk, (size_t)k);
    oci_archive_free_outer(a);
    if (k != 0 || sb.oom) {
        strbuf_free(&sb);
        return err_set(reterr, k > 0 ? FY_E_RANGE : sb.oom ? FY_E_NOMEM : FY_E_INTEGRITY, FY_STEP_IMAGE, 0, name,
                       "%simage %s: %s is %s", k < 0 ? "truncated: " : "", src->ref->path, name,
                       k > 0 ? "too large" : "unreadable");
    }
    *retlen = sb.len;
    *ret = sb.buf ? strbuf_steal(&sb) : util_strdup("");
    return *ret ? 0 : err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
}

void oci_digest_hex(const unsigned char h[32], char out[OCI_DIGEST_LEN + 1]) {
    static const char x[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < 32; i++) {
        out[7 + 2 * i] = x[h[i] >> 4];
        out[8 + 2 * i] = x[h[i] & 15];
    }
    out[OCI_DIGEST_LEN] = '\0';
}

/* Reads the blob of digest (and size, when known: >= 0) and verifies it. */
static int read_blob(struct oci_src *src, const char *digest, int64_t size, char **ret, size_t *retlen,
                     fy_error **reterr) {
    char name[96];
    snprintf(name, sizeof(name), "blobs/sha256/%s", digest + 7);
    int r = oci_src_read(src, name, JSON_BLOB_MAX, ret, retlen, reterr);
    if (r < 0)
        return r;
    unsigned char h[32];
    char got[OCI_DIGEST_LEN + 1];
    crypto_hash_sha256(h, (const unsigned char *)*ret, *retlen);
    oci_digest_hex(h, got);
    if (strcmp(got, digest) != 0 || (size >= 0 && (uint64_t)size != *retlen)) {
        free(*ret);
        *ret = NULL;
        if (strcmp(got, digest))
            return err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, digest, "digest: blob %s has digest %s", digest, got);
        return err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, digest,
                       "size: blob %s is %zu bytes, not the %lld its descriptor says", digest, *retlen, (long long)size);
    }
    return 0;
}

/* ---- JSON ---- */

static char **json_strv(json_t *arr, bool *bad) {
    if (!arr || json_is_null(arr))
        return NULL;
    if (!json_is_array(arr) || json_array_size(arr) > 65536) {
        *bad = true;
        return NULL;
    }
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof(*v));
    if (!v) {
        *bad = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || !(v[i] = util_strdup(s))) {
            *bad = true;
            break;
        }
    }
    return v;
}

static void strv_free(char **v) {
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static const char *host_arch(void) {
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__i386__)
    return "386";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return "ppc64le";
#elif defined(__s390x__)
    return "s390x";
#else
    return "unknown";
#endif
}

static bool layer_type_ok(const char *mt) {
    static const char *const ok[] = {
        "application/vnd.oci.image.layer.v1.tar",
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar+zstd",
        "application/vnd.oci.image.layer.nondistributable.v1.tar",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
        "application/vnd.docker.image.rootfs.diff.tar.gzip",
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
    };
    if (!mt)
        return true; /* optional in old manifests; the content is sniffed (tar, gzip, zstd only) */
    for (size_t i = 0; i < FY_ARRAY_SIZE(ok); i++)
        if (strcmp(mt, ok[i]) == 0)
            return true;
    return false;
}

static int desc_digest(json_t *d, const char *what, char out[OCI_DIGEST_LEN + 1], int64_t *size,
                       fy_error **reterr) {
    const char *dg = json_string_value(json_object_get(d, "digest"));
    json_t *sz = json_object_get(d, "size");
    if (!dg || !json_is_integer(sz) || json_integer_value(sz) < 0)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, what, "image: %s has no digest or size", what);
    if (!oci_digest_valid(dg))
        return err_set(reterr, strncmp(dg, "sha256:", 7) ? FY_E_UNSUPPORTED : FY_E_INVAL, FY_STEP_IMAGE, 0, what,
                       "image: %s digest %.80s is not sha256:<64 lowercase hex>", what, dg);
    memcpy(out, dg, OCI_DIGEST_LEN + 1);
    *size = json_integer_value(sz);
    return 0;
}

/* An index (or a docker manifest list): the digest of the manifest for this
 * host into out, or 0 with out empty when the blob is not an index. */
/* An absolute WorkingDir spelled the one way: no empty, "." or ".."
 * component (".." taken lexically, never above the root), as a runtime
 * that resolves it in the root reaches it without links; so that the
 * checks that compare it with the layout's targets (the oci-runc adapter
 * must not let runc make it in a host directory) see what is reached. */
static void workdir_clean(char *p) {
    char *out = p; /* (the cleaned path so far; p[0] == '/') */
    for (const char *c = p + 1; *c;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 2 && c[0] == '.' && c[1] == '.') {
            while (out > p && *--out != '/')
                ;
        } else if (n && !(n == 1 && c[0] == '.')) {
            *out++ = '/'; /* (never past c: in place) */
            memmove(out, c, n);
            out += n;
        }
        c += n + (e ? 1 : 0);
    }
    if (out == p)
        *out++ = '/';
    *out = '\0';
}

static int pick_from_index(json_t *j, const char *tag, char out[OCI_DIGEST_LEN + 1], int64_t *size,
                           fy_error **reterr) {
    out[0] = '\0';
    json_t *ms = json_object_get(j, "manifests");
    if (!ms)
        return 0;
    if (!json_is_array(ms) || json_array_size(ms) == 0)
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_IMAGE, 0, NULL, "image: the index lists no manifest");
    size_t n = json_array_size(ms), found = n, candidates = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(ms, i);
        json_t *plat = json_object_get(m, "platform");
        const char *name = json_string_value(
            json_object_get(json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
        if (tag && (!name || strcmp(name, tag) != 0))
            continue;
        if (plat) {
            const char *os = json_string_value(json_object_get(plat, "os"));
            const char *arch = json_string_value(json_object_get(plat, "architecture"));
            if (!os || strcmp(os, "linux") || !arch || strcmp(arch, host_arch()))
                continue;
        }
        candidates++;
        found = i;
    }
    if (candidates > 1)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, tag, "image: %zu manifests match%s%s for linux/%s: name one by digest",
                       candidates, tag ? " the tag " : "", tag ? tag : "", host_arch());
    if (candidates == 0)
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_IMAGE, 0, tag, "image: no manifest matches%s%s for linux/%s",
                       tag ? " the tag " : "", tag ? tag : "", host_arch());
    return desc_digest(json_array_get(ms, found), "manifest", out, size, reterr);
}

int oci_parse_manifest(const char *json, size_t len, struct oci_image *img, fy_error **reterr) {
    json_error_t je;
    json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL, "image: the manifest is not a JSON object: %s",
                       je.text);
    }
    int r = 0;
    json_t *sv = json_object_get(j, "schemaVersion");
    json_t *layers = json_object_get(j, "layers");
    const char *mt = json_string_value(json_object_get(j, "mediaType"));
    int64_t csize;
    if (!json_is_integer(sv) || json_integer_value(sv) != 2) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, NULL, "image: manifest schemaVersion is not 2");
        goto out;
    }
    if (mt && strcmp(mt, "application/vnd.oci.image.manifest.v1+json") &&
        strcmp(mt, "application/vnd.docker.distribution.manifest.v2+json")) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, NULL, "image: manifest media type %.100s", mt);
        goto out;
    }
    if ((r = desc_digest(json_object_get(j, "config"), "config", img->config_digest, &csize, reterr)) < 0)
        goto out;
    img->config_size = csize; /* (checked when the config is read: its size, as every blob's) */
    const char *cmt = json_string_value(json_object_get(json_object_get(j, "config"), "mediaType"));
    if (cmt && strcmp(cmt, "application/vnd.oci.image.config.v1+json") &&
        strcmp(cmt, "application/vnd.docker.container.image.v1+json")) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: config media type %.100s is no image config", cmt);
        goto out;
    }
    if (!json_is_array(layers) || json_array_size(layers) > 500) {
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL, "image: the manifest's layers are not an array of at "
                    "most 500");
        goto out;
    }
    img->nlayers = json_array_size(layers);
    img->layer_digests = calloc(img->nlayers + 1, sizeof(char *));
    img->layer_sizes = calloc(img->nlayers + 1, sizeof(uint64_t));
    if (!img->layer_digests || !img->layer_sizes) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < img->nlayers; i++) {
        json_t *l = json_array_get(layers, i);
        char d[OCI_DIGEST_LEN + 1];
        int64_t sz;
        if ((r = desc_digest(l, "layer", d, &sz, reterr)) < 0)
            goto out;
        const char *lmt = json_string_value(json_object_get(l, "mediaType"));
        if (!layer_type_ok(lmt)) {
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, d, "image: layer %s has media type %.100s",
                        d, lmt);
            goto out;
        }
        if (!(img->layer_digests[i] = util_strdup(d))) {
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
            goto out;
        }
        img->layer_sizes[i] = (uint64_t)sz;
    }
out:
    json_decref(j);
    return r;
}

int oci_parse_config(const char *json, size_t len, struct oci_image *img, fy_error **reterr) {
    json_error_t je;
    json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                       "image: the config is not a JSON object: %s", je.text);
    }
    int r = 0;
    bool bad = false;
    json_t *rootfs = json_object_get(j, "rootfs");
    json_t *ids = json_object_get(rootfs, "diff_ids");
    const char *type = json_string_value(json_object_get(rootfs, "type"));
    struct oci_config *c = &img->config;
    if (!type || strcmp(type, "layers") || !json_is_array(ids)) {
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: the config has no rootfs of type layers with diff_ids");
        goto out;
    }
    char **diff = json_strv(ids, &bad);
    size_t n = 0;
    while (diff && diff[n])
        n++;
    if (bad || n != img->nlayers) {
        strv_free(diff);
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: the config lists %zu diff_ids for %zu layers", n, img->nlayers);
        goto out;
    }
    img->diff_ids = diff;
    for (size_t i = 0; i < n; i++)
        if (!oci_digest_valid(diff[i])) {
            r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                        "image: diff_id %zu is not sha256:<64 lowercase hex>", i);
            goto out;
        }
    json_t *cfg = json_object_get(j, "config");
    if (cfg && !json_is_null(cfg) && !json_is_object(cfg)) {
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest, "image: config.config is not an object");
        goto out;
    }
    c->env = json_strv(json_object_get(cfg, "Env"), &bad);
    c->entrypoint = json_strv(json_object_get(cfg, "Entrypoint"), &bad);
    c->cmd = json_strv(json_object_get(cfg, "Cmd"), &bad);
    const char *s;
    /* (a User or WorkingDir of another type is malformed, never "absent":
     * "User": 0 is not the image's root by omission) */
    static const char *const texts[] = {"User", "WorkingDir"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(cfg, texts[i]);
        bad |= v && !json_is_null(v) && !json_is_string(v);
    }
    if ((s = json_string_value(json_object_get(cfg, "User"))) && s[0] && !(c->user = util_strdup(s)))
        bad = true;
    if ((s = json_string_value(json_object_get(cfg, "WorkingDir"))) && s[0] && !(c->workdir = util_strdup(s)))
        bad = true;
    if ((s = json_string_value(json_object_get(j, "os"))) && !(c->os = util_strdup(s)))
        bad = true;
    if ((s = json_string_value(json_object_get(j, "architecture"))) && !(c->arch = util_strdup(s)))
        bad = true;
    for (size_t i = 0; !bad && c->env && c->env[i]; i++)
        if (!strchr(c->env[i], '=') || c->env[i][0] == '=')
            bad = true;
    if (bad)
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: config fields Env, Entrypoint, Cmd, User or WorkingDir are malformed");
    else if (c->workdir && c->workdir[0] != '/')
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: WorkingDir %.200s is not absolute", c->workdir);
    else if (c->workdir && (workdir_clean(c->workdir), strcmp(c->workdir, "/proc") == 0 ||
                            strncmp(c->workdir, "/proc/", 6) == 0))
        r = err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: WorkingDir %.200s is in /proc (a magic link there leads anywhere)", c->workdir);
    else if (c->os && strcmp(c->os, "linux"))
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, img->config_digest, "image: os %.40s is not linux",
                    c->os);
    else if (c->arch && strcmp(c->arch, host_arch()))
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, img->config_digest,
                    "image: architecture %.40s, this host runs %s", c->arch, host_arch());
out:
    json_decref(j);
    return r;
}

void oci_image_free(struct oci_image *img) {
    if (!img)
        return;
    strv_free(img->layer_digests);
    strv_free(img->diff_ids);
    strv_free(img->layer_dirs);
    strv_free(img->layer_paths);
    free(img->layer_sizes);
    strv_free(img->config.env);
    strv_free(img->config.entrypoint);
    strv_free(img->config.cmd);
    free(img->config.user);
    free(img->config.workdir);
    free(img->config.os);
    free(img->config.arch);
    free(img->config_json);
    for (size_t i = 0; img->lock_fds && i < img->nlock_fds; i++)
        if (img->lock_fds[i] >= 0)
            close(img->lock_fds[i]);
    free(img->lock_fds);
    free(img);
}

static int alloc_image(struct oci_image **ret, fy_error **reterr) {
    if (!(*ret = calloc(1, sizeof(**ret))))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
    return 0;
}

/* oci and oci-archive: (index ->) manifest -> config. */
static int resolve_oci(struct oci_src *src, struct oci_image *img, fy_error **reterr) {
    const struct oci_ref *ref = src->ref;
    char *buf = NULL;
    size_t len = 0;
    char want[OCI_DIGEST_LEN + 1];
    int64_t size = -1;
    int r;
    if (ref->digest[0]) {
        memcpy(want, ref->digest, sizeof(want));
    } else {
        /* index.json is not content-addressed: only a tag (or the only image) selects from it. */
        if ((r = oci_src_read(src, "index.json", JSON_BLOB_MAX, &buf, &len, reterr)) < 0)
            return r;
        json_error_t je;
        json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
        free(buf);
        buf = NULL;
        if (!j)
            return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, "index.json", "image: index.json: %s", je.text);
        r = pick_from_index(j, ref->tag, want, &size, reterr);
        json_decref(j);
        if (r < 0)
            return r;
        if (!want[0])
            return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, "index.json", "image: index.json has no manifests");
    }
    /* At most two levels: a digest may name an index whose entry is the manifest. */
    for (int depth = 0;; depth++) {
        if ((r = read_blob(src, want, size, &buf, &len, reterr)) < 0)
            return r;
        json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        char next[OCI_DIGEST_LEN + 1] = "";
        r = j ? pick_from_index(j, NULL, next, &size, reterr) : 0;
        json_decref(j);
        if (r < 0) {
            free(buf);
            return r;
        }
        if (!next[0])
            break;
        free(buf);
        buf = NULL;
        if (depth == 1)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, want, "image: nested indexes");
        memcpy(want, next, sizeof(want));
    }
    memcpy(img->manifest_digest, want, sizeof(want));
    r = oci_parse_manifest(buf, len, img, reterr);
    free(buf);
    if (r < 0)
        return r;
    if ((r = read_blob(src, img->config_digest, img->config_size, &img->config_json, &len, reterr)) < 0)
        return r;
    return oci_parse_config(img->config_json, len, img, reterr);
}

/* docker-archive: manifest.json names the config and the layer files; the
 * config's digest is the image id, the diff_ids verify the layers. */
static int resolve_docker(struct oci_src *src, struct oci_image *img, fy_error **reterr) {
    const struct oci_ref *ref = src->ref;
    char *buf = NULL;
    size_t len = 0;
    int r = oci_src_read(src, "manifest.json", JSON_BLOB_MAX, &buf, &len, reterr);
    if (r < 0)
        return r;
    json_error_t je;
    json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    free(buf);
    if (!json_is_array(j) || json_array_size(j) == 0) {
        json_decref(j);
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, "manifest.json",
                       "image: manifest.json is not a non-empty array");
    }
    json_t *pick = NULL;
    size_t matches = 0;
    for (size_t i = 0; i < json_array_size(j); i++) {
        json_t *m = json_array_get(j, i);
        const char *cfg = json_string_value(json_object_get(m, "Config"));
        if (!cfg)
            continue;
        if (ref->digest[0] && !strstr(cfg, ref->digest + 7))
            continue;
        pick = m;
        matches++;
    }
    if (matches != 1) {
        json_decref(j);
        if (matches)
            return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL,
                           "image: the archive holds %zu images: name one by its config digest", matches);
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_IMAGE, 0, ref->digest[0] ? ref->digest : NULL,
                       "image: no image of the archive matches%s", ref->digest[0] ? " the digest" : "");
    }
    const char *cfg = json_string_value(json_object_get(pick, "Config"));
    json_t *layers = json_object_get(pick, "Layers");
    char cfgname[512];
    snprintf(cfgname, sizeof(cfgname), "%s", strip_dot(cfg));
    if (!json_is_array(layers) || json_array_size(layers) > 500) {
        json_decref(j);
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, "manifest.json", "image: Layers is not an array of at most 500");
    }
    img->nlayers = json_array_size(layers);
    img->layer_paths = calloc(img->nlayers + 1, sizeof(char *));
    img->layer_digests = calloc(img->nlayers + 1, sizeof(char *));
    img->layer_sizes = calloc(img->nlayers + 1, sizeof(uint64_t));
    for (size_t i = 0; img->layer_paths && i < img->nlayers; i++) {
        const char *p = json_string_value(json_array_get(layers, i));
        if (!p) {
            json_decref(j);
            return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, "manifest.json", "image: layer %zu has no path", i);
        }
        if (!(img->layer_paths[i] = util_strdup(strip_dot(p))))
            break;
    }
    json_decref(j);
    if (!img->layer_paths || !img->layer_digests || !img->layer_sizes ||
        (img->nlayers && !img->layer_paths[img->nlayers - 1]))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
    if ((r = oci_src_read(src, cfgname, JSON_BLOB_MAX, &img->config_json, &len, reterr)) < 0)
        return r;
    unsigned char h[32];
    crypto_hash_sha256(h, (const unsigned char *)img->config_json, len);
    oci_digest_hex(h, img->config_digest);
    if ((ref->digest[0] && strcmp(ref->digest, img->config_digest)) || !strstr(cfgname, img->config_digest + 7))
        return err_set(reterr, FY_E_INTEGRITY, FY_STEP_IMAGE, 0, cfgname,
                       "digest: config %s has digest %s", cfgname, img->config_digest);
    memcpy(img->manifest_digest, img->config_digest, sizeof(img->manifest_digest));
    for (size_t i = 0; i < img->nlayers; i++)
        if (!(img->layer_digests[i] = util_strdup("")))
            return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
    return oci_parse_config(img->config_json, len, img, reterr);
}

int oci_resolve_src(struct oci_src *src, struct oci_image **ret, fy_error **reterr) {
    int r = alloc_image(ret, reterr);
    if (r < 0)
        return r;
    r = src->ref->transport == OCI_DOCKER_ARCHIVE ? resolve_docker(src, *ret, reterr) : resolve_oci(src, *ret, reterr);
    if (r < 0) {
        oci_image_free(*ret);
        *ret = NULL;
    }
    return r;
}

int oci_resolve(const char *refstr, struct oci_image **ret, fy_error **reterr) {
    struct oci_ref ref;
    struct oci_src src = {.fd = -1};
    *ret = NULL;
    int r = oci_ref_parse(refstr, &ref, reterr);
    if (r < 0)
        return r;
    if ((r = oci_src_open(&src, &ref, reterr)) == 0)
        r = oci_resolve_src(&src, ret, reterr);
    oci_src_close(&src);
    oci_ref_free(&ref);
    return r;
}

char *oci_image_to_json(const struct oci_image *img) {
    json_t *o = json_object(), *layers = json_array(), *cfg = json_object();
    if (!o || !layers || !cfg) {
        json_decref(o);
        json_decref(layers);
        json_decref(cfg);
        return NULL;
    }
    json_object_set_new(o, "manifest", json_string(img->manifest_digest));
    json_object_set_new(o, "config", json_string(img->config_digest));
    for (size_t i = 0; i < img->nlayers; i++) {
        json_t *l = json_object();
        if (img->layer_digests && img->layer_digests[i] && img->layer_digests[i][0])
            json_object_set_new(l, "digest", json_string(img->layer_digests[i]));
        if (img->layer_sizes && img->layer_sizes[i])
            json_object_set_new(l, "size", json_integer((json_int_t)img->layer_sizes[i]));
        if (img->diff_ids && img->diff_ids[i])
            json_object_set_new(l, "diff_id", json_string(img->diff_ids[i]));
        if (img->layer_dirs && img->layer_dirs[i])
            json_object_set_new(l, "dir", json_string(img->layer_dirs[i]));
        json_array_append_new(layers, l);
    }
    json_object_set_new(o, "layers", layers);
    const struct oci_config *c = &img->config;
    struct { const char *k; char **v; } lists[] = {{"env", c->env}, {"entrypoint", c->entrypoint}, {"cmd", c->cmd}};
    for (size_t i = 0; i < FY_ARRAY_SIZE(lists); i++) {
        if (!lists[i].v)
            continue;
        json_t *a = json_array();
        for (size_t k = 0; lists[i].v[k]; k++)
            json_array_append_new(a, json_string(lists[i].v[k]));
        json_object_set_new(cfg, lists[i].k, a);
    }
    if (c->user)
        json_object_set_new(cfg, "user", json_string(c->user));
    if (c->workdir)
        json_object_set_new(cfg, "workdir", json_string(c->workdir));
    if (c->os)
        json_object_set_new(cfg, "os", json_string(c->os));
    if (c->arch)
        json_object_set_new(cfg, "architecture", json_string(c->arch));
    json_object_set_new(o, "image_config", cfg);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}
