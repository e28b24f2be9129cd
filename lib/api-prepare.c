/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: fy_prepare and the prepared plan. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "os.h"
#include "oci/oci.h"
#include "plan.h"
#include "jobnet.h"
#include "prepared.h"

static void prepared_destroy(fy_prepared *pr) {
    if (!pr)
        return;
    if (pr->plan && pr->sel.backend && pr->sel.backend->plan_free)
        pr->sel.backend->plan_free(pr->plan);
    plan_free(pr->neutral);
    oci_image_free(pr->image);
    jobnet_unref(pr->jobnet);
    free(pr->contract_id);
    for (size_t i = 0; i < pr->nsecrets; i++)
        secret_release(pr->secrets[i].value);
    free(pr->secrets);
    VEC_EACH(&pr->env, struct pol_env, e) {
        free(e->name);
        free(e->value);
    }
    free(pr->env.items);
    if (pr->argv)
        for (size_t i = 0; i < pr->argc; i++)
            free(pr->argv[i]);
    free(pr->argv);
    selection_free(&pr->sel);
    policy_destroy(pr->policy);
    caps_free_internal(pr->caps);
    free(pr);
}

fy_prepared *prepared_ref(const fy_prepared *pr) {
    fy_prepared *p = (fy_prepared *)pr;
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    return p;
}

void prepared_unref(fy_prepared *pr) {
    if (pr && __atomic_sub_fetch(&pr->refs, 1, __ATOMIC_ACQ_REL) == 0)
        prepared_destroy(pr);
}

/* The caller's reference; running handles keep their own. */
void fy_prepared_free(fy_prepared *prepared) { prepared_unref(prepared); }

static int copy_argv(fy_prepared *pr, const char *const *argv, bool image, fy_error **reterr) {
    if (image && (!argv || !argv[0])) /* the image's Entrypoint and Cmd (plan.c) */
        return (pr->argv = calloc(1, sizeof(char *))) ? 0 : err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL,
                                                                    "out of memory");
    if (!argv || !argv[0])
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL, "argv is empty");
    if (!argv[0][0])
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL, "argv[0] is an empty string");
    size_t n = 0, bytes = 0;
    for (; argv[n]; n++) {
        if (n >= ARGV_MAX_COUNT)
            return err_set(reterr, FY_E_RANGE, FY_STEP_PREPARE, 0, NULL, "more than %u arguments", ARGV_MAX_COUNT);
        bytes += strlen(argv[n]) + 1;
        if (bytes > ARGV_MAX_BYTES)
            return err_set(reterr, FY_E_RANGE, FY_STEP_PREPARE, 0, NULL, "arguments larger than %u bytes",
                           ARGV_MAX_BYTES);
    }
    pr->argv = calloc(n + 1, sizeof(char *));
    if (!pr->argv)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!(pr->argv[i] = strdup(argv[i])))
            return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
        pr->argc = i + 1;
    }
    return 0;
}

