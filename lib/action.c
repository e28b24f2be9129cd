/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hermetic actions: the model, its setters, its strict JSON form and its
 * canonical document and digest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "action.h"

#define LOC_MAX 600

static const uint64_t limit_default[FY_ACTION_LIMIT_MAX_ + 1] = {
    [FY_ACTION_LIMIT_OUTPUT_BYTES] = 4ull << 30,
    [FY_ACTION_LIMIT_OUTPUT_ENTRIES] = 100000,
    [FY_ACTION_LIMIT_INPUT_ENTRIES] = 1000000,
    [FY_ACTION_LIMIT_INPUT_BYTES] = 16ull << 30,
};
static const char *const limit_names[FY_ACTION_LIMIT_MAX_ + 1] = {
    [FY_ACTION_LIMIT_OUTPUT_BYTES] = "output_bytes",
    [FY_ACTION_LIMIT_OUTPUT_ENTRIES] = "output_entries",
    [FY_ACTION_LIMIT_INPUT_ENTRIES] = "input_entries",
    [FY_ACTION_LIMIT_INPUT_BYTES] = "input_bytes",
};
static const char *const output_kinds[] = {[FY_OUTPUT_FILE] = "files", [FY_OUTPUT_DIRECTORY] = "directories",
                                           [FY_OUTPUT_ANY] = "paths"};

static int bad(fy_error **reterr, const char *loc, const char *fmt, ...) FY_PRINTF(3, 4);
static int bad(fy_error **reterr, const char *loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_setv(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, loc, fmt, ap);
    va_end(ap);
    return FY_E_INVAL;
}
static int oom(fy_error **reterr) { return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory"); }

void action_sha256_name(const unsigned char digest[32], char out[72]) {
    memcpy(out, "sha256:", 7);
    sodium_bin2hex(out + 7, 65, digest, 32);
}

/* ---- validation ---- */

/* A normalised relative path: components separated by single slashes, none
 * empty, "." or "..", no leading or trailing slash, no control bytes. */
int action_check_relpath(const char *path, bool allow_empty, const char *loc, fy_error **reterr) {
    if (!path)
        return bad(reterr, loc, "path is NULL");
    size_t n = strlen(path);
    if (n == 0)
        return allow_empty ? 0 : bad(reterr, loc, "path is empty");
    if (n > ACTION_PATH_MAX)
        return bad(reterr, loc, "path longer than %u bytes", ACTION_PATH_MAX);
    if (path[0] == '/')
        return bad(reterr, loc, "\"%s\" is absolute (paths are relative to the input root)", path);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
            return bad(reterr, loc, "path contains a control character at byte %zu", i);
    if (!util_utf8_valid(path))
        return bad(reterr, loc, "path is not UTF-8 text");
    for (const char *c = path;;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0)
            return bad(reterr, loc, "\"%s\" has an empty component (a doubled or trailing '/')", path);
        if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
            return bad(reterr, loc, "\"%s\" has a \"%.*s\" component (paths must be normalised)", path, (int)len, c);
        if (len > 255)
            return bad(reterr, loc, "\"%s\" has a component longer than 255 bytes", path);
        if (!e)
            break;
        c = e + 1;
    }
    return 0;
}

/* The policy validators' errors, as errors of an action (FY_E_INVAL). */
static int recode(int r, fy_error **reterr) {
    if (r < 0 && r != FY_E_NOMEM && reterr && *reterr && !(*reterr)->is_static)
        (*reterr)->code = FY_E_INVAL;
    return r < 0 && r != FY_E_NOMEM ? FY_E_INVAL : r;
}

static int check_abs(const char *path, const char *loc, fy_error **reterr) {
    if (!path || path[0] != '/')
        return bad(reterr, loc, "expected an absolute host path");
    return recode(check_host_path(path, loc, reterr), reterr);
}

/* ---- the model ---- */

