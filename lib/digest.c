/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 of bulk data through libcrypto's EVP interface (internal.h),
 * loaded on first use (lazy.h); where it cannot be loaded, libsodium's
 * portable SHA-256 gives the same digests, more slowly. */
#include <openssl/evp.h>
#include <sodium.h>
#include <stdlib.h>

#include "internal.h"
#include "lazy.h"

int digest_init(struct digest *d) {
    d->ctx = NULL;
    d->sodium = lazy_open(&lazy_crypto) < 0;
    if (d->sodium) {
        crypto_hash_sha256_state *s = malloc(sizeof(*s));
        if (!s)
            return FY_E_NOMEM;
        crypto_hash_sha256_init(s);
        d->ctx = s;
        return 0;
    }
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c);
        return FY_E_NOMEM;
    }
    d->ctx = c;
    return 0;
}

void digest_update(struct digest *d, const void *data, size_t len) {
    if (!d->ctx || !len)
        return;
    if (d->sodium)
        crypto_hash_sha256_update(d->ctx, data, len);
    else
        EVP_DigestUpdate(d->ctx, data, len);
}

void digest_final(struct digest *d, unsigned char out[32]) {
    if (d->sodium) {
        crypto_hash_sha256_final(d->ctx, out);
    } else {
        unsigned int n = 0;
        EVP_DigestFinal_ex(d->ctx, out, &n);
    }
    digest_abandon(d);
}

void digest_abandon(struct digest *d) {
    if (d->ctx) {
        if (d->sodium) {
            sodium_memzero(d->ctx, sizeof(crypto_hash_sha256_state));
            free(d->ctx);
        } else {
            EVP_MD_CTX_free(d->ctx);
        }
    }
    d->ctx = NULL;
}
