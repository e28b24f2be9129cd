/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OS layer: the few calls of core whose form differs between POSIX and
 * Windows. lib/sys/posix/posix-os.c or lib/sys/windows/win-os.c implements
 * them (meson picks one by host system); core calls nothing else that is
 * POSIX-only. A "waitable" is an int: a file descriptor on POSIX, the value
 * of a HANDLE on Windows (handles fit in 32 bits by the Windows ABI). */
#ifndef FY_OS_H
#define FY_OS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A wakeup object that fy_handle_cancel sets from any thread: a
 * non-blocking eventfd / a manual-reset event. Returns a waitable, or
 * -errno. */
int os_wake_open(void);
void os_wake_signal(int w);
/* Consumes a pending wakeup (none pending: nothing happens). */
void os_wake_drain(int w);
void os_wake_close(int w);
/* Blocks until a or b is ready (readable / signalled) or ms pass (-1:
 * no limit); 0, or -errno (an interrupted wait is 0). */
int os_wait2(int a, int b, int ms);
/* A close-on-exec (non-inheritable) duplicate of fd, at least 3 where the
 * OS numbers so, or -errno. */
int os_dup_cloexec(int fd);
/* The host program's environment (NULL-terminated "NAME=value"). */
char **os_environ(void);
/* Runs fn in the child of every fork() of the host process, before fork
 * returns there (pthread_atfork; Windows has no fork: nothing runs). For
 * the library's process-wide locks: a lock another thread of the parent
 * held is held for ever in the child, which has only the forking thread
 * (util_mutex_reclaim). At most 16; called from library constructors.
 * glibc forgets the handlers of an unloaded library. */
void os_on_fork_child(void (*fn)(void));
/* Starts fn(arg) on a new thread that takes none of the host's signals
 * (they are the host's threads'); *th is a pthread_t, filled unless
 * detached (nobody joins the thread then). beside: the thread shares the
 * calling thread's work right now, so it starts on another of the
 * caller's CPUs where the OS lets a start be placed (Linux), and may then
 * run on any of them: a new thread otherwise starts on its creator's busy
 * CPU and waits there until the scheduler moves it (measured here: a
 * helper hashing beside its creator did a fifth of the work, not half).
 * (Until its first run it waits for those CPUs: behind a real-time task
 * that holds them, for as long as the kernel's RT throttling allows.)
 * 0, or an errno value. */
int os_thread_start(void *th, bool detached, bool beside, void *(*fn)(void *), void *arg);
/* Where this user's cache named leaf ("images", "vm", "actions") lives
 * (malloc'd), not made: $override when that variable names an absolute
 * path; as root /var/cache/forgeyard/LEAF; else $XDG_CACHE_HOME/forgeyard/
 * LEAF, else ~/.cache/forgeyard/LEAF when $HOME is a directory of this
 * user's; else (a service user: HOME=/nonexistent, or /) LEAF in a 0700
 * directory of this user's own, forgeyard-UID in $TMPDIR or /var/tmp,
 * made here. NULL (errno set) when there is none: that directory exists
 * and is not this user's alone, or cannot be made. */
char *os_cache_dir(const char *override, const char *leaf);
/* open(path, flags | O_CLOEXEC | O_NOFOLLOW) where no component of the
 * absolute path may be a symbolic link (O_NOFOLLOW alone covers the last:
 * a secret file reached through a linked directory came from /sys): an
 * fd, or -errno (-ELOOP for a link on the way). */
int os_open_no_links(const char *path, int flags);
/* Whether fd lies on a kernel interface file system (proc, sysfs,
 * debugfs, tracefs, securityfs, cgroup, bpf, configfs...), whatever path
 * reached it: a bind mount elsewhere passes every test of its name. */
bool os_fd_on_kernel_fs(int fd);
struct utsname;
/* uname(2) as the machine is, not as the calling process's personality
 * shows it (UNAME26 fakes a 2.6 release, PER_LINUX32 a 32-bit machine),
 * for the evidence and the platform checks: 0, or -1. */
int os_uname(struct utsname *u);
/* The missing parent directories of path made with mode (existing ones
 * untouched; path itself not made). 0, or -errno. */
int os_mkdir_parents(const char *path, mode_t mode);
#ifndef _WIN32
/* A directory that is the caller's alone: at/path (made with create_mode
 * first when that is not 0 and it is missing), opened without following a
 * link, owned by the effective uid, with none of the permission bits in
 * forbid (022: no group or other write; 077: no group or other access).
 * An O_RDONLY|O_DIRECTORY|O_CLOEXEC fd, or -errno: -EPERM when it exists
 * but is not the caller's alone, -ELOOP for a link, -ENOTDIR. Every
 * directory the library acts on because it is the caller's (state
 * records, the saved probe, caches) is opened through this one check.
 * (POSIX hosts only: no Windows caller.) */
int os_open_own_dir(int at, const char *path, mode_t create_mode, mode_t forbid);
/* This process as names on disk identify it to a later process of the same
 * user: its pid namespace (an id; 0 where the OS has none), its pid and its
 * start time (os_process_start). */
void os_self_identity(uint64_t *pidns, int *pid, uint64_t *start);
/* The start time of process pid of this process's pid namespace (a token
 * that differs for a reused pid where the OS keeps one; nonzero), or 0
 * when no such process runs. (POSIX hosts only.) */
uint64_t os_process_start(int pid);
/* Whether process pid of this process's pid namespace is the one that
 * started at start (os_process_start) and still runs: false for a zombie,
 * a reused pid or none; true when that cannot be told (its /proc entry
 * unreadable for want of descriptors, say): never judged dead on a doubt.
 * (POSIX hosts only.) */
bool os_process_alive_as(int pid, uint64_t start);
/* Removes at/name and, when it is a directory, everything below it, never
 * following a symbolic link: every directory is opened O_NOFOLLOW from its
 * parent's descriptor. Any depth: at most OS_RM_OPEN directories are open
 * at once, and a directory below that is first moved up into the tree's
 * own top directory (which is being removed with it), so that a workload's
 * 10,000-deep tree goes like a flat one. Flags:
 * - OS_RM_ONE_FS: never into another file system (a mount left under the
 *   tree is not the caller's to empty): it stays, with its parents, and
 *   the call fails with -EXDEV.
 * - OS_RM_OPEN_UP: a directory of the caller's that lacks read, search or
 *   write permission (a workload's chmod 000 or 555, overlayfs's mode-0
 *   work/work) gets 0700 back, through its own descriptor, never by a name.
 * Everything removable is removed even after a failure. 1 when something
 * was removed, 0 when nothing was there, or -errno (the first failure). */
#define OS_RM_ONE_FS 1u
#define OS_RM_OPEN_UP 2u
#define OS_RM_OPEN 32
int os_remove_tree_at(int at, const char *name, unsigned flags);
/* The same for everything below the directory dirfd, which stays: 0, or
 * -errno (the first failure). */
int os_remove_below(int dirfd, unsigned flags);
#endif

#endif
