/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: the typed result of one attempt. */
#ifndef FORGEYARD_FY_RESULT_H
#define FORGEYARD_FY_RESULT_H

#include "fy-common.h"
#include "fy-error.h"

/* Outcomes: never inferred from an exit code. Never renumbered. */
#define FY_OUTCOME_SUCCEEDED               1  /* exited with status 0 */
#define FY_OUTCOME_FAILED                  2  /* exited with a non-zero status */
#define FY_OUTCOME_SIGNALED                3  /* killed by a signal it did not get from us */
#define FY_OUTCOME_CANCELLED               4  /* fy_handle_cancel; see fy_result_cancel_reason */
#define FY_OUTCOME_TIMED_OUT               5  /* the wall-clock limit passed */
#define FY_OUTCOME_OUT_OF_MEMORY           6  /* the memory limit killed something */
#define FY_OUTCOME_RESOURCE_EXCEEDED       7  /* pids, disk, files or output; see fy_result_detail */
#define FY_OUTCOME_SANDBOX_VIOLATION       8  /* a denied dangerous operation; see fy_result_detail */
#define FY_OUTCOME_INFRASTRUCTURE_FAILURE  9  /* a setup step failed; see fy_result_error_step */

/* Cancellation reasons (fy_handle_cancel). */
#define FY_CANCEL_USER           1
#define FY_CANCEL_RUN_CANCELLED  2
#define FY_CANCEL_SUPERSEDED     3
#define FY_CANCEL_FAIL_FAST      4
#define FY_CANCEL_LEASE_EXPIRED  5
#define FY_CANCEL_RUNNER_DRAIN   6
#define FY_CANCEL_SHUTDOWN       7

/* Stages whose durations a result records (fy_result_stage_usec). */
#define FY_STAGE_PREPARE    1  /* fy_prepare */
#define FY_STAGE_ISOLATION  2  /* creating the namespaces and mapping ids */
#define FY_STAGE_FILESYSTEM 3  /* building the sandbox's filesystem */
#define FY_STAGE_EXEC       4  /* hardening and executing the command */
#define FY_STAGE_RUN        5  /* the workload itself, exec to exit */
#define FY_STAGE_OUTPUT     6  /* draining output after the workload exited */
#define FY_STAGE_CLEANUP    7  /* killing what is left, reaping, releasing */
#define FY_STAGE_CLAIM      8  /* 0.2: taking a pre-started shell (fy_start_shell); 0 when none was taken */

/* Resource usage (fy_result_usage). */
#define FY_USAGE_WALL_USEC        1  /* fy_start to the end of the attempt */
#define FY_USAGE_CPU_USER_USEC    2  /* the sandbox's cgroup (all its processes) */
#define FY_USAGE_CPU_SYSTEM_USEC  3
#define FY_USAGE_MEMORY_PEAK      4  /* bytes */
#define FY_USAGE_IO_READ_BYTES    5
#define FY_USAGE_IO_WRITE_BYTES   6
#define FY_USAGE_PROCESSES        7  /* tasks (processes and threads) created in the
                                        sandbox's pid namespace, the workload included */
#define FY_USAGE_STDOUT_BYTES     8  /* output the library read and delivered (FY_STDIO_FILE and
                                        FY_STDIO_CALLBACK streams; not counted otherwise) */
#define FY_USAGE_STDERR_BYTES     9

/* Cleanup witness (fy_result_cleanup): what was left after the attempt. */
#define FY_LEFT_PROCESSES  1
#define FY_LEFT_MOUNTS     2
#define FY_LEFT_CGROUPS    3
#define FY_LEFT_FILES      4
#define FY_LEFT_NETWORK    5  /* network objects: an attempt's veths and router namespace */

FY_BEGIN_DECLS

/* Immutable; owned by the caller; free with fy_result_free(). */
typedef struct fy_result fy_result;

FY_API int fy_result_outcome(const fy_result *result);
/* The workload's exit status (0..255) when it exited; FY_E_STATE otherwise. */
FY_API int fy_result_exit_code(const fy_result *result);
/* The signal that ended the workload, or 0. */
FY_API int fy_result_signal(const fy_result *result);
/* FY_CANCEL_* for FY_OUTCOME_CANCELLED, else 0. */
FY_API int fy_result_cancel_reason(const fy_result *result);
/* For violations the syscall or operation ("syscall kexec_load"), for
 * RESOURCE_EXCEEDED the resource ("output"), for infrastructure failures the
 * message; NULL otherwise. Borrowed. */
FY_API const char *fy_result_detail(const fy_result *result);
/* For FY_OUTCOME_INFRASTRUCTURE_FAILURE: the failing FY_STEP_* and OS error. */
FY_API uint32_t fy_result_error_step(const fy_result *result);
FY_API int64_t  fy_result_error_os_code(const fy_result *result);
/* The isolation level actually achieved. */
FY_API int fy_result_level(const fy_result *result);
FY_API int fy_result_stage_usec(const fy_result *result, uint32_t stage, uint64_t *ret_usec);
/* 0.2: 1 when the attempt ran in a pre-started shell (fy_start_shell), 0
 * when its sandbox was made from nothing, FY_E_INVAL for NULL. */
FY_API int fy_result_prestarted(const fy_result *result);
/* A usage figure; FY_E_NOTFOUND when this host could not measure it. */
FY_API int fy_result_usage(const fy_result *result, uint32_t what, uint64_t *ret_value);
/* How many of a kind were left behind after cleanup (all 0 on success of
 * the cleanup; anything else is also reported as a cleanup failure). */
FY_API int fy_result_cleanup(const fy_result *result, uint32_t what, uint64_t *ret_count);
/* 1 when captured output (FY_STDIO_FILE, FY_STDIO_CALLBACK) hit
 * FY_LIMIT_OUTPUT and was truncated. */
FY_API int fy_result_output_truncated(const fy_result *result);
/* The whole result, including the isolation achieved, as JSON. */
FY_API int fy_result_to_json(const fy_result *result, char **ret_json, fy_error **reterr);
FY_API void fy_result_free(fy_result *result);

/* "succeeded", "timed-out", ...; NULL for unknown values. */
FY_API const char *fy_outcome_name(uint32_t outcome);
/* "user", "run-cancelled", ...; NULL for unknown values. */
FY_API const char *fy_cancel_reason_name(uint32_t reason);

FY_END_DECLS

#endif
