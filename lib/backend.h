/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The internal backend vtable and capability negotiation. Never exported. */
#ifndef FY_BACKEND_H
#define FY_BACKEND_H

#include "caps.h"
#include "plan.h"
#include "policy.h"

/* start_shell's answer for a shell found dead at its claim (not an FY_E_*). */
#define BACKEND_SHELL_LOST (-0x4000)


#define FY_BACKEND_OPS_VERSION 1

struct fy_backend_ops {
    uint32_t version;
    const char *name;   /* "linux-namespace" */
    uint32_t level;     /* FY_LEVEL_* it gives */
    uint32_t cost;      /* relative start-up cost; the selector picks the cheapest */
    /* Whether the backend can run at all on this host. When not, appends the
     * missing capabilities to why ("userns: ...") and returns false. */
    bool (*usable)(const fy_caps *c, struct strbuf *why);
    /* Whether the backend can enforce a control here. When not, sets *why
     * to a static or caps-owned string. */
    bool (*can_enforce)(const fy_caps *c, uint32_t control, const char **why);
    /* Optional from here on (NULL: the backend can negotiate but not run). */
    /* Compiles the platform-neutral plan (plan.h) for this host into the
     * backend's own plan (*ret, freed with plan_free); rejects what the
     * backend cannot enforce as the plan asks (FY_E_UNSUPPORTED). The
     * neutral plan outlives the backend's, which may point into it. */
    int (*compile)(const struct fy_plan *plan, const fy_caps *caps, void **ret, fy_error **reterr);
    void (*plan_free)(void *plan);
    /* Starts the sandbox: fills h->b. */
    int (*start)(fy_handle *h, fy_error **reterr);
    /* Advances without blocking; 1 when finished (h->result set). */
    int (*process)(fy_handle *h, fy_error **reterr);
    /* Begins the soft-terminate/grace/hard-kill sequence (owning thread). */
    void (*terminate)(fy_handle *h);
    /* Kills, reaps and releases everything (idempotent). */
    void (*destroy)(fy_handle *h);
    /* Releases memory only (the handle was inherited through a host fork). */
    void (*forget)(fy_handle *h);
    /* The pollable fd; the host end of a FY_STDIO_PIPE stream; the next
     * absolute deadline (CLOCK_MONOTONIC usec, 0: none). */
    int (*get_fd)(fy_handle *h);
    int (*stdio_fd)(fy_handle *h, uint32_t stream);
    uint64_t (*next_deadline)(fy_handle *h);
    /* A JSON object {"isolation": {...}, "limits": {...}}: what the plan
     * will enforce and how (borrowed; part of the contract id). */
    const char *(*describe)(const void *plan);
    /* Optional: why the compiled plan cannot apply a control the selection
     * gave it as enforced, or NULL when it applies it. can_enforce answers
     * for the host; whether a control has anything to act on may depend on
     * the plan too (an I/O limit needs a block device behind a host-backed
     * workspace: a tmpfs one has none). Core asks for every enforced
     * control right after compile, before the plan is reported or hashed
     * into its contract id: a preferred one becomes dropped with this
     * reason (static or owned by the plan); a required one fails
     * fy_prepare with FY_E_UNSUPPORTED naming the control and the reason.
     * The backend's describe must not claim it either (the neutral plan's
     * control still reads enforced). */
    const char *(*unapplied)(const void *plan, uint32_t control);
    /* Optional: the host ids that own what the workload creates in a
     * host-backed writable directory (actions make their execution root
     * the workload's own with them). 0, or negative when the backend's
     * workload has no host ids (a VM's files reach the host as a stream). */
    int (*workload_ids)(const void *plan, uint32_t *uid, uint32_t *gid);
    /* Runs the plan's container image as its root (image_layers): a policy
     * with an image selects only such a backend, one without never does. */
    bool images;
    /* Optional: whether the compiled plan mounts the neutral plan's
     * build_lower as an overlay at /work/build (upper: build). NULL or
     * false: build is bound as any workspace directory. */
    bool (*build_overlaid)(const void *plan);
    /* Optional: pre-started shells (fy_shells_new(3), api-shells.c). A
     * shell holds nothing of any attempt: no host path, plan, secret,
     * environment or workload byte. shell_make starts one shaped by plan
     * (it leaves by itself after idle_ms unclaimed); shell_fits says
     * whether plan may claim it (the same namespaces, ids, cgroup parents:
     * what it was made with); shell_gone whether it ended or stopped
     * waiting (then it may only be discarded); shell_discard kills and
     * reaps it and removes what it holds, returning what it could not
     * remove (0: witnessed gone); shell_forget releases memory and fds only
     * (a forked copy of the host); start_shell is start claiming the shell,
     * which it consumes, started or not; it returns BACKEND_SHELL_LOST
     * (no error set, nothing of the attempt left) when the shell turned
     * out dead at its claim, before anything of the attempt ran in it:
     * core then starts the attempt from nothing. */
    int (*shell_make)(const void *plan, uint32_t idle_ms, void **ret, fy_error **reterr);
    bool (*shell_fits)(const void *shell, const void *plan);
    bool (*shell_gone)(void *shell);
    uint32_t (*shell_discard)(void *shell);
    void (*shell_forget)(void *shell);
    int (*start_shell)(fy_handle *h, void *shell, fy_error **reterr);
    /* An external runtime's backend (NULL: the library's own): selected
     * only when the policy names this runtime (fy_policy_set_runtime),
     * never by cost. known_issues (optional): the unfixed vulnerabilities
     * of the runtime the probe found (NULL: none known); such a backend is
     * refused unless the policy acknowledged them. */
    const char *runtime;
    const char *(*known_issues)(const fy_caps *c);
    /* Optional: job networks (fy_jobnet_new(3), api-jobnet.c). job_make
     * makes the job's network for nmembers members (at its first member's
     * start); start then finds it in h->job and links member
     * plan->job_index to it (removing that link, witnessed, at the
     * attempt's cleanup); job_free removes it once no member is left and
     * returns what it could not remove (0: witnessed gone); job_forget
     * releases memory and fds only (a forked copy of the host). A backend
     * without job_make refuses fy_prepare_member. */
    int (*job_make)(uint32_t nmembers, void **ret, fy_error **reterr);
    uint32_t (*job_free)(void *job);
    void (*job_forget)(void *job);
};

