/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's device allowlist (linux-devices.h): cgroup v1 devices
 * controller or a cgroup v2 device program, and the probe of both. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux-devices.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

/* ---- rules ---- */

size_t lx_dev_standard_rules(struct lx_dev_rule *out, size_t max, bool ptys) {
    /* /dev/null zero full random urandom (lib/plan.c binds exactly these). */
    static const uint32_t mem_minor[] = {3, 5, 7, 8, 9};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(mem_minor) / sizeof(mem_minor[0]) && n < max; i++)
        out[n++] = (struct lx_dev_rule){'c', LX_DEV_READ | LX_DEV_WRITE, 1, mem_minor[i]};
    if (ptys) {
        /* The sandbox's own devpts instance: its ptmx (5:2) and its
         * terminals (UNIX98 pty slaves, majors 136-143). */
        if (n < max)
            out[n++] = (struct lx_dev_rule){'c', LX_DEV_READ | LX_DEV_WRITE, 5, 2};
        for (uint32_t m = 136; m <= 143 && n < max; m++)
            out[n++] = (struct lx_dev_rule){'c', LX_DEV_READ | LX_DEV_WRITE, m, LX_DEV_ANY};
    }
    return n;
}

void lx_dev_rule_format(const struct lx_dev_rule *r, char *buf, size_t len) {
    char maj[16], min[16];
    if (r->major == LX_DEV_ANY)
        snprintf(maj, sizeof(maj), "*");
    else
        snprintf(maj, sizeof(maj), "%u", r->major);
    if (r->minor == LX_DEV_ANY)
        snprintf(min, sizeof(min), "*");
    else
        snprintf(min, sizeof(min), "%u", r->minor);
    snprintf(buf, len, "%c %s:%s %s%s%s", r->type, maj, min, (r->access & LX_DEV_READ) ? "r" : "",
             (r->access & LX_DEV_WRITE) ? "w" : "", (r->access & LX_DEV_MKNOD) ? "m" : "");
}

/* ---- cgroup v1 ---- */

static int write_str(const char *dir, const char *file, const char *value) {
    char path[4200];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, value, strlen(value));
    int e = errno;
    close(fd);
    return w == (ssize_t)strlen(value) ? 0 : -(w < 0 ? e : EIO);
}

static int v1_apply(const char *dir, const struct lx_dev_rule *rules, size_t n, char *why, size_t whylen) {
    /* Deny everything first (a new child inherits "a *:* rwm" from the
     * root), then allow rule by rule: one rule per write. */
    int r = write_str(dir, "devices.deny", "a");
    if (r < 0) {
        lx_dev_whyf(why, whylen, "writing \"a\" to %s/devices.deny: %s", dir, strerror(-r));
        return r;
    }
    for (size_t i = 0; i < n; i++) {
        char line[64];
        lx_dev_rule_format(&rules[i], line, sizeof(line));
        if ((r = write_str(dir, "devices.allow", line)) < 0) {
            lx_dev_whyf(why, whylen, "writing \"%s\" to %s/devices.allow: %s", line, dir, strerror(-r));
            return r;
        }
    }
    return 0;
}

int lx_dev_apply(enum lx_dev_mech mech, const char *v1_dir, const char *v2_dir, const struct lx_dev_rule *rules,
                 size_t n, char *why, size_t whylen) {
    if (n > LX_DEV_MAX_RULES) {
        lx_dev_whyf(why, whylen, "%zu device rules (at most %d)", n, LX_DEV_MAX_RULES);
        return -E2BIG;
    }
    for (size_t i = 0; i < n; i++)
        if ((rules[i].type != 'c' && rules[i].type != 'b') || (rules[i].access & ~7u)) {
            lx_dev_whyf(why, whylen, "device rule %zu is malformed", i);
            return -EINVAL;
        }
    switch (mech) {
    case LX_DEV_V1:
        if (v1_dir)
            return v1_apply(v1_dir, rules, n, why, whylen);
        break;
    case LX_DEV_BPF:
        if (v2_dir)
            return lx_dev_bpf_attach(v2_dir, rules, n, why, whylen);
        break;
    default:
        break;
    }
    lx_dev_whyf(why, whylen, "no device cgroup mechanism for this cgroup");
    return -EINVAL;
}

/* ---- the probe ---- */

/* A process placed in dir (through its procs_file) opens /dev/null and is
 * refused /dev/zero with EPERM. Async-signal-safe in the child. */
