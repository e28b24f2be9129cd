/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The functional probe for the VM backend: KVM, QEMU (TCG, microvm),
 * Firecracker, cloud-hypervisor and confidential-VM host support.
 *
 * KVM is judged by running guest code, not by opening /dev/kvm: a forked
 * child creates a VM, runs `mov al,0x2a; out 0x10,al; hlt` in real mode and
 * then a 32-bit protected mode -> 64-bit long mode switch (the PVH kernel
 * entry path), under a deadline. A hung guest is SIGKILLed and reaped with a
 * bounded wait. QEMU is run (pu_spawn: invisible to the host's SIGCHLD, stdin/stdout/stderr redirected,
 * deadline + SIGKILL) to list its accelerators and machines, and once with
 * -accel tcg and a QMP session on stdio to see TCG really start.
 *
 * Same rules as linux-probe.c: raw syscalls only between fork and _exit, no
 * global state, no output, no signal handlers, every fd O_CLOEXEC. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#  include <linux/kvm.h>
#  define VM_KVM_X86 1
#else
#  define VM_KVM_X86 0
#endif

#include "caps.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"
#include "vm-backend.h"

extern char **environ;

#define KVM_DEADLINE_MS 1000
#define QEMU_HELP_DEADLINE_MS 1000
#define QEMU_TCG_DEADLINE_MS 1500
#define QEMU_RETRY_FACTOR 8 /* (the Linux probes' retry factor too) */
#define REPORT_MAGIC 0x66796b76u /* "fykv" */
#define REASON_MAX 1024

/* vm_kvm_probe_code (vm-backend.h), for the test suite: runs code as a
 * real-mode guest at 0x1000 under deadline_ms and expects `out 0x10` of
 * 0x2a followed by hlt. Returns 1 when the guest did that, 0 when KVM is
 * unusable or absent, with the reason in reason[size]. Never leaves a child
 * behind that it could reap. */

/* ------------------------------------------------------------------ */
/* helpers                                                            */
/* ------------------------------------------------------------------ */

static bool read_flag(const char *path) {
    char b[8] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    return n > 0 && (b[0] == 'Y' || b[0] == 'y' || b[0] == '1');
}

/* ------------------------------------------------------------------ */
/* KVM                                                                */
/* ------------------------------------------------------------------ */

/* Stages, each in a fresh VM:
 *  1. real mode: mov al,0x2a; out 0x10,al; hlt
 *  2. 32-bit protected mode -> 64-bit long mode (the PVH kernel entry path),
 *     then a loop of SPEED_SAMPLE_ITERS iterations (timed: the guest's speed)
 *  3. the same with SPEED_ITERS iterations, which hardware virtualisation
 *     finishes in milliseconds but an emulating hypervisor (a paravirtual
 *     hypervisor running an unmodified guest, software nested virtualisation)
 *     does not finish within the deadline. Such a KVM "works" for three
 *     instructions and then takes minutes to boot a kernel. */
#define SPEED_SAMPLE_ITERS 10000u
#define SPEED_ITERS 10000000u /* 2 instructions each */

enum kvm_op {
    KOP_NONE, KOP_OPEN, KOP_API, KOP_CREATE_VM, KOP_MMAP_MEM, KOP_SET_MEM, KOP_CREATE_VCPU,
    KOP_VCPU_MMAP_SIZE, KOP_MMAP_RUN, KOP_GET_SREGS, KOP_SET_SREGS, KOP_SET_REGS,
    KOP_GET_CPUID, KOP_SET_CPUID, KOP_RUN, KOP_EXIT, KOP__N
};

static const char *const kvm_op_name[KOP__N] = {
    [KOP_NONE] = "nothing",
    [KOP_OPEN] = "open(/dev/kvm)",
    [KOP_API] = "KVM_GET_API_VERSION",
    [KOP_CREATE_VM] = "KVM_CREATE_VM",
    [KOP_MMAP_MEM] = "mmap of guest memory",
    [KOP_SET_MEM] = "KVM_SET_USER_MEMORY_REGION",
    [KOP_CREATE_VCPU] = "KVM_CREATE_VCPU",
    [KOP_VCPU_MMAP_SIZE] = "KVM_GET_VCPU_MMAP_SIZE",
    [KOP_MMAP_RUN] = "mmap of the vcpu's kvm_run",
    [KOP_GET_SREGS] = "KVM_GET_SREGS",
    [KOP_SET_SREGS] = "KVM_SET_SREGS",
    [KOP_SET_REGS] = "KVM_SET_REGS",
    [KOP_GET_CPUID] = "KVM_GET_SUPPORTED_CPUID",
    [KOP_SET_CPUID] = "KVM_SET_CPUID2",
    [KOP_RUN] = "KVM_RUN",
    [KOP_EXIT] = "an unexpected guest exit",
};

enum { KP_RUNNING = 1, KP_DONE = 2 };

