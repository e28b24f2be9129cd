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

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* A network namespace file (/run/netns/NAME, /proc/PID/ns/net) opened for
 * setns: the fd, or -errno; -EINVAL when path is something else (a FIFO
 * is opened without waiting for a writer, then refused). */
static inline int lnl_open_netns(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

/* Makes s's replies time out after 5 s (a kernel that never answers must not
 * hang an attempt). Returns s. */
int lnl_ready(int s);

/* A veth pair: name in s's namespace, its peer called peer_name moved to the
 * namespace open at peer_ns. */
int lnl_link_veth(int s, const char *name, const char *peer_name, int peer_ns);
/* The same, the peer's MAC address peer_mac (6 bytes; NULL: the kernel's
 * random one). */
int lnl_link_veth_mac(int s, const char *name, const char *peer_name, int peer_ns, const uint8_t *peer_mac);
/* Up, with no IPv6 link-local address (nothing here routes by one, so none
 * sits tentative and a sandbox has no fe80:: address to reach a router by). */
int lnl_link_up(int s, const char *name);
int lnl_link_del(int s, const char *name);
/* lnl_link_del(s, name) on a detached thread (every signal blocked) that
 * then closes s and also_close (>= 0: a descriptor the caller hands over
 * with it, or -1): 0, or -1 when no thread could be made (nothing deleted,
 * nothing closed: both are still the caller's). The kernel unlists the link
 * at once and returns only after its RCU grace periods (tens of ms), which
 * nobody then waits for. */
int lnl_link_del_detached(int s, const char *name, int also_close);
/* Closes two fds (-1: none) on a detached thread, for descriptors whose
 * close is a device's synchronous unregistering (a tun's or tap's last
 * fd: RCU grace periods, tens of ms); its witness is lnl_link_unlisted.
 * 0, or -1 when no thread could be made (both still the caller's). */
int lnl_close_detached(int a, int b);
/* Whether the link name is gone within ms, looked up by SIOCGIFINDEX on q
 * (any socket of the link's namespace, a netlink one too: an RCU lookup,
 * not behind the deletion's lock) every 0.1 ms. */
bool lnl_link_unlisted(int q, const char *name, int ms);
/* 0 once the links a (looked up on qa, any socket of its namespace) and b
 * (on qb) are both up and running (IFF_UP|IFF_RUNNING by SIOCGIFFLAGS),
 * -ETIMEDOUT when they are not within ms, -errno when one cannot be looked
 * up. Of a veth pair brought up one end after the other, the end that came
 * up first has its carrier, operational state and (when its queue was not
 * started at once) its transmit queue settled by the kernel's link-watch
 * work: deferred by up to a second when the queue runs already, and always
 * behind the lock every network configuration of the host takes, so it may
 * run after the workload has started (until a queue is started, what is
 * sent through it is dropped). An
 * ETHTOOL_GLINK request on each end first makes the kernel do that work
 * for the link at once (linkwatch_sync_dev), so the wait is normally none;
 * a kernel that does not, or a lock held long, is waited for. */
int lnl_links_running(int qa, const char *a, int qb, const char *b, int ms);
/* How long links may take to run once up (lnl_links_running). */
#define RUNNING_DEADLINE_MS 10000
/* How long a deletion's witness waits for the name to be unlisted
 * (normally microseconds; the lock every network change takes can be held
 * for seconds by the kernel's removal of many namespaces). */
#define UNLIST_DEADLINE_MS 10000
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
/* The same for either of two addresses, in one dump. */
int lnl_addr_in_use2(int s, uint32_t a, uint32_t b);

/* A root caller's reservation of slot of the link subnet base/len in the
 * uplink namespace uplink_fd, among every root process (the library's and
 * the helper's): an OFD lock on byte slot of a file for that namespace in
 * LNL_SLOT_DIR, a directory only root may write. The kernel drops it with
 * the descriptor, a crashed process's included. (It was an abstract unix
 * socket's name, which has no owner: any local user could bind all 16384
 * and refuse every root caller's restricted network.) The descriptor, or
 * -EADDRINUSE (held), or -errno. */
#define LNL_SLOT_DIR "/run/forgeyard-net-slots"
int lnl_reserve_slot(int uplink_fd, uint32_t base, uint32_t len, uint32_t slot);
/* Ends a reservation: its file removed when no slot of it is held. */
void lnl_release_slot(int fd);

/* An entry of a namespace's local routing table (lnl_local_routes): an
 * address or block the namespace delivers to itself. */
struct lnl_local_route {
    uint8_t family;  /* 4 or 6 */
    uint8_t prefix;  /* its length: 32 or 128 for one address */
    uint8_t type;    /* RTN_LOCAL, RTN_BROADCAST or RTN_ANYCAST */
    uint8_t addr[16];
};
/* Calls fn(route, arg) for every local, broadcast and anycast route of
 * table local (RT_TABLE_LOCAL) of s's namespace, IPv4 then IPv6: its own
 * addresses (on any interface, loopback included), its interfaces'
 * broadcast addresses, the IPv6 anycast ones (a prefix's subnet-router
 * address while it forwards), and any "local" block an operator routed
 * (AnyIP: `local 192.0.2.0/24 dev lo`). Multicast routes are not listed.
 * 0, or -errno (the listing is then incomplete: fail closed). s is set to
 * strict checking (NETLINK_GET_STRICT_CHK) so that the kernel sends table
 * local only; a kernel without it sends every table, filtered here. */
int lnl_local_routes(int s, void (*fn)(const struct lnl_local_route *r, void *arg), void *arg);

/* Several requests in one message to the kernel (one sendmsg; the kernel
 * handles them in order, each acknowledged): fewer system calls and
 * wake-ups for a router's set-up. lnl_batch_send returns 0 when every one
 * succeeded, else the first failure's -errno (the ones after it were
 * still tried: a caller tears the whole down on failure). A batch that
 * outgrows its buffer fails with -E2BIG at the send, nothing sent. */
struct lnl_batch {
    union {
        uint32_t align;
        char buf[4096];
    } u;
    uint32_t len;
    uint32_t n;
    uint32_t seq[24];
    uint8_t tolerant[24]; /* errors ignored for this one (link_up's first step, as lnl_link_up) */
    int overflow;
};
void lnl_batch_init(struct lnl_batch *b);
void lnl_batch_addr_add(struct lnl_batch *b, int ifindex, int family, const void *addr, unsigned prefix);
void lnl_batch_link_up(struct lnl_batch *b, const char *name);
void lnl_batch_route_default(struct lnl_batch *b, int ifindex, int family, const void *gw);
int lnl_batch_send(int s, struct lnl_batch *b);

/* A bridge (no STP: its ports forward as soon as they are up). */
int lnl_link_bridge(int s, const char *name);
/* Makes name a port of the bridge master_ifindex. */
int lnl_link_master(int s, const char *name, int master_ifindex);
/* How many links s's namespace has (its loopback included). */
int lnl_link_count(int s);

#endif
