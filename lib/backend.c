/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The compiled-in backends, from the generated table of folders. */
#include "backend.h"

size_t backends_collect(const struct fy_backend_ops **out, size_t max) {
    size_t n = 0;
    for (size_t f = 0; backend_families[f]; f++)
        for (const struct fy_backend_ops *const *b = backend_families[f]->backends; b && *b; b++)
            if (n < max)
                out[n++] = *b;
    return n;
}

const struct fy_backend_family *backend_proxy_family(void) {
    for (size_t f = 0; backend_families[f]; f++)
        if (backend_families[f]->proxy_compile && backend_families[f]->proxy_start)
            return backend_families[f];
    return NULL;
}
