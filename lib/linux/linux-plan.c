/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Compiles a negotiated policy into the flat plan the sandbox child
 * interprets (linux-plan.h): mount operations, id maps, Landlock rules,
 * seccomp BPF, rlimits, argv/envp. All allocation happens here. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "linux-backend.h"
#include "linux-plan.h"
#include "linux-helper.h"
#include "linux-probe-util.h"
#include "linux-net.h"
#include "linux-seccomp.h"
#include "linux-syscall.h"

#define LL_FS_V1 ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_FS_IOCTL_DEV (1ULL << 15)
#define LL_RO (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* ---- allocation: every piece of the plan is tracked and freed together ---- */

static char *plan_str(struct linux_plan *pl, const char *s) { return arena_strdup(&pl->arena, s); }
#define plan_fmt(pl, ...) arena_printf(&(pl)->arena, __VA_ARGS__)

void linux_plan_free(struct linux_plan *pl) {
    if (!pl)
        return;
    arena_free(&pl->arena);
    free(pl->ops);
    free(pl->ll_rules);
    free(pl->envp);
    free(pl->isolation_json);
    free(pl->cgroup_json);
    free(pl->describe_json);
    json_decref(pl->devices_doc);
    free(pl);
}

/* ---- building the operation list ---- */

struct builder {
    struct linux_plan *pl;
    size_t cap_ops, cap_ll;
    bool oom;
};

static struct mount_op *add_op(struct builder *b, uint32_t kind, uint32_t flags, const char *dst) {
    struct linux_plan *pl = b->pl;
    if (pl->nops == b->cap_ops) {
        size_t cap = b->cap_ops ? b->cap_ops * 2 : 64;
        struct mount_op *n = realloc(pl->ops, cap * sizeof(*n));
        if (!n) {
            b->oom = true;
            return NULL;
        }
        pl->ops = n;
        b->cap_ops = cap;
    }
    struct mount_op *op = &pl->ops[pl->nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->flags = flags;
    op->dst = plan_str(pl, dst);
    op->step = FY_STEP_MOUNT;
    if (!op->dst)
        b->oom = true;
    return op;
}

static void add_tmpfs(struct builder *b, const char *dst, const char *data, uint32_t flags) {
    struct mount_op *op = add_op(b, MK_TMPFS, flags, dst);
    if (op && !(op->data = plan_str(b->pl, data)))
        b->oom = true;
}

static void add_bind(struct builder *b, const char *host, const char *dst, uint32_t flags) {
    struct mount_op *op = add_op(b, MK_BIND, flags, dst);
    if (op && !(op->src = plan_str(b->pl, host + 1))) /* relative to the old root */
        b->oom = true;
}

static void add_file(struct builder *b, const char *dst, const char *content, uint32_t mode) {
    struct mount_op *op = add_op(b, MK_FILE, 0, dst);
    if (!op)
        return;
    op->src = plan_str(b->pl, content);
    op->src_len = content ? strlen(content) : 0;
    op->mode = mode;
    if (!op->src)
        b->oom = true;
}

static void add_symlink(struct builder *b, const char *dst, const char *target) {
    struct mount_op *op = add_op(b, MK_SYMLINK, 0, dst);
    if (op && !(op->src = plan_str(b->pl, target)))
        b->oom = true;
}

static void add_rule(struct builder *b, const char *path, uint64_t access) {
    struct linux_plan *pl = b->pl;
    if (!pl->ll_handled)
        return;
    if (pl->nll == b->cap_ll) {
        size_t cap = b->cap_ll ? b->cap_ll * 2 : 32;
        struct ll_rule *n = realloc(pl->ll_rules, cap * sizeof(*n));
        if (!n) {
            b->oom = true;
            return;
        }
        pl->ll_rules = n;
        b->cap_ll = cap;
    }
    pl->ll_rules[pl->nll].path = plan_str(pl, path);
    pl->ll_rules[pl->nll].access = access & pl->ll_handled;
    pl->ll_rules[pl->nll].no_links = false;
    if (!pl->ll_rules[pl->nll].path)
        b->oom = true;
    pl->nll++;
}

static uint64_t ll_handled_for(uint32_t abi) {
    uint64_t h = LL_FS_V1;
    if (abi >= 2)
        h |= LL_FS_REFER;
    if (abi >= 3)
        h |= LL_FS_TRUNCATE;
    if (abi >= 5)
        h |= LL_FS_IOCTL_DEV;
    return h;
}

/* The plan's records (isolation, limits, devices) are built with these:
 * a field that could not be added (out of memory) is remembered, and
 * linux_plan_compile refuses the plan, which would otherwise compile with
 * a record missing it and another contract id. One compile per thread at
 * a time. */
static __thread bool plan_json_failed;
static void pset(json_t *o, const char *key, json_t *value) {
    if (json_object_set_new(o, key, value) != 0)
        plan_json_failed = true;
}
static void pappend(json_t *a, json_t *value) {
    if (json_array_append_new(a, value) != 0)
        plan_json_failed = true;
}

/* json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) of a record, or NULL: done
 * twice and compared, since jansson writes an object's key without looking
 * at whether the write failed (out of memory: a key lost mid-record, the
 * text no longer the plan's) and says nothing. */
static char *plan_dumps(const json_t *o) {
    char *a = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS), *b = a ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    bool same = b && strcmp(a, b) == 0;
    free(b);
    if (!same) {
        free(a);
        return NULL;
    }
    return a;
}

/* A record made by json_dumps(JSON_COMPACT | JSON_SORT_KEYS), parsed back:
 * jansson's lexer drops a byte it cannot save for want of memory without
 * saying so ("only thestandard nodes"), so what it read must dump to the
 * text again, else it is a failure, remembered. */
static json_t *load_exact(const char *text) {
    json_t *v = json_loads(text, 0, NULL);
    char *back = v ? plan_dumps(v) : NULL;
    bool same = back && strcmp(back, text) == 0;
    free(back);
    if (!same) {
        json_decref(v);
        plan_json_failed = true;
        return NULL;
    }
    return v;
}

static int compile_ids(struct linux_plan *pl, const struct fy_plan *np, const fy_caps *c) {
    pl->as_root = c->host.is_root;
    pl->work_uid = np->uid;
    pl->work_gid = np->gid;
    if (pl->as_root) {
        /* Never host root: the sandbox's pid 1 and the workload get ids from
         * the unprivileged range, distinct ones when the range allows. */
        pl->drop_groups = true;
        bool whole_range = np->nimage_layers && np->id_count > pl->work_uid && np->id_count > pl->work_gid;
        if (whole_range) {
            /* A container: the whole range from 0, as the image's owners
             * were shifted into it (lib/oci), so that the image's root is
             * the sandbox's root and its files keep their owners. */
            pl->setup_uid = pl->setup_gid = 0;
            snprintf(pl->uid_map, sizeof(pl->uid_map), "0 %u %u\n", np->id_first, np->id_count);
        } else if (!np->fake_root && np->id_count >= 2) {
            pl->setup_uid = pl->setup_gid = 0;
            snprintf(pl->uid_map, sizeof(pl->uid_map), "0 %u 1\n%u %u 1\n", np->id_first, pl->work_uid,
                     np->id_first + 1);
        } else {
            pl->setup_uid = pl->setup_gid = pl->work_uid;
            snprintf(pl->uid_map, sizeof(pl->uid_map), "%u %u 1\n", pl->work_uid, np->id_first);
        }
        memcpy(pl->gid_map, pl->uid_map, sizeof(pl->gid_map));
        /* The user namespace made by the range's first id (lx_owner_enter):
         * every sandbox of a root caller draws its per-user kernel counts
         * from that id's budgets, never from root's. Only a caller that is
         * root in all three ids can take it for the clone and come back. */
        const char *owner = caps_fact(c, LX_FACT_USERNS_OWNER);
        if (owner && !strcmp(owner, "ok") && pu_root_in_all_ids())
            pl->userns_owner = np->id_first;
        else
            pl->userns_owner_refused = owner && strcmp(owner, "ok") != 0;
        pl->host_uid = pl->host_gid = np->fake_root || np->id_count < 2 ? np->id_first : np->id_first + 1;
        if (whole_range) {
            /* The container's whole range: inside id u is the host's id_first + u. */
            pl->host_uid = np->id_first + pl->work_uid;
            pl->host_gid = np->id_first + pl->work_gid;
        }
    } else {
        /* Rootless: only the caller's own ids can be mapped. */
        pl->setup_uid = pl->setup_gid = pl->work_uid;
        snprintf(pl->uid_map, sizeof(pl->uid_map), "%u %u 1\n", pl->work_uid, c->host.uid);
        snprintf(pl->gid_map, sizeof(pl->gid_map), "%u %u 1\n", pl->work_gid, c->host.gid);
        pl->host_uid = c->host.uid;
        pl->host_gid = c->host.gid;
    }
    return 0;
}

/* The plan's environment, then the limits this backend enforces, visible
 * to build tools that size their parallelism. */
static int compile_env(struct linux_plan *pl, const struct fy_plan *np) {
    pl->envp = calloc(np->nenv + 3, sizeof(char *));
    if (!pl->envp)
        return FY_E_NOMEM;
    for (size_t i = 0; i < np->nenv; i++)
        pl->envp[pl->nenv++] = (char *)np->envp[i];
    pl->path_search = np->path_search;
    if (np->env_exact)
        return 0; /* an action's environment: exactly what it declared */
    if (pl->cpus && !(pl->envp[pl->nenv++] = plan_fmt(pl, "FORGEYARD_CPUS=%u", pl->cpus)))
        return FY_E_NOMEM;
    if (pl->cg.version_memory &&
        !(pl->envp[pl->nenv++] = plan_fmt(pl, "FORGEYARD_MEMORY_LIMIT=%llu", (unsigned long long)pl->cg.memory)))
        return FY_E_NOMEM;
    return 0;
}

static void add_rlimit(struct linux_plan *pl, int res, uint64_t v) {
    if (pl->nrlimits >= CHILD_MAX_RLIMITS)
        return;
    rlim_t r = v == FY_UNLIMITED ? RLIM_INFINITY : (rlim_t)v;
    pl->rlimits[pl->nrlimits++] = (struct child_rlimit){res, {r, r}};
}

