/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: the sandbox policy builder. */
#ifndef FORGEYARD_FY_POLICY_H
#define FORGEYARD_FY_POLICY_H

#include "fy-common.h"
#include "fy-error.h"

/* Profiles: the defaults a policy starts from. */
#define FY_PROFILE_DEVELOPMENT     1  /* impure: host network and toolchain allowed, labelled so */
#define FY_PROFILE_STANDARD_CI     2
#define FY_PROFILE_RELEASE         3  /* strict fs, network denied, no host HOME */
#define FY_PROFILE_HIGH_ASSURANCE  4  /* requires a virtual machine */

/* Controls: each is off, preferred (dropped visibly when the host cannot
 * give it) or required (fy_prepare fails when the host cannot give it). */
#define FY_CONTROL_USERNS        1
#define FY_CONTROL_MOUNTNS       2
#define FY_CONTROL_PIDNS         3
#define FY_CONTROL_NETNS         4
#define FY_CONTROL_IPCNS         5
#define FY_CONTROL_UTSNS         6
#define FY_CONTROL_CGROUPNS      7
#define FY_CONTROL_SECCOMP       8
#define FY_CONTROL_LANDLOCK      9
#define FY_CONTROL_MEMORY_LIMIT  10
#define FY_CONTROL_PIDS_LIMIT    11
#define FY_CONTROL_CPU_LIMIT     12
#define FY_CONTROL_IO_LIMIT      13
#define FY_CONTROL_UID_RANGE     14  /* workload mapped away from the caller's own uid */
#define FY_CONTROL_HW_VIRT       15  /* 0.2: a virtual machine run with hardware virtualization (KVM),
                                        not emulated (TCG); only a VM backend can enforce it */
#define FY_CONTROL_DEVICES       16  /* 0.2: the kernel's device allowlist (device cgroup): only the
                                        standard nodes and the leased ones may be opened; required
                                        whenever a device is leased (fy_policy_add_device) */
#define FY_CONTROL_COLD_BOOT     19  /* 0.2: a fresh guest kernel booted for every attempt, never a
                                        restored template; only a VM backend can enforce it */
#define FY_CONTROL_LOW_INTEGRITY 20  /* 0.2: the workload runs at low mandatory integrity (Windows'
                                        integrity levels): it cannot write an object labelled medium
                                        or higher, whatever that object's ACL grants; only the
                                        windows-job backend can enforce it */
#define FY_CONTROL_MAX_          20  /* not a control (17 and 18 are not controls either) */

#define FY_MODE_OFF      0
#define FY_MODE_PREFER   1
#define FY_MODE_REQUIRE  2

/* Resource limits (fy_policy_set_limit). FY_UNLIMITED means no limit. */
#define FY_LIMIT_CPU_MILLIS     1   /* CPU quota in thousandths of a CPU */
#define FY_LIMIT_MEMORY         2   /* bytes */
#define FY_LIMIT_MEMORY_SWAP    3   /* bytes of swap on top of memory (default 0) */
#define FY_LIMIT_PIDS           4   /* tasks in the sandbox */
#define FY_LIMIT_DISK           5   /* bytes written to writable host-backed dirs */
#define FY_LIMIT_FILES          6   /* files created in writable host-backed dirs */
#define FY_LIMIT_NOFILE         7   /* RLIMIT_NOFILE */
#define FY_LIMIT_FSIZE          8   /* RLIMIT_FSIZE, bytes */
#define FY_LIMIT_STACK          9   /* RLIMIT_STACK, bytes */
#define FY_LIMIT_CORE           10  /* RLIMIT_CORE, bytes (default 0) */
#define FY_LIMIT_WALL_TIME      11  /* microseconds */
#define FY_LIMIT_GRACE          12  /* microseconds between soft terminate and hard kill */
#define FY_LIMIT_OUTPUT         13  /* bytes of captured stdout+stderr */
#define FY_LIMIT_TMP_SIZE       14  /* bytes: /tmp tmpfs */
#define FY_LIMIT_WORK_TMP_SIZE  15  /* bytes: /work/tmp tmpfs */
#define FY_LIMIT_HOME_SIZE      16  /* bytes: /home/forgeyard tmpfs */
#define FY_LIMIT_SHM_SIZE       17  /* bytes: /dev/shm tmpfs */
#define FY_LIMIT_IO_BPS         18  /* bytes/s read+write on the build device (io.max) */
#define FY_LIMIT_MAX_           18  /* not a limit */

