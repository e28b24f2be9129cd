/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-attempt cgroups, v2 and the v1 fallback. Only children of our own
 * cgroup (or of a subtree the host program delegated) are ever created,
 * written and removed; our own cgroup and its ancestors are never touched. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "helper/fyh-proto.h"
#include "linux-cgroup.h"
#include "linux-helper.h"
#include "linux-spawn.h"
#include "linux-state.h"

/* Fault injection (tests only; plan->fault_step is 0 otherwise). */
struct cg_fault {
    const struct cg_plan *plan;
    uint32_t count;
};

static bool fault_hit(struct cg_fault *f, uint32_t step) {
    return f && f->plan->fault_step == step && ++f->count >= f->plan->fault_nth;
}

static const char *const ctl_names[CG_NCTL] = {"memory", "pids", "cpu", "cpuacct", "freezer", "blkio", "devices", "cpuset"};

static int write_limit(const char *dir, const char *file, const char *value, struct cg_fault *f);

static int write_file(const char *dir, const char *file, const char *value) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd;
    do
        fd = open(path, O_WRONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    /* A v1 memory limit's write reclaims down to the new limit and gives
     * up with EINTR when a signal is pending, SA_RESTART or not: a host's
     * profiling or GC timer failed one start in fifty. Written again (a
     * limit is written whole or not at all). */
    ssize_t n;
    int tries = 0;
    do
        n = write(fd, value, strlen(value));
    while (n < 0 && errno == EINTR && ++tries < 1000);
    int e = errno;
    close(fd);
    return n == (ssize_t)strlen(value) ? 0 : -(n < 0 ? e : EIO);
}

static int write_limit(const char *dir, const char *file, const char *value, struct cg_fault *f) {
    if (fault_hit(f, FY_STEP_CGROUP_LIMIT))
        return -ECANCELED;
    return write_file(dir, file, value);
}

static int read_file(const char *dir, const char *file, char *buf, size_t len) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return -e;
    buf[n] = '\0';
    return (int)n;
}

/* "key value" lines (memory.events, pids.events, cpu.stat, ...). */
static bool find_key(const char *buf, const char *key, uint64_t *out) {
    size_t kl = strlen(key);
    for (const char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
            *out = strtoull(line + kl + 1, NULL, 10);
            return true;
        }
    return false;
}

static bool read_key(const char *dir, const char *file, const char *key, uint64_t *out) {
    char buf[4096];
    return read_file(dir, file, buf, sizeof(buf)) >= 0 && find_key(buf, key, out);
}

/* Two keys of one file, read once. */
static bool read_key2(const char *dir, const char *file, const char *k1, uint64_t *o1, const char *k2, uint64_t *o2) {
    char buf[4096];
    return read_file(dir, file, buf, sizeof(buf)) >= 0 && find_key(buf, k1, o1) && find_key(buf, k2, o2);
}

static bool read_u64(const char *dir, const char *file, uint64_t *out) {
    char buf[64];
    if (read_file(dir, file, buf, sizeof(buf)) < 0)
        return false;
    *out = strtoull(buf, NULL, 10);
    return true;
}

static int limit_err(fy_error **reterr, const char *dir, const char *file, int e) {
    return err_set(reterr, err_from_errno(e), FY_STEP_CGROUP_LIMIT, e, NULL, "cgroup limit %s/%s: %s", dir, file,
                   strerror(e));
}

static int cg_create_inner(const struct cg_plan *plan, struct cg_run *run, unsigned parts, struct cg_fault *f,
                           fy_error **reterr);

/* The device allowlist on the attempt's v1 devices cgroup or v2 cgroup. */
static int apply_devices(const struct cg_plan *plan, const char *v1_dir, const char *v2_dir, struct cg_fault *f,
                         fy_error **reterr) {
    char why[1024] = "";
    int e = fault_hit(f, FY_STEP_DEVICE) ? -ECANCELED
                                         : lx_dev_apply((enum lx_dev_mech)plan->dev_mech, v1_dir, v2_dir,
                                                        plan->dev_rules, plan->ndev_rules, why, sizeof(why));
    if (e < 0)
        return err_set(reterr, err_from_errno(-e), FY_STEP_DEVICE, -e, NULL, "device allowlist: %s",
                       why[0] ? why : strerror(-e));
    return 0;
}

