/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The external OCI runtime adapter (backend oci-runc, lib/linux/linux-runc.c):
 * the probe's verdicts on runc and crun (crun's checked against crun
 * itself), refusals (not named, known CVEs not accepted, seccomp or Landlock
 * required), and a busybox image run through runc with the contract of the
 * library's own backends: exit status, captured output, environment,
 * network denied, deadline, cancel, and a witnessed cleanup (runc's state,
 * cgroups, mounts and the bundle gone). Root only: the adapter does not run
 * rootless runc.
 *
 *   test-runtime MKIMAGE.PY FY-ATTACK (a static fy-attack, put in the image) */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "forgeyard/sandbox.h"
#include "caps.h"

static const char *mkimage, *attack;
static char scratch[256], digest[128], ref[1024];
static int counter;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f)
        return strdup("");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static bool have(const char *prog) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

/* Cgroups of this process's attempts (forgeyard-<our pid>-...) in every
 * hierarchy, at any depth (the attempts' and runc's own beside them);
 * other engineers' tests make their own concurrently. */
static int cgroups_named(void) {
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "find /sys/fs/cgroup -maxdepth 6 -type d -name 'forgeyard-%d-*' 2>/dev/null | wc -l",
             (int)getpid());
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* The policy the adapter can satisfy: seccomp and Landlock preferred (it
 * enforces neither), runc named, its known CVEs accepted. */
static fy_policy *policy(bool named, uint32_t flags) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, &e), 0);
    ck_assert_msg(fy_policy_set_image(p, ref, &e) == 0, "%s", fy_error_message(e));
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 60000000, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_SECCOMP, FY_MODE_PREFER, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_PREFER, NULL), 0);
    if (named)
        ck_assert_int_eq(fy_policy_set_runtime(p, "runc", flags, NULL), 0);
    return p;
}

struct run {
    fy_result *res;
    int outcome, exit_code;
    char *out, *json;
    double seconds;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* cancel_after_ms > 0: fy_handle_cancel then. */
static void run(fy_policy *p, const char *const *argv, int cancel_after_ms, struct run *r) {
    char out[512];
    snprintf(out, sizeof(out), "%s/out-%d", scratch, ++counter);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL), 0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FILE, -1, out, NULL), 0);
    fy_prepared *pr = NULL;
    int rc = fy_prepare(p, NULL, argv, &pr, &e);
    ck_assert_msg(rc == 0, "prepare: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "oci-runc");
    ck_assert_int_eq(fy_prepared_level(pr), FY_LEVEL_CONTAINER);
    fy_handle *h = NULL;
    double t0 = now_s();
    rc = fy_start(pr, &h, &e);
    ck_assert_msg(rc == 0, "start: %s", fy_error_message(e));
    fy_prepared_free(pr);
    if (cancel_after_ms > 0) {
        ck_assert_int_eq(fy_handle_wait(h, (uint64_t)cancel_after_ms * 1000, &r->res, NULL), 0);
        ck_assert_int_eq(fy_handle_cancel(h, FY_CANCEL_USER, NULL), 0);
    }
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &r->res, NULL), 1);
    r->seconds = now_s() - t0;
    fy_handle_free(h);
    r->outcome = fy_result_outcome(r->res);
    r->exit_code = fy_result_exit_code(r->res);
    r->out = slurp(out);
    ck_assert_int_eq(fy_result_to_json(r->res, &r->json, NULL), 0);
    unlink(out);
}

static void run_free(struct run *r) {
    fy_result_free(r->res);
    free(r->out);
    fy_free(r->json);
}

static void assert_clean(const struct run *r, int cgroups_before, int bundles_before) {
    for (uint32_t what = FY_LEFT_PROCESSES; what <= FY_LEFT_NETWORK; what++) {
        uint64_t left = 99;
        ck_assert_int_eq(fy_result_cleanup(r->res, what, &left), 0);
        ck_assert_msg(left == 0, "left[%u] = %llu: %s", what, (unsigned long long)left, r->json);
    }
    /* And seen from here: no cgroup of the attempt or of runc, no bundle
     * (with runc's --root state inside it). */
    ck_assert_int_eq(cgroups_named(), cgroups_before);
    ck_assert_int_eq(entries("/run/forgeyard-runtime"), bundles_before);
}

#define ASSERT_OUT(r, needle) \
    ck_assert_msg(strstr((r)->out, needle), "expected \"%s\" in output: %s", needle, (r)->out)

/* The probe's verdicts: runc usable as root, with its CVEs named; crun's
 * verdict agrees with what crun itself does on this host. */
