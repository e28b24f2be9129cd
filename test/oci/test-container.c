/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The container level end to end: a busybox image made here (mkimage.py)
 * is run by digest through fy_prepare/fy_start (backend linux-container):
 * exit code, stdout, image files visible, the image config merged under
 * the policy, a fresh upper per attempt, nothing left afterwards (mounts,
 * directories), level "container" and the digest in the evidence; the
 * attack helper (fy-attack) run inside the image.
 *
 *   test-container MKIMAGE.PY FY-ATTACK [--rootless] */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forgeyard/sandbox.h"
#include "caps.h"
#include "oci.h"
#include "policy.h"

static const char *mkimage, *attack;
static char scratch[256], digest[OCI_DIGEST_LEN + 1], ref[1024];
static bool rootless;
static int counter;

static void make_image_from(const char *name, const char *spec, char *out_ref, size_t reflen);

static char *slurp(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f)
        return strdup("");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static int count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "re");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

struct run {
    fy_result *res;
    int outcome, exit_code;
    char *out, *json;
};

static fy_policy *policy(uint32_t profile) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(profile, &p, &e), 0);
    ck_assert_msg(fy_policy_set_image(p, ref, &e) == 0, "%s", fy_error_message(e));
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 60000000, NULL), 0);
    return p;
}

static void run(fy_policy *p, const char *const *argv, struct run *r) {
    char out[512];
    snprintf(out, sizeof(out), "%s/out-%d", scratch, ++counter);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL), 0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FILE, -1, out, NULL), 0);
    fy_prepared *pr = NULL;
    int rc = fy_prepare(p, NULL, argv, &pr, &e);
    ck_assert_msg(rc == 0, "prepare: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "linux-container");
    ck_assert_int_eq(fy_prepared_level(pr), FY_LEVEL_CONTAINER);
    fy_handle *h = NULL;
    rc = fy_start(pr, &h, &e);
    ck_assert_msg(rc == 0, "start: %s", fy_error_message(e));
    fy_prepared_free(pr);
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &r->res, NULL), 1);
    fy_handle_free(h);
    r->outcome = fy_result_outcome(r->res);
    r->exit_code = fy_result_exit_code(r->res);
    r->out = slurp(out);
    ck_assert_int_eq(fy_result_to_json(r->res, &r->json, NULL), 0);
    unlink(out);
}

static void run_free(struct run *r) {
    fy_result_free(r->res);
    free(r->out);
    fy_free(r->json);
}

/* The result's isolation.image: the image's own number of layers (what
 * fy_policy_set_image(3) puts in the contract id) and, apart, how many
 * were mounted. */
static void assert_image_layers(const char *json, long layers, long mounted) {
    json_t *j = json_loads(json, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *img = json_object_get(json_object_get(j, "isolation"), "image");
    ck_assert_msg(json_is_object(img), "%s", json);
    ck_assert_msg(json_integer_value(json_object_get(img, "layers")) == layers &&
                      json_integer_value(json_object_get(img, "layers_mounted")) == mounted,
                  "expected %ld layers, %ld mounted: %s", layers, mounted, json_dumps(img, 0));
    json_decref(j);
}

#define ASSERT_OUT(r, needle) \
    ck_assert_msg(strstr((r)->out, needle), "expected \"%s\" in output: %s", needle, (r)->out)

START_TEST(test_run) {
    int mounts_before = count_lines("/proc/self/mountinfo", "overlay");
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    /* The image's files, its Env under the policy's, a write to the image's
     * root, then the exit status. */
    ck_assert_int_eq(fy_policy_set_env(p, "IMG", "policy", NULL), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "cat /etc/motd; echo IMG=$IMG ONLY=$ONLY; test -x /bin/busybox && echo busybox-ok; "
                          "test -e /bin/bash || echo no-host-bash; test -e /fresh && echo upper-not-fresh; "
                          "echo x > /fresh && echo wrote-root; id -u; exit 7",
                          NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_FAILED && r.exit_code == 7, "outcome %d exit %d: %s / %s", r.outcome,
                  r.exit_code, r.out, r.json);
    ASSERT_OUT(&r, "hello from the image");
    ASSERT_OUT(&r, "IMG=policy ONLY=image");
    ASSERT_OUT(&r, "busybox-ok");
    ASSERT_OUT(&r, "no-host-bash");
    ck_assert_msg(!strstr(r.out, "upper-not-fresh"), "%s", r.out);
    ck_assert_int_eq(fy_result_level(r.res), FY_LEVEL_CONTAINER);
    ck_assert_msg(strstr(r.json, digest), "the digest is not in the evidence: %s", r.json);
    ck_assert_msg(strstr(r.json, "\"container\""), "%s", r.json);
    /* The cleanup witness: nothing of the attempt is left. */
    for (uint32_t what = FY_LEFT_PROCESSES; what <= FY_LEFT_FILES; what++) {
        uint64_t left = 99;
        ck_assert_int_eq(fy_result_cleanup(r.res, what, &left), 0);
        ck_assert_uint_eq(left, 0);
    }
    run_free(&r);
    /* A second attempt: the first one's write is gone (a fresh upper). */
    run(p, argv, &r);
    ck_assert_msg(!strstr(r.out, "upper-not-fresh"), "%s", r.out);
    run_free(&r);
    /* The image's Cmd and WorkingDir when the command is empty. */
    const char *empty[] = {NULL};
    run(p, empty, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "outcome %d: %s", r.outcome, r.out);
    ASSERT_OUT(&r, "cmd-from-image in /srv");
    run_free(&r);
    fy_policy_free(p);
    /* As root the layers were unpacked with the image's owners shifted into
     * the id range the sandbox maps from 0 (image root -> 100000). */
    if (!rootless) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "test \"$(stat -c %%u %s/cache/layers-100000-65536/*/bin/busybox)\" = 100000",
                 scratch);
        ck_assert_msg(system(cmd) == 0, "%s", cmd);
    }
    /* Nothing of the attempts is left on the host: no overlay mount, no upper. */
    ck_assert_int_eq(count_lines("/proc/self/mountinfo", "overlay"), mounts_before);
}
END_TEST

/* A bind at or under /usr: the host's runtime paths are not mounted in a
 * container (the image brings its own), so they do not stand in its way
 * (refused as "inside /usr", a cargo registry at /usr/local/cargo). */
