/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: starting, driving, cancelling and freeing a sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "jobnet.h"
#include "observe.h"
#include "os.h"

/* Which ending a result reports when several happen: a security event is
 * never hidden behind a timeout, a resource overrun not behind a cancel;
 * between timeout and cancellation the first one wins. */
static int end_rank(enum end_reason r) {
    switch (r) {
    case END_VIOLATION: return 4;
    case END_RESOURCE: case END_OOM: return 3;
    case END_INFRA: return 2;
    case END_TIMEOUT: case END_CANCEL: return 1;
    default: return 0;
    }
}

void handle_end(fy_handle *h, enum end_reason why, uint32_t step, int64_t os, const char *fmt, ...) {
    if (end_rank(why) <= end_rank(h->end))
        return;
    free(h->end_detail);
    h->end_detail = NULL;
    h->end = why;
    h->infra_step = step;
    h->infra_os = os;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&h->end_detail, fmt, ap) < 0)
            h->end_detail = NULL;
        va_end(ap);
    }
}

#define CHECK_HANDLE(h)                                                                        \
    do {                                                                                       \
        if (!(h))                                                                              \
            return err_set(reterr, FY_E_INVAL, FY_STEP_WAIT, 0, NULL, "handle is NULL");       \
        if ((h)->origin_pid != util_getpid())                                             \
            return err_set(reterr, FY_E_FORKED, FY_STEP_WAIT, 0, NULL,                         \
                           "handle was created in another process");                           \
    } while (0)

static void handle_release(fy_handle *h) {
    jobnet_leave(h, 0); /* (a start that failed, or a handle freed before its result) */
    if (h->wake_fd >= 0)
        os_wake_close(h->wake_fd);
    free(h->end_detail);
    result_unref(h->result);
    prepared_unref(h->pr);
    free(h);
}

int fy_start(const fy_prepared *prepared, fy_handle **ret, fy_error **reterr) {
    return handle_start(prepared, NULL, NULL, ret, reterr);
}

int handle_start(const fy_prepared *prepared, void *shell, const uint64_t *claim_usec, fy_handle **ret,
                 fy_error **reterr) {
    if (!prepared || !ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SPAWN, 0, NULL, "prepared or ret is NULL");
    if (prepared->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_SPAWN, 0, NULL, "plan was prepared in another process");
    const struct fy_backend_ops *b = prepared->sel.backend;
    if (!b->start || !prepared->plan)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SPAWN, 0, NULL,
                       "the %s backend cannot run workloads in this build", b->name);
    fy_handle *h = calloc(1, sizeof(*h));
    if (!h) {
        if (shell)
            (void)b->shell_discard(shell); /* consumed, started or not */
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    }
    h->origin_pid = util_getpid();
    h->backend = b;
    h->pr = prepared_ref(prepared);
    atomic_init(&h->cancel_request, 0);
    h->t_start = util_now_usec();
    h->wake_fd = os_wake_open();
    if (h->wake_fd < 0) {
        int e = -h->wake_fd;
        if (shell)
            (void)b->shell_discard(shell);
        handle_release(h);
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "eventfd: %s", strerror(e));
    }
    uint64_t wall = prepared->policy->limit[FY_LIMIT_WALL_TIME];
    if (wall != FY_UNLIMITED)
        h->deadline = h->t_start + wall;
    const struct obs *obs = &prepared->policy->obs;
    obs_span(obs, "executor.spawn", FY_SPAN_BEGIN, h->t_start, "{\"backend\":\"%s\"}", b->name);
    obs_span(obs, "executor.wait", FY_SPAN_BEGIN, h->t_start, NULL);
    if (shell) {
        h->prestarted = true;
        h->claim_usec = *claim_usec;
    }
    /* A job member: its place on the job's network (made by the first). */
    int r = prepared->jobnet ? jobnet_join(h, reterr) : 0;
    if (r < 0 && shell)
        (void)b->shell_discard(shell);
    if (r == 0)
        r = shell ? b->start_shell(h, shell, reterr) : b->start(h, reterr);
    if (r == BACKEND_SHELL_LOST) {
        /* Nothing of the attempt ran: the caller starts it from nothing. */
        handle_release(h);
        return r;
    }
    if (r < 0) {
        metrics_start_failure(obs->metrics, b->name, prepared->sel.level);
        obs_span(obs, "executor.spawn", FY_SPAN_END, util_now_usec(), "{\"error\":\"%s\"}", fy_error_name(r));
        obs_span(obs, "executor.wait", FY_SPAN_END, util_now_usec(), NULL);
        handle_release(h);
        return r;
    }
    *ret = h;
    return 0;
}

