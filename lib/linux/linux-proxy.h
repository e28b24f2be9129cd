/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network mode fetch-only on Linux: the per-attempt HTTP(S) forward proxy.
 *
 * Design (docs/network.md has the operator's view):
 * - The sandbox gets a network namespace of its own with only its loopback
 *   (as under deny). Between the clone and the second go-ahead, a short-
 *   lived helper joins the sandbox's user and network namespaces, creates
 *   a TCP listening socket on 127.0.0.1:LXP_PORT there and hands it back.
 *   The socket lives in the sandbox's namespace (the only address the
 *   workload can reach), but its fd is held only by the proxy process,
 *   which runs outside the sandbox: no forwarder inside, no unix socket in
 *   the sandbox's filesystem, nothing of the proxy the workload can touch.
 * - The proxy is a program of its own (linux-proxy-main.c, fy-proxy),
 *   embedded in the library like forgeyard-init and executed from a sealed
 *   memfd by a quiet clone of the host (no SIGCHLD, waited for by pidfd),
 *   with an empty environment: it never holds a copy of the host process
 *   (its environment, other attempts' secrets and credentials, the
 *   embedding runner's tokens), so that a flaw in its request parser hands
 *   the workload nothing of the host's memory. It gets its listener, the
 *   liveness pipe, the uplink namespace, its audit table and a sealed memfd
 *   of its packed configuration (the allowlist with the addresses resolved
 *   at fy_prepare, this attempt's own credentials, the Landlock ports) at
 *   fixed descriptors. Before it accepts anything it confines itself: its
 *   outbound namespace (the uplink, FY_NETHOST_UPLINK, or the host's), then
 *   as root uid/gid 65534 with no capability, no supplementary group; no
 *   core dumps, not dumpable, no new privileges, Landlock with no
 *   filesystem access at all and TCP connect only to the allowed ports
 *   (ABI 4+), rlimits (files, no file size), and a seccomp allowlist of the
 *   few calls its loop makes (no open, no exec, no mmap).
 * - It connects only to the addresses the plan resolved at fy_prepare for
 *   the named host (it resolves nothing itself), never terminates TLS
 *   (CONNECT is a byte tunnel), and writes every decision to an audit table
 *   in a shared mapping the host reads once it has ended.
 * - It dies with the host (a pipe whose write end only the host holds) and
 *   at cleanup (SIGKILL by pidfd, reaped: the witness).
 */
#ifndef FY_LINUX_PROXY_H
#define FY_LINUX_PROXY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "linux-proxy-parse.h"

#define LXP_PORT          3128
#define LXP_URL           "http://127.0.0.1:3128"
#define LXP_CONN_MAX      64      /* concurrent client connections */
#define LXP_AUDIT_MAX     1024    /* audit records kept (then counted as dropped) */
#define LXP_AUDIT_REFUSED_MAX 768 /* of which refusals may take at most this many: a
                                   * flood of refused requests never crowds out the
                                   * records of allowed ones */
#define LXP_ADDRS_MAX     16      /* addresses per destination */
#define LXP_DESTS_MAX     256
#define LXP_INJECT_MAX    1024    /* "Name: value" of a credential */
#define LXP_CREDS_MAX     64
#define LXP_HEAD_TIMEOUT_MS  10000
#define LXP_CONNECT_TIMEOUT_MS 10000
#define LXP_IDLE_TIMEOUT_MS  60000

struct lxp_addr {
    uint8_t family; /* 4 or 6 */
    uint8_t addr[16];
};

struct lxp_dest {
    char host[LXP_HOST_MAX + 1];   /* lower case; an address as text */
    uint32_t port_min, port_max;
    uint32_t naddr;
    struct lxp_addr addr[LXP_ADDRS_MAX];
};

struct lxp_cred {
    char host[LXP_HOST_MAX + 1];
    uint32_t port;
    char inject[LXP_INJECT_MAX];   /* "Name: value" */
};

/* What the proxy enforces (built at fy_prepare, read-only afterwards). */
struct lxp_config {
    uint32_t ndests;
    struct lxp_dest *dests;
    uint32_t ncreds;
    struct lxp_cred *creds;
    uint16_t ports[64];            /* Landlock connect ports (nports 0: too many, left out) */
    uint32_t nports;
    uint32_t run_uid;              /* as root: the uid and gid it runs as (0: 65534) */
};

struct lxp_audit_rec {
    uint64_t t_usec;               /* since the proxy started */
    char method[16];
    char host[LXP_HOST_MAX + 1];
    uint32_t port;
    uint16_t status;               /* the proxy's own answer (0: the destination's) */
    uint16_t response_status;      /* a forwarded request's: the destination's status code (0: none) */
    char sni[254];                 /* a tunnel's: the TLS server name its client sent ("" none) */
    uint8_t allowed, credential;
    char reason[72];
    uint64_t bytes_up, bytes_down;
};

struct lxp_audit {
    uint32_t n, dropped;           /* records kept; requests beyond them */
    uint32_t refused;              /* records of refusals among the n */
    uint32_t dropped_allowed;      /* allowed requests among the dropped */
    uint64_t dropped_bytes_up, dropped_bytes_down; /* what those carried */
    uint32_t confinement;          /* LXP_CONF_* the proxy applied */
    uint32_t ready;
    struct lxp_audit_rec rec[LXP_AUDIT_MAX];
};

/* The configuration as the proxy program receives it (a sealed memfd):
 * this header, then ndests struct lxp_dest, then ncreds struct lxp_cred. */
struct lxp_packed {
    uint32_t magic;
    uint32_t flags;                /* LXP_PACK_* */
    uint32_t ndests, ncreds, nports;
    uint16_t ports[64];
    uint32_t run_uid;              /* LXP_PACK_AS_ROOT: the uid and gid to switch to */
};
#define LXP_PACKED_MAGIC  0x46595058u /* "FYPX" */
#define LXP_PACKED_MAX    (sizeof(struct lxp_packed) + LXP_DESTS_MAX * sizeof(struct lxp_dest) + \
                           LXP_CREDS_MAX * sizeof(struct lxp_cred))
#define LXP_PACK_AS_ROOT  (1u << 0)  /* switch to uid/gid run_uid */
#define LXP_PACK_UPLINK   (1u << 1)  /* fd 7 is the uplink network namespace */
#define LXP_DNS_ADDR      "127.0.0.53"
#define LXP_PACK_DNS      (1u << 2)  /* the DNS stub: fd 3 is a bound UDP socket (linux-dns-parse.h) */
#define LXP_PACK_DNS_TCP  (1u << 3)  /* ... and fd 7 a listening TCP socket (never with LXP_PACK_UPLINK) */

/* Whether d allows host (lower case) and port. */
static inline bool lxp_host_matches(const struct lxp_dest *d, const char *host, uint32_t port) {
    if (port < d->port_min || port > d->port_max)
        return false;
    size_t i = 0;
    for (; d->host[i] && host[i]; i++) {
        char a = d->host[i], b = host[i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z')
            b = (char)(b - 'A' + 'a');
        if (a != b)
            return false;
    }
    return d->host[i] == host[i];
}

#define LXP_CONF_UID       (1u << 0)  /* uid/gid 65534, no capabilities */
#define LXP_CONF_NNP       (1u << 1)
#define LXP_CONF_LL_FS     (1u << 2)
#define LXP_CONF_LL_NET    (1u << 3)
#define LXP_CONF_SECCOMP   (1u << 4)
#define LXP_CONF_UPLINK    (1u << 5)

/* Per attempt. */
struct lxp_run {
    pid_t pid;
    int pidfd;
    uint32_t uid;                  /* the uid it runs as */
    int alive_wr;                  /* where pidfd_open is missing: the proxy exits when this closes */
    struct lxp_audit *audit;       /* shared mapping (NULL: none) */
    bool ended;                    /* reaped: the witness */
    bool killed;
    bool kill_sent;                /* lxp_kill ran: what follows is lxp_stop's wait */
    bool died;                     /* it had ended before lxp_stop (died_status: how) */
    int died_status;
    bool cpu_known;                /* cpu_usec: its CPU time, read just before its end */
    uint64_t cpu_usec;
    bool tcp;                      /* the DNS stub: it serves TCP too */
    /* lxp_defer_dns: the stub's sockets wait for a first query on a thread
     * of ours, which then starts the program on them. */
    bool deferred;                 /* lxp_defer_dns made the sockets */
    bool defer_pending;            /* its thread runs (joined by lxp_defer_settle) */
    pthread_t defer_thread;
    int defer_fd[2];               /* UDP socket, TCP listener (-1: taken or none) */
    int defer_wake;                /* eventfd: the thread ends without starting */
    const struct lxp_config *defer_cfg;
    char defer_error[256];         /* why a start on a query failed ("": it did not) */
};

void lxp_run_init(struct lxp_run *run);
/* Parses the credentials file (lines "HOST:PORT Name: value", '#'
 * comments) into cfg: the file must be a regular file not readable by
 * group or others; every HOST:PORT must be one of the destinations.
 * Returns 0 or a typed error. */
int lxp_load_credentials(struct lxp_config *cfg, const char *path, struct arena *arena, fy_error **reterr);
/* Whether the proxy program is built in (x86-64 and aarch64): fetch-only
 * needs it. */
bool lxp_program_available(void);
/* Starts the proxy for the sandbox's network namespace sandbox_ns:
 * its listener on 127.0.0.1:LXP_PORT inside it, its outbound side in
 * uplink_fd (-1: the host's). On failure nothing is left. */
int lxp_start(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, int uplink_fd, fy_error **reterr);
/* lxp_start in two halves (as lxp_begin_dns below): its listener made and
 * its program executed (connections queue on the listener), then
 * lxp_await_ready. */
int lxp_begin(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, int uplink_fd, fy_error **reterr);
/* The same with a listening socket the caller made (duplicated, not
 * taken): the VM backend's, private to its attempt (linux-proxy-service.c). */
int lxp_start_listener(struct lxp_run *run, const struct lxp_config *cfg, int listener, int uplink_fd,
                       fy_error **reterr);
/* The per-attempt DNS stub: the same program in its DNS mode, on a UDP
 * socket bound to LXP_DNS_ADDR:53 in sandbox_ns and a TCP listener on the
 * same address and port (linux-dns-serve.c); it answers cfg's names
 * only (no credentials, no uplink: it sends nothing anywhere but its
 * answers). lxp_stop, lxp_release as for the proxy. */
int lxp_start_dns(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, fy_error **reterr);
/* (lxp_start_dns's second half, also the proxy's: waits until it runs
 * confined; a failure has ended it, lxp_stop.) */
int lxp_await_ready(struct lxp_run *run, fy_error **reterr);
/* The stub started on demand: its sockets made now in sandbox_ns (queries
 * and connections queue on them from the start), its program executed by
 * a thread of ours when the first datagram or connection arrives. An
 * attempt that never resolves a name starts no process for it; one that
 * does waits for the stub's start once. cfg must outlive the run.
 * lxp_defer_settle ends the wait (the thread joined, unused sockets
 * closed) and must precede lxp_kill/lxp_stop/lxp_report_dns; both
 * functions are idempotent. */
int lxp_defer_dns(struct lxp_run *run, const struct lxp_config *cfg, int sandbox_ns, fy_error **reterr);
void lxp_defer_settle(struct lxp_run *run);
/* Tests only: non-zero makes the DNS stub's program fail to execute. */
extern int lxp_test_exec_fails;
/* The same stub answering the datagrams that arrive on sock (a datagram
 * socket the caller keeps private, e.g. one end of a socketpair: the VM
 * backend's, which carries the guest's queries over its control port);
 * sock is duplicated, not taken. No TCP there. */
int lxp_start_dns_on(struct lxp_run *run, const struct lxp_config *cfg, int sock, fy_error **reterr);
/* The stub's "dns" record of the result (JSON text, malloc'd); for a
 * deferred stub that never started, "started": false and no queries. */
char *lxp_report_dns(const struct lxp_run *run);
/* Ends the proxy (SIGKILL, reaped): 0 when it is gone (witnessed), else 1.
 * Idempotent. The audit table stays readable until lxp_release. */
unsigned lxp_stop(struct lxp_run *run);
/* lxp_stop's first half, for a caller with other work meanwhile: it is
 * told to end (its alive pipe closed, SIGKILL), not waited for; lxp_stop
 * then only waits and reaps. */
void lxp_kill(struct lxp_run *run);
/* The "network" record of the result (JSON text, malloc'd; NULL on OOM):
 * mode, proxy (pid, confinement, ended), requests, requests_dropped. */
char *lxp_report(const struct lxp_run *run);
void lxp_release(struct lxp_run *run);
/* In a forked copy of the host: drops the fds, ends nothing. */
void lxp_forget(struct lxp_run *run);

#endif
