/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the seccomp files share, and nothing else includes: the known table and the argument
 * rules of the profiles (linux-seccomp-profiles.c, where the contract is written), the
 * compiler (linux-seccomp.c), its self check (linux-seccomp-check.c) and the naming of calls
 * (linux-seccomp-names.c). */
#ifndef FY_LINUX_SECCOMP_INTERNAL_H
#define FY_LINUX_SECCOMP_INTERNAL_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/seccomp.h>

#include "linux-seccomp.h"

/* The versions of the profiles of linux-seccomp-profiles.c (its contract says when to bump
 * them). */
#define FY_SECCOMP_PROFILE_VERSION 5u
#define FY_SECCOMP_INIT_VERSION 3u

#ifndef CLONE_NEWUSER
#  define CLONE_NEWUSER 0x10000000
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#  define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#  define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif

#define X32_BIT 0x40000000u
#define SC_IPPROTO_MPTCP 262u /* (older libc headers lack it) */
#ifndef MSG_FASTOPEN
#  define MSG_FASTOPEN 0x20000000
#endif

enum sc_kind {
    K_ALLOW,       /* ALLOW */
    K_VIOLATION,   /* VIOLATION */
    K_EPERM,       /* ERRNO(EPERM) */
    K_ENOSYS,      /* ERRNO(ENOSYS): known, answered like an unknown call */
    K_PTRACE,      /* ERRNO(EPERM) in general-build, ALLOW in networked-test */
    K_IOCTL,       /* VIOLATION for TIOCSTI/TIOCLINUX, else ALLOW */
    K_PERSONALITY, /* ALLOW for the three safe personas, else ERRNO(EPERM) */
    K_SOCKET,      /* ALLOW for the four families, else ERRNO(EAFNOSUPPORT); AF_INET and
                    * AF_INET6 with IPPROTO_MPTCP: ERRNO(EPROTONOSUPPORT) (version 2) */
    K_SEND,        /* sendto/sendmsg/sendmmsg: ERRNO(EOPNOTSUPP) with MSG_FASTOPEN in the
                    * flags (argument flags_arg), else ALLOW (version 2) */
    K_NEWUSER,     /* clone/unshare: ERRNO(EPERM) with CLONE_NEWUSER, else ALLOW */
    K_RLIMIT,      /* setrlimit/prlimit64 of RLIMIT_CORE (resource in argument flags_arg):
                    * ERRNO(0), no effect; prlimit64 that also asks for the old value:
                    * ERRNO(EPERM); reads and other resources: ALLOW (version 3) */
    K_SETUID,      /* a mode with S_ISUID given to a file: ERRNO(EPERM), else ALLOW
                    * (version 4). flags_arg: the mode's argument in bits 0-3; for
                    * open and openat, 1 + the flags' argument in bits 4-7 (the mode
                    * counts only with O_CREAT or O_TMPFILE there) */
};

/* K_SETUID's flags_arg. */
#define SC_SETUID_ARGS(mode_arg, open_flags_arg) ((uint8_t)((mode_arg) | (((open_flags_arg) + 1) << 4)))
#define SC_SETUID_MODE(flags_arg) ((flags_arg) & 0xfu)
#define SC_SETUID_FLAGS(flags_arg) ((int)((flags_arg) >> 4) - 1) /* -1: none */
#define SC_O_TMPFILE_BIT 020000000u /* __O_TMPFILE: O_TMPFILE without O_DIRECTORY */

struct sc_entry {
    const char *name;
    int16_t unified_nr; /* the asm-generic unified number (>= 424), or -1 */
    uint8_t kind;
    uint8_t flags_arg;  /* K_NEWUSER: which argument holds the clone flags; K_SEND: the
                         * message flags; K_RLIMIT: the resource (prlimit64: 1, the new
                         * and old limits in the two after it) */
};

/* The sizes are spelled out so that FY_ARRAY_SIZE works in every file; the definitions in
 * linux-seccomp-profiles.c take theirs from their initializers, so a table that does not
 * match its size here does not compile. */
#define SC_KNOWN_COUNT 365
#define SC_INIT_ALLOWED_COUNT 16

/* The known table, version 4 (linux-seccomp-profiles.c). */
extern const struct sc_entry sc_known[SC_KNOWN_COUNT];
/* Profile "init", version 2: the calls it allows. */
extern const char *const sc_init_allowed[SC_INIT_ALLOWED_COUNT];
/* Argument values of the argument rules. */
extern const uint32_t sc_personality_ok[3];
extern const uint32_t sc_socket_families_ok[4]; /* ascending */
extern const uint32_t sc_ioctl_violations[2];

/* The number of a known-table entry on the native architecture, or -1 when it has none. */
int sc_entry_nr(const struct sc_entry *e);

/* The actions one profile (and host) gives the rows whose action varies. */
struct profile_actions {
    uint32_t violation;    /* SECCOMP_RET_USER_NOTIF or SECCOMP_RET_KILL_PROCESS */
    uint32_t badarch;      /* the action foreign architectures get */
    bool ptrace_allowed;
};

/* SECCOMP_RET_ERRNO with errno e. */
uint32_t sc_ret_errno(int e);
/* What a profile that denies the ptrace family answers it with: the user
 * notification where violations are notified (the supervisor answers
 * EPERM, counts the call and lets the attempt go on), else EPERM. */
uint32_t sc_ptrace_denial(const struct profile_actions *pa);
/* Whether v is one of set[0..n). */
bool sc_in_u32(const uint32_t *set, size_t n, uint32_t v);
/* The contract, as a plain function: the action for a call of entry e with arguments args. */
uint32_t sc_contract_action(const struct profile_actions *pa, const struct sc_entry *e,
                            const uint64_t *args);

/* The self check (linux-seccomp-check.c): runs prog through a cBPF interpreter and holds it to
 * the contract; 0, or FY_E_INTERNAL (set in *reterr) when it does not hold. */
int sc_self_check(const struct seccomp_program *prog, const struct profile_actions *pa,
                  fy_error **reterr);
/* The same for profile "init". */
int sc_self_check_init(const struct seccomp_program *prog, fy_error **reterr);
/* One run of the self check's interpreter (for its tests): prog (len <= BPF_MAXINSNS) on d,
 * and, with prefix, the way the self check runs a call's argument classes: up to the first
 * argument load on prefix (the same nr and arch as d), resumed from there on d. 1 and *ret,
 * or 0 where the kernel would refuse the program (-1: out of memory). */
int sc_bpf_eval(const void *prog, size_t len, const struct seccomp_data *d, const struct seccomp_data *prefix,
                uint32_t *ret);

#endif