/* The policy's limits every plan sets as resource limits of the workload. */
static const struct { int res; uint32_t limit; const char *name; } policy_rlimits[] = {
    {RLIMIT_NOFILE, FY_LIMIT_NOFILE, "nofile"}, {RLIMIT_CORE, FY_LIMIT_CORE, "core"},
    {RLIMIT_FSIZE, FY_LIMIT_FSIZE, "fsize"}, {RLIMIT_STACK, FY_LIMIT_STACK, "stack"}};

/* RLIMIT_CORE. A limit of 0 does not stop a core dump where the host's
 * core_pattern is a pipe ("|/usr/lib/systemd/systemd-coredump ...",
 * apport): the kernel then runs that program as root, outside the sandbox,
 * with the process's memory (its secrets included), which outlives the
 * attempt. 1 byte is the kernel's "no dump anywhere": the pipe path's
 * recursion guard, and below an ELF core's minimum for a file. The seccomp
 * profile (version 3) keeps the workload from changing it. A policy's larger
 * limit stands only where cores are files, which the kernel writes in the
 * crashing process's own mount namespace (inside the sandbox); where they go
 * to a program or a socket (Linux 6.16's "@"), it is lowered to 1. The
 * host's pattern is read once per plan into pattern (report_core). */
#define LX_CORE_NEVER 1u
static uint64_t core_rlimit(uint64_t want, char *pattern, size_t n) {
    if (pu_read_small("/proc/sys/kernel/core_pattern", pattern, n) < 0 || !pattern[0]) {
        snprintf(pattern, n, "(unreadable)");
        return LX_CORE_NEVER;
    }
    pattern[strcspn(pattern, "\n")] = '\0';
    return want == 0 || pattern[0] == '|' || pattern[0] == '@' ? LX_CORE_NEVER : want;
}

static bool core_pattern_leaves(const char *pattern) {
    return pattern[0] == '|' || pattern[0] == '@' || strcmp(pattern, "(unreadable)") == 0;
}

/* The result's limits.core_dumps for the plan's core limit (core_rlimit),
 * and the reason in *low (limits.rlimits_lowered, made on demand) when the
 * host's pattern lowered a larger one the policy asked for. */
static void report_core(json_t *o, json_t **low, const struct linux_plan *pl, uint64_t asked, uint64_t core,
                        const char *pattern) {
    struct rlimit hc;
    bool host_zero = getrlimit(RLIMIT_CORE, &hc) == 0 && hc.rlim_max == 0;
    if (pattern[0] == '@')
        pset(o, "core_dumps",
             json_sprintf("RLIMIT_CORE %llu byte%s, but the host's core_pattern is a socket (%s), "
                          "which the kernel does not hold to it: a crash's memory may reach "
                          "the program listening there",
                          (unsigned long long)(host_zero ? 0 : core), !host_zero && core == 1 ? "" : "s",
                          pattern));
    else if (host_zero && core_pattern_leaves(pattern))
        pset(o, "core_dumps",
             json_sprintf("to the host's core_pattern program (%s): the host process's hard "
                          "RLIMIT_CORE is 0, and only 1 byte keeps cores from it (raise the host's "
                          "hard limit to at least 1)", pattern));
    else if (host_zero)
        pset(o, "core_dumps", json_string("none: RLIMIT_CORE 0 (the host process's hard limit)"));
    else if (core == LX_CORE_NEVER)
        pset(o, "core_dumps",
             json_string(pl->bpf ? "none: RLIMIT_CORE 1 byte, which the seccomp profile keeps (no core "
                                   "file, no host core_pattern program)"
                                 : "none: RLIMIT_CORE 1 byte, which the workload may change (no "
                                   "seccomp filter)"));
    else if (core == FY_UNLIMITED)
        pset(o, "core_dumps", json_sprintf("files inside the sandbox, any size (core_pattern %s)", pattern));
    else
        pset(o, "core_dumps", json_sprintf("files inside the sandbox, up to %llu bytes (core_pattern %s)",
                                           (unsigned long long)core, pattern));
    if (core == LX_CORE_NEVER && asked > LX_CORE_NEVER && (*low || (*low = json_object()) || !(plan_json_failed = true)))
        pset(*low, "core",
             json_pack("{s:o,s:I,s:s+}", "asked",
                       asked == FY_UNLIMITED ? json_string("unlimited") : json_integer((json_int_t)asked),
                       "enforced", (json_int_t)core, "why",
                       "the host's core_pattern hands cores to a program outside the sandbox: ",
                       pattern));
}

/* The host's per-user limits of the counts a user namespace charges to its
 * owner (linux-plan.h LX_UC_*), from the initial namespace's sysctls, which
 * read the same from any namespace. */
static const struct {
    const char *host, *name;
} ucount_sysctls[LX_NUCOUNTS] = {
    [LX_UC_INOTIFY_INSTANCES] = {"/proc/sys/fs/inotify/max_user_instances", "inotify_instances"},
    [LX_UC_INOTIFY_WATCHES] = {"/proc/sys/fs/inotify/max_user_watches", "inotify_watches"},
    [LX_UC_FANOTIFY_GROUPS] = {"/proc/sys/fs/fanotify/max_user_groups", "fanotify_groups"},
    [LX_UC_FANOTIFY_MARKS] = {"/proc/sys/fs/fanotify/max_user_marks", "fanotify_marks"},
};

static uint64_t read_sysctl_u64(const char *path) {
    char b[32];
    if (pu_read_small(path, b, sizeof(b)) < 0)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(b, &end, 10);
    return errno || end == b ? 0 : (uint64_t)v;
}

/* The max= of a private devpts instance (linux-plan.h LX_PTY_CAP): without
 * one, a single attempt could hold every terminal of the pool and leave
 * every other sandbox, container and new devpts instance of the host with
 * ENOSPC from /dev/ptmx. */
static uint32_t pty_cap(void) {
    uint64_t max = read_sysctl_u64("/proc/sys/kernel/pty/max"), reserve = read_sysctl_u64("/proc/sys/kernel/pty/reserve");
    if (max == 0)
        return LX_PTY_CAP; /* unreadable: the fixed cap */
    uint64_t share = (max > reserve ? max - reserve : 0) / LX_UCOUNT_SHARE;
    return share == 0 ? 1 : share < LX_PTY_CAP ? (uint32_t)share : LX_PTY_CAP;
}

/* A sandbox of its own user namespace takes at most 1/LX_UCOUNT_SHARE of
 * each per-user budget it draws from: the ucounts above (written by
 * forgeyard-init into its namespace), and the two rlimit-counted ones the
 * kernel also charges up the chain of namespaces, queued signals and POSIX
 * message queue bytes (the workload's rlimits; the count is its user's in
 * the sandbox, checked against the limit of the user who made the
 * namespace above). */
static void compile_shares(struct linux_plan *pl) {
    if (!(pl->clone_flags & CLONE_NEWUSER))
        return;
    for (size_t i = 0; i < LX_NUCOUNTS; i++) {
        uint64_t host = read_sysctl_u64(ucount_sysctls[i].host);
        if (host == 0 || host > INT32_MAX)
            continue; /* no such count on this kernel, or no limit to protect */
        pl->ucount_max[i] = (uint32_t)(host / LX_UCOUNT_SHARE ? host / LX_UCOUNT_SHARE : 1);
    }
    static const int res[] = {RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE};
    for (size_t i = 0; i < FY_ARRAY_SIZE(res); i++) {
        struct rlimit cur;
        if (getrlimit(res[i], &cur) < 0 || cur.rlim_cur == RLIM_INFINITY)
            continue;
        rlim_t v = cur.rlim_cur / LX_UCOUNT_SHARE ? cur.rlim_cur / LX_UCOUNT_SHARE : 1;
        add_rlimit(pl, res[i], (uint64_t)v);
    }
}

static bool has_rlimit(const struct linux_plan *pl, int res) {
    for (size_t i = 0; i < pl->nrlimits; i++)
        if (pl->rlimits[i].resource == res)
            return true;
    return false;
}

/* limits.rlimits_inherited: the caller's finite resource limits the plan
 * does not set, each {"soft", "hard"} (a number or "unlimited"). */
static json_t *report_inherited(const struct linux_plan *pl) {
    static const struct { int res; const char *name; } all[] = {
        {RLIMIT_CPU, "cpu"},       {RLIMIT_FSIZE, "fsize"},     {RLIMIT_DATA, "data"},
        {RLIMIT_STACK, "stack"},   {RLIMIT_CORE, "core"},       {RLIMIT_RSS, "rss"},
        {RLIMIT_NPROC, "nproc"},   {RLIMIT_NOFILE, "nofile"},   {RLIMIT_MEMLOCK, "memlock"},
        {RLIMIT_AS, "as"},         {RLIMIT_LOCKS, "locks"},     {RLIMIT_SIGPENDING, "sigpending"},
        {RLIMIT_MSGQUEUE, "msgqueue"}, {RLIMIT_NICE, "nice"},   {RLIMIT_RTPRIO, "rtprio"},
        {RLIMIT_RTTIME, "rttime"},
    };
    json_t *o = json_object();
    for (size_t i = 0; o && i < FY_ARRAY_SIZE(all); i++) {
        struct rlimit cur;
        if (has_rlimit(pl, all[i].res) || getrlimit(all[i].res, &cur) < 0 ||
            (cur.rlim_cur == RLIM_INFINITY && cur.rlim_max == RLIM_INFINITY))
            continue;
        pset(o, all[i].name,
             json_pack("{s:o,s:o}", "soft",
                       cur.rlim_cur == RLIM_INFINITY ? json_string("unlimited")
                                                     : json_integer((json_int_t)cur.rlim_cur),
                       "hard",
                       cur.rlim_max == RLIM_INFINITY ? json_string("unlimited")
                                                     : json_integer((json_int_t)cur.rlim_max)));
    }
    return o;
}

