/* Fuzz target: the state-directory record parser used by fy_gc. A record is
 * read from a directory the library owns, but gc acts on what it says
 * (kills, rmdir, recursive removal), so the parser must refuse anything
 * but the exact format and never accept a path outside what gc may touch.
 * A "pidns" line (the owner's pid namespace: gc leaves a record of another
 * namespace alone) is accepted once, right after the owner, as a positive
 * number without sign or leading zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linux/linux-state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int starts(const char *p, size_t n, const char *prefix) {
    size_t l = strlen(prefix);
    return n >= l && memcmp(p, prefix, l) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct state_record_view v;
    if (state_parse((const char *)data, size, &v) < 0)
        return 0;
    /* Accepted: every path must be one gc may touch. */
    if (v.owner <= 0 || v.sandbox < 0 || (v.sandbox == 0 && v.sandbox_start) || v.ncg > 16)
        abort();
    if (v.owner_pidns && !memmem(data, size, "\npidns ", 7))
        abort();
    for (size_t i = 0; i < v.ncg; i++) {
        if (!starts(v.cgroups[i], v.cglen[i], "/sys/fs/cgroup/") || memchr(v.cgroups[i], '\n', v.cglen[i]))
            abort();
        const char *base = v.cgroups[i] + v.cglen[i];
        while (base > v.cgroups[i] && base[-1] != '/')
            base--;
        if (!starts(base, (size_t)(v.cgroups[i] + v.cglen[i] - base), "forgeyard-"))
            abort();
        for (size_t k = 0; k + 3 < v.cglen[i]; k++)
            if (memcmp(v.cgroups[i] + k, "/../", 4) == 0)
                abort();
    }
    if (v.scratch && !starts(v.scratch, v.scratchlen, "/dev/shm/forgeyard-attempt-") &&
        !starts(v.scratch, v.scratchlen, "/tmp/forgeyard-attempt-"))
        abort();
    return 0;
}