START_TEST(test_probe_verdicts) {
    fy_caps *caps = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_NO_VM | FY_PROBE_FRESH, &caps, NULL), 0);
    const char *runc = caps_fact(caps, "linux.runc_verdict");
    ck_assert_ptr_nonnull(runc);
    ck_assert_str_eq(runc, "ok");
    const char *ver = caps_fact(caps, "linux.runc_version");
    ck_assert_ptr_nonnull(ver);
    unsigned maj = 0, min = 0, pat = 0;
    ck_assert_int_ge(sscanf(ver, "%u.%u.%u", &maj, &min, &pat), 2);
    const char *issues = caps_fact(caps, "linux.runc_issues");
    if (maj == 1 && (min < 2 || (min == 2 && pat < 8)))
        ck_assert_msg(issues && strstr(issues, "CVE-2025-31133") && strstr(issues, "CVE-2025-52881"),
                      "runc %s: issues %s", ver, issues ? issues : "(none)");
    const char *crun = caps_fact(caps, "linux.crun_verdict");
    ck_assert_ptr_nonnull(crun);
    if (!have("crun")) {
        ck_assert_msg(strstr(crun, "not installed"), "%s", crun);
    } else {
        /* crun itself, on a bundle of busybox: refused for hybrid
         * cgroups exactly when the probe says so. */
        char cmd[2048], err[600];
        snprintf(err, sizeof(err), "%s/crun.err", scratch);
        snprintf(cmd, sizeof(cmd),
                 "set -e; b='%s/crun-bundle'; mkdir -p \"$b/rootfs/bin\"; cp /bin/busybox \"$b/rootfs/bin/\"; "
                 "cd \"$b\"; crun spec; sed -i 's/\"terminal\": true/\"terminal\": false/; s/\"sh\"/\"\\/bin\\/busybox\", \"true\"/' "
                 "config.json; crun --root \"$b/state\" run fy-crun-probe-$$ >'%s' 2>&1 || true; "
                 "crun --root \"$b/state\" delete --force fy-crun-probe-$$ >/dev/null 2>&1 || true",
                 scratch, err);
        ck_assert_int_eq(system(cmd), 0);
        char *said = slurp(err);
        bool refused = strstr(said, "hybrid") != NULL;
        bool says_hybrid = strstr(crun, "hybrid") != NULL;
        ck_assert_msg(refused == says_hybrid, "crun said \"%s\", the probe \"%s\"", said, crun);
        if (says_hybrid)
            ck_assert_msg(strncmp(crun, "unusable", 8) == 0, "%s", crun);
        free(said);
    }
    fy_caps_free(caps);
}
END_TEST

static void expect_refused(fy_policy *p, const char *needle) {
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_msg(strstr(fy_error_message(e), needle), "expected \"%s\" in: %s", needle, fy_error_message(e));
    fy_error_free(e);
}

/* Never chosen unless named; named, refused while its CVEs are not
 * accepted, while seccomp or Landlock is required, and crun refused with
 * its verdict. */
START_TEST(test_refusals) {
    fy_policy *p = policy(false, 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_prepare(p, NULL, argv, &pr, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "linux-container");
    fy_prepared_free(pr);
    fy_policy_free(p);

    fy_caps *caps = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_NO_VM, &caps, NULL), 0);
    if (caps_fact(caps, "linux.runc_issues")) {
        p = policy(true, 0);
        expect_refused(p, "CVE-2025-31133");
        fy_policy_free(p);
    }
    p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_SECCOMP, FY_MODE_REQUIRE, NULL), 0);
    expect_refused(p, "seccomp required (the OCI runtime adapter does not translate");
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_SECCOMP, FY_MODE_PREFER, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_REQUIRE, NULL), 0);
    expect_refused(p, "landlock required");
    fy_policy_free(p);

    const char *crun = caps_fact(caps, "linux.crun_verdict");
    if (crun && strcmp(crun, "ok") != 0) {
        p = policy(false, 0);
        ck_assert_int_eq(fy_policy_set_runtime(p, "crun", 0, NULL), 0);
        expect_refused(p, "oci-crun: cannot run here: crun: ");
        fy_policy_free(p);
    }
    /* A bad name is a typed error, not a silent fallback. */
    p = policy(false, 0);
    ck_assert_int_eq(fy_policy_set_runtime(p, "Runc /x", 0, NULL), FY_E_INVAL);
    ck_assert_int_eq(fy_policy_set_runtime(p, "runc", 0x80, NULL), FY_E_INVAL);
    fy_policy_free(p);
    fy_caps_free(caps);
}
END_TEST

