/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The neutral plan (plan.h) compiled for Seatbelt: the refusal table, the
 * negotiation of the apple backends, the profile generator and the spawn
 * facts (rlimits, identity, environment, working directory). Portable C:
 * reads only the neutral plan and the capability facts. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "apple-sbpl.h"

/* ---- the refusal table ---- */

const uint8_t apple_limit_how[FY_LIMIT_MAX_ + 1] = {
    [FY_LIMIT_CPU_MILLIS] = AH_CONTROL,   /* cpu-limit: no CPU quota on macOS */
    [FY_LIMIT_MEMORY] = AH_CONTROL,       /* memory-limit: RLIMIT_AS/DATA do not limit memory */
    [FY_LIMIT_MEMORY_SWAP] = AH_CONTROL,  /* memory-limit */
    [FY_LIMIT_PIDS] = AH_CONTROL,         /* pids-limit: RLIMIT_NPROC counts per uid */
    [FY_LIMIT_DISK] = AH_REFUSED,         /* no disk watchdog here */
    [FY_LIMIT_FILES] = AH_REFUSED,
    [FY_LIMIT_NOFILE] = AH_SPAWN,         /* RLIMIT_NOFILE */
    [FY_LIMIT_FSIZE] = AH_SPAWN,          /* RLIMIT_FSIZE */
    [FY_LIMIT_STACK] = AH_SPAWN,          /* RLIMIT_STACK */
    [FY_LIMIT_CORE] = AH_SPAWN,           /* RLIMIT_CORE */
    [FY_LIMIT_WALL_TIME] = AH_SPAWN,      /* the handle's deadline, then a tree kill */
    [FY_LIMIT_GRACE] = AH_SPAWN,          /* SIGTERM to the group, then SIGKILL after it */
    [FY_LIMIT_OUTPUT] = AH_SPAWN,         /* captured streams only, and none is captured (FILE and
                                             CALLBACK stdio are refused) */
    [FY_LIMIT_TMP_SIZE] = AH_UNENFORCED,  /* plain directories: no tmpfs on macOS */
    [FY_LIMIT_WORK_TMP_SIZE] = AH_UNENFORCED,
    [FY_LIMIT_HOME_SIZE] = AH_UNENFORCED,
    [FY_LIMIT_SHM_SIZE] = AH_UNENFORCED,
    [FY_LIMIT_IO_BPS] = AH_CONTROL,       /* io-limit */
};

const uint8_t apple_control_how[FY_CONTROL_MAX_ + 1] = {
    [FY_CONTROL_USERNS] = AH_CONTROL,   [FY_CONTROL_MOUNTNS] = AH_CONTROL,
    [FY_CONTROL_PIDNS] = AH_CONTROL,    [FY_CONTROL_NETNS] = AH_CONTROL,
    [FY_CONTROL_IPCNS] = AH_CONTROL,    [FY_CONTROL_UTSNS] = AH_CONTROL,
    [FY_CONTROL_CGROUPNS] = AH_CONTROL, [FY_CONTROL_SECCOMP] = AH_CONTROL,
    [FY_CONTROL_LANDLOCK] = AH_CONTROL, [FY_CONTROL_MEMORY_LIMIT] = AH_CONTROL,
    [FY_CONTROL_PIDS_LIMIT] = AH_CONTROL, [FY_CONTROL_CPU_LIMIT] = AH_CONTROL,
    [FY_CONTROL_IO_LIMIT] = AH_CONTROL,
    [FY_CONTROL_UID_RANGE] = AH_SPAWN,  /* a dedicated uid (the range's first id) when root */
    [FY_CONTROL_HW_VIRT] = AH_CONTROL,  /* Seatbelt runs no virtual machine */
    [FY_CONTROL_DEVICES] = AH_PROFILE,  /* the profile's literal device paths (PR_DEV, PR_DEVICE) */
    [FY_CONTROL_COLD_BOOT] = AH_CONTROL, /* Seatbelt boots no kernel */
    [FY_CONTROL_LOW_INTEGRITY] = AH_CONTROL, /* Windows' integrity levels: refused by can_enforce */
};

uint8_t apple_kind_how(uint32_t kind) {
    switch (kind) {
    case PE_FILE: case PE_SYMLINK: case PE_HOST: case PE_TMPFS: case PE_PROC: return AH_PROFILE;
    case PE_PROC_HIDE: case PE_PROC_RO: return AH_DENIED; /* no /proc; sysctl is allowlisted */
    case PE_PTYS: return AH_REFUSED;                      /* no private devpts instance */
    default: return AH_UNLISTED;
    }
}

