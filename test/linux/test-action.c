/* Hermetic actions (fy-action.h), run for real: declared outputs come back
 * with the right digests, the input root is never changed whatever the
 * action does, undeclared writes reach nothing the host keeps, hostile
 * outputs and hostile archives are refused with typed results, platform
 * properties only tighten. As root, and with --rootless as uid 65534.
 * Every test runs twice: with the execution root the backend mounts as an
 * overlay of the input directory where this host can (tcase "actions"),
 * and with it materialised file by file (tcase "materialised"). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <sodium.h>

#include <forgeyard/sandbox.h>

#include "policy.h" /* policy_test_no_build_overlay: tests only */
void tree_noacl_forget(void); /* lib/action.h: the no-ACL memo, emptied */

static char scratch[64];
static bool rootless;
static int counter;
/* This host mounts an action's input directory as an overlay: the
 * container level is usable (the probe's overlay works) and the kernel
 * names overlay layers by fd (6.13). */
static bool overlay_here;
/* The tcase "materialised": the attempt is told not to ask for it. */
static bool materialise;
static void set_materialise(void) { materialise = true; }

/* ---- helpers ---- */

/* A new path in the scratch directory: name-PID-N (suffix appended; each
 * test runs in its own forked process). */
static char *path_in(const char *name, const char *suffix) {
    char *p = NULL;
    if (asprintf(&p, "%s/%s-%d-%d%s", scratch, name, (int)getpid(), ++counter, suffix) < 0)
        abort();
    return p;
}

static void write_file(const char *path, const char *content, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    chmod(path, mode);
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void sha_hex(const void *data, size_t len, char out[72]) {
    unsigned char d[32];
    crypto_hash_sha256(d, data, len);
    memcpy(out, "sha256:", 7);
    sodium_bin2hex(out + 7, 65, d, 32);
}

/* An input root: src/a.c, src/b.h, tool.sh (executable), link -> src/a.c,
 * empty dir, all readable by everyone, owned by the caller. */
static char *make_input(void) {
    char *d = path_in("in", "");
    char sub[512];
    ck_assert_int_eq(mkdir(d, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/src", d);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/empty", d);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/src/a.c", d);
    write_file(sub, "int main(void) { return 0; }\n", 0644);
    snprintf(sub, sizeof(sub), "%s/src/b.h", d);
    write_file(sub, "#define B 1\n", 0644);
    snprintf(sub, sizeof(sub), "%s/tool.sh", d);
    write_file(sub, "#!/bin/sh\necho tool\n", 0755);
    snprintf(sub, sizeof(sub), "%s/link", d);
    ck_assert_int_eq(symlink("src/a.c", sub), 0);
    return d;
}

/* A digest of a whole tree: names, types, modes, owners, sizes, contents
 * and link targets, in sorted order. */
static void tree_digest_rec(crypto_hash_sha256_state *st, const char *dir) {
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    ck_assert_int_ge(n, 0);
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (strcmp(name, ".") && strcmp(name, "..")) {
            char p[1024];
            snprintf(p, sizeof(p), "%s/%s", dir, name);
            struct stat s;
            ck_assert_int_eq(lstat(p, &s), 0);
            char meta[256];
            snprintf(meta, sizeof(meta), "%s|%o|%u|%u|%lld|%lld.%09ld\n", name, (unsigned)s.st_mode, (unsigned)s.st_uid,
                     (unsigned)s.st_gid, (long long)s.st_size, (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
            crypto_hash_sha256_update(st, (const unsigned char *)meta, strlen(meta));
            if (S_ISDIR(s.st_mode)) {
                tree_digest_rec(st, p);
            } else if (S_ISLNK(s.st_mode)) {
                char t[1024];
                ssize_t k = readlink(p, t, sizeof(t));
                ck_assert_int_ge(k, 0);
                crypto_hash_sha256_update(st, (const unsigned char *)t, (size_t)k);
            } else if (S_ISREG(s.st_mode)) {
                char *c = read_all(p);
                ck_assert_ptr_nonnull(c);
                crypto_hash_sha256_update(st, (const unsigned char *)c, strlen(c));
                free(c);
            }
        }
        free(list[i]);
    }
    free(list);
}

static void tree_digest(const char *dir, unsigned char out[32]) {
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    tree_digest_rec(&st, dir);
    crypto_hash_sha256_final(&st, out);
}

static fy_policy *policy(void) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    if (materialise)
        policy_test_no_build_overlay(p);
    return p;
}

/* Whether a directory input root is mounted as an overlay in this tcase. */
static bool overlaid(void) { return overlay_here && !materialise; }

/* The result says which path made the execution root, and it is the one
 * expected here. */
static void assert_root(const char *j, bool overlay) {
    ck_assert_msg(strstr(j, overlay ? "\"root\": \"overlay\"" : "\"root\": \"materialised\""), "%s", j);
}

/* Nothing of the attempt is mounted in the host's namespace. */
static void assert_no_mount_of(const char *dir) {
    char *m = read_all("/proc/self/mountinfo");
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(!strstr(m, dir), "a mount under %s: %s", dir, m);
    ck_assert_msg(!strstr(m, "forgeyard-action-"), "an attempt's mount: %s", m);
    free(m);
}

/* An action on the input directory input: body is the rest of the document. */
static fy_action *action_json(const char *body, const char *input) {
    char *doc = NULL;
    ck_assert_int_ge(asprintf(&doc, "{\"version\": 1, \"input_root\": {\"directory\": \"%s\"}, %s", input, body), 0);
    fy_action *a = NULL;
    fy_error *err = NULL;
    int r = fy_action_from_json(doc, strlen(doc), &a, &err);
    if (r < 0)
        fprintf(stderr, "action: %s: %s\n", fy_error_location(err), fy_error_message(err));
    ck_assert_int_eq(r, 0);
    free(doc);
    return a;
}

static fy_action_result *run(fy_action *a, fy_policy *p) {
    fy_action_result *res = NULL;
    fy_error *err = NULL;
    int r = fy_action_run(a, p, NULL, &res, &err);
    if (r < 0)
        fprintf(stderr, "action run: %s: %s\n", fy_error_location(err) ? fy_error_location(err) : "",
                fy_error_message(err));
    ck_assert_int_eq(r, 0);
    fy_error_free(err);
    return res;
}

static char *result_json(const fy_action_result *res) {
    char *j = NULL;
    int r = fy_action_result_to_json(res, &j, NULL);
    ck_assert_int_eq(r, 0);
    char *copy = strdup(j);
    free(j);
    ck_assert_ptr_nonnull(copy);
    return copy;
}

/* No attempt directory of ours is left in the scratch directory. */
static void assert_no_attempt_left(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)))
        ck_assert_msg(strncmp(de->d_name, "forgeyard-action-", 17) != 0, "left behind: %s/%s", dir, de->d_name);
    closedir(d);
}

static char *make_dir(const char *name) {
    char *d = path_in(name, "");
    ck_assert_int_eq(mkdir(d, 0755), 0);
    return d;
}


/* ---- the contract ---- */

/* The attempt directory of a host killed during an action (its execution
 * root, outputs, spools) is removed by the next action's start in the
 * same scratch directory, as by fy_gc: nothing else recorded it, and it
 * stayed for good. A live host's is left alone. */
START_TEST(test_killed_host_dir_swept) {
    char *in = make_input(), *sc = make_dir("scratch-kill"), *state = make_dir("state-kill");
    ck_assert_int_eq(chmod(state, 0700), 0);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t host = fork();
    ck_assert_int_ge(host, 0);
    if (host == 0) {
        fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\", \"mkdir -p out; echo SECRET > out/f; "
                                   "sleep 60\"], \"environment\": {\"PATH\": \"/usr/bin:/bin\"}}", in);
        fy_action_set_scratch_directory(a, sc, NULL);
        fy_policy *p = policy();
        fy_policy_set_state_dir(p, state, NULL);
        fy_action_attempt *att = NULL;
        if (fy_action_start(a, p, NULL, &att, NULL) < 0)
            _exit(3);
        (void)!write(ready[1], "r", 1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    /* Another host's live attempt in the same directory: left alone. */
    fy_action *live = action_json("\"arguments\": [\"/bin/true\"]}", in);
    fy_action_set_scratch_directory(live, sc, NULL);
    fy_policy *p = policy();
    fy_action_result *res = run(live, p);
    ck_assert_int_eq(fy_action_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    fy_action_result_free(res);
    int n = 0;
    DIR *d = opendir(sc);
    struct dirent *de;
    while ((de = readdir(d)))
        n += !strncmp(de->d_name, "forgeyard-action-", 17);
    closedir(d);
    ck_assert_msg(n == 1, "%d attempt directories while a host runs its action (want its one)", n);
    kill(host, SIGKILL);
    int st;
    ck_assert_int_eq(waitpid(host, &st, 0), host);
    usleep(300000); /* (its sandbox ends with it) */
    res = run(live, p);
    ck_assert_int_eq(fy_action_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    fy_action_result_free(res);
    d = opendir(sc);
    n = 0;
    while ((de = readdir(d)))
        n += !strncmp(de->d_name, "forgeyard-action-", 17);
    closedir(d);
    ck_assert_msg(n == 0, "%d attempt directories left by a killed host after the next start", n);
    fy_action_free(live);
    fy_policy_free(p);
    ck_assert_int_eq(fy_gc(state, 0, NULL, NULL), 0); /* (the killed host's sandbox, as a restarted host would) */
    free(in);
    free(sc);
    free(state);
}
END_TEST

START_TEST(test_outputs_and_digests) {
    char *in = make_input(), *out = path_in("out", ""), *sc = make_dir("scratch");
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"mkdir -p gen/sub && printf hello > gen/x && cp tool.sh bin/t && "
        "printf deep > gen/sub/y && ln -s x gen/l && printf junk > stray && echo out; echo err >&2\"],"
        "\"environment\": {\"PATH\": \"/usr/bin:/bin\"},"
        "\"outputs\": {\"files\": [\"bin/t\", \"missing/file\"], \"directories\": [\"gen\"]}}", in);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    ck_assert_int_eq(fy_action_result_exit_code(res), 0);
    char hx[72], line[400];
    sha_hex("hello", 5, hx);
    snprintf(line, sizeof(line), "\"path\": \"gen/x\",\n      \"digest\": \"%s\",\n      \"size_bytes\": 5", hx);
    ck_assert_msg(strstr(j, line), "%s", j);
    sha_hex("#!/bin/sh\necho tool\n", 20, hx);
    snprintf(line, sizeof(line), "\"path\": \"bin/t\",\n      \"digest\": \"%s\",\n      \"size_bytes\": 20,\n"
             "      \"is_executable\": true", hx);
    ck_assert_msg(strstr(j, line), "%s", j);
    ck_assert_msg(strstr(j, "\"path\": \"gen/l\",\n      \"target\": \"x\""), "%s", j);
    ck_assert_msg(strstr(j, "\"path\": \"missing/file\",\n      \"why\": \"not made\""), "%s", j);
    ck_assert_msg(strstr(j, "\"paths\": [\n      \"stray\"\n    ]"), "%s", j);
    sha_hex("out\n", 4, hx);
    ck_assert_msg(strstr(j, hx), "stdout digest: %s", j);
    /* The copies in the output directory, and nothing else. */
    char p2[512];
    snprintf(p2, sizeof(p2), "%s/gen/x", out);
    char *c = read_all(p2);
    ck_assert_str_eq(c, "hello");
    free(c);
    snprintf(p2, sizeof(p2), "%s/gen/sub/y", out);
    c = read_all(p2);
    ck_assert_str_eq(c, "deep");
    free(c);
    struct stat st;
    snprintf(p2, sizeof(p2), "%s/bin/t", out);
    ck_assert_int_eq(stat(p2, &st), 0);
    ck_assert(st.st_mode & 0100);
    snprintf(p2, sizeof(p2), "%s/stray", out);
    ck_assert_int_ne(access(p2, F_OK), 0);
    snprintf(p2, sizeof(p2), "%s/src", out);
    ck_assert_int_ne(access(p2, F_OK), 0);
    /* a declared output not made leaves not even its directory */
    snprintf(p2, sizeof(p2), "%s/missing", out);
    ck_assert_int_ne(access(p2, F_OK), 0);
    /* As root, readable inputs owned by nobody the sandbox maps are linked
     * (materialised); an overlay links and copies nothing. */
    assert_root(j, overlaid());
    if (!rootless && !overlaid())
        ck_assert_msg(strstr(j, "\"linked\": 3"), "%s", j);
    else
        ck_assert_msg(strstr(j, "\"linked\": 0"), "%s", j);
    if (overlaid())
        ck_assert_msg(strstr(j, "\"copied\": 0"), "%s", j);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(out); free(sc);
}
END_TEST

/* Declared outputs never overlap: a path, its parents and what is below
 * it, whatever the order they come in and whatever sorts between them
 * ("a-x" and "a.c" sort between "a" and "a/b"). */
START_TEST(test_output_overlaps) {
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_new(&a, NULL), 0);
    static const struct { const char *path; bool ok; } seq[] = {
        {"a-x", true}, {"a.c", true}, {"a", true}, {"a/b", false}, {"a", false}, {"a0", true},
        {"b/c/d", true}, {"b", false}, {"b/c", false}, {"b/c/d/e", false}, {"b/c-d", true}, {"b/cd", true},
        {"c/x", true}, {"c/y", true}, {"c", false}, {"ab/c", true},
    };
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        fy_error *e = NULL;
        int r = fy_action_add_output(a, seq[i].path, FY_OUTPUT_ANY, &e);
        ck_assert_msg((r == 0) == seq[i].ok, "%s: %d %s", seq[i].path, r, e ? fy_error_message(e) : "accepted");
        fy_error_free(e);
    }
    fy_action_free(a);
}
END_TEST

