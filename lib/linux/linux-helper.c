/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The privileged helper's client (linux-helper.h). */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "linux-backend.h"
#include "linux-devices.h"
#include "linux-helper.h"
#include "linux-scm.h"

const char *lx_helper_socket(void) {
    const char *s = getenv("FORGEYARD_HELPER_SOCKET");
    return s && (s[0] == '/' || lx_helper_control_fd(s) >= 0) ? s : FYH_DEFAULT_SOCKET;
}

int lx_helper_control_fd(const char *where) {
    if (strncmp(where, "fd:", 3) != 0 || where[3] < '0' || where[3] > '9')
        return -1;
    char *end;
    long n = strtol(where + 3, &end, 10);
    return *end || n < 0 || n > 1000000 ? -1 : (int)n;
}

int lx_helper_stat(const char *where, struct stat *st) {
    int fd = lx_helper_control_fd(where);
    if (fd >= 0)
        return fstat(fd, st) < 0 ? -errno : 0;
    return stat(where, st) < 0 ? -errno : 0;
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits for fd to be ready for events until deadline: 0 or -errno. */
static int wait_fd(int fd, short events, uint64_t deadline) {
    for (;;) {
        uint64_t now = mono_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, (int)(deadline - now));
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
    }
}

/* The first bytes of the request, with fd (if any) as SCM_RIGHTS. */
static ssize_t send_first_flags(int sock, const uint8_t *buf, size_t len, int fd, int flags) {
    return scm_send_one(sock, buf, len, fd, flags);
}

static ssize_t send_first(int sock, const uint8_t *buf, size_t len, int fd) {
    return send_first_flags(sock, buf, len, fd, 0);
}

int lx_helper_call(const char *socket_path, const struct fyh_msg *req, struct fyh_msg *rep, int timeout_ms) {
    return lx_helper_call_fd(socket_path, req, -1, rep, timeout_ms);
}

/* The descriptors of one recvmsg: the first of the reply's first bytes
 * kept in *got (when wanted and none yet), every other closed; -1 when
 * one came that was not wanted (so the reply is refused). */
static int take_fds(struct msghdr *mh, bool first, int *got) {
    int r = 0;
    if (mh->msg_flags & MSG_CTRUNC)
        r = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int x;
            memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (got && *got < 0 && first && i == 0) {
                *got = x;
                continue;
            }
            close(x);
            r = -1;
        }
    }
    return r;
}

int lx_helper_call_fd(const char *socket_path, const struct fyh_msg *req, int pass_fd, struct fyh_msg *rep,
                      int timeout_ms) {
    return lx_helper_call_fds(socket_path, req, pass_fd, rep, NULL, timeout_ms);
}

/* Whether a listener's uid, as SO_PEERCRED gives it to us, is root's.
 * In a user namespace whose map leaves out root (a caller inside a
 * sandbox's namespace set), root shows as the overflow uid, as does every
 * other unmapped id: there, an unmapped listener is all that can be told. */
static bool root_listener(uid_t uid) {
    if (uid == 0)
        return true;
    char map[128] = "";
    int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, map, sizeof(map) - 1) : -1;
    if (fd >= 0)
        close(fd);
    unsigned inside, outside, count;
    bool initial = n > 0 && sscanf(map, "%u %u %u", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
                   count == UINT32_MAX;
    if (initial)
        return false;
    fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
    char v[16] = "";
    n = fd >= 0 ? read(fd, v, sizeof(v) - 1) : -1;
    if (fd >= 0)
        close(fd);
    return n > 0 && (uid_t)strtoul(v, NULL, 10) == uid;
}

