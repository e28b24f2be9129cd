/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fy-proxy: the fetch-only proxy as a program of its own (linux-proxy.h
 * has the design). The library embeds it like forgeyard-init, writes it to
 * a sealed memfd per attempt and executes it (linux-proxy.c, lxp_start),
 * so that the process that parses the workload's hostile requests holds
 * nothing of the host process: not its environment, not its other
 * attempts' secrets or credentials, not the embedding runner's tokens.
 * Freestanding: its C library is forgeyard-init's (linux-init-libc.c) plus
 * the few socket calls of linux-proxy-libc.c; single-threaded, no
 * allocator, no vDSO, empty environment.
 *
 * What it gets, at fixed descriptors (nothing else is open):
 *   3  the listening socket (in the sandbox's network namespace)
 *   4  the read end of the host's liveness pipe
 *   5  a sealed memfd of its packed configuration (struct lxp_packed, then
 *      the destinations, then this attempt's own credentials)
 *   6  the memfd of its audit table, shared with the host
 *   7  the uplink network namespace (LXP_PACK_UPLINK only)
 * It confines itself before it accepts anything, then runs its loop. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "linux-dns-parse.h"
#include "linux-proxy.h"
#include "linux-syscall.h"

#define BUF_SIZE (256 * 1024)
#define LXP_PIPE_BYTES (64 * 1024) /* a pipe's default capacity */
#define LXP_PIPE_MAX (1024 * 1024)  /* asked for (pipe-max-size's default) */
/* What this proxy's pipes may hold beyond the default in all: pipe pages are
 * charged to the proxy's uid (as root the id range's last, which every
 * attempt's proxy of that range shares; pipe-user-pages-soft, 64 MiB by
 * default, past which every pipe of that uid is cut to two pages). One
 * workload's 64 connections must not take it all. */
#define LXP_PIPE_BUDGET (4 * 1024 * 1024)

static inline uint16_t be16(uint16_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (uint16_t)((v >> 8) | (v << 8));
#else
    return v;
#endif
}

/* ---- the loop ---- */

enum { C_FREE = 0, C_HEAD, C_CONNECTING, C_RELAY, C_CLOSING };

struct conn {
    int state;
    int cfd, ufd;
    int rec;                       /* audit record; REC_NONE, or REC_DROPPED: allowed, not recorded */
    int dest;
    uint32_t next_addr;
    struct lxp_req rq;
    char *c2u, *u2c;
    size_t c2u_len, c2u_off, u2c_len, u2c_off;
    uint64_t body_left;            /* client bytes still forwarded upstream */
    bool tunnel, client_eof, upstream_eof, up_shut;
    int pipe_r, pipe_w;            /* upstream -> client through the kernel (splice), -1: none */
    bool want_status;              /* a forwarded request's final status line not yet seen (audit) */
    bool want_sni;                 /* a tunnel's first client bytes held until its TLS server name is read */
    struct lxp_status_scan scan;
    size_t in_pipe, pipe_cap;
    uint64_t deadline_ms;
};

struct proxy {
    const struct lxp_config *cfg;
    struct lxp_audit *audit;
    int listen_fd, alive_fd;
    uint64_t t0;
    struct conn conn[LXP_CONN_MAX];
    size_t pipe_extra;             /* the pipes' capacity beyond the default, in all */
    char scratch[BUF_SIZE];
};

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}


#define REC_NONE (-1)
#define REC_DROPPED (-2)

/* A record for the request, its index; or REC_DROPPED when the log is full
 * (its bytes then go to the dropped sums: an allowed request's traffic is
 * always accounted for), REC_NONE for a refusal beyond the log. */
static int audit_open(struct proxy *px, const struct lxp_req *rq, bool allowed, uint16_t status, const char *reason) {
    struct lxp_audit *a = px->audit;
    if (a->n >= LXP_AUDIT_MAX || (!allowed && a->refused >= LXP_AUDIT_REFUSED_MAX)) {
        a->dropped++;
        a->dropped_allowed += allowed;
        return allowed ? REC_DROPPED : REC_NONE;
    }
    a->refused += !allowed;
    struct lxp_audit_rec *r = &a->rec[a->n];
    memset(r, 0, sizeof(*r));
    r->t_usec = lxd_mono_us() - px->t0;
    lxd_copy_str(r->method, sizeof(r->method), rq->method);
    lxd_copy_str(r->host, sizeof(r->host), rq->host);
    r->port = rq->port;
    r->allowed = allowed;
    r->status = status;
    lxd_copy_str(r->reason, sizeof(r->reason), reason);
    return (int)a->n++;
}

static void conn_close(struct proxy *px, struct conn *c) {
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    if (c->pipe_r >= 0)
        close(c->pipe_r);
    if (c->pipe_w >= 0) {
        close(c->pipe_w);
        px->pipe_extra -= c->pipe_cap - LXP_PIPE_BYTES;
    }
    c->cfd = c->ufd = c->pipe_r = c->pipe_w = -1;
    c->in_pipe = 0;
    c->state = C_FREE;
    (void)px;
}

/* A refusal (or a gateway error): the answer goes out, then the connection closes. */
static void answer(struct proxy *px, struct conn *c, int status, const char *reason) {
    const char *text = status == 403 ? "Forbidden" : status == 405 ? "Method Not Allowed"
                     : status == 411 ? "Length Required"
                     : status == 414 ? "URI Too Long" : status == 431 ? "Request Header Fields Too Large"
                     : status == 502 ? "Bad Gateway" : status == 503 ? "Service Unavailable"
                     : status == 504 ? "Gateway Timeout" : status == 505 ? "HTTP Version Not Supported"
                     : "Bad Request";
    char body[160];
    size_t bl = 0;
    const char *parts[] = {"forgeyard fetch-only proxy: ", reason, "\n"};
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(parts[i]);
        if (l > sizeof(body) - 1 - bl)
            l = sizeof(body) - 1 - bl;
        memcpy(body + bl, parts[i], l);
        bl += l;
    }
    char num[24], *p = num + sizeof(num);
    *--p = 0;
    size_t v = bl;
    do
        *--p = (char)('0' + v % 10);
    while ((v /= 10));
    char st[4] = {(char)('0' + status / 100), (char)('0' + status / 10 % 10), (char)('0' + status % 10), 0};
    const char *head[] = {"HTTP/1.1 ", st, " ", text, "\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                          "Content-Length: ", p, "\r\n\r\n"};
    c->u2c_len = c->u2c_off = 0;
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
        size_t l = strlen(head[i]);
        memcpy(c->u2c + c->u2c_len, head[i], l);
        c->u2c_len += l;
    }
    memcpy(c->u2c + c->u2c_len, body, bl);
    c->u2c_len += bl;
    if (c->ufd >= 0)
        close(c->ufd);
    c->ufd = -1;
    c->state = C_CLOSING;
    c->deadline_ms = mono_ms() + LXP_HEAD_TIMEOUT_MS;
    (void)px;
}

