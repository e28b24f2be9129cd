/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: the policy builder. Every setter validates its input
 * the same way the policy-file parser does and names the JSON path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "os.h"
#include "policy.h"

#define CHECK_POLICY(p)                                                                      \
    do {                                                                                     \
        if (!(p))                                                                            \
            return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "policy is NULL");   \
        if ((p)->origin_pid != util_getpid())                                           \
            return err_set(reterr, FY_E_FORKED, FY_STEP_POLICY, 0, NULL,                     \
                           "policy was created in another process");                         \
    } while (0)

#define CHECK_ARG(a)                                                                              \
    do {                                                                                          \
        if (!(a))                                                                                 \
            return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "%s is NULL", #a);        \
    } while (0)

static int oom(fy_error **reterr) { return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory"); }

static int bad(fy_error **reterr, const char *loc, const char *msg) {
    return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, loc, "%s", msg);
}

static int replace_str(char **field, const char *value, fy_error **reterr) {
    char *d = util_strdup(value);
    if (value && !d)
        return oom(reterr);
    free(*field);
    *field = d;
    return 0;
}

int fy_policy_new(uint32_t profile, fy_policy **ret, fy_error **reterr) {
    if (!ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "ret is NULL");
    if (!fy_profile_name(profile))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown profile %u", profile);
    fy_policy *p = policy_alloc();
    if (!p || policy_apply_profile(p, profile) < 0) {
        policy_destroy(p);
        return oom(reterr);
    }
    *ret = p;
    return 0;
}

void fy_policy_free(fy_policy *policy) { policy_destroy(policy); }

int fy_policy_load_json(fy_policy *policy, const char *json, size_t len, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!json && len)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "json is NULL");
    /* All or nothing: work on a copy and swap it in only when valid. */
    fy_policy *copy = policy_dup(policy);
    if (!copy)
        return oom(reterr);
    fy_error *e = NULL;
    int r = policy_from_json(copy, json ? json : "", len, &e); /* validates too */
    if (r == FY_E_POLICY && e && e->message && strstr(e->message, "organization minimum"))
        obs_audit(&policy->obs, FY_AUDIT_DOWNGRADE_REJECTED, "%s: %s", e->location ? e->location : "$", e->message);
    if (reterr)
        *reterr = e;
    else
        fy_error_free(e);
    if (r >= 0)
        policy_swap(policy, copy);
    policy_destroy(copy);
    return r < 0 ? r : 0;
}

int fy_policy_to_json(const fy_policy *policy, char **ret_json, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "ret_json is NULL");
    char *s = policy_to_json(policy);
    if (!s)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    *ret_json = s;
    return 0;
}

int fy_policy_validate(const fy_policy *policy, fy_error **reterr) {
    CHECK_POLICY(policy);
    return policy_validate(policy, reterr);
}

/* ---- isolation ---- */

int fy_policy_set_isolation(fy_policy *policy, uint32_t min_level, uint32_t preferred_level, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!fy_level_name(min_level) || !fy_level_name(preferred_level))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown isolation level %u",
                       fy_level_name(min_level) ? preferred_level : min_level);
    if (preferred_level < min_level)
        return bad(reterr, "$.isolation.preferred_level", "weaker than min_level");
    if (min_level < policy->level_floor)
        return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, "$.isolation.min_level",
                       "%s is weaker than the organization minimum (%s)", fy_level_name(min_level),
                       fy_level_name(policy->level_floor));
    policy->min_level = min_level;
    policy->preferred_level = preferred_level;
    return 0;
}

int fy_policy_set_level_floor(fy_policy *policy, uint32_t level, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!fy_level_name(level))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown isolation level %u", level);
    policy->level_floor = level;
    /* Raising the floor raises the policy with it: the host program's
     * minimum always wins and is visible in the canonical JSON. */
    if (policy->min_level < level)
        policy->min_level = level;
    if (policy->preferred_level < policy->min_level)
        policy->preferred_level = policy->min_level;
    return 0;
}

