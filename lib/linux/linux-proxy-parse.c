/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fetch-only proxy's request parser (linux-proxy-parse.h says what is
 * accepted). No allocation, no library call that could allocate or take a
 * lock: it runs in the proxy process under its seccomp filter. */
#include <string.h>

#include "linux-proxy-parse.h"

static bool is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool lxp_is_token(const char *name, size_t len) {
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_tchar((unsigned char)name[i]))
            return false;
    return true;
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static bool ieq(const char *a, size_t alen, const char *b) {
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (lower(a[i]) != lower(b[i]))
            return false;
    return true;
}

/* host[:port] of len bytes into rq (port_required: CONNECT's authority). */
static int parse_authority(const char *s, size_t len, bool port_required, uint32_t default_port,
                           struct lxp_req *rq, const char **why) {
    size_t hlen, i = 0;
    const char *h;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close) {
            *why = "unterminated IPv6 literal";
            return -400;
        }
        h = s + 1;
        hlen = (size_t)(close - h);
        i = (size_t)(close - s) + 1;
        for (size_t k = 0; k < hlen; k++) {
            char c = h[k];
            if (!((c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'f') || c == ':' || c == '.')) {
                *why = "bad IPv6 literal";
                return -400;
            }
        }
        rq->host_v6 = true;
    } else {
        h = s;
        while (i < len && s[i] != ':')
            i++;
        hlen = i;
        for (size_t k = 0; k < hlen; k++) {
            char c = h[k];
            if (!((c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'z') || c == '-' || c == '.')) {
                *why = "bad character in the host name";
                return -400;
            }
        }
        rq->host_v6 = false;
    }
    if (hlen == 0 || hlen > LXP_HOST_MAX) {
        *why = hlen ? "host name too long" : "no host";
        return -400;
    }
    for (size_t k = 0; k < hlen; k++)
        rq->host[k] = lower(h[k]);
    rq->host[hlen] = 0;
    if (i == len) {
        if (port_required) {
            *why = "CONNECT needs host:port";
            return -400;
        }
        rq->port = default_port;
        return 0;
    }
    if (s[i] != ':' || i + 1 == len || len - i - 1 > 5) {
        *why = "bad port";
        return -400;
    }
    uint32_t port = 0;
    for (size_t k = i + 1; k < len; k++) {
        if (s[k] < '0' || s[k] > '9') {
            *why = "bad port";
            return -400;
        }
        port = port * 10 + (uint32_t)(s[k] - '0');
    }
    if (port < 1 || port > 65535) {
        *why = "port out of range";
        return -400;
    }
    rq->port = port;
    return 0;
}

