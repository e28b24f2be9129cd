/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: one running sandbox. */
#ifndef FORGEYARD_FY_HANDLE_H
#define FORGEYARD_FY_HANDLE_H

#include "fy-common.h"
#include "fy-error.h"
#include "fy-prepared.h"
#include "fy-result.h"

FY_BEGIN_DECLS

/* One process tree in one fresh sandbox. Used by one thread at a time, except
 * fy_handle_cancel, which may be called from any thread. */
typedef struct fy_handle fy_handle;

/* Starts the prepared command in a fresh sandbox and returns at once: setup
 * proceeds in the sandbox, and a setup failure ends the attempt with
 * FY_OUTCOME_INFRASTRUCTURE_FAILURE. The handle keeps the prepared plan
 * alive; the caller may free its own reference. */
FY_API int fy_start(const fy_prepared *prepared, fy_handle **ret, fy_error **reterr);

/* A file descriptor that becomes readable whenever fy_handle_process has
 * work to do (exit, output to drain, a deadline, a violation). Owned by the
 * handle: poll it, never close it. */
FY_API int fy_handle_get_fd(fy_handle *handle);
/* The host end of a FY_STDIO_PIPE stream (owned by the handle), or FY_E_STATE. */
FY_API int fy_handle_get_stdio_fd(fy_handle *handle, uint32_t stream);
/* Microseconds until the next deadline the library enforces, FY_UNLIMITED when
 * none. fy_handle_get_fd also wakes at it. */
FY_API int fy_handle_get_timeout_usec(fy_handle *handle, uint64_t *ret_usec);
/* Non-blocking: drains output, enforces deadlines, reaps. Returns 1 when the
 * attempt is over (and *ret_result, when non-NULL, gets a result owned by the
 * caller), 0 while it runs. */
FY_API int fy_handle_process(fy_handle *handle, fy_result **ret_result, fy_error **reterr);
/* Blocks up to timeout_usec (FY_UNLIMITED: until the end). Returns 1 when the
 * attempt is over (result as for fy_handle_process), 0 on timeout. */
FY_API int fy_handle_wait(fy_handle *handle, uint64_t timeout_usec, fy_result **ret_result, fy_error **reterr);
/* Soft-terminates the whole tree, then hard-kills it after the policy's
 * grace period; the attempt ends as FY_OUTCOME_CANCELLED with the reason.
 * Safe from any thread; a second call is a no-op. */
FY_API int fy_handle_cancel(fy_handle *handle, uint32_t reason, fy_error **reterr);
/* Kills and reaps a live sandbox, then frees. NULL is accepted. In a forked
 * copy of the host process it only releases memory. */
FY_API void fy_handle_free(fy_handle *handle);

/* Destroys the orphans of a host program that died with live sandboxes:
 * every sandbox recorded in state_dir (NULL: the default, see
 * fy_policy_set_state_dir) whose owner process is gone is killed, its
 * cgroups and scratch directories are removed, and its record deleted.
 * Sandboxes of live owners are left alone. *ret_destroyed (may be NULL)
 * gets how many were destroyed. flags must be 0. */
FY_API int fy_gc(const char *state_dir, uint64_t flags, uint64_t *ret_destroyed, fy_error **reterr);

FY_END_DECLS

#endif
