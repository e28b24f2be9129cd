/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seccomp profiles, proven against the running kernel.
 *
 * Every filter is loaded in a forked child, never in the test process: the
 * child sets no_new_privs and loads the compiled program with the raw
 * seccomp(2) call, exactly as the sandbox child does. With user notification
 * the test process is the supervisor: it receives the listener fd over a
 * socketpair (SCM_RIGHTS), names each notified call and answers EPERM.
 *
 * A child reports failed expectations as text lines on a CLOEXEC pipe and
 * exits 1; it never calls Check. Every child has a deadline (SIGKILL after
 * CHILD_DEADLINE_MS) and every loop here is bounded. */
#include <check.h>
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "forgeyard/fy-policy.h"
#include "linux/linux-seccomp.h"
#include "linux/linux-seccomp-internal.h" /* sc_self_check */

#define CHILD_DEADLINE_MS 5000
#define MAX_NOTIFS 32

#ifndef SYS_pidfd_open
#  define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#  define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#  define SYS_io_uring_setup 425
#endif
#ifndef AF_VSOCK
#  define AF_VSOCK 40
#endif

extern char **environ;

/* ------------------------------------------------------------------------------- */
/* running a child under a program                                                 */

struct notif_rec {
    int nr;
    uint32_t arch;
    char name[64];
    int violation;
    int noted; /* sc_is_noted */
};

struct run {
    int status;
    bool exited; /* reaped (not timed out) */
    bool timed_out;
    char report[4096];
    size_t report_len;
    struct notif_rec notifs[MAX_NOTIFS];
    size_t n_notifs;
    bool got_listener;
};

typedef void (*child_fn)(void);

struct spec {
    const struct seccomp_program *prog; /* NULL: no filter (a control run) */
    uint32_t cls;                       /* for sc_is_violation */
    uid_t uid;                          /* (uid_t)-1: keep ours */
    child_fn before_load;               /* optional, runs before the filter */
    child_fn body;                      /* runs under the filter */
};

/* ---- child side (raw calls, no Check) ---- */

static int c_report_fd = -1;
static int c_fails;

static void c_fail(int line, const char *what, long got, int err) {
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "line %d: %s (got %ld, errno %d %s)\n", line, what, got, err,
                     strerrorname_np(err) ? strerrorname_np(err) : "?");
    if (n > 0 && c_report_fd >= 0)
        (void)!write(c_report_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
    c_fails++;
}

/* The call must succeed (>= 0). */
#define OK(call) do { errno = 0; long r_ = (long)(call); \
        if (r_ < 0) c_fail(__LINE__, #call " should succeed", r_, errno); } while (0)
/* The call must fail with errno e. */
#define ERR(call, e) do { errno = 0; long r_ = (long)(call); int e_ = errno; \
        if (!(r_ == -1 && e_ == (e))) c_fail(__LINE__, #call " should fail with " #e, r_, e_); } while (0)
#define TRUE(cond) do { if (!(cond)) c_fail(__LINE__, #cond, 0, errno); } while (0)

static void send_fd(int sock, int fd) {
    char dummy = 'L';
    struct iovec iov = { &dummy, 1 };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                          .msg_controllen = sizeof(u.buf) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1)
        _exit(93);
}

static void load_program(const struct seccomp_program *p, int sock) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        _exit(90);
    struct sock_fprog fp = { .len = (unsigned short)p->len, .filter = p->filter };
    unsigned flags = p->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fp);
    if (fd < 0)
        _exit(91);
    if (p->notify) {
        send_fd(sock, (int)fd);
        close((int)fd);
    }
}

static void child_main(const struct spec *s, int report_fd, int sock) {
    c_report_fd = report_fd;
    struct rlimit core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &core); /* SIGSYS would dump core */
    if (s->uid != (uid_t)-1) {
        if (setgroups(0, NULL) != 0 || setresgid(s->uid, s->uid, s->uid) != 0 ||
            setresuid(s->uid, s->uid, s->uid) != 0)
            _exit(92);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* after setresuid, which clears it */
    if (s->before_load)
        s->before_load();
    if (s->prog)
        load_program(s->prog, sock);
    s->body();
    /* The raw call: a sanitizer's _exit interceptor would make calls the init profile kills. */
    syscall(SYS_exit_group, c_fails ? 1 : 0);
    _exit(98);
}

/* ---- parent side: supervisor and reaper ---- */

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int recv_fd(int sock) {
    char dummy;
    struct iovec iov = { &dummy, 1 };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                          .msg_controllen = sizeof(u.buf) };
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

static void drain(int fd, struct run *r) {
    for (int i = 0; i < 64; i++) { /* bounded: the buffer is 4 KiB */
        size_t room = sizeof(r->report) - 1 - r->report_len;
        if (room == 0)
            return;
        ssize_t n = read(fd, r->report + r->report_len, room);
        if (n <= 0)
            return;
        r->report_len += (size_t)n;
        r->report[r->report_len] = '\0';
    }
}

static void supervise_one(int listener, const struct spec *s, struct run *r) {
    struct seccomp_notif req;
    memset(&req, 0, sizeof(req)); /* the kernel wants it zeroed */
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
        return;
    if (r->n_notifs < MAX_NOTIFS) {
        struct notif_rec *n = &r->notifs[r->n_notifs++];
        n->nr = req.data.nr;
        n->arch = req.data.arch;
        sc_syscall_name(req.data.arch, req.data.nr, n->name, sizeof(n->name));
        n->violation = sc_is_violation(s->cls, req.data.arch, req.data.nr);
        n->noted = sc_is_noted(s->cls, req.data.arch, req.data.nr);
    }
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof(resp));
    resp.id = req.id;
    resp.error = -EPERM;
    (void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp); /* ENOENT: the caller died */
}

static void run_child(const struct spec *s, struct run *r) {
    memset(r, 0, sizeof(*r));
    int rep[2], sv[2];
    ck_assert_int_eq(pipe2(rep, O_CLOEXEC), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(rep[0]);
        close(sv[0]);
        child_main(s, rep[1], sv[1]);
        _exit(99);
    }
    close(rep[1]);
    close(sv[1]);
    fcntl(rep[0], F_SETFL, O_NONBLOCK);

    int listener = -1;
    bool sock_open = true, rep_open = true;
    uint64_t deadline = now_ms() + CHILD_DEADLINE_MS;
    for (;;) { /* bounded by the deadline */
        struct pollfd p[3] = { { rep_open ? rep[0] : -1, POLLIN, 0 },
                               { sock_open ? sv[0] : -1, POLLIN, 0 },
                               { listener, POLLIN, 0 } };
        int n = poll(p, 3, 10);
        if (n > 0) {
            if (p[0].revents & POLLIN)
                drain(rep[0], r);
            else if (p[0].revents & (POLLHUP | POLLERR))
                rep_open = false;
            if (p[1].revents & POLLIN) {
                int fd = recv_fd(sv[0]);
                if (fd >= 0) {
                    listener = fd;
                    r->got_listener = true;
                }
                sock_open = false;
            } else if (p[1].revents & (POLLHUP | POLLERR)) {
                sock_open = false;
            }
            if (p[2].revents & POLLIN)
                supervise_one(listener, s, r);
            else if (p[2].revents & (POLLHUP | POLLERR)) {
                close(listener); /* no filter user left */
                listener = -1;
            }
        }
        pid_t w = waitpid(pid, &r->status, WNOHANG);
        if (w == pid) {
            r->exited = true;
            break;
        }
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &r->status, 0);
            r->timed_out = true;
            break;
        }
    }
    drain(rep[0], r);
    close(rep[0]);
    close(sv[0]);
    if (listener >= 0)
        close(listener);
}

