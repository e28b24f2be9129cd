/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Observability internals: the callbacks and metrics a policy carries. */
#ifndef FY_OBSERVE_H
#define FY_OBSERVE_H

#include "internal.h"

struct obs {
    fy_trace_fn trace;
    void *trace_ud;
    fy_audit_fn audit;
    void *audit_ud;
    fy_metrics *metrics; /* a reference, or NULL */
};

void obs_span(const struct obs *o, const char *span, uint32_t phase, uint64_t usec, const char *attrs_fmt, ...)
    FY_PRINTF(5, 6);
void obs_audit(const struct obs *o, uint32_t event, const char *fmt, ...) FY_PRINTF(3, 4);

int metrics_alloc(fy_metrics **ret);
int metrics_json(const fy_metrics *m, char **ret);
fy_metrics *metrics_ref(fy_metrics *m);
void metrics_unref(fy_metrics *m);
void metrics_prepare(fy_metrics *m, const char *backend, uint32_t level, uint64_t usec);
void metrics_start_failure(fy_metrics *m, const char *backend, uint32_t level);
void metrics_result(fy_metrics *m, const char *backend, const fy_result *r);

#endif
