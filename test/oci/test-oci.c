/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The image service (lib/oci/): images made here by two independent
 * producers (test/oci/mkimage.py and umoci) are verified and unpacked;
 * hostile layers are each refused with a typed error and nothing is
 * written outside the cache; whiteouts and opaque directories are stored
 * so that overlayfs honours them (checked with a real overlay mount);
 * concurrent unpackers share the cache; gc.
 *
 *   test-oci MKIMAGE.PY [--rootless]
 *
 * With --rootless (started as root) it re-executes itself as uid 65534. */
#include <check.h>
#include <grp.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "oci.h"

static const char *mkimage;
static char scratch[256];
static bool rootless;

/* ---- helpers ---- */

static void sh(const char *fmt, ...) FY_PRINTF(1, 2);
static void sh(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int st = system(cmd);
    ck_assert_msg(st == 0, "command failed (%d): %s", st, cmd);
}

/* A per-test directory with cache/ and victim/ (which must stay empty). */
static void fresh(const char *name, char *dir, size_t len) {
    snprintf(dir, len, "%s/%s", scratch, name);
    sh("rm -rf '%s' && mkdir -p '%s/victim' && chmod 755 '%s'", dir, dir, dir);
}

/* Builds an image from spec (a JSON text) at dir/out; the manifest digest into digest. */
static void make_image(const char *dir, const char *out, const char *spec, char digest[OCI_DIGEST_LEN + 1]) {
    char specpath[512], outpath[512], cmd[2048];
    snprintf(specpath, sizeof(specpath), "%s/%s.spec.json", dir, out);
    snprintf(outpath, sizeof(outpath), "%s/%s", dir, out);
    FILE *f = fopen(specpath, "w");
    ck_assert_ptr_nonnull(f);
    fputs(spec, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s'", mkimage, outpath, specpath);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    json_t *j = json_loads(buf, 0, NULL);
    ck_assert_msg(j != NULL, "mkimage printed %s", buf);
    const char *d = json_string_value(json_object_get(j, "manifest"));
    ck_assert_ptr_nonnull(d);
    snprintf(digest, OCI_DIGEST_LEN + 1, "%s", d);
    json_decref(j);
}

static int count_entries(const char *path) {
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1; /* no cache made yet: nothing in it */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Nothing outside the cache, nothing staged, no layer published. */
static void assert_clean(const char *dir, int layers) {
    char p[512];
    snprintf(p, sizeof(p), "%s/victim", dir);
    ck_assert_msg(count_entries(p) == 0, "something was written into %s", p);
    snprintf(p, sizeof(p), "%s/cache/tmp", dir);
    ck_assert_int_eq(count_entries(p), 0);
    snprintf(p, sizeof(p), "%s/cache/layers", dir);
    ck_assert_int_eq(count_entries(p), layers);
    /* no other user of the host reaches a layer (their entries keep the
     * image's modes: a 0666 file, a 1777 /tmp), by a public diff_id either */
    struct stat lst;
    ck_assert_msg(stat(p, &lst) < 0 || (lst.st_mode & 07777) == 0700, "%s is mode %o", p, (unsigned)(lst.st_mode & 07777));
    /* Only what the test made is beside the cache. */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        ck_assert_msg(e->d_name[0] == '.' || !strcmp(e->d_name, "victim") || !strcmp(e->d_name, "cache") ||
                      !strncmp(e->d_name, "img", 3) || !strcmp(e->d_name, "mnt"),
                      "unexpected %s/%s", dir, e->d_name);
    closedir(d);
}

static int unpack(const char *dir, const char *ref, const struct oci_opts *o, struct oci_image **img,
                  fy_error **err) {
    char cache[512];
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    struct oci_opts opts = o ? *o : (struct oci_opts){0};
    opts.cache_dir = cache;
    *img = NULL;
    return oci_unpack(ref, &opts, img, err);
}

/* ---- references ---- */

START_TEST(test_refs) {
    struct oci_ref r;
    fy_error *e = NULL;
    const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char s[256];
    snprintf(s, sizeof(s), "oci:/x/y@%s", d);
    ck_assert_int_eq(oci_ref_parse(s, &r, NULL), 0);
    ck_assert_int_eq(r.transport, OCI_LAYOUT);
    ck_assert_str_eq(r.path, "/x/y");
    ck_assert_ptr_null(r.tag);
    ck_assert_str_eq(r.digest, d);
    oci_ref_free(&r);
    snprintf(s, sizeof(s), "oci-archive:/a:b/img.tar:v1@%s", d);
    ck_assert_int_eq(oci_ref_parse(s, &r, NULL), 0);
    ck_assert_int_eq(r.transport, OCI_ARCHIVE);
    ck_assert_str_eq(r.path, "/a:b/img.tar");
    ck_assert_str_eq(r.tag, "v1");
    oci_ref_free(&r);
    ck_assert_int_eq(oci_ref_parse("docker-archive:/i.tar", &r, NULL), 0);
    ck_assert_int_eq(r.transport, OCI_DOCKER_ARCHIVE);
    ck_assert_str_eq(r.digest, "");
    oci_ref_free(&r);
    static const char *const bad[] = {
        "docker://busybox", "busybox:latest", "oci:", "oci:/x@sha256:abc", "oci:/x@sha512:00",
        "oci:/x@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "oci:/x:",
        "docker-archive:/i.tar:tag",
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad); i++) {
        ck_assert_msg(oci_ref_parse(bad[i], &r, &e) == FY_E_INVAL, "%s accepted", bad[i]);
        ck_assert_int_eq(fy_error_step(e), FY_STEP_IMAGE);
        fy_error_free(e);
        e = NULL;
    }
}
END_TEST

/* ---- a good image, three containers of it ---- */

#define BUSYBOX_SPEC(fmt) \
    "{\"format\": \"" fmt "\", \"config\": {\"Env\": [\"PATH=/bin\", \"IMG=1\"], \"Cmd\": [\"/bin/sh\"], " \
    "\"WorkingDir\": \"/work\", \"User\": \"0\"}, \"layers\": [{\"busybox\": true}, {\"compression\": \"zstd\", " \
    "\"entries\": [{\"name\": \"etc/motd\", \"data\": \"hello\\n\"}, {\"name\": \"bin/suid\", \"data\": \"x\", " \
    "\"mode\": 3565}, {\"name\": \"etc/motd2\", \"type\": \"hardlink\", \"target\": \"etc/motd\"}, " \
    "{\"name\": \"etc/fifo\", \"type\": \"fifo\"}, {\"name\": \"ro\", \"type\": \"dir\", \"mode\": 365}, " \
    "{\"name\": \"ro/inside\", \"data\": \"in a 0555 directory\"}, {\"name\": \"./etc/self\", \"data\": \"s\"}, " \
    "{\"name\": \"./etc/self\", \"type\": \"hardlink\", \"target\": \"etc/self\"}]}]}"

static void check_busybox_layers(const struct oci_image *img) {
    ck_assert_int_eq(img->nlayers, 2);
    char p[1024];
    struct stat st;
    snprintf(p, sizeof(p), "%s/bin/busybox", img->layer_dirs[0]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert(S_ISREG(st.st_mode) && (st.st_mode & 0111));
    snprintf(p, sizeof(p), "%s/bin/sh", img->layer_dirs[0]);
    char link[64] = "";
    ck_assert_int_eq(readlink(p, link, sizeof(link) - 1), 7);
    ck_assert_str_eq(link, "busybox");
    /* setuid and setgid stripped, the rest kept (06755 -> 0755). */
    snprintf(p, sizeof(p), "%s/bin/suid", img->layer_dirs[1]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, 0755);
    snprintf(p, sizeof(p), "%s/etc/motd2", img->layer_dirs[1]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_nlink, 2);
    /* a link to itself, named "./etc/self" as tar -C dir . names it: kept */
    snprintf(p, sizeof(p), "%s/etc/self", img->layer_dirs[1]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_size, 1);
    snprintf(p, sizeof(p), "%s/etc/fifo", img->layer_dirs[1]);
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    snprintf(p, sizeof(p), "%s/ro", img->layer_dirs[1]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0755); /* 0555 and the owner's rwx (the cache stays removable) */
    ck_assert_ptr_nonnull(img->config.env);
    ck_assert_str_eq(img->config.env[1], "IMG=1");
    ck_assert_str_eq(img->config.cmd[0], "/bin/sh");
    ck_assert_str_eq(img->config.workdir, "/work");
    ck_assert_str_eq(img->config.user, "0");
}

START_TEST(test_busybox_three_formats) {
    char dir[512], digest[OCI_DIGEST_LEN + 1], ref[1024];
    fresh("formats", dir, sizeof(dir));
    make_image(dir, "img-oci", BUSYBOX_SPEC("oci"), digest);
    struct oci_image *img;
    fy_error *e = NULL;
    snprintf(ref, sizeof(ref), "oci:%s/img-oci@%s", dir, digest);
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(img->manifest_digest, digest);
    check_busybox_layers(img);
    char *json = oci_image_to_json(img);
    ck_assert_ptr_nonnull(strstr(json, digest));
    free(json);
    char first[2][1024];
    snprintf(first[0], sizeof(first[0]), "%s", img->layer_dirs[0]);
    snprintf(first[1], sizeof(first[1]), "%s", img->layer_dirs[1]);
    oci_image_free(img);
    assert_clean(dir, 2);
    /* By tag, without a digest (the strict profiles refuse that; the service does not). */
    snprintf(ref, sizeof(ref), "oci:%s/img-oci:latest", dir);
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(img->manifest_digest, digest);
    oci_image_free(img);
    snprintf(ref, sizeof(ref), "oci:%s/img-oci:nosuchtag", dir);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_NOTFOUND);
    fy_error_free(e);
    e = NULL;

    /* The same image as an oci-archive and a docker-archive: same layers in the cache. */
    make_image(dir, "img-oci.tar", BUSYBOX_SPEC("oci-archive"), digest);
    snprintf(ref, sizeof(ref), "oci-archive:%s/img-oci.tar@%s", dir, digest);
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(img->layer_dirs[0], first[0]);
    oci_image_free(img);
    char cfg[OCI_DIGEST_LEN + 1];
    make_image(dir, "img-docker.tar", BUSYBOX_SPEC("docker-archive"), cfg);
    /* A fresh cache: every layer of the docker-archive really is read. */
    sh("rm -rf '%s/cache'", dir);
    snprintf(ref, sizeof(ref), "docker-archive:%s/img-docker.tar@%s", dir, cfg);
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(img->config_digest, cfg);
    check_busybox_layers(img);
    ck_assert_str_eq(img->layer_dirs[1], first[1]);
    oci_image_free(img);
    assert_clean(dir, 2);
    /* A docker-archive named by a digest it does not hold. */
    snprintf(ref, sizeof(ref), "docker-archive:%s/img-docker.tar@sha256:%064d", dir, 0);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_NOTFOUND);
    fy_error_free(e);
}
END_TEST