/* Every credential line of host:port, as "Name: value" lines joined by
 * CRLF (static), or NULL when there is none. */
static const char *find_creds(const struct lxp_config *cfg, const char *host, uint32_t port) {
    static char joined[LXP_CREDS_MAX * (LXP_INJECT_MAX + 2)];
    size_t len = 0;
    for (uint32_t i = 0; i < cfg->ncreds; i++)
        if (cfg->creds[i].port == port && strcmp(cfg->creds[i].host, host) == 0) {
            size_t n = strlen(cfg->creds[i].inject);
            if (len) {
                memcpy(joined + len, "\r\n", 2);
                len += 2;
            }
            memcpy(joined + len, cfg->creds[i].inject, n);
            len += n;
        }
    joined[len] = '\0';
    return len ? joined : NULL;
}

/* Starts a non-blocking connect to the next address of c's destination:
 * true while one is under way. */
static bool try_connect(struct conn *c, const struct lxp_config *cfg) {
    const struct lxp_dest *d = &cfg->dests[c->dest];
    if (c->ufd >= 0)
        close(c->ufd);
    c->ufd = -1;
    while (c->next_addr < d->naddr) {
        const struct lxp_addr *a = &d->addr[c->next_addr++];
        union {
            struct sockaddr_in v4;
            struct sockaddr_in6 v6;
        } sa;
        memset(&sa, 0, sizeof(sa));
        socklen_t len;
        if (a->family == 4) {
            sa.v4.sin_family = AF_INET;
            sa.v4.sin_port = be16((uint16_t)c->rq.port);
            memcpy(&sa.v4.sin_addr, a->addr, 4);
            len = sizeof(sa.v4);
        } else {
            sa.v6.sin6_family = AF_INET6;
            sa.v6.sin6_port = be16((uint16_t)c->rq.port);
            memcpy(&sa.v6.sin6_addr, a->addr, 16);
            len = sizeof(sa.v6);
        }
        int s = socket(a->family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s < 0)
            continue;
        if (connect(s, (struct sockaddr *)&sa, len) == 0 || errno == EINPROGRESS) {
            c->ufd = s;
            return true;
        }
        close(s);
    }
    return false;
}