/* The child ran to its end and every expectation held. */
static void assert_clean(const struct run *r, const char *what) {
    ck_assert_msg(!r->timed_out, "%s: the child hit its deadline", what);
    ck_assert_msg(WIFEXITED(r->status), "%s: the child died of signal %d; report:\n%s", what,
                  WIFSIGNALED(r->status) ? WTERMSIG(r->status) : -1, r->report);
    ck_assert_msg(WEXITSTATUS(r->status) == 0, "%s: exit %d; report:\n%s", what,
                  WEXITSTATUS(r->status), r->report);
}

static void assert_sigsys(const struct run *r, const char *what) {
    ck_assert_msg(!r->timed_out, "%s: the child hit its deadline", what);
    ck_assert_msg(WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGSYS,
                  "%s: want death by SIGSYS, got status 0x%x; report:\n%s", what, r->status, r->report);
}

static struct seccomp_program compile(uint32_t cls, bool notify) {
    struct seccomp_program p;
    fy_error *e = NULL;
    int r = sc_compile(cls, notify, &p, &e);
    ck_assert_msg(r == 0, "compile: %s", e ? fy_error_message(e) : "?");
    fy_error_free(e);
    return p;
}

/* ------------------------------------------------------------------------------- */
/* small helpers for the bodies                                                    */

#if defined(__x86_64__)
/* An i386 system call from 64-bit code. The compat entry zeroes r8-r15. */
static long int80(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(nr), "b"(a), "c"(b), "d"(c)
                     : "memory", "cc", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15");
    return ret;
}
#define I386_GETPID 20
#define I386_MOUNT 21
#endif

static void *thread_fn(void *arg) { return arg; }

/* ------------------------------------------------------------------------------- */
/* bodies                                                                          */

static uint32_t g_cls; /* the class the current child runs (set before fork) */

/* What every profile must allow, and the quiet denials. */
static void body_allowed_and_quiet(void) {
    /* Allowed: the everyday calls. */
    TRUE(getpid() > 0);
    TRUE(syscall(SYS_getpid) == getpid());
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    TRUE(fd >= 0);
    char buf[256];
    OK(read(fd, buf, sizeof(buf)));
    OK(close(fd));
    fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    TRUE(fd >= 0);
    TRUE(write(fd, "abc", 3) == 3);
    int n = -1;
    ERR(ioctl(fd, TCGETS, buf), ENOTTY); /* an ordinary ioctl reaches the kernel */
    close(fd);
    int pp[2];
    OK(pipe2(pp, O_CLOEXEC));
    TRUE(write(pp[1], "x", 1) == 1);
    OK(ioctl(pp[0], FIONREAD, &n));
    TRUE(n == 1);
    close(pp[0]);
    close(pp[1]);

    /* fork + exec (clone), posix_spawn and a thread (clone3 -> ENOSYS -> clone). */
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = { (char *)"/bin/true", NULL };
        execve("/bin/true", argv, environ);
        _exit(127);
    }
    TRUE(pid > 0);
    int st = -1;
    TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *argv[] = { (char *)"/bin/true", NULL };
    TRUE(posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0);
    TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pthread_t t;
    void *tr = NULL;
    TRUE(pthread_create(&t, NULL, thread_fn, (void *)0x42) == 0);
    TRUE(pthread_join(t, &tr) == 0 && tr == (void *)0x42);

    /* Unknown and new calls: ENOSYS. */
    ERR(syscall(1000), ENOSYS);
    ERR(syscall(4000), ENOSYS);
    ERR(syscall(SYS_io_uring_setup, 1, NULL), ENOSYS); /* the kernel would say EFAULT */
    ERR(syscall(SYS_clone3, NULL, 0), ENOSYS);

    /* Quiet EPERM (each would give another answer, or succeed, without the filter). */
    ERR(syscall(SYS_bpf, 0, NULL, 0), EPERM);
    ERR(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0), EPERM);
    ERR(syscall(SYS_add_key, "user", "fy", "x", 1, -3), EPERM);
    ERR(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
    ERR(syscall(SYS_userfaultfd, 0), EPERM);
    ERR(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), EPERM);
    ERR(syscall(SYS_setns, -1, 0), EPERM); /* the kernel would say EBADF */
    ERR(chroot("/"), EPERM);
    ERR(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0), EPERM);
#if defined(__x86_64__)
    ERR(syscall(SYS_modify_ldt, 0, buf, sizeof(buf)), EPERM);
