/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode restricted as root (linux-net.h has the topology).
 *
 * A namespace sandbox (lxn_direct): its own network namespace is made here
 * before the clone, so the host's user namespace owns it, and holds the
 * rules on its output and input hooks:
 *
 *   sandbox netns (ours, host user ns)                        uplink netns
 *   eth0 LINK+2/30 ---------------------------------------- fyXXXXXXXX LINK+1/30
 *        fd66:7973:1:SLOT::2/64                               fd66:7973:1:SLOT::1/64
 *
 * The workload's user namespace is a child of ours: it has no capability
 * over the namespace, its links or its rules. Only new flows that match a
 * rule of the plan leave eth0, from the sandbox's own addresses;
 * established and related ones come back; everything else is dropped.
 *
 * Through the helper, rootless, a job member or a VM's tap, a router:
 *
 *   sandbox netns            router netns (ours, host user ns)        uplink netns
 *   eth0 100.64.0.2/30 ----- sb 100.64.0.1/30                          (FY_NETHOST_UPLINK
 *        fd66:7973::2/64        fd66:7973::1/64                         or the host's)
 *                               up  LINK+2/30 ---------------------- fyXXXXXXXX LINK+1/30
 *                                   fd66:7973:1:SLOT::2/64              fd66:7973:1:SLOT::1/64
 *
 * The router forwards (its own sysctls: the host's are never touched) only
 * new flows from sb to up that match a rule of the plan, established and
 * related ones back, and masquerades what leaves on up: the uplink needs
 * no route to the sandbox, only its side of the link (its connected
 * route). Everything else is dropped: TCP, UDP, ICMP, raw, both families.
 * The router runs no process; it lives as long as our fd of it, so a host
 * that crashes leaves nothing (the kernel destroys the namespace and its
 * veths with the last reference). No fork of the host keeps one: the
 * attempt's namespaces, the slot's reservation and the DNS stub's waiting
 * sockets are closed in the child of every fork (pu_fork_close_add; a
 * prefork server's worker kept them, and the veth, after the host died).
 *
 * Configuration is rtnetlink over plain sockets, each created in its
 * namespace by the calling thread (setns there and back: only this
 * thread's namespace changes, and only for the socket call); the rules go
 * in as one nf_tables netlink batch encoded from the plan's tuples
 * (linux-nftnl.c: no text, no parser, no library). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/nsfs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "linux-jobnet.h"
#include "linux-net.h"
#include "linux-netlink.h"
#include "linux-nftnl.h"
#include "linux-net-user.h"
#include "linux-plan.h"
#include "linux-probe-util.h"

#define NFT_DEADLINE_MS 10000

/* ---- namespaces of the calling thread ---- */

int lxn_enter(int ns, int *back) {
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0)
        return -errno;
    if (setns(ns, CLONE_NEWNET) < 0) {
        int e = errno;
        close(self);
        return -e;
    }
    *back = self;
    return 0;
}

void lxn_leave(int back) {
    if (setns(back, CLONE_NEWNET) < 0)
        abort();
    close(back);
}

/* fn(arg) run with the calling thread in namespace ns, then back. A thread
 * that cannot come back must not go on in the wrong namespace. */
static int in_netns(int ns, int (*fn)(void *), void *arg) {
    int back, e = lxn_enter(ns, &back);
    if (e < 0)
        return e;
    int r = fn(arg);
    lxn_leave(back);
    return r;
}

struct sock_args { int domain, type, proto; };
static int make_socket(void *p) {
    const struct sock_args *a = p;
    int s = socket(a->domain, a->type | SOCK_CLOEXEC, a->proto);
    return s < 0 ? -errno : s;
}
static int socket_in(int ns, int domain, int type, int proto) {
    struct sock_args a = {domain, type, proto};
    return in_netns(ns, make_socket, &a);
}

/* A new network namespace owned by our (the host's) user namespace. */
static int make_ns(void *p) {
    (void)p;
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}
static int new_netns(void) {
    int cur = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    int r = in_netns(cur, make_ns, NULL); /* (comes back to cur) */
    close(cur);
    return r;
}

/* A namespace of an attempt's: new_netns, registered so that no fork of
 * the host keeps it (closed with pu_fork_close_fd). */
static int attempt_netns(void) {
    int r = new_netns();
    pu_fork_close_add(r);
    return r;
}

static bool same_ns(int a, int b) {
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A sysctl of the router namespace: written only after checking that the
 * thread is in it (never the host's). */
struct sysctl_args { int ns; const char *path[2]; };
static int write_sysctl(void *p) {
    const struct sysctl_args *a = p;
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0)
        return -errno;
    bool ok = same_ns(self, a->ns);
    close(self);
    if (!ok)
        return -EXDEV;
    for (int i = 0; i < 2 && a->path[i]; i++) {
        int fd = open(a->path[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        ssize_t w = write(fd, "1", 1);
        int e = errno;
        close(fd);
        if (w != 1)
            return -(w < 0 ? e : EIO);
    }
    return 0;
}

/* ---- rtnetlink (the requests are linux-netlink.c's) ---- */

static int nl_open(int ns) {
    int s = socket_in(ns, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    return s < 0 ? s : lnl_ready(s);
}

/* ---- addresses ---- */

const uint8_t lxn_sb_router6[16] = {0xfd, 0x66, 0x79, 0x73, [15] = 1};
const uint8_t lxn_sb_sandbox6[16] = {0xfd, 0x66, 0x79, 0x73, [15] = 2};
#define sb_router6 lxn_sb_router6
#define sb_sandbox6 lxn_sb_sandbox6
#define SB_ROUTER4  LXN_SB_ROUTER4
#define SB_SANDBOX4 LXN_SB_SANDBOX4

static void link6(uint8_t out[16], uint32_t slot, uint8_t host) {
    static const uint8_t base[16] = {0xfd, 0x66, 0x79, 0x73, 0, 1};
    memcpy(out, base, 16);
    out[6] = (uint8_t)(slot >> 8);
    out[7] = (uint8_t)slot;
    out[15] = host;
}

/* ---- prepare ---- */

/* Zeroes the bits of the 4-byte a beyond prefix. */
static void mask(uint8_t a[4], unsigned prefix) {
    for (unsigned i = 0; i < 4; i++) {
        unsigned bits = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
        a[i] &= (uint8_t)(0xff00u >> bits);
    }
}

static int parse_subnet(const char *s, uint32_t *base, uint32_t *len) {
    unsigned a, b, c, d, l;
    char tail;
    if (sscanf(s, "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &l, &tail) != 5 || a > 255 || b > 255 || c > 255 ||
        d > 255 || l < 16 || l > 24)
        return -1;
    *base = (uint32_t)a << 24 | b << 16 | c << 8 | d;
    *len = l;
    return 0;
}

_Static_assert(LXP_PORT == NET_PROXY_PORT, "the proxy listens where the plan's network env points");

/* ---- the uplink's local routes ---- */

/* A rule of the plan that overlaps an entry of the uplink's local routing
 * table (lnl_local_routes): the first, with that entry. */
struct local_hit {
    const struct fy_plan *np;
    bool broadcast_only; /* an uplink namespace of the host's choosing: its broadcast and anycast entries only */
    long k;              /* the rule's index, -1: none */
    struct lnl_local_route entry;
};

static void on_local(const struct lnl_local_route *e, void *arg) {
    struct local_hit *h = arg;
    static const uint8_t lo6[16] = {[15] = 1};
    /* Loopback (127/8, ::1) is the sandbox's own from inside, and an
     * explicit loopback rule is documented as allowed: under restricted
     * it reaches nothing through the router (the uplink drops such a
     * destination from outside); under fetch-only it names the uplink's
     * loopback service through the proxy on purpose. */
    if (h->k >= 0 || (e->family == 4 && e->prefix >= 8 && e->addr[0] == 127) ||
        (e->family == 6 && e->prefix == 128 && memcmp(e->addr, lo6, 16) == 0) ||
        (h->broadcast_only && e->type == RTN_LOCAL))
        return;
    for (size_t k = 0; k < h->np->nnet_rules; k++) {
        const struct plan_net_rule *r = &h->np->net_rules[k];
        if (r->family != e->family)
            continue;
        /* (two blocks overlap where they agree on the shorter prefix) */
        unsigned n = r->prefix < e->prefix ? r->prefix : e->prefix, bit = 0;
        while (bit < n && !(((r->addr[bit / 8] ^ e->addr[bit / 8]) >> (7 - bit % 8)) & 1))
            bit++;
        if (bit == n) {
            h->k = (long)k;
            h->entry = *e;
            return;
        }
    }
}

/* No rule may overlap an address the uplink namespace delivers to itself
 * as a broadcast or anycast address, nor, when the uplink is the host's
 * (the caller's) namespace, any address the host delivers to itself: a
 * packet for one, forwarded by the router or sent by the fetch-only
 * proxy, reaches the uplink's own wildcard-bound services, whatever
 * interface it came in on. The core's check (plan-net.c) knows the
 * caller's interface addresses, broadcast and anycast ones; this one
 * reads the uplink's local routing table, where the kernel lists them
 * all: the interfaces' own, their IPv4 broadcast addresses, IPv6 anycast
 * ones (the subnet-router address of each prefix, while it forwards) and
 * any local block an operator routed (AnyIP, `local 192.0.2.0/24 dev lo`).
 * Until then a datagram to 10.0.0.255 or 2001:db8:1:: reached every
 * wildcard-bound service of the host, and with an uplink namespace only
 * the caller's addresses were checked. An uplink namespace the host
 * program names is a network of its choosing, whose own addresses may be
 * the destinations it serves (the tests' fake internet is one): there,
 * only its broadcast and anycast entries, which are never a destination
 * but whoever listens on the link, are refused. uplink: the namespace's
 * path, or NULL for the caller's. An uplink that cannot be opened is left
 * to the start, which refuses it, typed, before it makes anything (its
 * table is then not read: the host program named an uplink that is not
 * there yet). */
static int check_uplink_local(const struct fy_plan *np, const char *uplink, fy_error **reterr) {
    if (!np->nnet_rules)
        return 0;
    int s;
    if (uplink) {
        int ns = lnl_open_netns(uplink);
        if (ns < 0)
            return 0;
        s = nl_open(ns);
        close(ns);
    } else {
        s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        s = s < 0 ? -errno : lnl_ready(s);
    }
    struct local_hit h = {.np = np, .broadcast_only = uplink != NULL, .k = -1};
    int r = s < 0 ? s : lnl_local_routes(s, on_local, &h);
    if (s >= 0)
        close(s);
    if (r < 0)
        return err_set(reterr, err_from_errno(-r), FY_STEP_PREPARE, -r, "$.network.host",
                       "listing the local routes of the uplink %s: %s",
                       uplink ? uplink : "(the host's network namespace)", strerror(-r));
    if (h.k < 0)
        return 0;
    const struct plan_net_rule *x = &np->net_rules[h.k];
    char as[INET6_ADDRSTRLEN], loc[64];
    inet_ntop(h.entry.family == 4 ? AF_INET : AF_INET6, h.entry.addr, as, sizeof(as));
    snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", x->dest);
    return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                   "destination \"%s\" covers %s/%u, which the uplink %s delivers to itself (%s route in its "
                   "local routing table): the sandbox would reach the uplink's own services",
                   np->dests[x->dest].host, as, h.entry.prefix, uplink ? uplink : "(the host's network namespace)",
                   h.entry.type == RTN_BROADCAST ? "broadcast" : h.entry.type == RTN_ANYCAST ? "anycast" : "local");
}

/* Fetch-only: the proxy's allowlist from the plan (destinations and the
 * addresses their names resolved to at fy_prepare), its Landlock ports and
 * the credentials file. */
static int compile_fetch(struct lxn_plan *out, struct linux_plan *pl, const struct fy_plan *np, bool is_root,
                         fy_error **reterr) {
    out->mode = FY_NET_FETCH_ONLY;
    out->uplink = np->net_uplink;
    if (!lxp_program_available())
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, "$.network.mode",
                       "fetch-only needs its proxy program (fy-proxy), which is built for x86-64 and aarch64 only: "
                       "the proxy is never a copy of the host process");
    if (!pl->exec_init)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, "$.network.mode",
                       "fetch-only executes its proxy program from a sealed memfd, which this host does not allow "
                       "(capability exec-init: forgeyard doctor says why); the proxy is never a copy of the host "
                       "process");
    if (np->net_uplink && !is_root)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, "$.network.host",
                       "fetch-only with an uplink namespace needs root (the proxy joins it); without one the "
                       "proxy connects from the host's network");
    if (np->dns == FY_DNS_HOST)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.dns",
                       "dns host contradicts fetch-only: the sandbox reaches nothing but the proxy, which resolves "
                       "the destinations' names itself (at fy_prepare)");
    return lxn_fetch_config(np, &pl->arena, &out->proxy, reterr);
}

/* The proxy's allowlist (as compile_fetch says): for this backend and,
 * through the family's proxy service (linux-proxy-service.c), the VM's. */
/* The uid (and gid) a root caller's proxy and DNS stub run as: the
 * policy's id range's last id. Not 65534, the host's shared "nobody" (any
 * process of that account could stop, kill or lower the limits of every
 * root caller's proxy: same uid, no ptrace needed, unrecorded); not the
 * range's first id, which owns every sandbox's user namespace of the
 * range (a process of that uid outside them holds every capability in
 * them); not its second, a process-level workload's, which runs in no pid
 * namespace. What else runs as the last id runs inside a sandbox's own
 * pid namespace (a container's whole-range mapping), where it cannot
 * name the proxy. */
static uint32_t lxn_run_uid(const struct fy_plan *np) {
    return np->id_count >= 3 && np->id_first ? np->id_first + np->id_count - 1 : 65534;
}

int lxn_fetch_config(const struct fy_plan *np, struct arena *arena, struct lxp_config **ret, fy_error **reterr) {
    if (np->ndests > LXP_DESTS_MAX)
        return err_set(reterr, FY_E_RANGE, FY_STEP_PREPARE, 0, "$.network.destinations",
                       "fetch-only takes at most %u destinations", LXP_DESTS_MAX);
    struct lxp_config *cfg = arena_keep(arena, calloc(1, sizeof(*cfg)));
    struct lxp_dest *dests = cfg ? arena_keep(arena, calloc(np->ndests ? np->ndests : 1, sizeof(*dests))) : NULL;
    if (!cfg || !dests)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    cfg->dests = dests;
    cfg->run_uid = lxn_run_uid(np);
    bool too_many_ports = false;
    for (size_t i = 0; i < np->ndests; i++) {
        const struct plan_dest *d = &np->dests[i];
        char loc[64];
        snprintf(loc, sizeof(loc), "$.network.destinations[%zu]", i);
        if (d->proto != FY_PROTO_TCP)
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "fetch-only reaches destinations over HTTP(S) through its proxy: TCP only");
        if (strchr(d->host, '/') || strlen(d->host) > LXP_HOST_MAX)
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "fetch-only destinations are host names or single addresses (the proxy matches "
                           "host:port); a CIDR block needs network mode restricted");
        struct lxp_dest *x = &dests[cfg->ndests++];
        for (size_t k = 0; d->host[k]; k++)
            x->host[k] = (char)((d->host[k] >= 'A' && d->host[k] <= 'Z') ? d->host[k] - 'A' + 'a' : d->host[k]);
        x->port_min = d->port_min;
        x->port_max = d->port_max;
        for (size_t k = 0; k < np->nnet_rules; k++) {
            const struct plan_net_rule *r = &np->net_rules[k];
            if (r->dest != i || x->naddr == LXP_ADDRS_MAX)
                continue;
            x->addr[x->naddr].family = r->family;
            memcpy(x->addr[x->naddr].addr, r->addr, 16);
            x->naddr++;
        }
        for (uint32_t p = d->port_min; p <= d->port_max && !too_many_ports; p++) {
            bool have = false;
            for (uint32_t k = 0; k < cfg->nports && !have; k++)
                have = cfg->ports[k] == p;
            if (have)
                continue;
            if (cfg->nports == FY_ARRAY_SIZE(cfg->ports))
                too_many_ports = true;
            else
                cfg->ports[cfg->nports++] = (uint16_t)p;
        }
    }
    if (too_many_ports)
        cfg->nports = 0; /* the proxy's Landlock TCP layer is left out, and reported so */
    /* (the proxy connects from the uplink: every caller refused an uplink
     * without root before) */
    int r = check_uplink_local(np, np->net_uplink, reterr);
    if (r < 0)
        return r;
    if (np->net_credentials && (r = lxp_load_credentials(cfg, np->net_credentials, arena, reterr)) < 0)
        return r;
    *ret = cfg;
    return 0;
}

/* The DNS stub's table: every destination that is a name (not an address
 * or a block) with the addresses it resolved to at fy_prepare. NULL when
 * the stub cannot run here (no proxy program or memfd exec) or the policy
 * takes the host's resolvers; resolv.conf names it either way, so a name
 * outside /etc/hosts then simply does not resolve. */
static struct lxp_config *dns_config(struct linux_plan *pl, const struct fy_plan *np) {
    if (np->dns == FY_DNS_HOST || !lxp_program_available() || !pl->exec_init || np->ndests > LXP_DESTS_MAX)
        return NULL;
    struct lxp_config *cfg = arena_keep(&pl->arena, calloc(1, sizeof(*cfg)));
    struct lxp_dest *dests = cfg ? arena_keep(&pl->arena, calloc(np->ndests ? np->ndests : 1, sizeof(*dests))) : NULL;
    if (!cfg || !dests)
        return NULL;
    cfg->dests = dests;
    cfg->run_uid = lxn_run_uid(np);
    for (size_t i = 0; i < np->ndests; i++) {
        const char *h = np->dests[i].host;
        uint8_t tmp[16];
        if (strchr(h, '/') || strchr(h, ':') || inet_pton(AF_INET, h, tmp) == 1 || strlen(h) > LXP_HOST_MAX)
            continue;
        struct lxp_dest *x = NULL;
        for (uint32_t k = 0; k < cfg->ndests && !x; k++)
            if (strcasecmp(cfg->dests[k].host, h) == 0)
                x = &cfg->dests[k];
        if (!x) {
            x = &dests[cfg->ndests++];
            for (size_t k = 0; h[k]; k++)
                x->host[k] = (char)((h[k] >= 'A' && h[k] <= 'Z') ? h[k] - 'A' + 'a' : h[k]);
            size_t n = strlen(x->host);
            if (n && x->host[n - 1] == '.')
                x->host[n - 1] = 0;
        }
        for (size_t k = 0; k < np->nnet_name_rules; k++) {
            const struct plan_net_rule *r = &np->net_name_rules[k];
            if (r->dest != i || x->naddr == LXP_ADDRS_MAX || r->prefix != (r->family == 4 ? 32 : 128))
                continue;
            bool have = false;
            for (uint32_t m = 0; m < x->naddr && !have; m++)
                have = x->addr[m].family == r->family && memcmp(x->addr[m].addr, r->addr, 16) == 0;
            if (have)
                continue;
            x->addr[x->naddr].family = r->family;
            memcpy(x->addr[x->naddr].addr, r->addr, 16);
            x->naddr++;
        }
    }
    return cfg;
}

struct lxp_config *lxn_dns_config(struct linux_plan *pl, const struct fy_plan *np) { return dns_config(pl, np); }

/* A job member's destination inside the job's own IPv4 network
 * (LJN_SUBNET/LJN_PREFIX) never reaches its router: job0's connected
 * route is more specific than the default route, so the member's packets
 * to it go to the member of that address, or nowhere (under fetch-only
 * the proxy, outside the job, would reach whatever the host's network
 * has there).
 * Refused here, once for every path (root's router, the privileged
 * helper's, the rootless one). (The job's IPv6 /120 is inside
 * fd66:7973::/32, which every path refuses as its links' block.) */
static int check_job_destinations(const struct fy_plan *np, fy_error **reterr) {
    for (size_t i = 0; np->job_member && i < np->nnet_rules; i++) {
        const struct plan_net_rule *r = &np->net_rules[i];
        if (r->family != 4)
            continue;
        uint32_t a = (uint32_t)r->addr[0] << 24 | (uint32_t)r->addr[1] << 16 | (uint32_t)r->addr[2] << 8 | r->addr[3];
        unsigned common = r->prefix < LJN_PREFIX ? r->prefix : LJN_PREFIX;
        if (common == 0 || (a >> (32 - common)) == (LJN_SUBNET >> (32 - common))) {
            char loc[64];
            snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", r->dest);
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "destination \"%s\" overlaps the job network's addresses (100.80.0.0/%u): a job member "
                           "reaches them on its job link, never through its router",
                           np->dests[r->dest].host, (unsigned)LJN_PREFIX);
        }
    }
    return 0;
}

