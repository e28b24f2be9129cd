/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode restricted without root (linux-net-user.h).
 *
 *   sandbox netns (its user ns)     router netns (the library's user ns L)      the caller's netns
 *   eth0 (tun) 100.64.0.2/30        sb (tun) 100.64.0.1/30                       pasta, as the caller:
 *        fd66:7973::2/64                fd66:7973::1/64                          a socket per flow
 *          |                        up (pasta's tap) the host's address,  ====>
 *          |                            its default route
 *          +-- relay thread of the host process: packets between the two
 *              tun fds, copied as they are (nothing parsed) --+
 *
 * Why two tuns and a relay, not a veth as the root path: a veth between
 * the router's namespace (owned by L) and the sandbox's (owned by the
 * sandbox's user namespace, a sibling of L) needs CAP_NET_ADMIN over both
 * in the credentials that opened the netlink socket and in the caller;
 * only the caller's own credentials in the initial user namespace have
 * that, and they cannot open a socket in either namespace (setns(2) into
 * a network namespace needs CAP_SYS_ADMIN in one's own user namespace).
 * Nesting the router under the sandbox's user namespace would give the
 * workload capabilities over it. So each side gets a tun made by a
 * short-lived child that joins that side only, and the host copies
 * packets between the two fds.
 *
 * The enforcement is the kernel's, as under root: the nftables table in
 * the router namespace (the same netlink batch as linux-net.c) forwards only the
 * plan's tuples from sb to up and masquerades them; everything else is
 * dropped before pasta sees it. The workload's user namespace is not L's
 * ancestor, so nothing it gains inside its own gives it a capability over
 * the router. pasta only carries what the router let through to sockets
 * of the caller; it is started with every port forwarding off
 * (-t/-u/-T/-U none), no gateway mapping to the host's loopback, no
 * DHCP/NDP/RA, and confines itself (its own mount, IPC, UTS namespaces on
 * an empty root, capabilities dropped, seccomp). It is killed and reaped
 * at cleanup (the witness) and dies with the thread that started it
 * (PR_SET_PDEATHSIG). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "linux-net-user.h"
#include "linux-netlink.h"
#include "linux-nftnl.h"
#include "linux-plan.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

#define ROUTER_DEADLINE_MS 10000
#define PASTA_DEADLINE_MS 10000
#define RELAY_MTU 1500

struct lxnu_run {
    int user_fd;            /* the library's user namespace L */
    int nl_router;          /* a NETLINK_ROUTE socket of the router namespace (made there) */
    int tun_sb, tun_eth;    /* the router's and the sandbox's tun */
    struct pu_proc pasta;
    bool pasta_running, pasta_ended, pasta_killed;
    int pasta_ready;        /* read end: pasta writes its pid once its tap stands */
    int pasta_log;          /* what pasta said (a memfd) */
    pthread_t relay;
    bool relay_running;
    int relay_stop;         /* eventfd: the relay thread ends */
    int relay_go;           /* eventfd: tun_eth stands, relay */
    /* What the relay thread needs to start pasta (it is pasta's parent, so
     * that PR_SET_PDEATHSIG follows the attempt, not the host's thread
     * that called fy_start). */
    const char *pasta_prog;
    int pasta_ready_wr, router_fd, started_wr;
    int pasta_errno;
    uint64_t packets[2];    /* relayed: sandbox->router, router->sandbox */
    int left_links;         /* sb/up still listed after cleanup */
};

static int fail(fy_error **reterr, int e, const char *what) {
    return err_set(reterr, err_from_errno(e), FY_STEP_NETNS, e, NULL, "restricted network (rootless): %s: %s", what,
                   strerror(e));
}

int lxnu_compile(struct lxn_plan *lp, struct linux_plan *pl, const struct fy_plan *np, fy_error **reterr) {
    if (np->net_uplink)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.host",
                       "network mode restricted without root uplinks through pasta in the caller's own network "
                       "namespace; an uplink namespace (FY_NETHOST_UPLINK) needs root");
    char *pasta = pu_find_program("pasta");
    if (!pasta)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                       "network mode restricted without root needs pasta as the router's uplink (apt install passt)");
    if (access("/dev/net/tun", R_OK | W_OK) < 0) {
        free(pasta);
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, errno, "$.network.mode",
                       "network mode restricted without root needs /dev/net/tun: %s", strerror(errno));
    }
    lp->pasta = arena_strdup(&pl->arena, pasta);
    free(pasta);
    if (!lp->pasta)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    lp->rootless = true;
    return 0;
}

/* ---- in forked children (only async-signal-safe calls) ---- */

static size_t put_uint(char *p, unsigned long v) {
    char t[24];
    size_t n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < sizeof(t));
    for (size_t i = 0; i < n; i++)
        p[i] = t[n - 1 - i];
    return n;
}