struct kvm_report {
    uint32_t magic;
    int32_t phase;     /* KP_RUNNING before each KVM_RUN, KP_DONE at the end */
    int32_t stage;     /* 1 real mode, 2 long mode + speed sample, 3 speed */
    int32_t ok;        /* the stage (DONE: all stages) succeeded */
    int32_t op, err;   /* the failing operation */
    int32_t api;
    uint32_t exit_reason, port, value;
    uint64_t rip;
    uint64_t usec;     /* time spent in KVM_RUN, all stages */
    uint64_t sample_usec; /* time of stage 2's loop run */
};

struct kvm_args {
    const uint8_t *code;
    size_t len;
    bool long_mode; /* also run stages 2 and 3 */
};

#if VM_KVM_X86

#define GUEST_MEM 0x200000u

/* Raw monotonic time in the child (clock_gettime is async-signal-safe). */
static uint64_t child_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void kvm_send(int wfd, const struct kvm_report *r) {
    ssize_t w;
    do
        w = write(wfd, r, sizeof *r);
    while (w < 0 && errno == EINTR);
}

static bool kfail(struct kvm_report *r, int op) {
    r->op = op;
    r->err = errno;
    return false;
}

/* One stage in a fresh VM. Returns true when the guest wrote the expected
 * byte to port 0x10 and halted. iters: the loop count of stages 2 and 3. */