/* Refused before anything runs: stdout and stderr kept in one file (the
 * command ran, then stderr could not be kept and the stdout file was left),
 * a scratch directory inside the input root (the copy held itself until
 * the path was too long). */
START_TEST(test_refused_before_run) {
    char *in = make_input(), *same = path_in("same-out", ""), *inner = NULL;
    ck_assert_int_ge(asprintf(&inner, "%s/scratch-in", in), 0);
    fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\", \"echo ran\"]}", in);
    ck_assert_int_eq(fy_action_set_stdio_path(a, 1, same, NULL), 0);
    ck_assert_int_eq(fy_action_set_stdio_path(a, 2, same, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = NULL;
    fy_error *err = NULL;
    ck_assert_int_eq(fy_action_run(a, p, NULL, &res, &err), FY_E_INVAL);
    ck_assert_str_eq(fy_error_location(err), "$.stderr_path");
    fy_error_free(err);
    err = NULL;
    ck_assert_msg(access(same, F_OK) < 0, "%s was made", same);
    ck_assert_int_eq(fy_action_set_stdio_path(a, 2, NULL, NULL), 0);
    ck_assert_int_eq(fy_action_set_stdio_path(a, 1, NULL, NULL), 0);
    ck_assert_int_eq(mkdir(inner, 0755), 0);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, inner, NULL), 0);
    ck_assert_int_eq(fy_action_run(a, p, NULL, &res, &err), FY_E_INVAL);
    ck_assert_str_eq(fy_error_location(err), "$.scratch_directory");
    fy_error_free(err);
    ck_assert_int_eq(rmdir(inner), 0);
    fy_action_free(a);
    fy_policy_free(p);
    free(in);
    free(same);
    free(inner);
}
END_TEST

/* A mount below a directory input root (a tmpfs here; a bind of the same
 * file system alike): the overlay's lower could not hold it (the kernel
 * refuses a lower with locked submounts: infrastructure-failure), so the
 * root is materialised, the mount's files in it. As root (mounts). */
START_TEST(test_input_with_a_mount) {
    if (rootless)
        return;
    /* (in a mount namespace of this test's process alone: the tmpfs goes
     * with it, whatever the test's end) */
    ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
    ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    char *in = make_input(), *sc = make_dir("scratch"), *so = path_in("stdout", ""), *m = NULL;
    ck_assert_int_ge(asprintf(&m, "%s/m", in), 0);
    ck_assert_int_eq(mkdir(m, 0755), 0);
    ck_assert_int_eq(mount("fy-test-action", m, "tmpfs", MS_NODEV | MS_NOSUID, "size=1m,mode=755"), 0);
    char f[600];
    snprintf(f, sizeof(f), "%s/visible", m);
    write_file(f, "from the mount\n", 0644);
    fy_action *a = action_json("\"arguments\": [\"/bin/cat\", \"m/visible\"]}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_stdio_path(a, 1, so, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    assert_root(j, false);
    char *c = read_all(so);
    ck_assert_str_eq(c, "from the mount\n");
    free(c);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    ck_assert_int_eq(umount2(m, MNT_DETACH), 0);
    free(in); free(sc); free(so); free(m);
}
END_TEST

START_TEST(test_exact_environment) {
    char *in = make_input(), *sc = make_dir("scratch"), *so = path_in("stdout", "");
    setenv("FY_TEST_HOST_SECRET", "must-not-leak", 1);
    fy_action *a = action_json("\"arguments\": [\"/usr/bin/env\"], \"environment\": {\"A\": \"1\", \"B\": \"two\"}}",
                               in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_stdio_path(a, 1, so, NULL), 0);
    fy_policy *p = policy();
    ck_assert_int_eq(fy_policy_set_env(p, "POLICY_VAR", "x", NULL), 0);
    ck_assert_int_eq(fy_policy_allow_env(p, "FY_TEST_HOST_SECRET", NULL), 0);
    fy_action_result *res = run(a, p);
    ck_assert_int_eq(fy_action_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    char *c = read_all(so);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c, "A=1\nB=two\n");
    free(c);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(so);
}
END_TEST

/* The tree digest of a declared directory, as forgeyard-action(5) gives
 * it. */
static const char *dir_digest(const char *json, const char *path) {
    static char hex[80];
    char key[64];
    snprintf(key, sizeof(key), "\"path\": \"%s\",", path);
    const char *o = strstr(json, "\"output_directories\"");
    ck_assert_ptr_nonnull(o);
    const char *p = strstr(o, key), *t = p ? strstr(p, "\"tree_digest\": \"sha256:") : NULL;
    ck_assert_msg(t && sscanf(t + 23, "%64[0-9a-f]", hex) == 1, "%s: %s", path, json);
    return hex;
}

static void hex_of(const unsigned char d[32], char out[65]) {
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

START_TEST(test_tree_digest_is_the_content) {
    /* The same tree under two names, made in two orders, has one digest,
     * the one the page's encoding gives: a record per entry in byte order
     * of its path relative to the directory ("a-b" before "a/b"). An
     * empty directory's is not an empty file's. The digest hashed each
     * entry's whole declared path, in the walk's order (a, a/b, a-b): the
     * same tree under two names had two. */
    char *in = make_input(), *sc = make_dir("scratch");
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"mkdir -p d/a d/e && echo 1 > d/a/b && echo 2 > d/a-b && "
        "chmod 755 d/a-b && ln -s a/b d/l && ln -s a/b q-l && echo 2 > q-ab && chmod 755 q-ab && mkdir -p q/e && "
        "echo 1 > q-b && mv q-l q/l && mkdir q/a && mv q-ab q/a-b && mv q-b q/a/b && mkdir z\"],"
        "\"outputs\": {\"paths\": [\"d\", \"q\", \"z\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *r = run(a, p);
    char *j = result_json(r);
    ck_assert_msg(fy_action_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s", j);
    unsigned char one[32], two[32], want[32];
    crypto_hash_sha256(one, (const unsigned char *)"1\n", 2);
    crypto_hash_sha256(two, (const unsigned char *)"2\n", 2);
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const unsigned char *)"forgeyard-tree 1\n", 17);
    crypto_hash_sha256_update(&st, (const unsigned char *)"Da", 3);
    crypto_hash_sha256_update(&st, (const unsigned char *)"Fa-b", 5);
    crypto_hash_sha256_update(&st, two, 32);
    crypto_hash_sha256_update(&st, (const unsigned char *)"x", 1);
    crypto_hash_sha256_update(&st, (const unsigned char *)"Fa/b", 5);
    crypto_hash_sha256_update(&st, one, 32);
    crypto_hash_sha256_update(&st, (const unsigned char *)"-", 1);
    crypto_hash_sha256_update(&st, (const unsigned char *)"De", 3);
    crypto_hash_sha256_update(&st, (const unsigned char *)"Ll\0a/b", 7);
    crypto_hash_sha256_final(&st, want);
    char hex[65];
    hex_of(want, hex);
    ck_assert_str_eq(dir_digest(j, "d"), hex);
    ck_assert_str_eq(dir_digest(j, "q"), hex);
    crypto_hash_sha256(want, (const unsigned char *)"forgeyard-tree 1\n", 17);
    hex_of(want, hex);
    ck_assert_str_eq(dir_digest(j, "z"), hex);
    free(j);
    fy_action_result_free(r);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc);
}
END_TEST

START_TEST(test_same_action_same_digests) {
    char *in = make_input(), *sc = make_dir("scratch");
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"mkdir -p o && cat src/a.c src/b.h > o/cat && date +%s%N > stamp\"],"
        "\"outputs\": {\"paths\": [\"o\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *r1 = run(a, p), *r2 = run(a, p);
    char *j1 = result_json(r1), *j2 = result_json(r2);
    const char *t1 = strstr(j1, "\"tree_digest\""), *t2 = strstr(j2, "\"tree_digest\"");
    ck_assert_ptr_nonnull(t1);
    ck_assert_ptr_nonnull(t2);
    ck_assert_int_eq(strncmp(t1, t2, 90), 0);
    const char *d1 = strstr(j1, "\"action_digest\""), *d2 = strstr(j2, "\"action_digest\"");
    ck_assert_int_eq(strncmp(d1, d2, 90), 0);
    /* The same contract: the attempts' execution roots (each its own
     * directory) are not part of it. */
    const char *c1 = strstr(j1, "\"contract_id\""), *c2 = strstr(j2, "\"contract_id\"");
    ck_assert_ptr_nonnull(c1);
    ck_assert_ptr_nonnull(c2);
    ck_assert_msg(strncmp(c1, c2, 84) == 0, "%.84s\n%.84s", c1, c2);
    free(j1); free(j2);
    fy_action_result_free(r1);
    fy_action_result_free(r2);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc);
}
END_TEST

/* Everything a workload can try against its inputs, from inside. */
START_TEST(test_inputs_never_written) {
    char *in = make_input(), *sc = make_dir("scratch");
    unsigned char before[32], after[32];
    tree_digest(in, before);
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \""
        "for f in src/a.c src/b.h tool.sh link; do echo x >> $f; true > $f; chmod 777 $f; touch -d 2001-01-01 $f; done 2>/dev/null; "
        "ln src/a.c hard 2>/dev/null && echo y >> hard 2>/dev/null; "
        "rm -rf src; mkdir src; echo replaced > src/a.c; echo new > empty/new; rm -f tool.sh; ln -s /etc tool.sh; "
        "exit 0\"]}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    ck_assert_int_eq(fy_action_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    tree_digest(in, after);
    ck_assert_msg(memcmp(before, after, 32) == 0, "the input root changed");
    assert_no_attempt_left(sc);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc);
}
END_TEST

/* A world-writable or mapped-owner input is copied, never linked. */
START_TEST(test_writable_input_copied) {
    if (rootless)
        return; /* rootless copies every file anyway (test_outputs_and_digests) */
    char *in = make_input(), *sc = make_dir("scratch");
    char f[512];
    snprintf(f, sizeof(f), "%s/src/a.c", in);
    chmod(f, 0666);
    snprintf(f, sizeof(f), "%s/src/b.h", in);
    ck_assert_int_eq(chown(f, 100001, 100001), 0); /* the workload's host id */
    unsigned char before[32], after[32];
    tree_digest(in, before);
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"echo x >> src/a.c; chmod 666 src/b.h; echo y >> src/b.h; exit 0\"]}",
        in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    assert_root(j, overlaid());
    if (overlaid())
        ck_assert_msg(strstr(j, "\"linked\": 0") && strstr(j, "\"copied\": 0"), "%s", j);
    else
        ck_assert_msg(strstr(j, "\"linked\": 1") && strstr(j, "\"copied\": 2"), "%s", j);
    tree_digest(in, after);
    ck_assert_msg(memcmp(before, after, 32) == 0, "the input root changed");
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc);
}
END_TEST

/* Every operation a workload has on a file, tried on every input (and on
 * every input directory), from inside: the input root is unchanged (names,
 * modes, owners, times, contents), the workload saw its own changes where
 * it was allowed to make them, nothing of the attempt is left or mounted. */
/* Every input written, truncated, re-moded, linked, renamed and removed
 * from inside; what is left listed in report/left. */
#define ATTACK                                                                                    \
    "mkdir -p report; "                                                                           \
    "for f in $(find . -path ./report -prune -o ! -type d -print); do "                           \
    "  chmod 666 $f; echo w >> $f; true > $f; truncate -s 1 $f; touch -d 2001-01-01 $f; "        \
    "  ln $f $f.hl && echo hl >> $f.hl; "                                                         \
    "  mv $f $f.mv && mv $f.mv $f; mv $f $f.gone; rm -f $f.gone $f.hl; "                          \
    "done 2>/dev/null; "                                                                          \
    "for d in $(find . -mindepth 1 -type d ! -name report); do chmod 777 $d; touch $d/planted; "  \
    "  mv $d $d.mv && mv $d.mv $d; done 2>/dev/null; "                                            \
    "rm -rf src empty tool.sh link 2>/dev/null; ls -A > report/left; "                            \
    "exit 0"

