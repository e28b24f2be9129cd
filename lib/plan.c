/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy + selection -> the platform-neutral plan (plan.h): the default
 * layout (/etc, /dev, /proc, scratch, HOME, the workspace under /work,
 * toolchains, binds), the identity, the environment, limits, network,
 * devices and secrets. Host facts the layout depends on (which runtime
 * paths exist and what they are, the public /etc databases) are read here,
 * at fy_prepare (the /etc databases and listing through hostfact.c, which
 * keeps them between prepares while they are unchanged). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci/oci.h"
#include "jobnet.h"
#include "plan.h"
#include "caps.h"
#include "hostfact.h"
#include "prepared.h"

/* ---- the plan's arena ---- */

static void *keep(struct fy_plan *pl, void *p) { return arena_keep(&pl->arena, p); }
static const char *str(struct fy_plan *pl, const char *s) { return arena_strdup(&pl->arena, s); }
#define fmt(pl, ...) ((const char *)arena_printf(&(pl)->arena, __VA_ARGS__))

void plan_free(struct fy_plan *pl) {
    if (!pl)
        return;
    arena_free(&pl->arena);
    free(pl->entries);
    free(pl);
}

const struct plan_entry *plan_find_role(const struct fy_plan *plan, uint32_t role) {
    for (size_t i = 0; i < plan->nentries; i++)
        if (plan->entries[i].role == role && plan->entries[i].kind == PE_HOST)
            return &plan->entries[i];
    return NULL;
}

/* ---- building the layout ---- */

struct builder {
    struct fy_plan *pl;
    size_t cap;
    bool oom;
    const char **skipped;
    size_t nskipped, capskipped;
};

static struct plan_entry *add(struct builder *b, uint32_t kind, uint32_t role, uint32_t flags, const char *target) {
    struct fy_plan *pl = b->pl;
    if (pl->nentries == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct plan_entry *n = realloc(pl->entries, cap * sizeof(*n));
        if (!n) {
            b->oom = true;
            return NULL;
        }
        pl->entries = n;
        b->cap = cap;
    }
    struct plan_entry *e = &pl->entries[pl->nentries++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->role = role;
    e->flags = flags;
    if (!(e->target = str(pl, target)))
        b->oom = true;
    return e;
}

static void add_host(struct builder *b, uint32_t role, const char *host, const char *target, uint32_t flags) {
    struct plan_entry *e = add(b, PE_HOST, role, flags, target);
    if (e && !(e->host = str(b->pl, host)))
        b->oom = true;
}

static void add_file(struct builder *b, const char *target, const char *content, uint32_t mode) {
    struct plan_entry *e = add(b, PE_FILE, PR_ETC, PLAN_RO, target);
    if (!e)
        return;
    e->mode = mode;
    if (!(e->content = str(b->pl, content)))
        b->oom = true;
}

static void add_symlink(struct builder *b, uint32_t role, const char *target, const char *link) {
    struct plan_entry *e = add(b, PE_SYMLINK, role, 0, target);
    if (e && !(e->content = str(b->pl, link)))
        b->oom = true;
}

static void add_tmpfs(struct builder *b, uint32_t role, const char *target, uint32_t mode, uint64_t size,
                      uint32_t inodes, uint32_t flags) {
    struct plan_entry *e = add(b, PE_TMPFS, role, flags, target);
    if (!e)
        return;
    e->mode = mode;
    e->size = size;
    e->inodes = inodes;
}

static void add_skipped(struct builder *b, const char *path) {
    if (b->nskipped == b->capskipped) {
        size_t cap = b->capskipped ? b->capskipped * 2 : 8;
        const char **n = realloc(b->skipped, cap * sizeof(*n));
        if (!n) {
            b->oom = true;
            return;
        }
        b->skipped = n;
        b->capskipped = cap;
    }
    if (!(b->skipped[b->nskipped++] = str(b->pl, path)))
        b->oom = true;
}

/* One host path seen read-only at the same place: a symlink (Debian's
 * merged /usr) is recreated as a symlink; a directory or a file is the
 * host's; a missing one is listed as skipped (when asked) and left out. */
/* Whether path lies below one of the sandbox's private scratch mounts
 * (/tmp, HOME, /work/tmp): a runtime path there is mounted after them, as
 * a bind there is; mounted before, the tmpfs covered it (it was missing,
 * and not listed as skipped). */
static bool below_scratch(const char *path, const char *home) {
    const char *const scratch[] = {"/tmp", home, "/work/tmp"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(scratch); i++) {
        size_t n = strlen(scratch[i]);
        if (strncmp(path, scratch[i], n) == 0 && path[n] == '/')
            return true;
    }
    return false;
}

static int add_host_path(struct builder *b, uint32_t role, const char *path, bool list_missing, fy_error **reterr) {
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (list_missing)
            add_skipped(b, path);
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n < 0) {
            int e = errno;
            return err_set(reterr, err_from_errno(e), FY_STEP_PREPARE, e, NULL, "readlink %s: %s", path,
                           strerror(e));
        }
        target[n] = '\0';
        add_symlink(b, role, path, target);
    } else if (S_ISDIR(st.st_mode)) {
        add_host(b, role, path, path, PLAN_RO);
    } else if (S_ISREG(st.st_mode)) {
        add_host(b, role, path, path, PLAN_RO | PLAN_FILE);
    } else {
        return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.filesystem.runtime_paths",
                       "runtime path %s is neither a directory, a file nor a symlink", path);
    }
    return 0;
}

