/* Libraries loaded on first use (lib/lazy.h): not mapped before, mapped
 * after; when one cannot be loaded, SHA-256 falls back to libsodium with the
 * same digests and an archive reader is a typed FY_E_UNSUPPORTED naming it,
 * never a crash. */
#include <check.h>
#include <fcntl.h>
#include <link.h>
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

int main(void) {
    Suite *s = suite_create("lazy");
    TCase *tc = tcase_create("lazy");
    tcase_add_test(tc, test_loaded_on_first_use); /* each test forks: fresh loader state */
    tcase_add_test(tc, test_missing_library);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
