/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy files: strict JSON parsing onto a policy, and canonical output.
 * jansson parses (duplicate keys, NUL escapes and bad UTF-8 rejected); every
 * key and value is then checked here, naming its JSON path. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"

#define LOC_MAX 600

static int bad(fy_error **reterr, const char *loc, const char *fmt, ...) FY_PRINTF(3, 4);
static int bad(fy_error **reterr, const char *loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_setv(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, loc, fmt, ap);
    va_end(ap);
    return FY_E_POLICY;
}

static int oom(fy_error **reterr) {
    return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory");
}

static void sub(char *out, const char *loc, const char *key) { snprintf(out, LOC_MAX, "%s.%s", loc, key); }
static void idx(char *out, const char *loc, size_t i) { snprintf(out, LOC_MAX, "%s[%zu]", loc, i); }

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int want(const json_t *v, json_type t, const char *what, const char *loc, fy_error **reterr) {
    if (json_typeof(v) != t)
        return bad(reterr, loc, "expected %s, got %s", what, type_name(v));
    return 0;
}

/* Rejects keys not in `allowed` (NULL-terminated). */
static int check_keys(const json_t *obj, const char *const *allowed, const char *loc, fy_error **reterr) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok) {
            char l[LOC_MAX];
            sub(l, loc, key);
            return bad(reterr, l, "unknown key \"%s\"", key);
        }
    }
    return 0;
}

static int get_string(const json_t *v, const char *loc, const char **out, fy_error **reterr) {
    int r = want(v, JSON_STRING, "a string", loc, reterr);
    if (r < 0)
        return r;
    *out = json_string_value(v);
    return 0;
}