int fy_action_new(fy_action **ret, fy_error **reterr) {
    if (!ret)
        return bad(reterr, NULL, "ret is NULL");
    *ret = NULL;
    fy_action *a = calloc(1, sizeof(*a));
    if (!a || !(a->workdir = strdup(""))) {
        free(a);
        return oom(reterr);
    }
    a->origin_pid = util_getpid();
    vec_init(&a->env, sizeof(struct act_kv));
    vec_init(&a->props, sizeof(struct act_kv));
    vec_init(&a->outputs, sizeof(struct act_output));
    memcpy(a->limit, limit_default, sizeof(a->limit));
    *ret = a;
    return 0;
}

static void free_kv(struct vec *v) {
    VEC_EACH(v, struct act_kv, kv) {
        free(kv->name);
        free(kv->value);
    }
    free(v->items);
}

void fy_action_free(fy_action *a) {
    if (!a)
        return;
    for (size_t i = 0; a->argv && a->argv[i]; i++)
        free(a->argv[i]);
    free(a->argv);
    free_kv(&a->env);
    free_kv(&a->props);
    VEC_EACH(&a->outputs, struct act_output, o) free(o->path);
    free(a->outputs.items);
    free(a->input);
    free(a->workdir);
    free(a->output_dir);
    for (int i = 0; i < 3; i++)
        free(a->stdio_path[i]);
    free(a->scratch);
    free(a);
}

#define CHECK_ACTION(a)                                                                          \
    do {                                                                                         \
        if (!(a))                                                                                \
            return bad(reterr, NULL, "action is NULL");                                          \
        if ((a)->origin_pid != util_getpid())                                                    \
            return err_set(reterr, FY_E_FORKED, FY_STEP_POLICY, 0, NULL,                         \
                           "action was created in another process");                             \
    } while (0)

int fy_action_set_argv(fy_action *a, const char *const *argv, fy_error **reterr) {
    CHECK_ACTION(a);
    if (!argv || !argv[0] || !argv[0][0])
        return bad(reterr, "$.arguments", "the command is empty");
    size_t n = 0;
    while (argv[n]) {
        if (!util_utf8_valid(argv[n])) {
            char loc[LOC_MAX];
            snprintf(loc, sizeof(loc), "$.arguments[%zu]", n);
            return bad(reterr, loc, "argument is not UTF-8 text");
        }
        if (++n > ACTION_ARGS_MAX)
            return bad(reterr, "$.arguments", "more than %u arguments", ACTION_ARGS_MAX);
    }
    char **v = calloc(n + 1, sizeof(char *));
    if (!v)
        return oom(reterr);
    for (size_t i = 0; i < n; i++)
        if (!(v[i] = strdup(argv[i]))) {
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return oom(reterr);
        }
    for (size_t i = 0; a->argv && a->argv[i]; i++)
        free(a->argv[i]);
    free(a->argv);
    a->argv = v;
    a->argc = n;
    return 0;
}

/* Sets (value non-NULL) or removes name in a sorted struct act_kv vector. */
static int kv_set(struct vec *v, const char *name, const char *value, fy_error **reterr) {
    struct act_kv *base = v->items;
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(base[mid].name, name);
        if (c == 0) {
            if (!value) {
                free(base[mid].name);
                free(base[mid].value);
                vec_remove(v, mid);
                return 0;
            }
            char *nv = strdup(value);
            if (!nv)
                return oom(reterr);
            free(base[mid].value);
            base[mid].value = nv;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!value)
        return 0;
    if (v->n >= ACTION_ITEMS_MAX)
        return bad(reterr, NULL, "more than %u entries", ACTION_ITEMS_MAX);
    char *nn = strdup(name), *nv = strdup(value);
    if (!nn || !nv || !vec_push(v)) {
        free(nn);
        free(nv);
        return oom(reterr);
    }
    base = v->items;
    memmove(base + lo + 1, base + lo, (v->n - 1 - lo) * sizeof(*base));
    base[lo] = (struct act_kv){nn, nv};
    return 0;
}

int fy_action_set_env(fy_action *a, const char *name, const char *value, fy_error **reterr) {
    CHECK_ACTION(a);
    char loc[LOC_MAX];
    util_loc_key(loc, sizeof(loc), "$.environment.", name);
    int r = check_env_name(name, loc, reterr);
    if (r >= 0 && value)
        r = check_env_value(value, loc, reterr);
    if (r < 0)
        return recode(r, reterr);
    return kv_set(&a->env, name, value, reterr);
}

