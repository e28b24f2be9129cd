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

static void walk(int fd0, dev_t dev, struct watch_total *t, int depth) {
    if (depth > 512) {
        close(fd0);
        return;
    }
    DIR *d = fdopendir(fd0);
    if (!d) {
        close(fd0);
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
        if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
            int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0)
                walk(fd, dev, t, depth + 1);
        }
    }
    closedir(d);
}

void watch_measure(const char *const *dirs, size_t n, struct watch_total *t) {
    t->bytes = t->files = 0;
    for (size_t i = 0; i < n; i++) {
        int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
            continue;
        if (fstat(fd, &st) < 0) {
            close(fd);
            continue;
        }
        walk(fd, st.st_dev, t, 0);
    }
}
