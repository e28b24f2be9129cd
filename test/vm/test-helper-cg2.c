/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The privileged helper (forgeyard-sandbox-helper(8)) on a pure cgroup v2
 * kernel, inside the QEMU guest of test/vm (run by test-helper-cg2.sh; outside
 * the guest it skips, 77). As root it starts the helper in a cgroup of its
 * own below FY_TEST_CGROUP, then, as the unprivileged uid 65534:
 *   - the probe reports the helper and that it serves cgroup v2;
 *   - `forgeyard run --memory 64M` of a memory hog ends out-of-memory (242),
 *     the result saying the limit is cgroup v2 through the helper;
 *   - `--pids 16` holds a bounded fork bomb (64 forks): resource-exceeded (243);
 *   - `--device /dev/fuse`: fuse opens in the sandbox, tun is not there; while
 *     it runs, the attempt's cgroup holds only uid 65534's processes and one
 *     device program, and a root process of the test placed in that cgroup
 *     opens /dev/fuse but is refused (EPERM) /dev/net/tun, a tun node made
 *     outside, a node it makes itself (mknod) and /dev/kmsg;
 *   - the raw protocol: a version-2 peer is offered no controllers and its
 *     CREATE is refused (not-offered); MOVE refuses a pidfd of root's init, of
 *     a uid-65534 process that does not descend from the peer, a descriptor
 *     that is no pidfd, and an unknown name; it moves the peer's own child
 *     with the child's own child, and REMOVE kills them and witnesses the
 *     cgroup gone;
 *   - a confined peer (uid 65534 in cgroups of the test's: memory.max 32M,
 *     pids.max 50, cpu.max half a CPU): memory 64M, pids 51 and 1000 millis
 *     are refused (denied, naming the limit); memory, pids and cpu not asked
 *     get the peer's own; a request within them is made and the peer's child
 *     moved; a child the test moved to a tighter cgroup (8M) is not moved into
 *     a 32M attempt; a peer under a device program of its own cgroup is
 *     refused, one under a program of an ancestor it shares with the attempt
 *     (BPF_F_ALLOW_MULTI) is served; a peer with io.max limits is refused;
 *   - nothing left: no attempt cgroup, each device program freed (its id no
 *     longer resolves), and once the helper stops its subtree is gone and
 *     its cgroup's controllers are as they were.
 * Usage (in the guest): test-helper-cg2 FORGEYARD HELPER [MODULE.ko...] */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "fyh-proto.h"
#include "linux-scm.h"

#define RUNNER 65534u
#define SOCK "/run/fyh/helper.sock"
#define HOME "/tmp/fyh-home"
#define SUBTREE "fyh-sub"

static const char *fy, *helper;
static char base[512], sub[600], uiddir[700];
static pid_t helper_pid = -1;
static const char *runner_socket_env = "FORGEYARD_HELPER_SOCKET=" SOCK;
static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    failures++;
}

static void ok(const char *what) {
    printf("ok: %s\n", what);
    fflush(stdout);
}

static char *slurp(const char *path) {
    static char buf[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static int write_file(const char *path, const char *v) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? write(fd, v, strlen(v)) : -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)strlen(v) ? 0 : -e;
}

static void become_runner(void) {
    if (setgroups(0, NULL) < 0 || setresgid(RUNNER, RUNNER, RUNNER) < 0 || setresuid(RUNNER, RUNNER, RUNNER) < 0)
        _exit(126);
}

/* argv as uid 65534 with the runner's environment, output to out: its status. */
static pid_t start_runner(char *const argv[], const char *out) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        become_runner();
        char *env[] = {"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" HOME, "FORGEYARD_CACHE_DIR=" HOME "/cache",
                       (char *)runner_socket_env, NULL};
        execve(argv[0], argv, env);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_runner(char *const argv[], const char *out) { return wait_exit(start_runner(argv, out)); }

/* ---- the raw protocol, as the peer ---- */

