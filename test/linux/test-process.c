/* A host where user namespaces are denied, simulated without touching host
 * settings: the test process installs a seccomp filter that fails
 * unshare/clone(CLONE_NEWUSER) with EPERM (and clone3 with ENOSYS, whose
 * flags a filter cannot read). There, the probe must say so, a policy that
 * requires namespace isolation must be refused naming what is missing, and
 * a policy that accepts the process level must run at that level — own
 * process tree, Landlock, seccomp, rlimits — and report it honestly. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <stddef.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#include "policy.h" /* policy_test_legacy_cgroups: tests only */

static char scratch[64];
static char attack[160];

static void deny_userns(void) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)), 0);
    ck_assert_int_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)), 0);
    ck_assert_int_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), 0);
    ck_assert_int_eq(seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1), 0);
    ck_assert_int_eq(seccomp_load(ctx), 0);
    seccomp_release(ctx);
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

static fy_result *run(fy_policy *p, const char *const *argv, char **out) {
    char path[128];
    static int n;
    snprintf(path, sizeof(path), "%s/out-%d-%d", scratch, (int)getpid(), ++n);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, path, NULL), 0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FILE, -1, path, NULL), 0);
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    int r = fy_prepare(p, NULL, argv, &pr, &e);
    ck_assert_msg(r == 0, "prepare: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "linux-process");
    ck_assert_int_eq(fy_prepared_is_impure(pr), 1);
    ck_assert_int_eq(fy_prepared_level(pr), FY_LEVEL_PROCESS);
    fy_handle *h = NULL;
    { fy_error *se = NULL; int sr = fy_start(pr, &h, &se); ck_assert_msg(sr == 0, "start: %s", fy_error_message(se)); }
    fy_prepared_free(pr);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    fy_handle_free(h);
    *out = slurp(path);
    unlink(path);
    return res;
}

/* json without its white space (a static copy, for matching its arrays). */
static const char *squeezed(const char *json) {
    static char buf[65536];
    size_t n = 0;
    for (const char *c = json; *c && n + 1 < sizeof(buf); c++)
        if (*c != ' ' && *c != '\n')
            buf[n++] = *c;
    buf[n] = '\0';
    return buf;
}

/* Whether the process (a /proc entry name) can be this test process's: a
 * process in another host's forgeyard cgroup is another test run's (several
 * suites may run on one machine); one in none is counted (rootless
 * sandboxes have no cgroup of their own). A process cannot leave its
 * sandbox's cgroup, so one that escaped its sandbox is still counted. */
