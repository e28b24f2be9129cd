/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The restricted router's table as one nf_tables batch (linux-nftnl.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "linux-nftnl.h"

/* (linux/netfilter_bridge.h's hook numbers: that header pulls in
 * definitions that clash with libc's) */
#define NF_BR_PRE_ROUTING 0
#define NF_BR_LOCAL_IN 1
#define NF_BR_FORWARD 2
#define NF_BR_LOCAL_OUT 3

#define TABLE "forgeyard"
#define JOB_TABLE "fy_job"

/* ---- a growing message buffer with nested attributes ---- */

struct nb {
    char *buf;
    size_t len, cap;
    bool oom;
    uint32_t seq;
    struct nlmsghdr *msg;   /* the message being written */
    uint8_t family;         /* the table's: NFPROTO_INET or NFPROTO_BRIDGE */
    const char *table;
};

static void *nb_put(struct nb *b, size_t len) {
    size_t al = NLMSG_ALIGN(len);
    if (b->oom)
        return NULL;
    if (b->len + al > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16384;
        while (cap < b->len + al)
            cap *= 2;
        size_t off = b->msg ? (size_t)((char *)b->msg - b->buf) : 0;
        char *n = realloc(b->buf, cap);
        if (!n) {
            b->oom = true;
            return NULL;
        }
        b->buf = n;
        b->cap = cap;
        if (b->msg)
            b->msg = (struct nlmsghdr *)(b->buf + off);
    }
    void *p = b->buf + b->len;
    memset(p, 0, al);
    b->len += al;
    if (b->msg)
        b->msg->nlmsg_len = (uint32_t)(b->buf + b->len - (char *)b->msg);
    return p;
}

static void nb_msg(struct nb *b, uint16_t type, uint16_t flags, uint8_t family, uint16_t res_id) {
    b->msg = NULL;
    size_t off = b->len;
    struct nlmsghdr *h = nb_put(b, NLMSG_HDRLEN);
    if (!h)
        return;
    b->msg = (struct nlmsghdr *)(b->buf + off);
    h = b->msg;
    h->nlmsg_type = type;
    h->nlmsg_flags = flags;
    h->nlmsg_seq = ++b->seq;
    h->nlmsg_len = NLMSG_HDRLEN;
    struct nfgenmsg *g = nb_put(b, sizeof(*g));
    if (g) {
        g->nfgen_family = family;
        g->version = NFNETLINK_V0;
        g->res_id = htons(res_id);
    }
}

static void nb_attr(struct nb *b, uint16_t type, const void *data, size_t len) {
    size_t off = b->len;
    struct nlattr *a = nb_put(b, NLA_HDRLEN + len);
    if (!a)
        return;
    a = (struct nlattr *)(b->buf + off);
    a->nla_type = type;
    a->nla_len = (uint16_t)(NLA_HDRLEN + len);
    memcpy((char *)a + NLA_HDRLEN, data, len);
}

static void nb_u32(struct nb *b, uint16_t type, uint32_t v) {
    uint32_t be = htonl(v);
    nb_attr(b, type, &be, sizeof(be));
}

static void nb_str(struct nb *b, uint16_t type, const char *s) { nb_attr(b, type, s, strlen(s) + 1); }

/* A nested attribute: its offset, closed by nb_end. */
static size_t nb_nest(struct nb *b, uint16_t type) {
    size_t off = b->len;
    struct nlattr *a = nb_put(b, NLA_HDRLEN);
    if (a) {
        a = (struct nlattr *)(b->buf + off);
        a->nla_type = type | NLA_F_NESTED;
    }
    return off;
}

static void nb_end(struct nb *b, size_t off) {
    if (!b->oom)
        ((struct nlattr *)(b->buf + off))->nla_len = (uint16_t)(b->len - off);
}

/* ---- expressions ---- */

static size_t expr_begin(struct nb *b, const char *name) {
    size_t elem = nb_nest(b, NFTA_LIST_ELEM);
    nb_str(b, NFTA_EXPR_NAME, name);
    return elem;
}

