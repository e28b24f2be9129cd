/* Fuzz target: the path and destination validators behind every mount and
 * every egress rule (check_host_path, check_sandbox_target,
 * check_device_path, check_destination_host). Whatever they accept must
 * satisfy the invariants the mount plan relies on. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void path_invariants(const char *p) {
    size_t n = strlen(p);
    if (p[0] != '/' || n > 4095 || (n > 1 && p[n - 1] == '/') || strstr(p, "//"))
        abort();
    for (const unsigned char *c = (const unsigned char *)p; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            abort();
    for (const char *s = p; (s = strstr(s, "/.")); s++)
        if (s[2] == '\0' || s[2] == '/' || (s[2] == '.' && (s[3] == '\0' || s[3] == '/')))
            abort();
}

static int within(const char *p, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > 8192)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    uint8_t which = data[0] % 4;
    fy_error *e = NULL;
    int r;
    switch (which) {
    case 0:
        r = check_host_path(s, "$.x", &e);
        if (r == 0) {
            path_invariants(s);
            if (!strcmp(s, "/") || within(s, "/proc") || within(s, "/sys") || within(s, "/dev"))
                abort();
        }
        break;
    case 1:
        r = check_sandbox_target(s, "$.x", &e);
        if (r == 0) {
            path_invariants(s);
            if (!strcmp(s, "/") || within(s, "/proc") || within(s, "/sys") || within(s, "/dev") ||
                within(s, "/run/secrets") || within(s, "/work/source") || within(s, "/work/build") ||
                within(s, "/work/output") || within(s, "/toolchains") || within("/etc", s) || within("/tmp", s))
                abort();
        }
        break;
    case 2:
        r = check_device_path(s, "$.x", &e);
        if (r == 0) {
            path_invariants(s);
            if (!within(s, "/dev") || !strcmp(s, "/dev") || !strcmp(s, "/dev/mem"))
                abort();
        }
        break;
    default:
        r = check_destination_host(s, "$.x", &e);
        if (r == 0) {
            /* A CIDR must have a prefix in range and no host bits. */
            const char *slash = strchr(s, '/');
            if (slash) {
                int prefix = atoi(slash + 1);
                if (prefix <= 0 || prefix > 128)
                    abort();
            }
            if (strlen(s) > 257)
                abort();
        }
        break;
    }
    if (r < 0 && (!e || !e->location || strcmp(e->location, "$.x") != 0 || !e->message))
        abort(); /* every rejection names the location and the reason */
    fy_error_free(e);
    free(s);
    return 0;
}