static int get_bool(const json_t *v, const char *loc, bool *out, fy_error **reterr) {
    if (!json_is_boolean(v))
        return bad(reterr, loc, "expected a boolean, got %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

static int get_enum(const json_t *v, const char *const *table, size_t n, const char *loc, uint32_t *out,
                    fy_error **reterr) {
    const char *s;
    int r = get_string(v, loc, &s, reterr);
    if (r < 0)
        return r;
    int i = name_lookup(table, n, s);
    if (i < 0) {
        struct strbuf sb;
        strbuf_init(&sb);
        for (size_t k = 0; k < n; k++)
            if (table[k])
                strbuf_printf(&sb, "%s\"%s\"", sb.len ? ", " : "", table[k]);
        r = bad(reterr, loc, "unknown value \"%s\" (expected one of %s)", s, sb.buf ? sb.buf : "");
        strbuf_free(&sb);
        return r;
    }
    *out = (uint32_t)i;
    return 0;
}
#define GET_ENUM(v, table, loc, out, e) get_enum(v, table, FY_ARRAY_SIZE(table), loc, out, e)

/* ---- numbers with units ---- */

struct unit { const char *name; uint64_t mult; };

static const struct unit size_units[] = {
    {"", 1}, {"B", 1},
    {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
    {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
    {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
    {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
};
static const struct unit time_units[] = {
    {"us", 1}, {"ms", 1000}, {"s", 1000000ull}, {"m", 60000000ull}, {"h", 3600000000ull},
    {"d", 86400000000ull},
};
static const struct unit count_units[] = {{"", 1}};

enum numkind { NUM_SIZE, NUM_DURATION, NUM_COUNT };

static int get_number(const json_t *v, enum numkind kind, const char *loc, uint64_t *out, fy_error **reterr) {
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0)
            return bad(reterr, loc, "must not be negative");
        *out = (uint64_t)i;
        return 0;
    }
    if (!json_is_string(v))
        return bad(reterr, loc, "expected an integer or a string, got %s", type_name(v));
    const char *s = json_string_value(v);
    if (strcmp(s, "unlimited") == 0) {
        *out = FY_UNLIMITED;
        return 0;
    }
    if (kind == NUM_COUNT)
        return bad(reterr, loc, "expected an integer or \"unlimited\", got \"%s\"", s);
    const struct unit *units = kind == NUM_SIZE ? size_units : kind == NUM_DURATION ? time_units : count_units;
    size_t nunits = kind == NUM_SIZE ? FY_ARRAY_SIZE(size_units)
                    : kind == NUM_DURATION ? FY_ARRAY_SIZE(time_units) : FY_ARRAY_SIZE(count_units);
    size_t nd = strspn(s, "0123456789");
    if (nd == 0)
        return bad(reterr, loc, "\"%s\" is not a %s", s,
                   kind == NUM_SIZE ? "size (e.g. 512MiB)" : kind == NUM_DURATION ? "duration (e.g. 30s)" : "count");
    const char *suffix = s + nd;
    const struct unit *u = NULL;
    for (size_t i = 0; i < nunits && !u; i++)
        if (strcmp(units[i].name, suffix) == 0)
            u = &units[i];
    if (!u) {
        struct strbuf sb;
        strbuf_init(&sb);
        for (size_t i = 0; i < nunits; i++)
            if (units[i].name[0])
                strbuf_printf(&sb, "%s%s", sb.len ? ", " : "", units[i].name);
        int r = *suffix ? bad(reterr, loc, "\"%s\": unknown unit \"%s\" (units: %s)", s, suffix, sb.buf ? sb.buf : "")
                        : bad(reterr, loc, "\"%s\": a unit is needed (%s)", s, sb.buf ? sb.buf : "");
        strbuf_free(&sb);
        return r;
    }
    uint64_t n = 0;
    for (size_t i = 0; i < nd; i++) {
        if (n > (UINT64_MAX - 9) / 10)
            return bad(reterr, loc, "\"%s\" is too large", s);
        n = n * 10 + (uint64_t)(s[i] - '0');
    }
    if (u->mult && n > (UINT64_MAX - 1) / u->mult)
        return bad(reterr, loc, "\"%s\" is too large", s);
    *out = n * u->mult;
    return 0;
}

/* ---- sections ---- */

/* Refuses a collection over its bound before any per-entry work. */
static int check_count(size_t n, const char *loc, fy_error **reterr) {
    for (const struct policy_count_limit *l = policy_count_limits; l->loc; l++)
        if (strcmp(l->loc, loc) == 0 && n > l->max)
            return bad(reterr, loc, "at most %zu entries are allowed", l->max);
    return 0;
}

/* An object holding no keys but those in `allowed`. */
static int want_object(const json_t *v, const char *const *allowed, const char *loc, fy_error **reterr) {
    int r = want(v, JSON_OBJECT, "an object", loc, reterr);
    return r < 0 ? r : check_keys(v, allowed, loc, reterr);
}

/* An array, or with t JSON_OBJECT a map, within its bound on entries. */
static int want_bounded(const json_t *v, json_type t, const char *loc, fy_error **reterr) {
    bool array = t == JSON_ARRAY;
    int r = want(v, t, array ? "an array" : "an object", loc, reterr);
    return r < 0 ? r : check_count(array ? json_array_size(v) : json_object_size(v), loc, reterr);
}

static int parse_paths_array(const json_t *v, const char *loc, struct vec *out, bool hostpath, fy_error **reterr) {
    int r = want_bounded(v, JSON_ARRAY, loc, reterr);
    if (r < 0)
        return r;
    size_t i;
    json_t *it;
    json_array_foreach((json_t *)v, i, it) {
        char l[LOC_MAX];
        idx(l, loc, i);
        const char *s;
        if ((r = get_string(it, l, &s, reterr)) < 0)
            return r;
        if (hostpath && (r = check_host_path(s, l, reterr)) < 0)
            return r;
        if (policy_has_string(out, s))
            return bad(reterr, l, "\"%s\" is listed twice", s);
        if (policy_add_string(out, s) < 0)
            return oom(reterr);
    }
    return 0;
}

static void free_strings(struct vec *v) {
    VEC_EACH(v, char *, s) free(*s);
    v->n = 0;
}

/* The check_* signature shared by string validators. */
typedef int (*check_fn)(const char *s, const char *loc, fy_error **reterr);

/* Replaces *field with a copy of string v, which must pass check, if any. */
static int set_string(const json_t *v, const char *loc, check_fn check, char **field, fy_error **reterr) {
    const char *s;
    int r = get_string(v, loc, &s, reterr);
    if (r < 0 || (check && (r = check(s, loc, reterr)) < 0))
        return r;
    char *d = strdup(s);
    if (!d)
        return oom(reterr);
    free(*field);
    *field = d;
    return 0;
}

/* A host path, or null for none. */
static int set_opt_path(const json_t *v, const char *loc, char **field, fy_error **reterr) {
    if (json_is_null(v)) {
        free(*field);
        *field = NULL;
        return 0;
    }
    return set_string(v, loc, check_host_path, field, reterr);
}

/* ---- fields of an object: loc is the object's path, key the field's ---- */

/* A field that must be present; its path goes to l. */
static int need(const json_t *obj, const char *loc, const char *key, char *l, json_t **out, fy_error **reterr) {
    sub(l, loc, key);
    if (!(*out = json_object_get(obj, key)))
        return bad(reterr, l, "missing");
    return 0;
}

/* A string field that must be present and pass check, if any. */
static int need_string(const json_t *obj, const char *loc, const char *key, check_fn check, const char **out,
                       fy_error **reterr) {
    char l[LOC_MAX];
    json_t *f;
    int r = need(obj, loc, key, l, &f, reterr);
    if (r < 0 || (r = get_string(f, l, out, reterr)) < 0 || (check && (r = check(*out, l, reterr)) < 0))
        return r;
    return 0;
}

/* An optional field, or NULL; its path goes to l when present. The opt_*
 * helpers below leave their output alone when the field is absent. */
static json_t *opt(const json_t *obj, const char *loc, const char *key, char *l) {
    json_t *f = json_object_get(obj, key);
    if (f)
        sub(l, loc, key);
    return f;
}

static int opt_bool(const json_t *obj, const char *loc, const char *key, bool *out, fy_error **reterr) {
    char l[LOC_MAX];
    json_t *f = opt(obj, loc, key, l);
    return f ? get_bool(f, l, out, reterr) : 0;
}

static int opt_enum(const json_t *obj, const char *loc, const char *key, const char *const *table, size_t n,
                    uint32_t *out, fy_error **reterr) {
    char l[LOC_MAX];
    json_t *f = opt(obj, loc, key, l);
    return f ? get_enum(f, table, n, l, out, reterr) : 0;
}
#define OPT_ENUM(obj, loc, key, table, out, e) opt_enum(obj, loc, key, table, FY_ARRAY_SIZE(table), out, e)

/* A host path or null (for none), replacing *field. */
static int opt_path(const json_t *obj, const char *loc, const char *key, char **field, fy_error **reterr) {
    char l[LOC_MAX];
    json_t *f = opt(obj, loc, key, l);
    return f ? set_opt_path(f, l, field, reterr) : 0;
}

/* A string that passes check, if any, replacing *field with a copy. */
static int opt_string(const json_t *obj, const char *loc, const char *key, check_fn check, char **field,
                      fy_error **reterr) {
    char l[LOC_MAX];
    json_t *f = opt(obj, loc, key, l);
    return f ? set_string(f, l, check, field, reterr) : 0;
}

static int parse_isolation(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"min_level", "preferred_level", "controls", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0 || (r = OPT_ENUM(o, loc, "min_level", level_names, &p->min_level, reterr)) < 0 ||
        (r = OPT_ENUM(o, loc, "preferred_level", level_names, &p->preferred_level, reterr)) < 0)
        return r;
    json_t *v;
    if ((v = json_object_get(o, "controls"))) {
        char cl[LOC_MAX], l[LOC_MAX];
        sub(cl, loc, "controls");
        if ((r = want(v, JSON_OBJECT, "an object", cl, reterr)) < 0)
            return r;
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m) {
            sub(l, cl, key);
            int c = NAME_LOOKUP(control_keys, key);
            if (c <= 0)
                return bad(reterr, l, "unknown control \"%s\"", key);
            uint32_t mode;
            if ((r = GET_ENUM(m, mode_names, l, &mode, reterr)) < 0)
                return r;
            p->control[c] = (uint8_t)mode;
        }
    }
    return 0;
}

static int parse_filesystem(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"source", "build", "output", "toolchains", "binds",
                                       "runtime_paths", "workdir", "hostname", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0)
        return r;
    char l[LOC_MAX], l2[LOC_MAX];
    json_t *v;
    if ((v = json_object_get(o, "source")) && json_is_null(v)) {
        free(p->source);
        p->source = NULL;
    } else if (v) {
        static const char *const skeys[] = {"path", "writable", NULL};
        sub(l, loc, "source");
        if ((r = want(v, JSON_OBJECT, "an object or null", l, reterr)) < 0 || (r = check_keys(v, skeys, l, reterr)) < 0)
            return r;
        json_t *w = json_object_get(v, "path");
        sub(l2, l, "path");
        if (!w)
            return bad(reterr, l2, "missing (use \"source\": null for no source)");
        if ((r = want(w, JSON_STRING, "a string", l2, reterr)) < 0 ||
            (r = set_opt_path(w, l2, &p->source, reterr)) < 0 ||
            (r = opt_bool(v, l, "writable", &p->source_writable, reterr)) < 0)
            return r;
    }
    if ((r = opt_path(o, loc, "build", &p->build, reterr)) < 0 ||
        (r = opt_path(o, loc, "output", &p->output, reterr)) < 0)
        return r;
    if ((v = json_object_get(o, "toolchains"))) {
        sub(l, loc, "toolchains");
        if ((r = want_bounded(v, JSON_OBJECT, l, reterr)) < 0)
            return r;
        VEC_EACH(&p->toolchains, struct pol_toolchain, t) { free(t->name); free(t->host); }
        p->toolchains.n = 0;
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m) {
            const char *host;
            sub(l2, l, key);
            if ((r = check_simple_name(key, "toolchain name", l2, reterr)) < 0 ||
                (r = get_string(m, l2, &host, reterr)) < 0 || (r = check_host_path(host, l2, reterr)) < 0)
                return r;
            if (policy_set_toolchain(p, key, host) < 0)
                return oom(reterr);
        }
    }
    if ((v = json_object_get(o, "binds"))) {
        static const char *const bkeys[] = {"host", "target", "writable", "optional", NULL};
        sub(l, loc, "binds");
        if ((r = want_bounded(v, JSON_ARRAY, l, reterr)) < 0)
            return r;
        VEC_EACH(&p->binds, struct pol_bind, b) { free(b->host); free(b->target); }
        p->binds.n = 0;
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it) {
            const char *host = NULL, *target = NULL;
            bool writable = false, optional = false;
            idx(l2, l, i);
            if ((r = want_object(it, bkeys, l2, reterr)) < 0 ||
                (r = need_string(it, l2, "host", check_host_path, &host, reterr)) < 0 ||
                (r = need_string(it, l2, "target", check_sandbox_target, &target, reterr)) < 0 ||
                (r = opt_bool(it, l2, "writable", &writable, reterr)) < 0 ||
                (r = opt_bool(it, l2, "optional", &optional, reterr)) < 0)
                return r;
            struct pol_bind *b = vec_push(&p->binds);
            if (!b)
                return oom(reterr);
            b->host = strdup(host);
            b->target = strdup(target);
            b->flags = (writable ? FY_BIND_WRITABLE : 0) | (optional ? FY_BIND_OPTIONAL : 0);
            if (!b->host || !b->target)
                return oom(reterr);
        }
    }
    if ((v = json_object_get(o, "runtime_paths"))) {
        sub(l, loc, "runtime_paths");
        free_strings(&p->runtime_paths);
        if ((r = parse_paths_array(v, l, &p->runtime_paths, true, reterr)) < 0)
            return r;
    }
    if ((r = opt_string(o, loc, "workdir", NULL, &p->workdir, reterr)) < 0 ||
        (r = opt_string(o, loc, "hostname", check_hostname, &p->hostname, reterr)) < 0)
        return r;
    return 0;
}

