/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: job networks (fy_jobnet_new(3)). */
#ifndef FORGEYARD_FY_JOBNET_H
#define FORGEYARD_FY_JOBNET_H

#include "fy-common.h"
#include "fy-caps.h"
#include "fy-error.h"
#include "fy-policy.h"
#include "fy-prepared.h"

FY_BEGIN_DECLS

/* 0.2: a host-owned private network shared by several sandboxes of one job
 * (a database and the test runner): its members reach each other by name
 * (each one's /etc/hosts lists every member), nothing else reaches them and
 * they reach nothing else (no other job, not the host, not the outside; no
 * port published). The members are declared when it is made; each member's
 * policy names itself (fy_policy_set_job_member(3), network.job.member,
 * network mode deny) and is prepared with fy_prepare_member(3); fy_start
 * then links it. The network itself is made when its first member starts
 * and removed, witnessed, by fy_jobnet_shutdown or fy_jobnet_free once no
 * member runs. Nothing is made behind the host's back. Thread-safe. */
typedef struct fy_jobnet fy_jobnet;

#define FY_JOBNET_MAX_MEMBERS 254  /* members of one job network (one IPv4 /24) */

/* A job network for the members named in the NULL-terminated list (1 to
 * FY_JOBNET_MAX_MEMBERS host name labels, each once): FY_E_POLICY naming
 * the bad or repeated name, FY_E_RANGE for too many or none. Makes nothing
 * in the kernel yet. */
FY_API int fy_jobnet_new(const char *const *members, fy_jobnet **ret, fy_error **reterr);
/* fy_prepare for a member of jobnet: the policy must name a declared member
 * (FY_E_POLICY at $.network.job.member otherwise; a policy that names none
 * is refused the same way, and fy_prepare refuses a policy that names one).
 * The plan's /etc/hosts resolves every member's name to its address on the
 * job's network; the plan keeps jobnet alive. FY_E_UNSUPPORTED when the
 * selected backend has no job networks here (today: the Linux namespace
 * and container levels, as root). */
FY_API int fy_prepare_member(const fy_policy *policy, const fy_caps *caps, const char *const *argv,
                             fy_jobnet *jobnet, fy_prepared **ret, fy_error **reterr);
/* Removes the job's network now (its namespace, bridge, rules) and forbids
 * further starts (FY_E_STATE); FY_E_STATE while a member runs. Returns the
 * number of objects that could not be removed (0: every one witnessed
 * gone), or a negative FY_E_*. Idempotent (then 0). */
FY_API int fy_jobnet_shutdown(fy_jobnet *jobnet, fy_error **reterr);

/* fy_jobnet_stat */
#define FY_JOBNET_MEMBERS 1  /* members declared */
#define FY_JOBNET_RUNNING 2  /* members linked now (started, not yet ended) */
#define FY_JOBNET_JOINED  3  /* starts that linked a member */
#define FY_JOBNET_UP      4  /* 1 while the job's network exists, else 0 */
#define FY_JOBNET_LEFT    5  /* objects its removal and its members' cleanups could not remove (0: all witnessed) */
FY_API int fy_jobnet_stat(fy_jobnet *jobnet, uint32_t what, uint64_t *ret_value);
/* The host's reference: forbids further starts; the network is removed
 * (witnessed, as fy_jobnet_shutdown) when its last member ends, at once if
 * none runs. Plans of fy_prepare_member keep the object (not the network)
 * until they are freed. NULL is accepted. */
FY_API void fy_jobnet_free(fy_jobnet *jobnet);

FY_END_DECLS

#endif