/* Public, static host databases libc reads: service and protocol names
 * (getservbyname, getaddrinfo with a service name, getprotobyname). Copied
 * into the sandbox's /etc as of fy_prepare. */
static const char *const etc_public[] = {"/etc/services", "/etc/protocols"};
#define ETC_PUBLIC_MAX (1u << 20)

/* Where a workload may reach a network: the CA certificates its TLS clients
 * verify servers with (Debian and derivatives, Fedora and RHEL, Arch,
 * Alpine and the BSD-style single bundle). Certificates only: never
 * /etc/ssl/private or any other part of /etc/ssl and /etc/pki. */
static const char *const etc_trust[] = {
    "/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/pki/tls/certs", "/etc/pki/tls/cert.pem",
    "/etc/pki/ca-trust/extracted", "/etc/ca-certificates/extracted",
};

/* Toolchain configuration that files of the runtime under /usr link into
 * /etc: Debian's JDK keeps java.security, jvm.cfg and the rest in
 * /etc/java-N-openjdk and links its conf/ there (without them no JVM
 * starts: "Error loading java.security file"), Fedora's in /etc/java;
 * Maven its settings.xml, Python its sitecustomize, glibc its locale
 * aliases; Debian's Bazel client reads /etc/bazel/bazelrc for the install
 * base its package put under /usr/share/bazel (without it: "Failed to open
 * '/proc/self/exe' as a zip file"). Public package configuration, read-only, present where /usr is a
 * runtime path; nothing else of the host's /etc (OpenSSL runs without its
 * openssl.cnf; /etc/ssl is only ever its certificates: etc_trust). */
static const char *const etc_toolchain[] = {"/etc/java", "/etc/maven", "/etc/locale.alias", "/etc/bazel"};
/* Entries of /etc by prefix and suffix (versioned names). */
static const struct {
    const char *prefix, *suffix;
} etc_toolchain_versioned[] = {{"java-", "-openjdk"}, {"python3", ""}};
#define ETC_TOOLCHAIN_MAX 16

/* An /etc entry of a versioned toolchain (etc_toolchain_versioned). */
static bool etc_versioned_name(const char *name) {
    size_t len = strlen(name);
    for (size_t i = 0; i < FY_ARRAY_SIZE(etc_toolchain_versioned); i++) {
        size_t lp = strlen(etc_toolchain_versioned[i].prefix), ls = strlen(etc_toolchain_versioned[i].suffix);
        if (len >= lp + ls && len > lp && strncmp(name, etc_toolchain_versioned[i].prefix, lp) == 0 &&
            strcmp(name + len - ls, etc_toolchain_versioned[i].suffix) == 0)
            return true;
    }
    return false;
}

/* git refuses a repository owned by someone else ("detected dubious
 * ownership"), and in a sandbox the source tree and the binds belong to the
 * host's user, never the workload's: the sandbox's own system-wide git
 * configuration marks exactly those directories safe. (What the check
 * guards against, a stranger's repository configuration running commands,
 * would run them inside this sandbox, as the workload, which may run
 * anything there anyway.) NULL when there is nothing to mark, or when the
 * policy puts something of its own at /etc or /etc/gitconfig. */
static char *git_safe_directories(const fy_policy *p) {
    static const char *const own[] = {"/etc", "/etc/gitconfig"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(own); i++) {
        VEC_EACH(&p->binds, struct pol_bind, bd) if (strcmp(bd->target, own[i]) == 0) return NULL;
        VEC_EACH(&p->runtime_paths, char *, rp) if (strcmp(*rp, own[i]) == 0) return NULL;
    }
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_append(&sb, "# forgeyard: the workspace belongs to the host's user, not the workload's\n[safe]\n");
    size_t n = 0;
    const char *dirs[1 + POLICY_MAX_BINDS];
    if (p->source)
        dirs[n++] = "/work/source";
    VEC_EACH(&p->binds, struct pol_bind, bd) if (n < FY_ARRAY_SIZE(dirs)) dirs[n++] = bd->target;
    for (size_t i = 0; i < n; i++) {
        bool plain = true;
        for (const char *c = dirs[i]; *c; c++)
            plain = plain && (unsigned char)*c >= 0x20 && *c != 0x7f && *c != '"' && *c != '\\';
        if (plain) /* (anything else is left unmarked, not escaped); its .git: git clone of it */
            strbuf_printf(&sb, "\tdirectory = \"%s\"\n\tdirectory = \"%s%s.git\"\n", dirs[i], dirs[i],
                          strcmp(dirs[i], "/") ? "/" : "");
    }
    if (!n) {
        strbuf_free(&sb);
        return NULL;
    }
    return strbuf_steal(&sb);
}