int fy_action_set_platform_property(fy_action *a, const char *name, const char *value, fy_error **reterr) {
    CHECK_ACTION(a);
    char loc[LOC_MAX];
    util_loc_key(loc, sizeof(loc), "$.platform.", name);
    if (!name || !name[0] || strlen(name) > 256)
        return bad(reterr, loc, "a property name is 1 to 256 bytes");
    for (const char *c = name; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '=')
            return bad(reterr, loc, "a property name has no space, control character or '='");
    if (value && (strlen(value) > 4096 || strchr(value, '\n') || !util_utf8_valid(value)))
        return bad(reterr, loc, "a property value is one line of UTF-8 text of at most 4096 bytes");
    return kv_set(&a->props, name, value, reterr);
}

static int set_str(char **field, const char *s, fy_error **reterr) {
    char *d = NULL;
    if (s && !(d = strdup(s)))
        return oom(reterr);
    free(*field);
    *field = d;
    return 0;
}

int fy_action_set_input_root(fy_action *a, const char *host_path, uint32_t kind, fy_error **reterr) {
    CHECK_ACTION(a);
    if (kind != FY_INPUT_DIRECTORY && kind != FY_INPUT_ARCHIVE)
        return bad(reterr, "$.input_root", "unknown input root kind %u", kind);
    int r = check_abs(host_path, "$.input_root", reterr);
    if (r < 0)
        return r;
    if ((r = set_str(&a->input, host_path, reterr)) < 0)
        return r;
    a->input_kind = kind;
    return 0;
}

int fy_action_set_working_directory(fy_action *a, const char *path, fy_error **reterr) {
    CHECK_ACTION(a);
    if (!path)
        path = "";
    int r = action_check_relpath(path, true, "$.working_directory", reterr);
    return r < 0 ? r : set_str(&a->workdir, path, reterr);
}

/* The first of the n outputs (sorted by path) not below key[0..len) in
 * strcmp's order. */
static size_t lower_bound(const struct act_output *o, size_t n, const char *key, size_t len) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(o[mid].path, key, len);
        if (c == 0 && o[mid].path[len]) /* (longer than the key: after it) */
            c = 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t action_output_find(const fy_action *a, const char *key, size_t len) {
    const struct act_output *o = a->outputs.items;
    size_t n = a->outputs.n, i = lower_bound(o, n, key, len);
    return i < n && !strncmp(o[i].path, key, len) && !o[i].path[len] ? i : (size_t)-1;
}

int fy_action_add_output(fy_action *a, const char *path, uint32_t kind, fy_error **reterr) {
    CHECK_ACTION(a);
    char loc[LOC_MAX];
    snprintf(loc, sizeof(loc), "$.outputs.%s", kind < FY_ARRAY_SIZE(output_kinds) && output_kinds[kind]
                                                    ? output_kinds[kind] : "?");
    if (kind != FY_OUTPUT_FILE && kind != FY_OUTPUT_DIRECTORY && kind != FY_OUTPUT_ANY)
        return bad(reterr, loc, "unknown output kind %u", kind);
    int r = action_check_relpath(path, false, loc, reterr);
    if (r < 0)
        return r;
    if (a->outputs.n >= ACTION_ITEMS_MAX)
        return bad(reterr, loc, "more than %u declared outputs", ACTION_ITEMS_MAX);
    /* The outputs are sorted by path: the place and the overlaps by binary
     * search (a scan of every output for each one made 100,000 outputs,
     * a 1 MB document, cost a minute and a half of CPU). */
    struct act_output *base = a->outputs.items;
    size_t n = a->outputs.n, at = lower_bound(base, n, path, strlen(path));
    const char *over = at < n && !strcmp(base[at].path, path) ? base[at].path : NULL;
    /* ... a declared output below this one: the first at or after "path/" */
    size_t pl = strlen(path);
    char *below = malloc(pl + 2);
    if (!below)
        return oom(reterr);
    memcpy(below, path, pl);
    memcpy(below + pl, "/", 2);
    size_t d = lower_bound(base, n, below, pl + 1);
    if (!over && d < n && !strncmp(base[d].path, below, pl + 1))
        over = base[d].path;
    free(below);
    /* ... or above it: each of its parents, looked up */
    for (size_t k = 0; !over && k < pl; k++) {
        size_t j = path[k] == '/' ? action_output_find(a, path, k) : (size_t)-1;
        if (j != (size_t)-1)
            over = base[j].path;
    }
    if (over)
        return bad(reterr, loc, "\"%s\" overlaps the declared output \"%s\"", path, over);
    char *p = strdup(path);
    if (!p || !vec_push(&a->outputs)) {
        free(p);
        return oom(reterr);
    }
    base = a->outputs.items;
    memmove(base + at + 1, base + at, (a->outputs.n - 1 - at) * sizeof(*base));
    base[at] = (struct act_output){p, kind};
    return 0;
}

