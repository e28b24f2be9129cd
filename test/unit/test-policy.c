/* The policy model: profiles, setters, canonical JSON round trip, copies,
 * all-or-nothing loading, secret hygiene. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "policy.h"

static fy_policy *policy(uint32_t profile) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(profile, &p, NULL), 0);
    return p;
}

static char *json_of(const fy_policy *p) {
    char *s = NULL;
    ck_assert_int_eq(fy_policy_to_json(p, &s, NULL), 0);
    return s;
}

static void assert_round_trip(const fy_policy *p) {
    char *a = json_of(p);
    fy_policy *q = policy(FY_PROFILE_STANDARD_CI);
    fy_error *e = NULL;
    int r = fy_policy_load_json(q, a, strlen(a), &e);
    ck_assert_msg(r == 0, "reload failed: %s: %s", fy_error_location(e), fy_error_message(e));
    char *b = json_of(q);
    ck_assert_str_eq(a, b);
    fy_free(a);
    fy_free(b);
    fy_policy_free(q);
}

START_TEST(test_profiles_defaults) {
    for (uint32_t prof = FY_PROFILE_DEVELOPMENT; prof <= FY_PROFILE_HIGH_ASSURANCE; prof++) {
        fy_policy *p = policy(prof);
        ck_assert_int_eq(fy_policy_validate(p, NULL), 0);
        ck_assert_uint_eq(p->profile, prof);
        /* Deny by default: nothing of the host but the runtime paths. */
        ck_assert_ptr_null(p->source);
        ck_assert_ptr_null(p->build);
        ck_assert_int_eq(p->binds.n, 0);
        ck_assert_int_eq(p->secrets.n, 0);
        ck_assert_int_eq(p->devices.n, 0);
        ck_assert_str_eq(policy_get_env(p, "PATH"), "/usr/local/bin:/usr/bin:/bin");
        ck_assert_ptr_null(policy_get_env(p, "HOME"));
        ck_assert_uint_eq(p->limit[FY_LIMIT_CORE], 0);
        ck_assert_uint_eq(p->user, FY_USER_SANDBOX);
        assert_round_trip(p);
        fy_policy_free(p);
    }
    fy_policy *dev = policy(FY_PROFILE_DEVELOPMENT);
    ck_assert_uint_eq(dev->net_mode, FY_NET_ALLOW);
    ck_assert_uint_eq(dev->min_level, FY_LEVEL_PROCESS);
    ck_assert(policy_is_impure(dev));
    fy_policy_free(dev);
    fy_policy *ci = policy(FY_PROFILE_STANDARD_CI);
    ck_assert_uint_eq(ci->net_mode, FY_NET_DENY);
    ck_assert_uint_eq(ci->dns, FY_DNS_NONE);
    ck_assert_uint_eq(ci->min_level, FY_LEVEL_NAMESPACE);
    ck_assert_uint_eq(ci->control[FY_CONTROL_SECCOMP], FY_MODE_REQUIRE);
    ck_assert(!policy_is_impure(ci));
    fy_policy_free(ci);
    fy_policy *ha = policy(FY_PROFILE_HIGH_ASSURANCE);
    ck_assert_uint_eq(ha->min_level, FY_LEVEL_VIRTUAL_MACHINE);
    fy_policy_free(ha);
}
END_TEST