static const char *host_env(const char *name) {
    size_t n = strlen(name);
    for (char **e = os_environ(); e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static int resolve_env(fy_prepared *pr, fy_error **reterr) {
    const fy_policy *p = pr->policy;
    vec_init(&pr->env, sizeof(struct pol_env));
    /* A scratch policy object reuses the sorted-insert logic. */
    fy_policy *tmp = policy_alloc();
    if (!tmp)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    bool ok = true;
    VEC_EACH(&p->env_set, struct pol_env, e) {
        ok = ok && policy_add_env(tmp, e->name, e->value) >= 0;
        if (ok && e->profile_default)
            policy_mark_env_default(tmp, e->name);
    }
    VEC_EACH(&p->env_allow, char *, name) {
        const char *v = host_env(*name);
        if (v)
            ok = ok && policy_add_env(tmp, *name, v) >= 0;
    }
    pr->env = tmp->env_set;
    vec_init(&tmp->env_set, sizeof(struct pol_env));
    policy_destroy(tmp);
    return ok ? 0 : err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
}

#define SECRET_MAX (1u << 20)

/* Errors name the secret's "file" in the policy: $.secrets[i].file. */
static int read_secret_file(struct prep_secret *ps, size_t i, fy_error **reterr) {
    const struct pol_secret *s = ps->decl;
    char loc[48];
    snprintf(loc, sizeof(loc), "$.secrets[%zu].file", i);
    /* (no symbolic link anywhere on the way; a FIFO: refused below) */
    int fd = util_open_no_links(s->host_path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = -fd;
        return err_set(reterr, err_from_errno(e), FY_STEP_SECRET, e, loc, "secret %s: cannot open %s: %s%s", s->name,
                       s->host_path, strerror(e), e == ELOOP ? " (a symbolic link in its path is refused)" : "");
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, loc, "secret %s: %s is not a regular file", s->name,
                       s->host_path);
    }
    /* (/proc, /sys and /dev are refused by name; a bind mount of one
     * elsewhere is not, the file system's type is) */
    if (util_fd_on_kernel_fs(fd)) {
        close(fd);
        return err_set(reterr, FY_E_POLICY, FY_STEP_SECRET, 0, loc,
                       "secret %s: %s is on a kernel interface file system (proc, sysfs and the like), not a file",
                       s->name, s->host_path);
    }
    if (st.st_size > SECRET_MAX) {
        close(fd);
        return err_set(reterr, FY_E_RANGE, FY_STEP_SECRET, 0, loc, "secret %s: %s is larger than %u bytes", s->name,
                       s->host_path, SECRET_MAX);
    }
    ps->value = secret_alloc(NULL, (size_t)st.st_size + 1);
    if (!ps->value) {
        close(fd);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, ps->value + len, (size_t)st.st_size + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return err_set(reterr, FY_E_IO, FY_STEP_SECRET, e, loc, "secret %s: reading %s: %s", s->name,
                           s->host_path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > (size_t)st.st_size) {
            close(fd);
            return err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, loc, "secret %s: %s grew while being read",
                           s->name, s->host_path);
        }
    }
    close(fd);
    ps->len = len;
    return 0;
}

static int load_secrets(fy_prepared *pr, fy_error **reterr) {
    const struct vec *v = &pr->policy->secrets;
    if (!v->n)
        return 0;
    pr->secrets = calloc(v->n, sizeof(*pr->secrets));
    if (!pr->secrets)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
    for (size_t i = 0; i < v->n; i++) {
        struct prep_secret *ps = &pr->secrets[i];
        ps->decl = vec_at(v, i);
        pr->nsecrets = i + 1;
        if (ps->decl->host_path) {
            int r = read_secret_file(ps, i, reterr);
            if (r < 0)
                return r;
        } else {
            if (!(ps->value = secret_alloc(ps->decl->value, ps->decl->len)))
                return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
            ps->len = ps->decl->len;
        }
    }
    return 0;
}

/* Source, build and output are directories. One that is there as anything
 * else (a file, a FIFO, a device) is refused here, early and by its policy
 * path; a missing one is left to the start, which opens each without
 * following symlinks and fails with the step and the path named. */
static int check_workspace_dirs(const fy_policy *p, fy_error **reterr) {
    const struct { const char *path, *loc; } dirs[] = {
        {p->source, "$.filesystem.source.path"}, {p->build, "$.filesystem.build"}, {p->output, "$.filesystem.output"},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(dirs); i++) {
        struct stat st;
        if (!dirs[i].path || stat(dirs[i].path, &st) < 0 || S_ISDIR(st.st_mode))
            continue;
        const char *kind = S_ISREG(st.st_mode) ? "a regular file" : S_ISFIFO(st.st_mode) ? "a FIFO"
                           : S_ISSOCK(st.st_mode) ? "a socket" : S_ISCHR(st.st_mode) ? "a character device"
                           : S_ISBLK(st.st_mode) ? "a block device" : "something else";
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, ENOTDIR, dirs[i].loc, "%s is %s, not a directory",
                       dirs[i].path, kind);
    }
    return 0;
}

