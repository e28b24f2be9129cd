/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Versioned seccomp profiles, compiled with libseccomp into classic BPF in memory.
 *
 * ======================================================================================
 * THE CONTRACT: profiles "general-build" and "networked-test", version 1
 * ======================================================================================
 * The two profiles differ in one row only (the ptrace class). VIOLATION means
 * SECCOMP_RET_USER_NOTIF when the host has user notification (the supervisor
 * names the call as a SANDBOX_VIOLATION and answers EPERM), else
 * SECCOMP_RET_KILL_PROCESS (SIGSYS). "low32(x)" is the low 32 bits of an argument
 * register: the kernel reads those arguments as 32-bit ints, so the filter
 * does too and setting high bits cannot smuggle a value past it.
 *
 *  system calls                                         general-build   networked-test
 *  ---------------------------------------------------  --------------  --------------
 *  any call of a foreign architecture: i386 (int 0x80,  VIOLATION       VIOLATION
 *    sysenter), x32 (nr | 0x40000000); the filter
 *    covers the native architecture only
 *  every call NOT in the known table below: unknown     ERRNO(ENOSYS)   ERRNO(ENOSYS)
 *    or newer than this version, and the legacy or
 *    unimplemented ones deliberately left out (uselib,
 *    nfsservctl, _sysctl, create_module,
 *    get_kernel_syms, query_module, getpmsg, putpmsg,
 *    afs_syscall, tuxcall, security, vserver,
 *    epoll_ctl_old, epoll_wait_old, set_thread_area,
 *    get_thread_area on x86-64, uretprobe, uprobe)
 *  init_module finit_module delete_module kexec_load    VIOLATION       VIOLATION
 *    kexec_file_load reboot swapon swapoff mount
 *    umount2 pivot_root fsopen fsconfig fsmount fspick
 *    move_mount open_tree open_tree_attr mount_setattr
 *    settimeofday clock_settime clock_adjtime
 *    open_by_handle_at iopl ioperm acct quotactl
 *    quotactl_fd lookup_dcookie vhangup
 *  ioctl(fd, cmd, ...) with low32(cmd) == TIOCSTI or    VIOLATION       VIOLATION
 *    TIOCLINUX (every other ioctl: ALLOW)
 *  io_uring_setup io_uring_enter io_uring_register      ERRNO(ENOSYS)   ERRNO(ENOSYS)
 *    (libuv, node, liburing users fall back)
 *  clone3 (its flags live in memory seccomp cannot      ERRNO(ENOSYS)   ERRNO(ENOSYS)
 *    read; glibc falls back to clone)
 *  bpf perf_event_open userfaultfd keyctl add_key       ERRNO(EPERM)    ERRNO(EPERM)
 *    request_key name_to_handle_at syslog adjtimex
 *    setns chroot modify_ldt
 *  personality(p) with low32(p) not one of 0            ERRNO(EPERM)    ERRNO(EPERM)
 *    (PER_LINUX), ADDR_NO_RANDOMIZE (PER_LINUX |
 *    ADDR_NO_RANDOMIZE), 0xffffffff (query); those
 *    three: ALLOW
 *  unshare(flags), clone(flags, ...) with CLONE_NEWUSER  ERRNO(EPERM)    ERRNO(EPERM)
 *    set in flags (other flags: ALLOW; new non-user
 *    namespaces are harmless without capabilities)
 *  socket(family, ...), socketpair(family, ...) with    ERRNO(EAFNO-    ERRNO(EAFNO-
 *    family (the whole register) not one of AF_UNIX,    SUPPORT)        SUPPORT)
 *    AF_INET, AF_INET6, AF_NETLINK; those: ALLOW
 *  ptrace process_vm_readv process_vm_writev            ERRNO(EPERM)    ALLOW
 *    pidfd_getfd (the PTRACE_MODE_ATTACH class)         (test runners, sanitizers, debuggers)
 *  every other call of the known table                  ALLOW           ALLOW
 *
 * The known table is the fixed list of NAMES in `known[]` below: the x86-64 system
 * calls of Linux 6.18 (numbers 0..334 and the unified 424..469; the last is
 * file_setattr, added in 6.17; 6.18 added none).
 * It is compiled in so that the profile does not change with the libseccomp
 * version: a name this libseccomp cannot resolve but that has a unified number
 * (>= 424, the same on every architecture but alpha since Linux 5.1) is added by
 * that number, so libseccomp 2.5.4 (which stops at futex_wake) still allows
 * mseal or statmount. Names that do not exist on the native architecture are
 * skipped (they have no number to filter). On a native architecture other than
 * x86-64 the arch-specific calls missing from the list fail safe with ENOSYS.
 *
 * Profile "init", version 2 (the sandbox's own pid 1): ALLOW wait4 waitid kill
 * rt_sigtimedwait rt_sigprocmask rt_sigreturn write read pread64 close exit
 * exit_group clock_gettime getpid restart_syscall; everything else, and every
 * foreign architecture, KILL_PROCESS. (Version 1 had no pread64; version 2
 * re-reads the pid namespace's ns_last_pid to count the tasks created.)
 *
 * Changing any row (a name, an action, an argument rule) makes a new version:
 * bump FY_SECCOMP_PROFILE_VERSION and keep the old rows reproducible. Adding
 * the calls of a newer kernel to the known table is such a change.
 * ======================================================================================
 *
 * Implementation notes:
 * - Layout (since 2026-11; the contract is unchanged, so is the version): libseccomp
 *   compiles only the rows that are not plain ALLOW into a program whose default is
 *   ALLOW, and a short hand-made prefix (build_prefix) answers first what that
 *   default would get wrong: ENOSYS for nr -1, for every number above the table's
 *   largest and for every number below it the table does not name, and
 *   personality's argument rule (it has an ALLOW side, which a default-ALLOW
 *   libseccomp program cannot express). 141 instructions on x86-64 instead of 524,
 *   so the kernel converts and JITs it in about half the time at every sandbox
 *   start. Every rule libseccomp gets is disjoint (ioctl: the two refused commands;
 *   socket: each refused family and a GT; clone/unshare: the bit set), so no
 *   ordering of argument comparisons matters. Every compiled program is checked
 *   against this contract by a small cBPF interpreter (self_check: every number up
 *   to past the largest, the argument classes, foreign architectures, x32) before it
 *   is returned; a mismatch fails closed with FY_E_INTERNAL.
 * - The exported BPF is the whole of what the child needs: NNP and TSYNC are off
 *   (the loader sets no_new_privs itself, the child is single-threaded).
 * - No global state, no output, every fd O_CLOEXEC, nothing ever exits. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <seccomp.h>

#include "forgeyard/fy-policy.h"
#include "linux-seccomp.h"

#define FY_SECCOMP_PROFILE_VERSION 1u
#define FY_SECCOMP_INIT_VERSION 2u

#ifndef CLONE_NEWUSER
#  define CLONE_NEWUSER 0x10000000
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#  define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#  define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef BPF_MAXINSNS
#  define BPF_MAXINSNS 4096
#endif

#define X32_BIT 0x40000000u

/* clone(2)'s flags argument: the first one everywhere but on s390 (and cris). */
#if defined(__s390__) || defined(__s390x__) || defined(__CRIS__)
#  define CLONE_FLAGS_ARG 1
#else
#  define CLONE_FLAGS_ARG 0
#endif

enum sc_kind {
    K_ALLOW,       /* ALLOW */
    K_VIOLATION,   /* VIOLATION */
    K_EPERM,       /* ERRNO(EPERM) */
    K_ENOSYS,      /* ERRNO(ENOSYS): known, answered like an unknown call */
    K_PTRACE,      /* ERRNO(EPERM) in general-build, ALLOW in networked-test */
    K_IOCTL,       /* VIOLATION for TIOCSTI/TIOCLINUX, else ALLOW */
    K_PERSONALITY, /* ALLOW for the three safe personas, else ERRNO(EPERM) */
    K_SOCKET,      /* ALLOW for the four families, else ERRNO(EAFNOSUPPORT) */
    K_NEWUSER,     /* clone/unshare: ERRNO(EPERM) with CLONE_NEWUSER, else ALLOW */
};

struct sc_entry {
    const char *name;
    int16_t unified_nr; /* the asm-generic unified number (>= 424), or -1 */
    uint8_t kind;
    uint8_t flags_arg;  /* K_NEWUSER: which argument holds the clone flags */
};

#define A(n) { n, -1, K_ALLOW, 0 }
#define V(n) { n, -1, K_VIOLATION, 0 }
#define P(n) { n, -1, K_EPERM, 0 }
#define U(n, nr, k) { n, nr, k, 0 }

/* The known table, version 1. Order: x86-64 numbers. Do not edit without a new version. */
static const struct sc_entry known[] = {
    A("read"), A("write"), A("open"), A("close"), A("stat"), A("fstat"), A("lstat"), A("poll"),
    A("lseek"), A("mmap"), A("mprotect"), A("munmap"), A("brk"), A("rt_sigaction"),
    A("rt_sigprocmask"), A("rt_sigreturn"), { "ioctl", -1, K_IOCTL, 0 }, A("pread64"),
    A("pwrite64"), A("readv"), A("writev"), A("access"), A("pipe"), A("select"),
    A("sched_yield"), A("mremap"), A("msync"), A("mincore"), A("madvise"), A("shmget"),
    A("shmat"), A("shmctl"), A("dup"), A("dup2"), A("pause"), A("nanosleep"), A("getitimer"),
    A("alarm"), A("setitimer"), A("getpid"), A("sendfile"), { "socket", -1, K_SOCKET, 0 },
    A("connect"), A("accept"), A("sendto"), A("recvfrom"), A("sendmsg"), A("recvmsg"),
    A("shutdown"), A("bind"), A("listen"), A("getsockname"), A("getpeername"),
    { "socketpair", -1, K_SOCKET, 0 }, A("setsockopt"), A("getsockopt"),
    { "clone", -1, K_NEWUSER, CLONE_FLAGS_ARG }, A("fork"), A("vfork"), A("execve"), A("exit"),
    A("wait4"), A("kill"), A("uname"), A("semget"), A("semop"), A("semctl"), A("shmdt"),
    A("msgget"), A("msgsnd"), A("msgrcv"), A("msgctl"), A("fcntl"), A("flock"), A("fsync"),
    A("fdatasync"), A("truncate"), A("ftruncate"), A("getdents"), A("getcwd"), A("chdir"),
    A("fchdir"), A("rename"), A("mkdir"), A("rmdir"), A("creat"), A("link"), A("unlink"),
    A("symlink"), A("readlink"), A("chmod"), A("fchmod"), A("chown"), A("fchown"), A("lchown"),
    A("umask"), A("gettimeofday"), A("getrlimit"), A("getrusage"), A("sysinfo"), A("times"),
    { "ptrace", -1, K_PTRACE, 0 }, A("getuid"), P("syslog"), A("getgid"), A("setuid"),
    A("setgid"), A("geteuid"), A("getegid"), A("setpgid"), A("getppid"), A("getpgrp"),
    A("setsid"), A("setreuid"), A("setregid"), A("getgroups"), A("setgroups"), A("setresuid"),
    A("getresuid"), A("setresgid"), A("getresgid"), A("getpgid"), A("setfsuid"), A("setfsgid"),
    A("getsid"), A("capget"), A("capset"), A("rt_sigpending"), A("rt_sigtimedwait"),
    A("rt_sigqueueinfo"), A("rt_sigsuspend"), A("sigaltstack"), A("utime"), A("mknod"),
    /* uselib: left out (ENOSYS) */
    { "personality", -1, K_PERSONALITY, 0 }, A("ustat"), A("statfs"), A("fstatfs"), A("sysfs"),
    A("getpriority"), A("setpriority"), A("sched_setparam"), A("sched_getparam"),
    A("sched_setscheduler"), A("sched_getscheduler"), A("sched_get_priority_max"),
    A("sched_get_priority_min"), A("sched_rr_get_interval"), A("mlock"), A("munlock"),
    A("mlockall"), A("munlockall"), V("vhangup"), P("modify_ldt"), V("pivot_root"),
    /* _sysctl: left out */
    A("prctl"), A("arch_prctl"), P("adjtimex"), A("setrlimit"), P("chroot"), A("sync"),
    V("acct"), V("settimeofday"), V("mount"), V("umount2"), V("swapon"), V("swapoff"),
    V("reboot"), A("sethostname"), A("setdomainname"), V("iopl"), V("ioperm"),
    /* create_module: left out */
    V("init_module"), V("delete_module"),
    /* get_kernel_syms, query_module: left out */
    V("quotactl"),
    /* nfsservctl, getpmsg, putpmsg, afs_syscall, tuxcall, security: left out */
    A("gettid"), A("readahead"), A("setxattr"), A("lsetxattr"), A("fsetxattr"), A("getxattr"),
    A("lgetxattr"), A("fgetxattr"), A("listxattr"), A("llistxattr"), A("flistxattr"),
    A("removexattr"), A("lremovexattr"), A("fremovexattr"), A("tkill"), A("time"), A("futex"),
    A("sched_setaffinity"), A("sched_getaffinity"),
    /* set_thread_area: left out */
    A("io_setup"), A("io_destroy"), A("io_getevents"), A("io_submit"), A("io_cancel"),
    /* get_thread_area: left out */
    V("lookup_dcookie"), A("epoll_create"),
    /* epoll_ctl_old, epoll_wait_old: left out */
    A("remap_file_pages"), A("getdents64"), A("set_tid_address"), A("restart_syscall"),
    A("semtimedop"), A("fadvise64"), A("timer_create"), A("timer_settime"), A("timer_gettime"),
    A("timer_getoverrun"), A("timer_delete"), V("clock_settime"), A("clock_gettime"),
    A("clock_getres"), A("clock_nanosleep"), A("exit_group"), A("epoll_wait"), A("epoll_ctl"),
    A("tgkill"), A("utimes"),
    /* vserver: left out */
    A("mbind"), A("set_mempolicy"), A("get_mempolicy"), A("mq_open"), A("mq_unlink"),
    A("mq_timedsend"), A("mq_timedreceive"), A("mq_notify"), A("mq_getsetattr"),
    V("kexec_load"), A("waitid"), P("add_key"), P("request_key"), P("keyctl"), A("ioprio_set"),
    A("ioprio_get"), A("inotify_init"), A("inotify_add_watch"), A("inotify_rm_watch"),
    A("migrate_pages"), A("openat"), A("mkdirat"), A("mknodat"), A("fchownat"), A("futimesat"),
    A("newfstatat"), A("unlinkat"), A("renameat"), A("linkat"), A("symlinkat"), A("readlinkat"),
    A("fchmodat"), A("faccessat"), A("pselect6"), A("ppoll"),
    { "unshare", -1, K_NEWUSER, 0 }, A("set_robust_list"), A("get_robust_list"), A("splice"),
    A("tee"), A("sync_file_range"), A("vmsplice"), A("move_pages"), A("utimensat"),
    A("epoll_pwait"), A("signalfd"), A("timerfd_create"), A("eventfd"), A("fallocate"),
    A("timerfd_settime"), A("timerfd_gettime"), A("accept4"), A("signalfd4"), A("eventfd2"),
    A("epoll_create1"), A("dup3"), A("pipe2"), A("inotify_init1"), A("preadv"), A("pwritev"),
    A("rt_tgsigqueueinfo"), P("perf_event_open"), A("recvmmsg"), A("fanotify_init"),
    A("fanotify_mark"), A("prlimit64"), P("name_to_handle_at"), V("open_by_handle_at"),
    V("clock_adjtime"), A("syncfs"), A("sendmmsg"), P("setns"), A("getcpu"),
    { "process_vm_readv", -1, K_PTRACE, 0 }, { "process_vm_writev", -1, K_PTRACE, 0 },
    A("kcmp"), V("finit_module"), A("sched_setattr"), A("sched_getattr"), A("renameat2"),
    A("seccomp"), A("getrandom"), A("memfd_create"), V("kexec_file_load"), P("bpf"),
    A("execveat"), P("userfaultfd"), A("membarrier"), A("mlock2"), A("copy_file_range"),
    A("preadv2"), A("pwritev2"), A("pkey_mprotect"), A("pkey_alloc"), A("pkey_free"),
    A("statx"), A("io_pgetevents"), A("rseq"),
    /* uretprobe (335), uprobe (336): left out (x86-64 only, called by the kernel's own
     * trampolines; kernels that have them let them bypass seccomp) */
    /* the unified range (Linux 5.1+) */
    U("pidfd_send_signal", 424, K_ALLOW), U("io_uring_setup", 425, K_ENOSYS),
    U("io_uring_enter", 426, K_ENOSYS), U("io_uring_register", 427, K_ENOSYS),
    U("open_tree", 428, K_VIOLATION), U("move_mount", 429, K_VIOLATION),
    U("fsopen", 430, K_VIOLATION), U("fsconfig", 431, K_VIOLATION),
    U("fsmount", 432, K_VIOLATION), U("fspick", 433, K_VIOLATION),
    U("pidfd_open", 434, K_ALLOW), U("clone3", 435, K_ENOSYS), U("close_range", 436, K_ALLOW),
    U("openat2", 437, K_ALLOW), U("pidfd_getfd", 438, K_PTRACE), U("faccessat2", 439, K_ALLOW),
    U("process_madvise", 440, K_ALLOW), U("epoll_pwait2", 441, K_ALLOW),
    U("mount_setattr", 442, K_VIOLATION), U("quotactl_fd", 443, K_VIOLATION),
    U("landlock_create_ruleset", 444, K_ALLOW), U("landlock_add_rule", 445, K_ALLOW),
    U("landlock_restrict_self", 446, K_ALLOW), U("memfd_secret", 447, K_ALLOW),
    U("process_mrelease", 448, K_ALLOW), U("futex_waitv", 449, K_ALLOW),
    U("set_mempolicy_home_node", 450, K_ALLOW), U("cachestat", 451, K_ALLOW),
    U("fchmodat2", 452, K_ALLOW), U("map_shadow_stack", 453, K_ALLOW),
    U("futex_wake", 454, K_ALLOW), U("futex_wait", 455, K_ALLOW),
    U("futex_requeue", 456, K_ALLOW), U("statmount", 457, K_ALLOW),
    U("listmount", 458, K_ALLOW), U("lsm_get_self_attr", 459, K_ALLOW),
    U("lsm_set_self_attr", 460, K_ALLOW), U("lsm_list_modules", 461, K_ALLOW),
    U("mseal", 462, K_ALLOW), U("setxattrat", 463, K_ALLOW), U("getxattrat", 464, K_ALLOW),
    U("listxattrat", 465, K_ALLOW), U("removexattrat", 466, K_ALLOW),
    U("open_tree_attr", 467, K_VIOLATION), U("file_getattr", 468, K_ALLOW),
    U("file_setattr", 469, K_ALLOW),
};

/* Profile "init", version 2. */
static const char *const init_allowed[] = {
    "wait4", "waitid", "kill", "rt_sigtimedwait", "rt_sigprocmask", "rt_sigreturn", "write",
    "read", "pread64", "close", "exit", "exit_group", "clock_gettime", "getpid", "restart_syscall",
};

#undef A
#undef V
#undef P
#undef U

/* Argument values of the argument rules. */
static const uint32_t personality_ok[] = { PER_LINUX, PER_LINUX | ADDR_NO_RANDOMIZE, 0xffffffffu };
static const uint32_t socket_families_ok[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK }; /* ascending */
static const uint32_t ioctl_violations[] = { TIOCSTI, TIOCLINUX };

/* ---------------------------------------------------------------------------------- */
/* name resolution                                                                    */

/* The number of a known-table entry on the native architecture, or -1 when it has none. */
static int entry_nr(const struct sc_entry *e) {
    int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, e->name);
    if (nr == __NR_SCMP_ERROR) {
#if defined(__alpha__)
        return -1;
#else
        return e->unified_nr >= 0 ? e->unified_nr : -1;
#endif
    }
    return nr < 0 ? -1 : nr; /* negative: a pseudo number, no such call here */
}

