/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The image service where it is not built (no Linux): every operation is
 * FY_E_UNSUPPORTED; references still parse (oci-ref.c). */
#include <stdlib.h>

#include "oci.h"

static int unsupported(fy_error **reterr) {
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_IMAGE, 0, NULL, "container images need a Linux build");
}

char *oci_cache_dir(void) { return NULL; }
bool oci_is_root(void) { return false; }
int oci_resolve(const char *ref, struct oci_image **ret, fy_error **reterr) { *ret = NULL; return unsupported(reterr); }
int oci_unpack(const char *ref, const struct oci_opts *opts, struct oci_image **ret, fy_error **reterr) {
    *ret = NULL;
    return unsupported(reterr);
}
char *oci_image_to_json(const struct oci_image *img) { return NULL; }
int oci_gc(const char *cache_dir, uint64_t max_bytes, uint64_t max_age_sec, uint64_t *removed, fy_error **reterr) {
    return unsupported(reterr);
}
int oci_parse_manifest(const char *json, size_t len, struct oci_image *img, fy_error **reterr) { return unsupported(reterr); }
int oci_parse_config(const char *json, size_t len, struct oci_image *img, fy_error **reterr) { return unsupported(reterr); }
void oci_image_free(struct oci_image *img) { free(img); }
