/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ONLY code that runs between clone and exec.
 *
 * It runs in a child cloned from a possibly multi-threaded host: other
 * threads' locks are frozen in their copies, so nothing here may allocate,
 * use stdio, take a lock, call into NSS or dlopen, format with printf, or use
 * glibc's set*id wrappers (they broadcast to threads that do not exist in the
 * child). It interprets the plan built by linux-plan.c with raw system calls
 * and reports failures as fixed-size {step, errno} records.
 *
 * Normally the cloned child shares the host's memory for a moment only:
 * linux_exec_init executes forgeyard-init (this same file, built as a
 * program of its own, linux-init-main.c) from a sealed memfd, and
 * linux_child_main runs there on the packed plan. Where that program
 * cannot be executed, linux_child_main runs in a copy of the host instead.
 *
 * Process layout inside the new pid namespace:
 *   pid 1  linux_child_main: builds the sandbox, releases the workload,
 *          then stays as the minimal init that reaps, forwards the
 *          library's signals to the whole tree, and ends the tree when the
 *          workload exits;
 *   pid 2  the workload, forked first (early_workload): makes the network
 *          namespace and loads its seccomp filter while init builds the
 *          filesystem, waits for init's go-ahead, hardens itself (cgroups,
 *          rlimits, Landlock, capabilities, no_new_privs) and executes the
 *          command. (Without namespaces init forks it at the end.) */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux-plan.h"
#include "linux-syscall.h"

#ifndef SECBIT_NOROOT
#  define SECBIT_NOROOT (1 << 0)
#  define SECBIT_NOROOT_LOCKED (1 << 1)
#  define SECBIT_NO_SETUID_FIXUP (1 << 2)
#  define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#  define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#  define SECBIT_NO_CAP_AMBIENT_RAISE (1 << 6)
#  define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1 << 7)
#endif
#ifndef PR_CAP_AMBIENT
#  define PR_CAP_AMBIENT 47
#  define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#define FS_FILE_RIGHTS (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
                        (1ULL << 14) /* TRUNCATE */ | (1ULL << 15) /* IOCTL_DEV */)

