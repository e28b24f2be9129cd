/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The neutral plan compiled for a per-attempt QEMU microvm (vm-run.h):
 * which host directories reach the guest read-only (9p, served by the
 * sandboxed VMM), the RUN message the agent receives, the guest's size, and
 * what describe() says is enforced and how. What the VM cannot give as the
 * plan asks is refused here with FY_E_UNSUPPORTED. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vm-backend.h"
#include "vm-proto.h"
#include "vm-run.h"
#include "vm-template.h"

#define MiB (UINT64_C(1) << 20)

struct rec {
    struct strbuf sb;
};

static void rec(struct strbuf *sb, uint8_t tag, const void *p, size_t n) {
    uint8_t h[5];
    h[0] = tag;
    vmp_put_u32(h + 1, (uint32_t)n);
    strbuf_appendn(sb, (const char *)h, 5);
    if (n)
        strbuf_appendn(sb, p, n);
}

static void rec_str(struct strbuf *sb, uint8_t tag, const char *s) { rec(sb, tag, s, strlen(s)); }

static void rec_u32(struct strbuf *sb, uint8_t tag, uint32_t v) {
    uint8_t b[4];
    vmp_put_u32(b, v);
    rec(sb, tag, b, 4);
}

static void rec_u64(struct strbuf *sb, uint8_t tag, uint64_t v) {
    uint8_t b[8];
    vmp_put_u64(b, v);
    rec(sb, tag, b, 8);
}

void vm_plan_free(void *plan) {
    struct vm_plan *pl = plan;
    if (!pl)
        return;
    free((char *)pl->qemu);
    for (size_t i = 0; i < pl->nmounts; i++) {
        free((char *)pl->mounts[i].host);
        free((char *)pl->mounts[i].target);
    }
    free(pl->mounts);
    free(pl->isolation_json);
    free(pl->limits_json);
    free(pl->describe_json);
    free(pl->run_msg);
    free(pl->cmdline);
    free(pl->template_inputs);
    if (pl->pxcfg)
        pl->pxf->proxy_config_free(pl->pxcfg);
    if (pl->rtcfg)
        pl->pxf->router_config_free(pl->rtcfg);
    if (pl->dnscfg)
        pl->pxf->dns_config_free(pl->dnscfg);
    free(pl);
}

static int unsupported(fy_error **reterr, const char *what) {
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                   "the virtual-machine backend cannot give %s (not implemented)", what);
}

static int add_mount(struct vm_plan *pl, const char *host, const char *target, bool writable) {
    struct vm_mount *m = realloc(pl->mounts, (pl->nmounts + 1) * sizeof(*m));
    if (!m)
        return FY_E_NOMEM;
    pl->mounts = m;
    m[pl->nmounts].host = util_strdup(host);
    m[pl->nmounts].target = util_strdup(target);
    m[pl->nmounts].writable = writable;
    pl->nmounts++;
    return m[pl->nmounts - 1].host && m[pl->nmounts - 1].target ? 0 : FY_E_NOMEM;
}

/* The TSC frequency of the host, so that the guest kernel skips its
 * calibration (a large part of a TCG boot). */
static unsigned long tsc_khz(void) {
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return 0;
    char line[512];
    double mhz = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
            break;
    fclose(f);
    return mhz > 100 ? (unsigned long)(mhz * 1000 + 0.5) : 0;
}