int fy_action_set_output_directory(fy_action *a, const char *dir, fy_error **reterr) {
    CHECK_ACTION(a);
    int r = dir ? check_abs(dir, "$.output_directory", reterr) : 0;
    return r < 0 ? r : set_str(&a->output_dir, dir, reterr);
}

int fy_action_set_stdio_path(fy_action *a, uint32_t stream, const char *path, fy_error **reterr) {
    CHECK_ACTION(a);
    if (stream != 1 && stream != 2)
        return bad(reterr, NULL, "stream %u is not stdout (1) or stderr (2)", stream);
    const char *loc = stream == 1 ? "$.stdout_path" : "$.stderr_path";
    int r = path ? check_abs(path, loc, reterr) : 0;
    return r < 0 ? r : set_str(&a->stdio_path[stream], path, reterr);
}

int fy_action_set_scratch_directory(fy_action *a, const char *dir, fy_error **reterr) {
    CHECK_ACTION(a);
    int r = dir ? check_abs(dir, "$.scratch_directory", reterr) : 0;
    return r < 0 ? r : set_str(&a->scratch, dir, reterr);
}

int fy_action_set_limit(fy_action *a, uint32_t limit, uint64_t value, fy_error **reterr) {
    CHECK_ACTION(a);
    if (limit == 0 || limit > FY_ACTION_LIMIT_MAX_)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, "$.limits", "unknown action limit %u", limit);
    char loc[LOC_MAX];
    snprintf(loc, sizeof(loc), "$.limits.%s", limit_names[limit]);
    if (value == 0 || value == FY_UNLIMITED)
        return bad(reterr, loc, "must be a positive bound (actions are never unlimited)");
    if (value > (uint64_t)INT64_MAX) /* (the JSON form, and its digest, hold a signed 64-bit integer) */
        return bad(reterr, loc, "must be at most %lld", (long long)INT64_MAX);
    a->limit[limit] = value;
    return 0;
}

/* ---- JSON ---- */

static int want(const json_t *v, json_type t, const char *what, const char *loc, fy_error **reterr) {
    return json_typeof(v) == t ? 0 : bad(reterr, loc, "expected %s", what);
}

static int check_keys(const json_t *obj, const char *const *allowed, const char *loc, fy_error **reterr) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (const char *const *k = allowed; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok) {
            char l[LOC_MAX];
            snprintf(l, sizeof(l), "%s.%s", loc, key);
            return bad(reterr, l, "unknown key \"%s\"", key);
        }
    }
    return 0;
}

static int parse_string_map(fy_action *a, const json_t *o, const char *loc,
                            int (*set)(fy_action *, const char *, const char *, fy_error **), fy_error **reterr) {
    int r = want(o, JSON_OBJECT, "an object of strings", loc, reterr);
    if (r < 0)
        return r;
    if (json_object_size(o) > ACTION_ITEMS_MAX)
        return bad(reterr, loc, "more than %u entries", ACTION_ITEMS_MAX);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        char l[LOC_MAX];
        snprintf(l, sizeof(l), "%s.%s", loc, key);
        if ((r = want(v, JSON_STRING, "a string", l, reterr)) < 0 || (r = set(a, key, json_string_value(v), reterr)) < 0)
            return r;
    }
    return 0;
}

