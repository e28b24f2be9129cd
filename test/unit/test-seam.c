/* The backend seam, end to end without a sandbox: a backend written against
 * backend.h alone (test/fake/fake-run.c) gets the platform-neutral plan at
 * compile, and the public lifecycle (fy_prepare, fy_start, fy_handle_wait,
 * fy_handle_cancel, the result and its JSON) works through it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fake-backend.h"

static const struct fy_backend_ops *const table[] = {&fake_run};

static fy_prepared *prepare(fy_policy *p, const char *const *argv) {
    static const uint32_t none[] = {0};
    fy_caps *c = fake_caps(none);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    int r = prepare_with_table(table, 1, p, c, argv, &pr, &e);
    ck_assert_msg(r == 0, "prepare: %s", fy_error_message(e));
    fy_caps_free(c);
    return pr;
}

START_TEST(test_compile_sees_the_neutral_plan) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, "/tmp", NULL), 0);
    const char *argv[] = {"exit", "0", NULL};
    fy_prepared *pr = prepare(p, argv);
    const struct fy_plan *np = pr->neutral;
    ck_assert_ptr_nonnull(np);
    ck_assert_ptr_eq(np->backend, &fake_run);
    const struct plan_entry *b = plan_find_role(np, PR_BUILD);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(b->host, "/tmp");
    ck_assert_str_eq(b->target, "/work/build");
    ck_assert(b->flags & PLAN_WORKSPACE);
    ck_assert_ptr_null(plan_find_role(np, PR_SOURCE));
    ck_assert_str_eq(np->workdir, "/work/build");
    bool home = false;
    for (size_t i = 0; i < np->nenv; i++)
        home |= strcmp(np->envp[i], "HOME=/home/forgeyard") == 0;
    ck_assert(home);
    char *json = NULL;
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_ptr_nonnull(strstr(json, "\"build\": \"/tmp\""));
    ck_assert_ptr_nonnull(strstr(json, "\"contract_id\": \""));
    fy_free(json);
    fy_prepared_free(pr);
    /* An argument that is not UTF-8 is in the plan's record (its bad byte
     * as U+FFFD), not left out: the record listed "exit", "0" for what ran
     * as "exit", "\xff", "0". */
    const char *odd[] = {"exit", "\xff", "0", NULL};
    pr = prepare(p, odd);
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_msg(strstr(json, "\"exit\",\n    \"\xef\xbf\xbd\",\n    \"0\""), "%s", json);
    fy_free(json);
    fy_prepared_free(pr);
    /* What the backend cannot give is refused from the plan, by its path. */
    const char *allow = "{\"profile\": \"development\"}";
    ck_assert_int_eq(fy_policy_load_json(p, allow, strlen(allow), NULL), 0); /* host network */
    fy_error *e = NULL;
    int rc = prepare_with_table(table, 1, p, NULL, argv, &pr, &e);
    ck_assert_msg(rc == FY_E_UNSUPPORTED, "%d: %s", rc, fy_error_message(e));
    ck_assert_str_eq(fy_error_location(e), "$.network.mode");
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_lifecycle_through_the_seam) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    const char *argv[] = {"exit", "3", NULL};
    fy_prepared *pr = prepare(p, argv);
    fy_handle *h = NULL;
    ck_assert_int_eq(fy_start(pr, &h, NULL), 0);
    fy_result *r = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &r, NULL), 1);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_FAILED);
    ck_assert_int_eq(fy_result_exit_code(r), 3);
    ck_assert_int_eq(fy_result_level(r), FY_LEVEL_CONTAINER);
    char *json = NULL;
    ck_assert_int_eq(fy_result_to_json(r, &json, NULL), 0);
    ck_assert_ptr_nonnull(strstr(json, "\"backend\": \"fake-run\""));
    ck_assert_ptr_nonnull(strstr(json, prepared_contract_id(pr)));
    fy_free(json);
    fy_result_free(r);
    fy_handle_free(h);
    /* Cancelled from the public API: the outcome logic says so, not the backend. */
    const char *hang[] = {"hang", NULL};
    fy_prepared *pr2 = prepare(p, hang);
    ck_assert_int_eq(fy_start(pr2, &h, NULL), 0);
    ck_assert_int_eq(fy_handle_wait(h, 20000, &r, NULL), 0); /* still running */
    ck_assert_int_eq(fy_handle_cancel(h, FY_CANCEL_RUNNER_DRAIN, NULL), 0);
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &r, NULL), 1);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_CANCELLED);
    ck_assert_int_eq(fy_result_cancel_reason(r), FY_CANCEL_RUNNER_DRAIN);
    fy_result_free(r);
    fy_handle_free(h);
    fy_prepared_free(pr2);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seam");
    TCase *tc = tcase_create("seam");
    tcase_add_test(tc, test_compile_sees_the_neutral_plan);
    tcase_add_test(tc, test_lifecycle_through_the_seam);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
