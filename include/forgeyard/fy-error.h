/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: error codes, failing steps and the error object. */
#ifndef FORGEYARD_FY_ERROR_H
#define FORGEYARD_FY_ERROR_H

#include "fy-common.h"

/* Return codes. Every fallible function returns >= 0 on success or one of
 * these. The values are the same on every operating system and are never
 * renumbered or reused. */
#define FY_OK               0
#define FY_E_INVAL         (-1)  /* bad argument or misuse of the API */
#define FY_E_NOMEM         (-2)  /* out of memory */
#define FY_E_UNSUPPORTED   (-3)  /* this host or build cannot do what was required */
#define FY_E_DENIED        (-4)  /* the operating system refused (permission) */
#define FY_E_NOTFOUND      (-5)  /* a named file, program or object does not exist */
#define FY_E_POLICY        (-6)  /* the policy is invalid; the error names the JSON path */
#define FY_E_STATE         (-7)  /* the object is not in a state that allows this call */
#define FY_E_FORKED        (-8)  /* the object was created in another process (fork) */
#define FY_E_IO            (-9)  /* an I/O operation failed */
#define FY_E_TIMEOUT       (-10) /* a deadline passed */
#define FY_E_RANGE         (-11) /* a value is out of range or too large */
#define FY_E_INFRA         (-12) /* a sandbox setup step failed; see fy_error_step() */
#define FY_E_INTERNAL      (-13) /* a bug in the library */
#define FY_E_INTEGRITY     (-14) /* content does not match its digest (an image blob, a diff_id) */
#define FY_E_UNSAFE        (-15) /* input refused as hostile: an image entry reaching outside its layer, a device */
#define FY_E_AGAIN         (-16) /* the attempt was superseded before anything of it was kept: start it again */

/* Steps: where a failure happened. Never renumbered. */
#define FY_STEP_NONE          0
#define FY_STEP_POLICY        1  /* parsing or validating a policy */
#define FY_STEP_PROBE         2  /* the capability probe */
#define FY_STEP_SELECT        3  /* backend selection / capability negotiation */
#define FY_STEP_PREPARE       4  /* compiling the plan */
#define FY_STEP_SPAWN         5  /* creating the sandbox process */
#define FY_STEP_USERNS        6
#define FY_STEP_UID_MAP       7
#define FY_STEP_MOUNT         8
#define FY_STEP_PIVOT_ROOT    9
#define FY_STEP_PROC          10
#define FY_STEP_DEV           11
#define FY_STEP_NETNS         12
#define FY_STEP_CGROUP        13
#define FY_STEP_CGROUP_LIMIT  14
#define FY_STEP_SECCOMP       15
#define FY_STEP_LANDLOCK      16
#define FY_STEP_CAPS          17
#define FY_STEP_RLIMIT        18
#define FY_STEP_EXEC          19
#define FY_STEP_WAIT          20
#define FY_STEP_CANCEL        21
#define FY_STEP_CLEANUP       22
#define FY_STEP_OUTPUT        23
#define FY_STEP_SECRET        24
#define FY_STEP_JSON          25  /* rendering JSON */
#define FY_STEP_INPUT         26  /* materialising an action's input root */
#define FY_STEP_COLLECT       27  /* collecting an action's declared outputs */
#define FY_STEP_IMAGE         28  /* resolving, verifying or unpacking a container image */
#define FY_STEP_DEVICE        29  /* a leased device: checking the host node, the device cgroup */
#define FY_STEP_JOBNET        30  /* 0.2: a job network (fy_jobnet_new): its namespace, bridge, rules, a member's link */
#define FY_STEP_PROXY         31  /* the fetch-only network's per-attempt proxy */
#define FY_STEP_RUNTIME       33  /* an external OCI runtime (runc): its bundle, run, delete */

FY_BEGIN_DECLS

/* Rich failure detail, returned through an optional `fy_error **reterr`
 * out-parameter. Owned by the caller; free with fy_error_free(). */
typedef struct fy_error fy_error;

FY_API int         fy_error_code(const fy_error *err);
FY_API uint32_t    fy_error_step(const fy_error *err);
/* The operating system's error number (errno on POSIX), or 0. */
FY_API int64_t     fy_error_os_code(const fy_error *err);
/* A message for humans, UTF-8, never NULL for a non-NULL err. Do not parse. */
FY_API const char *fy_error_message(const fy_error *err);
/* Where in the input the error is: a JSON path such as
 * "$.filesystem.binds[2].target" for policy errors; NULL when not applicable. */
FY_API const char *fy_error_location(const fy_error *err);
FY_API void        fy_error_free(fy_error *err);

/* Static descriptions; unknown values give "unknown". */
FY_API const char *fy_strerror(int code);
FY_API const char *fy_error_name(int code);   /* "FY_E_POLICY" */
FY_API const char *fy_step_name(uint32_t step); /* "mount" */

FY_END_DECLS

#endif
