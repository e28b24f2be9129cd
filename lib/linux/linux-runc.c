/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The external OCI runtime adapter: the container level run by runc, only
 * when the policy names it (fy_policy_set_runtime "runc"), never by cost.
 *
 * Why a mode of the Linux folder and not a folder of its own: the adapter
 * needs the per-attempt cgroups (v1 on hybrid hosts, v2), the output
 * capture with its byte cap and the Linux plan's identity, environment and
 * limits, all of which live here; the layering rule lets a backend folder
 * use no other folder's headers, so a lib/ociruntime/ would have to copy
 * them. What runc does differently (namespaces, mounts, pivot, exec) is the
 * part it replaces; everything the library enforces around it stays the
 * library's.
 *
 * One attempt: a bundle directory of its own (config.json from the neutral
 * plan, the generated files, rootfs/ and scratch/ mount points, runc's
 * --root state directory), the attempt's cgroups made by the library (the
 * limits are written there; the OOM and pids events the kernel counts in
 * runc's cgroup below them are read from there too, cg_usage's walk of the
 * subtree, before `runc delete`: runc runs with --keep), and
 * a middle process that joins those cgroups, makes a private mount
 * namespace, mounts a tmpfs upper and the overlay of the image's verified
 * layers on rootfs/ (nothing reaches the host's mount table), then runs
 * `runc run` as its child. runc creates the container's cgroup under the
 * attempt's (a relative cgroupsPath), its namespaces, mounts and ids, and
 * executes the command. Cleanup: every process of the attempt's cgroups
 * killed, `runc delete --force`, then witnessed: no runc state, no cgroup
 * (the attempt's, and runc's own in the hierarchies the library does not
 * use), no mount of the bundle, no bundle directory.
 *
 * What runc does not get from us, reported as not enforced: the library's
 * seccomp profiles (not translated into the OCI format) and Landlock (runc
 * has none). A policy requiring either selects another backend or is
 * refused.
 *
 * This file: the probe, negotiation and config.json; the run operations
 * and fy_gc's part are in linux-runc-run.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <jansson.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-plan.h"
#include "linux-probe-util.h"
#include "linux-runc.h"
#include "linux-spawn.h"
#include "linux-state.h"
#include "linux-syscall.h"

/* ------------------------------------------------------------------ */
/* the probe                                                          */
/* ------------------------------------------------------------------ */

#define RUNTIME_PROBE_MS 3000

/* "NAME version X" from `NAME --version` (malloc'd X), or NULL. */
static char *runtime_version(const char *path) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return NULL;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const char *argv[] = {path, "--version", NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    struct pu_proc pr;
    int e = devnull < 0 ? errno : pu_spawn(argv, envp, devnull, p[1], &pr);
    close(p[1]);
    if (devnull >= 0)
        close(devnull);
    if (e) {
        close(p[0]);
        return NULL;
    }
    char buf[4096];
    size_t n = 0;
    uint64_t deadline = pu_deadline_after_ms(RUNTIME_PROBE_MS);
    for (;;) {
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        int left = pu_ms_left(deadline);
        if (left == 0 || poll(&pfd, 1, left) <= 0)
            break;
        ssize_t r = read(p[0], buf + n, sizeof(buf) - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof(buf) - 1)
            break;
    }
    close(p[0]);
    bool killed = false;
    (void)pu_finish(&pr, deadline, &killed);
    buf[n] = '\0';
    char *v = strstr(buf, " version ");
    if (killed || !v)
        return NULL;
    v += 9;
    return strndup(v, strcspn(v, " \n"));
}

/* Known unfixed vulnerabilities of a runc version (NULL: none known). The
 * November 2025 runc CVEs (CVE-2025-31133, -52565, -52881) are fixed in
 * 1.2.8, 1.3.3 and 1.4.0; Debian 12's 1.1.5+ds1-1+deb12u1 backports the
 * fix of CVE-2024-21626 but not these (its changelog was checked). */
static const char *runc_issues(const char *version) {
    unsigned maj = 0, min = 0, pat = 0;
    if (!version || sscanf(version, "%u.%u.%u", &maj, &min, &pat) < 2)
        return "its version is unknown, so the fixes for CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 "
               "cannot be confirmed";
    if (maj == 0 || (maj == 1 && (min < 2 || (min == 2 && pat < 8) || (min == 3 && pat < 3))))
        return "lacks the fixes for CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 (the masked /dev/null "
               "replaced by a symbolic link, the /dev/console race, LSM writes redirected into procfs: container "
               "escapes fixed upstream in 1.2.8 and 1.3.3)";
    return NULL;
}

/* Hybrid cgroup layout: v1 controllers mounted and a cgroup2 hierarchy
 * beside them. *controllers gets the v2 hierarchy's controllers (what crun
 * refuses in that layout). */
static bool cgroup_hybrid(char *controllers, size_t len) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    controllers[0] = '\0';
    if (!f)
        return false;
    char line[4096], v2[4096] = "";
    bool v1 = false;
    while (fgets(line, sizeof(line), f)) {
        char *sep = strstr(line, " - ");
        if (!sep)
            continue;
        char mnt[4096];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
            continue;
        if (strncmp(sep, " - cgroup2 ", 11) == 0)
            snprintf(v2, sizeof(v2), "%s", mnt);
        else if (strncmp(sep, " - cgroup ", 10) == 0)
            v1 = true;
    }
    fclose(f);
    if (!v1 || !v2[0])
        return false;
    char path[4200];
    snprintf(path, sizeof(path), "%s/cgroup.controllers", v2);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, controllers, len - 1);
        controllers[n > 0 ? n : 0] = '\0';
        controllers[strcspn(controllers, "\n")] = '\0';
        close(fd);
    }
    return true;
}

