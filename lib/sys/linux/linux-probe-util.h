/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers the functional probes (linux-probe.c, vm/vm-probe.c) share: errno
 * names for reasons, millisecond deadlines, program lookup, and the bounded
 * wait for a child process (reaped by its own pid, SIGKILLed after the
 * deadline). All of it runs in the parent, never between fork and _exit. */
#ifndef FY_LINUX_PROBE_UTIL_H
#define FY_LINUX_PROBE_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* How long a SIGKILLed child is given to die before it is left behind. */
#define PU_KILL_GRACE_MS 1000

/* The errno's name ("EPERM") and description ("Operation not permitted"). */
const char *pu_ename(int e);
const char *pu_edesc(int e);

/* "EPERM (Operation not permitted)" */
#define EFMT "%s (%s)"
#define EARG(e) pu_ename(e), pu_edesc(e)

/* A CLOCK_MONOTONIC deadline (in microseconds) ms milliseconds from now. */
uint64_t pu_deadline_after_ms(int ms);
/* Milliseconds until the deadline, rounded up; 0 once it has passed. */
int pu_ms_left(uint64_t deadline);
/* Sleeps ms milliseconds, resuming after signals. */
void pu_sleep_ms(int ms);

/* Whether stat(path) succeeds (follows symlinks). */
bool pu_exists(const char *path);
/* The whole of a small file (a /proc or /sys entry) into buf, NUL-ended,
 * truncated to size - 1, trailing newlines and spaces stripped: 0, or
 * -errno. */
int pu_read_small(const char *path, char *buf, size_t size);
/* Whether the calling thread is root in its real, effective and saved
 * user ids (a raw getresuid: the thread's own, safe in a forked middle). */
bool pu_root_in_all_ids(void);
/* A process's start time (field 22 of /proc/PID/stat, clock ticks after
 * boot: with the pid, what names a process across pid reuse), or 0. */
uint64_t pu_proc_starttime(pid_t pid);
/* The same, and the process's state letter (R, S, D, Z, X...) in *state
 * (0 when unknown): one read of /proc/PID/stat. */
uint64_t pu_proc_stat_start(pid_t pid, char *state);
/* The CPU time (user and system, in the kernel's ticks) pid has used so
 * far, into *usec; false when its stat cannot be read. */
bool pu_proc_cpu_usec(pid_t pid, uint64_t *usec);
/* Whether pid (of this pid namespace) is the process that started at start
 * and still runs: false for a zombie, a reused pid or none; true when its
 * /proc entry cannot be read but the kernel still knows the pid (out of
 * descriptors, say): never judged dead on a doubt. A leader whose own
 * thread ended (pthread_exit in main) while others run is state Z too,
 * and alive. */
bool pu_proc_alive_as(pid_t pid, uint64_t start);
/* Whether a process whose stat says Z or X has really ended: its leader is
 * all that is left of its thread group (Threads in /proc/PID/status; a
 * leader that called pthread_exit stays a zombie, counted, while the rest
 * of its process runs). True when the status cannot be read. */
bool pu_proc_zombie_ended(pid_t pid);
/* Whether errno e says the calling process was short of something at that
 * moment (descriptors, memory, processes, file size: RLIMIT_FSIZE), not
 * that a mechanism is missing or forbidden. A probe that met one is
 * retried, then inconclusive (never saved); a start that met one fails
 * with it. ENOSPC is not one: it is how a user namespace count of 0
 * (user.max_user_namespaces) answers. */
static inline bool pu_short_of(int e) { return e == EMFILE || e == ENFILE || e == ENOMEM || e == EAGAIN || e == EFBIG; }
/* A process's parent in this process's pid namespace, or 0. */
pid_t pu_proc_parent(pid_t pid);

/* Looks a program up in $PATH and the usual system directories. Returns a
 * malloc'd absolute path or NULL. */
char *pu_find_program(const char *name);

/* The directories pu_find_program looks in, in its order: PATH's absolute
 * entries, then the system directories PATH does not name. fn gets each
 * (dir, len: not NUL-terminated) with its index; a nonzero return stops the
 * walk and is returned. */
