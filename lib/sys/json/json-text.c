/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The in-tree JSON library (see jansson.h): the parser (json_loads,
 * json_loadb) and the encoder (json_dumps).
 *
 * The parser reproduces jansson's observable conventions, which core's
 * error messages (lib/policy-json-errors.c) rely on: the error's position
 * is the number of bytes the lexer had consumed when it gave up (a
 * one-character look-ahead is given back first), the column counts UTF-8
 * characters, and the text names the token being read ("... near '...'").
 * test/json/json-diff.c compares all of it with the system libjansson.
 */
#include "json-private.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_PARSER_MAX_DEPTH 2048

/* ---- input stream: one byte at a time, whole UTF-8 sequences checked ---- */

enum { ST_OK = 0, ST_EOF = -1, ST_ERROR = -2 };

struct stream {
    const unsigned char *data;
    size_t len, at;
    unsigned char buf[5]; /* the current character's bytes, NUL-terminated */
    int bpos;
    int state;
    int line, column, last_column;
    size_t position;
};

struct lex {
    struct stream s;
    char *saved; /* the current token's text */
    size_t slen, scap;
    int token;
    char *str; /* TOKEN_STRING: its decoded value */
    size_t str_len;
    json_int_t ival;
    double rval;
    size_t flags;
    int depth;
    json_error_t *error;
};

enum {
    TOKEN_INVALID = -1,
    TOKEN_EOF = 0,
    TOKEN_STRING = 256,
    TOKEN_INTEGER,
    TOKEN_REAL,
    TOKEN_TRUE,
    TOKEN_FALSE,
    TOKEN_NULL,
};

static void error_init(json_error_t *error, const char *source) {
    if (!error)
        return;
    error->text[0] = '\0';
    error->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_unknown;
    error->line = -1;
    error->column = -1;
    error->position = 0;
    snprintf(error->source, JSON_ERROR_SOURCE_LENGTH, "%s", source);
}

static void error_put(json_error_t *error, int line, int column, size_t position, enum json_error_code code,
                      const char *text) {
    if (!error || error->text[0] != '\0') /* the first error stands */
        return;
    error->line = line;
    error->column = column;
    error->position = position > INT32_MAX ? INT32_MAX : (int)position;
    size_t n = strlen(text);
    if (n > JSON_ERROR_TEXT_LENGTH - 2)
        n = JSON_ERROR_TEXT_LENGTH - 2;
    memcpy(error->text, text, n);
    error->text[n] = '\0';
    error->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;
}

__attribute__((format(printf, 3, 4))) static void lex_error(struct lex *lex, enum json_error_code code,
                                                            const char *fmt, ...) {
    char msg[JSON_ERROR_TEXT_LENGTH], with[JSON_ERROR_TEXT_LENGTH + 40];
    const char *text = msg;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (lex->slen > 0 && lex->saved[0] != '\0') {
        if (lex->slen <= 20) {
            snprintf(with, sizeof(with), "%s near '%s'", msg, lex->saved);
            text = with;
        }
    } else {
        /* Nothing read for the token: the input ended (or did not decode). */
        if (code == json_error_invalid_syntax)
            code = json_error_premature_end_of_input;
        if (lex->s.state != ST_ERROR) {
            snprintf(with, sizeof(with), "%s near end of file", msg);
            text = with;
        }
    }
    error_put(lex->error, lex->s.line, lex->s.column, lex->s.position, code, text);
}

static int stream_get(struct lex *lex) {
    struct stream *s = &lex->s;
    if (s->state != ST_OK)
        return s->state;
    if (s->buf[s->bpos] == '\0') { /* also after a NUL byte: it is not re-read */
        if (s->at >= s->len) {
            s->state = ST_EOF;
            return ST_EOF;
        }
        unsigned char c = s->data[s->at++];
        s->buf[0] = c;
        s->buf[1] = '\0';
        s->bpos = 0;
        if (c >= 0x80) {
            int n = jsonp_utf8_first(c);
            int ok = n > 0;
            for (int i = 1; ok && i < n; i++)
                s->buf[i] = s->at < s->len ? s->data[s->at++] : 0xFF;
            if (!ok || !jsonp_utf8_full(s->buf, n, NULL)) {
                s->state = ST_ERROR;
                lex_error(lex, json_error_invalid_utf8, "unable to decode byte 0x%x", c);
                return ST_ERROR;
            }
            s->buf[n] = '\0';
        }
    }
    int c = s->buf[s->bpos++];
    s->position++;
    if (c == '\n') {
        s->line++;
        s->last_column = s->column;
        s->column = 0;
    } else if (jsonp_utf8_first((unsigned char)c)) {
        s->column++; /* characters, not bytes */
    }
    return c;
}