static int exchange(const struct fyh_msg *req, int pass_fd, struct fyh_msg *rep) {
    uint8_t buf[FYH_MAX_MESSAGE];
    int n = fyh_encode(req, buf, sizeof(buf));
    if (n < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", SOCK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    (void)!scm_send_one(fd, buf, (size_t)n, pass_fd, 0);
    size_t got = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + got, sizeof(buf) - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return got && fyh_decode(buf, got, rep) == 0 ? 0 : -1;
}

/* "ok" or the refusal's name, of one request. */
static const char *outcome(const struct fyh_msg *req, int pass_fd, struct fyh_msg *rep) {
    if (exchange(req, pass_fd, rep) < 0)
        return "no-reply";
    return rep->type == FYH_T_ERROR ? fyh_err_name(rep->u.error.code) : "ok";
}

static int count_attempts(void) {
    DIR *d = opendir(uiddir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += strncmp(de->d_name, "forgeyard-", 10) == 0;
    if (d)
        closedir(d);
    return n;
}

/* The hostile and the legitimate raw requests, from a uid-65534 peer (a
 * child of ours); other is a uid-65534 process that is not its descendant.
 * One line per check on the pipe back: "name=outcome". */
static void peer_main(int out, pid_t other) {
    become_runner();
    char line[4096] = "";
    struct fyh_msg req, rep;
#define NOTE(fmt, ...) snprintf(line + strlen(line), sizeof(line) - strlen(line), fmt "\n", __VA_ARGS__)
    memset(&req, 0, sizeof(req));
    req.type = FYH_T_HELLO;
    req.version = 2;
    const char *o = outcome(&req, -1, &rep);
    NOTE("hello-v2=%s controllers=%u", o, rep.type == FYH_T_WELCOME ? rep.u.welcome.controllers : 99);
    req.version = 0;
    o = outcome(&req, -1, &rep);
    NOTE("hello-v3=%s cgroup=%u", o, rep.type == FYH_T_WELCOME ? rep.u.welcome.cgroup : 99);
    memset(&req, 0, sizeof(req));
    req.type = FYH_T_CREATE;
    snprintf(req.u.create.name, sizeof(req.u.create.name), "forgeyard-%d-00000000000000c2", (int)getpid());
    req.u.create.controllers = FYH_CTL_MEMORY | FYH_CTL_PIDS;
    req.u.create.memory = 32u << 20;
    req.u.create.pids = 8;
    req.version = 2;
    NOTE("create-v2=%s", outcome(&req, -1, &rep));
    req.version = 0;
    NOTE("create-v3=%s", outcome(&req, -1, &rep));
    struct fyh_msg mv = {.type = FYH_T_MOVE};
    snprintf(mv.u.move.name, sizeof(mv.u.move.name), "%s", req.u.create.name);
    int init_fd = (int)syscall(SYS_pidfd_open, 1, 0);
    NOTE("move-init=%s", outcome(&mv, init_fd, &rep));
    int other_fd = (int)syscall(SYS_pidfd_open, other, 0);
    NOTE("move-other=%s", outcome(&mv, other_fd, &rep));
    int p[2];
    (void)!pipe2(p, O_CLOEXEC);
    NOTE("move-pipe=%s", outcome(&mv, p[0], &rep));
    NOTE("move-nofd=%s", outcome(&mv, -1, &rep));
    /* the peer's child, with a grandchild of its own: MOVE takes both */
    int gp[2];
    (void)!pipe2(gp, O_CLOEXEC);
    pid_t kid = fork();
    if (kid == 0) {
        pid_t g = fork();
        if (g == 0) {
            for (int i = 0; i < 600; i++)
                sleep(1);
            _exit(0);
        }
        (void)!write(gp[1], &g, sizeof(g));
        for (int i = 0; i < 600; i++)
            sleep(1);
        _exit(0);
    }
    pid_t grandkid = 0;
    (void)!read(gp[0], &grandkid, sizeof(grandkid));
    int kid_fd = (int)syscall(SYS_pidfd_open, kid, 0);
    struct fyh_msg mv2 = mv;
    snprintf(mv2.u.move.name, sizeof(mv2.u.move.name), "forgeyard-%d-00000000000000ff", (int)getpid());
    NOTE("move-unknown=%s", outcome(&mv2, kid_fd, &rep));
    o = outcome(&mv, kid_fd, &rep);
    NOTE("move-child=%s pid-ok=%d", o, rep.type == FYH_T_MOVED && rep.u.moved.pid == (uint32_t)kid);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)kid);
    NOTE("child-cgroup-has-name=%d", strstr(slurp(path), req.u.create.name) != NULL);
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)grandkid);
    NOTE("grandchild-cgroup-has-name=%d", grandkid > 0 && strstr(slurp(path), req.u.create.name) != NULL);
    struct fyh_msg rm = {.type = FYH_T_REMOVE};
    snprintf(rm.u.remove.name, sizeof(rm.u.remove.name), "%s", req.u.create.name);
    o = outcome(&rm, -1, &rep);
    NOTE("remove=%s left=%u", o, rep.type == FYH_T_REMOVED ? rep.u.removed.left : 99);
    int st = 0;
    pid_t w = waitpid(kid, &st, 0);
    NOTE("child-killed=%d", w == kid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
#undef NOTE
    (void)!write(out, line, strlen(line));
    _exit(0);
}

static void expect_line(const char *all, const char *want) {
    char w[256];
    snprintf(w, sizeof(w), "%s\n", want);
    if (strstr(all, w))
        ok(want);
    else
        fail("expected \"%s\" from the peer, got:\n%s", want, all);
}

