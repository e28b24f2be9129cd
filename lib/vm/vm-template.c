/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Templates (vm-template.h). A template is made once per machine: the
 * kernel and the agent's initramfs (by digest), the QEMU build (its
 * binary's identity), the accelerator, the guest's memory and CPUs, the
 * number of 9p devices and the kernel command line; their SHA-256 names
 * it. QEMU boots the agent's initramfs alone, with no host directory
 * behind its 9p devices (an empty directory of the build stands in); once
 * the agent said hello, it is stopped and its state, the guest RAM
 * included, is written by QEMU's migration to a file descriptor this
 * process passed over QMP (getfd: Debian 12's QEMU 7.2 has no file:
 * migration, and its seccomp sandbox forbids exec:). Nothing of an attempt
 * exists yet: no host path, plan, secret, environment or workload byte.
 *
 * The cache is <cache root>/templates, a directory of this user with mode
 * 0700 (anything else is refused, not repaired). An entry is written in a
 * directory of its own and renamed into place complete, with a manifest
 * naming its key, the state's SHA-256 and size; every use checks the
 * state's owner, mode, size and SHA-256 against it, and an entry that
 * fails is removed and made again. Every attempt restores the state into a
 * fresh QEMU (-incoming fd:0) whose RAM is its own (anonymous, filled from
 * the stream): no guest memory is shared between attempts, even read-only.
 *
 * A machine with restricted's NIC is another machine (its key says so): its
 * template is made with the virtio-net device on a hub port leading
 * nowhere, and its restore has the router's tap on stdin, so that QEMU gets
 * the state's descriptor over a monitor socket it connects to and this
 * process listens on (vm_qmp_listen, vm_template_restore). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "forgeyard/sandbox.h"
#include "linux-probe-util.h"
#include "linux-scm.h"
#include "vm-proto.h"
#include "vm-template.h"
#include "internal.h"

#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)
#define TEMPLATE_FORMAT "forgeyard vm template 1"

static void hex(const unsigned char *h, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[h[i] >> 4];
        out[2 * i + 1] = d[h[i] & 15];
    }
    out[2 * n] = '\0';
}

int vm_template_dir(char *buf, size_t len) {
    char root[4096];
    if (vm_cache_root(root, sizeof(root)) < 0)
        return FY_E_RANGE;
    int n = snprintf(buf, len, "%s/templates", root);
    return n > 0 && (size_t)n < len ? 0 : FY_E_RANGE;
}

int vm_template_key(struct vm_plan *pl) {
    struct stat st;
    char qemu[512];
    if (stat(pl->qemu, &st) == 0)
        snprintf(qemu, sizeof(qemu), "%s %llu %lld %lld.%09ld", pl->qemu, (unsigned long long)st.st_ino,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    else
        snprintf(qemu, sizeof(qemu), "%s -", pl->qemu);
    /* The command line without tsc_early_khz: it only spares a booting
     * guest its calibration, and "cpu MHz" moves on hosts that scale
     * their clock (a template per reading would be useless). */
    char cmdline[1024];
    snprintf(cmdline, sizeof(cmdline), "%s", pl->cmdline);
    char *tsc = strstr(cmdline, " tsc_early_khz=");
    if (tsc)
        *tsc = '\0';
    /* Which 9p devices are writable (none: the key is as before). */
    char rw[16 * 4 + 8] = "";
    for (size_t i = 0; i < pl->nmounts && i < 16; i++)
        if (pl->mounts[i].writable)
            snprintf(rw + strlen(rw), sizeof(rw) - strlen(rw), "%sr%zu", rw[0] ? "," : " rw=", i);
    free(pl->template_inputs);
    /* A machine with the restricted network's device is another machine
     * (a deny guest has no NIC, a restricted one must find its own): one
     * more line, absent without it (the key of a machine without a NIC is
     * as before). */
    pl->template_inputs = util_asprintf("%s\nvmlinuz_sha256 %s\ninitramfs_sha256 %s\nqemu %s\n"
                                        "machine microvm,acpi=on accel=%s memory=%lluM cpus=%u 9p=%zu%s\n"
                                        "cmdline %s\n%s",
                                        TEMPLATE_FORMAT, pl->k.vmlinuz_digest, pl->k.initrd_digest, qemu,
                                        pl->kvm ? "kvm" : "tcg", (unsigned long long)(pl->guest_mem / MiB),
                                        pl->smp, pl->nmounts, rw, cmdline,
                                        pl->nic ? "nic virtio-net-device mac=" VM_NIC_MAC " netdev=n0 (made on a "
                                                  "hub port leading nowhere, restored on the router's tap)\n"
                                                : "");
    if (!pl->template_inputs)
        return FY_E_NOMEM;
    struct digest d;
    unsigned char h[32];
    if (digest_init(&d) < 0)
        return FY_E_NOMEM;
    digest_update(&d, pl->template_inputs, strlen(pl->template_inputs));
    digest_final(&d, h);
    hex(h, sizeof(h), pl->template_key);
    return 0;
}

/* The cache directory must be this user's alone. */
static int check_dir(const char *dir, fy_error **reterr) {
    struct stat st;
    if (lstat(dir, &st) < 0)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "template cache %s: %s", dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return err_set(reterr, FY_E_UNSAFE, FY_STEP_SPAWN, 0, NULL,
                       "the template cache %s is refused: %s (mode %04o, owner %u; it must be a directory of "
                       "uid %u with mode 0700)",
                       dir, !S_ISDIR(st.st_mode) ? "not a directory" : st.st_uid != geteuid() ? "wrong owner"
                                                                                              : "wrong mode",
                       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)geteuid());
    return 0;
}

