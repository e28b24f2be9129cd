/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The image service (lib/oci/): OCI images by digest, verified and unpacked
 * natively into a content-addressed layer cache. Not a backend: core
 * resolves a policy's image through it at fy_prepare and hands the
 * backends plain data (lower layer directories, digests, merged config)
 * through the neutral plan.
 *
 * References:
 *   oci:DIR[:TAG][@sha256:HEX]            an OCI image layout directory
 *   oci-archive:FILE[:TAG][@sha256:HEX]   the same as a tar file
 *   docker-archive:FILE[@sha256:HEX]      `docker save` output; the digest
 *                                         is the config's (the image id)
 * For oci and oci-archive the digest is the manifest's (an index digest
 * selects the linux manifest of this host's architecture).
 *
 * Verification: manifest (or index) -> config -> every layer blob against
 * its descriptor digest and size (libsodium SHA-256), and every layer's
 * uncompressed stream against the config's rootfs.diff_ids. A mismatch is
 * FY_E_INTEGRITY naming the blob (error location: "sha256:...").
 *
 * Unpacking: every entry is created relative to the layer's staging
 * directory fd, parents resolved with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV); absolute
 * and ".." names, hardlinks to anything not already in the layer, writes
 * through symlinks, device nodes and bad whiteouts are FY_E_UNSAFE (error
 * location: the entry name); bounds (bytes, entries, path length,
 * compression ratio) are FY_E_RANGE. All of them step FY_STEP_IMAGE. The
 * message starts with a stable reason token ("traversal:", "absolute:",
 * "symlink:", "hardlink:", "device:", "whiteout:", "setid:", "bytes:",
 * "entries:", "path:", "ratio:", "truncated:", "digest:", "diff_id:",
 * "size:") that the tests check.
 *
 * Whiteouts are stored the way overlayfs reads a lower layer: ".wh.NAME" as
 * a character device 0/0 NAME (any user may make one since Linux 5.8), an
 * opaque directory (".wh..wh..opq") as the xattr user.overlay.opaque=y
 * (for overlay mounted with userxattr, as in a user namespace) and, when
 * the caller may, also trusted.overlay.opaque=y. xattrs of the image
 * itself (PAX SCHILY.xattr, file capabilities) are never applied.
 *
 * The cache (oci_cache_dir): layers/<diff_id hex>/ (complete, read-only
 * by convention), tmp/ (staging; removed by gc), locks/ (one flock file per
 * layer), gc.lock (shared while unpacking, exclusive while collecting).
 * An entry appears only by rename(2) after syncfs(2), so a half-written
 * entry is never seen as complete. */
#ifndef FY_OCI_H
#define FY_OCI_H

#include "internal.h"

#define OCI_DIGEST_LEN 71 /* "sha256:" + 64 hex */

enum oci_transport { OCI_LAYOUT = 1, OCI_ARCHIVE, OCI_DOCKER_ARCHIVE };

struct oci_ref {
    uint32_t transport;     /* enum oci_transport */
    char *path;
    char *tag;              /* NULL when none */
    char digest[OCI_DIGEST_LEN + 1]; /* "" when none */
};
/* Parses a reference; FY_E_INVAL (step FY_STEP_IMAGE) when malformed. */
int oci_ref_parse(const char *s, struct oci_ref *out, fy_error **reterr);
void oci_ref_free(struct oci_ref *r);
bool oci_digest_valid(const char *d); /* "sha256:" and 64 lowercase hex digits */

/* What an unpack may take, per layer (0: the default). */
struct oci_limits {
    uint64_t layer_bytes;   /* sum of regular files' logical sizes (sparse holes count) */
    uint64_t stream_bytes;  /* the uncompressed tar stream */
    uint64_t entries;
    uint64_t path_max;      /* bytes of one entry name */
    uint64_t ratio;         /* uncompressed / compressed, checked past ratio_floor bytes */
    uint64_t ratio_floor;
    uint64_t fixup_bytes;   /* memory the directories' mode/time fix-ups may hold */
};
#define OCI_DEFAULT_LAYER_BYTES (8ull << 30)
#define OCI_DEFAULT_STREAM_BYTES (16ull << 30)
#define OCI_DEFAULT_ENTRIES 1000000ull
#define OCI_DEFAULT_PATH_MAX 4096ull
#define OCI_DEFAULT_RATIO 200ull
#define OCI_DEFAULT_RATIO_FLOOR (64ull << 20)
/* One 4 KiB path listed 150,000 times cost 568 MB of the host's memory
 * from an 8 MB blob (the sixth exploration), about 4 GB at the entries
 * bound. */
