/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper's restricted networking (fyh-net.c): for an unprivileged
 * peer's sandbox network namespace, the per-attempt router namespace, its
 * veths and its nftables allowlist that lib/linux/linux-net.c makes itself
 * when the library runs as root. Same topology, same addresses, same
 * uplink link reservations (so root runs and helper runs share an uplink),
 * but built from the helper's own decoded rules: no ruleset text, path or
 * namespace name ever comes from the peer. */
#ifndef FY_HELPER_NET_H
#define FY_HELPER_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fyh-proto.h"

struct fyh_net_attempt {
    int router;       /* the router namespace (ours: the host's user namespace) */
    int slot_lock;    /* reserves the uplink link (an abstract socket in the uplink namespace) */
    char link[16];    /* the uplink's veth, fyXXXXXXXX */
};

/* At start (as root, before the capabilities are dropped): the uplink, a
 * namespace file or "host" (the helper's own network namespace). 0, or
 * -errno with why in buf. */
int fyh_net_init(const char *uplink, char *why, size_t whylen);
/* Whether fyh_net_init succeeded; the uplink in words. */
const char *fyh_net_uplink(void);

/* Checks that ns is a network namespace the peer (uid) could configure
 * itself: owned by a user namespace that uid owns, not ours. 0 or
 * -FYH_E_FD with why. */
int fyh_net_check_ns(int ns, uid_t uid, char *why, size_t whylen);
/* Builds the router for the sandbox namespace ns: 0, or -FYH_E_* with
 * *os_errno and why (nothing left then). */
int fyh_net_create(struct fyh_net_attempt *a, int ns, const struct fyh_net_rule *rules, uint32_t nrules,
                   int *os_errno, char *why, size_t whylen);
/* The same router with a tap device as its sandbox-side link "sb"
 * (protocol 4, the VM backend's): *tap its descriptor (O_CLOEXEC, the
 * tap owned by owner), the caller's to hand over and close. */
int fyh_net_create_tap(struct fyh_net_attempt *a, uid_t owner, int *tap, const struct fyh_net_rule *rules,
                       uint32_t nrules, int *os_errno, char *why, size_t whylen);
/* Removes what fyh_net_create made: the objects that could not be removed
 * (0: the uplink veth is gone, witnessed by a lookup). */
uint32_t fyh_net_remove(struct fyh_net_attempt *a);

/* A job network (protocol 4): linux-jobnet.c's namespace, bridge and
 * rules, ours, for a peer's job; members linked by index. */
struct fyh_job {
    int ns; /* the job's namespace (ours; -1: none) */
    uint32_t nmembers;
};
/* 0, or -FYH_E_* with *os_errno and why (nothing left then). */
int fyh_job_create(struct fyh_job *j, uint32_t nmembers, int *os_errno, char *why, size_t whylen);
/* Links member index's namespace member_ns (checked by the caller with
 * fyh_net_check_ns): 0, or -FYH_E_* (FYH_E_EXISTS: the index is linked
 * already, or the namespace is, as job0; why says which). */
int fyh_job_add(struct fyh_job *j, uint32_t index, int member_ns, int *os_errno, char *why, size_t whylen);
/* Unlinks member index, witnessed by a lookup: the objects left. */
uint32_t fyh_job_del(struct fyh_job *j, uint32_t index);
/* Removes the rules, ports and bridge, checks nothing but the loopback is
 * left, then drops the namespace: the objects left. */
uint32_t fyh_job_destroy(struct fyh_job *j);

/* The capabilities the network work needs (effective only during it). */
uint32_t fyh_net_caps(void);
/* Set by fyh-main.c: raises or lowers them. */
extern void (*fyh_net_raise)(bool on);

#endif