/* What the compiled plan cannot apply of what the selection enforced
 * (backend.h unapplied): a preference is dropped with the backend's reason,
 * a requirement refused. Before anything reports the plan or hashes it. */
static int settle_unapplied(fy_prepared *pr, fy_error **reterr) {
    const struct fy_backend_ops *b = pr->sel.backend;
    if (!b->unapplied || !pr->plan)
        return 0;
    for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++) {
        if (pr->sel.control[ctl] != FY_CONTROL_STATE_ENFORCED)
            continue;
        const char *why = b->unapplied(pr->plan, ctl);
        if (!why)
            continue;
        if (policy_control_mode(pr->policy, ctl) == FY_MODE_REQUIRE) {
            char loc[64];
            snprintf(loc, sizeof(loc), "$.isolation.controls.%s", control_key(ctl));
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, loc,
                           "%s is required, but the %s backend cannot apply it to this plan: %s", control_key(ctl),
                           b->name, why);
        }
        pr->sel.control[ctl] = FY_CONTROL_STATE_DROPPED;
        pr->sel.dropped_why[ctl] = why;
    }
    return 0;
}

/* Selection, then the plan and the backend's compile. Selection answers
 * from the host alone; a backend's compile may still refuse this plan
 * (FY_E_UNSUPPORTED: the process level has no network namespace for
 * network mode deny), as may a required control it cannot apply to it.
 * Then the next backend selection offers is tried, with that one left
 * out: every backend it offers satisfies every requirement (level and
 * controls), so this gives up only a preference (a cheaper backend, the
 * preferred level), never a requirement, and the level note says what was
 * passed over and why. When none is left, the first refusal is the error. */
