/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: pre-started sandbox shells (fy_shells_new(3)). */
#ifndef FORGEYARD_FY_SHELLS_H
#define FORGEYARD_FY_SHELLS_H

#include "fy-common.h"
#include "fy-error.h"
#include "fy-handle.h"
#include "fy-prepared.h"

FY_BEGIN_DECLS

/* A host-owned set of sandbox shells made before they are asked for: the
 * part of a start that depends on no attempt (fresh namespaces, the
 * sandbox's init, its ids mapped), so that fy_start_shell only does the
 * rest. A shell holds nothing of any attempt before its claim (no host
 * path, plan, secret, environment or workload byte), serves at most one
 * attempt, and is discarded, witnessed gone, when unclaimed past the idle
 * limit, when a claiming plan needs what it was not made with, when the
 * host process forks, when the library is unloaded and when the set is
 * freed. Shells are made only by fy_shells_new and fy_shells_fill, never
 * behind the host's back. Thread-safe. */
typedef struct fy_shells fy_shells;

/* A set that keeps up to count (1..64) shells shaped like prepared's
 * sandbox (same backend, namespaces, ids, cgroup parents), each discarded
 * after idle_usec (>= 1 ms, <= 1 hour) unclaimed. Makes none yet:
 * fy_shells_fill does. FY_E_UNSUPPORTED when prepared's backend cannot
 * make shells on this host. The set keeps prepared alive. */
FY_API int fy_shells_new(const fy_prepared *prepared, uint32_t count, uint64_t idle_usec, fy_shells **ret,
                         fy_error **reterr);
/* Discards the shells that ended or passed their idle limit, then makes
 * shells until count are ready. Returns how many are ready (>= 0). */
FY_API int fy_shells_fill(fy_shells *shells, fy_error **reterr);
/* Starts prepared like fy_start, in a ready shell of the set when one fits
 * (the result says so: fy_result_prestarted, stage FY_STAGE_CLAIM); with
 * no fitting shell, it starts from nothing, exactly as fy_start. A shell
 * that does not fit prepared, ended or passed its idle limit is discarded
 * on the way. The set may be NULL (fy_start). Makes no shell itself. */
FY_API int fy_start_shell(const fy_prepared *prepared, fy_shells *shells, fy_handle **ret, fy_error **reterr);

/* fy_shells_stat: counters of the set's life. */
#define FY_SHELLS_READY     1  /* shells waiting for a claim now */
#define FY_SHELLS_MADE      2  /* shells made */
#define FY_SHELLS_CLAIMED   3  /* shells that started an attempt */
#define FY_SHELLS_DISCARDED 4  /* shells discarded unused (idle, ended, mismatch, free) */
#define FY_SHELLS_LEFT      5  /* objects discarding could not remove (0: every discard witnessed) */
FY_API int fy_shells_stat(fy_shells *shells, uint32_t what, uint64_t *ret_value);
/* Discards every shell (witnessed) and frees the set. NULL is accepted. In
 * a forked copy of the host process it only releases memory. */
FY_API void fy_shells_free(fy_shells *shells);

FY_END_DECLS

#endif
