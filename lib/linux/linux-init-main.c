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
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux-pack.h"
#include "linux-syscall.h"

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

/* The packed arguments in the sealed memfd fd (closed), or NULL. A
 * private copy, not a mapping of the memfd: once the host and we closed
 * it, the secrets it carries are gone from the page cache and live only
 * here, where linux_child_main wipes them after use. */
static struct child_args *read_packed(int fd) {
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (64 << 20))
        return NULL;
    size_t len = (size_t)st.st_size;
    unsigned char *blob = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (blob == MAP_FAILED)
        return NULL;
    for (size_t got = 0; got < len;) {
        ssize_t k = pread(fd, blob + got, len - got, (off_t)got);
        if (k <= 0)
            return NULL;
        got += (size_t)k;
    }
    close(fd);
    return lx_unpack(blob, len);
}

/* "shell:<sync fd>:<idle ms>:<network namespace 0/1>:<owner pidfd, 0: none>" */
static bool parse_shell(const char *s, int *sync_fd, uint32_t *idle_ms, bool *netns, int *owner_pidfd) {
    static const char pre[] = "shell:";
    for (size_t i = 0; i < sizeof(pre) - 1; i++)
        if (s[i] != pre[i])
            return false;
    s += sizeof(pre) - 1;
    long v[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; k++) {
        if (*s < '0' || *s > '9')
            return false;
        for (; *s >= '0' && *s <= '9'; s++)
            if ((v[k] = v[k] * 10 + (*s - '0')) > 100000000L)
                return false;
        if (*s != (k < 3 ? ':' : '\0'))
            return false;
        s++;
    }
    *sync_fd = (int)v[0];
    *idle_ms = (uint32_t)v[1];
    *netns = v[2] == 1;
    *owner_pidfd = v[3] >= 3 && v[3] != v[0] ? (int)v[3] : -1;
    return v[2] <= 1;
}

/* A pre-started shell (linux-shell.c): fresh namespaces and this init,
 * holding nothing of any attempt. It keeps only its socket to the host,
 * waits for its ids to be mapped, stops being dumpable, and waits for one
 * claim: the packed arguments in a sealed memfd and the attempt's fds
 * (its status pipe, the seccomp notification socket when the plan has
 * one, then the standard streams the plan names). It then is a sandbox's
 * init like any other. With netns, it makes the sandbox's network
 * namespace (lo up, nothing else) once its ids are mapped: the plans that
 * may claim it (the host's key) have one of their own and no router. It
 * then says it is ready ('R'): the host hands out no shell before that. At end of file (the host is gone or discarded it),
 * at a message it does not expect, or after idle_ms without a claim, it
 * exits, and with it the pid namespace. It never executes anything. */
