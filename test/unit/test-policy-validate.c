/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Adversarial tests of policy validation, through the public API only
 * (fy_policy_new, fy_policy_load_json, fy_policy_to_json, fy_policy_validate,
 * the setters and the fy_error accessors). The rules come from the policy
 * file schema (forgeyard-policy(5)).
 *
 * Every rejection case checks:
 *   - the return code (FY_E_POLICY; FY_E_RANGE is also accepted where a
 *     value is merely out of range or too large) equals fy_error_code();
 *   - fy_error_step() is FY_STEP_POLICY;
 *   - fy_error_location() is the JSON path of the offending value ("$" for
 *     whole-document problems). Where the schema does not say which of two
 *     conflicting keys is to blame, the case lists the acceptable paths;
 *   - the message is non-empty;
 *   - the policy is byte-for-byte unchanged (fy_policy_to_json before ==
 *     after): loading is all or nothing;
 *   - the same rejection with extra *valid* changes mixed into the document
 *   before and after the bad value (so a half-applied load would show);
 *   - where given, a near-miss document that differs only in the bad value
 *     loads, so the rejection cannot come from something else and the test
 *     fails if the targeted check is removed.
 * Accepted documents must round-trip: to_json -> load into a fresh policy ->
 * to_json gives the same bytes.
 *
 * The cases are tables, each iterated inside one test, not one Check test
 * per case: Check forks a child per test (CK_FORK) and, under ASan, every
 * child's exit runs a LeakSanitizer pass. With ~900 one-case tests that
 * overhead was ~8 s of a ~10 s ASan run on an idle host (82 s on a loaded
 * one); the checks themselves take under 2 s. A table still runs in its
 * own forked child, so a crash cannot take the runner down; every assertion
 * message names its case, and a crash or sanitizer report is followed by
 * "policy-validate: last case started: <name>" on stderr. */

#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "forgeyard/sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
#define PV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PV_ASAN 1
#endif
#endif
#ifdef PV_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* A JSON document written inline: J({"a":1}) -> "{\"a\":1}". */
#define J(...) #__VA_ARGS__

#define C_POLICY 1 /* FY_E_POLICY */
#define C_RANGE  2 /* FY_E_RANGE */
#define C_ANY    (C_POLICY | C_RANGE)

#define DEFAULT_PROFILE FY_PROFILE_STANDARD_CI
#define MiB (1024u * 1024u)

typedef int (*setup_fn)(fy_policy *p);

/* ------------------------------------------------------------------ */
/* the case being checked                                               */

/* A copy, not a pointer: names are often built and freed per case. */
static char current_case[256] = "(none yet)";

static void case_begin(const char *name)
{
    snprintf(current_case, sizeof current_case, "%s", name);
}

/* Async-signal-safe: called from a signal handler or a sanitizer's death
 * callback, in the forked child that runs the table. */
static void write_case_note(void)
{
    static const char pre[] = "policy-validate: last case started: ";
    ssize_t r = write(STDERR_FILENO, pre, sizeof pre - 1);
    r = write(STDERR_FILENO, current_case, strnlen(current_case, sizeof current_case));
    r = write(STDERR_FILENO, "\n", 1);
    (void)r;
}

#ifndef PV_ASAN
static void on_fatal_signal(int sig)
{
    write_case_note();
    raise(sig); /* SA_RESETHAND: the default action, so Check sees the signal */
}
#endif

/* Installed in the runner before it forks; the children inherit it. Under
 * ASan its own handlers stay (they report and then call the callback). */
static void install_case_note(void)
{
#ifdef PV_ASAN
    __sanitizer_set_death_callback(write_case_note);
#else
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
#endif
}

/* ------------------------------------------------------------------ */
/* helpers                                                              */

static char *xfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    ck_assert(n >= 0);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* "a|b|c*": exact alternatives; a trailing '*' makes one a prefix. */
static bool loc_matches(const char *loc, const char *alts)
{
    if (!loc)
        return false;
    const char *a = alts;
    for (;;) {
        const char *bar = strchr(a, '|');
        size_t n = bar ? (size_t)(bar - a) : strlen(a);
        if (n > 0 && a[n - 1] == '*') {
            if (strncmp(loc, a, n - 1) == 0)
                return true;
        } else if (strlen(loc) == n && strncmp(loc, a, n) == 0) {
            return true;
        }
        if (!bar)
            return false;
        a = bar + 1;
    }
}

static fy_policy *mkpol(uint32_t profile, setup_fn setup)
{
    fy_policy *p = NULL;
    fy_error *e = NULL;
    int rc = fy_policy_new(profile ? profile : DEFAULT_PROFILE, &p, &e);
    ck_assert_msg(rc >= 0 && p, "%s: fy_policy_new(%u) failed: %d %s", current_case, profile, rc,
                  e ? fy_error_message(e) : "");
    fy_error_free(e);
    if (setup) {
        rc = setup(p);
        ck_assert_msg(rc >= 0, "%s: test setup failed: %d", current_case, rc);
    }
    return p;
}

static char *to_json(const fy_policy *p)
{
    char *out = NULL;
    fy_error *e = NULL;
    int rc = fy_policy_to_json(p, &out, &e);
    ck_assert_msg(rc >= 0 && out, "%s: fy_policy_to_json failed: %d %s", current_case, rc,
                  e ? fy_error_message(e) : "");
    fy_error_free(e);
    char *copy = strdup(out);
    ck_assert_ptr_nonnull(copy);
    fy_free(out);
    return copy;
}

/* Loads from a heap buffer of exactly len bytes (no terminating NUL), so a
 * parser that reads past len is caught by ASan/valgrind. */
static int load(fy_policy *p, const char *doc, size_t len, fy_error **e)
{
    char *buf = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(buf);
    if (len)
        memcpy(buf, doc, len);
    int rc = fy_policy_load_json(p, buf, len, e);
    free(buf);
    return rc;
}

static void assert_roundtrip(const char *name, const fy_policy *p, uint32_t profile)
{
    char *j1 = to_json(p);
    fy_policy *q = mkpol(profile, NULL);
    fy_error *e = NULL;
    int rc = load(q, j1, strlen(j1), &e);
    ck_assert_msg(rc >= 0, "%s: canonical JSON does not load back: %d at %s: %s\n%.1500s", name, rc,
                  e ? fy_error_location(e) : "?", e ? fy_error_message(e) : "?", j1);
    fy_error_free(e);
    char *j2 = to_json(q);
    ck_assert_msg(strcmp(j1, j2) == 0, "%s: round trip differs:\n%.1500s\n----\n%.1500s", name, j1, j2);
    free(j2);
    fy_policy_free(q);
    free(j1);
}

static void expect_accept_len(const char *name, uint32_t profile, setup_fn setup, const char *doc, size_t len)
{
    case_begin(name);
    fy_policy *p = mkpol(profile, setup);
    fy_error *e = NULL;
    int rc = load(p, doc, len, &e);
    ck_assert_msg(rc >= 0, "%.200s: valid document rejected: rc=%d (%s) at '%.300s': %.500s\n  doc: %.300s", name, rc,
                  fy_error_name(rc), e ? fy_error_location(e) : "(null)", e ? fy_error_message(e) : "",
                  doc);
    fy_error_free(e);
    e = NULL;
    rc = fy_policy_validate(p, &e);
    ck_assert_msg(rc >= 0, "%.200s: loaded policy does not validate: %d at '%.300s': %.500s", name, rc,
                  e ? fy_error_location(e) : "(null)", e ? fy_error_message(e) : "");
    fy_error_free(e);
    assert_roundtrip(name, p, profile ? profile : DEFAULT_PROFILE);
    fy_policy_free(p);
}

static void expect_accept(const char *name, uint32_t profile, setup_fn setup, const char *doc)
{
    expect_accept_len(name, profile, setup, doc, strlen(doc));
}

static void check_error(const char *name, int rc, fy_error *e, const char *locs, int codes)
{
    ck_assert_msg(rc < 0, "%s: accepted but must be rejected", name);
    ck_assert_msg(e != NULL, "%s: rc=%d but no fy_error returned", name, rc);
    ck_assert_msg(fy_error_code(e) == rc, "%s: fy_error_code()=%d != rc=%d", name, fy_error_code(e), rc);
    bool code_ok = ((codes & C_POLICY) && rc == FY_E_POLICY) || ((codes & C_RANGE) && rc == FY_E_RANGE);
    ck_assert_msg(code_ok, "%s: rc=%d (%s), expected %s", name, rc, fy_error_name(rc),
                  codes == C_POLICY ? "FY_E_POLICY" : "FY_E_POLICY or FY_E_RANGE");
    ck_assert_msg(fy_error_step(e) == FY_STEP_POLICY, "%s: step %u (%s), expected policy", name,
                  fy_error_step(e), fy_step_name(fy_error_step(e)));
    const char *loc = fy_error_location(e);
    ck_assert_msg(loc_matches(loc, locs), "%.200s: location '%.300s', expected '%.300s' (message: %.500s)", name,
                  loc ? loc : "(null)", locs, fy_error_message(e));
    const char *msg = fy_error_message(e);
    ck_assert_msg(msg && *msg, "%s: empty error message", name);
}

static void expect_reject_len(const char *name, uint32_t profile, setup_fn setup, const char *doc, size_t len,
                              const char *locs, int codes)
{
    case_begin(name);
    fy_policy *p = mkpol(profile, setup);
    char *before = to_json(p);
    fy_error *e = NULL;
    int rc = load(p, doc, len, &e);
    if (rc >= 0)
        ck_abort_msg("%.200s: accepted but must be rejected (expected error at %.300s)\n  doc: %.300s", name, locs, doc);
    check_error(name, rc, e, locs, codes);
    fy_error_free(e);
    char *after = to_json(p);
    ck_assert_msg(strcmp(before, after) == 0, "%s: policy changed by a rejected load:\n%.1500s\n----\n%.1500s", name,
                  before, after);
    free(after);
    /* Same result without an error out-parameter. */
    int rc2 = load(p, doc, len, NULL);
    ck_assert_msg(rc2 == rc, "%s: rc %d without reterr, %d with", name, rc2, rc);
    after = to_json(p);
    ck_assert_msg(strcmp(before, after) == 0, "%s: policy changed by a rejected load (no reterr)", name);
    free(after);
    e = NULL;
    rc = fy_policy_validate(p, &e);
    ck_assert_msg(rc >= 0, "%s: policy invalid after a rejected load: %s", name, e ? fy_error_message(e) : "");
    fy_error_free(e);
    free(before);
    fy_policy_free(p);
}

static void expect_reject(const char *name, uint32_t profile, setup_fn setup, const char *doc, const char *locs,
                          int codes)
{
    expect_reject_len(name, profile, setup, doc, strlen(doc), locs, codes);
}

/* Valid changes mixed into a bad document: a half-applied load shows up as
 * a changed policy. Added where the document does not already have the key;
 * "pre" ones before the document's own keys, "post" ones after. */
struct mutation {
    const char *section, *key, *value;
    bool pre;
};
static const struct mutation MUTATIONS[] = {
    { "filesystem", "hostname", "\"mutated-pre\"", true },
    { "resources", "output", "123456789", true },
    { "process", "seccomp", "\"networked-test\"", false },
    { "resources", "disk", "987654321", false },
};


static bool section_mutated(const char *section)
{
    for (size_t i = 0; i < sizeof(MUTATIONS) / sizeof(MUTATIONS[0]); i++)
        if (strcmp(MUTATIONS[i].section, section) == 0)
            return true;
    return false;
}

static void mutation_set(json_t *sec, const struct mutation *m, bool *applied)
{
    if (json_object_get(sec, m->key))
        return;
    json_error_t jerr;
    json_t *v = json_loads(m->value, JSON_DECODE_ANY, &jerr);
    ck_assert_ptr_nonnull(v);
    json_object_set_new(sec, m->key, v);
    *applied = true;
}

/* Returns the document with the valid mutations mixed in, or NULL when the
 * document is not a duplicate-free JSON object (nothing to mix into). */
static char *mutate_doc(const char *doc, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    bool applied = false;
    json_t *out = json_object();
    const size_t nm = sizeof(MUTATIONS) / sizeof(MUTATIONS[0]);
    for (size_t i = 0; i < nm; i++) {
        const struct mutation *m = &MUTATIONS[i];
        if (!m->pre || json_object_get(root, m->section))
            continue;
        json_t *sec = json_object_get(out, m->section);
        if (!sec) {
            sec = json_object();
            json_object_set_new(out, m->section, sec);
        }
        mutation_set(sec, m, &applied);
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        if (json_is_object(v) && section_mutated(k)) {
            json_t *ns = json_object();
            for (size_t i = 0; i < nm; i++)
                if (MUTATIONS[i].pre && strcmp(MUTATIONS[i].section, k) == 0 && !json_object_get(v, MUTATIONS[i].key))
                    mutation_set(ns, &MUTATIONS[i], &applied);
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2)
                json_object_set(ns, k2, v2);
            for (size_t i = 0; i < nm; i++)
                if (!MUTATIONS[i].pre && strcmp(MUTATIONS[i].section, k) == 0)
                    mutation_set(ns, &MUTATIONS[i], &applied);
            json_object_set_new(out, k, ns);
        } else {
            json_object_set(out, k, v);
        }
    }
    for (size_t i = 0; i < nm; i++) {
        const struct mutation *m = &MUTATIONS[i];
        if (m->pre || json_object_get(root, m->section))
            continue;
        json_t *sec = json_object_get(out, m->section);
        if (!sec) {
            sec = json_object();
            json_object_set_new(out, m->section, sec);
        }
        mutation_set(sec, m, &applied);
    }
    char *s = applied ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    json_decref(root);
    return s;
}

/* A rejection case, its mutated variant and its near-miss. */
static void reject_case(const char *name, uint32_t profile, setup_fn setup, const char *ok, const char *bad,
                        const char *locs, int codes)
{
    if (ok)
        expect_accept(name, profile, setup, ok);
    expect_reject(name, profile, setup, bad, locs, codes);
    char *mut = mutate_doc(bad, strlen(bad));
    if (mut) {
        char *mname = xfmt("%s (with valid changes mixed in)", name);
        expect_reject(mname, profile, setup, mut, locs, codes);
        free(mname);
        free(mut);
    }
}

/* ------------------------------------------------------------------ */
/* setups (host-program state before the document is loaded)           */

static int setup_floor_namespace(fy_policy *p)
{
    int rc = fy_policy_set_isolation(p, FY_LEVEL_NAMESPACE, FY_LEVEL_CONTAINER, NULL);
    if (rc < 0)
        return rc;
    return fy_policy_set_level_floor(p, FY_LEVEL_NAMESPACE, NULL);
}

static int setup_levels_process_namespace(fy_policy *p)
{
    return fy_policy_set_isolation(p, FY_LEVEL_PROCESS, FY_LEVEL_NAMESPACE, NULL);
}

static int setup_source(fy_policy *p)
{
    return fy_policy_set_source(p, "/srv/src", 0, NULL);
}

static int setup_net_deny(fy_policy *p)
{
    int rc = fy_policy_set_dns(p, FY_DNS_NONE, NULL);
    if (rc < 0)
        return rc;
    return fy_policy_set_network(p, FY_NET_DENY, NULL);
}

static int setup_require_memory(fy_policy *p)
{
    int rc = fy_policy_set_limit(p, FY_LIMIT_MEMORY, 1ull << 30, NULL);
    if (rc < 0)
        return rc;
    return fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_REQUIRE, NULL);
}

static int setup_env_term(fy_policy *p)
{
    return fy_policy_set_env(p, "TERM", "dumb", NULL);
}

static int setup_env_allow_term(fy_policy *p)
{
    return fy_policy_allow_env(p, "TERM", NULL);
}

/* ------------------------------------------------------------------ */
/* the table of rejection cases                                         */

struct neg {
    const char *name;
    uint32_t profile;
    setup_fn setup;
    const char *ok;  /* near miss that must load, or NULL */
    const char *bad; /* must be rejected */
    const char *locs;
    int codes;
};

#define NEG(n, okd, badd, l) { n, 0, NULL, okd, badd, l, C_POLICY }
#define NEGR(n, okd, badd, l) { n, 0, NULL, okd, badd, l, C_ANY }
#define NEGS(n, s, okd, badd, l) { n, 0, s, okd, badd, l, C_POLICY }

/* Fragments. */
#define NET_RESTRICTED J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]}]}})

