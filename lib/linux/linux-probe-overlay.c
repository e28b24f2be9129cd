/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The container level's functional probe (lp_probe_overlay): what the
 * linux-container backend does at every start, done once in a forked
 * child. It enters a user and a mount namespace, mounts a tmpfs, and over
 * a lower directory in it an overlay (userxattr) whose upper and work
 * directories are in that tmpfs; then it removes a lower file (a whiteout
 * in the upper) and replaces a lower directory (an opaque directory: a
 * user.overlay.opaque xattr on the tmpfs upper, which a tmpfs in a user
 * namespace has only since Linux 6.6). The fact LX_FACT_OVERLAY is "ok" or
 * why not; linux-container is usable only with "ok". */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux-backend.h"
#include "linux-probe-internal.h"
#include "linux-state.h"

#define OV_DEADLINE_MS 3000
#define OV_MAGIC 0x4f564c59u

enum ov_op { OV_NONE, OV_UNSHARE, OV_MAP, OV_PRIVATE, OV_TMPFS, OV_DIRS, OV_MOUNT, OV_WHITEOUT, OV_OPAQUE,
             OV_HIDDEN, OV__N };
static const char *const ov_op_name[OV__N] = {
    [OV_NONE] = "nothing",
    [OV_UNSHARE] = "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
    [OV_MAP] = "mapping ids in the user namespace",
    [OV_PRIVATE] = "mount(\"/\", MS_REC|MS_PRIVATE)",
    [OV_TMPFS] = "mount(tmpfs)",
    [OV_DIRS] = "making the lower, upper and work directories",
    [OV_MOUNT] = "mount(overlay, userxattr) with a tmpfs upper",
    [OV_WHITEOUT] = "removing a lower file through the overlay (a whiteout)",
    [OV_OPAQUE] = "replacing a lower directory through the overlay (an opaque directory: user xattrs "
                  "on the tmpfs upper)",
    [OV_HIDDEN] = "the replaced directory still shows the lower file",
};

struct ov_report {
    uint32_t magic;
    int32_t op, err;
};