static int parse_outputs(fy_action *a, const json_t *o, fy_error **reterr) {
    static const char *const keys[] = {"files", "directories", "paths", NULL};
    int r = want(o, JSON_OBJECT, "an object", "$.outputs", reterr);
    if (r < 0 || (r = check_keys(o, keys, "$.outputs", reterr)) < 0)
        return r;
    for (uint32_t kind = FY_OUTPUT_FILE; kind <= FY_OUTPUT_ANY; kind++) {
        const json_t *arr = json_object_get(o, output_kinds[kind]);
        if (!arr)
            continue;
        char l[LOC_MAX];
        snprintf(l, sizeof(l), "$.outputs.%s", output_kinds[kind]);
        if ((r = want(arr, JSON_ARRAY, "an array of paths", l, reterr)) < 0)
            return r;
        if (json_array_size(arr) > ACTION_ITEMS_MAX)
            return bad(reterr, l, "more than %u declared outputs", ACTION_ITEMS_MAX);
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v) {
            char li[LOC_MAX];
            snprintf(li, sizeof(li), "%s[%zu]", l, i);
            if ((r = want(v, JSON_STRING, "a path", li, reterr)) < 0)
                return r;
            if ((r = fy_action_add_output(a, json_string_value(v), kind, reterr)) < 0) {
                /* name the element, not the list */
                if (reterr && *reterr && !(*reterr)->is_static) {
                    free((*reterr)->location);
                    (*reterr)->location = strdup(li);
                }
                return r;
            }
        }
    }
    return 0;
}

static int parse_limits(fy_action *a, const json_t *o, fy_error **reterr) {
    int r = want(o, JSON_OBJECT, "an object", "$.limits", reterr);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        if (r < 0)
            break;
        char l[LOC_MAX];
        snprintf(l, sizeof(l), "$.limits.%s", key);
        uint32_t k = 0;
        for (uint32_t i = 1; i <= FY_ACTION_LIMIT_MAX_; i++)
            if (strcmp(limit_names[i], key) == 0)
                k = i;
        if (!k)
            return bad(reterr, l, "unknown key \"%s\"", key);
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
            return bad(reterr, l, "expected a positive integer");
        r = fy_action_set_limit(a, k, (uint64_t)json_integer_value(v), reterr);
    }
    return r;
}

static int opt_path(const json_t *root, const char *key, fy_action *a,
                    int (*set)(fy_action *, const char *, fy_error **), fy_error **reterr) {
    const json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    char l[LOC_MAX];
    snprintf(l, sizeof(l), "$.%s", key);
    int r = want(v, JSON_STRING, "a path", l, reterr);
    return r < 0 ? r : set(a, json_string_value(v), reterr);
}
static int set_stdout(fy_action *a, const char *p, fy_error **e) { return fy_action_set_stdio_path(a, 1, p, e); }
static int set_stderr(fy_action *a, const char *p, fy_error **e) { return fy_action_set_stdio_path(a, 2, p, e); }