int fy_policy_set_control(fy_policy *policy, uint32_t control, uint32_t mode, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (control == 0 || control > FY_CONTROL_MAX_ || !control_key(control))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown control %u", control);
    if (mode > FY_MODE_REQUIRE)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown mode %u", mode);
    policy->control[control] = (uint8_t)mode;
    return 0;
}

/* ---- filesystem ---- */

int fy_policy_set_source(fy_policy *policy, const char *host_path, int writable, fy_error **reterr) {
    CHECK_POLICY(policy);
    int r;
    if (host_path && (r = check_host_path(host_path, "$.filesystem.source.path", reterr)) < 0)
        return r;
    if ((r = replace_str(&policy->source, host_path, reterr)) < 0)
        return r;
    policy->source_writable = writable != 0;
    return 0;
}

int fy_policy_set_build(fy_policy *policy, const char *host_path, fy_error **reterr) {
    CHECK_POLICY(policy);
    int r;
    if (host_path && (r = check_host_path(host_path, "$.filesystem.build", reterr)) < 0)
        return r;
    return replace_str(&policy->build, host_path, reterr);
}

int fy_policy_set_output(fy_policy *policy, const char *host_path, fy_error **reterr) {
    CHECK_POLICY(policy);
    int r;
    if (host_path && (r = check_host_path(host_path, "$.filesystem.output", reterr)) < 0)
        return r;
    return replace_str(&policy->output, host_path, reterr);
}

int fy_policy_add_toolchain(fy_policy *policy, const char *name, const char *host_path, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(name);
    CHECK_ARG(host_path);
    char loc[128];
    snprintf(loc, sizeof(loc), "$.filesystem.toolchains.%.64s", name ? name : "");
    int r = check_simple_name(name, "toolchain name", loc, reterr);
    if (r < 0 || (r = check_host_path(host_path, loc, reterr)) < 0)
        return r;
    return policy_set_toolchain(policy, name, host_path) < 0 ? oom(reterr) : 0;
}

int fy_policy_add_bind(fy_policy *policy, const char *host_path, const char *target, uint32_t flags,
                       fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(host_path);
    CHECK_ARG(target);
    if (flags & ~(FY_BIND_WRITABLE | FY_BIND_OPTIONAL))
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "reserved bind flags 0x%x set", flags);
    char lh[64], lt[64];
    snprintf(lh, sizeof(lh), "$.filesystem.binds[%zu].host", policy->binds.n);
    snprintf(lt, sizeof(lt), "$.filesystem.binds[%zu].target", policy->binds.n);
    int r = check_host_path(host_path, lh, reterr);
    if (r < 0 || (r = check_sandbox_target(target, lt, reterr)) < 0)
        return r;
    if (policy->binds.n >= POLICY_MAX_BINDS)
        return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, "$.filesystem.binds", "at most %d entries are allowed",
                       POLICY_MAX_BINDS);
    VEC_EACH(&policy->binds, struct pol_bind, b) if (strcmp(b->target, target) == 0)
        return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, lt, "duplicate mount target %s", target);
    char *h = strdup(host_path), *t = strdup(target);
    struct pol_bind *b = h && t ? vec_push(&policy->binds) : NULL;
    if (!b) {
        free(h);
        free(t);
        return oom(reterr);
    }
    *b = (struct pol_bind){h, t, flags};
    return 0;
}

int fy_policy_add_runtime_path(fy_policy *policy, const char *path, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(path);
    const char *loc = "$.filesystem.runtime_paths";
    int r = check_host_path(path, loc, reterr);
    if (r < 0 || (r = check_sandbox_target(path, loc, reterr)) < 0)
        return r;
    return policy_add_string(&policy->runtime_paths, path) < 0 ? oom(reterr) : 0;
}

int fy_policy_set_workdir(fy_policy *policy, const char *path, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(path);
    int r = check_workdir(policy, path, "$.filesystem.workdir", reterr);
    return r < 0 ? r : replace_str(&policy->workdir, path, reterr);
}

