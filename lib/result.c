/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Results: construction, accessors, JSON. */
#include <stdint.h>
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
    [FY_STAGE_CLAIM] = "claim",
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
    free(r->network_json);
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
    if (what < FY_USAGE_WALL_USEC || what > FY_USAGE_STDERR_BYTES)
        return FY_E_UNSUPPORTED;
    if (!(r->usage_known & (1u << what)))
        return FY_E_NOTFOUND;
    *ret_value = r->usage[what];
    return 0;
}

int fy_result_cleanup(const fy_result *r, uint32_t what, uint64_t *ret_count) {
    if (!r || !ret_count)
        return FY_E_INVAL;
    if (what < FY_LEFT_PROCESSES || what > FY_LEFT_NETWORK)
        return FY_E_UNSUPPORTED;
    *ret_count = r->left[what];
    return 0;
}

int fy_result_prestarted(const fy_result *r) { return r ? r->prestarted : FY_E_INVAL; }

int fy_result_stage_usec(const fy_result *r, uint32_t stage, uint64_t *ret_usec) {
    if (!r || !ret_usec)
        return FY_E_INVAL;
    if (stage < FY_STAGE_PREPARE || stage > FY_STAGE_CLAIM)
        return FY_E_UNSUPPORTED;
    *ret_usec = r->stage[stage];
    return 0;
}

/* Rendering an evidence record. A value that cannot be carried as it is
 * (text that is not UTF-8, a count above the JSON integer range) is altered
 * in a documented way and its member path is listed in "altered", so that no
 * member is ever dropped and no alteration goes unnoticed. See
 * forgeyard-sandbox(7), EVIDENCE RECORD. */
#define ALTERED_MAX 32

struct render {
    const char *altered[ALTERED_MAX]; /* static member paths */
    size_t naltered;
    bool failed; /* a json_* allocation failed */
};

static void mark_altered(struct render *rd, const char *path) {
    if (rd->naltered < ALTERED_MAX)
        rd->altered[rd->naltered++] = path;
}

/* A string member: null for NULL; otherwise the text, with every byte that
 * does not start a well-formed UTF-8 sequence replaced by U+FFFD (and the
 * member listed in "altered"). NULL only when out of memory. */
static json_t *text_value(struct render *rd, const char *path, const char *s, size_t n) {
    if (!s)
        return json_null();
    if (util_utf8_valid_prefix(s, n) == n)
        return json_stringn(s, n);
    size_t len;
    char *buf = util_utf8_lossy_n(s, n, &len);
    if (!buf)
        return NULL;
    mark_altered(rd, path);
    json_t *v = json_stringn(buf, len);
    free(buf);
    return v;
}

/* A counter: JSON integers are signed 64-bit, so values above INT64_MAX are
 * rendered as INT64_MAX and the member is listed in "altered". */
static json_t *count_value(struct render *rd, const char *path, uint64_t v) {
    if (v > (uint64_t)INT64_MAX) {
        mark_altered(rd, path);
        v = (uint64_t)INT64_MAX;
    }
    return json_integer((json_int_t)v);
}

/* The name of an enumerated value; "unknown" for a value without one. */
static json_t *name_value(const char *name) { return json_string(name ? name : "unknown"); }

static void put(struct render *rd, json_t *obj, const char *key, json_t *value) {
    if (!obj || !value) {
        json_decref(value);
        rd->failed = true;
    } else if (json_object_set_new(obj, key, value) < 0) {
        rd->failed = true; /* json_object_set_new released value */
    }
}

static int cmp_paths(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Parses a JSON object the backend recorded (isolation, limits). */
static int load_object(const char *what, const char *text, json_t **ret, fy_error **reterr) {
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v && json_error_code(&jerr) == json_error_out_of_memory)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    if (!v)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_JSON, 0, NULL,
                       "the %s record is not valid JSON: %s (at byte %d)", what, jerr.text, jerr.position);
    if (!json_is_object(v)) {
        json_decref(v);
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_JSON, 0, NULL, "the %s record is not a JSON object", what);
    }
    *ret = v;
    return 0;
}

