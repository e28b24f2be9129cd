/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: observability: trace spans, security audit events
 * and metrics. Everything is per object (never global), and callbacks run
 * synchronously on the thread that called into the library (never on a
 * library thread, never in a signal handler). */
#ifndef FORGEYARD_FY_OBSERVE_H
#define FORGEYARD_FY_OBSERVE_H

#include "fy-common.h"
#include "fy-error.h"
#include "fy-policy.h"

/* Span phases. */
#define FY_SPAN_BEGIN 1
#define FY_SPAN_END   2

/* Security audit events. */
#define FY_AUDIT_VIOLATION          1  /* a denied dangerous operation ended an attempt */
#define FY_AUDIT_DOWNGRADE_REJECTED 2  /* a policy asked for less than required, or more than the host gives */
#define FY_AUDIT_CLEANUP_FAILURE    3  /* something of an attempt could not be removed */

FY_BEGIN_DECLS

/* span: "sandbox.prepare", "sandbox.mount", "sandbox.network",
 * "sandbox.resource", "executor.spawn", "executor.wait", "executor.cancel",
 * "sandbox.cleanup". usec: CLOCK_MONOTONIC microseconds of the event (spans
 * measured inside the sandbox are reported when they become known, with
 * their own times). attrs_json: a small JSON object (backend, outcome...). */
typedef void (*fy_trace_fn)(void *userdata, const char *span, uint32_t phase, uint64_t usec, const char *attrs_json);
typedef void (*fy_audit_fn)(void *userdata, uint32_t event, const char *detail);

/* Set on a policy; plans prepared from it and their handles report to it.
 * fn NULL removes the callback. */
FY_API int fy_policy_set_trace(fy_policy *policy, fy_trace_fn fn, void *userdata, fy_error **reterr);
FY_API int fy_policy_set_audit(fy_policy *policy, fy_audit_fn fn, void *userdata, fy_error **reterr);

/* Counters of attempts (low cardinality: grouped by executor kind,
 * isolation level and platform). Thread-safe; reference counted: every
 * policy, plan and handle that uses it holds a reference. */
typedef struct fy_metrics fy_metrics;
FY_API int fy_metrics_new(fy_metrics **ret, fy_error **reterr);
FY_API int fy_policy_set_metrics(fy_policy *policy, fy_metrics *metrics, fy_error **reterr);
/* A snapshot as JSON: {"groups": [{"executor", "level", "platform",
 * "sandbox_prepare_duration_usec": {"count", "sum"}, ...}]}. */
FY_API int fy_metrics_to_json(const fy_metrics *metrics, char **ret_json, fy_error **reterr);
FY_API void fy_metrics_free(fy_metrics *metrics);

FY_END_DECLS

#endif