int fy_policy_set_hostname(fy_policy *policy, const char *hostname, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(hostname);
    int r = check_hostname(hostname, "$.filesystem.hostname", reterr);
    return r < 0 ? r : replace_str(&policy->hostname, hostname, reterr);
}

int fy_policy_set_image(fy_policy *policy, const char *ref, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (ref) {
        int r = check_image_ref(ref, "$.filesystem.image", reterr);
        if (r < 0)
            return r;
        if ((policy->profile == FY_PROFILE_RELEASE || policy->profile == FY_PROFILE_HIGH_ASSURANCE) &&
            !strstr(ref, "@sha256:"))
            return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, "$.filesystem.image",
                           "the %s profile runs images by digest only (REF@sha256:...), not %s",
                           fy_profile_name(policy->profile), ref);
    }
    return replace_str(&policy->image, ref, reterr);
}

int fy_policy_set_runtime(fy_policy *policy, const char *name, uint32_t flags, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (flags & ~(uint32_t)FY_RUNTIME_ACCEPT_KNOWN_ISSUES)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, "$.isolation.runtime", "unknown runtime flags 0x%x",
                       (unsigned)flags);
    if (name && (!*name || strlen(name) > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name)))
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, "$.isolation.runtime",
                       "a runtime name is a short lower-case word (\"runc\"), not \"%s\"", name);
    int r = replace_str(&policy->runtime, name, reterr);
    if (r >= 0)
        policy->runtime_flags = name ? flags : 0;
    return r;
}

/* ---- environment ---- */

int fy_policy_set_env(fy_policy *policy, const char *name, const char *value, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(name);
    CHECK_ARG(value);
    char loc[300];
    util_loc_key(loc, sizeof(loc), "$.environment.set.", name);
    int r = check_env_name(name, loc, reterr);
    if (r < 0 || (r = check_env_value(value, loc, reterr)) < 0)
        return r;
    if (policy_has_string(&policy->env_allow, name))
        return bad(reterr, loc, "already allowed from the host environment; unset that first");
    /* (the bound fy_prepare holds it to, at the setter: 100,000 calls took
     * 21 s of sorted inserts before any refusal) */
    if (policy->env_set.n >= POLICY_MAX_ENV && !policy_get_env(policy, name))
        return err_set(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, "$.environment.set", "at most %d entries are allowed",
                       POLICY_MAX_ENV);
    return policy_add_env(policy, name, value) < 0 ? oom(reterr) : 0;
}

int fy_policy_unset_env(fy_policy *policy, const char *name, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(name);
    int r = check_env_name(name, "$.environment", reterr);
    if (r < 0)
        return r;
    policy_unset_env(policy, name);
    policy_remove_string(&policy->env_allow, name);
    return 0;
}

int fy_policy_allow_env(fy_policy *policy, const char *name, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(name);
    int r = check_env_name(name, "$.environment.allow", reterr);
    if (r < 0)
        return r;
    if (policy_get_env(policy, name))
        return bad(reterr, "$.environment.allow", "already set explicitly; unset that first");
    return policy_add_string(&policy->env_allow, name) < 0 ? oom(reterr) : 0;
}

/* ---- network ---- */

int fy_policy_set_network(fy_policy *policy, uint32_t mode, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!net_mode_name(mode))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, "$.network.mode", "unknown network mode %u", mode);
    policy->net_mode = mode;
    return 0;
}

int fy_policy_set_dns(fy_policy *policy, uint32_t dns, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!dns_name(dns))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, "$.network.dns", "unknown dns mode %u", dns);
    policy->dns = dns;
    return 0;
}

int fy_policy_set_job_member(fy_policy *policy, const char *member, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!member) {
        free(policy->job_member);
        policy->job_member = NULL;
        policy->njob_ports = 0; /* (network.job.ports are a member's) */
        return 0;
    }
    int r = check_job_member(member, "$.network.job.member", reterr);
    return r < 0 ? r : replace_str(&policy->job_member, member, reterr);
}

