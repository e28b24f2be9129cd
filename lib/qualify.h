/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The qualification suite's internal entry point (lib/api-qualify.c). */
#ifndef FY_QUALIFY_H
#define FY_QUALIFY_H

#include <jansson.h>

#include "backend.h" /* the probe groups, QUALIFY_* */

/* Runs the probe groups (0: all). tmp_parent: where host-side scratch is
 * made (NULL: /tmp); plant_dirs: where the leakage probes plant their files
 * inside (NULL: /tmp, /work/tmp, /home/forgeyard, /dev/shm). *ret gets the
 * report as a JSON object. */
int qualify_run(const fy_policy *policy, uint32_t groups, const char *tmp_parent, const char *const *plant_dirs,
                json_t **ret, fy_error **reterr);

#endif
