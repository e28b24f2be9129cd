/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Naming a system call (from a seccomp_notif's arch and nr) and telling whether a
 * profile treats it as a violation: what the supervisor needs to report a denied call. */
#include <stdio.h>
#include <stdlib.h>

#include <seccomp.h>

#include "forgeyard/fy-policy.h"
#include "linux-seccomp-internal.h"

/* ---------------------------------------------------------------------------------- */
/* naming                                                                             */

static const struct {
    uint32_t token;
    const char *name;
} arch_names[] = {
    { SCMP_ARCH_X86_64, "x86_64" }, { SCMP_ARCH_X86, "i386" }, { SCMP_ARCH_X32, "x32" },
    { SCMP_ARCH_ARM, "arm" }, { SCMP_ARCH_AARCH64, "aarch64" },
    { SCMP_ARCH_MIPS, "mips" }, { SCMP_ARCH_MIPS64, "mips64" }, { SCMP_ARCH_MIPS64N32, "mips64n32" },
    { SCMP_ARCH_MIPSEL, "mipsel" }, { SCMP_ARCH_MIPSEL64, "mipsel64" },
    { SCMP_ARCH_MIPSEL64N32, "mipsel64n32" }, { SCMP_ARCH_PPC, "ppc" }, { SCMP_ARCH_PPC64, "ppc64" },
    { SCMP_ARCH_PPC64LE, "ppc64le" }, { SCMP_ARCH_S390, "s390" }, { SCMP_ARCH_S390X, "s390x" },
    { SCMP_ARCH_PARISC, "parisc" }, { SCMP_ARCH_PARISC64, "parisc64" },
#ifdef SCMP_ARCH_RISCV64
    { SCMP_ARCH_RISCV64, "riscv64" },
#endif
#ifdef SCMP_ARCH_LOONGARCH64
    { SCMP_ARCH_LOONGARCH64, "loongarch64" },
#endif
};

const char *sc_syscall_name(uint32_t arch, int nr, char *buf, size_t len) {
    if (!buf || len == 0)
        return "";
    uint32_t token = arch;
    if (arch == SCMP_ARCH_X86_64 && nr != -1 && ((uint32_t)nr & X32_BIT))
        token = SCMP_ARCH_X32;
    const char *aname = NULL;
    for (size_t i = 0; i < FY_ARRAY_SIZE(arch_names); i++)
        if (arch_names[i].token == token)
            aname = arch_names[i].name;
    bool native = token == seccomp_arch_native();

    char *s = aname ? seccomp_syscall_resolve_num_arch(token, nr) : NULL;
    const char *sname = s;
    if (!sname) {
        /* The unified numbers are the same everywhere (x32: with its bit). */
        int base = token == SCMP_ARCH_X32 ? (int)((uint32_t)nr & ~X32_BIT) : nr;
        for (size_t i = 0; aname && i < FY_ARRAY_SIZE(sc_known) && !sname; i++)
            if (sc_known[i].unified_nr >= 0 && sc_known[i].unified_nr == base)
                sname = sc_known[i].name;
    }
    char prefix[32] = "";
    if (!native)
        snprintf(prefix, sizeof(prefix), "%s:", aname ? aname : "arch");
    if (!aname && !native)
        snprintf(prefix, sizeof(prefix), "arch 0x%08x:", (unsigned)arch);
    if (sname)
        snprintf(buf, len, "%s%s", prefix, sname);
    else
        snprintf(buf, len, "%ssyscall %d", prefix, nr);
    free(s);
    return buf;
}

/* Whether native call nr (>= 0) is an entry of the known table of kind
 * k1 or k2. */
static int known_of_kind(int nr, int k1, int k2) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known); i++)
        if ((sc_known[i].kind == k1 || sc_known[i].kind == k2) && sc_entry_nr(&sc_known[i]) == nr)
            return 1;
    return 0;
}

int sc_is_noted(uint32_t cls, uint32_t arch, int nr) {
    if (cls != FY_SECCOMP_GENERAL_BUILD || arch != seccomp_arch_native() || nr < 0 ||
        (seccomp_arch_native() == SCMP_ARCH_X86_64 && ((uint32_t)nr & X32_BIT)))
        return 0;
    return known_of_kind(nr, K_PTRACE, K_PTRACE);
}

int sc_is_violation(uint32_t cls, uint32_t arch, int nr) {
    if (cls != FY_SECCOMP_GENERAL_BUILD && cls != FY_SECCOMP_NETWORKED_TEST)
        return 0;
    uint32_t native = seccomp_arch_native();
    if (arch != native)
        return 1;
    if (native == SCMP_ARCH_X86_64 && nr != -1 && ((uint32_t)nr & X32_BIT))
        return 1;
    if (nr < 0)
        return 0;
    return known_of_kind(nr, K_VIOLATION, K_IOCTL);
}