/* The host-revealing and tunable parts of the kernel's process view. */
static const char *const proc_hidden[] = {
    "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug", "/proc/kallsyms", "/proc/kmsg", "/proc/config.gz", "/proc/sysrq-trigger",
    "/proc/acpi", "/proc/asound", "/proc/scsi", "/proc/driver",
    /* The host's disks, swap devices, interrupt and softirq counts (a
     * keystroke and network timing channel: NET_RX counts the machine's
     * packets, whatever the sandbox's network) and kernel command line
     * (cloud hosts put tokens there): none of the workload's business.
     * (/proc/stat's intr and softirq lines and /proc/net/softnet_stat
     * still count them: stat is read by ps, top and every runtime's CPU
     * count, and softnet_stat lives under each process's own
     * /proc/PID/net, which no mount here covers; forgeyard-sandbox(7).) */
    "/proc/partitions", "/proc/diskstats", "/proc/swaps", "/proc/interrupts", "/proc/softirqs", "/proc/cmdline",
};
static const char *const proc_readonly[] = {"/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs"};
/* The harmless device nodes every sandbox has. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom"};

static const char *passwd_text(struct fy_plan *pl) {
    if (pl->fake_root)
        return fmt(pl, "root:x:0:0:root:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                   pl->home);
    return fmt(pl,
               "root:x:0:0:root:/root:/usr/sbin/nologin\n"
               "%s:x:%u:%u:%s:%s:/bin/sh\n"
               "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
               pl->user, pl->uid, pl->gid, pl->user, pl->home);
}

static const char *group_text(struct fy_plan *pl) {
    if (pl->fake_root)
        return fmt(pl, "root:x:0:\nnogroup:x:65534:\n");
    return fmt(pl, "root:x:0:\n%s:x:%u:\nnogroup:x:65534:\n", pl->user, pl->gid);
}

static int build_layout(struct builder *b, const fy_policy *p, fy_error **reterr) {
    struct fy_plan *pl = b->pl;
    /* /etc: synthetic identity and name-service files, the host's public
     * databases, its CA certificates where the network is not denied, and
     * the approved runtime paths over it. */
    const char *hostname = p->hostname ? p->hostname : POLICY_DEFAULT_HOSTNAME;
#ifndef _WIN32
    /* Without a UTS namespace the workload's host name is the host's:
     * /etc/hostname and /etc/hosts say so too (they said the policy's
     * while uname said the host's). */
    char host_name[256];
    if (p->control[FY_CONTROL_UTSNS] == FY_MODE_OFF && gethostname(host_name, sizeof(host_name)) == 0) {
        host_name[sizeof(host_name) - 1] = '\0';
        hostname = host_name;
    }
