/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode restricted as root (linux-net.c). A namespace sandbox's
 * own network namespace is made by the library before the clone and owned
 * by the host's user namespace (so nothing the workload gains inside its
 * own can touch it); its nftables rules let only the plan's tuples
 * (struct plan_net_rule) leave on its veth to the uplink, the namespace
 * the host program names (FY_NETHOST_UPLINK) or the host's own
 * (lxn_direct). Through the privileged helper, rootless, for a job member
 * or a VM's tap the sandbox's namespace instead gets a veth to a
 * per-attempt router namespace the library creates and owns, whose rules
 * forward the same tuples to the uplink. Everything is per attempt: made
 * before the second go-ahead, removed at cleanup. */
#ifndef FY_LINUX_NET_H
#define FY_LINUX_NET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "linux-probe-util.h"
#include "linux-proxy.h"

struct linux_plan;
struct fy_plan;

/* The sandbox's own link (fixed: each pair of namespaces is private). */
#define LXN_SANDBOX_IF   "eth0"
#define LXN_ROUTER_SB_IF "sb"
#define LXN_ROUTER_UP_IF "up"
#define LXN_DEFAULT_LINK_SUBNET "100.127.0.0/16"

/* What linux_plan_compile keeps for a restricted plan. */
struct lxn_plan {
    const char *uplink;         /* namespace file, or NULL: the host's */
    uint32_t link_base;         /* host order */
    uint32_t link_len;          /* 16..24 */
    uint32_t mode;              /* FY_NET_RESTRICTED or FY_NET_FETCH_ONLY */
    struct lxp_config *proxy;   /* fetch-only: what the proxy enforces (linux-proxy.h) */
    /* Restricted for an unprivileged caller through the privileged helper
     * (linux-net-helper.c): its socket and uplink; the rules go to it as
     * tuples (np's, kept by the prepared object). NULL: not through it. */
    const char *helper;
    const char *helper_uplink;
    uint16_t helper_version;    /* the protocol to ask it in (0: ours) */
    const struct plan_net_rule *rules;
    size_t nrules;
    bool rootless;              /* restricted without root: linux-net-user.c (pasta uplink) */
    const char *pasta;          /* rootless: the pasta program (absolute) */
    struct lxp_config *dns;     /* the DNS stub's names and addresses, or NULL: no stub */
    /* A member of a job network (linux-jobnet.c) under deny: no router,
     * only the veth to the job's bridge. */
    bool job;
    uint32_t job_index;
    const char *job_member;
    bool vm_tap;                /* a VM's router (linux-net-vm.c): sb is a tap its VMM holds */
};

/* Per attempt. */
struct lxn_run {
    int router_fd;              /* the router namespace (-1: none) */
    int uplink_fd;              /* the uplink namespace (-1: none) */
    char uplink_if[16];         /* the router's peer in the uplink namespace ("": none) */
    uint32_t slot;              /* which /30 of the link subnet */
    int slot_lock;              /* an abstract socket in the uplink namespace that reserves the slot */
    /* Rootless: the forked child that makes the router namespace and applies
     * its nftables batch (no nft program runs anywhere any more; the names
     * are kept, lxn_i_finish_nft is in the ABI dump's internal symbols). */
    struct pu_proc nft;         /* that child, started by lxn_begin, waited for by lxn_finish */
    bool nft_running;
    bool del_started;              /* the uplink link's deletion runs (lxn_teardown_begin) */
    int nft_out;                /* what that child said (a memfd) */
    const struct lxn_plan *lp;  /* set by lxn_begin */
    struct lxp_run proxy;       /* fetch-only: the attempt's proxy */
    char *report;               /* fetch-only: the result's "network" record, made at teardown */
    char helper_name[72];       /* through the helper: the attempt's router there ("": none) */
    char helper_link[16];       /* its veth in the helper's uplink */
    struct lxnu_run *user;      /* rootless restricted (linux-net-user.c), or NULL */
    struct lxp_run dns;         /* the attempt's DNS stub (fy-proxy in its DNS mode) */
    /* lxn_begin_async: the thread making the router, joined by lxn_finish
     * or lxn_teardown (meanwhile the caller touches only dns: lxn_finish
     * starts the stub before it joins) */
    bool begin_pending;
    pthread_t begin_thread;
    int begin_r;
    fy_error *begin_err;
    void *job;                  /* a job member: the job's network (linux-jobnet.c), set at start */
    int sandbox_fd;             /* direct (lxn_direct): the sandbox's network namespace, made by
                                   lxn_begin_async before the clone (-1: none) */
    bool job_linked;            /* ... and its port on the bridge was made */
};

