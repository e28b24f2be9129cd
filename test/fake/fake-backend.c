/* Fake backends with scripted capabilities for the selection tests. */
#include <stdlib.h>

#include "fake-backend.h"

static const uint32_t control_cap[FY_CONTROL_MAX_ + 1] = {
    [FY_CONTROL_USERNS] = FY_CAP_USERNS,   [FY_CONTROL_MOUNTNS] = FY_CAP_MOUNTNS,
    [FY_CONTROL_PIDNS] = FY_CAP_PIDNS,     [FY_CONTROL_NETNS] = FY_CAP_NETNS,
    [FY_CONTROL_IPCNS] = FY_CAP_IPCNS,     [FY_CONTROL_UTSNS] = FY_CAP_UTSNS,
    [FY_CONTROL_CGROUPNS] = FY_CAP_CGROUPNS, [FY_CONTROL_SECCOMP] = FY_CAP_SECCOMP,
    [FY_CONTROL_LANDLOCK] = FY_CAP_LANDLOCK, [FY_CONTROL_MEMORY_LIMIT] = FY_CAP_CGROUP_MEMORY,
    [FY_CONTROL_PIDS_LIMIT] = FY_CAP_CGROUP_PIDS, [FY_CONTROL_CPU_LIMIT] = FY_CAP_CGROUP_CPU,
    [FY_CONTROL_IO_LIMIT] = FY_CAP_CGROUP_IO, [FY_CONTROL_UID_RANGE] = FY_CAP_UID_RANGE,
};

static bool need(const fy_caps *c, uint32_t cap, struct strbuf *why) {
    if (caps_present(c, cap))
        return true;
    strbuf_printf(why, "%s%s: scripted: missing", why->len ? "; " : "", fy_cap_name(cap));
    return false;
}

static bool by_cap(const fy_caps *c, uint32_t control, const char **why) {
    if (caps_present(c, control_cap[control]))
        return true;
    *why = fy_caps_reason(c, control_cap[control]);
    return false;
}

static bool proc_usable(const fy_caps *c, struct strbuf *why) { return need(c, FY_CAP_PIDFD, why); }
static bool proc_enforce(const fy_caps *c, uint32_t control, const char **why) {
    if (control <= FY_CONTROL_CGROUPNS || control == FY_CONTROL_UID_RANGE) {
        *why = "fake-process has no namespaces";
        return false;
    }
    return by_cap(c, control, why);
}

static bool ns_usable(const fy_caps *c, struct strbuf *why) {
    bool ok = need(c, FY_CAP_USERNS, why);
    ok &= need(c, FY_CAP_MOUNTNS, why);
    ok &= need(c, FY_CAP_PIDNS, why);
    return ok;
}

static bool vm_usable(const fy_caps *c, struct strbuf *why) {
    if (caps_present(c, FY_CAP_KVM) || caps_present(c, FY_CAP_QEMU_TCG))
        return true;
    strbuf_append(why, "kvm and qemu-tcg: scripted: missing");
    return false;
}
static bool vm_enforce(const fy_caps *c, uint32_t control, const char **why) { return true; }

const struct fy_backend_ops fake_process = {FY_BACKEND_OPS_VERSION, "fake-process", FY_LEVEL_PROCESS, 10,
                                            proc_usable, proc_enforce};
const struct fy_backend_ops fake_namespace = {FY_BACKEND_OPS_VERSION, "fake-namespace", FY_LEVEL_NAMESPACE, 20,
                                              ns_usable, by_cap};
const struct fy_backend_ops fake_vm = {FY_BACKEND_OPS_VERSION, "fake-vm", FY_LEVEL_VIRTUAL_MACHINE, 100,
                                       vm_usable, vm_enforce};
const struct fy_backend_ops *const fake_table[3] = {&fake_vm, &fake_namespace, &fake_process};

fy_caps *fake_caps(const uint32_t *present) {
    fy_caps *c = caps_new();
    if (!c)
        return NULL;
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++)
        caps_set(c, i, false, 0, "scripted: missing %s", fy_cap_name(i));
    for (const uint32_t *p = present; *p; p++)
        caps_set(c, *p, true, 1, "scripted: present");
    return c;
}
