/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The functional capability probe for Linux.
 *
 * Nothing here is a version check: every capability is tried for real, in a
 * forked child where it changes process state (namespaces, seccomp, Landlock)
 * and in a child cgroup of our own cgroup where it needs one. A missing
 * capability gets the failing operation and errno as its reason and a hint
 * for the doctor.
 *
 * Rules this file keeps:
 * - The host may be multi-threaded: children are made with a raw
 *   clone(CLONE_PIDFD) (no atfork handlers) and, until _exit, use plain system
 *   calls only (no malloc, stdio, locks); they report a fixed-size record over
 *   a CLOEXEC pipe. Signals are blocked around the clone and stay blocked in
 *   the child. The parent waits with a deadline on the pidfd, SIGKILLs through
 *   it and reaps only its own pid (never waitpid(-1)).
 * - cgroups: we only ever mkdir, write into and rmdir CHILDREN of the cgroup
 *   we are in ("fy-probe-<pid>-<random>"). Our own cgroup and its ancestors
 *   are only read.
 * - No global state, no output, no signal handlers; every fd is O_CLOEXEC. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-probe-init.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

/* The unprivileged host range a root caller maps workloads to in the probe. */
#define PROBE_RANGE_START 100000u
#define PROBE_RANGE_COUNT 65536u

#define NS_DEADLINE_MS 2000
#define CHILD_DEADLINE_MS 1000
#define REPORT_MAGIC 0x66797062u /* "fypb" */

#define REASON_MAX 1024

/* ------------------------------------------------------------------ */
/* small helpers (parent side)                                        */
/* ------------------------------------------------------------------ */

/* Appends to a fixed buffer; silently truncates. */
FY_PRINTF(2, 3)
static void bappend(char buf[REASON_MAX], const char *fmt, ...) {
    size_t len = strnlen(buf, REASON_MAX);
    if (len + 1 >= REASON_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, REASON_MAX - len, fmt, ap);
    va_end(ap);
}

/* Reads a whole (small, pseudo) file. Returns 0 or -errno; *ret is
 * NUL-terminated and owned by the caller. */
static int read_file(const char *path, char **ret, size_t max) {
    *ret = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= max) {
                free(buf);
                close(fd);
                return -EFBIG;
            }
            char *n = realloc(buf, cap * 2);
            if (!n) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = n;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    *ret = buf;
    return 0;
}

/* Reads a small file into buf (trailing newlines stripped). 0 or -errno. */
static int read_small(const char *path, char *buf, size_t size) {
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len + 1 < size) {
        ssize_t r = read(fd, buf + len, size - len - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    return 0;
}

/* Writes a string to an existing file (never creates). 0 or -errno. */
static int write_existing(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = strlen(s);
    ssize_t w;
    do
        w = write(fd, s, len);
    while (w < 0 && errno == EINTR);
    int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
    if (close(fd) < 0 && e == 0 && errno != EINTR)
        e = errno;
    return -e;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads one "Key:\tvalue" line of /proc/self/status. */
static bool status_field(const char *status, const char *key, char *out, size_t size) {
    size_t klen = strlen(key);
    for (const char *l = status; l && *l;) {
        const char *nl = strchr(l, '\n');
        if (strncmp(l, key, klen) == 0 && l[klen] == ':') {
            const char *v = l + klen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t n = nl ? (size_t)(nl - v) : strlen(v);
            if (n >= size)
                n = size - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return true;
        }
        l = nl ? nl + 1 : NULL;
    }
    return false;
}

struct self_status {
    bool have;
    uint64_t cap_eff;
    int seccomp_mode;    /* 0 none, 1 strict, 2 filter */
    int seccomp_filters; /* -1 unknown */
    int no_new_privs;
};

static void read_self_status(struct self_status *st) {
    memset(st, 0, sizeof *st);
    st->seccomp_filters = -1;
    char *s = NULL;
    if (read_file("/proc/self/status", &s, 1u << 20) < 0)
        return;
    char v[64];
    st->have = true;
    if (status_field(s, "CapEff", v, sizeof v))
        st->cap_eff = strtoull(v, NULL, 16);
    if (status_field(s, "Seccomp", v, sizeof v))
        st->seccomp_mode = atoi(v);
    if (status_field(s, "Seccomp_filters", v, sizeof v))
        st->seccomp_filters = atoi(v);
    if (status_field(s, "NoNewPrivs", v, sizeof v))
        st->no_new_privs = atoi(v);
    free(s);
}

static void outer_seccomp_note(const struct self_status *st, char buf[REASON_MAX]) {
    if (st->seccomp_mode == 2) {
        if (st->seccomp_filters > 0)
            bappend(buf, "; this process already runs under %d seccomp filter(s) (outer seccomp)",
                    st->seccomp_filters);
        else
            bappend(buf, "; this process already runs under a seccomp filter (outer seccomp)");
    }
}

/* ------------------------------------------------------------------ */
/* child processes                                                    */
/* ------------------------------------------------------------------ */

struct child {
    struct pu_proc p;
    int rfd; /* report pipe, read end */
};

typedef void (*child_fn)(void *arg, int wfd);

/* Forks a child that runs fn(arg, wfd) and _exits. Signals are blocked
 * around the fork and stay blocked in the child. 0 or -errno. */
static int child_start(struct child *c, child_fn fn, void *arg, int extra_close_in_child) {
    memset(c, 0, sizeof *c);
    c->p.pid = -1;
    c->p.pidfd = -1;
    c->rfd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = fy_sys_fork_pidfd(&pidfd);
    if (pid < 0 && errno == EINVAL) { /* kernel < 5.2 */
        pidfd = -1;
        pid = fy_sys_fork_quiet();
    }
    if (pid == 0) {
        close(p[0]);
        if (extra_close_in_child >= 0)
            close(extra_close_in_child);
        fn(arg, p[1]);
        _exit(0);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -e;
    }
    c->p.pid = pid;
    c->rfd = p[0];
    c->p.pidfd = pidfd;
    return 0;
}

/* Reads exactly len bytes before the deadline. Returns len, the number of
 * bytes read when EOF came first, -ETIMEDOUT or -errno. */
static ssize_t read_deadline(int fd, void *buf, size_t len, uint64_t deadline) {
    size_t got = 0;
    while (got < len) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int r = poll(&pfd, 1, pu_ms_left(deadline));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -ETIMEDOUT;
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Reaps the child (pu_finish: SIGKILL after the deadline, then a bounded
 * grace) and closes its fds, the report pipe last. Returns true when the
 * child was reaped. */
static bool child_finish(struct child *c, uint64_t deadline, bool *ret_killed) {
    bool reaped = pu_finish(&c->p, deadline, ret_killed);
    if (c->rfd >= 0)
        close(c->rfd);
    c->rfd = -1;
    return reaped;
}

/* Async-signal-safe helpers for children. */
static int cw_file(const char *path, const char *s, size_t len) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, s, len);
    int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
    close(fd);
    return -e;
}

static void cw_report(int wfd, const void *rep, size_t len) {
    ssize_t w;
    do
        w = write(wfd, rep, len);
    while (w < 0 && errno == EINTR);
}

/* ------------------------------------------------------------------ */
/* namespaces                                                         */
/* ------------------------------------------------------------------ */

enum ns_test { NT_USERNS, NT_MAP, NT_MOUNTNS, NT_MOUNTAPI, NT_UTS, NT_IPC, NT_NET, NT_CGROUP,
               NT_PID, NT__N };

enum ns_op {
    OP_NONE, OP_UNSHARE_USER, OP_SETGROUPS_FILE, OP_UID_MAP, OP_GID_MAP, OP_SETRESGID,
    OP_SETGROUPS, OP_SETRESUID, OP_GETUID, OP_UNSHARE_NS, OP_MAKE_PRIVATE, OP_STAT, OP_MOUNT_TMPFS,
    OP_SAME_DEV, OP_FSOPEN, OP_FSCONFIG_SET, OP_FSCONFIG_CREATE, OP_FSMOUNT, OP_MOVE_MOUNT,
    OP_OPEN_TREE, OP_MOUNT_SETATTR, OP_UNSHARE_UTS, OP_SETHOSTNAME, OP_UNAME, OP_UNSHARE_IPC,
    OP_UNSHARE_NET, OP_SOCKET, OP_GIFFLAGS, OP_SIFFLAGS, OP_LO_DOWN, OP_UNSHARE_CGROUP,
    OP_READ_CGROUP, OP_CGROUP_NOT_ROOT, OP_UNSHARE_PID, OP_FORK, OP_WAIT, OP_NOT_PID1, OP__N
};

static const char *const ns_op_name[OP__N] = {
    [OP_NONE] = "nothing",
    [OP_UNSHARE_USER] = "unshare(CLONE_NEWUSER)",
    [OP_SETGROUPS_FILE] = "writing \"deny\" to /proc/self/setgroups",
    [OP_UID_MAP] = "writing /proc/self/uid_map",
    [OP_GID_MAP] = "writing /proc/self/gid_map",
    [OP_SETRESGID] = "setresgid(0) inside the user namespace",
    [OP_SETGROUPS] = "setgroups(0) inside the user namespace",
    [OP_SETRESUID] = "setresuid(0) inside the user namespace",
    [OP_GETUID] = "getuid() != 0 after writing the map",
    [OP_UNSHARE_NS] = "unshare(CLONE_NEWNS)",
    [OP_MAKE_PRIVATE] = "mount(\"/\", MS_REC|MS_PRIVATE)",
    [OP_STAT] = "stat of the mount point",
    [OP_MOUNT_TMPFS] = "mount(tmpfs)",
    [OP_SAME_DEV] = "the tmpfs did not show up on the mount point",
    [OP_FSOPEN] = "fsopen(\"tmpfs\")",
    [OP_FSCONFIG_SET] = "fsconfig(FSCONFIG_SET_STRING size)",
    [OP_FSCONFIG_CREATE] = "fsconfig(FSCONFIG_CMD_CREATE)",
    [OP_FSMOUNT] = "fsmount",
    [OP_MOVE_MOUNT] = "move_mount",
    [OP_OPEN_TREE] = "open_tree(OPEN_TREE_CLONE)",
    [OP_MOUNT_SETATTR] = "mount_setattr(MOUNT_ATTR_RDONLY)",
    [OP_UNSHARE_UTS] = "unshare(CLONE_NEWUTS)",
    [OP_SETHOSTNAME] = "sethostname",
    [OP_UNAME] = "uname() did not show the new hostname",
    [OP_UNSHARE_IPC] = "unshare(CLONE_NEWIPC)",
    [OP_UNSHARE_NET] = "unshare(CLONE_NEWNET)",
    [OP_SOCKET] = "socket(AF_INET/AF_UNIX)",
    [OP_GIFFLAGS] = "ioctl(SIOCGIFFLAGS, \"lo\")",
    [OP_SIFFLAGS] = "ioctl(SIOCSIFFLAGS, \"lo\" IFF_UP)",
    [OP_LO_DOWN] = "\"lo\" is not IFF_UP|IFF_RUNNING after bringing it up",
    [OP_UNSHARE_CGROUP] = "unshare(CLONE_NEWCGROUP)",
    [OP_READ_CGROUP] = "reading /proc/self/cgroup",
    [OP_CGROUP_NOT_ROOT] = "/proc/self/cgroup is not rooted at / in the new cgroup namespace",
    [OP_UNSHARE_PID] = "unshare(CLONE_NEWPID)",
    [OP_FORK] = "fork in the new pid namespace",
    [OP_WAIT] = "wait4 for the pid namespace's first process",
    [OP_NOT_PID1] = "the first process of the new pid namespace is not pid 1",
};

struct ns_result {
    int32_t state; /* 0 not run, 1 ok, 2 failed */
    int32_t op;
    int32_t err;
};

struct ns_report {
    uint32_t magic;
    uint32_t in_userns;      /* the tests ran inside a new user namespace */
    uint32_t map_by_parent;  /* the root parent wrote the range map */
    struct ns_result r[NT__N];
};

struct ns_args {
    int sync_w;              /* child -> parent: 'U' unshared, 'F' failed */
    int sync_r;              /* parent -> child: 'M' mapped by parent, else self-map */
    bool parent_maps;
    bool may_skip_userns;    /* root with CAP_SYS_ADMIN: go on without a userns */
    char uid_map[64], gid_map[64];
    size_t uid_map_len, gid_map_len;
    char mnt_target[16];
};

#define NS_OK(rep, t) ((rep)->r[t].state = 1)
#define NS_FAIL(rep, t, o, e) \
    ((rep)->r[t].state = 2, (rep)->r[t].op = (o), (rep)->r[t].err = (e))

static bool ns_mount_api(struct ns_report *rep, const char *target) {
    int fs = fy_sys_fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return NS_FAIL(rep, NT_MOUNTAPI, OP_FSOPEN, errno), false;
    if (fy_sys_fsconfig(fs, FSCONFIG_SET_STRING, "size", "64k", 0) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_FSCONFIG_SET, errno);
        close(fs);
        return false;
    }
    if (fy_sys_fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_FSCONFIG_CREATE, errno);
        close(fs);
        return false;
    }
    int mfd = fy_sys_fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    int e = errno;
    close(fs);
    if (mfd < 0)
        return NS_FAIL(rep, NT_MOUNTAPI, OP_FSMOUNT, e), false;
    if (fy_sys_move_mount(mfd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_MOVE_MOUNT, errno);
        close(mfd);
        return false;
    }
    close(mfd);
    int tfd = fy_sys_open_tree(AT_FDCWD, target, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tfd < 0)
        return NS_FAIL(rep, NT_MOUNTAPI, OP_OPEN_TREE, errno), false;
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (fy_sys_mount_setattr(tfd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_MOUNT_SETATTR, errno);
        close(tfd);
        return false;
    }
    close(tfd);
    NS_OK(rep, NT_MOUNTAPI);
    return true;
}