/* ---------------------------------------------------------------------------------- */
/* the contract, as a plain function (used to check every compiled program)           */

struct profile_actions {
    uint32_t violation;    /* SECCOMP_RET_USER_NOTIF or SECCOMP_RET_KILL_PROCESS */
    uint32_t badarch;      /* the action foreign architectures get */
    bool ptrace_allowed;
};

static uint32_t ret_errno(int e) { return SECCOMP_RET_ERRNO | ((uint32_t)e & SECCOMP_RET_DATA); }

static bool in_u32(const uint32_t *set, size_t n, uint32_t v) {
    for (size_t i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

static uint32_t contract_action(const struct profile_actions *pa, const struct sc_entry *e,
                                const uint64_t *args) {
    switch (e->kind) {
    case K_ALLOW: return SECCOMP_RET_ALLOW;
    case K_VIOLATION: return pa->violation;
    case K_EPERM: return ret_errno(EPERM);
    case K_ENOSYS: return ret_errno(ENOSYS);
    case K_PTRACE: return pa->ptrace_allowed ? SECCOMP_RET_ALLOW : ret_errno(EPERM);
    case K_IOCTL:
        return in_u32(ioctl_violations, FY_ARRAY_SIZE(ioctl_violations), (uint32_t)args[1])
                   ? pa->violation : SECCOMP_RET_ALLOW;
    case K_PERSONALITY:
        return in_u32(personality_ok, FY_ARRAY_SIZE(personality_ok), (uint32_t)args[0])
                   ? SECCOMP_RET_ALLOW : ret_errno(EPERM);
    case K_SOCKET:
        return args[0] <= UINT32_MAX &&
                       in_u32(socket_families_ok, FY_ARRAY_SIZE(socket_families_ok), (uint32_t)args[0])
                   ? SECCOMP_RET_ALLOW : ret_errno(EAFNOSUPPORT);
    case K_NEWUSER:
        return (args[e->flags_arg] & CLONE_NEWUSER) ? ret_errno(EPERM) : SECCOMP_RET_ALLOW;
    }
    return SECCOMP_RET_KILL_PROCESS;
}

/* ---------------------------------------------------------------------------------- */
/* a classic BPF interpreter with the kernel's seccomp semantics, for self_check      */

/* Runs prog on d. Returns false when the program is malformed (a bad opcode, a jump or
 * a load out of range, falling off the end); the kernel would have refused it. */
static bool bpf_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d,
                    uint32_t *ret) {
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    size_t pc = 0;
    /* Every jump goes forward, so len steps bound the loop. */
    for (size_t steps = 0; pc < len && steps <= len; steps++) {
        const struct sock_filter *f = &prog[pc++];
        uint32_t k = f->k;
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (k > sizeof(*d) - 4 || (k & 3))
                return false;
            memcpy(&a, (const char *)d + k, 4);
            break;
        case BPF_LD | BPF_W | BPF_LEN: a = sizeof(*d); break;
        case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(*d); break;
        case BPF_LD | BPF_IMM: a = k; break;
        case BPF_LDX | BPF_IMM: x = k; break;
        case BPF_LD | BPF_MEM:
            if (k >= BPF_MEMWORDS)
                return false;
            a = mem[k];
            break;
        case BPF_LDX | BPF_MEM:
            if (k >= BPF_MEMWORDS)
                return false;
            x = mem[k];
            break;
        case BPF_ST:
            if (k >= BPF_MEMWORDS)
                return false;
            mem[k] = a;
            break;
        case BPF_STX:
            if (k >= BPF_MEMWORDS)
                return false;
            mem[k] = x;
            break;
        case BPF_MISC | BPF_TAX: x = a; break;
        case BPF_MISC | BPF_TXA: a = x; break;
        case BPF_RET | BPF_K: *ret = k; return true;
        case BPF_RET | BPF_A: *ret = a; return true;
        case BPF_JMP | BPF_JA:
            if (k >= len - pc)
                return false;
            pc += k;
            break;
        default:
            if (BPF_CLASS(f->code) == BPF_ALU) {
                uint32_t s = BPF_SRC(f->code) == BPF_X ? x : k;
                switch (BPF_OP(f->code)) {
                case BPF_ADD: a += s; break;
                case BPF_SUB: a -= s; break;
                case BPF_MUL: a *= s; break;
                case BPF_DIV:
                    if (!s)
                        return false;
                    a /= s;
                    break;
                case BPF_MOD:
                    if (!s)
                        return false;
                    a %= s;
                    break;
                case BPF_AND: a &= s; break;
                case BPF_OR: a |= s; break;
                case BPF_XOR: a ^= s; break;
                case BPF_LSH: a = s < 32 ? a << s : 0; break;
                case BPF_RSH: a = s < 32 ? a >> s : 0; break;
                case BPF_NEG: a = -a; break;
                default: return false;
                }
            } else if (BPF_CLASS(f->code) == BPF_JMP) {
                uint32_t s = BPF_SRC(f->code) == BPF_X ? x : k;
                bool t;
                switch (BPF_OP(f->code)) {
                case BPF_JEQ: t = a == s; break;
                case BPF_JGT: t = a > s; break;
                case BPF_JGE: t = a >= s; break;
                case BPF_JSET: t = (a & s) != 0; break;
                default: return false;
                }
                uint8_t off = t ? f->jt : f->jf;
                if (off >= len - pc)
                    return false;
                pc += off;
            } else {
                return false;
            }
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------------- */
/* building                                                                           */

struct builder {
    scmp_filter_ctx ctx;
    fy_error **reterr;
};

static int seccomp_err(fy_error **reterr, int rc, const char *what, const char *name) {
    int e = rc < 0 ? -rc : EINVAL;
    int code = e == ENOMEM ? FY_E_NOMEM : FY_E_INTERNAL;
    return err_set(reterr, code, FY_STEP_SECCOMP, e, NULL, "seccomp: %s%s%s failed: %s", what,
                   name ? " " : "", name ? name : "", strerror(e));
}

static int add_rule(struct builder *b, uint32_t action, const struct sc_entry *e, int nr,
                    unsigned cnt, const struct scmp_arg_cmp *cmp) {
    int rc = seccomp_rule_add_array(b->ctx, action, nr, cnt, cmp);
    if (rc < 0)
        return seccomp_err(b->reterr, rc, "adding the rule for", e->name);
    return 0;
}

/* The rules of one known-table entry for a program whose default is ALLOW:
 * only what is not ALLOW (personality: in the prefix, build_prefix). */
static int add_entry(struct builder *b, const struct profile_actions *pa, const struct sc_entry *e,
                     int nr) {
    struct scmp_arg_cmp c;
    int r;
    switch (e->kind) {
    case K_ALLOW: return 0;
    case K_PERSONALITY: return 0;
    case K_VIOLATION: return add_rule(b, pa->violation, e, nr, 0, NULL);
    case K_EPERM: return add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 0, NULL);
    case K_ENOSYS: return add_rule(b, SCMP_ACT_ERRNO(ENOSYS), e, nr, 0, NULL);
    case K_PTRACE: return pa->ptrace_allowed ? 0 : add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 0, NULL);
    case K_IOCTL:
        for (size_t i = 0; i < FY_ARRAY_SIZE(ioctl_violations); i++) {
            c = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctl_violations[i]);
            if ((r = add_rule(b, pa->violation, e, nr, 1, &c)) < 0)
                return r;
        }
        return 0;
    case K_SOCKET: {
        /* Disjoint: each refused family below the largest allowed one by
         * equality, everything above it by GT (the whole register). */
        uint32_t top = socket_families_ok[FY_ARRAY_SIZE(socket_families_ok) - 1];
        for (uint32_t f = 0; f <= top; f++) {
            if (in_u32(socket_families_ok, FY_ARRAY_SIZE(socket_families_ok), f))
                continue;
            c = SCMP_A0_64(SCMP_CMP_EQ, f);
            if ((r = add_rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), e, nr, 1, &c)) < 0)
                return r;
        }
        c = SCMP_A0_64(SCMP_CMP_GT, top);
        return add_rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), e, nr, 1, &c);
    }
    case K_NEWUSER:
        c = SCMP_CMP64(e->flags_arg, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
        return add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 1, &c);
    }
    return err_set(b->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                   "seccomp: bad table entry %s", e->name);
}

