/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard-sandbox-helper(8), attacked. The test starts its own helper (as
 * root, on a socket in its own temporary directory, with its own cgroup
 * subtree below the test's cgroup), talks to it as allowed and refused
 * uids, with well-formed and hostile messages, and a flood of connections;
 * every refusal must be a typed reply, nothing may be created by a refused
 * request, and the helper must keep serving. At the end the helper is
 * stopped and its subtree must be gone.
 *
 *   test-helper HELPER-BINARY */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "linux/helper/fyh-peer.h"
#include "linux/linux-helper.h"
#include "linux-scm.h"

#define UID_A 65534 /* allowed */
#define UID_B 65533 /* allowed, another budget */
#define UID_X 65532 /* not in the allowlist */

static const char *helper_bin;
static char tmpdir[64], sock[128], subtree[64], log_path[128];
static char memroot[512]; /* the memory subtree: <our memory cgroup>/<subtree> */
static pid_t helper_pid = -1;

/* ------------------------------------------------------------------ */

static bool our_memory_cgroup(char *out, size_t len) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024];
    bool ok = false;
    while (f && fgets(line, sizeof(line), f)) {
        char *p = strstr(line, ":memory:");
        if (p) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, len, "/sys/fs/cgroup/memory%s", strcmp(p + 8, "/") ? p + 8 : "");
            ok = true;
        }
    }
    if (f)
        fclose(f);
    return ok;
}

static pid_t start_helper(const char *bin, const char *extra_allow) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0)
            dup2(fd, 2);
        execl(bin, bin, "--socket", sock, "--allow", "65534:2:128M:4096", "--allow", extra_allow, "--subtree",
              subtree, "--timeout-ms", "2000", "--max-connections", "16", (char *)NULL);
        _exit(127);
    }
    /* bounded wait for the socket */
    for (int i = 0; i < 500; i++) {
        struct stat st;
        if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
            return pid;
        usleep(10000);
    }
    return pid;
}

/* A connection to the helper, the bytes sent on it with fd (>= 0) as
 * SCM_RIGHTS (as far as the helper took them: one that refused the
 * connection at once may have answered already); the connection, or -1. */
static int send_with_fd(const void *bytes, size_t len, int fd) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
    if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(s);
        return -1;
    }
    (void)!scm_send_one(s, bytes, len, fd, 0);
    return s;
}

/* Raw bytes to the helper, optionally closing our writing half; the reply
 * decoded into rep. 0, or -1 when no decodable reply came. */
static int raw_exchange_fd(const void *buf, size_t len, bool shut_wr, int pass_fd, struct fyh_msg *rep);
static int raw_exchange(const void *buf, size_t len, bool shut_wr, struct fyh_msg *rep) {
    return raw_exchange_fd(buf, len, shut_wr, -1, rep);
}

/* The same, with pass_fd (>= 0) sent along with the bytes (SCM_RIGHTS). */
static int raw_exchange_fd(const void *buf, size_t len, bool shut_wr, int pass_fd, struct fyh_msg *rep) {
    int fd = send_with_fd(buf, len, len ? pass_fd : -1);
    if (fd < 0)
        return -1;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (shut_wr)
        shutdown(fd, SHUT_WR);
    uint8_t in[FYH_MAX_MESSAGE];
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, in + got, sizeof(in) - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got && fyh_decode(in, got, rep) == 0 ? 0 : -1;
}

/* One request as uid (a child drops to it): the call's result; *rep the reply. */
static int call_as(uid_t uid, const struct fyh_msg *req, struct fyh_msg *rep) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        struct fyh_msg r;
        memset(&r, 0, sizeof(r));
        int rc = -EPERM;
        if (uid == 0 || (setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0))
            rc = lx_helper_call(sock, req, &r, 5000);
        (void)!write(p[1], &rc, sizeof(rc));
        (void)!write(p[1], &r, sizeof(r));
        _exit(0);
    }
    close(p[1]);
    int rc = -EIO;
    ck_assert_int_eq(read(p[0], &rc, sizeof(rc)), sizeof(rc));
    ck_assert_int_eq(read(p[0], rep, sizeof(*rep)), sizeof(*rep));
    close(p[0]);
    waitpid(pid, NULL, 0);
    return rc;
}

static int count_fds(pid_t pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* The helper's descriptors once it holds no connection: the count, when
 * two readings 50 ms apart agree (a connection of the test before may
 * still be closing; bounded, 5 s). */
static int settled_fds(pid_t pid) {
    int n = count_fds(pid);
    for (int i = 0; i < 100; i++) {
        usleep(50000);
        int m = count_fds(pid);
        if (m == n)
            break;
        n = m;
    }
    return n;
}

/* A child's "ready" over the pipe p (the child writes a byte to p[1] once
 * it is): closes the parent's write end, waits for the byte, closes the
 * read end. False when the child ended without it. */
static bool await_ready(int p[2]) {
    close(p[1]);
    char got = 0;
    bool ready = read(p[0], &got, 1) == 1;
    close(p[0]);
    return ready;
}

static void create_req(struct fyh_msg *m, const char *name, uint64_t memory, uint64_t pids) {
    memset(m, 0, sizeof(*m));
    m->type = FYH_T_CREATE;
    snprintf(m->u.create.name, sizeof(m->u.create.name), "%s", name);
    m->u.create.controllers = FYH_CTL_MEMORY | FYH_CTL_PIDS;
    m->u.create.memory = memory;
    m->u.create.pids = pids;
}

static void remove_req(struct fyh_msg *m, const char *name) {
    memset(m, 0, sizeof(*m));
    m->type = FYH_T_REMOVE;
    snprintf(m->u.remove.name, sizeof(m->u.remove.name), "%s", name);
}

/* Attempt cgroups below the memory subtree, every uid. */
static int count_attempts(void) {
    int n = 0;
    DIR *d = opendir(memroot);
    for (struct dirent *de; d && (de = readdir(d));) {
        if (strncmp(de->d_name, "uid-", 4) != 0)
            continue;
        char sub[1024];
        snprintf(sub, sizeof(sub), "%s/%s", memroot, de->d_name);
        DIR *u = opendir(sub);
        for (struct dirent *e; u && (e = readdir(u));)
            n += e->d_type == DT_DIR && strncmp(e->d_name, "forgeyard-", 10) == 0;
        if (u)
            closedir(u);
    }
    if (d)
        closedir(d);
    return n;
}

static void expect_error(int rc, const struct fyh_msg *rep, uint32_t code) {
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rep->type, FYH_T_ERROR);
    ck_assert_msg(rep->u.error.code == code, "expected %s, got %s (%s)", fyh_err_name(code),
                  fyh_err_name(rep->u.error.code), rep->u.error.text);
}

static void helper_alive(void) {
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_A, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    ck_assert_int_eq(kill(helper_pid, 0), 0);
}

/* A header with the given fields, then payload bytes. */
static size_t header(uint8_t *b, uint32_t magic, uint16_t version, uint16_t type, uint32_t length, uint32_t flags) {
    uint32_t v[] = {magic, version, type, length, flags};
    size_t sz[] = {4, 2, 2, 4, 4}, off = 0;
    for (size_t i = 0; i < 5; i++)
        for (size_t k = 0; k < sz[i]; k++)
            b[off++] = (uint8_t)(v[i] >> (8 * k));
    return off;
}

/* ------------------------------------------------------------------ */
/* the codec alone                                                     */