/* The request line [0, end). */
static int parse_request_line(const char *buf, size_t end, struct lxp_req *rq, const char **why) {
    const char *sp1 = memchr(buf, ' ', end);
    if (!sp1) {
        *why = "malformed request line";
        return -400;
    }
    size_t mlen = (size_t)(sp1 - buf);
    if (mlen == 0 || mlen >= sizeof(rq->method)) {
        *why = "bad method";
        return -400;
    }
    for (size_t i = 0; i < mlen; i++)
        if (buf[i] < 'A' || buf[i] > 'Z') {
            *why = "bad method";
            return -400;
        }
    memcpy(rq->method, buf, mlen);
    rq->method[mlen] = 0;
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', end - (size_t)(target - buf));
    if (!sp2) {
        *why = "malformed request line";
        return -400;
    }
    size_t tlen = (size_t)(sp2 - target);
    const char *ver = sp2 + 1;
    size_t vlen = end - (size_t)(ver - buf);
    if (vlen != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || (ver[7] != '0' && ver[7] != '1')) {
        *why = "only HTTP/1.0 and HTTP/1.1";
        return -505;
    }
    if (tlen == 0) {
        *why = "empty target";
        return -400;
    }
    if (tlen > 4096) {
        *why = "target too long";
        return -414;
    }
    for (size_t i = 0; i < tlen; i++)
        if ((unsigned char)target[i] <= 0x20 || (unsigned char)target[i] >= 0x7f) {
            *why = "bad character in the target";
            return -400;
        }
    if (strcmp(rq->method, "CONNECT") == 0) {
        rq->kind = LXP_CONNECT;
        return parse_authority(target, tlen, true, 0, rq, why);
    }
    rq->kind = LXP_FORWARD;
    if (tlen >= 8 && ieq(target, 8, "https://")) {
        *why = "https goes through CONNECT";
        return -400;
    }
    if (tlen < 7 || !ieq(target, 7, "http://")) {
        *why = "a proxy request needs an absolute http:// target";
        return -400;
    }
    const char *auth = target + 7;
    size_t rest = tlen - 7, alen = 0;
    while (alen < rest && auth[alen] != '/' && auth[alen] != '?' && auth[alen] != '#')
        alen++;
    if (memchr(auth, '@', alen)) {
        *why = "user information in the target";
        return -400;
    }
    if (memchr(target, '#', tlen)) {
        *why = "fragment in the target";
        return -400;
    }
    int r = parse_authority(auth, alen, false, 80, rq, why);
    if (r < 0)
        return r;
    /* TRACE (and IIS's TRACK) echo the request, headers included, back to
     * the client: with a credential the proxy injected for the
     * destination, that would hand it to the workload. (Refused once the
     * destination is known, so that the audit names it.) */
    if (strcmp(rq->method, "TRACE") == 0 || strcmp(rq->method, "TRACK") == 0) {
        *why = "TRACE and TRACK echo the request's headers (an injected credential too)";
        return -405;
    }
    rq->path_off = (size_t)(auth + alen - buf);
    rq->path_len = rest - alen;
    rq->path_root = rq->path_len == 0 || auth[alen] == '?';
    return 0;
}

int lxp_parse(const char *buf, size_t len, struct lxp_req *rq, const char **why) {
    memset(rq, 0, sizeof(*rq));
    *why = "";
    size_t scan = len < LXP_HEAD_MAX ? len : LXP_HEAD_MAX;
    /* The head ends at the first CRLF CRLF; every LF before it must follow a CR. */
    size_t end = 0;
    bool found = false;
    for (size_t i = 0; i < scan; i++) {
        if (buf[i] == '\n') {
            if (i == 0 || buf[i - 1] != '\r') {
                *why = "bare LF";
                return -400;
            }
            if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
                end = i + 1;
                found = true;
                break;
            }
        } else if (buf[i] == '\r' && i + 1 < scan && buf[i + 1] != '\n') {
            *why = "bare CR";
            return -400;
        } else if (buf[i] == 0) {
            *why = "NUL in the head";
            return -400;
        }
    }
    if (!found) {
        if (len >= LXP_HEAD_MAX) {
            *why = "request head too large";
            return -431;
        }
        return 0;
    }
    const char *eol = memchr(buf, '\r', end);
    int r = parse_request_line(buf, (size_t)(eol - buf), rq, why);
    if (r < 0)
        return r;
    /* Header lines. */
    unsigned nheaders = 0, ncl = 0;
    const char *line = eol + 2;
    while (line < buf + end - 2) {
        const char *le = memchr(line, '\r', (size_t)(buf + end - line));
        size_t ll = (size_t)(le - line);
        if (++nheaders > LXP_HEADERS_MAX) {
            *why = "too many header lines";
            return -431;
        }
        if (ll == 0 || line[0] == ' ' || line[0] == '\t') {
            *why = "folded or empty header line";
            return -400;
        }
        const char *colon = memchr(line, ':', ll);
        if (!colon || !lxp_is_token(line, (size_t)(colon - line))) {
            *why = "bad header name";
            return -400;
        }
        size_t nlen = (size_t)(colon - line);
        const char *v = colon + 1, *ve = le;
        for (const char *c = v; c < ve; c++)
            if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) {
                *why = "control character in a header value";
                return -400;
            }
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        if (rq->kind == LXP_FORWARD && ieq(line, nlen, "transfer-encoding")) {
            *why = "Transfer-Encoding on a request: only Content-Length framing";
            return -411;
        }
        if (rq->kind == LXP_FORWARD && ieq(line, nlen, "content-length")) {
            if (++ncl > 1) {
                *why = "more than one Content-Length";
                return -400;
            }
            size_t vl = (size_t)(ve - v);
            if (vl == 0 || vl > 13) {
                *why = "bad Content-Length";
                return -400;
            }
            uint64_t n = 0;
            for (size_t k = 0; k < vl; k++) {
                if (v[k] < '0' || v[k] > '9') {
                    *why = "bad Content-Length";
                    return -400;
                }
                n = n * 10 + (uint64_t)(v[k] - '0');
            }
            if (n > LXP_BODY_MAX) {
                *why = "request body too large";
                return -400;
            }
            rq->content_length = n;
        }
        line = le + 2;
    }
    rq->head_len = end;
    return (int)end;
}