int fy_policy_add_destination(fy_policy *policy, const char *host, uint32_t proto, uint32_t port_min,
                              uint32_t port_max, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(host);
    char loc[64];
    snprintf(loc, sizeof(loc), "$.network.destinations[%zu].host", policy->dests.n);
    int r = check_destination_host(host, loc, reterr);
    if (r < 0)
        return r;
    snprintf(loc, sizeof(loc), "$.network.destinations[%zu].proto", policy->dests.n);
    if (!proto_name(proto))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, loc, "unknown protocol %u", proto);
    snprintf(loc, sizeof(loc), "$.network.destinations[%zu].ports", policy->dests.n);
    if (port_min < 1 || port_max > 65535 || port_min > port_max)
        return bad(reterr, loc, "ports must be within 1..65535 with min <= max");
    char *h = strdup(host);
    struct pol_dest *d = h ? vec_push(&policy->dests) : NULL;
    if (!d) {
        free(h);
        return oom(reterr);
    }
    *d = (struct pol_dest){h, proto, port_min, port_max};
    return 0;
}

int fy_policy_set_network_host(fy_policy *policy, uint32_t setting, const char *value, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (setting < 1 || setting > FY_NETHOST_MAX_)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown network host setting %u", setting);
    int r;
    if (value && setting != FY_NETHOST_LINK_SUBNET && (r = check_host_path(value, "$.network.host", reterr)) < 0)
        return r;
    if (value && setting == FY_NETHOST_LINK_SUBNET) {
        unsigned a, b, c, d, len;
        char tail;
        if (sscanf(value, "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &len, &tail) != 5 || a > 255 || b > 255 ||
            c > 255 || d > 255 || len < 16 || len > 24 ||
            ((((uint32_t)a << 24 | b << 16 | c << 8 | d) << len) & 0xffffffffu) != 0)
            return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, "$.network.host",
                           "\"%s\" is not an IPv4 block from a /16 to a /24 (host bits zero)", value);
        uint32_t base = (uint32_t)a << 24 | b << 16 | c << 8 | d, own = UINT32_C(0x64400000); /* 100.64.0.0 */
        if ((base >> (32 - len)) == (own >> (32 - len)))
            return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, "$.network.host",
                           "the block covers 100.64.0.0/30, the sandbox's own link; pick another one");
    }
    return replace_str(&policy->net_host[setting], value, reterr);
}

/* ---- resources ---- */

int fy_policy_set_limit(fy_policy *policy, uint32_t limit, uint64_t value, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (limit == 0 || limit > FY_LIMIT_MAX_)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown limit %u", limit);
    char loc[64];
    snprintf(loc, sizeof(loc), "$.resources.%s", limit_key(limit));
    int r = check_limit(limit, value, loc, reterr);
    if (r < 0)
        return r;
    policy->limit[limit] = value;
    return 0;
}

int fy_policy_get_limit(const fy_policy *policy, uint32_t limit, uint64_t *ret_value) {
    if (!policy || !ret_value)
        return FY_E_INVAL;
    if (policy->origin_pid != util_getpid())
        return FY_E_FORKED;
    if (limit == 0 || limit > FY_LIMIT_MAX_)
        return FY_E_UNSUPPORTED;
    *ret_value = policy->limit[limit];
    return 0;
}

/* ---- process ---- */

int fy_policy_set_user(fy_policy *policy, uint32_t user, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!user_name(user))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, "$.process.user", "unknown user mode %u", user);
    policy->user = user;
    return 0;
}

int fy_policy_set_seccomp_class(fy_policy *policy, uint32_t seccomp_class, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (!seccomp_class_name(seccomp_class))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, "$.process.seccomp",
                       "unknown seccomp class %u", seccomp_class);
    policy->seccomp_class = seccomp_class;
    return 0;
}

