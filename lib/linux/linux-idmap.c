/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A root caller's workspace binds, walked by the host and handed to the
 * sandbox as detached trees; the read-only ones not root's shown owned by
 * the sandbox's user (idmapped mounts, Linux 5.12+).
 *
 * A root caller's sandbox runs as an unprivileged host uid (linux-plan.c
 * as_root). Two things followed. Its init could not reach a workspace
 * under a directory only root may search (/root is 0700, and so is every
 * mkdtemp directory): the attempt failed with "Permission denied". And the
 * caller's source tree appeared owned by nobody, so tools that check who
 * owns a tree refused it: git ("dubious ownership"; the sandbox's
 * /etc/gitconfig marks the workspace safe, which covers git's own commands
 * but not everything that checks), ssh's key files, and owner-only files
 * were unreadable although the caller declared the tree as the input. A
 * rootless caller's sandbox had neither problem: its user is the caller.
 *
 * So the host opens each such bind itself, under the rules init would
 * apply (no symbolic link in any component, no magic link, beneath /),
 * clones it (open_tree, detached, recursive) nosuid and nodev, and hands
 * the tree to init, which attaches it (linux-child.c do_bind). A read-only
 * one is also made read-only and idmapped through a user namespace of its
 * own that maps the tree's owner (the uid and gid of its top) to the
 * sandbox user's host ids: only that owner; every other owner stays
 * unmapped (nobody), as before. A tree whose top root owns (uid or gid 0)
 * is never idmapped: through owner bits the workload would read what only
 * root may (a root runner's bound ~/.cargo holds credentials.toml, mode
 * 0600); it stays nobody's, its git repositories safe through the
 * sandbox's /etc/gitconfig. A tree of another user is shown as that user
 * would see it running the sandbox rootless. A writable bind is never
 * idmapped: a workload that owned a root caller's files through it could
 * leave a set-uid-root program in the host's tree.
 *
 * Unlike mounts copied from the host's namespace into the sandbox's (which
 * the kernel locks: MNT_LOCKED, MNT_LOCK_READONLY), a tree made here and
 * moved in is not locked against the sandbox's own root, its init. The
 * workload never is that root: it holds no capability, and its seccomp
 * profile denies mount, umount2 and the new mount API; the mounts init makes
 * itself (the /proc masks, tmpfs) rest on the same layers.
 *
 * One message per MF_HOST_TREE bind, in the plan's order, on the go-ahead
 * socket after the first go-ahead (or the claim of a pre-started shell):
 * 'T' with the tree, 'N' without an fd when the path is not there (an
 * optional bind is then skipped, and a missing one named as missing, even
 * below a directory init cannot search, such as /root), or 'P' without an
 * fd ("plain": walk and bind it yourself, as before) when the path does not
 * open here for another reason or the kernel cannot clone it (init then
 * meets the same error and reports it). A
 * read-only tree whose file system cannot be idmapped, or that root owns,
 * is handed without the idmap, and the result says "unmapped" or
 * "partial" (lx report). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux-spawn.h"
#include "linux-syscall.h"

#define IDMAP_STACK (16 * 1024)

/* The namespace's holder: it shares our memory, TLS and fd table (no copy
 * of other threads' fds, which a copy would keep open behind their backs)
 * and sleeps until we kill it. Every signal was blocked before the clone:
 * a copy of the host's handlers never runs on this stack. It dies with the
 * host (a holder left behind would keep the host's fd table, and with it
 * every sandbox's go-ahead socket, open). */