int fy_handle_get_fd(fy_handle *h) {
    fy_error **reterr = NULL;
    CHECK_HANDLE(h);
    return h->backend->get_fd(h);
}

int fy_handle_get_stdio_fd(fy_handle *h, uint32_t stream) {
    fy_error **reterr = NULL;
    CHECK_HANDLE(h);
    if (stream > FY_STDERR)
        return FY_E_INVAL;
    return h->backend->stdio_fd(h, stream);
}

int fy_handle_get_timeout_usec(fy_handle *h, uint64_t *ret_usec) {
    fy_error **reterr = NULL;
    CHECK_HANDLE(h);
    if (!ret_usec)
        return FY_E_INVAL;
    uint64_t next = h->result ? 0 : h->backend->next_deadline(h);
    uint64_t now = util_now_usec();
    *ret_usec = next == 0 ? FY_UNLIMITED : next > now ? next - now : 0;
    return 0;
}

/* Once per attempt, when its result exists: the spans measured inside the
 * sandbox (with their own times), audit events and metrics. */
static void report_result(fy_handle *h) {
    const struct obs *obs = &h->pr->policy->obs;
    const fy_result *r = h->result;
    uint64_t t = h->t_start, iso = r->stage[FY_STAGE_ISOLATION], fs = r->stage[FY_STAGE_FILESYSTEM],
             ex = r->stage[FY_STAGE_EXEC];
    obs_span(obs, "sandbox.network", FY_SPAN_BEGIN, t, NULL);
    obs_span(obs, "sandbox.network", FY_SPAN_END, t + iso, NULL);
    obs_span(obs, "sandbox.mount", FY_SPAN_BEGIN, t + iso, NULL);
    obs_span(obs, "sandbox.mount", FY_SPAN_END, t + iso + fs, NULL);
    obs_span(obs, "executor.spawn", FY_SPAN_END, t + iso + fs + ex, NULL);
    uint64_t end = util_now_usec();
    if (h->cancel_started) {
        obs_span(obs, "executor.cancel", FY_SPAN_BEGIN, h->cancel_started, "{\"outcome\":\"%s\"}",
                 fy_outcome_name(r->outcome));
        obs_span(obs, "executor.cancel", FY_SPAN_END, end, NULL);
    }
    obs_span(obs, "sandbox.cleanup", FY_SPAN_BEGIN, end - r->stage[FY_STAGE_CLEANUP], NULL);
    obs_span(obs, "sandbox.cleanup", FY_SPAN_END, end, NULL);
    obs_span(obs, "executor.wait", FY_SPAN_END, end, "{\"outcome\":\"%s\"}", fy_outcome_name(r->outcome));
    if (r->outcome == FY_OUTCOME_SANDBOX_VIOLATION)
        obs_audit(obs, FY_AUDIT_VIOLATION, "%s", r->detail ? r->detail : "violation");
    bool left = false;
    for (int k = FY_LEFT_PROCESSES; k <= FY_LEFT_NETWORK; k++)
        left |= r->left[k] != 0;
    if (left)
        obs_audit(obs, FY_AUDIT_CLEANUP_FAILURE, "left after cleanup: %llu processes, %llu cgroups, %llu files, %llu network objects",
                  (unsigned long long)r->left[FY_LEFT_PROCESSES], (unsigned long long)r->left[FY_LEFT_CGROUPS],
                  (unsigned long long)r->left[FY_LEFT_FILES], (unsigned long long)r->left[FY_LEFT_NETWORK]);
    metrics_result(obs->metrics, h->backend->name, r);
}

static int finish(fy_handle *h, fy_result **ret_result) {
    if (!h->reported) {
        h->reported = true;
        report_result(h);
    }
    if (ret_result)
        *ret_result = result_ref(h->result);
    return 1;
}

static int process_one(fy_handle *h, fy_result **ret_result, fy_error **reterr);