/* A FIFO where the image should have a file (a blob, index.json, the
 * archive itself) is refused as what it is, at once: opening one for
 * reading would wait for a writer that never comes, before any deadline of
 * the attempt is running (alarm: the test's own bound). */
START_TEST(test_fifo_refused) {
    char dir[512], digest[OCI_DIGEST_LEN + 1], ref[1024], path[1200];
    fresh("fifo", dir, sizeof(dir));
    make_image(dir, "img-oci", BUSYBOX_SPEC("oci"), digest);
    struct oci_image *img;
    fy_error *e = NULL;
    alarm(60);
    /* the manifest blob, then index.json (by tag), then a layer */
    snprintf(path, sizeof(path), "%s/img-oci/blobs/sha256/%s", dir, digest + 7);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    snprintf(ref, sizeof(ref), "oci:%s/img-oci@%s", dir, digest);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_RANGE);
    ck_assert_msg(strstr(fy_error_message(e), "not a regular file"), "%s", fy_error_message(e));
    fy_error_free(e);
    e = NULL;
    snprintf(path, sizeof(path), "%s/img-oci/index.json", dir);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    snprintf(ref, sizeof(ref), "oci:%s/img-oci:latest", dir);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_RANGE);
    fy_error_free(e);
    e = NULL;
    make_image(dir, "img-layer", BUSYBOX_SPEC("oci"), digest);
    snprintf(path, sizeof(path), "%s/img-layer/blobs/sha256", dir);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    char layer[1400] = "";
    while ((de = readdir(d))) { /* the largest blob: a layer */
        struct stat st, best;
        char p[1400];
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        if (de->d_name[0] != '.' && stat(p, &st) == 0 && (!layer[0] || (stat(layer, &best) == 0 && st.st_size > best.st_size)))
            snprintf(layer, sizeof(layer), "%s", p);
    }
    closedir(d);
    ck_assert_int_eq(unlink(layer), 0);
    ck_assert_int_eq(mkfifo(layer, 0644), 0);
    snprintf(ref, sizeof(ref), "oci:%s/img-layer@%s", dir, digest);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_INVAL);
    ck_assert_msg(strstr(fy_error_message(e), "not a regular file"), "%s", fy_error_message(e));
    fy_error_free(e);
    e = NULL;
    /* an archive that is a FIFO */
    snprintf(path, sizeof(path), "%s/img-fifo.tar", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    snprintf(ref, sizeof(ref), "oci-archive:%s@%s", path, digest);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_INVAL);
    fy_error_free(e);
    alarm(0);
}
END_TEST