START_TEST(test_bind_under_runtime_path) {
    char dir[600], mark[700];
    snprintf(dir, sizeof(dir), "%s/usrbind", scratch);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(mark, sizeof(mark), "%s/mark", dir);
    FILE *f = fopen(mark, "w");
    ck_assert_ptr_nonnull(f);
    fputs("under-usr\n", f);
    fclose(f);
    chmod(mark, 0644);
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_add_bind(p, dir, "/usr/local/tools", FY_BIND_READ_ONLY, &e) == 0, "%s",
                  fy_error_message(e));
    const char *argv[] = {"/bin/cat", "/usr/local/tools/mark", NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "outcome %d: %s / %s", r.outcome, r.out, r.json);
    ASSERT_OUT(&r, "under-usr");
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* The upper on disk is bounded as the tmpfs one is: tmp_size, by the disk
 * watchdog (it counts the attempt's upper directory). Writing past it ends
 * the attempt as resource-exceeded, and the result says how the root is
 * bounded, not "tmpfs sizes". */
START_TEST(test_disk_upper_bounded) {
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    policy_test_overlay_disk(p);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_TMP_SIZE, 16u << 20, NULL), 0);
    const char *argv[] = {"/bin/sh", "-c", "dd if=/dev/zero of=/big bs=1M count=48 2>/dev/null; sync; sleep 3; echo done",
                          NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_RESOURCE_EXCEEDED, "outcome %d: %s / %s", r.outcome, r.out, r.json);
    ck_assert_msg(strstr(r.json, "tmp_size"), "%s", r.json);
    ck_assert_msg(strstr(r.json, "disk watchdog"), "%s", r.json);
    for (uint32_t what = FY_LEFT_PROCESSES; what <= FY_LEFT_FILES; what++) {
        uint64_t left = 99;
        ck_assert_int_eq(fy_result_cleanup(r.res, what, &left), 0);
        ck_assert_uint_eq(left, 0);
    }
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* The upper on disk (kernels whose tmpfs has no user xattrs in a user
 * namespace, before 6.6; forced here by the test hook, which changes where
 * the upper lives, nothing of what is enforced): whiteouts and opaque
 * directories work, the upper is a per-attempt directory under the cache,
 * and it is gone afterwards, witnessed (also where the workload took the
 * write permission off its own directories). */
START_TEST(test_disk_upper) {
    int mounts_before = count_lines("/proc/self/mountinfo", "overlay");
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    policy_test_overlay_disk(p);
    const char *argv[] = {"/bin/sh", "-c",
                          "grep -o 'upperdir=[^,]*' /proc/self/mountinfo; rm /etc/motd; "
                          "test -e /etc/motd && echo whiteout-failed; rm -rf /srv; mkdir /srv; "
                          "test -z \"$(ls -A /srv)\" && echo opaque-ok; echo x > /fresh && cat /fresh;"
                          " mkdir -p /ro/sub && touch /ro/sub/f && chmod 555 /ro/sub /ro; exit 4",
                          NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_FAILED && r.exit_code == 4, "outcome %d exit %d: %s / %s", r.outcome,
                  r.exit_code, r.out, r.json);
    /* The upper is named to overlayfs by fd (opened before the root tmpfs
     * may hide it), not the tmpfs's /tmp/.upper. */
    ASSERT_OUT(&r, "upperdir=/proc/self/fd/");
    ck_assert_msg(!strstr(r.out, "/tmp/.upper"), "%s", r.out);
    ASSERT_OUT(&r, "opaque-ok");
    ASSERT_OUT(&r, "x\n");
    ck_assert_msg(!strstr(r.out, "whiteout-failed"), "%s", r.out);
    ck_assert_msg(strstr(r.json, "upper per attempt on disk"), "%s", r.json);
    for (uint32_t what = FY_LEFT_PROCESSES; what <= FY_LEFT_FILES; what++) {
        uint64_t left = 99;
        ck_assert_int_eq(fy_result_cleanup(r.res, what, &left), 0);
        ck_assert_uint_eq(left, 0);
    }
    run_free(&r);
    /* While an attempt runs, what it writes to its root is in its
     * directory under CACHE/uppers on the host. */
    {
        const char *slow[] = {"/bin/sh", "-c", "echo x > /fresh-on-disk; sleep 3", NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        fy_result *res = NULL;
        ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_NULL, -1, NULL, NULL), 0);
        ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_NULL, -1, NULL, NULL), 0);
        ck_assert_int_eq(fy_prepare(p, NULL, slow, &pr, NULL), 0);
        ck_assert_int_eq(fy_start(pr, &h, NULL), 0);
        fy_prepared_free(pr);
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "test -e %s/cache/uppers/*/upper/fresh-on-disk", scratch);
        bool seen = false;
        for (int i = 0; i < 40 && !seen; i++) {
            if (fy_handle_wait(h, 50000, &res, NULL) == 1)
                break;
            seen = system(cmd) == 0;
        }
        if (!res)
            ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
        fy_handle_free(h);
        ck_assert_msg(seen, "the root's write never showed in CACHE/uppers/*/upper");
        ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
        fy_result_free(res);
    }
    /* The next attempt starts from the image again (a fresh upper). */
    const char *again[] = {"/bin/sh", "-c", "cat /etc/motd; test -e /fresh && echo upper-not-fresh; exit 0", NULL};
    run(p, again, &r);
    ASSERT_OUT(&r, "hello from the image");
    ck_assert_msg(!strstr(r.out, "upper-not-fresh"), "%s", r.out);
    run_free(&r);
    fy_policy_free(p);
    char uppers[600];
    snprintf(uppers, sizeof(uppers), "%s/cache/uppers", scratch);
    DIR *d = opendir(uppers);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(count_lines("/proc/self/mountinfo", "overlay"), mounts_before);
}
END_TEST

/* Host paths under /tmp reach the container: the source directory and
 * binds (the staging tmpfs of the overlay root used to cover the host's
 * /tmp, and they failed with ENOENT), with the upper in the tmpfs and on
 * disk. Read-only stays read-only (EROFS, nothing written on the host), a
 * writable bind writes through, and nothing else of the host's /tmp is
 * visible (the scratch directory's other files, the container's /tmp its
 * own). */