static void raw_protocol(void) {
    pid_t other = fork();
    if (other == 0) {
        become_runner();
        for (int i = 0; i < 600; i++)
            sleep(1);
        _exit(0);
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return fail("pipe");
    pid_t peer = fork();
    if (peer == 0) {
        close(p[0]);
        peer_main(p[1], other);
    }
    close(p[1]);
    char all[4096];
    size_t got = 0;
    for (ssize_t n; (n = read(p[0], all + got, sizeof(all) - 1 - got)) > 0;)
        got += (size_t)n;
    all[got] = '\0';
    close(p[0]);
    wait_exit(peer);
    kill(other, SIGKILL);
    wait_exit(other);
    expect_line(all, "hello-v2=ok controllers=0");
    expect_line(all, "hello-v3=ok cgroup=2");
    expect_line(all, "create-v2=not-offered");
    expect_line(all, "create-v3=ok");
    expect_line(all, "move-init=bad-descriptor");
    expect_line(all, "move-other=bad-descriptor");
    expect_line(all, "move-pipe=bad-descriptor");
    expect_line(all, "move-nofd=bad-descriptor");
    expect_line(all, "move-unknown=not-found");
    expect_line(all, "move-child=ok pid-ok=1");
    expect_line(all, "child-cgroup-has-name=1");
    expect_line(all, "grandchild-cgroup-has-name=1");
    expect_line(all, "remove=ok left=0");
    expect_line(all, "child-killed=1");
    if (count_attempts() != 0)
        fail("%d attempt cgroup(s) left after the raw protocol", count_attempts());
}

/* ---- device programs ---- */

static long sys_bpf(int cmd, union bpf_attr *a) { return syscall(SYS_bpf, cmd, a, sizeof(*a)); }

/* The ids of the device programs attached to dir itself: how many. */
static int query_progs(const char *dir, uint32_t *ids, uint32_t max) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.query.target_fd = (uint32_t)fd;
    a.query.attach_type = BPF_CGROUP_DEVICE;
    a.query.prog_ids = (uint64_t)(uintptr_t)ids;
    a.query.prog_cnt = max;
    long r = sys_bpf(BPF_PROG_QUERY, &a);
    close(fd);
    return r < 0 ? -1 : (int)a.query.prog_cnt;
}

static bool prog_exists(uint32_t id) {
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.prog_id = id;
    long fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
    if (fd >= 0)
        close((int)fd);
    return fd >= 0 || errno != ENOENT;
}

static bool has_node(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISCHR(st.st_mode);
}