uint8_t apple_role_how(uint32_t role) {
    switch (role) {
    case PR_ETC: case PR_RUNTIME: case PR_TRUST: case PR_RESOLV: case PR_DEV: case PR_PROC: case PR_SCRATCH:
    case PR_HOME: case PR_SOURCE: case PR_BUILD: case PR_OUTPUT: case PR_TOOLCHAIN: case PR_BIND: case PR_DEVICE:
        return AH_PROFILE;
    default:
        return AH_UNLISTED;
    }
}

uint8_t apple_flag_how(uint32_t flag) {
    switch (flag) {
    case PLAN_RO: case PLAN_DEVICE: case PLAN_FILE: case PLAN_NOEXEC: return AH_PROFILE;
    /* checked or applied when the attempt directory is made (apple-darwin.c) */
    case PLAN_OPTIONAL: case PLAN_WORKSPACE: case PLAN_DIR: case PLAN_OWNED: return AH_SPAWN;
    default: return AH_UNLISTED;
    }
}

/* ---- negotiation ---- */

bool apple_seatbelt_usable(const fy_caps *c, struct strbuf *why) {
    if (caps_fact(c, APPLE_FACT_SEATBELT))
        return true;
    strbuf_printf(why, "%sseatbelt: no deny-default profile could be enforced here (sandbox_init)",
                  why->len ? "; " : "");
    return false;
}

bool apple_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    switch (control) {
    case FY_CONTROL_UID_RANGE:
        if (caps_fact(c, APPLE_FACT_ROOT))
            return true;
        *why = "a dedicated uid needs the host process to run as root";
        return false;
    case FY_CONTROL_MEMORY_LIMIT:
        *why = "macOS has no enforceable memory limit (RLIMIT_AS and RLIMIT_DATA are not enforced)";
        return false;
    case FY_CONTROL_PIDS_LIMIT:
        *why = "macOS counts processes per uid only (RLIMIT_NPROC), not per sandbox";
        return false;
    case FY_CONTROL_CPU_LIMIT: case FY_CONTROL_IO_LIMIT:
        *why = "macOS has no cgroups";
        return false;
    case FY_CONTROL_SECCOMP: case FY_CONTROL_LANDLOCK:
        *why = "a Linux mechanism; Seatbelt's profile is the apple backend's filter";
        return false;
    case FY_CONTROL_HW_VIRT:
        *why = "the Seatbelt backend runs no virtual machine";
        return false;
    case FY_CONTROL_COLD_BOOT:
        *why = "the Seatbelt backend boots no kernel of its own";
        return false;
    case FY_CONTROL_LOW_INTEGRITY:
        *why = "a Windows mechanism (mandatory integrity levels): only the windows-job backend enforces it";
        return false;
    case FY_CONTROL_DEVICES:
        /* The kernel's list here is Seatbelt's: the deny-default profile
         * allows the standard nodes and each leased path by literal (a
         * read-only lease for reading only), devfs has no other names. */
        return true;
    default:
        *why = "macOS has no namespaces";
        return false;
    }
}

bool apple_vm_usable(const fy_caps *c, struct strbuf *why) {
    const char *tool = caps_fact(c, APPLE_FACT_VM_TOOL);
    if (tool)
        strbuf_printf(why, "%s%s is installed, but this build does not run workloads in its virtual machines yet",
                      why->len ? "; " : "", tool);
    else
        strbuf_printf(why, "%sno virtual machine tool (tart, lume) was found", why->len ? "; " : "");
    return false;
}

bool apple_vm_can_enforce(const fy_caps *c, uint32_t control, const char **why) {
    *why = "the apple virtual-machine backend does not run workloads yet";
    return false;
}

/* ---- the profile ---- */

enum rule_class { C_META, C_READ, C_EXEC, C_WRITE, C_DEV, C_IOCTL, C_NOWRITE, C_MAX };
static const char *const class_head[C_MAX] = {
    [C_META] = "(allow file-read-metadata", [C_READ] = "(allow file-read*", [C_EXEC] = "(allow process-exec",
    [C_WRITE] = "(allow file-write*", [C_DEV] = "(allow file-read* file-write-data",
    [C_IOCTL] = "(allow file-ioctl", [C_NOWRITE] = "(deny file-write*",
};

struct rule {
    bool subpath;
    char *path;   /* canonical */
};

struct gen {
    struct rule *r[C_MAX];
    size_t n[C_MAX], cap[C_MAX];
    int err;               /* first error (negative) */
    const char *err_loc;
    char err_msg[256];
};

static void gen_fail(struct gen *g, int code, const char *loc, const char *fmt, ...) FY_PRINTF(4, 5);
static void gen_fail(struct gen *g, int code, const char *loc, const char *fmt, ...) {
    if (g->err)
        return;
    g->err = code;
    g->err_loc = loc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err_msg, sizeof(g->err_msg), fmt, ap);
    va_end(ap);
}

