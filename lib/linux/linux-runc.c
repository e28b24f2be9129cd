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
 * limits are written there, so OOM and pids events are ours to read), and
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
 * refused. */
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

/* What the runtime adapter adds to the Linux plan (pl->ext). */
struct runc_plan {
    const char *runtime;     /* "runc" */
    const char *path;        /* the runtime's program */
    const char *config;      /* config.json, paths relative to the bundle */
    const char **files;      /* PE_FILE contents, written to files/N */
    size_t nfiles;
    const char *upper_opts;  /* the tmpfs that holds the overlay's upper */
};

static const struct { int res; const char *name; } rlimit_names[] = {
    {RLIMIT_NOFILE, "RLIMIT_NOFILE"}, {RLIMIT_CORE, "RLIMIT_CORE"}, {RLIMIT_FSIZE, "RLIMIT_FSIZE"},
    {RLIMIT_STACK, "RLIMIT_STACK"},   {RLIMIT_NPROC, "RLIMIT_NPROC"}, {RLIMIT_AS, "RLIMIT_AS"},
    {RLIMIT_CPU, "RLIMIT_CPU"},       {RLIMIT_DATA, "RLIMIT_DATA"},   {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"},
};

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
static int layout(const struct fy_plan *np, struct runc_plan *rp, struct arena *ar, json_t *mounts, json_t *masked,
                  json_t *ro, fy_error **reterr) {
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
        case PE_PTYS:
            m = mount_obj(e->target, "devpts", "devpts",
                          json_pack("[sssss]", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"));
            break;
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
    if ((r = layout(np, rp, &pl->arena, mounts, masked, ro, reterr)) < 0)
        goto fail;

    /* The process: no capabilities, no_new_privileges, the plan's ids,
     * environment, directory and rlimits. */
    json_t *rl = json_array();
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
                json_array_append_new(rl, json_pack("{sssIsI}", "type", rlimit_names[k].name, "hard",
                                                    (json_int_t)want.rlim_max, "soft", (json_int_t)want.rlim_cur));
    }
    json_t *process = json_pack("{sbs{sIsI}sososssos{s[]s[]s[]s[]s[]}sb}", "terminal", 0, "user", "uid",
                                (json_int_t)np->uid, "gid", (json_int_t)np->gid, "args",
                                strv((const char *const *)np->argv), "env", strv((const char *const *)pl->envp), "cwd",
                                np->workdir ? np->workdir : "/", "rlimits", rl ? rl : json_array(), "capabilities",
                                "bounding", "effective", "inheritable", "permitted", "ambient", "noNewPrivileges", 1);
    json_t *ns = json_pack("[{ss}{ss}{ss}{ss}{ss}{ss}{ss}]", "type", "pid", "type", "network", "type", "ipc", "type",
                           "uts", "type", "mount", "type", "user", "type", "cgroup");
    json_t *map = json_pack("[{sIsIsI}]", "containerID", (json_int_t)0, "hostID", (json_int_t)np->id_first, "size",
                            (json_int_t)np->id_count);
    json_t *gmap = json_deep_copy(map);
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
    json_object_set_new(iso, "filesystem",
                        json_string("container image through the OCI runtime: overlay of its read-only layers and a "
                                    "fresh tmpfs upper, mounted by the library in a private mount namespace; the "
                                    "runtime mounts the declared paths (workspace paths checked for symbolic links "
                                    "at start, resolved again by the runtime)"));
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

/* ------------------------------------------------------------------ */
/* start                                                              */
/* ------------------------------------------------------------------ */

#define RX_RUN_DIR "/run/forgeyard-runtime"
#define RX_DELETE_MS 10000

/* The attempt: the Linux backend's struct lx first (its stdio helpers and
 * output draining work on it), then what the adapter adds. */
struct rx {
    struct lx x;
    char *bundle;            /* RX_RUN_DIR/<id> */
    char *id;                /* the container id = the attempt's cgroup name */
    int err_rd;              /* the middle's setup failure: struct rx_err */
    bool err_seen, killed_tree;
    uint32_t err_step;
    int err_errno;
    char *runtime_msg;       /* runc's own error, from its log */
    uint64_t t_started;
};

struct rx_err {
    uint32_t step;
    int32_t err;
};

static void rx_close(int *fd) { lx_close_fd(fd); }

static int write_all(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        off += (size_t)w;
    }
    if (fchmod(fd, mode) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    close(fd);
    return 0;
}

/* Everything the middle process needs, computed before the fork. */
struct middle_args {
    int task_fds[LX_GO_MAX_FDS + 1];
    size_t ntask;
    int lower_fds[LX_MAX_LAYERS];
    size_t nlower;
    char *const *lowers;     /* the layers, top first, NULL-terminated */
    char overlay_tail[4096 - 64 * 1]; /* ",upperdir=...,workdir=...,userxattr" */
    const char *scratch, *upper, *work, *rootfs;
    const char *upper_opts;
    char overlay_opts[4096];
    uint32_t root_uid, root_gid;
    const char *const *argv;
    char *const *envp;
    int stdio[3];
    int err_wr;
};

__attribute__((noreturn)) static void middle_fail(const struct middle_args *m, uint32_t step) {
    struct rx_err e = {step, errno};
    (void)syscall(SYS_write, m->err_wr, &e, sizeof e);
    syscall(SYS_exit_group, 125);
    __builtin_unreachable();
}

/* The middle process (raw system calls only: the host may be threaded):
 * joins the attempt's cgroups, makes a private mount namespace with the
 * overlay root, runs the runtime as its child and ends the way it ended. */
__attribute__((noreturn)) static void middle_main(struct middle_args *m) {
    for (int sig = 1; sig < 65; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(sig, &sa, NULL);
    }
    for (size_t i = 0; i < m->ntask; i++)
        if (syscall(SYS_write, m->task_fds[i], "0", 1) < 0)
            middle_fail(m, FY_STEP_CGROUP);
    if (syscall(SYS_unshare, CLONE_NEWNS) < 0 || syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        middle_fail(m, FY_STEP_MOUNT);
    if (syscall(SYS_mount, "tmpfs", m->scratch, "tmpfs", MS_NOSUID | MS_NODEV, m->upper_opts) < 0 ||
        syscall(SYS_mkdir, m->upper, 0755) < 0 || syscall(SYS_chown, m->upper, m->root_uid, m->root_gid) < 0 ||
        syscall(SYS_mkdir, m->work, 0700) < 0)
        middle_fail(m, FY_STEP_MOUNT);
    /* The layers are opened here, in the new namespace (overlayfs clones
     * only mounts of the caller's own), and named by fd: the option text
     * must fit a page. */
    char *o = m->overlay_opts, *end = m->overlay_opts + sizeof(m->overlay_opts);
    static const char head[] = "lowerdir=", pfx[] = "/proc/self/fd/";
    memcpy(o, head, sizeof(head) - 1);
    o += sizeof(head) - 1;
    size_t nl = 0;
    for (; nl < LX_MAX_LAYERS && m->lowers[nl]; nl++) {
        int fd = (int)syscall(SYS_open, m->lowers[nl], O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
            middle_fail(m, FY_STEP_MOUNT);
        if (end - o < 32)
            break;
        if (nl)
            *o++ = ':';
        memcpy(o, pfx, sizeof(pfx) - 1);
        o += sizeof(pfx) - 1;
        char digits[12];
        int nd = 0;
        for (unsigned v = (unsigned)fd; nd == 0 || v; v /= 10)
            digits[nd++] = (char)('0' + v % 10);
        while (nd)
            *o++ = digits[--nd];
    }
    size_t tl = 0;
    while (m->overlay_tail[tl])
        tl++;
    if (m->lowers[nl] || (size_t)(end - o) <= tl) {
        errno = E2BIG;
        middle_fail(m, FY_STEP_MOUNT);
    }
    memcpy(o, m->overlay_tail, tl + 1);
    if (syscall(SYS_mount, "overlay", m->rootfs, "overlay", MS_NOSUID | MS_NODEV, m->overlay_opts) < 0)
        middle_fail(m, FY_STEP_MOUNT);
    pid_t self = (pid_t)syscall(SYS_getpid);
    pid_t pid = sys_fork();
    if (pid < 0)
        middle_fail(m, FY_STEP_SPAWN);
    if (pid == 0) {
        /* The runtime: dies with the middle (SIGKILLed at a hard kill). */
        if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || syscall(SYS_getppid) != self)
            syscall(SYS_exit_group, 127);
        for (int i = 0; i < 3; i++)
            if (syscall(SYS_dup2, m->stdio[i], i) < 0)
                middle_fail(m, FY_STEP_OUTPUT);
        if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
            for (int fd = 3; fd < 1024; fd++)
                if (fd != m->err_wr)
                    (void)syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        syscall(SYS_execve, m->argv[0], m->argv, m->envp);
        middle_fail(m, FY_STEP_RUNTIME);
    }
    if (syscall(SYS_close_range, 0U, ~0U, 0U) < 0)
        for (int fd = 0; fd < 1024; fd++)
            (void)syscall(SYS_close, fd);
    int st = 0;
    while (syscall(SYS_wait4, pid, &st, __WALL, NULL) < 0)
        if (errno != EINTR)
            syscall(SYS_exit_group, 126);
    if (WIFSIGNALED(st)) {
        struct rlimit nocore = {0, 0};
        (void)syscall(SYS_setrlimit, RLIMIT_CORE, &nocore);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        (void)syscall(SYS_kill, self, WTERMSIG(st));
        syscall(SYS_kill, self, SIGKILL);
    }
    syscall(SYS_exit_group, WEXITSTATUS(st));
    __builtin_unreachable();
}

static struct rx *rx_new(void) {
    struct rx *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    struct lx *x = &r->x;
    x->pidfd = x->epfd = x->timerfd = x->sync_wr = x->status_rd = x->state_fd = -1;
    x->cg.v2_fd = -1;
    x->notify_sock = x->notify_fd = -1;
    x->reaper = (struct lx_reaper){-1, -1, -1, -1};
    lxn_run_init(&x->net);
    for (int i = 0; i < 3; i++)
        x->child_stdio[i] = x->host_pipe[i] = x->drain_rd[i] = x->spool_fd[i] = -1;
    r->err_rd = -1;
    return r;
}

/* A workspace path must not be reached through a symbolic link: checked
 * here (openat2 RESOLVE_NO_SYMLINKS), as the runtime resolves it again. */
static int check_no_symlinks(const char *path, fy_error **reterr) {
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
    int fd = sys_openat2(AT_FDCWD, path, &how, sizeof how);
    if (fd < 0) {
        int e = errno;
        return err_set(reterr, err_from_errno(e), FY_STEP_MOUNT, e, path, "workspace path %s: %s%s", path,
                       strerror(e), e == ELOOP ? " (a symbolic link in a workspace path is refused)" : "");
    }
    close(fd);
    return 0;
}

static int start_inner(fy_handle *h, fy_error **reterr) {
    const struct linux_plan *pl = h->pr->plan;
    const struct runc_plan *rp = pl->ext;
    const struct fy_plan *np = pl->np;
    struct rx *r = rx_new();
    if (!r)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
    h->b = r;
    struct lx *x = &r->x;
    struct middle_args m;
    memset(&m, 0, sizeof m);
    m.err_wr = -1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(m.task_fds); i++)
        m.task_fds[i] = -1;
    int rc = 0;
    char *paths[8] = {0};
    for (size_t i = 0; i < np->nentries; i++)
        if (np->entries[i].kind == PE_HOST && (np->entries[i].flags & PLAN_WORKSPACE) &&
            (rc = check_no_symlinks(np->entries[i].host, reterr)) < 0)
            return rc;

    /* The bundle. */
    if (mkdir(RX_RUN_DIR, 0711) < 0 && errno != EEXIST)
        return lx_sys_err(reterr, FY_STEP_RUNTIME, RX_RUN_DIR);
    if (!(x->cg.name = cg_new_name()) || !(r->id = util_strdup(x->cg.name)) ||
        !(r->bundle = util_asprintf(RX_RUN_DIR "/%s", r->id)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
    if (mkdir(r->bundle, 0711) < 0)
        return lx_sys_err(reterr, FY_STEP_RUNTIME, r->bundle);
    paths[0] = util_asprintf("%s/files", r->bundle);
    paths[1] = util_asprintf("%s/rootfs", r->bundle);
    paths[2] = util_asprintf("%s/scratch", r->bundle);
    paths[3] = util_asprintf("%s/scratch/upper", r->bundle);
    paths[4] = util_asprintf("%s/scratch/work", r->bundle);
    paths[5] = util_asprintf("%s/state", r->bundle);
    paths[6] = util_asprintf("%s/config.json", r->bundle);
    for (size_t i = 0; i < 7; i++)
        if (!paths[i]) {
            rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
            goto out;
        }
    if (mkdir(paths[0], 0711) < 0 || mkdir(paths[1], 0755) < 0 || mkdir(paths[2], 0700) < 0 ||
        mkdir(paths[5], 0700) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "making the bundle");
        goto out;
    }
    for (size_t i = 0; i < rp->nfiles; i++) {
        char f[4200];
        snprintf(f, sizeof(f), "%s/%zu", paths[0], i);
        int e = write_all(f, rp->files[i], 0644);
        if (e < 0) {
            errno = -e;
            rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "writing the bundle's files");
            goto out;
        }
    }
    {
        /* The container's cgroup, relative: under the attempt's own cgroups
         * (runc runs in them), beside ours elsewhere. */
        const char *at = strstr(rp->config, "\"@CGROUP@\"");
        char *cfg = at ? util_asprintf("%.*s\"%s\"%s", (int)(at - rp->config), rp->config, r->id, at + 10) : NULL;
        int e = cfg ? write_all(paths[6], cfg, 0600) : -ENOMEM;
        free(cfg);
        if (e < 0) {
            errno = -e;
            rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "writing config.json");
            goto out;
        }
    }

    /* The attempt's cgroups, with the limits; the middle joins them. */
    if (pl->cg.enabled) {
        if ((rc = cg_create(&pl->cg, &x->cg, CG_PART_V2 | CG_PART_V1, reterr)) < 0)
            goto out;
        size_t n = 0;
        if ((rc = cg_open_tasks(&pl->cg, &x->cg, m.task_fds, LX_GO_MAX_FDS, &n, reterr)) < 0)
            goto out;
        m.ntask = n;
        if (x->cg.v2_dir) {
            char p[4200];
            snprintf(p, sizeof(p), "%s/cgroup.procs", x->cg.v2_dir);
            if ((m.task_fds[m.ntask] = open(p, O_WRONLY | O_CLOEXEC)) < 0) {
                rc = lx_sys_err(reterr, FY_STEP_CGROUP, p);
                goto out;
            }
            m.ntask++;
        }
    }

    /* What a crash of this host would leave: the attempt's cgroups, in the
     * bundle (runc_gc reads them; runc's own are in its state). */
    {
        struct strbuf cgs;
        strbuf_init(&cgs);
        if (x->cg.v2_dir)
            strbuf_printf(&cgs, "%s\n", x->cg.v2_dir);
        for (int c = 0; c < CG_NCTL; c++)
            if (x->cg.v1_dir[c])
                strbuf_printf(&cgs, "%s\n", x->cg.v1_dir[c]);
        char f[4200];
        snprintf(f, sizeof(f), "%s/cgroups", r->bundle);
        int e = cgs.oom ? -ENOMEM : write_all(f, cgs.buf ? cgs.buf : "", 0600);
        strbuf_free(&cgs);
        if (e < 0) {
            errno = -e;
            rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "recording the attempt's cgroups");
            goto out;
        }
    }

    /* The overlay (the middle opens the layers). */
    m.lowers = pl->overlay_lowers;
    if ((size_t)snprintf(m.overlay_tail, sizeof(m.overlay_tail), ",upperdir=%s,workdir=%s,userxattr", paths[3],
                         paths[4]) >= sizeof(m.overlay_tail)) {
        rc = err_set(reterr, FY_E_RANGE, FY_STEP_MOUNT, 0, NULL, "the overlay's options do not fit a page");
        goto out;
    }
    m.scratch = paths[2];
    m.upper = paths[3];
    m.work = paths[4];
    m.rootfs = paths[1];
    m.upper_opts = rp->upper_opts;
    m.root_uid = np->id_first;
    m.root_gid = np->id_first;

    /* Streams, the event loop's fds. */
    if ((x->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (x->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0 ||
        lx_epoll_watch(x, x->timerfd) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "epoll");
        goto out;
    }
    x->output_cap = np->limit[FY_LIMIT_OUTPUT];
    if ((rc = lx_setup_stdio(x, np, -1, reterr)) < 0)
        goto out;
    for (int i = 0; i < 3; i++)
        m.stdio[i] = x->child_stdio[i];
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "pipe");
        goto out;
    }
    r->err_rd = ep[0];
    m.err_wr = ep[1];

    char *log = util_asprintf("%s/runtime.log", r->bundle);
    const char *argv[] = {rp->path, "--root", paths[5], "--log", log, "--log-format", "json", "run", "--bundle",
                          r->bundle, "--no-new-keyring", r->id, NULL};
    char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    m.argv = argv;
    m.envp = envp;
    if (!log) {
        rc = err_set(reterr, FY_E_NOMEM, FY_STEP_RUNTIME, 0, NULL, "out of memory");
        goto out;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r->t_started = x->t_go = util_now_usec();
    pid_t pid = sys_fork_quiet_pidfd(&x->pidfd);
    if (pid == 0)
        middle_main(&m);
    int fe = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(log);
    if (pid < 0) {
        errno = fe;
        rc = lx_sys_err(reterr, FY_STEP_SPAWN, "fork");
        goto out;
    }
    x->pid = pid;
    if (x->pidfd < 0 && (x->pidfd = sys_pidfd_open(pid, 0)) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_SPAWN, "pidfd_open");
        kill(pid, SIGKILL);
        goto out;
    }
    if (lx_epoll_watch(x, x->pidfd) < 0 || lx_set_nonblock(r->err_rd) < 0) {
        rc = lx_sys_err(reterr, FY_STEP_RUNTIME, "epoll");
        goto out;
    }
out:
    for (size_t i = 0; i < m.ntask; i++)
        close(m.task_fds[i]);
    for (size_t i = 0; i < m.nlower; i++)
        close(m.lower_fds[i]);
    rx_close(&m.err_wr);
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->child_stdio[i]);
    for (size_t i = 0; i < FY_ARRAY_SIZE(paths); i++)
        free(paths[i]);
    if (rc < 0)
        return rc;
    lx_arm_timer(h, x);
    return 0;
}