START_TEST(test_host_paths_under_tmp) {
    char src[600], ro[600], rw[600], secret[600], path[700];
    snprintf(src, sizeof(src), "%s/src", scratch);
    snprintf(ro, sizeof(ro), "%s/ro", scratch);
    snprintf(rw, sizeof(rw), "%s/rw", scratch);
    snprintf(secret, sizeof(secret), "%s/host-secret", scratch);
    ck_assert_int_eq(mkdir(src, 0755), 0);
    ck_assert_int_eq(mkdir(ro, 0755), 0);
    ck_assert_int_eq(mkdir(rw, 0777), 0);
    ck_assert_int_eq(chmod(rw, 0777), 0);
    FILE *f;
    snprintf(path, sizeof(path), "%s/main.c", src);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("int main(void) { return 0; }\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/data", ro);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("ro-data\n", f);
    fclose(f);
    ck_assert_ptr_nonnull(f = fopen(secret, "w"));
    fputs("not for the sandbox\n", f);
    fclose(f);
    char script[2048];
    snprintf(script, sizeof(script),
             "ls /work/source; touch /work/source/new 2>&1 | grep -q 'Read-only file system' && echo src-erofs; "
             "cat /opt/ro/data; echo x 2>&1 > /opt/ro/new | grep -q 'Read-only file system' && echo ro-erofs; "
             "echo from-sandbox > /opt/rw/out && echo rw-wrote; "
             "test -e '%s' && echo SECRET-VISIBLE; test -e '%s' && echo SCRATCH-VISIBLE; "
             "test -z \"$(ls -A /tmp)\" && echo tmp-own; exit 0",
             secret, scratch);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    for (int disk = 0; disk < 2; disk++) {
        fy_policy *p = policy(FY_PROFILE_RELEASE);
        if (disk)
            policy_test_overlay_disk(p);
        fy_error *e = NULL;
        ck_assert_msg(fy_policy_set_source(p, src, 0, &e) == 0, "%s", fy_error_message(e));
        ck_assert_msg(fy_policy_add_bind(p, ro, "/opt/ro", FY_BIND_READ_ONLY, &e) == 0, "%s", fy_error_message(e));
        ck_assert_msg(fy_policy_add_bind(p, rw, "/opt/rw", FY_BIND_WRITABLE, &e) == 0, "%s", fy_error_message(e));
        struct run r;
        run(p, argv, &r);
        ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "upper %s: outcome %d: %s / %s", disk ? "on disk" : "tmpfs",
                      r.outcome, r.out, r.json);
        ASSERT_OUT(&r, "main.c");
        ASSERT_OUT(&r, "src-erofs");
        ASSERT_OUT(&r, "ro-data");
        ASSERT_OUT(&r, "ro-erofs");
        ASSERT_OUT(&r, "rw-wrote");
        ASSERT_OUT(&r, "tmp-own");
        ck_assert_msg(!strstr(r.out, "VISIBLE"), "%s", r.out);
        for (uint32_t what = FY_LEFT_PROCESSES; what <= FY_LEFT_FILES; what++) {
            uint64_t left = 99;
            ck_assert_int_eq(fy_result_cleanup(r.res, what, &left), 0);
            ck_assert_uint_eq(left, 0);
        }
        run_free(&r);
        fy_policy_free(p);
        /* Seen from the host: only the writable bind was written. */
        snprintf(path, sizeof(path), "%s/new", src);
        ck_assert_int_ne(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "%s/new", ro);
        ck_assert_int_ne(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "%s/out", rw);
        char *got = slurp(path);
        ck_assert_str_eq(got, "from-sandbox\n");
        free(got);
        ck_assert_int_eq(unlink(path), 0);
    }
}
END_TEST

/* An image's root user is the sandbox's mapped root, never the host's. */
START_TEST(test_root_is_mapped) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    const char *argv[] = {"/bin/sh", "-c", "id -u; cat /proc/self/uid_map", NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "outcome %d: %s", r.outcome, r.out);
    ck_assert_msg(strncmp(r.out, "0\n", 2) == 0, "%s", r.out);
    /* The uid map does not map the host's root: "0 <host id> 1" with host id != 0. */
    unsigned inside = 1, outside = 0, count = 0;
    ck_assert_int_eq(sscanf(strchr(r.out, '\n') + 1, "%u %u %u", &inside, &outside, &count), 3);
    ck_assert_uint_eq(inside, 0);
    ck_assert_uint_ne(outside, 0);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* A strict profile refuses an image without a digest; a policy with an
 * image never falls back to the namespace level. */
START_TEST(test_policy_rules) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    char tagged[600];
    snprintf(tagged, sizeof(tagged), "oci:%s/img:latest", scratch);
    ck_assert_int_eq(fy_policy_set_image(p, tagged, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.image");
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_policy_set_image(p, "docker://busybox", &e), FY_E_POLICY);
    fy_error_free(e);
    fy_policy_free(p);
    char json[1200];
    snprintf(json, sizeof(json), "{\"profile\": \"release\", \"filesystem\": {\"image\": \"%s\"}}", tagged);
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_load_json(p, json, strlen(json), &e), FY_E_POLICY);
    fy_error_free(e);
    e = NULL;
    /* Development accepts the tag; the policy's JSON keeps the image. */
    snprintf(json, sizeof(json), "{\"profile\": \"development\", \"filesystem\": {\"image\": \"%s\"}}", tagged);
    ck_assert_msg(fy_policy_load_json(p, json, strlen(json), &e) == 0, "%s", fy_error_message(e));
    char *out = NULL;
    ck_assert_int_eq(fy_policy_to_json(p, &out, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, tagged));
    fy_free(out);
    fy_policy_free(p);
    /* A tampered image fails at prepare, typed, naming the blob; nothing runs. */
    char bad[600], cmd[1400];
    snprintf(bad, sizeof(bad), "%s/img-tampered", scratch);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s/img' '%s' && for f in '%s'/blobs/sha256/*; do "
             "if [ $(stat -c %%s \"$f\") -gt 100000 ]; then printf X | dd of=\"$f\" bs=1 seek=5000 conv=notrunc "
             "2>/dev/null; fi; done", bad, scratch, bad, bad);
    ck_assert_int_eq(system(cmd), 0);
    char tampered[800];
    snprintf(tampered, sizeof(tampered), "oci:%s@%s", bad, digest);
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_image(p, tampered, NULL), 0);
    /* A cache of its own: the good image's layers are not reused by diff_id. */
    char own[700];
    snprintf(own, sizeof(own), "%s/cache-tampered", scratch);
    setenv("FORGEYARD_IMAGE_CACHE", own, 1);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, NULL, argv, &pr, &e);
    snprintf(own, sizeof(own), "%s/cache", scratch);
    setenv("FORGEYARD_IMAGE_CACHE", own, 1);
    ck_assert_msg(r == FY_E_INTEGRITY, "%d: %s", r, e ? fy_error_message(e) : "");
    ck_assert_int_eq(fy_error_step(e), FY_STEP_IMAGE);
    ck_assert_ptr_nonnull(strstr(fy_error_location(e), "sha256:"));
    ck_assert_ptr_null(pr);
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* The overlay root is a probed capability: the probe found it here, and a
 * host whose probe did not is refused at prepare, saying why (never run at
 * a weaker level). */