/* The head is complete (or refused): decide. */
static void decide(struct proxy *px, struct conn *c) {
    const char *why = "";
    int n = lxp_parse(c->c2u, c->c2u_len, &c->rq, &why);
    if (n == 0)
        return; /* more to come */
    if (n < 0) {
        c->rec = audit_open(px, &c->rq, false, (uint16_t)-n, why);
        answer(px, c, -n, why);
        return;
    }
    const struct lxp_config *cfg = px->cfg;
    int dest = -1;
    for (uint32_t i = 0; i < cfg->ndests && dest < 0; i++)
        if (lxp_host_matches(&cfg->dests[i], c->rq.host, c->rq.port))
            dest = (int)i;
    if (dest < 0) {
        c->rec = audit_open(px, &c->rq, false, 403, "not in the allowlist");
        answer(px, c, 403, "destination not allowed");
        return;
    }
    c->dest = dest;
    size_t rest = c->c2u_len - (size_t)n;
    const char *inject = find_creds(cfg, c->rq.host, c->rq.port);
    if (c->rq.kind == LXP_CONNECT) {
        c->tunnel = true;
        c->want_sni = true;
        c->rec = audit_open(px, &c->rq, true, 0, "tunnel (TLS is not terminated)");
        memmove(c->c2u, c->c2u + n, rest);
        c->c2u_len = rest;
    } else {
        long hl = lxp_rewrite(&c->rq, c->c2u, inject, px->scratch, sizeof(px->scratch));
        if (hl < 0) {
            c->rec = audit_open(px, &c->rq, false, 431, "request head too large to forward");
            answer(px, c, 431, "request head too large");
            return;
        }
        size_t body = rest < c->rq.content_length ? rest : (size_t)c->rq.content_length;
        if ((size_t)hl + body > BUF_SIZE) {
            c->rec = audit_open(px, &c->rq, false, 431, "request head too large to forward");
            answer(px, c, 431, "request head too large");
            return;
        }
        memcpy(px->scratch + hl, c->c2u + n, body);
        memcpy(c->c2u, px->scratch, (size_t)hl + body);
        explicit_bzero(px->scratch, (size_t)hl + body);
        c->c2u_len = (size_t)hl + body;
        c->body_left = c->rq.content_length - body;
        c->rec = audit_open(px, &c->rq, true, 0, inject ? "forwarded, credential injected" : "forwarded");
        if (c->rec >= 0)
            px->audit->rec[c->rec].credential = inject != NULL;
        /* The response's first bytes are read, not spliced, until its
         * final status line is seen (once per request; past interim 1xx). */
        c->want_status = c->rec >= 0;
    }
    c->c2u_off = 0;
    c->next_addr = 0;
    c->state = C_CONNECTING;
    c->deadline_ms = mono_ms() + LXP_CONNECT_TIMEOUT_MS;
    if (!try_connect(c, cfg)) {
        if (c->rec >= 0) {
            px->audit->rec[c->rec].status = 502;
            lxd_copy_str(px->audit->rec[c->rec].reason, sizeof(px->audit->rec[c->rec].reason), "connect failed");
        }
        answer(px, c, 502, "cannot connect to the destination");
    }
}

static void connected(struct proxy *px, struct conn *c) {
    int err = 0;
    socklen_t el = sizeof(err);
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
        err = errno;
    if (err) {
        if (try_connect(c, px->cfg))
            return;
        if (c->rec >= 0) {
            px->audit->rec[c->rec].status = 502;
            lxd_copy_str(px->audit->rec[c->rec].reason, sizeof(px->audit->rec[c->rec].reason), "connect failed");
        }
        answer(px, c, 502, "cannot connect to the destination");
        return;
    }
    c->state = C_RELAY;
    c->deadline_ms = mono_ms() + LXP_IDLE_TIMEOUT_MS;
    /* The response goes through a pipe with splice(2): no copy through
     * this process (without a pipe, through u2c). */
    int pp[2];
    if (pipe2(pp, O_NONBLOCK | O_CLOEXEC) == 0) {
        c->pipe_r = pp[0];
        c->pipe_w = pp[1];
        int cap = -1;
        if (px->pipe_extra + (LXP_PIPE_MAX - LXP_PIPE_BYTES) <= LXP_PIPE_BUDGET)
            cap = fcntl(pp[1], F_SETPIPE_SZ, LXP_PIPE_MAX);
        c->pipe_cap = cap > LXP_PIPE_BYTES ? (size_t)cap : LXP_PIPE_BYTES;
        px->pipe_extra += c->pipe_cap - LXP_PIPE_BYTES;
    }
    if (c->tunnel) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        memcpy(c->u2c, ok, sizeof(ok) - 1);
        c->u2c_len = sizeof(ok) - 1;
        c->u2c_off = 0;
    }
}

static void account(struct proxy *px, struct conn *c, bool up, size_t n) {
    if (c->rec >= 0) {
        if (up)
            px->audit->rec[c->rec].bytes_up += n;
        else
            px->audit->rec[c->rec].bytes_down += n;
    } else if (c->rec == REC_DROPPED) {
        if (up)
            px->audit->dropped_bytes_up += n;
        else
            px->audit->dropped_bytes_down += n;
    }
}

