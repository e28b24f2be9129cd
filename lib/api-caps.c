/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: the capability probe and its snapshot. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backend.h"
#include "caps.h"
#include "internal.h"

static const char *const cap_names[FY_CAP_MAX_ + 1] = {
    [FY_CAP_USERNS] = "userns",           [FY_CAP_MOUNTNS] = "mountns",
    [FY_CAP_PIDNS] = "pidns",             [FY_CAP_NETNS] = "netns",
    [FY_CAP_IPCNS] = "ipcns",             [FY_CAP_UTSNS] = "utsns",
    [FY_CAP_CGROUPNS] = "cgroupns",       [FY_CAP_UID_RANGE] = "uid-range",
    [FY_CAP_MOUNT_API] = "mount-api",     [FY_CAP_OPENAT2] = "openat2",
    [FY_CAP_SECCOMP] = "seccomp",         [FY_CAP_SECCOMP_NOTIFY] = "seccomp-notify",
    [FY_CAP_LANDLOCK] = "landlock",       [FY_CAP_NO_NEW_PRIVS] = "no-new-privs",
    [FY_CAP_PIDFD] = "pidfd",             [FY_CAP_CLONE3] = "clone3",
    [FY_CAP_CLONE_INTO_CGROUP] = "clone-into-cgroup",
    [FY_CAP_CGROUP_V1] = "cgroup-v1",     [FY_CAP_CGROUP_V2] = "cgroup-v2",
    [FY_CAP_CGROUP_MEMORY] = "cgroup-memory", [FY_CAP_CGROUP_PIDS] = "cgroup-pids",
    [FY_CAP_CGROUP_CPU] = "cgroup-cpu",   [FY_CAP_CGROUP_IO] = "cgroup-io",
    [FY_CAP_CGROUP_FREEZE] = "cgroup-freeze", [FY_CAP_CGROUP_KILL] = "cgroup-kill",
    [FY_CAP_KVM] = "kvm",                 [FY_CAP_QEMU] = "qemu",
    [FY_CAP_QEMU_TCG] = "qemu-tcg",       [FY_CAP_QEMU_MICROVM] = "qemu-microvm",
    [FY_CAP_FIRECRACKER] = "firecracker", [FY_CAP_CLOUD_HYPERVISOR] = "cloud-hypervisor",
    [FY_CAP_OCI_RUNTIME] = "oci-runtime", [FY_CAP_NFTABLES] = "nftables",
    [FY_CAP_PASTA] = "pasta",             [FY_CAP_CONFIDENTIAL_VM] = "confidential-vm",
    [FY_CAP_EXEC_INIT] = "exec-init",
};

const char *fy_cap_name(uint32_t cap) { return cap <= FY_CAP_MAX_ ? cap_names[cap] : NULL; }

const char *fy_level_name(uint32_t level) {
    return level < FY_ARRAY_SIZE(level_names) ? level_names[level] : NULL;
}

#define FY_PROBE_KNOWN (FY_PROBE_FRESH | FY_PROBE_NO_VM)

static int probe_now_in(uint64_t flags, const char *cgroup_dir, fy_caps **ret, fy_error **reterr) {
    fy_caps *c = caps_new();
    if (!c)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
    c->probe_flags = flags;
    if (cgroup_dir && !(c->host.cg2_delegated = util_strdup(cgroup_dir))) {
        caps_free_internal(c);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
    }
    uint64_t t0 = util_now_usec();
    int r = 0;
    for (size_t f = 0; r >= 0 && backend_families[f]; f++)
        if (backend_families[f]->probe)
            r = backend_families[f]->probe(c, flags, reterr);
    if (r < 0) {
        caps_free_internal(c);
        return r;
    }
    caps_finish(c);
    c->probe_usec = util_now_usec() - t0;
    *ret = c;
    return 0;
}

static int probe_now(uint64_t flags, fy_caps **ret, fy_error **reterr) {
    return probe_now_in(flags, NULL, ret, reterr);
}

