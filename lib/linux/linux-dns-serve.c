/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS stub's loop (fy-proxy in its DNS mode, LXP_PACK_DNS; built
 * freestanding with linux-proxy-main.c, never into the library): queries
 * over UDP on one bound socket and, when it has one (LXP_PACK_DNS_TCP),
 * over TCP on one listening socket, both on 127.0.0.53:53 inside the
 * sandbox's network namespace. Every query gets lxd_answer's answer
 * (linux-dns-parse.c: the plan's names only, REFUSED for every other,
 * nothing forwarded) and a record in the audit table.
 *
 * TCP is bounded: at most LXD_TCP_CONN_MAX connections at once (one more
 * is accepted and closed at once, audited), a declared length over
 * LXD_TCP_QUERY_MAX or of 0 closes the connection (audited), each query
 * must be complete and its answer taken within LXD_TCP_IDLE_MS (from the
 * connection or the last answer; a partial one is audited), and a
 * connection is closed after LXD_TCP_QUERIES_MAX queries. Exactly one
 * query is read at a time (its length, then its bytes), so nothing is
 * buffered beyond a query and an answer per connection; all memory is
 * static. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "linux-dns-parse.h"
#include "linux-proxy.h"
#include "linux-syscall.h"

static struct lxp_audit *audit_tab;
static uint64_t audit_t0;

/* One audit record: method "DNS" (UDP) or "DNS/TCP", host the name ("?"
 * when none was parsed), port the query type, status the rcode. */
static void record(const char *method, const struct lxd_query_info *info, size_t answered, const char *reason,
                   uint64_t up, uint64_t down) {
    struct lxp_audit *a = audit_tab;
    /* As the proxy's log: refusals take at most LXP_AUDIT_REFUSED_MAX of
     * the records, so a flood of refused names never hides an allowed one. */
    bool allowed = info && info->allowed;
    if (a->n >= LXP_AUDIT_MAX || (!allowed && a->refused >= LXP_AUDIT_REFUSED_MAX)) {
        a->dropped++;
        a->dropped_allowed += allowed;
        return;
    }
    a->refused += !allowed;
    struct lxp_audit_rec *r = &a->rec[a->n];
    memset(r, 0, sizeof(*r));
    r->t_usec = lxd_mono_us() - audit_t0;
    lxd_copy_str(r->method, sizeof(r->method), method);
    lxd_copy_str(r->host, sizeof(r->host), info && info->name[0] ? info->name : "?");
    r->port = info ? info->qtype : 0;
    r->allowed = (uint8_t)(info ? info->allowed : 0);
    r->status = (uint16_t)(info ? info->rcode : 0);
    if (!reason)
        reason = !answered                               ? "no answer (not a query)"
                 : info->allowed                         ? "an allowed name"
                 : info->rcode == LXD_RCODE_REFUSED      ? "not an allowed name: refused, never forwarded"
                                                         : "malformed or unsupported query";
    lxd_copy_str(r->reason, sizeof(r->reason), reason);
    r->bytes_up = up;
    r->bytes_down = down;
    __atomic_store_n(&a->n, a->n + 1, __ATOMIC_RELEASE);
}

struct tconn {
    int fd;                          /* -1: a free slot */
    struct lxd_tcp in;
    uint8_t out[2 + LXD_ANSWER_MAX]; /* the framed answer being sent */
    size_t olen, osent;
    uint32_t nq;
    uint64_t deadline;               /* the current query and its answer, in µs */
};

static struct tconn conns[LXD_TCP_CONN_MAX];

static void conn_close(struct tconn *c) {
    close(c->fd);
    c->fd = -1;
}

