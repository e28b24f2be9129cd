/* fy-attack: runs INSIDE a sandbox during the security tests and tries one
 * thing that must not work (or must be reported). It prints one line,
 * "ok ..." when the operation succeeded or "denied <ERRNO-NAME> ..." when
 * it failed, and exits 0 / 1 accordingly, so the test can assert the exact
 * denial. Every loop is bounded. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/random.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e) {
    switch (e) {
    case EAGAIN: return "EAGAIN";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case ENOSYS: return "ENOSYS";
    case ESRCH: return "ESRCH";
    case EROFS: return "EROFS";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ENETUNREACH: return "ENETUNREACH";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case ELOOP: return "ELOOP";
    case EINVAL: return "EINVAL";
    case ENOTDIR: return "ENOTDIR";
    case EBADF: return "EBADF";
    case EXDEV: return "EXDEV";
    case ENOTTY: return "ENOTTY";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EMFILE: return "EMFILE";
    case EFBIG: return "EFBIG";
    case ENOKEY: return "ENOKEY";
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    default: return "EOTHER";
    }
}

static int report(long r, const char *what) {
    if (r < 0) {
        printf("denied %s %s\n", ename(errno), what);
        return 1;
    }
    printf("ok %s\n", what);
    return 0;
}

static int cmd_read(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return report(-1, path);
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0)
        return report(-1, path);
    buf[n] = '\0';
    printf("ok read %s: %s\n", path, buf);
    return 0;
}

static int cmd_write(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return report(-1, path);
    ssize_t w = write(fd, "pwned\n", 6);
    close(fd);
    return report(w == 6 ? 0 : -1, path);
}

static int cmd_connect_tcp(int port) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return report(-1, "socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return report(connect(s, (struct sockaddr *)&a, sizeof(a)), "connect 127.0.0.1");
}

static int cmd_connect_abstract(const char *name) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return report(-1, "socket");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n > sizeof(a.sun_path) - 2)
        return 2;
    memcpy(a.sun_path + 1, name, n);
    return report(connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)),
                  "connect abstract");
}

static int cmd_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return report(-1, "opendir");
    int self = dirfd(d);
    struct dirent *e;
    printf("fds");
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != self)
            printf(" %s", e->d_name);
    printf("\n");
    closedir(d);
    return 0;
}

/* keyring DESC: the session keyring the workload holds, and whether a
 * "user" key named DESC (one the test planted in the HOST's session
 * keyring) can be found in it or read. Prints "session ID" first; then
 * "ok keyring found ID read: PAYLOAD" or "denied ERRNO keyring search". */
static int cmd_keyring(const char *desc) {
    long s = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
    printf("session %ld\n", s < 0 ? -(long)errno : s);
    long k = syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -3, "user", desc, 0);
    if (k < 0)
        return report(-1, "keyring search");
    char buf[256];
    long n = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, k, buf, sizeof(buf) - 1);
    if (n < 0)
        return report(-1, "keyring read");
    buf[n < (long)sizeof(buf) - 1 ? n : (long)sizeof(buf) - 1] = '\0';
    printf("ok keyring found %ld read: %s\n", k, buf);
    return 0;
}

/* ptys N: the options of the devpts mounted at /dev/pts (its line of
 * /proc/self/mountinfo, "pts-options ..."), then opens /dev/ptmx until it
 * fails, at most N times: "opened K" and "denied ERRNO ptmx" (or "ok ptmx"
 * when all N opened). Every master stays open until the end. */
static int cmd_ptys(const char *arg) {
    FILE *mi = fopen("/proc/self/mountinfo", "re");
    char line[1024];
    while (mi && fgets(line, sizeof(line), mi))
        if (strstr(line, " /dev/pts ") && strstr(line, " - devpts "))
            printf("pts-options %s", strstr(line, " - devpts "));
    if (mi)
        fclose(mi);
    long n = atol(arg), k = 0;
    if (n < 0 || n > 4096)
        n = 4096;
    int err = 0;
    for (; k < n; k++)
        if (open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC) < 0) {
            err = errno;
            break;
        }
    printf("opened %ld\n", k);
    errno = err;
    return report(err ? -1 : 0, "ptmx");
}

