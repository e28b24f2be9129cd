/* Device leasing (FY_CONTROL_DEVICES), on this host's kernel, with
 * harmless nodes (/dev/fuse, /dev/net/tun, the loop devices, opened
 * read-only and never attached): a leased node is in the sandbox's /dev
 * and opens as leased, an unleased one is not there, and the KERNEL refuses
 * what is not on the list: a process placed in the attempt's device cgroup
 * from outside (root on the host, where nothing else would stop it) is
 * refused unleased nodes, writes to read-only leases and mknod with EPERM.
 * Both mechanisms are run where the probe found them: the cgroup v1
 * devices controller and the cgroup v2 device program (libbpf). As uid
 * 65534 (--rootless) a lease is refused: nothing can enforce it there. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#include "caps.h"
#include "linux/linux-backend.h"
#include "linux/linux-devices.h"

static char scratch[64];
static bool rootless;
/* --guest: inside the QEMU guest of test/vm (pure cgroup v2, a delegated
 * FY_TEST_CGROUP, no fuse or tun module): only the kernel's rule, with the
 * nodes the guest has. */
static bool guest;
/* The nodes of the kernel-rule test: leased read-write, leased read-only,
 * not leased. */
static const char *node_rw = "/dev/fuse", *node_ro, *node_unleased = "/dev/net/tun";

/* A loop device to lease read-only: loop-control, else loop0. */
static const char *loop_node(void) {
    struct stat st;
    if (stat("/dev/loop-control", &st) == 0 && S_ISCHR(st.st_mode))
        return "/dev/loop-control";
    if (stat("/dev/loop0", &st) == 0 && S_ISBLK(st.st_mode))
        return "/dev/loop0";
    return NULL;
}

/* Whether this host has a v1 devices hierarchy holding us (then the probe
 * must have found the v1 mechanism as root), and a cgroup v2 directory of
 * ours (then the device program must work as root). A mechanism the host
 * has and the probe missed fails the test; one the host lacks is skipped. */
static bool host_v1_devices(void) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[512];
    bool found = false;
    while (f && fgets(line, sizeof(line), f))
        found = found || strstr(line, ":devices:") != NULL;
    if (f)
        fclose(f);
    return found;
}

static bool have_node(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "re");
    static char buf[65536];
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* The probe, with one mechanism taken away (NULL: none). */
static fy_caps *caps_with(const char *drop_fact) {
    fy_caps *c = NULL;
    fy_error *e = NULL;
    const char *delegated = guest ? getenv("FY_TEST_CGROUP") : NULL;
    int r = delegated ? fy_probe_cgroup(FY_PROBE_NO_VM, delegated, &c, &e) : fy_probe(FY_PROBE_NO_VM, &c, &e);
    ck_assert_msg(r == 0, "probe: %s", fy_error_message(e));
    if (drop_fact)
        ck_assert_int_eq(caps_set_fact(c, drop_fact, NULL), 0);
    return c;
}

static fy_policy *new_policy(void) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    return p;
}

static fy_prepared *prepare(fy_policy *p, const fy_caps *c, const char *script, const char *out) {
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL), 0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FILE, -1, out, NULL), 0);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    int r = fy_prepare(p, c, argv, &pr, &e);
    ck_assert_msg(r == 0, "prepare: %s", fy_error_message(e));
    return pr;
}

/* Runs script; returns its output (the result in *ret_json when asked). */
static char *run(fy_policy *p, const fy_caps *c, const char *script, char **ret_json) {
    char out[128];
    static int n;
    snprintf(out, sizeof(out), "%s/out-%d", scratch, ++n);
    fy_prepared *pr = prepare(p, c, script, out);
    fy_handle *h = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_start(pr, &h, &e) == 0, "start: %s", fy_error_message(e));
    fy_prepared_free(pr);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    fy_handle_free(h);
    char *text = slurp(out);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "outcome %s (%s): %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)), fy_result_detail(res), text);
    if (ret_json)
        ck_assert_int_eq(fy_result_to_json(res, ret_json, NULL), 0);
    fy_result_free(res);
    unlink(out);
    return text;
}