START_TEST(test_every_input_attacked) {
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", "");
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/src/deep", in);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/src/deep/c.txt", in);
    write_file(sub, "deep input\n", 0644);
    unsigned char before[32], after[32];
    tree_digest(in, before);
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"" ATTACK "\"],"
        "\"environment\": {\"PATH\": \"/usr/bin:/bin\"},"
        "\"outputs\": {\"directories\": [\"report\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    assert_root(j, overlaid());
    tree_digest(in, after);
    ck_assert_msg(memcmp(before, after, 32) == 0, "the input root changed: %s", j);
    /* Inside, the removals took effect (on the workload's view only). */
    snprintf(sub, sizeof(sub), "%s/report/left", out);
    char *left = read_all(sub);
    ck_assert_ptr_nonnull(left);
    ck_assert_msg(!strstr(left, "src") && !strstr(left, "tool.sh"), "left: %s", left);
    free(left);
    ck_assert_msg(strstr(j, "\"files_left\": 0") && strstr(j, "\"mounts_left\": 0"), "%s", j);
    assert_no_attempt_left(sc);
    assert_no_mount_of(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(out);
}
END_TEST

/* What the workload leaves in its execution root goes with the attempt at
 * any depth: 400 levels (the removers once stopped at 256) with a
 * directory closed to its owner at the bottom. */
START_TEST(test_deep_tree_removed) {
    char *in = make_input(), *sc = make_dir("scratch-deep"), *out = path_in("out-deep", "");
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"echo ok > r; i=0; while [ $i -lt 400 ]; do mkdir d && cd d || "
        "exit 3; i=$((i+1)); done; mkdir locked && touch locked/f && chmod 000 locked\"],"
        "\"environment\": {\"PATH\": \"/usr/bin:/bin\"},"
        "\"outputs\": {\"files\": [\"r\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    ck_assert_msg(strstr(j, "\"files_left\": 0") && strstr(j, "\"mounts_left\": 0"), "%s", j);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(out);
}
END_TEST

/* Declared outputs the input root has already: collected as the workload
 * left them (untouched: the input's content; changed or removed: so). */
START_TEST(test_outputs_already_in_inputs) {
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", "");
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/keep.txt", in);
    write_file(sub, "kept\n", 0644);
    unsigned char before[32], after[32];
    tree_digest(in, before);
    fy_action *a = action_json(
        "\"arguments\": [\"/bin/sh\", \"-c\", \"rm src/b.h && rm -f src/a.c && printf new > src/a.c && "
        "printf more > src/n && chmod 2777 src/n && printf e > empty/e && printf stray > stray\"],"
        "\"outputs\": {\"files\": [\"keep.txt\"], \"directories\": [\"src\", \"empty\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    assert_root(j, overlaid());
    char hx[72], line[400];
    sha_hex("kept\n", 5, hx);
    snprintf(line, sizeof(line), "\"path\": \"keep.txt\",\n      \"digest\": \"%s\"", hx);
    ck_assert_msg(strstr(j, line), "%s", j);
    sha_hex("new", 3, hx);
    snprintf(line, sizeof(line), "\"path\": \"src/a.c\",\n      \"digest\": \"%s\"", hx);
    ck_assert_msg(strstr(j, line), "%s", j);
    ck_assert_msg(strstr(j, "\"path\": \"src/n\""), "%s", j);
    ck_assert_msg(strstr(j, "\"path\": \"empty/e\""), "%s", j);
    ck_assert_msg(!strstr(j, "src/b.h"), "a removed input collected: %s", j);
    /* Exactly the stray file is undeclared (a changed input is not). */
    ck_assert_msg(strstr(j, "\"count\": 1") && strstr(j, "\"stray\""), "%s", j);
    snprintf(sub, sizeof(sub), "%s/src/b.h", out);
    ck_assert_int_ne(access(sub, F_OK), 0);
    snprintf(sub, sizeof(sub), "%s/src/a.c", out);
    char *c = read_all(sub);
    ck_assert_str_eq(c, "new");
    free(c);
    snprintf(sub, sizeof(sub), "%s/keep.txt", out);
    c = read_all(sub);
    ck_assert_str_eq(c, "kept\n");
    free(c);
    /* A collected file is the caller's, 0644 or 0755, whatever the
     * workload made of it (an overlay's outputs are moved, not copied):
     * here set-group-ID and world-writable (set-user-ID the seccomp
     * profile refuses since version 4). */
    struct stat st;
    snprintf(sub, sizeof(sub), "%s/src/n", out);
    ck_assert_int_eq(lstat(sub, &st), 0);
    ck_assert_msg((st.st_mode & 07777) == 0755 && st.st_uid == geteuid() && st.st_gid == getegid(),
                  "mode %o uid %u", (unsigned)st.st_mode, (unsigned)st.st_uid);
    ck_assert_int_eq(st.st_nlink, 1);
    tree_digest(in, after);
    ck_assert_msg(memcmp(before, after, 32) == 0, "the input root changed");
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(out);
}
END_TEST

/* As root, an input the sandbox's ids could not read through an overlay
 * (not readable by others) makes the attempt materialise instead, where
 * its read-only copy is readable: the same contract either way. */
START_TEST(test_unreachable_input_materialised) {
    if (rootless)
        return; /* rootless, the caller's own files are the workload's */
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", "");
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/src/private.h", in);
    write_file(sub, "private\n", 0600);
    fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\", \"cat src/private.h > got\"],"
                               "\"outputs\": {\"files\": [\"got\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    assert_root(j, false);
    snprintf(sub, sizeof(sub), "%s/got", out);
    char *c = read_all(sub);
    ck_assert_str_eq(c, "private\n");
    free(c);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(out);
}
END_TEST

/* ---- POSIX ACLs: the readability verdict is the kernel's ---- */

/* The ACL fixture: made as root (rootless: before the suite drops to uid
 * 65534, so that its files are another user's, as the ACL needs), two
 * input roots: DIR-denied/denied.txt (0644, an ACL entry denying the workload's uid what
 * others get) and DIR-granted/granted.txt (0600 root's, an ACL entry granting the
 * workload's uid read). As root the workload is uid 100000 or 100001
 * (the policy's range; 100001 unless fake root): both are named. */
static void make_acl_fixture(const char *dir, const char *who, uid_t dir_owner) {
    const char *files[2] = {"denied.txt", "granted.txt"}, *perms[2] = {"---", "r--"};
    const mode_t modes[2] = {0644, 0600};
    for (int i = 0; i < 2; i++) {
        char p[600], spec[200], cmd[1400];
        snprintf(p, sizeof(p), "%s-%.*s", dir, (int)(strchr(files[i], '.') - files[i]), files[i]);
        /* the directory the suite's own (it removes the files), the files root's */
        if ((mkdir(p, 0755) < 0 && errno != EEXIST) || chown(p, dir_owner, dir_owner) < 0)
            abort();
        chmod(p, 0755);
        snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s", files[i]);
        FILE *f = fopen(p, "we");
        if (!f || fprintf(f, "%.*s\n", (int)(strchr(files[i], '.') - files[i]), files[i]) < 0 || fclose(f) != 0 ||
            chmod(p, modes[i]) < 0)
            abort();
        /* who, with each PERM the entry's permissions */
        size_t o = 0;
        for (const char *w = who; *w && o + 4 < sizeof(spec);)
            if (strncmp(w, "PERM", 4) == 0) {
                memcpy(spec + o, perms[i], 3);
                o += 3;
                w += 4;
            } else {
                spec[o++] = *w++;
            }
        spec[o] = '\0';
        snprintf(cmd, sizeof(cmd), "setfacl -m '%s' '%s'", spec, p);
        if (system(cmd) != 0) {
            fprintf(stderr, "setfacl failed (Debian's acl package: scripts/deps.sh): %s\n", cmd);
            abort();
        }
    }
}

static char acl_fixture[300];

/* Reading file of the fixture: succeeds either way (a denied input is
 * materialised as a readable copy, never a link that keeps its ACL), and
 * the root is an overlay exactly where the verdict says the workload can
 * read through it. */
static void acl_case(const char *file, const char *want, bool reachable) {
    char *sc = make_dir("scratch"), *out = path_in("out", "");
    char body[600], sub[700], in[400];
    snprintf(in, sizeof(in), "%s-%.*s", acl_fixture, (int)(strchr(file, '.') - file), file);
    snprintf(body, sizeof(body),
             "\"arguments\": [\"/bin/sh\", \"-c\", \"cat %s > got\"], \"outputs\": {\"files\": [\"got\"]}}", file);
    fy_action *a = action_json(body, in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    if (!want) {
        /* Rootless, a file the ACL denies the caller is unreadable to the
         * host too: a typed refusal, nothing collected or kept, as for a
         * file whose mode bits deny it (an attempt fy_action_run began
         * beside the walk is discarded unseen). */
        fy_action_result *res = NULL;
        fy_error *err = NULL;
        ck_assert_int_eq(fy_action_run(a, p, NULL, &res, &err), FY_E_IO);
        ck_assert_ptr_null(res);
        ck_assert_msg(strstr(fy_error_message(err), "cannot read the input file"), "%s", fy_error_message(err));
        snprintf(sub, sizeof(sub), "%s/got", out);
        ck_assert(access(sub, F_OK) != 0);
        assert_no_attempt_left(sc);
        fy_error_free(err);
        fy_action_free(a);
        fy_policy_free(p);
        free(sc);
        free(out);
        return;
    }
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s: %s", file, j);
    assert_root(j, reachable && overlaid());
    snprintf(sub, sizeof(sub), "%s/got", out);
    char *c = read_all(sub);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c, want);
    free(c);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(sc);
    free(out);
}

START_TEST(test_acl_verdict) {
    /* The fixture's ACLs are what setfacl made (the kernel's xattr form). */
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "getfacl -n -p '%s-denied/denied.txt' | grep -q '^user:%s:---'", acl_fixture,
             rootless ? "65534" : "100001");
    ck_assert_msg(system(cmd) == 0, "the fixture has no ACL: %s", cmd);
    /* Others may read it, the workload's uid may not (its named entry):
     * not through the overlay, and not through a hard link either (as
     * root: a copy; rootless the caller cannot read it either). Before
     * the verdict read ACLs, the overlay was offered and the command
     * failed. */
    acl_case("denied.txt", rootless ? NULL : "denied\n", false);
    /* Others may not, the workload's uid may: through the overlay. */
    acl_case("granted.txt", "granted\n", true);
}
END_TEST

/* The no-ACL memo (tree_ids_grant): a walk that found no ACL on a settled
 * inode remembers it by (device, inode, ctime); an ACL added afterwards
 * moves the ctime, so the next walk reads it and the verdict changes. A
 * memo keyed without the ctime would offer the overlay, and the command
 * would fail to read its input. */
START_TEST(test_acl_added_after_memo) {
    if (rootless) {
        fprintf(stderr, "test_acl_added_after_memo: as root only (the suite cannot set ACLs on another's file)\n");
        return;
    }
    char d[600], f[700], cmd[900];
    snprintf(d, sizeof(d), "%s-late", acl_fixture);
    ck_assert(mkdir(d, 0755) == 0 || errno == EEXIST);
    snprintf(f, sizeof(f), "%s/late.txt", d);
    FILE *fp = fopen(f, "we");
    ck_assert_ptr_nonnull(fp);
    fputs("late\n", fp);
    ck_assert_int_eq(fclose(fp), 0);
    ck_assert_int_eq(chmod(f, 0644), 0);
    /* settled: its ctime more than the memo's 2 s old when the walk reads it */
    usleep(2300 * 1000);
    acl_case("late.txt", "late\n", true);
    acl_case("late.txt", "late\n", true); /* (from the memo) */
    snprintf(cmd, sizeof(cmd), "setfacl -m 'u:100000:---,u:100001:---' '%s'", f);
    ck_assert_int_eq(system(cmd), 0);
    /* the workload's uid may no longer read it through the overlay: a copy */
    acl_case("late.txt", "late\n", false);
    tree_noacl_forget();
}
END_TEST

/* ---- hostile outputs ---- */

static void expect_outcome_in(const char *workdir, const char *cmd, const char *outputs, int outcome,
                              const char *detail_part) {
    char *in = make_input(), *out = path_in("out", ""), *sc = make_dir("scratch");
    char *doc = NULL;
    ck_assert_int_ge(asprintf(&doc, "{\"version\": 1, \"input_root\": {\"directory\": \"%s\"}, "
                                    "\"working_directory\": \"%s\", "
                                    "\"arguments\": [\"/bin/sh\", \"-c\", \"%s\"], \"outputs\": %s, "
                                    "\"limits\": {\"output_entries\": 500, \"output_bytes\": 1048576}}",
                              in, workdir, cmd, outputs), 0);
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, NULL), 0);
    free(doc);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == outcome, "%.3000s", j);
    ck_assert_msg(fy_action_result_detail(res) && strstr(fy_action_result_detail(res), detail_part), "%s", j);
    /* Refused outputs are not handed out: the output directory is empty. */
    DIR *d = opendir(out);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    ck_assert_int_eq(n, 0);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(out); free(sc);
}

static void expect_outcome(const char *cmd, const char *outputs, int outcome, const char *detail_part) {
    expect_outcome_in("", cmd, outputs, outcome, detail_part);
}

