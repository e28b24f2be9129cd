/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Runs inside a sandbox of the network tests (test-net.sh): tries one
 * destination and says whether it answered. Exit 0: an answer came; 1: no
 * answer (refused, timed out, unreachable); 2: usage.
 *   fy-netprobe tcp ADDR PORT    connect, send "hi", expect "echo:hi"
 *   fy-netprobe udp ADDR PORT    send "hi", expect "echo:hi" within 1.5 s
 *   fy-netprobe icmp ADDR        an ICMP echo (datagram socket, else raw)
 *   fy-netprobe resolve NAME     getaddrinfo: prints the first address
 *   fy-netprobe resolve6 NAME    the same, IPv6 only (AF_INET6)
 *   fy-netprobe loopback PORT    listen on 127.0.0.1:PORT, connect to it
 *   fy-netprobe abstract NAME    connect to the abstract unix socket NAME
 *   fy-netprobe dnsq SERVER NAME TYPE   one raw DNS query (TYPE 1: A, 28: AAAA)
 *                                over UDP to SERVER:53: prints "rcode=R an=N [ADDR]";
 *                                exit 0 with an answer of any rcode, 1 with none
 *   fy-netprobe dnsqt SERVER NAME TYPE  the same over TCP (two-byte length prefix)
 *   fy-netprobe dnsbad SERVER    over TCP to SERVER:53 a declared length of 65535 and
 *                                100 bytes: prints "closed" and exits 0 when the server
 *                                ends the connection within 3 s, else 1
 *   fy-netprobe proxy HOST PORT  CONNECT HOST:PORT through the fetch-only proxy
 *                                (127.0.0.1:3128), prints its status line; then
 *                                as tcp: exit 0 only with "echo:hi" through it */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int addr_of(const char *s, int port, struct sockaddr_storage *ss, socklen_t *len) {
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof(*a4);
        return AF_INET;
    }
    if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*a6);
        return AF_INET6;
    }
    return -1;
}