static bool of_this_run(const char *pid) {
    char path[64], cg[4096] = {0}, mine[48];
    snprintf(path, sizeof(path), "/proc/%s/cgroup", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t k = fd >= 0 ? read(fd, cg, sizeof(cg) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (k <= 0 || !strstr(cg, "/forgeyard-"))
        return true;
    snprintf(mine, sizeof(mine), "/forgeyard-%d-", (int)getpid());
    return strstr(cg, mine) != NULL;
}

/* This run's tag: a number that sleep adds (0.00PID seconds) and fy-attack
 * ignores, on the command line of every process a test counts, so that
 * another run's or another engineer's processes are never counted as ours. */
static const char *tag(void) {
    static char t[32];
    if (!t[0]) /* made by main, so that the processes a test forks share it */
        snprintf(t, sizeof(t), "0.00%d", (int)getpid());
    return t;
}

/* Processes of this run whose command line holds needle and the tag; with
 * in_freezer, only those that sit in a v1 freezer cgroup of ours. */
static int procs_with(const char *needle, bool in_freezer) {
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[64], buf[256] = {0}, cg[4096] = {0};
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t k = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        for (ssize_t i = 0; i < k; i++)
            if (!buf[i])
                buf[i] = ' ';
        if (k <= 0 || !strstr(buf, needle) || !strstr(buf, tag()) || !of_this_run(e->d_name))
            continue;
        if (in_freezer) {
            snprintf(path, sizeof(path), "/proc/%s/cgroup", e->d_name);
            fd = open(path, O_RDONLY | O_CLOEXEC);
            k = fd >= 0 ? read(fd, cg, sizeof(cg) - 1) : -1;
            if (fd >= 0)
                close(fd);
            const char *fz = k > 0 ? strstr(cg, ":freezer:/") : NULL;
            if (!fz || !strstr(fz, "forgeyard-"))
                continue;
        }
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static int count_procs_with(const char *needle) { return procs_with(needle, false); }

START_TEST(test_userns_denied_host) {
    deny_userns();
    fy_caps *c = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_FRESH | FY_PROBE_NO_VM, &c, NULL), 0);
    ck_assert_int_eq(fy_caps_has(c, FY_CAP_USERNS), 0);
    ck_assert_ptr_nonnull(strstr(fy_caps_reason(c, FY_CAP_USERNS), "EPERM"));
    ck_assert_int_eq(fy_caps_max_level(c), FY_LEVEL_PROCESS);
    fy_caps_free(c);

    /* standard-ci requires namespace isolation: refused, naming userns. */
    fy_policy *ci = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &ci, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(ci, NULL, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "userns"));
    fy_error_free(e);
    fy_policy_free(ci);

    /* A policy that accepts the process level runs there and says so. */
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    char build[128], outside[128];
    snprintf(build, sizeof(build), "%s/build", scratch);
    snprintf(outside, sizeof(outside), "%s-outside", scratch);
    mkdir(build, 0777);
    chmod(build, 0777);
    mkdir(outside, 0777);
    chmod(outside, 0777);
    ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
    /* A runtime path that is a symlink to a file: readable (its Landlock
     * rule takes a file's rights, not a directory's). */
    char rt_file[128], rt_link[128];
    snprintf(rt_file, sizeof(rt_file), "%s/rt-file", scratch);
    snprintf(rt_link, sizeof(rt_link), "%s/rt-link", scratch);
    FILE *rf = fopen(rt_file, "we");
    ck_assert_ptr_nonnull(rf);
    fputs("RUNTIME-FILE\n", rf);
    fclose(rf);
    chmod(rt_file, 0644);
    ck_assert_int_eq(symlink(rt_file, rt_link), 0);
    ck_assert_int_eq(fy_policy_add_runtime_path(p, rt_link, NULL), 0);
    char script[2048];
    snprintf(script, sizeof(script),
             "echo HOME=$HOME; pwd; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status;"
             " echo x > %s/pwned 2>/dev/null || echo OUTSIDE_DENIED;"
             " echo x > built && echo BUILD_RW; cat /etc/shadow 2>/dev/null || echo SHADOW_DENIED;"
             " ls %s >/dev/null 2>&1 || echo LIST_DENIED; echo x > $HOME/h && echo HOME_RW;"
             " getent services http >/dev/null && echo SERVICES_OK;"
             " cat /etc/ssl/certs/ca-certificates.crt >/dev/null 2>&1 && echo CERTS_OK;"
             " ls /etc/ssl >/dev/null 2>&1 || echo SSL_DIR_DENIED; cat %s;"
             /* a tree deeper than the removers once went (256), with a
              * directory closed to its owner at the bottom */
             " (cd $HOME && i=0; while [ $i -lt 400 ]; do mkdir d && cd d || break; i=$((i+1)); done;"
             " mkdir locked && touch locked/f && chmod 000 locked; echo DEEP=$i);"
             " %s daemon 765432 %s",
             outside, outside, rt_link, attack, tag());
    const char *sh[] = {"/bin/sh", "-c", script, NULL};
    char *out = NULL;
    fy_result *res = run(p, sh, &out);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)), fy_result_detail(res), out);
    ck_assert_int_eq(fy_result_level(res), FY_LEVEL_PROCESS);
    ck_assert_ptr_nonnull(strstr(out, "HOME=/dev/shm/forgeyard-attempt-"));
    ck_assert_msg(strstr(out, build), "workdir: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "CapEff:\t0000000000000000"));
    ck_assert_ptr_nonnull(strstr(out, "NoNewPrivs:\t1"));
    ck_assert_ptr_nonnull(strstr(out, "Seccomp:\t2"));
    ck_assert_ptr_nonnull(strstr(out, "OUTSIDE_DENIED"));
    ck_assert_ptr_nonnull(strstr(out, "BUILD_RW"));
    ck_assert_ptr_nonnull(strstr(out, "SHADOW_DENIED"));
    ck_assert_ptr_nonnull(strstr(out, "LIST_DENIED"));
    ck_assert_ptr_nonnull(strstr(out, "HOME_RW"));
    /* The host's service names, and (the development profile reaches the
     * network) its CA certificates, but not /etc/ssl itself (its
     * openssl.cnf only, test_process_level_system_config). */
    if (access("/etc/services", R_OK) == 0)
        ck_assert_msg(strstr(out, "SERVICES_OK"), "%s", out);
    if (access("/etc/ssl/certs/ca-certificates.crt", R_OK) == 0)
        ck_assert_msg(strstr(out, "CERTS_OK"), "%s", out);
    ck_assert_msg(strstr(out, "SSL_DIR_DENIED"), "%s", out);
    ck_assert_msg(strstr(out, "RUNTIME-FILE"), "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "ok daemonised"));
    ck_assert_msg(strstr(out, "DEEP=400\n"), "%s", out);
    /* The daemon did not survive the attempt, nor did its directory. */
    ck_assert_int_eq(count_procs_with("sleep 765432"), 0);
    char home[256];
    const char *h = strstr(out, "HOME=") + 5;
    snprintf(home, sizeof(home), "%.*s", (int)strcspn(h, "\n"), h);
    ck_assert_int_eq(access(home, F_OK), -1);
    *strrchr(home, '/') = '\0'; /* the attempt directory */
    ck_assert_int_eq(access(home, F_OK), -1);
    uint64_t left = 1;
    ck_assert_int_eq(fy_result_cleanup(res, FY_LEFT_FILES, &left), 0);
    ck_assert_int_eq(left, 0);
    char *json = NULL;
    ck_assert_int_eq(fy_result_to_json(res, &json, NULL), 0);
    /* (as root, the IPC namespace alone: test_process_level_ipc) */
    ck_assert_msg(strstr(squeezed(json), getuid() == 0 ? "\"namespaces\":[\"ipc\"]" : "\"namespaces\":[]"), "%s", json);
    ck_assert_ptr_nonnull(strstr(json, "\"level\": \"process\""));
    ck_assert_ptr_nonnull(strstr(json, "confined by Landlock"));
    /* No tmpfs, so no size: said, not claimed. */
    ck_assert_msg(strstr(json, "\"scratch\": \"not enforced: the process level"), "%s", json);
    fy_free(json);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
    char pwned[160];
    snprintf(pwned, sizeof(pwned), "%s/pwned", outside);
    ck_assert_int_eq(access(pwned, F_OK), -1);
    rmdir(outside);
}
END_TEST

/* The policy's rlimits apply at the process level too: soft and hard, so
 * the workload cannot raise them (this host's own are nofile 20000 or
 * more, fsize unlimited, core hard unlimited); past nofile an open fails
 * with EMFILE, past fsize (SIGXFSZ ignored) a write with EFBIG. */
START_TEST(test_process_level_rlimits) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_NOFILE, 64, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_FSIZE, 1 << 20, NULL), 0);
    char script[1024];
    snprintf(script, sizeof(script),
             "grep -E '^Max (open files|file size|core file size) ' /proc/self/limits | tr -s ' ';"
             " (ulimit -H -n 65) 2>/dev/null && echo NOFILE_RAISED; %s openfiles 1000;"
             " trap '' XFSZ; %s fill \"$HOME/big\" 2000000; true",
             attack, attack);
    const char *sh[] = {"/bin/sh", "-c", script, NULL};
    char *out = NULL;
    fy_result *res = run(p, sh, &out);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)), out);
    ck_assert_msg(strstr(out, "Max open files 64 64 files"), "%s", out);
    ck_assert_msg(strstr(out, "Max file size 1048576 1048576 bytes"), "%s", out);
    ck_assert_msg(strstr(out, "Max core file size 1 1 bytes"), "%s", out); /* (the kernel's "no dump anywhere") */
    ck_assert_msg(!strstr(out, "RAISED"), "%s", out);
    ck_assert_msg(strstr(out, "denied EMFILE open after fd 63\n"), "%s", out);
    ck_assert_msg(strstr(out, "denied EFBIG write after 1048576 bytes\n"), "%s", out);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

/* A forked copy of the host frees its copy of a running attempt's handle,
 * as fy_handle_free(3) says to: the sandbox, its HOME and TMPDIR (the
 * attempt directory) are the parent's and untouched. (The child's free
 * removed the directory under the parent's running workload.) */
