/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fetch-only proxy, the host's side (linux-proxy.h has the design):
 * credentials, the listener, starting the proxy program (linux-proxy-main.c,
 * embedded, executed from a sealed memfd), stopping it, the report. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "linux-memfd.h"
#include "linux-plan.h"
#include "linux-probe-util.h"
#include "linux-dns-parse.h"
#include "linux-proxy.h"
#include "linux-syscall.h"

extern const unsigned char lx_proxy_blob[];
extern const size_t lx_proxy_blob_len;

/* ---- host side: credentials ---- */


/* Headers that frame or route the request, or belong to one hop: the
 * proxy writes or drops them itself. A credential of one of these names
 * replaced the workload's: "Content-Length: 0" turned a POST's body into a
 * second request the proxy never saw (nor audited). */
static bool proxy_owned_header(const char *name, size_t len) {
    static const char *const owned[] = {"Host",      "Content-Length", "Transfer-Encoding", "Connection",
                                        "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
                                        "Proxy-Authenticate", "TE", "Trailer", "Upgrade", "Expect"};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (strlen(owned[i]) == len && strncasecmp(owned[i], name, len) == 0)
            return true;
    return false;
}

int lxp_load_credentials(struct lxp_config *cfg, const char *path, struct arena *arena, fy_error **reterr) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK); /* (a FIFO: refused below) */
    if (fd < 0) {
        int e = errno;
        return err_set(reterr, err_from_errno(e), FY_STEP_PROXY, e, "$.network.host",
                       "fetch-only credentials %s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_size > 256 * 1024) {
        close(fd);
        return err_set(reterr, FY_E_DENIED, FY_STEP_PROXY, 0, "$.network.host",
                       "fetch-only credentials %s: must be a regular file of at most 256 KiB that only its owner "
                       "can read (chmod 600)", path);
    }
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0 || n != st.st_size) {
        free(text);
        return err_set(reterr, text ? FY_E_IO : FY_E_NOMEM, FY_STEP_PROXY, 0, "$.network.host",
                       "fetch-only credentials %s: cannot read", path);
    }
    text[n] = 0;
    struct lxp_cred *creds = arena_keep(arena, calloc(LXP_CREDS_MAX, sizeof(*creds)));
    if (!creds) {
        explicit_bzero(text, (size_t)n);
        free(text);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROXY, 0, NULL, "out of memory");
    }
    int r = 0;
    unsigned lineno = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r')
            line[--ll] = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        if (!*line || *line == '#')
            continue;
        char *sp = strpbrk(line, " \t");
        char *colon = sp ? strchr(sp, ':') : NULL;
        const char *why = NULL;
        struct lxp_req rq;
        char *value = NULL;
        if (!sp || !colon) {
            why = "expects HOST:PORT Name: value";
        } else {
            *sp = 0;
            char *name = sp + 1;
            while (*name == ' ' || *name == '\t')
                name++;
            value = colon + 1;
            while (*value == ' ' || *value == '\t')
                value++;
            memset(&rq, 0, sizeof(rq));
            /* The authority parser of the proxy itself (a port required). */
            char req[LXP_HOST_MAX + 40];
            int k = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\n\r\n", line);
            const char *pw = "";
            if (k <= 0 || (size_t)k >= sizeof(req) || lxp_parse(req, (size_t)k, &rq, &pw) <= 0)
                why = "bad HOST:PORT";
            else if (!lxp_is_token(name, (size_t)(colon - name)))
                why = "bad header name";
            else if (proxy_owned_header(name, (size_t)(colon - name)))
                why = "a header the proxy frames the request with (Host, Content-Length, Transfer-Encoding, "
                      "Connection and the other hop-by-hop headers): not a credential";
            else if ((size_t)(colon - name) + 2 + strlen(value) >= LXP_INJECT_MAX)
                why = "credential too long"; /* (as "Name: value", what the proxy sends: never cut short) */
            for (const char *c = value; !why && *c; c++)
                if ((unsigned char)*c < 0x20 && *c != '\t')
                    why = "control character in the value";
            bool known = false;
            for (uint32_t i = 0; !why && i < cfg->ndests && !known; i++)
                known = lxp_host_matches(&cfg->dests[i], rq.host, rq.port);
            if (!why && !known)
                why = "HOST:PORT is not one of the fetch-only destinations";
            if (!why && cfg->ncreds == LXP_CREDS_MAX)
                why = "too many credentials";
            /* (each line of a HOST:PORT is sent; one header named twice would be ambiguous) */
            for (uint32_t i = 0; !why && i < cfg->ncreds; i++) {
                size_t nl = (size_t)(colon - name);
                if (creds[i].port == rq.port && strcmp(creds[i].host, rq.host) == 0 &&
                    strncasecmp(creds[i].inject, name, nl) == 0 && creds[i].inject[nl] == ':')
                    why = "a second credential for the same header of this HOST:PORT";
            }
            if (!why) {
                struct lxp_cred *c = &creds[cfg->ncreds++];
                snprintf(c->host, sizeof(c->host), "%s", rq.host);
                c->port = rq.port;
                snprintf(c->inject, sizeof(c->inject), "%.*s: %s", (int)(colon - name), name, value);
            }
        }
        if (why)
            r = err_set(reterr, FY_E_POLICY, FY_STEP_PROXY, 0, "$.network.host",
                        "fetch-only credentials %s, line %u: %s", path, lineno, why);
    }
    explicit_bzero(text, (size_t)n);
    free(text);
    if (r == 0)
        cfg->creds = creds;
    else
        explicit_bzero(creds, LXP_CREDS_MAX * sizeof(*creds));
    return r;
}