static int select_and_compile(const struct fy_backend_ops *const *table, size_t n, fy_prepared *pr,
                              fy_error **reterr) {
    uint32_t skip = 0;
    fy_error *first = NULL, *e = NULL;
    int first_r = 0, r;
    struct strbuf passed;
    strbuf_init(&passed);
    for (;;) {
        e = NULL;
        if ((r = select_backend(table, n, pr->policy, pr->caps, skip, &pr->sel, &e)) < 0) {
            if (first_r < 0) { /* every backend left refused the plan: the first refusal says why */
                fy_error_free(e);
                e = first;
                first = NULL;
                r = first_r;
            }
            break;
        }
        const struct fy_backend_ops *b = pr->sel.backend;
        if (pr->jobnet && !b->job_make) {
            r = err_set(&e, FY_E_UNSUPPORTED, FY_STEP_JOBNET, 0, "$.network.job", "the %s backend has no job networks",
                        b->name);
            break;
        }
        if ((r = plan_build(pr, &e)) < 0)
            break;
        if ((!b->compile || (r = b->compile(pr->neutral, pr->caps, &pr->plan, &e)) >= 0) &&
            (r = settle_unapplied(pr, &e)) >= 0)
            break;
        size_t i = 0;
        while (i < n && table[i] != b)
            i++;
        if (r != FY_E_UNSUPPORTED || i >= n || i >= 32)
            break;
        /* Passed over: undo its plan and try the next. */
        strbuf_printf(&passed, "%s%s: %s", passed.len ? "; " : "", b->name, e ? fy_error_message(e) : "refused");
        if (first_r == 0) {
            first = e;
            first_r = r;
        } else {
            fy_error_free(e);
        }
        e = NULL;
        if (pr->plan && b->plan_free)
            b->plan_free(pr->plan);
        pr->plan = NULL;
        plan_free(pr->neutral);
        pr->neutral = NULL;
        oci_image_free(pr->image);
        pr->image = NULL;
        selection_free(&pr->sel);
        memset(&pr->sel, 0, sizeof(pr->sel));
        skip |= UINT32_C(1) << i;
    }
    fy_error_free(first);
    if (r >= 0 && passed.len) {
        char *note = passed.oom ? NULL
                                : util_asprintf("%s%s%s cannot run this plan (%s); running on %s at %s isolation",
                                                pr->sel.level_note ? pr->sel.level_note : "",
                                                pr->sel.level_note ? "; " : "",
                                                skip & (skip - 1) ? "cheaper backends" : "a cheaper backend",
                                                passed.buf, pr->sel.backend->name, fy_level_name(pr->sel.level));
        free(pr->sel.level_note);
        pr->sel.level_note = note;
        if (!note)
            r = err_set(&e, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    }
    strbuf_free(&passed);
    if (r < 0) {
        if (reterr)
            *reterr = e;
        else
            fy_error_free(e);
        return r;
    }
    return 0;
}

/* probe_flags: with caps NULL, which of the process's probes to use;
 * retried: a refusal is tried again with the VM backends' probe (its audit
 * event is the second try's). */
static int prepare_once(const struct fy_backend_ops *const *table, size_t n, const fy_policy *policy,
                        const fy_caps *caps, uint64_t probe_flags, bool retried, const char *const *argv,
                        struct fy_jobnet *jobnet, fy_prepared **ret, fy_error **reterr) {
    if (!policy || !ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL, "policy or ret is NULL");
    /* A job member only with its job's network, and never one that did not
     * ask for it. */
    if (jobnet && !policy->job_member)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.job.member",
                       "the policy names no job member (network.job.member), so it is never put on a job network");
    if (!jobnet && policy->job_member)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.job.member",
                       "the policy is member \"%s\" of a job network: prepare it with fy_prepare_member and the "
                       "job's network",
                       policy->job_member);
    /* (Checked here, not when the policy is loaded: a job file's member
     * policy declares its ports and the CLI names the member after.) */
    if (!policy->job_member && policy->njob_ports)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.job.ports",
                       "network.job.ports without network.job.member: the ports are a job member's");
    int job_index = jobnet ? jobnet_index_of(jobnet, policy->job_member) : -1;
    if (jobnet && job_index < 0)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.network.job.member",
                       "\"%s\" is not a member declared by this job network", policy->job_member);
    /* The member's host name is on its /etc/hosts' loopback line, before
     * the job's lines (plan.c): another member's name there would resolve
     * to the member itself. Its own name may be its host name. */
    int host_index = jobnet ? jobnet_index_of(jobnet, policy->hostname) : -1;
    if (host_index >= 0 && host_index != job_index)
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.filesystem.hostname",
                       "host name \"%s\" is another member's name in this job network: the member's /etc/hosts "
                       "gives its host name to its own loopback before the job's lines, so \"%s\" would resolve "
                       "to the member itself",
                       policy->hostname, policy->hostname);
    if (policy->origin_pid != util_getpid() || (caps && caps->origin_pid != util_getpid()))
        return err_set(reterr, FY_E_FORKED, FY_STEP_PREPARE, 0, NULL, "object was created in another process");
    uint64_t t0 = util_now_usec();
    const struct obs *obs = &policy->obs;
    obs_span(obs, "sandbox.prepare", FY_SPAN_BEGIN, t0, NULL);
    int r = policy_validate(policy, reterr);
    if (r >= 0)
        r = check_workspace_dirs(policy, reterr);
    if (r < 0) {
        obs_span(obs, "sandbox.prepare", FY_SPAN_END, util_now_usec(), "{\"error\":\"%s\"}", fy_error_name(r));
        return r;
    }
    fy_caps *cached = NULL; /* (a copy of the process's probe, ours) */
    if (!caps && (r = caps_get_cached(probe_flags, &cached, reterr)) < 0)
        return r;
    fy_prepared *pr = calloc(1, sizeof(*pr));
    if (!pr) {
        caps_free_internal(cached);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    }
    pr->origin_pid = util_getpid();
    pr->refs = 1;
    pr->caps = cached ? cached : caps_dup(caps);
    vec_init(&pr->env, sizeof(struct pol_env));
    if ((r = copy_argv(pr, argv, policy->image != NULL, reterr)) < 0)
        goto fail;
    if (!pr->caps || !(pr->policy = policy_dup(policy))) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
        goto fail;
    }
    if ((r = resolve_env(pr, reterr)) < 0 || (r = load_secrets(pr, reterr)) < 0)
        goto fail;
    pr->impure = policy_is_impure(pr->policy);
    if (jobnet) {
        pr->jobnet = jobnet_ref(jobnet);
        pr->job_index = (uint32_t)job_index;
    }
    if ((r = select_and_compile(table, n, pr, reterr)) < 0)
        goto fail;
    pr->prepare_usec = util_now_usec() - t0;
    metrics_prepare(obs->metrics, pr->sel.backend->name, pr->sel.level, pr->prepare_usec);
    obs_span(obs, "sandbox.prepare", FY_SPAN_END, util_now_usec(), "{\"backend\":\"%s\",\"level\":\"%s\"}",
             pr->sel.backend->name, fy_level_name(pr->sel.level));
    *ret = pr;
    return 0;
