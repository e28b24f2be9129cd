/* Pre-started shells (fy_shells_new(3)): a claimed shell gives the same
 * attempt as a start from nothing; a shell holds nothing of any attempt
 * before its claim; and every discard rule (idle, its own exit, mismatch,
 * fork, free, the library's unload, the host's exit) leaves nothing: no
 * process, cgroup or state record. As root, and with --rootless as uid
 * 65534. (The whole attack suite also runs in claimed shells:
 * test-sandbox --shells.) */
#include <check.h>
#include <malloc.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

static char scratch[64];
static char state[128];
static const char *libpath; /* the shared library, for the unload test */
static bool rootless;

/* ---- what a shell leaves ---- */

/* The pids of this process's children named forgeyard-init (shells, or
 * sandboxes' inits); how many, the first in *first, its state in *st. */
static int shells_of_ours(pid_t *first, char *st) {
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        if (fgets(buf, sizeof(buf), f)) {
            char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
            int ppid = 0;
            char state_ch = '?';
            if (open_paren && close_paren && sscanf(close_paren + 2, "%c %d", &state_ch, &ppid) == 2 &&
                ppid == (int)getpid() && strncmp(open_paren + 1, "forgeyard-init)", 15) == 0) {
                if (n == 0 && first)
                    *first = (pid_t)atoi(e->d_name);
                if (n == 0 && st)
                    *st = state_ch;
                n++;
            }
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static int count_prefix(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/* Cgroups this process made (forgeyard-<pid>-*), wherever the library
 * makes them on this host. */
static int cgroups_of_ours(void) {
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "forgeyard-%d-", (int)getpid());
    static const char *const dirs[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
                                       "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup"};
    int n = 0;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        n += count_prefix(dirs[i], prefix);
    return n;
}

static int records(void) { return count_prefix(state, "forgeyard-"); }

static void expect_nothing_left(void) {
    ck_assert_int_eq(shells_of_ours(NULL, NULL), 0);
    ck_assert_int_eq(cgroups_of_ours(), 0);
    ck_assert_int_eq(records(), 0);
}

static uint64_t stat_of(fy_shells *s, uint32_t what) {
    uint64_t v = 0;
    ck_assert_int_eq(fy_shells_stat(s, what, &v), 0);
    return v;
}

/* ---- plans ---- */

static fy_policy *policy(void) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_state_dir(p, state, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 30000000, NULL), 0);
    return p;
}

static fy_prepared *prepare(fy_policy *p, const char *const *argv) {
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    int r = fy_prepare(p, NULL, argv, &pr, &e);
    ck_assert_msg(r == 0, "prepare: %s", fy_error_message(e));
    return pr;
}

static fy_prepared *prepare_true(void) {
    const char *argv[] = {"/bin/true", NULL};
    fy_policy *p = policy();
    fy_prepared *pr = prepare(p, argv);
    fy_policy_free(p);
    return pr;
}

static fy_shells *filled(fy_prepared *shape, uint32_t count, uint64_t idle_usec) {
    fy_shells *s = NULL;
    fy_error *e = NULL;
    int r = fy_shells_new(shape, count, idle_usec, &s, &e);
    ck_assert_msg(r == 0, "fy_shells_new: %s", fy_error_message(e));
    r = fy_shells_fill(s, &e);
    ck_assert_msg(r == (int)count, "fy_shells_fill: %d %s", r, fy_error_message(e));
    return s;
}