/* ---- the listener inside the sandbox's namespace ---- */

/* A helper child joins the sandbox's user namespace (so that an
 * unprivileged host may join its network namespace too), creates the
 * listening socket there and sends it back; the socket stays in that
 * namespace whoever holds it. */
/* kind: 0 the proxy's listener (127.0.0.1:3128), 1 the DNS stub's UDP
 * socket, 2 its TCP listener (both 127.0.0.53:53); s made in the sandbox's
 * namespace. 0 or -errno. */
static int bind_listener(int s, int kind) {
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(kind ? 53 : LXP_PORT),
                             .sin_addr.s_addr = kind ? htonl(0x7f000035u) /* LXP_DNS_ADDR */ : htonl(INADDR_LOOPBACK)};
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) < 0 ||
        bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (kind != 1 && listen(s, kind == 2 ? LXD_TCP_CONN_MAX : LXP_CONN_MAX) < 0))
        return -errno;
    return 0;
}

__attribute__((noreturn)) static void listener_main(int sandbox_ns, int userns, int sock, bool dns) {
    if ((userns >= 0 && setns(userns, CLONE_NEWUSER) < 0) || setns(sandbox_ns, CLONE_NEWNET) < 0)
        syscall(SYS_exit_group, 20);
    /* The DNS stub: its UDP socket and its TCP listener; the proxy: its listener. */
    int s[2] = {socket(AF_INET, (dns ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0),
                dns ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1};
    if (s[0] < 0 || bind_listener(s[0], dns ? 1 : 0) < 0 || (dns && (s[1] < 0 || bind_listener(s[1], 2) < 0)))
        syscall(SYS_exit_group, 21);
    char byte = 'L';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(2 * sizeof(int))];
    } u;
    memset(&u, 0, sizeof(u));
    size_t nfd = dns ? 2 : 1;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = CMSG_SPACE(nfd * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
    memcpy(CMSG_DATA(c), s, nfd * sizeof(int));
    syscall(SYS_exit_group, sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : 22);
    __builtin_unreachable();
}

/* The same socket made by the calling thread, which joins the sandbox's
 * network namespace for the two calls and comes back (only this thread's
 * namespace changes): a host with the privilege over it (root) needs no
 * helper process. The fd, -EPERM (then the helper child), or -errno. */
static int listener_here(int sandbox_ns, int kind) {
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0)
        return -errno;
    if (setns(sandbox_ns, CLONE_NEWNET) < 0) {
        int e = errno;
        close(self);
        return e == EPERM || e == EINVAL ? -EPERM : -e;
    }
    int s = socket(AF_INET, (kind == 1 ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0), e = errno;
    if (setns(self, CLONE_NEWNET) < 0)
        abort(); /* a thread that cannot come back must not go on in the wrong namespace */
    close(self);
    if (s < 0)
        return -e;
    /* (Bound and listening in its own namespace, whichever the thread's.) */
    if ((e = bind_listener(s, kind)) < 0) {
        close(s);
        return e;
    }
    return s;
}

/* The proxy's listener, or (dns) the stub's UDP socket and, in *ret_tcp,
 * its TCP listener. */
static int make_listener(int sandbox_ns, int *ret_fd, int *ret_tcp, bool dns) {
    if (geteuid() == 0) {
        int s = listener_here(sandbox_ns, dns ? 1 : 0), t = dns && s >= 0 ? listener_here(sandbox_ns, 2) : -1;
        if (dns && s >= 0 && t < 0) {
            close(s);
            s = t;
        }
        if (s >= 0) {
            *ret_fd = s;
            if (dns)
                *ret_tcp = t;
            return 0;
        }
        if (s != -EPERM)
            return s;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    int userns = ioctl(sandbox_ns, NS_GET_USERNS);
    if (userns >= 0)
        (void)fcntl(userns, F_SETFD, FD_CLOEXEC);
    /* Joining our own user namespace is refused (EINVAL): then the
     * network namespace alone. */
    struct stat a, b;
    if (userns >= 0 && fstat(userns, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
        close(userns);
        userns = -1;
    }
    struct pu_proc p = {.pid = -1, .pidfd = -1};
    p.pid = sys_fork_quiet_pidfd(&p.pidfd);
    if (p.pid == 0)
        listener_main(sandbox_ns, userns, sv[1], dns);
    int e = p.pid < 0 ? errno : 0;
    close(sv[1]);
    if (userns >= 0)
        close(userns);
    int fd = -1;
    if (!e) {
        (void)pu_finish(&p, pu_deadline_after_ms(10000), NULL);
        char byte = 0;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(2 * sizeof(int))];
        } u;
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
        ssize_t n = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
        int fds[2] = {-1, -1};
        size_t want = dns ? 2 : 1;
        if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(fds, CMSG_DATA(c), (got > 2 ? 2 : got) * sizeof(int));
            if (got == want) {
                fd = fds[0];
                if (dns)
                    *ret_tcp = fds[1];
            } else {
                for (size_t i = 0; i < (got > 2 ? 2 : got); i++)
                    close(fds[i]);
            }
        }
        if (fd < 0)
            e = p.reaped && p.status >= 0 && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 20 ? EPERM : EPROTO;
    }
    close(sv[0]);
    *ret_fd = fd;
    return -e;
}