int lx_helper_call_fds(const char *socket_path, const struct fyh_msg *req, int pass_fd, struct fyh_msg *rep,
                       int *got_fd, int timeout_ms) {
    if (got_fd)
        *got_fd = -1;
    uint8_t buf[FYH_MAX_MESSAGE];
    int len = fyh_encode(req, buf, sizeof(buf));
    if (len < 0)
        return -EINVAL;
    uint64_t deadline = mono_ms() + (uint64_t)timeout_ms;
    int r = 0, fd;
    int ctl = lx_helper_control_fd(socket_path);
    if (ctl >= 0) {
        /* Socketpair mode: a fresh pair of ours, one end sent to the helper
         * over the control socket (its credentials are ours, as at connect). */
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
            return -errno;
        fd = pair[0];
        for (;;) {
            ssize_t n = send_first_flags(ctl, (const uint8_t *)"C", 1, pair[1], MSG_DONTWAIT);
            if (n == 1)
                break;
            if (n < 0 && (errno == EAGAIN || errno == EINTR) && (r = wait_fd(ctl, POLLOUT, deadline)) == 0)
                continue;
            r = r ? r : n < 0 ? -errno : -EIO;
            break;
        }
        close(pair[1]);
        if (r == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
            r = -errno;
        if (r < 0) {
            close(fd);
            return r;
        }
    } else {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        r = -errno;
        if (r == -EINPROGRESS || r == -EAGAIN)
            r = wait_fd(fd, POLLOUT, deadline);
    }
    /* The helper is root (forgeyard-sandbox-helper(8) refuses to run as
     * anyone else and never changes uid): a listener of any other uid at
     * the path is not it, and is told nothing (no attempt name, no limits,
     * no namespace descriptor). SO_PEERCRED: who listened, at listen(2). */
    struct ucred peer;
    socklen_t pl = sizeof(peer);
    if (r == 0 && (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &pl) < 0 || !root_listener(peer.uid)))
        r = -EPERM;
    if (r < 0) {
        close(fd);
        return r;
    }
    }
    for (size_t off = 0; r == 0 && off < (size_t)len;) {
        ssize_t n = off == 0 ? send_first(fd, buf, (size_t)len, pass_fd)
                             : send(fd, buf + off, (size_t)len - off, MSG_NOSIGNAL);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && (errno == EAGAIN || errno == EINTR))
            r = wait_fd(fd, POLLOUT, deadline);
        else if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
            break; /* refused before it read us (a peer check): its typed reply is there to read */
        else
            r = n < 0 ? -errno : -EIO;
    }
    size_t got = 0, want = FYH_HEADER;
    bool stray = false;
    while (r == 0 && got < want) {
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(int) * 4)];
        } u;
        struct iovec iov = {buf + got, want - got};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (n >= 0 && take_fds(&mh, got == 0, got_fd) < 0)
            stray = true;
        if (n > 0) {
            got += (size_t)n;
            if (got == FYH_HEADER) {
                struct fyh_header h;
                if (fyh_decode_header(buf, got, &h) < 0)
                    r = -EPROTO;
                else
                    want = FYH_HEADER + h.length;
            }
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            r = wait_fd(fd, POLLIN, deadline);
        } else {
            r = n < 0 ? -errno : -ECONNRESET;
        }
    }
    close(fd);
    if (r == 0 && fyh_decode(buf, got, rep) < 0)
        r = -EPROTO;
    /* A reply to a request is its answer or a typed refusal, nothing else;
     * a descriptor comes only with NET_TAPPED, exactly one. */
    if (r == 0 && rep->type != FYH_T_ERROR && rep->type != (uint16_t)(req->type | 0x8000u))
        r = -EPROTO;
    if (r == 0 && (stray || (got_fd && (*got_fd >= 0) != (rep->type == FYH_T_NET_TAPPED))))
        r = -EPROTO;
    if (r < 0 && got_fd && *got_fd >= 0) {
        close(*got_fd);
        *got_fd = -1;
    }
    return r;
}

static const uint32_t helper_caps[] = {FY_CAP_CGROUP_MEMORY, FY_CAP_CGROUP_PIDS, FY_CAP_CGROUP_CPU};

/* The helper could not give us limits: each missing limit's hint says so. */
static void note_absent(fy_caps *c, const char *why) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(helper_caps); i++) {
        if (caps_present(c, helper_caps[i]))
            continue;
        const char *old = c->e[helper_caps[i]].hint;
        char *h = util_asprintf("%s%sor have forgeyard-sandbox-helper(8) serve this uid (%s)", old ? old : "",
                                old ? "; " : "", why);
        if (h) {
            caps_set_hint(c, helper_caps[i], "%s", h);
            free(h);
        }
    }
}