static void ns_net(struct ns_report *rep) {
    if (unshare(CLONE_NEWNET) < 0) {
        NS_FAIL(rep, NT_NET, OP_UNSHARE_NET, errno);
        return;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        NS_FAIL(rep, NT_NET, OP_SOCKET, errno);
        return;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, "lo", 3);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        NS_FAIL(rep, NT_NET, OP_GIFFLAGS, errno);
    } else {
        ifr.ifr_flags = (short)(ifr.ifr_flags | IFF_UP);
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
            NS_FAIL(rep, NT_NET, OP_SIFFLAGS, errno);
        } else if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
            NS_FAIL(rep, NT_NET, OP_GIFFLAGS, errno);
        } else if ((ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) != (IFF_UP | IFF_RUNNING)) {
            NS_FAIL(rep, NT_NET, OP_LO_DOWN, 0);
        } else {
            NS_OK(rep, NT_NET);
        }
    }
    close(s);
}

static void ns_cgroup(struct ns_report *rep) {
    if (unshare(CLONE_NEWCGROUP) < 0) {
        NS_FAIL(rep, NT_CGROUP, OP_UNSHARE_CGROUP, errno);
        return;
    }
    char buf[2048];
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        NS_FAIL(rep, NT_CGROUP, OP_READ_CGROUP, errno);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n <= 0) {
        NS_FAIL(rep, NT_CGROUP, OP_READ_CGROUP, n < 0 ? e : ENODATA);
        return;
    }
    buf[n] = '\0';
    /* Every line must now end in ":/". */
    for (char *l = buf; *l;) {
        char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (len > 0 && (len < 2 || l[len - 1] != '/' || l[len - 2] != ':')) {
            NS_FAIL(rep, NT_CGROUP, OP_CGROUP_NOT_ROOT, 0);
            return;
        }
        if (!nl)
            break;
        l = nl + 1;
    }
    NS_OK(rep, NT_CGROUP);
}

static void ns_pid(struct ns_report *rep) {
    if (unshare(CLONE_NEWPID) < 0) {
        NS_FAIL(rep, NT_PID, OP_UNSHARE_PID, errno);
        return;
    }
    pid_t g = fy_sys_fork_quiet();
    if (g < 0) {
        NS_FAIL(rep, NT_PID, OP_FORK, errno);
        return;
    }
    if (g == 0)
        _exit(syscall(SYS_getpid) == 1 ? 0 : 1);
    int st = 0;
    pid_t r;
    do
        r = wait4(g, &st, __WALL, NULL);
    while (r < 0 && errno == EINTR);
    if (r != g)
        NS_FAIL(rep, NT_PID, OP_WAIT, errno);
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        NS_FAIL(rep, NT_PID, OP_NOT_PID1, 0);
    else
        NS_OK(rep, NT_PID);
}

/* Runs in the forked child: raw system calls only. */
static void ns_child(void *arg, int wfd) {
    const struct ns_args *a = arg;
    struct ns_report rep;
    memset(&rep, 0, sizeof rep);
    rep.magic = REPORT_MAGIC;

    if (unshare(CLONE_NEWUSER) < 0) {
        NS_FAIL(&rep, NT_USERNS, OP_UNSHARE_USER, errno);
        if (a->parent_maps)
            cw_report(a->sync_w, "F", 1);
        if (!a->may_skip_userns) {
            cw_report(wfd, &rep, sizeof rep);
            return;
        }
    } else {
        NS_OK(&rep, NT_USERNS);
        rep.in_userns = 1;
        char answer = 'S';
        if (a->parent_maps) {
            cw_report(a->sync_w, "U", 1);
            ssize_t r;
            do
                r = read(a->sync_r, &answer, 1);
            while (r < 0 && errno == EINTR);
            if (r != 1)
                answer = 'S';
        }
        if (answer == 'M') {
            rep.map_by_parent = 1;
            if (syscall(SYS_setresgid, 0, 0, 0) < 0)
                NS_FAIL(&rep, NT_MAP, OP_SETRESGID, errno);
            else if (syscall(SYS_setgroups, 0, NULL) < 0)
                NS_FAIL(&rep, NT_MAP, OP_SETGROUPS, errno);
            else if (syscall(SYS_setresuid, 0, 0, 0) < 0)
                NS_FAIL(&rep, NT_MAP, OP_SETRESUID, errno);
            else if (syscall(SYS_getuid) != 0)
                NS_FAIL(&rep, NT_MAP, OP_GETUID, 0);
            else
                NS_OK(&rep, NT_MAP);
        } else {
            int r = cw_file("/proc/self/setgroups", "deny", 4);
            if (r < 0 && r != -ENOENT)
                NS_FAIL(&rep, NT_MAP, OP_SETGROUPS_FILE, -r);
            else if ((r = cw_file("/proc/self/uid_map", a->uid_map, a->uid_map_len)) < 0)
                NS_FAIL(&rep, NT_MAP, OP_UID_MAP, -r);
            else if ((r = cw_file("/proc/self/gid_map", a->gid_map, a->gid_map_len)) < 0)
                NS_FAIL(&rep, NT_MAP, OP_GID_MAP, -r);
            else if (syscall(SYS_getuid) != 0)
                NS_FAIL(&rep, NT_MAP, OP_GETUID, 0);
            else
                NS_OK(&rep, NT_MAP);
        }
    }

    /* mount namespace + tmpfs, then the new mount API */
    if (unshare(CLONE_NEWNS) < 0) {
        NS_FAIL(&rep, NT_MOUNTNS, OP_UNSHARE_NS, errno);
    } else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        NS_FAIL(&rep, NT_MOUNTNS, OP_MAKE_PRIVATE, errno);
    } else {
        struct stat before, after;
        if (stat(a->mnt_target, &before) < 0) {
            NS_FAIL(&rep, NT_MOUNTNS, OP_STAT, errno);
        } else if (mount("fy-probe", a->mnt_target, "tmpfs", MS_NOSUID | MS_NODEV,
                         "size=64k,mode=0700") < 0) {
            NS_FAIL(&rep, NT_MOUNTNS, OP_MOUNT_TMPFS, errno);
        } else if (stat(a->mnt_target, &after) < 0) {
            NS_FAIL(&rep, NT_MOUNTNS, OP_STAT, errno);
        } else if (after.st_dev == before.st_dev) {
            NS_FAIL(&rep, NT_MOUNTNS, OP_SAME_DEV, 0);
        } else {
            NS_OK(&rep, NT_MOUNTNS);
        }
        (void)ns_mount_api(&rep, a->mnt_target);
    }

    if (unshare(CLONE_NEWUTS) < 0) {
        NS_FAIL(&rep, NT_UTS, OP_UNSHARE_UTS, errno);
    } else if (sethostname("fy-probe", 8) < 0) {
        NS_FAIL(&rep, NT_UTS, OP_SETHOSTNAME, errno);
    } else {
        struct utsname u;
        if (uname(&u) < 0 || strcmp(u.nodename, "fy-probe") != 0)
            NS_FAIL(&rep, NT_UTS, OP_UNAME, 0);
        else
            NS_OK(&rep, NT_UTS);
    }

    if (unshare(CLONE_NEWIPC) < 0)
        NS_FAIL(&rep, NT_IPC, OP_UNSHARE_IPC, errno);
    else
        NS_OK(&rep, NT_IPC);

    ns_net(&rep);
    ns_cgroup(&rep);
    ns_pid(&rep);
    cw_report(wfd, &rep, sizeof rep);
}

