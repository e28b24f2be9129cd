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

int err_setv(fy_error **reterr, int code, uint32_t step, int64_t os_code, const char *location,
             const char *fmt, va_list ap) {
    if (!reterr)
        return code;
    fy_error *e = calloc(1, sizeof(*e));
    char *msg = NULL;
    if (e && vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    if (!e || !msg || (location && !(e->location = strdup(location)))) {
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