/* Network modes. */
#define FY_NET_DENY        1  /* own network namespace, loopback only */
#define FY_NET_FETCH_ONLY  2  /* egress only through a library proxy with an allowlist */
#define FY_NET_RESTRICTED  3  /* egress to the listed destinations only */
#define FY_NET_ALLOW       4  /* host network: impure, labelled so */

/* DNS inside the sandbox. */
#define FY_DNS_NONE        1  /* no resolver configured */
#define FY_DNS_HOST        2  /* the host's resolvers (only where egress allows them) */

/* Host settings of the network modes restricted and fetch-only
 * (fy_policy_set_network_host): host plumbing, not part of policy JSON. */
#define FY_NETHOST_UPLINK       1  /* network namespace file (/run/netns/NAME) the per-attempt router's
                                      uplink is created in; NULL: the host's own namespace */
#define FY_NETHOST_HOSTS_FILE   2  /* a file in /etc/hosts format that resolves destination names at
                                      fy_prepare instead of the host's resolver */
#define FY_NETHOST_LINK_SUBNET  3  /* IPv4 block (a /16 to a /24) the router's uplink links take a /30
                                      from; NULL: 100.127.0.0/16 */
#define FY_NETHOST_CREDENTIALS  4  /* fetch-only: a file (mode 0600) of lines "HOST:PORT Name: value" whose
                                      header the proxy adds to plain-HTTP requests to that destination; never
                                      visible inside the sandbox */
#define FY_NETHOST_MAX_         4  /* not a setting */

/* Destination protocols (fy_policy_add_destination). */
#define FY_PROTO_TCP  1
#define FY_PROTO_UDP  2

/* Bind flags (fy_policy_add_bind). */
#define FY_BIND_READ_ONLY  0u
#define FY_BIND_WRITABLE   (1u << 0)
#define FY_BIND_OPTIONAL   (1u << 1)  /* skip when the host path does not exist */

/* Who the workload runs as inside. */
#define FY_USER_SANDBOX    1  /* the unprivileged `forgeyard` user, HOME=/home/forgeyard */
#define FY_USER_FAKE_ROOT  2  /* uid 0 inside the user namespace, no host privilege */

/* Seccomp workload classes. */
#define FY_SECCOMP_GENERAL_BUILD  1
#define FY_SECCOMP_NETWORKED_TEST 2

/* Secret delivery. */
#define FY_SECRET_ENV    1  /* target: environment variable name */
#define FY_SECRET_FILE   2  /* target: file name under /run/secrets */
#define FY_SECRET_STDIN  3  /* target: NULL; at most one secret per policy */

/* Standard streams (fy_policy_set_stdio). */
#define FY_STDIN   0
#define FY_STDOUT  1
#define FY_STDERR  2

#define FY_STDIO_NULL  1  /* /dev/null: the default for all three */
#define FY_STDIO_FD    2  /* a host file descriptor, duplicated by the call */
#define FY_STDIO_PIPE  3  /* a pipe; the host end is fy_handle_get_stdio_fd() (stdin's is handed
                             over to the caller, who closes it to send end-of-file) */
#define FY_STDIO_FILE  4  /* stdout/stderr: spooled by the library into a new host
                             file (created 0600, must not exist), capped by FY_LIMIT_OUTPUT */
#define FY_STDIO_CALLBACK 5 /* stdout/stderr: read by the library as fy_handle_process runs and
                               handed, live, to a callback (fy_policy_set_stdio_callback),
                               counted and capped by FY_LIMIT_OUTPUT */

/* Device classes (GPU, USB) policy. */
#define FY_DEVICES_DENY    1
#define FY_DEVICES_LEASED  2  /* only devices leased with fy_policy_add_device */
#define FY_DEVICES_PRIVATE 3  /* pseudo-terminals (fy_policy_set_pty): an instance of the
                                 sandbox's own (/dev/pts, /dev/ptmx), never the host's */

FY_BEGIN_DECLS

/* A mutable policy builder. One thread at a time. Inputs are copied. */
typedef struct fy_policy fy_policy;

FY_API int  fy_policy_new(uint32_t profile, fy_policy **ret, fy_error **reterr);
FY_API void fy_policy_free(fy_policy *policy);

/* Applies a JSON policy document (man forgeyard-policy(5)) on top of the
 * policy: all or nothing. A "profile" key first resets the policy to that
 * profile's defaults, keeping the host-set level floor. */
