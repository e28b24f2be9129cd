/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode restricted for an unprivileged caller, through the
 * privileged helper (forgeyard-sandbox-helper(8), lib/linux/helper/fyh-net.c).
 *
 * Which path makes a restricted network: root makes its own router
 * (linux-net.c); an unprivileged caller whose probe found a helper offering
 * networking has the helper make the same router (this file); otherwise the
 * rootless user-mode path. The sandbox is built exactly as for root: its
 * init sends us its network namespace, which we pass to the helper as a
 * descriptor with the allowlist as tuples; the helper checks that the
 * namespace belongs to a user namespace our uid owns (ours: the sandbox's),
 * builds the router namespace, veths and nft rules in its own user
 * namespace, out of the workload's reach, and at the end deletes them and
 * witnesses the uplink's veth gone.
 *
 * A VM's restricted network (linux-net-vm.c) goes the same way with
 * NET_TAP (protocol 4): no namespace is passed; the helper makes the same
 * router with a tap device as its sandbox-side link and hands us the tap's
 * descriptor, which the VM backend gives its VMM. */
#include <errno.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <unistd.h>

#include "linux-helper.h"
#include "linux-net.h"
#include "linux-plan.h"

#define HELPER_NET_TIMEOUT_MS 20000

int lxnh_compile(struct lxn_plan *out, struct linux_plan *pl, const struct fy_plan *np, fy_error **reterr) {
    if (np->net_uplink)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.host",
                       "an unprivileged caller's restricted network goes through the privileged helper at %s, whose "
                       "uplink the operator chose (%s); naming another (%s) needs root",
                       pl->net_helper, pl->net_helper_uplink, np->net_uplink);
    if (np->net_link_subnet && strcmp(np->net_link_subnet, LXN_DEFAULT_LINK_SUBNET) != 0)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.host",
                       "the privileged helper's links are in %s; another link subnet (%s) needs root",
                       LXN_DEFAULT_LINK_SUBNET, np->net_link_subnet);
    if (np->nnet_rules > FYH_NET_RULES_MAX)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.destinations",
                       "the privileged helper takes at most %u allowed tuples (addresses x ports x protocols); "
                       "this policy resolves to %zu", FYH_NET_RULES_MAX, np->nnet_rules);
    struct plan_net_rule *rules = NULL;
    if (np->nnet_rules &&
        !(rules = arena_keep(&pl->arena, calloc(np->nnet_rules, sizeof(*rules)))))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    /* (A job member's destinations in the job's own network: refused by
     * lxn_compile before it comes here, as for root's router.) */
    for (size_t i = 0; i < np->nnet_rules; i++) {
        rules[i] = np->net_rules[i];
        /* The helper refuses these too; here the error can say where. */
        struct fyh_net_rule t = {rules[i].family, rules[i].prefix, 0, 1, 1, {0}};
        memcpy(t.addr, rules[i].addr, 16);
        t.proto = FYH_PROTO_TCP;
        uint32_t a = (uint32_t)t.addr[0] << 24 | (uint32_t)t.addr[1] << 16 | (uint32_t)t.addr[2] << 8 | t.addr[3];
        unsigned c1 = t.prefix < 16 ? t.prefix : 16, c2 = t.prefix < 30 ? t.prefix : 30;
        bool hits = false;
        if (t.family == 4)
            hits = c1 == 0 || (a >> (32 - c1)) == (0x647f0000u >> (32 - c1)) ||
                   (a >> (32 - c2)) == (0x64400001u >> (32 - c2));
        else {
            static const uint8_t l6[4] = {0xfd, 0x66, 0x79, 0x73};
            unsigned p = t.prefix < 32 ? t.prefix : 32;
            hits = true;
            for (unsigned bit = 0; bit < p && hits; bit++)
                hits = !(((t.addr[bit / 8] ^ l6[bit / 8]) >> (7 - bit % 8)) & 1);
        }
        if (hits || !fyh_valid_rule(&t)) {
            char loc[64];
            snprintf(loc, sizeof(loc), "$.network.destinations[%u].host", rules[i].dest);
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                           "destination \"%s\" overlaps the sandbox's links (%s, 100.64.0.0/30, fd66:7973::/32)",
                           np->dests[rules[i].dest].host, LXN_DEFAULT_LINK_SUBNET);
        }
    }
    out->helper = pl->net_helper;
    out->helper_uplink = pl->net_helper_uplink;
    out->helper_version = pl->net_helper_version;
    out->rules = rules;
    out->nrules = np->nnet_rules;
    out->link_base = 0x647f0000u;
    out->link_len = 16;
    return 0;
}

