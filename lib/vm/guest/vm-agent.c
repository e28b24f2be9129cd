/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard-vm-agent: /init of the guest of the VM backend. A static
 * program (glibc's libc.a) embedded in the library and put in the
 * initramfs. It loads the virtio modules, opens the control port
 * ("fy.ctl"), says hello, receives one RUN (vm-proto.h), applies the plan
 * again inside the guest (mounts, read-only workspace parts, a minimal
 * /dev, cgroup v2 limits, uid/gid, no network device but lo), runs the
 * command with its streams forwarded, reports its end and usage, sends the
 * writable workspace back as tar streams and powers the guest off. It runs
 * exactly one command: the VM is destroyed after it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/random.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm-proto.h"

#define AGENT_VERSION VMP_HELLO_TEXT
#define CG "/sys/fs/cgroup"

static int ctl = -1;     /* the control port */
static int console = -1; /* diagnostics */

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    if (console >= 0 && write(console, "fy-agent: ", 10) >= 0 && write(console, buf, (size_t)n) < 0)
        return;
}

/* A virtio port's write can return 0 with nothing sent (the queue took no
 * buffer) or EAGAIN: both mean "not now", so the port is waited for and
 * the write made again, for at most 60 s in all (the host's deadline is
 * the real bound). Any other failure is told on the console. */
static int write_all(int fd, const void *p, size_t n) {
    const uint8_t *b = p;
    int waited_ms = 0;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w == 0 || (w < 0 && (errno == EAGAIN || errno == ENOSPC))) {
            if (waited_ms >= 60000)
                return -1;
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int k = poll(&pf, 1, 100);
            waited_ms += k > 0 ? 1 : 100;
            continue;
        }
        if (w < 0) {
            int e = errno;
            if (console >= 0) {
                char m[96];
                int mn = snprintf(m, sizeof(m), "fy-agent: write to the control port: %s\n", strerror(e));
                if (mn > 0 && write(console, m, (size_t)mn) < 0) {
                    /* nothing more to tell it with */
                }
            }
            errno = e;
            return -1;
        }
        waited_ms = 0;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int send_frame(uint8_t type, uint16_t flags, const void *p, size_t len) {
    uint8_t h[VMP_HDR];
    if (ctl < 0 || len > VMP_MAX_FRAME)
        return -1;
    vmp_header(h, type, flags, (uint32_t)len);
    if (write_all(ctl, h, sizeof(h)) < 0)
        return -1;
    return len ? write_all(ctl, p, len) : 0;
}

static void power_off(void) __attribute__((noreturn));
static void power_off(void) {
    sync();
    reboot(RB_POWER_OFF);
    for (;;)
        pause();
}

static void fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(int err, const char *fmt, ...) {
    uint8_t buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf((char *)buf + 4, sizeof(buf) - 4, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(buf) - 5)
        n = (int)sizeof(buf) - 5;
    vmp_put_u32(buf, (uint32_t)err);
    logmsg("setup failed: %s: %s", (char *)buf + 4, strerror(err));
    send_frame(VMP_SETUP_FAIL, 0, buf, 4 + (size_t)n);
    power_off();
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = write_all(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

static int mkdir_p(const char *path, mode_t mode) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* ---- boot: modules and the control port ---- */

static void load_modules(void) {
    FILE *f = fopen("/.fy/modules/order", "re");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        char path[320];
        snprintf(path, sizeof(path), "/.fy/modules/%s", line);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            fail(errno, "open module %s", line);
        if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
            fail(errno, "load module %s", line);
        close(fd);
    }
    fclose(f);
}

/* No module after ours: the guest's /lib/modules is the host's (the whole
 * tree of the guest's release, through the read-only /usr), and the kernel
 * loads a module on demand for any process (a socket of a rare family, a
 * link type in a user namespace of its own): each a way to guest root, and
 * guest root speaks for the agent. No modprobe to run, and no loading. */
static void lock_modules(void) {
    int fd = open("/proc/sys/kernel/modprobe", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)!write(fd, "\n", 1); /* (empty: the kernel then runs nothing) */
        close(fd);
    }
    fd = open("/proc/sys/kernel/modules_disabled", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1", 1) != 1)
        fail(errno, "kernel.modules_disabled");
    close(fd);
}

/* The virtio-serial port named fy.ctl, as /dev/vportNpM (udev is absent:
 * made from its dev number). */
static int open_port(void) {
    for (int tries = 0; tries < 500; tries++) {
        DIR *d = opendir("/sys/class/virtio-ports");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char p[512], name[64] = "", dev[32] = "";
            snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", e->d_name);
            FILE *f = fopen(p, "re");
            if (!f)
                continue;
            if (!fgets(name, sizeof(name), f))
                name[0] = '\0';
            fclose(f);
            name[strcspn(name, "\n")] = '\0';
            if (strcmp(name, "fy.ctl") != 0)
                continue;
            snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/dev", e->d_name);
            f = fopen(p, "re");
            if (!f || !fgets(dev, sizeof(dev), f)) {
                if (f)
                    fclose(f);
                continue;
            }
            fclose(f);
            unsigned maj, min;
            if (sscanf(dev, "%u:%u", &maj, &min) != 2)
                continue;
            closedir(d);
            unlink("/.fy-ctl");
            if (mknod("/.fy-ctl", S_IFCHR | 0600, makedev(maj, min)) < 0)
                return -1;
            int fd = open("/.fy-ctl", O_RDWR | O_CLOEXEC | O_NOCTTY);
            unlink("/.fy-ctl");
            return fd;
        }
        if (d)
            closedir(d);
        usleep(10000);
    }
    errno = ENODEV;
    return -1;
}

/* ---- the RUN message ---- */

#define MAXV 4096
struct run {
    char *argv[MAXV + 1], *envp[MAXV + 1];
    size_t argc, envc;
    const char *cwd, *path, *hostname;
    uint32_t uid, gid;
    uint64_t memory, pids, cpu, output_max;
    uint64_t rlim[5];     /* VMP_RLIMIT_*; 0: not set */
    bool rlim_set[5];
    uint32_t net_port;    /* fetch-only: the proxy's port on the guest's loopback; 0: none */
    struct vmp_iface iface; /* restricted: eth0's addresses and routes */
    bool iface_set;
    bool dns;             /* carry 127.0.0.53:53/udp to the host's stub */
    bool shares_sub;      /* a pre-started clone: each share's directory is its VMP_SHARE_SUB */
    bool ptys;            /* pseudo-terminals of its own (VMR_PTYS); else none */
};

static char *dupn(const uint8_t *p, uint32_t n) {
    char *s = malloc((size_t)n + 1);
    if (!s)
        fail(ENOMEM, "out of memory");
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void mount_9p(const char *tag, const char *target, bool writable, bool sub) {
    if (mkdir_p(target, 0755) < 0)
        fail(errno, "mkdir %s", target);
    if (sub) {
        /* A pre-started clone's export is a stub holding the attempt's
         * directory in VMP_SHARE_SUB: mounted aside, that bound in place,
         * the stub's mount let go of. */
        char stage[64], src[80];
        snprintf(stage, sizeof(stage), "/.fy9p-%.32s", tag);
        snprintf(src, sizeof(src), "%s/" VMP_SHARE_SUB, stage);
        if ((mkdir(stage, 0700) < 0 && errno != EEXIST) ||
            mount(tag, stage, "9p", MS_RDONLY | MS_NOSUID | MS_NODEV,
                  "trans=virtio,version=9p2000.L,cache=loose,msize=262144") < 0)
            fail(errno, "mount %s (9p %s, a pre-started clone's share)", target, tag);
        if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0 ||
            mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
            fail(errno, "bind %s at %s", src, target);
        umount2(stage, MNT_DETACH);
        rmdir(stage);
        return;
    }
    /* A writable share: no cache of the guest's, so that what the workload
     * wrote is on the host when it ends. */
    if (mount(tag, target, "9p", (writable ? 0 : MS_RDONLY) | MS_NOSUID | MS_NODEV,
              writable ? "trans=virtio,version=9p2000.L,cache=none,msize=262144"
                       : "trans=virtio,version=9p2000.L,cache=loose,msize=262144") < 0)
        fail(errno, "mount %s (9p %s%s)", target, tag, writable ? ", writable" : "");
}

static void mount_tmpfs(const char *target, uint32_t mode, uint64_t size, bool owned, const struct run *r) {
    char opt[128];
    if (mkdir_p(target, 0755) < 0)
        fail(errno, "mkdir %s", target);
    if (size)
        snprintf(opt, sizeof(opt), "mode=%o,size=%llu", mode, (unsigned long long)size);
    else
        snprintf(opt, sizeof(opt), "mode=%o", mode);
    if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, opt) < 0)
        fail(errno, "mount tmpfs on %s", target);
    if (owned && chown(target, r->uid, r->gid) < 0)
        fail(errno, "chown %s", target);
}