START_TEST(test_overlay_probed) {
    fy_caps *caps = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_NO_VM, &caps, NULL), 0);
    ck_assert_str_eq(caps_fact(caps, "linux.overlay"), "ok");
    ck_assert_int_eq(caps_set_fact(caps, "linux.overlay", "simulated: no user xattrs on tmpfs"), 0);
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, caps, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_msg(strstr(fy_error_message(e), "overlay root: simulated"), "%s", fy_error_message(e));
    ck_assert_ptr_null(pr);
    fy_error_free(e);
    fy_policy_free(p);
    fy_caps_free(caps);
}
END_TEST

/* gc leaves alone the layers a prepared plan holds (and so a running
 * attempt's lowers); once the plan is freed they go. */
START_TEST(test_gc_keeps_held) {
    char cache[700];
    snprintf(cache, sizeof(cache), "%s/cache", scratch);
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_prepare(p, NULL, argv, &pr, &e) == 0, "%s", fy_error_message(e));
    uint64_t removed = 99;
    ck_assert_int_eq(fy_image_gc(cache, 0, 0, &removed, &e), 0);
    ck_assert_uint_eq(removed, 0);
    fy_handle *h = NULL;
    fy_result *res = NULL;
    ck_assert_int_eq(fy_start(pr, &h, &e), 0);
    fy_prepared_free(pr); /* the handle keeps the plan, hence the layers */
    ck_assert_int_eq(fy_image_gc(cache, 0, 0, &removed, &e), 0);
    ck_assert_uint_eq(removed, 0);
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    fy_result_free(res);
    fy_handle_free(h);
    ck_assert_int_eq(fy_image_gc(cache, 0, 0, &removed, &e), 0);
    ck_assert_uint_eq(removed, 2);
    fy_policy_free(p);
}
END_TEST

/* The layer cache as root: unpacked under a daemon's umask 077 it is
 * still usable (the umask made 0700 layer roots and parents: every later
 * run failed at pivot-root), and its shifted layers are the range's first
 * id's own, 0700: no other user of the host lists, reads or writes them
 * (an image's 1777 /tmp or 0666 file was writable by anyone, and what
 * they wrote every later container of the image saw). */
START_TEST(test_cache_private_and_umask_free) {
    if (rootless || geteuid() != 0)
        return;
    char cache[700], old[700];
    snprintf(cache, sizeof(cache), "%s/cache-umask", scratch);
    snprintf(old, sizeof(old), "%s", getenv("FORGEYARD_IMAGE_CACHE"));
    setenv("FORGEYARD_IMAGE_CACHE", cache, 1);
    const char *argv[] = {"/bin/true", NULL};
    for (int i = 0; i < 2; i++) {
        mode_t um = umask(i == 0 ? 077 : 022);
        fy_policy *p = policy(FY_PROFILE_RELEASE);
        struct run r;
        run(p, argv, &r);
        umask(um);
        ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "run %d (umask %s): %s: %s", i, i == 0 ? "077" : "022",
                      fy_outcome_name((uint32_t)r.outcome), r.out);
        run_free(&r);
        fy_policy_free(p);
    }
    setenv("FORGEYARD_IMAGE_CACHE", old, 1);
    DIR *d = opendir(cache);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    char layers[1000] = "";
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "layers-", 7))
            snprintf(layers, sizeof(layers), "%s/%s", cache, de->d_name);
    closedir(d);
    ck_assert_msg(layers[0], "no shifted layers directory in %s", cache);
    struct stat st;
    ck_assert_int_eq(stat(layers, &st), 0);
    ck_assert_msg((st.st_mode & 07777) == 0700 && st.st_uid != 0, "%s: mode %o, owner %u", layers,
                  (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
            _exit(2);
        DIR *ld = opendir(layers);
        char probe[1100];
        snprintf(probe, sizeof(probe), "%s/x", layers);
        struct stat pst;
        _exit(!ld && errno == EACCES && stat(probe, &pst) < 0 && errno == EACCES ? 0 : 1);
    }
    int wst = 0;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "another user reached %s (%d)", layers,
                  WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
}
END_TEST

/* The attack helper inside the image: the same attacks fail as in the
 * namespace backend. */
START_TEST(test_attacks) {
    static const struct { const char *cmd, *arg, *denied; } attacks[] = {
        /* denied: the errno the attack must see; NULL: a reported violation */
        {"mknod", "/tmp/sda", "EPERM"}, {"ptrace-init", "", "EPERM"}, {"kill", "1", "EPERM"},
        {"read", "/proc/1/mem", "EACCES"}, {"bpf", "", "EPERM"}, {"keyctl", "", "EPERM"},
        {"unshare-user", "", "EPERM"}, {"io_uring", "", "ENOSYS"},
        {"mount", "", NULL}, {"remount", "", NULL}, {"init_module", "", NULL}, {"kexec", "", NULL},
        {"open_by_handle", "", NULL}, {"x32", "", NULL},
    };
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++) {
        const char *argv[] = {"/fy-attack", attacks[i].cmd, attacks[i].arg, NULL};
        struct run r;
        run(p, argv, &r);
        if (attacks[i].denied) {
            char want[64];
            snprintf(want, sizeof(want), "denied %s", attacks[i].denied);
            ck_assert_msg(strstr(r.out, want), "%s %s: want %s, got %s", attacks[i].cmd, attacks[i].arg, want, r.out);
        } else {
            ck_assert_msg(r.outcome == FY_OUTCOME_SANDBOX_VIOLATION, "%s: outcome %d: %s", attacks[i].cmd, r.outcome,
                          r.out);
        }
        run_free(&r);
    }
    fy_policy_free(p);
}
END_TEST

/* An image made by mkimage.py from spec (JSON) in scratch/name; its
 * reference in out. */
/* The sandbox's setup makes the plan's files and mount points in the
 * image's root (/etc/hosts, /etc/hostname, /run/secrets, /home/forgeyard,
 * /sys/fs/cgroup, ...) while the host's root is still mounted below it.
 * An image whose directories are links to the old root's mount point (its
 * former fixed name), to a magic link or out of the root must not get those
 * made on the host: each is resolved in the image's root, where such a
 * link leads nowhere (the attempt fails, typed) or stays inside. */
