/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helpers linux-probe.c and vm/vm-probe.c share (see
 * linux-probe-util.h): one copy of the errno names, the deadline arithmetic,
 * the program lookup and the bounded wait-then-SIGKILL of a child. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "linux-probe-util.h"
#include "linux-syscall.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
const char *pu_ename(int e) {
    const char *s = strerrorname_np(e);
    return s ? s : "unknown errno";
}

const char *pu_edesc(int e) {
    const char *s = strerrordesc_np(e);
    return s ? s : "unknown error";
}
#else
/* Without glibc >= 2.32 (strerrorname_np, strerrordesc_np): placeholders. */
const char *pu_ename(int e) {
    (void)e;
    return "errno";
}

const char *pu_edesc(int e) {
    (void)e;
    return "see errno";
}
#endif

uint64_t pu_deadline_after_ms(int ms) {
    return util_now_usec() + (uint64_t)ms * 1000u;
}

int pu_ms_left(uint64_t deadline) {
    uint64_t now = util_now_usec();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999) / 1000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

void pu_sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

bool pu_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Whether dir is one of the entries of the colon-separated list. */
static bool in_path_list(const char *list, const char *dir) {
    size_t dl = strlen(dir);
    for (const char *p = list; p && *p;) {
        const char *end = strchrnul(p, ':');
        if ((size_t)(end - p) == dl && memcmp(p, dir, dl) == 0)
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* The system directories of both probes: the Linux probe's helper
 * programs (crun, runc, nft, pasta, bwrap) and the VM probe's VMMs (QEMU,
 * Firecracker, cloud-hypervisor), which some distributions install in
 * /usr/libexec. */
static const char *const search_fallback[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                               "/usr/bin", "/sbin", "/bin", "/usr/libexec" };

int pu_search_dirs(pu_dir_fn fn, void *arg) {
    const char *path = getenv("PATH");
    size_t idx = 0;
    int r;
    for (const char *p = path; p && *p;) {
        const char *end = strchrnul(p, ':');
        size_t n = (size_t)(end - p);
        if (n > 0 && p[0] == '/' && n < PATH_MAX - NAME_MAX - 2 && (r = fn(p, n, idx++, arg)) != 0)
            return r;
        p = *end ? end + 1 : end;
    }
    for (size_t i = 0; i < FY_ARRAY_SIZE(search_fallback); i++) {
        if (in_path_list(path, search_fallback[i]))
            continue; /* looked at already */
        if ((r = fn(search_fallback[i], strlen(search_fallback[i]), idx++, arg)) != 0)
            return r;
    }
    return 0;
}

/* dir/name into buf (PATH_MAX); false when it does not fit. */
static bool join(char *buf, const char *dir, size_t len, const char *name) {
    if (len + strlen(name) + 2 > PATH_MAX)
        return false;
    memcpy(buf, dir, len);
    buf[len] = '/';
    strcpy(buf + len + 1, name);
    return true;
}

struct find_arg {
    const char *name;
    char *found;
};

static int find_in(const char *dir, size_t len, size_t idx, void *arg) {
    (void)idx;
    struct find_arg *a = arg;
    char buf[PATH_MAX];
    struct stat st;
    if (join(buf, dir, len, a->name) && stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) {
        a->found = util_strdup(buf);
        return 1;
    }
    return 0;
}

char *pu_find_program(const char *name) {
    struct find_arg a = {name, NULL};
    pu_search_dirs(find_in, &a);
    return a.found;
}

/* ---- the programs a persisted probe snapshot depends on ---- */

/* When this thread last wrote the search directories into a key: a
 * snapshot is recorded only if nothing it depends on changed since shortly
 * before (pu_programs_record). */
static __thread struct timespec key_time;

/* The part of a timestamp compared: seconds and nanoseconds. */
#define TS(t) (long long)(t).tv_sec, (long)(t).tv_nsec

static int key_dir(const char *dir, size_t len, size_t idx, void *arg) {
    struct strbuf *key = arg;
    char buf[PATH_MAX];
    struct stat st;
    memcpy(buf, dir, len);
    buf[len] = '\0';
    /* (the name escaped: a PATH entry may hold any byte but NUL) */
    strbuf_printf(key, "search-dir %zu ", idx);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)dir[i] <= ' ' || dir[i] == '\\' || dir[i] == 0x7f)
            strbuf_printf(key, "\\x%02x", (unsigned char)dir[i]);
        else
            strbuf_appendn(key, dir + i, 1);
    if (stat(buf, &st) == 0)
        strbuf_printf(key, " %llu %llu %o %lld.%09ld %lld.%09ld\n", (unsigned long long)st.st_dev,
                      (unsigned long long)st.st_ino, (unsigned)st.st_mode, TS(st.st_mtim), TS(st.st_ctim));
    else
        strbuf_printf(key, " - %d\n", errno);
    return 0;
}

