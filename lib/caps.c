/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The capability snapshot: construction by the probes, copying, freeing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "caps.h"

fy_caps *caps_new(void) {
    fy_caps *c = calloc(1, sizeof(*c));
    if (c)
        c->origin_pid = util_getpid();
    return c;
}

static char *vfmt(const char *fmt, va_list ap) {
    char *s = NULL;
    if (!fmt || vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

void caps_set(fy_caps *c, uint32_t cap, bool present, int64_t value, const char *reason_fmt, ...) {
    if (!c || cap == 0 || cap > FY_CAP_MAX_)
        return;
    struct cap_entry *e = &c->e[cap];
    va_list ap;
    va_start(ap, reason_fmt);
    char *r = vfmt(reason_fmt, ap);
    va_end(ap);
    free(e->reason);
    e->reason = r;
    e->state = present ? CAP_PRESENT : CAP_MISSING;
    e->value = value;
}

void caps_set_hint(fy_caps *c, uint32_t cap, const char *hint_fmt, ...) {
    if (!c || cap == 0 || cap > FY_CAP_MAX_)
        return;
    va_list ap;
    va_start(ap, hint_fmt);
    char *h = vfmt(hint_fmt, ap);
    va_end(ap);
    free(c->e[cap].hint);
    c->e[cap].hint = h;
}

bool caps_present(const fy_caps *c, uint32_t cap) {
    return c && cap > 0 && cap <= FY_CAP_MAX_ && c->e[cap].state == CAP_PRESENT;
}

#define HOST_STRINGS(X) X(kernel_release) X(cgroup_mode) X(cg2_delegated)

int caps_set_fact(fy_caps *c, const char *key, const char *value) {
    for (size_t i = 0; i < c->host.nfacts; i++)
        if (strcmp(c->host.facts[i].key, key) == 0) {
            char *v = value ? util_strdup(value) : NULL;
            if (value && !v)
                return FY_E_NOMEM;
            free(c->host.facts[i].value);
            if (v) {
                c->host.facts[i].value = v;
            } else {
                free(c->host.facts[i].key);
                c->host.facts[i] = c->host.facts[--c->host.nfacts];
            }
            return 0;
        }
    if (!value)
        return 0;
    struct caps_fact *n = realloc(c->host.facts, (c->host.nfacts + 1) * sizeof(*n));
    if (!n)
        return FY_E_NOMEM;
    c->host.facts = n;
    char *k = util_strdup(key), *v = util_strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return FY_E_NOMEM;
    }
    c->host.facts[c->host.nfacts++] = (struct caps_fact){k, v};
    return 0;
}

const char *caps_fact(const fy_caps *c, const char *key) {
    for (size_t i = 0; c && i < c->host.nfacts; i++)
        if (strcmp(c->host.facts[i].key, key) == 0)
            return c->host.facts[i].value;
    return NULL;
}

static void free_facts(struct caps_host *h) {
    for (size_t i = 0; i < h->nfacts; i++) {
        free(h->facts[i].key);
        free(h->facts[i].value);
    }
    free(h->facts);
    h->facts = NULL;
    h->nfacts = 0;
}

void caps_free_internal(fy_caps *c) {
    if (!c)
        return;
    for (size_t i = 0; i <= FY_CAP_MAX_; i++) {
        free(c->e[i].reason);
        free(c->e[i].hint);
    }
#define FREE_HOST(f) free(c->host.f);
    HOST_STRINGS(FREE_HOST)
#undef FREE_HOST
    free_facts(&c->host);
    free(c);
}

fy_caps *caps_dup(const fy_caps *src) {
    fy_caps *c = caps_new();
    if (!c)
        return NULL;
    int pid = c->origin_pid;
    *c = *src;
    c->origin_pid = pid;
    bool ok = true;
    for (size_t i = 0; i <= FY_CAP_MAX_; i++) {
        c->e[i].reason = util_strdup(src->e[i].reason);
        c->e[i].hint = util_strdup(src->e[i].hint);
        ok &= !src->e[i].reason || c->e[i].reason;
        ok &= !src->e[i].hint || c->e[i].hint;
    }
#define DUP_HOST(f) c->host.f = util_strdup(src->host.f); ok &= !src->host.f || c->host.f;
    HOST_STRINGS(DUP_HOST)
#undef DUP_HOST
    c->host.facts = NULL;
    c->host.nfacts = 0;
    for (size_t i = 0; ok && i < src->host.nfacts; i++)
        ok = caps_set_fact(c, src->host.facts[i].key, src->host.facts[i].value) == 0;
    if (!ok) {
        caps_free_internal(c);
        return NULL;
    }
    return c;
}

void caps_finish(fy_caps *c) {
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++)
        if (c->e[i].state == CAP_NOT_PROBED && !c->e[i].reason)
            caps_set(c, i, false, 0, "not probed: no compiled-in probe for this platform");
    c->max_level = FY_LEVEL_NONE;
    const struct fy_backend_ops *table[FY_BACKENDS_MAX];
    size_t n = backends_collect(table, FY_BACKENDS_MAX);
    /* The strongest level a policy gets here; a backend that runs only
     * container images (the container level) needs a policy with one. */
    for (size_t b = 0; b < n; b++) {
        struct strbuf why;
        strbuf_init(&why);
        if (!table[b]->images && table[b]->usable(c, &why) && (int)table[b]->level > c->max_level)
            c->max_level = (int)table[b]->level;
        strbuf_free(&why);
    }
}

