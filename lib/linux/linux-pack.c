/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* See linux-pack.h. Layout: header, struct child_args, struct linux_plan,
 * then every array and string they point to. A pointer field holds its
 * target's offset from the start of the blob (0: NULL); the header is at
 * offset 0, so no target ever is. lx_unpack runs inside forgeyard-init
 * (freestanding: no libc beyond the few calls it provides). */
#include <stdint.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "linux-pack.h"

struct pack_header {
    uint32_t magic, version;
    uint64_t size;
    uint64_t args, plan; /* offsets of the two structures */
};

#define ALIGN_UP(n) (((n) + 15) & ~(size_t)15)

#ifndef FY_FREESTANDING

#include "internal.h"

struct packer {
    unsigned char *buf;
    size_t len, cap;
    bool oom;
};

/* Reserves n bytes (16-aligned, zeroed); their offset, or 0 when out of memory. */
static size_t reserve(struct packer *p, size_t n) {
    size_t off = ALIGN_UP(p->len);
    if (p->oom || n > SIZE_MAX / 2 - off) {
        p->oom = true;
        return 0;
    }
    if (off + n > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < off + n)
            cap *= 2;
        unsigned char *b = realloc(p->buf, cap);
        if (!b) {
            p->oom = true;
            return 0;
        }
        memset(b + p->cap, 0, cap - p->cap);
        p->buf = b;
        p->cap = cap;
    }
    p->len = off + n;
    return off;
}

static size_t put(struct packer *p, const void *data, size_t n) {
    size_t off = reserve(p, n);
    if (off && n)
        memcpy(p->buf + off, data, n);
    return off;
}

/* A string (NUL-terminated), or n bytes followed by a NUL. */
static size_t put_str(struct packer *p, const char *s) { return s ? put(p, s, strlen(s) + 1) : 0; }
static size_t put_bytes0(struct packer *p, const void *s, size_t n) {
    if (!s)
        return 0;
    size_t off = reserve(p, n + 1);
    if (off)
        memcpy(p->buf + off, s, n);
    return off;
}

/* A NULL-terminated vector of strings. */
static size_t put_strv(struct packer *p, char *const *v) {
    if (!v)
        return 0;
    size_t n = 0;
    while (v[n])
        n++;
    size_t off = reserve(p, (n + 1) * sizeof(uint64_t));
    for (size_t i = 0; off && i < n; i++) {
        size_t s = put_str(p, v[i]);
        if (s)
            ((uint64_t *)(void *)(p->buf + off))[i] = s;
    }
    return off;
}

#define AS_PTR(off) ((void *)(uintptr_t)(off))

