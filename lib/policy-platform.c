/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Platform properties (REAPI's Platform, schedulers' exec properties) as
 * requirements on a policy: each can only make it stricter, and one this
 * library does not know is refused, never ignored (fy_policy_set_platform_property). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "policy.h"

static bool isa_matches(const char *want) {
    struct utsname u;
    if (util_uname(&u) < 0)
        return false;
    static const char *const x86[] = {"x86-64", "x86_64", "amd64"}, *const arm[] = {"aarch64", "arm64"};
    const char *const *names = NULL;
    size_t n = 0;
    if (strcmp(u.machine, "x86_64") == 0) {
        names = x86;
        n = FY_ARRAY_SIZE(x86);
    } else if (strcmp(u.machine, "aarch64") == 0) {
        names = arm;
        n = FY_ARRAY_SIZE(arm);
    }
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(names[i], want) == 0)
            return true;
    return strcasecmp(u.machine, want) == 0;
}

static int unsupported(fy_error **reterr, const char *key, const char *fmt, ...) FY_PRINTF(3, 4);
static int unsupported(fy_error **reterr, const char *key, const char *fmt, ...) {
    char loc[300];
    util_loc_key(loc, sizeof(loc), "$.platform.", key);
    va_list ap;
    va_start(ap, fmt);
    err_setv(reterr, FY_E_UNSUPPORTED, FY_STEP_SELECT, 0, loc, fmt, ap);
    va_end(ap);
    return FY_E_UNSUPPORTED;
}

/* The network an action may ask for: the policy's or a stricter one. */
static int want_network(fy_policy *p, uint32_t mode, const char *key, fy_error **reterr) {
    if (mode > p->net_mode)
        return unsupported(reterr, key, "network \"%s\" asked for; the policy allows at most \"%s\"",
                           net_mode_names[mode], net_mode_names[p->net_mode]);
    if (!p->prop_net || mode < p->prop_net)
        p->prop_net = mode;
    if (mode < p->net_mode) {
        p->net_mode = mode;
        if (mode == FY_NET_DENY) {
            p->dns = FY_DNS_NONE;
            for (size_t i = 0; i < p->dests.n; i++)
                free(((struct pol_dest *)p->dests.items)[i].host);
            p->dests.n = 0;
        }
    }
    return 0;
}

/* One property: a requirement that only makes the policy stricter. */
int fy_policy_set_platform_property(fy_policy *p, const char *k, const char *v, fy_error **reterr) {
    if (!p || !k || !v)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SELECT, 0, NULL, "policy, name or value is NULL");
    FY_CHECK_ORIGIN(p);
    if (strcmp(k, "OSFamily") == 0) {
        /* The host's own system ("Linux"; "Windows" in the Windows build,
         * lib/sys/windows/sys/utsname.h), never a name fixed at build. */
        struct utsname u;
        if (uname(&u) < 0 || strcasecmp(v, u.sysname) != 0)
            return unsupported(reterr, k, "this host runs %s, not \"%s\"", uname(&u) < 0 ? "?" : u.sysname, v);
    } else if (strcmp(k, "ISA") == 0) {
        if (!isa_matches(v))
            return unsupported(reterr, k, "this host's instruction set is not \"%s\"", v);
    } else if (strcmp(k, "sandbox-level") == 0) {
        int lv = NAME_LOOKUP(level_names, v);
        if (lv <= 0)
            return unsupported(reterr, k, "unknown isolation level \"%s\"", v);
        if ((uint32_t)lv > p->prop_level)
            p->prop_level = (uint32_t)lv;
        if ((uint32_t)lv > p->min_level)
            p->min_level = (uint32_t)lv;
        if (p->preferred_level < p->min_level)
            p->preferred_level = p->min_level;
    } else if (strcmp(k, "network") == 0) {
        int m = NAME_LOOKUP(net_mode_names, v);
        if (m <= 0)
            return unsupported(reterr, k, "unknown network mode \"%s\"", v);
        return want_network(p, (uint32_t)m, k, reterr);
    } else if (strcmp(k, "dockerNetwork") == 0) {
        /* REAPI's convention: "off" or "standard" (the host network). */
        uint32_t m = strcmp(v, "off") == 0 ? FY_NET_DENY : strcmp(v, "standard") == 0 ? FY_NET_ALLOW : 0;
        if (!m)
            return unsupported(reterr, k, "expected \"off\" or \"standard\", got \"%s\"", v);
        return want_network(p, m, k, reterr);
    } else if (strcmp(k, "Pool") == 0) {
        /* Scheduling only: which workers take the action. */
    } else {
        return unsupported(reterr, k, "platform property \"%s\" is not one this library honours "
                                      "(forgeyard-action(5) lists them); refused rather than ignored", k);
    }
    return 0;
}
