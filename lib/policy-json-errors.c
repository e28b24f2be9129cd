/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy files: when jansson refuses a document, the error in the policy's
 * own terms (a JSON path, a line and a column, what was expected), never
 * the parser's words. Used by policy-json.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"

#define LOC_MAX 600

/* (The same path builders as policy-json.c's.) */
static void sub(char *out, const char *loc, const char *key) { snprintf(out, LOC_MAX, "%s.%s", loc, key); }
static void idx(char *out, const char *loc, size_t i) { snprintf(out, LOC_MAX, "%s[%zu]", loc, i); }

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

void policy_json_line_col(const char *doc, size_t at, int *line, int *col) {
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

bool policy_json_out_of_memory(const char *doc, size_t len, const json_error_t *je) {
    enum json_error_code code = json_error_code(je);
    /* (no reason at all: its lexer's buffer could not be allocated, before
     * any error was set; the caller zeroes je) */
    if (code == json_error_out_of_memory || !je->text[0])
        return true;
    if (code != json_error_unknown && code != json_error_invalid_syntax && code != json_error_premature_end_of_input &&
        code != json_error_end_of_input_expected && code != json_error_invalid_format)
        return false;
    struct scan s = {.doc = doc, .len = len, .stop = len + 1};
    scan_doc(&s);
    return !s.lost && !s.problem[0] && s.x == X_NOTHING;
}

/* jansson's refusal of the document, in our words at a JSON path. */
int policy_json_syntax_error(const char *doc, size_t len, const json_error_t *je, fy_error **reterr) {
    enum json_error_code code = json_error_code(je);
    if (policy_json_out_of_memory(doc, len, je))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory");
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
    policy_json_line_col(doc, at, &line, &col);
    return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, loc, "%s (line %d, column %d)", what, line, col);
}