static void devices(void) {
    if (!has_node("/dev/fuse") || !has_node("/dev/net/tun"))
        return fail("no /dev/fuse or /dev/net/tun in the guest (fuse.ko and tun.ko not loaded)");
    mkdir("/tmp/fyh", 0755);
    unlink("/dev/fyh-tun-outside");
    if (mknod("/dev/fyh-tun-outside", S_IFCHR | 0666, makedev(10, 200)) < 0)
        return fail("mknod outside: %s", strerror(errno));
    char *probe = "for n in /dev/fuse /dev/net/tun /dev/null; do\n"
                  "  if [ ! -e $n ]; then echo \"$n missing\"; elif (exec 3<>$n) 2>/dev/null; then echo \"$n open\";"
                  " else echo \"$n refused\"; fi\n"
                  "done; sleep 8";
    char *argv[] = {(char *)fy, "run", "--profile", "standard-ci", "--memory", "64M", "--device", "/dev/fuse",
                    "--result", HOME "/dev.json", "--", "/bin/sh", "-c", probe, NULL};
    pid_t runner = start_runner(argv, "/tmp/fyh/dev.out");
    char dir[1024] = "";
    for (int i = 0; i < 1200 && !dir[0]; i++) {
        DIR *d = opendir(uiddir);
        for (struct dirent *de; d && (de = readdir(d));)
            if (strncmp(de->d_name, "forgeyard-", 10) == 0) {
                snprintf(dir, sizeof(dir), "%s/%s", uiddir, de->d_name);
                char procs[1100];
                snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
                if (!slurp(procs)[0])
                    dir[0] = '\0';
            }
        if (d)
            closedir(d);
        if (!dir[0])
            usleep(50000);
    }
    if (!dir[0]) {
        wait_exit(runner);
        return fail("no populated attempt cgroup under %s: %s", uiddir, slurp("/tmp/fyh/dev.out"));
    }
    /* only uid 65534's processes in it */
    char procs[1100], *list;
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    list = strdup(slurp(procs));
    int nprocs = 0;
    for (char *t = strtok(list, "\n"); t; t = strtok(NULL, "\n")) {
        char p[64];
        struct stat st;
        snprintf(p, sizeof(p), "/proc/%s", t);
        if (stat(p, &st) == 0 && st.st_uid != RUNNER)
            fail("process %s in %s is uid %u's", t, dir, (unsigned)st.st_uid);
        snprintf(p, sizeof(p), "/proc/%s/cmdline", t);
        printf("note: in the attempt's cgroup: %s %s\n", t, slurp(p));
        nprocs++;
    }
    free(list);
    if (nprocs)
        ok("the attempt's v2 cgroup holds the sandbox, uid 65534's processes only");
    uint32_t ids[8] = {0};
    int np = query_progs(dir, ids, 8);
    if (np != 1)
        fail("%d device programs attached to %s (want 1)", np, dir);
    else
        ok("one device program attached to the attempt's cgroup");
    /* a root process of ours in that cgroup: the kernel's program judges it */
    int p[2];
    (void)!pipe2(p, O_CLOEXEC);
    pid_t k = fork();
    if (k == 0) {
        int res[5];
        char cp[1100];
        snprintf(cp, sizeof(cp), "%s/cgroup.procs", dir);
        if (write_file(cp, "0") < 0)
            _exit(1);
        const char *nodes[] = {"/dev/fuse", "/dev/net/tun", "/dev/fyh-tun-outside", "/dev/kmsg"};
        for (int i = 0; i < 4; i++) {
            int fd = open(nodes[i], O_RDWR | O_CLOEXEC);
            res[i] = fd >= 0 ? 0 : errno;
            if (fd >= 0)
                close(fd);
        }
        unlink("/dev/fyh-tun-inside");
        res[4] = mknod("/dev/fyh-tun-inside", S_IFCHR | 0666, makedev(10, 200)) == 0 ? 0 : errno;
        (void)!write(p[1], res, sizeof(res));
        _exit(0);
    }
    close(p[1]);
    int res[5] = {-1, -1, -1, -1, -1};
    if (read(p[0], res, sizeof(res)) != sizeof(res))
        fail("the process placed in %s reported nothing", dir);
    close(p[0]);
    wait_exit(k);
    if (res[0] != 0)
        fail("root in the attempt's cgroup could not open the leased /dev/fuse: %s", strerror(res[0]));
    else
        ok("root in the attempt's cgroup opens the leased /dev/fuse");
    static const char *const what[] = {"", "/dev/net/tun", "a tun node made outside", "/dev/kmsg",
                                       "mknod of a tun node"};
    for (int i = 1; i < 5; i++) {
        if (res[i] != EPERM)
            fail("%s in the attempt's cgroup: %s, not EPERM", what[i], res[i] ? strerror(res[i]) : "allowed");
        else {
            char m[128];
            snprintf(m, sizeof(m), "%s refused by the device program (EPERM)", what[i]);
            ok(m);
        }
    }
    char ev[1100];
    snprintf(ev, sizeof(ev), "%s/memory.max", dir);
    printf("note: memory.max %s", slurp(ev));
    int rc = wait_exit(runner);
    char *out = slurp("/tmp/fyh/dev.out");
    if (rc != 0 || !strstr(out, "/dev/fuse open\n") || !strstr(out, "/dev/net/tun missing\n") ||
        !strstr(out, "/dev/null open\n"))
        fail("the lease run gave %d: %s", rc, out);
    else
        ok("in the sandbox the leased /dev/fuse opens, /dev/net/tun is not there, /dev/null opens");
    char *res_json = slurp(HOME "/dev.json");
    if (!strstr(res_json, "cgroup v2 device program") || !strstr(res_json, "loaded and attached by the privileged"))
        fail("the result does not say the device program came from the helper: %s", res_json);
    else
        ok("the evidence names the device program and the helper");
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = np == 1 && !prog_exists(ids[0]);
        if (!gone)
            usleep(50000);
    }
    if (!gone)
        fail("device program %u still exists after its cgroup was removed", ids[0]);
    else
        ok("the device program is gone with its cgroup");
    struct stat st;
    if (stat(dir, &st) == 0)
        fail("%s left", dir);
}

/* ---- a confined peer: never more than it has ---- */

/* The peer's cgroups, made by the test beside the helper's (below
 * FY_TEST_CGROUP, which they share and which limits nothing): one with
 * memory.max 32M, pids.max 50 and cpu.max half a CPU; one tighter (8M), for a
 * process moved from there; one with a device program of its own; one with
 * io.max limits. */
static char cg_peer[600], cg_tight[600], cg_prog[600], cg_io[600];

static int peer_mode_fd = -1, peer_ack_fd = -1; /* (mode 1: the kid's pid to the test, the test's ack) */

static void note_req(char *line, size_t len, const char *what, const struct fyh_msg *req, int pass) {
    struct fyh_msg rep;
    const char *o = outcome(req, pass, &rep);
    snprintf(line + strlen(line), len - strlen(line), "%s=%s\ntext-%s=%s\n", what, o, what,
             rep.type == FYH_T_ERROR ? rep.u.error.text : "");
}

static void create_msg(struct fyh_msg *m, int i, uint64_t memory, uint64_t pids, uint64_t cpu) {
    memset(m, 0, sizeof(*m));
    m->type = FYH_T_CREATE;
    snprintf(m->u.create.name, sizeof(m->u.create.name), "forgeyard-%d-00000000000000a%d", (int)getpid(), i);
    m->u.create.controllers = (memory ? FYH_CTL_MEMORY : 0) | (pids ? FYH_CTL_PIDS : 0) | (cpu ? FYH_CTL_CPU : 0);
    m->u.create.memory = memory;
    m->u.create.pids = pids;
    m->u.create.cpu_millis = cpu;
}

static void remove_msg(struct fyh_msg *m, const struct fyh_msg *c) {
    memset(m, 0, sizeof(*m));
    m->type = FYH_T_REMOVE;
    snprintf(m->u.remove.name, sizeof(m->u.remove.name), "%s", c->u.create.name);
}

