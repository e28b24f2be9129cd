/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Linux backend's run operations (linux-spawn.h): the sandbox's
 * standard streams, set up before the clone (host fds, pipes for the host,
 * pipes we drain into spool files or a callback), the process level's
 * per-attempt directory, the per-start environment with its secrets, and
 * the live draining of output with its byte cap. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handle.h"
#include "linux-plan.h"
#include "linux-spawn.h"

/* ---- setting up stdio and secrets ---- */

/* FY_STDIO_FD stdin: an open file description of the workload's own of
 * what the host gave, where the kernel can make one that is the same file
 * (a regular file, a FIFO or pipe), so that what the workload sets on it
 * (flock and OFD locks, a lease, O_NONBLOCK, the signal owner) goes with
 * the attempt: on the host's own description a lock stayed for the host's
 * later processes, and the policy's copy kept it for every later attempt.
 * A regular file's offset is carried over both ways (its start the host's;
 * its end, lx_stdin_settle, where the workload left it). A socket, and a
 * character device (an open of /dev/net/tun is a tap only as the
 * description TUNSETIFF was made on: the VM backend hands QEMU one), is
 * the host's description as before. */
static int stdin_of_its_own(struct lx *x, int fd, fy_error **reterr) {
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || fl < 0)
        return lx_sys_err(reterr, FY_STEP_OUTPUT, "stdin");
    if ((fl & O_PATH) || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
        if ((x->child_stdio[0] = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
            return lx_sys_err(reterr, FY_STEP_OUTPUT, "dup");
        return 0;
    }
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    /* (O_NONBLOCK: a FIFO's open waits for no writer; its flags are the
     * host's again below) */
    int own = open(proc, (fl & O_ACCMODE) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (own < 0) {
        int e = errno;
        return err_set(reterr, err_from_errno(e), FY_STEP_OUTPUT, e, "$.stdio",
                       "the stdin descriptor cannot be opened again for the sandbox (%s): the workload gets a "
                       "description of its own, never the host's; relay it through FY_STDIO_PIPE",
                       strerror(e));
    }
    if (fcntl(own, F_SETFL, fl & ~O_ACCMODE) < 0) {
        close(own);
        return lx_sys_err(reterr, FY_STEP_OUTPUT, "stdin");
    }
    if (S_ISREG(st.st_mode)) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        if (at > 0 && lseek(own, at, SEEK_SET) < 0) {
            close(own);
            return lx_sys_err(reterr, FY_STEP_OUTPUT, "stdin");
        }
        if ((x->stdin_own = fcntl(own, F_DUPFD_CLOEXEC, 3)) < 0 ||
            (x->stdin_host = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
            close(own);
            return lx_sys_err(reterr, FY_STEP_OUTPUT, "dup");
        }
    }
    x->child_stdio[0] = own;
    return 0;
}

void lx_stdin_settle(struct lx *x) {
    if (x->stdin_own >= 0 && x->stdin_host >= 0) {
        off_t at = lseek(x->stdin_own, 0, SEEK_CUR);
        if (at >= 0)
            (void)lseek(x->stdin_host, at, SEEK_SET);
    }
    lx_close_fd(&x->stdin_own);
    lx_close_fd(&x->stdin_host);
}

int lx_setup_stdio(struct lx *x, const struct fy_plan *np, int stdin_secret, fy_error **reterr) {
    for (int i = 0; i < 3; i++) {
        const struct plan_stdio *s = &np->stdio[i];
        int fds[2];
        if (i == 0 && stdin_secret >= 0) {
            const struct plan_secret *ps = &np->secrets[stdin_secret];
            if (pipe2(fds, O_CLOEXEC) < 0)
                return lx_sys_err(reterr, FY_STEP_SECRET, "pipe");
            size_t want = ps->len + 4096;
            if (ps->len && fcntl(fds[1], F_SETPIPE_SZ, (int)(want > 1048576 ? 1048576 : want)) < 0 &&
                ps->len > 65536) {
                close(fds[0]);
                close(fds[1]);
                return lx_sys_err(reterr, FY_STEP_SECRET, "cannot size the stdin pipe for the secret");
            }
            ssize_t w = ps->len ? write(fds[1], ps->value, ps->len) : 0;
            close(fds[1]);
            if (w < 0 || (size_t)w != ps->len) {
                close(fds[0]);
                return err_set(reterr, FY_E_IO, FY_STEP_SECRET, errno, NULL, "writing the stdin secret failed");
            }
            x->child_stdio[0] = fds[0];
            continue;
        }
        switch (s->mode) {
        case FY_STDIO_NULL:
            if ((x->child_stdio[i] = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY)) < 0)
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "/dev/null");
            break;
        case FY_STDIO_FD:
            /* Never the host's terminal: on one, the workload's ioctls
             * (termios, window size, flow control, flushing the host's
             * input) act on the host's session and outlive the attempt. */
            if (isatty(s->fd))
                return err_set(reterr, FY_E_POLICY, FY_STEP_OUTPUT, 0, "$.stdio",
                               "the %s descriptor is a terminal, which is never handed to a sandbox; relay it "
                               "through FY_STDIO_PIPE (or FY_STDIO_CALLBACK for output)",
                               i == 0 ? "stdin" : i == 1 ? "stdout" : "stderr");
            if (i == 0) {
                int r = stdin_of_its_own(x, s->fd, reterr);
                if (r < 0)
                    return r;
            } else if ((x->child_stdio[i] = fcntl(s->fd, F_DUPFD_CLOEXEC, 3)) < 0) {
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "dup");
            }
            break;
        case FY_STDIO_PIPE:
            if (pipe2(fds, O_CLOEXEC) < 0)
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "pipe");
            x->child_stdio[i] = i == 0 ? fds[0] : fds[1];
            x->host_pipe[i] = i == 0 ? fds[1] : fds[0];
            break;
        case FY_STDIO_CALLBACK:
            if (pipe2(fds, O_CLOEXEC) < 0)
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "pipe");
            x->child_stdio[i] = fds[1];
            x->drain_rd[i] = fds[0];
            if (lx_set_nonblock(x->drain_rd[i]) < 0 || lx_epoll_watch(x, x->drain_rd[i]) < 0)
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "output pipe");
            break;
        case FY_STDIO_FILE:
            if (pipe2(fds, O_CLOEXEC) < 0)
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "pipe");
            x->child_stdio[i] = fds[1];
            x->drain_rd[i] = fds[0];
            /* stdout and stderr may name the same file: share one spool fd. */
            if (i == 2 && x->spool_fd[1] >= 0 && np->stdio[1].mode == FY_STDIO_FILE &&
                strcmp(np->stdio[1].path, s->path) == 0) {
                if ((x->spool_fd[2] = fcntl(x->spool_fd[1], F_DUPFD_CLOEXEC, 3)) < 0)
                    return lx_sys_err(reterr, FY_STEP_OUTPUT, "dup");
            } else if ((x->spool_fd[i] = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_APPEND,
                                              0600)) < 0) {
                int e = errno;
                return err_set(reterr, err_from_errno(e), FY_STEP_OUTPUT, e, NULL, "cannot create %s: %s", s->path,
                               strerror(e));
            } else {
                x->spool_created[i] = s->path;
            }
            if (lx_set_nonblock(x->drain_rd[i]) < 0 || lx_epoll_watch(x, x->drain_rd[i]) < 0)
                return lx_sys_err(reterr, FY_STEP_OUTPUT, "output pipe");
            break;
        }
    }
    return 0;
}