static int parse_environment(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"set", "allow", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0)
        return r;
    char l[LOC_MAX], l2[LOC_MAX];
    json_t *v;
    if ((v = json_object_get(o, "set"))) {
        sub(l, loc, "set");
        if ((r = want_bounded(v, JSON_OBJECT, l, reterr)) < 0)
            return r;
        VEC_EACH(&p->env_set, struct pol_env, e) { free(e->name); free(e->value); }
        p->env_set.n = 0;
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m) {
            const char *val;
            sub(l2, l, key);
            if ((r = check_env_name(key, l2, reterr)) < 0 || (r = get_string(m, l2, &val, reterr)) < 0 ||
                (r = check_env_value(val, l2, reterr)) < 0)
                return r;
            if (policy_add_env(p, key, val) < 0)
                return oom(reterr);
        }
    }
    if ((v = json_object_get(o, "allow"))) {
        sub(l, loc, "allow");
        if ((r = want_bounded(v, JSON_ARRAY, l, reterr)) < 0)
            return r;
        free_strings(&p->env_allow);
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it) {
            const char *s;
            idx(l2, l, i);
            if ((r = get_string(it, l2, &s, reterr)) < 0 || (r = check_env_name(s, l2, reterr)) < 0)
                return r;
            if (policy_has_string(&p->env_allow, s))
                return bad(reterr, l2, "%s is listed twice", s);
            if (policy_add_string(&p->env_allow, s) < 0)
                return oom(reterr);
        }
    }
    return 0;
}

