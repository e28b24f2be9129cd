/* Capability negotiation against fake backends with scripted capabilities:
 * least cost that satisfies the requirements, visible drops, no silent
 * downgrade, organization floor. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake-backend.h"
#include "policy.h"
#include "prepared.h"

static const char *const ARGV[] = {"/bin/true", NULL};

#define ALL_LINUX FY_CAP_PIDFD, FY_CAP_USERNS, FY_CAP_MOUNTNS, FY_CAP_PIDNS, FY_CAP_NETNS, FY_CAP_IPCNS, \
    FY_CAP_UTSNS, FY_CAP_CGROUPNS, FY_CAP_SECCOMP, FY_CAP_LANDLOCK, FY_CAP_CGROUP_MEMORY, FY_CAP_CGROUP_PIDS, \
    FY_CAP_CGROUP_CPU, FY_CAP_UID_RANGE

static fy_policy *policy(uint32_t profile) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(profile, &p, NULL), 0);
    return p;
}

static int prep(const fy_policy *p, const uint32_t *caps_present, fy_prepared **ret, fy_error **err) {
    fy_caps *c = fake_caps(caps_present);
    ck_assert_ptr_nonnull(c);
    int r = prepare_with_table(fake_table, 3, p, c, ARGV, ret, err);
    fy_caps_free(c);
    return r;
}

START_TEST(test_least_cost_satisfying) {
    /* standard-ci needs namespace; process is cheaper but too weak; vm is
     * usable but costlier: namespace wins. */
    const uint32_t caps[] = {ALL_LINUX, FY_CAP_QEMU_TCG, 0};
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prep(p, caps, &pr, NULL), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "fake-namespace");
    ck_assert_int_eq(fy_prepared_level(pr), FY_LEVEL_NAMESPACE);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_SECCOMP), FY_CONTROL_STATE_ENFORCED);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_IO_LIMIT), FY_CONTROL_STATE_OFF);
    ck_assert_int_eq(fy_prepared_is_impure(pr), 0);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_required_missing_is_refused_with_reason) {
    /* No userns: the namespace backend cannot run; process is too weak; no
     * VM: refused, and the error names what is missing. */
    const uint32_t caps[] = {FY_CAP_PIDFD, FY_CAP_SECCOMP, 0};
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(prep(p, caps, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_null(pr);
    ck_assert_int_eq(fy_error_step(e), FY_STEP_SELECT);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "userns"));
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "fake-namespace"));
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "fake-process: gives process isolation"));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_required_control_missing) {
    /* Everything but seccomp: seccomp is required by standard-ci. The VM
     * could enforce it but is not usable. */
    const uint32_t caps[] = {FY_CAP_PIDFD, FY_CAP_USERNS, FY_CAP_MOUNTNS, FY_CAP_PIDNS, FY_CAP_NETNS, FY_CAP_IPCNS,
                             FY_CAP_UTSNS, 0};
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(prep(p, caps, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "seccomp required"));
    fy_error_free(e);
    /* With a usable VM the same policy runs in the VM rather than weaker. */
    const uint32_t caps_vm[] = {FY_CAP_PIDFD, FY_CAP_USERNS, FY_CAP_MOUNTNS, FY_CAP_PIDNS, FY_CAP_NETNS,
                                FY_CAP_IPCNS, FY_CAP_UTSNS, FY_CAP_KVM, 0};
    ck_assert_int_eq(prep(p, caps_vm, &pr, NULL), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "fake-vm");
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_preferred_dropped_visibly) {
    /* No landlock, no cgroups: preferred controls are dropped and say why. */
    const uint32_t caps[] = {FY_CAP_PIDFD, FY_CAP_USERNS, FY_CAP_MOUNTNS, FY_CAP_PIDNS, FY_CAP_NETNS, FY_CAP_IPCNS,
                             FY_CAP_UTSNS, FY_CAP_SECCOMP, 0};
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prep(p, caps, &pr, NULL), 0);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_LANDLOCK), FY_CONTROL_STATE_DROPPED);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_MEMORY_LIMIT), FY_CONTROL_STATE_DROPPED);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_CGROUPNS), FY_CONTROL_STATE_DROPPED);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_SECCOMP), FY_CONTROL_STATE_ENFORCED);
    char *json = NULL;
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_ptr_nonnull(strstr(json, "\"dropped\""));
    ck_assert_ptr_nonnull(strstr(json, "scripted: missing landlock"));
    fy_free(json);
    fy_prepared_free(pr);
    /* Requiring it instead turns the drop into a refusal. */
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_REQUIRE, NULL), 0);
    fy_error *e = NULL;
    ck_assert_int_eq(prep(p, caps, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "landlock required"));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_preferred_level) {
    /* development: min process, prefers namespace. */
    const uint32_t all[] = {ALL_LINUX, 0};
    const uint32_t no_userns[] = {FY_CAP_PIDFD, FY_CAP_SECCOMP, 0};
    fy_policy *p = policy(FY_PROFILE_DEVELOPMENT);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prep(p, all, &pr, NULL), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "fake-namespace");
    ck_assert_int_eq(fy_prepared_is_impure(pr), 1);
    fy_prepared_free(pr);
    /* Without user namespaces it runs at process level, and says so. */
    ck_assert_int_eq(prep(p, no_userns, &pr, NULL), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "fake-process");
    ck_assert_int_eq(fy_prepared_level(pr), FY_LEVEL_PROCESS);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_USERNS), FY_CONTROL_STATE_DROPPED);
    char *json = NULL;
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_ptr_nonnull(strstr(json, "preferred namespace isolation is not available"));
    fy_free(json);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_high_assurance_never_downgrades) {
    const uint32_t all[] = {ALL_LINUX, 0};
    fy_policy *p = policy(FY_PROFILE_HIGH_ASSURANCE);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(prep(p, all, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "virtual-machine"));
    fy_error_free(e);
    const uint32_t vm[] = {ALL_LINUX, FY_CAP_QEMU_TCG, 0};
    ck_assert_int_eq(prep(p, vm, &pr, NULL), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "fake-vm");
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_floor) {
    /* The host program's floor lifts a development policy to namespace, and
     * a policy file cannot lower it again. */
    const uint32_t no_userns[] = {FY_CAP_PIDFD, FY_CAP_SECCOMP, 0};
    fy_policy *p = policy(FY_PROFILE_DEVELOPMENT);
    ck_assert_int_eq(fy_policy_set_level_floor(p, FY_LEVEL_NAMESPACE, NULL), 0);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prep(p, no_userns, &pr, NULL), FY_E_UNSUPPORTED);
    fy_error *e = NULL;
    const char *doc = "{\"isolation\": {\"min_level\": \"process\"}}";
    ck_assert_int_eq(fy_policy_load_json(p, doc, strlen(doc), &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.isolation.min_level");
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "organization minimum"));
    fy_error_free(e);
    /* A profile switch inside the file keeps the floor: the profile's
     * weaker default is lifted to it (only an explicit request is refused). */
    const char *doc2 = "{\"profile\": \"development\"}";
    ck_assert_int_eq(fy_policy_load_json(p, doc2, strlen(doc2), &e), 0);
    ck_assert_uint_eq(p->min_level, FY_LEVEL_NAMESPACE);
    ck_assert_int_eq(prep(p, no_userns, &pr, NULL), FY_E_UNSUPPORTED);
    ck_assert_int_eq(fy_policy_set_isolation(p, FY_LEVEL_PROCESS, FY_LEVEL_PROCESS, &e), FY_E_POLICY);
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_no_backends) {
    const uint32_t all[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(all);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_with_table(fake_table, 0, p, c, ARGV, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "no sandbox backend"));
    fy_error_free(e);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_argv_validation) {
    const uint32_t all[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(all);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    fy_prepared *pr = NULL;
    const char *const empty[] = {NULL};
    const char *const blank[] = {"", NULL};
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, empty, &pr, NULL), FY_E_INVAL);
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, blank, &pr, NULL), FY_E_INVAL);
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, NULL, &pr, NULL), FY_E_INVAL);
    ck_assert_ptr_null(pr);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_prepared_snapshot_and_secrets) {
    /* The prepared plan is a snapshot: later policy changes do not leak in;
     * secret files are read at prepare time; values never reach JSON. */
    char path[] = "/tmp/fy-test-secret-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "hunter2-secret", 14), 14);
    close(fd);
    const uint32_t all[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(all);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_add_secret_file(p, "tok", FY_SECRET_ENV, "TOKEN", path, NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "inline", FY_SECRET_FILE, "key", "inline-value", 12, NULL), 0);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, ARGV, &pr, NULL), 0);
    unlink(path);
    ck_assert_int_eq(pr->nsecrets, 2);
    ck_assert_int_eq(pr->secrets[0].len, 14);
    ck_assert_int_eq(memcmp(pr->secrets[0].value, "hunter2-secret", 14), 0);
    ck_assert_int_eq(memcmp(pr->secrets[1].value, "inline-value", 12), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_ALLOW, NULL), 0);
    ck_assert_int_eq(pr->policy->net_mode, FY_NET_DENY);
    char *json = NULL;
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_ptr_null(strstr(json, "hunter2"));
    ck_assert_ptr_null(strstr(json, "inline-value"));
    fy_free(json);
    fy_prepared_free(pr);
    /* fy_prepare validates the whole policy again: host network contradicts
     * the netns that standard-ci requires. */
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, ARGV, &pr, &e), FY_E_POLICY);
    ck_assert_str_eq(fy_error_location(e), "$.isolation.controls.netns");
    fy_error_free(e);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_secret_file_missing) {
    const uint32_t all[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(all);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_add_secret_file(p, "tok", FY_SECRET_FILE, "tok", "/nonexistent/fy-secret", NULL), 0);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, ARGV, &pr, &e), FY_E_NOTFOUND);
    ck_assert_int_eq(fy_error_step(e), FY_STEP_SECRET);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "secret tok"));
    fy_error_free(e);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_env_resolution) {
    const uint32_t all[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(all);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    setenv("FY_TEST_ALLOWED", "yes", 1);
    setenv("FY_TEST_HIDDEN", "no", 1);
    ck_assert_int_eq(fy_policy_allow_env(p, "FY_TEST_ALLOWED", NULL), 0);
    ck_assert_int_eq(fy_policy_allow_env(p, "FY_TEST_UNSET", NULL), 0);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prepare_with_table(fake_table, 3, p, c, ARGV, &pr, NULL), 0);
    size_t n = pr->env.n;
    ck_assert_int_eq(n, 3); /* FY_TEST_ALLOWED, LANG, PATH */
    const struct pol_env *e0 = vec_at(&pr->env, 0);
    ck_assert_str_eq(e0->name, "FY_TEST_ALLOWED");
    ck_assert_str_eq(e0->value, "yes");
    fy_prepared_free(pr);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_forked_objects_refuse) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int r = fy_policy_set_limit(p, FY_LIMIT_PIDS, 10, NULL);
        fy_policy_free(p); /* memory only */
        _exit(r == FY_E_FORKED ? 0 : 1);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fy_policy_free(p);
}
END_TEST