static int build_json(struct vm_plan *pl, const struct fy_plan *np) {
    json_t *iso = json_object(), *mounts = json_array(), *lim = json_object();
    if (!iso || !mounts || !lim) {
        json_decref(iso);
        json_decref(mounts);
        json_decref(lim);
        return FY_E_NOMEM;
    }
    json_t *wmounts = json_array();
    for (size_t i = 0; i < pl->nmounts; i++)
        json_array_append_new(pl->mounts[i].writable ? wmounts : mounts, json_string(pl->mounts[i].target));
    json_object_set_new(iso, "writable_mounts", wmounts);
    json_object_set_new(iso, "vmm", json_string("qemu microvm"));
    json_object_set_new(iso, "accelerator", json_string(pl->kvm ? "kvm" : "tcg"));
    json_object_set_new(iso, "terminals", json_string(np->pty == FY_DEVICES_PRIVATE
                                                          ? "private: the guest's own devpts instance"
                                                          : "none"));
    json_object_set_new(iso, "vmm_confinement",
                        json_sprintf("the library's own namespace sandbox (public API): network denied, QEMU's "
                                    "runtime paths and the attempt's images read-only, no other host path"
                                    " (/dev/kvm only with KVM)%s",
                                     pl->nic ? "; restricted: its only network object is the fd of the router's "
                                               "tap (no /dev/net/tun, no capability, no interface but lo)"
                                             : ""));
    json_object_set_new(iso, "kernel", json_pack("{ssssss}", "release", pl->k.release, "vmlinuz_sha256",
                                                 pl->k.vmlinuz_digest, "source", pl->k.vmlinuz_path));
    json_object_set_new(iso, "initramfs_sha256", json_string(pl->k.initrd_digest));
    if (pl->use_template) {
        json_object_set_new(iso, "template", json_pack("{ssss}", "key", pl->template_key, "inputs",
                                                       pl->template_inputs));
        json_object_set_new(iso, "boot",
                            json_sprintf("template restore: a fresh QEMU per attempt restores the template's saved "
                                         "state into RAM of its own, then the guest RNG is reseeded and its clock "
                                         "set before the attempt's files and command are sent%s",
                                         pl->nic ? "; restricted: a template of its own (its machine has the "
                                                   "virtio-net device, on a hub port leading nowhere while it was "
                                                   "made); the restoring QEMU has the router's tap behind it and "
                                                   "gets the checked state over a monitor socket of the attempt "
                                                   "(this process listening, the peer proven); the guest's "
                                                   "addresses and routes are set by the agent after the restore"
                                                 : ""));
    } else {
        json_object_set_new(iso, "template", json_null());
        json_object_set_new(iso, "boot", json_string(pl->cold_required
                                                         ? "cold boot per attempt (the policy's control cold-boot: a "
                                                           "fresh guest kernel for every attempt)"
                                                         : "cold boot per attempt (templates off: "
                                                           "FORGEYARD_VM_TEMPLATE)"));
    }
    json_object_set_new(iso, "guest_memory", json_integer((json_int_t)pl->guest_mem));
    json_object_set_new(iso, "guest_cpus", json_integer(pl->smp));
    /* What holds against a guest root, who controls the guest's cgroups:
     * the VMM's own limits on the host. */
    uint64_t vcpu = np->limit[FY_LIMIT_CPU_MILLIS];
    json_object_set_new(
        iso, "host_bounds",
        json_pack("{sosososs}", "vmm_memory",
                  pl->host_mem ? json_integer((json_int_t)(pl->guest_mem + 512 * MiB)) : json_null(), "cpu_millis",
                  pl->host_cpu && vcpu != FY_UNLIMITED && np->control_mode[FY_CONTROL_CPU_LIMIT] != FY_MODE_OFF
                      ? json_integer((json_int_t)vcpu)
                      : json_null(),
                  "pids", pl->host_pids ? json_integer(256) : json_null(),
                  "note", "the VMM's own limits on the host (its cgroup), which a guest root cannot lift: the "
                          "guest's memory is the limit plus 256 MiB for its kernel and agent, its CPUs the policy's "
                          "quota; null where this caller's namespace sandbox has no such cgroup controller (the VMM "
                          "then runs without that bound on the host); the limits inside the guest bind a workload "
                          "that is not root there"));
    json_object_set_new(iso, "control", json_string("framed protocol v1 over a virtio-serial port"));
    if (pl->pxcfg) {
        json_t *dests = json_array();
        for (size_t i = 0; dests && i < np->ndests; i++)
            json_array_append_new(dests, np->dests[i].port_min == np->dests[i].port_max
                                             ? json_sprintf("%s:%u", np->dests[i].host, np->dests[i].port_min)
                                             : json_sprintf("%s:%u-%u", np->dests[i].host, np->dests[i].port_min,
                                                            np->dests[i].port_max));
        json_object_set_new(iso, "network", json_pack("{ssssso}", "mode", "fetch-only", "enforcement",
                                                      "no network device in the guest (loopback only); the guest "
                                                      "agent listens on 127.0.0.1:3128 in the guest and carries each "
                                                      "connection over the control port (virtio-serial, flow "
                                                      "controlled) to the host, which connects it to the attempt's "
                                                      "proxy: the namespace backend's fy-proxy, confined, reached "
                                                      "through a unix socket in a 0700 directory of the attempt; "
                                                      "it connects only to the allowlisted host:port at the "
                                                      "addresses resolved at prepare, CONNECT is a tunnel",
                                                      "destinations", dests ? dests : json_array()));
    } else if (pl->rtcfg) {
        char *d = pl->pxf->router_describe(pl->rtcfg, np);
        json_t *o = d ? json_loads(d, 0, NULL) : NULL;
        free(d);
        if (!o)
            return FY_E_NOMEM;
        json_object_set_new(o, "guest", json_string("eth0 (virtio-net) configured by the agent from the RUN "
                                                    "message; no other network device but lo"));
        json_object_set_new(iso, "network", o);
    } else {
        json_object_set_new(iso, "network", json_string("deny: no network device in the guest, loopback only"));
    }
    json_t *net = json_object_get(iso, "network");
    if (json_is_object(net))
        json_object_set_new(net, "dns", json_string(pl->dnscfg ? "stub: the guest's resolv.conf names 127.0.0.53, "
                                                                 "where the agent carries each datagram over the "
                                                                 "control port to the namespace backend's stub on "
                                                                 "the host: only the allowlisted names (A/AAAA "
                                                                 "resolved at prepare), REFUSED for every other, "
                                                                 "forwards nothing"
                                                               : "none: no stub can run here (or dns host); names "
                                                                 "outside /etc/hosts do not resolve"));
    json_object_set_new(iso, "filesystem",
                        json_string("guest initramfs root; approved host directories read-only over 9p served by "
                                    "the sandboxed VMM; build and output copied in and returned as tar, "
                                    "parsed on the host in user space; the policy's writable binds over 9p "
                                    "read-write, the VMM's sandbox binding only those directories writable "
                                    "(symbolic links in them resolved by the guest, never followed on the host)"));
    json_object_set_new(iso, "readonly_mounts", mounts);
    json_object_set_new(iso, "workload_uid", json_integer(np->uid));
    json_object_set_new(iso, "user", json_string(np->fake_root ? "fake-root (guest root)" : "forgeyard"));
    json_object_set_new(iso, "impure", json_boolean(np->impure));
    json_object_set_new(iso, "secrets", json_string("in the RUN message only (never on the host's disk): "
                                                    "environment, or /run/secrets on a tmpfs of the guest"));
    pl->isolation_json = json_dumps(iso, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(iso);
    uint64_t mem = np->limit[FY_LIMIT_MEMORY], pids = np->limit[FY_LIMIT_PIDS], cpu = np->limit[FY_LIMIT_CPU_MILLIS];
    json_object_set_new(lim, "memory", json_string(mem != FY_UNLIMITED ? "guest cgroup v2 memory.max (and the "
                                                                           "guest's RAM)" : "guest RAM only"));
    json_object_set_new(lim, "pids", json_string(pids != FY_UNLIMITED ? "guest cgroup v2 pids.max" : "not enforced"));
    json_object_set_new(lim, "cpu", json_string(cpu == FY_UNLIMITED ? "the guest's CPUs"
                                                : pl->host_cpu ? "guest cgroup v2 cpu.max, the guest's CPUs and the "
                                                                 "VMM's host cgroup quota"
                                                               : "guest cgroup v2 cpu.max and the guest's CPUs (no "
                                                                 "host cgroup quota on the VMM for this caller)"));
    json_object_set_new(lim, "wall_time", json_string("host: the VMM is killed at the deadline"));
    json_object_set_new(lim, "output", json_string("host: captured streams and returned trees counted"));
    if (np->limit[FY_LIMIT_DISK] != FY_UNLIMITED || np->limit[FY_LIMIT_FILES] != FY_UNLIMITED)
        json_object_set_new(lim, "disk", json_string("host: the bytes and entries of the returned build and output "
                                                     "trees, counted as they arrive"));
    json_object_set_new(lim, "tree", json_string(pl->host_mem || pl->host_pids || pl->host_cpu
                                                     ? "the VM (the VMM's namespace sandbox and its cgroup)"
                                                     : "the VM (the VMM's namespace sandbox; no cgroup of its own "
                                                       "for this caller)"));
    json_object_set_new(lim, "rlimits", json_string("nofile, core, fsize, stack (set in the guest)"));
    json_object_set_new(lim, "scratch", json_string("tmpfs sizes in the guest (tmp_size, home_size, work_tmp_size)"));
    pl->limits_json = json_dumps(lim, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(lim);
    return pl->isolation_json && pl->limits_json ? 0 : FY_E_NOMEM;
}

int vm_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    *ret = NULL;
    /* What this backend does not do yet: refused, never approximated. */
    if (np->source && np->source_writable)
        return unsupported(reterr, "a writable source directory");
    if (np->stdio[FY_STDIN].mode == FY_STDIO_PIPE || np->stdio[FY_STDOUT].mode == FY_STDIO_PIPE ||
        np->stdio[FY_STDERR].mode == FY_STDIO_PIPE)
        return unsupported(reterr, "FY_STDIO_PIPE streams");
    if (np->net_mode != FY_NET_DENY && np->net_mode != FY_NET_FETCH_ONLY && np->net_mode != FY_NET_RESTRICTED)
        return unsupported(reterr, "a network other than deny, restricted and fetch-only");
    const char *qemu = caps_fact(caps, VM_FACT_QEMU);
    if (!qemu)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL, "no QEMU found by the probe");
    struct vm_plan *pl = calloc(1, sizeof(*pl));
    if (!pl)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    pl->np = np;
    pl->kvm = caps_present(caps, FY_CAP_KVM);
    pl->host_mem = caps_present(caps, FY_CAP_CGROUP_MEMORY);
    pl->host_pids = caps_present(caps, FY_CAP_CGROUP_PIDS);
    pl->host_cpu = caps_present(caps, FY_CAP_CGROUP_CPU);
    pl->caps = caps;
    int r = 0;
    if (np->net_mode == FY_NET_FETCH_ONLY) {
        /* The proxy of the namespace backend, as its folder's service: the
         * same allowlist checks, credentials and confinement. */
        if (!(pl->pxf = backend_proxy_family())) {
            r = unsupported(reterr, "fetch-only without a folder offering its proxy (the Linux one)");
            goto fail;
        }
        if ((r = pl->pxf->proxy_compile(np, caps, &pl->pxcfg, reterr)) < 0)
            goto fail;
    }
    if (np->net_mode == FY_NET_RESTRICTED) {
        /* The namespace backend's router and rules, its sandbox-side link a
         * tap whose fd QEMU gets (the folder's service: vm-net.c). */
        if (!(pl->pxf = backend_proxy_family()) || !pl->pxf->router_compile) {
            r = unsupported(reterr, "restricted without a folder offering its router (the Linux one)");
            goto fail;
        }
        if ((r = pl->pxf->router_compile(np, caps, &pl->rtcfg, reterr)) < 0)
            goto fail;
        pl->nic = true;
    }
    if (pl->pxf && pl->pxf->dns_compile && np->net_mode != FY_NET_DENY &&
        (r = pl->pxf->dns_compile(np, caps, &pl->dnscfg, reterr)) < 0)
        goto fail;
    if (!(pl->qemu = util_strdup(qemu)))
        goto oom;
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        if (e->kind != PE_HOST)
            continue;
        if (e->role == PR_DEVICE) {
            r = unsupported(reterr, "leased devices");
            goto fail;
        }
        if (e->role == PR_DEV)
            continue; /* the agent makes the harmless nodes itself */
        if (e->role == PR_BUILD || e->role == PR_OUTPUT)
            continue; /* copied in and returned (vm-run.c) */
        bool writable = !(e->flags & PLAN_RO);
        if (writable && (e->role != PR_BIND || (e->flags & PLAN_FILE))) {
            r = unsupported(reterr, e->role == PR_SOURCE ? "a writable source directory"
                                                         : "a writable bind of a single file (9p shares directories)");
            goto fail;
        }
        if (writable && np->limit[FY_LIMIT_DISK] != FY_UNLIMITED) {
            r = unsupported(reterr, "a disk limit on a writable bind (the guest writes through the VMM, which "
                                    "counts nothing)");
            goto fail;
        }
        if (e->flags & PLAN_FILE)
            continue; /* a small file: copied into the attempt's archive */
        struct stat st;
        if ((e->flags & PLAN_OPTIONAL) && stat(e->host, &st) < 0)
            continue; /* an optional directory this host lacks */
        if (writable && (stat(e->host, &st) < 0 || !S_ISDIR(st.st_mode))) {
            r = unsupported(reterr, "a writable bind that is not a directory (9p shares directories)");
            goto fail;
        }
        if (!writable && e->role == PR_BIND && stat(e->host, &st) == 0 && !S_ISDIR(st.st_mode)) {
            /* One file, read-only: copied into the attempt's archive
             * (vm-run.c write_attempt_archive), not shared. */
            if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > VM_FILE_COPY_MAX) {
                r = unsupported(reterr, S_ISREG(st.st_mode)
                                            ? "a read-only bind of a file larger than 8 MiB (9p shares directories: "
                                              "bind its directory)"
                                            : "a read-only bind of something other than a file or a directory");
                goto fail;
            }
            continue;
        }
        if ((r = add_mount(pl, e->host, e->target, writable)) < 0)
            goto oom;
    }
    if (pl->nmounts > 16) {
        r = unsupported(reterr, "more than 16 host directories");
        goto fail;
    }
    if ((r = vm_kernel_identify(&pl->k, reterr)) < 0)
        goto fail;
    /* The guest: RAM for the workload's limit plus the kernel, agent and
     * the initramfs root; one CPU unless the policy allows more. */
    uint64_t mem = np->limit[FY_LIMIT_MEMORY];
    pl->guest_mem = mem == FY_UNLIMITED ? 1024 * MiB : mem + 256 * MiB;
    if (pl->guest_mem < 512 * MiB)
        pl->guest_mem = 512 * MiB;
    if (pl->guest_mem > 16384 * MiB) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL, "memory limit too large for a guest");
        goto fail;
    }
    pl->guest_mem = (pl->guest_mem + MiB - 1) & ~(MiB - 1);
    /* Where the caller's cgroups come from the privileged helper, its
     * per-attempt budget (the probe's facts, read by their names: the Linux
     * folder's) binds the VMM as it binds a namespace sandbox: a VMM that
     * would need more is refused here, never run unbounded past the
     * operator's budget. */
    const char *hsock = caps_fact(caps, "linux.helper_socket");
    const char *hm = caps_fact(caps, "linux.helper_max_memory"), *hp = caps_fact(caps, "linux.helper_max_pids");
    if (hsock && pl->host_mem && hm && strtoull(hm, NULL, 10) < pl->guest_mem + 512 * MiB) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, "$.resources.memory",
                    "the VMM's memory (%llu bytes: the guest's RAM and QEMU's) is over this uid's budget at the "
                    "privileged helper (%s bytes per attempt)",
                    (unsigned long long)(pl->guest_mem + 512 * MiB), hm);
        goto fail;
    }
    if (hsock && pl->host_pids && hp && strtoull(hp, NULL, 10) < 256) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, "$.resources.pids",
                    "the VMM's 256 processes are over this uid's budget at the privileged helper (%s per attempt)", hp);
        goto fail;
    }
    uint64_t cpu = np->limit[FY_LIMIT_CPU_MILLIS];
    pl->smp = cpu != FY_UNLIMITED && cpu > 1000 ? 2 : 1;

    /* The RUN message. */
    struct strbuf sb;
    strbuf_init(&sb);
    for (size_t i = 0; i < np->argc; i++)
        rec_str(&sb, VMR_ARG, np->argv[i]);
    for (size_t i = 0; i < np->nenv; i++)
        rec_str(&sb, VMR_ENV, np->envp[i]);
    if (!np->env_exact) {
        /* (the limits the guest enforces, for build tools that size their
         * parallelism, as the namespace backend tells them) */
        char limit_env[64];
        if (cpu != FY_UNLIMITED) {
            uint64_t n = (cpu + 999) / 1000;
            snprintf(limit_env, sizeof(limit_env), "FORGEYARD_CPUS=%llu", (unsigned long long)(n < pl->smp ? n : pl->smp));
            rec_str(&sb, VMR_ENV, limit_env);
        }
        if (mem != FY_UNLIMITED) {
            snprintf(limit_env, sizeof(limit_env), "FORGEYARD_MEMORY_LIMIT=%llu", (unsigned long long)mem);
            rec_str(&sb, VMR_ENV, limit_env);
        }
    }
    rec_str(&sb, VMR_CWD, np->workdir);
    rec_str(&sb, VMR_PATH, np->path_search);
    rec_str(&sb, VMR_HOSTNAME, np->hostname ? np->hostname : "forgeyard");
    rec_u32(&sb, VMR_UID, np->uid);
    rec_u32(&sb, VMR_GID, np->gid);
    if (mem != FY_UNLIMITED)
        rec_u64(&sb, VMR_MEMORY, mem);
    if (np->limit[FY_LIMIT_PIDS] != FY_UNLIMITED)
        rec_u64(&sb, VMR_PIDS, np->limit[FY_LIMIT_PIDS]);
    if (cpu != FY_UNLIMITED)
        rec_u64(&sb, VMR_CPU, cpu);
    static const struct { uint32_t limit, which; } rl[] = {
        {FY_LIMIT_NOFILE, VMP_RLIMIT_NOFILE}, {FY_LIMIT_FSIZE, VMP_RLIMIT_FSIZE},
        {FY_LIMIT_STACK, VMP_RLIMIT_STACK}, {FY_LIMIT_CORE, VMP_RLIMIT_CORE},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(rl); i++) {
        if (np->limit[rl[i].limit] == FY_UNLIMITED)
            continue;
        uint8_t b[12];
        vmp_put_u32(b, rl[i].which);
        vmp_put_u64(b + 4, np->limit[rl[i].limit]);
        rec(&sb, VMR_RLIMIT, b, sizeof(b));
    }
    if (np->limit[FY_LIMIT_OUTPUT] != FY_UNLIMITED)
        rec_u64(&sb, VMR_OUTPUT_MAX, np->limit[FY_LIMIT_OUTPUT]);
    if (pl->pxcfg)
        rec_u32(&sb, VMR_NET_PROXY, NET_PROXY_PORT);
    if (pl->nic) {
        /* The router's sandbox side (linux-net.h): the guest takes the
         * addresses the namespace backend's eth0 has. */
        struct vmp_iface ifc = {.addr4 = {100, 64, 0, 2}, .gw4 = {100, 64, 0, 1}, .prefix4 = 30,
                                .addr6 = {0xfd, 0x66, 0x79, 0x73, [15] = 2}, .gw6 = {0xfd, 0x66, 0x79, 0x73, [15] = 1},
                                .prefix6 = 64};
        uint8_t b[VMP_IFACE_LEN];
        vmp_put_iface(b, &ifc);
        rec(&sb, VMR_NET_IFACE, b, sizeof(b));
    }
    if (pl->dnscfg)
        rec(&sb, VMR_DNS, NULL, 0);
    if (np->pty == FY_DEVICES_PRIVATE)
        rec(&sb, VMR_PTYS, NULL, 0);
    for (size_t i = 0; i < pl->nmounts; i++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "r%zu", i);
        size_t tl = strlen(tag), ml = strlen(pl->mounts[i].target);
        char *buf = malloc(tl + 1 + ml);
        if (!buf) {
            strbuf_free(&sb);
            goto oom;
        }
        memcpy(buf, tag, tl + 1);
        memcpy(buf + tl + 1, pl->mounts[i].target, ml);
        rec(&sb, pl->mounts[i].writable ? VMR_MOUNT9P_RW : VMR_MOUNT9P, buf, tl + 1 + ml);
        free(buf);
    }
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        if (e->kind != PE_TMPFS || strncmp(e->target, "/dev", 4) == 0)
            continue;
        size_t tl = strlen(e->target);
        uint8_t *buf = malloc(16 + tl);
        if (!buf) {
            strbuf_free(&sb);
            goto oom;
        }
        vmp_put_u32(buf, e->mode);
        vmp_put_u32(buf + 4, (e->flags & PLAN_OWNED) ? 1 : 0);
        vmp_put_u64(buf + 8, e->size == FY_UNLIMITED ? 0 : e->size);
        memcpy(buf + 16, e->target, tl);
        rec(&sb, VMR_TMPFS, buf, 16 + tl);
        free(buf);
    }
    if (np->build) {
        uint8_t buf[4 + 16];
        vmp_put_u32(buf, VMP_DIR_BUILD);
        memcpy(buf + 4, "/work/build", 11);
        rec(&sb, VMR_COLLECT, buf, 15);
    }
    if (np->output) {
        uint8_t buf[4 + 16];
        vmp_put_u32(buf, VMP_DIR_OUTPUT);
        memcpy(buf + 4, "/work/output", 12);
        rec(&sb, VMR_COLLECT, buf, 16);
    }
    if (sb.oom) {
        strbuf_free(&sb);
        goto oom;
    }
    if (sb.len > VMP_MAX_FRAME) {
        strbuf_free(&sb);
        r = err_set(reterr, FY_E_RANGE, FY_STEP_PREPARE, 0, NULL, "the command and environment exceed %u bytes",
                    VMP_MAX_FRAME);
        goto fail;
    }
    pl->run_len = sb.len;
    pl->run_msg = strbuf_steal(&sb);
    if (!pl->run_msg)
        goto oom;
    unsigned long khz = tsc_khz();
    char tsc[64] = "";
    if (khz)
        snprintf(tsc, sizeof(tsc), " tsc_early_khz=%lu", khz);
    pl->cmdline = util_asprintf("console=ttyS0 quiet loglevel=1 panic=-1 reboot=t rdinit=/init "
                                "cryptomgr.notests random.trust_cpu=on init_on_free=1%s", tsc);
    if (!pl->cmdline)
        goto oom;
    /* Templates unless the host turned them off (FORGEYARD_VM_TEMPLATE=off). */
    const char *tm = getenv("FORGEYARD_VM_TEMPLATE");
    pl->cold_required = np->control[FY_CONTROL_COLD_BOOT] == FY_CONTROL_STATE_ENFORCED;
    pl->use_template = !(tm && !strcmp(tm, "off")) && !pl->cold_required;
    if (pl->use_template && vm_template_key(pl) < 0)
        goto oom;
    if (build_json(pl, np) < 0)
        goto oom;
    *ret = pl;
    return 0;
oom:
    r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
fail:
    vm_plan_free(pl);
    return r;
}

const char *vm_describe(const void *plan) {
    const struct vm_plan *pl = plan;
    if (!pl->describe_json) {
        char *s = util_asprintf("{\"isolation\":%s,\"limits\":%s}", pl->isolation_json ? pl->isolation_json : "{}",
                                pl->limits_json ? pl->limits_json : "{}");
        if (s)
            util_publish_once(&pl->describe_json, s);
    }
    return pl->describe_json ? pl->describe_json : "{}";
}
