/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper programs the backends may use (linux-probe.c has the rules):
 * pasta and bwrap are looked up, never run (nft is not needed: the
 * routers' and job networks' rules are netlink batches); the OCI runtimes (crun,
 * runc) are asked their version and judged (linux-runc.c). */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-helper.h"
#include "linux-nftnl.h"
#include "linux-probe-internal.h"
#include "linux-probe-util.h"
#include "linux-runc.h"

/* ------------------------------------------------------------------ */
/* helper programs                                                    */
/* ------------------------------------------------------------------ */

/* Root's restricted networking: the sandbox's own table, exactly as an
 * attempt makes it (lnft_direct_build: the inet family, the output and
 * input hooks, conntrack, interface and address matches), committed in a
 * network namespace of a forked child's own, which takes it along when it
 * exits. Nothing of the host's namespace is touched. A kernel without
 * nf_tables, or without one of the expressions, refuses the batch. */
#define NFT_DEADLINE_MS 2000

struct nft_report {
    uint32_t magic;
    int32_t op; /* 0 committed, 1 unshare, 2 socket, 3 the batch */
    int32_t err;
};
#define NFT_MAGIC 0x6e667431u

static void nft_child(void *arg, int wfd) {
    const struct lnft_batch *b = arg;
    struct nft_report rep = {NFT_MAGIC, 1, 0};
    int s = -1, r = 0;
    if (unshare(CLONE_NEWNET) < 0)
        rep.err = errno;
    else if (rep.op = 2, (s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER)) < 0)
        rep.err = errno;
    else if (rep.op = 3, (r = lnft_batch_apply(s, b)) < 0)
        rep.err = -r;
    else
        rep.op = 0;
    lp_cw_report(wfd, &rep, sizeof rep);
}

/* "" when the table went in, else why (into why); true when the child did
 * not report in time. */
static bool nft_run_once(const struct lnft_batch *b, int ms, char *why, size_t len) {
    static const char *const op_name[] = {"", "unshare(CLONE_NEWNET)", "socket(NETLINK_NETFILTER)",
                                          "committing the sandbox's nf_tables table"};
    struct child ch;
    uint64_t deadline = pu_deadline_after_ms(ms);
    int r = lp_child_start(&ch, nft_child, (void *)b, -1);
    why[0] = '\0';
    if (r < 0) {
        snprintf(why, len, "fork: %s", strerror(-r));
        return false;
    }
    struct nft_report rep;
    ssize_t n = lp_read_deadline(ch.rfd, &rep, sizeof rep, deadline);
    bool killed = false;
    lp_child_finish(&ch, deadline, &killed);
    if (n != (ssize_t)sizeof rep || rep.magic != NFT_MAGIC || rep.op < 0 || rep.op > 3) {
        snprintf(why, len, "the nf_tables probe child did not report within %d ms%s", ms, killed ? " (killed)" : "");
        return killed || n == -ETIMEDOUT;
    }
    if (rep.op != 0)
        snprintf(why, len, "%s failed: %s", op_name[rep.op], strerror(rep.err));
    return false;
}

static void probe_nftables_root(fy_caps *c) {
    static const struct lnft_tuple t = {.family = 4, .prefix = 24, .addr = {198, 51, 100, 0},
                                        .proto = 6, .port_min = 443, .port_max = 443};
    const struct lnft_direct d = {.link_if = "eth0", .sb4 = {100, 127, 0, 2},
                                  .sb6 = {0xfd, 0x66, 0x79, [15] = 2}, .tuples = &t, .ntuples = 1};
    struct lnft_batch b = {0};
    char why[256] = "";
    if (lnft_direct_build(&d, &b) < 0)
        snprintf(why, sizeof why, "building the probe's table: out of memory");
    else if (nft_run_once(&b, lp_try_deadline_ms(NFT_DEADLINE_MS, 0), why, sizeof why) &&
             nft_run_once(&b, lp_try_deadline_ms(NFT_DEADLINE_MS, 1), why, sizeof why))
        c->inconclusive = true;
    lnft_batch_free(&b);
    if (!why[0]) {
        caps_set(c, FY_CAP_NFTABLES, true, 1, "as root: the rules in each sandbox's own network namespace, made by "
                 "the host (a router namespace for a job member or a VM), and a bridge namespace per job network, "
                 "as one nf_tables netlink batch each (no nft program; a probe's table committed in a namespace "
                 "of its own)");
        return;
    }
    caps_set(c, FY_CAP_NFTABLES, false, 0, "as root, but the kernel refused a sandbox's nf_tables table: %s", why);
    caps_set_hint(c, FY_CAP_NFTABLES, "a kernel with nf_tables and its inet family, conntrack and meta "
                  "expressions (CONFIG_NF_TABLES, CONFIG_NF_TABLES_INET, CONFIG_NFT_CT; Debian's do), or the "
                  "modules loadable (nf_tables)");
}

int lp_probe_programs(fy_caps *c, bool is_root) {
    lp_probe_runtimes(c, is_root);

    /* No nft program is needed: the routers' and job networks' rules go in
     * as nf_tables netlink batches (linux-nftnl.c). */
    const char *helper_net = is_root ? NULL : caps_fact(c, LX_FACT_HELPER_NET);
    if (helper_net) /* (linux-helper.c asked it: restricted networking comes from it) */
        caps_set(c, FY_CAP_NFTABLES, true, 1, "through the privileged helper at %s (its router namespace, veths "
                 "and nftables rules per attempt; uplink: %s)", caps_fact(c, LX_FACT_HELPER_NET_SOCKET), helper_net);
    else if (is_root)
        probe_nftables_root(c);
    else {
        caps_set(c, FY_CAP_NFTABLES, false, 0, "not root: nftables filtering of a sandbox's veth on the host needs "
                 "CAP_NET_ADMIN there");
        caps_set_hint(c, FY_CAP_NFTABLES, "run as root or through the privileged helper, or use "
                      "pasta for rootless restricted networking (its router's rules in a user namespace of the "
                      "library's own)");
    }

    char *pasta = pu_find_program("pasta");
    if (pasta)
        caps_set(c, FY_CAP_PASTA, true, 1, "%s found (not run by the probe)", pasta);
    else {
        caps_set(c, FY_CAP_PASTA, false, 0, "pasta not found in PATH or the system directories");
        caps_set_hint(c, FY_CAP_PASTA, "install passt (apt install passt), which provides pasta");
    }
    free(pasta);

    char *bwrap = pu_find_program("bwrap");
    (void)caps_set_fact(c, LX_FACT_BWRAP, bwrap);
    free(bwrap);
    return 0;
}
