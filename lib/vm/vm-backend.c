/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The VM folder's registration: a probe, no backend that runs workloads
 * yet (issue: the virtual-machine backend). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "linux-probe-util.h"
#include "vm-backend.h"

static const struct fy_backend_ops *const vm_backends[] = { NULL };

/* What the VM probe depends on, for persisted snapshots: /dev/kvm and the
 * VMM programs (which build of each). */
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
    for (size_t i = 0; i < FY_ARRAY_SIZE(programs); i++) {
        char *p = pu_find_program(programs[i]);
        if (p && stat(p, &st) == 0)
            strbuf_printf(key, "vmm %s %s %llu %lld %lld\n", programs[i], p, (unsigned long long)st.st_ino,
                          (long long)st.st_size, (long long)st.st_mtime);
        else
            strbuf_printf(key, "vmm %s -\n", programs[i]);
        free(p);
    }
    return key->oom ? FY_E_NOMEM : 0;
}

const struct fy_backend_family family_vm = {
    .version = FY_BACKEND_FAMILY_VERSION,
    .name = "vm",
    .probe = vm_probe,
    .backends = vm_backends,
    .fingerprint = vm_fingerprint,
};