static int parse_network(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"mode", "dns", "destinations", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0 || (r = OPT_ENUM(o, loc, "mode", net_mode_names, &p->net_mode, reterr)) < 0 ||
        (r = OPT_ENUM(o, loc, "dns", dns_names, &p->dns, reterr)) < 0)
        return r;
    json_t *v;
    if ((v = json_object_get(o, "destinations"))) {
        static const char *const dkeys[] = {"host", "proto", "ports", NULL};
        char l[LOC_MAX], l2[LOC_MAX], l3[LOC_MAX];
        sub(l, loc, "destinations");
        if ((r = want_bounded(v, JSON_ARRAY, l, reterr)) < 0)
            return r;
        VEC_EACH(&p->dests, struct pol_dest, d) free(d->host);
        p->dests.n = 0;
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it) {
            const char *host;
            uint32_t proto = FY_PROTO_TCP;
            json_t *f;
            idx(l2, l, i);
            if ((r = want_object(it, dkeys, l2, reterr)) < 0 ||
                (r = need_string(it, l2, "host", check_destination_host, &host, reterr)) < 0 ||
                (r = OPT_ENUM(it, l2, "proto", proto_names, &proto, reterr)) < 0 ||
                (r = need(it, l2, "ports", l3, &f, reterr)) < 0 ||
                (r = want(f, JSON_ARRAY, "an array [min, max]", l3, reterr)) < 0)
                return r;
            if (json_array_size(f) != 2 || !json_is_integer(json_array_get(f, 0)) ||
                !json_is_integer(json_array_get(f, 1)))
                return bad(reterr, l3, "expected [min, max] with two integers");
            json_int_t lo = json_integer_value(json_array_get(f, 0)), hi = json_integer_value(json_array_get(f, 1));
            if (lo < 1 || hi > 65535 || lo > hi)
                return bad(reterr, l3, "ports must be within 1..65535 with min <= max");
            struct pol_dest *d = vec_push(&p->dests);
            if (!d || !(d->host = strdup(host)))
                return oom(reterr);
            d->proto = proto;
            d->port_min = (uint32_t)lo;
            d->port_max = (uint32_t)hi;
        }
    }
    return 0;
}

static int parse_resources(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    int r = want(o, JSON_OBJECT, "an object", loc, reterr);
    if (r < 0)
        return r;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        char l[LOC_MAX];
        sub(l, loc, key);
        int lim = NAME_LOOKUP(limit_keys, key);
        if (lim <= 0)
            return bad(reterr, l, "unknown key \"%s\"", key);
        enum numkind kind = NUM_SIZE;
        if (lim == FY_LIMIT_WALL_TIME || lim == FY_LIMIT_GRACE)
            kind = NUM_DURATION;
        else if (lim == FY_LIMIT_PIDS || lim == FY_LIMIT_FILES || lim == FY_LIMIT_NOFILE || lim == FY_LIMIT_CPU_MILLIS)
            kind = NUM_COUNT;
        uint64_t val = 0;
        if ((r = get_number(v, kind, l, &val, reterr)) < 0 || (r = check_limit((uint32_t)lim, val, l, reterr)) < 0)
            return r;
        p->limit[lim] = val;
    }
    return 0;
}

static int parse_process(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"user", "seccomp", "id_range", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0 || (r = OPT_ENUM(o, loc, "user", user_names, &p->user, reterr)) < 0 ||
        (r = OPT_ENUM(o, loc, "seccomp", seccomp_class_names, &p->seccomp_class, reterr)) < 0)
        return r;
    json_t *v;
    if ((v = json_object_get(o, "id_range"))) {
        static const char *const ikeys[] = {"first", "count", NULL};
        char l[LOC_MAX], l2[LOC_MAX];
        sub(l, loc, "id_range");
        if ((r = want_object(v, ikeys, l, reterr)) < 0)
            return r;
        const char *names[] = {"first", "count"};
        uint32_t *fields[] = {&p->id_first, &p->id_count};
        for (size_t i = 0; i < 2; i++) {
            json_t *f = json_object_get(v, names[i]);
            if (!f)
                continue;
            sub(l2, l, names[i]);
            if (!json_is_integer(f))
                return bad(reterr, l2, "expected an integer, got %s", type_name(f));
            json_int_t n = json_integer_value(f);
            if (n < 1 || n > (json_int_t)UINT32_MAX - 1)
                return bad(reterr, l2, "must be between 1 and %" PRIu32, UINT32_MAX - 1);
            *fields[i] = (uint32_t)n;
        }
    }
    return 0;
}

static int parse_devices(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"allowed", "gpu", "pty", "usb", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0)
        return r;
    json_t *v;
    if ((v = json_object_get(o, "allowed"))) {
        static const char *const dkeys[] = {"path", "writable", NULL};
        char l[LOC_MAX], l2[LOC_MAX];
        sub(l, loc, "allowed");
        if ((r = want_bounded(v, JSON_ARRAY, l, reterr)) < 0)
            return r;
        VEC_EACH(&p->devices, struct pol_device, d) free(d->path);
        p->devices.n = 0;
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it) {
            const char *path;
            bool writable = false;
            idx(l2, l, i);
            if ((r = want_object(it, dkeys, l2, reterr)) < 0 ||
                (r = need_string(it, l2, "path", check_device_path, &path, reterr)) < 0 ||
                (r = opt_bool(it, l2, "writable", &writable, reterr)) < 0)
                return r;
            struct pol_device *d = vec_push(&p->devices);
            if (!d || !(d->path = strdup(path)))
                return oom(reterr);
            d->writable = writable;
        }
    }
    if ((r = OPT_ENUM(o, loc, "gpu", devices_mode_names, &p->gpu, reterr)) < 0 ||
        (r = OPT_ENUM(o, loc, "usb", devices_mode_names, &p->usb, reterr)) < 0 ||
        (r = OPT_ENUM(o, loc, "pty", pty_mode_names, &p->pty, reterr)) < 0)
        return r;
    return 0;
}

