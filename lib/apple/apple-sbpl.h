/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The apple folder's portable half: the neutral plan (plan.h) compiled into
 * a Seatbelt profile (SBPL) and the spawn facts the Darwin half applies
 * (apple-plan.c), the SBPL string escaper and a small SBPL checker
 * (apple-sbpl.c). Plain C: built and unit-tested on Linux (test/apple/),
 * compiled into the library only on Apple hosts. */
#ifndef FY_APPLE_SBPL_H
#define FY_APPLE_SBPL_H

#include "backend.h"

/* A profile's total size. Seatbelt compiles path patterns into tables of at
 * most 65535 bytes ("pattern serialization length ... exceeds maximum");
 * the text is kept below that so its patterns are too, and one allow form
 * never lists more than APPLE_SBPL_CHUNK bytes of filters (as Nix does). */
#define APPLE_SBPL_MAX (60u * 1024)
#define APPLE_SBPL_CHUNK (16u * 1024)

/* ---- apple-sbpl.c ---- */

/* Appends s as an SBPL string literal ("..." with \\ and \" escaped;
 * UTF-8 kept as it is). 0, or FY_E_POLICY when s holds a control
 * character (0x01-0x1f, 0x7f) or is not valid UTF-8: never escaped,
 * refused (such a name cannot be matched exactly). */
int sbpl_append_string(struct strbuf *sb, const char *s);

/* The path Seatbelt matches for an absolute host path: rules apply after
 * symbolic links are resolved, so /tmp, /var and /etc (links into /private
 * on macOS) are written as /private/...; into out (outlen bytes). 0, or
 * FY_E_POLICY for a path that is not absolute and canonical (empty, ".",
 * ".." or empty components, a trailing '/'), too long, or not a string
 * sbpl_append_string accepts. */
int sbpl_canonical_path(const char *path, char *out, size_t outlen);

/* A small SBPL checker: balanced parentheses, strings and #"regex"
 * literals with only the escapes the escaper makes, no control characters,
 * `(version 1)` then `(deny default)` first, every form an allow or a deny
 * of known operations with known filters, no unfiltered allow of file,
 * exec, mach or sysctl operations, never `(allow default)`, `iokit-open`
 * or `(with no-sandbox)`, and at most APPLE_SBPL_MAX bytes. 0 when the text
 * passes; else -1 with why set (static text, with a byte offset in off). */
int sbpl_check(const char *text, size_t len, const char **why, size_t *off);

/* ---- apple-plan.c ---- */

/* How the apple folder handles each limit, control, entry kind and role
 * (the refusal table: test/apple/ checks every one is listed and behaves so). */
enum apple_how {
    AH_UNLISTED = 0, /* a new field nobody handled yet: the tests fail */
    AH_PROFILE,      /* appears in the profile */
    AH_SPAWN,        /* applied by the Darwin spawner (rlimit, deadline, env, ...) */
    AH_REFUSED,      /* refused at compile (FY_E_UNSUPPORTED) unless at its default */
    AH_CONTROL,      /* negotiated by a control this backend never enforces (reported dropped) */
    AH_UNENFORCED,   /* accepted and reported unenforced in describe() (tmpfs sizes) */
    AH_DENIED,       /* nothing to do: deny default already keeps it out */
};
extern const uint8_t apple_limit_how[FY_LIMIT_MAX_ + 1];
extern const uint8_t apple_control_how[FY_CONTROL_MAX_ + 1];
uint8_t apple_kind_how(uint32_t kind);          /* PE_*: AH_UNLISTED for unknown kinds */
uint8_t apple_role_how(uint32_t role);          /* PR_* */
uint8_t apple_flag_how(uint32_t flag);          /* one PLAN_* bit */