/* NET_CREATE with the sandbox's namespace (sandbox_ns), or NET_TAP
 * (tap != NULL: the router's tap comes back in *tap, checked to be one). */
static int net_create(struct lxn_run *run, int sandbox_ns, int *tap, fy_error **reterr) {
    const struct lxn_plan *lp = run->lp;
    struct fyh_msg *req = calloc(1, sizeof(*req)), *rep = calloc(1, sizeof(*rep));
    if (!req || !rep) {
        free(req);
        free(rep);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_NETNS, ENOMEM, NULL, "out of memory");
    }
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)util_now_usec() * 0x9e3779b97f4a7c15ull;
    req->type = tap ? FYH_T_NET_TAP : FYH_T_NET_CREATE;
    req->version = lp->helper_version; /* (0: ours) */
    snprintf(req->u.net_create.name, sizeof(req->u.net_create.name), "forgeyard-%d-%016llx", (int)getpid(),
             (unsigned long long)rnd);
    req->u.net_create.nrules = (uint32_t)lp->nrules;
    for (size_t i = 0; i < lp->nrules; i++) {
        const struct plan_net_rule *r = &lp->rules[i];
        struct fyh_net_rule *t = &req->u.net_create.rule[i];
        t->family = r->family;
        t->prefix = r->prefix;
        t->proto = r->proto == FY_PROTO_UDP ? FYH_PROTO_UDP : FYH_PROTO_TCP;
        t->port_min = (uint16_t)r->port_min;
        t->port_max = (uint16_t)r->port_max;
        memcpy(t->addr, r->addr, 16);
    }
    int got = -1;
    int r = tap ? lx_helper_call_fds(lp->helper, req, -1, rep, &got, HELPER_NET_TIMEOUT_MS)
                : lx_helper_call_fd(lp->helper, req, sandbox_ns, rep, HELPER_NET_TIMEOUT_MS);
    if (r < 0)
        r = err_set(reterr, FY_E_INFRA, FY_STEP_NETNS, -r, NULL,
                    "restricted network: the privileged helper at %s: %s", lp->helper, strerror(-r));
    else if (rep->type == FYH_T_ERROR)
        r = err_set(reterr, FY_E_INFRA, FY_STEP_NETNS, (int)rep->u.error.os_errno, NULL,
                    "restricted network: the privileged helper at %s refused the attempt's router (%s): %s",
                    lp->helper, fyh_err_name(rep->u.error.code), rep->u.error.text);
    else {
        snprintf(run->helper_name, sizeof(run->helper_name), "%s", req->u.net_create.name);
        snprintf(run->helper_link, sizeof(run->helper_link), "%s", rep->u.net_created.link);
    }
    if (r >= 0 && tap) {
        /* What came is what the VMM will hold: a tap attached to the
         * router's "sb", nothing else (a helper is trusted, but a wrong
         * descriptor would be a guest without its rules). */
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        if (ioctl(got, TUNGETIFF, &ifr) < 0 || !(ifr.ifr_flags & IFF_TAP) ||
            strcmp(ifr.ifr_name, LXN_ROUTER_SB_IF) != 0) {
            int e = errno;
            r = err_set(reterr, FY_E_INFRA, FY_STEP_NETNS, e, NULL,
                        "restricted network: the privileged helper at %s handed over a descriptor that is not the "
                        "router's tap", lp->helper);
            close(got);
            got = -1;
            (void)lxnh_teardown(run);
        } else {
            *tap = got;
        }
    }
    free(req);
    free(rep);
    return r;
}

int lxnh_finish(struct lxn_run *run, int sandbox_ns, fy_error **reterr) {
    return net_create(run, sandbox_ns, NULL, reterr);
}

