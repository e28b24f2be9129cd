/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Seccomp profiles, compiled with libseccomp into classic BPF in memory: the compiler and
 * the entry points of linux-seccomp.h. The profiles themselves, and their contract, are
 * linux-seccomp-profiles.c; the check of every compiled program against that contract is
 * linux-seccomp-check.c; naming a call and classifying a violation, linux-seccomp-names.c.
 *
 * Implementation notes:
 * - Layout (since 2026-11; the contract is unchanged, so is the version): libseccomp
 *   compiles only the rows that are not plain ALLOW into a program whose default is
 *   ALLOW, and a short hand-made prefix (build_prefix) answers first what that
 *   default would get wrong: ENOSYS for nr -1, for every number above the table's
 *   largest and for every number below it the table does not name, and
 *   personality's argument rule (it has an ALLOW side, which a default-ALLOW
 *   libseccomp program cannot express). 141 instructions on x86-64 instead of 524,
 *   so the kernel converts and JITs it in about half the time at every sandbox
 *   start. Every rule libseccomp gets is disjoint (ioctl: the two refused commands;
 *   socket: each refused family and a GT; clone/unshare: the bit set), so no
 *   ordering of argument comparisons matters. Every compiled program is checked
 *   against the contract by a small cBPF interpreter (sc_self_check, in
 *   linux-seccomp-check.c: every number up to past the largest, the argument classes,
 *   foreign architectures, x32) before it is returned; a mismatch fails closed with
 *   FY_E_INTERNAL.
 * - The exported BPF is the whole of what the child needs: NNP and TSYNC are off
 *   (the loader sets no_new_privs itself, the child is single-threaded).
 * - No global state, no output, every fd O_CLOEXEC, nothing ever exits. */
#include <errno.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <sys/resource.h>

#include <seccomp.h>

#include "forgeyard/fy-policy.h"
#include "linux-seccomp-internal.h"

#ifndef BPF_MAXINSNS
#  define BPF_MAXINSNS 4096
#endif

/* ---------------------------------------------------------------------------------- */
/* building                                                                           */

struct builder {
    scmp_filter_ctx ctx;
    fy_error **reterr;
};

static int seccomp_err(fy_error **reterr, int rc, const char *what, const char *name) {
    int e = rc < 0 ? -rc : EINVAL;
    int code = e == ENOMEM ? FY_E_NOMEM : FY_E_INTERNAL;
    return err_set(reterr, code, FY_STEP_SECCOMP, e, NULL, "seccomp: %s%s%s failed: %s", what,
                   name ? " " : "", name ? name : "", strerror(e));
}

static int add_rule(struct builder *b, uint32_t action, const struct sc_entry *e, int nr,
                    unsigned cnt, const struct scmp_arg_cmp *cmp) {
    int rc = seccomp_rule_add_array(b->ctx, action, nr, cnt, cmp);
    if (rc < 0)
        return seccomp_err(b->reterr, rc, "adding the rule for", e->name);
    return 0;
}

/* The rules of one known-table entry for a program whose default is ALLOW:
 * only what is not ALLOW (personality: in the prefix, build_prefix). */
