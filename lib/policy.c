/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy model: storage, profiles, copying. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "os.h"
#include "policy.h"

/* ---- vec ---- */

void vec_init(struct vec *v, size_t item_size) { *v = (struct vec){.size = item_size}; }

void *vec_push(struct vec *v) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void *n = realloc(v->items, cap * v->size);
        if (!n)
            return NULL;
        v->items = n;
        v->cap = cap;
    }
    void *it = (char *)v->items + v->n * v->size;
    memset(it, 0, v->size);
    v->n++;
    return it;
}

void *vec_at(const struct vec *v, size_t i) { return i < v->n ? (char *)v->items + i * v->size : NULL; }

void vec_remove(struct vec *v, size_t i) {
    if (i >= v->n)
        return;
    memmove((char *)v->items + i * v->size, (char *)v->items + (i + 1) * v->size,
            (v->n - i - 1) * v->size);
    v->n--;
}

static void vec_free(struct vec *v) {
    free(v->items);
    vec_init(v, v->size);
}

/* ---- secrets live in guarded, locked, wiped memory ---- */

unsigned char *secret_alloc(const void *value, size_t len) {
    if (sodium_init() < 0)
        return NULL;
    unsigned char *m = sodium_malloc(len ? len : 1);
    if (m && value && len)
        memcpy(m, value, len);
    return m;
}

void secret_release(unsigned char *m) {
    if (m)
        sodium_free(m); /* zeroes before unmapping */
}

/* ---- lifecycle ---- */

fy_policy *policy_alloc(void) {
    fy_policy *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->origin_pid = util_getpid();
    for (int i = 0; i < 3; i++)
        p->stdio[i] = (struct pol_stdio){FY_STDIO_NULL, -1, NULL};
    vec_init(&p->toolchains, sizeof(struct pol_toolchain));
    vec_init(&p->binds, sizeof(struct pol_bind));
    vec_init(&p->runtime_paths, sizeof(char *));
    vec_init(&p->env_set, sizeof(struct pol_env));
    vec_init(&p->env_allow, sizeof(char *));
    vec_init(&p->dests, sizeof(struct pol_dest));
    vec_init(&p->devices, sizeof(struct pol_device));
    vec_init(&p->secrets, sizeof(struct pol_secret));
    return p;
}

void policy_clear(fy_policy *p) {
    free(p->source);
    free(p->build);
    free(p->build_lower);
    free(p->build_work);
    free(p->output);
    free(p->workdir);
    free(p->hostname);
    free(p->image);
    free(p->runtime);
    free(p->job_member);
    p->source = p->build = p->output = p->workdir = p->hostname = p->image = p->runtime = NULL;
    p->build_lower = p->build_work = p->job_member = NULL;
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) { free(t->name); free(t->host); }
    VEC_EACH(&p->binds, struct pol_bind, b) { free(b->host); free(b->target); }
    VEC_EACH(&p->runtime_paths, char *, s) free(*s);
    VEC_EACH(&p->env_set, struct pol_env, e) { free(e->name); free(e->value); }
    VEC_EACH(&p->env_allow, char *, s) free(*s);
    VEC_EACH(&p->dests, struct pol_dest, d) free(d->host);
    VEC_EACH(&p->devices, struct pol_device, d) free(d->path);
    VEC_EACH(&p->secrets, struct pol_secret, s) {
        free(s->name);
        free(s->target);
        free(s->host_path);
        secret_release(s->value);
    }
    vec_free(&p->toolchains);
    vec_free(&p->binds);
    vec_free(&p->runtime_paths);
    vec_free(&p->env_set);
    vec_free(&p->env_allow);
    vec_free(&p->dests);
    vec_free(&p->devices);
    vec_free(&p->secrets);
}

void policy_clear_stdio(fy_policy *p) {
    free(p->state_dir);
    p->state_dir = NULL;
    for (size_t i = 0; i < FY_ARRAY_SIZE(p->net_host); i++) {
        free(p->net_host[i]);
        p->net_host[i] = NULL;
    }
    metrics_unref(p->obs.metrics);
    memset(&p->obs, 0, sizeof(p->obs));
    for (int i = 0; i < 3; i++) {
        if (p->stdio[i].fd >= 0)
            close(p->stdio[i].fd);
        free(p->stdio[i].path);
        p->stdio[i] = (struct pol_stdio){FY_STDIO_NULL, -1, NULL};
    }
}

void policy_destroy(fy_policy *p) {
    if (!p)
        return;
    policy_clear(p);
    policy_clear_stdio(p);
    free(p);
}

