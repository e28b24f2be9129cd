/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The prepared plan (struct fy_prepared): immutable once built. */
#ifndef FY_PREPARED_H
#define FY_PREPARED_H

#include "backend.h"

struct oci_image;

struct prep_secret {
    const struct pol_secret *decl; /* in prepared->policy */
    unsigned char *value;          /* sodium_malloc'd; wiped on free */
    size_t len;
};

struct fy_prepared {
    int origin_pid;
    fy_policy *policy;  /* private deep copy */
    fy_caps *caps;      /* private copy of the snapshot negotiated against */
    char **argv;        /* NULL-terminated copy */
    size_t argc;
    struct vec env;     /* struct pol_env: explicit set + allowed host values, sorted */
    struct prep_secret *secrets;
    size_t nsecrets;
    struct selection sel;
    bool impure;
    uint64_t prepare_usec;  /* how long fy_prepare took */
    struct fy_plan *neutral; /* the platform-neutral plan (plan.h) */
    void *plan;             /* the backend's compiled plan */
    char *contract_id;      /* prepared_contract_id, built on first use */
    struct oci_image *image; /* the policy's image (lib/oci): holds its layers against gc */
    int refs;               /* the caller's reference + one per live handle (atomic) */
    struct fy_jobnet *jobnet; /* fy_prepare_member: the job network (referenced), or NULL */
    uint32_t job_index;       /* ... and this member's index in it */
};

/* The environment contract id (hex SHA-256 of backend, library, kernel,
 * what the backend enforces and the canonical policy): stable for the same
 * policy on the same host. Built on first use ("" when out of memory). */
const char *prepared_contract_id(const fy_prepared *pr);

/* Handles keep the plan alive. */
fy_prepared *prepared_ref(const fy_prepared *pr);
void prepared_unref(fy_prepared *pr);

#define ARGV_MAX_COUNT 65536
#define ARGV_MAX_BYTES (2u * 1024u * 1024u)

#endif