/* ------------------------------------------------------------------ */
/* ending                                                             */
/* ------------------------------------------------------------------ */

/* Each cgroup directory of the attempt, and the container's one below it. */
static size_t attempt_dirs(const struct rx *r, char **out, size_t max) {
    const struct lx *x = &r->x;
    size_t n = 0;
    const char *dirs[CG_NCTL + 1];
    size_t nd = 0;
    if (x->cg.v2_dir)
        dirs[nd++] = x->cg.v2_dir;
    for (int c = 0; c < CG_NCTL; c++)
        if (x->cg.v1_dir[c])
            dirs[nd++] = x->cg.v1_dir[c];
    for (size_t i = 0; i < nd && n + 2 <= max; i++) {
        out[n++] = util_strdup(dirs[i]);
        out[n++] = util_asprintf("%s/%s", dirs[i], r->id);
    }
    return n;
}

static void signal_listed(const char *dir, int sig) {
    char p[4200], buf[16384];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    for (char *s = buf; *s;) {
        pid_t pid = (pid_t)strtol(s, &s, 10);
        if (pid > 0)
            kill(pid, sig);
        while (*s == '\n')
            s++;
    }
}

/* Every process of the attempt (the runtime, the container's tree):
 * frozen, killed, thawed. */
static void rx_kill_tree(struct rx *r) {
    struct lx *x = &r->x;
    char *dirs[2 * (CG_NCTL + 1)];
    size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
    const char *fz = x->cg.v1_dir[CG_FREEZER];
    char p[4200];
    if (fz) {
        snprintf(p, sizeof(p), "%s/freezer.state", fz);
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "FROZEN", 6);
            close(fd);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (dirs[i])
            signal_listed(dirs[i], SIGKILL);
    if (fz) {
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "THAWED", 6);
            close(fd);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    if (x->pidfd >= 0 && !x->reaped)
        sys_pidfd_send_signal(x->pidfd, SIGKILL, NULL, 0);
    r->killed_tree = true;
    x->kill = KS_HARD;
}

