/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Capability negotiation: the least-cost backend that satisfies every
 * requirement of the policy; preferences are dropped only visibly. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

void selection_free(struct selection *s) {
    if (!s)
        return;
    free(s->level_note);
    s->level_note = NULL;
}

/* Appends to `why` every required control this backend cannot enforce;
 * returns how many. */
static int missing_requirements(const struct fy_backend_ops *b, const fy_policy *p, const fy_caps *c,
                                struct strbuf *why) {
    int n = 0;
    for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++) {
        if (policy_control_mode(p, ctl) != FY_MODE_REQUIRE)
            continue;
        const char *w = NULL;
        if (b->can_enforce(c, ctl, &w))
            continue;
        strbuf_printf(why, "%s%s required (%s)", n ? "; " : "", control_key(ctl), w ? w : "unavailable");
        n++;
    }
    return n;
}

int select_backend(const struct fy_backend_ops *const *table, size_t n, const fy_policy *p, const fy_caps *c,
                   uint32_t skip, struct selection *out, fy_error **reterr) {
    memset(out, 0, sizeof(*out));
    uint32_t need = p->min_level > p->level_floor ? p->min_level : p->level_floor;
    uint32_t want = p->preferred_level > need ? p->preferred_level : need;
    const struct fy_backend_ops *best = NULL, *best_pref = NULL;
    struct strbuf why;
    strbuf_init(&why);
    for (size_t i = 0; i < n; i++) {
        const struct fy_backend_ops *b = table[i];
        if (i < 32 && (skip & (UINT32_C(1) << i)))
            continue; /* its compile refused the plan (the caller keeps why) */
        if (!!p->image != b->images) {
            strbuf_printf(&why, "%s%s: %s", why.len ? "; " : "", b->name,
                          p->image ? "runs no container image" : "runs container images only");
            continue;
        }
        if (!!b->runtime != !!p->runtime || (b->runtime && strcmp(b->runtime, p->runtime) != 0)) {
            if (b->runtime)
                strbuf_printf(&why, "%s%s: used only when the policy names the runtime %s", why.len ? "; " : "",
                              b->name, b->runtime);
            else
                strbuf_printf(&why, "%s%s: the policy names the external runtime %s", why.len ? "; " : "", b->name,
                              p->runtime);
            continue;
        }
        const char *issues = b->known_issues ? b->known_issues(c) : NULL;
        if (issues && !(p->runtime_flags & FY_RUNTIME_ACCEPT_KNOWN_ISSUES)) {
            strbuf_printf(&why, "%s%s: %s (accept them with FY_RUNTIME_ACCEPT_KNOWN_ISSUES)", why.len ? "; " : "",
                          b->name, issues);
            continue;
        }
        if (b->level < need) {
            strbuf_printf(&why, "%s%s: gives %s isolation, the policy requires %s", why.len ? "; " : "", b->name,
                          fy_level_name(b->level), fy_level_name(need));
            continue;
        }
        struct strbuf bw;
        strbuf_init(&bw);
        bool usable = b->usable(c, &bw);
        if (usable && missing_requirements(b, p, c, &bw) == 0) {
            if (!best || b->cost < best->cost)
                best = b;
            if (b->level >= want && (!best_pref || b->cost < best_pref->cost))
                best_pref = b;
        } else {
            strbuf_printf(&why, "%s%s: %s%s", why.len ? "; " : "", b->name, usable ? "" : "cannot run here: ",
                          bw.buf ? bw.buf : "");
        }
        strbuf_free(&bw);
    }
    if (!best) {
        int r;
        if (n == 0)
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SELECT, 0, NULL,
                        "no sandbox backend is compiled into this build for this platform");
        else
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SELECT, 0, NULL,
                        "this host cannot satisfy the policy (needs %s isolation or stronger): %s",
                        fy_level_name(need), why.buf ? why.buf : "no backend gives it");
        strbuf_free(&why);
        return r;
    }
    strbuf_free(&why);
    out->backend = best_pref ? best_pref : best;
    out->level = out->backend->level;
    if (!best_pref) {
        out->level_note = util_asprintf("preferred %s isolation is not available here; running at %s",
                                      fy_level_name(want), fy_level_name(out->level));
        if (!out->level_note)
            return err_set(reterr, FY_E_NOMEM, FY_STEP_SELECT, 0, NULL, "out of memory");
    }
    for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++) {
        if (policy_control_mode(p, ctl) == FY_MODE_OFF) {
            out->control[ctl] = FY_CONTROL_STATE_OFF;
            continue;
        }
        const char *w = NULL;
        if (out->backend->can_enforce(c, ctl, &w)) {
            out->control[ctl] = FY_CONTROL_STATE_ENFORCED;
        } else {
            out->control[ctl] = FY_CONTROL_STATE_DROPPED; /* only preferences get here */
            out->dropped_why[ctl] = w ? w : "unavailable";
        }
    }
    return 0;
}
