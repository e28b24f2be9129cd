/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Differential test of the in-tree JSON library (lib/sys/json) against the
 * system libjansson, loaded with dlopen() so that both live in one process
 * under the same names: every document (the fuzz corpora given as
 * arguments, their deterministic mutations, and a generated set of tricky
 * documents) is loaded by both under each flag set core uses; success,
 * error code, line, column, position, source and text must agree, and so
 * must json_dumps under each flag set core uses, and json_pack for each
 * format core uses.
 *
 * Exit status 0: no difference; 1: differences (printed); 77: no system
 * libjansson to compare with (meson: skipped).
 */
#include "jansson.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The system library's entry points (its json_t and json_error_t have the
 * layout jansson documents, which jansson.h here repeats). */
static json_t *(*sys_loadb)(const char *, size_t, size_t, json_error_t *);
static json_t *(*sys_loads)(const char *, size_t, json_error_t *);
static char *(*sys_dumps)(const json_t *, size_t);
static void (*sys_delete)(json_t *);
static json_t *(*sys_pack)(const char *, ...);
static json_t *(*sys_string)(const char *);
static json_t *(*sys_integer)(json_int_t);

static void sys_decref(json_t *j) {
    if (j && j->refcount != (size_t)-1 && --j->refcount == 0)
        sys_delete(j);
}

static long checked, failures;