START_TEST(test_output_link_outside) {
    expect_outcome("ln -s /etc/shadow o", "{\"files\": [\"o\"]}", FY_OUTCOME_SANDBOX_VIOLATION, "out of the tree");
    expect_outcome("mkdir d && ln -s ../../../../../etc d/up", "{\"directories\": [\"d\"]}",
                   FY_OUTCOME_SANDBOX_VIOLATION, "out of the tree");
    expect_outcome("rm -rf parent && ln -s /etc parent", "{\"files\": [\"parent/shadow\"]}",
                   FY_OUTCOME_SANDBOX_VIOLATION, "symbolic link");
    /* Each link's text stays in the tree, but e climbs through d/up (which
     * is ".."): out of it, and out of the output directory on the host. */
    expect_outcome("mkdir d && ln -s .. d/up && ln -s d/up/../../etc e", "{\"files\": [\"e\"], \"directories\": [\"d\"]}",
                   FY_OUTCOME_SANDBOX_VIOLATION, "out of the tree");
    expect_outcome("mkdir d && ln -s .. d/up && ln -s up/../../etc d/e", "{\"directories\": [\"d\"]}",
                   FY_OUTCOME_SANDBOX_VIOLATION, "out of the tree");
    /* In the tree (the working directory is w), but the output directory
     * holds w's outputs: there these would point beside it. */
    expect_outcome_in("w", "ln -s ../etc o", "{\"files\": [\"o\"]}", FY_OUTCOME_SANDBOX_VIOLATION,
                      "out of the output directory");
    expect_outcome_in("w", "mkdir d && ln -s ../../etc d/l", "{\"directories\": [\"d\"]}",
                      FY_OUTCOME_SANDBOX_VIOLATION, "out of the output directory");
    /* The target is the workload's text: its escape sequence and newline
     * (a forged log line) are shown as \xNN, never raw. */
    expect_outcome("ln -s \\\"$(printf '/\\\\033[31mRED\\\\nforgeyard: forged')\\\" o", "{\"files\": [\"o\"]}",
                   FY_OUTCOME_SANDBOX_VIOLATION, "/\\x1b[31mRED\\x0aforgeyard: forged");
}
END_TEST

START_TEST(test_output_special_files) {
    expect_outcome("mkfifo f", "{\"files\": [\"f\"]}", FY_OUTCOME_SANDBOX_VIOLATION, "a FIFO");
    expect_outcome("mkdir d && mkfifo d/f", "{\"directories\": [\"d\"]}", FY_OUTCOME_SANDBOX_VIOLATION, "a FIFO");
    expect_outcome("python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\\\"s\\\")'",
                   "{\"files\": [\"s\"]}", FY_OUTCOME_SANDBOX_VIOLATION, "a socket");
    /* An output the command closed to its owner (rootless, the collector
     * is that owner, without privilege): an output that could not be
     * taken, not an infrastructure failure, which workers retry. The same
     * as root, whose collector could read through the mode: one action,
     * one outcome, whoever runs it (it succeeded as root). */
    {
        expect_outcome("echo y > f && chmod 000 f", "{\"files\": [\"f\"]}", FY_OUTCOME_SANDBOX_VIOLATION,
                       "cannot be read");
        expect_outcome("mkdir o && echo y > o/f && chmod 000 o/f", "{\"directories\": [\"o\"]}",
                       FY_OUTCOME_SANDBOX_VIOLATION, "cannot be read");
        expect_outcome("mkdir -p o/d && chmod 000 o/d", "{\"directories\": [\"o\"]}", FY_OUTCOME_SANDBOX_VIOLATION,
                       "cannot be read");
        expect_outcome("mkdir o && chmod 000 o", "{\"directories\": [\"o\"]}", FY_OUTCOME_SANDBOX_VIOLATION,
                       "cannot be read");
        /* (readable, not searchable; a declared file's directory closed:
         * the file is there, not missing) */
        expect_outcome("mkdir -p o/d && echo y > o/d/f && chmod 0400 o/d", "{\"directories\": [\"o\"]}",
                       FY_OUTCOME_SANDBOX_VIOLATION, "cannot be read");
        expect_outcome("mkdir -p d && echo y > d/f && chmod 000 d", "{\"files\": [\"d/f\"]}", FY_OUTCOME_SANDBOX_VIOLATION,
                       "cannot be read");
    }
}
END_TEST

/* A result names its outputs in text (JSON, as REAPI's ActionResult): a
 * name or link target that is not UTF-8 is refused as a violation, with a
 * result and nothing handed out, never a lost result; an undeclared one is
 * listed with U+FFFD in place of what is not text. The setters refuse such
 * names at once. */
START_TEST(test_output_names_not_utf8) {
    expect_outcome("mkdir d && printf x > \\\"d/$(printf 'bad\\\\377')\\\"", "{\"directories\": [\"d\"]}",
                   FY_OUTCOME_SANDBOX_VIOLATION, "not UTF-8");
    expect_outcome("ln -s \\\"$(printf 'bad\\\\377')\\\" l", "{\"files\": [\"l\"]}", FY_OUTCOME_SANDBOX_VIOLATION,
                   "target is not UTF-8");
    fy_action *a = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_action_new(&a, NULL), 0);
    ck_assert_int_eq(fy_action_add_output(a, "b\xff", FY_OUTPUT_FILE, &e), FY_E_INVAL);
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_action_set_env(a, "X", "\xc3\x28", &e), FY_E_INVAL);
    fy_error_free(e);
    e = NULL;
    const char *argv[] = {"/bin/echo", "\xff", NULL};
    ck_assert_int_eq(fy_action_set_argv(a, argv, &e), FY_E_INVAL);
    ck_assert_str_eq(fy_error_location(e), "$.arguments[1]");
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_action_set_working_directory(a, "w\xe2\x82", &e), FY_E_INVAL);
    fy_error_free(e);
    fy_action_free(a);
}
END_TEST

START_TEST(test_output_limits) {
    /* 600 entries against a limit of 500: stopped, nothing handed out. */
    expect_outcome("mkdir d && cd d && seq 1 600 | xargs touch", "{\"directories\": [\"d\"]}",
                   FY_OUTCOME_RESOURCE_EXCEEDED, "entries");
    /* A 100 GiB sparse file against 1 MiB: refused before a byte is read. */
    expect_outcome("truncate -s 100G big", "{\"files\": [\"big\"]}", FY_OUTCOME_RESOURCE_EXCEEDED, "bytes");
    /* Many small files beyond the byte limit together. */
    expect_outcome("mkdir d && for i in 1 2 3; do head -c 400000 /dev/zero > d/$i; done", "{\"directories\": [\"d\"]}",
                   FY_OUTCOME_RESOURCE_EXCEEDED, "bytes");
}
END_TEST

/* ---- archives ---- */

struct ent { const char *name; int type; const char *data; const char *link; int64_t size; };

static char *make_archive(const struct ent *ents, size_t n) {
    char *path = path_in("archive", ".tar.gz");
    struct archive *ar = archive_write_new();
    archive_write_set_format_pax_restricted(ar);
    archive_write_add_filter_gzip(ar);
    ck_assert_int_eq(archive_write_open_filename(ar, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, ents[i].name);
        archive_entry_set_perm(e, ents[i].type == AE_IFDIR ? 0755 : 0644);
        if (ents[i].type == -1) {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, ents[i].link);
        } else {
            archive_entry_set_filetype(e, (unsigned)ents[i].type);
        }
        if (ents[i].type == AE_IFLNK)
            archive_entry_set_symlink(e, ents[i].link);
        int64_t size = ents[i].size ? ents[i].size : ents[i].data ? (int64_t)strlen(ents[i].data) : 0;
        if (ents[i].type == AE_IFREG)
            archive_entry_set_size(e, size);
        ck_assert_int_eq(archive_write_header(ar, e), ARCHIVE_OK);
        if (ents[i].data)
            archive_write_data(ar, ents[i].data, strlen(ents[i].data));
        archive_entry_free(e);
    }
    archive_write_close(ar);
    archive_write_free(ar);
    return path;
}

static fy_action *archive_action(const char *archive, const char *cmd) {
    char *doc = NULL;
    ck_assert_int_ge(asprintf(&doc, "{\"version\": 1, \"input_root\": {\"archive\": \"%s\"}, "
                                    "\"arguments\": [\"/bin/sh\", \"-c\", \"%s\"], \"outputs\": {\"files\": [\"r\"]},"
                                    "\"limits\": {\"input_bytes\": 1048576}}", archive, cmd), 0);
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, NULL), 0);
    free(doc);
    return a;
}

START_TEST(test_archive_input) {
    const struct ent ents[] = {
        {"./src/", AE_IFDIR, NULL, NULL, 0},
        {"./src/a.txt", AE_IFREG, "alpha\n", NULL, 0},
        {"./src/l", AE_IFLNK, NULL, "a.txt", 0},
        {"./src/h", -1, NULL, "./src/a.txt", 0},
    };
    char *ar = make_archive(ents, sizeof(ents) / sizeof(ents[0]));
    char *sc = make_dir("scratch");
    fy_action *a = archive_action(ar, "cat src/a.txt src/l src/h > r");
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    char hx[72];
    sha_hex("alpha\nalpha\nalpha\n", 18, hx);
    ck_assert_msg(strstr(j, hx), "%s", j);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(ar); free(sc);
}
END_TEST

/* Each refused at start with a typed error; nothing written outside. */
static void expect_archive_refused(const struct ent *ents, size_t n, int code, const char *part) {
    char *ar = make_archive(ents, n), *sc = make_dir("scratch");
    char canary[512];
    snprintf(canary, sizeof(canary), "%s/canary-%d", scratch, counter);
    fy_action *a = archive_action(ar, "true");
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    fy_error *err = NULL;
    int r = fy_action_start(a, p, NULL, &t, &err);
    ck_assert_msg(r == code, "got %d: %s", r, err ? fy_error_message(err) : "");
    ck_assert_int_eq(fy_error_step(err), FY_STEP_INPUT);
    ck_assert_msg(strstr(fy_error_message(err), part), "%s", fy_error_message(err));
    ck_assert_ptr_null(t);
    assert_no_attempt_left(sc);
    ck_assert_int_ne(access(canary, F_OK), 0);
    ck_assert_int_ne(access("/tmp/fy-action-test-escape", F_OK), 0);
    fy_error_free(err);
    fy_action_free(a);
    fy_policy_free(p);
    free(ar); free(sc);
}

START_TEST(test_archive_hostile) {
    const struct ent dotdot[] = {{"../../../../tmp/fy-action-test-escape", AE_IFREG, "x", NULL, 0}};
    expect_archive_refused(dotdot, 1, FY_E_INVAL, "\"..\"");
    const struct ent absolute[] = {{"/tmp/fy-action-test-escape", AE_IFREG, "x", NULL, 0}};
    expect_archive_refused(absolute, 1, FY_E_INVAL, "absolute");
    const struct ent through_link[] = {{"d", AE_IFLNK, NULL, "/tmp", 0},
                                       {"d/fy-action-test-escape", AE_IFREG, "x", NULL, 0}};
    expect_archive_refused(through_link, 2, FY_E_INVAL, "link");
    const struct ent hard_out[] = {{"shadow", -1, NULL, "/etc/shadow", 0}};
    expect_archive_refused(hard_out, 1, FY_E_INVAL, "hard link");
    const struct ent hard_up[] = {{"shadow", -1, NULL, "../../etc/shadow", 0}};
    expect_archive_refused(hard_up, 1, FY_E_INVAL, "hard link");
    const struct ent dev[] = {{"null", AE_IFCHR, NULL, NULL, 0}};
    expect_archive_refused(dev, 1, FY_E_INVAL, "character device");
    const struct ent fifo[] = {{"p", AE_IFIFO, NULL, NULL, 0}};
    expect_archive_refused(fifo, 1, FY_E_INVAL, "FIFO");
    /* Declared 2 GiB (a bomb's promise) against an input limit of 1 MiB. */
    const struct ent big[] = {{"big", AE_IFREG, NULL, NULL, 2ll << 30}};
    expect_archive_refused(big, 1, FY_E_RANGE, "input_bytes");
    const struct ent dup[] = {{"f", AE_IFREG, "1", NULL, 0}, {"f", AE_IFREG, "2", NULL, 0}};
    expect_archive_refused(dup, 2, FY_E_INVAL, "duplicate");
}
END_TEST

START_TEST(test_archive_truncated) {
    const struct ent ents[] = {{"f", AE_IFREG, "0123456789abcdef0123456789abcdef", NULL, 0}};
    char *ar = make_archive(ents, 1);
    ck_assert_int_eq(truncate(ar, 40), 0);
    char *sc = make_dir("scratch");
    fy_action *a = archive_action(ar, "true");
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    fy_error *err = NULL;
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, &err), FY_E_INVAL);
    ck_assert_int_eq(fy_error_step(err), FY_STEP_INPUT);
    assert_no_attempt_left(sc);
    fy_error_free(err);
    fy_action_free(a);
    fy_policy_free(p);
    free(ar); free(sc);
}
END_TEST

/* An archive compressed with a format libarchive decodes only by running a
 * program (lrzip, grzip; lzop without liblzo2) is refused: no host program
 * ever parses an untrusted input archive. Fake decoders first in PATH would
 * leave a mark if they ran. */