/* One attempt of pr through the set; its result. */
static fy_result *run(const fy_prepared *pr, fy_shells *s) {
    fy_handle *h = NULL;
    fy_result *res = NULL;
    fy_error *e = NULL;
    int r = fy_start_shell(pr, s, &h, &e);
    ck_assert_msg(r == 0, "start: %s", fy_error_message(e));
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    fy_handle_free(h);
    return res;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* ---- tests ---- */

START_TEST(test_claimed_shell_is_the_same_attempt) {
    char out[160];
    snprintf(out, sizeof(out), "%s/claimed-out", scratch);
    /* The source, the caller's, is the workload's inside, cold or claimed
     * (a root caller's, here a service user's tree, through an idmapped
     * tree handed over after the claim; root's own is never mapped). */
    const char *argv[] = {"/bin/sh", "-c",
                          "echo \"$CANARY_ENV\"; cat /run/secrets/tok; id -u; hostname; stat -c 'src %u' /work/source;"
                          " tr '\\0' '|' </proc/1/cmdline",
                          NULL};
    char src[160];
    snprintf(src, sizeof(src), "%s/claimed-src", scratch);
    ck_assert_int_eq(mkdir(src, 0755), 0);
    if (!rootless)
        ck_assert_int_eq(chown(src, 4242, 4242), 0);
    fy_policy *p = policy();
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_set_env(p, "CANARY_ENV", "env-canary-7d1f", NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "tok", FY_SECRET_FILE, "tok", (const unsigned char *)"sec-canary-91ab", 15,
                                          NULL),
                     0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL), 0);
    fy_prepared *pr = prepare(p, argv);
    fy_shells *s = filled(pr, 1, 30000000);
    /* Cold, then in the shell: the same outcome, output and contract. */
    fy_result *cold = run(pr, NULL);
    char cold_out[512];
    snprintf(cold_out, sizeof(cold_out), "%s", slurp(out, NULL));
    unlink(out);
    fy_result *warm = run(pr, s);
    ck_assert_msg(fy_result_outcome(cold) == FY_OUTCOME_SUCCEEDED, "cold: %s", fy_result_detail(cold));
    ck_assert_int_eq(fy_result_outcome(warm), FY_OUTCOME_SUCCEEDED);
    ck_assert_str_eq(slurp(out, NULL), cold_out);
    ck_assert_ptr_nonnull(strstr(cold_out, "env-canary-7d1f\nsec-canary-91ab"));
    ck_assert_msg(strstr(cold_out, "\nsrc 1000\n") != NULL, "%s", cold_out);
    /* Init's command line says nothing of the shell (nor its idle limit). */
    const char *init_line = strstr(cold_out, "\nforgeyard-init|");
    ck_assert_msg(init_line && !strcmp(init_line, "\nforgeyard-init|"), "%s", cold_out);
    ck_assert_int_eq(fy_result_prestarted(cold), 0);
    ck_assert_int_eq(fy_result_prestarted(warm), 1);
    uint64_t claim = 1;
    ck_assert_int_eq(fy_result_stage_usec(cold, FY_STAGE_CLAIM, &claim), 0);
    ck_assert_int_eq(claim, 0);
    char *jc = NULL, *jw = NULL;
    ck_assert_int_eq(fy_result_to_json(cold, &jc, NULL), 0);
    ck_assert_int_eq(fy_result_to_json(warm, &jw, NULL), 0);
    ck_assert_ptr_nonnull(strstr(jc, "\"prestarted\": false"));
    ck_assert_ptr_nonnull(strstr(jw, "\"prestarted\": true"));
    ck_assert_ptr_nonnull(strstr(jw, "\"claim\":"));
    const char *cid = strstr(jc, "\"contract_id\"");
    ck_assert_ptr_nonnull(cid);
    char cid_text[90];
    snprintf(cid_text, sizeof(cid_text), "%.84s", cid);
    ck_assert_ptr_nonnull(strstr(jw, cid_text));
    free(jc);
    free(jw);
    uint64_t left[FY_LEFT_NETWORK + 1] = {0};
    for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_NETWORK; k++) {
        ck_assert_int_eq(fy_result_cleanup(warm, k, &left[k]), 0);
        ck_assert_int_eq(left[k], 0);
    }
    ck_assert_int_eq(stat_of(s, FY_SHELLS_CLAIMED), 1);
    ck_assert_int_eq(stat_of(s, FY_SHELLS_READY), 0);
    /* Used once: a second attempt through the empty set starts cold. */
    unlink(out);
    fy_result *again = run(pr, s);
    ck_assert_int_eq(fy_result_prestarted(again), 0);
    fy_result_free(again);
    fy_result_free(cold);
    fy_result_free(warm);
    fy_shells_free(s);
    fy_prepared_free(pr);
    fy_policy_free(p);
    unlink(out);
    rmdir(src);
    expect_nothing_left();
}
END_TEST

/* The network devices listed in /proc/PID/net/dev (what PID's network
 * namespace has), into names (space-separated); how many. */
static int net_devices(pid_t pid, char *names, size_t size) {
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
    FILE *f = fopen(path, "re");
    int n = 0;
    names[0] = '\0';
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue; /* the two header lines */
        *colon = '\0';
        char *name = line + strspn(line, " ");
        size_t used = strlen(names);
        snprintf(names + used, size - used, "%s%s", n ? " " : "", name);
        n++;
    }
    if (f)
        fclose(f);
    return f ? n : -1;
}

/* As root a restricted plan's shell is cloned into a network namespace
 * made for it (the host's user namespace owns it; the claiming attempt's
 * rules and link go into it): before its claim that namespace is not ours
 * and has only its loopback, and the uplink has no link of it; claimed,
 * the attempt has its link and reaches what the plan allows, and nothing
 * is left in the uplink. The uplink is a namespace of a child of ours. */
START_TEST(test_restricted_shell_has_no_link_before_its_claim) {
    if (rootless)
        return; /* (restricted without root: pasta or the helper, which shells do not pre-make) */
    fy_caps *caps = NULL;
    ck_assert_int_eq(fy_probe(FY_PROBE_NO_VM, &caps, NULL), 0);
    int nft = fy_caps_has(caps, FY_CAP_NFTABLES);
    fy_caps_free(caps);
    if (nft != 1) {
        printf("SKIP restricted shell: no nftables here (the kernel's nf_tables, or nft)\n");
        return; /* (a root host without nf_tables: restricted is refused there) */
    }
    int ready[2];
    ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
    pid_t up = fork();
    ck_assert_int_ge(up, 0);
    if (up == 0) {
        char c = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
        (void)!write(ready[1], &c, 1);
        for (int i = 0; i < 600; i++)
            sleep(1); /* (killed by the test; bounded) */
        _exit(0);
    }
    close(ready[1]);
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    ck_assert_int_eq(c, 'y');
    /* (Host paths under /proc are refused in a policy: the namespace is
     * bound onto a file of the test's scratch directory, in a mount
     * namespace of this test process's own, so that nothing is left
     * mounted on the host even when an assertion ends the test.) */
    ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
    ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    char uplink[160], names[512], nspath[64];
    snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)up);
    snprintf(uplink, sizeof(uplink), "%s/uplink-ns", scratch);
    int fd = open(uplink, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(mount(nspath, uplink, NULL, MS_BIND, NULL), 0);
    const char *argv[] = {"/bin/sh", "-c", "cat /proc/net/dev | grep -c eth0:", NULL};
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_state_dir(p, state, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 30000000, NULL), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_UPLINK, uplink, NULL), 0);
    char out[160];
    snprintf(out, sizeof(out), "%s/restricted-out", scratch);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, NULL), 0);
    fy_prepared *pr = prepare(p, argv);
    fy_shells *s = filled(pr, 1, 30000000);
    pid_t sh = 0;
    ck_assert_int_eq(shells_of_ours(&sh, NULL), 1);
    struct stat ours, its;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)sh);
    ck_assert_int_eq(stat("/proc/self/ns/net", &ours), 0);
    ck_assert_int_eq(stat(path, &its), 0);
    ck_assert_msg(ours.st_ino != its.st_ino, "the shell is in the host's network namespace");
    ck_assert_int_eq(net_devices(sh, names, sizeof(names)), 1);
    ck_assert_str_eq(names, "lo");
    ck_assert_int_eq(net_devices(up, names, sizeof(names)), 1);
    fy_result *res = run(pr, s);
    ck_assert_msg(fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "%s", fy_result_detail(res));
    ck_assert_int_eq(fy_result_prestarted(res), 1);
    ck_assert_str_eq(slurp(out, NULL), "1\n");
    char *j = NULL;
    ck_assert_int_eq(fy_result_to_json(res, &j, NULL), 0);
    ck_assert_ptr_nonnull(strstr(j, "nftables-host-owned-netns"));
    free(j);
    uint64_t left = 1;
    ck_assert_int_eq(fy_result_cleanup(res, FY_LEFT_NETWORK, &left), 0);
    ck_assert_int_eq(left, 0);
    ck_assert_int_eq(net_devices(up, names, sizeof(names)), 1); /* (lo only: the link went with the attempt) */
    fy_result_free(res);
    fy_shells_free(s);
    fy_prepared_free(pr);
    fy_policy_free(p);
    unlink(out);
    ck_assert_int_eq(umount2(uplink, MNT_DETACH), 0);
    unlink(uplink);
    kill(up, SIGKILL);
    waitpid(up, NULL, 0);
    expect_nothing_left();
}
END_TEST