int cg_create(const struct cg_plan *plan, struct cg_run *run, unsigned parts, fy_error **reterr) {
    /* The nth fault counts across both parts, as one creation. */
    struct cg_fault fault = {plan, (parts & CG_PART_V2) ? 0 : run->fault_count};
    int r = cg_create_inner(plan, run, parts, plan->fault_step ? &fault : NULL, reterr);
    run->fault_count = fault.count;
    /* A setup step failed: that is an infrastructure failure of the attempt. */
    if (r < 0 && r != FY_E_NOMEM && reterr && *reterr)
        (*reterr)->code = r = FY_E_INFRA;
    else if (r < 0 && r != FY_E_NOMEM)
        r = FY_E_INFRA;
    return r;
}

char *cg_new_name(void) {
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = util_now_usec();
    return util_asprintf("forgeyard-%d-%016llx", (int)getpid(), (unsigned long long)rnd);
}

size_t cg_planned_dirs(const struct cg_plan *plan, const char *name, char **out, size_t max) {
    size_t n = 0;
    if (!plan->enabled || !name)
        return 0;
    if (plan->v2_parent && (plan->v2_limits || plan->v2_group || plan->v2_devices) && n < max)
        out[n++] = util_asprintf("%s/%s", plan->v2_parent, name);
    for (int c = 0; c < CG_NCTL; c++)
        if (plan->v1_parent[c] && n < max)
            out[n++] = util_asprintf("%s/%s", plan->v1_parent[c], name);
    return n;
}

/* The limits of the run's v2 cgroup (plan->v2_limits). */
static int v2_write_limits(const struct cg_plan *plan, const struct cg_run *run, struct cg_fault *f, fy_error **reterr) {
    struct { bool on; const char *file; char value[96]; } w[5] = {{0}};
    if (plan->version_memory == 2) {
        w[0].on = w[1].on = true;
        w[0].file = "memory.max";
        snprintf(w[0].value, sizeof(w[0].value), "%llu", (unsigned long long)plan->memory);
        w[1].file = "memory.swap.max";
        snprintf(w[1].value, sizeof(w[1].value), "%llu", (unsigned long long)plan->swap);
    }
    if (plan->version_pids == 2) {
        w[2].on = true;
        w[2].file = "pids.max";
        snprintf(w[2].value, sizeof(w[2].value), "%llu", (unsigned long long)plan->pids);
    }
    if (plan->version_cpu == 2) {
        w[3].on = true;
        w[3].file = "cpu.max";
        uint64_t quota, period;
        fyh_cpu_quota(plan->cpu_millis, &quota, &period);
        snprintf(w[3].value, sizeof(w[3].value), "%llu %llu", (unsigned long long)quota, (unsigned long long)period);
    }
    if (plan->version_io == 2) {
        w[4].on = true;
        w[4].file = "io.max";
        snprintf(w[4].value, sizeof(w[4].value), "%u:%u rbps=%llu wbps=%llu", plan->io_major, plan->io_minor,
                 (unsigned long long)plan->io_bps, (unsigned long long)plan->io_bps);
    }
    for (size_t i = 0; i < 5; i++) {
        if (!w[i].on)
            continue;
        int e = write_limit(run->v2_dir, w[i].file, w[i].value, f);
        /* Without swap accounting memory.swap.max is absent: swap is then not usable by the cgroup either. */
        if (e == -ENOENT && i == 1)
            continue;
        if (e < 0)
            return limit_err(reterr, run->v2_dir, w[i].file, -e);
    }
    return 0;
}

/* The v1 cgroups through the privileged helper: it creates them below its
 * directory for our uid, writes the limits, and lets us move our own
 * processes in (cg_open_tasks works as with our own cgroups). */