int fy_policy_set_id_range(fy_policy *policy, uint32_t first_id, uint32_t count, fy_error **reterr) {
    CHECK_POLICY(policy);
    if (first_id < 1)
        return bad(reterr, "$.process.id_range.first", "must be at least 1 (0 is host root)");
    if (count < 1)
        return bad(reterr, "$.process.id_range.count", "must be at least 1");
    if ((uint64_t)first_id + count > UINT32_MAX)
        return bad(reterr, "$.process.id_range", "range ends beyond the 32-bit id space");
    policy->id_first = first_id;
    policy->id_count = count;
    return 0;
}

/* ---- devices ---- */

int fy_policy_add_device(fy_policy *policy, const char *host_path, int writable, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(host_path);
    char loc[64];
    snprintf(loc, sizeof(loc), "$.devices.allowed[%zu].path", policy->devices.n);
    int r = check_device_path(host_path, loc, reterr);
    if (r < 0)
        return r;
    VEC_EACH(&policy->devices, struct pol_device, d) if (strcmp(d->path, host_path) == 0)
        return bad(reterr, loc, "device is already leased");
    char *h = strdup(host_path);
    struct pol_device *d = h ? vec_push(&policy->devices) : NULL;
    if (!d) {
        free(h);
        return oom(reterr);
    }
    *d = (struct pol_device){h, writable != 0};
    return 0;
}

/* A device class's mode: one that name() knows, else FY_E_UNSUPPORTED at loc. */
static int set_devices_mode(uint32_t *field, uint32_t mode, const char *(*name)(uint32_t), const char *loc,
                            fy_error **reterr) {
    if (!name(mode))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, loc, "unknown mode %u", mode);
    *field = mode;
    return 0;
}

int fy_policy_set_gpu(fy_policy *policy, uint32_t devices_mode, fy_error **reterr) {
    CHECK_POLICY(policy);
    return set_devices_mode(&policy->gpu, devices_mode, devices_mode_name, "$.devices.gpu", reterr);
}

int fy_policy_set_usb(fy_policy *policy, uint32_t devices_mode, fy_error **reterr) {
    CHECK_POLICY(policy);
    return set_devices_mode(&policy->usb, devices_mode, devices_mode_name, "$.devices.usb", reterr);
}

int fy_policy_set_pty(fy_policy *policy, uint32_t devices_mode, fy_error **reterr) {
    CHECK_POLICY(policy);
    return set_devices_mode(&policy->pty, devices_mode, pty_mode_name, "$.devices.pty", reterr);
}

/* ---- secrets ---- */

static int add_secret(fy_policy *policy, const char *name, uint32_t delivery, const char *target,
                      const void *value, size_t len, const char *host_path, fy_error **reterr) {
    if (!delivery_name(delivery))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown delivery %u", delivery);
    if (len > (1u << 20))
        return err_set(reterr, FY_E_RANGE, FY_STEP_SECRET, 0, NULL, "secret larger than 1 MiB");
    struct pol_secret *s = vec_push(&policy->secrets);
    if (!s)
        return oom(reterr);
    s->delivery = delivery;
    s->name = util_strdup(name);
    s->target = util_strdup(target);
    s->host_path = util_strdup(host_path);
    s->len = len;
    if (value)
        s->value = secret_alloc(value, len);
    bool failed = (name && !s->name) || (target && !s->target) || (host_path && !s->host_path) ||
                  (value && !s->value);
    /* Validate the secrets as they would be with this one; undo on failure.
     * A failure that names an earlier secret is not this call's business
     * (that secret was accepted before the policy changed around it). */
    int r = 0;
    if (failed) {
        r = oom(reterr);
    } else {
        fy_error *e = NULL;
        r = policy_validate_secrets(policy, &e);
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "$.secrets[%zu]", policy->secrets.n - 1);
        if (r < 0 && e && e->location && strncmp(e->location, prefix, strlen(prefix)) == 0) {
            if (reterr)
                *reterr = e;
            else
                fy_error_free(e);
        } else {
            fy_error_free(e);
            r = 0;
        }
    }
    if (r < 0) {
        free(s->name);
        free(s->target);
        free(s->host_path);
        secret_release(s->value);
        policy->secrets.n--;
        return r;
    }
    return 0;
}

