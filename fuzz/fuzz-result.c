/* Fuzz target: the evidence record, fy_result_to_json. The input is decoded
 * into a result made with result_new() (any field, any value, any bytes in
 * its strings), rendered, parsed back with jansson and checked member by
 * member against the schema in forgeyard-sandbox(7), EVIDENCE RECORD.
 *
 * Input: lines "KEY VALUE". Numeric keys take a decimal or 0x-hex value,
 * optionally negative (taken modulo 2^64, then cut to the field's width):
 *   outcome exit signal cancel level step os output truncated known prestarted
 *   stage.N usage.N left.N            (N indexes the field's array)
 * String keys take the rest of the line, with \n, \\ and \xHH escapes; any
 * other byte is taken as it is. A result string is a C string, so a NUL
 * (raw or \x00) ends it:
 *   detail kernel backend source contract isolation cgroup
 * A string key that is absent leaves the member NULL. Unknown keys are
 * ignored; a later line overrides an earlier one. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)     \
    do {                \
        if (!(cond))    \
            abort();    \
    } while (0)

/* ---- decoding ---------------------------------------------------------- */

static uint64_t parse_num(const char *v, size_t n) {
    size_t i = 0;
    bool neg = false;
    uint64_t x = 0;
    if (i < n && v[i] == '-') {
        neg = true;
        i++;
    }
    if (i + 1 < n && v[i] == '0' && (v[i + 1] == 'x' || v[i + 1] == 'X')) {
        for (i += 2; i < n; i++) {
            char c = v[i];
            unsigned d;
            if (c >= '0' && c <= '9')
                d = (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = (unsigned)(c - 'A' + 10);
            else
                break;
            x = x * 16 + d;
        }
    } else {
        for (; i < n && v[i] >= '0' && v[i] <= '9'; i++)
            x = x * 10 + (uint64_t)(v[i] - '0');
    }
    return neg ? 0 - x : x;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Unescapes v[0..n) into a new NUL-terminated string, stopping at the first
 * NUL it produces. */
static char *parse_str(const char *v, size_t n, size_t *ret_len) {
    char *s = malloc(n + 1);
    size_t o = 0;
    if (!s)
        abort();
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '\\' && i + 1 < n) {
            if (v[i + 1] == 'n') {
                c = '\n';
                i++;
            } else if (v[i + 1] == '\\') {
                i++;
            } else if (v[i + 1] == 'x' && i + 3 < n && hexval(v[i + 2]) >= 0 && hexval(v[i + 3]) >= 0) {
                c = (char)(hexval(v[i + 2]) * 16 + hexval(v[i + 3]));
                i += 3;
            }
        }
        if (c == '\0')
            break;
        s[o++] = c;
    }
    s[o] = '\0';
    if (ret_len)
        *ret_len = o;
    return s;
}

static void set_str(char **field, const char *v, size_t n) {
    free(*field);
    *field = parse_str(v, n, NULL);
}

/* "stage.N": the index N when key starts with prefix and N < count. */
static bool indexed(const char *k, size_t kn, const char *prefix, size_t count, size_t *ret) {
    size_t pl = strlen(prefix);
    if (kn <= pl || memcmp(k, prefix, pl) != 0)
        return false;
    uint64_t i = parse_num(k + pl, kn - pl);
    if (k[pl] < '0' || k[pl] > '9' || i >= count)
        return false;
    *ret = (size_t)i;
    return true;
}

static bool key_is(const char *k, size_t kn, const char *name) {
    return kn == strlen(name) && memcmp(k, name, kn) == 0;
}

