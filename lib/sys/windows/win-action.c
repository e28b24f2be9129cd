/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The action runner on Windows: not built (action-run.c and action-tree.c
 * materialise input roots and collect outputs with POSIX directory
 * descriptors and libarchive). Actions are still made, parsed, rendered
 * and digested (action.c); running one says FY_E_UNSUPPORTED, and no
 * attempt or result ever exists to be asked about. */
#include <stddef.h>

#include "internal.h"

static int no_runner(fy_error **reterr) {
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                   "hermetic actions are not run on Windows yet (no action runner in this build)");
}

int fy_action_start(const fy_action *action, const fy_policy *policy, const fy_caps *caps, fy_action_attempt **ret,
                    fy_error **reterr) {
    return no_runner(reterr);
}

int fy_action_start_ex(const fy_action *action, const fy_policy *policy, const fy_caps *caps, uint32_t flags,
                       fy_action_attempt **ret, fy_error **reterr) {
    return no_runner(reterr);
}

fy_handle *fy_action_attempt_handle(fy_action_attempt *attempt) { return NULL; }

int fy_action_finish(fy_action_attempt *attempt, fy_action_result **ret, fy_error **reterr) { return no_runner(reterr); }

void fy_action_attempt_free(fy_action_attempt *attempt) {}

int fy_action_run(const fy_action *action, const fy_policy *policy, const fy_caps *caps, fy_action_result **ret,
                  fy_error **reterr) {
    return no_runner(reterr);
}

int fy_action_result_outcome(const fy_action_result *result) { return FY_E_UNSUPPORTED; }
int fy_action_result_exit_code(const fy_action_result *result) { return FY_E_UNSUPPORTED; }
const char *fy_action_result_detail(const fy_action_result *result) { return NULL; }
const fy_result *fy_action_result_sandbox(const fy_action_result *result) { return NULL; }

int fy_action_result_to_json(const fy_action_result *result, char **ret_json, fy_error **reterr) {
    return no_runner(reterr);
}

void fy_action_result_free(fy_action_result *result) {}

int fy_action_cache_gc(const char *cache_dir, uint64_t max_bytes, uint64_t max_age_usec, uint64_t *ret_removed,
                       fy_error **reterr) {
    if (ret_removed)
        *ret_removed = 0;
    return no_runner(reterr);
}

void action_sweep(const char *dir, uint64_t *removed) { (void)dir, (void)removed; }