__attribute__((noreturn)) static void shell_main(int sync, uint32_t idle_ms, bool netns, int owner) {
    /* Only the socket stays, and the pidfd of the host (-1: none). */
    int lo = owner >= 0 && owner < sync ? owner : sync, hi = owner > sync ? owner : sync;
    if (sync < 3 || sys_close_range(0, (unsigned)lo - 1, 0) < 0 ||
        (hi > lo + 1 && sys_close_range((unsigned)lo + 1, (unsigned)hi - 1, 0) < 0) ||
        sys_close_range((unsigned)hi + 1, ~0U, 0) < 0)
        fail();
    /* Nor the host's working directory (cloned with it): it would keep a
     * host directory busy, and in reach, for as long as we idle. The root
     * of our own mount namespace instead (the claim makes its own). */
    if (chdir("/") < 0)
        fail();
    lx_default_signals();
    /* (what its claim's workload would inherit from the host: linux_child_main
     * leaves it to us for a pre-started shell) */
    if (lx_reset_inherited() < 0)
        fail();
    int fds[LX_GO_MAX_FDS + 1];
    size_t n;
    bool truncated;
    /* The go-ahead: the tasks files of our v1 cgroups (bare until the
     * claim, which limits them before anything of the attempt runs): we
     * join them, and what we fork after the claim is born in them. */
    if (lx_recv_fds(sync, fds, LX_GO_MAX_FDS + 1, &n, &truncated) != 'g' || truncated || n > LX_GO_MAX_FDS)
        fail();
    for (size_t i = 0; i < n; i++) {
        if (write(fds[i], "0", 1) != 1)
            fail();
        close(fds[i]);
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        fail();
    if (netns) {
        int ns = lx_netns_new();
        if (ns < 0)
            fail();
        close(ns);
    }
    /* Ready: the host hands out only a shell that said so. */
    if (lx_send_fds(sync, 'R', NULL, 0) < 0)
        fail();
    /* The host's end of sync ends with the host only once every fork(2)
     * of it let go of its copy: the host's pidfd says when the host itself
     * exited. */
    struct pollfd p[2] = {{.fd = sync, .events = POLLIN}, {.fd = owner, .events = POLLIN}};
    struct timespec ts = {.tv_sec = idle_ms / 1000, .tv_nsec = (long)(idle_ms % 1000) * 1000000L};
    long r;
    do
        r = syscall(SYS_ppoll, p, owner >= 0 ? 2 : 1, &ts, NULL, 8);
    while (r < 0 && errno == EINTR);
    if (r < 1 || (owner >= 0 && (p[1].revents & POLLIN)))
        syscall(SYS_exit_group, 0); /* idle, or the host is gone: nothing was ever in it */
    if (lx_recv_fds(sync, fds, LX_GO_MAX_FDS + 1, &n, &truncated) != 'C' || truncated || n < 2)
        fail();
    /* Taken: from here on this shell is the attempt's sandbox. */
    if (lx_send_fds(sync, 'A', NULL, 0) < 0)
        fail();
    struct child_args *a = read_packed(fds[0]);
    if (!a)
        fail();
    /* The fds came in the order of the fields the host set. */
    size_t k = 1;
    a->status_fd = fds[k++];
    if (a->notify_sock >= 0)
        a->notify_sock = k < n ? fds[k++] : -1;
    for (int i = 0; i < 3; i++)
        if (a->stdio[i] >= 0)
            a->stdio[i] = k < n ? fds[k++] : -1;
    if (k != n || a->notify_sock < -1)
        fail();
    for (int i = 0; i < 3; i++)
        if (a->stdio[i] < -1)
            fail();
    if (netns != (a->plan->use_netns && !a->plan->net_router))
        fail();
    a->sync_fd = sync;
    a->owner_pidfd = owner;
    a->prestarted = true;
    a->netns_made = netns;
    linux_child_main(a);
}

/* What /proc/1/cmdline shows the workload: "forgeyard-init" alone, cold
 * or pre-started. The arguments (fd numbers; a shell's idle limit and
 * network flag) are read before this and never again: their bytes, the
 * last one's NUL too, become spaces, and the kernel then shows the
 * arguments' memory only up to the first NUL, argv[0]'s. */
static void blank_arguments(long argc, char **argv) {
    if (argc < 2)
        return;
    char *end = argv[argc - 1];
    while (*end)
        end++;
    for (char *c = argv[1]; c <= end; c++)
        *c = ' ';
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
    int shell_sync, shell_owner;
    uint32_t idle_ms;
    bool netns;
    if (parse_shell(argv[1], &shell_sync, &idle_ms, &netns, &shell_owner)) {
        int started = 0, report = parse_fd(argv[2]);
        blank_arguments(argc, argv);
        if (report < 0 || write(report, &started, sizeof(started)) != (ssize_t)sizeof(started))
            fail();
        close(report);
        shell_main(shell_sync, idle_ms, netns, shell_owner);
    }
    int fd = parse_fd(argv[1]), report = parse_fd(argv[2]);
    if (fd < 0 || report < 0)
        fail();
    blank_arguments(argc, argv);
    int started = 0;
    if (write(report, &started, sizeof(started)) != (ssize_t)sizeof(started))
        fail();
    close(report);
    struct child_args *a = read_packed(fd);
    if (!a)
        fail();
    linux_child_main(a);
}
