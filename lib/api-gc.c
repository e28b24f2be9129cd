/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry point: destroying the orphans of a crashed host program. */
#include <stdlib.h>

#include "action.h"
#include "backend.h"

int fy_gc(const char *state_dir, uint64_t flags, uint64_t *ret_destroyed, fy_error **reterr) {
    if (flags)
        return err_set(reterr, FY_E_INVAL, FY_STEP_CLEANUP, 0, NULL, "reserved flags set");
    if (state_dir && state_dir[0] != '/')
        return err_set(reterr, FY_E_INVAL, FY_STEP_CLEANUP, 0, NULL, "state_dir must be absolute");
    uint64_t destroyed = 0;
    bool any = false;
    int r = 0;
    for (size_t f = 0; backend_families[f]; f++) {
        if (!backend_families[f]->gc)
            continue;
        any = true;
        int rf = backend_families[f]->gc(state_dir, &destroyed, r < 0 ? NULL : reterr);
        if (rf < 0 && r == 0)
            r = rf;
    }
    /* The attempt directories of actions whose host died ($TMPDIR's, where
     * an action's directory is unless its scratch_directory says). */
    const char *tmp = getenv("TMPDIR");
    action_sweep(tmp && tmp[0] == '/' ? tmp : "/tmp", &destroyed);
    if (ret_destroyed)
        *ret_destroyed = destroyed;
    if (!any)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_CLEANUP, 0, NULL, "no backend in this build records sandboxes");
    return r;
}