static const struct neg NEGS_TABLE[] = {
    /* ---- the document as a whole ---- */
    NEG("version 2", J({"version":1}), J({"version":2}), "$.version"),
    NEG("version 0", J({"version":1}), J({"version":0}), "$.version"),
    NEG("version -1", J({"version":1}), J({"version":-1}), "$.version"),
    NEG("version as string", J({"version":1}), J({"version":"1"}), "$.version"),
    NEG("version null", J({"version":1}), J({"version":null}), "$.version"),
    NEG("unknown profile", J({"profile":"release"}), J({"profile":"production"}), "$.profile"),
    NEG("profile wrong case", J({"profile":"release"}), J({"profile":"Release"}), "$.profile"),
    NEG("profile as number", J({"profile":"release"}), J({"profile":3}), "$.profile"),
    NEG("unknown top-level key", J({}), J({"bogus":1}), "$.bogus"),
    NEG("top-level key wrong case", J({"version":1}), J({"Version":1}), "$.Version"),
    NEG("top-level array", J({}), J([]), "$"),
    NEG("top-level null", J({}), "null", "$"),
    NEG("top-level string", J({}), J("x"), "$"),
    NEG("top-level number", J({}), "1", "$"),
    NEG("empty document", J({}), "", "$"),
    NEG("whitespace only", J({}), "  \n\t ", "$"),
    NEG("unterminated object", J({}), "{", "$"),
    NEG("trailing garbage", J({}), "{} x", "$"),
    NEG("two documents", J({}), "{}{}", "$"),
    NEG("trailing comma", J({"version":1}), "{\"version\":1,}", "$"),
    NEG("comment", J({}), "{/* c */}", "$"),
    NEG("single quotes", J({"version":1}), "{'version':1}", "$"),
    NEG("NaN", J({"version":1}), "{\"version\":NaN}", "$|$.version"),
    NEG("raw control char in string", J({"filesystem":{"hostname":"ab"}}), "{\"filesystem\":{\"hostname\":\"a\tb\"}}", "$|$.filesystem.hostname"),
    NEG("integer overflow literal", J({"resources":{"disk":1}}), J({"resources":{"disk":99999999999999999999}}), "$|$.resources.disk"),
    NEG("lone high surrogate escape", J({"environment":{"set":{"A":"\ud83d\ude00"}}}), J({"environment":{"set":{"A":"x\ud800y"}}}), "$|$.environment.set.A"),
    NEG("lone low surrogate escape", J({"environment":{"set":{"A":"\ud83d\ude00"}}}), J({"environment":{"set":{"A":"\udc00"}}}), "$|$.environment.set.A"),
    NEG("\\u0000 in a value", J({"environment":{"set":{"A":"ab"}}}), J({"environment":{"set":{"A":"a\u0000b"}}}), "$|$.environment.set.A"),
    NEG("\\u0000 in a key", J({"environment":{"set":{"AB":"1"}}}), J({"environment":{"set":{"A\u0000B":"1"}}}), "$|$.environment.set*"),
    NEG("\\u0000 in hostname", J({"filesystem":{"hostname":"ab"}}), J({"filesystem":{"hostname":"a\u0000b"}}), "$|$.filesystem.hostname"),
    /* duplicate keys */
    NEG("duplicate top-level key", J({"version":1}), J({"version":1,"version":1}), "$|$.version"),
    NEG("duplicate section", J({"network":{}}), J({"network":{},"network":{}}), "$|$.network"),
    NEG("duplicate nested key", J({"network":{"dns":"none"}}), J({"network":{"dns":"none","dns":"none"}}), "$|$.network|$.network.dns"),
    NEG("duplicate resources key", J({"resources":{"pids":10}}), J({"resources":{"pids":10,"pids":20}}), "$|$.resources|$.resources.pids"),
    NEG("duplicate env name", J({"environment":{"set":{"A":"1"}}}), J({"environment":{"set":{"A":"1","A":"2"}}}), "$|$.environment.set|$.environment.set.A"),
    NEG("duplicate toolchain name", J({"filesystem":{"toolchains":{"gcc":"/opt/a"}}}), J({"filesystem":{"toolchains":{"gcc":"/opt/a","gcc":"/opt/b"}}}), "$|$.filesystem.toolchains|$.filesystem.toolchains.gcc"),
    NEG("duplicate key in bind", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"}]}}), J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a","target":"/opt/a"}]}}), "$|$.filesystem.binds[0]|$.filesystem.binds[0].target"),
    NEG("duplicate control", J({"isolation":{"controls":{"seccomp":"prefer"}}}), J({"isolation":{"controls":{"seccomp":"prefer","seccomp":"off"}}}), "$|$.isolation.controls|$.isolation.controls.seccomp"),

    /* ---- unknown keys at every level ---- */
    NEG("unknown key in isolation", J({"isolation":{}}), J({"isolation":{"bogus":1}}), "$.isolation.bogus"),
    NEG("unknown control", J({"isolation":{"controls":{"userns":"prefer"}}}), J({"isolation":{"controls":{"userns":"prefer","bogus":"off"}}}), "$.isolation.controls.bogus"),
    NEG("control name with underscore", J({"isolation":{"controls":{"memory-limit":"prefer"}}}), J({"isolation":{"controls":{"memory_limit":"prefer"}}}), "$.isolation.controls.memory_limit"),
    NEG("unknown key in filesystem", J({"filesystem":{}}), J({"filesystem":{"bogus":1}}), "$.filesystem.bogus"),
    NEG("unknown key in source", J({"filesystem":{"source":{"path":"/srv/src","writable":false}}}), J({"filesystem":{"source":{"path":"/srv/src","writable":false,"mode":"ro"}}}), "$.filesystem.source.mode"),
    NEG("unknown key in bind", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"},{"host":"/srv/b","target":"/opt/b"}]}}), J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"},{"host":"/srv/b","target":"/opt/b","readonly":true}]}}), "$.filesystem.binds[1].readonly"),
    NEG("unknown key in environment", J({"environment":{}}), J({"environment":{"unset":["A"]}}), "$.environment.unset"),
    NEG("unknown key in network", J({"network":{}}), J({"network":{"proxy":"x"}}), "$.network.proxy"),
    NEG("unknown key in destination", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443],"port":443}]}}), "$.network.destinations[0].port"),
    NEG("unknown key in resources", J({"resources":{"memory_swap":0}}), J({"resources":{"swap":0}}), "$.resources.swap"),
    NEG("unknown key in process", J({"process":{}}), J({"process":{"uid":0}}), "$.process.uid"),
    NEG("unknown key in id_range", J({"process":{"id_range":{"first":100000,"count":65536}}}), J({"process":{"id_range":{"first":100000,"count":65536,"last":165535}}}), "$.process.id_range.last"),
    NEG("unknown key in devices", J({"devices":{}}), J({"devices":{"tty":"leased"}}), "$.devices.tty"),
    NEG("unknown key in device", J({"devices":{"allowed":[{"path":"/dev/fuse","writable":false}]}}), J({"devices":{"allowed":[{"path":"/dev/fuse","writable":false,"mode":"rw"}]}}), "$.devices.allowed[0].mode"),
    NEG("unknown key in secret", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok","value":"hunter2"}]}), "$.secrets[0].value"),

    /* ---- wrong types for every key ---- */
    NEG("isolation not an object", J({"isolation":{}}), J({"isolation":[]}), "$.isolation"),
    NEG("filesystem not an object", J({"filesystem":{}}), J({"filesystem":"x"}), "$.filesystem"),
    NEG("environment not an object", J({"environment":{}}), J({"environment":1}), "$.environment"),
    NEG("network not an object", J({"network":{}}), J({"network":true}), "$.network"),
    NEG("resources not an object", J({"resources":{}}), J({"resources":[]}), "$.resources"),
    NEG("process not an object", J({"process":{}}), J({"process":"x"}), "$.process"),
    NEG("devices not an object", J({"devices":{}}), J({"devices":1}), "$.devices"),
    NEG("secrets not an array", J({"secrets":[]}), J({"secrets":{}}), "$.secrets"),
    NEG("section null", J({"network":{}}), J({"network":null}), "$.network"),
    NEG("min_level as number", J({"isolation":{"min_level":"process"}}), J({"isolation":{"min_level":1}}), "$.isolation.min_level"),
    NEG("preferred_level as bool", J({"isolation":{"preferred_level":"container"}}), J({"isolation":{"preferred_level":true}}), "$.isolation.preferred_level"),
    NEG("controls as array", J({"isolation":{"controls":{}}}), J({"isolation":{"controls":["userns"]}}), "$.isolation.controls"),
    NEG("control mode as number", J({"isolation":{"controls":{"userns":"prefer"}}}), J({"isolation":{"controls":{"userns":2}}}), "$.isolation.controls.userns"),
    NEG("control mode as bool", J({"isolation":{"controls":{"userns":"prefer"}}}), J({"isolation":{"controls":{"userns":true}}}), "$.isolation.controls.userns"),
    NEG("source as string", J({"filesystem":{"source":{"path":"/srv/src"}}}), J({"filesystem":{"source":"/srv/src"}}), "$.filesystem.source"),
    NEG("source.path as number", J({"filesystem":{"source":{"path":"/srv/src"}}}), J({"filesystem":{"source":{"path":5}}}), "$.filesystem.source.path"),
    NEG("source.path null", J({"filesystem":{"source":{"path":"/srv/src"}}}), J({"filesystem":{"source":{"path":null}}}), "$.filesystem.source.path"),
    NEG("source without path", J({"filesystem":{"source":{"path":"/srv/src","writable":true}}}), J({"filesystem":{"source":{"writable":true}}}), "$.filesystem.source.path|$.filesystem.source"),
    NEG("source.writable as string", J({"filesystem":{"source":{"path":"/srv/src","writable":false}}}), J({"filesystem":{"source":{"path":"/srv/src","writable":"false"}}}), "$.filesystem.source.writable"),
    NEG("source.writable as int", J({"filesystem":{"source":{"path":"/srv/src","writable":true}}}), J({"filesystem":{"source":{"path":"/srv/src","writable":1}}}), "$.filesystem.source.writable"),
    NEG("build as number", J({"filesystem":{"build":"/srv/build"}}), J({"filesystem":{"build":5}}), "$.filesystem.build"),
    NEG("build as object", J({"filesystem":{"build":null}}), J({"filesystem":{"build":{"path":"/srv/build"}}}), "$.filesystem.build"),
    NEG("output as array", J({"filesystem":{"output":"/srv/out"}}), J({"filesystem":{"output":["/srv/out"]}}), "$.filesystem.output"),
    NEG("toolchains as array", J({"filesystem":{"toolchains":{}}}), J({"filesystem":{"toolchains":["/opt/gcc"]}}), "$.filesystem.toolchains"),
    NEG("toolchain path as number", J({"filesystem":{"toolchains":{"gcc":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"gcc":12}}}), "$.filesystem.toolchains.gcc"),
    NEG("toolchain path null", J({"filesystem":{"toolchains":{"gcc":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"gcc":null}}}), "$.filesystem.toolchains.gcc"),
    NEG("binds as object", J({"filesystem":{"binds":[]}}), J({"filesystem":{"binds":{}}}), "$.filesystem.binds"),
    NEG("bind as string", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"}]}}), J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"},"/srv/b:/opt/b"]}}), "$.filesystem.binds[1]"),
    NEG("bind host as number", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"}]}}), J({"filesystem":{"binds":[{"host":5,"target":"/opt/a"}]}}), "$.filesystem.binds[0].host"),
    NEG("bind target null", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"}]}}), J({"filesystem":{"binds":[{"host":"/srv/a","target":null}]}}), "$.filesystem.binds[0].target"),
    NEG("bind without target", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"}]}}), J({"filesystem":{"binds":[{"host":"/srv/a"}]}}), "$.filesystem.binds[0].target|$.filesystem.binds[0]"),
    NEG("bind without host", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"}]}}), J({"filesystem":{"binds":[{"target":"/opt/a"}]}}), "$.filesystem.binds[0].host|$.filesystem.binds[0]"),
    NEG("bind writable as string", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a","writable":true}]}}), J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a","writable":"yes"}]}}), "$.filesystem.binds[0].writable"),
    NEG("bind optional as int", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a","optional":true}]}}), J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a","optional":1}]}}), "$.filesystem.binds[0].optional"),
    NEG("runtime_paths as string", J({"filesystem":{"runtime_paths":["/usr"]}}), J({"filesystem":{"runtime_paths":"/usr"}}), "$.filesystem.runtime_paths"),
    NEG("runtime path as number", J({"filesystem":{"runtime_paths":["/usr","/bin"]}}), J({"filesystem":{"runtime_paths":["/usr",7]}}), "$.filesystem.runtime_paths[1]"),
    NEG("workdir as number", J({"filesystem":{"workdir":"/work/build"}}), J({"filesystem":{"workdir":1}}), "$.filesystem.workdir"),
    NEG("hostname as number", J({"filesystem":{"hostname":"h1"}}), J({"filesystem":{"hostname":1}}), "$.filesystem.hostname"),
    NEG("env set as array", J({"environment":{"set":{}}}), J({"environment":{"set":["A=1"]}}), "$.environment.set"),
    NEG("env value as number", J({"environment":{"set":{"A":"1"}}}), J({"environment":{"set":{"A":1}}}), "$.environment.set.A"),
    NEG("env value null", J({"environment":{"set":{"A":"1"}}}), J({"environment":{"set":{"A":null}}}), "$.environment.set.A"),
    NEG("env allow as string", J({"environment":{"allow":["TERM"]}}), J({"environment":{"allow":"TERM"}}), "$.environment.allow"),
    NEG("env allow item as number", J({"environment":{"allow":["TERM","TZ"]}}), J({"environment":{"allow":["TERM",1]}}), "$.environment.allow[1]"),
    NEG("network mode as number", J({"network":{"mode":"deny","dns":"none","destinations":[]}}), J({"network":{"mode":1,"dns":"none","destinations":[]}}), "$.network.mode"),
    NEG("dns as bool", J({"network":{"dns":"none"}}), J({"network":{"dns":false}}), "$.network.dns"),
    NEG("destinations as object", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":{"host":"example.org","proto":"tcp","ports":[443,443]}}}), "$.network.destinations"),
    NEG("destination as string", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]},"example.org:443"]}}), "$.network.destinations[1]"),
    NEG("destination host as number", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":167837953,"proto":"tcp","ports":[443,443]}]}}), "$.network.destinations[0].host"),
    NEG("destination without host", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"proto":"tcp","ports":[443,443]}]}}), "$.network.destinations[0].host|$.network.destinations[0]"),
    NEG("proto as number", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":6,"ports":[443,443]}]}}), "$.network.destinations[0].proto"),
    NEG("ports as string", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":"443"}]}}), "$.network.destinations[0].ports"),
    NEG("ports as number", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":443}]}}), "$.network.destinations[0].ports"),
    NEG("ports with one item", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443]}]}}), "$.network.destinations[0].ports"),
    NEG("ports empty", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[]}]}}), "$.network.destinations[0].ports"),
    NEG("ports with three items", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[80,443,8080]}]}}), "$.network.destinations[0].ports"),
    NEG("port as string", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":["443",443]}]}}), "$.network.destinations[0].ports[0]|$.network.destinations[0].ports"),
    NEG("port as real", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443.5]}]}}), "$.network.destinations[0].ports[1]|$.network.destinations[0].ports"),
    NEG("user as number", J({"process":{"user":"sandbox"}}), J({"process":{"user":1}}), "$.process.user"),
    NEG("seccomp as number", J({"process":{"seccomp":"general-build"}}), J({"process":{"seccomp":1}}), "$.process.seccomp"),
    NEG("id_range as string", J({"process":{"id_range":{"first":100000,"count":65536}}}), J({"process":{"id_range":"100000-165535"}}), "$.process.id_range"),
    NEG("id_range.first as string", J({"process":{"id_range":{"first":100000,"count":65536}}}), J({"process":{"id_range":{"first":"100000","count":65536}}}), "$.process.id_range.first"),
    NEG("id_range.count as real", J({"process":{"id_range":{"first":100000,"count":65536}}}), J({"process":{"id_range":{"first":100000,"count":65536.5}}}), "$.process.id_range.count"),
    NEG("devices.allowed as object", J({"devices":{"allowed":[]}}), J({"devices":{"allowed":{}}}), "$.devices.allowed"),
    NEG("device as string", J({"devices":{"allowed":[{"path":"/dev/fuse"}]}}), J({"devices":{"allowed":["/dev/fuse"]}}), "$.devices.allowed[0]"),
    NEG("device path as number", J({"devices":{"allowed":[{"path":"/dev/fuse"}]}}), J({"devices":{"allowed":[{"path":1}]}}), "$.devices.allowed[0].path"),
    NEG("device writable as string", J({"devices":{"allowed":[{"path":"/dev/fuse","writable":true}]}}), J({"devices":{"allowed":[{"path":"/dev/fuse","writable":"rw"}]}}), "$.devices.allowed[0].writable"),
    NEG("gpu as bool", J({"devices":{"gpu":"deny"}}), J({"devices":{"gpu":false}}), "$.devices.gpu"),
    NEG("usb as number", J({"devices":{"usb":"deny"}}), J({"devices":{"usb":1}}), "$.devices.usb"),
    NEG("secret as string", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":["tok"]}), "$.secrets[0]"),
    NEG("secret name as number", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":1,"delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].name"),
    NEG("secret delivery as number", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"tok","delivery":1,"target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].delivery"),
    NEG("secret target as number", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"tok","delivery":"env","target":1,"file":"/etc/fy/tok"}]}), "$.secrets[0].target"),
    NEG("secret file as number", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":1}]}), "$.secrets[0].file"),
    NEG("secret without file", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"tok","delivery":"env","target":"TOK"}]}), "$.secrets[0].file|$.secrets[0]"),
    NEG("secret without name", J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].name|$.secrets[0]"),

    /* ---- enumerations ---- */
    NEG("unknown min_level", J({"isolation":{"min_level":"namespace"}}), J({"isolation":{"min_level":"kernel"}}), "$.isolation.min_level"),
    NEG("unknown preferred_level", J({"isolation":{"preferred_level":"container"}}), J({"isolation":{"preferred_level":"vm"}}), "$.isolation.preferred_level"),
    NEG("unknown control mode", J({"isolation":{"controls":{"userns":"require"}}}), J({"isolation":{"controls":{"userns":"maybe"}}}), "$.isolation.controls.userns"),
    NEG("control mode wrong case", J({"isolation":{"controls":{"userns":"require"}}}), J({"isolation":{"controls":{"userns":"Require"}}}), "$.isolation.controls.userns"),
    NEG("unknown network mode", J({"network":{"mode":"deny","dns":"none","destinations":[]}}), J({"network":{"mode":"open","dns":"none","destinations":[]}}), "$.network.mode"),
    NEG("unknown dns", J({"network":{"dns":"none"}}), J({"network":{"dns":"8.8.8.8"}}), "$.network.dns"),
    NEG("unknown proto", NET_RESTRICTED, J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"icmp","ports":[443,443]}]}}), "$.network.destinations[0].proto"),
    NEG("unknown user", J({"process":{"user":"fake-root"}}), J({"process":{"user":"root"}}), "$.process.user"),
    NEG("unknown seccomp class", J({"process":{"seccomp":"networked-test"}}), J({"process":{"seccomp":"none"}}), "$.process.seccomp"),
    NEG("unknown gpu mode", J({"devices":{"gpu":"deny"}}), J({"devices":{"gpu":"shared"}}), "$.devices.gpu"),
    NEG("unknown usb mode", J({"devices":{"usb":"deny"}}), J({"devices":{"usb":"allow"}}), "$.devices.usb"),
    NEG("pty leased", J({"devices":{"pty":"private"}}), J({"devices":{"pty":"leased"}}), "$.devices.pty"),
    NEG("gpu private", J({"devices":{"gpu":"deny"}}), J({"devices":{"gpu":"private"}}), "$.devices.gpu"),
    NEG("unknown secret delivery", J({"secrets":[{"name":"tok","delivery":"file","target":"tok","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"tok","delivery":"argv","target":"tok","file":"/etc/fy/tok"}]}), "$.secrets[0].delivery"),

    /* ---- isolation: cross-field ---- */
    NEG("min_level above preferred_level",
        J({"isolation":{"min_level":"namespace","preferred_level":"container"}}),
        J({"isolation":{"min_level":"container","preferred_level":"namespace"}}),
        "$.isolation.preferred_level|$.isolation.min_level|$.isolation"),
    NEGS("min_level above the current preferred_level", setup_levels_process_namespace,
         J({"isolation":{"min_level":"namespace"}}),
         J({"isolation":{"min_level":"virtual-machine"}}),
         "$.isolation.min_level|$.isolation"),
    NEGS("preferred_level below the current min_level", setup_floor_namespace,
         J({"isolation":{"preferred_level":"namespace"}}),
         J({"isolation":{"preferred_level":"process"}}),
         "$.isolation.preferred_level|$.isolation"),
    NEGS("min_level below the host floor", setup_floor_namespace,
         J({"isolation":{"min_level":"namespace","preferred_level":"container"}}),
         J({"isolation":{"min_level":"process","preferred_level":"container"}}),
         "$.isolation.min_level"),
    NEGS("min_level none below the host floor", setup_floor_namespace,
         J({"isolation":{"min_level":"container","preferred_level":"container"}}),
         J({"isolation":{"min_level":"none","preferred_level":"container"}}),
         "$.isolation.min_level"),
    NEGS("profile reset keeps the host floor", setup_floor_namespace,
         J({"profile":"standard-ci","isolation":{"min_level":"namespace","preferred_level":"container"}}),
         J({"profile":"standard-ci","isolation":{"min_level":"process","preferred_level":"container"}}),
         "$.isolation.min_level|$.profile"),
    NEG("netns required with network allow",
        J({"isolation":{"controls":{"netns":"require"}},"network":{"mode":"deny","dns":"none","destinations":[]}}),
        J({"isolation":{"controls":{"netns":"require"}},"network":{"mode":"allow","dns":"host","destinations":[]}}),
        "$.network.mode|$.isolation.controls.netns"),
    NEG("memory-limit required with memory unlimited",
        J({"isolation":{"controls":{"memory-limit":"require"}},"resources":{"memory":"1G"}}),
        J({"isolation":{"controls":{"memory-limit":"require"}},"resources":{"memory":"unlimited"}}),
        "$.resources.memory|$.isolation.controls.memory-limit"),
    NEGS("memory unlimited while memory-limit is required", setup_require_memory,
         J({"resources":{"memory":"2G"}}),
         J({"resources":{"memory":"unlimited"}}),
         "$.resources.memory|$.resources"),
    NEG("pids-limit required with pids unlimited",
        J({"isolation":{"controls":{"pids-limit":"require"}},"resources":{"pids":1024}}),
        J({"isolation":{"controls":{"pids-limit":"require"}},"resources":{"pids":"unlimited"}}),
        "$.resources.pids|$.isolation.controls.pids-limit"),
    NEG("cpu-limit required with cpu unlimited",
        J({"isolation":{"controls":{"cpu-limit":"require"}},"resources":{"cpu_millis":2000}}),
        J({"isolation":{"controls":{"cpu-limit":"require"}},"resources":{"cpu_millis":"unlimited"}}),
        "$.resources.cpu_millis|$.isolation.controls.cpu-limit"),

    /* ---- filesystem ---- */
    NEG("toolchain name with slash", J({"filesystem":{"toolchains":{"ab":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"a/b":"/opt/gcc"}}}), "$.filesystem.toolchains.a/b|$.filesystem.toolchains[\"a/b\"]|$.filesystem.toolchains"),
    NEG("toolchain name .", J({"filesystem":{"toolchains":{".a":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{".":"/opt/gcc"}}}), "$.filesystem.toolchains.*|$.filesystem.toolchains[\".\"]|$.filesystem.toolchains"),
    NEG("toolchain name ..", J({"filesystem":{"toolchains":{"..a":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"..":"/opt/gcc"}}}), "$.filesystem.toolchains.*|$.filesystem.toolchains[\"..\"]|$.filesystem.toolchains"),
    NEG("toolchain name empty", J({"filesystem":{"toolchains":{"gcc-12.2+x":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"":"/opt/gcc"}}}), "$.filesystem.toolchains.|$.filesystem.toolchains[\"\"]|$.filesystem.toolchains"),
    NEG("toolchain name with space", J({"filesystem":{"toolchains":{"gcc12":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"gcc 12":"/opt/gcc"}}}), "$.filesystem.toolchains.gcc 12|$.filesystem.toolchains[\"gcc 12\"]|$.filesystem.toolchains"),
    NEG("toolchain name with colon", J({"filesystem":{"toolchains":{"gcc12":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"gcc:12":"/opt/gcc"}}}), "$.filesystem.toolchains.gcc:12|$.filesystem.toolchains[\"gcc:12\"]|$.filesystem.toolchains"),
    /* ([A-Za-z0-9._+-] includes '_': a name with a space is the near miss.) */
    NEG("toolchain name with a space", J({"filesystem":{"toolchains":{"gcc_12":"/opt/gcc"}}}), J({"filesystem":{"toolchains":{"gcc 12":"/opt/gcc"}}}), "$.filesystem.toolchains.gcc 12|$.filesystem.toolchains"),
    NEG("hostname leading hyphen", J({"filesystem":{"hostname":"bad"}}), J({"filesystem":{"hostname":"-bad"}}), "$.filesystem.hostname"),
    NEG("hostname trailing hyphen", J({"filesystem":{"hostname":"bad"}}), J({"filesystem":{"hostname":"bad-"}}), "$.filesystem.hostname"),
    NEG("hostname label trailing hyphen", J({"filesystem":{"hostname":"a.b"}}), J({"filesystem":{"hostname":"a-.b"}}), "$.filesystem.hostname"),
    NEG("hostname underscore", J({"filesystem":{"hostname":"a-b"}}), J({"filesystem":{"hostname":"a_b"}}), "$.filesystem.hostname"),
    NEG("hostname empty", J({"filesystem":{"hostname":"a"}}), J({"filesystem":{"hostname":""}}), "$.filesystem.hostname"),
    NEG("hostname empty label", J({"filesystem":{"hostname":"a.b"}}), J({"filesystem":{"hostname":"a..b"}}), "$.filesystem.hostname"),
    NEG("hostname leading dot", J({"filesystem":{"hostname":"a.b"}}), J({"filesystem":{"hostname":".a.b"}}), "$.filesystem.hostname"),
    NEG("hostname with space", J({"filesystem":{"hostname":"ab"}}), J({"filesystem":{"hostname":"a b"}}), "$.filesystem.hostname"),
    NEG("hostname with slash", J({"filesystem":{"hostname":"ab"}}), J({"filesystem":{"hostname":"a/b"}}), "$.filesystem.hostname"),
    NEG("hostname non-ASCII", J({"filesystem":{"hostname":"xn--hll-fka"}}), J({"filesystem":{"hostname":"h\u00e9ll"}}), "$.filesystem.hostname"),
    NEG("hostname control char", J({"filesystem":{"hostname":"ab"}}), J({"filesystem":{"hostname":"a\nb"}}), "$.filesystem.hostname"),
    NEG("workdir outside the allowed roots", J({"filesystem":{"workdir":"/work/build"}}), J({"filesystem":{"workdir":"/etc"}}), "$.filesystem.workdir"),
    NEG("workdir /workx is not inside /work", J({"filesystem":{"workdir":"/work/x"}}), J({"filesystem":{"workdir":"/workx"}}), "$.filesystem.workdir"),
    NEG("workdir /tmpx is not inside /tmp", J({"filesystem":{"workdir":"/tmp/x"}}), J({"filesystem":{"workdir":"/tmpx"}}), "$.filesystem.workdir"),
    NEG("workdir /home/forgeyardx", J({"filesystem":{"workdir":"/home/forgeyard/src"}}), J({"filesystem":{"workdir":"/home/forgeyardx"}}), "$.filesystem.workdir"),
    NEG("workdir in another home", J({"filesystem":{"workdir":"/home/forgeyard"}}), J({"filesystem":{"workdir":"/home/other"}}), "$.filesystem.workdir"),
    NEG("workdir relative", J({"filesystem":{"workdir":"/work/build"}}), J({"filesystem":{"workdir":"work/build"}}), "$.filesystem.workdir"),
    NEG("workdir escapes with ..", J({"filesystem":{"workdir":"/work/build"}}), J({"filesystem":{"workdir":"/work/../etc"}}), "$.filesystem.workdir"),
    NEG("workdir under a missing bind target",
        J({"filesystem":{"binds":[{"host":"/srv/proj","target":"/opt/proj"}],"workdir":"/opt/proj/sub"}}),
        J({"filesystem":{"binds":[{"host":"/srv/proj","target":"/opt/other"}],"workdir":"/opt/proj/sub"}}),
        "$.filesystem.workdir"),
    NEG("workdir under a missing toolchain",
        J({"filesystem":{"toolchains":{"gcc":"/opt/gcc"},"workdir":"/toolchains/gcc/bin"}}),
        J({"filesystem":{"toolchains":{"clang":"/opt/gcc"},"workdir":"/toolchains/gcc/bin"}}),
        "$.filesystem.workdir"),
    /* duplicate mount targets */
    NEG("bind onto /work/source while source is set",
        J({"filesystem":{"source":{"path":"/srv/src","writable":false},"binds":[{"host":"/srv/other","target":"/work/src2"}]}}),
        J({"filesystem":{"source":{"path":"/srv/src","writable":false},"binds":[{"host":"/srv/other","target":"/work/source"}]}}),
        "$.filesystem.binds[0].target"),
    NEGS("bind onto /work/source while the host set source", setup_source,
         J({"filesystem":{"binds":[{"host":"/srv/other","target":"/work/source2"}]}}),
         J({"filesystem":{"binds":[{"host":"/srv/other","target":"/work/source"}]}}),
         "$.filesystem.binds[0].target"),
    NEG("bind onto /work/build while build is set",
        J({"filesystem":{"build":"/srv/build","binds":[{"host":"/srv/other","target":"/work/build2"}]}}),
        J({"filesystem":{"build":"/srv/build","binds":[{"host":"/srv/other","target":"/work/build"}]}}),
        "$.filesystem.binds[0].target"),
    NEG("bind onto /work/output while output is set",
        J({"filesystem":{"output":"/srv/out","binds":[{"host":"/srv/other","target":"/work/output2"}]}}),
        J({"filesystem":{"output":"/srv/out","binds":[{"host":"/srv/other","target":"/work/output"}]}}),
        "$.filesystem.binds[0].target"),
    NEG("two binds with one target",
        J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/x"},{"host":"/srv/b","target":"/opt/y"}]}}),
        J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/x"},{"host":"/srv/b","target":"/opt/x"}]}}),
        "$.filesystem.binds[1].target"),
    NEG("bind onto a toolchain",
        J({"filesystem":{"toolchains":{"gcc":"/opt/gcc"},"binds":[{"host":"/srv/a","target":"/opt/clang"}]}}),
        J({"filesystem":{"toolchains":{"gcc":"/opt/gcc"},"binds":[{"host":"/srv/a","target":"/toolchains/gcc"}]}}),
        "$.filesystem.binds[0].target|$.filesystem.toolchains.gcc"),
    NEG("bind onto a runtime path",
        J({"filesystem":{"runtime_paths":["/usr"],"binds":[{"host":"/srv/a","target":"/usr2"}]}}),
        J({"filesystem":{"runtime_paths":["/usr"],"binds":[{"host":"/srv/a","target":"/usr"}]}}),
        "$.filesystem.binds[0].target|$.filesystem.runtime_paths[0]"),
    NEG("duplicate runtime path",
        J({"filesystem":{"runtime_paths":["/usr","/bin"]}}),
        J({"filesystem":{"runtime_paths":["/usr","/usr"]}}),
        "$.filesystem.runtime_paths[1]"),
    NEG("runtime path onto /work/source while source is set",
        J({"filesystem":{"source":{"path":"/srv/src"},"runtime_paths":["/work/src"]}}),
        J({"filesystem":{"source":{"path":"/srv/src"},"runtime_paths":["/work/source"]}}),
        "$.filesystem.runtime_paths[0]"),

    /* locations index the document's arrays, not a sorted copy */
    NEG("duplicate runtime path, unsorted",
        J({"filesystem":{"runtime_paths":["/usr","/bin","/lib"]}}),
        J({"filesystem":{"runtime_paths":["/usr","/bin","/usr"]}}),
        "$.filesystem.runtime_paths[2]"),
    NEG("bad runtime path, unsorted",
        J({"filesystem":{"runtime_paths":["/usr","/lib","/bin"]}}),
        J({"filesystem":{"runtime_paths":["/usr","/lib","/bin/"]}}),
        "$.filesystem.runtime_paths[2]"),
    NEG("duplicate bind target, third",
        J({"filesystem":{"binds":[{"host":"/srv/x","target":"/opt/z"},{"host":"/srv/y","target":"/opt/a"},{"host":"/srv/z","target":"/opt/y"}]}}),
        J({"filesystem":{"binds":[{"host":"/srv/x","target":"/opt/z"},{"host":"/srv/y","target":"/opt/a"},{"host":"/srv/z","target":"/opt/z"}]}}),
        "$.filesystem.binds[2].target"),
    NEG("duplicate device, unsorted",
        J({"devices":{"allowed":[{"path":"/dev/kvm"},{"path":"/dev/fuse"},{"path":"/dev/net/tun"}]}}),
        J({"devices":{"allowed":[{"path":"/dev/kvm"},{"path":"/dev/fuse"},{"path":"/dev/kvm"}]}}),
        "$.devices.allowed[2].path|$.devices.allowed[2]"),
    NEG("duplicate secret name, unsorted",
        J({"secrets":[{"name":"b","delivery":"file","target":"b","file":"/etc/fy/b"},{"name":"a","delivery":"file","target":"a","file":"/etc/fy/a"},{"name":"c","delivery":"file","target":"c","file":"/etc/fy/c"}]}),
        J({"secrets":[{"name":"b","delivery":"file","target":"b","file":"/etc/fy/b"},{"name":"a","delivery":"file","target":"a","file":"/etc/fy/a"},{"name":"b","delivery":"file","target":"c","file":"/etc/fy/c"}]}),
        "$.secrets[2].name"),
    NEG("second stdin secret, third",
        J({"secrets":[{"name":"f","delivery":"file","target":"f","file":"/etc/fy/f"},{"name":"s1","delivery":"stdin","target":null,"file":"/etc/fy/1"},{"name":"e","delivery":"env","target":"E","file":"/etc/fy/2"}]}),
        J({"secrets":[{"name":"f","delivery":"file","target":"f","file":"/etc/fy/f"},{"name":"s1","delivery":"stdin","target":null,"file":"/etc/fy/1"},{"name":"s2","delivery":"stdin","target":null,"file":"/etc/fy/2"}]}),
        "$.secrets[2].delivery|$.secrets[2]"),
    NEG("toolchain path bad, unsorted names",
        J({"filesystem":{"toolchains":{"zig":"/opt/zig","gcc":"/opt/gcc"}}}),
        J({"filesystem":{"toolchains":{"zig":"/opt/zig","gcc":"/opt/gcc/"}}}),
        "$.filesystem.toolchains.gcc"),
    NEG("env allow duplicate of set, unsorted",
        J({"environment":{"set":{"AA":"1"},"allow":["TZ","BB"]}}),
        J({"environment":{"set":{"AA":"1"},"allow":["TZ","AA"]}}),
        "$.environment.allow[1]|$.environment.set.AA"),

    /* ---- environment ---- */
    NEG("env name starting with a digit", J({"environment":{"set":{"A1":"x"}}}), J({"environment":{"set":{"1A":"x"}}}), "$.environment.set.1A|$.environment.set[\"1A\"]|$.environment.set"),
    NEG("env name with a space", J({"environment":{"set":{"A-B%":"x"}}}), J({"environment":{"set":{"A B":"x"}}}), "$.environment.set.A B|$.environment.set[\"A B\"]|$.environment.set"),
    NEG("env name with =", J({"environment":{"set":{"AB":"x"}}}), J({"environment":{"set":{"A=B":"x"}}}), "$.environment.set.A=B|$.environment.set[\"A=B\"]|$.environment.set"),
    NEG("env name empty", J({"environment":{"set":{"_":"x"}}}), J({"environment":{"set":{"":"x"}}}), "$.environment.set.|$.environment.set[\"\"]|$.environment.set"),
    NEG("env name non-ASCII", J({"environment":{"set":{"E":"x"}}}), J({"environment":{"set":{"\u00c9":"x"}}}), "$.environment.set*"),
    NEG("env allow name invalid", J({"environment":{"allow":["TERM","TZ"]}}), J({"environment":{"allow":["TERM","T=Z"]}}), "$.environment.allow[1]"),
    NEG("env allow name empty", J({"environment":{"allow":["TERM"]}}), J({"environment":{"allow":[""]}}), "$.environment.allow[0]"),
    NEG("env defaults not a boolean", J({"environment":{"defaults":false}}), J({"environment":{"defaults":"no"}}), "$.environment.defaults"),
    NEG("env set and allowed",
        J({"environment":{"set":{"TERM":"dumb"},"allow":["TZ"]}}),
        J({"environment":{"set":{"TERM":"dumb"},"allow":["TZ","TERM"]}}),
        "$.environment.allow[1]|$.environment.set.TERM"),
    NEGS("env allowed while the host set it", setup_env_term,
         J({"environment":{"allow":["TZ"]}}),
         J({"environment":{"allow":["TERM"]}}),
         "$.environment.allow[0]"),
    NEGS("env set while the host allowed it", setup_env_allow_term,
         J({"environment":{"set":{"LANG":"C"}}}),
         J({"environment":{"set":{"TERM":"dumb"}}}),
         "$.environment.set.TERM"),

    /* ---- network ---- */
    NEG("deny with destinations",
        J({"network":{"mode":"deny","dns":"none","destinations":[]}}),
        J({"network":{"mode":"deny","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]}]}}),
        "$.network.destinations|$.network.mode|$.network.destinations[0]"),
    NEG("allow with destinations",
        J({"isolation":{"controls":{"netns":"prefer"}},"network":{"mode":"allow","dns":"host","destinations":[]}}),
        J({"isolation":{"controls":{"netns":"prefer"}},"network":{"mode":"allow","dns":"host","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]}]}}),
        "$.network.destinations|$.network.mode|$.network.destinations[0]"),
    NEG("restricted without destinations",
        NET_RESTRICTED,
        J({"network":{"mode":"restricted","dns":"none","destinations":[]}}),
        "$.network.mode|$.network.destinations"),
    NEG("fetch-only without destinations",
        J({"network":{"mode":"fetch-only","dns":"none","destinations":[{"host":"deb.debian.org","proto":"tcp","ports":[80,80]}]}}),
        J({"network":{"mode":"fetch-only","dns":"none","destinations":[]}}),
        "$.network.mode|$.network.destinations"),
    NEGS("restricted over an empty destination list", setup_net_deny,
         NET_RESTRICTED,
         J({"network":{"mode":"restricted"}}),
         "$.network.mode|$.network.destinations|$.network"),
    NEG("dns host with deny",
        J({"network":{"mode":"deny","dns":"none","destinations":[]}}),
        J({"network":{"mode":"deny","dns":"host","destinations":[]}}),
        "$.network.dns|$.network.mode"),
    NEGS("dns host while the host denied network", setup_net_deny,
         J({"network":{"dns":"none"}}),
         J({"network":{"dns":"host"}}),
         "$.network.dns"),
    NEG("destination prefix /0 (IPv4)",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]},{"host":"0.0.0.0/1","proto":"tcp","ports":[443,443]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]},{"host":"0.0.0.0/0","proto":"tcp","ports":[443,443]}]}}),
        "$.network.destinations[1].host"),
    NEG("destination prefix /0 (IPv6)",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"::/1","proto":"udp","ports":[53,53]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"::/0","proto":"udp","ports":[53,53]}]}}),
        "$.network.destinations[0].host"),
    NEG("port 0",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[1,80]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[0,80]}]}}),
        "$.network.destinations[0].ports[0]|$.network.destinations[0].ports"),
    NEG("port 65536",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[1,65535]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[1,65536]}]}}),
        "$.network.destinations[0].ports[1]|$.network.destinations[0].ports"),
    NEG("port 65536 as min",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[65535,65535]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[65536,65536]}]}}),
        "$.network.destinations[0].ports[0]|$.network.destinations[0].ports"),
    NEG("port -1",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[1,1]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[-1,1]}]}}),
        "$.network.destinations[0].ports[0]|$.network.destinations[0].ports"),
    NEG("port 2^32+80 (truncation)",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[80,80]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[4294967376,4294967376]}]}}),
        "$.network.destinations[0].ports[0]|$.network.destinations[0].ports"),
    NEG("ports min > max",
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[443,443]}]}}),
        J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"10.0.0.1","proto":"tcp","ports":[444,443]}]}}),
        "$.network.destinations[0].ports|$.network.destinations[0].ports[0]|$.network.destinations[0].ports[1]"),

    /* ---- resources: range boundaries (accept the bound, reject one past) ---- */
    NEGR("memory below 1 MiB", J({"resources":{"memory":1048576}}), J({"resources":{"memory":1048575}}), "$.resources.memory"),
    NEGR("memory 0", J({"resources":{"memory":"1MiB"}}), J({"resources":{"memory":0}}), "$.resources.memory"),
    NEGR("memory 1023KiB", J({"resources":{"memory":"1024KiB"}}), J({"resources":{"memory":"1023KiB"}}), "$.resources.memory"),
    NEGR("memory 1MB is below 1 MiB", J({"resources":{"memory":"1M"}}), J({"resources":{"memory":"1MB"}}), "$.resources.memory"),
    NEGR("pids 0", J({"resources":{"pids":1}}), J({"resources":{"pids":0}}), "$.resources.pids"),
    NEGR("pids above 4194304", J({"resources":{"pids":4194304}}), J({"resources":{"pids":4194305}}), "$.resources.pids"),
    NEGR("pids -1", J({"resources":{"pids":1}}), J({"resources":{"pids":-1}}), "$.resources.pids"),
    NEGR("cpu_millis 0", J({"resources":{"cpu_millis":1}}), J({"resources":{"cpu_millis":0}}), "$.resources.cpu_millis"),
    NEGR("cpu_millis above 1024000", J({"resources":{"cpu_millis":1024000}}), J({"resources":{"cpu_millis":1024001}}), "$.resources.cpu_millis"),
    NEGR("nofile 2", J({"resources":{"nofile":3}}), J({"resources":{"nofile":2}}), "$.resources.nofile"),
    NEGR("nofile above 1048576", J({"resources":{"nofile":1048576}}), J({"resources":{"nofile":1048577}}), "$.resources.nofile"),
    NEGR("nofile 2^32+3 (truncation)", J({"resources":{"nofile":1024}}), J({"resources":{"nofile":4294967299}}), "$.resources.nofile"),
    NEG("nofile unlimited (int only)", J({"resources":{"nofile":1024}}), J({"resources":{"nofile":"unlimited"}}), "$.resources.nofile"),
    NEGR("tmp_size below 64 KiB", J({"resources":{"tmp_size":65536}}), J({"resources":{"tmp_size":65535}}), "$.resources.tmp_size"),
    NEGR("tmp_size 0 (tmpfs size=0 is unlimited)", J({"resources":{"tmp_size":"64KiB"}}), J({"resources":{"tmp_size":0}}), "$.resources.tmp_size"),
    NEGR("tmp_size 63K", J({"resources":{"tmp_size":"64K"}}), J({"resources":{"tmp_size":"63K"}}), "$.resources.tmp_size"),
    NEGR("work_tmp_size below 64 KiB", J({"resources":{"work_tmp_size":65536}}), J({"resources":{"work_tmp_size":65535}}), "$.resources.work_tmp_size"),
    NEGR("home_size below 64 KiB", J({"resources":{"home_size":65536}}), J({"resources":{"home_size":65535}}), "$.resources.home_size"),
    NEGR("shm_size below 64 KiB", J({"resources":{"shm_size":65536}}), J({"resources":{"shm_size":65535}}), "$.resources.shm_size"),
    NEGR("wall_time below 1 ms", J({"resources":{"wall_time":1000}}), J({"resources":{"wall_time":999}}), "$.resources.wall_time"),
    NEGR("wall_time 999us", J({"resources":{"wall_time":"1ms"}}), J({"resources":{"wall_time":"999us"}}), "$.resources.wall_time"),
    NEGR("wall_time 0", J({"resources":{"wall_time":"1000us"}}), J({"resources":{"wall_time":0}}), "$.resources.wall_time"),
    NEGR("wall_time above 30 days", J({"resources":{"wall_time":2592000000000}}), J({"resources":{"wall_time":2592000000001}}), "$.resources.wall_time"),
    NEGR("wall_time 31d", J({"resources":{"wall_time":"30d"}}), J({"resources":{"wall_time":"31d"}}), "$.resources.wall_time"),
    NEGR("wall_time 721h", J({"resources":{"wall_time":"720h"}}), J({"resources":{"wall_time":"721h"}}), "$.resources.wall_time"),
    NEGR("grace above 1 h", J({"resources":{"grace":3600000000}}), J({"resources":{"grace":3600000001}}), "$.resources.grace"),
    NEGR("grace 61m", J({"resources":{"grace":"60m"}}), J({"resources":{"grace":"61m"}}), "$.resources.grace"),
    NEGR("grace unlimited (> 1 h)", J({"resources":{"grace":"1h"}}), J({"resources":{"grace":"unlimited"}}), "$.resources.grace"),
    /* size syntax, on a limit without a range */
    NEG("size 12XB", J({"resources":{"disk":"12KB"}}), J({"resources":{"disk":"12XB"}}), "$.resources.disk"),
    NEG("size \"-1\"", J({"resources":{"disk":"1B"}}), J({"resources":{"disk":"-1"}}), "$.resources.disk"),
    NEG("size -1", J({"resources":{"disk":1}}), J({"resources":{"disk":-1}}), "$.resources.disk"),
    NEG("size 1.3B (not a whole byte)", J({"resources":{"disk":"1.5G"}}), J({"resources":{"disk":"1.3B"}}), "$.resources.disk"),
    NEG("size 0.1K (not a whole byte)", J({"resources":{"disk":"0.5K"}}), J({"resources":{"disk":"0.1K"}}), "$.resources.disk"),
    NEG("size 1. (no digit after the point)", J({"resources":{"disk":"1.0G"}}), J({"resources":{"disk":"1.G"}}), "$.resources.disk"),
    NEG("size .5G (no digit before the point)", J({"resources":{"disk":"0.5G"}}), J({"resources":{"disk":".5G"}}), "$.resources.disk"),
    NEG("size 1.5.5G", J({"resources":{"disk":"1.5G"}}), J({"resources":{"disk":"1.5.5G"}}), "$.resources.disk"),
    NEG("size 1,5G", J({"resources":{"disk":"1.5G"}}), J({"resources":{"disk":"1,5G"}}), "$.resources.disk"),
    NEGR("size fraction beyond 2^64", J({"resources":{"disk":"1024.5TiB"}}), J({"resources":{"disk":"16777215.5TiB"}}), "$.resources.disk"),
    NEG("size 1.5 (real)", J({"resources":{"disk":1}}), J({"resources":{"disk":1.5}}), "$.resources.disk"),
    NEG("size empty string", J({"resources":{"disk":"1B"}}), J({"resources":{"disk":""}}), "$.resources.disk"),
    NEG("size unit only", J({"resources":{"disk":"1G"}}), J({"resources":{"disk":"G"}}), "$.resources.disk"),
    NEG("size double unit", J({"resources":{"disk":"1G"}}), J({"resources":{"disk":"1GG"}}), "$.resources.disk"),
    NEG("size hex", J({"resources":{"disk":"16B"}}), J({"resources":{"disk":"0x10"}}), "$.resources.disk"),
    NEG("size unlimited with suffix", J({"resources":{"disk":"unlimited"}}), J({"resources":{"disk":"unlimitedx"}}), "$.resources.disk"),
    NEG("size as bool", J({"resources":{"disk":1}}), J({"resources":{"disk":true}}), "$.resources.disk"),
    NEG("size null", J({"resources":{"disk":1}}), J({"resources":{"disk":null}}), "$.resources.disk"),
    NEG("size as array", J({"resources":{"disk":1}}), J({"resources":{"disk":[1,"G"]}}), "$.resources.disk"),
    NEGR("size huge overflow", J({"resources":{"disk":"1T"}}), J({"resources":{"disk":"99999999999999999999T"}}), "$.resources.disk"),
    NEGR("size 2^64 via unit (16777216T)", J({"resources":{"disk":"1024TiB"}}), J({"resources":{"disk":"16777216TiB"}}), "$.resources.disk"),
    NEGR("size 2^64 in digits", J({"resources":{"disk":"1000000000000000000B"}}), J({"resources":{"disk":"18446744073709551616B"}}), "$.resources.disk"),
    NEGR("size overflow in KB multiply", J({"resources":{"disk":"1000000000000000KB"}}), J({"resources":{"disk":"18446744073709552KB"}}), "$.resources.disk"),
    /* duration syntax */
    NEG("duration 10x", J({"resources":{"wall_time":"10s"}}), J({"resources":{"wall_time":"10x"}}), "$.resources.wall_time"),
    NEG("duration 1.5us (not a whole microsecond)", J({"resources":{"wall_time":"1.5s"}}), J({"resources":{"wall_time":"1.5us"}}), "$.resources.wall_time"),
    NEG("duration 10 digits after the point", J({"resources":{"wall_time":"1.000001000s"}}), J({"resources":{"wall_time":"1.0000010000s"}}), "$.resources.wall_time"),
    NEG("duration 1.s", J({"resources":{"wall_time":"1.0s"}}), J({"resources":{"wall_time":"1.s"}}), "$.resources.wall_time"),
    NEG("duration 1.5e3ms", J({"resources":{"wall_time":"1.5ms"}}), J({"resources":{"wall_time":"1.5e3ms"}}), "$.resources.wall_time"),
    NEG("duration -5s", J({"resources":{"wall_time":"5s"}}), J({"resources":{"wall_time":"-5s"}}), "$.resources.wall_time"),
    NEG("duration empty", J({"resources":{"wall_time":"5s"}}), J({"resources":{"wall_time":""}}), "$.resources.wall_time"),
    NEG("duration unit only", J({"resources":{"wall_time":"1s"}}), J({"resources":{"wall_time":"s"}}), "$.resources.wall_time"),
    NEG("duration weeks", J({"resources":{"wall_time":"7d"}}), J({"resources":{"wall_time":"1w"}}), "$.resources.wall_time"),
    NEG("duration size unit", J({"resources":{"wall_time":"1m"}}), J({"resources":{"wall_time":"1M"}}), "$.resources.wall_time"),
    NEG("duration as bool", J({"resources":{"grace":"1s"}}), J({"resources":{"grace":true}}), "$.resources.grace"),
    NEG("duration real", J({"resources":{"grace":1000000}}), J({"resources":{"grace":1000000.5}}), "$.resources.grace"),
    NEGR("duration overflow", J({"resources":{"wall_time":"1d"}}), J({"resources":{"wall_time":"99999999999999999999d"}}), "$.resources.wall_time"),
    NEGR("duration wraps to a small value", J({"resources":{"grace":"1s"}}), J({"resources":{"grace":"18446744073709552s"}}), "$.resources.grace"),
    /* limit types */
    NEG("pids as string number", J({"resources":{"pids":10}}), J({"resources":{"pids":"10"}}), "$.resources.pids"),
    NEG("cpu_millis as size", J({"resources":{"cpu_millis":1000}}), J({"resources":{"cpu_millis":"1K"}}), "$.resources.cpu_millis"),
    NEG("files as bool", J({"resources":{"files":10}}), J({"resources":{"files":false}}), "$.resources.files"),
    NEG("memory_swap as bool", J({"resources":{"memory_swap":0}}), J({"resources":{"memory_swap":true}}), "$.resources.memory_swap"),
    NEG("fsize as object", J({"resources":{"fsize":"1G"}}), J({"resources":{"fsize":{}}}), "$.resources.fsize"),
    NEG("stack as bool", J({"resources":{"stack":"8M"}}), J({"resources":{"stack":true}}), "$.resources.stack"),
    NEG("core bad unit", J({"resources":{"core":0}}), J({"resources":{"core":"1Q"}}), "$.resources.core"),
    NEG("output bad unit", J({"resources":{"output":"10M"}}), J({"resources":{"output":"10MM"}}), "$.resources.output"),
    NEG("io_bps bad", J({"resources":{"io_bps":"100M"}}), J({"resources":{"io_bps":"fast"}}), "$.resources.io_bps"),

    /* ---- process ---- */
    NEGR("id_range.first 0", J({"process":{"id_range":{"first":1,"count":1}}}), J({"process":{"id_range":{"first":0,"count":1}}}), "$.process.id_range.first"),
    NEGR("id_range.count 0", J({"process":{"id_range":{"first":1,"count":1}}}), J({"process":{"id_range":{"first":1,"count":0}}}), "$.process.id_range.count"),
    NEGR("id_range.first -1", J({"process":{"id_range":{"first":1,"count":1}}}), J({"process":{"id_range":{"first":-1,"count":1}}}), "$.process.id_range.first"),
    NEGR("id_range.first above 32 bits", J({"process":{"id_range":{"first":100000,"count":1}}}), J({"process":{"id_range":{"first":4295067296,"count":1}}}), "$.process.id_range.first"),
    NEGR("id_range wraps past 2^32", J({"process":{"id_range":{"first":4294900000,"count":65536}}}), J({"process":{"id_range":{"first":4294967295,"count":2}}}), "$.process.id_range|$.process.id_range.count|$.process.id_range.first"),

    /* ---- devices ---- */
    NEG("device outside /dev", J({"devices":{"allowed":[{"path":"/dev/fuse"}]}}), J({"devices":{"allowed":[{"path":"/tmp/fuse"}]}}), "$.devices.allowed[0].path"),
    NEG("device /dev itself", J({"devices":{"allowed":[{"path":"/dev/kvm"}]}}), J({"devices":{"allowed":[{"path":"/dev"}]}}), "$.devices.allowed[0].path"),
    NEG("device /devx", J({"devices":{"allowed":[{"path":"/dev/x"}]}}), J({"devices":{"allowed":[{"path":"/devx"}]}}), "$.devices.allowed[0].path"),
    NEG("device escapes /dev", J({"devices":{"allowed":[{"path":"/dev/shm"}]}}), J({"devices":{"allowed":[{"path":"/dev/../etc/shadow"}]}}), "$.devices.allowed[0].path"),
    NEG("duplicate device",
        J({"devices":{"allowed":[{"path":"/dev/fuse"},{"path":"/dev/kvm"}]}}),
        J({"devices":{"allowed":[{"path":"/dev/fuse"},{"path":"/dev/fuse","writable":true}]}}),
        "$.devices.allowed[1].path|$.devices.allowed[1]"),
    NEG("gpu leased without a device",
        J({"devices":{"gpu":"leased","allowed":[{"path":"/dev/dri/renderD128","writable":true}]}}),
        J({"devices":{"gpu":"leased","allowed":[]}}),
        "$.devices.gpu"),
    NEG("usb leased without a device",
        J({"devices":{"usb":"leased","allowed":[{"path":"/dev/bus/usb/001/002"}]}}),
        J({"devices":{"usb":"leased","allowed":[]}}),
        "$.devices.usb"),

    /* ---- secrets ---- */
    NEG("secret name with space", J({"secrets":[{"name":"my-tok.1x","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"my tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].name"),
    /* ([A-Za-z0-9._-] includes '_' but not '+'.) */
    NEG("secret name with a plus", J({"secrets":[{"name":"my_tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"my+tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].name"),
    NEG("secret name empty", J({"secrets":[{"name":"t","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].name"),
    NEG("secret name with slash", J({"secrets":[{"name":"ab","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), J({"secrets":[{"name":"a/b","delivery":"env","target":"TOK","file":"/etc/fy/tok"}]}), "$.secrets[0].name"),
    NEG("duplicate secret names",
        J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"},{"name":"tok2","delivery":"env","target":"TOK2","file":"/etc/fy/tok"}]}),
        J({"secrets":[{"name":"tok","delivery":"env","target":"TOK","file":"/etc/fy/tok"},{"name":"tok","delivery":"env","target":"TOK2","file":"/etc/fy/tok"}]}),
        "$.secrets[1].name"),
    NEG("duplicate env secret targets",
        J({"secrets":[{"name":"a","delivery":"env","target":"TOK","file":"/etc/fy/a"},{"name":"b","delivery":"env","target":"TOK2","file":"/etc/fy/b"}]}),
        J({"secrets":[{"name":"a","delivery":"env","target":"TOK","file":"/etc/fy/a"},{"name":"b","delivery":"env","target":"TOK","file":"/etc/fy/b"}]}),
        "$.secrets[1].target"),
    NEG("duplicate file secret targets",
        J({"secrets":[{"name":"a","delivery":"file","target":"key","file":"/etc/fy/a"},{"name":"b","delivery":"file","target":"key2","file":"/etc/fy/b"}]}),
        J({"secrets":[{"name":"a","delivery":"file","target":"key","file":"/etc/fy/a"},{"name":"b","delivery":"file","target":"key","file":"/etc/fy/b"}]}),
        "$.secrets[1].target"),
    NEG("two stdin secrets",
        J({"secrets":[{"name":"a","delivery":"stdin","target":null,"file":"/etc/fy/a"},{"name":"b","delivery":"file","target":"b","file":"/etc/fy/b"}]}),
        J({"secrets":[{"name":"a","delivery":"stdin","target":null,"file":"/etc/fy/a"},{"name":"b","delivery":"stdin","target":null,"file":"/etc/fy/b"}]}),
        "$.secrets[1].delivery|$.secrets[1]"),
    NEG("stdin secret with a target",
        J({"secrets":[{"name":"a","delivery":"stdin","target":null,"file":"/etc/fy/a"}]}),
        J({"secrets":[{"name":"a","delivery":"stdin","target":"A","file":"/etc/fy/a"}]}),
        "$.secrets[0].target"),
    NEG("env secret target collides with environment.set",
        J({"environment":{"set":{"API_TOKEN2":"x"}},"secrets":[{"name":"a","delivery":"env","target":"API_TOKEN","file":"/etc/fy/a"}]}),
        J({"environment":{"set":{"API_TOKEN":"x"}},"secrets":[{"name":"a","delivery":"env","target":"API_TOKEN","file":"/etc/fy/a"}]}),
        "$.secrets[0].target|$.environment.set.API_TOKEN"),
    NEG("env secret target collides with environment.allow",
        J({"environment":{"allow":["API_TOKEN2"]},"secrets":[{"name":"a","delivery":"env","target":"API_TOKEN","file":"/etc/fy/a"}]}),
        J({"environment":{"allow":["API_TOKEN"]},"secrets":[{"name":"a","delivery":"env","target":"API_TOKEN","file":"/etc/fy/a"}]}),
        "$.secrets[0].target|$.environment.allow[0]"),
    NEGS("env secret target collides with a host-set variable", setup_env_term,
         J({"secrets":[{"name":"a","delivery":"env","target":"TERM2","file":"/etc/fy/a"}]}),
         J({"secrets":[{"name":"a","delivery":"env","target":"TERM","file":"/etc/fy/a"}]}),
         "$.secrets[0].target"),
    NEG("env secret target not an env name", J({"secrets":[{"name":"a","delivery":"env","target":"A1","file":"/etc/fy/a"}]}), J({"secrets":[{"name":"a","delivery":"env","target":"1A","file":"/etc/fy/a"}]}), "$.secrets[0].target"),
    NEG("file secret target with slash", J({"secrets":[{"name":"a","delivery":"file","target":"key.pem","file":"/etc/fy/a"}]}), J({"secrets":[{"name":"a","delivery":"file","target":"../key.pem","file":"/etc/fy/a"}]}), "$.secrets[0].target"),
    NEG("file secret target ..", J({"secrets":[{"name":"a","delivery":"file","target":"..a","file":"/etc/fy/a"}]}), J({"secrets":[{"name":"a","delivery":"file","target":"..","file":"/etc/fy/a"}]}), "$.secrets[0].target"),
    NEG("file secret target .", J({"secrets":[{"name":"a","delivery":"file","target":".a","file":"/etc/fy/a"}]}), J({"secrets":[{"name":"a","delivery":"file","target":".","file":"/etc/fy/a"}]}), "$.secrets[0].target"),
    NEG("file secret target empty", J({"secrets":[{"name":"a","delivery":"file","target":"a","file":"/etc/fy/a"}]}), J({"secrets":[{"name":"a","delivery":"file","target":"","file":"/etc/fy/a"}]}), "$.secrets[0].target"),
    NEG("file secret target absolute", J({"secrets":[{"name":"a","delivery":"file","target":"a","file":"/etc/fy/a"}]}), J({"secrets":[{"name":"a","delivery":"file","target":"/etc/passwd","file":"/etc/fy/a"}]}), "$.secrets[0].target"),
    /* A job member's name that inet_aton(3) reads as an IPv4 address: glibc
     * answers it as that address before it reads /etc/hosts, so in every
     * peer the member would be 127.0.0.1 (0x7f000001, 2130706433, 017...),
     * 0.0.0.0 ("0") or another address, never the member. */
    NEG("job member 0x7f000001", J({"network":{"job":{"member":"x7f000001"}}}), J({"network":{"job":{"member":"0x7f000001"}}}), "$.network.job.member"),
    NEG("job member 2130706433", J({"network":{"job":{"member":"a2130706433"}}}), J({"network":{"job":{"member":"2130706433"}}}), "$.network.job.member"),
    NEG("job member 0", J({"network":{"job":{"member":"o"}}}), J({"network":{"job":{"member":"0"}}}), "$.network.job.member"),
    NEG("job member 1234", J({"network":{"job":{"member":"1234-db"}}}), J({"network":{"job":{"member":"1234"}}}), "$.network.job.member"),
    NEG("job member 017", J({"network":{"job":{"member":"017a"}}}), J({"network":{"job":{"member":"017"}}}), "$.network.job.member"),
    NEG("job member 0x", J({"network":{"job":{"member":"0xg"}}}), J({"network":{"job":{"member":"0x"}}}), "$.network.job.member"),
};
#define N_NEGS (sizeof(NEGS_TABLE) / sizeof(NEGS_TABLE[0]))

START_TEST(test_reject_table)
{
    for (size_t i = 0; i < N_NEGS; i++) {
        const struct neg *c = &NEGS_TABLE[i];
        reject_case(c->name, c->profile, c->setup, c->ok, c->bad, c->locs, c->codes);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* path rules, applied to every path-valued field                       */

#define PF_HOST   1u /* a host path: "/" and /proc, /sys, /dev rejected */
#define PF_TARGET 2u /* a sandbox target: "/" and /proc, /dev, /sys, /run/secrets rejected */

struct pfield {
    const char *name;
    const char *tmpl; /* printf template with one %s */
    const char *base; /* a valid directory for this field */
    const char *loc;
    unsigned kinds;
};

static const struct pfield PFIELDS[] = {
    { "source.path", J({"filesystem":{"source":{"path":"%s","writable":false}}}), "/srv/src", "$.filesystem.source.path", PF_HOST },
    { "build", J({"filesystem":{"build":"%s"}}), "/srv/build", "$.filesystem.build", PF_HOST },
    { "output", J({"filesystem":{"output":"%s"}}), "/srv/out", "$.filesystem.output", PF_HOST },
    { "toolchain", J({"filesystem":{"toolchains":{"gcc":"%s"}}}), "/opt/gcc", "$.filesystem.toolchains.gcc", PF_HOST },
    { "bind host", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"},{"host":"%s","target":"/opt/b"}]}}), "/srv/b", "$.filesystem.binds[1].host", PF_HOST },
    { "bind target", J({"filesystem":{"binds":[{"host":"/srv/a","target":"/opt/a"},{"host":"/srv/b","target":"%s"}]}}), "/opt/b", "$.filesystem.binds[1].target", PF_TARGET },
    { "runtime path", J({"filesystem":{"runtime_paths":["/bin","%s"]}}), "/usr/lib", "$.filesystem.runtime_paths[1]", PF_HOST | PF_TARGET },
    { "workdir", J({"filesystem":{"workdir":"%s"}}), "/work/build", "$.filesystem.workdir", 0 },
    { "device", J({"devices":{"allowed":[{"path":"%s","writable":false}]}}), "/dev/snd", "$.devices.allowed[0].path", 0 },
    { "secret file", J({"secrets":[{"name":"tok","delivery":"file","target":"tok","file":"%s"}]}), "/etc/fy", "$.secrets[0].file", PF_HOST },
};
#define N_PFIELDS (sizeof(PFIELDS) / sizeof(PFIELDS[0]))

/* Bad path shapes, made from a field's valid base directory. The strings
 * are JSON-escaped. */
enum {
    SH_RELATIVE, SH_EMPTY, SH_DOT, SH_DOTDOT, SH_END_DOTDOT, SH_END_DOT, SH_LEAD_DOTDOT, SH_ONLY_DOT,
    SH_DSLASH, SH_LEAD_DSLASH, SH_TRAILING, SH_CTRL_01, SH_CTRL_NL, SH_CTRL_TAB, SH_CTRL_1F, SH_CTRL_DEL,
    SH_NUL, SH_TOO_LONG, SH_COMPONENT_TOO_LONG, SH_MAX_
};
static const char *const SHAPE_NAMES[SH_MAX_] = {
    "relative", "empty", "./ component", "../ component", "trailing ..", "trailing .", "leading ..", "just .",
    "empty component //", "leading //", "trailing /", "control char 0x01", "newline", "tab", "control char 0x1f",
    "DEL", "\\u0000", "4096 bytes", "256-byte component",
};

/* An absolute path of exactly len bytes under base. */
static char *path_of_len(const char *base, size_t len, size_t comp)
{
    size_t bl = strlen(base);
    ck_assert(len > bl + 2);
    char *s = malloc(len + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, base, bl);
    size_t at = bl;
    while (at < len) {
        size_t left = len - at;
        size_t c = left - 1;
        if (c > comp)
            c = comp;
        if (left - 1 - c == 1)
            c--;
        s[at++] = '/';
        memset(s + at, 'p', c);
        at += c;
    }
    s[len] = '\0';
    ck_assert_uint_eq(strlen(s), len);
    return s;
}

static char *shape_path(int shape, const char *base)
{
    switch (shape) {
    case SH_RELATIVE: return strdup(base + 1);
    case SH_EMPTY: return strdup("");
    case SH_DOT: return xfmt("%s/./x", base);
    case SH_DOTDOT: return xfmt("%s/../x", base);
    case SH_END_DOTDOT: return xfmt("%s/..", base);
    case SH_END_DOT: return xfmt("%s/.", base);
    case SH_LEAD_DOTDOT: return xfmt("/..%s", base);
    case SH_ONLY_DOT: return strdup(".");
    case SH_DSLASH: return xfmt("%s//x", base);
    case SH_LEAD_DSLASH: return xfmt("/%s", base);
    case SH_TRAILING: return xfmt("%s/", base);
    case SH_CTRL_01: return xfmt("%s/a\\u0001b", base);
    case SH_CTRL_NL: return xfmt("%s/a\\nb", base);
    case SH_CTRL_TAB: return xfmt("%s/a\\tb", base);
    case SH_CTRL_1F: return xfmt("%s/a\\u001fb", base);
    case SH_CTRL_DEL: return xfmt("%s/a\\u007fb", base);
    case SH_NUL: return xfmt("%s/a\\u0000b", base);
    case SH_TOO_LONG: return path_of_len(base, 4096, 200);
    case SH_COMPONENT_TOO_LONG: {
        char *c = repeat('c', 256);
        char *s = xfmt("%s/%s", base, c);
        free(c);
        return s;
    }
    }
    ck_abort();
    return NULL;
}

/* tmpl with its one "%s" replaced by value. */
static char *fill(const char *tmpl, const char *value)
{
    const char *at = strstr(tmpl, "%s");
    ck_assert_ptr_nonnull(at);
    return xfmt("%.*s%s%s", (int)(at - tmpl), tmpl, value, at + 2);
}

static void path_shape_case(const struct pfield *f, int shape)
{
    char *good = xfmt("%s/x", f->base);
    char *okdoc = fill(f->tmpl, good);
    char *path = shape_path(shape, f->base);
    char *baddoc = fill(f->tmpl, path);
    char *name = xfmt("%s: %s path", f->name, SHAPE_NAMES[shape]);
    char *locs = shape == SH_NUL ? xfmt("$|%s", f->loc) : strdup(f->loc);
    int codes = (shape == SH_TOO_LONG || shape == SH_COMPONENT_TOO_LONG) ? C_ANY : C_POLICY;
    reject_case(name, 0, NULL, okdoc, baddoc, locs, codes);
    free(locs);
    free(name);
    free(baddoc);
    free(path);
    free(okdoc);
    free(good);
}

/* Every bad shape in every path-valued field. */
START_TEST(test_path_shapes)
{
    for (size_t i = 0; i < N_PFIELDS; i++)
        for (int shape = 0; shape < SH_MAX_; shape++)
            path_shape_case(&PFIELDS[i], shape);
}
END_TEST

/* The longest path and the longest component are accepted. */
static void path_max_lengths_case(const struct pfield *f)
{
    char *p = path_of_len(f->base, 4095, 200);
    char *doc = fill(f->tmpl, p);
    char *name = xfmt("%s: 4095-byte path", f->name);
    expect_accept(name, 0, NULL, doc);
    free(name);
    free(doc);
    free(p);
    char *c = repeat('c', 255);
    p = xfmt("%s/%s", f->base, c);
    doc = fill(f->tmpl, p);
    name = xfmt("%s: 255-byte component", f->name);
    expect_accept(name, 0, NULL, doc);
    free(name);
    free(doc);
    free(p);
    free(c);
}

START_TEST(test_path_max_lengths)
{
    for (size_t i = 0; i < N_PFIELDS; i++)
        path_max_lengths_case(&PFIELDS[i]);
}
END_TEST

static const char *const HOST_SPECIAL[] = {
    "/", "/proc", "/proc/self/root", "/proc/1/root/etc", "/proc/self/cwd", "/sys", "/sys/fs/cgroup", "/dev", "/dev/sda",
};
static const char *const HOST_NEARMISS[] = { "/procfs/x", "/sysroot/x", "/devel/x", "/srv/proc", "/srv/dev" };
static const char *const TARGET_SPECIAL[] = {
    "/", "/proc", "/proc/x", "/proc/sys/kernel", "/dev", "/dev/x", "/dev/shm", "/sys", "/sys/x",
    "/run/secrets", "/run/secrets/x",
};
static const char *const TARGET_NEARMISS[] = { "/procfs", "/devel", "/sysroot", "/run/secretsx", "/run/other" };
#define NA(a) (sizeof(a) / sizeof((a)[0]))

static void special_case(unsigned kind, const struct pfield *f, const char *val)
{
    char *okv = xfmt("%s/x", f->base);
    char *ok = fill(f->tmpl, okv);
    char *bad = fill(f->tmpl, val);
    char *name = xfmt("%s: %s path %s", f->name, kind == PF_HOST ? "host" : "sandbox", val);
    reject_case(name, 0, NULL, ok, bad, f->loc, C_POLICY);
    free(name);
    free(bad);
    free(ok);
    free(okv);
}

static void nearmiss_case(const struct pfield *f, const char *val)
{
    char *doc = fill(f->tmpl, val);
    char *name = xfmt("%s: %s is not under a forbidden tree", f->name, val);
    expect_accept(name, 0, NULL, doc);
    free(name);
    free(doc);
}

/* Every value of vals in every field of `kind`. */
static void special_table(unsigned kind, const char *const *vals, size_t nvals)
{
    for (size_t a = 0; a < N_PFIELDS; a++)
        if (PFIELDS[a].kinds & kind)
            for (size_t b = 0; b < nvals; b++)
                special_case(kind, &PFIELDS[a], vals[b]);
}

static void nearmiss_table(unsigned kind, const char *const *vals, size_t nvals)
{
    for (size_t a = 0; a < N_PFIELDS; a++)
        if (PFIELDS[a].kinds & kind)
            for (size_t b = 0; b < nvals; b++)
                nearmiss_case(&PFIELDS[a], vals[b]);
}

START_TEST(test_host_special) { special_table(PF_HOST, HOST_SPECIAL, NA(HOST_SPECIAL)); }
END_TEST
START_TEST(test_target_special) { special_table(PF_TARGET, TARGET_SPECIAL, NA(TARGET_SPECIAL)); }
END_TEST
START_TEST(test_host_nearmiss) { nearmiss_table(PF_HOST, HOST_NEARMISS, NA(HOST_NEARMISS)); }
END_TEST
START_TEST(test_target_nearmiss) { nearmiss_table(PF_TARGET, TARGET_NEARMISS, NA(TARGET_NEARMISS)); }
END_TEST

/* ------------------------------------------------------------------ */
/* destination hosts                                                     */

static const char *const DEST_BAD[] = {
    "", "-x.example", "x-.example", "a..example", ".example", "exa mple.org", "under_score.example",
    "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/abc", "10.0.0.0/-1", "10.0.0.0/8/8", "fd00::/129", "fd00::/200",
    "1.2.3.4:80", "http://example.org", "example.org/path", "exa\\u0001mple.org", "*.example.org",
    "0.0.0.0/0", "::/0", "h\\u00e9llo.example",
};
static const char *const DEST_GOOD[] = {
    "example.org", "deb.debian.org", "xn--bcher-kva.example", "a", "10.1.2.3", "10.0.0.0/8", "10.0.0.0/32",
    "192.168.0.0/16", "::1", "fd00::/8", "fd00::/128", "2001:db8::1",
};
#define DEST_TMPL J({"network":{"mode":"restricted","dns":"none","destinations":[{"host":"example.org","proto":"tcp","ports":[443,443]},{"host":"%s","proto":"udp","ports":[53,53]}]}})

START_TEST(test_destination_bad_host)
{
    char *ok = fill(DEST_TMPL, "ok.example");
    for (size_t i = 0; i < NA(DEST_BAD); i++) {
        char *doc = fill(DEST_TMPL, DEST_BAD[i]);
        char *name = xfmt("destination host '%s'", DEST_BAD[i]);
        reject_case(name, 0, NULL, ok, doc, "$.network.destinations[1].host", C_POLICY);
        free(name);
        free(doc);
    }
    free(ok);
}
END_TEST

START_TEST(test_destination_good_host)
{
    for (size_t i = 0; i < NA(DEST_GOOD); i++) {
        char *doc = fill(DEST_TMPL, DEST_GOOD[i]);
        char *name = xfmt("destination host '%s'", DEST_GOOD[i]);
        expect_accept(name, 0, NULL, doc);
        free(name);
        free(doc);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* generated length boundaries                                          */

/* A value of ok_n (accepted) or bad_n (rejected) copies of c, followed by
 * tail, put into tmpl's one "%s". */
struct len_case {
    const char *name, *tmpl;
    char c;
    size_t ok_n, bad_n;
    const char *tail;
    const char *locs;
};

#define B32 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
_Static_assert(sizeof B32 - 1 == 32, "B32 is 32 bytes");

static const struct len_case LENGTHS[] = {
    /* 31 or 32 'a', '.', 32 'b': 64 or 65 characters */
    { "hostname 65 chars", J({"filesystem":{"hostname":"%s"}}), 'a', 31, 32, "." B32, "$.filesystem.hostname" },
    { "hostname label 64 chars", J({"filesystem":{"hostname":"%s"}}), 'l', 63, 64, "", "$.filesystem.hostname" },
    { "destination label 64 chars", DEST_TMPL, 'l', 63, 64, "", "$.network.destinations[1].host" },
    { "env name 256 chars", J({"environment":{"set":{"%s":"v"}}}), 'N', 255, 256, "", "$.environment.set*" },
    { "env allow name 256 chars", J({"environment":{"allow":["%s"]}}), 'N', 255, 256, "", "$.environment.allow[0]" },
    { "env value 128 KiB + 1", J({"environment":{"set":{"A":"%s"}}}), 'v', 128 * 1024, 128 * 1024 + 1, "",
      "$.environment.set.A" },
    { "toolchain name 65 chars", J({"filesystem":{"toolchains":{"%s":"/opt/tc"}}}), 't', 64, 65, "",
      "$.filesystem.toolchains*" },
    { "secret name 65 chars", J({"secrets":[{"name":"%s","delivery":"file","target":"t","file":"/etc/fy/t"}]}), 't',
      64, 65, "", "$.secrets[0].name" },
};

static char *len_doc(const struct len_case *c, size_t n)
{
    char *r = repeat(c->c, n);
    char *v = xfmt("%s%s", r, c->tail);
    char *doc = fill(c->tmpl, v);
    free(v);
    free(r);
    return doc;
}

START_TEST(test_lengths)
{
    for (size_t i = 0; i < NA(LENGTHS); i++) {
        const struct len_case *c = &LENGTHS[i];
        char *ok = len_doc(c, c->ok_n), *bad = len_doc(c, c->bad_n);
        reject_case(c->name, 0, NULL, ok, bad, c->locs, C_ANY);
        free(ok);
        free(bad);
    }
}
END_TEST

/* The environment total (1 MiB) cannot be exceeded through a document
 * (which is itself at most 1 MiB), only through the setters: the set_env
 * that crosses it, or fy_policy_validate, must fail. */
START_TEST(test_env_total)
{
    char *v = repeat('v', 128 * 1024);
    fy_policy *p = mkpol(0, NULL);
    fy_error *e = NULL;
    int rc = 0;
    for (int i = 1; i <= 7; i++) {
        char name[8];
        snprintf(name, sizeof name, "V%d", i);
        rc = fy_policy_set_env(p, name, v, &e);
        ck_assert_msg(rc >= 0, "set_env %s (total %d KiB) rejected: %s", name, i * 128, e ? fy_error_message(e) : "");
    }
    ck_assert_int_ge(fy_policy_validate(p, NULL), 0);
    for (int i = 8; i <= 9 && rc >= 0; i++) {
        char name[8];
        snprintf(name, sizeof name, "V%d", i);
        rc = fy_policy_set_env(p, name, v, &e);
    }
    if (rc >= 0)
        rc = fy_policy_validate(p, &e);
    ck_assert_msg(rc < 0, "9 x 128 KiB of environment accepted");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(fy_error_code(e), rc);
    ck_assert_msg(loc_matches(fy_error_location(e), "$.environment*"), "location %s", fy_error_location(e));
    fy_error_free(e);
    fy_policy_free(p);
    free(v);
}
END_TEST

/* A valid policy renders to JSON that loads back, even when escaping makes
 * the rendering larger than the values (control characters are allowed in
 * environment values and render as 6-byte \u00XX escapes). */
START_TEST(test_large_valid_policy_roundtrips)
{
    char *v = repeat('\x01', 100 * 1024);
    fy_policy *p = mkpol(0, NULL);
    fy_error *e = NULL;
    int rc = 0;
    for (int i = 1; i <= 2 && rc >= 0; i++) {
        char name[8];
        snprintf(name, sizeof name, "C%d", i);
        rc = fy_policy_set_env(p, name, v, &e);
    }
    if (rc >= 0)
        rc = fy_policy_validate(p, &e);
    if (rc >= 0)
        assert_roundtrip("2 x 100 KiB of control characters in env values", p, DEFAULT_PROFILE);
    fy_error_free(e);
    fy_policy_free(p);
    free(v);
}
END_TEST

/* ------------------------------------------------------------------ */
/* raw buffers: NUL bytes, lengths, invalid UTF-8, size limit            */

/* Buffers given with an explicit length: NUL bytes, and len shorter than
 * the text (only the first len bytes count). Rejections are whole-document
 * errors ("$", FY_E_POLICY). */
struct raw_case {
    const char *name, *doc;
    size_t len;
    bool accept;
};
#define RAW_OK(n, lit) { n, lit, sizeof lit - 1, true }
#define RAW_BAD(n, lit) { n, lit, sizeof lit - 1, false }

static const struct raw_case RAWS[] = {
    RAW_OK("hostname ab", "{\"filesystem\":{\"hostname\":\"ab\"}}"),
    RAW_BAD("raw NUL inside a string", "{\"filesystem\":{\"hostname\":\"a\0b\"}}"),
    RAW_BAD("raw NUL after the document", "{}\0"),
    RAW_BAD("raw NUL hiding a second part", "{\"version\":1}\0{\"bogus\":1}"),
    RAW_BAD("raw NUL before the document", "\0{}"),
    RAW_BAD("raw NUL as whitespace", "{ \0 }"),
    RAW_BAD("a lone NUL", "\0"),
    { "truncated by len", "{\"version\":1}", 5, false },
    { "len 0", "{\"version\":1}", 0, false },
    /* A valid prefix: "{}" followed by bytes beyond len that would be invalid. */
    { "valid prefix within len", "{}{\"bogus\":1}", 2, true },
};

START_TEST(test_raw_buffers)
{
    for (size_t i = 0; i < NA(RAWS); i++) {
        const struct raw_case *c = &RAWS[i];
        if (c->accept)
            expect_accept_len(c->name, 0, NULL, c->doc, c->len);
        else
            expect_reject_len(c->name, 0, NULL, c->doc, c->len, "$", C_POLICY);
    }
}
END_TEST

static const char *const BAD_UTF8[] = {
    "\xff", "\xfe", "\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf",
    "\xe2\x82", "\xc3", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80",
    "\xf0\x9f\x98",
};

static void invalid_utf8_case(const char *seq)
{
    char hex[32] = "";
    for (const unsigned char *u = (const unsigned char *)seq; *u; u++)
        snprintf(hex + strlen(hex), sizeof hex - strlen(hex), "%02x", *u);
    char *name = xfmt("invalid UTF-8 %s in a value", hex);
    char *ok = xfmt("{\"environment\":{\"set\":{\"A\":\"x\xc3\xa9\xf0\x9f\x98\x80y\"}}}");
    char *bad = xfmt("{\"environment\":{\"set\":{\"A\":\"x%sy\"}}}", seq);
    reject_case(name, 0, NULL, ok, bad, "$|$.environment.set.A", C_POLICY);
    free(name);
    free(bad);
    name = xfmt("invalid UTF-8 %s in a path", hex);
    bad = xfmt("{\"filesystem\":{\"binds\":[{\"host\":\"/srv/a\",\"target\":\"/opt/%s\"}]}}", seq);
    reject_case(name, 0, NULL, NULL, bad, "$|$.filesystem.binds[0].target", C_POLICY);
    free(name);
    free(bad);
    name = xfmt("invalid UTF-8 %s in a key", hex);
    bad = xfmt("{\"environment\":{\"set\":{\"A%s\":\"1\"}}}", seq);
    reject_case(name, 0, NULL, NULL, bad, "$|$.environment.set*", C_POLICY);
    free(name);
    free(bad);
    free(ok);
}

START_TEST(test_invalid_utf8)
{
    for (size_t i = 0; i < NA(BAD_UTF8); i++)
        invalid_utf8_case(BAD_UTF8[i]);
}
END_TEST

static char *padded_doc(size_t len)
{
    const char *head = "{\"version\":1";
    size_t hl = strlen(head);
    ck_assert(len > hl + 1);
    char *s = malloc(len + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, head, hl);
    memset(s + hl, ' ', len - hl - 1);
    s[len - 1] = '}';
    s[len] = '\0';
    return s;
}

START_TEST(test_input_size_limit)
{
    /* The limit is 8 MiB, so that the canonical JSON of any valid policy
     * (escapes included) loads back. */
    char *ok = padded_doc(8 * MiB);
    expect_accept_len("document of exactly 8 MiB", 0, NULL, ok, 8 * MiB);
    char *bad = padded_doc(8 * MiB + 1);
    expect_reject_len("document of 8 MiB + 1", 0, NULL, bad, 8 * MiB + 1, "$", C_ANY);
    free(bad);
    free(ok);
    /* Big because of one value: still a whole-document error. */
    char *v = repeat('v', 8 * MiB);
    bad = xfmt("{\"environment\":{\"set\":{\"A\":\"%s\"}}}", v);
    expect_reject("document over 8 MiB through one value", 0, NULL, bad, "$", C_ANY);
    free(bad);
    free(v);
    /* 64 MiB of whitespace: rejected quickly, without parsing. */
    size_t big = 64u * MiB;
    bad = padded_doc(big);
    expect_reject_len("document of 64 MiB", 0, NULL, bad, big, "$", C_ANY);
    free(bad);
}
END_TEST

START_TEST(test_deep_nesting)
{
    /* Deep nesting must not crash (stack) and is rejected. */
    size_t depth = 100000;
    char *s = malloc(2 * depth + 32);
    ck_assert_ptr_nonnull(s);
    size_t at = 0;
    at += (size_t)sprintf(s, "{\"bogus\":");
    for (size_t i = 0; i < depth; i++)
        s[at++] = '[';
    for (size_t i = 0; i < depth; i++)
        s[at++] = ']';
    s[at++] = '}';
    s[at] = '\0';
    expect_reject_len("100000 nested arrays", 0, NULL, s, at, "$|$.bogus", C_ANY);
    free(s);
}
END_TEST

/* A document of many small entries loads (or is refused) quickly:
 * validation must not be quadratic in the entry count. 20000 entries keep
 * the suite fast; a quadratic loader needs seconds here and minutes for a
 * 1 MiB document (up to ~100000 entries). */
#define MANY_ITEMS 20000u
enum { MANY_RUNTIME, MANY_ENV, MANY_ALLOW, MANY_TOOLCHAINS, MANY_DEVICES, MANY_BINDS, MANY_SECRETS, MANY_MAX_ };
static const char *const MANY_NAMES[MANY_MAX_] = {
    "runtime_paths", "environment.set", "environment.allow", "toolchains", "devices.allowed", "binds", "secrets",
};

static char *many_doc(int kind)
{
    size_t cap = MiB, at = 0;
    char *s = malloc(cap + 1);
    ck_assert_ptr_nonnull(s);
    static const char *const head[MANY_MAX_] = {
        "{\"filesystem\":{\"runtime_paths\":[", "{\"environment\":{\"set\":{", "{\"environment\":{\"allow\":[",
        "{\"filesystem\":{\"toolchains\":{", "{\"devices\":{\"allowed\":[", "{\"filesystem\":{\"binds\":[", "{\"secrets\":[",
    };
    static const char *const tail[MANY_MAX_] = { "]}}", "}}}", "]}}", "}}}", "]}}", "]}}", "]}" };
    at += (size_t)snprintf(s, cap, "%s", head[kind]);
    char item[200];
    for (unsigned i = 0; i < MANY_ITEMS; i++) {
        int n = 0;
        switch (kind) {
        case MANY_RUNTIME: n = snprintf(item, sizeof item, "\"/r%u\"", i); break;
        case MANY_ENV: n = snprintf(item, sizeof item, "\"E%u\":\"\"", i); break;
        case MANY_ALLOW: n = snprintf(item, sizeof item, "\"A%u\"", i); break;
        case MANY_TOOLCHAINS: n = snprintf(item, sizeof item, "\"t%u\":\"/o\"", i); break;
        case MANY_DEVICES: n = snprintf(item, sizeof item, "{\"path\":\"/dev/d%u\"}", i); break;
        case MANY_BINDS: n = snprintf(item, sizeof item, "{\"host\":\"/s\",\"target\":\"/o/%u\"}", i); break;
        case MANY_SECRETS:
            n = snprintf(item, sizeof item, "{\"name\":\"s%u\",\"delivery\":\"file\",\"target\":\"t%u\",\"file\":\"/f\"}", i, i);
            break;
        }
        if (at + (size_t)n + 1 + strlen(tail[kind]) + 1 > cap)
            break;
        if (i)
            s[at++] = ',';
        memcpy(s + at, item, (size_t)n);
        at += (size_t)n;
    }
    at += (size_t)snprintf(s + at, cap + 1 - at, "%s", tail[kind]);
    ck_assert_uint_le(at, MiB);
    return s;
}

/* The process's CPU time, not the wall clock: a loaded host (the test
 * suite runs two tests at once, one of them may be a TCG guest) must not
 * fail a check of how much work the code does. */
static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void many_entries_case(int kind)
{
    const char *what = MANY_NAMES[kind];
    case_begin(what);
    char *doc = many_doc(kind);
    fy_policy *p = mkpol(0, NULL);
    fy_error *e = NULL;
    double t0 = now_sec();
    int rc = load(p, doc, strlen(doc), &e);
    double dt = now_sec() - t0;
    if (rc < 0)
        ck_assert_msg(fy_error_location(e) && fy_error_location(e)[0] == '$', "%s: error without location", what);
    ck_assert_msg(dt < 2.0, "%s: loading %u entries took %.2f s of CPU (rc=%d)", what, MANY_ITEMS, dt, rc);
    fy_error_free(e);
    if (rc >= 0) {
        t0 = now_sec();
        rc = fy_policy_validate(p, NULL);
        dt = now_sec() - t0;
        ck_assert_msg(rc >= 0, "%s: fy_policy_validate of %u loaded entries failed: %d", what, MANY_ITEMS, rc);
        ck_assert_msg(dt < 2.0, "%s: fy_policy_validate of %u entries took %.2f s of CPU", what, MANY_ITEMS, dt);
    }
    fy_policy_free(p);
    free(doc);
}

START_TEST(test_many_entries_fast)
{
    for (int kind = 0; kind < MANY_MAX_; kind++)
        many_entries_case(kind);
}
END_TEST

/* ------------------------------------------------------------------ */
/* canonical output, profiles, round trips                              */

static const uint32_t PROFILES[] = {
    FY_PROFILE_DEVELOPMENT, FY_PROFILE_STANDARD_CI, FY_PROFILE_RELEASE, FY_PROFILE_HIGH_ASSURANCE,
};
static const char *const PROFILE_NAMES[] = { "development", "standard-ci", "release", "high-assurance" };

static void assert_keys_sorted(json_t *v, const char *path)
{
    if (json_is_object(v)) {
        const char *prev = NULL, *k;
        json_t *c;
        json_object_foreach(v, k, c) {
            ck_assert_msg(!prev || strcmp(prev, k) < 0, "canonical JSON: keys of %s not sorted: '%s' before '%s'",
                          path, prev, k);
            prev = k;
            char *sub = xfmt("%s.%s", path, k);
            assert_keys_sorted(c, sub);
            free(sub);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) {
            char *sub = xfmt("%s[%zu]", path, i);
            assert_keys_sorted(c, sub);
            free(sub);
        }
    }
}

/* keys: NULL-terminated list that the object must have, exactly. */
static void assert_key_set(json_t *obj, const char *path, const char *const *keys)
{
    ck_assert_msg(json_is_object(obj), "canonical JSON: %s is not an object", path);
    size_t n = 0;
    for (; keys[n]; n++)
        ck_assert_msg(json_object_get(obj, keys[n]) != NULL, "canonical JSON: %s.%s missing", path, keys[n]);
    const char *k;
    json_t *c;
    json_object_foreach(obj, k, c) {
        bool known = false;
        for (size_t i = 0; i < n; i++)
            known |= strcmp(keys[i], k) == 0;
        ck_assert_msg(known, "canonical JSON: unexpected key %s.%s", path, k);
    }
}

static const char *const TOP_KEYS[] = { "devices", "environment", "filesystem", "isolation", "network", "process",
                                        "profile", "resources", "secrets", "version", NULL };
static const char *const ISO_KEYS[] = { "controls", "min_level", "preferred_level", NULL };
static const char *const CONTROL_KEYS[] = { "cgroupns", "cpu-limit", "io-limit", "ipcns", "landlock", "memory-limit",
                                            "mountns", "netns", "pidns", "pids-limit", "seccomp", "uid-range",
                                            "userns", "utsns", NULL };
static const char *const FS_KEYS[] = { "binds", "build", "hostname", "output", "runtime_paths", "source",
                                       "toolchains", "workdir", NULL };
static const char *const ENV_KEYS[] = { "allow", "defaults", "set", NULL };
static const char *const NET_KEYS[] = { "destinations", "dns", "mode", NULL };
static const char *const RES_KEYS[] = { "core", "cpu_millis", "disk", "files", "fsize", "grace", "home_size",
                                        "io_bps", "memory", "memory_swap", "nofile", "output", "pids", "shm_size",
                                        "stack", "tmp_size", "wall_time", "work_tmp_size", NULL };
static const char *const PROC_KEYS[] = { "id_range", "seccomp", "user", NULL };
static const char *const IDR_KEYS[] = { "count", "first", NULL };
static const char *const DEV_KEYS[] = { "allowed", "gpu", "pty", "usb", NULL };
static const char *const BIND_KEYS[] = { "host", "optional", "target", "writable", NULL };
static const char *const SOURCE_KEYS[] = { "path", "writable", NULL };
static const char *const DEST_KEYS[] = { "host", "ports", "proto", NULL };
static const char *const DEVICE_KEYS[] = { "path", "writable", NULL };
static const char *const SECRET_KEYS[] = { "delivery", "file", "name", "target", NULL };

static json_t *parse_canonical(const char *js)
{
    json_error_t jerr;
    json_t *root = json_loads(js, JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(root != NULL, "canonical JSON does not parse: %s (line %d)\n%.1500s", jerr.text, jerr.line, js);
    assert_keys_sorted(root, "$");
    assert_key_set(root, "$", TOP_KEYS);
    ck_assert_msg(json_integer_value(json_object_get(root, "version")) == 1 &&
                  json_is_integer(json_object_get(root, "version")), "canonical JSON: version is not 1");
    json_t *iso = json_object_get(root, "isolation");
    assert_key_set(iso, "$.isolation", ISO_KEYS);
    assert_key_set(json_object_get(iso, "controls"), "$.isolation.controls", CONTROL_KEYS);
    json_t *fs = json_object_get(root, "filesystem");
    assert_key_set(fs, "$.filesystem", FS_KEYS);
    json_t *src = json_object_get(fs, "source");
    if (!json_is_null(src))
        assert_key_set(src, "$.filesystem.source", SOURCE_KEYS);
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(fs, "binds"), i, it) assert_key_set(it, "$.filesystem.binds[]", BIND_KEYS);
    assert_key_set(json_object_get(root, "environment"), "$.environment", ENV_KEYS);
    json_t *net = json_object_get(root, "network");
    assert_key_set(net, "$.network", NET_KEYS);
    json_array_foreach(json_object_get(net, "destinations"), i, it) assert_key_set(it, "$.network.destinations[]", DEST_KEYS);
    json_t *res = json_object_get(root, "resources");
    assert_key_set(res, "$.resources", RES_KEYS);
    const char *k;
    json_object_foreach(res, k, it) {
        ck_assert_msg(json_is_integer(it) || (json_is_string(it) && strcmp(json_string_value(it), "unlimited") == 0),
                      "canonical JSON: $.resources.%s is neither an integer nor \"unlimited\"", k);
        if (json_is_integer(it))
            ck_assert_msg(json_integer_value(it) >= 0, "canonical JSON: $.resources.%s negative", k);
    }
    json_t *proc = json_object_get(root, "process");
    assert_key_set(proc, "$.process", PROC_KEYS);
    assert_key_set(json_object_get(proc, "id_range"), "$.process.id_range", IDR_KEYS);
    json_t *dev = json_object_get(root, "devices");
    assert_key_set(dev, "$.devices", DEV_KEYS);
    json_array_foreach(json_object_get(dev, "allowed"), i, it) assert_key_set(it, "$.devices.allowed[]", DEVICE_KEYS);
    json_array_foreach(json_object_get(root, "secrets"), i, it) assert_key_set(it, "$.secrets[]", SECRET_KEYS);
    return root;
}

static void profile_canonical_case(size_t pi)
{
    case_begin(PROFILE_NAMES[pi]);
    uint32_t prof = PROFILES[pi];
    fy_policy *p = mkpol(prof, NULL);
    fy_error *e = NULL;
    int rc = fy_policy_validate(p, &e);
    ck_assert_msg(rc >= 0, "profile %s does not validate: %s at %s", PROFILE_NAMES[pi], e ? fy_error_message(e) : "",
                  e ? fy_error_location(e) : "");
    fy_error_free(e);
    const char *pname = fy_profile_name(prof);
    ck_assert_msg(pname && strcmp(pname, PROFILE_NAMES[pi]) == 0, "profile %u is named '%s', expected '%s'", prof,
                  pname ? pname : "(null)", PROFILE_NAMES[pi]);
    ck_assert_msg(fy_profile_from_name(PROFILE_NAMES[pi]) == (int)prof, "fy_profile_from_name(\"%s\") = %d, expected %u",
                  PROFILE_NAMES[pi], fy_profile_from_name(PROFILE_NAMES[pi]), prof);
    char *j1 = to_json(p);
    json_t *root = parse_canonical(j1);
    const char *jprof = json_string_value(json_object_get(root, "profile"));
    ck_assert_msg(jprof && strcmp(jprof, PROFILE_NAMES[pi]) == 0, "%s: canonical JSON names profile '%s'",
                  PROFILE_NAMES[pi], jprof ? jprof : "(not a string)");
    json_decref(root);
    /* Same bytes when rendered twice. */
    char *j1b = to_json(p);
    ck_assert_msg(strcmp(j1, j1b) == 0, "%s: two renderings differ", PROFILE_NAMES[pi]);
    free(j1b);
    /* Loaded into a fresh policy of every profile: identical (every key is
     * present, so nothing of the starting profile may survive). */
    for (size_t k = 0; k < NA(PROFILES); k++) {
        fy_policy *q = mkpol(PROFILES[k], NULL);
        e = NULL;
        rc = load(q, j1, strlen(j1), &e);
        ck_assert_msg(rc >= 0, "%s output does not load into a %s policy: %s at %s", PROFILE_NAMES[pi],
                      PROFILE_NAMES[k], e ? fy_error_message(e) : "", e ? fy_error_location(e) : "");
        fy_error_free(e);
        char *j2 = to_json(q);
        ck_assert_msg(strcmp(j1, j2) == 0, "%s output loaded into %s differs:\n%.1500s\n----\n%.1500s", PROFILE_NAMES[pi],
                      PROFILE_NAMES[k], j1, j2);
        free(j2);
        fy_policy_free(q);
    }
    /* Loading its own output is a no-op. */
    rc = load(p, j1, strlen(j1), NULL);
    ck_assert_msg(rc >= 0, "%s: its own output does not load back: %d", PROFILE_NAMES[pi], rc);
    char *j3 = to_json(p);
    ck_assert_msg(strcmp(j1, j3) == 0, "%s: loading its own output changed it", PROFILE_NAMES[pi]);
    free(j3);
    free(j1);
    fy_policy_free(p);
}

START_TEST(test_profile_canonical_roundtrip)
{
    for (size_t i = 0; i < NA(PROFILES); i++)
        profile_canonical_case(i);
}
END_TEST

static void profile_key_resets_case(size_t pi)
{
    case_begin(PROFILE_NAMES[pi]);
    uint32_t prof = PROFILES[pi];
    fy_policy *fresh = mkpol(prof, NULL);
    char *want = to_json(fresh);
    fy_policy_free(fresh);
    /* Start from another profile, changed in many places. */
    fy_policy *p = mkpol(FY_PROFILE_STANDARD_CI, NULL);
    const char *changes = J({"filesystem":{"hostname":"changed","build":"/srv/b","binds":[{"host":"/srv/a","target":"/opt/a"}]},
                             "environment":{"set":{"CHANGED":"1"},"allow":["TZ"]},
                             "resources":{"pids":77,"output":"3M"},"process":{"id_range":{"first":5000,"count":10}}});
    fy_error *e = NULL;
    int rc = load(p, changes, strlen(changes), &e);
    ck_assert_msg(rc >= 0, "%s: changes rejected: %s at %s", PROFILE_NAMES[pi], e ? fy_error_message(e) : "",
                  e ? fy_error_location(e) : "");
    fy_error_free(e);
    char *doc = xfmt("{\"profile\":\"%s\"}", PROFILE_NAMES[pi]);
    rc = load(p, doc, strlen(doc), NULL);
    ck_assert_msg(rc >= 0, "%s rejected: %d", doc, rc);
    char *got = to_json(p);
    ck_assert_msg(strcmp(want, got) == 0, "{\"profile\":\"%s\"} did not reset to the profile:\n%.1500s\n----\n%.1500s",
                  PROFILE_NAMES[pi], want, got);
    free(got);
    free(doc);
    free(want);
    fy_policy_free(p);
}

START_TEST(test_profile_key_resets)
{
    for (size_t i = 0; i < NA(PROFILES); i++)
        profile_key_resets_case(i);
}
END_TEST

START_TEST(test_profile_applied_first)
{
    /* "profile" resets first, wherever it appears in the object. */
    const char *late = J({"filesystem":{"hostname":"pre-host"},"resources":{"pids":99},"profile":"release"});
    const char *early = J({"profile":"release","filesystem":{"hostname":"pre-host"},"resources":{"pids":99}});
    fy_policy *a = mkpol(FY_PROFILE_DEVELOPMENT, NULL), *b = mkpol(FY_PROFILE_STANDARD_CI, NULL);
    ck_assert_int_ge(load(a, late, strlen(late), NULL), 0);
    ck_assert_int_ge(load(b, early, strlen(early), NULL), 0);
    char *ja = to_json(a), *jb = to_json(b);
    ck_assert_msg(strcmp(ja, jb) == 0, "profile key position matters:\n%.1500s\n----\n%.1500s", ja, jb);
    json_t *root = parse_canonical(ja);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "filesystem"), "hostname")), "pre-host");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "resources"), "pids")), 99);
    ck_assert_str_eq(json_string_value(json_object_get(root, "profile")), "release");
    json_decref(root);
    free(ja);
    free(jb);
    fy_policy_free(a);
    fy_policy_free(b);
}
END_TEST

/* null is a documented value of source, build and output: it clears them. */
START_TEST(test_null_clears_mounts)
{
    static const char *const docs[] = {
        J({"filesystem":{"source":null}}), J({"filesystem":{"build":null}}), J({"filesystem":{"output":null}}),
        J({"filesystem":{"source":null,"build":null,"output":null}}),
    };
    for (size_t d = 0; d < NA(docs); d++)
        expect_accept(docs[d], 0, NULL, docs[d]);
    fy_policy *fresh = mkpol(0, NULL);
    char *want = to_json(fresh);
    fy_policy *p = mkpol(0, NULL);
    const char *set = J({"filesystem":{"source":{"path":"/srv/src","writable":true},"build":"/srv/b","output":"/srv/o"}});
    ck_assert_int_ge(load(p, set, strlen(set), NULL), 0);
    fy_error *e = NULL;
    int rc = load(p, docs[3], strlen(docs[3]), &e);
    ck_assert_msg(rc >= 0, "clearing with null rejected: %s at %s", e ? fy_error_message(e) : "", e ? fy_error_location(e) : "");
    fy_error_free(e);
    char *got = to_json(p);
    ck_assert_msg(strcmp(want, got) == 0, "null did not clear source/build/output:\n%.1500s", got);
    free(got);
    free(want);
    fy_policy_free(p);
    fy_policy_free(fresh);
}
END_TEST

START_TEST(test_empty_documents_change_nothing)
{
    static const char *const docs[] = { "{}", " { } ", "\n{\"version\":1}\n", "{\"isolation\":{}}",
                                         "{\"filesystem\":{},\"environment\":{},\"network\":{},\"resources\":{},\"process\":{},\"devices\":{}}" };
    for (size_t k = 0; k < NA(PROFILES); k++) {
        for (size_t d = 0; d < NA(docs); d++) {
            fy_policy *p = mkpol(PROFILES[k], NULL);
            char *before = to_json(p);
            fy_error *e = NULL;
            int rc = load(p, docs[d], strlen(docs[d]), &e);
            ck_assert_msg(rc >= 0, "'%s' rejected: %s", docs[d], e ? fy_error_message(e) : "");
            fy_error_free(e);
            char *after = to_json(p);
            ck_assert_msg(strcmp(before, after) == 0, "'%s' changed the %s policy", docs[d], PROFILE_NAMES[k]);
            free(before);
            free(after);
            fy_policy_free(p);
        }
    }
}
END_TEST

/* The harness's mixed-in changes really change the policy (otherwise the
 * all-or-nothing checks would prove nothing). */
START_TEST(test_mutations_change_the_policy)
{
    char *doc = mutate_doc("{}", 2);
    ck_assert_ptr_nonnull(doc);
    for (size_t k = 0; k < NA(PROFILES); k++) {
        fy_policy *p = mkpol(PROFILES[k], NULL);
        char *before = to_json(p);
        fy_error *e = NULL;
        int rc = load(p, doc, strlen(doc), &e);
        ck_assert_msg(rc >= 0, "mutation %s rejected: %s at %s", doc, e ? fy_error_message(e) : "",
                      e ? fy_error_location(e) : "");
        fy_error_free(e);
        char *after = to_json(p);
        ck_assert_msg(strcmp(before, after) != 0, "mutation %s did not change the %s policy", doc, PROFILE_NAMES[k]);
        free(before);
        free(after);
        fy_policy_free(p);
    }
    free(doc);
}
END_TEST

static const char FULL_DOC[] = J({
    "version":1,
    "profile":"standard-ci",
    "isolation":{"min_level":"namespace","preferred_level":"container",
        "controls":{"userns":"require","mountns":"require","pidns":"require","netns":"require","ipcns":"prefer",
                    "utsns":"prefer","cgroupns":"prefer","seccomp":"require","landlock":"prefer",
                    "memory-limit":"require","pids-limit":"require","cpu-limit":"prefer","io-limit":"off",
                    "uid-range":"prefer"}},
    "filesystem":{"source":{"path":"/srv/ci/src","writable":false},"build":"/srv/ci/build","output":"/srv/ci/out",
        "toolchains":{"gcc-12":"/opt/toolchains/gcc-12","rust.stable":"/opt/toolchains/rust"},
        "binds":[{"host":"/srv/cache/ccache","target":"/work/cache","writable":true,"optional":true},
                 {"host":"/srv/ref","target":"/opt/ref","writable":false,"optional":false}],
        "runtime_paths":["/usr","/lib","/lib64","/bin","/etc/ssl"],
        "workdir":"/work/build","hostname":"ci-runner-1"},
    "environment":{"set":{"LANG":"C.UTF-8","CI":"true","EMPTY":""},"allow":["TERM","TZ"]},
    "network":{"mode":"restricted","dns":"host","destinations":[
        {"host":"deb.debian.org","proto":"tcp","ports":[80,443]},
        {"host":"10.0.0.0/8","proto":"tcp","ports":[1,65535]},
        {"host":"fd00::/8","proto":"udp","ports":[53,53]}]},
    "resources":{"cpu_millis":4000,"memory":"8GiB","memory_swap":0,"pids":4096,"disk":"20G","files":1000000,
        "nofile":65536,"fsize":"4G","stack":"8MiB","core":0,"wall_time":"2h","grace":"30s","output":"64MiB",
        "tmp_size":"1GiB","work_tmp_size":"512MiB","home_size":"256MiB","shm_size":"64MiB","io_bps":"200MB"},
    "process":{"user":"sandbox","seccomp":"networked-test","id_range":{"first":100000,"count":65536}},
    "devices":{"allowed":[{"path":"/dev/dri/renderD128","writable":true},{"path":"/dev/fuse","writable":false}],
               "gpu":"leased","usb":"deny"},
    "secrets":[{"name":"deploy-key","delivery":"file","target":"id_ed25519","file":"/etc/forgeyard/secrets/deploy"},
               {"name":"api.token","delivery":"env","target":"API_TOKEN","file":"/etc/forgeyard/secrets/api"},
               {"name":"signing","delivery":"stdin","target":null,"file":"/etc/forgeyard/secrets/sign"}]
});

static const char *jstr(json_t *root, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(root, a), b);
    return json_is_string(v) ? json_string_value(v) : "(not a string)";
}

static bool array_has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it)
        if (json_is_string(it) && strcmp(json_string_value(it), s) == 0)
            return true;
    return false;
}

START_TEST(test_full_document)
{
    /* Loads onto every profile with the same result. */
    char *first = NULL;
    for (size_t k = 0; k < NA(PROFILES); k++) {
        fy_policy *p = mkpol(PROFILES[k], NULL);
        fy_error *e = NULL;
        int rc = load(p, FULL_DOC, strlen(FULL_DOC), &e);
        ck_assert_msg(rc >= 0, "full document rejected on %s: %s at %s", PROFILE_NAMES[k],
                      e ? fy_error_message(e) : "", e ? fy_error_location(e) : "");
        fy_error_free(e);
        char *js = to_json(p);
        if (!first)
            first = strdup(js);
        else
            ck_assert_msg(strcmp(first, js) == 0, "full document gives different results on different profiles");
        free(js);
        fy_policy_free(p);
    }
    free(first);

    fy_policy *p = mkpol(0, NULL);
    ck_assert_int_ge(load(p, FULL_DOC, strlen(FULL_DOC), NULL), 0);
    ck_assert_int_ge(fy_policy_validate(p, NULL), 0);
    static const struct { uint32_t id; uint64_t v; } lim[] = {
        { FY_LIMIT_CPU_MILLIS, 4000 }, { FY_LIMIT_MEMORY, 8ull << 30 }, { FY_LIMIT_MEMORY_SWAP, 0 },
        { FY_LIMIT_PIDS, 4096 }, { FY_LIMIT_DISK, 20ull << 30 }, { FY_LIMIT_FILES, 1000000 },
        { FY_LIMIT_NOFILE, 65536 }, { FY_LIMIT_FSIZE, 4ull << 30 }, { FY_LIMIT_STACK, 8ull << 20 },
        { FY_LIMIT_CORE, 0 }, { FY_LIMIT_WALL_TIME, 7200000000ull }, { FY_LIMIT_GRACE, 30000000 },
        { FY_LIMIT_OUTPUT, 64ull << 20 }, { FY_LIMIT_TMP_SIZE, 1ull << 30 }, { FY_LIMIT_WORK_TMP_SIZE, 512ull << 20 },
        { FY_LIMIT_HOME_SIZE, 256ull << 20 }, { FY_LIMIT_SHM_SIZE, 64ull << 20 }, { FY_LIMIT_IO_BPS, 200000000 },
    };
    for (size_t i = 0; i < NA(lim); i++) {
        uint64_t v = 0;
        ck_assert_int_ge(fy_policy_get_limit(p, lim[i].id, &v), 0);
        ck_assert_msg(v == lim[i].v, "limit %u: %llu, expected %llu", lim[i].id, (unsigned long long)v,
                      (unsigned long long)lim[i].v);
    }
    char *js = to_json(p);
    json_t *root = parse_canonical(js);
    ck_assert_str_eq(json_string_value(json_object_get(root, "profile")), "standard-ci");
    ck_assert_str_eq(jstr(root, "isolation", "min_level"), "namespace");
    ck_assert_str_eq(jstr(root, "isolation", "preferred_level"), "container");
    json_t *ctl = json_object_get(json_object_get(root, "isolation"), "controls");
    ck_assert_str_eq(json_string_value(json_object_get(ctl, "netns")), "require");
    ck_assert_str_eq(json_string_value(json_object_get(ctl, "io-limit")), "off");
    ck_assert_str_eq(json_string_value(json_object_get(ctl, "landlock")), "prefer");
    json_t *fs = json_object_get(root, "filesystem");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(fs, "source"), "path")), "/srv/ci/src");
    ck_assert(json_is_false(json_object_get(json_object_get(fs, "source"), "writable")));
    ck_assert_str_eq(jstr(root, "filesystem", "build"), "/srv/ci/build");
    ck_assert_str_eq(jstr(root, "filesystem", "output"), "/srv/ci/out");
    ck_assert_str_eq(jstr(root, "filesystem", "workdir"), "/work/build");
    ck_assert_str_eq(jstr(root, "filesystem", "hostname"), "ci-runner-1");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(fs, "toolchains"), "rust.stable")), "/opt/toolchains/rust");
    json_t *binds = json_object_get(fs, "binds");
    ck_assert_int_eq(json_array_size(binds), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(binds, 0), "target")), "/work/cache");
    ck_assert(json_is_true(json_object_get(json_array_get(binds, 0), "writable")));
    ck_assert(json_is_true(json_object_get(json_array_get(binds, 0), "optional")));
    ck_assert(json_is_false(json_object_get(json_array_get(binds, 1), "writable")));
    json_t *rp = json_object_get(fs, "runtime_paths");
    ck_assert_int_eq(json_array_size(rp), 5);
    ck_assert(array_has_string(rp, "/etc/ssl") && array_has_string(rp, "/lib64"));
    json_t *env = json_object_get(root, "environment");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(env, "set"), "LANG")), "C.UTF-8");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(env, "set"), "EMPTY")), "");
    ck_assert(array_has_string(json_object_get(env, "allow"), "TZ"));
    ck_assert_str_eq(jstr(root, "network", "mode"), "restricted");
    ck_assert_str_eq(jstr(root, "network", "dns"), "host");
    json_t *dests = json_object_get(json_object_get(root, "network"), "destinations");
    ck_assert_int_eq(json_array_size(dests), 3);
    json_t *d0 = json_array_get(dests, 0);
    ck_assert_str_eq(json_string_value(json_object_get(d0, "host")), "deb.debian.org");
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(d0, "ports"), 0)), 80);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(d0, "ports"), 1)), 443);
    ck_assert_str_eq(jstr(root, "process", "user"), "sandbox");
    ck_assert_str_eq(jstr(root, "process", "seccomp"), "networked-test");
    json_t *idr = json_object_get(json_object_get(root, "process"), "id_range");
    ck_assert_int_eq(json_integer_value(json_object_get(idr, "first")), 100000);
    ck_assert_int_eq(json_integer_value(json_object_get(idr, "count")), 65536);
    ck_assert_str_eq(jstr(root, "devices", "gpu"), "leased");
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(root, "devices"), "allowed")), 2);
    json_t *sec = json_object_get(root, "secrets");
    ck_assert_int_eq(json_array_size(sec), 3);
    json_t *s2 = json_array_get(sec, 2);
    ck_assert_str_eq(json_string_value(json_object_get(s2, "delivery")), "stdin");
    ck_assert(json_is_null(json_object_get(s2, "target")));
    ck_assert_str_eq(json_string_value(json_object_get(s2, "file")), "/etc/forgeyard/secrets/sign");
    json_t *r = json_object_get(root, "resources");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "memory")), 8589934592LL);
    ck_assert_int_eq(json_integer_value(json_object_get(r, "wall_time")), 7200000000LL);
    json_decref(root);
    free(js);
    assert_roundtrip("full document", p, FY_PROFILE_STANDARD_CI);
    /* Loading it again is idempotent. */
    char *j1 = to_json(p);
    ck_assert_int_ge(load(p, FULL_DOC, strlen(FULL_DOC), NULL), 0);
    char *j2 = to_json(p);
    ck_assert_str_eq(j1, j2);
    free(j1);
    free(j2);
    fy_policy_free(p);
}
END_TEST