#endif

    /* personality: the three safe values pass, the rest EPERM. */
    long cur = syscall(SYS_personality, 0xffffffffUL);
    TRUE(cur >= 0);
    OK(syscall(SYS_personality, 0xffffffffffffffffUL)); /* a query too: the kernel reads 32 bits */
    OK(personality(PER_LINUX | ADDR_NO_RANDOMIZE));
    OK(personality(PER_LINUX));
    ERR(personality(READ_IMPLIES_EXEC), EPERM);
    ERR(personality(PER_LINUX32), EPERM);
    ERR(personality(UNAME26), EPERM);
    TRUE(syscall(SYS_personality, 0xffffffffUL) == PER_LINUX);

    /* Namespaces: a new user namespace is refused, however it is asked for. */
    ERR(unshare(CLONE_NEWUSER), EPERM);
    ERR(unshare(CLONE_NEWUSER | CLONE_NEWNS), EPERM);
    ERR(syscall(SYS_unshare, (1UL << 32) | CLONE_NEWUSER), EPERM);
    long cr = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0, 0, 0, 0);
    if (cr == 0)
        _exit(0); /* the filter failed: we are the new process */
    if (cr > 0)
        waitpid((pid_t)cr, NULL, 0);
    TRUE(cr == -1 && errno == EPERM);
    /* Other namespaces are the kernel's business: as root (capabilities) they work. */
    if (geteuid() == 0)
        OK(unshare(CLONE_NEWUTS));
    else
        ERR(unshare(CLONE_NEWUTS), EPERM); /* no capabilities: the kernel refuses */

    /* Sockets: four families. */
    ERR(socket(AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT);
    ERR(socket(AF_BLUETOOTH, SOCK_STREAM, 0), EAFNOSUPPORT);
    ERR(socket(AF_VSOCK, SOCK_STREAM, 0), EAFNOSUPPORT);
    ERR(socket(AF_ALG, SOCK_SEQPACKET, 0), EAFNOSUPPORT);
    ERR(socket(0, SOCK_STREAM, 0), EAFNOSUPPORT);
    ERR(syscall(SYS_socket, (1UL << 32) | AF_INET, SOCK_STREAM, 0), EAFNOSUPPORT);
    int sv[2];
    ERR(socketpair(AF_PACKET, SOCK_RAW, 0, sv), EAFNOSUPPORT);
    OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
    int s4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    TRUE(s4 >= 0);
    int s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    TRUE(s6 >= 0 || (errno == EAFNOSUPPORT && access("/proc/sys/net/ipv6", F_OK) != 0));
    int su = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    TRUE(su >= 0);
    int sn = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */);
    TRUE(sn >= 0);
    /* Version 2: MPTCP sockets (not TCP to Landlock) and TCP Fast Open sends
     * (connecting past Landlock's connect hook) are refused; plain TCP and
     * other send flags are not. The Fast Open send is aimed at the loopback
     * with nothing listening: refused by the filter before anything is sent. */
    ERR(socket(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */), EPROTONOSUPPORT);
    ERR(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 262), EPROTONOSUPPORT);
    ERR(syscall(SYS_socket, AF_INET, SOCK_STREAM, (1UL << 32) | 262), EPROTONOSUPPORT);
    int stcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    TRUE(stcp >= 0);
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr = { htonl(INADDR_LOOPBACK) } };
    ERR(sendto(stcp, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&lo, sizeof(lo)), EOPNOTSUPP);
    ERR(syscall(SYS_sendto, stcp, "x", 1, (1UL << 32) | MSG_FASTOPEN | MSG_NOSIGNAL, &lo, sizeof(lo)), EOPNOTSUPP);
    struct iovec iv = { "x", 1 };
    struct msghdr mh = { .msg_name = &lo, .msg_namelen = sizeof(lo), .msg_iov = &iv, .msg_iovlen = 1 };
    ERR(sendmsg(stcp, &mh, MSG_FASTOPEN), EOPNOTSUPP);
    struct mmsghdr mm = { .msg_hdr = mh };
    ERR(sendmmsg(stcp, &mm, 1, MSG_FASTOPEN), EOPNOTSUPP);
    /* (without the flag the same sends reach the kernel: not connected) */
    ERR(send(stcp, "x", 1, MSG_NOSIGNAL), EPIPE);
    close(stcp);

    /* RLIMIT_CORE (version 3): setting it succeeds and changes nothing;
     * prlimit64 that also asks for the old value: EPERM; reads and other
     * resources reach the kernel. */
    struct rlimit core, zero = {0, 0}, big = {RLIM_INFINITY, RLIM_INFINITY}, nof;
    OK(getrlimit(RLIMIT_CORE, &core));
    OK(setrlimit(RLIMIT_CORE, &zero));
    OK(syscall(SYS_setrlimit, (1UL << 32) | RLIMIT_CORE, &zero));
    OK(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &zero, NULL));
    OK(syscall(SYS_prlimit64, 0, (1UL << 32) | RLIMIT_CORE, &big, NULL));
    struct rlimit after = {7, 7};
    ERR(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &zero, &after), EPERM);
    TRUE(after.rlim_cur == 7); /* (not written) */
    OK(syscall(SYS_prlimit64, 0, RLIMIT_CORE, NULL, &after));
    TRUE(after.rlim_cur == core.rlim_cur && after.rlim_max == core.rlim_max);
    OK(getrlimit(RLIMIT_NOFILE, &nof));
    struct rlimit lower = {nof.rlim_cur - 1, nof.rlim_max};
    OK(setrlimit(RLIMIT_NOFILE, &lower));
    OK(getrlimit(RLIMIT_NOFILE, &after));
    TRUE(after.rlim_cur == nof.rlim_cur - 1);

    /* Set-user-ID (version 4): no mode with S_ISUID reaches a file, by any
     * of the calls that set one; set-group-ID, other modes and an open that
     * creates nothing reach the kernel; openat2 (its mode in memory): ENOSYS. */
    char sdir[] = "/tmp/fy-seccomp-XXXXXX";
    TRUE(mkdtemp(sdir) != NULL);
    int dfd = open(sdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    TRUE(dfd >= 0);
    int ff = openat(dfd, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
    TRUE(ff >= 0);
    ERR(fchmod(ff, 04755), EPERM);
    ERR(syscall(SYS_fchmod, ff, (1UL << 32) | 04700), EPERM);
    ERR(fchmodat(dfd, "f", 06755, 0), EPERM);
    ERR(syscall(SYS_chmod, "/proc/self/fd/0", 04000), EPERM); /* (refused before the path is looked at) */
    ERR(syscall(452 /* fchmodat2 */, dfd, "f", 04755, 0), EPERM);
    ERR(openat(dfd, "g", O_CREAT | O_WRONLY | O_CLOEXEC, 04755), EPERM);
    ERR(syscall(SYS_open, "/proc/self/fd/0", O_CREAT | O_EXCL | O_WRONLY, 04755), EPERM);
    ERR(openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 04700), EPERM);
    ERR(syscall(SYS_creat, "/proc/self/fd/0", 04755), EPERM);
    ERR(mknodat(dfd, "h", S_IFREG | 04755, 0), EPERM);
    ERR(syscall(437 /* openat2 */, dfd, "f", NULL, 0), ENOSYS);
    OK(fchmod(ff, 0700));
    OK(fchmodat(dfd, "f", 02755, 0));
    struct stat fst;
    OK(fstat(ff, &fst));
    TRUE((fst.st_mode & 07777) == 02755 || (fst.st_mode & 07777) == 0755); /* (S_ISGID kept only in the group) */
    close(ff);
    ff = openat(dfd, "f", O_RDONLY | O_CLOEXEC, 04755); /* creates nothing: the mode is not used */
    TRUE(ff >= 0);
    close(ff);
    ff = openat(dfd, "g", O_CREAT | O_WRONLY | O_CLOEXEC, 02755);
    TRUE(ff >= 0);
    close(ff);
    OK(mknodat(dfd, "h", S_IFREG | 0644, 0));
    OK(unlinkat(dfd, "f", 0));
    OK(unlinkat(dfd, "g", 0));
    OK(unlinkat(dfd, "h", 0));
    close(dfd);
    OK(rmdir(sdir));

    /* The ptrace class: EPERM in general-build, allowed in networked-test. */
    pid_t gc = fork();
    if (gc == 0) {
        for (int i = 0; i < 500; i++) /* bounded: 5 s, killed long before */
            usleep(10000);
        _exit(0);
    }
    TRUE(gc > 0);
    char word[8] = "fy-word", got[8] = "";
    struct iovec lv = { got, sizeof(got) }, rv = { word, sizeof(word) };
    if (g_cls == FY_SECCOMP_GENERAL_BUILD) {
        ERR(ptrace(PTRACE_SEIZE, gc, 0, 0), EPERM);
        ERR(process_vm_readv(getpid(), &lv, 1, &rv, 1, 0), EPERM);
    } else {
        OK(ptrace(PTRACE_SEIZE, gc, 0, 0));
        TRUE(process_vm_readv(getpid(), &lv, 1, &rv, 1, 0) == (ssize_t)sizeof(word));
        TRUE(memcmp(got, word, sizeof(word)) == 0);
    }
    kill(gc, SIGKILL);
    waitpid(gc, NULL, 0);
}

/* The same user-namespace calls without a filter: they work on this host, so the EPERM
 * above is the filter's. */