static bool has_rule(const struct gen *g, int cls, bool subpath, const char *path) {
    for (size_t i = 0; i < g->n[cls]; i++)
        if (g->r[cls][i].subpath == subpath && strcmp(g->r[cls][i].path, path) == 0)
            return true;
    return false;
}

static void add_canon(struct gen *g, int cls, bool subpath, const char *canon) {
    if (g->err || has_rule(g, cls, subpath, canon))
        return;
    if (g->n[cls] == g->cap[cls]) {
        size_t cap = g->cap[cls] ? g->cap[cls] * 2 : 16;
        struct rule *n = realloc(g->r[cls], cap * sizeof(*n));
        if (!n) {
            g->err = FY_E_NOMEM;
            return;
        }
        g->r[cls] = n;
        g->cap[cls] = cap;
    }
    char *p = util_strdup(canon);
    if (!p) {
        g->err = FY_E_NOMEM;
        return;
    }
    g->r[cls][g->n[cls]++] = (struct rule){subpath, p};
}

/* A rule on a host path: canonical, and its ancestors readable as
 * metadata (realpath(), getcwd() and path walks stat them). */
static void add(struct gen *g, int cls, bool subpath, const char *path) {
    char canon[4096];
    if (g->err)
        return;
    if (sbpl_canonical_path(path, canon, sizeof(canon)) < 0) {
        gen_fail(g, FY_E_POLICY, NULL, "%s: not an absolute canonical path Seatbelt can match", path);
        return;
    }
    add_canon(g, cls, subpath, canon);
    if (cls == C_NOWRITE)
        return;
    char anc[4096];
    snprintf(anc, sizeof(anc), "%s", canon);
    for (char *slash = strrchr(anc, '/'); slash; slash = strrchr(anc, '/')) {
        if (slash == anc) {
            add_canon(g, C_META, false, "/");
            break;
        }
        *slash = '\0';
        add_canon(g, C_META, false, anc);
    }
}

/* attempt/fs<target>: where a materialised entry lives. */
static void add_materialised(struct gen *g, int cls, bool subpath, const char *attempt, const char *target) {
    char p[4096];
    if ((size_t)snprintf(p, sizeof(p), "%s/fs%s", attempt, target) >= sizeof(p)) {
        gen_fail(g, FY_E_POLICY, NULL, "%s: path too long", target);
        return;
    }
    add(g, cls, subpath, p);
}

static void gen_free(struct gen *g) {
    for (int c = 0; c < C_MAX; c++) {
        for (size_t i = 0; i < g->n[c]; i++)
            free(g->r[c][i].path);
        free(g->r[c]);
    }
}

/* The devices the plan names as links (/dev/fd -> /proc/self/fd, ...):
 * macOS has them as real nodes. */
static void add_dev_link(struct gen *g, const char *target) {
    if (strcmp(target, "/dev/fd") == 0)
        add(g, C_DEV, true, "/dev/fd");
    else if (strcmp(target, "/dev/stdin") == 0 || strcmp(target, "/dev/stdout") == 0 ||
             strcmp(target, "/dev/stderr") == 0)
        add(g, C_DEV, false, target);
    else
        gen_fail(g, FY_E_UNSUPPORTED, "$.devices", "device link %s has no macOS equivalent", target);
}