void policy_swap(fy_policy *a, fy_policy *b) {
    fy_policy t = *a;
    *a = *b;
    *b = t;
}

/* ---- profiles ---- */

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define SEC UINT64_C(1000000)

static const char *const runtime_base[] = {
    "/bin", "/etc/alternatives", "/etc/ld.so.cache", "/lib", "/lib32", "/lib64",
    "/libx32", "/sbin", "/usr",
};

static int add_sorted_string(struct vec *v, const char *s);

int policy_add_env(fy_policy *p, const char *name, const char *value);

int policy_apply_profile(fy_policy *p, uint32_t profile) {
    if (profile < FY_PROFILE_DEVELOPMENT || profile > FY_PROFILE_HIGH_ASSURANCE)
        return FY_E_UNSUPPORTED;
    uint32_t floor = p->level_floor, prop_level = p->prop_level, prop_net = p->prop_net;
    int pid = p->origin_pid;
    struct pol_stdio stdio[3];
    memcpy(stdio, p->stdio, sizeof(stdio));
    char *state_dir = p->state_dir;
    char *net_host[FY_ARRAY_SIZE(p->net_host)];
    memcpy(net_host, p->net_host, sizeof(net_host));
    struct obs obs = p->obs;
    policy_clear(p);
    fy_policy fresh = {0};
    struct vec vs[8] = {p->toolchains, p->binds, p->runtime_paths, p->env_set,
                        p->env_allow, p->dests, p->devices, p->secrets};
    *p = fresh;
    p->toolchains = vs[0]; p->binds = vs[1]; p->runtime_paths = vs[2]; p->env_set = vs[3];
    p->env_allow = vs[4]; p->dests = vs[5]; p->devices = vs[6]; p->secrets = vs[7];
    p->origin_pid = pid;
    memcpy(p->stdio, stdio, sizeof(stdio));
    p->state_dir = state_dir;
    memcpy(p->net_host, net_host, sizeof(net_host));
    p->obs = obs;
    p->level_floor = floor;
    p->prop_level = prop_level;
    p->prop_net = prop_net;
    p->profile = profile;

    p->min_level = p->preferred_level = FY_LEVEL_NAMESPACE;
    static const uint8_t strict_controls[FY_CONTROL_MAX_ + 1] = {
        [FY_CONTROL_USERNS] = FY_MODE_REQUIRE,  [FY_CONTROL_MOUNTNS] = FY_MODE_REQUIRE,
        [FY_CONTROL_PIDNS] = FY_MODE_REQUIRE,   [FY_CONTROL_NETNS] = FY_MODE_REQUIRE,
        [FY_CONTROL_IPCNS] = FY_MODE_REQUIRE,   [FY_CONTROL_UTSNS] = FY_MODE_REQUIRE,
        [FY_CONTROL_CGROUPNS] = FY_MODE_PREFER, [FY_CONTROL_SECCOMP] = FY_MODE_REQUIRE,
        [FY_CONTROL_LANDLOCK] = FY_MODE_PREFER, [FY_CONTROL_MEMORY_LIMIT] = FY_MODE_PREFER,
        [FY_CONTROL_PIDS_LIMIT] = FY_MODE_PREFER, [FY_CONTROL_CPU_LIMIT] = FY_MODE_PREFER,
        [FY_CONTROL_IO_LIMIT] = FY_MODE_OFF,    [FY_CONTROL_UID_RANGE] = FY_MODE_PREFER,
    };
    memcpy(p->control, strict_controls, sizeof(p->control));

    for (size_t i = 0; i < FY_ARRAY_SIZE(runtime_base); i++)
        if (add_sorted_string(&p->runtime_paths, runtime_base[i]) < 0)
            return FY_E_NOMEM;
    if (!(p->workdir = util_strdup("/work/build")) || !(p->hostname = util_strdup(POLICY_DEFAULT_HOSTNAME)))
        return FY_E_NOMEM;
    if (policy_add_env(p, "PATH", "/usr/local/bin:/usr/bin:/bin") < 0 ||
        policy_add_env(p, "LANG", "C.UTF-8") < 0)
        return FY_E_NOMEM;
    policy_mark_env_default(p, "PATH");
    policy_mark_env_default(p, "LANG");

    p->net_mode = FY_NET_DENY;
    p->dns = FY_DNS_NONE;
    for (size_t i = 0; i <= FY_LIMIT_MAX_; i++)
        p->limit[i] = FY_UNLIMITED;
    p->limit[FY_LIMIT_MEMORY] = 4 * GiB;
    p->limit[FY_LIMIT_MEMORY_SWAP] = 0;
    p->limit[FY_LIMIT_PIDS] = 4096;
    p->limit[FY_LIMIT_NOFILE] = 65536;
    p->limit[FY_LIMIT_STACK] = 8 * MiB;
    p->limit[FY_LIMIT_CORE] = 0;
    p->limit[FY_LIMIT_WALL_TIME] = 3600 * SEC;
    p->limit[FY_LIMIT_GRACE] = 10 * SEC;
    p->limit[FY_LIMIT_OUTPUT] = 1 * GiB;
    p->limit[FY_LIMIT_TMP_SIZE] = 1 * GiB;
    p->limit[FY_LIMIT_WORK_TMP_SIZE] = 1 * GiB;
    /* Build tools keep their caches under HOME (Go's build cache, pip, npm,
     * ccache, Gradle, Bazel's output base): 64 MiB made them fail with
     * ENOSPC. The memory cgroup bounds what tmpfs pages cost in any case. */
    p->limit[FY_LIMIT_HOME_SIZE] = 1 * GiB;
    p->limit[FY_LIMIT_SHM_SIZE] = 64 * MiB;
    p->user = FY_USER_SANDBOX;
    p->seccomp_class = FY_SECCOMP_GENERAL_BUILD;
    p->id_first = 100000;
    p->id_count = 65536;
    p->gpu = p->usb = p->pty = FY_DEVICES_DENY;

    switch (profile) {
    case FY_PROFILE_DEVELOPMENT:
        /* Impure and labelled so: host network, writable source, a weaker
         * floor; every namespace is still preferred. */
        p->min_level = FY_LEVEL_PROCESS;
        for (size_t i = 1; i <= FY_CONTROL_MAX_; i++)
            if (p->control[i] == FY_MODE_REQUIRE)
                p->control[i] = FY_MODE_PREFER;
        p->control[FY_CONTROL_NETNS] = FY_MODE_OFF;
        p->net_mode = FY_NET_ALLOW;
        p->dns = FY_DNS_HOST;
        p->source_writable = true;
        p->limit[FY_LIMIT_MEMORY] = FY_UNLIMITED;
        p->limit[FY_LIMIT_WALL_TIME] = FY_UNLIMITED;
        if (add_sorted_string(&p->env_allow, "TERM") < 0)
            return FY_E_NOMEM;
        break;
    case FY_PROFILE_STANDARD_CI:
        p->limit[FY_LIMIT_WALL_TIME] = 3 * 3600 * SEC;
        break;
    case FY_PROFILE_HIGH_ASSURANCE:
        p->min_level = p->preferred_level = FY_LEVEL_VIRTUAL_MACHINE;
        /* everything release demands, in a VM: */
        __attribute__((fallthrough));
    case FY_PROFILE_RELEASE:
        /* Strict and hermetic: defence in depth is required, not preferred;
         * a fixed time zone and locale; a smaller output cap. */
        p->control[FY_CONTROL_LANDLOCK] = FY_MODE_REQUIRE;
        p->limit[FY_LIMIT_OUTPUT] = 256 * MiB;
        if (policy_add_env(p, "TZ", "UTC") < 0 || policy_add_env(p, "LC_ALL", "C.UTF-8") < 0)
            return FY_E_NOMEM;
        policy_mark_env_default(p, "TZ");
        policy_mark_env_default(p, "LC_ALL");
        break;
    }
    /* The host program's floor always wins over a profile's default. */
    if (p->min_level < floor)
        p->min_level = floor;
    if (p->preferred_level < p->min_level)
        p->preferred_level = p->min_level;
    return 0;
}