/* The SHA-256 of fd's first size bytes; with copy >= 0, the bytes are
 * also written there. */
static int hash_copy_fd(int fd, uint64_t size, char out[65], int copy);

static int hash_fd(int fd, uint64_t size, char out[65]) { return hash_copy_fd(fd, size, out, -1); }

static int hash_copy_fd(int fd, uint64_t size, char out[65], int copy) {
    struct digest d;
    if (digest_init(&d) < 0)
        return -ENOMEM;
    size_t cap = 1u << 20;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        digest_abandon(&d);
        return -ENOMEM;
    }
    uint64_t off = 0;
    while (off < size) {
        ssize_t n = pread(fd, buf, size - off < cap ? (size_t)(size - off) : cap, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            free(buf);
            digest_abandon(&d);
            return -e;
        }
        digest_update(&d, buf, (size_t)n);
        for (ssize_t w = 0; copy >= 0 && w < n;) {
            ssize_t k = pwrite(copy, buf + w, (size_t)(n - w), (off_t)(off + (uint64_t)w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                int e = k < 0 ? errno : EIO;
                free(buf);
                digest_abandon(&d);
                return -e;
            }
            w += k;
        }
        off += (uint64_t)n;
    }
    free(buf);
    unsigned char h[32];
    digest_final(&d, h);
    hex(h, sizeof(h), out);
    return 0;
}