static void gen_entry(struct gen *g, const struct plan_entry *e, const char *attempt) {
    bool file = (e->flags & PLAN_FILE) != 0, ro = (e->flags & PLAN_RO) != 0;
    switch (e->kind) {
    case PE_FILE:
        add_materialised(g, C_READ, false, attempt, e->target);
        break;
    case PE_SYMLINK:
        if (e->role == PR_DEV)
            add_dev_link(g, e->target);
        else /* the host's own link at the same place (runtime paths): readable itself */
            add(g, C_READ, false, e->target);
        break;
    case PE_HOST:
        switch (e->role) {
        case PR_DEV:
            add(g, C_DEV, false, e->host);
            break;
        case PR_DEVICE:
            add(g, ro ? C_READ : C_DEV, false, e->host);
            add(g, C_IOCTL, false, e->host);
            break;
        case PR_RESOLV:
            add(g, C_READ, false, e->host);
            break;
        case PR_BIND:
            if (strcmp(e->host, e->target) != 0) {
                gen_fail(g, FY_E_UNSUPPORTED, "$.filesystem.binds",
                         "bind target %s: Seatbelt cannot remap paths; a bind is only possible at its host path",
                         e->target);
                return;
            }
            __attribute__((fallthrough));
        case PR_RUNTIME: case PR_TRUST: case PR_SOURCE: case PR_BUILD: case PR_OUTPUT: case PR_TOOLCHAIN:
            add(g, C_READ, !file, e->host);
            if (e->role != PR_TRUST) /* certificates are read, never run */
                add(g, C_EXEC, !file, e->host);
            if (!ro)
                add(g, C_WRITE, !file, e->host);
            break;
        default:
            gen_fail(g, FY_E_UNSUPPORTED, NULL, "a host path of role %s is unknown to the apple backend",
                     e->role == PR_ETC ? "etc" : e->role == PR_PROC ? "proc" : e->role == PR_SCRATCH ? "scratch"
                     : e->role == PR_HOME ? "home" : "(new)");
        }
        break;
    case PE_TMPFS:
        if (e->role == PR_DEV) { /* the /dev directory itself: its listing only */
            add(g, C_META, false, e->target);
            break;
        }
        add_materialised(g, C_READ, true, attempt, e->target);
        add_materialised(g, C_WRITE, true, attempt, e->target);
        if (!(e->flags & PLAN_NOEXEC))
            add_materialised(g, C_EXEC, true, attempt, e->target);
        break;
    case PE_PROC: case PE_PROC_HIDE: case PE_PROC_RO:
        break; /* process-info (same-sandbox) below; the rest stays denied */
    case PE_PTYS:
        gen_fail(g, FY_E_UNSUPPORTED, "$.devices.pty", "%s: macOS has no private pseudo-terminal instance",
                 e->target);
        break;
    default:
        gen_fail(g, FY_E_UNSUPPORTED, NULL, "%s: a plan entry kind unknown to the apple backend", e->target);
    }
}

/* Read-only paths that lie under a writable subpath are denied writes
 * again after the allows (the last matching rule wins). */
static void gen_nowrite(struct gen *g) {
    size_t nread = g->n[C_READ];
    for (size_t i = 0; i < nread && !g->err; i++) {
        const struct rule *r = &g->r[C_READ][i];
        if (has_rule(g, C_WRITE, r->subpath, r->path))
            continue;
        for (size_t w = 0; w < g->n[C_WRITE]; w++) {
            const struct rule *wr = &g->r[C_WRITE][w];
            size_t n = strlen(wr->path);
            if (wr->subpath && strncmp(r->path, wr->path, n) == 0 && (r->path[n] == '/' || r->path[n] == '\0')) {
                add_canon(g, C_NOWRITE, r->subpath, r->path);
                break;
            }
        }
    }
}

static const char *const sysctl_names[] = {
    "hw.activecpu", "hw.byteorder", "hw.cachelinesize", "hw.cpufamily", "hw.cputype", "hw.logicalcpu",
    "hw.logicalcpu_max", "hw.machine", "hw.memsize", "hw.ncpu", "hw.pagesize", "hw.physicalcpu",
    "hw.physicalcpu_max", "kern.argmax", "kern.maxfilesperproc", "kern.ngroups", "kern.osproductversion",
    "kern.osrelease", "kern.ostype", "kern.osversion", "kern.usrstack64", "kern.version",
    "sysctl.proc_cputype", "sysctl.proc_translated",
};
static const char *const sysctl_prefixes[] = {"hw.optional.", "hw.perflevel"};
/* Mach services: user and group lookups, notifications; certificate trust
 * where the network is reachable; the resolver where the plan has one. */
static const char *const mach_base[] = {
    "com.apple.system.notification_center", "com.apple.system.opendirectoryd.libinfo",
};
static const char *const mach_trust[] = {"com.apple.trustd", "com.apple.trustd.agent"};
static const char *const mach_dns[] = {"com.apple.dnssd.service"};

static void emit_strings(struct strbuf *sb, const char *head, const char *filter, const char *const *v, size_t n) {
    strbuf_append(sb, head);
    for (size_t i = 0; i < n; i++) {
        strbuf_printf(sb, "\n    (%s ", filter);
        sbpl_append_string(sb, v[i]); /* static ASCII names */
        strbuf_append(sb, ")");
    }
    strbuf_append(sb, ")\n");
}

static int rule_cmp(const void *a, const void *b) {
    return strcmp(((const struct rule *)a)->path, ((const struct rule *)b)->path);
}

static void emit_class(struct strbuf *sb, const struct gen *g, int cls) {
    if (!g->n[cls])
        return; /* never an unfiltered allow */
    size_t chunk = 0;
    strbuf_append(sb, class_head[cls]);
    for (size_t i = 0; i < g->n[cls]; i++) {
        if (chunk > APPLE_SBPL_CHUNK) {
            strbuf_printf(sb, ")\n%s", class_head[cls]);
            chunk = 0;
        }
        size_t before = sb->len;
        strbuf_printf(sb, "\n    (%s ", g->r[cls][i].subpath ? "subpath" : "literal");
        sbpl_append_string(sb, g->r[cls][i].path); /* checked by sbpl_canonical_path's caller */
        strbuf_append(sb, ")");
        chunk += sb->len - before;
    }
    strbuf_append(sb, ")\n");
}