static void e_meta(struct nb *b, uint32_t key) {
    size_t e = expr_begin(b, "meta"), d = nb_nest(b, NFTA_EXPR_DATA);
    nb_u32(b, NFTA_META_DREG, NFT_REG_1);
    nb_u32(b, NFTA_META_KEY, key);
    nb_end(b, d);
    nb_end(b, e);
}

static void e_ct_state(struct nb *b) {
    size_t e = expr_begin(b, "ct"), d = nb_nest(b, NFTA_EXPR_DATA);
    nb_u32(b, NFTA_CT_DREG, NFT_REG_1);
    nb_u32(b, NFTA_CT_KEY, NFT_CT_STATE);
    nb_end(b, d);
    nb_end(b, e);
}

static void e_payload(struct nb *b, uint32_t base, uint32_t offset, uint32_t len) {
    size_t e = expr_begin(b, "payload"), d = nb_nest(b, NFTA_EXPR_DATA);
    nb_u32(b, NFTA_PAYLOAD_DREG, NFT_REG_1);
    nb_u32(b, NFTA_PAYLOAD_BASE, base);
    nb_u32(b, NFTA_PAYLOAD_OFFSET, offset);
    nb_u32(b, NFTA_PAYLOAD_LEN, len);
    nb_end(b, d);
    nb_end(b, e);
}

static void data_value(struct nb *b, uint16_t type, const void *v, size_t len) {
    size_t n = nb_nest(b, type);
    nb_attr(b, NFTA_DATA_VALUE, v, len);
    nb_end(b, n);
}

static void e_cmp(struct nb *b, uint32_t op, const void *v, size_t len) {
    size_t e = expr_begin(b, "cmp"), d = nb_nest(b, NFTA_EXPR_DATA);
    nb_u32(b, NFTA_CMP_SREG, NFT_REG_1);
    nb_u32(b, NFTA_CMP_OP, op);
    data_value(b, NFTA_CMP_DATA, v, len);
    nb_end(b, d);
    nb_end(b, e);
}

/* reg1 = reg1 & mask (xor 0), len bytes. */
static void e_and(struct nb *b, const void *mask, size_t len) {
    static const uint8_t zero[16];
    size_t e = expr_begin(b, "bitwise"), d = nb_nest(b, NFTA_EXPR_DATA);
    nb_u32(b, NFTA_BITWISE_SREG, NFT_REG_1);
    nb_u32(b, NFTA_BITWISE_DREG, NFT_REG_1);
    nb_u32(b, NFTA_BITWISE_LEN, (uint32_t)len);
    data_value(b, NFTA_BITWISE_MASK, mask, len);
    data_value(b, NFTA_BITWISE_XOR, zero, len);
    nb_end(b, d);
    nb_end(b, e);
}

