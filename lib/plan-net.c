/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network plan of network mode restricted, built once at fy_prepare for
 * every backend: the policy's destinations with their names resolved (an
 * /etc/hosts-format file the host program names, FY_NETHOST_HOSTS_FILE, or
 * the host's resolver), as address/prefix/protocol/port rules, sorted and
 * without duplicates so that the same allowlist gives the same contract id
 * whatever order a resolver answers in. Backends enforce exactly these
 * rules (Linux: nftables in the sandbox's own network namespace made by
 * the host, or in a per-attempt router namespace, linux-net.c)
 * and the sandbox's /etc/hosts carries the resolved names. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan.h"
#include "policy.h"

#define HOSTS_FILE_MAX (4u << 20)

struct rules {
    struct plan_net_rule *v;
    size_t n, cap;
};

static int push(struct rules *rs, const struct plan_net_rule *r) {
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 32;
        struct plan_net_rule *v = realloc(rs->v, cap * sizeof(*v));
        if (!v)
            return FY_E_NOMEM;
        rs->v = v;
        rs->cap = cap;
    }
    rs->v[rs->n++] = *r;
    return 0;
}

static void mask(uint8_t *addr, unsigned prefix, unsigned bytes) {
    for (unsigned i = 0; i < bytes; i++) {
        unsigned bits = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
        addr[i] &= (uint8_t)(0xff00u >> bits);
    }
}

/* Whether rule r covers the address a of family (4 or 6). */
static bool covers(const struct plan_net_rule *r, unsigned family, const uint8_t *a) {
    if (r->family != family)
        return false;
    uint8_t m[16];
    memcpy(m, a, family == 4 ? 4 : 16);
    mask(m, r->prefix, family == 4 ? 4 : 16);
    return memcmp(m, r->addr, family == 4 ? 4 : 16) == 0;
}

const char *plan_net_rule_text(const struct plan_net_rule *r, char *buf, size_t len) {
    char a[INET6_ADDRSTRLEN];
    inet_ntop(r->family == 4 ? AF_INET : AF_INET6, r->addr, a, sizeof(a));
    snprintf(buf, len, "%s/%u %s %u-%u", a, r->prefix, r->proto == FY_PROTO_UDP ? "udp" : "tcp", r->port_min,
             r->port_max);
    return buf;
}

static int rule_cmp(const void *pa, const void *pb) {
    const struct plan_net_rule *a = pa, *b = pb;
    if (a->family != b->family)
        return a->family < b->family ? -1 : 1;
    int c = memcmp(a->addr, b->addr, sizeof(a->addr));
    if (c)
        return c;
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
    CMP(prefix);
    CMP(proto);
    CMP(port_min);
    CMP(port_max);
    CMP(dest);
#undef CMP
    return 0;
}

