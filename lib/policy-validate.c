/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy validation: single values and the whole policy. Every rejection
 * names the JSON path of the offending value and the reason. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "oci/oci.h"
#include "policy.h"

#define PATH_MAX_LEN 4095
#define NAME_MAX_LEN 255
#define ENV_VALUE_MAX (128u * 1024u)
#define ENV_TOTAL_MAX (1024u * 1024u)

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define SIZE_MAX_ACCEPTED (UINT64_C(1) << 60)
#define USEC_PER_SEC UINT64_C(1000000)

static int bad(fy_error **reterr, const char *loc, const char *fmt, ...) FY_PRINTF(3, 4);
static int bad(fy_error **reterr, const char *loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_setv(reterr, FY_E_POLICY, FY_STEP_POLICY, 0, loc, fmt, ap);
    va_end(ap);
    return FY_E_POLICY;
}

/* Is `path` equal to `dir` or below it? Both normalised absolute paths. */
static bool path_within(const char *path, const char *dir) {
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int check_abs_path(const char *path, const char *loc, fy_error **reterr) {
    if (!path)
        return bad(reterr, loc, "path is missing");
    size_t len = strlen(path);
    if (len == 0)
        return bad(reterr, loc, "path is empty");
    if (path[0] != '/')
        return bad(reterr, loc, "path must be absolute");
    if (len > PATH_MAX_LEN)
        return bad(reterr, loc, "path is longer than %d bytes", PATH_MAX_LEN);
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return bad(reterr, loc, "path contains a control character");
    /* (a policy is a JSON document: a path it cannot hold was accepted by
     * the setters and then vanished from the policy's JSON, its records
     * and a document loaded back from it) */
    if (!util_utf8_valid(path))
        return bad(reterr, loc, "path is not UTF-8 text");
    if (len > 1 && path[len - 1] == '/')
        return bad(reterr, loc, "path must not end with '/'");
    const char *p = path + 1;
    while (len > 1 && *p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0)
            return bad(reterr, loc, "path contains an empty component (\"//\")");
        if (n > NAME_MAX_LEN)
            return bad(reterr, loc, "path component longer than %d bytes", NAME_MAX_LEN);
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return bad(reterr, loc, "path must not contain \".\" or \"..\" components");
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static const char *const kernel_dirs[] = {"/proc", "/sys", "/dev"};

int check_host_path(const char *path, const char *loc, fy_error **reterr) {
    int r = check_abs_path(path, loc, reterr);
    if (r < 0)
        return r;
    if (strcmp(path, "/") == 0)
        return bad(reterr, loc, "exposing the whole host filesystem (\"/\") is not allowed");
    for (size_t i = 0; i < FY_ARRAY_SIZE(kernel_dirs); i++)
        if (path_within(path, kernel_dirs[i]))
            return bad(reterr, loc, "host paths under %s are not allowed (kernel interfaces%s)",
                       kernel_dirs[i], i == 2 ? "; lease devices under devices.allowed" : "");
    return 0;
}

/* Paths the sandbox layout creates itself; a mount target may not be one of
 * them or an ancestor of one. */
static const char *const layout_paths[] = {
    "/etc", "/home/forgeyard", "/run/secrets", "/tmp", "/toolchains",
    "/work/build", "/work/output", "/work/source", "/work/tmp",
};
/* Host-backed layout mounts: nothing may be mounted inside them (that would
 * need a mount point created in a host directory). */
static const char *const host_backed[] = {"/work/source", "/work/build", "/work/output", "/toolchains"};

int check_sandbox_target(const char *path, const char *loc, fy_error **reterr) {
    int r = check_abs_path(path, loc, reterr);
    if (r < 0)
        return r;
    if (strcmp(path, "/") == 0)
        return bad(reterr, loc, "cannot mount over the sandbox root");
    for (size_t i = 0; i < FY_ARRAY_SIZE(kernel_dirs); i++)
        if (path_within(path, kernel_dirs[i]))
            return bad(reterr, loc, "cannot mount over %s (the sandbox provides its own)", kernel_dirs[i]);
    if (path_within(path, "/run/secrets"))
        return bad(reterr, loc, "/run/secrets is reserved for secret files");
    for (size_t i = 0; i < FY_ARRAY_SIZE(layout_paths); i++)
        if (path_within(layout_paths[i], path))
            return bad(reterr, loc, "%s is part of the sandbox layout (%s); use the dedicated setting",
                       path, layout_paths[i]);
    for (size_t i = 0; i < FY_ARRAY_SIZE(host_backed); i++)
        if (path_within(path, host_backed[i]))
            return bad(reterr, loc, "cannot mount inside %s (a host-backed mount)", host_backed[i]);
    return 0;
}

int check_env_name(const char *name, const char *loc, fy_error **reterr) {
    if (!name || !*name)
        return bad(reterr, loc, "variable name is empty");
    if (strlen(name) > NAME_MAX_LEN)
        return bad(reterr, loc, "variable name longer than %d bytes", NAME_MAX_LEN);
    if (!(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return bad(reterr, loc, "variable name must start with a letter or '_'");
    /* Past the first character, any visible ASCII but '=': environments
     * carry more than shell identifiers (bash's exported functions are
     * BASH_FUNC_NAME%%, which Bazel's test runner exports), and a name
     * is only ever a key here, never a pattern or a path. */
    for (const char *c = name; *c; c++)
        if (*c == '=' || (unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
            return bad(reterr, loc, "variable name may contain only visible ASCII characters other than '='");
    return 0;
}

int check_env_value(const char *value, const char *loc, fy_error **reterr) {
    if (!value)
        return bad(reterr, loc, "value is missing");
    if (strlen(value) > ENV_VALUE_MAX)
        return bad(reterr, loc, "value longer than %u bytes", ENV_VALUE_MAX);
    /* (a policy, an action, their digests are JSON: text only) */
    if (!util_utf8_valid(value))
        return bad(reterr, loc, "value is not UTF-8 text");
    return 0;
}

static int check_name_charset(const char *name, const char *what, const char *extra, const char *loc,
                              fy_error **reterr) {
    if (!name || !*name)
        return bad(reterr, loc, "%s is empty", what);
    if (strlen(name) > 64)
        return bad(reterr, loc, "%s longer than 64 bytes", what);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return bad(reterr, loc, "%s must not be \".\" or \"..\"", what);
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr(extra, *c)) || (unsigned char)*c > 0x7f)
            return bad(reterr, loc, "%s may contain only [A-Za-z0-9%s]", what, extra);
    return 0;
}

int check_simple_name(const char *name, const char *what, const char *loc, fy_error **reterr) {
    return check_name_charset(name, what, "._+-", loc, reterr);
}

static int check_secret_name(const char *name, const char *what, const char *loc, fy_error **reterr) {
    return check_name_charset(name, what, "._-", loc, reterr);
}

static bool valid_dns_name(const char *name, size_t max) {
    size_t len = strlen(name);
    if (len == 0 || len > max)
        return false;
    const char *p = name;
    while (*p) {
        const char *e = strchr(p, '.');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || n > 63 || p[0] == '-' || p[n - 1] == '-')
            return false;
        for (size_t i = 0; i < n; i++)
            if (!(isalnum((unsigned char)p[i]) || p[i] == '-') || (unsigned char)p[i] > 0x7f)
                return false;
        if (!e)
            break;
        p = e + 1;
        if (!*p)
            return false; /* trailing dot */
    }
    return true;
}

int check_hostname(const char *name, const char *loc, fy_error **reterr) {
    if (!name || !valid_dns_name(name, 64))
        return bad(reterr, loc, "not a valid host name (RFC 1123, at most 64 characters)");
    return 0;
}

int check_destination_host(const char *host, const char *loc, fy_error **reterr) {
    if (!host || !*host)
        return bad(reterr, loc, "destination host is empty");
    if (strlen(host) > 253 + 4)
        return bad(reterr, loc, "destination host too long");
    const char *slash = strchr(host, '/');
    char addr[260];
    snprintf(addr, sizeof(addr), "%.*s", slash ? (int)(slash - host) : (int)strlen(host), host);
    unsigned char buf[16];
    int family = 0;
    if (inet_pton(AF_INET, addr, buf) == 1)
        family = AF_INET;
    else if (inet_pton(AF_INET6, addr, buf) == 1)
        family = AF_INET6;
    if (!slash) {
        if (family)
            return 0;
        if (strspn(host, "0123456789.") == strlen(host))
            return bad(reterr, loc, "\"%s\" is not a valid IPv4 address", host);
        if (!valid_dns_name(host, 253))
            return bad(reterr, loc, "\"%s\" is not a valid host name, address or CIDR block", host);
        return 0;
    }
    if (!family)
        return bad(reterr, loc, "\"%s\": the part before '/' is not an IP address", host);
    const char *ps = slash + 1;
    if (!*ps || strspn(ps, "0123456789") != strlen(ps) || strlen(ps) > 3 || (ps[0] == '0' && ps[1]))
        return bad(reterr, loc, "\"%s\": the prefix length must be a decimal number", host);
    int prefix = atoi(ps);
    int max = family == AF_INET ? 32 : 128;
    if (prefix > max)
        return bad(reterr, loc, "\"%s\": prefix length %d exceeds %d", host, prefix, max);
    if (prefix == 0)
        return bad(reterr, loc, "\"%s\" matches every address; use network mode allow instead", host);
    int bytes = max / 8;
    for (int bit = prefix; bit < bytes * 8; bit++)
        if (buf[bit / 8] & (0x80 >> (bit % 8)))
            return bad(reterr, loc, "\"%s\": address has bits set beyond the /%d prefix", host, prefix);
    return 0;
}

int check_limit(uint32_t limit, uint64_t v, const char *loc, fy_error **reterr) {
    bool unl = v == FY_UNLIMITED;
    if (!unl && v > SIZE_MAX_ACCEPTED)
        return bad(reterr, loc, "value is too large");
    switch (limit) {
    case FY_LIMIT_CPU_MILLIS:
        if (!unl && (v < 1 || v > 1024000))
            return bad(reterr, loc, "cpu_millis must be between 1 and 1024000 or unlimited");
        return 0;
    case FY_LIMIT_MEMORY:
        if (!unl && v < MiB)
            return bad(reterr, loc, "memory must be at least 1 MiB or unlimited");
        return 0;
    case FY_LIMIT_PIDS:
        if (!unl && (v < 1 || v > 4194304))
            return bad(reterr, loc, "pids must be between 1 and 4194304 or unlimited");
        return 0;
    case FY_LIMIT_DISK: case FY_LIMIT_FILES: case FY_LIMIT_IO_BPS:
        if (!unl && v < 1)
            return bad(reterr, loc, "must be at least 1 or unlimited");
        return 0;
    case FY_LIMIT_NOFILE:
        if (unl || v < 3 || v > 1048576)
            return bad(reterr, loc, "nofile must be between 3 and 1048576");
        return 0;
    case FY_LIMIT_STACK:
        if (!unl && v < 64 * KiB)
            return bad(reterr, loc, "stack must be at least 64 KiB or unlimited");
        return 0;
    case FY_LIMIT_WALL_TIME:
        if (!unl && (v < 1000 || v > 30u * 86400u * USEC_PER_SEC))
            return bad(reterr, loc, "wall_time must be between 1 ms and 30 days or unlimited");
        return 0;
    case FY_LIMIT_GRACE:
        if (unl || v > 3600u * USEC_PER_SEC)
            return bad(reterr, loc, "grace must be at most 1 hour");
        return 0;
    case FY_LIMIT_TMP_SIZE: case FY_LIMIT_WORK_TMP_SIZE: case FY_LIMIT_HOME_SIZE: case FY_LIMIT_SHM_SIZE:
        if (unl || v < 64 * KiB)
            return bad(reterr, loc, "a tmpfs size must be at least 64 KiB (unlimited is not allowed)");
        return 0;
    case FY_LIMIT_MEMORY_SWAP: case FY_LIMIT_FSIZE: case FY_LIMIT_CORE: case FY_LIMIT_OUTPUT:
        return 0;
    default:
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, loc, "unknown limit %u", limit);
    }
}

static const char *const forbidden_devices[] = {"/dev/mem", "/dev/kmem", "/dev/port"};

int check_device_path(const char *path, const char *loc, fy_error **reterr) {
    int r = check_abs_path(path, loc, reterr);
    if (r < 0)
        return r;
    if (!path_within(path, "/dev") || strcmp(path, "/dev") == 0)
        return bad(reterr, loc, "a device lease must name a node under /dev/");
    for (size_t i = 0; i < FY_ARRAY_SIZE(forbidden_devices); i++)
        if (strcmp(path, forbidden_devices[i]) == 0)
            return bad(reterr, loc, "%s can never be leased (raw host memory or I/O ports)", path);
    return 0;
}

/* ---- whole-policy validation ---- */

/* Bounds on every collection, so that validation stays cheap and no policy
 * is absurd: a document over them is refused, not truncated. */
const struct policy_count_limit policy_count_limits[] = {
    {"$.filesystem.binds", offsetof(fy_policy, binds), POLICY_MAX_BINDS},
    {"$.filesystem.toolchains", offsetof(fy_policy, toolchains), POLICY_MAX_TOOLCHAINS},
    {"$.filesystem.runtime_paths", offsetof(fy_policy, runtime_paths), POLICY_MAX_RUNTIME_PATHS},
    {"$.environment.set", offsetof(fy_policy, env_set), POLICY_MAX_ENV},
    {"$.environment.allow", offsetof(fy_policy, env_allow), POLICY_MAX_ENV_ALLOW},
    {"$.network.destinations", offsetof(fy_policy, dests), POLICY_MAX_DESTINATIONS},
    {"$.devices.allowed", offsetof(fy_policy, devices), POLICY_MAX_DEVICES},
    {"$.secrets", offsetof(fy_policy, secrets), POLICY_MAX_SECRETS},
    {NULL, 0, 0},
};

static int validate_counts(const fy_policy *p, fy_error **reterr) {
    for (const struct policy_count_limit *l = policy_count_limits; l->loc; l++) {
        const struct vec *v = (const struct vec *)((const char *)p + l->offset);
        if (v->n > l->max)
            return bad(reterr, l->loc, "at most %zu entries are allowed", l->max);
    }
    return 0;
}

/* Does the policy document (when there is one) contain this JSON path?
 * Paths are "$.a.b" and "$.a[3]"; keys never contain '.' or '['. */
static bool doc_has(const json_t *doc, const char *path) {
    if (!doc || strncmp(path, "$", 1) != 0)
        return false;
    const json_t *cur = doc;
    const char *p = path + 1;
    while (*p && cur) {
        if (*p == '.') {
            p++;
            size_t n = strcspn(p, ".[");
            char key[256];
            if (n >= sizeof(key))
                return false;
            memcpy(key, p, n);
            key[n] = '\0';
            cur = json_is_object(cur) ? json_object_get(cur, key) : NULL;
            p += n;
        } else if (*p == '[') {
            size_t i = strtoul(p + 1, (char **)&p, 10);
            if (*p != ']')
                return false;
            p++;
            cur = json_is_array(cur) ? json_array_get(cur, i) : NULL;
        } else {
            return false;
        }
    }
    return cur != NULL;
}

/* Two settings contradict each other: blame the one the document wrote
 * (the other came from a profile or a setter); `a` when unsure. */
static const char *pick(const json_t *doc, const char *a, const char *b) {
    return doc && doc_has(doc, b) && !doc_has(doc, a) ? b : a;
}

int check_workdir(const fy_policy *p, const char *workdir, const char *loc, fy_error **reterr) {
    int r = check_abs_path(workdir, loc, reterr);
    if (r < 0)
        return r;
    bool inside = path_within(workdir, "/work") || path_within(workdir, "/home/forgeyard") ||
                  path_within(workdir, "/tmp");
    VEC_EACH(&p->binds, struct pol_bind, b) inside = inside || path_within(workdir, b->target);
    VEC_EACH(&p->runtime_paths, char *, rp) inside = inside || path_within(workdir, *rp);
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) {
        char tgt[96];
        snprintf(tgt, sizeof(tgt), "/toolchains/%s", t->name);
        inside = inside || path_within(workdir, tgt);
    }
    if (!inside)
        return bad(reterr, loc, "working directory must be inside /work, /home/forgeyard, /tmp or a mounted path");
    return 0;
}

struct target { const char *path; char *loc; };

static int add_target(struct target *t, size_t *n, const char *path, char *loc, fy_error **reterr) {
    if (!loc)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory");
    for (size_t i = 0; i < *n; i++)
        if (strcmp(t[i].path, path) == 0) {
            int r = bad(reterr, loc, "duplicate mount target %s (also used by %s)", path, t[i].loc);
            free(loc);
            return r;
        }
    t[*n].path = path;
    t[*n].loc = loc;
    (*n)++;
    return 0;
}

static int validate_filesystem(const fy_policy *p, fy_error **reterr) {
    int r = 0;
    if (p->source && (r = check_host_path(p->source, "$.filesystem.source.path", reterr)) < 0)
        return r;
    if (p->build && (r = check_host_path(p->build, "$.filesystem.build", reterr)) < 0)
        return r;
    if (p->output && (r = check_host_path(p->output, "$.filesystem.output", reterr)) < 0)
        return r;
    size_t cap = 3 + p->toolchains.n + p->binds.n + p->runtime_paths.n, n = 0;
    struct target *t = calloc(cap, sizeof(*t));
    char **tc_targets = calloc(p->toolchains.n + 1, sizeof(char *));
    if (!t || !tc_targets) {
        free(t);
        free(tc_targets);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory");
    }
    if (p->source)
        r = add_target(t, &n, "/work/source", util_strdup("$.filesystem.source"), reterr);
    if (r >= 0 && p->build)
        r = add_target(t, &n, "/work/build", util_strdup("$.filesystem.build"), reterr);
    if (r >= 0 && p->output)
        r = add_target(t, &n, "/work/output", util_strdup("$.filesystem.output"), reterr);
    for (size_t i = 0; r >= 0 && i < p->toolchains.n; i++) {
        const struct pol_toolchain *tc = vec_at(&p->toolchains, i);
        char key[1024];
        util_loc_key(key, sizeof(key), "$.filesystem.toolchains.", tc->name);
        char *loc = util_strdup(key);
        if (!loc) { r = err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory"); break; }
        if ((r = check_simple_name(tc->name, "toolchain name", loc, reterr)) >= 0 &&
            (r = check_host_path(tc->host, loc, reterr)) >= 0 &&
            (tc_targets[i] = util_asprintf("/toolchains/%s", tc->name)) != NULL)
            r = add_target(t, &n, tc_targets[i], loc, reterr);
        else {
            if (r >= 0)
                r = err_set(reterr, FY_E_NOMEM, FY_STEP_POLICY, 0, NULL, "out of memory");
            free(loc);
        }
    }
    for (size_t i = 0; r >= 0 && i < p->binds.n; i++) {
        const struct pol_bind *b = vec_at(&p->binds, i);
        char lh[64], lt[64];
        snprintf(lh, sizeof(lh), "$.filesystem.binds[%zu].host", i);
        snprintf(lt, sizeof(lt), "$.filesystem.binds[%zu].target", i);
        if ((r = check_host_path(b->host, lh, reterr)) >= 0 &&
            (r = check_sandbox_target(b->target, lt, reterr)) >= 0)
            r = add_target(t, &n, b->target, util_strdup(lt), reterr);
    }
    for (size_t i = 0; r >= 0 && i < p->runtime_paths.n; i++) {
        const char *rp = *(char **)vec_at(&p->runtime_paths, i);
        char l[64];
        snprintf(l, sizeof(l), "$.filesystem.runtime_paths[%zu]", i);
        /* (with an image they are not mounted, the image brings its own: a
         * bind at /usr/local was refused as inside /usr) */
        if ((r = check_host_path(rp, l, reterr)) >= 0 && (r = check_sandbox_target(rp, l, reterr)) >= 0 && !p->image)
            r = add_target(t, &n, rp, util_strdup(l), reterr);
    }
    /* A mount inside another host-backed mount would need its mount point
     * created in a host directory: refused (list both at their own place). */
    for (size_t i = 0; r >= 0 && i < n; i++)
        for (size_t j = 0; r >= 0 && j < n; j++)
            if (i != j && strcmp(t[i].path, t[j].path) != 0 && path_within(t[i].path, t[j].path))
                r = bad(reterr, t[i].loc, "%s is inside %s (%s); mount points are never created in host directories",
                        t[i].path, t[j].path, t[j].loc);
    if (r >= 0 && p->workdir)
        r = check_workdir(p, p->workdir, "$.filesystem.workdir", reterr);
    if (r >= 0 && p->hostname)
        r = check_hostname(p->hostname, "$.filesystem.hostname", reterr);
    if (r >= 0 && p->image)
        r = check_image_ref(p->image, "$.filesystem.image", reterr);
    for (size_t i = 0; i < n; i++)
        free(t[i].loc);
    for (size_t i = 0; i < p->toolchains.n; i++)
        free(tc_targets[i]);
    free(t);
    free(tc_targets);
    return r;
}

int check_image_ref(const char *ref, const char *loc, fy_error **reterr) {
    struct oci_ref r;
    fy_error *e = NULL;
    if (oci_ref_parse(ref, &r, &e) < 0) {
        int code = bad(reterr, loc, "%s", fy_error_message(e));
        fy_error_free(e);
        return code;
    }
    oci_ref_free(&r);
    return 0;
}

static int validate_environment(const fy_policy *p, const json_t *doc, fy_error **reterr) {
    size_t total = 0;
    int r;
    for (size_t i = 0; i < p->env_set.n; i++) {
        const struct pol_env *e = vec_at(&p->env_set, i);
        char loc[1024];
        util_loc_key(loc, sizeof(loc), "$.environment.set.", e->name);
        r = check_env_name(e->name, loc, reterr);
        if (r >= 0)
            r = check_env_value(e->value, loc, reterr);
        if (r < 0)
            return r;
        total += strlen(e->name) + strlen(e->value) + 2;
    }
    if (total > ENV_TOTAL_MAX)
        return bad(reterr, "$.environment.set", "environment larger than %u bytes", ENV_TOTAL_MAX);
    for (size_t i = 0; i < p->env_allow.n; i++) {
        const char *name = *(char **)vec_at(&p->env_allow, i);
        char loc[64];
        snprintf(loc, sizeof(loc), "$.environment.allow[%zu]", i);
        if ((r = check_env_name(name, loc, reterr)) < 0)
            return r;
        if (policy_get_env(p, name)) {
            char l[1024];
            util_loc_key(l, sizeof(l), "$.environment.set.", name);
            return bad(reterr, pick(doc, l, loc), "%s is both set and allowed from the host; choose one", name);
        }
    }
    return 0;
}

static int validate_network(const fy_policy *p, const json_t *doc, fy_error **reterr) {
    if (!net_mode_name(p->net_mode))
        return bad(reterr, "$.network.mode", "unknown network mode");
    if (!dns_name(p->dns))
        return bad(reterr, "$.network.dns", "unknown dns mode");
    if (p->prop_net && p->net_mode > p->prop_net)
        return bad(reterr, "$.network.mode", "network %s is more than a platform property allows (%s)",
                   net_mode_name(p->net_mode), net_mode_name(p->prop_net));
    int r;
    for (size_t i = 0; i < p->dests.n; i++) {
        const struct pol_dest *d = vec_at(&p->dests, i);
        char loc[64];
        snprintf(loc, sizeof(loc), "$.network.destinations[%zu].host", i);
        if ((r = check_destination_host(d->host, loc, reterr)) < 0)
            return r;
        snprintf(loc, sizeof(loc), "$.network.destinations[%zu].ports", i);
        if (d->port_min < 1 || d->port_max > 65535 || d->port_min > d->port_max)
            return bad(reterr, loc, "ports must be within 1..65535 with min <= max");
        snprintf(loc, sizeof(loc), "$.network.destinations[%zu].proto", i);
        if (!proto_name(d->proto))
            return bad(reterr, loc, "unknown protocol");
    }
    bool egress = p->net_mode == FY_NET_RESTRICTED || p->net_mode == FY_NET_FETCH_ONLY;
    if (!egress && p->dests.n)
        return bad(reterr, pick(doc, "$.network.destinations", "$.network.mode"),
                   "destinations need network mode restricted or fetch-only (mode is %s)",
                   net_mode_name(p->net_mode));
    if (egress && !p->dests.n)
        return bad(reterr, pick(doc, "$.network.destinations", "$.network.mode"),
                   "network mode %s needs at least one destination",
                   net_mode_name(p->net_mode));
    if (p->net_mode == FY_NET_DENY && p->dns == FY_DNS_HOST)
        return bad(reterr, pick(doc, "$.network.dns", "$.network.mode"), "dns host contradicts network mode deny");
    if (p->net_mode != FY_NET_ALLOW && p->control[FY_CONTROL_NETNS] == FY_MODE_OFF)
        return bad(reterr, pick(doc, "$.network.mode", "$.isolation.controls.netns"),
                   "network mode %s needs a network namespace, but isolation.controls.netns is off",
                   net_mode_name(p->net_mode));
    if (p->job_member && (r = check_job_member(p->job_member, "$.network.job.member", reterr)) < 0)
        return r;
    if (p->job_member && p->net_mode == FY_NET_ALLOW)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_POLICY, 0, pick(doc, "$.network.mode", "$.network.job"),
                       "a job network needs network mode deny, restricted or fetch-only: allow shares the host's "
                       "network, which every job and the host reach");
    return 0;
}

int check_job_member(const char *name, const char *loc, fy_error **reterr) {
    size_t n = name ? strlen(name) : 0;
    bool ok = n >= 1 && n <= 63 && name[0] != '-' && name[n - 1] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '-';
    if (!ok)
        return bad(reterr, loc, "a job member's name is a host name label: 1 to 63 of a-z, 0-9 and '-', not "
                                "starting or ending with '-' (it resolves to the member's address in the others)");
    if (strcmp(name, "localhost") == 0)
        return bad(reterr, loc, "localhost is the sandbox's own loopback, not a job member's name");
    /* A name inet_aton(3) accepts is an IPv4 address to glibc's resolver,
     * which answers it as that before it reads /etc/hosts: "0x7f000001",
     * "2130706433" and "017" are 127.0.0.1, "0" is 0.0.0.0 in every peer,
     * never the member. In a label (no dots, lower case) that is one
     * number: decimal, octal after a 0, hex after 0x. Refused here as any
     * all-digit name or 0x and hex digits, a little more than inet_aton
     * takes (also 08, or a number beyond 32 bits), portably (no libc
     * parser): RFC 1123 host names are not all-numeric anyway. */
    bool number = strspn(name, "0123456789") == n ||
                  (n >= 2 && name[0] == '0' && name[1] == 'x' && strspn(name + 2, "0123456789abcdef") == n - 2);
    if (number)
        return bad(reterr, loc,
                   "%s is a number the resolver reads as an IPv4 address (inet_aton(3)) before /etc/hosts: it "
                   "would be that address in its peers, not a job member's name",
                   name);
    /* Every sandbox's /etc/hosts (plan.c) begins "127.0.0.1 localhost
     * HOSTNAME" and "::1 localhost ip6-localhost", before the job's lines,
     * and glibc answers a name from its first line: a member of such a name
     * would be the loopback in its peers. (ip6-loopback: ::1's other usual
     * name, hosts(5) on Debian.) */
    static const char *const loopback[] = {"ip6-localhost", "ip6-loopback"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(loopback); i++)
        if (strcmp(name, loopback[i]) == 0)
            return bad(reterr, loc, "%s is a name of the sandbox's own loopback (::1), not a job member's name", name);
    if (strcmp(name, POLICY_DEFAULT_HOSTNAME) == 0)
        return bad(reterr, loc,
                   "%s is the sandboxes' default host name, which resolves to the loopback (127.0.0.1) in every "
                   "member's /etc/hosts before the job's lines: not a job member's name",
                   name);
    return 0;
}

static const struct { uint32_t control, limit; } control_limits[] = {
    {FY_CONTROL_MEMORY_LIMIT, FY_LIMIT_MEMORY},
    {FY_CONTROL_PIDS_LIMIT, FY_LIMIT_PIDS},
    {FY_CONTROL_CPU_LIMIT, FY_LIMIT_CPU_MILLIS},
    {FY_CONTROL_IO_LIMIT, FY_LIMIT_IO_BPS},
};

static int validate_isolation(const fy_policy *p, const json_t *doc, fy_error **reterr) {
    if (p->min_level > FY_LEVEL_CONFIDENTIAL_VM)
        return bad(reterr, "$.isolation.min_level", "unknown isolation level");
    if (p->preferred_level > FY_LEVEL_CONFIDENTIAL_VM)
        return bad(reterr, "$.isolation.preferred_level", "unknown isolation level");
    if (p->min_level < p->level_floor)
        return bad(reterr, "$.isolation.min_level", "%s is weaker than the organization minimum (%s)",
                   level_names[p->min_level], level_names[p->level_floor]);
    if (p->min_level < p->prop_level)
        return bad(reterr, "$.isolation.min_level", "%s is weaker than the platform property sandbox-level asks (%s)",
                   level_names[p->min_level], level_names[p->prop_level]);
    if (p->preferred_level < p->min_level)
        return bad(reterr,
                   doc_has(doc, "$.isolation.min_level") != doc_has(doc, "$.isolation.preferred_level")
                       ? (doc_has(doc, "$.isolation.min_level") ? "$.isolation.min_level" : "$.isolation.preferred_level")
                       : "$.isolation",
                   "preferred_level %s is weaker than min_level %s",
                   level_names[p->preferred_level], level_names[p->min_level]);
    char loc[64];
    for (uint32_t c = 1; c <= FY_CONTROL_MAX_; c++) {
        if (!control_keys[c])
            continue; /* a number that names no control (never set: fy_policy_set_control refuses it) */
        snprintf(loc, sizeof(loc), "$.isolation.controls.%s", control_key(c));
        if (p->control[c] > FY_MODE_REQUIRE)
            return bad(reterr, loc, "unknown mode");
    }
    if (p->control[FY_CONTROL_NETNS] == FY_MODE_REQUIRE && p->net_mode == FY_NET_ALLOW)
        return bad(reterr, pick(doc, "$.isolation.controls.netns", "$.network.mode"),
                   "netns is required, but network mode allow uses the host network");
    for (size_t i = 0; i < FY_ARRAY_SIZE(control_limits); i++)
        if (p->control[control_limits[i].control] == FY_MODE_REQUIRE &&
            p->limit[control_limits[i].limit] == FY_UNLIMITED) {
            char lim[64];
            snprintf(loc, sizeof(loc), "$.isolation.controls.%s", control_key(control_limits[i].control));
            snprintf(lim, sizeof(lim), "$.resources.%s", limit_key(control_limits[i].limit));
            return bad(reterr, pick(doc, loc, lim), "%s is required, but resources.%s is unlimited",
                       control_key(control_limits[i].control), limit_key(control_limits[i].limit));
        }
    if (p->min_level >= FY_LEVEL_NAMESPACE)
        for (uint32_t c = FY_CONTROL_MOUNTNS; c <= FY_CONTROL_PIDNS; c++)
            if (p->control[c] == FY_MODE_OFF) {
                snprintf(loc, sizeof(loc), "$.isolation.controls.%s", control_key(c));
                return bad(reterr, pick(doc, loc, "$.isolation.min_level"),
                           "%s cannot be off when min_level is %s or stronger", control_key(c),
                           level_names[FY_LEVEL_NAMESPACE]);
            }
    return 0;
}

static int validate_profile_rules(const fy_policy *p, const json_t *doc, fy_error **reterr) {
    if (p->profile != FY_PROFILE_RELEASE && p->profile != FY_PROFILE_HIGH_ASSURANCE)
        return 0;
    const char *pn = profile_names[p->profile];
    if (p->net_mode != FY_NET_DENY)
        return bad(reterr, pick(doc, "$.network.mode", "$.profile"),
                   "the %s profile denies network access (the standard-ci and development profiles allow "
                   "restricted, fetch-only and allow)", pn);
    if (p->source_writable)
        return bad(reterr, pick(doc, "$.filesystem.source.writable", "$.profile"),
                   "the %s profile keeps the source read-only", pn);
    if (p->env_allow.n)
        return bad(reterr, pick(doc, "$.environment.allow", "$.profile"),
                   "the %s profile inherits nothing from the host environment", pn);
    if (p->image && !strstr(p->image, "@sha256:"))
        return bad(reterr, pick(doc, "$.filesystem.image", "$.profile"),
                   "the %s profile runs images by digest only (REF@sha256:...), not %s", pn, p->image);
    return 0;
}

static int validate_limits(const fy_policy *p, fy_error **reterr) {
    for (uint32_t l = 1; l <= FY_LIMIT_MAX_; l++) {
        char loc[64];
        snprintf(loc, sizeof(loc), "$.resources.%s", limit_key(l));
        int r = check_limit(l, p->limit[l], loc, reterr);
        if (r < 0)
            return r;
    }
    return 0;
}

static int validate_process(const fy_policy *p, fy_error **reterr) {
    if (!user_name(p->user))
        return bad(reterr, "$.process.user", "unknown user mode");
    if (!seccomp_class_name(p->seccomp_class))
        return bad(reterr, "$.process.seccomp", "unknown seccomp class");
    if (p->id_first < 1)
        return bad(reterr, "$.process.id_range.first", "must be at least 1 (0 is host root)");
    if (p->id_count < 1)
        return bad(reterr, "$.process.id_range.count", "must be at least 1");
    if ((uint64_t)p->id_first + p->id_count > UINT32_MAX)
        return bad(reterr, "$.process.id_range", "range ends beyond the 32-bit id space");
    return 0;
}

static int validate_devices(const fy_policy *p, const json_t *doc, fy_error **reterr) {
    int r;
    for (size_t i = 0; i < p->devices.n; i++) {
        const struct pol_device *d = vec_at(&p->devices, i);
        char loc[64];
        snprintf(loc, sizeof(loc), "$.devices.allowed[%zu].path", i);
        if ((r = check_device_path(d->path, loc, reterr)) < 0)
            return r;
        for (size_t j = 0; j < i; j++)
            if (strcmp(((struct pol_device *)vec_at(&p->devices, j))->path, d->path) == 0)
                return bad(reterr, loc, "device %s is listed twice", d->path);
    }
    if (!devices_mode_name(p->gpu))
        return bad(reterr, "$.devices.gpu", "unknown mode");
    if (!devices_mode_name(p->usb))
        return bad(reterr, "$.devices.usb", "unknown mode");
    if (!pty_mode_name(p->pty))
        return bad(reterr, "$.devices.pty", "unknown mode");
    /* A device class is leased only when the policy says so: a GPU (or
     * USB) node in devices.allowed needs devices.gpu (.usb) "leased". */
    for (size_t i = 0; i < p->devices.n; i++) {
        const char *path = ((const struct pol_device *)vec_at(&p->devices, i))->path;
        bool gpu = strncmp(path, "/dev/nvidia", 11) == 0 || strncmp(path, "/dev/dri/", 9) == 0 ||
                   strcmp(path, "/dev/kfd") == 0;
        bool usb = strncmp(path, "/dev/bus/usb/", 13) == 0;
        char loc[64];
        snprintf(loc, sizeof(loc), "$.devices.allowed[%zu].path", i);
        if (gpu && p->gpu != FY_DEVICES_LEASED)
            return bad(reterr, loc, "%s is a GPU node: leasing it needs devices.gpu \"leased\"", path);
        if (usb && p->usb != FY_DEVICES_LEASED)
            return bad(reterr, loc, "%s is a USB node: leasing it needs devices.usb \"leased\"", path);
    }
    if (p->gpu == FY_DEVICES_LEASED && !p->devices.n)
        return bad(reterr, pick(doc, "$.devices.gpu", "$.devices.allowed"), "gpu leased, but no device is leased in devices.allowed");
    if (p->usb == FY_DEVICES_LEASED && !p->devices.n)
        return bad(reterr, pick(doc, "$.devices.usb", "$.devices.allowed"), "usb leased, but no device is leased in devices.allowed");
    return 0;
}

int policy_validate_secrets(const fy_policy *p, fy_error **reterr) {
    int r;
    bool have_stdin = false;
    for (size_t i = 0; i < p->secrets.n; i++) {
        const struct pol_secret *s = vec_at(&p->secrets, i);
        char loc[64];
        snprintf(loc, sizeof(loc), "$.secrets[%zu].name", i);
        if ((r = check_secret_name(s->name, "secret name", loc, reterr)) < 0)
            return r;
        for (size_t j = 0; j < i; j++)
            if (strcmp(((struct pol_secret *)vec_at(&p->secrets, j))->name, s->name) == 0)
                return bad(reterr, loc, "secret %s is declared twice", s->name);
        snprintf(loc, sizeof(loc), "$.secrets[%zu].target", i);
        switch (s->delivery) {
        case FY_SECRET_ENV:
            if ((r = check_env_name(s->target, loc, reterr)) < 0)
                return r;
            if (policy_get_env(p, s->target) || policy_has_string(&p->env_allow, s->target))
                return bad(reterr, loc, "%s is also set or allowed in environment", s->target);
            break;
        case FY_SECRET_FILE:
            if ((r = check_secret_name(s->target, "secret file name", loc, reterr)) < 0)
                return r;
            break;
        case FY_SECRET_STDIN:
            if (s->target)
                return bad(reterr, loc, "a stdin secret has no target");
            if (have_stdin) {
                snprintf(loc, sizeof(loc), "$.secrets[%zu].delivery", i);
                return bad(reterr, loc, "only one secret can be delivered on stdin");
            }
            have_stdin = true;
            break;
        default:
            snprintf(loc, sizeof(loc), "$.secrets[%zu].delivery", i);
            return bad(reterr, loc, "unknown delivery");
        }
        if (s->target && s->delivery != FY_SECRET_STDIN)
            for (size_t j = 0; j < i; j++) {
                const struct pol_secret *o = vec_at(&p->secrets, j);
                if (o->delivery == s->delivery && o->target && strcmp(o->target, s->target) == 0)
                    return bad(reterr, loc, "target %s is used by secret %s too", s->target, o->name);
            }
        if (s->host_path) {
            snprintf(loc, sizeof(loc), "$.secrets[%zu].file", i);
            if ((r = check_host_path(s->host_path, loc, reterr)) < 0)
                return r;
        } else if (!s->value) {
            snprintf(loc, sizeof(loc), "$.secrets[%zu].file", i);
            return bad(reterr, loc, "a secret needs a host file");
        }
    }
    return 0;
}

int policy_validate_doc(const fy_policy *p, const void *doc_json, fy_error **reterr) {
    const json_t *doc = doc_json;
    int r;
    if ((r = validate_counts(p, reterr)) < 0 || (r = validate_profile_rules(p, doc, reterr)) < 0 ||
        (r = validate_isolation(p, doc, reterr)) < 0 || (r = validate_filesystem(p, reterr)) < 0 ||
        (r = validate_environment(p, doc, reterr)) < 0 || (r = validate_network(p, doc, reterr)) < 0 ||
        (r = validate_limits(p, reterr)) < 0 || (r = validate_process(p, reterr)) < 0 ||
        (r = validate_devices(p, doc, reterr)) < 0 || (r = policy_validate_secrets(p, reterr)) < 0)
        return r;
    return 0;
}

int policy_validate(const fy_policy *p, fy_error **reterr) { return policy_validate_doc(p, NULL, reterr); }