/* ---------------------------------------------------------------------------------- */
/* the prefix                                                                         */

/* libseccomp compiles the entries that are not plain ALLOW (about 80 rules)
 * into a program whose default is ALLOW. A default of ENOSYS would need a
 * rule for each of the ~390 allowed calls: a program of 524 instructions
 * that took the kernel ~0.3 ms to convert and JIT at every sandbox start,
 * against ~0.1 ms now. What the default then gets wrong, this prefix
 * answers first, for the native architecture only (foreign ones and x32
 * fall through to libseccomp's own check, and its BADARCH action):
 *   nr -1, every number above the table's largest, and every number below
 *   it that the table does not name (the legacy calls left out, the gap
 *   before the unified numbers): ERRNO(ENOSYS), as a default would;
 *   personality, whose one argument rule has an ALLOW side: checked here.
 * Then libseccomp's program runs. self_check holds the whole to the contract
 * for every number, so a mistake here cannot ship. */
#define PREFIX_MAX 160

struct prefix {
    struct sock_filter f[PREFIX_MAX];
    int target[PREFIX_MAX][2]; /* jt, jf as labels (L_*) or -1 for "the next instruction" */
    size_t n;
    bool overflow;
};

enum { L_NEXT = -1, L_SKIP1 = -2, L_LIB = -3, L_ENOSYS = -4, L_ALLOW = -5, L_PERS_END = -6 };