int fy_probe_cgroup(uint64_t flags, const char *cgroup_dir, fy_caps **ret, fy_error **reterr) {
    if (!ret || !cgroup_dir)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "ret or cgroup_dir is NULL");
    if (flags & ~FY_PROBE_KNOWN)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "reserved probe flags set");
    if (cgroup_dir[0] != '/')
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "cgroup_dir must be absolute");
    for (size_t f = 0; backend_families[f]; f++)
        if (backend_families[f]->delegated_cgroups)
            return probe_now_in(flags & ~FY_PROBE_FRESH, cgroup_dir, ret, reterr);
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PROBE, 0, NULL,
                   "no backend in this build uses cgroups (they exist on Linux only)");
}

/* The one piece of process-wide state: the cached probe, computed once per
 * flag set (again, a minute later at the earliest, when it was
 * inconclusive). It is only ever read under its lock, and only copies
 * leave it: no caller holds a pointer into it, so an entry replaced is
 * freed at once and the library's unload frees the rest. */
static struct probe_cache {
    fy_caps *caps;
    bool done;
    uint64_t at_usec; /* when it was probed */
} cache[2];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
/* An inconclusive probe (a probe child timed out even on its retry: a busy
 * host, not a missing mechanism) is probed again by a later call once this
 * long has passed, instead of deciding for the process's whole life. */
#define CACHE_INCONCLUSIVE_USEC (60ull * 1000000)

/* A fork while another thread probed under the lock: the child probes
 * again (what the other thread was writing is not trusted; the entries
 * are let go of, not freed: they may be half written). */
static void cache_fork_child(void) {
    if (util_mutex_reclaim(&cache_mu))
        cache[0].done = cache[1].done = false;
}

__attribute__((constructor)) static void cache_register_fork(void) { util_on_fork_child(cache_fork_child); }

/* The library unloaded (dlclose) or the host exiting: the cached probes are
 * freed (each load of the library kept its own, about 7 kB, for good). A
 * thread of an exiting host still probing under the lock keeps them: the
 * memory goes with the process. */
__attribute__((destructor)) static void cache_unload(void) {
    if (pthread_mutex_trylock(&cache_mu) != 0)
        return;
    for (size_t i = 0; i < sizeof(cache) / sizeof(cache[0]); i++) {
        if (cache[i].done)
            caps_free_internal(cache[i].caps);
        cache[i] = (struct probe_cache){0};
    }
    pthread_mutex_unlock(&cache_mu);
}

/* A copy of the cached probe of flags (0 or FY_PROBE_NO_VM), made or remade
 * under the lock: *ret is the caller's. A probe that failed (out of memory,
 * say) is not cached: the next call probes again (it was kept, and every
 * later fy_prepare without caps of the process failed with FY_E_INTERNAL
 * and no error object). */
static int cache_get(uint64_t flags, fy_caps **ret, fy_error **reterr) {
    struct probe_cache *pc = (flags & FY_PROBE_NO_VM) ? &cache[1] : &cache[0];
    pthread_mutex_lock(&cache_mu);
    bool stale = pc->done && pc->caps->inconclusive && util_now_usec() - pc->at_usec >= CACHE_INCONCLUSIVE_USEC;
    if (!pc->done || stale) {
        fy_caps *c = NULL;
        fy_error *e = NULL;
        int rc = probe_now(flags, &c, &e);
        if (rc < 0 && !pc->done) {
            pthread_mutex_unlock(&cache_mu);
            if (reterr)
                *reterr = e;
            else
                fy_error_free(e);
            return rc;
        }
        fy_error_free(e); /* (a failed re-probe of a stale entry: the entry stands) */
        if (rc >= 0) {
            if (stale)
                caps_free_internal(pc->caps);
            pc->caps = c;
            pc->done = true;
            pc->at_usec = util_now_usec();
        }
    }
    fy_caps *copy = caps_dup(pc->caps);
    pthread_mutex_unlock(&cache_mu);
    if (!copy)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
    *ret = copy;
    return 0;
}

int fy_probe(uint64_t flags, fy_caps **ret, fy_error **reterr) {
    if (!ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "ret is NULL");
    if (flags & ~FY_PROBE_KNOWN)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL,
                       "reserved probe flags 0x%llx set", (unsigned long long)(flags & ~FY_PROBE_KNOWN));
    if (flags & FY_PROBE_FRESH)
        return probe_now(flags & ~FY_PROBE_FRESH, ret, reterr);
    return cache_get(flags & FY_PROBE_NO_VM, ret, reterr);
}

