/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard-sandbox-helper(8): the small privileged helper that does for an
 * unprivileged host program what only root can: per-attempt cgroup v1 or v2
 * memory, pids and cpu limits, device lists, restricted networking.
 *
 * Started by the operator as root (a systemd unit, or a root parent): never
 * setuid, it refuses to run when it is. One single-threaded poll loop serves
 * a unix socket (the only other threads: a job link's deletion finishing
 * after its answer, fyh-net.c); every connection's SO_PEERCRED uid is checked against the
 * allowlist (the helper's only configuration: which uids may ask, and each
 * one's budget), then exactly one request is read within a deadline, decoded
 * and validated (fyh-proto.c), answered with a typed reply, and the
 * connection closed. No shell, no environment, no project config, no secret
 * ever reaches it.
 *
 * Cgroups: below the helper's own cgroup in each v1 hierarchy it creates a
 * subtree (--subtree, default forgeyard-helper) with one directory per
 * allowed uid (uid-N, whose limits are the uid's whole budget), and in it
 * the attempt cgroups the uid asks for. Its own cgroup and its ancestors
 * are never written. An attempt cgroup's `tasks` and `cgroup.procs` are
 * chowned to the peer: the kernel then lets the peer move into it only
 * processes of its own uid (cgroup v1 checks the writer against the task's
 * uid), and nothing else in the cgroup (limits, subtree) is the peer's to
 * change. Cgroups whose creator has exited are killed and removed (gc).
 * An attempt cgroup never gives more than the peer has where it runs (its
 * own cgroups' limits and devices: "what the peer has", below); the one
 * thing written outside our subtree is the short-lived child of that check
 * in a peer's default-allow devices cgroup (devices_probe).
 *
 * On a host without v1 memory, pids or cpu hierarchies: cgroup v2 (setup_cg2,
 * protocol 3). One directory per attempt below uid-N in a subtree of our own
 * v2 cgroup, limits and the device program ours to write, and nothing of it
 * the peer's: we move the peer's sandbox in ourselves (do_move says why and
 * what we check). */
#include <dirent.h>
#include <linux/capability.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fyh-net.h"
#include "fyh-peer.h"
#include "fyh-proto.h"
#include "linux-devprog.h"
#include "sys/linux/linux-scm.h"

#define MAX_ALLOW 64
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* (Linux 6.5; asm-generic's number) */
#endif
#define MAX_CONNS_DEFAULT 64
#define MAX_ENTRIES 1024
/* How long the first REMOVE of an attempt waits for the processes it
 * killed to exit (remove_attempt). */
#define REMOVE_SETTLE_MS 20

static const char *const ctl_name[FYH_NCTL] = {"memory", "pids", "cpu", "devices"};

struct allow {
    uid_t uid;
    uint32_t max_cgroups;
    uint64_t max_memory, max_pids;
    bool banned; /* it sent a file the helper cannot close safely (dispose_passed) */
};

struct entry {
    bool used;
    uid_t uid;
    char name[FYH_NAME_MAX + 1];
    int creator; /* pidfd of the peer that created it (-1: from an earlier run) */
    /* Removal asked (REMOVE) or due (creator exited, or adopted from an
     * earlier run) but something is left: the gc tries again at next_try,
     * one attempt per pass, later each time (fyh_retry_delay_ms). */
    bool removing;
    bool adopted; /* from an earlier run, still populated at our start */
    uint32_t tries;
    uint64_t next_try;
};

/* An attempt's router (fyh-net.c), made for uid's sandbox. */
struct net_entry {
    bool used;
    uid_t uid;
    char name[FYH_NAME_MAX + 1];
    int creator; /* pidfd of the peer that asked */
    struct fyh_net_attempt net;
};

/* A job network (fyh-net.c, protocol 4), made for uid's job. */
struct job_entry {
    bool used;
    uid_t uid;
    char name[FYH_NAME_MAX + 1];
    int creator; /* pidfd of the peer that asked */
    struct fyh_job job;
};

struct conn {
    int fd;
    uid_t uid;
    pid_t pid;
    int pidfd; /* the peer's, taken at admission (-1: none could be) */
    const struct allow *allow;
    uint64_t deadline;
    size_t got;
    int passed;     /* a descriptor that came with the request (-1: none) */
    uint16_t version; /* the request's, once decoded */
    bool extra_fds; /* more than one came, or one came after the first bytes */
    uint8_t buf[FYH_MAX_MESSAGE];
};

static struct {
    struct allow allow[MAX_ALLOW];
    size_t nallow;
    char subtree_name[64];
    char base[FYH_NCTL][PATH_MAX];    /* our own cgroup per controller ("" if none) */
    /* the mount base[] is in: its root (mountinfo's fourth field) and
     * mount point, to find a peer's cgroup of the same hierarchy */
    char mnt_root[FYH_NCTL][PATH_MAX], mnt_point[FYH_NCTL][PATH_MAX];
    char subtree[FYH_NCTL][PATH_MAX]; /* base/subtree_name */
    uint32_t controllers;
    bool memsw;
    /* cgroup v2 (a host without v1 memory, pids or cpu hierarchies): one
     * directory per attempt, every H.subtree[] the same; see setup_cg2. */
    bool cg2;
    char cg2_base[PATH_MAX]; /* our own v2 cgroup when we started */
    char cg2_self[PATH_MAX]; /* the leaf we moved ourselves to: subtree/helper */
    char cg2_mnt_root[PATH_MAX], cg2_mnt_point[PATH_MAX]; /* the cgroup2 mount cg2_base is in */
    uint32_t cg2_base_enabled, cg2_sub_enabled; /* controllers we enabled (to disable at exit) */
    struct entry entries[MAX_ENTRIES];
    struct net_entry nets[MAX_ENTRIES];
    struct job_entry jobs[MAX_ENTRIES];
    bool net; /* --net-uplink given and usable */
    size_t max_conns;
    uint64_t timeout_ms;
    bool verbose;
    unsigned long served, refused;
} H;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("forgeyard-sandbox-helper: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Root, but only with what the work needs: CAP_CHOWN (the tasks files) and
 * CAP_KILL (what is left in a cgroup being removed). The attempt cgroups are
 * made in directories the helper made, root's own, so no capability is
 * needed to make and write them; CAP_DAC_OVERRIDE stays permitted, not
 * effective, for the one step that needs it: the subtree's own directory in
 * a cgroup root (mode 0555), at start and at exit (raise_dac). Everything
 * else is gone, from the bounding set too, under no_new_privs (the helper
 * runs no program anyway). */
#define CAPS_WORK ((1u << CAP_CHOWN) | (1u << CAP_KILL))
#define CAPS_ALL (CAPS_WORK | (1u << CAP_DAC_OVERRIDE))
/* With --net-uplink, CAP_NET_ADMIN and CAP_SYS_ADMIN (a new network
 * namespace, setns) stay permitted too, effective only while a router is
 * made or removed (fyh_net_raise). */
static uint32_t caps_permitted = CAPS_ALL;

static int set_caps(uint32_t effective) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0}};
    data[0].effective = effective;
    data[0].permitted = caps_permitted;
    return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

static void raise_dac(bool on) {
    (void)set_caps(on ? CAPS_ALL : CAPS_WORK);
}

static void raise_net(bool on) {
    (void)set_caps(on ? CAPS_WORK | fyh_net_caps() : CAPS_WORK);
}

/* cgroup v1 devices.allow and devices.deny take CAP_SYS_ADMIN: permitted
 * only when there is a devices hierarchy, effective only for those writes. */
#define CAP_DEVICES (1u << CAP_SYS_ADMIN)
static void raise_devices(bool on) {
    (void)set_caps(on ? CAPS_WORK | CAP_DEVICES : CAPS_WORK);
}

/* A cgroup v2 device program: loading one takes CAP_SYS_ADMIN (or CAP_BPF),
 * attaching it CAP_NET_ADMIN; permitted only on a v2 host, effective only
 * while the program of one attempt is loaded and attached. */
#define CAP_DEVPROG ((1u << CAP_SYS_ADMIN) | (1u << CAP_NET_ADMIN))
static void raise_devprog(bool on) {
    (void)set_caps(on ? CAPS_WORK | CAP_DEVPROG : CAPS_WORK);
}

static int drop_privileges(void) {
    for (unsigned long cap = 0; cap <= 63; cap++) {
        if (cap < 32 && (caps_permitted & (1u << cap)))
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            return -errno;
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    int e = set_caps(CAPS_WORK);
    if (e < 0)
        return e;
    /* (Not PR_SET_DUMPABLE 0: no peer can ptrace a root process anyway, and
     * LeakSanitizer's tracer in the sanitizer builds needs it dumpable.) */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    return 0;
}

/* ------------------------------------------------------------------ */
/* configuration                                                       */

static bool parse_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30, end++;
    if (errno || *end || v == 0 || v > (1ull << 60) / mul)
        return false;
    *out = v * mul;
    return true;
}

/* UID:CGROUPS:MEMORY:PIDS, e.g. 65534:4:1G:1024 (also space-separated in a file). */
static bool parse_allow(char *spec) {
    for (char *p = spec; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = ':';
    char *f[5] = {0};
    int n = 0;
    for (char *save = NULL, *t = strtok_r(spec, ":", &save); t && n < 5; t = strtok_r(NULL, ":", &save))
        f[n++] = t;
    uint64_t uid, count, mem, pids;
    if (n != 4 || H.nallow >= MAX_ALLOW || !parse_size(f[1], &count) || count > MAX_ENTRIES ||
        !parse_size(f[2], &mem) || !parse_size(f[3], &pids) || pids > (1u << 22))
        return false;
    char *end;
    errno = 0;
    uid = strtoull(f[0], &end, 10);
    if (errno || *end || f[0][0] < '0' || f[0][0] > '9' || uid == 0 || uid >= 0xffffffffu)
        return false; /* root needs no helper; -1 is no uid */
    for (size_t i = 0; i < H.nallow; i++)
        if (H.allow[i].uid == (uid_t)uid)
            return false;
    H.allow[H.nallow++] = (struct allow){(uid_t)uid, (uint32_t)count, mem, pids, false};
    return true;
}

/* The allowlist file: root-owned, written by nobody else; lines as --allow,
 * '#' comments. */
static bool load_allow_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
        logf_("%s: not a regular file owned by root and writable by root only", path);
        if (fd >= 0)
            close(fd);
        return false;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return false;
    }
    char line[256];
    int n = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof(line), f)) {
        n++;
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        char *s = line + strspn(line, " \t");
        if (!*s)
            continue;
        if (!parse_allow(s)) {
            logf_("%s:%d: expected UID CGROUPS MEMORY PIDS (uid > 0, not repeated)", path, n);
            ok = false;
        }
    }
    fclose(f);
    return ok;
}

static const struct allow *find_allow(uid_t uid) {
    for (size_t i = 0; i < H.nallow; i++)
        if (H.allow[i].uid == uid)
            return &H.allow[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* cgroups                                                             */

static int write_at(int dfd, const char *file, const char *value) {
    int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, value, strlen(value));
    int e = errno;
    close(fd);
    return n == (ssize_t)strlen(value) ? 0 : -(n < 0 ? e : EIO);
}

static int write_file(const char *dir, const char *file, const char *value) {
    char path[PATH_MAX + 64];
    int len = snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (len < 0 || (size_t)len >= sizeof(path))
        return -ENAMETOOLONG;
    return write_at(AT_FDCWD, path, value);
}

static int write_u64(const char *dir, const char *file, uint64_t v) {
    char val[32];
    snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
    return write_file(dir, file, val);
}

/* A /proc/self/mountinfo line, split in place: "id parent maj:min root
 * mountpoint opts [optional...] - fstype source superopts". The first six
 * fields into fld (*n of them), the file system type returned, *save left
 * for strtok_r to take the source and the super options; NULL (and
 * nothing more to take) for a line without the separator. */
static char *mountinfo_split(char *line, char *fld[6], int *n, char **save) {
    static char none[1];
    char *dash = strstr(line, " - ");
    *n = 0;
    *save = none;
    if (!dash)
        return NULL;
    *dash = '\0';
    for (char *t = strtok_r(line, " ", save); t && *n < 6; t = strtok_r(NULL, " ", save))
        fld[(*n)++] = t;
    return strtok_r(dash + 3, " ", save);
}

/* Our own v1 cgroup directory for each controller: /proc/self/cgroup joined
 * with the cgroup mounts of /proc/self/mountinfo. */
static void discover(void) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[4096];
    char path[FYH_NCTL][PATH_MAX] = {{0}};
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        for (char *save = NULL, *t = strtok_r(c1 + 1, ",", &save); t; t = strtok_r(NULL, ",", &save))
            for (int i = 0; i < FYH_NCTL; i++)
                if (strcmp(t, ctl_name[i]) == 0)
                    snprintf(path[i], sizeof(path[i]), "%s", c2 + 1);
    }
    if (f)
        fclose(f);
    f = fopen("/proc/self/mountinfo", "re");
    while (f && fgets(line, sizeof(line), f)) {
        char *fld[6] = {0}, *save = NULL;
        int n = 0;
        char *fstype = mountinfo_split(line, fld, &n, &save), *src = strtok_r(NULL, " ", &save),
             *super = strtok_r(NULL, " \n", &save);
        (void)src;
        if (n < 5 || !fstype || !super || strcmp(fstype, "cgroup") != 0)
            continue;
        for (char *s2 = NULL, *t = strtok_r(super, ",", &s2); t; t = strtok_r(NULL, ",", &s2))
            for (int i = 0; i < FYH_NCTL; i++) {
                size_t rl = strlen(fld[3]);
                if (strcmp(t, ctl_name[i]) != 0 || !path[i][0] || H.base[i][0])
                    continue;
                /* the mount must show our cgroup: its root is a prefix of our path */
                if (strcmp(fld[3], "/") == 0)
                    rl = 0;
                else if (strncmp(path[i], fld[3], rl) != 0 || (path[i][rl] && path[i][rl] != '/'))
                    continue;
                if (strchr(fld[4], '\\')) /* an escaped mount point: not ours to guess */
                    continue;
                snprintf(H.base[i], sizeof(H.base[i]), "%s%s", fld[4], strcmp(path[i] + rl, "/") ? path[i] + rl : "");
                snprintf(H.mnt_root[i], sizeof(H.mnt_root[i]), "%s", fld[3]);
                snprintf(H.mnt_point[i], sizeof(H.mnt_point[i]), "%s", fld[4]);
            }
    }
    if (f)
        fclose(f);
}

static int mkdir_owned(const char *dir) {
    struct stat st;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
        return -EPERM;
    return 0;
}

static void uid_dir(char *out, size_t len, int ctl, uid_t uid) {
    snprintf(out, len, "%s/uid-%u", H.subtree[ctl], (unsigned)uid);
}

static void attempt_dir(char *out, size_t len, int ctl, uid_t uid, const char *name) {
    snprintf(out, len, "%s/uid-%u/%s", H.subtree[ctl], (unsigned)uid, name);
}

static bool proc_status(pid_t pid, uid_t uid[4], pid_t *ppid);

/* SIGKILL every process listed in dir that the peer could kill itself
 * (kill(2)'s rule for a sender whose uids are all uid: the target's real or
 * saved uid is uid; so also a set-user-ID program the peer started there),
 * through pidfds (a pid read from cgroup.procs may be reused before the
 * signal: a pidfd cannot). How many live processes were left alone (not
 * the peer's to kill). */