/* limits.kernel_counts: what compile_shares gave the sandbox. */
static json_t *report_shares(const struct linux_plan *pl) {
    json_t *k = json_object();
    if (!k)
        return NULL;
    for (size_t i = 0; i < LX_NUCOUNTS; i++)
        pset(k, ucount_sysctls[i].name,
             pl->ucount_max[i] ? json_integer((json_int_t)pl->ucount_max[i]) : json_null());
    const struct { int res; const char *name; } rl[] = {{RLIMIT_SIGPENDING, "signals_queued"},
                                                        {RLIMIT_MSGQUEUE, "message_queue_bytes"}};
    for (size_t i = 0; i < FY_ARRAY_SIZE(rl); i++) {
        json_t *v = json_null();
        for (size_t j = 0; j < pl->nrlimits; j++)
            if (pl->rlimits[j].resource == rl[i].res)
                v = json_integer((json_int_t)pl->rlimits[j].lim.rlim_cur);
        pset(k, rl[i].name, v);
    }
    pset(k, "ptys", pl->pty_max ? json_integer((json_int_t)pl->pty_max) : json_null());
    pset(k, "share",
         pl->clone_flags & CLONE_NEWUSER
             ? json_sprintf("1/%d of the host's per-user limit: the sandbox's user namespace draws "
                            "these from the budget of the user who made it",
                            LX_UCOUNT_SHARE)
             : json_string("none: no user namespace of the sandbox's own (the host user's limits)"));
    /* Whose budget that is: the caller's, or (as root) the id range's
     * first id, which makes the namespace (lx_owner_enter). */
    pset(k, "charged_to",
         !(pl->clone_flags & CLONE_NEWUSER) ? json_null()
         : pl->userns_owner
             ? json_sprintf("host uid %u (the id range's first, which makes the sandbox's user "
                            "namespace): never root's budget",
                            (unsigned)pl->userns_owner)
         : pl->userns_owner_refused
             ? json_string("the caller's own uid: this host refused the clone as the id range's "
                           "first id (the probe's linux.userns_owner says why)")
             : json_string("the caller's own uid"));
    return k;
}

/* Resources: which cgroup hierarchy enforces which negotiated limit. */
static int compile_cgroups(struct linux_plan *pl, const struct fy_plan *np, const fy_caps *c, uint64_t core,
                           const char *core_pattern, fy_error **reterr) {
    pl->cg.fault_step = np->fault_step;
    pl->cg.fault_nth = np->fault_nth;
    const struct caps_host *h = &c->host;
    struct cg_plan *cg = &pl->cg;
    cg->memory = np->limit[FY_LIMIT_MEMORY];
    cg->swap = np->limit[FY_LIMIT_MEMORY_SWAP] == FY_UNLIMITED ? 0 : np->limit[FY_LIMIT_MEMORY_SWAP];
    cg->pids = np->limit[FY_LIMIT_PIDS];
    cg->cpu_millis = np->limit[FY_LIMIT_CPU_MILLIS];
    cg->io_bps = np->limit[FY_LIMIT_IO_BPS];
    static const struct { uint32_t control, cap, limit; int ctl; } map[] = {
        {FY_CONTROL_MEMORY_LIMIT, FY_CAP_CGROUP_MEMORY, FY_LIMIT_MEMORY, CG_MEMORY},
        {FY_CONTROL_PIDS_LIMIT, FY_CAP_CGROUP_PIDS, FY_LIMIT_PIDS, CG_PIDS},
        {FY_CONTROL_CPU_LIMIT, FY_CAP_CGROUP_CPU, FY_LIMIT_CPU_MILLIS, CG_CPU},
        {FY_CONTROL_IO_LIMIT, FY_CAP_CGROUP_IO, FY_LIMIT_IO_BPS, CG_BLKIO},
    };
    uint32_t *versions[] = {&cg->version_memory, &cg->version_pids, &cg->version_cpu, &cg->version_io};
    const char *v1dirs[] = {caps_fact(c, LX_FACT_CG1_MEMORY), caps_fact(c, LX_FACT_CG1_PIDS),
                            caps_fact(c, LX_FACT_CG1_CPU), caps_fact(c, LX_FACT_CG1_BLKIO)};
    const char *cg2_dir = caps_fact(c, LX_FACT_CG2_DIR), *cg1_cpuacct = caps_fact(c, LX_FACT_CG1_CPUACCT),
               *cg1_freezer = caps_fact(c, LX_FACT_CG1_FREEZER);
    /* io limits apply to the block device behind the workspace, when there is one. */
    const char *ws = np->build ? np->build : np->output ? np->output : np->source;
    struct stat wst;
    bool io_dev = false;
    if (ws && stat(ws, &wst) == 0 && major(wst.st_dev) != 0) {
        char sys[64];
        snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(wst.st_dev), minor(wst.st_dev));
        io_dev = access(sys, F_OK) == 0;
        cg->io_major = major(wst.st_dev);
        cg->io_minor = minor(wst.st_dev);
    }
    bool any_v1 = false;
    for (size_t i = 0; i < FY_ARRAY_SIZE(map); i++) {
        if (np->control[map[i].control] != FY_CONTROL_STATE_ENFORCED || np->limit[map[i].limit] == FY_UNLIMITED)
            continue;
        if (map[i].ctl == CG_BLKIO && !io_dev) {
            /* Nothing to throttle: core drops a preferred limit with this
             * reason and refuses a required one (linux_plan_unapplied). */
            pl->io_unapplied = "no block device is behind the workspace (build, output and source are tmpfs, or on "
                               "a file system without one): nothing to throttle";
            continue;
        }
        int64_t v = 0;
        fy_caps_value(c, map[i].cap, &v);
        *versions[i] = (uint32_t)v;
        if (v == 2) {
            cg->v2_limits = true;
        } else if (v == 1 && v1dirs[i]) {
            cg->v1_parent[map[i].ctl] = v1dirs[i];
            any_v1 = true;
        }
    }
    /* A v2 cgroup, even without controllers (hybrid hosts), groups the whole
     * tree for CLONE_INTO_CGROUP and cgroup.kill. */
    if (cg2_dir && !np->test_legacy_cgroups &&
        (caps_present(c, FY_CAP_CGROUP_V2) || caps_present(c, FY_CAP_CGROUP_KILL))) {
        cg->v2_parent = cg2_dir;
        cg->v2_group = caps_present(c, FY_CAP_CGROUP_KILL);
    }
    /* cgroup v2 through the privileged helper: it makes the attempt's one
     * cgroup below its directory for our uid, limits it, attaches the
     * device program and moves the sandbox in (no CLONE_INTO_CGROUP, no
     * cgroup.kill of ours: docs/helper.md says why). */
    const char *helper_cg2 = caps_fact(c, LX_FACT_HELPER_CG2);
    if (helper_cg2 && !np->test_legacy_cgroups) {
        cg->v2_parent = helper_cg2;
        cg->v2_group = false;
        cg->v2_helper = true;
    }
    if (cg->v2_limits && !cg->v2_parent)
        cg->v2_limits = false;
    /* The device allowlist: a v1 devices cgroup, or a program on a v2 one. */
    if (cg->dev_mech == LX_DEV_V1) {
        cg->v1_parent[CG_DEVICES] = caps_fact(c, LX_FACT_DEV_V1);
        any_v1 = true;
    } else if (cg->dev_mech == LX_DEV_BPF) {
        cg->v2_parent = helper_cg2 ? helper_cg2 : cg2_dir;
        cg->v2_devices = true;
    }
    /* The privileged helper makes the cgroups of an unprivileged host
     * (forgeyard-sandbox-helper(8)): the probe offered them through it. */
    const char *helper = caps_fact(c, LX_FACT_HELPER_SOCKET);
    if ((any_v1 || cg->v2_helper) && helper) {
        cg->helper = helper;
        const char *hv = caps_fact(c, LX_FACT_HELPER_VERSION);
        cg->helper_version = (uint16_t)(hv ? strtoul(hv, NULL, 10) : 0);
        /* Over the uid's budget: the helper would refuse at start; say so now. */
        const char *bm = caps_fact(c, LX_FACT_HELPER_MAX_MEMORY), *bp = caps_fact(c, LX_FACT_HELPER_MAX_PIDS);
        uint64_t max_mem = bm ? strtoull(bm, NULL, 10) : FY_UNLIMITED, max_pids = bp ? strtoull(bp, NULL, 10) : FY_UNLIMITED;
        if (cg->version_memory && cg->memory > max_mem)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_CGROUP_LIMIT, 0, "$.resources.memory",
                           "memory %llu bytes is over this uid's budget at the privileged helper (%llu bytes per attempt)",
                           (unsigned long long)cg->memory, (unsigned long long)max_mem);
        if (cg->version_pids && cg->pids > max_pids)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_CGROUP_LIMIT, 0, "$.resources.pids",
                           "pids %llu is over this uid's budget at the privileged helper (%llu per attempt)",
                           (unsigned long long)cg->pids, (unsigned long long)max_pids);
    } else if (any_v1) {
        /* CPU usage: a v2 cgroup has cpu.stat without any controller. */
        if (cg1_cpuacct && !cg->v2_parent)
            cg->v1_parent[CG_CPUACCT] = cg1_cpuacct;
        if (cg1_freezer && !cg->v2_group)
            cg->v1_parent[CG_FREEZER] = cg1_freezer;
        cg->v1_memsw = caps_fact(c, LX_FACT_CG1_MEMSW) != NULL;
    }
    cg->enabled = any_v1 || cg->v2_limits || cg->v2_group || cg->v2_devices;
    /* No pids cgroup: RLIMIT_NPROC still bounds a fork bomb, because the
     * kernel counts it per user namespace (ucounts, 5.14+) and every
     * sandbox has its own. Weaker: no RESOURCE_EXCEEDED, fork just fails
     * with EAGAIN. Only where the workload has its own user namespace: at
     * the process level the count would be the host user's. */
    unsigned kmaj = 0, kmin = 0;
    if (h->kernel_release && sscanf(h->kernel_release, "%u.%u", &kmaj, &kmin) != 2)
        kmaj = kmin = 0;
    bool nproc = !cg->version_pids && cg->pids != FY_UNLIMITED && (np->backend == &linux_namespace_backend || np->backend == &linux_container_backend) &&
                 (kmaj > 5 || (kmaj == 5 && kmin >= 14));
    if (nproc)
        add_rlimit(pl, RLIMIT_NPROC, cg->pids);
    if (cg->version_cpu && cg->cpu_millis != FY_UNLIMITED)
        pl->cpus = (uint32_t)((cg->cpu_millis + 999) / 1000);
    json_t *o = json_object();
    if (!o)
        return FY_E_NOMEM;
    const char *names[] = {"memory", "pids", "cpu", "io"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(map); i++)
        pset(o, names[i], *versions[i] ? json_sprintf("cgroup v%u%s", *versions[i],
                                                      cg->helper ? " (privileged helper)" : "")
                          : nproc && map[i].ctl == CG_PIDS
                              ? json_string("rlimit nproc in the sandbox's user namespace (fork fails; "
                                            "no resource-exceeded outcome)")
                          : json_string(np->control[map[i].control] == FY_CONTROL_STATE_DROPPED ||
                                                (map[i].ctl == CG_BLKIO && pl->io_unapplied)
                                            ? "not enforced (dropped)" : "not enforced"));
    /* (without clone3's CLONE_INTO_CGROUP the sandbox is written into
     * cgroup.procs before it runs: the result said clone-into-cgroup) */
    pset(o, "tree", json_string(cg->v2_group && caps_present(c, FY_CAP_CLONE_INTO_CGROUP)
                                    ? "cgroup v2 (clone-into-cgroup, cgroup.kill)"
                                  : cg->v2_group ? "cgroup v2 (moved in through cgroup.procs before it runs, cgroup.kill)"
                                  : cg->v2_helper ? "cgroup v2 (the sandbox moved in by the privileged helper)"
                                  : any_v1                          ? "cgroup v1"
                                  : (pl->clone_flags & CLONE_NEWPID) ? "pid namespace only"
                                                                     : "subreaper only (no pid namespace)"));
    if (cg->helper)
        pset(o, "helper", json_sprintf("%s cgroups created and limited by the privileged helper at %s",
                                       cg->v2_helper ? "v2" : "v1", cg->helper));
    pset(o, "rlimits", json_sprintf("nofile, core, fsize, stack%s%s%s", nproc ? ", nproc" : "",
                                    has_rlimit(pl, RLIMIT_SIGPENDING) ? ", sigpending" : "",
                                    has_rlimit(pl, RLIMIT_MSGQUEUE) ? ", msgqueue" : ""));
    pset(o, "kernel_counts", report_shares(pl));
    /* The policy's tmp_size, home_size and work_tmp_size are the sizes of
     * the sandbox's tmpfs mounts; the process level mounts nothing. */
    pset(o, "scratch",
         json_string(pl->process_mode
                         ? "not enforced: the process level's home and TMPDIR are directories of the "
                           "attempt in /dev/shm (else /tmp), without the policy's tmp_size, home_size "
                           "or work_tmp_size"
                         : pl->overlay_disk
                         ? "tmpfs sizes (tmp_size, home_size, work_tmp_size); the container's "
                           "writable root is a directory on disk (tmpfs lacks user xattrs), bounded "
                           "by tmp_size through the disk watchdog (a walk every half second)"
                         : "tmpfs sizes (tmp_size, home_size, work_tmp_size)"));
    /* A resource limit above the preparing process's hard limit is lowered
     * to it in the sandbox (a user namespace cannot raise one): stricter,
     * never weaker, but a build that needs the value asked for fails with
     * EMFILE or EFBIG, so the result says which and by how much. */
    json_t *low = NULL;
    report_core(o, &low, pl, np->limit[FY_LIMIT_CORE], core, core_pattern);
    for (size_t i = 0; i < FY_ARRAY_SIZE(policy_rlimits); i++) {
        struct rlimit cur;
        uint64_t want = policy_rlimits[i].res == RLIMIT_CORE ? core : np->limit[policy_rlimits[i].limit];
        if (getrlimit(policy_rlimits[i].res, &cur) < 0 || cur.rlim_max == RLIM_INFINITY ||
            (want != FY_UNLIMITED && want <= (uint64_t)cur.rlim_max))
            continue;
        if (!low && !(low = json_object())) {
            plan_json_failed = true;
            break;
        }
        pset(low, policy_rlimits[i].name,
             json_pack("{s:o,s:I,s:s}", "asked",
                       want == FY_UNLIMITED ? json_string("unlimited") : json_integer((json_int_t)want),
                       "enforced", (json_int_t)cur.rlim_max, "why",
                       pl->process_mode ? "the host process's hard limit (the sandbox starts under it)"
                                        : "the host process's hard limit (a user namespace cannot raise "
                                          "it)"));
    }
    /* The pids limit as RLIMIT_NPROC, the same way. */
    struct rlimit hn;
    if (nproc && getrlimit(RLIMIT_NPROC, &hn) == 0 && hn.rlim_max != RLIM_INFINITY &&
        cg->pids > (uint64_t)hn.rlim_max && (low || (low = json_object()) || !(plan_json_failed = true)))
        pset(low, "nproc",
             json_pack("{s:I,s:I,s:s}", "asked", (json_int_t)cg->pids, "enforced",
                       (json_int_t)hn.rlim_max, "why",
                       "the host process's hard limit (a user namespace cannot raise it)"));
    if (low)
        pset(o, "rlimits_lowered", low);
    /* Every other resource limit is the caller's own, inherited as it is:
     * a finite one (a service's LimitCPU=, a prlimit of the host) changes
     * what the workload can do (SIGXCPU, ENOMEM, EAGAIN), so the record
     * names it, and the contract id changes with it. */
    json_t *inh = report_inherited(pl);
    if (!inh)
        plan_json_failed = true;
    else if (json_object_size(inh))
        pset(o, "rlimits_inherited", inh);
    else
        json_decref(inh);
    pl->cgroup_json = plan_dumps(o);
    json_decref(o);
    return pl->cgroup_json ? 0 : FY_E_NOMEM;
}