int fy_result_to_json(const fy_result *r, char **ret_json, fy_error **reterr) {
    if (!r || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "result or ret_json is NULL");
    static const char *const stage_paths[] = {
        [FY_STAGE_PREPARE] = "stage_usec.prepare",       [FY_STAGE_ISOLATION] = "stage_usec.isolation",
        [FY_STAGE_FILESYSTEM] = "stage_usec.filesystem", [FY_STAGE_EXEC] = "stage_usec.exec",
        [FY_STAGE_RUN] = "stage_usec.run",               [FY_STAGE_OUTPUT] = "stage_usec.output",
        [FY_STAGE_CLEANUP] = "stage_usec.cleanup",     [FY_STAGE_CLAIM] = "stage_usec.claim",
    };
    static const char *const usage_keys[] = {
        [FY_USAGE_WALL_USEC] = "wall_usec", [FY_USAGE_CPU_USER_USEC] = "cpu_user_usec",
        [FY_USAGE_CPU_SYSTEM_USEC] = "cpu_system_usec", [FY_USAGE_MEMORY_PEAK] = "memory_peak_bytes",
        [FY_USAGE_IO_READ_BYTES] = "io_read_bytes", [FY_USAGE_IO_WRITE_BYTES] = "io_write_bytes",
        [FY_USAGE_PROCESSES] = "processes", [FY_USAGE_STDOUT_BYTES] = "stdout_bytes",
        [FY_USAGE_STDERR_BYTES] = "stderr_bytes",
    };
    static const char *const usage_paths[] = {
        [FY_USAGE_WALL_USEC] = "usage.wall_usec", [FY_USAGE_CPU_USER_USEC] = "usage.cpu_user_usec",
        [FY_USAGE_CPU_SYSTEM_USEC] = "usage.cpu_system_usec", [FY_USAGE_MEMORY_PEAK] = "usage.memory_peak_bytes",
        [FY_USAGE_IO_READ_BYTES] = "usage.io_read_bytes", [FY_USAGE_IO_WRITE_BYTES] = "usage.io_write_bytes",
        [FY_USAGE_PROCESSES] = "usage.processes", [FY_USAGE_STDOUT_BYTES] = "usage.stdout_bytes",
        [FY_USAGE_STDERR_BYTES] = "usage.stderr_bytes",
    };
    static const char *const left_keys[] = {
        [FY_LEFT_PROCESSES] = "processes_left", [FY_LEFT_MOUNTS] = "mounts_left",
        [FY_LEFT_CGROUPS] = "cgroups_left", [FY_LEFT_FILES] = "files_left", [FY_LEFT_NETWORK] = "network_left",
    };
    static const char *const left_paths[] = {
        [FY_LEFT_PROCESSES] = "cleanup.processes_left", [FY_LEFT_MOUNTS] = "cleanup.mounts_left",
        [FY_LEFT_CGROUPS] = "cleanup.cgroups_left", [FY_LEFT_FILES] = "cleanup.files_left",
        [FY_LEFT_NETWORK] = "cleanup.network_left",
    };

    /* The backend's own JSON first: a record that is not a JSON object is a
     * library bug, reported as such rather than rendered as something else. */
    json_t *iso = NULL, *lim = NULL, *net = NULL;
    int rc;
    if (r->isolation_json && (rc = load_object("isolation", r->isolation_json, &iso, reterr)) < 0)
        return rc;
    if (r->cgroup_json && (rc = load_object("limits", r->cgroup_json, &lim, reterr)) < 0) {
        json_decref(iso);
        return rc;
    }
    if (r->network_json && (rc = load_object("network", r->network_json, &net, reterr)) < 0) {
        json_decref(iso);
        json_decref(lim);
        return rc;
    }

    struct render rd = {.naltered = 0};
    json_t *root = json_object();
    /* The evidence record (schema documented in forgeyard-sandbox(7)). */
    put(&rd, root, "version", json_integer(1));
    put(&rd, root, "library", json_string(FY_VERSION_STRING));
    put(&rd, root, "kernel", text_value(&rd, "kernel", r->kernel, r->kernel ? strlen(r->kernel) : 0));
    /* contract_id is a fixed buffer: never read past it, even unterminated. */
    size_t cid_len = strnlen(r->contract_id, sizeof(r->contract_id));
    put(&rd, root, "contract_id", cid_len ? text_value(&rd, "contract_id", r->contract_id, cid_len) : json_null());
    put(&rd, root, "outcome", name_value(fy_outcome_name(r->outcome)));
    put(&rd, root, "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
    put(&rd, root, "signal", r->signal ? json_integer(r->signal) : json_null());
    put(&rd, root, "cancel_reason", r->cancel_reason ? name_value(fy_cancel_reason_name(r->cancel_reason)) : json_null());
    put(&rd, root, "detail", text_value(&rd, "detail", r->detail, r->detail ? strlen(r->detail) : 0));
    if (r->outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE) {
        put(&rd, root, "error_step", name_value(fy_step_name(r->err_step)));
        put(&rd, root, "error_os_code", json_integer(r->err_os));
    }
    put(&rd, root, "backend", text_value(&rd, "backend", r->backend, r->backend ? strlen(r->backend) : 0));
    put(&rd, root, "level", name_value(fy_level_name(r->level)));
    json_t *st = json_object();
    for (uint32_t s = FY_STAGE_PREPARE; s <= FY_STAGE_CLAIM; s++)
        put(&rd, st, stage_names[s], count_value(&rd, stage_paths[s], r->stage[s]));
    put(&rd, root, "stage_usec", st);
    put(&rd, root, "output_bytes", count_value(&rd, "output_bytes", r->output_bytes));
    put(&rd, root, "output_truncated", json_boolean(r->truncated));
    put(&rd, root, "output_limit",
        r->output_limit && r->output_limit != FY_UNLIMITED ? count_value(&rd, "output_limit", r->output_limit)
                                                            : json_null());
    if (!iso)
        iso = json_object();
    /* Whether the sandbox was a pre-started shell is the attempt's fact,
     * not the plan's: core adds it to what the backend reported. */
    put(&rd, iso, "prestarted", json_boolean(r->prestarted));
    put(&rd, root, "isolation", iso);
    json_t *us = json_object();
    for (uint32_t k = FY_USAGE_WALL_USEC; k <= FY_USAGE_STDERR_BYTES; k++)
        put(&rd, us, usage_keys[k],
            (r->usage_known & (1u << k)) ? count_value(&rd, usage_paths[k], r->usage[k]) : json_null());
    put(&rd, us, "source",
        text_value(&rd, "usage.source", r->usage_source, r->usage_source ? strlen(r->usage_source) : 0));
    put(&rd, root, "usage", us);
    json_t *cl = json_object();
    for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_NETWORK; k++)
        put(&rd, cl, left_keys[k], count_value(&rd, left_paths[k], r->left[k]));
    put(&rd, root, "cleanup", cl);
    put(&rd, root, "limits", lim ? lim : json_null());
    if (net)
        put(&rd, root, "network", net);
    if (rd.naltered) {
        qsort(rd.altered, rd.naltered, sizeof(rd.altered[0]), cmp_paths);
        json_t *al = json_array();
        for (size_t i = 0; i < rd.naltered; i++)
            if (!al || json_array_append_new(al, json_string(rd.altered[i])) < 0)
                rd.failed = true;
        put(&rd, root, "altered", al);
    }
    char *s = rd.failed ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!s)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    *ret_json = s;
    return 0;
}