#define KEEP_MAX 64
struct kept {
    int fd[KEEP_MAX]; /* pidfds of processes signalled, to wait for (bounded) */
    size_t n;
};

static unsigned kill_procs(const char *dir, uid_t uid, struct kept *keep) {
    char path[PATH_MAX + 32], buf[8192];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned spared = 0;
    for (char *p = buf, *end; *p; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        while (*end == '\n')
            end++;
        int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        if (pfd < 0)
            continue;
        uid_t u[4];
        pid_t parent;
        if (proc_status((pid_t)pid, u, &parent)) {
            if (u[0] == uid || u[2] == uid) {
                if (syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0 && keep && keep->n < KEEP_MAX) {
                    keep->fd[keep->n++] = pfd;
                    pfd = -1;
                }
            } else if (syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) == 0)
                spared++; /* (still that process: its uids were) */
        }
        if (pfd >= 0)
            close(pfd);
    }
    return spared;
}

/* Removes the attempt cgroup name of uid in every hierarchy: rmdir (which
 * only an empty cgroup allows); when busy, kills what the peer could kill
 * itself, waits for those processes to exit for at most settle_ms (on
 * their pidfds: no sleeping loop; 0: not at all), and tries rmdir once
 * more (settle_ms < 0: kills nothing, an attempt of an earlier run whose
 * creator is unknown: removed once empty). Never more: the helper serves every uid from one loop, and a
 * peer can make processes that SIGKILL does not end (blocked in a FUSE
 * request its own server never answers, in uninterruptible sleep): 40
 * sleeping retries per controller here blocked every other uid at each gc
 * pass. What is left stays, and the gc tries again on later passes
 * (entry.next_try); what is not the peer's to kill is spared. The
 * witness is lstat's ENOENT afterwards. How many directories are left. */
static uint32_t remove_attempt(uid_t uid, const char *name, int settle_ms) {
    uint32_t left = 0;
    unsigned spared = 0;
    struct kept keep = {.n = 0};
    bool busy = false;
    for (int pass = 0; pass < 2; pass++) {
        left = 0;
        for (int c = 0; c < FYH_NCTL; c++) {
            if (!(H.controllers & (1u << c)))
                continue;
            char dir[PATH_MAX + 128];
            attempt_dir(dir, sizeof(dir), c, uid, name);
            if (rmdir(dir) < 0 && errno == EBUSY && pass == 0) {
                busy = true;
                if (settle_ms >= 0)
                    spared += kill_procs(dir, uid, &keep);
            }
            struct stat st;
            if (lstat(dir, &st) == 0 || errno != ENOENT)
                left++;
            if (H.cg2)
                break; /* one directory for every controller */
        }
        if (!busy || settle_ms < 0)
            break;
        if (pass == 0 && settle_ms > 0 && keep.n && !spared) {
            /* (a pidfd polls readable once its process has exited) */
            uint64_t end = now_ms() + (uint64_t)settle_ms;
            for (size_t i = 0; i < keep.n;) {
                struct pollfd p = {keep.fd[i], POLLIN, 0};
                uint64_t now = now_ms();
                if (now >= end || poll(&p, 1, (int)(end - now)) == 0)
                    break;
                i++;
            }
        }
    }
    for (size_t i = 0; i < keep.n; i++)
        close(keep.fd[i]);
    return left;
}

static struct entry *find_entry(uid_t uid, const char *name) {
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        if (H.entries[i].used && H.entries[i].uid == uid && strcmp(H.entries[i].name, name) == 0)
            return &H.entries[i];
    return NULL;
}

static void drop_entry(struct entry *e) {
    if (e->creator >= 0)
        close(e->creator);
    memset(e, 0, sizeof(*e));
    e->creator = -1;
}

static uint32_t count_entries(uid_t uid) {
    uint32_t n = 0;
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        n += H.entries[i].used && H.entries[i].uid == uid;
    return n;
}

/* gc: attempt cgroups whose creator has exited (its pidfd polls readable)
 * or whose REMOVE left something, and those of an earlier run (adopted
 * at startup: counted in their uid's budget, removed once empty; all ==
 * true: the empty ones removed at once). One removal attempt per entry
 * and pass, none before its next_try (fyh_retry_delay_ms after each that
 * left something): a peer's unkillable processes cost a few system calls
 * per pass, not a wait. */
static void adopt(uid_t uid, const char *name, const char *dir) {
    if (find_entry(uid, name))
        return; /* (another controller's directory of the same attempt) */
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        if (!H.entries[i].used) {
            struct entry *e = &H.entries[i];
            memset(e, 0, sizeof(*e));
            e->used = true;
            e->uid = uid;
            e->creator = -1;
            e->adopted = true;
            e->next_try = now_ms() + fyh_retry_delay_ms(1);
            snprintf(e->name, sizeof(e->name), "%s", name);
            logf_("gc: adopted %s of an earlier run (not empty): counted in uid %u's budget, removed once empty",
                  dir, (unsigned)uid);
            return;
        }
    logf_("gc: %s of an earlier run (not empty): no free entry to adopt it", dir);
}

static void gc(bool all) {
    uint64_t now = now_ms();
    for (size_t i = 0; i < MAX_ENTRIES; i++) {
        struct entry *e = &H.entries[i];
        if (!e->used)
            continue;
        if (!e->removing && !e->adopted) {
            struct pollfd p = {e->creator, POLLIN, 0};
            if (e->creator < 0)
                continue;
            if (poll(&p, 1, 0) != 1)
                continue;
            e->removing = true; /* (its creator exited: due now) */
        }
        if (now < e->next_try)
            continue;
        /* (an adopted attempt never removed by its peer: nothing killed) */
        bool kill = e->removing;
        uint32_t left = remove_attempt(e->uid, e->name, kill ? 0 : -1);
        if (H.verbose || (left && kill && (e->tries & (e->tries + 1)) == 0))
            logf_("gc: uid %u %s (%s): %u left%s", (unsigned)e->uid, e->name,
                  kill ? "removal due" : "of an earlier run", left,
                  left ? ", tried again later" : "");
        if (!left) {
            drop_entry(e);
        } else {
            e->tries++;
            e->next_try = now + fyh_retry_delay_ms(e->tries);
        }
    }
    for (size_t i = 0; i < MAX_ENTRIES; i++) {
        struct net_entry *n = &H.nets[i];
        struct pollfd p = {n->creator, POLLIN, 0};
        if (!n->used || poll(&p, 1, 0) != 1)
            continue;
        uint32_t left = fyh_net_remove(&n->net);
        if (H.verbose || left)
            logf_("gc: uid %u %s router (creator exited): %u left", (unsigned)n->uid, n->name, left);
        close(n->creator);
        memset(n, 0, sizeof(*n));
    }
    for (size_t i = 0; i < MAX_ENTRIES; i++) {
        struct job_entry *j = &H.jobs[i];
        struct pollfd p = {j->creator, POLLIN, 0};
        if (!j->used || poll(&p, 1, 0) != 1)
            continue;
        uint32_t left = fyh_job_destroy(&j->job);
        if (H.verbose || left)
            logf_("gc: uid %u %s job network (creator exited): %u left", (unsigned)j->uid, j->name, left);
        close(j->creator);
        memset(j, 0, sizeof(*j));
    }
    if (!all)
        return;
    for (size_t a = 0; a < H.nallow; a++)
        for (int c = 0; c < FYH_NCTL; c++) {
            if (!(H.controllers & (1u << c)))
                continue;
            char dir[PATH_MAX + 32];
            uid_dir(dir, sizeof(dir), c, H.allow[a].uid);
            DIR *d = opendir(dir);
            for (struct dirent *de; d && (de = readdir(d));)
                if (de->d_type == DT_DIR && fyh_valid_name(de->d_name)) {
                    char sub[PATH_MAX + 128];
                    snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
                    if (rmdir(sub) == 0)
                        logf_("gc: removed stale %s", sub);
                    else if (errno == EBUSY)
                        adopt(H.allow[a].uid, de->d_name, sub);
                }
            if (d)
                closedir(d);
        }
}

/* The subtree and one directory per allowed uid, whose limits are the uid's
 * whole budget (every attempt cgroup of the uid is below it). */
static int setup_subtree(void) {
    for (int c = 0; c < FYH_NCTL; c++) {
        if (!H.base[c][0])
            continue;
        snprintf(H.subtree[c], sizeof(H.subtree[c]), "%s/%s", H.base[c], H.subtree_name);
        raise_dac(true);
        int e = mkdir_owned(H.subtree[c]);
        raise_dac(false);
        if (e < 0) {
            logf_("%s: %s (%s controller not offered)", H.subtree[c], strerror(-e), ctl_name[c]);
            H.subtree[c][0] = '\0';
            continue;
        }
        bool ok = true;
        for (size_t a = 0; ok && a < H.nallow; a++) {
            char dir[PATH_MAX + 32];
            uid_dir(dir, sizeof(dir), c, H.allow[a].uid);
            if ((e = mkdir_owned(dir)) < 0) {
                logf_("%s: %s", dir, strerror(-e));
                ok = false;
                break;
            }
            const struct allow *al = &H.allow[a];
            if (c == 3)
                e = 0; /* devices: each attempt's own list, below */
            else if (c == 0) {
                e = write_u64(dir, "memory.limit_in_bytes", al->max_memory * al->max_cgroups);
                /* Swap inside the same budget (each attempt may swap up to
                 * its own memory again): where the kernel accounts swap. */
                char memsw[PATH_MAX + 64];
                snprintf(memsw, sizeof(memsw), "%s/memory.memsw.limit_in_bytes", dir);
                if (e == 0 && access(memsw, F_OK) == 0)
                    e = write_u64(dir, "memory.memsw.limit_in_bytes", al->max_memory * al->max_cgroups);
            }
            else if (c == 1)
                e = write_u64(dir, "pids.max", al->max_pids * al->max_cgroups);
            if (e < 0) {
                logf_("%s: limit: %s", dir, strerror(-e));
                ok = false;
            }
        }
        if (ok)
            H.controllers |= 1u << c;
    }
    char memsw[PATH_MAX + 64];
    snprintf(memsw, sizeof(memsw), "%s/memory.memsw.limit_in_bytes", H.subtree[0]);
    H.memsw = H.subtree[0][0] && access(memsw, F_OK) == 0;
    return H.controllers ? 0 : -1;
}

/* At exit: the empty directories we made (live attempts keep theirs). */
static void teardown_subtree(void) {
    for (int c = 0; c < FYH_NCTL; c++) {
        if (!H.subtree[c][0])
            continue;
        for (size_t a = 0; a < H.nallow; a++) {
            char dir[PATH_MAX + 32];
            uid_dir(dir, sizeof(dir), c, H.allow[a].uid);
            rmdir(dir);
        }
        raise_dac(true);
        rmdir(H.subtree[c]);
        raise_dac(false);
    }
}


/* ------------------------------------------------------------------ */
/* cgroup v2                                                           */

/* Our own v2 cgroup (/proc/self/cgroup's "0::" line under the cgroup2
 * mount that shows it): "" when there is none. */
static void discover_cg2(char *out, size_t len) {
    out[0] = '\0';
    char line[4096], path[PATH_MAX] = "";
    FILE *f = fopen("/proc/self/cgroup", "re");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(path, sizeof(path), "%s", line + 3);
        }
    if (f)
        fclose(f);
    if (!path[0])
        return;
    f = fopen("/proc/self/mountinfo", "re");
    while (f && fgets(line, sizeof(line), f)) {
        char *fld[6] = {0}, *save = NULL;
        int n = 0;
        char *fstype = mountinfo_split(line, fld, &n, &save);
        if (n < 5 || !fstype || strcmp(fstype, "cgroup2") != 0 || strchr(fld[4], '\\'))
            continue;
        size_t rl = strcmp(fld[3], "/") == 0 ? 0 : strlen(fld[3]);
        if (rl && (strncmp(path, fld[3], rl) != 0 || (path[rl] && path[rl] != '/')))
            continue;
        snprintf(out, len, "%s%s", fld[4], strcmp(path + rl, "/") ? path + rl : "");
        snprintf(H.cg2_mnt_root, sizeof(H.cg2_mnt_root), "%s", fld[3]);
        snprintf(H.cg2_mnt_point, sizeof(H.cg2_mnt_point), "%s", fld[4]);
        break;
    }
    if (f)
        fclose(f);
}

/* The controllers named in a cgroup.controllers / subtree_control file. */
static uint32_t read_ctls(const char *dir, const char *file) {
    char path[PATH_MAX + 64], buf[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    uint32_t m = 0;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
        for (int i = 0; i < 3; i++)
            m |= strcmp(t, ctl_name[i]) == 0 ? 1u << i : 0;
    return m;
}

/* Enables the controllers of mask in dir's subtree_control, each on its
 * own (a refused one is left out): those now enabled. */
static uint32_t enable_ctls(const char *dir, uint32_t mask, uint32_t *newly) {
    uint32_t have = read_ctls(dir, "cgroup.subtree_control");
    for (int i = 0; i < 3; i++) {
        if (!(mask & (1u << i)) || (have & (1u << i)))
            continue;
        char v[16];
        snprintf(v, sizeof(v), "+%s", ctl_name[i]);
        int e = write_file(dir, "cgroup.subtree_control", v);
        if (e == 0) {
            have |= 1u << i;
            if (newly)
                *newly |= 1u << i;
        } else {
            logf_("%s: enabling %s: %s", dir, ctl_name[i], strerror(-e));
        }
    }
    return have & mask;
}

static void disable_ctls(const char *dir, uint32_t mask) {
    for (int i = 0; i < 3; i++)
        if (mask & (1u << i)) {
            char v[16];
            snprintf(v, sizeof(v), "-%s", ctl_name[i]);
            (void)write_file(dir, "cgroup.subtree_control", v);
        }
}

/* Checks once that the kernel takes a device program from us: one allowing
 * /dev/null only, attached to a child of the subtree, which is then removed
 * (with its program). */
static bool devprog_works(const char *sub) {
    char dir[PATH_MAX + 32], why[256] = "";
    snprintf(dir, sizeof(dir), "%s/devprog-check", sub);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return false;
    static const struct lx_dev_rule only_null = {'c', LX_DEV_READ | LX_DEV_WRITE, 1, 3};
    raise_devprog(true);
    int e = lx_dev_bpf_attach(dir, &only_null, 1, why, sizeof(why));
    raise_devprog(false);
    rmdir(dir);
    if (e < 0)
        logf_("no device programs (devices controller not offered): %s", why);
    return e == 0;
}

/* The v2 subtree. cgroup v2 lets a cgroup with processes enable no
 * controller for its children (but the root), so, as systemd asks of a
 * service with Delegate=yes, we move ourselves out of our own cgroup
 * (BASE, which must hold nobody else) into BASE/SUBTREE/helper, enable
 * memory, pids and cpu in BASE and BASE/SUBTREE, and make one directory
 * per allowed uid whose limits are the uid's whole budget. Undone at exit
 * (teardown_cg2). */
static int setup_cg2(const char *base) {
    char sub[PATH_MAX];
    snprintf(H.cg2_base, sizeof(H.cg2_base), "%s", base);
    snprintf(sub, sizeof(sub), "%s/%s", base, H.subtree_name);
    snprintf(H.cg2_self, sizeof(H.cg2_self), "%s/helper", sub);
    uint32_t avail = read_ctls(base, "cgroup.controllers");
    if (!avail) {
        logf_("%s: no memory, pids or cpu controller available to our cgroup v2", base);
        return -1;
    }
    raise_dac(true);
    int e = mkdir_owned(sub);
    if (e == 0)
        e = mkdir_owned(H.cg2_self);
    if (e == 0)
        e = write_file(H.cg2_self, "cgroup.procs", "0");
    raise_dac(false);
    if (e < 0) {
        logf_("%s: %s", H.cg2_self, strerror(-e));
        rmdir(H.cg2_self);
        rmdir(sub);
        H.cg2_self[0] = '\0';
        return -1;
    }
    uint32_t on = enable_ctls(base, avail, &H.cg2_base_enabled);
    if (on)
        on = enable_ctls(sub, on, &H.cg2_sub_enabled);
    if (!on) {
        logf_("%s: no controller could be enabled for our subtree (does %s hold other processes? start the "
              "helper in a cgroup of its own, e.g. systemd's Delegate=yes)", base, base);
        return -1;
    }
    for (int c = 0; c < 3; c++)
        if (on & (1u << c))
            snprintf(H.subtree[c], sizeof(H.subtree[c]), "%s", sub);
    for (size_t a = 0; a < H.nallow; a++) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof(dir), "%s/uid-%u", sub, (unsigned)H.allow[a].uid);
        const struct allow *al = &H.allow[a];
        if ((e = mkdir_owned(dir)) == 0 && (on & FYH_CTL_MEMORY))
            e = write_u64(dir, "memory.max", al->max_memory * al->max_cgroups);
        if (e == 0 && (on & FYH_CTL_PIDS))
            e = write_u64(dir, "pids.max", al->max_pids * al->max_cgroups);
        if (e == 0 && enable_ctls(dir, on, NULL) != on)
            e = -EIO;
        if (e < 0) {
            logf_("%s: %s", dir, strerror(-e));
            return -1;
        }
    }
    H.controllers = on;
    H.cg2 = true;
    if (devprog_works(sub))
        H.controllers |= FYH_CTL_DEVICES, snprintf(H.subtree[3], sizeof(H.subtree[3]), "%s", sub);
    return 0;
}