static void body_control(void) {
    if (geteuid() == 0) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
        int st = -1;
        TRUE(pid > 0 && waitpid(pid, &st, 0) == pid);
        TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        TRUE(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0) >= 0);
        OK(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0));
        TRUE(syscall(SYS_bpf, 0, NULL, 0) == -1 && errno != EPERM);
        OK(chroot("/"));
    }
    /* The set-user-ID refusals above are the filter's. */
    char sdir[] = "/tmp/fy-seccomp-XXXXXX";
    TRUE(mkdtemp(sdir) != NULL);
    int dfd = open(sdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    TRUE(dfd >= 0);
    int ff = openat(dfd, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 04755);
    TRUE(ff >= 0);
    OK(fchmod(ff, 04700));
    close(ff);
    OK(unlinkat(dfd, "f", 0));
    close(dfd);
    OK(rmdir(sdir));
    ERR(syscall(SYS_setns, -1, 0), EBADF);
    TRUE(syscall(SYS_getpid | 0x40000000) == -1 && errno != EPERM); /* ENOSYS without x32 */
    char c = 'x';
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    ERR(ioctl(fd, TIOCSTI, &c), ENOTTY);
    close(fd);
}

static bool g_have_i386;

/* Each violation, once; the supervisor answers EPERM. */
static void body_violations(void) {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    char c = 'x';
    ERR(mount("none", "/nonexistent-fy", "tmpfs", 0, NULL), EPERM);          /* kernel: ENOENT */
    ERR(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM);
    ERR(syscall(SYS_init_module, NULL, 0, ""), EPERM);
    ERR(ioctl(fd, TIOCSTI, &c), EPERM);                                       /* kernel: ENOTTY */
    ERR(syscall(SYS_ioctl, fd, (1UL << 32) | TIOCSTI, &c), EPERM);            /* high bits */
    ERR(syscall(SYS_ioctl, fd, TIOCLINUX, &c), EPERM);
    ERR(syscall(SYS_bpf, 0, NULL, 0), EPERM); /* quiet: no notification */
#if defined(__x86_64__)
    ERR(syscall(SYS_getpid | 0x40000000), EPERM); /* x32; the kernel would say ENOSYS */
    if (g_have_i386)
        TRUE(int80(I386_MOUNT, 0, 0, 0) == -EPERM);
#endif
    close(fd);
}

/* One violation each, for the kill mode. */
static int g_which;
static void body_one_violation(void) {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    char c = 'x';
    switch (g_which) {
    case 0: mount("none", "/nonexistent-fy", "tmpfs", 0, NULL); break;
    case 1: syscall(SYS_kexec_load, 0, 0, NULL, 0); break;
    case 2: syscall(SYS_init_module, NULL, 0, ""); break;
    case 3: ioctl(fd, TIOCSTI, &c); break;
    case 4: syscall(SYS_ioctl, fd, (1UL << 32) | TIOCSTI, &c); break;
    case 5: syscall(SYS_ioctl, fd, TIOCLINUX, &c); break;
    case 6: syscall(SYS_pivot_root, "/", "/"); break;
    case 7: syscall(SYS_open_by_handle_at, fd, NULL, 0); break;
#if defined(__x86_64__)
    case 8: syscall(SYS_getpid | 0x40000000); break;
    case 9: int80(I386_GETPID, 0, 0, 0); break;
#endif
    default: break;
    }
    c_fail(__LINE__, "still alive after the violation", g_which, errno);
}

static void body_i386_probe(void) {
#if defined(__x86_64__)
    _exit(int80(I386_GETPID, 0, 0, 0) == getpid() ? 0 : 1);
#else
    _exit(1);
#endif
}

/* ---- init ---- */

static pid_t g_init_child;
static int g_init_pipe[2];
static volatile sig_atomic_t g_handled;

static void on_usr2(int sig) { g_handled = sig; }

static void init_before(void) {
    g_init_child = fork();
    if (g_init_child == 0)
        _exit(7);
    if (pipe2(g_init_pipe, O_CLOEXEC) != 0 || write(g_init_pipe[1], "p", 1) != 1)
        _exit(94);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
}

/* Everything the sandbox's pid 1 does. */
static void body_init(void) {
    TRUE(syscall(SYS_getpid) > 0);
    int st = -1;
    TRUE(wait4(g_init_child, &st, 0, NULL) == g_init_child);
    TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    ERR(waitid(P_ALL, 0, &si, WEXITED | WNOHANG), ECHILD);
    OK(kill(getpid(), 0));
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    OK(sigprocmask(SIG_BLOCK, &set, NULL));
    OK(kill(getpid(), SIGUSR1));
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    TRUE(sigtimedwait(&set, NULL, &ts) == SIGUSR1);
    ERR(sigtimedwait(&set, NULL, &ts), EAGAIN);
    /* A handler returns through rt_sigreturn. */
    OK(kill(getpid(), SIGUSR2));
    TRUE(g_handled == SIGUSR2);
    struct timespec now;
    OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now));
    OK(clock_gettime(CLOCK_REALTIME, &now));
    char c = 0;
    TRUE(read(g_init_pipe[0], &c, 1) == 1 && c == 'p');
    OK(close(g_init_pipe[0]));
    TRUE(write(c_report_fd, "", 0) == 0);
}

static void body_init_open(void) {
    open("/dev/null", O_RDONLY | O_CLOEXEC); /* openat: killed */
    c_fail(__LINE__, "still alive after openat", 0, errno);
}

#if defined(__x86_64__)
static void body_init_x32(void) {
    syscall(SYS_getpid | 0x40000000);
    c_fail(__LINE__, "still alive after an x32 call", 0, errno);
}
#endif

static void body_init_mmap(void) {
    void *p = malloc(1 << 20); /* mmap: killed */
    c_fail(__LINE__, "still alive after malloc", p != NULL, errno);
}

/* ------------------------------------------------------------------------------- */
/* tests                                                                           */

static bool probe_i386(void) {
#if defined(__x86_64__)
    struct spec s = { NULL, 0, (uid_t)-1, NULL, body_i386_probe };
    struct run r;
    run_child(&s, &r);
    return r.exited && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
#else
    return false;
#endif
}

START_TEST(test_compile_api) {
    struct seccomp_program p;
    fy_error *e = NULL;
    ck_assert_int_eq(sc_compile(99, false, &p, &e), FY_E_INVAL);
    ck_assert_int_eq(fy_error_step(e), FY_STEP_SECCOMP);
    ck_assert_ptr_null(p.filter);
    fy_error_free(e);
    ck_assert_int_eq(sc_compile(FY_SECCOMP_GENERAL_BUILD, false, NULL, NULL), FY_E_INVAL);

    static const uint32_t classes[] = { FY_SECCOMP_GENERAL_BUILD, FY_SECCOMP_NETWORKED_TEST };
    static const char *const names[] = { "general-build", "networked-test" };
    for (int i = 0; i < 2; i++) {
        for (int n = 0; n < 2; n++) {
            p = compile(classes[i], n);
            ck_assert_str_eq(p.name, names[i]);
            ck_assert_uint_eq(p.version, 5);
            ck_assert(p.notify == (bool)n);
            ck_assert_uint_gt(p.len, 50);
            /* Compact: the kernel converts and JITs it at every sandbox start
             * (a rule per allowed call made 524 instructions and twice the
             * cost; the layout in linux-seccomp.c keeps it near 140). */
            ck_assert_uint_lt(p.len, 256);
            sc_program_free(&p);
            ck_assert_ptr_null(p.filter);
            sc_program_free(&p); /* idempotent */
        }
    }
    sc_program_free(NULL);
    ck_assert_int_eq(sc_compile_init(&p, NULL), 0);
    ck_assert_str_eq(p.name, "init");
    ck_assert_uint_eq(p.version, 3); /* (3: ppoll, for the owner's pidfd) */
    ck_assert(!p.notify);
    ck_assert_uint_lt(p.len, 64);
    sc_program_free(&p);
}
END_TEST