/* The contract: exit status, output, environment (the policy's over the
 * image's), network denied, the evidence, a fresh upper, and nothing left. */
START_TEST(test_run) {
    int cg_before = cgroups_named(), b_before = entries("/run/forgeyard-runtime");
    /* A listener of the host's on 127.0.0.1: not reachable from the
     * container's own network namespace. */
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 4), 0);
    socklen_t al = sizeof a;
    ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &al), 0);
    char script[2048];
    snprintf(script, sizeof(script),
             "cat /etc/motd; echo IMG=$IMG ONLY=$ONLY; test -e /fresh && echo upper-not-fresh; "
             "echo x > /fresh && echo wrote-root; "
             "if echo hi | nc -w 2 127.0.0.1 %u; then echo NET-REACHED; else echo net-denied; fi; "
             /* the control: nc works, on the container's own loopback */
             /* (the client tries until the listener is up: bounded, 10 s) */
             "nc -l -p 5555 > /tmp/got & i=0; until echo ping | nc -w 1 127.0.0.1 5555; do "
             "i=$((i+1)); [ $i -ge 50 ] && break; sleep 0.2; done && echo lo-ok; "
             "ls /sys/class/net 2>/dev/null; cat /proc/net/dev | grep -c : ; "
             "grep -q CapEff:.0000000000000000 /proc/self/status && echo no-caps; "
             "grep -q 'NoNewPrivs:.1' /proc/self/status && echo nnp; "
             /* the cgroup view, checked against the evidence's claim */
             "if grep -qE ' - cgroup2? ' /proc/self/mountinfo; then echo cgview=mounted; else echo cgview=none; fi; "
             "if test -d /sys/fs/cgroup; then echo cgdir=yes; else echo cgdir=no; fi; "
             "echo SIGP=$(ulimit -i) MQ=$(ulimit -q) INO=$(cat /proc/sys/user/max_inotify_instances); "
             /* the plan's tmpfs modes, not the image's directories' (its
              * /tmp is 0755: runc 1.1 gave the tmpfs that) */
             "echo MODES $(stat -c %%a /tmp) $(stat -c %%a \"$HOME\"); exit 7",
             (unsigned)ntohs(a.sin_port));
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_env(p, "IMG", "policy", NULL), 0);
    struct run r;
    run(p, argv, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_FAILED && r.exit_code == 7, "outcome %d exit %d: %s / %s", r.outcome,
                  r.exit_code, r.out, r.json);
    ASSERT_OUT(&r, "hello from the image");
    ASSERT_OUT(&r, "IMG=policy ONLY=image");
    ASSERT_OUT(&r, "wrote-root");
    ASSERT_OUT(&r, "MODES 1777 700\n");
    ASSERT_OUT(&r, "net-denied");
    ASSERT_OUT(&r, "lo-ok");
    ASSERT_OUT(&r, "no-caps");
    ASSERT_OUT(&r, "nnp");
    ck_assert_msg(!strstr(r.out, "NET-REACHED") && !strstr(r.out, "upper-not-fresh"), "%s", r.out);
    ck_assert_int_eq(fy_result_level(r.res), FY_LEVEL_CONTAINER);
    ck_assert_msg(strstr(r.json, digest), "the digest is not in the evidence: %s", r.json);
    ck_assert_msg(strstr(r.json, "\"oci-runc\""), "%s", r.json);
    ck_assert_msg(strstr(r.json, "\"runtime\":{") || strstr(r.json, "\"runtime\": {"), "%s", r.json);
    ck_assert_msg(strstr(r.json, "not enforced: the library's profiles are not translated"), "%s", r.json);
    json_t *j = json_loads(r.json, 0, NULL);
    json_t *rt = json_object_get(json_object_get(j, "isolation"), "runtime");
    ck_assert_str_eq(json_string_value(json_object_get(rt, "name")), "runc");
    /* The evidence's cgroup view is what the container has. */
    const char *view = json_string_value(json_object_get(json_object_get(j, "isolation"), "cgroup_view"));
    ck_assert_ptr_nonnull(view);
    if (strncmp(view, "none", 4) == 0) {
        ASSERT_OUT(&r, "cgview=none");
        ASSERT_OUT(&r, "cgdir=no");
    } else {
        ck_assert_msg(strstr(view, "/sys/fs/cgroup"), "%s", view);
        ASSERT_OUT(&r, "cgview=mounted");
        ASSERT_OUT(&r, "cgdir=yes");
    }
    /* The limits the evidence claims are the ones the container has: the
     * queued-signal and message-queue rlimits in config.json, no per-user
     * kernel counts (runc runs no forgeyard-init to write them), and the
     * user namespace charged to host root, which makes it under runc. */
    json_t *lim = json_object_get(j, "limits");
    const char *rls = json_string_value(json_object_get(lim, "rlimits"));
    ck_assert_msg(rls && strstr(rls, "sigpending") && strstr(rls, "msgqueue"), "%s", r.json);
    json_t *kc = json_object_get(lim, "kernel_counts");
    char want[128];
    snprintf(want, sizeof(want), "SIGP=%lld MQ=%lld ",
             (long long)json_integer_value(json_object_get(kc, "signals_queued")),
             (long long)json_integer_value(json_object_get(kc, "message_queue_bytes")));
    ASSERT_OUT(&r, want);
    ck_assert_msg(json_is_null(json_object_get(kc, "inotify_instances")), "%s", r.json);
    const char *charged = json_string_value(json_object_get(kc, "charged_to"));
    ck_assert_msg(charged && strstr(charged, "root") && !strstr(charged, "never root"), "%s", r.json);
    fy_caps *caps = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_NO_VM, &caps, NULL), 0);
    if (caps_fact(caps, "linux.runc_issues"))
        ck_assert_msg(strstr(json_string_value(json_object_get(rt, "warning")), "CVE-2025-52565"), "%s", r.json);
    fy_caps_free(caps);
    json_decref(j);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    /* A second attempt: the first one's write is gone (a fresh upper). */
    run(p, argv, 0, &r);
    ck_assert_msg(!strstr(r.out, "upper-not-fresh"), "%s", r.out);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    /* The image's Cmd when the command is empty; success. */
    const char *empty[] = {NULL};
    run(p, empty, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_SUCCEEDED, "outcome %d: %s", r.outcome, r.out);
    ASSERT_OUT(&r, "cmd-from-image in /srv");
    run_free(&r);
    /* A command that does not exist: the runtime's failure, typed, never
     * the command's exit status. */
    const char *missing[] = {"/no/such/program", NULL};
    run(p, missing, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE, "outcome %d: %s", r.outcome, r.json);
    ck_assert_msg(strstr(r.json, "no such file"), "%s", r.json);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    fy_policy_free(p);
    close(ls);
}
END_TEST