static bool write_file(const char *path, const char *s, size_t len) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, s, len) == (ssize_t)len;
    close(fd);
    return ok;
}

static int make_tun(const char *name, short kind) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = (short)(kind | IFF_NO_PI);
    memcpy(ifr.ifr_name, name, strlen(name) + 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int nl_here(void) {
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    return s < 0 ? s : lnl_ready(s);
}

static bool send_fds(int sock, char tag, const int *fds, int n) {
    struct iovec iov = {.iov_base = &tag, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1;
}

/* The router: a user namespace of the library's own (the caller's uid and
 * gid mapped to 0, nothing else) with the router's network namespace; the
 * tun toward the sandbox with its addresses, forwarding on (nothing
 * reaches sb before the relay starts, after the rules stand); the four
 * fds sent back; then the table as one netlink batch its parent built
 * (linux-nftnl.c; nothing allocated here, in a fork of a threaded host),
 * what the kernel said on out, and its exit status the parent waits for. */
__attribute__((noreturn)) static void router_main(int sock, int out, bool tap, const struct lnft_batch *batch) {
    unsigned long uid = geteuid(), gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
        _exit(30);
    char map[64] = "0 ";
    size_t n = 2;
    n += put_uint(map + n, uid);
    memcpy(map + n, " 1\n", 3);
    n += 3;
    if (!write_file("/proc/self/uid_map", map, n) || !write_file("/proc/self/setgroups", "deny", 4))
        _exit(31);
    n = 2;
    n += put_uint(map + n, gid);
    memcpy(map + n, " 1\n", 3);
    n += 3;
    if (!write_file("/proc/self/gid_map", map, n))
        _exit(31);
    /* (a VM's: a tap, whose fd its VMM holds; no relay) */
    int tun = make_tun(LXN_ROUTER_SB_IF, tap ? IFF_TAP : IFF_TUN), nl = nl_here();
    int ufd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC), nfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (tun < 0 || nl < 0 || ufd < 0 || nfd < 0)
        _exit(32);
    int sb = lnl_ifindex(nl, LXN_ROUTER_SB_IF);
    uint32_t a4 = htonl(LXN_SB_ROUTER4);
    if (sb < 0 || lnl_addr_add(nl, sb, AF_INET, &a4, 30) < 0 || lnl_addr_add(nl, sb, AF_INET6, lxn_sb_router6, 64) < 0 ||
        lnl_link_up(nl, LXN_ROUTER_SB_IF) < 0 || lnl_link_up(nl, "lo") < 0)
        _exit(33);
    /* /proc/sys/net is the calling task's network namespace: the router's. */
    if (!write_file("/proc/sys/net/ipv4/ip_forward", "1", 1) ||
        !write_file("/proc/sys/net/ipv6/conf/all/forwarding", "1", 1))
        _exit(34);
    const int fds[4] = {ufd, nfd, tun, nl};
    if (!send_fds(sock, 'R', fds, 4))
        _exit(35);
    int nf = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    int e = nf < 0 ? errno : -lnft_batch_apply(lnl_ready(nf), batch);
    if (e) {
        char m[80] = "the router's table (one netlink batch) was refused: errno ";
        size_t k = strlen(m);
        k += put_uint(m + k, (unsigned long)e);
        (void)!write(out, m, k);
        _exit(38);
    }
    _exit(0);
}

/* The sandbox's side: joins its user and network namespaces, makes eth0
 * (tun) with its addresses and default routes, sends the tun back. */
__attribute__((noreturn)) static void sandbox_side_main(int sock, int userns, int netns) {
    if ((userns >= 0 && setns(userns, CLONE_NEWUSER) < 0) || setns(netns, CLONE_NEWNET) < 0)
        _exit(40);
    int tun = make_tun(LXN_SANDBOX_IF, IFF_TUN), nl = nl_here();
    if (tun < 0 || nl < 0)
        _exit(41);
    int eth = lnl_ifindex(nl, LXN_SANDBOX_IF);
    uint32_t a4 = htonl(LXN_SB_SANDBOX4), gw4 = htonl(LXN_SB_ROUTER4);
    if (eth < 0 || lnl_addr_add(nl, eth, AF_INET, &a4, 30) < 0 ||
        lnl_addr_add(nl, eth, AF_INET6, lxn_sb_sandbox6, 64) < 0 || lnl_link_up(nl, LXN_SANDBOX_IF) < 0 ||
        lnl_route_default(nl, eth, AF_INET, &gw4) < 0 || lnl_route_default(nl, eth, AF_INET6, lxn_sb_router6) < 0)
        _exit(42);
    _exit(send_fds(sock, 'T', &tun, 1) ? 0 : 43);
}

/* pasta, as the caller, uplinking the router namespace: fds 3 (L), 4 (the
 * router namespace), 5 (its pid file: the readiness pipe). */
__attribute__((noreturn)) static void pasta_main(const char *pasta, int userns, int netns, int ready, int log,
                                                 pid_t parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(50);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* Above every fd we place, then into place. */
    int u = fcntl(userns, F_DUPFD_CLOEXEC, 10), n = fcntl(netns, F_DUPFD_CLOEXEC, 10),
        r = fcntl(ready, F_DUPFD_CLOEXEC, 10), l = fcntl(log, F_DUPFD_CLOEXEC, 10);
    if (devnull < 0 || u < 0 || n < 0 || r < 0 || l < 0 || dup2(devnull, 0) < 0 || dup2(l, 1) < 0 || dup2(l, 2) < 0 ||
        dup2(u, 3) < 0 || dup2(n, 4) < 0 || dup2(r, 5) < 0)
        _exit(51);
    (void)syscall(__NR_close_range, 6, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *const argv[] = {
        "pasta", "--foreground", "--stderr", "--quiet", "--config-net",
        "--userns", "/proc/self/fd/3", "--netns", "/proc/self/fd/4", "--ns-ifname", LXN_ROUTER_UP_IF,
        /* Nothing inbound, nothing to the host's loopback. */
        "--tcp-ports", "none", "--udp-ports", "none", "--tcp-ns", "none", "--udp-ns", "none", "--no-map-gw",
        "--no-dhcp", "--no-dhcpv6", "--no-ra",
        "--pid", "/proc/self/fd/5", NULL};
    char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(pasta, argv, envp);
    _exit(52);
}

/* ---- host side ---- */

static int recv_fds(int sock, char tag, int *fds, int n, int timeout_ms) {
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    int p;
    do
        p = poll(&pfd, 1, timeout_ms);
    while (p < 0 && errno == EINTR);
    if (p == 0)
        return -ETIMEDOUT;
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    struct cmsghdr *c = got == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int) * (size_t)n) || byte != tag) {
        if (c && c->cmsg_type == SCM_RIGHTS) {
            int tmp[4];
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(tmp, CMSG_DATA(c), (k > 4 ? 4 : k) * sizeof(int));
            for (size_t i = 0; i < k && i < 4; i++)
                close(tmp[i]);
        }
        return got == 0 ? -EPIPE : -EPROTO;
    }
    memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)n);
    return 0;
}

