/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Adapters for VMMs other than QEMU (vm-run.h): what Firecracker and
 * cloud-hypervisor would be started with for a compiled plan, generated
 * from the same struct vm_plan that vm_qemu_argv reads. Pure functions of
 * the plan and the paths inside the VMM's sandbox; nothing runs them yet
 * (neither VMM is in Debian 12, and the probe claims neither usable without
 * booting a guest under it). Unit-tested against golden output
 * (test/vm/test-vmm-config.c).
 *
 * What differs from the QEMU machine, and why:
 * - Both have no virtio-serial and no 9p: the control channel is their
 *   hybrid vsock (a unix socket on the host, guest CID 3, port
 *   VM_VSOCK_PORT), and each approved runtime directory is a read-only
 *   disk image (/fy/mN.img, one per plan mount, in order).
 * - Firecracker declares its virtio-mmio devices on the kernel command line
 *   (the guest kernel needs CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES, which
 *   Debian's lacks) and has no ACPI: "pci=off", "reboot=k".
 * - cloud-hypervisor uses virtio-pci and ACPI like the QEMU machine. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm-run.h"

#define MiB (UINT64_C(1) << 20)

/* Firecracker's kernel command line: the plan's, with its reboot through
 * the i8042 keyboard controller (the one way Firecracker sees a guest end:
 * "reboot=k", not the triple fault QEMU's -no-reboot turns into an exit)
 * and no PCI. */
static char *firecracker_cmdline(const struct vm_plan *pl) {
    struct strbuf sb;
    strbuf_init(&sb);
    const char *p = pl->cmdline;
    for (const char *t; (t = strstr(p, "reboot=t")); p = t + 8)
        strbuf_printf(&sb, "%.*sreboot=k", (int)(t - p), p);
    strbuf_printf(&sb, "%s pci=off", p);
    return strbuf_steal(&sb);
}

int vm_firecracker_config(const struct vm_plan *pl, const struct vm_vmm_paths *paths, char **ret) {
    *ret = NULL;
    char *cmd = firecracker_cmdline(pl);
    json_t *root = json_object(), *drives = json_array();
    if (!cmd || !root || !drives) {
        free(cmd);
        json_decref(root);
        json_decref(drives);
        return FY_E_NOMEM;
    }
    json_object_set_new(root, "boot-source", json_pack("{ssssss}", "kernel_image_path", paths->kernel,
                                                       "initrd_path", paths->initrd, "boot_args", cmd));
    free(cmd);
    for (size_t i = 0; i < pl->nmounts; i++) {
        char id[16], img[64];
        snprintf(id, sizeof(id), "r%zu", i);
        snprintf(img, sizeof(img), "%s/m%zu.img", paths->images, i);
        json_array_append_new(drives, json_pack("{sssssbsbss}", "drive_id", id, "path_on_host", img,
                                                "is_root_device", 0, "is_read_only", 1, "cache_type",
                                                "Unsafe"));
    }
    json_object_set_new(root, "drives", drives);
    json_object_set_new(root, "machine-config",
                        json_pack("{sIsIsb}", "vcpu_count", (json_int_t)pl->smp, "mem_size_mib",
                                  (json_int_t)(pl->guest_mem / MiB), "smt", 0));
    json_object_set_new(root, "network-interfaces", json_array());
    json_object_set_new(root, "vsock", json_pack("{sIss}", "guest_cid", (json_int_t)VM_VSOCK_CID, "uds_path",
                                                 paths->vsock));
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!s)
        return FY_E_NOMEM;
    *ret = s;
    return 0;
}

int vm_cloud_hypervisor_argv(const struct vm_plan *pl, const struct vm_vmm_paths *paths, const char *program,
                             struct strbuf *args, const char ***ret) {
#define A(...) do { strbuf_printf(args, __VA_ARGS__); strbuf_appendn(args, "", 1); } while (0)
    A("%s", program);
    A("--kernel");
    A("%s", paths->kernel);
    A("--initramfs");
    A("%s", paths->initrd);
    A("--cmdline");
    A("%s", pl->cmdline);
    A("--cpus");
    A("boot=%u", pl->smp);
    A("--memory");
    A("size=%lluM", (unsigned long long)(pl->guest_mem / MiB));
    A("--console");
    A("off");
    A("--serial");
    A("tty");
    for (size_t i = 0; i < pl->nmounts; i++) {
        A("--disk");
        A("path=%s/m%zu.img,readonly=on,id=r%zu", paths->images, i, i);
    }
    A("--vsock");
    A("cid=%u,socket=%s", VM_VSOCK_CID, paths->vsock);
    A("--seccomp");
    A("true");
#undef A
    return vm_argv_of(args, ret);
}
