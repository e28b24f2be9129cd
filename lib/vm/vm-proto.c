/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The control protocol's codec (vm-proto.h): the host decodes with it what
 * an untrusted guest sends, so every length is checked before use. */
#include <string.h>

#include "vm-proto.h"

void vmp_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void vmp_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t vmp_get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t vmp_get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void vmp_header(uint8_t out[VMP_HDR], uint8_t type, uint16_t flags, uint32_t len) {
    vmp_put_u32(out, VMP_MAGIC);
    out[4] = VMP_VERSION;
    out[5] = type;
    out[6] = (uint8_t)flags;
    out[7] = (uint8_t)(flags >> 8);
    vmp_put_u32(out + 8, len);
}

void vmp_dec_init(struct vmp_dec *d) {
    d->have = d->consumed = 0;
    d->total = d->frames = 0;
    d->error = NULL;
}

size_t vmp_room(struct vmp_dec *d) {
    if (d->consumed) {
        memmove(d->buf, d->buf + d->consumed, d->have - d->consumed);
        d->have -= d->consumed;
        d->consumed = 0;
    }
    return sizeof(d->buf) - d->have;
}

void vmp_added(struct vmp_dec *d, size_t n) {
    d->have += n;
    d->total += n;
}

size_t vmp_feed(struct vmp_dec *d, const void *p, size_t n) {
    size_t room = vmp_room(d);
    if (n > room)
        n = room;
    memcpy(d->buf + d->have, p, n);
    vmp_added(d, n);
    return n;
}

static int known_type(uint8_t t) {
    return (t >= VMP_HELLO && t <= VMP_G2H_MAX) || (t >= VMP_RUN && t <= VMP_TYPE_MAX);
}

int vmp_next(struct vmp_dec *d, struct vmp_frame *f) {
    if (d->error)
        return -1;
    size_t avail = d->have - d->consumed;
    if (avail < VMP_HDR)
        return 0;
    const uint8_t *h = d->buf + d->consumed;
    if (vmp_get_u32(h) != VMP_MAGIC) {
        d->error = "bad frame magic";
        return -1;
    }
    if (h[4] != VMP_VERSION) {
        d->error = "unsupported protocol version";
        return -1;
    }
    if (!known_type(h[5])) {
        d->error = "unknown frame type";
        return -1;
    }
    uint32_t len = vmp_get_u32(h + 8);
    if (len > VMP_MAX_FRAME) {
        d->error = "frame too large";
        return -1;
    }
    if (avail - VMP_HDR < len)
        return 0;
    f->type = h[5];
    f->flags = (uint16_t)(h[6] | (h[7] << 8));
    f->len = len;
    f->data = h + VMP_HDR;
    d->consumed += VMP_HDR + len;
    d->frames++;
    return 1;
}

void vmp_put_exit(uint8_t out[VMP_EXIT_LEN], const struct vmp_exit *e) {
    vmp_put_u32(out, e->kind);
    vmp_put_u32(out + 4, e->code);
    vmp_put_u32(out + 8, e->oom_kills);
    vmp_put_u32(out + 12, e->pids_max);
    vmp_put_u64(out + 16, e->utime_usec);
    vmp_put_u64(out + 24, e->stime_usec);
    vmp_put_u64(out + 32, e->maxrss_kb);
    vmp_put_u64(out + 40, e->run_usec);
    vmp_put_u64(out + 48, e->memory_peak);
}

int vmp_get_exit(const uint8_t *p, size_t len, struct vmp_exit *e) {
    if (len != VMP_EXIT_LEN)
        return -1;
    e->kind = vmp_get_u32(p);
    e->code = vmp_get_u32(p + 4);
    e->oom_kills = vmp_get_u32(p + 8);
    e->pids_max = vmp_get_u32(p + 12);
    e->utime_usec = vmp_get_u64(p + 16);
    e->stime_usec = vmp_get_u64(p + 24);
    e->maxrss_kb = vmp_get_u64(p + 32);
    e->run_usec = vmp_get_u64(p + 40);
    e->memory_peak = vmp_get_u64(p + 48);
    if ((e->kind != 1 && e->kind != 2) || (e->kind == 1 && e->code > 255) || (e->kind == 2 && (e->code < 1 || e->code > 64)))
        return -1;
    return 0;
}

int vmp_rec_next(struct vmp_rec_iter *it, uint8_t *tag, const uint8_t **data, uint32_t *dlen) {
    if (it->off == it->len)
        return 0;
    if (it->len - it->off < 5)
        return -1;
    const uint8_t *p = it->p + it->off;
    uint32_t n = vmp_get_u32(p + 1);
    if (n > it->len - it->off - 5)
        return -1;
    *tag = p[0];
    *data = p + 5;
    *dlen = n;
    it->off += 5 + (size_t)n;
    return 1;
}

void vmp_put_iface(uint8_t out[VMP_IFACE_LEN], const struct vmp_iface *i) {
    memcpy(out, i->addr4, 4);
    memcpy(out + 4, i->gw4, 4);
    memcpy(out + 8, i->addr6, 16);
    memcpy(out + 24, i->gw6, 16);
    out[40] = i->prefix4;
    out[41] = i->prefix6;
}

int vmp_get_iface(const uint8_t *p, size_t len, struct vmp_iface *i) {
    if (len != VMP_IFACE_LEN)
        return -1;
    memcpy(i->addr4, p, 4);
    memcpy(i->gw4, p + 4, 4);
    memcpy(i->addr6, p + 8, 16);
    memcpy(i->gw6, p + 24, 16);
    i->prefix4 = p[40];
    i->prefix6 = p[41];
    if (i->prefix4 < 1 || i->prefix4 > 32 || i->prefix6 < 1 || i->prefix6 > 128)
        return -1;
    return 0;
}

bool vmp_is_hello(const struct vmp_frame *f) {
    return f->type == VMP_HELLO && f->len == sizeof(VMP_HELLO_TEXT) - 1 &&
           memcmp(f->data, VMP_HELLO_TEXT, f->len) == 0;
}

int vmp_dns_check(uint8_t type, uint16_t flags, uint32_t len) {
    return type == VMP_DNS_QUERY && flags < VMP_DNS_SLOTS && len >= VMP_DNS_MIN && len <= VMP_DNS_MAX ? 0 : -1;
}
