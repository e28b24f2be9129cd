/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The compiled Linux plan: everything the sandbox child needs, computed in
 * fy_prepare and fy_start so that the code between clone and exec
 * (linux-child.c) only interprets flat data with raw syscalls. */
#ifndef FY_LINUX_PLAN_H
#define FY_LINUX_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>

#include "backend.h"
#include "linux-cgroup.h"

struct lxn_plan;

/* Landlock's TCP layer takes one rule per port: above this many the layer
 * is left out (and reported so). */
#define LX_LL_MAX_TCP_PORTS 64

/* ---- mount operations, executed in order after pivot_root ---- */
enum mount_kind {
    MK_TMPFS = 1,  /* mount a tmpfs at dst with data options */
    MK_BIND,       /* bind host src (relative to the old root) at dst */
    MK_SYMLINK,    /* create symlink dst -> src */
    MK_DIR,        /* mkdir -p dst with mode */
    MK_FILE,       /* create file dst with content src[0..src_len) and mode */
    MK_PROC,       /* mount a new procfs at dst */
    MK_MASK,       /* hide dst in /proc: /dev/null over a file, an empty ro tmpfs over a dir */
    MK_READONLY,   /* bind dst onto itself read-only (recursive) */
    MK_DEVPTS,     /* mount a new devpts instance at dst (data: its options) */
    MK_OVERLAY,    /* an action's execution root at dst: an overlay of host src (read-only lower, the
                      inode dev/ino) with host data as upper and host aux as work directory */
};

#define MF_READONLY  (1u << 0)
#define MF_OPTIONAL  (1u << 1)  /* skip when the source is missing */
#define MF_NOFOLLOW  (1u << 2)  /* workspace path: no symlink in any component */
#define MF_DEVICE    (1u << 3)  /* a device node: keep dev access */
#define MF_FILE      (1u << 4)  /* the source is a file: create a file mount point */
#define MF_OWNED     (1u << 5)  /* chown dst to the workload ids after creating it */
#define MF_NOEXEC    (1u << 6)
#define MF_DIR       (1u << 7)  /* the source must be a directory (the workspace, toolchains) */
#define MF_HOST_TREE (1u << 8)  /* a root caller's workspace bind: the host hands its tree (idmapped
                                   when read-only: linux-idmap.c), one message per such op */
/* How a workspace path (MF_NOFOLLOW) is walked, by init from the old root
 * and by the host from / (linux-idmap.c): no symbolic link in any
 * component, the last included (ELOOP), no magic link, never outside. */
#define LX_WORKSPACE_RESOLVE (RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH)

struct mount_op {
    uint32_t kind, flags;
    uint32_t mode;          /* MK_DIR, MK_FILE */
    const char *src;        /* MK_BIND: host path without the leading '/'; MK_SYMLINK: target; MK_FILE: content */
    size_t src_len;         /* MK_FILE */
    const char *dst;        /* absolute, inside the sandbox */
    const char *data;       /* MK_TMPFS options; MK_OVERLAY: the upper (host path, relative) */
    const char *aux;        /* MK_OVERLAY: the work directory (host path, relative) */
    uint64_t dev, ino;      /* MK_OVERLAY: what the lower must be */
    uint32_t step;          /* FY_STEP_* reported on failure */
};

/* ---- Landlock ---- */
struct ll_rule {
    const char *path;       /* inside the sandbox */
    uint64_t access;        /* LANDLOCK_ACCESS_FS_* allowed beneath it */
    bool no_links;          /* a workspace path (process level): opened with no symbolic link at any component */
};

/* Messages from the sandbox to the library over the status pipe (each one
 * write(2) of this fixed size, atomic under PIPE_BUF). */
enum child_msg_type {
    CM_ERROR = 1,   /* step, err: a setup step failed */
    CM_STAGE,       /* aux = FY_STAGE_*, value = CLOCK_MONOTONIC usec when the stage ended */
    CM_EXEC,        /* value = usec just before execve */
    CM_EXIT,        /* aux = wait status of the workload, value = usec when reaped */
    CM_LANDLOCK,    /* aux = Landlock ABI actually enforced (0: none) */
    CM_TASKS,       /* value = tasks created in the pid namespace (sent before CM_EXIT) */
    CM_RUSAGE,      /* aux = RU_* below, value = what init reaped (sent before CM_EXIT) */
};
#define RU_USER_USEC   0
#define RU_SYSTEM_USEC 1
#define RU_MAXRSS_KIB  2
struct child_msg {
    uint32_t type, step;
    int32_t err;
    uint32_t aux;
    uint64_t value;
};