static pid_t sleeper(void) {
    pid_t k = fork();
    if (k == 0) {
        for (int i = 0; i < 600; i++)
            sleep(1);
        _exit(0);
    }
    return k;
}

/* A file's first line (without its newline), or "" (into buf). */
static const char *first_line(const char *path, char *buf, size_t len) {
    snprintf(buf, len, "%s", slurp(path));
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

/* As uid 65534 in the cgroup the test put it in: mode 0 limits, 1 MOVE of
 * a child the test moved to a tighter cgroup, 2 a plain CREATE (programs,
 * io.max). One line per check on out, "name=outcome" and "text-name=...". */
static void confined_peer(int out, int mode) {
    become_runner();
    static char line[8192];
    struct fyh_msg c, r, rep;
    const uint64_t M = 1u << 20;
    char path[1200], v1[64], v2[64];
#define NOTE(fmt, ...) snprintf(line + strlen(line), sizeof(line) - strlen(line), fmt "\n", __VA_ARGS__)
    if (mode == 0) {
        create_msg(&c, 0, 64 * M, 10, 0);
        note_req(line, sizeof(line), "c-mem64", &c, -1);
        create_msg(&c, 1, 0, 10, 0); /* memory not asked: the peer's own */
        if (exchange(&c, -1, &rep) == 0 && rep.type == FYH_T_CREATED) {
            snprintf(path, sizeof(path), "%s/memory.max", rep.u.created.dir[1]);
            NOTE("c-memnone=ok mem=%s", first_line(path, v1, sizeof(v1)));
        } else
            NOTE("c-memnone=%s", rep.type == FYH_T_ERROR ? rep.u.error.text : "no-reply");
        remove_msg(&r, &c);
        (void)outcome(&r, -1, &rep);
        create_msg(&c, 2, 16 * M, 0, 0); /* pids and cpu not asked: the peer's own */
        if (exchange(&c, -1, &rep) == 0 && rep.type == FYH_T_CREATED) {
            snprintf(path, sizeof(path), "%s/pids.max", rep.u.created.dir[0]);
            first_line(path, v1, sizeof(v1));
            snprintf(path, sizeof(path), "%s/cpu.max", rep.u.created.dir[0]);
            NOTE("c-clamp=ok pids=%s cpu=%s", v1, first_line(path, v2, sizeof(v2)));
        } else
            NOTE("c-clamp=%s", rep.type == FYH_T_ERROR ? rep.u.error.text : "no-reply");
        remove_msg(&r, &c);
        (void)outcome(&r, -1, &rep);
        create_msg(&c, 3, 16 * M, 51, 0);
        note_req(line, sizeof(line), "c-pids51", &c, -1);
        create_msg(&c, 4, 16 * M, 10, 1000);
        note_req(line, sizeof(line), "c-cpu1000", &c, -1);
        create_msg(&c, 5, 16 * M, 20, 400);
        note_req(line, sizeof(line), "c-within", &c, -1);
        /* its child, here in the peer's cgroup: moved */
        pid_t kid = sleeper();
        int kfd = (int)syscall(SYS_pidfd_open, kid, 0);
        struct fyh_msg mv = {.type = FYH_T_MOVE};
        snprintf(mv.u.move.name, sizeof(mv.u.move.name), "%s", c.u.create.name);
        note_req(line, sizeof(line), "move-within", &mv, kfd);
        remove_msg(&r, &c);
        (void)outcome(&r, -1, &rep);
        waitpid(kid, NULL, 0);
    } else if (mode == 1) {
        /* a child the test moves to a tighter cgroup (8M) than the attempt (32M) */
        create_msg(&c, 6, 32 * M, 10, 0);
        note_req(line, sizeof(line), "c-32", &c, -1);
        pid_t kid = sleeper();
        (void)!write(peer_mode_fd, &kid, sizeof(kid));
        char ack;
        (void)!read(peer_ack_fd, &ack, 1);
        int kfd = (int)syscall(SYS_pidfd_open, kid, 0);
        struct fyh_msg mv = {.type = FYH_T_MOVE};
        snprintf(mv.u.move.name, sizeof(mv.u.move.name), "%s", c.u.create.name);
        note_req(line, sizeof(line), "move-tight", &mv, kfd);
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)kid);
        NOTE("tight-stays=%d", strstr(slurp(path), "fyh-tight") != NULL);
        remove_msg(&r, &c);
        (void)outcome(&r, -1, &rep);
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
    } else {
        create_msg(&c, 7, 16 * M, 10, 0);
        note_req(line, sizeof(line), "c-plain", &c, -1);
        remove_msg(&r, &c); /* (not-found when it was refused) */
        (void)outcome(&r, -1, &rep);
    }
#undef NOTE
    (void)!write(out, line, strlen(line));
    _exit(0);
}

