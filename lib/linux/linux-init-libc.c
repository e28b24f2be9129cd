/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard-init's C library: the handful of calls linux-child.c makes,
 * each one raw system call, for a freestanding static program of a few
 * pages (a static glibc program is 700 KiB and takes four times as long to
 * start). The prototypes are glibc's (its headers are used unchanged);
 * errno is ours. Single-threaded by construction: init and the processes
 * it forks never run two threads. x86-64 and aarch64 only (meson builds
 * forgeyard-init there; elsewhere the init is a copy of the host). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
static long sc6(long n, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call fy_init_entry\n"
        "  hlt\n");
#elif defined(__aarch64__)
static long sc6(long n, long a, long b, long c, long d, long e, long f) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    return x0;
}
__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  mov x29, #0\n"
        "  mov x30, #0\n"
        "  mov x0, sp\n"
        "  and x1, x0, #-16\n"
        "  mov sp, x1\n"
        "  bl fy_init_entry\n"
        "  brk #0\n");
#else
/* Not built here (lib/linux/meson.build): the init is a fork of the host. */
static long sc6(long n, long a, long b, long c, long d, long e, long f) {
    (void)n, (void)a, (void)b, (void)c, (void)d, (void)e, (void)f;
    return -ENOSYS;
}
#endif

static int fy_errno;
int *__errno_location(void) { return &fy_errno; }

static long ret(long r) {
    if (r < 0 && r > -4096) {
        fy_errno = (int)-r;
        return -1;
    }
    return r;
}
#define S0(n) ret(sc6((n), 0, 0, 0, 0, 0, 0))
#define S1(n, a) ret(sc6((n), (long)(a), 0, 0, 0, 0, 0))
#define S2(n, a, b) ret(sc6((n), (long)(a), (long)(b), 0, 0, 0, 0))
#define S3(n, a, b, c) ret(sc6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0))
#define S4(n, a, b, c, d) ret(sc6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0))
#define S5(n, a, b, c, d, e) ret(sc6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0))

long syscall(long n, ...) {
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long),
         e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    return ret(sc6(n, a, b, c, d, e, f));
}

/* ---- memory and strings (the compiler may also emit calls to these) ---- */
void *memcpy(void *d, const void *s, size_t n) {
    unsigned char *o = d;
    const unsigned char *i = s;
    while (n--)
        *o++ = *i++;
    return d;
}
void *memmove(void *d, const void *s, size_t n) {
    unsigned char *o = d;
    const unsigned char *i = s;
    if (o < i)
        while (n--)
            *o++ = *i++;
    else
        while (n--)
            o[n] = i[n];
    return d;
}
void *memset(void *d, int c, size_t n) {
    unsigned char *o = d;
    while (n--)
        *o++ = (unsigned char)c;
    return d;
}
int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x - *y;
    return 0;
}
size_t strlen(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* ---- files ---- */
int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, int) : 0;
    va_end(ap);
    return (int)S4(SYS_openat, AT_FDCWD, path, flags, mode);
}
int close(int fd) { return (int)S1(SYS_close, fd); }
ssize_t read(int fd, void *b, size_t n) { return S3(SYS_read, fd, b, n); }
ssize_t write(int fd, const void *b, size_t n) { return S3(SYS_write, fd, b, n); }
ssize_t pread64(int fd, void *b, size_t n, off_t o) { return S4(SYS_pread64, fd, b, n, o); }
int dup2(int a, int b) {
    if (a == b)
        return S2(SYS_fcntl, a, F_GETFD) < 0 ? -1 : b;
    return (int)S3(SYS_dup3, a, b, 0);
}
int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    return (int)S3(SYS_fcntl, fd, cmd, arg);
}
int ioctl(int fd, unsigned long req, ...) {
    va_list ap;
    va_start(ap, req);
    long arg = va_arg(ap, long);
    va_end(ap);
    return (int)S3(SYS_ioctl, fd, req, arg);
}
int fstat64(int fd, struct stat64 *st) { return (int)S4(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH); }
int lstat64(const char *p, struct stat64 *st) { return (int)S4(SYS_newfstatat, AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW); }
int mkdir(const char *p, mode_t m) { return (int)S3(SYS_mkdirat, AT_FDCWD, p, m); }
int rmdir(const char *p) { return (int)S3(SYS_unlinkat, AT_FDCWD, p, AT_REMOVEDIR); }
int symlink(const char *t, const char *p) { return (int)S3(SYS_symlinkat, t, AT_FDCWD, p); }
int chdir(const char *p) { return (int)S1(SYS_chdir, p); }
int fchdir(int fd) { return (int)S1(SYS_fchdir, fd); }
int chmod(const char *p, mode_t m) { return (int)S4(SYS_fchmodat, AT_FDCWD, p, m, 0); }
mode_t umask(mode_t m) { return (mode_t)S4(SYS_umask, m, 0, 0, 0); }
int fchmod(int fd, mode_t m) { return (int)S2(SYS_fchmod, fd, m); }
int chown(const char *p, uid_t u, gid_t g) { return (int)S5(SYS_fchownat, AT_FDCWD, p, u, g, 0); }
int fchown(int fd, uid_t u, gid_t g) { return (int)S3(SYS_fchown, fd, u, g); }
int mount(const char *s, const char *t, const char *type, unsigned long f, const void *d) {
    return (int)S5(SYS_mount, s, t, type, f, d);
}
int umount2(const char *t, int f) { return (int)S2(SYS_umount2, t, f); }
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    long r = sc6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
    if (r < 0 && r > -4096) {
        fy_errno = (int)-r;
        return (void *)-1;
    }
    return (void *)r;
}
int munmap(void *addr, size_t len) { return (int)S2(SYS_munmap, addr, len); }

