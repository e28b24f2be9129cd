/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One attempt in a fresh QEMU microvm (vm-run.h). start() writes the
 * attempt's archive (its files and writable workspace) into a memfd, then
 * runs QEMU through the library's own namespace sandbox, using only the
 * public API: the VMM sees its runtime paths, the cached kernel, agent
 * image and template, and the approved directories it serves read-only, no
 * network, and /dev/kvm only when KVM is used. The control port is QEMU's
 * stdio chardev, a socket pair with this process; the archive goes over it
 * after the agent's hello. process() decodes the
 * guest's frames (bounded: frame size, output, deadlines), delivers the
 * streams, unpacks the returned trees in user space, and finishes when the
 * guest is done and the VMM's sandbox has ended and been cleaned up. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forgeyard/sandbox.h"
#include "vm-backend.h"
#include "linux-probe-util.h"
#include "vm-proto.h"
#include "vm-run.h"
#include "vm-tar.h"
#include "vm-template.h"
#include "vm-shell.h"

#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)
#define HELLO_TIMEOUT (120 * SEC) /* cold boot under TCG on a loaded host */
#define DONE_GRACE (10 * SEC)     /* from the agent's DONE to the VMM's exit */
#define CONSOLE_KEEP 16384
#define WORKSPACE_COPY_MAX (512 * MiB)

struct vm {
    struct vm_plan *pl;
    struct vm_kernel k;            /* the cached kernel and initramfs this attempt boots */
    int epfd, timerfd, sock, console_fd;
    char console[CONSOLE_KEEP + 1];  /* the console's last bytes */
    size_t console_len;
    char dir[4096];                /* the attempt directory */
    fy_handle *vmm;                /* QEMU's sandbox */
    fy_result *vmm_result;
    struct vmp_dec *dec;
    struct vmt *tar[3];            /* VMP_DIR_BUILD, VMP_DIR_OUTPUT */
    bool tar_done[3];
    struct pathlist {              /* what each tree held when copied in */
        struct copied_path {
            char *path;            /* relative to the tree */
            bool dir;
        } *items;
        size_t n, cap;
        bool oom;
    } copied[3];
    uint64_t removed[3];           /* ... and what was removed since, as in the guest */
    int out_fd[3];                 /* FY_STDIO_FILE files we made */
    int in_fd;                     /* stdin to forward (FY_STDIO_FD), -1 when done */
    bool in_polled;
    bool hello, run_sent, exit_seen, done, setup_failed, killed, sock_eof;
    struct vmp_exit ex;
    int setup_errno;
    char *setup_detail;
    uint64_t t_qemu, t_hello, t_run, t_exit, t_done, t_ended, t_cleanup;
    uint64_t hello_deadline, done_deadline;
    uint64_t send_by;              /* the attempt's deadline (0: none): no send to the guest blocks past it */
    uint64_t out_bytes, out_limit, stream_bytes[3], tar_bytes;
    bool truncated;
    bool reader_gone[3];           /* FY_STDIO_FD: its reader closed (EPIPE): the rest is dropped */
    struct strbuf log;             /* the agent's LOG text (bounded) */
    struct vm_template tmpl;       /* restored from (tmpl.fd >= 0 until QEMU has it) */
    bool from_template;
    char token[33];                /* restricted's restore: QEMU's "-name fy-TOKEN", its monitor's proof */
    int qmp_listen;                /* restricted's restore: the monitor's listener in the attempt directory */
    char *cold_why;                /* why a template plan booted cold */
    int files_fd;                  /* the attempt's files (cpio) to send after a restore */
    bool clone;                    /* started in a pre-started clone (vm-shell.c) */
    uint64_t clone_age;            /* ... restored this long before its claim (usec) */
    /* fetch-only: the attempt's proxy (pl->pxf's service), its listener's
     * 0700 directory, and the guest's connections carried to it. */
    void *px;
    char pxdir[4096];
    int pxdir_fd;
    struct vnet {
        int fd;                    /* our connection to the proxy; -1: none (refused, ended) */
        bool used, guest_eof, eof_sent, wr_shut;
        uint32_t unacked;          /* DATA sent to the guest, not yet acknowledged */
        uint32_t ev;               /* events registered for fd */
        bool polled;               /* fd is in the epoll set (not while it wants nothing: a peer's
                                      hang-up would wake the loop for ever) */
        uint8_t *q;                /* guest bytes not yet written to the proxy */
        size_t qlen;
    } net[VMP_NET_CONNS];
    uint64_t net_unacked;          /* all connections' unacknowledged DATA to the guest */
    uint64_t net_opened, net_refused;
    struct vmn nw;                 /* restricted's router, the DNS stub (vm-net.c) */
};
/* DATA to the guest unacknowledged over all connections: small enough for
 * the control socket's buffer, so that carrying it never blocks the loop. */
#define NET_GUEST_INFLIGHT (64u << 10)

static const struct fy_plan *neutral(fy_handle *h) { return ((struct vm_plan *)h->pr->plan)->np; }

/* ---- the attempt directory ---- */


/* Removes an attempt directory; 0 when it is gone. */
int vm_remove_dir(const char *dir) {
    if (util_remove_tree_at(AT_FDCWD, dir, UTIL_RM_ONE_FS) < 0)
        return -1;
    struct stat st;
    return lstat(dir, &st) == 0 ? -1 : 0;
}

static int attempts_dir(char *buf, size_t len) {
    char root[4096];
    if (vm_cache_root(root, sizeof(root)) < 0)
        return -1;
    int n = snprintf(buf, len, "%s/attempts", root);
    return n > 0 && (size_t)n < len ? 0 : -1;
}


static int make_attempt_dir(struct vm *v, fy_error **reterr) {
    /* 0755: QEMU's sandbox runs as an unprivileged id; the parent (0711, not listable)
     * keeps everyone else out. */
    return vm_make_dir_in_attempts(v->dir, sizeof(v->dir), 0755, reterr);
}

int vm_control_open(int *sock, int *guest, int *console, int *console_w, fy_error **reterr) {
    int sp[2], cp[2];
    *sock = *guest = *console = *console_w = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "socketpair: %s", strerror(errno));
    if (pipe2(cp, O_CLOEXEC) < 0) {
        int e = errno;
        close(sp[0]);
        close(sp[1]);
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "pipe: %s", strerror(e));
    }
    struct timeval tv = {.tv_sec = 5};
    setsockopt(sp[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fcntl(cp[0], F_SETFL, O_NONBLOCK);
    fchmod(cp[1], 0622);
    *sock = sp[0];
    *guest = sp[1];
    *console = cp[0];
    *console_w = cp[1];
    return 0;
}

int vm_monitor_listen(const char *dir, int *lfd, char token[33], const char *what, fy_error **reterr) {
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, errno, NULL, "%s: getrandom: %s", what, strerror(errno));
    int x = vm_qmp_listen(dir, lfd);
    if (x < 0)
        return err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, -x, NULL, "%s: %s", what, strerror(-x));
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(token + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

int vm_make_dir_in_attempts(char *out, size_t outlen, mode_t mode, fy_error **reterr) {
    char base[4096];
    if (attempts_dir(base, sizeof(base)) < 0)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, 0, NULL, "attempt directory path too long");
    char root[4096];
    if (vm_cache_root(root, sizeof(root)) < 0)
        return err_set(reterr, FY_E_UNSAFE, FY_STEP_SPAWN, 0, NULL, "no VM cache directory of this user's");
    if ((mkdir(root, 0711) < 0 && errno != EEXIST) || (mkdir(base, 0711) < 0 && errno != EEXIST)) {
        /* the parents of root exist once a kernel was cached (compile) */
        int e = errno;
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "mkdir %s: %s", base, strerror(e));
    }
    uint64_t rnd = 0;
    int ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (ufd < 0 || read(ufd, &rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
        rnd = util_now_usec();
    if (ufd >= 0)
        close(ufd);
    pid_t me = getpid();
    snprintf(out, outlen, "%s/a-%d-%llu-%016llx", base, (int)me, (unsigned long long)pu_proc_starttime(me),
             (unsigned long long)rnd);
    bool made = mkdir(out, mode) == 0;
    if (!made || chmod(out, mode) < 0) {
        int e = errno;
        if (made)
            rmdir(out);
        out[0] = '\0';
        return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, NULL, "mkdir the attempt directory: %s",
                       strerror(e));
    }
    return 0;
}

int vm_gc(const char *state_dir, uint64_t *destroyed, fy_error **reterr) {
    (void)state_dir; /* QEMU's sandboxes are recorded there by their own backend */
    (void)reterr;
    vm_cache_prune(); /* kernels a package upgrade replaced: not orphans, not counted */
    vm_template_prune(); /* ... and the templates made from them */
    /* A template being made by a host that died: its build directory
     * and state file (never used: only a complete entry is renamed in). */
    char tdir[4096];
    DIR *td = vm_template_dir(tdir, sizeof(tdir)) == 0 ? opendir(tdir) : NULL;
    struct dirent *te;
    while (td && (te = readdir(td))) {
        int pid = 0;
        if (sscanf(te->d_name, ".build-%d-", &pid) != 1 && sscanf(te->d_name, ".state-%d-", &pid) != 1)
            continue;
        if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[4400];
        snprintf(p, sizeof(p), "%s/%s", tdir, te->d_name);
        if ((te->d_name[1] == 's' ? unlink(p) : vm_remove_dir(p)) == 0 && destroyed)
            (*destroyed)++;
    }
    if (td)
        closedir(td);
    char base[4096];
    if (attempts_dir(base, sizeof(base)) < 0)
        return 0;
    DIR *d = opendir(base);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        unsigned long long start;
        if (sscanf(e->d_name, "a-%d-%llu-", &pid, &start) != 2)
            continue;
        if (pid > 0 && pu_proc_starttime(pid) == start)
            continue; /* its owner lives */
        char p[4400];
        snprintf(p, sizeof(p), "%s/%s", base, e->d_name);
        if (vm_remove_dir(p) == 0 && destroyed)
            (*destroyed)++;
    }
    closedir(d);
    return 0;
}

/* ---- the attempt's archive (cpio newc, the agent's unpacker) ---- */

struct emitted {
    char **dirs;
    size_t n, cap;
};

static bool emitted_has(struct emitted *em, const char *d) {
    for (size_t i = 0; i < em->n; i++)
        if (!strcmp(em->dirs[i], d))
            return true;
    return false;
}

/* Emits the ancestors of an absolute path (not the path itself). */
static void emit_parents(struct cpio *c, struct emitted *em, const char *abs) {
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", abs + 1);
    for (char *p = buf; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (!emitted_has(em, buf)) {
            cpio_add(c, buf, 040755, NULL, 0);
            if (em->n == em->cap) {
                size_t cap = em->cap ? em->cap * 2 : 32;
                char **n = realloc(em->dirs, cap * sizeof(*n));
                if (!n) {
                    c->err = ENOMEM;
                    return;
                }
                em->dirs = n;
                em->cap = cap;
            }
            if (!(em->dirs[em->n] = util_strdup(buf))) {
                c->err = ENOMEM;
                return;
            }
            em->n++;
        }
        *p = '/';
    }
}

static void pathlist_add(struct pathlist *l, const char *rel, bool dir) {
    if (!l || l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        struct copied_path *n = realloc(l->items, cap * sizeof(*n));
        if (!n) {
            l->oom = true;
            return;
        }
        l->items = n;
        l->cap = cap;
    }
    if (!(l->items[l->n].path = util_strdup(rel)))
        l->oom = true;
    else
        l->items[l->n++].dir = dir;
}