/* A peer in cgroup cg (mode as confined_peer): all it said. */
static void run_confined(const char *cg, int mode, char *all, size_t len) {
    int p[2], up[2], down[2];
    all[0] = '\0';
    if (pipe2(p, O_CLOEXEC) < 0 || pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0)
        return fail("pipe");
    pid_t peer = fork();
    if (peer == 0) {
        char cp[700];
        snprintf(cp, sizeof(cp), "%s/cgroup.procs", cg);
        if (write_file(cp, "0") < 0)
            _exit(125);
        close(p[0]);
        peer_mode_fd = up[1];
        peer_ack_fd = down[0];
        confined_peer(p[1], mode);
    }
    close(p[1]);
    close(up[1]);
    close(down[0]);
    if (mode == 1) {
        pid_t kid = 0;
        if (read(up[0], &kid, sizeof(kid)) == sizeof(kid)) {
            char cp[700], v[32];
            snprintf(cp, sizeof(cp), "%s/cgroup.procs", cg_tight);
            snprintf(v, sizeof(v), "%d", (int)kid);
            if (write_file(cp, v) < 0)
                fail("moving the peer's child to %s", cg_tight);
        }
        (void)!write(down[1], "k", 1);
    }
    size_t got = 0;
    for (ssize_t n; got < len - 1 && (n = read(p[0], all + got, len - 1 - got)) > 0;)
        got += (size_t)n;
    all[got] = '\0';
    close(p[0]);
    close(up[0]);
    close(down[1]);
    wait_exit(peer);
}

/* A device program that allows everything, attached to dir (BPF_F_ALLOW_MULTI):
 * its fd (to detach it), or -1. */
static int attach_allow_all(const char *dir) {
    struct bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1},
        {.code = BPF_JMP | BPF_EXIT},
    };
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    a.insns = (uint64_t)(uintptr_t)insns;
    a.insn_cnt = 2;
    a.license = (uint64_t)(uintptr_t)"GPL";
    int prog = (int)sys_bpf(BPF_PROG_LOAD, &a);
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    memset(&a, 0, sizeof(a));
    a.target_fd = (uint32_t)cg;
    a.attach_bpf_fd = (uint32_t)prog;
    a.attach_type = BPF_CGROUP_DEVICE;
    a.attach_flags = BPF_F_ALLOW_MULTI;
    long r = prog >= 0 && cg >= 0 ? sys_bpf(BPF_PROG_ATTACH, &a) : -1;
    if (cg >= 0)
        close(cg);
    if (r < 0 && prog >= 0) {
        close(prog);
        prog = -1;
    }
    return prog;
}

static void detach(const char *dir, int prog) {
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.target_fd = (uint32_t)cg;
    a.attach_bpf_fd = (uint32_t)prog;
    a.attach_type = BPF_CGROUP_DEVICE;
    if (cg < 0 || sys_bpf(BPF_PROG_DETACH, &a) < 0)
        fail("detaching the test's device program from %s: %s", dir, strerror(errno));
    if (cg >= 0)
        close(cg);
    close(prog);
}

static void expect_text(const char *all, const char *what, const char *needle) {
    char key[64];
    snprintf(key, sizeof(key), "text-%s=", what);
    const char *t = strstr(all, key);
    const char *nl = t ? strchr(t, '\n') : NULL;
    if (t && nl && memmem(t, (size_t)(nl - t), needle, strlen(needle)))
        return;
    fail("the refusal %s does not name \"%s\":\n%s", what, needle, all);
}