/* The wall-clock limit and a cancel end a container whose pid 1 ignores
 * SIGTERM (the grace then ends in the kill), typed, and nothing is left. */
START_TEST(test_deadline_cancel) {
    int cg_before = cgroups_named(), b_before = entries("/run/forgeyard-runtime");
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 1000000, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_GRACE, 300000, NULL), 0);
    const char *argv[] = {"/bin/sh", "-c", "trap '' TERM; sleep 100 & sleep 100; echo not-killed", NULL};
    struct run r;
    run(p, argv, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_TIMED_OUT, "outcome %d: %s", r.outcome, r.json);
    ck_assert_msg(r.seconds < 20, "took %.1f s", r.seconds);
    ck_assert_msg(!strstr(r.out, "not-killed"), "%s", r.out);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 60000000, NULL), 0);
    run(p, argv, 500, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_CANCELLED, "outcome %d: %s", r.outcome, r.json);
    ck_assert_int_eq(fy_result_cancel_reason(r.res), FY_CANCEL_USER);
    ck_assert_msg(r.seconds < 20, "took %.1f s", r.seconds);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* A host that drives its handle only long after the start: a command that
 * ended before its wall-clock limit is judged by its own end (failed, exit
 * 3), one that ran past it timed out all the same. The first was a timeout:
 * the deadline was judged at the host's reap. */
static fy_result *run_idle_host(const char *const *argv, uint64_t wall_usec, useconds_t idle_usec) {
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, wall_usec, NULL), 0);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_prepare(p, NULL, argv, &pr, &e) == 0, "prepare: %s", fy_error_message(e));
    fy_handle *h = NULL;
    ck_assert_msg(fy_start(pr, &h, &e) == 0, "start: %s", fy_error_message(e));
    fy_prepared_free(pr);
    fy_policy_free(p);
    usleep(idle_usec);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, 30000000, &res, NULL), 1);
    fy_handle_free(h);
    return res;
}