static void e_verdict(struct nb *b, uint32_t code) {
    size_t e = expr_begin(b, "immediate"), d = nb_nest(b, NFTA_EXPR_DATA);
    nb_u32(b, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
    size_t data = nb_nest(b, NFTA_IMMEDIATE_DATA), v = nb_nest(b, NFTA_DATA_VERDICT);
    nb_u32(b, NFTA_VERDICT_CODE, code);
    nb_end(b, v);
    nb_end(b, data);
    nb_end(b, d);
    nb_end(b, e);
}

static void e_masq(struct nb *b) {
    size_t e = expr_begin(b, "masq");
    nb_end(b, e);
}

/* ---- the table ---- */

#define NFT_TYPE(m) ((uint16_t)((NFNL_SUBSYS_NFTABLES << 8) | (m)))
/* No acknowledgement asked for but the last request's: an error is always
 * answered, and a thousand acknowledgements (a socket buffer each) would
 * overflow the receive queue (ENOBUFS). */
#define CREATE (NLM_F_REQUEST | NLM_F_CREATE)

static void chain(struct nb *b, const char *name, const char *type, uint32_t hook, uint32_t prio, uint32_t policy) {
    nb_msg(b, NFT_TYPE(NFT_MSG_NEWCHAIN), CREATE, b->family, 0);
    nb_str(b, NFTA_CHAIN_TABLE, b->table);
    nb_str(b, NFTA_CHAIN_NAME, name);
    size_t h = nb_nest(b, NFTA_CHAIN_HOOK);
    nb_u32(b, NFTA_HOOK_HOOKNUM, hook);
    nb_u32(b, NFTA_HOOK_PRIORITY, prio);
    nb_end(b, h);
    nb_u32(b, NFTA_CHAIN_POLICY, policy);
    nb_str(b, NFTA_CHAIN_TYPE, type);
}

/* A rule of chain: its expression list's offset, closed by rule_end. */
static size_t rule_begin(struct nb *b, const char *chain_name) {
    nb_msg(b, NFT_TYPE(NFT_MSG_NEWRULE), CREATE | NLM_F_APPEND, b->family, 0);
    nb_str(b, NFTA_RULE_TABLE, b->table);
    nb_str(b, NFTA_RULE_CHAIN, chain_name);
    return nb_nest(b, NFTA_RULE_EXPRESSIONS);
}

static void ifname(struct nb *b, uint32_t key, const char *name, uint32_t op) {
    char n[IFNAMSIZ] = {0}; /* (the whole name field, zero-padded, as nft compares it) */
    strncpy(n, name, sizeof(n) - 1);
    e_meta(b, key);
    e_cmp(b, op, n, sizeof(n));
}

static void nfproto(struct nb *b, uint8_t family) {
    uint8_t v = family == 4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
    e_meta(b, NFT_META_NFPROTO);
    e_cmp(b, NFT_CMP_EQ, &v, 1);
}

static void ct_state(struct nb *b, uint32_t bits, uint32_t op) {
    uint32_t zero = 0;
    e_ct_state(b);
    e_and(b, &bits, sizeof(bits)); /* (host order, as the kernel keeps the state) */
    e_cmp(b, op, &zero, sizeof(zero));
}

/* "meta nfproto F saddr != A drop" in chain (IPv4: 4 bytes at 12; IPv6:
 * 16 at 8). */
static void spoofed_drop(struct nb *b, const char *chain_name, uint8_t family, const uint8_t *addr) {
    size_t x = rule_begin(b, chain_name), len = family == 4 ? 4 : 16;
    nfproto(b, family);
    e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, family == 4 ? 12 : 8, (uint32_t)len);
    e_cmp(b, NFT_CMP_NEQ, addr, len);
    e_verdict(b, NF_DROP);
    nb_end(b, x);
}

/* "meta nfproto ipv6 exthdr rt exists drop" in chain. A workload may set
 * IPV6_RTHDR without privilege (a segment routing header, type 4): the
 * packet's destination is then its first segment, which an allowlist
 * matches, while its final one is anything; an allowed host that routes
 * segments would carry it there. No flow of the allowlist needs one, an
 * established one neither: this comes before the conntrack accept. */
static void rthdr_drop(struct nb *b, const char *chain_name) {
    size_t x = rule_begin(b, chain_name);
    nfproto(b, 6);
    size_t e = expr_begin(b, "exthdr"), d = nb_nest(b, NFTA_EXPR_DATA);
    uint8_t type = IPPROTO_ROUTING, one = 1;
    nb_u32(b, NFTA_EXTHDR_DREG, NFT_REG_1);
    nb_attr(b, NFTA_EXTHDR_TYPE, &type, 1);
    nb_u32(b, NFTA_EXTHDR_OFFSET, 0);
    nb_u32(b, NFTA_EXTHDR_LEN, 1);
    nb_u32(b, NFTA_EXTHDR_FLAGS, NFT_EXTHDR_F_PRESENT);
    nb_end(b, d);
    nb_end(b, e);
    e_cmp(b, NFT_CMP_EQ, &one, 1);
    e_verdict(b, NF_DROP);
    nb_end(b, x);
}