static int add_entry(struct builder *b, const struct profile_actions *pa, const struct sc_entry *e,
                     int nr) {
    struct scmp_arg_cmp c;
    int r;
    switch (e->kind) {
    case K_ALLOW: return 0;
    case K_PERSONALITY: return 0;
    case K_VIOLATION: return add_rule(b, pa->violation, e, nr, 0, NULL);
    case K_EPERM: return add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 0, NULL);
    case K_ENOSYS: return add_rule(b, SCMP_ACT_ERRNO(ENOSYS), e, nr, 0, NULL);
    case K_PTRACE: return pa->ptrace_allowed ? 0 : add_rule(b, sc_ptrace_denial(pa), e, nr, 0, NULL);
    case K_IOCTL:
        for (size_t i = 0; i < FY_ARRAY_SIZE(sc_ioctl_violations); i++) {
            c = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffu, sc_ioctl_violations[i]);
            if ((r = add_rule(b, pa->violation, e, nr, 1, &c)) < 0)
                return r;
        }
        return 0;
    case K_SOCKET: {
        /* Disjoint: each refused family below the largest allowed one by
         * equality, everything above it by GT (the whole register). */
        uint32_t top = sc_socket_families_ok[FY_ARRAY_SIZE(sc_socket_families_ok) - 1];
        for (uint32_t f = 0; f <= top; f++) {
            if (sc_in_u32(sc_socket_families_ok, FY_ARRAY_SIZE(sc_socket_families_ok), f))
                continue;
            c = SCMP_A0_64(SCMP_CMP_EQ, f);
            if ((r = add_rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), e, nr, 1, &c)) < 0)
                return r;
        }
        c = SCMP_A0_64(SCMP_CMP_GT, top);
        if ((r = add_rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), e, nr, 1, &c)) < 0)
            return r;
        /* MPTCP under the two allowed IP families (disjoint from the rules
         * above: those match only refused families). */
        static const uint32_t ip[] = { AF_INET, AF_INET6 };
        for (size_t i = 0; i < FY_ARRAY_SIZE(ip); i++) {
            struct scmp_arg_cmp two[2] = { SCMP_A0_64(SCMP_CMP_EQ, ip[i]),
                                           SCMP_A2_64(SCMP_CMP_MASKED_EQ, 0xffffffffu, SC_IPPROTO_MPTCP) };
            if ((r = add_rule(b, SCMP_ACT_ERRNO(EPROTONOSUPPORT), e, nr, 2, two)) < 0)
                return r;
        }
        return 0;
    }
    case K_SEND:
        c = SCMP_CMP64(e->flags_arg, SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN);
        return add_rule(b, SCMP_ACT_ERRNO(EOPNOTSUPP), e, nr, 1, &c);
    case K_NEWUSER:
        c = SCMP_CMP64(e->flags_arg, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
        return add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 1, &c);
    case K_SETUID: {
        struct scmp_arg_cmp mode = SCMP_CMP64(SC_SETUID_MODE(e->flags_arg), SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID);
        int fa = SC_SETUID_FLAGS(e->flags_arg);
        if (fa < 0)
            return add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 1, &mode);
        static const uint32_t creating[] = { O_CREAT, SC_O_TMPFILE_BIT };
        for (size_t i = 0; i < FY_ARRAY_SIZE(creating); i++) {
            struct scmp_arg_cmp two[2] = {
                SCMP_CMP64((unsigned)fa, SCMP_CMP_MASKED_EQ, creating[i], creating[i]), mode };
            if ((r = add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 2, two)) < 0)
                return r;
        }
        return 0;
    }
    case K_RLIMIT: {
        struct scmp_arg_cmp res = SCMP_CMP64(e->flags_arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, RLIMIT_CORE);
        if (e->flags_arg == 0)
            return add_rule(b, SCMP_ACT_ERRNO(0), e, nr, 1, &res);
        struct scmp_arg_cmp set_only[3] = { res, SCMP_CMP64(e->flags_arg + 1u, SCMP_CMP_NE, 0),
                                            SCMP_CMP64(e->flags_arg + 2u, SCMP_CMP_EQ, 0) };
        if ((r = add_rule(b, SCMP_ACT_ERRNO(0), e, nr, 3, set_only)) < 0)
            return r;
        struct scmp_arg_cmp set_get[3] = { res, SCMP_CMP64(e->flags_arg + 1u, SCMP_CMP_NE, 0),
                                           SCMP_CMP64(e->flags_arg + 2u, SCMP_CMP_NE, 0) };
        return add_rule(b, SCMP_ACT_ERRNO(EPERM), e, nr, 3, set_get);
    }
    }
    return err_set(b->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                   "seccomp: bad table entry %s", e->name);
}

/* ---------------------------------------------------------------------------------- */
/* the prefix                                                                         */

/* libseccomp compiles the entries that are not plain ALLOW (about 80 rules)
 * into a program whose default is ALLOW. A default of ENOSYS would need a
 * rule for each of the ~390 allowed calls: a program of 524 instructions
 * that took the kernel ~0.3 ms to convert and JIT at every sandbox start,
 * against ~0.1 ms now. What the default then gets wrong, this prefix
 * answers first, for the native architecture only (foreign ones and x32
 * fall through to libseccomp's own check, and its BADARCH action):
 *   nr -1, every number above the table's largest, and every number below
 *   it that the table does not name (the legacy calls left out, the gap
 *   before the unified numbers): ERRNO(ENOSYS), as a default would;
 *   personality, whose one argument rule has an ALLOW side: checked here.
 * Then libseccomp's program runs. sc_self_check holds the whole to the contract
 * for every number, so a mistake here cannot ship. */
