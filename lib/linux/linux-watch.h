/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The disk watchdog (linux-watch.c). */
#ifndef FY_LINUX_WATCH_H
#define FY_LINUX_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct watch_total {
    uint64_t bytes;         /* allocated blocks */
    uint64_t files;         /* directory entries of any kind */
    const char *unmeasured; /* static: why part of a tree was not counted (NULL: all was) */
};

/* How deep the walk goes; a deeper directory is not counted, and said so. */
#define WATCH_MAX_DEPTH 128

/* Walks the directories (no symlinks followed, one filesystem each). What
 * cannot be counted (a tree deeper than WATCH_MAX_DEPTH, a directory the
 * walker cannot read: a rootless workload's mode-000 one) is named in
 * unmeasured, for the caller to treat as a crossed quota: a workload must
 * not hide what it writes from the count. */
void watch_measure(const char *const *dirs, size_t n, struct watch_total *t);

/* How many processes and nameless files watch_unnamed looks at; more is
 * not counted, and said so. */
#define WATCH_MAX_PROCS 65536
#define WATCH_MAX_UNNAMED 4096
/* How many descriptors one pass examines (each an fstat through /proc,
 * about 2 us): 30 processes holding 20,000 each made a pass take seconds,
 * on the thread that enforces the deadline (an exploration, session 35).
 * More is not counted, and said so (the quota then reads as crossed). */
#define WATCH_MAX_FDS (1u << 17)
/* And how many lines of the processes' mappings (each process may hold
 * 65530 mappings: thousands of processes made a pass of hundreds of
 * millions of lines). Reading a line costs less than an fstat. */
#define WATCH_MAX_MAPS (1u << 19)

/* Adds to t what the processes of the tree rooted at root (the sandbox's
 * init, as the host sees it; its own descriptors are the library's and not
 * looked at) hold on the directories' filesystems without
 * a name: regular files open or mapped with no link left (O_TMPFILE, or
 * unlinked while open), each counted once. They take blocks on the host's
 * filesystem until the attempt ends, and no walk of the directories finds
 * them. Every task's descriptor table is looked at (a thread made without
 * CLONE_FILES has its own). A process whose descriptors or mappings cannot
 * be examined makes the count unmeasured: rootless, one that made itself
 * not dumpable; not one that holds nothing (a zombie, an exiting one) or
 * the workload's first process before it executed (the library's). */
void watch_unnamed(pid_t root, const char *const *dirs, size_t n, struct watch_total *t);

#endif
