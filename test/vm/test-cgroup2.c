/* The cgroup v2 code path, on a real kernel with a pure cgroup2 hierarchy.
 * This host is hybrid (its v2 has no controllers) and tests never change
 * host mounts, so this runs inside a throwaway QEMU guest
 * (test/vm/run-in-guest.sh) whose /init delegates FY_TEST_CGROUP with the
 * memory, pids, cpu and io controllers. Outside such a guest it skips (77).
 *
 * The workloads are this very binary (bound read-only at /opt/fy). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

static const char *delegated;
static char self_dir[256];
static fy_caps *caps;

static int workload_main(int argc, char **argv) {
    if (!strcmp(argv[1], "--alloc")) {
        long mib = atol(argv[2]);
        for (long i = 0; i < mib; i++) {
            char *p = malloc(1 << 20);
            if (!p)
                return 3;
            for (int k = 0; k < (1 << 20); k += 4096)
                p[k] = 1;
        }
        printf("allocated %ld MiB\n", mib);
        return 0;
    }
    if (!strcmp(argv[1], "--fork")) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++) {
            pid_t p = fork();
            if (p < 0)
                return 4;
            if (p == 0) {
                sleep(20);
                _exit(0);
            }
        }
        return 0;
    }
    if (!strcmp(argv[1], "--write-direct")) {
        /* N MiB to /work/build/f with O_DIRECT: every byte goes to the block
         * device at write time, where io.max throttles it. */
        long mib = atol(argv[2]);
        int fd = open("/work/build/f", O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
        void *buf = NULL;
        if (fd < 0 || posix_memalign(&buf, 4096, 1 << 20) != 0)
            return 5;
        memset(buf, 0x5a, 1 << 20);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < mib; i++)
            if (write(fd, buf, 1 << 20) != 1 << 20)
                return 6;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        close(fd);
        free(buf);
        printf("wrote %ld MiB in %ld ms\n", mib,
               (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
        return 0;
    }
    if (!strcmp(argv[1], "--cgroup")) {
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[512];
        while (f && fgets(line, sizeof(line), f))
            fputs(line, stdout);
        if (f)
            fclose(f);
        return 0;
    }
    if (!strcmp(argv[1], "--crash")) {
        /* A workload that turns its core limit down to 0 (which a pipe
         * core_pattern does not honour) and dumps core. */
        struct rlimit none = {0, 0};
        int r = setrlimit(RLIMIT_CORE, &none);
        struct rlimit now = {9, 9};
        getrlimit(RLIMIT_CORE, &now);
        printf("setrlimit %d, core limit now %llu/%llu\n", r, (unsigned long long)now.rlim_cur,
               (unsigned long long)now.rlim_max);
        fflush(stdout);
        kill(getpid(), SIGQUIT);
        return 7;
    }
    if (!strcmp(argv[1], "--core-helper")) {
        /* Run by the guest kernel as its core_pattern program: leave a mark. */
        char mark[300], buf[65536];
        snprintf(mark, sizeof(mark), "%s/ran-%d", argv[2], (int)getpid());
        int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
        while (read(0, buf, sizeof(buf)) > 0) {
        }
        return 0;
    }
    (void)argc;
    return 2;
}

static fy_result *run(fy_policy *p, const char *mode, const char *arg) {
    char exe[300];
    snprintf(exe, sizeof(exe), "/opt/fy/%s", "test-cgroup2");
    const char *argv[] = {exe, mode, arg, NULL};
    fy_policy_add_bind(p, self_dir, "/opt/fy", 0, NULL);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    int r = fy_prepare(p, caps, argv, &pr, &e);
    ck_assert_msg(r == 0, "prepare: %s", fy_error_message(e));
    fy_handle *h = NULL;
    ck_assert_int_eq(fy_start(pr, &h, NULL), 0);
    fy_prepared_free(pr);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, 60000000, &res, NULL), 1);
    fy_handle_free(h);
    return res;
}

static fy_policy *policy(void) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    /* The workload is this program: built with LeakSanitizer, it would stop
     * its threads with ptrace at exit, which the sandbox refuses. */
    ck_assert_int_eq(fy_policy_set_env(p, "ASAN_OPTIONS", "detect_leaks=0", NULL), 0);
    /* The guest has no Landlock-relevant layout differences, but keep the
     * test about cgroups: everything else as in standard-ci. */
    return p;
}

