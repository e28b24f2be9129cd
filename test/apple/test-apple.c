/* The apple folder's portable half on Linux: the SBPL escaper, canonical
 * paths, the SBPL checker, the profiles generated from real policies
 * (golden files), the refusal table (every field of the neutral plan is
 * either in the profile, applied by the spawner, negotiated or refused:
 * read from lib/plan.h itself, so a new field fails here until handled),
 * negotiation, and the attempt's environment and paths.
 *
 *   test-apple SOURCE_ROOT        (APPLE_UPDATE_GOLDEN=1 rewrites test/apple/golden/) */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "apple-sbpl.h"
#include "policy.h"
#include "prepared.h"

static const char *srcroot = ".";
#define ATTEMPT "/private/var/folders/fy/T/forgeyard-golden"

/* ---- fixtures ---- */

static const struct fy_backend_ops test_apple = {
    .version = FY_BACKEND_OPS_VERSION, .name = "apple-seatbelt", .level = FY_LEVEL_PROCESS, .cost = 10,
    .usable = apple_seatbelt_usable, .can_enforce = apple_can_enforce,
    .compile = apple_compile, .plan_free = apple_plan_free, .describe = apple_describe,
};
static const struct fy_backend_ops *const table[] = {&test_apple};

static fy_caps *caps(bool root) {
    fy_caps *c = caps_new();
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(caps_set_fact(c, APPLE_FACT_SEATBELT, "enforced (scripted)"), 0);
    if (root)
        ck_assert_int_eq(caps_set_fact(c, APPLE_FACT_ROOT, "1"), 0);
    return c;
}

static char tmpbase[256];

static char *mkdir_in(const char *name) {
    char *p = util_asprintf("%s/%s", tmpbase, name);
    ck_assert_ptr_nonnull(p);
    ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
    return p;
}

/* A profile's policy as a macOS host program must give it: the process
 * level, and the Linux mechanisms preferred rather than required (else
 * negotiation refuses it: test_profiles_need_relaxing). */
static fy_policy *mac_policy(uint32_t profile) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(profile, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_isolation(p, FY_LEVEL_PROCESS, FY_LEVEL_PROCESS, NULL), 0);
    for (uint32_t c = 1; c <= FY_CONTROL_MAX_; c++)
        if (p->control[c] == FY_MODE_REQUIRE)
            ck_assert_int_eq(fy_policy_set_control(p, c, FY_MODE_PREFER, NULL), 0);
    return p;
}

static fy_prepared *prepare_rc(fy_policy *p, bool root, int want, const char *loc) {
    const char *argv[] = {"make", "-j4", NULL};
    fy_caps *c = caps(root);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    int r = prepare_with_table(table, 1, p, c, argv, &pr, &e);
    fy_caps_free(c);
    ck_assert_msg(r == want, "prepare: %d, wanted %d: %s", r, want, e ? fy_error_message(e) : "");
    if (loc)
        ck_assert_str_eq(fy_error_location(e), loc);
    fy_error_free(e);
    return pr;
}
static fy_prepared *prepare(fy_policy *p) { return prepare_rc(p, false, 0, NULL); }

/* Replaces host facts of this Linux machine in the neutral plan with a
 * fixed macOS-like set (runtime and trust paths, /etc databases copied
 * from the host, the temporary workspace's directory), so that golden
 * files do not depend on the machine. Runtime path discovery is plan.c's
 * (tested there); here only the mapping of roles to rules is. */
static void normalise(struct fy_plan *np) {
    size_t n = 0;
    size_t tl = strlen(tmpbase);
    for (size_t i = 0; i < np->nentries; i++) {
        struct plan_entry e = np->entries[i];
        if (e.role == PR_RUNTIME || e.role == PR_TRUST)
            continue;
        if (e.kind == PE_FILE && (strcmp(e.target, "/etc/services") == 0 || strcmp(e.target, "/etc/protocols") == 0))
            continue;
        if (e.host && strncmp(e.host, tmpbase, tl) == 0)
            e.host = arena_printf(&np->arena, "/Users/ci/job%s", e.host + tl);
        if (strncmp(e.target, tmpbase, tl) == 0)
            e.target = arena_printf(&np->arena, "/Users/ci/job%s", e.target + tl);
        np->entries[n++] = e;
    }
    np->nentries = n;
    struct plan_entry fixed[] = {
        {PE_HOST, PR_RUNTIME, PLAN_RO, "/usr", "/usr"},
        {PE_HOST, PR_RUNTIME, PLAN_RO, "/bin", "/bin"},
        {PE_HOST, PR_RUNTIME, PLAN_RO, "/System/Library", "/System/Library"},
        {PE_HOST, PR_RUNTIME, PLAN_RO | PLAN_FILE, "/etc/ld.so.cache", "/etc/ld.so.cache"},
        {PE_SYMLINK, PR_RUNTIME, 0, "/lib", NULL, "usr/lib"},
        {PE_HOST, PR_TRUST, PLAN_RO | PLAN_FILE, "/etc/ssl/cert.pem", "/etc/ssl/cert.pem"},
        {PE_FILE, PR_ETC, PLAN_RO, "/etc/services", NULL, "", 0644},
    };
    size_t add = FY_ARRAY_SIZE(fixed);
    struct plan_entry *ne = realloc(np->entries, (np->nentries + add) * sizeof(*ne));
    ck_assert_ptr_nonnull(ne);
    np->entries = ne;
    for (size_t i = 0; i < add; i++) {
        if (fixed[i].role == PR_TRUST && np->net_mode == FY_NET_DENY)
            continue;
        np->entries[np->nentries++] = fixed[i];
    }
}

static char *profile_of(const struct fy_plan *np, bool root, int want, const char *want_loc) {
    fy_caps *c = caps(root);
    void *ap = NULL;
    fy_error *e = NULL;
    int r = apple_compile(np, c, &ap, &e);
    fy_caps_free(c);
    ck_assert_msg(r == want, "compile: %d, wanted %d: %s", r, want, e ? fy_error_message(e) : "");
    if (want_loc)
        ck_assert_str_eq(fy_error_location(e), want_loc);
    fy_error_free(e);
    if (r < 0)
        return NULL;
    char *text = NULL;
    r = apple_profile(ap, ATTEMPT, &text, &e);
    ck_assert_msg(r == 0, "profile: %s", fy_error_message(e)); if (getenv("APPLE_DUMP")) fputs(text, stderr);
    apple_plan_free(ap);
    return text;
}

static void assert_checks(const char *text, const char *what) {
    const char *why;
    size_t off;
    int r = sbpl_check(text, strlen(text), &why, &off);
    ck_assert_msg(r == 0, "%s fails the check at %zu: %s", what, off, why);
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct strbuf sb;
    strbuf_init(&sb);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        strbuf_appendn(&sb, buf, n);
    fclose(f);
    if (!sb.buf)
        return util_strdup("");
    return strbuf_steal(&sb);
}

static void golden(const char *name, const char *text) {
    char *path = util_asprintf("%s/test/apple/golden/%s.sb", srcroot, name);
    if (getenv("APPLE_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
    }
    char *want = read_all(path);
    ck_assert_msg(want, "%s: missing (APPLE_UPDATE_GOLDEN=1 writes it)", path);
    size_t at = 0;
    while (want[at] && want[at] == text[at])
        at++;
    ck_assert_msg(strcmp(want, text) == 0, "%s differs from the generated profile at byte %zu: \"%.60s\" generated, "
                  "\"%.60s\" expected (APPLE_UPDATE_GOLDEN=1 rewrites it)", path, at, text + at, want + at);
    free(want);
    free(path);
}

/* ---- the escaper and canonical paths ---- */

static char *esc(const char *s, int *rc) {
    struct strbuf sb;
    strbuf_init(&sb);
    *rc = sbpl_append_string(&sb, s);
    if (*rc < 0) {
        strbuf_free(&sb);
        return NULL;
    }
    return strbuf_steal(&sb);
}

START_TEST(test_escaper) {
    static const struct { const char *in, *out; } ok[] = {
        {"/usr/bin", "\"/usr/bin\""},
        {"", "\"\""},
        {"a\"b", "\"a\\\"b\""},
        {"a\\b", "\"a\\\\b\""},
        {"\\\"", "\"\\\\\\\"\""},
        {"/Users/ci/caf\xc3\xa9", "\"/Users/ci/caf\xc3\xa9\""},               /* é kept as UTF-8 */
        {"/\xe6\x97\xa5\xe6\x9c\xac", "\"/\xe6\x97\xa5\xe6\x9c\xac\""},       /* CJK */
        {"/\xf0\x9f\x92\xa9", "\"/\xf0\x9f\x92\xa9\""},                       /* 4-byte */
        {"/x\") (allow default) (\"", "\"/x\\\") (allow default) (\\\"\""},  /* stays one string */
        {"/a;b#\"c", "\"/a;b#\\\"c\""},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(ok); i++) {
        int rc;
        char *s = esc(ok[i].in, &rc);
        ck_assert_msg(rc == 0, "%zu refused", i);
        ck_assert_str_eq(s, ok[i].out);
        free(s);
    }
    static const char *const bad[] = {
        "/a\nb", "/a\tb", "/a\rb", "\x01", "/a\x1b[31m", "/a\x7f", /* control characters */
        "/\xff", "/\xc0\xaf", "/\xe0\x80\xaf", "/\xed\xa0\x80", "/\xf4\x90\x80\x80", /* invalid, overlong, surrogate, > U+10FFFF */
        "/\xc3", "/\xe6\x97", "/\x80",                                               /* truncated, stray continuation */
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad); i++) {
        int rc;
        char *s = esc(bad[i], &rc);
        ck_assert_msg(rc == FY_E_POLICY && !s, "bad[%zu] accepted", i);
    }
}
END_TEST

