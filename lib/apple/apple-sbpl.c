/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SBPL text: the string escaper, canonical paths, and a small checker of
 * the profiles apple-plan.c writes (and of anything handed to Seatbelt). */
#include <string.h>

#include "apple-sbpl.h"

/* ---- strings ---- */

/* Length of the valid UTF-8 sequence at s (1-4), or 0 (overlong forms,
 * surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min, cp;
    if ((c & 0xe0) == 0xc0) {
        n = 2, min = 0x80, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, min = 0x800, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* No control character, and valid UTF-8. */
static bool string_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            return false;
        size_t n = utf8_len(p + i);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

int sbpl_append_string(struct strbuf *sb, const char *s) {
    if (!string_ok(s))
        return FY_E_POLICY;
    strbuf_append(sb, "\"");
    for (const char *q = s; *q; q++) {
        if (*q == '"' || *q == '\\')
            strbuf_appendn(sb, "\\", 1);
        strbuf_appendn(sb, q, 1);
    }
    strbuf_append(sb, "\"");
    return sb->oom ? FY_E_NOMEM : 0;
}

/* ---- paths ---- */

int sbpl_canonical_path(const char *path, char *out, size_t outlen) {
    if (!path || path[0] != '/' || !string_ok(path))
        return FY_E_POLICY;
    size_t len = strlen(path);
    if (len > 1 && path[len - 1] == '/')
        return FY_E_POLICY;
    for (const char *c = path + 1; len > 1;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return FY_E_POLICY;
        if (!e)
            break;
        c = e + 1;
    }
    /* macOS's /tmp, /var and /etc are symbolic links into /private. */
    static const char *const linked[] = {"/tmp", "/var", "/etc"};
    const char *prefix = "";
    for (size_t i = 0; i < FY_ARRAY_SIZE(linked); i++) {
        size_t n = strlen(linked[i]);
        if (strncmp(path, linked[i], n) == 0 && (path[n] == '/' || path[n] == '\0'))
            prefix = "/private";
    }
    size_t need = strlen(prefix) + len + 1;
    if (need > outlen || need > 4096)
        return FY_E_POLICY;
    memcpy(out, prefix, strlen(prefix));
    memcpy(out + strlen(prefix), path, len + 1);
    return 0;
}

/* ---- the checker ---- */

/* Operations the checker knows (those Seatbelt has that a build profile may
 * name); the prefix ones end with '*'. */
static const char *const known_ops[] = {
    "default", "file*", "file-read*", "file-read-data", "file-read-metadata", "file-read-xattr",
    "file-write*", "file-write-data", "file-write-create", "file-write-unlink", "file-write-mode",
    "file-write-setugid", "file-write-xattr", "file-ioctl", "file-map-executable", "process-exec",
    "process-exec*", "process-fork", "process-info*", "process-info-pidinfo", "signal", "network*",
    "network-outbound", "network-inbound", "network-bind", "system-socket", "mach-lookup", "sysctl-read",
    "ipc-posix-shm*", "ipc-posix-sem", "iokit-open", "pseudo-tty",
};
/* What may be allowed without a filter. */
static const char *const unfiltered_ok[] = {
    "process-fork", "network*", "network-outbound", "network-inbound", "network-bind", "system-socket",
};
/* Filters whose one argument is a string. */
static const char *const string_filters[] = {
    "literal", "subpath", "prefix", "path", "path-literal", "global-name", "local-name", "sysctl-name",
    "sysctl-name-prefix",
};

struct ck {
    const char *t;
    size_t len, pos;
    const char *why;
    size_t off;
};

enum tok { T_END, T_OPEN, T_CLOSE, T_STRING, T_REGEX, T_ATOM, T_BAD };

static bool in(const char *const *set, size_t n, const char *s, size_t slen) {
    for (size_t i = 0; i < n; i++)
        if (strlen(set[i]) == slen && memcmp(set[i], s, slen) == 0)
            return true;
    return false;
}
#define IN(set, s, n) in(set, FY_ARRAY_SIZE(set), s, n)

static int fail(struct ck *k, const char *why, size_t off) {
    if (!k->why) {
        k->why = why;
        k->off = off;
    }
    return -1;
}

static void skip_space(struct ck *k) {
    while (k->pos < k->len) {
        char c = k->t[k->pos];
        if (c == ';') {
            while (k->pos < k->len && k->t[k->pos] != '\n')
                k->pos++;
        } else if (c == ' ' || c == '\n' || c == '\t') {
            k->pos++;
        } else {
            break;
        }
    }
}

/* The next token: its kind, and where its text (of a string: between the
 * quotes, still escaped) begins and how long it is. */