struct unit_case { const char *key; const char *value; uint32_t limit; uint64_t want; };
static const struct unit_case UNITS[] = {
    { "disk", "5B", FY_LIMIT_DISK, 5 },
    { "disk", "1K", FY_LIMIT_DISK, 1024 },
    { "disk", "1KB", FY_LIMIT_DISK, 1000 },
    { "disk", "1KiB", FY_LIMIT_DISK, 1024 },
    { "disk", "3M", FY_LIMIT_DISK, 3ull << 20 },
    { "disk", "3MB", FY_LIMIT_DISK, 3000000 },
    { "disk", "3MiB", FY_LIMIT_DISK, 3ull << 20 },
    { "disk", "2G", FY_LIMIT_DISK, 2ull << 30 },
    { "disk", "2GB", FY_LIMIT_DISK, 2000000000ull },
    { "disk", "2GiB", FY_LIMIT_DISK, 2ull << 30 },
    { "disk", "7T", FY_LIMIT_DISK, 7ull << 40 },
    { "disk", "7TB", FY_LIMIT_DISK, 7000000000000ull },
    { "disk", "7TiB", FY_LIMIT_DISK, 7ull << 40 },
    { "disk", "1B", FY_LIMIT_DISK, 1 },
    { "disk", "unlimited", FY_LIMIT_DISK, FY_UNLIMITED },
    { "disk", "1024TiB", FY_LIMIT_DISK, 1ull << 50 },
    { "grace", "100us", FY_LIMIT_GRACE, 100 },
    { "grace", "250ms", FY_LIMIT_GRACE, 250000 },
    { "grace", "30s", FY_LIMIT_GRACE, 30000000 },
    { "grace", "5m", FY_LIMIT_GRACE, 300000000 },
    { "grace", "1h", FY_LIMIT_GRACE, 3600000000ull },
    { "wall_time", "2h", FY_LIMIT_WALL_TIME, 7200000000ull },
    { "wall_time", "1d", FY_LIMIT_WALL_TIME, 86400000000ull },
    { "wall_time", "30d", FY_LIMIT_WALL_TIME, 2592000000000ull },
    { "wall_time", "1ms", FY_LIMIT_WALL_TIME, 1000 },
    { "wall_time", "1000us", FY_LIMIT_WALL_TIME, 1000 },
    { "memory", "1MiB", FY_LIMIT_MEMORY, 1ull << 20 },
    { "output", "10MB", FY_LIMIT_OUTPUT, 10000000 },
    { "io_bps", "unlimited", FY_LIMIT_IO_BPS, FY_UNLIMITED },
    /* decimal fractions, exact to the base unit */
    { "wall_time", "1.5s", FY_LIMIT_WALL_TIME, 1500000 },
    { "wall_time", "1.25ms", FY_LIMIT_WALL_TIME, 1250 },
    { "wall_time", "2.000001s", FY_LIMIT_WALL_TIME, 2000001 },
    { "grace", "0.5m", FY_LIMIT_GRACE, 30000000 },
    { "wall_time", "1.5d", FY_LIMIT_WALL_TIME, 129600000000ull },
    { "memory", "1.5GiB", FY_LIMIT_MEMORY, 3ull << 29 },
    { "memory", "1.5M", FY_LIMIT_MEMORY, 3ull << 19 },
    { "output", "2.5MB", FY_LIMIT_OUTPUT, 2500000 },
};

