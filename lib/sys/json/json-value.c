/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The in-tree JSON library (see jansson.h): values, objects with insertion
 * order and a hash index, arrays, json_equal, json_pack and json_dumps.
 */
#include "json-private.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static json_t the_true = {JSON_TRUE, (size_t)-1};
static json_t the_false = {JSON_FALSE, (size_t)-1};
static json_t the_null = {JSON_NULL, (size_t)-1};

json_t *json_true(void) { return &the_true; }
json_t *json_false(void) { return &the_false; }
json_t *json_null(void) { return &the_null; }

/* ---- UTF-8 ---- */

/* The length of the sequence a first byte announces; 0 for a byte that
 * cannot start one (continuation bytes, 0xC0, 0xC1, 0xF5 and above). */
int jsonp_utf8_first(unsigned char c) {
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        return 2;
    if (c < 0xF0)
        return 3;
    if (c < 0xF5)
        return 4;
    return 0;
}

/* A whole sequence of n bytes (n from jsonp_utf8_first): continuation
 * bytes, no overlong form, no surrogate, nothing above U+10FFFF. */
int jsonp_utf8_full(const unsigned char *s, int n, uint32_t *cp) {
    uint32_t v;
    if (n == 1) {
        v = s[0];
    } else {
        v = s[0] & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);
        for (int i = 1; i < n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            v = (v << 6) | (s[i] & 0x3Fu);
        }
        if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return 0;
    }
    if (cp)
        *cp = v;
    return 1;
}

int jsonp_utf8_valid(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        int n = jsonp_utf8_first(s[i]);
        if (n == 0 || (size_t)n > len - i || !jsonp_utf8_full(s + i, n, NULL))
            return 0;
        i += (size_t)n;
    }
    return 1;
}

/* ---- scalars ---- */

struct json_string_t {
    json_t json;
    size_t length;
    char value[]; /* NUL-terminated; may hold NULs before length */
};

struct json_integer_t {
    json_t json;
    json_int_t value;
};

struct json_real_t {
    json_t json;
    double value;
};

#define to_string(j) ((struct json_string_t *)(void *)(j))
#define to_integer(j) ((const struct json_integer_t *)(const void *)(j))
#define to_real(j) ((const struct json_real_t *)(const void *)(j))
#define to_object(j) ((struct json_object_t *)(void *)(j))
#define to_array(j) ((struct json_array_t *)(void *)(j))

static void json_init(json_t *j, json_type type) {
    j->type = type;
    j->refcount = 1;
}

json_t *jsonp_stringn_nocheck(const char *value, size_t len) {
    if (len > SIZE_MAX - sizeof(struct json_string_t) - 1)
        return NULL;
    struct json_string_t *s = malloc(sizeof(*s) + len + 1);
    if (!s)
        return NULL;
    json_init(&s->json, JSON_STRING);
    s->length = len;
    if (len)
        memcpy(s->value, value, len);
    s->value[len] = '\0';
    return &s->json;
}

json_t *json_stringn(const char *value, size_t len) {
    if (!value || !jsonp_utf8_valid(value, len))
        return NULL;
    return jsonp_stringn_nocheck(value, len);
}

json_t *json_string(const char *value) {
    return value ? json_stringn(value, strlen(value)) : NULL;
}

json_t *json_vsprintf(const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        return NULL;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return NULL;
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    json_t *j = json_stringn(buf, (size_t)n);
    free(buf);
    return j;
}

json_t *json_sprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json_t *j = json_vsprintf(fmt, ap);
    va_end(ap);
    return j;
}

const char *json_string_value(const json_t *j) {
    return json_is_string(j) ? to_string(j)->value : NULL;
}

size_t json_string_length(const json_t *j) {
    return json_is_string(j) ? to_string(j)->length : 0;
}

json_t *json_integer(json_int_t value) {
    struct json_integer_t *i = malloc(sizeof(*i));
    if (!i)
        return NULL;
    json_init(&i->json, JSON_INTEGER);
    i->value = value;
    return &i->json;
}