static int helper_create(const struct cg_plan *plan, struct cg_run *run, fy_error **reterr) {
    static const struct { int ctl; uint32_t bit; } map[] = {
        {CG_MEMORY, FYH_CTL_MEMORY}, {CG_PIDS, FYH_CTL_PIDS}, {CG_CPU, FYH_CTL_CPU}, {CG_DEVICES, FYH_CTL_DEVICES}};
    static const struct fyh_msg req_zero = {.type = FYH_T_CREATE};
    struct fyh_msg req = req_zero, rep;
    if (strlen(run->name) > FYH_NAME_MAX)
        return err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, ENAMETOOLONG, NULL, "cgroup name %s too long", run->name);
    memcpy(req.u.create.name, run->name, strlen(run->name) + 1);
    uint32_t v = plan->v2_helper ? 2 : 1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(map) && v == 1; i++)
        if (plan->v1_parent[map[i].ctl])
            req.u.create.controllers |= map[i].bit;
    if (v == 2) /* one v2 cgroup: the controllers of the limits, the devices program */
        req.u.create.controllers = (plan->version_memory == 2 ? FYH_CTL_MEMORY : 0) |
                                   (plan->version_pids == 2 ? FYH_CTL_PIDS : 0) |
                                   (plan->version_cpu == 2 ? FYH_CTL_CPU : 0) |
                                   (plan->dev_mech == LX_DEV_BPF ? FYH_CTL_DEVICES : 0);
    if (plan->version_memory == v) {
        req.u.create.memory = plan->memory;
        req.u.create.swap = plan->swap;
    }
    if (plan->version_pids == v)
        req.u.create.pids = plan->pids;
    if (plan->version_cpu == v)
        req.u.create.cpu_millis = plan->cpu_millis;
    /* The device allowlist: the helper denies all, then allows these (v1),
     * or attaches the program that allows only these (v2). */
    if (req.u.create.controllers & FYH_CTL_DEVICES) {
        if (plan->dev_mech != (v == 2 ? LX_DEV_BPF : LX_DEV_V1) || plan->ndev_rules == 0 ||
            plan->ndev_rules > FYH_DEV_RULES_MAX)
            return err_set(reterr, FY_E_INFRA, FY_STEP_DEVICE, E2BIG, NULL,
                           "device allowlist: the privileged helper takes 1 to %u rules, the plan has %zu",
                           FYH_DEV_RULES_MAX, plan->ndev_rules);
        req.u.create.ndev = (uint32_t)plan->ndev_rules;
        for (size_t i = 0; i < plan->ndev_rules; i++)
            req.u.create.dev[i] = (struct fyh_dev_rule){(uint8_t)plan->dev_rules[i].type,
                                                        plan->dev_rules[i].access, plan->dev_rules[i].major,
                                                        plan->dev_rules[i].minor};
    }
    req.version = plan->helper_version; /* (0: ours) */
    int r = lx_helper_call(plan->helper, &req, &rep, 5000);
    if (r < 0)
        return err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, -r, NULL, "the privileged helper at %s: %s", plan->helper,
                       strerror(-r));
    if (rep.type == FYH_T_ERROR)
        return err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, (int)rep.u.error.os_errno, NULL,
                       "the privileged helper at %s refused the attempt's cgroup (%s): %s", plan->helper,
                       fyh_err_name(rep.u.error.code), rep.u.error.text);
    if (!(run->helper = util_strdup(plan->helper)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_CGROUP, 0, NULL, "out of memory");
    run->helper_version = plan->helper_version;
    run->created = true;
    if (v == 2) {
        /* Its one directory (the same for every controller); no fd of ours:
         * the sandbox is moved in by the helper (cg_place). */
        if (!(run->v2_dir = util_strdup(rep.u.created.dir[__builtin_ctz(rep.u.created.controllers)]))) {
            cg_destroy(plan, run);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_CGROUP, 0, NULL, "out of memory");
        }
        return 0;
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(map); i++) {
        if (!(rep.u.created.controllers & map[i].bit))
            continue;
        int k = __builtin_ctz(map[i].bit);
        if (!(run->v1_dir[map[i].ctl] = util_strdup(rep.u.created.dir[k]))) {
            cg_destroy(plan, run);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_CGROUP, 0, NULL, "out of memory");
        }
    }
    return 0;
}

/* Asks the helper to remove the attempt's cgroups (it kills what is left
 * of ours in them): how many directories are left. */
static int helper_remove(struct cg_run *run) {
    int had = run->v2_dir != NULL;
    for (int c = 0; c < CG_NCTL; c++)
        had += run->v1_dir[c] != NULL;
    if (!had)
        return 0;
    struct fyh_msg req = {.type = FYH_T_REMOVE, .version = run->helper_version}, rep;
    snprintf(req.u.remove.name, sizeof(req.u.remove.name), "%s", run->name);
    int r = lx_helper_call(run->helper, &req, &rep, 5000);
    bool gone = r == 0 && ((rep.type == FYH_T_REMOVED && rep.u.removed.left == 0) ||
                           (rep.type == FYH_T_ERROR && rep.u.error.code == FYH_E_NOT_FOUND));
    if (!gone)
        return r == 0 && rep.type == FYH_T_REMOVED ? (int)rep.u.removed.left : had;
    for (int c = 0; c < CG_NCTL; c++) {
        free(run->v1_dir[c]);
        run->v1_dir[c] = NULL;
    }
    free(run->v2_dir);
    run->v2_dir = NULL;
    return 0;
}

