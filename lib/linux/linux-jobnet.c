/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Job networks as root (linux-jobnet.h has the topology). The namespace is
 * made when the host starts the job's first member (fy_start on a plan of
 * fy_prepare_member) and removed when the host has freed the job network
 * and its last member has ended (api-jobnet.c decides when; this file only
 * makes and removes). Configuration is rtnetlink (linux-netlink.c) over a
 * socket made in the job's namespace; the rules go in as one nf_tables
 * batch (linux-nftnl.c) over a netfilter socket made there. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <jansson.h>

#include "linux-helper.h"
#include "linux-jobnet.h"
#include "linux-net.h"
#include "linux-netlink.h"
#include "linux-nftnl.h"
#include "linux-probe-util.h"


struct ljn {
    int ns;                /* the job's namespace: our only reference to it */
    int nl;                /* NETLINK_ROUTE socket in it */
    uint32_t nmembers;
    pthread_mutex_t mu;    /* nl, the ports */
    /* Without root: the privileged helper owns the job (linux-net-helper.c,
     * lxnh_job_*): its socket and the job's name there; ns and nl stay -1. */
    char *helper;
    char helper_job[72];
};

static void port_name(char out[IFNAMSIZ], uint32_t index) { snprintf(out, IFNAMSIZ, "m%u", (unsigned)index); }

static uint32_t member_addr(uint32_t index) { return htonl(LJN_SUBNET + index + 1); }

void ljn_member_addr6(uint32_t index, uint8_t out[16]) {
    static const uint8_t base[16] = {0xfd, 0x66, 0x79, 0x73, 0, 2};
    memcpy(out, base, 16);
    out[14] = (uint8_t)((index + 1) >> 8);
    out[15] = (uint8_t)((index + 1) & 0xff);
}

static int jn_fail(fy_error **reterr, int e, const char *what) {
    return err_set(reterr, err_from_errno(e), FY_STEP_JOBNET, e, NULL, "job network: %s: %s", what, strerror(e));
}

/* The job's rules (linux-nftnl.h has them as nft would list them): a
 * frame enters the bridge only with its port's member's MAC as its
 * Ethernet source (checked before the bridge learns the source), and is
 * forwarded only from one member's port to another's, and only carrying
 * that member's own addresses (IPv4 from its IPv4 address, ARP from its
 * MAC and IPv4 address; IPv6, neighbour discovery included, from its IPv6
 * address: with no link-local address its solicitations carry that one;
 * no neighbour advertisement for another address; everything else
 * dropped); the namespace itself takes and sends nothing on the bridge. Every declared member's port is written now: the ports are
 * named by index, so members join without another batch. One batch, one
 * commit: 0 or -errno. */
static int add_rules(const struct ljn *j) {
    struct lnft_member *m = calloc(j->nmembers, sizeof(*m));
    if (!m)
        return -ENOMEM;
    for (uint32_t i = 0; i < j->nmembers; i++) {
        uint32_t a = member_addr(i);
        port_name(m[i].port, i);
        memcpy(m[i].a4, &a, 4);
        ljn_member_addr6(i, m[i].a6);
        lnft_job_member_mac(i, m[i].mac);
    }
    int s = lxn_nf_open(j->ns);
    int e = s < 0 ? s : lnft_job_apply(s, m, j->nmembers);
    if (s >= 0)
        close(s);
    free(m);
    return e;
}

/* The rules deleted, then the namespace's tables counted: 0 when none is
 * left, else 1. */
static uint32_t remove_rules(const struct ljn *j) {
    int s = lxn_nf_open(j->ns);
    if (s < 0)
        return 1;
    int e = lnft_job_delete(s), n = lnft_table_count(s);
    close(s);
    return (e < 0 && e != -ENOENT) || n != 0 ? 1 : 0;
}

/* ---- deletions off the caller's thread ----
 * The kernel unlists a deleted link at once, then waits for RCU grace
 * periods (tens of ms) before the request returns. The deletion runs on a
 * detached thread with a netlink socket (and a namespace fd) of its own,
 * which it closes; the caller witnesses by looking the name up until it is
 * gone (SIOCGIFINDEX: an RCU lookup, not behind the deletion's lock),
 * bounded. Where no thread can be made, the deletion is synchronous. */

/* lnl_link_del_detached on a netlink socket of ns; false: not started
 * (hand_ns still the caller's). */
static bool del_async(int ns, const char *name, int hand_ns) {
    int s = lxn_nl_open(ns);
    if (s < 0)
        return false;
    if (lnl_link_del_detached(s, name, hand_ns) < 0) {
        close(s);
        return false;
    }
    return true;
}

struct sock_args { int fd; };
static int make_dgram(void *p) {
    struct sock_args *a = p;
    a->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    return a->fd < 0 ? -errno : 0;
}

