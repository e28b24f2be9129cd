/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The capability snapshot (struct fy_caps) and the functions probes fill it with. */
#ifndef FY_CAPS_H
#define FY_CAPS_H

#include "internal.h"

enum cap_state {
    CAP_NOT_PROBED = 0, /* no compiled-in probe looked at it */
    CAP_MISSING = 1,
    CAP_PRESENT = 2,
};

struct cap_entry {
    uint8_t state;
    int64_t value;
    char *reason; /* why missing / what was found */
    char *hint;   /* how to fix, when missing */
};

/* A fact a backend folder's probe found (a path, a flag) for its own
 * compile: named by the folder ("linux.cg1_memory"), opaque to core, which
 * only keeps, copies and persists it. */
struct caps_fact {
    char *key, *value;
};

/* What the host is, beyond yes/no. */
struct caps_host {
    bool is_root;         /* effective uid 0 with CAP_SYS_ADMIN */
    uint32_t uid, gid;    /* real ids of the caller */
    char *kernel_release; /* uname -r */
    char *cgroup_mode;    /* "v2", "v1", "hybrid", "none" (reported by fy_caps_to_json) */
    char *cg2_delegated;  /* the cgroup v2 directory the host program delegated (fy_probe_cgroup) */
    struct caps_fact *facts;
    size_t nfacts;
};

struct fy_caps {
    int origin_pid;
    uint64_t probe_flags;
    uint64_t probe_usec; /* how long the probe took */
    bool from_snapshot;  /* loaded from a persisted snapshot (fy_probe_snapshot) */
    bool inconclusive;   /* a probe child did not report even on its retry (a loaded host): never saved */
    struct cap_entry e[FY_CAP_MAX_ + 1];
    struct caps_host host;
    int max_level;
};

fy_caps *caps_new(void);
/* Records a probed capability. reason is a printf format (may be NULL). */
void caps_set(fy_caps *c, uint32_t cap, bool present, int64_t value, const char *reason_fmt, ...)
    FY_PRINTF(5, 6);
void caps_set_hint(fy_caps *c, uint32_t cap, const char *hint_fmt, ...) FY_PRINTF(3, 4);
bool caps_present(const fy_caps *c, uint32_t cap);
/* A backend fact: set (copied; value NULL removes it; FY_E_NOMEM) and read
 * (NULL when absent). */
int caps_set_fact(fy_caps *c, const char *key, const char *value);
const char *caps_fact(const fy_caps *c, const char *key);
/* Deep copy (used to hand the cached snapshot out). NULL on OOM. */
fy_caps *caps_dup(const fy_caps *c);
void caps_free_internal(fy_caps *c);
/* A copy of the process-wide cached probe (the caller's, to free). */
int caps_get_cached(uint64_t flags, fy_caps **ret, fy_error **reterr);
/* Computes max_level from the backend table. */
void caps_finish(fy_caps *c);
/* Every fact of the snapshot as compact JSON (persisted snapshots), and
 * back: strict, NULL on anything that is not exactly that form (the
 * capability count must match this build's). max_level is recomputed by
 * caps_finish. */
char *caps_serialize(const fy_caps *c);
fy_caps *caps_deserialize(const char *text, size_t len);

#endif
