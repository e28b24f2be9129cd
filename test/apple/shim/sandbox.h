/* Compile-check shim (Linux): the declarations of macOS's <sandbox.h> that
 * lib/apple/ uses, as the macOS SDK declares them. Never linked. */
#ifndef FY_SHIM_SANDBOX_H
#define FY_SHIM_SANDBOX_H
#include <stdint.h>
#define SANDBOX_NAMED 0x0001
int sandbox_init(const char *profile, uint64_t flags, char **errorbuf)
    __attribute__((deprecated("sandbox_init is deprecated")));
void sandbox_free_error(char *errorbuf) __attribute__((deprecated("sandbox_free_error is deprecated")));
#endif