/* Whether a host is an address literal (no name to hold a TLS server name to). */
static bool address_literal(const struct lxp_req *rq) {
    if (rq->host_v6)
        return true;
    for (const char *h = rq->host; *h; h++)
        if (!((*h >= '0' && *h <= '9') || *h == '.'))
            return false;
    return true;
}

/* A tunnel's first client bytes: the TLS server name of its ClientHello,
 * read before anything goes upstream. A name other than the tunnel's host
 * (a tunnel to an allowed name carrying another: domain fronting, one CDN
 * address serving both) or a hello that does not parse is refused, the
 * tunnel closed (its 200 is out: no status can follow). Not TLS, or no
 * name: the bytes go on, recorded without a name. False when closed. */
static bool sni_step(struct proxy *px, struct conn *c) {
    char name[254];
    int k = lxp_tls_sni((const uint8_t *)c->c2u, c->c2u_len, name);
    if (k == -1 && !c->client_eof && c->c2u_len < LXP_TLS_HELLO_MAX + 64 * 5 + 4)
        return true; /* more to come (a ClientHello's records: at most 64 bytes of their headers per KiB) */
    c->want_sni = false;
    if (k == -1)
        k = c->client_eof ? 0 : -2; /* ended early: nothing went up; or never ends within the bound */
    const char *why = NULL;
    if (k == -2)
        why = "TLS ClientHello malformed (the server name cannot be checked)";
    else if (k == 1 && !address_literal(&c->rq) && strcmp(name, c->rq.host) != 0)
        why = "TLS server name is not the tunnel's host";
    if (c->rec >= 0) {
        struct lxp_audit_rec *r = &px->audit->rec[c->rec];
        if (k == 1)
            lxd_copy_str(r->sni, sizeof(r->sni), name);
        if (why) {
            r->allowed = 0;
            lxd_copy_str(r->reason, sizeof(r->reason), why);
            px->audit->refused++;
        }
    } else if (why && c->rec == REC_DROPPED) {
        px->audit->dropped_allowed--; /* not allowed after all */
    }
    if (why) {
        conn_close(px, c);
        return false;
    }
    return true;
}

/* One step of the relay after poll: reads and writes what is ready. now:
 * the loop's clock (read once per turn; a turn waits at most a second). */