START_TEST(test_process_level_fork_free) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    char path[128];
    snprintf(path, sizeof(path), "%s/fork-out-%d", scratch, (int)getpid());
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, path, NULL), 0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FILE, -1, path, NULL), 0);
    /* (2 s: the fork's child has freed its copy long before; were the
     * machine so slow it had not, the test would pass, never fail, wrongly) */
    const char *sh[] = {"/bin/sh", "-c",
                        "sleep 2; test -d \"$HOME\" && echo HOME-THERE; echo x >\"$TMPDIR/f\" && echo TMP-WRITTEN",
                        NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_prepare(p, NULL, sh, &pr, &e) == 0, "prepare: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "linux-process");
    fy_handle *h = NULL;
    ck_assert_msg(fy_start(pr, &h, &e) == 0, "start: %s", fy_error_message(e));
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        fy_handle_free(h);
        fy_prepared_free(pr);
        fy_policy_free(p);
        _exit(0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    char *out = slurp(path);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED && strstr(out, "HOME-THERE") &&
                      strstr(out, "TMP-WRITTEN"),
                  "outcome %s: %s", fy_outcome_name((uint32_t)fy_result_outcome(res)), out);
    free(out);
    unlink(path);
    fy_result_free(res);
    fy_handle_free(h);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

/* A process-level sandbox killed (output cap, a live handle freed) is
 * killed and reaped by its supervisor: nothing is reparented into a host
 * that is a child subreaper (runners and service managers are), and the
 * result's processes_left is 0. (The cgroup kill took the supervisor with
 * its tree, whose corpses came to the host as zombies.) */
START_TEST(test_process_level_kill_reaps) {
    deny_userns();
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    for (int i = 0; i < 6; i++) {
        fy_policy *p = NULL;
        ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
        ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_OUTPUT, 100000, NULL), 0);
        ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_NULL, -1, NULL, NULL), 0);
        char path[128];
        snprintf(path, sizeof(path), "%s/kill-out-%d", scratch, (int)getpid());
        ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, path, NULL), 0);
        const char *sh[] = {"/bin/sh", "-c", "sleep 30 & (sleep 31 &); yes", NULL};
        fy_prepared *pr = NULL;
        fy_error *e = NULL;
        ck_assert_msg(fy_prepare(p, NULL, sh, &pr, &e) == 0, "prepare: %s", fy_error_message(e));
        ck_assert_str_eq(fy_prepared_backend(pr), "linux-process");
        fy_handle *h = NULL;
        ck_assert_msg(fy_start(pr, &h, &e) == 0, "start: %s", fy_error_message(e));
        if (i % 2 == 0) {
            fy_result *res = NULL;
            ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
            ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_RESOURCE_EXCEEDED);
            uint64_t left = 99;
            ck_assert_int_eq(fy_result_cleanup(res, FY_LEFT_PROCESSES, &left), 0);
            ck_assert_msg(left == 0, "attempt %d: processes_left %llu", i, (unsigned long long)left);
            fy_result_free(res);
        } else {
            usleep(200000);
        }
        fy_handle_free(h); /* (odd rounds: a live handle, killed by the free) */
        fy_prepared_free(pr);
        fy_policy_free(p);
        unlink(path);
        usleep(100000);
        int st;
        pid_t z = waitpid(-1, &st, WNOHANG);
        ck_assert_msg(z <= 0, "attempt %d: process %d of the sandbox came to the host (a subreaper) to be reaped", i,
                      (int)z);
    }
}
END_TEST

/* HOME and TMPDIR are the workload's whatever the host's umask (0277 made
 * them read-only to it). */
START_TEST(test_process_level_host_umask) {
    deny_userns();
    /* (the state directory new, made under that umask: it was left 0000
     * or 0500, and every later start of this user failed, FY_E_DENIED) */
    char state[128];
    snprintf(state, sizeof(state), "%s/state-umask", scratch);
    for (int round = 0; round < 3; round++) {
        mode_t um = umask(round == 0 ? 0277 : round == 1 ? 0177 : 022);
        if (round == 1)
            rmdir(state);
        fy_policy *p = NULL;
        ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
        ck_assert_int_eq(fy_policy_set_state_dir(p, state, NULL), 0);
        const char *sh[] = {"/bin/sh", "-c", "echo x >\"$HOME/f\" && echo x >\"$TMPDIR/f\" && echo WROTE-BOTH", NULL};
        char *out = NULL;
        fy_result *res = run(p, sh, &out);
        umask(um);
        ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED && strstr(out, "WROTE-BOTH"), "round %d: %s: %s",
                      round, fy_outcome_name((uint32_t)fy_result_outcome(res)), out);
        free(out);
        fy_result_free(res);
        fy_policy_free(p);
        struct stat st;
        ck_assert_int_eq(stat(state, &st), 0);
        ck_assert_msg((st.st_mode & 07777) == 0700, "round %d: the state directory is %o", round, st.st_mode & 07777);
    }
}
END_TEST

/* A workspace path reached through a symbolic link (planted, as a
 * hostile tree or an earlier attempt can, or swapped in between
 * fy_prepare and fy_start) does not give the workload the link's target:
 * Landlock is the only barrier at this level, and its rule was opened
 * through the link. The start is refused (ELOOP), nothing is written. */
static bool linked_build_refused(const char *build, const char *swap_from, const char *victim) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, build, NULL), 0);
    char script[512];
    snprintf(script, sizeof(script), "echo x > %s/pwned; echo x > inbuild", victim);
    const char *sh[] = {"/bin/sh", "-c", script, NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_prepare(p, NULL, sh, &pr, &e) == 0, "prepare: %s", fy_error_message(e));
    if (swap_from) { /* (the real directory aside, a link in its place) */
        char aside[200];
        snprintf(aside, sizeof(aside), "%s.aside", build);
        ck_assert_int_eq(rename(build, aside), 0);
        ck_assert_int_eq(symlink(swap_from, build), 0);
    }
    fy_handle *h = NULL;
    fy_result *res = NULL;
    int r = fy_start(pr, &h, &e);
    bool refused = r < 0;
    if (r == 0) {
        ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
        refused = fy_result_outcome(res) == FY_OUTCOME_INFRASTRUCTURE_FAILURE;
        fy_result_free(res);
        fy_handle_free(h);
    } else {
        ck_assert_msg(fy_error_os_code(e) == ELOOP, "start: %s", fy_error_message(e));
        fy_error_free(e);
    }
    fy_prepared_free(pr);
    fy_policy_free(p);
    char pwned[200];
    snprintf(pwned, sizeof(pwned), "%s/pwned", victim);
    bool written = access(pwned, F_OK) == 0;
    snprintf(pwned, sizeof(pwned), "%s/inbuild", victim);
    written = written || access(pwned, F_OK) == 0;
    return refused && !written;
}