fail:
    if (r == FY_E_UNSUPPORTED && !retried)
        obs_audit(obs, FY_AUDIT_DOWNGRADE_REJECTED, "%s",
                  reterr && *reterr ? fy_error_message(*reterr) : "the host cannot satisfy the policy");
    obs_span(obs, "sandbox.prepare", FY_SPAN_END, util_now_usec(), "{\"error\":\"%s\"}", fy_error_name(r));
    prepared_destroy(pr);
    return r;
}

/* Whether only a virtual machine can satisfy the policy: its minimum
 * level, or a control no other level has. */
static bool needs_vm(const fy_policy *p) {
    return p && (p->min_level >= FY_LEVEL_VIRTUAL_MACHINE || p->level_floor >= FY_LEVEL_VIRTUAL_MACHINE ||
                 policy_control_mode(p, FY_CONTROL_HW_VIRT) == FY_MODE_REQUIRE ||
                 policy_control_mode(p, FY_CONTROL_COLD_BOOT) == FY_MODE_REQUIRE);
}

/* With caps NULL, the process's probe without the VM backends' (QEMU's
 * runs take a second or more), and with them only for a policy that only a
 * virtual machine satisfies: a high-assurance policy was refused as "qemu:
 * not probed" on a host that runs VMs, unless the caller probed itself.
 * (Any other refused policy stays refused: a library host that did not ask
 * for a VM is never moved into one, seconds slower, by a refusal.) */
int prepare_member_with_table(const struct fy_backend_ops *const *table, size_t n, const fy_policy *policy,
                              const fy_caps *caps, const char *const *argv, struct fy_jobnet *jobnet,
                              fy_prepared **ret, fy_error **reterr) {
    bool retry = !caps && needs_vm(policy);
    fy_error *first = NULL;
    int r = prepare_once(table, n, policy, caps, FY_PROBE_NO_VM, retry, argv, jobnet, ret, reterr ? &first : NULL);
    if (r == FY_E_UNSUPPORTED && retry) {
        fy_error *second = NULL;
        r = prepare_once(table, n, policy, NULL, 0, false, argv, jobnet, ret, reterr ? &second : NULL);
        if (second) {
            fy_error_free(first);
            first = second;
        }
    }
    if (r >= 0)
        fy_error_free(first); /* (untouched on success, as every call leaves it) */
    else if (reterr)
        *reterr = first;
    return r;
}

int prepare_with_table(const struct fy_backend_ops *const *table, size_t n, const fy_policy *policy,
                       const fy_caps *caps, const char *const *argv, fy_prepared **ret, fy_error **reterr) {
    return prepare_member_with_table(table, n, policy, caps, argv, NULL, ret, reterr);
}

int fy_prepare(const fy_policy *policy, const fy_caps *caps, const char *const *argv, fy_prepared **ret,
               fy_error **reterr) {
    const struct fy_backend_ops *table[FY_BACKENDS_MAX];
    size_t n = backends_collect(table, FY_BACKENDS_MAX);
    return prepare_with_table(table, n, policy, caps, argv, ret, reterr);
}

