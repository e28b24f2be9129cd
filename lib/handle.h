/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A running attempt (struct fy_handle) and its result (struct fy_result):
 * the platform-neutral half. Backends keep their own state in h->b. */
#ifndef FY_HANDLE_H
#define FY_HANDLE_H

#include <stdatomic.h>

#include "prepared.h"

struct fy_result {
    atomic_int refs;
    uint32_t outcome;
    int exit_code;          /* -1 when the workload did not exit */
    int signal;
    uint32_t cancel_reason;
    char *detail;
    uint32_t err_step;
    int64_t err_os;
    uint32_t level;
    uint64_t stage[FY_STAGE_CLAIM + 1];
    bool prestarted;        /* ran in a pre-started shell */
    bool truncated;
    uint64_t output_bytes;
    uint64_t output_limit;  /* FY_LIMIT_OUTPUT of the attempt (FY_UNLIMITED: none) */
    char *isolation_json;   /* JSON object text from the backend */
    char *backend;
    /* usage: bit i of usage_known set when usage[i] (FY_USAGE_*) was measured */
    uint32_t usage_known;
    uint64_t usage[FY_USAGE_STDERR_BYTES + 1];
    const char *usage_source;  /* "cgroup v1", "cgroup v2", "rusage", ... */
    uint64_t left[FY_LEFT_NETWORK + 1];
    char *cgroup_json;      /* what enforced the limits, from the backend */
    char *network_json;     /* the "network" record (fetch-only: proxy, requests), or NULL */
    char contract_id[65];   /* environment-contract id (hex SHA-256), "" when none */
    char *kernel;           /* kernel release the attempt ran on */
};

/* Why the library is ending an attempt early (first reason wins). */
enum end_reason {
    END_NONE = 0,
    END_TIMEOUT,
    END_CANCEL,
    END_VIOLATION,
    END_RESOURCE,
    END_OOM,
    END_INFRA,
};

struct fy_handle {
    int origin_pid;
    fy_prepared *pr;                      /* referenced */
    const struct fy_backend_ops *backend;
    void *b;                              /* backend state */
    atomic_uint cancel_request;           /* FY_CANCEL_* from any thread */
    atomic_bool in_process;               /* a thread is in fy_handle_process: another gets FY_E_STATE */
    int wake_fd;                          /* eventfd: cancel from another thread */
    /* ending the attempt early */
    enum end_reason end;
    uint32_t cancel_reason;
    char *end_detail;                     /* violation / resource / infra message */
    uint32_t infra_step;
    int64_t infra_os;
    uint64_t t_start;                     /* CLOCK_MONOTONIC usec at fy_start */
    uint64_t deadline;                    /* wall-clock limit (0: none) */
    fy_result *result;                    /* set when finished */
    bool reported;                        /* spans, audit and metrics emitted */
    uint64_t cancel_started;              /* when the soft terminate of a cancel/timeout began */
    bool prestarted;                      /* started in a claimed pre-started shell */
    uint64_t claim_usec;                  /* ... and how long taking it took */
    void *job;                            /* a job member: the backend's job network (job_make) */
    struct fy_jobnet *jobnet;             /* ... and the job network it holds a member's place in */
    uint32_t job_index;
};

/* Records the first reason to end the attempt; later ones are ignored. */
void handle_end(fy_handle *h, enum end_reason why, uint32_t step, int64_t os, const char *fmt, ...)
    FY_PRINTF(5, 6);

/* api-handle.c: fy_start, or (shell not NULL) start_shell on a shell taken
 * in claim_usec, which is consumed either way (api-shells.c). */
int handle_start(const fy_prepared *prepared, void *shell, const uint64_t *claim_usec, fy_handle **ret,
                 fy_error **reterr);

/* result.c */
fy_result *result_new(void);
fy_result *result_ref(fy_result *r);
void result_unref(fy_result *r);

#endif