START_TEST(test_full_round_trip) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_set_source(p, "/srv/src", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, "/srv/build", NULL), 0);
    ck_assert_int_eq(fy_policy_set_output(p, "/srv/out", NULL), 0);
    ck_assert_int_eq(fy_policy_add_toolchain(p, "gcc-12", "/opt/gcc", NULL), 0);
    ck_assert_int_eq(fy_policy_add_toolchain(p, "go1.22", "/opt/go", NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/cache", "/cache", FY_BIND_WRITABLE, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/data", "/data", FY_BIND_OPTIONAL, NULL), 0);
    ck_assert_int_eq(fy_policy_add_runtime_path(p, "/etc/ssl/certs", NULL), 0);
    ck_assert_int_eq(fy_policy_set_workdir(p, "/work/source", NULL), 0);
    ck_assert_int_eq(fy_policy_set_hostname(p, "builder-1", NULL), 0);
    ck_assert_int_eq(fy_policy_set_env(p, "CC", "gcc -O2", NULL), 0);
    ck_assert_int_eq(fy_policy_allow_env(p, "TERM", NULL), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "10.0.0.0/8", FY_PROTO_TCP, 443, 443, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "deb.example.org", FY_PROTO_UDP, 53, 53, NULL), 0);
    ck_assert_int_eq(fy_policy_set_dns(p, FY_DNS_HOST, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 512u << 20, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, 1500, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 90000000, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_REQUIRE, NULL), 0);
    ck_assert_int_eq(fy_policy_set_user(p, FY_USER_FAKE_ROOT, NULL), 0);
    ck_assert_int_eq(fy_policy_set_seccomp_class(p, FY_SECCOMP_NETWORKED_TEST, NULL), 0);
    ck_assert_int_eq(fy_policy_set_id_range(p, 200000, 1000, NULL), 0);
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/fuse", 1, NULL), 0);
    ck_assert_int_eq(fy_policy_set_gpu(p, FY_DEVICES_LEASED, NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret_file(p, "npm", FY_SECRET_ENV, "NPM_TOKEN", "/run/host/npm", NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret_file(p, "key", FY_SECRET_FILE, "deploy.key", "/run/host/key", NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret_file(p, "in", FY_SECRET_STDIN, NULL, "/run/host/in", NULL), 0);
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_validate(p, &e) == 0, "%s: %s", fy_error_location(e), fy_error_message(e));
    assert_round_trip(p);
    char *s = json_of(p);
    ck_assert_ptr_nonnull(strstr(s, "\"gcc-12\": \"/opt/gcc\""));
    ck_assert_ptr_nonnull(strstr(s, "\"memory\": 536870912"));
    ck_assert_ptr_nonnull(strstr(s, "\"fsize\": \"unlimited\""));
    fy_free(s);
    fy_policy_free(p);
}
END_TEST

/* A path a JSON document cannot hold is refused by the setters (it was
 * accepted, then vanished from the policy's JSON: a bind without host or
 * target, a document that no longer loads back). */
START_TEST(test_non_utf8_paths_refused) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/\xff", "/data", 0, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.binds[0].host");
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/data", "/mnt/\xfe", 0, &e), FY_E_POLICY);
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_policy_set_build(p, "/tmp/b\xc3", &e), FY_E_POLICY);
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/caf\xc3\xa9", "/data", 0, NULL), 0); /* (UTF-8: fine) */
    char *json = NULL;
    ck_assert_int_eq(fy_policy_to_json(p, &json, NULL), 0);
    ck_assert_ptr_nonnull(strstr(json, "/srv/caf\xc3\xa9"));
    fy_free(json);
    fy_policy_free(p);
}
END_TEST

/* A caller's key in an error's location (an environment variable's name,
 * a platform property's) never carries control characters raw: a program
 * that prints it (forgeyard run --env, wrap with a hostile environment)
 * would have its terminal or its log written to. */
START_TEST(test_error_location_escaped) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_env(p, "X\033]0;pwned\007\nok: fake", "1", &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.environment.set.X\\x1b]0;pwned\\x07\\x0aok: fake");
    fy_error_free(e);
    e = NULL;
    ck_assert_int_lt(fy_policy_set_platform_property(p, "K\033[2J", "v", &e), 0);
    ck_assert_str_eq(fy_error_location(e), "$.platform.K\\x1b[2J");
    fy_error_free(e);
    fy_policy_free(p);
    fy_action *a = NULL;
    ck_assert_int_eq(fy_action_new(&a, NULL), 0);
    e = NULL;
    ck_assert_int_lt(fy_action_set_env(a, "A\033[2J", "v", &e), 0);
    ck_assert_str_eq(fy_error_location(e), "$.environment.A\\x1b[2J");
    fy_error_free(e);
    fy_action_free(a);
}
END_TEST