/* "ip daddr 127.0.0.0/8 drop" and "ip6 daddr ::1 drop" in chain: a
 * loopback destination never leaves on a link. A workload reaches one
 * there without privilege: a flow to 127.0.0.1 made established over its
 * own loopback (an answer from a server of its own, or the DNS stub's
 * REFUSED), then the same socket bound to eth0 (SO_BINDTODEVICE), whose
 * conntrack entry knows no interface; or a loopback rule of the policy.
 * An uplink with route_localnet=1 (kube-proxy sets it) delivered those to
 * its loopback services, a resolver on 127.0.0.53 included (the sixth
 * exploration). Before the conntrack accept. */
static void loopback_dst_drop(struct nb *b, const char *chain_name) {
    static const uint8_t net8 = 127; /* (a /8: its first byte, as nft loads it) */
    static const uint8_t one6[16] = {[15] = 1};
    size_t x = rule_begin(b, chain_name);
    nfproto(b, 4);
    e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 16, 1);
    e_cmp(b, NFT_CMP_EQ, &net8, 1);
    e_verdict(b, NF_DROP);
    nb_end(b, x);
    x = rule_begin(b, chain_name);
    nfproto(b, 6);
    e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 24, 16);
    e_cmp(b, NFT_CMP_EQ, one6, 16);
    e_verdict(b, NF_DROP);
    nb_end(b, x);
}

/* The batch's frame: BEGIN, then the table's message (NEWTABLE or
 * DELTABLE) ... */
static void batch_begin(struct nb *b, uint8_t family, const char *table, uint16_t msg) {
    b->family = family;
    b->table = table;
    nb_msg(b, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
    nb_msg(b, NFT_TYPE(msg), msg == NFT_MSG_NEWTABLE ? CREATE : NLM_F_REQUEST, family, 0);
    nb_str(b, NFTA_TABLE_NAME, table);
}

/* ... and END, the last request acknowledged. */
static void batch_end(struct nb *b) {
    if (b->msg)
        b->msg->nlmsg_flags |= NLM_F_ACK; /* (the last request) */
    nb_msg(b, NFNL_MSG_BATCH_END, NLM_F_REQUEST, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
    b->msg = NULL;
}

/* "meta l4proto ipv6-icmp icmpv6 type T accept" in chain (neighbour
 * discovery, which the kernel itself sends and answers). */
static void nd_accept(struct nb *b, const char *chain_name) {
    static const uint8_t nd[2] = {135, 136};
    for (int i = 0; i < 2; i++) {
        uint8_t icmp6 = IPPROTO_ICMPV6;
        size_t x = rule_begin(b, chain_name);
        nfproto(b, 6);
        e_meta(b, NFT_META_L4PROTO);
        e_cmp(b, NFT_CMP_EQ, &icmp6, 1);
        e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1);
        e_cmp(b, NFT_CMP_EQ, &nd[i], 1);
        e_verdict(b, NF_ACCEPT);
        nb_end(b, x);
    }
}

/* "meta nfproto F daddr A/P meta l4proto P th dport MIN-MAX accept". */
static void tuple_accept(struct nb *b, const char *chain_name, const struct lnft_tuple *t) {
    size_t alen = t->family == 4 ? 4 : 16;
    uint8_t a[16] = {0}, m[16] = {0};
    for (unsigned k = 0; k < alen; k++) {
        unsigned bits = t->prefix > 8 * k ? t->prefix - 8 * k : 0;
        m[k] = (uint8_t)(bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff);
        a[k] = t->addr[k] & m[k];
    }
    size_t x = rule_begin(b, chain_name);
    nfproto(b, t->family);
    /* A whole-byte prefix: only its bytes loaded and compared; another:
     * the address masked (nft's own encoding of "daddr A/P"). */
    size_t plen = t->prefix % 8 == 0 ? t->prefix / 8u : alen;
    e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, t->family == 4 ? 16 : 24, (uint32_t)plen);
    if (t->prefix % 8)
        e_and(b, m, alen);
    e_cmp(b, NFT_CMP_EQ, a, plen);
    e_meta(b, NFT_META_L4PROTO);
    e_cmp(b, NFT_CMP_EQ, &t->proto, 1);
    e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
    uint16_t lo = htons(t->port_min), hi = htons(t->port_max);
    /* "dport MIN-MAX": two comparisons in network order (big-endian bytes
     * compare as the numbers do), also where MIN is MAX. */
    e_cmp(b, NFT_CMP_GTE, &lo, 2);
    e_cmp(b, NFT_CMP_LTE, &hi, 2);
    e_verdict(b, NF_ACCEPT);
    nb_end(b, x);
}