void policy_inject_fault(fy_policy *p, uint32_t step, uint32_t nth) {
    p->fault_step = step;
    p->fault_nth = nth ? nth : 1;
}

void policy_test_legacy_cgroups(fy_policy *p) { p->test_legacy_cgroups = true; }
void policy_test_overlay_disk(fy_policy *p) { p->test_overlay_disk = true; }
void policy_test_copy_init(fy_policy *p) { p->test_copy_init = true; }
void policy_test_no_build_overlay(fy_policy *p) { p->test_no_build_overlay = true; }
void policy_test_skeleton_short(fy_policy *p) { p->test_skeleton_short = true; }
void policy_test_survivor(fy_policy *p) { p->test_survivor = true; }
void policy_test_no_clone_into(fy_policy *p) { p->test_no_clone_into = true; }

void policy_inject_delay(fy_policy *p, uint32_t stage, uint64_t usec) {
    p->delay_stage = stage;
    p->delay_usec = usec;
}

bool policy_is_impure(const fy_policy *p) {
    return p->profile == FY_PROFILE_DEVELOPMENT || p->net_mode == FY_NET_ALLOW;
}

/* ---- helpers used by setters and the JSON codec ---- */

/* Lists keep the order they were given in (errors name indices of the
 * document); a duplicate is not added twice. */