/* At exit: the empty uid directories, the controllers we enabled, and our
 * own leaf once we are back in BASE (live attempts keep theirs, and then
 * BASE keeps its controllers and we stay in the leaf). */
static void teardown_cg2(void) {
    if (!H.cg2_self[0])
        return;
    char sub[PATH_MAX];
    snprintf(sub, sizeof(sub), "%s/%s", H.cg2_base, H.subtree_name);
    bool empty = true;
    for (size_t a = 0; a < H.nallow; a++) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof(dir), "%s/uid-%u", sub, (unsigned)H.allow[a].uid);
        if (rmdir(dir) < 0 && errno != ENOENT)
            empty = false;
    }
    if (!empty)
        return;
    raise_dac(true);
    disable_ctls(sub, H.cg2_sub_enabled);
    disable_ctls(H.cg2_base, H.cg2_base_enabled);
    if (write_file(H.cg2_base, "cgroup.procs", "0") == 0) {
        rmdir(H.cg2_self);
        rmdir(sub);
    }
    raise_dac(false);
}

/* The pid a pidfd names (its fdinfo's "Pid:"), 0 when fd is no pidfd, or
 * names a process that ended (-1) or that our pid namespace does not see. */
static pid_t pidfd_pid(int fd) {
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t l = readlink(path, buf, sizeof(buf) - 1);
    if (l <= 0)
        return 0;
    buf[l] = '\0';
    if (strcmp(buf, "anon_inode:[pidfd]") != 0 && strncmp(buf, "pidfd:", 6) != 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
    if (f >= 0)
        close(f);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strstr(buf, "\nPid:");
    long pid = p ? strtol(p + 5, NULL, 10) : 0;
    return pid > 0 && pid < (1L << 22) ? (pid_t)pid : 0;
}

/* /proc/PID/status: its real, effective, saved and filesystem uids (as our
 * user namespace sees them) and its parent. */
static bool proc_status(pid_t pid, uid_t uid[4], pid_t *ppid) {
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
    if (f >= 0)
        close(f);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *u = strstr(buf, "\nUid:"), *pp = strstr(buf, "\nPPid:");
    unsigned long v[4];
    if (!u || !pp || sscanf(u + 5, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
        return false;
    for (int i = 0; i < 4; i++)
        uid[i] = (uid_t)v[i];
    *ppid = (pid_t)strtol(pp + 6, NULL, 10);
    return true;
}

static bool pidfd_alive(int fd) {
    return syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0;
}

/* ------------------------------------------------------------------ */
/* requests                                                            */

static void set_error(struct fyh_msg *rep, uint32_t code, int os, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_error(struct fyh_msg *rep, uint32_t code, int os, const char *fmt, ...) {
    memset(rep, 0, sizeof(*rep));
    rep->type = FYH_T_ERROR;
    rep->u.error.code = code;
    rep->u.error.os_errno = os > 0 && os < 4096 ? (uint32_t)os : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->u.error.text, sizeof(rep->u.error.text), fmt, ap);
    va_end(ap);
    for (char *p = rep->u.error.text; *p; p++) /* printable only, as the codec wants */
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
}

/* ------------------------------------------------------------------ */
/* what the peer has                                                   */

/* The helper never gives a peer more than the peer has. An attempt cgroup
 * is a child of the helper's cgroup, not of the peer's: a process of the
 * peer's that enters it leaves its own cgroup, and with it what the
 * operator confined it to there (a device list, memory, pids, cpu; on
 * cgroup v2 also its cgroup's BPF programs: device programs, IP filtering,
 * socket binding). So before an attempt cgroup is made (CREATE) and before
 * a process is moved into one (MOVE), what the attempt would allow is
 * compared with what the process has where it is. A request for more is
 * refused (FYH_E_DENIED, naming the limit and both values); where the
 * request asks nothing that the attempt still limits (memory, which every
 * attempt has; on v2 pids and cpu, which the process would otherwise
 * leave), the attempt gets the peer's own limit when that is the lower.
 * docs/helper.md, "What a peer may ask for", says what this covers and
 * what not. */

/* A whole small file: its length, or -errno (-EFBIG when it fills buf). */
static ssize_t read_text(const char *path, char *buf, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    ssize_t n = 0;
    while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
        got += (size_t)n;
    int e = errno;
    close(fd);
    buf[got] = '\0';
    if (n < 0)
        return -e;
    return got == len - 1 ? -EFBIG : (ssize_t)got;
}

/* Whether dir's cgroup.procs lists pid. */
static bool procs_has(const char *dir, pid_t pid) {
    char path[PATH_MAX + 32], buf[4096];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool found = false;
    long cur = -1; /* the number being read, across reads */
    ssize_t n;
    while (!found && (n = read(fd, buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n && !found; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                cur = cur < 0 ? buf[i] - '0' : cur < (1L << 30) ? cur * 10 + (buf[i] - '0') : cur;
            } else {
                found = cur == (long)pid;
                cur = -1;
            }
        }
    close(fd);
    return found || cur == (long)pid;
}

/* The directory of pid's cgroup in the v1 hierarchy of controller ctl, or
 * its cgroup v2 (ctl < 0), as this helper's mount shows it: the one line of
 * /proc/PID/cgroup, confirmed by the kernel's own list (pid is in that
 * directory's cgroup.procs: a cgroup name with a newline in it cannot pass
 * for another cgroup), then the pidfd checked alive (the number was the
 * process's throughout). 0, or -1 and *why. */
static int peer_dir(pid_t pid, int pidfd, int ctl, char *out, size_t len, const char **why) {
    char path[64], text[8192], cg[PATH_MAX];
    const char *root = ctl < 0 ? H.cg2_mnt_root : H.mnt_root[ctl], *mnt = ctl < 0 ? H.cg2_mnt_point : H.mnt_point[ctl];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    *why = "";
    if (read_text(path, text, sizeof(text)) < 0)
        *why = "its /proc/PID/cgroup cannot be read";
    else if (fyh_proc_cgroup_path(text, ctl < 0 ? NULL : ctl_name[ctl], cg, sizeof(cg)) < 0)
        *why = "its /proc/PID/cgroup does not name exactly one cgroup of the hierarchy";
    else if (!root[0] || fyh_cg_dir(root, mnt, cg, out, len) < 0)
        *why = "its cgroup is outside what the helper's cgroup mount shows";
    else if (!procs_has(out, pid))
        *why = "its cgroup's cgroup.procs does not list it";
    else if (pidfd < 0 || !pidfd_alive(pidfd))
        *why = "it ended";
    return **why ? -1 : 0;
}

/* dir below the mount point mnt, for messages ("/" for the root). */
static const char *rel(const char *dir, const char *mnt) {
    size_t n = strlen(mnt);
    return strncmp(dir, mnt, n) == 0 && dir[n] == '/' ? dir + n : "/";
}

static uint64_t lower(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The lowest limit in file over dir and its ancestors up to the mount
 * point mnt, stopping before the first that is stop or an ancestor of it
 * (what stays above a process that moves from dir to below stop; stop
 * NULL: up to mnt, inclusive). A missing file is no limit; one that does
 * not parse counts as 0 (nothing is given against it). at (PATH_MAX):
 * where the lowest is. */
static uint64_t walk_min(const char *dir, const char *mnt, const char *stop, const char *file, char *at) {
    char cur[PATH_MAX], path[PATH_MAX + 64], buf[64];
    uint64_t min = FYH_UNLIMITED;
    snprintf(cur, sizeof(cur), "%s", dir);
    snprintf(at, PATH_MAX, "%s", dir);
    while (!(stop && fyh_path_within(cur, stop))) {
        snprintf(path, sizeof(path), "%s/%s", cur, file);
        uint64_t v = 0;
        ssize_t n = read_text(path, buf, sizeof(buf));
        if (n != -ENOENT && (n < 0 || fyh_parse_limit(buf, &v) < 0))
            v = 0;
        if (n != -ENOENT && v < min) {
            min = v;
            snprintf(at, PATH_MAX, "%s", cur);
        }
        char *slash = strrchr(cur, '/');
        if (strcmp(cur, mnt) == 0 || !fyh_path_within(mnt, cur) || !slash || slash == cur)
            break;
        *slash = '\0';
    }
    return min;
}

/* The same for the cpu bandwidth: the lowest quota/period (v1
 * cpu.cfs_quota_us over cpu.cfs_period_us, v2 cpu.max), *quota
 * FYH_UNLIMITED for none. */
static void walk_cpu(const char *dir, const char *mnt, const char *stop, uint64_t *quota, uint64_t *period,
                     char *at) {
    char cur[PATH_MAX], path[PATH_MAX + 64], buf[64];
    *quota = FYH_UNLIMITED;
    *period = 100000;
    snprintf(cur, sizeof(cur), "%s", dir);
    snprintf(at, PATH_MAX, "%s", dir);
    while (!(stop && fyh_path_within(cur, stop))) {
        uint64_t q = FYH_UNLIMITED, p = 100000;
        bool bad = false;
        snprintf(path, sizeof(path), "%s/%s", cur, H.cg2 ? "cpu.max" : "cpu.cfs_quota_us");
        ssize_t n = read_text(path, buf, sizeof(buf));
        if (n >= 0 && H.cg2)
            bad = fyh_parse_cpu_max(buf, &q, &p) < 0;
        else if (n >= 0) {
            bad = fyh_parse_limit(buf, &q) < 0;
            snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", cur);
            bad = bad || read_text(path, buf, sizeof(buf)) < 0 || fyh_parse_limit(buf, &p) < 0 || p == 0;
        } else
            bad = n != -ENOENT;
        if (bad)
            q = 0, p = 1; /* (nothing is given against what cannot be read) */
        if (!fyh_cpu_within(*quota, *period, q, p)) {
            *quota = q, *period = p;
            snprintf(at, PATH_MAX, "%s", cur);
        }
        char *slash = strrchr(cur, '/');
        if (strcmp(cur, mnt) == 0 || !fyh_path_within(mnt, cur) || !slash || slash == cur)
            break;
        *slash = '\0';
    }
}

static void fmt_limit(char *out, size_t len, uint64_t v) {
    if (v == FYH_UNLIMITED)
        snprintf(out, len, "no limit");
    else
        snprintf(out, len, "%llu", (unsigned long long)v);
}

static uint64_t cpu_millis(uint64_t quota, uint64_t period) {
    return quota == FYH_UNLIMITED || !period ? FYH_UNLIMITED
                                              : (uint64_t)((unsigned __int128)quota * 1000 / period);
}

/* The refusal: the limit, what the attempt would have, the peer's own, and where that is. */
static int over(struct fyh_msg *rep, const char *what, uint64_t have, uint64_t own, const char *file, const char *at,
                const char *mnt) {
    char h[24], o[24];
    fmt_limit(h, sizeof(h), have);
    fmt_limit(o, sizeof(o), own);
    set_error(rep, FYH_E_DENIED, EPERM, "%s: the attempt would have %s, more than the peer's own %s (%s of %s)", what,
              h, o, file, rel(at, mnt));
    return -1;
}

/* What an attempt cgroup gets: the values written (0: none), and which
 * of them the peer asked for. */
struct ask {
    uint32_t want;
    uint64_t memory, swap, pids, cpu_quota, cpu_period;
    bool memory_asked, pids_asked, cpu_asked;
};

static void dev_line(const struct fyh_dev_rule *d, char *line, size_t len) {
    char maj[16] = "*", min[16] = "*";
    if (d->major != FYH_DEV_ANY)
        snprintf(maj, sizeof(maj), "%u", d->major);
    if (d->minor != FYH_DEV_ANY)
        snprintf(min, sizeof(min), "%u", d->minor);
    snprintf(line, len, "%c %s:%s %s%s%s", d->type, maj, min, (d->access & 2) ? "r" : "", (d->access & 4) ? "w" : "",
             (d->access & 1) ? "m" : "");
}

/* The kernel as the judge, for a peer's v1 devices cgroup whose default is
 * to allow (its devices.list then reads "a *:* rwm" and shows none of the
 * devices it denies): a child made there for this check alone is denied
 * everything, then allowed each rule; the kernel refuses (EPERM) a rule
 * that its parent does not wholly allow (security/device_cgroup.c,
 * parent_has_perm). The child is removed at once. 0 (*bad: the first rule
 * refused, or UINT32_MAX for none), or -errno when the check could not be
 * made. */
static int devices_probe(const char *pdir, const struct fyh_dev_rule *dev, uint32_t n, uint32_t *bad) {
    static unsigned seq;
    char probe[PATH_MAX + 64], line[64];
    snprintf(probe, sizeof(probe), "%s/fyh-check-%d-%u", pdir, (int)getpid(), seq++);
    (void)set_caps(CAPS_ALL | CAP_DEVICES);
    int e = mkdir(probe, 0700) < 0 ? -errno : 0;
    int dfd = e ? -1 : open(probe, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (!e && dfd < 0)
        e = -errno;
    if (!e)
        e = write_at(dfd, "devices.deny", "a");
    for (uint32_t k = 0; !e && k < n; k++) {
        dev_line(&dev[k], line, sizeof(line));
        int w = write_at(dfd, "devices.allow", line);
        if (w == -EPERM) {
            *bad = k;
            break;
        }
        e = w;
    }
    if (dfd >= 0)
        close(dfd);
    if (dfd >= 0 && rmdir(probe) < 0 && errno != ENOENT)
        logf_("%s: %s (the device check's cgroup is left)", probe, strerror(errno));
    (void)set_caps(CAPS_WORK);
    return e;
}

/* v1 devices: every rule of the request within the peer's own devices
 * cgroup. An attempt below that cgroup (the peer's is the hierarchy's
 * root, or an ancestor of the helper's) is kept within by the kernel
 * already; a default-deny list (the devices the cgroup may use, inherited
 * restrictions included) is compared here; a default-allow one, which
 * shows nothing, is left to the kernel (devices_probe). */
static int devices_v1(const struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep) {
    static struct fyh_dev_rule list[1024];
    char pdir[PATH_MAX], udir[PATH_MAX + 32], path[PATH_MAX + 32], text[32768], line[64];
    const char *why, *mnt = H.mnt_point[3];
    if (peer_dir(c->pid, c->pidfd, 3, pdir, sizeof(pdir), &why) < 0) {
        set_error(rep, FYH_E_DENIED, EPERM, "the peer's devices cgroup (pid %d): %s", (int)c->pid, why);
        return -1;
    }
    uid_dir(udir, sizeof(udir), 3, c->uid);
    if (fyh_path_within(pdir, udir))
        return 0;
    snprintf(path, sizeof(path), "%s/devices.list", pdir);
    ssize_t tl = read_text(path, text, sizeof(text));
    int n = tl < 0 ? -1 : fyh_devlist_parse(text, list, sizeof(list) / sizeof(list[0]));
    if (n < 0) {
        set_error(rep, FYH_E_DENIED, tl < 0 ? (int)-tl : EPERM, "the peer's devices cgroup %s: devices.list %s",
                  rel(pdir, mnt), tl < 0 ? "cannot be read" : "does not parse");
        return -1;
    }
    uint32_t bad = UINT32_MAX;
    if (fyh_devlist_default_allow(list, (size_t)n)) {
        int e = devices_probe(pdir, req->u.create.dev, req->u.create.ndev, &bad);
        if (e < 0) {
            set_error(rep, FYH_E_SYSTEM, -e, "checking the device rules against the peer's devices cgroup %s: %s",
                      rel(pdir, mnt), strerror(-e));
            return -1;
        }
    } else {
        for (uint32_t k = 0; k < req->u.create.ndev && bad == UINT32_MAX; k++)
            if (!fyh_dev_covered(&req->u.create.dev[k], list, (size_t)n))
                bad = k;
    }
    if (bad != UINT32_MAX) {
        dev_line(&req->u.create.dev[bad], line, sizeof(line));
        set_error(rep, FYH_E_DENIED, EPERM, "devices: rule \"%s\" is more than the peer's own devices cgroup %s allows",
                  line, rel(pdir, mnt));
        return -1;
    }
    return 0;
}

/* CREATE on cgroup v1: the attempt's memory, pids and cpu cgroups (those
 * it makes: a process keeps its cgroups of the others) against the peer's
 * own, below what the attempt shares with it; its devices cgroup's rules
 * against the peer's devices cgroup. a->memory is lowered to the peer's
 * own limit when the peer did not ask for memory. */
static int bounds_v1(const struct conn *c, const struct fyh_msg *req, struct ask *a, struct fyh_msg *rep) {
    char pdir[PATH_MAX], udir[PATH_MAX + 32], at[PATH_MAX], uat[PATH_MAX];
    const char *why;
    for (int i = 0; i < 3; i++) {
        if (!(a->want & (1u << i)))
            continue;
        if (peer_dir(c->pid, c->pidfd, i, pdir, sizeof(pdir), &why) < 0) {
            set_error(rep, FYH_E_DENIED, EPERM, "the peer's %s cgroup (pid %d): %s", ctl_name[i], (int)c->pid, why);
            return -1;
        }
        uid_dir(udir, sizeof(udir), i, c->uid);
        const char *mnt = H.mnt_point[i];
        if (i == 0) {
            uint64_t own = walk_min(pdir, mnt, udir, "memory.limit_in_bytes", at);
            if (!a->memory_asked && a->memory > own)
                a->memory = own;
            uint64_t have = lower(a->memory, walk_min(udir, mnt, NULL, "memory.limit_in_bytes", uat));
            if (have > own)
                return over(rep, "memory (bytes)", have, own, "memory.limit_in_bytes", at, mnt);
            if (H.memsw) {
                own = walk_min(pdir, mnt, udir, "memory.memsw.limit_in_bytes", at);
                have = lower(a->memory + a->swap, walk_min(udir, mnt, NULL, "memory.memsw.limit_in_bytes", uat));
                if (have > own)
                    return over(rep, "memory+swap (bytes)", have, own, "memory.memsw.limit_in_bytes", at, mnt);
            }
        } else if (i == 1) {
            uint64_t own = walk_min(pdir, mnt, udir, "pids.max", at);
            uint64_t have = lower(a->pids, walk_min(udir, mnt, NULL, "pids.max", uat));
            if (have > own)
                return over(rep, "pids", have, own, "pids.max", at, mnt);
        } else {
            uint64_t oq, op, hq, hp;
            walk_cpu(pdir, mnt, udir, &oq, &op, at);
            walk_cpu(udir, mnt, NULL, &hq, &hp, uat);
            if (fyh_cpu_within(a->cpu_quota, a->cpu_period, hq, hp))
                hq = a->cpu_quota, hp = a->cpu_period;
            if (!fyh_cpu_within(hq, hp, oq, op))
                return over(rep, "cpu (millis)", cpu_millis(hq, hp), cpu_millis(oq, op), "cpu.cfs_quota_us", at,
                            mnt);
        }
    }
    return (a->want & FYH_CTL_DEVICES) ? devices_v1(c, req, rep) : 0;
}

/* cgroup v2: a process that moves from pdir to the attempt leaves every
 * limit of pdir and its ancestors below what the two share. At CREATE (a
 * != NULL) the attempt is to be made below dir (the uid directory) with
 * a's values, lowered to the peer's own where the peer asked for none; at
 * MOVE (a NULL) dir is the attempt itself. io.max is not something an
 * attempt carries: a peer under one is refused. */
static int bounds_v2(const char *pdir, const char *dir, struct ask *a, struct fyh_msg *rep) {
    char at[PATH_MAX], uat[PATH_MAX], path[PATH_MAX + 32], buf[512];
    const char *mnt = H.cg2_mnt_point;
    bool mem = a && (a->want & FYH_CTL_MEMORY);
    /* memory */
    uint64_t own = walk_min(pdir, mnt, dir, "memory.max", at);
    if (mem && !a->memory_asked && a->memory > own)
        a->memory = own;
    uint64_t have = walk_min(dir, mnt, NULL, "memory.max", uat);
    if (mem)
        have = lower(have, a->memory);
    if (have > own)
        return over(rep, "memory (bytes)", have, own, "memory.max", at, mnt);
    own = walk_min(pdir, mnt, dir, "memory.swap.max", at);
    have = walk_min(dir, mnt, NULL, "memory.swap.max", uat);
    snprintf(path, sizeof(path), "%s/memory.swap.max", dir);
    if (mem && access(path, F_OK) == 0) /* (written on the attempt where its parent has the file) */
        have = lower(have, a->swap);
    if (have > own)
        return over(rep, "swap (bytes)", have, own, "memory.swap.max", at, mnt);
    /* pids */
    own = walk_min(pdir, mnt, dir, "pids.max", at);
    have = walk_min(dir, mnt, NULL, "pids.max", uat);
    if (a && a->pids_asked)
        have = lower(have, a->pids);
    else if (a && have > own && (H.controllers & FYH_CTL_PIDS) && own) /* (0: written as none) */
        have = a->pids = own;
    if (have > own)
        return over(rep, "pids", have, own, "pids.max", at, mnt);
    /* cpu */
    uint64_t oq, op, hq, hp;
    walk_cpu(pdir, mnt, dir, &oq, &op, at);
    walk_cpu(dir, mnt, NULL, &hq, &hp, uat);
    if (a && a->cpu_asked && fyh_cpu_within(a->cpu_quota, a->cpu_period, hq, hp))
        hq = a->cpu_quota, hp = a->cpu_period;
    else if (a && !a->cpu_asked && !fyh_cpu_within(hq, hp, oq, op) && (H.controllers & FYH_CTL_CPU) && oq)
        hq = a->cpu_quota = oq, hp = a->cpu_period = op;
    if (!fyh_cpu_within(hq, hp, oq, op))
        return over(rep, "cpu (millis)", cpu_millis(hq, hp), cpu_millis(oq, op), "cpu.max", at, mnt);
    /* io */
    snprintf(at, sizeof(at), "%s", pdir);
    while (!fyh_path_within(at, dir)) {
        snprintf(path, sizeof(path), "%s/io.max", at);
        ssize_t n = read_text(path, buf, sizeof(buf));
        if (n > 0 || (n < 0 && n != -ENOENT)) { /* (limits, or what cannot be read) */
            set_error(rep, FYH_E_DENIED, EPERM, "io: the peer's cgroup %s has io.max limits, which no attempt cgroup "
                      "carries", rel(at, mnt));
            return -1;
        }
        char *slash = strrchr(at, '/');
        if (strcmp(at, mnt) == 0 || !slash || slash == at)
            break;
        *slash = '\0';
    }
    return 0;
}

/* The cgroup BPF attach types: the kernel's enum (stable numbers; those
 * newer than this build's header by number, BPF_CGROUP_UNIX_CONNECT ..
 * _GETSOCKNAME being 49..53). A kernel that does not know one answers
 * EINVAL: nothing of that type can be attached anywhere. */
static const unsigned cg_attach_types[] = {
    BPF_CGROUP_INET_INGRESS,       BPF_CGROUP_INET_EGRESS,       BPF_CGROUP_INET_SOCK_CREATE,
    BPF_CGROUP_SOCK_OPS,           BPF_CGROUP_DEVICE,            BPF_CGROUP_INET4_BIND,
    BPF_CGROUP_INET6_BIND,         BPF_CGROUP_INET4_CONNECT,     BPF_CGROUP_INET6_CONNECT,
    BPF_CGROUP_INET4_POST_BIND,    BPF_CGROUP_INET6_POST_BIND,   BPF_CGROUP_UDP4_SENDMSG,
    BPF_CGROUP_UDP6_SENDMSG,       BPF_CGROUP_SYSCTL,            BPF_CGROUP_UDP4_RECVMSG,
    BPF_CGROUP_UDP6_RECVMSG,       BPF_CGROUP_GETSOCKOPT,        BPF_CGROUP_SETSOCKOPT,
    BPF_CGROUP_INET4_GETPEERNAME,  BPF_CGROUP_INET6_GETPEERNAME, BPF_CGROUP_INET4_GETSOCKNAME,
    BPF_CGROUP_INET6_GETSOCKNAME,  BPF_CGROUP_INET_SOCK_RELEASE, BPF_LSM_CGROUP,
    49, 50, 51, 52, 53};

/* The ids of the programs of attach type t that run for the processes of
 * the cgroup dfd (its effective list): 0 and *n, or -errno (-EINVAL: a
 * type the kernel does not know). */
static int prog_ids(int dfd, unsigned t, uint32_t *ids, uint32_t *n) {
    union bpf_attr at;
    memset(&at, 0, sizeof(at));
    at.query.target_fd = (uint32_t)dfd;
    at.query.attach_type = t;
    at.query.query_flags = BPF_F_QUERY_EFFECTIVE;
    at.query.prog_ids = (uint64_t)(uintptr_t)ids;
    at.query.prog_cnt = *n;
    if (syscall(SYS_bpf, BPF_PROG_QUERY, &at, sizeof(at)) < 0)
        return -errno;
    *n = at.query.prog_cnt;
    return 0;
}

/* cgroup v2: every BPF program that runs for pdir's processes (a device
 * program, IP filtering, socket binding, sysctl...: systemd's
 * DeviceAllow=, IPAddressDeny=, SocketBindDeny=) must run in the attempt
 * adir too (a program of a shared ancestor, attached to allow more
 * programs below it, does; one of the peer's own cgroup does not). The
 * helper cannot tell what a program allows, so a peer under one that the
 * attempt would not run is refused, whatever the request. */
static int progs_v2(const char *pdir, const char *adir, struct fyh_msg *rep) {
    int pfd = open(pdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), afd = open(adir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r = 0;
    if (pfd < 0 || afd < 0) {
        set_error(rep, FYH_E_SYSTEM, errno, "opening %s: %s", pfd < 0 ? pdir : adir, strerror(errno));
        r = -1;
    }
    raise_devprog(true);
    for (size_t i = 0; !r && i < sizeof(cg_attach_types) / sizeof(cg_attach_types[0]); i++) {
        uint32_t p[64], a[64], np = 64, na = 64;
        unsigned t = cg_attach_types[i];
        int e = prog_ids(pfd, t, p, &np);
        if (e == -ENOSYS) /* (no bpf(2) in this kernel: no program anywhere) */
            break;
        if (e == -EINVAL)
            continue;
        if (!e && np)
            e = prog_ids(afd, t, a, &na);
        if (e) {
            set_error(rep, FYH_E_SYSTEM, -e, "BPF_PROG_QUERY (attach type %u) of %s: %s", t,
                      rel(np ? adir : pdir, H.cg2_mnt_point), strerror(-e));
            r = -1;
        } else if (np && !fyh_ids_subset(p, np, a, na)) {
            set_error(rep, FYH_E_DENIED, EPERM,
                      "the peer's cgroup %s runs a BPF program (attach type %u%s) that the attempt's would not: "
                      "its processes would leave it",
                      rel(pdir, H.cg2_mnt_point), t, t == BPF_CGROUP_DEVICE ? ", a device program" : "");
            r = -1;
        }
    }
    raise_devprog(false);
    if (pfd >= 0)
        close(pfd);
    if (afd >= 0)
        close(afd);
    return r;
}

static void do_hello(const struct conn *c, struct fyh_msg *rep) {
    memset(rep, 0, sizeof(*rep));
    rep->type = FYH_T_WELCOME;
    if (H.net) {
        rep->u.welcome.offers = FYH_OFFER_NET;
        snprintf(rep->u.welcome.uplink, sizeof(rep->u.welcome.uplink), "%s", fyh_net_uplink());
    }
    rep->u.welcome.uid = (uint32_t)c->uid;
    rep->u.welcome.max_cgroups = c->allow->max_cgroups;
    rep->u.welcome.max_memory = c->allow->max_memory;
    rep->u.welcome.max_pids = c->allow->max_pids;
    rep->u.welcome.controllers = H.controllers;
    rep->u.welcome.cgroup = !H.controllers ? FYH_CGROUP_NONE : H.cg2 ? FYH_CGROUP_V2 : FYH_CGROUP_V1;
    if (c->version < 2) /* (version 1 knows no devices) */
        rep->u.welcome.controllers &= ~FYH_CTL_DEVICES;
    if (c->version < 3 && H.cg2) /* (an older peer knows only v1 cgroups: it gets none) */
        rep->u.welcome.controllers = 0;
    for (int i = 0; i < FYH_NCTL; i++)
        if (rep->u.welcome.controllers & (1u << i))
            uid_dir(rep->u.welcome.parent[i], sizeof(rep->u.welcome.parent[i]), i, c->uid);
}

/* The attempt's one v2 cgroup: limits (a's, which bounds_v2 kept within
 * the peer's own), the device program, nothing of it the peer's (it enters
 * only through MOVE, which checks the process moved again). 0 or -errno,
 * *what failed. */
static int create_v2(const char *dir, const struct fyh_msg *req, const struct ask *a, const char **what) {
    *what = "mkdir";
    if (mkdir(dir, 0755) < 0)
        return -errno;
    int e = 0;
    char v[64];
    if (a->want & FYH_CTL_MEMORY) {
        *what = "memory.max";
        e = write_u64(dir, *what, a->memory);
        char sw[PATH_MAX + 64];
        snprintf(sw, sizeof(sw), "%s/memory.swap.max", dir);
        if (!e && access(sw, F_OK) == 0) {
            *what = "memory.swap.max";
            e = write_u64(dir, *what, a->swap);
        }
    }
    if (!e && a->pids) { /* (asked, or the peer's own where it asked none) */
        *what = "pids.max";
        e = write_u64(dir, *what, a->pids);
    }
    if (!e && a->cpu_quota) {
        *what = "cpu.max";
        snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)a->cpu_quota, (unsigned long long)a->cpu_period);
        e = write_file(dir, *what, v);
    }
    if (!e && (a->want & FYH_CTL_DEVICES)) {
        /* The peer's list as it is: a process of the peer's enters only if
         * every program it runs under where it is runs here too
         * (progs_v2), and this one narrows what they allow. */
        struct lx_dev_rule rules[FYH_DEV_RULES_MAX];
        for (uint32_t k = 0; k < req->u.create.ndev; k++)
            rules[k] = (struct lx_dev_rule){(char)req->u.create.dev[k].type, req->u.create.dev[k].access,
                                            req->u.create.dev[k].major, req->u.create.dev[k].minor};
        static char why[256];
        raise_devprog(true);
        e = lx_dev_bpf_attach(dir, rules, req->u.create.ndev, why, sizeof(why));
        raise_devprog(false);
        *what = why;
    }
    return e;
}

static void do_create(const struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep) {
    const struct allow *al = c->allow;
    uint32_t want = req->u.create.controllers;
    const char *name = req->u.create.name;
    if (H.cg2 && c->version < 3) {
        set_error(rep, FYH_E_UNOFFERED, EOPNOTSUPP, "this helper serves cgroup v2, which needs protocol 3 (MOVE)");
        return;
    }
    if (want & ~H.controllers) {
        set_error(rep, FYH_E_SYSTEM, EOPNOTSUPP, "controllers 0x%x asked, this helper offers 0x%x", want,
                  H.controllers);
        return;
    }
    if (((want & FYH_CTL_MEMORY) && req->u.create.memory > al->max_memory) ||
        ((want & FYH_CTL_PIDS) && req->u.create.pids > al->max_pids)) {
        set_error(rep, FYH_E_BUDGET, 0, "uid %u may ask for at most %llu bytes of memory and %llu pids per attempt",
                  (unsigned)c->uid, (unsigned long long)al->max_memory, (unsigned long long)al->max_pids);
        return;
    }
    if (!(want & FYH_CTL_MEMORY) && (H.controllers & FYH_CTL_MEMORY))
        want |= FYH_CTL_MEMORY; /* every attempt cgroup is bounded by the uid's budget */
    if (count_entries(c->uid) >= al->max_cgroups) {
        set_error(rep, FYH_E_BUDGET, 0, "uid %u already has %u attempt cgroups (its budget)", (unsigned)c->uid,
                  al->max_cgroups);
        return;
    }
    if (find_entry(c->uid, name)) {
        set_error(rep, FYH_E_EXISTS, EEXIST, "%s exists", name);
        return;
    }
    struct entry *slot = NULL;
    for (size_t i = 0; i < MAX_ENTRIES && !slot; i++)
        if (!H.entries[i].used)
            slot = &H.entries[i];
    if (!slot) {
        set_error(rep, FYH_E_BUDGET, 0, "the helper's table is full");
        return;
    }
    /* What the attempt gets, never more than the peer has (the memory
     * every attempt has: the budget, or the peer's own limit when lower). */
    struct ask a = {.want = want,
                    .memory_asked = (req->u.create.controllers & FYH_CTL_MEMORY) != 0,
                    .pids_asked = (want & FYH_CTL_PIDS) != 0,
                    .cpu_asked = (want & FYH_CTL_CPU) != 0};
    a.memory = a.memory_asked ? req->u.create.memory : al->max_memory;
    a.swap = req->u.create.swap < al->max_memory ? req->u.create.swap : 0;
    a.pids = a.pids_asked ? req->u.create.pids : 0;
    if (a.cpu_asked)
        fyh_cpu_quota(req->u.create.cpu_millis, &a.cpu_quota, &a.cpu_period);
    char pdir[PATH_MAX] = "";
    if (H.cg2) {
        char udir[PATH_MAX + 32];
        const char *why;
        uid_dir(udir, sizeof(udir), __builtin_ctz(want), c->uid);
        if (peer_dir(c->pid, c->pidfd, -1, pdir, sizeof(pdir), &why) < 0) {
            set_error(rep, FYH_E_DENIED, EPERM, "the peer's cgroup (pid %d): %s", (int)c->pid, why);
            return;
        }
        if (bounds_v2(pdir, udir, &a, rep) < 0)
            return;
    } else if (bounds_v1(c, req, &a, rep) < 0) {
        return;
    }
    memset(rep, 0, sizeof(*rep));
    rep->type = FYH_T_CREATED;
    uint32_t made = 0;
    int err = 0;
    const char *what = "mkdir";
    if (H.cg2) {
        char dir[PATH_MAX + 128];
        attempt_dir(dir, sizeof(dir), __builtin_ctz(want), c->uid, name);
        if (strlen(dir) >= FYH_PATH_MAX) {
            err = ENAMETOOLONG;
        } else {
            int e = create_v2(dir, req, &a, &what);
            if (!(e < 0 && strcmp(what, "mkdir") == 0))
                made = want; /* (the directory is there: removed below on failure) */
            err = -e;
            struct fyh_msg no;
            if (!err && progs_v2(pdir, dir, &no) < 0) {
                uint32_t left = remove_attempt(c->uid, name, 0);
                *rep = no;
                if (left)
                    logf_("uid %u %s: refused, and %u directory could not be removed", (unsigned)c->uid, name, left);
                return;
            }
            for (int i = 0; i < FYH_NCTL && !err; i++)
                if (want & (1u << i))
                    snprintf(rep->u.created.dir[i], FYH_PATH_MAX + 1, "%s", dir);
            rep->u.created.controllers = err ? 0 : want;
        }
        want = 0; /* (done: the v1 loop below has nothing to do) */
    }
    for (int i = 0; i < FYH_NCTL && !err; i++) {
        if (!(want & (1u << i)))
            continue;
        char *dir = rep->u.created.dir[i];
        attempt_dir(dir, FYH_PATH_MAX + 1, i, c->uid, name);
        if (strlen(dir) >= FYH_PATH_MAX) {
            err = ENAMETOOLONG;
            break;
        }
        if (mkdir(dir, 0755) < 0) {
            err = errno;
            break;
        }
        made |= 1u << i;
        rep->u.created.controllers |= 1u << i;
        int e = 0;
        if (i == 0) {
            what = "memory.limit_in_bytes";
            e = write_u64(dir, what, a.memory);
            /* (TCP's buffers: charged by v1 once this is written) */
            int t = e ? 0 : write_u64(dir, "memory.kmem.tcp.limit_in_bytes", a.memory);
            if (t && t != -ENOENT) {
                what = "memory.kmem.tcp.limit_in_bytes";
                e = t;
            }
            if (!e && H.memsw) {
                what = "memory.memsw.limit_in_bytes";
                e = write_u64(dir, what, a.memory + a.swap);
            }
        } else if (i == 1) {
            what = "pids.max";
            e = write_u64(dir, what, a.pids);
        } else if (i == 3) {
            /* Nothing but the peer's list (within its own devices cgroup:
             * devices_v1): deny all, then allow each rule. */
            raise_devices(true);
            what = "devices.deny";
            e = write_file(dir, what, "a");
            for (uint32_t k = 0; !e && k < req->u.create.ndev; k++) {
                char line[64];
                dev_line(&req->u.create.dev[k], line, sizeof(line));
                what = "devices.allow";
                e = write_file(dir, what, line);
            }
            raise_devices(false);
        } else {
            what = "cpu.cfs_quota_us";
            e = write_u64(dir, "cpu.cfs_period_us", a.cpu_period);
            if (!e)
                e = write_u64(dir, what, a.cpu_quota);
        }
        /* The peer may move its own processes in (the kernel checks the uid), nothing more. */
        int dfd = e ? -1 : open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!e && (dfd < 0 || fchownat(dfd, "tasks", c->uid, (gid_t)-1, 0) < 0 ||
                   fchownat(dfd, "cgroup.procs", c->uid, (gid_t)-1, 0) < 0)) {
            what = "chown tasks";
            e = -errno;
        }
        if (dfd >= 0)
            close(dfd);
        if (e < 0)
            err = -e;
    }
    if (err) {
        uint32_t left = 0;
        if (made)
            left = remove_attempt(c->uid, name, 0);
        set_error(rep, err == EEXIST ? FYH_E_EXISTS : FYH_E_SYSTEM, err, "%s %s: %s%s", what, name, strerror(err),
                  left ? " (and a directory could not be removed)" : "");
        return;
    }
    slot->used = true;
    slot->uid = c->uid;
    snprintf(slot->name, sizeof(slot->name), "%s", name);
    slot->creator = fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3);
}

static void do_remove(const struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep) {
    const char *name = req->u.remove.name;
    struct entry *e = find_entry(c->uid, name);
    if (!e) {
        /* From an earlier run of the helper: still only below the peer's own uid directory. */
        bool any = false;
        for (int i = 0; i < FYH_NCTL && !any; i++) {
            char dir[PATH_MAX + 128];
            struct stat st;
            attempt_dir(dir, sizeof(dir), i, c->uid, name);
            any = (H.controllers & (1u << i)) && lstat(dir, &st) == 0;
        }
        if (!any) {
            set_error(rep, FYH_E_NOT_FOUND, ENOENT, "uid %u has no attempt cgroup %s", (unsigned)c->uid, name);
            return;
        }
    }
    memset(rep, 0, sizeof(*rep));
    rep->type = FYH_T_REMOVED;
    /* (the processes it kills are waited for, briefly, at the first REMOVE
     * only: what SIGKILL does not end is the gc's, on later passes) */
    rep->u.removed.left = remove_attempt(c->uid, name, e && e->removing ? 0 : REMOVE_SETTLE_MS);
    if (e && !rep->u.removed.left)
        drop_entry(e);
    else if (e && !e->removing)
        e->removing = true, e->tries = 1, e->next_try = now_ms() + fyh_retry_delay_ms(1);
}

/* Writes pid (whose pidfd is pfd) to dir's cgroup.procs, then checks it was
 * still alive: 0, -ESRCH (it ended: the number may have been reused), or
 * the write's -errno. */
static int move_pid(const char *dir, pid_t pid, int pfd) {
    char v[32];
    snprintf(v, sizeof(v), "%d", (int)pid);
    int e = write_file(dir, "cgroup.procs", v);
    if (e < 0)
        return e;
    return pidfd_alive(pfd) ? 0 : -ESRCH;
}

/* The children of every thread of pid (/proc/PID/task/TID/children), each
 * opened as a pidfd, checked to be pid's child and uid's alone, and moved,
 * then theirs, at most 3 levels and 256 processes: how many, or -errno
 * (-EXDEV: a child of the peer's is in another cgroup than from, the one
 * whose limits and programs do_move compared with the attempt's; it stays
 * where it is). */
static int move_children(const char *dir, const char *from, uid_t uid, pid_t pid, int depth) {
    if (depth >= 3)
        return 0;
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    int moved = 0;
    for (struct dirent *de; d && (de = readdir(d)) && moved < 256;) {
        if (de->d_name[0] == '.')
            continue;
        char cpath[160], buf[4096];
        snprintf(cpath, sizeof(cpath), "/proc/%d/task/%.16s/children", (int)pid, de->d_name);
        int f = open(cpath, O_RDONLY | O_CLOEXEC);
        ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
        if (f >= 0)
            close(f);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        for (char *p = buf, *end; *p && moved < 256; p = end) {
            long kid = strtol(p, &end, 10);
            if (end == p)
                break;
            int pfd = (int)syscall(SYS_pidfd_open, (pid_t)kid, 0);
            uid_t u[4];
            pid_t parent = 0;
            bool mine = pfd >= 0 && proc_status((pid_t)kid, u, &parent) && parent == pid && u[0] == uid &&
                        u[1] == uid && u[2] == uid && u[3] == uid && pidfd_alive(pfd);
            /* Where it is: from (compared with the attempt by do_move), or
             * inside already (forked after its parent moved); it ended
             * meanwhile: not ours to move; anywhere else: refused. */
            char kdir[PATH_MAX];
            const char *why = "";
            int w = mine ? peer_dir((pid_t)kid, pfd, -1, kdir, sizeof(kdir), &why) : 0;
            if (mine && ((w < 0 && !pidfd_alive(pfd)) || (w == 0 && strcmp(kdir, dir) == 0)))
                mine = false;
            else if (mine && (w < 0 || strcmp(kdir, from) != 0)) {
                logf_("uid %u: process %ld is not in %s (%s%s): not moved", (unsigned)uid, kid, from,
                      w < 0 ? why : "in ", w < 0 ? "" : kdir);
                close(pfd);
                closedir(d);
                return -EXDEV;
            }
            int e = mine ? move_pid(dir, (pid_t)kid, pfd) : 0;
            if (pfd >= 0)
                close(pfd);
            if (!mine || e == -ESRCH)
                continue; /* (not the peer's, or gone: not ours to move) */
            if (e < 0) {
                closedir(d);
                return e;
            }
            moved++;
            int sub = move_children(dir, from, uid, (pid_t)kid, depth + 1);
            if (sub < 0) {
                closedir(d);
                return sub;
            }
            moved += sub;
        }
    }
    if (d)
        closedir(d);
    return moved;
}

/* MOVE: a process of the peer into the peer's attempt cgroup (v2). Entering
 * a v2 cgroup takes write access to the cgroup.procs of the common ancestor
 * of where a process is and where it goes, which the peer does not have and
 * must not get: a cgroup.procs we opened and passed would carry our
 * credentials and let its holder move anybody's process, and v2 (unlike v1)
 * checks nothing about the process moved. So we move it ourselves, and only
 * what the peer could have moved itself under v1's rule and more: a process
 * named by a pidfd (no pid to race at the time of the checks), live, whose
 * four uids are all the peer's, which descends from the peer (at most four
 * generations: the library's init may come through a reaper middle) and is
 * not the peer itself; checked alive again after the write, so that a pid
 * reused between the checks and the write is caught (see docs/helper.md for
 * what then remains). Its descendants go with it, each checked the same way
 * against its own parent. */
static void do_move(const struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep) {
    const char *name = req->u.move.name;
    if (!H.cg2) {
        set_error(rep, FYH_E_UNOFFERED, EOPNOTSUPP,
                  "this helper's cgroups are v1: the peer moves its own processes (tasks is its to write)");
        return;
    }
    if (!find_entry(c->uid, name)) {
        set_error(rep, FYH_E_NOT_FOUND, ENOENT, "uid %u has no attempt cgroup %s", (unsigned)c->uid, name);
        return;
    }
    pid_t pid = pidfd_pid(c->passed);
    if (pid <= 0) {
        set_error(rep, FYH_E_FD, EBADF, "MOVE needs a pidfd of a live process this helper can see");
        return;
    }
    uid_t u[4];
    pid_t parent = 0;
    if (!proc_status(pid, u, &parent) || u[0] != c->uid || u[1] != c->uid || u[2] != c->uid || u[3] != c->uid) {
        set_error(rep, FYH_E_FD, EPERM, "process %d is not uid %u's alone", (int)pid, (unsigned)c->uid);
        return;
    }
    bool descends = false;
    for (int depth = 0; depth < 4 && parent > 1 && !descends; depth++) {
        uid_t pu[4];
        descends = parent == c->pid;
        if (!descends && !proc_status(parent, pu, &parent))
            break;
    }
    if (pid == c->pid || !descends) {
        set_error(rep, FYH_E_FD, EPERM, "process %d does not descend from the peer (pid %d)", (int)pid, (int)c->pid);
        return;
    }
    /* (the checks above read this process's /proc, not a successor's, and
     * the peer's pid was still the peer's) */
    if (!pidfd_alive(c->pidfd)) {
        set_error(rep, FYH_E_DENIED, ESRCH, "the peer (pid %d) ended during the checks", (int)c->pid);
        return;
    }
    if (!pidfd_alive(c->passed)) {
        set_error(rep, FYH_E_FD, ESRCH, "process %d ended before the move", (int)pid);
        return;
    }
    char dir[PATH_MAX + 128], from[PATH_MAX];
    attempt_dir(dir, sizeof(dir), __builtin_ctz(H.controllers), c->uid, name);
    /* Never more than the process has where it is (whoever made the
     * attempt): its limits, and every BPF program it runs under. */
    const char *why;
    if (peer_dir(pid, c->passed, -1, from, sizeof(from), &why) < 0) {
        set_error(rep, FYH_E_DENIED, EPERM, "the cgroup of process %d: %s", (int)pid, why);
        return;
    }
    if (bounds_v2(from, dir, NULL, rep) < 0 || progs_v2(from, dir, rep) < 0)
        return;
    int e = move_pid(dir, pid, c->passed);
    if (e == -ESRCH) {
        /* It ended between the checks and the write: the number may have
         * been another's by then (the peer is refused either way). */
        logf_("uid %u pid %d: process %d ended during its move to %s", (unsigned)c->uid, (int)c->pid, (int)pid, dir);
        set_error(rep, FYH_E_FD, ESRCH, "process %d ended during the move", (int)pid);
        return;
    }
    if (e < 0) {
        set_error(rep, FYH_E_SYSTEM, -e, "%s/cgroup.procs: %s", dir, strerror(-e));
        return;
    }
    /* Its descendants too (the sandbox's init has forked its workload
     * process before it is moved): each checked as its parent was, and
     * moved after it, so one forked meanwhile was born inside. */
    int moved = move_children(dir, from, c->uid, pid, 0);
    if (moved == -EXDEV) {
        set_error(rep, FYH_E_DENIED, EPERM, "a descendant of %d is in another cgroup than %s: not moved", (int)pid,
                  rel(from, H.cg2_mnt_point));
        return;
    }
    if (moved < 0) {
        set_error(rep, FYH_E_SYSTEM, -moved, "moving the descendants of %d into %s: %s", (int)pid, dir,
                  strerror(-moved));
        return;
    }
    memset(rep, 0, sizeof(*rep));
    rep->type = FYH_T_MOVED;
    rep->u.moved.pid = (uint32_t)pid;
}

static struct net_entry *find_net(uid_t uid, const char *name) {
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        if (H.nets[i].used && H.nets[i].uid == uid && strcmp(H.nets[i].name, name) == 0)
            return &H.nets[i];
    return NULL;
}

/* The router for the peer's sandbox namespace, which came as c->passed
 * (NET_CREATE), or (NET_TAP, tap != NULL) with a tap as its sandbox-side
 * link, whose descriptor *tap goes back with the reply. Both count against
 * the same budget and are removed alike (NET_REMOVE, gc). */
static void do_net_create(struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep, int *tap) {
    const char *name = req->u.net_create.name;
    char why[FYH_MSG_MAX + 1] = "";
    if (!H.net) {
        set_error(rep, FYH_E_UNOFFERED, EOPNOTSUPP, "this helper offers no network (started without --net-uplink)");
        return;
    }
    if (!tap && fyh_net_check_ns(c->passed, c->uid, why, sizeof(why)) < 0) {
        set_error(rep, FYH_E_FD, EPERM, "%s", why);
        return;
    }
    uint32_t mine = 0;
    struct net_entry *slot = NULL;
    for (size_t i = 0; i < MAX_ENTRIES; i++) {
        mine += H.nets[i].used && H.nets[i].uid == c->uid;
        if (!H.nets[i].used && !slot)
            slot = &H.nets[i];
    }
    if (mine >= c->allow->max_cgroups || !slot) {
        set_error(rep, FYH_E_BUDGET, 0, "uid %u already has %u routers (its budget)", (unsigned)c->uid, mine);
        return;
    }
    if (find_net(c->uid, name)) {
        set_error(rep, FYH_E_EXISTS, EEXIST, "%s has a router", name);
        return;
    }
    int os = 0;
    int e = tap ? fyh_net_create_tap(&slot->net, c->uid, tap, req->u.net_create.rule, req->u.net_create.nrules, &os,
                                     why, sizeof(why))
                : fyh_net_create(&slot->net, c->passed, req->u.net_create.rule, req->u.net_create.nrules, &os, why,
                                 sizeof(why));
    if (e < 0) {
        set_error(rep, (uint32_t)-e, os, "%s", why);
        return;
    }
    slot->used = true;
    slot->uid = c->uid;
    snprintf(slot->name, sizeof(slot->name), "%s", name);
    slot->creator = fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3);
    memset(rep, 0, sizeof(*rep));
    rep->type = tap ? FYH_T_NET_TAPPED : FYH_T_NET_CREATED;
    snprintf(rep->u.net_created.uplink, sizeof(rep->u.net_created.uplink), "%s", fyh_net_uplink());
    snprintf(rep->u.net_created.link, sizeof(rep->u.net_created.link), "%s", slot->net.link);
}

static void do_net_remove(const struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep) {
    struct net_entry *n = find_net(c->uid, req->u.net_remove.name);
    if (!n) {
        set_error(rep, FYH_E_NOT_FOUND, ENOENT, "uid %u has no router %s", (unsigned)c->uid, req->u.net_remove.name);
        return;
    }
    memset(rep, 0, sizeof(*rep));
    rep->type = FYH_T_NET_REMOVED;
    rep->u.net_removed.left = fyh_net_remove(&n->net);
    if (n->creator >= 0)
        close(n->creator);
    memset(n, 0, sizeof(*n));
}

/* ---- job networks (protocol 4) ---- */

static struct job_entry *find_job(uid_t uid, const char *name) {
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        if (H.jobs[i].used && H.jobs[i].uid == uid && strcmp(H.jobs[i].name, name) == 0)
            return &H.jobs[i];
    return NULL;
}

/* JOB_CREATE, JOB_ADD (the member's namespace came as c->passed), JOB_DEL,
 * JOB_DESTROY: a job is the peer's (by uid and name) as routers are; jobs
 * count against the same budget number as routers, separately. */
static void do_job(const struct conn *c, const struct fyh_msg *req, struct fyh_msg *rep) {
    const char *name = req->u.job.name;
    char why[FYH_MSG_MAX + 1] = "";
    int os = 0, e;
    if (!H.net) {
        set_error(rep, FYH_E_UNOFFERED, EOPNOTSUPP, "this helper offers no network (started without --net-uplink)");
        return;
    }
    struct job_entry *j = find_job(c->uid, name);
    if (req->type == FYH_T_JOB_CREATE) {
        uint32_t mine = 0;
        struct job_entry *slot = NULL;
        for (size_t i = 0; i < MAX_ENTRIES; i++) {
            mine += H.jobs[i].used && H.jobs[i].uid == c->uid;
            if (!H.jobs[i].used && !slot)
                slot = &H.jobs[i];
        }
        if (j) {
            set_error(rep, FYH_E_EXISTS, EEXIST, "%s is a job network already", name);
            return;
        }
        if (mine >= c->allow->max_cgroups || !slot) {
            set_error(rep, FYH_E_BUDGET, 0, "uid %u already has %u job networks (its budget)", (unsigned)c->uid, mine);
            return;
        }
        if ((e = fyh_job_create(&slot->job, req->u.job.n, &os, why, sizeof(why))) < 0) {
            set_error(rep, (uint32_t)-e, os, "%s", why);
            return;
        }
        slot->used = true;
        slot->uid = c->uid;
        snprintf(slot->name, sizeof(slot->name), "%s", name);
        slot->creator = fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3);
        memset(rep, 0, sizeof(*rep));
        rep->type = FYH_T_JOB_CREATED;
        return;
    }
    if (!j) {
        set_error(rep, FYH_E_NOT_FOUND, ENOENT, "uid %u has no job network %s", (unsigned)c->uid, name);
        return;
    }
    memset(rep, 0, sizeof(*rep));
    switch (req->type) {
    case FYH_T_JOB_ADD:
        if (fyh_net_check_ns(c->passed, c->uid, why, sizeof(why)) < 0) {
            set_error(rep, FYH_E_FD, EPERM, "%s", why);
            return;
        }
        if ((e = fyh_job_add(&j->job, req->u.job.n, c->passed, &os, why, sizeof(why))) < 0) {
            set_error(rep, (uint32_t)-e, os, "%s", why);
            return;
        }
        rep->type = FYH_T_JOB_ADDED;
        break;
    case FYH_T_JOB_DEL:
        if (req->u.job.n >= j->job.nmembers) {
            set_error(rep, FYH_E_NOT_FOUND, ENOENT, "job network %s has no member %u", name, req->u.job.n);
            return;
        }
        rep->type = FYH_T_JOB_DELETED;
        rep->u.job_done.left = fyh_job_del(&j->job, req->u.job.n);
        break;
    default: /* FYH_T_JOB_DESTROY */
        rep->type = FYH_T_JOB_DESTROYED;
        rep->u.job_done.left = fyh_job_destroy(&j->job);
        if (j->creator >= 0)
            close(j->creator);
        memset(j, 0, sizeof(*j));
        break;
    }
}

/* ------------------------------------------------------------------ */
/* connections                                                         */

static void send_reply_fd(int fd, const struct fyh_msg *rep, int pass);
static void send_reply(int fd, const struct fyh_msg *rep) { send_reply_fd(fd, rep, -1); }

/* len bytes on fd, with pass (>= 0) as SCM_RIGHTS; never waiting. */
static ssize_t send_with_fd(int fd, const void *buf, size_t len, int pass) {
    return scm_send_one(fd, buf, len, pass, MSG_DONTWAIT);
}

/* A reply, with pass (NET_TAPPED's tap, >= 0) as SCM_RIGHTS with its
 * first bytes. */
static void send_reply_fd(int fd, const struct fyh_msg *rep, int pass) {
    uint8_t out[FYH_MAX_MESSAGE];
    int n = fyh_encode(rep, out, sizeof(out));
    if (n == -FYH_E_TYPE && rep->version < 2) {
        /* (a version-2 refusal code to a version-1 request: say it in version 1's words) */
        struct fyh_msg e;
        set_error(&e, FYH_E_SYSTEM, 0, "%s", rep->u.error.text);
        e.version = rep->version;
        n = fyh_encode(&e, out, sizeof(out));
    }
    if (n < 0) {
        struct fyh_msg e;
        set_error(&e, FYH_E_SYSTEM, EIO, "reply could not be encoded");
        n = fyh_encode(&e, out, sizeof(out));
    }
    if (n > 0) /* small; a peer that does not read it loses it */
        (void)send_with_fd(fd, out, (size_t)n, pass);
}

/* A refusal in version 1 (which every client decodes) unless the request
 * was version 2: codes above version 1's become FYH_E_SYSTEM there. */
static void refuse_v(int fd, uint16_t version, uint32_t code, int os, const char *text) {
    struct fyh_msg rep;
    set_error(&rep, code, os, "%s", text);
    rep.version = version >= FYH_VERSION_MIN && version <= FYH_VERSION ? version : FYH_VERSION_MIN;
    if (rep.version < 2 && code > FYH_E_FLAGS)
        rep.u.error.code = FYH_E_SYSTEM;
    send_reply(fd, &rep);
    H.refused++;
}

static void refuse_fd(int fd, uint32_t code, int os, const char *text) {
    refuse_v(fd, FYH_VERSION_MIN, code, os, text);
}

/* ------------------------------------------------------------------ */
/* what peers hand us                                                  */

/* Closing a file a peer sent can hold the closer for as long as the peer
 * likes: a TCP socket with SO_LINGER and unsent data waits in its release
 * (ours the last reference) for its linger time, and a file of the peer's
 * own FUSE mount waits in its flush (at every close) for an answer the
 * peer never gives, uninterruptibly. One thread serves every uid, so it
 * does neither (any local user froze the helper for all through the queue
 * of a connection it refused: the fourth exploration):
 * - a connection is closed by the disposer, a process of ours that does
 *   nothing else: it gets the socket (SCM_RIGHTS; ours then is not the
 *   last reference, and we close ours before it may close its own), reads
 *   what is queued without taking the descriptors that came along (the
 *   kernel drops them: no flush) and closes it, each under an interval
 *   timer whose signal ends an interruptible wait such as a linger. One
 *   stuck all the same (its queue full) is killed, left to be reaped, and
 *   replaced;
 * - a descriptor that came with a request is looked at by its name in
 *   /proc/self/fd only (no call into its file system): a network
 *   namespace or a pidfd is what requests take; a socket goes to the
 *   disposer; a pipe or another anonymous file is closed (nothing to
 *   flush); a file with a path is closed only when its mount is one of
 *   our own namespace whose file system never waits in a flush (ext4,
 *   tmpfs, ...: on_safe_mount); any other is kept open, and its uid is
 *   refused from then on: no second one. */
#define MAX_KEPT 1024
static struct {
    pid_t pid;             /* the disposer (-1: none yet) */
    int fd;                /* our end of its socket */
    pid_t left[16];        /* replaced ones, reaped when they end */
    size_t nleft;
    int kept[MAX_KEPT];    /* files never to be closed (inherited by a new disposer, which keeps them too) */
    size_t nkept;
    unsigned long replaced, disposed;
} D = {.pid = -1, .fd = -1};

static void on_alarm(int sig) { (void)sig; }

static void alarm_guard(bool on) {
    struct itimerval it = {{0, on ? 100000 : 0}, {0, on ? 100000 : 0}};
    (void)setitimer(ITIMER_REAL, &it, NULL);
}

static bool is_kept(int fd) {
    for (size_t i = 0; i < D.nkept; i++)
        if (D.kept[i] == fd)
            return true;
    return false;
}

__attribute__((noreturn)) static void disposer_main(int sock) {
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    /* Only its socket, and what must never be closed (a flush could hold it). */
    for (int fd = 0; fd < 65536; fd++) {
        if (fd == sock || is_kept(fd))
            continue;
        int next = 65536;
        for (size_t i = 0; i < D.nkept; i++)
            if (D.kept[i] > fd && D.kept[i] < next)
                next = D.kept[i];
        if (sock > fd && sock < next)
            next = sock;
        syscall(SYS_close_range, (unsigned)fd, (unsigned)next - 1, 0);
        fd = next - 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm; /* (no SA_RESTART: the signal ends the wait) */
    sigaction(SIGALRM, &sa, NULL);
    sigset_t only;
    sigfillset(&only);
    sigdelset(&only, SIGALRM);
    sigprocmask(SIG_SETMASK, &only, NULL);
    int held[64];
    size_t nheld = 0;
    for (;;) {
        char op = 0;
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(int) * 8)];
        } u;
        struct iovec iov = {&op, 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
        ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(0);
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
                    if (nheld < sizeof(held) / sizeof(held[0]))
                        held[nheld++] = fd;
                    else
                        close(fd); /* (not reached: the helper says go after each) */
                }
        if (op != 'g')
            continue;
        /* The helper closed its copies: ours are the last. */
        alarm_guard(true);
        for (size_t i = 0; i < nheld; i++) {
            /* What the peer sent and nobody read: read (bounded, never
             * waiting) with no room for descriptors, so that closing does
             * not reset the connection before the peer reads our reply. */
            for (int k = 0; k < 64; k++) {
                uint8_t junk[4096];
                if (recv(held[i], junk, sizeof(junk), MSG_DONTWAIT) <= 0)
                    break;
            }
            close(held[i]);
        }
        alarm_guard(false);
        nheld = 0;
    }
}

