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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "linux-backend.h"
#include "linux-plan.h"
#include "linux-seccomp.h"
#include "linux-syscall.h"
#include "prepared.h"

#define LL_FS_V1 ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_FS_IOCTL_DEV (1ULL << 15)
#define LL_RO (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* ---- compiled seccomp programs ----
 * Compiling a profile costs a few milliseconds of libseccomp; the result
 * depends only on (class, notify), so each is compiled once per process and
 * is immutable afterwards (like the probe cache: the only process-wide
 * state, never mutated after it is built). */
struct bpf_cache {
    pthread_once_t once;
    uint32_t cls;
    bool notify, init;
    struct seccomp_program prog;
    int rc;
};
static struct bpf_cache bpf_cache[] = {
    {PTHREAD_ONCE_INIT, FY_SECCOMP_GENERAL_BUILD, false, false, {0}, 0},
    {PTHREAD_ONCE_INIT, FY_SECCOMP_GENERAL_BUILD, true, false, {0}, 0},
    {PTHREAD_ONCE_INIT, FY_SECCOMP_NETWORKED_TEST, false, false, {0}, 0},
    {PTHREAD_ONCE_INIT, FY_SECCOMP_NETWORKED_TEST, true, false, {0}, 0},
    {PTHREAD_ONCE_INIT, 0, false, true, {0}, 0},
};

#define BPF_ONCE(i) \
    static void bpf_once_##i(void) { \
        struct bpf_cache *b = &bpf_cache[i]; \
        b->rc = b->init ? fy_seccomp_compile_init(&b->prog, NULL) : fy_seccomp_compile(b->cls, b->notify, &b->prog, NULL); \
    }
BPF_ONCE(0) BPF_ONCE(1) BPF_ONCE(2) BPF_ONCE(3) BPF_ONCE(4)
static void (*const bpf_once_fn[])(void) = {bpf_once_0, bpf_once_1, bpf_once_2, bpf_once_3, bpf_once_4};

static const struct seccomp_program *cached_program(uint32_t cls, bool notify, bool init, fy_error **reterr) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(bpf_cache); i++) {
        struct bpf_cache *b = &bpf_cache[i];
        if (b->init != init || (!init && (b->cls != cls || b->notify != notify)))
            continue;
        pthread_once(&b->once, bpf_once_fn[i]);
        if (b->rc < 0) {
            /* Compile again to give the caller the error detail. */
            struct seccomp_program tmp = {0};
            int r = init ? fy_seccomp_compile_init(&tmp, reterr) : fy_seccomp_compile(cls, notify, &tmp, reterr);
            fy_seccomp_program_free(&tmp);
            if (r >= 0)
                err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL, "seccomp compilation failed once");
            return NULL;
        }
        return &b->prog;
    }
    err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SECCOMP, 0, NULL, "unknown seccomp class %u", cls);
    return NULL;
}

/* ---- allocation: every piece of the plan is tracked and freed together ---- */

static void *plan_keep(struct linux_plan *pl, void *p) {
    if (!p)
        return NULL;
    if (pl->nallocs == pl->capallocs) {
        size_t cap = pl->capallocs ? pl->capallocs * 2 : 64;
        void **n = realloc(pl->allocs, cap * sizeof(void *));
        if (!n) {
            free(p);
            return NULL;
        }
        pl->allocs = n;
        pl->capallocs = cap;
    }
    pl->allocs[pl->nallocs++] = p;
    return p;
}

static char *plan_str(struct linux_plan *pl, const char *s) { return plan_keep(pl, s ? strdup(s) : NULL); }

static char *plan_fmt(struct linux_plan *pl, const char *fmt, ...) FY_PRINTF(2, 3);
static char *plan_fmt(struct linux_plan *pl, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return plan_keep(pl, s);
}

void linux_plan_free(struct linux_plan *pl) {
    if (!pl)
        return;
    for (size_t i = 0; i < pl->nallocs; i++)
        free(pl->allocs[i]);
    free(pl->allocs);
    free(pl->ops);
    free(pl->ll_rules);
    free(pl->envp);
    free(pl->isolation_json);
    free(pl->cgroup_json);
    free(pl->describe_json);
    free(pl->contract_id);
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
    if (!pl->ll_rules[pl->nll].path)
        b->oom = true;
    pl->nll++;
}

/* One host path of the read-only runtime: a symlink (Debian's merged /usr)
 * is recreated as a symlink; a directory or a file is bound read-only; a
 * missing one is listed in skipped (when given) and left out. */
static int add_host_path(struct builder *b, const char *path, json_t *skipped, fy_error **reterr) {
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (skipped)
            json_array_append_new(skipped, json_string(path));
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n < 0) {
            int e = errno;
            return err_set(reterr, err_from_errno(e), FY_STEP_PREPARE, e, NULL, "readlink %s: %s", path,
                           strerror(e));
        }
        target[n] = '\0';
        add_symlink(b, path, target);
    } else if (S_ISDIR(st.st_mode)) {
        add_bind(b, path, path, MF_READONLY);
        add_rule(b, path, LL_RO);
    } else if (S_ISREG(st.st_mode)) {
        add_bind(b, path, path, MF_READONLY | MF_FILE);
        add_rule(b, path, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE);
    } else {
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.filesystem.runtime_paths",
                       "runtime path %s is neither a directory, a file nor a symlink", path);
    }
    return 0;
}

