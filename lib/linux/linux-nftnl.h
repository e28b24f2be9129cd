/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The restricted router's nftables table as one nf_tables netlink batch,
 * encoded here from validated tuples (no text, no parser, no library):
 * what linux-net.c's ruleset text says, expression for expression, in one
 * sendmsg and one commit. Like linux-netlink.c it depends on libc and the
 * kernel's headers only and never enters a namespace: the caller opens the
 * NETLINK_NETFILTER socket in the router's namespace.
 *
 *   table inet forgeyard
 *   chain forward (filter, hook forward, priority 0, policy drop)
 *     ct state established,related accept
 *     iifname != SB drop
 *     oifname != UP drop
 *     meta nfproto ipv4 ip saddr != SB4 drop
 *     meta nfproto ipv6 ip6 saddr != SB6 drop
 *     ct state != new drop
 *     per tuple: meta nfproto F, daddr/prefix, meta l4proto P, dport range: accept
 *   chain input (filter, hook input, priority 0, policy drop)
 *     meta nfproto ipv6 meta l4proto ipv6-icmp icmpv6 type 135 accept (and 136)
 *   chain postrouting (nat, hook postrouting, priority 100, policy accept)
 *     oifname UP masquerade
 */
#ifndef FY_LINUX_NFTNL_H
#define FY_LINUX_NFTNL_H

#include <stddef.h>
#include <stdint.h>

struct lnft_tuple {
    uint8_t family;             /* 4 or 6 */
    uint8_t prefix;             /* 1..32 or 1..128 */
    uint8_t addr[16];           /* network order, host bits zero */
    uint8_t proto;              /* IPPROTO_TCP or IPPROTO_UDP */
    uint16_t port_min, port_max;
};

struct lnft_router {
    const char *sb_if, *up_if;  /* the router's sandbox-side and uplink-side links */
    uint8_t sb4[4];             /* the sandbox's addresses (the only sources forwarded) */
    uint8_t sb6[16];
    const struct lnft_tuple *tuples;
    size_t ntuples;
};

/* The batch, built (malloc'd) before it is sent: a forked child that may
 * not allocate sends one its parent built. */
struct lnft_batch {
    char *buf;
    size_t len;
    uint32_t first_seq, last_seq; /* the requests whose answers count */
};
int lnft_router_build(const struct lnft_router *r, struct lnft_batch *out);
/* Sends b over s and reads the answers (no allocation): 0 once committed,
 * else -errno. */
int lnft_batch_apply(int s, const struct lnft_batch *b);
void lnft_batch_free(struct lnft_batch *b);

/* lnft_router_build, lnft_batch_apply and lnft_batch_free: applies the table over s (a NETLINK_NETFILTER socket, in the router's
 * namespace, that has never held a table of this name): 0 once the batch is
 * committed, else -errno (the kernel commits all or nothing). The batch's
 * size: about 300 bytes per tuple. */
int lnft_router_apply(int s, const struct lnft_router *r);

/* ---- restricted as root: the table in the sandbox's own namespace ----
 *
 * (linux-net.c: that namespace is made by the host's user namespace, so
 * the workload has no capability over it, its rules included.)
 *
 *   table inet forgeyard
 *   chain output (filter, hook output, priority 0, policy drop)
 *     oifname "lo" accept
 *     ct state established,related accept
 *     oifname != LINK drop
 *     icmpv6 type 135, 136 accept (neighbour discovery)
 *     meta nfproto ipv4 ip saddr != SB4 drop
 *     meta nfproto ipv6 ip6 saddr != SB6 drop
 *     ct state != new drop
 *     per tuple: meta nfproto F, daddr/prefix, meta l4proto P, dport range: accept
 *   chain input (filter, hook input, priority 0, policy drop)
 *     iifname "lo" accept
 *     ct state established,related accept
 *     icmpv6 type 135, 136 accept
 */
struct lnft_direct {
    const char *link_if;        /* the sandbox's link to the uplink */
    uint8_t sb4[4];             /* its addresses (the only sources sent) */
    uint8_t sb6[16];
    const struct lnft_tuple *tuples;
    size_t ntuples;
};
int lnft_direct_build(const struct lnft_direct *d, struct lnft_batch *out);

/* ---- a job network's bridge table (linux-jobnet.c; the helper's jobs) ----
 *
 *   table bridge fy_job
 *   chain ports (filter, hook prerouting, priority 0, policy drop)
 *     ether type != ip ether type != arp ether type != ip6 drop   (tagged: 802.1Q, 802.1ad)
 *     per member: iifname PORT ether saddr MAC accept
 *   chain members (filter, hook forward, priority 0, policy drop)
 *     per member: iifname PORT oifname "m*" ether type arp arp saddr ether MAC arp saddr ip A4 accept
 *                 iifname PORT oifname "m*" icmpv6 type nd-neighbor-advert @th,64,128 != A6 drop
 *                 iifname PORT oifname "m*" ip saddr A4 accept
 *                 iifname PORT oifname "m*" ip6 saddr A6 accept
 *   chain self_in (filter, hook input, priority 0, policy drop)
 *   chain self_out (filter, hook output, priority 0, policy drop)
 */
#define LNFT_JOB_PORT_PREFIX "m" /* every member's port is m<index> */
struct lnft_member {
    char port[16];              /* m<index> */
    uint8_t a4[4];              /* its addresses, network order */
    uint8_t a6[16];
    uint8_t mac[6];             /* its job0's MAC address (lnft_job_member_mac) */
};
/* Member index's MAC address on its job0: 02:66:79:73:HH:LL, HHLL =
 * index + 1 (locally administered, unicast; "fys" as the IPv6 prefix's
 * fd66:7973). Fixed by the index as the addresses are, so that a member
 * started again has the MAC its peers' neighbour entries hold; unique on
 * one job's bridge (jobs never share one). The library as root and the
 * privileged helper both set it. */
static inline void lnft_job_member_mac(uint32_t index, uint8_t mac[6]) {
    mac[0] = 0x02;
    mac[1] = 0x66;
    mac[2] = 0x79;
    mac[3] = 0x73;
    mac[4] = (uint8_t)((index + 1) >> 8);
    mac[5] = (uint8_t)((index + 1) & 0xff);
}
int lnft_job_build(const struct lnft_member *m, size_t n, struct lnft_batch *out);
int lnft_job_delete_build(struct lnft_batch *out);
/* Built and applied over s (NETLINK_NETFILTER in the job's namespace):
 * 0 once committed, else -errno. */
int lnft_job_apply(int s, const struct lnft_member *m, size_t n);
int lnft_job_delete(int s);
/* The tables (of every family) in s's namespace, or -errno: the witness
 * that a deletion left none. */
int lnft_table_count(int s);

#endif
