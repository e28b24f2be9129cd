/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS stub's parser and answer (linux-dns-parse.h). RFC 1035 subset:
 * one question, no compression in it (a query never needs one), class IN,
 * opcode QUERY; an EDNS OPT record in the additional section is ignored
 * (the answer fits 512 bytes and carries none). */
#include <string.h>
#include <time.h>

#include "linux-dns-parse.h"

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* The answer's header: the query's id and RD, QR and AA set. */
static size_t header(uint8_t *out, const uint8_t *q, int rcode, uint16_t qd, uint16_t an) {
    memset(out, 0, 12);
    out[0] = q[0];
    out[1] = q[1];
    out[2] = (uint8_t)(0x80 | 0x04 | (q[2] & 0x01)); /* QR, AA, RD as asked */
    out[3] = (uint8_t)(rcode & 0x0f);                /* RA 0: it recurses for nobody */
    wr16(out + 4, qd);
    wr16(out + 6, an);
    return 12;
}

size_t lxd_answer(const struct lxp_config *cfg, const uint8_t *q, size_t qlen, uint8_t *out,
                  struct lxd_query_info *info) {
    memset(info, 0, sizeof(*info));
    if (qlen < 12 || (q[2] & 0x80))
        return 0; /* no header, or an answer: nothing to say */
    unsigned opcode = (q[2] >> 3) & 0x0f;
    if (opcode != 0) {
        info->rcode = LXD_RCODE_NOTIMP;
        return header(out, q, info->rcode, 0, 0);
    }
    if (rd16(q + 4) != 1 || rd16(q + 6) != 0 || rd16(q + 8) != 0 || rd16(q + 10) > 1) {
        info->rcode = LXD_RCODE_FORMERR;
        return header(out, q, info->rcode, 0, 0);
    }
    /* The question's name: labels of 1..63 bytes, 255 in all, no pointer. */
    size_t p = 12, namelen = 0;
    char name[260]; /* (at most 254 bytes and its NUL: see the bound below) */
    int bad = 0;
    for (;;) {
        if (p >= qlen) {
            bad = 1;
            break;
        }
        unsigned l = q[p++];
        if (l == 0)
            break;
        if (l > 63 || p + l > qlen || namelen + l + 1 > 254) {
            bad = 1;
            break;
        }
        if (namelen)
            name[namelen++] = '.';
        for (unsigned i = 0; i < l; i++) {
            uint8_t c = q[p + i];
            if (c >= 'A' && c <= 'Z')
                c = (uint8_t)(c - 'A' + 'a');
            /* A byte that no allowed name has (a dot inside a label, NUL,
             * anything outside the host-name alphabet) makes the name
             * unmatchable: mapped to '?'. */
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                c = '?';
            name[namelen++] = (char)c;
        }
        p += l;
    }
    if (bad || p + 4 > qlen) {
        info->rcode = LXD_RCODE_FORMERR;
        return header(out, q, info->rcode, 0, 0);
    }
    name[namelen] = 0;
    size_t qend = p + 4;
    uint16_t qtype = rd16(q + p), qclass = rd16(q + p + 2);
    info->qtype = qtype;
    if (namelen <= LXP_HOST_MAX)
        memcpy(info->name, name, namelen + 1);
    /* The question is echoed as asked (its bytes: at most 12 + 255 + 4). */
    size_t qsec = qend - 12;
    const struct lxp_dest *d = NULL;
    for (uint32_t i = 0; cfg && i < cfg->ndests && !d; i++)
        if (strcmp(cfg->dests[i].host, name) == 0)
            d = &cfg->dests[i];
    if (!d || qclass != 1) {
        info->rcode = LXD_RCODE_REFUSED;
        size_t n = header(out, q, info->rcode, 1, 0);
        memcpy(out + n, q + 12, qsec);
        return n + qsec;
    }
    info->allowed = 1;
    size_t n = 12;
    memcpy(out + n, q + 12, qsec);
    n += qsec;
    uint16_t an = 0;
    int family = qtype == 1 ? 4 : qtype == 28 ? 6 : 0;
    for (uint32_t i = 0; family && i < d->naddr && i < LXP_ADDRS_MAX; i++) {
        if (d->addr[i].family != family)
            continue;
        size_t alen = family == 4 ? 4 : 16;
        if (n + 12 + alen > LXD_ANSWER_MAX)
            break;
        wr16(out + n, 0xc00c); /* the name: a pointer to the question's */
        wr16(out + n + 2, qtype);
        wr16(out + n + 4, 1);
        out[n + 6] = 0;
        out[n + 7] = 0;
        wr16(out + n + 8, LXD_TTL);
        wr16(out + n + 10, (uint16_t)alen);
        memcpy(out + n + 12, d->addr[i].addr, alen);
        n += 12 + alen;
        an++;
    }
    info->nanswers = an;
    info->rcode = LXD_RCODE_NOERROR;
    (void)header(out, q, info->rcode, 1, an);
    return n;
}

/* ---- TCP framing ---- */

size_t lxd_tcp_len(const struct lxd_tcp *c) { return c->have >= 2 ? rd16(c->buf) : 0; }

long lxd_tcp_want(const struct lxd_tcp *c) {
    if (c->have < 2)
        return (long)(2 - c->have);
    size_t len = rd16(c->buf);
    if (len == 0 || len > LXD_TCP_QUERY_MAX)
        return -1;
    return (long)(2 + len - c->have); /* (have never passes 2 + len: we read no more) */
}

size_t lxd_tcp_frame(const uint8_t *ans, size_t n, uint8_t *out) {
    if (n > LXD_ANSWER_MAX)
        n = 0;
    wr16(out, (uint16_t)n);
    memcpy(out + 2, ans, n);
    return n + 2;
}

uint64_t lxd_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void lxd_copy_str(char *dst, size_t cap, const char *src) {
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}
