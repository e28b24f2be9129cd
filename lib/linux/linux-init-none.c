/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Architectures forgeyard-init is not built for: the sandbox's init is a
 * copy of the host process (linux-child.c). fy-proxy is not built either:
 * fetch-only is refused there (linux-proxy.c). */
#include <stddef.h>
const unsigned char lx_init_blob[1] = {0};
const size_t lx_init_blob_len = 0;
const unsigned char lx_proxy_blob[1] = {0};
const size_t lx_proxy_blob_len = 0;