int fy_handle_process(fy_handle *h, fy_result **ret_result, fy_error **reterr) {
    CHECK_HANDLE(h);
    /* One thread at a time (fy_handle_process(3)): a second one is refused,
     * typed, instead of racing the first through the backend's teardown. */
    if (atomic_exchange(&h->in_process, true))
        return err_set(reterr, FY_E_STATE, FY_STEP_WAIT, 0, NULL,
                       "another thread is driving this handle (fy_handle_wait or fy_handle_process)");
    int r = process_one(h, ret_result, reterr);
    atomic_store(&h->in_process, false);
    return r;
}

static int process_one(fy_handle *h, fy_result **ret_result, fy_error **reterr) {
    if (h->result)
        return finish(h, ret_result);
    uint32_t c = atomic_load(&h->cancel_request);
    if (c) {
        /* Always consume the wakeup, or the handle fd stays readable. */
        os_wake_drain(h->wake_fd);
        if (h->end == END_NONE) {
            /* What already happened comes first: a sandbox that ended
             * before the request is carried out keeps its own ending (a
             * service that exited 0 while nobody drove its handle was
             * reported cancelled). */
            int r0 = h->backend->process(h, reterr);
            if (r0 < 0)
                return r0;
            if (r0 == 1)
                return finish(h, ret_result);
        }
        if (h->end == END_NONE) {
            h->cancel_started = util_now_usec();
            handle_end(h, END_CANCEL, FY_STEP_CANCEL, 0, "cancelled (%s)", fy_cancel_reason_name(c));
            h->cancel_reason = c;
            h->backend->terminate(h);
        }
    }
    int r = h->backend->process(h, reterr);
    if (r < 0)
        return r;
    if (r == 1)
        return finish(h, ret_result);
    return 0;
}

static int wait_driving(fy_handle *h, uint64_t timeout_usec, fy_result **ret_result, fy_error **reterr);

int fy_handle_wait(fy_handle *h, uint64_t timeout_usec, fy_result **ret_result, fy_error **reterr) {
    CHECK_HANDLE(h);
    /* The handle is this thread's for the whole wait, its sleeps included
     * (it was taken only around each step: a second waiter slipped in while
     * the first slept, both drove the handle to its end, and the backend's
     * deadline and descriptor were read while the other tore it down). */
    if (atomic_exchange(&h->in_process, true))
        return err_set(reterr, FY_E_STATE, FY_STEP_WAIT, 0, NULL,
                       "another thread is driving this handle (fy_handle_wait or fy_handle_process)");
    int r = wait_driving(h, timeout_usec, ret_result, reterr);
    atomic_store(&h->in_process, false);
    return r;
}

static int wait_driving(fy_handle *h, uint64_t timeout_usec, fy_result **ret_result, fy_error **reterr) {
    uint64_t start = util_now_usec();
    uint64_t until = timeout_usec == FY_UNLIMITED || timeout_usec > UINT64_MAX - start ? 0 : start + timeout_usec;
    for (;;) {
        int r = process_one(h, ret_result, reterr);
        if (r != 0)
            return r;
        uint64_t now = util_now_usec();
        if (until && now >= until)
            return 0;
        uint64_t wait = until ? until - now : UINT64_MAX;
        uint64_t next = h->backend->next_deadline(h);
        if (next && next - (next > now ? now : next) < wait)
            wait = next > now ? next - now : 0;
        int ms = wait == UINT64_MAX ? -1 : (int)((wait + 999) / 1000 > 60000 ? 60000 : (wait + 999) / 1000);
        int e = -os_wait2(h->backend->get_fd(h), h->wake_fd, ms);
        if (e) {
            return err_set(reterr, err_from_errno(e), FY_STEP_WAIT, e, NULL, "poll: %s", strerror(e));
        }
    }
}

int fy_handle_cancel(fy_handle *h, uint32_t reason, fy_error **reterr) {
    CHECK_HANDLE(h);
    if (!fy_cancel_reason_name(reason))
        return err_set(reterr, FY_E_INVAL, FY_STEP_CANCEL, 0, NULL, "unknown cancellation reason %u", reason);
    unsigned int expected = 0;
    if (atomic_compare_exchange_strong(&h->cancel_request, &expected, reason)) {
        os_wake_signal(h->wake_fd);
    }
    return 0;
}

void fy_handle_free(fy_handle *h) {
    if (!h)
        return;
    if (h->origin_pid == util_getpid())
        h->backend->destroy(h);
    else
        h->backend->forget(h); /* a forked copy: release memory only */
    handle_release(h);
}