struct ll_attr { /* struct landlock_ruleset_attr as of ABI 6 */
    uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_net_port { /* struct landlock_net_port_attr (ABI 4) */
    uint64_t allowed_access, port;
};
#define LL_RULE_NET_PORT 2
#define LL_NET_CONNECT_TCP (1ULL << 1)

/* ---- tiny async-signal-safe helpers ---- */

static uint64_t now_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void send_msg(int fd, uint32_t type, uint32_t step, int err, uint32_t aux, uint64_t value) {
    struct child_msg m = {type, step, err, aux, value};
    ssize_t r;
    do
        r = write(fd, &m, sizeof(m));
    while (r < 0 && errno == EINTR);
}

/* Reports that setup step failed (err) and exits. op: the plan's mount
 * operation that failed, whose paths the host names in the result
 * (CM_ERROR's aux is op + 1), or (size_t)-1 for none (aux 0: die()). */
__attribute__((noreturn)) static void die_op(int status_fd, uint32_t step, int err, size_t op) {
    send_msg(status_fd, CM_ERROR, step, err ? err : EIO, (uint32_t)(op + 1), 0);
    syscall(SYS_exit_group, 127);
    __builtin_unreachable();
}

__attribute__((noreturn)) static void die(int status_fd, uint32_t step, int err) {
    die_op(status_fd, step, err, (size_t)-1);
}

/* Tests only (plan->fault_step is 0 otherwise): fail the nth occurrence of
 * a setup step as if the kernel had refused it, to prove that every failure
 * is typed and leaves nothing behind. The counter lives in our own copy. */
#define FAULT(a, step)                                                                            \
    do {                                                                                          \
        if ((a)->plan->fault_step == (step) &&                                                    \
            ++((struct child_args *)(a))->fault_count >= (a)->plan->fault_nth)                    \
            die((a)->status_fd, (step), ECANCELED);                                               \
    } while (0)

/* Qualification only: a controlled delay inside one stage. */
static void delay_in(const struct linux_plan *pl, uint32_t stage) {
    if (pl->delay_stage != stage || !pl->delay_usec)
        return;
    struct timespec ts = {(time_t)(pl->delay_usec / 1000000u), (long)(pl->delay_usec % 1000000u) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static size_t slen(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* Zeroes n bytes in a way the compiler cannot drop as a dead store. */
static void wipe(void *p, size_t n) {
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

/* Writes the decimal form of v into buf; returns the end. */
static char *put_uint(char *buf, unsigned long v) {
    char tmp[24];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 23);
    while (n)
        *buf++ = tmp[--n];
    *buf = '\0';
    return buf;
}

/* ---- paths in the filesystem being built ---- */

/* Where the plan's destinations are resolved. Before the pivot (and at the
 * process level, which has none): host paths as they are, never through a
 * magic link. After it: in the new root (RESOLVE_IN_ROOT), so that a
 * symbolic link the new root holds (an image's "etc -> /x", "..", a link a
 * workload left in a host-backed directory) resolves below the new root,
 * never into the old root, which is mounted under a name no link can know
 * (oldroot_path, random per attempt) and is never reached through
 * /proc/self/fd (no magic links). */
static int fs_root = AT_FDCWD;
static uint64_t fs_resolve = RESOLVE_NO_MAGICLINKS;
static char oldroot_path[32] = "/.oldroot"; /* then "/.oldroot-" and 16 random hex digits */

/* path (absolute) opened O_PATH | extra where the filesystem is built: an fd or -errno. */
static int fs_open(const char *path, int extra) {
    struct open_how how = {.flags = (uint64_t)(O_PATH | O_CLOEXEC | extra), .resolve = fs_resolve};
    int fd = sys_openat2(fs_root, path, &how, sizeof(how));
    return fd < 0 ? -errno : fd;
}

/* fd's magic link in the old root's /proc, for mount(2), which takes paths:
 * the target is the fd's own inode, whatever its path now resolves to. */
static void fd_link(char link[64], int fd) {
    size_t n = slen(oldroot_path);
    memcpy(link, oldroot_path, n);
    memcpy(link + n, "/proc/self/fd/", 15);
    put_uint(link + n + 14, (unsigned long)fd);
}

/* The file systems this attempt made itself, by device: the new root (the
 * fresh tmpfs, an image's overlay, whose directories show the overlay's
 * device) and each tmpfs, proc and devpts mounted on the way. Only there
 * does init make what a mount point or a planned file needs: a directory
 * reached in a host-backed mount (a workspace bind, any bind, an action's
 * overlay whose upper is the host's build directory), say through an
 * image's "run -> /work/build", is the host's, and what init made there
 * (as the range's root) would be left behind. Before the pivot, and at the
 * process level, paths are the host's as planned. A table too small to
 * hold one more is fail-closed: nothing is made in what it misses. */
static uint64_t own_dev[32];
static size_t n_own_dev;

static void own_fs_add(int fd) {
    struct stat st;
    if (n_own_dev < sizeof(own_dev) / sizeof(own_dev[0]) && fstat(fd, &st) == 0)
        own_dev[n_own_dev++] = (uint64_t)st.st_dev;
}

/* Whether init may make an entry in the directory dir (0), or -EXDEV. */
static int may_make_in(int dir) {
    if (fs_root == AT_FDCWD)
        return 0;
    struct stat st;
    if (fstat(dir, &st) < 0)
        return -errno;
    for (size_t i = 0; i < n_own_dev; i++)
        if (own_dev[i] == (uint64_t)st.st_dev)
            return 0;
    return -EXDEV;
}

/* mkdir -p, as an fd: path's directory opened O_PATH, every missing
 * component made with mode (existing ones are fine), only in a file system
 * of the attempt's own (may_make_in: else EXDEV). The parents of most
 * paths exist already (the plan's paths share /etc, /dev, /work), so the
 * whole path is tried first and the walk goes up only as far as a parent
 * is missing. Each directory made is opened from its parent without
 * following anything: one swapped for a link fails (ENOTDIR). */
static int open_dir_p(const char *path, mode_t mode) {
    int fd = fs_open(path, O_DIRECTORY);
    if (fd != -ENOENT)
        return fd;
    char buf[4096];
    size_t n = slen(path);
    if (n >= sizeof(buf) || path[0] != '/')
        return n >= sizeof(buf) ? -ENAMETOOLONG : -EINVAL;
    memcpy(buf, path, n + 1);
    size_t have = n; /* buf[0, have) is the deepest prefix tried */
    for (;;) {
        while (have > 0 && buf[have - 1] != '/')
            have--;
        while (have > 1 && buf[have - 1] == '/')
            have--;
        char c = buf[have];
        buf[have] = '\0';
        fd = fs_open(have ? buf : "/", O_DIRECTORY);
        buf[have] = c;
        if (fd >= 0)
            break;
        if (fd != -ENOENT || have <= 1)
            return fd;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = have; i < n;) {
        while (i < n && buf[i] == '/')
            i++;
        size_t j = i;
        while (j < n && buf[j] != '/')
            j++;
        if (j == i)
            break;
        char c = buf[j];
        buf[j] = '\0';
        int e = may_make_in(fd);
        if (e < 0 || (syscall(SYS_mkdirat, fd, buf + i, mode) < 0 && errno != EEXIST)) {
            e = e < 0 ? -e : errno;
            close(fd);
            return -e;
        }
        int next = (int)syscall(SYS_openat, fd, buf + i, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
        e = errno;
        close(fd);
        if (next < 0)
            return -e;
        fd = next;
        buf[j] = c;
        i = j;
    }
    return fd;
}

static int mkdir_p(const char *path, mode_t mode) {
    int fd = open_dir_p(path, mode);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

/* path's directory (made 0755 where missing) as an fd; *leaf: its last
 * component (a name, never empty, "." or ".."). */
static int open_parent(const char *path, const char **leaf) {
    char buf[4096];
    size_t n = slen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n >= sizeof(buf))
        return -ENAMETOOLONG;
    size_t i = n;
    while (i > 0 && path[i - 1] != '/')
        i--;
    *leaf = path + i;
    if (i == n || i == 0 || (n - i == 1 && path[i] == '.') || (n - i == 2 && path[i] == '.' && path[i + 1] == '.') ||
        path[n] != '\0')
        return -EINVAL;
    memcpy(buf, path, i);
    buf[i] = '\0';
    return open_dir_p(buf, 0755);
}

static int write_all(int fd, const void *p, size_t len) {
    const char *c = p;
    while (len) {
        ssize_t w = write(fd, c, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Whether the directory dir is in the sandbox's own root file system (the
 * fresh tmpfs, an image's overlay with the attempt's upper): what is there
 * is the attempt's own to replace. An entry of a host-backed directory (a
 * bind) never is. */
static bool in_own_root(int dir) {
    struct stat a, b;
    return fs_root != AT_FDCWD && fstat(dir, &a) == 0 && fstat(fs_root, &b) == 0 && a.st_dev == b.st_dev;
}

/* A new file at dst with content. replace: what dst already is in the
 * sandbox's own root (an image's /etc/hosts, a link) is removed first,
 * never written through; else EEXIST. Never in a host-backed directory
 * (EXDEV). */
static int create_file(const char *dst, const void *content, size_t len, mode_t mode, uid_t uid, gid_t gid,
                       bool chown_it, bool replace) {
    const char *leaf;
    int dir = open_parent(dst, &leaf);
    if (dir < 0)
        return dir;
    int fd = may_make_in(dir);
    if (fd < 0) {
        close(dir);
        return fd;
    }
    fd = (int)syscall(SYS_openat, dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0 && errno == EEXIST && replace && in_own_root(dir) && syscall(SYS_unlinkat, dir, leaf, 0) == 0)
        fd = (int)syscall(SYS_openat, dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    int e = errno;
    close(dir);
    if (fd < 0)
        return -e;
    if ((content && len && write_all(fd, content, len) < 0) || (chown_it && fchown(fd, uid, gid) < 0) ||
        fchmod(fd, mode) < 0) {
        e = errno;
        close(fd);
        return -e;
    }
    close(fd);
    return 0;
}

/* mount(2) of a new file system on the directory dst (made where missing). */
static int mount_on(const char *dst, mode_t mode, const char *src, const char *type, unsigned long flags,
                    const void *data) {
    int fd = open_dir_p(dst, mode);
    if (fd < 0)
        return fd;
    char link[64];
    fd_link(link, fd);
    int r = mount(src, link, type, flags, data) < 0 ? -errno : 0;
    close(fd);
    /* (its root: a file system of the attempt's own) */
    if (r == 0 && (fd = fs_open(dst, O_DIRECTORY)) >= 0) {
        own_fs_add(fd);
        close(fd);
    }
    return r;
}

/* ---- filesystem ---- */

int lx_test_no_mount_api;

static bool have_mount_api = true;

#ifndef ST_VALID
#  define ST_VALID 0x0020 /* statfs's f_flags is filled (Linux 2.6.36) */
#endif

/* The flags a mount already has, as mount(2) flags, read on an O_PATH fd
 * of its root. A bind remount sets every per-mount flag at once: these must
 * be passed again, because in a user namespace the kernel locks the ones a
 * more privileged namespace set (any change: EPERM), and elsewhere leaving
 * one out would loosen the host's mount (a read-only or noexec submount
 * made writable or executable). Neither noatime nor relatime: strictatime,
 * said explicitly (a kernel may otherwise default to relatime). */
static int mount_flags_of(int fd, unsigned long *ret) {
    struct statfs sf; /* _FILE_OFFSET_BITS=64: the kernel's statfs64 where that differs */
#ifdef SYS_fstatfs64
    if (syscall(SYS_fstatfs64, fd, sizeof(sf), &sf) < 0)
#else
    if (syscall(SYS_fstatfs, fd, &sf) < 0)
#endif
        return -errno;
    unsigned long f = (unsigned long)sf.f_flags, m = 0;
    if (!(f & ST_VALID))
        return -ENOSYS;
    static const struct {
        unsigned long st, ms;
    } map[] = {{ST_RDONLY, MS_RDONLY},   {ST_NOSUID, MS_NOSUID},       {ST_NODEV, MS_NODEV},
               {ST_NOEXEC, MS_NOEXEC},   {ST_NOATIME, MS_NOATIME},     {ST_NODIRATIME, MS_NODIRATIME},
               {ST_RELATIME, MS_RELATIME}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (f & map[i].st)
            m |= map[i].ms;
    if (!(m & (MS_NOATIME | MS_RELATIME)))
        m |= MS_STRICTATIME;
    *ret = m;
    return 0;
}

/* The mount table read a byte at a time through a fixed buffer (no
 * allocation, no stdio): /proc/self/mountinfo of the old root's proc, which
 * lists this process's mount namespace with paths as seen from its root
 * (the new one: the process has pivoted). */
struct mountinfo {
    int fd;
    size_t pos, len;
    char buf[4096];
};

/* A byte, -1 at the end, -2 on an error (errno). */
static int mi_getc(struct mountinfo *m) {
    if (m->pos == m->len) {
        ssize_t n;
        do
            n = read(m->fd, m->buf, sizeof(m->buf));
        while (n < 0 && errno == EINTR);
        if (n <= 0)
            return n < 0 ? -2 : -1;
        m->pos = 0;
        m->len = (size_t)n;
    }
    return (unsigned char)m->buf[m->pos++];
}

/* The next line's mount point (the fifth field, its octal escapes such as
 * \040 decoded) into mp: 1, 0 at the end of the table, -errno. One longer
 * than mp is cut short (*cut set). A malformed line: -EIO. */
static int mi_next(struct mountinfo *m, char *mp, size_t size, bool *cut) {
    size_t field = 0, n = 0;
    bool any = false;
    int c;
    *cut = false;
    while ((c = mi_getc(m)) >= 0 && c != '\n') {
        any = true;
        if (c == ' ') {
            field++;
            continue;
        }
        if (field != 4)
            continue;
        if (c == '\\') {
            int v = 0;
            for (int i = 0; i < 3; i++) {
                int d = mi_getc(m);
                if (d == -2)
                    return -errno;
                if (d < '0' || d > '7')
                    return -EIO;
                v = v * 8 + (d - '0');
            }
            if (v == 0 || v > 0xff)
                return -EIO;
            c = v;
        }
        if (n + 1 < size)
            mp[n++] = (char)c;
        else
            *cut = true;
    }
    if (c == -2)
        return -errno;
    if (c == -1 && !any)
        return 0;
    if (c == -1 || field < 4 || n == 0)
        return -EIO;
    mp[n] = '\0';
    return 1;
}

/* Where mount point mp is relative to dst: 2 dst itself, 1 strictly below
 * it, 0 neither. (A cut mount point: its start.) */
static int mp_relation(const char *mp, const char *dst) {
    size_t n = slen(dst);
    while (n > 1 && dst[n - 1] == '/')
        n--;
    for (size_t i = 0; i < n; i++)
        if (mp[i] != dst[i])
            return 0;
    if (mp[n] == '\0')
        return 2;
    return (n == 1 || mp[n] == '/') ? 1 : 0;
}

/* One mount of the bind, by its mount point: opened without following any
 * symbolic link (ELOOP), then remounted through the fd's magic link with
 * want plus the flags it already has. */
static int remount_one(const char *mp, unsigned long want) {
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int fd = sys_openat2(AT_FDCWD, mp, &how, sizeof(how));
    if (fd < 0)
        return -errno;
    unsigned long keep = 0;
    int r = mount_flags_of(fd, &keep);
    if (r >= 0) {
        char link[64];
        fd_link(link, fd);
        if (mount(NULL, link, NULL, MS_REMOUNT | MS_BIND | want | keep, NULL) < 0)
            r = -errno;
    }
    close(fd);
    return r;
}

static int mi_open(struct mountinfo *m) {
    m->pos = m->len = 0;
    char path[64];
    size_t n = slen(oldroot_path);
    memcpy(path, oldroot_path, n);
    memcpy(path + n, "/proc/self/mountinfo", 21);
    m->fd = open(path, O_RDONLY | O_CLOEXEC);
    return m->fd < 0 ? -errno : 0;
}

/* The classic fallback's AT_RECURSIVE: a bind remount changes one mount, so
 * every mount that the recursive bind on dst just made is remounted, dst's
 * and each submount's, with want (and what each already has). Which mounts
 * are the bind's: the kernel appends a bind's copies to the namespace's
 * list, its top first, so they are the last line whose mount point is dst
 * and every line after it (anything else mounted on or below dst earlier is
 * covered by the bind and left alone). Closed: a line after that top that
 * is not below dst, a mount point too long to remount, or any failure
 * fails the bind, never a submount left as the host had it. */
static int remount_bind_tree(const char *dst, unsigned long want) {
    struct mountinfo m;
    char mp[4096];
    bool cut;
    long line = 0, top = -1;
    int r;
    if ((r = mi_open(&m)) < 0)
        return r;
    while ((r = mi_next(&m, mp, sizeof(mp), &cut)) > 0) {
        if (!cut && mp_relation(mp, dst) == 2)
            top = line;
        line++;
    }
    close(m.fd);
    if (r < 0)
        return r;
    if (top < 0)
        return -ENOENT; /* dst reached through a symbolic link, or no bind */
    if ((r = mi_open(&m)) < 0)
        return r;
    for (line = 0; (r = mi_next(&m, mp, sizeof(mp), &cut)) > 0; line++) {
        if (line < top)
            continue;
        int rel = mp_relation(mp, dst);
        if (cut || (line == top) != (rel == 2) || rel == 0) {
            r = cut ? -ENAMETOOLONG : -EIO;
            break;
        }
        if ((r = remount_one(mp, want)) < 0)
            break;
    }
    close(m.fd);
    return r;
}

/* A recursive bind of fd's tree on the target tfd (an O_PATH fd of dst). */
static int bind_from_fd(int fd, int tfd, const char *dst, uint32_t flags) {
    uint64_t attr = MOUNT_ATTR_NOSUID | ((flags & MF_DEVICE) ? 0 : MOUNT_ATTR_NODEV) |
                    ((flags & MF_READONLY) ? MOUNT_ATTR_RDONLY : 0);
    if (lx_test_no_mount_api)
        have_mount_api = false;
    if (have_mount_api) {
        int tree = sys_open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (tree < 0 && (errno == ENOSYS || errno == EPERM)) {
            have_mount_api = false;
        } else if (tree < 0) {
            return -errno;
        } else {
            /* (private: a clone of a shared mount would be its peer) */
            struct mount_attr ma = {.attr_set = attr, .propagation = MS_PRIVATE};
            int r = 0;
            if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0 ||
                sys_move_mount(tree, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                r = -errno;
            close(tree);
            return r;
        }
    }
    /* Classic fallback: bind through the fd's magic link, then remount
     * every mount of it (a bind remount changes one mount only). */
    char link[64], to[64];
    fd_link(link, fd);
    fd_link(to, tfd);
    if (mount(link, to, NULL, MS_BIND | MS_REC, NULL) < 0)
        return -errno;
    return remount_bind_tree(dst, MS_NOSUID | ((flags & MF_DEVICE) ? 0 : MS_NODEV) |
                                      ((flags & MF_READONLY) ? MS_RDONLY : 0));
}

/* The file dst on which a file is bound, as an O_PATH fd: an empty file
 * made where there is none, in a file system of the attempt's own only
 * (EXDEV in a host-backed directory); an existing file of a host-backed
 * directory as it is; in the sandbox's own root a link (an image's
 * /etc/resolv.conf -> ...) replaced by the file; a directory, or a link
 * elsewhere, refused. */
static int open_file_target(const char *dst) {
    const char *leaf;
    int dir = open_parent(dst, &leaf);
    if (dir < 0)
        return dir;
    int r = -ELOOP;
    for (int tries = 0; tries < 2; tries++) {
        int fd = (int)syscall(SYS_openat, dir, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode)) {
            close(dir);
            return fd;
        }
        if (fd >= 0) {
            r = S_ISDIR(st.st_mode) ? -EISDIR : -ELOOP;
            close(fd);
            if (r == -EISDIR || !in_own_root(dir) || syscall(SYS_unlinkat, dir, leaf, 0) < 0)
                break;
        } else if (errno != ENOENT) {
            r = -errno;
            break;
        }
        if ((r = may_make_in(dir)) < 0)
            break;
        int nf = (int)syscall(SYS_openat, dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (nf < 0 && errno != EEXIST) {
            r = -errno;
            break;
        }
        if (nf >= 0)
            close(nf);
    }
    close(dir);
    return r;
}

/* op's bind. tree >= 0: the host's clone of its source (linux-idmap.c:
 * walked by the host as we would, under the same rules, and already
 * read-only, nosuid, nodev as planned, idmapped when read-only), attached
 * as it is; else a clone of what our own walk of the old root finds. */
static int do_bind_tree(int oldroot, const struct mount_op *op, int tree) {
    /* A workspace path: no symlink anywhere, never outside the old root;
     * an operator-approved runtime path: resolved as the host would. */
    struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                           .resolve = (op->flags & MF_NOFOLLOW) ? LX_WORKSPACE_RESOLVE
                                                                : RESOLVE_NO_MAGICLINKS | RESOLVE_IN_ROOT};
    int fd = tree >= 0 ? tree : sys_openat2(oldroot, op->src, &how, sizeof(how));
    if (fd < 0) {
        if (errno == ENOENT && (op->flags & MF_OPTIONAL))
            return 0;
        return -errno;
    }
    int r = 0;
    struct stat st;
    if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
        r = S_ISLNK(st.st_mode) ? -ELOOP : -errno;
    } else if (!(op->flags & MF_DEVICE) &&
               ((op->flags & MF_DIR) ? !S_ISDIR(st.st_mode) : !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
        /* What is bound is what was planned, checked on the opened file (a
         * path swapped after fy_prepare is caught here): the workspace and
         * toolchains are directories, and only a leased device is anything
         * but a directory or a regular file (never a FIFO, a socket or a node). */
        r = -ENOTDIR;
    } else if ((op->flags & MF_DEVICE) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
        /* A device (a standard node, a lease) is a character or block node. */
        r = -ENODEV;
    } else {
        int tfd = S_ISDIR(st.st_mode) ? open_dir_p(op->dst, 0755) : open_file_target(op->dst);
        if (tfd < 0)
            r = tfd;
        else if (tree >= 0)
            r = sys_move_mount(tree, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0 ? -errno : 0;
        else
            r = bind_from_fd(fd, tfd, op->dst, op->flags);
        if (tfd >= 0)
            close(tfd);
    }
    if (fd != tree)
        close(fd);
    return r;
}

/* The host's socket, on which an MF_HOST_TREE bind's tree comes (linux-idmap.c). */
static int tree_sock = -1;

/* One MF_HOST_TREE bind's message from the host: its tree (>= 0), -1 for
 * "bind it yourself" ('P'), -ENOENT for "not there" ('N'), or -errno. */
static int receive_tree(void) {
    int tree = -1;
    size_t n;
    bool truncated;
    int got = lx_recv_fds(tree_sock, &tree, 1, &n, &truncated);
    if (got < 0)
        syscall(SYS_exit_group, 1); /* the host is gone: nothing to build for */
    if ((got == 'T' && n == 1 && !truncated) || ((got == 'P' || got == 'N') && n == 0 && !truncated))
        return got == 'T' ? tree : got == 'N' ? -ENOENT : -1;
    if (n)
        close(tree);
    return -EPROTO;
}

static int do_bind(int oldroot, const struct mount_op *op) {
    int tree = -1;
    if (op->flags & MF_HOST_TREE) {
        if ((tree = receive_tree()) < -1)
            return tree == -ENOENT && (op->flags & MF_OPTIONAL) ? 0 : tree; /* (an optional bind: skipped) */
        if (lx_test_no_mount_api && tree >= 0) {
            close(tree);
            tree = -1;
        }
    }
    int r = do_bind_tree(oldroot, op, tree);
    if (tree >= 0)
        close(tree);
    return r;
}

/* A directory of the old root, never through a symbolic link (ELOOP). */
static int open_host_dir(int oldroot, const char *rel) {
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = LX_WORKSPACE_RESOLVE};
    return sys_openat2(oldroot, rel, &how, sizeof(how));
}

/* An action's execution root: an overlay whose layers are named by the fds
 * opened here (the lower checked to be the inode the host walked), mounted
 * in this namespace only. redirect_dir and metacopy stay off (a renamed
 * merged directory is copied by the workload's tools: EXDEV), no index, no
 * xino; userxattr: whiteouts and opaque directories as user.overlay.*
 * xattrs, which overlayfs never lets the workload set. volatile: the upper
 * lives for one attempt, so overlayfs never syncs it (an unmount would
 * otherwise sync the whole upper file system). nosuid, nodev. */
static int do_overlay(int oldroot, const struct mount_op *op) {
    int lower = open_host_dir(oldroot, op->src), upper = -1, work = -1, fs = -1, mnt = -1, target = -1, r = 0;
    struct stat st;
    if (lower < 0 || fstat(lower, &st) < 0)
        r = -errno;
    else if ((uint64_t)st.st_dev != op->dev || (uint64_t)st.st_ino != op->ino)
        r = -ESTALE;
    else if ((upper = open_host_dir(oldroot, op->data)) < 0 || (work = open_host_dir(oldroot, op->aux)) < 0 ||
             (fs = sys_fsopen("overlay", FSOPEN_CLOEXEC)) < 0)
        r = -errno;
    else if (sys_fsconfig(fs, FSCONFIG_SET_FD, "lowerdir+", NULL, lower) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_FD, "upperdir", NULL, upper) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_FD, "workdir", NULL, work) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_STRING, "redirect_dir", "nofollow", 0) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_STRING, "metacopy", "off", 0) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_STRING, "index", "off", 0) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_STRING, "xino", "off", 0) < 0 ||
             sys_fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0 ||
             sys_fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
             (mnt = sys_fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0)
        r = -errno;
    else if ((target = open_dir_p(op->dst, 0755)) < 0)
        r = target;
    else if (sys_move_mount(mnt, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        r = -errno;
    int fds[] = {lower, upper, work, fs, mnt, target};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return r;
}

/* What is at dst (links followed in the new root), O_PATH: an fd, 0 when
 * there is nothing and op is optional, or -errno. */
static int open_existing(const struct mount_op *op) {
    int fd = fs_open(op->dst, 0);
    return fd == -ENOENT && (op->flags & MF_OPTIONAL) ? 0 : fd;
}

static int do_op(int oldroot, const struct linux_plan *pl, const struct mount_op *op) {
    int r, fd, dir;
    const char *leaf;
    char link[64], src[64];
    switch (op->kind) {
    case MK_DIR:
        return mkdir_p(op->dst, op->mode);
    case MK_FILE:
        return create_file(op->dst, op->src, op->src_len, op->mode, 0, 0, false, true);
    case MK_SYMLINK:
        if ((dir = open_parent(op->dst, &leaf)) < 0)
            return dir;
        if ((r = may_make_in(dir)) == 0)
            r = syscall(SYS_symlinkat, op->src, dir, leaf) < 0 ? -errno : 0;
        close(dir);
        return r;
    case MK_DEVPTS:
        return mount_on(op->dst, 0755, "devpts", "devpts", MS_NOSUID | MS_NOEXEC, op->data);
    case MK_TMPFS:
        return mount_on(op->dst, 0755, "tmpfs", "tmpfs",
                        MS_NOSUID | MS_NODEV | ((op->flags & MF_NOEXEC) ? MS_NOEXEC : 0), op->data);
    case MK_BIND:
        return do_bind(oldroot, op);
    case MK_OVERLAY:
        return do_overlay(oldroot, op);
    case MK_PROC:
        return mount_on(op->dst, 0555, "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    case MK_MASK: {
        struct stat st;
        if ((fd = open_existing(op)) <= 0)
            return fd;
        fd_link(link, fd);
        if (fstat(fd, &st) < 0)
            r = -errno;
        else if (S_ISDIR(st.st_mode))
            r = mount("tmpfs", link, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555,size=4k") < 0
                    ? -errno : 0;
        else if ((dir = fs_open("/dev/null", 0)) < 0)
            r = dir;
        else {
            fd_link(src, dir);
            r = mount(src, link, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
            close(dir);
        }
        close(fd);
        return r;
    }
    case MK_READONLY:
        if ((fd = open_existing(op)) <= 0)
            return fd;
        fd_link(link, fd);
        r = mount(link, link, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
        close(fd);
        /* (the remount is of the bind just made: dst again) */
        if (r < 0 || (fd = fs_open(op->dst, 0)) < 0)
            return r < 0 ? r : fd;
        fd_link(link, fd);
        r = mount(NULL, link, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0
                ? -errno : 0;
        close(fd);
        return r;
    }
    (void)pl;
    return -EINVAL;
}

static void write_secrets(const struct child_args *a) {
    const struct linux_plan *pl = a->plan;
    size_t total = 0;
    bool any = false;
    for (size_t i = 0; i < a->nsecrets; i++)
        if (a->secrets[i].file) {
            any = true;
            total += a->secrets[i].len + 4096;
        }
    if (!any)
        return;
    FAULT(a, FY_STEP_SECRET);
    int r;
    const char *dir = a->secrets_dir ? a->secrets_dir : "/run/secrets";
    if (!a->secrets_dir) {
        char opts[96] = "mode=0700,size=";
        char *e = put_uint(opts + slen(opts), (unsigned long)(total + 65536));
        memcpy(e, ",nr_inodes=1024", 16);
        if ((r = mount_on(dir, 0755, "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)) < 0)
            die_op(a->status_fd, FY_STEP_SECRET, -r, pl->nops); /* (the host names /run/secrets) */
    }
    size_t dlen = slen(dir);
    for (size_t i = 0; i < a->nsecrets; i++) {
        const struct child_secret *s = &a->secrets[i];
        if (!s->file)
            continue;
        char path[4096 + 128];
        size_t n = slen(s->file);
        if (n > 100 || dlen > 4096)
            die(a->status_fd, FY_STEP_SECRET, ENAMETOOLONG);
        memcpy(path, dir, dlen);
        path[dlen] = '/';
        memcpy(path + dlen + 1, s->file, n + 1);
        if ((r = create_file(path, s->value, s->len, 0400, pl->work_uid, pl->work_gid, true, false)) < 0)
            die(a->status_fd, FY_STEP_SECRET, -r);
    }
    /* (the directory as it is now: the tmpfs's root) */
    int dfd = fs_open(dir, O_DIRECTORY);
    if (dfd < 0)
        die(a->status_fd, FY_STEP_SECRET, -dfd);
    char link[64];
    fd_link(link, dfd);
    if (((pl->as_root || !pl->process_mode) &&
         syscall(SYS_fchownat, dfd, "", pl->work_uid, pl->work_gid, AT_EMPTY_PATH) < 0) ||
        chmod(pl->process_mode ? dir : link, 0500) < 0)
        die(a->status_fd, FY_STEP_SECRET, errno);
    close(dfd);
}

static void join_netns(int ws, int sfd);
static bool netns_to_host_early(const struct child_args *a);
/* Restricted: the network namespace, kept for the host (linux-net.c). */
static bool keep_netns;
static int netns_for_host = -1;
static int build_landlock(const struct linux_plan *pl, int sfd, const char *a_workdir_rule);
/* The ruleset init builds once the filesystem stands (the workload then
 * only restricts itself with it), or -1. */
static int prebuilt_ruleset = -1;

/* ws: the socket to the workload process, whose network namespace we join
 * before the old root goes (-1: none). */
static void build_filesystem(const struct child_args *a, int ws) {
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        die(sfd, FY_STEP_MOUNT, errno);
    /* The new root: a fresh tmpfs, mounted on /tmp of this private namespace
     * (the container level: an overlay of the image's layers whose upper is
     * in that tmpfs). */
    /* The layers are opened first (the tmpfs may hide where they are) and
     * named to overlayfs through their fds. */
    int lfd[LX_MAX_LAYERS];
    size_t nl = 0;
    char opts[4096] = "lowerdir=";
    char *o = opts + slen(opts);
    for (; pl->overlay_lowers && pl->overlay_lowers[nl] && nl < LX_MAX_LAYERS; nl++) {
        if ((lfd[nl] = open(pl->overlay_lowers[nl], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
            die(sfd, FY_STEP_MOUNT, errno);
        memcpy(o, "/proc/self/fd/", 14);
        o = put_uint(o + 14, (unsigned long)lfd[nl]);
        *o++ = ':';
    }
    int ufd = -1, wfd = -1;
    if (nl && pl->overlay_disk && a->workdir) {
        /* The upper on disk, in the attempt's directory (linux-upper.c),
         * opened (like the layers) before the tmpfs may hide it. */
        char p[4096];
        size_t wl = slen(a->workdir);
        if (wl + 8 > sizeof(p))
            die(sfd, FY_STEP_MOUNT, E2BIG);
        memcpy(p, a->workdir, wl);
        memcpy(p + wl, "/upper", 7);
        ufd = open(p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        memcpy(p + wl, "/work", 6);
        wfd = open(p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ufd < 0 || wfd < 0)
            die(sfd, FY_STEP_MOUNT, errno);
        static const char up[] = ",upperdir=/proc/self/fd/", wk[] = ",workdir=/proc/self/fd/", xa[] = ",userxattr";
        if ((size_t)(opts + sizeof(opts) - o) < sizeof(up) + sizeof(wk) + sizeof(xa) + 24)
            die(sfd, FY_STEP_MOUNT, E2BIG);
        o--;
        memcpy(o, up, sizeof(up) - 1);
        o = put_uint(o + sizeof(up) - 1, (unsigned long)ufd);
        memcpy(o, wk, sizeof(wk) - 1);
        o = put_uint(o + sizeof(wk) - 1, (unsigned long)wfd);
        memcpy(o, xa, sizeof(xa));
    } else if (nl) {
        static const char tail[] = ",upperdir=/tmp/.upper,workdir=/tmp/.work,userxattr";
        memcpy(o - 1, tail, sizeof(tail));
    }
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, pl->tmpfs_root_opts) < 0)
        die(sfd, FY_STEP_MOUNT, errno);
    bool nl_mounted = nl != 0; /* the root an overlay on the staging tmpfs */
    if (nl) {
        if ((!pl->overlay_disk && (mkdir("/tmp/.upper", 0755) < 0 || mkdir("/tmp/.work", 0700) < 0)) ||
            mkdir("/tmp/.root", 0755) < 0)
            die(sfd, FY_STEP_MOUNT, errno);
        if (mount("overlay", "/tmp/.root", "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
            die(sfd, FY_STEP_MOUNT, errno);
        while (nl > 0)
            close(lfd[--nl]);
        if (ufd >= 0)
            close(ufd);
        if (wfd >= 0)
            close(wfd);
        if (chdir("/tmp/.root") < 0)
            die(sfd, FY_STEP_PIVOT_ROOT, errno);
    } else if (chdir("/tmp") < 0) {
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    }
    /* The old root's mount point: a name nothing in the new root can hold a
     * link to (an image's layers and host-backed directories exist before
     * the attempt). */
    unsigned char rnd[8];
    if (syscall(SYS_getrandom, rnd, sizeof(rnd), 0) != (long)sizeof(rnd))
        die(sfd, FY_STEP_PIVOT_ROOT, EIO);
    memcpy(oldroot_path, "/.oldroot-", 10);
    for (size_t i = 0; i < sizeof(rnd); i++) {
        oldroot_path[10 + 2 * i] = "0123456789abcdef"[rnd[i] >> 4];
        oldroot_path[11 + 2 * i] = "0123456789abcdef"[rnd[i] & 15];
    }
    oldroot_path[10 + 2 * sizeof(rnd)] = '\0';
    if (mkdir(oldroot_path + 1, 0700) < 0)
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    delay_in(pl, FY_STAGE_FILESYSTEM);
    FAULT(a, FY_STEP_PIVOT_ROOT);
    if (syscall(SYS_pivot_root, ".", oldroot_path + 1) < 0 || chdir("/") < 0)
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    /* From here the plan's paths are resolved in the new root. */
    if ((fs_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    fs_resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    own_fs_add(fs_root);
    char oldtmp[48];
    memcpy(oldtmp, oldroot_path, slen(oldroot_path));
    memcpy(oldtmp + slen(oldroot_path), "/tmp", 5);
    /* The container level: the overlay (mounted on the staging tmpfs) is
     * the root now, but the staging tmpfs itself is still mounted on the
     * old root's /tmp, where it covers the host's /tmp: a bind source or
     * the source directory under /tmp would not be found (ENOENT). It goes
     * before any host path is resolved; the overlay keeps its own private
     * clone of the upper's mount (overlayfs takes one at mount time), so
     * the upper lives on, reachable by nothing else. What the old root
     * then shows is the host's own tree, read only through the plan's ops
     * and detached below, as without an image. */
    if (nl_mounted && umount2(oldtmp, MNT_DETACH) < 0)
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    int oldroot = open(oldroot_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (oldroot < 0)
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    for (size_t i = 0; i < pl->nops; i++) {
        FAULT(a, pl->ops[i].step);
        int r = do_op(oldroot, pl, &pl->ops[i]);
        if (r < 0)
            die_op(sfd, pl->ops[i].step, -r, i);
    }
    write_secrets(a);
    /* An image's working directory is made where the image lacks it, as
     * OCI runtimes do (in the attempt's own upper; a link of the image's is
     * followed inside the new root only). */
    /* Never in a host-backed directory (a WorkingDir under /work/build,
     * or through a link into it): the attempt fails, naming it. */
    if (pl->overlay_lowers && pl->workdir && mkdir_p(pl->workdir, 0755) == -EXDEV)
        die_op(sfd, FY_STEP_EXEC, EXDEV, pl->nops);
    close(oldroot);
    /* (The rules name paths of the filesystem just built.) */
    prebuilt_ruleset = build_landlock(pl, sfd, NULL);
    /* Unmounting waits for an RCU grace period, and one that overlaps the
     * creation of a network namespace (in the workload process) waits for
     * most of it: the namespace first, then the unmount. */
    keep_netns = pl->net_router && !netns_to_host_early(a) && !a->netns_host;
    if (ws >= 0)
        join_netns(ws, sfd);
    if (umount2(oldroot_path, MNT_DETACH) < 0 || rmdir(oldroot_path) < 0)
        die(sfd, FY_STEP_PIVOT_ROOT, errno);
    close(fs_root);
    fs_root = AT_FDCWD;
    fs_resolve = RESOLVE_NO_MAGICLINKS;
    /* A container's root stays writable: its upper is this attempt's own. */
    if (!pl->overlay_lowers && mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
        die(sfd, FY_STEP_MOUNT, errno);
}

#ifndef SIOCGSKNS
#  define SIOCGSKNS 0x894C
#endif

/* fd moved above the standard streams (0, 1, 2 are about to become the
 * workload's): the same fd if it already is, else a CLOEXEC copy (the
 * original closed), or -1 with errno. */
static int above_stdio(int fd) {
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* ---- passing fds between the sandbox's processes ---- */

/* One byte and up to n fds (SCM_RIGHTS); 0 or -1 (errno). The host sends
 * its go-aheads with it too (linux-spawn.c). */
int lx_send_fds(int sock, char byte, const int *fds, size_t n) {
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * (LX_GO_MAX_FDS + 1))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n > LX_GO_MAX_FDS + 1)
        n = LX_GO_MAX_FDS + 1;
    if (n) {
        msg.msg_control = u.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    }
    ssize_t r;
    do
        r = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r == 1)
        return 0;
    if (r >= 0)
        errno = EIO;
    return -1;
}

static int send_fd(int sock, int fd) { return lx_send_fds(sock, 'S', &fd, 1); }

int lx_recv_fds(int sock, int *fds, size_t max, size_t *n, bool *truncated) {
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * (LX_GO_MAX_FDS + 1))];
    } u;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);
    *n = 0;
    *truncated = false;
    ssize_t r;
    do
        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r != 1)
        return -1;
    *truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
    struct cmsghdr *c = msg.msg_controllen >= sizeof(struct cmsghdr) ? CMSG_FIRSTHDR(&msg) : NULL;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(0)) {
        size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int all[LX_GO_MAX_FDS + 1];
        if (got > LX_GO_MAX_FDS + 1)
            got = LX_GO_MAX_FDS + 1;
        memcpy(all, CMSG_DATA(c), got * sizeof(int));
        for (size_t i = 0; i < got; i++) {
            if (*n < max)
                fds[(*n)++] = all[i];
            else {
                close(all[i]);
                *truncated = true;
            }
        }
    }
    return (unsigned char)byte;
}

/* A go-ahead from the host (we exit if it failed or died: then nothing
 * comes and there is nothing to run): the number of fds it carried into
 * tasks (CLOEXEC). The second one carries the tasks files of our v1
 * cgroups, opened by the host (cg_open_tasks). */
static size_t receive_go(int sync_fd, int sfd, int *tasks) {
    size_t n;
    bool truncated;
    if (lx_recv_fds(sync_fd, tasks, LX_GO_MAX_FDS, &n, &truncated) < 0)
        syscall(SYS_exit_group, 1);
    if (truncated)
        die(sfd, FY_STEP_CGROUP, EMSGSIZE);
    return n;
}

/* Each process of ours moves itself into the v1 cgroups by writing "0" to
 * their tasks files: the one migration that does not wait for an RCU grace
 * period. What it forks from then on is born in them. */
static void enter_cgroups(int sfd, const int *tasks, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (write(tasks[i], "0", 1) != 1)
            die(sfd, FY_STEP_CGROUP, errno ? errno : EIO);
}

/* ---- the cgroup view ---- */

/* A read-only view of the attempt's own cgroups at /sys/fs/cgroup, as a
 * container runtime gives: runtimes size themselves from it (a JVM's heap
 * and processor count, libuv's constrained memory, Rust's available
 * parallelism), and without it a JVM under a 1 GiB limit takes a quarter of
 * the host's memory as its heap and is killed. Mounted by init after it
 * entered its cgroups and made its cgroup namespace, so each mount's root
 * is the attempt's own cgroup: nothing above or beside it is visible. Only
 * hierarchies where the attempt has a cgroup of its own are mounted (the v1
 * ones init's entering moved it in, the v2 one it was cloned into), never
 * the host's. Best effort: a view the kernel refuses is left out, never
 * half made. */
#define CGV_ROOT "/sys/fs/cgroup"
#define CGV_TEXT 2048

static size_t read_self_cgroup(char *buf, size_t len) {
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    while (fd >= 0 && n < len - 1) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
    buf[n] = '\0';
    return n;
}

/* The first c in [p, p + len), or NULL (forgeyard-init has no memchr). */
static const char *find_char(const char *p, char c, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (p[i] == c)
            return p + i;
    return NULL;
}

/* Whether the cgroup path [p, e) is one of an attempt's (or a pre-started
 * shell's): its last component is forgeyard-<pid>-<random> (cg_new_name in
 * linux-cgroup.c). The host's cgroups above it never are, and neither is a
 * hierarchy the attempt has no cgroup in (its path is the host's). */
static bool own_cgroup(const char *p, const char *e) {
    const char *base = p;
    for (const char *q = p; q < e; q++)
        if (*q == '/')
            base = q + 1;
    return e - base > 10 && memcmp(base, "forgeyard-", 10) == 0;
}

static bool cgroup_view(const struct linux_plan *pl, const char *after) {
    const unsigned long fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    bool v2 = pl->cg_view_v2;
    /* The v1 hierarchies where we are in a cgroup of our own: "ID:CONTROLLERS:PATH"
     * (a claimed pre-started shell joined them before its claim). */
    const char *ctl[8];
    size_t ctl_len[8], n = 0;
    for (const char *p = after; *p && n < 8;) {
        const char *e = p;
        while (*e && *e != '\n')
            e++;
        const char *c1 = find_char(p, ':', (size_t)(e - p));
        const char *c2 = c1 ? find_char(c1 + 1, ':', (size_t)(e - c1 - 1)) : NULL;
        if (c2 && c2 > c1 + 1 && memcmp(c1 + 1, "name=", 5) != 0 && own_cgroup(c2 + 1, e) &&
            (size_t)(c2 - c1 - 1) < 64) {
            ctl[n] = c1 + 1;
            ctl_len[n++] = (size_t)(c2 - c1 - 1);
        }
        p = *e ? e + 1 : e;
    }
    if (!n)
        return v2 && mount("cgroup2", CGV_ROOT, "cgroup2", fl | MS_RDONLY, NULL) == 0;
    if (mount("tmpfs", CGV_ROOT, "tmpfs", fl, "mode=0755,size=16k,nr_inodes=64") < 0)
        return false;
    char dir[96], opts[64], link[80];
    for (size_t i = 0; i < n; i++) {
        memcpy(opts, ctl[i], ctl_len[i]);
        opts[ctl_len[i]] = '\0';
        memcpy(dir, CGV_ROOT "/", sizeof(CGV_ROOT));
        memcpy(dir + sizeof(CGV_ROOT), opts, ctl_len[i] + 1);
        if (mkdir(dir, 0555) < 0 || mount("cgroup", dir, "cgroup", fl | MS_RDONLY, opts) < 0)
            continue;
        /* "cpu,cpuacct": a link by each controller's name, as hosts have. */
        for (const char *c = opts; find_char(opts, ',', ctl_len[i]) && *c;) {
            const char *ce = c;
            while (*ce && *ce != ',')
                ce++;
            memcpy(link, CGV_ROOT "/", sizeof(CGV_ROOT));
            memcpy(link + sizeof(CGV_ROOT), c, (size_t)(ce - c));
            link[sizeof(CGV_ROOT) + (size_t)(ce - c)] = '\0';
            if (symlink(opts, link) < 0) {
                /* (a missing name link: the directory is still there) */
            }
            c = *ce ? ce + 1 : ce;
        }
    }
    if (v2 && (mkdir(CGV_ROOT "/unified", 0555) < 0 ||
               mount("cgroup2", CGV_ROOT "/unified", "cgroup2", fl | MS_RDONLY, NULL) < 0))
        (void)rmdir(CGV_ROOT "/unified");
    if (mount(NULL, CGV_ROOT, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | fl, NULL) < 0) {
        (void)umount2(CGV_ROOT, MNT_DETACH); /* never a writable view */
        return false;
    }
    return true;
}

/* ---- the network namespace ---- */

/* The sandbox's network namespace, owned by its user namespace, with lo
 * up: an fd of it. The workload process makes it (early_workload), while
 * init builds the filesystem: creating one costs about as much as all the
 * mounts, and the two are independent. */
int lx_netns_new(void) {
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    int ns = -1;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) == 0)
            ns = ioctl(s, SIOCGSKNS, 0);
    }
    int e = errno;
    close(s);
    return ns >= 0 ? ns : -e;
}

static int make_netns(int sfd) {
    int ns = lx_netns_new();
    if (ns < 0)
        die(sfd, FY_STEP_NETNS, -ns);
    return ns;
}

/* Restricted, with a namespace of the workload process's making: it sends
 * the namespace to the host itself, at once (else init does, once the
 * filesystem stands). The same answer in both processes. */
static bool netns_to_host_early(const struct child_args *a) {
    return a->plan->net_router && a->plan->use_netns && !a->netns_made && !a->netns_host;
}

/* Init joins the workload's network namespace (so that /proc/1/net shows
 * the sandbox's, not the host's): the workload process sends it once made
 * (or no fd when the plan keeps the host's network). End of file: it died,
 * having reported why. */
static void join_netns(int ws, int sfd) {
    int ns = -1;
    size_t n;
    bool truncated;
    if (lx_recv_fds(ws, &ns, 1, &n, &truncated) < 0)
        syscall(SYS_exit_group, 127);
    if (n == 1) {
        if (setns(ns, CLONE_NEWNET) < 0)
            die(sfd, FY_STEP_NETNS, errno);
        if (keep_netns)
            netns_for_host = ns;
        else
            close(ns);
    }
}

/* ---- privileges ---- */

static int drop_bounding_set(void) {
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break; /* past CAP_LAST_CAP */
            return -errno;
        }
    return 0;
}

static int set_caps(uint64_t keep) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    data[0].effective = data[0].permitted = (uint32_t)keep;
    data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
    return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

/* The sandbox's share of the per-user kernel counts (linux-plan.h LX_UC_*),
 * written to our user namespace's own limits: /proc/sys/user is per user
 * namespace (whichever procfs it is read through), and its root may lower
 * them (CAP_SYS_RESOURCE in it). The workload cannot raise them: it holds
 * no capability, and /proc/sys is read-only inside. */
static int set_kernel_counts(const struct linux_plan *pl) {
    static const char *const path[LX_NUCOUNTS] = {
        [LX_UC_INOTIFY_INSTANCES] = "/proc/sys/user/max_inotify_instances",
        [LX_UC_INOTIFY_WATCHES] = "/proc/sys/user/max_inotify_watches",
        [LX_UC_FANOTIFY_GROUPS] = "/proc/sys/user/max_fanotify_groups",
        [LX_UC_FANOTIFY_MARKS] = "/proc/sys/user/max_fanotify_marks",
    };
    for (size_t i = 0; i < LX_NUCOUNTS; i++) {
        if (!pl->ucount_max[i])
            continue;
        char text[24];
        size_t n = (size_t)(put_uint(text, pl->ucount_max[i]) - text);
        int fd = open(path[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        int r = write_all(fd, text, n) < 0 ? -errno : 0;
        close(fd);
        if (r < 0)
            return r;
    }
    return 0;
}

static int set_ids(uint32_t uid, uint32_t gid, bool drop_groups) {
    if (drop_groups && syscall(SYS_setgroups, 0, NULL) < 0)
        return -errno;
    if (syscall(SYS_setresgid, gid, gid, gid) < 0)
        return -errno;
    if (syscall(SYS_setresuid, uid, uid, uid) < 0)
        return -errno;
    return 0;
}

static int load_filter(const void *bpf, uint16_t len, unsigned int flags) {
    struct sock_fprog prog = {.len = len, .filter = (struct sock_filter *)bpf};
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

/* A Landlock ruleset for the plan's rules (fd; -1 when Landlock is off). */
static int build_landlock(const struct linux_plan *pl, int sfd, const char *a_workdir_rule) {
    if (!pl->ll_handled)
        return -1;
    /* Restricted: TCP connect only to the plan's ports (ABI >= 4), a layer
     * under the router's rules that also covers the loopback. */
    struct ll_attr attr = {pl->ll_handled, pl->nll_tcp_ports ? LL_NET_CONNECT_TCP : 0, pl->ll_scoped};
    size_t size = pl->ll_abi >= 6 ? sizeof(attr) : pl->ll_abi >= 4 ? 16 : 8;
    int rs = sys_landlock_create_ruleset((const struct landlock_ruleset_attr *)&attr, size, 0);
    rs = above_stdio(rs);
    if (rs < 0)
        die(sfd, FY_STEP_LANDLOCK, errno);
    for (size_t i = 0; i < pl->nll_tcp_ports && i < LX_LL_MAX_TCP_PORTS; i++) {
        struct ll_net_port np = {LL_NET_CONNECT_TCP, pl->ll_tcp_ports[i]};
        if (sys_landlock_add_rule(rs, (enum landlock_rule_type)LL_RULE_NET_PORT, &np, 0) < 0)
            die(sfd, FY_STEP_LANDLOCK, errno);
    }
    for (size_t i = 0; i < pl->nll; i++) {
        /* (a workspace path: no symbolic link at any component, the last
         * included, ELOOP; Landlock needs 5.13, openat2 is 5.6) */
        struct open_how nl = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        int fd = pl->ll_rules[i].no_links ? sys_openat2(AT_FDCWD, pl->ll_rules[i].path, &nl, sizeof(nl))
                                          : open(pl->ll_rules[i].path, O_PATH | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT && !pl->ll_rules[i].no_links)
                continue;
            die(sfd, FY_STEP_LANDLOCK, errno);
        }
        struct stat st;
        uint64_t access = pl->ll_rules[i].access;
        if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
            access &= FS_FILE_RIGHTS;
        struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
        if (access && sys_landlock_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
            die(sfd, FY_STEP_LANDLOCK, errno);
        close(fd);
    }
    if (pl->process_mode && a_workdir_rule) {
        /* The attempt directory (HOME, TMPDIR, secrets): read-write. */
        int fd = open(a_workdir_rule, O_PATH | O_CLOEXEC | O_DIRECTORY);
        struct landlock_path_beneath_attr pb = {.allowed_access = pl->ll_handled & ~(1ULL << 15), .parent_fd = fd};
        if (fd < 0 || sys_landlock_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
            die(sfd, FY_STEP_LANDLOCK, errno);
        close(fd);
    }
    return rs;
}

static void apply_landlock(const struct linux_plan *pl, int sfd, const char *a_workdir_rule) {
    if (!pl->ll_handled)
        return;
    int rs = prebuilt_ruleset >= 0 ? prebuilt_ruleset : build_landlock(pl, sfd, a_workdir_rule);
    if (sys_landlock_restrict_self(rs, 0) < 0)
        die(sfd, FY_STEP_LANDLOCK, errno);
    close(rs);
    send_msg(sfd, CM_LANDLOCK, 0, 0, pl->ll_abi, 0);
}

/* Leaves the session keyring we inherited, the host program's (possession
 * grants its keys to any uid), for a fresh, empty one; failing that, no
 * start (a full key quota of the owner: EDQUOT). Only where no seccomp
 * filter refuses keyctl, add_key and request_key (pl->own_keyring): under
 * one the inherited keyring is out of reach already, and a keyring per
 * sandbox would count against the namespace owner's key quota (200 keys
 * by default), shared by every sandbox of a root caller's id range. */
static void own_session_keyring(int sfd) {
    int r = sys_own_session_keyring();
    if (r < 0)
        die(sfd, FY_STEP_SPAWN, -r);
}

/* ---- the workload (pid 2: the first process init forks) ---- */

/* The workload's seccomp filter (its listener, if any, to the library). */
static bool filter_loaded;
/* The plan's resource limits, before the seccomp filter: the profiles make
 * setting RLIMIT_CORE a no-op (linux-seccomp-profiles.c). */
static bool rlimits_set;
static void apply_rlimits(const struct child_args *a) {
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    rlimits_set = true;
    FAULT(a, FY_STEP_RLIMIT);
    for (size_t i = 0; i < pl->nrlimits; i++) {
        /* rlimits are not namespaced: a hard limit can only be lowered. A
         * request above the host's hard limit gets the host's (stricter). */
        struct rlimit cur, want = pl->rlimits[i].lim;
        if (getrlimit(pl->rlimits[i].resource, &cur) < 0)
            die(sfd, FY_STEP_RLIMIT, errno);
        if (cur.rlim_max != RLIM_INFINITY && (want.rlim_max == RLIM_INFINITY || want.rlim_max > cur.rlim_max))
            want.rlim_max = cur.rlim_max;
        if (want.rlim_cur == RLIM_INFINITY || want.rlim_cur > want.rlim_max)
            want.rlim_cur = want.rlim_max;
        if (setrlimit(pl->rlimits[i].resource, &want) < 0)
            die(sfd, FY_STEP_RLIMIT, errno);
    }
}

static void load_workload_filter(const struct child_args *a) {
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    if (!rlimits_set)
        apply_rlimits(a);
    filter_loaded = true;
    if (!pl->bpf)
        return;
    FAULT(a, FY_STEP_SECCOMP);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(sfd, FY_STEP_CAPS, errno);
    int fd = load_filter(pl->bpf, pl->bpf_len, pl->seccomp_notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0);
    if (fd < 0)
        die(sfd, FY_STEP_SECCOMP, errno);
    /* (no IPC namespace: the calls that would reach the host's refused) */
    if (pl->ipc_bpf && load_filter(pl->ipc_bpf, pl->ipc_bpf_len, 0) < 0)
        die(sfd, FY_STEP_SECCOMP, errno);
    /* (no pid namespace: other processes' limits and priorities refused) */
    if (pl->others_bpf && load_filter(pl->others_bpf, pl->others_bpf_len, 0) < 0)
        die(sfd, FY_STEP_SECCOMP, errno);
    if (pl->seccomp_notify) {
        if (send_fd(a->notify_sock, fd) < 0)
            die(sfd, FY_STEP_SECCOMP, errno);
        close(fd);
    }
}

/* The workload's first steps, which need nothing from init (the workload
 * process takes them before its go-ahead): its own session, its standard
 * streams, no other fd across exec, and the securebits, bounding and
 * ambient sets locked and emptied (its effective capabilities stay until
 * workload(): it still makes its cgroup namespace). */
static bool first_steps_taken;
static void workload_first_steps(const struct child_args *a) {
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    first_steps_taken = true;
    if (setsid() < 0)
        die(sfd, FY_STEP_SPAWN, errno);
    for (int i = 0; i < 3; i++)
        if (dup2(a->stdio[i], i) < 0)
            die(sfd, FY_STEP_SPAWN, errno);
    /* Nothing but 0, 1, 2 survives exec, whatever the host leaked. */
    if (sys_close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        die(sfd, FY_STEP_SPAWN, errno);
    /* Capabilities: lock the securebits, empty the bounding and ambient
     * sets (workload() switches ids, then empties every set explicitly). */
    /* (An unprivileged caller in process mode has no capabilities to drop
     * and may not touch securebits; no_new_privs below covers exec.) */
    bool privileged = !pl->process_mode || pl->as_root;
    FAULT(a, FY_STEP_CAPS);
    if (privileged &&
        prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                                     SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0) < 0)
        die(sfd, FY_STEP_CAPS, errno);
    int r;
    if (privileged && (r = drop_bounding_set()) < 0)
        die(sfd, FY_STEP_CAPS, -r);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
        die(sfd, FY_STEP_CAPS, errno);
}

/* A standard stream that is /dev/null (the host's, opened before the
 * sandbox's root) is opened again here, the sandbox's own: Landlock judges
 * a file opened again through /proc/self/fd (/dev/stdin, /dev/stdout) by
 * the path it was opened at, and the host's /dev lies outside every rule
 * (`cat /dev/stdin` failed with EACCES). Same access mode; kept as it was
 * when the sandbox has no /dev/null. */
#define NULL_RDEV ((dev_t)0x103) /* makedev(1, 3); (gnu_dev_major is a libc call unless inlined: not in the init) */
static void null_stdio_here(void) {
    for (int i = 0; i < 3; i++) {
        struct stat st;
        int fl = fcntl(i, F_GETFL);
        if (fl < 0 || fstat(i, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != NULL_RDEV)
            continue;
        int n = open("/dev/null", (fl & O_ACCMODE) | O_NOCTTY | O_CLOEXEC);
        if (n < 0)
            continue;
        struct stat nst;
        if (fstat(n, &nst) == 0 && S_ISCHR(nst.st_mode) && nst.st_rdev == NULL_RDEV)
            (void)dup2(n, i); /* (dup2's copy has no close-on-exec) */
        close(n);
    }
}

__attribute__((noreturn)) static void workload(const struct child_args *a) {
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    sigset_t none;
    sigemptyset(&none);
    if (!first_steps_taken)
        workload_first_steps(a);
    if (!rlimits_set)
        apply_rlimits(a);
    /* (a failure names the directory, not the command: op index nops is
     * the host's convention for it) The working directory is resolved
     * inside our root and never through a /proc magic link (an image's
     * WorkingDir of /proc/self/cwd, or a link to it, is refused, ELOOP),
     * where the kernel and the seccomp filter let openat2 through; chdir
     * otherwise, checked below. */
    const char *wd = pl->workdir ? pl->workdir : a->workdir;
    struct open_how wd_how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                              .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int wd_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int wd_fd = wd_root >= 0 ? sys_openat2(wd_root, wd, &wd_how, sizeof(wd_how)) : -1;
    int wd_err = errno;
    if (wd_root >= 0)
        close(wd_root);
    if (wd_fd < 0 && wd_root >= 0 && wd_err != ENOSYS)
        die_op(sfd, FY_STEP_EXEC, wd_err, pl->nops);
    if (wd_fd >= 0 ? fchdir(wd_fd) < 0 : chdir(wd) < 0)
        die_op(sfd, FY_STEP_EXEC, errno, pl->nops);
    if (wd_fd >= 0)
        close(wd_fd);
    null_stdio_here();
    /* Wherever it led (the seccomp filter answers openat2 ENOSYS, so chdir
     * resolved it, magic links included: /proc/self/fd/N of a directory
     * this process holds), the working directory must lie below our root:
     * the kernel's getcwd says "(unreachable)" for one that does not. */
    char wd_now[4096];
    long wd_len = syscall(SYS_getcwd, wd_now, sizeof(wd_now));
    if (wd_len <= 0 || wd_now[0] != '/')
        die_op(sfd, FY_STEP_EXEC, wd_len <= 0 ? errno : EXDEV, pl->nops);
    if (pl->cpus) {
        /* Make the CPU quota visible: nproc and sched_getaffinity show it. */
        cpu_set_t set, keep;
        CPU_ZERO(&keep);
        if (sched_getaffinity(0, sizeof(set), &set) == 0) {
            uint32_t n = 0;
            for (int cpu = 0; cpu < CPU_SETSIZE && n < pl->cpus; cpu++)
                if (CPU_ISSET(cpu, &set)) {
                    CPU_SET(cpu, &keep);
                    n++;
                }
            if (n && (uint32_t)CPU_COUNT(&set) > n)
                sched_setaffinity(0, sizeof(keep), &keep);
        }
    }
    int r;
    if ((r = set_ids(pl->work_uid, pl->work_gid, pl->drop_groups)) < 0)
        die(sfd, FY_STEP_UID_MAP, -r);
    if ((r = set_caps(0)) < 0)
        die(sfd, FY_STEP_CAPS, -r);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(sfd, FY_STEP_CAPS, errno);
    if (pl->ll_handled)
        FAULT(a, FY_STEP_LANDLOCK);
    apply_landlock(pl, sfd, a->workdir);
    if (!filter_loaded)
        load_workload_filter(a);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Execute: argv[0] as a path, or searched in the sandbox's PATH. */
    const char *cmd = pl->argv[0];
    delay_in(pl, FY_STAGE_EXEC);
    FAULT(a, FY_STEP_EXEC);
    send_msg(sfd, CM_EXEC, 0, 0, 0, now_usec());
    bool has_slash = false;
    for (const char *c = cmd; *c; c++)
        has_slash |= *c == '/';
    if (has_slash) {
        execve(cmd, pl->argv, a->envp);
        die(sfd, FY_STEP_EXEC, errno);
    }
    int saved = ENOENT;
    char buf[4096];
    size_t clen = slen(cmd);
    for (const char *p = pl->path_search; *p;) {
        const char *e = p;
        while (*e && *e != ':')
            e++;
        size_t dlen = (size_t)(e - p);
        if (dlen && dlen + 1 + clen < sizeof(buf)) {
            memcpy(buf, p, dlen);
            buf[dlen] = '/';
            memcpy(buf + dlen + 1, cmd, clen + 1);
            execve(buf, pl->argv, a->envp);
            if (errno != ENOENT && errno != ENOTDIR)
                saved = errno;
        }
        p = *e ? e + 1 : e;
    }
    die(sfd, FY_STEP_EXEC, saved);
}

/* A forked process starts on its parent's CPU, and an idle CPU does not
 * pull it over for milliseconds (newly idle CPUs balance only after long
 * idle spells): the workload process would wait for init to block, most of
 * a start. So it starts on another CPU of ours, if we have one, and takes
 * back the whole set (the workload's own) once its costly steps are done. */
static cpu_set_t our_cpus;
static bool have_cpus; /* (both set before the fork: the workload process has its own copy) */

static void keep_apart(pid_t w) {
    unsigned cpu = 0;
    if (!have_cpus || syscall(SYS_getcpu, &cpu, NULL, NULL) < 0 || cpu >= CPU_SETSIZE)
        return;
    cpu_set_t others = our_cpus;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) > 0)
        sched_setaffinity(w, sizeof(others), &others); /* a hint: no harm if refused */
}

static void come_together(int sfd) {
    if (have_cpus && sched_setaffinity(0, sizeof(our_cpus), &our_cpus) < 0)
        die(sfd, FY_STEP_SPAWN, errno);
}

/* The workload process with namespaces: forked by init before anything
 * else, it makes the network namespace (init joins it) and loads its
 * seccomp filter while init builds the filesystem, then waits for its
 * go-ahead: the tasks files of its v1 cgroups (it moves itself, as init
 * did) and the Landlock ruleset init built, and becomes the workload.
 * Init's death (end of file) ends it; so does the pid namespace's. */
__attribute__((noreturn)) static void early_workload(struct child_args *a, int ws) {
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        die(sfd, FY_STEP_SPAWN, errno);
    if (pl->own_keyring)
        own_session_keyring(sfd); /* (before any filter) */
    /* (A pre-started shell made it already: we are in it.) */
    int ns = pl->use_netns && !a->netns_made && !a->netns_host ? make_netns(sfd) : -1;
    /* Restricted: straight to the host too, which links it to the router
     * while init builds the filesystem (not after: the link is most of
     * the rest of a start). The workload still waits for its go-ahead,
     * which the host sends only once the link and the rules stand. */
    if (ns >= 0 && netns_to_host_early(a)) {
        if (lx_send_fds(a->sync_fd, 'N', &ns, 1) < 0)
            die(sfd, FY_STEP_NETNS, errno);
        close(a->sync_fd); /* (the host's socket is init's) */
        a->sync_fd = -1;
    }
    if (lx_send_fds(ws, 'N', &ns, ns >= 0) < 0)
        syscall(SYS_exit_group, 1);
    if (ns >= 0)
        close(ns);
    /* The filter allows every call left before the exec (the setup
     * sequence of workload() is part of each profile's contract). */
    load_workload_filter(a);
    come_together(sfd);
    if ((ws = above_stdio(ws)) < 0)
        die(sfd, FY_STEP_SPAWN, errno);
    workload_first_steps(a);
    int fds[LX_GO_MAX_FDS + 1];
    size_t n;
    bool truncated;
    int go = lx_recv_fds(ws, fds, LX_GO_MAX_FDS + 1, &n, &truncated);
    if (go < 0)
        syscall(SYS_exit_group, 1);
    if (truncated || (go == 'L' && !n))
        die(sfd, FY_STEP_CGROUP, EMSGSIZE);
    if (go == 'L')
        prebuilt_ruleset = fds[--n]; /* above 2: the standard streams hold those */
    enter_cgroups(sfd, fds, n);
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    close(ws);
    if ((pl->clone_flags & CLONE_NEWCGROUP) && unshare(CLONE_NEWCGROUP) < 0)
        die(sfd, FY_STEP_CGROUP, errno);
    workload(a);
}

/* ---- the process tree without a pid namespace (linux-process) ---- */

/* Reads the pids listed in /proc/<pid>/task/<pid>/children into out. */
static size_t read_children(pid_t pid, pid_t *out, size_t max) {
    char path[64] = "/proc/";
    char *e = put_uint(path + 6, (unsigned long)pid);
    memcpy(e, "/task/", 7);
    e = put_uint(e + 6, (unsigned long)pid);
    memcpy(e, "/children", 10);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    size_t k = 0;
    unsigned long v = 0;
    bool in = false;
    for (ssize_t i = 0; i < (n > 0 ? n : 0) && k < max; i++) {
        if (buf[i] >= '0' && buf[i] <= '9') {
            v = v * 10 + (unsigned long)(buf[i] - '0');
            in = true;
        } else if (in) {
            out[k++] = (pid_t)v;
            v = 0;
            in = false;
        }
    }
    if (in && k < max)
        out[k++] = (pid_t)v;
    return k;
}

/* Signals every descendant (breadth first, bounded). */
static void signal_descendants(int sig) {
    static pid_t queue[4096];
    size_t head = 0, tail = read_children(getpid(), queue, 4096);
    while (head < tail) {
        pid_t p = queue[head++];
        kill(p, sig);
        tail += read_children(p, queue + tail, 4096 - tail);
    }
}

/* Ends the whole tree: without a pid namespace there is no kill(-1); as a
 * child subreaper every orphan comes back to us, so kill and reap until no
 * child is left. */
static void end_tree(const struct linux_plan *pl) {
    if (!pl->process_mode) {
        kill(-1, SIGKILL);
        return;
    }
    for (int round = 0; round < 100000; round++) {
        signal_descendants(SIGKILL);
        int st;
        if (syscall(SYS_wait4, -1, &st, __WALL, NULL) < 0 && errno == ECHILD)
            return;
    }
}

/* ---- the sandbox's init (pid 1) ---- */

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};

/* Counting the tasks the sandbox created: the pid namespace's last
 * allocated pid (ns_last_pid, as its pid 1 reads it) only grows, until it
 * wraps at pid_max, after which allocation restarts at 300
 * (RESERVED_PIDS). Re-read on every wake-up (at least every 250 ms), so a
 * wrap is seen; the count is exact without wraps and close with them. */
struct task_count {
    int fd;
    long pid_max, prev;
    uint64_t total;
};

static long read_number(int fd) {
    char buf[24];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    long v = 0;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        v = v * 10 + (buf[i] - '0');
    return v;
}

static void count_tasks(struct task_count *tc) {
    long cur = tc->fd >= 0 ? read_number(tc->fd) : -1;
    if (cur <= 0)
        return;
    if (cur >= tc->prev)
        tc->total += (uint64_t)(cur - tc->prev);
    else if (tc->pid_max > tc->prev)
        tc->total += (uint64_t)(tc->pid_max - 1 - tc->prev) + (uint64_t)(cur >= 300 ? cur - 299 : 0);
    tc->prev = cur;
}

/* Whether the owner's pidfd (-1: none) says the host process exited. */
bool lx_owner_gone(int owner_pidfd) {
    if (owner_pidfd < 0)
        return false;
    struct pollfd p = {.fd = owner_pidfd, .events = POLLIN};
    struct timespec zero = {0, 0};
    return syscall(SYS_ppoll, &p, 1, &zero, NULL, 8) == 1;
}

__attribute__((noreturn)) static void init_loop(const struct child_args *a, pid_t work) {
    int sfd = a->status_fd;
    int sync_fd = a->sync_fd;
    const struct linux_plan *pl = a->plan; /* (not dumpable since the first go-ahead) */
    fcntl(sync_fd, F_SETFL, O_NONBLOCK);
    /* The first task counted is the workload (pid 1 before it is ours). */
    struct task_count tc = {-1, 0, work - 1, 0};
    if (!pl->process_mode) {
        int fd = open("/proc/sys/kernel/pid_max", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            tc.pid_max = read_number(fd);
            close(fd);
        }
        tc.fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
    }
    if (!pl->process_mode) {
        /* In process mode this is the library's own (host) identity and it
         * needs /proc to find the tree: it keeps no filter of its own. */
        drop_bounding_set();
        set_caps(1ULL << CAP_KILL);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (pl->init_bpf && load_filter(pl->init_bpf, pl->init_bpf_len, 0) < 0) {
            send_msg(sfd, CM_ERROR, FY_STEP_SECCOMP, errno, 0, 0);
            end_tree(pl);
            syscall(SYS_exit_group, 1);
        }
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    if (pl->process_mode)
        sigaddset(&set, FY_SIG_END_TREE);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&set, forwarded[i]);
    struct timespec tick = {0, 250 * 1000 * 1000};
    struct { uint64_t utime, stime, maxrss; } used = {0, 0, 0};
    /* The count so far goes to the host as it changes, at most every 250
     * ms: a tree killed from outside (a deadline past its grace, the pids
     * limit) sends no final count, and usage.processes was then unknown. */
    uint64_t told_total = 0, told_at = 0;
    for (;;) {
        siginfo_t si;
        int sig = sigtimedwait(&set, &si, &tick);
        if (sig == FY_SIG_END_TREE && si.si_pid == a->owner_pid) {
            /* Process mode's hard kill: nothing of the tree may survive. */
            end_tree(pl);
            syscall(SYS_exit_group, 1);
        }
        if (sig > 0 && sig != SIGCHLD && sig != FY_SIG_END_TREE &&
            (pl->process_mode ? si.si_pid == a->owner_pid : si.si_pid == 0)) {
            /* From the library (outside the namespace): to the whole tree. */
            if (pl->process_mode)
                signal_descendants(sig);
            else
                kill(-1, sig);
        }
        int st;
        pid_t p;
        struct rusage ru;
        count_tasks(&tc);
        if (tc.fd >= 0 && tc.total != told_total) {
            uint64_t now = now_usec();
            if (now - told_at >= 250000) {
                send_msg(sfd, CM_TASKS, 0, 0, 0, tc.total);
                told_total = tc.total;
                told_at = now;
            }
        }
        while ((p = (pid_t)syscall(SYS_wait4, -1, &st, WNOHANG | __WALL, &ru)) > 0) {
            /* What the reaped used: the host's own reaper may take pid 1
             * (a SIGCHLD set to SIG_IGN), and the kernel's figures with it. */
            used.utime += (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
            used.stime += (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
            if (ru.ru_maxrss > 0 && (uint64_t)ru.ru_maxrss > used.maxrss)
                used.maxrss = (uint64_t)ru.ru_maxrss;
            if (p == work) {
                count_tasks(&tc);
                if (tc.fd >= 0)
                    send_msg(sfd, CM_TASKS, 0, 0, 0, tc.total);
                send_msg(sfd, CM_RUSAGE, 0, 0, RU_USER_USEC, used.utime);
                send_msg(sfd, CM_RUSAGE, 0, 0, RU_SYSTEM_USEC, used.stime);
                send_msg(sfd, CM_RUSAGE, 0, 0, RU_MAXRSS_KIB, used.maxrss);
                send_msg(sfd, CM_EXIT, 0, 0, (uint32_t)st, now_usec());
                /* The workload is done: nothing it started may outlive it. */
                end_tree(pl);
                syscall(SYS_exit_group, 0);
            }
        }
        char c;
        /* The library's process is gone: end the sandbox with it. The end
         * of sync_fd says so only once every copy of the host's end is
         * closed, and a fork(2) of the host (a worker, a prefork server)
         * keeps one open for as long as it lives: the pidfd of the host
         * process itself is readable as soon as it exited. */
        if (read(sync_fd, &c, 1) == 0 || lx_owner_gone(a->owner_pidfd)) {
            end_tree(pl);
            syscall(SYS_exit_group, 1);
        }
    }
}

/* ---- forgeyard-init ---- */

#ifndef FY_FREESTANDING
#ifndef PR_CAP_AMBIENT_RAISE
#  define PR_CAP_AMBIENT_RAISE 2
#endif

#if defined(__SANITIZE_ADDRESS__)
#  define FY_NO_ASAN __attribute__((no_sanitize_address))
#else
#  define FY_NO_ASAN
#endif

/* Runs in the child of clone(CLONE_VM | CLONE_VFORK): on the host's
 * memory and stack while the host's thread waits, so it does nothing but
 * system calls, and execs or exits. Its ids are not mapped yet, so an exec
 * would drop its capabilities in the new user namespace: it keeps those of
 * e->ambient it holds as ambient ones (forgeyard-init takes its ids once
 * the host mapped them).
 * Not instrumented: ASan's shadow is shared with the host too, and
 * poisoning this frame there would leave stale poison below its stack. */
FY_NO_ASAN __attribute__((noreturn)) static void exec_init(const struct exec_init *e) {
    int err = 0;
    for (size_t i = 0; i < e->nkeep && !err; i++)
        if (e->keep[i] >= 0 && syscall(SYS_fcntl, e->keep[i], F_SETFD, 0) < 0)
            err = errno;
    /* The error pipe too: forgeyard-init reports there that it started. */
    if (!err && syscall(SYS_fcntl, e->err_fd, F_SETFD, 0) < 0)
        err = errno;
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (!err && syscall(SYS_capget, &hdr, data) < 0)
        err = errno;
    for (int i = 0; i < 2; i++)
        data[i].inheritable = data[i].permitted;
    if (!err && syscall(SYS_capset, &hdr, data) < 0)
        err = errno;
    for (int cap = 0; cap < 64 && !err; cap++) {
        bool held = data[cap / 32].permitted & (1u << (cap % 32));
        if (held && (e->ambient & (1ULL << cap)) && syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0 && errno != EINVAL)
            err = errno;
    }
    static char *const no_env[] = {NULL};
    if (!err) {
        syscall(SYS_execveat, e->init_fd, "", e->argv, no_env, AT_EMPTY_PATH);
        err = errno;
    }
    syscall(SYS_write, e->err_fd, &err, sizeof(err));
    syscall(SYS_exit_group, 125);
    __builtin_unreachable();
}

/* The child of CLONE_VM | CLONE_VFORK runs on our stack: it must never
 * return from the function that cloned (its return would overwrite the
 * return address we resume with), so the system call is inline, here. */
FY_NO_ASAN __attribute__((noinline)) pid_t linux_clone_exec_init(struct fy_clone_args *ca, struct exec_init *e) {
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)__NR_clone3), "D"(ca), "S"(sizeof(*ca))
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = __NR_clone3;
    register long x0 __asm__("x0") = (long)ca;
    register long x1 __asm__("x1") = (long)sizeof(*ca);
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
    ret = x0;
#else
    ret = -ENOSYS; /* forgeyard-init is not built here */
#endif
    e->used_clone3 = ret != -ENOSYS;
    if (ret == -ENOSYS) {
        /* No clone3 (an outer seccomp profile may refuse it, as container
         * runtimes' defaults did): clone(2), without the cgroup placement
         * and signal-handler reset only clone3 has. The pidfd goes through
         * the parent-tid argument. */
        unsigned long flags = (unsigned long)(ca->flags & ~(uint64_t)(FY_CLONE_INTO_CGROUP | FY_CLONE_CLEAR_SIGHAND));
        long ptid = (long)ca->pidfd;
#if defined(__x86_64__)
        register long r10 __asm__("r10") = 0;
        register long r8 __asm__("r8") = 0;
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"((long)__NR_clone), "D"(flags), "S"(0L), "d"(ptid), "r"(r10), "r"(r8)
                         : "rcx", "r11", "memory");
#elif defined(__aarch64__)
        register long y8 __asm__("x8") = __NR_clone;
        register long y0 __asm__("x0") = (long)flags;
        register long y1 __asm__("x1") = 0;
        register long y2 __asm__("x2") = ptid;
        register long y3 __asm__("x3") = 0;
        register long y4 __asm__("x4") = 0;
        __asm__ volatile("svc 0" : "+r"(y0) : "r"(y8), "r"(y1), "r"(y2), "r"(y3), "r"(y4) : "memory");
        ret = y0;
#endif
    }
    if (ret == 0)
        exec_init(e);
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return (pid_t)ret;
}
#endif

/* ---- entry ---- */

/* The child inherited every fd of the host process, CLOEXEC or not, and the
 * init never executes anything: keep exactly the fds the plan names (moved
 * above all of them, in ascending order) and close everything else. */
static void tidy_fds(struct child_args *a) {
    int *slots[] = {&a->sync_fd, &a->status_fd, &a->notify_sock, &a->stdio[0], &a->stdio[1], &a->stdio[2],
                    &a->owner_pidfd};
    int maxfd = 2;
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        if (*slots[i] > maxfd)
            maxfd = *slots[i];
    int next = maxfd + 1, first = -1, prev = -1;
    int kept[7];
    size_t nkept = 0;
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        if (*slots[i] < 0)
            continue;
        int nfd = fcntl(*slots[i], F_DUPFD_CLOEXEC, next);
        if (nfd < 0)
            syscall(SYS_exit_group, 126); /* cannot even report: the status fd may be the one failing */
        *slots[i] = nfd;
        next = nfd + 1;
        if (first < 0)
            first = nfd;
        kept[nkept++] = nfd;
    }
    sys_close_range(0, (unsigned)first - 1, 0);
    for (size_t i = 0; i < nkept; i++) {
        if (prev >= 0 && kept[i] > prev + 1)
            sys_close_range((unsigned)prev + 1, (unsigned)kept[i] - 1, 0);
        prev = kept[i];
    }
    sys_close_range((unsigned)prev + 1, ~0U, 0);
}

/* The workload's environment and the secrets' values, wiped from our
 * memory once the workload process has its own copy. */
static void wipe_workload_inputs(const struct child_args *a) {
    for (char **e = a->envp; e && *e; e++)
        wipe(*e, slen(*e));
    for (size_t i = 0; i < a->nsecrets; i++)
        wipe((void *)a->secrets[i].value, a->secrets[i].len);
}

void lx_default_signals(void) {
    /* Host signal handlers must never run here (clone3 cleared them where
     * CLONE_CLEAR_SIGHAND exists; this covers the fallback, and the
     * dispositions an exec keeps: ignored signals). Everything blocked. */
    for (int sig = 1; sig < 65; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        sigaction(sig, &sa, NULL);
    }
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
}

/* What the caller's process carries that no policy declares, and that
 * would follow every process of the sandbox through fork and exec, put
 * back before anything is forked here:
 * - a real-time policy or a raised priority (negative nice, the real-time
 *   I/O class): outside every CPU quota, and a v1 cpu cgroup refuses a
 *   real-time task (EINVAL); RLIMIT_RTPRIO and RLIMIT_NICE of 0 only stop
 *   the workload from raising them itself;
 * - the personality: address randomisation off, a 32-bit or 2.6 uname,
 *   personas the seccomp profiles never let the workload take;
 * - a negative oom_score_adj (-1000: a workload its memory cgroup's OOM
 *   killer passes over, stuck at its limit);
 * - the timer slack, THP turned off, KSM merging turned on.
 * A lowered priority (positive nice, an idle or batch policy, the idle I/O
 * class) and the CPU affinity stay: the host's to give, and none lets the
 * workload take more. */
#define FY_PR_SET_MEMORY_MERGE 67
#define FY_DEFAULT_TIMER_SLACK_NS 50000
#define FY_IOPRIO_WHO_PROCESS 1
#define FY_IOPRIO_CLASS_RT 1
int lx_reset_inherited(void) {
    long pol = syscall(SYS_sched_getscheduler, 0);
    long base = pol & ~(long)SCHED_RESET_ON_FORK;
    if (pol >= 0 && (base == SCHED_FIFO || base == SCHED_RR)) {
        struct sched_param sp = {0};
        if (syscall(SYS_sched_setscheduler, 0, SCHED_OTHER | (int)(pol & SCHED_RESET_ON_FORK), &sp) < 0)
            return -errno;
    }
    /* (the system call's 20 - nice) */
    if (syscall(SYS_getpriority, PRIO_PROCESS, 0) > 20 && syscall(SYS_setpriority, PRIO_PROCESS, 0, 0) < 0)
        return -errno;
    long io = syscall(SYS_ioprio_get, FY_IOPRIO_WHO_PROCESS, 0);
    if (io >= 0 && (io >> 13) == FY_IOPRIO_CLASS_RT && syscall(SYS_ioprio_set, FY_IOPRIO_WHO_PROCESS, 0, 0) < 0)
        return -errno;
    long per = syscall(SYS_personality, 0xffffffffUL);
    if (per > 0 && syscall(SYS_personality, 0UL) < 0)
        return -errno;
    int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        char v[16];
        ssize_t n = pread(fd, v, sizeof(v) - 1, 0);
        int e = n > 0 && v[0] == '-' && write(fd, "0", 1) != 1 ? errno : 0;
        close(fd);
        if (e)
            return -e;
    }
    (void)prctl(PR_SET_TIMERSLACK, FY_DEFAULT_TIMER_SLACK_NS, 0, 0, 0);
    (void)prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
    (void)prctl(FY_PR_SET_MEMORY_MERGE, 0, 0, 0, 0); /* (EINVAL before 6.4: nothing to undo) */
    return 0;
}

__attribute__((noreturn)) void linux_child_main(const struct child_args *args) {
    /* Our copy-on-write copy of the arguments: ours to renumber. */
    struct child_args copy = *args;
    struct child_args *a = &copy;
    tidy_fds(a);
    tree_sock = a->sync_fd;
    const struct linux_plan *pl = a->plan;
    int sfd = a->status_fd;
    delay_in(pl, STAGE_DELAY_INIT_ENTRY);
    /* The sandbox's own umask, never the host's (a daemon's 077 would make
     * the sandbox's /etc and /work unreadable to its workload) nor the one
     * a pre-started shell was made with: what the library creates gets the
     * modes it names, and the workload starts with the usual 022. */
    umask(022);
    /* (A pre-started shell did this before its claim, shell_main: nothing
     * of a claim changes it.) */
    int reset = a->prestarted ? 0 : lx_reset_inherited();
    if (reset < 0)
        die(sfd, FY_STEP_SPAWN, -reset);
    /* The root as our working directory, before anything is forked: we
     * were cloned with the host's, and pivot_root moves only a working
     * directory that is the old root. One anywhere else kept pointing into
     * the host's tree after the old root was detached, and a workload
     * reached it through /proc/self/cwd (an image's WorkingDir): the host's
     * whole mount tree by relative paths, its unix sockets under network
     * deny. */
    if (chdir("/") < 0)
        die(sfd, FY_STEP_SPAWN, errno);
    /* (A pre-started shell did this before its claim.) */
    if (!a->prestarted)
        lx_default_signals();
    /* With namespaces the workload process is forked first of all, as pid
     * 2 (early_workload): it makes the network namespace and loads its
     * seccomp filter, the two costliest steps of a start, while the host
     * maps our ids and makes our cgroups and while we build the
     * filesystem; then it waits for its go-ahead from us. It needs no
     * mapped ids for that: it holds every capability of our user
     * namespace. */
    int ws[2] = {-1, -1};
    pid_t w = -1;
    if (!pl->process_mode) {
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ws) < 0)
            die(sfd, FY_STEP_SPAWN, errno);
        have_cpus = sched_getaffinity(0, sizeof(our_cpus), &our_cpus) == 0;
        w = sys_fork();
        if (w < 0)
            die(sfd, FY_STEP_SPAWN, errno);
        if (w == 0) {
            close(ws[0]);
            early_workload(a, ws[1]);
        }
        close(ws[1]);
        keep_apart(w);
    }
    /* The first go-ahead: the library has written our id maps (a
     * pre-started shell had it before its claim). */
    int tasks[LX_GO_MAX_FDS + 1];
    if (!a->prestarted)
        receive_go(a->sync_fd, sfd, tasks);
    /* The process level's workload, forked at the end, inherits our
     * session keyring: a fresh one (the namespace levels' workload process
     * joined its own: early_workload). After the first go-ahead: a failure
     * before our ids are mapped would read as the host's failure to map
     * them. */
    if (pl->own_keyring && pl->process_mode)
        own_session_keyring(sfd);
    /* Not dumpable from here on (the host needed us dumpable to write our
     * id maps as a rootless caller): forgeyard-init's memory belongs to our
     * own user namespace, and the workload, once it runs, must never find
     * a moment to read it through /proc/1/mem or ptrace. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        die(sfd, FY_STEP_SPAWN, errno);
    int r;
    if (pl->process_mode) {
        /* No namespaces: orphans of the tree must come back to us. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
            die(sfd, FY_STEP_SPAWN, errno);
        delay_in(pl, FY_STAGE_ISOLATION);
        send_msg(sfd, CM_STAGE, 0, 0, FY_STAGE_ISOLATION, now_usec());
        delay_in(pl, FY_STAGE_FILESYSTEM);
        write_secrets(a);
        send_msg(sfd, CM_STAGE, 0, 0, FY_STAGE_FILESYSTEM, now_usec());
    } else {
        FAULT(a, FY_STEP_UID_MAP);
        if (pl->as_root && (r = set_ids(pl->setup_uid, pl->setup_gid, true)) < 0)
            die(sfd, FY_STEP_UID_MAP, -r);
        FAULT(a, FY_STEP_USERNS);
        if (pl->hostname && sethostname(pl->hostname, slen(pl->hostname)) < 0)
            die(sfd, FY_STEP_USERNS, errno);
        /* (the new UTS namespace copied the host's NIS domain name too) */
        if (pl->hostname && syscall(SYS_setdomainname, "(none)", 6) < 0)
            die(sfd, FY_STEP_USERNS, errno);
        if ((r = set_kernel_counts(pl)) < 0)
            die(sfd, FY_STEP_USERNS, -r);
        if (pl->use_netns)
            FAULT(a, FY_STEP_NETNS);
        delay_in(pl, FY_STAGE_ISOLATION);
        send_msg(sfd, CM_STAGE, 0, 0, FY_STAGE_ISOLATION, now_usec());
        build_filesystem(a, ws[0]);
        send_msg(sfd, CM_STAGE, 0, 0, FY_STAGE_FILESYSTEM, now_usec());
        if (pl->net_router && !netns_to_host_early(a) && !a->netns_host) {
            /* The host links it to the router before our second go-ahead. */
            if (netns_for_host < 0 || lx_send_fds(a->sync_fd, 'N', &netns_for_host, 1) < 0)
                die(sfd, FY_STEP_NETNS, netns_for_host < 0 ? EBADF : errno);
            close(netns_for_host);
        }
    }
    /* The second go-ahead: we move into our cgroups, and so does the
     * workload process, with the same tasks files. */
    size_t ntasks = receive_go(a->sync_fd, sfd, tasks);
    bool view = pl->cg_view;
    char cg_after[CGV_TEXT];
    enter_cgroups(sfd, tasks, ntasks);
    /* (Read before the namespace, which shows every path as "/".) */
    if (view)
        read_self_cgroup(cg_after, sizeof(cg_after));
    if ((pl->clone_flags & CLONE_NEWCGROUP) && unshare(CLONE_NEWCGROUP) < 0)
        die(sfd, FY_STEP_CGROUP, errno);
    if (view && cgroup_view(pl, cg_after) && prebuilt_ruleset >= 0) {
        /* Landlock does not look at a directory a mount hides: the rule on
         * /sys/fs/cgroup made before the view was mounted over it does not
         * count, so the view's own root gets one (the workload restricts
         * itself with this ruleset only after our go-ahead). */
        int fd = open(CGV_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct landlock_path_beneath_attr pb = {
            .allowed_access = pl->ll_handled & (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR),
            .parent_fd = fd};
        if (fd >= 0 && pb.allowed_access && sys_landlock_add_rule(prebuilt_ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
            (void)umount2(CGV_ROOT, MNT_DETACH); /* unreadable: better none */
        if (fd >= 0)
            close(fd);
    }
    FAULT(a, FY_STEP_SPAWN);
    if (pl->process_mode) {
        w = sys_fork();
        if (w < 0)
            die(sfd, FY_STEP_SPAWN, errno);
        if (w == 0)
            workload(a);
        wipe_workload_inputs(a);
    } else {
        /* The workload process (forked early) has its own copy of its
         * environment and the secrets' values (file secrets are written to
         * /run/secrets already): ours are wiped before it may run, so no
         * moment exists where it runs and we still hold them. */
        wipe_workload_inputs(a);
        /* Its go-ahead: the tasks files, then the Landlock ruleset. A
         * workload process that is gone already reported why. */
        if (prebuilt_ruleset >= 0)
            tasks[ntasks] = prebuilt_ruleset;
        if (lx_send_fds(ws[0], prebuilt_ruleset >= 0 ? 'L' : 'G', tasks, ntasks + (prebuilt_ruleset >= 0)) < 0)
            syscall(SYS_exit_group, 127);
        close(ws[0]);
    }
    for (size_t i = 0; i < ntasks; i++)
        close(tasks[i]);
    /* Only the workload needs these. */
    if (prebuilt_ruleset >= 0)
        close(prebuilt_ruleset);
    for (int i = 0; i < 3; i++)
        close(a->stdio[i]);
    if (a->notify_sock >= 0)
        close(a->notify_sock);
    init_loop(a, w);
}
