/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode restricted without root (linux-net-user.c): the same router
 * namespace and nftables allowlist as the root path (linux-net.c), made in
 * a user namespace of the library's own, uplinked to the host by pasta
 * (Debian's passt) running as the caller. Kept apart from the root path:
 * linux-net.c calls in here only when its plan says rootless. */
#ifndef FY_LINUX_NET_USER_H
#define FY_LINUX_NET_USER_H

#include <stdint.h>

#include "linux-net.h"

/* The sandbox's and the router's link (the same addresses as the root path). */
#define LXN_SB_ROUTER4  0x64400001u /* 100.64.0.1 */
#define LXN_SB_SANDBOX4 0x64400002u /* 100.64.0.2 */
extern const uint8_t lxn_sb_router6[16], lxn_sb_sandbox6[16];

/* nft of linux-net.c, for the rootless path (its rtnetlink requests are
 * linux-netlink.h's). */
int lxn_i_finish_nft(struct lxn_run *run, uint64_t deadline, fy_error **reterr);

/* At fy_prepare, for a caller without root: pasta found (lp->pasta). */
int lxnu_compile(struct lxn_plan *lp, struct linux_plan *pl, const struct fy_plan *np, fy_error **reterr);
/* Before the clone: the library's user namespace with the router
 * namespace in it (its tun toward the sandbox, addresses, forwarding),
 * nft -f started there, pasta started as its uplink. On failure nothing
 * is left. */
int lxnu_begin(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr);
/* Between the clone and the second go-ahead: waits for nft and pasta,
 * makes the sandbox's tun (eth0) in sandbox_ns and starts the relay
 * between the two tuns. On failure nothing is left. */
int lxnu_finish(struct lxn_run *run, int sandbox_ns, fy_error **reterr);
/* Instead of lxnu_finish, for a VM (lp->vm_tap: the router's sb is a
 * tap): waits for nft and pasta; *tap a duplicate of sb's fd for the
 * VMM. No relay runs. On failure nothing is left. */
int lxnu_finish_tap(struct lxn_run *run, int *tap, fy_error **reterr);
/* Ends the relay, pasta (SIGKILL, reaped) and the router's links, then
 * witnesses that they are gone; the number of objects left. Sets
 * run->report (the result's "network" record). */
/* Starts the removal as cleanup begins (pasta killed, the relay thread
 * ended, the tuns closed on a detached thread); lxnu_teardown then
 * witnesses. Idempotent. */
void lxnu_teardown_begin(struct lxn_run *run);
unsigned lxnu_teardown(struct lxn_run *run);
/* The pid of the attempt's pasta (for the state record), or 0. */
pid_t lxnu_uplink_pid(const struct lxn_run *run);
/* In a forked copy of the host: lets go of everything, ends nothing. */
void lxnu_forget(struct lxn_run *run);

#endif