START_TEST(test_process_level_workspace_links) {
    deny_userns();
    char victim[128], ws[128], link[160], real[160], deep[200];
    snprintf(victim, sizeof(victim), "%s/victim", scratch);
    snprintf(ws, sizeof(ws), "%s/ws", scratch);
    ck_assert_int_eq(mkdir(victim, 0777), 0);
    ck_assert_int_eq(chmod(victim, 0777), 0);
    ck_assert_int_eq(mkdir(ws, 0777), 0);
    /* The build directory a link, and a link on the way to it. */
    snprintf(link, sizeof(link), "%s/b", ws);
    ck_assert_int_eq(symlink(victim, link), 0);
    ck_assert_msg(linked_build_refused(link, NULL, victim), "a linked build directory");
    char vsub[160];
    snprintf(vsub, sizeof(vsub), "%s/sub", victim);
    ck_assert_int_eq(mkdir(vsub, 0777), 0);
    ck_assert_int_eq(chmod(vsub, 0777), 0);
    snprintf(deep, sizeof(deep), "%s/b/sub", ws);
    ck_assert_msg(linked_build_refused(deep, NULL, vsub), "a link on the build directory's path");
    /* Swapped in after fy_prepare. */
    snprintf(real, sizeof(real), "%s/real", ws);
    ck_assert_int_eq(mkdir(real, 0777), 0);
    ck_assert_int_eq(chmod(real, 0777), 0);
    ck_assert_msg(linked_build_refused(real, victim, victim), "a link swapped in after fy_prepare");
    /* (the control: the real directory, put back, runs) */
    unlink(real);
    char aside[200];
    snprintf(aside, sizeof(aside), "%s.aside", real);
    ck_assert_int_eq(rename(aside, real), 0);
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_build(p, real, NULL), 0);
    const char *sh[] = {"/bin/sh", "-c", "echo x > inbuild && echo WROTE", NULL};
    char *out = NULL;
    fy_result *res = run(p, sh, &out);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED && strstr(out, "WROTE"), "control: %s", out);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s' '%s'", victim, ws);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The names of /dev/shm's attempt directories, one a line, into buf. */
static void shm_attempts(char *buf, size_t len) {
    buf[0] = '\0';
    DIR *d = opendir("/dev/shm");
    struct dirent *de;
    size_t used = 0;
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, "forgeyard-attempt-", 18) && used + strlen(de->d_name) + 2 < len)
            used += (size_t)snprintf(buf + used, len - used, "%s\n", de->d_name);
    if (d)
        closedir(d);
}

/* Starts that fail for want of descriptors leave no attempt directory that
 * nothing can find: removed, or kept in a record fy_gc removes. (The
 * removal needed descriptors too, failed, and the record was dropped.) */
START_TEST(test_process_level_start_fd_pressure) {
    deny_userns();
    char state[128];
    snprintf(state, sizeof(state), "%s/state-XXXXXX", scratch);
    ck_assert_ptr_nonnull(mkdtemp(state));
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_state_dir(p, state, NULL), 0);
    const char *sh[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_prepare(p, NULL, sh, &pr, &e) == 0, "prepare: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "linux-process");
    static char before[1 << 16], after[1 << 16];
    shm_attempts(before, sizeof(before));
    int base = 0;
    DIR *fdd = opendir("/proc/self/fd");
    while (fdd && readdir(fdd))
        base++;
    if (fdd)
        closedir(fdd);
    struct rlimit old;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    int failed = 0;
    for (int lim = base; lim <= base + 24; lim++) {
        struct rlimit rl = {(rlim_t)lim, old.rlim_max};
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
        fy_handle *h = NULL;
        int r = fy_start(pr, &h, &e);
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
        if (r < 0) {
            failed++;
            fy_error_free(e);
            e = NULL;
            continue;
        }
        fy_result *res = NULL;
        ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
        fy_result_free(res);
        fy_handle_free(h);
    }
    ck_assert_msg(failed > 0, "no start failed for want of descriptors");
    ck_assert_int_eq(fy_gc(state, 0, NULL, NULL), 0);
    shm_attempts(after, sizeof(after));
    for (char *l = after, *nl; *l; l = nl + 1) {
        nl = strchr(l, '\n');
        *nl = '\0';
        char needle[64];
        snprintf(needle, sizeof(needle), "%s\n", l);
        ck_assert_msg(strstr(before, needle), "/dev/shm/%s was left by a start that failed, and no record names it", l);
    }
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

/* Landlock's scoping (ABI 6) is what keeps a process-level workload, which
 * shares the host's pid and network namespaces, from signalling a host
 * process of its own uid and from connecting to a host abstract unix
 * socket: both EPERM, the process alive and the listener untouched.
 * Skipped only where the probe reports an ABI below 6. */
/* The system configuration common tools treat a refusal of as fatal (git,
 * OpenSSL, pip's distribution probe) is readable at the process level,
 * where it is the host's; each was EACCES under Landlock. */
START_TEST(test_process_level_system_config) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    const char *sh[] = {"/bin/sh", "-c",
                        "for f in /etc/gitconfig /etc/ssl/openssl.cnf /etc/debian_version /etc/os-release; do "
                        "[ -e $f ] || continue; cat $f >/dev/null || echo unreadable $f; done; echo done", NULL};
    char *out = NULL;
    fy_result *res = run(p, sh, &out);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    ck_assert_msg(out && strcmp(out, "done\n") == 0, "system configuration at the process level: %s", out);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

/* A host process of uid (the workload's), waiting until *go, the test's
 * end of its pipe, is closed (bounded by the test); exits 0, or 1 when it
 * could not take the uid. */
static pid_t host_process_as(uid_t uid, int *go) {
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[1]);
        if ((getuid() != uid && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                                 setresuid(uid, uid, uid) < 0)))
            _exit(1);
        char ch;
        (void)!read(p[0], &ch, 1);
        _exit(0);
    }
    close(p[0]);
    *go = p[1];
    return pid;
}