/* The independent producer: umoci builds the layout, we read it. */
START_TEST(test_umoci_image) {
    if (access("/usr/bin/umoci", X_OK) != 0) {
        fprintf(stderr, "umoci not installed (scripts/deps.sh): skipped\n");
        return;
    }
    char dir[512], ref[1024];
    fresh("umoci", dir, sizeof(dir));
    /* unpack + repack (umoci 0.4.7's `insert` writes a tar without its end
     * blocks and with the last file unpadded: refused here as truncated). */
    sh("cd '%s' && umoci init --layout img-u >/dev/null && umoci new --image img-u:t >/dev/null && "
       "umoci unpack %s --image img-u:t img-bundle >/dev/null && mkdir -p img-bundle/rootfs/bin && "
       "cp /bin/busybox img-bundle/rootfs/bin/ && ln -s busybox img-bundle/rootfs/bin/sh && "
       "umoci repack --image img-u:t img-bundle >/dev/null && "
       "umoci config --image img-u:t --config.cmd /bin/busybox --config.env X=umoci >/dev/null",
       dir, rootless ? "--rootless" : "");
    /* The manifest digest from index.json (by tag). */
    snprintf(ref, sizeof(ref), "oci:%s/img-u:t", dir);
    struct oci_image *img;
    fy_error *e = NULL;
    ck_assert_msg(oci_resolve(ref, &img, &e) == 0, "%s", fy_error_message(e));
    char digest[OCI_DIGEST_LEN + 1];
    snprintf(digest, sizeof(digest), "%s", img->manifest_digest);
    oci_image_free(img);
    snprintf(ref, sizeof(ref), "oci:%s/img-u@%s", dir, digest);
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    ck_assert_int_ge(img->nlayers, 1);
    char p[1024];
    struct stat st, host;
    snprintf(p, sizeof(p), "%s/bin/busybox", img->layer_dirs[img->nlayers - 1]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(stat("/bin/busybox", &host), 0);
    ck_assert_int_eq(st.st_size, host.st_size);
    ck_assert_str_eq(img->config.cmd[0], "/bin/busybox");
    oci_image_free(img);
    assert_clean(dir, 1); /* one layer: umoci insert */
}
END_TEST

/* ---- hostile layers ---- */

struct hostile {
    const char *name;
    const char *spec; /* %1$s: the victim directory's absolute path */
    int code;
    const char *token;
    bool refuse_setid;
};

#define L1(entries) "{\"layers\": [{\"entries\": [" entries "]}]}"

static const struct hostile hostile[] = {
    {"traversal", L1("{\"name\": \"../victim/pwned\", \"data\": \"x\"}"), FY_E_UNSAFE, "traversal:"},
    {"traversal-deep", L1("{\"name\": \"a/b/../../../victim/pwned\", \"data\": \"x\"}"), FY_E_UNSAFE, "traversal:"},
    {"absolute", L1("{\"name\": \"%1$s/pwned\", \"data\": \"x\"}"), FY_E_UNSAFE, "absolute:"},
    {"symlink-write", L1("{\"name\": \"link\", \"type\": \"symlink\", \"target\": \"%1$s\"}, "
                         "{\"name\": \"link/pwned\", \"data\": \"x\"}"), FY_E_UNSAFE, "symlink:"},
    {"symlink-relative", L1("{\"name\": \"d\", \"type\": \"dir\"}, {\"name\": \"d/up\", \"type\": \"symlink\", "
                            "\"target\": \"../../../../../../../../../..%1$s\"}, "
                            "{\"name\": \"d/up/pwned\", \"data\": \"x\"}"), FY_E_UNSAFE, "symlink:"},
    {"symlink-dir-entry", L1("{\"name\": \"link\", \"type\": \"symlink\", \"target\": \"%1$s\"}, "
                             "{\"name\": \"link/sub\", \"type\": \"dir\"}"), FY_E_UNSAFE, "symlink:"},
    {"long-component", L1("{\"name\": \"d/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"data\": \"x\"}"), FY_E_RANGE, "path:"},
    {"hardlink-shadow-abs", L1("{\"name\": \"shadow\", \"type\": \"hardlink\", \"target\": \"/etc/shadow\"}"),
     FY_E_UNSAFE, "absolute:"},
    {"hardlink-shadow-rel", L1("{\"name\": \"shadow\", \"type\": \"hardlink\", \"target\": \"etc/shadow\"}"),
     FY_E_UNSAFE, "hardlink:"},
    {"hardlink-shadow-up", L1("{\"name\": \"shadow\", \"type\": \"hardlink\", "
                              "\"target\": \"../../../../../../../../etc/shadow\"}"), FY_E_UNSAFE, "traversal:"},
    {"hardlink-via-symlink", L1("{\"name\": \"e\", \"type\": \"symlink\", \"target\": \"/etc\"}, "
                                "{\"name\": \"shadow\", \"type\": \"hardlink\", \"target\": \"e/shadow\"}"),
     FY_E_UNSAFE, "symlink:"},
    /* a file in place of a non-empty directory of the same layer: a malformed
     * layer, said as one (it was an I/O error, "Directory not empty") */
    {"file-over-full-dir", L1("{\"name\": \"x\", \"type\": \"dir\"}, {\"name\": \"x/y\", \"data\": \"y\"}, "
                              "{\"name\": \"x\", \"data\": \"x\"}"), FY_E_UNSAFE, "replace:"},
    {"whiteout-dotdot", L1("{\"name\": \"a/.wh..\", \"data\": \"\"}"), FY_E_UNSAFE, "whiteout:"},
    {"whiteout-up", L1("{\"name\": \"../.wh.victim\", \"data\": \"\"}"), FY_E_UNSAFE, "traversal:"},
    {"whiteout-empty", L1("{\"name\": \".wh.\", \"data\": \"\"}"), FY_E_UNSAFE, "whiteout:"},
    {"device-chr", L1("{\"name\": \"null\", \"type\": \"chr\", \"major\": 1, \"minor\": 3}"), FY_E_UNSAFE, "device:"},
    {"device-blk", L1("{\"name\": \"sda\", \"type\": \"blk\", \"major\": 8, \"minor\": 0}"), FY_E_UNSAFE, "device:"},
    {"device-whiteout-shaped", L1("{\"name\": \"w\", \"type\": \"chr\", \"major\": 0, \"minor\": 0}"), FY_E_UNSAFE,
     "device:"},
    {"setuid-refused", L1("{\"name\": \"su\", \"data\": \"x\", \"mode\": 2541}"), FY_E_UNSAFE, "setid:", true},
    {"setgid-refused", L1("{\"name\": \"sg\", \"data\": \"x\", \"mode\": 1517}"), FY_E_UNSAFE, "setid:", true},
    /* 10 GiB of holes: the logical size counts, the holes are never written. */
    {"sparse-10g", "{\"layers\": [{\"sparse\": {\"name\": \"big\", \"size\": 10737418240}}]}", FY_E_RANGE, "bytes:"},
    /* 256 MiB of zeros in about 256 KiB of gzip (over 200:1). */
    {"gzip-bomb", "{\"layers\": [{\"compression\": \"gzip\", \"entries\": [{\"name\": \"z\", \"zeros\": 268435456}]}]}",
     FY_E_RANGE, "ratio:"},
    {"zstd-bomb", "{\"layers\": [{\"compression\": \"zstd\", \"entries\": [{\"name\": \"z\", \"zeros\": 268435456}]}]}",
     FY_E_RANGE, "ratio:"},
    {"truncated-gzip", "{\"layers\": [{\"busybox\": true, \"truncate\": 200000}]}", FY_E_INTEGRITY, "truncated:"},
    {"truncated-tar", "{\"layers\": [{\"busybox\": true, \"compression\": \"none\", \"truncate\": 300000}]}",
     FY_E_INTEGRITY, "truncated:"},
    {"wrong-layer-digest", "{\"corrupt\": \"layer-digest\", \"layers\": [{\"compression\": \"none\", "
                           "\"entries\": [{\"name\": \"f\", \"zeros\": 65536}]}]}", FY_E_INTEGRITY, "digest:"},
    {"wrong-diff-id", "{\"corrupt\": \"diff_id\", \"layers\": [{\"busybox\": true}]}", FY_E_INTEGRITY, "diff_id:"},
    {"wrong-manifest", "{\"corrupt\": \"manifest\", \"layers\": [{\"busybox\": true}]}", FY_E_INTEGRITY, "digest:"},
    {"wrong-config", "{\"corrupt\": \"config\", \"layers\": [{\"busybox\": true}]}", FY_E_INTEGRITY, "digest:"},
    {"wrong-config-size", "{\"corrupt\": \"config-size\", \"layers\": [{\"busybox\": true}]}", FY_E_INTEGRITY,
     "size:"},
    /* a descriptor's size of 0 is a size (it turned the check off) */
    {"layer-size-zero", "{\"corrupt\": \"layer-size-zero\", \"layers\": [{\"busybox\": true}]}", FY_E_INTEGRITY,
     "size:"},
    {"config-not-a-config", "{\"corrupt\": \"config-media-type\", \"layers\": [{\"busybox\": true}]}",
     FY_E_UNSUPPORTED, "image: config media type"},
};

START_TEST(test_hostile) {
    const struct hostile *h = &hostile[_i];
    char dir[512], spec[2048], digest[OCI_DIGEST_LEN + 1], ref[1024], victim[600];
    fresh(h->name, dir, sizeof(dir));
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    /* The specs are this file's constants: %1$s is the victim directory. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(spec, sizeof(spec), h->spec, victim);
#pragma GCC diagnostic pop
    make_image(dir, "img", spec, digest);
    struct stat shadow_before, shadow_after;
    int have_shadow = stat("/etc/shadow", &shadow_before) == 0;
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    struct oci_opts o = {.refuse_setid = h->refuse_setid};
    struct oci_image *img;
    fy_error *e = NULL;
    int r = unpack(dir, ref, &o, &img, &e);
    ck_assert_msg(r == h->code, "%s: %d (%s), want %s", h->name, r, e ? fy_error_message(e) : "no error",
                  fy_error_name(h->code));
    ck_assert_int_eq(fy_error_step(e), FY_STEP_IMAGE);
    ck_assert_msg(strncmp(fy_error_message(e), h->token, strlen(h->token)) == 0, "%s: %s", h->name,
                  fy_error_message(e));
    ck_assert_ptr_nonnull(fy_error_location(e)); /* names the entry or the blob */
    ck_assert_ptr_null(img);
    fy_error_free(e);
    assert_clean(dir, 0);
    /* gc leaves no lock file of a layer that never was */
    char cache[600], locks[700];
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    snprintf(locks, sizeof(locks), "%s/locks", cache);
    uint64_t removed = 99;
    e = NULL;
    ck_assert_msg(oci_gc(cache, UINT64_MAX, UINT64_MAX, &removed, &e) == 0, "%s", fy_error_message(e));
    ck_assert_uint_eq(removed, 0);
    DIR *ld = opendir(locks);
    struct dirent *le;
    while (ld && (le = readdir(ld)))
        ck_assert_msg(le->d_name[0] == '.' || strcmp(le->d_name, "gc.lock") == 0, "%s: lock file %s left", h->name,
                      le->d_name);
    if (ld)
        closedir(ld);
    if (have_shadow) {
        ck_assert_int_eq(stat("/etc/shadow", &shadow_after), 0);
        ck_assert_int_eq(shadow_before.st_nlink, shadow_after.st_nlink);
    }
}
END_TEST

/* The safe counterparts: a file replacing a symlink is written in the layer,
 * not through the link; a sparse file under the bound keeps its holes. */
START_TEST(test_benign_lookalikes) {
    char dir[512], spec[2048], digest[OCI_DIGEST_LEN + 1], ref[1024];
    fresh("lookalikes", dir, sizeof(dir));
    snprintf(spec, sizeof(spec),
             "{\"layers\": [{\"entries\": [{\"name\": \"f\", \"type\": \"symlink\", \"target\": \"%s/victim/f\"}, "
             "{\"name\": \"f\", \"data\": \"in the layer\"}, {\"name\": \"abs\", \"type\": \"symlink\", "
             "\"target\": \"/etc/shadow\"}, {\"name\": \"./a/./b//c\", \"data\": \"normalised\"}]}, "
             "{\"sparse\": {\"name\": \"big\", \"size\": 1073741824}}]}", dir);
    make_image(dir, "img", spec, digest);
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    struct oci_image *img;
    fy_error *e = NULL;
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    char p[1024], buf[64] = "";
    struct stat st;
    snprintf(p, sizeof(p), "%s/f", img->layer_dirs[0]);
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    snprintf(p, sizeof(p), "%s/abs", img->layer_dirs[0]);
    ck_assert_int_eq(readlink(p, buf, sizeof(buf) - 1), 11); /* stored, never followed */
    snprintf(p, sizeof(p), "%s/a/b/c", img->layer_dirs[0]);
    ck_assert_int_eq(stat(p, &st), 0);
    snprintf(p, sizeof(p), "%s/big", img->layer_dirs[1]);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_size, 1073741824);
    ck_assert_msg(st.st_blocks * 512 < (1 << 20), "the holes were written: %lld blocks", (long long)st.st_blocks);
    oci_image_free(img);
    assert_clean(dir, 2);
}
END_TEST