FY_API int fy_policy_load_json(fy_policy *policy, const char *json, size_t len, fy_error **reterr);
/* Canonical JSON (sorted keys, every field, no secret values). */
FY_API int fy_policy_to_json(const fy_policy *policy, char **ret_json, fy_error **reterr);
/* Cross-field validation of the whole policy. */
FY_API int fy_policy_validate(const fy_policy *policy, fy_error **reterr);

/* Isolation. */
FY_API int fy_policy_set_isolation(fy_policy *policy, uint32_t min_level, uint32_t preferred_level, fy_error **reterr);
/* Organization minimum set by the host program: nothing may ask for less. */
FY_API int fy_policy_set_level_floor(fy_policy *policy, uint32_t level, fy_error **reterr);
FY_API int fy_policy_set_control(fy_policy *policy, uint32_t control, uint32_t mode, fy_error **reterr);

/* Filesystem. Host paths must be absolute and free of "." and ".." parts. */
FY_API int fy_policy_set_source(fy_policy *policy, const char *host_path, int writable, fy_error **reterr);
FY_API int fy_policy_set_build(fy_policy *policy, const char *host_path, fy_error **reterr);
FY_API int fy_policy_set_output(fy_policy *policy, const char *host_path, fy_error **reterr);
FY_API int fy_policy_add_toolchain(fy_policy *policy, const char *name, const char *host_path, fy_error **reterr);
FY_API int fy_policy_add_bind(fy_policy *policy, const char *host_path, const char *target, uint32_t flags, fy_error **reterr);
/* Approved host runtime path, mounted read-only at the same place. */
FY_API int fy_policy_add_runtime_path(fy_policy *policy, const char *path, fy_error **reterr);
FY_API int fy_policy_set_workdir(fy_policy *policy, const char *path, fy_error **reterr);
FY_API int fy_policy_set_hostname(fy_policy *policy, const char *hostname, fy_error **reterr);
/* Runs the command in a container image (isolation level CONTAINER):
 * "oci:DIR@sha256:...", "oci-archive:FILE@sha256:..." or
 * "docker-archive:FILE[@sha256:...]"; NULL removes it. The release and
 * high-assurance profiles refuse a reference without a digest. */
FY_API int fy_policy_set_image(fy_policy *policy, const char *ref, fy_error **reterr);
/* Runs the container image through an external OCI runtime ("runc"), never
 * chosen otherwise; NULL goes back to the library's own machinery. Only a
 * backend of that runtime is selected, and only when the probe found it
 * usable. A runtime with known unfixed vulnerabilities (the probe says
 * which) is refused unless flags has FY_RUNTIME_ACCEPT_KNOWN_ISSUES. */
#define FY_RUNTIME_ACCEPT_KNOWN_ISSUES (1u << 0)
FY_API int fy_policy_set_runtime(fy_policy *policy, const char *name, uint32_t flags, fy_error **reterr);

/* Environment: cleared by default. */
FY_API int fy_policy_set_env(fy_policy *policy, const char *name, const char *value, fy_error **reterr);
FY_API int fy_policy_unset_env(fy_policy *policy, const char *name, fy_error **reterr);
/* Pass a variable through from the host environment at fy_prepare time. */
FY_API int fy_policy_allow_env(fy_policy *policy, const char *name, fy_error **reterr);

/* Network. */
FY_API int fy_policy_set_network(fy_policy *policy, uint32_t mode, fy_error **reterr);
FY_API int fy_policy_set_dns(fy_policy *policy, uint32_t dns, fy_error **reterr);
/* host: a host name, an IPv4/IPv6 address or a CIDR block. */
FY_API int fy_policy_add_destination(fy_policy *policy, const char *host, uint32_t proto,
                                     uint32_t port_min, uint32_t port_max, fy_error **reterr);
/* A host setting of the network modes that reach destinations (FY_NETHOST_*);
 * value NULL restores the default. */
/* 0.2: this attempt is member (a host name label) of a job network: the
 * policy's network.job.member. Needs network mode deny and a plan of
 * fy_prepare_member(3); NULL: not a member. */
FY_API int fy_policy_set_job_member(fy_policy *policy, const char *member, fy_error **reterr);
FY_API int fy_policy_set_network_host(fy_policy *policy, uint32_t setting, const char *value, fy_error **reterr);

