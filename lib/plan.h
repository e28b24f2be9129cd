/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The platform-neutral plan of an attempt (struct fy_plan): what runs, as
 * whom, in which filesystem layout, with which environment, limits,
 * network, devices and secrets. Core builds it once per fy_prepare from the
 * policy and the negotiated selection (plan.c); it is immutable afterwards
 * and is all a backend's compile and run operations read besides the
 * capability snapshot. A backend decides only *how*: mounts or shares,
 * Landlock or SBPL rules, cgroups or job objects. */
#ifndef FY_PLAN_H
#define FY_PLAN_H

#include "internal.h"

struct fy_backend_ops;
struct obs;

/* ---- the filesystem layout, in order (a parent before what is below it) ---- */
enum plan_entry_kind {
    PE_FILE = 1,   /* a file made at target with content and mode */
    PE_SYMLINK,    /* target is a symbolic link to content */
    PE_HOST,       /* the host path host, seen at target */
    PE_TMPFS,      /* private scratch at target: size bytes, at most inodes entries (0: no limit), mode */
    PE_PROC,       /* the sandbox's own process view at target */
    PE_PROC_HIDE,  /* a host-revealing kernel entry, hidden (reads empty) where it exists */
    PE_PROC_RO,    /* a kernel tunable tree, read-only where it exists */
    PE_PTYS,       /* pseudo-terminals of the sandbox's own at target */
};

/* What an entry is for: backends that cannot remap paths (the process
 * level, Seatbelt) or that materialise inputs (a VM) decide by role. */
enum plan_role {
    PR_ETC = 1,    /* generated identity and name-service files */
    PR_RUNTIME,    /* an approved host runtime path (read-only) */
    PR_TRUST,      /* CA certificates, where the network is not denied */
    PR_RESOLV,     /* the host's resolver configuration (dns: host) */
    PR_DEV,        /* the minimal device set and its directory */
    PR_PROC,
    PR_SCRATCH,    /* /tmp, /dev/shm, /work/tmp and tmpfs stand-ins for the workspace */
    PR_HOME,
    PR_SOURCE, PR_BUILD, PR_OUTPUT,
    PR_TOOLCHAIN,
    PR_BIND,       /* a bind the policy declared */
    PR_DEVICE,     /* a leased device */
};

#define PLAN_RO        (1u << 0)  /* read-only */
#define PLAN_OPTIONAL  (1u << 1)  /* PE_HOST: left out when missing at start */
#define PLAN_WORKSPACE (1u << 2)  /* PE_HOST: a workspace path, never reached through a symlink */
#define PLAN_DEVICE    (1u << 3)  /* PE_HOST: a device node */
#define PLAN_FILE      (1u << 4)  /* PE_HOST: a regular file (else a directory) */
#define PLAN_DIR       (1u << 5)  /* PE_HOST: must be a directory when opened */
#define PLAN_NOEXEC    (1u << 6)  /* PE_TMPFS: nothing in it may be executed */
#define PLAN_OWNED     (1u << 7)  /* PE_TMPFS: owned by the workload's ids (else root's) */

struct plan_entry {
    uint32_t kind, role, flags;
    const char *target;   /* absolute, in the sandbox */
    const char *host;     /* PE_HOST: absolute host path */
    const char *content;  /* PE_FILE: the content; PE_SYMLINK: the link */
    uint32_t mode;        /* PE_FILE, PE_TMPFS */
    uint64_t size;        /* PE_TMPFS: bytes */
    uint32_t inodes;      /* PE_TMPFS: 0 for the file system's default */
};

/* The workload's standard streams (host plumbing, not part of policies). */
struct plan_stdio {
    uint32_t mode;        /* FY_STDIO_* */
    int fd;               /* FY_STDIO_FD: owned by the prepared plan */
    const char *path;     /* FY_STDIO_FILE */
    fy_output_fn fn;      /* FY_STDIO_CALLBACK */
    void *userdata;
};

struct plan_secret {
    const char *name;
    uint32_t delivery;    /* FY_SECRET_* */
    const char *target;   /* env name, file name under /run/secrets, or NULL */
    const unsigned char *value; /* sodium memory owned by the prepared plan */
    size_t len;
};

struct plan_dest { const char *host; uint32_t proto, port_min, port_max; };

/* One allowed tuple of the network plan (restricted): the destinations,
 * names resolved at fy_prepare, as address/prefix, protocol and ports. */
struct plan_net_rule {
    uint8_t family;        /* 4 or 6 */
    uint8_t prefix;        /* 0 < prefix <= 32 or 128 */
    uint8_t addr[16];      /* network order; host bits zero */
    uint32_t proto;        /* FY_PROTO_* */
    uint32_t port_min, port_max;
    uint32_t dest;         /* index into fy_plan.dests it came from */
};
/* At most this many rules after resolution (a name may have many addresses). */
#define NET_RULES_MAX 4096

/* fetch-only: where every backend's proxy listens inside the sandbox, and
 * the network environment the plan gives the workload (HTTP_PROXY,
 * HTTPS_PROXY and their lower-case forms; nothing else is added). */
#define NET_PROXY_PORT 3128
#define NET_PROXY_URL  "http://127.0.0.1:3128"

struct fy_plan {
    /* What was negotiated. */
    const struct fy_backend_ops *backend;
    uint32_t level;                         /* FY_LEVEL_* */
    uint8_t control[FY_CONTROL_MAX_ + 1];   /* FY_CONTROL_STATE_* */
    uint8_t control_mode[FY_CONTROL_MAX_ + 1]; /* FY_MODE_* the policy asked */
    bool impure;