/* At fy_prepare (linux_plan_compile): checks what restricted needs and
 * keeps its tuples for the router's netlink batch, or for fetch-only the proxy's allowlist and
 * credentials (FY_NETHOST_CREDENTIALS); FY_E_UNSUPPORTED naming what is
 * missing. */
int lxn_compile(struct lxn_plan *out, struct linux_plan *pl, const struct fy_plan *np, bool is_root,
                fy_error **reterr);
/* Restricted as root: the router's rules are an nf_tables batch of the
 * host's, so a host whose probe found nf_tables refused is refused at
 * fy_prepare (FY_E_UNSUPPORTED naming it), for the namespace backend's
 * sandboxes and a VM's router alike, never at the start. */
int lxn_require_nftables(const fy_caps *c, fy_error **reterr);
/* The fetch-only proxy's allowlist, Landlock ports and credentials from
 * the plan (lxn_compile's, also the VM backend's through the family). */
int lxn_fetch_config(const struct fy_plan *np, struct arena *arena, struct lxp_config **ret, fy_error **reterr);
/* The DNS stub's table (names and their addresses resolved at prepare),
 * or NULL where the stub cannot run (pl->exec_init, the program) or the
 * policy takes the host's resolvers; in pl's arena. */
struct lxp_config *lxn_dns_config(struct linux_plan *pl, const struct fy_plan *np);
/* The "network" member of the isolation record (JSON text, malloc'd). */
char *lxn_describe(const struct lxn_plan *lp, const struct fy_plan *np, const struct linux_plan *pl);
/* A job member's Landlock TCP connect layer: what lxn_landlock_ports gives
 * its mode, plus the ports it declared for the other members
 * (network.job.ports); left out above LX_LL_MAX_TCP_PORTS. Called only
 * when it declared some. */
void lxn_landlock_job_ports(struct linux_plan *pl, const struct fy_plan *np);
/* Landlock's TCP connect layer: pl->ll_tcp_ports from the plan's TCP rules
 * (after pl->ll_abi is known; left out above LX_LL_MAX_TCP_PORTS ports). */
void lxn_landlock_ports(struct linux_plan *pl, const struct fy_plan *np);

/* At start, before the clone: the router namespace, its rules (one
 * netlink batch), its uplink veth, addresses and route, forwarding on once
 * the rules stand (direct: the sandbox's namespace, its rules and link).
 * On failure nothing is left. */
int lxn_begin(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr);
/* lxn_begin on a thread of its own, for a caller with other work
 * meanwhile (the clone): lxn_finish reports its error, lxn_teardown waits
 * for it. Rootless, through the helper and fetch-only: lxn_begin itself. */
int lxn_begin_async(struct lxn_run *run, const struct lxn_plan *lp, fy_error **reterr);
/* Restricted as root for a namespace sandbox (not through the helper, not
 * rootless, not a job member, not a VM's tap): no router namespace. The
 * sandbox's own network namespace is made by lxn_begin_async, owned by the
 * host's user namespace, and holds the rules itself (lnft_direct_build);
 * the caller clones the sandbox into it (lxn_sandbox_netns: its fd, -1
 * when not direct) and passes it to lxn_finish. A namespace already in
 * run->sandbox_fd when lxn_begin_async is called (a claimed pre-started
 * shell's, made empty by linux-shell.c) is taken as the sandbox's. */
bool lxn_direct(const struct lxn_plan *lp);
int lxn_sandbox_netns(const struct lxn_run *run);
/* Between the clone and the second go-ahead, sandbox_ns the sandbox's
 * network namespace: once nft's rules stand, forwarding on, the veth to
 * the sandbox with its addresses and routes. On failure nothing is left. */
int lxn_finish(struct lxn_run *run, int sandbox_ns, fy_error **reterr);
/* Instead of lxn_finish, for a VM (linux-net-vm.c): once nft's rules
 * stand, forwarding on and the router's "sb" a tap device in the router
 * namespace with the router's addresses; *tap its fd (O_CLOEXEC), which the
 * caller hands to its VMM. The root path, the privileged helper's router
 * (lp->helper: lxnh_finish_tap), or rootless (lp->vm_tap): the pasta
 * path's router with a tap. On failure nothing is left. */
