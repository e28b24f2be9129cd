/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ABI proof: a host program written and compiled against the headers of
 * the previous release (test/abi/v0.1, the public headers as of ABI node
 * FORGEYARD_SANDBOX_0.1, kept verbatim), linked against and run with this
 * build's library. It drives the whole lifecycle with the old constants and
 * signatures; any renumbered constant, changed signature or changed
 * behaviour of an old call shows as a failure here.
 * Usage: abi-old-consumer SCRATCH-DIR. Exit 0 passed, 77 skipped (no
 * sandbox level on this host), 1 failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#if FY_VERSION != FY_VERSION_NUMBER(0, 1, 0)
#  error "compiled against the wrong headers: this test needs test/abi/v0.1"
#endif

static int failures;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "abi-old-consumer: " __VA_ARGS__); \
            fputc('\n', stderr);                           \
            failures++;                                    \
        }                                                  \
    } while (0)

static const char *msg(fy_error *e) { return e ? fy_error_message(e) : "(no error)"; }

int main(int argc, char **argv) {
    if (argc != 2)
        return fprintf(stderr, "usage: abi-old-consumer SCRATCH-DIR\n"), 1;
    /* Same major version, and not older than these headers. */
    uint32_t v = fy_version();
    CHECK(v >> 16 == FY_VERSION_MAJOR && v >= FY_VERSION, "library version %#x vs headers %#x", (unsigned)v,
          (unsigned)FY_VERSION);

    fy_error *e = NULL;
    fy_caps *caps = NULL;
    if (fy_probe(FY_PROBE_NO_VM, &caps, &e) < 0)
        return fprintf(stderr, "abi-old-consumer: probe: %s\n", msg(e)), 1;
    if (fy_caps_max_level(caps) < FY_LEVEL_PROCESS) {
        fy_caps_free(caps);
        fprintf(stderr, "abi-old-consumer: no sandbox level here: skipped\n");
        return 77;
    }

    /* A policy error keeps its code, step and JSON path. */
    fy_policy *p = NULL;
    CHECK(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e) == 0, "policy_new: %s", msg(e));
    static const char bad[] = "{\"resources\": {\"memory\": \"lots\"}}";
    CHECK(fy_policy_load_json(p, bad, sizeof(bad) - 1, &e) == FY_E_POLICY, "a bad policy was not FY_E_POLICY");
    CHECK(e && fy_error_code(e) == FY_E_POLICY && fy_error_step(e) == FY_STEP_POLICY &&
              fy_error_location(e) && strcmp(fy_error_location(e), "$.resources.memory") == 0,
          "policy error: %s at %s", msg(e), e && fy_error_location(e) ? fy_error_location(e) : "-");
    fy_error_free(e);
    e = NULL;
    CHECK(fy_policy_set_limit(p, FY_LIMIT_PIDS, 64, &e) == 0, "set_limit: %s", msg(e));

    /* stdout to a file; the command's own exit status. */
    char out[4096];
    snprintf(out, sizeof(out), "%s/out.txt", argv[1]);
    CHECK(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, out, &e) == 0, "set_stdio: %s", msg(e));
    const char *const cmd[] = {"/bin/sh", "-c", "echo abi-0.1; exit 7", NULL};
    fy_prepared *pr = NULL;
    fy_handle *h = NULL;
    fy_result *res = NULL;
    if (fy_prepare(p, caps, cmd, &pr, &e) < 0 || fy_start(pr, &h, &e) < 0 ||
        fy_handle_wait(h, 60ULL * 1000000, &res, &e) < 0 || !res) {
        fprintf(stderr, "abi-old-consumer: lifecycle: %s\n", msg(e));
        failures++;
    } else {
        CHECK(fy_result_outcome(res) == FY_OUTCOME_FAILED, "outcome %d (%s)", fy_result_outcome(res),
              fy_outcome_name((uint32_t)fy_result_outcome(res)));
        CHECK(fy_result_exit_code(res) == 7, "exit code %d", fy_result_exit_code(res));
        uint64_t wall = 0;
        CHECK(fy_result_usage(res, FY_USAGE_WALL_USEC, &wall) == 0 && wall > 0, "wall time %llu",
              (unsigned long long)wall);
        FILE *f = fopen(out, "re");
        char line[64] = "";
        CHECK(f && fgets(line, sizeof(line), f) && strcmp(line, "abi-0.1\n") == 0, "stdout file: \"%s\"", line);
        if (f)
            fclose(f);
    }
    fy_error_free(e);
    fy_result_free(res);
    fy_handle_free(h);
    fy_prepared_free(pr);
    fy_policy_free(p);
    fy_caps_free(caps);
    unlink(out);
    return failures ? 1 : 0;
}
