/* The POSIX OS layer's helpers (os.h), through their util_ names.
 * Helper threads (util_thread_start): they take none of the host's
 * signals; a detached one runs and is joined by nobody; one started
 * "beside" its creator starts on another of the creator's CPUs (where a
 * helper shares work that is running now: it would otherwise wait on its
 * creator's busy CPU) and may then run on all of them.
 * Cache directories (util_cache_dir): the override, root's, XDG's, a home
 * of the user's own, else a 0700 directory of the user's own in TMPDIR,
 * never one another user made.
 * Tree removal (util_remove_tree_at): any depth (a workload's 3,000-deep
 * tree once outlived its attempt: the removers stopped at 256), never
 * through a link, directories without permissions opened up, never into
 * another file system when asked. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- cache directories ---- */

static char tmpd[64];

static void cache_env(const char *home, const char *xdg, const char *tmp) {
    unsetenv("FY_TEST_CACHE");
    home ? setenv("HOME", home, 1) : unsetenv("HOME");
    xdg ? setenv("XDG_CACHE_HOME", xdg, 1) : unsetenv("XDG_CACHE_HOME");
    tmp ? setenv("TMPDIR", tmp, 1) : unsetenv("TMPDIR");
}

/* fn in a child as uid/gid 65534 (root only); its exit status. */
static int as_nobody(void (*fn)(void)) {
    pid_t p = fork();
    if (p == 0) {
        if (setgid(65534) < 0 || setuid(65534) < 0)
            _exit(99);
        fn();
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 98;
}

static int expect(const char *got, const char *want) {
    int ok = got && want && strcmp(got, want) == 0;
    if (!ok)
        fprintf(stderr, "cache dir: got %s, want %s\n", got ? got : "(null)", want ? want : "(null)");
    return ok;
}

static void nobody_cases(void) {
    char want[256], base[200];
    struct stat st;
    /* The override, absolute only. */
    cache_env("/nonexistent", NULL, tmpd);
    setenv("FY_TEST_CACHE", "/somewhere/c", 1);
    char *d = util_cache_dir("FY_TEST_CACHE", "leaf");
    if (!expect(d, "/somewhere/c"))
        _exit(1);
    free(d);
    setenv("FY_TEST_CACHE", "relative/c", 1);
    snprintf(want, sizeof(want), "%s/forgeyard-65534/leaf", tmpd);
    d = util_cache_dir("FY_TEST_CACHE", "leaf");
    if (!expect(d, want))
        _exit(2);
    free(d);
    /* A service user (HOME=/nonexistent): a 0700 directory of its own. */
    cache_env("/nonexistent", NULL, tmpd);
    snprintf(base, sizeof(base), "%s/forgeyard-65534", tmpd);
    if (!expect(d = util_cache_dir(NULL, "leaf"), want) || lstat(base, &st) < 0 || st.st_uid != 65534 ||
        (st.st_mode & 0777) != 0700)
        _exit(3);
    free(d);
    /* HOME=/ (another user's directory) is no home of ours either. */
    cache_env("/", NULL, tmpd);
    if (!expect(d = util_cache_dir(NULL, "leaf"), want))
        _exit(4);
    free(d);
    /* XDG's first, then a home that is ours. */
    cache_env(base, "/x/cache", tmpd);
    if (!expect(d = util_cache_dir(NULL, "leaf"), "/x/cache/forgeyard/leaf"))
        _exit(5);
    free(d);
    cache_env(base, NULL, tmpd);
    snprintf(want, sizeof(want), "%s/.cache/forgeyard/leaf", base);
    if (!expect(d = util_cache_dir(NULL, "leaf"), want))
        _exit(6);
    free(d);
    /* Made a little too open: refused, not tightened behind the owner's back. */
    if (chmod(base, 0755) < 0)
        _exit(7);
    cache_env("/nonexistent", NULL, tmpd);
    errno = 0;
    if ((d = util_cache_dir(NULL, "leaf")) || errno != EPERM)
        _exit(8);
}

static void planted_cases(void) {
    /* Another user's directory (or link) under the name: never used. */
    char alt[128];
    for (int i = 0; i < 2; i++) {
        snprintf(alt, sizeof(alt), "%s/p%d", tmpd, i);
        cache_env("/nonexistent", NULL, alt);
        errno = 0;
        char *d = util_cache_dir(NULL, "leaf");
        if (d || errno != EPERM) {
            fprintf(stderr, "planted %d: %s (errno %d)\n", i, d ? d : "(null)", errno);
            _exit(10 + i);
        }
    }
}

START_TEST(test_cache_dir) {
    char *d = NULL;
    if (geteuid() == 0) {
        cache_env("/root", "/x/cache", NULL);
        ck_assert_str_eq(d = util_cache_dir("FY_TEST_CACHE", "leaf"), "/var/cache/forgeyard/leaf");
        free(d);
    }
    if (geteuid() != 0) {
        fprintf(stderr, "test_cache_dir: the other users' cases need root, skipped\n");
        return;
    }
    snprintf(tmpd, sizeof(tmpd), "/tmp/fy-os-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpd));
    ck_assert_int_eq(chmod(tmpd, 01777), 0);
    ck_assert_int_eq(as_nobody(nobody_cases), 0);
    /* Planted by root: a directory, and a link to a directory of nobody's. */
    char p[160], q[200], nob[200];
    snprintf(p, sizeof(p), "%s/p0", tmpd);
    ck_assert_int_eq(mkdir(p, 01777), 0);
    snprintf(q, sizeof(q), "%s/forgeyard-65534", p);
    ck_assert_int_eq(mkdir(q, 0700), 0);
    snprintf(p, sizeof(p), "%s/p1", tmpd);
    ck_assert_int_eq(mkdir(p, 01777), 0);
    snprintf(q, sizeof(q), "%s/forgeyard-65534", p);
    snprintf(nob, sizeof(nob), "%s/forgeyard-65534", tmpd);
    ck_assert_int_eq(chmod(nob, 0700), 0);
    ck_assert_int_eq(symlink(nob, q), 0);
    ck_assert_int_eq(as_nobody(planted_cases), 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", tmpd);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- tree removal ---- */

#define DEEP 3000

/* Under dir: a chain DEEP directories deep ("d/d/d..."), a file at every
 * 10th level, a link to outside at level 100, a directory of mode 000
 * (with a file) at 40 and one of 0555 (with a file) at 70, made through
 * descriptors (the path is far longer than PATH_MAX). 0 or the failing
 * level + 1. */
static int make_deep(const char *dir, const char *outside) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < DEEP && fd >= 0; i++) {
        if (i % 10 == 0) {
            int f = openat(fd, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (f < 0 || write(f, "x", 1) != 1)
                return i + 1;
            close(f);
        }
        if (i == 100 && symlinkat(outside, fd, "out") < 0)
            return i + 1;
        if (i == 40 || i == 70) {
            if (mkdirat(fd, "locked", 0700) < 0)
                return i + 1;
            int l = openat(fd, "locked", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            int f = l < 0 ? -1 : openat(l, "inside", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (f < 0 || fchmod(l, i == 40 ? 0 : 0555) < 0)
                return i + 1;
            close(f);
            close(l);
        }
        if (mkdirat(fd, "d", 0755) < 0)
            return i + 1;
        int n = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (i == 500 && fchmod(fd, 0555) < 0) /* a read-only directory on the way */
            return i + 1;
        close(fd);
        fd = n;
    }
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* The deep tree made and removed; the outside file untouched. 0 or why. */
static int deep_case(const char *base) {
    char outside[256], tree[256], file[300];
    snprintf(outside, sizeof(outside), "%s/outside", base);
    snprintf(tree, sizeof(tree), "%s/tree", base);
    snprintf(file, sizeof(file), "%s/keep", outside);
    if (mkdir(outside, 0755) < 0 || mkdir(tree, 0755) < 0)
        return 1;
    int f = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0)
        return 2;
    close(f);
    int k = make_deep(tree, outside);
    if (k) {
        fprintf(stderr, "make_deep: level %d: %s\n", k - 1, strerror(errno));
        return 3;
    }
    int b = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r = util_remove_tree_at(b, "tree", UTIL_RM_OPEN_UP);
    struct stat st;
    int gone = fstatat(b, "tree", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
    int again = util_remove_tree_at(b, "tree", UTIL_RM_OPEN_UP);
    close(b);
    if (r != 1 || !gone || again != 0) {
        fprintf(stderr, "remove: %d (%s), gone %d, again %d\n", r, r < 0 ? strerror(-r) : "", gone, again);
        return 4;
    }
    if (stat(file, &st) < 0 || stat(outside, &st) < 0)
        return 5; /* the link was followed */
    return 0;
}

static char rmd[64];

static void deep_as_nobody(void) {
    char base[128];
    snprintf(base, sizeof(base), "%s/nobody", rmd);
    _exit(deep_case(base));
}

START_TEST(test_remove_tree) {
    snprintf(rmd, sizeof(rmd), "/tmp/fy-os-rm-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(rmd));
    char base[128], p[200];
    snprintf(base, sizeof(base), "%s/caller", rmd);
    ck_assert_int_eq(mkdir(base, 0755), 0);
    ck_assert_int_eq(deep_case(base), 0);
    /* A file, and nothing. */
    int b = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int f = openat(b, "plain", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ck_assert_int_ge(f, 0);
    close(f);
    ck_assert_int_eq(util_remove_tree_at(b, "plain", 0), 1);
    ck_assert_int_eq(util_remove_tree_at(b, "plain", 0), 0);
    close(b);
    /* Below a directory that stays: it is left empty. */
    char keep[160];
    snprintf(keep, sizeof(keep), "%s/keep", base);
    ck_assert_int_eq(mkdir(keep, 0755), 0);
    ck_assert_int_eq(make_deep(keep, rmd), 0);
    int k = open(keep, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_eq(util_remove_below(k, UTIL_RM_ONE_FS | UTIL_RM_OPEN_UP), 0);
    close(k);
    ck_assert_int_eq(rmdir(keep), 0); /* (empty: the only way rmdir succeeds) */
    if (geteuid() == 0) {
        /* Where permissions bind: as uid 65534 in a directory of its own. */
        snprintf(p, sizeof(p), "%s/nobody", rmd);
        ck_assert_int_eq(chmod(rmd, 0755), 0);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        ck_assert_int_eq(chown(p, 65534, 65534), 0);
        ck_assert_int_eq(as_nobody(deep_as_nobody), 0);
    } else {
        fprintf(stderr, "test_remove_tree: the uid 65534 case needs root, skipped\n");
    }
    snprintf(p, sizeof(p), "rm -rf -- '%s'", rmd);
    ck_assert_int_eq(system(p), 0);
}
END_TEST

#ifdef __linux__
/* In a child with a private mount namespace (root): a tmpfs mounted deep
 * in the tree stays, with what it holds, and says EXDEV; the rest goes. */
static int one_fs_case(void) {
    char t[200], m[260], in[300], other[300];
    snprintf(t, sizeof(t), "%s/mnt-tree", rmd);
    snprintf(m, sizeof(m), "%s/a/b", t);
    snprintf(in, sizeof(in), "%s/theirs", m);
    snprintf(other, sizeof(other), "%s/ours", t);
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return 1;
    char a[230];
    snprintf(a, sizeof(a), "%s/a", t);
    if (mkdir(t, 0755) < 0 || mkdir(a, 0755) < 0 || mkdir(m, 0755) < 0 ||
        mount("fy-test", m, "tmpfs", 0, "size=64k") < 0)
        return 2;
    int f = open(in, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), g = open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0 || g < 0)
        return 3;
    close(f);
    close(g);
    int r = util_remove_tree_at(AT_FDCWD, t, UTIL_RM_ONE_FS);
    struct stat st;
    if (r != -EXDEV || stat(in, &st) < 0 || stat(other, &st) == 0) {
        fprintf(stderr, "one_fs: %d, theirs %d\n", r, stat(in, &st));
        return 4;
    }
    if (umount(m) < 0 || util_remove_tree_at(AT_FDCWD, t, UTIL_RM_ONE_FS) != 1)
        return 5;
    return 0;
}

START_TEST(test_remove_tree_one_fs) {
    if (geteuid() != 0) {
        fprintf(stderr, "test_remove_tree_one_fs: mounting needs root, skipped\n");
        return;
    }
    snprintf(rmd, sizeof(rmd), "/tmp/fy-os-rm-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(rmd));
    pid_t c = fork();
    if (c == 0)
        _exit(one_fs_case());
    int st = 0;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    char p[200];
    snprintf(p, sizeof(p), "rm -rf -- '%s'", rmd);
    ck_assert_int_eq(system(p), 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
}
END_TEST
#endif

int main(void) {
    Suite *s = suite_create("os");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_signals_blocked);
    tcase_add_test(tc, test_detached);
#ifdef __linux__
    tcase_add_test(tc, test_beside_other_cpu);
    tcase_add_test(tc, test_beside_one_cpu);
#endif
    tcase_add_test(tc, test_cache_dir);
    tcase_add_test(tc, test_remove_tree);
#ifdef __linux__
    tcase_add_test(tc, test_remove_tree_one_fs);
#endif
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