START_TEST(test_canonical_paths) {
    static const struct { const char *in, *out; } ok[] = {
        {"/", "/"}, {"/tmp", "/private/tmp"}, {"/tmp/x", "/private/tmp/x"}, {"/var/folders/a", "/private/var/folders/a"},
        {"/etc/hosts", "/private/etc/hosts"}, {"/tmpfoo", "/tmpfoo"}, {"/private/tmp", "/private/tmp"},
        {"/Users/a b/c", "/Users/a b/c"}, {"/usr/..x", "/usr/..x"}, {"/usr/.x", "/usr/.x"},
    };
    char out[4096];
    for (size_t i = 0; i < FY_ARRAY_SIZE(ok); i++) {
        ck_assert_msg(sbpl_canonical_path(ok[i].in, out, sizeof(out)) == 0, "%s refused", ok[i].in);
        ck_assert_str_eq(out, ok[i].out);
    }
    static const char *const bad[] = {"", "usr", "./usr", "/usr/", "//usr", "/usr//bin", "/usr/./bin", "/usr/..",
                                      "/usr/../etc", "/."};
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad); i++)
        ck_assert_msg(sbpl_canonical_path(bad[i], out, sizeof(out)) == FY_E_POLICY, "%s accepted", bad[i]);
    char longp[5000];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    ck_assert_int_eq(sbpl_canonical_path(longp, out, sizeof(out)), FY_E_POLICY);
    ck_assert_int_eq(sbpl_canonical_path("/tmp/abc", out, 10), FY_E_POLICY); /* too small for /private */
}
END_TEST

/* ---- the checker ---- */

#define HEAD "(version 1)\n(deny default)\n"
START_TEST(test_checker) {
    static const struct { const char *text; const char *why; } cases[] = {
        {HEAD, NULL},
        {"; comment ( ) \"\n" HEAD "(allow file-read* (subpath \"/usr\") (literal \"/a\\\"b\"))\n", NULL},
        {HEAD "(allow process-fork)\n(allow network*)\n", NULL},
        {HEAD "(allow network-outbound (remote tcp \"localhost:80\"))", NULL},
        {HEAD "(allow file-read* (require-all (subpath \"/a\") (vnode-type REGULAR-FILE)))", NULL},
        {HEAD "(allow file-read* (regex #\"^/dev/ttys[0-9]+\"))", NULL},
        {HEAD "(allow mach-lookup (global-name \"com.apple.x\") (with no-log))", NULL},
        {HEAD "(allow signal (target same-sandbox))", NULL},
        {HEAD "(allow network-outbound (remote unix-socket (path-literal \"/private/var/run/x\")))", NULL},
        {HEAD "(allow network-outbound (remote unix-socket \"/private/var/run/x\"))", "path-literal"},
        {HEAD "(allow network-outbound (remote unix-socket (literal \"/x\")))", "path-literal"},
        {"", "the profile must hold"},
        {"(version 1)", "the profile must hold"},
        {HEAD "(allow file-read* (subpath \"/usr\")", "unbalanced '('"},
        {HEAD "(allow file-read* (subpath \"/usr\")))", "unbalanced ')'"},
        {HEAD "(allow file-read* (subpath \"/usr))", "unterminated string"},
        {HEAD "(allow file-read* (subpath \"/a\\nb\"))", "unknown escape"},
        {HEAD "(allow file-read* (subpath \"/a\nb\"))", "control character"},
        {HEAD "(allow file-read* (subpath \"/a\x01\"))", "control character"},
        {HEAD "(allow file-raed* (subpath \"/usr\"))", "unknown operation"},
        {HEAD "(allow file-read* (subpth \"/usr\"))", "unknown filter"},
        {HEAD "(allow file-read* (subpath /usr))", "takes one string"},
        {HEAD "(allow file-read* (subpath \"/a\" \"/b\"))", "too many arguments"},
        {HEAD "(allow default)", "(allow default)"},
        {HEAD "(allow process-exec (with no-sandbox) (subpath \"/bin\"))", "no-sandbox"},
        {HEAD "(allow iokit-open (global-name \"IOSurfaceRootUserClient\"))", "iokit-open"},
        {HEAD "(allow file-read*)", "without a filter"},
        {HEAD "(allow process-exec)", "without a filter"},
        {HEAD "(allow mach-lookup)", "without a filter"},
        {HEAD "(allow sysctl-read)", "without a filter"},
        {HEAD "(allow)", "names no operation"},
        {HEAD "(allow (subpath \"/a\"))", "names no operation"},
        {HEAD "(allow file-read* (subpath \"/a\") file-write*)", "operations, then filters"},
        {HEAD "(permit file-read* (subpath \"/a\"))", "allow or a deny"},
        {HEAD "file-read*", "a top-level item must be a form"},
        {"(deny default)\n(version 1)\n", "(version 1)"},
        {"(version 2)\n(deny default)\n", "(version 1)"},
        {"(version 1)\n(allow default)\n", "(deny default) must follow"},
        {HEAD "(allow network-outbound (remote tcp localhost))", "address string"},
        {HEAD "(allow signal (target everyone))", "same-sandbox"},
        {HEAD "(allow file-read* (require-all))", "require-*"},
        {HEAD "(allow file-read* (with log))", "unknown modifier"},
        {HEAD "(allow file-read* (subpath \"/\xc3\xa9\") caf\xc3\xa9)", "unexpected byte"},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(cases); i++) {
        const char *why = NULL;
        size_t off = 0;
        int r = sbpl_check(cases[i].text, strlen(cases[i].text), &why, &off);
        if (!cases[i].why) {
            ck_assert_msg(r == 0, "case %zu refused at %zu: %s", i, off, why);
        } else {
            ck_assert_msg(r == -1, "case %zu accepted (expected: %s)", i, cases[i].why);
            ck_assert_msg(strstr(why, cases[i].why), "case %zu: \"%s\", expected \"%s\"", i, why, cases[i].why);
        }
    }
    /* NUL bytes and the size limit. */
    const char nul[] = HEAD "(allow file-read* (literal \"/a\0b\"))";
    const char *why;
    size_t off;
    ck_assert_int_eq(sbpl_check(nul, sizeof(nul) - 1, &why, &off), -1);
    ck_assert_ptr_nonnull(strstr(why, "NUL"));
    struct strbuf big;
    strbuf_init(&big);
    strbuf_append(&big, HEAD);
    while (big.len <= APPLE_SBPL_MAX)
        strbuf_append(&big, "(allow file-read* (literal \"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"))\n");
    ck_assert_int_eq(sbpl_check(big.buf, big.len, &why, &off), -1);
    ck_assert_ptr_nonnull(strstr(why, "larger"));
    strbuf_free(&big);
}
END_TEST