/* Before its claim a shell is forgeyard-init with one socket, no
 * environment, no child, and none of the plan in its memory, although the
 * plan it was shaped by has an environment canary and a secret; nor the
 * host's working directory (it held it, a host directory kept busy for as
 * long as the shell idled): its own root is its cwd. */
START_TEST(test_shell_holds_nothing_before_its_claim) {
    const char *argv[] = {"/bin/true", NULL};
    fy_policy *p = policy();
    ck_assert_int_eq(fy_policy_set_env(p, "CANARY_ENV", "env-canary-5c3e", NULL), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "tok", FY_SECRET_ENV, "TOKEN", (const unsigned char *)"sec-canary-44d0",
                                          15, NULL),
                     0);
    fy_prepared *pr = prepare(p, argv);
    char here[] = "/tmp/fy-shell-cwd-XXXXXX", *was = getcwd(NULL, 0);
    ck_assert_ptr_nonnull(mkdtemp(here));
    ck_assert_ptr_nonnull(was);
    ck_assert_int_eq(chdir(here), 0);
    fy_shells *s = filled(pr, 1, 30000000);
    ck_assert_int_eq(chdir(was), 0);
    free(was);
    pid_t sh = 0;
    ck_assert_int_eq(shells_of_ours(&sh, NULL), 1);
    char path[128];
    size_t len = 0;
    if (!rootless) {
        struct stat cwd, host, root;
        snprintf(path, sizeof(path), "/proc/%d/cwd", (int)sh);
        ck_assert_int_eq(stat(path, &cwd), 0);
        ck_assert_int_eq(stat(here, &host), 0);
        ck_assert_int_eq(stat("/", &root), 0);
        ck_assert_msg(cwd.st_dev != host.st_dev || cwd.st_ino != host.st_ino,
                      "the idle shell's working directory is the host's (%s)", here);
        ck_assert(cwd.st_dev == root.st_dev && cwd.st_ino == root.st_ino);
    }
    ck_assert_int_eq(rmdir(here), 0);
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)sh);
    char *cmd = slurp(path, &len);
    ck_assert_ptr_nonnull(cmd);
    /* Its arguments (the idle limit among them) blanked, as a cold init's. */
    ck_assert_str_eq(cmd, "forgeyard-init");
    ck_assert_int_eq(len, strlen("forgeyard-init") + 1);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)sh, (int)sh);
    char *kids = slurp(path, NULL);
    ck_assert_msg(!kids || !kids[0], "the shell has children: %s", kids);
    if (!rootless) {
        /* (Only root may look inside: the shell is not dumpable.) */
        snprintf(path, sizeof(path), "/proc/%d/environ", (int)sh);
        ck_assert_ptr_nonnull(slurp(path, &len));
        ck_assert_int_eq(len, 0);
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)sh);
        /* Its socket to us, and a pidfd of this process (it ends with us,
         * however many forks of us keep our end of the socket). "." and "..". */
        ck_assert_int_eq(count_prefix(path, "") - 2, 2);
        int npidfd = 0;
        DIR *fdd = opendir(path);
        struct dirent *fe;
        while (fdd && (fe = readdir(fdd))) {
            char lp[600], target[128] = {0};
            snprintf(lp, sizeof(lp), "%s/%s", path, fe->d_name);
            npidfd += readlink(lp, target, sizeof(target) - 1) > 0 && strcmp(target, "anon_inode:[pidfd]") == 0;
        }
        if (fdd)
            closedir(fdd);
        ck_assert_int_eq(npidfd, 1);
        /* Its whole writable memory, searched for the plan's canaries. */
        snprintf(path, sizeof(path), "/proc/%d/maps", (int)sh);
        FILE *maps = fopen(path, "re");
        snprintf(path, sizeof(path), "/proc/%d/mem", (int)sh);
        int mem = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_ptr_nonnull(maps);
        ck_assert_int_ge(mem, 0);
        char line[512];
        size_t scanned = 0;
        while (fgets(line, sizeof(line), maps)) {
            unsigned long lo, hi;
            char perms[5];
            if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[0] != 'r' || hi - lo > (64ul << 20))
                continue;
            char *buf = malloc(hi - lo);
            ssize_t n = pread(mem, buf, hi - lo, (off_t)lo);
            for (ssize_t i = 0; n > 0 && i + 15 <= n; i++)
                ck_assert_msg(memcmp(buf + i, "env-canary-5c3e", 15) && memcmp(buf + i, "sec-canary-44d0", 15),
                              "a canary of the plan is in the shell before its claim");
            scanned += n > 0 ? (size_t)n : 0;
            free(buf);
        }
        fclose(maps);
        close(mem);
        ck_assert_uint_gt(scanned, 4096);
    }
    fy_shells_free(s);
    fy_prepared_free(pr);
    fy_policy_free(p);
    expect_nothing_left();
}
END_TEST

