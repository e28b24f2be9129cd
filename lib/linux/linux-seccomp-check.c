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
#include <stdatomic.h>
#include <stdlib.h>
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

/* The program is decoded once per check: each instruction's operation, operand and
 * jump targets as absolute indexes. What executing an instruction would refuse (a bad
 * opcode, a load or a memory slot out of range, a jump past the end, a division by a
 * zero constant) decodes to D_BAD, which fails a run only when the run reaches it, as
 * executing the instruction did; index len is a D_BAD too (falling off the end). Every
 * jump goes forward, so every run ends within len steps. */
enum {
    D_BAD, D_LD_ABS, D_LD_LEN, D_LDX_LEN, D_LD_IMM, D_LDX_IMM, D_LD_MEM, D_LDX_MEM, D_ST, D_STX,
    D_TAX, D_TXA, D_RET_K, D_RET_A, D_JA,
    D_ADD, D_SUB, D_MUL, D_DIV, D_MOD, D_AND, D_OR, D_XOR, D_LSH, D_RSH, D_NEG,
    D_JEQ, D_JGT, D_JGE, D_JSET,
};

struct dins {
    uint8_t op;
    bool src_x;     /* ALU and conditional jumps: the operand is X, not k */
    uint16_t jt, jf; /* conditional jumps and ja (jt): absolute targets */
    uint32_t k;
};

/* Where a run is: what the kernel's interpreter holds. */
struct dstate {
    uint32_t a, x, mem[BPF_MEMWORDS];
    size_t pc;
    uint32_t loaded; /* the words of seccomp_data loaded so far (bit k/4 of a load at k) */
};

/* A jump from instruction i by off: its target, or len (D_BAD) past the end. */
static uint16_t target(size_t i, uint64_t off, size_t len) {
    uint64_t t = (uint64_t)i + 1 + off;
    return (uint16_t)(t < len ? t : len);
}

/* Decodes prog (len <= BPF_MAXINSNS) into out[len + 1]. */
static void bpf_decode(const struct sock_filter *prog, size_t len, struct dins *out) {
    for (size_t i = 0; i < len; i++) {
        const struct sock_filter *f = &prog[i];
        struct dins d = {.op = D_BAD, .k = f->k};
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (!(f->k > sizeof(struct seccomp_data) - 4 || (f->k & 3)))
                d.op = D_LD_ABS;
            break;
        case BPF_LD | BPF_W | BPF_LEN: d.op = D_LD_LEN; break;
        case BPF_LDX | BPF_W | BPF_LEN: d.op = D_LDX_LEN; break;
        case BPF_LD | BPF_IMM: d.op = D_LD_IMM; break;
        case BPF_LDX | BPF_IMM: d.op = D_LDX_IMM; break;
        case BPF_LD | BPF_MEM: d.op = f->k < BPF_MEMWORDS ? D_LD_MEM : D_BAD; break;
        case BPF_LDX | BPF_MEM: d.op = f->k < BPF_MEMWORDS ? D_LDX_MEM : D_BAD; break;
        case BPF_ST: d.op = f->k < BPF_MEMWORDS ? D_ST : D_BAD; break;
        case BPF_STX: d.op = f->k < BPF_MEMWORDS ? D_STX : D_BAD; break;
        case BPF_MISC | BPF_TAX: d.op = D_TAX; break;
        case BPF_MISC | BPF_TXA: d.op = D_TXA; break;
        case BPF_RET | BPF_K: d.op = D_RET_K; break;
        case BPF_RET | BPF_A: d.op = D_RET_A; break;
        case BPF_JMP | BPF_JA:
            d.jt = target(i, f->k, len);
            d.op = d.jt < len ? D_JA : D_BAD;
            break;
        default:
            d.src_x = BPF_SRC(f->code) == BPF_X;
            if (BPF_CLASS(f->code) == BPF_ALU) {
                static const uint8_t alu[16] = {
                    [BPF_ADD >> 4] = D_ADD, [BPF_SUB >> 4] = D_SUB, [BPF_MUL >> 4] = D_MUL,
                    [BPF_DIV >> 4] = D_DIV, [BPF_MOD >> 4] = D_MOD, [BPF_AND >> 4] = D_AND,
                    [BPF_OR >> 4] = D_OR,   [BPF_XOR >> 4] = D_XOR, [BPF_LSH >> 4] = D_LSH,
                    [BPF_RSH >> 4] = D_RSH, [BPF_NEG >> 4] = D_NEG,
                };
                d.op = alu[BPF_OP(f->code) >> 4];
                /* (a division by a zero constant refuses whenever it runs) */
                if ((d.op == D_DIV || d.op == D_MOD) && !d.src_x && f->k == 0)
                    d.op = D_BAD;
            } else if (BPF_CLASS(f->code) == BPF_JMP) {
                switch (BPF_OP(f->code)) {
                case BPF_JEQ: d.op = D_JEQ; break;
                case BPF_JGT: d.op = D_JGT; break;
                case BPF_JGE: d.op = D_JGE; break;
                case BPF_JSET: d.op = D_JSET; break;
                default: break;
                }
                /* (a branch past the end refuses only when it is taken) */
                d.jt = target(i, f->jt, len);
                d.jf = target(i, f->jf, len);
            }
        }
        out[i] = d;
    }
    out[len] = (struct dins){.op = D_BAD};
}

