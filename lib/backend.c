/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The table of compiled-in backends. */
#include "backend.h"
#include "config.h"

const struct fy_backend_ops *const fy_backends[] = {
#if FY_HAVE_LINUX
    &linux_process_backend,
    &linux_namespace_backend,
#endif
    NULL, /* keeps the array non-empty on platforms without a backend */
};
const size_t fy_backends_count = FY_ARRAY_SIZE(fy_backends) - 1;
