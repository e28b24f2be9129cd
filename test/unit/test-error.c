/* The error model: stable codes and names, optional out-param, accessors. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

START_TEST(test_codes_are_stable) {
    /* Numbers are forever (also checked by test/abi/constants.txt). */
    ck_assert_int_eq(FY_E_INVAL, -1);
    ck_assert_int_eq(FY_E_POLICY, -6);
    ck_assert_int_eq(FY_E_INTERNAL, -13);
    for (int c = FY_E_UNSAFE; c <= 0; c++) {
        ck_assert_str_ne(fy_error_name(c), "unknown");
        ck_assert_str_ne(fy_strerror(c), "unknown");
        ck_assert(strncmp(fy_error_name(c), "FY_", 3) == 0);
    }
    ck_assert_str_eq(fy_error_name(-999), "unknown");
    ck_assert_str_eq(fy_strerror(1), "unknown");
    ck_assert_str_eq(fy_error_name(FY_E_UNSUPPORTED), "FY_E_UNSUPPORTED");
}
END_TEST

/* Whether s is valid UTF-8 with no control character (C0, DEL, C1). */
static bool shown(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p < 0x20 || *p == 0x7f)
            return false;
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t len = *p >= 0xc2 && *p <= 0xdf ? 2 : *p >= 0xe0 && *p <= 0xef ? 3 : *p >= 0xf0 && *p <= 0xf4 ? 4 : 0;
        if (!len)
            return false;
        for (size_t i = 1; i < len; i++)
            if ((p[i] & 0xc0) != 0x80)
                return false;
        if (len == 2 && p[0] == 0xc2 && p[1] < 0xa0) /* (C1) */
            return false;
        p += len;
    }
    return true;
}

/* What callers gave reaches messages and locations as text a terminal and
 * a log can show: valid UTF-8 (é and 猫 kept), no control character, each
 * other byte as \xNN, and bounded (an image reference of 10 MB made a
 * 10 MB message, with raw ESC and LF from the caller's string). */
START_TEST(test_messages_are_shown_text) {
    fy_error *e = NULL;
    err_set(&e, FY_E_INVAL, FY_STEP_POLICY, 0, "$.platform.K\xff\n", "reference oci:/x\xff\n\x1b[2J\xc2\x9b" "1m "
            "\xc3\xa9\xe7\x8c\xab \xed\xa0\x80 \xc0\xaf" " end");
    ck_assert(shown(fy_error_message(e)));
    ck_assert(shown(fy_error_location(e)));
    ck_assert_str_eq(fy_error_message(e), "reference oci:/x\\xff\\x0a\\x1b[2J\\xc2\\x9b1m \xc3\xa9\xe7\x8c\xab "
                     "\\xed\\xa0\\x80 \\xc0\\xaf end");
    ck_assert_str_eq(fy_error_location(e), "$.platform.K\\xff\\x0a");
    fy_error_free(e);
    size_t big = 10u << 20;
    char *s = malloc(big + 1);
    ck_assert_ptr_nonnull(s);
    memset(s, 'a', big);
    s[big] = '\0';
    s[big / 2] = '\x1b';
    e = NULL;
    err_set(&e, FY_E_INVAL, FY_STEP_IMAGE, 0, s, "image reference %s: no path", s);
    ck_assert_uint_le(strlen(fy_error_message(e)), 16384 + 64);
    ck_assert_uint_le(strlen(fy_error_location(e)), 1024 + 64);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), " more bytes]"));
    ck_assert(shown(fy_error_message(e)));
    fy_error_free(e);
    free(s);
    /* Text that is already shown text is kept as it is. */
    e = NULL;
    err_set(&e, FY_E_INVAL, FY_STEP_POLICY, 0, "$.a[1]", "plain \xe2\x80\x9cquoted\xe2\x80\x9d");
    ck_assert_str_eq(fy_error_message(e), "plain \xe2\x80\x9cquoted\xe2\x80\x9d");
    ck_assert_str_eq(fy_error_location(e), "$.a[1]");
    fy_error_free(e);
}
END_TEST

START_TEST(test_steps) {
    for (uint32_t s = FY_STEP_NONE; s <= FY_STEP_IMAGE; s++)
        ck_assert_str_ne(fy_step_name(s), "unknown");
    ck_assert_str_eq(fy_step_name(FY_STEP_MOUNT), "mount");
    ck_assert_str_eq(fy_step_name(9999), "unknown");
}
END_TEST

START_TEST(test_err_set) {
    ck_assert_int_eq(err_set(NULL, FY_E_IO, FY_STEP_MOUNT, EIO, NULL, "x %d", 1), FY_E_IO);
    fy_error *e = NULL;
    ck_assert_int_eq(err_set(&e, FY_E_DENIED, FY_STEP_MOUNT, EPERM, "$.a", "mount %s failed", "/x"), FY_E_DENIED);
    ck_assert_int_eq(fy_error_code(e), FY_E_DENIED);
    ck_assert_int_eq(fy_error_step(e), FY_STEP_MOUNT);
    ck_assert_int_eq(fy_error_os_code(e), EPERM);
    ck_assert_str_eq(fy_error_message(e), "mount /x failed");
    ck_assert_str_eq(fy_error_location(e), "$.a");
    fy_error_free(e);
    e = NULL;
    err_set(&e, FY_E_IO, FY_STEP_NONE, 0, NULL, "no location");
    ck_assert_ptr_null(fy_error_location(e));
    fy_error_free(e);
}
END_TEST