/* One backend folder (lib/<name>/): what it probes, how it collects the
 * orphans of crashed hosts, its qualification suite and the backends it
 * provides. A folder registers itself: its meson.build adds its name to
 * backend_families, and meson generates the table (gen-backend-table.py) of
 * `family_<name>` objects, which the folder defines in
 * <name>-backend.c. Core never names a backend. */
#define FY_BACKEND_FAMILY_VERSION 1

struct json_t;

struct fy_backend_family {
    uint32_t version;
    const char *name;   /* "linux", "vm" */
    /* Fills what the folder knows of c (optional). Capabilities it skips
     * because of flags it marks itself, with the reason. */
    int (*probe)(fy_caps *c, uint64_t flags, fy_error **reterr);
    /* Whether the probe honours a delegated cgroup v2 directory
     * (fy_probe_cgroup). */
    bool delegated_cgroups;
    /* Destroys what crashed hosts left, recorded in state_dir (NULL: the
     * folder's default); adds to *destroyed (optional). */
    int (*gc)(const char *state_dir, uint64_t *destroyed, fy_error **reterr);
    /* The qualification suite (fy_qualify; optional): groups QUALIFY_*
     * (0: all); a policy made in another process is refused before. */
    int (*qualify)(const fy_policy *policy, uint32_t groups, const char *tmp_parent,
                   const char *const *plant_dirs, struct json_t **ret, fy_error **reterr);
    const struct fy_backend_ops *const *backends; /* NULL-terminated; may be empty */
    /* Persisted probe snapshots (fy_probe_snapshot; optional). fingerprint
     * appends every host setting the folder's probe depends on, so that a
     * snapshot is never trusted across a change of one. The folder that
     * can store snapshots (one per build) loads the one made under key
     * from dir (NULL: its default), verifying its owner and mode, and
     * stores one: NULL / negative when there is none or it is refused. */
    int (*fingerprint)(struct strbuf *key);
    char *(*snapshot_load)(const char *dir, const char *key, fy_error **reterr);
    int (*snapshot_store)(const char *dir, const char *key, const char *snapshot);
    /* Optional, for any folder: adds to a fresh probe that is about to be
     * persisted the facts a new process would otherwise compute again (the
     * Linux folder: its compiled seccomp programs, which its plan checks
     * before use). Negative only on OOM. */
    int (*snapshot_extras)(fy_caps *c);
    /* Optional: whether a loaded snapshot's facts that are cheap to know
     * agree with this process (the Linux folder: root, uid and gid); a
     * snapshot that one folder refuses (negative) is not used. */
    int (*snapshot_verify)(const fy_caps *c);
    /* Optional: the fetch-only proxy as a service to another folder's
     * backend whose sandbox has no network namespace on this host to put
     * the proxy's listener in (a VM: its guest agent carries the guest's
     * connections over the control port to the host). proxy_compile checks
     * the neutral plan's fetch-only allowlist (and loads its credentials)
     * as the folder's own backend does, into *ret (freed by
     * proxy_config_free). proxy_start starts the proxy with it, accepting
     * on listener: a listening stream socket the caller made and keeps
     * private to the attempt (it is duplicated, not taken). proxy_stop ends
     * it (SIGKILL, reaped): 0 when witnessed gone, idempotent;
     * proxy_report is the result's "network" record (malloc'd JSON text,
     * NULL on OOM); proxy_release stops and frees it; proxy_forget (a
     * forked copy of the host) frees memory and fds only. */
    int (*proxy_compile)(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
    void (*proxy_config_free)(void *cfg);
    int (*proxy_start)(const void *cfg, int listener, void **ret, fy_error **reterr);
    unsigned (*proxy_stop)(void *proxy);
    char *(*proxy_report)(const void *proxy);
    void (*proxy_release)(void *proxy);
    void (*proxy_forget)(void *proxy);
    /* Optional: network mode restricted as a service to another folder's
     * backend whose sandbox is a VM: the folder's own per-attempt router
     * (namespace, nftables allowlist, uplink; the same compile and rules)
     * whose sandbox-side link is a tap device in the router's namespace,
     * so that the caller hands its fd to its VMM (a virtio-net device of
     * the guest) and the host kernel enforces the rules outside the guest.
     * Without root the folder's rootless router if it has one (Linux: the
     * pasta path). router_compile checks what it needs (FY_E_UNSUPPORTED
     * naming what is missing) into *ret (router_config_free); router_describe: the
     * isolation record's "network" (malloc'd JSON text); router_start
     * makes it all, *tap an O_CLOEXEC fd of the tap (the caller's);
     * router_stop removes it: the number of objects left (0: witnessed),
     * idempotent; router_report, after it: what the teardown recorded for
     * the result's network record (malloc'd JSON object text, or NULL);
     * router_release stops and frees; router_forget (a forked
     * copy of the host) frees memory and fds only. */
    int (*router_compile)(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
    void (*router_config_free)(void *cfg);
    char *(*router_describe)(const void *cfg, const struct fy_plan *np);
    int (*router_start)(const void *cfg, int *tap, void **ret, fy_error **reterr);
    unsigned (*router_stop)(void *router);
    char *(*router_report)(void *router);
    void (*router_release)(void *router);
    void (*router_forget)(void *router);
    /* Optional: the per-attempt DNS stub (restricted and fetch-only) as a
     * service: dns_compile gives the plan's table, or *ret NULL where no
     * stub can run here (then nothing answers); dns_start answers the
     * datagrams arriving on sock, a datagram socket the caller keeps
     * private (one end of a socketpair; duplicated, not taken); the
     * running stub is ended, freed and forgotten by proxy_stop,
     * proxy_release and proxy_forget; dns_report is the result's
     * network "dns" record (malloc'd JSON text). */
    int (*dns_compile)(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
    void (*dns_config_free)(void *cfg);
    int (*dns_start)(const void *cfg, int sock, void **ret, fy_error **reterr);
    char *(*dns_report)(const void *dns);
    /* Optional: a host directory attached read-only (nosuid, nodev, its
     * submounts included) at target, an existing directory inside a
     * running sandbox of this folder's namespace backend (sandbox: its
     * handle, started by fy_start), in that sandbox's mount namespace only:
     * another folder's pre-started sandbox (the VM backend's restored
     * clones, whose VMM opened target's parent before the claim) gets an
     * attempt's directories after its claim. Root only (FY_E_UNSUPPORTED
     * otherwise); the mount goes when the sandbox's mount namespace does. */
    int (*sandbox_attach)(fy_handle *sandbox, const char *host_dir, const char *target, fy_error **reterr);
};

/* backend.c: the compiled-in folder that offers the fetch-only proxy as a
 * service (proxy_compile), or NULL. */
const struct fy_backend_family *backend_proxy_family(void);

/* The generated table of compiled-in folders, NULL-terminated. */
extern const struct fy_backend_family *const backend_families[];

/* backend.c: every compiled-in backend, in table order, into out (at most
 * max); returns how many. */
#define FY_BACKENDS_MAX 16
size_t backends_collect(const struct fy_backend_ops **out, size_t max);

struct selection {
    const struct fy_backend_ops *backend;
    uint32_t level;
    uint8_t control[FY_CONTROL_MAX_ + 1];      /* FY_CONTROL_STATE_OFF/ENFORCED/DROPPED */
    const char *dropped_why[FY_CONTROL_MAX_ + 1];
    char *level_note; /* preferred level not reached, why (owned) */
};

/* ---- for a folder's qualification suite (the qualify op) ----
 * The probe groups it runs (QUALIFY_BASELINE always). */
#define QUALIFY_BASELINE 0u        /* always runs: backend, level, isolation, stage baseline */
#define QUALIFY_STAGES   (1u << 0) /* stage-attribution.* */
#define QUALIFY_LEAKAGE  (1u << 1) /* leakage.* */
#define QUALIFY_ESCAPE   (1u << 2) /* escape.* */
#define QUALIFY_RESIDUE  (1u << 3) /* residue.* */
/* A suite runs whole attempts through the public API, as a host program
 * would; what it needs of a policy beyond that API is only these (core,
 * lib/api-qualify.c): a deep copy of the caller's policy for each attempt
 * (NULL on OOM), the controlled delay the stage-attribution probes inject
 * at one stage, and the name of the policy's profile for the report. */
fy_policy *qualify_policy_copy(const fy_policy *p);
void qualify_inject_delay(fy_policy *p, uint32_t stage, uint64_t usec);
const char *qualify_profile_name(const fy_policy *p);

/* select.c: least-cost backend that satisfies every requirement, leaving
 * out table[i] for every bit i of skip (backends whose compile refused the
 * plan: api-prepare.c). */
int select_backend(const struct fy_backend_ops *const *table, size_t n, const fy_policy *p,
                   const fy_caps *c, uint32_t skip, struct selection *out, fy_error **reterr);
void selection_free(struct selection *s);

/* api-prepare.c: fy_prepare against an explicit backend table (unit tests
 * pass a fake one). */
struct fy_jobnet;
int prepare_member_with_table(const struct fy_backend_ops *const *table, size_t n, const fy_policy *policy,
                              const fy_caps *caps, const char *const *argv, struct fy_jobnet *jobnet,
                              fy_prepared **ret, fy_error **reterr);
int prepare_with_table(const struct fy_backend_ops *const *table, size_t n, const fy_policy *policy,
                       const fy_caps *caps, const char *const *argv, fy_prepared **ret, fy_error **reterr);

/* The running attempt (struct fy_handle: h->b is the backend's state) and
 * the report a backend makes of it (attempt.h) are part of the seam: a
 * backend folder needs no other core header. */
#include "attempt.h"

#endif
