/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-attempt cgroups: cgroup v2 (a delegated subtree, CLONE_INTO_CGROUP,
 * cgroup.kill, memory.events) and the cgroup v1 fallback of hybrid and
 * legacy hosts (one directory per controller, the pid written before the
 * workload runs, failcnt/oom_control, freezer-then-kill). */
#ifndef FY_LINUX_CGROUP_H
#define FY_LINUX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "linux-devices.h"

enum cg_ctl { CG_MEMORY, CG_PIDS, CG_CPU, CG_CPUACCT, CG_FREEZER, CG_BLKIO, CG_DEVICES, CG_CPUSET, CG_NCTL };

/* Compiled at prepare: where and what. */
struct cg_plan {
    bool enabled;
    /* v2: the parent directory (our own cgroup, or a delegated one) */
    const char *v2_parent;
    bool v2_limits;        /* memory/pids/cpu/io through v2 */
    bool v2_group;         /* a v2 cgroup for CLONE_INTO_CGROUP and cgroup.kill */
    /* v1: the parent directory per controller (NULL: not used) */
    const char *v1_parent[CG_NCTL];
    bool v1_memsw;
    /* limits (FY_UNLIMITED: none) */
    uint64_t memory, swap, pids, cpu_millis, io_bps;
    uint32_t version_memory, version_pids, version_cpu, version_io; /* 0: not enforced */
    uint32_t io_major, io_minor;  /* the block device behind the workspace (io limits) */
    /* The device allowlist (FY_CONTROL_DEVICES): LX_DEV_V1 writes it to the
     * v1 devices cgroup (v1_parent[CG_DEVICES]), LX_DEV_BPF attaches it to
     * the v2 cgroup (v2_devices makes one even without limits). */
    uint32_t dev_mech;
    bool v2_devices;
    const struct lx_dev_rule *dev_rules;
    size_t ndev_rules;
    uint32_t fault_step, fault_nth; /* tests: injected failure */
    /* The privileged helper's socket when it makes the cgroups (an
     * unprivileged host: forgeyard-sandbox-helper(8)), else NULL; with
     * v2_helper, the v2 cgroup is its (made before the clone, the sandbox
     * moved in by it: cg_place), else the v1 ones. */
    const char *helper;
    bool v2_helper;
    uint16_t helper_version; /* the protocol version to ask it in */
};

/* Per attempt. */
struct cg_run {
    char *name;                 /* forgeyard-<pid>-<random> */
    char *v2_dir;
    int v2_fd;                  /* O_PATH directory fd for CLONE_INTO_CGROUP */
    char *v1_dir[CG_NCTL];
    bool created;
    uint32_t fault_count;       /* tests: fault points passed so far */
    char *helper;               /* the helper that made the cgroups (a copy), or NULL */
    uint16_t helper_version;
};

struct cg_usage {
    bool have_cpu, have_memory, have_io;
    uint64_t cpu_user_usec, cpu_system_usec, memory_peak, io_read, io_write;
    uint64_t oom_kills, pids_max_events;
};

/* Creates the attempt's cgroups and writes the limits, in two parts: the
 * v2 cgroup (CG_PART_V2, first: it resets run) before the sandbox is cloned
 * straight into it, the v1 ones (CG_PART_V1) while the sandbox sets itself
 * up, since placing a process in them means migrating it (cg_open_tasks). On
 * failure removes what it created and fills reterr (step FY_STEP_CGROUP /
 * _CGROUP_LIMIT). */
#define CG_PART_V2 1u
#define CG_PART_V1 2u
/* With CG_PART_V2: the directory only, no limits (a pre-started shell is
 * cloned into it before any plan exists: linux-shell.c). */
#define CG_PART_V2_BARE 4u
/* The limits of the v2 cgroup made bare (the shell's, at its claim). */
#define CG_PART_V2_LIMITS 8u
/* With CG_PART_V1: the directories only, no limits (a pre-started shell's
 * init joins them before its claim, so that neither it nor the workload
 * process it forks after the claim is migrated on the claim's path). */
#define CG_PART_V1_BARE 16u
/* The limits of the v1 cgroups made bare (the shell's, at its claim,
 * before anything of the attempt runs). */
#define CG_PART_V1_LIMITS 32u
int cg_create(const struct cg_plan *plan, struct cg_run *run, unsigned parts, fy_error **reterr);
/* A fresh name (forgeyard-<pid>-<random>); cg_create uses run->name when the
 * caller set it, so that the directories can be recorded before they exist. */
char *cg_new_name(void);
/* The directories cg_create will make for name (allocated; the caller frees
 * them); how many. */
size_t cg_planned_dirs(const struct cg_plan *plan, const char *name, char **out, size_t max);
/* v1 only: the `tasks` file of every v1 cgroup, opened for writing (fds,
 * *ret_n of them; 0, or FY_E_INFRA and reterr). The sandbox's pid 1 moves
 * itself by writing "0" to each: a thread moving itself through `tasks`
 * is the one migration that does not take the global threadgroup lock,
 * whose first writer after a quiet spell waits a whole RCU grace period
 * (5-17 ms measured here, on every attempt of a runner that is not busy).
 * The write is checked against the credentials of whoever opened it. */
int cg_open_tasks(const struct cg_plan *plan, const struct cg_run *run, int *fds, size_t max, size_t *ret_n,
                  fy_error **reterr);
/* Places the sandbox's pid 1 (pid, pidfd) in the run's v2 cgroup when it
 * was not cloned into it: through the helper (MOVE with the pidfd) when
 * the helper made it, else by writing cgroup.procs. 0 or FY_E_INFRA. */
int cg_place(const struct cg_plan *plan, const struct cg_run *run, pid_t pid, int pidfd, fy_error **reterr);
/* Kills every process in the attempt's cgroups (cgroup.kill on v2;
 * freeze, SIGKILL each task, thaw on v1). Idempotent. */
void cg_kill(const struct cg_plan *plan, const struct cg_run *run);
/* Number of processes still in the attempt's cgroups. */
int cg_count_procs(const struct cg_plan *plan, const struct cg_run *run);
void cg_usage(const struct cg_plan *plan, const struct cg_run *run, struct cg_usage *u);
/* Removes every cgroup of the run that is empty (rmdir), without killing
 * anything: how many are left (populated, or not removable). cg_destroy
 * then deals with those. */
int cg_remove_empty(struct cg_run *run);
/* Removes the cgroups (killing what is left first); returns how many
 * directories could not be removed. Idempotent. */
int cg_destroy(const struct cg_plan *plan, struct cg_run *run);
/* The periodic sweep's half for cgroups no record names: each parent of
 * the plan's hierarchies through state_gc_unrecorded_cgroups (never the
 * privileged helper's, which it collects itself). */
void cg_gc_unrecorded(const struct cg_plan *plan, const char *state_dir);

#endif