/* The device allowlist (FY_CONTROL_DEVICES): the standard nodes, private
 * terminals and every lease, each checked here to be a device node itself
 * (opened O_PATH, no symlink anywhere on the way, fstat'ed by fd: the
 * numbers the kernel's list allows are those of the node the plan names).
 * The child checks the node again when it binds it, and the kernel refuses
 * any other number whatever the sandbox finds or makes in its /dev. */
static int compile_devices(struct linux_plan *pl, const struct fy_plan *np, const fy_caps *c, fy_error **reterr) {
    struct cg_plan *cg = &pl->cg;
    json_t *o = json_object(), *leased = json_array();
    if (!o || !leased) {
        json_decref(o);
        json_decref(leased);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    }
    pset(o, "leased", leased);
    int r = 0;
    if (np->control[FY_CONTROL_DEVICES] != FY_CONTROL_STATE_ENFORCED) {
        pset(o, "allowlist", json_string(np->control[FY_CONTROL_DEVICES] == FY_CONTROL_STATE_DROPPED
                                             ? "none (dropped): only the standard nodes are bound"
                                             : "none: only the standard nodes are bound"));
        goto out;
    }
    const char *cg2_dir = caps_fact(c, LX_FACT_CG2_DIR);
    size_t nleases = 0;
    for (size_t i = 0; i < np->nentries; i++)
        nleases += np->entries[i].kind == PE_HOST && np->entries[i].role == PR_DEVICE;
    if (caps_fact(c, LX_FACT_DEV_V1)) {
        cg->dev_mech = LX_DEV_V1;
    } else if (caps_fact(c, LX_FACT_DEV_BPF) && (cg2_dir || caps_fact(c, LX_FACT_HELPER_CG2)) &&
               !np->test_legacy_cgroups) {
        cg->dev_mech = LX_DEV_BPF;
    } else {
        const char *rep = caps_fact(c, LX_FACT_DEV_REPORT);
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_DEVICE, 0, nleases ? "$.devices.allowed" : NULL,
                    "the device allowlist cannot be enforced here (%s)%s",
                    rep ? rep : "the probe found no device cgroup",
                    nleases ? ": a leased device is never bound without it" : "");
        goto out;
    }
    pset(o, "allowlist", json_string(cg->dev_mech == LX_DEV_V1
                                         ? "cgroup v1 devices controller (devices.deny a, devices.allow)"
                                         : "cgroup v2 device program (BPF_PROG_TYPE_CGROUP_DEVICE, libbpf)"));
    if (cg->dev_mech == LX_DEV_V1 && !c->host.is_root && caps_fact(c, LX_FACT_HELPER_SOCKET))
        pset(o, "helper", json_sprintf("the devices cgroup made and its list written by the privileged "
                                       "helper at %s", caps_fact(c, LX_FACT_HELPER_SOCKET)));
    else if (cg->dev_mech == LX_DEV_BPF && !c->host.is_root && caps_fact(c, LX_FACT_HELPER_CG2))
        pset(o, "helper", json_sprintf("the device program loaded and attached by the privileged "
                                       "helper at %s", caps_fact(c, LX_FACT_HELPER_SOCKET)));
    struct lx_dev_rule *rules = arena_keep(&pl->arena, calloc(LX_DEV_MAX_RULES, sizeof(*rules)));
    if (!rules) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
        goto out;
    }
    size_t n = lx_dev_standard_rules(rules, LX_DEV_MAX_RULES, np->pty == FY_DEVICES_PRIVATE);
    json_t *std = json_array();
    for (size_t i = 0; std && i < n; i++) {
        char line[64];
        lx_dev_rule_format(&rules[i], line, sizeof(line));
        pappend(std, json_string(line));
    }
    pset(o, "standard", std);
    size_t k = 0;
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        if (e->kind != PE_HOST || e->role != PR_DEVICE)
            continue;
        char loc[64];
        snprintf(loc, sizeof(loc), "$.devices.allowed[%zu].path", k++);
        struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                               .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        int fd = sys_openat2(AT_FDCWD, e->host, &how, sizeof(how));
        if (fd < 0 && (errno == ENOSYS || errno == E2BIG))
            fd = open(e->host, O_PATH | O_NOFOLLOW | O_CLOEXEC); /* before 5.6: the last component only */
        struct stat st;
        int err = fd < 0 ? errno : fstat(fd, &st) < 0 ? errno : 0;
        if (fd >= 0)
            close(fd);
        if (err == ENOENT) {
            r = err_set(reterr, FY_E_NOTFOUND, FY_STEP_DEVICE, err, loc, "leased device %s does not exist on this host",
                        e->host);
            goto out;
        }
        if (err == ELOOP || (!err && S_ISLNK(st.st_mode))) {
            r = err_set(reterr, FY_E_UNSAFE, FY_STEP_DEVICE, ELOOP, loc,
                        "leased device %s is, or is reached through, a symbolic link: a lease names the node itself",
                        e->host);
            goto out;
        }
        if (err) {
            r = err_set(reterr, err_from_errno(err), FY_STEP_DEVICE, err, loc, "leased device %s: %s", e->host,
                        strerror(err));
            goto out;
        }
        if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
            r = err_set(reterr, FY_E_UNSAFE, FY_STEP_DEVICE, 0, loc,
                        "leased device %s is not a device node (%s)", e->host,
                        S_ISDIR(st.st_mode) ? "a directory" : S_ISREG(st.st_mode) ? "a regular file" : "not a node");
            goto out;
        }
        if (n >= LX_DEV_MAX_RULES) {
            r = err_set(reterr, FY_E_RANGE, FY_STEP_DEVICE, 0, loc, "too many device rules");
            goto out;
        }
        struct lx_dev_rule *rule = &rules[n++];
        *rule = (struct lx_dev_rule){S_ISBLK(st.st_mode) ? 'b' : 'c',
                                     (uint8_t)(LX_DEV_READ | ((e->flags & PLAN_RO) ? 0 : LX_DEV_WRITE)),
                                     major(st.st_rdev), minor(st.st_rdev)};
        char node[32];
        snprintf(node, sizeof(node), "%c %u:%u", rule->type, rule->major, rule->minor);
        pappend(leased, json_pack("{ssssss}", "path", e->host, "node", node, "access",
                                  (e->flags & PLAN_RO) ? "r" : "rw"));
    }
    cg->dev_rules = rules;
    cg->ndev_rules = n;
