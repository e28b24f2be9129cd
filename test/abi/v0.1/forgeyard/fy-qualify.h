/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: the qualification suite (`forgeyard test`). */
#ifndef FORGEYARD_FY_QUALIFY_H
#define FORGEYARD_FY_QUALIFY_H

#include "fy-common.h"
#include "fy-error.h"
#include "fy-policy.h"

/* The version of the suite: which probes run and what they check. It grows
 * when probes are added or tightened; reports carry it. */
#define FY_QUALIFY_SUITE_VERSION 1

FY_BEGIN_DECLS

/* The outcome of one qualification run: every probe with its verdict and
 * its evidence. Immutable; owned by the caller. */
typedef struct fy_qualify_report fy_qualify_report;

/* Runs the qualification suite against this host with the backend the
 * policy negotiates (NULL: the release profile): real sandboxes that try to
 * leak, escape and leave residue, each denial recorded. Benign; takes
 * seconds; forks the calling process once. flags must be 0. Returns 0 when
 * the suite ran, whatever the verdicts (see fy_qualify_passed). */
FY_API int fy_qualify(const fy_policy *policy, uint64_t flags, fy_qualify_report **ret, fy_error **reterr);
/* 1 when every probe passed, 0 otherwise (also for NULL). */
FY_API int fy_qualify_passed(const fy_qualify_report *report);
/* The whole report as JSON (ownership to the caller; free with fy_free). */
FY_API int fy_qualify_to_json(const fy_qualify_report *report, char **ret_json, fy_error **reterr);
/* The probes, in the order they ran: how many, and for the one at index its
 * id ("escape.mount"), verdict (1 passed, 0 failed, FY_E_RANGE past the
 * end) and a one-line summary of its evidence. Strings are borrowed, valid
 * until fy_qualify_report_free(); NULL past the end. */
FY_API int fy_qualify_probe_count(const fy_qualify_report *report);
FY_API const char *fy_qualify_probe_id(const fy_qualify_report *report, uint32_t index);
FY_API int fy_qualify_probe_passed(const fy_qualify_report *report, uint32_t index);
FY_API const char *fy_qualify_probe_summary(const fy_qualify_report *report, uint32_t index);
FY_API void fy_qualify_report_free(fy_qualify_report *report);

FY_END_DECLS

#endif