static void remove_entry(const char *dir) {
    static const char *const files[] = {"state", "manifest"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(files); i++) {
        char p[4400];
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* ---- the process's sealed copies of checked states ---- */

static pthread_mutex_t sealed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sealed {
    int fd;                  /* memfd, F_SEAL_WRITE|SHRINK|GROW|SEAL; -1: free */
    char key[65], sha[65];
    uint64_t size, at, used;
    dev_t dev;
    ino_t ino;
    struct timespec mtim, ctim;
} sealed[2] = {{.fd = -1}, {.fd = -1}};
static uint64_t sealed_clock;

#define ALL_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* A fork while another thread updated the copies: the child forgets them
 * (their descriptors stay open in it; it checks the state afresh). */
static void sealed_fork_child(void) {
    if (util_mutex_reclaim(&sealed_lock))
        sealed[0].fd = sealed[1].fd = -1;
}

__attribute__((constructor)) static void sealed_register_fork(void) { util_on_fork_child(sealed_fork_child); }

static bool same_file(const struct sealed *c, const struct stat *st) {
    return c->dev == st->st_dev && c->ino == st->st_ino && c->size == (uint64_t)st->st_size &&
           c->mtim.tv_sec == st->st_mtim.tv_sec && c->mtim.tv_nsec == st->st_mtim.tv_nsec &&
           c->ctim.tv_sec == st->st_ctim.tv_sec && c->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/* A fresh read-only description (its own offset, at 0) of the sealed copy
 * checked against this very file, or -1. */
static int sealed_open(const struct vm_template *t, uint64_t *at_ret) {
    int fd = -1;
    uint64_t at = 0;
    pthread_mutex_lock(&sealed_lock);
    for (size_t i = 0; i < FY_ARRAY_SIZE(sealed); i++) {
        struct sealed *c = &sealed[i];
        if (c->fd < 0 || strcmp(c->key, t->key) || strcmp(c->sha, t->state_sha256) || !same_file(c, &t->st))
            continue;
        struct stat ms;
        if (fcntl(c->fd, F_GET_SEALS) != ALL_SEALS || fstat(c->fd, &ms) < 0 || (uint64_t)ms.st_size != c->size)
            break;
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", c->fd);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            c->used = ++sealed_clock;
            at = c->at;
        }
        break;
    }
    pthread_mutex_unlock(&sealed_lock);
    *at_ret = at;
    return fd;
}

/* A copy is made from the second check of a template in this process on: a
 * process that runs one attempt (the CLI) does not pay for it. */
static bool sealed_wanted(const struct vm_template *t) {
    static char last[65];
    pthread_mutex_lock(&sealed_lock);
    bool again = !strcmp(last, t->key);
    memcpy(last, t->key, sizeof(last));
    pthread_mutex_unlock(&sealed_lock);
    return again;
}

static uint64_t realtime_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Keeps a sealed copy whose SHA-256 matched (replacing the least used). */
static void sealed_keep(const struct vm_template *t, int mfd) {
    pthread_mutex_lock(&sealed_lock);
    struct sealed *c = &sealed[0];
    for (size_t i = 0; i < FY_ARRAY_SIZE(sealed); i++) {
        if (sealed[i].fd >= 0 && !strcmp(sealed[i].key, t->key)) {
            c = &sealed[i];
            break;
        }
        if (sealed[i].fd < 0 || (c->fd >= 0 && sealed[i].used < c->used))
            c = &sealed[i];
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = mfd;
    memcpy(c->key, t->key, sizeof(c->key));
    memcpy(c->sha, t->state_sha256, sizeof(c->sha));
    c->size = t->state_size;
    c->at = realtime_usec();
    c->used = ++sealed_clock;
    c->dev = t->st.st_dev;
    c->ino = t->st.st_ino;
    c->mtim = t->st.st_mtim;
    c->ctim = t->st.st_ctim;
    pthread_mutex_unlock(&sealed_lock);
}

/* 1: a verified template (t->fd); 0: none or refused (t->refused says why). */
static int verify(const char *entry, const struct vm_plan *pl, struct vm_template *t, bool defer) {
    char p[4400], text[1024];
    snprintf(p, sizeof(p), "%s/manifest", entry);
    int mfd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (mfd < 0) {
        if (errno != ENOENT)
            snprintf(t->refused, sizeof(t->refused), "manifest: %s", strerror(errno));
        return 0;
    }
    ssize_t n = read(mfd, text, sizeof(text) - 1);
    close(mfd);
    text[n > 0 ? n : 0] = '\0';
    char key[65] = "", sha[65] = "";
    unsigned long long size = 0;
    if (sscanf(text, "key %64s state_sha256 %64s state_size %llu", key, sha, &size) != 3 || strlen(key) != 64 ||
        strlen(sha) != 64) {
        snprintf(t->refused, sizeof(t->refused), "malformed manifest");
        return 0;
    }
    if (strcmp(key, pl->template_key) != 0) {
        snprintf(t->refused, sizeof(t->refused), "the manifest names another key (%.16s)", key);
        return 0;
    }
    snprintf(p, sizeof(p), "%s/state", entry);
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(t->refused, sizeof(t->refused), "state: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return 0;
    }
    const char *bad = !S_ISREG(st.st_mode) ? "not a regular file" : st.st_uid != geteuid() ? "wrong owner"
                      : (st.st_mode & 022) ? "writable by others" : (uint64_t)st.st_size != size ? "wrong size" : NULL;
    if (bad) {
        snprintf(t->refused, sizeof(t->refused), "state: %s", bad);
        close(fd);
        return 0;
    }
    memcpy(t->state_sha256, sha, sizeof(t->state_sha256));
    memcpy(t->key, key, sizeof(t->key));
    t->state_size = size;
    t->st = st;
    int sfd = sealed_open(t, &t->sealed_at);
    if (sfd >= 0) {
        close(fd);
        t->fd = sfd;
        t->from_sealed = true;
        t->digest_pending = false;
        return 1;
    }
    t->fd = fd;
    t->digest_pending = true;
    if (!defer && vm_template_check(t) < 0) {
        close(t->fd);
        t->fd = -1;
        return 0;
    }
    return 1;
}

int vm_template_check(struct vm_template *t) {
    if (!t->digest_pending)
        return 0;
    uint64_t t0 = util_now_usec();
    char got[65];
    /* The bytes hashed are also copied into a memfd, sealed once they all
     * are: if they match, later attempts of this process restore that copy
     * (sealed_open) instead of hashing the file again. */
    int mfd = t->key[0] && sealed_wanted(t) ? memfd_create("fy-vm-template", MFD_CLOEXEC | MFD_ALLOW_SEALING) : -1;
    if (mfd >= 0 && ftruncate(mfd, (off_t)t->state_size) < 0) {
        close(mfd);
        mfd = -1;
    }
    int r = hash_copy_fd(t->fd, t->state_size, got, mfd);
    if (r < 0 && mfd >= 0) {
        /* the copy failed (memory): hash without one */
        close(mfd);
        mfd = -1;
        r = hash_fd(t->fd, t->state_size, got);
    }
    t->verify_usec = util_now_usec() - t0;
    if (r < 0 || strcmp(got, t->state_sha256) != 0) {
        if (mfd >= 0)
            close(mfd);
        snprintf(t->refused, sizeof(t->refused), r < 0 ? "state unreadable: %s" : "state digest mismatch (%s)",
                 r < 0 ? strerror(-r) : got);
        return FY_E_INTEGRITY;
    }
    t->digest_pending = false;
    if (mfd >= 0) {
        /* Only this function ever wrote it; sealed, it can no longer change. */
        if (fcntl(mfd, F_ADD_SEALS, ALL_SEALS) == 0)
            sealed_keep(t, mfd);
        else
            close(mfd);
    }
    return 0;
}

void vm_template_discard(const struct vm_plan *pl) {
    char tdir[4096], entry[4400];
    if (vm_template_dir(tdir, sizeof(tdir)) < 0)
        return;
    snprintf(entry, sizeof(entry), "%s/%s", tdir, pl->template_key);
    remove_entry(entry);
}

/* ---- QMP, just enough ---- */

struct qmp {
    int fd;
    char buf[65536];
    size_t len;
    uint64_t deadline;
};

/* A monitor connection on fd (not owned: the caller closes it) whose
 * every read and write ends by deadline; NULL, saying why, out of memory. */
static struct qmp *qmp_new(int fd, uint64_t deadline, char *why, size_t wlen) {
    struct qmp *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(why, wlen, "out of memory");
        return NULL;
    }
    q->fd = fd;
    q->deadline = deadline;
    return q;
}

/* The next line that is not an event, parsed. */
static json_t *qmp_read(struct qmp *q) {
    for (;;) {
        char *nl = memchr(q->buf, '\n', q->len);
        if (nl) {
            size_t l = (size_t)(nl - q->buf) + 1;
            json_t *j = json_loadb(q->buf, l, 0, NULL);
            memmove(q->buf, q->buf + l, q->len - l);
            q->len -= l;
            if (j && json_object_get(j, "event")) {
                json_decref(j);
                continue;
            }
            if (j)
                return j;
            continue;
        }
        if (q->len == sizeof(q->buf))
            return NULL;
        uint64_t now = util_now_usec();
        if (now >= q->deadline)
            return NULL;
        struct pollfd p = {q->fd, POLLIN, 0};
        int k = poll(&p, 1, (int)((q->deadline - now) / 1000 + 1));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return NULL;
        ssize_t n = recv(q->fd, q->buf + q->len, sizeof(q->buf) - q->len, 0);
        if (n <= 0)
            return NULL;
        q->len += (size_t)n;
    }
}

/* 0 and *ret (may be NULL) the "return" member, or -1 and why. */
static int qmp_cmd(struct qmp *q, const char *cmd, int pass_fd, json_t **ret, char *why, size_t wlen) {
    if (scm_send_one(q->fd, cmd, strlen(cmd), pass_fd, 0) != (ssize_t)strlen(cmd)) {
        snprintf(why, wlen, "QMP %s: send: %s", cmd, strerror(errno));
        return -1;
    }
    json_t *j = qmp_read(q);
    if (!j) {
        snprintf(why, wlen, "QMP %s: no answer", cmd);
        return -1;
    }
    json_t *err = json_object_get(j, "error");
    if (err) {
        const char *d = json_string_value(json_object_get(err, "desc"));
        snprintf(why, wlen, "QMP %s: %s", cmd, d ? d : "error");
        json_decref(j);
        return -1;
    }
    if (ret)
        *ret = json_incref(json_object_get(j, "return"));
    json_decref(j);
    return 0;
}

/* ---- a restricted restore's monitor (stdin is the router's tap) ---- */

int vm_qmp_listen(const char *dir, int *lfd) {
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" VM_QMP_SOCK, dfd);
    int e = 0;
    if (dfd < 0 || l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 4) < 0)
        e = errno;
    /* connect(2) needs write permission on the socket and QEMU runs
     * under another id: who connected is checked at accept (vm_qmp_peer_is_vmm),
     * and the directory's name is random under a parent nobody else may
     * list. */
    if (!e && fchmodat(AT_FDCWD, sa.sun_path, 0666, 0) < 0)
        e = errno;
    if (dfd >= 0)
        close(dfd);
    if (e) {
        if (l >= 0)
            close(l);
        return -e;
    }
    *lfd = l;
    return 0;
}


/* The connecting process is this attempt's QEMU: a descendant of this
 * process (the VMM's sandbox is: no other process can become one), its
 * command line carries the attempt's random "-name fy-TOKEN" and, where
 * this process may read it, its executable is the plan's QEMU binary. */
bool vm_qmp_peer_is_vmm(int fd, const char *qemu, const char *token) {
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr) || cr.pid <= 0)
        return false;
    pid_t me = getpid(), up = cr.pid;
    for (int depth = 0; up > 1 && up != me && depth < 32; depth++)
        up = pu_proc_parent(up);
    if (up != me)
        return false;
    char p[64], want[64];
    snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)cr.pid);
    snprintf(want, sizeof(want), "fy-%s", token);
    int c = open(p, O_RDONLY | O_CLOEXEC);
    if (c < 0)
        return false;
    char *buf = malloc(65536);
    if (!buf) {
        close(c);
        return false;
    }
    size_t have = 0;
    for (ssize_t n; have < 65535 && (n = read(c, buf + have, 65535 - have)) > 0;)
        have += (size_t)n;
    close(c);
    buf[have] = '\0';
    bool named = false;
    for (size_t i = 0; i < have && !named; i += strlen(buf + i) + 1)
        named = !strcmp(buf + i, "-name") && i + 6 < have && !strcmp(buf + i + 6, want);
    free(buf);
    if (!named)
        return false;
    struct stat a, b;
    snprintf(p, sizeof(p), "/proc/%d/exe", (int)cr.pid);
    if (stat(p, &a) < 0)
        return errno == EACCES || errno == EPERM; /* not ours to read: the name stands */
    return stat(qemu, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Accepts the monitor connection of vmm's QEMU (the peer proven; anyone
 * else closed unspoken to) and negotiates QMP: the connected fd, or -1
 * and why. */
