/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The VM backend's pre-started shells: clones restored ahead of a claim. */
#ifndef FY_VM_SHELL_H
#define FY_VM_SHELL_H

#include "vm-run.h"
#include "vm-template.h"

/* A pre-started clone (fy_shells_new(3); vm-shell.c): a fresh QEMU in its
 * namespace sandbox that restored the plan's template, its digest checked,
 * the guest told its idle limit (VMP_IDLE) and sent nothing else. Its 9p
 * exports are one empty stub directory (dir), the attempt's directories
 * attached in its VMP_SHARE_SUB at the claim (the Linux folder's
 * sandbox_attach); it holds no host path, plan, secret or byte of any
 * attempt before that. */
struct vm_shell {
    fy_handle *vmm;               /* QEMU's sandbox */
    int sock, console_fd;         /* the control port, the console's pipe */
    char dir[4096];               /* the stub, bound at every /fy/mN */
    struct vm_kernel k;
    struct vm_template tmpl;      /* what it restored (fd closed) */
    char key[65];                 /* the template key it was made for */
    size_t nmounts;
    uint64_t wall;                /* the longest attempt its sandbox's limit covers (usec or FY_UNLIMITED) */
    char *state_dir;              /* where its sandbox is recorded (NULL: the default) */
    uint64_t made_usec;           /* CLOCK_MONOTONIC */
    int qmp;                      /* restricted: its monitor, kept for the claim (the tap), or -1 */
};
int vm_shell_make(const void *plan, uint32_t idle_ms, void **ret, fy_error **reterr);
bool vm_shell_fits(const void *shell, const void *plan);
bool vm_shell_gone(void *shell);
uint32_t vm_shell_discard(void *shell);
void vm_shell_forget(void *shell);
/* vm-run.c: the attempt started in a claimed clone, consumed either way. */
int vm_start_shell(fy_handle *h, void *shell, fy_error **reterr);

#endif
