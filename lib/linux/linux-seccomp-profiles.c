/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The versioned seccomp profiles: the known table, the argument rules and the contract
 * as a plain function. linux-seccomp.c compiles them into classic BPF;
 * linux-seccomp-check.c holds every compiled program to the contract below.
 *
 * ======================================================================================
 * THE CONTRACT: profiles "general-build" and "networked-test", version 5
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
 *    (libuv, node, liburing users fall back); openat2
 *    (version 4: its mode lives in memory seccomp
 *    cannot read; glibc never calls it, its other
 *    users fall back to openat)
 *  chmod(p, mode) fchmod(fd, mode) fchmodat(d, p,       ERRNO(EPERM)    ERRNO(EPERM)
 *    mode) fchmodat2(d, p, mode, f) creat(p, mode)
 *    mknod(p, mode, dev) mknodat(d, p, mode, dev) with
 *    S_ISUID in mode, and open(p, flags, mode)
 *    openat(d, p, flags, mode) with S_ISUID in mode
 *    and O_CREAT or __O_TMPFILE in flags (version 4:
 *    a set-user-ID file the workload makes in a
 *    writable bind is, on the host, a set-uid binary
 *    of the sandbox's host uid, which every root
 *    caller's workload runs as; any host user who
 *    could reach it would become that uid); other
 *    modes, and the mode of an open that creates
 *    nothing: ALLOW
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
 *    AF_INET, AF_INET6, AF_NETLINK; those: ALLOW but
 *  socket(family, type, proto), socketpair(family,      ERRNO(EPROTO-   ERRNO(EPROTO-
 *    type, proto, ...) with family (the whole           NOSUPPORT)      NOSUPPORT)
 *    register) AF_INET or AF_INET6 and low32(proto)
 *    == IPPROTO_MPTCP (an MPTCP socket is not a TCP
 *    one to Landlock: its connect(2) rules would not
 *    hold; programs fall back to TCP)
 *  sendto(fd, buf, len, flags, ...), sendmmsg(fd,       ERRNO(EOP-      ERRNO(EOP-
 *    vec, n, flags), sendmsg(fd, msg, flags) with       NOTSUPP)        NOTSUPP)
 *    MSG_FASTOPEN set in low32(flags) (TCP Fast Open
 *    connects inside sendmsg, past Landlock's connect
 *    hook; the kernel's own answer where TFO is off);
 *    other flags: ALLOW
 *  setrlimit(res, new) with low32(res) == RLIMIT_CORE;  ERRNO(0)        ERRNO(0)
 *    prlimit64(pid, res, new, old) with low32(res) ==
 *    RLIMIT_CORE, new != NULL and old == NULL: the
 *    call succeeds and changes nothing (the sandbox
 *    holds RLIMIT_CORE at 1 byte, the kernel's "no
 *    dump anywhere": a limit of 0 still runs a host's
 *    core_pattern pipe helper, systemd-coredump or
 *    apport, as root outside the sandbox with the
 *    process's memory; programs that turn their cores
 *    off get what they asked for, and must: every
 *    AddressSanitizer program sets RLIMIT_CORE as it
 *    starts and dies when that fails, so EPERM is not
 *    an answer; a raise "succeeds" the same way and
 *    reads back 1)
 *  prlimit64(pid, res, new, old) with low32(res) ==     ERRNO(EPERM)    ERRNO(EPERM)
 *    RLIMIT_CORE, new != NULL and old != NULL (the old
 *    value cannot be given without the call); other
 *    resources, and reads (new == NULL): ALLOW
 *  ptrace process_vm_readv process_vm_writev            NOTED(EPERM)    ALLOW
 *    pidfd_getfd (the PTRACE_MODE_ATTACH class)         (test runners, sanitizers, debuggers)
 *    NOTED(EPERM): SECCOMP_RET_USER_NOTIF where violations are notified: the
 *    supervisor answers EPERM, counts the call (isolation.seccomp.ptrace_denied)
 *    and the attempt goes on, so that a LeakSanitizer that cannot stop its
 *    threads is told apart from a failing test; else ERRNO(EPERM)
 *  every other call of the known table                  ALLOW           ALLOW
 *
 * The known table is the fixed list of NAMES in `sc_known[]` below: the x86-64 system
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
 * A sandbox without an IPC namespace of its own (the process level, rootless) stacks a
 * second, fixed filter on its profile (sc_ipc_deny_program, linux-seccomp.c): the System V
 * IPC and POSIX message queue calls ERRNO(EPERM), everything else the profile's answer.
 *
 * Profile "init", version 3 (the sandbox's own pid 1): ALLOW wait4 waitid kill
 * rt_sigtimedwait rt_sigprocmask rt_sigreturn write read pread64 close exit
 * exit_group clock_gettime getpid restart_syscall ppoll; everything else, and every
 * foreign architecture, KILL_PROCESS. (Version 1 had no pread64; version 2
 * re-reads the pid namespace's ns_last_pid to count the tasks created. Version 2
 * had no ppoll: init learnt of its owner's death only from the end of its socket to
 * it, which a fork(2) of the host kept open, and the sandbox outlived its owner;
 * version 3 polls a pidfd of the owner, found 2026-12-06.)
 *
 * Version 4 answered the ptrace class with ERRNO(EPERM) where version 5 notes it: the
 * same answer, but nothing told the caller why an AddressSanitizer test failed.
 *
 * Version 3 had no set-user-ID row and allowed openat2: a workload could leave a set-uid
 * binary of uid 100001 in its build directory, and a host user who ran it held the uid
 * that every root caller's workload runs as, with their files and processes (found
 * 2026-12-04).
 *
 * Version 2 had no RLIMIT_CORE row: a workload could set its core limit to 0 and crash,
 * and on a host whose core_pattern is a pipe the kernel ran that helper as root with the
 * workload's memory, which then outlived the attempt (found 2026-12-04).
 *
 * Version 1 had neither the MPTCP nor the MSG_FASTOPEN row: with them, an MPTCP socket
 * or a Fast Open send reached loopback ports and job members' ports that Landlock's TCP
 * connect rules refuse (found 2026-12-03 on Linux 6.18, Landlock ABI 7).
 *
 * Changing any row (a name, an action, an argument rule) makes a new version:
 * bump FY_SECCOMP_PROFILE_VERSION and keep the old rows reproducible. Adding
 * the calls of a newer kernel to the known table is such a change.
 * ======================================================================================
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <seccomp.h>

#include "linux-seccomp-internal.h"

/* clone(2)'s flags argument: the first one everywhere but on s390 (and cris). */
#if defined(__s390__) || defined(__s390x__) || defined(__CRIS__)
#  define CLONE_FLAGS_ARG 1
#else
#  define CLONE_FLAGS_ARG 0
#endif

#define A(n) { n, -1, K_ALLOW, 0 }
#define V(n) { n, -1, K_VIOLATION, 0 }
#define P(n) { n, -1, K_EPERM, 0 }
#define U(n, nr, k) { n, nr, k, 0 }
/* set-user-ID rows: the mode's argument, and open's flags argument (-1: none) */
#define S(n, mode_arg, flags_arg) { n, -1, K_SETUID, SC_SETUID_ARGS(mode_arg, flags_arg) }

/* The known table, version 4. Order: x86-64 numbers. Do not edit without a new version. */
const struct sc_entry sc_known[] = {
    A("read"), A("write"), S("open", 2, 1), A("close"), A("stat"), A("fstat"), A("lstat"), A("poll"),
    A("lseek"), A("mmap"), A("mprotect"), A("munmap"), A("brk"), A("rt_sigaction"),
    A("rt_sigprocmask"), A("rt_sigreturn"), { "ioctl", -1, K_IOCTL, 0 }, A("pread64"),
    A("pwrite64"), A("readv"), A("writev"), A("access"), A("pipe"), A("select"),
    A("sched_yield"), A("mremap"), A("msync"), A("mincore"), A("madvise"), A("shmget"),
    A("shmat"), A("shmctl"), A("dup"), A("dup2"), A("pause"), A("nanosleep"), A("getitimer"),
    A("alarm"), A("setitimer"), A("getpid"), A("sendfile"), { "socket", -1, K_SOCKET, 0 },
    A("connect"), A("accept"), { "sendto", -1, K_SEND, 3 }, A("recvfrom"),
    { "sendmsg", -1, K_SEND, 2 }, A("recvmsg"),
    A("shutdown"), A("bind"), A("listen"), A("getsockname"), A("getpeername"),
    { "socketpair", -1, K_SOCKET, 0 }, A("setsockopt"), A("getsockopt"),
    { "clone", -1, K_NEWUSER, CLONE_FLAGS_ARG }, A("fork"), A("vfork"), A("execve"), A("exit"),
    A("wait4"), A("kill"), A("uname"), A("semget"), A("semop"), A("semctl"), A("shmdt"),
    A("msgget"), A("msgsnd"), A("msgrcv"), A("msgctl"), A("fcntl"), A("flock"), A("fsync"),
    A("fdatasync"), A("truncate"), A("ftruncate"), A("getdents"), A("getcwd"), A("chdir"),
    A("fchdir"), A("rename"), A("mkdir"), A("rmdir"), S("creat", 1, -1), A("link"), A("unlink"),
    A("symlink"), A("readlink"), S("chmod", 1, -1), S("fchmod", 1, -1), A("chown"), A("fchown"), A("lchown"),
    A("umask"), A("gettimeofday"), A("getrlimit"), A("getrusage"), A("sysinfo"), A("times"),
    { "ptrace", -1, K_PTRACE, 0 }, A("getuid"), P("syslog"), A("getgid"), A("setuid"),
    A("setgid"), A("geteuid"), A("getegid"), A("setpgid"), A("getppid"), A("getpgrp"),
    A("setsid"), A("setreuid"), A("setregid"), A("getgroups"), A("setgroups"), A("setresuid"),
    A("getresuid"), A("setresgid"), A("getresgid"), A("getpgid"), A("setfsuid"), A("setfsgid"),
    A("getsid"), A("capget"), A("capset"), A("rt_sigpending"), A("rt_sigtimedwait"),
    A("rt_sigqueueinfo"), A("rt_sigsuspend"), A("sigaltstack"), A("utime"), S("mknod", 1, -1),
    /* uselib: left out (ENOSYS) */
    { "personality", -1, K_PERSONALITY, 0 }, A("ustat"), A("statfs"), A("fstatfs"), A("sysfs"),
    A("getpriority"), A("setpriority"), A("sched_setparam"), A("sched_getparam"),
    A("sched_setscheduler"), A("sched_getscheduler"), A("sched_get_priority_max"),
    A("sched_get_priority_min"), A("sched_rr_get_interval"), A("mlock"), A("munlock"),
    A("mlockall"), A("munlockall"), V("vhangup"), P("modify_ldt"), V("pivot_root"),
    /* _sysctl: left out */
    A("prctl"), A("arch_prctl"), P("adjtimex"), { "setrlimit", -1, K_RLIMIT, 0 }, P("chroot"), A("sync"),
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
    A("migrate_pages"), S("openat", 3, 2), A("mkdirat"), S("mknodat", 2, -1), A("fchownat"), A("futimesat"),
    A("newfstatat"), A("unlinkat"), A("renameat"), A("linkat"), A("symlinkat"), A("readlinkat"),
    S("fchmodat", 2, -1), A("faccessat"), A("pselect6"), A("ppoll"),
    { "unshare", -1, K_NEWUSER, 0 }, A("set_robust_list"), A("get_robust_list"), A("splice"),
    A("tee"), A("sync_file_range"), A("vmsplice"), A("move_pages"), A("utimensat"),
    A("epoll_pwait"), A("signalfd"), A("timerfd_create"), A("eventfd"), A("fallocate"),
    A("timerfd_settime"), A("timerfd_gettime"), A("accept4"), A("signalfd4"), A("eventfd2"),
    A("epoll_create1"), A("dup3"), A("pipe2"), A("inotify_init1"), A("preadv"), A("pwritev"),
    A("rt_tgsigqueueinfo"), P("perf_event_open"), A("recvmmsg"), A("fanotify_init"),
    A("fanotify_mark"), { "prlimit64", -1, K_RLIMIT, 1 }, P("name_to_handle_at"), V("open_by_handle_at"),
    V("clock_adjtime"), A("syncfs"), { "sendmmsg", -1, K_SEND, 3 }, P("setns"), A("getcpu"),
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
    U("openat2", 437, K_ENOSYS), U("pidfd_getfd", 438, K_PTRACE), U("faccessat2", 439, K_ALLOW),
    U("process_madvise", 440, K_ALLOW), U("epoll_pwait2", 441, K_ALLOW),
    U("mount_setattr", 442, K_VIOLATION), U("quotactl_fd", 443, K_VIOLATION),
    U("landlock_create_ruleset", 444, K_ALLOW), U("landlock_add_rule", 445, K_ALLOW),
    U("landlock_restrict_self", 446, K_ALLOW), U("memfd_secret", 447, K_ALLOW),
    U("process_mrelease", 448, K_ALLOW), U("futex_waitv", 449, K_ALLOW),
    U("set_mempolicy_home_node", 450, K_ALLOW), U("cachestat", 451, K_ALLOW),
    { "fchmodat2", 452, K_SETUID, SC_SETUID_ARGS(2, -1) }, U("map_shadow_stack", 453, K_ALLOW),
    U("futex_wake", 454, K_ALLOW), U("futex_wait", 455, K_ALLOW),
    U("futex_requeue", 456, K_ALLOW), U("statmount", 457, K_ALLOW),
    U("listmount", 458, K_ALLOW), U("lsm_get_self_attr", 459, K_ALLOW),
    U("lsm_set_self_attr", 460, K_ALLOW), U("lsm_list_modules", 461, K_ALLOW),
    U("mseal", 462, K_ALLOW), U("setxattrat", 463, K_ALLOW), U("getxattrat", 464, K_ALLOW),
    U("listxattrat", 465, K_ALLOW), U("removexattrat", 466, K_ALLOW),
    U("open_tree_attr", 467, K_VIOLATION), U("file_getattr", 468, K_ALLOW),
    U("file_setattr", 469, K_ALLOW),
};

/* Profile "init", version 3. */
const char *const sc_init_allowed[] = {
    "wait4", "waitid", "kill", "rt_sigtimedwait", "rt_sigprocmask", "rt_sigreturn", "write",
    "read", "pread64", "close", "exit", "exit_group", "clock_gettime", "getpid", "restart_syscall",
    "ppoll",
};

#undef A
#undef V
#undef P
#undef U
#undef S

/* Argument values of the argument rules. */
const uint32_t sc_personality_ok[] = { PER_LINUX, PER_LINUX | ADDR_NO_RANDOMIZE, 0xffffffffu };
const uint32_t sc_socket_families_ok[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK }; /* ascending */
const uint32_t sc_ioctl_violations[] = { TIOCSTI, TIOCLINUX };

/* ---------------------------------------------------------------------------------- */
/* name resolution                                                                    */

/* The number of a known-table entry on the native architecture, or -1 when it has none. */
static int resolve_entry(const struct sc_entry *e) {
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

/* The table's numbers, resolved once per process: the self check asks for
 * each of them three times per program, and a name lookup in libseccomp
 * costs more than a run of the filter. Filled by whichever thread gets
 * there first (every thread computes the same numbers, so concurrent
 * fills agree) and published by the flag; a fork copies the table as it
 * is, and a half-filled one stays unpublished. */
#define KNOWN_N (sizeof(sc_known) / sizeof(sc_known[0]))
static _Atomic int known_nr[KNOWN_N];
static atomic_bool known_filled;

int sc_entry_nr(const struct sc_entry *e) {
    if (e < sc_known || e >= sc_known + KNOWN_N)
        return resolve_entry(e);
    if (!atomic_load_explicit(&known_filled, memory_order_acquire)) {
        for (size_t i = 0; i < KNOWN_N; i++)
            atomic_store_explicit(&known_nr[i], resolve_entry(&sc_known[i]), memory_order_relaxed);
        atomic_store_explicit(&known_filled, true, memory_order_release);
    }
    return atomic_load_explicit(&known_nr[e - sc_known], memory_order_relaxed);
}

/* ---------------------------------------------------------------------------------- */
/* the contract, as a plain function (used to check every compiled program)           */

uint32_t sc_ret_errno(int e) { return SECCOMP_RET_ERRNO | ((uint32_t)e & SECCOMP_RET_DATA); }

uint32_t sc_ptrace_denial(const struct profile_actions *pa) {
    return pa->violation == SECCOMP_RET_USER_NOTIF ? SECCOMP_RET_USER_NOTIF : sc_ret_errno(EPERM);
}

bool sc_in_u32(const uint32_t *set, size_t n, uint32_t v) {
    for (size_t i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

uint32_t sc_contract_action(const struct profile_actions *pa, const struct sc_entry *e,
                            const uint64_t *args) {
    switch (e->kind) {
    case K_ALLOW: return SECCOMP_RET_ALLOW;
    case K_VIOLATION: return pa->violation;
    case K_EPERM: return sc_ret_errno(EPERM);
    case K_ENOSYS: return sc_ret_errno(ENOSYS);
    case K_PTRACE: return pa->ptrace_allowed ? SECCOMP_RET_ALLOW : sc_ptrace_denial(pa);
    case K_IOCTL:
        return sc_in_u32(sc_ioctl_violations, FY_ARRAY_SIZE(sc_ioctl_violations), (uint32_t)args[1])
                   ? pa->violation : SECCOMP_RET_ALLOW;
    case K_PERSONALITY:
        return sc_in_u32(sc_personality_ok, FY_ARRAY_SIZE(sc_personality_ok), (uint32_t)args[0])
                   ? SECCOMP_RET_ALLOW : sc_ret_errno(EPERM);
    case K_SOCKET:
        if (args[0] > UINT32_MAX ||
            !sc_in_u32(sc_socket_families_ok, FY_ARRAY_SIZE(sc_socket_families_ok), (uint32_t)args[0]))
            return sc_ret_errno(EAFNOSUPPORT);
        return (args[0] == AF_INET || args[0] == AF_INET6) && (uint32_t)args[2] == SC_IPPROTO_MPTCP
                   ? sc_ret_errno(EPROTONOSUPPORT) : SECCOMP_RET_ALLOW;
    case K_SEND:
        return ((uint32_t)args[e->flags_arg] & MSG_FASTOPEN) ? sc_ret_errno(EOPNOTSUPP) : SECCOMP_RET_ALLOW;
    case K_NEWUSER:
        return (args[e->flags_arg] & CLONE_NEWUSER) ? sc_ret_errno(EPERM) : SECCOMP_RET_ALLOW;
    case K_SETUID: {
        int fa = SC_SETUID_FLAGS(e->flags_arg);
        bool creates = fa < 0 || (args[fa] & (O_CREAT | SC_O_TMPFILE_BIT)) != 0;
        bool setuid = (args[SC_SETUID_MODE(e->flags_arg)] & S_ISUID) != 0;
        return creates && setuid ? sc_ret_errno(EPERM) : SECCOMP_RET_ALLOW;
    }
    case K_RLIMIT:
        if ((uint32_t)args[e->flags_arg] != RLIMIT_CORE)
            return SECCOMP_RET_ALLOW;
        if (e->flags_arg == 0)
            return sc_ret_errno(0);
        if (args[e->flags_arg + 1] == 0)
            return SECCOMP_RET_ALLOW;
        return args[e->flags_arg + 2] == 0 ? sc_ret_errno(0) : sc_ret_errno(EPERM);
    }
    return SECCOMP_RET_KILL_PROCESS;
}