int pu_programs_key(struct strbuf *key, const char *const *names, size_t n) {
    if (!(key->buf && strstr(key->buf, "\nsearch-dir "))) {
        clock_gettime(CLOCK_REALTIME, &key_time);
        strbuf_append(key, "search-path\n");
        pu_search_dirs(key_dir, key);
    }
    for (size_t i = 0; i < n; i++)
        strbuf_printf(key, "program %s\n", names[i]);
    return key->oom ? FY_E_NOMEM : 0;
}

/* What a stat says about a program file, compared whole. */
static void stat_line(struct strbuf *t, const struct stat *st) {
    strbuf_printf(t, " %llu %llu %o %u %u %lld %lld.%09ld %lld.%09ld", (unsigned long long)st->st_dev,
                  (unsigned long long)st->st_ino, (unsigned)st->st_mode, (unsigned)st->st_uid, (unsigned)st->st_gid,
                  (long long)st->st_size, TS(st->st_mtim), TS(st->st_ctim));
}

static bool ts_ge(const struct timespec *a, const struct timespec *b) {
    return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* Whether t lies in [since, until]: a change that soon before (or after)
 * the key may repeat without a new timestamp. A timestamp further in the
 * future (a clock set back, a guest booted without a real-time clock, an
 * archive from a machine whose clock ran ahead) is not: any later change
 * stamps the clock's now, which differs from it. */
static bool recent(const struct timespec *t, const struct timespec *since, const struct timespec *until) {
    return ts_ge(t, since) && ts_ge(until, t);
}

struct record_arg {
    const char *name;
    struct strbuf *table;
    struct timespec since, until;
    bool racy;
};

/* One directory of one program's search, as pu_find_program does it, with
 * every entry of that name that exists written down: the one found ("found"),
 * one skipped for its type or mode ("entry"), one stat cannot follow
 * ("broken": a dangling link, a loop, no permission). Where no entry of the
 * name exists nothing is written: the directory's own stat in the key stands
 * for its names. */
static int record_in(const char *dir, size_t len, size_t idx, void *arg) {
    struct record_arg *a = arg;
    char buf[PATH_MAX];
    struct stat st, dst;
    if (!join(buf, dir, len, a->name))
        return 0;
    /* The directory, again: changed since the key was made, nothing is saved. */
    char d[PATH_MAX];
    memcpy(d, dir, len);
    d[len] = '\0';
    if (stat(d, &dst) == 0 &&
        (recent(&dst.st_mtim, &a->since, &a->until) || recent(&dst.st_ctim, &a->since, &a->until)))
        a->racy = true;
    if (stat(buf, &st) == 0) {
        bool ok = S_ISREG(st.st_mode) && access(buf, X_OK) == 0;
        if (recent(&st.st_mtim, &a->since, &a->until) || recent(&st.st_ctim, &a->since, &a->until))
            a->racy = true;
        strbuf_printf(a->table, "verify %s %s %zu", a->name, ok ? "found" : "entry", idx);
        stat_line(a->table, &st);
        strbuf_append(a->table, "\n");
        return ok;
    }
    int e = errno;
    if (e != ENOENT || lstat(buf, &st) == 0)
        strbuf_printf(a->table, "verify %s broken %zu %d\n", a->name, idx, e);
    return 0;
}

/* The names the key declares ("program NAME" lines), one by one. */
static const char *next_program(const char *key, char *name, size_t size) {
    const char *p = key;
    while ((p = strstr(p, "\nprogram "))) {
        p += 9;
        const char *end = strchr(p, '\n');
        if (!end)
            return NULL;
        if ((size_t)(end - p) < size) {
            memcpy(name, p, (size_t)(end - p));
            name[end - p] = '\0';
            return end;
        }
    }
    return NULL;
}

#define PU_RACY_SEC 2

int pu_programs_record(const char *key, struct strbuf *table) {
    if (!key_time.tv_sec)
        return 1; /* no key made on this thread: nothing to compare with */
    struct record_arg a = {.table = table, .since = key_time, .until = key_time};
    /* Timestamps are coarse (a clock tick; a second on some file systems):
     * anything changed this shortly before the key may change again
     * without a new timestamp. */
    a.since.tv_sec -= PU_RACY_SEC;
    a.until.tv_sec += PU_RACY_SEC;
    char name[NAME_MAX + 1];
    for (const char *p = key; (p = next_program(p, name, sizeof name));) {
        a.name = name;
        pu_search_dirs(record_in, &a);
        strbuf_printf(table, "verify %s end\n", name);
    }
    if (table->oom)
        return FY_E_NOMEM;
    return a.racy ? 1 : 0;
}

/* The search directories, collected for verify lines (by index). */
struct dir_list {
    size_t n;
    struct { const char *p; size_t len; } d[256];
};

static int collect_dir(const char *dir, size_t len, size_t idx, void *arg) {
    struct dir_list *l = arg;
    if (idx >= FY_ARRAY_SIZE(l->d))
        return 1;
    l->d[idx].p = dir;
    l->d[idx].len = len;
    l->n = idx + 1;
    return 0;
}

/* Whether one "verify" line (NUL-terminated) still holds. */
static bool verify_line(const char *l, const struct dir_list *dirs, size_t *ends) {
    char name[NAME_MAX + 1], what[16];
    int off = 0;
    if (sscanf(l, "verify %255s %15s%n", name, what, &off) != 2 || off <= 0)
        return false;
    if (strcmp(what, "end") == 0) {
        (*ends)++;
        return l[off] == '\0';
    }
    size_t idx;
    int o2 = 0;
    if (sscanf(l + off, " %zu%n", &idx, &o2) != 1 || idx >= dirs->n)
        return false;
    const char *rest = l + off + o2;
    char buf[PATH_MAX];
    if (!join(buf, dirs->d[idx].p, dirs->d[idx].len, name))
        return false;
    struct stat st;
    if (strcmp(what, "broken") == 0) {
        int e = atoi(rest);
        return stat(buf, &st) < 0 && errno == e;
    }
    bool found = strcmp(what, "found") == 0;
    if (!found && strcmp(what, "entry") != 0)
        return false;
    if (stat(buf, &st) < 0)
        return false;
    bool ok = S_ISREG(st.st_mode) && access(buf, X_OK) == 0;
    if (ok != found)
        return false;
    struct strbuf now;
    strbuf_init(&now);
    stat_line(&now, &st);
    bool same = !now.oom && strcmp(now.buf, rest) == 0;
    strbuf_free(&now);
    return same;
}

/* fd + 1 in each used slot, 0 in a free one. */
static _Atomic int fork_close[PU_FORK_CLOSE_MAX];

void pu_fork_close_add(int fd) {
    for (size_t i = 0; fd >= 0 && i < PU_FORK_CLOSE_MAX; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&fork_close[i], &free_slot, fd + 1))
            return;
    }
}