    /* The command. */
    char *const *argv;
    size_t argc;
    const char *const *envp;   /* NULL-terminated: the policy's and the allowed host
                                  variables, then HOME, TMPDIR, USER, LOGNAME defaults */
    size_t nenv;
    const char *path_search;   /* PATH that finds argv[0] when it has no '/' */
    bool env_exact;            /* an action's: the backend adds no variable either */
    const char *workdir;       /* in the sandbox */
    const char *hostname;

    /* Identity inside: a non-root user (uid/gid 1000, "forgeyard") or fake
     * root; HOME. A root host maps it into [id_first, id_first + id_count). */
    bool fake_root;
    uint32_t uid, gid;
    const char *user, *home;
    uint32_t id_first, id_count;

    /* The filesystem. */
    struct plan_entry *entries;
    size_t nentries;
    const char *const *runtime_skipped;   /* approved runtime paths this host lacks */
    size_t nruntime_skipped;
    /* The host directories of the workspace (NULL: a tmpfs stands in). */
    const char *source, *build, *output;
    bool source_writable;
    /* An action's execution root: where the backend can (its
     * build_overlaid op says so for the compiled plan), /work/build is an
     * overlay mounted inside the sandbox, with the host directory
     * build_lower (opened there and checked to be the inode
     * build_lower_dev/ino) as its read-only lower layer, the host directory
     * build as its upper and build_work as overlayfs's work directory.
     * NULL: build is bound as usual (the action then fills it itself). */
    const char *build_lower, *build_work;
    uint64_t build_lower_dev, build_lower_ino;
    /* The container image (FY_LEVEL_CONTAINER; NULL / 0 otherwise): its
     * verified, unpacked layer directories to mount, lowest first (those
     * hidden below an opaque root, and the lower copy of a layer held
     * twice, left out), the image's own number of layers, and its manifest
     * digest (a docker-archive's: its config digest). */
    const char *const *image_layers;
    size_t nimage_layers, image_nlayers;
    const char *image_digest;

    /* Limits (FY_LIMIT_*; FY_UNLIMITED: none) and the seccomp class. */
    uint64_t limit[FY_LIMIT_MAX_ + 1];
    uint32_t seccomp_class;

    /* Network. */
    uint32_t net_mode, dns;
    const struct plan_dest *dests;
    size_t ndests;
    const struct plan_net_rule *net_rules; /* restricted: the resolved allowlist (plan-net.c) */
    size_t nnet_rules;
    const char *net_hosts;     /* restricted: "ADDR\tNAME\n" lines for the sandbox's /etc/hosts */
    const struct plan_net_rule *net_name_rules; /* every address a destination name resolved to, one
                                                 * rule each, before equal tuples merged (net_rules
                                                 * names one of them): the DNS stub's answers */
    size_t nnet_name_rules;
    const char *job_member;    /* a job network's member (fy_prepare_member): its name, or NULL */
    uint32_t job_index;        /* ... its index (its address and link) */
    const char *job_hosts;     /* ... every member's "ADDR\tNAME\n" for /etc/hosts */
    const uint16_t *job_ports; /* ... network.job.ports: TCP ports it connects to on the others (sorted) */
    uint32_t njob_ports;
    const char *net_uplink;    /* FY_NETHOST_UPLINK (NULL: the host's namespace) */
    const char *net_link_subnet; /* FY_NETHOST_LINK_SUBNET (NULL: the backend's default) */
    const char *net_credentials; /* fetch-only: FY_NETHOST_CREDENTIALS, a host file the proxy's
                                    credentials come from (NULL: none) */

    /* Devices. */
    uint32_t gpu, usb, pty;               /* FY_DEVICES_* */

    /* Secrets, standard streams, state directory, observability. */
    const struct plan_secret *secrets;
    size_t nsecrets;
    struct plan_stdio stdio[3];
    const char *state_dir;                /* NULL: the backend's default */
    const struct obs *obs;

    /* Tests and qualification only. */
#define STAGE_DELAY_INIT_ENTRY 0x100u      /* the sandbox's init, on entry, before its signals are set */
    uint32_t fault_step, fault_nth;
    uint32_t delay_stage;                 /* FY_STAGE_*, or STAGE_DELAY_INIT_ENTRY */
    uint64_t delay_usec;
    bool test_legacy_cgroups, test_copy_init, test_no_clone_into;
    bool test_overlay_disk;               /* a container's upper on disk (as before Linux 6.6) */

    /* Every allocation of the plan, freed together. */
    struct arena arena;
};

struct fy_prepared;
/* plan.c: the plan of pr (policy, selection, argv, environment, secrets
 * resolved); into pr->neutral. */
int plan_build(struct fy_prepared *pr, fy_error **reterr);
void plan_free(struct fy_plan *plan);

/* plan-net.c: under restricted and fetch-only, pl->net_rules (and under
 * restricted pl->net_hosts) from the
 * policy's destinations (names resolved through FY_NETHOST_HOSTS_FILE or
 * the host's resolver), checked: no rule may cover an address of this
 * host, at most NET_RULES_MAX. Nothing to do under other modes. */
int plan_net_build(struct fy_plan *pl, const fy_policy *p, fy_error **reterr);
/* The rule as text: "198.51.100.7/32 tcp 80-80" (buf of 80 bytes). */
const char *plan_net_rule_text(const struct plan_net_rule *r, char *buf, size_t len);

/* The PE_HOST entry of a role (PR_SOURCE, PR_BUILD, PR_OUTPUT), or NULL. */
const struct plan_entry *plan_find_role(const struct fy_plan *plan, uint32_t role);

#endif
