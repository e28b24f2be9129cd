/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The apple folder's registration (Apple hosts only): Seatbelt at the
 * process level, and a virtual-machine backend that reports the VM tools it
 * found but never claims the level (it does not run workloads yet). */
#include "apple-darwin.h"
#include "backend.h"

const struct fy_backend_ops apple_seatbelt_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "apple-seatbelt",
    .level = FY_LEVEL_PROCESS,
    .cost = 10,
    .usable = apple_seatbelt_usable,
    .can_enforce = apple_can_enforce,
    .compile = apple_compile,
    .plan_free = apple_plan_free,
    .start = apple_start,
    .process = apple_process,
    .terminate = apple_terminate,
    .destroy = apple_destroy,
    .forget = apple_forget,
    .get_fd = apple_get_fd,
    .stdio_fd = apple_stdio_fd,
    .next_deadline = apple_next_deadline,
    .describe = apple_describe,
    .workload_ids = apple_workload_ids,
};

/* Negotiation only: usable() says which tool was found and that it is not
 * driven yet, so the level is never reached through it. */
const struct fy_backend_ops apple_vm_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "apple-vm",
    .level = FY_LEVEL_VIRTUAL_MACHINE,
    .cost = 100,
    .usable = apple_vm_usable,
    .can_enforce = apple_vm_can_enforce,
};

static const struct fy_backend_ops *const apple_backends[] = {
    &apple_seatbelt_backend,
    &apple_vm_backend,
    NULL,
};

const struct fy_backend_family family_apple = {
    .version = FY_BACKEND_FAMILY_VERSION,
    .name = "apple",
    .probe = apple_probe,
    .backends = apple_backends,
    .fingerprint = apple_fingerprint,
};
