/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the in-tree JSON library (lib/sys/json), built in every
 * configuration from its sources whether or not the library uses it.
 *
 * For every input, under each load flag set core uses: a refusal must come
 * with an error code, a text, a line of at least 1 and a position inside
 * the input; an accepted document must dump (under each dump flag set core
 * uses) to text that loads back as an equal value and dumps to the same
 * bytes again, and every string in it must be valid UTF-8 without NUL.
 * abort() on any violation. Only the input bytes: no files, no processes. */

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *text) {
    fprintf(stderr, "fuzz-json: %s\n", what);
    if (text)
        fprintf(stderr, "--- %s\n", text);
    abort();
}

static int utf8_ok(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
        if (len == 0 || c == 0 || len > n - i)
            return 0;
        uint32_t v = len == 1 ? c : c & (0x7Fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            v = (v << 6) | (s[i + k] & 0x3Fu);
        }
        if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

static void check_strings(const json_t *j, int depth) {
    if (depth > 2048)
        fail("a value nested deeper than the parser's limit", NULL);
    if (json_is_string(j) && !utf8_ok((const unsigned char *)json_string_value(j), json_string_length(j)))
        fail("a string that is not valid UTF-8 or holds a NUL", json_string_value(j));
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) check_strings(v, depth + 1);
    const char *k;
    json_object_foreach((json_t *)j, k, v) {
        if (!utf8_ok((const unsigned char *)k, strlen(k)))
            fail("a key that is not valid UTF-8", k);
        check_strings(v, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const size_t load_flags[] = {0, JSON_REJECT_DUPLICATES, JSON_DECODE_ANY};
    static const size_t dump_flags[] = {JSON_INDENT(2) | JSON_SORT_KEYS, JSON_COMPACT | JSON_SORT_KEYS,
                                        JSON_INDENT(2) | JSON_PRESERVE_ORDER, JSON_INDENT(1) | JSON_ENCODE_ANY};
    for (size_t f = 0; f < sizeof(load_flags) / sizeof(*load_flags); f++) {
        json_error_t je;
        json_t *j = json_loadb((const char *)data, size, load_flags[f], &je);
        if (!j) {
            if (json_error_code(&je) == json_error_unknown || !je.text[0] || je.line < 1 || je.column < 0 ||
                je.position < 0 || (size_t)je.position > size)
                fail("a refusal without a proper error", je.text);
            continue;
        }
        if (je.position < 0 || (size_t)je.position > size)
            fail("an end position outside the input", NULL);
        check_strings(j, 1);
        for (size_t d = 0; d < sizeof(dump_flags) / sizeof(*dump_flags); d++) {
            char *s = json_dumps(j, dump_flags[d]);
            if (!s) {
                if (json_is_object(j) || json_is_array(j) || (dump_flags[d] & JSON_ENCODE_ANY))
                    fail("json_dumps failed", NULL);
                continue;
            }
            json_t *again = json_loads(s, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
            if (!again)
                fail("a dump that does not load back", s);
            if (!json_equal(j, again))
                fail("a dump that loads back as another value", s);
            char *s2 = json_dumps(again, dump_flags[d]);
            if (!s2 || strcmp(s, s2) != 0)
                fail("a dump that is not stable", s);
            free(s2);
            free(s);
            json_decref(again);
        }
        json_decref(j);
    }
    return 0;
}