static void pathlist_free(struct pathlist *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].path);
    free(l->items);
    memset(l, 0, sizeof(*l));
}

static void cpio_mtime_set(struct cpio *c, const struct stat *st) {
    bool fits = st->st_mtim.tv_sec > 0 && (uint64_t)st->st_mtim.tv_sec <= UINT32_MAX;
    c->mtime = fits ? (uint32_t)st->st_mtim.tv_sec : 0;
    c->mtime_ns = fits ? (uint32_t)st->st_mtim.tv_nsec : 0;
}

/* Copies a host tree (regular files, directories, symlinks) under name,
 * owned by uid:gid, never following a symlink; what it copied goes to
 * list, relative to the tree (path + skip). */
static void copy_tree(struct cpio *c, int dfd, const char *name, uint32_t uid, uint32_t gid, uint64_t *budget,
                      int depth, struct pathlist *list, size_t skip) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        c->err = c->err ? c->err : errno;
        return;
    }
    struct dirent *e;
    while (!c->err && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", name, e->d_name) >= (int)sizeof(path)) {
            c->err = ENAMETOOLONG;
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        /* The host's modification time goes in with each entry: a copy
         * stamped "now" made every output look newer than its source, and
         * make in the guest took a stale object for an up-to-date one. */
        cpio_mtime_set(c, &st);
        if (S_ISDIR(st.st_mode) && depth < 64) {
            cpio_add(c, path, 040000 | (st.st_mode & 0755) | 0700, NULL, 0);
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                pathlist_add(list, path + skip, true);
                copy_tree(c, sub, path, uid, gid, budget, depth + 1, list, skip);
            }
        } else if (S_ISREG(st.st_mode)) {
            if ((uint64_t)st.st_size > *budget) {
                c->err = EFBIG;
                break;
            }
            *budget -= (uint64_t)st.st_size;
            /* O_NONBLOCK and the same inode again: a name swapped for a FIFO
             * since fstatat (by a sandbox sharing the directory) must not
             * hold the host in open(2) waiting for a writer. */
            int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
            if (fd < 0)
                continue;
            struct stat again;
            if (fstat(fd, &again) < 0 || !S_ISREG(again.st_mode) || again.st_ino != st.st_ino ||
                again.st_dev != st.st_dev || again.st_size != st.st_size) {
                close(fd);
                continue;
            }
            cpio_mtime_set(c, &again);
            cpio_add_fd(c, path, 0100000 | (st.st_mode & 0755) | 0600, fd, (uint64_t)st.st_size);
            close(fd);
            pathlist_add(list, path + skip, false);
        } else if (S_ISLNK(st.st_mode)) {
            char t[4096];
            ssize_t n = readlinkat(dirfd(d), e->d_name, t, sizeof(t) - 1);
            if (n > 0) {
                cpio_add(c, path, 0120777, t, (uint64_t)n);
                pathlist_add(list, path + skip, false);
            }
        }
    }
    closedir(d);
    c->mtime = c->mtime_ns = 0;
}

/* What copying the attempt's files in failed on (path: which). Past a bound of the copy
 * (a tree, a single file) the attempt asks more than this backend gives:
 * FY_E_RANGE, naming the bound. */
static int archive_error(fy_error **reterr, const char *what, const char *path, int e) {
    if (e == EFBIG)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, e, path,
                       "%s: more than the virtual-machine backend copies into a guest (%llu MiB for a build or "
                       "output tree, %llu MiB for a single file)",
                       what, (unsigned long long)(WORKSPACE_COPY_MAX / MiB), (unsigned long long)(VM_FILE_COPY_MAX / MiB));
    /* (the path is the error's location) */
    return err_set(reterr, err_from_errno(e), FY_STEP_SPAWN, e, path, "%s: %s", what, strerror(e));
}

static int cpio_uid_set(struct cpio *c, uint32_t uid, uint32_t gid);
static int send_guest(struct vm *v, uint8_t type, const void *p, size_t n);
static int net_setup(struct vm *v, fy_error **reterr);
static unsigned net_teardown(struct vm *v, char **report);

/* The attempt's own archive: the plan's files and symbolic links, small
 * approved runtime files, the build and output trees (owned by the
 * workload's ids), sent over the control port (attempt_files). 0 or
 * -errno (*fail_what: which). */
static int write_attempt_archive(const struct fy_plan *np, int fd, const char **fail_what_ret,
                                 struct pathlist *copied) {
    for (int i = 1; i < 3; i++)
        pathlist_free(&copied[i]);
    struct stat st;
    int r;
    struct cpio c;
    cpio_begin(&c, fd, NULL);
    struct emitted em = {0};
    const char *fail_what = NULL;
    for (size_t i = 0; i < np->nentries && !c.err; i++) {
        const struct plan_entry *e = &np->entries[i];
        if (strncmp(e->target, "/dev/", 5) == 0 || !strcmp(e->target, "/dev"))
            continue;
        if (e->kind == PE_FILE) {
            emit_parents(&c, &em, e->target);
            cpio_add(&c, e->target + 1, 0100000 | (e->mode & 07777), e->content, strlen(e->content));
        } else if (e->kind == PE_SYMLINK) {
            emit_parents(&c, &em, e->target);
            cpio_add(&c, e->target + 1, 0120777, e->content, strlen(e->content));
        } else if (e->kind == PE_HOST && (e->flags & PLAN_FILE) && e->role != PR_DEV && e->role != PR_DEVICE) {
            int ffd = open(e->host, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
            if (ffd < 0 || fstat(ffd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > VM_FILE_COPY_MAX) {
                if (ffd >= 0)
                    close(ffd);
                if (e->flags & PLAN_OPTIONAL)
                    continue;
                fail_what = e->host;
                c.err = ffd < 0 ? errno : EFBIG;
                break;
            }
            emit_parents(&c, &em, e->target);
            cpio_add_fd(&c, e->target + 1, 0100444, ffd, (uint64_t)st.st_size);
            close(ffd);
        } else if (e->kind == PE_HOST && e->role == PR_BIND && (e->flags & PLAN_RO)) {
            /* A read-only bind of one file (vm-plan.c mounted no share for
             * it): copied like a runtime file. A directory is a share. */
            int ffd = open(e->host, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
            if (ffd < 0 || fstat(ffd, &st) < 0) {
                if (ffd >= 0)
                    close(ffd);
                if (e->flags & PLAN_OPTIONAL)
                    continue;
                fail_what = e->host;
                c.err = errno;
                break;
            }
            if (S_ISDIR(st.st_mode)) {
                close(ffd);
                continue;
            }
            if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > VM_FILE_COPY_MAX) {
                close(ffd);
                fail_what = e->host;
                c.err = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
                break;
            }
            emit_parents(&c, &em, e->target);
            cpio_add_fd(&c, e->target + 1, 0100000 | (st.st_mode & 0555) | 0444, ffd, (uint64_t)st.st_size);
            close(ffd);
        } else if (e->kind == PE_HOST && (e->role == PR_BUILD || e->role == PR_OUTPUT)) {
            emit_parents(&c, &em, e->target);
            cpio_uid_set(&c, np->uid, np->gid);
            cpio_add(&c, e->target + 1, 040755, NULL, 0);
            int dfd = open(e->host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd < 0) {
                fail_what = e->host;
                c.err = errno;
            } else {
                uint64_t budget = WORKSPACE_COPY_MAX;
                copy_tree(&c, dfd, e->target + 1, np->uid, np->gid, &budget, 0,
                          &copied[e->role == PR_BUILD ? VMP_DIR_BUILD : VMP_DIR_OUTPUT], strlen(e->target + 1) + 1);
                if (c.err)
                    fail_what = e->host;
            }
            cpio_uid_set(&c, 0, 0);
        }
    }
    r = cpio_end(&c);
    for (size_t i = 0; i < em.n; i++)
        free(em.dirs[i]);
    free(em.dirs);
    *fail_what_ret = fail_what;
    return r;
}

/* cpio entries of the writable workspace belong to the workload's ids. */
static int cpio_uid_set(struct cpio *c, uint32_t uid, uint32_t gid) {
    c->uid = uid;
    c->gid = gid;
    return 0;
}

/* (vm-run.h) */
int vm_argv_of(const struct strbuf *args, const char ***ret) {
    if (args->oom)
        return FY_E_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < args->len; i++)
        n += args->buf[i] == '\0';
    const char **argv = calloc(n + 1, sizeof(char *));
    if (!argv)
        return FY_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < args->len; i += strlen(args->buf + i) + 1)
        argv[k++] = args->buf + i;
    *ret = argv;
    return 0;
}

/* ---- QEMU in the library's own sandbox ---- */