json_int_t json_integer_value(const json_t *j) {
    return json_is_integer(j) ? to_integer(j)->value : 0;
}

json_t *json_real(double value) {
    if (isnan(value) || isinf(value))
        return NULL;
    struct json_real_t *r = malloc(sizeof(*r));
    if (!r)
        return NULL;
    json_init(&r->json, JSON_REAL);
    r->value = value;
    return &r->json;
}

double json_real_value(const json_t *j) {
    return json_is_real(j) ? to_real(j)->value : 0.0;
}

double json_number_value(const json_t *j) {
    if (json_is_integer(j))
        return (double)json_integer_value(j);
    return json_real_value(j);
}

/* ---- objects ----
 * Entries in insertion order (a vector), found through an open-addressing
 * hash table of entry indices: lookups and inserts are O(1), so a document
 * of 100,000 keys loads (and rejects its duplicates) in linear time. */

struct json_entry {
    char *key;
    json_t *value;
};

struct json_object_t {
    json_t json;
    int visiting; /* json_dumps and json_equal: cycle guard */
    size_t n, cap;
    struct json_entry *e;
    size_t slots;   /* power of two, or 0 */
    uint32_t *slot; /* entry index + 1; 0 = free */
};

struct json_array_t {
    json_t json;
    int visiting;
    size_t n, cap;
    json_t **v;
};

int *jsonp_visiting(const json_t *container) {
    return json_is_object(container) ? &to_object(container)->visiting : &to_array(container)->visiting;
}

static uint32_t key_hash(const char *k) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 16777619u;
    return h;
}

json_t *json_object(void) {
    struct json_object_t *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    json_init(&o->json, JSON_OBJECT);
    return &o->json;
}

static size_t find_slot(const struct json_object_t *o, const char *key, int *found) {
    size_t mask = o->slots - 1, i = key_hash(key) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t s = o->slot[i];
        if (s == 0) {
            *found = 0;
            return i;
        }
        if (strcmp(o->e[s - 1].key, key) == 0) {
            *found = 1;
            return i;
        }
    }
}

static int rehash(struct json_object_t *o, size_t slots) {
    uint32_t *t = calloc(slots, sizeof(*t));
    if (!t)
        return -1;
    free(o->slot);
    o->slot = t;
    o->slots = slots;
    for (size_t k = 0; k < o->n; k++) {
        int found;
        size_t i = find_slot(o, o->e[k].key, &found);
        o->slot[i] = (uint32_t)(k + 1);
    }
    return 0;
}

static struct json_entry *object_find(const json_t *object, const char *key) {
    if (!json_is_object(object) || !key)
        return NULL;
    const struct json_object_t *o = to_object(object);
    if (o->n == 0)
        return NULL;
    int found;
    size_t i = find_slot(o, key, &found);
    return found ? &o->e[o->slot[i] - 1] : NULL;
}

size_t json_object_size(const json_t *object) {
    return json_is_object(object) ? to_object(object)->n : 0;
}

json_t *json_object_get(const json_t *object, const char *key) {
    struct json_entry *e = object_find(object, key);
    return e ? e->value : NULL;
}

const char *json_object_key_at_(const json_t *object, size_t i) {
    return json_is_object(object) && i < to_object(object)->n ? to_object(object)->e[i].key : NULL;
}

json_t *json_object_value_at_(const json_t *object, size_t i) {
    return json_is_object(object) && i < to_object(object)->n ? to_object(object)->e[i].value : NULL;
}

/* Takes value's reference whatever happens; a replaced key keeps its place. */
int jsonp_object_set_nocheck(json_t *object, const char *key, json_t *value) {
    struct json_object_t *o = to_object(object);
    struct json_entry *e = object_find(object, key);
    if (e) {
        json_decref(e->value);
        e->value = value;
        return 0;
    }
    if (o->n >= UINT32_MAX - 1)
        goto fail;
    if ((o->n + 1) * 2 > o->slots && rehash(o, o->slots ? o->slots * 2 : 16) < 0)
        goto fail;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        struct json_entry *ne = realloc(o->e, cap * sizeof(*ne));
        if (!ne)
            goto fail;
        o->e = ne;
        o->cap = cap;
    }
    char *k = strdup(key);
    if (!k)
        goto fail;
    int found;
    size_t i = find_slot(o, key, &found);
    o->e[o->n] = (struct json_entry){k, value};
    o->slot[i] = (uint32_t)++o->n;
    return 0;
