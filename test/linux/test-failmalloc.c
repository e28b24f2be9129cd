/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fy_prepare with each of its allocations failing in turn (this program's
 * malloc, calloc and realloc, which the library's calls reach, fail the
 * Nth one after arming): every prepare either fails with FY_E_NOMEM and an
 * error object, or succeeds with exactly the plan of an unhindered
 * prepare, its record and contract id included. (A lost field used to
 * compile: 84 of 255 such prepares described another plan, with another
 * contract id.) Not under a sanitizer, whose allocator this would bypass.
 *
 *   test-failmalloc [PROFILE-NAME]   (release by default; also
 *                                     standard-ci, development) */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <forgeyard/sandbox.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define FM_SANITIZED 1
#endif
#endif

#ifndef FM_SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static atomic_long fm_count;
static atomic_long fm_fail_at; /* 0: disarmed */

static bool fm_fail(void) {
    long nth = atomic_fetch_add(&fm_count, 1) + 1, at = atomic_load(&fm_fail_at);
    if (!at || nth != at)
        return false;
    errno = ENOMEM;
    return true;
}

void *malloc(size_t n) { return fm_fail() ? NULL : __libc_malloc(n); }
void *calloc(size_t a, size_t b) { return fm_fail() ? NULL : __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return fm_fail() ? NULL : __libc_realloc(p, n); }

/* The plan's canonical JSON (NULL when prepare failed). */
static char *prepare_json(fy_policy *p, long fail_at, int *rc, fy_error **e) {
    const char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
    fy_prepared *pr = NULL;
    atomic_store(&fm_count, 0);
    atomic_store(&fm_fail_at, fail_at);
    *rc = fy_prepare(p, NULL, argv, &pr, e);
    atomic_store(&fm_fail_at, 0);
    char *json = NULL;
    if (*rc == 0 && fy_prepared_to_json(pr, &json, NULL) < 0) {
        fprintf(stderr, "fy_prepared_to_json failed unarmed\n");
        exit(1);
    }
    fy_prepared_free(pr);
    return json;
}

/* A valid policy and a valid action loaded with each of their allocations
 * failing in turn: loaded, or FY_E_NOMEM; never "invalid JSON" (jansson
 * reports many of its lexer's failed allocations as syntax errors: a valid
 * policy was refused as FY_E_POLICY, an action as FY_E_INVAL). */
static int check_json_loads(void) {
    static const char policy_doc[] =
        "{\"version\": 1, \"profile\": \"standard-ci\", \"environment\": {\"set\": {\"LANG\": \"C.UTF-8\", "
        "\"A_LONGER_NAME\": \"a value of some length, to be copied\"}}, \"resources\": {\"pids\": 64, "
        "\"wall_time\": \"30s\"}}";
    static const char action_doc[] =
        "{\"version\": 1, \"arguments\": [\"/bin/sh\", \"-c\", \"echo a long enough command > out/a\"], "
        "\"environment\": {\"PATH\": \"/usr/bin:/bin\"}, \"input_root\": {\"directory\": \"/tmp\"}, "
        "\"outputs\": {\"files\": [\"out/a\", \"out/b\"], \"directories\": [\"d\"]}}";
    int wrong = 0;
    for (int doc = 0; doc < 2; doc++) {
        long total = 0;
        for (long n = 0; n == 0 || n <= total + 8; n++) {
            fy_policy *p = NULL;
            fy_action *a = NULL;
            fy_error *e = NULL;
            if (doc == 0 && fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL) < 0)
                return 1;
            atomic_store(&fm_count, 0);
            atomic_store(&fm_fail_at, n);
            int rc = doc == 0 ? fy_policy_load_json(p, policy_doc, sizeof(policy_doc) - 1, &e)
                              : fy_action_from_json(action_doc, sizeof(action_doc) - 1, &a, &e);
            atomic_store(&fm_fail_at, 0);
            if (n == 0) {
                total = atomic_load(&fm_count);
                if (rc < 0) {
                    printf("FAIL: the unhindered %s load: %s\n", doc ? "action" : "policy", fy_error_message(e));
                    return 1;
                }
            } else if (rc < 0 && rc != FY_E_NOMEM) {
                printf("FAIL: %s load, allocation %ld failed: %s (%d), not FY_E_NOMEM\n", doc ? "action" : "policy", n,
                       e ? fy_error_message(e) : "no error object", rc);
                wrong++;
            }
            fy_error_free(e);
            fy_action_free(a);
            fy_policy_free(p);
        }
        printf("%s load: %ld allocations, each failing in turn\n", doc ? "action" : "policy", total);
    }
    return wrong ? 1 : 0;
}
#endif

int main(int argc, char **argv) {
#ifdef FM_SANITIZED
    (void)argc;
    (void)argv;
    printf("SKIP: under a sanitizer, whose allocator this program cannot stand in for\n");
    return 77;
#else
    uint32_t profile = FY_PROFILE_RELEASE;
    if (argc > 1 && strcmp(argv[1], "standard-ci") == 0)
        profile = FY_PROFILE_STANDARD_CI;
    else if (argc > 1 && strcmp(argv[1], "development") == 0)
        profile = FY_PROFILE_DEVELOPMENT;
    fy_policy *p = NULL;
    fy_caps *caps = NULL;
    fy_error *e = NULL;
    if (fy_policy_new(profile, &p, &e) < 0 || fy_probe(FY_PROBE_NO_VM, &caps, &e) < 0) {
        printf("FAIL: setup: %s\n", fy_error_message(e));
        return 1;
    }
    fy_policy_set_limit(p, FY_LIMIT_PIDS, 64, NULL);
    int rc = 0;
    char *base = prepare_json(p, 0, &rc, &e), *again = prepare_json(p, 0, &rc, &e);
    long total = atomic_load(&fm_count);
    if (!base || !again || strcmp(base, again) != 0) {
        printf("FAIL: two unhindered prepares differ (or failed: %s)\n", e ? fy_error_message(e) : "-");
        return 1;
    }
    free(again);
    int failed = 0, refused = 0, same = 0;
    /* (the allocation count varies a little from run to run: past it, no
     * allocation fails and the plan is the baseline) */
    for (long n = 1; n <= total + 16; n++) {
        fy_error *ne = NULL;
        char *json = prepare_json(p, n, &rc, &ne);
        if (rc == 0 && json && strcmp(json, base) == 0) {
            same++;
        } else if (rc == 0) {
            /* (where the two first differ) */
            size_t at = 0;
            while (json && json[at] && json[at] == base[at])
                at++;
            printf("FAIL: allocation %ld failed, prepare succeeded with another plan (from \"%.60s\")\n", n,
                   json ? json + (at > 20 ? at - 20 : 0) : "(no JSON)");
            failed++;
        } else if (rc != FY_E_NOMEM || !ne) {
            printf("FAIL: allocation %ld failed: %s (%d), not FY_E_NOMEM with an error object\n", n,
                   ne ? fy_error_message(ne) : "no error object", rc);
            failed++;
        } else {
            refused++;
        }
        free(json);
        fy_error_free(ne);
        if (failed > 10)
            break;
    }
    printf("%s: %ld allocations per prepare; %d refused (FY_E_NOMEM), %d the same plan, %d wrong\n",
           failed ? "FAIL" : "ok", total, refused, same, failed);
    failed += check_json_loads();
    free(base);
    fy_caps_free(caps);
    fy_policy_free(p);
    return failed ? 1 : 0;
#endif
}