/* The policy's runtime paths (the isolation report lists the missing ones). */
static int add_runtime_paths(struct builder *b, const fy_policy *p, json_t *skipped, fy_error **reterr) {
    VEC_EACH(&p->runtime_paths, char *, it) {
        int r = add_host_path(b, *it, skipped, reterr);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Public, static host databases libc reads: service and protocol names
 * (getservbyname, getaddrinfo with a service name, getprotobyname). Copied
 * into the sandbox's /etc as of fy_prepare: a file made in the new root
 * costs less than a bind mount of one. */
static const char *const etc_public[] = {"/etc/services", "/etc/protocols"};
#define ETC_PUBLIC_MAX (1u << 20)

/* A host text file (a regular one, at most max bytes), or NULL. */
static char *read_text(const char *path, size_t max) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= max &&
        (buf = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        ssize_t n;
        while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) != 0) {
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                break;
            got += (size_t)n;
        }
        buf[got] = '\0';
    }
    close(fd);
    return buf;
}

/* Where a workload may reach a network: the CA certificates its TLS clients
 * verify servers with (Debian and derivatives, Fedora and RHEL, Arch,
 * Alpine and the BSD-style single bundle). Certificates only: never
 * /etc/ssl/private or any other part of /etc/ssl and /etc/pki. */
static const char *const etc_trust[] = {
    "/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/pki/tls/certs", "/etc/pki/tls/cert.pem",
    "/etc/pki/ca-trust/extracted", "/etc/ca-certificates/extracted",
};

/* Whether the host has path as a directory, a file or a symlink (*st). */
static bool host_has(const char *path, struct stat *st) {
    return lstat(path, st) == 0 && (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode) || S_ISLNK(st->st_mode));
}

/* Both, in the new root (missing ones are left out quietly: they are not
 * the policy's). At the process level the host's own files are read, and
 * compile_process_mode names them in Landlock rules instead. */
static int add_etc_extras(struct builder *b, const fy_policy *p, fy_error **reterr) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(etc_public); i++) {
        char *text = read_text(etc_public[i], ETC_PUBLIC_MAX);
        if (text)
            add_file(b, etc_public[i], text, 0644);
        free(text);
    }
    for (size_t i = 0; p->net_mode != FY_NET_DENY && i < FY_ARRAY_SIZE(etc_trust); i++) {
        struct stat st;
        int r = host_has(etc_trust[i], &st) ? add_host_path(b, etc_trust[i], NULL, reterr) : 0;
        if (r < 0)
            return r;
    }
    return 0;
}

static const char *const proc_masked[] = {
    "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug", "/proc/kallsyms", "/proc/kmsg", "/proc/config.gz", "/proc/sysrq-trigger",
    "/proc/acpi", "/proc/asound", "/proc/scsi", "/proc/driver",
    /* The host's disks, swap devices, interrupt counts (a keystroke and
     * network timing channel) and kernel command line (cloud hosts put
     * tokens there): none of the workload's business. */
    "/proc/partitions", "/proc/diskstats", "/proc/swaps", "/proc/interrupts", "/proc/cmdline",
};
static const char *const proc_readonly[] = {"/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs"};
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom"};

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

static char *passwd_text(const struct linux_plan *pl) {
    char *s = NULL;
    if (pl->work_uid == 0) {
        if (asprintf(&s, "root:x:0:0:root:/home/forgeyard:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n") < 0)
            return NULL;
    } else if (asprintf(&s,
                        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                        "forgeyard:x:%u:%u:forgeyard:/home/forgeyard:/bin/sh\n"
                        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                        pl->work_uid, pl->work_gid) < 0)
        return NULL;
    return s;
}

static char *group_text(const struct linux_plan *pl) {
    char *s = NULL;
    if (pl->work_gid == 0) {
        if (asprintf(&s, "root:x:0:\nnogroup:x:65534:\n") < 0)
            return NULL;
    } else if (asprintf(&s, "root:x:0:\nforgeyard:x:%u:\nnogroup:x:65534:\n", pl->work_gid) < 0)
        return NULL;
    return s;
}

static int compile_ids(struct linux_plan *pl, const fy_prepared *pr) {
    const fy_policy *p = pr->policy;
    bool fake_root = p->user == FY_USER_FAKE_ROOT;
    pl->as_root = pr->caps->host.is_root;
    pl->work_uid = pl->work_gid = fake_root ? 0 : 1000;
    if (pl->as_root) {
        /* Never host root: the sandbox's pid 1 and the workload get ids from
         * the unprivileged range, distinct ones when the range allows. */
        pl->drop_groups = true;
        if (!fake_root && p->id_count >= 2) {
            pl->setup_uid = pl->setup_gid = 0;
            snprintf(pl->uid_map, sizeof(pl->uid_map), "0 %u 1\n1000 %u 1\n", p->id_first, p->id_first + 1);
        } else {
            pl->setup_uid = pl->setup_gid = pl->work_uid;
            snprintf(pl->uid_map, sizeof(pl->uid_map), "%u %u 1\n", pl->work_uid, p->id_first);
        }
        memcpy(pl->gid_map, pl->uid_map, sizeof(pl->gid_map));
    } else {
        /* Rootless: only the caller's own ids can be mapped. */
        pl->setup_uid = pl->setup_gid = pl->work_uid;
        snprintf(pl->uid_map, sizeof(pl->uid_map), "%u %u 1\n", pl->work_uid, pr->caps->host.uid);
        snprintf(pl->gid_map, sizeof(pl->gid_map), "%u %u 1\n", pl->work_gid, pr->caps->host.gid);
    }
    return 0;
}

