/* Compile-check shim (Linux): the process-table parts of macOS's
 * <sys/sysctl.h> that lib/apple/ uses (struct kinfo_proc reduced to the
 * members read). Never linked. */
#ifndef FY_SHIM_SYS_SYSCTL_H
#define FY_SHIM_SYS_SYSCTL_H
#include <stddef.h>
#include <sys/types.h>
#define CTL_KERN 1
#define KERN_PROC 14
#define KERN_PROC_PGRP 2
#define KERN_PROC_UID 5
#define SZOMB 5
struct extern_proc {
    pid_t p_pid;
    char p_stat;
};
struct eproc {
    pid_t e_pgid;
};
struct kinfo_proc {
    struct extern_proc kp_proc;
    struct eproc kp_eproc;
};
int sysctl(int *name, unsigned int namelen, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
#endif
