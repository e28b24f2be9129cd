/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Restricted templates (lib/vm): the QEMU command lines of a machine with
 * the restricted network's NIC (the template made on a hub port, restored
 * on the router's tap, the same device; the restore's monitor socket and
 * name), and the proof asked of the process that connects to a restoring
 * QEMU's monitor socket (vm_qmp_peer_is_vmm): a real QEMU carrying the
 * right name is refused when it is not a descendant of this process, and
 * one carrying another name is refused when it is. No guest boots: QEMU
 * runs "-M none" stopped (skipped, 77, for those cases without QEMU).
 *
 *   test-vm-qmp */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm-template.h"

/* The words of vm_qemu_argv for a 2-CPU, 1 GiB plan with one 9p device. */
static const char **argv_of(bool nic, int mode, struct strbuf *sb) {
    static struct vm_plan pl;
    static struct vm_mount m[1];
    memset(&pl, 0, sizeof(pl));
    m[0] = (struct vm_mount){"/usr", "/usr", false};
    pl.mounts = m;
    pl.nmounts = 1;
    pl.guest_mem = 1024ull << 20;
    pl.smp = 2;
    pl.qemu = "/usr/bin/qemu-system-x86_64";
    pl.cmdline = (char *)"console=ttyS0 rdinit=/init";
    pl.nic = nic;
    strbuf_init(sb);
    const char **argv = NULL;
    ck_assert_int_eq(vm_qemu_argv(&pl, mode, "0123456789abcdef0123456789abcdef", sb, &argv), 0);
    return argv;
}

static int find(const char **argv, const char *w) {
    for (int i = 0; argv[i]; i++)
        if (!strcmp(argv[i], w))
            return i;
    return -1;
}

/* The word after flag whose value starts with prefix, or NULL. */
static const char *value(const char **argv, const char *flag, const char *prefix) {
    for (int i = 0; argv[i] && argv[i + 1]; i++)
        if (!strcmp(argv[i], flag) && !strncmp(argv[i + 1], prefix, strlen(prefix)))
            return argv[i + 1];
    return NULL;
}

START_TEST(test_nic_machine_argv) {
    struct strbuf a, b, c, d;
    const char **make = argv_of(true, VM_BOOT_MAKE, &a), **rest = argv_of(true, VM_BOOT_RESTORE, &b),
               **cold = argv_of(true, VM_BOOT_COLD, &c), **deny = argv_of(false, VM_BOOT_RESTORE, &d);
    /* the same device in the three modes; its backend leads nowhere while
     * the template is made, to the router's tap (stdin) otherwise */
    const char *dev = "virtio-net-device,netdev=n0,mac=" VM_NIC_MAC;
    ck_assert_int_ge(find(make, dev), 0);
    ck_assert_int_ge(find(rest, dev), 0);
    ck_assert_int_ge(find(cold, dev), 0);
    ck_assert_str_eq(value(make, "-netdev", ""), "hubport,id=n0,hubid=0");
    ck_assert_str_eq(value(rest, "-netdev", ""), "tap,id=n0,fd=0");
    ck_assert_str_eq(value(cold, "-netdev", ""), "tap,id=n0,fd=0");
    /* the restore: its state over the monitor socket of the attempt
     * directory (stdin is the tap), its name the proof of its peer */
    ck_assert_str_eq(value(rest, "-incoming", ""), "defer");
    ck_assert_str_eq(value(rest, "-chardev", "socket,id=mon"), "socket,id=mon,path=/fy/a/" VM_QMP_SOCK);
    ck_assert_str_eq(value(rest, "-name", ""), "fy-0123456789abcdef0123456789abcdef");
    ck_assert_str_eq(value(rest, "-chardev", "socket,id=ctl"), "socket,id=ctl,fd=1");
    ck_assert_ptr_null(value(make, "-name", ""));
    ck_assert_ptr_null(value(cold, "-name", ""));
    /* the template is made with its monitor on stdin, as before */
    ck_assert_str_eq(value(make, "-chardev", "socket,id=mon"), "socket,id=mon,fd=0");
    /* a machine without the NIC: no netdev, its restore as before */
    ck_assert_int_lt(find(deny, "-netdev"), 0);
    ck_assert_int_lt(find(deny, dev), 0);
    ck_assert_str_eq(value(deny, "-incoming", ""), "fd:0");
    ck_assert_ptr_null(value(deny, "-name", ""));
    /* every -device of the template's machine is the restore's, in order */
    int im = 0, ir = 0;
    for (;;) {
        while (make[im] && strcmp(make[im], "-device"))
            im++;
        while (rest[ir] && strcmp(rest[ir], "-device"))
            ir++;
        if (!make[im] || !rest[ir])
            break;
        ck_assert_str_eq(make[im + 1], rest[ir + 1]);
        im += 2;
        ir += 2;
    }
    ck_assert_msg(!make[im] && !rest[ir], "the two machines have different devices");
    free(make);
    free(rest);
    free(cold);
    free(deny);
    strbuf_free(&a);
    strbuf_free(&b);
    strbuf_free(&c);
    strbuf_free(&d);
}
END_TEST

