/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's device allowlist for a sandbox (FY_CONTROL_DEVICES): which
 * device numbers the processes of a cgroup may open or make. Two
 * mechanisms, one list of rules: the cgroup v1 `devices` controller
 * (devices.deny "a", then one devices.allow line per rule) on v1 and hybrid
 * hosts, and on cgroup v2 a BPF_PROG_TYPE_CGROUP_DEVICE program compiled
 * here from the rules (raw instructions, no BPF toolchain) and loaded and
 * attached with libbpf. Either needs root (CAP_SYS_ADMIN, or CAP_BPF and
 * CAP_NET_ADMIN for the program): an unprivileged caller cannot enforce a
 * device list, and a lease is then refused (never bound unenforced).
 *
 * lx_dev_apply is the one entry point that puts a list on a cgroup: the
 * per-attempt cgroups (linux-cgroup.c) call it, and so can a privileged
 * helper that creates cgroups for unprivileged callers. */
#ifndef FY_LINUX_DEVICES_H
#define FY_LINUX_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caps.h"
#include "linux-devprog.h"

enum lx_dev_mech {
    LX_DEV_NONE = 0,
    LX_DEV_V1 = 1,   /* cgroup v1 devices controller */
    LX_DEV_BPF = 2,  /* cgroup v2 device program */
};

/* The facts the probe records (caps_fact): the v1 devices directory of our
 * own cgroup when a child of it took and enforced a list; "1" when a device
 * program was attached to a v2 child and enforced there; what was found, as
 * the capabilities report shows it ("report.devices"). */
#define LX_FACT_DEV_V1     "linux.devices_v1"
#define LX_FACT_DEV_BPF    "linux.devices_bpf"
#define LX_FACT_DEV_REPORT "report.devices"

/* Bounds: the standard set, private terminals and POLICY_MAX_DEVICES leases. */
#define LX_DEV_MAX_RULES 320

/* The rules every sandbox with a device list has: the harmless nodes
 * (null zero full random urandom) and, with private terminals, ptmx and
 * the pts majors. Returns how many were written to out (at most max). */
size_t lx_dev_standard_rules(struct lx_dev_rule *out, size_t max, bool ptys);

/* Puts rules on a cgroup: mech LX_DEV_V1 writes them to the v1 directory
 * v1_dir; LX_DEV_BPF attaches a program to the v2 directory v2_dir (with
 * BPF_F_ALLOW_MULTI, so that an ancestor's program still applies). 0, or
 * -errno with what failed in why. Nothing is left behind on failure but
 * what goes with the cgroup itself (its rmdir releases the program). */
int lx_dev_apply(enum lx_dev_mech mech, const char *v1_dir, const char *v2_dir, const struct lx_dev_rule *rules,
                 size_t n, char *why, size_t whylen);

/* "c 10:229 rw" (a v1 devices.allow line; '*' for LX_DEV_ANY). */
void lx_dev_rule_format(const struct lx_dev_rule *r, char *buf, size_t len);

/* The probe: in a child cgroup of our own v1 devices cgroup (v1_dir) and of
 * our v2 cgroup (cg2_dir), either may be NULL, puts a list allowing
 * /dev/null only, checks that a process placed there opens /dev/null and
 * is refused /dev/zero with EPERM, and removes the child. Sets the facts
 * above. Negative only on OOM. */
int lx_dev_probe(fy_caps *c, const char *v1_dir, const char *cg2_dir);

#endif