/* Every golden file passes the checker (they are what goes to Seatbelt). */
START_TEST(test_golden_files_check) {
    char *dir = util_asprintf("%s/test/apple/golden", srcroot);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".sb") != 0)
            continue;
        char *path = util_asprintf("%s/%s", dir, de->d_name);
        char *text = read_all(path);
        ck_assert_ptr_nonnull(text);
        assert_checks(text, path);
        ck_assert_ptr_nonnull(strstr(text, "(deny file-write-setugid)\n"));
        ck_assert_ptr_null(strstr(text, "no-sandbox"));
        ck_assert_ptr_null(strstr(text, "iokit-open"));
        /* and the checker is not vacuous on it: a lost ')' or an extra
         * (allow default) is caught */
        char *cut = strrchr(text, ')');
        const char *why;
        size_t off;
        *cut = ' ';
        ck_assert_int_eq(sbpl_check(text, strlen(text), &why, &off), -1);
        *cut = ')';
        char *more = util_asprintf("%s(allow default)\n", text);
        ck_assert_int_eq(sbpl_check(more, strlen(more), &why, &off), -1);
        free(more);
        free(text);
        free(path);
        n++;
    }
    closedir(d);
    free(dir);
    ck_assert_int_ge(n, 4);
}
END_TEST

/* ---- golden profiles from real policies ---- */

static fy_prepared *golden_prepare(fy_policy *p, const char *name, bool root) {
    fy_prepared *pr = prepare_rc(p, root, 0, NULL);
    normalise(pr->neutral);
    char *text = profile_of(pr->neutral, root, 0, NULL);
    assert_checks(text, name);
    golden(name, text);
    free(text);
    return pr;
}

START_TEST(test_golden_development) {
    fy_policy *p = mac_policy(FY_PROFILE_DEVELOPMENT);
    char *src = mkdir_in("source");
    ck_assert_int_eq(fy_policy_set_source(p, src, 1, NULL), 0);
    fy_prepared *pr = golden_prepare(p, "development", false);
    fy_prepared_free(pr);
    free(src);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_golden_standard_ci) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *src = mkdir_in("source"), *build = mkdir_in("build"), *out = mkdir_in("output");
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
    ck_assert_int_eq(fy_policy_set_output(p, out, NULL), 0);
    fy_prepared *pr = golden_prepare(p, "standard-ci", false);
    fy_prepared_free(pr);
    free(src);
    free(build);
    free(out);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_golden_release) {
    fy_policy *p = mac_policy(FY_PROFILE_RELEASE);
    char *src = mkdir_in("source"), *tc = mkdir_in("xcode");
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_add_toolchain(p, "xcode", tc, NULL), 0);
    /* As root with the id range enforced: a dedicated uid. */
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_UID_RANGE, FY_MODE_REQUIRE, NULL), 0);
    fy_prepared *pr = golden_prepare(p, "release", true);
    const char *d = apple_describe(pr->plan);
    ck_assert_ptr_nonnull(strstr(d, "\"identity\":\"dedicated-uid\""));
    ck_assert_ptr_nonnull(strstr(d, "\"uid\":100000"));
    uint32_t uid, gid; /* chosen per attempt: no ids to give at prepare */
    ck_assert_int_eq(apple_workload_ids(pr->plan, &uid, &gid), FY_E_UNSUPPORTED);
    fy_prepared_free(pr);
    free(src);
    free(tc);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_golden_destinations) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *src = mkdir_in("source"), *cache = mkdir_in("cache"), *ro = mkdir_in("cache/ro"), *tc = mkdir_in("sdk");
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 8080, 8080, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_UDP, 5353, 5354, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 1, 65535, NULL), 0);
    /* binds at their host paths (Seatbelt remaps nothing): a writable one
     * with a read-only one inside it, which the profile denies writes again */
    ck_assert_int_eq(fy_policy_add_bind(p, cache, cache, FY_BIND_WRITABLE, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, ro, ro, FY_BIND_READ_ONLY, NULL), 0);
    fy_prepared *pr = prepare_rc(p, false, FY_E_POLICY, "$.filesystem.binds[1].target"); /* core refuses nesting */
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 8080, 8080, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_UDP, 5353, 5354, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 1, 65535, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, cache, cache, FY_BIND_WRITABLE, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, tc, tc, FY_BIND_READ_ONLY, NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "token", FY_SECRET_FILE, "token", "s3cret", 6, NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "key", FY_SECRET_ENV, "KEY", "k", 1, NULL), 0);
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/zero", 0, NULL), 0);
    pr = golden_prepare(p, "destinations", false);
    fy_prepared_free(pr);
    free(src);
    free(cache);
    free(ro);
    free(tc);
    fy_policy_free(p);
}
END_TEST

/* What each golden profile must say, checked on the text itself (so that a
 * regenerated golden file cannot quietly lose it). */
START_TEST(test_profile_content) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *src = mkdir_in("source"), *build = mkdir_in("build");
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
    fy_prepared *pr = prepare(p);
    normalise(pr->neutral);
    char *t = profile_of(pr->neutral, false, 0, NULL);
    ck_assert(strncmp(t, "; forgeyard-sandbox", 19) == 0);
    ck_assert_ptr_nonnull(strstr(t, "(version 1)\n(deny default)\n"));
    const char *rd = strstr(t, "(allow file-read*\n"), *wr = strstr(t, "(allow file-write*\n"),
               *ex = strstr(t, "(allow process-exec\n");
    ck_assert(rd && wr && ex);
    /* source read-only: read and exec, never write */
    const char *s = strstr(rd, "(subpath \"/Users/ci/job/source\")");
    ck_assert(s && s < ex);
    ck_assert_ptr_null(strstr(wr, "/Users/ci/job/source\""));
    /* build writable; scratch, HOME and /work/tmp are the attempt's */
    ck_assert_ptr_nonnull(strstr(wr, "(subpath \"/Users/ci/job/build\")"));
    ck_assert_ptr_nonnull(strstr(wr, "(subpath \"" ATTEMPT "/fs/tmp\")"));
    ck_assert_ptr_nonnull(strstr(wr, "(subpath \"" ATTEMPT "/fs/home/forgeyard\")"));
    ck_assert_ptr_nonnull(strstr(wr, "(subpath \"" ATTEMPT "/fs/work/tmp\")"));
    /* runtime read-only; the generated /etc files read from the attempt */
    ck_assert_ptr_nonnull(strstr(rd, "(subpath \"/usr\")"));
    ck_assert_ptr_null(strstr(wr, "\"/usr\""));
    ck_assert_ptr_nonnull(strstr(rd, "(literal \"" ATTEMPT "/fs/etc/passwd\")"));
    ck_assert_ptr_nonnull(strstr(rd, "(literal \"/private/etc/ld.so.cache\")"));
    /* the host's /etc itself is not readable, nor / (only its metadata) */
    ck_assert_ptr_null(strstr(t, "(subpath \"/private/etc\")"));
    ck_assert_ptr_null(strstr(t, "(subpath \"/\")"));
    ck_assert_ptr_nonnull(strstr(t, "(allow file-read-metadata\n    (literal \"/\")"));
    /* devices, network denied, process rules, allowlists */
    ck_assert_ptr_nonnull(strstr(t, "(allow file-read* file-write-data\n    (literal \"/dev/null\")"));
    ck_assert_ptr_null(strstr(t, "network-outbound"));
    ck_assert_ptr_null(strstr(t, "(allow network"));
    ck_assert_ptr_nonnull(strstr(t, "(allow process-fork)"));
    ck_assert_ptr_nonnull(strstr(t, "(allow process-info* (target same-sandbox))"));
    ck_assert_ptr_nonnull(strstr(t, "(sysctl-name \"hw.ncpu\")"));
    ck_assert_ptr_null(strstr(t, "kern.hostname"));
    ck_assert_ptr_nonnull(strstr(t, "(global-name \"com.apple.system.opendirectoryd.libinfo\")"));
    ck_assert_ptr_null(strstr(t, "trustd"));
    ck_assert_ptr_null(strstr(t, "iokit"));
    /* the setuid bits: denied last, after every allow */
    const char *su = strstr(t, "(deny file-write-setugid)\n");
    ck_assert(su && su[strlen("(deny file-write-setugid)\n")] == '\0');
    free(t);
    fy_prepared_free(pr);
    free(src);
    free(build);
    fy_policy_free(p);
}
END_TEST

/* A read-only path inside a writable one: writes to it denied again after
 * the allows (in SBPL the last matching rule wins). */
