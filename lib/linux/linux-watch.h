/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The disk watchdog (linux-watch.c). */
#ifndef FY_LINUX_WATCH_H
#define FY_LINUX_WATCH_H

#include <stddef.h>
#include <stdint.h>

struct watch_total {
    uint64_t bytes; /* allocated blocks */
    uint64_t files; /* directory entries of any kind */
};

/* Walks the directories (no symlinks followed, one filesystem each). */
void watch_measure(const char *const *dirs, size_t n, struct watch_total *t);

#endif
