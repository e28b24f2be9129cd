/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* rtnetlink requests (linux-netlink.h). */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "linux-netlink.h"

struct nlmsg {
    union {
        struct nlmsghdr h;
        char buf[1024];
    } u;
};

/* Sequence numbers, unique across the threads of a process. */
static uint32_t next_seq(void) {
    static uint32_t seq;
    return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
}

static void *nl_tail(struct nlmsg *m) { return m->u.buf + NLMSG_ALIGN(m->u.h.nlmsg_len); }

static void nl_init(struct nlmsg *m, uint16_t type, uint16_t flags, const void *hdr, size_t hlen) {
    memset(m, 0, sizeof(*m));
    m->u.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(hlen);
    m->u.h.nlmsg_type = type;
    m->u.h.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
    m->u.h.nlmsg_seq = next_seq();
    memcpy(NLMSG_DATA(&m->u.h), hdr, hlen);
}

static struct rtattr *nl_attr(struct nlmsg *m, uint16_t type, const void *data, size_t len) {
    struct rtattr *a = nl_tail(m);
    a->rta_type = type;
    a->rta_len = (uint16_t)RTA_LENGTH(len);
    if (len)
        memcpy(RTA_DATA(a), data, len);
    m->u.h.nlmsg_len = NLMSG_ALIGN(m->u.h.nlmsg_len) + RTA_ALIGN(a->rta_len);
    return a;
}
static struct rtattr *nl_nest(struct nlmsg *m, uint16_t type) { return nl_attr(m, type, NULL, 0); }
static void nl_nest_end(struct nlmsg *m, struct rtattr *a) {
    a->rta_len = (uint16_t)((char *)nl_tail(m) - (char *)a);
}

/* Sends m and reads the replies carrying its sequence number until its
 * acknowledgement (or, for a dump, its end): 0 or -errno, or what on() made
 * of a reply (on returns > 0 to remember a value, which is then returned
 * once the acknowledgement is a success). */
static int nl_talk(int s, struct nlmsg *m, int (*on)(const struct nlmsghdr *h, const void *arg), const void *arg) {
    bool dump = (m->u.h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
    if (!dump)
        m->u.h.nlmsg_flags |= NLM_F_ACK;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (sendto(s, m, m->u.h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -errno;
    char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
    int got = 0;
    for (;;) {
        ssize_t n = recv(s, buf, sizeof(buf), 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq != m->u.h.nlmsg_seq)
                continue;
            if (h->nlmsg_type == NLMSG_DONE)
                return got;
            if (h->nlmsg_type == NLMSG_ERROR) {
                int e = ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
                return e < 0 ? e : got;
            }
            if (on) {
                int r = on(h, arg);
                if (r != 0)
                    got = r;
            }
        }
    }
}

int lnl_ready(int s) {
    struct timeval tv = {5, 0};
    (void)setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return s;
}

int lnl_link_veth(int s, const char *name, const char *peer_name, int peer_ns) {
    return lnl_link_veth_mac(s, name, peer_name, peer_ns, NULL);
}

int lnl_link_veth_mac(int s, const char *name, const char *peer_name, int peer_ns, const uint8_t *peer_mac) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlmsg m;
    nl_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
    nl_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    /* One queue each way on both ends: a veth otherwise gets one per
     * possible CPU, each with its kobjects in sysfs to make and remove,
     * and these links carry one sandbox's traffic. */
    uint32_t one = 1;
    nl_attr(&m, IFLA_NUM_TX_QUEUES, &one, sizeof(one));
    nl_attr(&m, IFLA_NUM_RX_QUEUES, &one, sizeof(one));
    struct rtattr *li = nl_nest(&m, IFLA_LINKINFO);
    nl_attr(&m, IFLA_INFO_KIND, "veth", 5);
    struct rtattr *data = nl_nest(&m, IFLA_INFO_DATA);
    struct rtattr *peer = nl_nest(&m, VETH_INFO_PEER);
    struct ifinfomsg *pifi = nl_tail(&m);
    memset(pifi, 0, sizeof(*pifi));
    m.u.h.nlmsg_len += NLMSG_ALIGN(sizeof(*pifi));
    nl_attr(&m, IFLA_IFNAME, peer_name, strlen(peer_name) + 1);
    if (peer_mac)
        nl_attr(&m, IFLA_ADDRESS, peer_mac, 6);
    nl_attr(&m, IFLA_NUM_TX_QUEUES, &one, sizeof(one));
    nl_attr(&m, IFLA_NUM_RX_QUEUES, &one, sizeof(one));
    uint32_t fd = (uint32_t)peer_ns;
    nl_attr(&m, IFLA_NET_NS_FD, &fd, sizeof(fd));
    nl_nest_end(&m, peer);
    nl_nest_end(&m, data);
    nl_nest_end(&m, li);
    return nl_talk(s, &m, NULL, NULL);
}

static void build_no_ll(struct nlmsg *m, const char *name) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    nl_init(m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
    nl_attr(m, IFLA_IFNAME, name, strlen(name) + 1);
    struct rtattr *af = nl_nest(m, IFLA_AF_SPEC);
    struct rtattr *in6 = nl_nest(m, AF_INET6);
    uint8_t mode = IN6_ADDR_GEN_MODE_NONE;
    nl_attr(m, IFLA_INET6_ADDR_GEN_MODE, &mode, sizeof(mode));
    nl_nest_end(m, in6);
    nl_nest_end(m, af);
}

static void build_up(struct nlmsg *m, const char *name) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
    nl_init(m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
    nl_attr(m, IFLA_IFNAME, name, strlen(name) + 1);
}

int lnl_link_up(int s, const char *name) {
    struct nlmsg m;
    build_no_ll(&m, name);
    int e = nl_talk(s, &m, NULL, NULL);
    if (e < 0 && e != -EAFNOSUPPORT && e != -EOPNOTSUPP)
        return e;
    build_up(&m, name);
    return nl_talk(s, &m, NULL, NULL);
}

int lnl_link_del(int s, const char *name) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlmsg m;
    nl_init(&m, RTM_DELLINK, 0, &ifi, sizeof(ifi));
    nl_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    return nl_talk(s, &m, NULL, NULL);
}

