/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: container images (fy-image.h), through the image
 * service (lib/oci/). */
#include <stdlib.h>

#include "internal.h"
#include "oci/oci.h"

/* The id range a default policy maps (fy_policy_set_id_range): as root,
 * fy_image_unpack fills the same cache entries a default run uses. */
#define DEFAULT_ID_FIRST 100000u
#define DEFAULT_ID_COUNT 65536u

int fy_image_unpack(const char *ref, const char *cache_dir, fy_image_progress_fn progress, void *userdata,
                    char **ret_json, fy_error **reterr) {
    if (ret_json)
        *ret_json = NULL;
    if (!ref)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL, "ref is NULL");
    struct oci_opts o = {.cache_dir = cache_dir, .progress = progress, .userdata = userdata};
    if (oci_is_root()) {
        o.id_first = DEFAULT_ID_FIRST;
        o.id_count = DEFAULT_ID_COUNT;
    }
    struct oci_image *img = NULL;
    int r = oci_unpack(ref, &o, &img, reterr);
    if (r < 0)
        return r;
    if (ret_json && !(*ret_json = oci_image_to_json(img)))
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    oci_image_free(img);
    return r;
}

int fy_image_inspect(const char *ref, char **ret_json, fy_error **reterr) {
    if (!ref || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL, "ref or ret_json is NULL");
    *ret_json = NULL;
    struct oci_image *img = NULL;
    int r = oci_resolve(ref, &img, reterr);
    if (r < 0)
        return r;
    if (!(*ret_json = oci_image_to_json(img)))
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    oci_image_free(img);
    return r;
}

int fy_image_gc(const char *cache_dir, uint64_t max_bytes, uint64_t max_age_usec, uint64_t *ret_removed,
                fy_error **reterr) {
    if (ret_removed)
        *ret_removed = 0;
    uint64_t age = max_age_usec == FY_UNLIMITED ? UINT64_MAX : max_age_usec / 1000000u;
    return oci_gc(cache_dir, max_bytes == FY_UNLIMITED ? UINT64_MAX : max_bytes, age, ret_removed, reterr);
}