START_TEST(codec_round_trip) {
    struct fyh_msg in[20], out;
    uint8_t buf[FYH_MAX_MESSAGE];
    memset(in, 0, sizeof(in));
    in[0].type = FYH_T_HELLO;
    create_req(&in[1], "forgeyard-123-0123456789abcdef", 1 << 26, 100);
    in[1].u.create.controllers |= FYH_CTL_CPU;
    in[1].u.create.cpu_millis = 1500;
    remove_req(&in[2], "forgeyard-9-fedcba9876543210");
    in[3].type = FYH_T_WELCOME;
    in[3].u.welcome.uid = 65534;
    in[3].u.welcome.controllers = FYH_CTL_MEMORY | FYH_CTL_CPU;
    snprintf(in[3].u.welcome.parent[0], FYH_PATH_MAX, "/sys/fs/cgroup/memory/x/uid-65534");
    snprintf(in[3].u.welcome.parent[2], FYH_PATH_MAX, "/sys/fs/cgroup/cpu/x/uid-65534");
    in[3].u.welcome.max_memory = 1ull << 40;
    in[3].u.welcome.offers = FYH_OFFER_NET;
    snprintf(in[3].u.welcome.uplink, FYH_UPLINK_MAX, "/run/netns/egress");
    in[3].u.welcome.cgroup = FYH_CGROUP_V1;
    in[4].type = FYH_T_REMOVED;
    in[4].u.removed.left = 2;
    in[5].type = FYH_T_ERROR;
    in[5].u.error.code = FYH_E_BUDGET;
    in[5].u.error.os_errno = 12;
    snprintf(in[5].u.error.text, FYH_MSG_MAX, "over budget");
    /* version 2: the network messages */
    in[6].type = FYH_T_NET_CREATE;
    snprintf(in[6].u.net_create.name, FYH_NAME_MAX, "forgeyard-7-0123456789abcdef");
    in[6].u.net_create.nrules = 2;
    in[6].u.net_create.rule[0] = (struct fyh_net_rule){4, 24, FYH_PROTO_TCP, 80, 443, {198, 51, 100, 0}};
    in[6].u.net_create.rule[1] = (struct fyh_net_rule){6, 32, FYH_PROTO_UDP, 53, 53, {0x20, 0x01, 0x0d, 0xb8}};
    in[7].type = FYH_T_NET_REMOVE;
    snprintf(in[7].u.net_remove.name, FYH_NAME_MAX, "forgeyard-7-0123456789abcdef");
    in[8].type = FYH_T_NET_CREATED;
    snprintf(in[8].u.net_created.uplink, FYH_UPLINK_MAX, "host");
    snprintf(in[8].u.net_created.link, sizeof(in[8].u.net_created.link), "fy0123abcd");
    in[9].type = FYH_T_NET_REMOVED;
    in[9].u.net_removed.left = 1;
    /* a version-1 WELCOME (what a version-1 client asked for): no offers field */
    in[10] = in[3];
    in[10].version = 1;
    in[10].u.welcome.offers = 0;
    memset(in[10].u.welcome.uplink, 0, sizeof(in[10].u.welcome.uplink));
    /* version 3: a cgroup v2 WELCOME (one parent for every controller), MOVE, MOVED */
    in[11] = in[3];
    in[11].u.welcome.cgroup = FYH_CGROUP_V2;
    in[11].u.welcome.controllers = FYH_CTL_MEMORY | FYH_CTL_PIDS | FYH_CTL_DEVICES;
    memset(in[11].u.welcome.parent, 0, sizeof(in[11].u.welcome.parent));
    for (int k = 0; k < FYH_NCTL; k++)
        snprintf(in[11].u.welcome.parent[k], FYH_PATH_MAX, "%s",
                 k == 2 ? "" : "/sys/fs/cgroup/svc/forgeyard-helper/uid-65534");
    in[12].type = FYH_T_MOVE;
    snprintf(in[12].u.move.name, FYH_NAME_MAX, "forgeyard-7-0123456789abcdef");
    in[13].type = FYH_T_MOVED;
    in[13].u.moved.pid = 4242;
    /* version 4: NET_TAP (NET_CREATE's payload), NET_TAPPED, the job network messages */
    in[14] = in[6];
    in[14].type = FYH_T_NET_TAP;
    in[15] = in[8];
    in[15].type = FYH_T_NET_TAPPED;
    in[16].type = FYH_T_JOB_CREATE;
    snprintf(in[16].u.job.name, FYH_NAME_MAX, "forgeyard-7-0123456789abcdef");
    in[16].u.job.n = FYH_JOB_MEMBERS_MAX;
    in[17] = in[16];
    in[17].type = FYH_T_JOB_ADD;
    in[17].u.job.n = FYH_JOB_MEMBERS_MAX - 1;
    in[18] = in[16];
    in[18].type = FYH_T_JOB_DESTROY;
    in[18].u.job.n = 0;
    in[19].type = FYH_T_JOB_DELETED;
    in[19].u.job_done.left = 1;
    for (size_t i = 0; i < FY_ARRAY_SIZE(in); i++) {
        if (!in[i].version)
            in[i].version = FYH_VERSION; /* (what the decoder fills in) */
        int n = fyh_encode(&in[i], buf, sizeof(buf));
        ck_assert_int_gt(n, (int)FYH_HEADER - 1);
        ck_assert_int_eq(fyh_decode(buf, (size_t)n, &out), 0);
        ck_assert_msg(memcmp(&in[i], &out, sizeof(out)) == 0, "message %zu changed in a round trip", i);
        /* every shorter prefix and one byte more are refused */
        for (int k = 0; k < n; k++)
            ck_assert_int_lt(fyh_decode(buf, (size_t)k, &out), 0);
        buf[n] = 0;
        ck_assert_int_eq(fyh_decode(buf, (size_t)n + 1, &out), -FYH_E_MALFORMED);
    }
    /* the encoder refuses what the decoder would */
    struct fyh_msg bad;
    create_req(&bad, "../../escape", 1, 1);
    ck_assert_int_lt(fyh_encode(&bad, buf, sizeof(buf)), 0);
    create_req(&bad, "forgeyard-1-0123456789abcdef", 0, 1); /* memory asked, no limit */
    ck_assert_int_lt(fyh_encode(&bad, buf, sizeof(buf)), 0);
    /* network messages are version 2 only */
    bad = in[6];
    bad.version = 1;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_TYPE);
    /* rules: host bits past the prefix, a bad family, proto, prefix or ports; too many */
    static const struct fyh_net_rule bad_rules[] = {
        {4, 24, FYH_PROTO_TCP, 80, 80, {198, 51, 100, 1}},  /* host bits */
        {4, 32, FYH_PROTO_TCP, 80, 80, {198, 51, 100, 1, 1}}, /* bytes past an IPv4 address */
        {5, 8, FYH_PROTO_TCP, 80, 80, {10}},
        {4, 33, FYH_PROTO_TCP, 80, 80, {10}},
        {6, 129, FYH_PROTO_TCP, 80, 80, {0x20}},
        {4, 8, 1 /* icmp */, 80, 80, {10}},
        {4, 8, FYH_PROTO_TCP, 0, 80, {10}},
        {4, 8, FYH_PROTO_UDP, 81, 80, {10}},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad_rules); i++) {
        bad = in[6];
        bad.u.net_create.rule[1] = bad_rules[i];
        ck_assert_msg(fyh_encode(&bad, buf, sizeof(buf)) < 0, "bad rule %zu encoded", i);
        /* and the decoder refuses the bytes, written by hand */
        bad.u.net_create.rule[1] = in[6].u.net_create.rule[1];
        int n = fyh_encode(&bad, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        uint8_t *r1 = buf + n - 23; /* the last rule: family prefix proto min(2) max(2) addr(16) */
        r1[0] = bad_rules[i].family;
        r1[1] = bad_rules[i].prefix;
        r1[2] = bad_rules[i].proto;
        r1[3] = (uint8_t)bad_rules[i].port_min, r1[4] = (uint8_t)(bad_rules[i].port_min >> 8);
        r1[5] = (uint8_t)bad_rules[i].port_max, r1[6] = (uint8_t)(bad_rules[i].port_max >> 8);
        memcpy(r1 + 7, bad_rules[i].addr, 16);
        ck_assert_msg(fyh_decode(buf, (size_t)n, &out) == -FYH_E_MALFORMED, "bad rule %zu decoded", i);
    }
    bad = in[6];
    bad.u.net_create.nrules = FYH_NET_RULES_MAX + 1;
    ck_assert_int_lt(fyh_encode(&bad, buf, sizeof(buf)), 0);
    /* version 3: MOVE/MOVED only there; a v2 WELCOME's parents are one
     * directory; its cgroup field says none exactly when no controller */
    for (int k = 12; k <= 13; k++) {
        bad = in[k];
        bad.version = 2;
        ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_TYPE);
    }
    bad = in[11];
    snprintf(bad.u.welcome.parent[1], FYH_PATH_MAX, "/sys/fs/cgroup/elsewhere");
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad = in[11];
    bad.u.welcome.cgroup = FYH_CGROUP_NONE;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad = in[11];
    bad.u.welcome.cgroup = 3;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad = in[13];
    bad.u.moved.pid = 0;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad = in[12];
    snprintf(bad.u.move.name, FYH_NAME_MAX, "../../../init.scope");
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_NAME);
    /* version 4: its messages only there; a job of 0 or 255 members, an
     * index of 254, a name outside the pattern refused */
    for (int k = 14; k <= 19; k++) {
        bad = in[k];
        bad.version = 3;
        ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_TYPE);
    }
    bad = in[16];
    bad.u.job.n = 0;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad.u.job.n = FYH_JOB_MEMBERS_MAX + 1;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad = in[17];
    bad.u.job.n = FYH_JOB_MEMBERS_MAX;
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_MALFORMED);
    bad = in[18];
    snprintf(bad.u.job.name, FYH_NAME_MAX, "forgeyard-7-../../../x");
    ck_assert_int_eq(fyh_encode(&bad, buf, sizeof(buf)), -FYH_E_NAME);
    bad = in[14];
    bad.u.net_create.rule[0].port_min = 0;
    ck_assert_int_lt(fyh_encode(&bad, buf, sizeof(buf)), 0);
}
END_TEST

START_TEST(codec_names) {
    ck_assert(fyh_valid_name("forgeyard-1-0123456789abcdef"));
    static const char *const bad[] = {"", "forgeyard-", "forgeyard--0123456789abcdef", "forgeyard-1-0123456789abcde",
                                      "forgeyard-1-0123456789abcdef0", "forgeyard-1-0123456789ABCDEF",
                                      "forgeyard-1-0123456789abcdef/..", "../forgeyard-1-0123456789abcdef",
                                      "forgeyard-1/0123456789abcdef", "forgeyard-12345678901-0123456789abcdef"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(bad); i++)
        ck_assert_msg(!fyh_valid_name(bad[i]), "%s accepted", bad[i]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the helper                                                          */

START_TEST(hello_allowed) {
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_A, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    ck_assert_uint_eq(rep.u.welcome.uid, UID_A);
    ck_assert_uint_eq(rep.u.welcome.max_cgroups, 2);
    ck_assert_uint_eq(rep.u.welcome.max_memory, 128u << 20);
    ck_assert(rep.u.welcome.controllers & FYH_CTL_MEMORY);
    ck_assert_uint_eq(rep.u.welcome.cgroup, FYH_CGROUP_V1); /* (this host is hybrid) */
    char want[1024];
    snprintf(want, sizeof(want), "%s/uid-%u", memroot, UID_A);
    ck_assert_str_eq(rep.u.welcome.parent[0], want);
    struct stat st;
    ck_assert_int_eq(stat(want, &st), 0);
    ck_assert_uint_eq(st.st_uid, 0); /* the uid's parent is the helper's, not the peer's */
    /* Its budget holds swap too (2 x 128M), where the kernel accounts swap. */
    char memsw[1100];
    snprintf(memsw, sizeof(memsw), "%s/memory.memsw.limit_in_bytes", want);
    FILE *sw = fopen(memsw, "re");
    if (sw) {
        unsigned long long v = 0;
        ck_assert_int_eq(fscanf(sw, "%llu", &v), 1);
        fclose(sw);
        ck_assert_msg(v == 2ull * (128u << 20), "the uid's memory+swap limit is %llu", v);
    }
    /* The helper keeps only CAP_CHOWN and CAP_KILL effective (CAP_DAC_OVERRIDE permitted, for its
     * subtree in a cgroup root, and CAP_SYS_ADMIN where there is a v1 devices hierarchy, for
     * devices.allow; no CAP_NET_ADMIN without --net-uplink), bounding set included, under
     * no_new_privs. */
    bool devices = access("/sys/fs/cgroup/devices", F_OK) == 0;
    uint64_t permitted = 0x23 | (devices ? 1ull << 21 : 0);
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)helper_pid);
    FILE *f = fopen(path, "re");
    ck_assert_ptr_nonnull(f);
    int seen = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "CapEff:", 7) == 0) { /* CAP_CHOWN, CAP_KILL */
            ck_assert_msg(strtoull(line + 7, NULL, 16) == 0x21, "%s", line);
            seen++;
        } else if (strncmp(line, "CapPrm:", 7) == 0 || strncmp(line, "CapBnd:", 7) == 0) { /* and CAP_DAC_OVERRIDE */
            ck_assert_msg(strtoull(line + 7, NULL, 16) == permitted, "%s", line);
            seen++;
        } else if (strncmp(line, "NoNewPrivs:", 11) == 0) {
            ck_assert_int_eq(atoi(line + 11), 1);
            seen++;
        }
    }
    fclose(f);
    ck_assert_int_eq(seen, 4);
}
END_TEST

START_TEST(wrong_peer_uid) {
    struct fyh_msg rep, req;
    uid_t who[] = {0, UID_X};
    for (size_t i = 0; i < 2; i++) {
        req = (struct fyh_msg){.type = FYH_T_HELLO};
        expect_error(call_as(who[i], &req, &rep), &rep, FYH_E_DENIED);
        create_req(&req, "forgeyard-1-0123456789abcdef", 1 << 20, 10);
        expect_error(call_as(who[i], &req, &rep), &rep, FYH_E_DENIED);
    }
    ck_assert_int_eq(count_attempts(), 0);
    helper_alive();
}
END_TEST

/* A listener at a helper path that is not root (another user bound it
 * where a helper was expected, e.g. after the helper stopped): the client
 * refuses it before saying anything, and the impostor reads nothing. */
START_TEST(impostor_listener_not_root) {
    char fake[600];
    snprintf(fake, sizeof(fake), "%s/impostor.sock", tmpdir);
    int st = 0;
    /* (the directory is root's: bind as root, then listen as UID_X) */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fake);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(l, 0);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(chmod(fake, 0777), 0);
    int ready[2];
    ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setresgid(UID_X, UID_X, UID_X) < 0 || setresuid(UID_X, UID_X, UID_X) < 0 ||
            listen(l, 4) < 0)
            _exit(1);
        (void)!write(ready[1], "l", 1); /* (listening: the call below must meet it) */
        int c = accept(l, NULL, NULL);
        char b[64];
        struct pollfd pf = {c, POLLIN, 0};
        /* what a client sent within a second: nothing, if it refused us */
        ssize_t n = c >= 0 && poll(&pf, 1, 1000) == 1 ? recv(c, b, sizeof(b), MSG_DONTWAIT) : 0;
        _exit(c < 0 ? 2 : n > 0 ? 4 : 0);
    }
    ck_assert_msg(await_ready(ready), "the impostor never listened");
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(lx_helper_call(fake, &req, &rep, 3000), -EPERM);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the impostor read a request (status %d)", st);
    close(l);
    unlink(fake);
    /* the real helper still answers */
    helper_alive();
}
END_TEST

