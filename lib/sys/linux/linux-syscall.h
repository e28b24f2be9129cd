/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Raw wrappers for the Linux system calls glibc 2.36 lacks or wraps badly
 * (clone3, pidfd_*, openat2, the new mount API, mount_setattr, Landlock,
 * close_range), plus the constants they need when the installed headers
 * are older than the running kernel.
 *
 * Every wrapper is async-signal-safe (one syscall(2), no allocation), so it
 * may be used between fork/clone and exec. They return what the kernel
 * returns: -1 with errno set on failure.
 *
 * This header includes <sys/mount.h> but never <linux/mount.h> (the two
 * conflict with glibc >= 2.36): do not include <linux/mount.h> next to it. */
#ifndef FY_LINUX_SYSCALL_H
#define FY_LINUX_SYSCALL_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/landlock.h>
#include <linux/openat2.h>

/* ---- syscall numbers (asm-generic numbering, shared by every arch except alpha) ---- */
#if !defined(__alpha__)
#  ifndef __NR_pidfd_send_signal
#    define __NR_pidfd_send_signal 424
#  endif
#  ifndef __NR_open_tree
#    define __NR_open_tree 428
#  endif
#  ifndef __NR_move_mount
#    define __NR_move_mount 429
#  endif
#  ifndef __NR_fsopen
#    define __NR_fsopen 430
#  endif
#  ifndef __NR_fsconfig
#    define __NR_fsconfig 431
#  endif
#  ifndef __NR_fsmount
#    define __NR_fsmount 432
#  endif
#  ifndef __NR_fspick
#    define __NR_fspick 433
#  endif
#  ifndef __NR_pidfd_open
#    define __NR_pidfd_open 434
#  endif
#  ifndef __NR_clone3
#    define __NR_clone3 435
#  endif
#  ifndef __NR_close_range
#    define __NR_close_range 436
#  endif
#  ifndef __NR_openat2
#    define __NR_openat2 437
#  endif
#  ifndef __NR_pidfd_getfd
#    define __NR_pidfd_getfd 438
#  endif
#  ifndef __NR_mount_setattr
#    define __NR_mount_setattr 442
#  endif
#  ifndef __NR_landlock_create_ruleset
#    define __NR_landlock_create_ruleset 444
#  endif
#  ifndef __NR_landlock_add_rule
#    define __NR_landlock_add_rule 445
#  endif
#  ifndef __NR_landlock_restrict_self
#    define __NR_landlock_restrict_self 446
#  endif
#endif

/* ---- clone / clone3 ---- */
#ifndef CLONE_PIDFD
#  define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_NEWCGROUP
#  define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#  define CLONE_NEWTIME 0x00000080
#endif
#define FY_CLONE_CLEAR_SIGHAND UINT64_C(0x100000000)
#define FY_CLONE_INTO_CGROUP   UINT64_C(0x200000000)

/* struct clone_args of <linux/sched.h> (CLONE_ARGS_SIZE_VER2 = 88 bytes). */
struct fy_clone_args {
    uint64_t flags;
    uint64_t pidfd;       /* int * for CLONE_PIDFD */
    uint64_t child_tid;
    uint64_t parent_tid;
    uint64_t exit_signal;
    uint64_t stack;
    uint64_t stack_size;
    uint64_t tls;
    uint64_t set_tid;
    uint64_t set_tid_size;
    uint64_t cgroup;      /* cgroup v2 directory fd for CLONE_INTO_CGROUP */
} __attribute__((aligned(8)));

/* clone3 without a new stack: returns like fork (0 in the child). The child
 * shares no memory with the parent and must only use async-signal-safe calls. */
static inline pid_t sys_clone3(struct fy_clone_args *args, size_t size) {
    return (pid_t)syscall(__NR_clone3, args, size);
}

/* fork(2) as one raw clone: no atfork handlers run and glibc's fork
 * bookkeeping is skipped, so the child must stick to plain system calls (no
 * malloc, stdio or pthread functions: a lock held by another thread of the
 * parent stays held in the child). The child's exit sends SIGCHLD: only for
 * children of the sandbox's own init, whose signal dispositions are ours. */