static void emit(struct prefix *p, uint16_t code, uint32_t k, int jt, int jf) {
    if (p->n >= PREFIX_MAX) {
        p->overflow = true;
        return;
    }
    p->f[p->n] = (struct sock_filter)BPF_STMT(code, k);
    p->target[p->n][0] = jt;
    p->target[p->n][1] = jf;
    p->n++;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* Resolves the labels; false if a jump does not fit in 8 bits. */
static bool resolve_prefix(struct prefix *p, size_t pers_end) {
    size_t lib = p->n, enosys = p->n - 2, allow = p->n - 1;
    for (size_t i = 0; i < p->n; i++) {
        if (BPF_CLASS(p->f[i].code) != BPF_JMP || BPF_OP(p->f[i].code) == BPF_JA)
            continue;
        for (int side = 0; side < 2; side++) {
            int t = p->target[i][side];
            size_t to = t == L_NEXT ? i + 1 : t == L_SKIP1 ? i + 2 : t == L_LIB ? lib : t == L_ENOSYS ? enosys
                      : t == L_ALLOW ? allow : pers_end;
            if (to <= i || to - i - 1 > 255)
                return false;
            if (side == 0)
                p->f[i].jt = (uint8_t)(to - i - 1);
            else
                p->f[i].jf = (uint8_t)(to - i - 1);
        }
    }
    return true;
}

static int build_prefix(struct prefix *p, fy_error **reterr) {
    memset(p, 0, sizeof(*p));
    int nrs[FY_ARRAY_SIZE(known)];
    size_t nn = 0;
    int pers = -1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(known); i++) {
        int nr = entry_nr(&known[i]);
        if (nr < 0)
            continue;
        nrs[nn++] = nr;
        if (known[i].kind == K_PERSONALITY)
            pers = nr;
    }
    if (!nn)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL, "seccomp: no known call here");
    qsort(nrs, nn, sizeof(int), cmp_int);
    uint32_t arch = seccomp_arch_native();
    emit(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, arch), 0, 0);
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, arch, L_NEXT, L_LIB);
    emit(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, nr), 0, 0);
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, L_ENOSYS, L_NEXT);
    if (arch == SCMP_ARCH_X86_64)
        emit(p, BPF_JMP | BPF_JGE | BPF_K, X32_BIT, L_LIB, L_NEXT);
    emit(p, BPF_JMP | BPF_JGT | BPF_K, (uint32_t)nrs[nn - 1], L_ENOSYS, L_NEXT);
    /* The numbers below the largest that the table does not name, as ranges. */
    int expect = 0;
    for (size_t i = 0; i <= nn; i++) {
        int have = i < nn ? nrs[i] : nrs[nn - 1] + 1;
        if (have > expect) {
            uint32_t lo = (uint32_t)expect, hi = (uint32_t)have - 1;
            if (lo == hi) {
                emit(p, BPF_JMP | BPF_JEQ | BPF_K, lo, L_ENOSYS, L_NEXT);
            } else {
                emit(p, BPF_JMP | BPF_JGE | BPF_K, lo, L_NEXT, L_SKIP1);
                emit(p, BPF_JMP | BPF_JGT | BPF_K, hi, L_NEXT, L_ENOSYS);
            }
        }
        if (have >= expect)
            expect = have + 1;
    }
    size_t pers_end = 0;
    if (pers >= 0) {
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)pers, L_NEXT, L_PERS_END);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        uint32_t low = (uint32_t)offsetof(struct seccomp_data, args) + 4;
#else
        uint32_t low = (uint32_t)offsetof(struct seccomp_data, args);