/* Resources. */
FY_API int fy_policy_set_limit(fy_policy *policy, uint32_t limit, uint64_t value, fy_error **reterr);
FY_API int fy_policy_get_limit(const fy_policy *policy, uint32_t limit, uint64_t *ret_value);

/* Process. */
FY_API int fy_policy_set_user(fy_policy *policy, uint32_t user, fy_error **reterr);
FY_API int fy_policy_set_seccomp_class(fy_policy *policy, uint32_t seccomp_class, fy_error **reterr);
/* Host uid/gid range the workload is mapped into when the caller is root. */
FY_API int fy_policy_set_id_range(fy_policy *policy, uint32_t first_id, uint32_t count, fy_error **reterr);

/* Devices. */
FY_API int fy_policy_add_device(fy_policy *policy, const char *host_path, int writable, fy_error **reterr);
FY_API int fy_policy_set_gpu(fy_policy *policy, uint32_t devices_mode, fy_error **reterr);
/* A scheduler's platform property (OSFamily, ISA, sandbox-level, network,
 * dockerNetwork, Pool: forgeyard-action(5)) as a requirement: it can only
 * make the policy stricter; an unknown one, or one asking for more than the
 * policy allows, is FY_E_UNSUPPORTED naming it ("$.platform.NAME"). */
FY_API int fy_policy_set_platform_property(fy_policy *policy, const char *name, const char *value,
                                           fy_error **reterr);
FY_API int fy_policy_set_usb(fy_policy *policy, uint32_t devices_mode, fy_error **reterr);
/* Pseudo-terminals: FY_DEVICES_DENY (the default) or FY_DEVICES_PRIVATE. */
FY_API int fy_policy_set_pty(fy_policy *policy, uint32_t devices_mode, fy_error **reterr);

/* Secrets. The value is copied into library memory that is wiped when the
 * policy (and everything made from it) is freed; it never appears in JSON,
 * errors or results. */
FY_API int fy_policy_add_secret(fy_policy *policy, const char *name, uint32_t delivery, const char *target,
                                const void *value, size_t len, fy_error **reterr);
/* A secret read from a host file at fy_prepare time. */
FY_API int fy_policy_add_secret_file(fy_policy *policy, const char *name, uint32_t delivery, const char *target,
                                     const char *host_path, fy_error **reterr);

/* Standard streams of the workload. Not part of policy files (they are the
 * host program's plumbing): canonical JSON leaves them out. fd is used with
 * FY_STDIO_FD (duplicated with O_CLOEXEC; the caller keeps its own), path
 * with FY_STDIO_FILE; the other argument must be -1 / NULL. */
FY_API int fy_policy_set_stdio(fy_policy *policy, uint32_t stream, uint32_t mode, int fd, const char *path,
                               fy_error **reterr);

/* Live output (FY_STDIO_CALLBACK): data and len are a chunk of the
 * workload's stream (FY_STDOUT or FY_STDERR) as the library read it,
 * borrowed for the call; a last call with data NULL and len 0 says the
 * stream ended. Called on the thread in fy_handle_process or
 * fy_handle_wait, never concurrently for one handle; it may call
 * fy_handle_cancel, no other function of the same handle. */
typedef void (*fy_output_fn)(void *userdata, uint32_t stream, const void *data, size_t len);
/* Connects stdout or stderr to fn (mode FY_STDIO_CALLBACK). fn NULL sets
 * the stream back to FY_STDIO_NULL. Host plumbing: not in policy files. */
FY_API int fy_policy_set_stdio_callback(fy_policy *policy, uint32_t stream, fy_output_fn fn, void *userdata,
                                        fy_error **reterr);

/* Where live sandboxes are recorded so that fy_gc can destroy the orphans
 * of a crashed host program. NULL selects the default
 * (/run/forgeyard-sandbox as root, $XDG_RUNTIME_DIR/forgeyard-sandbox
 * otherwise). Host plumbing: not part of policy files. */
FY_API int fy_policy_set_state_dir(fy_policy *policy, const char *dir, fy_error **reterr);

/* "userns", "memory-limit", ... (the keys of isolation.controls); NULL for
 * an unknown control. */
FY_API const char *fy_control_name(uint32_t control);
/* "development", "standard-ci", ...; NULL for an unknown profile. */
FY_API const char *fy_profile_name(uint32_t profile);
/* Parses a profile name; returns the FY_PROFILE_* value or FY_E_NOTFOUND. */
FY_API int fy_profile_from_name(const char *name);

FY_END_DECLS

#endif