START_TEST(test_readonly_inside_writable) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *build = mkdir_in("build");
    ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
    fy_prepared *pr = prepare(p);
    struct fy_plan *np = pr->neutral;
    normalise(np);
    struct plan_entry *ne = realloc(np->entries, (np->nentries + 2) * sizeof(*ne));
    ck_assert_ptr_nonnull(ne);
    np->entries = ne;
    np->entries[np->nentries++] = (struct plan_entry){PE_HOST, PR_BIND, PLAN_RO | PLAN_WORKSPACE,
                                                      "/Users/ci/job/build/vendor", "/Users/ci/job/build/vendor"};
    np->entries[np->nentries++] = (struct plan_entry){PE_HOST, PR_BIND, PLAN_RO | PLAN_FILE,
                                                      "/Users/ci/job/build/lock", "/Users/ci/job/build/lock"};
    char *t = profile_of(np, false, 0, NULL);
    assert_checks(t, "nested");
    const char *allow = strstr(t, "(allow file-write*\n"), *deny = strstr(t, "(deny file-write*\n");
    ck_assert(allow && deny && deny > allow);
    ck_assert_ptr_nonnull(strstr(deny, "(subpath \"/Users/ci/job/build/vendor\")"));
    ck_assert_ptr_nonnull(strstr(deny, "(literal \"/Users/ci/job/build/lock\")"));
    ck_assert_ptr_null(strstr(deny, "/Users/ci/job/build\")")); /* the writable one stays writable */
    ck_assert(strstr(deny, "(deny file-write-setugid)") > deny);
    free(t);
    fy_prepared_free(pr);
    free(build);
    fy_policy_free(p);
}
END_TEST

/* ---- refusals ---- */

START_TEST(test_profiles_need_relaxing) {
    /* The profiles as defined require Linux namespaces (and release
     * Landlock): negotiation refuses them here, by name, rather than run
     * them weaker. */
    static const uint32_t profiles[] = {FY_PROFILE_STANDARD_CI, FY_PROFILE_RELEASE, FY_PROFILE_HIGH_ASSURANCE};
    for (size_t i = 0; i < FY_ARRAY_SIZE(profiles); i++) {
        fy_policy *p = NULL;
        ck_assert_int_eq(fy_policy_new(profiles[i], &p, NULL), 0);
        const char *argv[] = {"true", NULL};
        fy_caps *c = caps(true);
        fy_prepared *pr = NULL;
        fy_error *e = NULL;
        ck_assert_int_eq(prepare_with_table(table, 1, p, c, argv, &pr, &e), FY_E_UNSUPPORTED);
        ck_assert_int_eq(fy_error_step(e), FY_STEP_SELECT);
        ck_assert_ptr_nonnull(strstr(fy_error_message(e), profiles[i] == FY_PROFILE_HIGH_ASSURANCE ? "virtual-machine"
                                                                                                     : "namespace"));
        fy_error_free(e);
        fy_caps_free(c);
        fy_policy_free(p);
    }
    /* Development prefers them: it runs, with each dropped visibly. */
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    fy_prepared *pr = prepare(p);
    ck_assert_int_eq(fy_prepared_level(pr), FY_LEVEL_PROCESS);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_USERNS), FY_CONTROL_STATE_DROPPED);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_MEMORY_LIMIT), FY_CONTROL_STATE_DROPPED);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_refusals) {
    fy_policy *p;
    /* destinations SBPL cannot name exactly */
    /* (names are resolved by core at prepare: one that does not resolve is
     * FY_E_NOTFOUND there, before the backend sees it) */
    static const char *const hosts[] = {"127.0.0.1", "::1", "10.0.0.0/8", "192.168.1.2"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(hosts); i++) {
        p = mac_policy(FY_PROFILE_STANDARD_CI);
        ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, NULL), 0);
        ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 80, 80, NULL), 0);
        ck_assert_int_eq(fy_policy_add_destination(p, hosts[i], FY_PROTO_TCP, 443, 443, NULL), 0);
        prepare_rc(p, false, FY_E_UNSUPPORTED, "$.network.destinations[1]");
        fy_policy_free(p);
    }
    p = mac_policy(FY_PROFILE_STANDARD_CI); /* a port range SBPL would list one by one */
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 8000, 8100, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.network.destinations[0]");
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI); /* fetch-only: no proxy here */
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_FETCH_ONLY, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "localhost", FY_PROTO_TCP, 80, 80, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.network.mode");
    fy_policy_free(p);
    /* a bind elsewhere than its host path */
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *d = mkdir_in("bind");
    ck_assert_int_eq(fy_policy_add_bind(p, d, "/opt/cache", FY_BIND_WRITABLE, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.filesystem.binds");
    fy_policy_free(p);
    free(d);
    /* devices, identity, quotas, secrets, captured output */
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_set_pty(p, FY_DEVICES_PRIVATE, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.devices.pty");
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/zero", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_gpu(p, FY_DEVICES_LEASED, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.devices.gpu");
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/zero", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_usb(p, FY_DEVICES_LEASED, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.devices.usb");
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_set_user(p, FY_USER_FAKE_ROOT, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.process.user");
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *b = mkdir_in("build");
    ck_assert_int_eq(fy_policy_set_build(p, b, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_DISK, 1 << 20, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.resources.disk");
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_DISK, FY_UNLIMITED, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_FILES, 100, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.resources.files");
    fy_policy_free(p);
    free(b);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_add_secret(p, "k", FY_SECRET_STDIN, NULL, "v", 1, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, "$.secrets");
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *log = util_asprintf("%s/out.log", tmpbase);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, log, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, NULL);
    fy_policy_free(p);
    free(log);
    /* a required control Seatbelt cannot give is refused at negotiation */
    p = mac_policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_REQUIRE, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, NULL);
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI); /* never a uid of the Mac's accounts */
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_UID_RANGE, FY_MODE_REQUIRE, NULL), 0);
    ck_assert_int_eq(fy_policy_set_id_range(p, 501, 10, NULL), 0);
    prepare_rc(p, true, FY_E_UNSUPPORTED, "$.process.id_range");
    ck_assert_int_eq(fy_policy_set_id_range(p, 1000, 1, NULL), 0);
    fy_prepared_free(prepare_rc(p, true, 0, NULL));
    fy_policy_free(p);
    p = mac_policy(FY_PROFILE_STANDARD_CI); /* a dedicated uid needs root */
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_UID_RANGE, FY_MODE_REQUIRE, NULL), 0);
    prepare_rc(p, false, FY_E_UNSUPPORTED, NULL);
    fy_policy_free(p);
}
END_TEST

/* Hostile and oversized paths reaching the generator through the plan
 * (mutated after validation, as a future plan field might carry them). */
START_TEST(test_hostile_plan_paths) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = prepare(p);
    struct fy_plan *np = pr->neutral;
    normalise(np);
    struct plan_entry *ne = realloc(np->entries, (np->nentries + 1) * sizeof(*ne));
    ck_assert_ptr_nonnull(ne);
    np->entries = ne;
    size_t ei = np->nentries;
    struct plan_entry *e = &np->entries[np->nentries++];
    *e = (struct plan_entry){PE_HOST, PR_TOOLCHAIN, PLAN_RO | PLAN_DIR, "/toolchains/x", NULL};
    /* quotes, parentheses, backslashes, UTF-8: escaped, one string each */
    e->host = "/Users/ci/a\"b) (allow default) (c\\d/caf\xc3\xa9";
    char *t = profile_of(np, false, 0, NULL);
    assert_checks(t, "hostile");
    ck_assert_ptr_nonnull(strstr(t, "(subpath \"/Users/ci/a\\\"b) (allow default) (c\\\\d/caf\xc3\xa9\")"));
    ck_assert_ptr_nonnull(strstr(t, "(literal \"/Users/ci/a\\\"b) (allow default) (c\\\\d\")")); /* its parent */
    free(t);
    /* control characters, invalid UTF-8, non-canonical paths: refused */
    static const char *const bad[] = {"/Users/ci/a\nb", "/Users/ci/\x1b[0m", "/Users/ci/\xff", "/Users/../etc",
                                      "relative", "/Users/ci/", "/Users//ci"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad); i++) {
        e->host = bad[i];
        ck_assert_ptr_null(profile_of(np, false, FY_E_POLICY, NULL));
    }
    /* the size limit: too many rules is refused, never truncated */
    e->host = "/Users/ci/x";
    size_t many = 400;
    ne = realloc(np->entries, (np->nentries + many) * sizeof(*ne));
    ck_assert_ptr_nonnull(ne);
    np->entries = ne;
    for (size_t i = 0; i < many; i++) {
        char *h = arena_printf(&np->arena, "/Users/ci/toolchains/%0120zu", i);
        np->entries[np->nentries++] = (struct plan_entry){PE_HOST, PR_TOOLCHAIN, PLAN_RO | PLAN_DIR, h, h};
    }
    ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, "$.filesystem"));
    e = &np->entries[ei]; /* moved by realloc */
    /* below the limit, long lists are split into forms of at most a chunk */
    np->nentries -= many - 150;
    t = profile_of(np, false, 0, NULL);
    assert_checks(t, "chunked");
    size_t forms = 0;
    for (const char *q = t; (q = strstr(q, "(allow file-read*\n")); q++)
        forms++;
    ck_assert_uint_ge(forms, 2);
    ck_assert_uint_le(strlen(t), APPLE_SBPL_MAX);
    free(t);
    /* an entry kind or role the backend does not know: refused */
    np->nentries -= 150;
    e->kind = 99;
    ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, NULL));
    e->kind = PE_HOST;
    e->role = 99;
    ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, NULL));
    e->role = PR_TOOLCHAIN;
    e->flags |= 1u << 20;
    ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, NULL));
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

