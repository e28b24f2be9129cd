/* Host facts kept between prepares (lib/hostfact.c): a kept read is served
 * only while the file's identity is unchanged, and a read whose times are
 * not yet settled is never kept, so that a change within one timestamp
 * tick is still seen. On files of the test's own temporary directory. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hostfact.h"
#include "internal.h"

static char dir[] = "/tmp/fy-hostfact-XXXXXX";

/* Made and removed by the parent (an unchecked fixture), so that a failing test, whose
 * forked child ends at the failed check, leaves nothing behind either; each test uses
 * names of its own in it. */
static void setup(void) {
    if (!mkdtemp(dir))
        abort();
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        abort();
}

static void put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    size_t len = strlen(text);
    ck_assert_int_eq(pwrite(fd, text, len, 0), (ssize_t)len);
    ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
    close(fd);
}

/* Its modification time a minute back (its change time stays now). */
static void age(const char *path) {
    struct timespec ts[2] = {{.tv_sec = time(NULL) - 60}, {.tv_sec = time(NULL) - 60}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void expect_text(const char *path, const char *want) {
    char *got = hostfact_text(path, 1 << 20);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    free(got);
}

/* A file whose times are not settled is never kept, so that a change
 * which leaves its size and times as they were (two writes within one tick
 * of the file system's clock, possible on kernels without multigrain
 * timestamps) is still seen: each call reads the file again. */
START_TEST(test_unsettled_never_kept) {
    char path[64];
    snprintf(path, sizeof(path), "%s/services", dir);
    hostfact_test_clock(0);
    uint64_t kept0, served0, kept, served;
    hostfact_counts(&kept0, &served0);
    for (int i = 0; i < 20; i++) {
        put(path, "aaaa\n");
        expect_text(path, "aaaa\n");
        put(path, "bbbb\n");
        expect_text(path, "bbbb\n");
    }
    hostfact_counts(&kept, &served);
    ck_assert_uint_eq(kept, kept0);
    ck_assert_uint_eq(served, served0);
    /* The same with times in the future (a skewed clock): never settled. */
    hostfact_test_clock(-3600);
    put(path, "cccc\n");
    age(path); /* a minute back is still an hour ahead of this clock */
    expect_text(path, "cccc\n");
    expect_text(path, "cccc\n");
    hostfact_counts(&kept, &served);
    ck_assert_uint_eq(kept, kept0);
}
END_TEST

/* Settled files are kept and served while unchanged; a write, a truncation
 * and a file renamed over it are each seen at the next call. */
START_TEST(test_settled_kept_until_changed) {
    char path[64], other[64];
    snprintf(path, sizeof(path), "%s/protocols", dir);
    snprintf(other, sizeof(other), "%s/protocols.new", dir);
    hostfact_test_clock(3600); /* everything written now looks an hour old */
    uint64_t kept0, served0, kept, served;
    hostfact_counts(&kept0, &served0);
    put(path, "ip 0 IP\n");
    age(path);
    expect_text(path, "ip 0 IP\n");
    expect_text(path, "ip 0 IP\n");
    expect_text(path, "ip 0 IP\n");
    hostfact_counts(&kept, &served);
    ck_assert_uint_eq(kept, kept0 + 1);
    ck_assert_uint_eq(served, served0 + 2);
    put(path, "ip 0 IPv4\n"); /* another size, a new modification time */
    expect_text(path, "ip 0 IPv4\n");
    age(path);
    expect_text(path, "ip 0 IPv4\n");
    put(path, "ip 0 IPv6\n"); /* the same size: the times tell */
    expect_text(path, "ip 0 IPv6\n");
    put(other, "tcp 6 TCP\n"); /* the same size, another inode */
    age(other);
    age(path);
    expect_text(path, "ip 0 IPv6\n");
    ck_assert_int_eq(rename(other, path), 0);
    expect_text(path, "tcp 6 TCP\n");
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_ptr_null(hostfact_text(path, 1 << 20));
}
END_TEST

static bool want_versioned(const char *name) { return strncmp(name, "java-", 5) == 0 || strcmp(name, "python3") == 0; }

/* A directory listing: sorted, filtered, kept while the directory is
 * unchanged; an entry made or removed is seen at the next call. */
START_TEST(test_listing_follows_directory) {
    char etc[64], p[128];
    snprintf(etc, sizeof(etc), "%s/etc", dir);
    ck_assert_int_eq(mkdir(etc, 0755), 0);
    const char *made[] = {"java-21-openjdk", "python3", "hosts", "java-17-openjdk"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/%s", etc, made[i]);
        ck_assert_int_eq(mkdir(p, 0755), 0);
    }
    hostfact_test_clock(3600);
    age(etc);
    char names[16][HOSTFACT_NAME_MAX];
    uint64_t kept0, served0, kept, served;
    hostfact_counts(&kept0, &served0);
    for (int round = 0; round < 2; round++) {
        ck_assert_uint_eq(hostfact_names(etc, want_versioned, names, 16), 3);
        ck_assert_str_eq(names[0], "java-17-openjdk");
        ck_assert_str_eq(names[1], "java-21-openjdk");
        ck_assert_str_eq(names[2], "python3");
    }
    hostfact_counts(&kept, &served);
    ck_assert_uint_eq(kept, kept0 + 1);
    ck_assert_uint_eq(served, served0 + 1);
    /* at most max names */
    ck_assert_uint_eq(hostfact_names(etc, want_versioned, names, 2), 2);
    snprintf(p, sizeof(p), "%s/java-25-openjdk", etc);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    ck_assert_uint_eq(hostfact_names(etc, want_versioned, names, 16), 4);
    ck_assert_str_eq(names[2], "java-25-openjdk");
    age(etc);
    ck_assert_uint_eq(hostfact_names(etc, want_versioned, names, 16), 4);
    snprintf(p, sizeof(p), "%s/java-17-openjdk", etc);
    ck_assert_int_eq(rmdir(p), 0);
    ck_assert_uint_eq(hostfact_names(etc, want_versioned, names, 16), 3);
    ck_assert_str_eq(names[0], "java-21-openjdk");
}
END_TEST

int main(void) {
    Suite *s = suite_create("hostfact");
    TCase *tc = tcase_create("core");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_unsettled_never_kept);
    tcase_add_test(tc, test_settled_kept_until_changed);
    tcase_add_test(tc, test_listing_follows_directory);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