static int qmp_accept(const struct vm_plan *pl, int lfd, fy_handle *vmm, const char *token, uint64_t deadline,
                      char *why, size_t wlen) {
    int fd = -1;
    while (fd < 0) {
        uint64_t now = util_now_usec();
        if (now >= deadline) {
            snprintf(why, wlen, "QEMU's monitor did not connect within 60 s");
            return -1;
        }
        struct pollfd p[2] = {{lfd, POLLIN, 0}, {fy_handle_get_fd(vmm), POLLIN, 0}};
        int k = poll(p, 2, (int)((deadline - now) / 1000 + 1));
        if (k < 0 && errno != EINTR) {
            snprintf(why, wlen, "poll: %s", strerror(errno));
            return -1;
        }
        if (p[1].revents) {
            fy_result *res = NULL;
            if (fy_handle_process(vmm, &res, NULL) == 1) {
                snprintf(why, wlen, "QEMU ended before its monitor connected (%s)",
                         fy_result_detail(res) ? fy_result_detail(res) : "no detail");
                fy_result_free(res);
                return -1;
            }
        }
        if (!(p[0].revents & POLLIN))
            continue;
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0 && !vm_qmp_peer_is_vmm(fd, pl->qemu, token)) {
            close(fd); /* not our QEMU: never spoken to */
            fd = -1;
        }
    }
    struct qmp *q = qmp_new(fd, deadline, why, wlen);
    if (!q) {
        close(fd);
        return -1;
    }
    json_t *greeting = qmp_read(q);
    bool ok = greeting != NULL;
    json_decref(greeting);
    if (!ok)
        snprintf(why, wlen, "no QMP greeting");
    ok = ok && qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}", -1, NULL, why, wlen) == 0;
    free(q);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

