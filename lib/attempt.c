/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one outcome logic (attempt.h): which ending a result reports, its
 * detail, its stage durations and usage, for every backend alike. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "jobnet.h"
#include "attempt.h"
#include "prepared.h"

void attempt_report_clear(struct attempt_report *rep) {
    free(rep->setup_detail);
    free(rep->isolation_json);
    free(rep->limits_json);
    free(rep->network_json);
    rep->setup_detail = rep->isolation_json = rep->limits_json = rep->network_json = NULL;
}

/* The outcome, with this precedence: a setup failure (nothing ran as
 * asked); then the library's own endings, a security event never hidden
 * behind a timeout and a resource overrun not behind a cancel (handle_end
 * ranks them); the limits the final figures show; a sandbox that ended
 * without reporting; and only then the workload's own exit. */
static void decide(const fy_handle *h, const struct attempt_report *rep, fy_result *r) {
    if (rep->exit_seen) {
        if (WIFEXITED(rep->wstatus))
            r->exit_code = WEXITSTATUS(rep->wstatus);
        else if (WIFSIGNALED(rep->wstatus))
            r->signal = WTERMSIG(rep->wstatus);
    }
    if (rep->setup_failed) {
        r->outcome = FY_OUTCOME_INFRASTRUCTURE_FAILURE;
        r->err_step = rep->setup_step;
        r->err_os = rep->setup_errno;
        r->exit_code = -1;
        r->signal = 0;
        r->detail = rep->setup_detail ? util_strdup(rep->setup_detail)
                                      : util_asprintf("%s: %s", fy_step_name(rep->setup_step), strerror(rep->setup_errno));
    } else if (h->end == END_VIOLATION) {
        r->outcome = FY_OUTCOME_SANDBOX_VIOLATION;
    } else if (h->end == END_OOM || (rep->oom_killed && h->end == END_NONE)) {
        r->outcome = FY_OUTCOME_OUT_OF_MEMORY;
        if (!h->end_detail)
            r->detail = util_asprintf("memory limit of %llu bytes", (unsigned long long)rep->memory_limit);
    } else if (h->end == END_RESOURCE) {
        r->outcome = FY_OUTCOME_RESOURCE_EXCEEDED;
    } else if (rep->pids_limit_hit && h->end == END_NONE) {
        /* The limit was hit between two polls: the final figures say so. */
        r->outcome = FY_OUTCOME_RESOURCE_EXCEEDED;
        r->detail = util_strdup("pids");
    } else if (h->end == END_INFRA) {
        r->outcome = FY_OUTCOME_INFRASTRUCTURE_FAILURE;
        r->err_step = h->infra_step;
        r->err_os = h->infra_os;
    } else if (h->end == END_TIMEOUT) {
        r->outcome = FY_OUTCOME_TIMED_OUT;
    } else if (h->end == END_CANCEL) {
        r->outcome = FY_OUTCOME_CANCELLED;
        r->cancel_reason = h->cancel_reason;
    } else if (!rep->exit_seen) {
        r->outcome = FY_OUTCOME_INFRASTRUCTURE_FAILURE;
        r->err_step = FY_STEP_WAIT;
        r->detail = util_strdup("the sandbox ended before reporting the workload's status");
    } else if (WIFEXITED(rep->wstatus)) {
        r->outcome = WEXITSTATUS(rep->wstatus) == 0 ? FY_OUTCOME_SUCCEEDED : FY_OUTCOME_FAILED;
    } else if (WIFSIGNALED(rep->wstatus) && WTERMSIG(rep->wstatus) == SIGSYS && rep->sigsys_is_filter_kill) {
        r->outcome = FY_OUTCOME_SANDBOX_VIOLATION;
        r->detail = util_strdup("syscall (killed by the seccomp filter; this host cannot name it)");
    } else {
        r->outcome = FY_OUTCOME_SIGNALED;
    }
    if (!r->detail && h->end_detail)
        r->detail = util_strdup(h->end_detail);
    if (!r->detail && r->left[FY_LEFT_FILES])
        r->detail = util_strdup("cleanup: the attempt directory could not be removed completely");
    if (!r->detail && r->left[FY_LEFT_NETWORK])
        r->detail = util_strdup("cleanup: a network link of the attempt could not be removed");
}

