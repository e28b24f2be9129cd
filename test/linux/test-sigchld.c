/* A host's SIGCHLD disposition never reaches the library's children.
 *
 * Python, Node and many daemons set SIGCHLD to SIG_IGN; others install a
 * handler that reaps with waitpid(-1). Every child the library makes (the
 * probe's, the VMM version checks, the sandbox itself) must be invisible to
 * either: with SIG_IGN the kernel would reap it before the library could,
 * and a handler would run for a child the host does not know.
 *
 * The kernel gives a process that executes a program SIGCHLD as its exit
 * signal whatever it was cloned with: such children (QEMU and
 * forgeyard-init in the probe, forgeyard-init as the sandbox's pid 1 when
 * the host's SIGCHLD is not at its default) run below a middle process
 * that never executes anything.
 *
 * Each test runs in a fresh process (Check forks), so the probe is made
 * from nothing under the disposition the test sets, and compared with a
 * probe made under the default disposition in another fresh process. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

static volatile sig_atomic_t handler_calls;

static void counting_handler(int sig) {
    (void)sig;
    handler_calls++;
}

/* The common handler of event loops and daemons: reap everything. */
static void reaping_handler(int sig) {
    (void)sig;
    int e = errno, st;
    while (waitpid(-1, &st, WNOHANG | __WALL) > 0)
        handler_calls++;
    errno = e;
}

enum disposition { DISP_DEFAULT, DISP_IGNORE, DISP_HANDLER, DISP_REAPER };

static void set_disposition(enum disposition d) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = d == DISP_IGNORE    ? SIG_IGN
                    : d == DISP_HANDLER ? counting_handler
                    : d == DISP_REAPER  ? reaping_handler
                                        : SIG_DFL;
    sa.sa_flags = SA_RESTART;
    ck_assert_int_eq(sigaction(SIGCHLD, &sa, NULL), 0);
    handler_calls = 0;
}

/* The capabilities that depend on the probe's children being waitable. */
static const uint32_t watched[] = {
    FY_CAP_USERNS, FY_CAP_MOUNTNS, FY_CAP_PIDNS, FY_CAP_NETNS, FY_CAP_PIDFD, FY_CAP_CLONE3,
    FY_CAP_CLONE_INTO_CGROUP, FY_CAP_SECCOMP, FY_CAP_LANDLOCK, FY_CAP_CGROUP_V1, FY_CAP_CGROUP_V2,
    FY_CAP_CGROUP_MEMORY, FY_CAP_CGROUP_PIDS, FY_CAP_EXEC_INIT, FY_CAP_KVM, FY_CAP_QEMU,
    FY_CAP_QEMU_TCG, FY_CAP_QEMU_MICROVM,
};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))

struct probe_summary {
    int has[NWATCHED];
    int max_level;
    int run_outcome; /* of a sandboxed `echo hi; exit 3`, or 0 when none could be prepared */
    int run_exit;
    char out[16];
    int probe_handler_calls, run_handler_calls;
};

/* Probes from nothing under disposition d and runs one sandbox; in a fresh
 * child process so that no probe cache of ours is reused. */