#endif
        emit(p, BPF_LD | BPF_W | BPF_ABS, low, 0, 0);
        for (size_t i = 0; i < FY_ARRAY_SIZE(personality_ok); i++)
            emit(p, BPF_JMP | BPF_JEQ | BPF_K, personality_ok[i], L_ALLOW, L_NEXT);
        emit(p, BPF_RET | BPF_K, ret_errno(EPERM), 0, 0);
    }
    pers_end = p->n;
    emit(p, BPF_JMP | BPF_JA, 2, 0, 0); /* over the two returns, into libseccomp's program */
    emit(p, BPF_RET | BPF_K, ret_errno(ENOSYS), 0, 0);
    emit(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    if (p->overflow || !resolve_prefix(p, pers_end))
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: the prefix does not fit (%zu instructions)", p->n);
    return 0;
}

/* prog = prefix + prog. */
static int prepend(struct seccomp_program *prog, const struct prefix *p, fy_error **reterr) {
    if (prog->len + p->n > BPF_MAXINSNS)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: the program is too long (%zu instructions)", prog->len + p->n);
    struct sock_filter *all = malloc((prog->len + p->n) * sizeof(*all));
    if (!all)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL, "seccomp: out of memory");
    memcpy(all, p->f, p->n * sizeof(*all));
    memcpy(all + p->n, prog->filter, prog->len * sizeof(*all));
    free(prog->filter);
    prog->filter = all;
    prog->len += p->n;
    return 0;
}