START_TEST(test_deadline_idle_host) {
    int cg_before = cgroups_named(), b_before = entries("/run/forgeyard-runtime");
    const char *quick[] = {"/bin/sh", "-c", "exit 3", NULL};
    fy_result *res = run_idle_host(quick, 3000000, 4500000);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_FAILED && fy_result_exit_code(res) == 3,
                  "in time, reaped late: outcome %s (%s), exit %d", fy_outcome_name((uint32_t)fy_result_outcome(res)),
                  fy_result_detail(res), fy_result_exit_code(res));
    uint64_t wall = 0;
    ck_assert_int_eq(fy_result_usage(res, FY_USAGE_WALL_USEC, &wall), 0);
    ck_assert_msg(wall < 3000000, "wall_usec %llu counts the host's idle time", (unsigned long long)wall);
    fy_result_free(res);
    const char *late[] = {"/bin/sleep", "2", NULL};
    res = run_idle_host(late, 1000000, 3500000);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_TIMED_OUT, "past its limit: outcome %s (%s)",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)), fy_result_detail(res));
    fy_result_free(res);
    ck_assert_int_eq(cgroups_named(), cg_before);
    ck_assert_int_eq(entries("/run/forgeyard-runtime"), b_before);
}
END_TEST

/* The attempt's memory limit (the library's cgroup, above runc's): an
 * allocation past it ends as out-of-memory. */
START_TEST(test_memory_limit) {
    int cg_before = cgroups_named(), b_before = entries("/run/forgeyard-runtime");
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 64ull << 20, NULL), 0);
    /* A bounded fill: 256 MiB of a tmpfs-backed shell variable would do;
     * busybox's own: a 200 MiB file in the tmpfs upper, which is charged
     * to the memory cgroup. */
    const char *argv[] = {"/bin/sh", "-c", "head -c 209715200 /dev/zero > /fill; echo survived", NULL};
    struct run r;
    run(p, argv, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_OUT_OF_MEMORY,
                  "outcome %d: %s / %s", r.outcome, r.out, r.json);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    /* The victim inside the container, its parent going on: cgroup v1
     * counts the kill in the victim's cgroup (runc's, below the
     * attempt's), and the attempt still ends out-of-memory. */
    const char *inner[] = {"/bin/sh", "-c",
                           "sh -c 'x=$(yes | head -c 150000000); echo ${#x}'; echo inner=$?; exit 3",
                           NULL};
    run(p, inner, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_OUT_OF_MEMORY, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)r.outcome), r.out, r.json);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* The kernel counts a refused fork in the pids.events of the forking
 * task's cgroup, which is runc's below the attempt's; both ways the
 * attempt ends resource-exceeded "pids" like the library's own backends:
 * a shell that exits at its first refused fork (the count read after the
 * command ended, before runc's cgroup goes), and one whose child hits the
 * limit while it goes on sleeping (seen while it runs: ended long before
 * the sleep would). */
START_TEST(test_pids_limit) {
    int cg_before = cgroups_named(), b_before = entries("/run/forgeyard-runtime");
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_PIDS, 20, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_PIDS_LIMIT, FY_MODE_REQUIRE, NULL), 0);
    const char *quick[] = {"/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done; echo survived",
                           NULL};
    struct run r;
    run(p, quick, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_RESOURCE_EXCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)r.outcome), r.out, r.json);
    ck_assert_str_eq(fy_result_detail(r.res), "pids");
    ck_assert_msg(!strstr(r.out, "survived"), "%s", r.out);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    const char *lasting[] = {"/bin/sh", "-c", "sh -c 'i=0; while [ $i -lt 100 ]; do sleep 60 & i=$((i+1)); done'; "
                             "sleep 60; echo slept", NULL};
    run(p, lasting, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_RESOURCE_EXCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)r.outcome), r.out, r.json);
    ck_assert_str_eq(fy_result_detail(r.res), "pids");
    ck_assert_msg(r.seconds < 30, "took %.1f s: not seen while the command ran", r.seconds);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    /* Under the limit: an ordinary exit. */
    const char *few[] = {"/bin/sh", "-c", "for i in 1 2 3; do sleep 0.1 & done; wait; exit 4", NULL};
    run(p, few, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_FAILED && r.exit_code == 4, "outcome %s: %s",
                  fy_outcome_name((uint32_t)r.outcome), r.json);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* A host that dies mid-attempt leaves runc's container running; fy_gc
 * destroys it: its processes, runc's state, every cgroup, the bundle. */