/* Bounds a caller sets: entries, path length, bytes. */
START_TEST(test_bounds) {
    char dir[512], digest[OCI_DIGEST_LEN + 1], ref[1024];
    fresh("bounds", dir, sizeof(dir));
    make_image(dir, "img", "{\"layers\": [{\"busybox\": true}]}", digest);
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    struct { struct oci_limits l; int code; const char *token; } cases[] = {
        {{.entries = 10}, FY_E_RANGE, "entries:"},
        {{.path_max = 5}, FY_E_RANGE, "path:"},
        {{.layer_bytes = 4096}, FY_E_RANGE, "bytes:"},
        {{.stream_bytes = 65536}, FY_E_RANGE, "bytes:"},
        {{.ratio = 1, .ratio_floor = 1}, FY_E_RANGE, "ratio:"},
        /* (the busybox layer's five directories past a fix-up bound of 64 bytes) */
        {{.fixup_bytes = 64}, FY_E_RANGE, "entries:"},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(cases); i++) {
        struct oci_opts o = {.limits = cases[i].l};
        struct oci_image *img;
        fy_error *e = NULL;
        ck_assert_int_eq(unpack(dir, ref, &o, &img, &e), cases[i].code);
        ck_assert_msg(strncmp(fy_error_message(e), cases[i].token, strlen(cases[i].token)) == 0, "%s",
                      fy_error_message(e));
        fy_error_free(e);
        assert_clean(dir, 0);
    }
}
END_TEST