START_TEST(hostile_headers) {
    uint8_t b[FYH_MAX_MESSAGE + 64];
    struct fyh_msg rep;
    memset(b, 0, sizeof(b));
    /* These come from root, who is refused before any byte is read: the
     * header checks need an allowed uid, so a child of uid A sends them. */
    struct { uint32_t magic; uint16_t version, type; uint32_t length, flags; size_t extra; bool shut; uint32_t want; }
    cases[] = {
        {0xdeadbeef, 1, FYH_T_HELLO, 0, 0, 0, false, FYH_E_MAGIC},
        {FYH_MAGIC, FYH_VERSION + 1, FYH_T_HELLO, 0, 0, 0, false, FYH_E_VERSION},
        {FYH_MAGIC, 1, FYH_T_NET_CREATE, 0, 0, 0, false, FYH_E_TYPE}, /* a version-2 type in version 1 */
        {FYH_MAGIC, 2, FYH_T_MOVE, 0, 0, 0, false, FYH_E_TYPE},       /* a version-3 type in version 2 */
        {FYH_MAGIC, 3, FYH_T_NET_TAP, 0, 0, 0, false, FYH_E_TYPE},    /* a version-4 type in version 3 */
        {FYH_MAGIC, 3, FYH_T_JOB_CREATE, 0, 0, 0, false, FYH_E_TYPE},
        {FYH_MAGIC, 0, FYH_T_HELLO, 0, 0, 0, false, FYH_E_VERSION},
        {FYH_MAGIC, 1, FYH_T_HELLO, FYH_MAX_PAYLOAD + 1, 0, 0, false, FYH_E_TOO_BIG},
        {FYH_MAGIC, 1, FYH_T_HELLO, 0xffffffffu, 0, 0, false, FYH_E_TOO_BIG},
        {FYH_MAGIC, 1, 77, 0, 0, 0, false, FYH_E_TYPE},
        {FYH_MAGIC, 1, FYH_T_WELCOME, 0, 0, 0, false, FYH_E_MALFORMED}, /* a reply type, empty */
        {FYH_MAGIC, 1, FYH_T_HELLO, 0, 1, 0, false, FYH_E_FLAGS},
        {FYH_MAGIC, 1, FYH_T_HELLO, 4, 0, 4, false, FYH_E_MALFORMED},   /* a HELLO with a payload */
        {FYH_MAGIC, 1, FYH_T_CREATE, 100, 0, 50, true, FYH_E_MALFORMED}, /* truncated payload */
        {FYH_MAGIC, 1, FYH_T_CREATE, 3, 0, 3, false, FYH_E_MALFORMED},   /* a string cut short */
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(cases); i++) {
        size_t n = header(b, cases[i].magic, cases[i].version, cases[i].type, cases[i].length, cases[i].flags);
        memset(b + n, 0x41, cases[i].extra);
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
            struct fyh_msg r;
            memset(&r, 0, sizeof(r));
            int rc = -1;
            if (setgroups(0, NULL) == 0 && setresgid(UID_A, UID_A, UID_A) == 0 && setresuid(UID_A, UID_A, UID_A) == 0)
                rc = raw_exchange(b, n + cases[i].extra, cases[i].shut, &r);
            (void)!write(p[1], &rc, sizeof(rc));
            (void)!write(p[1], &r, sizeof(r));
            _exit(0);
        }
        close(p[1]);
        int rc = -1;
        ck_assert_int_eq(read(p[0], &rc, sizeof(rc)), sizeof(rc));
        ck_assert_int_eq(read(p[0], &rep, sizeof(rep)), sizeof(rep));
        close(p[0]);
        waitpid(pid, NULL, 0);
        ck_assert_msg(rc == 0, "case %zu: no typed reply", i);
        ck_assert_int_eq(rep.type, FYH_T_ERROR);
        ck_assert_msg(rep.u.error.code == cases[i].want, "case %zu: expected %s, got %s", i,
                      fyh_err_name(cases[i].want), fyh_err_name(rep.u.error.code));
    }
    ck_assert_int_eq(count_attempts(), 0);
    helper_alive();
}
END_TEST

/* A connection that sends nothing: refused at the deadline, typed. */
START_TEST(silent_connection) {
    pid_t pid = fork();
    if (pid == 0) {
        struct fyh_msg r;
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        struct timeval tv = {10, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            _exit(3);
        uint8_t in[FYH_MAX_MESSAGE];
        ssize_t n = recv(fd, in, sizeof(in), MSG_WAITALL);
        _exit(n > 0 && fyh_decode(in, (size_t)n, &r) == 0 && r.type == FYH_T_ERROR &&
                      r.u.error.code == FYH_E_TIMEOUT ? 0 : 4);
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    helper_alive();
}
END_TEST

START_TEST(names_outside) {
    struct fyh_msg req, rep;
    static const char *const names[] = {"../../../x", "forgeyard-1-0123456789abcdef/../../uid-65533",
                                        "uid-65533", ".", "forgeyard-1-0123456789abcde\n"};
    uint8_t b[FYH_MAX_MESSAGE];
    for (size_t i = 0; i < FY_ARRAY_SIZE(names); i++) {
        /* hand-encoded: the library's encoder would refuse to send these */
        size_t n = FYH_HEADER, nl = strlen(names[i]);
        b[n++] = (uint8_t)nl;
        b[n++] = 0;
        memcpy(b + n, names[i], nl);
        n += nl;
        memset(b + n, 0, 36);
        b[n] = FYH_CTL_PIDS;
        b[n + 20] = 5; /* pids */
        n += 36;
        header(b, FYH_MAGIC, 1, FYH_T_CREATE, (uint32_t)(n - FYH_HEADER), 0);
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
            struct fyh_msg r;
            memset(&r, 0, sizeof(r));
            int rc = -1;
            if (setgroups(0, NULL) == 0 && setresgid(UID_A, UID_A, UID_A) == 0 && setresuid(UID_A, UID_A, UID_A) == 0)
                rc = raw_exchange(b, n, false, &r);
            (void)!write(p[1], &rc, sizeof(rc));
            (void)!write(p[1], &r, sizeof(r));
            _exit(0);
        }
        close(p[1]);
        int rc = -1;
        ck_assert_int_eq(read(p[0], &rc, sizeof(rc)), sizeof(rc));
        ck_assert_int_eq(read(p[0], &rep, sizeof(rep)), sizeof(rep));
        close(p[0]);
        waitpid(pid, NULL, 0);
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(rep.type, FYH_T_ERROR);
        ck_assert_msg(rep.u.error.code == FYH_E_NAME || rep.u.error.code == FYH_E_MALFORMED, "%s: %s", names[i],
                      fyh_err_name(rep.u.error.code));
    }
    ck_assert_int_eq(count_attempts(), 0);
    /* Another uid's cgroup: B makes one, A can neither remove nor re-create it. */
    const char *name = "forgeyard-77-00000000000000b1";
    create_req(&req, name, 1 << 24, 10);
    ck_assert_int_eq(call_as(UID_B, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_CREATED);
    char bdir[1024];
    snprintf(bdir, sizeof(bdir), "%s/uid-%u/%s", memroot, UID_B, name);
    ck_assert_str_eq(rep.u.created.dir[0], bdir);
    remove_req(&req, name);
    expect_error(call_as(UID_A, &req, &rep), &rep, FYH_E_NOT_FOUND);
    struct stat st;
    ck_assert_int_eq(stat(bdir, &st), 0);
    /* A's tasks file is A's: B cannot move a process into A's cgroup, nor A into B's */
    char tasks[1100];
    snprintf(tasks, sizeof(tasks), "%s/tasks", bdir);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        _exit(open(tasks, O_WRONLY) < 0 && errno == EACCES ? 0 : 1);
    }
    int ws;
    waitpid(pid, &ws, 0);
    ck_assert_int_eq(WEXITSTATUS(ws), 0);
    remove_req(&req, name);
    ck_assert_int_eq(call_as(UID_B, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_REMOVED);
    ck_assert_uint_eq(rep.u.removed.left, 0);
    ck_assert_int_eq(stat(bdir, &st), -1);
    ck_assert_int_eq(count_attempts(), 0);
}
END_TEST

/* A's budget: two cgroups of at most 128M and 4096 pids each. */
/* MOVE (version 3) is for cgroup v2: a v1 helper refuses it typed
 * (not-offered), with a pidfd of the peer's own child or without one
 * (bad-descriptor), a version-2 peer cannot send it, and nothing moves. */
START_TEST(move_on_v1) {
    struct fyh_msg req, rep;
    create_req(&req, "forgeyard-1-00000000000000aa", 1 << 20, 10);
    ck_assert_int_eq(call_as(UID_A, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_CREATED);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        uint32_t codes[2] = {0, 0};
        if (setgroups(0, NULL) == 0 && setresgid(UID_A, UID_A, UID_A) == 0 && setresuid(UID_A, UID_A, UID_A) == 0) {
            pid_t kid = fork();
            if (kid == 0) {
                pause();
                _exit(0);
            }
            int pfd = (int)syscall(SYS_pidfd_open, kid, 0);
            struct fyh_msg m = {.type = FYH_T_MOVE}, r;
            snprintf(m.u.move.name, sizeof(m.u.move.name), "forgeyard-1-00000000000000aa");
            uint8_t b[FYH_MAX_MESSAGE];
            int n = fyh_encode(&m, b, sizeof(b));
            if (n > 0 && raw_exchange_fd(b, (size_t)n, false, pfd, &r) == 0 && r.type == FYH_T_ERROR)
                codes[0] = r.u.error.code;
            if (n > 0 && raw_exchange(b, (size_t)n, false, &r) == 0 && r.type == FYH_T_ERROR)
                codes[1] = r.u.error.code;
            kill(kid, SIGKILL);
            waitpid(kid, NULL, 0);
        }
        (void)!write(p[1], codes, sizeof(codes));
        _exit(0);
    }
    close(p[1]);
    uint32_t codes[2] = {0, 0};
    ck_assert_int_eq(read(p[0], codes, sizeof(codes)), sizeof(codes));
    close(p[0]);
    waitpid(pid, NULL, 0);
    ck_assert_str_eq(fyh_err_name(codes[0]), "not-offered");
    ck_assert_str_eq(fyh_err_name(codes[1]), "bad-descriptor");
    remove_req(&req, "forgeyard-1-00000000000000aa");
    ck_assert_int_eq(call_as(UID_A, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_REMOVED);
    ck_assert_int_eq(count_attempts(), 0);
    helper_alive();
}
END_TEST

START_TEST(budget) {
    struct fyh_msg req, rep;
    create_req(&req, "forgeyard-1-00000000000000a1", (128u << 20) + 1, 10);
    expect_error(call_as(UID_A, &req, &rep), &rep, FYH_E_BUDGET);
    create_req(&req, "forgeyard-1-00000000000000a1", 1 << 20, 4097);
    expect_error(call_as(UID_A, &req, &rep), &rep, FYH_E_BUDGET);
    ck_assert_int_eq(count_attempts(), 0);
    /* A child of uid A makes three requests, checks what it got, moves
     * itself into the first cgroup and exits: the helper's gc must then
     * remove both cgroups of the exited creator. */
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        struct fyh_msg q, r;
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        const char *names[] = {"forgeyard-1-00000000000000a1", "forgeyard-1-00000000000000a2",
                               "forgeyard-1-00000000000000a3", "forgeyard-1-00000000000000a1"};
        uint32_t got[6] = {0};
        for (int i = 0; i < 3; i++) {
            create_req(&q, names[i], 1 << 24, 10);
            got[i] = lx_helper_call(sock, &q, &r, 5000) == 0 ? (r.type == FYH_T_ERROR ? r.u.error.code : 0) : 99;
        }
        /* the limits the helper wrote, and the tasks file is ours */
        char path[1024], val[64] = "";
        snprintf(path, sizeof(path), "%s/uid-%u/%s/memory.limit_in_bytes", memroot, UID_A, names[0]);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            (void)!read(fd, val, sizeof(val) - 1);
            close(fd);
        }
        got[3] = (uint32_t)strtoull(val, NULL, 10) == (1u << 24) ? 0 : 98;
        /* we can move ourselves in (the kernel checks our uid); the limit is not ours to change */
        snprintf(path, sizeof(path), "%s/uid-%u/%s/tasks", memroot, UID_A, names[0]);
        fd = open(path, O_WRONLY);
        got[4] = fd >= 0 && write(fd, "0", 1) == 1 ? 0 : 97;
        if (fd >= 0)
            close(fd);
        snprintf(path, sizeof(path), "%s/uid-%u/%s/memory.limit_in_bytes", memroot, UID_A, names[0]);
        got[5] = open(path, O_WRONLY) < 0 && errno == EACCES ? 0 : 96;
        (void)!write(p[1], got, sizeof(got));
        _exit(0);
    }
    close(p[1]);
    uint32_t got[6];
    ck_assert_int_eq(read(p[0], got, sizeof(got)), sizeof(got));
    close(p[0]);
    ck_assert_uint_eq(got[0], 0);
    ck_assert_uint_eq(got[1], 0);
    ck_assert_uint_eq(got[2], FYH_E_BUDGET); /* the third is over the count */
    ck_assert_uint_eq(got[3], 0);
    ck_assert_uint_eq(got[4], 0);
    ck_assert_uint_eq(got[5], 0);
    waitpid(pid, NULL, 0);
    /* its creator has exited: the helper's gc removes both (bounded wait) */
    for (int i = 0; i < 100 && count_attempts() > 0; i++)
        usleep(50000);
    ck_assert_int_eq(count_attempts(), 0);
    helper_alive();
}
END_TEST

/* Remove: the helper kills what is left of the peer's in the cgroup; the
 * directory is witnessed gone. */
START_TEST(remove_kills_and_witnesses) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        struct fyh_msg q, r;
        const char *name = "forgeyard-2-00000000000000c1";
        create_req(&q, name, 1 << 24, 10);
        if (lx_helper_call(sock, &q, &r, 5000) != 0 || r.type != FYH_T_CREATED)
            _exit(3);
        int in[2];
        if (pipe(in) < 0)
            _exit(6);
        pid_t sleeper = fork();
        if (sleeper == 0) {
            char path[1100];
            snprintf(path, sizeof(path), "%s/tasks", r.u.created.dir[0]);
            int fd = open(path, O_WRONLY);
            if (fd < 0 || write(fd, "0", 1) != 1)
                _exit(4);
            close(fd);
            (void)!write(in[1], "i", 1); /* (in the cgroup: REMOVE may come) */
            for (int i = 0; i < 600; i++) /* bounded: 60 s */
                usleep(100000);
            _exit(5);
        }
        (void)await_ready(in); /* (a sleeper that could not join: its status 4 says so) */
        remove_req(&q, name);
        uint32_t out[2] = {99, 99};
        if (lx_helper_call(sock, &q, &r, 5000) == 0 && r.type == FYH_T_REMOVED)
            out[0] = r.u.removed.left;
        int st = 0;
        waitpid(sleeper, &st, 0);
        out[1] = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : 1;
        (void)!write(p[1], out, sizeof(out));
        _exit(0);
    }
    close(p[1]);
    uint32_t out[2];
    ck_assert_int_eq(read(p[0], out, sizeof(out)), sizeof(out));
    close(p[0]);
    waitpid(pid, NULL, 0);
    ck_assert_uint_eq(out[0], 0);
    ck_assert_uint_eq(out[1], 0);
    ck_assert_int_eq(count_attempts(), 0);
}
END_TEST