static enum tok next(struct ck *k, const char **s, size_t *n) {
    skip_space(k);
    if (k->pos >= k->len)
        return T_END;
    size_t start = k->pos;
    const char *t = k->t;
    char c = t[k->pos];
    if (c == '(' || c == ')') {
        k->pos++;
        return c == '(' ? T_OPEN : T_CLOSE;
    }
    if (c == '"' || (c == '#' && k->pos + 1 < k->len && t[k->pos + 1] == '"')) {
        enum tok kind = c == '"' ? T_STRING : T_REGEX;
        k->pos += kind == T_STRING ? 1 : 2;
        *s = t + k->pos;
        while (k->pos < k->len && t[k->pos] != '"') {
            unsigned char u = (unsigned char)t[k->pos];
            if (u < 0x20 || u == 0x7f) {
                fail(k, "control character in a string", k->pos);
                return T_BAD;
            }
            if (u == '\\') {
                if (k->pos + 1 >= k->len || (t[k->pos + 1] != '\\' && t[k->pos + 1] != '"')) {
                    fail(k, "unknown escape in a string (only \\\\ and \\\" are written)", k->pos);
                    return T_BAD;
                }
                k->pos++;
            }
            k->pos++;
        }
        if (k->pos >= k->len) {
            fail(k, "unterminated string", start);
            return T_BAD;
        }
        *n = (size_t)(t + k->pos - *s);
        k->pos++;
        return kind;
    }
    *s = t + k->pos;
    while (k->pos < k->len) {
        unsigned char u = (unsigned char)t[k->pos];
        if (u == '(' || u == ')' || u == ' ' || u == '\n' || u == '\t' || u == ';' || u == '"')
            break;
        if (u < 0x20 || u >= 0x7f) {
            fail(k, "unexpected byte outside a string", k->pos);
            return T_BAD;
        }
        k->pos++;
    }
    *n = (size_t)(t + k->pos - *s);
    return T_ATOM;
}