int lxn_require_nftables(const fy_caps *c, fy_error **reterr) {
    if (caps_present(c, FY_CAP_NFTABLES))
        return 0;
    const char *why = fy_caps_reason(c, FY_CAP_NFTABLES);
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SELECT, 0, "$.network.mode",
                   "network mode restricted needs nftables here (%s)", why ? why : "not probed");
}

int lxn_compile(struct lxn_plan *out, struct linux_plan *pl, const struct fy_plan *np, bool is_root,
                fy_error **reterr) {
    memset(out, 0, sizeof(*out));
    out->dns = dns_config(pl, np);
    int jr = check_job_destinations(np, reterr);
    if (jr < 0)
        return jr;
    if (np->net_mode == FY_NET_FETCH_ONLY)
        return compile_fetch(out, pl, np, is_root, reterr);
    out->mode = FY_NET_RESTRICTED;
    /* Unprivileged with a privileged helper that offers it: its router. */
    if (!is_root && pl->net_helper)
        return lxnh_compile(out, pl, np, reterr);
    /* Without root and without a helper: the same router and rules in the
     * library's own user namespace, uplinked by pasta (linux-net-user.c). */
    int ur;
    if (!is_root && (ur = lxnu_compile(out, pl, np, reterr)) < 0)
        return ur;
    /* (The rules go in as a netlink batch, linux-nftnl.c: no nft program.) */
    out->uplink = np->net_uplink;
    if (parse_subnet(np->net_link_subnet ? np->net_link_subnet : LXN_DEFAULT_LINK_SUBNET, &out->link_base,
                     &out->link_len) < 0)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.host", "bad link subnet %s",
                       np->net_link_subnet);
    /* No rule may reach the router's own links. */
    for (size_t i = 0; i < np->nnet_rules; i++) {
        const struct plan_net_rule *r = &np->net_rules[i];
        if (r->family == 6) {
            /* fd66:7973::/32 holds both IPv6 links. */
            static const uint8_t links6[4] = {0xfd, 0x66, 0x79, 0x73};
            uint8_t a6[4];
            memcpy(a6, r->addr, 4);
            mask(a6, r->prefix < 32 ? r->prefix : 32);
            uint8_t l6[4];
            memcpy(l6, links6, 4);
            mask(l6, r->prefix < 32 ? r->prefix : 32);
            if (memcmp(a6, l6, 4) == 0) {
                char loc[64];
                snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", r->dest);
                return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                               "destination \"%s\" overlaps the sandbox's IPv6 links (fd66:7973::/32)",
                               np->dests[r->dest].host);
            }
            continue;
        }
        uint32_t a = (uint32_t)r->addr[0] << 24 | (uint32_t)r->addr[1] << 16 | (uint32_t)r->addr[2] << 8 | r->addr[3];
        unsigned common = r->prefix < out->link_len ? r->prefix : out->link_len;
        unsigned common2 = r->prefix < 30 ? r->prefix : 30;
        bool hits_link = common == 0 || (a >> (32 - common)) == (out->link_base >> (32 - common));
        bool hits_sb = common2 == 0 || (a >> (32 - common2)) == (SB_ROUTER4 >> (32 - common2));
        if (hits_link || hits_sb) {
            char loc[64];
            snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", r->dest);
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "destination \"%s\" overlaps the sandbox's links (%s, 100.64.0.0/30)", np->dests[r->dest].host,
                           np->net_link_subnet ? np->net_link_subnet : LXN_DEFAULT_LINK_SUBNET);
        }
    }
    /* (without root, pasta's uplink: the caller's namespace) */
    int lr = check_uplink_local(np, is_root ? np->net_uplink : NULL, reterr);
    if (lr < 0)
        return lr;
    out->rules = np->net_rules; /* (kept by the prepared object: the netlink batch's tuples) */
    out->nrules = np->nnet_rules;
    return 0;
}