static int disposer_start(void) {
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(sp[0]);
        close(sp[1]);
        return -1;
    }
    if (pid == 0)
        disposer_main(sp[1]);
    close(sp[1]);
    (void)fcntl(sp[0], F_SETFL, O_NONBLOCK);
    D.pid = pid;
    D.fd = sp[0];
    return 0;
}

/* The disposer made no room (stuck in a close) or is gone: killed, left
 * to be reaped, and a new one next time. */
static void disposer_replace(void) {
    if (D.pid > 0) {
        kill(D.pid, SIGKILL);
        if (D.nleft < sizeof(D.left) / sizeof(D.left[0]))
            D.left[D.nleft++] = D.pid;
        logf_("the disposer (pid %d) was stuck: replaced", (int)D.pid);
    }
    if (D.fd >= 0)
        close(D.fd);
    D.pid = D.fd = -1;
    D.replaced++;
}

static void disposer_reap(void) {
    for (size_t i = 0; i < D.nleft;)
        if (waitpid(D.left[i], NULL, WNOHANG) != 0)
            D.left[i] = D.left[--D.nleft];
        else
            i++;
    if (D.pid > 0 && waitpid(D.pid, NULL, WNOHANG) == D.pid) {
        if (D.fd >= 0)
            close(D.fd);
        D.pid = D.fd = -1;
    }
}