START_TEST(test_null_safety) {
    fy_error_free(NULL);
    fy_caps_free(NULL);
    fy_policy_free(NULL);
    fy_prepared_free(NULL);
    fy_free(NULL);
    ck_assert_int_eq(fy_error_code(NULL), FY_E_INVAL);
    ck_assert_ptr_null(fy_error_message(NULL));
    ck_assert_ptr_null(fy_error_location(NULL));
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, NULL, NULL), FY_E_INVAL);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(NULL, FY_LIMIT_PIDS, 1, &e), FY_E_INVAL);
    ck_assert_int_eq(fy_error_code(e), FY_E_INVAL);
    fy_error_free(e);
    ck_assert_int_eq(fy_prepare(NULL, NULL, NULL, NULL, NULL), FY_E_INVAL);
    ck_assert_int_eq(fy_caps_has(NULL, FY_CAP_USERNS), FY_E_INVAL);
    ck_assert_int_eq(fy_probe(0, NULL, NULL), FY_E_INVAL);
}
END_TEST

START_TEST(test_errno_mapping) {
    ck_assert_int_eq(err_from_errno(EPERM), FY_E_DENIED);
    ck_assert_int_eq(err_from_errno(EACCES), FY_E_DENIED);
    ck_assert_int_eq(err_from_errno(ENOENT), FY_E_NOTFOUND);
    ck_assert_int_eq(err_from_errno(ENOMEM), FY_E_NOMEM);
    ck_assert_int_eq(err_from_errno(ENOSYS), FY_E_UNSUPPORTED);
    ck_assert_int_eq(err_from_errno(EIO), FY_E_IO);
}
END_TEST

START_TEST(test_version) {
    ck_assert_uint_eq(fy_version(), FY_VERSION);
    ck_assert_str_eq(fy_version_string(), FY_VERSION_STRING);
    ck_assert(FY_CHECK_VERSION(0, 0, 0));
    ck_assert(FY_CHECK_VERSION(FY_VERSION_MAJOR, FY_VERSION_MINOR, FY_VERSION_MICRO));
    ck_assert(!FY_CHECK_VERSION(FY_VERSION_MAJOR + 1, 0, 0));
}
END_TEST

START_TEST(test_unknown_ids) {
    fy_probe(UINT64_C(1) << 40, NULL, NULL);
    fy_caps *c = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_probe(UINT64_C(1) << 40, &c, &e), FY_E_INVAL); /* reserved bits */
    fy_error_free(e);
    ck_assert_ptr_null(fy_cap_name(0));
    ck_assert_ptr_null(fy_cap_name(FY_CAP_MAX_ + 1));
    ck_assert_ptr_null(fy_level_name(99));
    ck_assert_ptr_null(fy_control_name(FY_CONTROL_MAX_ + 1));
    ck_assert_int_eq(fy_profile_from_name("nope"), FY_E_NOTFOUND);
    ck_assert_int_eq(fy_profile_from_name("release"), FY_PROFILE_RELEASE);
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(99, &p, NULL), FY_E_UNSUPPORTED);
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MAX_ + 1, 1, NULL), FY_E_UNSUPPORTED);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_MAX_ + 1, FY_MODE_PREFER, NULL), FY_E_UNSUPPORTED);
    ck_assert_int_eq(fy_policy_add_bind(p, "/srv", "/srv", 1u << 7, NULL), FY_E_INVAL);
    fy_policy_free(p);
}
END_TEST

/* Low integrity (20): named, in policy JSON both ways, the numbers below
 * it that name no control refused; and no backend of this (non-Windows)
 * build enforces it: required, it is refused naming it. */
START_TEST(test_low_integrity_control) {
    ck_assert_str_eq(fy_control_name(FY_CONTROL_LOW_INTEGRITY), "low-integrity");
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    for (uint32_t c = 1; c <= FY_CONTROL_MAX_; c++)
        if (!fy_control_name(c))
            ck_assert_int_eq(fy_policy_set_control(p, c, FY_MODE_PREFER, NULL), FY_E_UNSUPPORTED);
    char *json = NULL;
    ck_assert_int_eq(fy_policy_to_json(p, &json, NULL), 0);
    ck_assert_ptr_null(strstr(json, "low-integrity")); /* off: 0.1 documents keep their form */
    fy_free(json);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LOW_INTEGRITY, FY_MODE_REQUIRE, NULL), 0);
    ck_assert_int_eq(fy_policy_to_json(p, &json, NULL), 0);
    ck_assert_ptr_nonnull(strstr(json, "\"low-integrity\": \"require\""));
    fy_policy *q = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &q, NULL), 0);
    ck_assert_int_eq(fy_policy_load_json(q, json, strlen(json), NULL), 0);
    char *json2 = NULL;
    ck_assert_int_eq(fy_policy_to_json(q, &json2, NULL), 0);
    ck_assert_str_eq(json, json2);
    fy_free(json);
    fy_free(json2);
    fy_policy_free(q);
    fy_caps *c = NULL;
    ck_assert_int_eq(fy_probe(0, &c, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, c, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "low-integrity"));
    fy_error_free(e);
    /* Preferred: dropped, visibly. */
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LOW_INTEGRITY, FY_MODE_PREFER, NULL), 0);
    e = NULL;
    int r = fy_prepare(p, c, argv, &pr, &e);
    if (r == 0) {
        ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_LOW_INTEGRITY), FY_CONTROL_STATE_DROPPED);
        fy_prepared_free(pr);
    }
    fy_error_free(e);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("error");
    TCase *tc = tcase_create("error");
    tcase_add_test(tc, test_codes_are_stable);
    tcase_add_test(tc, test_low_integrity_control);
    tcase_add_test(tc, test_steps);
    tcase_add_test(tc, test_err_set);
    tcase_add_test(tc, test_null_safety);
    tcase_add_test(tc, test_errno_mapping);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_unknown_ids);
    tcase_add_test(tc, test_messages_are_shown_text);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