int cg_place(const struct cg_plan *plan, const struct cg_run *run, pid_t pid, int pidfd, fy_error **reterr) {
    if (!run->v2_dir)
        return 0;
    if (!run->helper)
        return lx_write_proc_cgroup(run->v2_dir, pid, reterr);
    /* The helper checks that the pidfd's process is ours and descends from
     * us, and moves it (we cannot: docs/helper.md). */
    struct fyh_msg req = {.type = FYH_T_MOVE}, rep;
    snprintf(req.u.move.name, sizeof(req.u.move.name), "%s", run->name);
    int r = lx_helper_call_fd(run->helper, &req, pidfd, &rep, 5000);
    if (r < 0)
        return err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, -r, NULL, "the privileged helper at %s: %s", run->helper,
                       strerror(-r));
    if (rep.type == FYH_T_ERROR)
        return err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, (int)rep.u.error.os_errno, NULL,
                       "the privileged helper at %s did not move the sandbox into %s (%s): %s", run->helper,
                       run->v2_dir, fyh_err_name(rep.u.error.code), rep.u.error.text);
    (void)plan;
    return 0;
}

/* What the plan puts on the run's v2 cgroup, the same whether the cgroup
 * is made for the attempt or was a shell's: the device program, then the
 * limits. */
static int v2_controls(const struct cg_plan *plan, const struct cg_run *run, struct cg_fault *f, fy_error **reterr) {
    int r = 0;
    if (plan->dev_mech == LX_DEV_BPF && (r = apply_devices(plan, NULL, run->v2_dir, f, reterr)) < 0)
        return r;
    if (plan->v2_limits && (r = v2_write_limits(plan, run, f, reterr)) < 0)
        return r;
    return 0;
}

/* The limits of the v1 cgroup of controller c (made). */
static int v1_limits(const struct cg_plan *plan, struct cg_run *run, int c, struct cg_fault *f, fy_error **reterr) {
    int r, e;
    char val[64];
    switch (c) {
    case CG_MEMORY:
        snprintf(val, sizeof(val), "%llu", (unsigned long long)plan->memory);
        if ((e = write_limit(run->v1_dir[c], "memory.limit_in_bytes", val, f)) < 0)
            return limit_err(reterr, run->v1_dir[c], "memory.limit_in_bytes", -e);
        /* TCP's buffers: v1 charges them (to a counter of their own) only
         * once this is written; a 64 MiB sandbox held 305 MiB of them over
         * its own loopback, bounded by the host's tcp_mem alone. (A kernel
         * without it has nothing to write.) */
        if ((e = write_limit(run->v1_dir[c], "memory.kmem.tcp.limit_in_bytes", val, f)) < 0 && e != -ENOENT)
            return limit_err(reterr, run->v1_dir[c], "memory.kmem.tcp.limit_in_bytes", -e);
        if (plan->v1_memsw) {
            snprintf(val, sizeof(val), "%llu", (unsigned long long)(plan->memory + plan->swap));
            if ((e = write_limit(run->v1_dir[c], "memory.memsw.limit_in_bytes", val, f)) < 0)
                return limit_err(reterr, run->v1_dir[c], "memory.memsw.limit_in_bytes", -e);
        }
        break;
    case CG_PIDS:
        snprintf(val, sizeof(val), "%llu", (unsigned long long)plan->pids);
        if ((e = write_limit(run->v1_dir[c], "pids.max", val, f)) < 0)
            return limit_err(reterr, run->v1_dir[c], "pids.max", -e);
        break;
    case CG_BLKIO:
        snprintf(val, sizeof(val), "%u:%u %llu", plan->io_major, plan->io_minor, (unsigned long long)plan->io_bps);
        if ((e = write_limit(run->v1_dir[c], "blkio.throttle.read_bps_device", val, f)) < 0 ||
            (e = write_limit(run->v1_dir[c], "blkio.throttle.write_bps_device", val, f)) < 0)
            return limit_err(reterr, run->v1_dir[c], "blkio.throttle.*_bps_device", -e);
        break;
    case CG_DEVICES:
        if ((r = apply_devices(plan, run->v1_dir[c], NULL, f, reterr)) < 0)
            return r;
        break;
    case CG_CPU:
        if (plan->version_cpu != 1 || plan->cpu_millis == FY_UNLIMITED)
            break; /* (the cgroup view's: no quota) */
        uint64_t quota, period;
        fyh_cpu_quota(plan->cpu_millis, &quota, &period);
        char per[24];
        snprintf(val, sizeof(val), "%llu", (unsigned long long)quota);
        snprintf(per, sizeof(per), "%llu", (unsigned long long)period);
        if ((e = write_limit(run->v1_dir[c], "cpu.cfs_period_us", per, f)) < 0 ||
            (e = write_limit(run->v1_dir[c], "cpu.cfs_quota_us", val, f)) < 0)
            return limit_err(reterr, run->v1_dir[c], "cpu.cfs_quota_us", -e);
        break;
    default:
        break;
    }
    return 0;
}