static int send_op(int fd, char op, int pass) { return send_with_fd(fd, &op, 1, pass) == 1 ? 0 : -1; }

/* A descriptor never closed: its flush could hold us (see above). */
static void keep_open(int fd) {
    if (D.nkept < MAX_KEPT)
        D.kept[D.nkept++] = fd;
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* Closes a socket a peer may have filled (its queue, what it is): by the
 * disposer. */
static void dispose(int fd) {
    if (fd < 0)
        return;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (D.fd < 0 && disposer_start() < 0)
            break;
        if (send_op(D.fd, 'd', fd) == 0) {
            close(fd); /* (not the last reference: one is on its way) */
            if (send_op(D.fd, 'g', -1) < 0)
                disposer_replace(); /* (full: what it holds goes with it) */
            D.disposed++;
            return;
        }
        disposer_replace();
    }
    logf_("a connection could not be handed to the disposer: kept open");
    keep_open(fd);
}

static void ban(uid_t uid, const char *what) {
    for (size_t i = 0; i < H.nallow; i++)
        if (H.allow[i].uid == uid && !H.allow[i].banned) {
            H.allow[i].banned = true;
            logf_("uid %u sent %s, which the helper keeps open rather than close (its flush could hold the helper): "
                  "refused from now on", (unsigned)uid, what);
        }
}

