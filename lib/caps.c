/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The capability snapshot: construction by the probes, copying, freeing. */
#include <errno.h>
#include <stdint.h>
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

/* Lines of space-separated fields, read back strictly: a new process reads
 * one per start (the CLI), so the form is cheap to parse (a JSON parser took
 * about 0.2 ms of every `forgeyard run`). Strings are "-" for none, else "="
 * and the text with every byte below 0x21, 0x7f and '%' as %XX. The key in
 * front of the file names the library build, so the form is this build's.
 *
 *   forgeyard-caps-form 2
 *   caps N / flags U64 / usec U64 / root 0|1 / uid U32 / gid U32
 *   s NAME STRING          (a host string: kernel_release, cgroup_mode, cg2_delegated)
 *   e STATE VALUE REASON HINT   (N of them, capability 1 first)
 *   f KEY VALUE            (the backend facts)
 *   end                                                                       */

#define SNAP_FORM "forgeyard-caps-form 2"

static void put_str(struct strbuf *sb, const char *v) {
    if (!v) {
        strbuf_append(sb, " -");
        return;
    }
    strbuf_append(sb, " =");
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p < 0x21 || *p == 0x7f || *p == '%') {
            char esc[4];
            snprintf(esc, sizeof(esc), "%%%02X", *p);
            strbuf_appendn(sb, esc, 3);
        } else {
            strbuf_appendn(sb, (const char *)p, 1);
        }
    }
}

char *caps_serialize(const fy_caps *c) {
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb, SNAP_FORM "\ncaps %u\nflags %llu\nusec %llu\nroot %d\nuid %u\ngid %u\n", (unsigned)FY_CAP_MAX_,
                  (unsigned long long)c->probe_flags, (unsigned long long)c->probe_usec, c->host.is_root ? 1 : 0,
                  (unsigned)c->host.uid, (unsigned)c->host.gid);
#define HOST_PUT(f)                                                                                                    \
    if (c->host.f) {                                                                                                   \
        strbuf_append(&sb, "s " #f);                                                                                   \
        put_str(&sb, c->host.f);                                                                                       \
        strbuf_append(&sb, "\n");                                                                                      \
    }
    HOST_STRINGS(HOST_PUT)
#undef HOST_PUT
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++) {
        strbuf_printf(&sb, "e %d %lld", (int)c->e[i].state, (long long)c->e[i].value);
        put_str(&sb, c->e[i].reason);
        put_str(&sb, c->e[i].hint);
        strbuf_append(&sb, "\n");
    }
    for (size_t i = 0; i < c->host.nfacts; i++) {
        strbuf_append(&sb, "f");
        put_str(&sb, c->host.facts[i].key);
        put_str(&sb, c->host.facts[i].value);
        strbuf_append(&sb, "\n");
    }
    strbuf_append(&sb, "end\n");
    return strbuf_steal(&sb);
}

/* The reader: a cursor over one line's fields. */
struct snap_rd {
    const char *p, *end; /* the rest of the text */
    const char *f;       /* the current line's next field */
    size_t flen;         /* (the line's remaining length from f) */
};

/* The next line (without its newline) into r->f; false at the end or on a
 * line without a newline. */
static bool next_line(struct snap_rd *r) {
    const char *nl = r->p < r->end ? memchr(r->p, '\n', (size_t)(r->end - r->p)) : NULL;
    if (!nl)
        return false;
    r->f = r->p;
    r->flen = (size_t)(nl - r->p);
    r->p = nl + 1;
    return true;
}

/* The next field of the line: its start and length; false when none. Fields
 * are separated by exactly one space. */
static bool next_field(struct snap_rd *r, const char **s, size_t *n) {
    if (r->f == NULL)
        return false;
    const char *sp = memchr(r->f, ' ', r->flen);
    *s = r->f;
    *n = sp ? (size_t)(sp - r->f) : r->flen;
    if (*n == 0)
        return false;
    if (sp) {
        r->flen -= *n + 1;
        r->f = sp + 1;
    } else {
        r->f = NULL;
        r->flen = 0;
    }
    return true;
}

static bool field_is(struct snap_rd *r, const char *word) {
    const char *s;
    size_t n;
    return next_field(r, &s, &n) && n == strlen(word) && memcmp(s, word, n) == 0;
}

/* The next field as a NUL-terminated number text in buf (24 bytes):
 * false when there is none or it is too long. */
static bool field_num(struct snap_rd *r, char buf[24], size_t *n) {
    const char *s;
    if (!next_field(r, &s, n) || *n >= 24)
        return false;
    memcpy(buf, s, *n);
    buf[*n] = '\0';
    return true;
}