int vm_qmp_accept(const struct vm_plan *pl, int lfd, fy_handle *vmm, const char *token, char *why, size_t wlen) {
    return qmp_accept(pl, lfd, vmm, token, util_now_usec() + 60 * SEC, why, wlen);
}

int vm_qmp_plug_tap(int mon, int tap, char *why, size_t wlen) {
    struct qmp *q = qmp_new(mon, util_now_usec() + 60 * SEC, why, wlen);
    if (!q)
        return -1;
    bool ok = qmp_cmd(q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"fy-tap\"}}", tap, NULL, why, wlen) == 0;
    ok = ok && qmp_cmd(q, "{\"execute\":\"netdev_add\",\"arguments\":{\"type\":\"tap\",\"id\":\"t0\",\"fd\":\"fy-tap\"}}",
                       -1, NULL, why, wlen) == 0;
    ok = ok && qmp_cmd(q, "{\"execute\":\"netdev_add\",\"arguments\":{\"type\":\"hubport\",\"id\":\"h1\","
                          "\"hubid\":0,\"netdev\":\"t0\"}}", -1, NULL, why, wlen) == 0;
    free(q);
    return ok ? 0 : -1;
}

int vm_template_restore(const struct vm_plan *pl, const struct vm_template *t, int lfd, fy_handle *vmm,
                        const char *token, char *why, size_t wlen) {
    uint64_t deadline = util_now_usec() + 60 * SEC;
    int fd = qmp_accept(pl, lfd, vmm, token, deadline, why, wlen);
    if (fd < 0)
        return -1;
    struct qmp *q = qmp_new(fd, deadline, why, wlen);
    if (!q) {
        close(fd);
        return -1;
    }
    bool ok = qmp_cmd(q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"fy-state\"}}", t->fd, NULL, why, wlen) == 0;
    ok = ok && qmp_cmd(q, "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:fy-state\"}}", -1, NULL, why,
                       wlen) == 0;
    /* QEMU loads the state on its own (the agent's hello says it is up);
     * the monitor is not needed again: closed here, as is the listener by
     * the caller, so that nothing speaks to this QEMU's monitor again. */
    close(fd);
    free(q);
    return ok ? 0 : -1;
}

/* ---- making one ---- */

static void console_text(int fd, char *buf, size_t len) {
    size_t have = 0;
    for (;;) {
        char b[4096];
        ssize_t n = read(fd, b, sizeof(b));
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (have + 1 >= len)
                memmove(buf, buf + len / 2, have -= len / 2);
            buf[have++] = (b[i] >= 0x20 && b[i] < 0x7f) ? b[i] : ' ';
        }
    }
    buf[have] = '\0';
}

/* Boots the template's guest until its agent's hello; saves it to sfd. */
/* The earlier of a step's own bound and until (0: none). */
static uint64_t bounded(uint64_t step, uint64_t until) { return until && until < step ? until : step; }