/* A backend whose host can enforce every control, but whose compiled plan
 * has nothing for the io limit to act on (backend.h unapplied). */
static int plan_token;
static int unapplied_compile(const struct fy_plan *np, const fy_caps *c, void **ret, fy_error **reterr) {
    (void)np; (void)c; (void)reterr;
    *ret = &plan_token;
    return 0;
}
static const char *unapplied_io(const void *plan, uint32_t control) {
    ck_assert_ptr_eq(plan, &plan_token);
    return control == FY_CONTROL_IO_LIMIT ? "scripted: nothing to throttle" : NULL;
}
static bool unapplied_usable(const fy_caps *c, struct strbuf *why) { (void)c; (void)why; return true; }
static bool unapplied_enforce(const fy_caps *c, uint32_t control, const char **why) {
    (void)c; (void)control; (void)why;
    return true;
}
static const struct fy_backend_ops fake_unapplied = {
    .version = FY_BACKEND_OPS_VERSION, .name = "fake-unapplied", .level = FY_LEVEL_NAMESPACE, .cost = 20,
    .usable = unapplied_usable, .can_enforce = unapplied_enforce, .compile = unapplied_compile,
    .unapplied = unapplied_io,
};

START_TEST(test_plan_unapplied_control) {
    /* The host can (can_enforce), the plan cannot: a preferred io limit is
     * dropped with the backend's reason, in the control and the record; a
     * required one is refused, naming the control. */
    const struct fy_backend_ops *const table[] = {&fake_unapplied};
    const uint32_t caps[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(caps);
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_IO_BPS, 1u << 20, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_IO_LIMIT, FY_MODE_PREFER, NULL), 0);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(prepare_with_table(table, 1, p, c, ARGV, &pr, NULL), 0);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_IO_LIMIT), FY_CONTROL_STATE_DROPPED);
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_MEMORY_LIMIT), FY_CONTROL_STATE_ENFORCED);
    char *json = NULL;
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_msg(strstr(json, "\"state\": \"dropped\",\n      \"why\": \"scripted: nothing to throttle\""), "%s",
                  json);
    fy_free(json);
    fy_prepared_free(pr);
    pr = NULL;
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_IO_LIMIT, FY_MODE_REQUIRE, NULL), 0);
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_with_table(table, 1, p, c, ARGV, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_null(pr);
    ck_assert_str_eq(fy_error_location(e), "$.isolation.controls.io-limit");
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "scripted: nothing to throttle"));
    fy_error_free(e);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