static void relay(struct proxy *px, struct conn *c, short cev, short uev, uint64_t now) {
    bool progress = false;
    /* client -> upstream */
    if ((cev & (POLLIN | POLLHUP | POLLERR)) && !c->client_eof && c->c2u_len < BUF_SIZE) {
        size_t room = BUF_SIZE - c->c2u_len;
        if (!c->tunnel && room > c->body_left)
            room = (size_t)c->body_left;
        if (room) {
            ssize_t n = read(c->cfd, c->c2u + c->c2u_len, room);
            if (n > 0) {
                c->c2u_len += (size_t)n;
                if (!c->tunnel)
                    c->body_left -= (uint64_t)n;
                progress = true;
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                c->client_eof = true;
            }
        }
    }
    if (c->want_sni && (c->c2u_len > 0 || c->client_eof) && !sni_step(px, c))
        return; /* refused: closed */
    if ((uev & (POLLOUT | POLLERR | POLLHUP)) && c->c2u_off < c->c2u_len && c->ufd >= 0 && !c->want_sni) {
        ssize_t n = write(c->ufd, c->c2u + c->c2u_off, c->c2u_len - c->c2u_off);
        if (n > 0) {
            c->c2u_off += (size_t)n;
            account(px, c, true, (size_t)n);
            progress = true;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            conn_close(px, c);
            return;
        }
    }
    if (c->c2u_off == c->c2u_len)
        c->c2u_off = c->c2u_len = 0;
    if (c->client_eof && c->c2u_len == 0 && !c->up_shut && c->ufd >= 0) {
        (void)shutdown(c->ufd, SHUT_WR);
        c->up_shut = true;
    }
    /* upstream -> client: through the pipe once u2c (the proxy's own
     * answer line) is out, in order */
    bool via_pipe = c->pipe_r >= 0 && c->u2c_len == 0 && !c->want_status;
    /* While a download streams, data is there again by the time the pipe
     * is out: a few more turns of both splices before the next poll (each
     * stops at EAGAIN; a poll per turn cost about as much as the splices). */
    bool in_ready = (uev & (POLLIN | POLLHUP | POLLERR)) != 0, out_ready = (cev & (POLLOUT | POLLERR | POLLHUP)) != 0;
    for (int turn = 0; via_pipe && turn < 8; turn++) {
        bool moved = false;
        if (in_ready && !c->upstream_eof && c->in_pipe < c->pipe_cap && c->ufd >= 0) {
            ssize_t n = splice(c->ufd, NULL, c->pipe_w, NULL, c->pipe_cap - c->in_pipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
            if (n > 0) {
                c->in_pipe += (size_t)n;
                progress = moved = true;
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                c->upstream_eof = true;
            } else {
                in_ready = false;
            }
        }
        if ((out_ready || turn > 0) && c->in_pipe) {
            ssize_t n = splice(c->pipe_r, NULL, c->cfd, NULL, c->in_pipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
            if (n > 0) {
                c->in_pipe -= (size_t)n;
                account(px, c, false, (size_t)n);
                progress = moved = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                conn_close(px, c);
                return;
            } else {
                break; /* the client's side is full: poll */
            }
        }
        if (!moved || c->upstream_eof)
            break;
        in_ready = true; /* (a non-blocking try: EAGAIN ends the turns) */
    }
    if (!via_pipe && (uev & (POLLIN | POLLHUP | POLLERR)) && !c->upstream_eof && c->u2c_len < BUF_SIZE &&
        c->ufd >= 0 && (c->pipe_r < 0 || c->want_status)) {
        ssize_t n = read(c->ufd, c->u2c + c->u2c_len, BUF_SIZE - c->u2c_len);
        if (n > 0) {
            if (c->want_status) {
                int st = lxp_status_feed(&c->scan, c->u2c + c->u2c_len, (size_t)n);
                if (st >= 0) {
                    c->want_status = false;
                    if (c->rec >= 0)
                        px->audit->rec[c->rec].response_status = (uint16_t)st;
                }
            }
            c->u2c_len += (size_t)n;
            progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            c->upstream_eof = true;
            c->want_status = false;
        }
    }
    if ((cev & (POLLOUT | POLLERR | POLLHUP)) && c->u2c_off < c->u2c_len) {
        ssize_t n = write(c->cfd, c->u2c + c->u2c_off, c->u2c_len - c->u2c_off);
        if (n > 0) {
            c->u2c_off += (size_t)n;
            account(px, c, false, (size_t)n);
            progress = true;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            conn_close(px, c);
            return;
        }
    }
    if (c->u2c_off == c->u2c_len)
        c->u2c_off = c->u2c_len = 0;
    if (c->upstream_eof && c->u2c_len == 0 && c->in_pipe == 0) {
        conn_close(px, c); /* the destination is done: so is the client */
        return;
    }
    if (c->client_eof && c->upstream_eof)
        conn_close(px, c);
    else if (progress)
        c->deadline_ms = now + LXP_IDLE_TIMEOUT_MS;
}

static void head_step(struct proxy *px, struct conn *c, short cev) {
    if (!(cev & (POLLIN | POLLHUP | POLLERR)))
        return;
    size_t room = LXP_HEAD_MAX - c->c2u_len;
    ssize_t n = read(c->cfd, c->c2u + c->c2u_len, room);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_close(px, c);
        return;
    }
    if (n < 0)
        return;
    c->c2u_len += (size_t)n;
    decide(px, c);
}

static void accept_one(struct proxy *px) {
    int fd = accept4(px->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct conn *c = NULL;
    for (int i = 0; i < LXP_CONN_MAX && !c; i++)
        if (px->conn[i].state == C_FREE)
            c = &px->conn[i];
    if (!c) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        (void)!write(fd, busy, sizeof(busy) - 1);
        close(fd);
        struct lxp_req none;
        memset(&none, 0, sizeof(none));
        (void)audit_open(px, &none, false, 503, "too many connections");
        return;
    }
    char *c2u = c->c2u, *u2c = c->u2c;
    memset(c, 0, sizeof(*c));
    c->c2u = c2u;
    c->u2c = u2c;
    c->cfd = fd;
    c->ufd = c->pipe_r = c->pipe_w = -1;
    c->rec = REC_NONE;
    c->state = C_HEAD;
    c->deadline_ms = mono_ms() + LXP_HEAD_TIMEOUT_MS;
}

__attribute__((noreturn)) static void proxy_loop(struct proxy *px) {
    struct pollfd pfd[2 + 2 * LXP_CONN_MAX];
    int idx[2 * LXP_CONN_MAX];
    for (;;) {
        nfds_t n = 0;
        pfd[n++] = (struct pollfd){.fd = px->alive_fd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = px->listen_fd, .events = POLLIN};
        uint64_t now = mono_ms(), next = now + 1000;
        for (int i = 0; i < LXP_CONN_MAX; i++) {
            struct conn *c = &px->conn[i];
            if (c->state == C_FREE)
                continue;
            if (now >= c->deadline_ms) {
                if (c->state == C_HEAD) {
                    (void)audit_open(px, &c->rq, false, 408, "no complete request head in time");
                    conn_close(px, c);
                } else if (c->state == C_CONNECTING) {
                    if (c->rec >= 0) {
                        px->audit->rec[c->rec].status = 504;
                        lxd_copy_str(px->audit->rec[c->rec].reason, sizeof(px->audit->rec[c->rec].reason),
                                 "connect timed out");
                    }
                    answer(px, c, 504, "connect timed out");
                } else {
                    conn_close(px, c);
                }
                if (c->state == C_FREE)
                    continue;
            }
            if (c->deadline_ms < next)
                next = c->deadline_ms;
            short ce = 0, ue = 0;
            if (c->state == C_HEAD)
                ce = POLLIN;
            else if (c->state == C_CONNECTING)
                ue = POLLOUT;
            else if (c->state == C_CLOSING)
                ce = POLLOUT;
            else {
                if (!c->client_eof && c->c2u_len < BUF_SIZE && (c->tunnel || c->body_left))
                    ce |= POLLIN;
                if (c->u2c_off < c->u2c_len || c->in_pipe)
                    ce |= POLLOUT;
                if (!c->upstream_eof && (c->pipe_r >= 0 ? c->u2c_len == 0 && c->in_pipe < c->pipe_cap
                                                        : c->u2c_len < BUF_SIZE))
                    ue |= POLLIN;
                if (c->c2u_off < c->c2u_len && !c->want_sni)
                    ue |= POLLOUT;
            }
            /* A side we want nothing of is not polled (-1): poll reports
             * POLLHUP and POLLERR whatever was asked, at every turn, and a
             * side that cannot move (a client that stopped reading behind
             * a full pipe, one reset while its answer is awaited or its
             * destination connected) would keep the loop turning on one
             * CPU until the connection's deadline. What ends the other
             * side, or the deadline, comes back to it. */
            idx[n - 2] = i;
            pfd[n++] = (struct pollfd){.fd = ce ? c->cfd : -1, .events = ce};
            idx[n - 2] = i;
            pfd[n++] = (struct pollfd){.fd = ue ? c->ufd : -1, .events = ue};
        }
        int timeout = next > now ? (int)(next - now) : 0;
        int r = poll(pfd, n, timeout);
        if (r < 0 && errno != EINTR)
            syscall(SYS_exit_group, 3);
        if (r <= 0)
            continue;
        if (pfd[0].revents)
            syscall(SYS_exit_group, 0); /* the host is gone (or ends us) */
        for (nfds_t k = 2; k < n; k += 2) {
            struct conn *c = &px->conn[idx[k - 2]];
            short cev = pfd[k].revents, uev = pfd[k + 1].revents;
            if (!cev && !uev)
                continue;
            if (c->state == C_HEAD)
                head_step(px, c, cev);
            else if (c->state == C_CONNECTING && uev)
                connected(px, c);
            else if (c->state == C_CLOSING) {
                ssize_t w = c->u2c_off < c->u2c_len ? write(c->cfd, c->u2c + c->u2c_off, c->u2c_len - c->u2c_off) : 0;
                if (w > 0)
                    c->u2c_off += (size_t)w;
                if (w <= 0 || c->u2c_off == c->u2c_len) {
                    (void)shutdown(c->cfd, SHUT_WR);
                    conn_close(px, c);
                }
            } else if (c->state == C_RELAY)
                relay(px, c, cev, uev, now);
        }
        if (pfd[1].revents & POLLIN)
            accept_one(px);
    }
}

/* ---- the proxy's confinement ---- */

#if defined(__x86_64__)
#  define LXP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#  define LXP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef LXP_AUDIT_ARCH
#  define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
static int install_seccomp(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LXP_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* socket(2): AF_INET and AF_INET6 only */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* fcntl(2): F_SETPIPE_SZ only (the one call of the loop) */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fcntl, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETPIPE_SZ, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* Our own C library (linux-init-libc.c, linux-proxy-libc.c) makes
         * exactly these: poll is ppoll, no vDSO, no allocator, no thread,
         * no signal handler (so no rt_sigreturn). */
        ALLOW(__NR_read), ALLOW(__NR_write), ALLOW(__NR_close), ALLOW(__NR_ppoll),
        ALLOW(__NR_accept4), ALLOW(__NR_connect), ALLOW(__NR_getsockopt), ALLOW(__NR_shutdown),
        ALLOW(__NR_clock_gettime), ALLOW(__NR_exit_group), ALLOW(__NR_restart_syscall),
        ALLOW(__NR_pipe2), ALLOW(__NR_splice),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof(f) / sizeof(f[0])), .filter = f};
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
/* The DNS stub's: it only receives queries and sends answers on its
 * sockets and accepts on its TCP listener (no socket of its own, no
 * connect, no pipe). */