#define CHILD_MAX_RLIMITS 10

/* Per-user kernel counts that a user namespace charges to its owner's
 * budget in every ancestor namespace (the kernel's ucounts): without a
 * limit of the sandbox's own, one sandbox could take the whole budget of
 * the user that made it (as root: root's), and then no process of that
 * user could make an inotify instance. The sandbox gets 1/LX_UCOUNT_SHARE
 * of the host's per-user limit. */
#define LX_UC_INOTIFY_INSTANCES 0
#define LX_UC_INOTIFY_WATCHES   1
#define LX_UC_FANOTIFY_GROUPS   2
#define LX_UC_FANOTIFY_MARKS    3
#define LX_NUCOUNTS             4
#define LX_UCOUNT_SHARE         8
/* The terminals of a private devpts instance (max=): the kernel's pool,
 * kernel.pty.max less kernel.pty.reserve (which only the host's first
 * instance may use), is one for every other instance of the host, so a
 * sandbox gets 1/LX_UCOUNT_SHARE of it, and never more than LX_PTY_CAP. */
#define LX_PTY_CAP              256
struct child_rlimit {
    int resource;
    struct rlimit lim;
};

/* Process mode: the library asks the sandbox's supervisor to end the whole
 * tree with this signal (SIGKILL would only kill the supervisor and orphan
 * the tree to the host's init). */
#define FY_SIG_END_TREE (SIGRTMAX - 1)

