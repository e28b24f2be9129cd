/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A device list's rules and its cgroup v2 device program
 * (BPF_PROG_TYPE_CGROUP_DEVICE, libbpf loaded on first use): what the
 * library (linux-devices.c) and the privileged helper (forgeyard-sandbox-
 * helper(8), which links nothing else of the library) share. */
#ifndef FY_LINUX_DEVPROG_H
#define FY_LINUX_DEVPROG_H

#include <stddef.h>
#include <stdint.h>

/* Access bits: the kernel's BPF_DEVCG_ACC_* values. */
#define LX_DEV_MKNOD 1u
#define LX_DEV_READ  2u
#define LX_DEV_WRITE 4u
#define LX_DEV_ANY   UINT32_MAX  /* any major or minor */

struct lx_dev_rule {
    char type;        /* 'c' or 'b' */
    uint8_t access;   /* LX_DEV_* */
    uint32_t major, minor;
};

/* The BPF program for rules (tests and lx_dev_apply): how many
 * instructions were written to out (struct bpf_insn[max]), 0 when max is
 * too small. */
size_t lx_dev_bpf_compile(const struct lx_dev_rule *rules, size_t n, void *out, size_t max);

/* Loads the program for rules and attaches it to the v2 cgroup dir
 * (BPF_F_ALLOW_MULTI: an ancestor's program still applies; the cgroup keeps
 * it until it is removed). Needs CAP_SYS_ADMIN (or CAP_BPF) and
 * CAP_NET_ADMIN. 0, or -errno with what failed in why (-ENOSYS: no libbpf). */
/* A reason into why (len bytes; nothing when why is NULL), for the device
 * code of the library and the helper. */
void lx_dev_whyf(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int lx_dev_bpf_attach(const char *dir, const struct lx_dev_rule *rules, size_t n, char *why, size_t whylen);

#endif