static const char *const probe_script =
    "for d in /dev/fuse /dev/net/tun /dev/loop-control /dev/loop0; do\n"
    "  if [ -e $d ]; then echo \"present $d\"; else echo \"absent $d\"; fi\n"
    "done\n"
    "if (exec 3<>/dev/fuse) 2>/dev/null; then echo 'fuse rw ok'; else echo 'fuse rw refused'; fi\n"
    "if (exec 3</dev/net/tun) 2>/dev/null; then echo 'tun r ok'; else echo 'tun r refused'; fi\n"
    "(exec 3<>/dev/net/tun) 2>&1 | sed 's/^/tun rw: /'\n"
    "if (exec 3</dev/zero) 2>/dev/null; then echo 'zero ok'; fi\n";

/* ---- in the sandbox ---- */

static void leased_run(const char *drop, const char *mech) {
    fy_caps *c = caps_with(drop);
    fy_policy *p = new_policy();
    const char *loop = loop_node();
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/fuse", 1, NULL), 0);
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/net/tun", 0, NULL), 0);
    if (loop)
        ck_assert_int_eq(fy_policy_add_device(p, loop, 0, NULL), 0);
    char *json = NULL;
    char *out = run(p, c, probe_script, &json);
    ck_assert_msg(strstr(out, "present /dev/fuse") && strstr(out, "present /dev/net/tun"), "%s", out);
    if (loop) {
        char want[64];
        snprintf(want, sizeof(want), "present %s", loop);
        ck_assert_msg(strstr(out, want), "%s", out);
    }
    /* The leases open as leased; a read-only lease refuses a write with
     * EPERM: not the mount (a read-only mount does not stop writes to a
     * device node), not the mode (0666): the device cgroup. */
    ck_assert_msg(strstr(out, "fuse rw ok"), "%s", out);
    ck_assert_msg(strstr(out, "tun r ok"), "%s", out);
    ck_assert_msg(strstr(out, "tun rw: ") && strstr(out, "Operation not permitted"), "%s", out);
    ck_assert_msg(strstr(out, "zero ok"), "%s", out);
    /* The evidence names the mechanism and every lease with its numbers. */
    ck_assert_msg(strstr(json, mech), "%s", json);
    ck_assert_msg(strstr(json, "\"c 10:229\""), "%s", json);
    ck_assert_msg(strstr(json, "\"c 10:200\""), "%s", json);
    free(out);
    free(json);
    fy_policy_free(p);
    fy_caps_free(c);
}

START_TEST(test_leased_v1) {
    fy_caps *c = caps_with(NULL);
    bool have = caps_fact(c, LX_FACT_DEV_V1) != NULL, expected = host_v1_devices();
    ck_assert_msg(have || !expected, "the host has the mechanism, the probe did not find it: %s",
                  caps_fact(c, LX_FACT_DEV_REPORT));
    fy_caps_free(c);
    if (!have)
        return; /* this host has no such mechanism */ /* no v1 devices controller here (the v2 test runs) */
    leased_run(LX_FACT_DEV_BPF, "cgroup v1 devices controller");
}
END_TEST

START_TEST(test_leased_bpf) {
    fy_caps *c = caps_with(NULL);
    bool have = caps_fact(c, LX_FACT_DEV_BPF) != NULL, expected = guest || caps_fact(c, LX_FACT_CG2_DIR) != NULL;
    ck_assert_msg(have || !expected, "the host has the mechanism, the probe did not find it: %s",
                  caps_fact(c, LX_FACT_DEV_REPORT));
    fy_caps_free(c);
    if (!have)
        return; /* this host has no such mechanism */
    leased_run(LX_FACT_DEV_V1, "cgroup v2 device program");
}
END_TEST

START_TEST(test_not_leased_absent) {
    fy_caps *c = caps_with(NULL);
    fy_policy *p = new_policy();
    char *json = NULL;
    char *out = run(p, c, probe_script, &json);
    ck_assert_msg(strstr(out, "absent /dev/fuse") && strstr(out, "absent /dev/net/tun") &&
                      strstr(out, "absent /dev/loop-control") && strstr(out, "absent /dev/loop0"),
                  "%s", out);
    ck_assert_msg(strstr(json, "none: only the standard nodes are bound"), "%s", json);
    free(out);
    free(json);
    fy_policy_free(p);
    fy_caps_free(c);
}
END_TEST

/* ---- the kernel's rule, proven from outside ---- */