START_TEST(test_orphan) {
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
        const char *argv[] = {"/bin/sh", "-c", "echo up; sleep 100", NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        int out[2];
        if (pipe(out) < 0 || fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, out[1], NULL, NULL) < 0 ||
            fy_prepare(p, NULL, argv, &pr, NULL) < 0 || fy_start(pr, &h, NULL) < 0)
            _exit(1);
        char c;
        if (read(out[0], &c, 1) != 1) /* the command runs */
            _exit(1);
        (void)!write(ready[1], "y", 1);
        raise(SIGKILL); /* the host crashes: no cleanup */
        _exit(1);
    }
    close(ready[1]);
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert(WIFSIGNALED(st));
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "ls -d /run/forgeyard-runtime/forgeyard-%d-* >/dev/null 2>&1", (int)child);
    ck_assert_msg(system(cmd) == 0, "the crashed host left no bundle to collect");
    snprintf(cmd, sizeof(cmd), "find /sys/fs/cgroup -maxdepth 6 -type d -name 'forgeyard-%d-*' | grep -q .",
             (int)child);
    ck_assert_msg(system(cmd) == 0, "the crashed host's container has no cgroup");
    /* The sandbox does not outlive its owner: the middle process, tied to
     * the host (PR_SET_PDEATHSIG), kills the container and runc at once,
     * long before the wall-clock limit; only the record is left for gc. */
    snprintf(cmd, sizeof(cmd),
             "find /sys/fs/cgroup -maxdepth 8 -path '*/forgeyard-%d-*' -name cgroup.procs -exec cat {} + "
             "2>/dev/null | grep -q .",
             (int)child);
    int tries = 0;
    while (system(cmd) == 0 && tries++ < 100)
        usleep(100000);
    ck_assert_msg(tries <= 100, "the crashed host's container still runs 10 s after the host died");
    char state[300];
    snprintf(state, sizeof(state), "%s/gc-state", scratch);
    ck_assert_int_eq(mkdir(state, 0700), 0);
    uint64_t destroyed = 0;
    fy_error *e = NULL;
    ck_assert_msg(fy_gc(state, 0, &destroyed, &e) == 0, "%s", fy_error_message(e));
    ck_assert_uint_ge(destroyed, 1);
    snprintf(cmd, sizeof(cmd), "ls -d /run/forgeyard-runtime/forgeyard-%d-* >/dev/null 2>&1", (int)child);
    ck_assert_msg(system(cmd) != 0, "the bundle is still there");
    snprintf(cmd, sizeof(cmd), "find /sys/fs/cgroup -maxdepth 6 -type d -name 'forgeyard-%d-*' | grep -q .",
             (int)child);
    ck_assert_msg(system(cmd) != 0, "a cgroup of the crashed attempt is left (so may be its processes)");
}
END_TEST

/* The host program's session keyring (its registry, Kerberos or fscrypt
 * tokens) is not the container's: runc runs with --no-new-keyring and
 * applies no seccomp filter, so a container that inherited it held its
 * keys by possession, to read, replace or clear. The test process (a
 * forked Check child) joins a keyring of its own and plants a key with a
 * random payload; the container looks for it by name and by number. */
START_TEST(test_host_keyring) {
    unsigned char rnd[12];
    char payload[32], desc[64], id[32], ses[40];
    FILE *u = fopen("/dev/urandom", "re");
    ck_assert_int_eq(fread(rnd, 1, sizeof(rnd), u), sizeof(rnd));
    fclose(u);
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(payload + 2 * i, 3, "%02x", rnd[i]);
    snprintf(desc, sizeof(desc), "fy-test-host-key-%d", (int)getpid());
    long s = syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, NULL);
    ck_assert_msg(s > 0, "join a session keyring: %s", strerror(errno));
    long key = syscall(SYS_add_key, "user", desc, payload, strlen(payload), -3 /* session */);
    ck_assert_msg(key > 0, "add_key: %s", strerror(errno));
    ck_assert_int_eq(syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -3, "user", desc, 0), key);
    snprintf(id, sizeof(id), "%ld", key);
    snprintf(ses, sizeof(ses), "session %ld\n", s);
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    const char *argv[] = {"/fy-attack", "keyring", desc, NULL};
    struct run r;
    run(p, argv, 0, &r);
    ck_assert_msg(!strstr(r.out, payload), "the container read the host's key: %s", r.out);
    ck_assert_msg(!strstr(r.out, ses), "the container holds the host's session keyring: %s", r.out);
    ASSERT_OUT(&r, "session ");
    ASSERT_OUT(&r, "denied ENOKEY keyring search");
    ck_assert_msg(strstr(r.json, "\"keyring\": \"own:"), "%s", r.json);
    run_free(&r);
    const char *argv2[] = {"/fy-attack", "keyread", id, NULL};
    run(p, argv2, 0, &r);
    ck_assert_msg(!strstr(r.out, payload), "the container read the host's key: %s", r.out);
    ASSERT_OUT(&r, "denied EACCES keyread");
    run_free(&r);
    fy_policy_free(p);
    /* (and the host's key is still there: nothing cleared it) */
    ck_assert_int_eq(syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -3, "user", desc, 0), key);
}
END_TEST