int lxn_finish_tap(struct lxn_run *run, int *tap, fy_error **reterr);
/* Removes what lxn_setup made (idempotent): the number of objects that
 * could not be removed (0: the uplink veth is gone, the proxy reaped:
 * witnessed). */
unsigned lxn_teardown(struct lxn_run *run);
/* lxn_teardown's first steps, for a cleanup with other work to do before
 * it (the sandbox has ended): the DNS stub is sent SIGKILL and the uplink
 * link's deletion is started on its thread; lxn_teardown then reaps and
 * witnesses as always. Removing the network earlier only takes away. */
void lxn_teardown_begin(struct lxn_run *run);
void lxn_run_init(struct lxn_run *run);
/* After lxn_teardown: the result's "network" record (JSON object text,
 * the caller's to free), or NULL (no proxy ran). */
char *lxn_take_report(struct lxn_run *run);
/* In a forked copy of the host: lets go of the fds, removes nothing. */
void lxn_forget(struct lxn_run *run);
/* Through the privileged helper (linux-net-helper.c): restricted for an
 * unprivileged caller when the probe found a helper offering it. */
int lxnh_compile(struct lxn_plan *out, struct linux_plan *pl, const struct fy_plan *np, fy_error **reterr);
int lxnh_finish(struct lxn_run *run, int sandbox_ns, fy_error **reterr);
/* lxn_finish_tap through the helper (protocol 4): its router with a tap as
 * the sandbox-side link, the tap's fd handed to us in *tap. */
int lxnh_finish_tap(struct lxn_run *run, int *tap, fy_error **reterr);
unsigned lxnh_teardown(struct lxn_run *run);
/* Job networks through the helper (linux-jobnet.c without root): the job's
 * name at the helper in name; 0 or an error; the removals return the
 * objects left (1 when the helper could not be asked). */
int lxnh_job_create(const char *helper, uint32_t nmembers, char name[72], fy_error **reterr);
int lxnh_job_add(const char *helper, const char *name, uint32_t index, int member_ns, fy_error **reterr);
uint32_t lxnh_job_del(const char *helper, const char *name, uint32_t index);
uint32_t lxnh_job_destroy(const char *helper, const char *name);

/* The sandbox's network namespace as its init sends it ('N' and the fd) on
 * the go-ahead socket: the fd, or -errno (-ETIMEDOUT, -EPIPE: it died). */
int lxn_recv_netns(int sock, int timeout_ms);

/* For linux-jobnet.c: fn(arg) with the calling thread in namespace ns; a
 * new network namespace owned by the host's user namespace; a netlink
 * socket in ns. */
int lxn_in_netns(int ns, int (*fn)(void *), void *arg);
/* The calling thread into network namespace ns (*back: where it was; 0 or
 * -errno, nothing changed on failure), and back (aborts if it cannot: a
 * host thread must never go on in another namespace). The clone of a
 * restricted sandbox as root runs between the two. */
int lxn_enter(int ns, int *back);
void lxn_leave(int back);
int lxn_new_netns(void);
/* The same for a namespace an attempt (or a job, a shell) owns: no fork
 * of the host keeps it (pu_fork_close_add; a forked worker of a killed
 * host kept its veth, routes and rules). Closed with pu_fork_close_fd. */
int lxn_new_attempt_netns(void);
int lxn_nl_open(int ns);
/* A NETLINK_NETFILTER socket in ns (answers awaited at most 5 s), or
 * -errno. */
int lxn_nf_open(int ns);
/* The router's table as nftables text (malloc'd; NULL on OOM), for tests. */
char *lxn_ruleset_text(const struct lxn_plan *lp);
/* The same table as one nf_tables netlink batch from lp's tuples
 * (linux-nftnl.c): what the root path applies; 0 or -errno. */
int lxn_nft_netlink(int ns, const struct lxn_plan *lp);
/* Only the batch (for a forked child that sends it: linux-net-user.c). */
struct lnft_batch;
int lxn_nft_batch(const struct lxn_plan *lp, struct lnft_batch *out);
/* Direct (lxn_direct): the sandbox namespace's table (lnft_direct_build)
 * with sb4/sb6 (network order) its only sources, applied in ns: 0 or
 * -errno; and the same table as nftables text (malloc'd; test-net-api
 * compares the two). */
int lxn_direct_nft_netlink(int ns, const struct lxn_plan *lp, const void *sb4, const uint8_t sb6[16]);
char *lxn_direct_ruleset_text(const struct lxn_plan *lp, const void *sb4, const uint8_t sb6[16]);

#endif
