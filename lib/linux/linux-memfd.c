/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sealed memfds (linux-memfd.h): the programs the library executes
 * (forgeyard-init, fy-proxy) and the packed arguments they read. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "linux-memfd.h"

#ifndef MFD_NOEXEC_SEAL
#  define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#  define MFD_EXEC 0x0010U
#endif

/* A sealed memfd holding len bytes (exec: MFD_EXEC where the kernel knows
 * it, else MFD_NOEXEC_SEAL), or -errno. */
int lx_sealed_memfd(const char *name, const void *data, size_t len, bool exec) {
    unsigned mode = exec ? MFD_EXEC : MFD_NOEXEC_SEAL;
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | mode);
    if (fd < 0 && errno == EINVAL) /* before Linux 6.3 */
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    /* A memfd's size counts against RLIMIT_FSIZE, and a write past it
     * raises SIGXFSZ in the caller (a host under `ulimit -f` or systemd's
     * LimitFSIZE=, killed by default): refused here with EFBIG instead. */
    struct rlimit fl;
    if (getrlimit(RLIMIT_FSIZE, &fl) == 0 && fl.rlim_cur != RLIM_INFINITY && len > fl.rlim_cur) {
        close(fd);
        return -EFBIG;
    }
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            return -e;
        }
        p += w;
        len -= (size_t)w;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}