/* A workspace directory with a hostile name, through the public API: one
 * escaped string in the profile, which still passes the checker. */
START_TEST(test_hostile_directory_name) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *src = mkdir_in("we\"ird) (allow default) (\\ d\xc3\xa9j\xc3\xa0");
    int rc = fy_policy_set_source(p, src, 0, NULL);
    ck_assert_int_eq(rc, 0);
    fy_prepared *pr = prepare(p);
    normalise(pr->neutral);
    char *t = profile_of(pr->neutral, false, 0, NULL);
    assert_checks(t, "hostile directory");
    ck_assert_ptr_nonnull(strstr(t, "(subpath \"/Users/ci/job/we\\\"ird) (allow default) (\\\\ d\xc3\xa9j\xc3\xa0\")"));
    ck_assert_ptr_null(strstr(t, "\n(allow default)"));
    /* the describe() JSON is well formed */
    json_error_t je;
    json_t *d = json_loads(apple_describe(pr->plan), 0, &je);
    ck_assert_msg(d, "describe: %s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "isolation"), "mechanism")), "seatbelt");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "isolation"), "namespaces")), "unavailable");
    ck_assert(json_is_false(json_object_get(json_object_get(d, "isolation"), "darwin-verified")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "limits"), "memory")), "unenforced");
    json_decref(d);
    free(t);
    fy_prepared_free(pr);
    free(src);
    fy_policy_free(p);
}
END_TEST

/* ---- the refusal table against lib/plan.h ---- */

/* Strips comments; NULL-terminated copy. */
static char *plan_header(void) {
    char *path = util_asprintf("%s/lib/plan.h", srcroot);
    char *src = read_all(path);
    ck_assert_msg(src, "cannot read %s", path);
    free(path);
    char *o = src;
    for (const char *s = src; *s;) {
        if (s[0] == '/' && s[1] == '*') {
            const char *end = strstr(s + 2, "*/");
            s = end ? end + 2 : s + strlen(s);
            *o++ = ' ';
        } else if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return src;
}

/* The body of `struct NAME {` / `enum NAME {` up to its closing brace. */
static char *body_of(const char *h, const char *opener) {
    const char *s = strstr(h, opener);
    ck_assert_msg(s, "%s not found in lib/plan.h", opener);
    s = strchr(s, '{') + 1;
    const char *e = strstr(s, "};");
    ck_assert_ptr_nonnull(e);
    return strndup(s, (size_t)(e - s));
}

static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* Member names of a struct body: the last identifier of each declarator. */
static size_t struct_members(const char *body, char names[][64], size_t max) {
    size_t n = 0;
    char *copy = strdup(body);
    for (char *decl = strtok(copy, ";"); decl; decl = strtok(NULL, ";")) {
        char *br;
        while ((br = strchr(decl, '[')))  /* drop array bounds */
            memset(br, ' ', strcspn(br, "]") + 1);
        bool first = true;
        for (char *d = decl; d;) {
            char *comma = strchr(d, ',');
            if (comma)
                *comma = '\0';
            char *end = d + strlen(d);
            while (end > d && !ident_char(end[-1]))
                end--;
            char *start = end;
            while (start > d && ident_char(start[-1]))
                start--;
            if (end > start && n < max) {
                snprintf(names[n], 64, "%.*s", (int)(end - start), start);
                n++;
            }
            (void)first;
            first = false;
            d = comma ? comma + 1 : NULL;
        }
    }
    free(copy);
    return n;
}

static size_t enum_names(const char *body, char names[][64], size_t max) {
    size_t n = 0;
    char *copy = strdup(body);
    for (char *item = strtok(copy, ","); item; item = strtok(NULL, ",")) {
        while (*item && !ident_char(*item))
            item++;
        size_t len = 0;
        while (ident_char(item[len]))
            len++;
        if (len && n < max)
            snprintf(names[n++], 64, "%.*s", (int)len, item);
    }
    free(copy);
    return n;
}

/* How the apple backend handles each field of the neutral plan, with why.
 * AH_PROFILE and AH_REFUSED fields are also exercised below. */
struct field { const char *name; uint8_t how; const char *why; };
static const struct field plan_fields[] = {
    {"backend", AH_SPAWN, "negotiated by core"},
    {"level", AH_SPAWN, "negotiated: process"},
    {"control", AH_CONTROL, "per control: test_controls"},
    {"control_mode", AH_CONTROL, "per control: test_controls"},
    {"impure", AH_SPAWN, "core's label"},
    {"argv", AH_SPAWN, "executed"},
    {"argc", AH_SPAWN, "executed"},
    {"envp", AH_SPAWN, "apple_env: HOME and TMPDIR moved to the attempt"},
    {"nenv", AH_SPAWN, "apple_env"},
    {"path_search", AH_SPAWN, "finds argv[0]"},
    {"env_exact", AH_SPAWN, "apple_env then adds and moves nothing: test_env_and_paths"},
    {"workdir", AH_SPAWN, "apple_host_path"},
    {"hostname", AH_DENIED, "not renamed (the host's); kern.hostname is not in the sysctl allowlist"},
    {"fake_root", AH_REFUSED, "no user namespace"},
    {"uid", AH_DENIED, "the in-sandbox ids need a user namespace; the caller's uid or the dedicated one runs"},
    {"gid", AH_DENIED, "as uid"},
    {"user", AH_SPAWN, "USER/LOGNAME in envp"},
    {"home", AH_SPAWN, "HOME, moved to the attempt"},
    {"id_first", AH_SPAWN, "the dedicated uid"},
    {"id_count", AH_SPAWN, "must be non-empty for a dedicated uid"},
    {"entries", AH_PROFILE, "rules by role"},
    {"nentries", AH_PROFILE, "rules by role"},
    {"runtime_skipped", AH_DENIED, "missing paths get no rule"},
    {"nruntime_skipped", AH_DENIED, "missing paths get no rule"},
    {"source", AH_PROFILE, "mirrored by the PR_SOURCE entry; FORGEYARD_SOURCE"},
    {"build", AH_PROFILE, "mirrored by the PR_BUILD entry"},
    {"output", AH_PROFILE, "mirrored by the PR_OUTPUT entry"},
    {"source_writable", AH_PROFILE, "mirrored by the PR_SOURCE entry's PLAN_RO"},
    {"image_layers", AH_DENIED, "never set here: a policy with an image selects only a backend with ops.images "
                                "(lib/select.c), which apple is not"},
    {"nimage_layers", AH_DENIED, "as image_layers"},
    {"image_digest", AH_DENIED, "as image_layers"},
    {"image_nlayers", AH_DENIED, "as image_layers"},
    {"build_lower", AH_DENIED, "no build_overlaid op: build is bound as usual, and the action layer materialises "
                               "the input root into it (lib/action-run.c)"},
    {"build_work", AH_DENIED, "as build_lower"},
    {"build_lower_dev", AH_DENIED, "as build_lower"},
    {"build_lower_ino", AH_DENIED, "as build_lower"},
    {"test_overlay_disk", AH_DENIED, "a container's upper on disk: only with image_layers, never set here"},
    {"limit", AH_SPAWN, "per limit: test_limits"},
    {"seccomp_class", AH_CONTROL, "the seccomp control, never enforced here"},
    {"net_mode", AH_PROFILE, "network rules"},
    {"dns", AH_PROFILE, "the resolver's mach service"},
    {"dests", AH_PROFILE, "remote localhost rules or refused"},
    {"ndests", AH_PROFILE, "remote localhost rules or refused"},
    {"net_rules", AH_PROFILE, "the resolved forms of dests: only localhost's loopback rules get past compile"},
    {"nnet_rules", AH_PROFILE, "as net_rules"},
    {"net_hosts", AH_PROFILE, "in the generated /etc/hosts entry, read from the attempt's files"},
    {"net_name_rules", AH_DENIED, "the Linux DNS stub's table: here names resolve through net_hosts only"},
    {"nnet_name_rules", AH_DENIED, "as net_name_rules"},
    {"net_uplink", AH_DENIED, "Linux router plumbing: Seatbelt filters in the host's own stack"},
    {"net_link_subnet", AH_DENIED, "as net_uplink"},
    {"net_credentials", AH_DENIED, "fetch-only's proxy credentials: fetch-only is refused here (no proxy)"},
    {"job_member", AH_DENIED, "never set here: fy_prepare_member refuses a backend without job_make "
                              "(lib/api-prepare.c), which apple is not"},
    {"job_index", AH_DENIED, "as job_member"},
    {"job_hosts", AH_DENIED, "as job_member"},
    {"job_ports", AH_DENIED, "as job_member"},
    {"njob_ports", AH_DENIED, "as job_member"},
    {"gpu", AH_REFUSED, "IOKit user clients"},
    {"usb", AH_REFUSED, "IOKit user clients"},
    {"pty", AH_REFUSED, "no private devpts"},
    {"secrets", AH_PROFILE, "files read from the attempt; env at spawn; stdin refused"},
    {"nsecrets", AH_PROFILE, "as secrets"},
    {"stdio", AH_REFUSED, "file and callback refused; null, fd and pipe at spawn"},
    {"state_dir", AH_SPAWN, "where attempt directories are made"},
    {"obs", AH_DENIED, "host plumbing, core's"},
    {"fault_step", AH_REFUSED, "not implemented here"},
    {"fault_nth", AH_REFUSED, "with fault_step"},
    {"delay_stage", AH_REFUSED, "not implemented here"},
    {"delay_usec", AH_REFUSED, "with delay_stage"},
    {"test_legacy_cgroups", AH_REFUSED, "Linux test switch"},
    {"test_copy_init", AH_REFUSED, "Linux test switch"},
    {"test_no_clone_into", AH_REFUSED, "Linux test switch"},
    {"arena", AH_DENIED, "memory"},
};
static const struct field entry_fields[] = {
    {"kind", AH_PROFILE, "test_kinds"}, {"role", AH_PROFILE, "test_roles"}, {"flags", AH_PROFILE, "test_flags"},
    {"target", AH_PROFILE, "materialised under the attempt, or the host path (binds must equal it)"},
    {"host", AH_PROFILE, "the rule's path"},
    {"content", AH_SPAWN, "written when materialised; a link's own target is not followed"},
    {"mode", AH_SPAWN, "materialised with it"},
    {"size", AH_UNENFORCED, "plain directories"}, {"inodes", AH_UNENFORCED, "plain directories"},
};
static const struct field dest_fields[] = {
    {"host", AH_PROFILE, "localhost only"}, {"proto", AH_PROFILE, "tcp/udp"},
    {"port_min", AH_PROFILE, "one port, <= 16 ports listed, or *"}, {"port_max", AH_PROFILE, "as port_min"},
};
static const struct field secret_fields[] = {
    {"name", AH_SPAWN, ""}, {"delivery", AH_PROFILE, "file: a literal rule; env; stdin refused"},
    {"target", AH_PROFILE, "the file's name"}, {"value", AH_SPAWN, ""}, {"len", AH_SPAWN, ""},
};
static const struct field stdio_fields[] = {
    {"mode", AH_REFUSED, "file and callback refused"}, {"fd", AH_SPAWN, ""}, {"path", AH_REFUSED, "file mode"},
    {"fn", AH_REFUSED, "callback mode"}, {"userdata", AH_REFUSED, "callback mode"},
};

static void check_struct(const char *h, const char *opener, const struct field *f, size_t nf) {
    char *body = body_of(h, opener);
    char names[128][64];
    size_t n = struct_members(body, names, 128);
    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t k = 0; k < nf; k++)
            known = known || strcmp(f[k].name, names[i]) == 0;
        ck_assert_msg(known, "%s.%s: a field of the neutral plan the apple backend does not handle yet (add it to "
                      "the refusal table in test/apple/test-apple.c once lib/apple/ handles or refuses it)",
                      opener, names[i]);
    }
    for (size_t k = 0; k < nf; k++) {
        bool present = false;
        for (size_t i = 0; i < n; i++)
            present = present || strcmp(f[k].name, names[i]) == 0;
        ck_assert_msg(present, "%s.%s is listed but no longer in lib/plan.h", opener, f[k].name);
        ck_assert_msg(f[k].how != AH_UNLISTED, "%s.%s has no handling", opener, f[k].name);
    }
    free(body);
}

