/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The in-tree JSON library: the subset of jansson's documented API that
 * libforgeyard-sandbox uses, under jansson's names, so that core's
 * `#include <jansson.h>` compiles unchanged where the system has no jansson
 * (the Windows cross build; meson's -Dbundled_json=true on Linux).
 *
 * Written here from jansson's documentation and observed behaviour; no
 * jansson code. Where the documentation is silent (error positions, the
 * text of error messages, number formatting) test/json/json-diff.c holds
 * this implementation to the system libjansson byte for byte.
 *
 * Not provided: file/callback loading and dumping, json_unpack, iterator
 * functions, deep copies, custom allocators, JSON_EMBED.
 */
#ifndef FY_SYS_JSON_JANSSON_H
#define FY_SYS_JSON_JANSSON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JANSSON_MAJOR_VERSION 2
#define JANSSON_MINOR_VERSION 14
#define JANSSON_MICRO_VERSION 0
#define JANSSON_VERSION "2.14 (forgeyard in-tree subset)"
#define JANSSON_VERSION_HEX ((JANSSON_MAJOR_VERSION << 16) | (JANSSON_MINOR_VERSION << 8) | JANSSON_MICRO_VERSION)

typedef enum {
    JSON_OBJECT,
    JSON_ARRAY,
    JSON_STRING,
    JSON_INTEGER,
    JSON_REAL,
    JSON_TRUE,
    JSON_FALSE,
    JSON_NULL
} json_type;

typedef struct json_t {
    json_type type;
    volatile size_t refcount; /* (size_t)-1: a static value (true, false, null) */
} json_t;

typedef long long json_int_t;
#define JSON_INTEGER_IS_LONG_LONG 1
#define JSON_INTEGER_FORMAT "lld"

#define json_typeof(json) ((json)->type)
#define json_is_object(json) ((json) && json_typeof(json) == JSON_OBJECT)
#define json_is_array(json) ((json) && json_typeof(json) == JSON_ARRAY)
#define json_is_string(json) ((json) && json_typeof(json) == JSON_STRING)
#define json_is_integer(json) ((json) && json_typeof(json) == JSON_INTEGER)
#define json_is_real(json) ((json) && json_typeof(json) == JSON_REAL)
#define json_is_number(json) (json_is_integer(json) || json_is_real(json))
#define json_is_true(json) ((json) && json_typeof(json) == JSON_TRUE)
#define json_is_false(json) ((json) && json_typeof(json) == JSON_FALSE)
#define json_boolean_value json_is_true
#define json_is_boolean(json) (json_is_true(json) || json_is_false(json))
#define json_is_null(json) ((json) && json_typeof(json) == JSON_NULL)

/* Construction. Every function returns a new reference or NULL. */
json_t *json_object(void);
json_t *json_array(void);
json_t *json_string(const char *value);
json_t *json_stringn(const char *value, size_t len);
json_t *json_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
json_t *json_vsprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
json_t *json_integer(json_int_t value);
json_t *json_real(double value);
json_t *json_true(void);
json_t *json_false(void);
json_t *json_null(void);
#define json_boolean(val) ((val) ? json_true() : json_false())

void json_delete(json_t *json);

static inline json_t *json_incref(json_t *json) {
    if (json && json->refcount != (size_t)-1)
        ++json->refcount;
    return json;
}

static inline void json_decref(json_t *json) {
    if (json && json->refcount != (size_t)-1 && --json->refcount == 0)
        json_delete(json);
}

/* Errors. */
#define JSON_ERROR_TEXT_LENGTH 160
#define JSON_ERROR_SOURCE_LENGTH 80

typedef struct json_error_t {
    int line;
    int column;
    int position;
    char source[JSON_ERROR_SOURCE_LENGTH];
    char text[JSON_ERROR_TEXT_LENGTH]; /* the last byte holds the enum json_error_code */
} json_error_t;

enum json_error_code {
    json_error_unknown,
    json_error_out_of_memory,
    json_error_stack_overflow,
    json_error_cannot_open_file,
    json_error_invalid_argument,
    json_error_invalid_utf8,
    json_error_premature_end_of_input,
    json_error_end_of_input_expected,
    json_error_invalid_syntax,
    json_error_invalid_format,
    json_error_wrong_type,
    json_error_null_character,
    json_error_null_value,
    json_error_null_byte_in_key,
    json_error_duplicate_key,
    json_error_numeric_overflow,
    json_error_item_not_found,
    json_error_index_out_of_range
};

static inline enum json_error_code json_error_code(const json_error_t *e) {
    return (enum json_error_code)e->text[JSON_ERROR_TEXT_LENGTH - 1];
}

/* Getters and setters. */
size_t json_object_size(const json_t *object);
json_t *json_object_get(const json_t *object, const char *key);
int json_object_set_new(json_t *object, const char *key, json_t *value);
int json_object_del(json_t *object, const char *key);
int json_object_clear(json_t *object);
int json_object_update(json_t *object, json_t *other);

static inline int json_object_set(json_t *object, const char *key, json_t *value) {
    return json_object_set_new(object, key, json_incref(value));
}

/* Iteration in insertion order; the loop body must not add or delete keys. */
const char *json_object_key_at_(const json_t *object, size_t i);
json_t *json_object_value_at_(const json_t *object, size_t i);
#define JSON_CAT_(a, b) a##b
#define JSON_CAT(a, b) JSON_CAT_(a, b)
#define json_object_foreach(object, key, value)                                                     \
    for (size_t JSON_CAT(json_at_, __LINE__) = 0;                                                   \
         ((key) = json_object_key_at_((object), JSON_CAT(json_at_, __LINE__))) != NULL &&           \
         ((value) = json_object_value_at_((object), JSON_CAT(json_at_, __LINE__))) != NULL;         \
         JSON_CAT(json_at_, __LINE__)++)

size_t json_array_size(const json_t *array);
json_t *json_array_get(const json_t *array, size_t index);
int json_array_append_new(json_t *array, json_t *value);
static inline int json_array_append(json_t *array, json_t *value) {
    return json_array_append_new(array, json_incref(value));
}
#define json_array_foreach(array, index, value)                                                      \
    for (index = 0; index < json_array_size(array) && (value = json_array_get(array, index)); index++)

const char *json_string_value(const json_t *string);
size_t json_string_length(const json_t *string);
json_int_t json_integer_value(const json_t *integer);
double json_real_value(const json_t *real);
double json_number_value(const json_t *json);

int json_equal(const json_t *value1, const json_t *value2);

/* Building values: the format characters s s? s# s% + +# +% n b i I f o O o? O? { } [ ]. */
json_t *json_pack(const char *fmt, ...);
json_t *json_vpack_ex(json_error_t *error, size_t flags, const char *fmt, va_list ap);
json_t *json_pack_ex(json_error_t *error, size_t flags, const char *fmt, ...);

/* Decoding. */
#define JSON_REJECT_DUPLICATES 0x1
#define JSON_DISABLE_EOF_CHECK 0x2
#define JSON_DECODE_ANY 0x4
#define JSON_DECODE_INT_AS_REAL 0x8
#define JSON_ALLOW_NUL 0x10

json_t *json_loads(const char *input, size_t flags, json_error_t *error);
json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error);

/* Encoding. The result is malloc()ed: free() it. */
#define JSON_MAX_INDENT 0x1F
#define JSON_INDENT(n) ((n) & JSON_MAX_INDENT)
#define JSON_COMPACT 0x20
#define JSON_ENSURE_ASCII 0x40
#define JSON_SORT_KEYS 0x80
#define JSON_PRESERVE_ORDER 0x100 /* a no-op: the order is always kept */
#define JSON_ENCODE_ANY 0x200
#define JSON_ESCAPE_SLASH 0x400
#define JSON_REAL_PRECISION(n) (((n) & 0x1F) << 11)

char *json_dumps(const json_t *json, size_t flags);

#ifdef __cplusplus
}
#endif

#endif