START_TEST(test_image_links_stay_inside) {
    char tgt[600];
    snprintf(tgt, sizeof(tgt), "%s/tgt", scratch);
    ck_assert_int_eq(mkdir(tgt, 0777), 0);
    ck_assert_int_eq(chmod(tgt, 0777), 0);
    /* (a prefix, then the host directory or nothing) */
    static const struct { const char *prefix; bool dir; } targets[] = {
        {"/.oldroot", true}, {"/proc/self/fd/3", false}, {"/proc/1/cwd/../../..", true}, {"../../..", true}};
    char secret[600];
    snprintf(secret, sizeof(secret), "%s/secret-value", scratch);
    FILE *f = fopen(secret, "w");
    fputs("s3cret\n", f);
    fclose(f);
    for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        char target[700], spec[4096], name[32], iref[1024];
        snprintf(target, sizeof(target), "%s%s", targets[t].prefix, targets[t].dir ? tgt : "");
        snprintf(spec, sizeof(spec),
                 "{\"config\": {\"Env\": [\"PATH=/bin\"]}, \"layers\": [{\"busybox\": true, \"entries\": ["
                 "{\"name\": \"etc\", \"type\": \"symlink\", \"target\": \"%s\"}, "
                 "{\"name\": \"run\", \"type\": \"symlink\", \"target\": \"%s\"}, "
                 "{\"name\": \"home\", \"type\": \"symlink\", \"target\": \"%s\"}, "
                 "{\"name\": \"sys\", \"type\": \"symlink\", \"target\": \"%s\"}]}]}",
                 target, target, target, target);
        snprintf(name, sizeof(name), "links%zu", t);
        make_image_from(name, spec, iref, sizeof(iref));
        fy_policy *p = policy(FY_PROFILE_RELEASE);
        fy_error *e = NULL;
        ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
        ck_assert_int_eq(fy_policy_add_secret_file(p, "token", FY_SECRET_FILE, "token", secret, NULL), 0);
        const char *argv[] = {"/bin/true", NULL};
        struct run r;
        run(p, argv, &r);
        /* (it may run or fail; what matters is the host) */
        DIR *d = opendir(tgt);
        ck_assert_ptr_nonnull(d);
        struct dirent *de;
        while ((de = readdir(d)))
            ck_assert_msg(de->d_name[0] == '.', "link %s: the setup made %s/%s on the host: %s", target, tgt,
                          de->d_name, r.json);
        closedir(d);
        uint64_t left = 99;
        ck_assert_int_eq(fy_result_cleanup(r.res, FY_LEFT_FILES, &left), 0);
        ck_assert_uint_eq(left, 0);
        run_free(&r);
        fy_policy_free(p);
    }
}
END_TEST

/* The count of entries in dir other than "." and "..": what the attempt
 * left there, listed in *names. */
static int entries_in(const char *dir, char *names, size_t size) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s: %s", dir, strerror(errno));
    struct dirent *de;
    int n = 0;
    names[0] = '\0';
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            n++;
            size_t l = strlen(names);
            snprintf(names + l, size - l, " %s", de->d_name);
        }
    closedir(d);
    return n;
}

/* The mount points the sandbox makes after the workspace binds (the
 * /run/secrets tmpfs, /sys/fs/cgroup, a bind's target, a file bind's, an
 * image's WorkingDir) reached through an image's links (or named) into
 * /work/build or /work/output: init made them in the host's directories,
 * as the range's root (0555 for /sys/fs/cgroup), and left them there with
 * files_left 0. Nothing is ever made in a host-backed directory: the
 * attempt fails, typed, naming the path (or runs where the plan has no
 * such mount point), and the host's directories hold nothing new. */
START_TEST(test_image_links_into_workspace) {
    char build[600], output[600], bdir[600], bfile[600], secret[600];
    snprintf(build, sizeof(build), "%s/ws-build", scratch);
    snprintf(output, sizeof(output), "%s/ws-output", scratch);
    snprintf(bdir, sizeof(bdir), "%s/ws-bind", scratch);
    snprintf(bfile, sizeof(bfile), "%s/ws-bind-file", scratch);
    snprintf(secret, sizeof(secret), "%s/ws-secret", scratch);
    const char *dirs[] = {build, output, bdir};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(mkdir(dirs[i], 0777), 0);
        ck_assert_int_eq(chmod(dirs[i], 0777), 0); /* (anyone may make files there: the old code did) */
    }
    FILE *f = fopen(secret, "w");
    fputs("s3cret\n", f);
    fclose(f);
    f = fopen(bfile, "w");
    fputs("bound\n", f);
    fclose(f);
    static const struct {
        const char *name, *entries, *config, *path; /* path: what a failure names */
        int what;                                   /* 1 a secret file, 2 a directory bind, 3 a file bind */
        bool may_run;                               /* (no such mount point in some plans) */
    } cases[] = {
        {"ws-run", "{\"name\": \"run\", \"type\": \"symlink\", \"target\": \"/work/build\"}", "", "/run/secrets", 1, false},
        {"ws-sys", "{\"name\": \"sys\", \"type\": \"symlink\", \"target\": \"/work/output\"}", "", "/sys/fs/cgroup", 0, true},
        {"ws-opt", "{\"name\": \"opt\", \"type\": \"symlink\", \"target\": \"/work/build\"}", "", "/opt/b", 2, false},
        {"ws-optf", "{\"name\": \"opt\", \"type\": \"symlink\", \"target\": \"/work/output\"}", "", "/opt/f", 3, false},
        {"ws-wd", "{\"name\": \"bin/x\", \"data\": \"\"}", ", \"WorkingDir\": \"/work/build/wd\", \"Cmd\": [\"/bin/true\"]",
         "/work/build/wd", 0, false},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char spec[2048], iref[1024];
        snprintf(spec, sizeof(spec),
                 "{\"config\": {\"Env\": [\"PATH=/bin\"]%s}, \"layers\": [{\"busybox\": true, \"entries\": [%s]}]}",
                 cases[c].config, cases[c].entries);
        make_image_from(cases[c].name, spec, iref, sizeof(iref));
        fy_policy *p = policy(FY_PROFILE_RELEASE);
        fy_error *e = NULL;
        ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
        ck_assert_msg(fy_policy_set_build(p, build, &e) == 0, "%s", fy_error_message(e));
        ck_assert_msg(fy_policy_set_output(p, output, &e) == 0, "%s", fy_error_message(e));
        if (cases[c].what == 1)
            ck_assert_int_eq(fy_policy_add_secret_file(p, "token", FY_SECRET_FILE, "token", secret, NULL), 0);
        if (cases[c].what == 2)
            ck_assert_msg(fy_policy_add_bind(p, bdir, "/opt/b", FY_BIND_READ_ONLY, &e) == 0, "%s", fy_error_message(e));
        if (cases[c].what == 3)
            ck_assert_msg(fy_policy_add_bind(p, bfile, "/opt/f", FY_BIND_READ_ONLY, &e) == 0, "%s", fy_error_message(e));
        const char *argv[] = {"/bin/true", NULL};
        struct run r;
        run(p, cases[c].config[0] ? NULL : argv, &r);
        char names[1024];
        ck_assert_msg(entries_in(build, names, sizeof(names)) == 0, "%s: the setup made%s in the host's build directory: %s",
                      cases[c].name, names, r.json);
        ck_assert_msg(entries_in(output, names, sizeof(names)) == 0, "%s: the setup made%s in the host's output directory: %s",
                      cases[c].name, names, r.json);
        ck_assert_msg(entries_in(bdir, names, sizeof(names)) == 0, "%s: %s", cases[c].name, names);
        const char *detail = fy_result_detail(r.res);
        ck_assert_msg((r.outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE && detail && strstr(detail, cases[c].path)) ||
                          (cases[c].may_run && r.outcome == FY_OUTCOME_SUCCEEDED),
                      "%s: outcome %d: %s / %s", cases[c].name, r.outcome, r.out, r.json);
        uint64_t left = 99;
        ck_assert_int_eq(fy_result_cleanup(r.res, FY_LEFT_FILES, &left), 0);
        ck_assert_uint_eq(left, 0);
        run_free(&r);
        fy_policy_free(p);
    }
}
END_TEST