/* ---- whiteouts and opaque directories, read back by overlayfs ---- */

static int overlay_child(const char *lower, const char *mnt) {
    if (rootless) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
            return 10;
        char m[64];
        int fd = open("/proc/self/setgroups", O_WRONLY);
        if (fd < 0 || write(fd, "deny", 4) != 4)
            return 11;
        close(fd);
        snprintf(m, sizeof(m), "0 %u 1", (unsigned)uid);
        if ((fd = open("/proc/self/uid_map", O_WRONLY)) < 0 || write(fd, m, strlen(m)) < 0)
            return 12;
        close(fd);
        snprintf(m, sizeof(m), "0 %u 1", (unsigned)gid);
        if ((fd = open("/proc/self/gid_map", O_WRONLY)) < 0 || write(fd, m, strlen(m)) < 0)
            return 13;
        close(fd);
    } else if (unshare(CLONE_NEWNS) < 0) {
        return 14;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return 15;
    char opts[2048];
    snprintf(opts, sizeof(opts), "lowerdir=%s%s", lower, rootless ? ",userxattr" : "");
    if (mount("overlay", mnt, "overlay", MS_RDONLY, opts) < 0) {
        fprintf(stderr, "overlay %s: %s\n", opts, strerror(errno));
        return 16;
    }
    char p[1024];
    struct stat st;
    int bad = 0;
    snprintf(p, sizeof(p), "%s/gone", mnt);
    bad |= (lstat(p, &st) == 0) << 0;            /* whited out */
    snprintf(p, sizeof(p), "%s/keep", mnt);
    bad |= (lstat(p, &st) != 0) << 1;
    snprintf(p, sizeof(p), "%s/opq/old", mnt);
    bad |= (lstat(p, &st) == 0) << 2;            /* hidden by the opaque directory */
    snprintf(p, sizeof(p), "%s/opq/new", mnt);
    bad |= (lstat(p, &st) != 0) << 3;
    snprintf(p, sizeof(p), "%s/dir/gone2", mnt);
    bad |= (lstat(p, &st) == 0) << 4;
    return bad ? 20 + bad : 0;
}