static void verdict_rule(struct nb *b, const char *chain_name, uint32_t key, const char *name, uint32_t op,
                         uint32_t verdict) {
    size_t x = rule_begin(b, chain_name);
    ifname(b, key, name, op);
    e_verdict(b, verdict);
    nb_end(b, x);
}

static void ct_rule(struct nb *b, const char *chain_name, uint32_t bits, uint32_t op, uint32_t verdict) {
    size_t x = rule_begin(b, chain_name);
    ct_state(b, bits, op);
    e_verdict(b, verdict);
    nb_end(b, x);
}

/* "ct state != new drop" in chain (a packet has one state: the value
 * compared, not a bit tested). */
static void not_new_drop(struct nb *b, const char *chain_name) {
    const uint32_t new_bit = NF_CT_STATE_BIT(IP_CT_NEW);
    size_t x = rule_begin(b, chain_name);
    e_ct_state(b);
    e_cmp(b, NFT_CMP_NEQ, &new_bit, sizeof(new_bit));
    e_verdict(b, NF_DROP);
    nb_end(b, x);
}

static void build(struct nb *b, const struct lnft_router *r) {
    batch_begin(b, NFPROTO_INET, TABLE, NFT_MSG_NEWTABLE);
    chain(b, "forward", "filter", NF_INET_FORWARD, 0, NF_DROP);
    chain(b, "input", "filter", NF_INET_LOCAL_IN, 0, NF_DROP);
    chain(b, "postrouting", "nat", NF_INET_POST_ROUTING, 100, NF_ACCEPT);
    const uint32_t est_rel = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
    rthdr_drop(b, "forward");
    loopback_dst_drop(b, "forward");
    ct_rule(b, "forward", est_rel, NFT_CMP_NEQ, NF_ACCEPT);
    /* iifname != sb drop; oifname != up drop */
    verdict_rule(b, "forward", NFT_META_IIFNAME, r->sb_if, NFT_CMP_NEQ, NF_DROP);
    verdict_rule(b, "forward", NFT_META_OIFNAME, r->up_if, NFT_CMP_NEQ, NF_DROP);
    /* a source other than the sandbox's: drop */
    spoofed_drop(b, "forward", 4, r->sb4);
    spoofed_drop(b, "forward", 6, r->sb6);
    not_new_drop(b, "forward");
    for (size_t i = 0; i < r->ntuples; i++)
        tuple_accept(b, "forward", &r->tuples[i]);
    /* input: neighbour discovery only */
    nd_accept(b, "input");
    /* postrouting: oifname up masquerade */
    size_t x = rule_begin(b, "postrouting");
    ifname(b, NFT_META_OIFNAME, r->up_if, NFT_CMP_EQ);
    e_masq(b);
    nb_end(b, x);
    batch_end(b);
}

/* ---- restricted as root: the table in the sandbox's own namespace ----
 *
 * That namespace is the host's (made by its user namespace, not the
 * workload's: linux-net.c), so nothing inside can change it. Only what
 * leaves on the sandbox's link to the uplink is filtered, on the output
 * hook, where every locally made packet passes once routed. */

