/* fy-leak: the leak test (a program, run by a documented command, not by
 * `meson test`): N mixed attempts (success, failure, timeout, cancel, OOM,
 * violation) from two threads, then checks that nothing is left: host
 * processes of the sandboxes, cgroups, state records, fds, and that the
 * host program's RSS did not grow beyond a small allowance.
 *
 * With --shells every attempt starts in a pre-started shell of one set
 * (fy_shells_new), refilled after each start, and the set is freed at the
 * end: nothing of the shells may be left either.
 *
 *   ./build/test/linux/fy-leak [ATTEMPTS] [--shells]      (default 10000) */
#include <dirent.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

static int attempts = 10000;
static atomic_int next_i, outcomes[10], errors;
static fy_prepared *plans[6];
static char state[64];
static fy_shells *shells; /* --shells */

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    long v = 0;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            v = atol(line + 6);
    if (f)
        fclose(f);
    return v;
}

static int count_dir(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.' && !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

static int count_fds(void) { return count_dir("/proc/self/fd", ""); }

/* Mounts in this process's (the host's) mount namespace. */
static int count_mounts(void) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    int n = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

/* Processes whose parent is this one (sandboxes' inits, shells). */
static int count_children(void) {
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "re") : NULL;
        if (f && fgets(buf, sizeof(buf), f)) {
            const char *close_paren = strrchr(buf, ')');
            int ppid = 0;
            if (close_paren && sscanf(close_paren + 2, "%*c %d", &ppid) == 1 && ppid == (int)getpid())
                n++;
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static void *worker(void *arg) {
    (void)arg;
    int i;
    while ((i = atomic_fetch_add(&next_i, 1)) < attempts) {
        int kind = i % 10; /* 0-3 ok, 4-5 fail, 6 timeout, 7 cancel, 8 violation, 9 oom */
        int plan = kind <= 3 ? 0 : kind <= 5 ? 1 : kind - 4;
        fy_handle *h = NULL;
        fy_result *res = NULL;
        if (fy_start_shell(plans[plan], shells, &h, NULL) < 0) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        if (shells && fy_shells_fill(shells, NULL) < 0)
            atomic_fetch_add(&errors, 1);
        if (kind == 7)
            fy_handle_cancel(h, FY_CANCEL_RUN_CANCELLED, NULL);
        if (fy_handle_wait(h, 60000000, &res, NULL) != 1)
            atomic_fetch_add(&errors, 1);
        else
            atomic_fetch_add(&outcomes[fy_result_outcome(res)], 1);
        fy_result_free(res);
        fy_handle_free(h);
    }
    return NULL;
}

int main(int argc, char **argv) {
    bool with_shells = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--shells") == 0)
            with_shells = true;
        else
            attempts = atoi(argv[i]);
    }
    snprintf(state, sizeof(state), "/tmp/fy-leak-state-%d", (int)getpid());
    /* A workspace for two of the plans (one of them the shells'): a root
     * caller's is handed over as host trees, the read-only one idmapped
     * (linux-idmap.c), and those must leave nothing either. */
    char src[64];
    snprintf(src, sizeof(src), "/tmp/fy-leak-src-%d", (int)getpid());
    if (mkdir(src, 0700) < 0 || (geteuid() == 0 && chown(src, 4242, 4242) < 0)) {
        perror(src); /* (as root, a service user's tree: root's own is never idmapped) */
        return 1;
    }
    const char *argvs[6][4] = {
        {"/bin/true", NULL},
        {"/bin/false", NULL},
        {"/bin/sleep", "10", NULL},
        {"/bin/sleep", "10", NULL},
        {"/bin/sh", "-c", "exec mount -t tmpfs none /tmp", NULL},
        {"/bin/sh", "-c", "exec tail /dev/zero", NULL}, /* grows without bound */
    };
    for (int k = 0; k < 6; k++) {
        fy_policy *p = NULL;
        fy_error *e = NULL;
        fy_policy_new(FY_PROFILE_RELEASE, &p, NULL);
        fy_policy_set_state_dir(p, state, NULL);
        fy_policy_set_limit(p, FY_LIMIT_GRACE, 20000, NULL);
        if (k < 2 && (fy_policy_set_source(p, src, 0, &e) < 0 ||
                      fy_policy_add_bind(p, src, "/opt/ro", FY_BIND_READ_ONLY, &e) < 0)) {
            fprintf(stderr, "source %d: %s\n", k, fy_error_message(e));
            return 1;
        }
        if (k == 2)
            fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 30000, NULL);
        if (k == 5) {
            fy_policy_set_limit(p, FY_LIMIT_MEMORY, 32u << 20, NULL);
            fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_PREFER, NULL);
            fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 5000000, NULL);
        }
        if (fy_prepare(p, NULL, argvs[k], &plans[k], &e) < 0) {
            fprintf(stderr, "prepare %d: %s\n", k, fy_error_message(e));
            return 1;
        }
        fy_policy_free(p);
    }
    /* Warm up (caches, first allocations), then measure. */
    int save = attempts;
    attempts = 20;
    worker(NULL);
    attempts = save;
    atomic_store(&next_i, 0);
    memset(outcomes, 0, sizeof(outcomes));
    long rss0 = rss_kb();
    int fds0 = count_fds(), mounts0 = count_mounts();
    if (with_shells) {
        fy_error *e = NULL;
        if (fy_shells_new(plans[0], 2, 60000000, &shells, &e) < 0 || fy_shells_fill(shells, &e) < 0) {
            fprintf(stderr, "shells: %s\n", fy_error_message(e));
            return 1;
        }
    }
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, worker, NULL);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    uint64_t claimed = 0, shells_left = 0;
    if (shells) {
        fy_shells_stat(shells, FY_SHELLS_CLAIMED, &claimed);
        fy_shells_free(shells); /* every shell discarded, witnessed */
        shells = NULL;
    }
    long rss1 = rss_kb();
    int fds1 = count_fds(), mounts1 = count_mounts();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "forgeyard-%d-", (int)getpid());
    int cg = count_dir("/sys/fs/cgroup/pids", prefix) + count_dir("/sys/fs/cgroup/cpuacct", prefix) +
             count_dir("/sys/fs/cgroup/unified", prefix) + count_dir("/sys/fs/cgroup/cpu", prefix);
    int recs = count_dir(state, "forgeyard-");
    int children = count_dir("/proc/self/task", "") - 1; /* threads other than us: none expected */
    int procs = count_children();
    printf("fy-leak: %d attempts: succeeded %d, failed %d, timed-out %d, cancelled %d, violation %d, "
           "out-of-memory %d, errors %d\n",
           attempts, outcomes[FY_OUTCOME_SUCCEEDED], outcomes[FY_OUTCOME_FAILED], outcomes[FY_OUTCOME_TIMED_OUT],
           outcomes[FY_OUTCOME_CANCELLED], outcomes[FY_OUTCOME_SANDBOX_VIOLATION], outcomes[FY_OUTCOME_OUT_OF_MEMORY],
           errors);
    if (with_shells)
        printf("  shells: %llu attempts in a claimed shell (of %d)\n", (unsigned long long)claimed, attempts + 20);
    printf("  left: processes %d, cgroups %d, state records %d, extra threads %d; fds %d -> %d; host mounts %d -> %d; "
           "RSS %ld -> %ld KiB\n",
           procs, cg, recs, children, fds0, fds1, mounts0, mounts1, rss0, rss1);
    for (int k = 0; k < 6; k++)
        fy_prepared_free(plans[k]);
    rmdir(state);
    rmdir(src);
    (void)shells_left;
    bool ok = !errors && !procs && !cg && !recs && fds0 == fds1 && mounts0 == mounts1 && rss1 - rss0 < 2048 &&
              (!with_shells || claimed >= (uint64_t)attempts) &&
              outcomes[FY_OUTCOME_SUCCEEDED] + outcomes[FY_OUTCOME_FAILED] + outcomes[FY_OUTCOME_TIMED_OUT] +
                      outcomes[FY_OUTCOME_CANCELLED] + outcomes[FY_OUTCOME_SANDBOX_VIOLATION] +
                      outcomes[FY_OUTCOME_OUT_OF_MEMORY] == attempts;
    printf("fy-leak: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