/* The image of spec (mkimage.py's JSON) as scratch/name; its reference in
 * ret (ref_size bytes). */
static void make_image_as(const char *name, const char *spec, char *ret, size_t ref_size) {
    char specpath[512], cmd[2048], out[512];
    snprintf(specpath, sizeof(specpath), "%s/spec-%s.json", scratch, name);
    snprintf(out, sizeof(out), "%s/%s", scratch, name);
    FILE *f = fopen(specpath, "w");
    fputs(spec, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s'", mkimage, out, specpath);
    FILE *pp = popen(cmd, "r");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, pp);
    buf[n] = '\0';
    if (pclose(pp) != 0) {
        fprintf(stderr, "mkimage failed\n");
        exit(1);
    }
    json_t *j = json_loads(buf, 0, NULL);
    snprintf(ret, ref_size, "oci:%s/%s@%s", scratch, name, json_string_value(json_object_get(j, "manifest")));
    json_decref(j);
}

static void make_image(void) {
    char spec[4096];
    snprintf(spec, sizeof(spec),
             "{\"config\": {\"Env\": [\"PATH=/bin\", \"IMG=image\", \"ONLY=image\"], \"Cmd\": [\"/bin/sh\", \"-c\", "
             "\"echo cmd-from-image in $(pwd)\"], \"WorkingDir\": \"/srv\", \"User\": \"0\"}, "
             "\"layers\": [{\"busybox\": true}, {\"entries\": [{\"name\": \"etc/motd\", \"data\": "
             "\"hello from the image\\n\"}, {\"name\": \"srv\", \"type\": \"dir\"}, {\"name\": \"fy-attack\", "
             "\"from\": \"%s\", \"mode\": 493}]}]}", attack);
    make_image_as("img", spec, ref, sizeof(ref));
    const char *at = strrchr(ref, '@');
    snprintf(digest, sizeof(digest), "%s", at ? at + 1 : "");
}

/* An image whose /dev is a symbolic link to a host directory: runc 1.1
 * made its /dev links there, on the host, as the container's root (into a
 * host directory, another image's cached layer, the output directory).
 * The image's root is checked before the runtime sees it: refused, typed,
 * naming the path; nothing made in the directory. */
