/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The disk watchdog for writable host-backed directories (build, output,
 * writable binds): where no filesystem quota is available, the library
 * walks them and ends the attempt when a byte or file-count quota is
 * crossed. The walk never follows symlinks and never leaves the directory's
 * filesystem (a bind mounted inside it is not the workload's to count). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux-watch.h"

_Static_assert(WATCH_MAX_DEPTH == 128, "the message below names the depth");

static void walk(int fd0, dev_t dev, struct watch_total *t, int depth) {
    DIR *d = fdopendir(fd0);
    if (!d) {
        close(fd0);
        t->unmeasured = "a directory the watchdog cannot read";
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        t->files++;
        t->bytes += (uint64_t)st.st_blocks * 512u;
        if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
            continue;
        if (depth + 1 > WATCH_MAX_DEPTH) {
            t->unmeasured = "a directory tree deeper than 128 levels";
            continue;
        }
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            walk(fd, dev, t, depth + 1);
        else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) /* (not gone or replaced meanwhile) */
            t->unmeasured = "a directory the watchdog cannot read";
    }
    closedir(d);
}

void watch_measure(const char *const *dirs, size_t n, struct watch_total *t) {
    t->bytes = t->files = 0;
    t->unmeasured = NULL;
    for (size_t i = 0; i < n; i++) {
        int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
            if (errno != ENOENT)
                t->unmeasured = "a directory the watchdog cannot read";
            continue;
        }
        if (fstat(fd, &st) < 0) {
            close(fd);
            continue;
        }
        walk(fd, st.st_dev, t, 0);
    }
}