static int wait_in(int s, int ms) {
    struct pollfd p = {.fd = s, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static int expect_echo(int s, int ms) {
    char buf[64] = "";
    if (!wait_in(s, ms))
        return 1;
    ssize_t n = recv(s, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return 1;
    buf[n] = 0;
    printf("%s\n", buf);
    return strncmp(buf, "echo:hi", 7) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    struct sockaddr_storage ss;
    socklen_t len;
    if (strcmp(argv[1], "dnsbad") == 0) {
        int fam = addr_of(argv[2], 53, &ss, &len);
        int s = fam < 0 ? -1 : socket(fam, SOCK_STREAM, 0);
        unsigned char b[102] = {0xff, 0xff};
        if (s < 0 || connect(s, (struct sockaddr *)&ss, len) < 0 || send(s, b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
            printf("tcp: %s\n", strerror(errno));
            return 1;
        }
        char c;
        if (wait_in(s, 3000) && recv(s, &c, 1, 0) <= 0) {
            printf("closed\n");
            return 0;
        }
        printf("still open\n");
        return 1;
    }
    if (strcmp(argv[1], "proxy") == 0 && argc >= 4) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(3128),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
            printf("proxy connect: %s\n", strerror(errno));
            return 1;
        }
        char req[600], head[1024];
        int n = snprintf(req, sizeof(req), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", argv[2], argv[3],
                         argv[2], argv[3]);
        if (n < 0 || (size_t)n >= sizeof(req) || send(s, req, (size_t)n, 0) != n)
            return 2;
        size_t got = 0;
        while (got < sizeof(head) - 1 && (got < 4 || memcmp(head + got - 4, "\r\n\r\n", 4) != 0)) {
            if (!wait_in(s, 5000))
                break;
            ssize_t k = recv(s, head + got, 1, 0); /* (byte by byte: nothing of the tunnel read here) */
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        head[got] = 0;
        printf("%.*s\n", (int)strcspn(head, "\r\n"), head);
        if (strncmp(head, "HTTP/1.1 200", 12) != 0)
            return 1;
        if (send(s, "hi", 2, 0) != 2)
            return 1;
        return expect_echo(s, 3000);
    }
    if ((strcmp(argv[1], "dnsq") == 0 || strcmp(argv[1], "dnsqt") == 0) && argc >= 5) {
        bool tcp = strcmp(argv[1], "dnsqt") == 0;
        unsigned char q[512], r[512];
        size_t n = 12;
        memset(q, 0, sizeof(q));
        q[0] = 0x4a;
        q[1] = 0x17;
        q[2] = 0x01; /* RD */
        q[5] = 1;    /* one question */
        for (const char *p = argv[3]; *p;) {
            const char *dot = strchr(p, '.');
            size_t l = dot ? (size_t)(dot - p) : strlen(p);
            if (l == 0 || l > 63 || n + l + 6 > sizeof(q))
                return 2;
            q[n++] = (unsigned char)l;
            memcpy(q + n, p, l);
            n += l;
            p += l + (dot ? 1 : 0);
        }
        q[n++] = 0;
        int type = atoi(argv[4]);
        q[n++] = (unsigned char)(type >> 8);
        q[n++] = (unsigned char)type;
        q[n++] = 0;
        q[n++] = 1;
        int fam = addr_of(argv[2], 53, &ss, &len);
        ssize_t got;
        if (tcp) {
            int s = socket(fam, SOCK_STREAM | SOCK_NONBLOCK, 0);
            unsigned char lq[2 + sizeof(q)], lr[2];
            lq[0] = (unsigned char)(n >> 8);
            lq[1] = (unsigned char)n;
            memcpy(lq + 2, q, n);
            if (s < 0 || (connect(s, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS)) {
                printf("tcp: %s\n", strerror(errno));
                return 1;
            }
            struct pollfd p = {.fd = s, .events = POLLOUT};
            int err = 0;
            socklen_t el = sizeof(err);
            if (poll(&p, 1, 2000) != 1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
                printf("tcp: %s\n", err ? strerror(err) : "connect timed out");
                return 1;
            }
            if (send(s, lq, n + 2, 0) != (ssize_t)(n + 2)) {
                printf("tcp: %s\n", strerror(errno));
                return 1;
            }
            size_t want = 2, have = 0;
            unsigned char *dst = lr;
            got = 0;
            while (have < want) {
                if (!wait_in(s, 2000)) {
                    printf("no answer\n");
                    return 1;
                }
                ssize_t k = recv(s, dst + have, want - have, 0);
                if (k <= 0) {
                    printf("no answer (closed)\n");
                    return 1;
                }
                have += (size_t)k;
                if (dst == lr && have == 2) {
                    want = (size_t)(lr[0] << 8 | lr[1]);
                    if (want > sizeof(r))
                        return 1;
                    dst = r;
                    have = 0;
                }
            }
            got = (ssize_t)want;
        } else {
            int s = socket(fam, SOCK_DGRAM, 0);
            if (s < 0 || sendto(s, q, n, 0, (struct sockaddr *)&ss, len) != (ssize_t)n) {
                printf("send: %s\n", strerror(errno));
                return 1;
            }
            if (!wait_in(s, 1500)) {
                printf("no answer\n");
                return 1;
            }
            got = recv(s, r, sizeof(r), 0);
        }
        if (got < 12 || r[0] != 0x4a || r[1] != 0x17) {
            printf("bad answer\n");
            return 1;
        }
        int an = r[6] << 8 | r[7];
        printf("rcode=%d an=%d", r[3] & 0x0f, an);
        /* The first answer's address: after the question (n - 12 bytes). */
        size_t p = n;
        if (an > 0 && (size_t)got >= p + 12) {
            size_t rdlen = (size_t)(r[p + 10] << 8 | r[p + 11]);
            char a[INET6_ADDRSTRLEN] = "";
            if ((rdlen == 4 || rdlen == 16) && (size_t)got >= p + 12 + rdlen)
                inet_ntop(rdlen == 4 ? AF_INET : AF_INET6, r + p + 12, a, sizeof(a));
            printf(" %s", a);
        }
        printf("\n");
        return 0;
    }
    if (strcmp(argv[1], "resolve") == 0 || strcmp(argv[1], "resolve6") == 0) {
        struct addrinfo *res = NULL, hints = {.ai_socktype = SOCK_STREAM};
        if (strcmp(argv[1], "resolve6") == 0)
            hints.ai_family = AF_INET6;
        int g = getaddrinfo(argv[2], NULL, &hints, &res);
        if (g) {
            printf("unresolved: %s\n", gai_strerror(g));
            return 1;
        }
        char a[INET6_ADDRSTRLEN] = "";
        void *p = res->ai_family == AF_INET ? (void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr
                                            : (void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
        inet_ntop(res->ai_family, p, a, sizeof(a));
        printf("%s\n", a);
        freeaddrinfo(res);
        return 0;
    }
    if (strcmp(argv[1], "abstract") == 0) {
        struct sockaddr_un u = {.sun_family = AF_UNIX};
        size_t n = strlen(argv[2]);
        if (n >= sizeof(u.sun_path) - 1)
            return 2;
        memcpy(u.sun_path + 1, argv[2], n);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&u, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
            printf("connect: %s\n", strerror(errno));
            return 1;
        }
        return 0;
    }
    if (strcmp(argv[1], "lo-link") == 0) {
        /* lo-link PORT: datagrams to 127.0.0.1:PORT out of eth0 (bound
         * there with SO_BINDTODEVICE, no privilege), once on a flow made
         * established over the loopback first (a server of ours answers),
         * once on a fresh socket. "sent ..." for each that left, "refused
         * ERRNO" for each the rules dropped; 0 when none left. */
        struct sockaddr_in lo = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(9)}, own;
        socklen_t ol = sizeof(own);
        inet_pton(AF_INET, "198.51.100.1", &out.sin_addr);
        int q = socket(AF_INET, SOCK_DGRAM, 0), srv = socket(AF_INET, SOCK_DGRAM, 0);
        if (q < 0 || srv < 0 || connect(q, (struct sockaddr *)&out, sizeof(out)) < 0 ||
            getsockname(q, (struct sockaddr *)&own, &ol) < 0 || bind(srv, (struct sockaddr *)&lo, sizeof(lo)) < 0) {
            printf("setup: %s\n", strerror(errno));
            return 2;
        }
        own.sin_port = 0;
        int left = 0;
        for (int fresh = 0; fresh < 2; fresh++) {
            int c = socket(AF_INET, SOCK_DGRAM, 0);
            if (c < 0 || bind(c, (struct sockaddr *)&own, sizeof(own)) < 0)
                return 2;
            if (!fresh) {
                struct sockaddr_in from;
                socklen_t fl = sizeof(from);
                char buf[16];
                if (sendto(c, "warm", 4, 0, (struct sockaddr *)&lo, sizeof(lo)) < 0 || !wait_in(srv, 1000) ||
                    recvfrom(srv, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) < 0 ||
                    sendto(srv, "ok", 2, 0, (struct sockaddr *)&from, fl) < 0 || !wait_in(c, 1000) ||
                    recv(c, buf, sizeof(buf), 0) < 0) {
                    printf("warm-up over the loopback: %s\n", strerror(errno));
                    return 2;
                }
            }
            if (setsockopt(c, SOL_SOCKET, SO_BINDTODEVICE, "eth0", 5) < 0) {
                printf("SO_BINDTODEVICE: %s\n", strerror(errno));
                return 2;
            }
            const char *mark = fresh ? "mark:lo-link-fresh" : "mark:lo-link-established";
            int sent = 0, err = 0;
            for (int i = 0; i < 3; i++) {
                if (sendto(c, mark, strlen(mark), 0, (struct sockaddr *)&lo, sizeof(lo)) >= 0)
                    sent++;
                else
                    err = errno;
            }
            if (sent) {
                printf("sent %s\n", mark + 5);
                left = 1;
            } else {
                printf("refused %d\n", err);
            }
            close(c);
        }
        return left;
    }
    if (strcmp(argv[1], "loopback") == 0) {
        /* loopback PORT [mptcp|tfo]: a listener of ours on 127.0.0.1:PORT,
         * reached by a plain TCP connect, an MPTCP socket's, or a TCP Fast
         * Open send (the last two are not connect(2) to Landlock's TCP
         * hook): 0 when the listener accepted, 1 when it was refused. */
        const char *how = argc > 3 ? argv[3] : "tcp";
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
        if (l >= 0) /* (an earlier probe's connection may still be in TIME_WAIT) */
            (void)setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0) {
            printf("listen: %s\n", strerror(errno));
            return 2;
        }
        int c = socket(AF_INET, SOCK_STREAM, strcmp(how, "mptcp") == 0 ? 262 /* IPPROTO_MPTCP */ : 0);
        if (c < 0) {
            printf("%s socket: %s\n", how, strerror(errno));
            return 1;
        }
        if (strcmp(how, "tfo") == 0) {
            if (sendto(c, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
                printf("tfo sendto: %s\n", strerror(errno));
                return 1;
            }
        } else if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0) {
            printf("%s connect: %s\n", how, strerror(errno));
            return 1;
        }
        struct pollfd p = {.fd = l, .events = POLLIN};
        if (poll(&p, 1, 1000) != 1 || accept(l, NULL, NULL) < 0) {
            printf("%s: the listener accepted nothing\n", how);
            return 1;
        }
        return 0;
    }
    int port = argc > 3 ? atoi(argv[3]) : 0;
    int fam = addr_of(argv[2], port, &ss, &len);
    if (fam < 0)
        return 2;
    if (strcmp(argv[1], "tcp") == 0 || strcmp(argv[1], "udp") == 0) {
        bool tcp = strcmp(argv[1], "tcp") == 0;
        int s = socket(fam, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK, 0);
        if (s < 0)
            return 1;
        if (connect(s, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
            printf("connect: %s\n", strerror(errno));
            return 1;
        }
        if (tcp) {
            struct pollfd p = {.fd = s, .events = POLLOUT};
            int err = 0;
            socklen_t el = sizeof(err);
            if (poll(&p, 1, 2000) != 1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
                printf("connect: %s\n", err ? strerror(err) : "timed out");
                return 1;
            }
        }
        if (send(s, "hi", 2, 0) != 2) {
            printf("send: %s\n", strerror(errno));
            return 1;
        }
        return expect_echo(s, tcp ? 2000 : 1500);
    }
    if (strcmp(argv[1], "icmp") == 0) {
        int proto = fam == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
        int s = socket(fam, SOCK_DGRAM, proto);
        bool raw = s < 0;
        if (raw)
            s = socket(fam, SOCK_RAW, proto);
        if (s < 0) {
            printf("icmp socket: %s\n", strerror(errno));
            return 1;
        }
        unsigned char pkt[16] = {fam == AF_INET ? ICMP_ECHO : 128, 0, 0, 0, 0x66, 0x79, 0, 1};
        if (fam == AF_INET) { /* (a raw socket sends our checksum; ICMPv6's the kernel computes) */
            uint32_t sum = 0;
            for (size_t i = 0; i < sizeof(pkt); i += 2)
                sum += (uint32_t)(pkt[i] << 8 | pkt[i + 1]);
            while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
            pkt[2] = (unsigned char)(~sum >> 8);
            pkt[3] = (unsigned char)~sum;
        }
        if (sendto(s, pkt, sizeof(pkt), 0, (struct sockaddr *)&ss, len) < 0) {
            printf("icmp send: %s\n", strerror(errno));
            return 1;
        }
        /* An echo reply of ours: a raw socket gets every ICMP packet
         * (neighbour discovery, errors, an IPv4 header first), so only type
         * 0 / 129 with our identifier counts. */
        for (int waited = 0; waited < 1500 && wait_in(s, 1500 - waited); waited += 100) {
            unsigned char in[1500];
            ssize_t n = recv(s, in, sizeof(in), 0);
            size_t off = 0;
            if (n > 0 && fam == AF_INET && (in[0] >> 4) == 4)
                off = (size_t)(in[0] & 15) * 4;
            if (n >= (ssize_t)(off + 8) && in[off] == (fam == AF_INET ? 0 : 129) &&
                (!raw || (in[off + 4] == 0x66 && in[off + 5] == 0x79))) { /* (a ping socket sets its own id) */
                printf("icmp: reply\n");
                return 0;
            }
        }
        printf("icmp: no reply\n");
        return 1;
    }
    return 2;
}