int lx_pack(const struct child_args *a, unsigned char **ret_blob, size_t *ret_len) {
    struct packer p = {0};
    const struct linux_plan *src = a->plan;
    size_t hdr = reserve(&p, sizeof(struct pack_header));
    (void)hdr;
    size_t args_off = reserve(&p, sizeof(struct child_args));
    size_t plan_off = reserve(&p, sizeof(struct linux_plan));
    struct child_args ca = *a;
    /* (Every field but describe_json, which another thread starting from
     * the same plan may be publishing now, util_publish_once: the plan is
     * shared between threads; a plain copy of that field is a data race.) */
    struct linux_plan pl;
    size_t dj = offsetof(struct linux_plan, describe_json), dje = dj + sizeof(pl.describe_json);
    memcpy(&pl, src, dj);
    memcpy((char *)&pl + dje, (const char *)src + dje, sizeof(pl) - dje);

    /* The plan: only what the child reads; host-side data dropped. */
    memset(&pl.cg, 0, sizeof(pl.cg));
    memset(pl.watch_dirs, 0, sizeof(pl.watch_dirs));
    pl.nwatch = 0;
    pl.isolation_json = pl.cgroup_json = pl.describe_json = NULL;
    pl.devices_doc = NULL;
    pl.io_unapplied = NULL;
    pl.np = NULL;
    pl.ext = NULL;
    pl.net = NULL;
    pl.arena = (struct arena){NULL, 0, 0};
    pl.envp = NULL; /* the child uses the per-start envp of its arguments */
    pl.nenv = 0;
    pl.seccomp_name = NULL;
    pl.hostname = AS_PTR(put_str(&p, src->hostname));
    pl.workdir = AS_PTR(put_str(&p, src->workdir));
    pl.overlay_lowers = AS_PTR(put_strv(&p, src->overlay_lowers));
    pl.path_search = AS_PTR(put_str(&p, src->path_search));
    pl.argv = AS_PTR(put_strv(&p, src->argv));
    pl.bpf = AS_PTR(src->bpf ? put(&p, src->bpf, (size_t)src->bpf_len * 8) : 0);
    pl.init_bpf = AS_PTR(src->init_bpf ? put(&p, src->init_bpf, (size_t)src->init_bpf_len * 8) : 0);
    pl.ipc_bpf = AS_PTR(src->ipc_bpf ? put(&p, src->ipc_bpf, (size_t)src->ipc_bpf_len * 8) : 0);
    pl.others_bpf = AS_PTR(src->others_bpf ? put(&p, src->others_bpf, (size_t)src->others_bpf_len * 8) : 0);
    size_t ops = src->nops ? reserve(&p, src->nops * sizeof(struct mount_op)) : 0;
    for (size_t i = 0; ops && i < src->nops; i++) {
        struct mount_op op = src->ops[i];
        op.src = AS_PTR(op.kind == MK_FILE ? put_bytes0(&p, op.src, op.src_len) : put_str(&p, op.src));
        op.dst = AS_PTR(put_str(&p, op.dst));
        op.data = AS_PTR(put_str(&p, op.data));
        op.aux = AS_PTR(put_str(&p, op.aux));
        if (!p.oom)
            memcpy(p.buf + ops + i * sizeof(op), &op, sizeof(op));
    }
    pl.ops = AS_PTR(ops);
    size_t rules = src->nll ? reserve(&p, src->nll * sizeof(struct ll_rule)) : 0;
    for (size_t i = 0; rules && i < src->nll; i++) {
        struct ll_rule r = src->ll_rules[i];
        r.path = AS_PTR(put_str(&p, r.path));
        if (!p.oom)
            memcpy(p.buf + rules + i * sizeof(r), &r, sizeof(r));
    }
    pl.ll_rules = AS_PTR(rules);

    /* The per-start arguments (fds are numbers: the same after exec). */
    ca.plan = AS_PTR(plan_off);
    ca.envp = AS_PTR(put_strv(&p, a->envp));
    ca.workdir = AS_PTR(put_str(&p, a->workdir));
    ca.secrets_dir = AS_PTR(put_str(&p, a->secrets_dir));
    size_t secs = a->nsecrets ? reserve(&p, a->nsecrets * sizeof(struct child_secret)) : 0;
    for (size_t i = 0; secs && i < a->nsecrets; i++) {
        struct child_secret s = a->secrets[i];
        s.file = AS_PTR(put_str(&p, s.file));
        s.value = AS_PTR(put_bytes0(&p, s.value, s.len));
        if (!p.oom)
            memcpy(p.buf + secs + i * sizeof(s), &s, sizeof(s));
    }
    ca.secrets = AS_PTR(secs);
    if (p.oom) {
        if (p.buf)
            util_bzero(p.buf, p.cap);
        free(p.buf);
        return FY_E_NOMEM;
    }
    memcpy(p.buf + args_off, &ca, sizeof(ca));
    memcpy(p.buf + plan_off, &pl, sizeof(pl));
    struct pack_header h = {LX_PACK_MAGIC, LX_PACK_VERSION, p.len, args_off, plan_off};
    memcpy(p.buf, &h, sizeof(h));
    *ret_blob = p.buf;
    *ret_len = p.len;
    return 0;
}

#endif /* !FY_FREESTANDING */

/* ---- unpacking (inside forgeyard-init) ---- */

struct unpacker {
    unsigned char *base;
    size_t len;
    int bad;
};

/* The pointer for an offset stored in a pointer field (0 stays NULL). */
static void *at(struct unpacker *u, const void *stored, size_t need) {
    uintptr_t off = (uintptr_t)stored;
    if (!off)
        return NULL;
    if (off >= u->len || need > u->len - off) {
        u->bad = 1;
        return NULL;
    }
    return u->base + off;
}