/* ---- host side: start, stop, report ---- */

void lxp_run_init(struct lxp_run *run) {
    memset(run, 0, sizeof(*run));
    run->pid = -1;
    run->pidfd = run->alive_wr = -1;
    run->defer_fd[0] = run->defer_fd[1] = run->defer_wake = -1;
}

static int fail(fy_error **reterr, int e, const char *what) {
    return err_set(reterr, err_from_errno(e), FY_STEP_PROXY, e, NULL, "fetch-only proxy: %s: %s", what, strerror(e));
}

bool lxp_program_available(void) {
    return lx_proxy_blob_len > 0;
}

/* The uid a proxy or stub started by root runs as: the configuration's,
 * never root (0 there means the caller named none: 65534). */
static uint32_t root_run_uid(const struct lxp_config *cfg) {
    return cfg->run_uid ? cfg->run_uid : 65534;
}

/* The proxy's configuration packed (struct lxp_packed) into a sealed
 * memfd: the allowlist and this attempt's own credentials, nothing else
 * of the host. The fd, or -errno. */
static int pack_config(const struct lxp_config *cfg, uint32_t flags) {
    /* The DNS stub gets no credential, and Landlock's TCP layer with only
     * port 0 (it connects nowhere). */
    bool dns = (flags & LXP_PACK_DNS) != 0;
    size_t dl = (size_t)cfg->ndests * sizeof(struct lxp_dest), cl = dns ? 0 : (size_t)cfg->ncreds * sizeof(struct lxp_cred);
    size_t len = sizeof(struct lxp_packed) + dl + cl;
    unsigned char *blob = calloc(1, len);
    if (!blob)
        return -ENOMEM;
    struct lxp_packed *h = (struct lxp_packed *)blob;
    h->magic = LXP_PACKED_MAGIC;
    h->flags = flags;
    h->ndests = cfg->ndests;
    h->ncreds = dns ? 0 : cfg->ncreds;
    h->nports = dns ? 1 : cfg->nports;
    h->run_uid = root_run_uid(cfg);
    if (!dns)
        memcpy(h->ports, cfg->ports, sizeof(h->ports));
    if (dl)
        memcpy(blob + sizeof(*h), cfg->dests, dl);
    if (cl)
        memcpy(blob + sizeof(*h) + dl, cfg->creds, cl);
    int fd = lx_sealed_memfd("fy-proxy-config", blob, len, false);
    explicit_bzero(blob, len); /* the credentials */
    free(blob);
    return fd;
}

enum { PX_FDS = 5, PX_PROG_FD = 8, PX_ERR_FD = 9 };

#if defined(__SANITIZE_ADDRESS__)
#  define PX_NO_ASAN __attribute__((no_sanitize_address))
#else
#  define PX_NO_ASAN
#endif

/* In the child of the clone, for the few calls up to the exec (raw system
 * calls only: under CLONE_VM it runs on the host's memory and stack while
 * the host's thread waits, and under fork it is a copy of a host that may
 * be multi-threaded): the proxy's fds to 3..7 (linux-proxy-main.c), the
 * program and the error pipe (both close-on-exec) to 8 and 9, every other
 * fd closed, then the program with an empty environment. On failure the
 * errno goes to the error pipe. Not instrumented: ASan's shadow is the
 * host's too under CLONE_VM, and this frame never returns to unpoison it. */
PX_NO_ASAN __attribute__((noreturn)) static void exec_proxy(const int src[PX_FDS], int prog, int err_wr) {
    int hi[PX_FDS], e = 0;
    for (int i = 0; i < PX_FDS && !e; i++)
        if ((hi[i] = src[i] >= 0 ? (int)syscall(SYS_fcntl, src[i], F_DUPFD_CLOEXEC, 16) : -1) < 0 && src[i] >= 0)
            e = errno;
    int prog_hi = e ? -1 : (int)syscall(SYS_fcntl, prog, F_DUPFD_CLOEXEC, 16);
    int efd = (int)syscall(SYS_fcntl, err_wr, F_DUPFD_CLOEXEC, 16);
    if (efd < 0)
        syscall(SYS_exit_group, 127);
    if (!e && prog_hi < 0)
        e = errno;
    for (int i = 0; i < PX_FDS && !e; i++)
        if (hi[i] >= 0 ? syscall(SYS_dup3, hi[i], 3 + i, 0) < 0 : syscall(SYS_close, 3 + i) < 0 && errno != EBADF)
            e = errno;
    if (!e && (syscall(SYS_dup3, prog_hi, PX_PROG_FD, O_CLOEXEC) < 0 || syscall(SYS_dup3, efd, PX_ERR_FD, O_CLOEXEC) < 0))
        e = errno;
    if (!e)
        efd = PX_ERR_FD;
    if (!e && (syscall(SYS_close_range, PX_ERR_FD + 1, ~0U, 0) < 0 || syscall(SYS_close_range, 0, 2, 0) < 0))
        e = errno;
    if (!e) {
        static char *const argv[] = {(char *)"fy-proxy", NULL}, *const envp[] = {NULL};
        syscall(SYS_execveat, PX_PROG_FD, "", argv, envp, AT_EMPTY_PATH);
        e = errno;
    }
    (void)syscall(SYS_write, efd, &e, sizeof(e));
    syscall(SYS_exit_group, 127);
    __builtin_unreachable();
}