int vm_qemu_argv(const struct vm_plan *pl, int mode, const char *token, struct strbuf *args, const char ***ret) {
    /* one NUL-separated buffer, split afterwards. The machine (everything
     * but the chardevs' and the NIC's backends, the monitor, the name and
     * -incoming) is the same in the three modes: a template's state
     * restores only into the same machine. */
    bool nic_restore = pl->nic && mode == VM_BOOT_RESTORE, nic_shell = pl->nic && mode == VM_BOOT_SHELL;
#define A(...) do { strbuf_printf(args, __VA_ARGS__); strbuf_appendn(args, "", 1); } while (0)
    A("%s", pl->qemu);
    A("-M");
    A("microvm,acpi=on");
    A("-accel");
    A(pl->kvm ? "kvm" : "tcg,tb-size=64");
    if (pl->kvm) {
        A("-cpu");
        A("host");
    }
    A("-m");
    A("%lluM", (unsigned long long)(pl->guest_mem / MiB));
    A("-smp");
    A("%u", pl->smp);
    if (nic_restore || nic_shell) {
        /* The proof its monitor's peer is this QEMU (vm_template_restore). */
        A("-name");
        A("fy-%s", token ? token : "");
    }
    A("-nodefaults");
    A("-no-user-config");
    A("-display");
    A("none");
    A("-no-reboot");
    A("-sandbox");
    A("on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
    A("-kernel");
    A("/fy/k/vmlinux");
    A("-initrd");
    A("/fy/k/initrd.cpio");
    A("-append");
    A("%s", pl->cmdline);
    /* The console to stderr: a pipe this process drains (made writable
     * for the sandbox's user, which reopens it). */
    A("-chardev");
    A("file,id=con,path=/proc/self/fd/2");
    A("-serial");
    A("chardev:con");
    A("-device");
    A("virtio-serial-device");
    A("-chardev");
    /* The control port: QEMU's stdio (cold), or its stdout, a socket (a
     * template's stdin is its monitor or the state it restores). */
    A(mode == VM_BOOT_COLD && !pl->nic ? "stdio,id=ctl,signal=off" : "socket,id=ctl,fd=1");
    A("-device");
    A("virtserialport,chardev=ctl,name=fy.ctl");
    if (pl->nic) {
        /* restricted: the router's tap is QEMU's stdin (vm-net.c); its
         * sandbox opens no tun device. A template is made with the same
         * device on a hub port of its own, which leads nowhere (no host
         * resource; the guest's eth0 is down until an attempt's RUN): the
         * guest negotiated the features of a backend without a vnet
         * header, as the router's tap (IFF_TAP|IFF_NO_PI) is. */
        A("-netdev");
        /* (a restricted clone: on a hub port too, the router's tap joined
         * to the hub at the claim, over its monitor) */
        A(mode == VM_BOOT_MAKE || nic_shell ? "hubport,id=n0,hubid=0" : "tap,id=n0,fd=0");
        A("-device");
        A("virtio-net-device,netdev=n0,mac=" VM_NIC_MAC);
    }
    for (size_t i = 0; i < pl->nmounts; i++) {
        A("-fsdev");
        /* A clone's export is a stub on one file system with the attempt's
         * directory, of another, attached below it: inode numbers remapped
         * so that the two cannot collide in the guest. */
        A("local,id=r%zu,path=/fy/m%zu,security_model=none%s%s", i, i, pl->mounts[i].writable ? "" : ",readonly=on",
          mode == VM_BOOT_SHELL ? ",multidevs=remap" : "");
        A("-device");
        A("virtio-9p-device,fsdev=r%zu,mount_tag=r%zu", i, i);
    }
    if (mode == VM_BOOT_MAKE) {
        /* QMP on stdin (a socket); the state records no run state, so that
         * a restore runs at once (the template is saved stopped). */
        A("-chardev");
        A("socket,id=mon,fd=0");
        A("-mon");
        A("chardev=mon,mode=control");
        A("-global");
        A("migration.store-global-state=off");
    } else if (nic_restore) {
        /* stdin is the tap: the monitor is a unix socket of the attempt
         * directory this process listens on (QEMU connects), over which
         * it gets the checked state's fd (getfd, migrate-incoming). */
        A("-chardev");
        A("socket,id=mon,path=/fy/a/" VM_QMP_SOCK);
        A("-mon");
        A("chardev=mon,mode=control");
        A("-incoming");
        A("defer");
    } else if (mode == VM_BOOT_RESTORE || mode == VM_BOOT_SHELL) {
        if (nic_shell) {
            /* the monitor the claim hands the router's tap over */
            A("-chardev");
            A("socket,id=mon,path=/fy/a/" VM_QMP_SOCK);
            A("-mon");
            A("chardev=mon,mode=control");
        }
        A("-incoming");
        A("fd:0");
    }
#undef A
    return vm_argv_of(args, ret);
}

int vm_vmm_start(const struct vm_vmm_spec *sp, fy_handle **ret, fy_error **reterr) {
    const struct vm_plan *pl = sp->pl;
    fy_policy *p = NULL;
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    struct strbuf args;
    strbuf_init(&args);
    const char **argv = NULL;
    *ret = NULL;
    int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
    if (r >= 0)
        r = fy_policy_set_isolation(p, FY_LEVEL_NAMESPACE, FY_LEVEL_NAMESPACE, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_DENY, &e);
    if (r >= 0 && sp->attempt_dir)
        r = fy_policy_add_bind(p, sp->attempt_dir, "/fy/a", 0, &e);
    if (r >= 0)
        r = fy_policy_add_bind(p, sp->kernel_dir, "/fy/k", 0, &e);
    for (size_t i = 0; r >= 0 && i < pl->nmounts; i++) {
        char t[32];
        snprintf(t, sizeof(t), "/fy/m%zu", i);
        r = fy_policy_add_bind(p, sp->mount_stub ? sp->mount_stub : pl->mounts[i].host, t,
                               pl->mounts[i].writable && !sp->mount_stub ? FY_BIND_WRITABLE : 0, &e);
    }
    /* The VMM runs under the attempt's id range (as root), as the namespace
     * backend's workload does: what the guest writes into a writable bind
     * is owned by it, and tenants given ranges of their own share no host
     * uid with another's VMM, nor the kernel's per-user budgets with it
     * (descriptors in flight, epoll watches, pipe pages). */
    if (r >= 0 && pl->np->id_count)
        r = fy_policy_set_id_range(p, pl->np->id_first, pl->np->id_count, &e);
    if (r >= 0 && pl->kvm)
        r = fy_policy_add_device(p, "/dev/kvm", 1, &e);
    /* What the attempt's plan claims of the VMM's confinement is required
     * of its sandbox, never merely preferred: the system-call filter and
     * Landlock where the attempt's plan enforces them, and the host bounds
     * isolation.host_bounds names (vm-plan.c). */
    if (r >= 0 && pl->np->control[FY_CONTROL_SECCOMP] == FY_CONTROL_STATE_ENFORCED)
        r = fy_policy_set_control(p, FY_CONTROL_SECCOMP, FY_MODE_REQUIRE, &e);
    if (r >= 0 && pl->np->control[FY_CONTROL_LANDLOCK] == FY_CONTROL_STATE_ENFORCED)
        r = fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_REQUIRE, &e);
    if (r >= 0 && pl->host_mem)
        r = fy_policy_set_control(p, FY_CONTROL_MEMORY_LIMIT, FY_MODE_REQUIRE, &e);
    if (r >= 0 && pl->host_pids)
        r = fy_policy_set_control(p, FY_CONTROL_PIDS_LIMIT, FY_MODE_REQUIRE, &e);
    uint64_t wall = sp->wall;
    if (r >= 0)
        r = fy_policy_set_limit(p, FY_LIMIT_MEMORY, pl->guest_mem + 512 * MiB, &e);
    if (r >= 0)
        r = fy_policy_set_limit(p, FY_LIMIT_PIDS, 256, &e);
    /* The policy's CPU limit on the VMM itself, on the host, where a guest
     * root (who controls the guest's own cgroups) cannot lift it; the
     * template's making is the host's work, not an attempt's. */
    uint64_t cpu = pl->np->limit[FY_LIMIT_CPU_MILLIS];
    if (r >= 0 && sp->mode != VM_BOOT_MAKE && cpu != FY_UNLIMITED &&
        pl->np->control_mode[FY_CONTROL_CPU_LIMIT] != FY_MODE_OFF) {
        r = fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, cpu, &e);
        if (r >= 0 && pl->host_cpu)
            r = fy_policy_set_control(p, FY_CONTROL_CPU_LIMIT, FY_MODE_REQUIRE, &e);
    }
    if (r >= 0)
        r = fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, wall == FY_UNLIMITED ? FY_UNLIMITED : wall + 60 * SEC, &e);
    if (r >= 0)
        r = fy_policy_set_limit(p, FY_LIMIT_GRACE, 0, &e);
    if (r >= 0)
        r = fy_policy_set_stdio(p, FY_STDIN, FY_STDIO_FD, sp->in, NULL, &e);
    if (r >= 0)
        r = fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, sp->out, NULL, &e);
    if (r >= 0)
        r = fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FD, sp->err, NULL, &e);
    if (r >= 0 && sp->state_dir)
        r = fy_policy_set_state_dir(p, sp->state_dir, &e);
    if (r >= 0)
        r = vm_qemu_argv(pl, sp->mode, sp->token, &args, &argv);
    if (r >= 0)
        r = fy_prepare(p, sp->caps, argv, &pr, &e);
    if (r >= 0 && strcmp(fy_prepared_backend(pr), "linux-namespace") != 0)
        r = FY_E_UNSUPPORTED; /* never a VM inside a VM, never less than namespaces */
    if (r >= 0)
        r = fy_start(pr, ret, &e);
    if (r < 0)
        r = err_set(reterr, r == FY_E_NOMEM ? FY_E_NOMEM : FY_E_INFRA, FY_STEP_SPAWN, e ? fy_error_os_code(e) : 0,
                    NULL, "starting QEMU in its namespace sandbox: %s",
                    e ? fy_error_message(e) : "its sandbox is not the namespace backend");
    fy_error_free(e);
    fy_prepared_free(pr);
    fy_policy_free(p);
    free(argv);
    strbuf_free(&args);
    return r;
}

static int start_vmm(fy_handle *h, struct vm *v, int in, int out, int console_wr, fy_error **reterr) {
    struct vm_vmm_spec sp = {
        .pl = v->pl, .caps = h->pr->caps, .state_dir = neutral(h)->state_dir,
        .mode = v->from_template ? VM_BOOT_RESTORE : VM_BOOT_COLD,
        .attempt_dir = v->dir[0] ? v->dir : NULL, .token = v->token, .kernel_dir = v->k.dir,
        .wall = neutral(h)->limit[FY_LIMIT_WALL_TIME], .in = in, .out = out, .err = console_wr,
    };
    return vm_vmm_start(&sp, &v->vmm, reterr);
}

/* ---- start ---- */

static void vm_free_state(struct vm *v) {
    for (int i = 0; i < 3; i++) {
        pathlist_free(&v->copied[i]);
        if (v->tar[i]) {
            vmt_free(v->tar[i]);
            free(v->tar[i]);
        }
        if (v->out_fd[i] >= 0)
            close(v->out_fd[i]);
    }
    if (v->epfd >= 0)
        close(v->epfd);
    if (v->timerfd >= 0)
        close(v->timerfd);
    if (v->sock >= 0)
        close(v->sock);
    if (v->console_fd >= 0)
        close(v->console_fd);
    if (v->vmm_result)
        fy_result_free(v->vmm_result);
    if (v->tmpl.fd >= 0)
        close(v->tmpl.fd);
    if (v->files_fd >= 0)
        close(v->files_fd);
    if (v->qmp_listen >= 0)
        close(v->qmp_listen);
    free(v->cold_why);
    free(v->dec);
    free(v->setup_detail);
    strbuf_free(&v->log);
    free(v);
}

static int watch(struct vm *v, int fd) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    return epoll_ctl(v->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int open_tar(struct vm *v, const struct fy_plan *np, int which, fy_error **reterr) {
    const char *host = which == VMP_DIR_BUILD ? np->build : np->output;
    if (!host)
        return 0;
    int fd = open(host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "open %s: %s", host,
                       strerror(errno));
    v->tar[which] = calloc(1, sizeof(struct vmt));
    if (!v->tar[which] || vmt_init(v->tar[which], fd) < 0) {
        close(fd);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    }
    /* As root, what the guest made is the attempt's workload uid's, as the
     * namespace backend's workload's is (the range's second id): it was
     * root's, and a later namespace attempt on the same build directory
     * could not change it. */
    if (geteuid() == 0 && np->id_count) {
        uint32_t id = np->id_count >= 2 ? np->id_first + 1 : np->id_first;
        v->tar[which]->owner_uid = v->tar[which]->owner_gid = id;
    }
    return 0;
}

/* Undoes what a start made before it failed, or what a destroyed
 * attempt holds: QEMU's sandbox killed and reaped, its directories, the
 * proxy and the router removed. */
static void attempt_abandon(struct vm *v) {
    if (v->vmm)
        fy_handle_free(v->vmm);
    v->vmm = NULL;
    if (v->dir[0])
        vm_remove_dir(v->dir);
    net_teardown(v, NULL);
    vmn_stop(&v->nw, NULL);
    if (v->pxdir[0])
        vm_remove_dir(v->pxdir);
    vm_free_state(v);
}

/* What every start makes before its QEMU is there: the attempt's state,
 * its captured streams and returned trees, the proxy and the router. */
static int attempt_new(fy_handle *h, struct vm **ret, fy_error **reterr) {
    const struct fy_plan *np = neutral(h);
    struct vm *v = calloc(1, sizeof(*v));
    if (!v)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    v->pl = h->pr->plan;
    v->epfd = v->timerfd = v->sock = v->in_fd = v->console_fd = v->files_fd = v->tmpl.fd = v->pxdir_fd =
        v->qmp_listen = -1;
    for (int i = 0; i < 3; i++)
        v->out_fd[i] = -1;
    for (int i = 0; i < VMP_NET_CONNS; i++)
        v->net[i].fd = -1;
    strbuf_init(&v->log);
    vmn_init(&v->nw, v->pl);
    v->out_limit = np->limit[FY_LIMIT_OUTPUT];
    int r;
    if (!(v->dec = malloc(sizeof(*v->dec)))) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        goto fail;
    }
    vmp_dec_init(v->dec);
    v->epfd = epoll_create1(EPOLL_CLOEXEC);
    v->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (v->epfd < 0 || v->timerfd < 0 || watch(v, v->timerfd) < 0 || watch(v, h->wake_fd) < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "epoll: %s", strerror(errno));
        goto fail;
    }
    /* The captured streams. */
    for (int i = 1; i < 3; i++) {
        if (np->stdio[i].mode != FY_STDIO_FILE)
            continue;
        v->out_fd[i] = open(np->stdio[i].path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
        if (v->out_fd[i] < 0) {
            r = err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "create %s: %s",
                        np->stdio[i].path, strerror(errno));
            goto fail;
        }
    }
    if (np->stdio[FY_STDIN].mode == FY_STDIO_FD)
        v->in_fd = np->stdio[FY_STDIN].fd;
    if ((r = open_tar(v, np, VMP_DIR_BUILD, reterr)) < 0 || (r = open_tar(v, np, VMP_DIR_OUTPUT, reterr)) < 0)
        goto fail;
    if (v->pl->pxcfg && (r = net_setup(v, reterr)) < 0)
        goto fail;
    if ((r = vmn_start(&v->nw, reterr)) < 0 || (v->nw.dns_sock >= 0 && watch(v, v->nw.dns_sock) < 0 &&
                                                 (r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, errno, NULL,
                                                              "epoll: %s", strerror(errno))) < 0))
        goto fail;
    *ret = v;
    return 0;
