/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: hermetic actions. An action is one command with
 * declared inputs and declared outputs (seed 001's build action, REAPI's
 * Command + input root): argv, environment, platform properties, an input
 * root (a directory, or a tar or cpio archive), a working directory in it,
 * and the output files and directories to collect. It runs under a policy
 * in a fresh sandbox; only the declared outputs come back, each with its
 * SHA-256; the input root is never written. */
#ifndef FORGEYARD_FY_ACTION_H
#define FORGEYARD_FY_ACTION_H

#include "fy-common.h"
#include "fy-error.h"
#include "fy-caps.h"
#include "fy-policy.h"
#include "fy-result.h"
#include "fy-handle.h"

/* Input roots (fy_action_set_input_root). */
#define FY_INPUT_DIRECTORY  1  /* a host directory, never written */
#define FY_INPUT_ARCHIVE    2  /* a tar or cpio archive (any compression libarchive reads) */

/* Declared outputs (fy_action_add_output). */
#define FY_OUTPUT_FILE       1  /* a regular file (or a symbolic link inside the tree) */
#define FY_OUTPUT_DIRECTORY  2  /* a directory, collected whole */
#define FY_OUTPUT_ANY        3  /* REAPI output_paths: whichever the action made */

/* Bounds on what is collected (fy_action_set_limit); FY_UNLIMITED is refused. */
#define FY_ACTION_LIMIT_OUTPUT_BYTES    1  /* sum of the declared outputs' sizes (default 4 GiB) */
#define FY_ACTION_LIMIT_OUTPUT_ENTRIES  2  /* files, links and directories collected (default 100,000) */
#define FY_ACTION_LIMIT_INPUT_ENTRIES   3  /* entries of the input root (default 1,000,000) */
#define FY_ACTION_LIMIT_INPUT_BYTES     4  /* bytes of an archive input root, unpacked (default 16 GiB) */
#define FY_ACTION_LIMIT_MAX_            4  /* not a limit */

FY_BEGIN_DECLS

/* A mutable description; owned by the caller (fy_action_free). */
typedef struct fy_action fy_action;
/* One running or finished action attempt (fy_action_attempt_free). */
typedef struct fy_action_attempt fy_action_attempt;
/* Immutable; owned by the caller (fy_action_result_free). */
typedef struct fy_action_result fy_action_result;

FY_API int  fy_action_new(fy_action **ret, fy_error **reterr);
/* An action document (forgeyard-action(5)): strict JSON, errors name the
 * JSON path. */
FY_API int  fy_action_from_json(const char *json, size_t len, fy_action **ret, fy_error **reterr);
FY_API void fy_action_free(fy_action *action);

/* argv is NULL-terminated and not empty; copied. */
FY_API int fy_action_set_argv(fy_action *action, const char *const *argv, fy_error **reterr);
/* The action's environment is exactly what it declares (no host variable,
 * no default); value NULL removes name. */
FY_API int fy_action_set_env(fy_action *action, const char *name, const char *value, fy_error **reterr);
/* Platform properties the action requires (REAPI Platform): OSFamily,
 * ISA, sandbox-level, network, ... (forgeyard-action(5) lists the known
 * keys). A property this library cannot honour refuses the action at start
 * with FY_E_UNSUPPORTED naming it. */
FY_API int fy_action_set_platform_property(fy_action *action, const char *name, const char *value,
                                           fy_error **reterr);
FY_API int fy_action_set_input_root(fy_action *action, const char *host_path, uint32_t kind, fy_error **reterr);
/* Relative to the input root ("" or NULL: the root itself). */
FY_API int fy_action_set_working_directory(fy_action *action, const char *path, fy_error **reterr);
/* Relative to the working directory; no "..", no absolute path. */
FY_API int fy_action_add_output(fy_action *action, const char *path, uint32_t kind, fy_error **reterr);
/* Where the collected outputs are written: a host directory that must not
 * exist or must be empty (NULL: outputs are hashed and listed, not kept). */
FY_API int fy_action_set_output_directory(fy_action *action, const char *host_dir, fy_error **reterr);
/* Where the action's stdout / stderr are kept (new files; NULL: hashed and
 * discarded). stream is 1 or 2. */