enum { RUN_BAD = -1, RUN_RET = 0, RUN_SUSPENDED = 1 };

/* Runs the decoded program from s on d until it returns (RUN_RET, *ret), reaches a
 * D_BAD (RUN_BAD: the kernel would have refused the program), or, with
 * stop_at_args, is about to load a word past nr and arch (RUN_SUSPENDED, s at that
 * load): everything before depended on nr and arch only. */
/* Each operation's handler jumps straight to the next one's (threaded dispatch: one
 * indirect branch per handler, which the CPU predicts far better than a switch's single
 * one); the handlers are also a switch's cases, which is what a compiler without
 * labels as values, or a checker such as cppcheck, is given instead. */
#if defined(__GNUC__) && !defined(__CPPCHECK__)
#  define BPF_THREADED 1
#  define OP(op, label) case op: label
#  define DISPATCH() goto *go[f->op]
#else
#  define BPF_THREADED 0
#  define OP(op, label) case op
#  define DISPATCH() goto dispatch
#endif

static int bpf_exec(const struct dins *prog, struct dstate *s, const struct seccomp_data *d, bool stop_at_args,
                    uint32_t *ret) {
#if BPF_THREADED
    static const void *const go[] = {
        &&bad, &&ld_abs, &&ld_len, &&ldx_len, &&ld_imm, &&ldx_imm, &&ld_mem, &&ldx_mem, &&st, &&stx,
        &&tax, &&txa, &&ret_k, &&ret_a, &&ja,
        &&add, &&sub, &&mul, &&div, &&mod, &&and, &&or, &&xor, &&lsh, &&rsh, &&neg,
        &&jeq, &&jgt, &&jge, &&jset,
    };
    _Static_assert(sizeof(go) / sizeof(go[0]) == D_JSET + 1, "one handler per decoded operation");
#endif
    uint32_t a = s->a, x = s->x, ld = s->loaded;
    const struct dins *f = &prog[s->pc];
#define NEXT() do { f++; DISPATCH(); } while (0)
#define JUMP(to) do { f = &prog[to]; DISPATCH(); } while (0)
#define V (f->src_x ? x : f->k)
    goto dispatch; /* (the first dispatch is the switch's, in either form) */
dispatch:
    switch (f->op) {
    OP(D_LD_ABS, ld_abs):
        if (stop_at_args && f->k >= 8) {
            s->a = a, s->x = x, s->pc = (size_t)(f - prog), s->loaded = ld;
            return RUN_SUSPENDED;
        }
        ld |= 1u << (f->k >> 2);
        memcpy(&a, (const char *)d + f->k, 4);
        NEXT();
    OP(D_LD_LEN, ld_len): a = sizeof(*d); NEXT();
    OP(D_LDX_LEN, ldx_len): x = sizeof(*d); NEXT();
    OP(D_LD_IMM, ld_imm): a = f->k; NEXT();
    OP(D_LDX_IMM, ldx_imm): x = f->k; NEXT();
    OP(D_LD_MEM, ld_mem): a = s->mem[f->k]; NEXT();
    OP(D_LDX_MEM, ldx_mem): x = s->mem[f->k]; NEXT();
    OP(D_ST, st): s->mem[f->k] = a; NEXT();
    OP(D_STX, stx): s->mem[f->k] = x; NEXT();
    OP(D_TAX, tax): x = a; NEXT();
    OP(D_TXA, txa): a = x; NEXT();
    OP(D_RET_K, ret_k): *ret = f->k; s->loaded = ld; return RUN_RET;
    OP(D_RET_A, ret_a): *ret = a; s->loaded = ld; return RUN_RET;
    OP(D_JA, ja): JUMP(f->jt);
    OP(D_ADD, add): a += V; NEXT();
    OP(D_SUB, sub): a -= V; NEXT();
    OP(D_MUL, mul): a *= V; NEXT();
    OP(D_DIV, div):
        if (!V)
            return RUN_BAD;
        a /= V;
        NEXT();
    OP(D_MOD, mod):
        if (!V)
            return RUN_BAD;
        a %= V;
        NEXT();
    OP(D_AND, and): a &= V; NEXT();
    OP(D_OR, or): a |= V; NEXT();
    OP(D_XOR, xor): a ^= V; NEXT();
    OP(D_LSH, lsh): a = V < 32 ? a << V : 0; NEXT();
    OP(D_RSH, rsh): a = V < 32 ? a >> V : 0; NEXT();
    OP(D_NEG, neg): a = -a; NEXT();
    OP(D_JEQ, jeq): JUMP(a == V ? f->jt : f->jf);
    OP(D_JGT, jgt): JUMP(a > V ? f->jt : f->jf);
    OP(D_JGE, jge): JUMP(a >= V ? f->jt : f->jf);
    OP(D_JSET, jset): JUMP((a & V) ? f->jt : f->jf);
    OP(D_BAD, bad):
    default:
        return RUN_BAD;
    }
#undef NEXT
#undef JUMP
#undef V
}
#undef OP
#undef DISPATCH
#undef BPF_THREADED