fail:
    attempt_abandon(v);
    return r;
}

/* The attempt's files, sent over the control port after the agent's hello
 * (a restored guest's after its reseed), as the agent's one way in: a
 * cold boot's initramfs is the cached agent image alone, so nothing of the
 * attempt is on disk, and every file keeps its nanoseconds (the kernel's
 * own unpacker drops them). */
static int attempt_files(struct vm *v, const struct fy_plan *np, fy_error **reterr) {
    v->files_fd = memfd_create("fy-vm-files", MFD_CLOEXEC);
    const char *what = NULL;
    int x = v->files_fd < 0 ? -errno : write_attempt_archive(np, v->files_fd, &what, v->copied);
    if (x < 0)
        return archive_error(reterr, "the attempt's files", what, -x);
    return 0;
}

/* QEMU is running: a restored guest reseeded (first of all), the loop's
 * watches set, the attempt the handle's. */
static int attempt_go(fy_handle *h, struct vm *v, fy_error **reterr) {
    int r;
    if (v->from_template) {
        /* Before anything else reaches the restored guest: fresh
         * randomness and the time (read by the agent once restored). */
        uint8_t seed[8 + VMP_SEED_LEN];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        vmp_put_u64(seed, (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec / 1000);
        int ok = getrandom(seed + 8, VMP_SEED_LEN, 0) == VMP_SEED_LEN ? 0 : -1;
        if (ok < 0 || send_guest(v, VMP_RESEED, seed, sizeof(seed)) < 0) {
            util_bzero(seed, sizeof(seed));
            r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, errno, NULL, "reseeding the restored guest failed");
            return r;
        }
        util_bzero(seed, sizeof(seed));
    }
    v->t_qemu = util_now_usec();
    v->hello_deadline = v->t_qemu + HELLO_TIMEOUT;
    if (watch(v, v->sock) < 0 || watch(v, v->console_fd) < 0 || watch(v, fy_handle_get_fd(v->vmm)) < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "epoll: %s", strerror(errno));
        return r;
    }
    if (v->in_fd >= 0 && watch(v, v->in_fd) == 0)
        v->in_polled = true;
    h->b = v;
    return 0;
}

int vm_start_shell(fy_handle *h, void *shell, fy_error **reterr) {
    struct vm_shell *sh = shell;
    struct vm *v = NULL;
    int mon = -1;
    int r = attempt_new(h, &v, reterr);
    if (r < 0) {
        vm_shell_discard(sh);
        return r;
    }
    const struct fy_plan *np = neutral(h);
    /* The clone becomes the attempt's: its QEMU, ports and stub. */
    v->vmm = sh->vmm;
    v->sock = sh->sock;
    v->console_fd = sh->console_fd;
    memcpy(v->dir, sh->dir, sizeof(v->dir));
    v->k = sh->k;
    v->tmpl = sh->tmpl;
    v->tmpl.fd = -1;
    v->clone = true;
    v->clone_age = util_now_usec() - sh->made_usec;
    mon = sh->qmp;
    sh->vmm = NULL;
    sh->sock = sh->console_fd = sh->qmp = -1;
    sh->dir[0] = '\0';
    vm_shell_discard(sh); /* nothing left in it: frees it */
    /* The kernel and initramfs need no check here: vm_shell_fits compared
     * the clone's template key with the plan's, and that key is the digest
     * of inputs that name both (vm_template_key); vm_shell_make checked the
     * cache against them when it made the clone. */
    /* The attempt's directories, attached under the stubs QEMU exports. */
    for (size_t i = 0; i < v->pl->nmounts; i++) {
        char t[48];
        snprintf(t, sizeof(t), "/fy/m%zu/" VMP_SHARE_SUB, i);
        if ((r = backend_proxy_family()->sandbox_attach(v->vmm, v->pl->mounts[i].host, t, reterr)) < 0)
            goto fail;
    }
    if (v->pl->nic) {
        /* restricted: the router's tap (made by attempt_new) joined to the
         * hub the guest's NIC is on, over the clone's monitor */
        char why[256] = "";
        int x = mon >= 0 && v->nw.tap >= 0 ? vm_qmp_plug_tap(mon, v->nw.tap, why, sizeof(why)) : -1;
        if (mon >= 0)
            close(mon);
        mon = -1;
        if (x < 0) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_NETNS, 0, NULL, "the clone's network: %s",
                        why[0] ? why : "no monitor or tap");
            goto fail;
        }
        close(v->nw.tap); /* QEMU has its own */
        v->nw.tap = -1;
    }
    v->from_template = true;
    if ((r = attempt_files(v, np, reterr)) < 0 || (r = attempt_go(h, v, reterr)) < 0)
        goto fail;
    return 0;
fail:
    if (mon >= 0)
        close(mon);
    attempt_abandon(v);
    return r;
}

int vm_start(fy_handle *h, fy_error **reterr) {
    struct vm *v = NULL;
    int r = attempt_new(h, &v, reterr);
    if (r < 0)
        return r;
    const struct fy_plan *np = neutral(h);
    int sp[2] = {-1, -1};
    /* The kernel and initramfs, cached at the first start (fy_prepare
     * writes nothing); what the plan named must be what boots. */
    if ((r = vm_kernel_get_named(&v->k, &v->pl->k, reterr)) < 0)
        goto fail;
    if (v->pl->use_template) {
        /* The template, verified or made; a cache that is not this user's
         * alone is refused; any other failure boots cold, and says why. */
        fy_error *te = NULL;
        r = vm_template_get(v->pl, &v->k, h->pr->caps, np->state_dir, true, h->deadline, &v->tmpl, &te);
        if (r == FY_E_UNSAFE) {
            r = err_set(reterr, r, fy_error_step(te), fy_error_os_code(te), NULL, "%s", fy_error_message(te));
            fy_error_free(te);
            goto fail;
        }
        if (r < 0) {
            v->cold_why = util_strdup(te ? fy_error_message(te) : "no template");
            v->tmpl.fd = -1;
        }
        fy_error_free(te);
    }
    v->from_template = v->tmpl.fd >= 0;
    if ((r = attempt_files(v, np, reterr)) < 0)
        goto fail;
    if (v->from_template) {
        if (v->pl->nic) {
            /* restricted: QEMU's stdin is the router's tap, so the state
             * reaches it over a monitor socket of the attempt directory
             * (this process listening; the peer proven by a random name on
             * QEMU's command line), the directory holding nothing else. */
            if ((r = make_attempt_dir(v, reterr)) < 0 ||
                (r = vm_monitor_listen(v->dir, &v->qmp_listen, v->token, "the restoring QEMU's monitor socket",
                                       reterr)) < 0)
                goto fail;
        }
    }
    for (int tries = 0;; tries++) {
        int cp[2];
        if ((r = vm_control_open(&v->sock, &sp[1], &v->console_fd, &cp[1], reterr)) < 0)
            goto fail;
        /* restricted: QEMU's stdin is the router's tap (a restore gets its
         * state over the monitor, below) */
        r = v->nw.tap >= 0 ? start_vmm(h, v, v->nw.tap, sp[1], cp[1], reterr)
            : v->from_template ? start_vmm(h, v, v->tmpl.fd, sp[1], cp[1], reterr)
                               : start_vmm(h, v, sp[1], sp[1], cp[1], reterr);
        close(sp[1]);
        close(cp[1]);
        if (r < 0)
            goto fail;
        if (v->from_template && v->qmp_listen >= 0) {
            char why[512] = "";
            if (vm_template_restore(v->pl, &v->tmpl, v->qmp_listen, v->vmm, v->token, why, sizeof(why)) < 0) {
                r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL, "restoring the VM template: %s", why);
                goto fail;
            }
        }
        /* QEMU loads the state while its digest is checked here; the guest
         * is sent nothing before it matched. A template that fails is
         * removed and made again, once. */
        if (v->from_template && vm_template_check(&v->tmpl) < 0) {
            char why[256];
            memcpy(why, v->tmpl.refused, sizeof(why));
            fy_handle_free(v->vmm);
            v->vmm = NULL;
            close(v->sock);
            close(v->console_fd);
            v->sock = v->console_fd = -1;
            close(v->tmpl.fd);
            v->tmpl.fd = -1;
            vm_template_discard(v->pl);
            if (tries > 0) {
                r = err_set(reterr, FY_E_INTEGRITY, FY_STEP_SPAWN, 0, NULL, "the VM template fails its check: %s",
                            why);
                goto fail;
            }
            fy_error *te = NULL;
            r = vm_template_get(v->pl, &v->k, h->pr->caps, np->state_dir, false, h->deadline, &v->tmpl, &te);
            if (r < 0) {
                r = err_set(reterr, r, fy_error_step(te), fy_error_os_code(te), NULL, "%s", fy_error_message(te));
                fy_error_free(te);
                goto fail;
            }
            memcpy(v->tmpl.refused, why, sizeof(why));
            continue;
        }
        break;
    }
    if (v->tmpl.fd >= 0) {
        close(v->tmpl.fd); /* QEMU has its own */
        v->tmpl.fd = -1;
    }
    if (v->qmp_listen >= 0) {
        close(v->qmp_listen); /* no one else connects to this QEMU's monitor */
        v->qmp_listen = -1;
    }
    if (v->nw.tap >= 0) {
        close(v->nw.tap); /* QEMU has its own: the tap lives as long as QEMU */
        v->nw.tap = -1;
    }
    if ((r = attempt_go(h, v, reterr)) < 0)
        goto fail;
    return 0;
fail:
    attempt_abandon(v);
    return r;
}

/* ---- process ---- */

static void kill_vmm(fy_handle *h, struct vm *v) {
    if (!h->cancel_started)
        h->cancel_started = util_now_usec();
    if (v->vmm && !v->vmm_result && !v->killed)
        fy_handle_cancel(v->vmm, FY_CANCEL_USER, NULL);
    v->killed = true;
}

static int net_send(struct vm *v, uint8_t type, uint16_t flags, const void *p, size_t n);

static int send_guest(struct vm *v, uint8_t type, const void *p, size_t n) { return net_send(v, type, 0, p, n); }