static int on_link(const struct nlmsghdr *h, const void *arg) {
    (void)arg;
    if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
        return 0;
    int idx = ((const struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
    return idx > 0 ? idx : 0;
}

int lnl_ifindex(int s, const char *name) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlmsg m;
    nl_init(&m, RTM_GETLINK, 0, &ifi, sizeof(ifi));
    nl_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    int r = nl_talk(s, &m, on_link, NULL);
    return r == 0 ? -ENODEV : r;
}

int lnl_link_exists(int s, const char *name) {
    int r = lnl_ifindex(s, name);
    return r > 0 ? 1 : r == -ENODEV ? 0 : r;
}

static void build_addr_add(struct nlmsg *m, int ifindex, int family, const void *addr, unsigned prefix) {
    struct ifaddrmsg ifa = {.ifa_family = (uint8_t)family, .ifa_prefixlen = (uint8_t)prefix,
                            .ifa_flags = family == AF_INET6 ? IFA_F_NODAD : 0, .ifa_index = (uint32_t)ifindex};
    nl_init(m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
    size_t len = family == AF_INET ? 4 : 16;
    nl_attr(m, IFA_LOCAL, addr, len);
    nl_attr(m, IFA_ADDRESS, addr, len);
    if (family == AF_INET6) {
        uint32_t fl = IFA_F_NODAD;
        nl_attr(m, IFA_FLAGS, &fl, sizeof(fl));
    }
}

int lnl_addr_add(int s, int ifindex, int family, const void *addr, unsigned prefix) {
    struct nlmsg m;
    build_addr_add(&m, ifindex, family, addr, prefix);
    return nl_talk(s, &m, NULL, NULL);
}

static void build_route_default(struct nlmsg *m, int ifindex, int family, const void *gw) {
    struct rtmsg rt = {.rtm_family = (uint8_t)family, .rtm_table = RT_TABLE_MAIN, .rtm_protocol = RTPROT_STATIC,
                       .rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST};
    nl_init(m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof(rt));
    nl_attr(m, RTA_GATEWAY, gw, family == AF_INET ? 4 : 16);
    uint32_t oif = (uint32_t)ifindex;
    nl_attr(m, RTA_OIF, &oif, sizeof(oif));
}

int lnl_route_default(int s, int ifindex, int family, const void *gw) {
    struct nlmsg m;
    build_route_default(&m, ifindex, family, gw);
    return nl_talk(s, &m, NULL, NULL);
}

/* ---- batches ---- */

void lnl_batch_init(struct lnl_batch *b) {
    b->len = b->n = 0;
    b->overflow = 0;
}

static void batch_add(struct lnl_batch *b, struct nlmsg *m, bool tolerant) {
    uint32_t l = NLMSG_ALIGN(m->u.h.nlmsg_len);
    if (b->overflow || b->n == sizeof(b->seq) / sizeof(b->seq[0]) || b->len + l > sizeof(b->u.buf)) {
        b->overflow = 1;
        return;
    }
    m->u.h.nlmsg_flags |= NLM_F_ACK;
    memcpy(b->u.buf + b->len, m, m->u.h.nlmsg_len);
    b->len += l;
    b->seq[b->n] = m->u.h.nlmsg_seq;
    b->tolerant[b->n] = tolerant;
    b->n++;
}

void lnl_batch_addr_add(struct lnl_batch *b, int ifindex, int family, const void *addr, unsigned prefix) {
    struct nlmsg m;
    build_addr_add(&m, ifindex, family, addr, prefix);
    batch_add(b, &m, false);
}

void lnl_batch_link_up(struct lnl_batch *b, const char *name) {
    struct nlmsg m;
    build_no_ll(&m, name);
    batch_add(b, &m, true);
    build_up(&m, name);
    batch_add(b, &m, false);
}

void lnl_batch_route_default(struct lnl_batch *b, int ifindex, int family, const void *gw) {
    struct nlmsg m;
    build_route_default(&m, ifindex, family, gw);
    batch_add(b, &m, false);
}

int lnl_batch_send(int s, struct lnl_batch *b) {
    if (b->overflow)
        return -E2BIG;
    if (!b->n)
        return 0;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (sendto(s, b->u.buf, b->len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -errno;
    char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
    uint32_t acked = 0;
    int first = 0;
    bool done[sizeof(b->seq) / sizeof(b->seq[0])] = {false};
    while (acked < b->n) {
        ssize_t n = recv(s, buf, sizeof(buf), 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return first ? first : -errno;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type != NLMSG_ERROR)
                continue;
            for (uint32_t i = 0; i < b->n; i++) {
                if (done[i] || h->nlmsg_seq != b->seq[i])
                    continue;
                done[i] = true;
                acked++;
                int e = ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
                if (e < 0 && !first && !(b->tolerant[i] && (e == -EAFNOSUPPORT || e == -EOPNOTSUPP)))
                    first = e;
            }
        }
    }
    return first;
}

static int on_addr(const struct nlmsghdr *h, const void *arg) {
    if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)))
        return 0;
    const struct ifaddrmsg *am = NLMSG_DATA(h);
    int alen = (int)IFA_PAYLOAD(h);
    const uint32_t *ab = arg;
    for (const struct rtattr *ra = IFA_RTA(am); RTA_OK(ra, alen); ra = RTA_NEXT(ra, alen))
        if ((ra->rta_type == IFA_LOCAL || ra->rta_type == IFA_ADDRESS) && RTA_PAYLOAD(ra) == 4 &&
            (memcmp(RTA_DATA(ra), &ab[0], 4) == 0 || memcmp(RTA_DATA(ra), &ab[1], 4) == 0))
            return 1;
    return 0;
}