/* How many entries of dir have names that start with prefix. */
static int entries_named(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

static int children_of_delegated(void) { return entries_named(delegated, "forgeyard-"); }

START_TEST(test_caps_from_delegated_subtree) {
    ck_assert_int_eq(fy_caps_has(caps, FY_CAP_CGROUP_V2), 1);
    int64_t v = 0;
    fy_caps_value(caps, FY_CAP_CGROUP_MEMORY, &v);
    ck_assert_int_eq(v, 2);
    fy_caps_value(caps, FY_CAP_CGROUP_PIDS, &v);
    ck_assert_int_eq(v, 2);
    ck_assert_int_eq(fy_caps_has(caps, FY_CAP_CGROUP_KILL), 1);
    ck_assert_int_eq(fy_caps_has(caps, FY_CAP_CLONE_INTO_CGROUP), 1);
}
END_TEST

START_TEST(test_v2_memory_oom) {
    fy_policy *p = policy();
    fy_policy_set_limit(p, FY_LIMIT_MEMORY, 48u << 20, NULL);
    fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_REQUIRE, NULL);
    fy_result *res = run(p, "--alloc", "300");
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_OUT_OF_MEMORY, "outcome %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)));
    char *json = NULL;
    fy_result_to_json(res, &json, NULL);
    ck_assert_ptr_nonnull(strstr(json, "\"memory\": \"cgroup v2\""));
    ck_assert_ptr_nonnull(strstr(json, "\"source\": \"cgroup v2\""));
    fy_free(json);
    uint64_t peak = 0;
    ck_assert_int_eq(fy_result_usage(res, FY_USAGE_MEMORY_PEAK, &peak), 0);
    ck_assert_uint_le(peak, 48u << 20);
    fy_result_free(res);
    res = run(p, "--alloc", "8");
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    fy_result_free(res);
    ck_assert_int_eq(children_of_delegated(), 0);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_v2_pids) {
    fy_policy *p = policy();
    fy_policy_set_limit(p, FY_LIMIT_PIDS, 16, NULL);
    fy_policy_set_control(p, FY_CONTROL_PIDS_LIMIT, FY_MODE_REQUIRE, NULL);
    fy_result *res = run(p, "--fork", "200");
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_RESOURCE_EXCEEDED);
    ck_assert_str_eq(fy_result_detail(res), "pids");
    uint64_t left = 1;
    fy_result_cleanup(res, FY_LEFT_CGROUPS, &left);
    ck_assert_uint_eq(left, 0);
    fy_result_free(res);
    ck_assert_int_eq(children_of_delegated(), 0);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_v2_placement_and_cpu) {
    fy_policy *p = policy();
    fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, 500, NULL);
    fy_policy_set_control(p, FY_CONTROL_CPU_LIMIT, FY_MODE_REQUIRE, NULL);
    fy_result *res = run(p, "--cgroup", "x");
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    uint64_t cpu = 0;
    ck_assert_int_eq(fy_result_usage(res, FY_USAGE_CPU_USER_USEC, &cpu), 0);
    char *json = NULL;
    fy_result_to_json(res, &json, NULL);
    ck_assert_ptr_nonnull(strstr(json, "\"cpu\": \"cgroup v2\""));
    fy_free(json);
    fy_result_free(res);
    ck_assert_int_eq(children_of_delegated(), 0);
    fy_policy_free(p);
}
END_TEST

/* io.max on a real block device (the guest's RAM disk with ext2 on it):
 * 6 MiB of direct writes at 2 MiB/s take seconds, not milliseconds, and
 * the usage counts them. */
START_TEST(test_v2_io_max) {
    const char *blk = getenv("FY_TEST_BLOCKDIR");
    ck_assert_msg(blk != NULL, "FY_TEST_BLOCKDIR unset: the guest has no block device (FY_VM_KERNEL without modules?)");
    char build[256], out[300];
    snprintf(build, sizeof(build), "%s/build-io-%d", blk, (int)getpid());
    ck_assert_int_eq(mkdir(build, 0777), 0);
    ck_assert_int_eq(chmod(build, 0777), 0);
    snprintf(out, sizeof(out), "/tmp/io-out-%d", (int)getpid());
    long ms[2] = {0, 0};
    for (int limited = 0; limited < 2; limited++) {
        fy_policy *p = policy();
        ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
        unlink(out);
        ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL), 0);
        if (limited) {
            ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_IO_BPS, 2u << 20, NULL), 0);
            ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_IO_LIMIT, FY_MODE_REQUIRE, NULL), 0);
        }
        fy_result *res = run(p, "--write-direct", "6");
        ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "outcome %s exit %d",
                      fy_outcome_name((uint32_t)fy_result_outcome(res)), fy_result_exit_code(res));
        FILE *f = fopen(out, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fscanf(f, "wrote 6 MiB in %ld ms", &ms[limited]), 1);
        fclose(f);
        if (limited) {
            char *json = NULL;
            fy_result_to_json(res, &json, NULL);
            ck_assert_msg(strstr(json, "\"io\": \"cgroup v2\""), "%s", json);
            fy_free(json);
            uint64_t w = 0;
            ck_assert_int_eq(fy_result_usage(res, FY_USAGE_IO_WRITE_BYTES, &w), 0);
            ck_assert_uint_ge(w, 6u << 20);
        }
        fy_result_free(res);
        fy_policy_free(p);
    }
    printf("io.max: 6 MiB direct writes took %ld ms unlimited, %ld ms at 2 MiB/s\n", ms[0], ms[1]);
    /* 6 MiB at 2 MiB/s is 3 s; allow for the throttle's first slice. */
    ck_assert_msg(ms[1] >= 2000, "limited writes took only %ld ms", ms[1]);
    ck_assert_msg(ms[1] > 2 * ms[0], "limited %ld ms vs unlimited %ld ms", ms[1], ms[0]);
    unlink(out);
    ck_assert_int_eq(children_of_delegated(), 0);
}
END_TEST

