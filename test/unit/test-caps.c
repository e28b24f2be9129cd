/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The persisted snapshot's own form (lib/caps.c caps_serialize and
 * caps_deserialize): every field survives the round trip, whatever bytes
 * its strings hold, and anything that is not exactly that form is refused
 * (a snapshot that cannot be read costs a probe, never a wrong answer). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"

static fy_caps *sample(void) {
    fy_caps *c = caps_new();
    ck_assert_ptr_nonnull(c);
    c->probe_flags = 2;
    c->probe_usec = 123456789012ULL;
    c->host.is_root = true;
    c->host.uid = 4294967295u;
    c->host.gid = 7;
    c->host.kernel_release = strdup("6.1.0-28-amd64 #1 SMP");
    c->host.cgroup_mode = strdup("hybrid");
    /* cg2_delegated left NULL */
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++) {
        c->e[i].state = (uint8_t)(i % 2 ? CAP_PRESENT : CAP_MISSING);
        c->e[i].value = i == 3 ? INT64_MIN : i == 4 ? INT64_MAX : (int64_t)i * -17;
        if (i % 3)
            c->e[i].reason = strdup(i == 1 ? "tab\there, newline\nthere, 100% sure, \x7f, \xc3\xa9t\xc3\xa9" : "plain");
        if (i == 2)
            c->e[i].hint = strdup("");
        if (i == 5)
            c->e[i].hint = strdup("=- % %% %41 -");
    }
    ck_assert_int_eq(caps_set_fact(c, "linux.cg2_dir", "/sys/fs/cgroup/a b"), 0);
    ck_assert_int_eq(caps_set_fact(c, "linux.seccomp.gb", "v1 7fff0000 BgAAAAAA/38="), 0);
    ck_assert_int_eq(caps_set_fact(c, "k with\nnewline", ""), 0);
    return c;
}

static void assert_same(const fy_caps *a, const fy_caps *b) {
    ck_assert_uint_eq(a->probe_flags, b->probe_flags);
    ck_assert_uint_eq(a->probe_usec, b->probe_usec);
    ck_assert_int_eq(a->host.is_root, b->host.is_root);
    ck_assert_uint_eq(a->host.uid, b->host.uid);
    ck_assert_uint_eq(a->host.gid, b->host.gid);
    ck_assert_pstr_eq(a->host.kernel_release, b->host.kernel_release);
    ck_assert_pstr_eq(a->host.cgroup_mode, b->host.cgroup_mode);
    ck_assert_pstr_eq(a->host.cg2_delegated, b->host.cg2_delegated);
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++) {
        ck_assert_int_eq(a->e[i].state, b->e[i].state);
        ck_assert_int_eq(a->e[i].value == b->e[i].value, 1);
        ck_assert_pstr_eq(a->e[i].reason, b->e[i].reason);
        ck_assert_pstr_eq(a->e[i].hint, b->e[i].hint);
    }
    ck_assert_uint_eq(a->host.nfacts, b->host.nfacts);
    for (size_t i = 0; i < a->host.nfacts; i++)
        ck_assert_pstr_eq(caps_fact(b, a->host.facts[i].key), a->host.facts[i].value);
}

START_TEST(test_round_trip) {
    fy_caps *c = sample();
    char *text = caps_serialize(c);
    ck_assert_ptr_nonnull(text);
    /* one record per line: no string may carry its own newline or space */
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, 7 + 2 + FY_CAP_MAX_ + 3 + 1);
    fy_caps *d = caps_deserialize(text, strlen(text));
    ck_assert_ptr_nonnull(d);
    assert_same(c, d);
    char *again = caps_serialize(d);
    ck_assert_str_eq(text, again);
    free(again);
    free(text);
    caps_free_internal(d);
    caps_free_internal(c);
}
END_TEST