static int set_attr(struct builder *b, enum scmp_filter_attr attr, uint32_t value, const char *what) {
    int rc = seccomp_attr_set(b->ctx, attr, value);
    if (rc < 0)
        return seccomp_err(b->reterr, rc, "setting", what);
    return 0;
}

/* Common attributes. badarch: the wanted action for foreign architectures; *badarch_out gets
 * the one libseccomp accepted (KILL_PROCESS when it refuses NOTIFY there). */
static int set_common_attrs(struct builder *b, uint32_t badarch, uint32_t *badarch_out) {
    int r;
    if ((r = set_attr(b, SCMP_FLTATR_CTL_NNP, 0, "SCMP_FLTATR_CTL_NNP")) < 0 ||
        (r = set_attr(b, SCMP_FLTATR_CTL_TSYNC, 0, "SCMP_FLTATR_CTL_TSYNC")) < 0)
        return r;
    /* A binary tree over the syscall numbers: a few comparisons per call, not a chain
     * of hundreds. Optional: libseccomp without it still gives a correct filter. */
    (void)seccomp_attr_set(b->ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    int rc = seccomp_attr_set(b->ctx, SCMP_FLTATR_ACT_BADARCH, badarch);
    if (rc < 0 && badarch == SCMP_ACT_NOTIFY) {
        badarch = SCMP_ACT_KILL_PROCESS;
        rc = seccomp_attr_set(b->ctx, SCMP_FLTATR_ACT_BADARCH, badarch);
    }
    if (rc < 0)
        return seccomp_err(b->reterr, rc, "setting", "SCMP_FLTATR_ACT_BADARCH");
    *badarch_out = badarch;
    return 0;
}

/* seccomp_export_bpf() writes to an fd (libseccomp 2.5 has no in-memory variant): a memfd,
 * or a non-blocking pipe (a filter is at most 32 KiB; a shrunken pipe fails, never blocks). */
static int export_bpf(struct builder *b, struct seccomp_program *out) {
    int fd = memfd_create("fy-seccomp", MFD_CLOEXEC), wfd, rc, r = 0;
    int pfd[2] = { -1, -1 };
    if (fd >= 0) {
        wfd = fd;
    } else {
        if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
            return err_set(b->reterr, err_from_errno(errno), FY_STEP_SECCOMP, errno, NULL,
                           "seccomp: memfd_create and pipe2 failed: %s", strerror(errno));
        (void)fcntl(pfd[1], F_SETPIPE_SZ, BPF_MAXINSNS * (int)sizeof(struct sock_filter) + 4096);
        fd = pfd[0];
        wfd = pfd[1];
    }

    rc = seccomp_export_bpf(b->ctx, wfd);
    if (rc < 0) {
        r = seccomp_err(b->reterr, rc, "exporting the BPF", NULL);
        goto out;
    }
    if (pfd[1] >= 0) {
        close(pfd[1]);
        pfd[1] = -1;
    } else if (lseek(fd, 0, SEEK_SET) < 0) {
        r = err_set(b->reterr, FY_E_IO, FY_STEP_SECCOMP, errno, NULL, "seccomp: lseek: %s",
                    strerror(errno));
        goto out;
    }

    size_t cap = (size_t)(BPF_MAXINSNS + 1) * sizeof(struct sock_filter), got = 0;
    char *buf = malloc(cap);
    if (!buf) {
        r = err_set(b->reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL, "seccomp: out of memory");
        goto out;
    }
    /* Bounded: at most cap bytes, and a read of 0 or an error ends it. */
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = err_set(b->reterr, FY_E_IO, FY_STEP_SECCOMP, errno, NULL,
                        "seccomp: reading the exported BPF: %s", strerror(errno));
            free(buf);
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got == 0 || got % sizeof(struct sock_filter) != 0 ||
        got / sizeof(struct sock_filter) > BPF_MAXINSNS) {
        r = err_set(b->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                    "seccomp: the exported BPF has a bad size (%zu bytes; at most %d instructions)",
                    got, BPF_MAXINSNS);
        free(buf);
        goto out;
    }
    char *fit = realloc(buf, got); /* a filter is typically ~4 KiB of the 32 KiB read buffer */
    out->filter = fit ? fit : buf;
    out->len = got / sizeof(struct sock_filter);
out:
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (fd >= 0)
        close(fd);
    return r;
}

/* ---------------------------------------------------------------------------------- */
/* self check                                                                         */

struct checker {
    const struct seccomp_program *prog;
    fy_error **reterr;
    uint32_t arch;
    const char *profile;
};

static int check_one(struct checker *ck, uint32_t arch, int nr, const uint64_t *args, uint32_t want,
                     const char *what) {
    struct seccomp_data d;
    memset(&d, 0, sizeof(d));
    d.nr = nr;
    d.arch = arch;
    d.instruction_pointer = 0x401000;
    for (int i = 0; i < 6; i++)
        d.args[i] = args ? args[i] : 0;
    uint32_t got = 0;
    if (!bpf_run(ck->prog->filter, ck->prog->len, &d, &got))
        return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the compiled BPF is malformed (at %s)", ck->profile,
                       what);
    /* Compare action and data; the kernel ignores nothing else. */
    if (got != want)
        return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the compiled BPF breaks the contract for %s "
                       "(nr %d, arg0 %#llx, arg1 %#llx): 0x%08x instead of 0x%08x (a libseccomp "
                       "that orders argument rules differently?)", ck->profile, what, nr,
                       (unsigned long long)(args ? args[0] : 0),
                       (unsigned long long)(args ? args[1] : 0), got, want);
    return 0;
}

/* Foreign architectures: one that exists (i386 or x86-64), and nonsense. */
static int check_foreign(struct checker *ck, uint32_t badarch) {
    int r;
    uint32_t other = ck->arch == AUDIT_ARCH_X86_64 ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64;
    if ((r = check_one(ck, other, 21, NULL, badarch, "a foreign architecture")) < 0 ||
        (r = check_one(ck, 0, 39, NULL, badarch, "architecture 0")) < 0)
        return r;
    if (ck->arch == AUDIT_ARCH_X86_64) {
        static const int x32[] = { (int)(X32_BIT | 39), (int)X32_BIT, (int)(X32_BIT | 165), 0x7fffffff };
        for (size_t i = 0; i < FY_ARRAY_SIZE(x32); i++)
            if ((r = check_one(ck, ck->arch, x32[i], NULL, badarch, "an x32 call")) < 0)
                return r;
    }
    return 0;
}