int fy_prepare_member(const fy_policy *policy, const fy_caps *caps, const char *const *argv, fy_jobnet *jobnet,
                      fy_prepared **ret, fy_error **reterr) {
    if (!jobnet)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL, "jobnet is NULL");
    const struct fy_backend_ops *table[FY_BACKENDS_MAX];
    size_t n = backends_collect(table, FY_BACKENDS_MAX);
    return prepare_member_with_table(table, n, policy, caps, argv, jobnet, ret, reterr);
}

#define CHECK_PREPARED(pr)                           \
    do {                                             \
        if (!(pr))                                   \
            return FY_E_INVAL;                       \
        if ((pr)->origin_pid != util_getpid())  \
            return FY_E_FORKED;                      \
    } while (0)

const char *fy_prepared_backend(const fy_prepared *prepared) {
    if (!prepared || prepared->origin_pid != util_getpid())
        return NULL;
    return prepared->sel.backend->name;
}

int fy_prepared_level(const fy_prepared *prepared) {
    CHECK_PREPARED(prepared);
    return (int)prepared->sel.level;
}

int fy_prepared_control(const fy_prepared *prepared, uint32_t control) {
    CHECK_PREPARED(prepared);
    if (control == 0 || control > FY_CONTROL_MAX_ || !fy_control_name(control))
        return FY_E_UNSUPPORTED; /* (17 and 18 are no controls either) */
    return prepared->sel.control[control];
}

int fy_prepared_is_impure(const fy_prepared *prepared) {
    CHECK_PREPARED(prepared);
    return prepared->impure;
}

int fy_prepared_to_json(const fy_prepared *prepared, char **ret_json, fy_error **reterr) {
    if (!prepared || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "prepared or ret_json is NULL");
    if (prepared->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_JSON, 0, NULL, "object was created in another process");
    static const char *const state_names[] = {"off", "enforced", "dropped"};
    json_t *root = json_object(), *ctl = json_object(), *argv = json_array(), *env = json_array();
    char *pol = policy_to_json(prepared->policy);
    json_t *polj = pol ? json_loads(pol, 0, NULL) : NULL;
    free(pol);
    if (!root || !ctl || !argv || !env || !polj) {
        json_decref(root); json_decref(ctl); json_decref(argv); json_decref(env); json_decref(polj);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    }
    const struct selection *s = &prepared->sel;
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "backend", json_string(s->backend->name));
    json_object_set_new(root, "level", json_string(fy_level_name(s->level)));
    json_object_set_new(root, "impure", json_boolean(prepared->impure));
    json_object_set_new(root, "level_note", s->level_note ? json_string(s->level_note) : json_null());
    for (uint32_t c = 1; c <= FY_CONTROL_MAX_; c++) {
        uint8_t mode = policy_control_mode(prepared->policy, c);
        if (c > FY_CONTROL_UID_RANGE && mode == FY_MODE_OFF)
            continue; /* controls added after 0.1 appear when asked for */
        json_t *o = json_object();
        json_object_set_new(o, "mode", json_string(mode_name(mode)));
        json_object_set_new(o, "state", json_string(state_names[s->control[c]]));
        json_object_set_new(o, "why", s->dropped_why[c] ? json_string(s->dropped_why[c]) : json_null());
        json_object_set_new(ctl, control_key(c), o);
    }
    json_object_set_new(root, "controls", ctl);
    /* (an argument that is not UTF-8 was left out: the record did not
     * show what ran; its bytes that start no UTF-8 sequence read U+FFFD) */
    for (size_t i = 0; i < prepared->argc; i++) {
        json_t *a = json_string(prepared->argv[i]);
        if (!a) {
            char *lossy = util_utf8_lossy(prepared->argv[i]);
            a = lossy ? json_string(lossy) : NULL;
            free(lossy);
        }
        if (!a || json_array_append_new(argv, a) < 0) {
            json_decref(root); /* (with ctl in it) */
            json_decref(argv);
            json_decref(env);
            json_decref(polj);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
        }
    }
    json_object_set_new(root, "argv", argv);
    /* Names only: values may come from the host environment. */
    VEC_EACH(&prepared->env, struct pol_env, e) json_array_append_new(env, json_string(e->name));
    json_object_set_new(root, "environment", env);
    json_object_set_new(root, "policy", polj);
    /* The backend's view of the plan (isolation, limits) and the contract
     * id, when it has one. */
    if (prepared->plan && prepared->sel.backend->describe) {
        json_t *d = json_loads(prepared->sel.backend->describe(prepared->plan), 0, NULL);
        if (d)
            json_object_update(root, d);
        json_decref(d);
        json_object_set_new(root, "contract_id", json_string(prepared_contract_id(prepared)));
    }
    char *out = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!out)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    *ret_json = out;
    return 0;
}