static bool kvm_stage(int kvm, int wfd, struct kvm_report *r, int stage, const uint8_t *code,
                      size_t len, uint32_t iters) {
    bool ok = false;
    int vm = -1, vcpu = -1;
    uint8_t *mem = MAP_FAILED;
    struct kvm_run *run = MAP_FAILED;
    long run_size = 0;
    r->stage = stage;
    r->ok = 0;

    vm = ioctl(kvm, KVM_CREATE_VM, 0);
    if (vm < 0)
        return kfail(r, KOP_CREATE_VM);
    mem = mmap(NULL, GUEST_MEM, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
               -1, 0);
    if (mem == MAP_FAILED) {
        (void)kfail(r, KOP_MMAP_MEM);
        goto out;
    }
    struct kvm_userspace_memory_region region = {
        .slot = 0, .guest_phys_addr = 0, .memory_size = GUEST_MEM,
        .userspace_addr = (uint64_t)(uintptr_t)mem,
    };
    if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
        (void)kfail(r, KOP_SET_MEM);
        goto out;
    }
    vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    if (vcpu < 0) {
        (void)kfail(r, KOP_CREATE_VCPU);
        goto out;
    }
    run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (run_size <= 0) {
        (void)kfail(r, KOP_VCPU_MMAP_SIZE);
        goto out;
    }
    run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (run == MAP_FAILED) {
        (void)kfail(r, KOP_MMAP_RUN);
        goto out;
    }

    struct kvm_sregs sregs;
    if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0) {
        (void)kfail(r, KOP_GET_SREGS);
        goto out;
    }
    struct kvm_regs regs;
    memset(&regs, 0, sizeof regs);
    regs.rflags = 2;
    regs.rip = 0x1000;
    uint8_t expect;

    if (stage == 1) {
        /* real mode, cs base 0 */
        memcpy(mem + 0x1000, code, len);
        sregs.cs.base = 0;
        sregs.cs.selector = 0;
        expect = 0x2a;
    } else {
        /* The guest's CPUID must advertise long mode, or EFER.LME faults. */
        union {
            struct kvm_cpuid2 h;
            uint8_t buf[sizeof(struct kvm_cpuid2) + 256 * sizeof(struct kvm_cpuid_entry2)];
        } cpuid;
        memset(&cpuid, 0, sizeof cpuid);
        cpuid.h.nent = 256;
        if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &cpuid.h) < 0) {
            (void)kfail(r, KOP_GET_CPUID);
            goto out;
        }
        if (ioctl(vcpu, KVM_SET_CPUID2, &cpuid.h) < 0) {
            (void)kfail(r, KOP_SET_CPUID);
            goto out;
        }
        /* identity map of the first 2 MiB: PML4 0x2000 -> PDPT 0x3000 -> PD 0x4000 */
        uint64_t pml4 = 0x3000 | 3, pdpt = 0x4000 | 3, pd = 0x83;
        memcpy(mem + 0x2000, &pml4, 8);
        memcpy(mem + 0x3000, &pdpt, 8);
        memcpy(mem + 0x4000, &pd, 8);
        /* GDT at 0x500: null, 64-bit code (0x08), 32-bit code (0x10), data (0x18) */
        uint64_t gdt[4] = { 0, 0x00af9a000000ffffULL, 0x00cf9a000000ffffULL,
                            0x00cf92000000ffffULL };
        memcpy(mem + 0x500, gdt, sizeof gdt);
        static const uint8_t enter64[] = {
            0x0f, 0x20, 0xe0,                         /* mov eax, cr4 */
            0x83, 0xc8, 0x20,                         /* or eax, 0x20 (PAE) */
            0x0f, 0x22, 0xe0,                         /* mov cr4, eax */
            0xb8, 0x00, 0x20, 0x00, 0x00,             /* mov eax, 0x2000 */
            0x0f, 0x22, 0xd8,                         /* mov cr3, eax */
            0xb9, 0x80, 0x00, 0x00, 0xc0,             /* mov ecx, 0xc0000080 (EFER) */
            0x0f, 0x32,                               /* rdmsr */
            0x0d, 0x00, 0x01, 0x00, 0x00,             /* or eax, 0x100 (LME) */
            0x0f, 0x30,                               /* wrmsr */
            0x0f, 0x20, 0xc0,                         /* mov eax, cr0 */
            0x0d, 0x00, 0x00, 0x00, 0x80,             /* or eax, 0x80000000 (PG) */
            0x0f, 0x22, 0xc0,                         /* mov cr0, eax */
            0xea, 0x00, 0x11, 0x00, 0x00, 0x08, 0x00, /* jmp far 0x08:0x1100 */
        };
        uint8_t in64[] = {
            0xb9, 0, 0, 0, 0, /* mov ecx, iters */
            0xff, 0xc9,       /* 1: dec ecx */
            0x75, 0xfc,       /* jnz 1b */
            0xb0, 0x2b,       /* mov al, 0x2b */
            0xe6, 0x10,       /* out 0x10, al */
            0xf4,             /* hlt */
        };
        memcpy(in64 + 1, &iters, 4);
        memcpy(mem + 0x1000, enter64, sizeof enter64);
        memcpy(mem + 0x1100, in64, sizeof in64);
        struct kvm_segment cs32 = { .base = 0, .limit = 0xffffffff, .selector = 0x10, .type = 11,
                                    .present = 1, .db = 1, .s = 1, .g = 1 };
        struct kvm_segment ds = { .base = 0, .limit = 0xffffffff, .selector = 0x18, .type = 3,
                                  .present = 1, .db = 1, .s = 1, .g = 1 };
        sregs.cs = cs32;
        sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = ds;
        sregs.gdt.base = 0x500;
        sregs.gdt.limit = sizeof gdt - 1;
        sregs.cr0 = 0x11; /* PE | ET */
        sregs.cr4 = 0;
        sregs.efer = 0;
        regs.rsp = 0x8000;
        expect = 0x2b;
    }
    if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0) {
        (void)kfail(r, KOP_SET_SREGS);
        goto out;
    }
    if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0) {
        (void)kfail(r, KOP_SET_REGS);
        goto out;
    }

    r->phase = KP_RUNNING;
    kvm_send(wfd, r);
    uint64_t t0 = child_usec();
    bool saw_out = false;
    for (int i = 0; i < 8; i++) {
        if (ioctl(vcpu, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            (void)kfail(r, KOP_RUN);
            break;
        }
        r->exit_reason = run->exit_reason;
        if (run->exit_reason == KVM_EXIT_IO && run->io.direction == KVM_EXIT_IO_OUT &&
            run->io.size == 1 && run->io.count >= 1 && !saw_out) {
            r->port = run->io.port;
            r->value = ((const uint8_t *)run)[run->io.data_offset];
            if (r->port != 0x10 || r->value != expect) {
                r->op = KOP_EXIT;
                break;
            }
            saw_out = true;
            continue;
        }
        if (run->exit_reason == KVM_EXIT_HLT && saw_out) {
            ok = true;
            break;
        }
        r->op = KOP_EXIT;
        break;
    }
    uint64_t spent = child_usec() - t0;
    r->usec += spent;
    if (stage == 2)
        r->sample_usec = spent;
    if (!ok && r->op == KOP_EXIT) {
        struct kvm_regs now;
        if (ioctl(vcpu, KVM_GET_REGS, &now) == 0)
            r->rip = now.rip;
    }
out:
    if (run != MAP_FAILED)
        munmap(run, (size_t)run_size);
    if (mem != MAP_FAILED)
        munmap(mem, GUEST_MEM);
    if (vcpu >= 0)
        close(vcpu);
    if (vm >= 0)
        close(vm);
    r->ok = ok;
    return ok;
}

static void kvm_child(const struct kvm_args *a, int wfd) {
    struct kvm_report r;
    memset(&r, 0, sizeof r);
    r.magic = REPORT_MAGIC;
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (kvm < 0) {
        r.op = KOP_OPEN;
        r.err = errno;
    } else {
        r.api = ioctl(kvm, KVM_GET_API_VERSION, 0);
        if (r.api != KVM_API_VERSION) {
            r.op = KOP_API;
            r.err = r.api < 0 ? errno : 0;
        } else if (kvm_stage(kvm, wfd, &r, 1, a->code, a->len, 0) && a->long_mode &&
                   kvm_stage(kvm, wfd, &r, 2, NULL, 0, SPEED_SAMPLE_ITERS)) {
            (void)kvm_stage(kvm, wfd, &r, 3, NULL, 0, SPEED_ITERS);
        }
        close(kvm);
    }
    r.phase = KP_DONE;
    kvm_send(wfd, &r);
    _exit(0);
}