#define PREFIX_MAX 160

struct prefix {
    struct sock_filter f[PREFIX_MAX];
    int target[PREFIX_MAX][2]; /* jt, jf as labels (L_*) or -1 for "the next instruction" */
    size_t n;
    bool overflow;
};

enum { L_NEXT = -1, L_SKIP1 = -2, L_LIB = -3, L_ENOSYS = -4, L_ALLOW = -5, L_PERS_END = -6 };

static void emit(struct prefix *p, uint16_t code, uint32_t k, int jt, int jf) {
    if (p->n >= PREFIX_MAX) {
        p->overflow = true;
        return;
    }
    p->f[p->n] = (struct sock_filter)BPF_STMT(code, k);
    p->target[p->n][0] = jt;
    p->target[p->n][1] = jf;
    p->n++;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* Resolves the labels; false if a jump does not fit in 8 bits. */
static bool resolve_prefix(struct prefix *p, size_t pers_end) {
    size_t lib = p->n, enosys = p->n - 2, allow = p->n - 1;
    for (size_t i = 0; i < p->n; i++) {
        if (BPF_CLASS(p->f[i].code) != BPF_JMP || BPF_OP(p->f[i].code) == BPF_JA)
            continue;
        for (int side = 0; side < 2; side++) {
            int t = p->target[i][side];
            size_t to = t == L_NEXT ? i + 1 : t == L_SKIP1 ? i + 2 : t == L_LIB ? lib : t == L_ENOSYS ? enosys
                      : t == L_ALLOW ? allow : pers_end;
            if (to <= i || to - i - 1 > 255)
                return false;
            if (side == 0)
                p->f[i].jt = (uint8_t)(to - i - 1);
            else
                p->f[i].jf = (uint8_t)(to - i - 1);
        }
    }
    return true;
}

static int build_prefix(struct prefix *p, fy_error **reterr) {
    memset(p, 0, sizeof(*p));
    int nrs[FY_ARRAY_SIZE(sc_known)];
    size_t nn = 0;
    int pers = -1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known); i++) {
        int nr = sc_entry_nr(&sc_known[i]);
        if (nr < 0)
            continue;
        nrs[nn++] = nr;
        if (sc_known[i].kind == K_PERSONALITY)
            pers = nr;
    }
    if (!nn)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL, "seccomp: no known call here");
    qsort(nrs, nn, sizeof(int), cmp_int);
    uint32_t arch = seccomp_arch_native();
    emit(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, arch), 0, 0);
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, arch, L_NEXT, L_LIB);
    emit(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, nr), 0, 0);
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, L_ENOSYS, L_NEXT);
    if (arch == SCMP_ARCH_X86_64)
        emit(p, BPF_JMP | BPF_JGE | BPF_K, X32_BIT, L_LIB, L_NEXT);
    emit(p, BPF_JMP | BPF_JGT | BPF_K, (uint32_t)nrs[nn - 1], L_ENOSYS, L_NEXT);
    /* The numbers below the largest that the table does not name, as ranges. */
    int expect = 0;
    for (size_t i = 0; i <= nn; i++) {
        int have = i < nn ? nrs[i] : nrs[nn - 1] + 1;
        if (have > expect) {
            uint32_t lo = (uint32_t)expect, hi = (uint32_t)have - 1;
            if (lo == hi) {
                emit(p, BPF_JMP | BPF_JEQ | BPF_K, lo, L_ENOSYS, L_NEXT);
            } else {
                emit(p, BPF_JMP | BPF_JGE | BPF_K, lo, L_NEXT, L_SKIP1);
                emit(p, BPF_JMP | BPF_JGT | BPF_K, hi, L_NEXT, L_ENOSYS);
            }
        }
        if (have >= expect)
            expect = have + 1;
    }
    size_t pers_end = 0;
    if (pers >= 0) {
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)pers, L_NEXT, L_PERS_END);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        uint32_t low = (uint32_t)offsetof(struct seccomp_data, args) + 4;
#else
        uint32_t low = (uint32_t)offsetof(struct seccomp_data, args);