/* An image's Env the kernel would refuse to execute with (E2BIG: more
 * than it takes in all, or one variable longer than it takes) ended the
 * attempt as an infrastructure failure, which a scheduler retries on
 * another host forever; the image (the untrusted input) is refused at
 * fy_prepare instead, naming its Env, under the policy's own bound on the
 * environment (1 MiB, forgeyard-policy(5)). */
START_TEST(test_image_env_bounded) {
    for (int big = 0; big < 2; big++) {
        /* (20000 variables of 120 bytes: 2.4 MB in all; or one of 200 KiB) */
        size_t n = big ? 1 : 20000, len = big ? 200 * 1024 : 120, cap = n * (len + 8) + 1024, at = 0;
        char *spec = malloc(cap), iref[1024];
        ck_assert_ptr_nonnull(spec);
        at += (size_t)snprintf(spec, cap, "{\"config\": {\"Env\": [\"PATH=/bin\"");
        for (size_t i = 0; i < n; i++) {
            at += (size_t)snprintf(spec + at, cap - at, ", \"V%05zu=", i);
            memset(spec + at, 'x', len - 7);
            at += len - 7;
            spec[at++] = '"';
        }
        snprintf(spec + at, cap - at, "]}, \"layers\": [{\"busybox\": true}]}");
        make_image_from(big ? "bigvar" : "bigenv", spec, iref, sizeof(iref));
        free(spec);
        fy_policy *p = policy(FY_PROFILE_RELEASE);
        fy_error *e = NULL;
        ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
        const char *argv[] = {"/bin/true", NULL};
        fy_prepared *pr = NULL;
        int rc = fy_prepare(p, NULL, argv, &pr, &e);
        if (rc == 0) {
            /* (the old code: what the start made of it) */
            struct run r;
            run(p, argv, &r);
            ck_assert_msg(0, "%s: an image's oversized Env was prepared; the run: outcome %d: %s",
                          big ? "one 200 KiB variable" : "2.4 MB of Env", r.outcome, fy_result_detail(r.res));
        }
        ck_assert_int_eq(rc, FY_E_RANGE);
        ck_assert_int_eq(fy_error_step(e), FY_STEP_IMAGE);
        ck_assert_msg(strstr(fy_error_message(e), "Env"), "%s", fy_error_message(e));
        fy_error_free(e);
        fy_policy_free(p);
    }
}
END_TEST

/* A layer whose root is opaque (".wh..wh..opq" at its top) hides every
 * layer below it, as the OCI layer format says; overlayfs ignores the
 * opaque mark on a lower layer's root, so those layers are not mounted. */