static int add_sorted_string(struct vec *v, const char *s) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(*(char **)vec_at(v, i), s) == 0)
            return 0;
    char *d = strdup(s);
    char **slot = d ? vec_push(v) : NULL;
    if (!slot) {
        free(d);
        return FY_E_NOMEM;
    }
    *slot = d;
    return 0;
}

int policy_add_string(struct vec *v, const char *s) { return add_sorted_string(v, s); }

bool policy_has_string(const struct vec *v, const char *s) {
    VEC_EACH(v, char *, it) if (strcmp(*it, s) == 0) return true;
    return false;
}

void policy_remove_string(struct vec *v, const char *s) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(*(char **)vec_at(v, i), s) == 0) {
            free(*(char **)vec_at(v, i));
            vec_remove(v, i);
            return;
        }
}

int policy_add_env(fy_policy *p, const char *name, const char *value) {
    char *nv = strdup(value);
    if (!nv)
        return FY_E_NOMEM;
    size_t i = 0;
    for (; i < p->env_set.n; i++) {
        struct pol_env *e = vec_at(&p->env_set, i);
        int c = strcmp(e->name, name);
        if (c == 0) {
            free(e->value);
            e->value = nv;
            e->profile_default = false;
            return 0;
        }
        if (c > 0)
            break;
    }
    char *nn = strdup(name);
    if (!nn || !vec_push(&p->env_set)) {
        free(nn);
        free(nv);
        return FY_E_NOMEM;
    }
    struct pol_env *base = p->env_set.items;
    memmove(base + i + 1, base + i, (p->env_set.n - 1 - i) * sizeof(*base));
    base[i] = (struct pol_env){nn, nv};
    return 0;
}

void policy_mark_env_default(fy_policy *p, const char *name) {
    VEC_EACH(&p->env_set, struct pol_env, e)
        if (strcmp(e->name, name) == 0)
            e->profile_default = true;
}

void policy_unset_env(fy_policy *p, const char *name) {
    for (size_t i = 0; i < p->env_set.n; i++) {
        struct pol_env *e = vec_at(&p->env_set, i);
        if (strcmp(e->name, name) == 0) {
            free(e->name);
            free(e->value);
            vec_remove(&p->env_set, i);
            return;
        }
    }
}

const char *policy_get_env(const fy_policy *p, const char *name) {
    VEC_EACH(&p->env_set, struct pol_env, e) if (strcmp(e->name, name) == 0) return e->value;
    return NULL;
}

int policy_set_toolchain(fy_policy *p, const char *name, const char *host) {
    char *h = strdup(host);
    if (!h)
        return FY_E_NOMEM;
    size_t i = 0;
    for (; i < p->toolchains.n; i++) {
        struct pol_toolchain *t = vec_at(&p->toolchains, i);
        int c = strcmp(t->name, name);
        if (c == 0) {
            free(t->host);
            t->host = h;
            return 0;
        }
        if (c > 0)
            break;
    }
    char *n = strdup(name);
    if (!n || !vec_push(&p->toolchains)) {
        free(n);
        free(h);
        return FY_E_NOMEM;
    }
    struct pol_toolchain *base = p->toolchains.items;
    memmove(base + i + 1, base + i, (p->toolchains.n - 1 - i) * sizeof(*base));
    base[i] = (struct pol_toolchain){n, h};
    return 0;
}

/* ---- deep copy ---- */

static bool dup_str(char **dst, const char *src) {
    *dst = NULL;
    if (!src)
        return true;
    return (*dst = strdup(src)) != NULL;
}

static bool dup_vec(struct vec *dst, const struct vec *src) {
    vec_init(dst, src->size);
    if (!src->n)
        return true;
    dst->items = malloc(src->n * src->size);
    if (!dst->items)
        return false;
    memcpy(dst->items, src->items, src->n * src->size);
    dst->n = dst->cap = src->n;
    return true;
}