static int holder_main(void *arg) {
    (void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (syscall(SYS_getppid) != (long)(intptr_t)arg)
        syscall(SYS_exit, 0); /* the host died before the line above */
    for (;;)
        (void)syscall(SYS_pause);
    return 0;
}

static int write_map(pid_t pid, const char *name, unsigned long from, unsigned long to) {
    char path[64], line[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
    int n = snprintf(line, sizeof(line), "%lu %lu 1\n", from, to);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = write(fd, line, (size_t)n) == n ? 0 : -(errno ? errno : EIO);
    close(fd);
    return r;
}

/* A user namespace mapping uid `uid` to host `huid` and gid `gid` to host
 * `hgid`, nothing else: an fd, or -errno. A child that shares our memory
 * and fds (CLONE_VM | CLONE_FILES: no copy of a large host's page tables
 * or fd table) holds it just long enough for it to be mapped and opened;
 * it is killed and reaped before we return. */
int lx_idmap_userns(uid_t uid, gid_t gid, uid_t huid, gid_t hgid) {
    char *stack = malloc(IDMAP_STACK);
    if (!stack)
        return -ENOMEM;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = clone(holder_main, stack + IDMAP_STACK, CLONE_VM | CLONE_FILES | CLONE_NEWUSER | CLONE_PIDFD,
                      (void *)(intptr_t)getpid(), &pidfd);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int r;
    if (pid < 0) {
        r = -e;
    } else {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        if ((r = write_map(pid, "uid_map", uid, huid)) == 0 && (r = write_map(pid, "gid_map", gid, hgid)) == 0 &&
            (r = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            r = -errno;
        /* (kill(2) where a host filter denies pidfd_send_signal: the pid is
         * our unreaped child, so it cannot name anything else.) */
        if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0)
            (void)kill(pid, SIGKILL);
        siginfo_t si;
        while (waitid(FY_P_PIDFD, (id_t)pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
            ;
        close(pidfd);
    }
    free(stack);
    return r;
}

/* The user namespaces of one start, one per tree owner (at most four). */
struct owner_ns {
    uid_t uid;
    gid_t gid;
    int ns;
};

/* The namespace that shows uid:gid as the workload's host ids, made on
 * first use; -1 when there is none (none can be made, or four owners). */
static int owner_ns(const struct linux_plan *pl, uid_t uid, gid_t gid, struct owner_ns *own, size_t *nown) {
    for (size_t i = 0; i < *nown; i++)
        if (own[i].uid == uid && own[i].gid == gid)
            return own[i].ns;
    int ns = *nown < 4 ? lx_idmap_userns(uid, gid, pl->host_uid, pl->host_gid) : -1;
    if (ns >= 0)
        own[(*nown)++] = (struct owner_ns){uid, gid, ns};
    return ns < 0 ? -1 : ns;
}

/* The detached clone of one bind's source, walked from root (the host's /)
 * as init would walk it, read-only ones idmapped where the file system
 * allows; or -errno. *idmapped says whether it is. */
static int host_tree(const struct linux_plan *pl, int root, const struct mount_op *op, struct owner_ns *own,
                     size_t *nown, bool *idmapped) {
    *idmapped = false;
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = LX_WORKSPACE_RESOLVE};
    int fd = sys_openat2(root, op->src, &how, sizeof(how));
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
        close(fd);
        return -ENOTDIR; /* (init walks it again and reports what it is) */
    }
    int tree = sys_open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    int e = errno;
    close(fd);
    if (tree < 0)
        return -e;
    uint64_t attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | ((op->flags & MF_READONLY) ? MOUNT_ATTR_RDONLY : 0);
    /* Private, every mount of it: a clone of a shared mount (the host's /
     * under systemd) is a peer of the host's, and a mount the host made
     * below the source after the start appeared inside, writable, suid
     * and with devices. What the sandbox sees is the tree at the start. */
    /* Never root's tree: the workload would read what only root may
     * (a root runner's ~/.cargo/credentials.toml, /etc/ssl/private). */
    if ((op->flags & MF_READONLY) && st.st_uid != 0 && st.st_gid != 0) {
        int ns = owner_ns(pl, st.st_uid, st.st_gid, own, nown);
        struct mount_attr mi = {.attr_set = attr | MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)(ns >= 0 ? ns : 0),
                                .propagation = MS_PRIVATE};
        /* EINVAL: a file system (of the tree or of a mount below) that
         * cannot be idmapped; the tree is handed without the idmap. */
        *idmapped = ns >= 0 && sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &mi, sizeof(mi)) == 0;
    }
    struct mount_attr ma = {.attr_set = attr, .propagation = MS_PRIVATE};
    if (!*idmapped && sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0) {
        e = errno;
        close(tree);
        return -e;
    }
    return tree;
}

int lx_send_trees(const struct linux_plan *pl, int sock, uint32_t *ret_mapped, uint32_t *ret_read_only) {
    struct owner_ns own[4];
    size_t nown = 0;
    uint32_t mapped = 0, read_only = 0;
    int r = 0, root = -1;
    for (size_t i = 0; i < pl->nops && r == 0; i++) {
        const struct mount_op *op = &pl->ops[i];
        if (op->kind != MK_BIND || !(op->flags & MF_HOST_TREE))
            continue;
        if (root < 0)
            root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        bool idmapped = false;
        int tree = root < 0 ? -EBADF : host_tree(pl, root, op, own, &nown, &idmapped);
        /* 'N': not there, as the host sees it (the sandbox, walking it
         * itself, may only see a directory it cannot search). */
        char what = tree >= 0 ? 'T' : tree == -ENOENT ? 'N' : 'P';
        if (lx_send_fds(sock, what, &tree, tree >= 0) < 0)
            r = -errno;
        if (tree >= 0)
            close(tree);
        read_only += (op->flags & MF_READONLY) != 0;
        mapped += idmapped;
    }
    if (root >= 0)
        close(root);
    for (size_t i = 0; i < nown; i++)
        close(own[i].ns);
    *ret_mapped = mapped;
    *ret_read_only = read_only;
    return r;
}
