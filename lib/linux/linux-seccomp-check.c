/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The self check: every program linux-seccomp.c compiles is run, before it is returned,
 * through a small classic BPF interpreter with the kernel's seccomp semantics and held to
 * the contract of linux-seccomp-profiles.c (sc_contract_action) for every number up to past
 * the table's largest, the argument classes, foreign architectures and x32; a mismatch
 * fails closed with FY_E_INTERNAL. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/audit.h>
#include <linux/filter.h>

#include <seccomp.h>

#include "linux-seccomp-internal.h"

/* ---------------------------------------------------------------------------------- */
/* a classic BPF interpreter with the kernel's seccomp semantics, for sc_self_check   */

/* Runs prog on d. Returns false when the program is malformed (a bad opcode, a jump or
 * a load out of range, falling off the end); the kernel would have refused it. */
static bool bpf_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d,
                    uint32_t *ret) {
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    size_t pc = 0;
    /* Every jump goes forward, so len steps bound the loop. */
    for (size_t steps = 0; pc < len && steps <= len; steps++) {
        const struct sock_filter *f = &prog[pc++];
        uint32_t k = f->k;
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (k > sizeof(*d) - 4 || (k & 3))
                return false;
            memcpy(&a, (const char *)d + k, 4);
            break;
        case BPF_LD | BPF_W | BPF_LEN: a = sizeof(*d); break;
        case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(*d); break;
        case BPF_LD | BPF_IMM: a = k; break;
        case BPF_LDX | BPF_IMM: x = k; break;
        case BPF_LD | BPF_MEM:
            if (k >= BPF_MEMWORDS)
                return false;
            a = mem[k];
            break;
        case BPF_LDX | BPF_MEM:
            if (k >= BPF_MEMWORDS)
                return false;
            x = mem[k];
            break;
        case BPF_ST:
            if (k >= BPF_MEMWORDS)
                return false;
            mem[k] = a;
            break;
        case BPF_STX:
            if (k >= BPF_MEMWORDS)
                return false;
            mem[k] = x;
            break;
        case BPF_MISC | BPF_TAX: x = a; break;
        case BPF_MISC | BPF_TXA: a = x; break;
        case BPF_RET | BPF_K: *ret = k; return true;
        case BPF_RET | BPF_A: *ret = a; return true;
        case BPF_JMP | BPF_JA:
            if (k >= len - pc)
                return false;
            pc += k;
            break;
        default:
            if (BPF_CLASS(f->code) == BPF_ALU) {
                uint32_t s = BPF_SRC(f->code) == BPF_X ? x : k;
                switch (BPF_OP(f->code)) {
                case BPF_ADD: a += s; break;
                case BPF_SUB: a -= s; break;
                case BPF_MUL: a *= s; break;
                case BPF_DIV:
                    if (!s)
                        return false;
                    a /= s;
                    break;
                case BPF_MOD:
                    if (!s)
                        return false;
                    a %= s;
                    break;
                case BPF_AND: a &= s; break;
                case BPF_OR: a |= s; break;
                case BPF_XOR: a ^= s; break;
                case BPF_LSH: a = s < 32 ? a << s : 0; break;
                case BPF_RSH: a = s < 32 ? a >> s : 0; break;
                case BPF_NEG: a = -a; break;
                default: return false;
                }
            } else if (BPF_CLASS(f->code) == BPF_JMP) {
                uint32_t s = BPF_SRC(f->code) == BPF_X ? x : k;
                bool t;
                switch (BPF_OP(f->code)) {
                case BPF_JEQ: t = a == s; break;
                case BPF_JGT: t = a > s; break;
                case BPF_JGE: t = a >= s; break;
                case BPF_JSET: t = (a & s) != 0; break;
                default: return false;
                }
                uint8_t off = t ? f->jt : f->jf;
                if (off >= len - pc)
                    return false;
                pc += off;
            } else {
                return false;
            }
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------------- */
/* self check                                                                         */

struct checker {
    const struct seccomp_program *prog;
    fy_error **reterr;
    uint32_t arch;
    const char *profile;
};

static int check_one(struct checker *ck, uint32_t arch, int nr, const uint64_t *args, uint32_t want,
                     const char *what) {
    struct seccomp_data d;
    memset(&d, 0, sizeof(d));
    d.nr = nr;
    d.arch = arch;
    d.instruction_pointer = 0x401000;
    for (int i = 0; i < 6; i++)
        d.args[i] = args ? args[i] : 0;
    uint32_t got = 0;
    if (!bpf_run(ck->prog->filter, ck->prog->len, &d, &got))
        return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the compiled BPF is malformed (at %s)", ck->profile,
                       what);
    /* Compare action and data; the kernel ignores nothing else. */
    if (got != want)
        return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the compiled BPF breaks the contract for %s "
                       "(nr %d, arg0 %#llx, arg1 %#llx): 0x%08x instead of 0x%08x (a libseccomp "
                       "that orders argument rules differently?)", ck->profile, what, nr,
                       (unsigned long long)(args ? args[0] : 0),
                       (unsigned long long)(args ? args[1] : 0), got, want);
    return 0;
}