/* A NUL-terminated string at the stored offset, inside the blob. */
static void *at_str(struct unpacker *u, const void *stored) {
    char *s = at(u, stored, 1);
    if (!s)
        return NULL;
    size_t max = u->len - (size_t)((unsigned char *)s - u->base);
    for (size_t i = 0; i < max; i++)
        if (!s[i])
            return s;
    u->bad = 1;
    return NULL;
}

static char **at_strv(struct unpacker *u, const void *stored) {
    uint64_t *v = at(u, stored, sizeof(uint64_t));
    if (!v)
        return NULL;
    char **out = (char **)(void *)v;
    for (size_t i = 0;; i++) {
        if ((size_t)((unsigned char *)(v + i) - u->base) + sizeof(uint64_t) > u->len) {
            u->bad = 1;
            return NULL;
        }
        if (!v[i]) {
            out[i] = NULL;
            return out;
        }
        out[i] = at_str(u, (const void *)(uintptr_t)v[i]);
        if (!out[i])
            return NULL;
    }
}

struct child_args *lx_unpack(unsigned char *blob, size_t len) {
    if (len < sizeof(struct pack_header))
        return NULL;
    const struct pack_header *h = (const void *)blob;
    if (h->magic != LX_PACK_MAGIC || h->version != LX_PACK_VERSION || h->size != len)
        return NULL;
    struct unpacker u = {blob, len, 0};
    struct child_args *a = at(&u, (void *)(uintptr_t)h->args, sizeof(*a));
    struct linux_plan *pl = at(&u, (void *)(uintptr_t)h->plan, sizeof(*pl));
    if (!a || !pl || (uintptr_t)a->plan != h->plan)
        return NULL;
    a->plan = pl;
    pl->hostname = at_str(&u, pl->hostname);
    pl->workdir = at_str(&u, pl->workdir);
    pl->overlay_lowers = pl->overlay_lowers ? at_strv(&u, pl->overlay_lowers) : NULL;
    pl->path_search = at_str(&u, pl->path_search);
    pl->argv = at_strv(&u, pl->argv);
    pl->bpf = at(&u, pl->bpf, (size_t)pl->bpf_len * 8);
    pl->init_bpf = at(&u, pl->init_bpf, (size_t)pl->init_bpf_len * 8);
    pl->ipc_bpf = at(&u, pl->ipc_bpf, (size_t)pl->ipc_bpf_len * 8);
    pl->others_bpf = at(&u, pl->others_bpf, (size_t)pl->others_bpf_len * 8);
    pl->ops = pl->nops ? at(&u, pl->ops, pl->nops * sizeof(struct mount_op)) : NULL;
    for (size_t i = 0; pl->ops && i < pl->nops; i++) {
        struct mount_op *op = &pl->ops[i];
        op->src = op->kind == MK_FILE ? at(&u, op->src, op->src_len + 1) : at_str(&u, op->src);
        op->dst = at_str(&u, op->dst);
        op->data = at_str(&u, op->data);
        op->aux = at_str(&u, op->aux);
    }
    pl->ll_rules = pl->nll ? at(&u, pl->ll_rules, pl->nll * sizeof(struct ll_rule)) : NULL;
    for (size_t i = 0; pl->ll_rules && i < pl->nll; i++)
        pl->ll_rules[i].path = at_str(&u, pl->ll_rules[i].path);
    a->envp = at_strv(&u, a->envp);
    a->workdir = at_str(&u, a->workdir);
    a->secrets_dir = at_str(&u, a->secrets_dir);
    struct child_secret *s = a->nsecrets ? at(&u, a->secrets, a->nsecrets * sizeof(*s)) : NULL;
    for (size_t i = 0; s && i < a->nsecrets; i++) {
        s[i].file = at_str(&u, s[i].file);
        s[i].value = at(&u, s[i].value, s[i].len + 1);
    }
    a->secrets = s;
    if (u.bad || !pl->argv || !a->envp || (pl->nops && !pl->ops) || (pl->nll && !pl->ll_rules) ||
        (a->nsecrets && !a->secrets))
        return NULL;
    return a;
}
