/* Fuzz target: the persisted probe snapshot's own form (lib/caps.c
 * caps_deserialize). A snapshot is read back from a file in the caller's
 * own directory and decides what the host is believed to enforce, so the
 * reader must refuse anything but the exact form. Aborts when an accepted
 * text does not survive the round trip: written out again, read back, and
 * written out once more, the two texts must be the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fy_caps *c = caps_deserialize((const char *)data, size);
    if (!c)
        return 0;
    char *a = caps_serialize(c);
    fy_caps *d = a ? caps_deserialize(a, strlen(a)) : NULL;
    char *b = d ? caps_serialize(d) : NULL;
    if (!a || !d || !b || strcmp(a, b) != 0)
        abort();
    /* The accepted strings hold no byte the form must escape unescaped. */
    for (uint32_t i = 1; i <= FY_CAP_MAX_; i++)
        if (c->e[i].state != CAP_MISSING && c->e[i].state != CAP_PRESENT)
            abort();
    free(a);
    free(b);
    caps_free_internal(c);
    caps_free_internal(d);
    return 0;
}