/* ---- processes, ids, namespaces ---- */
pid_t getpid(void) { return (pid_t)S0(SYS_getpid); }
pid_t getppid(void) { return (pid_t)S0(SYS_getppid); }
pid_t setsid(void) { return (pid_t)S0(SYS_setsid); }
int kill(pid_t p, int s) { return (int)S2(SYS_kill, p, s); }
int execve(const char *p, char *const av[], char *const ev[]) { return (int)S3(SYS_execve, p, av, ev); }
int prctl(int op, ...) {
    va_list ap;
    va_start(ap, op);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long);
    va_end(ap);
    return (int)S5(SYS_prctl, op, a, b, c, d);
}
int unshare(int f) { return (int)S1(SYS_unshare, f); }
int setns(int fd, int t) { return (int)S2(SYS_setns, fd, t); }
int sethostname(const char *n, size_t l) { return (int)S2(SYS_sethostname, n, l); }
int getrlimit64(__rlimit_resource_t r, struct rlimit64 *l) { return (int)S4(SYS_prlimit64, 0, r, 0, l); }
int setrlimit64(__rlimit_resource_t r, const struct rlimit64 *l) { return (int)S4(SYS_prlimit64, 0, r, l, 0); }
int sched_getaffinity(pid_t p, size_t n, cpu_set_t *s) {
    long r = S3(SYS_sched_getaffinity, p, n, s);
    if (r < 0)
        return -1;
    if ((size_t)r < n)
        memset((char *)s + r, 0, n - (size_t)r);
    return 0;
}
int sched_setaffinity(pid_t p, size_t n, const cpu_set_t *s) { return (int)S3(SYS_sched_setaffinity, p, n, s); }
int __sched_cpucount(size_t n, const cpu_set_t *s) {
    int c = 0;
    const unsigned char *b = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++)
        for (unsigned v = b[i]; v; v &= v - 1)
            c++;
    return c;
}

/* ---- time ---- */
int clock_gettime(clockid_t c, struct timespec *t) { return (int)S2(SYS_clock_gettime, c, t); }
int nanosleep(const struct timespec *r, struct timespec *rem) { return (int)S2(SYS_nanosleep, r, rem); }

/* ---- signals (the kernel's 64-bit sets; glibc's larger sigset_t holds them first) ---- */
int sigemptyset(sigset_t *s) {
    memset(s, 0, sizeof(*s));
    return 0;
}
int sigfillset(sigset_t *s) {
    memset(s, 0, sizeof(*s));
    memset(s, 0xff, 8);
    return 0;
}
int sigaddset(sigset_t *s, int sig) {
    if (sig < 1 || sig > 64) {
        fy_errno = EINVAL;
        return -1;
    }
    ((unsigned char *)s)[(sig - 1) / 8] |= (unsigned char)(1u << ((sig - 1) % 8));
    return 0;
}
int sigprocmask(int how, const sigset_t *set, sigset_t *old) { return (int)S4(SYS_rt_sigprocmask, how, set, old, 8); }
int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *t) {
    return (int)S4(SYS_rt_sigtimedwait, set, info, t, 8);
}
struct k_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};
/* Only SIG_DFL and SIG_IGN are ever installed: no handler, so no restorer. */
int sigaction(int sig, const struct sigaction *sa, struct sigaction *old) {
    struct k_sigaction k = {0};
    if (sa) {
        if (sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN) {
            fy_errno = EINVAL;
            return -1;
        }
        k.handler = sa->sa_handler;
        k.flags = (unsigned long)sa->sa_flags & ~(unsigned long)SA_SIGINFO;
        memcpy(&k.mask, &sa->sa_mask, 8);
    }
    (void)old;
    return (int)S4(SYS_rt_sigaction, sig, sa ? &k : NULL, NULL, 8);
}
int __libc_current_sigrtmax(void) { return 64; }

/* ---- sockets ---- */
int socket(int d, int t, int p) { return (int)S3(SYS_socket, d, t, p); }
int socketpair(int d, int t, int p, int sv[2]) { return (int)S4(SYS_socketpair, d, t, p, sv); }
ssize_t sendmsg(int fd, const struct msghdr *m, int f) { return S3(SYS_sendmsg, fd, m, f); }
ssize_t recvmsg(int fd, struct msghdr *m, int f) { return S3(SYS_recvmsg, fd, m, f); }