static bool atom_is(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

/* Inside a filter list, after its '(': checks it and its ')'. */
static int check_filter(struct ck *k, int depth) {
    const char *s, *a;
    size_t n, an;
    size_t at = k->pos;
    if (depth > 8)
        return fail(k, "filters nested too deeply", at);
    if (next(k, &s, &n) != T_ATOM)
        return fail(k, "a filter must begin with its name", at);
    enum tok t;
    if (IN(string_filters, s, n)) {
        if (next(k, &a, &an) != T_STRING)
            return fail(k, "this filter takes one string", at);
    } else if (atom_is(s, n, "regex")) {
        if (next(k, &a, &an) != T_REGEX)
            return fail(k, "regex takes one #\"...\" literal", at);
    } else if (atom_is(s, n, "remote") || atom_is(s, n, "local")) {
        if (next(k, &a, &an) != T_ATOM ||
            !(atom_is(a, an, "ip") || atom_is(a, an, "tcp") || atom_is(a, an, "udp") || atom_is(a, an, "unix-socket")))
            return fail(k, "remote/local takes ip, tcp, udp or unix-socket", at);
        if (atom_is(a, an, "unix-socket")) { /* (remote unix-socket (path-literal "...")) */
            const char *b;
            size_t bn;
            if (next(k, &a, &an) != T_OPEN || next(k, &a, &an) != T_ATOM || !atom_is(a, an, "path-literal") ||
                next(k, &b, &bn) != T_STRING || next(k, &b, &bn) != T_CLOSE)
                return fail(k, "unix-socket takes (path-literal \"...\")", at);
        } else if (next(k, &a, &an) != T_STRING) {
            return fail(k, "remote/local takes an address string", at);
        }
    } else if (atom_is(s, n, "target")) {
        if (next(k, &a, &an) != T_ATOM || !(atom_is(a, an, "same-sandbox") || atom_is(a, an, "self")))
            return fail(k, "target takes same-sandbox or self", at);
    } else if (atom_is(s, n, "vnode-type")) {
        if (next(k, &a, &an) != T_ATOM)
            return fail(k, "vnode-type takes a type name", at);
    } else if (atom_is(s, n, "require-all") || atom_is(s, n, "require-any") || atom_is(s, n, "require-not")) {
        int count = 0;
        while ((t = next(k, &a, &an)) == T_OPEN) {
            if (check_filter(k, depth + 1) < 0)
                return -1;
            count++;
        }
        if (t != T_CLOSE || count == 0)
            return fail(k, "require-* takes one or more filters", at);
        return 0;
    } else if (atom_is(s, n, "with")) {
        if (next(k, &a, &an) != T_ATOM)
            return fail(k, "with takes a modifier name", at);
        if (atom_is(a, an, "no-sandbox"))
            return fail(k, "(with no-sandbox) is never allowed", at);
        if (!atom_is(a, an, "no-log") && !atom_is(a, an, "report"))
            return fail(k, "unknown modifier", at);
    } else {
        return fail(k, "unknown filter", at);
    }
    if (next(k, &a, &an) != T_CLOSE)
        return fail(k, "a filter has too many arguments", at);
    return 0;
}

/* One top-level form, after its '('. index: its position (0: version,
 * 1: deny default). */
static int check_form(struct ck *k, size_t index) {
    const char *s, *a;
    size_t n, an;
    size_t at = k->pos;
    if (next(k, &s, &n) != T_ATOM)
        return fail(k, "a form must begin with version, allow or deny", at);
    if (index == 0) {
        if (!atom_is(s, n, "version") || next(k, &a, &an) != T_ATOM || !atom_is(a, an, "1") ||
            next(k, &a, &an) != T_CLOSE)
            return fail(k, "the profile must begin with (version 1)", at);
        return 0;
    }
    bool allow = atom_is(s, n, "allow");
    if (!allow && !atom_is(s, n, "deny"))
        return fail(k, "a form must be an allow or a deny", at);
    if (index == 1 && (allow || next(k, &a, &an) != T_ATOM || !atom_is(a, an, "default") ||
                       next(k, &a, &an) != T_CLOSE))
        return fail(k, "(deny default) must follow (version 1)", at);
    if (index == 1)
        return 0;
    size_t nops = 0, nfilters = 0;
    bool all_unfiltered_ok = true;
    enum tok t;
    while ((t = next(k, &a, &an)) == T_ATOM) {
        if (nfilters)
            return fail(k, "an operation after a filter", at);
        if (!IN(known_ops, a, an))
            return fail(k, "unknown operation", (size_t)(a - k->t));
        if (allow && atom_is(a, an, "default"))
            return fail(k, "(allow default) is never allowed", at);
        if (allow && atom_is(a, an, "iokit-open"))
            return fail(k, "iokit-open (IOKit user clients) is never allowed", at);
        all_unfiltered_ok = all_unfiltered_ok && IN(unfiltered_ok, a, an);
        nops++;
    }
    while (t == T_OPEN) {
        if (check_filter(k, 0) < 0)
            return -1;
        nfilters++;
        t = next(k, &a, &an);
    }
    if (t == T_BAD)
        return -1;
    if (t != T_CLOSE)
        return fail(k, "an allow or deny holds operations, then filters", at);
    if (!nops)
        return fail(k, "an allow or deny names no operation", at);
    if (allow && !nfilters && !all_unfiltered_ok)
        return fail(k, "this operation is never allowed without a filter", at);
    return 0;
}

int sbpl_check(const char *text, size_t len, const char **why, size_t *off) {
    struct ck k = {.t = text, .len = len};
    *why = NULL;
    *off = 0;
    if (len > APPLE_SBPL_MAX) {
        *why = "the profile is larger than APPLE_SBPL_MAX";
        return -1;
    }
    if (memchr(text, '\0', len)) {
        *why = "NUL byte in the profile";
        *off = (size_t)((const char *)memchr(text, '\0', len) - text);
        return -1;
    }
    /* Balance first (outside strings and comments), for a clear message. */
    int depth = 0;
    for (;;) {
        const char *s;
        size_t n;
        size_t at = k.pos;
        enum tok t = next(&k, &s, &n);
        if (t == T_END || t == T_BAD)
            break;
        depth += t == T_OPEN ? 1 : t == T_CLOSE ? -1 : 0;
        if (depth < 0) {
            fail(&k, "unbalanced ')'", at);
            break;
        }
        if (depth > 64) {
            fail(&k, "forms nested too deeply", at);
            break;
        }
    }
    if (!k.why && depth > 0)
        fail(&k, "unbalanced '(': the profile ends inside a form", len);
    k.pos = 0;
    size_t index = 0;
    while (!k.why) {
        const char *s;
        size_t n;
        size_t at = k.pos;
        enum tok t = next(&k, &s, &n);
        if (t == T_END)
            break;
        if (t == T_BAD || t != T_OPEN || check_form(&k, index) < 0) {
            if (!k.why)
                fail(&k, t == T_CLOSE ? "unbalanced ')'" : "a top-level item must be a form", at);
            break;
        }
        index++;
    }
    if (!k.why && index < 2)
        fail(&k, "the profile must hold (version 1) and (deny default)", 0);
    if (k.why) {
        *why = k.why;
        *off = k.off;
        return -1;
    }
    return 0;
}