/* A sleeper of bounded life (60 s) with the given uids: a stand-in for a
 * set-user-ID program the peer started (real uid the peer's, effective and
 * saved 0), or for one that became root (all 0: sudo). Returned once it has
 * them (-1 when it could not take them). */
static pid_t sleeper_with_uids(uid_t r, uid_t e, uid_t s) {
    int in[2];
    if (pipe(in) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(in[0]);
        if (setresuid(r, e, s) != 0)
            _exit(2);
        (void)!write(in[1], "u", 1);
        close(in[1]);
        for (int i = 0; i < 600; i++)
            usleep(100000);
        _exit(5);
    }
    bool has = await_ready(in) && pid > 0;
    if (pid > 0 && !has) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return has ? pid : -1;
}

/* pid's wait status within about a second, else it is killed and -1. */
static int reap_soon(pid_t pid) {
    int st = 0;
    for (int i = 0; i < 100; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static bool write_pid(const char *dir, const char *file, pid_t pid) {
    char path[1100], v[32];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    snprintf(v, sizeof(v), "%d", (int)pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, v, strlen(v)) == (ssize_t)strlen(v);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* A set-user-ID-root program the peer started (real uid the peer's) and
 * moved into its attempt cgroup itself (v1 lets it: its euid is the
 * process's real uid) is the peer's to kill (kill(2) lets it), so REMOVE
 * kills it too. Its /proc/PID is owned by its effective uid, root, which
 * the helper once took for "not the peer's": the process stayed, the
 * cgroup could never be removed and the uid's budget slot was lost. */
START_TEST(remove_kills_setuid_program) {
    pid_t prog = sleeper_with_uids(UID_A, 0, 0);
    ck_assert_int_gt(prog, 0);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        struct fyh_msg q, r;
        const char *name = "forgeyard-2-00000000000000c2";
        create_req(&q, name, 1 << 24, 10);
        if (lx_helper_call(sock, &q, &r, 5000) != 0 || r.type != FYH_T_CREATED)
            _exit(3);
        uint32_t out[2] = {99, 1};
        /* moved in by the peer itself (it may: the process's real uid is its) */
        out[1] = write_pid(r.u.created.dir[0], "tasks", prog) && write_pid(r.u.created.dir[1], "tasks", prog) ? 0 : 1;
        remove_req(&q, name);
        if (lx_helper_call(sock, &q, &r, 5000) == 0 && r.type == FYH_T_REMOVED)
            out[0] = r.u.removed.left;
        (void)!write(p[1], out, sizeof(out));
        _exit(0);
    }
    close(p[1]);
    uint32_t out[2] = {99, 99};
    ck_assert_int_eq(read(p[0], out, sizeof(out)), sizeof(out));
    close(p[0]);
    waitpid(pid, NULL, 0);
    int st = reap_soon(prog);
    ck_assert_msg(out[1] == 0, "the peer could not move its set-user-ID program into its cgroup");
    ck_assert_msg(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                  "the peer's set-user-ID program survived REMOVE (status %d)", st);
    ck_assert_uint_eq(out[0], 0);
    ck_assert_int_eq(count_attempts(), 0);
}
END_TEST

/* What is not the peer's to kill (here a process that became root in the
 * peer's attempt cgroup, placed by the test as sudo would leave it) is
 * spared and its cgroup stays, but REMOVE (and the gc, every second, for
 * a creator that exited) no longer waits 40 rounds of 5 ms per controller
 * on it: a peer holding such cgroups froze the helper for every uid. */
START_TEST(remove_spares_others_without_waiting) {
    pid_t root = sleeper_with_uids(0, 0, 0);
    ck_assert_int_gt(root, 0);
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        struct fyh_msg q, r;
        const char *name = "forgeyard-2-00000000000000c3";
        create_req(&q, name, 1 << 24, 10);
        if (lx_helper_call(sock, &q, &r, 5000) != 0 || r.type != FYH_T_CREATED)
            _exit(3);
        (void)!write(up[1], r.u.created.dir, sizeof(r.u.created.dir));
        char go;
        if (read(down[0], &go, 1) != 1)
            _exit(4);
        uint32_t out[3] = {99, 0, 99};
        remove_req(&q, name);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (lx_helper_call(sock, &q, &r, 5000) == 0 && r.type == FYH_T_REMOVED)
            out[0] = r.u.removed.left;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        out[1] = (uint32_t)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        (void)!write(up[1], out, 2 * sizeof(uint32_t));
        /* the test ended the root process: now it goes */
        if (read(down[0], &go, 1) != 1)
            _exit(5);
        if (lx_helper_call(sock, &q, &r, 5000) == 0 && r.type == FYH_T_REMOVED)
            out[2] = r.u.removed.left;
        (void)!write(up[1], &out[2], sizeof(uint32_t));
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    static char dirs[FYH_NCTL][FYH_PATH_MAX + 1];
    ck_assert_int_eq(read(up[0], dirs, sizeof(dirs)), sizeof(dirs));
    bool placed = write_pid(dirs[0], "tasks", root) && write_pid(dirs[1], "tasks", root);
    ck_assert_int_eq(write(down[1], "g", 1), 1);
    uint32_t out[3] = {99, 99, 99};
    ck_assert_int_eq(read(up[0], out, 2 * sizeof(uint32_t)), 2 * sizeof(uint32_t));
    bool alive = kill(root, 0) == 0;
    kill(root, SIGKILL);
    waitpid(root, NULL, 0);
    ck_assert_int_eq(write(down[1], "g", 1), 1);
    ck_assert_int_eq(read(up[0], &out[2], sizeof(uint32_t)), sizeof(uint32_t));
    close(up[0]);
    close(down[1]);
    waitpid(pid, NULL, 0);
    ck_assert(placed);
    ck_assert_msg(alive, "REMOVE killed a process that was not the peer's");
    ck_assert_uint_gt(out[0], 0);
    /* (the old wait was at least 200 ms for each of the two controllers;
     * the margin is for a loaded CI host, not for the helper) */
    ck_assert_msg(out[1] < 300, "REMOVE of a cgroup holding another's process took %u ms", out[1]);
    ck_assert_uint_eq(out[2], 0);
    ck_assert_int_eq(count_attempts(), 0);
}
END_TEST

/* 10,000 hostile connections, quick ones: refused uids, garbage from an
 * allowed uid, and more open at once than the helper takes. Every one gets
 * a typed reply, nothing is created, the helper keeps serving. */
/* ---- files whose close can wait ---- */

/* A TCP socket on 127.0.0.1 that cannot finish: its peer (a listener of
 * this test, in *listener) never accepts nor reads, its send queue is full,
 * and its close, as the last reference, lingers up to linger_s seconds. */
static int lingering_socket(int *listener, int linger_s) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 4096;
    ck_assert_int_ge(l, 0);
    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &al), 0);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    ck_assert_int_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
    static char junk[65536];
    size_t queued = 0;
    for (int i = 0; i < 10000; i++) { /* (bounded: a few hundred KiB fill both queues) */
        ssize_t n = send(c, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n <= 0)
            break;
        queued += (size_t)n;
    }
    ck_assert_uint_gt(queued, 0);
    struct linger lg = {1, linger_s};
    ck_assert_int_eq(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    *listener = l;
    return c;
}

/* A peer the helper refuses (root is not in the allowlist) queues a
 * lingering TCP socket on its connection, its own reference gone (the
 * helper stopped meanwhile, so no race): the helper's close of that
 * connection released the socket and waited out its linger, serving
 * nobody (any local user froze the helper). Another uid is served at once. */
START_TEST(lingering_socket_in_a_refused_queue) {
    int l, t = lingering_socket(&l, 30);
    ck_assert_int_eq(kill(helper_pid, SIGSTOP), 0);
    uint8_t hello[FYH_HEADER];
    size_t n = header(hello, FYH_MAGIC, 1, FYH_T_HELLO, 0, 0);
    int s = send_with_fd(hello, n, t);
    close(t);
    if (s >= 0)
        close(s);
    ck_assert_int_eq(kill(helper_pid, SIGCONT), 0);
    ck_assert_int_ge(s, 0);
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_A, &req, &rep), 0); /* (5 s at most; the linger is 30 s) */
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    close(l);
}
END_TEST

/* The same socket sent by an allowed uid with a request that takes no
 * descriptor: refused, and the helper serves on (it closed it itself). */
START_TEST(lingering_socket_with_a_request) {
    int l, t = lingering_socket(&l, 30);
    pid_t kid = fork();
    if (kid == 0) {
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        uint8_t hello[FYH_HEADER];
        size_t n = header(hello, FYH_MAGIC, 1, FYH_T_HELLO, 0, 0);
        int s = send_with_fd(hello, n, t);
        close(t);
        uint8_t in[FYH_MAX_MESSAGE];
        struct fyh_msg r;
        struct timeval tv = {5, 0};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ssize_t got = s >= 0 ? recv(s, in, sizeof(in), 0) : -1;
        _exit(got > 0 && fyh_decode(in, (size_t)got, &r) == 0 && r.type == FYH_T_ERROR ? 0 : 1);
    }
    close(t);
    int st = -1;
    ck_assert_int_eq(waitpid(kid, &st, 0), kid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the request with a socket was not refused: %d", st);
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_B, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    close(l);
}
END_TEST

/* A file of a mount the helper cannot see (a tmpfs of a mount namespace of
 * the peer's own; a FUSE mount there would answer a flush when it liked)
 * is never closed: kept, and its uid refused from then on; the others are
 * served. (Last of the suite: it ends UID_B's service.) */
START_TEST(unknown_mount_file_kept_and_uid_refused) {
    int fds_before = settled_fds(helper_pid);
    pid_t kid = fork();
    if (kid == 0) {
        char dir[300];
        snprintf(dir, sizeof(dir), "%s/private-mnt", tmpdir);
        if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) || mkdir(dir, 0755) ||
            mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
            _exit(2);
        char file[400];
        snprintf(file, sizeof(file), "%s/f", dir);
        int f = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (f < 0 || setgroups(0, NULL) || setresgid(UID_B, UID_B, UID_B) || setresuid(UID_B, UID_B, UID_B))
            _exit(3);
        uint8_t hello[FYH_HEADER];
        size_t n = header(hello, FYH_MAGIC, 1, FYH_T_HELLO, 0, 0);
        int s = send_with_fd(hello, n, f);
        uint8_t in[FYH_MAX_MESSAGE];
        struct fyh_msg r;
        struct timeval tv = {5, 0};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ssize_t got = s >= 0 ? recv(s, in, sizeof(in), 0) : -1;
        _exit(got > 0 && fyh_decode(in, (size_t)got, &r) == 0 && r.type == FYH_T_ERROR ? 0 : 4);
    }
    int st = -1;
    ck_assert_int_eq(waitpid(kid, &st, 0), kid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the peer's run: %d", st);
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_B, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_ERROR);
    ck_assert_msg(strstr(rep.u.error.text, "keeps open"), "%s", rep.u.error.text);
    ck_assert_int_eq(call_as(UID_A, &req, &rep), 0);
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    ck_assert_int_eq(settled_fds(helper_pid), fds_before + 1); /* (the file, kept) */
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/private-mnt", tmpdir);
    rmdir(dir);
}
END_TEST