/* The network: none, the host's, or outbound to loopback destinations
 * (SBPL names a remote host only as localhost or *: anything else cannot be
 * expressed exactly and is refused, never widened). */
static int gen_network(struct strbuf *sb, const struct fy_plan *np, fy_error **reterr) {
    switch (np->net_mode) {
    case FY_NET_DENY:
        strbuf_append(sb, "; network: denied (nothing allows it), loopback included\n");
        return 0;
    case FY_NET_ALLOW:
        /* IP only: an unfiltered network* would also connect to every
         * unix socket of the host by path (Docker's, an ssh or gpg agent),
         * which no plan names. */
        strbuf_append(sb, "; network: the host's IP network (impure); no unix socket of the host\n"
                          "(allow network-outbound (remote ip \"*:*\"))\n"
                          "(allow network-inbound (local ip \"*:*\"))\n"
                          "(allow network-bind (local ip \"*:*\"))\n");
        return 0;
    case FY_NET_RESTRICTED:
        if (np->dns == FY_DNS_HOST)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.dns",
                           "dns host under network restricted is not given on macOS: the host's resolver "
                           "(mDNSResponder) resolves any name for the workload, so data could leave in the names "
                           "it asks for; name the destinations by address or in network.hosts");
        break;
    default:
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                       "network mode %s is not enforced by the apple backend; use deny, allow or restricted to "
                       "localhost", net_mode_name(np->net_mode) ? net_mode_name(np->net_mode) : "(unknown)");
    }
    strbuf_append(sb, "; network: outbound to the plan's destinations only\n");
    if (!np->ndests) {
        strbuf_append(sb, "; (none listed)\n");
        return 0;
    }
    strbuf_append(sb, "(allow network-outbound");
    for (size_t i = 0; i < np->ndests; i++) {
        const struct plan_dest *d = &np->dests[i];
        char loc[64];
        snprintf(loc, sizeof(loc), "$.network.destinations[%zu]", i);
        if (strcmp(d->host, "localhost") != 0)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, loc,
                           "destination %s: Seatbelt names a remote host only as localhost or *, so this "
                           "destination cannot be enforced exactly (refused, not widened)", d->host);
        if (d->proto != FY_PROTO_TCP && d->proto != FY_PROTO_UDP)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, loc, "protocol %u unknown to the apple backend",
                           d->proto);
        const char *proto = d->proto == FY_PROTO_TCP ? "tcp" : "udp";
        if (d->port_min <= 1 && d->port_max >= 65535) {
            strbuf_printf(sb, "\n    (remote %s \"localhost:*\")", proto);
        } else if (d->port_max - d->port_min < 16) {
            for (uint32_t p = d->port_min; p <= d->port_max; p++)
                strbuf_printf(sb, "\n    (remote %s \"localhost:%u\")", proto, p);
        } else {
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, loc,
                           "ports %u-%u: Seatbelt names one port or all; a range of more than 16 ports is refused",
                           d->port_min, d->port_max);
        }
    }
    strbuf_append(sb, ")\n");
    return 0;
}

