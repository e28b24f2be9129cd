/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state directory of live sandboxes and the orphan collector. */
#ifndef FY_LINUX_STATE_H
#define FY_LINUX_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

/* A parsed record; the strings point into the parsed text (not terminated). */
struct state_record_view {
    pid_t owner, sandbox;
    uint64_t owner_start, sandbox_start;
    uint64_t owner_pidns;      /* "pidns INODE": the owner's pid namespace; 0 when the record has none */
    const char *cgroups[16];
    size_t cglen[16], ncg;
    const char *scratch;
    size_t scratchlen;
    pid_t helpers[4];          /* "helper PID START": long-lived helpers of the attempt (pasta) */
    uint64_t helper_start[4];
    size_t nhelpers;
};

int state_default_dir(char *buf, size_t len);
uint64_t state_starttime(pid_t pid);
/* Creates the record (no sandbox yet) with one write; *ret_path gets the
 * file to unlink later, *ret_fd an fd to append the sandbox to. */
int state_record(const char *dir, const char *name, const char *const *cgroups, size_t ncg, const char *scratch,
                 char **ret_path, int *ret_fd, fy_error **reterr);
/* Appends the sandbox's pid (and start time) to a record. */
int state_record_sandbox(int fd, pid_t sandbox_pid, fy_error **reterr);
/* Appends a long-lived helper process of the attempt (rootless restricted's
 * pasta): gc kills it if it is still that process. At most 4. */
int state_record_helper(int fd, pid_t pid, fy_error **reterr);
int state_parse(const char *text, size_t len, struct state_record_view *out);
int state_gc(const char *dir, uint64_t *ret_destroyed, fy_error **reterr);
/* The attempt cgroups in parent (forgeyard-<pid>-<16 hex digits>) that no
 * record names any more (a state directory deleted with its records, a host
 * killed between the two): removed when their owner's pid is gone, they are
 * older than min_age_sec (by mtime), empty, and state_dir (may be NULL) has
 * no record of that name (a record is state_gc's; and the pid in the name
 * may be another pid namespace's, its owner alive there). Nothing is killed (without a record
 * nothing proves what a process in one is); rmdir(2) refuses a populated
 * cgroup or one with children. How many were removed. */
/* Two minutes: longer than any attempt waits between making its cgroups
 * and moving into them (at most the 30 s restricted waits for the sandbox's
 * network namespace), so an empty one this old is nobody's. */
#define CG_UNRECORDED_MIN_AGE_SEC 120u
unsigned state_gc_unrecorded_cgroups(const char *parent, unsigned min_age_sec, const char *state_dir);
/* The same over parents[n] (NULLs skipped, a directory named twice, as
 * co-mounted v1 hierarchies are, visited once). */
unsigned state_gc_unrecorded_in(const char *const *parents, size_t n, unsigned min_age_sec, const char *state_dir);
/* Removes a directory tree without following symlinks. */
int state_remove_tree(const char *path);

#endif