#endif
        emit(p, BPF_LD | BPF_W | BPF_ABS, low, 0, 0);
        for (size_t i = 0; i < FY_ARRAY_SIZE(sc_personality_ok); i++)
            emit(p, BPF_JMP | BPF_JEQ | BPF_K, sc_personality_ok[i], L_ALLOW, L_NEXT);
        emit(p, BPF_RET | BPF_K, sc_ret_errno(EPERM), 0, 0);
    }
    pers_end = p->n;
    emit(p, BPF_JMP | BPF_JA, 2, 0, 0); /* over the two returns, into libseccomp's program */
    emit(p, BPF_RET | BPF_K, sc_ret_errno(ENOSYS), 0, 0);
    emit(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    if (p->overflow || !resolve_prefix(p, pers_end))
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: the prefix does not fit (%zu instructions)", p->n);
    return 0;
}

/* prog = prefix + prog. */
static int prepend(struct seccomp_program *prog, const struct prefix *p, fy_error **reterr) {
    if (prog->len + p->n > BPF_MAXINSNS)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: the program is too long (%zu instructions)", prog->len + p->n);
    struct sock_filter *all = malloc((prog->len + p->n) * sizeof(*all));
    if (!all)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL, "seccomp: out of memory");
    memcpy(all, p->f, p->n * sizeof(*all));
    memcpy(all + p->n, prog->filter, prog->len * sizeof(*all));
    free(prog->filter);
    prog->filter = all;
    prog->len += p->n;
    return 0;
}

static int set_attr(struct builder *b, enum scmp_filter_attr attr, uint32_t value, const char *what) {
    int rc = seccomp_attr_set(b->ctx, attr, value);
    if (rc < 0)
        return seccomp_err(b->reterr, rc, "setting", what);
    return 0;
}

/* Common attributes. badarch: the wanted action for foreign architectures; *badarch_out gets
 * the one libseccomp accepted (KILL_PROCESS when it refuses NOTIFY there). */
static int set_common_attrs(struct builder *b, uint32_t badarch, uint32_t *badarch_out) {
    int r;
    if ((r = set_attr(b, SCMP_FLTATR_CTL_NNP, 0, "SCMP_FLTATR_CTL_NNP")) < 0 ||
        (r = set_attr(b, SCMP_FLTATR_CTL_TSYNC, 0, "SCMP_FLTATR_CTL_TSYNC")) < 0)
        return r;
    /* A binary tree over the syscall numbers: a few comparisons per call, not a chain
     * of hundreds. Optional: libseccomp without it still gives a correct filter. */
    (void)seccomp_attr_set(b->ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    int rc = seccomp_attr_set(b->ctx, SCMP_FLTATR_ACT_BADARCH, badarch);
    if (rc < 0 && badarch == SCMP_ACT_NOTIFY) {
        badarch = SCMP_ACT_KILL_PROCESS;
        rc = seccomp_attr_set(b->ctx, SCMP_FLTATR_ACT_BADARCH, badarch);
    }
    if (rc < 0)
        return seccomp_err(b->reterr, rc, "setting", "SCMP_FLTATR_ACT_BADARCH");
    *badarch_out = badarch;
    return 0;
}

/* seccomp_export_bpf() writes to an fd (libseccomp 2.5 has no in-memory variant): a memfd,
 * or a non-blocking pipe (a filter is at most 32 KiB; a shrunken pipe fails, never blocks). */
static int export_bpf(struct builder *b, struct seccomp_program *out) {
    int fd = memfd_create("fy-seccomp", MFD_CLOEXEC), wfd, rc, r = 0;
    int pfd[2] = { -1, -1 };
    if (fd >= 0) {
        wfd = fd;
    } else {
        if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
            return err_set(b->reterr, err_from_errno(errno), FY_STEP_SECCOMP, errno, NULL,
                           "seccomp: memfd_create and pipe2 failed: %s", strerror(errno));
        (void)fcntl(pfd[1], F_SETPIPE_SZ, BPF_MAXINSNS * (int)sizeof(struct sock_filter) + 4096);
        fd = pfd[0];
        wfd = pfd[1];
    }

    rc = seccomp_export_bpf(b->ctx, wfd);
    if (rc < 0) {
        r = seccomp_err(b->reterr, rc, "exporting the BPF", NULL);
        goto out;
    }
    if (pfd[1] >= 0) {
        close(pfd[1]);
        pfd[1] = -1;
    } else if (lseek(fd, 0, SEEK_SET) < 0) {
        r = err_set(b->reterr, FY_E_IO, FY_STEP_SECCOMP, errno, NULL, "seccomp: lseek: %s",
                    strerror(errno));
        goto out;
    }

    size_t cap = (size_t)(BPF_MAXINSNS + 1) * sizeof(struct sock_filter), got = 0;
    char *buf = malloc(cap);
    if (!buf) {
        r = err_set(b->reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL, "seccomp: out of memory");
        goto out;
    }
    /* Bounded: at most cap bytes, and a read of 0 or an error ends it. */
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = err_set(b->reterr, FY_E_IO, FY_STEP_SECCOMP, errno, NULL,
                        "seccomp: reading the exported BPF: %s", strerror(errno));
            free(buf);
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got == 0 || got % sizeof(struct sock_filter) != 0 ||
        got / sizeof(struct sock_filter) > BPF_MAXINSNS) {
        r = err_set(b->reterr, FY_E_INTERNAL, FY_STEP_SECCOMP, 0, NULL,
                    "seccomp: the exported BPF has a bad size (%zu bytes; at most %d instructions)",
                    got, BPF_MAXINSNS);
        free(buf);
        goto out;
    }
    char *fit = realloc(buf, got); /* a filter is typically ~4 KiB of the 32 KiB read buffer */
    out->filter = fit ? fit : buf;
    out->len = got / sizeof(struct sock_filter);
out:
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (fd >= 0)
        close(fd);
    return r;
}