void pu_fork_close_del(int fd) {
    for (size_t i = 0; fd >= 0 && i < PU_FORK_CLOSE_MAX; i++) {
        int used = fd + 1;
        if (atomic_compare_exchange_strong(&fork_close[i], &used, 0))
            return;
    }
}

void pu_fork_close_fd(int *fd) {
    if (*fd >= 0) {
        pu_fork_close_del(*fd);
        close(*fd);
    }
    *fd = -1;
}

static void fork_close_child(void) {
    for (size_t i = 0; i < PU_FORK_CLOSE_MAX; i++) {
        int v = atomic_exchange(&fork_close[i], 0);
        if (v > 0)
            close(v - 1);
    }
}

static pthread_mutex_t programs_mu = PTHREAD_MUTEX_INITIALIZER;

static void programs_fork_child(void) {
    util_mutex_reclaim(&programs_mu);
    fork_close_child();
}

__attribute__((constructor)) static void programs_register_fork(void) { util_on_fork_child(programs_fork_child); }

bool pu_programs_verify(const char *key, const char *table, size_t len) {
    static struct dir_list dirs; /* (256 entries: not on the stack; programs_mu) */
    char name[NAME_MAX + 1];
    size_t declared = 0, ends = 0;
    for (const char *p = key; (p = next_program(p, name, sizeof name));)
        declared++;
    pthread_mutex_lock(&programs_mu);
    dirs.n = 0;
    pu_search_dirs(collect_dir, &dirs);
    bool ok = true;
    char line[PATH_MAX + 512];
    for (size_t i = 0; ok && i < len;) {
        const char *nl = memchr(table + i, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - (table + i)) : len - i;
        if (!nl || ll >= sizeof line) {
            ok = false;
            break;
        }
        memcpy(line, table + i, ll);
        line[ll] = '\0';
        ok = verify_line(line, &dirs, &ends);
        i += ll + 1;
    }
    pthread_mutex_unlock(&programs_mu);
    return ok && ends == declared;
}

