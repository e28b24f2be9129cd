/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: container images (OCI image layouts and archives,
 * by digest) for hosts and the CLI: unpack into the layer cache, inspect,
 * collect. A policy runs one with fy_policy_set_image(). */
#ifndef FORGEYARD_FY_IMAGE_H
#define FORGEYARD_FY_IMAGE_H

#include "fy-common.h"
#include "fy-error.h"

FY_BEGIN_DECLS

/* Progress of an unpack: layer (0-based) of nlayers; compressed bytes read
 * of the total of the layers not yet in the cache. Called on the calling
 * thread, at most about once per MiB and at the end of each layer. */
typedef void (*fy_image_progress_fn)(void *userdata, uint32_t layer, uint32_t nlayers, uint64_t done_bytes,
                                     uint64_t total_bytes);

/* Verifies the image ref ("oci:DIR@sha256:...", "oci-archive:FILE@sha256:...",
 * "docker-archive:FILE[@sha256:...]") and unpacks every layer not yet in the
 * cache at cache_dir (NULL: /var/cache/forgeyard/images for root, else
 * $XDG_CACHE_HOME/forgeyard/images; FORGEYARD_IMAGE_CACHE overrides both).
 * progress may be NULL. *ret_json (optional; free with fy_free): what
 * fy_image_inspect() gives, with each layer's cache directory. */
FY_API int fy_image_unpack(const char *ref, const char *cache_dir, fy_image_progress_fn progress, void *userdata,
                           char **ret_json, fy_error **reterr);
/* Verifies the image's manifest and config (not its layers) and describes
 * it as JSON: digests, layers, Env, Entrypoint, Cmd, User, WorkingDir. */
FY_API int fy_image_inspect(const char *ref, char **ret_json, fy_error **reterr);
/* Removes what crashed unpacks left in the cache, the layers not used for
 * max_age_usec (FY_UNLIMITED: no age bound; 0: every layer), then the least
 * recently used ones until the cache holds at most max_bytes (FY_UNLIMITED:
 * no bound). *ret_removed (optional): layers removed. */
FY_API int fy_image_gc(const char *cache_dir, uint64_t max_bytes, uint64_t max_age_usec, uint64_t *ret_removed,
                       fy_error **reterr);

FY_END_DECLS

#endif
