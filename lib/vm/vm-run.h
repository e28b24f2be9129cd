/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The QEMU microvm backend's plan and attempt (vm-run.c, vm-plan.c). */
#ifndef FY_VM_RUN_H
#define FY_VM_RUN_H

#include "backend.h"
#include "vm-image.h"
#include "vm-proto.h"

struct vm_mount { const char *host, *target; bool writable; };

/* A single host file the guest gets copied into its initramfs (a runtime
 * file, or a read-only bind of a file: 9p shares directories) is at most
 * this large. */
#define VM_FILE_COPY_MAX (UINT64_C(8) << 20)

struct vm_plan {
    const struct fy_plan *np;     /* borrowed: outlives this plan */
    struct vm_kernel k;
    bool kvm;
    /* The VMM's own limits on the host that this caller's namespace
     * sandbox can enforce (cgroup memory, pids, cpu): only those are
     * claimed (isolation.host_bounds) and required of the VMM's sandbox. */
    bool host_mem, host_pids, host_cpu;
    const char *qemu;             /* owned */
    uint64_t guest_mem;           /* bytes of guest RAM */
    unsigned smp;
    struct vm_mount *mounts;      /* host dirs over 9p, read-only unless writable (owned array) */
    size_t nmounts;
    char *isolation_json, *limits_json, *describe_json;
    char *run_msg;                /* the RUN payload (owned) */
    size_t run_len;
    char *cmdline;                /* the guest kernel command line */
    bool use_template;            /* restore from a template (vm-template.c) unless it cannot be had */
    bool cold_required;           /* the policy's FY_CONTROL_COLD_BOOT: never a template */
    char template_key[65];        /* its name: SHA-256 of the inputs below */
    char *template_inputs;        /* what the key hashes (text, owned) */
    /* fetch-only: the folder offering the proxy service and its compiled
     * configuration (backend.h proxy_*); NULL under deny. */
    const struct fy_backend_family *pxf;
    void *pxcfg;
    /* restricted: the family's router service (backend.h router_*) and its
     * configuration; the guest gets a virtio-net device on its tap (nic).
     * restricted and fetch-only: the family's DNS stub (dns_*), or NULL
     * where none can run. (vm-net.c) */
    void *rtcfg;
    bool nic;
    void *dnscfg;
    const fy_caps *caps;          /* borrowed: the prepared plan's (a clone's template is made with them) */
};

/* The guest's virtio-net MAC under restricted (cold, template, restore). */
#define VM_NIC_MAC "52:54:00:66:79:02"
/* A restricted restore's monitor socket in the attempt directory. */
#define VM_QMP_SOCK "qmp"

/* How QEMU is started: a cold boot of the attempt's initramfs, the boot
 * of a template that is then saved, the restore of a template, or that
 * restore as a pre-started clone (its 9p exports stubs: vm-shell.c). */
enum { VM_BOOT_COLD, VM_BOOT_MAKE, VM_BOOT_RESTORE, VM_BOOT_SHELL };

/* QEMU in the library's own namespace sandbox (vm-run.c). */
struct vm_vmm_spec {
    const struct vm_plan *pl;
    const fy_caps *caps;
    const char *state_dir;        /* or NULL */
    int mode;                     /* VM_BOOT_* */
    const char *attempt_dir;      /* bound at /fy/a (cold boot, restricted's restore), or NULL */
    const char *token;            /* restricted's restore: QEMU's -name fy-TOKEN, its monitor's proof */
    const char *kernel_dir;       /* bound at /fy/k */
    const char *mount_stub;       /* bound at every /fy/mN instead of the plan's directories, or NULL */
    uint64_t wall;                /* usec or FY_UNLIMITED */
    int in, out, err;             /* QEMU's stdin, stdout, stderr */
};
/* The NUL-separated words of args as an argv (calloc'd; the words stay
 * args's). FY_E_NOMEM when args ran out of memory. */
int vm_argv_of(const struct strbuf *args, const char ***ret);
int vm_qemu_argv(const struct vm_plan *pl, int mode, const char *token, struct strbuf *args, const char ***ret);

/* vm-vmm-config.c: the Firecracker and cloud-hypervisor adapters'
 * configuration from the same plan (generated and unit-tested; not run:
 * neither VMM is installed on the hosts this was built on). Paths are as
 * the VMM sees them in its sandbox. */
