/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Job networks as root (linux-jobnet.c, fy_jobnet_new(3)): one network
 * namespace per job, the library's own (owned by the host's user
 * namespace, held by one fd of the host process, running no process), with
 * a bridge; each member's network namespace gets a veth to it:
 *
 *   member netns (its own user ns)     job netns (ours)
 *   job0 100.80.0.(i+1)/24  ---------  m<i> -- bridge jb (no address)
 *        fd66:7973:2::(i+1)/120
 *        MAC 02:66:79:73:HH:LL, HHLL = i+1 (lnft_job_member_mac)
 *   (no other link but lo, no route      nftables (bridge family): a frame
 *    but the job's /24)                  enters from a member's port only with
 *                                        that member's MAC, goes to another
 *                                        member's port only, and only from
 *                                        that member's own addresses (IPv4,
 *                                        ARP, IPv6 with its neighbour
 *                                        discovery); nothing
 *                                        to or from the namespace itself
 *
 * Two jobs never share a namespace, so nothing links them; nothing is ever
 * made in the host's namespace. */
#ifndef FY_LINUX_JOBNET_H
#define FY_LINUX_JOBNET_H

#include <stdint.h>

#include "backend.h"

#define LJN_MEMBER_IF "job0"
#define LJN_BRIDGE_IF "jb"
#define LJN_SUBNET    0x64500000u /* 100.80.0.0/24, host order; member i is .(i+1) */
#define LJN_PREFIX    24
/* IPv6: fd66:7973:2::/64 (the project's fd66:7973::/32; the restricted
 * router's links are fd66:7973::/64 and fd66:7973:1::/48); member i is
 * fd66:7973:2::(i+1), hex, on an on-link /120, which holds the 254
 * members: each address on the link a member sends to takes an entry of
 * the kernel's neighbour table, which every network namespace shares (an
 * exploration, session 35: 200 datagrams to unused addresses of a /64
 * made 400 entries host-wide, of the 1024 the table holds by default).
 * No link-local address, no duplicate address detection (linux-netlink.c). */
#define LJN_PREFIX6   120
#define LJN_SUBNET6_TEXT "fd66:7973:2::"

/* Member index's IPv6 address. */
void ljn_member_addr6(uint32_t index, uint8_t out[16]);

/* The job's namespace, bridge and rules (one nf_tables netlink batch in
 * it, linux-nftnl.c); the backend's job_make. */
int ljn_make(uint32_t nmembers, void **ret, fy_error **reterr);
/* Removes the rules and the bridge, checks that nothing but the loopback
 * is left (the witness), then drops the only reference to the namespace:
 * the number of objects that could not be removed. */
uint32_t ljn_free(void *job);
/* In a forked copy of the host: lets go of the fds, removes nothing. */
void ljn_forget(void *job);
/* Member index's veth between sandbox_ns and the bridge, its address and
 * links up (between the sandbox's clone and its go-ahead). */
int ljn_attach(void *job, uint32_t index, int sandbox_ns, fy_error **reterr);
/* Removes member index's link (the pair goes with it) and looks it up
 * again: 0 when witnessed gone, else 1. */
uint32_t ljn_detach(void *job, uint32_t index);

/* The "network" member of the isolation record of member index (JSON
 * text, malloc'd). */
char *ljn_describe(const char *member, uint32_t index);

#endif