static void decode(fy_result *r, char **usage_source, const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *sp = memchr(p, ' ', (size_t)(le - p));
        const char *k = p, *v = sp ? sp + 1 : le;
        size_t kn = (size_t)((sp ? sp : le) - p), vn = (size_t)(le - v);
        uint64_t x = parse_num(v, vn);
        size_t i;
        if (key_is(k, kn, "outcome"))
            r->outcome = (uint32_t)x;
        else if (key_is(k, kn, "exit"))
            r->exit_code = (int)(int32_t)(uint32_t)x;
        else if (key_is(k, kn, "signal"))
            r->signal = (int)(int32_t)(uint32_t)x;
        else if (key_is(k, kn, "cancel"))
            r->cancel_reason = (uint32_t)x;
        else if (key_is(k, kn, "level"))
            r->level = (uint32_t)x;
        else if (key_is(k, kn, "step"))
            r->err_step = (uint32_t)x;
        else if (key_is(k, kn, "os"))
            r->err_os = (int64_t)x;
        else if (key_is(k, kn, "output"))
            r->output_bytes = x;
        else if (key_is(k, kn, "limit"))
            r->output_limit = x;
        else if (key_is(k, kn, "truncated"))
            r->truncated = x != 0;
        else if (key_is(k, kn, "prestarted"))
            r->prestarted = x != 0;
        else if (key_is(k, kn, "known"))
            r->usage_known = (uint32_t)x;
        else if (indexed(k, kn, "stage.", FY_ARRAY_SIZE(r->stage), &i))
            r->stage[i] = x;
        else if (indexed(k, kn, "usage.", FY_ARRAY_SIZE(r->usage), &i))
            r->usage[i] = x;
        else if (indexed(k, kn, "left.", FY_ARRAY_SIZE(r->left), &i))
            r->left[i] = x;
        else if (key_is(k, kn, "detail"))
            set_str(&r->detail, v, vn);
        else if (key_is(k, kn, "kernel"))
            set_str(&r->kernel, v, vn);
        else if (key_is(k, kn, "backend"))
            set_str(&r->backend, v, vn);
        else if (key_is(k, kn, "source"))
            set_str(usage_source, v, vn);
        else if (key_is(k, kn, "isolation"))
            set_str(&r->isolation_json, v, vn);
        else if (key_is(k, kn, "cgroup"))
            set_str(&r->cgroup_json, v, vn);
        else if (key_is(k, kn, "contract")) {
            /* The whole buffer may be filled: the library must not rely on
             * a terminating NUL inside it. */
            size_t n;
            char *s = parse_str(v, vn, &n);
            memset(r->contract_id, 0, sizeof(r->contract_id));
            memcpy(r->contract_id, s, n < sizeof(r->contract_id) ? n : sizeof(r->contract_id));
            free(s);
        }
        p = nl ? nl + 1 : end;
    }
    r->usage_source = *usage_source;
}

/* ---- the oracle ---------------------------------------------------------- */

#define MAX_ALTERED 32
struct expect {
    const char *altered[MAX_ALTERED];
    size_t naltered;
};

static void expect_altered(struct expect *e, const char *path) {
    CHECK(e->naltered < MAX_ALTERED);
    e->altered[e->naltered++] = path;
}

/* The documented rendering of s[0..n): every byte that does not start a
 * well-formed UTF-8 sequence becomes U+FFFD. Whether a sequence is
 * well-formed is asked of jansson, independently of the library's check. */
static char *expected_text(const char *s, size_t n, bool *ret_altered, size_t *ret_len) {
    char *o = malloc(3 * n + 1);
    size_t on = 0;
    CHECK(o);
    *ret_altered = false;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : c < 0xC0 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 0;
        bool ok = false;
        if (len == 1)
            ok = true;
        else if (len && i + len <= n) {
            json_t *t = json_stringn(s + i, len);
            ok = t != NULL;
            json_decref(t);
        }
        if (ok) {
            memcpy(o + on, s + i, len);
            on += len;
            i += len;
        } else {
            memcpy(o + on, "\xEF\xBF\xBD", 3);
            on += 3;
            i++;
            *ret_altered = true;
        }
    }
    o[on] = '\0';
    *ret_len = on;
    return o;
}

static void check_text(struct expect *e, json_t *v, const char *path, const char *s, size_t n) {
    if (!s) {
        CHECK(json_is_null(v));
        return;
    }
    CHECK(json_is_string(v));
    bool altered;
    size_t len;
    char *want = expected_text(s, n, &altered, &len);
    CHECK(json_string_length(v) == len && memcmp(json_string_value(v), want, len) == 0);
    free(want);
    if (altered)
        expect_altered(e, path);
}

static void check_count(struct expect *e, json_t *v, const char *path, uint64_t x) {
    CHECK(json_is_integer(v));
    if (x > (uint64_t)INT64_MAX) {
        CHECK(json_integer_value(v) == INT64_MAX);
        expect_altered(e, path);
    } else {
        CHECK(json_integer_value(v) == (json_int_t)x);
    }
}