START_TEST(test_compile_is_fast) {
    struct seccomp_program p = compile(FY_SECCOMP_GENERAL_BUILD, true); /* warm libseccomp up */
    sc_program_free(&p);
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 10; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        p = compile(i & 1 ? FY_SECCOMP_NETWORKED_TEST : FY_SECCOMP_GENERAL_BUILD, i & 2);
        clock_gettime(CLOCK_MONOTONIC, &b);
        sc_program_free(&p);
        uint64_t us = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000u + (uint64_t)(b.tv_nsec - a.tv_nsec) / 1000;
        if (us < best)
            best = us;
    }
    fprintf(stderr, "sc_compile: best of 10: %llu us\n", (unsigned long long)best);
    ck_assert_msg(best < 50000, "compiling took %llu us", (unsigned long long)best);
}
END_TEST

/* The reference for the self check's interpreter: a plain classic BPF interpreter with
 * the kernel's seccomp semantics, checked at each step (the one the self check used
 * before it decoded programs). false: the kernel would have refused the program. */
static bool ref_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d, uint32_t *ret) {
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    size_t pc = 0;
    for (size_t steps = 0; pc < len && steps <= len; steps++) {
        const struct sock_filter *f = &prog[pc++];
        uint32_t k = f->k;
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (k > sizeof(*d) - 4 || (k & 3))
                return false;
            memcpy(&a, (const char *)d + k, 4);
            break;
        case BPF_LD | BPF_W | BPF_LEN: a = sizeof(*d); break;
        case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(*d); break;
        case BPF_LD | BPF_IMM: a = k; break;
        case BPF_LDX | BPF_IMM: x = k; break;
        case BPF_LD | BPF_MEM: if (k >= BPF_MEMWORDS) return false; a = mem[k]; break;
        case BPF_LDX | BPF_MEM: if (k >= BPF_MEMWORDS) return false; x = mem[k]; break;
        case BPF_ST: if (k >= BPF_MEMWORDS) return false; mem[k] = a; break;
        case BPF_STX: if (k >= BPF_MEMWORDS) return false; mem[k] = x; break;
        case BPF_MISC | BPF_TAX: x = a; break;
        case BPF_MISC | BPF_TXA: a = x; break;
        case BPF_RET | BPF_K: *ret = k; return true;
        case BPF_RET | BPF_A: *ret = a; return true;
        case BPF_JMP | BPF_JA: if (k >= len - pc) return false; pc += k; break;
        default:
            if (BPF_CLASS(f->code) == BPF_ALU) {
                uint32_t v = BPF_SRC(f->code) == BPF_X ? x : k;
                switch (BPF_OP(f->code)) {
                case BPF_ADD: a += v; break;
                case BPF_SUB: a -= v; break;
                case BPF_MUL: a *= v; break;
                case BPF_DIV: if (!v) return false; a /= v; break;
                case BPF_MOD: if (!v) return false; a %= v; break;
                case BPF_AND: a &= v; break;
                case BPF_OR: a |= v; break;
                case BPF_XOR: a ^= v; break;
                case BPF_LSH: a = v < 32 ? a << v : 0; break;
                case BPF_RSH: a = v < 32 ? a >> v : 0; break;
                case BPF_NEG: a = -a; break;
                default: return false;
                }
            } else if (BPF_CLASS(f->code) == BPF_JMP) {
                uint32_t v = BPF_SRC(f->code) == BPF_X ? x : k;
                bool t;
                switch (BPF_OP(f->code)) {
                case BPF_JEQ: t = a == v; break;
                case BPF_JGT: t = a > v; break;
                case BPF_JGE: t = a >= v; break;
                case BPF_JSET: t = (a & v) != 0; break;
                default: return false;
                }
                uint8_t off = t ? f->jt : f->jf;
                if (off >= len - pc)
                    return false;
                pc += off;
            } else {
                return false;
            }
        }
    }
    return false;
}

static uint32_t rnd32(uint64_t *st) {
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*st >> 32);
}

/* The self check's decoded, threaded interpreter against the reference: random programs
 * (mostly well formed, with every kind of malformation among them) on random calls, run
 * straight and the way the self check runs argument classes (up to the first argument
 * load on another call of the same number, then resumed): the same verdict and the same
 * return every time. Bounded: 20,000 programs. */
