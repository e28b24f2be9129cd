/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Versioned seccomp profiles, compiled with libseccomp into classic BPF in
 * memory at prepare time. The result is a plain struct sock_filter array:
 * loading it (in the child, between clone and exec) needs no libseccomp, only
 * prctl(PR_SET_NO_NEW_PRIVS) and the raw seccomp(2) system call.
 *
 * The rules of each profile version are the table at the top of
 * linux-seccomp-profiles.c; that table is the contract. */
#ifndef FY_LINUX_SECCOMP_H
#define FY_LINUX_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h" /* err_set, fy_error, FY_E_* (lib/internal.h) */

struct seccomp_program {
    void *filter;     /* struct sock_filter[len], malloc'd */
    size_t len;       /* instructions */
    bool notify;      /* violations return SECCOMP_RET_USER_NOTIF (load with SECCOMP_FILTER_FLAG_NEW_LISTENER) */
    const char *name; /* static: "general-build", "networked-test", "init" */
    uint32_t version; /* profile version, 1 */
    uint32_t badarch; /* the action for a foreign architecture (the violation's, or KILL_PROCESS) */
};

/* cls: FY_SECCOMP_GENERAL_BUILD or FY_SECCOMP_NETWORKED_TEST (include/forgeyard/fy-policy.h).
 * use_notify: SECCOMP_RET_USER_NOTIF available (probed); otherwise violations are SCMP_ACT_KILL_PROCESS.
 * On success *out owns a malloc'd program (free with sc_program_free); on failure *out is
 * left zeroed. FY_E_UNSUPPORTED when this libseccomp/kernel lacks the violation action.
 * Every program is checked against the profile's contract before it is returned (FY_E_INTERNAL
 * when it does not hold). Callable from any thread; takes a few milliseconds. */
int sc_compile(uint32_t cls, bool use_notify, struct seccomp_program *out, fy_error **reterr);

/* The tiny filter for the sandbox's own pid 1 (reaps children, forwards signals, writes to a pipe, exits):
 * allow only wait4, waitid, kill, rt_sigtimedwait, rt_sigprocmask, rt_sigreturn, write, read, close, exit, exit_group,
 * clock_gettime, getpid, restart_syscall, ppoll; everything else (and every foreign architecture) KILL_PROCESS. */
int sc_compile_init(struct seccomp_program *out, fy_error **reterr);
/* libseccomp's API level here: every profile's filter ends with
 * SCMP_ACT_KILL_PROCESS, which needs 3 (the probe's seccomp verdict). */
unsigned sc_api_level(void);

/* The process-wide program for (cls, notify), or the init program when init: made once per
 * process (never freed; immutable afterwards), from saved (sc_program_save's form, may be
 * NULL) when it decodes and passes the same self check as a compiled program, else
 * compiled. NULL with *reterr set when it cannot be compiled. Thread-safe. */
const struct seccomp_program *sc_program_get(uint32_t cls, bool notify, bool init, const char *saved,
                                             fy_error **reterr);

/* The saved form of p (a string: version, foreign-architecture action, base64 BPF) for a
 * probe snapshot; malloc'd, NULL on OOM. */
char *sc_program_save(const struct seccomp_program *p);

/* A saved form decoded into *out and held to this library's contract for (cls, notify) or
 * init (the self check of sc_compile; the foreign-architecture action must be the
 * violation's or KILL_PROCESS): 0, or -1 with *out zeroed. */
int sc_program_from_saved(uint32_t cls, bool notify, bool init, const char *saved,
                          struct seccomp_program *out);

/* The filter a sandbox without an IPC namespace of its own stacks on its
 * profile: System V IPC and POSIX message queue calls fail with EPERM,
 * everything else is the profile's. Static; NULL (len 0) on architectures
 * it does not know. */
const void *sc_ipc_deny_program(uint16_t *len);
/* Stacked on the profile where the sandbox has no pid namespace: the calls
 * that change another process's limits, priority, CPUs or I/O class fail
 * with EPERM unless they name the caller itself (a static program; NULL
 * and *len 0 on other architectures). */
const void *sc_others_deny_program(uint16_t *len);

/* Frees p->filter and zeroes *p. NULL-safe, idempotent. */
void sc_program_free(struct seccomp_program *p);

/* Name of syscall nr on audit arch `arch` (from a seccomp_notif's data.arch/data.nr), e.g. "kexec_load",
 * "i386:mount", "x32:getpid"; writes into buf and returns it. Never fails (falls back to "syscall 123",
 * "i386:syscall 999"); the name is truncated to fit len. */
const char *sc_syscall_name(uint32_t arch, int nr, char *buf, size_t len);

/* Whether a notification of call nr (of arch) under class cls is a denial
 * the profile only notes (the ptrace family in general-build: answered
 * EPERM and counted, the attempt goes on) rather than a violation. */
int sc_is_noted(uint32_t cls, uint32_t arch, int nr);
/* 1 if (arch, nr) is a call the profile treats as a violation (so the supervisor can tell), else 0.
 * Every foreign architecture and every x32 call is a violation. ioctl counts as one: only the
 * TIOCSTI/TIOCLINUX forms reach the supervisor. */
int sc_is_violation(uint32_t cls, uint32_t arch, int nr);

#endif