/* The v1 cgroups of a shell's init (host paths of the ones named
 * forgeyard-<our pid>-*), from /proc/PID/cgroup; how many. */
static int v1_dirs_of(pid_t pid, char dirs[][256], int max) {
    char path[64], line[512], prefix[64];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    snprintf(prefix, sizeof(prefix), "/forgeyard-%d-", (int)getpid());
    FILE *f = fopen(path, "re");
    int n = 0;
    while (f && n < max && fgets(line, sizeof(line), f)) {
        char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!cg || cg == ctl + 1 || !strstr(cg, prefix) || strncmp(ctl + 1, "name=", 5) == 0)
            continue; /* v2 (no controller), not ours, or a named hierarchy */
        *cg++ = '\0';
        cg[strcspn(cg, "\n")] = '\0';
        char *comma = strchr(ctl + 1, ',');
        if (comma)
            *comma = '\0';
        snprintf(dirs[n++], 256, "/sys/fs/cgroup/%s%s", ctl + 1, cg);
    }
    if (f)
        fclose(f);
    return n;
}

static char *read_in(const char *dir, const char *file) {
    char path[400];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    char *v = slurp(path, NULL);
    if (v)
        v[strcspn(v, "\n")] = '\0';
    return v;
}

/* On a host with v1 controllers (memory, pids), a shell's init joins v1
 * cgroups made bare before its claim (so that the claim migrates nothing),
 * the claim writes the claiming plan's limits into them before it returns
 * (so before anything of the attempt runs; sandbox-shells proves the limits
 * hold: its OOM and fork-bomb cases fail without them), and they go with
 * the attempt, or with the shell when it is discarded unclaimed. */
START_TEST(test_shell_v1_cgroups_bare_then_limited) {
    if (rootless)
        return; /* (no v1 cgroups of the library's own without root) */
    fy_prepared *shape = prepare_true();
    fy_policy *p = policy();
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_PIDS, 77, NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 96u << 20, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *claimer = prepare(p, argv);
    fy_policy_free(p);
    fy_shells *s = filled(shape, 1, 30000000);
    pid_t sh = 0;
    ck_assert_int_eq(shells_of_ours(&sh, NULL), 1);
    char dirs[8][256];
    int n = v1_dirs_of(sh, dirs, 8);
    struct stat st;
    bool v1_pids = stat("/sys/fs/cgroup/pids/pids.max", &st) < 0 && stat("/sys/fs/cgroup/pids/cgroup.procs", &st) == 0;
    if (n == 0) {
        /* No v1 controller here (a v2-only host): nothing to check, but a
         * host with a v1 pids hierarchy must have given the shell one. */
        ck_assert_msg(!v1_pids, "the shell joined no v1 cgroup on a host with a v1 pids hierarchy");
        fy_shells_free(s);
        fy_prepared_free(shape);
        fy_prepared_free(claimer);
        expect_nothing_left();
        return;
    }
    for (int i = 0; i < n; i++) {
        if (strstr(dirs[i], "/sys/fs/cgroup/pids/") == dirs[i])
            ck_assert_str_eq(read_in(dirs[i], "pids.max"), "max");
        if (strstr(dirs[i], "/sys/fs/cgroup/memory/") == dirs[i])
            ck_assert_uint_gt(strtoull(read_in(dirs[i], "memory.limit_in_bytes"), NULL, 10), 1ull << 50);
    }
    /* Claimed: the claimer's limits are in them when fy_start returns. */
    fy_handle *h = NULL;
    fy_result *res = NULL;
    fy_error *e = NULL;
    ck_assert_msg(fy_start_shell(claimer, s, &h, &e) == 0, "start: %s", fy_error_message(e));
    bool pids = false, mem = false;
    for (int i = 0; i < n; i++) {
        if (strstr(dirs[i], "/sys/fs/cgroup/pids/") == dirs[i]) {
            ck_assert_str_eq(read_in(dirs[i], "pids.max"), "77");
            pids = true;
        }
        if (strstr(dirs[i], "/sys/fs/cgroup/memory/") == dirs[i]) {
            ck_assert_str_eq(read_in(dirs[i], "memory.limit_in_bytes"), "100663296");
            mem = true;
        }
    }
    ck_assert(pids || mem);
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    fy_handle_free(h);
    ck_assert_int_eq(fy_result_outcome(res), FY_OUTCOME_SUCCEEDED);
    ck_assert_int_eq(fy_result_prestarted(res), 1);
    fy_result_free(res);
    for (int i = 0; i < n; i++)
        ck_assert_msg(stat(dirs[i], &st) < 0 && errno == ENOENT, "%s is left after the attempt", dirs[i]);
    /* Discarded unclaimed: its v1 cgroups go with it. */
    ck_assert_int_eq(fy_shells_fill(s, NULL), 1);
    ck_assert_int_eq(shells_of_ours(&sh, NULL), 1);
    ck_assert_int_eq(v1_dirs_of(sh, dirs, 8), n);
    fy_shells_free(s);
    for (int i = 0; i < n; i++)
        ck_assert_msg(stat(dirs[i], &st) < 0 && errno == ENOENT, "%s is left by a discarded shell", dirs[i]);
    fy_prepared_free(shape);
    fy_prepared_free(claimer);
    expect_nothing_left();
}
END_TEST