fail:
    json_decref(value);
    return -1;
}

int json_object_set_new(json_t *object, const char *key, json_t *value) {
    if (!value)
        return -1;
    if (!key || !json_is_object(object) || object == value || !jsonp_utf8_valid(key, strlen(key))) {
        json_decref(value);
        return -1;
    }
    return jsonp_object_set_nocheck(object, key, value);
}

int json_object_del(json_t *object, const char *key) {
    struct json_entry *e = object_find(object, key);
    if (!e)
        return -1;
    struct json_object_t *o = to_object(object);
    size_t k = (size_t)(e - o->e);
    free(e->key);
    json_decref(e->value);
    memmove(&o->e[k], &o->e[k + 1], (o->n - k - 1) * sizeof(*o->e));
    o->n--;
    memset(o->slot, 0, o->slots * sizeof(*o->slot));
    for (size_t j = 0; j < o->n; j++) {
        int found;
        size_t i = find_slot(o, o->e[j].key, &found);
        o->slot[i] = (uint32_t)(j + 1);
    }
    return 0;
}

int json_object_clear(json_t *object) {
    if (!json_is_object(object))
        return -1;
    struct json_object_t *o = to_object(object);
    for (size_t k = 0; k < o->n; k++) {
        free(o->e[k].key);
        json_decref(o->e[k].value);
    }
    o->n = 0;
    if (o->slot)
        memset(o->slot, 0, o->slots * sizeof(*o->slot));
    return 0;
}

int json_object_update(json_t *object, json_t *other) {
    if (!json_is_object(object) || !json_is_object(other))
        return -1;
    const char *key;
    json_t *value;
    json_object_foreach(other, key, value) {
        if (json_object_set_new(object, key, json_incref(value)) < 0)
            return -1;
    }
    return 0;
}

/* ---- arrays ---- */

json_t *json_array(void) {
    struct json_array_t *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    json_init(&a->json, JSON_ARRAY);
    return &a->json;
}

size_t json_array_size(const json_t *array) {
    return json_is_array(array) ? to_array(array)->n : 0;
}

json_t *json_array_get(const json_t *array, size_t index) {
    return json_is_array(array) && index < to_array(array)->n ? to_array(array)->v[index] : NULL;
}

int json_array_append_new(json_t *array, json_t *value) {
    if (!value)
        return -1;
    if (!json_is_array(array) || array == value) {
        json_decref(value);
        return -1;
    }
    struct json_array_t *a = to_array(array);
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        json_t **nv = cap <= SIZE_MAX / sizeof(*nv) ? realloc(a->v, cap * sizeof(*nv)) : NULL;
        if (!nv) {
            json_decref(value);
            return -1;
        }
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = value;
    return 0;
}

void json_delete(json_t *json) {
    if (!json)
        return;
    switch (json->type) {
    case JSON_OBJECT: {
        struct json_object_t *o = to_object(json);
        json_object_clear(json);
        free(o->e);
        free(o->slot);
        break;
    }
    case JSON_ARRAY: {
        struct json_array_t *a = to_array(json);
        for (size_t i = 0; i < a->n; i++)
            json_decref(a->v[i]);
        free(a->v);
        break;
    }
    case JSON_TRUE:
    case JSON_FALSE:
    case JSON_NULL:
        return;
    default:
        break;
    }
    free(json);
}

/* ---- equality ---- */