START_TEST(test_whiteouts) {
    char dir[512], digest[OCI_DIGEST_LEN + 1], ref[1024];
    fresh("whiteouts", dir, sizeof(dir));
    make_image(dir, "img",
               "{\"layers\": [{\"entries\": [{\"name\": \"gone\", \"data\": \"1\"}, {\"name\": \"keep\", \"data\": \"1\"}, "
               "{\"name\": \"opq\", \"type\": \"dir\"}, {\"name\": \"opq/old\", \"data\": \"1\"}, "
               "{\"name\": \"dir/gone2\", \"data\": \"1\"}]}, "
               "{\"entries\": [{\"name\": \".wh.gone\", \"data\": \"\"}, {\"name\": \"opq/.wh..wh..opq\", \"data\": \"\"}, "
               "{\"name\": \"opq/new\", \"data\": \"2\"}, {\"name\": \"dir/.wh.gone2\", \"data\": \"\"}]}]}",
               digest);
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    struct oci_image *img;
    fy_error *e = NULL;
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    char p[1024], v[8] = "";
    struct stat st;
    snprintf(p, sizeof(p), "%s/gone", img->layer_dirs[1]);
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
    snprintf(p, sizeof(p), "%s/.wh.gone", img->layer_dirs[1]);
    ck_assert_int_ne(lstat(p, &st), 0);
    snprintf(p, sizeof(p), "%s/opq", img->layer_dirs[1]);
    ck_assert_int_eq(getxattr(p, "user.overlay.opaque", v, sizeof(v)), 1);
    ck_assert_int_eq(v[0], 'y');
    /* overlayfs reads them: lowerdir is listed top first. */
    char lower[2100], mnt[600];
    snprintf(lower, sizeof(lower), "%s:%s", img->layer_dirs[1], img->layer_dirs[0]);
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(overlay_child(lower, mnt));
    int st_;
    ck_assert_int_eq(waitpid(pid, &st_, 0), pid);
    ck_assert_msg(WIFEXITED(st_) && WEXITSTATUS(st_) == 0, "overlay check: status %d", WEXITSTATUS(st_));
    oci_image_free(img);
    rmdir(mnt);
    assert_clean(dir, 2);
}
END_TEST

/* ---- the cache: concurrent unpackers, progress, gc, trust ---- */

static void progress(void *ud, uint32_t layer, uint32_t nlayers, uint64_t done, uint64_t total) {
    uint64_t *last = ud;
    ck_assert_uint_le(done, total);
    ck_assert_uint_lt(layer, nlayers);
    ck_assert_uint_ge(done, last[0]);
    last[0] = done;
    last[1]++;
}

/* gc on a host thread with a small stack (musl's 128 KiB) and a layer
 * 2,040 levels deep: it recursed once per level and overran the stack. */
static const char *deep_cache;
static void *deep_gc(void *arg) {
    uint64_t removed = 0;
    fy_error *e = NULL;
    int r = oci_gc(deep_cache, 0, 0, &removed, &e);
    fy_error_free(e);
    *(int *)arg = r == 0 && removed == 1;
    return NULL;
}

/* An image of one uncompressed layer holding one file levels directories
 * down (named "d"), with the file's entry fields (after its name) as
 * given, unpacked into dir's cache. */
static void unpack_deep_file(const char *dir, int levels, const char *fields) {
    char digest[OCI_DIGEST_LEN + 1], ref[1024];
    static char spec[8192];
    int n = snprintf(spec, sizeof(spec), "{\"layers\": [{\"compression\": \"none\", \"entries\": [{\"name\": \"");
    for (int i = 0; i < levels; i++)
        n += snprintf(spec + n, sizeof(spec) - (size_t)n, "d/");
    snprintf(spec + n, sizeof(spec) - (size_t)n, "f\", %s}]}]}", fields);
    make_image(dir, "img", spec, digest);
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    struct oci_image *img = NULL;
    fy_error *e = NULL;
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    oci_image_free(img);
}

START_TEST(test_gc_deep_layer_small_stack) {
    char dir[512], cache[600];
    fresh("deepgc", dir, sizeof(dir));
    unpack_deep_file(dir, 2040, "\"data\": \"deep\"");
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    deep_cache = cache;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 128 * 1024);
    pthread_t th;
    int ok = 0;
    ck_assert_int_eq(pthread_create(&th, &at, deep_gc, &ok), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&at);
    ck_assert_msg(ok, "gc of the deep layer failed");
    assert_clean(dir, 0);
}
END_TEST

/* gc's size bound counts a layer's every level: 1 MiB 100 levels down
 * (only 64 were counted, so an image kept any amount of data past
 * --max-size below them). */
START_TEST(test_gc_counts_deep_data) {
    char dir[512], cache[600];
    fresh("deepsize", dir, sizeof(dir));
    unpack_deep_file(dir, 100, "\"random\": 1048576");
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    fy_error *e = NULL;
    uint64_t removed = 0;
    ck_assert_int_eq(oci_gc(cache, 768 * 1024, UINT64_MAX, &removed, &e), 0);
    ck_assert_msg(removed == 1, "a layer of 1 MiB, 100 levels down, kept under a 768 KiB bound");
    assert_clean(dir, 0);
}
END_TEST

/* A cached layer serves an image only for a blob it was verified from:
 * an image whose config claims a cached layer's diff_id, with a blob of
 * other content, is refused as if nothing were cached (it got the other
 * image's layer, private file included); one with the very blob, under a
 * name of its own, is verified once and then served. */