/* ---------------------------------------------------------------------------------- */
/* public                                                                             */

void sc_program_free(struct seccomp_program *p) {
    if (!p)
        return;
    free(p->filter);
    memset(p, 0, sizeof(*p));
}

int sc_compile(uint32_t cls, bool use_notify, struct seccomp_program *out, fy_error **reterr) {
    if (!out)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECCOMP, EINVAL, NULL, "seccomp: no output");
    memset(out, 0, sizeof(*out));
    const char *name;
    switch (cls) {
    case FY_SECCOMP_GENERAL_BUILD: name = "general-build"; break;
    case FY_SECCOMP_NETWORKED_TEST: name = "networked-test"; break;
    default:
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECCOMP, EINVAL, NULL,
                       "seccomp: unknown profile class %u", (unsigned)cls);
    }

    struct profile_actions pa = {
        .violation = use_notify ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS,
        .ptrace_allowed = cls == FY_SECCOMP_NETWORKED_TEST,
    };
    /* API level 3: SCMP_ACT_KILL_PROCESS; 5: SCMP_ACT_NOTIFY (libseccomp probes the kernel). */
    unsigned api = seccomp_api_get();
    if (api < (use_notify ? 5u : 3u))
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: libseccomp API level %u on this host has no %s", api,
                       use_notify ? "SCMP_ACT_NOTIFY" : "SCMP_ACT_KILL_PROCESS");
    struct prefix pre;
    int r = build_prefix(&pre, reterr);
    if (r < 0)
        return r;
    struct builder b = { seccomp_init(SCMP_ACT_ALLOW), reterr };
    if (!b.ctx)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL,
                       "seccomp: seccomp_init failed");
    r = set_common_attrs(&b, pa.violation, &pa.badarch);
    for (size_t i = 0; r >= 0 && i < FY_ARRAY_SIZE(sc_known); i++) {
        int nr = sc_entry_nr(&sc_known[i]);
        if (nr >= 0)
            r = add_entry(&b, &pa, &sc_known[i], nr);
    }
    if (r >= 0)
        r = export_bpf(&b, out);
    seccomp_release(b.ctx);
    if (r >= 0)
        r = prepend(out, &pre, reterr);
    if (r < 0) {
        sc_program_free(out);
        return r;
    }
    out->notify = use_notify;
    out->name = name;
    out->version = FY_SECCOMP_PROFILE_VERSION;
    out->badarch = pa.badarch;
    if ((r = sc_self_check(out, &pa, reterr)) < 0) {
        sc_program_free(out);
        return r;
    }
    return 0;
}

unsigned sc_api_level(void) { return seccomp_api_get(); }