static void runc_terminate(fy_handle *h) {
    struct rx *r = h->b;
    struct lx *x = &r->x;
    if (x->kill != KS_NONE || x->reaped)
        return;
    if (!h->cancel_started)
        h->cancel_started = util_now_usec();
    uint64_t grace = x->reaped ? 0 : ((const struct linux_plan *)h->pr->plan)->np->limit[FY_LIMIT_GRACE];
    if (grace == 0) {
        rx_kill_tree(r);
    } else {
        /* Soft: SIGTERM to every process of the container (the runtime's
         * `kill --all`); a pid 1 without a handler ignores it, the grace
         * then ends in the hard kill. */
        char *dirs[2 * (CG_NCTL + 1)];
        size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
        for (size_t i = 1; i < n; i += 2)
            if (dirs[i])
                signal_listed(dirs[i], SIGTERM);
        for (size_t i = 0; i < n; i++)
            free(dirs[i]);
        x->kill = KS_SOFT;
        x->grace_deadline = util_now_usec() + grace;
    }
    lx_arm_timer(h, x);
}

/* runc's own error (its --log, JSON lines): the last message at level
 * error, or NULL. */
static char *runtime_error(const char *bundle) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/runtime.log", bundle);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *text = util_read_fd(fd, 1 << 20);
    close(fd);
    char *msg = NULL;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        json_t *j = json_loads(line, 0, NULL);
        const char *lvl = j ? json_string_value(json_object_get(j, "level")) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "msg")) : NULL;
        /* Only the runtime's own end ("runc run failed: ..."): a message
         * after the command ran (a cgroup it could not remove, which the
         * cleanup below witnesses) is not the command's failure. */
        if (lvl && m && (strcmp(lvl, "error") == 0 || strcmp(lvl, "fatal") == 0) && strstr(m, " run failed")) {
            free(msg);
            msg = util_strdup(m);
        }
        json_decref(j);
        line = end ? end + 1 : NULL;
    }
    free(text);
    return msg;
}