static void build_direct(struct nb *b, const struct lnft_direct *d) {
    batch_begin(b, NFPROTO_INET, TABLE, NFT_MSG_NEWTABLE);
    chain(b, "output", "filter", NF_INET_LOCAL_OUT, 0, NF_DROP);
    chain(b, "input", "filter", NF_INET_LOCAL_IN, 0, NF_DROP);
    const uint32_t est_rel = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
    /* output: the loopback; nothing but the link; no loopback destination
     * on it; flows already allowed */
    verdict_rule(b, "output", NFT_META_OIFNAME, "lo", NFT_CMP_EQ, NF_ACCEPT);
    verdict_rule(b, "output", NFT_META_OIFNAME, d->link_if, NFT_CMP_NEQ, NF_DROP);
    rthdr_drop(b, "output");
    loopback_dst_drop(b, "output");
    ct_rule(b, "output", est_rel, NFT_CMP_NEQ, NF_ACCEPT);
    nd_accept(b, "output");
    /* a source other than the sandbox's (a socket bound with IP_FREEBIND
     * needs no privilege): drop */
    spoofed_drop(b, "output", 4, d->sb4);
    spoofed_drop(b, "output", 6, d->sb6);
    not_new_drop(b, "output");
    for (size_t i = 0; i < d->ntuples; i++)
        tuple_accept(b, "output", &d->tuples[i]);
    /* input: the loopback, answers to allowed flows, neighbour discovery */
    verdict_rule(b, "input", NFT_META_IIFNAME, "lo", NFT_CMP_EQ, NF_ACCEPT);
    ct_rule(b, "input", est_rel, NFT_CMP_NEQ, NF_ACCEPT);
    nd_accept(b, "input");
    batch_end(b);
}

static int finish(struct nb *b, struct lnft_batch *out);

int lnft_direct_build(const struct lnft_direct *d, struct lnft_batch *out) {
    struct nb b = {0};
    build_direct(&b, d);
    return finish(&b, out);
}

/* ---- a job network's bridge table ---- */

/* "iifname PORT oifname "m*"": from that member's port to any member's
 * (nft's wildcard is a comparison of the bytes before the star). */
static size_t member_rule(struct nb *b, const char *port) {
    size_t x = rule_begin(b, "members");
    ifname(b, NFT_META_IIFNAME, port, NFT_CMP_EQ);
    e_meta(b, NFT_META_OIFNAME);
    e_cmp(b, NFT_CMP_EQ, LNFT_JOB_PORT_PREFIX, strlen(LNFT_JOB_PORT_PREFIX));
    return x;
}

/* "iifname PORT oifname "m*" meta protocol P saddr A accept" (nft's
 * dependency for ip and ip6 saddr in the bridge family: meta protocol). */
static void member_saddr(struct nb *b, const char *port, uint16_t ethertype, uint32_t offset, const uint8_t *a,
                         size_t len) {
    uint16_t p = htons(ethertype);
    size_t x = member_rule(b, port);
    e_meta(b, NFT_META_PROTOCOL);
    e_cmp(b, NFT_CMP_EQ, &p, 2);
    e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, offset, (uint32_t)len);
    e_cmp(b, NFT_CMP_EQ, a, len);
    e_verdict(b, NF_ACCEPT);
    nb_end(b, x);
}

/* "iifname PORT oifname "m*" icmpv6 type nd-neighbor-advert @th,64,128 !=
 * A6 drop": an advertisement for an address other than the member's own
 * (its target, 16 bytes at 8) would send another member's traffic to it.
 * (nft's dependencies, as it encodes them: ether type ip6, meta l4proto
 * ipv6-icmp.) */
static void member_na_drop(struct nb *b, const char *port, const uint8_t *a6) {
    const uint16_t ip6 = htons(ETH_P_IPV6);
    const uint8_t icmp6 = IPPROTO_ICMPV6, na = 136;
    size_t x = member_rule(b, port);
    e_payload(b, NFT_PAYLOAD_LL_HEADER, 12, 2);
    e_cmp(b, NFT_CMP_EQ, &ip6, 2);
    e_meta(b, NFT_META_L4PROTO);
    e_cmp(b, NFT_CMP_EQ, &icmp6, 1);
    e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1);
    e_cmp(b, NFT_CMP_EQ, &na, 1);
    e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 8, 16);
    e_cmp(b, NFT_CMP_NEQ, a6, 16);
    e_verdict(b, NF_DROP);
    nb_end(b, x);
}