/* Whether name is gone from namespace ns within ms (lnl_link_unlisted). */
static bool wait_unlisted(int ns, const char *name, int ms) {
    struct sock_args a = {-1};
    if (lxn_in_netns(ns, make_dgram, &a) < 0)
        return false;
    bool gone = lnl_link_unlisted(a.fd, name, ms);
    close(a.fd);
    return gone;
}

/* Deletes name in ns (on a thread when one can be made, which then also
 * closes hand_ns) and witnesses it gone: 0, or 1 when it is still there. */
static uint32_t delete_link(int nl, int ns, const char *name, int hand_ns) {
    if (del_async(ns, name, hand_ns))
        return wait_unlisted(ns, name, UNLIST_DEADLINE_MS) ? 0 : 1;
    if (hand_ns >= 0)
        close(hand_ns);
    int e = lnl_link_del(nl, name);
    return (e < 0 && e != -ENODEV) || lnl_link_exists(nl, name) != 0 ? 1 : 0;
}

static void release(struct ljn *j) {
    free(j->helper);
    pu_fork_close_fd(&j->nl); /* (a netlink socket holds its namespace too) */
    pu_fork_close_fd(&j->ns);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* Without root: the job is the privileged helper's (fy_prepare let the
 * plan through only when the probe found one offering it). */
static int make_at_helper(uint32_t nmembers, void **ret, fy_error **reterr) {
    struct ljn *j = calloc(1, sizeof(*j));
    if (!j || !(j->helper = strdup(lx_helper_socket()))) {
        free(j);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JOBNET, 0, NULL, "out of memory");
    }
    j->ns = j->nl = -1;
    j->nmembers = nmembers;
    pthread_mutex_init(&j->mu, NULL);
    int r = lxnh_job_create(j->helper, nmembers, j->helper_job, reterr);
    if (r < 0) {
        release(j);
        return r;
    }
    *ret = j;
    return 0;
}

int ljn_make(uint32_t nmembers, void **ret, fy_error **reterr) {
    *ret = NULL;
    if (geteuid() != 0)
        return make_at_helper(nmembers, ret, reterr);
    struct ljn *j = calloc(1, sizeof(*j));
    if (!j)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JOBNET, 0, NULL, "out of memory");
    j->nmembers = nmembers;
    j->nl = -1;
    pthread_mutex_init(&j->mu, NULL);
    int r = 0, e, br;
    if ((j->ns = lxn_new_attempt_netns()) < 0) {
        r = jn_fail(reterr, -j->ns, "creating the job's namespace");
    } else if ((j->nl = lxn_nl_open(j->ns)) < 0 || (pu_fork_close_add(j->nl), false)) {
        r = jn_fail(reterr, -j->nl, "netlink socket");
    } else if ((e = lnl_link_bridge(j->nl, LJN_BRIDGE_IF)) < 0 || (e = lnl_link_up(j->nl, LJN_BRIDGE_IF)) < 0) {
        r = jn_fail(reterr, -e, "the job's bridge");
    } else if ((br = lnl_ifindex(j->nl, LJN_BRIDGE_IF)) < 0) {
        r = jn_fail(reterr, -br, "the job's bridge");
    } else if ((e = add_rules(j)) < 0) {
        /* (after the bridge: a bridge-family table made in a namespace
         * before its first bridge was listed but never consulted by the
         * kernel here, 6.18: test-net-api section 6c) */
        r = jn_fail(reterr, -e, "its nftables table (one netlink batch)");
    }
    if (r < 0) {
        release(j); /* (the namespace goes with our only reference) */
        return r;
    }
    *ret = j;
    return 0;
}