void lx_stdio_for_workload(struct lx *x, const struct linux_plan *pl) {
    /* (not root: the caller's own pipes, its uid the workload's or mapped
     * to it; the process level: its attempts share one uid and the host's
     * /proc, where one could open another's pipes through /proc/PID/fd) */
    if (!pl->as_root || pl->process_mode)
        return;
    for (int i = 0; i < 3; i++) {
        int fd = x->child_stdio[i];
        struct stat st;
        char path[40], link[16];
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
            continue;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, link, sizeof(link));
        if (n < 6 || memcmp(link, "pipe:[", 6) != 0)
            continue; /* (a named FIFO is a host file: its owner is not ours to change) */
        (void)!fchown(fd, pl->host_uid, pl->host_gid);
    }
}

/* Six random letters and digits (as mkdtemp's), NUL-terminated. */
void lx_scratch_letters(char out[7]) {
    static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char rnd[6];
    if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
        uint64_t t = util_now_usec() ^ ((uint64_t)getpid() << 20);
        for (int i = 0; i < 6; i++)
            rnd[i] = (unsigned char)(t >> (i * 8));
    }
    for (int i = 0; i < 6; i++)
        out[i] = set[rnd[i] % (sizeof(set) - 1)];
    out[6] = '\0';
}

char *lx_plan_attempt_dir(bool use_tmp) {
    char x[7];
    lx_scratch_letters(x);
    return util_asprintf("%s/forgeyard-attempt-%s", use_tmp ? "/tmp" : "/dev/shm", x);
}

/* Process mode: a private directory per attempt, on tmpfs when the host
 * has /dev/shm, owned by the workload's uid, removed at cleanup. Its name
 * was chosen (lx_plan_attempt_dir) and recorded before: made here, never
 * taken over when it exists. */
