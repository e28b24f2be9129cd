/* The one outcome logic (lib/attempt.c), without a sandbox: every backend
 * reports what it observed, and these are the rules that turn a report and
 * the handle's own endings into a result. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "attempt.h"
#include "prepared.h"

static const struct fy_backend_ops fake_ops = {.version = FY_BACKEND_OPS_VERSION, .name = "fake", .level = FY_LEVEL_NAMESPACE};

struct world {
    fy_caps caps;
    fy_prepared pr;
    fy_handle h;
    struct attempt_report rep;
};

static void world_init(struct world *w) {
    memset(w, 0, sizeof(*w));
    w->caps.host.kernel_release = (char *)"6.1-test";
    w->pr.caps = &w->caps;
    w->pr.sel.level = FY_LEVEL_NAMESPACE;
    w->pr.prepare_usec = 7;
    w->h.pr = &w->pr;
    w->h.backend = &fake_ops;
    w->h.t_start = 1000;
    w->rep.t_isolation = 1100;
    w->rep.t_filesystem = 1300;
    w->rep.t_exec = 1600;
    w->rep.t_exit = 2600;
    w->rep.t_ended = 2700;
    w->rep.t_cleanup_begin = 2800;
    w->rep.t_cleanup_end = 2900;
    w->pr.contract_id = (char *)"abc"; /* published: prepared_contract_id returns it */
}

static fy_result *finish(struct world *w) {
    fy_result *r = result_new();
    ck_assert_ptr_nonnull(r);
    attempt_finish(&w->h, &w->rep, r);
    ck_assert_ptr_eq(w->h.result, r);
    return r;
}

static void exited(struct world *w, int code) {
    w->rep.exit_seen = true;
    w->rep.wstatus = (code & 0xff) << 8;
}

static void killed(struct world *w, int sig) {
    w->rep.exit_seen = true;
    w->rep.wstatus = sig;
}

START_TEST(test_exit_codes) {
    struct world w;
    world_init(&w);
    exited(&w, 0);
    fy_result *r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SUCCEEDED);
    ck_assert_int_eq(fy_result_exit_code(r), 0);
    ck_assert_str_eq(r->backend, "fake");
    ck_assert_str_eq(r->kernel, "6.1-test");
    ck_assert_str_eq(r->contract_id, "abc");
    uint64_t us;
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_PREPARE, &us), 0);
    ck_assert_uint_eq(us, 7);
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_ISOLATION, &us), 0);
    ck_assert_uint_eq(us, 100);
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_FILESYSTEM, &us), 0);
    ck_assert_uint_eq(us, 200);
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_EXEC, &us), 0);
    ck_assert_uint_eq(us, 300);
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_RUN, &us), 0);
    ck_assert_uint_eq(us, 1000);
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_CLEANUP, &us), 0);
    ck_assert_uint_eq(us, 100);
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_WALL_USEC, &us), 0);
    ck_assert_uint_eq(us, 1700);
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_STDOUT_BYTES, &us), FY_E_NOTFOUND);
    result_unref(r);

    world_init(&w);
    exited(&w, 3);
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_FAILED);
    ck_assert_int_eq(fy_result_exit_code(r), 3);
    result_unref(r);

    world_init(&w);
    killed(&w, SIGSEGV);
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SIGNALED);
    ck_assert_int_eq(fy_result_signal(r), SIGSEGV);
    ck_assert_int_eq(fy_result_exit_code(r), FY_E_STATE);
    result_unref(r);
}
END_TEST

START_TEST(test_sigsys_is_a_violation_only_from_the_filter) {
    struct world w;
    world_init(&w);
    killed(&w, SIGSYS);
    fy_result *r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SIGNALED); /* the workload's own SIGSYS */
    result_unref(r);
    world_init(&w);
    killed(&w, SIGSYS);
    w.rep.sigsys_is_filter_kill = true;
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SANDBOX_VIOLATION);
    ck_assert_ptr_nonnull(strstr(fy_result_detail(r), "seccomp"));
    result_unref(r);
}
END_TEST