int apple_profile(const struct apple_plan *ap, const char *attempt, char **ret, fy_error **reterr) {
    const struct fy_plan *np = ap->np;
    char canon_attempt[4096];
    if (sbpl_canonical_path(attempt, canon_attempt, sizeof(canon_attempt)) < 0 ||
        strcmp(canon_attempt, attempt) != 0)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_PREPARE, 0, NULL,
                       "the attempt directory %s is not a resolved canonical path", attempt);
    struct gen g = {0};
    for (size_t i = 0; i < np->nentries && !g.err; i++)
        gen_entry(&g, &np->entries[i], attempt);
    for (size_t i = 0; i < np->nsecrets && !g.err; i++) {
        if (np->secrets[i].delivery != FY_SECRET_FILE)
            continue;
        char t[4096];
        snprintf(t, sizeof(t), "/run/secrets/%s", np->secrets[i].target);
        add_materialised(&g, C_READ, false, attempt, t);
    }
    gen_nowrite(&g);
    if (g.err) {
        int r = g.err == FY_E_NOMEM ? err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory")
                                    : err_set(reterr, g.err, FY_STEP_PREPARE, 0, g.err_loc, "%s", g.err_msg);
        gen_free(&g);
        return r;
    }
    bool proc = false;
    for (size_t i = 0; i < np->nentries; i++)
        proc = proc || np->entries[i].kind == PE_PROC;

    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_append(&sb, "; forgeyard-sandbox: Seatbelt profile generated from the neutral plan\n"
                       "(version 1)\n(deny default)\n(allow process-fork)\n(allow signal (target same-sandbox))\n");
    if (proc)
        strbuf_append(&sb, "(allow process-info* (target same-sandbox))\n");
    emit_strings(&sb, "(allow sysctl-read", "sysctl-name", sysctl_names, FY_ARRAY_SIZE(sysctl_names));
    emit_strings(&sb, "(allow sysctl-read", "sysctl-name-prefix", sysctl_prefixes, FY_ARRAY_SIZE(sysctl_prefixes));
    emit_strings(&sb, "(allow mach-lookup", "global-name", mach_base, FY_ARRAY_SIZE(mach_base));
    /* trustd fetches the OCSP, CRL and issuer URLs of a certificate it is
     * asked to evaluate, and mDNSResponder resolves any name: both reach
     * the network for the workload, so only where the network is the
     * host's (restricted + dns host is refused by gen_network). */
    if (np->net_mode == FY_NET_ALLOW)
        emit_strings(&sb, "(allow mach-lookup", "global-name", mach_trust, FY_ARRAY_SIZE(mach_trust));
    if (np->dns == FY_DNS_HOST && np->net_mode == FY_NET_ALLOW) {
        /* The resolver: mDNSResponder's mach service and its socket. */
        emit_strings(&sb, "(allow mach-lookup", "global-name", mach_dns, FY_ARRAY_SIZE(mach_dns));
        strbuf_append(&sb, "(allow network-outbound (remote unix-socket (path-literal "
                           "\"/private/var/run/mDNSResponder\")))\n");
    }
    if (g.n[C_META]) /* derived from the others: in path order */
        qsort(g.r[C_META], g.n[C_META], sizeof(struct rule), rule_cmp);
    static const int order[] = {C_META, C_READ, C_EXEC, C_WRITE, C_DEV, C_IOCTL};
    for (size_t i = 0; i < FY_ARRAY_SIZE(order); i++)
        emit_class(&sb, &g, order[i]);
    int r = gen_network(&sb, np, reterr);
    if (r < 0) {
        gen_free(&g);
        strbuf_free(&sb);
        return r;
    }
    emit_class(&sb, &g, C_NOWRITE);
    strbuf_append(&sb, "(deny file-write-setugid)\n");
    gen_free(&g);
    if (sb.oom) {
        strbuf_free(&sb);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    }
    if (sb.len > APPLE_SBPL_MAX) {
        size_t len = sb.len;
        strbuf_free(&sb);
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, "$.filesystem",
                       "the Seatbelt profile would be %zu bytes, more than the %u Seatbelt's pattern tables hold",
                       len, APPLE_SBPL_MAX);
    }
    /* Defence in depth: what is handed to Seatbelt passes the checker. */
    const char *why;
    size_t off;
    if (sbpl_check(sb.buf, sb.len, &why, &off) < 0) {
        r = err_set(reterr, FY_E_INTERNAL, FY_STEP_PREPARE, 0, NULL,
                    "generated profile fails the check at byte %zu (\"%.40s\"): %s", off, sb.buf + off, why);
        strbuf_free(&sb);
        return r;
    }
    *ret = strbuf_steal(&sb);
    return *ret ? 0 : err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
}

/* ---- paths and environment of an attempt ---- */

char *apple_host_path(const struct fy_plan *np, const char *attempt, const char *target) {
    const struct plan_entry *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        bool host = e->kind == PE_HOST && (e->role == PR_SOURCE || e->role == PR_BUILD || e->role == PR_OUTPUT ||
                                           e->role == PR_BIND || e->role == PR_TOOLCHAIN);
        bool scratch = e->kind == PE_TMPFS && e->role != PR_DEV;
        if (!host && !scratch)
            continue;
        size_t n = strlen(e->target);
        if (n >= best_len && strncmp(target, e->target, n) == 0 && (target[n] == '/' || target[n] == '\0' || n == 1)) {
            best = e;
            best_len = n;
        }
    }
    if (!best)
        return NULL;
    if (best->kind == PE_HOST)
        return util_asprintf("%s%s", best->host, target + best_len);
    return util_asprintf("%s/fs%s", attempt, target);
}

