/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper's restricted networking (fyh-net.h). The topology is
 * lib/linux/linux-net.c's, so that root runs and helper runs look alike and
 * share an uplink:
 *
 *   sandbox netns (peer's)   router netns (ours, host user ns)        uplink netns
 *   eth0 100.64.0.2/30 ----- sb 100.64.0.1/30                          (--net-uplink:
 *        fd66:7973::2/64        fd66:7973::1/64                         a file, or host)
 *                               up  LINK+2/30 ---------------------- fyXXXXXXXX LINK+1/30
 *                                   fd66:7973:1:SLOT::2/64              fd66:7973:1:SLOT::1/64
 *
 * The router forwards only new flows from sb to up that match a rule,
 * established ones back, masquerades on up, drops everything else (TCP,
 * UDP, ICMP, raw, both families) and accepts nothing for itself but
 * neighbour discovery. Its rules are one nf_tables netlink batch the helper
 * encodes (lib/linux/linux-nftnl.c) from decoded, validated tuples and
 * sends over a netfilter socket made in the router namespace: no program is
 * started and no text is parsed, so nothing the peer sends can name a file,
 * another table or anything but the tuples' addresses and ports.
 *
 * The helper is single-threaded: it enters a namespace (setns) only to make
 * a socket there, and comes back at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fyh-net.h"
#include "../linux-netlink.h"
#include "../linux-nftnl.h"

#define LINK_BASE 0x647f0000u /* 100.127.0.0/16: lib/linux/linux-net.h's LXN_DEFAULT_LINK_SUBNET */
#define LINK_LEN 16u
#define SB_ROUTER4 0x64400001u  /* 100.64.0.1 */
#define SB_SANDBOX4 0x64400002u /* 100.64.0.2 */
#define STR_(x) #x
#define STR(x) STR_(x)

void (*fyh_net_raise)(bool on);

static struct {
    bool ready;
    int self;   /* our own network namespace */
    int uplink; /* the uplink's */
    bool uplink_host; /* the uplink is ours or the host's (pid 1's): every local entry refused */
    char uplink_name[FYH_UPLINK_MAX + 1];
} N = {.self = -1, .uplink = -1};

uint32_t fyh_net_caps(void) { return (1u << 12) /* CAP_NET_ADMIN */ | (1u << 21) /* CAP_SYS_ADMIN */; }

const char *fyh_net_uplink(void) { return N.ready ? N.uplink_name : NULL; }

/* ---- namespaces ---- */

static void back_home(void) {
    if (setns(N.self, CLONE_NEWNET) < 0)
        abort(); /* never go on in the wrong namespace */
}

static int socket_in(int ns, int domain, int type, int proto) {
    if (setns(ns, CLONE_NEWNET) < 0)
        return -errno;
    int s = socket(domain, type | SOCK_CLOEXEC, proto);
    int e = errno;
    back_home();
    return s < 0 ? -e : s;
}

static int new_netns(void) {
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int e = errno;
    back_home();
    return fd < 0 ? -e : fd;
}

static bool same_file(int a, int b) {
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- rtnetlink (the requests are lib/linux/linux-netlink.c's) ---- */

static int nl_open(int ns) {
    int s = socket_in(ns, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    return s < 0 ? s : lnl_ready(s);
}

static int nf_open(int ns) {
    int s = socket_in(ns, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
    return s < 0 ? s : lnl_ready(s);
}

/* ---- set-up ---- */

int fyh_net_init(const char *uplink, char *why, size_t whylen) {
    if ((N.self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(why, whylen, "our network namespace: %s", strerror(errno));
        return -errno;
    }
    bool host = strcmp(uplink, "host") == 0;
    if (!host && uplink[0] != '/') {
        snprintf(why, whylen, "%s: a network namespace file (absolute) or the word host", uplink);
        return -EINVAL;
    }
    N.uplink = lnl_open_netns(host ? "/proc/thread-self/ns/net" : uplink);
    if (N.uplink < 0) {
        int e = -N.uplink;
        snprintf(why, whylen, "%s: %s", uplink, e == EINVAL ? "not a network namespace" : strerror(e));
        return -e;
    }
    if (strlen(uplink) > FYH_UPLINK_MAX - 32) {
        snprintf(why, whylen, "%s: name too long", uplink);
        return -ENAMETOOLONG;
    }
    snprintf(N.uplink_name, sizeof(N.uplink_name), "%s", host ? "host (the helper's network namespace)" : uplink);
    /* (read now, before the helper confines itself: /proc/1 later may not
     * be ours to open) */
    int h = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
    N.uplink_host = host || same_file(N.self, N.uplink) || (h >= 0 && same_file(h, N.uplink));
    if (h >= 0)
        close(h);
    N.ready = true;
    return 0;
}

int fyh_net_check_ns(int ns, uid_t uid, char *why, size_t whylen) {
    struct stat st;
    if (fstat(ns, &st) < 0 || ioctl(ns, NS_GET_NSTYPE) != CLONE_NEWNET) {
        snprintf(why, whylen, "the descriptor is not a network namespace");
        return -FYH_E_FD;
    }
    if (same_file(ns, N.self) || same_file(ns, N.uplink)) {
        snprintf(why, whylen, "the helper's own or the uplink's network namespace");
        return -FYH_E_FD;
    }
    /* The peer's uid owns the namespace's user namespace: the peer could
     * configure it itself (the owner holds every capability there), so we
     * do nothing in it that the peer could not. */
    int user = ioctl(ns, NS_GET_USERNS);
    if (user < 0) {
        snprintf(why, whylen, "its user namespace: %s", strerror(errno));
        return -FYH_E_FD;
    }
    int self_user = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
    uid_t owner = (uid_t)-1;
    int r = ioctl(user, NS_GET_OWNER_UID, &owner);
    bool ours = self_user >= 0 && same_file(user, self_user);
    /* A child of the helper's own user namespace: the owner's capabilities
     * there are the peer's. Deeper (a user namespace made inside someone
     * else's, whose creator maps to the same uid) they would not be. */
    int parent = ours ? -1 : ioctl(user, NS_GET_PARENT);
    bool direct = parent >= 0 && self_user >= 0 && same_file(parent, self_user);
    if (parent >= 0)
        close(parent);
    close(user);
    if (self_user >= 0)
        close(self_user);
    if (r < 0 || ours || owner != uid || !direct) {
        snprintf(why, whylen, "the network namespace belongs to a user namespace %s, not uid %u's",
                 ours        ? "of the host"
                 : r < 0     ? "of unknown owner"
                 : !direct   ? "nested below another (only a child of the host's is the caller's own)"
                             : "of another uid",
                 (unsigned)uid);
        return -FYH_E_FD;
    }
    return 0;
}

static const uint8_t sb_router6[16] = {0xfd, 0x66, 0x79, 0x73, [15] = 1};
static const uint8_t sb_sandbox6[16] = {0xfd, 0x66, 0x79, 0x73, [15] = 2};

static void link6(uint8_t out[16], uint32_t slot, uint8_t host) {
    memset(out, 0, 16);
    out[0] = 0xfd, out[1] = 0x66, out[2] = 0x79, out[3] = 0x73, out[5] = 1;
    out[6] = (uint8_t)(slot >> 8);
    out[7] = (uint8_t)slot;
    out[15] = host;
}

/* Whether rule r could reach one of the router's links. */
static bool hits_links(const struct fyh_net_rule *r) {
    if (r->family == 6) {
        unsigned p = r->prefix < 32 ? r->prefix : 32;
        static const uint8_t l6[4] = {0xfd, 0x66, 0x79, 0x73};
        for (unsigned bit = 0; bit < p; bit++)
            if (((r->addr[bit / 8] ^ l6[bit / 8]) >> (7 - bit % 8)) & 1)
                return false;
        return true;
    }
    uint32_t a = (uint32_t)r->addr[0] << 24 | (uint32_t)r->addr[1] << 16 | (uint32_t)r->addr[2] << 8 | r->addr[3];
    unsigned c1 = r->prefix < LINK_LEN ? r->prefix : LINK_LEN, c2 = r->prefix < 30 ? r->prefix : 30;
    return c1 == 0 || (a >> (32 - c1)) == (LINK_BASE >> (32 - c1)) || (a >> (32 - c2)) == (SB_ROUTER4 >> (32 - c2));
}

/* Loopback addresses (127/8, ::1, ::ffff:127/104) are the sandbox's own
 * loopback from inside (the library's rule, plan-net.c): a tuple naming
 * one reaches nothing through the router. */
static bool loopback_address(unsigned fam, const uint8_t *a) {
    static const uint8_t v6[16] = {[15] = 1}, mapped[12] = {[10] = 0xff, [11] = 0xff};
    return fam == 4 ? a[0] == 127 : memcmp(a, v6, 16) == 0 || (memcmp(a, mapped, 12) == 0 && a[12] == 127);
}

/* Whether rule r overlaps the block addr/prefix (they agree on the
 * shorter prefix). */
static bool rule_overlaps(const struct fyh_net_rule *r, unsigned fam, const uint8_t *addr, unsigned prefix) {
    if (r->family != fam)
        return false;
    unsigned n = r->prefix < prefix ? r->prefix : prefix;
    for (unsigned bit = 0; bit < n; bit++)
        if (((r->addr[bit / 8] ^ addr[bit / 8]) >> (7 - bit % 8)) & 1)
            return false;
    return true;
}

/* The first rule that overlaps an entry of the local routing table
 * (RT_TABLE_LOCAL: local, broadcast and anycast routes) of namespace ns,
 * the block in as, in *hit (-1: none); 0, or -errno when the table
 * cannot be read.
 * A packet for such an address is delivered to the namespace itself,
 * whatever interface it came in on: routed by a peer's router into the
 * uplink, it reaches the uplink's own (wildcard-bound) services. The
 * local table lists every such address: the interfaces' own (on lo too:
 * a service address put there), their IPv4 broadcast addresses, IPv6
 * anycast ones and any local block an operator routed (AnyIP). */
/* local_too false: only broadcast and anycast entries count (a named
 * uplink's own addresses are destinations the operator put there). */
static int covers_local(int ns, bool local_too, const struct fyh_net_rule *rules, uint32_t nrules, int *hitp,
                        char *as, size_t aslen) {
    *hitp = -1;
    int s = nl_open(ns);
    if (s < 0)
        return s;
    int hit = -1, err = 0;
    static const int fams[2] = {AF_INET, AF_INET6};
    static uint8_t buf[32768];
    for (int f = 0; f < 2 && hit < 0 && !err; f++) {
        struct {
            struct nlmsghdr h;
            struct rtmsg r;
        } req;
        memset(&req, 0, sizeof(req));
        req.h.nlmsg_len = sizeof(req);
        req.h.nlmsg_type = RTM_GETROUTE;
        req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        req.h.nlmsg_seq = (uint32_t)f + 1;
        req.r.rtm_family = (uint8_t)fams[f];
        if (send(s, &req, sizeof(req), 0) < 0) {
            err = -errno;
            break;
        }
        /* (the whole dump is read, a hit or not: the socket is closed after) */
        for (bool done = false; !done && !err;) {
            ssize_t n = recv(s, buf, sizeof(buf), 0);
            if (n < 0) {
                err = errno == EINTR ? 0 : -errno;
                continue;
            }
            if (n == 0) {
                err = -EIO;
                break;
            }
            for (struct nlmsghdr *h = (struct nlmsghdr *)(void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
                if (h->nlmsg_seq != req.h.nlmsg_seq)
                    continue;
                if (h->nlmsg_type == NLMSG_DONE) {
                    done = true;
                    break;
                }
                if (h->nlmsg_type == NLMSG_ERROR) {
                    const struct nlmsgerr *e = NLMSG_DATA(h);
                    err = e->error ? e->error : -EIO;
                    break;
                }
                if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)) || hit >= 0)
                    continue;
                const struct rtmsg *r = NLMSG_DATA(h);
                uint32_t table = r->rtm_table;
                const uint8_t *dst = NULL;
                int len = (int)RTM_PAYLOAD(h);
                for (const struct rtattr *a = RTM_RTA(r); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
                    if (a->rta_type == RTA_TABLE && RTA_PAYLOAD(a) >= 4)
                        memcpy(&table, RTA_DATA(a), 4);
                    else if (a->rta_type == RTA_DST && RTA_PAYLOAD(a) >= (r->rtm_family == AF_INET ? 4u : 16u))
                        dst = RTA_DATA(a);
                }
                if (table != RT_TABLE_LOCAL || !dst ||
                    ((r->rtm_type != RTN_LOCAL || !local_too) && r->rtm_type != RTN_BROADCAST &&
                     r->rtm_type != RTN_ANYCAST))
                    continue;
                unsigned fam = r->rtm_family == AF_INET ? 4 : 6;
                uint8_t a16[16] = {0};
                memcpy(a16, dst, fam == 4 ? 4 : 16);
                /* (127/8 and ::1 are the sandbox's own loopback: the rule
                 * is documented as allowed and reaches nothing here) */
                if (loopback_address(fam, a16) && r->rtm_dst_len >= (fam == 4 ? 8 : 128))
                    continue;
                for (uint32_t k = 0; k < nrules && hit < 0; k++)
                    if (rule_overlaps(&rules[k], fam, a16, r->rtm_dst_len)) {
                        hit = (int)k;
                        char t[INET6_ADDRSTRLEN] = "";
                        inet_ntop(fam == 4 ? AF_INET : AF_INET6, a16, t, sizeof(t));
                        snprintf(as, aslen, "%s/%u (%s)", t, r->rtm_dst_len,
                                 r->rtm_type == RTN_LOCAL ? "local" : r->rtm_type == RTN_BROADCAST ? "broadcast" : "anycast");
                    }
            }
        }
    }
    close(s);
    *hitp = hit;
    return err;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* How long the serving loop waits for a link pair with one end in a
 * peer's namespace to run (IFF_UP|IFF_RUNNING). The peer holds every
 * capability there: it can set its end down or dormant (IFLA_LINKMODE,
 * IFLA_OPERSTATE) as soon as the link appears, and the router's end
 * loses its carrier with it, so a wait on either is a wait on the peer.
 * The helper serves every uid from one loop: it asks the kernel to settle
 * both ends at once (ETHTOOL_GLINK, as lnl_links_running does), then
 * waits only this long, and a link that is not running by then fails that
 * peer's request (system, ETIMEDOUT), not everybody's. A 10 s wait here
 * (RUNNING_DEADLINE_MS) let one peer stall every other uid's requests. */
#define PEER_RUNNING_MS 50

/* 0 once a (on qa) and b (on qb) are up and running, within
 * PEER_RUNNING_MS of their settling; -ETIMEDOUT, or -errno. */
static int peer_links_running(int qa, const char *a, int qb, const char *b) {
    const struct {
        int q;
        const char *name;
    } link[2] = {{qa, a}, {qb, b}};
    for (int i = 0; i < 2; i++) {
        struct ethtool_value ev = {.cmd = ETHTOOL_GLINK};
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", link[i].name);
        ifr.ifr_data = (char *)&ev;
        (void)ioctl(link[i].q, SIOCETHTOOL, &ifr);
    }
    /* (the clock starts once both are settled: a kernel lock held by
     * others delays the requests above, not the links' running) */
    uint64_t t0 = now_ms();
    for (int i = 0; i < 2;) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", link[i].name);
        if (ioctl(link[i].q, SIOCGIFFLAGS, &ifr) < 0)
            return -errno;
        if ((ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING)) {
            i++;
            continue;
        }
        if (now_ms() - t0 >= PEER_RUNNING_MS)
            return -ETIMEDOUT;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* Reserves slot of the link subnet in the uplink namespace (linux-net.c's
 * reserve_slot: the same root-only locks, so root runs and we never
 * collide, and no local user can hold them all). */
static int reserve_slot(uint32_t slot) { return lnl_reserve_slot(N.uplink, LINK_BASE, LINK_LEN, slot); }

static int write_forwarding(int router) {
    static const char *const paths[] = {"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"};
    if (setns(router, CLONE_NEWNET) < 0)
        return -errno;
    int r = 0;
    for (int i = 0; i < 2 && r == 0; i++) {
        /* the thread is in the router namespace now: check, never the host's */
        int cur = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        bool ok = cur >= 0 && same_file(cur, router);
        if (cur >= 0)
            close(cur);
        int fd = ok ? open(paths[i], O_WRONLY | O_CLOEXEC) : -1;
        if (!ok)
            r = -EXDEV;
        else if (fd < 0 || write(fd, "1", 1) != 1)
            r = -errno;
        if (fd >= 0)
            close(fd);
    }
    back_home();
    return r;
}

/* The VM's sandbox-side link (protocol 4): a tap "sb" made in the router
 * namespace (a tap is made in the namespace of whoever opened
 * /dev/net/tun), owned by the peer's uid, not persistent: it lives as long
 * as a descriptor of it, which we hand to the peer and close. Frames the
 * peer's VMM writes enter the router where a sandbox veth's would. */
static int make_tap(int router, uid_t owner) {
    if (setns(router, CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NOCTTY), e = 0;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "sb");
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETOWNER, (unsigned long)owner) < 0)
        e = errno;
    back_home();
    if (e) {
        if (fd >= 0)
            close(fd);
        return -e;
    }
    return fd;
}

static int create(struct fyh_net_attempt *a, int ns, uid_t owner, int *tap, const struct fyh_net_rule *rules,
                  uint32_t nrules, int *os_errno, char *why, size_t whylen);

int fyh_net_create(struct fyh_net_attempt *a, int ns, const struct fyh_net_rule *rules, uint32_t nrules,
                   int *os_errno, char *why, size_t whylen) {
    return create(a, ns, 0, NULL, rules, nrules, os_errno, why, whylen);
}

int fyh_net_create_tap(struct fyh_net_attempt *a, uid_t owner, int *tap, const struct fyh_net_rule *rules,
                       uint32_t nrules, int *os_errno, char *why, size_t whylen) {
    return create(a, -1, owner, tap, rules, nrules, os_errno, why, whylen);
}

static int create(struct fyh_net_attempt *a, int ns, uid_t owner, int *tap, const struct fyh_net_rule *rules,
                  uint32_t nrules, int *os_errno, char *why, size_t whylen) {
    memset(a, 0, sizeof(*a));
    if (tap)
        *tap = -1;
    a->router = a->slot_lock = -1;
    *os_errno = 0;
    if (!N.ready) {
        snprintf(why, whylen, "this helper was started without --net-uplink");
        return -FYH_E_UNOFFERED;
    }
    for (uint32_t i = 0; i < nrules; i++)
        if (hits_links(&rules[i])) {
            snprintf(why, whylen, "rule %u overlaps the router's links (100.64.0.0/30, 100.127.0.0/16, "
                     "fd66:7973::/32)", i);
            return -FYH_E_MALFORMED;
        }
    /* No rule may reach an address the uplink namespace (where the
     * router's traffic is delivered) or the helper's own delivers to
     * itself: checked in both, the uplink's first. Until then only the
     * helper's own interface addresses were (getifaddrs), so with
     * --net-uplink FILE a sandbox reached the uplink namespace's own
     * services, and a helper in a private namespace (PrivateNetwork=)
     * whose uplink is the host's checked an empty namespace. */
    for (int w = 0; w < 2; w++) {
        if (w == 1 && same_file(N.self, N.uplink))
            break;
        char own[INET6_ADDRSTRLEN + 32] = "";
        if (fyh_net_raise)
            fyh_net_raise(true);
        /* A named uplink that is neither ours nor the host's (init's): its
         * own addresses are destinations the operator put there, as on the
         * library's root path (plan-net.c, linux-net.c); its broadcast and
         * anycast entries never are. Ours or the host's: every local entry. */
        bool local_too = w == 1 || N.uplink_host;
        int own_rule = -1,
            r = covers_local(w == 0 ? N.uplink : N.self, local_too, rules, nrules, &own_rule, own, sizeof(own));
        if (fyh_net_raise)
            fyh_net_raise(false);
        const char *whose = w == 1 ? "the helper's own network namespace"
                            : same_file(N.self, N.uplink) ? "the uplink (the helper's own network namespace)"
                                                          : "the uplink network namespace";
        if (r < 0) {
            *os_errno = -r;
            snprintf(why, whylen, "reading the local routing table of %s: %s", whose, strerror(-r));
            return -FYH_E_SYSTEM;
        }
        if (own_rule >= 0) {
            snprintf(why, whylen, "rule %d covers %s, which %s delivers to itself: the sandbox would reach its services",
                     own_rule, own, whose);
            return -FYH_E_MALFORMED;
        }
    }
    /* The table as one nf_tables batch from the validated tuples (the
     * library's root path's, linux-nftnl.c): no nft process per attempt. */
    static struct lnft_tuple tuples[FYH_NET_RULES_MAX];
    if (nrules > FYH_NET_RULES_MAX) {
        snprintf(why, whylen, "too many rules");
        return -FYH_E_MALFORMED;
    }
    for (uint32_t i = 0; i < nrules; i++) {
        tuples[i] = (struct lnft_tuple){.family = rules[i].family, .prefix = rules[i].prefix,
                                        .proto = rules[i].proto == FYH_PROTO_UDP ? IPPROTO_UDP : IPPROTO_TCP,
                                        .port_min = rules[i].port_min, .port_max = rules[i].port_max};
        memcpy(tuples[i].addr, rules[i].addr, 16);
    }
    struct lnft_router table = {.sb_if = "sb", .up_if = "up", .tuples = tuples, .ntuples = nrules};
    uint32_t sb4 = htonl(SB_SANDBOX4);
    memcpy(table.sb4, &sb4, 4);
    memcpy(table.sb6, sb_sandbox6, 16);
    int rs = -1, us = -1, ss = -1, e = 0, tfd = -1;
    const char *what = NULL;
    if (fyh_net_raise)
        fyh_net_raise(true);
    if ((a->router = new_netns()) < 0) {
        e = a->router, what = "creating the router namespace";
        goto fail;
    }
    int nf = nf_open(a->router);
    if (nf >= 0) {
        e = lnft_router_apply(nf, &table);
        close(nf);
    } else {
        e = nf;
    }
    if (e < 0) {
        snprintf(why, whylen, "the router's nftables table (one netlink batch): %s", strerror(-e));
        *os_errno = -e;
        if (fyh_net_raise)
            fyh_net_raise(false);
        fyh_net_remove(a);
        return -FYH_E_SYSTEM;
    }
    if ((rs = nl_open(a->router)) < 0 || (us = nl_open(N.uplink)) < 0 || (ns >= 0 && (ss = nl_open(ns)) < 0)) {
        e = rs < 0 ? rs : us < 0 ? us : ss, what = "netlink socket";
        goto fail;
    }
    uint32_t nslots = 1u << (30 - LINK_LEN), slot = 0;
    for (int tries = 0;; tries++) {
        if (tries > 64) {
            e = -EADDRINUSE, what = "no free link in 100.127.0.0/16";
            goto fail;
        }
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
            rnd = (uint32_t)tries * 2654435761u ^ (uint32_t)now_ms();
        slot = rnd % nslots;
        int u1 = lnl_addr_in_use(us, htonl(LINK_BASE + 4 * slot + 1));
        int u2 = u1 == 0 ? lnl_addr_in_use(us, htonl(LINK_BASE + 4 * slot + 2)) : u1;
        if (u1 < 0 || u2 < 0) {
            e = u1 < 0 ? u1 : u2, what = "listing the uplink's addresses";
            goto fail;
        }
        if (u1 || u2)
            continue;
        int l = reserve_slot(slot);
        if (l >= 0) {
            a->slot_lock = l;
            break;
        }
        if (l != -EADDRINUSE) {
            e = l, what = "reserving a link of the uplink";
            goto fail;
        }
    }
    for (int tries = 0; tries < 8; tries++) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
            rnd = (uint32_t)tries * 2654435761u ^ (uint32_t)now_ms();
        snprintf(a->link, sizeof(a->link), "fy%08x", (unsigned)rnd);
        if ((e = lnl_link_veth(rs, "up", a->link, N.uplink)) != -EEXIST)
            break;
    }
    if (e < 0) {
        a->link[0] = '\0';
        what = "veth to the uplink";
        goto fail;
    }
    int i_up = lnl_ifindex(rs, "up"), i_upl = lnl_ifindex(us, a->link);
    if (i_up < 0 || i_upl < 0) {
        e = i_up < 0 ? i_up : i_upl, what = "interface index";
        goto fail;
    }
    uint32_t a_upl = htonl(LINK_BASE + 4 * slot + 1), a_upr = htonl(LINK_BASE + 4 * slot + 2);
    uint8_t u6l[16], u6r[16];
    link6(u6l, slot, 1);
    link6(u6r, slot, 2);
    if ((e = lnl_addr_add(rs, i_up, AF_INET, &a_upr, 30)) < 0 || (e = lnl_addr_add(rs, i_up, AF_INET6, u6r, 64)) < 0)
        what = "router addresses";
    else if ((e = lnl_addr_add(us, i_upl, AF_INET, &a_upl, 30)) < 0 || (e = lnl_addr_add(us, i_upl, AF_INET6, u6l, 64)) < 0)
        what = "uplink addresses";
    else if ((e = lnl_link_up(rs, "up")) < 0 || (e = lnl_link_up(us, a->link)) < 0)
        what = "uplink links up";
    else if ((e = lnl_links_running(rs, "up", us, a->link, RUNNING_DEADLINE_MS)) < 0)
        what = "the uplink running (IFF_RUNNING) once up";
    else if ((e = lnl_route_default(rs, i_up, AF_INET, &a_upl)) < 0 || (e = lnl_route_default(rs, i_up, AF_INET6, u6l)) < 0)
        what = "router routes";
    else if ((e = write_forwarding(a->router)) < 0)
        what = "forwarding in the router namespace";
    else if (ns < 0 && (tfd = make_tap(a->router, owner)) < 0)
        e = tfd, what = "the VM's tap device (/dev/net/tun) in the router namespace";
    else if (ns >= 0 && (e = lnl_link_veth(rs, "sb", "eth0", ns)) < 0)
        what = "veth to the sandbox";
    if (what)
        goto fail;
    if (ns < 0) {
        /* A tap: the router's side only; the guest takes the sandbox's
         * addresses itself, behind the peer's VMM. */
        int i_tap = lnl_ifindex(rs, "sb");
        uint32_t a_r = htonl(SB_ROUTER4);
        if (i_tap < 0)
            e = i_tap, what = "interface index";
        else if ((e = lnl_addr_add(rs, i_tap, AF_INET, &a_r, 30)) < 0 ||
                 (e = lnl_addr_add(rs, i_tap, AF_INET6, sb_router6, 64)) < 0)
            what = "router addresses";
        else if ((e = lnl_link_up(rs, "sb")) < 0)
            what = "sandbox links up";
        if (what)
            goto fail;
        close(rs);
        close(us);
        if (fyh_net_raise)
            fyh_net_raise(false);
        *tap = tfd;
        return 0;
    }
    int i_sb = lnl_ifindex(rs, "sb"), i_eth = lnl_ifindex(ss, "eth0");
    if (i_sb < 0 || i_eth < 0) {
        e = i_sb < 0 ? i_sb : i_eth, what = "interface index";
        goto fail;
    }
    uint32_t a_sbr = htonl(SB_ROUTER4), a_sbs = htonl(SB_SANDBOX4);
    if ((e = lnl_addr_add(rs, i_sb, AF_INET, &a_sbr, 30)) < 0 || (e = lnl_addr_add(rs, i_sb, AF_INET6, sb_router6, 64)) < 0)
        what = "router addresses";
    else if ((e = lnl_addr_add(ss, i_eth, AF_INET, &a_sbs, 30)) < 0 ||
             (e = lnl_addr_add(ss, i_eth, AF_INET6, sb_sandbox6, 64)) < 0)
        what = "sandbox addresses";
    else if ((e = lnl_link_up(rs, "sb")) < 0 || (e = lnl_link_up(ss, "eth0")) < 0)
        what = "sandbox links up";
    else if ((e = peer_links_running(rs, "sb", ss, "eth0")) < 0)
        what = e == -ETIMEDOUT ? "the sandbox's link running (IFF_RUNNING) once up, within " STR(PEER_RUNNING_MS)
                                 " ms (eth0 is in the peer's namespace, set down or dormant there?)"
                               : "the sandbox's link running (IFF_RUNNING) once up";
    else if ((e = lnl_route_default(ss, i_eth, AF_INET, &a_sbr)) < 0 ||
             (e = lnl_route_default(ss, i_eth, AF_INET6, sb_router6)) < 0)
        what = "sandbox routes";
    if (what)
        goto fail;
    close(rs);
    close(us);
    close(ss);
    if (fyh_net_raise)
        fyh_net_raise(false);
    return 0;
fail:
    snprintf(why, whylen, "%s: %s", what, strerror(-e));
    *os_errno = -e;
    if (tfd >= 0)
        close(tfd);
    if (rs >= 0)
        close(rs);
    if (us >= 0)
        close(us);
    if (ss >= 0)
        close(ss);
    if (fyh_net_raise)
        fyh_net_raise(false);
    fyh_net_remove(a);
    return -FYH_E_SYSTEM;
}

uint32_t fyh_net_remove(struct fyh_net_attempt *a) {
    uint32_t left = 0;
    if (fyh_net_raise)
        fyh_net_raise(true);
    if (a->link[0]) {
        /* Our end in the uplink takes its peer in the router with it; the
         * witness: the name is gone from the uplink. */
        int s = nl_open(N.uplink);
        if (s >= 0) {
            int e = lnl_link_del(s, a->link);
            if ((e < 0 && e != -ENODEV) || lnl_link_exists(s, a->link) != 0)
                left++;
            close(s);
        } else {
            left++;
        }
        a->link[0] = '\0';
    }
    if (fyh_net_raise)
        fyh_net_raise(false);
    /* The router namespace (and the sandbox's link in it) goes with its
     * last reference, ours: it is never mounted anywhere. */
    if (a->router >= 0)
        close(a->router);
    lnl_release_slot(a->slot_lock);
    a->router = a->slot_lock = -1;
    return left;
}

/* ---- job networks (protocol 4) ----
 * lib/linux/linux-jobnet.c's topology, made by us for an unprivileged
 * peer: one namespace per job (ours: the host's user namespace; no
 * process, mounted nowhere, held by one descriptor of ours), a bridge jb,
 * nftables (bridge family) forwarding a frame only from a member's port to
 * another member's port and only from that member's own MAC and address,
 * nothing to or from the namespace itself; member i's namespace (the peer's, checked
 * by fyh_net_check_ns) gets a veth job0 100.80.0.(i+1)/24 and
 * fd66:7973:2::(i+1)/120 (no link-local, no DAD), MAC address
 * lnft_job_member_mac(i), whose other end m<i> is a port of the bridge. */

#define JOB_SUBNET 0x64500000u /* 100.80.0.0/24: linux-jobnet.h's LJN_SUBNET */
/* fd66:7973:2::/64, member i at ::(i+1): linux-jobnet.h's LJN_SUBNET6_TEXT.
 * Made by the helper from the index alone, as the IPv4 address: no
 * message of the protocol changed for it (still 4). */
static const uint8_t job_subnet6[16] = {0xfd, 0x66, 0x79, 0x73, 0, 2};
#define JOB_PREFIX6 120 /* on-link: linux-jobnet.h's LJN_PREFIX6 (the shared neighbour table) */

/* Member i's port and addresses. */
static void job_member(uint32_t i, struct lnft_member *m) {
    uint32_t a = htonl(JOB_SUBNET + i + 1);
    snprintf(m->port, sizeof(m->port), "m%u", i);
    memcpy(m->a4, &a, 4);
    memcpy(m->a6, job_subnet6, 16);
    m->a6[14] = (uint8_t)((i + 1) >> 8);
    m->a6[15] = (uint8_t)((i + 1) & 0xff);
    lnft_job_member_mac(i, m->mac);
}

/* The job's table (linux-nftnl.h has it as nft would list it) for n
 * members, as one batch over a netfilter socket in ns: 0 or -errno. */
static int job_rules(int ns, uint32_t n) {
    static struct lnft_member m[FYH_JOB_MEMBERS_MAX];
    for (uint32_t i = 0; i < n; i++)
        job_member(i, &m[i]);
    int s = nf_open(ns);
    int e = s < 0 ? s : lnft_job_apply(s, m, n);
    if (s >= 0)
        close(s);
    return e;
}

int fyh_job_create(struct fyh_job *j, uint32_t nmembers, int *os_errno, char *why, size_t whylen) {
    memset(j, 0, sizeof(*j));
    j->ns = -1;
    *os_errno = 0;
    if (!N.ready) {
        snprintf(why, whylen, "this helper was started without --net-uplink");
        return -FYH_E_UNOFFERED;
    }
    if (nmembers == 0 || nmembers > FYH_JOB_MEMBERS_MAX) {
        snprintf(why, whylen, "a job network has 1..%u members", FYH_JOB_MEMBERS_MAX);
        return -FYH_E_MALFORMED;
    }
    j->nmembers = nmembers;
    int e = 0, s = -1;
    const char *what = NULL;
    if (fyh_net_raise)
        fyh_net_raise(true);
    if ((j->ns = new_netns()) < 0)
        e = j->ns, what = "creating the job's namespace";
    else if ((s = nl_open(j->ns)) < 0)
        e = s, what = "netlink socket";
    else if ((e = lnl_link_bridge(s, "jb")) < 0 || (e = lnl_link_up(s, "jb")) < 0)
        what = "the job's bridge";
    /* The rules after the bridge: a bridge-family table made in a
     * namespace before its first bridge was listed but never consulted by
     * the kernel (6.18; the library's test-net-api section 6c). */
    else if ((e = job_rules(j->ns, nmembers)) < 0)
        what = "the job's nftables table (one netlink batch)";
    if (s >= 0)
        close(s);
    if (fyh_net_raise)
        fyh_net_raise(false);
    if (what) {
        snprintf(why, whylen, "%s: %s", what, strerror(-e));
        *os_errno = -e;
        if (j->ns >= 0)
            close(j->ns); /* (the namespace goes with our only reference) */
        j->ns = -1;
        return -FYH_E_SYSTEM;
    }
    return 0;
}

int fyh_job_add(struct fyh_job *j, uint32_t index, int member_ns, int *os_errno, char *why, size_t whylen) {
    *os_errno = 0;
    if (index >= j->nmembers) {
        snprintf(why, whylen, "the job has %u members; no index %u", j->nmembers, index);
        return -FYH_E_MALFORMED;
    }
    struct lnft_member m = {{0}};
    job_member(index, &m);
    const char *port = m.port;
    int js = -1, ss = -1, e = 0, br = 0, eth = 0;
    const char *what = NULL;
    if (fyh_net_raise)
        fyh_net_raise(true);
    if ((js = nl_open(j->ns)) < 0 || (ss = nl_open(member_ns)) < 0)
        e = js < 0 ? js : ss, what = "netlink socket";
    else if ((e = lnl_link_veth_mac(js, port, "job0", member_ns, m.mac)) < 0)
        /* EEXIST names neither end: the job's port m<i> (this index linked
         * already), or job0 in the member's namespace (the namespace linked
         * already, as another index or to another job). */
        what = e != -EEXIST                  ? "veth to the member"
               : lnl_ifindex(js, port) > 0   ? "the member's port in the job (this index is linked already)"
               : lnl_ifindex(ss, "job0") > 0 ? "job0 in the member's namespace (linked to a job already)"
                                             : "the member's veth (a link of that name exists)";
    else if ((br = lnl_ifindex(js, "jb")) < 0 || (eth = lnl_ifindex(ss, "job0")) < 0)
        e = br < 0 ? br : eth, what = "interface index";
    else if ((e = lnl_link_master(js, port, br)) < 0)
        what = "the member's port on the bridge";
    else if ((e = lnl_link_up(js, port)) < 0 || (e = lnl_addr_add(ss, eth, AF_INET, m.a4, 24)) < 0 ||
             (e = lnl_addr_add(ss, eth, AF_INET6, m.a6, JOB_PREFIX6)) < 0 || (e = lnl_link_up(ss, "job0")) < 0)
        what = "the member's link and address";
    else if ((e = peer_links_running(js, port, ss, "job0")) < 0)
        what = e == -ETIMEDOUT ? "the member's link running (IFF_RUNNING) once up, within " STR(PEER_RUNNING_MS)
                                 " ms (job0 is in the peer's namespace, set down or dormant there?)"
                               : "the member's link running (IFF_RUNNING) once up";
    if (what && e != -EEXIST && js >= 0)
        (void)lnl_link_del(js, port); /* (an existing port is another attempt's) */
    if (js >= 0)
        close(js);
    if (ss >= 0)
        close(ss);
    if (fyh_net_raise)
        fyh_net_raise(false);
    if (what) {
        snprintf(why, whylen, "%s: %s", what, strerror(-e));
        *os_errno = -e;
        return e == -EEXIST ? -FYH_E_EXISTS : -FYH_E_SYSTEM;
    }
    return 0;
}

/* Deleting a link: the kernel unlists it at once, then waits for RCU grace
 * periods (tens of ms) before the request returns. As the library does as
 * root (linux-jobnet.c), the deletion runs on a detached thread with a
 * netlink socket of its own (and, for the bridge, a namespace descriptor it
 * closes when done), and the reply waits only for the name to be unlisted
 * (SIOCGIFINDEX, an RCU lookup not behind the deletion's lock), bounded.
 * The thread is made while the network capabilities are raised (a thread
 * starts with its creator's), runs nothing but the deletion and exits.
 * Where no thread can be made, the deletion is synchronous. */

/* lnl_link_del_detached on a netlink socket of ns; false: not started
 * (hand_ns still the caller's). */
static bool del_async(int ns, const char *name, int hand_ns) {
    int s = nl_open(ns);
    if (s < 0)
        return false;
    if (lnl_link_del_detached(s, name, hand_ns) < 0) {
        close(s);
        return false;
    }
    return true;
}

/* Whether name is gone from namespace ns within ms (lnl_link_unlisted). */
static bool wait_unlisted(int ns, const char *name, int ms) {
    int fd = socket_in(ns, AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return false;
    bool gone = lnl_link_unlisted(fd, name, ms);
    close(fd);
    return gone;
}

/* Deletes name in namespace ns (s: a netlink socket there) and witnesses
 * it gone: 0, or 1 when it is still there. hand_ns (or -1) is closed. */
static uint32_t delete_link(int s, int ns, const char *name, int hand_ns) {
    if (del_async(ns, name, hand_ns))
        return wait_unlisted(ns, name, UNLIST_DEADLINE_MS) ? 0 : 1;
    if (hand_ns >= 0)
        close(hand_ns);
    int e = lnl_link_del(s, name);
    return (e < 0 && e != -ENODEV) || lnl_link_exists(s, name) != 0 ? 1 : 0;
}

uint32_t fyh_job_del(struct fyh_job *j, uint32_t index) {
    char port[16];
    snprintf(port, sizeof(port), "m%u", index);
    uint32_t left = 0;
    if (fyh_net_raise)
        fyh_net_raise(true);
    int s = nl_open(j->ns);
    if (s >= 0) {
        /* (a member's namespace that went first took the pair along: gone) */
        left += delete_link(s, j->ns, port, -1);
        close(s);
    } else {
        left++;
    }
    if (fyh_net_raise)
        fyh_net_raise(false);
    return left;
}

uint32_t fyh_job_destroy(struct fyh_job *j) {
    if (j->ns < 0)
        return 0;
    uint32_t left = 0;
    if (fyh_net_raise)
        fyh_net_raise(true);
    /* The rules deleted, then the tables counted: none may be left. */
    int nf = nf_open(j->ns);
    if (nf >= 0) {
        int e = lnft_job_delete(nf), n = lnft_table_count(nf);
        left += (e < 0 && e != -ENOENT) || n != 0;
        close(nf);
    } else {
        left++;
    }
    int s = nl_open(j->ns);
    if (s >= 0) {
        for (uint32_t i = 0; i < j->nmembers; i++) {
            char port[16];
            snprintf(port, sizeof(port), "m%u", i);
            (void)lnl_link_del(s, port);
        }
        /* (its thread holds a descriptor of the namespace until done) */
        (void)delete_link(s, j->ns, "jb", fcntl(j->ns, F_DUPFD_CLOEXEC, 3)); /* (the count below witnesses) */
        /* The witness: nothing but the loopback is left in it. */
        int n = lnl_link_count(s);
        if (n != 1)
            left += n < 0 ? 1 : (uint32_t)(n - 1);
        close(s);
    } else {
        left++;
    }
    if (fyh_net_raise)
        fyh_net_raise(false);
    close(j->ns); /* our only reference: the kernel destroys it */
    j->ns = -1;
    return left;
}