static void make_readonly(const char *target) {
    if (mount(target, target, NULL, MS_BIND | MS_REC, NULL) < 0 ||
        mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
        fail(errno, "make %s read-only", target);
}

/* A file secret: /run/secrets/NAME, 0400, the workload's; the directory a
 * tmpfs of its own (0500 once written). */
static void write_secret(const uint8_t *d, uint32_t n, const struct run *r) {
    static bool mounted;
    const uint8_t *z = memchr(d, 0, n);
    if (!z || z == d || z - d > 100 || memchr(d, '/', (size_t)(z - d)))
        fail(EINVAL, "malformed secret record");
    if (!mounted) {
        if (mkdir_p("/run/secrets", 0755) < 0 ||
            mount("tmpfs", "/run/secrets", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,nr_inodes=1024") < 0)
            fail(errno, "mount /run/secrets");
        mounted = true;
    }
    char path[160];
    snprintf(path, sizeof(path), "/run/secrets/%.*s", (int)(z - d), (const char *)d);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
    if (fd < 0 || write_all(fd, z + 1, n - (size_t)(z - d) - 1) < 0 || fchown(fd, r->uid, r->gid) < 0)
        fail(errno, "write the secret file %s", path);
    close(fd);
    if (chown("/run/secrets", r->uid, r->gid) < 0 || chmod("/run/secrets", 0500) < 0)
        fail(errno, "/run/secrets");
}

struct dirmark {
    char *path; /* relative to the collected directory ("" for itself) */
    ino_t ino;
};

struct collect {
    uint32_t which;
    const char *dir;
    /* What the tree held when the command started (mark_tree): the change
     * time of a file made then, and every directory's inode by its path. */
    struct timespec t0;
    dev_t dev;
    bool marked;
    struct dirmark *marks;
    size_t nmarks, capmarks;
};
static struct collect collects[2];
static size_t ncollect;

static void parse_run(const uint8_t *p, size_t len, struct run *r) {
    struct vmp_rec_iter it = {p, len, 0};
    uint8_t tag;
    const uint8_t *d;
    uint32_t n;
    int k;
    /* Mounts wait until the command's records are all read (tmpfs owned by uid). */
    struct { uint8_t tag; const uint8_t *d; uint32_t n; } later[256];
    size_t nlater = 0;
    while ((k = vmp_rec_next(&it, &tag, &d, &n)) == 1) {
        switch (tag) {
        case VMR_ARG:
            if (r->argc == MAXV)
                fail(E2BIG, "too many arguments");
            r->argv[r->argc++] = dupn(d, n);
            break;
        case VMR_ENV:
            if (r->envc == MAXV)
                fail(E2BIG, "too many variables");
            r->envp[r->envc++] = dupn(d, n);
            break;
        case VMR_CWD: r->cwd = dupn(d, n); break;
        case VMR_PATH: r->path = dupn(d, n); break;
        case VMR_HOSTNAME: r->hostname = dupn(d, n); break;
        case VMR_UID: if (n == 4) r->uid = vmp_get_u32(d); break;
        case VMR_GID: if (n == 4) r->gid = vmp_get_u32(d); break;
        case VMR_MEMORY: if (n == 8) r->memory = vmp_get_u64(d); break;
        case VMR_PIDS: if (n == 8) r->pids = vmp_get_u64(d); break;
        case VMR_CPU: if (n == 8) r->cpu = vmp_get_u64(d); break;
        case VMR_OUTPUT_MAX: if (n == 8) r->output_max = vmp_get_u64(d); break;
        case VMR_NET_IFACE:
            if (vmp_get_iface(d, n, &r->iface) < 0)
                fail(EINVAL, "a bad interface record");
            r->iface_set = true;
            break;
        case VMR_DNS: r->dns = true; break;
        case VMR_SHARES_SUB: r->shares_sub = true; break;
        case VMR_PTYS: r->ptys = true; break;
        case VMR_NET_PROXY: if (n == 4 && vmp_get_u32(d) > 0 && vmp_get_u32(d) < 65536) r->net_port = vmp_get_u32(d); break;
        case VMR_RLIMIT:
            if (n == 12 && vmp_get_u32(d) >= 1 && vmp_get_u32(d) <= 4) {
                r->rlim[vmp_get_u32(d)] = vmp_get_u64(d + 4);
                r->rlim_set[vmp_get_u32(d)] = true;
            }
            break;
        case VMR_COLLECT:
            if (n > 4 && ncollect < 2)
                collects[ncollect++] = (struct collect){vmp_get_u32(d), dupn(d + 4, n - 4)};
            break;
        case VMR_MOUNT9P: case VMR_MOUNT9P_RW: case VMR_TMPFS: case VMR_RO: case VMR_SECRET_FILE:
            if (nlater == 256)
                fail(E2BIG, "too many mounts");
            later[nlater].tag = tag;
            later[nlater].d = d;
            later[nlater].n = n;
            nlater++;
            break;
        default:
            break;
        }
    }
    if (k < 0 || r->argc == 0)
        fail(EINVAL, "malformed RUN message");
    for (size_t i = 0; i < nlater; i++) {
        d = later[i].d;
        n = later[i].n;
        if (later[i].tag == VMR_MOUNT9P || later[i].tag == VMR_MOUNT9P_RW) {
            char *s = dupn(d, n);
            size_t tl = strlen(s);
            if (tl + 1 >= n + 1u)
                fail(EINVAL, "malformed mount record");
            mount_9p(s, s + tl + 1, later[i].tag == VMR_MOUNT9P_RW, r->shares_sub);
            free(s);
        } else if (later[i].tag == VMR_SECRET_FILE) {
            write_secret(d, n, r);
        } else if (later[i].tag == VMR_TMPFS) {
            if (n < 17)
                fail(EINVAL, "malformed tmpfs record");
            char *t = dupn(d + 16, n - 16);
            mount_tmpfs(t, vmp_get_u32(d), vmp_get_u64(d + 8), vmp_get_u32(d + 4) != 0, r);
            free(t);
        } else {
            char *t = dupn(d, n);
            make_readonly(t);
            free(t);
        }
    }
}

/* ---- after a template restore (vm-proto.h VMP_RESEED, VMP_FILES) ---- */

/* Every guest restored from one template starts with the same kernel RNG
 * state: fresh host randomness is mixed in and a CRNG reseed forced
 * before anything of the attempt runs; the clock is set to the host's. */
static void reseed(const uint8_t *d, uint32_t n) {
    if (n != 8 + VMP_SEED_LEN)
        fail(EINVAL, "malformed reseed record");
    struct {
        int entropy_count, buf_size;
        uint8_t buf[VMP_SEED_LEN];
    } info;
    info.entropy_count = VMP_SEED_LEN * 8;
    info.buf_size = VMP_SEED_LEN;
    memcpy(info.buf, d + 8, VMP_SEED_LEN);
    int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        fail(errno, "open /dev/urandom");
    int r = ioctl(fd, RNDADDENTROPY, &info);
    int e = errno;
    memset(info.buf, 0, sizeof(info.buf));
    __asm__ volatile("" ::: "memory");
    if (r < 0 || ioctl(fd, RNDRESEEDCRNG) < 0) {
        e = r < 0 ? e : errno;
        close(fd);
        fail(e, "reseed the guest's random number generator");
    }
    close(fd);
    uint64_t us = vmp_get_u64(d);
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000};
    if (clock_settime(CLOCK_REALTIME, &ts) < 0)
        fail(errno, "set the guest clock");
}

/* The attempt's files: a cpio (newc) stream unpacked as it comes, as the
 * kernel unpacks an initramfs (directories, regular files, symbolic links,
 * with their modes and owners); a name that is absolute or has a ".."
 * component ends the attempt. */
static struct {
    uint8_t hdr[112 + PATH_MAX];
    size_t have, need;           /* header bytes held / wanted (110 + name, padded) */
    uint32_t mode, uid, gid;
    struct timespec mtime;       /* the host's (tv_sec 0: none given) */
    uint64_t size, left;
    size_t pad;                  /* padding after the data still to skip */
    int fd;                      /* the regular file being written */
    char link[PATH_MAX];
    size_t linklen;
    bool in_data, done;
} cp = {.fd = -1};

static uint32_t hex8(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        int c = p[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            fail(EINVAL, "malformed cpio header");
        v = v << 4 | (uint32_t)d;
    }
    return v;
}

static const char *cp_name(void) { return (const char *)cp.hdr + 110; }

/* Directories get the host's modification time once everything is in
 * them (each entry made in one changes it): kept here until the end. */
static struct cp_dir {
    char *name;
    struct timespec mtime;
} *cp_dirs;
static size_t cp_ndirs, cp_capdirs;

static void cp_dir_later(const char *name) {
    if (cp_ndirs == cp_capdirs) {
        size_t cap = cp_capdirs ? cp_capdirs * 2 : 64;
        struct cp_dir *n = cap <= (1u << 20) ? realloc(cp_dirs, cap * sizeof(*n)) : NULL;
        if (!n)
            return; /* (its time stays the copy's) */
        cp_dirs = n;
        cp_capdirs = cap;
    }
    if ((cp_dirs[cp_ndirs].name = strdup(name)))
        cp_dirs[cp_ndirs++].mtime = cp.mtime;
}

static void cp_dirs_stamp(void) {
    for (size_t i = 0; i < cp_ndirs; i++) {
        struct timespec ts[2] = {cp_dirs[i].mtime, cp_dirs[i].mtime};
        (void)utimensat(AT_FDCWD, cp_dirs[i].name, ts, AT_SYMLINK_NOFOLLOW);
        free(cp_dirs[i].name);
    }
    free(cp_dirs);
    cp_dirs = NULL;
    cp_ndirs = cp_capdirs = 0;
}

static void cp_entry_end(void) {
    const char *name = cp_name();
    struct timespec ts[2] = {cp.mtime, cp.mtime};
    if (cp.fd >= 0) {
        if (fchown(cp.fd, cp.uid, cp.gid) < 0 || fchmod(cp.fd, cp.mode & 07777) < 0)
            fail(errno, "set the owner of %s", name);
        if (cp.mtime.tv_sec)
            (void)futimens(cp.fd, ts);
        close(cp.fd);
        cp.fd = -1;
    } else if ((cp.mode & S_IFMT) == S_IFLNK) {
        cp.link[cp.linklen] = '\0';
        unlink(name);
        if (symlink(cp.link, name) < 0 || lchown(name, cp.uid, cp.gid) < 0)
            fail(errno, "symlink %s", name);
        if (cp.mtime.tv_sec)
            (void)utimensat(AT_FDCWD, name, ts, AT_SYMLINK_NOFOLLOW);
    }
    cp.in_data = false;
}

static void cp_entry_begin(void) {
    const uint8_t *h = cp.hdr;
    const char *name = cp_name();
    if (!strcmp(name, "TRAILER!!!")) {
        cp.done = true;
        return;
    }
    if (name[0] == '/' || !strcmp(name, "..") || !strncmp(name, "../", 3) || strstr(name, "/../") ||
        (strlen(name) >= 3 && !strcmp(name + strlen(name) - 3, "/..")))
        fail(EINVAL, "a refused name in the attempt's files");
    cp.mode = hex8(h + 14);
    cp.uid = hex8(h + 22);
    cp.gid = hex8(h + 30);
    cp.size = hex8(h + 54);
    /* newc's mtime, and the nanoseconds the host puts in the "check" field
     * a 070701 archive does not use */
    uint32_t ns = hex8(h + 102);
    cp.mtime = (struct timespec){(time_t)hex8(h + 46), ns < 1000000000u ? (long)ns : 0};
    cp.left = cp.size;
    cp.pad = (size_t)((4 - cp.size % 4) % 4);
    cp.linklen = 0;
    switch (cp.mode & S_IFMT) {
    case S_IFDIR:
        if (mkdir(name, cp.mode & 07777) < 0 && errno != EEXIST)
            fail(errno, "mkdir %s", name);
        if (chown(name, cp.uid, cp.gid) < 0 || chmod(name, cp.mode & 07777) < 0)
            fail(errno, "set the owner of %s", name);
        if (cp.mtime.tv_sec)
            cp_dir_later(name);
        break;
    case S_IFREG:
        unlink(name);
        cp.fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (cp.fd < 0)
            fail(errno, "create %s", name);
        break;
    case S_IFLNK:
        if (cp.size >= sizeof(cp.link))
            fail(ENAMETOOLONG, "symlink %s", name);
        break;
    default:
        break; /* skipped */
    }
    cp.in_data = true;
    if (!cp.left)
        cp_entry_end();
}

static void files_feed(const uint8_t *p, size_t n) {
    while (n) {
        if (cp.done)
            fail(EINVAL, "bytes after the end of the attempt's files");
        if (!cp.in_data && !cp.pad) {
            /* the header, then the name to its 4-byte boundary */
            size_t want = cp.have < 110 ? 110 - cp.have : cp.need - cp.have;
            size_t c = n < want ? n : want;
            memcpy(cp.hdr + cp.have, p, c);
            cp.have += c;
            p += c;
            n -= c;
            if (cp.have == 110) {
                if (memcmp(cp.hdr, "070701", 6) != 0)
                    fail(EINVAL, "malformed cpio header");
                uint32_t ns = hex8(cp.hdr + 94);
                if (ns < 2 || ns > PATH_MAX)
                    fail(ENAMETOOLONG, "a name in the attempt's files");
                cp.need = (110 + ns + 3) & ~(size_t)3;
            }
            if (cp.have > 110 && cp.have == cp.need) {
                cp.hdr[110 + hex8(cp.hdr + 94) - 1] = '\0';
                cp.have = 0;
                cp_entry_begin();
            }
            continue;
        }
        if (cp.in_data) {
            size_t c = n < cp.left ? n : (size_t)cp.left;
            if (cp.fd >= 0 && write_all(cp.fd, p, c) < 0)
                fail(errno, "write %s", cp_name());
            if ((cp.mode & S_IFMT) == S_IFLNK) {
                memcpy(cp.link + cp.linklen, p, c);
                cp.linklen += c;
            }
            cp.left -= c;
            p += c;
            n -= c;
            if (!cp.left)
                cp_entry_end();
            continue;
        }
        size_t c = n < cp.pad ? n : cp.pad;
        cp.pad -= c;
        p += c;
        n -= c;
    }
}

/* ---- the guest's own enforcement ---- */

static void minimal_dev(void) {
    /* A fresh /dev: the harmless nodes only (the control port and the
     * console stay out of the workload's reach). */
    if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536") < 0)
        fail(errno, "mount /dev");
    static const struct { const char *name; unsigned maj, min; } nodes[] = {
        {"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
    };
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        char p[64];
        snprintf(p, sizeof(p), "/dev/%s", nodes[i].name);
        if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) < 0 || chmod(p, 0666) < 0)
            fail(errno, "mknod %s", p);
    }
    if (symlink("/proc/self/fd", "/dev/fd") < 0 || symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
        symlink("/proc/self/fd/1", "/dev/stdout") < 0 || symlink("/proc/self/fd/2", "/dev/stderr") < 0)
        fail(errno, "symlinks in /dev");
    if (mkdir("/dev/shm", 01777) < 0 || mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
        fail(errno, "mount /dev/shm");
    if (mkdir("/dev/pts", 0755) < 0 || mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                                             "newinstance,ptmxmode=0666,mode=620") < 0 ||
        symlink("pts/ptmx", "/dev/ptmx") < 0)
        fail(errno, "mount /dev/pts");
}

