/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Job networks, the platform-neutral half (api-jobnet.c): the declared
 * members, who runs, when the backend's network is made and removed. */
#ifndef FY_JOBNET_INTERNAL_H
#define FY_JOBNET_INTERNAL_H

#include "handle.h"

struct fy_jobnet;

/* The member's index, or -1. */
int jobnet_index_of(const struct fy_jobnet *jn, const char *member);
/* "ADDR\tNAME\n" for every member (owned by jn). */
const char *jobnet_hosts(const struct fy_jobnet *jn);
struct fy_jobnet *jobnet_ref(struct fy_jobnet *jn);
void jobnet_unref(struct fy_jobnet *jn);
/* At fy_start of a member's plan: its place taken (FY_E_STATE when the
 * network was shut down or freed, or another attempt of that member runs),
 * the backend's network made on the first start; fills h->job, h->jobnet,
 * h->job_index. */
int jobnet_join(fy_handle *h, fy_error **reterr);
/* The attempt ended (its backend removed its link) or its handle is freed:
 * its place given back; idempotent. left: what its cleanup left. */
void jobnet_leave(fy_handle *h, uint64_t left);

#endif