/* Foreign architectures: one that exists (i386 or x86-64), and nonsense. */
static int check_foreign(struct checker *ck, uint32_t badarch) {
    int r;
    uint32_t other = ck->arch == AUDIT_ARCH_X86_64 ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64;
    if ((r = check_one(ck, other, 21, NULL, badarch, "a foreign architecture")) < 0 ||
        (r = check_one(ck, 0, 39, NULL, badarch, "architecture 0")) < 0)
        return r;
    if (ck->arch == AUDIT_ARCH_X86_64) {
        static const int x32[] = { (int)(X32_BIT | 39), (int)X32_BIT, (int)(X32_BIT | 165), 0x7fffffff };
        for (size_t i = 0; i < FY_ARRAY_SIZE(x32); i++)
            if ((r = check_one(ck, ck->arch, x32[i], NULL, badarch, "an x32 call")) < 0)
                return r;
    }
    return 0;
}

int sc_self_check(const struct seccomp_program *prog, const struct profile_actions *pa,
                  fy_error **reterr) {
    struct checker ck = { prog, reterr, seccomp_arch_native(), prog->name };
    int r;
    static const uint64_t ioctl_cmds[] = {
        TIOCSTI, TIOCLINUX, TIOCSTI | (1ULL << 32), TIOCLINUX | 0xffffffff00000000ULL, TCGETS,
        FIONREAD, TIOCSTI + 1, TIOCSTI - 1, 0xffffffffULL, 0xffffffffffffffffULL, 0,
    };
    static const uint64_t personas[] = {
        0, ADDR_NO_RANDOMIZE, 0xffffffffULL, 0xffffffffffffffffULL, 1ULL << 32,
        (1ULL << 32) | ADDR_NO_RANDOMIZE, PER_LINUX32, UNAME26, READ_IMPLIES_EXEC, 1,
        ADDR_NO_RANDOMIZE - 1, ADDR_NO_RANDOMIZE + 1, 0xfffffffeULL, 0x80000000ULL,
    };
    static const uint64_t families_extra[] = {
        (1ULL << 32) | AF_INET, 0xffffffffffffffffULL, 0x80000000ULL, 0xffffffffULL, 1000,
    };
    static const uint64_t send_flags[] = {
        0, MSG_FASTOPEN, MSG_FASTOPEN | MSG_NOSIGNAL, MSG_NOSIGNAL, MSG_DONTWAIT | MSG_MORE,
        (1ULL << 32) | MSG_FASTOPEN, 1ULL << 32, 0xffffffffffffffffULL, 0xffffffffULL & ~(uint64_t)MSG_FASTOPEN,
        0xffffffff00000000ULL,
    };
    static const uint64_t clone_flags[] = {
        0, CLONE_NEWUSER, CLONE_NEWUTS, CLONE_NEWUSER | CLONE_NEWNS, SIGCHLD,
        CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
        (1ULL << 32) | CLONE_NEWUSER, (1ULL << 32), 0xffffffffffffffffULL,
        0xffffffffffffffffULL & ~(uint64_t)CLONE_NEWUSER,
    };

    static const uint64_t resources[] = {
        RLIMIT_CORE, RLIMIT_NOFILE, RLIMIT_CPU, (1ULL << 32) | RLIMIT_CORE, 0xffffffff00000000ULL | RLIMIT_CORE,
        0xffffffffffffffffULL, 1ULL << 32, RLIMIT_CORE + 1,
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known); i++) {
        const struct sc_entry *e = &sc_known[i];
        int nr = sc_entry_nr(e);
        if (nr < 0)
            continue;
        uint64_t args[6] = {0};
        if ((r = check_one(&ck, ck.arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
            return r;
        const uint64_t *vals = NULL;
        size_t n = 0, argi = 0;
        switch (e->kind) {
        case K_IOCTL: vals = ioctl_cmds; n = FY_ARRAY_SIZE(ioctl_cmds); argi = 1; break;
        case K_PERSONALITY: vals = personas; n = FY_ARRAY_SIZE(personas); break;
        case K_SOCKET: vals = families_extra; n = FY_ARRAY_SIZE(families_extra); break;
        case K_NEWUSER: vals = clone_flags; n = FY_ARRAY_SIZE(clone_flags); argi = e->flags_arg; break;
        case K_SEND: vals = send_flags; n = FY_ARRAY_SIZE(send_flags); argi = e->flags_arg; break;
        case K_RLIMIT: vals = resources; n = FY_ARRAY_SIZE(resources); argi = e->flags_arg; break;
        default: break;
        }
        for (size_t j = 0; j < n; j++) {
            memset(args, 0, sizeof(args));
            args[argi] = vals[j];
            if ((r = check_one(&ck, ck.arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                return r;
        }
        if (e->kind == K_RLIMIT && e->flags_arg > 0) {
            /* prlimit64: the new and old pointers, each NULL or not, with
             * the resource and its neighbours. */
            static const uint64_t ptrs[] = { 0, 0x1000, 0x7ffc00000000ULL, 1ULL << 32, 0xffffffffffffffffULL };
            for (size_t ri = 0; ri < FY_ARRAY_SIZE(resources); ri++)
                for (size_t ni = 0; ni < FY_ARRAY_SIZE(ptrs); ni++)
                    for (size_t oi = 0; oi < FY_ARRAY_SIZE(ptrs); oi++) {
                        memset(args, 0, sizeof(args));
                        args[e->flags_arg] = resources[ri];
                        args[e->flags_arg + 1] = ptrs[ni];
                        args[e->flags_arg + 2] = ptrs[oi];
                        if ((r = check_one(&ck, ck.arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                            return r;
                    }
        }
        if (e->kind == K_SETUID) {
            /* Every mode class (set-user-ID alone, with others, high bits,
             * neighbours), with every flags class where the flags count. */
            static const uint64_t modes[] = { 0, 0755, S_ISUID, S_ISUID | 0755, S_ISGID | 0755,
                                              S_ISUID | S_ISGID | S_ISVTX | 0777, S_IFREG | S_ISUID | 0755,
                                              (1ULL << 32) | S_ISUID, 1ULL << 32, 0xffffffffffffffffULL,
                                              0xffffffffffffffffULL & ~(uint64_t)S_ISUID, S_ISUID - 1, S_ISUID + 1 };
            static const uint64_t oflags[] = { 0, O_CREAT, O_CREAT | O_EXCL | O_WRONLY, SC_O_TMPFILE_BIT,
                                               SC_O_TMPFILE_BIT | O_DIRECTORY | O_RDWR, O_DIRECTORY, O_RDWR | O_TRUNC,
                                               (1ULL << 32) | O_CREAT, 1ULL << 32, 0xffffffffffffffffULL,
                                               0xffffffffffffffffULL & ~(uint64_t)(O_CREAT | SC_O_TMPFILE_BIT) };
            int fa = SC_SETUID_FLAGS(e->flags_arg);
            for (size_t mi = 0; mi < FY_ARRAY_SIZE(modes); mi++)
                for (size_t fi = 0; fi < (fa < 0 ? 1 : FY_ARRAY_SIZE(oflags)); fi++) {
                    memset(args, 0, sizeof(args));
                    args[SC_SETUID_MODE(e->flags_arg)] = modes[mi];
                    if (fa >= 0)
                        args[fa] = oflags[fi];
                    if ((r = check_one(&ck, ck.arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                        return r;
                }
        }
        if (e->kind == K_SOCKET) {
            for (uint64_t f = 0; f <= 64; f++) {
                memset(args, 0, sizeof(args));
                args[0] = f;
                if ((r = check_one(&ck, ck.arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                    return r;
            }
            /* The protocol rule: every family class with MPTCP and its neighbours. */
            static const uint64_t fams[] = { AF_INET, AF_INET6, AF_UNIX, AF_NETLINK, AF_PACKET,
                                             (1ULL << 32) | AF_INET };
            static const uint64_t protos[] = { 0, IPPROTO_TCP, SC_IPPROTO_MPTCP, SC_IPPROTO_MPTCP + 1,
                                               SC_IPPROTO_MPTCP - 1, (1ULL << 32) | SC_IPPROTO_MPTCP,
                                               0xffffffff00000000ULL | SC_IPPROTO_MPTCP, 1ULL << 32,
                                               0xffffffffffffffffULL };
            for (size_t fi = 0; fi < FY_ARRAY_SIZE(fams); fi++)
                for (size_t pi = 0; pi < FY_ARRAY_SIZE(protos); pi++) {
                    memset(args, 0, sizeof(args));
                    args[0] = fams[fi];
                    args[2] = protos[pi];
                    if ((r = check_one(&ck, ck.arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                        return r;
                }
        }
    }
    /* Calls outside the known table: made up, and the legacy ones left out. */
    static const char *const left_out[] = { "uselib", "nfsservctl", "_sysctl", "create_module",
                                             "query_module", "get_kernel_syms", "vserver" };
    for (size_t i = 0; i < FY_ARRAY_SIZE(left_out); i++) {
        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, left_out[i]);
        if (nr >= 0 && (r = check_one(&ck, ck.arch, nr, NULL, sc_ret_errno(ENOSYS), left_out[i])) < 0)
            return r;
    }
    /* Every number up to well past the table's largest that the table does
     * not name: ENOSYS (the prefix and libseccomp's program answer them in
     * different places). The named ones were run above with zero arguments
     * (the same case the sweep would run), so each number runs once. */
    enum { SWEEP_MAX = 4096 };
    uint64_t named[SWEEP_MAX / 64] = {0};
    int top = -1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known); i++) {
        int nr = sc_entry_nr(&sc_known[i]);
        if (nr >= SWEEP_MAX - 64)
            return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                           "seccomp: profile %s: call %s has number %d, past the self check's "
                           "sweep", ck.profile, sc_known[i].name, nr);
        if (nr < 0)
            continue;
        named[nr / 64] |= 1ULL << (nr % 64);
        top = nr > top ? nr : top;
    }
    for (int nr = 0; nr <= top + 64; nr++) {
        if (named[nr / 64] & (1ULL << (nr % 64)))
            continue;
        if ((r = check_one(&ck, ck.arch, nr, NULL, sc_ret_errno(ENOSYS),
                           "a number the table does not name")) < 0)
            return r;
    }
    static const int unknown[] = { 1000, 470, 999, 4095, 0x3fffffff, -1 };
    for (size_t i = 0; i < FY_ARRAY_SIZE(unknown); i++)
        if ((r = check_one(&ck, ck.arch, unknown[i], NULL, sc_ret_errno(ENOSYS), "an unknown call")) < 0)
            return r;
    return check_foreign(&ck, pa->badarch);
}

int sc_self_check_init(const struct seccomp_program *prog, fy_error **reterr) {
    struct checker ck = { prog, reterr, seccomp_arch_native(), prog->name };
    int r;
    for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known); i++) {
        int nr = sc_entry_nr(&sc_known[i]);
        if (nr < 0)
            continue;
        bool ok = false;
        for (size_t j = 0; j < FY_ARRAY_SIZE(sc_init_allowed) && !ok; j++)
            ok = strcmp(sc_init_allowed[j], sc_known[i].name) == 0;
        if ((r = check_one(&ck, ck.arch, nr, NULL, ok ? SECCOMP_RET_ALLOW : SECCOMP_RET_KILL_PROCESS,
                           sc_known[i].name)) < 0)
            return r;
    }
    if ((r = check_one(&ck, ck.arch, 1000, NULL, SECCOMP_RET_KILL_PROCESS, "an unknown call")) < 0)
        return r;
    return check_foreign(&ck, SECCOMP_RET_KILL_PROCESS);
}