/* Whether the file fd is on a mount of our own namespace whose file
 * system never waits on anyone in its flush (not FUSE, nor a network file
 * system): its mount id (fdinfo) looked up in our mountinfo, no call into
 * the file system itself. A mount of another namespace (the peer's own
 * FUSE, in its user namespace) is not known, so not safe. */
static bool on_safe_mount(int fd) {
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(path, "re");
    long mnt = -1;
    while (f && fgets(buf, sizeof(buf), f))
        if (!strncmp(buf, "mnt_id:", 7))
            mnt = strtol(buf + 7, NULL, 10);
    if (f)
        fclose(f);
    if (mnt < 0 || !(f = fopen("/proc/self/mountinfo", "re")))
        return false;
    bool safe = false;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        if (strtol(line, NULL, 10) != mnt)
            continue;
        const char *sep = strstr(line, " - ");
        char type[64] = "";
        if (sep)
            sscanf(sep + 3, "%63s", type);
        static const char *const waits[] = {"fuse", "nfs", "cifs", "smb", "9p", "ceph", "afs", "gfs", "ocfs", "glusterfs",
                                            "lustre", "virtiofs", "orangefs", "coda"};
        safe = type[0] != '\0';
        for (size_t i = 0; safe && i < sizeof(waits) / sizeof(waits[0]); i++)
            safe = strncmp(type, waits[i], strlen(waits[i])) != 0;
        break;
    }
    fclose(f);
    return safe;
}