int sc_compile_init(struct seccomp_program *out, fy_error **reterr) {
    if (!out)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SECCOMP, EINVAL, NULL, "seccomp: no output");
    memset(out, 0, sizeof(*out));
    unsigned api = sc_api_level();
    if (api < 3u)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SECCOMP, 0, NULL,
                       "seccomp: libseccomp API level %u on this host has no SCMP_ACT_KILL_PROCESS",
                       api);
    struct builder b = { seccomp_init(SCMP_ACT_KILL_PROCESS), reterr };
    if (!b.ctx)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECCOMP, ENOMEM, NULL,
                       "seccomp: seccomp_init failed");
    uint32_t badarch = 0;
    int r = set_common_attrs(&b, SCMP_ACT_KILL_PROCESS, &badarch);
    for (size_t i = 0; r >= 0 && i < FY_ARRAY_SIZE(sc_init_allowed); i++) {
        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, sc_init_allowed[i]);
        if (nr < 0)
            continue; /* not a call of this architecture */
        int rc = seccomp_rule_add(b.ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc < 0)
            r = seccomp_err(reterr, rc, "adding the rule for", sc_init_allowed[i]);
    }
    if (r >= 0)
        r = export_bpf(&b, out);
    seccomp_release(b.ctx);
    if (r < 0) {
        sc_program_free(out);
        return r;
    }
    out->notify = false;
    out->name = "init";
    out->version = FY_SECCOMP_INIT_VERSION;
    out->badarch = badarch;
    if ((r = sc_self_check_init(out, reterr)) < 0) {
        sc_program_free(out);
        return r;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the process level's IPC filter                                                      */

/* System V IPC and POSIX message queues live in the IPC namespace, and
 * their objects outlive every process that made them. A sandbox without an
 * IPC namespace of its own (the process level, where no namespace can be
 * made) stacks this filter on its profile: the eighteen calls fail with
 * EPERM, so the workload can neither leave an object in the host's
 * namespace nor reach one of the host's. x32 numbers (the profile's
 * violations) are folded onto the native ones; a foreign architecture is
 * left to the profile, which refuses it. */
#if defined(__x86_64__) || defined(__aarch64__)
#  define IPC_CALLS 18u
#  define IPC_CMP(i, name) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_##name, (uint8_t)(IPC_CALLS - (i)), 0)
#  if defined(__x86_64__)
#    define IPC_ARCH AUDIT_ARCH_X86_64
#  else
#    define IPC_ARCH AUDIT_ARCH_AARCH64
#  endif
static const struct sock_filter ipc_deny[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPC_ARCH, 0, IPC_CALLS + 2),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~0x40000000u), /* __X32_SYSCALL_BIT */
    IPC_CMP(0, shmget), IPC_CMP(1, shmat), IPC_CMP(2, shmctl), IPC_CMP(3, shmdt),
    IPC_CMP(4, semget), IPC_CMP(5, semop), IPC_CMP(6, semctl), IPC_CMP(7, semtimedop),
    IPC_CMP(8, msgget), IPC_CMP(9, msgsnd), IPC_CMP(10, msgrcv), IPC_CMP(11, msgctl),
    IPC_CMP(12, mq_open), IPC_CMP(13, mq_unlink), IPC_CMP(14, mq_timedsend),
    IPC_CMP(15, mq_timedreceive), IPC_CMP(16, mq_notify), IPC_CMP(17, mq_getsetattr),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
};
_Static_assert(sizeof(ipc_deny) / sizeof(ipc_deny[0]) == IPC_CALLS + 6, "IPC_CMP's jump targets");

const void *sc_ipc_deny_program(uint16_t *len) {
    *len = (uint16_t)(sizeof(ipc_deny) / sizeof(ipc_deny[0]));
    return ipc_deny;
}

/* Without a pid namespace (the process level) the workload sees every
 * process of the host, and the calls that change another process's
 * limits, priority, CPUs or I/O class are judged by the user id alone:
 * Landlock does not look at them (it does at ptrace, /proc/PID/mem and,
 * from ABI 6, signals). Every process-level attempt of a root caller runs
 * as one host user, which is also the one that namespace sandboxes' workloads map
 * to, and a rootless workload runs as its caller: one attempt set another's
 * RLIMIT_NOFILE to 3, or its own host program's RLIMIT_FSIZE to 0 (the
 * host died of SIGXFSZ, no result). This filter, stacked on the profile,
 * lets those calls name the caller itself only (pid, process group or
 * "who" 0): prlimit64, sched_setaffinity, sched_setscheduler,
 * sched_setparam, sched_setattr, setpriority (PRIO_PROCESS and PRIO_PGRP;
 * PRIO_USER, every process of the user, never) and ioprio_set (the same);
 * EPERM otherwise, as for another user's process. */