/* Immutable, built at fy_prepare. All strings live in the plan's arena. */
struct linux_plan {
    /* namespaces and ids */
    bool process_mode;           /* the linux-process backend: no namespaces at all */
    bool exec_init;              /* the probe executed forgeyard-init here (else pid 1 is a copy of the host) */
    uint64_t clone_flags;        /* CLONE_NEW* */
    bool use_netns;              /* CLONE_NEWNET: bring lo up */
    bool cg_view;                /* init mounts a read-only view of the attempt's own cgroups at
                                    /sys/fs/cgroup (linux-child.c cgroup_view) */
    bool cg_view_v2;             /* the attempt has a cgroup v2 cgroup of its own */
    bool net_router;             /* restricted: init sends the host its network namespace
                                    (linux-net.c links it to a router) before the second go-ahead */
    struct lxn_plan *net;        /* restricted: the router's plan (host side only) */
    const char *net_helper;      /* unprivileged: the privileged helper's socket when it offers
                                    restricted networking (linux-net-helper.c), else NULL */
    const char *net_helper_uplink;
    uint16_t net_helper_version; /* the protocol it answered the probe in (0: ours) */
    bool as_root;                /* the caller is root: map an unprivileged host range */
    uint32_t userns_owner;       /* as root: the host id that makes, and so owns, the sandbox's
                                    user namespace (the range's first: the kernel charges the
                                    namespace's per-user counts to it, not to root); 0: the
                                    caller (lx_owner_enter) */
    bool userns_owner_refused;   /* as root, the probe found that switch refused here */
    char uid_map[96], gid_map[96];
    uint32_t setup_uid, setup_gid;     /* ids of the sandbox's pid 1 inside */
    uint32_t work_uid, work_gid;       /* ids of the workload inside */
    uint32_t host_uid, host_gid;       /* the same ids on the host (what owns its files) */
    bool drop_groups;                  /* setgroups(0) allowed (root mode) */
    bool own_keyring;                  /* the workload joins a fresh session keyring (no seccomp filter
                                        * refuses the key calls: linux-child.c own_session_keyring) */
    const char *hostname;
    /* filesystem */
    struct mount_op *ops;
    size_t nops;
    char tmpfs_root_opts[64];
    /* The container level: the image's read-only layer directories, top
     * first, NULL-terminated, under an overlay whose upper is in the root
     * tmpfs (NULL: a plain tmpfs root). */
    char **overlay_lowers;
    /* An action's execution root is an overlay (MK_OVERLAY), not a bind. */
    bool build_overlay;
    bool overlay_disk;           /* ... whose upper is on disk instead, in the attempt's directory
                                    (child_args.workdir): tmpfs lacks user xattrs (linux-upper.c) */
    const char *workdir;
    /* hardening */
    struct ll_rule *ll_rules;
    size_t nll;
    uint64_t ll_handled;         /* handled_access_fs (0: no Landlock) */
    uint32_t ll_abi;
    uint64_t ll_scoped;          /* LANDLOCK_SCOPE_* (ABI >= 6) */
    uint32_t nll_tcp_ports;      /* restricted (ABI >= 4): TCP connect allowed only to these ports */
    uint16_t ll_tcp_ports[LX_LL_MAX_TCP_PORTS];
    const void *bpf;             /* struct sock_filter[]: the shared compiled profile */
    uint16_t bpf_len;
    bool seccomp_notify;
    const char *seccomp_name;
    uint32_t seccomp_version;
    const void *ipc_bpf;         /* stacked on bpf where the sandbox has no IPC namespace
                                    (sc_ipc_deny_program; static) */
    uint16_t ipc_bpf_len;
    const void *others_bpf;      /* stacked on bpf where the sandbox has no pid namespace
                                    (sc_others_deny_program; static) */
    uint16_t others_bpf_len;
    const void *init_bpf;        /* the pid-1 filter (shared) */
    uint16_t init_bpf_len;
    struct child_rlimit rlimits[CHILD_MAX_RLIMITS];
    size_t nrlimits;
    /* The sandbox's share of the per-user kernel counts its user namespace
     * draws from its owner's budget (LX_UC_*; 0: left alone): forgeyard-init
     * writes them to its namespace's /proc/sys/user before the workload. */
    uint32_t ucount_max[LX_NUCOUNTS];
    /* The private devpts instance's max= (lx_pty_cap; 0: no private
     * terminals): limits.kernel_counts.ptys. */
    uint32_t pty_max;
    /* the command */
    char **argv;                 /* borrowed from the neutral plan */
    char **envp;                 /* NULL-terminated; secrets are added per start */
    size_t nenv;
    const char *path_search;     /* PATH used to find argv[0] when it has no '/' */
    /* tests: an injected failure of the nth occurrence of a setup step */
    uint32_t fault_step, fault_nth;
    uint32_t delay_stage;        /* qualification: a controlled delay inside one stage */
    uint64_t delay_usec;
    /* resources */
    struct cg_plan cg;
    const char *watch_dirs[2 + POLICY_MAX_BINDS]; /* writable host-backed dirs (disk watchdog) */
    size_t nwatch;
    uint64_t disk_quota, files_quota;             /* FY_UNLIMITED: none */
    uint64_t upper_quota;                         /* overlay_disk: tmp_size for the attempt's upper dir; 0: none */
    uint32_t cpus;               /* CPUs the workload's affinity is limited to (0: all) */
    /* what the result reports */
    char *isolation_json;
    char *cgroup_json;           /* which mechanism enforces which limit */
    const char *io_unapplied;    /* why the io limit the selection enforced has nothing to act on
                                    (linux_plan_unapplied), or NULL */
    struct json_t *devices_doc;  /* the device allowlist and the leases (isolation.devices), or NULL */
    const struct fy_plan *np;    /* the platform-neutral plan this was compiled from */
    const void *ext;             /* the OCI runtime adapter's additions (linux-runc.c), else NULL */
    char *describe_json;         /* linux_plan_describe, built once on first use */
    /* every allocation of the plan, freed together */
    struct arena arena;
};

/* The isolation record's "init": forgeyard-init executed (no host memory
 * inside the sandbox), or the fallback, a fork of the host. */
#define LX_INIT_EXEC "forgeyard-init (executed: no host memory in the sandbox)"
#define LX_INIT_FORK "fork of the host process (copy-on-write)"

/* Whether this process holds CAP_SYS_ADMIN (root's unshare(CLONE_NEWIPC)
 * without a user namespace, the process level's one namespace). */