static bool field_int(struct snap_rd *r, long long min, long long max, long long *out) {
    size_t n;
    char buf[24];
    if (!field_num(r, buf, &n))
        return false;
    if (!((buf[0] >= '0' && buf[0] <= '9') || (buf[0] == '-' && n > 1 && buf[1] >= '0' && buf[1] <= '9')))
        return false;
    char *e = NULL;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (errno || *e || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool field_u64(struct snap_rd *r, uint64_t *out) {
    size_t n;
    char buf[24];
    if (!field_num(r, buf, &n) || buf[0] < '0' || buf[0] > '9')
        return false;
    char *e = NULL;
    errno = 0;
    unsigned long long v = strtoull(buf, &e, 10);
    if (errno || *e)
        return false;
    *out = (uint64_t)v;
    return true;
}

static int hexval(char h) {
    return h >= '0' && h <= '9' ? h - '0' : h >= 'A' && h <= 'F' ? h - 'A' + 10 : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/* A string field: *out NULL for "-", else the decoded text (allocated).
 * False on anything else (an unescaped byte that must be escaped, a bad or
 * NUL escape, OOM). */
static bool field_str(struct snap_rd *r, char **out) {
    const char *s;
    size_t n;
    *out = NULL;
    if (!next_field(r, &s, &n))
        return false;
    if (n == 1 && s[0] == '-')
        return true;
    if (s[0] != '=')
        return false;
    char *d = malloc(n);
    if (!d)
        return false;
    size_t o = 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1, lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(d);
                return false;
            }
            d[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (ch < 0x21 || ch == 0x7f) {
            free(d);
            return false;
        } else {
            d[o++] = (char)ch;
        }
    }
    d[o] = '\0';
    *out = d;
    return true;
}

/* A line of exactly one keyword and one integer in [min, max]. */
static bool line_int(struct snap_rd *r, const char *word, long long min, long long max, long long *out) {
    return next_line(r) && field_is(r, word) && field_int(r, min, max, out) && r->f == NULL;
}

static bool line_u64(struct snap_rd *r, const char *word, uint64_t *out) {
    return next_line(r) && field_is(r, word) && field_u64(r, out) && r->f == NULL;
}

fy_caps *caps_deserialize(const char *text, size_t len) {
    struct snap_rd r = {text, text + len, NULL, 0};
    fy_caps *c = caps_new();
    long long n = 0, root = 0, uid = 0, gid = 0;
    bool ok = c && next_line(&r) && r.flen == strlen(SNAP_FORM) && memcmp(r.f, SNAP_FORM, r.flen) == 0 &&
              line_int(&r, "caps", 0, INT32_MAX, &n) && n == FY_CAP_MAX_ && line_u64(&r, "flags", &c->probe_flags) &&
              line_u64(&r, "usec", &c->probe_usec) && line_int(&r, "root", 0, 1, &root) &&
              line_int(&r, "uid", 0, UINT32_MAX, &uid) && line_int(&r, "gid", 0, UINT32_MAX, &gid);
    if (ok) {
        c->host.is_root = root == 1;
        c->host.uid = (uint32_t)uid;
        c->host.gid = (uint32_t)gid;
    }
    uint32_t entries = 0;
    bool ended = false;
    while (ok && !ended && next_line(&r)) {
        const char *kw;
        size_t kn;
        ok = next_field(&r, &kw, &kn);
        if (!ok)
            break;
        if (kn == 3 && memcmp(kw, "end", 3) == 0) {
            ended = r.f == NULL && r.p == r.end;
            ok = ended;
        } else if (kn == 1 && kw[0] == 's' && entries == 0) {
            const char *name;
            size_t nn;
            char *v = NULL;
            char **slot = NULL;
            ok = next_field(&r, &name, &nn);
#define HOST_SLOT(f)                                                                                                   \
    if (ok && !slot && nn == sizeof(#f) - 1 && memcmp(name, #f, nn) == 0)                                              \
        slot = &c->host.f;
            HOST_STRINGS(HOST_SLOT)
#undef HOST_SLOT
            ok = ok && slot && !*slot && field_str(&r, &v) && v && r.f == NULL;
            if (ok)
                *slot = v;
            else
                free(v);
        } else if (kn == 1 && kw[0] == 'e' && entries < FY_CAP_MAX_) {
            long long st = 0, val = 0;
            struct cap_entry *e = &c->e[++entries];
            ok = field_int(&r, CAP_MISSING, CAP_PRESENT, &st) && field_int(&r, INT64_MIN, INT64_MAX, &val) &&
                 field_str(&r, &e->reason) && field_str(&r, &e->hint) && r.f == NULL;
            e->state = (uint8_t)st;
            e->value = (int64_t)val;
        } else if (kn == 1 && kw[0] == 'f' && entries == FY_CAP_MAX_) {
            char *k = NULL, *v = NULL;
            ok = field_str(&r, &k) && k && field_str(&r, &v) && v && r.f == NULL && !caps_fact(c, k) &&
                 caps_set_fact(c, k, v) == 0;
            free(k);
            free(v);
        } else {
            ok = false;
        }
    }
    if (!ok || !ended || entries != FY_CAP_MAX_) {
        caps_free_internal(c);
        return NULL;
    }
    return c;
}