START_TEST(test_process_level_landlock_scoping) {
    deny_userns();
    fy_caps *c = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_NO_VM, &c, NULL), 0);
    int64_t abi = 0;
    if (fy_caps_has(c, FY_CAP_LANDLOCK) != 1 || fy_caps_value(c, FY_CAP_LANDLOCK, &abi) != 0)
        abi = 0;
    fy_caps_free(c);
    if (abi < 6) {
        fprintf(stderr, "SKIP test_process_level_landlock_scoping: the probe reports Landlock ABI %lld\n",
                (long long)abi);
        return;
    }
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_REQUIRE, NULL), 0);
    /* The workload's uid (an unprivileged one as root, the caller's rootless). */
    const char *id[] = {"/usr/bin/id", "-u", NULL};
    char *out = NULL;
    fy_result *res = run(p, id, &out);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    uid_t uid = (uid_t)strtoul(out, NULL, 10);
    ck_assert_msg(uid != 0, "the workload runs as root: %s", out);
    free(out);
    fy_result_free(res);
    /* A host process of that uid, and a host abstract socket. */
    int go = -1;
    pid_t victim = host_process_as(uid, &go);
    char name[64];
    snprintf(name, sizeof(name), "fy-test-scope-%d", (int)getpid());
    int us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    memcpy(ua.sun_path + 1, name, strlen(name));
    ck_assert_int_eq(bind(us, (struct sockaddr *)&ua,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))), 0);
    ck_assert_int_eq(listen(us, 4), 0);
    char script[512];
    snprintf(script, sizeof(script), "%s kill %d %s; %s abstract %s %s; true", attack, (int)victim, tag(), attack,
             name, tag());
    const char *sh[] = {"/bin/sh", "-c", script, NULL};
    res = run(p, sh, &out);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)), out);
    ck_assert_msg(strstr(out, "denied EPERM kill\n"), "a host process of the workload's uid (%u): %s", (unsigned)uid,
                  out);
    ck_assert_msg(strstr(out, "denied EPERM connect abstract\n"), "%s", out);
    int st = 0;
    ck_assert_int_eq(waitpid(victim, &st, WNOHANG), 0); /* still alive */
    struct pollfd pf = {.fd = us, .events = POLLIN};
    ck_assert_int_eq(poll(&pf, 1, 0), 0); /* nothing reached the listener */
    close(go);
    ck_assert_int_eq(waitpid(victim, &st, 0), victim);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the host process: status 0x%x", st);
    close(us);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

/* Without a pid namespace the workload sees the host's processes, and the
 * calls that change another process's limits, priority, CPUs and I/O class
 * are judged by the user id alone (Landlock does not look at them): a host
 * process of the workload's uid (as root, the one namespace sandboxes'
 * workloads map to; rootless, the caller: its own host program) keeps its
 * RLIMIT_NOFILE, nice, CPUs and I/O class; the workload still sets its own. */
START_TEST(test_process_level_other_processes) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    const char *id[] = {"/usr/bin/id", "-u", NULL};
    char *out = NULL;
    fy_result *res = run(p, id, &out);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    uid_t uid = (uid_t)strtoul(out, NULL, 10);
    free(out);
    fy_result_free(res);
    int go = -1;
    pid_t victim = host_process_as(uid, &go);
    char script[512];
    snprintf(script, sizeof(script), "%s others %d %s", attack, (int)victim, tag());
    const char *sh[] = {"/bin/sh", "-c", script, NULL};
    res = run(p, sh, &out);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(res)), out);
    static const char *const calls[] = {"prlimit", "setpriority", "setaffinity", "setscheduler", "ioprio"};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        char want[64];
        snprintf(want, sizeof(want), "denied EPERM %s\n", calls[i]);
        ck_assert_msg(strstr(out, want), "a host process of the workload's uid (%u): %s", (unsigned)uid, out);
    }
    ck_assert_msg(strstr(out, "self ok\n"), "%s", out);
    /* (read through /proc: prlimit(2) on another user's process needs
     * CAP_SYS_RESOURCE, which a test as root may lack) */
    char path[64], limits[4096];
    snprintf(path, sizeof(path), "/proc/%d/limits", (int)victim);
    FILE *f = fopen(path, "re");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(limits, 1, sizeof(limits) - 1, f);
    fclose(f);
    limits[n] = '\0';
    const char *nofile = strstr(limits, "Max open files");
    ck_assert_ptr_nonnull(nofile);
    unsigned long soft = 0;
    ck_assert_int_eq(sscanf(nofile + strlen("Max open files"), "%lu", &soft), 1);
    ck_assert_msg(soft != 3, "the host process's RLIMIT_NOFILE was set to 3");
    errno = 0;
    ck_assert_int_eq(getpriority(PRIO_PROCESS, (id_t)victim), 0);
    ck_assert_int_eq(sched_getscheduler(victim), SCHED_OTHER);
    close(go);
    int st = 0;
    ck_assert_int_eq(waitpid(victim, &st, 0), victim);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the host process: status 0x%x", st);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

/* Starts fy-attack ignore-term and drives the handle until both of its
 * processes (the workload and its child) run. */
/* Whether the host's IPC namespace holds an object of key (the first
 * column of /proc/sysvipc/{shm,msg,sem}, in decimal) or the message queue
 * name. */
static bool host_has_ipc(key_t key, const char *mq) {
    static const char *const kinds[] = {"/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem"};
    for (size_t i = 0; i < 3; i++) {
        FILE *f = fopen(kinds[i], "re");
        ck_assert_ptr_nonnull(f);
        char line[512];
        long k;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "%ld", &k) == 1 && (key_t)k == key) {
                fclose(f);
                return true;
            }
        fclose(f);
    }
    long q = syscall(SYS_mq_open, mq, O_RDONLY | O_CLOEXEC, 0, NULL);
    if (q >= 0)
        close((int)q);
    return q >= 0 || errno != ENOENT;
}

/* System V objects and message queues live in an IPC namespace and
 * outlive their maker: a process-level workload, which has the host's,
 * must not leave one there (a segment is host memory that nothing frees)
 * nor reach the host's. As root the attempt gets an IPC namespace of its
 * own (the objects go with it); rootless, where none can be made, the calls
 * fail with EPERM, Landlock or not. The result says which. */