bool lx_may_sys_admin(void);
/* Namespaces of clone_flags the child creates itself (unshare) rather than
 * clone: the network one while the host makes its cgroups, the cgroup one
 * once it has been placed in them. */
#define LX_CHILD_UNSHARES (CLONE_NEWNET | CLONE_NEWCGROUP)

/* At most this many image layers (each one an fd while the overlay is mounted). */
#define LX_MAX_LAYERS 128

/* At most this many fds come with a go-ahead (the v1 cgroups' tasks files). */
#define LX_GO_MAX_FDS 8

/* Per-start data for the child: fds and the envp with secrets. Lives in
 * the parent; the child sees its copy-on-write copy. */
struct child_args {
    const struct linux_plan *plan;
    int sync_fd;                 /* read: the parent's go-ahead after mapping ids */
    int status_fd;               /* write: struct child_msg */
    int notify_sock;             /* seccomp listener goes to the parent here (-1: none) */
    int stdio[3];                /* what becomes 0, 1, 2 */
    char **envp;                 /* plan envp + secret variables */
    const struct child_secret *secrets;
    size_t nsecrets;
    int stdin_secret;            /* index of the stdin secret or -1 */
    const char *workdir;         /* process mode: the per-attempt directory (else plan->workdir) */
    const char *secrets_dir;     /* process mode: where secret files go (else /run/secrets) */
    uint32_t fault_count;        /* tests: occurrences of plan->fault_step so far */
    pid_t owner_pid;             /* the host process (signals from the library come from it) */
    int owner_pidfd;             /* a pidfd of the host process (readable once it exited, however
                                    many forked copies hold sync_fd), or -1 (no pidfd_open) */
    bool prestarted;             /* a pre-started shell claimed (linux-shell.c): its ids are mapped */
    bool netns_made;             /* ... and it made the network namespace (lo up), which we are in */
    bool netns_host;             /* the host cloned us into a network namespace it made and owns
                                    (restricted as root: lxn_direct); nothing to make or send */
};

/* CPUs to pin the workload to (the CPU quota made visible); in linux-child. */

struct child_secret {
    const char *file;            /* name under /run/secrets, or NULL */
    const unsigned char *value;
    size_t len;
};

/* linux-child.c: runs in the cloned child (or forgeyard-init); never returns. */
__attribute__((noreturn)) void linux_child_main(const struct child_args *a);
/* Tests only (0 otherwise): non-zero makes every bind take the classic
 * mount(2) fallback, as if open_tree had failed with ENOSYS. It reaches
 * pid 1 only where pid 1 is a copy of the host (policy_test_copy_init):
 * forgeyard-init has its own copy, always 0. */
extern int lx_test_no_mount_api;

/* What linux_clone_exec_init's child needs to execute forgeyard-init: fds
 * to keep across the exec (all CLOEXEC in the host), the program's memfd,
 * its argv (argv[2] names err_fd), and a pipe that gets one int: errno if
 * the exec failed (the child then exits 125), 0 from forgeyard-init once it
 * runs. End of file without it: the child died (a host seccomp filter that
 * kills on execveat, say). */
#define LX_EXEC_INIT_MAX_KEEP 8
struct exec_init {
    int init_fd;
    int keep[LX_EXEC_INIT_MAX_KEEP];
    size_t nkeep;
    char *const *argv;
    int err_fd;
    uint64_t ambient;  /* the capabilities kept across the exec (those held) */
    bool used_clone3;  /* out: false when clone3 was missing and clone(2) served */
};
/* What forgeyard-init and the workload process need of their user
 * namespace's capabilities before they drop them: mounts, namespaces and
 * the host name (SYS_ADMIN), lo (NET_ADMIN), ids (SETUID, SETGID), the
 * bounding set and securebits (SETPCAP), signals to the tree (KILL),
 * files of the new root (CHOWN, DAC_*, FOWNER, FSETID), and the user
 * namespace's own limits of kernel counts (SYS_RESOURCE). Nothing else is
 * kept across init's exec: each capability costs a credential change. */