#endif /* VM_KVM_X86 */

/* Runs the KVM check. Returns 1 usable, 0 not; reason gets the details. */
static int kvm_check(const struct kvm_args *a, int deadline_ms, char *reason, size_t size,
                     char *hint, size_t hint_size) {
    reason[0] = '\0';
    if (hint_size)
        hint[0] = '\0';
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            snprintf(reason, size, "kvm: no /dev/kvm (no kvm module loaded, or no hardware "
                     "virtualisation exposed to this machine)");
            snprintf(hint, hint_size, "load kvm_intel or kvm_amd, or enable (nested) "
                     "virtualisation for this VM; QEMU falls back to TCG");
        } else {
            snprintf(reason, size, "kvm: cannot open /dev/kvm: " EFMT, EARG(e));
            snprintf(hint, hint_size, "%s", e == EACCES || e == EPERM
                     ? "add the user to the kvm group (or give it rw access to /dev/kvm)"
                     : "check the /dev/kvm device node");
        }
        return 0;
    }
    close(fd);
#if !VM_KVM_X86
    (void)a;
    (void)deadline_ms;
    snprintf(reason, size, "kvm: /dev/kvm opens, but the functional guest check is only "
             "implemented for x86; not claimed usable");
    return 0;
#else
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(reason, size, "kvm: pipe2: " EFMT, EARG(errno));
        return 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    uint64_t t0 = util_now_usec();
    int pidfd = -1;
    pid_t parent = (pid_t)syscall(SYS_getpid);
    pid_t pid = sys_fork_quiet_pidfd(&pidfd);
    if (pid == 0) {
        /* It dies with us: a prober killed while the guest runs (minutes
         * of a slow KVM's stages) cannot SIGKILL and reap it any more, and
         * it is in no cgroup and no record. The parent-death signal comes
         * when the forking thread exits; this one waits for the child
         * (and reaps it) before it returns. Our parent already gone: no
         * signal will come, so stop here. */
        if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0 && syscall(SYS_getppid) != parent)
            _exit(0);
        close(p[0]);
        kvm_child(a, p[1]);
        _exit(0);
    }
    int fork_err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        snprintf(reason, size, "kvm: fork: " EFMT, EARG(fork_err));
        return 0;
    }
    struct pu_proc pr = { .pid = pid, .pidfd = pidfd };
    uint64_t deadline = t0 + (uint64_t)deadline_ms * 1000u;

    /* Read records until DONE, EOF or the deadline; keep the last one. */
    struct kvm_report last, cur;
    memset(&last, 0, sizeof last);
    bool done = false, timed_out = false;
    size_t got = 0;
    while (!done) {
        struct pollfd pfd = { .fd = p[0], .events = POLLIN };
        int r = poll(&pfd, 1, pu_ms_left(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        ssize_t n = read(p[0], (char *)&cur + got, sizeof cur - got);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got < sizeof cur)
            continue;
        got = 0;
        if (cur.magic != REPORT_MAGIC)
            break;
        last = cur;
        done = cur.phase == KP_DONE;
    }
    close(p[0]);
    bool killed = false;
    bool reaped = pu_finish(&pr, done ? pu_deadline_after_ms(PU_KILL_GRACE_MS) : deadline, &killed);
    uint64_t elapsed_ms = (util_now_usec() - t0) / 1000u;
    char tail[160] = "";
    if (killed)
        snprintf(tail, sizeof tail, reaped ? "; the probe child was SIGKILLed and reaped"
                 : "; the probe child did not die within %d ms of SIGKILL and was left to "
                   "exit on its own (KVM_RUN not interruptible?)", PU_KILL_GRACE_MS);

    /* guest instructions per second measured in stage 2 (2 per loop iteration) */
    double mips = last.sample_usec > 0 ? 2.0 * SPEED_SAMPLE_ITERS / (double)last.sample_usec : 0;
    if (done && last.ok) {
        if (a->long_mode)
            snprintf(reason, size, "kvm: API %d; a real-mode guest ran out 0x10,0x2a + hlt, and "
                     "a 32-bit guest switched to 64-bit long mode and ran a %u-million-"
                     "instruction loop (%.1f ms in KVM_RUN, %llu ms in all)", last.api,
                     2 * SPEED_ITERS / 1000000u, (double)last.usec / 1000.0,
                     (unsigned long long)elapsed_ms);
        else
            snprintf(reason, size, "kvm: API %d; a real-mode guest ran its code to out "
                     "0x10,0x2a + hlt (%.1f ms in KVM_RUN)", last.api,
                     (double)last.usec / 1000.0);
        return 1;
    }
    const char *stage = last.stage == 3 ? "the loop"
                        : last.stage == 2 ? "the switch from 32-bit protected mode to 64-bit "
                                            "long mode (the PVH kernel entry path)"
                                          : "3 instructions";
    if (!done && last.phase == KP_RUNNING && last.stage == 3) {
        snprintf(reason, size, "kvm: unusable: /dev/kvm opened and a guest ran, but it did not "
                 "complete a %u-million-instruction loop within %d ms: guest code runs at about "
                 "%.1f million instructions/s (an emulating or paravirtual-only hypervisor, or "
                 "nested virtualisation without hardware support; hardware-assisted KVM runs "
                 "such a loop in a few milliseconds)%s", 2 * SPEED_ITERS / 1000000u, deadline_ms,
                 mips, tail);
        snprintf(hint, hint_size, "run on bare metal or a host with hardware-assisted nested "
                 "virtualisation (kvm_intel/kvm_amd nested=1); the VM backend uses QEMU TCG "
                 "meanwhile");
    } else if (!done && last.phase == KP_RUNNING) {
        snprintf(reason, size, "kvm: unusable: /dev/kvm opened but the guest did not complete "
                 "%s within %d ms (nested virtualisation?)%s%s", stage, deadline_ms,
                 last.stage == 2 ? "; a real-mode guest did run" : "", tail);
        snprintf(hint, hint_size, "run on bare metal or a host with hardware-assisted nested "
                 "virtualisation (kvm_intel/kvm_amd nested=1); the VM backend uses QEMU TCG "
                 "meanwhile");
    } else if (!done) {
        snprintf(reason, size, "kvm: unusable: the KVM probe child %s before running a guest%s",
                 timed_out ? "timed out" : "died", tail);
    } else if (last.op == KOP_EXIT) {
        snprintf(reason, size, "kvm: unusable: during %s the guest exited with reason %u "
                 "(port 0x%x value 0x%x, rip 0x%llx) instead of out 0x10 + hlt%s", stage,
                 last.exit_reason, last.port, last.value, (unsigned long long)last.rip, tail);
        snprintf(hint, hint_size, "this KVM cannot run ordinary guests (paravirtual-only "
                 "hypervisor?); the VM backend uses QEMU TCG meanwhile");
    } else if (last.op == KOP_API) {
        snprintf(reason, size, "kvm: unusable: KVM_GET_API_VERSION returned %d, not %d%s",
                 last.api, KVM_API_VERSION, tail);
    } else {
        const char *op = last.op > 0 && last.op < KOP__N ? kvm_op_name[last.op] : "?";
        snprintf(reason, size, "kvm: unusable: %s failed%s%s: " EFMT "%s",
                 op, last.stage ? " in stage " : "",
                 last.stage >= 2 ? "2 (long mode)" : last.stage == 1 ? "1 (real mode)" : "",
                 EARG(last.err), tail);
        if (last.op == KOP_OPEN)
            snprintf(hint, hint_size, "add the user to the kvm group");
    }
    return 0;
#endif
}