static void set_fact2(fy_caps *c, const char *name, const char *what, const char *value) {
    char key[64];
    snprintf(key, sizeof(key), LX_FACT_RUNTIME_PREFIX "%s%s", name, what);
    (void)caps_set_fact(c, key, value);
}

/* One runtime: found, its version, and whether this adapter can use it
 * here. The rules, each the cause the runtime itself would give: root only
 * (rootless runc is not done), crun refuses hybrid hosts whose v2
 * hierarchy holds controllers (its libcrun/cgroup.c check, which
 * --cgroup-manager=disabled does not skip). */
static bool probe_runtime(fy_caps *c, const char *name, bool is_root, struct strbuf *found) {
    char *path = pu_find_program(name);
    if (!path) {
        set_fact2(c, name, "_verdict", "not installed (not found in PATH or the system directories)");
        return false;
    }
    set_fact2(c, name, "", path);
    char *version = runtime_version(path);
    set_fact2(c, name, "_version", version);
    char verdict[1024] = "ok";
    char ctl[512];
    if (!version)
        snprintf(verdict, sizeof(verdict), "%s --version did not answer", path);
    else if (!is_root)
        snprintf(verdict, sizeof(verdict), "the adapter runs %s as root only (rootless %s is not done)", name, name);
    else if (strcmp(name, "crun") == 0 && cgroup_hybrid(ctl, sizeof(ctl)) && ctl[0])
        snprintf(verdict, sizeof(verdict),
                 "unusable: crun %s refuses hybrid cgroup hosts (cgroup v1 controllers with a cgroup v2 "
                 "hierarchy holding controllers: %s): \"cgroups in hybrid mode not supported, drop all "
                 "controllers from cgroupv2\", --cgroup-manager=disabled included",
                 version, ctl);
    set_fact2(c, name, "_verdict", verdict);
    if (strcmp(name, "runc") == 0 && version) {
        const char *issues = runc_issues(version);
        if (issues) {
            char text[1024];
            snprintf(text, sizeof(text), "runc %s %s", version, issues);
            set_fact2(c, name, "_issues", text);
        }
    }
    bool ok = strcmp(verdict, "ok") == 0;
    strbuf_printf(found, "%s%s %s (%s): %s", found->len ? "; " : "", name, version ? version : "?", path,
                  ok ? "usable" : verdict);
    if (!caps_fact(c, LX_FACT_OCI_RUNTIME))
        (void)caps_set_fact(c, LX_FACT_OCI_RUNTIME, path);
    free(path);
    free(version);
    return ok;
}

