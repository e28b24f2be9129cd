/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libsodium calls core makes, on Windows (win-sodium.c), where Debian
 * has no mingw-w64 libsodium: SHA-256 from CNG (bcrypt), guarded and
 * locked allocations from VirtualAlloc/VirtualLock, zeroing with
 * SecureZeroMemory. Same names and contracts as libsodium's, nothing more. */
#ifndef FY_WIN_SODIUM_H
#define FY_WIN_SODIUM_H

#include <stddef.h>

#define crypto_hash_sha256_BYTES 32U

int sodium_init(void);
/* len bytes that end at a no-access guard page (one before them too),
 * locked in memory; NULL on failure. */
void *sodium_malloc(size_t len);
/* Zeroes and releases what sodium_malloc returned (NULL accepted). */
void sodium_free(void *ptr);
void sodium_memzero(void *pnt, size_t len);
int crypto_hash_sha256(unsigned char *out, const unsigned char *in, unsigned long long inlen);
char *sodium_bin2hex(char *hex, size_t hex_maxlen, const unsigned char *bin, size_t bin_len);

#endif