START_TEST(test_interpreter_matches_reference) {
    static const uint16_t codes[] = {
        BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_LEN,
        BPF_LDX | BPF_W | BPF_LEN, BPF_LD | BPF_IMM, BPF_LDX | BPF_IMM, BPF_LD | BPF_MEM, BPF_LDX | BPF_MEM, BPF_ST,
        BPF_STX, BPF_MISC | BPF_TAX, BPF_MISC | BPF_TXA, BPF_RET | BPF_K, BPF_RET | BPF_A, BPF_JMP | BPF_JA,
        BPF_ALU | BPF_ADD | BPF_K, BPF_ALU | BPF_SUB | BPF_X, BPF_ALU | BPF_MUL | BPF_K, BPF_ALU | BPF_DIV | BPF_K,
        BPF_ALU | BPF_DIV | BPF_X, BPF_ALU | BPF_MOD | BPF_K, BPF_ALU | BPF_MOD | BPF_X, BPF_ALU | BPF_AND | BPF_K,
        BPF_ALU | BPF_OR | BPF_X, BPF_ALU | BPF_XOR | BPF_K, BPF_ALU | BPF_LSH | BPF_K, BPF_ALU | BPF_RSH | BPF_X,
        BPF_ALU | BPF_NEG, BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JGT | BPF_K,
        BPF_JMP | BPF_JGE | BPF_X, BPF_JMP | BPF_JSET | BPF_K, BPF_JMP | BPF_JEQ | BPF_X,
    };
    uint64_t st = 0x5eed;
    unsigned ran = 0, refused = 0;
    for (int it = 0; it < 20000; it++) {
        size_t len = 1 + rnd32(&st) % 48;
        struct sock_filter prog[48];
        for (size_t i = 0; i < len; i++) {
            uint32_t r = rnd32(&st);
            prog[i].code = r % 53 == 0 ? (uint16_t)rnd32(&st) : codes[r % FY_ARRAY_SIZE(codes)];
            /* jumps mostly in range, loads mostly of nr, arch and arguments */
            prog[i].jt = (uint8_t)(rnd32(&st) % (r % 29 == 0 ? 256 : len - i + 1));
            prog[i].jf = (uint8_t)(rnd32(&st) % (r % 31 == 0 ? 256 : len - i + 1));
            uint32_t kk = rnd32(&st);
            prog[i].k = kk % 7 == 0 ? kk : kk % 5 == 0 ? (kk >> 8) % 70 : (kk >> 8) % 8 * 4 + (kk % 3 == 0) * 16;
            if (prog[i].code == (BPF_JMP | BPF_JA))
                prog[i].k = kk % 11 == 0 ? kk : (kk >> 8) % (len - i + 1);
        }
        if (rnd32(&st) % 4)
            prog[len - 1] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, rnd32(&st) % 3);
        for (int c = 0; c < 6; c++) {
            struct seccomp_data d = {.nr = (int)(rnd32(&st) % 4), .arch = rnd32(&st) % 2 ? AUDIT_ARCH_X86_64 : 0,
                                     .instruction_pointer = 0x401000};
            struct seccomp_data other = d;
            for (int i = 0; i < 6; i++) {
                d.args[i] = rnd32(&st) % 3 ? rnd32(&st) % 4 : ((uint64_t)rnd32(&st) << 32) | rnd32(&st);
                other.args[i] = rnd32(&st) % 4;
            }
            uint32_t want = 0, got = 0, got2 = 0;
            bool ok = ref_run(prog, len, &d, &want);
            int r1 = sc_bpf_eval(prog, len, &d, NULL, &got);
            int r2 = sc_bpf_eval(prog, len, &d, &other, &got2);
            ck_assert_int_ge(r1, 0);
            ck_assert_msg(r1 == (int)ok && (!ok || got == want), "program %d call %d: reference %d/0x%x, decoded %d/0x%x",
                          it, c, ok, want, r1, got);
            ck_assert_msg(r2 == (int)ok && (!ok || got2 == want),
                          "program %d call %d resumed: reference %d/0x%x, decoded %d/0x%x", it, c, ok, want, r2, got2);
            ran++;
            refused += !ok;
        }
    }
    /* (both kinds of outcome were exercised, in numbers) */
    ck_assert_uint_gt(refused, ran / 20);
    ck_assert_uint_gt(ran - refused, ran / 20);
    /* A compiled profile, on calls with arguments: the same. */
    struct seccomp_program p = compile(FY_SECCOMP_GENERAL_BUILD, true);
    for (int nr = 0; nr < 480; nr++)
        for (int c = 0; c < 8; c++) {
            struct seccomp_data d = {.nr = nr, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = 0x401000};
            struct seccomp_data other = d;
            for (int i = 0; i < 6; i++) {
                uint32_t r = rnd32(&st);
                d.args[i] = r % 4 == 0 ? ((uint64_t)rnd32(&st) << 32) | rnd32(&st) : r % 4 == 1 ? 0x800 : r % 70;
            }
            uint32_t want = 0, got = 0, got2 = 0;
            ck_assert(ref_run(p.filter, p.len, &d, &want));
            ck_assert_int_eq(sc_bpf_eval(p.filter, p.len, &d, NULL, &got), 1);
            ck_assert_int_eq(sc_bpf_eval(p.filter, p.len, &d, &other, &got2), 1);
            ck_assert_uint_eq(got, want);
            ck_assert_uint_eq(got2, want);
        }
    sc_program_free(&p);
}
END_TEST

/* The self check is what makes a libseccomp that compiles differently fail
 * closed: every return of the compiled program changed to another action,
 * and a program cut short or jumping past its end, must each be refused. */
START_TEST(test_self_check_catches_mutations) {
    struct seccomp_program p = compile(FY_SECCOMP_GENERAL_BUILD, false);
    const struct profile_actions pa = {
        .violation = SECCOMP_RET_KILL_PROCESS, .badarch = SECCOMP_RET_KILL_PROCESS,
        .ptrace_allowed = false,
    };
    ck_assert_int_eq(sc_self_check(&p, &pa, NULL), 0);
    struct sock_filter *f = p.filter;
    unsigned rets = 0;
    for (size_t i = 0; i < p.len; i++) {
        if (f[i].code != (BPF_RET | BPF_K))
            continue;
        uint32_t k = f[i].k;
        f[i].k = k == SECCOMP_RET_ALLOW ? sc_ret_errno(EPERM) : SECCOMP_RET_ALLOW;
        fy_error *e = NULL;
        ck_assert_msg(sc_self_check(&p, &pa, &e) == FY_E_INTERNAL,
                      "return %zu of %zu (0x%08x -> 0x%08x) changed, and the self check passed",
                      i, p.len, k, f[i].k);
        ck_assert_int_eq(fy_error_step(e), FY_STEP_SECCOMP);
        fy_error_free(e);
        f[i].k = k;
        rets++;
    }
    ck_assert_uint_gt(rets, 4);
    ck_assert_int_eq(sc_self_check(&p, &pa, NULL), 0);
    /* Cut short: the sweep falls off the end. */
    size_t len = p.len;
    p.len = len / 2;
    ck_assert_int_eq(sc_self_check(&p, &pa, NULL), FY_E_INTERNAL);
    p.len = len;
    /* The first instruction jumps past the end. */
    struct sock_filter first = f[0];
    f[0] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (uint32_t)len, 0, 0);
    ck_assert_int_eq(sc_self_check(&p, &pa, NULL), FY_E_INTERNAL);
    f[0] = first;
    ck_assert_int_eq(sc_self_check(&p, &pa, NULL), 0);

    /* One number let through in front of the program: a gap the table does
     * not name, then one past its largest number. */
    int top = -1, gap = -1;
    for (int nr = 0; nr < 4000; nr++) {
        bool named = false;
        for (size_t i = 0; i < FY_ARRAY_SIZE(sc_known) && !named; i++)
            named = sc_entry_nr(&sc_known[i]) == nr;
        if (named)
            top = nr;
        else if (gap < 0 && nr > 0)
            gap = nr;
    }
    ck_assert_int_gt(gap, 0);
    ck_assert_int_lt(gap, top);
    const int through[] = { gap, top + 1, top + 60 };
    for (size_t t = 0; t < FY_ARRAY_SIZE(through); t++) {
        struct seccomp_program q = p;
        struct sock_filter *g = calloc(p.len + 3, sizeof(*g));
        ck_assert_ptr_nonnull(g);
        g[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        g[1] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)through[t], 0, 1);
        g[2] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        memcpy(g + 3, p.filter, p.len * sizeof(*g));
        q.filter = g;
        q.len = p.len + 3;
        ck_assert_msg(sc_self_check(&q, &pa, NULL) == FY_E_INTERNAL,
                      "number %d let through, and the self check passed", through[t]);
        free(g);
    }

    /* Everything let through unless a word the samples never vary has the
     * value they give it: the instruction pointer (a planted snapshot's
     * program did this and passed), or an argument the contract does not
     * decide the call by (unshare's second, clone's fourth, ioctl's third,
     * getpid's first). Each branch sits in front of the program, or only
     * on the path of the call it names. */
    struct { int nr; uint32_t off; } hidden[] = {
        { -1, offsetof(struct seccomp_data, instruction_pointer) },
        { -1, offsetof(struct seccomp_data, instruction_pointer) + 4 },
        { SYS_unshare, offsetof(struct seccomp_data, args[1]) },
        { SYS_clone, offsetof(struct seccomp_data, args[3]) },
        { SYS_ioctl, offsetof(struct seccomp_data, args[2]) },
        { SYS_getpid, offsetof(struct seccomp_data, args[0]) + 4 },
    };
    for (size_t t = 0; t < FY_ARRAY_SIZE(hidden); t++) {
        struct seccomp_program q = p;
        struct sock_filter *g = calloc(p.len + 5, sizeof(*g));
        ck_assert_ptr_nonnull(g);
        size_t n = 0;
        if (hidden[t].nr >= 0) { /* only on that call's path */
            g[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
            g[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)hidden[t].nr, 0, 3);
        }
        g[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, hidden[t].off);
        g[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, hidden[t].off == 8 ? 0x401000 : 0, 1, 0);
        g[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        memcpy(g + n, p.filter, p.len * sizeof(*g));
        q.filter = g;
        q.len = p.len + n;
        fy_error *e = NULL;
        ck_assert_msg(sc_self_check(&q, &pa, &e) == FY_E_INTERNAL,
                      "a branch on seccomp_data offset %u (call %d) passed the self check", hidden[t].off, hidden[t].nr);
        ck_assert_ptr_nonnull(strstr(fy_error_message(e), "which the contract does not examine"));
        fy_error_free(e);
        free(g);
    }
    sc_program_free(&p);
}
END_TEST