/* A cheap process-level backend whose compile refuses network deny (it has
 * no network namespace), a namespace one that runs anything, and one whose
 * compile fails for another reason than the host. */
static bool cheap_enforce(const fy_caps *c, uint32_t control, const char **why) {
    (void)c;
    if (control <= FY_CONTROL_CGROUPNS || control == FY_CONTROL_UID_RANGE) {
        *why = "scripted: no namespaces";
        return false;
    }
    return true;
}
static int cheap_compile(const struct fy_plan *np, const fy_caps *c, void **ret, fy_error **reterr) {
    (void)c;
    if (np->net_mode != FY_NET_ALLOW)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                       "scripted: network mode deny needs a network namespace");
    *ret = &plan_token;
    return 0;
}
static int broken_compile(const struct fy_plan *np, const fy_caps *c, void **ret, fy_error **reterr) {
    (void)np; (void)c; (void)ret;
    return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.resources.disk", "scripted: a policy error");
}
static const struct fy_backend_ops fake_cheap = {
    .version = FY_BACKEND_OPS_VERSION, .name = "fake-cheap", .level = FY_LEVEL_PROCESS, .cost = 10,
    .usable = unapplied_usable, .can_enforce = cheap_enforce, .compile = cheap_compile,
};
static const struct fy_backend_ops fake_ns_runs = {
    .version = FY_BACKEND_OPS_VERSION, .name = "fake-ns-runs", .level = FY_LEVEL_NAMESPACE, .cost = 20,
    .usable = unapplied_usable, .can_enforce = unapplied_enforce, .compile = unapplied_compile,
};
static const struct fy_backend_ops fake_broken = {
    .version = FY_BACKEND_OPS_VERSION, .name = "fake-broken", .level = FY_LEVEL_PROCESS, .cost = 5,
    .usable = unapplied_usable, .can_enforce = cheap_enforce, .compile = broken_compile,
};