int json_equal(const json_t *a, const json_t *b) {
    if (!a || !b || json_typeof(a) != json_typeof(b))
        return 0;
    if (a == b)
        return 1;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        struct json_object_t *o = to_object(a);
        if (o->visiting)
            return 0;
        o->visiting = 1;
        int eq = 1;
        for (size_t k = 0; eq && k < o->n; k++)
            eq = json_equal(o->e[k].value, json_object_get(b, o->e[k].key));
        o->visiting = 0;
        return eq;
    }
    case JSON_ARRAY: {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        struct json_array_t *x = to_array(a);
        if (x->visiting)
            return 0;
        x->visiting = 1;
        int eq = 1;
        for (size_t i = 0; eq && i < x->n; i++)
            eq = json_equal(x->v[i], json_array_get(b, i));
        x->visiting = 0;
        return eq;
    }
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL:
        return json_real_value(a) == json_real_value(b);
    default:
        return 1; /* true, false, null are singletons, but be exact anyway */
    }
}

/* ---- json_pack ----
 * A recursive descent over the format; arguments are consumed in order even
 * after an error, so that every 'o' value is released (jansson steals 'o'
 * references on failure too). */

struct pack {
    const char *f;
    va_list ap;
    int failed;
    json_error_t *error;
};

static void pack_fail(struct pack *p, enum json_error_code code, const char *what) {
    if (!p->failed && p->error) {
        snprintf(p->error->text, JSON_ERROR_TEXT_LENGTH - 1, "%s", what);
        p->error->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;
        p->error->line = -1;
        p->error->column = -1;
        p->error->position = (int)0;
    }
    p->failed = 1;
}

static void pack_skip(struct pack *p) {
    while (*p->f == ' ' || *p->f == '\t' || *p->f == '\n' || *p->f == '\r' || *p->f == ':' || *p->f == ',')
        p->f++;
}

/* s, s?, s#, s%, with + continuations: returns a malloc()ed string, its
 * length in *len; *is_null for s? with NULL. */
static char *pack_string(struct pack *p, size_t *len, int *is_null, int optional_ok) {
    char *buf = NULL;
    size_t n = 0;
    int first = 1, bad = 0;
    *is_null = 0;
    for (;;) {
        const char *s = va_arg(p->ap, const char *);
        size_t l = 0;
        int opt = 0;
        if (*p->f == '#') {
            int il = va_arg(p->ap, int);
            bad |= il < 0;
            l = il < 0 ? 0 : (size_t)il;
            p->f++;
        } else if (*p->f == '%') {
            l = va_arg(p->ap, size_t);
            p->f++;
        } else {
            if (first && optional_ok && *p->f == '?') {
                opt = 1;
                p->f++;
            }
            l = s ? strlen(s) : 0;
        }
        if (!s) {
            if (opt) {
                *is_null = 1;
            } else {
                bad = 1;
            }
        } else if (!bad) {
            char *nb = realloc(buf, n + l + 1);
            if (!nb) {
                bad = 1;
            } else {
                buf = nb;
                memcpy(buf + n, s, l);
                n += l;
                buf[n] = '\0';
            }
        }
        first = 0;
        pack_skip(p);
        if (*p->f != '+')
            break;
        p->f++;
    }
    if (*is_null || bad) {
        free(buf);
        if (bad)
            pack_fail(p, json_error_null_value, "NULL or invalid string argument");
        return NULL;
    }
    if (!buf)
        buf = calloc(1, 1);
    if (!buf)
        pack_fail(p, json_error_out_of_memory, "out of memory");
    *len = n;
    return buf;
}

static json_t *pack_value(struct pack *p, int depth);