void apple_env_free(char **env) {
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

static char *role_dir(const struct fy_plan *np, const char *attempt, uint32_t role) {
    for (size_t i = 0; i < np->nentries; i++)
        if (np->entries[i].role == role && (np->entries[i].kind == PE_HOST || np->entries[i].kind == PE_TMPFS))
            return apple_host_path(np, attempt, np->entries[i].target);
    return NULL;
}

char **apple_env(const struct fy_plan *np, const char *attempt) {
    static const struct { const char *name; uint32_t role; } ws[] = {
        {"FORGEYARD_SOURCE", PR_SOURCE}, {"FORGEYARD_BUILD", PR_BUILD}, {"FORGEYARD_OUTPUT", PR_OUTPUT},
    };
    char **env = calloc(np->nenv + FY_ARRAY_SIZE(ws) + 1, sizeof(char *));
    if (!env)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < np->nenv; i++) {
        const char *v = np->envp[i];
        char *moved = NULL;
        /* An exact environment (an action's) is passed as declared. */
        if (!np->env_exact && (strncmp(v, "HOME=", 5) == 0 || strncmp(v, "TMPDIR=", 7) == 0)) {
            const char *val = strchr(v, '=') + 1;
            char *host = apple_host_path(np, attempt, val);
            if (host) {
                moved = util_asprintf("%.*s%s", (int)(val - v), v, host);
                free(host);
                if (!moved)
                    goto oom;
            }
        }
        if (!(env[n++] = moved ? moved : util_strdup(v)))
            goto oom;
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(ws) && !np->env_exact; i++) {
        char *dir = role_dir(np, attempt, ws[i].role);
        if (!dir)
            continue;
        env[n] = util_asprintf("%s=%s", ws[i].name, dir);
        free(dir);
        if (!env[n++])
            goto oom;
    }
    return env;
oom:
    apple_env_free(env);
    return NULL;
}

/* ---- compile ---- */

void apple_plan_free(void *plan) {
    struct apple_plan *ap = plan;
    if (!ap)
        return;
    free(ap->describe_json);
    free(ap->checked_profile);
    free(ap);
}

int apple_workload_ids(const void *plan, uint32_t *uid, uint32_t *gid) {
    const struct apple_plan *ap = plan;
    if (ap->dedicated_uid)
        return FY_E_UNSUPPORTED; /* a uid of the range, chosen per attempt at start */
    *uid = ap->host_uid;
    *gid = ap->host_gid;
    return 0;
}

const char *apple_describe(const void *plan) {
    const struct apple_plan *ap = plan;
    return ap ? ap->describe_json : NULL;
}

static int refuse(fy_error **reterr, uint32_t step, const char *loc, const char *msg) {
    return err_set(reterr, FY_E_UNSUPPORTED, step, 0, loc, "%s", msg);
}

/* Everything of the plan the apple backend cannot do as asked. */
static int check_refusals(const struct fy_plan *np, const fy_caps *c, fy_error **reterr) {
    for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++) {
        const char *why = NULL;
        if (np->control[ctl] == FY_CONTROL_STATE_ENFORCED && !apple_can_enforce(c, ctl, &why))
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL, "control %s: %s",
                           fy_control_name(ctl), why);
    }
    for (uint32_t l = 1; l <= FY_LIMIT_MAX_; l++) {
        if (apple_limit_how[l] == AH_UNLISTED)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                           "limit %u is unknown to the apple backend", l);
        if (apple_limit_how[l] == AH_REFUSED && np->limit[l] != FY_UNLIMITED)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0,
                           l == FY_LIMIT_DISK ? "$.resources.disk" : "$.resources.files",
                           "disk and file-count quotas are not enforced by the apple backend");
    }
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        if (apple_kind_how(e->kind) == AH_UNLISTED || apple_role_how(e->role) == AH_UNLISTED)
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                           "%s: plan entry kind %u / role %u unknown to the apple backend", e->target, e->kind,
                           e->role);
        for (uint32_t bit = 1; bit; bit <<= 1)
            if ((e->flags & bit) && apple_flag_how(bit) == AH_UNLISTED)
                return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                               "%s: plan entry flag 0x%x unknown to the apple backend", e->target, bit);
    }
    if (np->fake_root)
        return refuse(reterr, FY_STEP_USERNS, "$.process.user", "fake-root needs a user namespace; macOS has none");
    if (np->pty == FY_DEVICES_PRIVATE)
        return refuse(reterr, FY_STEP_DEV, "$.devices.pty", "macOS has no private pseudo-terminal instance");
    if (np->gpu != FY_DEVICES_DENY)
        return refuse(reterr, FY_STEP_DEV, "$.devices.gpu",
                      "GPU access needs IOKit user clients, which the apple backend never opens");
    if (np->usb != FY_DEVICES_DENY)
        return refuse(reterr, FY_STEP_DEV, "$.devices.usb",
                      "USB access needs IOKit user clients, which the apple backend never opens");
    for (size_t i = 0; i < np->nsecrets; i++)
        if (np->secrets[i].delivery != FY_SECRET_ENV && np->secrets[i].delivery != FY_SECRET_FILE)
            return refuse(reterr, FY_STEP_SECRET, "$.secrets",
                          "the apple backend delivers secrets as environment variables or files only");
    for (int s = 0; s < 3; s++)
        if (np->stdio[s].mode != FY_STDIO_NULL && np->stdio[s].mode != FY_STDIO_FD &&
            np->stdio[s].mode != FY_STDIO_PIPE)
            return refuse(reterr, FY_STEP_OUTPUT, NULL,
                          "the apple backend does not capture output yet: stdio modes null, fd and pipe only");
    if (np->fault_step || np->delay_stage || np->test_legacy_cgroups || np->test_copy_init || np->test_no_clone_into)
        return refuse(reterr, FY_STEP_PREPARE, NULL,
                      "fault injection, delays and the Linux test switches are not implemented by the apple backend");
    return 0;
}