static void confined(void) {
    const char *tc = getenv("FY_TEST_CGROUP");
    snprintf(cg_peer, sizeof(cg_peer), "%s/fyh-peer", tc);
    snprintf(cg_tight, sizeof(cg_tight), "%s/fyh-tight", tc);
    snprintf(cg_prog, sizeof(cg_prog), "%s/fyh-prog", tc);
    snprintf(cg_io, sizeof(cg_io), "%s/fyh-io", tc);
    char f[700];
    const char *dirs[] = {cg_peer, cg_tight, cg_prog, cg_io};
    for (int i = 0; i < 4; i++)
        if (mkdir(dirs[i], 0755) < 0)
            return fail("mkdir %s: %s", dirs[i], strerror(errno));
    snprintf(f, sizeof(f), "%s/memory.max", cg_peer);
    int e = write_file(f, "33554432");
    snprintf(f, sizeof(f), "%s/pids.max", cg_peer);
    e = e ? e : write_file(f, "50");
    snprintf(f, sizeof(f), "%s/cpu.max", cg_peer);
    e = e ? e : write_file(f, "50000 100000");
    snprintf(f, sizeof(f), "%s/memory.max", cg_tight);
    e = e ? e : write_file(f, "8388608");
    if (e)
        return fail("limits of the peer's cgroups: %s", strerror(-e));

    static char all[8192];
    run_confined(cg_peer, 0, all, sizeof(all));
    expect_line(all, "c-mem64=denied");
    expect_text(all, "c-mem64", "33554432");
    expect_line(all, "c-memnone=ok mem=33554432");
    expect_line(all, "c-clamp=ok pids=50 cpu=50000 100000");
    expect_line(all, "c-pids51=denied");
    expect_text(all, "c-pids51", "pids");
    expect_line(all, "c-cpu1000=denied");
    expect_text(all, "c-cpu1000", "cpu");
    expect_line(all, "c-within=ok");
    expect_line(all, "move-within=ok");

    run_confined(cg_peer, 1, all, sizeof(all));
    expect_line(all, "c-32=ok");
    expect_line(all, "move-tight=denied");
    expect_text(all, "move-tight", "8388608");
    expect_line(all, "tight-stays=1");

    /* a device program of the peer's own cgroup: refused, whatever it allows */
    int prog = attach_allow_all(cg_prog);
    if (prog < 0)
        fail("attaching a device program to %s: %s", cg_prog, strerror(errno));
    run_confined(cg_prog, 2, all, sizeof(all));
    expect_line(all, "c-plain=denied");
    expect_text(all, "c-plain", "BPF program");
    if (prog >= 0)
        detach(cg_prog, prog);
    /* one of an ancestor the peer shares with the attempt (allowing more
     * programs below it): it runs in the attempt too */
    prog = attach_allow_all(tc);
    if (prog < 0)
        fail("attaching a device program to %s: %s", tc, strerror(errno));
    run_confined(cg_prog, 2, all, sizeof(all));
    expect_line(all, "c-plain=ok");
    if (prog >= 0)
        detach(tc, prog);

    /* io.max limits of the peer's own: refused (an attempt carries none) */
    struct stat st;
    const char *blk = "/dev/ram0";
    if (stat(blk, &st) == 0 && S_ISBLK(st.st_mode)) {
        char v[64];
        snprintf(v, sizeof(v), "%u:%u rbps=1048576", major(st.st_rdev), minor(st.st_rdev));
        snprintf(f, sizeof(f), "%s/io.max", cg_io);
        if ((e = write_file(f, v)) < 0)
            fail("%s: %s", f, strerror(-e));
        run_confined(cg_io, 2, all, sizeof(all));
        expect_line(all, "c-plain=denied");
        expect_text(all, "c-plain", "io.max");
    } else {
        printf("note: no %s: io.max not checked\n", blk);
    }

    if (count_attempts() != 0)
        fail("%d attempt cgroup(s) left after the confined peers", count_attempts());
    for (int i = 0; i < 4; i++)
        if (rmdir(dirs[i]) < 0)
            fail("rmdir %s: %s", dirs[i], strerror(errno));
}

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A measurement, not a check: `forgeyard run --memory 64M -- /bin/true`,
 * median of 5, as uid 65534 through the helper (CREATE, MOVE, REMOVE), and
 * without --memory and with no helper to find (no cgroup at all). */
static void timing(void) {
    char *argv[] = {(char *)fy, "run", "--memory", "64M", "--", "/bin/true", NULL};
    char *plain[] = {(char *)fy, "run", "--", "/bin/true", NULL};
    uint64_t t[2][5];
    for (int who = 0; who < 2; who++)
        for (int i = 0; i < 5; i++) {
            uint64_t t0 = now_us();
            int rc;
            runner_socket_env = who == 0 ? "FORGEYARD_HELPER_SOCKET=" SOCK : "FORGEYARD_HELPER_SOCKET=/run/fyh/none";
            rc = run_runner(who == 0 ? argv : plain, "/tmp/fyh/true.out");
            runner_socket_env = "FORGEYARD_HELPER_SOCKET=" SOCK;
            t[who][i] = now_us() - t0;
            if (rc != 0) {
                printf("note: timing run %s gave %d: %s\n", who ? "without limits" : "through the helper", rc,
                       slurp("/tmp/fyh/true.out"));
                return;
            }
        }
    qsort(t[0], 5, sizeof(uint64_t), cmp_u64);
    qsort(t[1], 5, sizeof(uint64_t), cmp_u64);
    printf("note: measured (TCG guest, median of 5, forgeyard run --memory 64M -- /bin/true): uid 65534 through the "
           "helper's cgroup v2 %.1f ms; without --memory and with no helper (no cgroup) %.1f ms\n", t[0][2] / 1000.0, t[1][2] / 1000.0);
}