static int parse_root(fy_action *a, const json_t *root, fy_error **reterr) {
    static const char *const keys[] = {"version", "arguments", "environment", "platform", "input_root",
                                       "working_directory", "outputs", "output_directory", "stdout_path",
                                       "stderr_path", "scratch_directory", "limits", NULL};
    int r = want(root, JSON_OBJECT, "an object (an action is a JSON object)", "$", reterr);
    if (r < 0 || (r = check_keys(root, keys, "$", reterr)) < 0)
        return r;
    const json_t *v = json_object_get(root, "version");
    if (!v || !json_is_integer(v) || json_integer_value(v) != 1)
        return bad(reterr, "$.version", "expected 1 (the action format this library reads)");
    if (!(v = json_object_get(root, "arguments")))
        return bad(reterr, "$.arguments", "missing: an action runs a command");
    if ((r = want(v, JSON_ARRAY, "an array of strings", "$.arguments", reterr)) < 0)
        return r;
    size_t n = json_array_size(v);
    if (n == 0 || n > ACTION_ARGS_MAX)
        return bad(reterr, "$.arguments", "expected 1 to %u arguments", ACTION_ARGS_MAX);
    const char **argv = calloc(n + 1, sizeof(char *));
    if (!argv)
        return oom(reterr);
    for (size_t i = 0; i < n && r >= 0; i++) {
        const json_t *s = json_array_get(v, i);
        char l[LOC_MAX];
        snprintf(l, sizeof(l), "$.arguments[%zu]", i);
        if ((r = want(s, JSON_STRING, "a string", l, reterr)) >= 0)
            argv[i] = json_string_value(s);
    }
    if (r >= 0)
        r = fy_action_set_argv(a, argv, reterr);
    free(argv);
    if (r < 0)
        return r;
    if ((v = json_object_get(root, "environment")) &&
        (r = parse_string_map(a, v, "$.environment", fy_action_set_env, reterr)) < 0)
        return r;
    if ((v = json_object_get(root, "platform")) &&
        (r = parse_string_map(a, v, "$.platform", fy_action_set_platform_property, reterr)) < 0)
        return r;
    if (!(v = json_object_get(root, "input_root")))
        return bad(reterr, "$.input_root", "missing: {\"directory\": PATH} or {\"archive\": PATH}");
    static const char *const rkeys[] = {"directory", "archive", NULL};
    if ((r = want(v, JSON_OBJECT, "{\"directory\": PATH} or {\"archive\": PATH}", "$.input_root", reterr)) < 0 ||
        (r = check_keys(v, rkeys, "$.input_root", reterr)) < 0)
        return r;
    if (json_object_size(v) != 1)
        return bad(reterr, "$.input_root", "expected exactly one of \"directory\" and \"archive\"");
    const json_t *d = json_object_get(v, "directory"), *ar = json_object_get(v, "archive");
    const char *loc = d ? "$.input_root.directory" : "$.input_root.archive";
    if ((r = want(d ? d : ar, JSON_STRING, "a path", loc, reterr)) < 0 ||
        (r = fy_action_set_input_root(a, json_string_value(d ? d : ar), d ? FY_INPUT_DIRECTORY : FY_INPUT_ARCHIVE,
                                      reterr)) < 0) {
        if (r < 0 && reterr && *reterr && !(*reterr)->is_static) {
            free((*reterr)->location);
            (*reterr)->location = strdup(loc);
        }
        return r;
    }
    if ((v = json_object_get(root, "working_directory"))) {
        if ((r = want(v, JSON_STRING, "a relative path", "$.working_directory", reterr)) < 0 ||
            (r = fy_action_set_working_directory(a, json_string_value(v), reterr)) < 0)
            return r;
    }
    if ((v = json_object_get(root, "outputs")) && (r = parse_outputs(a, v, reterr)) < 0)
        return r;
    if ((r = opt_path(root, "output_directory", a, fy_action_set_output_directory, reterr)) < 0 ||
        (r = opt_path(root, "stdout_path", a, set_stdout, reterr)) < 0 ||
        (r = opt_path(root, "stderr_path", a, set_stderr, reterr)) < 0 ||
        (r = opt_path(root, "scratch_directory", a, fy_action_set_scratch_directory, reterr)) < 0)
        return r;
    if ((v = json_object_get(root, "limits")) && (r = parse_limits(a, v, reterr)) < 0)
        return r;
    return 0;
}

int action_parse_json(fy_action *a, const char *json, size_t len, fy_error **reterr) {
    if (len > ACTION_JSON_MAX)
        return bad(reterr, "$", "action document larger than %u bytes", ACTION_JSON_MAX);
    if (memchr(json, '\0', len))
        return bad(reterr, "$", "action document contains a NUL byte");
    json_error_t je;
    memset(&je, 0, sizeof(je));
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root && policy_json_out_of_memory(json, len, &je))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory");
    if (!root) {
        char loc[64];
        snprintf(loc, sizeof(loc), "$ (line %d, column %d)", je.line, je.column);
        return bad(reterr, loc, "not a JSON document: %s", je.text);
    }
    int r = parse_root(a, root, reterr);
    json_decref(root);
    return r;
}

int fy_action_from_json(const char *json, size_t len, fy_action **ret, fy_error **reterr) {
    if (!ret || !json)
        return bad(reterr, NULL, "json or ret is NULL");
    *ret = NULL;
    fy_action *a;
    int r = fy_action_new(&a, reterr);
    if (r < 0)
        return r;
    if ((r = action_parse_json(a, json, len, reterr)) < 0) {
        fy_action_free(a);
        return r;
    }
    *ret = a;
    return 0;
}

