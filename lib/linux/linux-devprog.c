/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup v2 device program (BPF_PROG_TYPE_CGROUP_DEVICE) of a device
 * list: compiled here from the rules (raw instructions, no BPF toolchain),
 * loaded and attached with libbpf, which is loaded on first use (lazy.h).
 * Shared by the library (linux-devices.c) and the privileged helper
 * (helper/fyh-main.c), so it includes nothing of the library's core. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "lazy.h"

#include "linux-devprog.h"

void lx_dev_whyf(char *why, size_t len, const char *fmt, ...) {
    if (!why || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* ---- cgroup v2 device program ---- */

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define LDX_W(d, s, o)      INSN(BPF_LDX | BPF_W | BPF_MEM, d, s, o, 0)
#define MOV_REG(d, s)       INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_IMM(d, i)       INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define AND_IMM(d, i)       INSN(BPF_ALU64 | BPF_AND | BPF_K, d, 0, 0, i)
#define RSH_IMM(d, i)       INSN(BPF_ALU64 | BPF_RSH | BPF_K, d, 0, 0, i)
#define JNE_IMM(d, i, o)    INSN(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, i)
#define EXIT()              INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* struct bpf_cgroup_dev_ctx { u32 access_type (access << 16 | type); u32
 * major; u32 minor; }. r2 = type, r3 = access, r4 = major, r5 = minor;
 * each rule is a block that returns 1 (allow) when it matches and jumps
 * to the next block otherwise; past the last, 0 (deny). */
size_t lx_dev_bpf_compile(const struct lx_dev_rule *rules, size_t n, void *out, size_t max) {
    struct bpf_insn *p = out;
    size_t k = 0;
#define EMIT(x)                 \
    do {                        \
        if (k >= max)           \
            return 0;           \
        p[k++] = (x);           \
    } while (0)
    EMIT(LDX_W(BPF_REG_2, BPF_REG_1, 0));
    EMIT(MOV_REG(BPF_REG_3, BPF_REG_2));
    EMIT(AND_IMM(BPF_REG_2, 0xffff));
    EMIT(RSH_IMM(BPF_REG_3, 16));
    EMIT(LDX_W(BPF_REG_4, BPF_REG_1, 4));
    EMIT(LDX_W(BPF_REG_5, BPF_REG_1, 8));
    for (size_t i = 0; i < n; i++) {
        const struct lx_dev_rule *r = &rules[i];
        int32_t type = r->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
        /* Block length: type test, major test, minor test, access test (3),
         * allow (2). A failed test jumps over what is left of the block. */
        int len = 1 + (r->major != LX_DEV_ANY) + (r->minor != LX_DEV_ANY) + 3 + 2;
        int left = len - 1;
        EMIT(JNE_IMM(BPF_REG_2, type, (int16_t)left));
        if (r->major != LX_DEV_ANY) {
            left--;
            EMIT(JNE_IMM(BPF_REG_4, (int32_t)r->major, (int16_t)left));
        }
        if (r->minor != LX_DEV_ANY) {
            left--;
            EMIT(JNE_IMM(BPF_REG_5, (int32_t)r->minor, (int16_t)left));
        }
        /* Every access asked for must be allowed: (access & ~allowed) == 0. */
        EMIT(MOV_REG(BPF_REG_1, BPF_REG_3));
        EMIT(AND_IMM(BPF_REG_1, (int32_t)(~(uint32_t)r->access & 7u)));
        left -= 2;
        EMIT(JNE_IMM(BPF_REG_1, 0, (int16_t)(left - 1)));
        EMIT(MOV_IMM(BPF_REG_0, 1));
        EMIT(EXIT());
    }
    EMIT(MOV_IMM(BPF_REG_0, 0));
    EMIT(EXIT());
#undef EMIT
    return k;
}

int lx_dev_bpf_attach(const char *dir, const struct lx_dev_rule *rules, size_t n, char *why, size_t whylen) {
    if (lazy_open(&lazy_bpf) < 0) {
        lx_dev_whyf(why, whylen, "libbpf cannot be loaded: %s", lazy_bpf.why);
        return -ENOSYS;
    }
    size_t max = 8 + n * 9;
    struct bpf_insn *insns = calloc(max, sizeof(*insns));
    if (!insns) {
        lx_dev_whyf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    size_t cnt = lx_dev_bpf_compile(rules, n, insns, max);
    char log[1024] = "";
    struct bpf_prog_load_opts opts; /* what LIBBPF_OPTS() makes: zeroed, sized */
    memset(&opts, 0, sizeof(opts));
    opts.sz = sizeof(opts);
    opts.log_buf = log;
    opts.log_size = sizeof(log);
    int prog = cnt ? bpf_prog_load(BPF_PROG_TYPE_CGROUP_DEVICE, "fy_devices", "GPL", insns, cnt, &opts) : -E2BIG;
    free(insns);
    if (prog < 0) {
        int e = prog == -1 ? errno : -prog;
        lx_dev_whyf(why, whylen, "loading a device program (BPF_PROG_TYPE_CGROUP_DEVICE): %s%s%s", strerror(e),
             log[0] ? ": " : "", log);
        return -e;
    }
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0) {
        int e = errno;
        close(prog);
        lx_dev_whyf(why, whylen, "opening %s: %s", dir, strerror(e));
        return -e;
    }
    /* ALLOW_MULTI: the programs of every ancestor run too, and all must
     * allow; the cgroup keeps the program until it is removed. */
    int r = bpf_prog_attach(prog, cg, BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI);
    int e = r < 0 ? (r == -1 ? errno : -r) : 0;
    close(cg);
    close(prog);
    if (e) {
        lx_dev_whyf(why, whylen, "attaching the device program to %s: %s", dir, strerror(e));
        return -e;
    }
    return 0;
}