/* One frame to the guest, whole (blocking, up to SO_SNDTIMEO). */
static int net_send(struct vm *v, uint8_t type, uint16_t flags, const void *p, size_t n) {
    uint8_t hd[VMP_HDR];
    vmp_header(hd, type, flags, (uint32_t)n);
    struct iovec iov[2] = {{hd, sizeof(hd)}, {(void *)p, n}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = n ? 2 : 1};
    size_t want = sizeof(hd) + n, done = 0;
    while (done < want) {
        /* A guest that stops reading holds this send up to SO_SNDTIMEO (5 s),
         * and never past the attempt's deadline (the event loop checks it
         * only between sends: 3 s limits took 10.6 s). */
        if (v->send_by) {
            uint64_t now = util_now_usec();
            if (now >= v->send_by) {
                errno = ETIMEDOUT;
                return -1;
            }
            uint64_t left = v->send_by - now < 5000000u ? v->send_by - now : 5000000u;
            struct timeval tv = {(time_t)(left / 1000000u), (suseconds_t)(left % 1000000u)};
            setsockopt(v->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
        ssize_t w = sendmsg(v->sock, &m, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
        while (w > 0 && m.msg_iovlen) {
            if ((size_t)w >= m.msg_iov[0].iov_len) {
                w -= (ssize_t)m.msg_iov[0].iov_len;
                m.msg_iov++;
                m.msg_iovlen--;
            } else {
                m.msg_iov[0].iov_base = (char *)m.msg_iov[0].iov_base + w;
                m.msg_iov[0].iov_len -= (size_t)w;
                w = 0;
            }
        }
    }
    return 0;
}

/* ---- fetch-only: the guest's connections to the attempt's proxy ---- */

#define PX_SOCK "px"

/* The proxy, accepting on a unix socket in a 0700 directory of this
 * attempt (only this user, and root, may connect: never the VMM's
 * sandbox, which does not see the directory, nor the guest). */
static int net_setup(struct vm *v, fy_error **reterr) {
    int r = vm_make_dir_in_attempts(v->pxdir, sizeof(v->pxdir), 0700, reterr);
    if (r < 0)
        return r;
    v->pxdir_fd = open(v->pxdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" PX_SOCK, v->pxdir_fd);
    if (v->pxdir_fd < 0 || l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(l, VMP_NET_CONNS) < 0) {
        int e = errno;
        if (l >= 0)
            close(l);
        return err_set(reterr, err_from_errno(e), FY_STEP_PROXY, e, NULL, "fetch-only: the proxy's listener: %s",
                       strerror(e));
    }
    r = v->pl->pxf->proxy_start(v->pl->pxcfg, l, &v->px, reterr);
    close(l); /* the proxy holds its own */
    return r;
}

static void net_arm(struct vm *v, uint16_t id) {
    struct vnet *c = &v->net[id];
    if (c->fd < 0)
        return;
    uint32_t ev = 0;
    if (!c->eof_sent && c->unacked < VMP_NET_WINDOW && v->net_unacked < NET_GUEST_INFLIGHT)
        ev |= EPOLLIN;
    if (c->qlen)
        ev |= EPOLLOUT;
    if (ev == c->ev && (ev != 0) == c->polled)
        return;
    struct epoll_event e = {.events = ev, .data.fd = c->fd};
    if (!ev) {
        if (c->polled)
            epoll_ctl(v->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        c->polled = false;
    } else {
        epoll_ctl(v->epfd, c->polled ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &e);
        c->polled = true;
    }
    c->ev = ev;
}

static void net_drop_fd(struct vm *v, struct vnet *c) {
    if (c->fd >= 0) {
        if (c->polled)
            epoll_ctl(v->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->ev = 0;
    c->polled = false;
}

static int net_u32(struct vm *v, uint8_t type, uint16_t id, uint32_t n);

static int net_u32(struct vm *v, uint8_t type, uint16_t id, uint32_t n) {
    uint8_t b[4];
    vmp_put_u32(b, n);
    return net_send(v, type, id, b, 4);
}

/* Moves bytes both ways on every connection that can; 0, or -1 when the
 * control port failed. */
static int net_pump(struct vm *v) {
    static uint8_t buf[VMP_MAX_FRAME];
    for (uint16_t id = 0; id < VMP_NET_CONNS; id++) {
        struct vnet *c = &v->net[id];
        if (!c->used || c->fd < 0)
            continue;
        if (c->qlen) {
            ssize_t w = send(c->fd, c->q, c->qlen, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
                memmove(c->q, c->q + w, c->qlen - (size_t)w);
                c->qlen -= (size_t)w;
                if (net_u32(v, VMP_NET_ACK, id, (uint32_t)w) < 0)
                    return -1;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                /* the proxy ended it: what the guest sent is dropped (and acknowledged) */
                if (net_u32(v, VMP_NET_ACK, id, (uint32_t)c->qlen) < 0)
                    return -1;
                c->qlen = 0;
                net_drop_fd(v, c);
                if (!c->eof_sent && net_send(v, VMP_NET_EOF, id, NULL, 0) < 0)
                    return -1;
                c->eof_sent = true;
                continue;
            }
        }
        if (c->guest_eof && !c->qlen && !c->wr_shut) {
            shutdown(c->fd, SHUT_WR);
            c->wr_shut = true;
        }
        while (!c->eof_sent && c->unacked < VMP_NET_WINDOW && v->net_unacked < NET_GUEST_INFLIGHT) {
            size_t want = NET_GUEST_INFLIGHT - v->net_unacked;
            if (want > VMP_NET_WINDOW - c->unacked)
                want = VMP_NET_WINDOW - c->unacked;
            if (want > sizeof(buf))
                want = sizeof(buf);
            ssize_t n = recv(c->fd, buf, want, MSG_DONTWAIT);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                break;
            if (n > 0) {
                if (net_send(v, VMP_NET_DATA, id, buf, (size_t)n) < 0)
                    return -1;
                c->unacked += (uint32_t)n;
                v->net_unacked += (uint64_t)n;
                continue;
            }
            if (net_send(v, VMP_NET_EOF, id, NULL, 0) < 0)
                return -1;
            c->eof_sent = true;
        }
        if (c->eof_sent && (c->wr_shut || c->fd < 0))
            net_drop_fd(v, c); /* nothing more either way: the slot waits for the guest's CLOSE */
        else
            net_arm(v, id);
    }
    return 0;
}

/* A frame of the guest's for a connection: 0, or the protocol error. */
static const char *net_frame(struct vm *v, const struct vmp_frame *f) {
    if (!v->pl->pxcfg)
        return "a network frame without a network";
    if (!v->run_sent || v->exit_seen)
        return "a network frame outside the command's run";
    if (f->flags >= VMP_NET_CONNS)
        return "a connection id out of range";
    uint16_t id = f->flags;
    struct vnet *c = &v->net[id];
    if (f->type == VMP_NET_OPEN) {
        if (c->used || f->len)
            return "a connection opened twice";
        uint8_t *q = c->q ? c->q : malloc(VMP_NET_WINDOW);
        if (!q)
            return "out of memory";
        memset(c, 0, sizeof(*c));
        c->q = q;
        c->used = true;
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" PX_SOCK, v->pxdir_fd);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            /* the proxy's backlog is full (or it is gone): refused */
            if (c->fd >= 0)
                close(c->fd);
            c->fd = -1;
            v->net_refused++;
            c->eof_sent = true;
            return net_send(v, VMP_NET_EOF, id, NULL, 0) < 0 ? "the control port failed" : NULL;
        }
        v->net_opened++;
        net_arm(v, id);
        return NULL;
    }
    if (!c->used)
        return "a frame for a connection that is not open";
    switch (f->type) {
    case VMP_NET_DATA:
        if (c->guest_eof || c->qlen + f->len > VMP_NET_WINDOW)
            return "connection data beyond its window or its end";
        if (c->fd < 0) /* refused or ended: dropped, acknowledged */
            return net_u32(v, VMP_NET_ACK, id, f->len) < 0 ? "the control port failed" : NULL;
        memcpy(c->q + c->qlen, f->data, f->len);
        c->qlen += f->len;
        return NULL;
    case VMP_NET_EOF:
        if (f->len || c->guest_eof)
            return "a connection ended twice";
        c->guest_eof = true;
        return NULL;
    case VMP_NET_ACK: {
        uint32_t n = f->len == 4 ? vmp_get_u32(f->data) : UINT32_MAX;
        if (n > c->unacked)
            return "an acknowledgement of bytes never sent";
        c->unacked -= n;
        v->net_unacked -= n;
        return NULL;
    }
    case VMP_NET_CLOSE:
        if (f->len)
            return "a malformed close";
        net_drop_fd(v, c);
        v->net_unacked -= c->unacked;
        c->unacked = 0;
        c->qlen = 0;
        c->used = false;
        return net_send(v, VMP_NET_CLOSE, id, NULL, 0) < 0 ? "the control port failed" : NULL;
    default:
        return "an unknown network frame";
    }
}

/* Ends the proxy and the connections: processes left (0: witnessed). */
static unsigned net_teardown(struct vm *v, char **report) {
    unsigned left = 0;
    for (int i = 0; i < VMP_NET_CONNS; i++) {
        net_drop_fd(v, &v->net[i]);
        free(v->net[i].q);
        v->net[i].q = NULL;
        v->net[i].used = false;
    }
    if (v->px) {
        left += v->pl->pxf->proxy_stop(v->px);
        if (report) {
            char *s = v->pl->pxf->proxy_report(v->px);
            json_t *o = s ? json_loads(s, 0, NULL) : NULL;
            json_t *px = o ? json_object_get(o, "proxy") : NULL;
            if (json_is_object(px)) {
                json_object_set_new(px, "listen", json_string("a unix socket in a 0700 directory of the attempt "
                                                              "on the host; the guest's 127.0.0.1:3128 is the "
                                                              "agent's, carried over the control port"));
                json_object_set_new(o, "connections", json_pack("{sIsI}", "carried", (json_int_t)v->net_opened,
                                                                "refused", (json_int_t)v->net_refused));
                free(s);
                s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
            }
            json_decref(o);
            *report = s;
        }
        v->pl->pxf->proxy_release(v->px);
        v->px = NULL;
    }
    if (v->pxdir_fd >= 0)
        close(v->pxdir_fd);
    v->pxdir_fd = -1;
    return left;
}

/* The RUN: the plan's records, then the secrets (env and file), which
 * exist only in this buffer, wiped once sent. */
static int send_run(fy_handle *h, struct vm *v) {
    const struct fy_plan *np = neutral(h);
    size_t len = v->pl->run_len + (v->clone ? 5 : 0);
    for (size_t i = 0; i < np->nsecrets; i++)
        if (np->secrets[i].delivery != FY_SECRET_STDIN)
            len += 5 + strlen(np->secrets[i].target ? np->secrets[i].target : np->secrets[i].name) + 1 +
                   np->secrets[i].len;
    if (len > VMP_MAX_FRAME) {
        errno = E2BIG;
        return -1;
    }
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -1;
    memcpy(buf, v->pl->run_msg, v->pl->run_len);
    size_t off = v->pl->run_len;
    if (v->clone) {
        /* its shares' directories are in their stubs' VMP_SHARE_SUB */
        buf[off] = VMR_SHARES_SUB;
        vmp_put_u32(buf + off + 1, 0);
        off += 5;
    }
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *s = &np->secrets[i];
        if (s->delivery == FY_SECRET_STDIN)
            continue; /* sent as the workload's standard input */
        const char *name = s->target ? s->target : s->name;
        size_t nl = strlen(name);
        buf[off] = s->delivery == FY_SECRET_ENV ? VMR_ENV : VMR_SECRET_FILE;
        vmp_put_u32(buf + off + 1, (uint32_t)(nl + 1 + s->len));
        memcpy(buf + off + 5, name, nl);
        buf[off + 5 + nl] = s->delivery == FY_SECRET_ENV ? '=' : '\0';
        memcpy(buf + off + 5 + nl + 1, s->value, s->len);
        off += 5 + nl + 1 + s->len;
    }
    int r = send_guest(v, VMP_RUN, buf, off);
    int e = errno;
    util_bzero(buf, len);
    free(buf);
    errno = e;
    return r;
}

/* The attempt's archive after a restore, in frames, then its end. */
static int send_files(struct vm *v) {
    static const size_t chunk = VMP_MAX_FRAME;
    uint8_t *buf = malloc(chunk);
    if (!buf)
        return -1;
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(v->files_fd, buf, chunk, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n == 0)
            break;
        if (send_guest(v, VMP_FILES, buf, (size_t)n) < 0) {
            free(buf);
            return -1;
        }
        off += n;
    }
    free(buf);
    close(v->files_fd);
    v->files_fd = -1;
    return send_guest(v, VMP_FILES_END, NULL, 0);
}

/* Until fd (the caller's, or its pipe) takes a write: 0; -ETIMEDOUT at
 * the attempt's deadline; -ECANCELED when the handle is woken (a cancel).
 * A reader that stops reading must not stop the deadline: the event loop
 * is where it is kept. */
static int wait_writable(fy_handle *h, int fd) {
    for (;;) {
        int ms = -1;
        if (h->deadline) {
            uint64_t now = util_now_usec();
            if (now >= h->deadline)
                return -ETIMEDOUT;
            uint64_t left = (h->deadline - now + 999) / 1000;
            ms = left > INT_MAX ? INT_MAX : (int)left;
        }
        struct pollfd pf[2] = {{.fd = fd, .events = POLLOUT}, {.fd = h->wake_fd, .events = POLLIN}};
        int r = poll(pf, h->wake_fd >= 0 ? 2 : 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (pf[0].revents)
            return 0; /* (writable, or an error the write will say) */
        if (pf[1].revents)
            return -ECANCELED;
    }
}

/* write(2) into the caller's descriptor without a SIGPIPE to the caller's
 * process when its reader is gone (`forgeyard run ... | head` died of it,
 * with no result): the signal blocked in this thread for the call and, when
 * this write raised it, taken back. */
static ssize_t write_nosigpipe(int fd, const void *p, size_t n) {
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    ssize_t w = write(fd, p, n);
    int e = errno;
    if (w < 0 && e == EPIPE && !was_pending) {
        static const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

static void deliver(fy_handle *h, struct vm *v, int stream, const uint8_t *p, size_t n) {
    const struct plan_stdio *s = &neutral(h)->stdio[stream];
    if (s->mode == FY_STDIO_NULL || !n || v->reader_gone[stream])
        return;
    if (s->mode == FY_STDIO_FILE || s->mode == FY_STDIO_CALLBACK) {
        if (v->out_limit != FY_UNLIMITED && v->out_bytes + n > v->out_limit) {
            n = v->out_bytes < v->out_limit ? (size_t)(v->out_limit - v->out_bytes) : 0;
            v->truncated = true;
            handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output");
            kill_vmm(h, v);
        }
        v->out_bytes += n;
        v->stream_bytes[stream] += n;
        if (!n)
            return;
    }
    if (s->mode == FY_STDIO_CALLBACK) {
        s->fn(s->userdata, (uint32_t)stream, p, n);
        return;
    }
    int fd = s->mode == FY_STDIO_FILE ? v->out_fd[stream] : s->fd;
    while (n) {
        size_t chunk = n;
        if (s->mode != FY_STDIO_FILE) {
            /* (a pipe that polls writable takes PIPE_BUF bytes without blocking) */
            int k = wait_writable(h, fd);
            if (k == -ETIMEDOUT && !v->killed) {
                handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                           (unsigned long long)(neutral(h)->limit[FY_LIMIT_WALL_TIME] / 1000));
                kill_vmm(h, v);
            }
            if (k < 0) {
                v->truncated = true; /* (the rest of this stream's frame is not delivered) */
                return;
            }
            chunk = n < PIPE_BUF ? n : PIPE_BUF;
        }
        ssize_t w = s->mode == FY_STDIO_FILE ? write(fd, p, chunk) : write_nosigpipe(fd, p, chunk);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (s->mode == FY_STDIO_FILE)
                handle_end(h, END_INFRA, FY_STEP_OUTPUT, errno, "writing captured output: %s", strerror(errno));
            else if (w < 0 && errno == EPIPE)
                v->reader_gone[stream] = v->truncated = true; /* (as a pipe with no reader: the rest is lost) */
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void protocol_error(fy_handle *h, struct vm *v, const char *why) {
    handle_end(h, END_INFRA, FY_STEP_WAIT, EPROTO, "guest agent protocol error: %s", why);
    kill_vmm(h, v);
}

/* The tree came back whole: what it held when copied in and the guest no
 * longer has (removed, renamed away) goes on the host too, as a bind
 * mount would have had it. Only what was copied in: a file the guest never
 * saw (a FIFO, one the copy could not read) stays. Nothing is removed when
 * either list is incomplete (out of memory). */
static void mirror_removed(fy_handle *h, struct vm *v, int which) {
    struct vmt *t = v->tar[which];
    struct pathlist *l = &v->copied[which];
    if (!t || l->oom || t->seen_oom)
        return;
    vmt_seal(t);
    for (size_t i = 0; i < l->n; i++) {
        const struct copied_path *c = &l->items[i];
        if (vmt_named(t, c->path) || !vmt_nameable(c->path, c->dir))
            continue;
        int r = vmt_remove(t, c->path);
        if (r > 0) {
            v->removed[which]++;
        } else if (r < 0) {
            handle_end(h, END_INFRA, FY_STEP_OUTPUT, -r, "removing %s from the %s directory, as the guest did: %s",
                       c->path, which == VMP_DIR_BUILD ? "build" : "output", strerror(-r));
            return;
        }
    }
}

/* Text the guest sent, for a result's detail: prefix, then at most
 * VMP_GUEST_TEXT_MAX bytes of it (to its first NUL), control characters as
 * '?'. malloc'd; NULL when out of memory. */
static char *guest_text(const char *prefix, const uint8_t *p, size_t n) {
    int len = (int)(n > VMP_GUEST_TEXT_MAX ? VMP_GUEST_TEXT_MAX : n);
    char *s = util_asprintf("%s%.*s", prefix, len, (const char *)p);
    for (char *c = s; c && *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
            *c = '?';
    return s;
}

static void on_frame(fy_handle *h, struct vm *v, const struct vmp_frame *f) {
    if (!v->hello && f->type != VMP_HELLO)
        return protocol_error(h, v, "a frame before the agent's hello");
    switch (f->type) {
    case VMP_HELLO: {
        if (v->hello || !vmp_is_hello(f))
            return protocol_error(h, v, "unexpected hello");
        v->hello = true;
        if (v->files_fd >= 0 && send_files(v) < 0) {
            handle_end(h, END_INFRA, FY_STEP_MOUNT, errno, "sending the attempt's files to the guest: %s",
                       strerror(errno));
            kill_vmm(h, v);
            return;
        }
        v->t_hello = util_now_usec();
        if (send_run(h, v) < 0) {
            handle_end(h, END_INFRA, FY_STEP_EXEC, errno, "sending the command to the guest: %s", strerror(errno));
            kill_vmm(h, v);
            return;
        }
        v->run_sent = true;
        v->t_run = util_now_usec();
        const struct fy_plan *np = neutral(h);
        for (size_t i = 0; i < np->nsecrets; i++) {
            /* A secret on standard input is all of it, as in the namespace backend. */
            const struct plan_secret *s = &np->secrets[i];
            if (s->delivery != FY_SECRET_STDIN)
                continue;
            for (size_t off = 0; off < s->len; off += VMP_MAX_FRAME)
                send_guest(v, VMP_STDIN, s->value + off, s->len - off < VMP_MAX_FRAME ? s->len - off : VMP_MAX_FRAME);
            if (v->in_fd >= 0 && v->in_polled)
                epoll_ctl(v->epfd, EPOLL_CTL_DEL, v->in_fd, NULL);
            v->in_fd = -1;
        }
        if (v->in_fd < 0 || np->stdio[FY_STDIN].mode != FY_STDIO_FD)
            send_guest(v, VMP_STDIN_EOF, NULL, 0);
        return;
    }
    case VMP_STDOUT:
    case VMP_STDERR:
        if (v->exit_seen)
            return protocol_error(h, v, "output after the exit");
        deliver(h, v, f->type == VMP_STDOUT ? 1 : 2, f->data, f->len);
        return;
    case VMP_EXIT:
        if (v->exit_seen || vmp_get_exit(f->data, f->len, &v->ex) < 0)
            return protocol_error(h, v, "bad exit record");
        v->exit_seen = true;
        v->t_exit = util_now_usec();
        return;
    case VMP_TAR:
    case VMP_TAR_END: {
        if (!v->exit_seen || f->flags < 1 || f->flags > 2 || !v->tar[f->flags] || v->tar_done[f->flags])
            return protocol_error(h, v, "an unexpected tree");
        struct vmt *t = v->tar[f->flags];
        if (f->type == VMP_TAR) {
            v->tar_bytes += f->len;
            if (v->out_limit != FY_UNLIMITED && v->tar_bytes > v->out_limit) {
                handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output (returned files)");
                kill_vmm(h, v);
                return;
            }
            uint64_t copied = t->copied;
            t->copy_budget = v->out_limit == FY_UNLIMITED ? UINT64_MAX : v->out_limit - v->tar_bytes;
            int fed = vmt_feed(t, f->data, f->len);
            v->tar_bytes += t->copied - copied; /* (copies the host made count as returned bytes) */
            if (fed < 0 && t->over_budget) {
                handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output (returned files)");
                kill_vmm(h, v);
                return;
            }
            if (fed < 0)
                return protocol_error(h, v, t->error);
            /* The disk and files quotas: what the trees bring back to the
             * host's directories (the guest's own writes are its tmpfs). */
            uint64_t bytes = 0, entries = 0;
            for (int k = 1; k <= 2; k++)
                if (v->tar[k]) {
                    bytes += v->tar[k]->bytes + v->tar[k]->copied;
                    entries += v->tar[k]->entries;
                }
            uint64_t dq = neutral(h)->limit[FY_LIMIT_DISK], fq = neutral(h)->limit[FY_LIMIT_FILES];
            if ((dq != FY_UNLIMITED && bytes > dq) || (fq != FY_UNLIMITED && entries > fq)) {
                handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "%s",
                           dq != FY_UNLIMITED && bytes > dq ? "disk" : "files");
                kill_vmm(h, v);
                return;
            }
        } else {
            v->tar_done[f->flags] = true;
            if (f->len == 4 && !memcmp(f->data, "over", 4)) {
                handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output (returned files)");
                return;
            }
            if (f->len > 5 && !memcmp(f->data, "skip ", 5)) {
                /* An entry the stream could not carry: the tree on the
                 * host is not the guest's, and the attempt says which
                 * (what did come is kept; nothing is removed for it). */
                char *why = guest_text("", f->data + 5, f->len - 5);
                handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "returned files (%s): an entry the virtual-machine "
                           "backend cannot return, %s", f->flags == VMP_DIR_BUILD ? "build" : "output",
                           why ? why : "?");
                free(why);
                return;
            }
            if (vmt_end(t) < 0)
                return protocol_error(h, v, t->error);
            mirror_removed(h, v, f->flags);
        }
        return;
    }
    case VMP_SETUP_FAIL:
        if (f->len < 4 || v->setup_failed)
            return protocol_error(h, v, "bad setup failure record");
        v->setup_failed = true;
        v->setup_errno = (int)vmp_get_u32(f->data);
        free(v->setup_detail);
        v->setup_detail = guest_text("in the guest: ", f->data + 4, f->len - 4);
        return;
    case VMP_DONE:
        if (!v->exit_seen)
            return protocol_error(h, v, "done before the exit");
        for (int i = 1; i < 3; i++)
            if (v->tar[i] && !v->tar_done[i] && h->end == END_NONE)
                return protocol_error(h, v, "a workspace tree was not returned");
        v->done = true;
        v->t_done = util_now_usec();
        v->done_deadline = v->t_done + DONE_GRACE;
        /* The guest has said everything (its workload killed, writable
         * shares uncached): its own power-off is not waited for. The
         * VMM's sandbox ends now and its end is witnessed as ever. */
        if (v->vmm && !v->vmm_result)
            fy_handle_cancel(v->vmm, FY_CANCEL_USER, NULL);
        return;
    case VMP_NET_OPEN:
    case VMP_NET_DATA:
    case VMP_NET_EOF:
    case VMP_NET_ACK:
    case VMP_NET_CLOSE: {
        const char *why = net_frame(v, f);
        if (why)
            return protocol_error(h, v, why);
        return;
    }
    case VMP_DNS_QUERY: {
        const char *why = !v->run_sent ? "a DNS frame outside the command's run"
                                       : vmn_dns_query(&v->nw, f->flags, f->data, f->len);
        if (why)
            return protocol_error(h, v, why);
        return;
    }
    case VMP_LOG:
        if (v->log.len < 4096)
            strbuf_appendn(&v->log, (const char *)f->data, f->len > 1024 ? 1024 : f->len);
        return;
    default:
        return protocol_error(h, v, "a host-to-guest frame from the guest");
    }
}

/* Bounded work per call: at most 16 reads (about 1 MiB), then back to the
 * loop. Returns true when it stopped at that bound with more perhaps
 * waiting, false at end of file, with nothing to read, or killed. */
static bool read_guest(fy_handle *h, struct vm *v) {
    int rounds = 0;
    for (; rounds < 16 && !v->sock_eof && !v->killed; rounds++) {
        size_t room = vmp_room(v->dec);
        ssize_t n = recv(v->sock, v->dec->buf + v->dec->have, room, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0) {
            v->sock_eof = true;
            epoll_ctl(v->epfd, EPOLL_CTL_DEL, v->sock, NULL);
            break;
        }
        vmp_added(v->dec, (size_t)n);
        struct vmp_frame f;
        int k;
        while (!v->killed && (k = vmp_next(v->dec, &f)) == 1)
            on_frame(h, v, &f);
        if (k < 0 && !v->killed)
            protocol_error(h, v, v->dec->error);
    }
    return rounds == 16 && !v->sock_eof && !v->killed;
}

static void forward_stdin(fy_handle *h, struct vm *v) {
    if (v->in_fd < 0 || !v->run_sent || v->killed)
        return;
    uint8_t buf[16384];
    ssize_t n = read(v->in_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        if (send_guest(v, VMP_STDIN, buf, (size_t)n) < 0)
            n = 0;
        else
            return;
    }
    if (v->in_polled)
        epoll_ctl(v->epfd, EPOLL_CTL_DEL, v->in_fd, NULL);
    v->in_fd = -1;
    send_guest(v, VMP_STDIN_EOF, NULL, 0);
    (void)h;
}

static uint64_t earliest(uint64_t a, uint64_t b) { return !a ? b : !b ? a : a < b ? a : b; }

uint64_t vm_next_deadline(fy_handle *h) {
    struct vm *v = h->b;
    if (v->vmm_result)
        return 0;
    uint64_t t = 0;
    if (!v->killed && h->end == END_NONE)
        t = earliest(h->deadline, v->hello ? 0 : v->hello_deadline);
    if (v->done)
        t = earliest(t, v->done_deadline);
    if (v->in_fd >= 0 && !v->in_polled && v->run_sent)
        t = earliest(t, util_now_usec()); /* a regular file: read on */
    uint64_t u;
    if (v->vmm && fy_handle_get_timeout_usec(v->vmm, &u) >= 0 && u != FY_UNLIMITED)
        t = earliest(t, util_now_usec() + u);
    return t;
}

static void arm(fy_handle *h, struct vm *v) {
    uint64_t t = vm_next_deadline(h);
    struct itimerspec its = {0};
    if (t) {
        its.it_value.tv_sec = (time_t)(t / SEC);
        its.it_value.tv_nsec = (long)(t % SEC) * 1000;
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
            its.it_value.tv_nsec = 1;
    }
    timerfd_settime(v->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void drain_console(struct vm *v) {
    for (int i = 0; i < 64 && v->console_fd >= 0; i++) {
        char buf[4096];
        ssize_t n = read(v->console_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            epoll_ctl(v->epfd, EPOLL_CTL_DEL, v->console_fd, NULL);
            close(v->console_fd);
            v->console_fd = -1;
        }
        if (n <= 0)
            return;
        if (v->console_len + (size_t)n > CONSOLE_KEEP) {
            size_t drop = v->console_len + (size_t)n - CONSOLE_KEEP;
            if (drop > v->console_len)
                drop = v->console_len;
            memmove(v->console, v->console + drop, v->console_len - drop);
            v->console_len -= drop;
        }
        size_t c = (size_t)n > CONSOLE_KEEP ? CONSOLE_KEEP : (size_t)n;
        memcpy(v->console + v->console_len, buf + (size_t)n - c, c);
        v->console_len += c;
    }
}

/* The console's last bytes, printable, for a panic or a failed boot. */
static char *console_tail(struct vm *v, bool *panic) {
    v->console[v->console_len] = '\0';
    for (size_t i = 0; i < v->console_len; i++)
        if (!v->console[i])
            v->console[i] = ' ';
    char *pn = strstr(v->console, "Kernel panic");
    *panic = pn != NULL;
    const char *from = pn ? pn : v->console + (v->console_len > 400 ? v->console_len - 400 : 0);
    char *out = util_strdup(from);
    if (out) {
        if (strlen(out) > 400)
            out[400] = '\0';
        for (char *c = out; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
                *c = ' ';
    }
    return out;
}

static void finish(fy_handle *h, struct vm *v) {
    const struct fy_plan *np = neutral(h);
    fy_result *r = result_new();
    struct attempt_report rep = {0};
    if (!v->done && !v->exit_seen && !v->setup_failed && h->end == END_NONE) {
        bool panic;
        char *tail = console_tail(v, &panic);
        if (panic)
            handle_end(h, END_INFRA, FY_STEP_WAIT, 0, "guest kernel panic: %s", tail ? tail : "");
        else if (!v->hello) {
            const char *d = v->vmm_result ? fy_result_detail(v->vmm_result) : NULL;
            handle_end(h, END_INFRA, FY_STEP_SPAWN, 0,
                       "the VM ended before its agent answered (VMM: %s, exit %d%s%s)%s%s",
                       v->vmm_result ? fy_outcome_name((uint32_t)fy_result_outcome(v->vmm_result)) : "?",
                       v->vmm_result ? fy_result_exit_code(v->vmm_result) : -1, d ? ": " : "", d ? d : "",
                       tail && *tail ? "; console: " : "", tail && *tail ? tail : "");
        }
        else
            handle_end(h, END_INFRA, FY_STEP_WAIT, 0, "the VM ended before its agent reported the command's end");
        free(tail);
    } else if (v->exit_seen && !v->done && !v->setup_failed && h->end == END_NONE) {
        /* The command's end came, the guest's "done" did not: the build
         * and output trees may be cut short, so the attempt did not
         * succeed whatever the command's status (before, a guest that
         * stopped while it sent them back read as a success with part of
         * the files). */
        bool panic;
        char *tail = console_tail(v, &panic);
        int which = 0;
        for (int i = 1; i < 3 && !which; i++)
            if (v->tar[i] && !v->tar_done[i])
                which = i;
        handle_end(h, END_INFRA, FY_STEP_OUTPUT, EPIPE, "the VM ended %s%s%s",
                   which ? (which == VMP_DIR_BUILD ? "before its agent had returned the build tree" :
                                         "before its agent had returned the output tree")
                         : "before its agent said it was done",
                   tail && *tail ? "; console: " : "", tail && *tail ? tail : "");
        free(tail);
    }
    rep.exit_seen = v->exit_seen;
    if (v->exit_seen)
        rep.wstatus = v->ex.kind == 1 ? (int)(v->ex.code << 8) : (int)v->ex.code;
    if (v->setup_failed) {
        rep.setup_failed = true;
        rep.setup_step = FY_STEP_EXEC;
        rep.setup_errno = v->setup_errno;
        rep.setup_detail = v->setup_detail;
        v->setup_detail = NULL;
    }
    rep.oom_killed = v->ex.oom_kills > 0;
    rep.memory_limit = np->limit[FY_LIMIT_MEMORY];
    rep.pids_limit_hit = v->ex.pids_max > 0;
    rep.t_isolation = v->t_qemu;
    rep.t_filesystem = v->t_hello;
    rep.t_exec = v->t_run;
    rep.t_exit = v->t_exit;
    rep.t_ended = v->t_ended;
    rep.t_output_eof = v->t_done ? v->t_done : v->t_ended;
    rep.output_bytes = v->out_bytes;
    rep.output_limit = v->out_limit;
    rep.output_limit_beyond_streams = true; /* (it also bounds the returned trees) */
    rep.output_truncated = v->truncated;
    for (int i = 1; i < 3; i++) {
        uint32_t m = np->stdio[i].mode;
        rep.stream_counted[i] = m == FY_STDIO_FILE || m == FY_STDIO_CALLBACK;
        rep.stream_bytes[i] = v->stream_bytes[i];
        if (m == FY_STDIO_CALLBACK)
            np->stdio[i].fn(np->stdio[i].userdata, (uint32_t)i, NULL, 0);
    }
    if (v->exit_seen) {
        rep.usage[FY_USAGE_CPU_USER_USEC] = v->ex.utime_usec;
        rep.usage[FY_USAGE_CPU_SYSTEM_USEC] = v->ex.stime_usec;
        rep.usage_known = (1u << FY_USAGE_CPU_USER_USEC) | (1u << FY_USAGE_CPU_SYSTEM_USEC);
        if (v->ex.memory_peak) {
            /* the guest cgroup's memory.peak: the whole tree's, orphans too */
            rep.usage[FY_USAGE_MEMORY_PEAK] = v->ex.memory_peak > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX
                                                                                      : v->ex.memory_peak;
            rep.usage_known |= 1u << FY_USAGE_MEMORY_PEAK;
        } else if (v->ex.maxrss_kb) {
            /* (the guest's word: clamped as the CPU times are, never wrapped to a plausible 0) */
            rep.usage[FY_USAGE_MEMORY_PEAK] = v->ex.maxrss_kb > (uint64_t)INT64_MAX / 1024 ? (uint64_t)INT64_MAX
                                                                                        : v->ex.maxrss_kb * 1024;
            rep.usage_known |= 1u << FY_USAGE_MEMORY_PEAK;
        }
        rep.usage_source = v->ex.memory_peak ? "guest cgroup" : "guest rusage";
    }
    /* Cleanup, witnessed: the VMM's sandbox reported its own leftovers;
     * the attempt directory must be gone. */
    rep.t_cleanup_begin = util_now_usec();
    if (v->vmm_result) {
        for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_FILES; k++) {
            uint64_t n = 0;
            if (fy_result_cleanup(v->vmm_result, k, &n) >= 0)
                rep.left[k] += n;
        }
    }
    /* What the guest returned, with digests. */
    json_t *iso = json_loads(v->pl->isolation_json, 0, NULL), *outs = json_array();
    if (iso && outs) {
        uint64_t unlisted = 0;
        for (int i = 1; i < 3; i++) {
            if (!v->tar[i])
                continue;
            for (size_t k = 0; k < v->tar[i]->nlisted; k++) {
                /* (a name the guest chose: not always UTF-8, which JSON
                 * needs; shown with U+FFFD and said so, never left out) */
                const char *path = v->tar[i]->listed[k].path;
                char *shown = util_utf8_valid(path) ? NULL : util_utf8_lossy(path);
                json_t *f = json_pack("{sssssssI}", "path", shown ? shown : path, "dir",
                                      i == VMP_DIR_BUILD ? "build" : "output", "sha256", v->tar[i]->listed[k].sha256,
                                      "size", (json_int_t)v->tar[i]->listed[k].size);
                if (f && shown)
                    json_object_set_new(f, "path_altered", json_true());
                if (f)
                    json_array_append_new(outs, f);
                else
                    unlisted++;
                free(shown);
            }
            if (v->tar[i]->files > v->tar[i]->nlisted)
                unlisted += v->tar[i]->files - v->tar[i]->nlisted;
        }
        json_object_set(iso, "returned_files", outs);
        /* the files returned that the list above does not hold (it holds
         * the first VMT_LISTED of each tree) */
        json_object_set_new(iso, "returned_files_unlisted", json_integer((json_int_t)unlisted));
        json_object_set_new(iso, "removed_as_in_guest",
                            json_pack("{sIsI}", "build", (json_int_t)v->removed[VMP_DIR_BUILD], "output",
                                      (json_int_t)v->removed[VMP_DIR_OUTPUT]));
        json_object_set_new(
            iso, "kept_unchanged",
            json_pack("{sIsI}", "build", (json_int_t)(v->tar[VMP_DIR_BUILD] ? v->tar[VMP_DIR_BUILD]->unchanged : 0),
                      "output", (json_int_t)(v->tar[VMP_DIR_OUTPUT] ? v->tar[VMP_DIR_OUTPUT]->unchanged : 0)));
        if (v->from_template) {
            json_t *tm = json_object_get(iso, "template");
            if (json_is_object(tm)) {
                json_object_set_new(tm, "state_sha256", json_string(v->tmpl.state_sha256));
                json_object_set_new(tm, "state_bytes", json_integer((json_int_t)v->tmpl.state_size));
                json_object_set_new(tm, "made_by_this_attempt", json_boolean(v->tmpl.made));
                json_object_set_new(tm, "verify_usec", json_integer((json_int_t)v->tmpl.verify_usec));
                json_object_set_new(
                    tm, "state_checked",
                    v->tmpl.from_sealed
                        ? json_sprintf("restored from this process's sealed copy of the state (a memfd sealed "
                                       "against writing, growing and shrinking) whose SHA-256 matched at %llu "
                                       "(realtime usec); the state file unchanged since (device, inode, size, "
                                       "mtime, ctime)",
                                       (unsigned long long)v->tmpl.sealed_at)
                        : json_string("the state file's SHA-256, recomputed by this attempt while QEMU loaded "
                                      "it, before the guest was sent anything"));
                json_object_set_new(
                    tm, "state_passed",
                    json_string(v->pl->nic ? "over the restoring QEMU's monitor (a unix socket of the attempt "
                                             "directory this process listened on; the one peer accepted a "
                                             "descendant of this process carrying the attempt's random -name and "
                                             "running the plan's QEMU; getfd, migrate-incoming, then closed): its "
                                             "standard input is the router's tap"
                                           : "as the restoring QEMU's standard input (-incoming fd:0)"));
                json_object_set_new(tm, "refused_before",
                                    v->tmpl.refused[0] ? json_string(v->tmpl.refused) : json_null());
                json_object_set_new(tm, "reseeded", json_true());
                if (v->clone)
                    json_object_set_new(
                        tm, "prestarted_clone",
                        json_pack("{sIss}", "restored_before_claim_usec", (json_int_t)v->clone_age, "shares",
                                  "the attempt's directories attached read-only at the claim under the clone's "
                                  "empty 9p export stubs, in its VMM sandbox's mount namespace"));
            }
        } else if (v->pl->use_template) {
            json_object_set_new(iso, "template", json_null());
            json_object_set_new(iso, "boot", json_sprintf("cold boot (the template could not be had: %s)",
                                                          v->cold_why ? v->cold_why : "?"));
        }
        json_t *kern = json_object_get(iso, "kernel");
        if (json_is_object(kern))
            json_object_set_new(kern, "vmlinux_sha256", json_string(v->k.digest));
        /* What the agent said it enforced: the guest's word, bounded and
         * printable, never a basis for a decision. */
        for (size_t i = 0; i < v->log.len; i++)
            if ((unsigned char)v->log.buf[i] < 0x20 || (unsigned char)v->log.buf[i] > 0x7e)
                v->log.buf[i] = ' ';
        if (v->log.len && !v->log.oom)
            json_object_set_new(iso, "guest_report", json_stringn(v->log.buf, v->log.len));
        rep.isolation_json = json_dumps(iso, JSON_COMPACT | JSON_SORT_KEYS);
    }
    json_decref(outs);
    json_decref(iso);
    rep.limits_json = util_strdup(v->pl->limits_json);
    for (int i = 1; i < 3; i++)
        if (v->out_fd[i] >= 0) {
            close(v->out_fd[i]);
            v->out_fd[i] = -1;
        }
    if (v->dir[0] && vm_remove_dir(v->dir) < 0)
        rep.left[FY_LEFT_FILES]++;
    v->dir[0] = '\0';
    if (v->pl->pxcfg) {
        /* The proxy killed and reaped (the witness), its audit log kept. */
        rep.left[FY_LEFT_PROCESSES] += net_teardown(v, &rep.network_json);
        if (v->pxdir[0] && vm_remove_dir(v->pxdir) < 0)
            rep.left[FY_LEFT_FILES]++;
        v->pxdir[0] = '\0';
    }
    if (v->nw.router || v->nw.dns) {
        /* The stub reaped, the router's links witnessed gone (QEMU, which
         * held the tap, has ended), both in the network record. */
        json_t *o = rep.network_json ? json_loads(rep.network_json, 0, NULL) : json_object();
        rep.left[FY_LEFT_NETWORK] += vmn_stop(&v->nw, o);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(o);
        if (s) {
            free(rep.network_json);
            rep.network_json = s;
        }
    }
    rep.t_cleanup_end = util_now_usec();
    attempt_finish(h, &rep, r);
}

/* A send that failed because the deadline passed (net_send): the timeout
 * below ends the attempt, as a timeout. */
static bool past_deadline(const fy_handle *h) {
    return errno == ETIMEDOUT && h->deadline && util_now_usec() >= h->deadline;
}

static int dns_answer(void *ctx, uint16_t slot, const void *p, size_t n) {
    return net_send(ctx, VMP_DNS_ANSWER, slot, p, n);
}

int vm_process(fy_handle *h, fy_error **reterr) {
    struct vm *v = h->b;
    if (h->result)
        return 1;
    v->send_by = h->deadline;
    uint64_t drain;
    if (read(v->timerfd, &drain, sizeof(drain)) < 0) {
        /* EAGAIN: not expired */
    }
    if (!v->sock_eof)
        read_guest(h, v);
    drain_console(v);
    /* (the wall-clock limit before any send to the guest, which fails once
     * it has passed: a timeout, never an infrastructure failure) */
    if (!v->killed && h->end == END_NONE && h->deadline && util_now_usec() >= h->deadline) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(neutral(h)->limit[FY_LIMIT_WALL_TIME] / 1000));
        kill_vmm(h, v);
    }
    if (v->in_fd >= 0)
        forward_stdin(h, v);
    if (v->nw.dns_sock >= 0 && !v->killed && !v->sock_eof && vmn_dns_pump(&v->nw, dns_answer, v) < 0 &&
        !past_deadline(h)) {
        handle_end(h, END_INFRA, FY_STEP_PROXY, errno, "carrying the guest's DNS answers: the control port: %s",
                   strerror(errno));
        kill_vmm(h, v);
    }
    if (v->px && !v->killed && !v->sock_eof && net_pump(v) < 0 && !past_deadline(h)) {
        handle_end(h, END_INFRA, FY_STEP_PROXY, errno, "carrying the guest's connections: the control port: %s",
                   strerror(errno));
        kill_vmm(h, v);
    }
    uint64_t now = util_now_usec();
    if (!v->killed && h->end == END_NONE && h->deadline && now >= h->deadline) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(neutral(h)->limit[FY_LIMIT_WALL_TIME] / 1000));
        kill_vmm(h, v);
    }
    if (!v->killed && !v->hello && now >= v->hello_deadline) {
        handle_end(h, END_INFRA, FY_STEP_SPAWN, ETIMEDOUT, "the guest agent did not answer within %llu s",
                   (unsigned long long)(HELLO_TIMEOUT / SEC));
        kill_vmm(h, v);
    }
    if (v->done && !v->vmm_result && now >= v->done_deadline)
        kill_vmm(h, v); /* the guest said it was done but did not power off */
    if (v->vmm && !v->vmm_result) {
        fy_result *res = NULL;
        fy_error *e = NULL;
        int r = fy_handle_process(v->vmm, &res, &e);
        if (r < 0) {
            int code = r;
            r = err_set(reterr, code, FY_STEP_WAIT, fy_error_os_code(e), NULL, "the VMM's sandbox: %s",
                        e ? fy_error_message(e) : "error");
            fy_error_free(e);
            return r;
        }
        if (r == 1) {
            v->vmm_result = res;
            v->t_ended = util_now_usec();
            /* What the guest sent last is still in the socket: all of it,
             * to its end (the VMM is gone, so that end comes). One bounded
             * read took the first megabyte only, and a guest that sent its
             * trees back faster than we read them had the rest dropped. */
            while (!v->sock_eof && read_guest(h, v)) {
            }
            drain_console(v);
            fy_handle_free(v->vmm);
            v->vmm = NULL;
        }
    }
    if (!v->vmm_result) {
        arm(h, v);
        return 0;
    }
    finish(h, v);
    if (!h->result)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    return 1;
}

void vm_terminate(fy_handle *h) {
    struct vm *v = h->b;
    if (!v)
        return;
    kill_vmm(h, v);
    arm(h, v);
}

void vm_destroy(fy_handle *h) {
    struct vm *v = h->b;
    if (!v)
        return;
    attempt_abandon(v);
    h->b = NULL;
}

void vm_forget(fy_handle *h) {
    struct vm *v = h->b;
    if (!v)
        return;
    if (v->vmm)
        fy_handle_free(v->vmm); /* in a forked copy: memory only */
    v->vmm = NULL;
    v->dir[0] = v->pxdir[0] = '\0';
    if (v->px)
        v->pl->pxf->proxy_forget(v->px); /* the parent's proxy is the parent's to end */
    v->px = NULL;
    for (int i = 0; i < VMP_NET_CONNS; i++) {
        if (v->net[i].fd >= 0)
            close(v->net[i].fd);
        v->net[i].fd = -1;
    }
    net_teardown(v, NULL);
    vmn_forget(&v->nw);
    vm_free_state(v);
    h->b = NULL;
}

int vm_get_fd(fy_handle *h) { return ((struct vm *)h->b)->epfd; }

int vm_stdio_fd(fy_handle *h, uint32_t stream) {
    (void)h;
    (void)stream;
    return FY_E_STATE;
}