/* What a descriptor a peer sent is, by its name only: 'n' a network
 * namespace, 'p' a pidfd, 's' a socket, 'a' an anonymous file or pipe
 * (nothing to flush), 'f' anything else (a file with a path). */
static char passed_kind(int fd, char *name, size_t size) {
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, name, size - 1);
    name[n > 0 ? (size_t)n : 0] = '\0';
    if (n <= 0)
        return 'f';
    if (!strncmp(name, "net:[", 5))
        return 'n';
    if (!strcmp(name, "anon_inode:[pidfd]") || !strncmp(name, "pidfd:", 6))
        return 'p';
    if (!strncmp(name, "socket:[", 8))
        return 's';
    if (!strncmp(name, "pipe:[", 6) || !strncmp(name, "anon_inode:", 11))
        return 'a';
    return 'f';
}

/* A descriptor that came with a request and is not kept as c->passed. */
static void dispose_passed(const struct conn *c, int fd) {
    char name[256];
    switch (passed_kind(fd, name, sizeof(name))) {
    case 's':
        dispose(fd);
        break;
    case 'f':
        if (on_safe_mount(fd)) {
            close(fd);
            break;
        }
        keep_open(fd);
        ban(c->uid, name[0] ? name : "an unnamed file");
        break;
    default:
        close(fd);
    }
}

static void conn_close(struct conn *c) {
    dispose(c->fd);
    c->fd = -1;
    if (c->pidfd >= 0)
        close(c->pidfd);
    c->pidfd = -1;
    if (c->passed >= 0)
        close(c->passed); /* (a network namespace or a pidfd: nothing to flush) */
    c->passed = -1;
    c->extra_fds = false;
}

/* A whole request is in c->buf: decode (validated again, whatever the peer
 * checked), act, reply. */
static void handle(struct conn *c) {
    struct fyh_msg req, rep;
    int tap = -1; /* NET_TAPPED's descriptor, ours to close once sent */
    int e = fyh_decode(c->buf, c->got, &req);
    uint16_t version = (uint16_t)(c->buf[4] | c->buf[5] << 8);
    if (e < 0) {
        refuse_v(c->fd, version, (uint32_t)-e, 0, fyh_err_name((uint32_t)-e));
        return;
    }
    /* A descriptor comes with NET_CREATE and MOVE, exactly one, with the first bytes. */
    bool wants_fd = req.type == FYH_T_NET_CREATE || req.type == FYH_T_MOVE || req.type == FYH_T_JOB_ADD;
    if (c->extra_fds || wants_fd != (c->passed >= 0)) {
        refuse_v(c->fd, version, FYH_E_FD, EBADF,
                 req.type == FYH_T_MOVE ? "MOVE needs exactly one descriptor (a pidfd), sent with the message's "
                                          "first bytes"
                 : wants_fd ? "NET_CREATE and JOB_ADD need exactly one descriptor (the sandbox's network "
                              "namespace), sent with the message's first bytes"
                            : "this request takes no descriptor");
        return;
    }
    c->version = req.version;
    /* What is made for the peer is removed when it ends (gc, by the pidfd
     * taken when it connected, never one opened later by a number that may
     * be another's by then), and MOVE's ancestry is the peer's: nothing of
     * either for a peer that is gone already. */
    bool makes = req.type == FYH_T_CREATE || req.type == FYH_T_NET_CREATE || req.type == FYH_T_NET_TAP ||
                 req.type == FYH_T_JOB_CREATE || req.type == FYH_T_MOVE;
    if (makes && (c->pidfd < 0 || !pidfd_alive(c->pidfd))) {
        set_error(&rep, FYH_E_DENIED, ESRCH, "the peer (pid %d) has ended: nothing is made for it", (int)c->pid);
        req.type = 0;
    }
    /* A peer that gave up waiting (its call timed out, and it closed the
     * connection) never learns what would be made now, and never removes
     * it: it held a slot of its uid's budget for as long as the peer lived. */
    struct pollfd hup = {c->fd, 0, 0}; /* (POLLHUP: closed, not only shut for writing) */
    if (makes && req.type && poll(&hup, 1, 0) == 1 && (hup.revents & (POLLHUP | POLLERR))) {
        set_error(&rep, FYH_E_DENIED, ECONNRESET, "the peer closed the connection before the answer: nothing is made");
        req.type = 0;
    }
    switch (req.type) {
    case 0:
        break;
    case FYH_T_HELLO:
        do_hello(c, &rep);
        break;
    case FYH_T_CREATE:
        do_create(c, &req, &rep);
        break;
    case FYH_T_REMOVE:
        do_remove(c, &req, &rep);
        break;
    case FYH_T_NET_CREATE:
        do_net_create(c, &req, &rep, NULL);
        break;
    case FYH_T_NET_TAP:
        do_net_create(c, &req, &rep, &tap);
        break;
    case FYH_T_JOB_CREATE:
    case FYH_T_JOB_ADD:
    case FYH_T_JOB_DEL:
    case FYH_T_JOB_DESTROY:
        do_job(c, &req, &rep);
        break;
    case FYH_T_NET_REMOVE:
        do_net_remove(c, &req, &rep);
        break;
    case FYH_T_MOVE:
        do_move(c, &req, &rep);
        break;
    default:
        set_error(&rep, FYH_E_TYPE, 0, "type 0x%x is not a request", req.type);
        break;
    }
    if (rep.type == FYH_T_ERROR)
        H.refused++;
    else
        H.served++;
    if (H.verbose)
        logf_("uid %u pid %d: request %u -> %s", (unsigned)c->uid, (int)c->pid, req.type,
              rep.type == FYH_T_ERROR ? fyh_err_name(rep.u.error.code) : "ok");
    rep.version = req.version;
    if (rep.type == FYH_T_ERROR && req.version < 2 && rep.u.error.code > FYH_E_FLAGS)
        rep.u.error.code = FYH_E_SYSTEM;
    send_reply_fd(c->fd, &rep, rep.type == FYH_T_NET_TAPPED ? tap : -1);
    /* (the tap lives on in the peer's copy; a peer gone loses it, and its
     * router goes with the gc) */
    if (tap >= 0)
        close(tap);
}

/* Reads what is there; true when the connection is finished (answered or refused). */
static bool conn_read(struct conn *c) {
    size_t want = FYH_HEADER;
    if (c->got >= FYH_HEADER) {
        struct fyh_header h;
        int e = fyh_decode_header(c->buf, c->got, &h);
        if (e < 0) {
            refuse_fd(c->fd, (uint32_t)-e, 0, fyh_err_name((uint32_t)-e));
            return true;
        }
        want = FYH_HEADER + h.length;
    }
    if (c->allow && c->allow->banned)
        return true; /* (its uid sent a file we keep open: see dispose_passed) */
    /* recvmsg: a descriptor may come along (NET_CREATE's namespace); any
     * other, a second one, or one after the first bytes is refused. Room
     * for as many as a message holds: one the kernel drops for want of
     * room would be released here (a lingering socket's release waits). */
    struct iovec iov = {c->buf + c->got, want - c->got};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * 253)];
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
    ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return errno != EAGAIN && errno != EINTR;
    if (mh.msg_flags & MSG_CTRUNC)
        c->extra_fds = true; /* (the kernel closed what did not fit) */
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            char name[256];
            char kind = passed_kind(fd, name, sizeof(name));
            if (c->passed < 0 && c->got == 0 && i == 0 && (kind == 'n' || kind == 'p'))
                c->passed = fd;
            else {
                dispose_passed(c, fd);
                c->extra_fds = true;
            }
        }
    }
    if (n == 0) {
        if (c->got) /* closed mid-message: a truncated request */
            refuse_fd(c->fd, FYH_E_MALFORMED, 0, "truncated request");
        return true;
    }
    c->got += (size_t)n;
    if (c->got == FYH_HEADER) { /* check the header before waiting for a payload */
        struct fyh_header h;
        int e = fyh_decode_header(c->buf, c->got, &h);
        if (e < 0) {
            refuse_fd(c->fd, (uint32_t)-e, 0, fyh_err_name((uint32_t)-e));
            return true;
        }
        want = FYH_HEADER + h.length;
    }
    if (c->got == want && c->got >= FYH_HEADER) {
        handle(c);
        return true;
    }
    return false;
}

static void admit(int fd, struct conn *conns);

static void accept_one(int lfd, struct conn *conns) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0)
        admit(fd, conns);
}

/* Socketpair mode (--connection-fd): the host that spawned us sends, on
 * the control socket, one byte per connection with one end of a fresh
 * socketpair of its own (SCM_RIGHTS). Each is a connection like an
 * accepted one: its SO_PEERCRED are those of the process that made the
 * pair, checked against the allowlist as always. false once the host
 * closed its end (we stop then). */