START_TEST(test_archive_no_external_decoder) {
    char *bin = make_dir("fakebin");
    char mark[512], script[600], prog[512];
    snprintf(mark, sizeof(mark), "%s/decoder-ran", bin);
    snprintf(script, sizeof(script), "#!/bin/sh\ntouch %s\ncat\n", mark);
    static const char *const decoders[] = {"lrzip", "grzip", "lzop"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(prog, sizeof(prog), "%s/%s", bin, decoders[i]);
        write_file(prog, script, 0755);
    }
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin"), *path = NULL;
    ck_assert_int_ge(asprintf(&path, "%s:%s", bin, saved), 0);
    setenv("PATH", path, 1);
    /* The magic numbers libarchive's bidders look for, then filler. */
    static const unsigned char lrz[] = {'L', 'R', 'Z', 'I', 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char grz[] = {'G', 'R', 'Z', 'i', 'p', 'I', 'I', 0, 2, 4, ':', ')', 0, 0, 0, 0};
    static const unsigned char lzo[] = {0x89, 'L', 'Z', 'O', 0, 0x0d, 0x0a, 0x1a, 0x0a, 0x10, 0x30, 0x20, 0xa0,
                                        0x09, 0x40, 0x01, 0x05, 0x03, 0, 0, 0x01, 0, 0, 0x81, 0xa4, 0, 0};
    const struct { const unsigned char *b; size_t n; } files[] = {{lrz, sizeof(lrz)}, {grz, sizeof(grz)}, {lzo, sizeof(lzo)}};
    for (size_t i = 0; i < 3; i++) {
        char *ar = path_in("ext", ".bin"), *sc = make_dir("scratch");
        int fd = open(ar, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, files[i].b, files[i].n), (ssize_t)files[i].n);
        char filler[4096] = {0};
        ck_assert_int_eq(write(fd, filler, sizeof(filler)), (ssize_t)sizeof(filler));
        close(fd);
        fy_action *a = archive_action(ar, "true");
        ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
        fy_policy *p = policy();
        fy_action_attempt *t = NULL;
        fy_error *err = NULL;
        int r = fy_action_start(a, p, NULL, &t, &err);
        ck_assert_msg(r < 0, "%s: an archive only an external program decodes was accepted", decoders[i]);
        ck_assert_ptr_null(t);
        ck_assert_msg(access(mark, F_OK) != 0, "%s: a host program ran over the untrusted archive", decoders[i]);
        assert_no_attempt_left(sc);
        fy_error_free(err);
        fy_action_free(a);
        fy_policy_free(p);
        free(ar); free(sc);
    }
    setenv("PATH", saved, 1);
    free(saved); free(path); free(bin);
}
END_TEST

/* ---- properties and documents ---- */


/* ---- the archive cache ---- */

static char cache_dir[128];

/* The cache entry of the archive at path: CACHE/entries/<its SHA-256>, and
 * its seal. */
static void entry_of(const char *archive, char *entry, char *seal, size_t len) {
    FILE *f = fopen(archive, "re");
    ck_assert_ptr_nonnull(f);
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    unsigned char buf[4096], d[32];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        crypto_hash_sha256_update(&st, buf, n);
    fclose(f);
    crypto_hash_sha256_final(&st, d);
    char hex[65];
    sodium_bin2hex(hex, sizeof(hex), d, 32);
    snprintf(entry, len, "%s/entries/%s", cache_dir, hex);
    snprintf(seal, len, "%s/seals/%s", cache_dir, hex);
}

/* Runs the archive action; its outcome succeeded, its cache state the one
 * expected, its output r the digest of want. */
/* With bind (a writable host path) the entry's check cannot run beside
 * the attempt: it runs before the start. */
static void run_cached_with(const char *ar, const char *cmd, const char *state, const char *want, const char *bind) {
    char *sc = make_dir("scratch");
    fy_action *a = archive_action(ar, cmd);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    if (bind)
        ck_assert_int_eq(fy_policy_add_bind(p, bind, "/work/cache", FY_BIND_WRITABLE, NULL), 0);
    fy_action_result *res = run(a, p);
    char *j = result_json(res), exp[64], hx[72];
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    snprintf(exp, sizeof(exp), "\"cache\": \"%s\"", state);
    ck_assert_msg(strstr(j, exp), "expected %s: %s", exp, j);
    /* A sealed entry is used at once, its check beside the attempt (an
     * entry refused there is made again walk-first: "rebuilt"). */
    if (overlay_here)
        ck_assert_msg((strcmp(state, "hit") == 0 && !bind) == !strstr(j, "\"input_walk_beside\": null"),
                      "%s: beside or not: %s", state, j);
    ck_assert_msg(strstr(j, "\"archive_digest\": \"sha256:"), "%s", j);
    /* from the cache, as a directory input: an overlay where this host can */
    assert_root(j, overlay_here);
    sha_hex(want, strlen(want), hx);
    ck_assert_msg(strstr(j, hx), "output not %s: %s", want, j);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(sc);
}

static void run_cached(const char *ar, const char *cmd, const char *state, const char *want) {
    run_cached_with(ar, cmd, state, want, NULL);
}

static void chmod_tree(const char *dir, mode_t dmode) {
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "find '%s' -type d -exec chmod %o {} +", dir, (unsigned)dmode);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_archive_cache) {
    const struct ent ents[] = {
        {"./src/", AE_IFDIR, NULL, NULL, 0},
        {"./src/a.txt", AE_IFREG, "alpha\n", NULL, 0},
    };
    char *ar = make_archive(ents, 2);
    char entry[512], seal[512], file[600];
    entry_of(ar, entry, seal, sizeof(entry));
    run_cached(ar, "cat src/a.txt > r", "built", "alpha\n");
    /* read-only for everyone, the caller's */
    struct stat st;
    snprintf(file, sizeof(file), "%s/src/a.txt", entry);
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert_int_eq(st.st_uid, geteuid());
    ck_assert_int_eq(st.st_mode & 0222, 0);
    run_cached(ar, "cat src/a.txt > r", "hit", "alpha\n");

    /* An input changed in the cache (content: its ctime moves): refused,
     * made again from the archive. */
    ck_assert_int_eq(chmod(file, 0644), 0);
    write_file(file, "evil!\n", 0444);
    run_cached(ar, "cat src/a.txt > r", "rebuilt", "alpha\n");
    run_cached(ar, "cat src/a.txt > r", "hit", "alpha\n");
    /* the same where the check runs before the start (a writable bind) */
    char *bind = make_dir("bind");
    chmod(bind, 0777);
    ck_assert_int_eq(chmod(file, 0644), 0);
    write_file(file, "evil!\n", 0444);
    run_cached_with(ar, "cat src/a.txt > r", "rebuilt", "alpha\n", bind);
    run_cached_with(ar, "cat src/a.txt > r", "hit", "alpha\n", bind);
    free(bind);

    /* A file added to a cached directory: refused. */
    snprintf(file, sizeof(file), "%s/src", entry);
    ck_assert_int_eq(chmod(file, 0755), 0);
    snprintf(file, sizeof(file), "%s/src/planted", entry);
    write_file(file, "x\n", 0444);
    run_cached(ar, "cat src/a.txt > r; test -e src/planted && echo planted >> r; true", "rebuilt", "alpha\n");

    /* A tree planted under the key with a seal of its own making: refused. */
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s/src' && echo evil > '%s/src/a.txt' && "
             "printf 'forgeyard-action-cache 1 %%064d\\n' 0 > '%s'", entry, entry, entry, seal);
    chmod_tree(entry, 0755);
    ck_assert_int_eq(system(cmd), 0);
    run_cached(ar, "cat src/a.txt > r", "rebuilt", "alpha\n");

    /* Half-made (published, never sealed): refused. */
    ck_assert_int_eq(unlink(seal), 0);
    run_cached(ar, "cat src/a.txt > r", "rebuilt", "alpha\n");

    /* An entry of another owner: refused (as root: another uid owns it). */
    if (geteuid() == 0) {
        snprintf(cmd, sizeof(cmd), "chown -R 65534:65534 '%s'", entry);
        ck_assert_int_eq(system(cmd), 0);
        run_cached(ar, "cat src/a.txt > r", "rebuilt", "alpha\n");
    }

    /* A cache others may write is not trusted: a typed refusal. */
    ck_assert_int_eq(chmod(cache_dir, 0777), 0);
    char *sc = make_dir("scratch");
    fy_action *a = archive_action(ar, "cat src/a.txt > r");
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = NULL;
    fy_error *err = NULL;
    int r = fy_action_run(a, p, NULL, &res, &err);
    ck_assert_int_eq(chmod(cache_dir, 0711), 0);
    ck_assert_int_eq(r, FY_E_DENIED);
    ck_assert_msg(strstr(fy_error_message(err), "not trusted"), "%s", fy_error_message(err));
    fy_error_free(err);
    fy_action_free(a);
    fy_policy_free(p);
    free(sc);
    free(ar);
}
END_TEST

/* The archive's digest is remembered by the file's identity once its
 * ctime has settled; a write to the archive in place (same size, same
 * path) is seen at once. */
START_TEST(test_archive_cache_remembered) {
    const struct ent ents[] = {{"./a.txt", AE_IFREG, "alpha\n", NULL, 0}};
    char *ar = make_archive(ents, 1);
    sleep(3); /* older than the settle time: the digest may be remembered */
    run_cached(ar, "cat a.txt > r", "built", "alpha\n");
    char *sc = make_dir("scratch");
    fy_action *a = archive_action(ar, "cat a.txt > r");
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    /* (the document's input part only: a whole result is longer than a
     * check message may be, and the test died on it) */
    ck_assert_msg(strstr(j, "\"cache\": \"hit\"") && strstr(j, "\"archive_digest_remembered\": true"), "%.1500s",
                  strstr(j, "\"input\"") ? strstr(j, "\"input\"") : j);
    free(j);
    fy_action_result_free(res);
    /* The same archive with beta for alpha, written over it in place. */
    const struct ent other[] = {{"./a.txt", AE_IFREG, "beta!\n", NULL, 0}};
    char *ar2 = make_archive(other, 1), cmd[1200];
    struct stat s1, s2;
    ck_assert_int_eq(stat(ar, &s1), 0);
    ck_assert_int_eq(stat(ar2, &s2), 0);
    snprintf(cmd, sizeof(cmd), "dd if='%s' of='%s' conv=notrunc status=none", ar2, ar);
    ck_assert_int_eq(system(cmd), 0);
    res = run(a, p);
    j = result_json(res);
    char hx[72];
    sha_hex("beta!\n", 6, hx);
    ck_assert_msg(strstr(j, hx) && strstr(j, "\"archive_digest_remembered\": false") &&
                  strstr(j, "\"cache\": \"built\""), "%.1500s", strstr(j, "\"input\"") ? strstr(j, "\"input\"") : j);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    free(ar); free(ar2); free(sc);
}
END_TEST

/* Entries unused for 14 days are collected when another is made. */
START_TEST(test_archive_cache_gc) {
    const struct ent e1[] = {{"./old.txt", AE_IFREG, "old\n", NULL, 0}};
    const struct ent e2[] = {{"./new.txt", AE_IFREG, "new\n", NULL, 0}};
    char *a1 = make_archive(e1, 1), *a2 = make_archive(e2, 1);
    char entry[512], seal[512];
    entry_of(a1, entry, seal, sizeof(entry));
    run_cached(a1, "cat old.txt > r", "built", "old\n");
    struct timespec old[2] = {{time(NULL) - 15 * 86400, 0}, {time(NULL) - 15 * 86400, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, seal, old, 0), 0);
    run_cached(a2, "cat new.txt > r", "built", "new\n");
    struct stat st;
    ck_assert_int_ne(stat(entry, &st), 0);
    ck_assert_int_ne(stat(seal, &st), 0);
    free(a1);
    free(a2);
}
END_TEST

/* Bytes of allocated blocks below (and of) path, as the collector counts. */
static uint64_t blocks_of(const char *path) {
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    uint64_t sum = (uint64_t)st.st_blocks * 512;
    if (!S_ISDIR(st.st_mode))
        return sum;
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
            sum += blocks_of(sub);
        }
    closedir(d);
    return sum;
}