START_TEST(test_plan_fields_listed) {
    char *h = plan_header();
    check_struct(h, "struct fy_plan {", plan_fields, FY_ARRAY_SIZE(plan_fields));
    check_struct(h, "struct plan_entry {", entry_fields, FY_ARRAY_SIZE(entry_fields));
    check_struct(h, "struct plan_dest {", dest_fields, FY_ARRAY_SIZE(dest_fields));
    check_struct(h, "struct plan_secret {", secret_fields, FY_ARRAY_SIZE(secret_fields));
    check_struct(h, "struct plan_stdio {", stdio_fields, FY_ARRAY_SIZE(stdio_fields));
    free(h);
}
END_TEST

/* Entry kinds, roles and flags: every name lib/plan.h declares is one the
 * test knows the value of, and the backend lists. */
START_TEST(test_kinds_roles_flags) {
    static const struct { const char *name; uint32_t v; } kinds[] = {
        {"PE_FILE", PE_FILE}, {"PE_SYMLINK", PE_SYMLINK}, {"PE_HOST", PE_HOST}, {"PE_TMPFS", PE_TMPFS},
        {"PE_PROC", PE_PROC}, {"PE_PROC_HIDE", PE_PROC_HIDE}, {"PE_PROC_RO", PE_PROC_RO}, {"PE_PTYS", PE_PTYS},
    };
    static const struct { const char *name; uint32_t v; } roles[] = {
        {"PR_ETC", PR_ETC}, {"PR_RUNTIME", PR_RUNTIME}, {"PR_TRUST", PR_TRUST}, {"PR_RESOLV", PR_RESOLV},
        {"PR_DEV", PR_DEV}, {"PR_PROC", PR_PROC}, {"PR_SCRATCH", PR_SCRATCH}, {"PR_HOME", PR_HOME},
        {"PR_SOURCE", PR_SOURCE}, {"PR_BUILD", PR_BUILD}, {"PR_OUTPUT", PR_OUTPUT}, {"PR_TOOLCHAIN", PR_TOOLCHAIN},
        {"PR_BIND", PR_BIND}, {"PR_DEVICE", PR_DEVICE},
    };
    static const struct { const char *name; uint32_t v; } flags[] = {
        {"PLAN_RO", PLAN_RO}, {"PLAN_OPTIONAL", PLAN_OPTIONAL}, {"PLAN_WORKSPACE", PLAN_WORKSPACE},
        {"PLAN_DEVICE", PLAN_DEVICE}, {"PLAN_FILE", PLAN_FILE}, {"PLAN_DIR", PLAN_DIR},
        {"PLAN_NOEXEC", PLAN_NOEXEC}, {"PLAN_OWNED", PLAN_OWNED},
    };
    char *h = plan_header();
    char names[64][64];
    char *body = body_of(h, "enum plan_entry_kind {");
    size_t n = enum_names(body, names, 64);
    free(body);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(i < FY_ARRAY_SIZE(kinds) && strcmp(names[i], kinds[i].name) == 0,
                      "entry kind %s: new to the apple backend (list it here once lib/apple/ handles it)", names[i]);
    ck_assert_uint_eq(n, FY_ARRAY_SIZE(kinds));
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(apple_kind_how(kinds[i].v) != AH_UNLISTED, "%s unhandled", names[i]);
    body = body_of(h, "enum plan_role {");
    n = enum_names(body, names, 64);
    free(body);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(i < FY_ARRAY_SIZE(roles) && strcmp(names[i], roles[i].name) == 0,
                      "role %s: new to the apple backend (list it here once lib/apple/ handles it)", names[i]);
    ck_assert_uint_eq(n, FY_ARRAY_SIZE(roles));
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(apple_role_how(roles[i].v) != AH_UNLISTED, "%s unhandled", names[i]);
    size_t nf = 0;
    for (const char *s = h; (s = strstr(s, "#define PLAN_")); s++) {
        const char *name = s + 8;
        size_t len = 0;
        while (ident_char(name[len]))
            len++;
        bool known = false;
        for (size_t k = 0; k < FY_ARRAY_SIZE(flags); k++)
            known = known || (strlen(flags[k].name) == len && strncmp(flags[k].name, name, len) == 0);
        ck_assert_msg(known, "flag %.*s: new to the apple backend", (int)len, name);
        nf++;
    }
    ck_assert_uint_eq(nf, FY_ARRAY_SIZE(flags));
    for (size_t k = 0; k < FY_ARRAY_SIZE(flags); k++)
        ck_assert_msg(apple_flag_how(flags[k].v) != AH_UNLISTED, "%s unhandled", flags[k].name);
    ck_assert_int_eq(apple_kind_how(PE_PTYS + 1), AH_UNLISTED); /* so that the loops above can fail */
    ck_assert_int_eq(apple_role_how(PR_DEVICE + 1), AH_UNLISTED);
    ck_assert_int_eq(apple_flag_how(PLAN_OWNED << 1), AH_UNLISTED);
    free(h);
}
END_TEST