static json_t *pack_container(struct pack *p, int depth, char close) {
    json_t *c = close == '}' ? json_object() : json_array();
    if (!c)
        pack_fail(p, json_error_out_of_memory, "out of memory");
    for (;;) {
        pack_skip(p);
        if (*p->f == close) {
            p->f++;
            break;
        }
        if (!*p->f) {
            pack_fail(p, json_error_invalid_format, "unexpected end of format string");
            break;
        }
        if (close == '}') {
            if (*p->f != 's') {
                pack_fail(p, json_error_invalid_format, "expected format 's' as an object key");
                break;
            }
            p->f++;
            size_t kl;
            int is_null;
            char *key = pack_string(p, &kl, &is_null, 0);
            pack_skip(p);
            json_t *v = pack_value(p, depth + 1);
            if (p->failed || !key || !v || memchr(key, '\0', kl) || json_object_set_new(c, key, v) < 0) {
                if (!p->failed) {
                    pack_fail(p, json_error_invalid_argument, "unable to add key");
                    v = NULL;
                }
                json_decref(v);
            }
            free(key);
        } else {
            json_t *v = pack_value(p, depth + 1);
            if (p->failed || !v || json_array_append_new(c, v) < 0) {
                if (!p->failed) {
                    pack_fail(p, json_error_out_of_memory, "unable to append to array");
                    v = NULL;
                }
                json_decref(v);
            }
        }
    }
    if (p->failed) {
        json_decref(c);
        return NULL;
    }
    return c;
}

static json_t *pack_value(struct pack *p, int depth) {
    if (depth > 2048) {
        pack_fail(p, json_error_invalid_format, "format nested too deeply");
        return NULL;
    }
    char c = *p->f;
    if (c)
        p->f++;
    json_t *j = NULL;
    switch (c) {
    case '{':
        return pack_container(p, depth, '}');
    case '[':
        return pack_container(p, depth, ']');
    case 's': {
        size_t len;
        int is_null;
        char *s = pack_string(p, &len, &is_null, 1);
        if (is_null)
            return json_null();
        if (!s)
            return NULL;
        j = json_stringn(s, len);
        free(s);
        if (!j)
            pack_fail(p, json_error_invalid_utf8, "invalid UTF-8 string");
        return j;
    }
    case 'n':
        return json_null();
    case 'b':
        return json_boolean(va_arg(p->ap, int));
    case 'i':
        j = json_integer(va_arg(p->ap, int));
        break;
    case 'I':
        j = json_integer(va_arg(p->ap, json_int_t));
        break;
    case 'f':
        j = json_real(va_arg(p->ap, double));
        if (!j) {
            pack_fail(p, json_error_invalid_argument, "invalid real value");
            return NULL;
        }
        return j;
    case 'o':
    case 'O': {
        json_t *v = va_arg(p->ap, json_t *);
        int opt = *p->f == '?';
        if (opt)
            p->f++;
        if (!v) {
            if (opt)
                return json_null();
            pack_fail(p, json_error_null_value, "NULL object");
            return NULL;
        }
        if (c == 'O')
            json_incref(v);
        if (p->failed) {
            json_decref(v);
            return NULL;
        }
        return v;
    }
    default:
        pack_fail(p, json_error_invalid_format, "unexpected format character");
        return NULL;
    }
    if (!j)
        pack_fail(p, json_error_out_of_memory, "out of memory");
    return j;
}

json_t *json_vpack_ex(json_error_t *error, size_t flags, const char *fmt, va_list ap) {
    (void)flags;
    if (error) {
        error->text[0] = '\0';
        error->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_unknown;
        snprintf(error->source, JSON_ERROR_SOURCE_LENGTH, "<format>");
    }
    if (!fmt || !*fmt) {
        struct pack e = {.error = error};
        pack_fail(&e, json_error_invalid_argument, "NULL or empty format string");
        return NULL;
    }
    struct pack p = {.f = fmt, .error = error};
    va_copy(p.ap, ap);
    pack_skip(&p);
    json_t *j = pack_value(&p, 0);
    pack_skip(&p);
    if (!p.failed && *p.f) {
        pack_fail(&p, json_error_invalid_format, "garbage after format string");
    }
    va_end(p.ap);
    if (p.failed) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *json_pack_ex(json_error_t *error, size_t flags, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json_t *j = json_vpack_ex(error, flags, fmt, ap);
    va_end(ap);
    return j;
}

json_t *json_pack(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json_t *j = json_vpack_ex(NULL, 0, fmt, ap);
    va_end(ap);
    return j;
}