int vm_kvm_probe_code(const uint8_t *code, size_t len, int deadline_ms, char *reason,
                      size_t size) {
    char hint[256];
    if (!code || len == 0 || len > 0x800 || deadline_ms <= 0 || !reason || size == 0)
        return FY_E_INVAL;
    struct kvm_args a = { .code = code, .len = len, .long_mode = false };
    return kvm_check(&a, deadline_ms, reason, size, hint, sizeof hint);
}

/* ------------------------------------------------------------------ */
/* QEMU                                                               */
/* ------------------------------------------------------------------ */

struct run_result {
    int err;          /* spawn error (errno), 0 when it ran */
    bool timed_out;   /* killed at the deadline */
    int status;       /* wait status, -1 unknown */
    size_t len;
    char out[16384];  /* stdout + stderr (truncated) */
};

/* Runs argv[0] once: run_capture. */
static void run_capture_once(const char *const argv[], const char *stdin_data, int deadline_ms,
                             struct run_result *res) {
    memset(res, 0, sizeof *res);
    res->status = -1;
    int in = -1, out[2] = { -1, -1 };
    if (stdin_data) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
            res->err = errno;
            return;
        }
        size_t n = strlen(stdin_data); /* small: fits the pipe buffer */
        ssize_t w = write(p[1], stdin_data, n);
        close(p[1]);
        if (w != (ssize_t)n) {
            res->err = w < 0 ? errno : EIO;
            close(p[0]);
            return;
        }
        in = p[0];
    } else {
        in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0) {
            res->err = errno;
            return;
        }
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
        res->err = errno;
        close(in);
        return;
    }
    uint64_t deadline = pu_deadline_after_ms(deadline_ms);
    struct pu_proc pr;
    int r = pu_spawn(argv, environ, in, out[1], &pr);
    close(in);
    close(out[1]);
    if (r != 0) {
        res->err = r;
        close(out[0]);
        return;
    }
    for (;;) {
        struct pollfd pfd = { .fd = out[0], .events = POLLIN };
        int pr_ = poll(&pfd, 1, pu_ms_left(deadline));
        if (pr_ < 0 && errno == EINTR)
            continue;
        if (pr_ <= 0) {
            res->timed_out = pr_ == 0;
            break;
        }
        char buf[4096];
        ssize_t n = read(out[0], buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        size_t room = sizeof res->out - 1 - res->len;
        size_t take = (size_t)n < room ? (size_t)n : room;
        memcpy(res->out + res->len, buf, take);
        res->len += take;
    }
    res->out[res->len] = '\0';
    close(out[0]);
    bool killed = false;
    (void)pu_finish(&pr, res->timed_out ? util_now_usec() : deadline, &killed);
    res->timed_out |= killed;
    res->status = pr.reaped ? pr.status : -1;
}