/* ---------------------------------------------------------------------------------- */
/* self check                                                                         */

/* seccomp_data's words: nr 0, arch 1, the instruction pointer 2-3, argument i 4+2i
 * (low) and 5+2i (high). */
#define WORDS_NR_ARCH 0x3u
#define WORDS_ARG(i) (3u << (4 + 2 * (i)))

struct checker {
    const struct seccomp_program *prog;
    fy_error **reterr;
    uint32_t arch;
    const char *profile;
    struct dins *code; /* prog decoded: len + 1 */
    /* The words of seccomp_data the contract lets a run of the call being
     * checked read (nr and arch always; the arguments its kind examines). */
    uint32_t allowed;
    /* The run so far of the last (arch, nr) checked, up to its first load of an
     * argument: the checks of one call's argument classes each resume from it. */
    bool memo_valid;
    uint32_t memo_arch;
    int memo_nr, memo_rc;
    uint32_t memo_ret;
    struct dstate memo;
};

static int checker_init(struct checker *ck, const struct seccomp_program *prog, fy_error **reterr) {
    *ck = (struct checker){.prog = prog, .reterr = reterr, .arch = seccomp_arch_native(), .profile = prog->name,
                           .allowed = WORDS_NR_ARCH};
    if (prog->len > BPF_MAXINSNS)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the compiled BPF has %zu instructions, more than the kernel's %d",
                       prog->name, prog->len, BPF_MAXINSNS);
    if (!(ck->code = malloc((prog->len + 1) * sizeof(*ck->code))))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, 0, NULL, "out of memory");
    bpf_decode(prog->filter, prog->len, ck->code);
    return 0;
}

/* Runs the program on d: the run of (d->arch, d->nr) up to its first argument load is
 * made once and kept, and every d of the same call resumes from it. RUN_RET (*got, and
 * the words the run loaded in *loaded) or RUN_BAD. */
