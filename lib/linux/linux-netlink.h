/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* rtnetlink requests over a NETLINK_ROUTE socket the caller opened in the
 * namespace it means: links (veth pairs, up, delete, lookup), addresses and
 * default routes. Shared by the library's root and rootless router paths
 * (linux-net.c, linux-net-user.c) and the privileged helper (fyh-net.c),
 * which links nothing else of the library: this file depends on libc and
 * the kernel's headers only. Every function returns 0 (or a count, an index,
 * a yes/no) or -errno; none enters a namespace. */
#ifndef FY_LINUX_NETLINK_H
#define FY_LINUX_NETLINK_H

#include <stdint.h>

/* Makes s's replies time out after 5 s (a kernel that never answers must not
 * hang an attempt). Returns s. */
int lnl_ready(int s);

/* A veth pair: name in s's namespace, its peer called peer_name moved to the
 * namespace open at peer_ns. */
int lnl_link_veth(int s, const char *name, const char *peer_name, int peer_ns);
/* Up, with no IPv6 link-local address (nothing here routes by one, so none
 * sits tentative and a sandbox has no fe80:: address to reach a router by). */
int lnl_link_up(int s, const char *name);
int lnl_link_del(int s, const char *name);
/* 1 when the link exists, 0 when it does not. */
int lnl_link_exists(int s, const char *name);
/* The link's index (> 0). */
int lnl_ifindex(int s, const char *name);
/* An address (4 or 16 bytes by family); IPv6 ones without duplicate address
 * detection (IFA_F_NODAD). */
int lnl_addr_add(int s, int ifindex, int family, const void *addr, unsigned prefix);
int lnl_route_default(int s, int ifindex, int family, const void *gw);
/* 1 when an interface of s's namespace has the IPv4 address a (network
 * order), 0 when none has. */
int lnl_addr_in_use(int s, uint32_t a);

/* A bridge (no STP: its ports forward as soon as they are up). */
int lnl_link_bridge(int s, const char *name);
/* Makes name a port of the bridge master_ifindex. */
int lnl_link_master(int s, const char *name, int master_ifindex);
/* How many links s's namespace has (its loopback included). */
int lnl_link_count(int s);

#endif