/* The tuples' accept rules as nftables text, into b. */
static void tuples_text(struct strbuf *b, const struct lxn_plan *lp) {
    for (size_t i = 0; i < lp->nrules; i++) {
        const struct plan_net_rule *r = &lp->rules[i];
        char a[INET6_ADDRSTRLEN];
        inet_ntop(r->family == 4 ? AF_INET : AF_INET6, r->addr, a, sizeof(a));
        const char *proto = r->proto == FY_PROTO_UDP ? "udp" : "tcp";
        strbuf_printf(b, "  %s daddr %s/%u %s dport %u-%u accept\n", r->family == 4 ? "ip" : "ip6", a, r->prefix,
                      proto, r->port_min, r->port_max);
    }
}

/* The same table as nftables text (what nft -f or libnftables would read):
 * malloc'd, NULL on OOM. The router never uses it; test-net-api applies it
 * beside the netlink batch and compares the bytecode the two leave. */
char *lxn_ruleset_text(const struct lxn_plan *lp) {
    struct strbuf b;
    strbuf_init(&b);
    strbuf_append(&b,
                  "table inet forgeyard {\n"
                  " chain forward {\n"
                  "  type filter hook forward priority 0; policy drop;\n"
                  "  meta nfproto ipv6 exthdr rt exists drop\n"
                  "  meta nfproto ipv4 ip daddr 127.0.0.0/8 drop\n"
                  "  meta nfproto ipv6 ip6 daddr ::1 drop\n"
                  "  ct state established,related accept\n"
                  "  iifname != \"" LXN_ROUTER_SB_IF "\" drop\n"
                  "  oifname != \"" LXN_ROUTER_UP_IF "\" drop\n"
                  "  meta nfproto ipv4 ip saddr != 100.64.0.2 drop\n"
                  "  meta nfproto ipv6 ip6 saddr != fd66:7973::2 drop\n"
                  "  ct state != new drop\n");
    tuples_text(&b, lp);
    strbuf_append(&b,
                  " }\n"
                  " chain input {\n"
                  "  type filter hook input priority 0; policy drop;\n"
                  "  icmpv6 type nd-neighbor-solicit accept\n"
                  "  icmpv6 type nd-neighbor-advert accept\n"
                  " }\n"
                  " chain postrouting {\n"
                  "  type nat hook postrouting priority srcnat; policy accept;\n"
                  "  oifname \"" LXN_ROUTER_UP_IF "\" masquerade\n"
                  " }\n"
                  "}\n");
    if (b.oom) {
        strbuf_free(&b);
        return NULL;
    }
    return b.buf; /* (the strbuf's own allocation) */
}

char *lxn_direct_ruleset_text(const struct lxn_plan *lp, const void *sb4, const uint8_t sb6[16]) {
    char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET, sb4, a4, sizeof(a4));
    inet_ntop(AF_INET6, sb6, a6, sizeof(a6));
    struct strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b,
                  "table inet forgeyard {\n"
                  " chain output {\n"
                  "  type filter hook output priority 0; policy drop;\n"
                  "  oifname \"lo\" accept\n"
                  "  oifname != \"" LXN_SANDBOX_IF "\" drop\n"
                  "  meta nfproto ipv6 exthdr rt exists drop\n"
                  "  meta nfproto ipv4 ip daddr 127.0.0.0/8 drop\n"
                  "  meta nfproto ipv6 ip6 daddr ::1 drop\n"
                  "  ct state established,related accept\n"
                  "  icmpv6 type nd-neighbor-solicit accept\n"
                  "  icmpv6 type nd-neighbor-advert accept\n"
                  "  meta nfproto ipv4 ip saddr != %s drop\n"
                  "  meta nfproto ipv6 ip6 saddr != %s drop\n"
                  "  ct state != new drop\n",
                  a4, a6);
    tuples_text(&b, lp);
    strbuf_append(&b,
                  " }\n"
                  " chain input {\n"
                  "  type filter hook input priority 0; policy drop;\n"
                  "  iifname \"lo\" accept\n"
                  "  ct state established,related accept\n"
                  "  icmpv6 type nd-neighbor-solicit accept\n"
                  "  icmpv6 type nd-neighbor-advert accept\n"
                  " }\n"
                  "}\n");
    if (b.oom) {
        strbuf_free(&b);
        return NULL;
    }
    return b.buf;
}

