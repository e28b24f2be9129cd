/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Image references: portable, compiled on every platform (policies name
 * images everywhere; only Linux builds unpack and run them). */
#include <stdlib.h>
#include <string.h>

#include "oci.h"

static bool is_hex64(const char *s) {
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[64] == '\0';
}

bool oci_digest_valid(const char *d) {
    return d && strncmp(d, "sha256:", 7) == 0 && is_hex64(d + 7);
}

void oci_ref_free(struct oci_ref *r) {
    if (!r)
        return;
    free(r->path);
    free(r->tag);
    memset(r, 0, sizeof(*r));
}

int oci_ref_parse(const char *s, struct oci_ref *out, fy_error **reterr) {
    static const struct { const char *prefix; uint32_t t; } tr[] = {
        {"oci:", OCI_LAYOUT}, {"oci-archive:", OCI_ARCHIVE}, {"docker-archive:", OCI_DOCKER_ARCHIVE},
    };
    memset(out, 0, sizeof(*out));
    if (!s)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, NULL, "no image reference");
    const char *rest = NULL;
    for (size_t i = 0; i < FY_ARRAY_SIZE(tr); i++)
        if (strncmp(s, tr[i].prefix, strlen(tr[i].prefix)) == 0) {
            out->transport = tr[i].t;
            rest = s + strlen(tr[i].prefix);
        }
    if (!rest)
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, s,
                       "image reference %s: the transport must be oci:, oci-archive: or docker-archive: "
                       "(registry pulls are out of scope: skopeo copy into an OCI layout)", s);
    char *body = util_strdup(rest);
    if (!body)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
    char *at = strrchr(body, '@');
    if (at) {
        if (!oci_digest_valid(at + 1)) {
            free(body);
            return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, s,
                           "image reference %s: the digest must be sha256: and 64 lowercase hex digits", s);
        }
        memcpy(out->digest, at + 1, OCI_DIGEST_LEN + 1);
        *at = '\0';
    }
    /* A tag: after the last ':' when what follows has no '/'. */
    char *colon = strrchr(body, ':');
    if (colon && !strchr(colon + 1, '/')) {
        *colon = '\0';
        if (!colon[1] || strlen(colon + 1) > 128 || out->transport == OCI_DOCKER_ARCHIVE) {
            free(body);
            return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, s,
                           out->transport == OCI_DOCKER_ARCHIVE
                               ? "image reference %s: a docker-archive is named by its config digest, not a tag"
                               : "image reference %s: bad tag", s);
        }
        if (!(out->tag = util_strdup(colon + 1))) {
            free(body);
            return err_set(reterr, FY_E_NOMEM, FY_STEP_IMAGE, 0, NULL, "out of memory");
        }
    }
    if (!body[0]) {
        free(body);
        oci_ref_free(out);
        return err_set(reterr, FY_E_INVAL, FY_STEP_IMAGE, 0, s, "image reference %s: no path", s);
    }
    out->path = body;
    return 0;
}

