/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A host program linked with libforgeyard-sandbox.a (test/abi/static-link.sh).
 *
 * It defines functions with the names of library internals, as real hosts do
 * (git has its own strbuf_init): with an archive that exported its internals
 * the link fails with "multiple definition", or one definition silently
 * replaces the other. Each one here returns a marker the program checks, so
 * a build where the library's copy won would fail too. */
#include <forgeyard/sandbox.h>

#include <stdio.h>
#include <string.h>

struct strbuf { char *buf; size_t len; };

int strbuf_init(struct strbuf *sb, size_t hint);
int vec_push(void *vec, int value);
const char *err_set(int code);
int caps_new(void);

int strbuf_init(struct strbuf *sb, size_t hint) {
    sb->buf = NULL;
    sb->len = hint;
    return 4242;
}

int vec_push(void *vec, int value) {
    (void)vec;
    return value + 1;
}

const char *err_set(int code) {
    return code ? "host err_set" : "";
}

int caps_new(void) {
    return 77;
}

int main(void) {
    struct strbuf sb;
    fy_policy *policy = NULL;
    fy_error *err = NULL;
    char *json = NULL;
    int r;

    if (strbuf_init(&sb, 3) != 4242 || sb.len != 3 || vec_push(NULL, 1) != 2 ||
        strcmp(err_set(1), "host err_set") != 0 || caps_new() != 77) {
        fprintf(stderr, "static-consumer: the host's own functions were replaced\n");
        return 1;
    }
    if (fy_version() != FY_VERSION || strcmp(fy_version_string(), FY_VERSION_STRING) != 0) {
        fprintf(stderr, "static-consumer: version %s (0x%x), headers say %s\n",
                fy_version_string(), (unsigned)fy_version(), FY_VERSION_STRING);
        return 1;
    }
    r = fy_policy_new(FY_PROFILE_STANDARD_CI, &policy, &err);
    if (r < 0) {
        fprintf(stderr, "static-consumer: fy_policy_new: %s\n", err ? fy_error_message(err) : fy_strerror(r));
        fy_error_free(err);
        return 1;
    }
    r = fy_policy_to_json(policy, &json, &err);
    if (r < 0 || !json || json[0] != '{') {
        fprintf(stderr, "static-consumer: fy_policy_to_json: %s\n", err ? fy_error_message(err) : fy_strerror(r));
        fy_error_free(err);
        fy_policy_free(policy);
        return 1;
    }
    printf("static-consumer: fy_policy_to_json gave %zu bytes; version %s\n", strlen(json),
           fy_version_string());
    fy_free(json);
    fy_policy_free(policy);
    fy_policy_free(NULL);
    return 0;
}