static bool dropped_header(const char *name, size_t nlen, const char *inject) {
    static const char *const hop[] = {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                                      "proxy-authenticate", "te", "trailer", "upgrade", "host"};
    for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
        if (ieq(name, nlen, hop[i]))
            return true;
    if (nlen >= 6 && ieq(name, 6, "proxy-"))
        return true;
    /* inject: "Name: value" lines joined by CRLF; each name replaces the
     * workload's header of that name */
    for (const char *l = inject; l && *l;) {
        const char *c = strchr(l, ':'), *next = strchr(l, '\r'); /* (a value holds no CR) */
        if (c && (!next || c < next) && (size_t)(c - l) == nlen) {
            bool same = true;
            for (size_t i = 0; i < nlen && same; i++)
                same = lower(name[i]) == lower(l[i]);
            if (same)
                return true;
        }
        l = next ? next + 2 : NULL;
    }
    return false;
}

struct out {
    char *p;
    size_t len, cap;
    bool over;
};

static void put(struct out *o, const char *s, size_t n) {
    if (o->over || n > o->cap - o->len) {
        o->over = true;
        return;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}
static void puts0(struct out *o, const char *s) { put(o, s, strlen(s)); }

long lxp_rewrite(const struct lxp_req *rq, const char *buf, const char *inject, char *out, size_t cap) {
    struct out o = {out, 0, cap, false};
    if (rq->kind != LXP_FORWARD)
        return -1;
    puts0(&o, rq->method);
    puts0(&o, " ");
    if (rq->path_root)
        puts0(&o, "/");
    put(&o, buf + rq->path_off, rq->path_len);
    puts0(&o, " HTTP/1.1\r\n");
    const char *line = (const char *)memchr(buf, '\n', rq->head_len) + 1;
    const char *end = buf + rq->head_len - 2;
    while (line < end) {
        const char *le = memchr(line, '\r', (size_t)(end - line) + 2);
        const char *colon = memchr(line, ':', (size_t)(le - line));
        if (!dropped_header(line, (size_t)(colon - line), inject)) {
            put(&o, line, (size_t)(le - line));
            puts0(&o, "\r\n");
        }
        line = le + 2;
    }
    char port[8];
    int pl = 0;
    for (uint32_t p = rq->port, div = 10000; div; div /= 10)
        if (p / div || pl || div == 1)
            port[pl++] = (char)('0' + (p / div) % 10);
    puts0(&o, "Host: ");
    if (rq->host_v6)
        puts0(&o, "[");
    puts0(&o, rq->host);
    if (rq->host_v6)
        puts0(&o, "]");
    if (rq->port != 80) {
        puts0(&o, ":");
        put(&o, port, (size_t)pl);
    }
    puts0(&o, "\r\nConnection: close\r\n");
    if (inject) {
        puts0(&o, inject);
        puts0(&o, "\r\n");
    }
    puts0(&o, "\r\n");
    return o.over ? -1 : (long)o.len;
}

int lxp_status(const char *p, size_t n) {
    static const char form[] = "HTTP/1.D DDD"; /* D: a digit */
    for (size_t i = 0; i + 1 < sizeof(form); i++) {
        if (i >= n)
            return -1;
        bool ok = form[i] == 'D' ? p[i] >= '0' && p[i] <= '9' : p[i] == form[i];
        if (!ok)
            return 0;
    }
    if (n < 13)
        return -1;
    if (p[12] != ' ' && p[12] != '\r' && p[12] != '\n')
        return 0;
    int code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    return code >= 100 && code <= 599 ? code : 0;
}

int lxp_status_feed(struct lxp_status_scan *s, const char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        if (s->skipping) {
            /* to the interim head's end: CRLF CRLF (or LF LF) */
            for (; i < n; i++) {
                if (++s->skipped > LXP_STATUS_SKIP_MAX)
                    return 0;
                s->tail = (s->tail << 8) | (uint8_t)p[i];
                if (s->tail == 0x0d0a0d0au || (s->tail & 0xffffu) == 0x0a0au) {
                    i++;
                    s->skipping = false;
                    s->len = 0;
                    s->tail = 0;
                    break;
                }
            }
            continue;
        }
        size_t k = sizeof(s->line) - s->len;
        if (k > n - i)
            k = n - i;
        memcpy(s->line + s->len, p + i, k);
        s->len = (uint8_t)(s->len + k);
        i += k;
        int st = lxp_status(s->line, s->len);
        if (st < 0)
            return -1;
        if (st < 100 || st > 199 || st == 101)
            return st;
        if (++s->interim > LXP_STATUS_INTERIM_MAX)
            return 0;
        /* the 13 bytes read hold no line end but possibly its first (13th) */
        s->skipping = true;
        s->tail = (uint8_t)s->line[12];
    }
    return -1;
}

