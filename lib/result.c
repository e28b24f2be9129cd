/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Results: construction, accessors, JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "handle.h"

static const char *const outcome_names[] = {
    [FY_OUTCOME_SUCCEEDED] = "succeeded",
    [FY_OUTCOME_FAILED] = "failed",
    [FY_OUTCOME_SIGNALED] = "signaled",
    [FY_OUTCOME_CANCELLED] = "cancelled",
    [FY_OUTCOME_TIMED_OUT] = "timed-out",
    [FY_OUTCOME_OUT_OF_MEMORY] = "out-of-memory",
    [FY_OUTCOME_RESOURCE_EXCEEDED] = "resource-exceeded",
    [FY_OUTCOME_SANDBOX_VIOLATION] = "sandbox-violation",
    [FY_OUTCOME_INFRASTRUCTURE_FAILURE] = "infrastructure-failure",
};

static const char *const cancel_names[] = {
    [FY_CANCEL_USER] = "user",
    [FY_CANCEL_RUN_CANCELLED] = "run-cancelled",
    [FY_CANCEL_SUPERSEDED] = "superseded",
    [FY_CANCEL_FAIL_FAST] = "fail-fast",
    [FY_CANCEL_LEASE_EXPIRED] = "lease-expired",
    [FY_CANCEL_RUNNER_DRAIN] = "runner-drain",
    [FY_CANCEL_SHUTDOWN] = "shutdown",
};

static const char *const stage_names[] = {
    [FY_STAGE_PREPARE] = "prepare",   [FY_STAGE_ISOLATION] = "isolation",
    [FY_STAGE_FILESYSTEM] = "filesystem", [FY_STAGE_EXEC] = "exec",
    [FY_STAGE_RUN] = "run",           [FY_STAGE_OUTPUT] = "output",
    [FY_STAGE_CLEANUP] = "cleanup",
};

const char *fy_outcome_name(uint32_t outcome) {
    return outcome < FY_ARRAY_SIZE(outcome_names) ? outcome_names[outcome] : NULL;
}

const char *fy_cancel_reason_name(uint32_t reason) {
    return reason < FY_ARRAY_SIZE(cancel_names) ? cancel_names[reason] : NULL;
}

fy_result *result_new(void) {
    fy_result *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    atomic_init(&r->refs, 1);
    r->exit_code = -1;
    return r;
}