static fy_policy *process_preferred_deny(void) {
    fy_policy *p = policy(FY_PROFILE_STANDARD_CI);
    for (uint32_t ctl = FY_CONTROL_USERNS; ctl <= FY_CONTROL_CGROUPNS; ctl++)
        ck_assert_int_eq(fy_policy_set_control(p, ctl, FY_MODE_PREFER, NULL), 0);
    ck_assert_int_eq(fy_policy_set_isolation(p, FY_LEVEL_PROCESS, FY_LEVEL_PROCESS, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_DENY, NULL), 0);
    return p;
}

START_TEST(test_compile_refusal_falls_to_next_backend) {
    /* Process level preferred, network deny: the cheapest backend's compile
     * refuses the plan; the namespace backend, which the policy accepts,
     * runs it, and the level note says what was passed over. */
    const uint32_t caps[] = {ALL_LINUX, 0};
    fy_caps *c = fake_caps(caps);
    fy_policy *p = process_preferred_deny();
    const struct fy_backend_ops *const table[] = {&fake_ns_runs, &fake_cheap};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(prepare_with_table(table, 2, p, c, ARGV, &pr, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "fake-ns-runs");
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_NETNS), FY_CONTROL_STATE_ENFORCED);
    char *json = NULL;
    ck_assert_int_eq(fy_prepared_to_json(pr, &json, NULL), 0);
    ck_assert_msg(strstr(json, "fake-cheap: scripted: network mode deny needs a network namespace"), "%s", json);
    fy_free(json);
    fy_prepared_free(pr);
    pr = NULL;
    /* Nothing else to run it: the refusal itself is the error. */
    ck_assert_int_eq(prepare_with_table(table + 1, 1, p, c, ARGV, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_null(pr);
    ck_assert_str_eq(fy_error_location(e), "$.network.mode");
    fy_error_free(e);
    e = NULL;
    /* A compile error that is not the host's (FY_E_POLICY) is final. */
    const struct fy_backend_ops *const table2[] = {&fake_ns_runs, &fake_broken};
    ck_assert_int_eq(prepare_with_table(table2, 2, p, c, ARGV, &pr, &e), FY_E_POLICY);
    ck_assert_ptr_null(pr);
    fy_error_free(e);
    fy_caps_free(c);
    fy_policy_free(p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("select");
    TCase *tc = tcase_create("negotiation");
    tcase_add_test(tc, test_least_cost_satisfying);
    tcase_add_test(tc, test_required_missing_is_refused_with_reason);
    tcase_add_test(tc, test_required_control_missing);
    tcase_add_test(tc, test_preferred_dropped_visibly);
    tcase_add_test(tc, test_preferred_level);
    tcase_add_test(tc, test_high_assurance_never_downgrades);
    tcase_add_test(tc, test_floor);
    tcase_add_test(tc, test_no_backends);
    tcase_add_test(tc, test_argv_validation);
    tcase_add_test(tc, test_prepared_snapshot_and_secrets);
    tcase_add_test(tc, test_secret_file_missing);
    tcase_add_test(tc, test_env_resolution);
    tcase_add_test(tc, test_forked_objects_refuse);
    tcase_add_test(tc, test_plan_unapplied_control);
    tcase_add_test(tc, test_compile_refusal_falls_to_next_backend);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