/* keyread ID: a key of the host read by its number (no possession). */
static int cmd_keyread(const char *id) {
    char buf[256];
    long n = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, atol(id), buf, sizeof(buf) - 1);
    if (n < 0)
        return report(-1, "keyread");
    buf[n < (long)sizeof(buf) - 1 ? n : (long)sizeof(buf) - 1] = '\0';
    printf("ok keyread: %s\n", buf);
    return 0;
}

/* Writes size bytes (at most 64 MiB) to a new file name in the working
 * directory, unlinks it and keeps it open: a file with no name, found only
 * through the descriptor. 0 or -1 (errno). */
static int hold_unnamed(const char *name, long size) {
    static char block[65536];
    memset(block, 0xab, sizeof(block));
    int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    for (long done = 0; done < size && done < (64L << 20); done += (long)sizeof(block))
        if (write(fd, block, sizeof(block)) < 0)
            return -1;
    fsync(fd);
    return unlink(name);
}

static long unnamed_size;
static volatile int unnamed_state; /* 1 held, -1 failed */

static int thread_unnamed(void *arg) {
    (void)arg;
    /* (No libc state of its own: only system calls, then an endless pause.) */
    unnamed_state = hold_unnamed("thread-unnamed", unnamed_size) == 0 ? 1 : -1;
    for (;;)
        pause();
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    const char *c = argv[1];
    const char *arg = argc > 2 ? argv[2] : "";
    const char *tag = argc > 3 ? argv[3] : NULL; /* the test's tag: ignored, but kept by the daemon's sleep */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(c, "read"))
        return cmd_read(arg);
    if (!strcmp(c, "write"))
        return cmd_write(arg);
    if (!strcmp(c, "kill"))
        return report(kill(atoi(arg), SIGKILL), "kill");
    if (!strcmp(c, "mknod")) {
        unlink(arg);
        return report(mknod(arg, S_IFBLK | 0600, makedev(8, 0)), "mknod block");
    }
    if (!strcmp(c, "mount"))
        return report(mount("none", "/tmp", "tmpfs", 0, NULL), "mount");
    if (!strcmp(c, "remount"))
        return report(mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL), "remount rw");
    if (!strcmp(c, "init_module"))
        return report(syscall(SYS_init_module, NULL, 0, ""), "init_module");
    if (!strcmp(c, "finit_module"))
        return report(syscall(SYS_finit_module, 0, "", 0), "finit_module");
    if (!strcmp(c, "kexec"))
        return report(syscall(SYS_kexec_load, 0, 0, NULL, 0), "kexec_load");
    if (!strcmp(c, "bpf")) {
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        return report(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)), "bpf");
    }
    if (!strcmp(c, "others")) {
        /* Another process's limits, priority, CPUs and I/O class (pid arg),
         * then the same calls on itself (pid 0), which must work. */
        pid_t pid = (pid_t)atoi(arg);
        struct rlimit three = {3, 3};
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        struct sched_param sp = {0};
        report(syscall(SYS_prlimit64, pid, RLIMIT_NOFILE, &three, NULL), "prlimit");
        report(setpriority(PRIO_PROCESS, (id_t)pid, 10), "setpriority");
        report(sched_setaffinity(pid, sizeof(one), &one), "setaffinity");
        report(sched_setscheduler(pid, SCHED_BATCH, &sp), "setscheduler");
        report(syscall(SYS_ioprio_set, 1, pid, (3 << 13)), "ioprio");
        struct rlimit cur;
        int self = getrlimit(RLIMIT_NOFILE, &cur) == 0 && syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &cur, NULL) == 0 &&
                   setpriority(PRIO_PROCESS, 0, 1) == 0 && setpriority(PRIO_PGRP, 0, 2) == 0 &&
                   sched_setscheduler(0, SCHED_BATCH, &sp) == 0 && syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 7) == 0;
        printf("self %s\n", self ? "ok" : strerror(errno));
        return 0;
    }
    if (!strcmp(c, "inherited")) {
        /* What the process carries from its caller that no policy declares:
         * "policy=P nice=N ioclass=C personality=X oom=O slack=S thp=T ksm=K
         * domain=D" (ids of the system calls' own forms). */
        char oom[16] = "?", dom[80] = "?";
        int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, oom, sizeof(oom) - 1) : -1;
        oom[n > 0 ? n - 1 : 0] = '\0';
        if (fd >= 0)
            close(fd);
        fd = open("/proc/sys/kernel/domainname", O_RDONLY | O_CLOEXEC);
        n = fd >= 0 ? read(fd, dom, sizeof(dom) - 1) : -1;
        dom[n > 0 ? n - 1 : 0] = '\0';
        if (fd >= 0)
            close(fd);
        printf("policy=%ld nice=%ld ioclass=%ld personality=%lx oom=%s slack=%d thp=%d ksm=%d domain=%s\n",
               syscall(SYS_sched_getscheduler, 0), 20 - syscall(SYS_getpriority, 0, 0),
               syscall(SYS_ioprio_get, 1, 0) >> 13, syscall(SYS_personality, 0xffffffffUL), oom,
               prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), prctl(68, 0, 0, 0, 0), dom);
        return 0;
    }
    if (!strcmp(c, "keyctl"))
        return report(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0), "keyctl");
    if (!strcmp(c, "ptys"))
        return cmd_ptys(arg);
    if (!strcmp(c, "keyring"))
        return cmd_keyring(arg);
    if (!strcmp(c, "keyread"))
        return cmd_keyread(arg);
    if (!strcmp(c, "add_key"))
        return report(syscall(SYS_add_key, "user", "fy", "x", 1, -3), "add_key");
    if (!strcmp(c, "perf")) {
        struct perf_event_attr pe;
        memset(&pe, 0, sizeof(pe));
        pe.size = sizeof(pe);
        pe.type = PERF_TYPE_SOFTWARE;
        pe.config = PERF_COUNT_SW_CPU_CLOCK;
        return report(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0), "perf_event_open");
    }
    if (!strcmp(c, "userfaultfd"))
        return report(syscall(SYS_userfaultfd, 0), "userfaultfd");
    if (!strcmp(c, "io_uring"))
        return report(syscall(425 /* io_uring_setup */, 1, NULL), "io_uring_setup");
    if (!strcmp(c, "open_by_handle"))
        return report(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), "open_by_handle_at");
    if (!strcmp(c, "unshare-user"))
        return report(unshare(CLONE_NEWUSER), "unshare user");
    if (!strcmp(c, "ptrace-init"))
        return report(ptrace(PTRACE_ATTACH, 1, NULL, NULL), "ptrace pid 1");
    if (!strcmp(c, "settime")) {
        struct timespec ts = {1, 0};
        return report(clock_settime(CLOCK_REALTIME, &ts), "clock_settime");
    }
    if (!strcmp(c, "tiocsti")) {
        char ch = 'x';
        return report(ioctl(0, TIOCSTI, &ch), "TIOCSTI");
    }
    if (!strcmp(c, "x32"))
        return report(syscall(39 /* getpid */ | 0x40000000), "x32 getpid");
    if (!strcmp(c, "i386")) {
        long ret;
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20 /* i386 getpid */) : "memory");
        errno = ret < 0 ? (int)-ret : 0;
        return report(ret < 0 ? -1 : 0, "int80 getpid");
    }
    if (!strcmp(c, "tcp"))
        return cmd_connect_tcp(atoi(arg));
    if (!strcmp(c, "abstract"))
        return cmd_connect_abstract(arg);
    if (!strcmp(c, "fds"))
        return cmd_fds();
    if (!strcmp(c, "alloc")) {
        /* Touch N MiB, one page at a time. */
        long mib = atol(arg);
        for (long i = 0; i < mib; i++) {
            char *p = malloc(1 << 20);
            if (!p)
                return report(-1, "malloc");
            for (int k = 0; k < (1 << 20); k += 4096)
                p[k] = 1;
        }
        printf("ok allocated %ld MiB\n", mib);
        return 0;
    }
    if (!strcmp(c, "rndcount")) {
        /* An ioctl on a device any user may make: the entropy count. */
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC), count = -1;
        if (fd < 0)
            return report(-1, "open /dev/urandom");
        return report(ioctl(fd, RNDGETENTCNT, &count), "ioctl RNDGETENTCNT");
    }
    if (!strcmp(c, "spin")) {
        /* N processes (argv[3], 1 to 8) busy for MS milliseconds of wall
         * time each (arg, at most 10000); reports the wall time they took
         * from the first fork to the last wait. */
        long ms = atol(arg), n = tag ? atol(tag) : 1;
        if (ms < 1 || ms > 10000 || n < 1 || n > 8)
            return 2;
        /* Every CPU there is, whatever affinity the sandbox set (affinity
         * shows the quota; it does not enforce it). */
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            CPU_SET(cpu, &all);
        int widened = sched_setaffinity(0, sizeof(all), &all) == 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < n; i++) {
            pid_t p = fork();
            if (p < 0)
                return report(-1, "fork");
            if (p == 0) {
                struct timespec now;
                do
                    clock_gettime(CLOCK_MONOTONIC, &now);
                while ((now.tv_sec - t0.tv_sec) * 1000000000LL + (now.tv_nsec - t0.tv_nsec) < ms * 1000000LL);
                _exit(0);
            }
        }
        while (wait(NULL) > 0)
            ;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("ok spun %ld for %ld ms (affinity %s), wall %ld us\n", n, ms, widened ? "all CPUs" : "as set",
               (long)((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000L));
        return 0;
    }
    if (!strcmp(c, "fill")) {
        /* Writes argv[3] bytes (at most 64 MiB) of zeros to the file arg, in
         * 64 KiB writes; reports the first failure and how much was written
         * by then. (Here argv[3] is a size, not the test's tag.) */
        long want = tag ? atol(tag) : 0, done = 0;
        static char zeros[65536];
        int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return report(-1, arg);
        while (done < want && done < (64L << 20)) {
            size_t n = (size_t)(want - done) < sizeof(zeros) ? (size_t)(want - done) : sizeof(zeros);
            ssize_t w = write(fd, zeros, n);
            if (w < 0) {
                printf("denied %s write after %ld bytes\n", ename(errno), done);
                return 1;
            }
            done += w;
        }
        close(fd);
        printf("ok wrote %ld bytes\n", done);
        return 0;
    }
    if (!strcmp(c, "thread-unnamed")) {
        /* A thread with a descriptor table of its own (CLONE_THREAD
         * without CLONE_FILES) holds arg bytes in a file with no name in
         * the working directory; the process's own table (/proc/PID/fd)
         * never sees it. Holds it 3 s, then says so. */
        static char stack[1 << 16];
        unnamed_size = atol(arg);
        if (clone(thread_unnamed, stack + sizeof(stack), CLONE_VM | CLONE_SIGHAND | CLONE_THREAD, NULL) < 0)
            return report(-1, "clone");
        for (int i = 0; i < 300 && !unnamed_state; i++)
            usleep(10000);
        if (unnamed_state != 1) {
            printf("denied the thread could not write its file\n");
            return 1;
        }
        sleep(3);
        printf("ok held by a thread\n");
        return 0;
    }
    if (!strcmp(c, "nodump-unnamed")) {
        /* The same held by a process that made itself not dumpable: its
         * /proc entries then belong to its user namespace's root. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
            return report(-1, "prctl");
        if (hold_unnamed("nodump-unnamed", atol(arg)) < 0)
            return report(-1, "nodump-unnamed");
        sleep(3);
        printf("ok held while not dumpable\n");
        return 0;
    }
    if (!strcmp(c, "sysv")) {
        /* IPC objects that outlive their maker: a System V segment of 1 MiB
         * (touched), a message queue and a semaphore set under key arg, and
         * a POSIX message queue /fy-attack-arg; one line each. */
        key_t key = (key_t)strtol(arg, NULL, 0);
        int fails = 0;
        int id = shmget(key, 1 << 20, IPC_CREAT | 0600);
        char *m = id >= 0 ? shmat(id, NULL, 0) : NULL;
        if (m && m != (void *)-1) {
            memset(m, 1, 1 << 20);
            shmdt(m);
        }
        fails += id < 0;
        printf(id >= 0 ? "ok shm made\n" : "denied %s shm\n", ename(errno));
        id = msgget(key, IPC_CREAT | 0600);
        fails += id < 0;
        printf(id >= 0 ? "ok msg made\n" : "denied %s msg\n", ename(errno));
        id = semget(key, 1, IPC_CREAT | 0600);
        fails += id < 0;
        printf(id >= 0 ? "ok sem made\n" : "denied %s sem\n", ename(errno));
        char name[64];
        snprintf(name, sizeof(name), "fy-attack-%s", arg); /* (the system call's name has no '/') */
        struct { long flags, maxmsg, msgsize, curmsgs, pad[4]; } attr = {0, 1, 64, 0, {0}};
        long q = syscall(SYS_mq_open, name, O_CREAT | O_RDWR | O_CLOEXEC, 0600, &attr);
        fails += q < 0;
        printf(q >= 0 ? "ok mq made\n" : "denied %s mq\n", ename(errno));
        return fails ? 1 : 0;
    }
    if (!strcmp(c, "openfiles")) {
        /* Bounded: opens /dev/null up to N times (at most 100000), keeping
         * every descriptor; reports the first failure and the highest
         * descriptor it had by then (the lowest free one is always given,
         * so under RLIMIT_NOFILE N that is N-1). */
        long n = atol(arg), last = -1;
        for (long i = 0; i < n && i < 100000; i++) {
            int fd = open("/dev/null", O_RDONLY);
            if (fd < 0) {
                printf("denied %s open after fd %ld\n", ename(errno), last);
                return 1;
            }
            last = fd > last ? fd : last;
        }
        printf("ok opened %ld, last fd %ld\n", n, last);
        return 0;
    }
    if (!strcmp(c, "userns-owner")) {
        /* Who made (owns) our user namespace, as our namespace maps that
         * host uid: NS_GET_OWNER_UID (_IO(0xb7, 0x4)); 65534 when the
         * owner is mapped to nothing here (host root, say). */
        int fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        unsigned owner = 0;
        if (fd < 0 || ioctl(fd, _IO(0xb7, 0x4), &owner) < 0)
            return report(-1, "NS_GET_OWNER_UID");
        close(fd);
        printf("owner %u uid %u\n", owner, (unsigned)getuid());
        return 0;
    }
    if (!strcmp(c, "inotify")) {
        /* Bounded: makes up to N inotify instances (at most 100000),
         * keeping every one; reports how many it made before the first
         * failure, then holds them for up to 30 s so that the test can see
         * whose budget they came from. */
        long n = atol(arg), made = 0;
        for (; made < n && made < 100000; made++)
            if (syscall(SYS_inotify_init1, O_CLOEXEC) < 0)
                break;
        if (made < n && made < 100000)
            printf("denied %s inotify after %ld\n", ename(errno), made);
        else
            printf("ok inotify %ld\n", made);
        fflush(stdout);
        for (int i = 0; i < 300; i++)
            usleep(100000);
        return 0;
    }
    if (!strcmp(c, "forkbomb")) {
        /* Bounded: at most N children, each sleeping; reports the first failure. */
        long n = atol(arg);
        for (long i = 0; i < n; i++) {
            pid_t p = fork();
            if (p < 0)
                return report(-1, "fork");
            if (p == 0) {
                sleep(30);
                _exit(0);
            }
        }
        printf("ok forked %ld\n", n);
        return 0;
    }
    if (!strcmp(c, "daemon")) {
        /* Double fork into a new session, then the main process exits. */
        pid_t p = fork();
        if (p == 0) {
            setsid();
            if (fork() == 0) {
                /* the test's tag (argv[3]) goes on: it counts the sleep by it */
                char *const av[] = {"sleep", (char *)arg, (char *)tag, NULL};
                execv("/bin/sleep", av);
                _exit(127);
            }
            _exit(0);
        }
        waitpid(p, NULL, 0);
        printf("ok daemonised\n");
        return 0;
    }
    if (!strcmp(c, "ignore-term")) {
        /* Ignore SIGTERM, fork a grandchild that does too, then sleep. */
        signal(SIGTERM, SIG_IGN);
        if (fork() == 0) {
            signal(SIGTERM, SIG_IGN);
            for (int i = 0; i < 600; i++)
                sleep(1);
            _exit(0);
        }
        printf("ok ignoring\n");
        for (int i = 0; i < 600; i++)
            sleep(1);
        return 0;
    }
    fprintf(stderr, "fy-attack: unknown command %s\n", c);
    return 2;
}