/* The saved form a probe snapshot carries: what was saved comes back byte
 * for byte, and a saved form that is changed in any way that matters (a
 * return, the foreign-architecture action, the class, the encoding) is
 * refused, so the store compiles the program instead. */
static char *resave(const char *saved, size_t insn, uint32_t k, const char *badarch) {
    struct seccomp_program p = {0};
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, saved, &p), 0);
    if (insn < p.len)
        ((struct sock_filter *)p.filter)[insn].k = k;
    char *out = sc_program_save(&p);
    ck_assert_ptr_nonnull(out);
    if (badarch)
        memcpy(out + 3, badarch, 8);
    sc_program_free(&p);
    return out;
}

START_TEST(test_saved_programs) {
    struct seccomp_program p = compile(FY_SECCOMP_GENERAL_BUILD, false), q;
    char *saved = sc_program_save(&p);
    ck_assert_ptr_nonnull(saved);
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, saved, &q), 0);
    ck_assert_uint_eq(q.len, p.len);
    ck_assert_int_eq(memcmp(q.filter, p.filter, p.len * sizeof(struct sock_filter)), 0);
    ck_assert_uint_eq(q.badarch, p.badarch);
    ck_assert_str_eq(q.name, "general-build");
    ck_assert(!q.notify);
    sc_program_free(&q);

    /* Another class, the notify variant, the init profile: each its own contract. */
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_NETWORKED_TEST, false, false, saved, &q), -1);
    ck_assert_ptr_null(q.filter);
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, true, false, saved, &q), -1);
    ck_assert_int_eq(sc_program_from_saved(0, false, true, saved, &q), -1);
    ck_assert_int_eq(sc_program_from_saved(99, false, false, saved, &q), -1);

    /* Every return changed to ALLOW (or from ALLOW to EPERM). */
    for (size_t i = 0; i < p.len; i++) {
        const struct sock_filter *f = &((const struct sock_filter *)p.filter)[i];
        if (f->code != (BPF_RET | BPF_K))
            continue;
        char *bad = resave(saved, i, f->k == SECCOMP_RET_ALLOW ? sc_ret_errno(EPERM) : SECCOMP_RET_ALLOW, NULL);
        ck_assert_msg(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, bad, &q) == -1,
                      "a saved program with return %zu changed was accepted", i);
        free(bad);
    }
    /* Foreign architectures allowed, or answered with an errno. */
    char *bad = resave(saved, SIZE_MAX, 0, "7fff0000");
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, bad, &q), -1);
    free(bad);
    bad = resave(saved, SIZE_MAX, 0, "00050001");
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, bad, &q), -1);
    free(bad);
    /* One instruction that allows everything; broken encodings; another version. */
    static const char *const junk[] = {
        "v1 80000000 BgAAAAAA/38=", "v1 80000000 ", "v1 80000000 !!!!", "v2 80000000 BgAAAAAA/38=",
        "v1 zz BgAAAAAA/38=", "", "v1",
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(junk); i++)
        ck_assert_msg(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, junk[i], &q) == -1,
                      "\"%s\" was accepted", junk[i]);
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, NULL, &q), -1);
    /* Cut short by one instruction. */
    struct seccomp_program shorter = p;
    shorter.len = p.len - 1;
    bad = sc_program_save(&shorter);
    ck_assert_int_eq(sc_program_from_saved(FY_SECCOMP_GENERAL_BUILD, false, false, bad, &q), -1);
    free(bad);
    free(saved);
    sc_program_free(&p);

    struct seccomp_program in;
    ck_assert_int_eq(sc_compile_init(&in, NULL), 0);
    saved = sc_program_save(&in);
    ck_assert_int_eq(sc_program_from_saved(0, false, true, saved, &q), 0);
    ck_assert_str_eq(q.name, "init");
    sc_program_free(&q);
    free(saved);
    sc_program_free(&in);
}
END_TEST

START_TEST(test_names) {
    char b[64];
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_X86_64, SYS_kexec_load, b, sizeof(b)), "kexec_load");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_I386, 21, b, sizeof(b)), "i386:mount");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_X86_64, 0x40000000 | 39, b, sizeof(b)), "x32:getpid");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_X86_64, 462, b, sizeof(b)), "mseal");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_X86_64, 1000, b, sizeof(b)), "syscall 1000");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_I386, 9999, b, sizeof(b)), "i386:syscall 9999");
    ck_assert_str_eq(sc_syscall_name(0x1234, 5, b, sizeof(b)), "arch 0x00001234:syscall 5");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_X86_64, SYS_kexec_load, b, 5), "kexe");
    ck_assert_str_eq(sc_syscall_name(AUDIT_ARCH_X86_64, 1, NULL, 0), "");

    const uint32_t g = FY_SECCOMP_GENERAL_BUILD, n = FY_SECCOMP_NETWORKED_TEST;
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, SYS_mount), 1);
    ck_assert_int_eq(sc_is_violation(n, AUDIT_ARCH_X86_64, SYS_kexec_load), 1);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, SYS_ioctl), 1);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, 467 /* open_tree_attr */), 1);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, SYS_getpid), 0);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, SYS_bpf), 0);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, SYS_ptrace), 0);
    /* The ptrace family is noted in general-build only, native calls only. */
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, SYS_ptrace), 1);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, SYS_process_vm_readv), 1);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, SYS_pidfd_getfd), 1);
    ck_assert_int_eq(sc_is_noted(n, AUDIT_ARCH_X86_64, SYS_ptrace), 0);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, SYS_mount), 0);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, SYS_getpid), 0);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, 0x40000000 | SYS_ptrace), 0);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_I386, 26 /* i386 ptrace */), 0);
    ck_assert_int_eq(sc_is_noted(g, AUDIT_ARCH_X86_64, -1), 0);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, 1000), 0);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, -1), 0);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_X86_64, 0x40000000 | 39), 1);
    ck_assert_int_eq(sc_is_violation(g, AUDIT_ARCH_I386, 20), 1);
    ck_assert_int_eq(sc_is_violation(99, AUDIT_ARCH_X86_64, SYS_mount), 0);
}
END_TEST