START_TEST(test_process_level_ipc) {
    deny_userns();
    key_t key = (key_t)(0x46590000 + (getpid() & 0xffff));
    char karg[32], mq[48];
    snprintf(karg, sizeof(karg), "%d", (int)key);
    snprintf(mq, sizeof(mq), "fy-attack-%s", karg);
    for (int landlock = 1; landlock >= 0; landlock--) {
        fy_policy *p = NULL;
        ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
        ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
        if (!landlock)
            ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_OFF, NULL), 0);
        const char *argv[] = {attack, "sysv", karg, NULL};
        char *out = NULL, *json = NULL;
        fy_result *res = run(p, argv, &out);
        ck_assert_int_eq(fy_result_to_json(res, &json, NULL), 0);
        bool leaked = host_has_ipc(key, mq);
        if (leaked) { /* (removed before failing: the host stays clean) */
            shmctl(shmget(key, 0, 0), IPC_RMID, NULL);
            msgctl(msgget(key, 0), IPC_RMID, NULL);
            semctl(semget(key, 0, 0), 0, IPC_RMID);
            syscall(SYS_mq_unlink, mq);
        }
        ck_assert_msg(!leaked, "an IPC object of the attempt is in the host's namespace: %s", out);
        if (getuid() == 0) {
            ck_assert_msg(strstr(out, "ok shm made\n") && strstr(out, "ok msg made\n") && strstr(out, "ok sem made\n"),
                          "%s", out);
            ck_assert_msg(strstr(json, "\"ipc\": \"own IPC namespace"), "%s", json);
            ck_assert_msg(strstr(squeezed(json), "\"namespaces\":[\"ipc\"]"), "%s", json);
        } else {
            ck_assert_msg(strstr(out, "denied EPERM shm\n") && strstr(out, "denied EPERM msg\n") &&
                              strstr(out, "denied EPERM sem\n") && strstr(out, "denied EPERM mq\n"),
                          "%s", out);
            ck_assert_msg(strstr(json, "\"ipc\": \"denied: System V IPC"), "%s", json);
        }
        free(json);
        free(out);
        fy_result_free(res);
        fy_policy_free(p);
    }
}
END_TEST

/* The host program's session keyring is out of the process-level
 * workload's reach with the seccomp control off (keyctl(2) then allowed):
 * it holds a fresh session keyring, not the caller's. The test process (a
 * forked Check child) plants a key with a random payload in a session
 * keyring of its own; the workload looks for it by name and by number. */
START_TEST(test_process_level_host_keyring) {
    deny_userns();
    unsigned char rnd[12];
    char payload[32], desc[64], id[32], ses[40];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(read(fd, rnd, sizeof(rnd)), (ssize_t)sizeof(rnd));
    close(fd);
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
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_SECCOMP, FY_MODE_OFF, NULL), 0);
    const char *argv[] = {attack, "keyring", desc, NULL};
    char *out = NULL, *json = NULL;
    fy_result *res = run(p, argv, &out);
    ck_assert_msg(!strstr(out, payload), "the workload read the host's key: %s", out);
    ck_assert_msg(!strstr(out, ses), "the workload holds the host's session keyring: %s", out);
    ck_assert_msg(strstr(out, "session ") && strstr(out, "denied ENOKEY keyring search"), "%s", out);
    ck_assert_int_eq(fy_result_to_json(res, &json, NULL), 0);
    ck_assert_msg(strstr(json, "\"keyring\": \"own:"), "%s", json);
    free(json);
    free(out);
    fy_result_free(res);
    const char *argv2[] = {attack, "keyread", id, NULL};
    res = run(p, argv2, &out);
    ck_assert_msg(!strstr(out, payload), "the workload read the host's key: %s", out);
    ck_assert_msg(strstr(out, "denied EACCES keyread"), "%s", out);
    free(out);
    fy_result_free(res);
    fy_policy_free(p);
    ck_assert_int_eq(syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -3, "user", desc, 0), key);
}
END_TEST

static fy_handle *start_ignore_term(fy_policy *p, const char *const *argv) {
    fy_prepared *pr = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, NULL), 0);
    fy_handle *h = NULL;
    ck_assert_int_eq(fy_start(pr, &h, NULL), 0);
    fy_prepared_free(pr);
    for (int i = 0; i < 300 && count_procs_with("fy-attack ignore-term") < 2; i++) {
        fy_handle_process(h, NULL, NULL);
        usleep(10000);
    }
    return h;
}

START_TEST(test_process_level_timeout_kills_tree) {
    /* Without a pid namespace, killing the supervisor would orphan the tree
     * to the host's init: the hard kill must end every process. */
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 500000, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_GRACE, 200000, NULL), 0);
    const char *argv[] = {attack, "ignore-term", "", tag(), NULL};
    char *out = NULL;
    fy_result *res = run(p, argv, &out);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_TIMED_OUT);
    ck_assert_int_eq(count_procs_with("fy-attack ignore-term"), 0);
    free(out);
    fy_result_free(res);
    /* The same for fy_handle_free of a running attempt (no deadline near:
     * the tree is counted up first, on a slow host too). */
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 60000000, NULL), 0);
    fy_handle *h = start_ignore_term(p, argv);
    ck_assert_int_eq(count_procs_with("fy-attack ignore-term"), 2);
    fy_handle_free(h);
    ck_assert_int_eq(count_procs_with("fy-attack ignore-term"), 0);
    fy_policy_free(p);
}
END_TEST

/* A legacy host (cgroup v1 only, no cgroup.kill): the teardown freezes the
 * attempt's v1 cgroups, kills every listed task and thaws them. Forced here
 * on a hybrid host; without a pid namespace the cgroup is what ends the
 * tree, and a freezer left FROZEN would leave the processes behind. */
START_TEST(test_process_level_v1_freezer_teardown) {
    if (getuid() != 0)
        return; /* no cgroup to create rootless */
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/fy", 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_PIDS, 256, NULL), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_PIDS_LIMIT, FY_MODE_REQUIRE, NULL), 0);
    /* (4 s: the tree is counted in its cgroup before the limit strikes, on
     * a slow host too) */
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 4000000, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_GRACE, 200000, NULL), 0);
    policy_test_legacy_cgroups(p);
    const char *argv[] = {attack, "ignore-term", "", tag(), NULL};
    fy_handle *h = start_ignore_term(p, argv);
    /* Both the workload and its child are in the attempt's freezer cgroup. */
    ck_assert_int_eq(procs_with("fy-attack ignore-term", true), 2);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    fy_handle_free(h);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_TIMED_OUT);
    char *json = NULL;
    ck_assert_int_eq(fy_result_to_json(res, &json, NULL), 0);
    ck_assert_msg(strstr(json, "\"tree\": \"cgroup v1\""), "%s", json);
    fy_free(json);
    ck_assert_int_eq(count_procs_with("fy-attack ignore-term"), 0);
    uint64_t left = 1;
    ck_assert_int_eq(fy_result_cleanup(res, FY_LEFT_CGROUPS, &left), 0);
    ck_assert_uint_eq(left, 0);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_process_level_refuses_network_deny) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    const char *doc = "{\"network\": {\"mode\": \"deny\", \"dns\": \"none\"}, "
                      "\"isolation\": {\"controls\": {\"netns\": \"prefer\"}}}";
    ck_assert_int_eq(fy_policy_load_json(p, doc, strlen(doc), NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "network namespace"));
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* Terminals of the sandbox's own need a mount namespace: refused, never
 * given as the host's /dev/pts. */