bool pu_wait_until(struct pu_proc *p, uint64_t deadline) {
    for (;;) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG | __WALL);
        if (r == p->pid) {
            p->reaped = true;
            p->status = st;
            return true;
        }
        if (r < 0 && errno == ECHILD) {
            /* Someone else reaped it (a host waitpid(-1)); nothing left. */
            p->reaped = true;
            p->status = -1;
            return true;
        }
        int left = pu_ms_left(deadline);
        if (left <= 0)
            return false;
        if (p->pidfd >= 0) {
            struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
            (void)poll(&pfd, 1, left);
        } else {
            pu_sleep_ms(left < 2 ? left : 2);
        }
    }
}

bool pu_finish(struct pu_proc *p, uint64_t deadline, bool *ret_killed) {
    bool killed = false;
    if (p->pid > 0 && !pu_wait_until(p, deadline)) {
        if (p->pidfd >= 0)
            (void)sys_pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
        else
            (void)kill(p->pid, SIGKILL);
        killed = true;
        (void)pu_wait_until(p, pu_deadline_after_ms(PU_KILL_GRACE_MS));
    }
    if (ret_killed)
        *ret_killed = killed;
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
    return p->pid <= 0 || p->reaped;
}

/* The grandchild of pu_spawn: raw system calls only. */
__attribute__((noreturn)) static void spawn_exec(const char *const *argv, char *const *envp, int in, int out,
                                                int errfd, pid_t middle) {
    int e = 0;
    /* Dies with the middle process (which the caller SIGKILLs at its
     * deadline), and never outlives a middle that died before this. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || syscall(SYS_getppid) != middle)
        syscall(SYS_exit_group, 127);
    if (syscall(SYS_dup2, in, 0) < 0 || syscall(SYS_dup2, out, 1) < 0 || syscall(SYS_dup2, out, 2) < 0)
        e = errno;
    if (!e) {
        /* Everything above the standard streams goes at exec (the error
         * pipe is CLOEXEC); close_range where it exists. */
        if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
            for (int fd = 3; fd < 1024; fd++)
                if (fd != errfd)
                    (void)syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        syscall(SYS_execve, argv[0], argv, envp);
        e = errno;
    }
    (void)syscall(SYS_write, errfd, &e, sizeof e);
    syscall(SYS_exit_group, 127);
    __builtin_unreachable();
}

/* The middle process of pu_spawn (raw system calls only): a child of the
 * host that never executes anything, so its exit signal stays 0. The
 * kernel gives every process that executes a program SIGCHLD as its exit
 * signal (de_thread), so the program runs one level down, as our child,
 * and we end the way it ended. */
__attribute__((noreturn)) static void spawn_middle(const char *const *argv, char *const *envp, int fd_in,
                                                  int fd_out, int errfd) {
    for (int sig = 1; sig < 65; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(sig, &sa, NULL);
    }
    int in = fd_in > 2 ? fd_in : (int)syscall(SYS_fcntl, fd_in, F_DUPFD_CLOEXEC, 3);
    int out = fd_out > 2 ? fd_out : (int)syscall(SYS_fcntl, fd_out, F_DUPFD_CLOEXEC, 3);
    int efd = errfd > 2 ? errfd : (int)syscall(SYS_fcntl, errfd, F_DUPFD_CLOEXEC, 3);
    pid_t self = (pid_t)syscall(SYS_getpid);
    pid_t pid = in < 0 || out < 0 || efd < 0 ? -1 : sys_fork();
    if (pid == 0)
        spawn_exec(argv, envp, in, out, efd, self);
    if (pid < 0) {
        int e = errno;
        (void)syscall(SYS_write, efd, &e, sizeof e);
        syscall(SYS_exit_group, 127);
    }
    pu_end_as_child(pid, self, 127);
}

void pu_end_as_child(pid_t pid, pid_t self, int wait_failed) {
    /* Nothing of ours stays open: the caller sees EOF on the program's
     * output as soon as the program is done with it. */
    if (syscall(SYS_close_range, 0U, ~0U, 0U) < 0)
        for (int fd = 0; fd < 1024; fd++)
            (void)syscall(SYS_close, fd);
    int st = 0;
    while (syscall(SYS_wait4, pid, &st, __WALL, NULL) < 0)
        if (errno != EINTR)
            syscall(SYS_exit_group, wait_failed);
    pu_end_like(st, self);
}