enum {
    OD_ARCH_LD, OD_ARCH, OD_NR_LD, OD_NR_AND,
    OD_PRLIMIT, OD_SETAFF, OD_SETSCHED, OD_SETPARAM, OD_SETATTR, OD_SETPRIO, OD_IOPRIO,
    OD_ALLOW,
    OD_PID_LD, OD_PID_EQ,
    OD_PRIO_LD, OD_PRIO_USER, OD_PRIO_OTHER, OD_PRIO_WHO_LD, OD_PRIO_WHO,
    OD_IO_LD, OD_IO_USER, OD_IO_PROC, OD_IO_PGRP, OD_IO_WHO_LD, OD_IO_WHO,
    OD_ALLOW2, OD_DENY, OD_LEN
};
#  define OD_TO(i, t) ((uint8_t)((t) - (i) - 1))
#  define OD_NR(i, name, t) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_##name, OD_TO(i, t), 0)
#  define OD_ARG(n) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[n])) /* (low half) */
static const struct sock_filter others_deny[OD_LEN] = {
    [OD_ARCH_LD] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    [OD_ARCH] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPC_ARCH, 0, OD_TO(OD_ARCH, OD_ALLOW)),
    [OD_NR_LD] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    [OD_NR_AND] = BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~0x40000000u), /* __X32_SYSCALL_BIT */
    [OD_PRLIMIT] = OD_NR(OD_PRLIMIT, prlimit64, OD_PID_LD),
    [OD_SETAFF] = OD_NR(OD_SETAFF, sched_setaffinity, OD_PID_LD),
    [OD_SETSCHED] = OD_NR(OD_SETSCHED, sched_setscheduler, OD_PID_LD),
    [OD_SETPARAM] = OD_NR(OD_SETPARAM, sched_setparam, OD_PID_LD),
    [OD_SETATTR] = OD_NR(OD_SETATTR, sched_setattr, OD_PID_LD),
    [OD_SETPRIO] = OD_NR(OD_SETPRIO, setpriority, OD_PRIO_LD),
    [OD_IOPRIO] = OD_NR(OD_IOPRIO, ioprio_set, OD_IO_LD),
    [OD_ALLOW] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* (pid_t and int arguments: the kernel reads the low 32 bits) */
    [OD_PID_LD] = OD_ARG(0),
    [OD_PID_EQ] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, OD_TO(OD_PID_EQ, OD_ALLOW2), OD_TO(OD_PID_EQ, OD_DENY)),
    [OD_PRIO_LD] = OD_ARG(0),
    [OD_PRIO_USER] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2 /* PRIO_USER */, OD_TO(OD_PRIO_USER, OD_DENY), 0),
    [OD_PRIO_OTHER] = BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 1 /* PRIO_PGRP */, OD_TO(OD_PRIO_OTHER, OD_ALLOW2), 0),
    [OD_PRIO_WHO_LD] = OD_ARG(1),
    [OD_PRIO_WHO] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, OD_TO(OD_PRIO_WHO, OD_ALLOW2), OD_TO(OD_PRIO_WHO, OD_DENY)),
    [OD_IO_LD] = OD_ARG(0),
    [OD_IO_USER] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 3 /* IOPRIO_WHO_USER */, OD_TO(OD_IO_USER, OD_DENY), 0),
    [OD_IO_PROC] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1 /* IOPRIO_WHO_PROCESS */, OD_TO(OD_IO_PROC, OD_IO_WHO_LD), 0),
    [OD_IO_PGRP] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2 /* IOPRIO_WHO_PGRP */, OD_TO(OD_IO_PGRP, OD_IO_WHO_LD),
                            OD_TO(OD_IO_PGRP, OD_ALLOW2)),
    [OD_IO_WHO_LD] = OD_ARG(1),
    [OD_IO_WHO] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, OD_TO(OD_IO_WHO, OD_ALLOW2), OD_TO(OD_IO_WHO, OD_DENY)),
    [OD_ALLOW2] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    [OD_DENY] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
};

const void *sc_others_deny_program(uint16_t *len) {
    *len = OD_LEN;
    return others_deny;
}
#else
const void *sc_ipc_deny_program(uint16_t *len) {
    *len = 0;
    return NULL;
}
const void *sc_others_deny_program(uint16_t *len) {
    *len = 0;
    return NULL;
}
#endif
