/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 of bulk data through libcrypto's EVP interface (internal.h). */
#include <openssl/evp.h>

#include "internal.h"

int digest_init(struct digest *d) {
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c);
        d->ctx = NULL;
        return FY_E_NOMEM;
    }
    d->ctx = c;
    return 0;
}

void digest_update(struct digest *d, const void *data, size_t len) {
    if (d->ctx && len)
        EVP_DigestUpdate(d->ctx, data, len);
}

void digest_final(struct digest *d, unsigned char out[32]) {
    unsigned int n = 0;
    EVP_DigestFinal_ex(d->ctx, out, &n);
    digest_abandon(d);
}

void digest_abandon(struct digest *d) {
    EVP_MD_CTX_free(d->ctx);
    d->ctx = NULL;
}