static int boot_and_save(const struct vm_plan *pl, const struct vm_kernel *k, const fy_caps *caps,
                         const char *state_dir, const char *build, int sfd, uint64_t until, char *why, size_t wlen) {
    int qs[2] = {-1, -1}, cs[2] = {-1, -1}, cp[2] = {-1, -1};
    struct vmp_dec *dec = NULL;
    fy_handle *vmm = NULL;
    fy_error *e = NULL;
    int r = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qs) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cs) < 0 || pipe2(cp, O_CLOEXEC) < 0) {
        snprintf(why, wlen, "socketpair: %s", strerror(errno));
        goto out;
    }
    fcntl(cp[0], F_SETFL, O_NONBLOCK);
    fchmod(cp[1], 0622);
    struct vm_vmm_spec sp = {
        .pl = pl, .caps = caps, .state_dir = state_dir, .mode = VM_BOOT_MAKE, .kernel_dir = k->dir,
        .mount_stub = build, .wall = 300 * SEC, .in = qs[1], .out = cs[1], .err = cp[1],
    };
    if (vm_vmm_start(&sp, &vmm, &e) < 0) {
        snprintf(why, wlen, "%s", e ? fy_error_message(e) : "starting QEMU");
        goto out;
    }
    close(qs[1]);
    close(cs[1]);
    close(cp[1]);
    qs[1] = cs[1] = cp[1] = -1;
    /* The agent's hello: the guest is up, nothing else will happen in it. */
    dec = malloc(sizeof(*dec));
    if (!dec) {
        snprintf(why, wlen, "out of memory");
        goto out;
    }
    vmp_dec_init(dec);
    uint64_t deadline = bounded(util_now_usec() + 120 * SEC, until);
    bool hello = false;
    char console[2048] = "";
    while (!hello) {
        uint64_t now = util_now_usec();
        if (now >= deadline) {
            snprintf(why, wlen, deadline == until ? "the attempt's wall-clock limit came before the template's guest "
                                                    "agent answered"
                                                  : "the template's guest agent did not answer within 120 s");
            goto out;
        }
        struct pollfd p[2] = {{cs[0], POLLIN, 0}, {fy_handle_get_fd(vmm), POLLIN, 0}};
        poll(p, 2, 200);
        char tmp[1024];
        console_text(cp[0], tmp, sizeof(tmp));
        if (tmp[0])
            snprintf(console, sizeof(console), "%s", tmp);
        fy_result *res = NULL;
        if (fy_handle_process(vmm, &res, NULL) == 1) {
            snprintf(why, wlen, "the template's QEMU ended before its agent answered (%s)%s%s",
                     fy_result_detail(res) ? fy_result_detail(res) : "no detail", console[0] ? "; console: " : "",
                     console);
            fy_result_free(res);
            goto out;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP)))
            continue;
        ssize_t n = recv(cs[0], dec->buf + dec->have, vmp_room(dec), MSG_DONTWAIT);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            snprintf(why, wlen, "the template's control port closed before the hello");
            goto out;
        }
        vmp_added(dec, (size_t)n);
        struct vmp_frame f;
        int kk = vmp_next(dec, &f);
        if (kk < 0 || (kk == 1 && !vmp_is_hello(&f))) {
            snprintf(why, wlen, "the template's agent did not say hello");
            goto out;
        }
        hello = kk == 1;
    }
    struct qmp *q = qmp_new(qs[0], bounded(util_now_usec() + 60 * SEC, until), why, wlen);
    if (!q)
        goto out;
    json_t *greeting = qmp_read(q), *st = NULL;
    bool ok = greeting != NULL;
    json_decref(greeting);
    if (!ok)
        snprintf(why, wlen, "no QMP greeting");
    ok = ok && qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}", -1, NULL, why, wlen) == 0;
    ok = ok && qmp_cmd(q, "{\"execute\":\"stop\"}", -1, NULL, why, wlen) == 0;
    ok = ok && qmp_cmd(q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"fy-state\"}}", sfd, NULL, why, wlen) == 0;
    ok = ok && qmp_cmd(q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:fy-state\"}}", -1, NULL, why, wlen) == 0;
    while (ok) {
        json_decref(st);
        st = NULL;
        if (qmp_cmd(q, "{\"execute\":\"query-migrate\"}", -1, &st, why, wlen) < 0) {
            ok = false;
            break;
        }
        const char *s = json_string_value(json_object_get(st, "status"));
        if (s && !strcmp(s, "completed"))
            break;
        if (!s || !strcmp(s, "failed") || !strcmp(s, "cancelled")) {
            const char *d = json_string_value(json_object_get(st, "error-desc"));
            snprintf(why, wlen, "saving the template failed: %s", d ? d : s ? s : "no status");
            ok = false;
            break;
        }
        if (util_now_usec() >= q->deadline) {
            snprintf(why, wlen, "saving the template took more than 60 s");
            ok = false;
            break;
        }
        usleep(5000);
    }
    json_decref(st);
    if (ok)
        qmp_cmd(q, "{\"execute\":\"quit\"}", -1, NULL, why, wlen);
    free(q);
    if (!ok)
        goto out;
    fy_result *res = NULL;
    if (fy_handle_wait(vmm, 30 * SEC, &res, NULL) != 1) {
        snprintf(why, wlen, "the template's QEMU did not quit");
        goto out;
    }
    fy_result_free(res);
    r = 0;