static int cg_create_inner(const struct cg_plan *plan, struct cg_run *run, unsigned parts, struct cg_fault *f,
                           fy_error **reterr) {
    if (parts & CG_PART_V2) {
        char *name = run->name; /* chosen by the caller (cg_new_name), or NULL */
        memset(run, 0, sizeof(*run));
        run->v2_fd = -1;
        run->name = name;
    }
    if (!plan->enabled)
        return 0;
    if (!run->name)
        run->name = cg_new_name();
    if (!run->name)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_CGROUP, 0, NULL, "out of memory");
    int r = 0;
    if ((parts & CG_PART_V2) && plan->v2_helper && plan->helper) {
        /* (a pre-started shell is never made on a helper's cgroup: linux-shell.c) */
        if (fault_hit(f, FY_STEP_CGROUP)) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, ECANCELED, NULL, "injected");
            goto fail;
        }
        if ((r = helper_create(plan, run, reterr)) < 0)
            goto fail;
        return 0;
    }
    if ((parts & CG_PART_V2) && plan->v2_parent && (plan->v2_limits || plan->v2_group || plan->v2_devices)) {
        run->v2_dir = util_asprintf("%s/%s", plan->v2_parent, run->name);
        bool injected = run->v2_dir && fault_hit(f, FY_STEP_CGROUP);
        if (!run->v2_dir || injected || mkdir(run->v2_dir, 0755) < 0) {
            int e = !run->v2_dir ? ENOMEM : injected ? ECANCELED : errno;
            free(run->v2_dir);
            run->v2_dir = NULL;
            r = err_set(reterr, err_from_errno(e), FY_STEP_CGROUP, e, NULL, "creating a cgroup under %s: %s",
                        plan->v2_parent, strerror(e));
            goto fail;
        }
        run->created = true;
        if ((run->v2_fd = open(run->v2_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
            r = err_set(reterr, err_from_errno(errno), FY_STEP_CGROUP, errno, NULL, "%s: %s", run->v2_dir, strerror(errno));
            goto fail;
        }
        /* The device program goes on before the sandbox is cloned into the
         * cgroup: nothing of it ever runs without the list. (A pre-started
         * shell's bare cgroup gets it at the claim, below: before anything
         * of the attempt runs in it; the shell itself opens no device.) */
        if (!(parts & CG_PART_V2_BARE) && (r = v2_controls(plan, run, f, reterr)) < 0)
            goto fail;
    }
    /* A pre-started shell's cgroup, made bare, gets them at the claim. */
    if ((parts & CG_PART_V2_LIMITS) && run->v2_dir && (r = v2_controls(plan, run, f, reterr)) < 0)
        goto fail;
    if ((parts & CG_PART_V1) && plan->v2_helper)
        return 0; /* (all of it was made with the v2 part) */
    if ((parts & CG_PART_V1) && plan->helper) {
        if (fault_hit(f, FY_STEP_CGROUP)) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, ECANCELED, NULL, "injected");
            goto fail;
        }
        if ((r = helper_create(plan, run, reterr)) < 0)
            goto fail;
        return 0;
    }
    for (int c = 0; c < CG_NCTL && (parts & (CG_PART_V1 | CG_PART_V1_LIMITS)); c++) {
        if (!plan->v1_parent[c])
            continue;
        if (!(parts & CG_PART_V1)) {
            /* The limits of a v1 cgroup made bare (a pre-started shell's):
             * it must be there, made by the same plan shape. */
            if (!run->v1_dir[c]) {
                r = err_set(reterr, FY_E_INTERNAL, FY_STEP_CGROUP, 0, NULL, "no %s cgroup to limit", ctl_names[c]);
                goto fail;
            }
            if ((r = v1_limits(plan, run, c, f, reterr)) < 0)
                goto fail;
            continue;
        }
        run->v1_dir[c] = util_asprintf("%s/%s", plan->v1_parent[c], run->name);
        bool injected = run->v1_dir[c] && fault_hit(f, FY_STEP_CGROUP);
        if (!run->v1_dir[c] || injected || mkdir(run->v1_dir[c], 0755) < 0) {
            int e = !run->v1_dir[c] ? ENOMEM : injected ? ECANCELED : errno;
            free(run->v1_dir[c]);
            run->v1_dir[c] = NULL;
            r = err_set(reterr, err_from_errno(e), FY_STEP_CGROUP, e, NULL, "creating a %s cgroup under %s: %s",
                        ctl_names[c], plan->v1_parent[c], strerror(e));
            goto fail;
        }
        run->created = true;
        if (c == CG_CPUSET) {
            /* A v1 cpuset cgroup starts with no CPUs and no memory nodes
             * (nothing can join it): the parent's, unchanged (the cgroup
             * view's cgroup limits nothing; a shell's bare one too). Written
             * to the child, never to the parent's cgroup.clone_children. */
            for (int k = 0; k < 2; k++) {
                const char *file = k ? "cpuset.mems" : "cpuset.cpus";
                char set[4096];
                int e = 0;
                if (read_file(plan->v1_parent[c], file, set, sizeof(set)) < 0 ||
                    (e = write_limit(run->v1_dir[c], file, set, f)) < 0) {
                    r = limit_err(reterr, run->v1_dir[c], file, e < 0 ? -e : EIO);
                    goto fail;
                }
            }
        }
        /* (A pre-started shell's are made bare: limited at its claim.) */
        if (!(parts & CG_PART_V1_BARE) && (r = v1_limits(plan, run, c, f, reterr)) < 0)
            goto fail;
    }
    return 0;
