/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy model (struct fy_policy) shared by the JSON codec, the
 * validator, the selector and the backends. */
#ifndef FY_POLICY_H
#define FY_POLICY_H

#include "internal.h"
#include "observe.h"

/* A growable array of fixed-size items. */
struct vec {
    void *items;
    size_t n, cap, size;
};
void vec_init(struct vec *v, size_t item_size);
void *vec_push(struct vec *v); /* zeroed new item or NULL on OOM */
void *vec_at(const struct vec *v, size_t i);
void vec_remove(struct vec *v, size_t i);
/* (No pointer arithmetic on an empty vector's NULL items; break and
 * continue behave as in a single loop.) */
#define VEC_EACH(v, type, it)                                                              \
    for (size_t it##_i = 0, it##_n = (v)->n; it##_i < it##_n; it##_i = it##_n)            \
        for (type *it = (type *)(v)->items; it##_i < it##_n; it##_i++, it++)

struct pol_bind { char *host, *target; uint32_t flags; };
struct pol_toolchain { char *name, *host; };
/* profile_default: set by the profile, not by the caller: an image's own
 * value of the variable wins over it (plan.c build_env). */
struct pol_env { char *name, *value; bool profile_default; };
struct pol_dest { char *host; uint32_t proto, port_min, port_max; };
struct pol_device { char *path; bool writable; };
struct pol_secret {
    char *name;
    uint32_t delivery;
    char *target;     /* env name / file name / NULL */
    char *host_path;  /* file reference, or NULL for an inline value */
    unsigned char *value; size_t len; /* inline value (sodium_malloc'd) */
};

struct pol_stdio {
    uint32_t mode;  /* FY_STDIO_* */
    int fd;         /* FY_STDIO_FD: our duplicate, else -1 */
    char *path;     /* FY_STDIO_FILE */
    fy_output_fn fn; void *userdata; /* FY_STDIO_CALLBACK */
};

struct fy_policy {
    int origin_pid;
    struct pol_stdio stdio[3];  /* host plumbing: not in JSON, kept across profile resets */
    char *state_dir;            /* host plumbing too; NULL: the default */
    char *net_host[FY_NETHOST_MAX_ + 1]; /* host plumbing: fy_policy_set_network_host (FY_NETHOST_*) */
    struct obs obs;             /* observability callbacks and metrics (host plumbing) */
    uint32_t fault_step, fault_nth; /* tests only: fail the nth occurrence of a setup step */
    uint32_t delay_stage;           /* qualification only: sleep inside this FY_STAGE_* ... */
    uint64_t delay_usec;            /* ... for this long */
    bool test_legacy_cgroups;       /* tests only: plan as on a host without cgroup v2 */
    bool test_overlay_disk;         /* tests only: a container's upper on disk, as where tmpfs lacks user xattrs */
    bool test_copy_init;            /* tests only: the init is a copy of the host, as where
                                       forgeyard-init cannot be executed */
    bool test_no_clone_into;        /* tests only: the sandbox is placed in its cgroup v2 after the
                                       clone, as where clone3's CLONE_INTO_CGROUP is not there */
    bool test_no_build_overlay;     /* tests only: an action materialises its root even where
                                       the backend could mount it as an overlay */
    bool test_survivor;             /* tests only: an action's attempt is collected as if its cleanup
                                       had found a process left */
    bool test_skeleton_short;       /* tests only: the skeleton made beside the verdict lacks its
                                       last directory (in sorted order), as where a file system's
                                       link counts misled its listing */
    uint32_t profile;
    uint32_t min_level, preferred_level, level_floor;
    /* What platform properties asked (fy_policy_set_platform_property):
     * the weakest level and the most network they allow (0: none), kept
     * over later documents and profiles as level_floor is, and checked by
     * validation: a requirement is never undone by what comes after. */
    uint32_t prop_level, prop_net;
    uint8_t control[FY_CONTROL_MAX_ + 1];
    /* filesystem */
    char *source; bool source_writable;
    char *build, *output;
    /* An action's execution root (not in the JSON form): build_lower, a
     * host directory (the inode build_lower_dev/ino), is to be the read-only
     * lower of an overlay at /work/build whose upper is build and whose
     * overlayfs work directory is build_work, where the backend can. */
    char *build_lower, *build_work;
    bool build_is_exec_root;  /* build is an action attempt's own execution root: the
                                 contract names it as that, not by its path */
    uint64_t build_lower_dev, build_lower_ino;
    struct vec toolchains;    /* struct pol_toolchain, sorted by name */
    struct vec binds;         /* struct pol_bind, in insertion order */
    struct vec runtime_paths; /* char *, in order */
    char *workdir, *hostname;
    char *image;              /* a container image reference (lib/oci/oci.h), or NULL */
    char *runtime;            /* an external OCI runtime named by the host ("runc"), or NULL */
    uint32_t runtime_flags;   /* FY_RUNTIME_* */
    /* environment */
    struct vec env_set;       /* struct pol_env, sorted by name */
    struct vec env_allow;     /* char *, in order */
    bool env_exact;           /* environment.defaults false: no HOME, TMPDIR, USER, LOGNAME
                                 default and no FORGEYARD_* variable (actions, wrappers) */
    /* network */
    uint32_t net_mode, dns;
    struct vec dests;         /* struct pol_dest */
    char *job_member;         /* network.job.member: this attempt's name on its job's network, or NULL */
#define POL_JOB_PORTS_MAX 64
    uint16_t job_ports[POL_JOB_PORTS_MAX]; /* network.job.ports: the TCP ports it connects to on the other */
    uint32_t njob_ports;                   /* members (sorted, distinct): its Landlock layer's share */
    /* resources */
    uint64_t limit[FY_LIMIT_MAX_ + 1];
    /* process */
    uint32_t user, seccomp_class;
    uint32_t id_first, id_count;
    /* devices */
    struct vec devices;       /* struct pol_device */
    uint32_t gpu, usb, pty;
    /* secrets */
    struct vec secrets;       /* struct pol_secret */
};

/* policy.c */
fy_policy *policy_alloc(void);
void policy_clear(fy_policy *p);           /* frees contents, wipes secrets */
void policy_clear_stdio(fy_policy *p);     /* closes the stdio duplicates */
void policy_destroy(fy_policy *p);         /* clear + clear_stdio + free; NULL ok */
int policy_apply_profile(fy_policy *p, uint32_t profile); /* resets to defaults */
fy_policy *policy_dup(const fy_policy *p); /* deep copy; NULL on OOM */
void policy_swap(fy_policy *a, fy_policy *b);
bool policy_is_impure(const fy_policy *p);
/* Tests only (never exported): make the nth occurrence of setup step `step`
 * fail with ECANCELED, to prove every failure is typed and leaves nothing. */
void policy_inject_fault(fy_policy *p, uint32_t step, uint32_t nth);
/* Qualification only (never exported): a controlled delay inside one stage
 * (FY_STAGE_ISOLATION, _FILESYSTEM, _EXEC, _OUTPUT, _CLEANUP), to prove the
 * result attributes time to the right stage. */
void policy_inject_delay(fy_policy *p, uint32_t stage, uint64_t usec);
/* Tests only (never exported): ignore the cgroup v2 hierarchy, as on a
 * legacy v1-only host, so the v1 freezer-then-kill teardown runs for real
 * on a hybrid host. */
void policy_test_legacy_cgroups(fy_policy *p);
void policy_test_overlay_disk(fy_policy *p);
void policy_test_copy_init(fy_policy *p);
void policy_test_no_build_overlay(fy_policy *p);
void policy_test_skeleton_short(fy_policy *p);
void policy_test_survivor(fy_policy *p);
void policy_test_no_clone_into(fy_policy *p);
int policy_add_string(struct vec *v, const char *s);  /* appended, no duplicates */
bool policy_has_string(const struct vec *v, const char *s);
void policy_remove_string(struct vec *v, const char *s);
int policy_add_env(fy_policy *p, const char *name, const char *value);
/* Marks name's value as the profile's default (policy_add_env clears it). */
void policy_mark_env_default(fy_policy *p, const char *name);  /* replaces */
void policy_unset_env(fy_policy *p, const char *name);
const char *policy_get_env(const fy_policy *p, const char *name);
int policy_set_toolchain(fy_policy *p, const char *name, const char *host); /* replaces */
/* Secret values: libsodium guarded, locked memory, zeroed on release. */
unsigned char *secret_alloc(const void *value, size_t len);
void secret_release(unsigned char *m);

/* policy-validate.c: single-value validators. Each returns 0 or a negative
 * FY_E_* with *reterr naming `loc` (a JSON path) and the reason. */
int check_host_path(const char *path, const char *loc, fy_error **reterr);
int check_sandbox_target(const char *path, const char *loc, fy_error **reterr);
int check_env_name(const char *name, const char *loc, fy_error **reterr);
/* A container image reference (oci:, oci-archive:, docker-archive:). */
int check_image_ref(const char *ref, const char *loc, fy_error **reterr);
int check_env_value(const char *value, const char *loc, fy_error **reterr);
int check_simple_name(const char *name, const char *what, const char *loc, fy_error **reterr);
int check_hostname(const char *name, const char *loc, fy_error **reterr);
/* A job network's member name (network.job.member, fy_jobnet_new): a host
 * name label, none of the names the synthetic /etc/hosts gives the
 * loopback before the job's lines (localhost, ip6-localhost, ip6-loopback,
 * the default host name). */
int check_job_member(const char *name, const char *loc, fy_error **reterr);
/* The sandbox's host name unless filesystem.hostname says otherwise. */
#define POLICY_DEFAULT_HOSTNAME "forgeyard"
int check_destination_host(const char *host, const char *loc, fy_error **reterr);
int check_limit(uint32_t limit, uint64_t value, const char *loc, fy_error **reterr);
int check_device_path(const char *path, const char *loc, fy_error **reterr);
int check_workdir(const fy_policy *p, const char *workdir, const char *loc, fy_error **reterr);
int policy_validate_secrets(const fy_policy *p, fy_error **reterr);
/* Whole-policy (cross-field) validation. With the parsed policy document
 * (a json_t *), a contradiction is blamed on the key the document wrote. */
int policy_validate(const fy_policy *p, fy_error **reterr);
int policy_validate_doc(const fy_policy *p, const void *doc_json, fy_error **reterr);

#define POLICY_MAX_BINDS 256
#define POLICY_MAX_TOOLCHAINS 256
#define POLICY_MAX_RUNTIME_PATHS 256
#define POLICY_MAX_ENV 4096
#define POLICY_MAX_ENV_ALLOW 1024
#define POLICY_MAX_DESTINATIONS 1024
#define POLICY_MAX_DEVICES 256
#define POLICY_MAX_SECRETS 256
struct policy_count_limit {
    const char *loc;
    size_t offset; /* of the struct vec in fy_policy */
    size_t max;
};
extern const struct policy_count_limit policy_count_limits[];

/* policy-json.c */
int policy_from_json(fy_policy *p, const char *json, size_t len, fy_error **reterr);
char *policy_to_json(const fy_policy *p); /* NULL on OOM */
/* policy-json-errors.c: jansson's refusal of doc in the policy's terms
 * (FY_E_POLICY at a JSON path, with line and column); the 1-based line and
 * column (in characters) of byte offset at. */
struct json_error_t;
int policy_json_syntax_error(const char *doc, size_t len, const struct json_error_t *je, fy_error **reterr);
void policy_json_line_col(const char *doc, size_t at, int *line, int *col);
/* Whether jansson's refusal of doc was in fact a failed allocation: its
 * out-of-memory code, or a syntax complaint about a document the scanner
 * finds well formed from end to end (jansson reports many allocation
 * failures of its lexer as syntax errors: a valid policy was "invalid"). */
bool policy_json_out_of_memory(const char *doc, size_t len, const struct json_error_t *je);

/* The mode a control is negotiated with: what the policy asks, except that
 * a leased device makes the device allowlist (FY_CONTROL_DEVICES) required:
 * a lease is never bound where the kernel would not enforce the list. */
static inline uint8_t policy_control_mode(const fy_policy *p, uint32_t control) {
    if (control == FY_CONTROL_DEVICES && p->devices.n)
        return FY_MODE_REQUIRE;
    return p->control[control];
}

/* names.c: enum <-> string tables used by JSON, the CLI and messages. */
const char *limit_key(uint32_t limit);       /* JSON key in "resources" */
const char *control_key(uint32_t control);   /* JSON key in "isolation.controls" */
const char *mode_name(uint32_t mode);        /* "off", "prefer", "require" */
const char *net_mode_name(uint32_t mode);    /* "deny", "fetch-only", ... */
const char *dns_name(uint32_t dns);
const char *proto_name(uint32_t proto);
const char *user_name(uint32_t user);
const char *seccomp_class_name(uint32_t cls);
const char *delivery_name(uint32_t delivery);
const char *devices_mode_name(uint32_t mode);
const char *pty_mode_name(uint32_t mode);    /* "deny", "private" */
/* The tables themselves, for reverse lookups with name_lookup(). */
extern const char *const limit_keys[FY_LIMIT_MAX_ + 1];
extern const char *const control_keys[FY_CONTROL_MAX_ + 1];
extern const char *const mode_names[3];
extern const char *const net_mode_names[5];
extern const char *const dns_names[3];
extern const char *const proto_names[3];
extern const char *const user_names[3];
extern const char *const seccomp_class_names[3];
extern const char *const delivery_names[4];
extern const char *const devices_mode_names[3];
extern const char *const pty_mode_names[4];
extern const char *const level_names[FY_LEVEL_CONFIDENTIAL_VM + 1];
extern const char *const profile_names[FY_PROFILE_HIGH_ASSURANCE + 1];
#define NAME_LOOKUP(table, name) name_lookup(table, FY_ARRAY_SIZE(table), name)
/* Reverse lookups: the index, or -1 when unknown. */
int name_lookup(const char *const *table, size_t n, const char *name);

#define POLICY_JSON_MAX (8u << 20) /* 8 MiB: canonical JSON of the largest valid policy fits */

#endif