out:
    free(dec);
    fy_error_free(e);
    fy_handle_free(vmm); /* kills and reaps it when still running */
    for (int i = 0; i < 2; i++) {
        if (qs[i] >= 0)
            close(qs[i]);
        if (cs[i] >= 0)
            close(cs[i]);
        if (cp[i] >= 0)
            close(cp[i]);
    }
    return r;
}

static int make(const char *tdir, const char *entry, const struct vm_plan *pl, const struct vm_kernel *k,
                const fy_caps *caps, const char *state_dir, uint64_t until, struct vm_template *t,
                fy_error **reterr) {
    uint64_t t0 = util_now_usec();
    char build[4400], p[4500], why[512] = "";
    snprintf(build, sizeof(build), "%s/.build-%d-%llu", tdir, (int)getpid(), (unsigned long long)t0);
    if (mkdir(build, 0700) < 0)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "mkdir %s: %s", build,
                       strerror(errno));
    /* An empty directory stands in for every 9p directory: QEMU needs
     * one; the guest mounts nothing before an attempt. It is outside the
     * 0700 templates directory, where QEMU's sandbox can reach it. */
    char stub[4400], root[4096];
    if (vm_cache_root(root, sizeof(root)) < 0) {
        rmdir(build);
        return err_set(reterr, FY_E_UNSAFE, FY_STEP_SPAWN, 0, NULL, "no VM cache directory of this user's");
    }
    snprintf(stub, sizeof(stub), "%s/empty", root);
    if (mkdir(stub, 0755) < 0 && errno != EEXIST) {
        int e = errno;
        rmdir(build);
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "mkdir %s: %s", stub, strerror(e));
    }
    char statep[4500];
    snprintf(statep, sizeof(statep), "%s/.state-%d-%llu", tdir, (int)getpid(), (unsigned long long)t0);
    int sfd = open(statep, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int r = sfd < 0 ? -1 : boot_and_save(pl, k, caps, state_dir, stub, sfd, until, why, sizeof(why));
    if (sfd < 0)
        snprintf(why, sizeof(why), "create %s: %s", statep, strerror(errno));
    struct stat st;
    char sha[65];
    if (r == 0 && (fsync(sfd) < 0 || fstat(sfd, &st) < 0 || st.st_size == 0)) {
        snprintf(why, sizeof(why), "the saved state is empty or unwritable");
        r = -1;
    }
    if (r == 0 && hash_fd(sfd, (uint64_t)st.st_size, sha) < 0) {
        snprintf(why, sizeof(why), "read back the saved state");
        r = -1;
    }
    if (sfd >= 0)
        close(sfd);
    if (r == 0) {
        /* state, then the manifest, then the whole directory renamed into place */
        snprintf(p, sizeof(p), "%s/state", build);
        char *man = util_asprintf("key %s\nstate_sha256 %s\nstate_size %llu\n%s", pl->template_key, sha,
                                  (unsigned long long)st.st_size, pl->template_inputs);
        char mp[4500];
        snprintf(mp, sizeof(mp), "%s/manifest", build);
        int mfd = man ? open(mp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
        bool ok = mfd >= 0 && write(mfd, man, strlen(man)) == (ssize_t)strlen(man) && fsync(mfd) == 0;
        if (mfd >= 0)
            close(mfd);
        free(man);
        if (!ok || rename(statep, p) < 0) {
            snprintf(why, sizeof(why), "write the template: %s", strerror(errno));
            r = -1;
        } else {
            remove_entry(entry);
            if (rename(build, entry) < 0) {
                snprintf(why, sizeof(why), "rename the template into place: %s", strerror(errno));
                r = -1;
            }
        }
    }
    unlink(statep);
    remove_entry(build);
    t->make_usec = util_now_usec() - t0;
    if (r < 0)
        return err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL, "making the VM template: %s", why);
    t->made = true;
    return 0;
}