START_TEST(test_idle_shells_are_discarded) {
    fy_prepared *pr = prepare_true();
    fy_shells *s = filled(pr, 2, 50000);
    ck_assert_int_eq(shells_of_ours(NULL, NULL), 2);
    usleep(120000);
    ck_assert_int_eq(stat_of(s, FY_SHELLS_READY), 0);
    ck_assert_int_eq(stat_of(s, FY_SHELLS_DISCARDED), 2);
    ck_assert_int_eq(stat_of(s, FY_SHELLS_LEFT), 0);
    expect_nothing_left();
    /* A start through the set is then cold. */
    fy_result *r = run(pr, s);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SUCCEEDED);
    ck_assert_int_eq(fy_result_prestarted(r), 0);
    fy_result_free(r);
    fy_shells_free(s);
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

/* A shell carries nothing of the umask of the thread that filled it: the
 * claimed attempt has the sandbox's own (022) and a readable /etc, as a
 * cold one has. */
START_TEST(test_fill_umask_not_carried) {
    const char *argv[] = {"/bin/sh", "-c", "test \"$(umask)\" = 0022 && test -r /etc/passwd && test -x /etc", NULL};
    fy_policy *p = policy();
    fy_prepared *pr = prepare(p, argv);
    fy_policy_free(p);
    mode_t old = umask(077);
    fy_shells *s = filled(pr, 1, 30000000);
    umask(022);
    fy_result *r = run(pr, s);
    umask(old);
    ck_assert_int_eq(fy_result_prestarted(r), 1);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SUCCEEDED);
    ck_assert_int_eq(fy_result_exit_code(r), 0);
    fy_result_free(r);
    fy_shells_free(s);
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

/* A shell killed just before its claim is never handed out: it does not
 * acknowledge the claim, is discarded, and the attempt starts from nothing
 * and succeeds (without the acknowledgement, it failed as an
 * infrastructure failure most times). */
START_TEST(test_shell_killed_before_claim_starts_cold) {
    fy_prepared *pr = prepare_true();
    for (int round = 0; round < 3; round++) {
        fy_shells *s = filled(pr, 1, 30000000);
        pid_t shell = 0;
        ck_assert_int_eq(shells_of_ours(&shell, NULL), 1);
        ck_assert_int_eq(kill(shell, SIGKILL), 0);
        fy_result *r = run(pr, s);
        ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SUCCEEDED);
        ck_assert_int_eq(fy_result_prestarted(r), 0);
        fy_result_free(r);
        ck_assert_int_eq(stat_of(s, FY_SHELLS_CLAIMED), 0);
        ck_assert_int_eq(stat_of(s, FY_SHELLS_DISCARDED), 1);
        ck_assert_int_eq(stat_of(s, FY_SHELLS_LEFT), 0);
        fy_shells_free(s);
    }
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

/* A host that never calls again: the shell leaves by itself (two seconds
 * after its idle limit) and waits, a zombie, to be reaped and witnessed. */
START_TEST(test_shell_leaves_by_itself) {
    fy_prepared *pr = prepare_true();
    fy_shells *s = filled(pr, 1, 1000);
    char st = '?';
    for (int i = 0; i < 60 && !(shells_of_ours(NULL, &st) == 1 && st == 'Z'); i++)
        usleep(100000);
    ck_assert_int_eq(st, 'Z');
    ck_assert_int_eq(stat_of(s, FY_SHELLS_READY), 0);
    ck_assert_int_eq(stat_of(s, FY_SHELLS_DISCARDED), 1);
    expect_nothing_left();
    fy_shells_free(s);
    fy_prepared_free(pr);
}
END_TEST

/* A plan that needs what the shell was not made with never gets it: the
 * shell is discarded and the attempt starts cold. Limits, environment and
 * command are the attempt's and fit. */
START_TEST(test_mismatch_discards) {
    fy_prepared *shape = prepare_true();
    const char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
    /* Different command, environment and limits: fits. */
    fy_policy *p = policy();
    ck_assert_int_eq(fy_policy_set_env(p, "X", "1", NULL), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_PIDS, 77, NULL), 0);
    fy_prepared *fits = prepare(p, argv);
    fy_policy_free(p);
    /* Another network (the host's: no network namespace of its own). */
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_DEVELOPMENT, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_state_dir(p, state, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_ALLOW, NULL), 0);
    fy_prepared *net = prepare(p, argv);
    fy_policy_free(p);
    /* Another state directory. */
    char other[160];
    snprintf(other, sizeof(other), "%s/other-state", scratch);
    p = policy();
    ck_assert_int_eq(fy_policy_set_state_dir(p, other, NULL), 0);
    fy_prepared *dir = prepare(p, argv);
    fy_policy_free(p);

    fy_shells *s = filled(shape, 1, 30000000);
    fy_result *r = run(fits, s);
    ck_assert_int_eq(fy_result_prestarted(r), 1);
    ck_assert_int_eq(fy_result_exit_code(r), 3);
    fy_result_free(r);
    const fy_prepared *misfits[] = {net, dir};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(fy_shells_fill(s, NULL), 1);
        uint64_t before = stat_of(s, FY_SHELLS_DISCARDED);
        r = run(misfits[i], s);
        ck_assert_int_eq(fy_result_prestarted(r), 0);
        ck_assert_int_eq(fy_result_exit_code(r), 3);
        ck_assert_int_eq(stat_of(s, FY_SHELLS_DISCARDED), before + 1);
        ck_assert_int_eq(stat_of(s, FY_SHELLS_READY), 0);
        fy_result_free(r);
    }
    ck_assert_int_eq(stat_of(s, FY_SHELLS_LEFT), 0);
    fy_shells_free(s);
    fy_prepared_free(fits);
    fy_prepared_free(net);
    fy_prepared_free(dir);
    fy_prepared_free(shape);
    rmdir(other);
    expect_nothing_left();
}
END_TEST