void lp_probe_runtimes(fy_caps *c, bool is_root) {
    struct strbuf found;
    strbuf_init(&found);
    bool crun = probe_runtime(c, "crun", is_root, &found);
    bool runc = probe_runtime(c, "runc", is_root, &found);
    if (crun || runc)
        caps_set(c, FY_CAP_OCI_RUNTIME, true, 1, "%s", found.buf);
    else if (found.len)
        caps_set(c, FY_CAP_OCI_RUNTIME, false, 0, "%s", found.buf);
    else
        caps_set(c, FY_CAP_OCI_RUNTIME, false, 0, "neither crun nor runc found in PATH or the system directories");
    if (!crun && !runc)
        caps_set_hint(c, FY_CAP_OCI_RUNTIME, "install runc (apt install runc) and run as root; crun needs a "
                      "cgroup v2 or a pure v1 host");
    strbuf_free(&found);
}

/* ------------------------------------------------------------------ */
/* negotiation                                                        */
/* ------------------------------------------------------------------ */

static const char *fact2(const fy_caps *c, const char *name, const char *what) {
    char key[64];
    snprintf(key, sizeof(key), LX_FACT_RUNTIME_PREFIX "%s%s", name, what);
    return caps_fact(c, key);
}

static bool cap_for(const fy_caps *c, uint32_t cap, const char **why) {
    if (caps_present(c, cap))
        return true;
    *why = fy_caps_reason(c, cap);
    return false;
}

static bool rt_usable(const char *name, const fy_caps *c, struct strbuf *why) {
    const char *v = fact2(c, name, "_verdict");
    bool ok = v && strcmp(v, "ok") == 0;
    if (!ok)
        strbuf_printf(why, "%s%s: %s", why->len ? "; " : "", name, v ? v : "not probed");
    if (!caps_present(c, FY_CAP_PIDFD)) {
        strbuf_printf(why, "%spidfd: %s", why->len ? "; " : "", fy_caps_reason(c, FY_CAP_PIDFD));
        ok = false;
    }
    if (!caps_fact(c, LX_FACT_CG1_FREEZER) && !caps_fact(c, LX_FACT_CG2_DIR)) {
        strbuf_printf(why, "%scgroups: neither a v1 freezer nor a v2 directory to hold the attempt",
                      why->len ? "; " : "");
        ok = false;
    }
    return ok;
}
static bool runc_usable(const fy_caps *c, struct strbuf *why) { return rt_usable("runc", c, why); }
static bool crun_usable(const fy_caps *c, struct strbuf *why) { return rt_usable("crun", c, why); }

static bool rt_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_USERNS: case FY_CONTROL_MOUNTNS: case FY_CONTROL_PIDNS: case FY_CONTROL_NETNS:
    case FY_CONTROL_IPCNS: case FY_CONTROL_UTSNS: case FY_CONTROL_CGROUPNS:
        return true; /* the runtime makes them (root only: probe verdict) */
    case FY_CONTROL_UID_RANGE: return true;
    case FY_CONTROL_SECCOMP:
        *why = "the OCI runtime adapter does not translate the library's seccomp profiles into the OCI format: "
               "not enforced";
        return false;
    case FY_CONTROL_LANDLOCK:
        *why = "an OCI runtime applies no Landlock ruleset: not enforced";
        return false;
    case FY_CONTROL_MEMORY_LIMIT: return cap_for(c, FY_CAP_CGROUP_MEMORY, why);
    case FY_CONTROL_PIDS_LIMIT: return cap_for(c, FY_CAP_CGROUP_PIDS, why);
    case FY_CONTROL_CPU_LIMIT: return cap_for(c, FY_CAP_CGROUP_CPU, why);
    case FY_CONTROL_IO_LIMIT: return cap_for(c, FY_CAP_CGROUP_IO, why);
    default:
        *why = "unknown control";
        return false;
    }
}