static int install_seccomp_dns(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LXP_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(__NR_read), ALLOW(__NR_close), ALLOW(__NR_ppoll), ALLOW(__NR_recvfrom), ALLOW(__NR_sendto),
        ALLOW(__NR_clock_gettime), ALLOW(__NR_exit_group), ALLOW(__NR_restart_syscall), ALLOW(__NR_accept4),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof(f) / sizeof(f[0])), .filter = f};
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
#else
static int install_seccomp(void) { errno = ENOSYS; return -1; }
static int install_seccomp_dns(void) { errno = ENOSYS; return -1; }
#endif

struct ll_attr { uint64_t handled_access_fs, handled_access_net; };
struct ll_net_port { uint64_t allowed_access, port; };

/* No filesystem access at all; TCP connect only to the allowed ports (ABI
 * 4+), no TCP bind. Returns the LXP_CONF_LL_* bits applied. */
static uint32_t confine_landlock(const struct lxp_config *cfg) {
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1)
        return 0;
    struct ll_attr attr = {.handled_access_fs = (1ULL << 13) - 1};
    if (abi >= 2)
        attr.handled_access_fs |= 1ULL << 13;
    if (abi >= 3)
        attr.handled_access_fs |= 1ULL << 14;
    if (abi >= 5)
        attr.handled_access_fs |= 1ULL << 15;
    bool net = abi >= 4 && cfg->nports;
    if (net)
        attr.handled_access_net = 3; /* BIND_TCP | CONNECT_TCP */
    int fd = (int)syscall(__NR_landlock_create_ruleset, &attr, net ? sizeof(attr) : sizeof(uint64_t), 0);
    if (fd < 0)
        return 0;
    for (uint32_t i = 0; net && i < cfg->nports; i++) {
        struct ll_net_port np = {.allowed_access = 2 /* CONNECT_TCP */, .port = cfg->ports[i]};
        if (syscall(__NR_landlock_add_rule, fd, 2 /* LANDLOCK_RULE_NET_PORT */, &np, 0) < 0) {
            close(fd);
            return 0;
        }
    }
    long r = syscall(__NR_landlock_restrict_self, fd, 0);
    close(fd);
    return r < 0 ? 0 : LXP_CONF_LL_FS | (net ? LXP_CONF_LL_NET : 0);
}


