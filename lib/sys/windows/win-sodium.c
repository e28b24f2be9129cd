/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sodium.h on Windows (see there). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <bcrypt.h>

#include "sodium.h"

int sodium_init(void) { return 0; }

void sodium_memzero(void *pnt, size_t len) { SecureZeroMemory(pnt, len); }

/* Where sodium_malloc keeps what sodium_free needs: just below the
 * returned pointer, inside the locked pages. */
struct guarded {
    void *base;
    size_t total, data, len;
};

static size_t page_size(void) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize;
}

void *sodium_malloc(size_t len) {
    size_t page = page_size();
    size_t need = len + sizeof(struct guarded);
    if (need < len || need > SIZE_MAX - 3 * page)
        return NULL;
    size_t data = (need + page - 1) / page * page;
    size_t total = data + 2 * page;
    unsigned char *base = VirtualAlloc(NULL, total, MEM_RESERVE | MEM_COMMIT, PAGE_NOACCESS);
    if (!base)
        return NULL;
    DWORD old;
    if (!VirtualProtect(base + page, data, PAGE_READWRITE, &old)) {
        VirtualFree(base, 0, MEM_RELEASE);
        return NULL;
    }
    /* Locking is best effort, as in libsodium (a small working set). */
    VirtualLock(base + page, data);
    unsigned char *p = base + page + data - len;
    struct guarded g = {base, total, data, len};
    memcpy(p - sizeof(g), &g, sizeof(g));
    memset(p, 0xdb, len);
    return p;
}

void sodium_free(void *ptr) {
    if (!ptr)
        return;
    struct guarded g;
    memcpy(&g, (unsigned char *)ptr - sizeof(g), sizeof(g));
    size_t page = page_size();
    SecureZeroMemory((unsigned char *)g.base + page, g.data);
    VirtualUnlock((unsigned char *)g.base + page, g.data);
    VirtualFree(g.base, 0, MEM_RELEASE);
}

/* libsodium's never fails (core does not check); CNG failing to hash is
 * no state to go on from, so it aborts as libsodium does on misuse. */
int crypto_hash_sha256(unsigned char *out, const unsigned char *in, unsigned long long inlen) {
    BCRYPT_ALG_HANDLE alg = NULL;
    BCRYPT_HASH_HANDLE hash = NULL;
    int r = -1;
    if (inlen > 0xffffffffull || BCryptOpenAlgorithmProvider(&alg, BCRYPT_SHA256_ALGORITHM, NULL, 0) != 0)
        abort();
    if (BCryptCreateHash(alg, &hash, NULL, 0, NULL, 0, 0) == 0 &&
        BCryptHashData(hash, (PUCHAR)(uintptr_t)in, (ULONG)inlen, 0) == 0 &&
        BCryptFinishHash(hash, out, crypto_hash_sha256_BYTES, 0) == 0)
        r = 0;
    if (hash)
        BCryptDestroyHash(hash);
    BCryptCloseAlgorithmProvider(alg, 0);
    if (r < 0)
        abort();
    return 0;
}

char *sodium_bin2hex(char *hex, size_t hex_maxlen, const unsigned char *bin, size_t bin_len) {
    static const char digits[] = "0123456789abcdef";
    if (bin_len >= SIZE_MAX / 2 || hex_maxlen <= bin_len * 2)
        abort(); /* libsodium's contract: a misuse, not an error */
    for (size_t i = 0; i < bin_len; i++) {
        hex[2 * i] = digits[bin[i] >> 4];
        hex[2 * i + 1] = digits[bin[i] & 15];
    }
    hex[bin_len * 2] = 0;
    return hex;
}