START_TEST(test_cached_layer_needs_its_blob) {
    char dir[512], da[OCI_DIGEST_LEN + 1], db[OCI_DIGEST_LEN + 1], dc[OCI_DIGEST_LEN + 1], ref[1024];
    fresh("blobs", dir, sizeof(dir));
    make_image(dir, "img-a", "{\"layers\": [{\"busybox\": true, \"compression\": \"none\", \"entries\": "
                             "[{\"name\": \"secret/token\", \"data\": \"tenant-a\"}]}]}", da);
    snprintf(ref, sizeof(ref), "oci:%s/img-a@%s", dir, da);
    struct oci_image *img = NULL;
    fy_error *e = NULL;
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    char spec[1024];
    snprintf(spec, sizeof(spec), "{\"layers\": [{\"busybox\": true, \"compression\": \"gzip\", \"entries\": "
             "[{\"name\": \"mine\", \"data\": \"b\"}], \"diff_id\": \"%s\"}]}", img->diff_ids[0]);
    make_image(dir, "img-b", spec, db);
    /* the very layer, compressed: a blob of its own of the same content */
    snprintf(spec, sizeof(spec), "{\"layers\": [{\"busybox\": true, \"compression\": \"gzip\", \"entries\": "
             "[{\"name\": \"secret/token\", \"data\": \"tenant-a\"}]}]}");
    make_image(dir, "img-c", spec, dc);
    oci_image_free(img);
    snprintf(ref, sizeof(ref), "oci:%s/img-b@%s", dir, db);
    img = NULL;
    int r = unpack(dir, ref, NULL, &img, &e);
    ck_assert_msg(r == FY_E_INTEGRITY, "an image claiming a cached diff_id: %d (%s)",
                  r, e ? fy_error_message(e) : "accepted");
    ck_assert_ptr_null(img);
    fy_error_free(e);
    e = NULL;
    snprintf(ref, sizeof(ref), "oci:%s/img-c@%s", dir, dc);
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "the same layer from a blob of its own: %s",
                  fy_error_message(e));
    oci_image_free(img);
    assert_clean(dir, 1);
    /* docker-archives name no blobs: one with the layer, unpacked, lets
     * no other one that claims its diff_id have it, not even later */
    char cd[OCI_DIGEST_LEN + 1], ce[OCI_DIGEST_LEN + 1];
    make_image(dir, "img-d.tar", "{\"format\": \"docker-archive\", \"layers\": [{\"busybox\": true, "
               "\"compression\": \"none\", \"entries\": [{\"name\": \"secret/token\", \"data\": \"tenant-d\"}]}]}", cd);
    snprintf(ref, sizeof(ref), "docker-archive:%s/img-d.tar@%s", dir, cd);
    img = NULL;
    ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
    snprintf(spec, sizeof(spec), "{\"format\": \"docker-archive\", \"layers\": [{\"busybox\": true, "
             "\"compression\": \"none\", \"entries\": [{\"name\": \"mine\", \"data\": \"e\"}], "
             "\"diff_id\": \"%s\"}]}", img->diff_ids[0]);
    oci_image_free(img);
    make_image(dir, "img-e.tar", spec, ce);
    for (int round = 0; round < 2; round++) {
        snprintf(ref, sizeof(ref), "docker-archive:%s/img-e.tar@%s", dir, ce);
        img = NULL;
        r = unpack(dir, ref, NULL, &img, &e);
        ck_assert_msg(r == FY_E_INTEGRITY, "a docker-archive claiming a cached diff_id: %d (%s)", r,
                      e ? fy_error_message(e) : "accepted");
        fy_error_free(e);
        e = NULL;
        /* the real one again: verified again, and still served */
        snprintf(ref, sizeof(ref), "docker-archive:%s/img-d.tar@%s", dir, cd);
        ck_assert_msg(unpack(dir, ref, NULL, &img, &e) == 0, "%s", fy_error_message(e));
        oci_image_free(img);
    }
    assert_clean(dir, 2);
}
END_TEST

/* One directory listed again and again (a 3.8 KB path, 20,000 times):
 * the unpacker's memory stays flat (each listing kept a copy of the path
 * until the layer ended: 85 MB here, 4 GB at the entries bound). */
START_TEST(test_repeated_directory_memory) {
    char dir[512], digest[OCI_DIGEST_LEN + 1], ref[1024], spec[8192], path[4000];
    fresh("repeat", dir, sizeof(dir));
    size_t n = 0;
    for (int i = 0; i < 15; i++)
        n += (size_t)snprintf(path + n, sizeof(path) - n, "%s%.250s", i ? "/" : "",
                              "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                              "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                              "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp");
    snprintf(spec, sizeof(spec), "{\"layers\": [{\"entries\": [{\"name\": \"pad\", \"random\": 700000}, "
             "{\"name\": \"%s\", \"type\": \"dir\", \"repeat\": 20000}]}]}", path);
    make_image(dir, "img", spec, digest);
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    pid_t pid = fork();
    if (pid == 0) {
        struct oci_image *img = NULL;
        _exit(unpack(dir, ref, NULL, &img, NULL) == 0 ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the unpack failed (%d)", st);
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
#ifndef __SANITIZE_ADDRESS__ /* (ASan's shadow and quarantine: no bound to say here) */
    ck_assert_msg(ru.ru_maxrss < 48 * 1024, "unpacking one directory listed 20,000 times took %ld KiB", ru.ru_maxrss);
#endif
    assert_clean(dir, 1);
}
END_TEST

START_TEST(test_concurrent_and_gc) {
    char dir[512], digest[OCI_DIGEST_LEN + 1], ref[1024];
    fresh("concurrent", dir, sizeof(dir));
    make_image(dir, "img", "{\"layers\": [{\"busybox\": true, \"compression\": \"none\"}, {\"busybox\": true, "
                           "\"entries\": [{\"name\": \"x\", \"data\": \"2\"}]}]}", digest);
    snprintf(ref, sizeof(ref), "oci:%s/img@%s", dir, digest);
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            struct oci_image *img;
            _exit(unpack(dir, ref, NULL, &img, NULL) == 0 && img->nlayers == 2 ? 0 : 1);
        }
    }
    for (int i = 0; i < 4; i++) {
        int st;
        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unpacker %d failed", i);
    }
    assert_clean(dir, 2);
    /* Progress: a fresh cache reports monotonically up to the total. */
    sh("rm -rf '%s/cache'", dir);
    uint64_t last[2] = {0, 0};
    struct oci_opts o = {.progress = progress, .userdata = last};
    struct oci_image *img;
    fy_error *e = NULL;
    ck_assert_msg(unpack(dir, ref, &o, &img, &e) == 0, "%s", fy_error_message(e));
    ck_assert_uint_eq(last[0], img->layer_sizes[0] + img->layer_sizes[1]);
    ck_assert_uint_ge(last[1], 2);
    oci_image_free(img);
    /* A crash leaves staging behind: gc removes it; a young cache under its size bound stays. */
    char p[600], cache[600];
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    snprintf(p, sizeof(p), "%s/tmp/%s.0000beef", cache,
             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    ck_assert_int_eq(mkdir(p, 0555), 0);
    uint64_t removed = 99;
    ck_assert_int_eq(oci_gc(cache, UINT64_MAX, 3600, &removed, &e), 0);
    ck_assert_uint_eq(removed, 0);
    assert_clean(dir, 2);
    /* Age: every layer older than 0 s goes; size: the least recently used first. */
    ck_assert_int_eq(oci_gc(cache, 1, UINT64_MAX, &removed, &e), 0);
    ck_assert_uint_eq(removed, 2);
    assert_clean(dir, 0);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), 0);
    oci_image_free(img);
    ck_assert_int_eq(oci_gc(cache, UINT64_MAX, 0, &removed, &e), 0);
    ck_assert_uint_eq(removed, 2);
    assert_clean(dir, 0);
    /* A cache others can write to is not trusted. */
    ck_assert_int_eq(chmod(cache, 0777), 0);
    ck_assert_int_eq(unpack(dir, ref, NULL, &img, &e), FY_E_DENIED);
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(chmod(cache, 0755), 0);
    /* A directory that is no cache (a mistyped --cache /var) is refused,
     * and its tmp untouched; a path that is not there is not made. */
    char notcache[700], victim[800], missing[700];
    snprintf(notcache, sizeof(notcache), "%s/fakevar", dir);
    snprintf(victim, sizeof(victim), "%s/tmp/session", notcache);
    sh("mkdir -p '%s/tmp' '%s/lib' && chmod 1777 '%s/tmp' && echo data >'%s'", notcache, notcache, notcache, victim);
    ck_assert_int_eq(oci_gc(notcache, UINT64_MAX, 0, &removed, &e), FY_E_DENIED);
    ck_assert_msg(strstr(fy_error_message(e), "no image cache"), "%s", fy_error_message(e));
    fy_error_free(e);
    e = NULL;
    ck_assert_msg(access(victim, F_OK) == 0, "gc of a directory that is no cache removed %s", victim);
    snprintf(p, sizeof(p), "%s/gc.lock", notcache);
    ck_assert_msg(access(p, F_OK) < 0, "gc of a directory that is no cache made %s", p);
    snprintf(missing, sizeof(missing), "%s/no/such/cache", dir);
    removed = 99;
    ck_assert_int_eq(oci_gc(missing, UINT64_MAX, 0, &removed, &e), 0);
    ck_assert_uint_eq(removed, 0);
    snprintf(p, sizeof(p), "%s/no", dir);
    ck_assert_msg(access(p, F_OK) < 0, "gc of a missing cache made %s", p);
    /* The cache carries its mark. */
    snprintf(p, sizeof(p), "%s/CACHEDIR.TAG", cache);
    ck_assert_msg(access(p, F_OK) == 0, "no %s", p);
}
END_TEST

