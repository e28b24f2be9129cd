/* Fuzz target: the per-attempt DNS stub's parser and answer
 * (lib/linux/linux-dns-parse.c). The workload writes these bytes; the
 * stub runs outside the sandbox. Invariants on every query: the answer
 * fits LXD_ANSWER_MAX, echoes the query's id, is flagged as an answer,
 * says REFUSED for every name that is not one of the plan's and then
 * carries no record, and for an allowed name carries only records of the
 * asked type with that name's addresses; the name reported is lower case
 * and never longer than a host name. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "linux/linux-dns-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct lxp_dest dests[2];
static struct lxp_config cfg;

static void setup(void) {
    if (cfg.dests)
        return;
    strcpy(dests[0].host, "mirror.test");
    dests[0].naddr = 2;
    dests[0].addr[0].family = 4;
    memcpy(dests[0].addr[0].addr, "\xc6\x33\x64\x01", 4);
    dests[0].addr[1].family = 6;
    memcpy(dests[0].addr[1].addr, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
    strcpy(dests[1].host, "a.b");
    dests[1].naddr = 0;
    cfg.dests = dests;
    cfg.ndests = 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (size > 2 * LXD_ANSWER_MAX)
        return 0;
    uint8_t out[LXD_ANSWER_MAX];
    struct lxd_query_info info;
    size_t n = lxd_answer(&cfg, data, size, out, &info);
    if (n > LXD_ANSWER_MAX)
        abort();
    if (strlen(info.name) > LXP_HOST_MAX)
        abort();
    for (const char *p = info.name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            abort();
    if (n == 0)
        return 0;
    if (n < 12 || out[0] != data[0] || out[1] != data[1] || !(out[2] & 0x80))
        abort();
    unsigned an = (unsigned)(out[6] << 8 | out[7]);
    bool allowed = strcmp(info.name, "mirror.test") == 0 || strcmp(info.name, "a.b") == 0;
    if (info.allowed && !allowed)
        abort();
    if (!info.allowed && an)
        abort(); /* nothing about a name that is not the plan's */
    if (info.allowed && (out[3] & 0x0f) != 0)
        abort();
    if (!info.allowed && info.rcode == LXD_RCODE_NOERROR)
        abort();
    if (info.allowed) {
        /* The answers: after the echoed question, each 12 bytes + address. */
        size_t qlen = 12;
        while (qlen < n && out[qlen])
            qlen += out[qlen] + 1u;
        qlen += 5;
        size_t p = qlen;
        for (unsigned i = 0; i < an; i++) {
            if (p + 12 > n)
                abort();
            unsigned type = (unsigned)(out[p + 2] << 8 | out[p + 3]), rdlen = (unsigned)(out[p + 10] << 8 | out[p + 11]);
            if (type != info.qtype || (type == 1 && rdlen != 4) || (type == 28 && rdlen != 16) || (type != 1 && type != 28))
                abort();
            if (p + 12 + rdlen > n)
                abort();
            if (type == 1 && memcmp(out + p + 12, dests[0].addr[0].addr, 4) != 0)
                abort();
            if (type == 28 && memcmp(out + p + 12, dests[0].addr[1].addr, 16) != 0)
                abort();
            p += 12 + rdlen;
        }
        if (p != n)
            abort();
    }
    return 0;
}