static int write_file(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

struct ov_args {
    char uid_map[32], gid_map[32];
    const char *disk; /* NULL: upper and work in the tmpfs; else in this directory on disk */
};

static void ov_child(void *arg, int wfd) {
    const struct ov_args *a = arg;
    struct ov_report rep = {OV_MAGIC, OV_NONE, 0};
#define FAIL(o) do { rep.op = (o); rep.err = errno; lp_cw_report(wfd, &rep, sizeof rep); return; } while (0)
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        FAIL(OV_UNSHARE);
    if ((write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT) ||
        write_file("/proc/self/uid_map", a->uid_map) < 0 || write_file("/proc/self/gid_map", a->gid_map) < 0)
        FAIL(OV_MAP);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        FAIL(OV_PRIVATE);
    if (mount("fy-probe", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0)
        FAIL(OV_TMPFS);
    int fd;
    char u[4200] = "/tmp/u", w[4200] = "/tmp/w", opts[8600];
    if (a->disk) {
        snprintf(u, sizeof u, "%s/u", a->disk);
        snprintf(w, sizeof w, "%s/w", a->disk);
    }
    snprintf(opts, sizeof opts, "lowerdir=/tmp/l,upperdir=%s,workdir=%s,userxattr", u, w);
    if (mkdir("/tmp/l", 0755) < 0 || mkdir("/tmp/l/d", 0755) < 0 || mkdir(u, 0755) < 0 ||
        mkdir(w, 0755) < 0 || mkdir("/tmp/m", 0755) < 0 ||
        (fd = open("/tmp/l/d/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 ||
        close(fd) < 0 || (fd = open("/tmp/l/f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 || close(fd) < 0)
        FAIL(OV_DIRS);
    if (mount("overlay", "/tmp/m", "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        FAIL(OV_MOUNT);
    if (unlink("/tmp/m/f") < 0)
        FAIL(OV_WHITEOUT);
    if (unlink("/tmp/m/d/x") < 0 || rmdir("/tmp/m/d") < 0 || mkdir("/tmp/m/d", 0755) < 0 ||
        (fd = open("/tmp/m/d/y", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 || close(fd) < 0)
        FAIL(OV_OPAQUE);
    /* Remount the overlay: the lower file must stay hidden (the opaque
     * mark was really stored, not merely cached). */
    struct stat st;
    if (umount2("/tmp/m", 0) < 0 ||
        mount("overlay", "/tmp/m", "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        FAIL(OV_MOUNT);
    if (lstat("/tmp/m/d/x", &st) == 0 || lstat("/tmp/m/f", &st) == 0) {
        errno = 0;
        FAIL(OV_HIDDEN);
    }
#undef FAIL
    rep.op = 0;
    rep.err = 0;
    lp_cw_report(wfd, &rep, sizeof rep);
}

/* One run of ov_child: "" when it worked, else why into why; true when
 * the child did not report in time. */
static bool ov_run_once(struct ov_args *a, int ms, char *why, size_t len) {
    why[0] = '\0';
    bool timed_out = false;
    struct child ch;
    uint64_t deadline = pu_deadline_after_ms(ms);
    int r = lp_child_start(&ch, ov_child, a, -1);
    if (r < 0) {
        snprintf(why, len, "fork: " EFMT, EARG(-r));
    } else {
        struct ov_report rep;
        ssize_t n = lp_read_deadline(ch.rfd, &rep, sizeof rep, deadline);
        bool killed = false;
        lp_child_finish(&ch, deadline, &killed);
        if (n != (ssize_t)sizeof rep || rep.magic != OV_MAGIC) {
            timed_out = killed || n == -ETIMEDOUT;
            snprintf(why, len, "the overlay probe child did not report within %d ms%s", ms,
                     killed ? " (killed)" : "");
        } else if (rep.op > 0 && rep.op < OV__N && rep.err)
            snprintf(why, len, "%s failed: " EFMT, ov_op_name[rep.op], EARG(rep.err));
        else if (rep.op > 0 && rep.op < OV__N)
            snprintf(why, len, "%s", ov_op_name[rep.op]);
    }
    return timed_out;
}

/* ov_run_once, retried once with a longer deadline when it timed out. */
static void ov_run(fy_caps *c, struct ov_args *a, char *why, size_t len) {
    if (ov_run_once(a, lp_try_deadline_ms(OV_DEADLINE_MS, 0), why, len) &&
        ov_run_once(a, lp_try_deadline_ms(OV_DEADLINE_MS, 1), why, len))
        c->inconclusive = true;
}

/* The upper on disk (LX_OVERLAY_DISK...) where a tmpfs one fails: user
 * xattrs on tmpfs in a user namespace came with Linux 6.6; a disk file
 * system has had them. Probed in a directory of /var/tmp (on disk on
 * usual hosts), removed after. */
void lp_probe_overlay(fy_caps *c) {
    struct ov_args a = {.disk = NULL};
    snprintf(a.uid_map, sizeof a.uid_map, "0 %u 1\n", (unsigned)geteuid());
    snprintf(a.gid_map, sizeof a.gid_map, "0 %u 1\n", (unsigned)getegid());
    char why[REASON_MAX] = "", why_disk[REASON_MAX] = "";
    ov_run(c, &a, why, sizeof why);
    if (!why[0]) {
        (void)caps_set_fact(c, LX_FACT_OVERLAY, "ok");
        return;
    }
    char dir[] = "/var/tmp/forgeyard-overlay-probe-XXXXXX";
    if (!mkdtemp(dir)) {
        (void)caps_set_fact(c, LX_FACT_OVERLAY, why);
        return;
    }
    a.disk = dir;
    ov_run(c, &a, why_disk, sizeof why_disk);
    (void)state_remove_tree(dir); /* the child's mount namespace, with the overlay, died with it */
    char fact[2 * REASON_MAX + 64];
    if (!why_disk[0])
        snprintf(fact, sizeof fact, LX_OVERLAY_DISK "tmpfs upper: %s", why);
    else
        snprintf(fact, sizeof fact, "%s; with a disk upper: %s", why, why_disk);
    (void)caps_set_fact(c, LX_FACT_OVERLAY, fact);
}