out:
    if (r == 0)
        pl->devices_doc = json_incref(o); /* (for the isolation record, as it is: never dumped and parsed back) */
    json_decref(o);
    return r;
}

static int compile_isolation_json(struct linux_plan *pl, const struct fy_plan *np) {
    json_t *o = json_object(), *ns = json_array(), *skipped = json_array();
    if (!o || !ns || !skipped) {
        json_decref(o);
        json_decref(ns);
        json_decref(skipped);
        return FY_E_NOMEM;
    }
    for (size_t i = 0; i < np->nruntime_skipped; i++)
        pappend(skipped, json_string(np->runtime_skipped[i]));
    static const struct { uint64_t flag; const char *name; } nss[] = {
        {CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mount"}, {CLONE_NEWPID, "pid"}, {CLONE_NEWIPC, "ipc"},
        {CLONE_NEWUTS, "uts"}, {CLONE_NEWCGROUP, "cgroup"}, {CLONE_NEWNET, "net"},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(nss); i++)
        if (pl->clone_flags & nss[i].flag)
            pappend(ns, json_string(nss[i].name));
    pset(o, "namespaces", ns);
    pset(o, "ipc", json_string(pl->clone_flags & CLONE_NEWIPC
                                   ? "own IPC namespace: System V objects and message queues go with it"
                                   : pl->ipc_bpf ? "denied: System V IPC and POSIX message queue calls fail "
                                                   "with EPERM (no IPC namespace)"
                                                 : "shared with the host: objects the workload makes "
                                                   "outlive the attempt (no IPC namespace, no seccomp)"));
    /* What the caller's process holds that nothing can take back and every
     * process of the sandbox inherits (systemd's MemoryDenyWriteExecute=
     * sets it; a JIT such as node's then dies): said, and in the contract. */
    if (prctl(66 /* PR_GET_MDWE */, 0, 0, 0, 0) > 0)
        pset(o, "inherited_mdwe",
             json_string("on: the caller's process denies memory that is writable and executable "
                         "(PR_SET_MDWE), and the sandbox inherits it; JIT compilers fail under it"));
    if (!(pl->clone_flags & CLONE_NEWPID))
        pset(o, "other_processes",
             json_string(pl->others_bpf ? "denied: prlimit64, setpriority, ioprio_set and the sched_set* calls "
                                          "fail with EPERM for any process but the caller (no pid namespace)"
                                        : "judged by the user id alone: the workload may change the limits and "
                                          "priorities of the host's processes of its user (no pid namespace, "
                                          "no seccomp)"));
    pset(o, "mode", json_string(pl->as_root ? "root" : "rootless"));
    pset(o, "uid_map", pl->process_mode ? json_null() : json_string(pl->uid_map));
    pset(o, "gid_map", pl->process_mode ? json_null() : json_string(pl->gid_map));
    pset(o, "workload_uid", json_integer(pl->work_uid));
    pset(o, "user", json_string(pl->work_uid == 0 ? "fake-root" : "forgeyard"));
    char *net = pl->net ? lxn_describe(pl->net, np, pl) : NULL;
    json_t *netj = net ? load_exact(net) : NULL;
    free(net);
    if (pl->net && !netj) {
        json_decref(o);
        return FY_E_NOMEM;
    }
    pset(o, "network", netj ? netj
                            : json_string(pl->use_netns ? "deny: own network namespace, loopback only"
                                                        : "host network (no network namespace)"));
    pset(o, "filesystem", json_string(pl->process_mode
                                          ? (pl->ll_handled ? "host view, confined by Landlock to the declared paths"
                                                            : "host view, unconfined (no Landlock)")
                                          : np->nimage_layers
                                          ? (pl->overlay_disk
                                                 ? "container image: overlay of its read-only layers, a fresh "
                                                   "upper per attempt on disk (tmpfs lacks user xattrs), "
                                                   "bounded by tmp_size through the disk watchdog, "
                                                   "with the declared paths"
                                                 : "container image: overlay of its read-only layers, a fresh "
                                                   "tmpfs upper per attempt, with the declared paths")
                                          : "private: fresh tmpfs root with the declared paths"));
    /* (the image's own layers, as its manifest lists them; those mounted:
     * without the ones hidden below an opaque root and the lower copy of a
     * layer held twice) */
    if (np->image_digest)
        pset(o, "image", json_pack("{sssIsI}", "digest", np->image_digest, "layers",
                                   (json_int_t)np->image_nlayers, "layers_mounted",
                                   (json_int_t)np->nimage_layers));
    /* Read-only workspace binds shown owned by the sandbox's user (root
     * caller, linux-idmap.c); the report says "unmapped" or "partial" when
     * the host could not idmap them all (lx report). */
    for (size_t i = 0; i < pl->nops; i++)
        if (pl->ops[i].kind == MK_BIND && (pl->ops[i].flags & MF_HOST_TREE) && (pl->ops[i].flags & MF_READONLY)) {
            pset(o, "workspace_idmap", json_string("mapped"));
            break;
        }
    pset(o, "devices", pl->devices_doc ? json_incref(pl->devices_doc) : json_null());
    pset(o, "cgroup_view",
         json_string(pl->cg_view ? "read-only at /sys/fs/cgroup: the attempt's own cgroups (each "
                                   "hierarchy where it has one), nothing above or beside them"
                                 : "none"));
    pset(o, "terminals", json_string(np->pty == FY_DEVICES_PRIVATE
                                         ? "private: a devpts instance of the sandbox's own"
                                         : "none"));
    /* (linux-child.c own_session_keyring) */
    pset(o, "keyring",
         json_string(pl->own_keyring
                         ? "own: a fresh, empty session keyring (the caller's is out of reach)"
                         : "the caller's session keyring, out of reach: the seccomp filter refuses "
                           "keyctl, add_key and request_key"));
    json_t *sc = json_null();
    if (pl->bpf) {
        sc = json_pack("{sssIss}", "profile", pl->seccomp_name, "version", (json_int_t)pl->seccomp_version,
                       "violations", pl->seccomp_notify ? "reported (user notification)" : "kill (SIGSYS)");
        /* The ptrace family's denials, counted where they are notified
         * (the attempt's count replaces the 0: linux-spawn-supervise.c). */
        if (sc && pl->seccomp_notify && np->seccomp_class == FY_SECCOMP_GENERAL_BUILD)
            pset(sc, "ptrace_denied", json_integer(0));
    }
    pset(o, "seccomp", sc);
    pset(o, "landlock_abi", json_integer(pl->ll_handled ? pl->ll_abi : 0));
    pset(o, "capabilities",
         json_string(pl->process_mode && !pl->as_root
                         ? "none (an unprivileged caller has none; ambient cleared, no_new_privs)"
                         : "none (bounding, ambient, inheritable dropped; securebits locked)"));
    pset(o, "no_new_privs", json_true());
    /* How the sandbox's pid 1 came to be: per attempt (lx finish() says
     * when it was the fallback). */
    pset(o, "init", json_string(LX_INIT_EXEC));
    pset(o, "runtime_paths_skipped", skipped);
    pset(o, "impure", json_boolean(np->impure));
    pl->isolation_json = plan_dumps(o);
    json_decref(o);
    return pl->isolation_json ? 0 : FY_E_NOMEM;
}

int linux_plan_workload_ids(const void *plan, uint32_t *uid, uint32_t *gid) {
    const struct linux_plan *pl = plan;
    *uid = pl->host_uid;
    *gid = pl->host_gid;
    return 0;
}

const char *linux_plan_unapplied(const void *plan, uint32_t control) {
    const struct linux_plan *pl = plan;
    return control == FY_CONTROL_IO_LIMIT ? pl->io_unapplied : NULL;
}

const char *linux_plan_describe(const void *plan) {
    const struct linux_plan *pl = plan;
    if (!pl->describe_json) {
        /* Built lazily once; the plan is otherwise immutable. Both parts
         * are compact JSON objects with sorted keys already, so joining
         * them is the canonical form ("isolation" < "limits") without a
         * parse (the contract id asks for this once per prepared plan). */
        char *s = util_asprintf("{\"isolation\":%s,\"limits\":%s}", pl->isolation_json ? pl->isolation_json : "{}",
                                pl->cgroup_json ? pl->cgroup_json : "{}");
        if (s)
            util_publish_once(&pl->describe_json, s);
    }
    return pl->describe_json ? pl->describe_json : "{}";
}

/* The linux-process backend: no namespaces, so no private filesystem view;
 * Landlock (when present) confines the workload to the declared host paths,
 * seccomp and rlimits apply as in the namespace backend, a per-attempt
 * directory on tmpfs (created at start) holds HOME, TMPDIR and secrets. */
static const char *const process_etc[] = {
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/localtime", "/etc/ld.so.cache",
    "/etc/services", "/etc/protocols", /* (etc_public) */
    /* System configuration that common tools read and treat a refusal of
     * as fatal, where the namespace level's /etc simply lacks them (ENOENT):
     * git's /etc/gitconfig ("fatal: unknown error occurred while reading
     * the configuration files"), OpenSSL's openssl.cnf (node and npm stop
     * at start), the distribution's name (pip's probe, so python3 -m venv).
     * Read-only; nothing of a secret's kind (the sixth exploration). */
    "/etc/gitconfig", "/etc/ssl/openssl.cnf", "/etc/debian_version", "/etc/os-release", "/etc/lsb-release",
};
static const char *const process_dev[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};

/* The host path a sandbox path lies under at the process level (which
 * remaps nothing): the workspace and binds of the plan, in that order. */
static const char *host_path_for(struct linux_plan *pl, const struct fy_plan *np, const char *wd) {
    static const uint32_t roles[] = {PR_SOURCE, PR_BUILD, PR_OUTPUT, PR_BIND};
    for (size_t r = 0; r < FY_ARRAY_SIZE(roles); r++)
        for (size_t i = 0; i < np->nentries; i++) {
            const struct plan_entry *e = &np->entries[i];
            if (e->kind != PE_HOST || e->role != roles[r])
                continue;
            size_t n = strlen(e->target);
            if (strncmp(wd, e->target, n) == 0 && (wd[n] == '/' || !wd[n]))
                return plan_fmt(pl, "%s%s", e->host, wd + n);
        }
    return NULL;
}

bool lx_may_sys_admin(void) {
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    return syscall(SYS_capget, &hdr, data) == 0 && (data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32)));
}