/* The document with every member, sorted keys, no host plumbing when
 * host is false (the digest names the command, not where it runs). */
static json_t *canonical(const fy_action *a, bool host) {
    json_t *root = json_object(), *args = json_array(), *env = json_object(), *props = json_object(),
           *outs = json_object(), *lim = json_object(), *in = json_object();
    bool ok = root && args && env && props && outs && lim && in;
    for (size_t i = 0; ok && i < a->argc; i++)
        ok = json_array_append_new(args, json_string(a->argv[i])) == 0;
    VEC_EACH(&a->env, struct act_kv, kv) ok = ok && json_object_set_new(env, kv->name, json_string(kv->value)) == 0;
    VEC_EACH(&a->props, struct act_kv, kv) ok = ok && json_object_set_new(props, kv->name, json_string(kv->value)) == 0;
    for (uint32_t kind = FY_OUTPUT_FILE; ok && kind <= FY_OUTPUT_ANY; kind++) {
        json_t *arr = json_array();
        VEC_EACH(&a->outputs, struct act_output, o)
            if (arr && o->kind == kind)
                ok = ok && json_array_append_new(arr, json_string(o->path)) == 0;
        ok = ok && arr && (json_array_size(arr) ? json_object_set_new(outs, output_kinds[kind], arr) == 0
                                                : (json_decref(arr), true));
    }
    for (uint32_t k = 1; ok && k <= FY_ACTION_LIMIT_MAX_; k++)
        ok = json_object_set_new(lim, limit_names[k], json_integer((json_int_t)a->limit[k])) == 0;
    if (ok && host && a->input)
        ok = json_object_set_new(in, a->input_kind == FY_INPUT_ARCHIVE ? "archive" : "directory",
                                 json_string(a->input)) == 0;
    else if (ok && !host)
        ok = json_object_set_new(in, "kind", json_string(a->input_kind == FY_INPUT_ARCHIVE ? "archive"
                                                                                           : "directory")) == 0;
    ok = ok && json_object_set_new(root, "version", json_integer(1)) == 0 &&
         json_object_set(root, "arguments", args) == 0 && json_object_set(root, "environment", env) == 0 &&
         json_object_set(root, "platform", props) == 0 && json_object_set(root, "outputs", outs) == 0 &&
         json_object_set(root, "limits", lim) == 0 && json_object_set(root, "input_root", in) == 0 &&
         json_object_set_new(root, "working_directory", json_string(a->workdir)) == 0;
    const char *const hk[] = {"output_directory", "stdout_path", "stderr_path", "scratch_directory"};
    const char *const hv[] = {a->output_dir, a->stdio_path[1], a->stdio_path[2], a->scratch};
    for (size_t i = 0; ok && host && i < FY_ARRAY_SIZE(hk); i++)
        if (hv[i])
            ok = json_object_set_new(root, hk[i], json_string(hv[i])) == 0;
    json_decref(args); json_decref(env); json_decref(props); json_decref(outs); json_decref(lim); json_decref(in);
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

char *action_canonical_json(const fy_action *a) {
    json_t *root = canonical(a, true);
    char *s = root ? json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2)) : NULL;
    json_decref(root);
    return s;
}

int fy_action_to_json(const fy_action *a, char **ret_json, fy_error **reterr) {
    CHECK_ACTION(a);
    if (!ret_json)
        return bad(reterr, NULL, "ret_json is NULL");
    return (*ret_json = action_canonical_json(a)) ? 0 : oom(reterr);
}

int fy_action_digest(const fy_action *a, char **ret, fy_error **reterr) {
    CHECK_ACTION(a);
    if (!ret)
        return bad(reterr, NULL, "ret_digest is NULL");
    *ret = NULL;
    json_t *root = canonical(a, false);
    char *s = root ? json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(root);
    char *out = s ? malloc(72) : NULL;
    if (!out) {
        free(s);
        return oom(reterr);
    }
    unsigned char d[32];
    crypto_hash_sha256(d, (const unsigned char *)s, strlen(s));
    free(s);
    action_sha256_name(d, out);
    *ret = out;
    return 0;
}