/* s with every occurrence of what replaced by with (malloc'd; NULL on OOM). */
static char *str_replace_all(const char *s, const char *what, const char *with) {
    struct strbuf b;
    strbuf_init(&b);
    size_t n = strlen(what);
    for (const char *hit; (hit = strstr(s, what)); s = hit + n) {
        strbuf_appendn(&b, s, (size_t)(hit - s));
        strbuf_append(&b, with);
    }
    strbuf_append(&b, s);
    return strbuf_steal(&b);
}

/* The environment contract: what an attempt of this plan runs in. Its id is
 * stable for the same policy on the same host, and changes with anything
 * that changes the isolation (backend, library, kernel, what the backend
 * enforces and how: namespaces and id mode, seccomp profile and version,
 * Landlock ABI, limits and their mechanisms; the canonical policy).
 * Computed on first use, not by fy_prepare: hashing the canonical policy
 * was a third of a prepare, and fy_start asks for it once the sandbox is on
 * its way (the result needs it). */
const char *prepared_contract_id(const fy_prepared *pr) {
    char *have = __atomic_load_n(&pr->contract_id, __ATOMIC_ACQUIRE);
    if (have)
        return have;
    char *policy = policy_to_json(pr->policy);
    const char *enforced = pr->plan && pr->sel.backend->describe ? pr->sel.backend->describe(pr->plan) : "{}";
    /* An action attempt's execution root is a directory of its own, never
     * the same twice: the contract names it by role (the same action with
     * the same policy is the same contract). */
    char *masked = NULL;
    if (policy && pr->policy->build_is_exec_root && pr->policy->build && pr->policy->build[0]) {
        char *p2 = str_replace_all(policy, pr->policy->build, "(the action's execution root)");
        masked = str_replace_all(enforced, pr->policy->build, "(the action's execution root)");
        free(policy);
        policy = p2;
        if (masked)
            enforced = masked;
        else
            policy = (free(policy), NULL);
    }
    /* The network plan's resolved rules, whatever the backend describes:
     * the same names resolving elsewhere is another contract. */
    struct strbuf net;
    strbuf_init(&net);
    for (size_t i = 0; pr->neutral && i < pr->neutral->nnet_rules; i++) {
        char t[96];
        strbuf_printf(&net, "%s%s", i ? ", " : "", plan_net_rule_text(&pr->neutral->net_rules[i], t, sizeof(t)));
    }
    char *text = policy && !net.oom
                     ? util_asprintf("forgeyard-contract 2\nbackend %s\nlibrary %s\nkernel %s\nenforced %s\n"
                                     "policy %s\n%s%s%s",
                                     pr->sel.backend->name, FY_VERSION_STRING,
                                     pr->caps->host.kernel_release ? pr->caps->host.kernel_release : "unknown",
                                     enforced, policy, net.len ? "network " : "", net.len ? net.buf : "",
                                     net.len ? "\n" : "")
                     : NULL;
    strbuf_free(&net);
    free(policy);
    free(masked);
    char *hex = text ? malloc(crypto_hash_sha256_BYTES * 2 + 1) : NULL;
    if (!hex || sodium_init() < 0) {
        free(text);
        free(hex);
        return "";
    }
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
    free(text);
    sodium_bin2hex(hex, crypto_hash_sha256_BYTES * 2 + 1, h, sizeof(h));
    return util_publish_once(&pr->contract_id, hex);
}