/* Replaces the first occurrence of from in text by to (a new string). */
static char *edit(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "%s not in the text", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

START_TEST(test_refused) {
    fy_caps *c = sample();
    char *text = caps_serialize(c);
    caps_free_internal(c);
    char e1[64], e2[64];
    /* entry 1: present (2), value -17; entry 2: missing (1), value -34 */
    snprintf(e1, sizeof(e1), "\ne %d %lld ", CAP_PRESENT, (long long)-17);
    snprintf(e2, sizeof(e2), "\ne %d %lld ", CAP_MISSING, (long long)-34);
    char caps_line[32];
    snprintf(caps_line, sizeof(caps_line), "caps %u\n", (unsigned)FY_CAP_MAX_);
    const struct {
        const char *from, *to, *why;
    } bad[] = {
        {"forgeyard-caps-form 2\n", "forgeyard-caps-form 1\n", "another form"},
        {"forgeyard-caps-form 2\n", "", "no form line"},
        {caps_line, "caps 1\n", "another capability count"},
        {"\nend\n", "\n", "no end"},
        {"\nend\n", "\nend\nf =a =b\n", "a line after the end"},
        {"\nend\n", "\nend", "an end without its newline"},
        {"root 1\n", "root 2\n", "root neither 0 nor 1"},
        {"uid 4294967295\n", "uid 4294967296\n", "uid past 32 bits"},
        {"gid 7\n", "gid -7\n", "a negative gid"},
        {"gid 7\n", "gid 07x\n", "a number with trailing bytes"},
        {"gid 7\n", "gid  7\n", "two spaces"},
        {"gid 7\n", "gid 7 \n", "a trailing space"},
        {"flags 2\n", "flags -2\n", "negative flags"},
        {"flags 2\n", "flags 99999999999999999999\n", "flags past 64 bits"},
        {"s cgroup_mode =hybrid\n", "s cgroup_mode =hybrid\ns cgroup_mode =v2\n", "a host string twice"},
        {"s cgroup_mode =hybrid\n", "s no_such_string =x\n", "an unknown host string"},
        {"s cgroup_mode =hybrid\n", "s cgroup_mode -\n", "a host string that is none"},
        {e1, "\ne 0 -17 ", "state 0"},
        {e1, "\ne 3 -17 ", "state 3"},
        {e2, "\ne 1 9223372036854775808 ", "a value past 64 bits"},
        {"=plain", "=pl\tain", "an unescaped tab"},
        {"=plain", "=pl%4", "a short escape"},
        {"=plain", "=pl%G1", "a bad escape"},
        {"=plain", "=pl%00", "an escaped NUL"},
        {"=plain", "plain", "a string without its ="},
        {"=plain", "=plain =extra", "a field too many"},
        {"f =linux.cg2_dir", "f =linux.seccomp.gb", "a fact twice"},
        {"f =linux.cg2_dir =/sys", "f - =/sys", "a fact without a key"},
        {"\ne 1 ", "\nf =early =fact\ne 1 ", "a fact before the entries"},
        {"\ne 1 ", "\nx 1\ne 1 ", "an unknown line"},
        {"\ne 1 ", "\n\ne 1 ", "an empty line"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = edit(text, bad[i].from, bad[i].to);
        fy_caps *d = caps_deserialize(t, strlen(t));
        ck_assert_msg(d == NULL, "accepted: %s", bad[i].why);
        free(t);
    }
    /* One entry fewer. */
    char *last = strstr(text, "\nf ");
    ck_assert_ptr_nonnull(last);
    char *prev = last - 1;
    while (prev > text && *prev != '\n')
        prev--;
    size_t cut = (size_t)(prev - text);
    char *t = malloc(strlen(text) + 1);
    snprintf(t, strlen(text) + 1, "%.*s%s", (int)cut, text, last);
    ck_assert_ptr_null(caps_deserialize(t, strlen(t)));
    free(t);
    /* Every proper prefix is refused, and reading it stays inside it. */
    size_t n = strlen(text);
    for (size_t k = 0; k < n; k++) {
        char *p = malloc(k ? k : 1);
        memcpy(p, text, k);
        ck_assert_msg(caps_deserialize(p, k) == NULL, "a prefix of %zu bytes was accepted", k);
        free(p);
    }
    /* Bytes flipped anywhere: never a crash or a read past the text (ASan);
     * whatever is accepted is still a whole snapshot. */
    srand(1);
    for (int round = 0; round < 4000; round++) {
        char *p = malloc(n);
        memcpy(p, text, n);
        for (int f = 0; f < 1 + round % 3; f++)
            p[(size_t)rand() % n] = (char)(rand() % 256);
        fy_caps *d = caps_deserialize(p, n);
        if (d) {
            char *s = caps_serialize(d);
            fy_caps *d2 = caps_deserialize(s, strlen(s));
            ck_assert_ptr_nonnull(d2);
            assert_same(d, d2);
            caps_free_internal(d2);
            free(s);
            caps_free_internal(d);
        }
        free(p);
    }
    free(text);
}
END_TEST

int main(void) {
    Suite *s = suite_create("caps");
    TCase *tc = tcase_create("snapshot form");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_refused);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