void lxn_landlock_ports(struct linux_plan *pl, const struct fy_plan *np) {
    pl->nll_tcp_ports = 0;
    if (!pl->ll_handled || pl->ll_abi < 4)
        return;
    /* The DNS stub's port too where it runs: it answers over TCP on
     * 127.0.0.53:53 (port 53 elsewhere is the router's to drop). */
    bool stub = pl->net && pl->net->dns;
    if (np->net_mode == FY_NET_FETCH_ONLY) {
        /* Only the proxy's port, on the sandbox's own loopback. */
        pl->ll_tcp_ports[0] = LXP_PORT;
        pl->nll_tcp_ports = 1;
        if (stub)
            pl->ll_tcp_ports[pl->nll_tcp_ports++] = 53;
        return;
    }
    uint16_t ports[LX_LL_MAX_TCP_PORTS];
    uint32_t n = 0;
    if (stub)
        ports[n++] = 53;
    for (size_t i = 0; i < np->nnet_rules; i++) {
        const struct plan_net_rule *r = &np->net_rules[i];
        if (r->proto != FY_PROTO_TCP)
            continue;
        for (uint32_t p = r->port_min; p <= r->port_max; p++) {
            bool have = false;
            for (uint32_t k = 0; k < n && !have; k++)
                have = ports[k] == p;
            if (have)
                continue;
            if (n == LX_LL_MAX_TCP_PORTS)
                return; /* too many: the layer is left out, and reported so */
            ports[n++] = (uint16_t)p;
        }
    }
    /* No TCP rule at all: every connect refused, which is what the plan says. */
    if (n == 0)
        ports[n++] = 0; /* port 0: connect(2) to it never succeeds anyway */
    memcpy(pl->ll_tcp_ports, ports, n * sizeof(ports[0]));
    pl->nll_tcp_ports = n;
}

void lxn_landlock_job_ports(struct linux_plan *pl, const struct fy_plan *np) {
    /* What a standalone attempt of its mode gets (restricted: the
     * allowlist's TCP ports; fetch-only: the proxy's; the stub's 53 where
     * it runs; deny: none), then the ports it declared for the others. */
    lxn_landlock_ports(pl, np);
    uint32_t n = pl->nll_tcp_ports;
    if (n == 0)
        return; /* no ABI 4, or too many already: left out */
    if (n == 1 && pl->ll_tcp_ports[0] == 0)
        n = 0; /* (the no-TCP placeholder: real ports follow) */
    for (uint32_t i = 0; i < np->njob_ports; i++) {
        bool have = false;
        for (uint32_t k = 0; k < n && !have; k++)
            have = pl->ll_tcp_ports[k] == np->job_ports[i];
        if (have)
            continue;
        if (n == LX_LL_MAX_TCP_PORTS) {
            pl->nll_tcp_ports = 0; /* too many: the layer is left out, and reported so */
            return;
        }
        pl->ll_tcp_ports[n++] = np->job_ports[i];
    }
    pl->nll_tcp_ports = n;
}

/* A job member's Landlock TCP layer into the evidence o: exactly the ports
 * the child applies (pl->ll_tcp_ports), or why there is none. */
static void describe_job_landlock(json_t *o, const struct lxn_plan *lp, const struct fy_plan *np,
                                  const struct linux_plan *pl) {
    const char *enforcement = lp->mode == FY_NET_FETCH_ONLY ? "the proxy and the job's rules"
                              : lp->mode == FY_NET_RESTRICTED ? "the router and the job's rules"
                                                              : "the job's rules";
    if (pl->nll_tcp_ports) {
        json_t *ports = json_array();
        for (uint32_t i = 0; ports && i < pl->nll_tcp_ports; i++)
            json_array_append_new(ports, json_integer(pl->ll_tcp_ports[i]));
        json_object_set_new(o, "landlock_tcp_ports", ports);
        json_object_set_new(
            o, "landlock_tcp",
            json_sprintf("connect(2) over TCP only to the ports in landlock_tcp_ports, to any address, the loopback "
                         "included: %sthe ports declared for the job's members (network.job.ports); UDP is not "
                         "covered (%s are)",
                         lp->mode == FY_NET_FETCH_ONLY ? (lp->dns ? "the proxy's (3128), the DNS stub's (53), "
                                                                  : "the proxy's (3128), ")
                         : lp->mode == FY_NET_RESTRICTED ? (lp->dns ? "the allowlist's TCP ports, the DNS stub's (53), "
                                                                    : "the allowlist's TCP ports, ")
                                                         : "",
                         enforcement));
    } else if (!np->njob_ports) {
        json_object_set_new(o, "landlock_tcp",
                            json_sprintf("none: the member declares no network.job.ports (the TCP ports it connects "
                                         "to on the other members), and a layer without them would refuse its peers "
                                         "(%s are the enforcement)",
                                         enforcement));
    } else if (!pl->ll_handled || pl->ll_abi < 4) {
        json_object_set_new(o, "landlock_tcp", json_string("none (needs Landlock ABI 4)"));
    } else {
        json_object_set_new(o, "landlock_tcp",
                            json_sprintf("none (more than %d distinct TCP ports with network.job.ports: it takes "
                                         "no more rules; %s are the enforcement)",
                                         LX_LL_MAX_TCP_PORTS, enforcement));
    }
}

/* A job member's "job" record (linux-jobnet.c) into the evidence o. */
static void describe_job(json_t *o, const struct lxn_plan *lp) {
    char *j = ljn_describe(lp->job_member, lp->job_index);
    json_t *jo = j ? json_loads(j, 0, NULL) : NULL;
    free(j);
    json_object_set(o, "job", jo ? json_object_get(jo, "job") : json_null());
    json_decref(jo);
}