/* The program's process without copying the host: clone3 with CLONE_VM |
 * CLONE_VFORK (the host's thread waits until the exec, or the child's end),
 * a pidfd, exit signal 0 (like sys_fork_quiet: the host's SIGCHLD never
 * sees the clone; the exec makes it SIGCHLD, as it did after a fork) and
 * the handlers cleared; the caller blocks every signal around it. A fork
 * of a large host copies its page tables and makes each of its pages
 * copy-on-write, which the host then pays for at every first write after:
 * about 1 ms of CPU per attempt in fy-bench's host. The child must never
 * return from here (it would overwrite the return address we resume
 * with): the system call is inline. The pid, or -1 and errno (ENOSYS where
 * this architecture has no inline clone3 here or clone3 is refused: the
 * caller forks then). */
PX_NO_ASAN __attribute__((noinline)) static pid_t clone_exec_proxy(struct fy_clone_args *ca, const int *src,
                                                                   int prog, int err_wr) {
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)__NR_clone3), "D"(ca), "S"(sizeof(*ca))
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = __NR_clone3;
    register long x0 __asm__("x0") = (long)ca;
    register long x1 __asm__("x1") = (long)sizeof(*ca);
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
    ret = x0;
#else
    (void)ca;
    ret = -ENOSYS;
#endif
    if (ret == 0)
        exec_proxy(src, prog, err_wr);
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return (pid_t)ret;
}

/* The program's process: clone_exec_proxy, or a quiet fork where clone3
 * is not there (before Linux 5.5 no CLONE_CLEAR_SIGHAND: EINVAL) or
 * refused (an outer seccomp profile: ENOSYS, EPERM). */
static pid_t spawn_proxy(const int src[PX_FDS], int prog, int err_wr, int *ret_pidfd) {
    *ret_pidfd = -1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct fy_clone_args ca = {
        .flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | FY_CLONE_CLEAR_SIGHAND,
        .pidfd = (uint64_t)(uintptr_t)ret_pidfd,
        .exit_signal = 0,
    };
    pid_t pid = clone_exec_proxy(&ca, src, prog, err_wr);
    int e = errno;
    if (pid < 0 && (e == ENOSYS || e == EINVAL || e == EPERM)) {
        *ret_pidfd = -1;
        pid = sys_fork_quiet_pidfd(ret_pidfd);
        if (pid == 0)
            exec_proxy(src, prog, err_wr);
        e = errno;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}

static int start_on(struct lxp_run *run, const struct lxp_config *cfg, int lfd, int tcp_fd, int uplink_fd, bool dns,
                    fy_error **reterr);
static int start_program(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, int uplink_fd, bool dns,
                         fy_error **reterr);

int lxp_start(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, int uplink_fd, fy_error **reterr) {
    int r = start_program(run, cfg, sandbox_ns, uplink_fd, false, reterr);
    return r < 0 ? r : lxp_await_ready(run, reterr);
}

int lxp_begin(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, int uplink_fd, fy_error **reterr) {
    return start_program(run, cfg, sandbox_ns, uplink_fd, false, reterr);
}

int lxp_start_dns(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, fy_error **reterr) {
    int r = start_program(run, cfg, sandbox_ns, -1, true, reterr);
    return r < 0 ? r : lxp_await_ready(run, reterr);
}

int lxp_test_exec_fails;

/* ---- the DNS stub on demand ---- */

/* Waits for the first datagram or connection on the stub's sockets (or
 * the wake eventfd: the attempt ends first), then starts the program on
 * them. Its errors are kept for the report: the workload's queries then
 * go unanswered, and the result says why. */
static void *defer_main(void *p) {
    struct lxp_run *run = p;
    struct pollfd pfd[3] = {{.fd = run->defer_wake, .events = POLLIN},
                            {.fd = run->defer_fd[0], .events = POLLIN},
                            {.fd = run->defer_fd[1], .events = POLLIN}};
    for (;;) {
        int n = poll(pfd, 3, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(run->defer_error, sizeof(run->defer_error), "waiting for a first query: %s", strerror(errno));
            return NULL;
        }
        if (pfd[0].revents)
            return NULL; /* (the attempt ended with no query) */
        if ((pfd[1].revents | pfd[2].revents) & (POLLIN | POLLERR | POLLHUP))
            break;
    }
    fy_error *e = NULL;
    int lfd = run->defer_fd[0], tfd = run->defer_fd[1];
    run->defer_fd[0] = run->defer_fd[1] = -1; /* (start_on takes them, also on failure) */
    pu_fork_close_del(lfd);
    pu_fork_close_del(tfd);
    if (start_on(run, run->defer_cfg, lfd, tfd, -1, true, &e) < 0) {
        snprintf(run->defer_error, sizeof(run->defer_error), "%s", e ? fy_error_message(e) : "the stub did not start");
        /* (start_on ended and reaped what it started: the report is of a
         * stub that never ran, with this error) */
        lxp_release(run);
        run->pid = -1;
    }
    fy_error_free(e);
    return NULL;
}

int lxp_defer_dns(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, fy_error **reterr) {
    if (!lxp_program_available())
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, NULL,
                       "the DNS stub: its program is not built for this architecture");
    int lfd = -1, tfd = -1;
    int e = -make_listener(sandbox_ns, &lfd, &tfd, true);
    if (e)
        return fail(reterr, e, "the DNS stub's sockets (" LXP_DNS_ADDR ":53, UDP and TCP) in the sandbox's "
                               "network namespace");
    run->deferred = true;
    run->tcp = tfd >= 0;
    run->defer_cfg = cfg;
    run->defer_error[0] = 0;
    run->defer_fd[0] = lfd;
    run->defer_fd[1] = tfd;
    /* (sockets of the sandbox's namespace: a fork of the host that kept
     * them kept the namespace, its veth with it, after the host died) */
    pu_fork_close_add(lfd);
    pu_fork_close_add(tfd);
    if ((run->defer_wake = eventfd(0, EFD_CLOEXEC)) < 0) {
        e = errno;
        lxp_defer_settle(run);
        return fail(reterr, e, "the DNS stub's eventfd");
    }
    run->defer_pending = true; /* (before the thread can look: its own failure path checks it) */
    e = util_thread_start(&run->defer_thread, false, false, defer_main, run);
    if (e) {
        run->defer_pending = false;
        lxp_defer_settle(run);
        return fail(reterr, e, "the DNS stub's thread");
    }
    return 0;
}