static void lo_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
}

/* Before the hello (so a template carries it: under TCG every first use of
 * a kernel path costs its translation in each restored QEMU): the
 * hierarchy and its controllers, nothing of an attempt. */
static void cgroup_root(void) {
    if (mount("cgroup2", CG, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        fail(errno, "mount cgroup2");
    if (write_file(CG "/cgroup.subtree_control", "+memory +pids +cpu") < 0)
        fail(errno, "enable the cgroup controllers");
}

static void setup_cgroup(const struct run *r) {
    char v[64];
    if (mkdir(CG "/w", 0755) < 0)
        fail(errno, "mkdir the workload's cgroup");
    if (r->memory) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)r->memory);
        if (write_file(CG "/w/memory.max", v) < 0)
            fail(errno, "memory.max");
        write_file(CG "/w/memory.swap.max", "0");
        write_file(CG "/w/memory.oom.group", "1");
    }
    if (r->pids) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)r->pids);
        if (write_file(CG "/w/pids.max", v) < 0)
            fail(errno, "pids.max");
    }
    if (r->cpu) {
        snprintf(v, sizeof(v), "%llu 100000", (unsigned long long)(r->cpu * 100));
        if (write_file(CG "/w/cpu.max", v) < 0)
            fail(errno, "cpu.max");
    }
}

/* A small cgroup file's text in buf, NUL-terminated: false when it
 * cannot be read or is empty. */
static bool cg_read(const char *file, char *buf, size_t size) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    return true;
}

static uint64_t cg_key(const char *file, const char *key) {
    char buf[1024];
    if (!cg_read(file, buf, sizeof(buf)))
        return 0;
    size_t kl = strlen(key);
    for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
            return strtoull(p + kl + 1, NULL, 10);
    return 0;
}

/* A cgroup file holding one number (memory.peak), or 0. */
static uint64_t cg_value(const char *file) {
    char buf[64];
    return cg_read(file, buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : 0;
}

/* What the agent enforces, as the guest sees it (the host records it as
 * the guest's report). */
static void report_enforced(const struct run *r) {
    char text[1024], nets[256] = "";
    DIR *d = opendir("/sys/class/net");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && strlen(nets) + strlen(e->d_name) + 2 < sizeof(nets)) {
            strcat(nets, nets[0] ? "," : "");
            strcat(nets, e->d_name);
        }
    if (d)
        closedir(d);
    char mem[32] = "max", pids[32] = "max", cpu[48] = "max";
    FILE *f;
    if ((f = fopen(CG "/w/memory.max", "re"))) {
        if (!fgets(mem, sizeof(mem), f))
            mem[0] = '\0';
        fclose(f);
    }
    if ((f = fopen(CG "/w/pids.max", "re"))) {
        if (!fgets(pids, sizeof(pids), f))
            pids[0] = '\0';
        fclose(f);
    }
    if ((f = fopen(CG "/w/cpu.max", "re"))) {
        if (!fgets(cpu, sizeof(cpu), f))
            cpu[0] = '\0';
        fclose(f);
    }
    mem[strcspn(mem, "\n")] = pids[strcspn(pids, "\n")] = cpu[strcspn(cpu, "\n")] = '\0';
    int n = snprintf(text, sizeof(text),
                     "uid=%u gid=%u cgroup=/w memory.max=%s pids.max=%s cpu.max=%s network-devices=%s "
                     "dev=minimal-tmpfs modules=disabled%s%.0u%s%s",
                     r->uid, r->gid, mem, pids, cpu, nets, r->net_port ? " fetch-only-listener=127.0.0.1:" : "", r->net_port,
                     r->iface_set ? " eth0=100.64.0.2/30,fd66:7973::2/64(from the plan)" : "",
                     r->dns ? " dns=127.0.0.53:53/udp+tcp(carried to the host's stub)" : "");
    if (n > 0)
        send_frame(VMP_LOG, 0, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
}

/* ---- restricted: eth0 (the host's router decides what passes) ---- */

/* (linux/ipv6.h's, which clashes with glibc's headers) */
struct in6_ifreq_ {
    struct in6_addr addr;
    uint32_t prefixlen;
    int ifindex;
};

static void iface_up(const struct vmp_iface *ifc) {
    /* No DAD, router advertisements or link-local address: the addresses
     * are usable at once and nothing else is said on the link. */
    static const char *const v6[] = {"accept_dad", "accept_ra", "autoconf", "dad_transmits"};
    for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
        char p[96];
        snprintf(p, sizeof(p), "/proc/sys/net/ipv6/conf/eth0/%s", v6[i]);
        if (write_file(p, "0") < 0)
            fail(errno, "%s", p);
    }
    if (write_file("/proc/sys/net/ipv6/conf/eth0/addr_gen_mode", "1") < 0)
        fail(errno, "eth0 addr_gen_mode");
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || s6 < 0)
        fail(errno, "socket");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    memcpy(&sin->sin_addr, ifc->addr4, 4);
    if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
        fail(errno, "eth0 address");
    sin->sin_addr.s_addr = htonl(ifc->prefix4 == 32 ? 0xffffffffu : ~(0xffffffffu >> ifc->prefix4));
    if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
        fail(errno, "eth0 netmask");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        fail(errno, "eth0 flags");
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        fail(errno, "eth0 up");
    if (ioctl(s, SIOCGIFINDEX, &ifr) < 0)
        fail(errno, "eth0 index");
    int index = ifr.ifr_ifindex;
    struct in6_ifreq_ i6 = {.prefixlen = ifc->prefix6, .ifindex = index};
    memcpy(&i6.addr, ifc->addr6, 16);
    if (ioctl(s6, SIOCSIFADDR, &i6) < 0)
        fail(errno, "eth0 IPv6 address");
    struct rtentry rt;
    memset(&rt, 0, sizeof(rt));
    struct sockaddr_in *gw = (struct sockaddr_in *)&rt.rt_gateway, *dst = (struct sockaddr_in *)&rt.rt_dst,
                       *msk = (struct sockaddr_in *)&rt.rt_genmask;
    gw->sin_family = dst->sin_family = msk->sin_family = AF_INET;
    memcpy(&gw->sin_addr, ifc->gw4, 4);
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    rt.rt_dev = (char *)"eth0";
    if (ioctl(s, SIOCADDRT, &rt) < 0)
        fail(errno, "the IPv4 default route");
    struct in6_rtmsg r6;
    memset(&r6, 0, sizeof(r6));
    memcpy(&r6.rtmsg_gateway, ifc->gw6, 16);
    r6.rtmsg_flags = RTF_UP | RTF_GATEWAY;
    r6.rtmsg_metric = 1;
    r6.rtmsg_ifindex = index;
    if (ioctl(s6, SIOCADDRT, &r6) < 0)
        fail(errno, "the IPv6 default route");
    close(s);
    close(s6);
}