FY_API int fy_action_set_stdio_path(fy_action *action, uint32_t stream, const char *host_path, fy_error **reterr);
/* A host directory under which each attempt makes its private execution
 * root (NULL: $TMPDIR or /tmp). On the input root's file system, inputs
 * are hard-linked where that is safe instead of copied. */
FY_API int fy_action_set_scratch_directory(fy_action *action, const char *host_dir, fy_error **reterr);
FY_API int fy_action_set_limit(fy_action *action, uint32_t limit, uint64_t value, fy_error **reterr);
/* The canonical document and its digest ("sha256:<hex>"): the same action
 * always gives the same digest. */
FY_API int fy_action_to_json(const fy_action *action, char **ret_json, fy_error **reterr);
FY_API int fy_action_digest(const fy_action *action, char **ret_digest, fy_error **reterr);

/* Materialises the execution root, prepares the policy (a copy: the
 * action's argv, environment, working directory and input root replace
 * the policy's command, environment and workspace; every other control
 * stays, and platform properties can only make it stricter) and starts the
 * sandbox. The handle is the attempt's (fy_action_attempt_handle): poll,
 * process, cancel it as any handle; never free it. */
FY_API int fy_action_start(const fy_action *action, const fy_policy *policy, const fy_caps *caps,
                           fy_action_attempt **ret, fy_error **reterr);
/* fy_action_start with flags (0: the same). FY_ACTION_START_SPECULATIVE:
 * the input walk's verdict may run beside the attempt (as in fy_action_run),
 * where nothing the attempt does can reach beyond its own directory; if the
 * verdict then refuses the overlay, the attempt's handle is cancelled and
 * fy_action_finish returns FY_E_AGAIN with nothing collected or kept: start
 * the action again without the flag (walk first). */
#define FY_ACTION_START_SPECULATIVE (1u << 0)
FY_API int fy_action_start_ex(const fy_action *action, const fy_policy *policy, const fy_caps *caps, uint32_t flags,
                              fy_action_attempt **ret, fy_error **reterr);
FY_API fy_handle *fy_action_attempt_handle(fy_action_attempt *attempt);
/* Waits for the sandbox (when it is still running), collects the declared
 * outputs and removes the execution root. Once. */
FY_API int fy_action_finish(fy_action_attempt *attempt, fy_action_result **ret, fy_error **reterr);
/* Kills a running attempt and removes everything it made; NULL ok. */
FY_API void fy_action_attempt_free(fy_action_attempt *attempt);
/* fy_action_start + fy_action_finish. */
FY_API int fy_action_run(const fy_action *action, const fy_policy *policy, const fy_caps *caps,
                         fy_action_result **ret, fy_error **reterr);

/* The action's outcome: the sandbox's (FY_OUTCOME_*), unless collecting the
 * outputs found a declared output that could not be taken: a link out of
 * the tree or a special file (FY_OUTCOME_SANDBOX_VIOLATION) or one beyond
 * the limits (FY_OUTCOME_RESOURCE_EXCEEDED); fy_action_result_detail says
 * which. */
FY_API int fy_action_result_outcome(const fy_action_result *result);
FY_API int fy_action_result_exit_code(const fy_action_result *result);
FY_API const char *fy_action_result_detail(const fy_action_result *result);
/* The sandbox's own result (borrowed; valid while result lives). */
FY_API const fy_result *fy_action_result_sandbox(const fy_action_result *result);
/* The ActionResult-like JSON record (forgeyard-action(5)). */
FY_API int fy_action_result_to_json(const fy_action_result *result, char **ret_json, fy_error **reterr);
FY_API void fy_action_result_free(fy_action_result *result);

/* The cache of unpacked archive input roots (cache_dir NULL: the default,
 * fy_action_run(3)): removes what crashed attempts left, the entries not
 * used for max_age_usec (FY_UNLIMITED: no age bound; 0: every entry), then
 * the least recently used until the cache holds at most max_bytes
 * (FY_UNLIMITED: no bound). An entry an attempt is using is never
 * removed. *ret_removed (optional): entries removed. */
FY_API int fy_action_cache_gc(const char *cache_dir, uint64_t max_bytes, uint64_t max_age_usec,
                              uint64_t *ret_removed, fy_error **reterr);

FY_END_DECLS

#endif