static int compile_process_mode(struct linux_plan *pl, struct builder *b, const struct fy_plan *np,
                                const fy_caps *c) {
    uint64_t rw = ll_handled_for(pl->ll_abi) & ~LL_FS_IOCTL_DEV;
    pl->process_mode = true;
    /* No namespace but IPC's where the caller may make one (root: System V
     * objects and message queues go with it); elsewhere the IPC filter
     * refuses them (seccomp, below). */
    pl->clone_flags = np->control[FY_CONTROL_IPCNS] == FY_CONTROL_STATE_ENFORCED ? CLONE_NEWIPC : 0;
    pl->use_netns = false;
    pl->hostname = NULL; /* the host's UTS namespace is not ours to rename */
    /* Never host root: as root the workload gets an unprivileged host uid. */
    pl->as_root = c->host.is_root;
    if (pl->as_root) {
        pl->work_uid = np->id_count >= 2 ? np->id_first + 1 : np->id_first;
        pl->work_gid = pl->work_uid;
        pl->drop_groups = true;
    } else {
        pl->work_uid = c->host.uid;
        pl->work_gid = c->host.gid;
    }
    pl->host_uid = pl->work_uid;
    pl->host_gid = pl->work_gid;
    /* The plan's host paths, where the host has them (no remapping: the
     * workload sees them at their host paths), confined by Landlock. */
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        switch (e->role) {
        case PR_RUNTIME:
            if (e->kind == PE_SYMLINK || (e->kind == PE_HOST && !(e->flags & PLAN_FILE)))
                add_rule(b, e->target, LL_RO);
            else if (e->kind == PE_HOST)
                add_rule(b, e->target, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE);
            break;
        case PR_RESOLV:
            add_rule(b, e->host, LANDLOCK_ACCESS_FS_READ_FILE);
            break;
        case PR_TRUST:
            /* A rule names what it resolves to when init applies it, and a
             * file keeps only a file's rights of LL_RO. */
            add_rule(b, e->target, e->kind == PE_HOST && (e->flags & PLAN_FILE) ? LANDLOCK_ACCESS_FS_READ_FILE : LL_RO);
            break;
        case PR_SOURCE: case PR_BUILD: case PR_OUTPUT: case PR_TOOLCHAIN: case PR_BIND:
            /* Landlock is this level's only barrier, so a rule must name
             * the directory itself: a workspace path reached through a
             * symbolic link (planted, or swapped in after fy_prepare)
             * gave the workload the link's target. Refused when the
             * sandbox's init opens it, as the namespace level refuses
             * binding it. */
            if (e->kind == PE_HOST) {
                size_t before = pl->nll;
                add_rule(b, e->host, (e->flags & PLAN_RO) ? LL_RO : rw);
                if (pl->nll > before && (e->flags & PLAN_WORKSPACE))
                    pl->ll_rules[before].no_links = true;
            }
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(process_etc); i++)
        add_rule(b, process_etc[i], LANDLOCK_ACCESS_FS_READ_FILE);
    for (size_t i = 0; i < FY_ARRAY_SIZE(process_dev); i++)
        add_rule(b, process_dev[i], LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_TRUNCATE);
    add_rule(b, "/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_WRITE_FILE);
    /* The attempt directory's rule is added per start (its name is new
     * each time): see linux-spawn.c. The working directory is the host path
     * behind the plan's sandbox path; NULL: the attempt directory. */
    pl->workdir = host_path_for(pl, np, np->workdir);
    return b->oom ? FY_E_NOMEM : 0;
}

/* "mode=0755[,uid=U,gid=G],size=N[,nr_inodes=I]" for a scratch entry. */
static char *tmpfs_options(struct linux_plan *pl, const struct plan_entry *e) {
    char owner[48] = "", inodes[32] = "";
    if (e->flags & PLAN_OWNED)
        snprintf(owner, sizeof(owner), ",uid=%u,gid=%u", pl->work_uid, pl->work_gid);
    if (e->inodes)
        snprintf(inodes, sizeof(inodes), ",nr_inodes=%u", e->inodes);
    return plan_fmt(pl, "mode=%04o%s,size=%llu%s", e->mode, owner, (unsigned long long)e->size, inodes);
}

/* The namespace level: the plan's layout as mount operations in a fresh
 * tmpfs root, each with the Landlock rule of what it is. */
static int compile_layout(struct linux_plan *pl, struct builder *b, const struct fy_plan *np) {
    uint64_t rw = ll_handled_for(pl->ll_abi) & ~LL_FS_IOCTL_DEV;
    snprintf(pl->tmpfs_root_opts, sizeof(pl->tmpfs_root_opts), "mode=0755,size=16m,nr_inodes=16384");
    if (np->nimage_layers) {
        /* The image is the root: its read-only layers under an upper of
         * this attempt's own in the root tmpfs (sized as /tmp), which goes
         * with the mount namespace. overlayfs lists lowerdir top first;
         * userxattr: the sandbox mounts it in its user namespace, where
         * whiteouts and opaque directories are read from user.overlay.* (the
         * layer cache stores them so, lib/oci). */
        uint64_t sz = np->limit[FY_LIMIT_TMP_SIZE];
        snprintf(pl->tmpfs_root_opts, sizeof(pl->tmpfs_root_opts), "mode=0755,size=%llu",
                 (unsigned long long)(sz == FY_UNLIMITED || sz == 0 ? 1ull << 30 : sz));
        if (np->nimage_layers > LX_MAX_LAYERS)
            return FY_E_RANGE;
        char **lowers = arena_keep(&pl->arena, calloc(np->nimage_layers + 1, sizeof(char *)));
        if (!lowers)
            return FY_E_NOMEM;
        for (size_t i = 0; i < np->nimage_layers; i++)
            lowers[i] = (char *)np->image_layers[np->nimage_layers - 1 - i];
        pl->overlay_lowers = lowers;
        /* The whole root is the attempt's own copy of the image. */
        add_rule(b, "/", rw | LANDLOCK_ACCESS_FS_EXECUTE);
    } else {
        add_rule(b, "/", LANDLOCK_ACCESS_FS_READ_DIR);
    }
    bool etc_done = false;
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        bool etc_part = e->role == PR_ETC || e->role == PR_RESOLV || e->role == PR_TRUST || e->role == PR_RUNTIME;
        if (!etc_part && !etc_done) {
            add_rule(b, "/etc", LL_RO);
            etc_done = true;
        }
        struct mount_op *op = NULL;
        switch (e->kind) {
        case PE_FILE:
            add_file(b, e->target, e->content, e->mode);
            break;
        case PE_SYMLINK:
            add_symlink(b, e->target, e->content);
            break;
        case PE_HOST: {
            uint32_t f = ((e->flags & PLAN_RO) ? MF_READONLY : 0) | ((e->flags & PLAN_OPTIONAL) ? MF_OPTIONAL : 0) |
                         ((e->flags & PLAN_WORKSPACE) || e->role == PR_DEVICE ? MF_NOFOLLOW : 0) | ((e->flags & PLAN_DEVICE) ? MF_DEVICE : 0) |
                         ((e->flags & PLAN_FILE) ? MF_FILE : 0) | ((e->flags & PLAN_DIR) ? MF_DIR : 0);
            /* A root caller's workspace: the host walks it and hands the
             * sandbox its tree (the sandbox's ids may not search the
             * caller's directories: /root is 0700), read-only ones shown
             * owned by the sandbox's user where the host can idmap them
             * (linux-idmap.c). */
            if (pl->as_root && !pl->process_mode && (e->flags & PLAN_WORKSPACE) && !(e->flags & PLAN_DEVICE) &&
                e->role != PR_DEVICE)
                f |= MF_HOST_TREE;
            if (e->role == PR_BUILD && pl->build_overlay) {
                /* An action's execution root: its input directory under
                 * an upper of the attempt's own, mounted in here. */
                if ((op = add_op(b, MK_OVERLAY, MF_DIR, e->target)) &&
                    (!(op->src = plan_str(pl, np->build_lower + 1)) || !(op->data = plan_str(pl, e->host + 1)) ||
                     !(op->aux = plan_str(pl, np->build_work + 1))))
                    b->oom = true;
                if (op) {
                    op->dev = np->build_lower_dev;
                    op->ino = np->build_lower_ino;
                }
            } else {
                add_bind(b, e->host, e->target, f);
            }
            if (b->oom)
                return FY_E_NOMEM;
            op = &pl->ops[pl->nops - 1];
            if (e->role == PR_DEV)
                op->step = FY_STEP_DEV;
            if (e->role == PR_DEVICE)
                add_rule(b, e->target, LANDLOCK_ACCESS_FS_READ_FILE |
                                           ((e->flags & PLAN_RO) ? 0 : LANDLOCK_ACCESS_FS_WRITE_FILE) | LL_FS_IOCTL_DEV);
            else if (e->role == PR_RUNTIME || e->role == PR_TRUST)
                add_rule(b, e->target, (e->flags & PLAN_FILE) ? LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE
                                                              : LL_RO);
            else if (e->role != PR_DEV && e->role != PR_RESOLV)
                add_rule(b, e->target, (e->flags & PLAN_RO) ? LL_RO : rw);
            break;
        }
        case PE_TMPFS: {
            char *opt = tmpfs_options(pl, e);
            if (!opt)
                return FY_E_NOMEM;
            add_tmpfs(b, e->target, opt, (e->flags & PLAN_NOEXEC) ? MF_NOEXEC : 0);
            if (e->role != PR_DEV)
                add_rule(b, e->target, rw);
            break;
        }
        case PE_PROC:
            if ((op = add_op(b, MK_PROC, 0, e->target)))
                op->step = FY_STEP_PROC;
            add_rule(b, e->target, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                                       LANDLOCK_ACCESS_FS_WRITE_FILE);
            break;
        case PE_PROC_HIDE: case PE_PROC_RO:
            if ((op = add_op(b, e->kind == PE_PROC_HIDE ? MK_MASK : MK_READONLY,
                             (e->flags & PLAN_OPTIONAL) ? MF_OPTIONAL : 0, e->target)))
                op->step = FY_STEP_PROC;
            break;
        case PE_PTYS:
            /* A new devpts instance (never the host's), whose ptmx anyone
             * may open; each terminal belongs to the process that made it. */
            if ((op = add_op(b, MK_DEVPTS, 0, e->target))) {
                char opts[80];
                pl->pty_max = pty_cap();
                snprintf(opts, sizeof(opts), "newinstance,ptmxmode=0666,mode=0620,max=%u", (unsigned)pl->pty_max);
                op->step = FY_STEP_DEV;
                if (!(op->data = plan_str(pl, opts)))
                    b->oom = true;
            }
            add_rule(b, e->target, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                       LANDLOCK_ACCESS_FS_READ_DIR | LL_FS_IOCTL_DEV);
            break;
        default:
            return FY_E_INTERNAL;
        }
        if (e->kind == PE_TMPFS && strcmp(e->target, "/dev") == 0)
            add_rule(b, "/dev", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                    LANDLOCK_ACCESS_FS_READ_DIR | LL_FS_TRUNCATE);
        if (b->oom)
            return FY_E_NOMEM;
    }
    /* Where init mounts the read-only view of the attempt's own cgroups
     * (linux-child.c cgroup_view), when the sandbox has a cgroup namespace. */
    if (pl->clone_flags & CLONE_NEWCGROUP) {
        struct mount_op *op = add_op(b, MK_DIR, 0, "/sys/fs/cgroup");
        if (op)
            op->mode = 0555;
        add_rule(b, "/sys/fs/cgroup", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
    }
    /* /run/secrets is written per start (linux-child.c). */
    add_rule(b, "/run", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
    pl->workdir = np->workdir;
    return b->oom ? FY_E_NOMEM : 0;
}

/* Whether an action's execution root can be an overlay here: asked for
 * (absolute host paths), the probe mounted one in a user namespace
 * (LX_FACT_OVERLAY), and the kernel names layers by fd (overlayfs's
 * "lowerdir+", "upperdir" and "workdir" through FSCONFIG_SET_FD: Linux
 * 6.13), so that what is mounted is exactly the directory opened and
 * checked. Otherwise the action materialises its root (as good, slower). */
static bool overlay_build_usable(const struct fy_plan *np, const fy_caps *c) {
    if (!np->build_lower || !np->build_work || !np->build || np->build_lower[0] != '/' ||
        np->build_work[0] != '/' || np->build[0] != '/')
        return false;
    const char *f = caps_fact(c, LX_FACT_OVERLAY);
    unsigned major = 0, minor = 0;
    const char *rel = c->host.kernel_release;
    return f && strcmp(f, "ok") == 0 && rel && sscanf(rel, "%u.%u", &major, &minor) == 2 &&
           (major > 6 || (major == 6 && minor >= 13));
}

bool linux_plan_build_overlaid(const void *plan) {
    const struct linux_plan *pl = plan;
    return pl->build_overlay;
}

int linux_plan_compile(const struct fy_plan *np, const fy_caps *c, struct linux_plan **ret, fy_error **reterr) {
    plan_json_failed = false;
    /* Disk and file-count quotas apply to the writable host-backed
     * directories (tmpfs sizes bound the rest); with none, nothing would
     * enforce them: refuse rather than pretend. */
    bool any_host_rw = false;
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        any_host_rw = any_host_rw || (e->kind == PE_HOST && !(e->flags & PLAN_RO) &&
                                      (e->role == PR_SOURCE || e->role == PR_BUILD || e->role == PR_OUTPUT ||
                                       e->role == PR_BIND));
    }
    if ((np->limit[FY_LIMIT_DISK] != FY_UNLIMITED || np->limit[FY_LIMIT_FILES] != FY_UNLIMITED) && !any_host_rw)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0,
                       np->limit[FY_LIMIT_DISK] != FY_UNLIMITED ? "$.resources.disk" : "$.resources.files",
                       "a disk or file quota needs a writable host directory to apply to (build, output or a writable "
                       "bind); tmpfs sizes bound everything else");
    bool process_level = np->backend == &linux_process_backend;
    if (process_level && np->pty == FY_DEVICES_PRIVATE)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_DEV, 0, "$.devices.pty",
                       "pseudo-terminals of the sandbox's own need a mount namespace, which the process level "
                       "does not have");
    if (process_level && np->net_mode != FY_NET_ALLOW)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                       "network mode %s needs a network namespace, which the process level does not have",
                       net_mode_name(np->net_mode));
    if (process_level && np->fake_root)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_USERNS, 0, "$.process.user",
                       "fake-root needs a user namespace, which the process level does not have");
    if (!process_level &&
        (np->net_mode == FY_NET_DENY || np->net_mode == FY_NET_RESTRICTED || np->net_mode == FY_NET_FETCH_ONLY) &&
        !caps_present(c, FY_CAP_NETNS))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, NULL,
                       "network mode %s needs a network namespace: %s", net_mode_name(np->net_mode),
                       fy_caps_reason(c, FY_CAP_NETNS));
    struct linux_plan *pl = calloc(1, sizeof(*pl));
    if (!pl)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    pl->np = np;
    pl->exec_init = caps_present(c, FY_CAP_EXEC_INIT);
    struct builder b = {.pl = pl};
    int r = 0;

    /* Namespaces: the negotiated controls decide. */
    pl->clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;
    if (np->control[FY_CONTROL_IPCNS] == FY_CONTROL_STATE_ENFORCED)
        pl->clone_flags |= CLONE_NEWIPC;
    if (np->control[FY_CONTROL_UTSNS] == FY_CONTROL_STATE_ENFORCED)
        pl->clone_flags |= CLONE_NEWUTS;
    if (np->control[FY_CONTROL_CGROUPNS] == FY_CONTROL_STATE_ENFORCED)
        pl->clone_flags |= CLONE_NEWCGROUP;
    if (np->net_mode == FY_NET_DENY && !process_level) {
        pl->clone_flags |= CLONE_NEWNET;
        pl->use_netns = true;
    }
    pl->hostname = (pl->clone_flags & CLONE_NEWUTS) ? (np->hostname ? np->hostname : "forgeyard") : NULL;
    compile_ids(pl, np, c);
    if ((np->net_mode == FY_NET_RESTRICTED || np->net_mode == FY_NET_FETCH_ONLY) && !process_level) {
        /* Its own network namespace, linked to a router (linux-net.c), or
         * under fetch-only with only the proxy's listener in it
         * (linux-proxy.c). */
        /* As root the rules are an nf_tables batch of the host's: a kernel
         * that refuses it is refused here, typed, not at the start. */
        if (np->net_mode == FY_NET_RESTRICTED && pl->as_root && (r = lxn_require_nftables(c, reterr)) < 0)
            goto fail;
        if (!(pl->net = arena_keep(&pl->arena, calloc(1, sizeof(*pl->net)))))
            goto oom;
        if (!pl->as_root && caps_fact(c, LX_FACT_HELPER_NET_SOCKET)) {
            pl->net_helper = arena_strdup(&pl->arena, caps_fact(c, LX_FACT_HELPER_NET_SOCKET));
            pl->net_helper_uplink = arena_strdup(&pl->arena, caps_fact(c, LX_FACT_HELPER_NET));
            if (!pl->net_helper || !pl->net_helper_uplink)
                goto oom;
            const char *hv = caps_fact(c, LX_FACT_HELPER_NET_VERSION);
            pl->net_helper_version = (uint16_t)(hv ? strtoul(hv, NULL, 10) : 0);
        }
        if ((r = lxn_compile(pl->net, pl, np, pl->as_root, reterr)) < 0)
            goto fail;
        pl->clone_flags |= CLONE_NEWNET;
        pl->use_netns = true;
        pl->net_router = true;
    }

    if (np->job_member && !process_level) {
        /* A member of a job network (linux-jobnet.c): its namespace gets a
         * veth to the job's bridge once it exists, as restricted's does to
         * its router. */
        /* Without root, the privileged helper makes it (protocol 4: JOB_*,
         * linux-net-helper.c) when it offers networking to us. */
        const char *hv = caps_fact(c, LX_FACT_HELPER_NET_VERSION);
        if (!pl->as_root && !(caps_fact(c, LX_FACT_HELPER_NET_SOCKET) && hv && strtoul(hv, NULL, 10) >= 4 &&
                              strcmp(caps_fact(c, LX_FACT_HELPER_NET_SOCKET), lx_helper_socket()) == 0)) {
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_JOBNET, 0, "$.network.job",
                        "job networks need root or a privileged helper of protocol 4 offering networking "
                        "(forgeyard-sandbox-helper(8) --net-uplink): the job's bridge namespace must be owned by "
                        "the host's user namespace and linked to each member's by a veth, which an unprivileged "
                        "caller cannot make across sibling user namespaces");
            goto fail;
        }
        /* Restricted: its router's plan gains the job's link. Fetch-only:
         * the proxy's listener on the member's loopback as for any
         * fetch-only attempt, and the job's link beside it. */
        if (!pl->net && !(pl->net = arena_keep(&pl->arena, calloc(1, sizeof(*pl->net)))))
            goto oom;
        if (np->net_mode == FY_NET_DENY)
            pl->net->mode = FY_NET_DENY;
        pl->net->job = true;
        pl->net->job_index = np->job_index;
        pl->net->job_member = np->job_member;
        pl->net_router = true;
    }

    /* Landlock: the same declared paths, as defence in depth. */
    if (np->control[FY_CONTROL_LANDLOCK] == FY_CONTROL_STATE_ENFORCED) {
        int64_t abi = 0;
        fy_caps_value(c, FY_CAP_LANDLOCK, &abi);
        pl->ll_abi = (uint32_t)abi;
        pl->ll_handled = ll_handled_for(pl->ll_abi);
        if (pl->ll_abi >= 6)
            pl->ll_scoped = 1 /* ABSTRACT_UNIX_SOCKET */ | 2 /* SIGNAL */;
    }
    /* As root the sandbox opens the image's layers as one of the range's
     * ids: every directory above them must let others through. */
    for (size_t i = 0; pl->as_root && i < np->nimage_layers; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s", np->image_layers[i]);
        for (char *slash = strrchr(path, '/'); slash && slash != path; slash = strrchr(path, '/')) {
            *slash = '\0';
            struct stat st;
            /* (the cache's layers-FIRST-COUNT directory is the range's
             * first id's own, 0700: lib/oci/oci-unpack.c cache_open) */
            if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH) &&
                !(np->id_count && st.st_uid == np->id_first && (st.st_mode & S_IXUSR))) {
                r = err_set(reterr, FY_E_DENIED, FY_STEP_MOUNT, EACCES, NULL,
                            "the image cache is not reachable by the sandbox's ids: %s is mode %04o (others need x)",
                            path, (unsigned)(st.st_mode & 07777));
                goto fail;
            }
        }
    }
    if (pl->net && !pl->net->job)
        lxn_landlock_ports(pl, np);
    else if (pl->net && np->njob_ports) /* a job member that declared its peers' ports (linux-net.c) */
        lxn_landlock_job_ports(pl, np);
    pl->build_overlay = !process_level && overlay_build_usable(np, c);
    if (process_level && c->host.is_root && np->id_count < 2) {
        /* Its workload would run as the range's first id, which makes the
         * user namespace of every namespace sandbox of a root caller with
         * this range (lx_owner_enter): as that id in the host's namespace it
         * holds every capability in them (it opened another sandbox's init's
         * memory read-write). */
        r = err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.process.id_range.count",
                    "the process level as root runs the workload as the id range's second id, never its first "
                    "(%u), which owns the namespace sandboxes' user namespaces: the range needs at least 2 ids",
                    np->id_first);
        goto fail;
    }
    if (process_level && np->nsecrets && np->control[FY_CONTROL_LANDLOCK] != FY_CONTROL_STATE_ENFORCED) {
        /* Every process-level attempt of a caller runs as one host user, in
         * the host's /proc and /dev/shm: without Landlock another attempt
         * reads this one's secret files and its environment. */
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, "$.secrets",
                    "secrets at the process level need Landlock enforced: every process-level attempt of this "
                    "caller runs as the same host user, and only Landlock keeps another one from reading this "
                    "one's secret files and environment%s",
                    c->host.is_root ? "" : " (and the caller's own memory and files)");
        goto fail;
    }
    r = process_level ? compile_process_mode(pl, &b, np, c) : compile_layout(pl, &b, np);
    if (r >= 0 && pl->overlay_lowers) {
        const char *ov = caps_fact(c, LX_FACT_OVERLAY);
        pl->overlay_disk = np->test_overlay_disk || (ov && strncmp(ov, LX_OVERLAY_DISK, strlen(LX_OVERLAY_DISK)) == 0);
        /* A tmpfs upper is sized tmp_size (1 GiB when unlimited); a disk
         * upper is bounded to the same by the disk watchdog. */
        uint64_t tsz = np->limit[FY_LIMIT_TMP_SIZE];
        if (pl->overlay_disk)
            pl->upper_quota = tsz == FY_UNLIMITED || tsz == 0 ? 1ull << 30 : tsz;
    }
    if (r == FY_E_RANGE) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_MOUNT, 0, NULL,
                    "the image has %zu layers; one overlay mount here takes at most %d", np->nimage_layers,
                    LX_MAX_LAYERS);
        goto fail;
    }
    if (r < 0)
        goto oom;

    /* Seccomp. */
    if (np->control[FY_CONTROL_SECCOMP] == FY_CONTROL_STATE_ENFORCED) {
        /* Compiled once per process, or taken from the probe's saved form
         * (a snapshot) once it passes the self check (linux-seccomp-store.c). */
        bool notify = caps_present(c, FY_CAP_SECCOMP_NOTIFY);
        char key[64];
        lx_seccomp_fact_key(key, sizeof(key), np->seccomp_class, notify, false);
        const struct seccomp_program *prog =
            sc_program_get(np->seccomp_class, notify, false, caps_fact(c, key), reterr);
        lx_seccomp_fact_key(key, sizeof(key), 0, false, true);
        const struct seccomp_program *init = prog ? sc_program_get(0, false, true, caps_fact(c, key), reterr) : NULL;
        if (!prog || !init) {
            r = reterr && *reterr ? fy_error_code(*reterr) : FY_E_INTERNAL;
            goto fail;
        }
        pl->bpf = prog->filter; /* shared, immutable: never freed with the plan */
        pl->bpf_len = (uint16_t)prog->len;
        pl->seccomp_notify = prog->notify;
        pl->seccomp_name = prog->name;
        pl->seccomp_version = prog->version;
        pl->init_bpf = init->filter;
        pl->init_bpf_len = (uint16_t)init->len;
        if (!(pl->clone_flags & CLONE_NEWIPC))
            pl->ipc_bpf = sc_ipc_deny_program(&pl->ipc_bpf_len);
        if (!(pl->clone_flags & CLONE_NEWPID))
            pl->others_bpf = sc_others_deny_program(&pl->others_bpf_len);
    }
    /* Every profile's filter refuses keyctl, add_key and request_key
     * (linux-seccomp-profiles.c); without one, the workload must not hold
     * the caller's session keyring (linux-child.c own_session_keyring). */
    pl->own_keyring = !pl->bpf;

    /* rlimits (always). */
    char core_pattern[128];
    uint64_t core = core_rlimit(np->limit[FY_LIMIT_CORE], core_pattern, sizeof(core_pattern));
    for (size_t i = 0; i < FY_ARRAY_SIZE(policy_rlimits); i++)
        add_rlimit(pl, policy_rlimits[i].res,
                   policy_rlimits[i].res == RLIMIT_CORE ? core : np->limit[policy_rlimits[i].limit]);
    /* Never a real-time policy or a raised priority, whatever the caller
     * may have (a service's LimitRTPRIO=): seccomp lets sched_setscheduler
     * through, and a SCHED_FIFO loop is outside every CPU quota. */
    add_rlimit(pl, RLIMIT_RTPRIO, 0);
    add_rlimit(pl, RLIMIT_NICE, 0);
    compile_shares(pl);

    /* The disk watchdog's directories: the writable host-backed ones. */
    pl->disk_quota = np->limit[FY_LIMIT_DISK];
    pl->files_quota = np->limit[FY_LIMIT_FILES];
    if (pl->disk_quota != FY_UNLIMITED || pl->files_quota != FY_UNLIMITED) {
        static const uint32_t roles[] = {PR_BUILD, PR_OUTPUT, PR_SOURCE, PR_BIND};
        for (size_t k = 0; k < FY_ARRAY_SIZE(roles); k++)
            for (size_t i = 0; i < np->nentries && pl->nwatch < FY_ARRAY_SIZE(pl->watch_dirs); i++) {
                const struct plan_entry *e = &np->entries[i];
                if (e->role == roles[k] && e->kind == PE_HOST && !(e->flags & PLAN_RO))
                    pl->watch_dirs[pl->nwatch++] = e->host;
            }
    }
    pl->argv = (char **)np->argv;
    pl->fault_step = np->fault_step;
    pl->fault_nth = np->fault_nth;
    pl->delay_stage = np->delay_stage;
    pl->delay_usec = np->delay_usec;
    if (!process_level && (r = compile_devices(pl, np, c, reterr)) < 0)
        goto fail;
    if ((r = compile_cgroups(pl, np, c, core, core_pattern, reterr)) == FY_E_UNSUPPORTED)
        goto fail; /* a budget of the privileged helper */
    if (r >= 0) {
        struct cg_plan *cg = &pl->cg;
        pl->cg_view = !process_level && cg->enabled && (pl->clone_flags & CLONE_NEWCGROUP) &&
                      (pl->clone_flags & CLONE_NEWNS);
        pl->cg_view_v2 = cg->v2_parent && (cg->v2_limits || cg->v2_group || cg->v2_devices);
        /* On cgroup v1, runtimes that size themselves from cgroups (HotSpot's
         * container support, for one) believe a view only when they find
         * cpuset, cpu and cpuacct cgroups of the process's own in it too, and
         * otherwise size themselves from the host (a JVM's heap a quarter of
         * the host's memory, over the attempt's limit: Debian's JDK 17 under
         * the release profile's 4 GiB took 6 GiB here). So wherever the
         * memory limit is a v1 cgroup and the view is mounted, the attempt
         * gets bare cpu, cpuacct and cpuset cgroups too (limiting nothing,
         * unless a cpu limit uses the cpu one), as a container runtime gives
         * one on v1. They cost a cold /bin/true attempt about 0.5-0.8 ms on
         * this 2-core hybrid host (mkdir and rmdir of three cgroups, six
         * migrations, three more mounts in the view: docs/performance.md);
         * a pre-started shell joins them before its claim. Not through the
         * privileged helper, which makes only the cgroups it limits. */
        const char *acct = caps_fact(c, LX_FACT_CG1_CPUACCT), *cpuset = caps_fact(c, LX_FACT_CG1_CPUSET),
                   *cpu = caps_fact(c, LX_FACT_CG1_CPU);
        if (pl->cg_view && !cg->helper && cg->v1_parent[CG_MEMORY] && cpu && acct && cpuset) {
            if (!cg->v1_parent[CG_CPU])
                cg->v1_parent[CG_CPU] = cpu; /* bare: limits nothing */
            if (strcmp(acct, cg->v1_parent[CG_CPU]) != 0)
                cg->v1_parent[CG_CPUACCT] = acct;
            cg->v1_parent[CG_CPUSET] = cpuset;
        }
    }
    if (r < 0 || compile_env(pl, np) < 0 || compile_isolation_json(pl, np) < 0 || plan_json_failed)
        goto oom;
    *ret = pl;
    return 0;
oom:
    r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
fail:
    linux_plan_free(pl);
    return r;
}