static int self_check(const struct seccomp_program *prog, const struct profile_actions *pa,
                      fy_error **reterr) {
    struct checker ck = { prog, reterr, seccomp_arch_native(), prog->name };
    int r;
    static const uint64_t ioctl_cmds[] = {
        TIOCSTI, TIOCLINUX, TIOCSTI | (1ULL << 32), TIOCLINUX | 0xffffffff00000000ULL, TCGETS,
        FIONREAD, TIOCSTI + 1, TIOCSTI - 1, 0xffffffffULL, 0xffffffffffffffffULL, 0,
    };
    static const uint64_t personas[] = {
        0, ADDR_NO_RANDOMIZE, 0xffffffffULL, 0xffffffffffffffffULL, 1ULL << 32,
        (1ULL << 32) | ADDR_NO_RANDOMIZE, PER_LINUX32, UNAME26, READ_IMPLIES_EXEC, 1,
        ADDR_NO_RANDOMIZE - 1, ADDR_NO_RANDOMIZE + 1, 0xfffffffeULL, 0x80000000ULL,
    };
    static const uint64_t families_extra[] = {
        (1ULL << 32) | AF_INET, 0xffffffffffffffffULL, 0x80000000ULL, 0xffffffffULL, 1000,
    };
    static const uint64_t clone_flags[] = {
        0, CLONE_NEWUSER, CLONE_NEWUTS, CLONE_NEWUSER | CLONE_NEWNS, SIGCHLD,
        CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
        (1ULL << 32) | CLONE_NEWUSER, (1ULL << 32), 0xffffffffffffffffULL,
        0xffffffffffffffffULL & ~(uint64_t)CLONE_NEWUSER,
    };

    for (size_t i = 0; i < FY_ARRAY_SIZE(known); i++) {
        const struct sc_entry *e = &known[i];
        int nr = entry_nr(e);
        if (nr < 0)
            continue;
        uint64_t args[6] = {0};
        if ((r = check_one(&ck, ck.arch, nr, args, contract_action(pa, e, args), e->name)) < 0)
            return r;
        const uint64_t *vals = NULL;
        size_t n = 0, argi = 0;
        switch (e->kind) {
        case K_IOCTL: vals = ioctl_cmds; n = FY_ARRAY_SIZE(ioctl_cmds); argi = 1; break;
        case K_PERSONALITY: vals = personas; n = FY_ARRAY_SIZE(personas); break;
        case K_SOCKET: vals = families_extra; n = FY_ARRAY_SIZE(families_extra); break;
        case K_NEWUSER: vals = clone_flags; n = FY_ARRAY_SIZE(clone_flags); argi = e->flags_arg; break;
        default: break;
        }
        for (size_t j = 0; j < n; j++) {
            memset(args, 0, sizeof(args));
            args[argi] = vals[j];
            if ((r = check_one(&ck, ck.arch, nr, args, contract_action(pa, e, args), e->name)) < 0)
                return r;
        }
        if (e->kind == K_SOCKET) {
            for (uint64_t f = 0; f <= 64; f++) {
                memset(args, 0, sizeof(args));
                args[0] = f;
                if ((r = check_one(&ck, ck.arch, nr, args, contract_action(pa, e, args), e->name)) < 0)
                    return r;
            }
        }
    }
    /* Calls outside the known table: made up, and the legacy ones left out. */
    static const char *const left_out[] = { "uselib", "nfsservctl", "_sysctl", "create_module",
                                             "query_module", "get_kernel_syms", "vserver" };
    for (size_t i = 0; i < FY_ARRAY_SIZE(left_out); i++) {
        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, left_out[i]);
        if (nr >= 0 && (r = check_one(&ck, ck.arch, nr, NULL, ret_errno(ENOSYS), left_out[i])) < 0)
            return r;
    }
    /* Every number up to well past the table's largest: its entry's action
     * with zero arguments, or ENOSYS for the numbers the table does not name
     * (the prefix and libseccomp's program answer them in different places). */
    int table_nr[FY_ARRAY_SIZE(known)];
    int top = -1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(known); i++) {
        table_nr[i] = entry_nr(&known[i]);
        top = table_nr[i] > top ? table_nr[i] : top;
    }
    for (int nr = 0; nr <= top + 64; nr++) {
        const struct sc_entry *e = NULL;
        for (size_t i = 0; i < FY_ARRAY_SIZE(known) && !e; i++)
            if (table_nr[i] == nr)
                e = &known[i];
        uint64_t zero[6] = {0};
        if ((r = check_one(&ck, ck.arch, nr, zero, e ? contract_action(pa, e, zero) : ret_errno(ENOSYS),
                           e ? e->name : "a number the table does not name")) < 0)
            return r;
    }
    static const int unknown[] = { 1000, 470, 999, 4095, 0x3fffffff, -1 };
    for (size_t i = 0; i < FY_ARRAY_SIZE(unknown); i++)
        if ((r = check_one(&ck, ck.arch, unknown[i], NULL, ret_errno(ENOSYS), "an unknown call")) < 0)
            return r;
    return check_foreign(&ck, pa->badarch);
}

static int self_check_init(const struct seccomp_program *prog, fy_error **reterr) {
    struct checker ck = { prog, reterr, seccomp_arch_native(), prog->name };
    int r;
    for (size_t i = 0; i < FY_ARRAY_SIZE(known); i++) {
        int nr = entry_nr(&known[i]);
        if (nr < 0)
            continue;
        bool ok = false;
        for (size_t j = 0; j < FY_ARRAY_SIZE(init_allowed) && !ok; j++)
            ok = strcmp(init_allowed[j], known[i].name) == 0;
        if ((r = check_one(&ck, ck.arch, nr, NULL, ok ? SECCOMP_RET_ALLOW : SECCOMP_RET_KILL_PROCESS,
                           known[i].name)) < 0)
            return r;
    }
    if ((r = check_one(&ck, ck.arch, 1000, NULL, SECCOMP_RET_KILL_PROCESS, "an unknown call")) < 0)
        return r;
    return check_foreign(&ck, SECCOMP_RET_KILL_PROCESS);
}

/* ---------------------------------------------------------------------------------- */
/* public                                                                             */

void sc_program_free(struct seccomp_program *p) {
    if (!p)
        return;
    free(p->filter);
    memset(p, 0, sizeof(*p));
}