static int parse_secrets(fy_policy *p, const json_t *v, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"name", "delivery", "target", "file", NULL};
    int r = want_bounded(v, JSON_ARRAY, loc, reterr);
    if (r < 0)
        return r;
    VEC_EACH(&p->secrets, struct pol_secret, s) {
        free(s->name);
        free(s->target);
        free(s->host_path);
        secret_release(s->value);
    }
    p->secrets.n = 0;
    size_t i;
    json_t *it;
    json_array_foreach((json_t *)v, i, it) {
        char l[LOC_MAX], l2[LOC_MAX];
        const char *name, *target = NULL, *file = NULL;
        uint32_t delivery = 0;
        json_t *f;
        idx(l, loc, i);
        if ((r = want_object(it, keys, l, reterr)) < 0 || (r = need_string(it, l, "name", NULL, &name, reterr)) < 0 ||
            (r = need(it, l, "delivery", l2, &f, reterr)) < 0 ||
            (r = GET_ENUM(f, delivery_names, l2, &delivery, reterr)) < 0)
            return r;
        sub(l2, l, "target");
        if ((f = json_object_get(it, "target")) && !json_is_null(f) && (r = get_string(f, l2, &target, reterr)) < 0)
            return r;
        sub(l2, l, "file");
        if (!(f = json_object_get(it, "file")) || json_is_null(f))
            return bad(reterr, l2, "a secret in a policy file needs \"file\" (values never appear in policy files)");
        if ((r = get_string(f, l2, &file, reterr)) < 0 || (r = check_host_path(file, l2, reterr)) < 0)
            return r;
        struct pol_secret *s = vec_push(&p->secrets);
        if (!s)
            return oom(reterr);
        s->delivery = delivery;
        s->name = strdup(name);
        s->target = util_strdup(target);
        s->host_path = strdup(file);
        if (!s->name || (target && !s->target) || !s->host_path)
            return oom(reterr);
    }
    return 0;
}

/* ---- JSON syntax errors, in the policy's terms ---- */

/* When jansson refuses a document, a second, minimal reading says where:
 * the JSON path of the value (or key) being read, the line and column where
 * its token starts and, for a syntax error, what was expected there. It
 * stops at its own first syntax error or at the first token that ends at or
 * after `stop`, the offset where jansson gave up, whichever comes first
 * (jansson accepted everything before that). Deeper than SCAN_PATH_DEPTH,
 * far beyond any policy, the path is not kept and the error names "$". */
#define SCAN_PATH_DEPTH 16
#define SCAN_MAX_DEPTH 4096 /* (jansson's own limit is 2048) */

enum expect { X_TOP, X_VALUE, X_VALUE_OR_END, X_KEY, X_KEY_OR_END, X_COLON, X_NEXT, X_NOTHING };

struct scan {
    const char *doc;
    size_t len, stop;
    size_t depth;
    bool lost;                 /* nested deeper than SCAN_MAX_DEPTH: stopped */
    unsigned char arrays[SCAN_MAX_DEPTH / 8]; /* which levels are arrays */
    struct {
        size_t index;          /* arrays: of the current element */
        size_t key, key_len;   /* objects: the last key's text, quotes excluded */
    } lv[SCAN_PATH_DEPTH];
    enum expect x;             /* what the token it stopped on had to be */
    size_t tok, tok_end;       /* that token */
    bool at_key;               /* it is an object key */
    char problem[160];         /* the syntax error it found there, or "" */
    size_t problem_at;         /* where: the token, or a character in a string */
};

static bool is_array(const struct scan *s, size_t level) { return s->arrays[level / 8] >> level % 8 & 1; }
static bool in_array(const struct scan *s) { return s->depth && is_array(s, s->depth - 1); }