/* A peer that gave up on its CREATE (its call timed out while the helper
 * was held, and it closed the connection) but lives on: nothing is made
 * for it (it was, and held a slot of the uid's budget while the peer
 * lived). */
START_TEST(create_from_a_peer_that_gave_up) {
    int before = count_attempts();
    int sent[2], done[2];
    ck_assert_int_eq(pipe(sent), 0);
    ck_assert_int_eq(pipe(done), 0);
    ck_assert_int_eq(kill(helper_pid, SIGSTOP), 0);
    pid_t kid = fork();
    if (kid == 0) {
        close(sent[0]);
        close(done[1]);
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        struct fyh_msg q;
        create_req(&q, "forgeyard-3-00000000000000cc", 1 << 24, 10);
        uint8_t buf[FYH_MAX_MESSAGE];
        int n = fyh_encode(&q, buf, sizeof(buf));
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        if (n <= 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
            _exit(3);
        close(fd); /* (given up) */
        (void)!write(sent[1], "s", 1);
        char b;
        alarm(30);
        (void)!read(done[0], &b, 1); /* alive until the test has looked */
        _exit(0);
    }
    close(sent[1]);
    close(done[0]);
    char b = 0;
    ssize_t k = read(sent[0], &b, 1);
    ck_assert_int_eq(kill(helper_pid, SIGCONT), 0);
    ck_assert_int_eq(k, 1);
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_B, &req, &rep), 0); /* (served after the one queued before it) */
    usleep(200000);
    int after = count_attempts();
    close(done[1]);
    close(sent[0]);
    waitpid(kid, NULL, 0);
    ck_assert_int_eq(after, before);
}
END_TEST

START_TEST(flood) {
    uint8_t garbage[64];
    for (size_t i = 0; i < sizeof(garbage); i++)
        garbage[i] = (uint8_t)(i * 37 + 11);
    /* as root (not allowed) and as A (allowed, garbage): 5,000 each, in two children;
     * every fifth one carries a descriptor, which the helper must close */
    int fds_before = settled_fds(helper_pid);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            close(p[0]);
            if (k == 1 && (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A)))
                _exit(2);
            uint32_t typed = 0;
            int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            for (int i = 0; i < 5000; i++) {
                struct fyh_msg r;
                uint8_t msg[80];
                size_t n = (size_t)(i % 60) + 1;
                memcpy(msg, garbage, n);
                if (i % 3 == 0) /* a valid-looking header announcing too much */
                    n = header(msg, FYH_MAGIC, 1, FYH_T_CREATE, 1u << 20, 0);
                typed += raw_exchange_fd(msg, n, true, i % 5 == 1 ? null_fd : -1, &r) == 0 && r.type == FYH_T_ERROR;
            }
            (void)!write(p[1], &typed, sizeof(typed));
            _exit(0);
        }
    }
    close(p[1]);
    uint32_t typed[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(read(p[0], &typed[k], sizeof(typed[k])), sizeof(typed[k]));
        waitpid(kids[k], NULL, 0);
    }
    close(p[0]);
    ck_assert_uint_eq(typed[0], 5000);
    ck_assert_uint_eq(typed[1], 5000);
    /* no descriptor kept, none leaked (the helper closes a connection just
     * after its last reply, which the client may read first: bounded, 5 s) */
    for (int i = 0; i < 500 && count_fds(helper_pid) > fds_before; i++)
        usleep(10000);
    ck_assert_int_le(count_fds(helper_pid), fds_before);
    /* More idle connections than --max-connections 16 from one uid: it gets
     * half the slots, the extra ones are told busy, and while it holds them
     * another allowed uid is still served. */
    int sync[2], go[2];
    ck_assert_int_eq(pipe(sync), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        int fds[40], busy = 0;
        for (int i = 0; i < 40; i++) {
            fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            struct sockaddr_un sa = {.sun_family = AF_UNIX};
            snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
            if (connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0)
                _exit(3);
        }
        char c = 1;
        (void)!write(sync[1], &c, 1);
        (void)!read(go[0], &c, 1);
        for (int i = 0; i < 40; i++) {
            struct pollfd pf = {fds[i], POLLIN, 0};
            uint8_t in[FYH_MAX_MESSAGE];
            struct fyh_msg r;
            if (poll(&pf, 1, 2000) == 1) {
                ssize_t n = recv(fds[i], in, sizeof(in), 0);
                busy += n > 0 && fyh_decode(in, (size_t)n, &r) == 0 && r.type == FYH_T_ERROR &&
                        r.u.error.code == FYH_E_BUSY;
            }
        }
        for (int i = 0; i < 40; i++)
            close(fds[i]);
        _exit(busy == 32 ? 0 : 10);
    }
    char c;
    ck_assert_int_eq(read(sync[0], &c, 1), 1);
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    ck_assert_int_eq(call_as(UID_B, &req, &rep), 0);
    ck_assert_msg(rep.type == FYH_T_WELCOME, "uid B not served while A holds its slots: %s",
                  rep.type == FYH_T_ERROR ? fyh_err_name(rep.u.error.code) : "?");
    ck_assert_int_eq(write(go[1], &c, 1), 1);
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "busy status %d", st);
    ck_assert_int_eq(count_attempts(), 0);
    helper_alive();
}
END_TEST

/* A router whose rule covers an address the host put on its loopback
 * interface (a service or anycast address on lo) is refused like one
 * covering any other address of the host: the uplink delivers a packet for
 * it locally, so the sandbox would reach the host's services. Only
 * loopback addresses (127/8, ::1) are the sandbox's own from inside. A
 * helper of the test's own runs in a network namespace of the test's own
 * (--net-uplink host: that namespace), with 198.18.0.77 and 2001:db8:77::1
 * on its lo; the peer, uid A, asks from a user and network namespace of
 * its own. */
struct fy_in6_ifreq {
    struct in6_addr addr;
    uint32_t prefixlen;
    int ifindex;
};

static int lo_service_addresses(void) {
    int s4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (s4 < 0 || s6 < 0 || ioctl(s4, SIOCGIFFLAGS, &ifr) < 0)
        return -1;
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s4, SIOCSIFFLAGS, &ifr) < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:fy");
    struct sockaddr_in *sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, "198.18.0.77", &sin->sin_addr);
    struct fy_in6_ifreq r6 = {.prefixlen = 128, .ifindex = (int)if_nametoindex("lo")};
    inet_pton(AF_INET6, "2001:db8:77::1", &r6.addr);
    if (ioctl(s4, SIOCSIFADDR, &ifr) < 0 || ioctl(s6, SIOCSIFADDR, &r6) < 0)
        return -1;
    close(s4);
    close(s6);
    return 0;
}

START_TEST(net_rule_covering_loopback_interface_address) {
    char nsock[128], nlog[128], nsub[64];
    snprintf(nsock, sizeof(nsock), "%s/net.sock", tmpdir);
    snprintf(nlog, sizeof(nlog), "%s/net.log", tmpdir);
    snprintf(nsub, sizeof(nsub), "fy-helper-net-%d", (int)getpid());
    pid_t helper = fork();
    ck_assert_int_ge(helper, 0);
    if (helper == 0) {
        int fd = open(nlog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0)
            dup2(fd, 2);
        if (unshare(CLONE_NEWNET) != 0 || lo_service_addresses() != 0)
            _exit(77);
        execl(helper_bin, helper_bin, "--socket", nsock, "--allow", "65534:2:64M:100", "--subtree", nsub,
              "--net-uplink", "host", "--timeout-ms", "2000", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    for (int i = 0; i < 500; i++) {
        struct stat sst;
        if (stat(nsock, &sst) == 0 && S_ISSOCK(sst.st_mode))
            break;
        if (waitpid(helper, &st, WNOHANG) == helper) {
            helper = -1;
            break;
        }
        usleep(10000);
    }
    if (helper < 0 && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        fprintf(stderr, "helper: no network namespace of our own: the loopback-interface rule is not exercised\n");
        return;
    }
    ck_assert_msg(helper > 0, "the helper in its network namespace did not start (status %d)", st);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A) ||
            unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
            _exit(2);
        int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        const char *addrs[2] = {"198.18.0.77", "2001:db8:77::1"};
        for (int i = 0; i < 2; i++) {
            struct fyh_msg q, r;
            memset(&q, 0, sizeof(q));
            memset(&r, 0, sizeof(r));
            q.type = FYH_T_NET_CREATE;
            snprintf(q.u.net_create.name, sizeof(q.u.net_create.name), "forgeyard-2-00000000000000d%d", i);
            q.u.net_create.nrules = 1;
            struct fyh_net_rule *x = &q.u.net_create.rule[0];
            x->family = i ? 6 : 4;
            x->prefix = i ? 128 : 32;
            x->proto = FYH_PROTO_TCP;
            x->port_min = x->port_max = 80;
            inet_pton(i ? AF_INET6 : AF_INET, addrs[i], x->addr);
            int rc = lx_helper_call_fd(nsock, &q, ns, &r, 10000);
            char line[FYH_MSG_MAX + 64];
            snprintf(line, sizeof(line), "%d %u %u %s", rc, (unsigned)r.type,
                     r.type == FYH_T_ERROR ? (unsigned)r.u.error.code : 0u, r.type == FYH_T_ERROR ? r.u.error.text : "");
            (void)!write(p[1], line, sizeof(line));
        }
        _exit(0);
    }
    close(p[1]);
    char got[2][FYH_MSG_MAX + 64];
    memset(got, 0, sizeof(got));
    ssize_t n0 = read(p[0], got[0], sizeof(got[0])), n1 = read(p[0], got[1], sizeof(got[1]));
    close(p[0]);
    waitpid(pid, NULL, 0);
    kill(helper, SIGTERM);
    waitpid(helper, &st, 0);
    ck_assert_msg(n0 == (ssize_t)sizeof(got[0]) && n1 == (ssize_t)sizeof(got[1]), "the peer did not report");
    for (int i = 0; i < 2; i++) {
        int rc = -1;
        unsigned type = 0, code = 0;
        sscanf(got[i], "%d %u %u", &rc, &type, &code);
        ck_assert_msg(rc == 0 && type == FYH_T_ERROR && code == FYH_E_MALFORMED &&
                          strstr(got[i], "delivers to itself") != NULL,
                      "a rule covering %s (on the helper's lo) was not refused: %s",
                      i ? "2001:db8:77::1" : "198.18.0.77", got[i]);
    }
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the helper ended with status %d", st);
}
END_TEST

/* Never setuid; never anyone but root; a socket directory others can write is refused. */
START_TEST(refuses_to_run) {
    char copy[128], bad[128], cmd[600];
    snprintf(copy, sizeof(copy), "%s/helper-suid", tmpdir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 4755 '%s'", helper_bin, copy, copy);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "'%s' --socket %s/s2 --allow 65534:1:1M:1 2>/dev/null", copy, tmpdir);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "setuid copy ran: %d", st);
    unlink(copy);
    snprintf(cmd, sizeof(cmd), "setpriv --reuid 65534 --regid 65534 --clear-groups '%s' --socket %s/s2 "
             "--allow 65534:1:1M:1 2>/dev/null", helper_bin, tmpdir);
    st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "ran as uid 65534: %d", st);
    snprintf(bad, sizeof(bad), "%s/open", tmpdir);
    ck_assert_int_eq(mkdir(bad, 0777), 0);
    ck_assert_int_eq(chmod(bad, 0777), 0);
    snprintf(cmd, sizeof(cmd), "'%s' --socket %s/s --allow 65534:1:1M:1 --subtree %s-x 2>/dev/null", helper_bin, bad,
             subtree);
    st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "world-writable socket directory accepted: %d", st);
    struct stat sst;
    snprintf(cmd, sizeof(cmd), "%s/s", bad);
    ck_assert_int_eq(stat(cmd, &sst), -1);
    rmdir(bad);
    /* a second helper on a live socket does not take it over */
    snprintf(cmd, sizeof(cmd), "'%s' --socket %s --allow 65534:1:1M:1 --subtree %s-y 2>/dev/null", helper_bin, sock,
             subtree);
    st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "a live socket taken over: %d", st);
    helper_alive();
}
END_TEST