START_TEST(test_opaque_root_layer) {
    char iref[1024], spec[2048];
    snprintf(spec, sizeof(spec),
             "{\"config\": {\"Env\": [\"PATH=/bin\"]}, \"layers\": [{\"busybox\": true, \"entries\": ["
             "{\"name\": \"secretfile\", \"data\": \"lower\"}]}, {\"entries\": ["
             "{\"name\": \".wh..wh..opq\", \"data\": \"\"}, {\"name\": \"bin/busybox\", \"from\": \"/bin/busybox\", "
             "\"mode\": 493}, {\"name\": \"bin/sh\", \"type\": \"symlink\", \"target\": \"busybox\"}]}]}");
    make_image_from("opaqueroot", spec, iref, sizeof(iref));
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    const char *argv[] = {"/bin/sh", "-c", "test -e /secretfile && echo SECRET-SEEN; /bin/busybox ls /bin | /bin/busybox wc -l", NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ck_assert_msg(!strstr(r.out, "SECRET-SEEN"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "2\n"), "only the top layer's /bin: %s", r.out);
    assert_image_layers(r.json, 2, 1); /* (the image's two, the hidden one not mounted) */
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* A whiteout hides the lower layers only (the OCI layer spec), whatever
 * the order in its layer: ".wh.d" then "d/" replaces the lower d whole (its
 * files showed through again), "e/", "e/new" then ".wh.e" keeps this
 * layer's e and hides the lower one's files (the image was refused). */
START_TEST(test_whiteout_and_new_dir_in_one_layer) {
    char iref[1024], spec[2048];
    snprintf(spec, sizeof(spec),
             "{\"config\": {\"Env\": [\"PATH=/bin\"]}, \"layers\": [{\"busybox\": true, \"entries\": ["
             "{\"name\": \"d/secret\", \"data\": \"deleted\"}, {\"name\": \"e/old\", \"data\": \"deleted\"}]}, "
             "{\"entries\": [{\"name\": \".wh.d\", \"data\": \"\"}, {\"name\": \"d\", \"type\": \"dir\"}, "
             "{\"name\": \"d/new\", \"data\": \"new\"}, {\"name\": \"e\", \"type\": \"dir\"}, "
             "{\"name\": \"e/new\", \"data\": \"new\"}, {\"name\": \".wh.e\", \"data\": \"\"}]}]}");
    make_image_from("whiteoutdir", spec, iref, sizeof(iref));
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    const char *argv[] = {"/bin/sh", "-c", "echo D: $(ls /d); echo E: $(ls /e)", NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ck_assert_msg(strstr(r.out, "D: new\n") && strstr(r.out, "E: new\n"), "%s", r.out);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* An image's WorkingDir of /proc/self/cwd (refused with the config since
 * the thirty-eighth session), or a link to it: the workload
 * was forked before the root was built and kept the host process's working
 * directory, which pivot_root does not move, so that magic link gave it the
 * host's directory and, by relative paths, the host's whole mount tree
 * (its unix sockets under network deny). The host's working directory here
 * holds a marker; the workload must never find it. */
START_TEST(test_image_workdir_magic_link) {
    char host[] = "/tmp/fy-hostcwd-XXXXXX", marker[64], old[4096];
    ck_assert_ptr_nonnull(mkdtemp(host));
    ck_assert_int_eq(chmod(host, 0755), 0); /* (searchable by the sandbox's ids, as a build tree is) */
    snprintf(marker, sizeof(marker), "%s/host-cwd-marker", host);
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_ptr_nonnull(getcwd(old, sizeof(old)));
    static const char *const specs[][2] = {
        {"magicwd", "{\"config\": {\"Env\": [\"PATH=/bin\"], \"Cmd\": [\"/bin/sh\", \"-c\", "
                    "\"[ -e host-cwd-marker ] && echo FOUND-IT; ls\"], \"WorkingDir\": \"/proc/self/cwd\"}, \"layers\": [{\"busybox\": true}]}"},
        {"linkwd", "{\"config\": {\"Env\": [\"PATH=/bin\"], \"Cmd\": [\"/bin/sh\", \"-c\", "
                   "\"[ -e host-cwd-marker ] && echo FOUND-IT; ls\"], \"WorkingDir\": \"/wd\"}, \"layers\": [{\"busybox\": true, \"entries\": [{\"name\": \"wd\", "
                   "\"type\": \"symlink\", \"target\": \"/proc/self/cwd\"}]}]}"},
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        char iref[1024];
        make_image_from(specs[i][0], specs[i][1], iref, sizeof(iref));
        fy_policy *p = policy(FY_PROFILE_RELEASE);
        fy_error *e = NULL;
        ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
        if (i == 0) {
            /* (a WorkingDir in /proc is refused with the image's config) */
            fy_prepared *pr = NULL;
            ck_assert_int_lt(fy_prepare(p, NULL, NULL, &pr, &e), 0);
            ck_assert_msg(strstr(fy_error_message(e), "is in /proc"), "%s", fy_error_message(e));
            fy_error_free(e);
            fy_policy_free(p);
            continue;
        }
        ck_assert_int_eq(chdir(host), 0);
        struct run r;
        run(p, NULL, &r);
        ck_assert_int_eq(chdir(old), 0);
        ck_assert_msg(!strstr(r.out, "FOUND-IT"), "%s: the workload found the host's working directory: %s",
                      specs[i][0], r.out);
        /* (refused on the magic link where openat2 is let through; else the
         * link names the sandbox's own root, its working directory by then) */
        ck_assert_msg((r.outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE && strstr(r.json, "the working directory")) ||
                          (r.outcome == FY_OUTCOME_SUCCEEDED && strstr(r.out, "\ndev\n")),
                      "%s: %s / %s", specs[i][0], r.out, r.json);
        run_free(&r);
        fy_policy_free(p);
    }
    unlink(marker);
    rmdir(host);
}
END_TEST

/* Images as registries hold them: a layer twice (the same COPY twice: one
 * directory in the cache) runs, recorded as the image's two layers, one
 * mounted; a WorkingDir the image lacks is made, as
 * OCI runtimes do; one that is a file fails naming the directory, not the
 * command; a User that is not a string is refused, never read as absent. */
START_TEST(test_image_config_edges) {
    char iref[1024];
    make_image_from("duplayer", "{\"config\": {\"Env\": [\"PATH=/bin\"]}, \"layers\": [{\"busybox\": true}, "
                                "{\"busybox\": true}]}", iref, sizeof(iref));
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    const char *argv[] = {"/bin/echo", "dup-ok", NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ASSERT_OUT(&r, "dup-ok");
    assert_image_layers(r.json, 2, 1);
    run_free(&r);
    fy_policy_free(p);
    make_image_from("nowd", "{\"config\": {\"Env\": [\"PATH=/bin\"], \"Cmd\": [\"/bin/pwd\"], "
                            "\"WorkingDir\": \"/made/by/runtime\"}, \"layers\": [{\"busybox\": true}]}",
                    iref, sizeof(iref));
    p = policy(FY_PROFILE_RELEASE);
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    run(p, NULL, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ASSERT_OUT(&r, "/made/by/runtime\n");
    run_free(&r);
    fy_policy_free(p);
    make_image_from("filewd", "{\"config\": {\"Env\": [\"PATH=/bin\"], \"Cmd\": [\"/bin/true\"], "
                              "\"WorkingDir\": \"/bin/busybox\"}, \"layers\": [{\"busybox\": true}]}",
                    iref, sizeof(iref));
    p = policy(FY_PROFILE_RELEASE);
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    run(p, NULL, &r);
    ck_assert_int_eq(r.outcome, FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(r.json, "the working directory /bin/busybox: Not a directory"), "%s", r.json);
    run_free(&r);
    fy_policy_free(p);
    /* The image's PATH wins over the profile's default one (golang, rust,
     * JDK images put their tools on it); a PATH the caller sets wins over
     * the image's. */
    make_image_from("imgpath", "{\"config\": {\"Env\": [\"PATH=/opt/tools:/bin\"], \"Cmd\": [\"mytool\"]}, "
                               "\"layers\": [{\"busybox\": true, \"entries\": [{\"name\": \"opt/tools/mytool\", "
                               "\"data\": \"#!/bin/sh\\necho tool-ran PATH=$PATH\\n\", \"mode\": 493}]}]}",
                    iref, sizeof(iref));
    p = policy(FY_PROFILE_RELEASE);
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    run(p, NULL, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ASSERT_OUT(&r, "tool-ran PATH=/opt/tools:/bin\n");
    run_free(&r);
    ck_assert_int_eq(fy_policy_set_env(p, "PATH", "/usr/bin:/bin", &e), 0);
    run(p, NULL, &r);
    ck_assert_int_eq(r.outcome, FY_OUTCOME_INFRASTRUCTURE_FAILURE); /* mytool is not on the caller's PATH */
    run_free(&r);
    fy_policy_free(p);
    /* A name the image's Env lists twice: once, its last value (both went
     * through: getenv read the first, the command's PATH search the last). */
    make_image_from("dupenv", "{\"config\": {\"Env\": [\"PATH=/nowhere\", \"DUP=a\", \"PATH=/bin\", \"DUP=b\"], "
                              "\"Cmd\": [\"sh\", \"-c\", \"echo DUP=$DUP PATH=$PATH; env | grep -c ^DUP=\"]}, "
                              "\"layers\": [{\"busybox\": true}]}",
                    iref, sizeof(iref));
    p = policy(FY_PROFILE_RELEASE);
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    run(p, NULL, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ck_assert_str_eq(r.out, "DUP=b PATH=/bin\n1\n");
    run_free(&r);
    fy_policy_free(p);
    make_image_from("numuser", "{\"config\": {\"Env\": [\"PATH=/bin\"], \"User\": 0}, \"layers\": [{\"busybox\": true}]}",
                    iref, sizeof(iref));
    p = policy(FY_PROFILE_RELEASE);
    ck_assert_int_eq(fy_policy_set_image(p, iref, &e), 0);
    const char *t[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, t, &pr, &e), FY_E_INVAL);
    ck_assert_msg(strstr(fy_error_message(e), "malformed"), "%s", fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* An image's own /etc/hosts and /etc/hostname (most distribution images
 * have them) are replaced by the sandbox's, a link where /etc/resolv.conf
 * is stays untouched, and the attempt runs. */
START_TEST(test_image_etc_files_replaced) {
    char iref[1024];
    make_image_from("etcfiles",
                    "{\"config\": {\"Env\": [\"PATH=/bin\"]}, \"layers\": [{\"busybox\": true, \"entries\": ["
                    "{\"name\": \"etc/hosts\", \"data\": \"10.9.8.7 from-image\\n\"}, "
                    "{\"name\": \"etc/hostname\", \"data\": \"image-host\\n\"}, "
                    "{\"name\": \"etc/resolv.conf\", \"type\": \"symlink\", \"target\": "
                    "\"../run/systemd/resolve/stub-resolv.conf\"}]}]}",
                    iref, sizeof(iref));
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_set_image(p, iref, &e) == 0, "%s", fy_error_message(e));
    const char *argv[] = {"/bin/sh", "-c", "cat /etc/hosts /etc/hostname; readlink /etc/resolv.conf", NULL};
    struct run r;
    run(p, argv, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "%s / %s", r.out, r.json);
    ASSERT_OUT(&r, "127.0.0.1");
    ASSERT_OUT(&r, "forgeyard\n");
    ASSERT_OUT(&r, "../run/systemd/resolve/stub-resolv.conf");
    ck_assert_msg(!strstr(r.out, "from-image") && !strstr(r.out, "image-host"), "%s", r.out);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

static void make_image_from(const char *name, const char *spec, char *out_ref, size_t reflen) {
    char specpath[512], cmd[2048], out[512];
    snprintf(specpath, sizeof(specpath), "%s/%s.json", scratch, name);
    snprintf(out, sizeof(out), "%s/%s", scratch, name);
    FILE *f = fopen(specpath, "w");
    fputs(spec, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s'", mkimage, out, specpath);
    FILE *pp = popen(cmd, "r");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, pp);
    buf[n] = '\0';
    if (pclose(pp) != 0) {
        fprintf(stderr, "mkimage failed\n");
        exit(1);
    }
    json_t *j = json_loads(buf, 0, NULL);
    snprintf(out_ref, reflen, "oci:%s@%s", out, json_string_value(json_object_get(j, "manifest")));
    json_decref(j);
}

static void make_image(void) {
    char spec[4096];
    snprintf(spec, sizeof(spec),
             "{\"config\": {\"Env\": [\"PATH=/bin\", \"IMG=image\", \"ONLY=image\"], \"Cmd\": [\"/bin/sh\", \"-c\", "
             "\"echo cmd-from-image in $(pwd)\"], \"WorkingDir\": \"/srv\", \"User\": \"0\"}, "
             "\"layers\": [{\"busybox\": true}, {\"entries\": [{\"name\": \"etc/motd\", \"data\": "
             "\"hello from the image\\n\"}, {\"name\": \"srv\", \"type\": \"dir\"}, {\"name\": \"fy-attack\", "
             "\"from\": \"%s\", \"mode\": 493}]}]}", attack);
    make_image_from("img", spec, ref, sizeof(ref));
    snprintf(digest, sizeof(digest), "%s", strrchr(ref, '@') + 1);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MKIMAGE.PY FY-ATTACK [--rootless]\n", argv[0]);
        return 2;
    }
    mkimage = argv[1];
    attack = argv[2];
    bool want_rootless = argc > 3 && strcmp(argv[3], "--rootless") == 0;
    if (want_rootless && getuid() == 0) {
        char tmpl[] = "/tmp/fy-ctr-rootless-XXXXXX";
        if (!mkdtemp(tmpl) || chown(tmpl, 65534, 65534) < 0 || chmod(tmpl, 0755) < 0)
            return 1;
        /* The helper must be readable by uid 65534. */
        char cp[512];
        snprintf(cp, sizeof(cp), "cp '%s' '%s/fy-attack' && chmod 755 '%s/fy-attack'", attack, tmpl, tmpl);
        if (system(cp) != 0)
            return 1;
        setenv("FY_CTR_SCRATCH", tmpl, 1);
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
        snprintf(cp, sizeof(cp), "rm -rf '%s'", tmpl);
        if (system(cp) != 0)
            return 1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (want_rootless && !getenv("FY_CTR_SCRATCH"))
        return 77;
    rootless = getuid() != 0;
    const char *given = getenv("FY_CTR_SCRATCH");
    if (given) {
        snprintf(scratch, sizeof(scratch), "%s", given);
        static char a[600];
        snprintf(a, sizeof(a), "%s/fy-attack", given);
        attack = a;
    } else {
        snprintf(scratch, sizeof(scratch), "/tmp/fy-ctr-XXXXXX");
        if (!mkdtemp(scratch) || chmod(scratch, 0755) < 0)
            return 1;
    }
    char cache[600];
    snprintf(cache, sizeof(cache), "%s/cache", scratch);
    setenv("FORGEYARD_IMAGE_CACHE", cache, 1);
    make_image();
    Suite *s = suite_create(rootless ? "container-rootless" : "container");
    TCase *tc = tcase_create("container");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_policy_rules);
    tcase_add_test(tc, test_run);
    tcase_add_test(tc, test_bind_under_runtime_path);
    tcase_add_test(tc, test_root_is_mapped);
    tcase_add_test(tc, test_disk_upper);
    tcase_add_test(tc, test_disk_upper_bounded);
    tcase_add_test(tc, test_host_paths_under_tmp);
    tcase_add_test(tc, test_attacks);
    tcase_add_test(tc, test_overlay_probed);
    tcase_add_test(tc, test_cache_private_and_umask_free);
    tcase_add_test(tc, test_gc_keeps_held); /* it empties the cache: the images below make their own */
    tcase_add_test(tc, test_image_links_stay_inside);
    tcase_add_test(tc, test_image_etc_files_replaced);
    tcase_add_test(tc, test_opaque_root_layer);
    tcase_add_test(tc, test_whiteout_and_new_dir_in_one_layer);
    tcase_add_test(tc, test_image_config_edges);
    tcase_add_test(tc, test_image_workdir_magic_link);
    tcase_add_test(tc, test_image_links_into_workspace);
    tcase_add_test(tc, test_image_env_bounded);
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