/* ---- DNS: 127.0.0.53:53/udp carried to the host's stub (VMP_DNS_*) ---- */

/* Over TCP too (RFC 7766 framing): each whole query from a guest's TCP
 * connection is carried as one VMP_DNS_QUERY like a datagram and its answer
 * framed back. Bounded as the namespace backend's stub: DTCP_CONNS at once
 * (one more is closed at once), a declared length of 0 or over VMP_DNS_MAX
 * closes, DTCP_IDLE_US for each query and its answer, one query at a time. */
#define DTCP_CONNS 16
#define DTCP_IDLE_US (5 * 1000000ull)
#define DTCP_QUERIES 64

static int dns_fd = -1, dns_tfd = -1;
static struct sockaddr_in dns_from[VMP_DNS_SLOTS];
static bool dns_wait[VMP_DNS_SLOTS];
static int dns_tcp[VMP_DNS_SLOTS]; /* the TCP connection + 1 a slot's answer goes to (0: UDP) */
static unsigned dns_next;
static struct dtcp {
    int fd;                        /* -1: free */
    uint8_t buf[2 + VMP_DNS_MAX];
    size_t have, olen, osent;
    int slot;                      /* the query carried, its answer awaited (-1: none) */
    unsigned nq;
    uint64_t deadline;
} dtcp[DTCP_CONNS];

static void dns_listen(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(0x7f000035)};
    if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        fail(errno, "the DNS socket 127.0.0.53:53");
    dns_fd = s;
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
    if (t < 0 || setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(t, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(t, DTCP_CONNS) < 0)
        fail(errno, "the DNS listener 127.0.0.53:53/tcp");
    dns_tfd = t;
    for (int i = 0; i < DTCP_CONNS; i++)
        dtcp[i].fd = -1;
}

static void dtcp_close(struct dtcp *c) {
    if (c->slot >= 0)
        dns_wait[c->slot] = false;
    close(c->fd);
    c->fd = -1;
}

/* Its pollfd: readable while no query is in flight, writable with an answer. */
static struct pollfd dtcp_pollfd(const struct dtcp *c) {
    short ev = c->olen ? POLLOUT : c->slot < 0 ? POLLIN : 0;
    return (struct pollfd){c->fd, ev, 0};
}

static void dtcp_step(struct dtcp *c, short revents, uint64_t now) {
    if (c->fd < 0)
        return;
    if (c->olen && (revents & POLLOUT)) {
        ssize_t n = send(c->fd, c->buf + c->osent, c->olen - c->osent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
            dtcp_close(c);
            return;
        }
        c->osent += n > 0 ? (size_t)n : 0;
        if (c->osent == c->olen) {
            c->olen = c->osent = c->have = 0;
            c->deadline = now + DTCP_IDLE_US;
            if (c->nq >= DTCP_QUERIES) {
                dtcp_close(c);
                return;
            }
        }
    } else if (!c->olen && c->slot < 0 && (revents & (POLLIN | POLLHUP | POLLERR))) {
        size_t want = c->have < 2 ? 2 - c->have : 2 + (size_t)(c->buf[0] << 8 | c->buf[1]) - c->have;
        ssize_t n = recv(c->fd, c->buf + c->have, want, MSG_DONTWAIT);
        if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
            dtcp_close(c);
            return;
        }
        c->have += n > 0 ? (size_t)n : 0;
        size_t len = c->have >= 2 ? (size_t)(c->buf[0] << 8 | c->buf[1]) : 0;
        if (c->have >= 2 && (len < VMP_DNS_MIN || len > VMP_DNS_MAX)) {
            dtcp_close(c); /* (0, shorter than a header, or longer than the stub takes) */
            return;
        }
        if (c->have >= 2 && c->have == 2 + len) {
            uint16_t slot = (uint16_t)(dns_next++ % VMP_DNS_SLOTS);
            for (int i = 0; i < DTCP_CONNS; i++)
                if (dtcp[i].fd >= 0 && dtcp[i].slot == slot)
                    dtcp[i].slot = -1; /* (a slot reused after 64 other queries: that answer is lost) */
            dns_wait[slot] = true;
            dns_tcp[slot] = (int)(c - dtcp) + 1;
            c->slot = slot;
            c->nq++;
            if (send_frame(VMP_DNS_QUERY, slot, c->buf + 2, len) < 0)
                power_off();
        }
    }
    if (c->fd >= 0 && now >= c->deadline)
        dtcp_close(c);
}

static void dtcp_accept(uint64_t now) {
    int fd = accept4(dns_tfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (int i = 0; i < DTCP_CONNS; i++) {
        if (dtcp[i].fd >= 0)
            continue;
        dtcp[i] = (struct dtcp){.fd = fd, .slot = -1, .deadline = now + DTCP_IDLE_US};
        return;
    }
    close(fd);
}

static void dns_read(void) {
    for (int k = 0; k < 64; k++) {
        uint8_t q[VMP_DNS_MAX + 1];
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(dns_fd, q, sizeof(q), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0)
            return;
        if (n < VMP_DNS_MIN || n > VMP_DNS_MAX || fl != sizeof(from))
            continue; /* (the stub would not answer it either) */
        uint16_t slot = (uint16_t)(dns_next++ % VMP_DNS_SLOTS);
        for (int i = 0; i < DTCP_CONNS; i++)
            if (dtcp[i].fd >= 0 && dtcp[i].slot == slot)
                dtcp[i].slot = -1;
        dns_from[slot] = from;
        dns_wait[slot] = true;
        dns_tcp[slot] = 0;
        if (send_frame(VMP_DNS_QUERY, slot, q, (size_t)n) < 0)
            power_off();
    }
}

static void dns_answer(const struct vmp_frame *f) {
    if (dns_fd < 0 || f->flags >= VMP_DNS_SLOTS || !dns_wait[f->flags])
        return;
    dns_wait[f->flags] = false;
    if (dns_tcp[f->flags]) {
        struct dtcp *c = &dtcp[dns_tcp[f->flags] - 1];
        if (c->fd < 0 || c->slot != (int)f->flags || f->len > VMP_DNS_MAX)
            return;
        c->slot = -1;
        c->buf[0] = (uint8_t)(f->len >> 8);
        c->buf[1] = (uint8_t)f->len;
        memcpy(c->buf + 2, f->data, f->len);
        c->olen = 2 + f->len;
        c->osent = 0;
        return;
    }
    (void)sendto(dns_fd, f->data, f->len, MSG_DONTWAIT, (struct sockaddr *)&dns_from[f->flags],
                 sizeof(dns_from[f->flags]));
}

/* ---- fetch-only: the guest's connections to the proxy (VMP_NET_*) ----
 * The agent listens on 127.0.0.1:port in the guest (there is no other
 * network device) and carries each accepted connection over the control
 * port; the host connects it to the attempt's proxy. Each direction has at
 * most VMP_NET_WINDOW bytes unacknowledged. */

struct nconn {
    int fd;                 /* the workload's connection; -1 once closed */
    bool used, rd_eof, host_eof, wr_shut, closing;
    uint32_t unacked;       /* DATA sent to the host, not yet acknowledged */
    uint8_t *q;             /* bytes from the host not yet written (<= VMP_NET_WINDOW) */
    size_t qlen;
};
static struct nconn nconns[VMP_NET_CONNS];
static int net_listener = -1;

static void net_listen(uint32_t port) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, VMP_NET_CONNS) < 0)
        fail(errno, "listen on 127.0.0.1:%u for the proxy", port);
    net_listener = s;
}

static void net_send_u32(uint8_t type, uint16_t id, uint32_t v) {
    uint8_t b[4];
    vmp_put_u32(b, v);
    if (send_frame(type, id, b, 4) < 0)
        power_off();
}

static void net_close(uint16_t id) {
    struct nconn *c = &nconns[id];
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->qlen = 0;
    if (!c->closing && send_frame(VMP_NET_CLOSE, id, NULL, 0) < 0)
        power_off();
    c->closing = true; /* the slot is free once the host acknowledged */
}