int lxnh_finish_tap(struct lxn_run *run, int *tap, fy_error **reterr) {
    *tap = -1;
    if (run->lp->helper_version && run->lp->helper_version < 4)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, NULL,
                       "the privileged helper at %s speaks protocol %u: a VM's tap needs 4", run->lp->helper,
                       (unsigned)run->lp->helper_version);
    return net_create(run, -1, tap, reterr);
}

unsigned lxnh_teardown(struct lxn_run *run) {
    if (!run->helper_name[0] || !run->lp)
        return 0;
    struct fyh_msg req = {.type = FYH_T_NET_REMOVE, .version = run->lp->helper_version}, rep;
    snprintf(req.u.net_remove.name, sizeof(req.u.net_remove.name), "%s", run->helper_name);
    int r = lx_helper_call(run->lp->helper, &req, &rep, HELPER_NET_TIMEOUT_MS);
    run->helper_name[0] = '\0';
    /* Unreachable or refused: counted as left (its gc removes it once we exit). */
    if (r < 0 || rep.type != FYH_T_NET_REMOVED)
        return 1;
    return rep.u.net_removed.left;
}

/* ---- job networks through the helper (protocol 4) ----
 * linux-jobnet.c's ljn_* for an unprivileged caller: the helper owns the
 * job's namespace, bridge and rules (JOB_CREATE), links each member's
 * namespace (JOB_ADD, the namespace as a descriptor, accepted only if a
 * user namespace of our uid owns it: the sandbox's), unlinks it (JOB_DEL)
 * and removes the job (JOB_DESTROY), witnessing each removal. */

static int job_call(const char *helper, struct fyh_msg *req, int pass_fd, struct fyh_msg *rep, fy_error **reterr) {
    int r = lx_helper_call_fd(helper, req, pass_fd, rep, HELPER_NET_TIMEOUT_MS);
    if (r < 0)
        return err_set(reterr, FY_E_INFRA, FY_STEP_JOBNET, -r, NULL, "job network: the privileged helper at %s: %s",
                       helper, strerror(-r));
    if (rep->type == FYH_T_ERROR)
        return err_set(reterr, FY_E_INFRA, FY_STEP_JOBNET, (int)rep->u.error.os_errno, NULL,
                       "job network: the privileged helper at %s refused (%s): %s", helper,
                       fyh_err_name(rep->u.error.code), rep->u.error.text);
    return 0;
}

int lxnh_job_create(const char *helper, uint32_t nmembers, char name[72], fy_error **reterr) {
    struct fyh_msg req = {.type = FYH_T_JOB_CREATE}, rep;
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)util_now_usec() * 0x9e3779b97f4a7c15ull;
    snprintf(req.u.job.name, sizeof(req.u.job.name), "forgeyard-%d-%016llx", (int)getpid(), (unsigned long long)rnd);
    req.u.job.n = nmembers;
    int r = job_call(helper, &req, -1, &rep, reterr);
    if (r == 0)
        snprintf(name, 72, "%s", req.u.job.name);
    return r;
}

int lxnh_job_add(const char *helper, const char *name, uint32_t index, int member_ns, fy_error **reterr) {
    struct fyh_msg req = {.type = FYH_T_JOB_ADD}, rep;
    snprintf(req.u.job.name, sizeof(req.u.job.name), "%s", name);
    req.u.job.n = index;
    return job_call(helper, &req, member_ns, &rep, reterr);
}

uint32_t lxnh_job_del(const char *helper, const char *name, uint32_t index) {
    struct fyh_msg req = {.type = FYH_T_JOB_DEL}, rep;
    snprintf(req.u.job.name, sizeof(req.u.job.name), "%s", name);
    req.u.job.n = index;
    /* Unreachable or refused: counted as left (its gc removes the job once we exit). */
    return job_call(helper, &req, -1, &rep, NULL) < 0 ? 1 : rep.u.job_done.left;
}

uint32_t lxnh_job_destroy(const char *helper, const char *name) {
    struct fyh_msg req = {.type = FYH_T_JOB_DESTROY}, rep;
    snprintf(req.u.job.name, sizeof(req.u.job.name), "%s", name);
    return job_call(helper, &req, -1, &rep, NULL) < 0 ? 1 : rep.u.job_done.left;
}
