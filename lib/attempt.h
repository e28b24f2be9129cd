/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one outcome logic: a backend reports what it observed of an attempt
 * (struct attempt_report); core decides the outcome, with one precedence for
 * every backend, and builds the fy_result. */
#ifndef FY_ATTEMPT_H
#define FY_ATTEMPT_H

#include "handle.h"

struct attempt_report {
    /* The workload's end, as a wait status, when the backend saw it. */
    bool exit_seen;
    int wstatus;
    /* A SIGSYS of the workload is the kernel's seccomp kill of a denied
     * call this backend could not name (no user notification). */
    bool sigsys_is_filter_kill;
    /* A setup step inside the sandbox failed (the command never ran, or
     * could not be executed): step, OS error and a message naming what. */
    bool setup_failed;
    uint32_t setup_step;
    int setup_errno;
    char *setup_detail;          /* owned by the report (freed by attempt_finish) */
    /* Limits the final figures say were hit. */
    bool oom_killed;
    uint64_t memory_limit;       /* for the OOM detail */
    bool pids_limit_hit;
    /* CLOCK_MONOTONIC usec; 0 where unknown. */
    uint64_t t_isolation;        /* namespaces made and ids mapped (the go-ahead when unknown) */
    uint64_t t_filesystem;       /* the sandbox's filesystem is built */
    uint64_t t_exec;             /* the command was executed */
    uint64_t t_exit;             /* the command ended */
    uint64_t t_ended;            /* the sandbox was gone (reaped) */
    uint64_t t_gone;             /* when it ended, as closely as the backend knows: never
                                  * later than t_ended, not later than the host noticed
                                  * (0: t_ended); the wall time counts to it */
    uint64_t t_output_eof;       /* the last captured output was read */
    uint64_t t_cleanup_begin, t_cleanup_end;
    /* Captured output (FY_STDIO_FILE, FY_STDIO_CALLBACK streams). */
    uint64_t output_bytes, output_limit;
    bool output_truncated;
    bool stream_counted[3];
    bool output_limit_beyond_streams; /* the limit binds more (the VM's returned trees) */
    uint64_t stream_bytes[3];
    /* Usage measured by the backend: bit i of usage_known for FY_USAGE_i. */
    uint32_t usage_known;
    uint64_t usage[FY_USAGE_STDERR_BYTES + 1];
    const char *usage_source;    /* static: "cgroup v2", "cgroup v1", "rusage" */
    /* What was left after cleanup (FY_LEFT_*). */
    uint64_t left[FY_LEFT_NETWORK + 1];
    /* The isolation achieved and what enforced the limits (JSON objects,
     * owned by the report). */
    char *isolation_json, *limits_json;
    /* The result's "network" record (fetch-only: the proxy and its audit log), or NULL. */
    char *network_json;
};

/* Fills r (from result_new, made before the backend began its cleanup so
 * that this cannot fail) from the report and the handle's own endings
 * (timeout, cancel, violation, resource, infrastructure: handle_end), makes
 * it h->result, and releases what the report owns. */
void attempt_finish(fy_handle *h, struct attempt_report *rep, fy_result *r);
/* Releases what the report owns (idempotent). */
void attempt_report_clear(struct attempt_report *rep);

#endif