static void net_accept(void) {
    int fd = accept4(net_listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    for (uint16_t id = 0; id < VMP_NET_CONNS; id++) {
        struct nconn *c = &nconns[id];
        if (c->used)
            continue;
        if (!c->q && !(c->q = malloc(VMP_NET_WINDOW))) {
            close(fd);
            return;
        }
        uint8_t *q = c->q;
        memset(c, 0, sizeof(*c));
        c->q = q;
        c->fd = fd;
        c->used = true;
        if (send_frame(VMP_NET_OPEN, id, NULL, 0) < 0)
            power_off();
        return;
    }
    close(fd); /* every id in use (the listener is not polled then) */
}

static bool net_slot_free(void) {
    for (int i = 0; i < VMP_NET_CONNS; i++)
        if (!nconns[i].used)
            return true;
    return false;
}

/* A frame of the host's for a connection. */
static void net_frame(const struct vmp_frame *f) {
    if (f->flags >= VMP_NET_CONNS || !nconns[f->flags].used)
        return;
    uint16_t id = f->flags;
    struct nconn *c = &nconns[id];
    switch (f->type) {
    case VMP_NET_DATA:
        if (c->fd < 0 || c->closing) {
            net_send_u32(VMP_NET_ACK, id, f->len); /* dropped: its reader is gone */
            return;
        }
        if (c->host_eof || c->qlen + f->len > VMP_NET_WINDOW) {
            net_close(id); /* the host broke the window: not this connection's bytes any more */
            return;
        }
        memcpy(c->q + c->qlen, f->data, f->len);
        c->qlen += f->len;
        return;
    case VMP_NET_EOF:
        c->host_eof = true;
        return;
    case VMP_NET_ACK:
        if (f->len == 4) {
            uint32_t n = vmp_get_u32(f->data);
            c->unacked = n > c->unacked ? 0 : c->unacked - n;
        }
        return;
    case VMP_NET_CLOSE:
        if (c->closing)
            c->used = false; /* acknowledged: the id may be reused */
        return;
    default:
        return;
    }
}

/* Adds the listener and the connections to a poll set; returns how many. */
static size_t net_poll_set(struct pollfd *p, uint16_t *ids) {
    size_t n = 0;
    if (net_listener >= 0 && net_slot_free()) {
        p[n] = (struct pollfd){net_listener, POLLIN, 0};
        ids[n++] = 0xffff;
    }
    for (uint16_t id = 0; id < VMP_NET_CONNS; id++) {
        struct nconn *c = &nconns[id];
        if (!c->used || c->fd < 0)
            continue;
        short ev = 0;
        if (!c->rd_eof && c->unacked < VMP_NET_WINDOW)
            ev |= POLLIN;
        if (c->qlen)
            ev |= POLLOUT;
        if (!ev)
            continue; /* nothing wanted: a hang-up would wake the loop for ever */
        p[n] = (struct pollfd){c->fd, ev, 0};
        ids[n++] = id;
    }
    return n;
}

static void net_step(const struct pollfd *p, const uint16_t *ids, size_t n) {
    static uint8_t buf[VMP_MAX_FRAME];
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == 0xffff) {
            if (p[i].revents & POLLIN)
                net_accept();
            continue;
        }
        uint16_t id = ids[i];
        struct nconn *c = &nconns[id];
        if (c->fd < 0)
            continue;
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) && !c->rd_eof && c->unacked < VMP_NET_WINDOW) {
            size_t want = VMP_NET_WINDOW - c->unacked;
            if (want > sizeof(buf))
                want = sizeof(buf);
            ssize_t r = read(c->fd, buf, want);
            if (r > 0) {
                if (send_frame(VMP_NET_DATA, id, buf, (size_t)r) < 0)
                    power_off();
                c->unacked += (uint32_t)r;
            } else if (r == 0) {
                c->rd_eof = true;
                if (send_frame(VMP_NET_EOF, id, NULL, 0) < 0)
                    power_off();
            } else if (errno != EAGAIN && errno != EINTR) {
                net_close(id);
                continue;
            }
        }
        if (c->qlen && (p[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(c->fd, c->q, c->qlen);
            if (w > 0) {
                memmove(c->q, c->q + w, c->qlen - (size_t)w);
                c->qlen -= (size_t)w;
                net_send_u32(VMP_NET_ACK, id, (uint32_t)w);
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                net_close(id);
                continue;
            }
        }
        if (c->host_eof && !c->qlen && !c->wr_shut) {
            shutdown(c->fd, SHUT_WR);
            c->wr_shut = true;
        }
        if (c->rd_eof && c->wr_shut)
            net_close(id);
    }
}

/* ---- the command ---- */

static uint64_t now_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void exec_child(const struct run *r, int in, int out, int err, int report) {
    /* The workload: its own session, the guest cgroup, the plan's ids. */
    setsid();
    if (write_file(CG "/w/cgroup.procs", "0") < 0)
        goto fail;
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        goto fail;
    static const int res[5] = {0, RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_STACK, RLIMIT_CORE};
    for (int i = 1; i <= 4; i++) {
        struct rlimit rl = {r->rlim[i], r->rlim[i]};
        if (r->rlim_set[i] && setrlimit(res[i], &rl) < 0)
            goto fail;
    }
    if (setgroups(0, NULL) < 0 || setresgid(r->gid, r->gid, r->gid) < 0 || setresuid(r->uid, r->uid, r->uid) < 0)
        goto fail;
    if (r->cwd && chdir(r->cwd) < 0)
        goto fail;
    const char *file = r->argv[0];
    if (strchr(file, '/')) {
        execve(file, r->argv, r->envp);
    } else {
        const char *path = r->path ? r->path : "/usr/bin:/bin";
        char buf[PATH_MAX];
        int last = ENOENT;
        for (const char *p = path; ; ) {
            const char *c = strchr(p, ':');
            size_t l = c ? (size_t)(c - p) : strlen(p);
            if (l && snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, p, file) < (int)sizeof(buf)) {
                execve(buf, r->argv, r->envp);
                if (errno != ENOENT)
                    last = errno;
            }
            if (!c)
                break;
            p = c + 1;
        }
        errno = last;
    }
fail:;
    int e = errno;
    if (write(report, &e, sizeof(e)) < 0)
        _exit(127);
    _exit(127);
}

/* ---- tar of a writable workspace directory (ustar; files and dirs) ---- */

static uint8_t tarbuf[VMP_MAX_FRAME];
static size_t tarlen;
static uint64_t tarsent, tarmax;
static uint16_t tarwhich;
static int tarover;
/* The first entry the stream could not carry, and why: the tree is then
 * not the guest's, and the host says so instead of a success. */
static char tarskip[VMP_GUEST_TEXT_MAX];

static void tar_skip(int e, const char *why, const char *rel, const char *name) {
    if (!tarskip[0] && e != ENOENT) /* (gone since the listing: nothing to carry) */
        snprintf(tarskip, sizeof(tarskip), "%s: %s%s%s", why, rel, *rel && name ? "/" : "", name ? name : "");
}

static void tar_flush(void) {
    if (tarlen && send_frame(VMP_TAR, tarwhich, tarbuf, tarlen) < 0)
        power_off();
    tarlen = 0;
}

static void tar_put(const void *p, size_t n) {
    const uint8_t *b = p;
    if (tarsent + n > tarmax) {
        tarover = 1;
        return;
    }
    tarsent += n;
    while (n) {
        size_t c = sizeof(tarbuf) - tarlen < n ? sizeof(tarbuf) - tarlen : n;
        memcpy(tarbuf + tarlen, b, c);
        tarlen += c;
        b += c;
        n -= c;
        if (tarlen == sizeof(tarbuf))
            tar_flush();
    }
}

static size_t ndigits(size_t x) {
    size_t d = 1;
    for (; x >= 10; x /= 10)
        d++;
    return d;
}

/* One pax record, "LEN key=value\n", LEN counting the record itself. */
static size_t pax_record(char *out, size_t cap, const char *key, const char *val) {
    size_t body = strlen(key) + strlen(val) + 3, d = ndigits(body);
    if (ndigits(body + d) > d)
        d++;
    size_t len = body + d;
    if (len >= cap)
        return 0;
    int n = snprintf(out, cap, "%zu %s=%s\n", len, key, val);
    return n > 0 && (size_t)n == len ? len : 0;
}

static void tar_block(const char *name, const char *prefix, unsigned mode, uint64_t size, struct timespec mtime,
                      char type, const char *link) {
    uint8_t h[512];
    memset(h, 0, sizeof(h));
    memcpy(h, name, strnlen(name, 100));
    snprintf((char *)h + 100, 8, "%07o", mode & 07777);
    snprintf((char *)h + 108, 8, "%07o", 0u);
    snprintf((char *)h + 116, 8, "%07o", 0u);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    bool in_range = mtime.tv_sec > 0 && mtime.tv_sec < 077777777777ll;
    snprintf((char *)h + 136, 12, "%011llo", (unsigned long long)(in_range ? mtime.tv_sec : 0));
    if (in_range && mtime.tv_nsec > 0 && mtime.tv_nsec < 1000000000l)
        snprintf((char *)h + VMP_TAR_NSEC_AT, 10, "%09ld", mtime.tv_nsec);
    memset(h + 148, ' ', 8);
    h[156] = (uint8_t)type;
    if (link)
        memcpy(h + 157, link, strnlen(link, 100));
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memcpy(h + 345, prefix, strnlen(prefix, 155));
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    tar_put(h, sizeof(h));
}

/* An entry's header: ustar's fields when the name (split into prefix and
 * name), the link target and the size fit them, else a pax extended header
 * first that carries what does not (the host reads path, linkpath and
 * size), so that no name is dropped for its length. */