static void unit_check(const struct unit_case *u)
{
    char *doc = xfmt("{\"isolation\":{\"controls\":{\"memory-limit\":\"prefer\"}},\"resources\":{\"%s\":\"%s\"}}",
                     u->key, u->value);
    char *name = xfmt("%s \"%s\"", u->key, u->value);
    expect_accept(name, 0, NULL, doc);
    fy_policy *p = mkpol(0, NULL);
    ck_assert_msg(load(p, doc, strlen(doc), NULL) >= 0, "%s: rejected on a second load", name);
    uint64_t v = 0;
    ck_assert_msg(fy_policy_get_limit(p, u->limit, &v) >= 0, "%s: fy_policy_get_limit(%u) failed", name, u->limit);
    ck_assert_msg(v == u->want, "%s: got %llu, want %llu", name, (unsigned long long)v, (unsigned long long)u->want);
    /* Canonical output: an integer (or "unlimited"). */
    char *js = to_json(p);
    json_t *root = parse_canonical(js);
    json_t *jv = json_object_get(json_object_get(root, "resources"), u->key);
    if (u->want == FY_UNLIMITED)
        ck_assert_msg(json_is_string(jv) && strcmp(json_string_value(jv), "unlimited") == 0, "%s: not \"unlimited\"", name);
    else
        ck_assert_msg(json_is_integer(jv) && (uint64_t)json_integer_value(jv) == u->want, "%s: rendered wrongly", name);
    json_decref(root);
    free(js);
    fy_policy_free(p);
    free(name);
    free(doc);
}