/* ---- the TLS ClientHello's server name ---- */

/* A reader of the handshake's bytes across its TLS records. err: -1 the
 * bytes ran out, -2 a record that cannot carry the handshake. */
struct tls_rd {
    const uint8_t *p;
    size_t n, pos, left;           /* position in p; bytes left in the current record */
    size_t count;                  /* handshake bytes read */
    int err;
};

static bool tls_byte(struct tls_rd *r, uint8_t *b) {
    if (r->err)
        return false;
    while (r->left == 0) {
        if (r->pos + 5 > r->n) {
            r->err = -1;
            return false;
        }
        const uint8_t *h = r->p + r->pos;
        size_t len = (size_t)h[3] << 8 | h[4];
        if (h[0] != 22 || h[1] != 3 || len == 0 || len > 16384) {
            r->err = -2;
            return false;
        }
        r->pos += 5;
        r->left = len;
    }
    if (r->pos >= r->n) {
        r->err = -1;
        return false;
    }
    *b = r->p[r->pos++];
    r->left--;
    r->count++;
    return true;
}

static uint32_t tls_num(struct tls_rd *r, int bytes) {
    uint32_t v = 0;
    uint8_t b = 0;
    for (int i = 0; i < bytes && tls_byte(r, &b); i++)
        v = v << 8 | b;
    return v;
}

static void tls_skip(struct tls_rd *r, size_t k) {
    uint8_t b;
    for (size_t i = 0; i < k && tls_byte(r, &b); i++) {
    }
}

/* A type (tbytes long) and a two-byte length whose body must end by end:
 * 0, or the reader's error, or -2 when the body would run past end. */
static int tls_tlv(struct tls_rd *r, int tbytes, size_t end, uint32_t *type, uint32_t *len) {
    *type = tls_num(r, tbytes);
    *len = tls_num(r, 2);
    if (r->err)
        return r->err;
    return r->count + *len > end ? -2 : 0;
}

