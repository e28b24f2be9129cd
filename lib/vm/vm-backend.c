/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The VM folder's registration: its probe and the QEMU microvm backend (a
 * fresh guest per attempt, vm-plan.c and vm-run.c). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "linux-probe-util.h"
#include "vm-backend.h"
#include "vm-shell.h"
#include "vm-run.h"

static bool need(const fy_caps *c, uint32_t cap, struct strbuf *why) {
    if (caps_present(c, cap))
        return true;
    strbuf_printf(why, "%s%s: %s", why->len ? "; " : "", fy_cap_name(cap), fy_caps_reason(c, cap));
    return false;
}

static bool cap_for(const fy_caps *c, uint32_t cap, const char **why) {
    if (caps_present(c, cap))
        return true;
    *why = fy_caps_reason(c, cap);
    return false;
}

/* QEMU with microvm and an accelerator, and what the VMM's own namespace
 * sandbox needs (it is run through the library's namespace backend). */
static bool qemu_usable(const fy_caps *c, struct strbuf *why) {
    bool ok = need(c, FY_CAP_QEMU, why);
    ok &= need(c, FY_CAP_QEMU_MICROVM, why);
    if (!caps_present(c, FY_CAP_KVM))
        ok &= need(c, FY_CAP_QEMU_TCG, why);
    ok &= need(c, FY_CAP_USERNS, why);
    ok &= need(c, FY_CAP_MOUNTNS, why);
    ok &= need(c, FY_CAP_PIDNS, why);
    ok &= need(c, FY_CAP_NETNS, why);
    ok &= need(c, FY_CAP_PIDFD, why);
    /* The rest of what the VMM's sandbox, a standard-ci policy at namespace
     * level (vm-run.c, vm_vmm_start), requires: without them every start
     * failed, after doctor had promised every profile. */
    ok &= need(c, FY_CAP_IPCNS, why);
    ok &= need(c, FY_CAP_UTSNS, why);
    ok &= need(c, FY_CAP_SECCOMP, why);
    ok &= need(c, FY_CAP_OPENAT2, why);
    return ok;
}

/* The guest is its own kernel: the namespaces' separations hold by
 * construction (nothing of the host is visible in the guest but the
 * read-only directories the plan approves); limits are the guest's cgroup
 * v2; the system-call filter and Landlock confine the VMM, which is the
 * only host process the workload can reach. */
static bool qemu_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_USERNS: case FY_CONTROL_MOUNTNS: case FY_CONTROL_PIDNS: case FY_CONTROL_NETNS:
    case FY_CONTROL_IPCNS: case FY_CONTROL_UTSNS: case FY_CONTROL_CGROUPNS: case FY_CONTROL_UID_RANGE:
    case FY_CONTROL_MEMORY_LIMIT: case FY_CONTROL_PIDS_LIMIT: case FY_CONTROL_CPU_LIMIT:
        return true;
    case FY_CONTROL_SECCOMP: return cap_for(c, FY_CAP_SECCOMP, why);
    /* (the guest has no host file system to confine: Landlock confines
     * the VMM, so it takes the host's; vm-run.c requires it there) */
    case FY_CONTROL_LANDLOCK: return cap_for(c, FY_CAP_LANDLOCK, why);
    case FY_CONTROL_IO_LIMIT:
        *why = "the virtual-machine backend does not limit I/O yet";
        return false;
#ifdef FY_CONTROL_DEVICES
    case FY_CONTROL_DEVICES:
        *why = "the virtual-machine backend passes no host device into its guest";
        return false;
#endif
#ifdef FY_CONTROL_HW_VIRT
    case FY_CONTROL_HW_VIRT: return cap_for(c, FY_CAP_KVM, why);
#endif
    case FY_CONTROL_COLD_BOOT: return true; /* no template: vm-plan.c */
    default:
        *why = "unknown control";
        return false;
    }
}

const struct fy_backend_ops vm_qemu_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "vm-qemu",
    .level = FY_LEVEL_VIRTUAL_MACHINE,
    .cost = 1000,
    .usable = qemu_usable,
    .can_enforce = qemu_can_enforce,
    .compile = vm_compile,
    .plan_free = vm_plan_free,
    .start = vm_start,
    .process = vm_process,
    .terminate = vm_terminate,
    .destroy = vm_destroy,
    .forget = vm_forget,
    .get_fd = vm_get_fd,
    .stdio_fd = vm_stdio_fd,
    .next_deadline = vm_next_deadline,
    .describe = vm_describe,
    .shell_make = vm_shell_make,
    .shell_fits = vm_shell_fits,
    .shell_gone = vm_shell_gone,
    .shell_discard = vm_shell_discard,
    .shell_forget = vm_shell_forget,
    .start_shell = vm_start_shell,
};

static const struct fy_backend_ops *const vm_backends[] = { &vm_qemu_backend, NULL };

/* What the VM probe depends on, for persisted snapshots: /dev/kvm and the
 * VMM programs (which build of each: pu_programs_key). */
static int vm_fingerprint(struct strbuf *key) {
    struct stat st;
    if (stat("/dev/kvm", &st) == 0)
        strbuf_printf(key, "kvm %o %u:%u %llu\n", (unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
                      (unsigned long long)st.st_rdev);
    else
        strbuf_printf(key, "kvm -\n");
    struct utsname u;
    char qemu[96] = "qemu-system-x86_64";
    if (uname(&u) == 0)
        snprintf(qemu, sizeof(qemu), "qemu-system-%s", u.machine);
    const char *const programs[] = {qemu, "firecracker", "cloud-hypervisor"};
    return pu_programs_key(key, programs, FY_ARRAY_SIZE(programs)); /* (which builds: the saved file) */
}

const struct fy_backend_family family_vm = {
    .version = FY_BACKEND_FAMILY_VERSION,
    .name = "vm",
    .probe = vm_probe,
    .gc = vm_gc,
    .backends = vm_backends,
    .fingerprint = vm_fingerprint,
};