static void stream_unget(struct lex *lex, int c) {
    struct stream *s = &lex->s;
    if (c == ST_EOF || c == ST_ERROR)
        return;
    s->position--;
    if (c == '\n') {
        s->line--;
        s->column = s->last_column;
    } else if (jsonp_utf8_first((unsigned char)c)) {
        s->column--;
    }
    s->bpos--;
}

static int lex_save(struct lex *lex, int c) {
    if (lex->slen + 2 > lex->scap) {
        size_t cap = lex->scap ? lex->scap * 2 : 64;
        char *n = realloc(lex->saved, cap);
        if (!n)
            return -1;
        lex->saved = n;
        lex->scap = cap;
    }
    lex->saved[lex->slen++] = (char)c;
    lex->saved[lex->slen] = '\0';
    return 0;
}

static int lex_get_save(struct lex *lex) {
    int c = stream_get(lex);
    if (c != ST_EOF && c != ST_ERROR && lex_save(lex, c) < 0) {
        lex_error(lex, json_error_out_of_memory, "out of memory");
        return ST_ERROR;
    }
    return c;
}

static void lex_unget_unsave(struct lex *lex, int c) {
    if (c == ST_EOF || c == ST_ERROR)
        return;
    stream_unget(lex, c);
    lex->saved[--lex->slen] = '\0';
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static uint32_t hex4(const char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 4) | (uint32_t)hexval((unsigned char)p[i]);
    return v;
}