static int checker_run(struct checker *ck, const struct seccomp_data *d, uint32_t *got, uint32_t *loaded) {
    if (!ck->memo_valid || ck->memo_arch != d->arch || ck->memo_nr != d->nr) {
        ck->memo = (struct dstate){0};
        ck->memo_rc = bpf_exec(ck->code, &ck->memo, d, true, &ck->memo_ret);
        ck->memo_arch = d->arch;
        ck->memo_nr = d->nr;
        ck->memo_valid = true;
    }
    if (ck->memo_rc != RUN_SUSPENDED) {
        *got = ck->memo_ret;
        *loaded = ck->memo.loaded;
        return ck->memo_rc;
    }
    struct dstate s = ck->memo;
    int r = bpf_exec(ck->code, &s, d, false, got);
    *loaded = s.loaded;
    return r;
}

int sc_bpf_eval(const void *prog, size_t len, const struct seccomp_data *d, const struct seccomp_data *prefix,
                uint32_t *ret) {
    const struct seccomp_program p = {.filter = (void *)prog, .len = len, .name = "eval"};
    struct checker ck;
    int r = checker_init(&ck, &p, NULL);
    uint32_t loaded;
    if (r >= 0 && prefix)
        (void)checker_run(&ck, prefix, ret, &loaded); /* (kept for d: the same call) */
    if (r >= 0)
        r = checker_run(&ck, d, ret, &loaded) == RUN_RET;
    free(ck.code);
    return r == FY_E_NOMEM ? -1 : r < 0 ? 0 : r;
}


/* The words sc_contract_action examines for e. */
static uint32_t contract_words(const struct sc_entry *e) {
    uint32_t w = WORDS_NR_ARCH;
    switch (e->kind) {
    case K_IOCTL: return w | WORDS_ARG(1);
    case K_PERSONALITY: return w | WORDS_ARG(0);
    case K_SOCKET: return w | WORDS_ARG(0) | WORDS_ARG(2);
    case K_SEND: case K_NEWUSER: return w | WORDS_ARG(e->flags_arg);
    case K_RLIMIT: return w | WORDS_ARG(e->flags_arg) | WORDS_ARG(e->flags_arg + 1) | WORDS_ARG(e->flags_arg + 2);
    case K_SETUID: {
        int fa = SC_SETUID_FLAGS(e->flags_arg);
        return w | WORDS_ARG(SC_SETUID_MODE(e->flags_arg)) | (fa >= 0 ? WORDS_ARG(fa) : 0);
    }
    default: return w;
    }
}

static int check_one(struct checker *ck, uint32_t arch, int nr, const uint64_t *args, uint32_t want,
                     const char *what) {
    struct seccomp_data d;
    memset(&d, 0, sizeof(d));
    d.nr = nr;
    d.arch = arch;
    d.instruction_pointer = 0x401000;
    for (int i = 0; i < 6; i++)
        d.args[i] = args ? args[i] : 0;
    uint32_t got = 0, loaded = 0;
    if (checker_run(ck, &d, &got, &loaded) != RUN_RET)
        return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the compiled BPF is malformed (at %s)", ck->profile,
                       what);
    /* A run that read a word the contract does not examine for this call (the
     * instruction pointer, an argument it never decides by) could decide
     * otherwise for a value no sample has: refused, since the samples would
     * prove nothing (a saved program edited to allow everything unless the
     * instruction pointer was the sampler's passed the samples). */
    if (loaded & ~ck->allowed)
        return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: profile %s: the BPF reads seccomp_data word %d for %s (nr %d), which the "
                       "contract does not examine there", ck->profile, __builtin_ctz(loaded & ~ck->allowed), what, nr);
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