void lxp_defer_settle(struct lxp_run *run) {
    if (run->defer_pending && pthread_equal(pthread_self(), run->defer_thread))
        return; /* (the thread's own start failing: lxp_stop from start_on) */
    if (run->defer_pending) {
        uint64_t one = 1;
        (void)!write(run->defer_wake, &one, sizeof(one));
        (void)pthread_join(run->defer_thread, NULL);
        run->defer_pending = false;
    }
    for (int i = 0; i < 2; i++)
        pu_fork_close_fd(&run->defer_fd[i]);
    if (run->defer_wake >= 0)
        close(run->defer_wake);
    run->defer_wake = -1;
}

int lxp_start_dns_on(struct lxp_run *run, const struct lxp_config *cfg, int sock, fy_error **reterr) {
    if (!lxp_program_available())
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, NULL,
                       "the DNS stub: its program is not built for this architecture");
    int fd = fcntl(sock, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        return fail(reterr, errno, "the DNS stub's socket");
    return start_on(run, cfg, fd, -1, -1, true, reterr);
}

static int start_program(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, int uplink_fd, bool dns,
                         fy_error **reterr) {
    if (!lxp_program_available())
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, NULL,
                       "fetch-only proxy: its program is not built for this architecture");
    int lfd = -1, tfd = -1;
    int e = -make_listener(sandbox_ns, &lfd, &tfd, dns);
    if (e)
        return fail(reterr, e, dns ? "the DNS stub's sockets (" LXP_DNS_ADDR ":53, UDP and TCP) in the sandbox's "
                                     "network namespace"
                                   : "its listener in the sandbox's network namespace");
    return start_on(run, cfg, lfd, tfd, uplink_fd, dns, reterr);
}

int lxp_start_listener(struct lxp_run *run, const struct lxp_config *cfg, int listener, int uplink_fd,
                       fy_error **reterr) {
    if (!lxp_program_available())
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, NULL,
                       "fetch-only proxy: its program is not built for this architecture");
    int lfd = fcntl(listener, F_DUPFD_CLOEXEC, 3);
    if (lfd < 0)
        return fail(reterr, errno, "its listener");
    int r = start_on(run, cfg, lfd, -1, uplink_fd, false, reterr);
    return r < 0 ? r : lxp_await_ready(run, reterr);
}

/* Consumes lfd and tcp_fd (the DNS stub's TCP listener, or -1; it takes
 * the uplink's place, which the stub never has). */