struct userns_diag {
    char text[REASON_MAX]; /* "; user.max_user_namespaces = 0 ..." */
    char hint[REASON_MAX];
};

static void userns_denied_diag(int err, bool is_root, const struct self_status *st,
                               struct userns_diag *d) {
    char v[64];
    d->text[0] = d->hint[0] = '\0';
    long max_ns = -1;
    if (read_small("/proc/sys/user/max_user_namespaces", v, sizeof v) == 0) {
        max_ns = strtol(v, NULL, 10);
        bappend(d->text, "; user.max_user_namespaces = %ld", max_ns);
    }
    long clone_ok = -1;
    if (read_small("/proc/sys/kernel/unprivileged_userns_clone", v, sizeof v) == 0) {
        clone_ok = strtol(v, NULL, 10);
        bappend(d->text, "; kernel.unprivileged_userns_clone = %ld", clone_ok);
    }
    long aa = -1;
    if (read_small("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v, sizeof v) == 0) {
        aa = strtol(v, NULL, 10);
        bappend(d->text, "; kernel.apparmor_restrict_unprivileged_userns = %ld", aa);
    }
    outer_seccomp_note(st, d->text);

    if (max_ns == 0)
        bappend(d->hint, "sysctl user.max_user_namespaces=15000");
    else if (err == ENOSPC)
        bappend(d->hint, "the user.max_user_namespaces limit (%ld) is used up: raise it "
                "(sysctl user.max_user_namespaces=N) or find who holds them", max_ns);
    else if (err == EUSERS)
        bappend(d->hint, "user namespaces are nested 32 deep already: run the host program "
                "less deeply nested");
    else if (!is_root && clone_ok == 0)
        bappend(d->hint, "sysctl kernel.unprivileged_userns_clone=1");
    else if (!is_root && aa == 1)
        bappend(d->hint, "allow user namespaces for this program with an AppArmor profile "
                "granting 'userns,', or sysctl kernel.apparmor_restrict_unprivileged_userns=0");
    else if (st->seccomp_mode == 2)
        bappend(d->hint, "the outer seccomp profile (container runtime) denies "
                "unshare/clone(CLONE_NEWUSER): allow it, or run the sandbox at the process level");
    else
        bappend(d->hint, "run where user namespaces are allowed (not in a chroot, not under a "
                "restricting LSM or seccomp profile)");
}

struct ns_outcome {
    bool ran;                /* a report arrived */
    char fail[REASON_MAX];   /* why no report */
    struct ns_report rep;
    bool parent_map_tried;
    int parent_map_err;      /* errno of writing the range map, 0 = ok */
    const char *parent_map_file;
};

static void ns_run(bool is_root, bool may_skip_userns, struct ns_outcome *o) {
    memset(o, 0, sizeof *o);
    struct ns_args a;
    memset(&a, 0, sizeof a);
    a.sync_w = a.sync_r = -1;
    a.parent_maps = is_root;
    a.may_skip_userns = may_skip_userns;
    a.uid_map_len = (size_t)snprintf(a.uid_map, sizeof a.uid_map, "0 %u 1\n", (unsigned)geteuid());
    a.gid_map_len = (size_t)snprintf(a.gid_map, sizeof a.gid_map, "0 %u 1\n", (unsigned)getegid());
    snprintf(a.mnt_target, sizeof a.mnt_target, "%s", is_dir("/tmp") ? "/tmp" : "/");

    int c2p[2] = { -1, -1 }, p2c[2] = { -1, -1 };
    if (a.parent_maps) {
        if (pipe2(c2p, O_CLOEXEC) < 0 || pipe2(p2c, O_CLOEXEC) < 0) {
            snprintf(o->fail, sizeof o->fail, "pipe2: " EFMT, EARG(errno));
            goto out;
        }
        a.sync_w = c2p[1];
        a.sync_r = p2c[0];
    }

    uint64_t deadline = pu_deadline_after_ms(NS_DEADLINE_MS);
    struct child c;
    /* The child must not keep the parent's ends: close them there. c2p[0]
     * and p2c[1] are CLOEXEC but fork keeps them, so the child closes
     * p2c[1] (so that a dead parent gives it EOF) via extra_close. */
    int r = child_start(&c, ns_child, &a, p2c[1]);
    if (r < 0) {
        snprintf(o->fail, sizeof o->fail, "fork: " EFMT, EARG(-r));
        goto out;
    }
    if (a.parent_maps) {
        close(c2p[1]);
        c2p[1] = -1;
        close(p2c[0]);
        p2c[0] = -1;
        char got = 0;
        ssize_t n = read_deadline(c2p[0], &got, 1, deadline);
        if (n == 1 && got == 'U') {
            char path[64], map[64];
            snprintf(map, sizeof map, "0 %u %u\n", PROBE_RANGE_START, PROBE_RANGE_COUNT);
            o->parent_map_tried = true;
            snprintf(path, sizeof path, "/proc/%d/gid_map", (int)c.p.pid);
            int e = write_existing(path, map);
            o->parent_map_file = "gid_map";
            if (e == 0) {
                snprintf(path, sizeof path, "/proc/%d/uid_map", (int)c.p.pid);
                e = write_existing(path, map);
                o->parent_map_file = "uid_map";
            }
            o->parent_map_err = -e;
            cw_report(p2c[1], e == 0 ? "M" : "S", 1);
        }
        close(p2c[1]);
        p2c[1] = -1;
    }
    ssize_t n = read_deadline(c.rfd, &o->rep, sizeof o->rep, deadline);
    bool killed = false;
    bool reaped = child_finish(&c, deadline, &killed);
    if (n == (ssize_t)sizeof o->rep && o->rep.magic == REPORT_MAGIC) {
        o->ran = true;
    } else if (n == -ETIMEDOUT || killed) {
        snprintf(o->fail, sizeof o->fail,
                 "the namespace probe child did not report within %d ms (killed%s)",
                 NS_DEADLINE_MS, reaped ? " and reaped" : "; it did not die within the grace");
    } else if (n < 0) {
        snprintf(o->fail, sizeof o->fail, "reading the namespace probe report: " EFMT,
                 EARG((int)-n));
    } else {
        snprintf(o->fail, sizeof o->fail,
                 "the namespace probe child exited without a report (wait status 0x%x)",
                 (unsigned)c.p.status);
    }
out:
    for (int i = 0; i < 2; i++) {
        if (c2p[i] >= 0)
            close(c2p[i]);
        if (p2c[i] >= 0)
            close(p2c[i]);
    }
}

static void ns_fmt_fail(const struct ns_result *r, char buf[REASON_MAX]) {
    const char *op = r->op >= 0 && r->op < OP__N && ns_op_name[r->op] ? ns_op_name[r->op] : "?";
    if (r->err)
        bappend(buf, "%s failed: " EFMT, op, EARG(r->err));
    else
        bappend(buf, "%s", op);
}

static void probe_namespaces(fy_caps *c, bool is_root, bool has_sys_admin,
                             const struct self_status *st) {
    struct ns_outcome o;
    ns_run(is_root, is_root && has_sys_admin, &o);
    const struct ns_report *rep = &o.rep;

    static const struct { uint32_t cap; enum ns_test t; const char *what; } ns_caps[] = {
        { FY_CAP_MOUNTNS, NT_MOUNTNS, "mount namespace" },
        { FY_CAP_MOUNT_API, NT_MOUNTAPI, "new mount API" },
        { FY_CAP_UTSNS, NT_UTS, "UTS namespace" },
        { FY_CAP_IPCNS, NT_IPC, "IPC namespace" },
        { FY_CAP_NETNS, NT_NET, "network namespace" },
        { FY_CAP_CGROUPNS, NT_CGROUP, "cgroup namespace" },
        { FY_CAP_PIDNS, NT_PID, "pid namespace" },
    };

    if (!o.ran) {
        caps_set(c, FY_CAP_USERNS, false, 0, "%s", o.fail);
        caps_set_hint(c, FY_CAP_USERNS, "find out why a forked child hangs or dies here "
                      "(outer seccomp killing unshare? a debugger?)");
        caps_set(c, FY_CAP_UID_RANGE, false, 0, "%s", o.fail);
        for (size_t i = 0; i < FY_ARRAY_SIZE(ns_caps); i++)
            caps_set(c, ns_caps[i].cap, false, 0, "%s", o.fail);
        return;
    }

    /* user namespace + id map */
    char reason[REASON_MAX] = "";
    struct userns_diag diag = { "", "" };
    bool userns_denied = rep->r[NT_USERNS].state != 1;
    if (userns_denied) {
        userns_denied_diag(rep->r[NT_USERNS].err, is_root, st, &diag);
        bappend(reason, "user namespaces denied: ");
        ns_fmt_fail(&rep->r[NT_USERNS], reason);
        bappend(reason, "%s", diag.text);
        caps_set(c, FY_CAP_USERNS, false, 0, "%s", reason);
        caps_set_hint(c, FY_CAP_USERNS, "%s", diag.hint);
    } else if (rep->r[NT_MAP].state != 1) {
        bappend(reason, "user namespace created, but mapping ids failed: ");
        ns_fmt_fail(&rep->r[NT_MAP], reason);
        int e = rep->r[NT_MAP].err;
        if ((e == EACCES || e == EPERM) && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
            bappend(reason, " (this process is not dumpable, so its /proc files belong to "
                    "root)");
        if (o.parent_map_tried && o.parent_map_err)
            bappend(reason, "; the root parent could not write %s either: " EFMT,
                    o.parent_map_file, EARG(o.parent_map_err));
        outer_seccomp_note(st, reason);
        caps_set(c, FY_CAP_USERNS, false, 0, "%s", reason);
        caps_set_hint(c, FY_CAP_USERNS, "%s",
                      (e == EACCES || e == EPERM) && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
                          ? "keep the host process dumpable (prctl PR_SET_DUMPABLE 1): setuid "
                            "transitions clear it"
                          : "check the LSM (AppArmor/SELinux) policy for writes to "
                            "/proc/<pid>/uid_map");
    } else if (rep->map_by_parent) {
        caps_set(c, FY_CAP_USERNS, true, 1,
                 "user namespace created; the root parent mapped ids 0-%u to host %u-%u",
                 PROBE_RANGE_COUNT - 1, PROBE_RANGE_START,
                 PROBE_RANGE_START + PROBE_RANGE_COUNT - 1);
    } else {
        caps_set(c, FY_CAP_USERNS, true, 1,
                 "user namespace created; the child mapped its own uid %u / gid %u to 0",
                 (unsigned)geteuid(), (unsigned)getegid());
    }

    /* uid range (root only) */
    if (!is_root) {
        caps_set(c, FY_CAP_UID_RANGE, false, 0,
                 "not root: only the caller's own uid can be mapped (newuidmap/subuid not used)");
        caps_set_hint(c, FY_CAP_UID_RANGE, "run the host as root (or through the privileged "
                      "helper) to map workloads to an unprivileged host id range");
    } else if (userns_denied) {
        caps_set(c, FY_CAP_UID_RANGE, false, 0, "needs a user namespace: %s", reason);
        caps_set_hint(c, FY_CAP_UID_RANGE, "%s", diag.hint);
    } else if (rep->map_by_parent && rep->r[NT_MAP].state == 1) {
        caps_set(c, FY_CAP_UID_RANGE, true, 1,
                 "root wrote uid_map/gid_map \"0 %u %u\" for a child user namespace; the child "
                 "became uid 0 there", PROBE_RANGE_START, PROBE_RANGE_COUNT);
    } else {
        char r2[REASON_MAX] = "";
        if (o.parent_map_tried && o.parent_map_err)
            bappend(r2, "root could not write %s \"0 %u %u\" for a child user namespace: " EFMT,
                    o.parent_map_file, PROBE_RANGE_START, PROBE_RANGE_COUNT,
                    EARG(o.parent_map_err));
        else if (rep->map_by_parent)
            ns_fmt_fail(&rep->r[NT_MAP], r2);
        else
            bappend(r2, "the child's user namespace was not mapped by the root parent");
        caps_set(c, FY_CAP_UID_RANGE, false, 0, "%s", r2);
        caps_set_hint(c, FY_CAP_UID_RANGE, "root needs CAP_SETUID/CAP_SETGID in the initial "
                      "user namespace (not in a container that drops them)");
    }

    /* the other namespaces */
    for (size_t i = 0; i < FY_ARRAY_SIZE(ns_caps); i++) {
        const struct ns_result *r = &rep->r[ns_caps[i].t];
        char why[REASON_MAX] = "";
        if (r->state == 1) {
            const char *how = rep->in_userns ? "inside a new user namespace"
                                             : "as root, without a user namespace";
            switch (ns_caps[i].t) {
            case NT_MOUNTNS:
                caps_set(c, ns_caps[i].cap, true, 1,
                         "unshare(CLONE_NEWNS), / made rprivate and a tmpfs mounted on %s, %s",
                         is_dir("/tmp") ? "/tmp" : "/", how);
                break;
            case NT_MOUNTAPI:
                caps_set(c, ns_caps[i].cap, true, 1,
                         "fsopen/fsconfig/fsmount/move_mount of a tmpfs, open_tree(CLONE) and "
                         "mount_setattr(RDONLY) worked, %s", how);
                break;
            case NT_NET:
                caps_set(c, ns_caps[i].cap, true, 1,
                         "unshare(CLONE_NEWNET) and \"lo\" brought up (IFF_UP|IFF_RUNNING), %s",
                         how);
                break;
            case NT_UTS:
                caps_set(c, ns_caps[i].cap, true, 1,
                         "unshare(CLONE_NEWUTS) and sethostname worked, %s", how);
                break;
            case NT_CGROUP:
                caps_set(c, ns_caps[i].cap, true, 1,
                         "unshare(CLONE_NEWCGROUP): /proc/self/cgroup rooted at /, %s", how);
                break;
            case NT_PID:
                caps_set(c, ns_caps[i].cap, true, 1,
                         "unshare(CLONE_NEWPID): the next child was pid 1, %s", how);
                break;
            default:
                caps_set(c, ns_caps[i].cap, true, 1, "unshare(CLONE_NEWIPC) worked, %s", how);
                break;
            }
            continue;
        }
        if (!rep->in_userns && userns_denied) {
            bappend(why, "needs a user namespace (not root): %s", reason);
            caps_set(c, ns_caps[i].cap, false, 0, "%s", why);
            caps_set_hint(c, ns_caps[i].cap, "%s", diag.hint);
            continue;
        }
        if (r->state == 0) {
            if (ns_caps[i].t == NT_MOUNTAPI)
                bappend(why, "not tried: the mount namespace failed: ");
            else
                bappend(why, "not tried");
            if (ns_caps[i].t == NT_MOUNTAPI)
                ns_fmt_fail(&rep->r[NT_MOUNTNS], why);
            caps_set(c, ns_caps[i].cap, false, 0, "%s", why);
            continue;
        }
        bappend(why, "%s: ", ns_caps[i].what);
        ns_fmt_fail(r, why);
        bool stripped = rep->in_userns && (r->err == EPERM || r->err == EACCES);
        if (stripped)
            bappend(why, " (the user namespace was created but its capabilities are restricted: "
                    "AppArmor userns restriction, an outer seccomp filter or locked mounts?)");
        else if (r->err == ENOSYS)
            bappend(why, " (the kernel lacks it)");
        else if (r->err == EINVAL && r->op >= OP_FSOPEN && r->op <= OP_MOUNT_SETATTR)
            bappend(why, " (kernel too old for this part of the mount API?)");
        outer_seccomp_note(st, why);
        caps_set(c, ns_caps[i].cap, false, 0, "%s", why);
        if (stripped)
            caps_set_hint(c, ns_caps[i].cap, "allow full user namespaces for this program "
                          "(AppArmor profile with 'userns,', outer seccomp/container profile)");
        else if (r->err == ENOSYS || r->err == EINVAL)
            caps_set_hint(c, ns_caps[i].cap, "a newer kernel (or one built with this namespace "
                          "type)");
    }
}

/* ------------------------------------------------------------------ */
/* seccomp, no_new_privs, Landlock                                    */
/* ------------------------------------------------------------------ */

enum sec_test { ST_NNP, ST_LANDLOCK, ST_SECCOMP, ST_NOTIF_AVAIL, ST_NOTIF_LISTENER, ST__N };
enum sec_op {
    SOP_NONE, SOP_SET_NNP, SOP_GET_NNP, SOP_LL_CREATE, SOP_LL_OPEN, SOP_LL_ADD, SOP_LL_RESTRICT,
    SOP_LL_INSIDE, SOP_LL_OUTSIDE_OPENED, SOP_LL_OUTSIDE_ERRNO, SOP_SECCOMP, SOP_PRCTL_SECCOMP,
    SOP_ACTION_AVAIL, SOP_LISTENER, SOP__N
};

static const char *const sec_op_name[SOP__N] = {
    [SOP_NONE] = "nothing",
    [SOP_SET_NNP] = "prctl(PR_SET_NO_NEW_PRIVS)",
    [SOP_GET_NNP] = "prctl(PR_GET_NO_NEW_PRIVS) did not read 1",
    [SOP_LL_CREATE] = "landlock_create_ruleset",
    [SOP_LL_OPEN] = "open(\"/dev\", O_PATH)",
    [SOP_LL_ADD] = "landlock_add_rule(/dev)",
    [SOP_LL_RESTRICT] = "landlock_restrict_self",
    [SOP_LL_INSIDE] = "open(\"/dev/null\") inside the ruleset",
    [SOP_LL_OUTSIDE_OPENED] = "open(\"/\") outside the ruleset was allowed",
    [SOP_LL_OUTSIDE_ERRNO] = "open(\"/\") outside the ruleset failed with an unexpected errno",
    [SOP_SECCOMP] = "seccomp(SECCOMP_SET_MODE_FILTER)",
    [SOP_PRCTL_SECCOMP] = "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)",
    [SOP_ACTION_AVAIL] = "seccomp(SECCOMP_GET_ACTION_AVAIL, SECCOMP_RET_USER_NOTIF)",
    [SOP_LISTENER] = "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)",
};

struct sec_report {
    uint32_t magic;
    struct ns_result r[ST__N];
};

struct sec_args {
    int landlock_abi;
};

#define SEC_OK(rep, t) ((rep)->r[t].state = 1)
#define SEC_FAIL(rep, t, o, e) \
    ((rep)->r[t].state = 2, (rep)->r[t].op = (o), (rep)->r[t].err = (e))

#ifndef SECCOMP_GET_ACTION_AVAIL
#  define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#  define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#  define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

static void sec_landlock(struct sec_report *rep) {
    struct landlock_ruleset_attr ra;
    memset(&ra, 0, sizeof ra);
    ra.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    int rs = fy_sys_landlock_create_ruleset(&ra, sizeof ra, 0);
    if (rs < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_CREATE, errno);
        return;
    }
    int dir = open("/dev", O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (dir < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_OPEN, errno);
        close(rs);
        return;
    }
    struct landlock_path_beneath_attr pb;
    memset(&pb, 0, sizeof pb);
    pb.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    pb.parent_fd = dir;
    if (fy_sys_landlock_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_ADD, errno);
        close(dir);
        close(rs);
        return;
    }
    close(dir);
    if (fy_sys_landlock_restrict_self(rs, 0) < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_RESTRICT, errno);
        close(rs);
        return;
    }
    close(rs);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_INSIDE, errno);
        return;
    }
    close(in);
    int out = open("/", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (out >= 0) {
        close(out);
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_OUTSIDE_OPENED, 0);
    } else if (errno != EACCES) {
        SEC_FAIL(rep, ST_LANDLOCK, SOP_LL_OUTSIDE_ERRNO, errno);
    } else {
        SEC_OK(rep, ST_LANDLOCK);
    }
}