/* A core_pattern pipe program runs as root outside every namespace with
 * the crashing process's memory, whatever its RLIMIT_CORE but 1. The guest
 * is the only place a test may set core_pattern: a crash outside the
 * sandbox with the limit at 0 reaches the program (the control), a crash
 * inside after the workload set its limit to 0 must not. */
static int marks(const char *dir) { return entries_named(dir, "ran-"); }

static int wait_marks(const char *dir, int want, int tenths) {
    for (int i = 0; i < tenths && marks(dir) < want; i++)
        usleep(100000);
    return marks(dir) >= want;
}

START_TEST(test_core_pattern_pipe_never_reached) {
    const char *dir = "/tmp/fy-core-marks";
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char pattern[512];
    snprintf(pattern, sizeof(pattern), "|%s/test-cgroup2 --core-helper %s\n", self_dir, dir);
    int fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, pattern, strlen(pattern)), (ssize_t)strlen(pattern));
    close(fd);
    /* The control: the same crash outside the sandbox reaches the program. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        kill(getpid(), SIGQUIT);
        _exit(7);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WCOREDUMP(st), "the control did not dump core (status %#x)", st);
    ck_assert_msg(wait_marks(dir, 1, 100), "the core_pattern program never ran for the control");
    /* In the sandbox: the limit stays 1 byte, nothing reaches the program. */
    fy_policy *p = policy();
    fy_result *res = run(p, "--crash", "x");
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SIGNALED, "outcome %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)));
    char *json = NULL;
    fy_result_to_json(res, &json, NULL);
    ck_assert_msg(strstr(json, "\"core_dumps\": \"none: RLIMIT_CORE 1 byte"), "%s", json);
    fy_free(json);
    fy_result_free(res);
    /* A policy that asks for cores gets 1 byte here, and says why. */
    fy_policy_set_limit(p, FY_LIMIT_CORE, FY_UNLIMITED, NULL);
    res = run(p, "--crash", "x");
    fy_result_to_json(res, &json, NULL);
    ck_assert_msg(strstr(json, "the host's core_pattern hands cores to a program outside the sandbox: |"), "%s", json);
    fy_free(json);
    fy_result_free(res);
    fy_policy_free(p);
    usleep(500000);
    ck_assert_msg(wait_marks(dir, 1, 1) && marks(dir) == 1, "the core_pattern program ran for a sandboxed crash");
    fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
    ck_assert_int_eq(write(fd, "core\n", 5), 5);
    close(fd);
    ck_assert_int_eq(children_of_delegated(), 0);
}
END_TEST

int main(int argc, char **argv) {
    if (argc > 2 && argv[1][0] == '-' && argv[1][1] == '-')
        return workload_main(argc, argv);
    delegated = getenv("FY_TEST_CGROUP");
    if (!delegated) {
        fprintf(stderr, "FY_TEST_CGROUP is not set: run me in the guest (test/vm/run-in-guest.sh)\n");
        return 77;
    }
    char exe[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return 1;
    exe[n] = '\0';
    snprintf(self_dir, sizeof(self_dir), "%.*s", (int)(strrchr(exe, '/') - exe), exe);
    fy_error *e = NULL;
    if (fy_probe_cgroup(FY_PROBE_NO_VM, delegated, &caps, &e) < 0) {
        fprintf(stderr, "probe: %s\n", fy_error_message(e));
        return 1;
    }
    Suite *s = suite_create("cgroup-v2");
    TCase *tc = tcase_create("v2");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_caps_from_delegated_subtree);
    tcase_add_test(tc, test_v2_memory_oom);
    tcase_add_test(tc, test_v2_pids);
    tcase_add_test(tc, test_v2_placement_and_cpu);
    tcase_add_test(tc, test_v2_io_max);
    tcase_add_test(tc, test_core_pattern_pipe_never_reached);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    fy_caps_free(caps);
    printf("%d passed, %d failed\n", 6 - nf, nf);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