/* One UDP query in, its answer out. */
static void serve_udp(const struct lxp_config *cfg, int udp) {
    static uint8_t q[LXD_ANSWER_MAX * 2], out[LXD_ANSWER_MAX];
    struct sockaddr_storage from;
    socklen_t fl = sizeof(from);
    ssize_t n = recvfrom(udp, q, sizeof(q), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fl);
    if (n <= 0)
        return;
    struct lxd_query_info info;
    size_t len = (size_t)n > sizeof(q) ? 0 : lxd_answer(cfg, q, (size_t)n, out, &info);
    if ((size_t)n > sizeof(q))
        memset(&info, 0, sizeof(info));
    if (len)
        (void)sendto(udp, out, len, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
    record("DNS", &info, len, NULL, (uint64_t)n, len);
}

/* A readable (or hung up) TCP connection: the next bytes of its query;
 * once whole, its answer framed for sending. */
static void tcp_read(const struct lxp_config *cfg, struct tconn *c) {
    long want = lxd_tcp_want(&c->in);
    if (want <= 0) { /* (never: handled when the bytes came) */
        conn_close(c);
        return;
    }
    ssize_t n = recvfrom(c->fd, c->in.buf + c->in.have, (size_t)want, MSG_DONTWAIT, NULL, NULL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        if (c->in.have)
            record("DNS/TCP", NULL, 0, "tcp: closed by the client within a query", c->in.have, 0);
        conn_close(c);
        return;
    }
    c->in.have += (size_t)n;
    want = lxd_tcp_want(&c->in);
    if (want < 0) {
        char reason[72] = "tcp: declared length ";
        size_t at = strlen(reason), len = lxd_tcp_len(&c->in);
        char digits[8];
        int k = 0;
        do
            digits[k++] = (char)('0' + len % 10);
        while ((len /= 10) && k < 7);
        while (k)
            reason[at++] = digits[--k];
        lxd_copy_str(reason + at, sizeof(reason) - at, " (0 or over 1024): closed");
        record("DNS/TCP", NULL, 0, reason, c->in.have, 0);
        conn_close(c);
        return;
    }
    if (want > 0)
        return;
    static uint8_t ans[LXD_ANSWER_MAX];
    struct lxd_query_info info;
    size_t qlen = lxd_tcp_len(&c->in), len = lxd_answer(cfg, c->in.buf + 2, qlen, ans, &info);
    record("DNS/TCP", &info, len, NULL, qlen + 2, len ? len + 2 : 0);
    c->in.have = 0;
    c->nq++;
    if (!len) { /* not a query: nothing to say, and nothing more to hear */
        conn_close(c);
        return;
    }
    c->olen = lxd_tcp_frame(ans, len, c->out);
    c->osent = 0;
}

/* A writable TCP connection with an answer pending. */
static void tcp_write(struct tconn *c, uint64_t now) {
    ssize_t n = sendto(c->fd, c->out + c->osent, c->olen - c->osent, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        conn_close(c);
        return;
    }
    c->osent += (size_t)n;
    if (c->osent < c->olen)
        return;
    c->olen = c->osent = 0;
    if (c->nq >= LXD_TCP_QUERIES_MAX) {
        conn_close(c);
        return;
    }
    c->deadline = now + (uint64_t)LXD_TCP_IDLE_MS * 1000u;
}

static void tcp_accept(int tcp, uint64_t now) {
    int fd = accept4(tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (int i = 0; i < LXD_TCP_CONN_MAX; i++) {
        struct tconn *c = &conns[i];
        if (c->fd >= 0)
            continue;
        c->fd = fd;
        c->in.have = 0;
        c->olen = c->osent = 0;
        c->nq = 0;
        c->deadline = now + (uint64_t)LXD_TCP_IDLE_MS * 1000u;
        return;
    }
    close(fd);
    record("DNS/TCP", NULL, 0, "tcp: 16 connections open already: this one closed", 0, 0);
}

__attribute__((noreturn)) void lxd_serve(const struct lxp_config *cfg, struct lxp_audit *audit, uint64_t t0, int udp,
                                         int tcp, int alive) {
    audit_tab = audit;
    audit_t0 = t0;
    for (int i = 0; i < LXD_TCP_CONN_MAX; i++)
        conns[i].fd = -1;
    for (;;) {
        struct pollfd pfd[3 + LXD_TCP_CONN_MAX];
        int map[3 + LXD_TCP_CONN_MAX];
        nfds_t n = 0;
        pfd[n++] = (struct pollfd){.fd = alive, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = udp, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = tcp, .events = POLLIN}; /* (-1: ignored by poll) */
        uint64_t now = lxd_mono_us(), next = UINT64_MAX;
        for (int i = 0; i < LXD_TCP_CONN_MAX; i++) {
            if (conns[i].fd < 0)
                continue;
            map[n] = i;
            pfd[n++] = (struct pollfd){.fd = conns[i].fd, .events = conns[i].olen ? POLLOUT : POLLIN};
            if (conns[i].deadline < next)
                next = conns[i].deadline;
        }
        int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)((next - now) / 1000u + 1);
        if (poll(pfd, n, timeout) < 0)
            continue;
        if (pfd[0].revents)
            syscall(SYS_exit_group, 0); /* the host is gone */
        now = lxd_mono_us();
        if (pfd[1].revents & POLLIN)
            serve_udp(cfg, udp);
        for (nfds_t k = 3; k < n; k++) {
            struct tconn *c = &conns[map[k]];
            if (c->fd < 0)
                continue;
            if (pfd[k].revents & POLLOUT)
                tcp_write(c, now);
            else if (c->olen && (pfd[k].revents & (POLLHUP | POLLERR)))
                conn_close(c); /* (gone before its answer) */
            else if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                tcp_read(cfg, c);
            if (c->fd >= 0 && now >= c->deadline) {
                if (c->in.have || c->olen)
                    record("DNS/TCP", NULL, 0,
                           c->olen ? "tcp: answer not taken within 5 s: closed"
                                   : "tcp: query not complete within 5 s: closed",
                           c->in.have, c->osent);
                conn_close(c);
            }
        }
        if (tcp >= 0 && (pfd[2].revents & POLLIN))
            tcp_accept(tcp, now);
    }
}