#define VM_VSOCK_CID 3
#define VM_VSOCK_PORT 1024
struct vm_vmm_paths {
    const char *kernel, *initrd;  /* the PVH vmlinux and the initramfs */
    const char *images;           /* the directory of the read-only disk images m0.img, m1.img ... */
    const char *vsock;            /* the hybrid vsock's unix socket */
};
/* Firecracker's --config-file (JSON text, malloc'd). */
int vm_firecracker_config(const struct vm_plan *pl, const struct vm_vmm_paths *paths, char **ret);
/* cloud-hypervisor's command line (as vm_qemu_argv: argv points into args). */
int vm_cloud_hypervisor_argv(const struct vm_plan *pl, const struct vm_vmm_paths *paths, const char *program,
                             struct strbuf *args, const char ***ret);
int vm_vmm_start(const struct vm_vmm_spec *sp, fy_handle **ret, fy_error **reterr);
/* A directory of the attempts directory (its name carries this process's
 * pid and start time, for vm_gc), made with mode; and its removal with
 * what it holds (one level, and empty directories): 0 when it is gone. */
int vm_make_dir_in_attempts(char *out, size_t outlen, mode_t mode, fy_error **reterr);
int vm_remove_dir(const char *dir);
/* The control socket pair and the console pipe QEMU is started with:
 * *sock (this side; writes time out after 5 s, so a guest that stops
 * reading never blocks us) and *guest (QEMU's stdout), *console (the
 * non-blocking read end) and *console_w (QEMU's stderr, mode 0622: QEMU's
 * sandbox runs as another id). On failure nothing is left open. */
int vm_control_open(int *sock, int *guest, int *console, int *console_w, fy_error **reterr);
/* A monitor socket listening in dir (*lfd) and the random token QEMU is
 * named by (-name fy-TOKEN), which proves the peer that connects to it;
 * `what` names it in errors. */
int vm_monitor_listen(const char *dir, int *lfd, char token[33], const char *what, fy_error **reterr);



/* vm-net.c: restricted's router and the DNS stub of one attempt. */
struct vmn {
    const struct vm_plan *pl;
    void *router;                 /* pl->pxf's router_start, or NULL */
    int tap;                      /* the router's tap (until QEMU has it), or -1 */
    void *dns;                    /* the stub (dns_start), or NULL */
    int dns_sock;                 /* our end of its socketpair, or -1 */
    uint16_t orig_id[VMP_DNS_SLOTS]; /* the guest's DNS ids, by slot */
    uint8_t gen[VMP_DNS_SLOTS];
    bool busy[VMP_DNS_SLOTS];
    uint64_t dns_carried, dns_dropped;
};
void vmn_init(struct vmn *n, const struct vm_plan *pl);
/* Before QEMU starts: the router and its tap (restricted), the stub. */
int vmn_start(struct vmn *n, fy_error **reterr);
/* A guest's VMP_DNS_QUERY: handed to the stub (NULL), or why not (a
 * protocol error). */
const char *vmn_dns_query(struct vmn *n, uint16_t slot, const uint8_t *p, uint32_t len);
/* The stub's answers: each sent to the guest with send(ctx, slot, ...);
 * negative when send failed. */
int vmn_dns_pump(struct vmn *n, int (*send)(void *ctx, uint16_t slot, const void *p, size_t len), void *ctx);
/* Ends the stub and removes the router (witnessed): objects left. report:
 * the result's network record to extend (a JSON object, may be NULL). */
unsigned vmn_stop(struct vmn *n, struct json_t *report);
void vmn_forget(struct vmn *n);

/* vm-plan.c */
int vm_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr);
void vm_plan_free(void *plan);
const char *vm_describe(const void *plan);

/* vm-run.c */
int vm_start(fy_handle *h, fy_error **reterr);
int vm_process(fy_handle *h, fy_error **reterr);
void vm_terminate(fy_handle *h);
void vm_destroy(fy_handle *h);
void vm_forget(fy_handle *h);
int vm_get_fd(fy_handle *h);
int vm_stdio_fd(fy_handle *h, uint32_t stream);
uint64_t vm_next_deadline(fy_handle *h);
int vm_gc(const char *state_dir, uint64_t *destroyed, fy_error **reterr);

#endif