/* Cgroup directories named id that runc made beside ours (hierarchies the
 * library does not use: its own cgroup there, then id), removed when
 * empty; how many are left. */
static int runtime_cgroups_left(const char *id) {
    FILE *mi = fopen("/proc/self/mountinfo", "re");
    FILE *cg = fopen("/proc/self/cgroup", "re");
    int left = 0;
    char own[64][512];
    char ctl[64][256];
    size_t nown = 0;
    char line[4096];
    while (cg && nown < 64 && fgets(line, sizeof(line), cg)) {
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!a || !b)
            continue;
        *b = '\0';
        snprintf(ctl[nown], sizeof(ctl[nown]), "%s", a + 1);
        snprintf(own[nown], sizeof(own[nown]), "%.*s", (int)strcspn(b + 1, "\n"), b + 1);
        nown++;
    }
    while (mi && fgets(line, sizeof(line), mi)) {
        char *sep = strstr(line, " - ");
        char mnt[4096], fstype[32], opts[1024] = "";
        if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
            sscanf(sep + 3, "%31s %*s %1023s", fstype, opts) < 1)
            continue;
        bool v2 = strcmp(fstype, "cgroup2") == 0;
        if (!v2 && strcmp(fstype, "cgroup") != 0)
            continue;
        for (size_t i = 0; i < nown; i++) {
            bool match = v2 ? ctl[i][0] == '\0' : false;
            if (!v2 && ctl[i][0]) {
                /* every controller of the line among the mount's options */
                match = true;
                char c[256];
                snprintf(c, sizeof(c), "%s", ctl[i]);
                for (char *t = strtok(c, ","); t && match; t = strtok(NULL, ",")) {
                    char *hit = strstr(opts, t);
                    size_t tl = strlen(t);
                    match = hit && (hit == opts || hit[-1] == ',') && (hit[tl] == ',' || hit[tl] == '\0');
                }
            }
            if (!match)
                continue;
            char p[4700];
            snprintf(p, sizeof(p), "%s%s/%s", mnt, strcmp(own[i], "/") == 0 ? "" : own[i], id);
            if (rmdir(p) < 0 && errno != ENOENT)
                left++;
            break;
        }
    }
    if (mi)
        fclose(mi);
    if (cg)
        fclose(cg);
    return left;
}

