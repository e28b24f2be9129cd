/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process-wide store of compiled seccomp programs, and their saved form.
 *
 * A program depends only on (class, notify), so each is made once per process and is
 * immutable afterwards (like the probe cache: the only process-wide state, never mutated
 * after it is filled, never freed). It is made either by compiling it (sc_compile, which
 * self checks) or from its saved form, which a probe about to be persisted records in the
 * capabilities (linux_snapshot_extras), so that a persisted probe snapshot
 * (fy_probe_snapshot) spares a new process libseccomp's work.
 *
 * A saved program is never trusted: it is decoded, bounded and held to this library's own
 * contract by the same self check as a compiled one (sc_self_check: every number, the
 * argument classes, foreign architectures, x32) before it is used; its action for foreign
 * architectures must be the profile's violation or KILL_PROCESS; and no run may read a
 * word of seccomp_data the contract does not decide that call by (the instruction
 * pointer, another argument), since samples prove nothing about such a word. Whatever
 * fails is dropped and the program compiled instead: a corrupt or stale saved form costs
 * time, never strength. Within the words it examines the check samples classes of
 * values, so a program crafted to treat one unsampled value of such a word otherwise
 * would pass it: against a writer of the snapshot directory (the caller's own uid) the
 * guard is that directory's owner and mode, not the check.
 *
 * Saved form: "v1 <badarch as 8 hex digits> <base64 of the struct sock_filter array>". */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/filter.h>

#include <sodium.h>

#include "forgeyard/fy-policy.h"
#include "linux-seccomp-internal.h"
#include "internal.h"

#ifndef BPF_MAXINSNS
#  define BPF_MAXINSNS 4096
#endif

struct slot {
    pthread_mutex_t lock;
    bool filled;
    uint32_t cls;
    bool notify, init;
    struct seccomp_program prog;
};

static struct slot slots[] = {
    {PTHREAD_MUTEX_INITIALIZER, false, FY_SECCOMP_GENERAL_BUILD, false, false, {0}},
    {PTHREAD_MUTEX_INITIALIZER, false, FY_SECCOMP_GENERAL_BUILD, true, false, {0}},
    {PTHREAD_MUTEX_INITIALIZER, false, FY_SECCOMP_NETWORKED_TEST, false, false, {0}},
    {PTHREAD_MUTEX_INITIALIZER, false, FY_SECCOMP_NETWORKED_TEST, true, false, {0}},
    {PTHREAD_MUTEX_INITIALIZER, false, 0, false, true, {0}},
};

/* A fork while another thread compiled a program under its slot's lock:
 * the child compiles it again (the half-made one let go of, not freed). */
static void slots_fork_child(void) {
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        if (util_mutex_reclaim(&slots[i].lock)) {
            slots[i].filled = false;
            memset(&slots[i].prog, 0, sizeof(slots[i].prog));
        }
}

__attribute__((constructor)) static void slots_register_fork(void) { util_on_fork_child(slots_fork_child); }

int sc_program_from_saved(uint32_t cls, bool notify, bool init, const char *saved,
                          struct seccomp_program *out) {
    memset(out, 0, sizeof(*out));
    if (!init && cls != FY_SECCOMP_GENERAL_BUILD && cls != FY_SECCOMP_NETWORKED_TEST)
        return -1;
    unsigned badarch = 0;
    int at = 0;
    if (!saved || sscanf(saved, "v1 %8x %n", &badarch, &at) != 1 || at == 0)
        return -1;
    const char *b64 = saved + at;
    size_t b64len = strlen(b64);
    size_t max = (size_t)BPF_MAXINSNS * sizeof(struct sock_filter);
    if (b64len == 0 || b64len > (max / 3 + 1) * 4 || sodium_init() < 0)
        return -1;
    unsigned char *bin = malloc(max);
    size_t got = 0;
    if (!bin || sodium_base642bin(bin, max, b64, b64len, NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
        got == 0 || got % sizeof(struct sock_filter) != 0) {
        free(bin);
        return -1;
    }
    unsigned char *fit = realloc(bin, got); /* ~1 KiB of the 32 KiB buffer */
    if (fit)
        bin = fit;
    out->filter = bin;
    out->len = got / sizeof(struct sock_filter);
    out->badarch = badarch;
    int r;
    if (init) {
        out->notify = false;
        out->name = "init";
        out->version = FY_SECCOMP_INIT_VERSION;
        r = badarch == SECCOMP_RET_KILL_PROCESS ? sc_self_check_init(out, NULL) : -1;
    } else {
        struct profile_actions pa = {
            .violation = notify ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_KILL_PROCESS,
            .badarch = badarch,
            .ptrace_allowed = cls == FY_SECCOMP_NETWORKED_TEST,
        };
        out->notify = notify;
        out->name = cls == FY_SECCOMP_GENERAL_BUILD ? "general-build" : "networked-test";
        out->version = FY_SECCOMP_PROFILE_VERSION;
        r = badarch == pa.violation || badarch == SECCOMP_RET_KILL_PROCESS ? sc_self_check(out, &pa, NULL) : -1;
    }
    if (r < 0) {
        sc_program_free(out);
        return -1;
    }
    return 0;
}

const struct seccomp_program *sc_program_get(uint32_t cls, bool notify, bool init, const char *saved,
                                             fy_error **reterr) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(slots); i++) {
        struct slot *s = &slots[i];
        if (s->init != init || (!init && (s->cls != cls || s->notify != notify)))
            continue;
        pthread_mutex_lock(&s->lock);
        int r = 0;
        if (!s->filled && sc_program_from_saved(cls, notify, init, saved, &s->prog) < 0)
            r = init ? sc_compile_init(&s->prog, reterr) : sc_compile(cls, notify, &s->prog, reterr);
        if (r >= 0)
            s->filled = true;
        pthread_mutex_unlock(&s->lock);
        return r >= 0 ? &s->prog : NULL;
    }
    err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SECCOMP, 0, NULL, "unknown seccomp class %u", cls);
    return NULL;
}

char *sc_program_save(const struct seccomp_program *p) {
    if (!p || !p->filter || p->len == 0 || p->len > BPF_MAXINSNS || sodium_init() < 0)
        return NULL;
    size_t bytes = p->len * sizeof(struct sock_filter);
    size_t b64 = sodium_base64_ENCODED_LEN(bytes, sodium_base64_VARIANT_ORIGINAL);
    char *out = malloc(12 + b64);
    if (!out)
        return NULL;
    snprintf(out, 13, "v1 %08x ", (unsigned)p->badarch);
    sodium_bin2base64(out + 12, b64, p->filter, bytes, sodium_base64_VARIANT_ORIGINAL);
    return out;
}
