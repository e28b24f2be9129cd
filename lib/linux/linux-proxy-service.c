/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fetch-only proxy offered by the Linux folder as a service to another
 * folder's backend (backend.h: proxy_compile ... proxy_forget): the same
 * allowlist, credentials, program and confinement as for the namespace
 * backend (linux-net.c, linux-proxy.c), but accepting on a listening socket
 * the caller made, private to its attempt. The VM backend uses it: its
 * guest has no network device, and the guest agent carries the guest's
 * connections to 127.0.0.1:3128 over the control port to the host, which
 * connects each to this listener. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux-backend.h"
#include "linux-net.h"
#include "linux-netlink.h"
#include "linux-proxy.h"

struct lps_config {
    struct arena arena;
    struct lxp_config *cfg;
    const char *uplink;            /* FY_NETHOST_UPLINK (arena), or NULL */
};

int linux_proxy_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    *ret = NULL;
    if (np->net_mode != FY_NET_FETCH_ONLY)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROXY, 0, "$.network.mode", "not a fetch-only plan");
    if (!lxp_program_available())
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, "$.network.mode",
                       "fetch-only needs its proxy program (fy-proxy), which is built for x86-64 and aarch64 only: "
                       "the proxy is never a copy of the host process");
    if (!caps_present(caps, FY_CAP_EXEC_INIT))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, "$.network.mode",
                       "fetch-only executes its proxy program from a sealed memfd, which this host does not allow "
                       "(capability exec-init: forgeyard doctor says why); the proxy is never a copy of the host "
                       "process");
    if (np->net_uplink && geteuid() != 0)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROXY, 0, "$.network.host",
                       "fetch-only with an uplink namespace needs root (the proxy joins it); without one the "
                       "proxy connects from the host's network");
    if (np->dns == FY_DNS_HOST)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.dns",
                       "dns host contradicts fetch-only: the sandbox reaches nothing but the proxy, which resolves "
                       "the destinations' names itself (at fy_prepare)");
    struct lps_config *c = calloc(1, sizeof(*c));
    if (!c)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    int r = lxn_fetch_config(np, &c->arena, &c->cfg, reterr);
    if (r >= 0 && np->net_uplink && !(c->uplink = arena_strdup(&c->arena, np->net_uplink)))
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    if (r < 0) {
        linux_proxy_config_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void linux_proxy_config_free(void *cfg) {
    struct lps_config *c = cfg;
    if (!c)
        return;
    if (c->cfg && c->cfg->creds)
        explicit_bzero(c->cfg->creds, c->cfg->ncreds * sizeof(*c->cfg->creds));
    arena_free(&c->arena);
    free(c);
}

int linux_proxy_start(const void *cfg, int listener, void **ret, fy_error **reterr) {
    const struct lps_config *c = cfg;
    *ret = NULL;
    struct lxp_run *run = calloc(1, sizeof(*run));
    if (!run)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROXY, 0, NULL, "out of memory");
    lxp_run_init(run);
    int uplink = -1;
    if (c->uplink && (uplink = lnl_open_netns(c->uplink)) < 0) {
        int e = -uplink;
        free(run);
        return err_set(reterr, err_from_errno(e), FY_STEP_PROXY, e, NULL, "fetch-only proxy: the uplink %s: %s",
                       c->uplink, e == EINVAL ? "not a network namespace" : strerror(e));
    }
    int r = lxp_start_listener(run, c->cfg, listener, uplink, reterr);
    if (uplink >= 0)
        close(uplink);
    if (r < 0) {
        lxp_release(run);
        free(run);
        return r;
    }
    *ret = run;
    return 0;
}

unsigned linux_proxy_stop(void *proxy) { return proxy ? lxp_stop(proxy) : 0; }

char *linux_proxy_report(const void *proxy) { return proxy ? lxp_report(proxy) : NULL; }

void linux_proxy_release(void *proxy) {
    if (!proxy)
        return;
    lxp_release(proxy);
    free(proxy);
}

void linux_proxy_forget(void *proxy) {
    if (!proxy)
        return;
    lxp_forget(proxy);
    free(proxy);
}