/* Whether any mount of this process's namespace lies under dir. */
static int mounts_under(const char *dir) {
    FILE *mi = fopen("/proc/self/mountinfo", "re");
    if (!mi)
        return 0;
    char line[4096], mnt[4096];
    int n = 0;
    size_t dl = strlen(dir);
    while (fgets(line, sizeof(line), mi))
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strncmp(mnt, dir, dl) == 0 &&
            (mnt[dl] == '/' || mnt[dl] == '\0'))
            n++;
    fclose(mi);
    return n;
}

/* `runtime --root STATE delete --force ID` (bounded), then whether its
 * state is gone. */
static bool runtime_delete(const struct runc_plan *rp, const struct rx *r) {
    char state[4200], one[4300];
    snprintf(state, sizeof(state), "%s/state", r->bundle);
    snprintf(one, sizeof(one), "%s/%s", state, r->id);
    if (!pu_exists(one))
        return true;
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    const char *argv[] = {rp->path, "--root", state, "delete", "--force", r->id, NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    struct pu_proc pr;
    if (devnull >= 0 && pu_spawn(argv, envp, devnull, devnull, &pr) == 0)
        (void)pu_finish(&pr, pu_deadline_after_ms(RX_DELETE_MS), NULL);
    if (devnull >= 0)
        close(devnull);
    return !pu_exists(one);
}

static void rx_finish(fy_handle *h, struct rx *r) {
    struct lx *x = &r->x;
    fy_result *res = result_new();
    if (!res)
        return;
    struct attempt_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.t_cleanup_begin = util_now_usec();
    const struct linux_plan *pl = h->pr->plan;
    const struct runc_plan *rp = pl->ext;
    if (pl->cg.enabled)
        cg_usage(&pl->cg, &x->cg, &x->usage);
    rep.isolation_json = util_strdup(pl->isolation_json);
    rep.limits_json = util_strdup(pl->cgroup_json);
    if (r->err_seen) {
        rep.setup_failed = true;
        rep.setup_step = r->err_step;
        rep.setup_errno = r->err_errno;
        rep.setup_detail = util_asprintf("%s: %s", fy_step_name(r->err_step), strerror(r->err_errno));
    } else if (x->exit_seen && WIFEXITED(x->wstatus) && (r->runtime_msg = runtime_error(r->bundle))) {
        /* The runtime failed (its log says so): not the command's exit. */
        rep.setup_failed = true;
        rep.setup_step = strstr(r->runtime_msg, "exec") ? FY_STEP_EXEC : FY_STEP_RUNTIME;
        rep.setup_detail = util_asprintf("%s: %s", rp->runtime, r->runtime_msg);
    } else if (x->exit_seen && !r->killed_tree) {
        rep.exit_seen = true;
        rep.wstatus = x->wstatus;
    }
    rep.oom_killed = x->usage.oom_kills != 0;
    rep.memory_limit = pl->cg.memory;
    rep.pids_limit_hit = x->usage.pids_max_events != 0;
    rep.t_isolation = r->t_started;
    rep.t_exit = x->t_reaped;
    rep.t_ended = x->t_reaped;
    rep.t_output_eof = x->t_eof;
    rep.output_bytes = x->output_bytes;
    rep.output_truncated = x->truncated;
    rep.output_limit = x->output_cap;
    for (int i = 1; i < 3; i++) {
        uint32_t mode = pl->np->stdio[i].mode;
        rep.stream_counted[i] = mode == FY_STDIO_FILE || mode == FY_STDIO_CALLBACK;
        rep.stream_bytes[i] = x->stream_bytes[i];
    }
    if (x->usage.have_cpu) {
        rep.usage[FY_USAGE_CPU_USER_USEC] = x->usage.cpu_user_usec;
        rep.usage[FY_USAGE_CPU_SYSTEM_USEC] = x->usage.cpu_system_usec;
        rep.usage_known |= (1u << FY_USAGE_CPU_USER_USEC) | (1u << FY_USAGE_CPU_SYSTEM_USEC);
    }
    if (x->usage.have_memory) {
        rep.usage[FY_USAGE_MEMORY_PEAK] = x->usage.memory_peak;
        rep.usage_known |= 1u << FY_USAGE_MEMORY_PEAK;
    }
    rep.usage_source = x->cg.v2_dir && pl->cg.v2_limits ? "cgroup v2" : pl->cg.enabled ? "cgroup v1" : NULL;

    /* Cleanup, witnessed. Nothing of the attempt may run (the runtime and
     * its container were in the attempt's cgroups); the runtime's state
     * goes, then every cgroup, then the bundle. */
    if (pl->cg.enabled)
        rx_kill_tree(r);
    bool state_gone = runtime_delete(rp, r);
    int cgroups_left = runtime_cgroups_left(r->id);
    {
        char *dirs[2 * (CG_NCTL + 1)];
        size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
        for (size_t i = 1; i < n; i += 2)
            if (dirs[i] && rmdir(dirs[i]) < 0 && errno != ENOENT)
                cgroups_left++;
        for (size_t i = 0; i < n; i++)
            free(dirs[i]);
    }
    if (cg_remove_empty(&x->cg))
        rep.left[FY_LEFT_PROCESSES] = (uint64_t)cg_count_procs(&pl->cg, &x->cg);
    rep.left[FY_LEFT_CGROUPS] = (uint64_t)cg_destroy(&pl->cg, &x->cg) + (uint64_t)cgroups_left;
    rep.left[FY_LEFT_MOUNTS] = (uint64_t)mounts_under(r->bundle);
    for (int i = 0; i < 3; i++)
        lx_close_fd(&x->spool_fd[i]);
    bool files_left = state_remove_tree(r->bundle) < 0 || pu_exists(r->bundle);
    rep.left[FY_LEFT_FILES] = (files_left ? 1u : 0u) + (state_gone ? 0u : 1u);
    rep.t_cleanup_end = util_now_usec();
    attempt_finish(h, &rep, res);
}

static void read_err(struct rx *r) {
    struct rx_err e;
    if (r->err_rd >= 0 && read(r->err_rd, &e, sizeof e) == (ssize_t)sizeof e) {
        r->err_seen = true;
        r->err_step = e.step;
        r->err_errno = e.err;
    }
}

static int runc_process(fy_handle *h, fy_error **reterr) {
    struct rx *r = h->b;
    struct lx *x = &r->x;
    const struct linux_plan *pl = h->pr->plan;
    struct epoll_event evs[8];
    while (epoll_wait(x->epfd, evs, 8, 0) == 8)
        ;
    uint64_t expirations;
    (void)!read(x->timerfd, &expirations, sizeof(expirations));
    for (int i = 1; i < 3; i++)
        if (x->drain_rd[i] >= 0)
            lx_drain_output(h, x, i); /* a truncation hard-kills through lx_hard_kill */
    if (x->kill == KS_HARD && !r->killed_tree)
        rx_kill_tree(r);
    if (!x->reaped) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (syscall(SYS_waitid, FY_P_PIDFD, x->pidfd, &si, WEXITED | __WALL | WNOHANG, NULL) == 0 && si.si_pid) {
            x->reaped = true;
            x->exit_seen = true;
            x->wstatus = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status & 0x7f;
            x->t_reaped = util_now_usec();
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->pidfd, NULL);
            read_err(r);
        }
    }
    uint64_t now = util_now_usec();
    if (pl->cg.enabled && !x->reaped && now >= x->next_poll) {
        cg_usage(&pl->cg, &x->cg, &x->usage);
        if (x->usage.oom_kills && h->end == END_NONE) {
            handle_end(h, END_OOM, FY_STEP_CGROUP_LIMIT, 0, "memory limit of %llu bytes",
                       (unsigned long long)pl->cg.memory);
            rx_kill_tree(r);
        } else if (x->usage.pids_max_events && h->end == END_NONE) {
            handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "pids");
            rx_kill_tree(r);
        }
        x->next_poll = now + 100000;
    }
    if (x->kill == KS_NONE && h->end == END_NONE && h->deadline && now >= h->deadline) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(pl->np->limit[FY_LIMIT_WALL_TIME] / 1000));
        runc_terminate(h);
    }
    if (x->kill == KS_SOFT && now >= x->grace_deadline)
        rx_kill_tree(r);
    lx_arm_timer(h, x);
    if (!x->reaped || lx_outputs_open(x))
        return 0;
    if (!x->t_eof)
        x->t_eof = util_now_usec();
    rx_finish(h, r);
    if (!h->result)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    return 1;
}