#define LX_INIT_CAPS                                                                                            \
    ((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) | (1ULL << CAP_FOWNER) | \
     (1ULL << CAP_FSETID) | (1ULL << CAP_KILL) | (1ULL << CAP_SETGID) | (1ULL << CAP_SETUID) |                  \
     (1ULL << CAP_SETPCAP) | (1ULL << CAP_NET_ADMIN) | (1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_SYS_RESOURCE))
struct fy_clone_args;
/* clone3 with ca (which must include CLONE_VM | CLONE_VFORK and no stack),
 * or clone(2) where clone3 is refused; the child executes forgeyard-init.
 * Like clone3: the pid, or -1. */
pid_t linux_clone_exec_init(struct fy_clone_args *ca, struct exec_init *e);
/* The counterpart of lx_send_fds: the byte (or -1 at end of file or on an
 * error), the fds (CLOEXEC) in fds[0..*n), *truncated if more came than max. */
int lx_recv_fds(int sock, int *fds, size_t max, size_t *n, bool *truncated);
/* Every signal to its default disposition, and all blocked (the sandbox's
 * init, before anything else). */
void lx_default_signals(void);
/* Puts back what the caller's process carries that no policy declares and
 * that would follow every process forked from here (linux-child.c: a
 * real-time policy, a raised priority or I/O class, the personality, a
 * negative oom_score_adj, timer slack, THP off, KSM on): 0, or -errno.
 * Every first process of a sandbox calls it: a cold init, a pre-started
 * shell, the runc adapter's middle process. */
int lx_reset_inherited(void);
/* Whether owner_pidfd (a pidfd of the host process; -1: none, always false)
 * is readable: the host's thread group exited. */
bool lx_owner_gone(int owner_pidfd);
/* A pidfd of the calling process (>= 3, CLOEXEC), or -1 where pidfd_open is
 * missing (Linux < 5.3): the sandbox then learns of the host's death only
 * from the end of its socket, which a fork(2) of the host keeps open. */
int lx_owner_pidfd(void);
/* A new network namespace for the calling process, lo up: an fd of it, or
 * -errno. */
int lx_netns_new(void);
/* One byte and up to LX_GO_MAX_FDS + 1 fds (SCM_RIGHTS) on a socket: 0, or
 * -1 and errno (the go-aheads, the network namespace's fd). */
int lx_send_fds(int sock, char byte, const int *fds, size_t n);
#include "linux-probe-init.h"

/* linux-spawn*.c: the backend's run operations (see struct fy_backend_ops). */
int linux_compile(const struct fy_plan *plan, const fy_caps *caps, void **ret, fy_error **reterr);
void linux_plan_free_hook(void *plan);
const char *linux_plan_describe(const void *plan);
/* The backend op unapplied (backend.h): what the selection enforced that this plan cannot apply. */
const char *linux_plan_unapplied(const void *plan, uint32_t control);
int linux_plan_workload_ids(const void *plan, uint32_t *uid, uint32_t *gid);
/* Whether the plan mounts an action's execution root as an overlay (MK_OVERLAY). */
bool linux_plan_build_overlaid(const void *plan);
int lx_start(fy_handle *h, fy_error **reterr);
/* Pre-started shells (linux-shell.c; the ops of backend.h). */
int lx_start_shell(fy_handle *h, void *shell, fy_error **reterr);
int linux_shell_make(const void *plan, uint32_t idle_ms, void **ret, fy_error **reterr);
bool linux_shell_fits(const void *shell, const void *plan);
bool linux_shell_gone(void *shell);
uint32_t lx_shell_discard(void *shell);
void linux_shell_forget(void *shell);
int lx_process(fy_handle *h, fy_error **reterr);
void lx_terminate(fy_handle *h);
void lx_destroy(fy_handle *h);
void lx_forget(fy_handle *h);
int lx_get_fd(fy_handle *h);
int lx_stdio_fd(fy_handle *h, uint32_t stream);
uint64_t lx_next_deadline(fy_handle *h);

/* linux-plan.c */
int linux_plan_compile(const struct fy_plan *plan, const fy_caps *caps, struct linux_plan **ret, fy_error **reterr);
void linux_plan_free(struct linux_plan *plan);

#endif