void pu_end_like(int st, pid_t self) {
    if (WIFSIGNALED(st)) {
        /* End by the same signal, without a core dump of our own. */
        struct rlimit nocore = {0, 0};
        (void)syscall(SYS_setrlimit, RLIMIT_CORE, &nocore);
        sigset_t none;
        sigemptyset(&none);
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        (void)syscall(SYS_kill, self, WTERMSIG(st));
        syscall(SYS_kill, self, SIGKILL);
    }
    syscall(SYS_exit_group, WEXITSTATUS(st));
    __builtin_unreachable();
}

int pu_spawn(const char *const *argv, char *const *envp, int fd_in, int fd_out, struct pu_proc *p) {
    memset(p, 0, sizeof *p);
    p->pid = -1;
    p->pidfd = -1;
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0)
        return errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = sys_fork_quiet_pidfd(&pidfd);
    if (pid == 0) {
        syscall(SYS_close, ep[0]);
        spawn_middle(argv, envp, fd_in, fd_out, ep[1]);
    }
    int fork_err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(ep[1]);
    if (pid < 0) {
        close(ep[0]);
        return fork_err;
    }
    p->pid = pid;
    p->pidfd = pidfd;
    int child_err = 0;
    ssize_t n;
    while ((n = read(ep[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
        ;
    close(ep[0]);
    if (n == (ssize_t)sizeof child_err) {
        (void)pu_finish(p, pu_deadline_after_ms(PU_KILL_GRACE_MS), NULL);
        return child_err ? child_err : EIO;
    }
    return 0;
}

bool pu_root_in_all_ids(void) {
    uid_t r = 1, e = 1, s = 1;
    return syscall(SYS_getresuid, &r, &e, &s) == 0 && r == 0 && e == 0 && s == 0;
}

int pu_read_small(const char *path, char *buf, size_t size) {
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len + 1 < size) {
        ssize_t r = read(fd, buf + len, size - len - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    return 0;
}

uint64_t pu_proc_starttime(pid_t pid) { return pu_proc_stat_start(pid, NULL); }

/* /proc/PID/stat into buf; what follows the command name (" S ppid ..."),
 * or NULL. The name may hold spaces and parentheses: past the last ')'. */
static const char *proc_stat_rest(pid_t pid, char *buf, size_t size) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (pu_read_small(path, buf, size) < 0)
        return NULL;
    const char *p = strrchr(buf, ')');
    return p ? p + 1 : NULL;
}

/* Field n (1-based, as in proc(5); n >= 3) of rest, or 0. */
static uint64_t proc_stat_field(const char *rest, int n) {
    for (int field = 3; field < n && rest; field++)
        rest = strchr(rest + 1, ' ');
    return rest ? strtoull(rest + 1, NULL, 10) : 0;
}

uint64_t pu_proc_stat_start(pid_t pid, char *state) {
    char buf[1024];
    if (state)
        *state = 0;
    const char *p = proc_stat_rest(pid, buf, sizeof(buf));
    if (!p)
        return 0;
    if (state && p[0] == ' ')
        *state = p[1];
    return proc_stat_field(p, 22);
}

bool pu_proc_cpu_usec(pid_t pid, uint64_t *usec) {
    char buf[1024];
    const char *p = proc_stat_rest(pid, buf, sizeof(buf));
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || hz <= 0)
        return false;
    *usec = (proc_stat_field(p, 14) + proc_stat_field(p, 15)) * (1000000u / (uint64_t)hz);
    return true;
}

bool pu_proc_alive_as(pid_t pid, uint64_t start) {
    if (pid <= 0 || !start)
        return false;
    char state = 0; /* (one read: its start time and whether it is a zombie) */
    uint64_t v = pu_proc_stat_start(pid, &state);
    if (v)
        return v == start && ((state != 'Z' && state != 'X') || !pu_proc_zombie_ended(pid));
    /* Unreadable: gone only when the kernel says so; a read that failed
     * for want of descriptors or memory is no death. */
    return kill(pid, 0) == 0 || errno != ESRCH;
}

bool pu_proc_zombie_ended(pid_t pid) {
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (pu_read_small(path, buf, sizeof(buf)) < 0)
        return true;
    const char *t = strstr(buf, "\nThreads:");
    return !t || strtol(t + 9, NULL, 10) <= 1;
}

pid_t pu_proc_parent(pid_t pid) {
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (pu_read_small(path, buf, sizeof(buf)) < 0)
        return 0;
    const char *pp = strstr(buf, "\nPPid:");
    return pp ? (pid_t)strtol(pp + 7, NULL, 10) : 0;
}
