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
    /* A decimal fraction (1.5s, 0.5GiB): exact, to the base unit (us, B). */
    size_t nf = 0;
    const char *frac = NULL;
    if (s[nd] == '.') {
        frac = s + nd + 1;
        nf = strspn(frac, "0123456789");
        if (nf == 0 || nf > 9)
            return bad(reterr, loc, "\"%s\": %s", s,
                       nf ? "at most 9 digits after the point" : "a digit is needed after the point");
    }
    const char *suffix = frac ? frac + nf : s + nd;
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
    uint64_t part = 0;
    if (frac) {
        uint64_t f = 0, scale = 1;
        for (size_t i = 0; i < nf; i++) {
            f = f * 10 + (uint64_t)(frac[i] - '0');
            scale *= 10;
        }
        unsigned __int128 x = (unsigned __int128)f * u->mult;
        if (x % scale)
            return bad(reterr, loc, "\"%s\" is not a whole number of %s", s,
                       kind == NUM_DURATION ? "microseconds" : "bytes");
        part = (uint64_t)(x / scale); /* < u->mult */
    }
    if (n * u->mult > UINT64_MAX - 1 - part)
        return bad(reterr, loc, "\"%s\" is too large", s);
    *out = n * u->mult + part;
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
                                       "runtime_paths", "workdir", "hostname", "image", NULL};
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
        (r = opt_string(o, loc, "hostname", check_hostname, &p->hostname, reterr)) < 0 ||
        (r = opt_string(o, loc, "image", check_image_ref, &p->image, reterr)) < 0)
        return r;
    return 0;
}

static int parse_environment(fy_policy *p, const json_t *o, const char *loc, fy_error **reterr) {
    static const char *const keys[] = {"set", "allow", "defaults", NULL};
    int r = want_object(o, keys, loc, reterr);
    if (r < 0)
        return r;
    char l[LOC_MAX], l2[LOC_MAX];
    json_t *v;
    if ((v = json_object_get(o, "defaults"))) {
        bool defaults = true;
        sub(l, loc, "defaults");
        if ((r = get_bool(v, l, &defaults, reterr)) < 0)
            return r;
        p->env_exact = !defaults;
    }
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
    static const char *const keys[] = {"mode", "dns", "destinations", "job", NULL};
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
    if ((v = json_object_get(o, "job"))) {
        /* {"member": NAME}: this attempt joins its job's network under
         * that name (fy_prepare_member); null: it does not. */
        char l[LOC_MAX];
        sub(l, loc, "job");
        if (json_is_null(v)) {
            free(p->job_member);
            p->job_member = NULL;
            p->njob_ports = 0;
        } else {
            /* member: optional when the policy already names one (a job
             * file's member policy, the CLI naming it); ports: the TCP
             * ports this member connects to on the others, which its
             * Landlock layer then allows (linux-net.c). */
            static const char *const jkeys[] = {"member", "ports", NULL};
            const char *m = NULL;
            char l2[LOC_MAX];
            json_t *f;
            if ((r = want_object(v, jkeys, l, reterr)) < 0)
                return r;
            if (json_object_get(v, "member") || !json_object_get(v, "ports"))
                if ((r = need_string(v, l, "member", check_job_member, &m, reterr)) < 0)
                    return r;
            if ((f = opt(v, l, "ports", l2))) {
                if (!json_is_array(f) || json_array_size(f) > POL_JOB_PORTS_MAX)
                    return bad(reterr, l2, "an array of at most %d TCP ports", POL_JOB_PORTS_MAX);
                uint16_t ports[POL_JOB_PORTS_MAX] = {0};
                uint32_t n = 0;
                for (size_t i = 0; i < json_array_size(f); i++) {
                    json_t *it = json_array_get(f, i);
                    json_int_t port = json_is_integer(it) ? json_integer_value(it) : 0;
                    if (port < 1 || port > 65535) {
                        char l3[LOC_MAX];
                        snprintf(l3, sizeof(l3), "%s[%zu]", l2, i);
                        return bad(reterr, l3, "a TCP port: an integer within 1..65535");
                    }
                    uint32_t k = 0;
                    while (k < n && ports[k] < port)
                        k++;
                    if (k < n && ports[k] == port)
                        continue;
                    memmove(ports + k + 1, ports + k, (n - k) * sizeof(ports[0]));
                    ports[k] = (uint16_t)port;
                    n++;
                }
                memcpy(p->job_ports, ports, n * sizeof(ports[0]));
                p->njob_ports = n;
            }
            if (m) {
                char *c = strdup(m);
                if (!c)
                    return oom(reterr);
                free(p->job_member);
                p->job_member = c;
            }
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

int policy_from_json(fy_policy *p, const char *json, size_t len, fy_error **reterr) {
    if (len > POLICY_JSON_MAX)
        return bad(reterr, "$", "policy document larger than %u bytes", POLICY_JSON_MAX);
    const char *nul = memchr(json, '\0', len);
    if (nul) {
        int line, col;
        policy_json_line_col(json, (size_t)(nul - json), &line, &col);
        return bad(reterr, "$", "policy document contains a NUL byte (line %d, column %d)", line, col);
    }
    json_error_t je;
    memset(&je, 0, sizeof(je));
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return policy_json_syntax_error(json, len, &je, reterr);
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
        uint32_t prof = 0;
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
        if (c <= FY_CONTROL_UID_RANGE || p->control[c] != FY_MODE_OFF) /* 0.1 documents stay as they were */
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
    if (p->image)
        json_object_set_new(fs, "image", json_string(p->image));
    json_object_set_new(root, "filesystem", fs);

    json_t *env = json_object(), *set = json_object(), *allow = json_array();
    VEC_EACH(&p->env_set, struct pol_env, e) json_object_set_new(set, e->name, json_string(e->value));
    VEC_EACH(&p->env_allow, char *, s) json_array_append_new(allow, json_string(*s));
    json_object_set_new(env, "set", set);
    json_object_set_new(env, "allow", allow);
    json_object_set_new(env, "defaults", json_boolean(!p->env_exact));
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
    if (p->job_member) { /* (only when asked: the canonical form of every other policy is unchanged) */
        json_t *job = json_pack("{s:s}", "member", p->job_member);
        if (p->njob_ports) { /* (likewise: only when declared) */
            json_t *ports = json_array();
            for (uint32_t i = 0; i < p->njob_ports; i++)
                json_array_append_new(ports, json_integer(p->job_ports[i]));
            json_object_set_new(job, "ports", ports);
        }
        json_object_set_new(net, "job", job);
    }
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
