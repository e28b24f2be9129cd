/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The container level's upper on disk: where a tmpfs in a user namespace
 * has no user xattrs (before Linux 6.6; the probe's LX_FACT_OVERLAY says
 * LX_OVERLAY_DISK...), overlayfs cannot keep whiteouts and opaque
 * directories in a tmpfs upper, so the upper and work directories of each
 * attempt go in a directory of its own on disk, beside the image's layers
 * (the image cache: CACHE/uppers/<random>, the same file system as the
 * layers). It is the attempt's directory (x->attempt_dir), so the cleanup
 * removes it and witnesses that it is gone (FY_LEFT_FILES), after the
 * sandbox's mount namespace, the only place the overlay was mounted, has
 * died. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux-plan.h"
#include "linux-spawn.h"

int lx_plan_upper_dir(const struct linux_plan *pl, char **ret_path, fy_error **reterr) {
    const struct fy_plan *np = pl->np;
    if (!np || !np->nimage_layers)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_MOUNT, 0, NULL, "a disk upper without an image");
    /* CACHE/layers-.../<digest>: the cache is two levels up. */
    char base[4096];
    snprintf(base, sizeof(base), "%s", np->image_layers[0]);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(base, '/');
        if (!slash || slash == base)
            return err_set(reterr, FY_E_INTERNAL, FY_STEP_MOUNT, 0, NULL, "layer path %s is not in a cache",
                           np->image_layers[0]);
        *slash = '\0';
    }
    size_t bl = strlen(base);
    if (bl + 40 >= sizeof(base))
        return err_set(reterr, FY_E_RANGE, FY_STEP_MOUNT, 0, NULL, "the image cache's path is too long");
    memcpy(base + bl, "/uppers", 8);
    /* Others than the owner only pass through (the sandbox's ids as root). */
    if (mkdir(base, 0711) < 0 && errno != EEXIST)
        return lx_sys_err(reterr, FY_STEP_MOUNT, "creating the disk upper's directory");
    struct stat st;
    if (lstat(base, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return err_set(reterr, FY_E_DENIED, FY_STEP_MOUNT, 0, base, "%s is not a directory of ours", base);
    char letters[7];
    lx_scratch_letters(letters);
    base[bl + 7] = '/';
    memcpy(base + bl + 8, letters, 7);
    if (!(*ret_path = strdup(base)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_MOUNT, 0, NULL, "out of memory");
    return 0;
}

/* Made here, with the name chosen and recorded before (never taken over
 * when it exists: 1, another name). */
int lx_setup_upper_dir(struct lx *x, const struct linux_plan *pl, const char *d, fy_error **reterr) {
    const struct fy_plan *np = pl->np;
    if (mkdir(d, 0700) < 0)
        return errno == EEXIST ? 1 : lx_sys_err(reterr, FY_STEP_MOUNT, "creating the attempt's disk upper");
    if (!(x->attempt_dir = strdup(d))) {
        rmdir(d);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_MOUNT, 0, NULL, "out of memory");
    }
    /* upper/ is the root of the container's view (its owner: the image's
     * root, the range's first id as root; the caller rootless), work/
     * overlayfs's own. */
    char upper[4200], work[4200];
    snprintf(upper, sizeof(upper), "%s/upper", d);
    snprintf(work, sizeof(work), "%s/work", d);
    if (chmod(d, 0711) < 0 || mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0 ||
        (pl->as_root && (chown(upper, np->id_first, np->id_first) < 0 || chown(work, np->id_first, np->id_first) < 0)))
        return lx_sys_err(reterr, FY_STEP_MOUNT, "creating the attempt's disk upper");
    return 0;
}