START_TEST(test_units)
{
    for (size_t i = 0; i < NA(UNITS); i++)
        unit_check(&UNITS[i]);
}
END_TEST

START_TEST(test_unlimited_where_allowed)
{
    const char *doc = J({"isolation":{"controls":{"memory-limit":"prefer","pids-limit":"prefer","cpu-limit":"prefer"}},
                         "resources":{"memory":"unlimited","pids":"unlimited","cpu_millis":"unlimited","files":"unlimited",
                                      "memory_swap":"unlimited","fsize":"unlimited","output":"unlimited"}});
    expect_accept("unlimited limits", 0, NULL, doc);
    fy_policy *p = mkpol(0, NULL);
    ck_assert_int_ge(load(p, doc, strlen(doc), NULL), 0);
    static const uint32_t ids[] = { FY_LIMIT_MEMORY, FY_LIMIT_PIDS, FY_LIMIT_CPU_MILLIS, FY_LIMIT_FILES,
                                    FY_LIMIT_MEMORY_SWAP, FY_LIMIT_FSIZE, FY_LIMIT_OUTPUT };
    for (size_t i = 0; i < NA(ids); i++) {
        uint64_t v = 0;
        ck_assert_int_ge(fy_policy_get_limit(p, ids[i], &v), 0);
        ck_assert_msg(v == FY_UNLIMITED, "limit %u not unlimited", ids[i]);
    }
    fy_policy_free(p);
}
END_TEST