/* Probe facts (caps_set_fact) the Darwin probe records and negotiation reads. */
#define APPLE_FACT_SEATBELT "apple.seatbelt"    /* a deny-default profile was enforced on a child */
#define APPLE_FACT_ROOT "apple.root"            /* the host process is root: a dedicated uid is possible */
#define APPLE_FACT_VM_TOOL "apple.vm-tool"      /* "tart /path" or "lume /path" */

bool apple_seatbelt_usable(const fy_caps *c, struct strbuf *why);
bool apple_can_enforce(const fy_caps *c, uint32_t control, const char **why);
bool apple_vm_usable(const fy_caps *c, struct strbuf *why);
bool apple_vm_can_enforce(const fy_caps *c, uint32_t control, const char **why);

/* The compiled plan: the neutral plan it points into, and what the Darwin
 * half applies besides the profile (which names the per-attempt directory,
 * so it is made at start: apple_profile). */
struct apple_rlimit {
    uint32_t limit;   /* FY_LIMIT_NOFILE, _FSIZE, _STACK, _CORE */
    uint64_t value;   /* FY_UNLIMITED: not set (the host's limit stays) */
};
struct apple_plan {
    const struct fy_plan *np;
    bool dedicated_uid;          /* run as a uid of the plan's range (host root, uid-range enforced) */
    uint32_t uid, gid;           /* the range's first */
    uint32_t host_uid, host_gid; /* the caller's, who runs the workload otherwise */
    struct apple_rlimit rlimits[4];
    size_t nrlimits;
    char *describe_json;
    /* The attempt directory's placeholder of compile-time checks. */
    char *checked_profile;
};

/* The placeholder attempt directory of compile-time checks (as long as a
 * real one may be: the size check holds for it). */
/* The lowest uid a dedicated-uid attempt may run as (and kill every process
 * of): macOS's own accounts and its users (from 501) are below it; the
 * Darwin half also skips any uid an account has. */
#define APPLE_MIN_DEDICATED_UID 1000

/* <sys/syslimits.h>'s OPEN_MAX: macOS refuses RLIMIT_NOFILE above it
 * (EINVAL), so a larger plan limit is applied as this one (lower, never
 * none; describe() says so). */
#define APPLE_OPEN_MAX 10240

#define APPLE_ATTEMPT_PLACEHOLDER \
    "/private/var/folders/xx/xxxxxxxxxxxxxxxxxxxxxxxxxxxx/T/forgeyard-XXXXXXXXXXXXXXXX"

int apple_compile(const struct fy_plan *np, const fy_caps *c, void **ret, fy_error **reterr);
void apple_plan_free(void *plan);
const char *apple_describe(const void *plan);
/* struct fy_backend_ops.workload_ids: the caller's ids; FY_E_UNSUPPORTED
 * with a dedicated uid (chosen per attempt). */
int apple_workload_ids(const void *plan, uint32_t *uid, uint32_t *gid);

/* The profile of one attempt whose private directory is attempt (absolute,
 * canonical, resolved): scratch, generated files and secrets live under
 * attempt/fs<sandbox path>. *ret is malloc'd text. FY_E_UNSUPPORTED for
 * what SBPL cannot express exactly, FY_E_POLICY for a path it cannot
 * name. */
int apple_profile(const struct apple_plan *ap, const char *attempt, char **ret, fy_error **reterr);

/* The host path behind a sandbox path (the plan's target) for this
 * attempt: a workspace or bind entry's host directory, or the attempt's
 * materialised scratch; NULL when the path is under none (malloc'd). */
char *apple_host_path(const struct fy_plan *np, const char *attempt, const char *target);

/* The environment of the attempt: the plan's, with HOME and TMPDIR moved to
 * their host directories and FORGEYARD_SOURCE/_BUILD/_OUTPUT naming where
 * the workspace is (Seatbelt remaps nothing). NULL-terminated, malloc'd
 * (the strings too): free with apple_env_free. NULL on OOM. */
char **apple_env(const struct fy_plan *np, const char *attempt);
void apple_env_free(char **env);

#endif