int vm_template_get(const struct vm_plan *pl, const struct vm_kernel *k, const fy_caps *caps, const char *state_dir,
                    bool defer_digest, uint64_t until, struct vm_template *t, fy_error **reterr) {
    memset(t, 0, sizeof(*t));
    t->fd = -1;
    char tdir[4096], root[4096], entry[4400];
    if (vm_template_dir(tdir, sizeof(tdir)) < 0 || vm_cache_root(root, sizeof(root)) < 0)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, 0, NULL, "template cache path too long");
    if (mkdir(root, 0711) < 0 && errno != EEXIST)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "mkdir %s: %s", root,
                       strerror(errno));
    if (mkdir(tdir, 0700) < 0 && errno != EEXIST)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "mkdir %s: %s", tdir,
                       strerror(errno));
    int r = check_dir(tdir, reterr);
    if (r < 0)
        return r;
    snprintf(entry, sizeof(entry), "%s/%s", tdir, pl->template_key);
    if (verify(entry, pl, t, defer_digest) == 1)
        return 0;
    /* Made (or remade) under the cache's lock; another process may have
     * done it meanwhile. */
    char lock[4200];
    snprintf(lock, sizeof(lock), "%s/.lock", tdir);
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    /* (another process making it: waited for, until the attempt's deadline) */
    int lr = lfd < 0 ? -1 : flock(lfd, until ? LOCK_EX | LOCK_NB : LOCK_EX);
    while (lr < 0 && until && errno == EWOULDBLOCK && util_now_usec() < until) {
        usleep(20000);
        lr = flock(lfd, LOCK_EX | LOCK_NB);
    }
    if (lr < 0 && lfd >= 0 && until && errno == EWOULDBLOCK) {
        close(lfd);
        return err_set(reterr, FY_E_TIMEOUT, FY_STEP_SPAWN, ETIMEDOUT, NULL,
                       "the attempt's wall-clock limit came while another process made the VM template");
    }
    if (lfd < 0 || lr < 0) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "lock %s: %s", lock, strerror(e));
    }
    char refused[256];
    memcpy(refused, t->refused, sizeof(refused));
    t->refused[0] = '\0';
    if (verify(entry, pl, t, defer_digest) == 1) {
        close(lfd);
        return 0;
    }
    if (!t->refused[0])
        memcpy(t->refused, refused, sizeof(refused));
    remove_entry(entry);
    r = make(tdir, entry, pl, k, caps, state_dir, until, t, reterr);
    if (r == 0) {
        char kept[256];
        memcpy(kept, t->refused, sizeof(kept));
        bool made = t->made;
        uint64_t mu = t->make_usec;
        if (verify(entry, pl, t, false) != 1)
            r = err_set(reterr, FY_E_INTEGRITY, FY_STEP_SPAWN, 0, NULL, "the VM template just made fails its check: %s",
                        t->refused);
        memcpy(t->refused, kept, sizeof(kept));
        t->made = made;
        t->make_usec = mu;
    }
    close(lfd);
    return r;
}

/* One line "NAME VALUE" of text: VALUE (64 hex digits) into out. */
static bool manifest_value(const char *text, const char *name, char out[65]) {
    size_t nl = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, nl) && l[nl] == ' ' && strspn(l + nl + 1, "0123456789abcdef") == 64) {
            memcpy(out, l + nl + 1, 64);
            out[64] = '\0';
            return true;
        }
    return false;
}

static bool small_text(int at, const char *path, char *buf, size_t len) {
    int fd = openat(at, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    return true;
}

int vm_template_prune(void) {
    char tdir[4096], root[4096];
    if (vm_template_dir(tdir, sizeof(tdir)) < 0 || vm_cache_root(root, sizeof(root)) < 0)
        return 0;
    /* The kernels the cache holds: "VMLINUZ INITRD" digests. */
    DIR *rd = opendir(root);
    if (!rd)
        return 0;
    char (*have)[130] = NULL;
    size_t nhave = 0;
    struct dirent *e;
    while ((e = readdir(rd))) {
        char p[600], v[128], i[128];
        if (strncmp(e->d_name, "kernel-", 7) != 0)
            continue;
        snprintf(p, sizeof(p), "%s/vmlinuz.sha256", e->d_name);
        bool ok = small_text(dirfd(rd), p, v, sizeof(v));
        snprintf(p, sizeof(p), "%s/initrd.sha256", e->d_name);
        ok = ok && small_text(dirfd(rd), p, i, sizeof(i)) && strspn(v, "0123456789abcdef") == 64 &&
             strspn(i, "0123456789abcdef") == 64;
        if (!ok)
            continue;
        char (*grown)[130] = realloc(have, (nhave + 1) * sizeof(*have));
        if (!grown) {
            free(have);
            closedir(rd);
            return 0;
        }
        have = grown;
        snprintf(have[nhave++], sizeof(have[0]), "%.64s %.64s", v, i);
    }
    closedir(rd);
    /* Under the templates' lock (none is being made), or not now. */
    char lock[4200];
    snprintf(lock, sizeof(lock), "%s/.lock", tdir);
    int lfd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    DIR *td = lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) == 0 ? opendir(tdir) : NULL;
    int n = 0;
    while (td && (e = readdir(td))) {
        if (strlen(e->d_name) != 64 || strspn(e->d_name, "0123456789abcdef") != 64)
            continue;
        char p[600], text[16384], v[65], i[65], pair[130];
        snprintf(p, sizeof(p), "%s/manifest", e->d_name);
        if (!small_text(dirfd(td), p, text, sizeof(text)) || !manifest_value(text, "vmlinuz_sha256", v) ||
            !manifest_value(text, "initrd_sha256", i))
            continue;
        snprintf(pair, sizeof(pair), "%s %s", v, i);
        bool used = false;
        for (size_t k = 0; k < nhave && !used; k++)
            used = !strcmp(have[k], pair);
        /* (made from a kernel the cache no longer holds: a package upgrade
         * replaced it, and nothing can use the template again) */
        if (!used && util_remove_tree_at(dirfd(td), e->d_name, UTIL_RM_ONE_FS) >= 0)
            n++;
    }
    if (td)
        closedir(td);
    if (lfd >= 0)
        close(lfd);
    free(have);
    return n;
}