static size_t utf8_put(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The token's text is checked in one pass over the input, then decoded
 * from the saved text: an escape's errors point after the closing quote. */
static void lex_scan_string(struct lex *lex) {
    lex->token = TOKEN_INVALID;
    int c = lex_get_save(lex);
    while (c != '"') {
        if (c == ST_ERROR)
            return;
        if (c == ST_EOF) {
            lex_error(lex, json_error_premature_end_of_input, "premature end of input");
            return;
        }
        if (c >= 0 && c <= 0x1F) {
            lex_unget_unsave(lex, c);
            if (c == '\n')
                lex_error(lex, json_error_invalid_syntax, "unexpected newline");
            else
                lex_error(lex, json_error_invalid_syntax, "control character 0x%x", c);
            return;
        }
        if (c == '\\') {
            c = lex_get_save(lex);
            if (c == 'u') {
                c = lex_get_save(lex);
                for (int i = 0; i < 4; i++) {
                    if (hexval(c) < 0) {
                        lex_error(lex, json_error_invalid_syntax, "invalid escape");
                        return;
                    }
                    c = lex_get_save(lex);
                }
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
                       c == 't') {
                c = lex_get_save(lex);
            } else {
                lex_error(lex, json_error_invalid_syntax, "invalid escape");
                return;
            }
        } else {
            c = lex_get_save(lex);
        }
    }

    /* Decoding never grows the text: an escape of 6 or 12 bytes becomes at
     * most 3 or 4. */
    char *out = malloc(lex->slen + 1);
    if (!out) {
        lex_error(lex, json_error_out_of_memory, "out of memory");
        return;
    }
    size_t n = 0;
    const char *p = lex->saved + 1, *end = lex->saved + lex->slen - 1;
    while (p < end) {
        if (*p != '\\') {
            out[n++] = *p++;
            continue;
        }
        p++;
        switch (*p) {
        case 'u': {
            uint32_t v = hex4(p + 1);
            p += 5;
            if (v >= 0xD800 && v <= 0xDBFF) {
                if (p[0] == '\\' && p[1] == 'u') {
                    uint32_t v2 = hex4(p + 2);
                    if (v2 < 0xDC00 || v2 > 0xDFFF) {
                        lex_error(lex, json_error_invalid_syntax, "invalid Unicode '\\u%04X\\u%04X'", (unsigned)v,
                                  (unsigned)v2);
                        free(out);
                        return;
                    }
                    p += 6;
                    v = 0x10000 + ((v - 0xD800) << 10) + (v2 - 0xDC00);
                } else {
                    lex_error(lex, json_error_invalid_syntax, "invalid Unicode '\\u%04X'", (unsigned)v);
                    free(out);
                    return;
                }
            } else if (v >= 0xDC00 && v <= 0xDFFF) {
                lex_error(lex, json_error_invalid_syntax, "invalid Unicode '\\u%04X'", (unsigned)v);
                free(out);
                return;
            }
            n += utf8_put(out + n, v);
            continue;
        }
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        default: out[n++] = *p; break; /* " \ / */
        }
        p++;
    }
    out[n] = '\0';
    lex->str = out;
    lex->str_len = n;
    lex->token = TOKEN_STRING;
}

/* Parse a number in the C locale whatever the host program set. */
static int parse_real(const char *text, double *out) {
    char buf[512];
    const char *t = text;
    const char *dp = localeconv()->decimal_point;
    char *heap = NULL;
    if (dp && strcmp(dp, ".") != 0 && strchr(text, '.')) {
        size_t tl = strlen(text), dl = strlen(dp);
        char *b = tl + dl < sizeof(buf) ? buf : (heap = malloc(tl + dl + 1));
        if (!b)
            return -1;
        const char *dot = strchr(text, '.');
        size_t k = (size_t)(dot - text);
        memcpy(b, text, k);
        memcpy(b + k, dp, dl);
        strcpy(b + k + dl, dot + 1);
        t = b;
    }
    errno = 0;
    double v = strtod(t, NULL);
    int overflow = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
    free(heap);
    *out = v;
    return overflow ? -1 : 0;
}

static int lex_scan_number(struct lex *lex, int c) {
    lex->token = TOKEN_INVALID;
    if (c == '-')
        c = lex_get_save(lex);
    if (c == '0') {
        c = lex_get_save(lex);
        if (is_digit(c)) {
            lex_unget_unsave(lex, c);
            return -1;
        }
    } else if (is_digit(c)) {
        do
            c = lex_get_save(lex);
        while (is_digit(c));
    } else {
        lex_unget_unsave(lex, c);
        return -1;
    }
    if (!(lex->flags & JSON_DECODE_INT_AS_REAL) && c != '.' && c != 'E' && c != 'e') {
        lex_unget_unsave(lex, c);
        errno = 0;
        long long v = strtoll(lex->saved, NULL, 10);
        if (errno == ERANGE) {
            lex_error(lex, json_error_numeric_overflow, v < 0 ? "too big negative integer" : "too big integer");
            return -1;
        }
        lex->token = TOKEN_INTEGER;
        lex->ival = v;
        return 0;
    }
    if (c == '.') {
        c = stream_get(lex);
        if (!is_digit(c)) {
            stream_unget(lex, c);
            return -1;
        }
        if (lex_save(lex, c) < 0) {
            lex_error(lex, json_error_out_of_memory, "out of memory");
            return -1;
        }
        do
            c = lex_get_save(lex);
        while (is_digit(c));
    }
    if (c == 'E' || c == 'e') {
        c = lex_get_save(lex);
        if (c == '+' || c == '-')
            c = lex_get_save(lex);
        if (!is_digit(c)) {
            lex_unget_unsave(lex, c);
            return -1;
        }
        do
            c = lex_get_save(lex);
        while (is_digit(c));
    }
    lex_unget_unsave(lex, c);
    double v;
    if (parse_real(lex->saved, &v) < 0) {
        lex_error(lex, json_error_numeric_overflow, "real number overflow");
        return -1;
    }
    lex->token = TOKEN_REAL;
    lex->rval = v;
    return 0;
}

static int lex_scan(struct lex *lex) {
    lex->slen = 0;
    if (lex->saved)
        lex->saved[0] = '\0';
    free(lex->str);
    lex->str = NULL;
    int c;
    do
        c = stream_get(lex);
    while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
    if (c == ST_EOF)
        return lex->token = TOKEN_EOF;
    if (c == ST_ERROR)
        return lex->token = TOKEN_INVALID;
    if (lex_save(lex, c) < 0) {
        lex_error(lex, json_error_out_of_memory, "out of memory");
        return lex->token = TOKEN_INVALID;
    }
    if (c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',') {
        lex->token = c;
    } else if (c == '"') {
        lex_scan_string(lex);
    } else if (is_digit(c) || c == '-') {
        lex_scan_number(lex, c);
    } else if (is_alpha(c)) {
        /* The whole word, for the error message. */
        do
            c = lex_get_save(lex);
        while (is_alpha(c));
        lex_unget_unsave(lex, c);
        if (strcmp(lex->saved, "true") == 0)
            lex->token = TOKEN_TRUE;
        else if (strcmp(lex->saved, "false") == 0)
            lex->token = TOKEN_FALSE;
        else if (strcmp(lex->saved, "null") == 0)
            lex->token = TOKEN_NULL;
        else
            lex->token = TOKEN_INVALID;
    } else {
        /* The rest of this character's UTF-8 sequence, so that the message
         * quotes valid UTF-8. */
        while (lex->s.buf[lex->s.bpos] != '\0') {
            if (lex_save(lex, lex->s.buf[lex->s.bpos]) < 0)
                break;
            lex->s.bpos++;
            lex->s.position++;
        }
        lex->token = TOKEN_INVALID;
    }
    return lex->token;
}

static json_t *parse_value(struct lex *lex);

static json_t *oom(struct lex *lex, json_t *partial) {
    json_decref(partial);
    lex_error(lex, json_error_out_of_memory, "out of memory");
    return NULL;
}

static json_t *parse_object(struct lex *lex) {
    json_t *object = json_object();
    if (!object)
        return oom(lex, NULL);
    lex_scan(lex);
    if (lex->token == '}')
        return object;
    for (;;) {
        if (lex->token != TOKEN_STRING) {
            lex_error(lex, json_error_invalid_syntax, "string or '}' expected");
            goto fail;
        }
        char *key = lex->str;
        size_t key_len = lex->str_len;
        lex->str = NULL;
        if (memchr(key, '\0', key_len)) {
            free(key);
            lex_error(lex, json_error_null_byte_in_key, "NUL byte in object key not supported");
            goto fail;
        }
        if ((lex->flags & JSON_REJECT_DUPLICATES) && json_object_get(object, key)) {
            free(key);
            lex_error(lex, json_error_duplicate_key, "duplicate object key");
            goto fail;
        }
        lex_scan(lex);
        if (lex->token != ':') {
            free(key);
            lex_error(lex, json_error_invalid_syntax, "':' expected");
            goto fail;
        }
        lex_scan(lex);
        json_t *value = parse_value(lex);
        if (!value) {
            free(key);
            goto fail;
        }
        if (jsonp_object_set_nocheck(object, key, value) < 0) {
            free(key);
            return oom(lex, object);
        }
        free(key);
        lex_scan(lex);
        if (lex->token != ',')
            break;
        lex_scan(lex);
    }
    if (lex->token != '}') {
        lex_error(lex, json_error_invalid_syntax, "'}' expected");
        goto fail;
    }
    return object;
fail:
    json_decref(object);
    return NULL;
}

static json_t *parse_array(struct lex *lex) {
    json_t *array = json_array();
    if (!array)
        return oom(lex, NULL);
    lex_scan(lex);
    if (lex->token == ']')
        return array;
    while (lex->token != TOKEN_EOF) {
        json_t *elem = parse_value(lex);
        if (!elem)
            goto fail;
        if (json_array_append_new(array, elem) < 0)
            return oom(lex, array);
        lex_scan(lex);
        if (lex->token != ',')
            break;
        lex_scan(lex);
    }
    if (lex->token != ']') {
        lex_error(lex, json_error_invalid_syntax, "']' expected");
        goto fail;
    }
    return array;
fail:
    json_decref(array);
    return NULL;
}

static json_t *parse_value(struct lex *lex) {
    json_t *json;
    if (++lex->depth > JSON_PARSER_MAX_DEPTH) {
        lex_error(lex, json_error_stack_overflow, "maximum parsing depth reached");
        return NULL;
    }
    switch (lex->token) {
    case TOKEN_STRING:
        if (!(lex->flags & JSON_ALLOW_NUL) && memchr(lex->str, '\0', lex->str_len)) {
            lex_error(lex, json_error_null_character, "\\u0000 is not allowed without JSON_ALLOW_NUL");
            return NULL;
        }
        json = jsonp_stringn_nocheck(lex->str, lex->str_len);
        break;
    case TOKEN_INTEGER:
        json = json_integer(lex->ival);
        break;
    case TOKEN_REAL:
        json = json_real(lex->rval);
        break;
    case TOKEN_TRUE:
        json = json_true();
        break;
    case TOKEN_FALSE:
        json = json_false();
        break;
    case TOKEN_NULL:
        json = json_null();
        break;
    case '{':
        json = parse_object(lex);
        if (!json)
            return NULL;
        break;
    case '[':
        json = parse_array(lex);
        if (!json)
            return NULL;
        break;
    case TOKEN_INVALID:
        lex_error(lex, json_error_invalid_syntax, "invalid token");
        return NULL;
    default:
        lex_error(lex, json_error_invalid_syntax, "unexpected token");
        return NULL;
    }
    if (!json)
        return oom(lex, NULL);
    lex->depth--;
    return json;
}

static json_t *parse(const char *data, size_t len, size_t flags, json_error_t *error) {
    struct lex lex = {
        .s = {.data = (const unsigned char *)data, .len = len, .line = 1},
        .flags = flags,
        .error = error,
    };
    json_t *result = NULL;
    lex_scan(&lex);
    if (!(flags & JSON_DECODE_ANY) && lex.token != '[' && lex.token != '{') {
        lex_error(&lex, json_error_invalid_syntax, "'[' or '{' expected");
        goto out;
    }
    result = parse_value(&lex);
    if (!result)
        goto out;
    if (!(flags & JSON_DISABLE_EOF_CHECK)) {
        lex_scan(&lex);
        if (lex.token != TOKEN_EOF) {
            lex_error(&lex, json_error_end_of_input_expected, "end of file expected");
            json_decref(result);
            result = NULL;
            goto out;
        }
    }
    if (error)
        error->position = lex.s.position > INT32_MAX ? INT32_MAX : (int)lex.s.position;
out:
    free(lex.saved);
    free(lex.str);
    return result;
}

json_t *json_loads(const char *input, size_t flags, json_error_t *error) {
    error_init(error, "<string>");
    if (!input) {
        error_put(error, -1, -1, 0, json_error_invalid_argument, "wrong arguments");
        return NULL;
    }
    return parse(input, strlen(input), flags, error);
}

json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error) {
    error_init(error, "<buffer>");
    if (!buffer) {
        error_put(error, -1, -1, 0, json_error_invalid_argument, "wrong arguments");
        return NULL;
    }
    return parse(buffer, buflen, flags, error);
}

