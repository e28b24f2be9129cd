/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The capability snapshot: construction by the probes, copying, freeing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "caps.h"

fy_caps *caps_new(void) {
    fy_caps *c = calloc(1, sizeof(*c));
    if (c)
        c->origin_pid = fy_getpid_cached();
    return c;
}

static char *vfmt(const char *fmt, va_list ap) {
    char *s = NULL;
    if (!fmt || vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

void caps_set(fy_caps *c, uint32_t cap, bool present, int64_t value, const char *reason_fmt, ...) {
    if (!c || cap == 0 || cap > FY_CAP_MAX_)
        return;
    struct cap_entry *e = &c->e[cap];
    va_list ap;
    va_start(ap, reason_fmt);
    char *r = vfmt(reason_fmt, ap);
    va_end(ap);
    free(e->reason);
    e->reason = r;
    e->state = present ? CAP_PRESENT : CAP_MISSING;
    e->value = value;
}

void caps_set_hint(fy_caps *c, uint32_t cap, const char *hint_fmt, ...) {
    if (!c || cap == 0 || cap > FY_CAP_MAX_)
        return;
    va_list ap;
    va_start(ap, hint_fmt);
    char *h = vfmt(hint_fmt, ap);
    va_end(ap);
    free(c->e[cap].hint);
    c->e[cap].hint = h;
}

bool caps_present(const fy_caps *c, uint32_t cap) {
    return c && cap > 0 && cap <= FY_CAP_MAX_ && c->e[cap].state == CAP_PRESENT;
}

#define HOST_STRINGS(X) \
    X(kernel_release) X(cgroup_mode) X(cg1_memory) X(cg1_pids) X(cg1_cpu) X(cg1_freezer) \
    X(cg1_blkio) X(cg1_cpuacct) X(cg2_dir) X(cg2_delegated) X(qemu_path) X(oci_runtime) X(bwrap_path)

void caps_free_internal(fy_caps *c) {
    if (!c)
        return;
    for (size_t i = 0; i <= FY_CAP_MAX_; i++) {
        free(c->e[i].reason);
        free(c->e[i].hint);
    }
#define FREE_HOST(f) free(c->host.f);
    HOST_STRINGS(FREE_HOST)
#undef FREE_HOST
    free(c);
}

fy_caps *caps_dup(const fy_caps *src) {
    fy_caps *c = caps_new();
    if (!c)
        return NULL;
    int pid = c->origin_pid;
    *c = *src;
    c->origin_pid = pid;
    bool ok = true;
    for (size_t i = 0; i <= FY_CAP_MAX_; i++) {
        c->e[i].reason = fy_strdup(src->e[i].reason);
        c->e[i].hint = fy_strdup(src->e[i].hint);
        ok &= !src->e[i].reason || c->e[i].reason;
        ok &= !src->e[i].hint || c->e[i].hint;
    }
#define DUP_HOST(f) c->host.f = fy_strdup(src->host.f); ok &= !src->host.f || c->host.f;
    HOST_STRINGS(DUP_HOST)
#undef DUP_HOST
    if (!ok) {
        caps_free_internal(c);
        return NULL;
    }
    return c;
}

void caps_finish(fy_caps *c) {
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++)
        if (c->e[i].state == CAP_NOT_PROBED && !c->e[i].reason)
            caps_set(c, i, false, 0, "not probed: no compiled-in probe for this platform");
    c->max_level = FY_LEVEL_NONE;
    const struct fy_backend_ops *table[FY_BACKENDS_MAX];
    size_t n = backends_collect(table, FY_BACKENDS_MAX);
    for (size_t b = 0; b < n; b++) {
        struct strbuf why;
        strbuf_init(&why);
        if (table[b]->usable(c, &why) && (int)table[b]->level > c->max_level)
            c->max_level = (int)table[b]->level;
        strbuf_free(&why);
    }
}