/* A platform property is a requirement that what comes after cannot undo:
 * a document loaded later that asks for more network or a weaker level is
 * refused, as is a profile applied later that would (its defaults are
 * then made stricter by the property again). */
START_TEST(test_platform_properties_stick) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_platform_property(p, "network", "deny", NULL), 0);
    ck_assert_int_eq(fy_policy_set_platform_property(p, "sandbox-level", "namespace", NULL), 0);
    fy_error *e = NULL;
    const char *net = "{\"network\": {\"mode\": \"allow\"}}";
    ck_assert_int_eq(fy_policy_load_json(p, net, strlen(net), &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.network.mode");
    fy_error_free(e);
    e = NULL;
    const char *lvl = "{\"isolation\": {\"min_level\": \"process\", \"preferred_level\": \"process\"}}";
    ck_assert_int_eq(fy_policy_load_json(p, lvl, strlen(lvl), &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.isolation.min_level");
    fy_error_free(e);
    /* What the properties allow still loads. */
    const char *ok = "{\"network\": {\"mode\": \"deny\"}, \"isolation\": {\"min_level\": \"namespace\"}}";
    e = NULL;
    ck_assert_msg(fy_policy_load_json(p, ok, strlen(ok), &e) == 0, "%s", fy_error_message(e));
    fy_policy_free(p);
}
END_TEST

START_TEST(test_units) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    const char *doc = "{\"resources\": {\"memory\": \"2GiB\", \"disk\": \"10GB\", \"tmp_size\": \"64K\","
                      " \"wall_time\": \"90m\", \"grace\": \"250ms\", \"pids\": \"unlimited\", \"output\": 0}}";
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_load_json(p, doc, strlen(doc), &e) == 0, "%s", fy_error_message(e));
    uint64_t v;
    fy_policy_get_limit(p, FY_LIMIT_MEMORY, &v);
    ck_assert_uint_eq(v, UINT64_C(2) << 30);
    fy_policy_get_limit(p, FY_LIMIT_DISK, &v);
    ck_assert_uint_eq(v, UINT64_C(10000000000));
    fy_policy_get_limit(p, FY_LIMIT_TMP_SIZE, &v);
    ck_assert_uint_eq(v, 65536);
    fy_policy_get_limit(p, FY_LIMIT_WALL_TIME, &v);
    ck_assert_uint_eq(v, UINT64_C(5400000000));
    fy_policy_get_limit(p, FY_LIMIT_GRACE, &v);
    ck_assert_uint_eq(v, 250000);
    fy_policy_get_limit(p, FY_LIMIT_PIDS, &v);
    ck_assert_uint_eq(v, FY_UNLIMITED);
    ck_assert_int_eq(fy_policy_get_limit(p, 0, &v), FY_E_UNSUPPORTED);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_all_or_nothing) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    char *before = json_of(p);
    /* Valid sections first, an invalid one last: nothing may stick. */
    const char *doc = "{\"profile\": \"development\", \"filesystem\": {\"build\": \"/srv/b\"},"
                      " \"resources\": {\"pids\": 0}}";
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_load_json(p, doc, strlen(doc), &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.resources.pids");
    fy_error_free(e);
    char *after = json_of(p);
    ck_assert_str_eq(before, after);
    fy_free(before);
    fy_free(after);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_replace_semantics) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/a", "/a", 0, NULL), 0);
    const char *doc = "{\"filesystem\": {\"binds\": [{\"host\": \"/srv/b\", \"target\": \"/b\"}]},"
                      " \"environment\": {\"set\": {\"ONLY\": \"1\"}}}";
    ck_assert_int_eq(fy_policy_load_json(p, doc, strlen(doc), NULL), 0);
    ck_assert_int_eq(p->binds.n, 1);
    ck_assert_str_eq(((struct pol_bind *)vec_at(&p->binds, 0))->target, "/b");
    ck_assert_int_eq(p->env_set.n, 1);
    ck_assert_ptr_null(policy_get_env(p, "PATH"));
    /* Untouched sections keep their values. */
    ck_assert_uint_eq(p->net_mode, FY_NET_DENY);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_inline_secret_never_serialised) {
    fy_policy *p = policy(FY_PROFILE_RELEASE);
    ck_assert_int_eq(fy_policy_add_secret(p, "tok", FY_SECRET_ENV, "TOKEN", "s3cr3t-VALUE", 12, NULL), 0);
    char *s = json_of(p);
    ck_assert_ptr_null(strstr(s, "s3cr3t"));
    ck_assert_ptr_nonnull(strstr(s, "\"TOKEN\""));
    /* ... and such a document cannot be loaded back (values never come from files). */
    fy_policy *q = policy(FY_PROFILE_RELEASE);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_load_json(q, s, strlen(s), &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.secrets[0].file");
    fy_error_free(e);
    fy_free(s);
    /* Copies own their own secret memory. */
    fy_policy *d = policy_dup(p);
    ck_assert_ptr_nonnull(d);
    const struct pol_secret *a = vec_at(&p->secrets, 0), *b = vec_at(&d->secrets, 0);
    ck_assert_ptr_ne(a->value, b->value);
    ck_assert_int_eq(memcmp(a->value, b->value, 12), 0);
    policy_clear(d);
    free(d);
    fy_policy_free(q);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_setter_errors_name_paths) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_bind(p, "relative", "/x", 0, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.binds[0].host");
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/x", "/proc/x", 0, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.binds[0].target");
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/x", "/x", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv/y", "/x", 0, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.binds[1].target");
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_set_env(p, "1BAD", "v", &e), FY_E_POLICY);
    fy_error_free(e);
    /* any visible ASCII after the first character, but never '=', a space,
     * a control character or a byte above 0x7e */
    ck_assert_int_eq(fy_policy_set_env(p, "BASH_FUNC_rlocation%%", "() { :; }", NULL), 0);
    ck_assert_int_eq(fy_policy_set_env(p, "a.b-c:d", "v", NULL), 0);
    static const char *const bad_names[] = {"A=B", "A B", "A\tB", "A\x7f", "A\xc3\xa9", "=A"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        ck_assert_int_eq(fy_policy_set_env(p, bad_names[i], "v", &e), FY_E_POLICY);
        fy_error_free(e);
    }
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 1000, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.resources.memory");
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_set_workdir(p, "/etc", &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.workdir");
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_set_workdir(p, "/x/sub", NULL), 0); /* inside a bind target */
    ck_assert_int_eq(fy_policy_add_secret(p, "a", FY_SECRET_STDIN, NULL, "v", 1, NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "b", FY_SECRET_STDIN, NULL, "v", 1, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.secrets[1].delivery");
    fy_error_free(e);
    ck_assert_int_eq(p->secrets.n, 1);
    ck_assert_int_eq(fy_policy_add_secret(p, "a", FY_SECRET_FILE, "f", "v", 1, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.secrets[1].name");
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/mem", 0, &e), FY_E_POLICY);
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_add_destination(p, "10.0.0.1/8", FY_PROTO_TCP, 1, 2, &e), FY_E_POLICY);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "bits set"));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* What the JSON parser refuses, said in our words: the JSON path where it
 * can be told, line and column, never the parser's own text or flags. */
START_TEST(test_parse_errors_in_our_words) {
    /* (DOC: the length includes what follows a NUL byte) */
#define DOC(s) s, sizeof(s) - 1
    static const struct {
        const char *doc;
        size_t len;
        const char *loc, *msg;
    } cases[] = {
        {DOC("{\"resources\": {\"memory\": 1e400}}"), "$.resources.memory",
         "number 1e400 is out of range (line 1, column 26)"},
        {DOC("{\"resources\": {\"memory\": 18446744073709551616}}"), "$.resources.memory",
         "number 18446744073709551616 is out of range (line 1, column 26)"},
        {DOC("{\"resources\": {\"disk\": -1e400}}"), "$.resources.disk",
         "number -1e400 is out of range (line 1, column 24)"},
        {DOC("{\"network\": {\"destinations\": [{\"host\": \"a.example\",\n  \"ports\": [1, 1e400]}]}}"),
         "$.network.destinations[0].ports[1]", "number 1e400 is out of range (line 2, column 16)"},
        {DOC("{\"filesystem\": {\"build\": \"/srv/a\\u0000b\"}}"), "$.filesystem.build",
         "\\u0000 (NUL) is not allowed in a string (line 1, column 26)"},
        {DOC("{\"environment\": {\"set\": {\"A\\u0000\": \"1\"}}}"), "$.environment.set",
         "\\u0000 (NUL) is not allowed in a key (line 1, column 26)"},
        {DOC("{\"network\": {\"dns\": \"none\",\n \"dns\": \"host\"}}"), "$.network.dns",
         "this key appears twice in its object (line 2, column 2)"},
        {DOC("{\"resources\": {\"pids\": 10,}}"), "$.resources",
         "expected a key in double quotes, found '}' (line 1, column 27)"},
        {DOC("{\"resources\" {}}"), "$.resources", "expected ':', found '{' (line 1, column 14)"},
        {DOC("{\"version\": tru}"), "$.version", "expected a value, found 'tru' (line 1, column 13)"},
        {DOC("{\"version\": 01}"), "$.version", "invalid number '01' (line 1, column 13)"},
        {DOC("{\"version\": 1"), "$", "expected ',' or '}', found the end of the document (line 1, column 14)"},
        {DOC("{\"version\": 1} x"), "$", "expected the end of the document, found 'x' (line 1, column 16)"},
        {DOC("{\"filesystem\": {\"hostname\": \"a\tb\"}}"), "$.filesystem.hostname",
         "control character U+0009 in a string (write it as \\u0009) (line 1, column 31)"},
        {DOC("{\"environment\": {\"set\": {\"A\": \"\\ud800\"}}}"), "$.environment.set.A",
         "\\ud800 in a string is half a surrogate pair (line 1, column 32)"},
        {DOC("{\"environment\": {\"set\": {\"A\": \"\xff\"}}}"), "$.environment.set.A",
         "invalid UTF-8 (byte 0xff) (line 1, column 32)"},
        {DOC("{\"filesystem\": {\"hostname\": \"a\0b\"}}"), "$",
         "policy document contains a NUL byte (line 1, column 31)"},
    };
#undef DOC
    for (size_t i = 0; i < FY_ARRAY_SIZE(cases); i++) {
        fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
        fy_error *e = NULL;
        ck_assert_int_eq(fy_policy_load_json(p, cases[i].doc, cases[i].len, &e), FY_E_POLICY);
        ck_assert_int_eq(fy_error_step(e), FY_STEP_POLICY);
        ck_assert_msg(strcmp(fy_error_location(e), cases[i].loc) == 0 && strcmp(fy_error_message(e), cases[i].msg) == 0,
                      "%s: got %s: %s", cases[i].doc, fy_error_location(e), fy_error_message(e));
        fy_error_free(e);
        fy_policy_free(p);
    }
    /* Nested too deeply to keep the path: "$", with line and column. */
    char deep[3000];
    size_t n = (size_t)snprintf(deep, sizeof(deep), "{\"version\": ");
    memset(deep + n, '[', sizeof(deep) - n - 1);
    deep[sizeof(deep) - 1] = '\0';
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_load_json(p, deep, strlen(deep), &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$");
    ck_assert_msg(strncmp(fy_error_message(e), "nested too deeply (line 1, column ", 34) == 0, "%s",
                  fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* A backend that can do anything, for fy_prepare without a host. */
static bool any_usable(const fy_caps *c, struct strbuf *why) { return true; }
static bool any_enforce(const fy_caps *c, uint32_t control, const char **why) { return true; }
static const struct fy_backend_ops any_backend = {FY_BACKEND_OPS_VERSION, "test-any", FY_LEVEL_VIRTUAL_MACHINE, 1,
                                                  any_usable, any_enforce};
static const struct fy_backend_ops *const any_table[] = {&any_backend};

static int prepare_any(const fy_policy *p, fy_error **e) {
    fy_caps *c = caps_new();
    fy_prepared *pr = NULL;
    const char *const argv[] = {"/bin/true", NULL};
    int r = prepare_with_table(any_table, 1, p, c, argv, &pr, e);
    fy_prepared_free(pr);
    fy_caps_free(c);
    return r;
}

/* Source, build and output must be directories: one that is a file or a
 * FIFO is refused at prepare, by its policy path; a missing one is left to
 * the start (which names it with the mount step). */
START_TEST(test_workspace_must_be_directories) {
    char dir[] = "/tmp/fy-policy-XXXXXX", fifo[64], file[64], missing[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(file, sizeof(file), "%s/file", dir);
    snprintf(missing, sizeof(missing), "%s/missing", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_source(p, dir, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, missing, NULL), 0);
    ck_assert_int_eq(fy_policy_set_output(p, dir, NULL), 0);
    ck_assert_msg(prepare_any(p, &e) == 0, "%s", fy_error_message(e));
    ck_assert_int_eq(fy_policy_set_build(p, fifo, NULL), 0);
    ck_assert_int_eq(prepare_any(p, &e), FY_E_POLICY);
    ck_assert_int_eq(fy_error_step(e), FY_STEP_PREPARE);
    ck_assert_int_eq(fy_error_os_code(e), ENOTDIR);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.build");
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "is a FIFO, not a directory"));
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_set_build(p, NULL, NULL), 0);
    ck_assert_int_eq(fy_policy_set_source(p, file, 0, NULL), 0);
    ck_assert_int_eq(prepare_any(p, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.source.path");
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "is a regular file, not a directory"));
    fy_error_free(e);
    ck_assert_int_eq(fy_policy_set_source(p, NULL, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_output(p, fifo, NULL), 0);
    ck_assert_int_eq(prepare_any(p, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.filesystem.output");
    fy_error_free(e);
    fy_policy_free(p);
    unlink(fifo);
    unlink(file);
    rmdir(dir);
}
END_TEST

/* A secret file that cannot be read names the secret's "file" key. */
START_TEST(test_secret_file_error_names_path) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_secret(p, "a", FY_SECRET_ENV, "A", "v", 1, NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret_file(p, "b", FY_SECRET_ENV, "B", "/nonexistent/forgeyard/b", NULL), 0);
    ck_assert_int_eq(prepare_any(p, &e), FY_E_NOTFOUND);
    ck_assert_int_eq(fy_error_step(e), FY_STEP_SECRET);
    ck_assert_int_eq(fy_error_os_code(e), ENOENT);
    ck_assert_str_eq(fy_error_location(e), "$.secrets[1].file");
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "/nonexistent/forgeyard/b"));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* Entry i of list l of test_entry_limits_as_documented (distinct, valid). */
static void limit_entry(struct strbuf *sb, size_t l, size_t i) {
    switch (l) {
    case 0: strbuf_printf(sb, "{\"host\": \"/srv/b%zu\", \"target\": \"/opt/b%zu\"}", i, i); break;
    case 1: strbuf_printf(sb, "\"/opt/r%zu\"", i); break;
    case 2: strbuf_printf(sb, "\"t%zu\": \"/opt/t%zu\"", i, i); break;
    case 3: strbuf_printf(sb, "{\"path\": \"/dev/x%zu\"}", i); break;
    case 4:
        strbuf_printf(sb, "{\"name\": \"s%zu\", \"delivery\": \"file\", \"target\": \"f%zu\", \"file\": \"/srv/s\"}",
                      i, i);
        break;
    case 5: strbuf_printf(sb, "\"A%zu\"", i); break;
    case 6: strbuf_printf(sb, "{\"host\": \"h%zu.example\", \"ports\": [443, 443]}", i); break;
    default: strbuf_printf(sb, "\"A%zu\": \"%zu\"", i, i); break;
    }
}

/* The entry limits of forgeyard-policy(5), LIMITS (change both together):
 * a document may hold exactly that many entries of each list, and one
 * more is refused at the list's path. */
START_TEST(test_env_setter_bounded) {
    /* fy_policy_set_env refuses a new name past the 4096 entries fy_prepare
     * allows (100,000 calls took 21 s before any refusal); a name already
     * set may still change. */
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    char name[32];
    int r = 0;
    size_t i = 0;
    for (; i < 5000 && r == 0; i++) {
        snprintf(name, sizeof(name), "V%05zu", i);
        r = fy_policy_set_env(p, name, "x", NULL);
    }
    ck_assert_int_eq(r, FY_E_POLICY);
    ck_assert_uint_le(i, 4097);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_env(p, "V00000", "changed", &e), 0);
    ck_assert_int_eq(fy_policy_set_env(p, "ANOTHER", "x", &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.environment.set");
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_entry_limits_as_documented) {
    static const struct {
        const char *loc, *head, *tail;
        size_t max;
    } lists[] = {
        {"$.filesystem.binds", "{\"filesystem\": {\"binds\": [", "]}}", 256},
        {"$.filesystem.runtime_paths", "{\"filesystem\": {\"runtime_paths\": [", "]}}", 256},
        {"$.filesystem.toolchains", "{\"filesystem\": {\"toolchains\": {", "}}}", 256},
        {"$.devices.allowed", "{\"devices\": {\"allowed\": [", "]}}", 256},
        {"$.secrets", "{\"secrets\": [", "]}", 256},
        {"$.environment.allow", "{\"environment\": {\"allow\": [", "]}}", 1024},
        {"$.network.destinations", "{\"network\": {\"mode\": \"restricted\", \"destinations\": [", "]}}", 1024},
        {"$.environment.set", "{\"environment\": {\"set\": {", "}}}", 4096},
    };
    for (size_t l = 0; l < FY_ARRAY_SIZE(lists); l++) {
        for (size_t n = lists[l].max; n <= lists[l].max + 1; n++) {
            struct strbuf sb;
            strbuf_init(&sb);
            strbuf_append(&sb, lists[l].head);
            for (size_t i = 0; i < n; i++) {
                if (i)
                    strbuf_append(&sb, ", ");
                limit_entry(&sb, l, i);
            }
            strbuf_append(&sb, lists[l].tail);
            fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
            fy_error *e = NULL;
            int r = fy_policy_load_json(p, sb.buf, sb.len, &e);
            if (n == lists[l].max) {
                ck_assert_msg(r == 0, "%zu entries at %s: %s: %s", n, lists[l].loc, fy_error_location(e),
                              fy_error_message(e));
            } else {
                char want[64];
                snprintf(want, sizeof(want), "at most %zu entries are allowed", lists[l].max);
                ck_assert_int_eq(r, FY_E_POLICY);
                ck_assert_str_eq(fy_error_location(e), lists[l].loc);
                ck_assert_str_eq(fy_error_message(e), want);
            }
            fy_error_free(e);
            fy_policy_free(p);
            strbuf_free(&sb);
        }
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_profiles_defaults);
    tcase_add_test(tc, test_full_round_trip);
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_error_location_escaped);
    tcase_add_test(tc, test_platform_properties_stick);
    tcase_add_test(tc, test_all_or_nothing);
    tcase_add_test(tc, test_replace_semantics);
    tcase_add_test(tc, test_inline_secret_never_serialised);
    tcase_add_test(tc, test_setter_errors_name_paths);
    tcase_add_test(tc, test_parse_errors_in_our_words);
    tcase_add_test(tc, test_workspace_must_be_directories);
    tcase_add_test(tc, test_secret_file_error_names_path);
    tcase_add_test(tc, test_entry_limits_as_documented);
    tcase_add_test(tc, test_env_setter_bounded);
    tcase_add_test(tc, test_non_utf8_paths_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