/* Every address the hosts file gives name, pushed as /32 or /128 rules of d. */
static int resolve_in_file(const char *text, const char *name, struct plan_net_rule tmpl, struct rules *rs,
                           size_t *found) {
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        if (n < sizeof(buf)) {
            memcpy(buf, line, n);
            buf[n] = 0;
            char *hash = strchr(buf, '#');
            if (hash)
                *hash = 0;
            char *save = NULL, *addr = strtok_r(buf, " \t\r", &save), *tok;
            bool match = false;
            while (addr && (tok = strtok_r(NULL, " \t\r", &save)))
                match = match || strcasecmp(tok, name) == 0;
            struct plan_net_rule r = tmpl;
            if (match && inet_pton(AF_INET, addr, r.addr) == 1) {
                r.family = 4;
                r.prefix = 32;
            } else if (match && inet_pton(AF_INET6, addr, r.addr) == 1) {
                r.family = 6;
                r.prefix = 128;
            } else {
                match = false;
            }
            if (match) {
                if (push(rs, &r) < 0)
                    return FY_E_NOMEM;
                (*found)++;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

static int resolve_with_host(const char *name, struct plan_net_rule tmpl, struct rules *rs, size_t *found,
                             const char **why) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(name, NULL, &hints, &res);
    if (g != 0) {
        *why = gai_strerror(g);
        return 0;
    }
    int r = 0;
    for (struct addrinfo *ai = res; ai && r == 0; ai = ai->ai_next) {
        struct plan_net_rule x = tmpl;
        if (ai->ai_family == AF_INET) {
            x.family = 4;
            x.prefix = 32;
            memcpy(x.addr, &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr, 4);
        } else if (ai->ai_family == AF_INET6) {
            x.family = 6;
            x.prefix = 128;
            memcpy(x.addr, &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr, 16);
        } else {
            continue;
        }
        if ((r = push(rs, &x)) == 0)
            (*found)++;
    }
    freeaddrinfo(res);
    return r;
}

static char *read_hosts_file(const char *path, int *err) {
    /* (a FIFO is refused, never waited on: O_NONBLOCK, then a regular file only) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        errno = EINVAL;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        *err = errno;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc(HOSTS_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, HOSTS_FILE_MAX + 1, f) : 0;
    *err = !buf ? ENOMEM : ferror(f) ? EIO : n > HOSTS_FILE_MAX ? EFBIG : 0;
    fclose(f);
    if (*err) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

/* A loopback address (127.0.0.0/8, ::1): never the host's from inside. On Linux the sandbox has a loopback of its own (a
 * rule for it reaches nothing outside: the rules drop a loopback
 * destination on the link, since an uplink with route_localnet=1 would
 * deliver it to its own loopback), and where a backend shares the
 * host's loopback (Seatbelt), "localhost" is all it can name. Any other
 * address is the host's wherever it is, on the loopback interface too (a
 * service address put on lo): the host delivers a packet for it locally
 * whichever interface it came in on. */
static bool loopback_address(unsigned fam, const uint8_t *a) {
    static const uint8_t v6[16] = {[15] = 1};
    return fam == 4 ? a[0] == 127 : memcmp(a, v6, 16) == 0;
}

/* The first rule of rs that covers the address a of family fam refused
 * as what ("an address of this host (eth0)", ...), or 0 when none does. */
static int refuse_covering(const struct rules *rs, const struct fy_plan *pl, unsigned fam, const uint8_t *a,
                           const char *what, fy_error **reterr) {
    for (size_t k = 0; k < rs->n; k++)
        if (covers(&rs->v[k], fam, a)) {
            char as[INET6_ADDRSTRLEN], loc[64];
            inet_ntop(fam == 4 ? AF_INET : AF_INET6, a, as, sizeof(as));
            snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", rs->v[k].dest);
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "destination \"%s\" covers %s, %s: the sandbox would reach the host itself",
                           pl->dests[rs->v[k].dest].host, as, what);
        }
    return 0;
}

/* The prefix length of an IPv6 netmask (its leading one bits). */
static unsigned netmask_length(const uint8_t m[16]) {
    unsigned n = 0;
    while (n < 128 && (m[n / 8] >> (7 - n % 8)) & 1)
        n++;
    return n;
}

/* No rule may cover an address of this host (one on its loopback interface
 * included): the router forwards to its uplink, which by default is the
 * host itself. Nor one the host delivers to itself as well, which reaches
 * every wildcard-bound service it has (syslog, SNMP, mDNS, ...): an
 * interface's IPv4 broadcast address, and the subnet-router anycast
 * address of each of its IPv6 prefixes (the prefix with host bits zero,
 * which the kernel answers when it forwards; none for /127 and /128).
 * (On Linux the backend also checks the uplink namespace's local routing
 * table, linux-net.c, which has these and any other local route.) */
static int check_own_addresses(const struct rules *rs, const struct fy_plan *pl, fy_error **reterr) {
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) < 0) {
        int e = errno;
        return err_set(reterr, err_from_errno(e), FY_STEP_PREPARE, e, NULL, "listing this host's addresses: %s",
                       strerror(e));
    }
    int r = 0;
    for (struct ifaddrs *i = ifs; i && r == 0; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        unsigned fam = i->ifa_addr->sa_family == AF_INET ? 4 : 6;
        const uint8_t *a = fam == 4 ? (const uint8_t *)&((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr
                                    : (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr;
        if (loopback_address(fam, a))
            continue;
        char what[INET6_ADDRSTRLEN + 160];
        snprintf(what, sizeof(what), "an address of this host (%s)", i->ifa_name);
        r = refuse_covering(rs, pl, fam, a, what, reterr);
        if (r == 0 && fam == 4 && (i->ifa_flags & IFF_BROADCAST) && i->ifa_broadaddr &&
            i->ifa_broadaddr->sa_family == AF_INET) {
            const uint8_t *b = (const uint8_t *)&((const struct sockaddr_in *)(const void *)i->ifa_broadaddr)->sin_addr;
            snprintf(what, sizeof(what), "the broadcast address of this host's %s", i->ifa_name);
            if (!loopback_address(4, b))
                r = refuse_covering(rs, pl, 4, b, what, reterr);
        }
        if (r == 0 && fam == 6 && i->ifa_netmask && i->ifa_netmask->sa_family == AF_INET6) {
            unsigned plen = netmask_length(
                (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)i->ifa_netmask)->sin6_addr);
            uint8_t any[16];
            char ps[INET6_ADDRSTRLEN];
            memcpy(any, a, 16);
            mask(any, plen, 16);
            inet_ntop(AF_INET6, any, ps, sizeof(ps));
            snprintf(what, sizeof(what), "the subnet-router anycast address of this host's %s/%u (%s)", ps, plen,
                     i->ifa_name);
            if (plen < 127)
                r = refuse_covering(rs, pl, 6, any, what, reterr);
        }
    }
    freeifaddrs(ifs);
    return r;
}

/* No rule may cover a broadcast, multicast or "this network" address: a
 * packet to one is not sent to a destination but to whoever listens on the
 * link (the uplink's own wildcard-bound services: by default, the host's). */
static int check_special_addresses(const struct rules *rs, const struct fy_plan *pl, fy_error **reterr) {
    static const struct { unsigned fam, plen; uint8_t a[16]; const char *what; } special[] = {
        {4, 4, {224}, "IPv4 multicast (224.0.0.0/4)"},
        {4, 4, {240}, "IPv4 reserved and broadcast addresses (240.0.0.0/4, 255.255.255.255)"},
        {4, 8, {0}, "\"this network\" (0.0.0.0/8)"},
        {6, 8, {0xff}, "IPv6 multicast (ff00::/8)"},
        {6, 128, {0}, "the unspecified IPv6 address (::)"},
        /* (no IPv4-mapped blocks: normalise_mapped made those IPv4) */
    };
    for (size_t k = 0; k < rs->n; k++)
        for (size_t i = 0; i < FY_ARRAY_SIZE(special); i++) {
            const struct plan_net_rule *r = &rs->v[k];
            if (r->family != special[i].fam)
                continue;
            /* (two blocks overlap where they agree on the shorter prefix) */
            unsigned n = r->prefix < special[i].plen ? r->prefix : special[i].plen;
            uint8_t x[16], y[16];
            memcpy(x, r->addr, 16);
            memcpy(y, special[i].a, 16);
            mask(x, n, r->family == 4 ? 4 : 16);
            mask(y, n, r->family == 4 ? 4 : 16);
            if (memcmp(x, y, r->family == 4 ? 4 : 16) != 0)
                continue;
            char loc[64];
            snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", r->dest);
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "destination \"%s\" covers %s: a packet there reaches whoever listens on the link, "
                           "not a destination",
                           pl->dests[r->dest].host, special[i].what);
        }
    return 0;
}

/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address a.b.c.d
 * to every socket that uses it: the kernel sends IPv4 (the fetch-only
 * proxy, which connects to the addresses of the rules, and an IPv6 socket
 * in the sandbox). So every rule inside ::ffff:0:0/96 (prefix >= 96),
 * written as an address or a block or given by a name whose AAAA is
 * mapped, becomes its IPv4 form here, before anything reads the rules:
 * the own- and special-address checks, the duplicate removal, and every
 * backend (the ruleset, the proxy's address list, the DNS stub, the
 * sandbox's /etc/hosts) see only IPv4 (before, ::ffff:10.0.0.1 passed
 * the check that refuses 10.0.0.1, an address of this host, and the
 * proxy reached the host's own service through it). An IPv6 block that
 * contains all of ::ffff:0:0/96 (prefix < 96) would be every IPv4 address
 * at once, as would ::ffff:0:0/96 itself: refused. (The IPv4-compatible
 * ::a.b.c.d, deprecated, is not IPv4 to the kernel: it stays IPv6.) */
static int normalise_mapped(struct rules *rs, const struct fy_plan *pl, fy_error **reterr) {
    static const uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff};
    for (size_t k = 0; k < rs->n; k++) {
        struct plan_net_rule *r = &rs->v[k];
        if (r->family != 6)
            continue;
        uint8_t m[16];
        memcpy(m, mapped, 16);
        mask(m, r->prefix < 96 ? r->prefix : 96, 16);
        uint8_t a[16];
        memcpy(a, r->addr, 16);
        mask(a, r->prefix < 96 ? r->prefix : 96, 16);
        if (memcmp(a, m, 16) != 0)
            continue;
        if (r->prefix <= 96) {
            char loc[64];
            snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", r->dest);
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "destination \"%s\" %s ::ffff:0:0/96, the IPv4-mapped IPv6 addresses, which are the "
                           "IPv4 addresses to a socket: it would match every IPv4 address; name the IPv4 blocks "
                           "instead",
                           pl->dests[r->dest].host, r->prefix < 96 ? "contains" : "is");
        }
        r->family = 4;
        r->prefix = (uint8_t)(r->prefix - 96);
        memmove(r->addr, r->addr + 12, 4);
        memset(r->addr + 4, 0, 12);
        mask(r->addr, r->prefix, 4);
    }
    return 0;
}

