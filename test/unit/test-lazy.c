/* Libraries loaded on first use (lib/lazy.h): not mapped before, mapped
 * after; when one cannot be loaded, SHA-256 falls back to libsodium with the
 * same digests and an archive reader is a typed FY_E_UNSUPPORTED naming it,
 * never a crash. */
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "lazy.h"
#include "oci/oci-internal.h"

static int find_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *want = data;
    const char *slash = strrchr(info->dlpi_name, '/');
    const char *base = slash ? slash + 1 : info->dlpi_name;
    return strncmp(base, want, strlen(want)) == 0;
}
static bool mapped(const char *prefix) { return dl_iterate_phdr(find_cb, (void *)prefix) != 0; }

static void sha256_abc(unsigned char out[32]) {
    struct digest d;
    ck_assert_int_eq(digest_init(&d), 0);
    digest_update(&d, "a", 1);
    digest_update(&d, "bc", 2);
    digest_final(&d, out);
    ck_assert_ptr_null(d.ctx);
}
/* FIPS 180-2's example */
static const unsigned char abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                      0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                      0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};

START_TEST(test_loaded_on_first_use) {
    /* The test program links the library's objects, not these libraries. */
    ck_assert_msg(!mapped("libarchive.so"), "libarchive mapped before any use");
    ck_assert_msg(!mapped("libcrypto.so"), "libcrypto mapped before any use");
    ck_assert_msg(!mapped("libbpf.so"), "libbpf mapped before any use");
    ck_assert_msg(!mapped("liblzma.so"), "liblzma mapped before any use");
    unsigned char out[32];
    sha256_abc(out);
    ck_assert(memcmp(out, abc, 32) == 0);
    ck_assert_msg(mapped("libcrypto.so"), "libcrypto not mapped after a digest");
    ck_assert(!mapped("libarchive.so"));
    ck_assert_int_eq(lazy_open(&lazy_archive), 0);
    ck_assert(mapped("libarchive.so"));
    ck_assert_int_eq(lazy_open(&lazy_archive), 0); /* once */
}
END_TEST

START_TEST(test_missing_library) {
    /* As on a host where the package is not installed. */
    lazy_crypto.soname = "libfy-no-such-crypto.so.9";
    lazy_archive.soname = "libfy-no-such-archive.so.9";
    unsigned char out[32];
    sha256_abc(out);
    ck_assert(memcmp(out, abc, 32) == 0);
    ck_assert_int_eq(lazy_open(&lazy_crypto), -1);
    ck_assert_msg(strstr(lazy_crypto.why, "libfy-no-such-crypto"), "%s", lazy_crypto.why);
    struct digest d;
    ck_assert_int_eq(digest_init(&d), 0);
    digest_abandon(&d);
    digest_abandon(&d); /* idempotent */

    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    fy_error *e = NULL;
    ck_assert_ptr_null(oci_archive_new_outer(fd, &e));
    ck_assert_int_eq(fy_error_code(e), FY_E_UNSUPPORTED);
    ck_assert_msg(strstr(fy_error_message(e), "libarchive") && strstr(fy_error_message(e), "libfy-no-such-archive"),
                  "%s", fy_error_message(e));
    fy_error_free(e);
    close(fd);
}
END_TEST

/* A host forks while another of its threads loads a library through the
 * library (a probe loads libbpf, a digest libcrypto): a child that then
 * needs the same library must get it whole. glibc frees its loader's lock
 * in the child, so a child forked in the middle of that dlopen found the
 * library half-mapped and crashed (once in the suite's probe test); the
 * fork now waits for a load in progress. 40 workers, each a fresh process
 * whose thread loads libarchive (the largest, several milliseconds) while
 * it forks at a different moment; each grandchild loads it and calls it. */
static atomic_int loading;
static void *load_thread(void *arg) {
    (void)arg;
    atomic_store(&loading, 1);
    (void)lazy_open(&lazy_archive);
    return NULL;
}
typedef const char *(*version_fn)(void);
START_TEST(test_fork_while_loading) {
    int crashed = 0, done = 0;
    for (int i = 0; i < 40; i++) {
        pid_t w = fork();
        ck_assert_int_ge(w, 0);
        if (w == 0) {
            alarm(30);
            pthread_t t;
            if (pthread_create(&t, NULL, load_thread, NULL) != 0)
                _exit(2);
            while (!atomic_load(&loading))
                ;
            struct timespec d = {0, (long)(i % 20) * 150000}; /* 0-2.85 ms into the load */
            nanosleep(&d, NULL);
            pid_t g = fork();
            if (g == 0) {
                alarm(20);
                if (lazy_open(&lazy_archive) < 0) {
                    fprintf(stderr, "# the grandchild's load failed: %s\n", lazy_archive.why);
                    _exit(3);
                }
                version_fn v = (version_fn)lazy_sym(&lazy_archive, "archive_version_string");
                _exit(v && v() && strstr(v(), "libarchive") ? 0 : 4);
            }
            int st = 0;
            if (g < 0 || waitpid(g, &st, 0) != g)
                _exit(2);
            pthread_join(t, NULL);
            _exit(WIFSIGNALED(st) ? 100 + WTERMSIG(st) : WEXITSTATUS(st));
        }
        int st = 0;
        ck_assert_int_eq(waitpid(w, &st, 0), w);
        ck_assert_msg(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) > 100),
                      "worker %d: %s %d", i, WIFSIGNALED(st) ? "signal" : "exit",
                      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        crashed += WEXITSTATUS(st) > 100;
        done++;
    }
    ck_assert_msg(crashed == 0, "%d of %d children forked during a load crashed loading it themselves", crashed, done);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lazy");
    TCase *tc = tcase_create("lazy");
    tcase_add_test(tc, test_loaded_on_first_use); /* each test forks: fresh loader state */
    tcase_add_test(tc, test_missing_library);
    tcase_add_test(tc, test_fork_while_loading);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