static int start_on(struct lxp_run *run, const struct lxp_config *cfg, int lfd, int tcp_fd, int uplink_fd, bool dns,
                    fy_error **reterr) {
    if (tcp_fd >= 0 && uplink_fd >= 0) {
        close(tcp_fd);
        tcp_fd = -1;
    }
    run->tcp = tcp_fd >= 0;
    int alive[2] = {-1, -1}, errp[2] = {-1, -1}, prog = -1, conf = -1, audit_fd = -1, e = 0;
    const char *what = "its audit table";
    audit_fd = memfd_create("fy-proxy-audit", MFD_CLOEXEC);
    if (audit_fd < 0 || ftruncate(audit_fd, sizeof(struct lxp_audit)) < 0)
        goto fail_errno;
    run->audit = mmap(NULL, sizeof(struct lxp_audit), PROT_READ | PROT_WRITE, MAP_SHARED, audit_fd, 0);
    if (run->audit == MAP_FAILED) {
        run->audit = NULL;
        goto fail_errno;
    }
    /* What tells it the host is gone: the host's own pidfd, readable once
     * the whole host process has ended. A pipe the host holds the writing
     * end of (kept where pidfd_open is missing) is copied into every fork
     * of the host, and a forked child that lives on without exec kept the
     * proxy alive after its host was killed. */
    what = "pipe";
    alive[0] = lx_owner_pidfd();
    if ((alive[0] < 0 && pipe2(alive, O_CLOEXEC) < 0) || pipe2(errp, O_CLOEXEC) < 0)
        goto fail_errno;
    what = "a sealed memfd of its program";
    if ((prog = lx_sealed_memfd("fy-proxy", lx_proxy_blob, lx_proxy_blob_len, true)) < 0) {
        e = -prog;
        goto fail;
    }
    if (__atomic_load_n(&lxp_test_exec_fails, __ATOMIC_RELAXED) && dns) {
        /* (tests: a program that cannot be executed) */
        close(prog);
        if ((prog = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
            goto fail_errno;
    }
    what = "a sealed memfd of its configuration";
    run->uid = geteuid() == 0 ? root_run_uid(cfg) : geteuid();
    if ((conf = pack_config(cfg, (geteuid() == 0 ? LXP_PACK_AS_ROOT : 0) | (uplink_fd >= 0 ? LXP_PACK_UPLINK : 0) |
                                     (dns ? LXP_PACK_DNS : 0) | (tcp_fd >= 0 ? LXP_PACK_DNS_TCP : 0))) < 0) {
        e = -conf;
        goto fail;
    }
    const int src[PX_FDS] = {lfd, alive[0], conf, audit_fd, uplink_fd >= 0 ? uplink_fd : tcp_fd};
    run->pid = spawn_proxy(src, prog, errp[1], &run->pidfd);
    e = run->pid < 0 ? errno : 0;
    close(lfd);
    if (tcp_fd >= 0)
        close(tcp_fd);
    close(alive[0]);
    close(errp[1]);
    close(prog);
    close(conf);
    close(audit_fd);
    run->alive_wr = alive[1];
    if (e) {
        close(errp[0]);
        run->pid = -1;
        return fail(reterr, e, "fork");
    }
    /* The error pipe closes at the exec (or brings its errno). */
    int exec_err = 0;
    ssize_t n;
    do
        n = read(errp[0], &exec_err, sizeof(exec_err));
    while (n < 0 && errno == EINTR);
    close(errp[0]);
    if (n != 0) {
        (void)lxp_stop(run);
        if (n != (ssize_t)sizeof(exec_err) || exec_err == 0)
            exec_err = EPROTO;
        return err_set(reterr, exec_err == ENOMEM ? FY_E_NOMEM : FY_E_UNSUPPORTED, FY_STEP_PROXY, exec_err, NULL,
                       "%s: executing its program from a sealed memfd: %s (it is never a copy of the host "
                       "process; vm.memfd_noexec 2, an LSM or a seccomp filter of the host's may forbid it)",
                       dns ? "the DNS stub" : "fetch-only proxy", strerror(exec_err));
    }
    return 0;
fail_errno:
    e = errno;
fail:
    close(lfd);
    if (tcp_fd >= 0)
        close(tcp_fd);
    for (int i = 0; i < 2; i++) {
        if (alive[i] >= 0)
            close(alive[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    if (prog >= 0)
        close(prog);
    if (audit_fd >= 0)
        close(audit_fd);
    return fail(reterr, e, what);
}

int lxp_await_ready(struct lxp_run *run, fy_error **reterr) {
    /* Ready once confined (it accepts nothing before); the listener
     * already queues connections meanwhile. */
    uint64_t deadline = pu_deadline_after_ms(10000);
    struct pu_proc p = {.pid = run->pid, .pidfd = run->pidfd};
    while (!__atomic_load_n(&run->audit->ready, __ATOMIC_ACQUIRE)) {
        if (pu_wait_until(&p, pu_deadline_after_ms(1)) || pu_ms_left(deadline) == 0) {
            int st = p.reaped ? p.status : -1;
            if (p.reaped)
                run->ended = true;
            (void)lxp_stop(run);
            return err_set(reterr, FY_E_INFRA, FY_STEP_PROXY, 0, NULL,
                           "fetch-only proxy: it did not start (%s %d)",
                           st >= 0 && WIFEXITED(st) ? "exit status" : st >= 0 ? "signal" : "wait status",
                           st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : st >= 0 ? WTERMSIG(st) : st);
        }
    }
    return 0;
}

void lxp_kill(struct lxp_run *run) {
    lxp_defer_settle(run); /* (no start on a query from here on) */
    if (run->kill_sent)
        return;
    run->kill_sent = true;
    /* What it used, for the result: a child not yet reaped keeps its pid
     * (a zombie's figures are its last). */
    if (run->pid > 0 && !run->ended)
        run->cpu_known = pu_proc_cpu_usec(run->pid, &run->cpu_usec);
    if (run->pid > 0 && !run->ended) {
        /* Did it end before we end it? (a crash, its seccomp filter) */
        struct pu_proc p = {.pid = run->pid, .pidfd = run->pidfd};
        if (pu_wait_until(&p, pu_deadline_after_ms(0))) {
            run->ended = true;
            run->died_status = p.status;
            run->died = true;
        }
    }
    if (run->alive_wr >= 0)
        close(run->alive_wr);
    run->alive_wr = -1;
    if (run->pid > 0 && !run->ended) {
        if (run->pidfd >= 0)
            (void)sys_pidfd_send_signal(run->pidfd, SIGKILL, NULL, 0);
        else
            (void)kill(run->pid, SIGKILL);
        run->killed = true;
    }
}

unsigned lxp_stop(struct lxp_run *run) {
    lxp_kill(run);
    if (run->pid > 0 && !run->ended) {
        struct pu_proc p = {.pid = run->pid, .pidfd = run->pidfd};
        run->ended = pu_wait_until(&p, pu_deadline_after_ms(PU_KILL_GRACE_MS));
    }
    if (run->pidfd >= 0)
        close(run->pidfd);
    run->pidfd = -1;
    return run->pid > 0 && !run->ended ? 1 : 0;
}

char *lxp_report(const struct lxp_run *run) {
    json_t *o = json_object(), *reqs = json_array(), *px = json_object(), *conf = json_array();
    if (!o || !reqs || !px || !conf) {
        json_decref(o);
        json_decref(reqs);
        json_decref(px);
        json_decref(conf);
        return NULL;
    }
    const struct lxp_audit *a = run->audit;
    uint32_t n = a ? (a->n < LXP_AUDIT_MAX ? a->n : LXP_AUDIT_MAX) : 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct lxp_audit_rec *r = &a->rec[i];
        json_t *e = json_object();
        char host[LXP_HOST_MAX + 1], method[16], reason[72];
        lxd_copy_str(host, sizeof(host), r->host);
        lxd_copy_str(method, sizeof(method), r->method);
        lxd_copy_str(reason, sizeof(reason), r->reason);
        json_object_set_new(e, "method", json_string(method[0] ? method : "?"));
        json_object_set_new(e, "host", json_string(host));
        json_object_set_new(e, "port", json_integer(r->port));
        json_object_set_new(e, "decision", json_string(r->allowed ? "allowed" : "refused"));
        json_object_set_new(e, "status", r->status ? json_integer(r->status) : json_null());
        /* (written by the proxy, a process of its own: checked again) */
        json_object_set_new(e, "response_status", r->response_status >= 100 && r->response_status <= 599
                                                       ? json_integer(r->response_status) : json_null());
        json_object_set_new(e, "reason", json_string(reason));
        char sni[sizeof(r->sni)];
        lxd_copy_str(sni, sizeof(sni), r->sni);
        bool clean = sni[0] != '\0';
        for (const char *x = sni; *x && clean; x++)
            clean = lxp_is_name_char(*x);
        json_object_set_new(e, "tls_server_name", clean ? json_string(sni) : json_null());
        json_object_set_new(e, "credential_injected", json_boolean(r->credential));
        json_object_set_new(e, "bytes_up", json_integer((json_int_t)r->bytes_up));
        json_object_set_new(e, "bytes_down", json_integer((json_int_t)r->bytes_down));
        json_object_set_new(e, "t_usec", json_integer((json_int_t)r->t_usec));
        json_array_append_new(reqs, e);
    }
    static const struct { uint32_t bit; const char *name; } names[] = {
        {LXP_CONF_UID, "unprivileged-uid-no-capabilities"}, {LXP_CONF_NNP, "no-new-privileges"},
        {LXP_CONF_LL_FS, "landlock-no-filesystem"}, {LXP_CONF_LL_NET, "landlock-tcp-connect-allowed-ports"},
        {LXP_CONF_SECCOMP, "seccomp-allowlist"}, {LXP_CONF_UPLINK, "uplink-namespace"},
    };
    for (size_t i = 0; a && i < sizeof(names) / sizeof(names[0]); i++)
        if (a->confinement & names[i].bit)
            json_array_append_new(conf, json_string(names[i].name));
    json_object_set_new(px, "pid", run->pid > 0 ? json_integer(run->pid) : json_null());
    json_object_set_new(px, "uid", json_integer(run->uid));
    json_object_set_new(px, "listen", json_string("127.0.0.1:3128 in the sandbox's network namespace"));
    json_object_set_new(px, "confinement", conf);
    json_object_set_new(px, "ended", json_boolean(run->pid <= 0 || run->ended));
    char how[64] = "killed at cleanup";
    if (run->died && run->died_status >= 0 && WIFSIGNALED(run->died_status))
        snprintf(how, sizeof(how), "died before cleanup: signal %d", WTERMSIG(run->died_status));
    else if (run->died && run->died_status >= 0)
        snprintf(how, sizeof(how), "died before cleanup: exit status %d", WEXITSTATUS(run->died_status));
    else if (run->died)
        snprintf(how, sizeof(how), "died before cleanup");
    json_object_set_new(px, "end", json_string(how));
    /* (outside the sandbox's cgroup and limits: what it cost the host) */
    json_object_set_new(px, "cpu_usec", run->cpu_known ? json_integer((json_int_t)run->cpu_usec) : json_null());
    json_object_set_new(o, "mode", json_string("fetch-only"));
    json_object_set_new(o, "proxy", px);
    json_object_set_new(o, "requests", reqs);
    json_object_set_new(o, "requests_dropped", json_integer(a ? a->dropped : 0));
    json_object_set_new(o, "requests_dropped_allowed", json_integer(a ? a->dropped_allowed : 0));
    json_object_set_new(o, "dropped_bytes_up", json_integer(a ? (json_int_t)a->dropped_bytes_up : 0));
    json_object_set_new(o, "dropped_bytes_down", json_integer(a ? (json_int_t)a->dropped_bytes_down : 0));
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

char *lxp_report_dns(const struct lxp_run *run) {
    if (run->deferred && run->pid <= 0 && !run->audit) {
        /* Deferred and never started: no query came (or its start failed). */
        json_t *d = json_pack("{s:b,s:s,s:s,s:[],s:i}", "started", 0, "start", "on the first query", "listen",
                              run->tcp ? LXP_DNS_ADDR ":53/udp and " LXP_DNS_ADDR ":53/tcp in the sandbox's network "
                                         "namespace"
                                       : LXP_DNS_ADDR ":53/udp in the sandbox's network namespace",
                              "queries", "queries_dropped", 0);
        if (d && run->defer_error[0])
            json_object_set_new(d, "error", json_string(run->defer_error));
        char *s = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(d);
        return s;
    }
    char *px = lxp_report(run);
    json_t *o = px ? json_loads(px, 0, NULL) : NULL;
    free(px);
    if (!o)
        return NULL;
    json_t *d = json_object();
    json_t *p = json_object_get(o, "proxy");
    if (p) {
        json_object_set(d, "pid", json_object_get(p, "pid"));
        json_object_set(d, "confinement", json_object_get(p, "confinement"));
        json_object_set(d, "ended", json_object_get(p, "ended"));
        json_object_set(d, "end", json_object_get(p, "end"));
    }
    json_object_set_new(d, "listen", json_string(run->tcp ? LXP_DNS_ADDR ":53/udp and " LXP_DNS_ADDR
                                                            ":53/tcp in the sandbox's network namespace"
                                                          : LXP_DNS_ADDR ":53/udp in the sandbox's network namespace"));
    /* A query's record of its own: the proxy's records carry the name in
     * host, the query type in port and the rcode in status (null for
     * NOERROR), which no reader could guess, among fields of HTTP. */
    json_t *qs = json_array(), *req;
    size_t qi;
    json_array_foreach(json_object_get(o, "requests"), qi, req) {
        json_t *st = json_object_get(req, "status");
        const char *dec = json_string_value(json_object_get(req, "decision"));
        bool allowed = dec && strcmp(dec, "allowed") == 0;
        json_t *q = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "method", json_object_get(req, "method"), "host",
                              json_object_get(req, "host"), "qtype", json_object_get(req, "port"), "decision",
                              json_object_get(req, "decision"), "reason", json_object_get(req, "reason"), "bytes_up",
                              json_object_get(req, "bytes_up"), "bytes_down", json_object_get(req, "bytes_down"),
                              "t_usec", json_object_get(req, "t_usec"));
        /* (the answer's rcode; null: none was sent) */
        if (q)
            json_object_set_new(q, "rcode", json_is_integer(st) ? json_incref(st) : allowed ? json_integer(0) : json_null());
        if (!q || !qs || json_array_append_new(qs, q) < 0) {
            json_decref(qs);
            qs = NULL;
            break;
        }
    }
    if (!qs) {
        json_decref(o);
        json_decref(d);
        return NULL;
    }
    json_object_set_new(d, "queries", qs);
    json_object_set(d, "queries_dropped", json_object_get(o, "requests_dropped"));
    json_object_set(d, "queries_dropped_allowed", json_object_get(o, "requests_dropped_allowed"));
    json_object_set_new(d, "started", json_true());
    json_object_set_new(d, "start", json_string(run->deferred ? "on the first query" : "with the attempt"));
    json_decref(o);
    char *s = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(d);
    return s;
}

void lxp_release(struct lxp_run *run) {
    (void)lxp_stop(run);
    if (run->audit)
        munmap(run->audit, sizeof(struct lxp_audit));
    run->audit = NULL;
}

void lxp_forget(struct lxp_run *run) {
    /* (A forked copy has no thread: only the fds it made before the fork.) */
    run->defer_pending = false;
    lxp_defer_settle(run);
    if (run->alive_wr >= 0)
        close(run->alive_wr);
    if (run->pidfd >= 0)
        close(run->pidfd);
    if (run->audit)
        munmap(run->audit, sizeof(struct lxp_audit));
    lxp_run_init(run);
}