static void sec_child(void *arg, int wfd) {
    const struct sec_args *a = arg;
    struct sec_report rep;
    memset(&rep, 0, sizeof rep);
    rep.magic = REPORT_MAGIC;

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        SEC_FAIL(&rep, ST_NNP, SOP_SET_NNP, errno);
    else if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        SEC_FAIL(&rep, ST_NNP, SOP_GET_NNP, 0);
    else
        SEC_OK(&rep, ST_NNP);

    if (a->landlock_abi > 0)
        sec_landlock(&rep);

    struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
    struct sock_fprog prog = { .len = 1, .filter = allow };
    if (fy_sys_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) {
        SEC_OK(&rep, ST_SECCOMP);
    } else if (errno == ENOSYS) {
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
            SEC_OK(&rep, ST_SECCOMP);
        else
            SEC_FAIL(&rep, ST_SECCOMP, SOP_PRCTL_SECCOMP, errno);
    } else {
        SEC_FAIL(&rep, ST_SECCOMP, SOP_SECCOMP, errno);
    }

    uint32_t act = SECCOMP_RET_USER_NOTIF;
    if (fy_sys_seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0)
        SEC_OK(&rep, ST_NOTIF_AVAIL);
    else
        SEC_FAIL(&rep, ST_NOTIF_AVAIL, SOP_ACTION_AVAIL, errno);

    if (rep.r[ST_NOTIF_AVAIL].state == 1) {
        int lfd = fy_sys_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (lfd < 0) {
            SEC_FAIL(&rep, ST_NOTIF_LISTENER, SOP_LISTENER, errno);
        } else {
            close(lfd);
            SEC_OK(&rep, ST_NOTIF_LISTENER);
        }
    }
    cw_report(wfd, &rep, sizeof rep);
}

