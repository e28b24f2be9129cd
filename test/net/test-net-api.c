/* Network mode restricted through the library's API (run by test-net.sh,
 * which makes the fake internet namespace and checks afterwards that
 * nothing of these attempts is left): the witness of a normal end, a
 * cancelled attempt, a forked copy of the host that frees its copy of the
 * handle (the parent's links stay), and uplinks that cannot be used (a
 * typed error at start, nothing half-made).
 *
 *   test-net-api UPLINK_NETNS_PATH PROBE_DIR */
#define _GNU_SOURCE 1
#include <sched.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <grp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#include "caps.h"   /* caps_dup, caps_set: a probe that lacks nf_tables */
#include "policy.h" /* policy_inject_fault: tests only */
#include "prepared.h"
#include "linux/linux-proxy.h"
#include "linux/linux-jobnet.h"
#include "linux/linux-net.h"
#include "linux/linux-netlink.h"
#include "linux/linux-nftnl.h"
#include "linux/linux-plan.h"

#include "net-check.h"

static const char *uplink, *probe_dir;
static fy_caps *caps;

static uint32_t fault_step;
static bool copy_init;
static const char *state_dir; /* (prepare's, when set) */

static int count_dir(const char *path) {
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* nft ARGS... run in namespace ns, with text on its stdin (or none) and
 * its stdout in out (or discarded): its exit status, or -errno. */
static int nft_in(int ns, const char *text, char *out, size_t outlen, const char *const *args) {
    int in[2], o[2]; /* (close-on-exec: nft gets only its stdin and stdout) */
    if (pipe2(in, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(o, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return -errno;
    }
    pid_t c = fork();
    if (c == 0) {
        dup2(in[0], 0);
        dup2(o[1], 1);
        if (setns(ns, CLONE_NEWNET) < 0)
            _exit(126);
        const char *argv[16] = {"nft"};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv("/usr/sbin/nft", (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(o[1]);
    if (text && c > 0)
        (void)!write(in[1], text, strlen(text)); /* (a ruleset fits a pipe) */
    close(in[1]);
    size_t got = 0;
    ssize_t n;
    char sink[4096];
    while ((n = read(o[0], out ? out + got : sink, out ? outlen - 1 - got : sizeof(sink))) > 0)
        if (out && (got += (size_t)n) >= outlen - 1)
            break;
    if (out)
        out[got] = 0;
    close(o[0]);
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) < 0)
        return -ECHILD;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The table "inet forgeyard" applied in a namespace of its own, by the
 * library's netlink batch (apply) or as text through nft -f (as_text, the
 * text NULL when it could not be made), then listed as its bytecode
 * (nft --debug=netlink) into out. Frees text. */
static void apply_and_list(const char *what, int (*apply)(int ns, const void *arg), const void *arg, bool as_text,
                           char *text, char *out, size_t size) {
    int ns = lxn_new_netns();
    CHECK(ns >= 0, "%s: a namespace: %d", what, ns);
    int a = !as_text ? apply(ns, arg) : text ? nft_in(ns, text, NULL, 0, (const char *[]){"-f", "-", NULL}) : -ENOMEM;
    free(text);
    CHECK(a == 0, "%s: applying (%s): %d", what, as_text ? "nft -f" : "netlink", a);
    a = nft_in(ns, NULL, out, size, (const char *[]){"--debug=netlink", "list", "table", "inet", "forgeyard", NULL});
    CHECK(a == 0, "nft list exited %d", a);
    if (ns >= 0)
        close(ns);
}

static int apply_router(int ns, const void *lp) { return lxn_nft_netlink(ns, lp); }

struct direct_args {
    const struct lxn_plan *lp;
    const uint8_t *sb4, *sb6;
};
static int apply_direct(int ns, const void *arg) {
    const struct direct_args *d = arg;
    return lxn_direct_nft_netlink(ns, d->lp, d->sb4, d->sb6);
}

/* A UDP socket of family f made in namespace ns, bound to addr:port. */
struct udp_args { int family; const void *addr; uint16_t port; int fd; };
static int udp_in_ns(void *p) {
    struct udp_args *a = p;
    a->fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (a->fd < 0)
        return -errno;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (a->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(a->port);
        memcpy(&in->sin_addr, a->addr, 4);
        len = sizeof(*in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(a->port);
        memcpy(&in6->sin6_addr, a->addr, 16);
        len = sizeof(*in6);
    }
    int one = 1;
    (void)setsockopt(a->fd, a->family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6,
                     a->family == AF_INET ? IP_FREEBIND : IPV6_FREEBIND, &one, sizeof(one));
    struct timeval tv = {0, 700000}; /* (a datagram the rules drop: waited for 0.7 s) */
    (void)setsockopt(a->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return bind(a->fd, (struct sockaddr *)&ss, len) < 0 ? -errno : 0;
}

static int udp_socket_in(int ns, int family, const void *addr, uint16_t port) {
    struct udp_args a = {family, addr, port, -1};
    int r = lxn_in_netns(ns, udp_in_ns, &a);
    if (r < 0 && a.fd >= 0)
        close(a.fd);
    return r < 0 ? r : a.fd;
}

/* Whether a datagram from socket from reaches socket to (bound to
 * addr:port of family f). */
static bool udp_reaches(int from, int to, int family, const void *addr, uint16_t port) {
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        memcpy(&in->sin_addr, addr, 4);
        len = sizeof(*in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        memcpy(&in6->sin6_addr, addr, 16);
        len = sizeof(*in6);
    }
    /* Each call's datagrams carry a tag of their own, so one an earlier
     * call sent late is never taken for this one's. */
    static char tag = 'a';
    char buf[16], t = tag++;
    for (int i = 0; i < 3; i++) { /* (the first may wait for neighbour resolution) */
        (void)sendto(from, &t, 1, 0, (struct sockaddr *)&ss, len);
        ssize_t n;
        while ((n = recv(to, buf, sizeof(buf), 0)) >= 0)
            if (n == 1 && buf[0] == t)
                return true;
    }
    return false;
}

static fy_prepared *prepare(const char *up, const char *const *argv) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    fy_prepared *pr = NULL;
    int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
    if (r >= 0)
        r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_RESTRICTED, &e);
    if (r >= 0)
        r = fy_policy_set_network_host(p, FY_NETHOST_UPLINK, up, &e);
    if (r >= 0)
        r = fy_policy_add_bind(p, probe_dir, "/opt/fyprobe", FY_BIND_READ_ONLY, &e);
    if (fault_step)
        policy_inject_fault(p, fault_step, 1);
    if (copy_init)
        policy_test_copy_init(p);
    if (r >= 0 && state_dir)
        r = fy_policy_set_state_dir(p, state_dir, &e);
    if (r >= 0)
        r = fy_prepare(p, caps, argv, &pr, &e);
    CHECK(r >= 0, "prepare: %s", fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
    return pr;
}

/* Links named fy* in the namespace at path (the uplink's side of an
 * attempt's veth), or -1. */
static int fy_links_in(const char *path) {
    int ns = open(path, O_RDONLY | O_CLOEXEC), back = -1, n = 0;
    if (ns < 0 || lxn_enter(ns, &back) < 0) {
        if (ns >= 0)
            close(ns);
        return -1;
    }
    struct if_nameindex *ix = if_nameindex();
    for (struct if_nameindex *i = ix; i && i->if_index; i++)
        n += strncmp(i->if_name, "fy", 2) == 0;
    if (ix)
        if_freenameindex(ix);
    lxn_leave(back);
    close(ns);
    return ix ? n : -1;
}

/* Descriptors of process pid that are network namespaces. */
static int netns_fds_of(pid_t pid) {
    char path[64], link[128];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        ssize_t l = readlink(p, link, sizeof(link) - 1);
        if (l > 0) {
            link[l] = 0;
            n += strncmp(link, "net:[", 5) == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static fy_result *run(fy_prepared *pr, bool cancel, bool fork_copy) {
    fy_handle *h = NULL;
    fy_result *res = NULL;
    fy_error *e = NULL;
    if (fy_start(pr, &h, &e) < 0) {
        CHECK(0, "start: %s", fy_error_message(e));
        fy_error_free(e);
        return NULL;
    }
    if (fork_copy) {
        pid_t c = fork();
        if (c == 0) {
            fy_handle_free(h); /* a copy: must leave the parent's sandbox and links alone */
            _exit(0);
        }
        int st = 0;
        waitpid(c, &st, 0);
    }
    if (cancel) {
        usleep(200000);
        fy_handle_cancel(h, FY_CANCEL_RUN_CANCELLED, NULL);
    }
    CHECK(fy_handle_wait(h, 60000000, &res, &e) == 1, "wait: %s", fy_error_message(e));
    fy_error_free(e);
    fy_handle_free(h);
    uint64_t left = 99;
    CHECK(res && fy_result_cleanup(res, FY_LEFT_NETWORK, &left) == 0 && left == 0, "network objects left: %llu",
          (unsigned long long)left);
    return res;
}

/* Member 0 (namespace a) reaches member 1 (b) from its own addresses, and
 * a datagram from a second address it is given (what a workload that
 * gained CAP_NET_ADMIN in its namespace could do) is dropped by the job's
 * bridge, over IPv4 and IPv6. */
static void job_spoof_check(int a, int b, const char *who) {
    const uint8_t own4[4] = {100, 80, 0, 1}, other4[4] = {100, 80, 0, 77}, peer4[4] = {100, 80, 0, 2};
    uint8_t own6[16], peer6[16], other6[16];
    ljn_member_addr6(0, own6);
    ljn_member_addr6(1, peer6);
    ljn_member_addr6(76, other6);
    /* Each member's job0 has its index's MAC (a member started again keeps
     * it: test-jobnet's restart). */
    for (int k = 0; k < 2; k++) {
        uint8_t want[6], got[6] = {0};
        lnft_job_member_mac((uint32_t)k, want);
        int q = udp_socket_in(k ? b : a, AF_INET, k ? peer4 : own4, 0);
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "job0");
        if (q >= 0 && ioctl(q, SIOCGIFHWADDR, &ifr) == 0)
            memcpy(got, ifr.ifr_hwaddr.sa_data, 6);
        CHECK(memcmp(want, got, 6) == 0, "job rules %s: member %d's MAC %02x:%02x:%02x:%02x:%02x:%02x", who, k, got[0],
              got[1], got[2], got[3], got[4], got[5]);
        if (q >= 0)
            close(q);
    }
    int nl = lxn_nl_open(a), ifx = nl >= 0 ? lnl_ifindex(nl, "job0") : -1;
    int e4 = ifx > 0 ? lnl_addr_add(nl, ifx, AF_INET, other4, 24) : -1;
    int e6 = ifx > 0 ? lnl_addr_add(nl, ifx, AF_INET6, other6, 64) : -1;
    CHECK(e4 == 0 && e6 == 0, "job rules %s: a second address on member 0: %d %d", who, e4, e6);
    if (nl >= 0)
        close(nl);
    int to4 = udp_socket_in(b, AF_INET, peer4, 9000), to6 = udp_socket_in(b, AF_INET6, peer6, 9000);
    int ok4 = udp_socket_in(a, AF_INET, own4, 0), ok6 = udp_socket_in(a, AF_INET6, own6, 0);
    int sp4 = udp_socket_in(a, AF_INET, other4, 0), sp6 = udp_socket_in(a, AF_INET6, other6, 0);
    CHECK(to4 >= 0 && to6 >= 0 && ok4 >= 0 && ok6 >= 0 && sp4 >= 0 && sp6 >= 0,
          "job rules %s: sockets %d %d %d %d %d %d", who, to4, to6, ok4, ok6, sp4, sp6);
    bool r_ok4 = udp_reaches(ok4, to4, AF_INET, peer4, 9000), r_ok6 = udp_reaches(ok6, to6, AF_INET6, peer6, 9000);
    bool r_sp4 = udp_reaches(sp4, to4, AF_INET, peer4, 9000), r_sp6 = udp_reaches(sp6, to6, AF_INET6, peer6, 9000);
    CHECK(r_ok4 && r_ok6, "job rules %s: from member 0's own addresses: IPv4 %d, IPv6 %d", who, r_ok4, r_ok6);
    CHECK(!r_sp4 && !r_sp6, "job rules %s: from a second address: IPv4 %s, IPv6 %s", who,
          r_sp4 ? "passed" : "dropped", r_sp6 ? "passed" : "dropped");
    int fds[] = {to4, to6, ok4, ok6, sp4, sp6};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    printf("ok: %s: a job member's own addresses pass the bridge, a second address is dropped (IPv4, IPv6)\n", who);
}

/* ---- frames of a member's own making on the job's link ---- */

/* A packet socket on job0 in a namespace (what a workload that gained
 * CAP_NET_RAW there could open): proto (an ethertype, host order; 0: send
 * only) bound, a receive timeout of 0.7 s, the link's index and MAC. */
struct pkt { uint16_t proto; int fd, ifx; uint8_t mac[6]; };
static int pkt_in_ns(void *p) {
    struct pkt *k = p;
    k->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(k->proto));
    if (k->fd < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "job0");
    if (ioctl(k->fd, SIOCGIFINDEX, &ifr) < 0)
        return -errno;
    k->ifx = ifr.ifr_ifindex;
    if (ioctl(k->fd, SIOCGIFHWADDR, &ifr) < 0)
        return -errno;
    memcpy(k->mac, ifr.ifr_hwaddr.sa_data, 6);
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(k->proto), .sll_ifindex = k->ifx};
    if (bind(k->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
        return -errno;
    struct timeval tv = {0, 700000};
    (void)setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return 0;
}

static struct pkt pkt_open(int ns, uint16_t proto) {
    struct pkt k = {proto, -1, 0, {0}};
    if (lxn_in_netns(ns, pkt_in_ns, &k) < 0 && k.fd >= 0) {
        close(k.fd);
        k.fd = -1;
    }
    return k;
}

static void pkt_send(const struct pkt *from, const uint8_t *f, size_t len) {
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = from->ifx, .sll_halen = 6};
    memcpy(sll.sll_addr, f, 6);
    (void)sendto(from->fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll));
}

/* Whether frame f, sent on from's link, is seen on to's. */
/* Whether frame f, sent from one packet socket, is received by the other
 * as want (a packet socket reads a VLAN-tagged frame without its tag). */
static bool frame_reaches_as(const struct pkt *from, const struct pkt *to, const uint8_t *f, size_t len,
                             const uint8_t *want, size_t wlen) {
    uint8_t buf[2048];
    for (int i = 0; i < 3; i++) {
        pkt_send(from, f, len);
        ssize_t n;
        while ((n = recv(to->fd, buf, sizeof(buf), 0)) >= 0)
            if ((size_t)n >= wlen && memcmp(buf, want, wlen) == 0)
                return true;
    }
    return false;
}

static bool frame_reaches(const struct pkt *from, const struct pkt *to, const uint8_t *f, size_t len) {
    return frame_reaches_as(from, to, f, len, f, len);
}

static uint16_t csum(uint32_t sum, const uint8_t *p, size_t len) {
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        sum += (uint32_t)(p[len - 1] << 8);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static void eth_head(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type) {
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = (uint8_t)(type >> 8);
    f[13] = (uint8_t)type;
}

/* An IPv4 UDP datagram (one byte: tag) to d4:port, in a frame: its length. */
static size_t udp4_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], const uint8_t s4[4],
                         const uint8_t d4[4], uint16_t port, uint8_t tag) {
    memset(f, 0, 64);
    eth_head(f, dst, src, 0x0800);
    uint8_t *ip = f + 14, *u = ip + 20;
    ip[0] = 0x45;
    ip[3] = 29;
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, s4, 4);
    memcpy(ip + 16, d4, 4);
    uint16_t c = csum(0, ip, 20);
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    u[0] = 0x9c; /* (source port 40000; no UDP checksum: allowed over IPv4) */
    u[1] = 0x40;
    u[2] = (uint8_t)(port >> 8);
    u[3] = (uint8_t)port;
    u[5] = 9;
    u[8] = tag;
    return 14 + 29;
}

/* An ARP request for tpa from sender sha/spa, broadcast, its Ethernet
 * source src: 42 bytes. */
static size_t arp_frame(uint8_t *f, const uint8_t src[6], const uint8_t sha[6], const uint8_t spa[4],
                        const uint8_t tpa[4]) {
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, head[8] = {0, 1, 8, 0, 6, 4, 0, 1};
    memset(f, 0, 64);
    eth_head(f, bcast, src, 0x0806);
    memcpy(f + 14, head, 8);
    memcpy(f + 22, sha, 6);
    memcpy(f + 28, spa, 4);
    memcpy(f + 38, tpa, 4);
    return 42;
}

/* A neighbour advertisement from s6 to d6 (override; target and its
 * link-layer address option tll), checksummed: 86 bytes. */
static size_t na_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], const uint8_t s6[16],
                       const uint8_t d6[16], const uint8_t target[16], const uint8_t tll[6]) {
    memset(f, 0, 96);
    eth_head(f, dst, src, 0x86dd);
    uint8_t *ip = f + 14, *icmp = ip + 40;
    ip[0] = 0x60;
    ip[5] = 32; /* (payload: 24 + an 8-byte option) */
    ip[6] = IPPROTO_ICMPV6;
    ip[7] = 255;
    memcpy(ip + 8, s6, 16);
    memcpy(ip + 24, d6, 16);
    icmp[0] = 136;
    icmp[4] = 0x20;
    memcpy(icmp + 8, target, 16);
    icmp[24] = 2;
    icmp[25] = 1;
    memcpy(icmp + 26, tll, 6);
    uint32_t sum = 32 + IPPROTO_ICMPV6; /* (the pseudo-header's length and next header) */
    for (int i = 0; i < 32; i += 2)
        sum += (uint32_t)(ip[8 + i] << 8 | ip[8 + i + 1]);
    uint16_t c = csum(sum, icmp, 32);
    icmp[2] = (uint8_t)(c >> 8);
    icmp[3] = (uint8_t)c;
    return 14 + 40 + 32;
}