static void build_job(struct nb *b, const struct lnft_member *m, size_t n) {
    batch_begin(b, NFPROTO_BRIDGE, JOB_TABLE, NFT_MSG_NEWTABLE);
    /* (ports: before the bridge learns a frame's source, which it does
     * before forwarding: a frame dropped only in members would still have
     * taught it another member's MAC behind this port) */
    chain(b, "ports", "filter", NF_BR_PRE_ROUTING, 0, NF_DROP);
    chain(b, "members", "filter", NF_BR_FORWARD, 0, NF_DROP);
    chain(b, "self_in", "filter", NF_BR_LOCAL_IN, 0, NF_DROP);
    chain(b, "self_out", "filter", NF_BR_LOCAL_OUT, 0, NF_DROP);
    {
        /* ether type != { ip, arp, ip6 } drop: a frame with an 802.1Q or
         * 802.1ad tag (nft shows a tag the receive path took off as it
         * was: the type at 12 is the tag's) passed every check of members,
         * which read the type there or none; a member's kernel strips a
         * priority tag (VLAN 0) and took a tagged neighbour advertisement
         * for another member's address (an exploration, session 35). No
         * member speaks anything else. */
        const uint16_t keep[] = {htons(ETH_P_IP), htons(ETH_P_ARP), htons(ETH_P_IPV6)};
        size_t x = rule_begin(b, "ports");
        for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) { /* (as nft encodes it: a load each) */
            e_payload(b, NFT_PAYLOAD_LL_HEADER, 12, 2);
            e_cmp(b, NFT_CMP_NEQ, &keep[k], 2);
        }
        e_verdict(b, NF_DROP);
        nb_end(b, x);
    }
    for (size_t i = 0; i < n; i++) {
        /* iifname PORT ether saddr MAC accept */
        size_t x = rule_begin(b, "ports");
        ifname(b, NFT_META_IIFNAME, m[i].port, NFT_CMP_EQ);
        e_payload(b, NFT_PAYLOAD_LL_HEADER, 6, 6);
        e_cmp(b, NFT_CMP_EQ, m[i].mac, 6);
        e_verdict(b, NF_ACCEPT);
        nb_end(b, x);
    }
    const uint16_t arp = htons(ETH_P_ARP);
    for (size_t i = 0; i < n; i++) {
        /* ether type arp arp saddr ether MAC arp saddr ip A4 accept (the
         * sender's MAC and address, adjacent: nft loads them as one) */
        uint8_t sender[10];
        memcpy(sender, m[i].mac, 6);
        memcpy(sender + 6, m[i].a4, 4);
        size_t x = member_rule(b, m[i].port);
        e_payload(b, NFT_PAYLOAD_LL_HEADER, 12, 2);
        e_cmp(b, NFT_CMP_EQ, &arp, 2);
        e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 8, 10);
        e_cmp(b, NFT_CMP_EQ, sender, 10);
        e_verdict(b, NF_ACCEPT);
        nb_end(b, x);
        member_na_drop(b, m[i].port, m[i].a6);
        member_saddr(b, m[i].port, ETH_P_IP, 12, m[i].a4, 4);    /* ip saddr A4 accept */
        member_saddr(b, m[i].port, ETH_P_IPV6, 8, m[i].a6, 16);  /* ip6 saddr A6 accept */
    }
    batch_end(b);
}

static int finish(struct nb *b, struct lnft_batch *out) {
    if (b->oom) {
        free(b->buf);
        return -ENOMEM;
    }
    out->buf = b->buf;
    out->len = b->len;
    out->first_seq = 1;
    out->last_seq = b->seq - 1; /* the last request's (BATCH_END has no answer) */
    return 0;
}

int lnft_router_build(const struct lnft_router *r, struct lnft_batch *out) {
    struct nb b = {0};
    build(&b, r);
    return finish(&b, out);
}

