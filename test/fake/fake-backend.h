/* Fake backends with scripted capabilities for the selection tests. */
#ifndef FY_FAKE_BACKEND_H
#define FY_FAKE_BACKEND_H

#include "backend.h"

/* fake-process (PROCESS, cost 10): needs FY_CAP_PIDFD; enforces seccomp,
 *   landlock and limits from the matching caps; no namespaces.
 * fake-namespace (NAMESPACE, cost 20): needs USERNS+MOUNTNS+PIDNS; enforces
 *   every control whose cap is present.
 * fake-vm (VIRTUAL_MACHINE, cost 100): needs KVM or QEMU_TCG; enforces every
 *   control (the guest kernel does). */
extern const struct fy_backend_ops fake_process, fake_namespace, fake_vm;
/* fake-run (CONTAINER, cost 30; fake-run.c): usable everywhere, runs
 *   nothing, goes through the whole lifecycle like a real backend. */
extern const struct fy_backend_ops fake_run;
extern const struct fy_backend_ops *const fake_table[3];

/* A caps snapshot where every listed cap is present and all others missing
 * (reason "scripted: missing"). The list ends with 0. */
fy_caps *fake_caps(const uint32_t *present);

#endif