static void start_helper(void) {
    snprintf(base, sizeof(base), "%s/fyh-helper", getenv("FY_TEST_CGROUP"));
    snprintf(sub, sizeof(sub), "%s/" SUBTREE, base);
    snprintf(uiddir, sizeof(uiddir), "%s/uid-%u", sub, RUNNER);
    mkdir("/run/fyh", 0755);
    if (mkdir(base, 0755) < 0 && errno != EEXIST)
        fail("mkdir %s: %s", base, strerror(errno));
    helper_pid = fork();
    if (helper_pid == 0) {
        char cp[600];
        snprintf(cp, sizeof(cp), "%s/cgroup.procs", base);
        int fd = open("/tmp/fyh-helper.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (write_file(cp, "0") < 0 || fd < 0 || dup2(fd, 2) < 0)
            _exit(125);
        execl(helper, helper, "--socket", SOCK, "--allow", "65534:4:256M:8192", "--subtree", SUBTREE, "--verbose",
              (char *)NULL);
        _exit(127);
    }
    /* (its "serving" line comes once the socket listens) */
    for (int i = 0; i < 600 && !strstr(slurp("/tmp/fyh-helper.log"), "serving "); i++)
        usleep(50000);
    struct stat st;
    if (stat(SOCK, &st) < 0)
        fail("the helper did not start: %s", slurp("/tmp/fyh-helper.log"));
}

int main(int argc, char **argv) {
    if (!getenv("FY_IN_GUEST") || !getenv("FY_TEST_CGROUP") || argc < 3) {
        puts("SKIP: test-helper-cg2 runs in the QEMU guest (test/vm/test-helper-cg2.sh)");
        return 77;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    fy = argv[1];
    helper = argv[2];
    for (int i = 3; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
            printf("note: %s not loaded: %s\n", argv[i], strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < 100 && (!has_node("/dev/fuse") || !has_node("/dev/net/tun")); i++)
        usleep(20000);
    /* (what udev does on a real host: devtmpfs makes them 0600) */
    chmod("/dev/fuse", 0666);
    chmod("/dev/net/tun", 0666);
    mkdir("/tmp/fyh", 0755);
    mkdir(HOME, 0700);
    if (chown(HOME, RUNNER, RUNNER) < 0)
        fail("chown %s", HOME);
    char before[512];
    start_helper();
    if (failures)
        return 1;
    snprintf(before, sizeof(before), "%s", slurp("/tmp/fyh-helper.log"));
    if (!strstr(before, "cgroup v2 controllers: memory pids cpu devices"))
        fail("the helper does not offer cgroup v2 memory, pids, cpu and devices: %s", before);
    else
        ok("the helper serves cgroup v2: memory pids cpu devices");

    /* the probe, as the runner */
    char *caps[] = {(char *)fy, "capabilities", "--json", "--fresh", NULL};
    int rc = run_runner(caps, "/tmp/fyh/caps.out");
    char *out = slurp("/tmp/fyh/caps.out");
    if (rc != 0 || !strstr(out, "cgroup v2 memory through the privileged helper at " SOCK) ||
        !strstr(out, "cgroup v2 pids through the privileged helper"))
        fail("the probe does not offer cgroup v2 limits through the helper (%d): %s", rc, out);
    else
        ok("the probe reports the helper and cgroup v2 limits through it");

    /* a memory hog under --memory 64M: out-of-memory */
    char *hog[] = {(char *)fy, "run", "--memory", "64M", "--result", HOME "/hog.json", "--", "/bin/sh", "-c",
                   "x=a; i=0; while [ $i -lt 40 ]; do x=$x$x; i=$((i + 1)); done; echo survived", NULL};
    rc = run_runner(hog, "/tmp/fyh/hog.out");
    out = slurp("/tmp/fyh/hog.out");
    if (rc != 242 || strstr(out, "survived"))
        fail("the hog gave %d, not out-of-memory (242): %s\nresult: %s", rc, out, slurp(HOME "/hog.json"));
    else
        ok("--memory 64M: the hog ends out-of-memory (242)");
    out = slurp(HOME "/hog.json");
    if (!strstr(out, "cgroup v2 (privileged helper)") || !strstr(out, "v2 cgroups created and limited by the privileged"))
        fail("the result does not name cgroup v2 through the helper: %s", out);
    else
        ok("the evidence says the memory limit is cgroup v2 through the helper");

    /* a bounded fork bomb under --pids 16 */
    char *bomb[] = {(char *)fy, "run", "--memory", "64M", "--pids", "16", "--", "/bin/sh", "-c",
                    "i=0; while [ $i -lt 64 ]; do sleep 30 & i=$((i + 1)); done; wait", NULL};
    rc = run_runner(bomb, "/tmp/fyh/bomb.out");
    if (rc != 243)
        fail("the fork bomb under --pids 16 gave %d, not resource-exceeded (243): %s", rc, slurp("/tmp/fyh/bomb.out"));
    else
        ok("--pids 16: the bounded fork bomb is held (resource-exceeded, 243)");
    if (count_attempts() != 0)
        fail("%d attempt cgroup(s) left", count_attempts());

    timing();
    devices();
    raw_protocol();
    confined();

    if (count_attempts() != 0)
        fail("%d attempt cgroup(s) left at the end", count_attempts());
    kill(helper_pid, SIGTERM);
    rc = wait_exit(helper_pid);
    if (rc != 0)
        fail("the helper ended with %d: %s", rc, slurp("/tmp/fyh-helper.log"));
    struct stat st;
    char ctl[600];
    snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", base);
    if (stat(sub, &st) == 0)
        fail("%s left after the helper stopped", sub);
    else if (slurp(ctl)[0] && strcmp(slurp(ctl), "\n") != 0)
        fail("the helper's cgroup keeps controllers it enabled: %s", slurp(ctl));
    else
        ok("the helper stopped: its subtree is gone, its cgroup's controllers as they were");
    if (rmdir(base) < 0)
        fail("rmdir %s: %s", base, strerror(errno));
    if (failures)
        printf("--- helper log ---\n%s\n", slurp("/tmp/fyh-helper.log"));
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
