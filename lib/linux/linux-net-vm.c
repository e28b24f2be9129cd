/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode restricted and the DNS stub offered by the Linux folder as
 * services to the VM backend (backend.h router_*, dns_*), which may not
 * include this folder's headers.
 *
 * restricted: the namespace backend's own router (linux-net.c: lxn_compile,
 * lxn_begin, the same nftables ruleset, uplink and link slot; without root
 * the privileged helper's when it offers one with a tap (protocol 4,
 * linux-net-helper.c), else the pasta path's, linux-net-user.c), except that the router's
 * sandbox-side link "sb" is a tap device in the router namespace
 * (lxn_finish_tap) instead of a veth (or a tun and a relay) into a
 * sandbox's namespace.
 * The VM backend hands its fd to QEMU (-netdev tap,fd=N), so the VMM's
 * sandbox gets neither /dev/net/tun nor CAP_NET_ADMIN nor any interface
 * of its own, and every frame of the guest's virtio-net device enters the
 * router where the veth's would: enforcement by the host kernel, outside
 * the guest, by exactly the namespace backend's rules.
 *
 * DNS: the same stub (fy-proxy in its DNS mode, confined as for the
 * namespace backend) answering datagrams on a socket the caller keeps
 * private: the VM backend's end of a socketpair, to which it relays the
 * queries the guest agent carries over the control port (VMP_DNS). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "linux-backend.h"
#include "linux-helper.h"
#include "linux-net.h"
#include "linux-plan.h"
#include "linux-proxy.h"

struct lnv_config {
    struct linux_plan pl;       /* only what lxn_compile reads: arena, exec_init */
    struct lxn_plan lp;
};

int linux_router_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    *ret = NULL;
    if (np->net_mode != FY_NET_RESTRICTED)
        return err_set(reterr, FY_E_INVAL, FY_STEP_NETNS, 0, "$.network.mode", "not a restricted plan");
    bool root = geteuid() == 0;
    int nr;
    if (root && (nr = lxn_require_nftables(caps, reterr)) < 0)
        return nr;
    /* Root, then the privileged helper (protocol 4: it makes the router
     * with a tap and hands us the tap; we need no /dev/net/tun), then the
     * pasta path. */
    const char *hs = root ? NULL : caps_fact(caps, LX_FACT_HELPER_NET_SOCKET);
    const char *hv = hs ? caps_fact(caps, LX_FACT_HELPER_NET_VERSION) : NULL;
    unsigned helper_version = hv ? (unsigned)strtoul(hv, NULL, 10) : 0;
    bool helper = hs && caps_fact(caps, LX_FACT_HELPER_NET) && helper_version >= 4;
    if (!helper && access("/dev/net/tun", R_OK | W_OK) < 0)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, errno, "$.network.mode",
                       "network mode restricted in a virtual machine needs /dev/net/tun (the guest's tap device): %s",
                       strerror(errno));
    struct lnv_config *c = calloc(1, sizeof(*c));
    if (!c)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    c->pl.np = np;
    c->pl.exec_init = caps_present(caps, FY_CAP_EXEC_INIT);
    /* Without root: the privileged helper's router when it takes NET_TAP
     * (linux-net-helper.c, lxnh_finish_tap), else the pasta path's (the
     * library's own user namespace, pasta as the uplink). An older helper
     * (protocol 3) links only a sandbox's namespace by veth, which gives no
     * tap a VMM could hold. */
    if (helper && (!(c->pl.net_helper = arena_strdup(&c->pl.arena, hs)) ||
                   !(c->pl.net_helper_uplink = arena_strdup(&c->pl.arena, caps_fact(caps, LX_FACT_HELPER_NET))))) {
        linux_router_config_free(c);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    }
    c->pl.net_helper_version = (uint16_t)helper_version;
    int r = lxn_compile(&c->lp, &c->pl, np, root, reterr);
    if (r >= 0 && ((helper != !!c->lp.helper) || c->lp.mode != FY_NET_RESTRICTED))
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                    "network mode restricted in a virtual machine: this router takes no tap");
    if (r < 0) {
        linux_router_config_free(c);
        return r;
    }
    c->lp.dns = NULL; /* the stub is the caller's (dns_*): it is reached over its control port */
    c->lp.vm_tap = true;
    *ret = c;
    return 0;
}

void linux_router_config_free(void *cfg) {
    struct lnv_config *c = cfg;
    if (!c)
        return;
    arena_free(&c->pl.arena);
    free(c);
}