/* ---- the monitor's peer ---- */

static char qemu[512];

static bool find_qemu(void) {
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
    for (char *s = NULL, *d = strtok_r(buf, ":", &s); d; d = strtok_r(NULL, ":", &s)) {
        snprintf(qemu, sizeof(qemu), "%s/qemu-system-x86_64", d);
        if (access(qemu, X_OK) == 0)
            return true;
    }
    return false;
}

/* Starts a stopped QEMU without a machine whose monitor connects to
 * dir/qmp, named fy-TOKEN; with orphan, as the child of a process that
 * exits at once (so that it is not a descendant of this one). Its pid. */
static pid_t start_qemu(const char *dir, const char *token, bool orphan) {
    int pp[2];
    ck_assert_int_eq(pipe(pp), 0);
    pid_t mid = fork();
    ck_assert_int_ge(mid, 0);
    if (mid == 0) {
        pid_t q = orphan ? fork() : 0;
        if (q > 0) {
            (void)!write(pp[1], &q, sizeof(q));
            _exit(0);
        }
        if (q == 0) {
            if (!orphan) {
                pid_t me = getpid();
                (void)!write(pp[1], &me, sizeof(me));
            }
            close(pp[0]);
            close(pp[1]);
            char name[64], chardev[4200];
            snprintf(name, sizeof(name), "fy-%s", token);
            snprintf(chardev, sizeof(chardev), "socket,id=mon,path=%s/" VM_QMP_SOCK, dir);
            int nul = open("/dev/null", O_RDWR);
            dup2(nul, 0);
            dup2(nul, 1);
            execl(qemu, qemu, "-M", "none", "-S", "-nodefaults", "-display", "none", "-name", name, "-chardev",
                  chardev, "-mon", "chardev=mon,mode=control", (char *)NULL);
        }
        _exit(127);
    }
    close(pp[1]);
    pid_t q = 0;
    ck_assert_int_eq(read(pp[0], &q, sizeof(q)), (ssize_t)sizeof(q));
    close(pp[0]);
    if (orphan)
        waitpid(mid, NULL, 0);
    return q;
}

/* The next connection on lfd (10 s), or -1. */
static int accept_one(int lfd) {
    struct pollfd p = {lfd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1)
        return -1;
    return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static void stop_qemu(pid_t q, bool child) {
    kill(q, SIGKILL);
    if (child)
        waitpid(q, NULL, 0);
}

START_TEST(test_monitor_peer) {
    if (!find_qemu()) {
        printf("SKIP: qemu-system-x86_64 is not installed\n");
        return;
    }
    char dir[] = "/tmp/fy-vm-qmp.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    chmod(dir, 0755);
    int lfd = -1;
    ck_assert_int_eq(vm_qmp_listen(dir, &lfd), 0);
    char sock[4200];
    snprintf(sock, sizeof(sock), "%s/" VM_QMP_SOCK, dir);
    struct stat st;
    ck_assert_int_eq(stat(sock, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    const char *token = "00112233445566778899aabbccddeeff";

    /* The real QEMU binary with the right name, but not started by this
     * process (an orphan: what another local process could start after
     * reading the token from the restoring QEMU's command line). */
    pid_t q = start_qemu(dir, token, true);
    int fd = accept_one(lfd);
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(!vm_qmp_peer_is_vmm(fd, qemu, token), "a QEMU that is not our descendant passed as ours");
    close(fd);
    stop_qemu(q, false);

    /* Our own child with another name. */
    q = start_qemu(dir, "ffeeddccbbaa99887766554433221100", false);
    fd = accept_one(lfd);
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(!vm_qmp_peer_is_vmm(fd, qemu, token), "a QEMU with another name passed as ours");
    close(fd);
    stop_qemu(q, true);

    /* Our own child with the right name, our QEMU binary: the one accepted
     * (so that the refusals above are the checks', not the test's). */
    q = start_qemu(dir, token, false);
    fd = accept_one(lfd);
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(vm_qmp_peer_is_vmm(fd, qemu, token), "our own QEMU was refused");
    /* ...but not as another binary */
    ck_assert(!vm_qmp_peer_is_vmm(fd, "/bin/sh", token));
    close(fd);
    stop_qemu(q, true);

    close(lfd);
    unlink(sock);
    rmdir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("vm-qmp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_nic_machine_argv);
    tcase_add_test(tc, test_monitor_peer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