/* A size above INT64_MAX cannot be written as a JSON integer that parsers
 * read back: it must be rejected, or render so that it round-trips. */
START_TEST(test_size_above_int64)
{
    static const char *const docs[] = {
        J({"resources":{"disk":"9223372036854775808B"}}),
        J({"resources":{"disk":"16777215TiB"}}),
        J({"resources":{"disk":"18446744073709551614B"}}),
        J({"resources":{"disk":"18446744073709551615B"}}),
        J({"resources":{"disk":9223372036854775807}}),
    };
    for (size_t i = 0; i < NA(docs); i++) {
        case_begin(docs[i]);
        fy_policy *p = mkpol(0, NULL);
        char *before = to_json(p);
        fy_error *e = NULL;
        int rc = load(p, docs[i], strlen(docs[i]), &e);
        if (rc < 0) {
            check_error(docs[i], rc, e, "$.resources.disk", C_ANY);
            char *after = to_json(p);
            ck_assert_str_eq(before, after);
            free(after);
        } else {
            assert_roundtrip(docs[i], p, DEFAULT_PROFILE);
            char *after = to_json(p);
            json_decref(parse_canonical(after));
            free(after);
        }
        fy_error_free(e);
        free(before);
        fy_policy_free(p);
    }
}
END_TEST