__attribute__((noreturn)) static void die(int code) {
    syscall(SYS_exit_group, code);
    __builtin_unreachable();
}

/* The packed configuration in the sealed memfd fd (closed): a private
 * copy, so that once the host and we closed the memfd the credentials
 * live only here. */
static struct lxp_config *read_config(int fd, uint32_t *flags) {
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct lxp_packed) || st.st_size > (off_t)LXP_PACKED_MAX)
        return NULL;
    size_t len = (size_t)st.st_size;
    size_t at = (len + 15) & ~(size_t)15; /* the struct lxp_config after it */
    unsigned char *blob = mmap(NULL, at + sizeof(struct lxp_config), PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (blob == MAP_FAILED)
        return NULL;
    for (size_t got = 0; got < len;) {
        ssize_t k = pread(fd, blob + got, len - got, (off_t)got);
        if (k <= 0)
            return NULL;
        got += (size_t)k;
    }
    close(fd);
    const struct lxp_packed *h = (const struct lxp_packed *)blob;
    if (h->magic != LXP_PACKED_MAGIC || h->ndests > LXP_DESTS_MAX || h->ncreds > LXP_CREDS_MAX ||
        h->nports > sizeof(h->ports) / sizeof(h->ports[0]) ||
        len != sizeof(*h) + h->ndests * sizeof(struct lxp_dest) + h->ncreds * sizeof(struct lxp_cred))
        return NULL;
    struct lxp_config *cfg = (struct lxp_config *)(blob + at);
    cfg->ndests = h->ndests;
    cfg->dests = (struct lxp_dest *)(blob + sizeof(*h));
    cfg->ncreds = h->ncreds;
    cfg->creds = (struct lxp_cred *)(blob + sizeof(*h) + h->ndests * sizeof(struct lxp_dest));
    cfg->nports = h->nports;
    cfg->run_uid = h->run_uid;
    memcpy(cfg->ports, h->ports, sizeof(cfg->ports));
    for (uint32_t i = 0; i < cfg->ndests; i++)
        if (cfg->dests[i].naddr > LXP_ADDRS_MAX || cfg->dests[i].host[LXP_HOST_MAX])
            return NULL;
    for (uint32_t i = 0; i < cfg->ncreds; i++)
        if (cfg->creds[i].host[LXP_HOST_MAX] || cfg->creds[i].inject[LXP_INJECT_MAX - 1])
            return NULL;
    *flags = h->flags;
    return cfg;
}

