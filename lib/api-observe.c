/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: observability. */
#include "observe.h"
#include "policy.h"


#define CHECK_POLICY(p)                                                                      \
    do {                                                                                     \
        if (!(p))                                                                            \
            return err_set(reterr, FY_E_INVAL, FY_STEP_POLICY, 0, NULL, "policy is NULL");   \
        if ((p)->origin_pid != util_getpid())                                           \
            return err_set(reterr, FY_E_FORKED, FY_STEP_POLICY, 0, NULL,                     \
                           "policy was created in another process");                         \
    } while (0)

int fy_policy_set_trace(fy_policy *policy, fy_trace_fn fn, void *userdata, fy_error **reterr) {
    CHECK_POLICY(policy);
    policy->obs.trace = fn;
    policy->obs.trace_ud = fn ? userdata : NULL;
    return 0;
}

int fy_policy_set_audit(fy_policy *policy, fy_audit_fn fn, void *userdata, fy_error **reterr) {
    CHECK_POLICY(policy);
    policy->obs.audit = fn;
    policy->obs.audit_ud = fn ? userdata : NULL;
    return 0;
}

int fy_policy_set_metrics(fy_policy *policy, fy_metrics *metrics, fy_error **reterr) {
    CHECK_POLICY(policy);
    metrics_unref(policy->obs.metrics);
    policy->obs.metrics = metrics_ref(metrics);
    return 0;
}

int fy_metrics_new(fy_metrics **ret, fy_error **reterr) {
    if (!ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "ret is NULL");
    if (metrics_alloc(ret) < 0)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_NONE, 0, NULL, "out of memory");
    return 0;
}

int fy_metrics_to_json(const fy_metrics *metrics, char **ret_json, fy_error **reterr) {
    if (!metrics || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "metrics or ret_json is NULL");
    if (metrics_json(metrics, ret_json) < 0)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    return 0;
}

void fy_metrics_free(fy_metrics *metrics) { metrics_unref(metrics); }