#endif
    /* A container image brings its own /etc and runtime: only the host
     * name, hosts and (dns: host) the resolver come from the plan. */
    bool image = pl->nimage_layers > 0;
    if (!image) {
        add_file(b, "/etc/passwd", passwd_text(pl), 0644);
        add_file(b, "/etc/group", group_text(pl), 0644);
    }
    add_file(b, "/etc/hosts", fmt(pl, "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost\n%s%s", hostname,
                                  pl->net_hosts ? pl->net_hosts : "", pl->job_hosts ? pl->job_hosts : ""), 0644);
    add_file(b, "/etc/hostname", fmt(pl, "%s\n", hostname), 0644); /* hostname(5): one line */
    if (!image)
        add_file(b, "/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", 0644);
    char *gitconfig = image ? NULL : git_safe_directories(p);
    if (gitconfig) {
        add_file(b, "/etc/gitconfig", gitconfig, 0644);
        free(gitconfig);
    }
    if (p->dns == FY_DNS_HOST)
        add_host(b, PR_RESOLV, "/etc/resolv.conf", "/etc/resolv.conf", PLAN_RO | PLAN_FILE | PLAN_OPTIONAL);
    else if (p->net_mode == FY_NET_RESTRICTED)
        /* The allowed names are in /etc/hosts, resolved at fy_prepare; the
         * only resolver is the attempt's stub (Linux backend), which
         * answers those names and refuses every other (DNS cannot carry
         * data out through other names). A backend without the stub
         * leaves the address unanswered. */
        add_file(b, "/etc/resolv.conf",
                 "# forgeyard: network restricted; the allowed names are in /etc/hosts; the stub\n"
                 "# resolver answers only them\n"
                 "nameserver 127.0.0.53\noptions attempts:1 timeout:1\n", 0644);
    else if (p->net_mode == FY_NET_FETCH_ONLY)
        /* No resolver, no names: the proxy (HTTP_PROXY) takes host names. */
        add_file(b, "/etc/resolv.conf",
                 "# forgeyard: network fetch-only; names go to the proxy (HTTP_PROXY); the stub\n"
                 "# resolver answers only the allowed names\n"
                 "nameserver 127.0.0.53\noptions attempts:1 timeout:1\n", 0644);
    for (size_t i = 0; !image && i < FY_ARRAY_SIZE(etc_public); i++) {
        char *text = hostfact_text(etc_public[i], ETC_PUBLIC_MAX);
        if (text)
            add_file(b, etc_public[i], text, 0644);
        free(text);
    }
    int r;
    for (size_t i = 0; !image && p->net_mode != FY_NET_DENY && i < FY_ARRAY_SIZE(etc_trust); i++) {
        struct stat st;
        if (lstat(etc_trust[i], &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
            (r = add_host_path(b, PR_TRUST, etc_trust[i], false, reterr)) < 0)
            return r;
    }
    bool usr = false;
    VEC_EACH(&p->runtime_paths, char *, it) {
        if (image)
            break;
        usr = usr || strcmp(*it, "/usr") == 0;
        if (!below_scratch(*it, pl->home) && (r = add_host_path(b, PR_RUNTIME, *it, true, reterr)) < 0)
            return r;
    }
    if (usr) {
        struct stat st;
        for (size_t i = 0; i < FY_ARRAY_SIZE(etc_toolchain); i++)
            if (lstat(etc_toolchain[i], &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) &&
                (r = add_host_path(b, PR_RUNTIME, etc_toolchain[i], false, reterr)) < 0)
                return r;
        /* (sorted: the plan, and so the contract id, must not follow
         * readdir's order) */
        char names[ETC_TOOLCHAIN_MAX][HOSTFACT_NAME_MAX];
        size_t n = hostfact_names("/etc", etc_versioned_name, names, ETC_TOOLCHAIN_MAX);
        for (size_t i = 0; i < n; i++) {
            char path[HOSTFACT_NAME_MAX + 8];
            snprintf(path, sizeof(path), "/etc/%s", names[i]);
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
                (r = add_host_path(b, PR_RUNTIME, path, false, reterr)) < 0)
                return r;
        }
    }

    /* /dev: the harmless nodes, the standard stream links, shared memory,
     * pseudo-terminals of the sandbox's own on request, leased devices. */
    add_tmpfs(b, PR_DEV, "/dev", 0755, 64 << 10, 256, PLAN_NOEXEC);
    for (size_t i = 0; i < FY_ARRAY_SIZE(dev_nodes); i++) {
        char path[32];
        snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
        add_host(b, PR_DEV, path, path, PLAN_DEVICE | PLAN_FILE);
    }
    add_symlink(b, PR_DEV, "/dev/fd", "/proc/self/fd");
    add_symlink(b, PR_DEV, "/dev/stdin", "/proc/self/fd/0");
    add_symlink(b, PR_DEV, "/dev/stdout", "/proc/self/fd/1");
    add_symlink(b, PR_DEV, "/dev/stderr", "/proc/self/fd/2");
    add_tmpfs(b, PR_SCRATCH, "/dev/shm", 01777, p->limit[FY_LIMIT_SHM_SIZE], 0, 0);
    if (p->pty == FY_DEVICES_PRIVATE) {
        add(b, PE_PTYS, PR_DEV, 0, "/dev/pts");
        add_symlink(b, PR_DEV, "/dev/ptmx", "pts/ptmx");
    }
    VEC_EACH(&p->devices, struct pol_device, d)
        add_host(b, PR_DEVICE, d->path, d->path, PLAN_DEVICE | PLAN_FILE | (d->writable ? 0 : PLAN_RO));

    /* /proc: the sandbox's own, host-revealing entries hidden. */
    add(b, PE_PROC, PR_PROC, 0, "/proc");
    for (size_t i = 0; i < FY_ARRAY_SIZE(proc_hidden); i++)
        add(b, PE_PROC_HIDE, PR_PROC, PLAN_OPTIONAL, proc_hidden[i]);
    for (size_t i = 0; i < FY_ARRAY_SIZE(proc_readonly); i++)
        add(b, PE_PROC_RO, PR_PROC, PLAN_OPTIONAL, proc_readonly[i]);

    /* Private scratch and HOME. */
    add_tmpfs(b, PR_SCRATCH, "/tmp", 01777, p->limit[FY_LIMIT_TMP_SIZE], 0, 0);
    add_tmpfs(b, PR_HOME, pl->home, 0700, p->limit[FY_LIMIT_HOME_SIZE], 0, PLAN_OWNED);
    add_tmpfs(b, PR_SCRATCH, "/work/tmp", 0755, p->limit[FY_LIMIT_WORK_TMP_SIZE], 0, PLAN_OWNED);
    VEC_EACH(&p->runtime_paths, char *, it)
        if (!image && below_scratch(*it, pl->home) && (r = add_host_path(b, PR_RUNTIME, *it, true, reterr)) < 0)
            return r;

    /* The workspace: host directories, never reached through a symlink,
     * or private scratch standing in for them. */
    if (p->source)
        add_host(b, PR_SOURCE, p->source, "/work/source",
                 PLAN_WORKSPACE | PLAN_DIR | (p->source_writable ? 0 : PLAN_RO));
    if (p->build)
        add_host(b, PR_BUILD, p->build, "/work/build", PLAN_WORKSPACE | PLAN_DIR);
    else
        add_tmpfs(b, PR_BUILD, "/work/build", 0755, p->limit[FY_LIMIT_WORK_TMP_SIZE], 0, PLAN_OWNED);
    if (p->output)
        add_host(b, PR_OUTPUT, p->output, "/work/output", PLAN_WORKSPACE | PLAN_DIR);
    else
        add_tmpfs(b, PR_OUTPUT, "/work/output", 0755, p->limit[FY_LIMIT_WORK_TMP_SIZE], 0, PLAN_OWNED);
    VEC_EACH(&p->toolchains, struct pol_toolchain, t) {
        const char *dst = fmt(pl, "/toolchains/%s", t->name);
        if (!dst)
            return FY_E_NOMEM;
        add_host(b, PR_TOOLCHAIN, t->host, dst, PLAN_WORKSPACE | PLAN_DIR | PLAN_RO);
    }
    VEC_EACH(&p->binds, struct pol_bind, bd)
        add_host(b, PR_BIND, bd->host, bd->target,
                 PLAN_WORKSPACE | ((bd->flags & FY_BIND_WRITABLE) ? 0 : PLAN_RO) |
                     ((bd->flags & FY_BIND_OPTIONAL) ? PLAN_OPTIONAL : 0));
    return b->oom ? FY_E_NOMEM : 0;
}

