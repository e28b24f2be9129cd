/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the helper's peer has: the pure part (parsing and comparing, no
 * file, no syscall) of the rule that the helper never gives a peer more
 * than the peer has (fyh-main.c: bounds_v1, devices_v1, bounds_v2,
 * progs_v2; docs/helper.md, "What a peer may ask for"). Compiled into the
 * helper and into its test.
 *
 * Only libc string functions: the test links this file as it is. */
#ifndef FY_HELPER_PEER_H
#define FY_HELPER_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fyh-proto.h"

/* No limit (pids.max "max", memory.max "max", cpu.cfs_quota_us -1, a
 * missing file). Every real limit compares below it. */
#define FYH_UNLIMITED UINT64_MAX

/* The cgroup path of one hierarchy in a /proc/PID/cgroup text: ctl names
 * a v1 controller (matched exactly against the comma-separated list of a
 * line's second field), NULL the v2 line ("0::"). 0 and the path in out,
 * or -1 when there is none, more than one (a cgroup name with a newline
 * in it can forge a line: the helper never guesses between them), or it
 * does not fit. */
int fyh_proc_cgroup_path(const char *text, const char *ctl, char *out, size_t len);

/* The directory of cgroup path (as /proc/PID/cgroup shows it) in a mount
 * whose root is mnt_root (mountinfo's fourth field) at mnt_point: 0, or
 * -1 when the path is not below the mount's root, is not absolute, has a
 * "." or ".." component (a cgroup namespace shows what is outside it
 * with "/.."), or does not fit. */
int fyh_cg_dir(const char *mnt_root, const char *mnt_point, const char *path, char *out, size_t len);

/* Whether path is anc itself or below it (by whole components). */
bool fyh_path_within(const char *anc, const char *path);

/* A limit file's value: a decimal number, "max" or -1 (FYH_UNLIMITED);
 * trailing white space ignored. 0, or -1 when it is neither. */
int fyh_parse_limit(const char *text, uint64_t *out);
/* cgroup v2 cpu.max: "QUOTA PERIOD" or "max PERIOD" (quota FYH_UNLIMITED). */
int fyh_parse_cpu_max(const char *text, uint64_t *quota, uint64_t *period);
/* Whether quota_a/period_a <= quota_b/period_b (an unlimited b takes
 * anything; an unlimited a fits only an unlimited b; a period 0 is
 * nothing to compare and fits nothing). */
bool fyh_cpu_within(uint64_t quota_a, uint64_t period_a, uint64_t quota_b, uint64_t period_b);

/* A cgroup v1 devices.list: one rule a line, "T MAJ:MIN ACC" (T a, b or
 * c; MAJ and MIN a number or "*"; ACC of r, w, m), into out (at most max;
 * type as written, access as fyh_dev_rule's bits). The count, or -1 when a
 * line does not parse or there are more than max. */
int fyh_devlist_parse(const char *text, struct fyh_dev_rule *out, size_t max);
/* Whether a parsed list is the kernel's "a *:* rwm": the cgroup's default
 * is to allow, and its list then shows none of its exceptions (the denied
 * devices): such a list says nothing about what the cgroup may open. */
bool fyh_devlist_default_allow(const struct fyh_dev_rule *list, size_t n);
/* Whether an entry of a default-deny list (the devices the cgroup may
 * use) covers rule: its type 'a' or the rule's, its major and minor "*"
 * or the rule's, its access every bit of the rule's (the kernel's own
 * match for a child's new exception, security/device_cgroup.c). */
bool fyh_dev_covered(const struct fyh_dev_rule *rule, const struct fyh_dev_rule *list, size_t n);

/* Whether every id of a (na) is one of b (nb): the programs a process
 * runs under where it is, all still run where it goes. */
bool fyh_ids_subset(const uint32_t *a, size_t na, const uint32_t *b, size_t nb);

/* How long the gc waits before its next removal attempt of an attempt
 * cgroup that tries attempts left something (tries >= 1): 1 s, doubled
 * each time, at most FYH_RETRY_MAX_MS. */
#define FYH_RETRY_MAX_MS 32000u
uint64_t fyh_retry_delay_ms(uint32_t tries);

#endif
