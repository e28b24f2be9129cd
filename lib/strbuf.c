/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A growable string with a sticky out-of-memory flag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void strbuf_init(struct strbuf *sb) { *sb = (struct strbuf){0}; }

void strbuf_free(struct strbuf *sb) {
    free(sb->buf);
    strbuf_init(sb);
}

static bool strbuf_grow(struct strbuf *sb, size_t extra) {
    if (sb->oom)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            sb->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *n = realloc(sb->buf, cap);
    if (!n) {
        sb->oom = true;
        return false;
    }
    sb->buf = n;
    sb->cap = cap;
    return true;
}

void strbuf_appendn(struct strbuf *sb, const char *s, size_t n) {
    if (!strbuf_grow(sb, n))
        return;
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void strbuf_append(struct strbuf *sb, const char *s) { strbuf_appendn(sb, s, strlen(s)); }

void strbuf_printf(struct strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->oom = true;
        return;
    }
    strbuf_appendn(sb, s, (size_t)n);
    free(s);
}

char *strbuf_steal(struct strbuf *sb) {
    char *r = NULL;
    if (!sb->oom)
        r = sb->buf ? sb->buf : strdup("");
    else
        free(sb->buf);
    strbuf_init(sb);
    return r;
}