fail:
    cg_destroy(plan, run);
    return r;
}

int cg_open_tasks(const struct cg_plan *plan, const struct cg_run *run, int *fds, size_t max, size_t *ret_n,
                  fy_error **reterr) {
    size_t n = 0;
    (void)plan;
    for (int c = 0; c < CG_NCTL; c++) {
        if (!run->v1_dir[c])
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/tasks", run->v1_dir[c]);
        int fd = n < max ? open(path, O_WRONLY | O_CLOEXEC) : -1;
        if (fd < 0) {
            int e = n < max ? errno : E2BIG;
            for (size_t i = 0; i < n; i++)
                close(fds[i]);
            /* A setup step failed: an infrastructure failure (as in cg_create). */
            err_set(reterr, FY_E_INFRA, FY_STEP_CGROUP, e, NULL, "opening %s: %s", path, strerror(e));
            return FY_E_INFRA;
        }
        fds[n++] = fd;
    }
    *ret_n = n;
    return 0;
}

static int count_pids_in(const char *dir) {
    char buf[8192];
    int n = read_file(dir, "cgroup.procs", buf, sizeof(buf));
    if (n < 0)
        return 0;
    int count = 0;
    for (int i = 0; i < n; i++)
        count += buf[i] == '\n';
    return count;
}

int cg_count_procs(const struct cg_plan *plan, const struct cg_run *run) {
    int most = 0;
    if (run->v2_dir) {
        int n = count_pids_in(run->v2_dir);
        most = n > most ? n : most;
    }
    for (int c = 0; c < CG_NCTL; c++)
        if (run->v1_dir[c]) {
            int n = count_pids_in(run->v1_dir[c]);
            most = n > most ? n : most;
        }
    (void)plan;
    return most;
}

static void kill_listed(const char *dir) {
    char buf[16384];
    int n = read_file(dir, "cgroup.procs", buf, sizeof(buf));
    for (char *p = buf; n > 0 && *p;) {
        pid_t pid = (pid_t)strtol(p, &p, 10);
        if (pid > 0)
            kill(pid, SIGKILL);
        while (*p == '\n')
            p++;
    }
}