START_TEST(test_image_layout_link_refused) {
    int cg_before = cgroups_named(), b_before = entries("/run/forgeyard-runtime");
    char trap[400], spec[1024], lref[1024];
    snprintf(trap, sizeof(trap), "%s/trap", scratch);
    ck_assert_int_eq(mkdir(trap, 01777), 0);
    ck_assert_int_eq(chmod(trap, 01777), 0);
    snprintf(spec, sizeof(spec),
             "{\"layers\": [{\"busybox\": true}, {\"entries\": [{\"name\": \"dev\", \"type\": \"symlink\", "
             "\"target\": \"%s\"}]}]}", trap);
    make_image_as("img-devlink", spec, lref, sizeof(lref));
    fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
    ck_assert_int_eq(fy_policy_set_image(p, lref, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    struct run r;
    run(p, argv, 0, &r);
    ck_assert_msg(r.outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE, "outcome %d: %s", r.outcome, r.json);
    ck_assert_msg(strstr(r.json, "the image's /dev") && strstr(r.json, "symbolic link"), "%s", r.json);
    ck_assert_int_eq(entries(trap), 0);
    assert_clean(&r, cg_before, b_before);
    run_free(&r);
    fy_policy_free(p);
}
END_TEST

/* An image's WorkingDir below /work/build that the host's build directory
 * lacks: runc made it there, owned by the container's root (the workload
 * could not write in it, later attempts inherited it). Refused at the
 * start instead, as the native backend fails such an attempt; nothing is
 * made in the host's directory. */
START_TEST(test_image_workdir_in_host_dir) {
    /* Each spelling of the same directory (runc resolves "//", "/./" and
     * ".." in the root; they went past a check that compared strings),
     * and one through /proc's magic links, refused at prepare. */
    static const char *const spellings[] = {"/work/build/made/here", "//work/build/made/here",
                                            "/work/./build/made/here", "/work/x/../build//made/./here/",
                                            "/proc/self/root/work/build/made/here"};
    for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
        char build[400], lref[1024], name[32], spec[512];
        snprintf(build, sizeof(build), "%s/wd-build-%zu", scratch, i);
        ck_assert_int_eq(mkdir(build, 0777), 0);
        ck_assert_int_eq(chmod(build, 0777), 0);
        snprintf(name, sizeof(name), "img-wd-%zu", i);
        snprintf(spec, sizeof(spec), "{\"config\": {\"Env\": [\"PATH=/bin\"], \"Cmd\": [\"/bin/pwd\"], "
                                     "\"WorkingDir\": \"%s\"}, \"layers\": [{\"busybox\": true}]}", spellings[i]);
        make_image_as(name, spec, lref, sizeof(lref));
        fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
        ck_assert_int_eq(fy_policy_set_image(p, lref, NULL), 0);
        ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
        fy_prepared *pr = NULL;
        fy_error *e = NULL;
        int rc = fy_prepare(p, NULL, NULL, &pr, &e);
        if (strncmp(spellings[i], "/proc/", 6) == 0) {
            ck_assert_msg(rc < 0 && strstr(fy_error_message(e), "is in /proc"), "%s: %s", spellings[i],
                          rc < 0 ? fy_error_message(e) : "prepared");
        } else {
            ck_assert_msg(rc == 0, "%s", fy_error_message(e));
            fy_handle *h = NULL;
            ck_assert_msg(fy_start(pr, &h, &e) < 0, "%s: started", spellings[i]);
            ck_assert_msg(strstr(fy_error_message(e), "the working directory /work/build/made/here"), "%s: %s",
                          spellings[i], fy_error_message(e));
        }
        fy_error_free(e);
        fy_prepared_free(pr);
        fy_policy_free(p);
        ck_assert_msg(entries(build) == 0, "%s: made in the host's directory", spellings[i]);
    }
}
END_TEST

/* What the host's process carries reaches neither runc nor the container
 * (the adapter's middle process, forked from the host, skipped the reset
 * the other backends' first process makes): a real-time policy (the v1
 * cpu cgroup refused the task: "cgroup: Invalid argument"), a raised nice,
 * a personality. */
START_TEST(test_host_state_not_inherited) {
    char out[400];
    snprintf(out, sizeof(out), "%s/inherited", scratch);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        struct sched_param sp = {.sched_priority = 1};
        if (setpriority(PRIO_PROCESS, 0, -5) < 0 || personality(PER_LINUX32 | ADDR_NO_RANDOMIZE) < 0 ||
            sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
            _exit(10);
        fy_policy *p = policy(true, FY_RUNTIME_ACCEPT_KNOWN_ISSUES);
        fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL);
        const char *argv[] = {"/fy-attack", "inherited", NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        fy_result *res = NULL;
        if (fy_prepare(p, NULL, argv, &pr, NULL) < 0 || fy_start(pr, &h, NULL) < 0)
            _exit(11);
        if (fy_handle_wait(h, 60000000, &res, NULL) != 1)
            _exit(12);
        int o = fy_result_outcome(res);
        fy_result_free(res);
        fy_handle_free(h);
        fy_prepared_free(pr);
        fy_policy_free(p);
        _exit(o == FY_OUTCOME_SUCCEEDED ? 0 : 20 + o);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    char *text = slurp(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host child: %d (20+: the outcome): %s", WEXITSTATUS(st),
                  text);
    ck_assert_msg(strncmp(text, "policy=0 nice=0 ioclass=0 personality=0 ", 40) == 0, "%s", text);
    free(text);
    unlink(out);
}
END_TEST

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MKIMAGE.PY FY-ATTACK\n", argv[0]);
        return 2;
    }
    mkimage = argv[1];
    attack = argv[2];
    if (getuid() != 0 || !have("runc")) {
        fprintf(stderr, "test-runtime: root and runc needed (the adapter runs runc as root only)\n");
        return 77;
    }
    snprintf(scratch, sizeof(scratch), "/tmp/fy-runtime-XXXXXX");
    if (!mkdtemp(scratch) || chmod(scratch, 0755) < 0)
        return 1;
    char cache[600];
    snprintf(cache, sizeof(cache), "%s/cache", scratch);
    setenv("FORGEYARD_IMAGE_CACHE", cache, 1);
    make_image();
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("runtime");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_probe_verdicts);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_run);
    tcase_add_test(tc, test_deadline_cancel);
    tcase_add_test(tc, test_deadline_idle_host);
    tcase_add_test(tc, test_memory_limit);
    tcase_add_test(tc, test_pids_limit);
    tcase_add_test(tc, test_orphan);
    tcase_add_test(tc, test_host_keyring);
    tcase_add_test(tc, test_image_layout_link_refused);
    tcase_add_test(tc, test_image_workdir_in_host_dir);
    tcase_add_test(tc, test_host_state_not_inherited);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
        failed++;
    return failed ? 1 : 0;
}