/* The environment: the policy's variables and the allowed host ones (as
 * resolved into pr->env, sorted), then defaults for what they left unset. */
/* Whether the caller set name (a profile's default does not count: an
 * image's own value wins over it, as an image's Env is its defaults). */
static bool env_has(const fy_prepared *pr, const char *name, size_t len) {
    VEC_EACH(&pr->env, struct pol_env, e)
        if (!e->profile_default && strlen(e->name) == len && strncmp(e->name, name, len) == 0)
            return true;
    return false;
}

/* Whether the image's environment declares name. */
static bool img_env_has(char *const *img_env, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; img_env && img_env[i]; i++)
        if (strncmp(img_env[i], name, n) == 0 && img_env[i][n] == '=')
            return true;
    return false;
}

/* A job member's NO_PROXY: "NAME,ADDR,..." of every member, from the
 * job's hosts lines ("ADDR\tNAME\n"); kept by the plan. */
static char *job_no_proxy(struct fy_plan *pl) {
    size_t n = strlen(pl->job_hosts);
    char *out = keep(pl, calloc(1, n + 1)), *w = out;
    if (!out)
        return NULL;
    for (const char *l = pl->job_hosts; *l;) {
        const char *tab = strchr(l, '\t'), *nl = strchr(l, '\n');
        if (!nl)
            nl = l + strlen(l);
        /* (Each name once, with its IPv4 line; an IPv6 line adds its
         * address alone.) */
        if (tab && tab < nl && memchr(l, ':', (size_t)(tab - l)))
            w += sprintf(w, "%s%.*s", w == out ? "" : ",", (int)(tab - l), l);
        else if (tab && tab < nl)
            w += sprintf(w, "%s%.*s,%.*s", w == out ? "" : ",", (int)(nl - tab - 1), tab + 1, (int)(tab - l), l);
        l = *nl ? nl + 1 : nl;
    }
    return out;
}

/* A job member's destination named as a member is: the member's own
 * /etc/hosts gives that name the member's job address, which it reaches
 * on the job link, while the allowlist would hold what the host's
 * resolver says the name is. Refused, saying so. */
static int check_member_destinations(const struct fy_plan *pl, fy_error **reterr) {
    for (size_t i = 0; pl->job_hosts && i < pl->ndests; i++) {
        const char *host = pl->dests[i].host;
        size_t hn = strlen(host);
        for (const char *l = pl->job_hosts; *l;) {
            const char *tab = strchr(l, '\t'), *nl = strchr(l, '\n');
            if (!nl)
                nl = l + strlen(l);
            if (tab && tab < nl && (size_t)(nl - tab - 1) == hn && strncasecmp(tab + 1, host, hn) == 0) {
                char loc[64];
                snprintf(loc, sizeof(loc), "$.network.destinations[%zu].host", i);
                return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, loc,
                               "destination \"%s\" is the name of a member of this job network, which a member "
                               "reaches on its job link (network.job.ports), never as a destination", host);
            }
            l = *nl ? nl + 1 : nl;
        }
    }
    return 0;
}

/* The bound on an environment an image's Env adds to (forgeyard-policy(5)
 * bounds the policy's own to 1 MiB): the kernel refuses an exec past its
 * ARG_MAX (2 MiB with an 8 MiB stack, argv, the strings and their
 * pointers all counted) or with one string longer than MAX_ARG_STRLEN (128
 * KiB), and an image must never end its attempts that way (an
 * infrastructure failure, retried elsewhere for ever). */
#define IMAGE_ENV_MAX_BYTES (1u << 20)
#define IMAGE_ENV_MAX_VAR (128u * 1024u - 1u)
#define IMAGE_ENV_MAX_COUNT 4096u