static void run_allowed(uint32_t cls, bool notify, uid_t uid) {
    struct seccomp_program p = compile(cls, notify);
    g_cls = cls;
    struct spec s = { &p, cls, uid, NULL, body_allowed_and_quiet };
    struct run r;
    run_child(&s, &r);
    sc_program_free(&p);
    assert_clean(&r, "allowed and quiet denials");
    ck_assert_msg(r.got_listener == notify, "listener fd: %d", r.got_listener);
    /* Quiet but for the ptrace family's denials in general-build, which
     * are noted (body_allowed_and_quiet makes two: ptrace and
     * process_vm_readv) where violations are notified. */
    size_t noted = cls == FY_SECCOMP_GENERAL_BUILD && notify ? 2 : 0;
    ck_assert_msg(r.n_notifs == noted, "%zu notifications (the first for %s), want %zu", r.n_notifs,
                  r.n_notifs ? r.notifs[0].name : "", noted);
    for (size_t i = 0; i < r.n_notifs; i++)
        ck_assert_msg(r.notifs[i].noted && !r.notifs[i].violation, "notification for %s not a noted denial",
                      r.notifs[i].name);
}

START_TEST(test_general_build_allowed_and_quiet) {
    run_allowed(FY_SECCOMP_GENERAL_BUILD, true, (uid_t)-1);
    run_allowed(FY_SECCOMP_GENERAL_BUILD, false, (uid_t)-1);
}
END_TEST

START_TEST(test_networked_test_allowed_and_quiet) {
    run_allowed(FY_SECCOMP_NETWORKED_TEST, true, (uid_t)-1);
    run_allowed(FY_SECCOMP_NETWORKED_TEST, false, (uid_t)-1);
}
END_TEST

START_TEST(test_unprivileged_child) {
    if (geteuid() != 0)
        return; /* the runs above already were unprivileged */
    run_allowed(FY_SECCOMP_GENERAL_BUILD, true, 65534);
}
END_TEST

START_TEST(test_control_without_filter) {
    /* The denials above are the filter's: without it the same calls behave otherwise. */
    struct spec s = { NULL, 0, (uid_t)-1, NULL, body_control };
    struct run r;
    run_child(&s, &r);
    assert_clean(&r, "control");
}
END_TEST

static void run_violations(uint32_t cls) {
    g_have_i386 = probe_i386();
    struct seccomp_program p = compile(cls, true);
    struct spec s = { &p, cls, (uid_t)-1, NULL, body_violations };
    struct run r;
    run_child(&s, &r);
    sc_program_free(&p);
    assert_clean(&r, "violations");
    ck_assert(r.got_listener);
    static const char *const want[] = { "mount", "kexec_load", "init_module", "ioctl", "ioctl",
                                        "ioctl", "x32:getpid", "i386:mount" };
    size_t nwant = FY_ARRAY_SIZE(want) - (g_have_i386 ? 0 : 1);
    char got[1024] = "";
    for (size_t i = 0; i < r.n_notifs; i++) {
        strncat(got, r.notifs[i].name, sizeof(got) - strlen(got) - 2);
        strncat(got, " ", sizeof(got) - strlen(got) - 1);
    }
    ck_assert_msg(r.n_notifs == nwant, "notifications: %s", got);
    for (size_t i = 0; i < nwant; i++) {
        ck_assert_msg(strcmp(r.notifs[i].name, want[i]) == 0, "notification %zu: %s, want %s (all: %s)",
                      i, r.notifs[i].name, want[i], got);
        ck_assert_msg(r.notifs[i].violation == 1, "%s not a violation", r.notifs[i].name);
    }
    ck_assert_uint_eq(r.notifs[0].arch, AUDIT_ARCH_X86_64);
    ck_assert_int_eq(r.notifs[0].nr, SYS_mount);
    ck_assert_int_eq(r.notifs[6].nr, 0x40000000 | SYS_getpid);
    if (g_have_i386) {
        ck_assert_uint_eq(r.notifs[7].arch, AUDIT_ARCH_I386);
        ck_assert_int_eq(r.notifs[7].nr, I386_MOUNT);
    } else {
        fprintf(stderr, "i386 emulation unavailable: int 0x80 not tested\n");
    }
}

START_TEST(test_violations_notify_general) { run_violations(FY_SECCOMP_GENERAL_BUILD); }
END_TEST

START_TEST(test_violations_notify_networked) { run_violations(FY_SECCOMP_NETWORKED_TEST); }
END_TEST

START_TEST(test_violations_kill) {
    bool i386 = probe_i386();
    struct seccomp_program p = compile(FY_SECCOMP_GENERAL_BUILD, false);
    static const char *const what[] = { "mount", "kexec_load", "init_module", "TIOCSTI",
                                        "TIOCSTI | 1 << 32", "TIOCLINUX", "pivot_root",
                                        "open_by_handle_at", "x32 getpid", "i386 getpid" };
    for (int i = 0; i < (int)FY_ARRAY_SIZE(what); i++) {
        if (i == 9 && !i386)
            continue;
        g_which = i;
        struct spec s = { &p, FY_SECCOMP_GENERAL_BUILD, (uid_t)-1, NULL, body_one_violation };
        struct run r;
        run_child(&s, &r);
        assert_sigsys(&r, what[i]);
        ck_assert(!r.got_listener);
    }
    sc_program_free(&p);
}
END_TEST

START_TEST(test_init_profile) {
    struct seccomp_program p;
    ck_assert_int_eq(sc_compile_init(&p, NULL), 0);
    struct spec s = { &p, 0, (uid_t)-1, init_before, body_init };
    struct run r;
    run_child(&s, &r);
    assert_clean(&r, "init");

    s = (struct spec){ &p, 0, (uid_t)-1, NULL, body_init_open };
    run_child(&s, &r);
    assert_sigsys(&r, "init: openat");
    s = (struct spec){ &p, 0, (uid_t)-1, NULL, body_init_mmap };
    run_child(&s, &r);
    assert_sigsys(&r, "init: mmap");
#if defined(__x86_64__)
    s = (struct spec){ &p, 0, (uid_t)-1, NULL, body_init_x32 };
    run_child(&s, &r);
    assert_sigsys(&r, "init: x32");
#endif
    sc_program_free(&p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seccomp");
    TCase *tc = tcase_create("compile");
    /* (check's default of 4 s: the reference comparison ran past it under
     * ASan with the suite's three lanes on two CPUs) */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_compile_api);
    tcase_add_test(tc, test_compile_is_fast);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_self_check_catches_mutations);
    tcase_add_test(tc, test_interpreter_matches_reference);
    tcase_add_test(tc, test_saved_programs);
    suite_add_tcase(s, tc);
    tc = tcase_create("kernel");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_general_build_allowed_and_quiet);
    tcase_add_test(tc, test_networked_test_allowed_and_quiet);
    tcase_add_test(tc, test_unprivileged_child);
    tcase_add_test(tc, test_control_without_filter);
    tcase_add_test(tc, test_violations_notify_general);
    tcase_add_test(tc, test_violations_notify_networked);
    tcase_add_test(tc, test_violations_kill);
    tcase_add_test(tc, test_init_profile);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
