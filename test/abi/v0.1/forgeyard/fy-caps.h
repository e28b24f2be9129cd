/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: what this host can really enforce. */
#ifndef FORGEYARD_FY_CAPS_H
#define FORGEYARD_FY_CAPS_H

#include "fy-common.h"
#include "fy-error.h"

/* Isolation levels, ordered from weakest to strongest. */
#define FY_LEVEL_NONE             0
#define FY_LEVEL_PROCESS          1  /* own process tree, rlimits, seccomp, Landlock; no namespaces */
#define FY_LEVEL_NAMESPACE        2  /* Linux namespaces (user, mount, pid, net, ipc, uts, cgroup) */
#define FY_LEVEL_CONTAINER        3  /* an OCI image root on top of the namespace machinery */
#define FY_LEVEL_VIRTUAL_MACHINE  4  /* a per-attempt virtual machine */
#define FY_LEVEL_CONFIDENTIAL_VM  5  /* a confidential VM (SEV-SNP, TDX) */

/* Capability identifiers. Queried one at a time; never renumbered. */
#define FY_CAP_USERNS            1   /* create a user namespace and map ids */
#define FY_CAP_MOUNTNS           2   /* mount namespace with a tmpfs mounted inside */
#define FY_CAP_PIDNS             3   /* pid namespace with our own pid 1 */
#define FY_CAP_NETNS             4   /* network namespace with lo brought up */
#define FY_CAP_IPCNS             5
#define FY_CAP_UTSNS             6
#define FY_CAP_CGROUPNS          7
#define FY_CAP_UID_RANGE         8   /* map the workload to an unprivileged host id range (root) */
#define FY_CAP_MOUNT_API         9   /* open_tree/move_mount/mount_setattr */
#define FY_CAP_OPENAT2           10  /* openat2 with RESOLVE_* */
#define FY_CAP_SECCOMP           11  /* seccomp filter mode (value: 1) */
#define FY_CAP_SECCOMP_NOTIFY    12  /* SECCOMP_RET_USER_NOTIF */
#define FY_CAP_LANDLOCK          13  /* value: the Landlock ABI version */
#define FY_CAP_NO_NEW_PRIVS      14
#define FY_CAP_PIDFD             15  /* pidfd_open / pidfd_send_signal / waitid(P_PIDFD) */
#define FY_CAP_CLONE3            16
#define FY_CAP_CLONE_INTO_CGROUP 17
#define FY_CAP_CGROUP_V1         18  /* a v1 hierarchy we may create children in */
#define FY_CAP_CGROUP_V2         19  /* a v2 hierarchy we may create children in, with controllers */
#define FY_CAP_CGROUP_MEMORY     20  /* value: the cgroup version that enforces it (1 or 2) */
#define FY_CAP_CGROUP_PIDS       21  /* value: cgroup version */
#define FY_CAP_CGROUP_CPU        22  /* value: cgroup version */
#define FY_CAP_CGROUP_IO         23  /* value: cgroup version */
#define FY_CAP_CGROUP_FREEZE     24  /* value: cgroup version (v1 freezer or v2 cgroup.freeze) */
#define FY_CAP_CGROUP_KILL       25  /* cgroup.kill (v2) */
#define FY_CAP_KVM               26  /* /dev/kvm runs a guest instruction within a deadline */
#define FY_CAP_QEMU              27  /* qemu-system binary found (value: 1) */
#define FY_CAP_QEMU_TCG          28  /* QEMU software emulation works */
#define FY_CAP_QEMU_MICROVM      29  /* QEMU has the microvm machine type */
#define FY_CAP_FIRECRACKER       30
#define FY_CAP_CLOUD_HYPERVISOR  31
#define FY_CAP_OCI_RUNTIME       32  /* crun or runc found */
#define FY_CAP_NFTABLES          33  /* nft usable for netns egress filtering (root) */
#define FY_CAP_PASTA             34  /* pasta user-mode networking found */
#define FY_CAP_CONFIDENTIAL_VM   35  /* SEV-SNP or TDX guest support */
#define FY_CAP_EXEC_INIT         36  /* the sandbox's pid 1 can be forgeyard-init, executed from a
                                        sealed memfd (else a fork of the host process) */
#define FY_CAP_MAX_               36 /* highest id known to this header (not an id) */

/* Probe flags. */
#define FY_PROBE_FRESH   (UINT64_C(1) << 0) /* ignore the process-wide cached probe */
#define FY_PROBE_NO_VM   (UINT64_C(1) << 1) /* skip the KVM/VMM probes (faster) */

FY_BEGIN_DECLS

/* An immutable snapshot of what the host can enforce. Safe to share between
 * threads. */
typedef struct fy_caps fy_caps;

/* Runs the functional probe (or returns the cached result; the cache is
 * computed once per process). */
FY_API int  fy_probe(uint64_t flags, fy_caps **ret, fy_error **reterr);
/* The same probe (never cached), with a cgroup v2 directory the host
 * program delegated to the library (for example a systemd scope with
 * Delegate=yes): sandboxes get their cgroups as children of cgroup_dir,
 * with the controllers its cgroup.subtree_control enables. Pass the
 * returned caps to fy_prepare. */
FY_API int fy_probe_cgroup(uint64_t flags, const char *cgroup_dir, fy_caps **ret, fy_error **reterr);
FY_API void fy_caps_free(fy_caps *caps);

/* 1 when available, 0 when missing, FY_E_UNSUPPORTED for an unknown id. */
FY_API int fy_caps_has(const fy_caps *caps, uint32_t cap);
/* A numeric detail (Landlock ABI, cgroup version, ...); 0 when none. */
FY_API int fy_caps_value(const fy_caps *caps, uint32_t cap, int64_t *ret_value);
/* Why the capability is missing, or what was found when present; never NULL
 * for a known id. Borrowed, valid until fy_caps_free(). */
FY_API const char *fy_caps_reason(const fy_caps *caps, uint32_t cap);
/* How to make a missing capability available on this host, or NULL. */
FY_API const char *fy_caps_hint(const fy_caps *caps, uint32_t cap);
/* The strongest isolation level some compiled-in backend can give here. */
FY_API int fy_caps_max_level(const fy_caps *caps);
/* The whole snapshot as JSON (ownership to the caller; free with fy_free). */
FY_API int fy_caps_to_json(const fy_caps *caps, char **ret_json, fy_error **reterr);

/* "userns", "cgroup-memory", ...; NULL for an unknown id. */
FY_API const char *fy_cap_name(uint32_t cap);
/* "none", "process", "namespace", ...; NULL for an unknown level. */
FY_API const char *fy_level_name(uint32_t level);

FY_END_DECLS

#endif