static void sec_fmt_fail(const struct ns_result *r, char buf[REASON_MAX]) {
    const char *op = r->op >= 0 && r->op < SOP__N && sec_op_name[r->op] ? sec_op_name[r->op]
                                                                        : "?";
    if (r->err)
        bappend(buf, "%s failed: " EFMT, op, EARG(r->err));
    else
        bappend(buf, "%s", op);
}

static void probe_seccomp_landlock(fy_caps *c, const struct self_status *st) {
    /* Landlock ABI (no side effects: parent) */
    int abi = fy_sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    int abi_err = abi < 0 ? errno : 0;

    struct sec_args a = { .landlock_abi = abi > 0 ? abi : 0 };
    struct sec_report rep;
    memset(&rep, 0, sizeof rep);
    char fail[REASON_MAX] = "";
    struct child ch;
    int r = child_start(&ch, sec_child, &a, -1);
    if (r < 0) {
        bappend(fail, "fork: " EFMT, EARG(-r));
    } else {
        uint64_t deadline = pu_deadline_after_ms(CHILD_DEADLINE_MS);
        ssize_t n = read_deadline(ch.rfd, &rep, sizeof rep, deadline);
        bool killed = false;
        (void)child_finish(&ch, deadline, &killed);
        if (n != (ssize_t)sizeof rep || rep.magic != REPORT_MAGIC) {
            if (killed || n == -ETIMEDOUT)
                bappend(fail, "the seccomp/Landlock probe child did not report within %d ms",
                        CHILD_DEADLINE_MS);
            else if (ch.p.reaped && ch.p.status != -1 && WIFSIGNALED(ch.p.status))
                bappend(fail, "the seccomp/Landlock probe child was killed by signal %d%s",
                        WTERMSIG(ch.p.status),
                        WTERMSIG(ch.p.status) == SIGSYS ? " (SIGSYS: an outer seccomp filter)"
                                                        : "");
            else
                bappend(fail, "the seccomp/Landlock probe child exited without a report");
            memset(&rep, 0, sizeof rep);
        }
    }
    bool ran = fail[0] == '\0';
    char why[REASON_MAX];

    /* no_new_privs */
    why[0] = '\0';
    if (!ran) {
        caps_set(c, FY_CAP_NO_NEW_PRIVS, false, 0, "%s", fail);
    } else if (rep.r[ST_NNP].state == 1) {
        caps_set(c, FY_CAP_NO_NEW_PRIVS, true, 1, "prctl(PR_SET_NO_NEW_PRIVS) took effect in a "
                 "child%s", st->no_new_privs ? " (this process already has it set)" : "");
    } else {
        sec_fmt_fail(&rep.r[ST_NNP], why);
        outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_NO_NEW_PRIVS, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_NO_NEW_PRIVS, "a kernel >= 3.5 with prctl allowed");
    }

    /* seccomp */
    why[0] = '\0';
    if (!ran) {
        caps_set(c, FY_CAP_SECCOMP, false, 0, "%s", fail);
    } else if (rep.r[ST_SECCOMP].state == 1) {
        bappend(why, "a seccomp filter (allow-all BPF) loaded in a child");
        outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_SECCOMP, true, 1, "%s", why);
    } else {
        sec_fmt_fail(&rep.r[ST_SECCOMP], why);
        if (rep.r[ST_NNP].state != 1)
            bappend(why, " (no_new_privs could not be set)");
        if (rep.r[ST_SECCOMP].err == EINVAL)
            bappend(why, " (kernel built without CONFIG_SECCOMP_FILTER?)");
        outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_SECCOMP, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_SECCOMP, "a kernel with CONFIG_SECCOMP_FILTER=y; an outer "
                      "seccomp profile must allow seccomp(2) and prctl(PR_SET_SECCOMP)");
    }

    /* user notification */
    why[0] = '\0';
    if (!ran) {
        caps_set(c, FY_CAP_SECCOMP_NOTIFY, false, 0, "%s", fail);
    } else if (rep.r[ST_NOTIF_LISTENER].state == 1) {
        caps_set(c, FY_CAP_SECCOMP_NOTIFY, true, 1, "SECCOMP_RET_USER_NOTIF is available and a "
                 "filter with a listener fd loaded in a child");
    } else {
        if (rep.r[ST_NOTIF_AVAIL].state != 1)
            sec_fmt_fail(&rep.r[ST_NOTIF_AVAIL], why);
        else
            sec_fmt_fail(&rep.r[ST_NOTIF_LISTENER], why);
        if (rep.r[ST_NOTIF_LISTENER].err == EBUSY)
            bappend(why, " (an outer filter already has a listener)");
        outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_SECCOMP_NOTIFY, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_SECCOMP_NOTIFY, "a kernel >= 5.0 (5.9 for addfd) and no outer "
                      "seccomp user-notification supervisor");
    }

    /* Landlock */
    why[0] = '\0';
    if (abi <= 0) {
        if (abi_err == ENOSYS)
            bappend(why, "landlock_create_ruleset: ENOSYS (kernel without Landlock, < 5.13)");
        else if (abi_err == EOPNOTSUPP)
            bappend(why, "landlock_create_ruleset: EOPNOTSUPP (Landlock built in but not enabled "
                    "at boot)");
        else
            bappend(why, "landlock_create_ruleset(LANDLOCK_CREATE_RULESET_VERSION) failed: " EFMT,
                    EARG(abi_err));
        outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_LANDLOCK, false, 0, "%s", why);
        caps_set_hint(c, FY_CAP_LANDLOCK, "%s", abi_err == EOPNOTSUPP
                      ? "add landlock to the lsm= kernel command line (or CONFIG_LSM)"
                      : "a kernel >= 5.13 with CONFIG_SECURITY_LANDLOCK=y and landlock in lsm=");
    } else if (!ran) {
        caps_set(c, FY_CAP_LANDLOCK, false, abi, "Landlock ABI %d, but %s", abi, fail);
    } else if (rep.r[ST_LANDLOCK].state == 1) {
        caps_set(c, FY_CAP_LANDLOCK, true, abi, "Landlock ABI %d; a restricted child could read "
                 "/dev/null inside its ruleset and got EACCES for / outside it", abi);
    } else {
        bappend(why, "Landlock ABI %d, but the functional check failed: ", abi);
        sec_fmt_fail(&rep.r[ST_LANDLOCK], why);
        outer_seccomp_note(st, why);
        caps_set(c, FY_CAP_LANDLOCK, false, abi, "%s", why);
        caps_set_hint(c, FY_CAP_LANDLOCK, "check that no outer policy blocks the landlock_* "
                      "system calls");
    }
}