static const char *expected(const struct scan *s) {
    switch (s->x) {
    case X_TOP: return "expected '{' (a policy is a JSON object)";
    case X_VALUE: return "expected a value";
    case X_VALUE_OR_END: return "expected a value or ']'";
    case X_KEY: return "expected a key in double quotes";
    case X_KEY_OR_END: return "expected a key in double quotes or '}'";
    case X_COLON: return "expected ':'";
    case X_NEXT: return in_array(s) ? "expected ',' or ']'" : "expected ',' or '}'";
    default: return "expected the end of the document";
    }
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static int hex_value(char c) {
    return is_digit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* \uXXXX at s (the 'u'), or -1 when the 4 hex digits are not there. */
static long hex4(const char *s, size_t n) {
    long v = 0;
    for (size_t i = 1; i <= 4; i++) {
        int h = i < n ? hex_value(s[i]) : -1;
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* A JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *s, size_t n) {
    size_t i = s[0] == '-', d;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && is_digit(s[i]))
        while (i < n && is_digit(s[i]))
            i++;
    else
        return false;
    if (i < n && s[i] == '.') {
        for (d = ++i; i < n && is_digit(s[i]); i++) {}
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i += i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-') ? 2 : 1;
        for (d = i; i < n && is_digit(s[i]); i++) {}
        if (i == d)
            return false;
    }
    return i == n;
}

/* The string token starting at doc[i] (a '"'): its end, or 0 with
 * s->problem set. */
static size_t scan_string(struct scan *s, size_t i) {
    const char *d = s->doc;
    for (i++; i < s->len; i++) {
        unsigned char c = (unsigned char)d[i];
        if (c == '"')
            return i + 1;
        s->problem_at = i;
        if (c < 0x20) {
            snprintf(s->problem, sizeof(s->problem), "control character U+%04X in a string (write it as \\u%04x)",
                     c, c);
            return 0;
        }
        if (c != '\\')
            continue;
        if (++i >= s->len)
            break;
        if (strchr("\"\\/bfnrt", d[i]) && d[i])
            continue;
        if (d[i] != 'u') {
            if (d[i] > 0x20 && d[i] < 0x7f)
                snprintf(s->problem, sizeof(s->problem), "invalid escape \\%c in a string", d[i]);
            else
                snprintf(s->problem, sizeof(s->problem), "invalid escape in a string");
            return 0;
        }
        long u = hex4(d + i, s->len - i), lo = -1;
        if (u >= 0xd800 && u <= 0xdbff && i + 6 < s->len && d[i + 5] == '\\' && d[i + 6] == 'u')
            lo = hex4(d + i + 6, s->len - i - 6);
        if (u < 0) {
            snprintf(s->problem, sizeof(s->problem), "invalid escape in a string (\\u needs 4 hex digits)");
            return 0;
        }
        if ((u >= 0xd800 && u <= 0xdbff && !(lo >= 0xdc00 && lo <= 0xdfff)) || (u >= 0xdc00 && u <= 0xdfff)) {
            snprintf(s->problem, sizeof(s->problem), "\\u%04lx in a string is half a surrogate pair", u);
            return 0;
        }
        i += lo >= 0 ? 10 : 4;
    }
    s->problem_at = s->tok;
    snprintf(s->problem, sizeof(s->problem), "a string is not closed before the end of the document");
    return 0;
}

/* Sets s->problem to "expected ..., found <the token at s->tok>". */
static void unexpected(struct scan *s, size_t end) {
    const char *t = s->doc + s->tok;
    size_t n = end - s->tok;
    unsigned char c = s->tok < s->len ? (unsigned char)*t : 0;
    s->problem_at = s->tok;
    if (s->tok >= s->len)
        snprintf(s->problem, sizeof(s->problem), "%s, found the end of the document", expected(s));
    else if (c == '"')
        snprintf(s->problem, sizeof(s->problem), "%s, found a string", expected(s));
    else if (n == 1 && (c < 0x21 || c > 0x7e))
        snprintf(s->problem, sizeof(s->problem), "%s, found byte 0x%02x", expected(s), c);
    else if (c == '\'')
        snprintf(s->problem, sizeof(s->problem), "%s, found \"'\"", expected(s));
    else if ((is_digit((char)c) || c == '-') && (s->x == X_VALUE || s->x == X_VALUE_OR_END))
        snprintf(s->problem, sizeof(s->problem), "invalid number '%.*s'", (int)(n > 24 ? 24 : n), t);
    else
        snprintf(s->problem, sizeof(s->problem), "%s, found '%.*s'", expected(s), (int)(n > 24 ? 24 : n), t);
}

static void scan_doc(struct scan *s) {
    const char *d = s->doc;
    size_t i = 0;
    s->x = X_TOP;
    for (;;) {
        while (i < s->len && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r'))
            i++;
        s->tok = i;
        s->at_key = false;
        if (i >= s->len) {
            if (s->x != X_NOTHING)
                unexpected(s, i);
            return;
        }
        char c = d[i];
        size_t end = i + 1;
        bool value_slot = s->x == X_TOP || s->x == X_VALUE || s->x == X_VALUE_OR_END;
        bool array = in_array(s), path_kept = s->depth && s->depth <= SCAN_PATH_DEPTH, ok;
        if (c == '{' || c == '[') {
            ok = value_slot;
        } else if (c == '}' || c == ']') {
            ok = (c == '}' && s->x == X_KEY_OR_END) || (c == ']' && s->x == X_VALUE_OR_END) ||
                 (s->x == X_NEXT && array == (c == ']'));
        } else if (c == ',') {
            ok = s->x == X_NEXT;
        } else if (c == ':') {
            ok = s->x == X_COLON;
        } else if (c == '"') {
            if (!(end = scan_string(s, i)))
                return;
            s->at_key = s->x == X_KEY || s->x == X_KEY_OR_END;
            ok = s->at_key || (value_slot && s->x != X_TOP);
            if (s->at_key && path_kept) {
                s->lv[s->depth - 1].key = i + 1;
                s->lv[s->depth - 1].key_len = end - i - 2;
            }
        } else {
            while (end < s->len && (is_digit(d[end]) || (d[end] >= 'a' && d[end] <= 'z') ||
                                    (d[end] >= 'A' && d[end] <= 'Z') || strchr("+-.", d[end])) && d[end])
                end++;
            if (!(is_digit(c) || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
                end = i + 1;
            size_t n = end - i;
            ok = value_slot && s->x != X_TOP &&
                 ((n == 4 && memcmp(d + i, "true", 4) == 0) || (n == 5 && memcmp(d + i, "false", 5) == 0) ||
                  (n == 4 && memcmp(d + i, "null", 4) == 0) || is_json_number(d + i, n));
        }
        s->tok_end = end;
        if (!ok) {
            unexpected(s, end);
            return;
        }
        if (end >= s->stop)
            return;
        i = end;
        if (c == '{' || c == '[') {
            if (s->depth == SCAN_MAX_DEPTH) {
                s->lost = true;
                return;
            }
            s->arrays[s->depth / 8] = (unsigned char)((s->arrays[s->depth / 8] & ~(1u << s->depth % 8)) |
                                                      (c == '[') << s->depth % 8);
            if (s->depth < SCAN_PATH_DEPTH)
                s->lv[s->depth].index = s->lv[s->depth].key_len = 0;
            s->depth++;
            s->x = c == '[' ? X_VALUE_OR_END : X_KEY_OR_END;
        } else if (c == ',') {
            s->x = array ? X_VALUE : X_KEY;
            if (array && path_kept)
                s->lv[s->depth - 1].index++;
        } else if (c == ':') {
            s->x = X_VALUE;
        } else if (s->at_key) {
            s->x = X_COLON;
        } else {
            if (c == '}' || c == ']')
                s->depth--;
            s->x = s->depth ? X_NEXT : X_NOTHING;
        }
    }
}

/* Decodes a key's text (valid JSON string contents) into out, stopping at
 * \u0000 and where out is full. */
static void decode_key(const char *k, size_t n, char *out, size_t size) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size; i++) {
        if (k[i] != '\\') {
            out[o++] = k[i];
            continue;
        }
        char e = k[++i];
        const char *plain = strchr("\"\\/", e);
        if (e != 'u') {
            out[o++] = plain ? e : e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : '\t';
            continue;
        }
        long u = hex4(k + i, n - i);
        i += 4;
        if (u >= 0xd800 && u <= 0xdbff) {
            u = 0x10000 + ((u - 0xd800) << 10) + (hex4(k + i + 2, n - i - 2) - 0xdc00);
            i += 6;
        }
        if (u <= 0)
            break;
        if (u < 0x80) {
            out[o++] = (char)u;
        } else if (u < 0x800) {
            out[o++] = (char)(0xc0 | (u >> 6));
            out[o++] = (char)(0x80 | (u & 0x3f));
        } else if (u < 0x10000) {
            out[o++] = (char)(0xe0 | (u >> 12));
            out[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
            out[o++] = (char)(0x80 | (u & 0x3f));
        } else {
            out[o++] = (char)(0xf0 | (u >> 18));
            out[o++] = (char)(0x80 | ((u >> 12) & 0x3f));
            out[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
            out[o++] = (char)(0x80 | (u & 0x3f));
        }
    }
    out[o] = '\0';
}

/* The path of the value (or, with name_key, the key) the scan stopped at. */
static void scan_path(const struct scan *s, bool name_key, char *out) {
    snprintf(out, LOC_MAX, "$");
    if (s->lost || s->depth > SCAN_PATH_DEPTH)
        return;
    bool in_slot = s->x == X_VALUE || s->x == X_VALUE_OR_END || s->x == X_COLON || (name_key && s->at_key);
    for (size_t l = 0; l < s->depth; l++) {
        char step[LOC_MAX];
        if (l + 1 == s->depth && !in_slot)
            break;
        if (is_array(s, l)) {
            idx(step, out, s->lv[l].index);
        } else {
            char key[LOC_MAX / 2];
            decode_key(s->doc + s->lv[l].key, s->lv[l].key_len, key, sizeof(key));
            sub(step, out, key);
        }
        memcpy(out, step, LOC_MAX);
    }
}

static void line_col(const char *doc, size_t at, int *line, int *col) {
    *line = *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (doc[i] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)doc[i] & 0xc0) != 0x80) {
            ++*col;
        }
    }
}

/* jansson's refusal of the document, in our words at a JSON path. */
static int parse_error(const char *doc, size_t len, const json_error_t *je, fy_error **reterr) {
    enum json_error_code code = json_error_code(je);
    if (code == json_error_out_of_memory)
        return oom(reterr);
    size_t pos = je->position < 0 ? 0 : (size_t)je->position > len ? len : (size_t)je->position;
    struct scan s = {.doc = doc, .len = len, .stop = code == json_error_premature_end_of_input ? len + 1 : pos};
    scan_doc(&s);
    char loc[LOC_MAX], what[200];
    size_t at = s.lost ? pos : s.tok;
    const char *t = doc + s.tok;
    size_t tn = s.tok_end > s.tok ? s.tok_end - s.tok : 0;
    int n = (int)(tn > 24 ? 24 : tn);
    scan_path(&s, code == json_error_duplicate_key, loc);
    if (s.problem[0]) {
        at = s.problem_at;
        snprintf(what, sizeof(what), "%s", s.problem);
    } else if (code == json_error_numeric_overflow) {
        snprintf(what, sizeof(what), "number %.*s%s is out of range", n, t, tn > 24 ? "..." : "");
    } else if (code == json_error_null_character) {
        snprintf(what, sizeof(what), "\\u0000 (NUL) is not allowed in a string");
    } else if (code == json_error_null_byte_in_key) {
        snprintf(what, sizeof(what), "\\u0000 (NUL) is not allowed in a key");
    } else if (code == json_error_duplicate_key) {
        snprintf(what, sizeof(what), "this key appears twice in its object");
    } else if (code == json_error_invalid_utf8) {
        at = pos;
        snprintf(what, sizeof(what), "invalid UTF-8 (byte 0x%02x)", pos < len ? (unsigned char)doc[pos] : 0);
    } else if (code == json_error_stack_overflow) {
        snprintf(what, sizeof(what), "nested too deeply");
    } else {
        snprintf(what, sizeof(what), "invalid JSON");
    }
    int line, col;
    line_col(doc, at, &line, &col);
    return bad(reterr, loc, "%s (line %d, column %d)", what, line, col);
}

int policy_from_json(fy_policy *p, const char *json, size_t len, fy_error **reterr) {
    if (len > POLICY_JSON_MAX)
        return bad(reterr, "$", "policy document larger than %u bytes", POLICY_JSON_MAX);
    const char *nul = memchr(json, '\0', len);
    if (nul) {
        int line, col;
        line_col(json, (size_t)(nul - json), &line, &col);
        return bad(reterr, "$", "policy document contains a NUL byte (line %d, column %d)", line, col);
    }
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return parse_error(json, len, &je, reterr);
    static const char *const keys[] = {"version", "profile", "isolation", "filesystem", "environment",
                                       "network", "resources", "process", "devices", "secrets", NULL};
    int r = want_object(root, keys, "$", reterr);
    json_t *v;
    if (r >= 0 && (v = json_object_get(root, "version"))) {
        if (!json_is_integer(v))
            r = bad(reterr, "$.version", "expected an integer, got %s", type_name(v));
        else if (json_integer_value(v) != 1)
            r = bad(reterr, "$.version", "unsupported policy version %" JSON_INTEGER_FORMAT " (this library reads 1)",
                    json_integer_value(v));
    }
    if (r >= 0 && (v = json_object_get(root, "profile"))) {
        uint32_t prof;
        r = GET_ENUM(v, profile_names, "$.profile", &prof, reterr);
        if (r >= 0 && policy_apply_profile(p, prof) < 0)
            r = oom(reterr);
    }
    static const struct {
        const char *key;
        int (*fn)(fy_policy *, const json_t *, const char *, fy_error **);
    } sections[] = {
        {"isolation", parse_isolation}, {"filesystem", parse_filesystem},
        {"environment", parse_environment}, {"network", parse_network},
        {"resources", parse_resources}, {"process", parse_process},
        {"devices", parse_devices}, {"secrets", parse_secrets},
    };
    for (size_t i = 0; r >= 0 && i < FY_ARRAY_SIZE(sections); i++)
        if ((v = json_object_get(root, sections[i].key))) {
            char l[LOC_MAX];
            sub(l, "$", sections[i].key);
            r = sections[i].fn(p, v, l, reterr);
        }
    if (r >= 0)
        r = policy_validate_doc(p, root, reterr);
    json_decref(root);
    return r;
}

/* ---- canonical output ---- */

static json_t *jnum(uint64_t v) {
    return v == FY_UNLIMITED ? json_string("unlimited") : json_integer((json_int_t)v);
}
static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

char *policy_to_json(const fy_policy *p) {
    json_t *root = json_object();
    if (!root)
        return NULL;
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "profile", json_string(profile_names[p->profile]));

    json_t *iso = json_object(), *ctl = json_object();
    json_object_set_new(iso, "min_level", json_string(level_names[p->min_level]));
    json_object_set_new(iso, "preferred_level", json_string(level_names[p->preferred_level]));
    for (uint32_t c = 1; c <= FY_CONTROL_MAX_; c++)
        json_object_set_new(ctl, control_key(c), json_string(mode_name(p->control[c])));
    json_object_set_new(iso, "controls", ctl);
    json_object_set_new(root, "isolation", iso);

    json_t *fs = json_object(), *src = json_object(), *tcs = json_object(), *binds = json_array(),
           *rps = json_array();
    if (p->source) {
        json_object_set_new(src, "path", json_string(p->source));
        json_object_set_new(src, "writable", json_boolean(p->source_writable));
        json_object_set_new(fs, "source", src);
    } else {
        json_decref(src);
        json_object_set_new(fs, "source", json_null());
    }
    json_object_set_new(fs, "build", jstr(p->build));
    json_object_set_new(fs, "output", jstr(p->output));
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) json_object_set_new(tcs, t->name, json_string(t->host));
    json_object_set_new(fs, "toolchains", tcs);
    VEC_EACH(&p->binds, struct pol_bind, b) {
        json_t *bo = json_object();
        json_object_set_new(bo, "host", json_string(b->host));
        json_object_set_new(bo, "target", json_string(b->target));
        json_object_set_new(bo, "writable", json_boolean(b->flags & FY_BIND_WRITABLE));
        json_object_set_new(bo, "optional", json_boolean(b->flags & FY_BIND_OPTIONAL));
        json_array_append_new(binds, bo);
    }
    json_object_set_new(fs, "binds", binds);
    VEC_EACH(&p->runtime_paths, char *, s) json_array_append_new(rps, json_string(*s));
    json_object_set_new(fs, "runtime_paths", rps);
    json_object_set_new(fs, "workdir", jstr(p->workdir));
    json_object_set_new(fs, "hostname", jstr(p->hostname));
    json_object_set_new(root, "filesystem", fs);

    json_t *env = json_object(), *set = json_object(), *allow = json_array();
    VEC_EACH(&p->env_set, struct pol_env, e) json_object_set_new(set, e->name, json_string(e->value));
    VEC_EACH(&p->env_allow, char *, s) json_array_append_new(allow, json_string(*s));
    json_object_set_new(env, "set", set);
    json_object_set_new(env, "allow", allow);
    json_object_set_new(root, "environment", env);

    json_t *net = json_object(), *dests = json_array();
    json_object_set_new(net, "mode", json_string(net_mode_name(p->net_mode)));
    json_object_set_new(net, "dns", json_string(dns_name(p->dns)));
    VEC_EACH(&p->dests, struct pol_dest, d) {
        json_t *o = json_object();
        json_object_set_new(o, "host", json_string(d->host));
        json_object_set_new(o, "proto", json_string(proto_name(d->proto)));
        json_object_set_new(o, "ports", json_pack("[II]", (json_int_t)d->port_min, (json_int_t)d->port_max));
        json_array_append_new(dests, o);
    }
    json_object_set_new(net, "destinations", dests);
    json_object_set_new(root, "network", net);

    json_t *res = json_object();
    for (uint32_t l = 1; l <= FY_LIMIT_MAX_; l++)
        json_object_set_new(res, limit_key(l), jnum(p->limit[l]));
    json_object_set_new(root, "resources", res);

    json_t *proc = json_object();
    json_object_set_new(proc, "user", json_string(user_name(p->user)));
    json_object_set_new(proc, "seccomp", json_string(seccomp_class_name(p->seccomp_class)));
    json_object_set_new(proc, "id_range", json_pack("{sIsI}", "first", (json_int_t)p->id_first, "count",
                                                    (json_int_t)p->id_count));
    json_object_set_new(root, "process", proc);

    json_t *dev = json_object(), *allowed = json_array();
    VEC_EACH(&p->devices, struct pol_device, d) {
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(d->path));
        json_object_set_new(o, "writable", json_boolean(d->writable));
        json_array_append_new(allowed, o);
    }
    json_object_set_new(dev, "allowed", allowed);
    json_object_set_new(dev, "gpu", json_string(devices_mode_name(p->gpu)));
    json_object_set_new(dev, "usb", json_string(devices_mode_name(p->usb)));
    json_object_set_new(dev, "pty", json_string(pty_mode_name(p->pty)));
    json_object_set_new(root, "devices", dev);

    json_t *secs = json_array();
    VEC_EACH(&p->secrets, struct pol_secret, s) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(s->name));
        json_object_set_new(o, "delivery", json_string(delivery_name(s->delivery)));
        json_object_set_new(o, "target", jstr(s->target));
        json_object_set_new(o, "file", jstr(s->host_path));
        json_array_append_new(secs, o);
    }
    json_object_set_new(root, "secrets", secs);

    char *out = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    return out;
}
