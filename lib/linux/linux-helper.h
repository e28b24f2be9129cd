/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The client side of the privileged helper (forgeyard-sandbox-helper(8)):
 * where its socket is, one request and its reply, and what the probe
 * learns from it. */
#ifndef FY_LINUX_HELPER_H
#define FY_LINUX_HELPER_H

#include <stddef.h>

#include "helper/fyh-proto.h"
#include "internal.h"

#define LX_FACT_HELPER        "linux.helper"        /* what the probe found, in words */
#define LX_FACT_HELPER_SOCKET "linux.helper_socket" /* set only when the helper serves us */
#define LX_FACT_HELPER_MAX_MEMORY "linux.helper_max_memory" /* our budget per attempt (decimal) */
#define LX_FACT_HELPER_MAX_PIDS   "linux.helper_max_pids"
#define LX_FACT_HELPER_VERSION    "linux.helper_version" /* the protocol version it answered in (decimal) */
#define LX_FACT_HELPER_CG2        "linux.helper_cg2" /* cgroup v2: its directory for our uid (the parent of ours) */
#define LX_FACT_HELPER_NET        "linux.helper_net"        /* its uplink, when it offers restricted networking */
#define LX_FACT_HELPER_NET_SOCKET "linux.helper_net_socket" /* its socket then */
#define LX_FACT_HELPER_NET_VERSION "linux.helper_net_version" /* ... and the protocol it answered in (>= 4: NET_TAP) */

/* FORGEYARD_HELPER_SOCKET when set (an absolute path, or fd:N: the control
 * socket of a helper the host spawned with --connection-fd), else
 * FYH_DEFAULT_SOCKET. */
const char *lx_helper_socket(void);
/* fd:N's N, or -1 when where is a path. */
int lx_helper_control_fd(const char *where);
/* stat(2) of a socket path, fstat(2) of fd:N: 0 or -errno. */
struct stat;
int lx_helper_stat(const char *where, struct stat *st);
/* One request, one reply (which may be FYH_T_ERROR: a typed refusal), with
 * a deadline of timeout_ms for the whole exchange. 0, or -errno when the
 * helper could not be reached or answered nothing that decodes. */
int lx_helper_call(const char *socket_path, const struct fyh_msg *req, struct fyh_msg *rep, int timeout_ms);
/* The same with a descriptor passed along (SCM_RIGHTS with the first
 * bytes), pass_fd -1 for none. */
int lx_helper_call_fd(const char *socket_path, const struct fyh_msg *req, int pass_fd, struct fyh_msg *rep,
                      int timeout_ms);
/* The same, and a descriptor that comes with the reply's first bytes in
 * *got_fd (-1: none): accepted only with NET_TAPPED, exactly one; any
 * other is closed and the reply refused (-EPROTO). */
int lx_helper_call_fds(const char *socket_path, const struct fyh_msg *req, int pass_fd, struct fyh_msg *rep,
                       int *got_fd, int timeout_ms);
/* The probe's part, for an unprivileged caller: asks the helper (if its
 * socket exists) for our budget and, when it serves us, offers the cgroup
 * v1 or v2 controllers the host denies us through it (caps and facts). */
void lx_helper_probe(fy_caps *c);

#endif