static void check_name(json_t *v, const char *name) {
    CHECK(json_is_string(v));
    CHECK(strcmp(json_string_value(v), name ? name : "unknown") == 0);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The backend's JSON as the library must take it: an object, or NULL. */
static json_t *backend_object(const char *text) {
    json_t *v = json_loads(text, 0, NULL);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

static void check_record(const fy_result *r, const char *out) {
    static const char *const stages[] = {NULL, "prepare", "isolation", "filesystem", "exec", "run", "output",
                                         "cleanup", "claim"};
    static const char *const stage_paths[] = {NULL, "stage_usec.prepare", "stage_usec.isolation",
                                              "stage_usec.filesystem", "stage_usec.exec", "stage_usec.run",
                                              "stage_usec.output", "stage_usec.cleanup", "stage_usec.claim"};
    static const char *const usages[] = {NULL, "wall_usec", "cpu_user_usec", "cpu_system_usec",
                                         "memory_peak_bytes", "io_read_bytes", "io_write_bytes", "processes",
                                         "stdout_bytes", "stderr_bytes"};
    static const char *const usage_paths[] = {NULL, "usage.wall_usec", "usage.cpu_user_usec",
                                              "usage.cpu_system_usec", "usage.memory_peak_bytes",
                                              "usage.io_read_bytes", "usage.io_write_bytes",
                                              "usage.processes", "usage.stdout_bytes", "usage.stderr_bytes"};
    static const char *const lefts[] = {NULL, "processes_left", "mounts_left", "cgroups_left", "files_left",
                                        "network_left"};
    static const char *const left_paths[] = {NULL, "cleanup.processes_left", "cleanup.mounts_left",
                                             "cleanup.cgroups_left", "cleanup.files_left",
                                             "cleanup.network_left"};
    struct expect e = {.naltered = 0};
    json_error_t jerr;
    json_t *doc = json_loads(out, JSON_REJECT_DUPLICATES, &jerr);
    CHECK(json_is_object(doc));

    /* Canonical: sorted keys, two-space indent, nothing else. */
    char *again = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
    CHECK(again && strcmp(again, out) == 0);
    free(again);

    json_t *v;
    size_t keys = 19;
    v = json_object_get(doc, "version");
    CHECK(json_is_integer(v) && json_integer_value(v) == 1);
    v = json_object_get(doc, "library");
    CHECK(json_is_string(v) && strcmp(json_string_value(v), fy_version_string()) == 0);
    check_text(&e, json_object_get(doc, "kernel"), "kernel", r->kernel, r->kernel ? strlen(r->kernel) : 0);
    size_t cid = strnlen(r->contract_id, sizeof(r->contract_id));
    check_text(&e, json_object_get(doc, "contract_id"), "contract_id", cid ? r->contract_id : NULL, cid);
    check_name(json_object_get(doc, "outcome"), fy_outcome_name(r->outcome));
    v = json_object_get(doc, "exit_code");
    if (r->exit_code >= 0)
        CHECK(json_is_integer(v) && json_integer_value(v) == r->exit_code);
    else
        CHECK(json_is_null(v));
    v = json_object_get(doc, "signal");
    if (r->signal)
        CHECK(json_is_integer(v) && json_integer_value(v) == r->signal);
    else
        CHECK(json_is_null(v));
    v = json_object_get(doc, "cancel_reason");
    if (r->cancel_reason)
        check_name(v, fy_cancel_reason_name(r->cancel_reason));
    else
        CHECK(json_is_null(v));
    check_text(&e, json_object_get(doc, "detail"), "detail", r->detail, r->detail ? strlen(r->detail) : 0);
    if (r->outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE) {
        keys += 2;
        check_name(json_object_get(doc, "error_step"), fy_step_name(r->err_step));
        v = json_object_get(doc, "error_os_code");
        CHECK(json_is_integer(v) && json_integer_value(v) == r->err_os);
    } else {
        CHECK(!json_object_get(doc, "error_step") && !json_object_get(doc, "error_os_code"));
    }
    check_text(&e, json_object_get(doc, "backend"), "backend", r->backend, r->backend ? strlen(r->backend) : 0);
    check_name(json_object_get(doc, "level"), fy_level_name(r->level));

    json_t *st = json_object_get(doc, "stage_usec");
    CHECK(json_is_object(st) && json_object_size(st) == 8);
    for (size_t s = 1; s <= 8; s++)
        check_count(&e, json_object_get(st, stages[s]), stage_paths[s], r->stage[s]);
    check_count(&e, json_object_get(doc, "output_bytes"), "output_bytes", r->output_bytes);
    v = json_object_get(doc, "output_truncated");
    CHECK(json_is_boolean(v) && json_is_true(v) == r->truncated);
    v = json_object_get(doc, "output_limit");
    if (r->output_limit && r->output_limit != FY_UNLIMITED)
        check_count(&e, v, "output_limit", r->output_limit);
    else
        CHECK(json_is_null(v));

    v = json_object_get(doc, "isolation");
    CHECK(json_is_object(v));
    json_t *want = r->isolation_json ? backend_object(r->isolation_json) : json_object();
    /* Core adds whether the sandbox was a pre-started shell (its value wins). */
    CHECK(want && json_object_set_new(want, "prestarted", json_boolean(r->prestarted)) == 0);
    CHECK(json_equal(v, want));
    json_decref(want);

    json_t *us = json_object_get(doc, "usage");
    CHECK(json_is_object(us) && json_object_size(us) == 10);
    for (uint32_t k = FY_USAGE_WALL_USEC; k <= FY_USAGE_STDERR_BYTES; k++) {
        v = json_object_get(us, usages[k]);
        if (r->usage_known & (1u << k))
            check_count(&e, v, usage_paths[k], r->usage[k]);
        else
            CHECK(json_is_null(v));
    }
    check_text(&e, json_object_get(us, "source"), "usage.source", r->usage_source,
               r->usage_source ? strlen(r->usage_source) : 0);

    json_t *cl = json_object_get(doc, "cleanup");
    CHECK(json_is_object(cl) && json_object_size(cl) == 5);
    for (size_t k = 1; k <= 5; k++)
        check_count(&e, json_object_get(cl, lefts[k]), left_paths[k], r->left[k]);

    v = json_object_get(doc, "limits");
    if (r->cgroup_json) {
        want = backend_object(r->cgroup_json);
        CHECK(want && json_is_object(v) && json_equal(v, want));
        json_decref(want);
    } else {
        CHECK(json_is_null(v));
    }

    /* "altered": present exactly when something was altered, sorted. */
    v = json_object_get(doc, "altered");
    if (e.naltered) {
        keys++;
        qsort(e.altered, e.naltered, sizeof(e.altered[0]), cmp_str);
        CHECK(json_is_array(v) && json_array_size(v) == e.naltered);
        for (size_t i = 0; i < e.naltered; i++) {
            json_t *a = json_array_get(v, i);
            CHECK(json_is_string(a) && strcmp(json_string_value(a), e.altered[i]) == 0);
        }
    } else {
        CHECK(!v);
    }
    /* Nothing dropped, nothing undocumented. */
    CHECK(json_object_size(doc) == keys);
    json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool checked_args;
    if (!checked_args) {
        char *j = NULL;
        fy_error *err = NULL;
        CHECK(fy_result_to_json(NULL, &j, &err) == FY_E_INVAL && !j && fy_error_code(err) == FY_E_INVAL);
        fy_error_free(err);
        checked_args = true;
    }

    fy_result *r = result_new();
    char *usage_source = NULL;
    CHECK(r);
    decode(r, &usage_source, data, size);

    /* What the library must refuse: backend JSON that is not an object. */
    bool refuse = false;
    const char *texts[] = {r->isolation_json, r->cgroup_json};
    for (size_t i = 0; i < 2; i++) {
        if (texts[i]) {
            json_t *o = backend_object(texts[i]);
            refuse |= !o;
            json_decref(o);
        }
    }

    char *const sentinel = (char *)&checked_args;
    char *out = sentinel;
    fy_error *err = NULL;
    int rc = fy_result_to_json(r, &out, &err);
    if (rc == 0) {
        CHECK(!refuse && !err && out != sentinel && out);
        check_record(r, out);
        fy_free(out);
    } else {
        /* Typed, with detail, and *ret_json untouched. */
        CHECK(refuse && rc == FY_E_INTERNAL && out == sentinel);
        CHECK(err && fy_error_code(err) == rc && fy_error_step(err) == FY_STEP_JSON);
        const char *m = fy_error_message(err);
        CHECK(m && *m);
        fy_error_free(err);
    }
    result_unref(r);
    free(usage_source);
    return 0;
}