/* ---- the snapshot's own form (persisted probe snapshots) ---- */

#include <jansson.h>

#define HOST_JSON_STR(f) json_object_set_new(h, #f, c->host.f ? json_string(c->host.f) : json_null());

char *caps_serialize(const fy_caps *c) {
    json_t *root = json_object(), *ents = json_array(), *h = json_object();
    if (!root || !ents || !h) {
        json_decref(root);
        json_decref(ents);
        json_decref(h);
        return NULL;
    }
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++) {
        const struct cap_entry *e = &c->e[i];
        json_array_append_new(ents, json_pack("[iIoo]", (int)e->state, (json_int_t)e->value,
                                              e->reason ? json_string(e->reason) : json_null(),
                                              e->hint ? json_string(e->hint) : json_null()));
    }
    HOST_STRINGS(HOST_JSON_STR)
    json_object_set_new(h, "is_root", json_boolean(c->host.is_root));
    json_object_set_new(h, "uid", json_integer(c->host.uid));
    json_object_set_new(h, "gid", json_integer(c->host.gid));
    json_t *facts = json_object();
    for (size_t i = 0; facts && i < c->host.nfacts; i++)
        json_object_set_new(facts, c->host.facts[i].key, json_string(c->host.facts[i].value));
    json_object_set_new(h, "facts", facts);
    json_object_set_new(root, "caps", json_integer(FY_CAP_MAX_));
    json_object_set_new(root, "entries", ents);
    json_object_set_new(root, "host", h);
    json_object_set_new(root, "probe_flags", json_integer((json_int_t)c->probe_flags));
    json_object_set_new(root, "probe_usec", json_integer((json_int_t)c->probe_usec));
    char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    return s;
}
#undef HOST_JSON_STR

/* A string member: absent or null is NULL; anything else but a string fails. */
static bool take_str(json_t *o, const char *key, char **out) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v) || !(*out = util_strdup(json_string_value(v))))
        return false;
    return true;
}

fy_caps *caps_deserialize(const char *text, size_t len) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    fy_caps *c = root ? caps_new() : NULL;
    json_t *ents = json_object_get(root, "entries"), *h = json_object_get(root, "host");
    json_t *n = json_object_get(root, "caps"), *fl = json_object_get(root, "probe_flags"),
           *us = json_object_get(root, "probe_usec");
    bool ok = c && json_is_array(ents) && json_is_object(h) && json_is_integer(n) &&
              json_integer_value(n) == FY_CAP_MAX_ && json_array_size(ents) == FY_CAP_MAX_ && json_is_integer(fl) &&
              json_is_integer(us);
    for (uint32_t i = 1; ok && i <= FY_CAP_MAX_; i++) {
        json_t *e = json_array_get(ents, i - 1);
        json_t *st = json_array_get(e, 0), *val = json_array_get(e, 1), *re = json_array_get(e, 2),
               *hi = json_array_get(e, 3);
        ok = json_is_array(e) && json_array_size(e) == 4 && json_is_integer(st) && json_is_integer(val) &&
             (json_integer_value(st) == CAP_MISSING || json_integer_value(st) == CAP_PRESENT) &&
             (json_is_null(re) || json_is_string(re)) && (json_is_null(hi) || json_is_string(hi));
        if (!ok)
            break;
        c->e[i].state = (uint8_t)json_integer_value(st);
        c->e[i].value = (int64_t)json_integer_value(val);
        ok = (json_is_null(re) || (c->e[i].reason = util_strdup(json_string_value(re)))) &&
             (json_is_null(hi) || (c->e[i].hint = util_strdup(json_string_value(hi))));
    }
#define HOST_TAKE(f) ok = ok && take_str(h, #f, &c->host.f);
    if (ok) {
        HOST_STRINGS(HOST_TAKE)
    }
#undef HOST_TAKE
    json_t *ir = json_object_get(h, "is_root"), *uid = json_object_get(h, "uid"), *gid = json_object_get(h, "gid"),
           *facts = json_object_get(h, "facts");
    ok = ok && json_is_boolean(ir) && json_is_integer(uid) && json_is_integer(gid) && json_is_object(facts) &&
         json_integer_value(uid) >= 0 && json_integer_value(uid) <= UINT32_MAX && json_integer_value(gid) >= 0 &&
         json_integer_value(gid) <= UINT32_MAX && json_integer_value(fl) >= 0 && json_integer_value(us) >= 0;
    if (ok) {
        c->host.is_root = json_is_true(ir);
        c->host.uid = (uint32_t)json_integer_value(uid);
        c->host.gid = (uint32_t)json_integer_value(gid);
        const char *fk;
        json_t *fv;
        json_object_foreach(facts, fk, fv) {
            if (!json_is_string(fv) || caps_set_fact(c, fk, json_string_value(fv)) != 0) {
                ok = false;
                break;
            }
        }
        c->probe_flags = (uint64_t)json_integer_value(fl);
        c->probe_usec = (uint64_t)json_integer_value(us);
    }
    json_decref(root);
    if (!ok) {
        caps_free_internal(c);
        return NULL;
    }
    return c;
}