int lnl_addr_in_use(int s, uint32_t a) { return lnl_addr_in_use2(s, a, a); }

int lnl_addr_in_use2(int s, uint32_t a, uint32_t b) {
    struct ifaddrmsg ifa = {.ifa_family = AF_INET};
    struct nlmsg m;
    nl_init(&m, RTM_GETADDR, NLM_F_DUMP, &ifa, sizeof(ifa));
    uint32_t ab[2] = {a, b};
    return nl_talk(s, &m, on_addr, ab);
}

struct local_walk {
    int family;
    void (*fn)(const struct lnl_local_route *r, void *arg);
    void *arg;
};

static int on_local_route(const struct nlmsghdr *h, const void *arg) {
    const struct local_walk *w = arg;
    if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
        return 0;
    const struct rtmsg *rm = NLMSG_DATA(h);
    if (rm->rtm_family != w->family ||
        (rm->rtm_type != RTN_LOCAL && rm->rtm_type != RTN_BROADCAST && rm->rtm_type != RTN_ANYCAST))
        return 0;
    struct lnl_local_route r = {.family = (uint8_t)(w->family == AF_INET ? 4 : 6), .prefix = rm->rtm_dst_len,
                                .type = rm->rtm_type};
    size_t alen = w->family == AF_INET ? 4 : 16;
    if (r.prefix > 8 * alen)
        return 0;
    uint32_t table = rm->rtm_table;
    int len = (int)RTM_PAYLOAD(h);
    for (const struct rtattr *ra = RTM_RTA(rm); RTA_OK(ra, len); ra = RTA_NEXT(ra, len)) {
        if (ra->rta_type == RTA_TABLE && RTA_PAYLOAD(ra) == 4)
            memcpy(&table, RTA_DATA(ra), 4);
        else if (ra->rta_type == RTA_DST && RTA_PAYLOAD(ra) == alen)
            memcpy(r.addr, RTA_DATA(ra), alen);
    }
    if (table == RT_TABLE_LOCAL)
        w->fn(&r, w->arg);
    return 0;
}

