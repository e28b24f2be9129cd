/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The VM folder's entries in its family (vm-backend.c): its probe (KVM
 * judged by running guest code, QEMU/Firecracker/cloud-hypervisor found and
 * tried) and the QEMU microvm backend (vm-run.h). */
#ifndef FY_VM_BACKEND_H
#define FY_VM_BACKEND_H

#include "backend.h"

/* The QEMU binary the probe found and tried (caps_fact). */
#define VM_FACT_QEMU "vm.qemu_path"

/* vm-probe.c. With FY_PROBE_NO_VM it marks its capabilities not probed. */
int vm_probe(fy_caps *c, uint64_t flags, fy_error **reterr);
/* vm-probe.c: runs code as a KVM guest under a deadline (tests use it). */
int vm_kvm_probe_code(const uint8_t *code, size_t len, int deadline_ms, char *reason, size_t size);

#endif