char *linux_router_describe(const void *cfg, const struct fy_plan *np) {
    const struct lnv_config *c = cfg;
    char *s = lxn_describe(&c->lp, np, &c->pl);
    json_t *o = s ? json_loads(s, 0, NULL) : NULL;
    free(s);
    if (!o)
        return NULL;
    json_object_set_new(o, "enforcement",
                        json_string(c->lp.helper
                                        ? "nftables in a per-attempt router namespace owned by the host's user "
                                          "namespace, made and removed by the privileged helper (the namespace "
                                          "backend's router and rules; forward only to the rules, masquerade; "
                                          "everything else dropped: TCP, UDP, ICMP, raw, IPv4 and IPv6), outside "
                                          "the guest: the guest's virtio-net device is backed by a tap device that "
                                          "is the router's sandbox-side link, which the helper made and handed us; "
                                          "the VMM holds only its fd"
                                    : c->lp.rootless
                                        ? "nftables in a per-attempt router namespace of the library's own user "
                                          "namespace (the namespace backend's rootless router and rules; uplink: "
                                          "pasta as the caller; everything not allowed dropped there: TCP, UDP, "
                                          "ICMP, raw, IPv4 and IPv6), outside the guest: the guest's virtio-net "
                                          "device is backed by a tap device that is the router's sandbox-side "
                                          "link; the VMM holds only its fd"
                                        : "nftables in a per-attempt router namespace owned by the host's user "
                                          "namespace (the namespace backend's router and rules; forward only to "
                                          "the rules, masquerade; everything else dropped: TCP, UDP, ICMP, raw, "
                                          "IPv4 and IPv6), outside the guest: the guest's virtio-net device is "
                                          "backed by a tap device that is the router's sandbox-side link; the VMM "
                                          "holds only its fd"));
    json_object_set_new(o, "link", json_string("tap sb in the router namespace (100.64.0.1/30, fd66:7973::1/64); "
                                               "guest eth0 100.64.0.2/30, fd66:7973::2/64"));
    json_object_set_new(o, "landlock_tcp", json_string("none (the guest runs its own kernel)"));
    char *r = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return r;
}

int linux_router_start(const void *cfg, int *tap, void **ret, fy_error **reterr) {
    const struct lnv_config *c = cfg;
    *ret = NULL;
    *tap = -1;
    struct lxn_run *run = calloc(1, sizeof(*run));
    if (!run)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_NETNS, 0, NULL, "out of memory");
    int r = lxn_begin(run, &c->lp, reterr);
    if (r >= 0)
        r = lxn_finish_tap(run, tap, reterr); /* (tears down itself on failure) */
    if (r < 0) {
        free(run);
        return r;
    }
    *ret = run;
    return 0;
}

unsigned linux_router_stop(void *router) { return router ? lxn_teardown(router) : 0; }

char *linux_router_report(void *router) {
    char *s = router ? lxn_take_report(router) : NULL;
    json_t *o = s ? json_loads(s, 0, NULL) : NULL;
    free(s);
    if (!o)
        return NULL;
    /* (the pasta path's: no relay runs for a tap) */
    json_object_del(o, "packets_out");
    json_object_del(o, "packets_in");
    char *r = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return r;
}

void linux_router_release(void *router) {
    if (!router)
        return;
    (void)lxn_teardown(router);
    free(((struct lxn_run *)router)->report);
    free(router);
}

void linux_router_forget(void *router) {
    if (!router)
        return;
    lxn_forget(router);
    free(router);
}

/* ---- the DNS stub ---- */

struct lnv_dns {
    struct linux_plan pl;
    struct lxp_config *cfg;
};

int linux_dns_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    *ret = NULL;
    struct lnv_dns *d = calloc(1, sizeof(*d));
    if (!d)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    d->pl.np = np;
    d->pl.exec_init = caps_present(caps, FY_CAP_EXEC_INIT);
    if (!(d->cfg = lxn_dns_config(&d->pl, np))) {
        linux_dns_config_free(d);
        return 0; /* no stub here: nothing answers (as for the namespace backend) */
    }
    *ret = d;
    return 0;
}

void linux_dns_config_free(void *cfg) {
    struct lnv_dns *d = cfg;
    if (!d)
        return;
    arena_free(&d->pl.arena);
    free(d);
}

int linux_dns_start(const void *cfg, int sock, void **ret, fy_error **reterr) {
    const struct lnv_dns *d = cfg;
    *ret = NULL;
    struct lxp_run *run = calloc(1, sizeof(*run));
    if (!run)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROXY, 0, NULL, "out of memory");
    lxp_run_init(run);
    int r = lxp_start_dns_on(run, d->cfg, sock, reterr);
    if (r < 0) {
        lxp_release(run);
        free(run);
        return r;
    }
    *ret = run;
    return 0;
}

char *linux_dns_report(const void *dns) {
    char *s = dns ? lxp_report_dns(dns) : NULL;
    json_t *o = s ? json_loads(s, 0, NULL) : NULL;
    free(s);
    if (!o)
        return NULL;
    json_object_set_new(o, "listen", json_string(LXP_DNS_ADDR ":53/udp in the guest (the agent's socket), each "
                                                 "datagram carried over the control port to the stub on the host"));
    char *r = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return r;
}
