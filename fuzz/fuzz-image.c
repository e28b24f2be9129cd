/* Fuzz target: the image service's JSON parsers (lib/oci/): a manifest (or
 * an index) and a config, as read from an untrusted image. What they accept
 * must hold the invariants the unpacker and the plan rely on: every digest
 * is sha256 and 64 lowercase hex digits, as many diff_ids as layers, an
 * absolute WorkingDir, Env entries of the form K=V. The first byte picks
 * the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oci/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    struct oci_image *img = calloc(1, sizeof(*img));
    if (!img)
        return 0;
    const char *json = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] & 1) {
        if (oci_parse_manifest(json, len, img, NULL) == 0) {
            if (!oci_digest_valid(img->config_digest))
                abort();
            for (size_t i = 0; i < img->nlayers; i++)
                if (!oci_digest_valid(img->layer_digests[i]))
                    abort();
        }
    } else {
        /* A config for an image of (data[0] >> 1) % 4 layers. */
        img->nlayers = (size_t)(data[0] >> 1) % 4;
        if (oci_parse_config(json, len, img, NULL) == 0) {
            size_t n = 0;
            while (img->diff_ids && img->diff_ids[n]) {
                if (!oci_digest_valid(img->diff_ids[n]))
                    abort();
                n++;
            }
            if (n != img->nlayers)
                abort();
            if (img->config.workdir && img->config.workdir[0] != '/')
                abort();
            for (size_t i = 0; img->config.env && img->config.env[i]; i++)
                if (!strchr(img->config.env[i], '=') || img->config.env[i][0] == '=')
                    abort();
        }
    }
    oci_image_free(img);
    return 0;
}
