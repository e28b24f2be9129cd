/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard-init: the sandbox's pid 1 as a program of its own. The library
 * embeds it, writes it to a sealed memfd per attempt and executes it in
 * the sandbox's fresh namespaces straight after clone (linux-child.c,
 * linux_exec_init), so that the sandbox never holds a copy of the host
 * process: starting one costs the same whatever the host's size, and no
 * host memory (other attempts' secrets, tokens) is ever inside it.
 *
 * argv[1] is an fd of the packed arguments (linux-pack.h), or "probe",
 * argv[2] a pipe to say it started on; everything else is linux_child_main, the same code
 * the library runs when it cannot execute this program. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux-pack.h"

__attribute__((noreturn)) static void fail(void) {
    syscall(SYS_exit_group, 126);
    __builtin_unreachable();
}

static int parse_fd(const char *s) {
    int fd = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || fd > 100000)
            return -1;
        fd = fd * 10 + (*s - '0');
    }
    return fd;
}

__attribute__((noreturn, used)) void fy_init_entry(long *sp);
__attribute__((noreturn, used)) void fy_init_entry(long *sp) {
    prctl(PR_SET_NAME, "forgeyard-init", 0, 0, 0); /* not "memfd:forgeyard" in ps */
    long argc = sp[0];
    char **argv = (char **)(sp + 1);
    if (argc < 3)
        fail();
    static const char probe[] = "probe";
    bool probing = true;
    for (size_t i = 0; i < sizeof(probe); i++)
        probing = probing && argv[1][i] == probe[i];
    if (probing) {
        /* linux-probe.c: could we be executed here? Say so, and go. */
        int started = 0, report = parse_fd(argv[2]);
        syscall(SYS_exit_group, report >= 0 && write(report, &started, sizeof(started)) == sizeof(started) ? 0 : 126);
    }
    int fd = parse_fd(argv[1]), report = parse_fd(argv[2]);
    if (fd < 0 || report < 0)
        fail();
    int started = 0;
    if (write(report, &started, sizeof(started)) != (ssize_t)sizeof(started))
        fail();
    close(report);
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (64 << 20))
        fail();
    /* A private copy, not a mapping of the memfd: once the host and we
     * closed it, the secrets it carries are gone from the page cache and
     * live only here, where linux_child_main wipes them after use. */
    size_t len = (size_t)st.st_size;
    unsigned char *blob = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (blob == MAP_FAILED)
        fail();
    for (size_t got = 0; got < len;) {
        ssize_t k = pread(fd, blob + got, len - got, (off_t)got);
        if (k <= 0)
            fail();
        got += (size_t)k;
    }
    close(fd);
    struct child_args *a = lx_unpack(blob, len);
    if (!a)
        fail();
    linux_child_main(a);
}