/* The parser on its own: malformed manifests and configs are typed errors. */
START_TEST(test_parsers) {
    static const char *const bad_manifests[] = {
        "", "[]", "{\"schemaVersion\": 1}",
        "{\"schemaVersion\": 2, \"config\": {\"digest\": \"sha256:00\", \"size\": 1}, \"layers\": []}",
        "{\"schemaVersion\": 2, \"config\": {\"digest\": \"sha512:00\", \"size\": 1}, \"layers\": []}",
        "{\"schemaVersion\": 2, \"mediaType\": \"application/x\", \"layers\": []}",
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad_manifests); i++) {
        struct oci_image *img = calloc(1, sizeof(*img));
        fy_error *e = NULL;
        ck_assert_int_lt(oci_parse_manifest(bad_manifests[i], strlen(bad_manifests[i]), img, &e), 0);
        ck_assert_int_eq(fy_error_step(e), FY_STEP_IMAGE);
        fy_error_free(e);
        oci_image_free(img);
    }
    const char *enc = "{\"schemaVersion\": 2, \"config\": {\"digest\": \"sha256:"
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"size\": 1}, \"layers\": "
                      "[{\"mediaType\": \"application/vnd.oci.image.layer.v1.tar+gzip+encrypted\", \"digest\": \"sha256:"
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"size\": 1}]}";
    struct oci_image *img = calloc(1, sizeof(*img));
    ck_assert_int_eq(oci_parse_manifest(enc, strlen(enc), img, NULL), FY_E_UNSUPPORTED);
    oci_image_free(img);
    static const char *const bad_configs[] = {
        "{}", "{\"rootfs\": {\"type\": \"layers\", \"diff_ids\": [\"x\"]}}",
        "{\"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}, \"config\": {\"Env\": [\"NOEQUALS\"]}}",
        "{\"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}, \"config\": {\"WorkingDir\": \"rel\"}}",
        "{\"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}, \"os\": \"windows\"}",
        "{\"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}, \"config\": {\"Cmd\": [1]}}",
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad_configs); i++) {
        img = calloc(1, sizeof(*img));
        ck_assert_msg(oci_parse_config(bad_configs[i], strlen(bad_configs[i]), img, NULL) < 0, "%s", bad_configs[i]);
        oci_image_free(img);
    }
}
END_TEST

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MKIMAGE.PY [--rootless]\n", argv[0]);
        return 2;
    }
    mkimage = argv[1];
    bool want_rootless = argc > 2 && strcmp(argv[2], "--rootless") == 0;
    if (want_rootless && getuid() == 0) {
        char tmpl[] = "/tmp/fy-oci-rootless-XXXXXX";
        if (!mkdtemp(tmpl) || chown(tmpl, 65534, 65534) < 0) {
            perror("scratch");
            return 1;
        }
        setenv("FY_OCI_SCRATCH", tmpl, 1);
        pid_t pid = fork();
        if (pid == 0) {
            if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                _exit(1);
            setenv("HOME", tmpl, 1);
            execv("/proc/self/exe", argv);
            _exit(1);
        }
        int st;
        waitpid(pid, &st, 0);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
        if (system(cmd) != 0)
            return 1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (want_rootless && !getenv("FY_OCI_SCRATCH"))
        return 77;
    rootless = getuid() != 0;
    const char *given = getenv("FY_OCI_SCRATCH");
    if (given) {
        snprintf(scratch, sizeof(scratch), "%s", given);
    } else {
        snprintf(scratch, sizeof(scratch), "/tmp/fy-oci-XXXXXX");
        if (!mkdtemp(scratch))
            return 1;
        chmod(scratch, 0755);
    }
    Suite *s = suite_create(rootless ? "oci-rootless" : "oci");
    TCase *tc = tcase_create("oci");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_refs);
    tcase_add_test(tc, test_parsers);
    tcase_add_test(tc, test_busybox_three_formats);
    tcase_add_test(tc, test_fifo_refused);
    tcase_add_test(tc, test_umoci_image);
    tcase_add_loop_test(tc, test_hostile, 0, (int)FY_ARRAY_SIZE(hostile));
    tcase_add_test(tc, test_benign_lookalikes);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_whiteouts);
    tcase_add_test(tc, test_concurrent_and_gc);
    tcase_add_test(tc, test_cached_layer_needs_its_blob);
    tcase_add_test(tc, test_repeated_directory_memory);
    tcase_add_test(tc, test_gc_counts_deep_data);
    tcase_add_test(tc, test_gc_deep_layer_small_stack);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (!given) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
        if (system(cmd) != 0)
            failed++;
    }
    return failed ? 1 : 0;
}
