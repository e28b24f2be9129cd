/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry point: destroying the orphans of a crashed host program. */
#include "config.h"
#include "internal.h"
#if FY_HAVE_LINUX
#include "linux/linux-state.h"
#endif

int fy_gc(const char *state_dir, uint64_t flags, uint64_t *ret_destroyed, fy_error **reterr) {
    if (flags)
        return err_set(reterr, FY_E_INVAL, FY_STEP_CLEANUP, 0, NULL, "reserved flags set");
    if (state_dir && state_dir[0] != '/')
        return err_set(reterr, FY_E_INVAL, FY_STEP_CLEANUP, 0, NULL, "state_dir must be absolute");
#if FY_HAVE_LINUX
    char def[4096];
    if (!state_dir) {
        int r = state_default_dir(def, sizeof(def));
        if (r < 0)
            return err_set(reterr, r, FY_STEP_CLEANUP, 0, NULL, "no default state directory");
        state_dir = def;
    }
    return state_gc(state_dir, ret_destroyed, reterr);
#else
    (void)ret_destroyed;
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_CLEANUP, 0, NULL, "no backend in this build records sandboxes");
#endif
}
