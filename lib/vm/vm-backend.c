/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The VM folder's registration: a probe, no backend that runs workloads
 * yet (issue: the virtual-machine backend). */
#include "vm-backend.h"

static const struct fy_backend_ops *const vm_backends[] = { NULL };

const struct fy_backend_family fy_family_vm = {
    .version = FY_BACKEND_FAMILY_VERSION,
    .name = "vm",
    .probe = vm_probe,
    .backends = vm_backends,
};