typedef int (*pu_dir_fn)(const char *dir, size_t len, size_t idx, void *arg);
int pu_search_dirs(pu_dir_fn fn, void *arg);

/* The programs a persisted probe snapshot depends on, without looking each
 * up in every directory on every load (linux-snapshot.c):
 * - pu_programs_key: into the snapshot's key, the search directories (once
 *   per key: each one's dev, inode, mode, mtime and ctime, which change
 *   whenever a name is added, removed or renamed in it) and a "program NAME"
 *   line per name;
 * - pu_programs_record: when the snapshot is saved, each declared program's
 *   search as pu_find_program makes it, every entry of its name that exists
 *   with its whole stat ("verify" lines, appended to table). 1 when
 *   something it depends on changed since shortly before the key was made
 *   on this thread (timestamps are coarse): then nothing may be saved;
 * - pu_programs_verify: whether every verify line still holds (a stat per
 *   entry written down, and access for regular files), and every declared
 *   program has its lines. Together with the key's directories: a fresh
 *   lookup would find exactly what the probe found. */
struct strbuf;
int pu_programs_key(struct strbuf *key, const char *const *names, size_t n);
int pu_programs_record(const char *key, struct strbuf *table);
bool pu_programs_verify(const char *key, const char *table, size_t len);

/* A child process the probe owns. */
struct pu_proc {
    pid_t pid;
    int pidfd;  /* -1 when pidfd_open is unavailable */
    bool reaped;
    int status; /* wait status once reaped; -1: reaped by someone else */
};

/* Waits for the child to exit until the deadline. true when reaped. */
bool pu_wait_until(struct pu_proc *p, uint64_t deadline);

/* Reaps the child: waits until the deadline, then SIGKILLs it and waits a
 * bounded grace period (PU_KILL_GRACE_MS). Closes the pidfd. *ret_killed
 * (when not NULL) tells whether SIGKILL was needed. Returns true when the
 * child was reaped (false: it survived SIGKILL within the grace and is left
 * behind). */
bool pu_finish(struct pu_proc *p, uint64_t deadline, bool *ret_killed);

/* Runs argv[0] (an absolute path) with argv and envp, stdin from fd_in and
 * stdout and stderr to fd_out, every other descriptor closed, default signal
 * dispositions and an empty signal mask. Unlike posix_spawn, the child is
 * invisible to the host's SIGCHLD disposition (exit signal 0: never reaped
 * by a host that ignores SIGCHLD, never a call of its handler). Fills *p
 * (pid and pidfd) and returns 0, or returns a positive errno (an exec
 * failure included; the child is then already reaped). */
int pu_spawn(const char *const *argv, char *const *envp, int fd_in, int fd_out, struct pu_proc *p);

/* The end of a middle process (raw system calls only, in a forked child):
 * every descriptor closed, pid (its child) waited for, then the same
 * ending as pid's: its exit status, or its signal (no core dump of our
 * own). wait_failed: the exit status if the wait itself fails. */
__attribute__((noreturn)) void pu_end_as_child(pid_t pid, pid_t self, int wait_failed);
/* Ends the calling process the way a child with wait status st ended: by
 * the same signal (no core dump of its own), or with the same status. */
__attribute__((noreturn)) void pu_end_like(int st, pid_t self);

/* Descriptors that a fork of the host must not keep: what holds a network
 * namespace of an attempt's (its veth, routes and rules with it) or the
 * reservation of its link. A forked child (a prefork server's worker)
 * kept them open after the host was killed, and they outlived the attempt
 * where no gc can reach them; the child of every fork closes them
 * (pthread_atfork; the library's own clones run no such handler, and the
 * library's objects refuse use after a fork anyway). add after the open,
 * del before the close; at most PU_FORK_CLOSE_MAX at once (beyond, a fd
 * is kept as before). Lock-free: any thread, and the fork child. */
#define PU_FORK_CLOSE_MAX 1024
void pu_fork_close_add(int fd);
void pu_fork_close_del(int fd);
/* Closes *fd (>= 0), its registration first, and sets it to -1. */
void pu_fork_close_fd(int *fd);

#endif
