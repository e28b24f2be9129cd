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

#define LXD_ANSWER_MAX 512        /* a classic UDP answer: never truncated, never TCP */
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

#endif