/* fy_probe cache for internal users (fy_prepare with caps == NULL):
 * flags 0 or FY_PROBE_NO_VM (the VM probe can take a second or more, so
 * fy_prepare asks for it only when nothing else satisfies the policy). */
int caps_get_cached(uint64_t flags, fy_caps **ret, fy_error **reterr) {
    return cache_get(flags & FY_PROBE_NO_VM, ret, reterr);
}

/* ---- persisted snapshots ---- */

/* The key: this build, the flags, and what every folder's probe depends on. */
static char *snapshot_key(uint64_t flags) {
    struct strbuf key;
    strbuf_init(&key);
    strbuf_printf(&key, "forgeyard-caps 2\nlibrary %s\ncaps %u\nflags %llu\n", FY_VERSION_STRING,
                  (unsigned)FY_CAP_MAX_, (unsigned long long)flags);
    for (size_t f = 0; backend_families[f]; f++) {
        strbuf_printf(&key, "family %s\n", backend_families[f]->name);
        if (backend_families[f]->fingerprint && backend_families[f]->fingerprint(&key) < 0) {
            strbuf_free(&key);
            return NULL;
        }
    }
    return strbuf_steal(&key);
}

static const struct fy_backend_family *snapshot_store_family(void) {
    for (size_t f = 0; backend_families[f]; f++)
        if (backend_families[f]->snapshot_load && backend_families[f]->snapshot_store)
            return backend_families[f];
    return NULL;
}

int fy_probe_snapshot(uint64_t flags, const char *dir, fy_caps **ret, fy_error **reterr) {
    if (!ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "ret is NULL");
    if (flags & ~FY_PROBE_KNOWN)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL,
                       "reserved probe flags 0x%llx set", (unsigned long long)(flags & ~FY_PROBE_KNOWN));
    if (dir && dir[0] != '/')
        return err_set(reterr, FY_E_INVAL, FY_STEP_PROBE, 0, NULL, "dir must be absolute");
    const struct fy_backend_family *store = snapshot_store_family();
    uint64_t pflags = flags & ~FY_PROBE_FRESH;
    char *key = store ? snapshot_key(pflags) : NULL;
    if (key && !(flags & FY_PROBE_FRESH)) {
        char *text = store->snapshot_load(dir, key, NULL);
        fy_caps *c = text ? caps_deserialize(text, strlen(text)) : NULL;
        free(text);
        for (size_t f = 0; c && backend_families[f]; f++)
            if (backend_families[f]->snapshot_verify && backend_families[f]->snapshot_verify(c) < 0) {
                caps_free_internal(c);
                c = NULL;
            }
        if (c && c->probe_flags == pflags) {
            caps_finish(c);
            c->from_snapshot = true;
            free(key);
            *ret = c;
            return 0;
        }
        caps_free_internal(c);
    }
    int r = probe_now(pflags, ret, reterr);
    for (size_t f = 0; r >= 0 && key && backend_families[f]; f++)
        if (backend_families[f]->snapshot_extras && backend_families[f]->snapshot_extras(*ret) < 0) {
            caps_free_internal(*ret);
            *ret = NULL;
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, ENOMEM, NULL, "out of memory");
        }
    /* An inconclusive probe is not saved: a busy host at probe time must not
     * decide for every later process. */
    if (r >= 0 && key && !(*ret)->inconclusive) {
        char *text = caps_serialize(*ret);
        if (text)
            (void)store->snapshot_store(dir, key, text); /* a snapshot is an optimisation */
        free(text);
    }
    free(key);
    return r;
}

int fy_caps_from_snapshot(const fy_caps *caps) { return caps && caps->from_snapshot ? 1 : 0; }

/* A snapshot owns memory only, so a forked copy may free it too. */
void fy_caps_free(fy_caps *caps) { caps_free_internal(caps); }

int fy_caps_has(const fy_caps *caps, uint32_t cap) {
    if (!caps)
        return FY_E_INVAL;
    if (cap == 0 || cap > FY_CAP_MAX_)
        return FY_E_UNSUPPORTED;
    return caps->e[cap].state == CAP_PRESENT;
}

