/* Compile-check shim (Linux): glibc's <spawn.h> plus the Apple extensions
 * lib/apple/ uses. Never linked. */
#ifndef FY_SHIM_SPAWN_H
#define FY_SHIM_SPAWN_H
#include_next <spawn.h>
#define POSIX_SPAWN_SETEXEC 0x0040
#define POSIX_SPAWN_CLOEXEC_DEFAULT 0x4000
#endif