int lxp_tls_sni(const uint8_t *p, size_t n, char out[254]) {
    out[0] = '\0';
    if (n == 0)
        return -1;
    if (p[0] != 22) {
        /* Another TLS record first (change_cipher_spec, alert, application
         * data, heartbeat: its type, then a TLS major version of 3): no
         * client sends one before its ClientHello, and a TLS stack that
         * skips it would take the hello behind it, which was never read
         * (a warning alert, then a hello naming a fronted host). */
        if (p[0] >= 20 && p[0] <= 24)
            return n < 2 ? -1 : p[1] == 3 ? -2 : 0;
        return 0; /* not a TLS handshake */
    }
    struct tls_rd r = {.p = p, .n = n};
    uint32_t type = tls_num(&r, 1), hl = tls_num(&r, 3);
    if (r.err)
        return r.err;
    if (type != 1 || hl < 38 || hl > LXP_TLS_HELLO_MAX)
        return -2;
    size_t end = r.count + hl;
    tls_skip(&r, 2 + 32);                    /* legacy version, random */
    uint32_t sid = tls_num(&r, 1);
    if (!r.err && sid > 32)
        return -2;
    tls_skip(&r, sid);
    uint32_t cs = tls_num(&r, 2);
    if (!r.err && (cs < 2 || cs % 2))
        return -2;
    tls_skip(&r, cs);
    uint32_t comp = tls_num(&r, 1);
    if (!r.err && comp < 1)
        return -2;
    tls_skip(&r, comp);
    if (r.err)
        return r.err;
    if (r.count > end)
        return -2;
    if (r.count == end)
        return 0; /* no extensions */
    uint32_t ext = tls_num(&r, 2);
    if (r.err)
        return r.err;
    if (r.count + ext != end)
        return -2;
    bool seen = false, named = false;
    while (r.count < end) {
        uint32_t et, el;
        int t = tls_tlv(&r, 2, end, &et, &el);
        if (t)
            return t;
        /* Encrypted Client Hello (and the draft ESNI before it): the name
         * outside may be the allowed one while the server reads another
         * inside, which the proxy cannot check (it never decrypts). */
        if (et == 0xfe0d || et == 0xffce)
            return -2;
        if (et != 0) {
            tls_skip(&r, el);
            continue;
        }
        if (seen)
            return -2; /* server_name twice */
        seen = true;
        size_t eend = r.count + el;
        uint32_t list = tls_num(&r, 2);
        if (r.err)
            return r.err;
        if (list + 2 != el)
            return -2;
        while (r.count < eend) {
            uint32_t nt, nl;
            t = tls_tlv(&r, 1, eend, &nt, &nl);
            if (t)
                return t;
            if (nt != 0) {
                tls_skip(&r, nl);
                continue;
            }
            if (named || nl < 1 || nl > 254)
                return -2; /* two host names, or none of a usable length */
            named = true;
            size_t k = 0;
            for (uint32_t i = 0; i < nl; i++) {
                uint8_t c = (uint8_t)tls_num(&r, 1);
                if (r.err)
                    return r.err;
                if (c >= 'A' && c <= 'Z')
                    c = (uint8_t)(c - 'A' + 'a');
                if (!lxp_is_name_char((char)c))
                    return -2;
                out[k++] = (char)c;
            }
            if (out[k - 1] == '.')
                k--; /* the root's dot */
            if (k < 1 || k > 253)
                return -2;
            out[k] = '\0';
            for (size_t i = 0; i < k; i++)
                if (out[i] == '.' && (i == 0 || i == k - 1 || out[i + 1] == '.'))
                    return -2; /* an empty label */
        }
        if (r.err)
            return r.err;
    }
    if (r.err)
        return r.err;
    return named ? 1 : 0;
}