/* --listen-fd: a listening socket made by whoever starts the helper (systemd
 * socket activation, or a root parent) is served the same way. */
START_TEST(listen_fd_mode) {
    char path[128], sub[80];
    snprintf(path, sizeof(path), "%s/activated.sock", tmpdir);
    snprintf(sub, sizeof(sub), "%s-l", subtree);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(chmod(path, 0666), 0);
    ck_assert_int_eq(listen(l, 16), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(l, 3) != 3)
            _exit(126);
        int fd = open(log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0)
            dup2(fd, 2);
        execl(helper_bin, helper_bin, "--listen-fd", "3", "--allow", "65534:1:16M:64", "--subtree", sub, (char *)NULL);
        _exit(127);
    }
    close(l);
    char saved[128];
    snprintf(saved, sizeof(saved), "%s", sock);
    snprintf(sock, sizeof(sock), "%s", path); /* call_as talks to sock */
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    int rc = -1;
    for (int i = 0; i < 100 && rc != 0; i++) { /* the helper accepts once it has set up */
        rc = call_as(UID_A, &req, &rep);
        if (rc != 0)
            usleep(20000);
    }
    snprintf(sock, sizeof(sock), "%s", saved);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    ck_assert_uint_eq(rep.u.welcome.max_memory, 16u << 20);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    char dir[700];
    struct stat dst;
    snprintf(dir, sizeof(dir), "%.*s/%s", (int)(strlen(memroot) - strlen(subtree) - 1), memroot, sub);
    ck_assert_msg(stat(dir, &dst) < 0, "%s left", dir);
    unlink(path);
}
END_TEST

/* The helper removes what it made for a peer once the peer ends, watching
 * a pidfd of it. It used to open that pidfd when it answered, by the
 * SO_PEERCRED pid: a peer that connected, handed its connection to a child
 * and ended first got its cgroup made with no pidfd at all (never
 * collected, the uid's budget slot lost until a restart), and a pid reused
 * meanwhile would have been someone else's process. Now the pidfd is the
 * connecting process's own, taken at admission, and nothing is made for a
 * peer that has ended: here no attempt cgroup may be left. */
START_TEST(create_for_an_ended_peer_is_not_leaked) {
    int go[2], res[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(res), 0);
    const char *name = "forgeyard-2-00000000000000e1";
    pid_t peer = fork();
    ck_assert_int_ge(peer, 0);
    if (peer == 0) {
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(2);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            _exit(3);
        if (fork() == 0) { /* the child sends, once the connecting process is gone */
            char b;
            if (read(go[0], &b, 1) != 1)
                _exit(4);
            struct fyh_msg q, r;
            create_req(&q, name, 1 << 24, 10);
            uint8_t buf[FYH_MAX_MESSAGE];
            int n = fyh_encode(&q, buf, sizeof(buf));
            uint32_t out[2] = {0, 0};
            struct timeval tv = {5, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            if (n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n) {
                size_t got = 0;
                for (ssize_t k; (k = recv(fd, buf + got, sizeof(buf) - got, 0)) > 0;)
                    got += (size_t)k;
                if (got && fyh_decode(buf, got, &r) == 0) {
                    out[0] = r.type;
                    out[1] = r.type == FYH_T_ERROR ? r.u.error.code : 0;
                }
            }
            (void)!write(res[1], out, sizeof(out));
            _exit(0);
        }
        _exit(0);
    }
    close(res[1]);
    close(go[0]);
    waitpid(peer, NULL, 0); /* the connecting process is gone (reaped) */
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    uint32_t out[2] = {0, 0};
    ck_assert_int_eq(read(res[0], out, sizeof(out)), sizeof(out));
    close(res[0]);
    /* made and collected by the gc (a pass a second), or never made */
    int left = count_attempts();
    for (int i = 0; i < 30 && left; i++) {
        usleep(100000);
        left = count_attempts();
    }
    if (left) { /* (the leak: removed by name so that the next tests start clean) */
        struct fyh_msg q, r;
        remove_req(&q, name);
        (void)call_as(UID_A, &q, &r);
    }
    ck_assert_msg(left == 0, "an attempt cgroup made for an ended peer was left (reply type 0x%x, code %u)", out[0],
                  out[1]);
    ck_assert_msg(out[0] == FYH_T_ERROR && out[1] == FYH_E_DENIED, "reply type 0x%x, code %u", out[0], out[1]);
}
END_TEST

/* Socketpair mode: a root host spawns the helper over a socketpair (no
 * listening socket anywhere); a connection is a fresh socketpair whose one
 * end goes over the control socket, its credentials are its maker's (an
 * allowed uid served, root refused), anything but a unix stream socket sent
 * there is dropped, and when the host closes its end the helper stops and
 * removes its subtree by itself. */
START_TEST(socketpair_mode) {
    char sub[80];
    snprintf(sub, sizeof(sub), "%s-p", subtree);
    int ctl[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(ctl[1], 3) != 3)
            _exit(126);
        int fd = open(log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0)
            dup2(fd, 2);
        execl(helper_bin, helper_bin, "--connection-fd", "3", "--allow", "65534:1:16M:64", "--subtree", sub,
              (char *)NULL);
        _exit(127);
    }
    close(ctl[1]);
    ck_assert_int_eq(fcntl(ctl[0], F_SETFD, 0), 0); /* the uid-A children below use it */
    char saved[128];
    snprintf(saved, sizeof(saved), "%s", sock);
    snprintf(sock, sizeof(sock), "fd:%d", ctl[0]); /* call_as talks to sock */
    ck_assert_int_eq(lx_helper_control_fd(sock), ctl[0]);
    struct fyh_msg req = {.type = FYH_T_HELLO}, rep;
    int rc = call_as(UID_A, &req, &rep);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(rep.type == FYH_T_WELCOME, "%s", rep.type == FYH_T_ERROR ? rep.u.error.text : "?");
    ck_assert_uint_eq(rep.u.welcome.uid, UID_A);
    ck_assert_uint_eq(rep.u.welcome.max_memory, 16u << 20);
    /* root made this pair: not in the allowlist, refused (typed) */
    rc = call_as(0, &req, &rep);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rep.type, FYH_T_ERROR);
    ck_assert_uint_eq(rep.u.error.code, FYH_E_DENIED);
    /* a file and a datagram socket sent as connections: dropped, the helper goes on */
    int junk[2] = {open("/dev/null", O_RDONLY | O_CLOEXEC), socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(scm_send_one(ctl[0], "C", 1, junk[i], 0), 1);
        close(junk[i]);
    }
    rc = call_as(UID_A, &req, &rep);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rep.type, FYH_T_WELCOME);
    /* the host goes: so does the helper, cleanly, its subtree with it */
    snprintf(sock, sizeof(sock), "%s", saved);
    close(ctl[0]);
    int st = 0;
    pid_t w = 0;
    for (int i = 0; i < 500 && (w = waitpid(pid, &st, WNOHANG)) == 0; i++)
        usleep(10000);
    if (w != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    ck_assert_msg(w == pid, "the helper did not stop when its host closed the control socket");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    char dir[700];
    struct stat dst;
    snprintf(dir, sizeof(dir), "%.*s/%s", (int)(strlen(memroot) - strlen(subtree) - 1), memroot, sub);
    ck_assert_msg(stat(dir, &dst) < 0, "%s left", dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* a confined peer: never more than it has                             */

/* An attempt cgroup is a child of the helper's cgroup, not the peer's: a
 * peer that moves in leaves its own. A peer the operator confined (a
 * devices cgroup denying /dev/net/tun, a 32M memory cgroup) could once ask
 * for "c *:* rwm" and 128M and move itself out of its confinement (an
 * explorer did, as uid 65534, and opened tun). Now a request for more than
 * the peer has is refused (denied, naming the limit), what it did not ask
 * for (memory) is lowered to its own limit, and a request within its
 * limits is served. The test makes the peer's cgroups itself (below its own, in each
 * v1 hierarchy) and removes them. */

#define PEER_MEMORY (32u << 20)
#define PEER_PIDS 50
#define PEER_CPU_QUOTA 50000 /* of 100000: 500 millis */

static char peer_cg[5][700]; /* memory, pids, cpu, devices (default deny), devices (default allow) */

/* Our own cgroup directory in the v1 hierarchy of ctl. */
static bool our_cgroup(const char *ctl, char *out, size_t len) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024];
    bool ok = false;
    while (f && !ok && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        for (char *save = NULL, *t = strtok_r(c1 + 1, ",", &save); t && !ok; t = strtok_r(NULL, ",", &save))
            if (strcmp(t, ctl) == 0) {
                snprintf(out, len, "/sys/fs/cgroup/%s%s", ctl, strcmp(c2 + 1, "/") ? c2 + 1 : "");
                ok = access(out, W_OK) == 0;
            }
    }
    if (f)
        fclose(f);
    return ok;
}

static bool put(const char *dir, const char *file, const char *value) {
    char path[800];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, value, strlen(value)) == (ssize_t)strlen(value);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Their names, below our own cgroup in each hierarchy (main names them
 * before the tests run, and removes what a failed test left). */
static bool name_peer_cgroups(void) {
    static const char *const ctl[] = {"memory", "pids", "cpu", "devices", "devices"};
    static const char *const suffix[] = {"peer", "peer", "peer", "peer-deny", "peer-allow"};
    char own[600];
    for (int i = 0; i < 5; i++) {
        if (!our_cgroup(ctl[i], own, sizeof(own))) {
            memset(peer_cg, 0, sizeof(peer_cg));
            return false;
        }
        snprintf(peer_cg[i], sizeof(peer_cg[i]), "%s/%s-%s", own, subtree, suffix[i]);
    }
    return true;
}

static void remove_peer_cgroups(void) {
    for (int i = 0; i < 5; i++)
        if (peer_cg[i][0] && rmdir(peer_cg[i]) < 0 && errno != ENOENT)
            fprintf(stderr, "%s: %s\n", peer_cg[i], strerror(errno));
}

/* The peer's cgroups: memory 32M, pids 50, cpu half a CPU, a devices
 * cgroup that allows only the standard nodes and /dev/fuse (default deny:
 * its devices.list says so), and one that denies only /dev/net/tun
 * (default allow: its devices.list reads "a *:* rwm" whatever it denies). */
static bool make_peer_cgroups(void) {
    for (int i = 0; i < 5; i++)
        if (!peer_cg[i][0] || mkdir(peer_cg[i], 0755) < 0)
            return false;
    char v[32];
    snprintf(v, sizeof(v), "%u", PEER_MEMORY);
    bool ok = put(peer_cg[0], "memory.limit_in_bytes", v);
    snprintf(v, sizeof(v), "%d", PEER_PIDS);
    ok = ok && put(peer_cg[1], "pids.max", v);
    snprintf(v, sizeof(v), "%d", PEER_CPU_QUOTA);
    ok = ok && put(peer_cg[2], "cpu.cfs_period_us", "100000") && put(peer_cg[2], "cpu.cfs_quota_us", v);
    ok = ok && put(peer_cg[3], "devices.deny", "a");
    static const char *const allowed[] = {"c 1:3 rw", "c 1:5 rw", "c 1:7 rw", "c 1:8 rw", "c 1:9 rw", "c 10:229 rwm"};
    for (size_t i = 0; ok && i < sizeof(allowed) / sizeof(allowed[0]); i++)
        ok = put(peer_cg[3], "devices.allow", allowed[i]);
    return ok && put(peer_cg[4], "devices.deny", "c 10:200 rwm");
}

/* A CREATE of memory (0: not asked), pids (0: not asked), cpu millis (0:
 * not asked) and the standard device nodes plus extra (type, major,
 * minor, access; none when extra_type is 0), or no devices at all (std
 * false and no extra). */