/* The precedence, ending by ending: each row's report loses to the next. */
START_TEST(test_precedence) {
    struct world w;
    /* Nothing reported: the sandbox died on its own. */
    world_init(&w);
    fy_result *r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_int_eq(fy_result_error_step(r), FY_STEP_WAIT);
    result_unref(r);
    /* A timeout beats the exit it caused; the first of timeout and cancel wins. */
    world_init(&w);
    killed(&w, SIGKILL);
    handle_end(&w.h, END_TIMEOUT, FY_STEP_WAIT, 0, NULL);
    handle_end(&w.h, END_CANCEL, FY_STEP_CANCEL, 0, NULL);
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_TIMED_OUT);
    result_unref(r);
    free(w.h.end_detail);
    /* A violation is never hidden behind a timeout or a resource overrun. */
    world_init(&w);
    killed(&w, SIGKILL);
    handle_end(&w.h, END_TIMEOUT, FY_STEP_WAIT, 0, NULL);
    handle_end(&w.h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output");
    handle_end(&w.h, END_VIOLATION, FY_STEP_NONE, 0, "syscall mount");
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SANDBOX_VIOLATION);
    ck_assert_str_eq(fy_result_detail(r), "syscall mount");
    result_unref(r);
    free(w.h.end_detail);
    /* The OOM the final figures show beats a clean exit, with the limit named. */
    world_init(&w);
    exited(&w, 0);
    w.rep.oom_killed = true;
    w.rep.memory_limit = 1234;
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_OUT_OF_MEMORY);
    ck_assert_str_eq(fy_result_detail(r), "memory limit of 1234 bytes");
    result_unref(r);
    /* ... and so does a pids limit hit between two polls. */
    world_init(&w);
    exited(&w, 1);
    w.rep.pids_limit_hit = true;
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_RESOURCE_EXCEEDED);
    ck_assert_str_eq(fy_result_detail(r), "pids");
    result_unref(r);
    /* But a cancel the library made stands over limits seen afterwards. */
    world_init(&w);
    killed(&w, SIGKILL);
    w.rep.pids_limit_hit = true;
    w.h.cancel_reason = FY_CANCEL_SUPERSEDED;
    handle_end(&w.h, END_CANCEL, FY_STEP_CANCEL, 0, NULL);
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_CANCELLED);
    ck_assert_int_eq(fy_result_cancel_reason(r), FY_CANCEL_SUPERSEDED);
    result_unref(r);
    free(w.h.end_detail);
    /* A failed setup step beats everything: nothing ran as asked. */
    world_init(&w);
    exited(&w, 0);
    handle_end(&w.h, END_VIOLATION, FY_STEP_NONE, 0, "syscall mount");
    w.rep.setup_failed = true;
    w.rep.setup_step = FY_STEP_MOUNT;
    w.rep.setup_errno = 2;
    w.rep.setup_detail = strdup("mount: host path /x at /work/build: No such file or directory");
    r = finish(&w);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_int_eq(fy_result_error_step(r), FY_STEP_MOUNT);
    ck_assert_int_eq(fy_result_error_os_code(r), 2);
    ck_assert_int_eq(fy_result_exit_code(r), FY_E_STATE);
    ck_assert_ptr_null(w.rep.setup_detail); /* released */
    ck_assert_str_eq(fy_result_detail(r), "mount: host path /x at /work/build: No such file or directory");
    result_unref(r);
    free(w.h.end_detail);
}
END_TEST

START_TEST(test_output_and_leftovers) {
    struct world w;
    world_init(&w);
    exited(&w, 0);
    w.rep.stream_counted[1] = true;
    w.rep.stream_bytes[1] = 42;
    w.rep.output_bytes = 42;
    w.rep.output_limit = 100;
    w.rep.left[FY_LEFT_FILES] = 1;
    w.rep.t_output_eof = 2750;
    fy_result *r = finish(&w);
    uint64_t v;
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_STDOUT_BYTES, &v), 0);
    ck_assert_uint_eq(v, 42);
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_STDERR_BYTES, &v), FY_E_NOTFOUND);
    ck_assert_int_eq(fy_result_stage_usec(r, FY_STAGE_OUTPUT, &v), 0);
    ck_assert_uint_eq(v, 50);
    ck_assert_int_eq(fy_result_cleanup(r, FY_LEFT_FILES, &v), 0);
    ck_assert_uint_eq(v, 1);
    ck_assert_ptr_nonnull(strstr(fy_result_detail(r), "could not be removed"));
    result_unref(r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attempt");
    TCase *tc = tcase_create("outcome");
    tcase_add_test(tc, test_exit_codes);
    tcase_add_test(tc, test_sigsys_is_a_violation_only_from_the_filter);
    tcase_add_test(tc, test_precedence);
    tcase_add_test(tc, test_output_and_leftovers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
