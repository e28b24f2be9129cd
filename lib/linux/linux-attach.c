/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A host directory attached into a running namespace sandbox (the family's
 * sandbox_attach service, backend.h): the VM backend's pre-restored clones
 * (vm-shell.c) are made before any attempt exists, their VMM's 9p exports
 * empty directories; at the claim the attempt's directories are attached
 * below those, in the VMM sandbox's mount namespace only.
 *
 * The tree is cloned from the host's namespace (open_tree, detached,
 * made read-only, nosuid, nodev and private before anyone sees it), the
 * target resolved inside the sandbox's root without following a symlink,
 * and the tree moved there by a short-lived child of this process that
 * joined the sandbox's user and mount namespaces (setns on pid 1's pidfd;
 * a process sharing our fs_struct or threads could not). The child runs
 * on its own stack, shares our memory (CLONE_VM | CLONE_VFORK: we wait),
 * makes system calls only, and sends no exit signal. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux-backend.h"
#include "linux-spawn.h"

#if defined(__SANITIZE_ADDRESS__)
#  define ATTACH_NO_ASAN __attribute__((no_sanitize_address))
#else
#  define ATTACH_NO_ASAN
#endif

struct attach_job {
    int pidfd, tree, target;
    int nsflags;
    int err;      /* the child's errno (0: attached) */
    int step;     /* 1 setns, 2 move_mount */
};

ATTACH_NO_ASAN static int attach_child(void *arg) {
    struct attach_job *j = arg;
    if (syscall(SYS_setns, j->pidfd, j->nsflags) < 0) {
        j->err = errno;
        j->step = 1;
        syscall(SYS_exit, 1);
    }
    if (syscall(SYS_move_mount, j->tree, "", j->target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
        j->err = errno;
        j->step = 2;
        syscall(SYS_exit, 1);
    }
    j->err = 0;
    syscall(SYS_exit, 0);
    return 0;
}

static int same_ns(pid_t pid, const char *which) {
    char p[64];
    struct stat a, b;
    snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, which);
    if (stat(p, &a) < 0)
        return -1;
    snprintf(p, sizeof(p), "/proc/self/ns/%s", which);
    if (stat(p, &b) < 0)
        return -1;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int linux_sandbox_attach(fy_handle *sb, const char *host_dir, const char *target, fy_error **reterr) {
    if (!sb || !host_dir || !target || target[0] != '/')
        return err_set(reterr, FY_E_INVAL, FY_STEP_MOUNT, 0, NULL, "attach: no sandbox, directory or absolute target");
    pid_t init_pid;
    int init_pidfd;
    if (lx_running_init(sb, &init_pid, &init_pidfd) < 0)
        return err_set(reterr, FY_E_STATE, FY_STEP_MOUNT, 0, NULL,
                       "attach: not a running namespace sandbox with its pid 1");
    if (geteuid() != 0)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_MOUNT, 0, NULL,
                       "attaching a directory into a running sandbox needs root (open_tree of the host's mount "
                       "namespace)");
    int r = 0;
    int tree = -1, root = -1, tfd = -1;
    char *stack = NULL;
    tree = (int)syscall(SYS_open_tree, AT_FDCWD, host_dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_MOUNT, errno, NULL, "attach: open_tree %s: %s", host_dir,
                    strerror(errno));
        goto out;
    }
    struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                            .propagation = MS_PRIVATE};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_MOUNT, errno, NULL, "attach: mount_setattr %s: %s",
                    host_dir, strerror(errno));
        goto out;
    }
    /* The sandbox's root, through pid 1 while its pidfd proves it is
     * still that process (a reused pid would fail the signal 0). */
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/root", (int)init_pid);
    root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 || syscall(SYS_pidfd_send_signal, init_pidfd, 0, NULL, 0) < 0) {
        r = err_set(reterr, FY_E_STATE, FY_STEP_MOUNT, errno, NULL, "attach: the sandbox's root: %s", strerror(errno));
        goto out;
    }
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    tfd = (int)syscall(SYS_openat2, root, target + 1, &how, sizeof(how));
    if (tfd < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_MOUNT, errno, NULL, "attach: %s in the sandbox: %s", target,
                    strerror(errno));
        goto out;
    }
    int su = same_ns(init_pid, "user");
    if (su < 0) {
        r = err_set(reterr, FY_E_STATE, FY_STEP_MOUNT, errno, NULL, "attach: the sandbox's namespaces: %s",
                    strerror(errno));
        goto out;
    }
    struct attach_job j = {.pidfd = init_pidfd, .tree = tree, .target = tfd,
                           .nsflags = CLONE_NEWNS | (su ? 0 : CLONE_NEWUSER), .err = EIO};
    const size_t stack_size = 64 * 1024;
    if (!(stack = malloc(stack_size))) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_MOUNT, 0, NULL, "out of memory");
        goto out;
    }
    /* No exit signal: the host's SIGCHLD disposition never sees it. */
    pid_t c = clone(attach_child, stack + stack_size, CLONE_VM | CLONE_VFORK, &j);
    if (c < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_MOUNT, errno, NULL, "attach: clone: %s", strerror(errno));
        goto out;
    }
    while (waitpid(c, NULL, __WALL) < 0 && errno == EINTR) {
    }
    if (j.err) {
        r = err_set(reterr, err_from_errno(j.err), FY_STEP_MOUNT, j.err, NULL, "attach %s at %s: %s: %s", host_dir,
                    target, j.step == 1 ? "setns into the sandbox" : j.step == 2 ? "move_mount" : "child",
                    strerror(j.err));
        goto out;
    }
out:
    free(stack);
    if (tree >= 0)
        close(tree);
    if (root >= 0)
        close(root);
    if (tfd >= 0)
        close(tfd);
    return r;
}