static bool control_read(int ctl, struct conn *conns) {
    for (int burst = 0; burst < 64; burst++) {
        char bytes[8];
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(int) * 8)];
        } u;
        struct iovec iov = {bytes, sizeof(bytes)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
        ssize_t n = recvmsg(ctl, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
                int fd;
                memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
                int type = 0, domain = 0;
                socklen_t tl = sizeof(type), dl = sizeof(domain);
                /* only a unix stream socket is a connection; anything else is closed unread */
                if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
                    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0 || domain != AF_UNIX ||
                    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
                    H.refused++;
                    close(fd);
                    continue;
                }
                admit(fd, conns);
            }
        }
    }
    return true;
}

/* A new connection (accepted, or sent in socketpair mode): peer checks, a slot. */
static void admit(int fd, struct conn *conns) {
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr)) {
        refuse_fd(fd, FYH_E_DENIED, errno, "no peer credentials");
        dispose(fd);
        return;
    }
    const struct allow *al = find_allow(cr.uid);
    if (!al || al->banned) {
        char text[128];
        snprintf(text, sizeof(text),
                 al ? "uid %u sent the helper a file it keeps open rather than close: refused until it restarts"
                    : "uid %u is not in the helper's allowlist", (unsigned)cr.uid);
        refuse_fd(fd, FYH_E_DENIED, EACCES, text);
        dispose(fd);
        return;
    }
    /* One uid holds at most half the slots: an allowed peer cannot starve the others. */
    size_t mine = 0;
    for (size_t i = 0; i < H.max_conns; i++)
        mine += conns[i].fd >= 0 && conns[i].uid == cr.uid;
    if (H.max_conns > 1 && mine >= H.max_conns / 2) {
        refuse_fd(fd, FYH_E_BUSY, EAGAIN, "too many connections from this uid");
        dispose(fd);
        return;
    }
    for (size_t i = 0; i < H.max_conns; i++)
        if (conns[i].fd < 0) {
            conns[i].fd = fd;
            conns[i].uid = cr.uid;
            conns[i].pid = cr.pid;
            /* the connecting process itself (a pid read later could be another's) */
            socklen_t pl = sizeof(conns[i].pidfd);
            if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &conns[i].pidfd, &pl) < 0 || pl != sizeof(int))
                conns[i].pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
            else
                (void)fcntl(conns[i].pidfd, F_SETFD, FD_CLOEXEC);
            conns[i].allow = al;
            conns[i].got = 0;
            conns[i].passed = -1;
            conns[i].extra_fds = false;
            conns[i].deadline = now_ms() + H.timeout_ms;
            return;
        }
    refuse_fd(fd, FYH_E_BUSY, EAGAIN, "too many connections");
    dispose(fd);
}

/* ------------------------------------------------------------------ */
/* the socket                                                          */

/* The socket's directory must be root's and written by nobody else: then
 * nobody can swap the socket for theirs. */
static int make_socket(const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (path[0] != '/' || strlen(path) >= sizeof(sa.sun_path)) {
        logf_("%s: the socket path must be absolute and shorter than %zu bytes", path, sizeof(sa.sun_path));
        return -1;
    }
    char dir[sizeof(sa.sun_path)];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
        logf_("%s: the socket's directory must exist, be owned by root and be writable by root only", dir);
        return -1;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            logf_("%s exists and is not a socket", path);
            return -1;
        }
        /* Another helper answering there? Then it is not ours to take. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            close(probe);
            logf_("%s: another process is listening there", path);
            return -1;
        }
        if (probe >= 0)
            close(probe);
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    /* 0666: who may ask is the allowlist's (SO_PEERCRED) to say, and a
     * refused uid gets a typed reply rather than EACCES. */
    mode_t old = umask(0111);
    int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0 || listen(fd, 128) < 0) {
        logf_("%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void usage(FILE *f) {
    fputs("usage: forgeyard-sandbox-helper (--socket PATH | --listen-fd N) (--allow UID:CGROUPS:MEMORY:PIDS |\n"
          "                                --allow-file FILE)... [--subtree NAME] [--max-connections N]\n"
          "                                [--timeout-ms N] [--net-uplink NETNS-FILE|host] [--verbose]\n"
          "       forgeyard-sandbox-helper --connection-fd N ...  (spawned by a root host over a socketpair)\n"
          "Runs as root, started by the operator (never setuid); see forgeyard-sandbox-helper(8).\n",
          f);
}

int main(int argc, char **argv) {
    const char *socket_path = NULL, *net_uplink = NULL;
    int listen_fd = -1, control_fd = -1;
    snprintf(H.subtree_name, sizeof(H.subtree_name), "forgeyard-helper");
    H.max_conns = MAX_CONNS_DEFAULT;
    H.timeout_ms = 2000;
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        H.entries[i].creator = -1;

    /* Never setuid or setgid, never for anyone but root. */
    struct stat self;
    if (getuid() != geteuid() || getgid() != getegid() ||
        (stat("/proc/self/exe", &self) == 0 && (self.st_mode & (S_ISUID | S_ISGID)))) {
        fputs("forgeyard-sandbox-helper: refusing to run setuid or setgid: the operator starts it as root\n", stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("forgeyard-sandbox-helper protocol %u\n", FYH_VERSION);
            return 0;
        } else if (strcmp(a, "--verbose") == 0) {
            H.verbose = true;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        char *end;
        if (strcmp(a, "--socket") == 0) {
            socket_path = v;
        } else if (strcmp(a, "--listen-fd") == 0 || strcmp(a, "--connection-fd") == 0) {
            int *which = a[2] == 'l' ? &listen_fd : &control_fd;
            *which = (int)strtol(v, &end, 10);
            if (*end || *which < 3) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(a, "--allow") == 0) {
            char spec[128];
            snprintf(spec, sizeof(spec), "%s", v);
            if (!parse_allow(spec)) {
                logf_("--allow %s: expected UID:CGROUPS:MEMORY:PIDS (uid > 0, not repeated)", v);
                return 2;
            }
        } else if (strcmp(a, "--allow-file") == 0) {
            if (!load_allow_file(v))
                return 2;
        } else if (strcmp(a, "--net-uplink") == 0) {
            net_uplink = v;
        } else if (strcmp(a, "--subtree") == 0) {
            bool ok = v[0] && v[0] != '.' && strlen(v) < sizeof(H.subtree_name);
            for (const char *p = v; ok && *p; p++)
                ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                     *p == '-' || *p == '_' || *p == '.';
            if (!ok) {
                logf_("--subtree %s: letters, digits, - _ . only", v);
                return 2;
            }
            snprintf(H.subtree_name, sizeof(H.subtree_name), "%s", v);
        } else if (strcmp(a, "--max-connections") == 0) {
            H.max_conns = strtoul(v, &end, 10);
            if (*end || H.max_conns < 1 || H.max_conns > 1024) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(a, "--timeout-ms") == 0) {
            H.timeout_ms = strtoull(v, &end, 10);
            if (*end || H.timeout_ms < 10 || H.timeout_ms > 60000) {
                usage(stderr);
                return 2;
            }
        } else {
            usage(stderr);
            return 2;
        }
    }
    if ((socket_path != NULL) + (listen_fd >= 0) + (control_fd >= 0) != 1 || H.nallow == 0) {
        usage(stderr);
        return 2;
    }
    if (geteuid() != 0) {
        logf_("must be started as root by the operator");
        return 2;
    }
    /* Nothing of whoever started us: no environment, no stray fds. */
    clearenv();
    umask(022);
    if (control_fd >= 0) {
        /* The control socket must be a unix socket, and ours alone: its
         * other end is the host's (the operator's root parent made the pair). */
        int type = 0;
        socklen_t tl = sizeof(type);
        struct sockaddr_un sa;
        socklen_t al = sizeof(sa);
        if (getsockopt(control_fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
            (type != SOCK_SEQPACKET && type != SOCK_STREAM && type != SOCK_DGRAM) ||
            getsockname(control_fd, (struct sockaddr *)&sa, &al) < 0 || sa.sun_family != AF_UNIX) {
            logf_("--connection-fd %d: not a unix socket", control_fd);
            return 2;
        }
        listen_fd = control_fd;
    }
    syscall(SYS_close_range, 3, listen_fd > 3 ? listen_fd - 1 : 2, 0);
    if (listen_fd >= 0)
        syscall(SYS_close_range, listen_fd + 1, ~0u, 0);
    else
        syscall(SYS_close_range, 3, ~0u, 0);
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);

    if (net_uplink) {
        char why[256];
        if (fyh_net_init(net_uplink, why, sizeof(why)) < 0) {
            logf_("--net-uplink %s: %s", net_uplink, why);
            return 1;
        }
        H.net = true;
        caps_permitted |= fyh_net_caps();
        fyh_net_raise = raise_net;
    }
    discover();
    if (H.base[3][0])
        caps_permitted |= CAP_DEVICES;
    /* No v1 memory, pids or cpu hierarchy of ours: cgroup v2, if ours has
     * controllers (setup_cg2), with device programs (their capabilities). */
    char cg2[PATH_MAX] = "";
    if (!H.base[0][0] && !H.base[1][0] && !H.base[2][0]) {
        discover_cg2(cg2, sizeof(cg2));
        if (cg2[0])
            caps_permitted |= CAP_DEVPROG;
    }
    int pe = drop_privileges();
    if (pe < 0) {
        logf_("dropping capabilities: %s", strerror(-pe));
        return 1;
    }
    if ((cg2[0] ? setup_cg2(cg2) : setup_subtree()) < 0 && !H.net) {
        logf_("no cgroup v1 memory, pids or cpu hierarchy nor a cgroup v2 with controllers to create a subtree in "
              "(and no --net-uplink)");
        teardown_subtree();
        teardown_cg2();
        return 1;
    }
    /* (With --net-uplink and no cgroups: networking only.) */
    gc(true);
    int lfd = listen_fd >= 0 ? listen_fd : socket_path ? make_socket(socket_path) : -1;
    if (lfd < 0 || sfd < 0) {
        teardown_subtree();
        teardown_cg2();
        return 1;
    }
    if (listen_fd >= 0)
        fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
    logf_("serving %s for %zu uid(s); network: %s; cgroup %s controllers:%s%s%s%s; subtree %s",
          socket_path ? socket_path : control_fd >= 0 ? "--connection-fd" : "--listen-fd", H.nallow, H.net ? fyh_net_uplink() : "not offered",
          H.cg2 ? "v2" : "v1", (H.controllers & 1) ? " memory" : "", (H.controllers & 2) ? " pids" : "",
          (H.controllers & 4) ? " cpu" : "", (H.controllers & 8) ? " devices" : "", H.subtree[0][0] ? H.subtree[0] : H.subtree[1]);

    /* Room for what a message can carry (253) and more: a descriptor the
     * kernel cannot give us is released here, which can wait (above). */
    struct rlimit nf;
    if (getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < nf.rlim_max) {
        nf.rlim_cur = nf.rlim_max > 65536 ? 65536 : nf.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &nf);
    }
    if (disposer_start() < 0)
        logf_("the disposer: %s (made when first needed)", strerror(errno));
    struct conn *conns = calloc(H.max_conns, sizeof(*conns));
    struct pollfd *pfd = calloc(H.max_conns + 2, sizeof(*pfd));
    if (!conns || !pfd)
        return 1;
    for (size_t i = 0; i < H.max_conns; i++)
        conns[i].fd = conns[i].passed = conns[i].pidfd = -1;
    bool stop = false;
    uint64_t last_gc = now_ms();
    while (!stop) {
        size_t n = 0;
        pfd[n++] = (struct pollfd){lfd, POLLIN, 0};
        pfd[n++] = (struct pollfd){sfd, POLLIN, 0};
        uint64_t now = now_ms(), next = now + 1000;
        for (size_t i = 0; i < H.max_conns; i++)
            if (conns[i].fd >= 0) {
                pfd[n++] = (struct pollfd){conns[i].fd, POLLIN, 0};
                if (conns[i].deadline < next)
                    next = conns[i].deadline;
            }
        int r = poll(pfd, n, (int)(next > now ? next - now : 0));
        if (r < 0 && errno != EINTR)
            break;
        if (pfd[1].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) > 0)
                stop = true;
        }
        /* connections first, then new ones (so a flood cannot starve them) */
        for (size_t k = 2; k < n; k++) {
            if (!pfd[k].revents)
                continue;
            for (size_t i = 0; i < H.max_conns; i++)
                if (conns[i].fd == pfd[k].fd) {
                    if (conn_read(&conns[i]))
                        conn_close(&conns[i]);
                    break;
                }
        }
        if (control_fd >= 0 && pfd[0].revents) {
            if (!control_read(lfd, conns) || (pfd[0].revents & (POLLHUP | POLLERR) && !(pfd[0].revents & POLLIN)))
                stop = true; /* the host closed its end: it is gone, and so are we */
            pfd[0].revents = 0;
        }
        for (int burst = 0; burst < 64 && (pfd[0].revents & POLLIN); burst++) {
            struct pollfd one = {lfd, POLLIN, 0};
            if (burst && poll(&one, 1, 0) != 1)
                break;
            accept_one(lfd, conns);
        }
        now = now_ms();
        for (size_t i = 0; i < H.max_conns; i++)
            if (conns[i].fd >= 0 && conns[i].deadline <= now) {
                refuse_fd(conns[i].fd, FYH_E_TIMEOUT, ETIMEDOUT, "no whole request in time");
                conn_close(&conns[i]);
            }
        if (now - last_gc >= 1000) {
            gc(false);
            disposer_reap();
            last_gc = now;
        }
    }
    for (size_t i = 0; i < H.max_conns; i++)
        if (conns[i].fd >= 0)
            conn_close(&conns[i]);
    free(conns);
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        if (H.nets[i].used) {
            uint32_t left = fyh_net_remove(&H.nets[i].net);
            if (left)
                logf_("uid %u %s: %u network object(s) could not be removed", (unsigned)H.nets[i].uid,
                      H.nets[i].name, left);
            if (H.nets[i].creator >= 0)
                close(H.nets[i].creator);
            H.nets[i].used = false;
        }
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        if (H.jobs[i].used) {
            uint32_t left = fyh_job_destroy(&H.jobs[i].job);
            if (left)
                logf_("uid %u %s: %u job network object(s) could not be removed", (unsigned)H.jobs[i].uid,
                      H.jobs[i].name, left);
            if (H.jobs[i].creator >= 0)
                close(H.jobs[i].creator);
            H.jobs[i].used = false;
        }
    free(pfd);
    /* The disposer ends at the end of its socket, once what it holds is
     * closed (before the teardown: it is in our cgroup); one stuck is
     * killed (a kill it may not heed: its cgroup then stays). */
    if (D.fd >= 0)
        close(D.fd);
    D.fd = -1;
    for (int i = 0; i < 200 && D.pid > 0 && waitpid(D.pid, NULL, WNOHANG) == 0; i++) {
        if (i == 100)
            kill(D.pid, SIGKILL);
        usleep(10000);
    }
    for (size_t i = 0; i < D.nleft; i++)
        for (int k = 0; k < 100 && waitpid(D.left[i], NULL, WNOHANG) == 0; k++)
            usleep(10000);
    D.nleft = 0;
    gc(false);
    if (H.cg2)
        teardown_cg2();
    else
        teardown_subtree();
    logf_("stopped: %lu request(s) served, %lu refused; %lu connection(s) closed by the disposer, replaced %lu time(s)",
          H.served, H.refused, D.disposed, D.replaced);
    if (socket_path)
        unlink(socket_path);
    close(lfd);
    close(sfd);
    return 0;
}
