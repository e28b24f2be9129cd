/* fy-bench: the peer benchmark. Not a test: it prints medians and ratios
 * measured side by side in one run (see README "Performance").
 *
 *   lifecycle   release-profile /bin/true: fy_prepare+fy_start+wait+free
 *   start       the same from one prepared plan (fy_start+wait+free)
 *   fork+exec   posix_spawn + waitpid of /usr/bin/true
 *   bwrap       bwrap --unshare-all --die-with-parent --new-session
 *               --ro-bind /usr /usr (+ the /lib, /lib64, /bin symlinks of a
 *               merged-/usr system) --proc /proc --dev /dev --tmpfs /tmp
 *               --cap-drop ALL /usr/bin/true
 *   memory      host RSS and PSS per concurrently running sandbox, N sleeping
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

extern char **environ;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_u64);
    return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e6;
}

static int spawn_wait(char *const argv[]) {
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return -1;
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static fy_policy *release_policy(void) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    if (fy_policy_new(FY_PROFILE_RELEASE, &p, &e) < 0) {
        fprintf(stderr, "policy: %s\n", fy_error_message(e));
        exit(1);
    }
    return p;
}

static int run_one(fy_prepared *pr) {
    fy_handle *h = NULL;
    fy_result *res = NULL;
    fy_error *e = NULL;
    if (fy_start(pr, &h, &e) < 0 || fy_handle_wait(h, FY_UNLIMITED, &res, &e) != 1) {
        fprintf(stderr, "run: %s\n", fy_error_message(e));
        exit(1);
    }
    int ok = fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED;
    fy_result_free(res);
    fy_handle_free(h);
    return ok ? 0 : -1;
}

static long read_kb(const char *path, const char *key) {
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[256];
    long v = 0;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0) {
            v = strtol(line + kl, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    int sleepers = argc > 2 ? atoi(argv[2]) : 200;
    const char *bwrap = access("/usr/bin/bwrap", X_OK) == 0 ? "/usr/bin/bwrap" : NULL;
    uint64_t *t_life = calloc((size_t)n, 8), *t_start = calloc((size_t)n, 8), *t_fork = calloc((size_t)n, 8),
             *t_bwrap = calloc((size_t)n, 8);
    const char *argv_true[] = {"/bin/true", NULL};
    char *fork_argv[] = {"/usr/bin/true", NULL};
    /* The flags, plus the merged-/usr symlinks the dynamic loader needs. */
    char *bwrap_argv[] = {(char *)bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr",
                          "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink",
                          "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                          "/usr/bin/true", NULL};
    fy_caps *caps = NULL;
    fy_probe(FY_PROBE_NO_VM, &caps, NULL); /* warm the probe cache outside the timings */
    fy_caps_free(caps);
    fy_policy *p = release_policy();
    fy_prepared *shared = NULL;
    if (fy_prepare(p, NULL, argv_true, &shared, NULL) < 0)
        return 1;
    /* Interleave the contenders so that drift hits all of them alike. */
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        fy_prepared *pr = NULL;
        if (fy_prepare(p, NULL, argv_true, &pr, NULL) < 0 || run_one(pr) < 0)
            return 1;
        fy_prepared_free(pr);
        uint64_t t1 = now_ns();
        if (run_one(shared) < 0)
            return 1;
        uint64_t t2 = now_ns();
        if (spawn_wait(fork_argv) != 0)
            return 1;
        uint64_t t3 = now_ns();
        if (bwrap && spawn_wait(bwrap_argv) != 0) {
            fprintf(stderr, "bwrap failed; skipping it\n");
            bwrap = NULL;
        }
        uint64_t t4 = now_ns();
        t_life[i] = t1 - t0;
        t_start[i] = t2 - t1;
        t_fork[i] = t3 - t2;
        t_bwrap[i] = t4 - t3;
    }
    double life = median_ms(t_life, n), start = median_ms(t_start, n), fork = median_ms(t_fork, n);
    printf("fy-bench: %d runs each, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
    printf("  %-34s %8.3f ms\n", "bare fork+exec /usr/bin/true", fork);
    if (bwrap) {
        double bw = median_ms(t_bwrap, n);
        printf("  %-34s %8.3f ms\n", "bwrap (strict flags)", bw);
        printf("  %-34s %8.3f ms   ratio to bwrap %.2fx (target <= 0.50x)\n", "forgeyard lifecycle (release)", life,
               life / bw);
        printf("  %-34s %8.3f ms   ratio to bwrap %.2fx\n", "forgeyard start+wait (shared plan)", start, start / bw);
    } else {
        printf("  bwrap not installed: no peer ratio\n");
        printf("  %-34s %8.3f ms\n", "forgeyard lifecycle (release)", life);
        printf("  %-34s %8.3f ms\n", "forgeyard start+wait (shared plan)", start);
    }
    /* Memory: N sandboxes sleeping at once. */
    const char *argv_sleep[] = {"/bin/sleep", "60", NULL};
    fy_prepared *sleep_plan = NULL;
    if (fy_prepare(p, NULL, argv_sleep, &sleep_plan, NULL) < 0)
        return 1;
    long self_before = read_kb("/proc/self/status", "VmRSS:");
    fy_handle **hs = calloc((size_t)sleepers, sizeof(*hs));
    for (int i = 0; i < sleepers; i++)
        if (fy_start(sleep_plan, &hs[i], NULL) < 0) {
            fprintf(stderr, "could not start sleeper %d\n", i);
            sleepers = i;
            break;
        }
    usleep(1500000); /* let every sandbox reach its workload */
    for (int i = 0; i < sleepers; i++)
        fy_handle_process(hs[i], NULL, NULL);
    /* Sum over every process whose parent chain leads to us, except us. */
    long rss = 0, pss = 0;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ps -o pid= --ppid %d", (int)getpid());
    FILE *ps = popen(cmd, "re");
    int inits = 0;
    char line[64];
    while (ps && fgets(line, sizeof(line), ps)) {
        int pid = atoi(line);
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
        rss += read_kb(path, "Rss:");
        pss += read_kb(path, "Pss:");
        inits++;
        /* the sandbox's workload is the init's child (pid 2 inside) */
        char c2[96];
        snprintf(c2, sizeof(c2), "ps -o pid= --ppid %d", pid);
        FILE *ps2 = popen(c2, "re");
        char l2[64];
        while (ps2 && fgets(l2, sizeof(l2), ps2)) {
            snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", atoi(l2));
            rss += read_kb(path, "Rss:");
            pss += read_kb(path, "Pss:");
        }
        if (ps2)
            pclose(ps2);
    }
    if (ps)
        pclose(ps);
    long self_after = read_kb("/proc/self/status", "VmRSS:");
    printf("  %d sleeping sandboxes (%d inits found): per sandbox RSS %.0f KiB, PSS %.0f KiB; "
           "library process grew %.1f KiB per sandbox\n",
           sleepers, inits, sleepers ? (double)rss / sleepers : 0, sleepers ? (double)pss / sleepers : 0,
           sleepers ? (double)(self_after - self_before) / sleepers : 0);
    for (int i = 0; i < sleepers; i++)
        fy_handle_free(hs[i]);
    fy_prepared_free(sleep_plan);
    fy_prepared_free(shared);
    fy_policy_free(p);
    return 0;
}
