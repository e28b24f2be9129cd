/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fetch-only proxy's request parser (linux-proxy-parse.c): pure
 * functions over a buffer, no allocation, no system call, so that the
 * proxy process can run them under its seccomp filter and a libFuzzer
 * target (fuzz/fuzz-proxy.c) can drive them directly.
 *
 * What is accepted, and nothing else (everything else is refused with a
 * status, never guessed at):
 * - a head of at most LXP_HEAD_MAX bytes, lines ending in CRLF (a bare CR
 *   or LF is refused), at most LXP_HEADERS_MAX header lines, no obs-fold;
 * - "CONNECT host:port HTTP/1.x" (authority form; the port is required);
 * - "METHOD http://host[:port]/path HTTP/1.x" (absolute form, plain HTTP
 *   only: https goes through CONNECT; no user info, no fragment);
 * - header names that are tokens with the colon right after them, values
 *   without control characters but tab;
 * - on a forwarded request, at most one Content-Length (digits only) and
 *   no Transfer-Encoding (a chunked request body is refused with 411:
 *   with one framing only, nothing can be smuggled behind the body).
 */
#ifndef FY_LINUX_PROXY_PARSE_H
#define FY_LINUX_PROXY_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LXP_HEAD_MAX      8192
#define LXP_HEADERS_MAX   64
#define LXP_HOST_MAX      255
#define LXP_BODY_MAX      (UINT64_C(1) << 40)

enum { LXP_CONNECT = 1, LXP_FORWARD = 2 };

struct lxp_req {
    int kind;                   /* LXP_CONNECT or LXP_FORWARD */
    char method[16];
    char host[LXP_HOST_MAX + 1]; /* lower case; an IPv6 address without its brackets */
    bool host_v6;               /* host was a bracketed IPv6 literal */
    uint32_t port;
    size_t head_len;            /* through the blank line */
    size_t path_off, path_len;  /* LXP_FORWARD: origin form ("/" when the target had no path) */
    bool path_root;             /* the target had no path: "/" is sent */
    uint64_t content_length;    /* LXP_FORWARD: the body's length (0: none) */
};

/* Parses the head at the start of buf[0..len). Returns the head's length
 * (> 0) once complete, 0 when more bytes are needed (len < LXP_HEAD_MAX
 * and no blank line yet), or -STATUS (400, 405, 411, 414, 431, 501, 505)
 * with *why a static reason. */
int lxp_parse(const char *buf, size_t len, struct lxp_req *rq, const char **why);

/* The head sent upstream for an LXP_FORWARD request: the request line in
 * origin form, the client's headers without the hop-by-hop and proxy ones
 * (Connection, Keep-Alive, Proxy-*, TE, Trailer, Upgrade), without Host and
 * without any header named like the injected one, then Host (the
 * target's), "Connection: close" and inject ("Name: value" lines joined by
 * CRLF, or NULL).
 * Returns its length, or -1 if it does not fit in cap. */
long lxp_rewrite(const struct lxp_req *rq, const char *buf, const char *inject, char *out, size_t cap);

/* Whether name (len bytes) is an HTTP token (a header name). */
bool lxp_is_token(const char *name, size_t len);

/* The status code of a destination's response from its first n bytes
 * ("HTTP/1.D DDD" then a space or the line's end): 100-599; 0 when they
 * are not an HTTP/1.x status line (or the code is out of range); -1 when
 * more bytes are needed to tell (n < 13). For the audit log only: the
 * response itself is relayed as it came. */
int lxp_status(const char *p, size_t n);

/* The server name (SNI) of the TLS ClientHello a client sends first
 * through a tunnel, from its first n bytes (the handshake message may span
 * several TLS records; at most LXP_TLS_HELLO_MAX bytes). Returns 1 with
 * the name in out (lower case, without a final dot; 1-253 of a-z, 0-9, -,
 * _ and ., no empty label), 0 when the bytes are not a TLS handshake or the ClientHello
 * names no host, -1 when more bytes are needed, -2 when they start as a
 * TLS handshake but are not a well-formed ClientHello (a server_name
 * extension twice, two host names, a name of other characters, lengths
 * that do not add up: a server could read such a hello otherwise) or carry
 * an encrypted_client_hello (or draft ESNI) extension, whose inner name
 * cannot be checked. */
#define LXP_TLS_HELLO_MAX 32768
int lxp_tls_sni(const uint8_t *p, size_t n, char out[254]);

/* Whether c may appear in a host name as lxp_tls_sni gives it (a-z, 0-9,
 * -, _ and .); also the host's re-check of a name the proxy reported. */
static inline bool lxp_is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/* The final status of a response stream fed in pieces: interim 1xx
 * responses (100 Continue after an Expect, 102, 103 Early Hints) are
 * skipped to the next status line; 101 is final (the proxy never forwards
 * an upgrade, so the destination should not send it). lxp_status_feed
 * returns the code (100-599) or 0 (not HTTP/1.x, or more than
 * LXP_STATUS_INTERIM_MAX interim responses or LXP_STATUS_SKIP_MAX bytes
 * of them) once known, and -1 while more bytes are needed. Feeding the
 * same bytes in any split gives the same answer. */
#define LXP_STATUS_INTERIM_MAX 8
#define LXP_STATUS_SKIP_MAX 16384
struct lxp_status_scan {
    uint8_t len, interim;          /* bytes of line[]; interim responses skipped */
    bool skipping;                 /* inside an interim response's head */
    uint32_t tail, skipped;        /* its last bytes (for the blank line); its bytes */
    char line[13];
};
int lxp_status_feed(struct lxp_status_scan *s, const char *p, size_t n);

#endif