/* ---- json_dumps ---- */

struct out {
    char *b;
    size_t n, cap;
    int failed;
};

static void put(struct out *o, const char *s, size_t n) {
    if (o->failed)
        return;
    if (n >= o->cap - o->n) {
        size_t cap = o->cap ? o->cap : 256;
        while (n >= cap - o->n) {
            if (cap > SIZE_MAX / 2) {
                o->failed = 1;
                return;
            }
            cap *= 2;
        }
        char *nb = realloc(o->b, cap);
        if (!nb) {
            o->failed = 1;
            return;
        }
        o->b = nb;
        o->cap = cap;
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
    o->b[o->n] = '\0';
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void newline_indent(struct out *o, size_t flags, int depth, int space) {
    int n = (int)(flags & JSON_MAX_INDENT);
    if (n > 0) {
        put(o, "\n", 1);
        for (int i = 0; i < n * depth; i++)
            put(o, " ", 1);
    } else if (space && !(flags & JSON_COMPACT)) {
        put(o, " ", 1);
    }
}

static void dump_string(struct out *o, const char *s, size_t len, size_t flags) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    put(o, "\"", 1);
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && !(*p == '/' && (flags & JSON_ESCAPE_SLASH)) &&
               !(*p >= 0x80 && (flags & JSON_ENSURE_ASCII)))
            p++;
        put(o, (const char *)run, (size_t)(p - run));
        if (p >= end)
            break;
        char esc[16];
        switch (*p) {
        case '"': puts_(o, "\\\""); break;
        case '\\': puts_(o, "\\\\"); break;
        case '/': puts_(o, "\\/"); break;
        case '\b': puts_(o, "\\b"); break;
        case '\f': puts_(o, "\\f"); break;
        case '\n': puts_(o, "\\n"); break;
        case '\r': puts_(o, "\\r"); break;
        case '\t': puts_(o, "\\t"); break;
        default:
            if (*p < 0x80) {
                snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)*p);
                puts_(o, esc);
            } else { /* JSON_ENSURE_ASCII: the strings hold valid UTF-8 */
                int n = jsonp_utf8_first(*p);
                uint32_t cp = 0xFFFD;
                if (n == 0 || (size_t)n > (size_t)(end - p) || !jsonp_utf8_full(p, n, &cp)) {
                    o->failed = 1;
                    return;
                }
                if (cp >= 0x10000) {
                    cp -= 0x10000;
                    snprintf(esc, sizeof(esc), "\\u%04X\\u%04X", (unsigned)(0xD800 | (cp >> 10)),
                             (unsigned)(0xDC00 | (cp & 0x3FF)));
                } else {
                    snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)cp);
                }
                puts_(o, esc);
                p += n;
                continue;
            }
        }
        p++;
    }
    put(o, "\"", 1);
}