static void set_used(const char *seal, time_t ago) {
    struct timespec t[2] = {{time(NULL) - ago, 0}, {time(NULL) - ago, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, seal, t, 0), 0);
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* fy_action_cache_gc: by age, then by size (least recently used first),
 * staging a crash left; never an entry an attempt holds. */
START_TEST(test_action_cache_gc_api) {
    const struct ent e1[] = {{"./one.txt", AE_IFREG, "one\n", NULL, 0}};
    const struct ent e2[] = {{"./two.txt", AE_IFREG, "two\n", NULL, 0}};
    const struct ent e3[] = {{"./three.txt", AE_IFREG, "three\n", NULL, 0}};
    char *ar[3] = {make_archive(e1, 1), make_archive(e2, 1), make_archive(e3, 1)};
    const char *cmds[3] = {"cat one.txt > r", "cat two.txt > r", "cat three.txt > r"};
    const char *wants[3] = {"one\n", "two\n", "three\n"};
    char entry[3][512], seal[3][512];
    uint64_t n = 99;
    fy_error *err = NULL;
    /* A directory that is no cache: nothing to collect, nothing made in it
     * (the cache's layout was made in any directory a mistyped path named). */
    char *plain = make_dir("not-a-cache");
    n = 99;
    ck_assert_int_eq(fy_action_cache_gc(plain, FY_UNLIMITED, 0, &n, NULL), 0);
    ck_assert_uint_eq(n, 0);
    DIR *pd = opendir(plain);
    int inside = 0;
    for (struct dirent *de; pd && (de = readdir(pd));)
        inside += de->d_name[0] != '.';
    if (pd)
        closedir(pd);
    ck_assert_int_eq(inside, 0);
    rmdir(plain);
    free(plain);
    /* Start from an empty cache: this test's entries only. */
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, FY_UNLIMITED, 0, NULL, NULL), 0);
    for (int i = 0; i < 3; i++) {
        entry_of(ar[i], entry[i], seal[i], sizeof(entry[i]));
        run_cached(ar[i], cmds[i], "built", wants[i]);
    }
    /* By age: only the entry unused for longer than the bound. */
    set_used(seal[0], 3 * 86400);
    set_used(seal[1], 3600);
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, FY_UNLIMITED, 2ull * 86400 * 1000000, &n, &err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!exists(entry[0]) && !exists(seal[0]));
    ck_assert(exists(entry[1]) && exists(seal[1]) && exists(entry[2]) && exists(seal[2]));
    /* By size: the least recently used go first, until the rest fits. */
    run_cached(ar[0], cmds[0], "built", wants[0]);
    set_used(seal[0], 300);
    set_used(seal[1], 200);
    set_used(seal[2], 100);
    uint64_t newest = blocks_of(entry[2]);
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, newest, FY_UNLIMITED, &n, &err), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(!exists(entry[0]) && !exists(entry[1]) && exists(entry[2]) && exists(seal[2]));
    /* In use: an attempt started from the cache holds its entry, whatever
     * the bounds; once it is freed, the entry goes. */
    run_cached(ar[0], cmds[0], "built", wants[0]);
    char *sc = make_dir("scratch-gc");
    fy_action *a = archive_action(ar[2], cmds[2]);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    int r = fy_action_start(a, p, NULL, &t, &err);
    ck_assert_msg(r == 0, "%s", err ? fy_error_message(err) : "?");
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, 0, 0, &n, &err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!exists(entry[0]));
    ck_assert_msg(exists(entry[2]) && exists(seal[2]), "an entry in use was collected");
    fy_action_result *res = NULL;
    ck_assert_int_eq(fy_action_finish(t, &res, &err), 0);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED && strstr(j, "\"cache\": \"hit\""), "%s", j);
    free(j);
    fy_action_result_free(res);
    fy_action_attempt_free(t);
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, FY_UNLIMITED, 0, &n, &err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!exists(entry[2]) && !exists(seal[2]));
    /* What a crash left in staging: a tree being made (nobody holds its
     * entry's lock) and an old memo; a fresh memo is somebody's. */
    char path[600];
    snprintf(path, sizeof(path), "%s/tmp/%.64s.0badf00d", cache_dir, strrchr(entry[1], '/') + 1);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/half");
    ck_assert_int_eq(close(open(path, O_WRONLY | O_CREAT, 0444)), 0);
    snprintf(path, sizeof(path), "%s/tmp/memo.00000001", cache_dir);
    ck_assert_int_eq(close(open(path, O_WRONLY | O_CREAT, 0600)), 0);
    set_used(path, 120);
    snprintf(path, sizeof(path), "%s/tmp/memo.00000002", cache_dir);
    ck_assert_int_eq(close(open(path, O_WRONLY | O_CREAT, 0600)), 0);
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, FY_UNLIMITED, FY_UNLIMITED, &n, &err), 0);
    ck_assert_uint_eq(n, 0);
    snprintf(path, sizeof(path), "%s/tmp", cache_dir);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    int left = 0;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            ck_assert_str_eq(de->d_name, "memo.00000002");
            left++;
        }
    closedir(d);
    ck_assert_int_eq(left, 1);
    /* Collected entries are made again on the next use. */
    run_cached(ar[2], cmds[2], "built", wants[2]);
    /* Refusals: relative, untrusted; a cache never made is nothing to do. */
    ck_assert_int_eq(fy_action_cache_gc("relative/cache", FY_UNLIMITED, 0, &n, NULL), FY_E_INVAL);
    ck_assert_int_eq(chmod(cache_dir, 0777), 0);
    r = fy_action_cache_gc(cache_dir, FY_UNLIMITED, 0, &n, NULL);
    ck_assert_int_eq(chmod(cache_dir, 0711), 0);
    ck_assert_int_eq(r, FY_E_DENIED);
    ck_assert(exists(entry[2]));
    snprintf(path, sizeof(path), "%s/never-made", scratch);
    ck_assert_int_eq(fy_action_cache_gc(path, FY_UNLIMITED, 0, &n, NULL), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert(!exists(path));
    /* A refused archive never gets an entry: gc leaves no lock file of it
     * (one per hostile archive piled up for good). */
    const struct ent bad[] = {{"/tmp/fy-action-test-escape", AE_IFREG, "x", NULL, 0}};
    expect_archive_refused(bad, 1, FY_E_INVAL, "absolute");
    ck_assert_int_eq(fy_action_cache_gc(cache_dir, FY_UNLIMITED, FY_UNLIMITED, &n, NULL), 0);
    snprintf(path, sizeof(path), "%s/locks", cache_dir);
    d = opendir(path);
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strlen(de->d_name) != 69)
            continue;
        char ent[700];
        snprintf(ent, sizeof(ent), "%s/entries/%.64s", cache_dir, de->d_name);
        ck_assert_msg(exists(ent), "lock file %s without an entry", de->d_name);
    }
    closedir(d);
    fy_error_free(err);
    fy_action_free(a);
    fy_policy_free(p);
    free(sc);
    for (int i = 0; i < 3; i++)
        free(ar[i]);
}
END_TEST

/* Inputs from the cache, attacked from inside: the entry is unchanged
 * (its tree digest, and its seal: the next run hits). */
START_TEST(test_archive_cache_attacked) {
    const struct ent ents[] = {
        {"./src/", AE_IFDIR, NULL, NULL, 0},
        {"./src/a.c", AE_IFREG, "int main(void) { return 0; }\n", NULL, 0},
        {"./src/deep/", AE_IFDIR, NULL, NULL, 0},
        {"./src/deep/c.txt", AE_IFREG, "deep input\n", NULL, 0},
        {"./tool.sh", AE_IFREG, "#!/bin/sh\necho tool\n", NULL, 0},
        {"./link", AE_IFLNK, NULL, "src/a.c", 0},
        {"./hard", -1, NULL, "./src/a.c", 0},
    };
    char *ar = make_archive(ents, sizeof(ents) / sizeof(ents[0]));
    char entry[512], seal[512];
    entry_of(ar, entry, seal, sizeof(entry));
    run_cached(ar, "cat src/a.c > r", "built", "int main(void) { return 0; }\n");
    unsigned char before[32], after[32];
    tree_digest(entry, before);
    char *sc = make_dir("scratch"), *out = path_in("out", "");
    char *doc = NULL;
    ck_assert_int_ge(asprintf(&doc, "{\"version\": 1, \"input_root\": {\"archive\": \"%s\"}, "
                                    "\"arguments\": [\"/bin/sh\", \"-c\", \"" ATTACK "\"],"
                                    "\"environment\": {\"PATH\": \"/usr/bin:/bin\"},"
                                    "\"outputs\": {\"directories\": [\"report\"]}}", ar), 0);
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, NULL), 0);
    free(doc);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    ck_assert_msg(strstr(j, "\"cache\": \"hit\""), "%s", j);
    assert_root(j, overlay_here);
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/report/left", out);
    char *left = read_all(sub);
    ck_assert_ptr_nonnull(left);
    ck_assert_msg(!strstr(left, "src") && !strstr(left, "tool.sh"), "left: %s", left);
    free(left);
    tree_digest(entry, after);
    ck_assert_msg(memcmp(before, after, 32) == 0, "the cache entry changed: %s", j);
    assert_no_attempt_left(sc);
    assert_no_mount_of(sc);
    free(j);
    fy_action_result_free(res);
    fy_action_free(a);
    fy_policy_free(p);
    /* sealed as before: the next run uses it */
    run_cached(ar, "cat src/deep/c.txt > r", "hit", "deep input\n");
    free(ar); free(sc); free(out);
}
END_TEST


static void expect_start_error(const char *props, int code, const char *loc) {
    char *in = make_input();
    char *doc = NULL;
    ck_assert_int_ge(asprintf(&doc, "{\"version\": 1, \"input_root\": {\"directory\": \"%s\"}, "
                                    "\"arguments\": [\"/bin/true\"], \"platform\": %s}", in, props), 0);
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    fy_error *err = NULL;
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, &err), code);
    ck_assert_msg(fy_error_location(err) && strcmp(fy_error_location(err), loc) == 0, "%s: %s",
                  fy_error_location(err), fy_error_message(err));
    fy_error_free(err);
    fy_action_free(a);
    fy_policy_free(p);
    free(doc);
    free(in);
}

START_TEST(test_platform_properties) {
    expect_start_error("{\"gpu\": \"1\"}", FY_E_UNSUPPORTED, "$.platform.gpu");
    expect_start_error("{\"OSFamily\": \"windows\"}", FY_E_UNSUPPORTED, "$.platform.OSFamily");
    expect_start_error("{\"ISA\": \"sparc\"}", FY_E_UNSUPPORTED, "$.platform.ISA");
    /* release denies the network: an action cannot widen it */
    expect_start_error("{\"network\": \"allow\"}", FY_E_UNSUPPORTED, "$.platform.network");
    expect_start_error("{\"dockerNetwork\": \"standard\"}", FY_E_UNSUPPORTED, "$.platform.dockerNetwork");
    /* a level this host does not have: refused, never run weaker */
    char *in = make_input();
    char *doc = NULL;
    ck_assert_int_ge(asprintf(&doc, "{\"version\": 1, \"input_root\": {\"directory\": \"%s\"}, "
                                    "\"arguments\": [\"/bin/true\"], \"platform\": {\"sandbox-level\": "
                                    "\"confidential-vm\", \"OSFamily\": \"Linux\", \"Pool\": \"default\"}}", in), 0);
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, NULL), FY_E_UNSUPPORTED);
    fy_action_free(a);
    fy_policy_free(p);
    free(doc);
    free(in);
}
END_TEST

static void expect_parse_error(const char *doc, const char *loc) {
    fy_action *a = NULL;
    fy_error *err = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, &err), FY_E_INVAL);
    ck_assert_ptr_null(a);
    ck_assert_msg(fy_error_location(err) && strncmp(fy_error_location(err), loc, strlen(loc)) == 0, "%s: %s: %s",
                  doc, fy_error_location(err), fy_error_message(err));
    fy_error_free(err);
}

START_TEST(test_documents) {
    expect_parse_error("[]", "$");
    expect_parse_error("{\"version\": 1", "$ (line");
    expect_parse_error("{\"version\": 2, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}}", "$.version");
    expect_parse_error("{\"version\": 1, \"input_root\": {\"directory\": \"/x\"}}", "$.arguments");
    expect_parse_error("{\"version\": 1, \"arguments\": [], \"input_root\": {\"directory\": \"/x\"}}", "$.arguments");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\", 3], \"input_root\": {\"directory\": \"/x\"}}",
                       "$.arguments[1]");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"rel\"}}",
                       "$.input_root.directory");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/\", \"archive\": \"/a\"}}",
                       "$.input_root");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, \"extra\": 1}",
                       "$.extra");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"outputs\": {\"files\": [\"a\", \"../b\"]}}", "$.outputs.files[1]");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"outputs\": {\"files\": [\"/abs\"]}}", "$.outputs.files[0]");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"outputs\": {\"files\": [\"a//b\"]}}", "$.outputs.files[0]");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"outputs\": {\"directories\": [\"a\"], \"files\": [\"a/b\"]}}", "$.outputs.directories[0]");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"environment\": {\"A=B\": \"x\"}}", "$.environment");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"working_directory\": \"../up\"}", "$.working_directory");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"limits\": {\"output_bytes\": 0}}", "$.limits.output_bytes");
    expect_parse_error("{\"version\": 1, \"arguments\": [\"x\"], \"input_root\": {\"directory\": \"/x\"}, "
                       "\"version\": 1}", "$");
    /* The canonical form reads back to the same document and digest. */
    const char *doc = "{\"version\": 1, \"arguments\": [\"b\", \"a\"], \"input_root\": {\"directory\": \"/x\"}, "
                      "\"outputs\": {\"files\": [\"z\", \"y\"]}, \"environment\": {\"B\": \"1\", \"A\": \"2\"}}";
    fy_action *a = NULL, *b = NULL;
    ck_assert_int_eq(fy_action_from_json(doc, strlen(doc), &a, NULL), 0);
    char *j = NULL, *d1 = NULL, *d2 = NULL;
    ck_assert_int_eq(fy_action_to_json(a, &j, NULL), 0);
    ck_assert_int_eq(fy_action_from_json(j, strlen(j), &b, NULL), 0);
    ck_assert_int_eq(fy_action_digest(a, &d1, NULL), 0);
    ck_assert_int_eq(fy_action_digest(b, &d2, NULL), 0);
    ck_assert_str_eq(d1, d2);
    ck_assert_int_eq(strncmp(d1, "sha256:", 7), 0);
    /* Host paths are not part of the digest; the command is. */
    ck_assert_int_eq(fy_action_set_output_directory(b, "/elsewhere", NULL), 0);
    fy_free(d2);
    ck_assert_int_eq(fy_action_digest(b, &d2, NULL), 0);
    ck_assert_str_eq(d1, d2);
    ck_assert_int_eq(fy_action_set_env(b, "C", "3", NULL), 0);
    fy_free(d2);
    ck_assert_int_eq(fy_action_digest(b, &d2, NULL), 0);
    ck_assert_str_ne(d1, d2);
    fy_free(j); fy_free(d1); fy_free(d2);
    fy_action_free(a);
    fy_action_free(b);
}
END_TEST