static char *child_said(int fd) {
    static __thread char msg[600];
    msg[0] = 0;
    ssize_t n = fd >= 0 ? pread(fd, msg, sizeof(msg) - 1, 0) : 0;
    msg[n > 0 ? n : 0] = 0;
    for (char *p = msg; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return msg;
}

static void close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void *relay_main(void *p);

static void user_init(struct lxnu_run *u) {
    memset(u, 0, sizeof(*u));
    u->user_fd = u->nl_router = u->tun_sb = u->tun_eth = u->pasta_ready = u->pasta_log = u->relay_stop = -1;
    u->relay_go = u->pasta_ready_wr = u->router_fd = u->started_wr = -1;
    u->pasta.pid = -1;
    u->pasta.pidfd = -1;
    u->left_links = -1;
}

int lxnu_begin(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr) {
    struct lxnu_run *u = calloc(1, sizeof(*u));
    if (!u)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_NETNS, 0, NULL, "out of memory");
    user_init(u);
    run->user = u;
    int r = 0, sv[2] = {-1, -1}, ready[2] = {-1, -1};
    if ((run->nft_out = memfd_create("fy-nft-out", MFD_CLOEXEC)) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        r = fail(reterr, errno, "the router's pipes");
        goto out;
    }
    /* The router, then its table in it: one netlink batch built here. */
    struct lnft_batch batch = {0};
    if ((r = lxn_nft_batch(lp, &batch)) < 0) {
        r = fail(reterr, -r, "the router's nftables batch");
        goto out;
    }
    run->nft.pid = sys_fork_quiet_pidfd(&run->nft.pidfd);
    if (run->nft.pid == 0)
        router_main(sv[1], run->nft_out, lp->vm_tap, &batch);
    lnft_batch_free(&batch);
    if (run->nft.pid < 0) {
        r = fail(reterr, errno, "fork");
        run->nft.pid = -1;
        goto out;
    }
    run->nft_running = true;
    close(sv[1]);
    sv[1] = -1;
    int fds[4];
    int e = recv_fds(sv[0], 'R', fds, 4, ROUTER_DEADLINE_MS);
    if (e < 0) {
        (void)lxn_i_finish_nft(run, pu_deadline_after_ms(0), NULL);
        int st = run->nft.reaped && WIFEXITED(run->nft.status) ? WEXITSTATUS(run->nft.status) : -1;
        r = err_set(reterr, e == -ETIMEDOUT ? FY_E_TIMEOUT : FY_E_UNSUPPORTED, FY_STEP_NETNS, -e, NULL,
                    "restricted network (rootless): the router namespace in the library's user namespace could "
                    "not be made (step %d: 30 user namespace, 31 id maps, 32 tun or netlink, 33 addresses, "
                    "34 forwarding): %s", st, strerror(-e));
        goto out;
    }
    u->user_fd = fds[0];
    run->router_fd = fds[1];
    u->tun_sb = fds[2];
    u->nl_router = fds[3];
    /* pasta, as the caller, joining L and the router namespace. */
    u->pasta_log = memfd_create("fy-pasta-log", MFD_CLOEXEC);
    if (u->pasta_log < 0 || pipe2(ready, O_CLOEXEC) < 0) {
        r = fail(reterr, errno, "pasta's pipes");
        goto out;
    }
    /* The relay thread forks pasta (and relays once the sandbox's tun
     * stands): pasta dies with the thread (PR_SET_PDEATHSIG), which lives
     * exactly as long as the attempt's network. */
    int started[2] = {-1, -1};
    if ((u->relay_stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (u->relay_go = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 || pipe2(started, O_CLOEXEC) < 0) {
        r = fail(reterr, errno, "the relay's eventfds");
        goto out;
    }
    u->pasta_prog = lp->pasta;
    u->pasta_ready_wr = ready[1];
    u->router_fd = run->router_fd;
    u->started_wr = started[1];
    e = util_thread_start(&u->relay, false, false, relay_main, u);
    char byte = 0;
    ssize_t got = 0;
    if (!e) {
        u->relay_running = true;
        do
            got = read(started[0], &byte, 1);
        while (got < 0 && errno == EINTR);
    }
    close(started[0]);
    close(started[1]);
    u->started_wr = -1;
    if (e || got != 1 || u->pasta.pid < 0) {
        u->pasta.pid = -1;
        r = fail(reterr, e ? e : u->pasta_errno ? u->pasta_errno : EPROTO, e ? "the relay thread" : "fork");
        goto out;
    }
    u->pasta_running = true;
    u->pasta_ready = ready[0];
    ready[0] = -1;
out:
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0)
            close(sv[i]);
        if (ready[i] >= 0)
            close(ready[i]);
    }
    if (r < 0)
        (void)lxn_teardown(run);
    return r;
}

