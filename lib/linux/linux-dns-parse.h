/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-attempt DNS stub's answer (linux-dns-parse.c): a query from the
 * workload, hostile bytes, in; the answer out. Only the plan's names
 * resolve (A and AAAA from the addresses resolved at fy_prepare); every
 * other name is REFUSED, so no other name's labels ever leave the stub
 * (it forwards nothing). Pure: no system call, no allocation; also built
 * into the fuzzer (fuzz/fuzz-dns.c) and the freestanding fy-proxy. */
#ifndef FY_LINUX_DNS_PARSE_H
#define FY_LINUX_DNS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "linux-proxy.h"

#define LXD_ANSWER_MAX 512        /* a classic UDP answer: never truncated (over TCP too) */
#define LXD_TTL 60
#define LXD_RCODE_NOERROR 0
#define LXD_RCODE_FORMERR 1
#define LXD_RCODE_NOTIMP 4
#define LXD_RCODE_REFUSED 5

struct lxd_query_info {
    char name[LXP_HOST_MAX + 1];  /* lower case, without the last dot ("" if not parsed or too long) */
    uint16_t qtype;
    int rcode;                    /* what the answer says */
    uint32_t nanswers;
    int allowed;                  /* the name is one of the plan's */
};

/* Builds the answer to the query q (qlen bytes) into out (LXD_ANSWER_MAX
 * bytes): its length, or 0 when the query gets no answer at all (too short
 * for a header, or itself an answer). info says what was asked and
 * answered. */
size_t lxd_answer(const struct lxp_config *cfg, const uint8_t *q, size_t qlen, uint8_t *out,
                  struct lxd_query_info *info);

/* DNS over TCP (RFC 1035 4.2.2, RFC 7766): each message after a two-byte
 * length. The stub reads exactly one query at a time (its length, then
 * that many bytes: nothing of a next one), answers it with the same
 * lxd_answer, and bounds every connection. */
#define LXD_TCP_QUERY_MAX 1024    /* a longer declared length closes the connection */
#define LXD_TCP_CONN_MAX 16       /* concurrent connections; one more is closed at once */
#define LXD_TCP_QUERIES_MAX 64    /* queries on one connection, then it is closed */
#define LXD_TCP_IDLE_MS 5000      /* for each query (from the connection or the last answer) */

struct lxd_tcp {
    uint8_t buf[2 + LXD_TCP_QUERY_MAX]; /* the length, then the query */
    size_t have;                        /* bytes of buf read so far */
};

/* What to read next into c->buf + c->have: that many bytes (> 0); 0: a
 * whole query is at c->buf + 2, lxd_tcp_len(c) bytes; -1: its declared
 * length is 0 or over LXD_TCP_QUERY_MAX (the connection is closed). */
long lxd_tcp_want(const struct lxd_tcp *c);
size_t lxd_tcp_len(const struct lxd_tcp *c);

/* The answer ans (n <= LXD_ANSWER_MAX bytes) framed into out (2 +
 * LXD_ANSWER_MAX bytes): its length. */
size_t lxd_tcp_frame(const uint8_t *ans, size_t n, uint8_t *out);

/* fy-proxy's DNS mode only (linux-dns-serve.c): serves udp and, when not
 * -1, the listening tcp socket until alive hangs up; every query audited. */
/* Shared by the fy-proxy program and the library: the monotonic clock in
 * microseconds; src copied into dst[cap], truncated and terminated. */
uint64_t lxd_mono_us(void);
void lxd_copy_str(char *dst, size_t cap, const char *src);
__attribute__((noreturn)) void lxd_serve(const struct lxp_config *cfg, struct lxp_audit *audit, uint64_t t0, int udp,
                                         int tcp, int alive);

#endif