static inline pid_t sys_fork(void) {
#if defined(__s390__) || defined(__CRIS__)
    return (pid_t)syscall(SYS_clone, 0, SIGCHLD, 0, 0, 0);
#else
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

/* The same for a child of the host process: its exit signal is 0, so the
 * host's SIGCHLD disposition never sees it (a host that sets SIGCHLD to
 * SIG_IGN would have the kernel reap it before we can, and a host's SIGCHLD
 * handler would run for a child it does not know). Wait for it with __WALL
 * (a child without SIGCHLD is a "clone" child to wait4/waitid). */
static inline pid_t sys_fork_quiet(void) {
    return (pid_t)syscall(SYS_clone, 0, 0, 0, 0, 0);
}

/* sys_fork_quiet with CLONE_PIDFD (Linux >= 5.2): the parent gets a
 * CLOEXEC pidfd in *ret_pidfd atomically, so a host that reaps with
 * waitpid(-1) can never make us signal a recycled pid. The pidfd pointer is
 * the parent_tid argument, the third on every architecture. EINVAL on older
 * kernels. */
static inline pid_t sys_fork_pidfd(int *ret_pidfd) {
#if defined(__s390__) || defined(__CRIS__)
    return (pid_t)syscall(SYS_clone, 0, CLONE_PIDFD, ret_pidfd, 0, 0);
#else
    return (pid_t)syscall(SYS_clone, CLONE_PIDFD, 0, ret_pidfd, 0, 0);
#endif
}

/* sys_fork_pidfd, or on a kernel without CLONE_PIDFD (< 5.2, EINVAL)
 * sys_fork_quiet with *ret_pidfd -1: for children the caller can also wait
 * for by pid. */
static inline pid_t sys_fork_quiet_pidfd(int *ret_pidfd) {
    *ret_pidfd = -1;
    pid_t pid = sys_fork_pidfd(ret_pidfd);
    if (pid < 0 && errno == EINVAL) {
        *ret_pidfd = -1;
        pid = sys_fork_quiet();
    }
    return pid;
}

/* ---- pidfd ---- */
#define FY_P_PIDFD ((idtype_t)3)

static inline int sys_pidfd_open(pid_t pid, unsigned int flags) {
    return (int)syscall(__NR_pidfd_open, pid, flags);
}

static inline int sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info,
                                           unsigned int flags) {
    return (int)syscall(__NR_pidfd_send_signal, pidfd, sig, info, flags);
}

static inline int sys_pidfd_getfd(int pidfd, int targetfd, unsigned int flags) {
    return (int)syscall(__NR_pidfd_getfd, pidfd, targetfd, flags);
}

/* ---- openat2 ---- */
static inline int sys_openat2(int dirfd, const char *path, struct open_how *how, size_t size) {
    return (int)syscall(__NR_openat2, dirfd, path, how, size);
}

/* ---- close_range ---- */
#ifndef CLOSE_RANGE_UNSHARE
#  define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#  define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static inline int sys_close_range(unsigned int first, unsigned int last, unsigned int flags) {
    return (int)syscall(__NR_close_range, first, last, flags);
}

/* ---- new mount API ---- */
#ifndef FSOPEN_CLOEXEC
#  define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#  define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSPICK_CLOEXEC
#  define FSPICK_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_SET_FLAG
#  define FSCONFIG_SET_FLAG 0
#  define FSCONFIG_SET_STRING 1
#  define FSCONFIG_SET_BINARY 2
#  define FSCONFIG_SET_PATH 3
#  define FSCONFIG_SET_PATH_EMPTY 4
#  define FSCONFIG_SET_FD 5
#  define FSCONFIG_CMD_CREATE 6
#  define FSCONFIG_CMD_RECONFIGURE 7
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#  define MOVE_MOUNT_F_SYMLINKS 0x00000001
#  define MOVE_MOUNT_F_AUTOMOUNTS 0x00000002
#  define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#  define MOVE_MOUNT_T_SYMLINKS 0x00000010
#  define MOVE_MOUNT_T_AUTOMOUNTS 0x00000020
#  define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef OPEN_TREE_CLONE
#  define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#  define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#  define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_RDONLY
#  define MOUNT_ATTR_RDONLY 0x00000001
#  define MOUNT_ATTR_NOSUID 0x00000002
#  define MOUNT_ATTR_NODEV 0x00000004
#  define MOUNT_ATTR_NOEXEC 0x00000008
#  define MOUNT_ATTR__ATIME 0x00000070
#  define MOUNT_ATTR_RELATIME 0x00000000
#  define MOUNT_ATTR_NOATIME 0x00000010
#  define MOUNT_ATTR_STRICTATIME 0x00000020
#  define MOUNT_ATTR_NODIRATIME 0x00000080
#endif
#ifndef MOUNT_ATTR_IDMAP
#  define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef MOUNT_ATTR_NOSYMFOLLOW
#  define MOUNT_ATTR_NOSYMFOLLOW 0x00200000
#endif
#ifndef MOUNT_ATTR_SIZE_VER0
#  define MOUNT_ATTR_SIZE_VER0 32
struct mount_attr {
    uint64_t attr_set;
    uint64_t attr_clr;
    uint64_t propagation;
    uint64_t userns_fd;
};
#endif