/* Packets between the two tuns, as they are. Bounded per wake-up; a
 * packet that finds the other side full is dropped (IP may drop). */
static void *relay_main(void *p) {
    struct lxnu_run *u = p;
    static __thread char buf[65536];
    /* First pasta, as this thread's child. */
    pid_t me = getpid();
    u->pasta.pid = sys_fork_quiet_pidfd(&u->pasta.pidfd);
    if (u->pasta.pid == 0)
        pasta_main(u->pasta_prog, u->user_fd, u->router_fd, u->pasta_ready_wr, u->pasta_log, me);
    u->pasta_errno = u->pasta.pid < 0 ? errno : 0;
    if (u->pasta.pid < 0)
        u->pasta.pid = -1;
    char one = 1;
    (void)!write(u->started_wr, &one, 1);
    /* Then, once the sandbox's tun stands (or the end). */
    struct pollfd w[2] = {{.fd = u->relay_go, .events = POLLIN}, {.fd = u->relay_stop, .events = POLLIN}};
    for (;;) {
        if (poll(w, 2, -1) < 0 && errno != EINTR)
            return NULL;
        if (w[1].revents)
            return NULL;
        if (w[0].revents)
            break;
    }
    struct pollfd pf[3] = {{.fd = u->tun_eth, .events = POLLIN}, {.fd = u->tun_sb, .events = POLLIN},
                           {.fd = u->relay_stop, .events = POLLIN}};
    for (;;) {
        if (poll(pf, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[2].revents)
            break;
        for (int side = 0; side < 2; side++) {
            if (!pf[side].revents)
                continue;
            if (pf[side].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                pf[side].fd = -1; /* that side's device is gone (the sandbox ended) */
                continue;
            }
            int to = side == 0 ? u->tun_sb : u->tun_eth;
            for (int k = 0; k < 64; k++) {
                ssize_t n = read(pf[side].fd, buf, sizeof(buf));
                if (n <= 0) {
                    if (n < 0 && errno != EAGAIN && errno != EINTR)
                        pf[side].fd = -1;
                    break;
                }
                if (write(to, buf, (size_t)n) == n)
                    __atomic_add_fetch(&u->packets[side], 1, __ATOMIC_RELAXED);
            }
        }
    }
    return NULL;
}

/* nft's rules stand and pasta's tap: 0, or the error (nothing torn down). */
static int wait_router(struct lxn_run *run, fy_error **reterr) {
    struct lxnu_run *u = run->user;
    int r;
    if ((r = lxn_i_finish_nft(run, pu_deadline_after_ms(ROUTER_DEADLINE_MS), reterr)) < 0)
        return r;
    /* pasta writes its pid once its tap stands in the router namespace. */
    {
        struct pollfd pfd = {.fd = u->pasta_ready, .events = POLLIN};
        uint64_t deadline = pu_deadline_after_ms(PASTA_DEADLINE_MS);
        int p;
        do
            p = poll(&pfd, 1, pu_ms_left(deadline));
        while (p < 0 && errno == EINTR);
        char pid[16];
        ssize_t n = p > 0 ? read(u->pasta_ready, pid, sizeof(pid)) : 0;
        if (n <= 0) {
            bool ended = pu_wait_until(&u->pasta, pu_deadline_after_ms(100));
            r = err_set(reterr, p == 0 ? FY_E_TIMEOUT : FY_E_INFRA, FY_STEP_NETNS, 0, NULL,
                        "restricted network (rootless): pasta did not %s: %s", p == 0 ? "start in time" : "start",
                        ended ? (u->pasta.status >= 0 && WIFEXITED(u->pasta.status) &&
                                 WEXITSTATUS(u->pasta.status) >= 50 && WEXITSTATUS(u->pasta.status) <= 52
                                     ? "its start failed before it ran (placing its fds or executing it)"
                                     : child_said(u->pasta_log))
                              : "(still running)");
            if (ended) {
                u->pasta_running = false;
                u->pasta_ended = true;
            }
            return r;
        }
    }
    return 0;
}

int lxnu_finish_tap(struct lxn_run *run, int *tap, fy_error **reterr) {
    struct lxnu_run *u = run->user;
    int r = wait_router(run, reterr);
    if (r >= 0 && (*tap = fcntl(u->tun_sb, F_DUPFD_CLOEXEC, 3)) < 0)
        r = fail(reterr, errno, "the VM's tap");
    if (r < 0)
        (void)lxn_teardown(run);
    return r;
}

int lxnu_finish(struct lxn_run *run, int sandbox_ns, fy_error **reterr) {
    struct lxnu_run *u = run->user;
    int r = 0, sv[2] = {-1, -1}, userns = -1;
    if ((r = wait_router(run, reterr)) < 0)
        goto fail;
    /* The sandbox's side. */
    userns = ioctl(sandbox_ns, NS_GET_USERNS);
    if (userns >= 0) {
        (void)fcntl(userns, F_SETFD, FD_CLOEXEC);
        struct stat a, b;
        if (fstat(userns, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            close(userns);
            userns = -1;
        }
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        r = fail(reterr, errno, "socketpair");
        goto fail;
    }
    struct pu_proc h = {.pid = -1, .pidfd = -1};
    h.pid = sys_fork_quiet_pidfd(&h.pidfd);
    if (h.pid == 0)
        sandbox_side_main(sv[1], userns, sandbox_ns);
    if (h.pid < 0) {
        r = fail(reterr, errno, "fork");
        goto fail;
    }
    close(sv[1]);
    sv[1] = -1;
    int e = recv_fds(sv[0], 'T', &u->tun_eth, 1, ROUTER_DEADLINE_MS);
    (void)pu_finish(&h, pu_deadline_after_ms(ROUTER_DEADLINE_MS), NULL);
    if (e < 0) {
        u->tun_eth = -1;
        int st = h.reaped && WIFEXITED(h.status) ? WEXITSTATUS(h.status) : -1;
        r = err_set(reterr, FY_E_INFRA, FY_STEP_NETNS, -e, NULL,
                    "restricted network (rootless): the sandbox's link could not be made (step %d): %s", st,
                    strerror(-e));
        goto fail;
    }
    /* The relay thread (pasta's parent) starts copying. */
    uint64_t go = 1;
    if (write(u->relay_go, &go, sizeof(go)) != (ssize_t)sizeof(go)) {
        r = fail(reterr, errno, "the relay thread");
        goto fail;
    }
    if (userns >= 0)
        close(userns);
    close(sv[0]);
    return 0;
fail:
    if (userns >= 0)
        close(userns);
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0)
            close(sv[i]);
    (void)lxn_teardown(run);
    return r;
}

void lxnu_teardown_begin(struct lxn_run *run) {
    struct lxnu_run *u = run->user;
    if (!u)
        return;
    /* pasta is killed first and its end witnessed (lxnu_teardown) after
     * our tuns are on their way out: a tun's or tap's last close
     * unregisters its device synchronously, RCU grace periods included
     * (tens of ms each: pasta's exit waits for its tap's), so the three go
     * at once, while the attempt's cgroups and directory are removed. */
    struct pu_proc *p = &u->pasta;
    if (u->pasta_running && !u->pasta_killed && !pu_wait_until(p, pu_deadline_after_ms(0))) {
        if (p->pidfd >= 0)
            (void)sys_pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
        else
            (void)kill(p->pid, SIGKILL);
        u->pasta_killed = true;
    }
    /* Then the relay thread (pasta's parent thread: pasta, killed, is
     * still ours to reap, by any thread of this process). */
    if (u->relay_running) {
        uint64_t one = 1;
        (void)!write(u->relay_stop, &one, sizeof(one));
        pthread_join(u->relay, NULL);
        u->relay_running = false;
    }
    close_fd(&u->relay_stop);
    close_fd(&u->relay_go);
    /* Closing a tun deletes its device (not persistent): on a detached
     * thread, witnessed by lxnu_teardown (the router's link unlisted). */
    if ((u->tun_eth >= 0 || u->tun_sb >= 0) && lnl_close_detached(u->tun_eth, u->tun_sb) == 0)
        u->tun_eth = u->tun_sb = -1;
}

unsigned lxnu_teardown(struct lxn_run *run) {
    struct lxnu_run *u = run->user;
    unsigned left = 0;
    lxnu_teardown_begin(run); /* (done already when cleanup began: then nothing) */
    struct pu_proc *p = &u->pasta;
    close_fd(&u->tun_eth); /* (where no thread could close them) */
    close_fd(&u->tun_sb);
    if (u->pasta_running) {
        u->pasta_ended = p->reaped || pu_wait_until(p, pu_deadline_after_ms(PU_KILL_GRACE_MS));
        u->pasta_running = false;
        if (!u->pasta_ended)
            left++;
    }
    close_fd(&u->pasta.pidfd);
    close_fd(&u->pasta_ready);
    close_fd(&u->pasta_log);
    if (run->nft_running) {
        (void)pu_finish(&run->nft, pu_deadline_after_ms(0), NULL);
        run->nft_running = false;
    }
    /* The witness: the router's links are unlisted (pasta's tap goes with
     * pasta's last fd, which the kernel closes before its parent can reap
     * it; ours with the detached close). SIOCGIFINDEX on the router's
     * netlink socket: an RCU lookup, not behind the unregistering's lock.
     * Bounded. */
    if (u->nl_router >= 0) {
        int still = !lnl_link_unlisted(u->nl_router, LXN_ROUTER_SB_IF, UNLIST_DEADLINE_MS);
        still += !lnl_link_unlisted(u->nl_router, LXN_ROUTER_UP_IF, UNLIST_DEADLINE_MS);
        u->left_links = still;
        left += (unsigned)still;
    }
    close_fd(&u->nl_router);
    close_fd(&u->user_fd);
    /* The result's record. */
    json_t *o = json_object(), *ps = json_object();
    if (o && ps) {
        json_object_set_new(o, "mode", json_string("restricted"));
        json_object_set_new(o, "mechanism", json_string("nftables-userns-pasta"));
        json_object_set_new(ps, "pid", u->pasta.pid > 0 ? json_integer(u->pasta.pid) : json_null());
        json_object_set_new(ps, "ended", json_boolean(u->pasta.pid <= 0 || u->pasta_ended));
        json_object_set_new(ps, "end", json_string(u->pasta_killed ? "killed at cleanup" : "ended before cleanup"));
        json_object_set_new(o, "uplink", ps);
        json_object_set_new(o, "packets_out", json_integer((json_int_t)u->packets[0]));
        json_object_set_new(o, "packets_in", json_integer((json_int_t)u->packets[1]));
        json_object_set_new(o, "router_links_left", json_integer(u->left_links < 0 ? 0 : u->left_links));
        free(run->report);
        run->report = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    } else {
        json_decref(ps);
    }
    json_decref(o); /* (ps is o's: json_object_set_new took it) */
    free(u);
    run->user = NULL;
    return left;
}

void lxnu_forget(struct lxn_run *run) {
    struct lxnu_run *u = run->user;
    /* A forked copy has no relay thread (threads are not copied). */
    close_fd(&u->relay_stop);
    close_fd(&u->relay_go);
    close_fd(&u->tun_eth);
    close_fd(&u->tun_sb);
    close_fd(&u->pasta_ready);
    close_fd(&u->pasta_log);
    close_fd(&u->nl_router);
    close_fd(&u->user_fd);
    if (u->pasta.pidfd >= 0)
        close(u->pasta.pidfd);
    if (run->nft_running && run->nft.pidfd >= 0)
        close(run->nft.pidfd);
    run->nft_running = false;
    free(u);
    run->user = NULL;
}

pid_t lxnu_uplink_pid(const struct lxn_run *run) {
    return run->user && run->user->pasta_running ? run->user->pasta.pid : 0;
}
