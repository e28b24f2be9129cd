/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: the DNS stub's TCP framing (lib/linux/linux-dns-parse.c,
 * lxd_tcp_want / lxd_tcp_len / lxd_tcp_frame) driven the way the stub's
 * loop drives it (linux-dns-serve.c), with the answer of each framed query.
 * The input is the byte stream a workload writes on one connection; its
 * first byte seeds the sizes in which the stream arrives (as recv(2) would
 * split it). Invariants: the stub never reads more than it was told (never
 * past one query), a whole query is 1..LXD_TCP_QUERY_MAX bytes exactly as
 * declared, a refusal (-1) only for a declared length of 0 or over the
 * bound, every framed answer is its length and at most 2 + LXD_ANSWER_MAX
 * bytes, and the number of queries answered equals the whole ones sent. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "linux/linux-dns-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct lxp_dest dests[1];
static struct lxp_config cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!cfg.dests) {
        strcpy(dests[0].host, "mirror.test");
        dests[0].naddr = 1;
        dests[0].addr[0].family = 4;
        memcpy(dests[0].addr[0].addr, "\xc6\x33\x64\x01", 4);
        cfg.dests = dests;
        cfg.ndests = 1;
    }
    if (size < 1 || size > 64 * 1024)
        return 0;
    unsigned seed = data[0];
    data++;
    size--;
    static struct lxd_tcp c;
    c.have = 0;
    size_t at = 0, queries = 0;
    /* The queries the stream holds, counted independently. */
    size_t expect = 0;
    for (size_t p = 0; p + 2 <= size;) {
        size_t len = (size_t)(data[p] << 8 | data[p + 1]);
        if (len == 0 || len > LXD_TCP_QUERY_MAX || p + 2 + len > size)
            break;
        expect++;
        p += 2 + len;
    }
    while (at < size) {
        long want = lxd_tcp_want(&c);
        if (want < 0) {
            size_t len = lxd_tcp_len(&c);
            if (c.have != 2 || (len != 0 && len <= LXD_TCP_QUERY_MAX))
                abort();
            break; /* (the connection is closed) */
        }
        if (want == 0)
            abort(); /* a whole query is always taken before reading on */
        if ((size_t)want > sizeof(c.buf) - c.have)
            abort(); /* never past the buffer */
        seed = seed * 1103515245u + 12345u;
        size_t chunk = 1 + (seed >> 16) % 64;
        if (chunk > (size_t)want)
            chunk = (size_t)want;
        if (chunk > size - at)
            chunk = size - at;
        memcpy(c.buf + c.have, data + at, chunk);
        c.have += chunk;
        at += chunk;
        want = lxd_tcp_want(&c);
        if (want == 0) {
            size_t qlen = lxd_tcp_len(&c);
            if (qlen < 1 || qlen > LXD_TCP_QUERY_MAX || c.have != qlen + 2)
                abort();
            uint8_t ans[LXD_ANSWER_MAX], out[2 + LXD_ANSWER_MAX];
            struct lxd_query_info info;
            size_t n = lxd_answer(&cfg, c.buf + 2, qlen, ans, &info);
            if (n > LXD_ANSWER_MAX)
                abort();
            if (n) {
                size_t f = lxd_tcp_frame(ans, n, out);
                if (f != n + 2 || (size_t)(out[0] << 8 | out[1]) != n || memcmp(out + 2, ans, n) != 0)
                    abort();
            }
            c.have = 0;
            queries++;
        }
    }
    if (queries != expect)
        abort();
    return 0;
}