static void rx_free(struct rx *r) {
    struct lx *x = &r->x;
    free(x->cg.name);
    free(x->cg.v2_dir);
    if (x->cg.v2_fd >= 0)
        close(x->cg.v2_fd);
    for (int c = 0; c < CG_NCTL; c++)
        free(x->cg.v1_dir[c]);
    lx_close_fd(&x->pidfd);
    lx_close_fd(&x->epfd);
    lx_close_fd(&x->timerfd);
    for (int i = 0; i < 3; i++) {
        lx_close_fd(&x->child_stdio[i]);
        lx_close_fd(&x->host_pipe[i]);
        lx_close_fd(&x->drain_rd[i]);
        lx_close_fd(&x->spool_fd[i]);
    }
    rx_close(&r->err_rd);
    free(r->bundle);
    free(r->id);
    free(r->runtime_msg);
    free(r);
}

/* Kills, reaps and removes everything (idempotent; also after a failed
 * start). */
static void runc_destroy(fy_handle *h) {
    struct rx *r = h->b;
    if (!r)
        return;
    struct lx *x = &r->x;
    const struct linux_plan *pl = h->pr->plan;
    if (!h->result) {
        if (x->pidfd >= 0 && !x->reaped) {
            rx_kill_tree(r);
            siginfo_t si;
            while (syscall(SYS_waitid, FY_P_PIDFD, x->pidfd, &si, WEXITED | __WALL, NULL) < 0 && errno == EINTR)
                ;
            x->reaped = true;
        }
        if (r->bundle) {
            if (r->id)
                (void)runtime_delete(pl->ext, r);
            if (r->id)
                (void)runtime_cgroups_left(r->id);
            if (pl->cg.enabled) {
                char *dirs[2 * (CG_NCTL + 1)];
                size_t n = attempt_dirs(r, dirs, FY_ARRAY_SIZE(dirs));
                for (size_t i = 1; i < n; i += 2)
                    if (dirs[i])
                        (void)rmdir(dirs[i]);
                for (size_t i = 0; i < n; i++)
                    free(dirs[i]);
                (void)cg_destroy(&pl->cg, &x->cg);
            }
            for (int i = 0; i < 3; i++)
                if (x->spool_created[i])
                    unlink(x->spool_created[i]);
            (void)state_remove_tree(r->bundle);
        }
    }
    rx_free(r);
    h->b = NULL;
}