int lx_setup_attempt_dir(struct lx *x, const struct linux_plan *pl, const char *path, bool *ret_shm_failed,
                         fy_error **reterr) {
    if (mkdir(path, 0700) < 0) {
        int e = errno;
        if (e == EEXIST)
            return 1; /* another name */
        if (strncmp(path, "/dev/shm/", 9) == 0) {
            *ret_shm_failed = true; /* (as mkdtemp there failing: /tmp instead) */
            return 1;
        }
        return lx_sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    }
    const char *d = path;
    x->attempt_dir = strdup(d);
    if (!x->attempt_dir)
        rmdir(d);
    if (x->attempt_dir && chmod(d, 0700) < 0) /* (0700 less the host's umask) */
        return lx_sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    x->attempt_home = util_asprintf("%s/home", d);
    x->attempt_tmp = util_asprintf("%s/tmp", d);
    x->attempt_secrets = util_asprintf("%s/secrets", d);
    x->env_home = util_asprintf("HOME=%s/home", d);
    x->env_tmpdir = util_asprintf("TMPDIR=%s/tmp", d);
    if (!x->attempt_dir || !x->attempt_home || !x->attempt_tmp || !x->attempt_secrets || !x->env_home ||
        !x->env_tmpdir)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_MOUNT, 0, NULL, "out of memory");
    const char *dirs[] = {x->attempt_home, x->attempt_tmp, x->attempt_secrets};
    for (size_t i = 0; i < 3; i++)
        if (mkdir(dirs[i], 0700) < 0 || chmod(dirs[i], 0700) < 0 /* (whatever the host's umask: 0277 made them
                                                                    unwritable) */ ||
            (pl->as_root && chown(dirs[i], pl->work_uid, pl->work_gid) < 0))
            return lx_sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    if (chmod(x->attempt_dir, 0711) < 0)
        return lx_sys_err(reterr, FY_STEP_MOUNT, "creating the attempt directory");
    return 0;
}

int lx_setup_secrets(struct lx *x, const struct fy_plan *np, const struct linux_plan *pl, int *stdin_secret,
                     fy_error **reterr) {
    *stdin_secret = -1;
    size_t nenv = 0;
    for (size_t i = 0; i < np->nsecrets; i++)
        nenv += np->secrets[i].delivery == FY_SECRET_ENV;
    x->envp = calloc(pl->nenv + nenv + 1, sizeof(char *));
    x->secret_env = calloc(nenv + 1, sizeof(unsigned char *));
    x->secrets = calloc(np->nsecrets + 1, sizeof(*x->secrets));
    if (!x->envp || !x->secret_env || !x->secrets)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < pl->nenv; i++) {
        /* A secret variable replaces an explicitly set one of the same name. */
        bool shadowed = false;
        for (size_t k = 0; k < np->nsecrets; k++) {
            const struct plan_secret *d = &np->secrets[k];
            size_t tl = d->target ? strlen(d->target) : 0;
            shadowed |= d->delivery == FY_SECRET_ENV && strncmp(pl->envp[i], d->target, tl) == 0 &&
                        pl->envp[i][tl] == '=';
        }
        if (shadowed)
            continue;
        if (pl->process_mode && strncmp(pl->envp[i], "HOME=/home/forgeyard", 21) == 0)
            x->envp[n++] = x->env_home;
        else if (pl->process_mode && strcmp(pl->envp[i], "TMPDIR=/tmp") == 0)
            x->envp[n++] = x->env_tmpdir;
        else
            x->envp[n++] = pl->envp[i];
    }
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *ps = &np->secrets[i], *d = ps;
        if (d->delivery == FY_SECRET_ENV) {
            size_t tl = strlen(d->target);
            if (memchr(ps->value, 0, ps->len))
                return err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, NULL,
                               "secret %s contains a NUL byte and cannot be an environment variable", d->name);
            unsigned char *m = secret_alloc(NULL, tl + 1 + ps->len + 1);
            if (!m)
                return err_set(reterr, FY_E_NOMEM, FY_STEP_SECRET, 0, NULL, "out of memory");
            memcpy(m, d->target, tl);
            m[tl] = '=';
            memcpy(m + tl + 1, ps->value, ps->len);
            m[tl + 1 + ps->len] = '\0';
            x->secret_env[x->nsecret_env++] = m;
            x->envp[n++] = (char *)m;
        } else if (d->delivery == FY_SECRET_FILE) {
            x->secrets[x->args.nsecrets++] = (struct child_secret){d->target, ps->value, ps->len};
        } else {
            *stdin_secret = (int)i;
        }
    }
    return 0;
}

/* ---- output ---- */

