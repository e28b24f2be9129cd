/* Spawn safety inside a busy multi-threaded host: 16 threads, half of them
 * allocating and opening fds WITHOUT O_CLOEXEC in a loop, the other half
 * starting 2,000 sandboxes from one shared prepared plan. There must be no
 * deadlock (the suite has a deadline), every attempt must succeed, no
 * leaked fd may reach a workload, and the host's fd count must come back.
 * The plans have a source and a read-only bind: as root the host hands
 * them over as trees made per start, idmapped through a user namespace
 * whose short-lived holder process must never keep another thread's fds
 * (a copy of the fd table once kept the pipes that ended two holders
 * open, each the other's: a deadlock). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#define NOISE_THREADS 8
#define SPAWN_THREADS 8
#define ATTEMPTS 2000

static atomic_bool stop;
static atomic_int succeeded, failed, leaked_seen, forks, undumpable_forks;
static fy_prepared *plan, *fd_plan;
static char scratch[64];

static void *noise(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop)) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 65536);
        char *p = malloc(n);
        if (p) {
            memset(p, 1, n < 64 ? n : 64);
            free(p);
        }
        int fd = open("/dev/null", O_RDONLY); /* deliberately inheritable */
        if (fd >= 0)
            close(fd);
    }
    return NULL;
}

/* As root each start takes the id range's first id for its clone, and the
 * kernel makes the process non-dumpable at such a change; the library puts
 * it back, and a fork of the host waits for a switch in progress (its
 * pthread_atfork handlers): no child of a fork ever starts non-dumpable.
 * Bounded: one fork per millisecond at most, while the spawners run. */
static void *forker(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 ? 0 : 3);
        if (pid > 0) {
            int st = 0;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            atomic_fetch_add(&forks, 1);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                atomic_fetch_add(&undumpable_forks, 1);
        }
        usleep(1000);
    }
    return NULL;
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

static void *spawner(void *arg) {
    int id = (int)(uintptr_t)arg;
    for (int i = 0; i < ATTEMPTS / SPAWN_THREADS; i++) {
        bool check_fds = i % 50 == 0;
        fy_handle *h = NULL;
        fy_result *res = NULL;
        if (fy_start(check_fds ? fd_plan : plan, &h, NULL) < 0 || fy_handle_wait(h, 60000000, &res, NULL) != 1) {
            atomic_fetch_add(&failed, 1);
            fy_handle_free(h);
            continue;
        }
        if (fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED)
            atomic_fetch_add(&succeeded, 1);
        else if (check_fds && fy_result_outcome(res) == FY_OUTCOME_FAILED)
            atomic_fetch_add(&leaked_seen, 1); /* the workload saw an fd beyond 0-2 */
        else
            atomic_fetch_add(&failed, 1);
        fy_result_free(res);
        fy_handle_free(h);
    }
    (void)id;
    return NULL;
}

START_TEST(test_threads_2000) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    ck_assert(scratch[0] == '/');
    /* (a service user's tree: root's own is never idmapped) */
    if (geteuid() == 0)
        ck_assert_int_eq(chown(scratch, 4242, 4242), 0);
    ck_assert_int_eq(fy_policy_set_source(p, scratch, 0, NULL), 0);
    ck_assert_int_eq(fy_policy_add_bind(p, scratch, "/opt/ro", FY_BIND_READ_ONLY, NULL), 0);
    const char *argv[] = {"/bin/true", NULL};
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &plan, NULL), 0);
    /* The workload fails if it holds any fd other than 0, 1, 2 (the
     * directory listing's own fd is the only extra one ls may show). */
    const char *fdargv[] = {"/bin/sh", "-c", "test \"$(ls /proc/self/fd | wc -l)\" -le 4", NULL};
    ck_assert_int_eq(fy_prepare(p, NULL, fdargv, &fd_plan, NULL), 0);
    fy_policy_free(p);
    int before = count_fds();
    ck_assert_int_eq(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
    pthread_t noise_t[NOISE_THREADS], spawn_t[SPAWN_THREADS], fork_t;
    for (int i = 0; i < NOISE_THREADS; i++)
        pthread_create(&noise_t[i], NULL, noise, (void *)(uintptr_t)(i + 1));
    pthread_create(&fork_t, NULL, forker, NULL);
    for (int i = 0; i < SPAWN_THREADS; i++)
        pthread_create(&spawn_t[i], NULL, spawner, (void *)(uintptr_t)i);
    for (int i = 0; i < SPAWN_THREADS; i++)
        pthread_join(spawn_t[i], NULL);
    atomic_store(&stop, true);
    for (int i = 0; i < NOISE_THREADS; i++)
        pthread_join(noise_t[i], NULL);
    pthread_join(fork_t, NULL);
    ck_assert_int_gt(atomic_load(&forks), 0);
    ck_assert_msg(atomic_load(&undumpable_forks) == 0, "%d of %d forks started non-dumpable",
                  atomic_load(&undumpable_forks), atomic_load(&forks));
    ck_assert_msg(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "the starts left the host non-dumpable");
    ck_assert_int_eq(atomic_load(&leaked_seen), 0);
    ck_assert_int_eq(atomic_load(&failed), 0);
    ck_assert_int_eq(atomic_load(&succeeded), ATTEMPTS);
    ck_assert_int_eq(count_fds(), before);
    fy_prepared_free(plan);
    fy_prepared_free(fd_plan);
}
END_TEST

int main(void) {
    fy_caps *c = NULL;
    if (fy_probe(FY_PROBE_NO_VM, &c, NULL) < 0)
        return 1;
    fy_caps_free(c);
    /* The scratch directory is made and removed here, around the forked
     * test, so a failing test leaves nothing behind either. */
    snprintf(scratch, sizeof(scratch), "/tmp/fy-threads-XXXXXX");
    if (!mkdtemp(scratch))
        return 1;
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("spawn-safety");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_threads_2000);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (rmdir(scratch) < 0)
        fprintf(stderr, "cannot remove %s: %s\n", scratch, strerror(errno));
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