void lx_helper_probe(fy_caps *c) {
    const char *path = lx_helper_socket();
    struct stat st;
    int se = -lx_helper_stat(path, &st);
    if (se || !S_ISSOCK(st.st_mode)) {
        char why[512];
        snprintf(why, sizeof(why), "no privileged helper: %s %s", path,
                 se == ENOENT ? "does not exist" : se ? strerror(se) : "is not a socket");
        (void)caps_set_fact(c, LX_FACT_HELPER, why);
        note_absent(c, why);
        return;
    }
    /* Our version first; an older helper refuses it (bad-version) and is
     * asked in its own: version 2 (no cgroup v2), then 1 (no network). */
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    int r = lx_helper_call(path, &req, &rep, 1000);
    for (uint16_t v = FYH_VERSION - 1; r == 0 && v >= FYH_VERSION_MIN && rep.type == FYH_T_ERROR &&
                                       rep.u.error.code == FYH_E_VERSION; v--) {
        req.version = v;
        r = lx_helper_call(path, &req, &rep, 1000);
    }
    char why[1024];
    if (r < 0) {
        if (r == -EPERM)
            snprintf(why, sizeof(why), "privileged helper at %s refused: the socket's listener is not root", path);
        else
            snprintf(why, sizeof(why), "privileged helper at %s unreachable: %s", path, strerror(-r));
        (void)caps_set_fact(c, LX_FACT_HELPER, why);
        note_absent(c, why);
        return;
    }
    if (rep.type == FYH_T_ERROR) {
        snprintf(why, sizeof(why), "privileged helper at %s refused us (%s): %s", path,
                 fyh_err_name(rep.u.error.code), rep.u.error.text);
        (void)caps_set_fact(c, LX_FACT_HELPER, why);
        note_absent(c, why);
        return;
    }
    /* Which controllers we lack and the helper offers: those come from it. */
    static const struct { uint32_t cap, bit; const char *fact, *name; } ctl[] = {
        {FY_CAP_CGROUP_MEMORY, FYH_CTL_MEMORY, LX_FACT_CG1_MEMORY, "memory"},
        {FY_CAP_CGROUP_PIDS, FYH_CTL_PIDS, LX_FACT_CG1_PIDS, "pids"},
        {FY_CAP_CGROUP_CPU, FYH_CTL_CPU, LX_FACT_CG1_CPU, "cpu"},
    };
    bool any_local = false;
    for (size_t i = 0; i < FY_ARRAY_SIZE(ctl); i++)
        any_local |= caps_present(c, ctl[i].cap);
    char offered[64] = "";
    for (size_t i = 0; i < FY_ARRAY_SIZE(ctl); i++)
        if (rep.u.welcome.controllers & ctl[i].bit)
            snprintf(offered + strlen(offered), sizeof(offered) - strlen(offered), "%s%s", offered[0] ? " " : "",
                     ctl[i].name);
    bool v2 = rep.u.welcome.cgroup == FYH_CGROUP_V2;
    snprintf(why, sizeof(why), "privileged helper at %s (protocol %u) serves uid %u: %s %s; budget %u attempt "
             "cgroups, %llu bytes of memory and %llu pids each%s", path, (unsigned)rep.version, rep.u.welcome.uid,
             !rep.u.welcome.controllers ? "no cgroups" : v2 ? "cgroup v2" : "cgroup v1", offered[0] ? offered : "(none)",
             rep.u.welcome.max_cgroups, (unsigned long long)rep.u.welcome.max_memory,
             (unsigned long long)rep.u.welcome.max_pids,
             any_local ? " (not used: this host already gives us cgroup limits)" : "");
    (void)caps_set_fact(c, LX_FACT_HELPER, why);
    /* Restricted networking through it (linux-net-helper.c), whatever
     * the cgroups: the uplink it routes to, in its words. */
    if (rep.u.welcome.offers & FYH_OFFER_NET) {
        (void)caps_set_fact(c, LX_FACT_HELPER_NET, rep.u.welcome.uplink);
        (void)caps_set_fact(c, LX_FACT_HELPER_NET_SOCKET, path);
        /* The version to ask its network requests in; from 4 it also makes
         * a VM's router (NET_TAP: the sandbox-side link a tap it hands us). */
        char v[16];
        snprintf(v, sizeof(v), "%u", (unsigned)rep.version);
        (void)caps_set_fact(c, LX_FACT_HELPER_NET_VERSION, v);
    }
    if (any_local || !rep.u.welcome.controllers)
        return;
    if (v2) {
        /* cgroup v2: one cgroup per attempt, made and limited by the
         * helper, which also moves our sandbox into it (MOVE) and attaches
         * the device program. Nothing of our own v2 cgroup is used. */
        (void)caps_set_fact(c, LX_FACT_CG2_DIR, NULL);
        (void)caps_set_fact(c, LX_FACT_HELPER_CG2, rep.u.welcome.parent[__builtin_ctz(rep.u.welcome.controllers)]);
    }
    /* One mechanism for all of an attempt's cgroups: the helper's. */
    static const char *const local_only[] = {LX_FACT_CG1_FREEZER, LX_FACT_CG1_BLKIO, LX_FACT_CG1_CPUACCT,
                                             LX_FACT_CG1_MEMSW};
    for (size_t i = 0; i < FY_ARRAY_SIZE(local_only); i++)
        (void)caps_set_fact(c, local_only[i], NULL);
    for (size_t i = 0; i < FY_ARRAY_SIZE(ctl); i++) {
        if (!(rep.u.welcome.controllers & ctl[i].bit)) {
            (void)caps_set_fact(c, ctl[i].fact, NULL);
            continue;
        }
        int k = ctl[i].bit == FYH_CTL_MEMORY ? 0 : ctl[i].bit == FYH_CTL_PIDS ? 1 : 2;
        (void)caps_set_fact(c, ctl[i].fact, v2 ? NULL : rep.u.welcome.parent[k]);
        char budget[96] = "";
        if (ctl[i].bit == FYH_CTL_MEMORY)
            snprintf(budget, sizeof(budget), "; at most %llu bytes per attempt",
                     (unsigned long long)rep.u.welcome.max_memory);
        else if (ctl[i].bit == FYH_CTL_PIDS)
            snprintf(budget, sizeof(budget), "; at most %llu pids per attempt",
                     (unsigned long long)rep.u.welcome.max_pids);
        caps_set(c, ctl[i].cap, true, v2 ? 2 : 1, "cgroup v%u %s through the privileged helper at %s (created, limited "
                 "and removed by it below %s%s)", v2 ? 2u : 1u, ctl[i].name, path, rep.u.welcome.parent[k], budget);
        free(c->e[ctl[i].cap].hint); /* nothing to fix */
        c->e[ctl[i].cap].hint = NULL;
    }
    /* The device allowlist through it (FY_CONTROL_DEVICES): a v1 devices
     * cgroup per attempt that it makes with the plan's list (the helper
     * has the capability the writes need; we do not), or on cgroup v2 the
     * same list as a device program it attaches to the attempt's cgroup
     * (CAP_SYS_ADMIN and CAP_NET_ADMIN). */
    if (rep.u.welcome.controllers & FYH_CTL_DEVICES) {
        (void)caps_set_fact(c, v2 ? LX_FACT_DEV_BPF : LX_FACT_DEV_V1, v2 ? "1" : rep.u.welcome.parent[3]);
        if (v2)
            (void)caps_set_fact(c, LX_FACT_DEV_V1, NULL);
        char rp[FYH_PATH_MAX + 200];
        snprintf(rp, sizeof(rp), "%s through the privileged helper at %s (below %s)",
                 v2 ? "cgroup v2 device program (libbpf)" : "cgroup v1 devices controller", path,
                 rep.u.welcome.parent[3]);
        (void)caps_set_fact(c, LX_FACT_DEV_REPORT, rp);
    }
    char num[32];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)rep.u.welcome.max_memory);
    (void)caps_set_fact(c, LX_FACT_HELPER_MAX_MEMORY, num);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)rep.u.welcome.max_pids);
    (void)caps_set_fact(c, LX_FACT_HELPER_MAX_PIDS, num);
    (void)caps_set_fact(c, LX_FACT_HELPER_SOCKET, path);
    /* (requests go in the version it answered in: an older helper refuses ours) */
    snprintf(num, sizeof(num), "%u", (unsigned)rep.version);
    (void)caps_set_fact(c, LX_FACT_HELPER_VERSION, num);
}
