/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup probe (linux-probe.c has the rules): where our cgroup v1
 * hierarchies and cgroup v2 directory are, then, in child cgroups of our own
 * that are removed again, which controllers can be limited, whether
 * cgroup.freeze and cgroup.kill work, and whether clone3 can start a child
 * directly in a v2 cgroup. linux_probe owns the struct cg_state. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-probe-internal.h"
#include "linux-probe-util.h"
#include "linux-state.h"

/* ------------------------------------------------------------------ */
/* cgroups                                                            */
/* ------------------------------------------------------------------ */

static const char *const cg1_name[CG__N] = { "memory", "pids", "cpu", "freezer", "blkio",
                                             "cpuacct" };

static const char *const v2_ctl_name[4] = { "memory", "pids", "cpu", "io" };

/* Unescapes the octal escapes of /proc/self/mountinfo in place. */
static void mi_unescape(char *s) {
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

static bool list_has(const char *list, const char *word) {
    size_t wl = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *end = p + strcspn(p, ", \n");
        if ((size_t)(end - p) == wl && strncmp(p, word, wl) == 0)
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* Joins a mount point and a cgroup path relative to the mount's root.
 * NULL when the path is not below the mount root. */
static char *cg_join(const char *mnt, const char *mroot, const char *path) {
    size_t rl = strlen(mroot);
    if (strcmp(mroot, "/") != 0) {
        if (strncmp(path, mroot, rl) != 0 || (path[rl] != '\0' && path[rl] != '/'))
            return NULL;
        path += rl;
    }
    while (*path == '/')
        path++;
    if (!*path)
        return util_strdup(mnt);
    return util_asprintf("%s%s%s", mnt, mnt[strlen(mnt) - 1] == '/' ? "" : "/", path);
}

/* Parses /proc/self/cgroup and /proc/self/mountinfo. -ENOMEM only. */
int lp_cg_discover(struct cg_state *s) {
    char *cg = NULL, *mi = NULL;
    char *v1_path[CG__N] = { 0 };
    char *dev_path = NULL, *cpuset_path = NULL;
    int ret = 0;
    if (lp_read_file("/proc/self/cgroup", &cg, 1u << 20) < 0)
        cg = NULL;
    if (lp_read_file("/proc/self/mountinfo", &mi, 16u << 20) < 0)
        mi = NULL;

    for (char *l = cg; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *c1 = strchr(l, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 && c2) {
            *c1 = *c2 = '\0';
            const char *ctls = c1 + 1, *path = c2 + 1;
            if (strcmp(l, "0") == 0 && !*ctls) {
                s->cg2_in_proc = true;
                snprintf(s->cg2_path, sizeof s->cg2_path, "%s", path);
            } else {
                for (int i = 0; i < CG__N; i++)
                    if (list_has(ctls, cg1_name[i]))
                        v1_path[i] = (char *)path;
                if (list_has(ctls, "devices"))
                    dev_path = (char *)path;
                if (list_has(ctls, "cpuset"))
                    cpuset_path = (char *)path;
            }
        }
        l = nl ? nl + 1 : NULL;
    }

    for (char *l = mi; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
        char *f[6] = { 0 };
        char *save = NULL, *tok = strtok_r(l, " ", &save);
        int nf = 0;
        while (tok && nf < 6) {
            f[nf++] = tok;
            tok = strtok_r(NULL, " ", &save);
        }
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
        char *super = source ? strtok_r(NULL, " ", &save) : NULL;
        if (nf == 6 && fstype) {
            mi_unescape(f[3]);
            mi_unescape(f[4]);
            if (strcmp(fstype, "cgroup2") == 0 && !s->cg2_dir) {
                /* the first cgroup2 mount, replaced by the first one that
                 * shows our own cgroup */
                char *d = s->cg2_in_proc ? cg_join(f[4], f[3], s->cg2_path) : NULL;
                if (d || !s->cg2_mount) {
                    free(s->cg2_mount);
                    if (!(s->cg2_mount = util_strdup(f[4])))
                        ret = -ENOMEM;
                    s->cg2_dir = d;
                }
            } else if (strcmp(fstype, "cgroup") == 0 && super) {
                if (list_has(super, "devices") && dev_path && !s->dev1_dir)
                    s->dev1_dir = cg_join(f[4], f[3], dev_path);
                if (list_has(super, "cpuset") && cpuset_path && !s->cpuset1_dir)
                    s->cpuset1_dir = cg_join(f[4], f[3], cpuset_path);
                for (int i = 0; i < CG__N; i++) {
                    if (!list_has(super, cg1_name[i]))
                        continue;
                    s->any_v1 = true;
                    if (s->v1[i].dir || !v1_path[i])
                        continue;
                    s->v1[i].dir = cg_join(f[4], f[3], v1_path[i]);
                }
            }
        }
        l = nl ? nl + 1 : NULL;
    }
    free(cg);
    free(mi);
    return ret;
}

void lp_cg_free(struct cg_state *s) {
    free(s->cg2_mount);
    free(s->cg2_dir);
    free(s->dev1_dir);
    free(s->cpuset1_dir);
    for (int i = 0; i < CG__N; i++)
        free(s->v1[i].dir);
}

/* fy_gc's half for cgroups no record names (state_gc_unrecorded_cgroups):
 * where this process's attempts make theirs, found as the probe finds them. */
unsigned linux_gc_unrecorded_cgroups(unsigned min_age_sec, const char *state_dir) {
    struct cg_state s = {0};
    unsigned n = 0;
    if (lp_cg_discover(&s) == 0) {
        const char *parents[CG__N + 3];
        for (int i = 0; i < CG__N; i++)
            parents[i] = s.v1[i].dir;
        parents[CG__N] = s.dev1_dir;
        parents[CG__N + 1] = s.cpuset1_dir;
        parents[CG__N + 2] = s.cg2_dir;
        n = state_gc_unrecorded_in(parents, CG__N + 3, min_age_sec, state_dir);
    }
    lp_cg_free(&s);
    return n;
}

static void probe_name(char *buf, size_t size) {
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)(util_now_usec() * 2654435761u);
    snprintf(buf, size, "fy-probe-%d-%08" PRIx32, (int)getpid(), rnd);
}

/* rmdir with a few retries on EBUSY (a just-reaped task may linger). */
static int cg_rmdir(const char *dir) {
    for (int i = 0; i < 50; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -errno;
        pu_sleep_ms(2);
    }
    return -EBUSY;
}

/* Writes value into <child>/<file> and reads it back. */
static bool cg_write_check(const char *child, const char *file, const char *value,
                           const char *expect, char why[REASON_MAX]) {
    char path[PATH_MAX], got[256];
    snprintf(path, sizeof path, "%s/%s", child, file);
    int r = lp_write_existing(path, value);
    if (r < 0) {
        lp_bappend(why, "writing %s to %s: " EFMT, value, path, EARG(-r));
        return false;
    }
    r = pu_read_small(path, got, sizeof got);
    if (r < 0) {
        lp_bappend(why, "reading back %s: " EFMT, path, EARG(-r));
        return false;
    }
    if (strcmp(got, expect) != 0) {
        lp_bappend(why, "%s read back \"%s\" after writing \"%s\"", path, got, value);
        return false;
    }
    return true;
}

static void cg1_test(struct cg_state *s, int i) {
    struct cg1_ctl *v = &s->v1[i];
    if (!v->dir)
        return;
    /* cpuacct limits nothing: only whether a child can be made (usable),
     * for the attempt's CPU accounting. */
    v->tested = i != CG_CPUACCT;
    char name[64], child[PATH_MAX];
    probe_name(name, sizeof name);
    if ((size_t)snprintf(child, sizeof child, "%s/%s", v->dir, name) >= sizeof child) {
        lp_bappend(v->why, "path too long");
        return;
    }
    if (mkdir(child, 0755) < 0) {
        lp_bappend(v->why, "mkdir %s: " EFMT, child, EARG(errno));
        return;
    }
    switch (i) {
    case CG_MEMORY: {
        char p[PATH_MAX];
        v->ok = cg_write_check(child, "memory.limit_in_bytes", "268435456", "268435456", v->why);
        snprintf(p, sizeof p, "%s/memory.memsw.limit_in_bytes", child);
        s->memsw = pu_exists(p);
        break;
    }
    case CG_PIDS:
        v->ok = cg_write_check(child, "pids.max", "64", "64", v->why);
        break;
    case CG_CPU:
        v->ok = cg_write_check(child, "cpu.cfs_quota_us", "50000", "50000", v->why);
        break;
    case CG_FREEZER:
        v->ok = cg_write_check(child, "freezer.state", "THAWED", "THAWED", v->why);
        break;
    case CG_BLKIO: {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/blkio.throttle.read_bps_device", child);
        v->ok = pu_exists(p);
        if (!v->ok)
            lp_bappend(v->why, "%s: no blkio.throttle.read_bps_device (no throttling)", child);
        break;
    }
    default:
        break;
    }
    int r = cg_rmdir(child);
    if (r < 0) {
        lp_bappend(v->why, "%srmdir %s: " EFMT, v->why[0] ? "; " : "", child, EARG(-r));
        v->ok = false;
    }
    v->usable = r == 0;
}

/* CLONE_INTO_CGROUP into the v2 child, then cgroup.kill to end it. */
static void cg2_into_and_kill(struct cg_state *s, const char *child) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.kill", child);
    bool have_kill = pu_exists(path);
    if (!have_kill)
        lp_bappend(s->v2_kill_why, "%s does not exist (kernel < 5.14)", path);

    int cgfd = open(child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgfd < 0) {
        lp_bappend(s->into_why, "open %s: " EFMT, child, EARG(errno));
    } else {
        int pidfd = -1, wfd = -1;
        pid_t pid = lp_clone3_child(cgfd, true, &pidfd, &wfd);
        close(cgfd);
        if (pid < 0) {
            int e = (int)-pid;
            lp_bappend(s->into_why, "clone3(CLONE_INTO_CGROUP): " EFMT "%s", EARG(e),
                       e == ENOSYS ? " (no clone3)"
                       : e == EINVAL || e == E2BIG ? " (kernel < 5.7)" : "");
        } else {
            char procs[256];
            snprintf(path, sizeof path, "%s/cgroup.procs", child);
            int r = pu_read_small(path, procs, sizeof procs);
            if (r < 0)
                lp_bappend(s->into_why, "reading %s: " EFMT, path, EARG(-r));
            else if (strtol(procs, NULL, 10) != pid)
                lp_bappend(s->into_why, "the clone3(CLONE_INTO_CGROUP) child is not in %s", path);
            else
                s->into_ok = true;

            if (have_kill && s->into_ok) {
                snprintf(path, sizeof path, "%s/cgroup.kill", child);
                r = lp_write_existing(path, "1");
                if (r < 0) {
                    lp_bappend(s->v2_kill_why, "writing 1 to %s: " EFMT, path, EARG(-r));
                } else {
                    struct pu_proc ch;
                    memset(&ch, 0, sizeof ch);
                    ch.pid = pid;
                    ch.pidfd = pidfd;
                    /* (status -1: another thread of the host reaped it; it
                     * waited on a pipe we still hold, so only a signal ended
                     * it) */
                    if (pu_wait_until(&ch, pu_deadline_after_ms(CHILD_DEADLINE_MS)) &&
                        (ch.status == -1 || (WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == SIGKILL))) {
                        s->v2_kill_ok = true;
                    } else if (!ch.reaped) {
                        lp_bappend(s->v2_kill_why, "the process in the cgroup survived cgroup.kill "
                                   "for %d ms", CHILD_DEADLINE_MS);
                    }
                    if (ch.reaped)
                        pid = -1;
                }
            }
            if (pid > 0) {
                close(wfd);
                wfd = -1;
                lp_reap_pid(pid, pidfd, CHILD_DEADLINE_MS);
            }
            if (wfd >= 0)
                close(wfd);
            if (pidfd >= 0)
                close(pidfd);
        }
    }
    if (have_kill && !s->v2_kill_ok && !s->v2_kill_why[0]) {
        /* No process to kill: check the file accepts a write on the empty cgroup. */
        snprintf(path, sizeof path, "%s/cgroup.kill", child);
        int r = lp_write_existing(path, "1");
        if (r == 0)
            s->v2_kill_ok = true;
        else
            lp_bappend(s->v2_kill_why, "writing 1 to %s: " EFMT, path, EARG(-r));
    }
}