/* ------------------------------------------------------------------ */
/* pidfd, clone3, openat2                                             */
/* ------------------------------------------------------------------ */

/* Blocks signals, forks a child that waits for EOF on a pipe, and returns its
 * pid (or -errno); *ret_wfd is the write end that releases it. */
static pid_t fork_waiter(int *ret_wfd) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fy_sys_fork_quiet();
    if (pid == 0) {
        char b;
        close(p[1]);
        while (read(p[0], &b, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -e;
    }
    *ret_wfd = p[1];
    return pid;
}

/* Bounded reap of a pid we own (SIGKILL after the deadline). */
static void reap_pid(pid_t pid, int pidfd, int ms) {
    struct pu_proc p;
    memset(&p, 0, sizeof p);
    p.pid = pid;
    p.pidfd = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 3) : -1;
    (void)pu_finish(&p, pu_deadline_after_ms(ms), NULL);
}

static void probe_pidfd(fy_caps *c) {
    int wfd = -1;
    pid_t pid = fork_waiter(&wfd);
    if (pid < 0) {
        caps_set(c, FY_CAP_PIDFD, false, 0, "fork: " EFMT, EARG((int)-pid));
        return;
    }
    int pidfd = fy_sys_pidfd_open(pid, 0);
    if (pidfd < 0) {
        int e = errno;
        close(wfd);
        reap_pid(pid, -1, CHILD_DEADLINE_MS);
        caps_set(c, FY_CAP_PIDFD, false, 0, "pidfd_open: " EFMT "%s", EARG(e),
                 e == ENOSYS ? " (kernel < 5.3)" : "");
        caps_set_hint(c, FY_CAP_PIDFD, "a kernel >= 5.4 (pidfd_open, waitid(P_PIDFD))");
        return;
    }
    if (fy_sys_pidfd_send_signal(pidfd, SIGKILL, NULL, 0) < 0) {
        int e = errno;
        close(wfd);
        reap_pid(pid, pidfd, CHILD_DEADLINE_MS);
        close(pidfd);
        caps_set(c, FY_CAP_PIDFD, false, 0, "pidfd_send_signal(SIGKILL): " EFMT, EARG(e));
        caps_set_hint(c, FY_CAP_PIDFD, "a kernel >= 5.4 (pidfd_open, waitid(P_PIDFD))");
        return;
    }
    struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
    (void)poll(&pfd, 1, CHILD_DEADLINE_MS);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(FY_P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | __WALL);
    int e = errno;
    close(wfd);
    if (r < 0 || si.si_pid != pid) {
        reap_pid(pid, pidfd, CHILD_DEADLINE_MS);
        close(pidfd);
        if (r < 0)
            caps_set(c, FY_CAP_PIDFD, false, 0, "waitid(P_PIDFD): " EFMT "%s", EARG(e),
                     e == EINVAL ? " (kernel < 5.4)" : "");
        else
            caps_set(c, FY_CAP_PIDFD, false, 0, "waitid(P_PIDFD) did not report the child "
                     "killed through its pidfd within %d ms", CHILD_DEADLINE_MS);
        caps_set_hint(c, FY_CAP_PIDFD, "a kernel >= 5.4 (pidfd_open, waitid(P_PIDFD))");
        return;
    }
    close(pidfd);
    if (si.si_code == CLD_KILLED && si.si_status == SIGKILL)
        caps_set(c, FY_CAP_PIDFD, true, 1, "pidfd_open, pidfd_send_signal(SIGKILL) and "
                 "waitid(P_PIDFD) worked on a child");
    else
        caps_set(c, FY_CAP_PIDFD, false, 0, "waitid(P_PIDFD) reported si_code %d status %d "
                 "instead of CLD_KILLED/SIGKILL", si.si_code, si.si_status);
}

/* clone3 with CLONE_PIDFD (and optionally CLONE_INTO_CGROUP). The child waits
 * for EOF on a pipe when hold is set, else exits 42 at once. Returns the pid
 * or -errno; *ret_pidfd and *ret_wfd receive the pidfd / pipe write end. */
static pid_t clone3_child(int cgroup_fd, bool hold, int *ret_pidfd, int *ret_wfd) {
    int p[2] = { -1, -1 };
    if (hold && pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    int pidfd = -1;
    struct fy_clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_PIDFD;
    args.pidfd = (uint64_t)(uintptr_t)&pidfd;
    args.exit_signal = 0; /* invisible to the host's SIGCHLD disposition */
    size_t size = 64; /* CLONE_ARGS_SIZE_VER0 */
    if (cgroup_fd >= 0) {
        args.flags |= FY_CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)cgroup_fd;
        size = sizeof args; /* VER2 */
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fy_sys_clone3(&args, size);
    if (pid == 0) {
        if (hold) {
            char b;
            close(p[1]);
            while (read(p[0], &b, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
        _exit(42);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p[0] >= 0)
        close(p[0]);
    if (pid < 0) {
        if (p[1] >= 0)
            close(p[1]);
        return -e;
    }
    *ret_pidfd = pidfd;
    *ret_wfd = p[1];
    return pid;
}

static void probe_clone3(fy_caps *c) {
    int pidfd = -1, wfd = -1;
    pid_t pid = clone3_child(-1, false, &pidfd, &wfd);
    if (pid < 0) {
        int e = (int)-pid;
        caps_set(c, FY_CAP_CLONE3, false, 0, "clone3(CLONE_PIDFD): " EFMT "%s", EARG(e),
                 e == ENOSYS ? " (kernel < 5.3, or an outer seccomp filter hides clone3)" : "");
        caps_set_hint(c, FY_CAP_CLONE3, "a kernel >= 5.7 with clone3 allowed by any outer "
                      "seccomp profile (clone is used as the fallback)");
        return;
    }
    struct pu_proc ch;
    memset(&ch, 0, sizeof ch);
    ch.pid = pid;
    ch.pidfd = pidfd;
    (void)pu_finish(&ch, pu_deadline_after_ms(CHILD_DEADLINE_MS), NULL);
    if (pidfd < 0)
        caps_set(c, FY_CAP_CLONE3, false, 0, "clone3 ran a child but returned no pidfd");
    else if (ch.reaped && ch.status != -1 && WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 42)
        caps_set(c, FY_CAP_CLONE3, true, 1, "clone3(CLONE_PIDFD) ran a child that exited 42");
    else
        caps_set(c, FY_CAP_CLONE3, false, 0, "the clone3 child did not exit as expected (wait "
                 "status 0x%x)", (unsigned)ch.status);
}

static void probe_exec_init(fy_caps *c) {
    char why[512];
    if (lx_probe_exec_init(caps_present(c, FY_CAP_USERNS), why, sizeof(why))) {
        caps_set(c, FY_CAP_EXEC_INIT, true, 1, "%s", why);
        return;
    }
    caps_set(c, FY_CAP_EXEC_INIT, false, 0, "%s", why);
    caps_set_hint(c, FY_CAP_EXEC_INIT, "allow executing sealed memfds (vm.memfd_noexec below 2, no LSM or "
                  "seccomp rule against execveat): meanwhile the sandbox's pid 1 is a fork of this process, "
                  "whose memory it then starts with, at a cost that grows with this process's size");
}

static void probe_openat2(fy_caps *c) {
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        caps_set(c, FY_CAP_OPENAT2, false, 0, "open(\"/\"): " EFMT, EARG(errno));
        return;
    }
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    int fd = fy_sys_openat2(root, ".", &how, sizeof how);
    if (fd < 0) {
        int e = errno;
        close(root);
        caps_set(c, FY_CAP_OPENAT2, false, 0, "openat2(RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH): "
                 EFMT "%s", EARG(e), e == ENOSYS ? " (kernel < 5.6)" : "");
        caps_set_hint(c, FY_CAP_OPENAT2, "a kernel >= 5.6 (paths are resolved with O_NOFOLLOW "
                      "walks otherwise)");
        return;
    }
    close(fd);
    char why[REASON_MAX] = "";
    /* ".." from the dirfd must be refused with EXDEV. */
    fd = fy_sys_openat2(root, "..", &how, sizeof how);
    int e = errno;
    if (fd >= 0) {
        close(fd);
        bappend(why, "openat2(\"..\", RESOLVE_BENEATH) escaped the directory");
    } else if (e != EXDEV) {
        bappend(why, "openat2(\"..\", RESOLVE_BENEATH) failed with " EFMT " instead of EXDEV",
                EARG(e));
    }
    /* A symlink must be refused with ELOOP. /proc/self is one when /proc is mounted. */
    bool sym_checked = false;
    struct stat st;
    if (!why[0] && lstat("/proc/self", &st) == 0 && S_ISLNK(st.st_mode)) {
        sym_checked = true;
        fd = fy_sys_openat2(root, "proc/self", &how, sizeof how);
        e = errno;
        if (fd >= 0) {
            close(fd);
            bappend(why, "openat2(\"proc/self\", RESOLVE_NO_SYMLINKS) followed the symlink");
        } else if (e != ELOOP) {
            bappend(why, "openat2(\"proc/self\", RESOLVE_NO_SYMLINKS) failed with " EFMT
                    " instead of ELOOP", EARG(e));
        }
    }
    close(root);
    if (why[0])
        caps_set(c, FY_CAP_OPENAT2, false, 0, "%s", why);
    else
        caps_set(c, FY_CAP_OPENAT2, true, 1, "openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH "
                 "works: \"..\" gave EXDEV%s", sym_checked ? ", a symlink gave ELOOP" : "");
}

/* ------------------------------------------------------------------ */
/* cgroups                                                            */
/* ------------------------------------------------------------------ */

enum { CG_MEMORY, CG_PIDS, CG_CPU, CG_FREEZER, CG_BLKIO, CG_CPUACCT, CG__N };
static const char *const cg1_name[CG__N] = { "memory", "pids", "cpu", "freezer", "blkio",
                                             "cpuacct" };

struct cg1_ctl {
    char *dir;       /* mount point + our own path (owned) */
    bool tested;
    bool ok;
    char why[REASON_MAX];
};

struct cg_state {
    /* discovery */
    bool any_v1;          /* a v1 hierarchy with real controllers is mounted */
    char *cg2_mount;      /* cgroup2 mount point (owned) */
    char *cg2_dir;        /* our own v2 directory (owned) */
    char cg2_path[PATH_MAX];
    bool cg2_in_proc;     /* /proc/self/cgroup has a 0:: line */
    struct cg1_ctl v1[CG__N];
    bool memsw;
    /* v2 results */
    char v2_controllers[256]; /* our cgroup's cgroup.controllers */
    char v2_subtree[256];     /* our cgroup's cgroup.subtree_control */
    char v2_child_ctl[256];   /* the child's cgroup.controllers */
    bool v2_mkdir_ok;
    bool v2_rmdir_failed;
    char v2_why[REASON_MAX];  /* why v2 is unusable */
    bool v2_ctl_ok[4];        /* memory pids cpu io */
    char v2_ctl_why[4][REASON_MAX];
    bool v2_freeze_ok;
    char v2_freeze_why[REASON_MAX];
    bool v2_kill_ok;
    char v2_kill_why[REASON_MAX];
    bool into_ok;
    char into_why[REASON_MAX];
};

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
        return fy_strdup(mnt);
    return fy_asprintf("%s%s%s", mnt, mnt[strlen(mnt) - 1] == '/' ? "" : "/", path);
}

/* Parses /proc/self/cgroup and /proc/self/mountinfo. -ENOMEM only. */
static int cg_discover(struct cg_state *s) {
    char *cg = NULL, *mi = NULL;
    char *v1_path[CG__N] = { 0 };
    int ret = 0;
    if (read_file("/proc/self/cgroup", &cg, 1u << 20) < 0)
        cg = NULL;
    if (read_file("/proc/self/mountinfo", &mi, 16u << 20) < 0)
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
                    if (!(s->cg2_mount = fy_strdup(f[4])))
                        ret = -ENOMEM;
                    s->cg2_dir = d;
                }
            } else if (strcmp(fstype, "cgroup") == 0 && super) {
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

static void cg_free(struct cg_state *s) {
    free(s->cg2_mount);
    free(s->cg2_dir);
    for (int i = 0; i < CG__N; i++)
        free(s->v1[i].dir);
}

static void probe_name(char *buf, size_t size) {
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)(fy_now_usec() * 2654435761u);
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
    int r = write_existing(path, value);
    if (r < 0) {
        bappend(why, "writing %s to %s: " EFMT, value, path, EARG(-r));
        return false;
    }
    r = read_small(path, got, sizeof got);
    if (r < 0) {
        bappend(why, "reading back %s: " EFMT, path, EARG(-r));
        return false;
    }
    if (strcmp(got, expect) != 0) {
        bappend(why, "%s read back \"%s\" after writing \"%s\"", path, got, value);
        return false;
    }
    return true;
}

static void cg1_test(struct cg_state *s, int i) {
    struct cg1_ctl *v = &s->v1[i];
    if (!v->dir || i == CG_CPUACCT)
        return;
    v->tested = true;
    char name[64], child[PATH_MAX];
    probe_name(name, sizeof name);
    if ((size_t)snprintf(child, sizeof child, "%s/%s", v->dir, name) >= sizeof child) {
        bappend(v->why, "path too long");
        return;
    }
    if (mkdir(child, 0755) < 0) {
        bappend(v->why, "mkdir %s: " EFMT, child, EARG(errno));
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
            bappend(v->why, "%s: no blkio.throttle.read_bps_device (no throttling)", child);
        break;
    }
    default:
        break;
    }
    int r = cg_rmdir(child);
    if (r < 0) {
        bappend(v->why, "%srmdir %s: " EFMT, v->why[0] ? "; " : "", child, EARG(-r));
        v->ok = false;
    }
}