int fy_policy_add_secret(fy_policy *policy, const char *name, uint32_t delivery, const char *target,
                         const void *value, size_t len, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(name);
    if (!value && len)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, NULL, "value is NULL");
    static const char empty = 0;
    return add_secret(policy, name, delivery, target, value ? value : &empty, len, NULL, reterr);
}

int fy_policy_add_secret_file(fy_policy *policy, const char *name, uint32_t delivery, const char *target,
                              const char *host_path, fy_error **reterr) {
    CHECK_POLICY(policy);
    CHECK_ARG(name);
    if (!host_path)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, NULL, "host_path is NULL");
    return add_secret(policy, name, delivery, target, NULL, 0, host_path, reterr);
}

/* ---- standard streams ---- */

int fy_policy_set_stdio(fy_policy *policy, uint32_t stream, uint32_t mode, int fd, const char *path,
                        fy_error **reterr) {
    CHECK_POLICY(policy);
    if (stream > FY_STDERR)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "unknown stream %u", stream);
    if (mode == FY_STDIO_CALLBACK)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL,
                       "FY_STDIO_CALLBACK is set with fy_policy_set_stdio_callback, which names the callback");
    if (mode < FY_STDIO_NULL || mode > FY_STDIO_FILE)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, NULL, "unknown stdio mode %u", mode);
    if ((mode == FY_STDIO_FD) != (fd >= 0))
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "fd is for FY_STDIO_FD only, and required there");
    if ((mode == FY_STDIO_FILE) != (path != NULL))
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "path is for FY_STDIO_FILE only, and required there");
    if (mode == FY_STDIO_FILE && stream == FY_STDIN)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "stdin cannot be a spool file");
    int r;
    if (path && (r = check_host_path(path, "$.stdio", reterr)) < 0)
        return r;
    int dup = -1;
    if (fd >= 0 && (dup = os_dup_cloexec(fd)) < 0) {
        int e = -dup;
        return err_set(reterr, err_from_errno(e), FY_STEP_POLICY, e, NULL, "cannot duplicate fd %d: %s", fd, strerror(e));
    }
    char *p = util_strdup(path);
    if (path && !p) {
        if (dup >= 0)
            close(dup);
        return oom(reterr);
    }
    struct pol_stdio *s = &policy->stdio[stream];
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    *s = (struct pol_stdio){mode, dup, p, NULL, NULL};
    return 0;
}

int fy_policy_set_stdio_callback(fy_policy *policy, uint32_t stream, fy_output_fn fn, void *userdata,
                                 fy_error **reterr) {
    CHECK_POLICY(policy);
    if (stream != FY_STDOUT && stream != FY_STDERR)
        return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL,
                       stream == FY_STDIN ? "stdin cannot be an output callback" : "unknown stream %u", stream);
    struct pol_stdio *s = &policy->stdio[stream];
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    *s = fn ? (struct pol_stdio){FY_STDIO_CALLBACK, -1, NULL, fn, userdata}
            : (struct pol_stdio){FY_STDIO_NULL, -1, NULL, NULL, NULL};
    return 0;
}

int fy_policy_set_state_dir(fy_policy *policy, const char *dir, fy_error **reterr) {
    CHECK_POLICY(policy);
    int r;
    if (dir && (r = check_host_path(dir, "$.state_dir", reterr)) < 0)
        return r;
    return replace_str(&policy->state_dir, dir, reterr);
}

/* ---- names ---- */

const char *fy_control_name(uint32_t control) { return control_key(control); }

const char *fy_profile_name(uint32_t profile) {
    return profile < FY_ARRAY_SIZE(profile_names) ? profile_names[profile] : NULL;
}

int fy_profile_from_name(const char *name) {
    if (!name)
        return FY_E_INVAL;
    int i = NAME_LOOKUP(profile_names, name);
    return i > 0 ? i : FY_E_NOTFOUND;
}