/* Every limit is listed, and behaves as listed. */
START_TEST(test_limits) {
    for (uint32_t l = 1; l <= FY_LIMIT_MAX_; l++) {
        ck_assert_msg(apple_limit_how[l] != AH_UNLISTED, "limit %s: unhandled by the apple backend", limit_key(l));
        fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
        char *b = mkdir_in("build");
        ck_assert_int_eq(fy_policy_set_build(p, b, NULL), 0);
        free(b);
        fy_prepared *pr = prepare(p);
        struct fy_plan *np = pr->neutral;
        np->limit[l] = 4321;
        fy_caps *c = caps(false);
        void *ap = NULL;
        fy_error *e = NULL;
        int r = apple_compile(np, c, &ap, &e);
        fy_caps *c2 = c;
        switch (apple_limit_how[l]) {
        case AH_REFUSED:
            ck_assert_msg(r == FY_E_UNSUPPORTED, "limit %s not refused", limit_key(l));
            break;
        case AH_SPAWN:
            ck_assert_int_eq(r, 0);
            if (l == FY_LIMIT_NOFILE || l == FY_LIMIT_FSIZE || l == FY_LIMIT_STACK || l == FY_LIMIT_CORE) {
                const struct apple_plan *a = ap;
                bool found = false;
                for (size_t i = 0; i < a->nrlimits; i++)
                    found = found || (a->rlimits[i].limit == l && a->rlimits[i].value == 4321);
                ck_assert_msg(found, "limit %s: no rlimit", limit_key(l));
                ck_assert_ptr_nonnull(strstr(apple_describe(ap), ":4321"));
                /* unlimited: the host's limit stays, and describe() says so */
                np->limit[l] = FY_UNLIMITED;
                apple_plan_free(ap);
                ck_assert_int_eq(apple_compile(np, c2, &ap, NULL), 0);
                ck_assert_ptr_nonnull(strstr(apple_describe(ap), "\"the host's\""));
                if (l == FY_LIMIT_NOFILE) { /* above OPEN_MAX macOS refuses it: the lower one, said so */
                    np->limit[l] = 65536;
                    apple_plan_free(ap);
                    ck_assert_int_eq(apple_compile(np, c2, &ap, NULL), 0);
                    ck_assert_ptr_nonnull(strstr(apple_describe(ap), "\"rlimit-nofile\":10240"));
                }
            }
            break;
        case AH_CONTROL: {
            static const uint32_t ctl[FY_LIMIT_MAX_ + 1] = {
                [FY_LIMIT_CPU_MILLIS] = FY_CONTROL_CPU_LIMIT, [FY_LIMIT_MEMORY] = FY_CONTROL_MEMORY_LIMIT,
                [FY_LIMIT_MEMORY_SWAP] = FY_CONTROL_MEMORY_LIMIT, [FY_LIMIT_PIDS] = FY_CONTROL_PIDS_LIMIT,
                [FY_LIMIT_IO_BPS] = FY_CONTROL_IO_LIMIT,
            };
            ck_assert_msg(ctl[l], "limit %s: which control?", limit_key(l));
            ck_assert_int_eq(r, 0);
            ck_assert_int_ne(np->control[ctl[l]], FY_CONTROL_STATE_ENFORCED); /* dropped or off, visibly */
            break;
        }
        case AH_UNENFORCED:
            ck_assert_int_eq(r, 0);
            ck_assert_ptr_nonnull(strstr(apple_describe(ap), "\"scratch-sizes\":\"unenforced"));
            break;
        default:
            ck_abort_msg("limit %s: unexpected handling %d", limit_key(l), apple_limit_how[l]);
        }
        fy_caps_free(c);
        fy_error_free(e);
        apple_plan_free(ap);
        fy_prepared_free(pr);
        fy_policy_free(p);
    }
}
END_TEST

START_TEST(test_controls) {
    fy_caps *c = caps(false), *root = caps(true);
    for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++) {
        if (!fy_control_name(ctl))
            continue; /* a number reserved, not a control */
        ck_assert_msg(apple_control_how[ctl] != AH_UNLISTED, "control %s: unhandled", fy_control_name(ctl));
        const char *why = NULL;
        if (apple_control_how[ctl] == AH_CONTROL) {
            ck_assert(!apple_can_enforce(root, ctl, &why));
            ck_assert_ptr_nonnull(why);
        }
        if (ctl == FY_CONTROL_DEVICES) {
            /* Always enforced: the profile lists every device path (test_refusals). */
            ck_assert(apple_can_enforce(c, ctl, &why));
            continue;
        }
        /* A plan that claims a control enforced that this host cannot give
         * is refused at compile (never run weaker than it says). */
        fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
        fy_prepared *pr = prepare(p);
        pr->neutral->control[ctl] = FY_CONTROL_STATE_ENFORCED;
        void *ap = NULL;
        fy_error *e = NULL;
        ck_assert_int_eq(apple_compile(pr->neutral, c, &ap, &e), FY_E_UNSUPPORTED);
        fy_error_free(e);
        fy_prepared_free(pr);
        fy_policy_free(p);
    }
    const char *why = NULL;
    ck_assert(apple_can_enforce(root, FY_CONTROL_UID_RANGE, &why));
    ck_assert(!apple_can_enforce(c, FY_CONTROL_UID_RANGE, &why));
    fy_caps_free(c);
    fy_caps_free(root);
}
END_TEST

