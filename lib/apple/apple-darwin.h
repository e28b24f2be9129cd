/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The apple folder's Darwin half (compiled only on Apple hosts, and
 * compile-checked on Linux against test/apple/shim/): the probe
 * (apple-probe.c) and the attempt's lifecycle (apple-darwin.c). Never run
 * on a Mac yet: README "Status". */
#ifndef FY_APPLE_DARWIN_H
#define FY_APPLE_DARWIN_H

#include "apple-sbpl.h"

/* apple-probe.c */
int apple_probe(fy_caps *c, uint64_t flags, fy_error **reterr);
int apple_fingerprint(struct strbuf *key);

/* apple-darwin.c: struct fy_backend_ops of apple-seatbelt. */
int apple_start(fy_handle *h, fy_error **reterr);
int apple_process(fy_handle *h, fy_error **reterr);
void apple_terminate(fy_handle *h);
void apple_destroy(fy_handle *h);
void apple_forget(fy_handle *h);
int apple_get_fd(fy_handle *h);
int apple_stdio_fd(fy_handle *h, uint32_t stream);
uint64_t apple_next_deadline(fy_handle *h);

#endif
