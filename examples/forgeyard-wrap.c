/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard-wrap: the first hop of a remote-execution worker's wrapper
 * (Buildfarm's executionWrapper, NativeLink's entrypoint), which such a
 * worker starts with the ACTION's environment, all of it the action's
 * choice: LD_PRELOAD naming a library among its own inputs ran the
 * action's code in `forgeyard wrap` itself, on the host, before main.
 *
 * This program is linked statically (no dynamic loader reads its
 * environment) and reads nothing of that environment but to copy it: the
 * entries go, unchanged, into a memfd that `forgeyard wrap --env-fd`
 * takes as the workload's environment, and forgeyard runs with an
 * environment of the operator's (PATH, and what --host-env names in the
 * worker's configuration).
 *
 * usage: forgeyard-wrap [--forgeyard PATH] [--host-env NAME=VALUE]...
 *                       [WRAP OPTIONS] -- COMMAND [ARG...]
 * Status: forgeyard's; 245 when it cannot be run. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef FY_WRAP_FORGEYARD
#define FY_WRAP_FORGEYARD "/usr/bin/forgeyard"
#endif

enum { WRAP_INFRA = 245, WRAP_BAD = 246, HOST_ENV_MAX = 64 };

extern char **environ;

static int die(int status, const char *what) {
    fprintf(stderr, "forgeyard-wrap: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
    return status;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *fy = FY_WRAP_FORGEYARD;
    char *host_env[HOST_ENV_MAX + 2];
    int nhost = 0, i = 1;
    host_env[nhost++] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--forgeyard") == 0 && i + 1 < argc) {
            fy = argv[++i];
        } else if (strcmp(argv[i], "--host-env") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            errno = 0;
            if (!strchr(v, '=') || v[0] == '=')
                return die(WRAP_BAD, "--host-env expects NAME=VALUE");
            if (nhost > HOST_ENV_MAX)
                return die(WRAP_BAD, "too many --host-env");
            if (strncmp(v, "PATH=", 5) == 0)
                host_env[0] = (char *)v;
            else
                host_env[nhost++] = (char *)v;
        } else {
            break;
        }
    }
    host_env[nhost] = NULL;
    if (fy[0] != '/') {
        errno = 0;
        return die(WRAP_BAD, "--forgeyard must be an absolute path (no search through the action's PATH)");
    }
    /* The action's environment, entry by entry, NUL-terminated. Not
     * close-on-exec: forgeyard reads it, then closes it. */
    int fd = memfd_create("forgeyard-wrap-env", MFD_ALLOW_SEALING);
    if (fd < 0)
        return die(WRAP_INFRA, "memfd_create");
    for (char **e = environ; e && *e; e++)
        if (write_all(fd, *e, strlen(*e) + 1) < 0)
            return die(WRAP_INFRA, "writing the environment");
    if (lseek(fd, 0, SEEK_SET) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
        return die(WRAP_INFRA, "sealing the environment");
    char fdnum[16];
    snprintf(fdnum, sizeof(fdnum), "%d", fd);
    int rest = argc - i;
    char **nargv = calloc((size_t)rest + 5, sizeof(char *));
    if (!nargv)
        return die(WRAP_INFRA, "out of memory");
    nargv[0] = "forgeyard";
    nargv[1] = "wrap";
    nargv[2] = "--env-fd";
    nargv[3] = fdnum;
    for (int k = 0; k < rest; k++)
        nargv[4 + k] = argv[i + k];
    execve(fy, nargv, host_env);
    return die(WRAP_INFRA, fy);
}