static void show(const char *doc, size_t len) {
    fputs("  document: \"", stderr);
    for (size_t i = 0; i < len && i < 200; i++) {
        unsigned char c = (unsigned char)doc[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fprintf(stderr, "%s\" (%zu bytes)\n", len > 200 ? "..." : "", len);
}

static void fail(const char *doc, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(const char *doc, size_t len, const char *fmt, ...) {
    if (++failures <= 40) {
        va_list ap;
        va_start(ap, fmt);
        fputs("DIFF: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        show(doc, len);
    }
}

static const size_t load_flags[] = {0, JSON_REJECT_DUPLICATES, JSON_DECODE_ANY,
                                    JSON_REJECT_DUPLICATES | JSON_DECODE_ANY};
static const size_t dump_flags[] = {
    JSON_INDENT(2) | JSON_SORT_KEYS, JSON_COMPACT | JSON_SORT_KEYS, JSON_INDENT(2) | JSON_PRESERVE_ORDER,
    JSON_INDENT(1), JSON_SORT_KEYS | JSON_COMPACT, 0, JSON_COMPACT, JSON_INDENT(2) | JSON_COMPACT,
    JSON_INDENT(3) | JSON_SORT_KEYS | JSON_ENSURE_ASCII, JSON_ENCODE_ANY | JSON_ESCAPE_SLASH,
    JSON_REAL_PRECISION(6) | JSON_SORT_KEYS,
};

static void compare_errors(const char *doc, size_t len, const char *how, size_t flags, const json_error_t *a,
                           const json_error_t *b) {
    if (json_error_code(a) != json_error_code(b) || a->line != b->line || a->column != b->column ||
        a->position != b->position || strcmp(a->text, b->text) != 0 || strcmp(a->source, b->source) != 0)
        fail(doc, len,
             "%s flags %#zx: error differs\n  in-tree: code %d line %d column %d position %d source %s: %s\n"
             "  jansson: code %d line %d column %d position %d source %s: %s",
             how, flags, (int)json_error_code(a), a->line, a->column, a->position, a->source, a->text,
             (int)json_error_code(b), b->line, b->column, b->position, b->source, b->text);
}

static void compare_dumps(const char *doc, size_t len, const json_t *mine, const json_t *theirs) {
    for (size_t d = 0; d < sizeof(dump_flags) / sizeof(*dump_flags); d++) {
        char *a = json_dumps(mine, dump_flags[d]);
        char *b = sys_dumps(theirs, dump_flags[d]);
        checked++;
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            fail(doc, len, "json_dumps flags %#zx differs\n  in-tree: %.300s\n  jansson: %.300s", dump_flags[d],
                 a ? a : "(NULL)", b ? b : "(NULL)");
        /* What we write, we read back as the same value. */
        if (a && (dump_flags[d] & JSON_REAL_PRECISION(31)) == 0) {
            json_error_t je;
            json_t *again = json_loads(a, JSON_DECODE_ANY, &je);
            if (!json_equal(again, mine))
                fail(doc, len, "json_dumps flags %#zx does not read back: %s", dump_flags[d], je.text);
            json_decref(again);
        }
        free(a);
        free(b);
    }
}

static void check_doc(const char *doc, size_t len) {
    for (size_t f = 0; f < sizeof(load_flags) / sizeof(*load_flags); f++) {
        size_t flags = load_flags[f];
        json_error_t ea, eb;
        memset(&ea, 0x5a, sizeof(ea));
        memset(&eb, 0x5a, sizeof(eb));
        json_t *a = json_loadb(doc, len, flags, &ea);
        json_t *b = sys_loadb(doc, len, flags, &eb);
        checked++;
        if ((a == NULL) != (b == NULL)) {
            fail(doc, len, "json_loadb flags %#zx: in-tree %s, jansson %s (%s)", flags, a ? "loads" : "refuses",
                 b ? "loads" : "refuses", a ? eb.text : ea.text);
        } else if (!a) {
            compare_errors(doc, len, "json_loadb", flags, &ea, &eb);
        } else {
            if (ea.position != eb.position)
                fail(doc, len, "json_loadb flags %#zx: end position %d, jansson %d", flags, ea.position,
                     eb.position);
            if (f == 0)
                compare_dumps(doc, len, a, b);
        }
        json_decref(a);
        sys_decref(b);
        char *z = memchr(doc, '\0', len) == NULL ? strndup(doc, len) : NULL;
        if (z) {
            a = json_loads(z, flags, &ea);
            b = sys_loads(z, flags, &eb);
            free(z);
            if ((a == NULL) != (b == NULL))
                fail(doc, len, "json_loads flags %#zx: in-tree %s, jansson %s", flags, a ? "loads" : "refuses",
                     b ? "loads" : "refuses");
            else if (!a)
                compare_errors(doc, len, "json_loads", flags, &ea, &eb);
            json_decref(a);
            sys_decref(b);
        }
    }
}

/* Deterministic mutations of a document: flipped, inserted and deleted
 * bytes, biased towards JSON's own characters. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static void mutate_and_check(const char *doc, size_t len, int rounds) {
    static const char pick[] = "{}[]:,\"\\u0123456789-+.eEtrufalsn \n\t\r\x00\x7f\x80\xc3\xa9\xed\xf4\xff";
    char *buf = malloc(len + 16);
    if (!buf)
        return;
    for (int r = 0; r < rounds; r++) {
        memcpy(buf, doc, len);
        size_t n = len;
        int edits = 1 + (int)(next_rand() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = n ? next_rand() % (n + 1) : 0;
            char c = (next_rand() & 1) ? pick[next_rand() % (sizeof(pick) - 1)] : (char)next_rand();
            switch (next_rand() % 3) {
            case 0:
                if (at < n)
                    buf[at] = c;
                break;
            case 1:
                if (n < len + 15) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = c;
                    n++;
                }
                break;
            default:
                if (at < n) {
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                }
            }
        }
        check_doc(buf, n);
    }
    free(buf);
}

static void check_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    check_doc(buf, n);
    mutate_and_check(buf, n, 60);
}

static void check_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cannot open %s\n", dir);
        failures++;
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            check_file(path);
    }
    closedir(d);
}

static void check_str(const char *s) {
    check_doc(s, strlen(s));
}

static void check_deep(int levels, const char *open, const char *close, const char *inner) {
    size_t ol = strlen(open), cl = strlen(close), il = strlen(inner);
    size_t n = (size_t)levels * (ol + cl) + il;
    char *b = malloc(n + 1);
    if (!b)
        return;
    size_t k = 0;
    for (int i = 0; i < levels; i++, k += ol)
        memcpy(b + k, open, ol);
    memcpy(b + k, inner, il);
    k += il;
    for (int i = 0; i < levels; i++, k += cl)
        memcpy(b + k, close, cl);
    check_doc(b, k);
    check_doc(b, k - cl * (size_t)(levels / 2)); /* cut short */
    free(b);
}

static const char *const tricky[] = {
    "", " ", "\n\n  ", "{", "[", "}", "]", "{}", "[]", "[{}]", "{\"\":{}}", " [ ] ", "{}x", "{} {}", "[]]",
    "[1,]", "[,1]", "[1 2]", "{\"a\" 1}", "{\"a\":}", "{\"a\":1,}", "{,}", "{\"a\":1 \"b\":2}", "{1:2}",
    "[tru]", "[true]", "[truex]", "[nul]", "[null]", "[false]", "[False]", "[nan]", "[inf]", "[-inf]", "[@]",
    "[\"\xc3\xa9\"]", "[\xc3\xa9]", "[\xe2\x82\xac]", "[\xf0\x9f\x98\x80]", "[\x80]", "[\"\x80\"]",
    "[\"a\xc0\x80\"]", "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]", "[\"\xe0\x80\x80\"]", "[\"\xf0\x80\x80\x80\"]",
    "[\"\xc3\"]", "[\"\xe2\x82\"]", "[\"\xc3", "[\"\xe2\x82", "\xef\xbb\xbf[]", "[\"\xff\"]", "[\"\xfe\"]",
    "[\"\xf5\x80\x80\x80\"]", "[\"\xc2\xa0\"]", "[\"\x7f\"]",
    "[0]", "[-0]", "[-0.0]", "[01]", "[-01]", "[1.]", "[.5]", "[-]", "[-a]", "[1e]", "[1e+]", "[1e-]", "[1E2]",
    "[1e+2]", "[1.5e-3]", "[0.1]", "[1.7976931348623157e308]", "[1e309]", "[-1e309]", "[1e-400]", "[4.9e-324]",
    "[123456789012345678901234567890.5]", "[1.0]", "[100.0]", "[1e16]", "[1e17]", "[1e-5]", "[123.456e78]",
    "[3.14159265358979323846]", "[2.5e-7]", "[1e100]", "[9223372036854775807]", "[-9223372036854775808]",
    "[9223372036854775808]", "[-9223372036854775809]", "[99999999999999999999999]", "[0x10]", "[1_000]",
    "[+1]", "[1.5.5]", "[1ee5]", "[1e5.5]", "[\"\\u00e9\"]", "[\"\\u00E9\"]", "[\"\\ud83d\\ude00\"]",
    "[\"\\ud83d\"]", "[\"\\ude00\"]", "[\"\\ud83dx\"]", "[\"\\ud83d\\u0041\"]", "[\"\\ud83d\\ud83d\"]",
    "[\"\\u0000\"]", "[\"a\\u0000b\"]", "{\"a\\u0000b\":1}", "{\"\\u0000\":1}", "[\"\\x\"]", "[\"\\u12g4\"]",
    "[\"\\u12\"]", "[\"\\u\"]", "[\"\\", "[\"abc", "[\"a\nb\"]", "[\"a\tb\"]", "[\"a\x01\"]", "[\"\x1f\"]",
    "[\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"]", "[\"\\u001f\\u0001\\u007f\\u0080\\u2028\\ufeff\\uffff\"]",
    "[\"/\", \"</script>\"]", "{\"a\":1,\"a\":2}", "{\"a\":1,\"b\":2,\"a\":3}", "{\"b\":{\"x\":1},\"b\":[]}",
    "{\"\\\"\\\\\\n\\t/\":1,\"\\u00e9\":2,\"\\ud83d\\ude00\":3,\"A\":4,\"a\":5,\"\":6}",
    "{\"z\":1,\"y\":{\"b\":[1,{\"d\":null,\"c\":true}],\"a\":false},\"x\":[[],{}]}",
    "[\n  1,\n  2\n  x\n]", "{\r\n\"a\":\r\n@}", "[\n\n\n\"abc\ndef\"]", "\n\n   [1,\n  2,,]",
    "[\"0123456789012345678\"x]", "[\"01234567890123456789\"x]", "[\"012345678901234567890123\" x]",
    "[\"01234567890123456789012345\\q\"]", "[abcdefghijklmnopqrstuvwxyz]", "[12345678901234567890123456789]",
    "[\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\x01\"]",
    "[1]   \n   ", "[1] \n x", "[1] \xc3\xa9", "[1] \x80", "1", "\"a\"", "null", "true", "-5", "1.5", "  2  ",
    "{\"a\":[1,2,{\"b\":\"c\"}],\"d\":-1.25e-3,\"e\":null}",
    "{\"policy\": {\"network\": {\"mode\": \"none\"}, \"limits\": {\"memory_bytes\": 1048576}}}",
};

/* Documents with NUL bytes (json_loadb only). */
static const struct {
    const char *s;
    size_t n;
} with_nul[] = {
    {"[1\0]", 4}, {"[\"a\0\"]", 6}, {"[\0]", 3}, {"\0", 1}, {"[]\0", 3}, {"{\"a\0\":1}", 8}, {"[tr\0ue]", 7},
    {"[1.\0]", 5}, {"[\"\\\0\"]", 6}, {"[\xc3\0]", 4}, {"[1\0\0]", 5}, {"[1,\0 2]", 7}, {"[\n\0]", 4},
};

static void check_big_object(void) {
    /* 200,000 keys: a quadratic lookup would take minutes (meson's timeout). */
    size_t n = 200000;
    char *b = malloc(n * 24 + 8);
    if (!b)
        return;
    size_t k = 0;
    b[k++] = '{';
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(b + k, "%s\"k%zu\":%zu", i ? "," : "", i * 7919 % n, i);
    b[k++] = '}';
    json_error_t je;
    json_t *j = json_loadb(b, k, JSON_REJECT_DUPLICATES, &je);
    checked++;
    if (!j || json_object_size(j) != n || json_integer_value(json_object_get(j, "k7919")) != 1)
        fail("(big object)", 12, "the 200,000-key object does not load: %s", j ? "wrong content" : je.text);
    json_decref(j);
    /* The same with one duplicate at the end. */
    k--;
    k += (size_t)sprintf(b + k, ",\"k0\":1}");
    j = json_loadb(b, k, JSON_REJECT_DUPLICATES, &je);
    if (j || json_error_code(&je) != json_error_duplicate_key)
        fail("(big object)", 12, "a duplicate key in a 200,000-key object is not refused");
    json_decref(j);
    free(b);
}

static void compare_pack(const char *what, json_t *mine, json_t *theirs) {
    checked++;
    char *a = mine ? json_dumps(mine, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    char *b = theirs ? sys_dumps(theirs, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        fail(what, strlen(what), "json_pack differs: in-tree %s, jansson %s", a ? a : "(NULL)", b ? b : "(NULL)");
    free(a);
    free(b);
    json_decref(mine);
    sys_decref(theirs);
}

static void check_pack(void) {
    json_int_t big = (json_int_t)1 << 40;
#define BOTH(fmt, ...) compare_pack(fmt, json_pack(fmt, __VA_ARGS__), sys_pack(fmt, __VA_ARGS__))
    /* 'o' for the system library needs a value of its own. */
    compare_pack("{s:s,s:I,s:o}#2", json_pack("{s:s,s:I,s:o}", "digest", "ab", "size_bytes", big, "path", json_string("p")),
                 sys_pack("{s:s,s:I,s:o}", "digest", "ab", "size_bytes", big, "path", sys_string("p")));
    compare_pack("{s:o, s:o}", json_pack("{s:o, s:o}", "a", json_integer(1), "b", json_string("x")),
                 sys_pack("{s:o, s:o}", "a", sys_integer(1), "b", sys_string("x")));
    compare_pack("[iIoo]", json_pack("[iIoo]", -3, big, json_null(), json_string("h")),
                 sys_pack("[iIoo]", -3, big, json_null(), sys_string("h")));
    BOTH("{s:s+,s:s}", "pattern", "fy-", "*", "k", "v");
    BOTH("{s:s, s:s, s:b}", "a", "x", "b", "\xc3\xa9", "c", 1);
    BOTH("{sIsI}", "count", (json_int_t)-5, "sum", big);
    BOTH("[II]", (json_int_t)1, (json_int_t)65535);
    BOTH("{s:i,s:i,s:i,s:i}", "a", 1, "b", 2, "c", 3, "d", -4);
    BOTH("{s:I}", "files_left", (json_int_t)0);
    BOTH("{s:s,s:s,s:I,s:b}", "path", "a/b", "digest", "00", "size", big, "x", 0);
    BOTH("{s:s?,s:n}", "a", (const char *)NULL, "b");
    BOTH("{s:s}", "a", (const char *)NULL);
    BOTH("{s:s}", "a", "\xff");
    BOTH("[s#]", "abcdef", 3);
    BOTH("{s:[i,{s:b}]}", "x", 1, "y", 0);
    compare_pack("{s:o}(NULL)", json_pack("{s:o}", "a", (json_t *)NULL), sys_pack("{s:o}", "a", (json_t *)NULL));
#undef BOTH
}

int main(int argc, char **argv) {
    void *h = dlopen("libjansson.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "no system libjansson to compare with: %s\n", dlerror());
        return 77;
    }
    *(void **)&sys_loadb = dlsym(h, "json_loadb");
    *(void **)&sys_loads = dlsym(h, "json_loads");
    *(void **)&sys_dumps = dlsym(h, "json_dumps");
    *(void **)&sys_delete = dlsym(h, "json_delete");
    *(void **)&sys_pack = dlsym(h, "json_pack");
    *(void **)&sys_string = dlsym(h, "json_string");
    *(void **)&sys_integer = dlsym(h, "json_integer");
    if (!sys_loadb || !sys_loads || !sys_dumps || !sys_delete || !sys_pack || !sys_string || !sys_integer) {
        fprintf(stderr, "libjansson lacks a function: %s\n", dlerror());
        return 1;
    }

    for (size_t i = 0; i < sizeof(tricky) / sizeof(*tricky); i++) {
        check_str(tricky[i]);
        mutate_and_check(tricky[i], strlen(tricky[i]), 40);
    }
    for (size_t i = 0; i < sizeof(with_nul) / sizeof(*with_nul); i++)
        check_doc(with_nul[i].s, with_nul[i].n);
    static const char *const inner[] = {"", "1", "\"s\"", "[]", "{}"};
    for (int levels = 2045; levels <= 2050; levels++) {
        for (size_t i = 0; i < sizeof(inner) / sizeof(*inner); i++) {
            check_deep(levels, "[", "]", inner[i]);
            check_deep(levels, "{\"a\":", "}", inner[i]);
        }
        check_deep(levels, "[1,{\"k\":[", "]}]", "");
    }
    check_deep(100000, "[", "]", "");
    for (int i = 1; i < argc; i++)
        check_dir(argv[i]);
    check_big_object();
    check_pack();

    printf("%ld comparisons, %ld differences\n", checked, failures);
    return failures ? 1 : 0;
}