__attribute__((noreturn, used)) void fy_init_entry(long *sp);
/* The entry point linux-init-libc.c's _start calls (argv and the empty
 * environment are not read: everything comes at the fixed descriptors). */
__attribute__((noreturn, used)) void fy_init_entry(long *sp) {
    (void)sp;
    uint32_t conf = 0, flags = 0;
    (void)prctl(PR_SET_NAME, "fy-proxy", 0, 0, 0);
    /* Every signal to its default, SIGPIPE ignored (a client that goes
     * away is EPIPE, not our end), nothing blocked (the mask survives
     * exec). Raw rt_sigaction: the kernel's struct, no restorer needed
     * without handlers. */
    struct { unsigned long handler, flags, restorer, mask; } act = {0, 0, 0, 0};
    for (int sig = 1; sig < 65; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        act.handler = sig == SIGPIPE ? (unsigned long)(uintptr_t)SIG_IGN : (unsigned long)(uintptr_t)SIG_DFL;
        (void)syscall(SYS_rt_sigaction, sig, &act, NULL, 8);
    }
    uint64_t none_mask = 0;
    (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none_mask, NULL, 8);
    const struct lxp_config *cfg = read_config(5, &flags);
    if (!cfg)
        die(15);
    struct stat st;
    if (fstat(6, &st) < 0 || st.st_size != (off_t)sizeof(struct lxp_audit))
        die(16);
    struct lxp_audit *audit = mmap(NULL, sizeof(struct lxp_audit), PROT_READ | PROT_WRITE, MAP_SHARED, 6, 0);
    if (audit == MAP_FAILED)
        die(16);
    close(6);
    if (flags & LXP_PACK_UPLINK) {
        if (setns(7, CLONE_NEWNET) < 0)
            die(11);
        close(7);
        conf |= LXP_CONF_UPLINK;
    }
    /* Only the listener and the liveness pipe stay open. */
    if (syscall(SYS_close_range, (flags & LXP_PACK_DNS_TCP) ? 8U : 5U, ~0U, 0) < 0) /* (the DNS stub's TCP: 7) */
        die(10);
    if (flags & LXP_PACK_AS_ROOT) {
        /* The id range's last id (linux-net.c, lxn_run_uid), never root. */
        uid_t u = cfg->run_uid ? cfg->run_uid : 65534;
        if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, u, u, u) < 0 ||
            syscall(SYS_setresuid, u, u, u) < 0)
            die(12);
        conf |= LXP_CONF_UID;
    }
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct rlimit none = {0, 0}, files = {4 * LXP_CONN_MAX + 8, 4 * LXP_CONN_MAX + 8};
    (void)setrlimit(RLIMIT_CORE, &none);
    (void)setrlimit(RLIMIT_FSIZE, &none);
    (void)setrlimit(RLIMIT_NOFILE, &files);
    if (flags & LXP_PACK_DNS) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            die(14);
        conf |= LXP_CONF_NNP;
        conf |= confine_landlock(cfg);
        if (install_seccomp_dns() == 0)
            conf |= LXP_CONF_SECCOMP;
        audit->confinement = conf;
        uint64_t t0 = lxd_mono_us();
        __atomic_store_n(&audit->ready, 1, __ATOMIC_RELEASE);
        lxd_serve(cfg, audit, t0, 3, (flags & LXP_PACK_DNS_TCP) ? 7 : -1, 4); /* (linux-dns-serve.c) */
    }
    struct proxy *px = mmap(NULL, sizeof(struct proxy) + (size_t)LXP_CONN_MAX * 2 * BUF_SIZE,
                            PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (px == MAP_FAILED)
        die(13);
    char *bufs = (char *)px + sizeof(struct proxy);
    px->cfg = cfg;
    px->audit = audit;
    px->listen_fd = 3;
    px->alive_fd = 4;
    px->t0 = lxd_mono_us();
    for (int i = 0; i < LXP_CONN_MAX; i++) {
        px->conn[i].cfd = px->conn[i].ufd = px->conn[i].pipe_r = px->conn[i].pipe_w = -1;
        px->conn[i].c2u = bufs + (size_t)i * 2 * BUF_SIZE;
        px->conn[i].u2c = px->conn[i].c2u + BUF_SIZE;
    }
    if (fcntl(3, F_SETFL, O_NONBLOCK) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(14);
    conf |= LXP_CONF_NNP;
    conf |= confine_landlock(cfg);
    if (install_seccomp() == 0)
        conf |= LXP_CONF_SECCOMP;
    audit->confinement = conf;
    __atomic_store_n(&audit->ready, 1, __ATOMIC_RELEASE);
    proxy_loop(px);
}