static const char *runc_known_issues(const fy_caps *c) { return fact2(c, "runc", "_issues"); }

/* ------------------------------------------------------------------ */
/* compile: config.json from the neutral plan                         */
/* ------------------------------------------------------------------ */

static const struct { int res; const char *name; } rlimit_names[] = {
    {RLIMIT_NOFILE, "RLIMIT_NOFILE"}, {RLIMIT_CORE, "RLIMIT_CORE"}, {RLIMIT_FSIZE, "RLIMIT_FSIZE"},
    {RLIMIT_STACK, "RLIMIT_STACK"},   {RLIMIT_NPROC, "RLIMIT_NPROC"}, {RLIMIT_AS, "RLIMIT_AS"},
    {RLIMIT_CPU, "RLIMIT_CPU"},       {RLIMIT_DATA, "RLIMIT_DATA"},   {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"},
    {RLIMIT_RTPRIO, "RLIMIT_RTPRIO"}, {RLIMIT_NICE, "RLIMIT_NICE"},
    /* The plan's share of the host's queued signals and message-queue
     * bytes: without them the container got the host's own (much more). */
    {RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"}, {RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"},
};

/* What the result's limits say under the runtime: the Linux plan's record
 * (linux-plan.c compile_cgroups), corrected to what the runtime really
 * got. rlimits: only those written in config.json (applied). Kernel
 * counts: runc runs no forgeyard-init, so no per-user count of the
 * container's user namespace is limited; runc makes that namespace as
 * root, so its counts draw on host root's budget. */
static char *runtime_limits(const struct linux_plan *pl, const char *applied, json_t *rlim_values) {
    json_t *o = pl->cgroup_json ? json_loads(pl->cgroup_json, 0, NULL) : NULL;
    if (!o)
        return NULL;
    json_object_set_new(o, "rlimits", json_string(applied));
    json_t *k = json_object_get(o, "kernel_counts");
    if (json_is_object(k)) {
        const char *key;
        json_t *v;
        json_object_foreach(k, key, v) {
            if (!strcmp(key, "ptys"))
                continue; /* the devpts instance's max=, in config.json too */
            json_t *set = json_object_get(rlim_values, key);
            json_object_set(k, key, set ? set : json_null());
        }
        json_object_set_new(k, "share",
                            json_string("none for the per-user counts: the runtime writes no user namespace "
                                        "limits (no forgeyard-init); queued signals and message-queue bytes are "
                                        "the container's rlimits"));
        json_object_set_new(k, "charged_to",
                            json_string("host root (uid 0): the runtime makes the container's user namespace as "
                                        "root, so its per-user counts (inotify, fanotify, queued signals, message "
                                        "queues) draw on root's budget"));
    }
    json_object_set_new(o, "tree", json_string("the attempt's cgroups, the container's cgroup made by the runtime "
                                               "below them; ended by SIGKILL to every listed process (frozen first "
                                               "where a v1 freezer holds them)"));
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return text;
}

static json_t *strv(const char *const *v) {
    json_t *a = json_array();
    for (size_t i = 0; a && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static int unsupported(fy_error **reterr, const char *what) {
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_RUNTIME, 0, NULL, "the OCI runtime adapter cannot %s", what);
}

static json_t *mount_obj(const char *dst, const char *type, const char *src, json_t *opts) {
    return json_pack("{ssssssso}", "destination", dst, "type", type, "source", src, "options", opts);
}

/* The mounts, masked and read-only paths of the plan's layout. */
static int layout(const struct fy_plan *np, const struct linux_plan *pl, struct runc_plan *rp, struct arena *ar,
                  json_t *mounts, json_t *masked, json_t *ro, fy_error **reterr) {
    const char **files = arena_keep(ar, calloc(np->nentries + 1, sizeof(char *)));
    if (!files)
        return FY_E_NOMEM;
    rp->files = files;
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        json_t *m = NULL;
        switch (e->kind) {
        case PE_PROC:
            m = mount_obj(e->target, "proc", "proc", json_pack("[sss]", "nosuid", "noexec", "nodev"));
            break;
        case PE_PROC_HIDE:
            json_array_append_new(masked, json_string(e->target));
            continue;
        case PE_PROC_RO:
            json_array_append_new(ro, json_string(e->target));
            continue;
        case PE_PTYS: {
            /* (max=: the plan's share of the host's terminals, linux-plan.c pty_cap) */
            char max[24];
            snprintf(max, sizeof(max), "max=%u", (unsigned)pl->pty_max);
            m = mount_obj(e->target, "devpts", "devpts",
                          json_pack("[ssssss]", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", max));
            break;
        }
        case PE_TMPFS: {
            char size[48], mode[24], inodes[40];
            snprintf(size, sizeof(size), "size=%llu", (unsigned long long)e->size);
            snprintf(mode, sizeof(mode), "mode=%o", e->mode);
            json_t *o = json_pack("[sss]", "nosuid", "nodev", mode);
            if (e->size && e->size != FY_UNLIMITED)
                json_array_append_new(o, json_string(size));
            if (e->inodes) {
                snprintf(inodes, sizeof(inodes), "nr_inodes=%u", e->inodes);
                json_array_append_new(o, json_string(inodes));
            }
            if (e->flags & PLAN_NOEXEC)
                json_array_append_new(o, json_string("noexec"));
            if (e->flags & PLAN_OWNED) {
                char id[40];
                snprintf(id, sizeof(id), "uid=%u", np->uid);
                json_array_append_new(o, json_string(id));
                snprintf(id, sizeof(id), "gid=%u", np->gid);
                json_array_append_new(o, json_string(id));
            }
            m = mount_obj(e->target, "tmpfs", "tmpfs", o);
            break;
        }
        case PE_FILE: {
            char src[32];
            snprintf(src, sizeof(src), "files/%zu", rp->nfiles);
            files[rp->nfiles++] = e->content ? e->content : "";
            m = mount_obj(e->target, "bind", src, json_pack("[ssss]", "bind", "ro", "nosuid", "nodev"));
            break;
        }
        case PE_SYMLINK:
            /* runc makes /dev's own links (fd, stdin, stdout, stderr, ptmx). */
            if (strncmp(e->target, "/dev/", 5) == 0)
                continue;
            return unsupported(reterr, "make a symbolic link in the image's root");
        case PE_HOST:
            if (e->role == PR_DEV && (e->flags & PLAN_DEVICE))
                continue; /* runc's own minimal device set (null zero full random urandom tty) */
            if (e->role == PR_DEVICE || (e->flags & PLAN_DEVICE))
                return unsupported(reterr, "lease a host device");
            m = mount_obj(e->target, "bind", e->host,
                          (e->flags & PLAN_RO) ? json_pack("[sssss]", "rbind", "ro", "nosuid", "nodev", "rprivate")
                                               : json_pack("[ssss]", "rbind", "nosuid", "nodev", "rprivate"));
            break;
        default:
            return unsupported(reterr, "make an entry of this kind");
        }
        if (!m || json_array_append_new(mounts, m) < 0)
            return FY_E_NOMEM;
    }
    return 0;
}

static int runc_compile_as(const char *runtime, const struct fy_plan *np, const fy_caps *caps, void **ret,
                           fy_error **reterr) {
    if (np->net_mode != FY_NET_DENY)
        return unsupported(reterr, "give a network other than deny (own namespace, loopback only)");
    if (np->nsecrets)
        return unsupported(reterr, "deliver secrets (they would be written into the bundle's config.json)");
    if (!np->nimage_layers)
        return unsupported(reterr, "run without a container image");
    if (!caps->host.is_root)
        return unsupported(reterr, "run rootless (root only)");
    struct linux_plan *pl = NULL;
    int r = linux_plan_compile(np, caps, &pl, reterr);
    if (r < 0)
        return r;
    struct runc_plan *rp = arena_keep(&pl->arena, calloc(1, sizeof(*rp)));
    json_t *root = json_object(), *mounts = json_array(), *masked = json_array(), *ro = json_array();
    if (!rp || !root || !mounts || !masked || !ro) {
        r = FY_E_NOMEM;
        goto fail;
    }
    rp->runtime = runtime;
    char key[64];
    snprintf(key, sizeof(key), LX_FACT_RUNTIME_PREFIX "%s", runtime);
    rp->path = arena_strdup(&pl->arena, caps_fact(caps, key));
    uint64_t sz = np->limit[FY_LIMIT_TMP_SIZE];
    rp->upper_opts = arena_printf(&pl->arena, "mode=0755,size=%llu",
                                  (unsigned long long)(sz == FY_UNLIMITED || sz == 0 ? 1ull << 30 : sz));
    if (!rp->path || !rp->upper_opts) {
        r = rp->path ? FY_E_NOMEM
                     : err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_RUNTIME, 0, NULL, "%s was not found by the probe",
                               runtime);
        goto fail;
    }
    /* The defaults runc itself masks, then the plan's. */
    static const char *const masked_default[] = {"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                                                 "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                                                 "/proc/scsi", "/sys/firmware", NULL};
    for (size_t i = 0; masked_default[i]; i++)
        json_array_append_new(masked, json_string(masked_default[i]));
    json_array_append_new(mounts, mount_obj("/dev", "tmpfs", "tmpfs",
                                            json_pack("[ssss]", "nosuid", "noexec", "mode=755", "size=65536k")));
    if ((r = layout(np, pl, rp, &pl->arena, mounts, masked, ro, reterr)) < 0)
        goto fail;

    /* The process: no capabilities, no_new_privileges, the plan's ids,
     * environment, directory and rlimits. */
    json_t *rl = json_array(), *rlim_values = json_object();
    struct strbuf applied;
    strbuf_init(&applied);
    for (size_t i = 0; rl && i < pl->nrlimits; i++) {
        /* Never above what the runtime inherits from us (the container's
         * user namespace cannot raise a hard limit); an unlimited one is
         * left out (inherited), as an OCI rlimit is a JSON integer. */
        struct rlimit cur, want = pl->rlimits[i].lim;
        if (getrlimit(pl->rlimits[i].resource, &cur) == 0) {
            if (want.rlim_max > cur.rlim_max)
                want.rlim_max = cur.rlim_max;
            if (want.rlim_cur > want.rlim_max)
                want.rlim_cur = want.rlim_max;
        }
        for (size_t k = 0; k < FY_ARRAY_SIZE(rlimit_names); k++)
            if (rlimit_names[k].res == pl->rlimits[i].resource && want.rlim_max != RLIM_INFINITY &&
                want.rlim_cur != RLIM_INFINITY)
            {
                json_array_append_new(rl, json_pack("{sssIsI}", "type", rlimit_names[k].name, "hard",
                                                    (json_int_t)want.rlim_max, "soft", (json_int_t)want.rlim_cur));
                char lower[32];
                size_t n = 0;
                for (const char *c = rlimit_names[k].name + 7; *c && n + 1 < sizeof(lower); c++)
                    lower[n++] = (char)(*c - 'A' + 'a');
                lower[n] = '\0';
                strbuf_printf(&applied, "%s%s", applied.len ? ", " : "", lower);
                if (rlimit_names[k].res == RLIMIT_SIGPENDING || rlimit_names[k].res == RLIMIT_MSGQUEUE)
                    json_object_set_new(rlim_values,
                                        rlimit_names[k].res == RLIMIT_SIGPENDING ? "signals_queued"
                                                                                 : "message_queue_bytes",
                                        json_integer((json_int_t)want.rlim_cur));
            }
    }
    char *limits_text = applied.oom || !rlim_values ? NULL
                        : runtime_limits(pl, applied.buf ? applied.buf : "none", rlim_values);
    strbuf_free(&applied);
    json_decref(rlim_values);
    if (!limits_text) {
        json_decref(rl);
        r = FY_E_NOMEM;
        goto fail;
    }
    free(pl->cgroup_json);
    pl->cgroup_json = limits_text;
    json_t *process = json_pack("{sbs{sIsI}sososssos{s[]s[]s[]s[]s[]}sb}", "terminal", 0, "user", "uid",
                                (json_int_t)np->uid, "gid", (json_int_t)np->gid, "args",
                                strv((const char *const *)np->argv), "env", strv((const char *const *)pl->envp), "cwd",
                                np->workdir ? np->workdir : "/", "rlimits", rl ? rl : json_array(), "capabilities",
                                "bounding", "effective", "inheritable", "permitted", "ambient", "noNewPrivileges", 1);
    json_t *ns = json_pack("[{ss}{ss}{ss}{ss}{ss}{ss}{ss}]", "type", "pid", "type", "network", "type", "ipc", "type",
                           "uts", "type", "mount", "type", "user", "type", "cgroup");
    json_t *map = json_pack("[{sIsIsI}]", "containerID", (json_int_t)0, "hostID", (json_int_t)np->id_first, "size",
                            (json_int_t)np->id_count);
    json_t *gmap = json_pack("[{sIsIsI}]", "containerID", (json_int_t)0, "hostID", (json_int_t)np->id_first, "size",
                             (json_int_t)np->id_count);
    /* Only the devices runc makes by default; limits are the attempt
     * cgroup's (the library's), which runc's cgroup lies under. */
    json_t *linux_o = json_pack("{sososososososs}", "namespaces", ns, "uidMappings", map, "gidMappings", gmap,
                                "maskedPaths", masked, "readonlyPaths", ro, "resources",
                                json_pack("{s[{sbss}]}", "devices", "allow", 0, "access", "rwm"), "cgroupsPath",
                                "@CGROUP@");
    masked = ro = NULL;
    if (!process || !linux_o) {
        json_decref(process);
        json_decref(linux_o);
        r = FY_E_NOMEM;
        goto fail;
    }
    json_object_set_new(root, "ociVersion", json_string("1.0.2"));
    json_object_set_new(root, "process", process);
    json_object_set_new(root, "root", json_pack("{sssb}", "path", "rootfs", "readonly", 0));
    json_object_set_new(root, "hostname", json_string(np->hostname ? np->hostname : "forgeyard"));
    json_object_set_new(root, "mounts", mounts);
    mounts = NULL;
    json_object_set_new(root, "linux", linux_o);
    char *cfg = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
    if (!(rp->config = arena_keep(&pl->arena, cfg))) {
        r = FY_E_NOMEM;
        goto fail;
    }

    /* What the result reports: the Linux plan's record, corrected. */
    json_t *iso = pl->isolation_json ? json_loads(pl->isolation_json, 0, NULL) : NULL;
    if (!iso) {
        r = FY_E_NOMEM;
        goto fail;
    }
    char vkey[64], ikey[64];
    snprintf(vkey, sizeof(vkey), LX_FACT_RUNTIME_PREFIX "%s_version", runtime);
    snprintf(ikey, sizeof(ikey), LX_FACT_RUNTIME_PREFIX "%s_issues", runtime);
    const char *issues = caps_fact(caps, ikey);
    json_object_set_new(iso, "runtime", json_pack("{ssssssss?so}", "name", runtime, "path", rp->path, "version",
                                                  caps_fact(caps, vkey) ? caps_fact(caps, vkey) : "?", "warning",
                                                  issues, "rootless", json_false()));
    json_object_set_new(iso, "seccomp", json_string("not enforced: the library's profiles are not translated "
                                                    "for the OCI runtime"));
    json_object_set_new(iso, "landlock_abi", json_integer(0));
    json_object_set_new(iso, "init", json_string("the OCI runtime's (the command is the container's pid 1)"));
    json_object_set_new(iso, "keyring", json_string("own: a fresh, empty session keyring, joined before the runtime "
                                                    "runs (the caller's session keyring and its keys are out of "
                                                    "reach; the runtime's --no-new-keyring keeps it)"));
    json_object_set_new(iso, "filesystem",
                        json_string("container image through the OCI runtime: overlay of its read-only layers and a "
                                    "fresh tmpfs upper, mounted by the library in a private mount namespace; the "
                                    "runtime mounts the declared paths (workspace paths checked for symbolic links "
                                    "at start, resolved again by the runtime)"));
    /* The plan's cgroup view is made by linux-child.c, not by config.json:
     * runc mounts no /sys at all (nor a cgroup file system). */
    json_object_set_new(iso, "cgroup_view",
                        json_string("none: the runtime mounts no /sys and no cgroup file system in the container "
                                    "(a cgroup namespace of its own)"));
    json_object_set_new(iso, "capabilities", json_string("none (the OCI process's five capability sets empty)"));
    json_object_set_new(iso, "exit_status", json_string("the runtime's: a signal death of the command reads as "
                                                        "exit status 128+n"));
    json_object_set_new(iso, "terminals", json_string(np->pty == FY_DEVICES_PRIVATE
                                                          ? "private: a devpts instance of the container's own"
                                                          : "none (the runtime's /dev/tty and /dev/ptmx exist)"));
    char *isotext = json_dumps(iso, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(iso);
    if (!isotext) {
        r = FY_E_NOMEM;
        goto fail;
    }
    free(pl->isolation_json);
    pl->isolation_json = isotext;
    pl->ext = rp;
    json_decref(root);
    *ret = pl;
    return 0;
fail:
    json_decref(root);
    json_decref(mounts);
    json_decref(masked);
    json_decref(ro);
    linux_plan_free(pl);
    return r == FY_E_NOMEM ? err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory") : r;
}

static int runc_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    return runc_compile_as("runc", np, caps, ret, reterr);
}
static int crun_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    return runc_compile_as("crun", np, caps, ret, reterr);
}

const struct fy_backend_ops linux_runc_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "oci-runc",
    .level = FY_LEVEL_CONTAINER,
    .cost = 40,
    .usable = runc_usable,
    .can_enforce = rt_can_enforce,
    .compile = runc_compile,
    .plan_free = linux_plan_free_hook,
    .start = lxr_start,
    .process = lxr_process,
    .terminate = lxr_terminate,
    .destroy = lxr_destroy,
    .forget = lxr_forget,
    .get_fd = lxr_get_fd,
    .stdio_fd = lx_stdio_fd,
    .next_deadline = lxr_next_deadline,
    .describe = linux_plan_describe,
    .unapplied = linux_plan_unapplied,
    .workload_ids = linux_plan_workload_ids,
    .images = true,
    .runtime = "runc",
    .known_issues = runc_known_issues,
};

/* crun takes the same command line; here it is refused by its probe
 * verdict (hybrid cgroups), so no attempt has run through it. */
const struct fy_backend_ops linux_crun_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "oci-crun",
    .level = FY_LEVEL_CONTAINER,
    .cost = 40,
    .usable = crun_usable,
    .can_enforce = rt_can_enforce,
    .compile = crun_compile,
    .plan_free = linux_plan_free_hook,
    .start = lxr_start,
    .process = lxr_process,
    .terminate = lxr_terminate,
    .destroy = lxr_destroy,
    .forget = lxr_forget,
    .get_fd = lxr_get_fd,
    .stdio_fd = lx_stdio_fd,
    .next_deadline = lxr_next_deadline,
    .describe = linux_plan_describe,
    .unapplied = linux_plan_unapplied,
    .workload_ids = linux_plan_workload_ids,
    .images = true,
    .runtime = "crun",
};
