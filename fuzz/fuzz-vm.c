/* Fuzz target: the VM backend's control protocol as the host decodes it
 * (lib/vm/vm-proto.c) and the tar streams a guest sends back (lib/vm/
 * vm-tar.c, parse-only: nothing is created). The input is what an untrusted
 * guest writes to the control port (and, for its RUN records, what the
 * agent decodes). Invariants: a frame never exceeds
 * VMP_MAX_FRAME and lies inside the buffer, a decoder error is sticky, an
 * exit record is only accepted when its values are possible, a DNS query
 * handed to the stub has a valid slot and length, an interface record
 * only valid prefixes, and every
 * path the tar reader accepts is relative, without "." or ".." parts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm-proto.h"
#include "vm/vm-tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p) {
    if (!*p || p[0] == '/' || strstr(p, "//"))
        abort();
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if ((l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
            abort();
        if (!e)
            break;
        s = e + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20))
        return 0;
    static struct vmp_dec d;
    vmp_dec_init(&d);
    struct vmt t;
    if (vmt_init(&t, -1) < 0)
        return 0;
    /* Fed in uneven pieces, as a socket delivers them. */
    size_t off = 0, step = size ? (size_t)data[0] % 97 + 1 : 1;
    int err = 0;
    while (off < size && !err) {
        size_t n = size - off < step ? size - off : step;
        size_t took = vmp_feed(&d, data + off, n);
        off += took;
        struct vmp_frame f;
        int k;
        while ((k = vmp_next(&d, &f)) == 1) {
            if (f.len > VMP_MAX_FRAME || f.data < d.buf || f.data + f.len > d.buf + sizeof(d.buf))
                abort();
            if (f.type == VMP_EXIT) {
                struct vmp_exit ex;
                if (vmp_get_exit(f.data, f.len, &ex) == 0 &&
                    ((ex.kind == 1 && ex.code > 255) || (ex.kind == 2 && (ex.code < 1 || ex.code > 64)) ||
                     (ex.kind != 1 && ex.kind != 2)))
                    abort();
            } else if (f.type == VMP_TAR) {
                uint64_t before = t.nlisted;
                if (vmt_feed(&t, f.data, f.len) == 0)
                    for (size_t i = before; i < t.nlisted; i++)
                        check_path(t.listed[i].path);
            } else if (f.type == VMP_DNS_QUERY) {
                /* what the host would hand to the DNS stub */
                if (vmp_dns_check(f.type, f.flags, f.len) == 0 &&
                    (f.flags >= VMP_DNS_SLOTS || f.len < VMP_DNS_MIN || f.len > VMP_DNS_MAX))
                    abort();
            } else if (f.type == VMP_RUN) {
                struct vmp_rec_iter it = {f.data, f.len, 0};
                uint8_t tag;
                const uint8_t *p;
                uint32_t n2;
                int r;
                while ((r = vmp_rec_next(&it, &tag, &p, &n2)) == 1) {
                    if (p < f.data || p + n2 > f.data + f.len)
                        abort();
                    struct vmp_iface ifc;
                    if (tag == VMR_NET_IFACE && vmp_get_iface(p, n2, &ifc) == 0 &&
                        (n2 != VMP_IFACE_LEN || !ifc.prefix4 || ifc.prefix4 > 32 || !ifc.prefix6 || ifc.prefix6 > 128))
                        abort();
                }
            }
        }
        if (k < 0) {
            struct vmp_frame g;
            if (!d.error || vmp_next(&d, &g) != -1)
                abort(); /* errors are sticky */
            err = 1;
        }
        if (!took && !err)
            break; /* buffer full without a complete frame: impossible */
    }
    vmt_end(&t);
    if (t.cur_path[0])
        check_path(t.cur_path);
    vmt_free(&t);
    return 0;
}