static int tar_header(const char *rel, const struct stat *st, char type, const char *link) {
    size_t l = strlen(rel);
    const char *name = rel, *prefix = "";
    char pre[156];
    bool fits = l <= 100;
    if (!fits) {
        const char *cut = NULL;
        for (const char *s = rel; *s; s++)
            if (*s == '/' && (size_t)(s - rel) <= 155 && l - (size_t)(s - rel) - 1 <= 100)
                cut = s;
        if (cut) {
            snprintf(pre, sizeof(pre), "%.*s", (int)(cut - rel), rel);
            prefix = pre;
            name = cut + 1;
            fits = true;
        }
    }
    uint64_t size = type == '0' ? (uint64_t)st->st_size : 0;
    bool long_link = link && strlen(link) > 100, big = size > 077777777777ull;
    if (!fits || long_link || big) {
        static char recs[2 * PATH_MAX + 128];
        size_t n = 0, k;
        char num[24];
        if (!fits) {
            if (!(k = pax_record(recs + n, sizeof(recs) - n, "path", rel)))
                return -1;
            n += k;
        }
        if (long_link) {
            if (!(k = pax_record(recs + n, sizeof(recs) - n, "linkpath", link)))
                return -1;
            n += k;
        }
        if (big) {
            snprintf(num, sizeof(num), "%llu", (unsigned long long)size);
            if (!(k = pax_record(recs + n, sizeof(recs) - n, "size", num)))
                return -1;
            n += k;
        }
        tar_block("PaxHeader", "", 0644, n, (struct timespec){0, 0}, 'x', NULL);
        tar_put(recs, n);
        static const uint8_t zero[512];
        tar_put(zero, (512 - n % 512) % 512);
        if (!fits) {
            name = rel;
            prefix = "";
        }
        if (big)
            size = 0;
    }
    tar_block(name, prefix, (unsigned)st->st_mode, size, st->st_mtim, type, link);
    return 0;
}

/* ---- what a collected tree held when the command started ----
 *
 * The host already has every file it copied in. A file or link the
 * command did not touch goes back as a header of type 'U' (unchanged, no
 * data), which the host takes as "keep yours": a build tree larger than
 * the output limit, or one of which a build changes little, is not sent
 * whole. A file is unchanged when its change time is before the mark's (a file made on
 * the same filesystem just before the fork: writing, chmod, link and
 * rename all set a file's ctime to the present) and every directory above
 * it is the inode that had that path at the mark (a renamed directory
 * keeps its files' ctimes). Anything else, or a tree that could not be
 * marked, is sent whole. */

static int cmp_mark(const void *a, const void *b) {
    return strcmp(((const struct dirmark *)a)->path, ((const struct dirmark *)b)->path);
}

static bool mark_add(struct collect *c, const char *rel, ino_t ino) {
    if (c->nmarks == c->capmarks) {
        size_t cap = c->capmarks ? c->capmarks * 2 : 64;
        if (cap > (1u << 20))
            return false;
        struct dirmark *n = realloc(c->marks, cap * sizeof(*n));
        if (!n)
            return false;
        c->marks = n;
        c->capmarks = cap;
    }
    struct dirmark *m = &c->marks[c->nmarks];
    if (!(m->path = strdup(rel)))
        return false;
    m->ino = ino;
    c->nmarks++;
    return true;
}

static bool mark_dirs(struct collect *c, int fd, const char *rel, int depth) {
    if (depth > 64)
        return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof(path))
            continue; /* (never sent either) */
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        ok = sub >= 0 && fstat(sub, &st) == 0 && mark_add(c, path, st.st_ino);
        if (ok)
            ok = mark_dirs(c, sub, path, depth + 1);
        else if (sub >= 0)
            close(sub);
    }
    closedir(d);
    return ok;
}

static void mark_tree(struct collect *c) {
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st, m;
    int tmp = open(c->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    bool ok = tmp >= 0 && fstat(tmp, &m) == 0 && fstat(fd, &st) == 0 && m.st_dev == st.st_dev &&
              mark_add(c, "", st.st_ino);
    if (tmp >= 0)
        close(tmp);
    if (ok)
        ok = mark_dirs(c, fd, "", 0); /* (takes fd) */
    else
        close(fd);
    if (!ok) {
        for (size_t i = 0; i < c->nmarks; i++)
            free(c->marks[i].path);
        free(c->marks);
        c->marks = NULL;
        c->nmarks = c->capmarks = 0;
        return;
    }
    qsort(c->marks, c->nmarks, sizeof(*c->marks), cmp_mark);
    c->t0 = m.st_ctim;
    c->dev = m.st_dev;
    c->marked = true;
}

static bool dir_stable(const struct collect *c, const char *rel, ino_t ino) {
    struct dirmark key = {(char *)rel, 0};
    const struct dirmark *m = c->marked ? bsearch(&key, c->marks, c->nmarks, sizeof(*c->marks), cmp_mark) : NULL;
    return m && m->ino == ino;
}

static bool file_unchanged(const struct collect *c, const struct stat *st) {
    return c->marked && st->st_dev == c->dev &&
           (st->st_ctim.tv_sec < c->t0.tv_sec ||
                         (st->st_ctim.tv_sec == c->t0.tv_sec && st->st_ctim.tv_nsec < c->t0.tv_nsec));
}

/* Files of more than one name this stream sent whole, by inode (an open
 * addressing table, at most half full): their other names go as hard
 * links ('1'). Only names sent with their data: the host makes links only
 * to files the stream made. */
static struct sent {
    dev_t dev;
    ino_t ino;
    char *path; /* NULL: a free slot */
} *sents;
static size_t nsents, capsents; /* capsents: a power of two, or 0 */

static size_t sent_slot(const struct sent *t, size_t cap, dev_t dev, ino_t ino) {
    size_t i = (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev) & (cap - 1);
    while (t[i].path && !(t[i].ino == ino && t[i].dev == dev))
        i = (i + 1) & (cap - 1);
    return i;
}

static const char *sent_name(const struct stat *st) {
    return capsents ? sents[sent_slot(sents, capsents, st->st_dev, st->st_ino)].path : NULL;
}

static void sent_add(const struct stat *st, const char *path) {
    if (2 * (nsents + 1) > capsents) {
        size_t cap = capsents ? capsents * 2 : 256;
        struct sent *n = cap <= (1u << 21) ? calloc(cap, sizeof(*n)) : NULL;
        if (!n)
            return; /* (its other names go whole) */
        for (size_t i = 0; i < capsents; i++)
            if (sents[i].path)
                n[sent_slot(n, cap, sents[i].dev, sents[i].ino)] = sents[i];
        free(sents);
        sents = n;
        capsents = cap;
    }
    struct sent *e = &sents[sent_slot(sents, capsents, st->st_dev, st->st_ino)];
    if (!e->path && (e->path = strdup(path))) {
        e->dev = st->st_dev;
        e->ino = st->st_ino;
        nsents++;
    }
}

static void sents_clear(void) {
    for (size_t i = 0; i < capsents; i++) {
        free(sents[i].path);
        sents[i].path = NULL;
    }
    nsents = 0;
}

static void tar_tree(const struct collect *c, int dirfd, const char *rel, int depth, bool stable) {
    if (tarover) {
        close(dirfd);
        return;
    }
    if (depth >= VMP_TAR_DEPTH) { /* (its entries would have depth + 1 components) */
        char why[40];
        snprintf(why, sizeof(why), "deeper than %d levels", VMP_TAR_DEPTH);
        tar_skip(0, why, rel, NULL);
        close(dirfd);
        return;
    }
    const char *first;
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && !tarover) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof(path)) {
            char why[40];
            snprintf(why, sizeof(why), "a path of %d bytes or more", PATH_MAX);
            tar_skip(0, why, rel, e->d_name);
            continue;
        }
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            tar_skip(errno, "cannot be read", rel, e->d_name);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            char dpath[PATH_MAX + 1];
            snprintf(dpath, sizeof(dpath), "%s/", path);
            if (tar_header(dpath, &st, '5', NULL) < 0) {
                tar_skip(0, "a name no header carries", rel, e->d_name);
                continue;
            }
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                tar_tree(c, sub, path, depth + 1, stable && dir_stable(c, path, st.st_ino));
            else
                tar_skip(errno, "cannot be read", rel, e->d_name);
        } else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && stable && file_unchanged(c, &st)) {
            tar_header(path, &st, 'U', NULL); /* (a link is never changed in place: made anew) */
        } else if (S_ISREG(st.st_mode) && st.st_nlink > 1 && (first = sent_name(&st))) {
            /* Another name of a file this stream sent: a hard link to it,
             * as the host's directory would have under a bind mount. */
            tar_header(path, &st, '1', first);
        } else if (S_ISREG(st.st_mode)) {
            int fd = openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                tar_skip(errno, "cannot be read", rel, e->d_name);
                continue;
            }
            if (tar_header(path, &st, '0', NULL) < 0) {
                tar_skip(0, "a name no header carries", rel, e->d_name);
                close(fd);
                continue;
            }
            if (st.st_nlink > 1)
                sent_add(&st, path);
            uint64_t left = (uint64_t)st.st_size;
            static uint8_t buf[65536];
            while (left && !tarover) {
                ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
                if (n <= 0) {
                    /* (the header promised the size: zeros keep the
                     * stream whole, and the tree is said to be wrong) */
                    tar_skip(0, n < 0 ? "failed while being read" : "shrank while being read", rel, e->d_name);
                    memset(buf, 0, (size_t)(n = (ssize_t)(left < sizeof(buf) ? left : sizeof(buf))));
                }
                tar_put(buf, (size_t)n);
                left -= (uint64_t)n;
            }
            close(fd);
            size_t pad = (size_t)((512 - st.st_size % 512) % 512);
            memset(buf, 0, pad);
            tar_put(buf, pad);
        } else if (S_ISLNK(st.st_mode)) {
            /* Made on the host as here: a link is the workload's to make,
             * as under a bind mount, and the host's reader never follows
             * one. */
            char target[PATH_MAX];
            ssize_t tl = readlinkat(dirfd, e->d_name, target, sizeof(target) - 1);
            if (tl <= 0) {
                tar_skip(errno, "cannot be read", rel, e->d_name);
                continue;
            }
            target[tl] = '\0';
            if (tar_header(path, &st, '2', target) < 0)
                tar_skip(0, "a name no header carries", rel, e->d_name);
        }
        /* Devices, FIFOs and sockets are not sent back. */
    }
    closedir(d);
}

