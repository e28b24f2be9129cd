/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: a validated, negotiated, immutable execution plan. */
#ifndef FORGEYARD_FY_PREPARED_H
#define FORGEYARD_FY_PREPARED_H

#include "fy-common.h"
#include "fy-error.h"
#include "fy-caps.h"
#include "fy-policy.h"

/* What became of a control after negotiation (fy_prepared_control). */
#define FY_CONTROL_STATE_OFF       0  /* not asked for */
#define FY_CONTROL_STATE_ENFORCED  1  /* will be enforced */
#define FY_CONTROL_STATE_DROPPED   2  /* preferred, but this host cannot give it */

FY_BEGIN_DECLS

/* Immutable; safe to share between threads. */
typedef struct fy_prepared fy_prepared;

/* Validates the policy against the capabilities (caps may be NULL: the
 * cached probe is used), selects the least-cost backend that satisfies every
 * requirement and compiles the plan for the NULL-terminated argv. Fails with
 * FY_E_UNSUPPORTED naming every missing capability when the host cannot give
 * what the policy requires; never downgrades silently. */
FY_API int  fy_prepare(const fy_policy *policy, const fy_caps *caps, const char *const *argv,
                       fy_prepared **ret, fy_error **reterr);
FY_API void fy_prepared_free(fy_prepared *prepared);

/* "linux-namespace", "linux-process", ...; borrowed. */
FY_API const char *fy_prepared_backend(const fy_prepared *prepared);
FY_API int fy_prepared_level(const fy_prepared *prepared);
/* FY_CONTROL_STATE_OFF / _ENFORCED / _DROPPED, or FY_E_UNSUPPORTED. */
FY_API int fy_prepared_control(const fy_prepared *prepared, uint32_t control);
/* 1 when the plan is impure (host network or host toolchain), else 0. */
FY_API int fy_prepared_is_impure(const fy_prepared *prepared);
/* The negotiated plan as JSON (backend, level, controls, dropped
 * preferences and why). Free with fy_free. */
FY_API int fy_prepared_to_json(const fy_prepared *prepared, char **ret_json, fy_error **reterr);

FY_END_DECLS

#endif