fy_policy *policy_dup(const fy_policy *s) {
    fy_policy *p = policy_alloc();
    if (!p)
        return NULL;
    int pid = p->origin_pid;
    /* Start from a shallow copy, then replace every owned pointer. On any
     * failure the copy's pointers are NULLed first so cleanup is safe. */
    *p = *s;
    p->origin_pid = pid;
    p->source = p->build = p->output = p->workdir = p->hostname = p->image = p->runtime = NULL;
    p->build_lower = p->build_work = p->job_member = NULL;
    p->state_dir = NULL;
    memset(p->net_host, 0, sizeof(p->net_host));
    for (int i = 0; i < 3; i++)
        p->stdio[i] = (struct pol_stdio){s->stdio[i].mode, -1, NULL, s->stdio[i].fn, s->stdio[i].userdata};
    struct vec *vs[] = {&p->toolchains, &p->binds, &p->runtime_paths, &p->env_set,
                        &p->env_allow, &p->dests, &p->devices, &p->secrets};
    for (size_t i = 0; i < FY_ARRAY_SIZE(vs); i++)
        vec_init(vs[i], vs[i]->size);
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        if (s->stdio[i].fd >= 0 && (p->stdio[i].fd = os_dup_cloexec(s->stdio[i].fd)) < 0)
            ok = false;
        ok = ok && dup_str(&p->stdio[i].path, s->stdio[i].path);
    }
    ok = ok && dup_str(&p->state_dir, s->state_dir);
    for (size_t i = 0; i < FY_ARRAY_SIZE(p->net_host); i++)
        ok = ok && dup_str(&p->net_host[i], s->net_host[i]);
    metrics_ref(p->obs.metrics); /* the shallow copy took the pointer */
    ok = ok && dup_str(&p->source, s->source) && dup_str(&p->build, s->build) &&
              dup_str(&p->output, s->output) && dup_str(&p->workdir, s->workdir) &&
              dup_str(&p->hostname, s->hostname) && dup_str(&p->image, s->image) &&
              dup_str(&p->build_lower, s->build_lower) && dup_str(&p->build_work, s->build_work) &&
              dup_str(&p->runtime, s->runtime) && dup_str(&p->job_member, s->job_member);
    ok = ok && dup_vec(&p->toolchains, &s->toolchains) && dup_vec(&p->binds, &s->binds) &&
         dup_vec(&p->runtime_paths, &s->runtime_paths) && dup_vec(&p->env_set, &s->env_set) &&
         dup_vec(&p->env_allow, &s->env_allow) && dup_vec(&p->dests, &s->dests) &&
         dup_vec(&p->devices, &s->devices) && dup_vec(&p->secrets, &s->secrets);
    if (!ok) {
        /* vec items still alias the source: forget them before clearing. */
        for (size_t i = 0; i < FY_ARRAY_SIZE(vs); i++) {
            free(vs[i]->items);
            vec_init(vs[i], vs[i]->size);
        }
        policy_clear(p);
        policy_clear_stdio(p);
        free(p);
        return NULL;
    }
    /* Deep-copy the strings inside the copied items; on failure NULL the
     * rest so policy_clear frees exactly what was copied. */
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) {
        ok = ok && dup_str(&t->name, t->name) && dup_str(&t->host, t->host);
        if (!ok) t->name = t->host = NULL;
    }
    VEC_EACH(&p->binds, struct pol_bind, b) {
        ok = ok && dup_str(&b->host, b->host) && dup_str(&b->target, b->target);
        if (!ok) b->host = b->target = NULL;
    }
    VEC_EACH(&p->runtime_paths, char *, r) { ok = ok && dup_str(r, *r); if (!ok) *r = NULL; }
    VEC_EACH(&p->env_set, struct pol_env, e) {
        ok = ok && dup_str(&e->name, e->name) && dup_str(&e->value, e->value);
        if (!ok) e->name = e->value = NULL;
    }
    VEC_EACH(&p->env_allow, char *, r) { ok = ok && dup_str(r, *r); if (!ok) *r = NULL; }
    VEC_EACH(&p->dests, struct pol_dest, d) { ok = ok && dup_str(&d->host, d->host); if (!ok) d->host = NULL; }
    VEC_EACH(&p->devices, struct pol_device, d) { ok = ok && dup_str(&d->path, d->path); if (!ok) d->path = NULL; }
    VEC_EACH(&p->secrets, struct pol_secret, x) {
        const unsigned char *v = x->value;
        ok = ok && dup_str(&x->name, x->name) && dup_str(&x->target, x->target) &&
             dup_str(&x->host_path, x->host_path);
        x->value = NULL;
        if (ok && v && !(x->value = secret_alloc(v, x->len)))
            ok = false;
        if (!ok) x->name = x->target = x->host_path = NULL;
    }
    if (!ok) {
        policy_clear(p);
        policy_clear_stdio(p);
        free(p);
        return NULL;
    }
    return p;
}