START_TEST(test_process_level_refuses_private_pty) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_pty(p, FY_DEVICES_PRIVATE, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "pseudo-terminals"));
    ck_assert_str_eq(fy_error_location(e), "$.devices.pty");
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* Fake root needs a user namespace: refused, never run as a non-root uid
 * that the workload was told is root. */
START_TEST(test_process_level_refuses_fake_root) {
    deny_userns();
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_user(p, FY_USER_FAKE_ROOT, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "fake-root"));
    ck_assert_str_eq(fy_error_location(e), "$.process.user");
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

/* Every process-level attempt of a caller runs as one host user, in the
 * host's /proc and /dev/shm: without Landlock one attempt read another's
 * secret file and environment. Secrets there need Landlock enforced;
 * with it, the same policy prepares. */
START_TEST(test_process_level_secrets_need_landlock) {
    deny_userns();
    for (int landlock = 0; landlock <= 1; landlock++) {
        fy_policy *p = NULL;
        ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
        if (!landlock)
            ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_OFF, NULL), 0);
        else
            ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_REQUIRE, NULL), 0);
        ck_assert_int_eq(fy_policy_add_secret(p, "tok", FY_SECRET_ENV, "TOKEN", "s3cret", 6, NULL), 0);
        const char *argv[] = {"/bin/true", NULL};
        fy_prepared *pr = NULL;
        fy_error *e = NULL;
        int r = fy_prepare(p, NULL, argv, &pr, &e);
        if (!landlock) {
            ck_assert_int_eq(r, FY_E_UNSUPPORTED);
            ck_assert_ptr_nonnull(strstr(fy_error_message(e), "need Landlock"));
            ck_assert_str_eq(fy_error_location(e), "$.secrets");
        } else if (r != FY_E_UNSUPPORTED || !strstr(fy_error_message(e), "andlock")) {
            ck_assert_msg(r == 0, "%s", fy_error_message(e)); /* (a host without Landlock refuses the require) */
        }
        fy_error_free(e);
        fy_prepared_free(pr);
        fy_policy_free(p);
    }
}
END_TEST

/* As root the workload never runs as the range's first id, which makes
 * every namespace sandbox's user namespace (and so holds every capability
 * in them from the host's namespace): a range of one id is refused. */
START_TEST(test_process_level_refuses_owner_id) {
    deny_userns();
    if (geteuid() != 0)
        return; /* rootless: the workload is the caller, the range unused */
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_id_range(p, 100000, 1, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, &e), FY_E_POLICY);
    ck_assert_ptr_nonnull(strstr(fy_error_message(e), "never its first"));
    ck_assert_str_eq(fy_error_location(e), "$.process.id_range.count");
    fy_error_free(e);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_process_level_gc) {
    /* The process level keeps scratch on the host: after a crash of its
     * owner, fy_gc must find the record and remove the scratch. */
    deny_userns();
    char state[128];
    snprintf(state, sizeof(state), "%s/state", scratch);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t host = fork();
    if (host == 0) {
        close(ready[0]);
        fy_policy *p = NULL;
        fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL);
        fy_policy_set_state_dir(p, state, NULL);
        const char *argv[] = {"/bin/sleep", "30", NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        if (fy_prepare(p, NULL, argv, &pr, NULL) < 0 || fy_start(pr, &h, NULL) < 0)
            _exit(1);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    /* The record names the attempt's scratch directory. */
    DIR *d = opendir(state);
    struct dirent *e;
    char scratch_dir[256] = "";
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".state"))
            continue;
        char path[512], buf[4096] = {0};
        snprintf(path, sizeof(path), "%s/%s", state, e->d_name);
        FILE *f = fopen(path, "re");
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        char *sc = strstr(buf, "scratch ");
        if (sc)
            snprintf(scratch_dir, sizeof(scratch_dir), "%.*s", (int)strcspn(sc + 8, "\n"), sc + 8);
    }
    if (d)
        closedir(d);
    ck_assert_msg(scratch_dir[0] == '/', "no scratch in the record");
    ck_assert_int_eq(access(scratch_dir, F_OK), 0);
    kill(host, SIGKILL);
    waitpid(host, NULL, 0);
    uint64_t destroyed = 0;
    fy_error *err = NULL;
    int r = fy_gc(state, 0, &destroyed, &err);
    ck_assert_msg(r == 0, "gc: %s", fy_error_message(err));
    ck_assert_uint_eq(destroyed, 1);
    ck_assert_int_eq(access(scratch_dir, F_OK), -1);
}
END_TEST

START_TEST(test_process_level_gc_scratch_not_made) {
    /* The scratch directory's name is recorded before it is made: a host
     * killed in between leaves a record naming a directory that does not
     * exist, which gc counts and removes like any other. */
    char state[128];
    snprintf(state, sizeof(state), "%s/state-unmade", scratch);
    ck_assert_int_eq(mkdir(state, 0700) == 0 || errno == EEXIST, 1);
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    char rec[512], planned[128];
    snprintf(planned, sizeof(planned), "/dev/shm/forgeyard-attempt-u%05d", (int)(getpid() % 100000));
    ck_assert_int_eq(access(planned, F_OK), -1);
    snprintf(rec, sizeof(rec), "%s/forgeyard-%d-00000000000000aa.state", state, (int)dead);
    FILE *f = fopen(rec, "we");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "forgeyard-state 1\nowner %d 1\nsandbox 0 0\nscratch %s\n", (int)dead, planned);
    fclose(f);
    uint64_t destroyed = 0;
    fy_error *err = NULL;
    int r = fy_gc(state, 0, &destroyed, &err);
    ck_assert_msg(r == 0, "gc: %s", fy_error_message(err));
    fy_error_free(err);
    ck_assert_uint_eq(destroyed, 1);
    ck_assert_int_eq(access(rec, F_OK), -1);
    ck_assert_int_eq(access(planned, F_OK), -1);
}
END_TEST

/* The first process whose command line holds needle and the tag (any
 * owner: the host here is a forked child), its parent in *ppid; 0 if none. */