int lnft_job_build(const struct lnft_member *m, size_t n, struct lnft_batch *out) {
    struct nb b = {0};
    build_job(&b, m, n);
    return finish(&b, out);
}

int lnft_job_delete_build(struct lnft_batch *out) {
    struct nb b = {0};
    batch_begin(&b, NFPROTO_BRIDGE, JOB_TABLE, NFT_MSG_DELTABLE);
    batch_end(&b);
    return finish(&b, out);
}


void lnft_batch_free(struct lnft_batch *b) {
    free(b->buf);
    b->buf = NULL;
    b->len = 0;
}

int lnft_batch_apply(int s, const struct lnft_batch *b) {
    /* Room for the batch going out (the FORCE variant where the socket's
     * namespace is ours; else what the limits allow) and the answers
     * coming back: errors (every failing request) and one acknowledgement. */
    int one = 1, snd = (int)b->len + 4096, rcv = 1 << 20;
    (void)setsockopt(s, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &snd, sizeof(snd)) < 0)
        (void)setsockopt(s, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
    if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) < 0)
        (void)setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    ssize_t n;
    do
        n = sendto(s, b->buf, b->len, 0, (struct sockaddr *)&to, sizeof(to));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if ((size_t)n != b->len)
        return -EMSGSIZE;
    /* Answers come once the kernel has committed or aborted the whole
     * batch, in order: the first error is the answer, else the last
     * request's acknowledgement (the only one asked for). */
    char rb[8192] __attribute__((aligned(4)));
    for (;;) {
        do
            n = recv(s, rb, sizeof(rb), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return -errno; /* (lnl_ready's timeout: EAGAIN) */
        size_t len = (size_t)n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)rb; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_seq < b->first_seq || h->nlmsg_seq > b->last_seq || h->nlmsg_type != NLMSG_ERROR)
                continue;
            const struct nlmsgerr *e = NLMSG_DATA(h);
            if (e->error)
                return e->error < 0 ? e->error : -EPROTO;
            if (h->nlmsg_seq == b->last_seq)
                return 0;
        }
    }
}

int lnft_router_apply(int s, const struct lnft_router *r) {
    struct lnft_batch b;
    int e = lnft_router_build(r, &b);
    if (e < 0)
        return e;
    e = lnft_batch_apply(s, &b);
    lnft_batch_free(&b);
    return e;
}

int lnft_job_apply(int s, const struct lnft_member *m, size_t n) {
    struct lnft_batch b;
    int e = lnft_job_build(m, n, &b);
    if (e < 0)
        return e;
    e = lnft_batch_apply(s, &b);
    lnft_batch_free(&b);
    return e;
}

int lnft_job_delete(int s) {
    struct lnft_batch b;
    int e = lnft_job_delete_build(&b);
    if (e < 0)
        return e;
    e = lnft_batch_apply(s, &b);
    lnft_batch_free(&b);
    return e;
}

#define DUMP_SEQ 0x66790001u /* (apart from any batch's sequence numbers on the same socket) */

int lnft_table_count(int s) {
    struct {
        struct nlmsghdr h;
        struct nfgenmsg g;
    } req = {.h = {.nlmsg_len = sizeof(req), .nlmsg_type = NFT_TYPE(NFT_MSG_GETTABLE),
                   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = DUMP_SEQ},
             .g = {.nfgen_family = NFPROTO_UNSPEC, .version = NFNETLINK_V0}};
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    ssize_t n;
    do
        n = sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&to, sizeof(to));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    char rb[8192] __attribute__((aligned(4)));
    int count = 0;
    for (;;) {
        do
            n = recv(s, rb, sizeof(rb), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return -errno;
        size_t len = (size_t)n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)rb; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_seq != DUMP_SEQ)
                continue;
            if (h->nlmsg_type == NLMSG_DONE)
                return count;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error < 0 ? e->error : -EPROTO;
            }
            if (h->nlmsg_type == NFT_TYPE(NFT_MSG_NEWTABLE))
                count++;
        }
    }
}
