/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: the error object accessors and static tables. */
#include <stdlib.h>

#include "internal.h"

int fy_error_code(const fy_error *err) { return err ? err->code : FY_E_INVAL; }
uint32_t fy_error_step(const fy_error *err) { return err ? err->step : FY_STEP_NONE; }
int64_t fy_error_os_code(const fy_error *err) { return err ? err->os_code : 0; }
const char *fy_error_message(const fy_error *err) { return err ? err->message : NULL; }
const char *fy_error_location(const fy_error *err) { return err ? err->location : NULL; }

void fy_error_free(fy_error *err) {
    if (!err || err->is_static)
        return;
    free(err->message);
    free(err->location);
    free(err);
}

static const struct {
    int code;
    const char *name, *text;
} codes[] = {
    {FY_OK, "FY_OK", "success"},
    {FY_E_INVAL, "FY_E_INVAL", "invalid argument"},
    {FY_E_NOMEM, "FY_E_NOMEM", "out of memory"},
    {FY_E_UNSUPPORTED, "FY_E_UNSUPPORTED", "not supported on this host or build"},
    {FY_E_DENIED, "FY_E_DENIED", "permission denied"},
    {FY_E_NOTFOUND, "FY_E_NOTFOUND", "not found"},
    {FY_E_POLICY, "FY_E_POLICY", "invalid policy"},
    {FY_E_STATE, "FY_E_STATE", "invalid state for this call"},
    {FY_E_FORKED, "FY_E_FORKED", "object belongs to another process"},
    {FY_E_IO, "FY_E_IO", "input/output error"},
    {FY_E_TIMEOUT, "FY_E_TIMEOUT", "timed out"},
    {FY_E_RANGE, "FY_E_RANGE", "value out of range"},
    {FY_E_INFRA, "FY_E_INFRA", "sandbox setup step failed"},
    {FY_E_INTERNAL, "FY_E_INTERNAL", "internal error"},
    {FY_E_INTEGRITY, "FY_E_INTEGRITY", "content does not match its digest"},
    {FY_E_UNSAFE, "FY_E_UNSAFE", "input refused as unsafe"},
    {FY_E_AGAIN, "FY_E_AGAIN", "superseded: start again"},
};

const char *fy_strerror(int code) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(codes); i++)
        if (codes[i].code == code)
            return codes[i].text;
    return "unknown";
}

const char *fy_error_name(int code) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(codes); i++)
        if (codes[i].code == code)
            return codes[i].name;
    return "unknown";
}

static const char *const step_names[] = {
    [FY_STEP_NONE] = "none",         [FY_STEP_POLICY] = "policy",
    [FY_STEP_PROBE] = "probe",       [FY_STEP_SELECT] = "select",
    [FY_STEP_PREPARE] = "prepare",   [FY_STEP_SPAWN] = "spawn",
    [FY_STEP_USERNS] = "userns",     [FY_STEP_UID_MAP] = "uid-map",
    [FY_STEP_MOUNT] = "mount",       [FY_STEP_PIVOT_ROOT] = "pivot-root",
    [FY_STEP_PROC] = "proc",         [FY_STEP_DEV] = "dev",
    [FY_STEP_NETNS] = "netns",       [FY_STEP_CGROUP] = "cgroup",
    [FY_STEP_CGROUP_LIMIT] = "cgroup-limit", [FY_STEP_SECCOMP] = "seccomp",
    [FY_STEP_LANDLOCK] = "landlock", [FY_STEP_CAPS] = "capabilities",
    [FY_STEP_RLIMIT] = "rlimit",     [FY_STEP_EXEC] = "exec",
    [FY_STEP_WAIT] = "wait",         [FY_STEP_CANCEL] = "cancel",
    [FY_STEP_CLEANUP] = "cleanup",   [FY_STEP_OUTPUT] = "output",
    [FY_STEP_SECRET] = "secret",     [FY_STEP_JSON] = "json",
    [FY_STEP_INPUT] = "input",       [FY_STEP_COLLECT] = "collect",
    [FY_STEP_IMAGE] = "image",       [FY_STEP_DEVICE] = "device",
    [FY_STEP_JOBNET] = "jobnet",     [FY_STEP_PROXY] = "proxy",
    [FY_STEP_RUNTIME] = "runtime",
};

const char *fy_step_name(uint32_t step) {
    if (step < FY_ARRAY_SIZE(step_names) && step_names[step])
        return step_names[step];
    return "unknown";
}