void cg_kill(const struct cg_plan *plan, const struct cg_run *run) {
    if (run->v2_dir && write_file(run->v2_dir, "cgroup.kill", "1") == 0)
        return;
    /* v1: freeze so nothing forks while we kill, then thaw so the kills land. */
    const char *fz = run->v1_dir[CG_FREEZER];
    if (fz)
        write_file(fz, "freezer.state", "FROZEN");
    if (run->v2_dir)
        kill_listed(run->v2_dir);
    for (int c = 0; c < CG_NCTL; c++)
        if (run->v1_dir[c])
            kill_listed(run->v1_dir[c]);
    if (fz)
        write_file(fz, "freezer.state", "THAWED");
    (void)plan;
}

/* Event counters of a cgroup and of every cgroup below it.
 *
 * The kernel keeps some events in the cgroup of the task that caused them,
 * not in the one whose limit was hit: a fork the pids limit refused counts
 * in the forking task's pids.events (cgroup v1; v2 before Linux 6.12, or
 * pids.events.local since), an OOM kill in the victim's memory.oom_control
 * (v1; measured on 6.18: the limited parent reads 0, its child 1) or
 * memory.events.local (v2). The workload is not always in the attempt's
 * cgroup itself: runc puts the container in a cgroup of its own below it
 * (linux-runc.c). So each counter is the sum over the subtree; the attempt
 * owns everything below its cgroups.
 *
 * Per directory: local_file's key when the file exists, else file's
 * (local then: v1, older v2 kernels). Where file is hierarchical (v2
 * memory.events before Linux 5.2 has no .local), hier says so and only the
 * top is read. Bounded: CG_WALK_DEPTH levels, CG_WALK_DIRS directories. A
 * sum can overcount on a kernel whose v1 counter is hierarchical; callers
 * use only whether it is nonzero. */
#define CG_WALK_DEPTH 4
#define CG_WALK_DIRS 64

struct cg_walk {
    const char *local_file, *file, *key;
    bool hier;
    int budget;
};

static uint64_t subtree_events(struct cg_walk *w, const char *dir, int depth) {
    uint64_t sum = 0, v = 0;
    if (w->budget-- <= 0)
        return 0;
    if (w->local_file && read_key(dir, w->local_file, w->key, &v))
        sum += v;
    else if (read_key(dir, w->file, w->key, &v)) {
        sum += v;
        if (w->hier)
            return sum; /* it counts its subtree already */
    }
    if (depth >= CG_WALK_DEPTH)
        return sum;
    DIR *d = opendir(dir);
    if (!d)
        return sum;
    struct dirent *e;
    while (w->budget > 0 && (e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        char sub[4200];
        if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= sizeof(sub))
            continue;
        sum += subtree_events(w, sub, depth + 1);
    }
    closedir(d);
    return sum;
}

static uint64_t events_below(const char *dir, const char *local_file, const char *file, const char *key, bool hier) {
    struct cg_walk w = {local_file, file, key, hier, CG_WALK_DIRS};
    return subtree_events(&w, dir, 0);
}