static void runc_forget(fy_handle *h) {
    struct rx *r = h->b;
    if (r)
        rx_free(r);
    h->b = NULL;
}

static int runc_start(fy_handle *h, fy_error **reterr) {
    int r = start_inner(h, reterr);
    if (r < 0)
        runc_destroy(h); /* nothing of a failed start stays */
    return r;
}

/* ------------------------------------------------------------------ */
/* orphans                                                            */
/* ------------------------------------------------------------------ */

/* The bundles of hosts that died (RX_RUN_DIR/forgeyard-<pid>-<hex> whose
 * pid is gone): every process of the attempt's cgroups killed (the middle,
 * the runtime, the container), `runc delete --force`, the cgroups and the
 * bundle removed. A bundle whose host lives is never touched. */
int linux_runc_gc(uint64_t *destroyed) {
    DIR *d = opendir(RX_RUN_DIR);
    if (!d)
        return 0;
    int left = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0;
        char hex[64];
        if (sscanf(e->d_name, "forgeyard-%d-%63[0-9a-f]", &pid, hex) != 2 || pid <= 0)
            continue;
        char p[4200];
        snprintf(p, sizeof(p), "/proc/%d", pid);
        if (pu_exists(p))
            continue; /* its host lives (or the pid was reused: left for later) */
        struct rx r = {.bundle = util_asprintf(RX_RUN_DIR "/%s", e->d_name), .id = util_strdup(e->d_name)};
        char *cgs = NULL;
        if (r.bundle) {
            snprintf(p, sizeof(p), "%s/cgroups", r.bundle);
            int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            cgs = fd >= 0 ? util_read_fd(fd, 1 << 16) : NULL;
            if (fd >= 0)
                close(fd);
        }
        /* Frozen where a v1 freezer is among them, then everything killed. */
        for (int round = 0; round < 2 && cgs; round++)
            for (char *line = cgs; *line;) {
                size_t len = strcspn(line, "\n");
                char dir[4200];
                snprintf(dir, sizeof(dir), "%.*s", (int)len, line);
                if (round == 0 && strstr(dir, "/freezer/")) {
                    snprintf(p, sizeof(p), "%s/freezer.state", dir);
                    int fd = open(p, O_WRONLY | O_CLOEXEC);
                    if (fd >= 0) {
                        (void)!write(fd, "FROZEN", 6);
                        close(fd);
                    }
                }
                if (round == 1) {
                    signal_listed(dir, SIGKILL);
                    snprintf(p, sizeof(p), "%s/%s", dir, r.id ? r.id : "");
                    signal_listed(p, SIGKILL);
                    if (strstr(dir, "/freezer/")) {
                        snprintf(p, sizeof(p), "%s/freezer.state", dir);
                        int fd = open(p, O_WRONLY | O_CLOEXEC);
                        if (fd >= 0) {
                            (void)!write(fd, "THAWED", 6);
                            close(fd);
                        }
                    }
                }
                line += len;
                while (*line == '\n')
                    line++;
            }
        const char *rt = pu_exists("/usr/sbin/runc") ? "/usr/sbin/runc" : "/usr/bin/runc";
        char *found = pu_find_program("runc");
        struct runc_plan rp = {.runtime = "runc", .path = found ? found : rt};
        bool gone = r.bundle && r.id && runtime_delete(&rp, &r);
        free(found);
        if (r.id)
            left += runtime_cgroups_left(r.id);
        /* The container's cgroup below each of the attempt's, then the attempt's
         * (a killed task leaves its cgroup a moment later: a few tries). */
        for (int tries = 0; cgs && tries < 50; tries++) {
            int busy = 0;
            for (char *line = cgs; *line;) {
                size_t len = strcspn(line, "\n");
                char dir[4200];
                snprintf(dir, sizeof(dir), "%.*s", (int)len, line);
                snprintf(p, sizeof(p), "%s/%s", dir, r.id ? r.id : "");
                if (rmdir(p) < 0 && errno != ENOENT)
                    busy++;
                if (rmdir(dir) < 0 && errno != ENOENT)
                    busy++;
                line += len;
                while (*line == '\n')
                    line++;
            }
            if (!busy)
                break;
            if (tries == 49)
                left += busy;
            pu_sleep_ms(10);
        }
        if (r.bundle && (state_remove_tree(r.bundle) < 0 || pu_exists(r.bundle)))
            left++;
        if (gone)
            (*destroyed)++;
        free(cgs);
        free(r.bundle);
        free(r.id);
    }
    closedir(d);
    return left;
}

static int runc_get_fd(fy_handle *h) { return ((struct rx *)h->b)->x.epfd; }
static uint64_t runc_next_deadline(fy_handle *h) { return lx_next_deadline(h); }

const struct fy_backend_ops linux_runc_backend = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "oci-runc",
    .level = FY_LEVEL_CONTAINER,
    .cost = 40,
    .usable = runc_usable,
    .can_enforce = rt_can_enforce,
    .compile = runc_compile,
    .plan_free = linux_plan_free_hook,
    .start = runc_start,
    .process = runc_process,
    .terminate = runc_terminate,
    .destroy = runc_destroy,
    .forget = runc_forget,
    .get_fd = runc_get_fd,
    .stdio_fd = lx_stdio_fd,
    .next_deadline = runc_next_deadline,
    .describe = linux_plan_describe,
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
    .start = runc_start,
    .process = runc_process,
    .terminate = runc_terminate,
    .destroy = runc_destroy,
    .forget = runc_forget,
    .get_fd = runc_get_fd,
    .stdio_fd = lx_stdio_fd,
    .next_deadline = runc_next_deadline,
    .describe = linux_plan_describe,
    .workload_ids = linux_plan_workload_ids,
    .images = true,
    .runtime = "crun",
};
