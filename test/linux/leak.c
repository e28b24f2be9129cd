/* fy-leak: the leak test (a program, run by a documented command, not by
 * `meson test`): N mixed attempts (success, failure, timeout, cancel, OOM,
 * violation) from two threads, then checks that nothing is left: host
 * processes of the sandboxes, cgroups, state records, fds, and that the
 * host program's RSS did not grow beyond a small allowance.
 *
 *   ./build/test/linux/fy-leak [ATTEMPTS]      (default 10000) */
#include <dirent.h>
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

static void *worker(void *arg) {
    (void)arg;
    int i;
    while ((i = atomic_fetch_add(&next_i, 1)) < attempts) {
        int kind = i % 10; /* 0-3 ok, 4-5 fail, 6 timeout, 7 cancel, 8 violation, 9 oom */
        int plan = kind <= 3 ? 0 : kind <= 5 ? 1 : kind - 4;
        fy_handle *h = NULL;
        fy_result *res = NULL;
        if (fy_start(plans[plan], &h, NULL) < 0) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
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
    if (argc > 1)
        attempts = atoi(argv[1]);
    snprintf(state, sizeof(state), "/tmp/fy-leak-state-%d", (int)getpid());
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
    int fds0 = count_fds();
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, worker, NULL);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    long rss1 = rss_kb();
    int fds1 = count_fds();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "forgeyard-%d-", (int)getpid());
    int cg = count_dir("/sys/fs/cgroup/pids", prefix) + count_dir("/sys/fs/cgroup/cpuacct", prefix) +
             count_dir("/sys/fs/cgroup/unified", prefix) + count_dir("/sys/fs/cgroup/cpu", prefix);
    int recs = count_dir(state, "forgeyard-");
    int children = count_dir("/proc/self/task", "") - 1; /* threads other than us: none expected */
    printf("fy-leak: %d attempts: succeeded %d, failed %d, timed-out %d, cancelled %d, violation %d, "
           "out-of-memory %d, errors %d\n",
           attempts, outcomes[FY_OUTCOME_SUCCEEDED], outcomes[FY_OUTCOME_FAILED], outcomes[FY_OUTCOME_TIMED_OUT],
           outcomes[FY_OUTCOME_CANCELLED], outcomes[FY_OUTCOME_SANDBOX_VIOLATION], outcomes[FY_OUTCOME_OUT_OF_MEMORY],
           errors);
    printf("  left: cgroups %d, state records %d, extra threads %d; fds %d -> %d; RSS %ld -> %ld KiB\n", cg, recs,
           children, fds0, fds1, rss0, rss1);
    for (int k = 0; k < 6; k++)
        fy_prepared_free(plans[k]);
    rmdir(state);
    bool ok = !errors && !cg && !recs && fds0 == fds1 && rss1 - rss0 < 2048 &&
              outcomes[FY_OUTCOME_SUCCEEDED] + outcomes[FY_OUTCOME_FAILED] + outcomes[FY_OUTCOME_TIMED_OUT] +
                      outcomes[FY_OUTCOME_CANCELLED] + outcomes[FY_OUTCOME_SANDBOX_VIOLATION] +
                      outcomes[FY_OUTCOME_OUT_OF_MEMORY] == attempts;
    printf("fy-leak: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
