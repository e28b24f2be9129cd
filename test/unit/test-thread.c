/* The library's helper threads (util_thread_start, os.h): they take none
 * of the host's signals; a detached one runs and is joined by nobody; one
 * started "beside" its creator starts on another of the creator's CPUs
 * (where a helper shares work that is running now: it would otherwise
 * wait on its creator's busy CPU) and may then run on all of them. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct seen {
    atomic_int done;
    int cpu;
    sigset_t mask;
#ifdef __linux__
    cpu_set_t cpus;
#endif
};

static void *look(void *arg) {
    struct seen *s = arg;
    s->cpu = sched_getcpu();
    pthread_sigmask(SIG_SETMASK, NULL, &s->mask);
#ifdef __linux__
    if (sched_getaffinity(0, sizeof(s->cpus), &s->cpus) < 0)
        CPU_ZERO(&s->cpus);
#endif
    atomic_store(&s->done, 1);
    return NULL;
}

/* Until the thread has looked (the caller keeps its CPU busy, as a
 * creator that shares the work does): at most about a second. */
static bool wait_done(struct seen *s) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long i = 0;; i++) {
        if (atomic_load(&s->done))
            return true;
        if ((i & 1023) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec > 1)
                return false;
        }
    }
}

START_TEST(test_signals_blocked) {
    for (int beside = 0; beside < 2; beside++) {
        struct seen s = {0};
        pthread_t th;
        ck_assert_int_eq(util_thread_start(&th, false, beside, look, &s), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        for (int sig = 1; sig < 32; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                ck_assert_msg(sigismember(&s.mask, sig) == 1, "signal %d not blocked in a helper", sig);
        /* and the caller's own mask is as it was */
        sigset_t mine;
        pthread_sigmask(SIG_SETMASK, NULL, &mine);
        ck_assert_int_eq(sigismember(&mine, SIGTERM), 0);
    }
}
END_TEST

START_TEST(test_detached) {
    struct seen s = {0};
    pthread_t untouched;
    memset(&untouched, 0x5a, sizeof(untouched));
    pthread_t copy = untouched;
    ck_assert_int_eq(util_thread_start(NULL, true, false, look, &s), 0);
    ck_assert(wait_done(&s));
    static struct seen s2;
    ck_assert_int_eq(util_thread_start(&untouched, true, true, look, &s2), 0);
    ck_assert_int_eq(memcmp(&untouched, &copy, sizeof(copy)), 0);
    ck_assert(wait_done(&s2));
}
END_TEST

#ifdef __linux__
START_TEST(test_beside_other_cpu) {
    cpu_set_t mine;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
    if (CPU_COUNT(&mine) < 2) {
        fprintf(stderr, "test_beside_other_cpu: skipped, this process may use one CPU only\n");
        return;
    }
    int trials = 0, elsewhere = 0;
    for (int i = 0; i < 60; i++) {
        usleep(2000); /* an idle spell first, as a host between attempts */
        struct seen s = {0};
        pthread_t th;
        int before = sched_getcpu();
        ck_assert_int_eq(util_thread_start(&th, false, true, look, &s), 0);
        int after = sched_getcpu();
        ck_assert_msg(wait_done(&s), "the helper did not run within a second");
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        /* It may use every CPU its creator may. */
        ck_assert_msg(CPU_EQUAL(&s.cpus, &mine), "a helper kept a narrowed CPU set");
        if (before != after)
            continue; /* (the creator moved: no telling which CPU was its) */
        trials++;
        elsewhere += s.cpu != before;
    }
    /* Started where its creator is not, every time (the scheduler may move
     * it back after it took its whole set, rarely that soon). A plain
     * thread here starts on the creator's CPU after an idle spell nearly
     * always (measured: 186 of 200). */
    ck_assert_msg(trials >= 30, "the creator moved in %d of 60 trials", 60 - trials);
    ck_assert_msg(elsewhere * 10 >= trials * 9, "a helper started beside its creator ran on another CPU in %d of %d",
                  elsewhere, trials);
}
END_TEST

START_TEST(test_beside_one_cpu) {
    /* A creator with one CPU: the helper shares it (no spread, no error). */
    cpu_set_t mine, one;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    struct seen s = {0};
    pthread_t th;
    ck_assert_int_eq(util_thread_start(&th, false, true, look, &s), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert(CPU_EQUAL(&s.cpus, &one));
    ck_assert_int_eq(sched_setaffinity(0, sizeof(mine), &mine), 0);
}
END_TEST
#endif

int main(void) {
    Suite *s = suite_create("thread");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_signals_blocked);
    tcase_add_test(tc, test_detached);
#ifdef __linux__
    tcase_add_test(tc, test_beside_other_cpu);
    tcase_add_test(tc, test_beside_one_cpu);
#endif
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