int lnl_local_routes(int s, void (*fn)(const struct lnl_local_route *r, void *arg), void *arg) {
    int one = 1;
    (void)setsockopt(s, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
    static const int families[] = {AF_INET, AF_INET6};
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        /* (a strict dump request: only the table set, every other field 0) */
        struct rtmsg rt = {.rtm_family = (uint8_t)families[i], .rtm_table = RT_TABLE_LOCAL};
        struct nlmsg m;
        nl_init(&m, RTM_GETROUTE, NLM_F_DUMP, &rt, sizeof(rt));
        struct local_walk w = {families[i], fn, arg};
        int r = nl_talk(s, &m, on_local_route, &w);
        /* (IPv6 may be disabled at boot: no table to list) */
        if (r < 0 && !(families[i] == AF_INET6 && (r == -EAFNOSUPPORT || r == -ENOENT)))
            return r;
    }
    return 0;
}

int lnl_link_bridge(int s, const char *name) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlmsg m;
    nl_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
    nl_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    struct rtattr *li = nl_nest(&m, IFLA_LINKINFO);
    nl_attr(&m, IFLA_INFO_KIND, "bridge", 7);
    nl_nest_end(&m, li);
    return nl_talk(s, &m, NULL, NULL);
}

int lnl_link_master(int s, const char *name, int master_ifindex) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlmsg m;
    nl_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
    nl_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    uint32_t master = (uint32_t)master_ifindex;
    nl_attr(&m, IFLA_MASTER, &master, sizeof(master));
    return nl_talk(s, &m, NULL, NULL);
}

static int on_count(const struct nlmsghdr *h, const void *arg) {
    if (h->nlmsg_type == RTM_NEWLINK)
        (*(int *)(uintptr_t)arg)++;
    return 0;
}

int lnl_link_count(int s) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlmsg m;
    nl_init(&m, RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi));
    int n = 0;
    int r = nl_talk(s, &m, on_count, &n);
    return r < 0 ? r : n;
}

/* ---- a deletion nobody waits for, and its witness ---- */

struct del_args { int s, also; char name[IFNAMSIZ]; };

static void *del_main(void *p) {
    struct del_args *a = p;
    if (a->name[0])
        (void)lnl_link_del(a->s, a->name);
    if (a->s >= 0)
        close(a->s);
    if (a->also >= 0)
        close(a->also);
    free(a);
    return NULL;
}

/* del_main on a detached thread that blocks every signal: 0, or -1 (a
 * not freed: the caller's). */