int ljn_attach(void *job, uint32_t index, int sandbox_ns, fy_error **reterr) {
    struct ljn *j = job;
    if (!j || index >= j->nmembers)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_JOBNET, 0, NULL, "job network: no member %u", (unsigned)index);
    if (j->helper)
        return lxnh_job_add(j->helper, j->helper_job, index, sandbox_ns, reterr);
    char port[IFNAMSIZ];
    port_name(port, index);
    int ss = lxn_nl_open(sandbox_ns);
    if (ss < 0)
        return jn_fail(reterr, -ss, "netlink socket in the member's namespace");
    pthread_mutex_lock(&j->mu);
    int e, br = 0, eth = 0, r = 0;
    const char *what = NULL;
    uint32_t addr = member_addr(index);
    uint8_t addr6[16], mac[6];
    ljn_member_addr6(index, addr6);
    /* (job0's MAC fixed by the index: a member started again keeps the one
     * its running peers' neighbour entries hold, IPv4 and IPv6) */
    lnft_job_member_mac(index, mac);
    if ((e = lnl_link_veth_mac(j->nl, port, LJN_MEMBER_IF, sandbox_ns, mac)) < 0)
        what = "veth to the member";
    else if ((br = lnl_ifindex(j->nl, LJN_BRIDGE_IF)) < 0 || (eth = lnl_ifindex(ss, LJN_MEMBER_IF)) < 0)
        e = br < 0 ? br : eth, what = "interface index";
    else if ((e = lnl_link_master(j->nl, port, br)) < 0)
        what = "the member's port on the bridge";
    else if ((e = lnl_link_up(j->nl, port)) < 0 || (e = lnl_addr_add(ss, eth, AF_INET, &addr, LJN_PREFIX)) < 0 ||
             (e = lnl_addr_add(ss, eth, AF_INET6, addr6, LJN_PREFIX6)) < 0 || (e = lnl_link_up(ss, LJN_MEMBER_IF)) < 0)
        what = "the member's link and address";
    if (what) {
        r = jn_fail(reterr, -e, what);
        if (e != -EEXIST) /* (an existing port is another attempt's) */
            (void)lnl_link_del(j->nl, port);
    }
    pthread_mutex_unlock(&j->mu);
    /* (outside the lock: other members link meanwhile; the ioctl needs no
     * exclusive use of the job's socket) */
    if (!what && (e = lnl_links_running(j->nl, port, ss, LJN_MEMBER_IF, RUNNING_DEADLINE_MS)) < 0) {
        r = jn_fail(reterr, -e, "the member's link running (IFF_RUNNING) once up");
        pthread_mutex_lock(&j->mu);
        (void)lnl_link_del(j->nl, port);
        pthread_mutex_unlock(&j->mu);
    }
    close(ss);
    return r;
}

uint32_t ljn_detach(void *job, uint32_t index) {
    struct ljn *j = job;
    if (!j)
        return 0;
    if (j->helper)
        return lxnh_job_del(j->helper, j->helper_job, index);
    char port[IFNAMSIZ];
    port_name(port, index);
    pthread_mutex_lock(&j->mu);
    /* (A member's namespace that went first took the pair along: gone.) */
    uint32_t left = delete_link(j->nl, j->ns, port, -1);
    pthread_mutex_unlock(&j->mu);
    return left;
}

uint32_t ljn_free(void *job) {
    struct ljn *j = job;
    if (!j)
        return 0;
    uint32_t left = 0;
    if (j->helper) {
        left = lxnh_job_destroy(j->helper, j->helper_job);
        release(j);
        return left;
    }
    /* The rules: deleted, then the tables counted: none may be left. */
    left += remove_rules(j);
    /* The bridge (and any port a member left: none when every member
     * detached); then nothing but the loopback may be there. */
    for (uint32_t i = 0; i < j->nmembers; i++) {
        char port[IFNAMSIZ];
        port_name(port, i);
        (void)lnl_link_del(j->nl, port);
    }
    /* The bridge's deletion runs on a thread that holds a namespace fd of
     * its own until it is done (then the kernel may destroy it). */
    left += delete_link(j->nl, j->ns, LJN_BRIDGE_IF, fcntl(j->ns, F_DUPFD_CLOEXEC, 3));
    int n = lnl_link_count(j->nl);
    if (n != 1)
        left += n < 0 ? 1 : (uint32_t)(n - 1);
    /* The namespace runs no process, is mounted nowhere and holds no
     * socket but nl: closing nl and ns drops its last reference, and the
     * kernel destroys it. */
    release(j);
    return left;
}

void ljn_forget(void *job) {
    struct ljn *j = job;
    if (j)
        release(j); /* (the helper's job is the parent's to remove; closing our copies of the parent's fds removes nothing while the parent holds its own) */
}

char *ljn_describe(const char *member, uint32_t index) {
    char a[INET_ADDRSTRLEN + 4], a6[INET6_ADDRSTRLEN + 4];
    uint32_t addr = member_addr(index);
    uint8_t addr6[16];
    ljn_member_addr6(index, addr6);
    inet_ntop(AF_INET, &addr, a, INET_ADDRSTRLEN);
    snprintf(a + strlen(a), 4, "/%u", (unsigned)LJN_PREFIX);
    inet_ntop(AF_INET6, addr6, a6, INET6_ADDRSTRLEN);
    snprintf(a6 + strlen(a6), 5, "/%u", (unsigned)LJN_PREFIX6);
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s}}", "mode", "deny", "mechanism", "job-bridge-netns", "enforcement",
        "own network namespace with one veth to the job's bridge in a per-job namespace owned by the host's user "
        "namespace; nftables (bridge family) there forward only between the job's members, each from its own "
        "MAC and addresses (IPv4 and IPv6); no route beyond the job's /24 and /120, nothing to or from the host or "
        "another job",
        "job", "member", member, "address", a, "address6", a6, "names",
        "the job's members in /etc/hosts (IPv4, then IPv6)");
    if (o && geteuid() != 0) /* (make_at_helper) */
        json_object_set_new(json_object_get(o, "job"), "helper",
                            json_sprintf("the job's namespace, bridge, rules and links made and removed by the "
                                         "privileged helper at %s", lx_helper_socket()));
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}