int fy_caps_value(const fy_caps *caps, uint32_t cap, int64_t *ret_value) {
    if (!caps || !ret_value)
        return FY_E_INVAL;
    if (cap == 0 || cap > FY_CAP_MAX_)
        return FY_E_UNSUPPORTED;
    *ret_value = caps->e[cap].value;
    return 0;
}

const char *fy_caps_reason(const fy_caps *caps, uint32_t cap) {
    if (!caps || cap == 0 || cap > FY_CAP_MAX_)
        return NULL;
    return caps->e[cap].reason ? caps->e[cap].reason : "";
}

const char *fy_caps_hint(const fy_caps *caps, uint32_t cap) {
    if (!caps || cap == 0 || cap > FY_CAP_MAX_)
        return NULL;
    return caps->e[cap].hint;
}

int fy_caps_max_level(const fy_caps *caps) {
    if (!caps)
        return FY_E_INVAL;
    return caps->max_level;
}

static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

int fy_caps_to_json(const fy_caps *caps, char **ret_json, fy_error **reterr) {
    if (!caps || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "caps or ret_json is NULL");
    json_t *root = json_object(), *capo = json_object(), *backs = json_array();
    if (!root || !capo || !backs)
        goto oom;
    const struct caps_host *h = &caps->host;
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "library", json_string(FY_VERSION_STRING));
    json_object_set_new(root, "kernel", jstr_or_null(h->kernel_release));
    json_object_set_new(root, "root", json_boolean(h->is_root));
    json_object_set_new(root, "uid", json_integer(h->uid));
    json_object_set_new(root, "cgroup_mode", jstr_or_null(h->cgroup_mode));
    json_object_set_new(root, "max_level", json_string(fy_level_name((uint32_t)caps->max_level)));
    json_object_set_new(root, "probe_usec", json_integer((json_int_t)caps->probe_usec));
    json_object_set_new(root, "snapshot", json_boolean(caps->from_snapshot));
    json_object_set_new(root, "inconclusive", json_boolean(caps->inconclusive));
    const struct fy_backend_ops *table[FY_BACKENDS_MAX];
    size_t nb = backends_collect(table, FY_BACKENDS_MAX);
    for (size_t b = 0; b < nb; b++) {
        struct strbuf why;
        strbuf_init(&why);
        bool ok = table[b]->usable(caps, &why);
        char *w = strbuf_steal(&why);
        json_t *bo = json_object();
        if (!bo) {
            free(w);
            goto oom;
        }
        json_object_set_new(bo, "name", json_string(table[b]->name));
        json_object_set_new(bo, "level", json_string(fy_level_name(table[b]->level)));
        json_object_set_new(bo, "usable", json_boolean(ok));
        json_object_set_new(bo, "missing", ok ? json_null() : jstr_or_null(w));
        free(w);
        json_array_append_new(backs, bo);
    }
    json_object_set_new(root, "backends", backs);
    backs = NULL;
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++) {
        const struct cap_entry *e = &caps->e[i];
        json_t *o = json_object();
        if (!o)
            goto oom;
        json_object_set_new(o, "available", json_boolean(e->state == CAP_PRESENT));
        json_object_set_new(o, "value", json_integer(e->value));
        json_object_set_new(o, "reason", jstr_or_null(e->reason));
        json_object_set_new(o, "hint", jstr_or_null(e->hint));
        json_object_set_new(capo, cap_names[i], o);
    }
    json_object_set_new(root, "capabilities", capo);
    capo = NULL;
    /* What a backend folder's probe verified per control ("report.<name>"
     * facts: "enforced: ...", "requested-unverified: ...", ...). */
    json_t *ctl = NULL;
    for (size_t i = 0; i < h->nfacts; i++)
        if (!strncmp(h->facts[i].key, "report.", 7) && (ctl || (ctl = json_object())))
            json_object_set_new(ctl, h->facts[i].key + 7, json_string(h->facts[i].value));
    if (ctl)
        json_object_set_new(root, "controls", ctl);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!s)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    *ret_json = s;
    return 0;
oom:
    json_decref(root);
    json_decref(capo);
    json_decref(backs);
    return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
}
