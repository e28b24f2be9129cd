/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper programs the backends may use (linux-probe.c has the rules):
 * pasta and bwrap are looked up, never run (nft is not needed: the
 * routers' and job networks' rules are netlink batches); the OCI runtimes (crun,
 * runc) are asked their version and judged (linux-runc.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-helper.h"
#include "linux-probe-internal.h"
#include "linux-probe-util.h"
#include "linux-runc.h"

/* ------------------------------------------------------------------ */
/* helper programs                                                    */
/* ------------------------------------------------------------------ */

int lp_probe_programs(fy_caps *c, bool is_root) {
    lp_probe_runtimes(c, is_root);

    /* No nft program is needed: the routers' and job networks' rules go in
     * as nf_tables netlink batches (linux-nftnl.c). */
    const char *helper_net = is_root ? NULL : caps_fact(c, LX_FACT_HELPER_NET);
    if (helper_net) /* (linux-helper.c asked it: restricted networking comes from it) */
        caps_set(c, FY_CAP_NFTABLES, true, 1, "through the privileged helper at %s (its router namespace, veths "
                 "and nftables rules per attempt; uplink: %s)", caps_fact(c, LX_FACT_HELPER_NET_SOCKET), helper_net);
    else if (is_root)
        caps_set(c, FY_CAP_NFTABLES, true, 1, "as root: the rules in each sandbox's own network namespace, made by "
                 "the host (a router namespace for a job member or a VM), and a bridge namespace per job network, "
                 "as one nf_tables netlink batch each (no nft program)");
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