START_TEST(test_secret_values_never_rendered)
{
    static const char value[] = "s3cr3t-VALUE-do-not-print";
    fy_policy *p = mkpol(0, NULL);
    fy_error *e = NULL;
    int rc = fy_policy_add_secret(p, "tok", FY_SECRET_ENV, "API_TOKEN", value, sizeof value - 1, &e);
    ck_assert_msg(rc >= 0, "add_secret: %s", e ? fy_error_message(e) : "");
    fy_error_free(e);
    char *js = to_json(p);
    ck_assert_msg(strstr(js, value) == NULL, "secret value appears in to_json output");
    ck_assert_msg(strstr(js, "s3cr3t") == NULL, "secret value appears in to_json output");
    /* A rejected duplicate does not echo the value either. */
    e = NULL;
    rc = fy_policy_add_secret(p, "tok", FY_SECRET_ENV, "API_TOKEN2", value, sizeof value - 1, &e);
    ck_assert_int_lt(rc, 0);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(fy_error_message(e), "s3cr3t") == NULL, "secret value in an error message");
    fy_error_free(e);
    /* Nor a rejected secret file reference in JSON with a "value" key. */
    e = NULL;
    const char *doc = J({"secrets":[{"name":"x","delivery":"env","target":"X","file":"/etc/fy/x","value":"s3cr3t-json"}]});
    rc = load(p, doc, strlen(doc), &e);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(fy_error_message(e), "s3cr3t") == NULL, "secret value in an error message");
    fy_error_free(e);
    char *js2 = to_json(p);
    ck_assert_str_eq(js, js2);
    free(js2);
    free(js);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_null_arguments)
{
    fy_policy *p = mkpol(0, NULL);
    fy_error *e = NULL;
    int rc = fy_policy_load_json(NULL, "{}", 2, &e);
    ck_assert_int_eq(rc, FY_E_INVAL);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(fy_error_code(e), FY_E_INVAL);
    fy_error_free(e);
    e = NULL;
    rc = fy_policy_load_json(p, NULL, 2, &e);
    ck_assert_int_eq(rc, FY_E_INVAL);
    fy_error_free(e);
    char *out = (char *)"untouched";
    rc = fy_policy_to_json(NULL, &out, NULL);
    ck_assert_int_eq(rc, FY_E_INVAL);
    ck_assert_str_eq(out, "untouched");
    ck_assert_int_eq(fy_policy_to_json(p, NULL, NULL), FY_E_INVAL);
    ck_assert_int_eq(fy_policy_validate(NULL, NULL), FY_E_INVAL);
    fy_policy *q = (fy_policy *)0x1;
    ck_assert_int_lt(fy_policy_new(0, &q, NULL), 0);
    ck_assert_ptr_eq(q, (fy_policy *)0x1);
    ck_assert_int_lt(fy_policy_new(5, &q, NULL), 0);
    ck_assert_int_lt(fy_policy_new(FY_PROFILE_STANDARD_CI, NULL, NULL), 0);
    ck_assert_int_eq(fy_profile_from_name("production"), FY_E_NOTFOUND);
    ck_assert_ptr_null(fy_profile_name(99));
    fy_policy_free(NULL);
    fy_policy_free(p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* setters: the same bad values, a sensible location, nothing changed   */

typedef int (*setter_fn)(fy_policy *p, fy_error **e);

struct setter_case {
    const char *name;
    setter_fn prep; /* valid steps before the snapshot, or NULL */
    setter_fn fn;
    const char *loc; /* '|'-separated substrings one of which the location must contain;
                        NULL: a bad enum/id where any negative code will do */
};

static char *long_path(void) { return path_of_len("/srv", 4096, 200); }

#define SET(id, expr) static int id(fy_policy *p, fy_error **e) { return (expr); }
SET(s_source_rel, fy_policy_set_source(p, "srv/src", 0, e))
SET(s_source_root, fy_policy_set_source(p, "/", 0, e))
SET(s_source_procroot, fy_policy_set_source(p, "/proc/self/root", 0, e))
SET(s_source_dotdot, fy_policy_set_source(p, "/srv/../etc", 0, e))
SET(s_source_trailing, fy_policy_set_source(p, "/srv/src/", 1, e))
SET(s_source_ctrl, fy_policy_set_source(p, "/srv/a\001b", 0, e))
SET(s_build_dslash, fy_policy_set_build(p, "/srv//build", e))
SET(s_build_sys, fy_policy_set_build(p, "/sys/kernel", e))
SET(s_output_dev, fy_policy_set_output(p, "/dev/sda", e))
static int s_output_long(fy_policy *p, fy_error **e)
{
    char *l = long_path();
    int rc = fy_policy_set_output(p, l, e);
    free(l);
    return rc;
}
SET(s_tc_name_dotdot, fy_policy_add_toolchain(p, "..", "/opt/gcc", e))
SET(s_tc_name_slash, fy_policy_add_toolchain(p, "a/b", "/opt/gcc", e))
SET(s_tc_name_empty, fy_policy_add_toolchain(p, "", "/opt/gcc", e))
SET(s_tc_path_rel, fy_policy_add_toolchain(p, "gcc", "opt/gcc", e))
SET(s_tc_path_proc, fy_policy_add_toolchain(p, "gcc", "/proc/1/root/opt", e))
SET(s_bind_target_proc, fy_policy_add_bind(p, "/srv/a", "/proc/x", 0, e))
SET(s_bind_target_root, fy_policy_add_bind(p, "/srv/a", "/", 0, e))
SET(s_bind_target_secrets, fy_policy_add_bind(p, "/srv/a", "/run/secrets/x", 0, e))
SET(s_bind_target_dev, fy_policy_add_bind(p, "/srv/a", "/dev/x", FY_BIND_WRITABLE, e))
SET(s_bind_target_sys, fy_policy_add_bind(p, "/srv/a", "/sys", 0, e))
SET(s_bind_target_rel, fy_policy_add_bind(p, "/srv/a", "opt/a", 0, e))
SET(s_bind_host_root, fy_policy_add_bind(p, "/", "/opt/a", 0, e))
SET(s_bind_host_procroot, fy_policy_add_bind(p, "/proc/self/root", "/opt/a", 0, e))
SET(s_bind_host_dotdot, fy_policy_add_bind(p, "/srv/a/..", "/opt/a", 0, e))
SET(s_bind_flags, fy_policy_add_bind(p, "/srv/a", "/opt/a", 0x80u, e))
SET(s_bind_null, fy_policy_add_bind(p, NULL, "/opt/a", 0, e))
SET(s_bind_a, fy_policy_add_bind(p, "/srv/a", "/opt/x", 0, e))
SET(s_bind_same_target, fy_policy_add_bind(p, "/srv/b", "/opt/x", 0, e))
SET(s_source_ok, fy_policy_set_source(p, "/srv/src", 0, e))
SET(s_bind_onto_source, fy_policy_add_bind(p, "/srv/b", "/work/source", 0, e))
SET(s_runtime_proc, fy_policy_add_runtime_path(p, "/proc", e))
SET(s_runtime_rel, fy_policy_add_runtime_path(p, "usr", e))
SET(s_runtime_secrets, fy_policy_add_runtime_path(p, "/run/secrets", e))
SET(s_runtime_root, fy_policy_add_runtime_path(p, "/", e))
SET(s_workdir_etc, fy_policy_set_workdir(p, "/etc", e))
SET(s_workdir_rel, fy_policy_set_workdir(p, "work/build", e))
SET(s_workdir_workx, fy_policy_set_workdir(p, "/workx", e))
SET(s_hostname_hyphen, fy_policy_set_hostname(p, "-x", e))
SET(s_hostname_empty, fy_policy_set_hostname(p, "", e))
SET(s_hostname_underscore, fy_policy_set_hostname(p, "a_b", e))
static int s_hostname_long(fy_policy *p, fy_error **e)
{
    char *a = repeat('a', 32), *b = repeat('b', 32), *h = xfmt("%s.%s", a, b);
    int rc = fy_policy_set_hostname(p, h, e);
    free(a);
    free(b);
    free(h);
    return rc;
}
SET(s_env_name_digit, fy_policy_set_env(p, "1X", "v", e))
SET(s_env_name_eq, fy_policy_set_env(p, "A=B", "v", e))
SET(s_env_name_empty, fy_policy_set_env(p, "", "v", e))
static int s_env_value_big(fy_policy *p, fy_error **e)
{
    char *v = repeat('v', 128 * 1024 + 1);
    int rc = fy_policy_set_env(p, "A", v, e);
    free(v);
    return rc;
}
SET(s_env_allow_bad, fy_policy_allow_env(p, "A=B", e))
SET(s_env_unset_bad, fy_policy_unset_env(p, "A=B", e))
SET(s_net_zero, fy_policy_set_network(p, 0, e))
SET(s_net_five, fy_policy_set_network(p, 5, e))
SET(s_dns_bad, fy_policy_set_dns(p, 3, e))
SET(s_dest_zero_prefix, fy_policy_add_destination(p, "0.0.0.0/0", FY_PROTO_TCP, 1, 65535, e))
SET(s_dest_v6_zero_prefix, fy_policy_add_destination(p, "::/0", FY_PROTO_TCP, 1, 65535, e))
SET(s_dest_33, fy_policy_add_destination(p, "10.0.0.0/33", FY_PROTO_TCP, 443, 443, e))
SET(s_dest_129, fy_policy_add_destination(p, "fd00::/129", FY_PROTO_UDP, 53, 53, e))
SET(s_dest_badhost, fy_policy_add_destination(p, "bad_host.example", FY_PROTO_TCP, 443, 443, e))
SET(s_dest_emptyhost, fy_policy_add_destination(p, "", FY_PROTO_TCP, 443, 443, e))
SET(s_dest_port0, fy_policy_add_destination(p, "example.org", FY_PROTO_TCP, 0, 80, e))
SET(s_dest_port65536, fy_policy_add_destination(p, "example.org", FY_PROTO_TCP, 1, 65536, e))
SET(s_dest_minmax, fy_policy_add_destination(p, "example.org", FY_PROTO_TCP, 90, 80, e))
SET(s_dest_proto, fy_policy_add_destination(p, "example.org", 3, 80, 80, e))
SET(s_lim_pids0, fy_policy_set_limit(p, FY_LIMIT_PIDS, 0, e))
SET(s_lim_pids_hi, fy_policy_set_limit(p, FY_LIMIT_PIDS, 4194305, e))
SET(s_lim_cpu0, fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, 0, e))
SET(s_lim_cpu_hi, fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, 1024001, e))
SET(s_lim_mem, fy_policy_set_limit(p, FY_LIMIT_MEMORY, 1048575, e))
SET(s_lim_nofile_lo, fy_policy_set_limit(p, FY_LIMIT_NOFILE, 2, e))
SET(s_lim_nofile_hi, fy_policy_set_limit(p, FY_LIMIT_NOFILE, 1048577, e))
SET(s_lim_nofile_unl, fy_policy_set_limit(p, FY_LIMIT_NOFILE, FY_UNLIMITED, e))
SET(s_lim_tmp, fy_policy_set_limit(p, FY_LIMIT_TMP_SIZE, 65535, e))
SET(s_lim_worktmp, fy_policy_set_limit(p, FY_LIMIT_WORK_TMP_SIZE, 65535, e))
SET(s_lim_home, fy_policy_set_limit(p, FY_LIMIT_HOME_SIZE, 65535, e))
SET(s_lim_shm, fy_policy_set_limit(p, FY_LIMIT_SHM_SIZE, 0, e))
SET(s_lim_wall_lo, fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 999, e))
SET(s_lim_wall_hi, fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 2592000000001ull, e))
SET(s_lim_grace, fy_policy_set_limit(p, FY_LIMIT_GRACE, 3600000001ull, e))
SET(s_lim_id0, fy_policy_set_limit(p, 0, 5, e))
SET(s_lim_id19, fy_policy_set_limit(p, FY_LIMIT_MAX_ + 1, 5, e))
SET(s_iso_min_gt_pref, fy_policy_set_isolation(p, FY_LEVEL_CONTAINER, FY_LEVEL_NAMESPACE, e))
SET(s_iso_bad_level, fy_policy_set_isolation(p, FY_LEVEL_CONFIDENTIAL_VM + 1, FY_LEVEL_CONFIDENTIAL_VM + 1, e))
static int s_floor_prep(fy_policy *p, fy_error **e) { (void)e; return setup_floor_namespace(p); }
SET(s_iso_below_floor, fy_policy_set_isolation(p, FY_LEVEL_PROCESS, FY_LEVEL_CONTAINER, e))
SET(s_floor_bad, fy_policy_set_level_floor(p, FY_LEVEL_CONFIDENTIAL_VM + 1, e))
SET(s_control_id0, fy_policy_set_control(p, 0, FY_MODE_REQUIRE, e))
SET(s_control_id15, fy_policy_set_control(p, FY_CONTROL_MAX_ + 1, FY_MODE_REQUIRE, e))
SET(s_control_mode, fy_policy_set_control(p, FY_CONTROL_USERNS, 3, e))
SET(s_user_bad, fy_policy_set_user(p, 3, e))
SET(s_user_zero, fy_policy_set_user(p, 0, e))
SET(s_seccomp_bad, fy_policy_set_seccomp_class(p, 3, e))
SET(s_gpu_bad, fy_policy_set_gpu(p, 3, e))
SET(s_usb_bad, fy_policy_set_usb(p, 0, e))
SET(s_idr_first0, fy_policy_set_id_range(p, 0, 10, e))
SET(s_idr_count0, fy_policy_set_id_range(p, 1, 0, e))
SET(s_idr_wrap, fy_policy_set_id_range(p, 4294967295u, 2, e))
SET(s_dev_tmp, fy_policy_add_device(p, "/tmp/x", 0, e))
SET(s_dev_dev, fy_policy_add_device(p, "/dev", 0, e))
SET(s_dev_dotdot, fy_policy_add_device(p, "/dev/../etc/shadow", 0, e))
SET(s_dev_fuse, fy_policy_add_device(p, "/dev/fuse", 0, e))
SET(s_dev_fuse_rw, fy_policy_add_device(p, "/dev/fuse", 1, e))
SET(s_sec_name_bad, fy_policy_add_secret_file(p, "a b", FY_SECRET_FILE, "t", "/etc/fy/t", e))
SET(s_sec_name_long, fy_policy_add_secret_file(p, "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", FY_SECRET_FILE, "t", "/etc/fy/t", e))
SET(s_sec_delivery_bad, fy_policy_add_secret_file(p, "t", 9, "t", "/etc/fy/t", e))
SET(s_sec_stdin_target, fy_policy_add_secret_file(p, "t", FY_SECRET_STDIN, "T", "/etc/fy/t", e))
SET(s_sec_file_target_slash, fy_policy_add_secret_file(p, "t", FY_SECRET_FILE, "a/b", "/etc/fy/t", e))
SET(s_sec_file_target_dotdot, fy_policy_add_secret_file(p, "t", FY_SECRET_FILE, "..", "/etc/fy/t", e))
SET(s_sec_env_target_bad, fy_policy_add_secret_file(p, "t", FY_SECRET_ENV, "1X", "/etc/fy/t", e))
SET(s_sec_file_rel, fy_policy_add_secret_file(p, "t", FY_SECRET_FILE, "t", "etc/fy/t", e))
SET(s_sec_file_proc, fy_policy_add_secret_file(p, "t", FY_SECRET_FILE, "t", "/proc/self/environ", e))
SET(s_sec_t, fy_policy_add_secret_file(p, "t", FY_SECRET_FILE, "t", "/etc/fy/t", e))
SET(s_sec_t_again, fy_policy_add_secret_file(p, "t", FY_SECRET_FILE, "t2", "/etc/fy/t2", e))
SET(s_sec_stdin_a, fy_policy_add_secret_file(p, "a", FY_SECRET_STDIN, NULL, "/etc/fy/a", e))
SET(s_sec_stdin_b, fy_policy_add_secret_file(p, "b", FY_SECRET_STDIN, NULL, "/etc/fy/b", e))
SET(s_sec_inline_stdin_target, fy_policy_add_secret(p, "t", FY_SECRET_STDIN, "T", "v", 1, e))
SET(s_sec_inline_name_bad, fy_policy_add_secret(p, "", FY_SECRET_ENV, "T", "v", 1, e))

