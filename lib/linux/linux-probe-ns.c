/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The namespace probe (linux-probe.c has the rules; linux_probe calls
 * lp_probe_namespaces): one forked child unshares a user namespace (mapped
 * by the root parent, or by itself), then a mount namespace with a tmpfs and
 * the new mount API, UTS, IPC, network (lo up), cgroup and pid namespaces,
 * and reports what failed where; the parent turns that into the
 * capabilities, their reasons and hints. ns_child and the ns_* tests it
 * calls run between fork and _exit: plain system calls only. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "linux-probe-internal.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

/* The unprivileged host range a root caller maps workloads to in the probe. */
#define PROBE_RANGE_START 100000u
#define PROBE_RANGE_COUNT 65536u

#define NS_DEADLINE_MS 2000

/* ------------------------------------------------------------------ */
/* namespaces                                                         */
/* ------------------------------------------------------------------ */

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Async-signal-safe helper for children. */
static int cw_file(const char *path, const char *s, size_t len) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, s, len);
    int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
    close(fd);
    return -e;
}

enum ns_test { NT_USERNS, NT_MAP, NT_MOUNTNS, NT_MOUNTAPI, NT_UTS, NT_IPC, NT_NET, NT_CGROUP,
               NT_PID, NT__N };

enum ns_op {
    OP_NONE, OP_UNSHARE_USER, OP_SETGROUPS_FILE, OP_UID_MAP, OP_GID_MAP, OP_SETRESGID,
    OP_SETGROUPS, OP_SETRESUID, OP_GETUID, OP_UNSHARE_NS, OP_MAKE_PRIVATE, OP_STAT, OP_MOUNT_TMPFS,
    OP_SAME_DEV, OP_FSOPEN, OP_FSCONFIG_SET, OP_FSCONFIG_CREATE, OP_FSMOUNT, OP_MOVE_MOUNT,
    OP_OPEN_TREE, OP_MOUNT_SETATTR, OP_UNSHARE_UTS, OP_SETHOSTNAME, OP_UNAME, OP_UNSHARE_IPC,
    OP_UNSHARE_NET, OP_SOCKET, OP_GIFFLAGS, OP_SIFFLAGS, OP_LO_DOWN, OP_UNSHARE_CGROUP,
    OP_READ_CGROUP, OP_CGROUP_NOT_ROOT, OP_UNSHARE_PID, OP_FORK, OP_WAIT, OP_NOT_PID1, OP_PIVOT_ROOT, OP__N
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
    [OP_PIVOT_ROOT] = "pivot_root into the tmpfs (in a child's mount namespace)",
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
    int fs = sys_fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return NS_FAIL(rep, NT_MOUNTAPI, OP_FSOPEN, errno), false;
    if (sys_fsconfig(fs, FSCONFIG_SET_STRING, "size", "64k", 0) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_FSCONFIG_SET, errno);
        close(fs);
        return false;
    }
    if (sys_fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_FSCONFIG_CREATE, errno);
        close(fs);
        return false;
    }
    int mfd = sys_fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    int e = errno;
    close(fs);
    if (mfd < 0)
        return NS_FAIL(rep, NT_MOUNTAPI, OP_FSMOUNT, e), false;
    if (sys_move_mount(mfd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
        NS_FAIL(rep, NT_MOUNTAPI, OP_MOVE_MOUNT, errno);
        close(mfd);
        return false;
    }
    close(mfd);
    int tfd = sys_open_tree(AT_FDCWD, target, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tfd < 0)
        return NS_FAIL(rep, NT_MOUNTAPI, OP_OPEN_TREE, errno), false;
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (sys_mount_setattr(tfd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
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

/* Reaps a quiet child (sys_fork_quiet: no exit signal, hence __WALL): its
 * pid with *st, or -1 with errno. */
static pid_t reap_quiet(pid_t g, int *st) {
    pid_t r;
    do
        r = wait4(g, st, __WALL, NULL);
    while (r < 0 && errno == EINTR);
    return r;
}

static void ns_pid(struct ns_report *rep) {
    if (unshare(CLONE_NEWPID) < 0) {
        NS_FAIL(rep, NT_PID, OP_UNSHARE_PID, errno);
        return;
    }
    pid_t g = sys_fork_quiet();
    if (g < 0) {
        NS_FAIL(rep, NT_PID, OP_FORK, errno);
        return;
    }
    if (g == 0)
        _exit(syscall(SYS_getpid) == 1 ? 0 : 1);
    int st = 0;
    if (reap_quiet(g, &st) != g)
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
            lp_cw_report(a->sync_w, "F", 1);
        if (!a->may_skip_userns) {
            lp_cw_report(wfd, &rep, sizeof rep);
            return;
        }
    } else {
        NS_OK(&rep, NT_USERNS);
        rep.in_userns = 1;
        char answer = 'S';
        if (a->parent_maps) {
            lp_cw_report(a->sync_w, "U", 1);
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
            /* Every sandbox's root is a pivot_root into such a tmpfs: tried
             * in a child's own mount namespace (it changes the root of all
             * in its namespace; a filter that refused it left "mountns yes"
             * and every start failing). Its errno is its exit status. */
            int perr = 0;
            pid_t g = sys_fork_quiet(); /* (raw: the host's malloc locks may be held in this copy) */
            if (g == 0) {
                char old[4200];
                size_t n = strlen(a->mnt_target);
                if (n + 5 > sizeof(old))
                    _exit(ENAMETOOLONG);
                memcpy(old, a->mnt_target, n);
                memcpy(old + n, "/old", 5);
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mkdir(old, 0700) < 0 || syscall(SYS_pivot_root, a->mnt_target, old) < 0)
                    _exit(errno > 0 && errno < 256 ? errno : EPERM);
                _exit(0);
            }
            int ws = 0;
            if (g < 0 || reap_quiet(g, &ws) != g)
                perr = errno;
            else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
                perr = WIFEXITED(ws) ? WEXITSTATUS(ws) : EINTR;
            if (perr)
                NS_FAIL(&rep, NT_MOUNTNS, OP_PIVOT_ROOT, perr);
            else
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
    lp_cw_report(wfd, &rep, sizeof rep);
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
    if (pu_read_small("/proc/sys/user/max_user_namespaces", v, sizeof v) == 0) {
        max_ns = strtol(v, NULL, 10);
        lp_bappend(d->text, "; user.max_user_namespaces = %ld", max_ns);
    }
    long clone_ok = -1;
    if (pu_read_small("/proc/sys/kernel/unprivileged_userns_clone", v, sizeof v) == 0) {
        clone_ok = strtol(v, NULL, 10);
        lp_bappend(d->text, "; kernel.unprivileged_userns_clone = %ld", clone_ok);
    }
    long aa = -1;
    if (pu_read_small("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v, sizeof v) == 0) {
        aa = strtol(v, NULL, 10);
        lp_bappend(d->text, "; kernel.apparmor_restrict_unprivileged_userns = %ld", aa);
    }
    lp_outer_seccomp_note(st, d->text);

    if (max_ns == 0)
        lp_bappend(d->hint, "sysctl user.max_user_namespaces=15000");
    else if (err == ENOSPC)
        lp_bappend(d->hint, "the user.max_user_namespaces limit (%ld) is used up: raise it "
                   "(sysctl user.max_user_namespaces=N) or find who holds them", max_ns);
    else if (err == EUSERS)
        lp_bappend(d->hint, "user namespaces are nested 32 deep already: run the host program "
                   "less deeply nested");
    else if (!is_root && clone_ok == 0)
        lp_bappend(d->hint, "sysctl kernel.unprivileged_userns_clone=1");
    else if (!is_root && aa == 1)
        lp_bappend(d->hint, "allow user namespaces for this program with an AppArmor profile "
                   "granting 'userns,', or sysctl kernel.apparmor_restrict_unprivileged_userns=0");
    else if (st->seccomp_mode == 2)
        lp_bappend(d->hint, "the outer seccomp profile (container runtime) denies "
                   "unshare/clone(CLONE_NEWUSER): allow it, or run the sandbox at the process "
                   "level");
    else
        lp_bappend(d->hint, "run where user namespaces are allowed (not in a chroot, not under a "
                   "restricting LSM or seccomp profile)");
}

struct ns_outcome {
    bool ran;                /* a report arrived */
    bool timed_out;          /* the child did not report within the deadline */
    bool transient;          /* it failed for want of descriptors, memory or processes (pu_short_of) */
    char fail[REASON_MAX];   /* why no report */
    struct ns_report rep;
    bool parent_map_tried;
    int parent_map_err;      /* errno of writing the range map, 0 = ok */
    const char *parent_map_file;
};

static void ns_run(bool is_root, bool may_skip_userns, int deadline_ms, struct ns_outcome *o) {
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
            o->transient = pu_short_of(errno);
            snprintf(o->fail, sizeof o->fail, "pipe2: " EFMT, EARG(errno));
            goto out;
        }
        a.sync_w = c2p[1];
        a.sync_r = p2c[0];
    }

    uint64_t deadline = pu_deadline_after_ms(deadline_ms);
    struct child c;
    /* The child must not keep the parent's ends: close them there. c2p[0]
     * and p2c[1] are CLOEXEC but fork keeps them, so the child closes
     * p2c[1] (so that a dead parent gives it EOF) via extra_close. */
    int r = lp_child_start(&c, ns_child, &a, p2c[1]);
    if (r < 0) {
        o->transient = pu_short_of(-r);
        snprintf(o->fail, sizeof o->fail, "fork: " EFMT, EARG(-r));
        goto out;
    }
    if (a.parent_maps) {
        close(c2p[1]);
        c2p[1] = -1;
        close(p2c[0]);
        p2c[0] = -1;
        char got = 0;
        ssize_t n = lp_read_deadline(c2p[0], &got, 1, deadline);
        if (n == 1 && got == 'U') {
            char path[64], map[64];
            snprintf(map, sizeof map, "0 %u %u\n", PROBE_RANGE_START, PROBE_RANGE_COUNT);
            o->parent_map_tried = true;
            snprintf(path, sizeof path, "/proc/%d/gid_map", (int)c.p.pid);
            int e = lp_write_existing(path, map);
            o->parent_map_file = "gid_map";
            if (e == 0) {
                snprintf(path, sizeof path, "/proc/%d/uid_map", (int)c.p.pid);
                e = lp_write_existing(path, map);
                o->parent_map_file = "uid_map";
            }
            o->parent_map_err = -e;
            lp_cw_report(p2c[1], e == 0 ? "M" : "S", 1);
        }
        close(p2c[1]);
        p2c[1] = -1;
    }
    ssize_t n = lp_read_deadline(c.rfd, &o->rep, sizeof o->rep, deadline);
    bool killed = false;
    bool reaped = lp_child_finish(&c, deadline, &killed);
    if (n == (ssize_t)sizeof o->rep && o->rep.magic == REPORT_MAGIC) {
        o->ran = true;
        for (int t = 0; t < NT__N; t++)
            if (o->rep.r[t].state == 2 && pu_short_of(o->rep.r[t].err))
                o->transient = true;
    } else if (n == -ETIMEDOUT || killed) {
        o->timed_out = true;
        snprintf(o->fail, sizeof o->fail,
                 "the namespace probe child did not report within %d ms (killed%s)",
                 deadline_ms, reaped ? " and reaped" : "; it did not die within the grace");
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
        lp_bappend(buf, "%s failed: " EFMT, op, EARG(r->err));
    else
        lp_bappend(buf, "%s", op);
}

void lp_probe_namespaces(fy_caps *c, bool is_root, bool has_sys_admin,
                         const struct self_status *st) {
    struct ns_outcome o;
    for (int t = 0; t < 2; t++) {
        ns_run(is_root, is_root && has_sys_admin, lp_try_deadline_ms(NS_DEADLINE_MS, t), &o);
        if (!o.timed_out && !o.transient)
            break;
    }
    /* (a namespace "missing" because this process was out of descriptors
     * at that moment, saved, ran later runs of a policy that accepts the
     * process level without namespaces) */
    if (o.timed_out || o.transient)
        c->inconclusive = true;
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
        lp_bappend(reason, "user namespaces denied: ");
        ns_fmt_fail(&rep->r[NT_USERNS], reason);
        lp_bappend(reason, "%s", diag.text);
        caps_set(c, FY_CAP_USERNS, false, 0, "%s", reason);
        caps_set_hint(c, FY_CAP_USERNS, "%s", diag.hint);
    } else if (rep->r[NT_MAP].state != 1) {
        lp_bappend(reason, "user namespace created, but mapping ids failed: ");
        ns_fmt_fail(&rep->r[NT_MAP], reason);
        int e = rep->r[NT_MAP].err;
        if ((e == EACCES || e == EPERM) && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
            lp_bappend(reason, " (this process is not dumpable, so its /proc files belong to "
                       "root)");
        if (o.parent_map_tried && o.parent_map_err)
            lp_bappend(reason, "; the root parent could not write %s either: " EFMT,
                       o.parent_map_file, EARG(o.parent_map_err));
        lp_outer_seccomp_note(st, reason);
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
    if (!is_root && geteuid() == 0) {
        /* (uid 0 without CAP_SYS_ADMIN, a container's root: it is mapped
         * as an unprivileged caller is, its own uid, which is 0) */
        caps_set(c, FY_CAP_UID_RANGE, false, 0,
                 "uid 0 without CAP_SYS_ADMIN: run as an unprivileged caller, whose own uid is mapped: the "
                 "workload is host uid 0 (no capability, but the owner of root's files in its binds)");
        caps_set_hint(c, FY_CAP_UID_RANGE, "give the host CAP_SYS_ADMIN (root with its full capability set) "
                      "to map workloads to an unprivileged host id range, or run it as an unprivileged user");
    } else if (!is_root) {
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
            lp_bappend(r2, "root could not write %s \"0 %u %u\" for a child user namespace: " EFMT,
                       o.parent_map_file, PROBE_RANGE_START, PROBE_RANGE_COUNT,
                       EARG(o.parent_map_err));
        else if (rep->map_by_parent)
            ns_fmt_fail(&rep->r[NT_MAP], r2);
        else
            lp_bappend(r2, "the child's user namespace was not mapped by the root parent");
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
                         "unshare(CLONE_NEWNS), / made rprivate, a tmpfs mounted on %s and pivot_root into it, %s",
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
            lp_bappend(why, "needs a user namespace (not root): %s", reason);
            caps_set(c, ns_caps[i].cap, false, 0, "%s", why);
            caps_set_hint(c, ns_caps[i].cap, "%s", diag.hint);
            continue;
        }
        if (r->state == 0) {
            if (ns_caps[i].t == NT_MOUNTAPI)
                lp_bappend(why, "not tried: the mount namespace failed: ");
            else
                lp_bappend(why, "not tried");
            if (ns_caps[i].t == NT_MOUNTAPI)
                ns_fmt_fail(&rep->r[NT_MOUNTNS], why);
            caps_set(c, ns_caps[i].cap, false, 0, "%s", why);
            continue;
        }
        lp_bappend(why, "%s: ", ns_caps[i].what);
        ns_fmt_fail(r, why);
        bool stripped = rep->in_userns && (r->err == EPERM || r->err == EACCES);
        if (stripped)
            lp_bappend(why, " (the user namespace was created but its capabilities are restricted: "
                       "AppArmor userns restriction, an outer seccomp filter or locked mounts?)");
        else if (r->err == ENOSYS)
            lp_bappend(why, " (the kernel lacks it)");
        else if (r->err == EINVAL && r->op >= OP_FSOPEN && r->op <= OP_MOUNT_SETATTR)
            lp_bappend(why, " (kernel too old for this part of the mount API?)");
        lp_outer_seccomp_note(st, why);
        caps_set(c, ns_caps[i].cap, false, 0, "%s", why);
        if (stripped)
            caps_set_hint(c, ns_caps[i].cap, "allow full user namespaces for this program "
                          "(AppArmor profile with 'userns,', outer seccomp/container profile)");
        else if (r->err == ENOSYS || r->err == EINVAL)
            caps_set_hint(c, ns_caps[i].cap, "a newer kernel (or one built with this namespace "
                          "type)");
    }
}