/* A host that lowered a hard limit after the fill (here the file size, to
 * 1 MiB): the shell, cloned under the old one, is no fit; the attempt
 * starts cold and its workload has the lowered limit, as a cold start's
 * would (the claimed shell's workload had the host's old, unlimited one,
 * and the result said 1 MiB was enforced). In a child of the test: a
 * lowered hard limit cannot be raised again. */
START_TEST(test_host_limits_after_fill) {
    const char *argv[] = {"/bin/sh", "-c", "l=$(ulimit -H -f); test \"$l\" != unlimited && test \"$l\" -le 2048", NULL};
    fy_policy *p = policy();
    fy_prepared *pr = prepare(p, argv);
    fy_policy_free(p);
    fy_shells *s = filled(pr, 1, 30000000);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* (the parent's plan and set are the parent's: FY_E_FORKED here) */
        fy_shells *own = NULL;
        fy_policy *cp = NULL;
        fy_prepared *cpr = NULL;
        int code = 0;
        fy_error *e = NULL;
        if (fy_policy_new(FY_PROFILE_RELEASE, &cp, &e) < 0 || fy_policy_set_state_dir(cp, state, &e) < 0 ||
            fy_prepare(cp, NULL, argv, &cpr, &e) < 0 || fy_shells_new(cpr, 1, 30000000, &own, &e) < 0 ||
            fy_shells_fill(own, &e) != 1) {
            fprintf(stderr, "child: %s\n", fy_error_message(e));
            _exit(10);
        }
        struct rlimit rl = {1u << 20, 1u << 20};
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
            _exit(11);
        fy_handle *h = NULL;
        fy_result *r = NULL;
        if (fy_start_shell(cpr, own, &h, NULL) < 0 || fy_handle_wait(h, FY_UNLIMITED, &r, NULL) != 1)
            _exit(12);
        if (fy_result_exit_code(r) != 0)
            code = 20; /* the workload had the old limit */
        else if (fy_result_prestarted(r))
            code = 21;
        else if (stat_of(own, FY_SHELLS_DISCARDED) != 1)
            code = 22;
        fy_result_free(r);
        fy_handle_free(h);
        fy_shells_free(own);
        fy_prepared_free(cpr);
        fy_policy_free(cp);
        _exit(code);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x (20: the claimed workload had the "
                  "host's old limit; 21: a shell was claimed; 22: none discarded)", st);
    /* Unchanged here: the same set's shell fits. */
    fy_result *r = run(pr, s);
    ck_assert_int_eq(fy_result_prestarted(r), 1);
    fy_result_free(r);
    fy_shells_free(s);
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

/* A forked copy of the host gets FY_E_FORKED and lets go of its copies; the
 * shells stay the parent's, alive and claimable. */
START_TEST(test_fork_forgets) {
    fy_prepared *pr = prepare_true();
    fy_shells *s = filled(pr, 1, 30000000);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        uint64_t v = 0;
        fy_handle *h = NULL;
        int bad = 0;
        bad += fy_shells_stat(s, FY_SHELLS_READY, &v) != FY_E_FORKED;
        bad += fy_start_shell(pr, s, &h, NULL) != FY_E_FORKED;
        bad += fy_shells_fill(s, NULL) != FY_E_FORKED;
        fy_shells_free(s);
        _exit(bad);
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(c, &ws, 0), c);
    ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    ck_assert_int_eq(stat_of(s, FY_SHELLS_READY), 1);
    fy_result *r = run(pr, s);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SUCCEEDED);
    ck_assert_int_eq(fy_result_prestarted(r), 1);
    fy_result_free(r);
    fy_shells_free(s);
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

START_TEST(test_free_is_witnessed) {
    fy_prepared *pr = prepare_true();
    fy_shells *s = filled(pr, 3, 30000000);
    ck_assert_int_eq(shells_of_ours(NULL, NULL), 3);
    ck_assert_int_eq(records(), 3);
    fy_shells_free(s);
    fy_shells_free(NULL);
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

static void *fill_thread(void *arg) {
    fy_shells *s = arg;
    fy_error *e = NULL;
    int r = fy_shells_fill(s, &e);
    fy_error_free(e);
    return (void *)(intptr_t)r;
}

START_TEST(test_concurrent_fills_make_no_more) {
    /* Shells are made outside the set's lock; fills in four threads at
     * once make the set's count and no more, and a claim meanwhile takes
     * one of those ready. */
    fy_prepared *pr = prepare_true();
    fy_error *e = NULL;
    fy_shells *s = NULL;
    ck_assert_int_eq(fy_shells_new(pr, 3, 30000000, &s, &e), 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, fill_thread, s), 0);
    fy_result *r = run(pr, s);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_SUCCEEDED);
    fy_result_free(r);
    for (int i = 0; i < 4; i++) {
        void *rv = NULL;
        ck_assert_int_eq(pthread_join(t[i], &rv), 0);
        ck_assert_int_ge((int)(intptr_t)rv, 0);
    }
    /* never more ready than the count; made: the count, and one more
     * for a fill that began after the claim took one */
    ck_assert_int_le(stat_of(s, FY_SHELLS_READY), 3);
    ck_assert_int_le(stat_of(s, FY_SHELLS_MADE), 3 + stat_of(s, FY_SHELLS_CLAIMED));
    ck_assert_int_eq(fy_shells_fill(s, &e), 3);
    ck_assert_int_eq(shells_of_ours(NULL, NULL), 3);
    fy_shells_free(s);
    fy_prepared_free(pr);
    expect_nothing_left();
}
END_TEST

