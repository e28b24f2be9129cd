/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Firecracker and cloud-hypervisor adapters' configuration
 * (lib/vm/vm-vmm-config.c) from a compiled VM plan, against golden output
 * (test/vm/golden/): neither VMM runs here, so what they would be started
 * with is checked byte for byte, and the golden files are read by a human
 * against each VMM's documentation when they change.
 *
 *   test-vmm-config GOLDEN_DIR */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm-run.h"

static const char *golden_dir;

static char *slurp(const char *name) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", golden_dir, name);
    FILE *f = fopen(path, "re");
    ck_assert_msg(f != NULL, "golden file %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* A plan as vm_compile makes it: two approved runtime directories, 1280 MiB,
 * two CPUs, the backend's kernel command line. */
static void plan(struct vm_plan *pl, struct vm_mount *m, size_t nm) {
    memset(pl, 0, sizeof(*pl));
    m[0] = (struct vm_mount){"/usr", "/usr"};
    m[1] = (struct vm_mount){"/etc/alternatives", "/etc/alternatives"};
    pl->mounts = m;
    pl->nmounts = nm;
    pl->guest_mem = 1280ull << 20;
    pl->smp = 2;
    pl->cmdline = (char *)"console=ttyS0 quiet loglevel=1 panic=-1 reboot=t rdinit=/init cryptomgr.notests "
                          "random.trust_cpu=on init_on_free=1";
}

static const struct vm_vmm_paths paths = {
    .kernel = "/fy/k/vmlinux", .initrd = "/fy/k/initrd.cpio", .images = "/fy/i", .vsock = "/fy/a/ctl.vsock",
};

START_TEST(test_firecracker) {
    struct vm_plan pl;
    struct vm_mount m[2];
    plan(&pl, m, 2);
    char *json = NULL;
    ck_assert_int_eq(vm_firecracker_config(&pl, &paths, &json), 0);
    char *want = slurp("firecracker.json");
    size_t wl = strlen(want);
    if (wl && want[wl - 1] == '\n')
        want[wl - 1] = '\0';
    ck_assert_msg(!strcmp(json, want), "generated:\n%s\nwanted:\n%s", json, want);
    free(json);
    free(want);
    /* No runtime directory: no drive (never an empty or made-up one). */
    plan(&pl, m, 0);
    ck_assert_int_eq(vm_firecracker_config(&pl, &paths, &json), 0);
    ck_assert_msg(strstr(json, "\"drives\": []"), "%s", json);
    ck_assert_msg(strstr(json, "\"network-interfaces\": []"), "%s", json);
    free(json);
}
END_TEST

START_TEST(test_cloud_hypervisor) {
    struct vm_plan pl;
    struct vm_mount m[2];
    plan(&pl, m, 2);
    struct strbuf sb;
    strbuf_init(&sb);
    const char **argv = NULL;
    ck_assert_int_eq(vm_cloud_hypervisor_argv(&pl, &paths, "cloud-hypervisor", &sb, &argv), 0);
    struct strbuf got;
    strbuf_init(&got);
    for (size_t i = 0; argv[i]; i++)
        strbuf_printf(&got, "%s\n", argv[i]);
    char *want = slurp("cloud-hypervisor.args");
    ck_assert_msg(!strcmp(got.buf, want), "generated:\n%s\nwanted:\n%s", got.buf, want);
    /* No network device of any kind, ever. */
    for (size_t i = 0; argv[i]; i++)
        ck_assert_msg(strcmp(argv[i], "--net") && strncmp(argv[i], "tap", 3), "%s", argv[i]);
    free(want);
    free(argv);
    strbuf_free(&sb);
    strbuf_free(&got);
}
END_TEST

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s GOLDEN_DIR\n", argv[0]);
        return 2;
    }
    golden_dir = argv[1];
    Suite *s = suite_create("vmm-config");
    TCase *tc = tcase_create("vmm-config");
    tcase_add_test(tc, test_firecracker);
    tcase_add_test(tc, test_cloud_hypervisor);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