static char *describe(const struct apple_plan *ap) {
    const struct fy_plan *np = ap->np;
    const char *net = np->net_mode == FY_NET_DENY ? "denied" : np->net_mode == FY_NET_ALLOW ? "host"
                                                                                           : "loopback-destinations";
    json_t *iso = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b}",
        "mechanism", "seatbelt",
        "profile", "deny-default SBPL from the neutral plan, applied with sandbox_init before exec",
        "identity", ap->dedicated_uid ? "dedicated-uid" : "caller-uid",
        "network", net,
        "namespaces", "unavailable",
        "process-tree", ap->dedicated_uid ? "process group, then every process of the uid"
                                          : "process group (best effort: setsid escapes it)",
        "darwin-verified", 0);
    json_t *lim = json_object();
    if (iso && ap->dedicated_uid)
        json_object_set_new(iso, "uid", json_integer(ap->uid));
    static const char *const rl_names[] = {
        [FY_LIMIT_NOFILE] = "rlimit-nofile", [FY_LIMIT_FSIZE] = "rlimit-fsize",
        [FY_LIMIT_STACK] = "rlimit-stack", [FY_LIMIT_CORE] = "rlimit-core",
    };
    for (size_t i = 0; lim && i < ap->nrlimits; i++) {
        uint64_t v = ap->rlimits[i].value;
        json_object_set_new(lim, rl_names[ap->rlimits[i].limit],
                            v == FY_UNLIMITED ? json_string("the host's") : json_integer((json_int_t)v));
    }
    if (lim) {
        json_object_set_new(lim, "memory", json_string("unenforced"));
        json_object_set_new(lim, "scratch-sizes", json_string("unenforced (plain directories)"));
    }
    json_t *root = iso && lim ? json_pack("{s:o, s:o}", "isolation", iso, "limits", lim) : NULL;
    if (!root) {
        json_decref(iso);
        json_decref(lim);
        return NULL;
    }
    char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    return s;
}

int apple_compile(const struct fy_plan *np, const fy_caps *c, void **ret, fy_error **reterr) {
    int r = check_refusals(np, c, reterr);
    if (r < 0)
        return r;
    struct apple_plan *ap = calloc(1, sizeof(*ap));
    if (!ap)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    ap->np = np;
    ap->host_uid = c->host.uid;
    ap->host_gid = c->host.gid;
    if (np->control[FY_CONTROL_UID_RANGE] == FY_CONTROL_STATE_ENFORCED) {
        /* macOS accounts are below 1000 (users from 501): a dedicated uid
         * is never one of them, since every process of it is killed. */
        if (np->id_count < 1 || np->id_first < APPLE_MIN_DEDICATED_UID) {
            apple_plan_free(ap);
            return refuse(reterr, FY_STEP_UID_MAP, "$.process.id_range",
                          "a dedicated uid needs a non-empty id range starting at 1000 or above");
        }
        ap->dedicated_uid = true;
        ap->uid = ap->gid = np->id_first;
    }
    static const uint32_t rl[] = {FY_LIMIT_NOFILE, FY_LIMIT_FSIZE, FY_LIMIT_STACK, FY_LIMIT_CORE};
    for (size_t i = 0; i < FY_ARRAY_SIZE(rl); i++) {
        uint64_t v = np->limit[rl[i]];
        if (rl[i] == FY_LIMIT_NOFILE && v > APPLE_OPEN_MAX)
            v = APPLE_OPEN_MAX;
        ap->rlimits[ap->nrlimits++] = (struct apple_rlimit){rl[i], v};
    }
    /* The profile is made per attempt (it names the attempt's directory);
     * made once here with the longest placeholder, so that whatever the
     * plan holds that SBPL cannot express is refused at prepare. */
    if ((r = apple_profile(ap, APPLE_ATTEMPT_PLACEHOLDER, &ap->checked_profile, reterr)) < 0) {
        apple_plan_free(ap);
        return r;
    }
    if (!(ap->describe_json = describe(ap))) {
        apple_plan_free(ap);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    }
    *ret = ap;
    return 0;
}