START_TEST(test_bad_arguments) {
    fy_prepared *pr = prepare_true();
    fy_shells *s = NULL;
    ck_assert_int_eq(fy_shells_new(NULL, 1, 1000000, &s, NULL), FY_E_INVAL);
    ck_assert_int_eq(fy_shells_new(pr, 0, 1000000, &s, NULL), FY_E_RANGE);
    ck_assert_int_eq(fy_shells_new(pr, 65, 1000000, &s, NULL), FY_E_RANGE);
    ck_assert_int_eq(fy_shells_new(pr, 1, 10, &s, NULL), FY_E_RANGE);
    ck_assert_int_eq(fy_shells_new(pr, 1, 3601ull * 1000000, &s, NULL), FY_E_RANGE);
    ck_assert_int_eq(fy_shells_fill(NULL, NULL), FY_E_INVAL);
    ck_assert_int_eq(fy_shells_new(pr, 1, 1000000, &s, NULL), 0);
    uint64_t v;
    ck_assert_int_eq(fy_shells_stat(s, 99, &v), FY_E_UNSUPPORTED);
    ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_READY, NULL), FY_E_INVAL);
    ck_assert_int_eq(fy_result_prestarted(NULL), FY_E_INVAL);
    fy_shells_free(s);
    fy_prepared_free(pr);
}
END_TEST

/* The library unloaded (dlclose of a copy of it loaded on its own) and the
 * host's exit each discard every shell: a child host makes shells through
 * the shared library, unloads it or exits, and nothing of them is left. */
static void child_host(bool unload) {
    void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        _exit(10);
    int (*pnew)(int, fy_policy **, fy_error **) = (int (*)(int, fy_policy **, fy_error **))dlsym(lib, "fy_policy_new");
    int (*pstate)(fy_policy *, const char *, fy_error **) =
        (int (*)(fy_policy *, const char *, fy_error **))dlsym(lib, "fy_policy_set_state_dir");
    int (*prep)(const fy_policy *, const fy_caps *, const char *const *, fy_prepared **, fy_error **) =
        (int (*)(const fy_policy *, const fy_caps *, const char *const *, fy_prepared **, fy_error **))dlsym(
            lib, "fy_prepare");
    int (*snew)(const fy_prepared *, uint32_t, uint64_t, fy_shells **, fy_error **) =
        (int (*)(const fy_prepared *, uint32_t, uint64_t, fy_shells **, fy_error **))dlsym(lib, "fy_shells_new");
    int (*sfill)(fy_shells *, fy_error **) = (int (*)(fy_shells *, fy_error **))dlsym(lib, "fy_shells_fill");
    if (!pnew || !pstate || !prep || !snew || !sfill)
        _exit(11);
    fy_policy *p = NULL;
    fy_prepared *pr = NULL;
    fy_shells *s = NULL;
    const char *argv[] = {"/bin/true", NULL};
    if (pnew(FY_PROFILE_RELEASE, &p, NULL) < 0 || pstate(p, state, NULL) < 0 || prep(p, NULL, argv, &pr, NULL) < 0 ||
        snew(pr, 2, 30000000, &s, NULL) < 0 || sfill(s, NULL) != 2)
        _exit(12);
    if (shells_of_ours(NULL, NULL) != 2)
        _exit(13);
    if (!unload)
        exit(0); /* the library's destructor runs at exit */
    dlclose(lib);
    /* Unloaded: the shells are gone, reaped by the library before it went. */
    _exit(shells_of_ours(NULL, NULL) == 0 && records() == 0 ? 0 : 14);
}

START_TEST(test_unload_and_exit_discard) {
    for (int unload = 1; unload >= 0; unload--) {
        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0)
            child_host(unload);
        int ws = 0;
        ck_assert_int_eq(waitpid(c, &ws, 0), c);
        ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child host (%s): status %d",
                      unload ? "unload" : "exit", WEXITSTATUS(ws));
        /* Nothing the child's shells held is left (the shells were its
         * children: their records and cgroups name its pid). */
        ck_assert_int_eq(records(), 0);
    }
}
END_TEST

/* The library's process-wide probe is freed when it is unloaded: a host
 * that loads, probes and unloads it again and again keeps no memory of
 * each load (it kept about 7 kB each, for good). */
static void child_reloads(void) {
    size_t heap[2] = {0, 0};
    for (int i = 0; i < 22; i++) {
        void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            _exit(10);
        int (*probe)(uint64_t, fy_caps **, fy_error **) =
            (int (*)(uint64_t, fy_caps **, fy_error **))dlsym(lib, "fy_probe");
        void (*caps_free)(fy_caps *) = (void (*)(fy_caps *))dlsym(lib, "fy_caps_free");
        fy_caps *c = NULL;
        if (!probe || !caps_free || probe(FY_PROBE_NO_VM, &c, NULL) < 0)
            _exit(11);
        caps_free(c);
        dlclose(lib);
        if (i == 1 || i == 21)
            heap[i == 21] = mallinfo2().uordblks; /* (the first load's lasting state of the loader is in) */
    }
    fprintf(stderr, "heap after 2 loads %zu bytes, after 22 %zu\n", heap[0], heap[1]);
    _exit(heap[1] <= heap[0] + 49152 ? 0 : 12); /* (it grew 190 kB; the loader itself keeps a little) */
}