static void send_tree(const struct collect *c, uint64_t max) {
    sents_clear(); /* (a link never crosses trees) */
    tarwhich = (uint16_t)c->which;
    tarlen = 0;
    tarmax = max;
    tarskip[0] = '\0';
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0)
        tar_tree(c, fd, "", 0, fstat(fd, &st) == 0 && dir_stable(c, "", st.st_ino));
    static const uint8_t zero[1024];
    if (!tarover)
        tar_put(zero, sizeof(zero));
    tar_flush();
    /* "over", or "skip " and the first entry not carried, or nothing */
    char end[sizeof(tarskip) + 8];
    int n = tarover ? snprintf(end, sizeof(end), "over") : tarskip[0] ? snprintf(end, sizeof(end), "skip %s", tarskip) : 0;
    send_frame(VMP_TAR_END, tarwhich, end, (size_t)n);
}

#ifdef VM_AGENT_MISBEHAVE
/* Tests only (test/vm): a guest that misbehaves as argv[0] says, to check
 * that the host turns each into a typed result within its deadline. */
static void misbehave(const char *how) {
    static uint8_t buf[VMP_MAX_FRAME];
    if (!strcmp(how, "garbage")) {
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = (uint8_t)(i * 7 + 3);
        for (int i = 0; i < 10000; i++)
            if (write_all(ctl, buf, sizeof(buf)) < 0)
                break;
    } else if (!strcmp(how, "flood")) {
        memset(buf, 'x', sizeof(buf));
        for (int i = 0; i < 1000000; i++)
            if (send_frame(VMP_STDOUT, 0, buf, sizeof(buf)) < 0)
                break;
    } else if (!strcmp(how, "hugeframe")) {
        uint8_t h[VMP_HDR];
        vmp_header(h, VMP_STDOUT, 0, 0x7fffffffu);
        write_all(ctl, h, sizeof(h));
    } else if (!strcmp(how, "badexit")) {
        struct vmp_exit ex = {.kind = 1, .code = 999};
        uint8_t b[VMP_EXIT_LEN];
        vmp_put_exit(b, &ex);
        send_frame(VMP_EXIT, 0, b, sizeof(b));
    } else if (!strcmp(how, "escape")) {
        struct vmp_exit ex = {.kind = 1, .code = 0};
        uint8_t b[VMP_EXIT_LEN];
        vmp_put_exit(b, &ex);
        send_frame(VMP_EXIT, 0, b, sizeof(b));
        struct stat st = {.st_mode = 0100644, .st_size = 5};
        tarwhich = VMP_DIR_OUTPUT;
        tarmax = UINT64_MAX;
        tar_header("../escaped", &st, '0', NULL);
        tar_put("evil\n", 5);
        static const uint8_t zero[1024 + 507];
        tar_put(zero, sizeof(zero));
        tar_flush();
        send_frame(VMP_TAR_END, VMP_DIR_OUTPUT, NULL, 0);
        send_frame(VMP_DONE, 0, NULL, 0);
    } else if (!strcmp(how, "netframe")) {
        /* A connection's bytes where the plan has no network (and no such connection). */
        memset(buf, 'n', 100);
        send_frame(VMP_NET_DATA, 3, buf, 100);
    } else if (!strcmp(how, "dnsframe")) {
        /* A DNS query where the plan has no stub (network deny). */
        memset(buf, 'd', 100);
        send_frame(VMP_DNS_QUERY, 3, buf, 100);
    } else if (!strcmp(how, "panic")) {
        exit(3); /* init exits: the guest kernel panics */
    }
    /* "silent" and everything after: never answer again. */
    for (;;)
        pause();
}
#endif

/* ---- main ---- */

/* A pre-started clone, before any claim (VMP_IDLE): under TCG every code
 * path of the guest's kernel is translated on its first use in this QEMU,
 * so the clone takes an attempt's kernel paths once ahead of its claim:
 * the workload's cgroup made and limited, a child set up as a workload is
 * (session, cgroup, descriptors, limits, ids, directory) executing the
 * agent's own file (which, not pid 1, exits at once), reaped with its
 * usage, the cgroup killed and removed; a tmpfs and the first 9p share's
 * stub (empty: nothing of any attempt is attached yet) mounted and let
 * go of. Nothing of any attempt is involved, and nothing of it stays. */
static void warm_up(void) {
    static struct run w;
    w.argv[0] = (char *)"/init";
    w.argc = 1;
    w.uid = w.gid = 65534;
    w.memory = 64u << 20;
    w.pids = 16;
    w.cwd = "/";
    w.rlim[VMP_RLIMIT_CORE] = 0;
    w.rlim_set[VMP_RLIMIT_CORE] = true;
    setup_cgroup(&w);
    int pin[2], pout[2], prep[2];
    if (pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0 && pipe2(prep, O_CLOEXEC) == 0) {
        pid_t c = fork();
        if (c == 0)
            exec_child(&w, pin[0], pout[1], pout[1], prep[1]);
        close(pin[0]);
        close(pout[1]);
        close(prep[1]);
        int e = 0;
        if (c > 0 && read(prep[0], &e, sizeof(e)) < 0)
            e = errno;
        struct rusage ru;
        if (c > 0)
            wait4(c, NULL, 0, &ru);
        close(pin[1]);
        close(pout[0]);
        close(prep[0]);
    }
    write_file(CG "/w/cgroup.kill", "1");
    (void)cg_key(CG "/w/memory.events", "oom_kill");
    rmdir(CG "/w");
    if (mkdir("/.warm", 0700) == 0 || errno == EEXIST) {
        if (mount("tmpfs", "/.warm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=700,size=65536") == 0)
            umount2("/.warm", MNT_DETACH);
        if (mount("r0", "/.warm", "9p", MS_RDONLY | MS_NOSUID | MS_NODEV,
                  "trans=virtio,version=9p2000.L,cache=loose,msize=262144") == 0) {
            struct stat st;
            stat("/.warm/" VMP_SHARE_SUB, &st);
            umount2("/.warm", MNT_DETACH);
        }
        rmdir("/.warm");
    }
}