static void summarise(enum disposition d, struct probe_summary *s) {
    set_disposition(d);
    memset(s, 0, sizeof *s);
    fy_caps *caps = NULL;
    fy_error *err = NULL;
    ck_assert_int_ge(fy_probe(FY_PROBE_FRESH, &caps, &err), 0);
    for (size_t i = 0; i < NWATCHED; i++)
        s->has[i] = fy_caps_has(caps, watched[i]);
    s->max_level = fy_caps_max_level(caps);
    s->probe_handler_calls = (int)handler_calls;
    fy_policy *pol = NULL;
    ck_assert_int_ge(fy_policy_new(FY_PROFILE_STANDARD_CI, &pol, &err), 0);
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    ck_assert_int_ge(fy_policy_set_stdio(pol, FY_STDOUT, FY_STDIO_FD, p[1], NULL, &err), 0);
    close(p[1]);
    const char *argv[] = { "/bin/sh", "-c", "echo hi; exit 3", NULL };
    fy_prepared *pr = NULL;
    if (fy_prepare(pol, caps, argv, &pr, &err) >= 0) {
        fy_handle *h = NULL;
        fy_result *res = NULL;
        ck_assert_int_ge(fy_start(pr, &h, &err), 0);
        ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, &err), 1);
        s->run_outcome = fy_result_outcome(res);
        s->run_exit = fy_result_exit_code(res);
        fy_result_free(res);
        fy_handle_free(h);
        fy_prepared_free(pr);
        fy_policy_free(pol); /* closes the library's copy of the pipe's write end */
        ssize_t n = read(p[0], s->out, sizeof s->out - 1);
        ck_assert_int_ge(n, 0);
    } else {
        fy_error_free(err);
        err = NULL;
        fy_policy_free(pol);
    }
    close(p[0]);
    fy_caps_free(caps);
    s->run_handler_calls = (int)handler_calls - s->probe_handler_calls;
}

/* Runs summarise(d) in a child, passing the summary back through a pipe. */
static void summary_in_child(enum disposition d, struct probe_summary *s) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        struct probe_summary mine;
        summarise(d, &mine);
        _exit(write(p[1], &mine, sizeof mine) == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(p[1]);
    ssize_t n = read(p[0], s, sizeof *s);
    close(p[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "summary child failed (status 0x%x)", st);
    ck_assert_int_eq(n, (ssize_t)sizeof *s);
}

static void compare(enum disposition d) {
    struct probe_summary ref, got;
    summary_in_child(DISP_DEFAULT, &ref);
    summary_in_child(d, &got);
    for (size_t i = 0; i < NWATCHED; i++)
        ck_assert_msg(ref.has[i] == got.has[i], "%s: %d with SIGCHLD at its default, %d here",
                      fy_cap_name(watched[i]), ref.has[i], got.has[i]);
    ck_assert_int_eq(ref.max_level, got.max_level);
    ck_assert_int_eq(ref.run_outcome, got.run_outcome);
    if (ref.run_outcome) {
        ck_assert_int_eq(got.run_outcome, FY_OUTCOME_FAILED);
        ck_assert_int_eq(got.run_exit, 3);
        ck_assert_str_eq(got.out, "hi\n");
    } else {
        fprintf(stderr, "note: no sandbox could be prepared on this host; the probes are compared\n");
    }
    /* The probe's children never reach the host's disposition. */
    ck_assert_int_eq(got.probe_handler_calls, 0);
    /* Nor does the sandbox: its pid 1 executes forgeyard-init, and the
     * kernel gives every process that executes a program SIGCHLD as its
     * exit signal, so where the host's SIGCHLD is not at its default pid 1
     * is started by a reaper middle (a quiet fork that executes nothing),
     * whose child it is. */
    ck_assert_int_eq(got.run_handler_calls, 0);
}

START_TEST(test_sigchld_ignored) {
    compare(DISP_IGNORE);
}
END_TEST

START_TEST(test_sigchld_handler_never_called) {
    compare(DISP_HANDLER);
}
END_TEST

START_TEST(test_sigchld_handler_reaps_everything) {
    compare(DISP_REAPER);
}
END_TEST

/* The positive control: the counting handler does count children that are
 * the host's own, so a zero above means something. */
START_TEST(test_handler_counts_host_children) {
    set_disposition(DISP_HANDLER);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq((int)handler_calls, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sigchld");
    TCase *tc = tcase_create("sigchld");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_handler_counts_host_children);
    tcase_add_test(tc, test_sigchld_ignored);
    tcase_add_test(tc, test_sigchld_handler_never_called);
    tcase_add_test(tc, test_sigchld_handler_reaps_everything);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