int sc_compile(uint32_t cls, bool use_notify, struct seccomp_program *out, fy_error **reterr) {
    if (!out)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECCOMP, EINVAL, NULL, "seccomp: no output");
    memset(out, 0, sizeof(*out));
    const char *name;
    switch (cls) {
    case FY_SECCOMP_GENERAL_BUILD: name = "general-build"; break;
    case FY_SECCOMP_NETWORKED_TEST: name = "networked-test"; break;
    default:
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECCOMP, EINVAL, NULL,
                       "seccomp: unknown profile class %u", (unsigned)cls);
    }

    struct profile_actions pa = {
        .violation = use_notify ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS,
        .ptrace_allowed = cls == FY_SECCOMP_NETWORKED_TEST,
    };
    /* API level 3: SCMP_ACT_KILL_PROCESS; 5: SCMP_ACT_NOTIFY (libseccomp probes the kernel). */
    unsigned api = seccomp_api_get();
    if (api < (use_notify ? 5u : 3u))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: libseccomp API level %u on this host has no %s", api,
                       use_notify ? "SCMP_ACT_NOTIFY" : "SCMP_ACT_KILL_PROCESS");
    struct prefix pre;
    int r = build_prefix(&pre, reterr);
    if (r < 0)
        return r;
    struct builder b = { seccomp_init(SCMP_ACT_ALLOW), reterr };
    if (!b.ctx)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL,
                       "seccomp: seccomp_init failed");
    r = set_common_attrs(&b, pa.violation, &pa.badarch);
    for (size_t i = 0; r >= 0 && i < FY_ARRAY_SIZE(known); i++) {
        int nr = entry_nr(&known[i]);
        if (nr >= 0)
            r = add_entry(&b, &pa, &known[i], nr);
    }
    if (r >= 0)
        r = export_bpf(&b, out);
    seccomp_release(b.ctx);
    if (r >= 0)
        r = prepend(out, &pre, reterr);
    if (r < 0) {
        sc_program_free(out);
        return r;
    }
    out->notify = use_notify;
    out->name = name;
    out->version = FY_SECCOMP_PROFILE_VERSION;
    if ((r = self_check(out, &pa, reterr)) < 0) {
        sc_program_free(out);
        return r;
    }
    return 0;
}

int sc_compile_init(struct seccomp_program *out, fy_error **reterr) {
    if (!out)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECCOMP, EINVAL, NULL, "seccomp: no output");
    memset(out, 0, sizeof(*out));
    unsigned api = seccomp_api_get();
    if (api < 3u)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: libseccomp API level %u on this host has no SCMP_ACT_KILL_PROCESS",
                       api);
    struct builder b = { seccomp_init(SCMP_ACT_KILL_PROCESS), reterr };
    if (!b.ctx)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL,
                       "seccomp: seccomp_init failed");
    uint32_t badarch = 0;
    int r = set_common_attrs(&b, SCMP_ACT_KILL_PROCESS, &badarch);
    for (size_t i = 0; r >= 0 && i < FY_ARRAY_SIZE(init_allowed); i++) {
        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, init_allowed[i]);
        if (nr < 0)
            continue; /* not a call of this architecture */
        int rc = seccomp_rule_add(b.ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc < 0)
            r = seccomp_err(reterr, rc, "adding the rule for", init_allowed[i]);
    }
    if (r >= 0)
        r = export_bpf(&b, out);
    seccomp_release(b.ctx);
    if (r < 0) {
        sc_program_free(out);
        return r;
    }
    out->notify = false;
    out->name = "init";
    out->version = FY_SECCOMP_INIT_VERSION;
    if ((r = self_check_init(out, reterr)) < 0) {
        sc_program_free(out);
        return r;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* naming                                                                             */

static const struct {
    uint32_t token;
    const char *name;
} arch_names[] = {
    { SCMP_ARCH_X86_64, "x86_64" }, { SCMP_ARCH_X86, "i386" }, { SCMP_ARCH_X32, "x32" },
    { SCMP_ARCH_ARM, "arm" }, { SCMP_ARCH_AARCH64, "aarch64" },
    { SCMP_ARCH_MIPS, "mips" }, { SCMP_ARCH_MIPS64, "mips64" }, { SCMP_ARCH_MIPS64N32, "mips64n32" },
    { SCMP_ARCH_MIPSEL, "mipsel" }, { SCMP_ARCH_MIPSEL64, "mipsel64" },
    { SCMP_ARCH_MIPSEL64N32, "mipsel64n32" }, { SCMP_ARCH_PPC, "ppc" }, { SCMP_ARCH_PPC64, "ppc64" },
    { SCMP_ARCH_PPC64LE, "ppc64le" }, { SCMP_ARCH_S390, "s390" }, { SCMP_ARCH_S390X, "s390x" },
    { SCMP_ARCH_PARISC, "parisc" }, { SCMP_ARCH_PARISC64, "parisc64" },
#ifdef SCMP_ARCH_RISCV64
    { SCMP_ARCH_RISCV64, "riscv64" },
#endif
#ifdef SCMP_ARCH_LOONGARCH64
    { SCMP_ARCH_LOONGARCH64, "loongarch64" },
#endif
};

const char *sc_syscall_name(uint32_t arch, int nr, char *buf, size_t len) {
    if (!buf || len == 0)
        return "";
    uint32_t token = arch;
    if (arch == SCMP_ARCH_X86_64 && nr != -1 && ((uint32_t)nr & X32_BIT))
        token = SCMP_ARCH_X32;
    const char *aname = NULL;
    for (size_t i = 0; i < FY_ARRAY_SIZE(arch_names); i++)
        if (arch_names[i].token == token)
            aname = arch_names[i].name;
    bool native = token == seccomp_arch_native();

    char *s = aname ? seccomp_syscall_resolve_num_arch(token, nr) : NULL;
    const char *sname = s;
    if (!sname) {
        /* The unified numbers are the same everywhere (x32: with its bit). */
        int base = token == SCMP_ARCH_X32 ? (int)((uint32_t)nr & ~X32_BIT) : nr;
        for (size_t i = 0; aname && i < FY_ARRAY_SIZE(known) && !sname; i++)
            if (known[i].unified_nr >= 0 && known[i].unified_nr == base)
                sname = known[i].name;
    }
    char prefix[32] = "";
    if (!native)
        snprintf(prefix, sizeof(prefix), "%s:", aname ? aname : "arch");
    if (!aname && !native)
        snprintf(prefix, sizeof(prefix), "arch 0x%08x:", (unsigned)arch);
    if (sname)
        snprintf(buf, len, "%s%s", prefix, sname);
    else
        snprintf(buf, len, "%ssyscall %d", prefix, nr);
    free(s);
    return buf;
}

int sc_is_violation(uint32_t cls, uint32_t arch, int nr) {
    if (cls != FY_SECCOMP_GENERAL_BUILD && cls != FY_SECCOMP_NETWORKED_TEST)
        return 0;
    uint32_t native = seccomp_arch_native();
    if (arch != native)
        return 1;
    if (native == SCMP_ARCH_X86_64 && nr != -1 && ((uint32_t)nr & X32_BIT))
        return 1;
    if (nr < 0)
        return 0;
    for (size_t i = 0; i < FY_ARRAY_SIZE(known); i++) {
        const struct sc_entry *e = &known[i];
        if (e->kind != K_VIOLATION && e->kind != K_IOCTL)
            continue;
        if (entry_nr(e) == nr)
            return 1;
    }
    return 0;
}