/* %.17g in the C locale, always with a '.' or an exponent so that it reads
 * back as a real, the exponent without '+' and leading zeros. */
static void dump_real(struct out *o, double v, size_t flags) {
    int prec = (int)((flags >> 11) & 0x1F);
    char buf[64], res[72];
    snprintf(buf, sizeof(buf), "%.*g", prec ? prec : 17, v);
    const char *dp = localeconv()->decimal_point;
    size_t k = 0;
    for (size_t i = 0; buf[i]; i++) {
        if (dp && *dp && strncmp(buf + i, dp, strlen(dp)) == 0 && strcmp(dp, ".") != 0) {
            res[k++] = '.';
            i += strlen(dp) - 1;
        } else {
            res[k++] = buf[i];
        }
    }
    res[k] = '\0';
    if (!strchr(res, '.') && !strchr(res, 'e')) {
        strcat(res, ".0");
    }
    char *e = strchr(res, 'e');
    if (e) {
        char *q = e + 1, *r = e + 1;
        if (*r == '+')
            r++;
        else if (*r == '-')
            *q++ = *r++;
        while (*r == '0' && r[1] != '\0')
            r++;
        memmove(q, r, strlen(r) + 1);
    }
    puts_(o, res);
}

static int cmp_keys(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int dump(struct out *o, const json_t *json, size_t flags, int depth);

static int dump(struct out *o, const json_t *json, size_t flags, int depth) {
    char buf[32];
    switch (json_typeof(json)) {
    case JSON_NULL: puts_(o, "null"); return 0;
    case JSON_TRUE: puts_(o, "true"); return 0;
    case JSON_FALSE: puts_(o, "false"); return 0;
    case JSON_INTEGER:
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(json));
        puts_(o, buf);
        return 0;
    case JSON_REAL: dump_real(o, json_real_value(json), flags); return 0;
    case JSON_STRING: dump_string(o, json_string_value(json), json_string_length(json), flags); return 0;
    default: break;
    }
    int *visiting = jsonp_visiting(json); /* a cycle would never end */
    if (*visiting)
        return -1;
    int rc = 0;
    if (json_is_array(json)) {
        size_t n = json_array_size(json);
        if (n == 0) {
            puts_(o, "[]");
            return 0;
        }
        *visiting = 1;
        put(o, "[", 1);
        newline_indent(o, flags, depth + 1, 0);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            rc = dump(o, json_array_get(json, i), flags, depth + 1);
            if (i + 1 < n) {
                put(o, ",", 1);
                newline_indent(o, flags, depth + 1, 1);
            } else {
                newline_indent(o, flags, depth, 0);
            }
        }
        put(o, "]", 1);
        *visiting = 0;
        return rc;
    }
    size_t n = json_object_size(json);
    if (n == 0) {
        puts_(o, "{}");
        return 0;
    }
    const char **keys = malloc(n * sizeof(*keys));
    if (!keys)
        return -1;
    for (size_t i = 0; i < n; i++)
        keys[i] = json_object_key_at_(json, i);
    if (flags & JSON_SORT_KEYS)
        qsort(keys, n, sizeof(*keys), cmp_keys);
    *visiting = 1;
    put(o, "{", 1);
    newline_indent(o, flags, depth + 1, 0);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        dump_string(o, keys[i], strlen(keys[i]), flags);
        puts_(o, (flags & JSON_COMPACT) ? ":" : ": ");
        rc = dump(o, json_object_get(json, keys[i]), flags, depth + 1);
        if (i + 1 < n) {
            put(o, ",", 1);
            newline_indent(o, flags, depth + 1, 1);
        } else {
            newline_indent(o, flags, depth, 0);
        }
    }
    put(o, "}", 1);
    *visiting = 0;
    free(keys);
    return rc;
}

char *json_dumps(const json_t *json, size_t flags) {
    if (!json || (!(flags & JSON_ENCODE_ANY) && !json_is_array(json) && !json_is_object(json)))
        return NULL;
    struct out o = {0};
    if (dump(&o, json, flags, 0) < 0 || o.failed || !o.b) {
        free(o.b);
        return NULL;
    }
    return o.b;
}
