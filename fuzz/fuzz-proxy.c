/* Fuzz target: the fetch-only proxy's request parser and the head it sends
 * upstream (lib/linux/linux-proxy-parse.c). The workload writes these
 * bytes; the proxy runs outside the sandbox with the credentials, so a
 * parser bug is a way out. Invariants checked on every accepted head:
 * the head ends at the first CRLF CRLF within LXP_HEAD_MAX, the host is a
 * clean lower-case name or address, the port is in range, and the head
 * sent upstream has exactly one request line in origin form, no
 * Transfer-Encoding, no Proxy-* header, one Host (the target's), the
 * injected credential once, and nothing after its blank line. The same
 * bytes also go to the response status-line readers of the audit log. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linux/linux-proxy-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const char *h, size_t n, const char *needle) {
    size_t c = 0, l = strlen(needle);
    for (size_t i = 0; i + l <= n; i++)
        if (strncasecmp(h + i, needle, l) == 0)
            c++;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 2 * LXP_HEAD_MAX)
        return 0;
    const char *buf = (const char *)data;
    /* The same bytes as a destination's response (the audit's status):
     * a code in range, "need more" only before the 13th byte, and the
     * same answer for every longer prefix once it is known. */
    int st = lxp_status(buf, size);
    if (st < -1 || (st > 0 && (st < 100 || st > 599)) || (st == -1 && size >= 13) ||
        (size > 13 && lxp_status(buf, 13) != st))
        abort();
    /* ...and as a stream in two pieces split anywhere: the same answer as
     * whole, in range, and final once a status line past the interim
     * responses is whole. */
    struct lxp_status_scan whole = {0}, parts = {0};
    int fw = lxp_status_feed(&whole, buf, size);
    size_t cut = size ? data[0] % (size + 1) : 0;
    int fp = lxp_status_feed(&parts, buf, cut);
    if (fp < 0)
        fp = lxp_status_feed(&parts, buf + cut, size - cut);
    if (fw != fp || fw < -1 || (fw > 0 && (fw < 100 || fw > 599)) || (st > 199 && fw != st) || (st == 0 && fw != 0))
        abort();
    /* ...and as a tunnel's first client bytes (the TLS server name): a
     * known answer for a prefix stays the answer for the whole, and a
     * name is clean, lower case, 1-253 bytes. */
    char name[254], pname[254];
    int sk = lxp_tls_sni(data, size, name);
    if (sk < -2 || sk > 1)
        abort();
    if (sk == 1) {
        size_t nl = strlen(name);
        if (nl < 1 || nl > 253 || name[nl - 1] == '.')
            abort();
        for (const char *x = name; *x; x++)
            if (!((*x >= 'a' && *x <= 'z') || (*x >= '0' && *x <= '9') || *x == '-' || *x == '_' || *x == '.'))
                abort();
    }
    size_t half = size / 2;
    int pk = lxp_tls_sni(data, half, pname);
    if (pk != -1 && (pk != sk || (pk == 1 && strcmp(pname, name) != 0)))
        abort();
    struct lxp_req rq;
    const char *why = NULL;
    int n = lxp_parse(buf, size, &rq, &why);
    if (!why)
        abort();
    if (n <= 0) {
        if (n < 0 && -n != 400 && -n != 405 && -n != 411 && -n != 414 && -n != 431 && -n != 505)
            abort();
        if (n == 0 && size >= LXP_HEAD_MAX)
            abort(); /* an unbounded head */
        return 0;
    }
    if ((size_t)n != rq.head_len || (size_t)n > size || n > LXP_HEAD_MAX || n < 4 ||
        memcmp(buf + n - 4, "\r\n\r\n", 4) != 0)
        abort();
    if (memmem(buf, (size_t)n - 2, "\r\n\r\n", 4)) /* the first blank line ends it */
        abort();
    if (rq.port < 1 || rq.port > 65535 || !rq.host[0] || strlen(rq.host) > LXP_HOST_MAX)
        abort();
    for (const char *c = rq.host; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == ':'))
            abort();
    if (rq.kind == LXP_CONNECT)
        return 0;
    if (rq.kind != LXP_FORWARD || rq.path_off + rq.path_len > (size_t)n)
        abort();
    static const char inject[] = "Authorization: Bearer fuzz-secret";
    static char out[3 * LXP_HEAD_MAX];
    long m = lxp_rewrite(&rq, buf, inject, out, sizeof(out));
    if (m < 0)
        abort(); /* an accepted head always fits three times its limit */
    size_t len = (size_t)m;
    const char *first = memmem(out, len, "\r\n", 2);
    if (!first || memchr(out, '\n', (size_t)(first - out)) || memcmp(first - 9, " HTTP/1.1", 9) != 0)
        abort();
    const char *sp = memchr(out, ' ', (size_t)(first - out));
    if (!sp || sp[1] != '/')
        abort(); /* origin form */
    const char *end = memmem(out, len, "\r\n\r\n", 4);
    if (!end || (size_t)(end - out) + 4 != len)
        abort(); /* nothing behind the head */
    if (count(out, len, "\r\ntransfer-encoding:") || count(out, len, "\r\nproxy-") ||
        count(out, len, "\r\nhost:") != 1 || count(out, len, "\r\nauthorization:") != 1 ||
        !memmem(out, len, "\r\nAuthorization: Bearer fuzz-secret\r\n", 37) || count(out, len, "\r\nconnection:") != 1)
        abort();
    /* Too little room is refused, never truncated. */
    if (len > 0 && lxp_rewrite(&rq, buf, inject, out, len - 1) != -1)
        abort();
    return 0;
}