static int compile_env(struct linux_plan *pl, const fy_prepared *pr) {
    static const char *const defaults[][2] = {
        {"HOME", "/home/forgeyard"}, {"TMPDIR", "/tmp"}, {"USER", NULL}, {"LOGNAME", NULL},
    };
    size_t n = pr->env.n + FY_ARRAY_SIZE(defaults) + 3;
    pl->envp = calloc(n, sizeof(char *));
    if (!pl->envp)
        return FY_E_NOMEM;
    const char *user = pl->work_uid == 0 ? "root" : "forgeyard";
    VEC_EACH(&pr->env, struct pol_env, e) {
        if (!(pl->envp[pl->nenv++] = plan_fmt(pl, "%s=%s", e->name, e->value)))
            return FY_E_NOMEM;
        if (strcmp(e->name, "PATH") == 0)
            pl->path_search = e->value;
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(defaults); i++) {
        bool set = false;
        VEC_EACH(&pr->env, struct pol_env, e) set = set || strcmp(e->name, defaults[i][0]) == 0;
        if (set)
            continue;
        if (!(pl->envp[pl->nenv++] = plan_fmt(pl, "%s=%s", defaults[i][0], defaults[i][1] ? defaults[i][1] : user)))
            return FY_E_NOMEM;
    }
    if (!pl->path_search)
        pl->path_search = "/usr/local/bin:/usr/bin:/bin";
    /* The limits, visible to build tools that size their parallelism. */
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

/* Resources: which cgroup hierarchy enforces which negotiated limit. */
static int compile_cgroups(struct linux_plan *pl, const fy_prepared *pr) {
    const fy_policy *p = pr->policy;
    pl->cg.fault_step = p->fault_step;
    pl->cg.fault_nth = p->fault_nth;
    const fy_caps *c = pr->caps;
    const struct caps_host *h = &c->host;
    struct cg_plan *cg = &pl->cg;
    const struct selection *sel = &pr->sel;
    cg->memory = p->limit[FY_LIMIT_MEMORY];
    cg->swap = p->limit[FY_LIMIT_MEMORY_SWAP] == FY_UNLIMITED ? 0 : p->limit[FY_LIMIT_MEMORY_SWAP];
    cg->pids = p->limit[FY_LIMIT_PIDS];
    cg->cpu_millis = p->limit[FY_LIMIT_CPU_MILLIS];
    cg->io_bps = p->limit[FY_LIMIT_IO_BPS];
    static const struct { uint32_t control, cap, limit; int ctl; } map[] = {
        {FY_CONTROL_MEMORY_LIMIT, FY_CAP_CGROUP_MEMORY, FY_LIMIT_MEMORY, CG_MEMORY},
        {FY_CONTROL_PIDS_LIMIT, FY_CAP_CGROUP_PIDS, FY_LIMIT_PIDS, CG_PIDS},
        {FY_CONTROL_CPU_LIMIT, FY_CAP_CGROUP_CPU, FY_LIMIT_CPU_MILLIS, CG_CPU},
        {FY_CONTROL_IO_LIMIT, FY_CAP_CGROUP_IO, FY_LIMIT_IO_BPS, CG_BLKIO},
    };
    uint32_t *versions[] = {&cg->version_memory, &cg->version_pids, &cg->version_cpu, &cg->version_io};
    const char *v1dirs[] = {h->cg1_memory, h->cg1_pids, h->cg1_cpu, h->cg1_blkio};
    /* io limits apply to the block device behind the workspace, when there is one. */
    const char *ws = p->build ? p->build : p->output ? p->output : p->source;
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
        if (sel->control[map[i].control] != FY_CONTROL_STATE_ENFORCED || p->limit[map[i].limit] == FY_UNLIMITED)
            continue;
        if (map[i].ctl == CG_BLKIO && !io_dev) {
            if (p->control[FY_CONTROL_IO_LIMIT] == FY_MODE_REQUIRE)
                return FY_E_UNSUPPORTED;
            continue; /* preferred: nothing to throttle (tmpfs workspace); reported below */
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
    if (h->cg2_dir && !p->test_legacy_cgroups &&
        (caps_present(c, FY_CAP_CGROUP_V2) || caps_present(c, FY_CAP_CGROUP_KILL))) {
        cg->v2_parent = h->cg2_dir;
        cg->v2_group = caps_present(c, FY_CAP_CGROUP_KILL);
    }
    if (cg->v2_limits && !cg->v2_parent)
        cg->v2_limits = false;
    if (any_v1) {
        /* CPU usage: a v2 cgroup has cpu.stat without any controller. */
        if (h->cg1_cpuacct && !cg->v2_parent)
            cg->v1_parent[CG_CPUACCT] = h->cg1_cpuacct;
        if (h->cg1_freezer && !cg->v2_group)
            cg->v1_parent[CG_FREEZER] = h->cg1_freezer;
        cg->v1_memsw = h->cg1_memsw;
    }
    cg->enabled = any_v1 || cg->v2_limits || cg->v2_group;
    /* No pids cgroup: RLIMIT_NPROC still bounds a fork bomb, because the
     * kernel counts it per user namespace (ucounts, 5.14+) and every
     * sandbox has its own. Weaker: no RESOURCE_EXCEEDED, fork just fails
     * with EAGAIN. Only where the workload has its own user namespace: at
     * the process level the count would be the host user's. */
    unsigned kmaj = 0, kmin = 0;
    if (h->kernel_release && sscanf(h->kernel_release, "%u.%u", &kmaj, &kmin) != 2)
        kmaj = kmin = 0;
    bool nproc = !cg->version_pids && cg->pids != FY_UNLIMITED && sel->backend == &linux_namespace_backend &&
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
        json_object_set_new(o, names[i], *versions[i] ? json_sprintf("cgroup v%u", *versions[i])
                                         : nproc && map[i].ctl == CG_PIDS
                                             ? json_string("rlimit nproc in the sandbox's user namespace (fork fails; "
                                                           "no resource-exceeded outcome)")
                                         : json_string(sel->control[map[i].control] == FY_CONTROL_STATE_DROPPED
                                                           ? "not enforced (dropped)" : "not enforced"));
    json_object_set_new(o, "tree", json_string(cg->v2_group ? "cgroup v2 (clone-into-cgroup, cgroup.kill)"
                                                 : any_v1 ? "cgroup v1" : "pid namespace / subreaper only"));
    json_object_set_new(o, "rlimits", json_string(nproc ? "nofile, core, fsize, stack, nproc" : "nofile, core, fsize, stack"));
    pl->cgroup_json = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return pl->cgroup_json ? 0 : FY_E_NOMEM;
}

static int compile_isolation_json(struct linux_plan *pl, const fy_prepared *pr, json_t *skipped) {
    json_t *o = json_object(), *ns = json_array();
    if (!o || !ns) {
        json_decref(o);
        json_decref(ns);
        json_decref(skipped);
        return FY_E_NOMEM;
    }
    static const struct { uint64_t flag; const char *name; } nss[] = {
        {CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mount"}, {CLONE_NEWPID, "pid"}, {CLONE_NEWIPC, "ipc"},
        {CLONE_NEWUTS, "uts"}, {CLONE_NEWCGROUP, "cgroup"}, {CLONE_NEWNET, "net"},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(nss); i++)
        if (pl->clone_flags & nss[i].flag)
            json_array_append_new(ns, json_string(nss[i].name));
    json_object_set_new(o, "namespaces", ns);
    json_object_set_new(o, "mode", json_string(pl->as_root ? "root" : "rootless"));
    json_object_set_new(o, "uid_map", pl->process_mode ? json_null() : json_string(pl->uid_map));
    json_object_set_new(o, "gid_map", pl->process_mode ? json_null() : json_string(pl->gid_map));
    json_object_set_new(o, "workload_uid", json_integer(pl->work_uid));
    json_object_set_new(o, "user", json_string(pl->work_uid == 0 ? "fake-root" : "forgeyard"));
    json_object_set_new(o, "network", json_string(pl->use_netns ? "deny: own network namespace, loopback only"
                                                                : "host network (no network namespace)"));
    json_object_set_new(o, "filesystem", json_string(pl->process_mode
                                                         ? (pl->ll_handled ? "host view, confined by Landlock to the declared paths"
                                                                           : "host view, unconfined (no Landlock)")
                                                         : "private: fresh tmpfs root with the declared paths"));
    json_object_set_new(o, "terminals", json_string(pr->policy->pty == FY_DEVICES_PRIVATE
                                                        ? "private: a devpts instance of the sandbox's own"
                                                        : "none"));
    json_t *sc = json_null();
    if (pl->bpf)
        sc = json_pack("{sssiss}", "profile", pl->seccomp_name, "version", (json_int_t)pl->seccomp_version,
                       "violations", pl->seccomp_notify ? "reported (user notification)" : "kill (SIGSYS)");
    json_object_set_new(o, "seccomp", sc);
    json_object_set_new(o, "landlock_abi", json_integer(pl->ll_handled ? pl->ll_abi : 0));
    json_object_set_new(o, "capabilities",
                        json_string(pl->process_mode && !pl->as_root
                                        ? "none (an unprivileged caller has none; ambient cleared, no_new_privs)"
                                        : "none (bounding, ambient, inheritable dropped; securebits locked)"));
    json_object_set_new(o, "no_new_privs", json_true());
    /* How the sandbox's pid 1 came to be: per attempt (lx finish() says
     * when it was the fallback). */
    json_object_set_new(o, "init", json_string(LX_INIT_EXEC));
    json_object_set_new(o, "runtime_paths_skipped", skipped);
    json_object_set_new(o, "impure", json_boolean(pr->impure));
    pl->isolation_json = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return pl->isolation_json ? 0 : FY_E_NOMEM;
}

/* Publishes s in *slot, a string of an immutable plan built on first use,
 * unless another thread was first: the one that stays (s freed if not it). */
static const char *publish_once(char *const *slot, char *s) {
    char *expected = NULL;
    if (__atomic_compare_exchange_n((char **)slot, &expected, s, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s;
    free(s);
    return expected;
}

const char *linux_plan_describe(const void *plan) {
    const struct linux_plan *pl = plan;
    if (!pl->describe_json) {
        /* Built lazily once; the plan is otherwise immutable. */
        json_t *o = json_pack("{s:o,s:o,s:s}", "isolation", json_loads(pl->isolation_json, 0, NULL), "limits",
                              json_loads(pl->cgroup_json ? pl->cgroup_json : "{}", 0, NULL), "contract_id",
                              linux_plan_contract_id(pl));
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(o);
        if (s)
            publish_once(&pl->describe_json, s);
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
};
static const char *const process_dev[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};

static int compile_process_mode(struct linux_plan *pl, struct builder *b, const fy_prepared *pr, json_t *skipped) {
    const fy_policy *p = pr->policy;
    uint64_t rw = ll_handled_for(pl->ll_abi) & ~LL_FS_IOCTL_DEV;
    pl->process_mode = true;
    pl->clone_flags = 0;
    pl->use_netns = false;
    pl->hostname = NULL; /* the host's UTS namespace is not ours to rename */
    /* Never host root: as root the workload gets an unprivileged host uid. */
    pl->as_root = pr->caps->host.is_root;
    if (pl->as_root) {
        pl->work_uid = p->id_count >= 2 ? p->id_first + 1 : p->id_first;
        pl->work_gid = pl->work_uid;
        pl->drop_groups = true;
    } else {
        pl->work_uid = pr->caps->host.uid;
        pl->work_gid = pr->caps->host.gid;
    }
    VEC_EACH(&p->runtime_paths, char *, it) {
        struct stat st;
        if (lstat(*it, &st) < 0)
            json_array_append_new(skipped, json_string(*it));
        else
            add_rule(b, *it, S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) ? LL_RO
                                                                          : LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE);
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(process_etc); i++)
        add_rule(b, process_etc[i], LANDLOCK_ACCESS_FS_READ_FILE);
    if (p->dns == FY_DNS_HOST)
        add_rule(b, "/etc/resolv.conf", LANDLOCK_ACCESS_FS_READ_FILE);
    /* CA certificates where the network is not denied (etc_trust; a rule
     * names what it resolves to when init applies it, and a file keeps
     * only a file's rights of LL_RO). */
    for (size_t i = 0; p->net_mode != FY_NET_DENY && i < FY_ARRAY_SIZE(etc_trust); i++) {
        struct stat st;
        if (host_has(etc_trust[i], &st))
            add_rule(b, etc_trust[i], S_ISREG(st.st_mode) ? LANDLOCK_ACCESS_FS_READ_FILE : LL_RO);
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(process_dev); i++)
        add_rule(b, process_dev[i], LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_TRUNCATE);
    add_rule(b, "/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_WRITE_FILE);
    if (p->source)
        add_rule(b, p->source, p->source_writable ? rw : LL_RO);
    if (p->build)
        add_rule(b, p->build, rw);
    if (p->output)
        add_rule(b, p->output, rw);
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) add_rule(b, t->host, LL_RO);
    VEC_EACH(&p->binds, struct pol_bind, bd) add_rule(b, bd->host, (bd->flags & FY_BIND_WRITABLE) ? rw : LL_RO);
    /* The attempt directory's rule is added per start (its name is new
     * each time): see linux-spawn.c. The working directory is the host path
     * behind the policy's sandbox path; NULL: the attempt directory. */
    const char *wd = p->workdir ? p->workdir : "/work/build";
    const struct { const char *sandbox, *host; } roots[] = {
        {"/work/source", p->source}, {"/work/build", p->build}, {"/work/output", p->output},
    };
    pl->workdir = NULL;
    for (size_t i = 0; i < FY_ARRAY_SIZE(roots) && !pl->workdir; i++) {
        size_t n = strlen(roots[i].sandbox);
        if (roots[i].host && strncmp(wd, roots[i].sandbox, n) == 0 && (wd[n] == '/' || !wd[n]))
            pl->workdir = plan_fmt(pl, "%s%s", roots[i].host, wd + n);
    }
    VEC_EACH(&p->binds, struct pol_bind, bd) {
        size_t n = strlen(bd->target);
        if (!pl->workdir && strncmp(wd, bd->target, n) == 0 && (wd[n] == '/' || !wd[n]))
            pl->workdir = plan_fmt(pl, "%s%s", bd->host, wd + n);
    }
    return b->oom ? FY_E_NOMEM : 0;
}

/* The environment contract: what an attempt of this plan runs in. Its id is
 * stable for the same policy on the same host, and changes with anything
 * that changes the isolation (backend, library, kernel, namespaces and id
 * mode, seccomp profile and version, Landlock ABI, limits and how they are
 * enforced, the canonical policy). Computed on first use, not by
 * fy_prepare: hashing the canonical policy was a third of a prepare, and
 * fy_start asks for it once the sandbox is on its way (the result needs it). */
const char *linux_plan_contract_id(const struct linux_plan *pl) {
    char *have = __atomic_load_n(&pl->contract_id, __ATOMIC_ACQUIRE);
    if (have)
        return have;
    const fy_prepared *pr = pl->owner;
    char *policy = pr ? policy_to_json(pr->policy) : NULL;
    char *text = policy ? fy_asprintf("forgeyard-contract 1\nbackend %s\nlibrary %s\nkernel %s\nisolation %s\n"
                                      "limits %s\npolicy %s\n",
                                      pr->sel.backend->name, FY_VERSION_STRING,
                                      pr->caps->host.kernel_release ? pr->caps->host.kernel_release : "unknown",
                                      pl->isolation_json, pl->cgroup_json ? pl->cgroup_json : "{}", policy)
                        : NULL;
    free(policy);
    char *hex = text ? malloc(crypto_hash_sha256_BYTES * 2 + 1) : NULL;
    if (!hex || sodium_init() < 0) {
        free(text);
        free(hex);
        return "";
    }
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
    free(text);
    sodium_bin2hex(hex, crypto_hash_sha256_BYTES * 2 + 1, h, sizeof(h));
    return publish_once(&pl->contract_id, hex);
}

int linux_plan_compile(const fy_prepared *pr, struct linux_plan **ret, fy_error **reterr) {
    const fy_policy *p = pr->policy;
    const fy_caps *c = pr->caps;
    const struct selection *sel = &pr->sel;
    if (p->net_mode == FY_NET_RESTRICTED || p->net_mode == FY_NET_FETCH_ONLY)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                       "network mode %s is not enforced by this version of the Linux backend; use deny or allow",
                       net_mode_name(p->net_mode));
    /* Disk and file-count quotas apply to the writable host-backed
     * directories (tmpfs sizes bound the rest); with none, nothing would
     * enforce them: refuse rather than pretend. */
    bool any_host_rw = p->build || p->output || (p->source && p->source_writable);
    VEC_EACH(&p->binds, struct pol_bind, bd) any_host_rw = any_host_rw || (bd->flags & FY_BIND_WRITABLE);
    if ((p->limit[FY_LIMIT_DISK] != FY_UNLIMITED || p->limit[FY_LIMIT_FILES] != FY_UNLIMITED) && !any_host_rw)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0,
                       p->limit[FY_LIMIT_DISK] != FY_UNLIMITED ? "$.resources.disk" : "$.resources.files",
                       "a disk or file quota needs a writable host directory to apply to (build, output or a writable "
                       "bind); tmpfs sizes bound everything else");
    struct linux_plan *pl = calloc(1, sizeof(*pl));
    if (!pl)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    struct builder b = {.pl = pl};
    int r = 0;
    json_t *skipped = json_array();
    if (!skipped)
        goto oom;

    /* Namespaces: the negotiated controls decide. */
    pl->clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;
    if (sel->control[FY_CONTROL_IPCNS] == FY_CONTROL_STATE_ENFORCED)
        pl->clone_flags |= CLONE_NEWIPC;
    if (sel->control[FY_CONTROL_UTSNS] == FY_CONTROL_STATE_ENFORCED)
        pl->clone_flags |= CLONE_NEWUTS;
    if (sel->control[FY_CONTROL_CGROUPNS] == FY_CONTROL_STATE_ENFORCED)
        pl->clone_flags |= CLONE_NEWCGROUP;
    if (p->net_mode == FY_NET_DENY && sel->backend == &linux_namespace_backend) {
        if (!caps_present(c, FY_CAP_NETNS)) {
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, NULL,
                        "network mode deny needs a network namespace: %s", fy_caps_reason(c, FY_CAP_NETNS));
            goto fail;
        }
        pl->clone_flags |= CLONE_NEWNET;
        pl->use_netns = true;
    }
    pl->hostname = (pl->clone_flags & CLONE_NEWUTS) ? plan_str(pl, p->hostname ? p->hostname : "forgeyard") : NULL;
    compile_ids(pl, pr);

    /* Landlock: the same declared paths, as defence in depth. */
    if (sel->control[FY_CONTROL_LANDLOCK] == FY_CONTROL_STATE_ENFORCED) {
        int64_t abi = 0;
        fy_caps_value(c, FY_CAP_LANDLOCK, &abi);
        pl->ll_abi = (uint32_t)abi;
        pl->ll_handled = ll_handled_for(pl->ll_abi);
        if (pl->ll_abi >= 6)
            pl->ll_scoped = 1 /* ABSTRACT_UNIX_SOCKET */ | 2 /* SIGNAL */;
    }
    if (sel->backend == &linux_process_backend) {
        if (p->pty == FY_DEVICES_PRIVATE) {
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_DEV, 0, "$.devices.pty",
                        "pseudo-terminals of the sandbox's own need a mount namespace, which the process level "
                        "does not have");
            goto fail;
        }
        if (p->net_mode != FY_NET_ALLOW) {
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                        "network mode %s needs a network namespace, which the process level does not have",
                        net_mode_name(p->net_mode));
            goto fail;
        }
        if ((r = compile_process_mode(pl, &b, pr, skipped)) < 0)
            goto oom;
        goto hardening;
    }

    /* ---- the filesystem, in mount order (parents before children) ---- */
    char *opt;
    snprintf(pl->tmpfs_root_opts, sizeof(pl->tmpfs_root_opts), "mode=0755,size=16m,nr_inodes=16384");
    add_rule(&b, "/", LANDLOCK_ACCESS_FS_READ_DIR);
    /* /etc: synthetic identity files, then approved runtime paths over it. */
    char *pw = passwd_text(pl), *gr = group_text(pl);
    if (!plan_keep(pl, pw) || !plan_keep(pl, gr))
        goto oom;
    add_file(&b, "/etc/passwd", pw, 0644);
    add_file(&b, "/etc/group", gr, 0644);
    char *hosts = plan_fmt(pl, "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost\n",
                           p->hostname ? p->hostname : "forgeyard");
    if (!hosts)
        goto oom;
    add_file(&b, "/etc/hosts", hosts, 0644);
    add_file(&b, "/etc/hostname", p->hostname ? p->hostname : "forgeyard", 0644);
    add_file(&b, "/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", 0644);
    if (p->dns == FY_DNS_HOST)
        add_bind(&b, "/etc/resolv.conf", "/etc/resolv.conf", MF_READONLY | MF_FILE | MF_OPTIONAL);
    if ((r = add_etc_extras(&b, p, reterr)) < 0 || (r = add_runtime_paths(&b, p, skipped, reterr)) < 0)
        goto fail;
    add_rule(&b, "/etc", LL_RO);

    /* /dev: a minimal tmpfs with the harmless nodes bound from the host. */
    add_tmpfs(&b, "/dev", "mode=0755,size=64k,nr_inodes=256", MF_NOEXEC);
    for (size_t i = 0; i < FY_ARRAY_SIZE(dev_nodes); i++) {
        char host[32], dst[32];
        snprintf(host, sizeof(host), "/dev/%s", dev_nodes[i]);
        snprintf(dst, sizeof(dst), "/dev/%s", dev_nodes[i]);
        add_bind(&b, host, dst, MF_DEVICE | MF_FILE);
        if (b.oom)
            goto oom;
        pl->ops[pl->nops - 1].step = FY_STEP_DEV;
    }
    add_symlink(&b, "/dev/fd", "/proc/self/fd");
    add_symlink(&b, "/dev/stdin", "/proc/self/fd/0");
    add_symlink(&b, "/dev/stdout", "/proc/self/fd/1");
    add_symlink(&b, "/dev/stderr", "/proc/self/fd/2");
    if (!(opt = plan_fmt(pl, "mode=1777,size=%llu", (unsigned long long)p->limit[FY_LIMIT_SHM_SIZE])))
        goto oom;
    add_tmpfs(&b, "/dev/shm", opt, 0);
    if (p->pty == FY_DEVICES_PRIVATE) {
        /* Pseudo-terminals of the sandbox's own: a new devpts instance
         * (never the host's), whose ptmx anyone may open; each terminal
         * belongs to the process that made it. */
        struct mount_op *pts = add_op(&b, MK_DEVPTS, 0, "/dev/pts");
        if (pts) {
            pts->step = FY_STEP_DEV;
            if (!(pts->data = plan_str(pl, "newinstance,ptmxmode=0666,mode=0620")))
                b.oom = true;
        }
        add_symlink(&b, "/dev/ptmx", "pts/ptmx");
        add_rule(&b, "/dev/pts", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                     LANDLOCK_ACCESS_FS_READ_DIR | LL_FS_IOCTL_DEV);
    }
    VEC_EACH(&p->devices, struct pol_device, d) {
        add_bind(&b, d->path, d->path, MF_DEVICE | MF_FILE | (d->writable ? 0 : MF_READONLY));
        add_rule(&b, d->path, LANDLOCK_ACCESS_FS_READ_FILE | (d->writable ? LANDLOCK_ACCESS_FS_WRITE_FILE : 0) |
                                  LL_FS_IOCTL_DEV);
    }
    add_rule(&b, "/dev", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                             LL_FS_TRUNCATE);
    add_rule(&b, "/dev/shm", ll_handled_for(pl->ll_abi) & ~LL_FS_IOCTL_DEV);

    /* /proc: new instance for the pid namespace, sensitive parts masked. */
    struct mount_op *op = add_op(&b, MK_PROC, 0, "/proc");
    if (op)
        op->step = FY_STEP_PROC;
    for (size_t i = 0; i < FY_ARRAY_SIZE(proc_masked); i++)
        if ((op = add_op(&b, MK_MASK, MF_OPTIONAL, proc_masked[i])))
            op->step = FY_STEP_PROC;
    for (size_t i = 0; i < FY_ARRAY_SIZE(proc_readonly); i++)
        if ((op = add_op(&b, MK_READONLY, MF_OPTIONAL, proc_readonly[i])))
            op->step = FY_STEP_PROC;
    add_rule(&b, "/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_WRITE_FILE);

    /* Private scratch. */
    uint64_t rw = ll_handled_for(pl->ll_abi) & ~LL_FS_IOCTL_DEV;
    if (!(opt = plan_fmt(pl, "mode=1777,size=%llu", (unsigned long long)p->limit[FY_LIMIT_TMP_SIZE])))
        goto oom;
    add_tmpfs(&b, "/tmp", opt, 0);
    add_rule(&b, "/tmp", rw);
    if (!(opt = plan_fmt(pl, "mode=0700,uid=%u,gid=%u,size=%llu", pl->work_uid, pl->work_gid,
                         (unsigned long long)p->limit[FY_LIMIT_HOME_SIZE])))
        goto oom;
    add_tmpfs(&b, "/home/forgeyard", opt, 0);
    add_rule(&b, "/home/forgeyard", rw);
    char *work_tmpfs = plan_fmt(pl, "mode=0755,uid=%u,gid=%u,size=%llu", pl->work_uid, pl->work_gid,
                                (unsigned long long)p->limit[FY_LIMIT_WORK_TMP_SIZE]);
    if (!work_tmpfs)
        goto oom;
    add_tmpfs(&b, "/work/tmp", work_tmpfs, 0);
    add_rule(&b, "/work/tmp", rw);

    /* The workspace: host directories, opened without following symlinks. */
    if (p->source) {
        add_bind(&b, p->source, "/work/source", MF_NOFOLLOW | MF_DIR | (p->source_writable ? 0 : MF_READONLY));
        add_rule(&b, "/work/source", p->source_writable ? rw : LL_RO);
    }
    if (p->build)
        add_bind(&b, p->build, "/work/build", MF_NOFOLLOW | MF_DIR);
    else
        add_tmpfs(&b, "/work/build", work_tmpfs, 0);
    add_rule(&b, "/work/build", rw);
    if (p->output)
        add_bind(&b, p->output, "/work/output", MF_NOFOLLOW | MF_DIR);
    else
        add_tmpfs(&b, "/work/output", work_tmpfs, 0);
    add_rule(&b, "/work/output", rw);
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) {
        char *dst = plan_fmt(pl, "/toolchains/%s", t->name);
        if (!dst)
            goto oom;
        add_bind(&b, t->host, dst, MF_NOFOLLOW | MF_DIR | MF_READONLY);
        add_rule(&b, dst, LL_RO);
    }
    VEC_EACH(&p->binds, struct pol_bind, bd) {
        bool w = bd->flags & FY_BIND_WRITABLE;
        add_bind(&b, bd->host, bd->target,
                 MF_NOFOLLOW | (w ? 0 : MF_READONLY) | ((bd->flags & FY_BIND_OPTIONAL) ? MF_OPTIONAL : 0));
        add_rule(&b, bd->target, w ? rw : LL_RO);
    }
    /* /run/secrets is written per start (linux-child.c). */
    add_rule(&b, "/run", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
    if (b.oom)
        goto oom;
    pl->workdir = plan_str(pl, p->workdir ? p->workdir : "/work/build");

hardening:
    /* Seccomp. */
    if (sel->control[FY_CONTROL_SECCOMP] == FY_CONTROL_STATE_ENFORCED) {
        bool notify = caps_present(c, FY_CAP_SECCOMP_NOTIFY);
        const struct seccomp_program *prog = cached_program(p->seccomp_class, notify, false, reterr);
        const struct seccomp_program *init = prog ? cached_program(0, false, true, reterr) : NULL;
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
    }

    /* rlimits (always). */
    add_rlimit(pl, RLIMIT_NOFILE, p->limit[FY_LIMIT_NOFILE]);
    add_rlimit(pl, RLIMIT_CORE, p->limit[FY_LIMIT_CORE]);
    add_rlimit(pl, RLIMIT_FSIZE, p->limit[FY_LIMIT_FSIZE]);
    add_rlimit(pl, RLIMIT_STACK, p->limit[FY_LIMIT_STACK]);

    /* The disk watchdog's directories. */
    pl->disk_quota = p->limit[FY_LIMIT_DISK];
    pl->files_quota = p->limit[FY_LIMIT_FILES];
    if (pl->disk_quota != FY_UNLIMITED || pl->files_quota != FY_UNLIMITED) {
        if (p->build)
            pl->watch_dirs[pl->nwatch++] = p->build;
        if (p->output)
            pl->watch_dirs[pl->nwatch++] = p->output;
        if (p->source && p->source_writable)
            pl->watch_dirs[pl->nwatch++] = p->source;
        VEC_EACH(&p->binds, struct pol_bind, bd) if (bd->flags & FY_BIND_WRITABLE && pl->nwatch < FY_ARRAY_SIZE(pl->watch_dirs))
            pl->watch_dirs[pl->nwatch++] = bd->host;
    }
    pl->argv = pr->argv;
    pl->fault_step = p->fault_step;
    pl->fault_nth = p->fault_nth;
    pl->delay_stage = p->delay_stage;
    pl->delay_usec = p->delay_usec;
    if ((r = compile_cgroups(pl, pr)) == FY_E_UNSUPPORTED) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_CGROUP_LIMIT, 0, "$.isolation.controls.io-limit",
                    "io-limit is required, but no block device is behind the workspace (build, output or source)");
        goto fail;
    }
    if (r < 0 || compile_env(pl, pr) < 0)
        goto oom;
    if (compile_isolation_json(pl, pr, skipped) < 0) {
        skipped = NULL;
        goto oom;
    }
    pl->owner = pr;
    *ret = pl;
    return 0;
oom:
    r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
fail:
    json_decref(skipped);
    linux_plan_free(pl);
    return r;
}