static void cg2_test(struct cg_state *s) {
    if (!s->cg2_mount) {
        lp_bappend(s->v2_why, "no cgroup2 filesystem is mounted");
        lp_bappend(s->into_why, "no cgroup2 filesystem is mounted");
        lp_bappend(s->v2_kill_why, "no cgroup2 filesystem is mounted");
        return;
    }
    if (!s->cg2_dir) {
        lp_bappend(s->v2_why, "our cgroup v2 path \"%s\" is not visible under %s", s->cg2_path,
                   s->cg2_mount);
        lp_bappend(s->into_why, "%s", s->v2_why);
        lp_bappend(s->v2_kill_why, "%s", s->v2_why);
        return;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.controllers", s->cg2_dir);
    (void)pu_read_small(path, s->v2_controllers, sizeof s->v2_controllers);
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", s->cg2_dir);
    (void)pu_read_small(path, s->v2_subtree, sizeof s->v2_subtree);

    char name[64], child[PATH_MAX];
    probe_name(name, sizeof name);
    snprintf(child, sizeof child, "%s/%s", s->cg2_dir, name);
    if (mkdir(child, 0755) < 0) {
        int e = errno;
        lp_bappend(s->v2_why, "mkdir %s: " EFMT, child, EARG(e));
        lp_bappend(s->into_why, "no v2 child cgroup: mkdir %s: " EFMT, child, EARG(e));
        lp_bappend(s->v2_kill_why, "no v2 child cgroup: mkdir %s: " EFMT, child, EARG(e));
        return;
    }
    s->v2_mkdir_ok = true;
    snprintf(path, sizeof path, "%s/cgroup.controllers", child);
    (void)pu_read_small(path, s->v2_child_ctl, sizeof s->v2_child_ctl);

    static const char *const file[4] = { "memory.max", "pids.max", "cpu.max", "io.max" };
    static const char *const value[4] = { "268435456", "64", "50000 100000", NULL };
    for (int i = 0; i < 4; i++) {
        if (!list_has(s->v2_child_ctl, v2_ctl_name[i])) {
            lp_bappend(s->v2_ctl_why[i], "cgroup v2: %s is not in %s/cgroup.subtree_control",
                       v2_ctl_name[i], s->cg2_dir);
            continue;
        }
        if (value[i]) {
            s->v2_ctl_ok[i] = cg_write_check(child, file[i], value[i], value[i],
                                             s->v2_ctl_why[i]);
        } else {
            snprintf(path, sizeof path, "%s/%s", child, file[i]);
            s->v2_ctl_ok[i] = pu_exists(path);
            if (!s->v2_ctl_ok[i])
                lp_bappend(s->v2_ctl_why[i], "%s does not exist", path);
        }
    }

    /* cgroup.freeze (not a controller: present in every non-root v2 cgroup) */
    snprintf(path, sizeof path, "%s/cgroup.freeze", child);
    if (!pu_exists(path)) {
        lp_bappend(s->v2_freeze_why, "%s does not exist (kernel < 5.2)", path);
    } else if (cg_write_check(child, "cgroup.freeze", "1", "1", s->v2_freeze_why)) {
        char ev[512];
        snprintf(path, sizeof path, "%s/cgroup.events", child);
        if (pu_read_small(path, ev, sizeof ev) == 0 && strstr(ev, "frozen 1"))
            s->v2_freeze_ok = true;
        else
            lp_bappend(s->v2_freeze_why, "%s did not report frozen 1", path);
        snprintf(path, sizeof path, "%s/cgroup.freeze", child);
        (void)lp_write_existing(path, "0");
    }

    cg2_into_and_kill(s, child);

    int r = cg_rmdir(child);
    if (r < 0) {
        s->v2_rmdir_failed = true;
        lp_bappend(s->v2_why, "%srmdir %s: " EFMT, s->v2_why[0] ? "; " : "", child, EARG(-r));
    }
}

void lp_probe_cgroups(fy_caps *c, struct cg_state *s, bool is_root) {
    bool v2_mounted = s->cg2_mount != NULL;
    const char *mode = s->any_v1 && v2_mounted ? "hybrid"
                       : s->any_v1            ? "v1"
                       : v2_mounted           ? "v2"
                                              : "none";
    c->host.cgroup_mode = util_strdup(mode);

    for (int i = 0; i < CG__N; i++)
        cg1_test(s, i);
    cg2_test(s);

    bool v2_any = false;
    for (int i = 0; i < 4; i++)
        v2_any |= s->v2_ctl_ok[i];
    bool v2_usable = s->v2_mkdir_ok && v2_any && !s->v2_rmdir_failed;

    /* v1 */
    char why[REASON_MAX] = "";
    int n_ok = 0, n_tested = 0;
    for (int i = 0; i < CG__N; i++) {
        if (!s->v1[i].tested)
            continue;
        n_tested++;
        if (s->v1[i].ok) {
            n_ok++;
            lp_bappend(why, "%s%s", n_ok > 1 ? " " : "", cg1_name[i]);
        }
    }
    if (n_ok > 0) {
        char ok_list[REASON_MAX];
        snprintf(ok_list, sizeof ok_list, "%s", why);
        why[0] = '\0';
        lp_bappend(why, "cgroup v1: created, limited and removed child cgroups for %s", ok_list);
        if (s->v1[CG_MEMORY].dir)
            lp_bappend(why, " (our memory cgroup: %s)", s->v1[CG_MEMORY].dir);
        for (int i = 0; i < CG__N; i++)
            if (s->v1[i].tested && !s->v1[i].ok)
                lp_bappend(why, "; %s: %s", cg1_name[i], s->v1[i].why);
        caps_set(c, FY_CAP_CGROUP_V1, true, 1, "%s", why);
    } else if (!s->any_v1) {
        caps_set(c, FY_CAP_CGROUP_V1, false, 0, "no cgroup v1 hierarchy with controllers is "
                 "mounted (cgroup mode: %s)", mode);
    } else {
        why[0] = '\0';
        lp_bappend(why, "cgroup v1 hierarchies are mounted but unusable");
        for (int i = 0; i < CG__N; i++)
            if (s->v1[i].tested)
                lp_bappend(why, "; %s: %s", cg1_name[i], s->v1[i].why);
        if (n_tested == 0)
            lp_bappend(why, ": our own v1 cgroups are not visible under the mounts");
        caps_set(c, FY_CAP_CGROUP_V1, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_CGROUP_V1, "%s", is_root
                      ? "check that the v1 hierarchies are mounted read-write"
                      : "cgroup v1 needs root (or the privileged helper): v1 subtrees cannot "
                        "be delegated safely");
    }

    /* v2 */
    why[0] = '\0';
    const char *v2_hint = "delegate a cgroup v2 subtree (systemd Delegate=yes) or pass a "
                          "pre-delegated cgroup";
    if (v2_usable) {
        lp_bappend(why, "cgroup v2 at %s: created a child cgroup with controllers \"%s\"",
                   s->cg2_dir, s->v2_child_ctl);
        caps_set(c, FY_CAP_CGROUP_V2, true, 2, "%s", why);
    } else if (!v2_mounted || !s->cg2_dir || !s->v2_mkdir_ok || s->v2_rmdir_failed) {
        caps_set(c, FY_CAP_CGROUP_V2, false, 0, "%s", s->v2_why);
        caps_set_hint(c, FY_CAP_CGROUP_V2, "%s", v2_mounted ? v2_hint
                      : "mount cgroup2 (a systemd host with unified hierarchy does)");
    } else {
        lp_bappend(why, "cgroup2 mounted at %s but offers no usable controllers (our cgroup %s: "
                   "cgroup.controllers \"%s\", cgroup.subtree_control \"%s\"",
                   s->cg2_mount, s->cg2_path[0] ? s->cg2_path : "/", s->v2_controllers,
                   s->v2_subtree);
        if (s->any_v1) {
            char bound[256] = "";
            for (int i = 0; i < CG__N; i++)
                if (s->v1[i].dir && i != CG_CPUACCT)
                    snprintf(bound + strlen(bound), sizeof bound - strlen(bound), "%s%s",
                             bound[0] ? ", " : "", cg1_name[i]);
            lp_bappend(why, "; %s bound to v1: hybrid host", bound[0] ? bound : "controllers");
        }
        lp_bappend(why, ")");
        for (int i = 0; i < 4; i++)
            if (list_has(s->v2_child_ctl, v2_ctl_name[i]) && !s->v2_ctl_ok[i])
                lp_bappend(why, "; %s", s->v2_ctl_why[i]);
        caps_set(c, FY_CAP_CGROUP_V2, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_CGROUP_V2, "%s", s->any_v1
                      ? "boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=all) for a "
                        "v2 host with controllers; the v1 controllers are used meanwhile"
                      : v2_hint);
    }

    /* controllers: prefer v2 when v2 is usable, else v1 */
    static const struct { uint32_t cap; int v2; int v1; const char *v1file; } ctl[] = {
        { FY_CAP_CGROUP_MEMORY, 0, CG_MEMORY, "memory.limit_in_bytes" },
        { FY_CAP_CGROUP_PIDS, 1, CG_PIDS, "pids.max" },
        { FY_CAP_CGROUP_CPU, 2, CG_CPU, "cpu.cfs_quota_us" },
        { FY_CAP_CGROUP_IO, 3, CG_BLKIO, "blkio.throttle.*" },
    };
    for (size_t k = 0; k < FY_ARRAY_SIZE(ctl); k++) {
        int i2 = ctl[k].v2, i1 = ctl[k].v1;
        if (v2_usable && s->v2_ctl_ok[i2]) {
            caps_set(c, ctl[k].cap, true, 2, "cgroup v2 %s controller: limit written and read "
                     "back in a child of %s", v2_ctl_name[i2], s->cg2_dir);
            continue;
        }
        if (s->v1[i1].ok) {
            if (i1 == CG_BLKIO)
                caps_set(c, ctl[k].cap, true, 1, "cgroup v1 blkio: %s exists in a child of %s "
                         "(throttling needs a device; not written)", ctl[k].v1file,
                         s->v1[i1].dir);
            else
                caps_set(c, ctl[k].cap, true, 1, "cgroup v1 %s: %s written and read back in a "
                         "child of %s%s", cg1_name[i1], ctl[k].v1file, s->v1[i1].dir,
                         i1 == CG_MEMORY ? (s->memsw ? " (memory.memsw.* present)"
                                                     : " (no memory.memsw.*: swap not limited)")
                                         : "");
            continue;
        }
        why[0] = '\0';
        if (s->v2_ctl_why[i2][0])
            lp_bappend(why, "%s", s->v2_ctl_why[i2]);
        else if (s->v2_why[0])
            lp_bappend(why, "cgroup v2: %s", s->v2_why);
        if (s->v1[i1].tested)
            lp_bappend(why, "%scgroup v1 %s: %s", why[0] ? "; " : "", cg1_name[i1], s->v1[i1].why);
        else if (s->any_v1)
            lp_bappend(why, "%sno cgroup v1 %s hierarchy for our process", why[0] ? "; " : "",
                       cg1_name[i1]);
        caps_set(c, ctl[k].cap, false, 0, "%s", why);
        caps_set_hint(c, ctl[k].cap, "%s", is_root || !s->any_v1
                      ? v2_hint
                      : "run as root for the v1 hierarchies, or delegate a cgroup v2 subtree "
                        "(systemd Delegate=yes) or pass a pre-delegated cgroup");
    }

    /* freeze */
    if (v2_usable && s->v2_freeze_ok) {
        caps_set(c, FY_CAP_CGROUP_FREEZE, true, 2, "cgroup v2 cgroup.freeze froze a child of %s",
                 s->cg2_dir);
    } else if (s->v1[CG_FREEZER].ok) {
        caps_set(c, FY_CAP_CGROUP_FREEZE, true, 1, "cgroup v1 freezer: freezer.state written "
                 "and read back in a child of %s", s->v1[CG_FREEZER].dir);
    } else if (s->v2_freeze_ok) {
        caps_set(c, FY_CAP_CGROUP_FREEZE, true, 2, "cgroup v2 cgroup.freeze froze a child of %s "
                 "(no controllers there)", s->cg2_dir);
    } else {
        why[0] = '\0';
        lp_bappend(why, "cgroup v2: %s", s->v2_freeze_why[0] ? s->v2_freeze_why : s->v2_why);
        if (s->v1[CG_FREEZER].tested)
            lp_bappend(why, "; cgroup v1 freezer: %s", s->v1[CG_FREEZER].why);
        caps_set(c, FY_CAP_CGROUP_FREEZE, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_CGROUP_FREEZE, "%s", v2_hint);
    }

    /* kill */
    if (s->v2_kill_ok) {
        caps_set(c, FY_CAP_CGROUP_KILL, true, 2, "cgroup.kill in a v2 child of %s %s%s",
                 s->cg2_dir, s->into_ok ? "killed the process placed there"
                                        : "accepted a write (empty cgroup)",
                 v2_usable ? "" : " (a v2 cgroup without controllers: usable to group and kill)");
    } else {
        caps_set(c, FY_CAP_CGROUP_KILL, false, 0, "%s", s->v2_kill_why);
        caps_set_hint(c, FY_CAP_CGROUP_KILL, "a kernel >= 5.14 and a delegated cgroup v2 subtree "
                      "(systemd Delegate=yes) or a pre-delegated cgroup");
    }

    /* CLONE_INTO_CGROUP */
    if (s->into_ok)
        caps_set(c, FY_CAP_CLONE_INTO_CGROUP, true, 1, "clone3(CLONE_INTO_CGROUP) placed a child "
                 "directly in a v2 child cgroup of %s", s->cg2_dir);
    else {
        caps_set(c, FY_CAP_CLONE_INTO_CGROUP, false, 0, "%s", s->into_why);
        caps_set_hint(c, FY_CAP_CLONE_INTO_CGROUP, "a kernel >= 5.7 and a cgroup v2 subtree we "
                      "may create children in (systemd Delegate=yes)");
    }
}