static void peer_req(struct fyh_msg *m, const char *name, uint64_t memory, uint64_t pids, uint64_t cpu, bool std,
                     char extra_type, uint32_t extra_major, uint32_t extra_minor, uint8_t extra_access) {
    memset(m, 0, sizeof(*m));
    m->type = FYH_T_CREATE;
    snprintf(m->u.create.name, sizeof(m->u.create.name), "%s", name);
    m->u.create.controllers = (memory ? FYH_CTL_MEMORY : 0) | (pids ? FYH_CTL_PIDS : 0) | (cpu ? FYH_CTL_CPU : 0);
    m->u.create.memory = memory;
    m->u.create.pids = pids;
    m->u.create.cpu_millis = cpu;
    static const uint32_t mem_minor[] = {3, 5, 7, 8, 9};
    uint32_t n = 0;
    for (size_t i = 0; std && i < 5; i++)
        m->u.create.dev[n++] = (struct fyh_dev_rule){'c', 6, 1, mem_minor[i]};
    if (extra_type)
        m->u.create.dev[n++] = (struct fyh_dev_rule){(uint8_t)extra_type, extra_access, extra_major, extra_minor};
    if (n) {
        m->u.create.controllers |= FYH_CTL_DEVICES;
        m->u.create.ndev = n;
    }
    if (!m->u.create.controllers) /* (a CREATE names one controller at least) */
        m->u.create.controllers = FYH_CTL_PIDS, m->u.create.pids = 10;
}

#define NPEER 16
struct peer_result {
    uint32_t code[NPEER]; /* 0 created (and removed), an FYH_E_* code, 99 no reply */
    char text[NPEER][FYH_MSG_MAX + 1];
    char value[NPEER][64]; /* a file of the attempt read while it was there */
};

/* One request as the peer: its code, its text, the attempt's file (when
 * made, and file given) read, then REMOVE (whose leftovers make it 98). */
static void peer_ask(struct peer_result *res, int i, const struct fyh_msg *q, int ctl, const char *file) {
    struct fyh_msg r;
    res->code[i] = lx_helper_call(sock, q, &r, 5000) == 0 ? (r.type == FYH_T_ERROR ? r.u.error.code : 0) : 99;
    if (r.type == FYH_T_ERROR)
        snprintf(res->text[i], sizeof(res->text[i]), "%s", r.u.error.text);
    if (res->code[i] != 0)
        return;
    if (file) {
        char path[1100];
        snprintf(path, sizeof(path), "%s/%s", r.u.created.dir[ctl], file);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, res->value[i], sizeof(res->value[i]) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0)
            res->value[i][n] = '\0';
    }
    struct fyh_msg q2;
    remove_req(&q2, q->u.create.name);
    if (lx_helper_call(sock, &q2, &r, 5000) != 0 || r.type != FYH_T_REMOVED || r.u.removed.left)
        res->code[i] = 98;
}

/* A child of the test that enters the cgroups named by which (bits of
 * peer_cg; none: it stays in the test's, which the helper's are below),
 * becomes UID_A and makes the requests of scenario; the results. */
static void run_peer(unsigned which, int scenario, struct peer_result *out) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        static struct peer_result res;
        memset(&res, 0, sizeof(res));
        char me[32];
        snprintf(me, sizeof(me), "%d", (int)getpid());
        for (int i = 0; i < 5; i++)
            if ((which & (1u << i)) && !put(peer_cg[i], "tasks", me))
                _exit(2);
        if (setgroups(0, NULL) || setresgid(UID_A, UID_A, UID_A) || setresuid(UID_A, UID_A, UID_A))
            _exit(3);
        struct fyh_msg q;
        const uint64_t M = 1u << 20;
        if (scenario == 0) { /* memory 32M, pids 50, cpu 500 millis, devices: the standard nodes and fuse */
            peer_req(&q, "forgeyard-3-00000000000000d0", 64 * M, 10, 0, false, 0, 0, 0, 0);
            peer_ask(&res, 0, &q, 0, NULL);
            peer_req(&q, "forgeyard-3-00000000000000d1", 0, 10, 0, false, 0, 0, 0, 0); /* memory not asked */
            peer_ask(&res, 1, &q, 0, "memory.limit_in_bytes");
            peer_req(&q, "forgeyard-3-00000000000000d2", 16 * M, PEER_PIDS + 1, 0, false, 0, 0, 0, 0);
            peer_ask(&res, 2, &q, 0, NULL);
            peer_req(&q, "forgeyard-3-00000000000000d3", 16 * M, 10, 1000, false, 0, 0, 0, 0);
            peer_ask(&res, 3, &q, 0, NULL);
            peer_req(&q, "forgeyard-3-00000000000000d4", 16 * M, 20, 400, false, 0, 0, 0, 0); /* within */
            peer_ask(&res, 4, &q, 2, "cpu.cfs_quota_us");
            peer_req(&q, "forgeyard-3-00000000000000d5", 16 * M, 0, 0, false, 'c', FYH_DEV_ANY, FYH_DEV_ANY, 7);
            peer_ask(&res, 5, &q, 3, NULL);
            peer_req(&q, "forgeyard-3-00000000000000d6", 16 * M, 0, 0, true, 'c', 10, 200, 7); /* tun */
            peer_ask(&res, 6, &q, 3, NULL);
            peer_req(&q, "forgeyard-3-00000000000000d7", 16 * M, 0, 0, true, 'c', 10, 229, 7); /* fuse: within */
            peer_ask(&res, 7, &q, 3, "devices.list");
            peer_req(&q, "forgeyard-3-00000000000000d8", 16 * M, 0, 0, true, 'b', 7, FYH_DEV_ANY, 2); /* loop, ro */
            peer_ask(&res, 8, &q, 3, NULL);
        } else if (scenario == 1) { /* devices: everything but /dev/net/tun (default allow) */
            peer_req(&q, "forgeyard-3-00000000000000e0", 16 * M, 0, 0, false, 'c', FYH_DEV_ANY, FYH_DEV_ANY, 7);
            peer_ask(&res, 0, &q, 3, NULL);
            peer_req(&q, "forgeyard-3-00000000000000e1", 16 * M, 0, 0, true, 'c', 10, 200, 7);
            peer_ask(&res, 1, &q, 3, NULL);
            peer_req(&q, "forgeyard-3-00000000000000e2", 16 * M, 0, 0, true, 'c', 10, 200, 2); /* read only */
            peer_ask(&res, 2, &q, 3, NULL);
            peer_req(&q, "forgeyard-3-00000000000000e3", 16 * M, 0, 0, true, 'c', 10, 229, 7); /* fuse: allowed */
            peer_ask(&res, 3, &q, 3, "devices.list");
            peer_req(&q, "forgeyard-3-00000000000000e4", 16 * M, 0, 0, true, 'b', 7, FYH_DEV_ANY, 7); /* loop */
            peer_ask(&res, 4, &q, 3, NULL);
        } else { /* unconfined (the test's own cgroups, the helper's ancestors): as before */
            peer_req(&q, "forgeyard-3-00000000000000f0", 100 * M, 4096, 2000, false, 'c', FYH_DEV_ANY,
                     FYH_DEV_ANY, 7);
            peer_ask(&res, 0, &q, 0, "memory.limit_in_bytes");
            peer_req(&q, "forgeyard-3-00000000000000f1", 0, 10, 0, false, 0, 0, 0, 0); /* memory: the budget */
            peer_ask(&res, 1, &q, 0, "memory.limit_in_bytes");
        }
        (void)!write(p[1], &res, sizeof(res));
        _exit(0);
    }
    close(p[1]);
    size_t got = 0;
    for (ssize_t n; got < sizeof(*out) && (n = read(p[0], (char *)out + got, sizeof(*out) - got)) > 0;)
        got += (size_t)n;
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    ck_assert_msg(got == sizeof(*out), "the peer ended with status %d before its results", st);
}

/* Every mismatch, reported together at the end (each part of the rule
 * shows on its own against a helper that lacks it). */
static char mismatches[8192];
static void soft(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void soft(bool ok, const char *fmt, ...) {
    if (ok)
        return;
    size_t n = strlen(mismatches);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mismatches + n, sizeof(mismatches) - n, fmt, ap);
    va_end(ap);
    n = strlen(mismatches);
    snprintf(mismatches + n, sizeof(mismatches) - n, "\n");
}

static void expect_refused(const struct peer_result *r, int i, const char *what, const char *needle) {
    soft(r->code[i] == FYH_E_DENIED, "%s: expected denied, got %s (%u) \"%s\"", what,
         r->code[i] == 0 ? "created" : fyh_err_name(r->code[i]), r->code[i], r->text[i]);
    soft(r->code[i] != FYH_E_DENIED || strstr(r->text[i], needle), "%s: the refusal \"%s\" does not name %s", what,
         r->text[i], needle);
}

static void expect_served(const struct peer_result *r, int i, const char *what) {
    soft(r->code[i] == 0, "%s: expected created and removed, got %s (%u) \"%s\"", what, fyh_err_name(r->code[i]),
         r->code[i], r->text[i]);
}

