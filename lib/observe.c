/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Trace spans, audit events and metrics (spec sections 258-262). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "handle.h"
#include "observe.h"

void obs_span(const struct obs *o, const char *span, uint32_t phase, uint64_t usec, const char *attrs_fmt, ...) {
    if (!o || !o->trace)
        return;
    char attrs[512] = "{}";
    if (attrs_fmt) {
        va_list ap;
        va_start(ap, attrs_fmt);
        vsnprintf(attrs, sizeof(attrs), attrs_fmt, ap);
        va_end(ap);
    }
    o->trace(o->trace_ud, span, phase, usec, attrs);
}

void obs_audit(const struct obs *o, uint32_t event, const char *fmt, ...) {
    if (!o || !o->audit)
        return;
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    o->audit(o->audit_ud, event, detail);
}

/* ---- metrics ---- */

struct sum {
    uint64_t count, sum;
};

struct group {
    char backend[32];
    uint32_t level;
    struct sum prepare, spawn, runtime;
    uint64_t start_failures, cleanup_failures, violations, cancellations, timeouts, oom, peak_memory;
};

#define MAX_GROUPS 32

struct fy_metrics {
    atomic_int refs;
    pthread_mutex_t lock;
    size_t n;
    struct group g[MAX_GROUPS];
};

int metrics_alloc(fy_metrics **ret) {
    fy_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return FY_E_NOMEM;
    atomic_init(&m->refs, 1);
    pthread_mutex_init(&m->lock, NULL);
    *ret = m;
    return 0;
}

fy_metrics *metrics_ref(fy_metrics *m) {
    if (m)
        atomic_fetch_add(&m->refs, 1);
    return m;
}

void metrics_unref(fy_metrics *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* Called with the lock held; NULL when the table is full (counted nowhere:
 * the cardinality is bounded by design: backends x levels). */
static struct group *group_of(fy_metrics *m, const char *backend, uint32_t level) {
    for (size_t i = 0; i < m->n; i++)
        if (m->g[i].level == level && strcmp(m->g[i].backend, backend) == 0)
            return &m->g[i];
    if (m->n == MAX_GROUPS)
        return NULL;
    struct group *g = &m->g[m->n++];
    snprintf(g->backend, sizeof(g->backend), "%s", backend);
    g->level = level;
    return g;
}

void metrics_prepare(fy_metrics *m, const char *backend, uint32_t level, uint64_t usec) {
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    struct group *g = group_of(m, backend, level);
    if (g) {
        g->prepare.count++;
        g->prepare.sum += usec;
    }
    pthread_mutex_unlock(&m->lock);
}

void metrics_start_failure(fy_metrics *m, const char *backend, uint32_t level) {
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    struct group *g = group_of(m, backend, level);
    if (g)
        g->start_failures++;
    pthread_mutex_unlock(&m->lock);
}

void metrics_result(fy_metrics *m, const char *backend, const fy_result *r) {
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    struct group *g = group_of(m, backend, r->level);
    if (g) {
        uint64_t spawn = r->stage[FY_STAGE_ISOLATION] + r->stage[FY_STAGE_FILESYSTEM] + r->stage[FY_STAGE_EXEC];
        g->spawn.count++;
        g->spawn.sum += spawn;
        g->runtime.count++;
        g->runtime.sum += r->stage[FY_STAGE_RUN];
        g->violations += r->outcome == FY_OUTCOME_SANDBOX_VIOLATION;
        g->cancellations += r->outcome == FY_OUTCOME_CANCELLED;
        g->timeouts += r->outcome == FY_OUTCOME_TIMED_OUT;
        g->oom += r->outcome == FY_OUTCOME_OUT_OF_MEMORY;
        g->start_failures += r->outcome == FY_OUTCOME_INFRASTRUCTURE_FAILURE;
        bool left = false;
        for (int k = FY_LEFT_PROCESSES; k <= FY_LEFT_NETWORK; k++)
            left |= r->left[k] != 0;
        g->cleanup_failures += left;
        if ((r->usage_known & (1u << FY_USAGE_MEMORY_PEAK)) && r->usage[FY_USAGE_MEMORY_PEAK] > g->peak_memory)
            g->peak_memory = r->usage[FY_USAGE_MEMORY_PEAK];
    }
    pthread_mutex_unlock(&m->lock);
}

static json_t *jsum(const struct sum *s) {
    return json_pack("{sIsI}", "count", (json_int_t)s->count, "sum", (json_int_t)s->sum);
}

int metrics_json(const fy_metrics *cm, char **ret) {
    fy_metrics *m = (fy_metrics *)cm;
    json_t *root = json_object(), *groups = json_array();
    if (!root || !groups) {
        json_decref(root);
        json_decref(groups);
        return FY_E_NOMEM;
    }
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->n; i++) {
        const struct group *g = &m->g[i];
        json_t *o = json_object();
        json_object_set_new(o, "executor", json_string(g->backend));
        json_object_set_new(o, "level", json_string(fy_level_name(g->level)));
        json_object_set_new(o, "platform", json_string("linux"));
        json_object_set_new(o, "sandbox_prepare_duration_usec", jsum(&g->prepare));
        json_object_set_new(o, "executor_spawn_duration_usec", jsum(&g->spawn));
        json_object_set_new(o, "executor_runtime_duration_usec", jsum(&g->runtime));
        json_object_set_new(o, "sandbox_start_failures", json_integer((json_int_t)g->start_failures));
        json_object_set_new(o, "sandbox_cleanup_failures", json_integer((json_int_t)g->cleanup_failures));
        json_object_set_new(o, "sandbox_violations", json_integer((json_int_t)g->violations));
        json_object_set_new(o, "executor_cancellations", json_integer((json_int_t)g->cancellations));
        json_object_set_new(o, "executor_timeouts", json_integer((json_int_t)g->timeouts));
        json_object_set_new(o, "executor_oom", json_integer((json_int_t)g->oom));
        json_object_set_new(o, "resource_peak_memory_bytes", json_integer((json_int_t)g->peak_memory));
        json_array_append_new(groups, o);
    }
    pthread_mutex_unlock(&m->lock);
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "groups", groups);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!s)
        return FY_E_NOMEM;
    *ret = s;
    return 0;
}