/* The attempt's cgroup under parent (forgeyard-<our pid>-*). */
static bool find_attempt_cgroup(const char *parent, char *out, size_t len) {
    DIR *d = opendir(parent);
    if (!d)
        return false;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "forgeyard-%d-", (int)getpid());
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)))
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(out, len, "%s/%s", parent, de->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

/* Result codes of one check in the joined process: 0 opened / made, else errno. */
enum { J_FUSE_RW, J_TUN_R, J_TUN_RW, J_LOOP_R, J_LOOP_RW, J_NULL_RW, J_MKNOD_TUN, J_MKNOD_FUSE, J_N };

/* A child of ours, root on the host, moves itself into the cgroup (procs
 * file) and opens the host's own nodes: only the device cgroup stands
 * between it and them. */
static void joined_checks(const char *cgdir, const char *procs, int res[J_N]) {
    struct stat st_rw, st_un;
    ck_assert_int_eq(stat(node_rw, &st_rw), 0);
    ck_assert_int_eq(stat(node_unleased, &st_un), 0);
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    char mk1[128], mk2[128], path[4200];
    snprintf(mk1, sizeof(mk1), "%s/mknod-tun", scratch);
    snprintf(mk2, sizeof(mk2), "%s/mknod-fuse", scratch);
    snprintf(path, sizeof(path), "%s/%s", cgdir, procs);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(pfd[0]);
        int r[J_N];
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(3);
        close(fd);
        const struct { const char *path; int flags; } o[J_N] = {
            [J_FUSE_RW] = {node_rw, O_RDWR}, [J_TUN_R] = {node_unleased, O_RDONLY},
            [J_TUN_RW] = {node_unleased, O_RDWR}, [J_NULL_RW] = {"/dev/null", O_RDWR},
            [J_LOOP_R] = {node_ro, O_RDONLY}, [J_LOOP_RW] = {node_ro, O_RDWR},
        };
        for (int i = 0; i < J_N; i++) {
            const char *pth = o[i].path;
            int fl = o[i].flags;
            if (i == J_MKNOD_TUN || i == J_MKNOD_FUSE) {
                /* Root may make any node: here the cgroup says no (the
                 * list has no "m"), leased numbers included. */
                const struct stat *sn = i == J_MKNOD_TUN ? &st_un : &st_rw;
                int m = mknod(i == J_MKNOD_TUN ? mk1 : mk2, (sn->st_mode & S_IFMT) | 0600, sn->st_rdev);
                r[i] = m == 0 ? 0 : errno;
                continue;
            }
            if (!pth) {
                r[i] = -1;
                continue;
            }
            /* O_NONBLOCK: nothing waits; the loop device is only opened. */
            int f = open(pth, fl | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
            r[i] = f >= 0 ? 0 : errno;
            if (f >= 0)
                close(f);
        }
        _exit(write(pfd[1], r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 4);
    }
    close(pfd[1]);
    ssize_t got = read(pfd[0], res, sizeof(int) * J_N);
    close(pfd[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "joined process: status %d", st);
    ck_assert_int_eq(got, (ssize_t)(sizeof(int) * J_N));
    unlink(mk1);
    unlink(mk2);
}

static void kernel_rule(const char *drop, const char *parent_fact, const char *procs) {
    fy_caps *c = caps_with(drop);
    const char *parent = caps_fact(c, parent_fact);
    ck_assert_ptr_nonnull(parent);
    char parent_copy[4096];
    snprintf(parent_copy, sizeof(parent_copy), "%s", parent);
    const char *loop = node_ro;
    fy_policy *p = new_policy();
    /* fuse read-write, the loop device read-only; tun not leased. */
    ck_assert_int_eq(fy_policy_add_device(p, node_rw, 1, NULL), 0);
    if (loop)
        ck_assert_int_eq(fy_policy_add_device(p, loop, 0, NULL), 0);
    char out[128];
    snprintf(out, sizeof(out), "%s/out-kernel", scratch);
    fy_prepared *pr = prepare(p, c, "sleep 30", out);
    fy_handle *h = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_start(pr, &h, &e) == 0, "start: %s", fy_error_message(e));
    fy_prepared_free(pr);
    char cgdir[4200];
    ck_assert_msg(find_attempt_cgroup(parent_copy, cgdir, sizeof(cgdir)), "no attempt cgroup under %s", parent_copy);
    int res[J_N];
    joined_checks(cgdir, procs, res);
    ck_assert_int_eq(fy_handle_cancel(h, FY_CANCEL_USER, NULL), 0);
    fy_result *r = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &r, NULL), 1);
    fy_result_free(r);
    fy_handle_free(h);
    unlink(out);
    /* The attempt's cgroup went with it. */
    ck_assert_int_eq(access(cgdir, F_OK), -1);

    ck_assert_int_eq(res[J_NULL_RW], 0);
    ck_assert_int_eq(res[J_FUSE_RW], 0);            /* leased read-write */
    ck_assert_int_eq(res[J_TUN_R], EPERM);          /* not leased: even root is refused */
    ck_assert_int_eq(res[J_TUN_RW], EPERM);
    ck_assert_int_eq(res[J_MKNOD_TUN], EPERM);      /* no node can be made */
    ck_assert_int_eq(res[J_MKNOD_FUSE], EPERM);
    if (loop) {
        ck_assert_int_eq(res[J_LOOP_R], 0);         /* leased read-only */
        ck_assert_int_eq(res[J_LOOP_RW], EPERM);
    }
    fy_policy_free(p);
    fy_caps_free(c);

    /* The control: the same process outside any attempt opens them all
     * (so EPERM above is the list, not the host). */
    int fd = open(node_unleased, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

START_TEST(test_kernel_rule_v1) {
    fy_caps *c = caps_with(NULL);
    bool have = caps_fact(c, LX_FACT_DEV_V1) != NULL, expected = host_v1_devices();
    ck_assert_msg(have || !expected, "the host has the mechanism, the probe did not find it: %s",
                  caps_fact(c, LX_FACT_DEV_REPORT));
    fy_caps_free(c);
    if (!have)
        return; /* this host has no such mechanism */
    kernel_rule(LX_FACT_DEV_BPF, LX_FACT_DEV_V1, "tasks");
}
END_TEST

START_TEST(test_kernel_rule_bpf) {
    fy_caps *c = caps_with(NULL);
    bool have = caps_fact(c, LX_FACT_DEV_BPF) != NULL, expected = guest || caps_fact(c, LX_FACT_CG2_DIR) != NULL;
    ck_assert_msg(have || !expected, "the host has the mechanism, the probe did not find it: %s",
                  caps_fact(c, LX_FACT_DEV_REPORT));
    fy_caps_free(c);
    if (!have)
        return; /* this host has no such mechanism */
    kernel_rule(guest ? NULL : LX_FACT_DEV_V1, LX_FACT_CG2_DIR, "cgroup.procs");
}
END_TEST

/* In the pure cgroup v2 guest: no v1 mechanism, the program verified. */
START_TEST(test_guest_mechanism) {
    fy_caps *c = caps_with(NULL);
    ck_assert_ptr_null(caps_fact(c, LX_FACT_DEV_V1));
    ck_assert_msg(caps_fact(c, LX_FACT_DEV_BPF) != NULL, "%s", caps_fact(c, LX_FACT_DEV_REPORT));
    ck_assert_msg(strstr(caps_fact(c, LX_FACT_DEV_REPORT), "cgroup v2 device program"), "%s",
                  caps_fact(c, LX_FACT_DEV_REPORT));
    fy_caps_free(c);
}
END_TEST

/* The program lx_dev_apply attaches, run by the kernel's verifier on its
 * largest form: every rule shape, the most rules a policy can lead to. */
START_TEST(test_bpf_program_bounds) {
    static struct lx_dev_rule rules[LX_DEV_MAX_RULES];
    size_t n = lx_dev_standard_rules(rules, LX_DEV_MAX_RULES, true);
    ck_assert_uint_eq(n, 5 + 1 + 8);
    while (n < LX_DEV_MAX_RULES) {
        rules[n] = (struct lx_dev_rule){n % 2 ? 'b' : 'c', (uint8_t)(LX_DEV_READ | (n % 3 ? LX_DEV_WRITE : 0)),
                                        n % 7 ? 300 + (uint32_t)n : LX_DEV_ANY, (uint32_t)n};
        n++;
    }
    static unsigned char prog[8 * 9 * (LX_DEV_MAX_RULES + 1)];
    ck_assert_uint_gt(lx_dev_bpf_compile(rules, n, prog, sizeof(prog) / 8), 0);
    ck_assert_uint_eq(lx_dev_bpf_compile(rules, n, prog, 10), 0); /* too small: refused, not truncated */
    char line[64];
    lx_dev_rule_format(&rules[6], line, sizeof(line));
    ck_assert_str_eq(line, "c 136:* rw");
    /* Malformed rules are refused before anything is written. */
    struct lx_dev_rule badr = {'x', LX_DEV_READ, 1, 3};
    char why[256];
    ck_assert_int_eq(lx_dev_apply(LX_DEV_V1, "/nonexistent", NULL, &badr, 1, why, sizeof(why)), -EINVAL);
}
END_TEST

/* ---- what is refused ---- */

static int prepare_err(fy_policy *p, const fy_caps *c, fy_error **e) {
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, c, argv, &pr, e);
    fy_prepared_free(pr);
    return r;
}

START_TEST(test_refused_nodes) {
    fy_caps *c = caps_with(NULL);
    /* A symlink (/dev/stdin), a directory (/dev/shm), a missing node. */
    static const struct { const char *path; int code; } cases[] = {
        {"/dev/stdin", FY_E_UNSAFE}, {"/dev/shm", FY_E_UNSAFE}, {"/dev/fy-no-such-node", FY_E_NOTFOUND},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fy_policy *p = new_policy();
        ck_assert_int_eq(fy_policy_add_device(p, cases[i].path, 0, NULL), 0);
        fy_error *e = NULL;
        int r = prepare_err(p, c, &e);
        ck_assert_msg(r == cases[i].code, "%s: %d %s", cases[i].path, r, fy_error_message(e));
        ck_assert_uint_eq(fy_error_step(e), FY_STEP_DEVICE);
        fy_error_free(e);
        fy_policy_free(p);
    }
    /* Without any device cgroup (both mechanisms taken away), a lease is
     * refused, saying what is missing; without a lease the run goes on. */
    ck_assert_int_eq(caps_set_fact(c, LX_FACT_DEV_V1, NULL), 0);
    ck_assert_int_eq(caps_set_fact(c, LX_FACT_DEV_BPF, NULL), 0);
    fy_policy *p = new_policy();
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/fuse", 1, NULL), 0);
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_err(p, c, &e), FY_E_UNSUPPORTED);
    ck_assert_msg(strstr(fy_error_message(e), "devices required"), "%s", fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
    p = new_policy();
    ck_assert_int_eq(prepare_err(p, c, NULL), 0);
    fy_policy_free(p);
    fy_caps_free(c);
}
END_TEST

START_TEST(test_policy_json) {
    static const struct { const char *doc; int code; const char *loc; } cases[] = {
        {"{\"devices\":{\"allowed\":[{\"path\":\"/dev/fuse\",\"writable\":true}]}}", 0, NULL},
        {"{\"devices\":{\"allowed\":[{\"path\":\"/etc/passwd\"}]}}", FY_E_POLICY, "$.devices.allowed[0].path"},
        {"{\"devices\":{\"allowed\":[{\"path\":\"/dev/../etc/shadow\"}]}}", FY_E_POLICY, "$.devices.allowed[0].path"},
        {"{\"devices\":{\"allowed\":[{\"path\":\"dev/fuse\"}]}}", FY_E_POLICY, "$.devices.allowed[0].path"},
        {"{\"devices\":{\"allowed\":[{\"path\":\"/dev/mem\"}]}}", FY_E_POLICY, "$.devices.allowed[0].path"},
        {"{\"devices\":{\"allowed\":[{\"path\":\"/dev/nvidia0\"}]}}", FY_E_POLICY, "$.devices.allowed[0].path"},
        {"{\"devices\":{\"gpu\":\"leased\",\"allowed\":[{\"path\":\"/dev/nvidia0\"}]}}", 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fy_policy *p = new_policy();
        fy_error *e = NULL;
        int r = fy_policy_load_json(p, cases[i].doc, strlen(cases[i].doc), &e);
        if (r == 0)
            r = fy_policy_validate(p, &e);
        ck_assert_msg(r == cases[i].code, "%s: %d %s", cases[i].doc, r, e ? fy_error_message(e) : "");
        if (cases[i].loc)
            ck_assert_str_eq(fy_error_location(e), cases[i].loc);
        fy_error_free(e);
        fy_policy_free(p);
    }
    /* Bounded: 256 leases at most. */
    fy_policy *p = new_policy();
    char doc[32768] = "{\"devices\":{\"allowed\":[";
    for (int i = 0; i < 257; i++)
        snprintf(doc + strlen(doc), sizeof(doc) - strlen(doc), "%s{\"path\":\"/dev/fy%d\"}", i ? "," : "", i);
    snprintf(doc + strlen(doc), sizeof(doc) - strlen(doc), "]}}");
    fy_error *e = NULL;
    int r = fy_policy_load_json(p, doc, strlen(doc), &e);
    if (r == 0)
        r = fy_policy_validate(p, &e);
    ck_assert_msg(r == FY_E_POLICY || r == FY_E_RANGE, "257 leases: %d", r);
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* ---- as uid 65534 ---- */

START_TEST(test_rootless_refused) {
    fy_caps *c = caps_with(NULL);
    ck_assert_ptr_null(caps_fact(c, LX_FACT_DEV_V1));
    ck_assert_ptr_null(caps_fact(c, LX_FACT_DEV_BPF));
    ck_assert_msg(strncmp(caps_fact(c, LX_FACT_DEV_REPORT), "unavailable: ", 13) == 0, "%s",
                  caps_fact(c, LX_FACT_DEV_REPORT));
    fy_policy *p = new_policy();
    ck_assert_int_eq(fy_policy_add_device(p, "/dev/fuse", 1, NULL), 0);
    fy_error *e = NULL;
    ck_assert_int_eq(prepare_err(p, c, &e), FY_E_UNSUPPORTED);
    ck_assert_msg(strstr(fy_error_message(e), "devices required"), "%s", fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
    /* Without a lease: the standard nodes only. */
    p = new_policy();
    char *out = run(p, c, probe_script, NULL);
    ck_assert_msg(strstr(out, "absent /dev/fuse") && strstr(out, "absent /dev/net/tun"), "%s", out);
    free(out);
    fy_policy_free(p);
    fy_caps_free(c);
}
END_TEST

int main(int argc, char **argv) {
    rootless = argc > 1 && strcmp(argv[1], "--rootless") == 0;
    guest = argc > 1 && strcmp(argv[1], "--guest") == 0;
    if (guest) {
        if (!getenv("FY_IN_GUEST") || !getenv("FY_TEST_CGROUP")) {
            fprintf(stderr, "test-devices --guest: run me in the guest (test/vm/run-in-guest.sh)\n");
            return 2;
        }
        /* The guest's devtmpfs: the kernel log (1:11) leased read-write,
         * the RAM disk (brd) read-only, the console not leased. */
        node_rw = "/dev/kmsg";
        node_ro = "/dev/ram0";
        node_unleased = "/dev/console";
    } else {
        node_ro = loop_node();
    }
    if (getenv("FY_TEST_SCRATCH")) {
        snprintf(scratch, sizeof(scratch), "%s", getenv("FY_TEST_SCRATCH"));
    } else {
        if (getuid() != 0)
            return 77; /* both variants start as root */
        snprintf(scratch, sizeof(scratch), "/tmp/fy-devices-test-XXXXXX");
        if (!mkdtemp(scratch))
            return 1;
        chmod(scratch, 0755);
    }
    if (rootless && getuid() == 0) {
        if (chown(scratch, 65534, 65534) < 0 || setenv("FY_TEST_SCRATCH", scratch, 1) < 0 ||
            setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            return 1;
        execv("/proc/self/exe", argv);
        return 1;
    }
    if (!have_node(node_rw) || !have_node(node_unleased) || (guest && !have_node(node_ro))) {
        fprintf(stderr, "test-devices: /dev/fuse or /dev/net/tun is missing on this host\n");
        return 77;
    }
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("devices");
    tcase_set_timeout(tc, 120);
    if (rootless) {
        tcase_add_test(tc, test_rootless_refused);
    } else if (guest) {
        tcase_add_test(tc, test_guest_mechanism);
        tcase_add_test(tc, test_kernel_rule_bpf);
    } else {
        tcase_add_test(tc, test_leased_v1);
        tcase_add_test(tc, test_leased_bpf);
        tcase_add_test(tc, test_not_leased_absent);
        tcase_add_test(tc, test_kernel_rule_v1);
        tcase_add_test(tc, test_kernel_rule_bpf);
        tcase_add_test(tc, test_bpf_program_bounds);
        tcase_add_test(tc, test_refused_nodes);
        tcase_add_test(tc, test_policy_json);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (!rootless || getuid() == 0) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", scratch);
        if (system(cmd) != 0)
            return 1;
    } else {
        rmdir(scratch);
    }
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