/* The end of a drained stream: closed, and said to a callback. */
static void end_stream(fy_handle *h, struct lx *x, int i) {
    epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->drain_rd[i], NULL);
    lx_close_fd(&x->drain_rd[i]);
    const struct plan_stdio *s = &lx_neutral(h)->stdio[i];
    if (s->mode == FY_STDIO_CALLBACK && s->fn)
        s->fn(s->userdata, (uint32_t)i, NULL, 0);
}

/* Whether the spool file fd lies on a file system the workload has a
 * writable host directory on (its build or output directory, a writable
 * bind, an action's execution root): a full one there is no failure of the
 * infrastructure alone, since the workload can fill it at will (an untrusted
 * command made its attempt an infrastructure failure, which CI systems
 * retry or excuse). */
static bool spool_shares_workload_fs(fy_handle *h, int fd) {
    struct stat ss;
    const struct fy_plan *np = lx_neutral(h);
    if (fd < 0 || fstat(fd, &ss) < 0 || !np)
        return false;
    for (size_t k = 0; k < np->nentries; k++) {
        const struct plan_entry *e = &np->entries[k];
        struct stat es;
        if (e->kind == PE_HOST && !(e->flags & PLAN_RO) && e->host && stat(e->host, &es) == 0 &&
            es.st_dev == ss.st_dev)
            return true;
    }
    return false;
}

/* write(2) to a spool file, never past the calling process's file size
 * limit: a write that starts at RLIMIT_FSIZE raises SIGXFSZ, which kills
 * the host program (the workload chooses how much it writes, and a host
 * under ulimit -f or systemd's LimitFSIZE= is ordinary). What fits is
 * written; the rest fails with EFBIG, without the signal, and the
 * attempt ends as an infrastructure failure at FY_STEP_OUTPUT. The host's
 * disposition of SIGXFSZ is left alone for its own writes. (The spool is
 * O_APPEND and the library's alone: its size is where the write goes.) */
static ssize_t spool_write(int fd, const void *p, size_t n) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        struct stat st;
        if (fstat(fd, &st) < 0)
            return -1;
        if (S_ISREG(st.st_mode)) {
            uint64_t at = st.st_size > 0 ? (uint64_t)st.st_size : 0;
            if (at >= (uint64_t)rl.rlim_cur) {
                errno = EFBIG;
                return -1;
            }
            if (n > (uint64_t)rl.rlim_cur - at)
                n = (size_t)((uint64_t)rl.rlim_cur - at);
        }
    }
    return write(fd, p, n);
}

void lx_drain_output(fy_handle *h, struct lx *x, int i) {
    char buf[65536];
    const struct plan_stdio *s = &lx_neutral(h)->stdio[i];
    /* A bounded number of reads per call: a workload that writes as fast
     * as we read cannot keep the host's loop here (the fd stays readable,
     * so the next fy_handle_process goes on). */
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n = read(x->drain_rd[i], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return; /* EAGAIN */
        if (n == 0) {
            end_stream(h, x, i);
            return;
        }
        size_t keep = (size_t)n;
        if (x->output_cap != FY_UNLIMITED && x->output_bytes + keep > x->output_cap) {
            keep = x->output_cap > x->output_bytes ? (size_t)(x->output_cap - x->output_bytes) : 0;
            if (!x->truncated) {
                x->truncated = true;
                handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output");
                lx_hard_kill(x, h->pr->plan);
            }
        }
        if (s->mode == FY_STDIO_CALLBACK) {
            if (keep && s->fn)
                s->fn(s->userdata, (uint32_t)i, buf, keep);
            x->output_bytes += keep;
            x->stream_bytes[i] += keep;
            if (x->truncated) {
                /* Nothing more is delivered: the stream ends here. */
                end_stream(h, x, i);
                return;
            }
            continue;
        }
        size_t off = 0;
        bool failed = false;
        while (off < keep) {
            ssize_t w = spool_write(x->spool_fd[i], buf + off, keep - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                int e = errno;
                if ((e == ENOSPC || e == EDQUOT) && spool_shares_workload_fs(h, x->spool_fd[i]))
                    handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, e,
                               "disk: the file system of the output spool, which the workload writes to too, "
                               "is full (%s)", strerror(e));
                else
                    handle_end(h, END_INFRA, FY_STEP_OUTPUT, e, "writing captured output: %s", strerror(e));
                lx_hard_kill(x, h->pr->plan);
                failed = true;
                break;
            }
            off += (size_t)w;
        }
        /* What reached the file, no more (a failed write counted its whole
         * chunk, and reading went on, counting what was never written). */
        x->output_bytes += off;
        x->stream_bytes[i] += off;
        if (failed) {
            end_stream(h, x, i);
            return;
        }
    }
}

bool lx_outputs_open(const struct lx *x) {
    for (int i = 1; i < 3; i++)
        if (x->drain_rd[i] >= 0)
            return true;
    return false;
}