static pid_t find_tagged(const char *needle, pid_t *ppid) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;
    while (d && !found && (e = readdir(d))) {
        char path[64], buf[256] = {0};
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t k = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        for (ssize_t i = 0; i < k; i++)
            if (!buf[i])
                buf[i] = ' ';
        if (k > 0 && strstr(buf, needle) && strstr(buf, tag()))
            found = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    if (found && ppid) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)found);
        char *st = slurp(path), *pp = st ? strstr(st, "\nPPid:") : NULL;
        *ppid = pp ? atoi(pp + 6) : 0;
        free(st);
    }
    return found;
}

START_TEST(test_process_level_forked_host_crash) {
    /* A host with a fork(2) child (a worker that knows nothing of the
     * handle) is killed: the child keeps the host's end of the sandbox's
     * socket, and the sandbox ran on unsupervised for as long as it
     * lived. Its init must end it when the host process exits. */
    deny_userns();
    char state[128];
    snprintf(state, sizeof(state), "%s/state-forked", scratch);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t host = fork();
    if (host == 0) {
        close(ready[0]);
        fy_policy *p = NULL;
        fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL);
        fy_policy_set_state_dir(p, state, NULL);
        fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 600ULL * 1000000ULL, NULL);
        const char *argv[] = {"/bin/sleep", "654324", tag(), NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        if (fy_prepare(p, NULL, argv, &pr, NULL) < 0 || fy_start(pr, &h, NULL) < 0)
            _exit(1);
        for (int i = 0; i < 500 && !find_tagged("sleep 654324", NULL); i++) {
            fy_handle_process(h, NULL, NULL);
            usleep(10000);
        }
        pid_t worker = fork();
        if (worker == 0) {
            close(ready[1]);
            for (int i = 0; i < 300; i++)
                usleep(100000);
            _exit(0);
        }
        if (worker < 0 || write(ready[1], &worker, sizeof(worker)) != (ssize_t)sizeof(worker))
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    pid_t worker = 0;
    ck_assert_int_eq(read(ready[0], &worker, sizeof(worker)), (ssize_t)sizeof(worker));
    close(ready[0]);
    ck_assert_int_gt(worker, 0);
    pid_t init = 0;
    ck_assert_int_gt(find_tagged("sleep 654324", &init), 0);
    ck_assert_int_gt(init, 1);
    kill(host, SIGKILL);
    waitpid(host, NULL, 0);
    pid_t left = 1;
    for (int i = 0; i < 500 && (left = find_tagged("sleep 654324", NULL)) > 0; i++)
        usleep(10000);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)init);
    bool init_runs = true;
    /* (init ends the workload first, then itself: a moment apart, longer
     * on a loaded host) */
    for (int i = 0; i < 500 && init_runs; i++) {
        char *cmd = slurp(path); /* (a zombie's is empty) */
        init_runs = cmd && *cmd;
        free(cmd);
        if (init_runs)
            usleep(10000);
    }
    bool worker_alive = kill(worker, 0) == 0;
    kill(worker, SIGKILL);
    for (int i = 0; i < 300 && kill(worker, 0) == 0; i++)
        usleep(10000);
    if (left > 0)
        kill(left, SIGKILL);
    fy_error *err = NULL;
    int r = fy_gc(state, 0, NULL, &err);
    ck_assert_msg(r == 0, "gc: %s", fy_error_message(err));
    fy_error_free(err);
    ck_assert_msg(worker_alive, "the forked worker had ended");
    ck_assert_msg(left == 0 && !init_runs, "the sandbox outlived its killed host (workload %d, init %s)", (int)left,
                  init_runs ? "running" : "gone");
}
END_TEST

int main(int argc, char **argv) {
    (void)tag();
    if (argc < 2)
        return 2;
    bool want_rootless = argc > 2 && strcmp(argv[2], "--rootless") == 0;
    char cmd[512];
    if (getenv("FY_TEST_SCRATCH")) {
        snprintf(scratch, sizeof(scratch), "%s", getenv("FY_TEST_SCRATCH"));
    } else {
        if (want_rootless && getuid() != 0)
            return 77; /* the rootless variant is started as root */
        snprintf(scratch, sizeof(scratch), "/tmp/fy-process-test-XXXXXX");
        if (!mkdtemp(scratch))
            return 1;
        chmod(scratch, 0755);
    }
    snprintf(attack, sizeof(attack), "%s/fy-attack", scratch);
    if (!getenv("FY_TEST_SCRATCH")) {
        snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", argv[1], attack, attack);
        if (system(cmd) != 0)
            return 1;
    }
    if (want_rootless && getuid() == 0) {
        /* Become uid 65534 through exec (dumpable, as a user's program is). */
        if (chown(scratch, 65534, 65534) < 0 || setenv("FY_TEST_SCRATCH", scratch, 1) < 0 ||
            setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            return 1;
        execv("/proc/self/exe", argv);
        return 1;
    }
    Suite *s = suite_create("process-level");
    TCase *tc = tcase_create("userns-denied");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_userns_denied_host);
    tcase_add_test(tc, test_process_level_timeout_kills_tree);
    tcase_add_test(tc, test_process_level_rlimits);
    tcase_add_test(tc, test_process_level_fork_free);
    tcase_add_test(tc, test_process_level_kill_reaps);
    tcase_add_test(tc, test_process_level_start_fd_pressure);
    tcase_add_test(tc, test_process_level_host_umask);
    tcase_add_test(tc, test_process_level_workspace_links);
    tcase_add_test(tc, test_process_level_ipc);
    tcase_add_test(tc, test_process_level_host_keyring);
    tcase_add_test(tc, test_process_level_landlock_scoping);
    tcase_add_test(tc, test_process_level_other_processes);
    tcase_add_test(tc, test_process_level_system_config);
    tcase_add_test(tc, test_process_level_secrets_need_landlock);
    tcase_add_test(tc, test_process_level_refuses_owner_id);
    tcase_add_test(tc, test_process_level_refuses_network_deny);
    tcase_add_test(tc, test_process_level_refuses_private_pty);
    tcase_add_test(tc, test_process_level_refuses_fake_root);
    tcase_add_test(tc, test_process_level_v1_freezer_teardown);
    tcase_add_test(tc, test_process_level_gc);
    tcase_add_test(tc, test_process_level_forked_host_crash);
    tcase_add_test(tc, test_process_level_gc_scratch_not_made);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL); /* fork mode: the filter stays in the test child */
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", scratch);
    if (system(cmd) != 0)
        return 1;
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
