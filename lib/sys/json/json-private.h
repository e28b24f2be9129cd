/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the in-tree JSON library's two files share (not for core). */
#ifndef FY_SYS_JSON_PRIVATE_H
#define FY_SYS_JSON_PRIVATE_H

#include "jansson.h"

#include <stdint.h>

int jsonp_utf8_first(unsigned char c);
int jsonp_utf8_full(const unsigned char *s, int n, uint32_t *cp);
int jsonp_utf8_valid(const char *s, size_t len);
json_t *jsonp_stringn_nocheck(const char *value, size_t len);
int *jsonp_visiting(const json_t *container);
int jsonp_object_set_nocheck(json_t *object, const char *key, json_t *value);

#endif