fy_result *result_ref(fy_result *r) {
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void result_unref(fy_result *r) {
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    free(r->detail);
    free(r->isolation_json);
    free(r->cgroup_json);
    free(r->kernel);
    free(r->backend);
    free(r);
}

void fy_result_free(fy_result *result) { result_unref(result); }

int fy_result_outcome(const fy_result *r) { return r ? (int)r->outcome : FY_E_INVAL; }

int fy_result_exit_code(const fy_result *r) {
    if (!r)
        return FY_E_INVAL;
    return r->exit_code >= 0 ? r->exit_code : FY_E_STATE;
}

int fy_result_signal(const fy_result *r) { return r ? r->signal : FY_E_INVAL; }
int fy_result_cancel_reason(const fy_result *r) { return r ? (int)r->cancel_reason : FY_E_INVAL; }
const char *fy_result_detail(const fy_result *r) { return r ? r->detail : NULL; }
uint32_t fy_result_error_step(const fy_result *r) { return r ? r->err_step : FY_STEP_NONE; }
int64_t fy_result_error_os_code(const fy_result *r) { return r ? r->err_os : 0; }
int fy_result_level(const fy_result *r) { return r ? (int)r->level : FY_E_INVAL; }
int fy_result_output_truncated(const fy_result *r) { return r ? r->truncated : FY_E_INVAL; }

int fy_result_usage(const fy_result *r, uint32_t what, uint64_t *ret_value) {
    if (!r || !ret_value)
        return FY_E_INVAL;
    if (what < FY_USAGE_WALL_USEC || what > FY_USAGE_IO_WRITE_BYTES)
        return FY_E_UNSUPPORTED;
    if (!(r->usage_known & (1u << what)))
        return FY_E_NOTFOUND;
    *ret_value = r->usage[what];
    return 0;
}

int fy_result_cleanup(const fy_result *r, uint32_t what, uint64_t *ret_count) {
    if (!r || !ret_count)
        return FY_E_INVAL;
    if (what < FY_LEFT_PROCESSES || what > FY_LEFT_FILES)
        return FY_E_UNSUPPORTED;
    *ret_count = r->left[what];
    return 0;
}

int fy_result_stage_usec(const fy_result *r, uint32_t stage, uint64_t *ret_usec) {
    if (!r || !ret_usec)
        return FY_E_INVAL;
    if (stage < FY_STAGE_PREPARE || stage > FY_STAGE_CLEANUP)
        return FY_E_UNSUPPORTED;
    *ret_usec = r->stage[stage];
    return 0;
}

int fy_result_to_json(const fy_result *r, char **ret_json, fy_error **reterr) {
    if (!r || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "result or ret_json is NULL");
    json_t *root = json_object(), *st = json_object();
    json_t *iso = r->isolation_json ? json_loads(r->isolation_json, 0, NULL) : json_object();
    if (!root || !st || !iso) {
        json_decref(root);
        json_decref(st);
        json_decref(iso);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    }
    /* The evidence record (schema documented in forgeyard-sandbox(7)). */
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "library", json_string(FY_VERSION_STRING));
    json_object_set_new(root, "kernel", r->kernel ? json_string(r->kernel) : json_null());
    json_object_set_new(root, "contract_id", r->contract_id[0] ? json_string(r->contract_id) : json_null());
    json_object_set_new(root, "outcome", json_string(fy_outcome_name(r->outcome)));
    json_object_set_new(root, "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
    json_object_set_new(root, "signal", r->signal ? json_integer(r->signal) : json_null());
    json_object_set_new(root, "cancel_reason",
                        r->cancel_reason ? json_string(fy_cancel_reason_name(r->cancel_reason)) : json_null());
    json_object_set_new(root, "detail", r->detail ? json_string(r->detail) : json_null());
    if (r->outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE) {
        json_object_set_new(root, "error_step", json_string(fy_step_name(r->err_step)));
        json_object_set_new(root, "error_os_code", json_integer(r->err_os));
    }
    json_object_set_new(root, "backend", r->backend ? json_string(r->backend) : json_null());
    json_object_set_new(root, "level", json_string(fy_level_name(r->level)));
    for (uint32_t s = FY_STAGE_PREPARE; s <= FY_STAGE_CLEANUP; s++)
        json_object_set_new(st, stage_names[s], json_integer((json_int_t)r->stage[s]));
    json_object_set_new(root, "stage_usec", st);
    json_object_set_new(root, "output_bytes", json_integer((json_int_t)r->output_bytes));
    json_object_set_new(root, "output_truncated", json_boolean(r->truncated));
    json_object_set_new(root, "isolation", iso);
    static const char *const usage_keys[] = {
        [FY_USAGE_WALL_USEC] = "wall_usec", [FY_USAGE_CPU_USER_USEC] = "cpu_user_usec",
        [FY_USAGE_CPU_SYSTEM_USEC] = "cpu_system_usec", [FY_USAGE_MEMORY_PEAK] = "memory_peak_bytes",
        [FY_USAGE_IO_READ_BYTES] = "io_read_bytes", [FY_USAGE_IO_WRITE_BYTES] = "io_write_bytes",
    };
    json_t *us = json_object();
    for (uint32_t k = FY_USAGE_WALL_USEC; k <= FY_USAGE_IO_WRITE_BYTES; k++)
        json_object_set_new(us, usage_keys[k],
                            (r->usage_known & (1u << k)) ? json_integer((json_int_t)r->usage[k]) : json_null());
    json_object_set_new(us, "source", r->usage_source ? json_string(r->usage_source) : json_null());
    json_object_set_new(root, "usage", us);
    json_t *cl = json_object();
    json_object_set_new(cl, "processes_left", json_integer((json_int_t)r->left[FY_LEFT_PROCESSES]));
    json_object_set_new(cl, "mounts_left", json_integer((json_int_t)r->left[FY_LEFT_MOUNTS]));
    json_object_set_new(cl, "cgroups_left", json_integer((json_int_t)r->left[FY_LEFT_CGROUPS]));
    json_object_set_new(cl, "files_left", json_integer((json_int_t)r->left[FY_LEFT_FILES]));
    json_object_set_new(root, "cleanup", cl);
    json_t *cgj = r->cgroup_json ? json_loads(r->cgroup_json, 0, NULL) : NULL;
    json_object_set_new(root, "limits", cgj ? cgj : json_null());
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!s)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    *ret_json = s;
    return 0;
}