char *lxn_describe(const struct lxn_plan *lp, const struct fy_plan *np, const struct linux_plan *pl) {
    if (lp->job && lp->mode == FY_NET_DENY) {
        char *d = ljn_describe(lp->job_member, lp->job_index);
        json_t *jo = d ? json_loads(d, 0, NULL) : NULL;
        free(d);
        if (!jo)
            return NULL;
        describe_job_landlock(jo, lp, np, pl);
        char *s = json_dumps(jo, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(jo);
        return s;
    }
    json_t *o = json_object(), *rules = json_array();
    if (!o || !rules) {
        json_decref(o);
        json_decref(rules);
        return NULL;
    }
    for (size_t i = 0; i < np->nnet_rules; i++) {
        char t[96];
        json_array_append_new(rules, json_string(plan_net_rule_text(&np->net_rules[i], t, sizeof(t))));
    }
    if (lp->mode == FY_NET_FETCH_ONLY) {
        json_t *dests = json_array();
        for (uint32_t i = 0; dests && i < lp->proxy->ndests; i++) {
            const struct lxp_dest *d = &lp->proxy->dests[i];
            char t[LXP_HOST_MAX + 32];
            if (d->port_min == d->port_max)
                snprintf(t, sizeof(t), "%s:%u", d->host, d->port_min);
            else
                snprintf(t, sizeof(t), "%s:%u-%u", d->host, d->port_min, d->port_max);
            json_array_append_new(dests, json_string(t));
        }
        json_object_set_new(o, "mode", json_string("fetch-only"));
        json_object_set_new(o, "enforcement",
                            json_string("own network namespace with only its loopback; an HTTP(S) forward proxy "
                                        "outside the sandbox (confined: the id range's last uid as root, no capabilities, "
                                        "no new privileges, Landlock, seccomp) listens on 127.0.0.1:3128 inside "
                                        "it and connects only to the allowlisted host:port at the addresses "
                                        "resolved at prepare; CONNECT is a tunnel, TLS is never terminated"));
        json_object_set_new(o, "proxy", json_string(LXP_URL));
        json_object_set_new(o, "allowlist", dests);
        json_object_set_new(o, "rules", rules);
        json_object_set_new(o, "credentials", json_integer(lp->proxy->ncreds));
        json_object_set_new(o, "uplink", json_string(lp->uplink ? lp->uplink : "host"));
        json_object_set_new(o, "dns", json_string(lp->dns ? "stub: 127.0.0.53 answers only the allowlisted names "
                                                            "(A/AAAA resolved at prepare), REFUSED for every other, "
                                                            "forwards nothing, started on the first query; no "
                                                            "destination names in /etc/hosts"
                                                          : "none: no resolver and no destination names in /etc/hosts; "
                                                            "the proxy resolves nothing (names resolved at prepare)"));
        json_object_set_new(o, "landlock_tcp",
                            json_string(pl->nll_tcp_ports > 1 ? "connect(2) over TCP only to the proxy's port and the DNS "
                                                                              "stub's (53)"
                                        : pl->nll_tcp_ports ? "connect(2) over TCP only to the proxy's port"
                                                            : "none (needs Landlock ABI 4)"));
        if (lp->job) {
            /* Fetch-only and a job member: the proxy on its loopback as
             * above, and the job's link (linux-jobnet.c); no route but the
             * job's /24. */
            describe_job(o, lp);
            json_object_set_new(o, "enforcement",
                                json_string("own network namespace with its loopback and the job's link (no route "
                                            "but the job's /24, no default route); an HTTP(S) forward proxy outside "
                                            "the sandbox (confined: the id range's last uid as root, no capabilities, no new "
                                            "privileges, Landlock, seccomp) listens on 127.0.0.1:3128 inside it and "
                                            "connects only to the allowlisted host:port at the addresses resolved "
                                            "at prepare; CONNECT is a tunnel, TLS is never terminated"));
            describe_job_landlock(o, lp, np, pl);
        }
        char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(o);
        return s;
    }
    json_object_set_new(o, "mode", json_string("restricted"));
    json_object_set_new(o, "enforcement",
                        json_string("nftables in a per-attempt router namespace owned by the host's user namespace "
                                    "(veth, forward only to the rules, masquerade; everything else dropped: TCP, UDP, "
                                    "ICMP, raw, IPv4 and IPv6)"));
    if (lp->helper) /* (linux-net-helper.c) */
        json_object_set_new(o, "helper", json_sprintf("router namespace, veths and nft rules made and removed by the "
                                                      "privileged helper at %s", lp->helper));
    if (lp->rootless) {
        json_object_set_new(o, "enforcement",
                            json_string("nftables in a per-attempt router namespace of the library's own user "
                                        "namespace (not the workload's: no capability over it), linked to the "
                                        "sandbox by two tuns and a relay; everything not allowed dropped there "
                                        "(TCP, UDP, ICMP, raw, IPv4 and IPv6); uplink: pasta as the caller"));
    }
    if (lxn_direct(lp))
        json_object_set_new(o, "enforcement",
                            json_string("nftables in the sandbox's own network namespace, which the host's user "
                                        "namespace owns (the workload has no capability over it: it cannot change "
                                        "its addresses, routes or rules, nor open raw or packet sockets), one veth "
                                        "to the uplink; only new flows to the rules leave, from the sandbox's own "
                                        "addresses; everything else dropped: TCP, UDP, ICMP, IPv4 and IPv6"));
    json_object_set_new(o, "mechanism", json_string(lp->helper       ? "nftables-helper-router-netns"
                                                    : lp->rootless   ? "nftables-userns-pasta"
                                                    : lxn_direct(lp) ? "nftables-host-owned-netns"
                                                                     : "nftables-router-netns"));
    json_object_set_new(o, "rules", rules);
    json_object_set_new(o, "uplink", json_string(lp->helper     ? lp->helper_uplink
                                                 : lp->rootless ? "pasta"
                                                 : lp->uplink   ? lp->uplink
                                                                : "host"));
    json_object_set_new(o, "dns", json_string(np->dns == FY_DNS_HOST ? "host resolv.conf (reachable only if listed)"
                                              : lp->dns ? "hosts-file and stub: allowed names resolved at prepare in "
                                                          "/etc/hosts; 127.0.0.53 answers only them (A/AAAA), REFUSED "
                                                          "for every other, forwards nothing; the stub starts on the "
                                                          "first query"
                                                        : "hosts-file: allowed names resolved at prepare, no resolver"));
    json_object_set_new(o, "landlock_tcp",
                        json_string(pl->nll_tcp_ports ? (lp->dns ? "connect(2) over TCP only to the allowed ports and the DNS stub's "
                                                               "(53), the loopback included"
                                                             : "connect(2) over TCP only to the allowed ports, the "
                                                               "loopback included")
                                    : !pl->ll_handled || pl->ll_abi < 4 ? "none (needs Landlock ABI 4)"
                                                                         : "none (more allowed TCP ports than it takes rules for)"));
    if (lp->job) {
        /* Restricted and a job member: both links (linux-jobnet.c). */
        describe_job(o, lp);
        describe_job_landlock(o, lp, np, pl);
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

/* ---- start ---- */

void lxn_run_init(struct lxn_run *run) {
    memset(run, 0, sizeof(*run));
    run->router_fd = run->uplink_fd = run->slot_lock = run->nft_out = run->sandbox_fd = -1;
    lxp_run_init(&run->proxy);
    lxp_run_init(&run->dns);
}

char *lxn_take_report(struct lxn_run *run) {
    char *r = run->report;
    run->report = NULL;
    return r;
}

/* Reserves slot of the link subnet among every attempt of every process
 * using this uplink. As root (the host's namespace, or one the host
 * names, which other users can enter too): a lock only root can take
 * (lnl_reserve_slot), shared with the helper. Otherwise (the uplink is a
 * namespace of the caller's own user namespace) an abstract unix socket
 * bound in the uplink namespace (abstract names are per namespace, and the
 * kernel frees one with its socket, a crashed process's included).
 * 0, -EADDRINUSE, -errno. */
static int reserve_slot(struct lxn_run *run, const struct lxn_plan *lp, uint32_t slot) {
    if (geteuid() == 0) {
        int l = lnl_reserve_slot(run->uplink_fd, lp->link_base, lp->link_len, slot);
        if (l < 0)
            return l;
        run->slot_lock = l;
        pu_fork_close_add(l);
        return 0;
    }
    int s = socket_in(run->uplink_fd, AF_UNIX, SOCK_DGRAM, 0);
    if (s < 0)
        return s;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "forgeyard/net-link/%08x/%u/%u", lp->link_base,
                     lp->link_len, slot);
    if (bind(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) < 0) {
        int e = errno;
        close(s);
        return -e;
    }
    run->slot_lock = s;
    pu_fork_close_add(s);
    return 0;
}

static int ns_fail(fy_error **reterr, int e, const char *what) {
    return err_set(reterr, err_from_errno(e), FY_STEP_NETNS, e, NULL, "restricted network: %s: %s", what, strerror(e));
}

/* The plan's rules as the encoder's tuples (malloc'd, lp->nrules of
 * them), or NULL when out of memory. */
static struct lnft_tuple *lxn_tuples(const struct lxn_plan *lp) {
    struct lnft_tuple *t = calloc(lp->nrules ? lp->nrules : 1, sizeof(*t));
    for (size_t i = 0; t && i < lp->nrules; i++) {
        const struct plan_net_rule *pr = &lp->rules[i];
        t[i].family = pr->family;
        t[i].prefix = pr->prefix;
        memcpy(t[i].addr, pr->addr, 16);
        t[i].proto = pr->proto == FY_PROTO_UDP ? IPPROTO_UDP : IPPROTO_TCP;
        t[i].port_min = (uint16_t)pr->port_min;
        t[i].port_max = (uint16_t)pr->port_max;
    }
    return t;
}

/* The router's table as one nf_tables batch (linux-nftnl.c) from lp's
 * tuples: 0 or -errno. */
int lxn_nft_batch(const struct lxn_plan *lp, struct lnft_batch *out) {
    struct lnft_tuple *t = lxn_tuples(lp);
    if (!t)
        return -ENOMEM;
    struct lnft_router r = {.sb_if = LXN_ROUTER_SB_IF, .up_if = LXN_ROUTER_UP_IF, .tuples = t, .ntuples = lp->nrules};
    uint32_t sb4 = htonl(SB_SANDBOX4);
    memcpy(r.sb4, &sb4, 4);
    memcpy(r.sb6, sb_sandbox6, 16);
    int e = lnft_router_build(&r, out);
    free(t);
    return e;
}

/* b (built, or not: e < 0) applied over a NETLINK_NETFILTER socket in ns,
 * then freed: 0 or -errno. */
static int apply_in(int ns, struct lnft_batch *b, int e) {
    if (e < 0)
        return e;
    int s = socket_in(ns, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
    e = s < 0 ? s : lnft_batch_apply(lnl_ready(s), b);
    if (s >= 0)
        close(s);
    lnft_batch_free(b);
    return e;
}

int lxn_nft_netlink(int ns, const struct lxn_plan *lp) {
    struct lnft_batch b;
    int e = lxn_nft_batch(lp, &b);
    return apply_in(ns, &b, e);
}

int lxn_direct_nft_netlink(int ns, const struct lxn_plan *lp, const void *sb4, const uint8_t sb6[16]) {
    struct lnft_tuple *t = lxn_tuples(lp);
    if (!t)
        return -ENOMEM;
    struct lnft_direct d = {.link_if = LXN_SANDBOX_IF, .tuples = t, .ntuples = lp->nrules};
    memcpy(d.sb4, sb4, 4);
    memcpy(d.sb6, sb6, 16);
    struct lnft_batch b;
    int e = lnft_direct_build(&d, &b);
    free(t);
    return apply_in(ns, &b, e);
}

/* The router's table, committed before its links are made: one nf_tables
 * netlink batch from the plan's tuples (linux-nftnl.c), in the router
 * namespace (and the rootless path's child sends the same batch). Its text
 * form is lxn_ruleset_text; test-net-api checks that both give the same
 * bytecode. */
static int start_nft(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr) {
    int r = lxn_nft_netlink(run->router_fd, lp);
    if (r < 0)
        return err_set(reterr, err_from_errno(-r), FY_STEP_NETNS, -r, NULL,
                       "restricted network: the router's nftables table (one netlink batch) was refused: %s",
                       strerror(-r));
    return 0;
}

/* Waits for the rootless router's child (until deadline, then kills it):
 * 0 once its namespace and rules stand, else the error with what it said. */
static int finish_nft(struct lxn_run *run, uint64_t deadline, fy_error **reterr) {
    if (!run->nft_running)
        return 0;
    bool killed = false;
    bool reaped = pu_finish(&run->nft, deadline, &killed);
    run->nft_running = !reaped;
    if (reaped && !killed && WIFEXITED(run->nft.status) && WEXITSTATUS(run->nft.status) == 0)
        return 0;
    char msg[512] = "";
    ssize_t n = run->nft_out >= 0 ? pread(run->nft_out, msg, sizeof(msg) - 1, 0) : 0;
    msg[n > 0 ? n : 0] = 0;
    return err_set(reterr, FY_E_INFRA, FY_STEP_NETNS, 0, NULL, "restricted network: the router's process failed%s: %s",
                   killed ? " (killed at its deadline)" : "", msg);
}

static int open_uplink(const struct lxn_plan *lp) {
    return lnl_open_netns(lp->uplink ? lp->uplink : "/proc/thread-self/ns/net");
}

/* The error of an uplink that open_uplink refused (-e). */
static int uplink_fail(fy_error **reterr, int e, const struct lxn_plan *lp, int step, const char *what) {
    return err_set(reterr, err_from_errno(e), step, e, NULL, "%s: the uplink %s: %s", what,
                   lp->uplink ? lp->uplink : "(the host's network namespace)",
                   e == EINVAL ? "not a network namespace" : strerror(e));
}

static int begin_router(struct lxn_run *run, const struct lxn_plan *lp, bool tear, fy_error **reterr);
static int begin_direct(struct lxn_run *run, const struct lxn_plan *lp, bool tear, fy_error **reterr);

int lxn_begin(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr) {
    lxn_run_init(run);
    run->lp = lp;
    if (lp->job && lp->mode == FY_NET_DENY)
        return 0; /* a job member: its link comes once its namespace exists (lxn_finish) */
    if (lp->helper)
        return 0; /* the helper makes it all once the sandbox's namespace exists (lxnh_finish) */
    if (lp->rootless)
        return lxnu_begin(run, lp, reterr);
    return begin_router(run, lp, true, reterr);
}

static void *begin_main(void *p) {
    struct lxn_run *run = p;
    run->begin_r = run->sandbox_fd >= 0 ? begin_direct(run, run->lp, false, &run->begin_err)
                                        : begin_router(run, run->lp, false, &run->begin_err);
    return NULL;
}

bool lxn_direct(const struct lxn_plan *lp) {
    return lp && lp->mode == FY_NET_RESTRICTED && !lp->helper && !lp->rootless && !lp->job && !lp->vm_tap;
}

int lxn_sandbox_netns(const struct lxn_run *run) { return run->sandbox_fd; }

int lxn_begin_async(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr) {
    /* Nothing to make before the clone, or nothing of ours: lxn_begin's
     * cases that are not the router. */
    if (lp->helper || lp->rootless || lp->mode == FY_NET_FETCH_ONLY || (lp->job && lp->mode == FY_NET_DENY))
        return lxn_begin(run, lp, reterr);
    int given = run->sandbox_fd; /* (a claimed shell's, lx_shell_adopt) */
    lxn_run_init(run);
    run->lp = lp;
    run->sandbox_fd = given;
    /* Direct: the sandbox's namespace now, for the clone to start in
     * (lxn_sandbox_netns), unless a claimed shell is in one already; the
     * rest beside it. */
    if (lxn_direct(lp) && given < 0 && (run->sandbox_fd = attempt_netns()) < 0) {
        int e = -run->sandbox_fd;
        run->sandbox_fd = -1;
        return ns_fail(reterr, e, "creating the sandbox's network namespace");
    }
    /* (Beside: the host's thread goes on to clone the sandbox.) */
    if (util_thread_start(&run->begin_thread, false, true, begin_main, run) == 0) {
        run->begin_pending = true;
        return 0;
    }
    /* (no thread: here and now) */
    return run->sandbox_fd >= 0 ? begin_direct(run, lp, true, reterr) : begin_router(run, lp, true, reterr);
}

/* The begin thread's end: its result, its error moved to reterr. */
static int begin_join(struct lxn_run *run, fy_error **reterr) {
    if (!run->begin_pending)
        return 0;
    (void)pthread_join(run->begin_thread, NULL);
    run->begin_pending = false;
    if (run->begin_err) {
        if (reterr && !*reterr)
            *reterr = run->begin_err;
        else
            fy_error_free(run->begin_err);
        run->begin_err = NULL;
    }
    return run->begin_r;
}

/* The uplink's link: a free /30 of the link subnet (random slots; one
 * whose addresses are on the uplink already, or that another attempt
 * reserved, is skipped), reserved in run (run->slot, run->slot_lock); us
 * a netlink socket in the uplink namespace. */
static int choose_slot(struct lxn_run *run, const struct lxn_plan *lp, int us, fy_error **reterr) {
    uint32_t nslots = 1u << (30 - lp->link_len), slot = 0;
    for (int tries = 0;; tries++) {
        if (tries > 64)
            return err_set(reterr, FY_E_RANGE, FY_STEP_NETNS, 0, "$.network.host",
                           "restricted network: no free /30 found in the link subnet");
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
            rnd = (uint32_t)getpid() ^ (uint32_t)tries * 2654435761u;
        slot = rnd % nslots;
        uint32_t up_side = htonl(lp->link_base + 4 * slot + 1), far_side = htonl(lp->link_base + 4 * slot + 2);
        int u = lnl_addr_in_use2(us, up_side, far_side);
        if (u < 0)
            return ns_fail(reterr, -u, "listing the uplink's addresses");
        if (u)
            continue;
        int l = reserve_slot(run, lp, slot);
        if (l == 0)
            break;
        if (l != -EADDRINUSE)
            return ns_fail(reterr, -l, "reserving a link of the uplink");
    }
    run->slot = slot;
    return 0;
}

/* The addresses of run->slot's link: the uplink's side (1) and the far
 * side (2: the router's "up", or the sandbox's own eth0 when direct). */
struct link_addrs {
    uint32_t up4, far4; /* network order */
    uint8_t up6[16], far6[16];
};
static void slot_addrs(const struct lxn_run *run, const struct lxn_plan *lp, struct link_addrs *a) {
    a->up4 = htonl(lp->link_base + 4 * run->slot + 1);
    a->far4 = htonl(lp->link_base + 4 * run->slot + 2);
    link6(a->up6, run->slot, 1);
    link6(a->far6, run->slot, 2);
}

/* The veth between far_if in rs's namespace and a new name in the uplink
 * (us), each side's addresses and link up in one message (with lo when
 * asked), both running, then far_if's default routes via the uplink's
 * side. On failure run->uplink_if names what is left to delete. */
static int link_uplink(struct lxn_run *run, const struct lxn_plan *lp, int rs, int us, const char *far_if, bool lo,
                       fy_error **reterr) {
    int e;
    snprintf(run->uplink_if, sizeof(run->uplink_if), "fy%08x", (unsigned)(run->slot ^ ((uint32_t)getpid() << 14)));
    for (int tries = 0; (e = lnl_link_veth(rs, far_if, run->uplink_if, run->uplink_fd)) == -EEXIST && tries < 8;
         tries++) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
            rnd = (uint32_t)tries * 2654435761u;
        snprintf(run->uplink_if, sizeof(run->uplink_if), "fy%08x", (unsigned)rnd);
    }
    if (e < 0) {
        run->uplink_if[0] = 0;
        return ns_fail(reterr, -e, "veth to the uplink");
    }
    int i_far = lnl_ifindex(rs, far_if), i_upl = lnl_ifindex(us, run->uplink_if);
    if (i_far < 0 || i_upl < 0)
        return ns_fail(reterr, -(i_far < 0 ? i_far : i_upl), "interface index");
    struct link_addrs a;
    slot_addrs(run, lp, &a);
    const char *what = NULL;
    struct lnl_batch b;
    lnl_batch_init(&b);
    if (lo)
        lnl_batch_link_up(&b, "lo");
    lnl_batch_addr_add(&b, i_far, AF_INET, &a.far4, 30);
    lnl_batch_addr_add(&b, i_far, AF_INET6, a.far6, 64);
    lnl_batch_link_up(&b, far_if);
    if ((e = lnl_batch_send(rs, &b)) < 0)
        what = lo ? "the sandbox's loopback, addresses and link" : "router addresses and link";
    if (!what) {
        lnl_batch_init(&b);
        lnl_batch_addr_add(&b, i_upl, AF_INET, &a.up4, 30);
        lnl_batch_addr_add(&b, i_upl, AF_INET6, a.up6, 64);
        lnl_batch_link_up(&b, run->uplink_if);
        if ((e = lnl_batch_send(us, &b)) < 0)
            what = "uplink addresses and link";
    }
    if (!what && (e = lnl_links_running(rs, far_if, us, run->uplink_if, RUNNING_DEADLINE_MS)) < 0)
        what = "the uplink running (IFF_RUNNING) once up";
    if (!what) {
        lnl_batch_init(&b);
        lnl_batch_route_default(&b, i_far, AF_INET, &a.up4);
        lnl_batch_route_default(&b, i_far, AF_INET6, a.up6);
        if ((e = lnl_batch_send(rs, &b)) < 0)
            what = lo ? "the sandbox's routes" : "router routes";
    }
    return what ? ns_fail(reterr, -e, what) : 0;
}

/* tear: on failure, tear down here (not on the begin thread: the caller
 * joins it first, then tears down). */
static int begin_router(struct lxn_run *run, const struct lxn_plan *lp, bool tear, fy_error **reterr) {
    int r = 0, rs = -1, us = -1;
    if (lp->mode == FY_NET_FETCH_ONLY) {
        /* Nothing before the clone: the proxy needs the sandbox's namespace. */
        if (lp->uplink && (run->uplink_fd = open_uplink(lp)) < 0)
            return uplink_fail(reterr, -run->uplink_fd, lp, FY_STEP_PROXY, "fetch-only proxy");
        return 0;
    }
    if ((run->uplink_fd = open_uplink(lp)) < 0) {
        r = uplink_fail(reterr, -run->uplink_fd, lp, FY_STEP_NETNS, "restricted network");
        goto fail;
    }
    if ((run->router_fd = attempt_netns()) < 0) {
        r = ns_fail(reterr, -run->router_fd, "creating the router namespace");
        goto fail;
    }
    /* The rules first (forwarding stays off until they stand: switched on
     * at the end here). */
    if ((r = start_nft(run, lp, reterr)) < 0)
        goto fail;
    if ((rs = nl_open(run->router_fd)) < 0 || (us = nl_open(run->uplink_fd)) < 0) {
        r = ns_fail(reterr, -(rs < 0 ? rs : us), "netlink socket");
        goto fail;
    }
    if ((r = choose_slot(run, lp, us, reterr)) < 0 || (r = link_uplink(run, lp, rs, us, LXN_ROUTER_UP_IF, false, reterr)) < 0)
        goto fail;
    /* Rules already standing: forwarding now, on this thread (begun before
     * the sandbox's namespace exists), not on the attempt's path in
     * lxn_finish. */
    struct sysctl_args fw = {run->router_fd, {"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"}};
    int e = in_netns(run->router_fd, write_sysctl, &fw);
    if (e < 0) {
        r = ns_fail(reterr, -e, "forwarding in the router namespace");
        goto fail;
    }
    close(rs);
    close(us);
    return 0;
fail:
    if (rs >= 0)
        close(rs);
    if (us >= 0)
        close(us);
    if (tear)
        (void)lxn_teardown(run);
    return r;
}

/* Direct (lxn_direct): the sandbox's namespace itself, made by us before
 * the clone (run->sandbox_fd), gets the rules (lnft_direct_build: output
 * and input hooks, nothing forwarded), lo, and the veth to the uplink with
 * the link's far address: no router namespace, one veth pair. The
 * workload, in a user namespace of its own, has no capability over a
 * namespace the host's user namespace owns: it cannot change its
 * addresses, routes or rules, nor open a raw or packet socket there. */
static int begin_direct(struct lxn_run *run, const struct lxn_plan *lp, bool tear, fy_error **reterr) {
    int r = 0, rs = -1, us = -1;
    if ((run->uplink_fd = open_uplink(lp)) < 0) {
        r = uplink_fail(reterr, -run->uplink_fd, lp, FY_STEP_NETNS, "restricted network");
        goto fail;
    }
    if ((rs = nl_open(run->sandbox_fd)) < 0 || (us = nl_open(run->uplink_fd)) < 0) {
        r = ns_fail(reterr, -(rs < 0 ? rs : us), "netlink socket");
        goto fail;
    }
    if ((r = choose_slot(run, lp, us, reterr)) < 0)
        goto fail;
    /* The rules before any link: with the slot's addresses as the only
     * sources. */
    struct link_addrs a;
    slot_addrs(run, lp, &a);
    int e = lxn_direct_nft_netlink(run->sandbox_fd, lp, &a.far4, a.far6);
    if (e < 0) {
        r = err_set(reterr, err_from_errno(-e), FY_STEP_NETNS, -e, NULL,
                    "restricted network: the sandbox namespace's nftables table (one netlink batch) was refused: %s",
                    strerror(-e));
        goto fail;
    }
    r = link_uplink(run, lp, rs, us, LXN_SANDBOX_IF, true, reterr);
fail:
    if (rs >= 0)
        close(rs);
    if (us >= 0)
        close(us);
    if (r < 0 && tear)
        (void)lxn_teardown(run);
    return r;
}

static int finish_net(struct lxn_run *run, int sandbox_ns, fy_error **reterr);

int lxn_finish(struct lxn_run *run, int sandbox_ns, fy_error **reterr) {
    /* The DNS stub (linux-dns-parse.h): its sockets made in the sandbox's
     * namespace here, its program started by a thread of ours on the first
     * query (lxp_defer_dns): most build steps resolve nothing, and an
     * attempt that does waits once for the stub's start. Queries queue on
     * the sockets from the start; the stub reads none before it has
     * confined itself. Under restricted before the router's thread is
     * joined; under fetch-only after the proxy's start. */
    bool dns = run->lp && run->lp->dns, early = dns && run->lp->mode != FY_NET_FETCH_ONLY;
    int r = 0;
    if (early && (r = lxp_defer_dns(&run->dns, run->lp->dns, sandbox_ns, reterr)) < 0) {
        (void)lxn_teardown(run); /* (joins the router's thread first) */
        return r;
    }
    if ((r = begin_join(run, reterr)) < 0) {
        (void)lxn_teardown(run);
        return r;
    }
    r = finish_net(run, sandbox_ns, reterr); /* (on failure, it has torn down the stub too) */
    /* Restricted and a job member: the job's link too (linux-jobnet.c). */
    if (r == 0 && run->lp && run->lp->job && run->lp->mode != FY_NET_DENY) {
        if ((r = ljn_attach(run->job, run->lp->job_index, sandbox_ns, reterr)) == 0)
            run->job_linked = true;
        else
            (void)lxn_teardown(run);
        if (r < 0)
            return r;
    }
    if (r == 0 && dns && !early && (r = lxp_defer_dns(&run->dns, run->lp->dns, sandbox_ns, reterr)) < 0)
        (void)lxn_teardown(run);
    bool fetch = run->proxy.pid > 0; /* (begun by finish_net) */
    if (r == 0 && fetch && (r = lxp_await_ready(&run->proxy, reterr)) < 0)
        (void)lxn_teardown(run);
    return r;
}

static int finish_net(struct lxn_run *run, int sandbox_ns, fy_error **reterr) {
    int r = 0, rs = -1, ss = -1, e;
    if (run->lp && run->lp->job && run->lp->mode == FY_NET_DENY) {
        if ((r = ljn_attach(run->job, run->lp->job_index, sandbox_ns, reterr)) == 0)
            run->job_linked = true;
        return r;
    }
    if (run->lp && run->lp->helper)
        return lxnh_finish(run, sandbox_ns, reterr);
    if (run->lp && run->lp->mode == FY_NET_FETCH_ONLY) {
        /* (lxn_finish waits for it to be ready) */
        if ((r = lxp_begin(&run->proxy, run->lp->proxy, sandbox_ns, run->uplink_fd, reterr)) < 0)
            (void)lxn_teardown(run);
        return r;
    }
    if (run->user)
        return lxnu_finish(run, sandbox_ns, reterr);
    if (run->sandbox_fd >= 0)
        return 0; /* direct: begin_direct made it all (sandbox_ns is run->sandbox_fd) */
    /* (the rules and forwarding stand: begin_router) */
    if ((rs = nl_open(run->router_fd)) < 0 || (ss = nl_open(sandbox_ns)) < 0) {
        r = ns_fail(reterr, -(rs < 0 ? rs : ss), "netlink socket");
        goto fail;
    }
    if ((e = lnl_link_veth(rs, LXN_ROUTER_SB_IF, LXN_SANDBOX_IF, sandbox_ns)) < 0) {
        r = ns_fail(reterr, -e, "veth to the sandbox");
        goto fail;
    }
    int i_sb = lnl_ifindex(rs, LXN_ROUTER_SB_IF), i_eth = lnl_ifindex(ss, LXN_SANDBOX_IF);
    if (i_sb < 0 || i_eth < 0) {
        r = ns_fail(reterr, -(i_sb < 0 ? i_sb : i_eth), "interface index");
        goto fail;
    }
    uint32_t a_sbr = htonl(SB_ROUTER4), a_sbs = htonl(SB_SANDBOX4);
    const char *what = NULL;
    /* The router's side in one message to the kernel, then the sandbox's
     * (its routes once both ends are up). */
    struct lnl_batch b;
    lnl_batch_init(&b);
    lnl_batch_addr_add(&b, i_sb, AF_INET, &a_sbr, 30);
    lnl_batch_addr_add(&b, i_sb, AF_INET6, sb_router6, 64);
    lnl_batch_link_up(&b, LXN_ROUTER_SB_IF);
    if ((e = lnl_batch_send(rs, &b)) < 0)
        what = "router addresses and link";
    if (!what) {
        lnl_batch_init(&b);
        lnl_batch_addr_add(&b, i_eth, AF_INET, &a_sbs, 30);
        lnl_batch_addr_add(&b, i_eth, AF_INET6, sb_sandbox6, 64);
        lnl_batch_link_up(&b, LXN_SANDBOX_IF);
        lnl_batch_route_default(&b, i_eth, AF_INET, &a_sbr);
        lnl_batch_route_default(&b, i_eth, AF_INET6, sb_router6);
        if ((e = lnl_batch_send(ss, &b)) < 0)
            what = "sandbox addresses, link and routes";
    }
    if (!what && (e = lnl_links_running(rs, LXN_ROUTER_SB_IF, ss, LXN_SANDBOX_IF, RUNNING_DEADLINE_MS)) < 0)
        what = "the sandbox's link running (IFF_RUNNING) once up";
    if (what) {
        r = ns_fail(reterr, -e, what);
        goto fail;
    }
    close(rs);
    close(ss);
    return 0;
fail:
    if (rs >= 0)
        close(rs);
    if (ss >= 0)
        close(ss);
    (void)lxn_teardown(run);
    return r;
}

/* The VM backend's sandbox side (linux-net-vm.c): instead of a veth into
 * a sandbox's namespace, the router's "sb" is a tap device made in the
 * router namespace itself, whose fd the caller hands to its VMM (a
 * virtio-net device of the guest, which takes the sandbox's addresses).
 * The guest's frames enter the router exactly where the veth's would: the
 * same rules (iifname sb, source 100.64.0.2 / fd66:7973::2). The tap lives
 * as long as an fd of it: the VMM's and *tap (O_CLOEXEC, the caller's). */
static int make_tap(void *p) {
    (void)p;
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", LXN_ROUTER_SB_IF);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int lxn_finish_tap(struct lxn_run *run, int *tap, fy_error **reterr) {
    int r, rs = -1, e, fd = -1;
    *tap = -1;
    if (run->user)
        return lxnu_finish_tap(run, tap, reterr);
    if (run->lp && run->lp->helper)
        return lxnh_finish_tap(run, tap, reterr);
    if ((r = begin_join(run, reterr)) < 0)
        goto fail;
    if (!run->lp || run->lp->mode != FY_NET_RESTRICTED || run->lp->helper || run->router_fd < 0)
        return err_set(reterr, FY_E_INVAL, FY_STEP_NETNS, 0, NULL, "a tap needs the root path's router");
    /* (opened in the router namespace: a tap is made in its opener's) */
    if ((fd = in_netns(run->router_fd, make_tap, NULL)) < 0) {
        r = ns_fail(reterr, -fd, "the VM's tap device (/dev/net/tun) in the router namespace");
        goto fail;
    }
    if ((rs = nl_open(run->router_fd)) < 0) {
        r = ns_fail(reterr, -rs, "netlink socket");
        goto fail;
    }
    int i_sb = lnl_ifindex(rs, LXN_ROUTER_SB_IF);
    if (i_sb < 0) {
        r = ns_fail(reterr, -i_sb, "interface index");
        goto fail;
    }
    uint32_t a_sbr = htonl(SB_ROUTER4);
    const char *what = NULL;
    if ((e = lnl_addr_add(rs, i_sb, AF_INET, &a_sbr, 30)) < 0 ||
             (e = lnl_addr_add(rs, i_sb, AF_INET6, sb_router6, 64)) < 0)
        what = "router addresses";
    else if ((e = lnl_link_up(rs, LXN_ROUTER_SB_IF)) < 0)
        what = "links up";
    if (what) {
        r = ns_fail(reterr, -e, what);
        goto fail;
    }
    close(rs);
    *tap = fd;
    return 0;
fail:
    if (rs >= 0)
        close(rs);
    if (fd >= 0)
        close(fd);
    (void)lxn_teardown(run);
    return r;
}

/* ---- cleanup ---- */

/* Whether name is gone from namespace ns within ms (lnl_link_unlisted). */
static bool wait_unlisted(int ns, const char *name, int ms) {
    int q = socket_in(ns, AF_INET, SOCK_DGRAM, 0);
    if (q < 0)
        return false;
    bool gone = lnl_link_unlisted(q, name, ms);
    close(q);
    return gone;
}

void lxn_forget(struct lxn_run *run) {
    /* A forked copy has no begin thread (only the parent's fds it made
     * before the fork, closed below). */
    run->begin_pending = false;
    run->begin_err = NULL;
    run->job_linked = false; /* the parent's port is the parent's to remove */
    if (run->user)
        lxnu_forget(run);
    run->uplink_if[0] = 0;
    run->helper_name[0] = 0; /* the parent's router at the helper is the parent's to remove */
    lxp_forget(&run->proxy); /* the parent's proxy is the parent's to end */
    lxp_forget(&run->dns);
    free(run->report);
    run->report = NULL;
    (void)lxn_teardown(run);
}

void lxn_teardown_begin(struct lxn_run *run) {
    if (run->begin_pending)
        return; /* (a start that did not get as far: lxn_teardown does it all) */
    lxp_kill(&run->dns); /* (a deferred stub's wait ended first: no start after this) */
    if (run->user)
        lxnu_teardown_begin(run);
    if (run->uplink_if[0] && run->uplink_fd >= 0 && !run->del_started) {
        int s = nl_open(run->uplink_fd);
        if (s >= 0 && lnl_link_del_detached(s, run->uplink_if, -1) == 0)
            run->del_started = true;
        else if (s >= 0)
            close(s);
    }
}

unsigned lxn_teardown(struct lxn_run *run) {
    unsigned left = 0;
    (void)begin_join(run, NULL); /* (its failure: torn down below all the same) */
    /* A report the previous call made and nobody took (a failed start). */
    free(run->report);
    run->report = NULL;
    if (run->job_linked) {
        /* A job member: its port on the job's bridge, witnessed gone. */
        unsigned jl = ljn_detach(run->job, run->lp->job_index);
        left += jl;
        run->job_linked = false;
        json_t *o = json_pack("{s:s,s:{s:s,s:I}}", "mode",
                              run->lp->mode == FY_NET_DENY         ? "deny"
                              : run->lp->mode == FY_NET_FETCH_ONLY ? "fetch-only"
                                                                   : "restricted",
                              "job", "member", run->lp->job_member, "link_left", (json_int_t)jl);
        run->report = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(o);
    }
    if (run->helper_name[0])
        left += lxnh_teardown(run);
    if (run->user)
        left += lxnu_teardown(run); /* (before the router's fds below close) */
    /* The DNS stub is told to end first, and reaped (below) once the
     * uplink's link is witnessed gone: it dies while the link goes. */
    lxp_kill(&run->dns); /* (a deferred stub's wait ended first: no start after this) */
    if (run->proxy.pid > 0 || run->proxy.audit) {
        /* Fetch-only: the proxy ends (reaped: the witness), then its audit
         * table becomes the result's record. */
        left += lxp_stop(&run->proxy);
        char *pr = lxp_report(&run->proxy);
        if (!run->report) {
            run->report = pr;
        } else if (pr) {
            /* A job member: the proxy's record with the job's witness. */
            json_t *po = json_loads(pr, 0, NULL), *jo = json_loads(run->report, 0, NULL);
            char *s2 = NULL;
            if (po && jo) {
                json_object_set(po, "job", json_object_get(jo, "job"));
                s2 = json_dumps(po, JSON_COMPACT | JSON_SORT_KEYS);
            }
            json_decref(po);
            json_decref(jo);
            if (s2) {
                free(run->report);
                run->report = s2;
            }
            free(pr);
        }
        lxp_release(&run->proxy);
        lxp_run_init(&run->proxy);
    }
    if (run->nft_running) {
        /* A start that failed before waiting for it: nft is ended. */
        (void)pu_finish(&run->nft, pu_deadline_after_ms(0), NULL);
        run->nft_running = false;
    }
    if (run->nft_out >= 0)
        close(run->nft_out);
    run->nft_out = -1;
    if (run->uplink_if[0] && run->uplink_fd >= 0) {
        /* Deleting our end in the uplink takes its peer (in the router)
         * too. The deletion runs on a thread of its own: the kernel unlists
         * the device at once and then waits for RCU grace periods (about
         * 30 ms) before the call returns. The witness stays synchronous:
         * the name is looked up in the uplink (SIOCGIFINDEX, lockless)
         * until it is gone, bounded. Without a thread, the deletion is
         * synchronous as before. */
        int s = run->del_started ? -1 : nl_open(run->uplink_fd);
        if (run->del_started) {
            /* (begun by lxn_teardown_begin) */
            if (!wait_unlisted(run->uplink_fd, run->uplink_if, UNLIST_DEADLINE_MS))
                left++;
            run->del_started = false;
        } else if (s >= 0) {
            if (lnl_link_del_detached(s, run->uplink_if, -1) == 0) {
                if (!wait_unlisted(run->uplink_fd, run->uplink_if, UNLIST_DEADLINE_MS))
                    left++;
            } else {
                int e = lnl_link_del(s, run->uplink_if);
                if (e < 0 && e != -ENODEV)
                    left++;
                else if (lnl_link_exists(s, run->uplink_if) != 0)
                    left++;
                close(s);
            }
        } else {
            left++;
        }
        run->uplink_if[0] = 0;
    }
    if (run->dns.pid > 0 || run->dns.audit || run->dns.deferred) {
        /* The DNS stub: ended (reaped: the witness), its queries into the
         * result's network record as "dns". */
        left += lxp_stop(&run->dns);
        char *d = lxp_report_dns(&run->dns);
        json_t *o = run->report ? json_loads(run->report, 0, NULL) : json_object();
        json_t *dj = d ? json_loads(d, 0, NULL) : NULL;
        free(d);
        if (o && dj) {
            if (!json_object_get(o, "mode"))
                json_object_set_new(o, "mode", json_string(run->lp && run->lp->mode == FY_NET_FETCH_ONLY ? "fetch-only"
                                                                                                     : "restricted"));
            json_object_set_new(o, "dns", dj);
            dj = NULL;
            char *s2 = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
            if (s2) {
                free(run->report);
                run->report = s2;
            }
        }
        json_decref(dj);
        json_decref(o);
        lxp_release(&run->dns);
        lxp_run_init(&run->dns);
    }
    /* The router namespace (and the sandbox's veth end in it) goes with
     * its last reference: ours, since it is never mounted. */
    pu_fork_close_fd(&run->router_fd);
    /* Direct: the sandbox's namespace, once its processes are gone (the
     * veth went with the uplink's end above). */
    pu_fork_close_fd(&run->sandbox_fd);
    if (run->uplink_fd >= 0)
        close(run->uplink_fd);
    run->uplink_fd = -1;
    if (run->slot_lock >= 0) {
        pu_fork_close_del(run->slot_lock);
        lnl_release_slot(run->slot_lock);
        run->slot_lock = -1;
    }
    return left;
}

int lxn_recv_netns(int sock, int timeout_ms) {
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    int p;
    do
        p = poll(&pfd, 1, timeout_ms);
    while (p < 0 && errno == EINTR);
    if (p == 0)
        return -ETIMEDOUT;
    if (p < 0)
        return -errno;
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 2)];
    } u;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) /* ECONNRESET: it ended with messages of ours unread (the workspace's trees) */
        return errno == ECONNRESET ? -EPIPE : -errno;
    int fd = -1;
    struct cmsghdr *c = n == 1 && msg.msg_controllen >= sizeof(struct cmsghdr) ? CMSG_FIRSTHDR(&msg) : NULL;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[2] = {-1, -1};
        memcpy(fds, CMSG_DATA(c), (got > 2 ? 2 : got) * sizeof(int));
        fd = fds[0];
        if (got > 1 && fds[1] >= 0)
            close(fds[1]);
    }
    if (n != 1 || byte != 'N' || fd < 0) {
        if (fd >= 0)
            close(fd);
        return n == 0 ? -EPIPE : -EPROTO;
    }
    /* It must be a network namespace. */
    if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
        close(fd);
        return -EPROTO;
    }
    return fd;
}

/* ---- for the rootless path (linux-net-user.h) ---- */

int lxn_in_netns(int ns, int (*fn)(void *), void *arg) { return in_netns(ns, fn, arg); }
int lxn_new_netns(void) { return new_netns(); }
int lxn_new_attempt_netns(void) { return attempt_netns(); }
int lxn_nl_open(int ns) { return nl_open(ns); }

int lxn_nf_open(int ns) {
    int s = socket_in(ns, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
    return s < 0 ? s : lnl_ready(s);
}

int lxn_i_finish_nft(struct lxn_run *run, uint64_t deadline, fy_error **reterr) { return finish_nft(run, deadline, reterr); }