static int start_detached(struct del_args *a) {
    pthread_attr_t at;
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    if (pthread_attr_init(&at) != 0)
        return -1;
    (void)pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* (signals are the calling program's other threads') */
    int e = pthread_create(&t, &at, del_main, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    return e ? -1 : 0;
}

int lnl_link_del_detached(int s, const char *name, int also_close) {
    struct del_args *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->s = s;
    a->also = also_close;
    snprintf(a->name, sizeof(a->name), "%s", name);
    if (start_detached(a) < 0) {
        free(a);
        return -1;
    }
    return 0;
}

int lnl_close_detached(int a_fd, int b_fd) {
    struct del_args *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->s = a_fd;
    a->also = b_fd; /* (no name: nothing deleted, both only closed) */
    if (start_detached(a) < 0) {
        free(a);
        return -1;
    }
    return 0;
}

/* An ifreq naming the link name (the rest zero). */
static struct ifreq ifreq_of(const char *name) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    return ifr;
}

/* Whether ms have passed since t0 (CLOCK_MONOTONIC). */
static bool past_ms(const struct timespec *t0, int ms) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000 >= ms;
}

int lnl_links_running(int qa, const char *a, int qb, const char *b, int ms) {
    const struct {
        int q;
        const char *name;
    } link[2] = {{qa, a}, {qb, b}};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 2; i++) {
        struct ethtool_value ev = {.cmd = ETHTOOL_GLINK};
        struct ifreq ifr = ifreq_of(link[i].name);
        ifr.ifr_data = (char *)&ev;
        (void)ioctl(link[i].q, SIOCETHTOOL, &ifr);
    }
    long nap = 20000; /* ns: the work is usually done already, or within microseconds */
    for (int i = 0; i < 2;) {
        struct ifreq ifr = ifreq_of(link[i].name);
        if (ioctl(link[i].q, SIOCGIFFLAGS, &ifr) < 0)
            return -errno;
        if ((ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING)) {
            i++;
            continue;
        }
        if (past_ms(&t0, ms))
            return -ETIMEDOUT;
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 2000000)
            nap *= 2;
    }
    return 0;
}

bool lnl_link_unlisted(int q, const char *name, int ms) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct ifreq ifr = ifreq_of(name);
        if (ioctl(q, SIOCGIFINDEX, &ifr) < 0 && errno == ENODEV)
            return true;
        if (past_ms(&t0, ms))
            return false;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* ---- link slots (linux-netlink.h) ---- */

int lnl_reserve_slot(int uplink_fd, uint32_t base, uint32_t len, uint32_t slot) {
    struct stat ns, d;
    if (fstat(uplink_fd, &ns) < 0)
        return -errno;
    if (mkdir(LNL_SLOT_DIR, 0700) < 0 && errno != EEXIST)
        return -errno;
    if (lstat(LNL_SLOT_DIR, &d) < 0)
        return -errno;
    if (!S_ISDIR(d.st_mode) || d.st_uid != 0 || (d.st_mode & 022))
        return -EPERM; /* (not root's alone: never trusted) */
    char path[128];
    snprintf(path, sizeof(path), LNL_SLOT_DIR "/%llx-%llx-%08x-%u", (unsigned long long)ns.st_dev,
             (unsigned long long)ns.st_ino, base, len);
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)slot, .l_len = 1};
        if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
            int e = errno;
            close(fd);
            return e == EAGAIN || e == EACCES ? -EADDRINUSE : -e;
        }
        /* Still the file at that name (lnl_release_slot may have removed
         * it between our open and our lock): else again, on the new one. */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return fd;
        close(fd);
    }
    return -EAGAIN;
}

void lnl_release_slot(int fd) {
    if (fd < 0)
        return;
    char proc[64], path[160];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, path, sizeof(path) - 1);
    struct flock all = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    struct flock ours = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    /* Ours dropped, then the whole file taken: only when no other slot of
     * it is held is the name removed (a reservation made after sees the
     * name gone, or another file, and starts again). */
    (void)fcntl(fd, F_OFD_SETLK, &ours);
    if (n > 0 && (size_t)n < sizeof(path) - 1) {
        path[n] = '\0';
        if (strncmp(path, LNL_SLOT_DIR "/", sizeof(LNL_SLOT_DIR)) == 0 && fcntl(fd, F_OFD_SETLK, &all) == 0) {
            struct stat a, b;
            if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                (void)unlink(path);
        }
    }
    close(fd);
}