static int self_check(struct checker *ck, const struct profile_actions *pa) {
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
        ck->allowed = contract_words(e);
        if ((r = check_one(ck, ck->arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
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
            if ((r = check_one(ck, ck->arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
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
                        if ((r = check_one(ck, ck->arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
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
                    if ((r = check_one(ck, ck->arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                        return r;
                }
        }
        if (e->kind == K_SOCKET) {
            for (uint64_t f = 0; f <= 64; f++) {
                memset(args, 0, sizeof(args));
                args[0] = f;
                if ((r = check_one(ck, ck->arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
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
                    if ((r = check_one(ck, ck->arch, nr, args, sc_contract_action(pa, e, args), e->name)) < 0)
                        return r;
                }
        }
    }
    ck->allowed = WORDS_NR_ARCH;
    /* Calls outside the known table: made up, and the legacy ones left out. */
    static const char *const left_out[] = { "uselib", "nfsservctl", "_sysctl", "create_module",
                                             "query_module", "get_kernel_syms", "vserver" };
    for (size_t i = 0; i < FY_ARRAY_SIZE(left_out); i++) {
        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, left_out[i]);
        if (nr >= 0 && (r = check_one(ck, ck->arch, nr, NULL, sc_ret_errno(ENOSYS), left_out[i])) < 0)
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
            return err_set(ck->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                           "seccomp: profile %s: call %s has number %d, past the self check's "
                           "sweep", ck->profile, sc_known[i].name, nr);
        if (nr < 0)
            continue;
        named[nr / 64] |= 1ULL << (nr % 64);
        top = nr > top ? nr : top;
    }
    for (int nr = 0; nr <= top + 64; nr++) {
        if (named[nr / 64] & (1ULL << (nr % 64)))
            continue;
        if ((r = check_one(ck, ck->arch, nr, NULL, sc_ret_errno(ENOSYS),
                           "a number the table does not name")) < 0)
            return r;
    }
    static const int unknown[] = { 1000, 470, 999, 4095, 0x3fffffff, -1 };
    for (size_t i = 0; i < FY_ARRAY_SIZE(unknown); i++)
        if ((r = check_one(ck, ck->arch, unknown[i], NULL, sc_ret_errno(ENOSYS), "an unknown call")) < 0)
            return r;
    return check_foreign(ck, pa->badarch);
}

int sc_self_check(const struct seccomp_program *prog, const struct profile_actions *pa, fy_error **reterr) {
    struct checker ck;
    int r = checker_init(&ck, prog, reterr);
    if (r >= 0)
        r = self_check(&ck, pa);
    free(ck.code);
    return r;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Whether sc_known[i] is in sc_init_allowed: both tables are constant, so the answers
 * are found once per process, by a binary search of the sorted allowed names. */
static bool init_allowed(size_t i) {
    static atomic_bool filled;
    static _Atomic bool memo[SC_KNOWN_COUNT];
    if (!atomic_load_explicit(&filled, memory_order_acquire)) {
        const char *sorted[FY_ARRAY_SIZE(sc_init_allowed)];
        memcpy(sorted, sc_init_allowed, sizeof(sorted));
        qsort(sorted, FY_ARRAY_SIZE(sorted), sizeof(sorted[0]), cmp_name);
        for (size_t k = 0; k < SC_KNOWN_COUNT; k++) {
            const char *name = sc_known[k].name;
            bool in = bsearch(&name, sorted, FY_ARRAY_SIZE(sorted), sizeof(sorted[0]), cmp_name) != NULL;
            atomic_store_explicit(&memo[k], in, memory_order_relaxed);
        }
        atomic_store_explicit(&filled, true, memory_order_release);
    }
    return atomic_load_explicit(&memo[i], memory_order_relaxed);
}

static int self_check_init(struct checker *ck) {
    int r;
    for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known); i++) {
        int nr = sc_entry_nr(&sc_known[i]);
        if (nr < 0)
            continue;
        if ((r = check_one(ck, ck->arch, nr, NULL, init_allowed(i) ? SECCOMP_RET_ALLOW : SECCOMP_RET_KILL_PROCESS,
                           sc_known[i].name)) < 0)
            return r;
    }
    if ((r = check_one(ck, ck->arch, 1000, NULL, SECCOMP_RET_KILL_PROCESS, "an unknown call")) < 0)
        return r;
    return check_foreign(ck, SECCOMP_RET_KILL_PROCESS);
}

int sc_self_check_init(const struct seccomp_program *prog, fy_error **reterr) {
    struct checker ck;
    int r = checker_init(&ck, prog, reterr);
    if (r >= 0)
        r = self_check_init(&ck);
    free(ck.code);
    return r;
}