int plan_net_build(struct fy_plan *pl, const fy_policy *p, fy_error **reterr) {
    bool reaches = pl->net_mode == FY_NET_RESTRICTED || pl->net_mode == FY_NET_FETCH_ONLY;
    bool fetch = pl->net_mode == FY_NET_FETCH_ONLY;
    /* A hosts file or credentials the mode never reads: refused, not
     * ignored (an operator would believe them in use). */
    if ((!reaches && p->net_host[FY_NETHOST_HOSTS_FILE]) || (!fetch && p->net_host[FY_NETHOST_CREDENTIALS]))
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.host",
                       "%s is read under network mode %s, not %s",
                       !reaches && p->net_host[FY_NETHOST_HOSTS_FILE] ? "a hosts file" : "a credentials file",
                       !reaches && p->net_host[FY_NETHOST_HOSTS_FILE] ? "restricted or fetch-only" : "fetch-only",
                       net_mode_name(pl->net_mode) ? net_mode_name(pl->net_mode) : "?");
    if (!reaches)
        return 0;
    if (p->net_host[FY_NETHOST_CREDENTIALS] &&
        !(pl->net_credentials = arena_strdup(&pl->arena, p->net_host[FY_NETHOST_CREDENTIALS])))
        return FY_E_NOMEM;
    pl->net_uplink = p->net_host[FY_NETHOST_UPLINK] ? arena_strdup(&pl->arena, p->net_host[FY_NETHOST_UPLINK]) : NULL;
    pl->net_link_subnet = p->net_host[FY_NETHOST_LINK_SUBNET]
                              ? arena_strdup(&pl->arena, p->net_host[FY_NETHOST_LINK_SUBNET]) : NULL;
    if ((p->net_host[FY_NETHOST_UPLINK] && !pl->net_uplink) ||
        (p->net_host[FY_NETHOST_LINK_SUBNET] && !pl->net_link_subnet))
        return FY_E_NOMEM;
    const char *hosts_path = p->net_host[FY_NETHOST_HOSTS_FILE];
    char *hosts = NULL;
    struct rules rs = {0};
    struct strbuf lines;
    strbuf_init(&lines);
    int r = 0;
    for (size_t i = 0; i < pl->ndests && r == 0; i++) {
        const struct plan_dest *d = &pl->dests[i];
        struct plan_net_rule t = {.proto = d->proto, .port_min = d->port_min, .port_max = d->port_max,
                                  .dest = (uint32_t)i};
        char addr[260];
        const char *slash = strchr(d->host, '/');
        snprintf(addr, sizeof(addr), "%.*s", slash ? (int)(slash - d->host) : (int)strlen(d->host), d->host);
        if (inet_pton(AF_INET, addr, t.addr) == 1 || inet_pton(AF_INET6, addr, t.addr) == 1) {
            t.family = strchr(addr, ':') ? 6 : 4;
            t.prefix = (uint8_t)(slash ? atoi(slash + 1) : t.family == 4 ? 32 : 128);
            mask(t.addr, t.prefix, t.family == 4 ? 4 : 16);
            r = push(&rs, &t);
            continue;
        }
        /* A name: every address it has. */
        size_t found = 0;
        const char *why = "no address";
        if (hosts_path) {
            int e = 0;
            if (!hosts && !(hosts = read_hosts_file(hosts_path, &e))) {
                r = err_set(reterr, err_from_errno(e), FY_STEP_PREPARE, e, "$.network.host",
                            "reading the hosts file %s: %s", hosts_path, strerror(e));
                break;
            }
            r = resolve_in_file(hosts, d->host, t, &rs, &found);
        } else {
            r = resolve_with_host(d->host, t, &rs, &found, &why);
        }
        if (r == 0 && !found) {
            char loc[64];
            snprintf(loc, sizeof(loc), "$.network.destinations[%zu].host", i);
            r = err_set(reterr, FY_E_NOTFOUND, FY_STEP_PREPARE, 0, loc, "destination \"%s\" does not resolve (%s%s%s)",
                        d->host, hosts_path ? "not in the hosts file " : "the host's resolver: ",
                        hosts_path ? hosts_path : why, "");
        }
        if (rs.n > NET_RULES_MAX)
            break;
    }
    if (r == 0 && rs.n <= NET_RULES_MAX)
        r = normalise_mapped(&rs, pl, reterr);
    if (r == 0 && rs.n > NET_RULES_MAX)
        r = err_set(reterr, FY_E_RANGE, FY_STEP_PREPARE, 0, "$.network.destinations",
                    "the destinations resolve to more than %u address rules", NET_RULES_MAX);
    /* Every address a destination name resolved to, before rules of equal
     * tuples merge below (two names of one address and port: a CDN's; or a
     * name after an address): each name gets its /etc/hosts lines and its
     * DNS stub answers (pl->net_name_rules), whichever destination a
     * merged rule keeps. */
    struct rules named = {0};
    if (r == 0 && rs.n)
        qsort(rs.v, rs.n, sizeof(*rs.v), rule_cmp);
    for (size_t i = 0; r == 0 && i < rs.n; i++) {
        const char *host = pl->dests[rs.v[i].dest].host;
        uint8_t tmp[16];
        if (!strchr(host, '/') && inet_pton(AF_INET, host, tmp) != 1 && inet_pton(AF_INET6, host, tmp) != 1)
            r = push(&named, &rs.v[i]);
    }
    if (r == 0 && rs.n) {
        size_t k = 0;
        for (size_t i = 0; i < rs.n; i++) {
            /* The same tuple from two destinations: the first one names it
             * (under fetch-only each keeps its own: the proxy connects to a
             * name's addresses by the name the request gives). */
            struct plan_net_rule a = rs.v[i];
            if (k) {
                if (!fetch)
                    a.dest = rs.v[k - 1].dest;
                if (rule_cmp(&a, &rs.v[k - 1]) == 0)
                    continue;
            }
            rs.v[k++] = rs.v[i];
        }
        rs.n = k;
        r = check_own_addresses(&rs, pl, reterr);
        if (r == 0)
            r = check_special_addresses(&rs, pl, reterr);
    }
    /* The names for the sandbox's /etc/hosts, in rule order (none under
     * fetch-only: the workload names hosts only to the proxy), each
     * address and name once (a line is looked for whole, after a newline:
     * 1.2.3.4 is not 11.2.3.4). */
    if (r == 0 && !fetch)
        strbuf_append(&lines, "\n");
    for (size_t i = 0; r == 0 && !fetch && i < named.n; i++) {
        const char *host = pl->dests[named.v[i].dest].host;
        char a[INET6_ADDRSTRLEN], line[INET6_ADDRSTRLEN + 300];
        inet_ntop(named.v[i].family == 4 ? AF_INET : AF_INET6, named.v[i].addr, a, sizeof(a));
        snprintf(line, sizeof(line), "\n%s\t%s\n", a, host);
        if (!strstr(lines.buf ? lines.buf : "", line))
            strbuf_append(&lines, line + 1);
    }
    if (r == 0 && (lines.oom || !(pl->net_hosts = arena_strdup(&pl->arena, lines.buf ? lines.buf + (lines.buf[0] == '\n') : ""))))
        r = FY_E_NOMEM;
    if (r == 0 && named.n) { /* (the arena owns it now; freed by arena_keep on failure) */
        if (!(pl->net_name_rules = arena_keep(&pl->arena, named.v)))
            r = FY_E_NOMEM;
        else
            pl->nnet_name_rules = named.n;
    } else {
        free(named.v);
    }
    free(hosts);
    strbuf_free(&lines);
    if (r == 0 && rs.n && !(pl->net_rules = arena_keep(&pl->arena, rs.v)))
        return FY_E_NOMEM;
    if (r < 0) {
        free(rs.v);
        return r;
    }
    if (!rs.n)
        free(rs.v);
    pl->nnet_rules = rs.n;
    return 0;
}