static inline int sys_fsopen(const char *fsname, unsigned int flags) {
    return (int)syscall(__NR_fsopen, fsname, flags);
}

static inline int sys_fsconfig(int fd, unsigned int cmd, const char *key, const void *value,
                                  int aux) {
    return (int)syscall(__NR_fsconfig, fd, cmd, key, value, aux);
}

static inline int sys_fsmount(int fd, unsigned int flags, unsigned int attr_flags) {
    return (int)syscall(__NR_fsmount, fd, flags, attr_flags);
}

static inline int sys_fspick(int dirfd, const char *path, unsigned int flags) {
    return (int)syscall(__NR_fspick, dirfd, path, flags);
}

static inline int sys_move_mount(int from_dirfd, const char *from_path, int to_dirfd,
                                    const char *to_path, unsigned int flags) {
    return (int)syscall(__NR_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags);
}

static inline int sys_open_tree(int dirfd, const char *path, unsigned int flags) {
    return (int)syscall(__NR_open_tree, dirfd, path, flags);
}

static inline int sys_mount_setattr(int dirfd, const char *path, unsigned int flags,
                                       struct mount_attr *attr, size_t size) {
    return (int)syscall(__NR_mount_setattr, dirfd, path, flags, attr, size);
}

/* ---- Landlock ---- */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#  define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

static inline int sys_landlock_create_ruleset(const struct landlock_ruleset_attr *attr,
                                                 size_t size, uint32_t flags) {
    return (int)syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static inline int sys_landlock_add_rule(int ruleset_fd, enum landlock_rule_type type,
                                           const void *attr, uint32_t flags) {
    return (int)syscall(__NR_landlock_add_rule, ruleset_fd, type, attr, flags);
}

static inline int sys_landlock_restrict_self(int ruleset_fd, uint32_t flags) {
    return (int)syscall(__NR_landlock_restrict_self, ruleset_fd, flags);
}

/* ---- keys ---- */
/* Leaves the session keyring this process inherited (the host program's:
 * its registry, Kerberos or fscrypt tokens, reachable by possession
 * whatever the uid) for a fresh, empty, anonymous one, which the process's
 * children inherit in turn. 1 joined; 0 the kernel's key calls are not
 * available to this process at all (no CONFIG_KEYS, or an outer seccomp
 * filter that refuses keyctl, add_key and request_key, as container
 * runtimes' defaults do): nothing it or its children could reach; else
 * -errno (EDQUOT: the owner's key quota is full), and the caller must not
 * start anything with the keyring it has. Raw system calls only. */
static inline int sys_own_session_keyring(void) {
    if (syscall(SYS_keyctl, 1L /* KEYCTL_JOIN_SESSION_KEYRING */, 0L) >= 0)
        return 1;
    int err = errno;
    if (err != ENOSYS && err != EPERM)
        return -err;
    /* (a NULL type or keyring name: EFAULT wherever the call is allowed) */
    if (syscall(SYS_add_key, 0L, 0L, 0L, 0L, 0L) >= 0 || (errno != ENOSYS && errno != EPERM) ||
        syscall(SYS_request_key, 0L, 0L, 0L, 0L) >= 0 || (errno != ENOSYS && errno != EPERM) ||
        syscall(SYS_keyctl, 0L /* KEYCTL_GET_KEYRING_ID */, -3L /* session */, 0L) >= 0 ||
        (errno != ENOSYS && errno != EPERM))
        return -err;
    return 0;
}

/* ---- seccomp ---- */
static inline int sys_seccomp(unsigned int op, unsigned int flags, void *args) {
    return (int)syscall(SYS_seccomp, op, flags, args);
}

#endif