#define OCI_DEFAULT_FIXUP_BYTES (128ull << 20)

/* Progress of an unpack: layer (0-based) of nlayers, compressed bytes done
 * of total over every layer that is not already cached. */
typedef void (*oci_progress_fn)(void *userdata, uint32_t layer, uint32_t nlayers, uint64_t done,
                                uint64_t total);

struct oci_opts {
    const char *cache_dir;  /* NULL: oci_cache_dir() */
    struct oci_limits limits;
    bool refuse_setid;      /* setuid/setgid entries: FY_E_UNSAFE (else the bits are stripped) */
    /* Root only: owners shifted into the host range [id_first, id_first +
     * id_count) (image uid u -> id_first + u; ids past the range -> the
     * range's 65534 or its first), for a sandbox that maps the range from
     * 0; such layers live in their own cache directory,
     * layers-<first>-<count>/. 0: owners are not kept (the cache owner's). */
    uint32_t id_first, id_count;
    /* Keep a shared lock on every layer (oci_image.lock_fds) until the
     * image is freed: gc leaves those layers alone. */
    bool hold;
    oci_progress_fn progress;
    void *userdata;
};

/* The image config fields a run needs (NULL / 0 when the image has none). */
struct oci_config {
    char **env;             /* "K=V", NULL-terminated */
    char **entrypoint, **cmd; /* NULL-terminated */
    char *user, *workdir;
    char *os, *arch;
};

struct oci_image {
    char manifest_digest[OCI_DIGEST_LEN + 1]; /* docker-archive: the config digest */
    char config_digest[OCI_DIGEST_LEN + 1];
    int64_t config_size;    /* as the manifest's descriptor says (-1: none given, a docker-archive) */
    size_t nlayers;
    char **layer_digests;   /* the blobs' digests as the manifest lists them */
    char **diff_ids;        /* "sha256:..." */
    char **layer_dirs;      /* absolute cache directories, lowest first (after oci_unpack) */
    size_t first_visible;   /* the lowest layer the root shows: the topmost whose root is opaque
                               (".wh..wh..opq" at the layer's root hides every layer below it, which
                               overlayfs does not do for a lower layer's root), else 0 */
    uint64_t *layer_sizes;  /* compressed sizes (docker-archive: 0) */
    char **layer_paths;     /* docker-archive: the layers' files in the archive (else NULL) */
    struct oci_config config;
    char *config_json;      /* the verified config blob */
    int *lock_fds;          /* opts.hold: one shared flock per layer (-1: none), closed by oci_image_free */
    size_t nlock_fds;
};
void oci_image_free(struct oci_image *img);

/* The cache root: /var/cache/forgeyard/images for root, else
 * $XDG_CACHE_HOME/forgeyard/images or ~/.cache/forgeyard/images (malloc'd). */
char *oci_cache_dir(void);
/* Whether this process unpacks as root (owners can be shifted). */
bool oci_is_root(void);

/* Reads and verifies the manifest and config of ref (layers are not read). */
int oci_resolve(const char *ref, struct oci_image **ret, fy_error **reterr);
/* Resolves, then verifies and unpacks every layer not yet in the cache. */
int oci_unpack(const char *ref, const struct oci_opts *opts, struct oci_image **ret, fy_error **reterr);
/* A JSON object describing the image (malloc'd). */
char *oci_image_to_json(const struct oci_image *img);
/* Removes staging left by crashed unpacks and layers unused for max_age_sec
 * (0: any age), then the least recently used until the cache holds at most
 * max_bytes (UINT64_MAX: no bound). *removed: layers removed. */
int oci_gc(const char *cache_dir, uint64_t max_bytes, uint64_t max_age_sec, uint64_t *removed,
           fy_error **reterr);

/* For the fuzzer and the tests: parses a manifest, index or config blob. */
int oci_parse_manifest(const char *json, size_t len, struct oci_image *img, fy_error **reterr);
int oci_parse_config(const char *json, size_t len, struct oci_image *img, fy_error **reterr);

#endif