/* Runs argv[0] with stdin from stdin_data (or /dev/null), stdout and stderr
 * to a pipe, under a deadline. A run that times out gets one more, under a
 * deadline QEMU_RETRY_FACTOR times longer: QEMU starting on a busy host
 * (beside a TCG guest, say) is slow, not missing, and a capability must
 * not be denied for it. One that times out again makes the probe
 * inconclusive (never saved, probed again later): a loaded host's saved
 * probe said QEMU missing, and runs that needed it were refused. */
static void run_capture(fy_caps *c, const char *const argv[], const char *stdin_data, int deadline_ms,
                        struct run_result *res) {
    run_capture_once(argv, stdin_data, deadline_ms, res);
    if (res->timed_out)
        run_capture_once(argv, stdin_data, deadline_ms * QEMU_RETRY_FACTOR, res);
    if (res->timed_out)
        c->inconclusive = true;
}

/* The program ran to its end and exited 0; or ended without our reading
 * its status, which another thread of the host reaped (a waitpid(-1) with
 * __WALL; a run that never ended is timed_out): then its output decides. */
static bool ran_clean(const struct run_result *r) {
    return !r->err && !r->timed_out && (r->status == -1 || (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0));
}

static bool line_starts(const char *text, const char *word) {
    size_t wl = strlen(word);
    for (const char *l = text; l && *l;) {
        if (strncmp(l, word, wl) == 0 && (l[wl] == ' ' || l[wl] == '\n' || l[wl] == '\0'))
            return true;
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    return false;
}

static const char *qemu_arch(char *buf, size_t size) {
    struct utsname u;
    if (uname(&u) < 0)
        return NULL;
    const char *m = u.machine;
    if (m[0] == 'i' && strcmp(m + 2, "86") == 0)
        m = "i386";
    else if (strncmp(m, "arm", 3) == 0)
        m = "arm";
    else if (strcmp(m, "ppc64le") == 0)
        m = "ppc64";
    snprintf(buf, size, "%s", m);
    return buf;
}

static void exit_text(const struct run_result *r, char *buf, size_t size) {
    if (r->err)
        snprintf(buf, size, "could not be started: " EFMT, EARG(r->err));
    else if (r->timed_out)
        snprintf(buf, size, "did not finish in time and was killed");
    else if (r->status == -1)
        snprintf(buf, size, "was reaped by someone else");
    else if (WIFSIGNALED(r->status))
        snprintf(buf, size, "was killed by signal %d", WTERMSIG(r->status));
    else
        snprintf(buf, size, "exited %d", WEXITSTATUS(r->status));
}

/* First line of the output, for reasons. */
static void first_line(const char *out, char *buf, size_t size) {
    const char *s = out;
    while (*s == '\n')
        s++;
    size_t n = strcspn(s, "\n");
    if (n >= size)
        n = size - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

static void probe_qemu(fy_caps *c) {
    char archbuf[32], name[64];
    const char *arch = qemu_arch(archbuf, sizeof archbuf);
    snprintf(name, sizeof name, "qemu-system-%s", arch ? arch : "x86_64");
    char *path = pu_find_program(name);
    if (!path) {
        caps_set(c, FY_CAP_QEMU, false, 0, "%s not found in PATH or /usr/bin", name);
        caps_set_hint(c, FY_CAP_QEMU, "install %s (Debian: apt install qemu-system-%s)", name,
                      arch && strcmp(arch, "x86_64") == 0 ? "x86"
                      : arch && (strcmp(arch, "aarch64") == 0 || strcmp(arch, "arm") == 0)
                          ? "arm"
                          : "misc");
        caps_set(c, FY_CAP_QEMU_TCG, false, 0, "needs QEMU: %s not found", name);
        caps_set(c, FY_CAP_QEMU_MICROVM, false, 0, "needs QEMU: %s not found", name);
        return;
    }
    (void)caps_set_fact(c, VM_FACT_QEMU, path);

    struct run_result *res = malloc(sizeof *res);
    if (!res) {
        caps_set(c, FY_CAP_QEMU, true, 1, "%s found (not run: out of memory)", path);
        free(path);
        return;
    }
    char why[REASON_MAX], ex[128], line[256];

    /* -machine help: microvm */
    const char *mach_argv[] = { path, "-machine", "help", NULL };
    run_capture(c, mach_argv, NULL, QEMU_HELP_DEADLINE_MS, res);
    bool ran_ok = ran_clean(res);
    if (ran_ok && line_starts(res->out, "microvm")) {
        caps_set(c, FY_CAP_QEMU_MICROVM, true, 1, "\"%s -machine help\" lists microvm", name);
    } else if (ran_ok) {
        caps_set(c, FY_CAP_QEMU_MICROVM, false, 0, "\"%s -machine help\" does not list "
                 "microvm", name);
        caps_set_hint(c, FY_CAP_QEMU_MICROVM, "a QEMU >= 4.2 built with the microvm machine "
                      "(x86 only); the VM backend boots the pc/q35 machine otherwise");
    } else {
        exit_text(res, ex, sizeof ex);
        first_line(res->out, line, sizeof line);
        caps_set(c, FY_CAP_QEMU_MICROVM, false, 0, "\"%s -machine help\" %s%s%s", name, ex,
                 line[0] ? ": " : "", line);
    }
    bool runs = ran_ok;

    /* -accel help: tcg listed? */
    const char *accel_argv[] = { path, "-accel", "help", NULL };
    run_capture(c, accel_argv, NULL, QEMU_HELP_DEADLINE_MS, res);
    ran_ok = ran_clean(res);
    runs |= ran_ok;
    bool tcg_listed = ran_ok && line_starts(res->out, "tcg");
    bool kvm_listed = ran_ok && line_starts(res->out, "kvm");
    if (!ran_ok) {
        exit_text(res, ex, sizeof ex);
        first_line(res->out, line, sizeof line);
        caps_set(c, FY_CAP_QEMU_TCG, false, 0, "\"%s -accel help\" %s%s%s", name, ex,
                 line[0] ? ": " : "", line);
    } else if (!tcg_listed) {
        caps_set(c, FY_CAP_QEMU_TCG, false, 0, "\"%s -accel help\" does not list tcg "
                 "(a KVM-only build)", name);
        caps_set_hint(c, FY_CAP_QEMU_TCG, "install a QEMU built with TCG (Debian's is)");
    }

    /* functional TCG: start a machine-less QEMU under -accel tcg and talk QMP */
    char version[64] = "";
    if (tcg_listed) {
        const char *tcg_argv[] = { path, "-M", "none", "-accel", "tcg", "-nodefaults",
                                   "-no-user-config", "-display", "none", "-monitor", "none",
                                   "-serial", "none", "-S", "-qmp", "stdio", NULL };
        run_capture(c, tcg_argv,
                    "{\"execute\":\"qmp_capabilities\"}\n"
                    "{\"execute\":\"x-query-jit\"}\n"
                    "{\"execute\":\"quit\"}\n",
                    QEMU_TCG_DEADLINE_MS, res);
        const char *q = strstr(res->out, "\"qemu\": {");
        int maj = -1, min = -1, mic = -1;
        if (q && sscanf(q, "\"qemu\": {\"micro\": %d, \"minor\": %d, \"major\": %d", &mic, &min,
                        &maj) == 3)
            snprintf(version, sizeof version, "%d.%d.%d", maj, min, mic);
        bool greeted = strstr(res->out, "{\"QMP\":") != NULL;
        bool answered = strstr(res->out, "{\"return\": {}}") != NULL;
        bool jit = strstr(res->out, "Translation buffer") || strstr(res->out, "TB count");
        exit_text(res, ex, sizeof ex);
        if (greeted && answered) {
            runs = true;
            caps_set(c, FY_CAP_QEMU_TCG, true, 1, "%s -accel tcg started and answered QMP%s",
                     name, jit ? " (x-query-jit: the TCG translator is live)" : "");
        } else {
            first_line(res->out, line, sizeof line);
            snprintf(why, sizeof why, "%s -M none -accel tcg %s without a QMP session%s%s",
                     name, ex, line[0] ? ": " : "", line);
            caps_set(c, FY_CAP_QEMU_TCG, false, 0, "%s", why);
            caps_set_hint(c, FY_CAP_QEMU_TCG, "run the command by hand to see why QEMU fails");
        }
    }
    free(res);

    if (runs)
        caps_set(c, FY_CAP_QEMU, true, 1, "%s%s%s (accelerators listed:%s%s)", path,
                 version[0] ? ", QEMU " : "", version, tcg_listed ? " tcg" : "",
                 kvm_listed ? " kvm" : "");
    else
        caps_set(c, FY_CAP_QEMU, true, 1, "%s found, but it did not run its help commands",
                 path);
    free(path);
}

/* ------------------------------------------------------------------ */
/* other VMMs and confidential VMs                                    */
/* ------------------------------------------------------------------ */

/* Firecracker and cloud-hypervisor: usable only once a guest booted under
 * them answered, which this version does not try (their configuration is
 * generated, vm-vmm-config.c, but never run): found or not, they are not
 * claimed usable. */
static void probe_vmm(fy_caps *c, uint32_t cap, const char *prog, const char *hint, bool kvm_ok) {
    char *p = pu_find_program(prog);
    if (p) {
        caps_set(c, cap, false, 0, "installed (%s), not used: the probe has booted no guest under it (this "
                 "version only generates its configuration)%s", p,
                 kvm_ok ? "" : "; it needs KVM, which is not usable here");
        free(p);
    } else {
        caps_set(c, cap, false, 0, "not installed: %s not found in PATH or the system directories", prog);
        caps_set_hint(c, cap, "%s", hint);
    }
}

static void probe_confidential(fy_caps *c, bool kvm_ok) {
    bool snp = read_flag("/sys/module/kvm_amd/parameters/sev_snp");
    bool tdx = read_flag("/sys/module/kvm_intel/parameters/tdx");
    char why[REASON_MAX] = "";
    size_t n = 0;
#define WHY(...) (n = strlen(why), snprintf(why + n, sizeof why - n, __VA_ARGS__))
    if ((snp || tdx) && kvm_ok) {
        caps_set(c, FY_CAP_CONFIDENTIAL_VM, true, snp ? 1 : 2, "%s host support enabled "
                 "(/sys/module/%s) and KVM usable; launching a confidential guest is not "
                 "tried by the probe", snp ? "SEV-SNP" : "TDX",
                 snp ? "kvm_amd/parameters/sev_snp" : "kvm_intel/parameters/tdx");
        return;
    }
    if (snp || tdx)
        WHY("%s host support is enabled, but KVM is not usable", snp ? "SEV-SNP" : "TDX");
    else if (pu_exists("/sys/module/kvm_amd"))
        WHY("kvm_amd is loaded without SEV-SNP (parameters/sev_snp is not Y)");
    else if (pu_exists("/sys/module/kvm_intel"))
        WHY("kvm_intel is loaded without TDX (parameters/tdx is not Y)");
    else if (pu_exists("/sys/module/kvm_pvm"))
        WHY("KVM comes from kvm_pvm (a paravirtual hypervisor): no SEV-SNP or TDX");
    else
        WHY("neither kvm_amd with SEV-SNP nor kvm_intel with TDX is loaded");
    if (pu_exists("/dev/sev-guest") || pu_exists("/dev/tdx_guest") || pu_exists("/dev/tdx-guest"))
        WHY("; this machine is itself a confidential guest (%s), which does not let it "
            "launch confidential VMs", pu_exists("/dev/sev-guest") ? "/dev/sev-guest"
                                                                   : "/dev/tdx_guest");
#undef WHY
    caps_set(c, FY_CAP_CONFIDENTIAL_VM, false, 0, "%s", why);
    caps_set_hint(c, FY_CAP_CONFIDENTIAL_VM, "bare-metal AMD EPYC with SEV-SNP (kvm_amd "
                  "sev_snp=1) or Intel with TDX (kvm_intel tdx=1) and a matching firmware");
}

/* ------------------------------------------------------------------ */
/* entry point                                                        */
/* ------------------------------------------------------------------ */

int vm_probe(fy_caps *c, uint64_t flags, fy_error **reterr) {
    if (!c)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "vm_probe: no caps");
    if (flags & FY_PROBE_NO_VM) {
        static const uint32_t skipped[] = { FY_CAP_KVM, FY_CAP_QEMU, FY_CAP_QEMU_TCG, FY_CAP_QEMU_MICROVM,
                                            FY_CAP_FIRECRACKER, FY_CAP_CLOUD_HYPERVISOR, FY_CAP_CONFIDENTIAL_VM };
        for (size_t i = 0; i < FY_ARRAY_SIZE(skipped); i++)
            caps_set(c, skipped[i], false, 0, "not probed (FY_PROBE_NO_VM)");
        return 0;
    }

    /* mov al,0x2a; out 0x10,al; hlt */
    static const uint8_t real_mode[] = { 0xb0, 0x2a, 0xe6, 0x10, 0xf4 };
    struct kvm_args a = { .code = real_mode, .len = sizeof real_mode, .long_mode = true };
    char reason[REASON_MAX], hint[512];
    int kvm_ok = kvm_check(&a, KVM_DEADLINE_MS, reason, sizeof reason, hint, sizeof hint);
    caps_set(c, FY_CAP_KVM, kvm_ok == 1, kvm_ok == 1 ? 1 : 0, "%s", reason);
    if (kvm_ok != 1 && hint[0])
        caps_set_hint(c, FY_CAP_KVM, "%s", hint);

    probe_qemu(c);
    probe_vmm(c, FY_CAP_FIRECRACKER, "firecracker", "install Firecracker (a static release "
              "binary from github.com/firecracker-microvm) on a host with usable KVM",
              kvm_ok == 1);
    probe_vmm(c, FY_CAP_CLOUD_HYPERVISOR, "cloud-hypervisor", "install cloud-hypervisor (a "
              "static release binary) on a host with usable KVM", kvm_ok == 1);
    probe_confidential(c, kvm_ok == 1);
    return 0;
}