int main(void) {
    if (getpid() != 1)
        return 2;
    chmod("/", 0755);
    mkdir("/proc", 0555);
    mkdir("/sys", 0555);
    mkdir("/dev", 0755);
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
    console = open("/dev/console", O_WRONLY | O_CLOEXEC | O_NOCTTY);
    load_modules();
    lock_modules();
    ctl = open_port();
    if (ctl < 0)
        fail(errno, "open the control port fy.ctl");
    /* The host's side needs no more of /dev: the workload gets a fresh one. */
    umount2("/dev", MNT_DETACH);
    minimal_dev();
    lo_up();
    cgroup_root();
    if (send_frame(VMP_HELLO, 0, AGENT_VERSION, strlen(AGENT_VERSION)) < 0)
        power_off();

    static struct vmp_dec dec;
    vmp_dec_init(&dec);
    struct vmp_frame f;
    static struct run run;
    uint64_t idle_until = 0; /* a pre-started clone's (VMP_IDLE) */
    for (;;) {
        int k = vmp_next(&dec, &f);
        if (k < 0)
            fail(EPROTO, "control stream: %s", dec.error);
        if (k == 1 && f.type == VMP_RUN)
            break;
        if (k == 1 && f.type == VMP_IDLE && f.len == 4) {
            idle_until = now_usec() + (uint64_t)vmp_get_u32(f.data) * 1000u;
            warm_up();
            if (send_frame(VMP_HELLO, 0, AGENT_VERSION, strlen(AGENT_VERSION)) < 0)
                power_off(); /* ready for a claim */
            continue;
        }
        if (k == 1 && f.type == VMP_RESEED) {
            /* restored from a template: reseeded, then up again */
            idle_until = 0;
            reseed(f.data, f.len);
            static const char msg[] = "restored from a template: RNG reseeded (RNDADDENTROPY 512 bits, "
                                      "RNDRESEEDCRNG), clock set; ";
            if (send_frame(VMP_HELLO, 0, AGENT_VERSION, strlen(AGENT_VERSION)) < 0 ||
                send_frame(VMP_LOG, 0, msg, sizeof(msg) - 1) < 0)
                power_off();
        } else if (k == 1 && f.type == VMP_FILES) {
            files_feed(f.data, f.len);
        } else if (k == 1 && f.type == VMP_FILES_END) {
            if (!cp.done || cp.have || cp.in_data || cp.pad)
                fail(EINVAL, "the attempt's files ended early");
            cp_dirs_stamp();
        }
        if (k == 1)
            continue;
        if (idle_until) {
            /* Unclaimed past its idle limit: the clone ends itself. */
            uint64_t t = now_usec();
            struct pollfd pf = {ctl, POLLIN, 0};
            int pr = t >= idle_until ? 0 : poll(&pf, 1, (int)((idle_until - t + 999) / 1000));
            if (pr == 0)
                power_off();
            if (pr < 0)
                continue;
        }
        size_t room = vmp_room(&dec);
        ssize_t n = read(ctl, dec.buf + dec.have, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            power_off();
        vmp_added(&dec, (size_t)n);
    }
    uint64_t t_run = now_usec();
    parse_run(f.data, f.len, &run);
    uint64_t t_mounted = now_usec();
#ifdef VM_AGENT_MISBEHAVE
    misbehave(run.argv[0]);
#endif
    if (run.hostname && sethostname(run.hostname, strlen(run.hostname)) < 0)
        fail(errno, "sethostname");
    /* devices.pty deny (the default): no terminal at all, as in the
     * namespace backend (/dev holds them from before the hello, for the
     * template's sake). */
    if (!run.ptys && ((umount2("/dev/pts", MNT_DETACH) < 0 && errno != EINVAL) || (unlink("/dev/ptmx") < 0 && errno != ENOENT) ||
                      (rmdir("/dev/pts") < 0 && errno != ENOENT) || (unlink("/dev/tty") < 0 && errno != ENOENT)))
        fail(errno, "removing the terminals");
    if (run.iface_set)
        iface_up(&run.iface);
    setup_cgroup(&run);
    if (run.net_port)
        net_listen(run.net_port);
    if (run.dns)
        dns_listen();
    report_enforced(&run);
    uint64_t t_setup = now_usec();
    if (!run.output_max)
        run.output_max = UINT64_MAX;

    int pin[2], pout[2], perr[2], prep[2];
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 ||
        pipe2(prep, O_CLOEXEC) < 0)
        fail(errno, "pipe");
    /* Before the fork: what the trees held before anything of the
     * command's ran (the host has all of it). */
    for (size_t i = 0; i < ncollect; i++)
        mark_tree(&collects[i]);
    uint64_t t_exec = now_usec();
    pid_t child = fork();
    if (child < 0)
        fail(errno, "fork");
    if (child == 0)
        exec_child(&run, pin[0], pout[1], perr[1], prep[1]);
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    close(prep[1]);
    int e = 0;
    ssize_t rn = read(prep[0], &e, sizeof(e));
    close(prep[0]);
    uint64_t t_execd = now_usec();
    if (rn == (ssize_t)sizeof(e)) {
        waitpid(child, NULL, 0);
        fail(e, "execute %s", run.argv[0]);
    }
    fcntl(pin[1], F_SETFL, O_NONBLOCK);
    /* The child's end wakes the loop (no polling interval); a kernel
     * without pidfd_open falls back to a 20 ms poll. */
    int child_fd = (int)syscall(SYS_pidfd_open, child, 0);

    /* Forward: control -> stdin, signals; stdout/stderr -> control. */
    static uint8_t inq[1 << 20];
    size_t inq_len = 0;
    bool in_eof = false;
    int fds[2] = {pout[0], perr[0]};
    int status = 0;
    bool exited = false;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    uint64_t t_exit = 0;
    bool first_round = true;
    while (!exited || fds[0] >= 0 || fds[1] >= 0) {
        /* Flow control: the port is read while stdin's queue has room. */
        bool inq_room = inq_len + VMP_MAX_FRAME <= sizeof(inq);
        struct pollfd p[5 + VMP_NET_CONNS + 1 + 1 + 1 + DTCP_CONNS] = {{inq_room ? ctl : -1, POLLIN, 0}, {fds[0], POLLIN, 0},
                                                      {fds[1], POLLIN, 0}, {pin[1], inq_len ? POLLOUT : 0, 0},
                                                      {exited ? -1 : child_fd, POLLIN, 0}};
        static uint16_t nids[1 + VMP_NET_CONNS];
        size_t nn = net_poll_set(p + 5, nids);
        p[5 + nn] = (struct pollfd){dns_fd, POLLIN, 0}; /* (-1: ignored) */
        p[6 + nn] = (struct pollfd){dns_tfd, POLLIN, 0};
        bool dtcp_open = false;
        for (int i = 0; i < DTCP_CONNS; i++) {
            p[7 + nn + i] = dns_tfd >= 0 && dtcp[i].fd >= 0 ? dtcp_pollfd(&dtcp[i]) : (struct pollfd){-1, 0, 0};
            dtcp_open |= dns_tfd >= 0 && dtcp[i].fd >= 0;
        }
        if (!exited) {
            pid_t w = wait4(child, &status, WNOHANG, &ru);
            if (w == child) {
                exited = true;
                if (child_fd >= 0)
                    close(child_fd);
                child_fd = -1;
                t_exit = now_usec();
                /* As in the namespace backend: the command's end is the
                 * tree's end (a daemon holding its output open included). */
                write_file(CG "/w/cgroup.kill", "1");
                continue;
            }
        }
        /* The first round does not wait: frames that came with the RUN
         * are decoded below, after it. */
        int pr = poll(p, 7 + nn + DTCP_CONNS,
                      first_round ? 0 : dtcp_open ? 500 : exited || child_fd >= 0 ? -1 : 20);
        first_round = false;
        if (pr < 0 && errno != EINTR)
            break;
        if (pr > 0 && nn)
            net_step(p + 5, nids, nn);
        if (pr > 0 && dns_fd >= 0 && (p[5 + nn].revents & POLLIN))
            dns_read();
        if (dns_tfd >= 0) {
            uint64_t now = now_usec();
            for (int i = 0; i < DTCP_CONNS; i++)
                dtcp_step(&dtcp[i], pr > 0 ? p[7 + nn + i].revents : 0, now);
            if (pr > 0 && (p[6 + nn].revents & POLLIN))
                dtcp_accept(now);
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i] < 0 || !(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            static uint8_t buf[VMP_MAX_FRAME];
            ssize_t n = read(fds[i], buf, sizeof(buf));
            if (n > 0) {
                if (send_frame(i == 0 ? VMP_STDOUT : VMP_STDERR, 0, buf, (size_t)n) < 0)
                    power_off();
            } else if (n == 0 || errno != EINTR) {
                close(fds[i]);
                fds[i] = -1;
            }
        }
        if (p[0].revents & POLLIN) {
            size_t room = vmp_room(&dec);
            ssize_t n = read(ctl, dec.buf + dec.have, room);
            if (n == 0)
                power_off(); /* the host is gone */
            if (n > 0)
                vmp_added(&dec, (size_t)n);
        }
        {
            /* Frames that came with the RUN are already buffered. */
            int k = 0;
            while (inq_len + VMP_MAX_FRAME <= sizeof(inq) && (k = vmp_next(&dec, &f)) == 1) {
                if (f.type == VMP_STDIN && !in_eof && pin[1] >= 0) {
                    size_t c = f.len < sizeof(inq) - inq_len ? f.len : sizeof(inq) - inq_len;
                    memcpy(inq + inq_len, f.data, c);
                    inq_len += c;
                } else if (f.type == VMP_STDIN_EOF) {
                    in_eof = true;
                } else if (f.type == VMP_SIGNAL && f.len == 4 && !exited) {
                    kill(-child, (int)vmp_get_u32(f.data));
                } else if (f.type >= VMP_NET_OPEN && f.type <= VMP_NET_CLOSE) {
                    net_frame(&f);
                } else if (f.type == VMP_DNS_ANSWER) {
                    dns_answer(&f);
                }
            }
            if (k < 0)
                power_off();
        }
        if (pin[1] >= 0 && inq_len && (p[3].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(pin[1], inq, inq_len);
            if (n > 0) {
                memmove(inq, inq + n, inq_len - (size_t)n);
                inq_len -= (size_t)n;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                inq_len = 0;
                close(pin[1]);
                pin[1] = -1;
            }
        }
        if (pin[1] >= 0 && in_eof && !inq_len) {
            close(pin[1]);
            pin[1] = -1;
        }
        if (exited && pin[1] >= 0) {
            close(pin[1]);
            pin[1] = -1;
        }
    }
    /* Whatever the workload left running in its cgroup ends with it; its
     * CPU and memory counts are read once it is empty (bounded: 2 s). */
    write_file(CG "/w/cgroup.kill", "1");
    for (int i = 0; i < 200 && cg_key(CG "/w/cgroup.events", "populated"); i++)
        usleep(10000);

    struct vmp_exit ex = {0};
    if (WIFEXITED(status)) {
        ex.kind = 1;
        ex.code = (uint32_t)WEXITSTATUS(status);
    } else {
        ex.kind = 2;
        ex.code = (uint32_t)WTERMSIG(status);
    }
    ex.oom_kills = (uint32_t)cg_key(CG "/w/memory.events", "oom_kill");
    ex.pids_max = (uint32_t)cg_key(CG "/w/pids.events", "max");
    ex.utime_usec = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
    ex.stime_usec = (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
    ex.maxrss_kb = (uint64_t)ru.ru_maxrss;
    /* The cgroup's counts cover what the command's waited-for children
     * used (rusage's) and what its orphans used too, which rusage never
     * sees: a command that left a busy child behind reported 32 ms of 3 s. */
    uint64_t cu = cg_key(CG "/w/cpu.stat", "user_usec"), cs = cg_key(CG "/w/cpu.stat", "system_usec");
    if (cu > ex.utime_usec)
        ex.utime_usec = cu;
    if (cs > ex.stime_usec)
        ex.stime_usec = cs;
    ex.memory_peak = cg_value(CG "/w/memory.peak");
    ex.run_usec = t_exit > t_exec ? t_exit - t_exec : 0;
    {
        char tm[160];
        int tn = snprintf(tm, sizeof(tm), "; guest usec: mounts %llu, cgroup %llu, fork+exec %llu, to exit %llu",
                          (unsigned long long)(t_mounted - t_run), (unsigned long long)(t_setup - t_mounted),
                          (unsigned long long)(t_execd - t_exec), (unsigned long long)(t_exit - t_execd));
        send_frame(VMP_LOG, 0, tm, (size_t)tn);
    }
    uint8_t buf[VMP_EXIT_LEN];
    vmp_put_exit(buf, &ex);
    if (send_frame(VMP_EXIT, 0, buf, sizeof(buf)) < 0)
        power_off();
    uint64_t budget = run.output_max;
    for (size_t i = 0; i < ncollect; i++) {
        tarsent = 0;
        tarover = 0;
        send_tree(&collects[i], budget);
        budget = budget > tarsent ? budget - tarsent : 0;
    }
    send_frame(VMP_DONE, 0, NULL, 0);
    /* Not our own power-off yet: a write to the port returns once its
     * buffer is queued, not once QEMU has passed it on, and QEMU holds
     * what the host has not read yet (a socket that was full). Powering
     * off here dropped the end of the trees, so the host (which reads
     * them in order) ends the VM once it has "done"; this is a fallback
     * if it does not. */
    for (int i = 0; i < 120; i++)
        usleep(500000);
    power_off();
}