static bool verify(const char *dir, const char *procs_file, char *why, size_t whylen) {
    char path[4200];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, procs_file) >= sizeof(path)) {
        lx_dev_whyf(why, whylen, "path too long");
        return false;
    }
    /* A quiet child (exit signal 0, signals blocked across the fork): the
     * host's SIGCHLD disposition never sees it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = sys_fork_quiet_pidfd(&pidfd);
    int fe = errno;
    if (pid != 0)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        lx_dev_whyf(why, whylen, "fork: %s", strerror(fe));
        return false;
    }
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(10);
        close(fd);
        if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
            _exit(11);
        close(fd);
        if ((fd = open("/dev/zero", O_RDONLY | O_CLOEXEC)) >= 0)
            _exit(12);
        _exit(errno == EPERM ? 0 : 13);
    }
    struct pu_proc ch = {.pid = pid, .pidfd = pidfd};
    bool reaped = pu_finish(&ch, pu_deadline_after_ms(2000), NULL);
    int code = reaped && ch.status != -1 && WIFEXITED(ch.status) ? WEXITSTATUS(ch.status) : -1;
    static const char *const what[] = {
        [10] = "could not place a process in it", [11] = "/dev/null (allowed) could not be opened",
        [12] = "/dev/zero (not allowed) was opened", [13] = "opening /dev/zero failed, but not with EPERM",
    };
    if (code == 0)
        return true;
    lx_dev_whyf(why, whylen, "%s: %s", dir, code >= 10 && code <= 13 ? what[code] : "the check process failed");
    return false;
}

static int rmdir_retry(const char *dir) {
    for (int i = 0; i < 100; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            break;
        usleep(2000);
    }
    return -errno;
}

/* One mechanism: a child of parent, the /dev/null-only list, the check. */
static bool probe_one(enum lx_dev_mech mech, const char *parent, char *why, size_t whylen) {
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)getpid() * 2654435761u;
    char child[4200];
    if ((size_t)snprintf(child, sizeof(child), "%s/fy-probe-dev-%d-%08x", parent, (int)getpid(), rnd) >=
        sizeof(child)) {
        lx_dev_whyf(why, whylen, "path too long");
        return false;
    }
    if (mkdir(child, 0755) < 0) {
        lx_dev_whyf(why, whylen, "mkdir %s: %s", child, strerror(errno));
        return false;
    }
    static const struct lx_dev_rule only_null = {'c', LX_DEV_READ | LX_DEV_WRITE, 1, 3};
    bool ok = lx_dev_apply(mech, child, child, &only_null, 1, why, whylen) == 0 &&
              verify(child, mech == LX_DEV_V1 ? "tasks" : "cgroup.procs", why, whylen);
    int r = rmdir_retry(child);
    if (r < 0) {
        size_t l = strlen(why);
        lx_dev_whyf(why + l, whylen - l, "%srmdir %s: %s", l ? "; " : "", child, strerror(-r));
        ok = false;
    }
    return ok;
}

int lx_dev_probe(fy_caps *c, const char *v1_dir, const char *cg2_dir) {
    char why1[512] = "", why2[1024] = "";
    bool v1 = false, bpf = false;
    if (v1_dir)
        v1 = probe_one(LX_DEV_V1, v1_dir, why1, sizeof(why1));
    else
        lx_dev_whyf(why1, sizeof(why1), "no cgroup v1 devices hierarchy holds our process");
    if (cg2_dir)
        bpf = probe_one(LX_DEV_BPF, cg2_dir, why2, sizeof(why2));
    else
        lx_dev_whyf(why2, sizeof(why2), "no cgroup v2 directory of ours");
    int r = 0;
    r |= caps_set_fact(c, LX_FACT_DEV_V1, v1 ? v1_dir : NULL);
    r |= caps_set_fact(c, LX_FACT_DEV_BPF, bpf ? "1" : NULL);
    char *report;
    if (v1 || bpf)
        report = util_asprintf("enforced: %s%s%s%s%s (in a child cgroup allowing /dev/null only, a process opened "
                               "it and was refused /dev/zero with EPERM)",
                               v1 ? "cgroup v1 devices controller under " : "", v1 ? v1_dir : "",
                               v1 && bpf ? "; " : "", bpf ? "cgroup v2 device program (libbpf) under " : "",
                               bpf ? cg2_dir : "");
    else
        report = util_asprintf("unavailable: cgroup v1 devices: %s; cgroup v2 device program: %s (a device cgroup "
                               "needs root, CAP_SYS_ADMIN or CAP_BPF with CAP_NET_ADMIN)",
                               why1, why2);
    r |= report ? caps_set_fact(c, LX_FACT_DEV_REPORT, report) : FY_E_NOMEM;
    free(report);
    return r ? FY_E_NOMEM : 0;
}