static const struct setter_case SETTERS[] = {
    { "set_source relative", NULL, s_source_rel, "source" },
    { "set_source /", NULL, s_source_root, "source" },
    { "set_source /proc/self/root", NULL, s_source_procroot, "source" },
    { "set_source ..", NULL, s_source_dotdot, "source" },
    { "set_source trailing /", NULL, s_source_trailing, "source" },
    { "set_source control char", NULL, s_source_ctrl, "source" },
    { "set_build //", NULL, s_build_dslash, "build" },
    { "set_build /sys", NULL, s_build_sys, "build" },
    { "set_output /dev", NULL, s_output_dev, "output" },
    { "set_output 4096 bytes", NULL, s_output_long, "output" },
    { "add_toolchain name ..", NULL, s_tc_name_dotdot, "toolchains" },
    { "add_toolchain name a/b", NULL, s_tc_name_slash, "toolchains" },
    { "add_toolchain name empty", NULL, s_tc_name_empty, "toolchains" },
    { "add_toolchain relative path", NULL, s_tc_path_rel, "toolchains" },
    { "add_toolchain /proc path", NULL, s_tc_path_proc, "toolchains" },
    { "add_bind target /proc/x", NULL, s_bind_target_proc, "binds" },
    { "add_bind target /", NULL, s_bind_target_root, "binds" },
    { "add_bind target /run/secrets/x", NULL, s_bind_target_secrets, "binds" },
    { "add_bind target /dev/x", NULL, s_bind_target_dev, "binds" },
    { "add_bind target /sys", NULL, s_bind_target_sys, "binds" },
    { "add_bind target relative", NULL, s_bind_target_rel, "binds" },
    { "add_bind host /", NULL, s_bind_host_root, "binds" },
    { "add_bind host /proc/self/root", NULL, s_bind_host_procroot, "binds" },
    { "add_bind host ..", NULL, s_bind_host_dotdot, "binds" },
    { "add_bind unknown flag", NULL, s_bind_flags, NULL },
    { "add_bind NULL host", NULL, s_bind_null, NULL },
    { "add_bind duplicate target", s_bind_a, s_bind_same_target, "binds|filesystem" },
    { "add_bind onto /work/source", s_source_ok, s_bind_onto_source, "binds|filesystem" },
    { "add_runtime_path /proc", NULL, s_runtime_proc, "runtime_paths" },
    { "add_runtime_path relative", NULL, s_runtime_rel, "runtime_paths" },
    { "add_runtime_path /run/secrets", NULL, s_runtime_secrets, "runtime_paths" },
    { "add_runtime_path /", NULL, s_runtime_root, "runtime_paths" },
    { "set_workdir /etc", NULL, s_workdir_etc, "workdir" },
    { "set_workdir relative", NULL, s_workdir_rel, "workdir" },
    { "set_workdir /workx", NULL, s_workdir_workx, "workdir" },
    { "set_hostname -x", NULL, s_hostname_hyphen, "hostname" },
    { "set_hostname empty", NULL, s_hostname_empty, "hostname" },
    { "set_hostname a_b", NULL, s_hostname_underscore, "hostname" },
    { "set_hostname 65 chars", NULL, s_hostname_long, "hostname" },
    { "set_env 1X", NULL, s_env_name_digit, "environment" },
    { "set_env A=B", NULL, s_env_name_eq, "environment" },
    { "set_env empty name", NULL, s_env_name_empty, "environment" },
    { "set_env value 128 KiB + 1", NULL, s_env_value_big, "environment" },
    { "allow_env A=B", NULL, s_env_allow_bad, "environment" },
    { "unset_env A=B", NULL, s_env_unset_bad, NULL },
    { "set_network 0", NULL, s_net_zero, NULL },
    { "set_network 5", NULL, s_net_five, NULL },
    { "set_dns 3", NULL, s_dns_bad, NULL },
    { "add_destination 0.0.0.0/0", NULL, s_dest_zero_prefix, "destinations" },
    { "add_destination ::/0", NULL, s_dest_v6_zero_prefix, "destinations" },
    { "add_destination /33", NULL, s_dest_33, "destinations" },
    { "add_destination /129", NULL, s_dest_129, "destinations" },
    { "add_destination bad host", NULL, s_dest_badhost, "destinations" },
    { "add_destination empty host", NULL, s_dest_emptyhost, "destinations" },
    { "add_destination port 0", NULL, s_dest_port0, "destinations" },
    { "add_destination port 65536", NULL, s_dest_port65536, "destinations" },
    { "add_destination min > max", NULL, s_dest_minmax, "destinations" },
    { "add_destination bad proto", NULL, s_dest_proto, NULL },
    { "set_limit pids 0", NULL, s_lim_pids0, "pids" },
    { "set_limit pids 4194305", NULL, s_lim_pids_hi, "pids" },
    { "set_limit cpu_millis 0", NULL, s_lim_cpu0, "cpu_millis" },
    { "set_limit cpu_millis 1024001", NULL, s_lim_cpu_hi, "cpu_millis" },
    { "set_limit memory 1 MiB - 1", NULL, s_lim_mem, "memory" },
    { "set_limit nofile 2", NULL, s_lim_nofile_lo, "nofile" },
    { "set_limit nofile 1048577", NULL, s_lim_nofile_hi, "nofile" },
    { "set_limit nofile unlimited", NULL, s_lim_nofile_unl, "nofile" },
    { "set_limit tmp_size 64 KiB - 1", NULL, s_lim_tmp, "tmp_size" },
    { "set_limit work_tmp_size 64 KiB - 1", NULL, s_lim_worktmp, "work_tmp_size" },
    { "set_limit home_size 64 KiB - 1", NULL, s_lim_home, "home_size" },
    { "set_limit shm_size 0", NULL, s_lim_shm, "shm_size" },
    { "set_limit wall_time 999us", NULL, s_lim_wall_lo, "wall_time" },
    { "set_limit wall_time 30 days + 1us", NULL, s_lim_wall_hi, "wall_time" },
    { "set_limit grace 1 h + 1us", NULL, s_lim_grace, "grace" },
    { "set_limit id 0", NULL, s_lim_id0, NULL },
    { "set_limit id MAX+1", NULL, s_lim_id19, NULL },
    { "set_isolation min > preferred", NULL, s_iso_min_gt_pref, "isolation" },
    { "set_isolation bad level", NULL, s_iso_bad_level, NULL },
    { "set_isolation below the floor", s_floor_prep, s_iso_below_floor, "isolation" },
    { "set_level_floor bad level", NULL, s_floor_bad, NULL },
    { "set_control id 0", NULL, s_control_id0, NULL },
    { "set_control id MAX+1", NULL, s_control_id15, NULL },
    { "set_control mode 3", NULL, s_control_mode, NULL },
    { "set_user 3", NULL, s_user_bad, NULL },
    { "set_user 0", NULL, s_user_zero, NULL },
    { "set_seccomp_class 3", NULL, s_seccomp_bad, NULL },
    { "set_gpu 3", NULL, s_gpu_bad, NULL },
    { "set_usb 0", NULL, s_usb_bad, NULL },
    { "set_id_range first 0", NULL, s_idr_first0, "id_range" },
    { "set_id_range count 0", NULL, s_idr_count0, "id_range" },
    { "set_id_range wraps", NULL, s_idr_wrap, "id_range" },
    { "add_device /tmp/x", NULL, s_dev_tmp, "devices" },
    { "add_device /dev", NULL, s_dev_dev, "devices" },
    { "add_device /dev/../etc/shadow", NULL, s_dev_dotdot, "devices" },
    { "add_device duplicate", s_dev_fuse, s_dev_fuse_rw, "devices" },
    { "add_secret_file bad name", NULL, s_sec_name_bad, "secrets" },
    { "add_secret_file 65-char name", NULL, s_sec_name_long, "secrets" },
    { "add_secret_file bad delivery", NULL, s_sec_delivery_bad, NULL },
    { "add_secret_file stdin with target", NULL, s_sec_stdin_target, "secrets" },
    { "add_secret_file file target a/b", NULL, s_sec_file_target_slash, "secrets" },
    { "add_secret_file file target ..", NULL, s_sec_file_target_dotdot, "secrets" },
    { "add_secret_file env target 1X", NULL, s_sec_env_target_bad, "secrets" },
    { "add_secret_file relative file", NULL, s_sec_file_rel, "secrets" },
    { "add_secret_file /proc file", NULL, s_sec_file_proc, "secrets" },
    { "add_secret_file duplicate name", s_sec_t, s_sec_t_again, "secrets" },
    { "add_secret_file second stdin", s_sec_stdin_a, s_sec_stdin_b, "secrets" },
    { "add_secret stdin with target", NULL, s_sec_inline_stdin_target, "secrets" },
    { "add_secret empty name", NULL, s_sec_inline_name_bad, "secrets" },
};
#define N_SETTERS (sizeof(SETTERS) / sizeof(SETTERS[0]))

static bool loc_contains_one(const char *loc, const char *subs)
{
    if (!loc)
        return false;
    char *copy = strdup(subs), *save = NULL;
    bool found = false;
    for (char *t = strtok_r(copy, "|", &save); t; t = strtok_r(NULL, "|", &save))
        found |= strstr(loc, t) != NULL;
    free(copy);
    return found;
}

static void setter_reject_check(const struct setter_case *c)
{
    case_begin(c->name);
    fy_policy *p = mkpol(0, NULL);
    if (c->prep) {
        fy_error *pe = NULL;
        int prc = c->prep(p, &pe);
        ck_assert_msg(prc >= 0, "%s: preparation failed: %s", c->name, pe ? fy_error_message(pe) : "");
        fy_error_free(pe);
    }
    char *before = to_json(p);
    fy_error *e = NULL;
    int rc = c->fn(p, &e);
    ck_assert_msg(rc < 0, "%s: accepted", c->name);
    ck_assert_msg(e != NULL, "%s: no error object", c->name);
    ck_assert_msg(fy_error_code(e) == rc, "%s: fy_error_code %d != rc %d", c->name, fy_error_code(e), rc);
    ck_assert_msg(fy_error_message(e) && *fy_error_message(e), "%s: empty message", c->name);
    if (c->loc) {
        ck_assert_msg(rc == FY_E_POLICY || rc == FY_E_RANGE || rc == FY_E_INVAL, "%s: unexpected code %s", c->name,
                      fy_error_name(rc));
        const char *loc = fy_error_location(e);
        ck_assert_msg(loc_contains_one(loc, c->loc) && loc[0] == '$', "%s: location '%s' does not name %s (%s)",
                      c->name, loc ? loc : "(null)", c->loc, fy_error_message(e));
    }
    fy_error_free(e);
    char *after = to_json(p);
    ck_assert_msg(strcmp(before, after) == 0, "%s: a rejected setter changed the policy:\n%.1500s\n----\n%.1500s", c->name,
                  before, after);
    /* Also without an error out-parameter. */
    int rc2 = c->fn(p, NULL);
    ck_assert_msg(rc2 == rc, "%s: rc %d without reterr, %d with", c->name, rc2, rc);
    free(after);
    after = to_json(p);
    ck_assert_msg(strcmp(before, after) == 0, "%s: a rejected setter changed the policy (no reterr)", c->name);
    free(after);
    free(before);
    fy_policy_free(p);
}

START_TEST(test_setter_rejects)
{
    for (size_t i = 0; i < N_SETTERS; i++)
        setter_reject_check(&SETTERS[i]);
}
END_TEST

/* The setters accept the boundaries. */
START_TEST(test_setter_boundaries)
{
    static const struct { uint32_t id; uint64_t v; } ok[] = {
        { FY_LIMIT_PIDS, 1 }, { FY_LIMIT_PIDS, 4194304 }, { FY_LIMIT_CPU_MILLIS, 1 }, { FY_LIMIT_CPU_MILLIS, 1024000 },
        { FY_LIMIT_MEMORY, 1048576 }, { FY_LIMIT_NOFILE, 3 }, { FY_LIMIT_NOFILE, 1048576 },
        { FY_LIMIT_TMP_SIZE, 65536 }, { FY_LIMIT_WORK_TMP_SIZE, 65536 }, { FY_LIMIT_HOME_SIZE, 65536 },
        { FY_LIMIT_SHM_SIZE, 65536 }, { FY_LIMIT_WALL_TIME, 1000 }, { FY_LIMIT_WALL_TIME, 2592000000000ull },
        { FY_LIMIT_GRACE, 0 }, { FY_LIMIT_GRACE, 3600000000ull }, { FY_LIMIT_DISK, 1 }, { FY_LIMIT_CORE, 0 },
    };
    for (size_t i = 0; i < NA(ok); i++) {
        fy_policy *p = mkpol(0, NULL);
        fy_error *e = NULL;
        int rc = fy_policy_set_limit(p, ok[i].id, ok[i].v, &e);
        ck_assert_msg(rc >= 0, "set_limit(%u, %llu) rejected: %s", ok[i].id, (unsigned long long)ok[i].v,
                      e ? fy_error_message(e) : "");
        fy_error_free(e);
        uint64_t v = 0;
        ck_assert_int_ge(fy_policy_get_limit(p, ok[i].id, &v), 0);
        ck_assert(v == ok[i].v);
        assert_roundtrip("setter boundary", p, DEFAULT_PROFILE);
        fy_policy_free(p);
    }
    fy_policy *p = mkpol(0, NULL);
    ck_assert_int_ge(fy_policy_set_source(p, "/srv/src", 1, NULL), 0);
    ck_assert_int_ge(fy_policy_add_bind(p, "/srv/a", "/procfs", 0, NULL), 0);
    ck_assert_int_ge(fy_policy_add_bind(p, "/srv/a", "/run/secretsx", FY_BIND_WRITABLE | FY_BIND_OPTIONAL, NULL), 0);
    ck_assert_int_ge(fy_policy_add_toolchain(p, "gcc-12.2+x", "/opt/gcc", NULL), 0);
    ck_assert_int_ge(fy_policy_set_id_range(p, 1, 1, NULL), 0);
    ck_assert_int_ge(fy_policy_set_hostname(p, "a-b.c-d", NULL), 0);
    ck_assert_int_ge(fy_policy_set_env(p, "_A1", "", NULL), 0);
    ck_assert_int_ge(fy_policy_add_secret_file(p, "s", FY_SECRET_STDIN, NULL, "/etc/fy/s", NULL), 0);
    ck_assert_int_ge(fy_policy_validate(p, NULL), 0);
    assert_roundtrip("setter values", p, DEFAULT_PROFILE);
    fy_policy_free(p);
}
END_TEST

/* Cross-field rules through the setters: the conflicting setter or
 * fy_policy_validate must fail; the near miss passes both. */
typedef int (*cross_fn)(fy_policy *p, bool bad, fy_error **e);

static int normalize_net(fy_policy *p)
{
    const char *doc = J({"network":{"mode":"deny","dns":"none","destinations":[]},"devices":{"gpu":"deny","usb":"deny","allowed":[]}});
    return fy_policy_load_json(p, doc, strlen(doc), NULL);
}

#define STEP(expr) do { if (rc >= 0) { rc = (expr); } } while (0)

static int x_deny_dest(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    if (bad)
        STEP(fy_policy_add_destination(p, "example.org", FY_PROTO_TCP, 443, 443, e));
    return rc;
}
static int x_restricted_nodest(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    STEP(fy_policy_set_network(p, FY_NET_RESTRICTED, e));
    if (!bad)
        STEP(fy_policy_add_destination(p, "example.org", FY_PROTO_TCP, 443, 443, e));
    return rc;
}
static int x_fetch_nodest(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    STEP(fy_policy_set_network(p, FY_NET_FETCH_ONLY, e));
    if (!bad)
        STEP(fy_policy_add_destination(p, "deb.debian.org", FY_PROTO_TCP, 80, 80, e));
    return rc;
}
static int x_dns_host_deny(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    STEP(fy_policy_set_dns(p, bad ? FY_DNS_HOST : FY_DNS_NONE, e));
    return rc;
}
static int x_netns_allow(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    STEP(fy_policy_set_control(p, FY_CONTROL_NETNS, FY_MODE_REQUIRE, e));
    STEP(fy_policy_set_network(p, bad ? FY_NET_ALLOW : FY_NET_DENY, e));
    return rc;
}
static int x_mem_unlimited(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_REQUIRE, e);
    STEP(fy_policy_set_limit(p, FY_LIMIT_MEMORY, bad ? FY_UNLIMITED : 1ull << 30, e));
    return rc;
}
static int x_pids_unlimited(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_control(p, FY_CONTROL_PIDS_LIMIT, FY_MODE_REQUIRE, e);
    STEP(fy_policy_set_limit(p, FY_LIMIT_PIDS, bad ? FY_UNLIMITED : 1024, e));
    return rc;
}
static int x_cpu_unlimited(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_control(p, FY_CONTROL_CPU_LIMIT, FY_MODE_REQUIRE, e);
    STEP(fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, bad ? FY_UNLIMITED : 2000, e));
    return rc;
}
static int x_unlimited_then_require(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_PREFER, e);
    STEP(fy_policy_set_limit(p, FY_LIMIT_MEMORY, FY_UNLIMITED, e));
    STEP(fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, bad ? FY_MODE_REQUIRE : FY_MODE_PREFER, e));
    return rc;
}
static int x_gpu_nodev(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    if (!bad)
        STEP(fy_policy_add_device(p, "/dev/dri/renderD128", 1, e));
    STEP(fy_policy_set_gpu(p, FY_DEVICES_LEASED, e));
    return rc;
}
static int x_usb_nodev(fy_policy *p, bool bad, fy_error **e)
{
    int rc = normalize_net(p);
    if (!bad)
        STEP(fy_policy_add_device(p, "/dev/bus/usb/001/002", 1, e));
    STEP(fy_policy_set_usb(p, FY_DEVICES_LEASED, e));
    return rc;
}
static int x_env_set_allowed(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_env(p, "TERM", "dumb", e);
    STEP(fy_policy_allow_env(p, bad ? "TERM" : "TZ", e));
    return rc;
}
static int x_env_allowed_set(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_allow_env(p, "TERM", e);
    STEP(fy_policy_set_env(p, bad ? "TERM" : "LANG", "C", e));
    return rc;
}
static int x_secret_env_collides(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_env(p, "API_TOKEN", "x", e);
    STEP(fy_policy_add_secret_file(p, "t", FY_SECRET_ENV, bad ? "API_TOKEN" : "API_TOKEN2", "/etc/fy/t", e));
    return rc;
}
static int x_secret_dup_target(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_add_secret_file(p, "a", FY_SECRET_FILE, "key", "/etc/fy/a", e);
    STEP(fy_policy_add_secret_file(p, "b", FY_SECRET_FILE, bad ? "key" : "key2", "/etc/fy/b", e));
    return rc;
}
static int x_source_then_bind(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_set_source(p, "/srv/src", 0, e);
    STEP(fy_policy_add_bind(p, "/srv/o", bad ? "/work/source" : "/work/source2", 0, e));
    return rc;
}
static int x_bind_then_source(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_add_bind(p, "/srv/o", bad ? "/work/source" : "/work/source2", 0, e);
    STEP(fy_policy_set_source(p, "/srv/src", 0, e));
    return rc;
}
static int x_bind_then_build(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_add_bind(p, "/srv/o", bad ? "/work/build" : "/work/build2", 0, e);
    STEP(fy_policy_set_build(p, "/srv/build", e));
    return rc;
}
static int x_toolchain_bind(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_add_toolchain(p, "gcc", "/opt/gcc", e);
    STEP(fy_policy_add_bind(p, "/srv/o", bad ? "/toolchains/gcc" : "/opt/clang", 0, e));
    return rc;
}
static int x_runtime_bind(fy_policy *p, bool bad, fy_error **e)
{
    int rc = fy_policy_add_bind(p, "/srv/o", bad ? "/usr" : "/usr2", 0, e);
    STEP(fy_policy_add_runtime_path(p, "/usr", e));
    return rc;
}
static int x_workdir(fy_policy *p, bool bad, fy_error **e)
{
    int rc = 0;
    if (!bad)
        STEP(fy_policy_add_bind(p, "/srv/p", "/opt/proj", 0, e));
    STEP(fy_policy_set_workdir(p, "/opt/proj/sub", e));
    return rc;
}
static int x_floor_then_isolation(fy_policy *p, bool bad, fy_error **e)
{
    int rc = setup_floor_namespace(p);
    STEP(fy_policy_set_isolation(p, bad ? FY_LEVEL_PROCESS : FY_LEVEL_NAMESPACE, FY_LEVEL_VIRTUAL_MACHINE, e));
    return rc;
}
static int x_json_floor(fy_policy *p, bool bad, fy_error **e)
{
    /* The floor survives a "profile" reset. */
    int rc = setup_floor_namespace(p);
    const char *doc = bad ? J({"profile":"development","isolation":{"min_level":"none","preferred_level":"namespace"}})
                          : J({"profile":"development","isolation":{"min_level":"namespace","preferred_level":"namespace"}});
    STEP(fy_policy_load_json(p, doc, strlen(doc), e));
    return rc;
}

static const struct cross_case {
    const char *name;
    cross_fn fn;
    const char *loc;
} CROSS[] = {
    { "deny + destination", x_deny_dest, "network" },
    { "restricted without destinations", x_restricted_nodest, "network" },
    { "fetch-only without destinations", x_fetch_nodest, "network" },
    { "dns host + deny", x_dns_host_deny, "network" },
    { "netns required + network allow", x_netns_allow, "network|netns" },
    { "memory-limit required + memory unlimited", x_mem_unlimited, "memory" },
    { "pids-limit required + pids unlimited", x_pids_unlimited, "pids" },
    { "cpu-limit required + cpu unlimited", x_cpu_unlimited, "cpu" },
    { "memory unlimited, then memory-limit required", x_unlimited_then_require, "memory" },
    { "gpu leased without a device", x_gpu_nodev, "gpu|devices" },
    { "usb leased without a device", x_usb_nodev, "usb|devices" },
    { "env set, then allowed", x_env_set_allowed, "environment" },
    { "env allowed, then set", x_env_allowed_set, "environment" },
    { "env secret target collides with env", x_secret_env_collides, "secrets|environment" },
    { "two file secrets with one target", x_secret_dup_target, "secrets" },
    { "source, then a bind onto /work/source", x_source_then_bind, "binds|source|filesystem" },
    { "a bind onto /work/source, then source", x_bind_then_source, "binds|source|filesystem" },
    { "a bind onto /work/build, then build", x_bind_then_build, "binds|build|filesystem" },
    { "toolchain + bind onto it", x_toolchain_bind, "binds|toolchains|filesystem" },
    { "bind + runtime path onto it", x_runtime_bind, "binds|runtime_paths|filesystem" },
    { "workdir outside every mount", x_workdir, "workdir" },
    { "floor, then a weaker min_level", x_floor_then_isolation, "isolation" },
    { "floor survives a profile reset", x_json_floor, "isolation|profile" },
};
#define N_CROSS (sizeof(CROSS) / sizeof(CROSS[0]))

static void cross_check(const struct cross_case *c)
{
    case_begin(c->name);
    /* Near miss: every step and fy_policy_validate succeed. */
    fy_policy *p = mkpol(0, NULL);
    fy_error *e = NULL;
    int rc = c->fn(p, false, &e);
    ck_assert_msg(rc >= 0, "%s (near miss): step failed: %s at %s", c->name, e ? fy_error_message(e) : "",
                  e ? fy_error_location(e) : "");
    fy_error_free(e);
    e = NULL;
    rc = fy_policy_validate(p, &e);
    ck_assert_msg(rc >= 0, "%s (near miss): validate failed: %s at %s", c->name, e ? fy_error_message(e) : "",
                  e ? fy_error_location(e) : "");
    fy_error_free(e);
    fy_policy_free(p);

    /* The conflict: caught by the setter or by fy_policy_validate. */
    p = mkpol(0, NULL);
    e = NULL;
    rc = c->fn(p, true, &e);
    bool at_validate = false;
    if (rc >= 0) {
        fy_error_free(e);
        e = NULL;
        rc = fy_policy_validate(p, &e);
        at_validate = true;
    }
    ck_assert_msg(rc < 0, "%s: neither the setters nor fy_policy_validate rejected it", c->name);
    ck_assert_msg(e != NULL, "%s: no error object", c->name);
    ck_assert_msg(fy_error_code(e) == rc, "%s: fy_error_code %d != rc %d", c->name, fy_error_code(e), rc);
    if (at_validate)
        ck_assert_msg(rc == FY_E_POLICY, "%s: fy_policy_validate returned %s", c->name, fy_error_name(rc));
    const char *loc = fy_error_location(e);
    ck_assert_msg(loc && loc[0] == '$' && loc_contains_one(loc, c->loc), "%s: location '%s' does not name %s",
                  c->name, loc ? loc : "(null)", c->loc);
    ck_assert_msg(fy_error_message(e) && *fy_error_message(e), "%s: empty message", c->name);
    fy_error_free(e);
    fy_policy_free(p);
}

START_TEST(test_setter_cross_field)
{
    for (size_t i = 0; i < N_CROSS; i++)
        cross_check(&CROSS[i]);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *policy_validate_suite(void)
{
    Suite *s = suite_create("policy-validate");
    TCase *tc;

    /* Each test is a table of cases (see the comment at the top). */
    tc = tcase_create("reject");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_reject_table);
    tcase_add_test(tc, test_path_shapes);
    tcase_add_test(tc, test_path_max_lengths);
    tcase_add_test(tc, test_host_special);
    tcase_add_test(tc, test_target_special);
    tcase_add_test(tc, test_host_nearmiss);
    tcase_add_test(tc, test_target_nearmiss);
    tcase_add_test(tc, test_destination_bad_host);
    tcase_add_test(tc, test_destination_good_host);
    tcase_add_test(tc, test_lengths);
    tcase_add_test(tc, test_env_total);
    tcase_add_test(tc, test_large_valid_policy_roundtrips);
    tcase_add_test(tc, test_raw_buffers);
    tcase_add_test(tc, test_invalid_utf8);
    tcase_add_test(tc, test_input_size_limit);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_many_entries_fast);
    suite_add_tcase(s, tc);

    tc = tcase_create("accept");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_profile_canonical_roundtrip);
    tcase_add_test(tc, test_profile_key_resets);
    tcase_add_test(tc, test_profile_applied_first);
    tcase_add_test(tc, test_null_clears_mounts);
    tcase_add_test(tc, test_empty_documents_change_nothing);
    tcase_add_test(tc, test_mutations_change_the_policy);
    tcase_add_test(tc, test_full_document);
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_unlimited_where_allowed);
    tcase_add_test(tc, test_size_above_int64);
    tcase_add_test(tc, test_secret_values_never_rendered);
    tcase_add_test(tc, test_null_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("setters");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_setter_rejects);
    tcase_add_test(tc, test_setter_boundaries);
    tcase_add_test(tc, test_setter_cross_field);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    install_case_note();
    SRunner *sr = srunner_create(policy_validate_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