/* img_env: the image's declared environment ("K=V"; NULL: none), under
 * the policy's: a variable the policy sets or allows wins. What the image
 * adds is bounded (FY_E_RANGE, step image). */
static int build_env(struct fy_plan *pl, const fy_prepared *pr, char *const *img_env, fy_error **reterr) {
    const char *const defaults[][2] = {
        {"HOME", pl->home}, {"TMPDIR", "/tmp"}, {"USER", pl->user}, {"LOGNAME", pl->user},
    };
    size_t nimg = 0;
    while (img_env && img_env[nimg])
        nimg++;
    /* (A job member under fetch-only: also NO_PROXY and no_proxy, its
     * peers' names and addresses, which it reaches directly on the job's
     * link and the proxy would refuse.) */
    static const char *const proxy_env[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
                                            "NO_PROXY",   "no_proxy"};
    const char **envp = calloc(pr->env.n + nimg + FY_ARRAY_SIZE(defaults) + FY_ARRAY_SIZE(proxy_env) + 1,
                               sizeof(char *));
    if (!keep(pl, (void *)envp))
        return FY_E_NOMEM;
    /* fetch-only: the network's declared environment, which nothing else
     * overrides (the policy's and the image's same names are left out). */
    bool fetch = pl->net_mode == FY_NET_FETCH_ONLY;
    size_t nproxy = fetch ? (pl->job_hosts ? 6 : 4) : 0;
    char *no_proxy = nproxy == 6 ? job_no_proxy(pl) : NULL;
    if (nproxy == 6 && !no_proxy)
        return FY_E_NOMEM;
    for (size_t i = 0; i < nproxy; i++)
        if (!(envp[pl->nenv++] = fmt(pl, "%s=%s", proxy_env[i], i < 4 ? NET_PROXY_URL : no_proxy)))
            return FY_E_NOMEM;
    VEC_EACH(&pr->env, struct pol_env, e) {
        bool taken = false;
        for (size_t i = 0; i < nproxy; i++)
            taken = taken || strcmp(e->name, proxy_env[i]) == 0;
        if (taken || (e->profile_default && img_env_has(img_env, e->name)))
            continue;
        if (!(envp[pl->nenv++] = fmt(pl, "%s=%s", e->name, e->value)))
            return FY_E_NOMEM;
        if (strcmp(e->name, "PATH") == 0)
            pl->path_search = e->value;
    }
    size_t img_added = 0, img_bytes = 0;
    if (nimg > IMAGE_ENV_MAX_COUNT) /* (before the quadratic look for a name again, below) */
        return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, "$.filesystem.image",
                       "image %s: its Env has more than %u variables", pl->image_digest, IMAGE_ENV_MAX_COUNT);
    for (size_t i = 0; i < nimg; i++) {
        size_t klen = strcspn(img_env[i], "=");
        if (env_has(pr, img_env[i], klen))
            continue;
        /* A name the image lists again: its last value, as a later ENV
         * overrides an earlier one (both went through: getenv read the
         * first, the command's PATH search the last). */
        bool again = false;
        for (size_t j = i + 1; j < nimg && !again; j++)
            again = strncmp(img_env[j], img_env[i], klen + 1) == 0;
        if (again)
            continue;
        size_t vlen = strlen(img_env[i]);
        if (vlen > IMAGE_ENV_MAX_VAR)
            return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, "$.filesystem.image",
                           "image %s: its Env[%zu] is %zu bytes long, more than %u (the workload could not be "
                           "executed with it)",
                           pl->image_digest, i, vlen, IMAGE_ENV_MAX_VAR);
        img_bytes += vlen + 1;
        if (++img_added > IMAGE_ENV_MAX_COUNT)
            return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, "$.filesystem.image",
                           "image %s: its Env has more than %u variables", pl->image_digest, IMAGE_ENV_MAX_COUNT);
        bool taken = false;
        for (size_t k = 0; k < nproxy; k++)
            taken = taken || (strlen(proxy_env[k]) == klen && strncmp(img_env[i], proxy_env[k], klen) == 0);
        if (taken)
            continue;
        if (!(envp[pl->nenv++] = str(pl, img_env[i])))
            return FY_E_NOMEM;
        if (klen == 4 && strncmp(img_env[i], "PATH", 4) == 0)
            pl->path_search = envp[pl->nenv - 1] + 5;
    }
    for (size_t i = 0; !pr->policy->env_exact && i < FY_ARRAY_SIZE(defaults); i++) {
        bool set = false;
        for (size_t k = 0; k < pl->nenv; k++)
            set = set || (strncmp(envp[k], defaults[i][0], strlen(defaults[i][0])) == 0 &&
                          envp[k][strlen(defaults[i][0])] == '=');
        if (!set && !(envp[pl->nenv++] = fmt(pl, "%s=%s", defaults[i][0], defaults[i][1])))
            return FY_E_NOMEM;
    }
    if (img_added) {
        size_t total = 0;
        for (size_t k = 0; k < pl->nenv; k++)
            total += strlen(envp[k]) + 1;
        if (total > IMAGE_ENV_MAX_BYTES)
            return err_set(reterr, FY_E_RANGE, FY_STEP_IMAGE, 0, "$.filesystem.image",
                           "image %s: its Env (%zu variables, %zu bytes) makes the workload's environment %zu "
                           "bytes, more than %u",
                           pl->image_digest, img_added, img_bytes, total, IMAGE_ENV_MAX_BYTES);
    }
    if (!pl->path_search)
        pl->path_search = "/usr/local/bin:/usr/bin:/bin";
    pl->envp = envp;
    pl->env_exact = pr->policy->env_exact;
    return 0;
}