/* An attempt handle works like any handle: cancel it, and nothing is left. */
START_TEST(test_cancel) {
    char *in = make_input(), *sc = make_dir("scratch");
    fy_action *a = action_json("\"arguments\": [\"/bin/sleep\", \"60\"]}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, NULL), 0);
    ck_assert_int_eq(fy_handle_cancel(fy_action_attempt_handle(t), FY_CANCEL_USER, NULL), 0);
    fy_action_result *res = NULL;
    ck_assert_int_eq(fy_action_finish(t, &res, NULL), 0);
    ck_assert_int_eq(fy_action_result_outcome(res), FY_OUTCOME_CANCELLED);
    fy_action_result *again = NULL;
    ck_assert_int_eq(fy_action_finish(t, &again, NULL), FY_E_STATE);
    ck_assert_ptr_null(again);
    fy_action_attempt_free(t);
    assert_no_attempt_left(sc);
    fy_action_result_free(res);
    /* freed while running: killed, removed */
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, NULL), 0);
    fy_action_attempt_free(t);
    assert_no_attempt_left(sc);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc);
}
END_TEST

/* An output directory that is not empty is refused by fy_action_start,
 * before the command runs (a build of an hour is not run for nothing),
 * and the attempt leaves nothing; an empty or missing one is accepted. */
/* The host never writes into a directory input root: an output directory
 * or a kept stdout/stderr inside it (or reached through a link to a place
 * in it) is refused before anything runs, and the root is as it was. */
START_TEST(test_host_writes_not_in_input) {
    char *in = make_input(), *sc = make_dir("scratch");
    char res[512], link[512], via[600], kept[512];
    snprintf(res, sizeof(res), "%s/empty", in);
    snprintf(link, sizeof(link), "%s/to-input-%d", scratch, (int)getpid());
    ck_assert_int_eq(symlink(in, link), 0);
    snprintf(via, sizeof(via), "%s/empty", link); /* (a link as the last name is refused as such) */
    snprintf(kept, sizeof(kept), "%s/src/stdout.txt", in);
    /* (and one still to be made, two levels below the root: it was taken
     * for outside, made, and written) */
    char missing[600];
    snprintf(missing, sizeof(missing), "%s/src/new/deeper", in);
    for (int k = 0; k < 4; k++) {
        fy_action *a = action_json("\"arguments\": [\"/bin/true\"]}", in);
        ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
        if (k == 3)
            ck_assert_int_eq(fy_action_set_output_directory(a, missing, NULL), 0);
        else if (k < 2)
            ck_assert_int_eq(fy_action_set_output_directory(a, k == 0 ? res : via, NULL), 0);
        else
            ck_assert_int_eq(fy_action_set_stdio_path(a, FY_STDOUT, kept, NULL), 0);
        fy_policy *p = policy();
        fy_action_attempt *t = NULL;
        fy_error *err = NULL;
        int r = fy_action_start(a, p, NULL, &t, &err);
        ck_assert_msg(r == FY_E_INVAL, "case %d: %d %s", k, r, fy_error_message(err));
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(fy_error_message(err), "inside the input root"), "%s", fy_error_message(err));
        ck_assert_str_eq(fy_error_location(err), k == 2 ? "$.stdout_path" : "$.output_directory");
        fy_error_free(err);
        assert_no_attempt_left(sc);
        ck_assert_int_ne(access(kept, F_OK), 0);
        snprintf(missing, sizeof(missing), "%s/src/new", in);
        ck_assert_int_ne(access(missing, F_OK), 0);
        snprintf(missing, sizeof(missing), "%s/src/new/deeper", in);
        fy_action_free(a);
        fy_policy_free(p);
    }
    unlink(link);
    free(in); free(sc);
}
END_TEST

START_TEST(test_output_dir_not_empty_at_start) {
    char *in = make_input(), *sc = make_dir("scratch"), *out = make_dir("out-full");
    char f[512];
    snprintf(f, sizeof(f), "%s/old", out);
    int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    fy_action *a = action_json("\"arguments\": [\"/bin/sleep\", \"60\"]}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    fy_action_attempt *t = NULL;
    fy_error *err = NULL;
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, &err), FY_E_STATE);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(fy_error_message(err), "not empty"), "%s", fy_error_message(err));
    fy_error_free(err);
    assert_no_attempt_left(sc);
    /* emptied: it starts */
    ck_assert_int_eq(unlink(f), 0);
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, NULL), 0);
    fy_action_attempt_free(t);
    assert_no_attempt_left(sc);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(out);
}
END_TEST

/* stdout_path and stderr_path are new files: one that exists is refused by
 * fy_action_start, before the command runs, not at finish after it. */
START_TEST(test_stdio_path_exists_at_start) {
    char *in = make_input(), *sc = make_dir("scratch"), *so = path_in("stdout-old", "");
    int fd = open(so, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    fy_action *a = action_json("\"arguments\": [\"/bin/sleep\", \"60\"]}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    for (uint32_t stream = 1; stream <= 2; stream++) {
        ck_assert_int_eq(fy_action_set_stdio_path(a, stream, so, NULL), 0);
        ck_assert_int_eq(fy_action_set_stdio_path(a, 3 - stream, NULL, NULL), 0);
        fy_policy *p = policy();
        fy_action_attempt *t = NULL;
        fy_error *err = NULL;
        ck_assert_int_eq(fy_action_start(a, p, NULL, &t, &err), FY_E_STATE);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(fy_error_message(err), "exists"), "%s", fy_error_message(err));
        fy_error_free(err);
        fy_policy_free(p);
        assert_no_attempt_left(sc);
    }
    fy_action_free(a);
    free(in); free(sc); free(so);
}
END_TEST

/* ---- the verdict beside the attempt (fy_action_run) ---- */

/* fy_action_run lets the attempt start while the input walk's verdict runs
 * beside it where nothing the attempt does reaches beyond its own
 * directory (network deny, no writable host path); fy_action_start walks
 * first. The result says which (timings_usec.input_walk_beside). */
START_TEST(test_verdict_beside) {
    if (!overlaid())
        return; /* the verdict only chooses the overlay */
    char *in = make_input(), *sc = make_dir("scratch"), *bind = make_dir("bind");
    chmod(bind, 0777);
    fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\", \"cat src/a.c > got\"],"
                               "\"outputs\": {\"files\": [\"got\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    fy_policy *p = policy();
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    assert_root(j, true);
    ck_assert_msg(!strstr(j, "\"input_walk_beside\": null"), "not beside: %s", j);
    free(j);
    fy_action_result_free(res);
    /* fy_action_start: the walk first */
    fy_action_attempt *t = NULL;
    ck_assert_int_eq(fy_action_start(a, p, NULL, &t, NULL), 0);
    ck_assert_int_eq(fy_action_finish(t, &res, NULL), 0);
    fy_action_attempt_free(t);
    j = result_json(res);
    ck_assert_msg(strstr(j, "\"input_walk_beside\": null"), "beside in fy_action_start: %s", j);
    free(j);
    fy_action_result_free(res);
    /* a writable host path: the walk first */
    fy_policy *q = policy();
    ck_assert_int_eq(fy_policy_add_bind(q, bind, "/work/cache", FY_BIND_WRITABLE, NULL), 0);
    res = run(a, q);
    j = result_json(res);
    ck_assert_msg(strstr(j, "\"input_walk_beside\": null"), "beside with a writable bind: %s", j);
    free(j);
    fy_action_result_free(res);
    fy_policy_free(q);
    assert_no_attempt_left(sc);
    fy_action_free(a);
    fy_policy_free(p);
    free(in); free(sc); free(bind);
}
END_TEST

/* An input the workload's ids cannot read: the attempt that ran beside
 * the verdict is discarded and the action made again materialised; what
 * the result and the output directory hold is the second attempt's alone.
 * Where the attempt could reach a host path (a writable bind) nothing runs
 * before the verdict: the command runs exactly once. */
START_TEST(test_verdict_beside_refused) {
    if (rootless || !overlaid())
        return; /* rootless, the caller's own files are the workload's */
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", ""), *bind = make_dir("bind");
    chmod(bind, 0777);
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/src/private.h", in);
    write_file(sub, "private\n", 0600);
    fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\", \"cat src/private.h > got;"
                               " echo once >> /work/cache/log 2>/dev/null; true\"],"
                               "\"outputs\": {\"files\": [\"got\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    for (int with_bind = 0; with_bind < 2; with_bind++) {
        fy_policy *p = policy();
        if (with_bind)
            ck_assert_int_eq(fy_policy_add_bind(p, bind, "/work/cache", FY_BIND_WRITABLE, NULL), 0);
        fy_action_result *res = run(a, p);
        char *j = result_json(res);
        ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
        assert_root(j, false);
        ck_assert_msg(strstr(j, "\"input_walk_beside\": null"), "%s", j);
        snprintf(sub, sizeof(sub), "%s/got", out);
        char *c = read_all(sub);
        ck_assert_str_eq(c, "private\n");
        free(c);
        ck_assert_int_eq(unlink(sub), 0);
        assert_no_attempt_left(sc);
        free(j);
        fy_action_result_free(res);
        fy_policy_free(p);
    }
    snprintf(sub, sizeof(sub), "%s/log", bind);
    char *log = read_all(sub);
    ck_assert_msg(log && strcmp(log, "once\n") == 0, "the command ran %s times: %s", log ? "several" : "no",
                  log ? log : "");
    free(log);
    fy_action_free(a);
    free(in); free(sc); free(out); free(bind);
}
END_TEST

/* An action that writes into the input's src directory and declares got
 * (src/new.txt's copy), scratch and outputs in sc and out. */
static fy_action *writes_into_src(const char *in, const char *sc, const char *out) {
    fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\","
                               " \"echo made > src/new.txt && cat src/new.txt > got\"],"
                               "\"outputs\": {\"files\": [\"got\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    return a;
}

/* The skeleton made beside the verdict lists only the directories whose
 * link count says they have subdirectories. A skeleton that lacks one of
 * the input's directories (as where a file system's link counts mislead)
 * is caught by the verdict's walk, which finds every directory: the
 * attempt is discarded and made again walk-first, where the workload
 * writes in that directory as in any other (as root, the input's owner is
 * not the workload: without the skeleton's directory the write fails). */
START_TEST(test_verdict_beside_skeleton_short) {
    if (!overlaid())
        return; /* the verdict only chooses the overlay */
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", "");
    fy_action *a = writes_into_src(in, sc, out);
    fy_policy *p = policy();
    policy_test_skeleton_short(p); /* the skeleton lacks src */
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    ck_assert_msg(strstr(j, "\"input_walk_beside\": null"), "not made again walk-first: %s", j);
    assert_root(j, true);
    char got[512];
    snprintf(got, sizeof(got), "%s/got", out);
    char *c = read_all(got);
    ck_assert_str_eq(c, "made\n");
    free(c);
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_policy_free(p);
    fy_action_free(a);
    free(in); free(sc); free(out);
}
END_TEST

/* fy_action_start_ex with FY_ACTION_START_SPECULATIVE, for a caller that
 * drives the handle itself: the same refusal (the skeleton lacks src) ends
 * the running attempt, superseded; fy_action_finish says FY_E_AGAIN with
 * nothing collected or kept; the start without the flag then succeeds. And
 * where the verdict holds, the speculative start's own result stands. */
