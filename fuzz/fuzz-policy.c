/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the policy JSON loader, validator and renderer.
 *
 * For every input: load it on top of a STANDARD_CI policy. When it loads,
 * render it canonically, load that into a fresh policy and render again:
 * the two renderings must be identical (abort() otherwise), and a policy
 * that loaded must also validate. A rejected load must leave the policy
 * exactly as it was (all or nothing) and must come with an error that names
 * a location.
 *
 * No processes, no files, no environment: only the input bytes. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgeyard/sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *a, const char *b)
{
    fprintf(stderr, "fuzz-policy: %s\n", what);
    if (a)
        fprintf(stderr, "--- first:\n%s\n", a);
    if (b)
        fprintf(stderr, "--- second:\n%s\n", b);
    abort();
}

static char *render(const fy_policy *p, const char *what)
{
    char *js = NULL;
    fy_error *e = NULL;
    if (fy_policy_to_json(p, &js, &e) < 0 || !js)
        fail(what, e ? fy_error_message(e) : "no error object", NULL);
    fy_error_free(e);
    return js;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fy_policy *p = NULL, *q = NULL;
    fy_error *e = NULL;
    char *before = NULL, *j1 = NULL, *j2 = NULL, *after = NULL;

    if (fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL) < 0 || !p)
        return 0; /* out of memory */
    before = render(p, "to_json of a fresh policy failed");

    int rc = fy_policy_load_json(p, (const char *)data, size, &e);
    if (rc < 0) {
        /* Rejected: a real error, and nothing half-applied. */
        if (!e || fy_error_code(e) != rc || !fy_error_message(e))
            fail("rejection without a matching error object", NULL, NULL);
        if (rc != FY_E_NOMEM) {
            const char *loc = fy_error_location(e);
            if (!loc || loc[0] != '$')
                fail("policy error without a JSON-path location", fy_error_message(e), NULL);
            after = render(p, "to_json after a rejected load failed");
            if (strcmp(before, after) != 0)
                fail("a rejected load changed the policy", before, after);
        }
        goto out;
    }

    if (fy_policy_validate(p, &e) < 0)
        fail("a loaded policy does not validate", e ? fy_error_message(e) : NULL,
             e ? fy_error_location(e) : NULL);

    j1 = render(p, "to_json of the loaded policy failed");
    if (fy_policy_new(FY_PROFILE_STANDARD_CI, &q, NULL) < 0 || !q)
        goto out;
    fy_error_free(e);
    e = NULL;
    rc = fy_policy_load_json(q, j1, strlen(j1), &e);
    if (rc < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "canonical JSON does not load back: %s at %s", e ? fy_error_message(e) : "?",
                 e && fy_error_location(e) ? fy_error_location(e) : "?");
        fail(msg, j1, NULL);
    }
    j2 = render(q, "to_json of the reloaded policy failed");
    if (strcmp(j1, j2) != 0)
        fail("round trip is not stable", j1, j2);

out:
    fy_error_free(e);
    fy_free(before);
    fy_free(after);
    fy_free(j1);
    fy_free(j2);
    fy_policy_free(q);
    fy_policy_free(p);
    return 0;
}
