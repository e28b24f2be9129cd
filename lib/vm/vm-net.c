/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network of one attempt beyond the fetch-only proxy (vm-run.h):
 *
 * - restricted: the Linux folder's router (backend.h router_*): the
 *   namespace backend's per-attempt router namespace, nftables allowlist
 *   and uplink, whose sandbox-side link is a tap device; its fd becomes
 *   QEMU's stdin (-netdev tap,fd=0), so the VMM's sandbox has no
 *   /dev/net/tun, no capability and no interface but lo, and every frame of
 *   the guest's virtio-net device meets the host kernel's rules outside the
 *   guest.
 * - the DNS stub (restricted and fetch-only): the folder's stub (dns_*)
 *   answering on our end of a datagram socketpair. The agent listens on
 *   127.0.0.53:53 in the guest and carries each datagram as a VMP_DNS_QUERY
 *   (its slot in the flags); we hand it to the stub with its DNS id
 *   replaced by one naming the slot (and a generation), and give the
 *   stub's answer back to that slot with the guest's id. The stub forwards
 *   nothing and runs outside the guest. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vm-run.h"

void vmn_init(struct vmn *n, const struct vm_plan *pl) {
    memset(n, 0, sizeof(*n));
    n->pl = pl;
    n->tap = n->dns_sock = -1;
}

int vmn_start(struct vmn *n, fy_error **reterr) {
    const struct vm_plan *pl = n->pl;
    int r;
    if (pl->rtcfg && (r = pl->pxf->router_start(pl->rtcfg, &n->tap, &n->router, reterr)) < 0)
        return r;
    if (pl->dnscfg) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
            return err_set(reterr, err_from_errno(errno), FY_STEP_PROXY, errno, NULL, "the DNS stub's socket: %s",
                           strerror(errno));
        n->dns_sock = sp[0];
        r = pl->pxf->dns_start(pl->dnscfg, sp[1], &n->dns, reterr);
        close(sp[1]); /* the stub holds its own */
        if (r < 0)
            return r;
    }
    return 0;
}

const char *vmn_dns_query(struct vmn *n, uint16_t slot, const uint8_t *p, uint32_t len) {
    if (n->dns_sock < 0)
        return "a DNS frame without a DNS stub";
    if (vmp_dns_check(VMP_DNS_QUERY, slot, len) < 0)
        return "a malformed DNS frame";
    uint8_t q[VMP_DNS_MAX];
    memcpy(q, p, len);
    n->orig_id[slot] = (uint16_t)(q[0] << 8 | q[1]);
    n->gen[slot]++;
    n->busy[slot] = true;
    uint16_t id = (uint16_t)((unsigned)n->gen[slot] << 8 | slot);
    q[0] = (uint8_t)(id >> 8);
    q[1] = (uint8_t)id;
    if (send(n->dns_sock, q, len, MSG_DONTWAIT) == (ssize_t)len)
        n->dns_carried++;
    else
        n->dns_dropped++; /* (the stub's queue is full: as a lost datagram) */
    return NULL;
}

int vmn_dns_pump(struct vmn *n, int (*sendf)(void *ctx, uint16_t slot, const void *p, size_t len), void *ctx) {
    if (n->dns_sock < 0)
        return 0;
    for (int k = 0; k < 64; k++) {
        uint8_t a[VMP_DNS_MAX + 1];
        ssize_t m = recv(n->dns_sock, a, sizeof(a), MSG_DONTWAIT);
        if (m < 0)
            return 0; /* (nothing more now; a dead stub is seen at cleanup) */
        if (m < VMP_DNS_MIN || m > VMP_DNS_MAX)
            continue;
        uint16_t id = (uint16_t)(a[0] << 8 | a[1]), slot = id & 0xff;
        if (slot >= VMP_DNS_SLOTS || !n->busy[slot] || (id >> 8) != n->gen[slot])
            continue; /* a stale answer */
        n->busy[slot] = false;
        a[0] = (uint8_t)(n->orig_id[slot] >> 8);
        a[1] = (uint8_t)n->orig_id[slot];
        if (sendf(ctx, slot, a, (size_t)m) < 0)
            return -1;
    }
    return 0;
}

unsigned vmn_stop(struct vmn *n, json_t *report) {
    unsigned left = 0;
    const struct vm_plan *pl = n->pl;
    if (n->tap >= 0)
        close(n->tap);
    n->tap = -1;
    if (n->dns) {
        left += pl->pxf->proxy_stop(n->dns);
        if (json_is_object(report)) {
            char *s = pl->pxf->dns_report(n->dns);
            json_t *d = s ? json_loads(s, 0, NULL) : NULL;
            free(s);
            if (d) {
                json_object_set_new(d, "carried", json_pack("{sIsI}", "queries", (json_int_t)n->dns_carried,
                                                            "dropped", (json_int_t)n->dns_dropped));
                json_object_set_new(report, "dns", d);
            }
        }
        pl->pxf->proxy_release(n->dns);
        n->dns = NULL;
    }
    if (n->dns_sock >= 0)
        close(n->dns_sock);
    n->dns_sock = -1;
    if (n->router) {
        unsigned l = pl->pxf->router_stop(n->router);
        left += l;
        char *rs = pl->pxf->router_report(n->router);
        json_t *ro = rs ? json_loads(rs, 0, NULL) : NULL;
        free(rs);
        if (json_is_object(report) && json_is_object(ro))
            json_object_update(report, ro);
        json_decref(ro);
        if (json_is_object(report)) {
            json_object_set_new(report, "mode", json_string("restricted"));
            json_object_set_new(report, "router_left", json_integer(l));
        }
        pl->pxf->router_release(n->router);
        n->router = NULL;
    }
    return left;
}

void vmn_forget(struct vmn *n) {
    const struct vm_plan *pl = n->pl;
    if (n->tap >= 0)
        close(n->tap);
    if (n->dns_sock >= 0)
        close(n->dns_sock);
    n->tap = n->dns_sock = -1;
    if (n->dns)
        pl->pxf->proxy_forget(n->dns);
    if (n->router)
        pl->pxf->router_forget(n->router);
    n->dns = n->router = NULL;
}