/* CLONE_INTO_CGROUP into the v2 child, then cgroup.kill to end it. */
static void cg2_into_and_kill(struct cg_state *s, const char *child) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.kill", child);
    bool have_kill = pu_exists(path);
    if (!have_kill)
        bappend(s->v2_kill_why, "%s does not exist (kernel < 5.14)", path);

    int cgfd = open(child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgfd < 0) {
        bappend(s->into_why, "open %s: " EFMT, child, EARG(errno));
    } else {
        int pidfd = -1, wfd = -1;
        pid_t pid = clone3_child(cgfd, true, &pidfd, &wfd);
        close(cgfd);
        if (pid < 0) {
            int e = (int)-pid;
            bappend(s->into_why, "clone3(CLONE_INTO_CGROUP): " EFMT "%s", EARG(e),
                    e == ENOSYS ? " (no clone3)"
                    : e == EINVAL || e == E2BIG ? " (kernel < 5.7)" : "");
        } else {
            char procs[256];
            snprintf(path, sizeof path, "%s/cgroup.procs", child);
            int r = read_small(path, procs, sizeof procs);
            if (r < 0)
                bappend(s->into_why, "reading %s: " EFMT, path, EARG(-r));
            else if (strtol(procs, NULL, 10) != pid)
                bappend(s->into_why, "the clone3(CLONE_INTO_CGROUP) child is not in %s", path);
            else
                s->into_ok = true;

            if (have_kill && s->into_ok) {
                snprintf(path, sizeof path, "%s/cgroup.kill", child);
                r = write_existing(path, "1");
                if (r < 0) {
                    bappend(s->v2_kill_why, "writing 1 to %s: " EFMT, path, EARG(-r));
                } else {
                    struct pu_proc ch;
                    memset(&ch, 0, sizeof ch);
                    ch.pid = pid;
                    ch.pidfd = pidfd;
                    if (pu_wait_until(&ch, pu_deadline_after_ms(CHILD_DEADLINE_MS)) &&
                        ch.status != -1 && WIFSIGNALED(ch.status) &&
                        WTERMSIG(ch.status) == SIGKILL) {
                        s->v2_kill_ok = true;
                    } else if (!ch.reaped) {
                        bappend(s->v2_kill_why, "the process in the cgroup survived cgroup.kill "
                                "for %d ms", CHILD_DEADLINE_MS);
                    }
                    if (ch.reaped)
                        pid = -1;
                }
            }
            if (pid > 0) {
                close(wfd);
                wfd = -1;
                reap_pid(pid, pidfd, CHILD_DEADLINE_MS);
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
        int r = write_existing(path, "1");
        if (r == 0)
            s->v2_kill_ok = true;
        else
            bappend(s->v2_kill_why, "writing 1 to %s: " EFMT, path, EARG(-r));
    }
}

static void cg2_test(struct cg_state *s) {
    if (!s->cg2_mount) {
        bappend(s->v2_why, "no cgroup2 filesystem is mounted");
        bappend(s->into_why, "no cgroup2 filesystem is mounted");
        bappend(s->v2_kill_why, "no cgroup2 filesystem is mounted");
        return;
    }
    if (!s->cg2_dir) {
        bappend(s->v2_why, "our cgroup v2 path \"%s\" is not visible under %s", s->cg2_path,
                s->cg2_mount);
        bappend(s->into_why, "%s", s->v2_why);
        bappend(s->v2_kill_why, "%s", s->v2_why);
        return;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.controllers", s->cg2_dir);
    (void)read_small(path, s->v2_controllers, sizeof s->v2_controllers);
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", s->cg2_dir);
    (void)read_small(path, s->v2_subtree, sizeof s->v2_subtree);

    char name[64], child[PATH_MAX];
    probe_name(name, sizeof name);
    snprintf(child, sizeof child, "%s/%s", s->cg2_dir, name);
    if (mkdir(child, 0755) < 0) {
        int e = errno;
        bappend(s->v2_why, "mkdir %s: " EFMT, child, EARG(e));
        bappend(s->into_why, "no v2 child cgroup: mkdir %s: " EFMT, child, EARG(e));
        bappend(s->v2_kill_why, "no v2 child cgroup: mkdir %s: " EFMT, child, EARG(e));
        return;
    }
    s->v2_mkdir_ok = true;
    snprintf(path, sizeof path, "%s/cgroup.controllers", child);
    (void)read_small(path, s->v2_child_ctl, sizeof s->v2_child_ctl);

    static const char *const file[4] = { "memory.max", "pids.max", "cpu.max", "io.max" };
    static const char *const value[4] = { "268435456", "64", "50000 100000", NULL };
    for (int i = 0; i < 4; i++) {
        if (!list_has(s->v2_child_ctl, v2_ctl_name[i])) {
            bappend(s->v2_ctl_why[i], "cgroup v2: %s is not in %s/cgroup.subtree_control",
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
                bappend(s->v2_ctl_why[i], "%s does not exist", path);
        }
    }

    /* cgroup.freeze (not a controller: present in every non-root v2 cgroup) */
    snprintf(path, sizeof path, "%s/cgroup.freeze", child);
    if (!pu_exists(path)) {
        bappend(s->v2_freeze_why, "%s does not exist (kernel < 5.2)", path);
    } else if (cg_write_check(child, "cgroup.freeze", "1", "1", s->v2_freeze_why)) {
        char ev[512];
        snprintf(path, sizeof path, "%s/cgroup.events", child);
        if (read_small(path, ev, sizeof ev) == 0 && strstr(ev, "frozen 1"))
            s->v2_freeze_ok = true;
        else
            bappend(s->v2_freeze_why, "%s did not report frozen 1", path);
        snprintf(path, sizeof path, "%s/cgroup.freeze", child);
        (void)write_existing(path, "0");
    }

    cg2_into_and_kill(s, child);

    int r = cg_rmdir(child);
    if (r < 0) {
        s->v2_rmdir_failed = true;
        bappend(s->v2_why, "%srmdir %s: " EFMT, s->v2_why[0] ? "; " : "", child, EARG(-r));
    }
}

static void probe_cgroups(fy_caps *c, struct cg_state *s, bool is_root) {
    bool v2_mounted = s->cg2_mount != NULL;
    const char *mode = s->any_v1 && v2_mounted ? "hybrid"
                       : s->any_v1            ? "v1"
                       : v2_mounted           ? "v2"
                                              : "none";
    c->host.cgroup_mode = fy_strdup(mode);

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
            bappend(why, "%s%s", n_ok > 1 ? " " : "", cg1_name[i]);
        }
    }
    if (n_ok > 0) {
        char ok_list[REASON_MAX];
        snprintf(ok_list, sizeof ok_list, "%s", why);
        why[0] = '\0';
        bappend(why, "cgroup v1: created, limited and removed child cgroups for %s", ok_list);
        if (s->v1[CG_MEMORY].dir)
            bappend(why, " (our memory cgroup: %s)", s->v1[CG_MEMORY].dir);
        for (int i = 0; i < CG__N; i++)
            if (s->v1[i].tested && !s->v1[i].ok)
                bappend(why, "; %s: %s", cg1_name[i], s->v1[i].why);
        caps_set(c, FY_CAP_CGROUP_V1, true, 1, "%s", why);
    } else if (!s->any_v1) {
        caps_set(c, FY_CAP_CGROUP_V1, false, 0, "no cgroup v1 hierarchy with controllers is "
                 "mounted (cgroup mode: %s)", mode);
    } else {
        why[0] = '\0';
        bappend(why, "cgroup v1 hierarchies are mounted but unusable");
        for (int i = 0; i < CG__N; i++)
            if (s->v1[i].tested)
                bappend(why, "; %s: %s", cg1_name[i], s->v1[i].why);
        if (n_tested == 0)
            bappend(why, ": our own v1 cgroups are not visible under the mounts");
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
        bappend(why, "cgroup v2 at %s: created a child cgroup with controllers \"%s\"",
                s->cg2_dir, s->v2_child_ctl);
        caps_set(c, FY_CAP_CGROUP_V2, true, 2, "%s", why);
    } else if (!v2_mounted || !s->cg2_dir || !s->v2_mkdir_ok || s->v2_rmdir_failed) {
        caps_set(c, FY_CAP_CGROUP_V2, false, 0, "%s", s->v2_why);
        caps_set_hint(c, FY_CAP_CGROUP_V2, "%s", v2_mounted ? v2_hint
                      : "mount cgroup2 (a systemd host with unified hierarchy does)");
    } else {
        bappend(why, "cgroup2 mounted at %s but offers no usable controllers (our cgroup %s: "
                "cgroup.controllers \"%s\", cgroup.subtree_control \"%s\"",
                s->cg2_mount, s->cg2_path[0] ? s->cg2_path : "/", s->v2_controllers,
                s->v2_subtree);
        if (s->any_v1) {
            char bound[256] = "";
            for (int i = 0; i < CG__N; i++)
                if (s->v1[i].dir && i != CG_CPUACCT)
                    snprintf(bound + strlen(bound), sizeof bound - strlen(bound), "%s%s",
                             bound[0] ? ", " : "", cg1_name[i]);
            bappend(why, "; %s bound to v1: hybrid host", bound[0] ? bound : "controllers");
        }
        bappend(why, ")");
        for (int i = 0; i < 4; i++)
            if (list_has(s->v2_child_ctl, v2_ctl_name[i]) && !s->v2_ctl_ok[i])
                bappend(why, "; %s", s->v2_ctl_why[i]);
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
            bappend(why, "%s", s->v2_ctl_why[i2]);
        else if (s->v2_why[0])
            bappend(why, "cgroup v2: %s", s->v2_why);
        if (s->v1[i1].tested)
            bappend(why, "%scgroup v1 %s: %s", why[0] ? "; " : "", cg1_name[i1], s->v1[i1].why);
        else if (s->any_v1)
            bappend(why, "%sno cgroup v1 %s hierarchy for our process", why[0] ? "; " : "",
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
        bappend(why, "cgroup v2: %s", s->v2_freeze_why[0] ? s->v2_freeze_why : s->v2_why);
        if (s->v1[CG_FREEZER].tested)
            bappend(why, "; cgroup v1 freezer: %s", s->v1[CG_FREEZER].why);
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

/* ------------------------------------------------------------------ */
/* helper programs                                                    */
/* ------------------------------------------------------------------ */

static int probe_programs(fy_caps *c, bool is_root) {
    char *crun = pu_find_program("crun");
    char *runc = crun ? NULL : pu_find_program("runc");
    if (crun || runc) {
        c->host.oci_runtime = crun ? crun : runc;
        caps_set(c, FY_CAP_OCI_RUNTIME, true, 1, "%s found (not run by the probe)",
                 c->host.oci_runtime);
    } else {
        caps_set(c, FY_CAP_OCI_RUNTIME, false, 0, "neither crun nor runc found in PATH or the "
                 "system directories");
        caps_set_hint(c, FY_CAP_OCI_RUNTIME, "install crun (apt install crun) or runc");
    }

    char *nft = pu_find_program("nft");
    if (nft && is_root)
        caps_set(c, FY_CAP_NFTABLES, true, 1, "%s found and running as root (nft not run by "
                 "the probe)", nft);
    else if (nft) {
        caps_set(c, FY_CAP_NFTABLES, false, 0, "%s found but not root: nftables filtering of a "
                 "sandbox's veth needs CAP_NET_ADMIN on the host", nft);
        caps_set_hint(c, FY_CAP_NFTABLES, "run as root or through the privileged helper, or use "
                      "pasta for rootless restricted networking");
    } else {
        caps_set(c, FY_CAP_NFTABLES, false, 0, "nft not found in PATH or the system "
                 "directories");
        caps_set_hint(c, FY_CAP_NFTABLES, "install nftables (apt install nftables)");
    }
    free(nft);

    char *pasta = pu_find_program("pasta");
    if (pasta)
        caps_set(c, FY_CAP_PASTA, true, 1, "%s found (not run by the probe)", pasta);
    else {
        caps_set(c, FY_CAP_PASTA, false, 0, "pasta not found in PATH or the system directories");
        caps_set_hint(c, FY_CAP_PASTA, "install passt (apt install passt), which provides pasta");
    }
    free(pasta);

    c->host.bwrap_path = pu_find_program("bwrap");
    return 0;
}

/* ------------------------------------------------------------------ */
/* entry point                                                        */
/* ------------------------------------------------------------------ */

int linux_probe(fy_caps *c, uint64_t flags, fy_error **reterr) {
    (void)flags;
    if (!c)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "linux_probe: no caps");

    struct self_status st;
    read_self_status(&st);
    bool has_sys_admin = st.have && (st.cap_eff & (UINT64_C(1) << 21)) != 0;
    bool is_root = geteuid() == 0 && has_sys_admin;

    c->host.is_root = is_root;
    c->host.uid = (uint32_t)getuid();
    c->host.gid = (uint32_t)getgid();
    struct utsname u;
    if (uname(&u) == 0 && !(c->host.kernel_release = fy_strdup(u.release)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");

    probe_namespaces(c, is_root, has_sys_admin, &st);
    probe_seccomp_landlock(c, &st);
    probe_pidfd(c);
    probe_clone3(c);
    probe_exec_init(c);
    probe_openat2(c);

    struct cg_state cg;
    memset(&cg, 0, sizeof cg);
    if (cg_discover(&cg) < 0) {
        cg_free(&cg);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");
    }
    if (c->host.cg2_delegated) {
        /* The host program delegated a v2 subtree: sandboxes live there. */
        struct statfs sfs;
        if (statfs(c->host.cg2_delegated, &sfs) < 0 || sfs.f_type != 0x63677270 /* CGROUP2_SUPER_MAGIC */) {
            int e = errno;
            cg_free(&cg);
            return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, e, NULL, "%s is not a cgroup v2 directory",
                           c->host.cg2_delegated);
        }
        free(cg.cg2_dir);
        if (!(cg.cg2_dir = fy_strdup(c->host.cg2_delegated))) {
            cg_free(&cg);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");
        }
    }
    probe_cgroups(c, &cg, is_root);
    char **dst[CG__N] = { &c->host.cg1_memory, &c->host.cg1_pids, &c->host.cg1_cpu,
                          &c->host.cg1_freezer, &c->host.cg1_blkio, &c->host.cg1_cpuacct };
    for (int i = 0; i < CG__N; i++) {
        *dst[i] = cg.v1[i].dir;
        cg.v1[i].dir = NULL;
    }
    c->host.cg1_memsw = cg.memsw;
    c->host.cg2_dir = cg.cg2_dir;
    cg.cg2_dir = NULL;
    cg_free(&cg);
    if (!c->host.cgroup_mode)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");

    return probe_programs(c, is_root);
}