/* The policy's container image, verified and unpacked (lib/oci/), merged
 * under the policy: its layers and digest; its Entrypoint + Cmd and
 * WorkingDir when the command is empty; a root User is the sandbox's mapped
 * root (fake root), never the host's; its Env is merged in build_env. */
static int build_image(struct fy_plan *pl, const fy_prepared *pr, struct oci_image **ret, fy_error **reterr) {
    struct oci_image *img = NULL;
    /* As root the sandbox maps the whole id range from 0 (the container
     * level): the image's owners are shifted into it. */
    struct oci_opts o = {.hold = true};
    if (pr->caps->host.is_root) {
        o.id_first = pr->policy->id_first;
        o.id_count = pr->policy->id_count;
    }
    int r = oci_unpack(pr->policy->image, &o, &img, reterr);
    if (r < 0)
        return r;
    *ret = img;
    const char **layers = keep(pl, calloc(img->nlayers + 1, sizeof(char *)));
    if (!layers || !(pl->image_digest = str(pl, img->manifest_digest)))
        return FY_E_NOMEM;
    /* (the layers below an opaque root are hidden: not mounted at all; a
     * layer the image holds twice, one directory in the cache, is mounted
     * once, at its topmost place: overlayfs refuses a directory twice, and
     * the lower copy shows nothing the upper does not) */
    size_t first = img->first_visible < img->nlayers ? img->first_visible : 0, nl = 0;
    for (size_t i = first; i < img->nlayers; i++) {
        bool again = false;
        for (size_t j = i + 1; j < img->nlayers && !again; j++)
            again = strcmp(img->layer_dirs[i], img->layer_dirs[j]) == 0;
        if (!again && !(layers[nl++] = str(pl, img->layer_dirs[i])))
            return FY_E_NOMEM;
    }
    pl->image_layers = layers;
    pl->nimage_layers = nl;
    pl->image_nlayers = img->nlayers;
    if (img->nlayers == 0)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, img->manifest_digest, "image %s has no layers",
                       img->manifest_digest);
    const char *u = img->config.user;
    if (u && (!strcmp(u, "0") || !strcmp(u, "root") || !strncmp(u, "0:", 2) || !strncmp(u, "root:", 5))) {
        pl->fake_root = true;
        pl->uid = pl->gid = 0;
        pl->user = "root";
    }
    if (pr->argc == 0) {
        size_t n = 0, k = 0;
        for (char **v = img->config.entrypoint; v && *v; v++)
            n++;
        for (char **v = img->config.cmd; v && *v; v++)
            n++;
        if (n == 0)
            return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL,
                           "no command, and image %s has no Entrypoint or Cmd", img->manifest_digest);
        char **argv = keep(pl, calloc(n + 1, sizeof(char *)));
        if (!argv)
            return FY_E_NOMEM;
        char **parts[] = {img->config.entrypoint, img->config.cmd};
        for (size_t i = 0; i < 2; i++)
            for (char **v = parts[i]; v && *v; v++)
                if (!(argv[k++] = (char *)str(pl, *v)))
                    return FY_E_NOMEM;
        pl->argv = argv;
        pl->argc = n;
        if (img->config.workdir && !(pl->workdir = str(pl, img->config.workdir)))
            return FY_E_NOMEM;
    }
    return 0;
}