void cg_usage(const struct cg_plan *plan, const struct cg_run *run, struct cg_usage *u) {
    memset(u, 0, sizeof(*u));
    if (run->v2_dir) {
        uint64_t v;
        if (read_key2(run->v2_dir, "cpu.stat", "user_usec", &u->cpu_user_usec, "system_usec", &u->cpu_system_usec))
            u->have_cpu = true;
        if (plan->version_memory == 2 && read_u64(run->v2_dir, "memory.peak", &v)) {
            u->memory_peak = v;
            u->have_memory = true;
        }
        if (plan->version_memory == 2)
            u->oom_kills += events_below(run->v2_dir, "memory.events.local", "memory.events", "oom_kill", true);
        if (plan->version_pids == 2)
            u->pids_max_events += events_below(run->v2_dir, "pids.events.local", "pids.events", "max", false);
    }
    const char *mem = run->v1_dir[CG_MEMORY];
    if (mem) {
        if (read_u64(mem, "memory.max_usage_in_bytes", &u->memory_peak))
            u->have_memory = true;
        u->oom_kills += events_below(mem, NULL, "memory.oom_control", "oom_kill", false);
    }
    if (run->v1_dir[CG_PIDS])
        u->pids_max_events += events_below(run->v1_dir[CG_PIDS], NULL, "pids.events", "max", false);
    /* io: v2 io.stat (rbytes=/wbytes= per device), v1 throttle service bytes. */
    if (run->v2_dir && plan->version_io == 2) {
        char buf[4096];
        if (read_file(run->v2_dir, "io.stat", buf, sizeof(buf)) >= 0) {
            for (char *p = buf; (p = strstr(p, "rbytes=")); p++)
                u->io_read += strtoull(p + 7, NULL, 10);
            for (char *p = buf; (p = strstr(p, "wbytes=")); p++)
                u->io_write += strtoull(p + 7, NULL, 10);
            u->have_io = true;
        }
    }
    if (run->v1_dir[CG_BLKIO]) {
        char buf[4096];
        if (read_file(run->v1_dir[CG_BLKIO], "blkio.throttle.io_service_bytes", buf, sizeof(buf)) >= 0) {
            for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                char *sp = strchr(line, ' ');
                if (!sp || strncmp(line, "Total", 5) == 0)
                    continue;
                if (strncmp(sp + 1, "Read ", 5) == 0)
                    u->io_read += strtoull(sp + 6, NULL, 10);
                else if (strncmp(sp + 1, "Write ", 6) == 0)
                    u->io_write += strtoull(sp + 7, NULL, 10);
            }
            u->have_io = true;
        }
    }
    const char *acct = run->v1_dir[CG_CPUACCT];
    uint64_t user_ns, sys_ns;
    if (acct && !u->have_cpu && read_u64(acct, "cpuacct.usage_user", &user_ns) &&
        read_u64(acct, "cpuacct.usage_sys", &sys_ns)) {
        u->cpu_user_usec = user_ns / 1000;
        u->cpu_system_usec = sys_ns / 1000;
        u->have_cpu = true;
    }
}

/* rmdir succeeds only on a cgroup no task is in: that is the witness. */
static int remove_if_empty(char **dir) {
    if (!*dir)
        return 0;
    if (rmdir(*dir) == 0 || errno == ENOENT) {
        free(*dir);
        *dir = NULL;
        return 0;
    }
    return 1;
}

static int remove_dir(char **dir, const struct cg_plan *plan, const struct cg_run *run) {
    if (!*dir)
        return 0;
    /* A cgroup can only go once it is empty: kill and retry, bounded. */
    for (int i = 0; i < 200; i++) {
        if (!remove_if_empty(dir))
            return 0;
        if (errno != EBUSY)
            break;
        cg_kill(plan, run);
        usleep(5000);
    }
    return 1;
}

int cg_remove_empty(struct cg_run *run) {
    int left = 0;
    if (run->v2_fd >= 0) {
        close(run->v2_fd);
        run->v2_fd = -1;
    }
    if (run->helper)
        left += helper_remove(run);
    for (int c = 0; c < CG_NCTL && !run->helper; c++)
        left += remove_if_empty(&run->v1_dir[c]);
    if (!run->helper)
        left += remove_if_empty(&run->v2_dir);
    return left;
}

int cg_destroy(const struct cg_plan *plan, struct cg_run *run) {
    int left = 0;
    if (run->v2_fd >= 0) {
        close(run->v2_fd);
        run->v2_fd = -1;
    }
    if (run->helper) {
        cg_kill(plan, run); /* our own processes; the helper kills what is left */
        left += helper_remove(run);
    }
    for (int c = 0; c < CG_NCTL && !run->helper; c++)
        left += remove_dir(&run->v1_dir[c], plan, run);
    if (!run->helper)
        left += remove_dir(&run->v2_dir, plan, run);
    if (!left) {
        free(run->name);
        run->name = NULL;
        free(run->helper);
        run->helper = NULL;
    }
    return left;
}

void cg_gc_unrecorded(const struct cg_plan *plan, const char *state_dir) {
    if (!plan->enabled || plan->helper)
        return;
    const char *parents[CG_NCTL + 1];
    for (int c = 0; c < CG_NCTL; c++)
        parents[c] = plan->v1_parent[c];
    parents[CG_NCTL] = plan->v2_parent;
    (void)state_gc_unrecorded_in(parents, CG_NCTL + 1, CG_UNRECORDED_MIN_AGE_SEC, state_dir);
}