/* Directories below dir (the helper's device check must leave none). */
static int subdirs(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_type == DT_DIR && de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

START_TEST(confined_peer_gets_no_more) {
    struct fyh_msg hello = {.type = FYH_T_HELLO}, w;
    ck_assert_int_eq(call_as(UID_A, &hello, &w), 0);
    ck_assert_int_eq(w.type, FYH_T_WELCOME);
    if ((w.u.welcome.controllers & FYH_CTL_ALL) != FYH_CTL_ALL) {
        printf("SKIP confined_peer_gets_no_more: the helper offers controllers 0x%x, not all four\n",
               w.u.welcome.controllers);
        return;
    }
    if (!peer_cg[0][0]) {
        printf("SKIP confined_peer_gets_no_more: no writable v1 memory, pids, cpu and devices cgroups of ours\n");
        return;
    }
    if (!make_peer_cgroups()) {
        int e = errno;
        remove_peer_cgroups();
        ck_abort_msg("the peer's cgroups could not be made: %s", strerror(e));
    }
    static struct peer_result r;
    run_peer(1 | 2 | 4 | 8, 0, &r);
    char mem[24];
    snprintf(mem, sizeof(mem), "%u", PEER_MEMORY);
    expect_refused(&r, 0, "memory 64M from a 32M peer", mem);
    expect_served(&r, 1, "memory not asked");
    soft(strtoull(r.value[1], NULL, 10) == PEER_MEMORY, "memory not asked: the attempt got %s bytes, not the peer's "
         "own %u", r.value[1], PEER_MEMORY);
    expect_refused(&r, 2, "pids 51 from a peer of 50", "pids");
    expect_refused(&r, 3, "cpu 1000 millis from a peer of 500", "cpu");
    expect_served(&r, 4, "memory 16M, pids 20, cpu 400 millis");
    soft(r.code[4] || strcmp(r.value[4], "40000\n") == 0, "cpu 400 millis: cfs_quota_us %s", r.value[4]);
    expect_refused(&r, 5, "devices c *:* rwm from a default-deny devices cgroup", "c *:* rwm");
    expect_refused(&r, 6, "/dev/net/tun from a default-deny devices cgroup without it", "c 10:200 rwm");
    expect_served(&r, 7, "the standard nodes and /dev/fuse, which the peer has");
    soft(r.code[7] || (strstr(r.value[7], "c 10:229 rwm") && strstr(r.value[7], "c 1:3 rw")), "devices.list %s",
         r.value[7]);
    expect_refused(&r, 8, "a block device from a default-deny devices cgroup", "b 7:* r");

    memset(&r, 0, sizeof(r));
    run_peer(16, 1, &r);
    expect_refused(&r, 0, "devices c *:* rwm from a devices cgroup denying tun", "c *:* rwm");
    expect_refused(&r, 1, "/dev/net/tun from a devices cgroup denying it", "c 10:200 rwm");
    expect_refused(&r, 2, "/dev/net/tun read-only from a devices cgroup denying it", "c 10:200 r");
    expect_served(&r, 3, "/dev/fuse from a devices cgroup denying only tun");
    soft(r.code[3] || (strstr(r.value[3], "c 10:229 rwm") && !strstr(r.value[3], "10:200")), "devices.list %s",
         r.value[3]);
    expect_served(&r, 4, "a block device from a devices cgroup denying only tun");
    soft(subdirs(peer_cg[4]) == 0, "the helper's device check left a cgroup in %s", peer_cg[4]);

    memset(&r, 0, sizeof(r));
    run_peer(0, 2, &r);
    expect_served(&r, 0, "an unconfined peer: every device, 100M, 4096 pids, 2 CPUs");
    soft(strtoull(r.value[0], NULL, 10) == 100u << 20, "unconfined: memory %s", r.value[0]);
    expect_served(&r, 1, "an unconfined peer, memory not asked");
    soft(strtoull(r.value[1], NULL, 10) == 128u << 20, "unconfined, not asked: memory %s, not the budget",
         r.value[1]);

    remove_peer_cgroups();
    for (int i = 0; i < 5; i++) {
        struct stat st;
        ck_assert_msg(stat(peer_cg[i], &st) < 0, "%s left", peer_cg[i]);
    }
    ck_assert_msg(!mismatches[0], "%s", mismatches);
    ck_assert_int_eq(count_attempts(), 0);
    helper_alive();
}
END_TEST

/* ------------------------------------------------------------------ */
/* what a peer has: the parsing                                        */

/* The pure part of the rule (fyh-peer.c), including what only cgroup v2
 * would show (cpu.max, the BPF program ids), which this host has not. */
START_TEST(peer_parsing) {
    char out[256];
    static const char hybrid[] = "9:name=systemd:/\n8:pids:/a\n5:devices:/x/y\n1:cpu,cpuacct:/c\n0::/user.slice\n";
    ck_assert_int_eq(fyh_proc_cgroup_path(hybrid, "devices", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/x/y");
    ck_assert_int_eq(fyh_proc_cgroup_path(hybrid, "cpuacct", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/c");
    ck_assert_int_eq(fyh_proc_cgroup_path(hybrid, "cpu", out, sizeof(out)), 0);
    ck_assert_int_eq(fyh_proc_cgroup_path(hybrid, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/user.slice");
    ck_assert_int_eq(fyh_proc_cgroup_path(hybrid, "memory", out, sizeof(out)), -1);
    ck_assert_int_eq(fyh_proc_cgroup_path(hybrid, "cpus", out, sizeof(out)), -1);
    /* a name with a newline that forges a second line: never a guess */
    ck_assert_int_eq(fyh_proc_cgroup_path("0::/user/a\n0::/\n", NULL, out, sizeof(out)), -1);
    ck_assert_int_eq(fyh_proc_cgroup_path("0::relative\n", NULL, out, sizeof(out)), -1);
    ck_assert_int_eq(fyh_proc_cgroup_path("0::/x", NULL, out, 2), -1);

    ck_assert_int_eq(fyh_cg_dir("/", "/sys/fs/cgroup/memory", "/a/b", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/memory/a/b");
    ck_assert_int_eq(fyh_cg_dir("/", "/sys/fs/cgroup/memory", "/", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/memory");
    ck_assert_int_eq(fyh_cg_dir("/lxc/c1", "/sys/fs/cgroup", "/lxc/c1/x", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/x");
    ck_assert_int_eq(fyh_cg_dir("/lxc/c1", "/sys/fs/cgroup", "/lxc/c10/x", out, sizeof(out)), -1);
    ck_assert_int_eq(fyh_cg_dir("/", "/sys/fs/cgroup", "/../../x", out, sizeof(out)), -1);
    ck_assert_int_eq(fyh_cg_dir("/", "/sys/fs/cgroup", "/a/./b", out, sizeof(out)), -1);

    ck_assert(fyh_path_within("/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory/a"));
    ck_assert(fyh_path_within("/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory"));
    ck_assert(!fyh_path_within("/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory2"));
    ck_assert(!fyh_path_within("/sys/fs/cgroup/memory/a", "/sys/fs/cgroup/memory"));
    ck_assert(fyh_path_within("/", "/x"));

    uint64_t v, q, p;
    ck_assert(fyh_parse_limit("max\n", &v) == 0 && v == FYH_UNLIMITED);
    ck_assert(fyh_parse_limit("-1\n", &v) == 0 && v == FYH_UNLIMITED);
    ck_assert(fyh_parse_limit("33554432\n", &v) == 0 && v == 33554432u);
    ck_assert(fyh_parse_limit("9223372036854771712\n", &v) == 0 && v == 9223372036854771712ull);
    ck_assert_int_eq(fyh_parse_limit("-10\n", &v), -1);
    ck_assert_int_eq(fyh_parse_limit("12k", &v), -1);
    ck_assert_int_eq(fyh_parse_limit("", &v), -1);
    ck_assert_int_eq(fyh_parse_limit("99999999999999999999", &v), -1);
    ck_assert(fyh_parse_cpu_max("max 100000\n", &q, &p) == 0 && q == FYH_UNLIMITED && p == 100000);
    ck_assert(fyh_parse_cpu_max("50000 100000\n", &q, &p) == 0 && q == 50000 && p == 100000);
    ck_assert_int_eq(fyh_parse_cpu_max("50000\n", &q, &p), -1);
    ck_assert_int_eq(fyh_parse_cpu_max("50000 0\n", &q, &p), -1);
    ck_assert(fyh_cpu_within(40000, 100000, 50000, 100000));
    ck_assert(fyh_cpu_within(50000, 100000, 25000, 50000)); /* equal */
    ck_assert(!fyh_cpu_within(100000, 100000, 50000, 100000));
    ck_assert(!fyh_cpu_within(FYH_UNLIMITED, 100000, 50000, 100000)); /* no limit from a limited peer */
    ck_assert(fyh_cpu_within(FYH_UNLIMITED, 100000, FYH_UNLIMITED, 100000));
    ck_assert(fyh_cpu_within(400000, 100000, FYH_UNLIMITED, 100000));
    /* The gc's retries of an attempt that is left (unkillable processes):
     * 1 s, doubling, never more than FYH_RETRY_MAX_MS, never 0 after a
     * try (no pass retries at once, so no pass waits on it twice). */
    ck_assert_uint_eq(fyh_retry_delay_ms(1), 1000);
    ck_assert_uint_eq(fyh_retry_delay_ms(2), 2000);
    ck_assert_uint_eq(fyh_retry_delay_ms(6), FYH_RETRY_MAX_MS);
    ck_assert_uint_eq(fyh_retry_delay_ms(7), FYH_RETRY_MAX_MS);
    ck_assert_uint_eq(fyh_retry_delay_ms(UINT32_MAX), FYH_RETRY_MAX_MS);
    for (uint32_t t = 1; t < 100; t++)
        ck_assert(fyh_retry_delay_ms(t) >= 1000 && fyh_retry_delay_ms(t) <= FYH_RETRY_MAX_MS &&
                  fyh_retry_delay_ms(t + 1) >= fyh_retry_delay_ms(t));

    struct fyh_dev_rule list[8];
    ck_assert_int_eq(fyh_devlist_parse("a *:* rwm\n", list, 8), 1);
    ck_assert(fyh_devlist_default_allow(list, 1));
    int n = fyh_devlist_parse("c 1:3 rw\nc 136:* rw\nb *:* m\nc 10:229 rwm\n", list, 8);
    ck_assert_int_eq(n, 4);
    ck_assert(!fyh_devlist_default_allow(list, (size_t)n));
    ck_assert_int_eq(list[1].major, 136);
    ck_assert_uint_eq(list[1].minor, FYH_DEV_ANY);
    ck_assert_int_eq(list[0].access, 6);
    ck_assert_int_eq(fyh_devlist_parse("c 1:3 rw\n", list, 0), -1); /* more than max */
    ck_assert_int_eq(fyh_devlist_parse("x 1:3 rw\n", list, 8), -1);
    ck_assert_int_eq(fyh_devlist_parse("c 1:3\n", list, 8), -1);
    ck_assert_int_eq(fyh_devlist_parse("c 1:3 rwx\n", list, 8), -1);
    ck_assert_int_eq(fyh_devlist_parse("", list, 8), 0); /* deny everything */
    n = fyh_devlist_parse("c 1:3 rw\nc 136:* rw\nb *:* m\nc 10:229 rwm\n", list, 8);
    struct fyh_dev_rule r = {'c', 2, 1, 3};
    ck_assert(fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'c', 7, 1, 3}; /* mknod too: more */
    ck_assert(!fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'c', 6, 136, 4};
    ck_assert(fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'c', 6, 136, FYH_DEV_ANY};
    ck_assert(fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'c', 6, FYH_DEV_ANY, 3}; /* any major: more than 1 */
    ck_assert(!fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'b', 1, 8, 0};
    ck_assert(fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'b', 2, 8, 0};
    ck_assert(!fyh_dev_covered(&r, list, (size_t)n));
    r = (struct fyh_dev_rule){'c', 7, 10, 200};
    ck_assert(!fyh_dev_covered(&r, list, (size_t)n));
    struct fyh_dev_rule all = {'a', 7, FYH_DEV_ANY, FYH_DEV_ANY};
    ck_assert(fyh_dev_covered(&r, &all, 1));

    static const uint32_t a[] = {7, 9}, b[] = {9, 3, 7}, c[] = {9};
    ck_assert(fyh_ids_subset(a, 2, b, 3));
    ck_assert(!fyh_ids_subset(a, 2, c, 1));
    ck_assert(fyh_ids_subset(a, 0, c, 0)); /* no program where the process is */
    ck_assert(!fyh_ids_subset(c, 1, a, 0));
}
END_TEST

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s HELPER\n", argv[0]);
        return 2;
    }
    helper_bin = argv[1];
    if (geteuid() != 0) {
        printf("SKIP: the helper test needs root (it starts the helper)\n");
        return 77;
    }
    char mem[400];
    if (!our_memory_cgroup(mem, sizeof(mem)) || access(mem, W_OK) != 0) {
        printf("SKIP: no cgroup v1 memory hierarchy here\n");
        return 77;
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/fy-helper-XXXXXX");
    if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
        return 1;
    snprintf(sock, sizeof(sock), "%s/helper.sock", tmpdir);
    snprintf(log_path, sizeof(log_path), "%s/helper.log", tmpdir);
    snprintf(subtree, sizeof(subtree), "fy-helper-test-%d", (int)getpid());
    snprintf(memroot, sizeof(memroot), "%s/%s", mem, subtree);
    helper_pid = start_helper(helper_bin, "65533:1:64M:100");
    (void)name_peer_cgroups(); /* (confined_peer_gets_no_more's; removed below whatever happens) */

    Suite *s = suite_create("helper");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, codec_round_trip);
    tcase_add_test(tc, codec_names);
    tcase_add_test(tc, peer_parsing);
    suite_add_tcase(s, tc);
    tc = tcase_create("helper");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, hello_allowed);
    tcase_add_test(tc, wrong_peer_uid);
    tcase_add_test(tc, impostor_listener_not_root);
    tcase_add_test(tc, hostile_headers);
    tcase_add_test(tc, silent_connection);
    tcase_add_test(tc, names_outside);
    tcase_add_test(tc, move_on_v1);
    tcase_add_test(tc, budget);
    tcase_add_test(tc, remove_kills_and_witnesses);
    tcase_add_test(tc, remove_kills_setuid_program);
    tcase_add_test(tc, remove_spares_others_without_waiting);
    tcase_add_test(tc, flood);
    tcase_add_test(tc, refuses_to_run);
    tcase_add_test(tc, listen_fd_mode);
    tcase_add_test(tc, net_rule_covering_loopback_interface_address);
    tcase_add_test(tc, socketpair_mode);
    tcase_add_test(tc, create_for_an_ended_peer_is_not_leaked);
    tcase_add_test(tc, confined_peer_gets_no_more);
    tcase_add_test(tc, create_from_a_peer_that_gave_up);
    tcase_add_test(tc, lingering_socket_in_a_refused_queue);
    tcase_add_test(tc, lingering_socket_with_a_request);
    tcase_add_test(tc, unknown_mount_file_kept_and_uid_refused); /* (last: it ends UID_B's service) */
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_peer_cgroups(); /* (a failed test's; gone already otherwise) */

    /* Stop the helper: it removes its subtree, which must then be gone. */
    kill(helper_pid, SIGTERM);
    int st;
    waitpid(helper_pid, &st, 0);
    struct stat sst;
    bool left = stat(memroot, &sst) == 0;
    bool sock_left = stat(sock, &sst) == 0;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "cat '%s' >&2", log_path);
    if (failed || left || sock_left)
        (void)!system(cmd);
    if (left) {
        fprintf(stderr, "FAIL: %s is left after the helper stopped\n", memroot);
        failed++;
    }
    if (sock_left) {
        fprintf(stderr, "FAIL: the socket is left after the helper stopped\n");
        failed++;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "FAIL: the helper ended with status %d\n", st);
        failed++;
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    (void)!system(cmd);
    return failed ? 1 : 0;
}