/* b - a when both are known and in order, else 0. */
static uint64_t span(uint64_t a, uint64_t b) { return a && b && b >= a ? b - a : 0; }

void attempt_finish(fy_handle *h, struct attempt_report *rep, fy_result *r) {
    r->backend = util_strdup(h->backend->name);
    r->level = h->pr->sel.level;
    r->kernel = util_strdup(h->pr->caps->host.kernel_release);
    snprintf(r->contract_id, sizeof(r->contract_id), "%s", prepared_contract_id(h->pr));
    r->isolation_json = rep->isolation_json;
    r->cgroup_json = rep->limits_json;
    r->network_json = rep->network_json;
    rep->isolation_json = rep->limits_json = rep->network_json = NULL;
    r->output_bytes = rep->output_bytes;
    r->truncated = rep->output_truncated;
    /* The limit binds the streams the library drains and whatever else the
     * backend counts: none of them, no limit to report (a caller's
     * descriptor or pipe is the caller's). */
    r->output_limit = rep->stream_counted[1] || rep->stream_counted[2] || rep->output_limit_beyond_streams
                          ? rep->output_limit
                          : 0;
    memcpy(r->left, rep->left, sizeof(r->left));
    decide(h, rep, r);

    /* Stage durations, all on one clock (CLOCK_MONOTONIC inside and out);
     * a stage whose bounds are unknown is 0, never a guess. */
    uint64_t t_iso = rep->t_isolation;
    r->stage[FY_STAGE_PREPARE] = h->pr->prepare_usec;
    r->stage[FY_STAGE_ISOLATION] = t_iso > h->t_start ? t_iso - h->t_start : 0;
    r->stage[FY_STAGE_FILESYSTEM] = span(t_iso, rep->t_filesystem);
    r->stage[FY_STAGE_EXEC] = span(rep->t_filesystem, rep->t_exec);
    r->stage[FY_STAGE_RUN] = span(rep->t_exec, rep->t_exit);
    uint64_t t_end = rep->t_ended ? rep->t_ended : rep->t_cleanup_begin;
    r->stage[FY_STAGE_OUTPUT] = rep->t_output_eof > t_end ? rep->t_output_eof - t_end : 0;
    r->stage[FY_STAGE_CLEANUP] = span(rep->t_cleanup_begin, rep->t_cleanup_end);
    r->stage[FY_STAGE_CLAIM] = h->claim_usec;
    r->prestarted = h->prestarted;

    /* Usage: the wall time from fy_start to the sandbox's end (when it
     * ended, not when a host busy elsewhere came to reap it), the
     * delivered output of each counted stream, and what the backend
     * measured. */
    memcpy(r->usage, rep->usage, sizeof(r->usage));
    r->usage_known = rep->usage_known;
    uint64_t t_gone = rep->t_gone && rep->t_gone <= t_end ? rep->t_gone : t_end;
    r->usage[FY_USAGE_WALL_USEC] = t_gone > h->t_start ? t_gone - h->t_start : 0;
    r->usage_known |= 1u << FY_USAGE_WALL_USEC;
    for (int i = 1; i < 3; i++) {
        uint32_t k = i == 1 ? FY_USAGE_STDOUT_BYTES : FY_USAGE_STDERR_BYTES;
        if (rep->stream_counted[i]) {
            r->usage[k] = rep->stream_bytes[i];
            r->usage_known |= 1u << k;
        }
    }
    r->usage_source = rep->usage_source;
    attempt_report_clear(rep);
    h->result = r;
    /* A job member's link is gone with its cleanup: its place is free. */
    jobnet_leave(h, r->left[FY_LEFT_NETWORK]);
}