/* Member 0 (a) sends frames of its own making (a workload that gained
 * CAP_NET_RAW in its namespace could): the bridge passes them only with
 * member 0's own MAC as the Ethernet source (and ARP's sender), and no
 * neighbour advertisement for another member's address; a frame with
 * member 1's MAC as its source must not teach the bridge that member 1 is
 * behind member 0's port (the bridge learns before it forwards: member 1's
 * traffic would go to member 0). */
static void job_link_spoof_check(int a, int b, const char *who) {
    const uint8_t own4[4] = {100, 80, 0, 1}, peer4[4] = {100, 80, 0, 2}, none4[4] = {100, 80, 0, 250};
    uint8_t own6[16], peer6[16];
    ljn_member_addr6(0, own6);
    ljn_member_addr6(1, peer6);
    struct pkt tx = pkt_open(a, 0), arp = pkt_open(b, 0x0806), ip6 = pkt_open(b, 0x86dd);
    int to4 = udp_socket_in(b, AF_INET, peer4, 9001), ok4 = udp_socket_in(a, AF_INET, own4, 0);
    CHECK(tx.fd >= 0 && arp.fd >= 0 && ip6.fd >= 0 && to4 >= 0 && ok4 >= 0,
          "job link %s: packet sockets %d %d %d, UDP %d %d", who, tx.fd, arp.fd, ip6.fd, to4, ok4);
    if (tx.fd < 0 || arp.fd < 0 || ip6.fd < 0 || to4 < 0 || ok4 < 0)
        goto out;
    const uint8_t *mac0 = tx.mac, *mac1 = arp.mac;
    uint8_t other[6];
    memcpy(other, mac0, 6);
    other[5] ^= 0x40; /* (a MAC no member has) */
    uint8_t f[128], buf[64];
    size_t n;
    /* IPv4 from its own address: with its own MAC it arrives; with
     * another, not. */
    bool own = false, foreign = false;
    for (int i = 0; i < 3 && !own; i++) {
        n = udp4_frame(f, mac1, mac0, own4, peer4, 9001, (uint8_t)('A' + i));
        pkt_send(&tx, f, n);
        ssize_t k;
        while ((k = recv(to4, buf, sizeof(buf), 0)) >= 0)
            own = own || (k == 1 && buf[0] >= 'A' && buf[0] <= 'C');
    }
    for (int i = 0; i < 3 && !foreign; i++) {
        n = udp4_frame(f, mac1, other, own4, peer4, 9001, (uint8_t)('a' + i));
        pkt_send(&tx, f, n);
        ssize_t k;
        while ((k = recv(to4, buf, sizeof(buf), 0)) >= 0)
            foreign = foreign || (k == 1 && buf[0] >= 'a' && buf[0] <= 'c');
    }
    CHECK(own, "job link %s: an IPv4 frame with member 0's own MAC did not arrive", who);
    CHECK(!foreign, "job link %s: an IPv4 frame with another Ethernet source (its own IPv4 source) arrived", who);
    /* ARP: its own sender passes; another sender's MAC does not. */
    n = arp_frame(f, mac0, mac0, own4, none4);
    bool arp_own = frame_reaches(&tx, &arp, f, n);
    n = arp_frame(f, mac0, other, own4, peer4);
    bool arp_other = frame_reaches(&tx, &arp, f, n);
    CHECK(arp_own, "job link %s: ARP with member 0's own MAC and address did not arrive", who);
    CHECK(!arp_other, "job link %s: ARP naming another MAC as its sender arrived", who);
    /* Neighbour advertisements: for its own address, yes; for member 1's
     * (which would send member 1's traffic to member 0), no. */
    n = na_frame(f, mac1, mac0, own6, peer6, own6, mac0);
    bool na_own = frame_reaches(&tx, &ip6, f, n);
    n = na_frame(f, mac1, mac0, own6, peer6, peer6, mac0);
    bool na_other = frame_reaches(&tx, &ip6, f, n);
    /* The same with an 802.1Q priority tag (VLAN 0), which member 1's
     * kernel strips: the type the rules read was the tag's. */
    uint8_t untagged[128];
    n = na_frame(untagged, mac1, mac0, own6, peer6, peer6, mac0);
    memcpy(f, untagged, 12);
    f[12] = 0x81, f[13] = 0, f[14] = 0, f[15] = 0;
    memcpy(f + 16, untagged + 12, n - 12);
    bool na_tagged = frame_reaches_as(&tx, &ip6, f, n + 4, untagged, n);
    CHECK(na_own, "job link %s: a neighbour advertisement for member 0's own address did not arrive", who);
    CHECK(!na_other, "job link %s: a neighbour advertisement for member 1's address arrived", who);
    CHECK(!na_tagged, "job link %s: a VLAN-tagged neighbour advertisement for member 1's address arrived", who);
    /* Member 1's MAC as the source (an ethertype nobody answers, so that
     * member 1 sends nothing that would correct the bridge), then member
     * 0's ordinary datagram to member 1 must still get there. */
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    memset(f, 0, 64);
    eth_head(f, bcast, mac1, 0x88b5);
    for (int i = 0; i < 3; i++)
        pkt_send(&tx, f, 60);
    usleep(100000);
    bool still = udp_reaches(ok4, to4, AF_INET, peer4, 9001);
    CHECK(still, "job link %s: after a frame with member 1's MAC from member 0's port, member 1 no longer gets "
                 "member 0's datagrams (the bridge learnt member 1 behind member 0's port)", who);
    if (own && !foreign && arp_own && !arp_other && na_own && !na_other && !na_tagged && still)
        printf("ok: %s: a job member's frames pass the bridge only with its own MAC (Ethernet source, ARP sender), "
               "no neighbour advertisement for another member's address (tagged or not), and a frame with another member's MAC "
               "teaches the bridge nothing\n", who);
out:;
    int fds[] = {tx.fd, arp.fd, ip6.fd, to4, ok4};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* test-net-api --helper-job SOCKET, as an unprivileged uid the helper
 * allows: the same check on a job network the privileged helper makes,
 * its members two namespaces of a user namespace of ours (which lets us
 * give member 0 a second address). */
static int helper_job(const char *sock) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
        printf("FAIL: unshare: %s\n", strerror(errno));
        return 1;
    }
    char name[72];
    fy_error *je = NULL;
    int a = lxn_new_netns(), b = lxn_new_netns();
    CHECK(a >= 0 && b >= 0, "helper job: namespaces %d %d", a, b);
    int r = lxnh_job_create(sock, 2, name, &je);
    r = r == 0 ? lxnh_job_add(sock, name, 0, a, &je) : r;
    r = r == 0 ? lxnh_job_add(sock, name, 1, b, &je) : r;
    CHECK(r == 0, "helper job: %s", je ? fy_error_message(je) : "");
    fy_error_free(je);
    if (r == 0)
        job_spoof_check(a, b, "through the helper");
    if (r == 0)
        job_link_spoof_check(a, b, "through the helper");
    uint32_t left = lxnh_job_del(sock, name, 0) + lxnh_job_del(sock, name, 1) + lxnh_job_destroy(sock, name);
    CHECK(left == 0, "helper job: %u left", left);
    return failed;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--helper-job") == 0)
        return helper_job(argv[2]);
    if (argc != 3)
        return 2;
    uplink = argv[1];
    probe_dir = argv[2];
    fy_error *e = NULL;
    if (fy_probe(FY_PROBE_NO_VM, &caps, &e) < 0) {
        printf("probe: %s\n", fy_error_message(e));
        return 1;
    }
    const char *reach[] = {"/opt/fyprobe/fy-netprobe", "tcp", "198.51.100.1", "8080", NULL};
    const char *late[] = {"/bin/sh", "-c", "sleep 1; exec /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080", NULL};
    const char *idle[] = {"/bin/sleep", "30", NULL};

    /* 1. An ordinary attempt: through, and witnessed clean. */
    fy_prepared *pr = prepare(uplink, reach);
    fy_result *res = pr ? run(pr, false, false) : NULL;
    CHECK(res && fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "reach: outcome %s",
          res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none");
    fy_result_free(res);
    /* The plan's evidence carries the rules. */
    char *json = NULL;
    CHECK(pr && fy_prepared_to_json(pr, &json, NULL) == 0 && strstr(json, "198.51.100.1/32 tcp 8080-8080"),
          "the prepared plan's JSON lacks the rule");
    fy_free(json);
    fy_prepared_free(pr);
    printf("ok: an attempt through the API reaches the destination, network_left 0\n");

    /* 1b. The same where forgeyard-init cannot be executed (pid 1 is a
     *     copy of the host): its netns goes to the host the same way. */
    copy_init = true;
    pr = prepare(uplink, reach);
    copy_init = false;
    res = pr ? run(pr, false, false) : NULL;
    CHECK(res && fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "copy-init: outcome %s",
          res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none");
    fy_result_free(res);
    fy_prepared_free(pr);
    printf("ok: with the fallback init too\n");

    /* 1c. A local user (uid 65534) holding every link slot's abstract
     *     socket name in the uplink namespace (16384 of them: anyone can
     *     bind an abstract name, none has an owner) refused every root
     *     attempt ("no free /30"): root's reservations are locks only root
     *     can take now. It needs 16,400 descriptors: a host whose hard
     *     limit is lower, without CAP_SYS_RESOURCE to raise it, skips it. */
    struct rlimit nofile;
    bool squat = getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
                 (nofile.rlim_max >= 16400 || setrlimit(RLIMIT_NOFILE, &(struct rlimit){16400, 16400}) == 0);
    if (!squat)
        printf("skip: every slot's name squatted: the hard RLIMIT_NOFILE (%llu) is below 16400 and cannot be raised\n",
               (unsigned long long)nofile.rlim_max);
    if (squat) {
        int ready[2];
        CHECK(pipe2(ready, O_CLOEXEC) == 0, "pipe");
        pid_t squatter = fork();
        if (squatter == 0) {
            int ns = open(uplink, O_RDONLY | O_CLOEXEC);
            struct rlimit rl = {16400, 16400};
            if (ns < 0 || setns(ns, CLONE_NEWNET) < 0 || setrlimit(RLIMIT_NOFILE, &rl) < 0 || setgroups(0, NULL) < 0 ||
                setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                _exit(1);
            int held = 0;
            for (unsigned slot = 0; slot < 16384; slot++) {
                int s = socket(AF_UNIX, SOCK_DGRAM, 0);
                struct sockaddr_un a = {.sun_family = AF_UNIX};
                int n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "forgeyard/net-link/647f0000/16/%u", slot);
                held += s >= 0 && bind(s, (struct sockaddr *)&a,
                                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0;
            }
            (void)!write(ready[1], &held, sizeof(held));
            pause();
            _exit(0);
        }
        close(ready[1]);
        int held = 0;
        CHECK(squatter > 0 && read(ready[0], &held, sizeof(held)) == (ssize_t)sizeof(held) && held == 16384,
              "the squatter holds %d names", held);
        close(ready[0]);
        pr = prepare(uplink, reach);
        res = pr ? run(pr, false, false) : NULL;
        CHECK(res && fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "with every slot's name squatted: outcome %s: %s",
              res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none", res ? fy_result_detail(res) : "");
        fy_result_free(res);
        fy_prepared_free(pr);
        kill(squatter, SIGKILL);
        waitpid(squatter, NULL, 0);
        printf("ok: another user holding every slot's abstract name does not refuse a root attempt\n");
    }

    /* 1d. A host whose probe found nf_tables refused (a container's filter
     *     on NETLINK_NETFILTER): restricted is refused at fy_prepare, typed
     *     and naming it, by every backend (the namespace backend and the
     *     VM's router alike); it was chosen, and failed at the start. */
    {
        fy_caps *full = NULL, *nonft = NULL;
        CHECK(fy_probe(0, &full, NULL) == 0, "a probe with the VM backends");
        nonft = full ? caps_dup(full) : NULL;
        CHECK(nonft != NULL, "caps");
        if (nonft)
            caps_set(nonft, FY_CAP_NFTABLES, false, 0, "the test's: nf_tables refused");
        fy_caps *kept = caps;
        caps = nonft;
        fy_policy *p = NULL;
        fy_prepared *npr = NULL;
        fy_error *ne = NULL;
        int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL) < 0 ||
                        fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, NULL) < 0 ||
                        fy_policy_set_network(p, FY_NET_RESTRICTED, NULL) < 0
                    ? -1
                    : fy_prepare(p, caps, reach, &npr, &ne);
        CHECK(r == FY_E_UNSUPPORTED && strstr(fy_error_message(ne), "needs nftables"),
              "restricted without nf_tables: %d %s (backend %s)", r, ne ? fy_error_message(ne) : "",
              npr ? fy_prepared_backend(npr) : "none");
        fy_error_free(ne);
        fy_prepared_free(npr);
        fy_policy_free(p);
        caps = kept;
        fy_caps_free(nonft);
        fy_caps_free(full);
        printf("ok: restricted without nf_tables is refused at prepare\n");
    }

    /* 2. Cancelled while it runs. */
    pr = prepare(uplink, idle);
    res = pr ? run(pr, true, false) : NULL;
    CHECK(res && fy_result_outcome(res) == FY_OUTCOME_CANCELLED, "cancel: outcome %s",
          res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none");
    fy_result_free(res);
    fy_prepared_free(pr);
    printf("ok: a cancelled attempt, network_left 0\n");

    /* 3. A forked copy of the host frees its handle; the parent's sandbox
     *    still reaches the destination afterwards. */
    pr = prepare(uplink, late);
    res = pr ? run(pr, false, true) : NULL;
    CHECK(res && fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "fork: outcome %s (exit %d)",
          res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none", res ? fy_result_exit_code(res) : -1);
    fy_result_free(res);
    fy_prepared_free(pr);
    printf("ok: a forked copy's free leaves the parent's links alone\n");

    /* 3b. A host killed while a worker it forked (a prefork server's) lives
     *     on: the worker holds none of the attempt's namespaces, so its
     *     veth goes with the sandbox (it stayed, with its route and rules,
     *     until the worker ended, where gc could not reach it). */
    {
        char sdir[] = "/tmp/fy-net-forkhost-XXXXXX";
        CHECK(mkdtemp(sdir) != NULL, "a state directory: %s", strerror(errno));
        int links0 = fy_links_in(uplink), ready[2];
        CHECK(pipe2(ready, O_CLOEXEC) == 0, "pipe");
        pid_t host = fork();
        if (host == 0) {
            fy_caps *mine = NULL;
            if (fy_probe(FY_PROBE_NO_VM, &mine, NULL) < 0)
                _exit(1);
            caps = mine; /* (objects never cross a fork) */
            state_dir = sdir;
            fy_prepared *hp = prepare(uplink, idle);
            fy_handle *hh = NULL;
            if (!hp || fy_start(hp, &hh, NULL) < 0)
                _exit(1);
            pid_t worker = fork();
            if (worker == 0) {
                sleep(20);
                _exit(0);
            }
            (void)!write(ready[1], &worker, sizeof(worker));
            pause();
            _exit(0);
        }
        close(ready[1]);
        pid_t worker = 0;
        bool up = host > 0 && read(ready[0], &worker, sizeof(worker)) == (ssize_t)sizeof(worker) && worker > 0;
        close(ready[0]);
        CHECK(up, "the forking host never started its attempt");
        int during = fy_links_in(uplink);
        if (host > 0) {
            kill(host, SIGKILL);
            waitpid(host, NULL, 0);
        }
        int held = up ? netns_fds_of(worker) : -1, after = -1;
        for (int i = 0; up && i < 100 && (after = fy_links_in(uplink)) != links0; i++) /* (5 s at most) */
            usleep(50000);
        uint64_t destroyed = 0;
        CHECK(fy_gc(sdir, 0, &destroyed, &e) == 0, "gc: %s", fy_error_message(e));
        fy_error_free(e);
        e = NULL;
        if (up)
            kill(worker, SIGKILL); /* (reparented: reaped by whoever took it) */
        CHECK(during == links0 + 1 && held == 0 && after == links0,
              "a forked worker of a killed host: fy links %d, %d while it ran, %d after; the worker held %d "
              "network namespaces", links0, during, after, held);
        rmdir(sdir);
        printf("ok: a forked worker of a killed host keeps nothing of the attempt's network\n");
    }

    /* 4. The sandbox fails before its namespace stands (an injected
     *    pivot_root failure): its own error is the result, the router that
     *    was waiting for it is removed. */
    fault_step = FY_STEP_PIVOT_ROOT;
    pr = prepare(uplink, reach);
    fault_step = 0;
    res = pr ? run(pr, false, false) : NULL;
    CHECK(res && fy_result_outcome(res) == FY_OUTCOME_INFRASTRUCTURE_FAILURE &&
              fy_result_error_step(res) == FY_STEP_PIVOT_ROOT,
          "fault: outcome %s, step %s", res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none",
          res ? fy_step_name(fy_result_error_step(res)) : "none");
    fy_result_free(res);
    fy_prepared_free(pr);
    printf("ok: a sandbox that fails before its namespace stands: its own error, network_left 0\n");

    /* 5. Uplinks that cannot serve: typed errors at start, nothing made. */
    static const struct { const char *path; int code; } bad[] = {
        {"/nonexistent/forgeyard-netns", FY_E_NOTFOUND},
        {"/etc/hostname", FY_E_INVAL}, /* a file, not a network namespace */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pr = prepare(bad[i].path, reach);
        fy_handle *h = NULL;
        int r = pr ? fy_start(pr, &h, &e) : 0;
        CHECK(r == bad[i].code && fy_error_step(e) == FY_STEP_NETNS, "uplink %s: %d (%s), want %d at netns",
              bad[i].path, r, e ? fy_error_message(e) : "", bad[i].code);
        if (h)
            fy_handle_free(h);
        fy_error_free(e);
        e = NULL;
        fy_prepared_free(pr);
    }
    printf("ok: unusable uplinks refused at start, typed\n");

    /* 6. The router's table as the library applies it (one nf_tables
     *    netlink batch from the plan's tuples) lists exactly as its
     *    nftables text does through nft -f, for single ports, ranges, blocks, both
     *    families and both protocols. */
    {
        fy_policy *p = NULL;
        int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
        if (r >= 0) r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e);
        if (r >= 0) r = fy_policy_add_destination(p, "198.51.100.0/28", FY_PROTO_UDP, 1000, 2000, &e);
        if (r >= 0) r = fy_policy_add_destination(p, "203.0.113.128/25", FY_PROTO_TCP, 1, 65535, &e);
        if (r >= 0) r = fy_policy_add_destination(p, "2001:db8::1", FY_PROTO_TCP, 443, 443, &e);
        if (r >= 0) r = fy_policy_add_destination(p, "2001:db8:1::/48", FY_PROTO_UDP, 53, 54, &e);
        if (r >= 0) r = fy_policy_add_destination(p, "2001:db8:2::/61", FY_PROTO_TCP, 22, 22, &e);
        if (r >= 0) r = fy_policy_set_network(p, FY_NET_RESTRICTED, &e);
        if (r >= 0) r = fy_policy_set_network_host(p, FY_NETHOST_UPLINK, uplink, &e);
        if (r >= 0) r = fy_prepare(p, caps, reach, &pr, &e);
        CHECK(r >= 0, "nft prepare: %s", fy_error_message(e));
        fy_error_free(e);
        e = NULL;
        fy_policy_free(p);
        const struct linux_plan *lpl = pr ? pr->plan : NULL;
        const struct lxn_plan *lp = lpl ? lpl->net : NULL;
        CHECK(lp && lp->nrules == 6, "nft: the plan has %zu tuples", lp ? lp->nrules : 0);
        static char list[2][65536];
        for (int k = 0; lp && k < 2; k++)
            apply_and_list("nft", apply_router, lp, k == 1, k ? lxn_ruleset_text(lp) : NULL, list[k], sizeof(list[k]));
        CHECK(lp && strcmp(list[0], list[1]) == 0 && strstr(list[0], "masquerade") &&
                  strstr(list[0], "udp dport 1000-2000 accept") && strstr(list[0], "ip6 daddr 2001:db8:2::/61"),
              "nft: the netlink batch lists differently from the text:\n--- netlink\n%s--- nft -f\n%s",
              list[0], list[1]);
        printf("ok: the router's table from one netlink batch lists exactly as its nftables text\n");
        /* The same for the table a root sandbox's own namespace holds
         * (lxn_direct: output and input hooks, its addresses the only
         * sources). */
        CHECK(lp && lxn_direct(lp), "nft: a root restricted plan is not direct");
        static const uint8_t sb4[4] = {100, 127, 3, 6};
        static const uint8_t sb6[16] = {0xfd, 0x66, 0x79, 0x73, 0, 1, 0, 1, [15] = 2};
        struct direct_args da = {lp, sb4, sb6};
        for (int k = 0; lp && k < 2; k++)
            apply_and_list("nft direct", apply_direct, &da, k == 1, k ? lxn_direct_ruleset_text(lp, sb4, sb6) : NULL,
                           list[k], sizeof(list[k]));
        CHECK(lp && strcmp(list[0], list[1]) == 0 && strstr(list[0], "hook output") &&
                  strstr(list[0], "ip saddr != 100.127.3.6 drop") && strstr(list[0], "ip6 saddr != fd66:7973:1:1::2 drop") &&
                  strstr(list[0], "udp dport 1000-2000 accept") && strstr(list[0], "ip6 daddr 2001:db8:2::/61") &&
                  !strstr(list[0], "forward"),
              "nft direct: the netlink batch lists differently from the text:\n--- netlink\n%s--- nft -f\n%s",
              list[0], list[1]);
        fy_prepared_free(pr);
        printf("ok: the sandbox namespace's own table (root) from one netlink batch lists exactly as its nftables text\n");

        /* A batch the kernel refuses (a zero-length comparison: prefix 0)
         * comes back as its error, at once, nothing committed. */
        struct plan_net_rule bad_rule = {.family = 4, .prefix = 0, .proto = FY_PROTO_TCP, .port_min = 1, .port_max = 2};
        struct lxn_plan bad_lp = {.rules = &bad_rule, .nrules = 1};
        int ns = lxn_new_netns();
        int a = ns >= 0 ? lxn_nft_netlink(ns, &bad_lp) : -1;
        CHECK(a == -EINVAL, "nft: a refused batch answered %d, want -EINVAL", a);
        if (ns >= 0)
            close(ns);
        printf("ok: a batch the kernel refuses is answered with its error\n");
    }

    /* 6b. A job network's bridge table (linux-nftnl.c's job batch) lists
     *     exactly as its nftables text does through nft -f; deleted, it
     *     leaves no table (the count the teardown's witness reads). */
    {
        static const char text[] =
            "table bridge fy_job {\n chain ports {\n  type filter hook prerouting priority 0; policy drop;\n"
            "  ether type != ip ether type != arp ether type != ip6 drop\n"
            "  iifname \"m0\" ether saddr 02:66:79:73:00:01 accept\n"
            "  iifname \"m11\" ether saddr 02:66:79:73:00:0c accept\n"
            " }\n chain members {\n  type filter hook forward priority 0; policy drop;\n"
            "  iifname \"m0\" oifname \"m*\" ether type arp arp saddr ether 02:66:79:73:00:01 arp saddr ip 100.80.0.1 accept\n"
            "  iifname \"m0\" oifname \"m*\" icmpv6 type nd-neighbor-advert @th,64,128 != 0xfd667973000200000000000000000001 drop\n"
            "  iifname \"m0\" oifname \"m*\" ip saddr 100.80.0.1 accept\n"
            "  iifname \"m0\" oifname \"m*\" ip6 saddr fd66:7973:2::1 accept\n"
            "  iifname \"m11\" oifname \"m*\" ether type arp arp saddr ether 02:66:79:73:00:0c arp saddr ip 100.80.0.12 accept\n"
            "  iifname \"m11\" oifname \"m*\" icmpv6 type nd-neighbor-advert @th,64,128 != 0xfd66797300020000000000000000000c drop\n"
            "  iifname \"m11\" oifname \"m*\" ip saddr 100.80.0.12 accept\n"
            "  iifname \"m11\" oifname \"m*\" ip6 saddr fd66:7973:2::c accept\n"
            " }\n chain self_in {\n  type filter hook input priority 0; policy drop;\n }\n"
            " chain self_out {\n  type filter hook output priority 0; policy drop;\n }\n}\n";
        struct lnft_member m[2] = {{.port = "m0", .a4 = {100, 80, 0, 1}, .a6 = {0xfd, 0x66, 0x79, 0x73, 0, 2, [15] = 1}},
                                   {.port = "m11", .a4 = {100, 80, 0, 12}, .a6 = {0xfd, 0x66, 0x79, 0x73, 0, 2, [15] = 12}}};
        lnft_job_member_mac(0, m[0].mac);
        lnft_job_member_mac(11, m[1].mac);
        static char list[2][16384];
        for (int k = 0; k < 2; k++) {
            int ns = lxn_new_netns(), nf = ns >= 0 ? lxn_nf_open(ns) : -1;
            CHECK(nf >= 0, "job nft: a namespace and its socket: %d %d", ns, nf);
            int a = k == 0 ? lnft_job_apply(nf, m, 2) : nft_in(ns, text, NULL, 0, (const char *[]){"-f", "-", NULL});
            CHECK(a == 0, "job nft: applying (%s): %d", k ? "nft -f" : "netlink", a);
            a = nft_in(ns, NULL, list[k], sizeof(list[k]),
                       (const char *[]){"--debug=netlink", "list", "table", "bridge", "fy_job", NULL});
            CHECK(a == 0, "job nft: nft list exited %d", a);
            int before = lnft_table_count(nf), del = lnft_job_delete(nf), after = lnft_table_count(nf);
            CHECK(before == 1 && del == 0 && after == 0, "job nft: tables %d, deleted %d, then %d", before, del, after);
            /* A second deletion: the table is not there (the teardown
             * takes that as gone). */
            del = lnft_job_delete(nf);
            CHECK(del == -ENOENT, "job nft: deleting an absent table: %d", del);
            close(nf);
            close(ns);
        }
        CHECK(strcmp(list[0], list[1]) == 0 && strstr(list[0], "arp saddr ip 100.80.0.12") &&
                  strstr(list[0], "ip6 saddr fd66:7973:2::c") && strstr(list[0], "chain self_out") &&
                  strstr(list[0], "ether saddr 02:66:79:73:00:0c accept") &&
                  strstr(list[0], "arp saddr ether 02:66:79:73:00:0c") && strstr(list[0], "nd-neighbor-advert"),
              "job nft: the netlink batch lists differently from the text:\n--- netlink\n%s--- nft -f\n%s", list[0],
              list[1]);
        printf("ok: a job network's table from one netlink batch lists exactly as its nftables text; deleted, no table is left\n");
    }

    /* 6c. The job's rules are enforced, not only listed: two member
     *     namespaces of the test's own on a job network the library makes
     *     (ljn_make, ljn_attach). */
    {
        void *job = NULL;
        fy_error *je = NULL;
        int r = ljn_make(2, &job, &je);
        CHECK(r == 0, "job rules: ljn_make: %s", je ? fy_error_message(je) : "");
        fy_error_free(je);
        je = NULL;
        int a = lxn_new_netns(), b = lxn_new_netns();
        CHECK(a >= 0 && b >= 0, "job rules: namespaces %d %d", a, b);
        r = r == 0 ? ljn_attach(job, 0, a, &je) : r;
        r = r == 0 ? ljn_attach(job, 1, b, &je) : r;
        CHECK(r == 0, "job rules: attach: %s", je ? fy_error_message(je) : "");
        fy_error_free(je);
        if (r == 0)
            job_spoof_check(a, b, "as root");
        if (r == 0)
            job_link_spoof_check(a, b, "as root");
        uint32_t left = ljn_detach(job, 0) + ljn_detach(job, 1) + ljn_free(job);
        CHECK(left == 0, "job rules: %u left", left);
        close(a);
        close(b);
    }

    /* 6d. A DNS stub whose start on the first query fails (its program
     *     cannot be executed): the query goes unanswered, the result says
     *     why, and nothing of the start is left (no thread, no fd). */
    {
        /* The baseline waits (bounded) for the earlier sections' detached
         * link deletions to end: this program has no thread of its own. */
        int tasks0 = count_dir("/proc/self/task");
        for (int i = 0; i < 1000 && tasks0 != 1; i++) { /* (10 s: the kernel's lock may be busy) */
            usleep(10000);
            tasks0 = count_dir("/proc/self/task");
        }
        int fds0 = count_dir("/proc/self/fd");
        const char *dnsq[] = {"/opt/fyprobe/fy-netprobe", "dnsq", "127.0.0.53", "x.test", "1", NULL};
        lxp_test_exec_fails = 1;
        pr = prepare(uplink, dnsq);
        res = pr ? run(pr, false, false) : NULL;
        lxp_test_exec_fails = 0;
        char *rj = NULL;
        CHECK(res && fy_result_to_json(res, &rj, NULL) == 0 && strstr(rj, "\"started\": false") &&
                  strstr(rj, "the DNS stub: executing its program"),
              "a failed stub start: %s", rj ? rj : "(no result)");
        fy_free(rj);
        fy_result_free(res);
        fy_prepared_free(pr);
        /* (the uplink link's deletion runs on a detached thread for tens of
         * ms after the attempt: waited for, bounded) */
        int tasks1 = 0, fds1 = 0;
        for (int i = 0; i < 1000; i++) {
            tasks1 = count_dir("/proc/self/task");
            fds1 = count_dir("/proc/self/fd");
            if (tasks1 == tasks0 && fds1 == fds0)
                break;
            usleep(10000);
        }
        CHECK(tasks0 == tasks1 && fds0 == fds1, "after a failed stub start: threads %d -> %d, fds %d -> %d", tasks0,
              tasks1, fds0, fds1);
        printf("ok: a DNS stub that cannot start on the first query: reported, nothing left\n");
    }

    /* 7. The most destinations a policy may hold (1024), each its rule:
     *    one batch of them (a thousand answers asked for would overflow
     *    the socket's queue: only the last request is acknowledged). */
    {
        fy_policy *p = NULL;
        int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
        r = r >= 0 ? fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e) : r;
        for (int i = 1; r >= 0 && i < 1024; i++) {
            char a[32];
            snprintf(a, sizeof(a), "203.0.%d.%d", 113 + i / 250, 1 + i % 250);
            r = fy_policy_add_destination(p, a, i % 2 ? FY_PROTO_UDP : FY_PROTO_TCP, 1000 + (uint16_t)(i % 50), 3000, &e);
        }
        if (r >= 0) r = fy_policy_set_network(p, FY_NET_RESTRICTED, &e);
        if (r >= 0) r = fy_policy_set_network_host(p, FY_NETHOST_UPLINK, uplink, &e);
        if (r >= 0) r = fy_policy_add_bind(p, probe_dir, "/opt/fyprobe", FY_BIND_READ_ONLY, &e);
        if (r >= 0) r = fy_prepare(p, caps, reach, &pr, &e);
        CHECK(r >= 0, "1024 destinations: prepare: %s", fy_error_message(e));
        fy_error_free(e);
        e = NULL;
        fy_policy_free(p);
        res = pr ? run(pr, false, false) : NULL;
        CHECK(res && fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED, "1024 destinations: outcome %s",
              res ? fy_outcome_name((uint32_t)fy_result_outcome(res)) : "none");
        fy_result_free(res);
        fy_prepared_free(pr);
        printf("ok: 1024 destinations: one batch, the allowed one reached\n");
    }
    fy_caps_free(caps);
    return failed;
}
