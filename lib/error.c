/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The error object and the static code/step tables. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Returned when even the error object cannot be allocated. */
static struct fy_error oom_error = {
    .code = FY_E_NOMEM, .message = (char *)"out of memory", .is_static = true,
};

/* The length of the valid UTF-8 character at s (of n bytes) that is no
 * control character (C0, DEL, C1), or 0. */
static size_t shown_char(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c >= 0x20 && c < 0x7f)
        return 1;
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    uint32_t cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
        return 0;
    return len;
}

/* Messages and locations are text for humans, logs and terminals, and
 * quote what callers gave (an image reference, a property name): valid
 * UTF-8 without control characters, each byte that is not shown as
 * \xNN, and at most cap bytes of it, the rest named by its length (a
 * 10 MB argument made a 10 MB message; a raw ESC reached terminals).
 * s itself when it already is such text; NULL when out of memory. */
static char *shown_text(char *s, size_t cap) {
    size_t n = strlen(s), i = 0;
    while (i < n && i < cap) {
        size_t k = shown_char((const unsigned char *)s + i, n - i);
        if (!k)
            break;
        i += k;
    }
    if (i == n)
        return s;
    char *out = malloc(cap + 64);
    if (!out)
        return NULL;
    size_t o = 0;
    for (i = 0; i < n;) {
        size_t k = shown_char((const unsigned char *)s + i, n - i);
        if (o + (k ? k : 4) > cap)
            break;
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            o += (size_t)snprintf(out + o, 5, "\\x%02x", (unsigned char)s[i++]);
        }
    }
    if (i < n)
        o += (size_t)snprintf(out + o, 64, " [%zu more bytes]", n - i);
    out[o] = '\0';
    return out;
}

#define ERR_MESSAGE_MAX 16384 /* (a refusal names every backend's reasons) */
#define ERR_LOCATION_MAX 1024

int err_setv(fy_error **reterr, int code, uint32_t step, int64_t os_code, const char *location,
             const char *fmt, va_list ap) {
    if (!reterr)
        return code;
    fy_error *e = calloc(1, sizeof(*e));
    char *msg = NULL;
    if (e && vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    char *shown = msg ? shown_text(msg, ERR_MESSAGE_MAX) : NULL;
    if (shown != msg) {
        free(msg);
        msg = shown;
    }
    if (e && location) {
        char *loc = strdup(location);
        if (loc && (e->location = shown_text(loc, ERR_LOCATION_MAX)) != loc)
            free(loc);
    }
    if (!e || !msg || (location && !e->location)) {
        if (e)
            free(e->location);
        free(e);
        free(msg);
        *reterr = &oom_error;
        return code;
    }
    e->code = code;
    e->step = step;
    e->os_code = os_code;
    e->message = msg;
    *reterr = e;
    return code;
}

int err_set(fy_error **reterr, int code, uint32_t step, int64_t os_code, const char *location,
            const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_setv(reterr, code, step, os_code, location, fmt, ap);
    va_end(ap);
    return code;
}

int err_from_errno(int e) {
    switch (e) {
    case ENOMEM: return FY_E_NOMEM;
    case EPERM: case EACCES: case EROFS: return FY_E_DENIED;
    case ENOENT: case ENOTDIR: case ESRCH: return FY_E_NOTFOUND;
    case EINVAL: return FY_E_INVAL;
    case ENOSYS: case EOPNOTSUPP: return FY_E_UNSUPPORTED;
    case ETIMEDOUT: return FY_E_TIMEOUT;
    case ERANGE: case E2BIG: case EOVERFLOW: case ENAMETOOLONG: return FY_E_RANGE;
    default: return FY_E_IO;
    }
}