START_TEST(test_start_speculative) {
    if (!overlaid())
        return;
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", "");
    fy_action *a = writes_into_src(in, sc, out);
    fy_policy *p = policy();
    fy_error *err = NULL;
    fy_action_attempt *t = NULL;
    ck_assert_int_eq(fy_action_start_ex(a, p, NULL, 0x80, &t, &err), FY_E_INVAL);
    ck_assert_ptr_null(t);
    fy_error_free(err);
    err = NULL;
    policy_test_skeleton_short(p); /* the skeleton lacks src */
    ck_assert_int_eq(fy_action_start_ex(a, p, NULL, FY_ACTION_START_SPECULATIVE, &t, &err), 0);
    fy_result *sres = NULL;
    ck_assert_int_eq(fy_handle_wait(fy_action_attempt_handle(t), FY_UNLIMITED, &sres, NULL), 1);
    ck_assert_int_eq(fy_result_outcome(sres), FY_OUTCOME_CANCELLED);
    ck_assert_int_eq(fy_result_cancel_reason(sres), FY_CANCEL_SUPERSEDED);
    fy_result_free(sres);
    fy_action_result *res = NULL;
    ck_assert_int_eq(fy_action_finish(t, &res, &err), FY_E_AGAIN);
    ck_assert_ptr_null(res);
    ck_assert_str_eq(fy_error_name(fy_error_code(err)), "FY_E_AGAIN");
    fy_error_free(err);
    err = NULL;
    fy_action_attempt_free(t);
    struct stat st;
    char got[512];
    snprintf(got, sizeof(got), "%s/got", out);
    ck_assert_msg(stat(got, &st) < 0 && errno == ENOENT, "a superseded attempt handed out an output");
    assert_no_attempt_left(sc);
    /* again, walk first */
    ck_assert_int_eq(fy_action_start_ex(a, p, NULL, 0, &t, &err), 0);
    ck_assert_int_eq(fy_action_finish(t, &res, &err), 0);
    fy_action_attempt_free(t);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    ck_assert_msg(strstr(j, "\"input_walk_beside\": null"), "%s", j);
    char *c = read_all(got);
    ck_assert_str_eq(c, "made\n");
    free(c);
    free(j);
    fy_action_result_free(res);
    fy_policy_free(p);
    assert_no_attempt_left(sc);
    /* a verdict that holds: the speculative attempt is the result */
    char *out2 = path_in("out2", "");
    ck_assert_int_eq(fy_action_set_output_directory(a, out2, NULL), 0);
    p = policy();
    ck_assert_int_eq(fy_action_start_ex(a, p, NULL, FY_ACTION_START_SPECULATIVE, &t, &err), 0);
    ck_assert_int_eq(fy_action_finish(t, &res, &err), 0);
    fy_action_attempt_free(t);
    j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", j);
    ck_assert_msg(!strstr(j, "\"input_walk_beside\": null"), "the walk did not run beside: %s", j);
    free(j);
    fy_action_result_free(res);
    fy_policy_free(p);
    fy_action_free(a);
    assert_no_attempt_left(sc);
    free(in); free(sc); free(out); free(out2);
}
END_TEST

/* Where the attempt's cleanup found a process still there (simulated: a
 * tests-only switch sets the witness), nothing is collected, listed or
 * handed out: the survivor could change a file as it is hashed. */
START_TEST(test_survivor_not_collected) {
    char *in = make_input(), *sc = make_dir("scratch"), *out = path_in("out", "");
    fy_action *a = action_json("\"arguments\": [\"/bin/sh\", \"-c\", \"echo made > got\"],"
                               "\"outputs\": {\"files\": [\"got\"]}}", in);
    ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
    ck_assert_int_eq(fy_action_set_output_directory(a, out, NULL), 0);
    fy_policy *p = policy();
    policy_test_survivor(p);
    fy_action_result *res = run(a, p);
    char *j = result_json(res);
    ck_assert_msg(fy_action_result_outcome(res) == FY_OUTCOME_INFRASTRUCTURE_FAILURE, "%s", j);
    ck_assert_msg(strstr(j, "outlived its end"), "%s", j);
    ck_assert_msg(!strstr(j, "\"path\": \"got\""), "an output listed: %s", j);
    struct stat st;
    ck_assert_msg(stat(out, &st) < 0 && errno == ENOENT, "the output directory was made");
    assert_no_attempt_left(sc);
    free(j);
    fy_action_result_free(res);
    fy_policy_free(p);
    fy_action_free(a);
    free(in); free(sc); free(out);
}
END_TEST

/* A FIFO or a socket in the input root is refused, typed, before the
 * sandbox starts, on either path (beside: from getdents' types). */
START_TEST(test_special_input_refused) {
    for (int kind = 0; kind < 2; kind++) {
        char *in = make_input(), *sc = make_dir("scratch");
        char sub[512];
        snprintf(sub, sizeof(sub), "%s/src/deep", in);
        ck_assert_int_eq(mkdir(sub, 0755), 0);
        snprintf(sub, sizeof(sub), "%s/src/deep/special", in);
        if (kind == 0) {
            ck_assert_int_eq(mkfifo(sub, 0644), 0);
        } else {
            int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            struct sockaddr_un su = {.sun_family = AF_UNIX};
            ck_assert_int_lt(strlen(sub), sizeof(su.sun_path));
            memcpy(su.sun_path, sub, strlen(sub) + 1);
            ck_assert_int_eq(bind(s, (struct sockaddr *)&su, sizeof(su)), 0);
            close(s);
        }
        fy_action *a = action_json("\"arguments\": [\"/bin/true\"]}", in);
        ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
        fy_policy *p = policy();
        fy_action_result *res = NULL;
        fy_error *err = NULL;
        ck_assert_int_eq(fy_action_run(a, p, NULL, &res, &err), FY_E_INVAL);
        ck_assert_ptr_null(res);
        ck_assert_msg(strstr(fy_error_message(err), kind == 0 ? "a FIFO" : "a socket"), "%s", fy_error_message(err));
        fy_error_free(err);
        err = NULL;
        fy_action_attempt *t = NULL;
        ck_assert_int_eq(fy_action_start(a, p, NULL, &t, &err), FY_E_INVAL);
        ck_assert_ptr_null(t);
        fy_error_free(err);
        assert_no_attempt_left(sc);
        fy_action_free(a);
        fy_policy_free(p);
        free(in); free(sc);
    }
    /* An archive input that is a FIFO (no writer): refused at once, not
     * waited on (it hung, deaf to SIGTERM, until SIGKILL). (A device is
     * refused by the parser: no host path under /dev.) */
    {
        char *sc = make_dir("scratch"), fifo[512];
        snprintf(fifo, sizeof(fifo), "%s/archive-fifo-%d.tar", scratch, (int)getpid());
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        fy_action *a = archive_action(fifo, "true");
        ck_assert_int_eq(fy_action_set_scratch_directory(a, sc, NULL), 0);
        fy_policy *p = policy();
        fy_action_attempt *t = NULL;
        fy_error *err = NULL;
        ck_assert_int_eq(fy_action_start(a, p, NULL, &t, &err), FY_E_INVAL);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(fy_error_message(err), "not a regular file"), "%s", fy_error_message(err));
        fy_error_free(err);
        assert_no_attempt_left(sc);
        fy_action_free(a);
        fy_policy_free(p);
        unlink(fifo);
        free(sc);
    }
}
END_TEST

int main(int argc, char **argv) {
    bool want_rootless = argc > 1 && strcmp(argv[1], "--rootless") == 0;
    if (sodium_init() < 0)
        return 1;
    if (want_rootless && getuid() == 0 && !getenv("FY_TEST_SCRATCH")) {
        snprintf(scratch, sizeof(scratch), "/tmp/fy-action-test-XXXXXX");
        if (!mkdtemp(scratch) || chown(scratch, 65534, 65534) < 0)
            return 1;
        setenv("FY_TEST_SCRATCH", scratch, 1);
        /* the ACL fixture: root's files with entries for uid 65534 */
        snprintf(acl_fixture, sizeof(acl_fixture), "%s/acl-in", scratch);
        make_acl_fixture(acl_fixture, "u:65534:PERM", 65534);
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            return 1;
        execv("/proc/self/exe", argv);
        return 1;
    }
    if (want_rootless && !getenv("FY_TEST_SCRATCH")) {
        fprintf(stderr, "not root: the rootless variant runs when the suite runs as root\n");
        return 77;
    }
    rootless = want_rootless || getuid() != 0;
    if (getenv("FY_TEST_SCRATCH")) {
        snprintf(scratch, sizeof(scratch), "%s", getenv("FY_TEST_SCRATCH"));
    } else {
        snprintf(scratch, sizeof(scratch), "/tmp/fy-action-test-XXXXXX");
        if (!mkdtemp(scratch))
            return 1;
        chmod(scratch, 0755);
    }
    umask(022);
    snprintf(acl_fixture, sizeof(acl_fixture), "%s/acl-in", scratch);
    if (!rootless)
        make_acl_fixture(acl_fixture, "u:100000:PERM,u:100001:PERM", 0);
    /* The archive cache: this run's own. */
    snprintf(cache_dir, sizeof(cache_dir), "%s/action-cache", scratch);
    setenv("FORGEYARD_ACTION_CACHE", cache_dir, 1);
    /* The overlay path is expected where the probe's overlay works and the
     * kernel takes layers by fd. */
    fy_caps *caps = NULL;
    char *cj = NULL;
    struct utsname un;
    unsigned major = 0, minor = 0;
    if (fy_probe(0, &caps, NULL) == 0 && fy_caps_to_json(caps, &cj, NULL) == 0 && uname(&un) == 0 &&
        sscanf(un.release, "%u.%u", &major, &minor) == 2) {
        const char *ctr = strstr(cj, "\"name\": \"linux-container\"");
        const char *end = ctr ? strchr(ctr, '}') : NULL, *usable = ctr ? strstr(ctr, "\"usable\": true") : NULL;
        overlay_here = usable && end && usable < end && (major > 6 || (major == 6 && minor >= 13));
    }
    fy_free(cj);
    fy_caps_free(caps);
    fprintf(stderr, "directory inputs: %s\n", overlay_here ? "overlay, and materialised (tcase materialised)"
                                                            : "materialised (no overlay here)");
    Suite *s = suite_create(rootless ? "action-rootless" : "action");
    TCase *tc = tcase_create("actions");
    TCase *tm = tcase_create("materialised");
    tcase_add_checked_fixture(tm, set_materialise, NULL);
    tcase_set_timeout(tc, 120);
    tcase_set_timeout(tm, 120);
    tcase_add_test(tc, test_outputs_and_digests);
    tcase_add_test(tc, test_killed_host_dir_swept);
    tcase_add_test(tc, test_refused_before_run);
    tcase_add_test(tc, test_output_overlaps);
    tcase_add_test(tc, test_input_with_a_mount);
    tcase_add_test(tc, test_exact_environment);
    tcase_add_test(tc, test_same_action_same_digests);
    tcase_add_test(tc, test_tree_digest_is_the_content);
    tcase_add_test(tc, test_inputs_never_written);
    tcase_add_test(tc, test_writable_input_copied);
    tcase_add_test(tc, test_output_link_outside);
    tcase_add_test(tc, test_output_special_files);
    tcase_add_test(tc, test_output_names_not_utf8);
    tcase_add_test(tc, test_output_limits);
    tcase_add_test(tc, test_archive_input);
    tcase_add_test(tc, test_archive_hostile);
    tcase_add_test(tc, test_archive_truncated);
    tcase_add_test(tc, test_archive_no_external_decoder);
    tcase_add_test(tc, test_archive_cache);
    tcase_add_test(tc, test_archive_cache_gc);
    tcase_add_test(tc, test_action_cache_gc_api);
    tcase_add_test(tc, test_archive_cache_remembered);
    tcase_add_test(tc, test_archive_cache_attacked);
    tcase_add_test(tc, test_platform_properties);
    tcase_add_test(tc, test_documents);
    tcase_add_test(tc, test_cancel);
    tcase_add_test(tc, test_output_dir_not_empty_at_start);
    tcase_add_test(tc, test_host_writes_not_in_input);
    tcase_add_test(tc, test_stdio_path_exists_at_start);
    tcase_add_test(tc, test_every_input_attacked);
    tcase_add_test(tc, test_deep_tree_removed);
    tcase_add_test(tc, test_outputs_already_in_inputs);
    tcase_add_test(tc, test_unreachable_input_materialised);
    tcase_add_test(tc, test_acl_verdict);
    tcase_add_test(tc, test_acl_added_after_memo);
    tcase_add_test(tc, test_verdict_beside);
    tcase_add_test(tc, test_verdict_beside_skeleton_short);
    tcase_add_test(tc, test_start_speculative);
    tcase_add_test(tc, test_survivor_not_collected);
    tcase_add_test(tc, test_verdict_beside_refused);
    tcase_add_test(tc, test_special_input_refused);
    /* The directory-input tests again, materialised. */
    tcase_add_test(tm, test_outputs_and_digests);
    tcase_add_test(tm, test_same_action_same_digests);
    tcase_add_test(tm, test_inputs_never_written);
    tcase_add_test(tm, test_writable_input_copied);
    tcase_add_test(tm, test_output_link_outside);
    tcase_add_test(tm, test_output_special_files);
    tcase_add_test(tm, test_every_input_attacked);
    tcase_add_test(tm, test_deep_tree_removed);
    tcase_add_test(tm, test_outputs_already_in_inputs);
    tcase_add_test(tm, test_cancel);
    tcase_add_test(tm, test_acl_verdict);
    tcase_add_test(tm, test_special_input_refused);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tm);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (!failed) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", scratch);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", scratch);
    }
    return failed ? 1 : 0;
}