START_TEST(test_unload_frees_the_probe) {
#if defined(__SANITIZE_ADDRESS__)
    return; /* (the sanitizer's allocator is not malloc's: mallinfo2 says nothing) */
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
    return;
#  endif
#endif
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0)
        child_reloads();
    int ws = 0;
    ck_assert_int_eq(waitpid(c, &ws, 0), c);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "reloading host: status %d", WEXITSTATUS(ws));
}
END_TEST

static bool alive_not_zombie(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool alive = false;
    if (fgets(buf, sizeof(buf), f)) {
        char *close_paren = strrchr(buf, ')');
        alive = close_paren && close_paren[1] && close_paren[2] != 'Z' && close_paren[2] != 'X';
    }
    fclose(f);
    return alive;
}

/* A host that dies while a child it forked lives on (a prefork worker that
 * never calls the library): the child let go of its copies of the shells'
 * sockets at the fork, so the shells see their host gone and leave at
 * once, not when that child ends. */
START_TEST(test_host_death_with_forked_child) {
    int pids[2], hold[2];
    ck_assert_int_eq(pipe(pids), 0);
    ck_assert_int_eq(pipe(hold), 0);
    pid_t host = fork();
    ck_assert_int_ge(host, 0);
    if (host == 0) {
        close(pids[0]);
        close(hold[1]);
        fy_prepared *pr = prepare_true();
        fy_shells *s = NULL;
        if (fy_shells_new(pr, 1, 30000000, &s, NULL) < 0 || fy_shells_fill(s, NULL) != 1)
            _exit(12);
        pid_t shell = 0;
        if (shells_of_ours(&shell, NULL) != 1)
            _exit(13);
        pid_t worker = fork();
        if (worker == 0) {
            /* Lives until the test lets it go (bounded: 20 s). */
            struct pollfd pf = {.fd = hold[0], .events = POLLIN};
            (void)poll(&pf, 1, 20000);
            _exit(0);
        }
        pid_t both[2] = {shell, worker};
        if (write(pids[1], both, sizeof(both)) != (ssize_t)sizeof(both))
            _exit(14);
        kill(getpid(), SIGKILL);
        _exit(15);
    }
    close(pids[1]);
    close(hold[0]);
    pid_t both[2] = {0, 0};
    ck_assert_int_eq(read(pids[0], both, sizeof(both)), (ssize_t)sizeof(both));
    close(pids[0]);
    int ws = 0;
    ck_assert_int_eq(waitpid(host, &ws, 0), host);
    ck_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    bool gone = false;
    for (int i = 0; i < 50 && !gone; i++) {
        gone = !alive_not_zombie(both[0]);
        if (!gone)
            usleep(100000);
    }
    bool worker_alive = alive_not_zombie(both[1]);
    close(hold[1]); /* the worker goes */
    for (int i = 0; i < 100 && alive_not_zombie(both[1]); i++)
        usleep(100000);
    ck_assert_msg(worker_alive, "the forked worker ended early");
    ck_assert_msg(gone, "the shell outlived its host while a forked child lived");
    /* The dead host's record and cgroups: fy_gc's. */
    uint64_t destroyed = 0;
    ck_assert_int_eq(fy_gc(state, 0, &destroyed, NULL), 0);
    ck_assert_int_eq(records(), 0);
}
END_TEST

static void remove_scratch(void) {
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", scratch);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBFORGEYARD.so [--rootless]\n", argv[0]);
        return 2;
    }
    libpath = argv[1];
    bool want_rootless = argc > 2 && strcmp(argv[2], "--rootless") == 0;
    if (want_rootless && getuid() == 0 && !getenv("FY_TEST_SCRATCH")) {
        snprintf(scratch, sizeof(scratch), "/tmp/fy-shells-XXXXXX");
        if (!mkdtemp(scratch) || chown(scratch, 65534, 65534) < 0)
            return 1;
        setenv("FY_TEST_SCRATCH", scratch, 1);
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            return 1;
        execv("/proc/self/exe", argv);
        return 1;
    }
    if (want_rootless && !getenv("FY_TEST_SCRATCH"))
        return 77;
    rootless = getuid() != 0;
    if (getenv("FY_TEST_SCRATCH")) {
        snprintf(scratch, sizeof(scratch), "%s", getenv("FY_TEST_SCRATCH"));
    } else {
        snprintf(scratch, sizeof(scratch), "/tmp/fy-shells-XXXXXX");
        if (!mkdtemp(scratch))
            return 1;
    }
    snprintf(state, sizeof(state), "%s/state", scratch);
    Suite *s = suite_create(rootless ? "shells-rootless" : "shells");
    TCase *tc = tcase_create("shells");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_claimed_shell_is_the_same_attempt);
    tcase_add_test(tc, test_shell_holds_nothing_before_its_claim);
    tcase_add_test(tc, test_restricted_shell_has_no_link_before_its_claim);
    tcase_add_test(tc, test_shell_v1_cgroups_bare_then_limited);
    tcase_add_test(tc, test_idle_shells_are_discarded);
    tcase_add_test(tc, test_fill_umask_not_carried);
    tcase_add_test(tc, test_host_limits_after_fill);
    tcase_add_test(tc, test_shell_killed_before_claim_starts_cold);
    tcase_add_test(tc, test_host_death_with_forked_child);
    tcase_add_test(tc, test_shell_leaves_by_itself);
    tcase_add_test(tc, test_mismatch_discards);
    tcase_add_test(tc, test_fork_forgets);
    tcase_add_test(tc, test_free_is_witnessed);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_concurrent_fills_make_no_more);
    tcase_add_test(tc, test_unload_and_exit_discard);
    tcase_add_test(tc, test_unload_frees_the_probe);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (!getenv("FY_TEST_SCRATCH") || rootless)
        remove_scratch();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