int plan_build(fy_prepared *pr, fy_error **reterr) {
    const fy_policy *p = pr->policy;
    struct fy_plan *pl = calloc(1, sizeof(*pl));
    if (!pl)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    struct builder b = {.pl = pl};
    struct oci_image *img = NULL;
    int r = 0;
    pl->backend = pr->sel.backend;
    pl->level = pr->sel.level;
    memcpy(pl->control, pr->sel.control, sizeof(pl->control));
    for (uint32_t c = 0; c <= FY_CONTROL_MAX_; c++)
        pl->control_mode[c] = c ? policy_control_mode(p, c) : 0;
    pl->impure = pr->impure;
    pl->argv = pr->argv;
    pl->argc = pr->argc;
    /* Identity. */
    pl->fake_root = p->user == FY_USER_FAKE_ROOT;
    pl->uid = pl->gid = pl->fake_root ? 0 : 1000;
    pl->user = pl->fake_root ? "root" : "forgeyard";
    pl->home = "/home/forgeyard";
    pl->id_first = p->id_first;
    pl->id_count = p->id_count;
    pl->hostname = p->hostname ? str(pl, p->hostname) : NULL;
    pl->workdir = str(pl, p->workdir ? p->workdir : "/work/build");
    if (p->image && (r = build_image(pl, pr, &img, reterr)) < 0) {
        if (r == FY_E_NOMEM)
            goto oom;
        goto fail;
    }
    /* The workspace's host directories. */
    pl->source = p->source ? str(pl, p->source) : NULL;
    pl->source_writable = p->source_writable;
    pl->build = p->build ? str(pl, p->build) : NULL;
    if (p->build && p->build_lower && p->build_work) {
        pl->build_lower = str(pl, p->build_lower);
        pl->build_work = str(pl, p->build_work);
        pl->build_lower_dev = p->build_lower_dev;
        pl->build_lower_ino = p->build_lower_ino;
        if (!pl->build_lower || !pl->build_work)
            goto oom;
    }
    pl->output = p->output ? str(pl, p->output) : NULL;
    if (!pl->workdir || (p->hostname && !pl->hostname) || (p->source && !pl->source) ||
        (p->build && !pl->build) || (p->output && !pl->output))
        goto oom;
    /* The network first: the layout's /etc/hosts carries its names. */
    pl->net_mode = p->net_mode;
    pl->dns = p->dns;
    if (pr->jobnet) {
        /* A job member: its name and every member's address by name. */
        pl->job_member = str(pl, p->job_member);
        pl->job_index = pr->job_index;
        pl->job_hosts = str(pl, jobnet_hosts(pr->jobnet));
        if (!pl->job_member || !pl->job_hosts)
            goto oom;
        if (p->njob_ports) {
            uint16_t *jp = keep(pl, malloc(p->njob_ports * sizeof(*jp)));
            if (!jp)
                goto oom;
            memcpy(jp, p->job_ports, p->njob_ports * sizeof(*jp));
            pl->job_ports = jp;
            pl->njob_ports = p->njob_ports;
        }
    }
    if (p->dests.n) {
        struct plan_dest *d = keep(pl, calloc(p->dests.n, sizeof(*d)));
        if (!d)
            goto oom;
        VEC_EACH(&p->dests, struct pol_dest, it) {
            d[pl->ndests] = (struct plan_dest){it->host, it->proto, it->port_min, it->port_max};
            pl->ndests++;
        }
        pl->dests = d;
    }
    if ((r = check_member_destinations(pl, reterr)) < 0)
        goto fail;
    if ((r = plan_net_build(pl, p, reterr)) < 0) {
        if (r == FY_E_NOMEM)
            goto oom;
        goto fail;
    }
    if ((r = build_layout(&b, p, reterr)) < 0) {
        if (r == FY_E_NOMEM)
            goto oom;
        goto fail;
    }
    pl->runtime_skipped = b.skipped;
    pl->nruntime_skipped = b.nskipped;
    if (b.skipped && !keep(pl, (void *)b.skipped)) {
        b.skipped = NULL;
        goto oom;
    }
    b.skipped = NULL;
    if ((r = build_env(pl, pr, img ? img->config.env : NULL, reterr)) < 0) {
        if (r == FY_E_NOMEM)
            goto oom;
        goto fail;
    }
    /* Limits, network, devices. */
    memcpy(pl->limit, p->limit, sizeof(pl->limit));
    pl->seccomp_class = p->seccomp_class;
    pl->gpu = p->gpu;
    pl->usb = p->usb;
    pl->pty = p->pty;
    /* Secrets (values owned by pr), the standard streams, host plumbing. */
    if (pr->nsecrets) {
        struct plan_secret *s = keep(pl, calloc(pr->nsecrets, sizeof(*s)));
        if (!s)
            goto oom;
        for (size_t i = 0; i < pr->nsecrets; i++) {
            const struct pol_secret *d = pr->secrets[i].decl;
            s[i] = (struct plan_secret){d->name, d->delivery, d->target, pr->secrets[i].value, pr->secrets[i].len};
        }
        pl->secrets = s;
        pl->nsecrets = pr->nsecrets;
    }
    for (int i = 0; i < 3; i++) {
        const struct pol_stdio *s = &p->stdio[i];
        pl->stdio[i] = (struct plan_stdio){s->mode, s->fd, s->path, s->fn, s->userdata};
    }
    pl->state_dir = p->state_dir;
    pl->obs = &p->obs;
    pl->fault_step = p->fault_step;
    pl->fault_nth = p->fault_nth;
    pl->delay_stage = p->delay_stage;
    pl->delay_usec = p->delay_usec;
    pl->test_legacy_cgroups = p->test_legacy_cgroups;
    pl->test_overlay_disk = p->test_overlay_disk;
    pl->test_copy_init = p->test_copy_init;
    pl->test_no_clone_into = p->test_no_clone_into;
    pr->neutral = pl;
    pr->image = img; /* its layer locks live as long as the prepared plan (and its handles) */
    return 0;
oom:
    r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
fail:
    oci_image_free(img);
    free(b.skipped);
    plan_free(pl);
    return r;
}
