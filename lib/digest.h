/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 of bulk data (files, archives, outputs): OpenSSL's libcrypto,
 * which uses the CPU's SHA extensions where there are some (about 4x
 * libsodium's portable code on the project's hosts). Short strings
 * (digests of documents) keep using libsodium. */
#ifndef FY_DIGEST_H
#define FY_DIGEST_H

#include <stddef.h>

struct digest { void *ctx; };

/* 0, or FY_E_NOMEM. */
int digest_init(struct digest *d);
void digest_update(struct digest *d, const void *data, size_t len);
/* Writes the 32 bytes and releases d. */
void digest_final(struct digest *d, unsigned char out[32]);
/* Releases d without a result (NULL-safe, idempotent). */
void digest_abandon(struct digest *d);

#endif