/* The fields the profile carries change it, each as the table says. */
START_TEST(test_fields_reach_the_profile) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = prepare(p);
    struct fy_plan *np = pr->neutral;
    normalise(np);
    char *base = profile_of(np, false, 0, NULL);
    np->net_mode = FY_NET_ALLOW;
    char *t = profile_of(np, false, 0, NULL);
    /* IP only: never every unix socket of the host (Docker's, an agent's) */
    ck_assert_ptr_null(strstr(t, "(allow network*)"));
    ck_assert_ptr_nonnull(strstr(t, "(allow network-outbound (remote ip \"*:*\"))"));
    ck_assert_ptr_nonnull(strstr(t, "(allow network-inbound (local ip \"*:*\"))"));
    ck_assert_ptr_nonnull(strstr(t, "(allow network-bind (local ip \"*:*\"))"));
    ck_assert_ptr_null(strstr(t, "unix-socket"));
    ck_assert_ptr_nonnull(strstr(t, "com.apple.trustd"));
    ck_assert_ptr_null(strstr(t, "dnssd"));
    assert_checks(t, "network allow");
    free(t);
    np->dns = FY_DNS_HOST;
    t = profile_of(np, false, 0, NULL);
    ck_assert_ptr_nonnull(strstr(t, "(global-name \"com.apple.dnssd.service\")"));
    ck_assert_ptr_nonnull(strstr(t, "(remote unix-socket (path-literal \"/private/var/run/mDNSResponder\"))"));
    free(t);
    np->net_mode = FY_NET_RESTRICTED;
    struct plan_dest d = {"localhost", FY_PROTO_UDP, 53, 53};
    np->dests = &d;
    np->ndests = 1;
    /* restricted + dns host: the host's resolver would resolve any name
     * for the workload (data out in the names): refused */
    ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, "$.network.dns"));
    np->dns = FY_DNS_NONE;
    t = profile_of(np, false, 0, NULL);
    ck_assert_ptr_nonnull(strstr(t, "(allow network-outbound\n    (remote udp \"localhost:53\"))"));
    ck_assert_ptr_null(strstr(t, "(allow network*)"));
    /* nor trustd, which fetches the URLs of the certificates it is given */
    ck_assert_ptr_null(strstr(t, "trustd"));
    ck_assert_ptr_null(strstr(t, "dnssd"));
    free(t);
    np->dests = NULL;
    np->ndests = 0;
    np->net_mode = FY_NET_DENY;
    np->dns = FY_DNS_NONE;
    t = profile_of(np, false, 0, NULL);
    ck_assert_str_eq(t, base);
    free(t);
    struct plan_secret s = {"tok", FY_SECRET_FILE, "tok", (const unsigned char *)"x", 1};
    np->secrets = &s;
    np->nsecrets = 1;
    t = profile_of(np, false, 0, NULL);
    ck_assert_ptr_nonnull(strstr(t, "(literal \"" ATTEMPT "/fs/run/secrets/tok\")"));
    free(t);
    s.delivery = FY_SECRET_ENV;
    t = profile_of(np, false, 0, NULL);
    ck_assert_str_eq(t, base);
    free(t);
    s.delivery = FY_SECRET_STDIN;
    ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, "$.secrets"));
    np->nsecrets = 0;
    np->secrets = NULL;
    /* the refused ones */
    struct { uint32_t *field; uint32_t value; } u32[] = {
        {&np->gpu, FY_DEVICES_LEASED}, {&np->usb, FY_DEVICES_LEASED}, {&np->pty, FY_DEVICES_PRIVATE},
        {&np->fault_step, FY_STEP_SPAWN}, {&np->delay_stage, FY_STAGE_EXEC}, {&np->stdio[1].mode, FY_STDIO_CALLBACK},
        {&np->stdio[2].mode, FY_STDIO_FILE}, {&np->net_mode, FY_NET_FETCH_ONLY},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(u32); i++) {
        uint32_t old = *u32[i].field;
        *u32[i].field = u32[i].value;
        ck_assert_msg(!profile_of(np, false, FY_E_UNSUPPORTED, NULL), "u32[%zu] accepted", i);
        *u32[i].field = old;
    }
    bool *flags[] = {&np->fake_root, &np->test_legacy_cgroups, &np->test_copy_init, &np->test_no_clone_into};
    for (size_t i = 0; i < FY_ARRAY_SIZE(flags); i++) {
        *flags[i] = true;
        ck_assert_ptr_null(profile_of(np, false, FY_E_UNSUPPORTED, NULL));
        *flags[i] = false;
    }
    t = profile_of(np, false, 0, NULL);
    ck_assert_str_eq(t, base);
    free(t);
    free(base);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

/* ---- negotiation ---- */

START_TEST(test_negotiation) {
    struct strbuf why;
    strbuf_init(&why);
    fy_caps *none = caps_new();
    ck_assert(!apple_seatbelt_usable(none, &why));
    ck_assert_ptr_nonnull(strstr(why.buf, "seatbelt"));
    strbuf_free(&why);
    fy_caps *c = caps(false);
    ck_assert(apple_seatbelt_usable(c, &why));
    /* The VM level is never claimed: without a tool, and with one (not driven yet). */
    ck_assert(!apple_vm_usable(c, &why));
    ck_assert_ptr_nonnull(strstr(why.buf, "no virtual machine tool"));
    strbuf_free(&why);
    ck_assert_int_eq(caps_set_fact(c, APPLE_FACT_VM_TOOL, "tart /opt/homebrew/bin/tart"), 0);
    ck_assert(!apple_vm_usable(c, &why));
    ck_assert_ptr_nonnull(strstr(why.buf, "tart /opt/homebrew/bin/tart is installed"));
    strbuf_free(&why);
    const char *w = NULL;
    ck_assert(!apple_vm_can_enforce(c, FY_CONTROL_NETNS, &w));
    ck_assert_ptr_nonnull(w);
    /* Without the seatbelt fact nothing is selected. */
    fy_policy *p = mac_policy(FY_PROFILE_DEVELOPMENT);
    const char *argv[] = {"true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_with_table(table, 1, p, none, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "sandbox_init"));
    fy_error_free(e);
    fy_policy_free(p);
    fy_caps_free(none);
    fy_caps_free(c);
}
END_TEST

/* ---- the attempt's environment and paths ---- */

START_TEST(test_env_and_paths) {
    fy_policy *p = mac_policy(FY_PROFILE_STANDARD_CI);
    char *src = mkdir_in("source"), *build = mkdir_in("build");
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
    ck_assert_int_eq(fy_policy_set_workdir(p, "/work/build/sub", NULL), 0);
    fy_prepared *pr = prepare(p);
    const struct fy_plan *np = pr->neutral;
    char *wd = apple_host_path(np, ATTEMPT, np->workdir);
    char *want = util_asprintf("%s/sub", build);
    ck_assert_str_eq(wd, want);
    free(wd);
    free(want);
    wd = apple_host_path(np, ATTEMPT, "/work/output/x");
    ck_assert_str_eq(wd, ATTEMPT "/fs/work/output/x");
    free(wd);
    wd = apple_host_path(np, ATTEMPT, "/tmp");
    ck_assert_str_eq(wd, ATTEMPT "/fs/tmp");
    free(wd);
    ck_assert_ptr_null(apple_host_path(np, ATTEMPT, "/etc"));
    ck_assert_ptr_null(apple_host_path(np, ATTEMPT, "/work/sourcex"));
    char **env = apple_env(np, ATTEMPT);
    ck_assert_ptr_nonnull(env);
    bool home = false, tmp = false, fsrc = false, fout = false, lang = false;
    char *s1 = util_asprintf("FORGEYARD_SOURCE=%s", src);
    for (size_t i = 0; env[i]; i++) {
        home |= strcmp(env[i], "HOME=" ATTEMPT "/fs/home/forgeyard") == 0;
        tmp |= strcmp(env[i], "TMPDIR=" ATTEMPT "/fs/tmp") == 0;
        fsrc |= strcmp(env[i], s1) == 0;
        fout |= strcmp(env[i], "FORGEYARD_OUTPUT=" ATTEMPT "/fs/work/output") == 0;
        lang |= strcmp(env[i], "LANG=C.UTF-8") == 0;
    }
    ck_assert(home && tmp && fsrc && fout && lang);
    apple_env_free(env);
    /* An exact environment (an action's): as declared, nothing added or moved. */
    pr->neutral->env_exact = true;
    env = apple_env(np, ATTEMPT);
    ck_assert_ptr_nonnull(env);
    size_t n = 0;
    for (; env[n]; n++)
        ck_assert_str_eq(env[n], np->envp[n]);
    ck_assert_uint_eq(n, np->nenv);
    apple_env_free(env);
    /* The ids that own what the workload writes: the caller's. */
    uint32_t uid = 1, gid = 1;
    ck_assert_int_eq(apple_workload_ids(pr->plan, &uid, &gid), 0);
    ck_assert_uint_eq(uid, 0); /* caps() is a fresh snapshot: host ids 0 */
    ck_assert_uint_eq(gid, 0);
    free(s1);
    fy_prepared_free(pr);
    free(src);
    free(build);
    fy_policy_free(p);
}
END_TEST

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d));) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *p = util_asprintf("%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc > 1)
        srcroot = argv[1];
    snprintf(tmpbase, sizeof(tmpbase), "%s/fy-apple-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpbase))
        return 1;
    Suite *s = suite_create("apple");
    TCase *tc = tcase_create("apple");
    tcase_add_test(tc, test_escaper);
    tcase_add_test(tc, test_canonical_paths);
    tcase_add_test(tc, test_checker);
    tcase_add_test(tc, test_golden_development);
    tcase_add_test(tc, test_golden_standard_ci);
    tcase_add_test(tc, test_golden_release);
    tcase_add_test(tc, test_golden_destinations);
    tcase_add_test(tc, test_golden_files_check);
    tcase_add_test(tc, test_profile_content);
    tcase_add_test(tc, test_readonly_inside_writable);
    tcase_add_test(tc, test_profiles_need_relaxing);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_hostile_plan_paths);
    tcase_add_test(tc, test_hostile_directory_name);
    tcase_add_test(tc, test_plan_fields_listed);
    tcase_add_test(tc, test_kinds_roles_flags);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_controls);
    tcase_add_test(tc, test_fields_reach_the_profile);
    tcase_add_test(tc, test_negotiation);
    tcase_add_test(tc, test_env_and_paths);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    rm_tree(tmpbase);
    return failed ? 1 : 0;
}
