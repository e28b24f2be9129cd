/* Compile-check shim (Linux): glibc's <unistd.h> plus what macOS's declares
 * besides that lib/apple/ uses. Never linked. */
#ifndef FY_SHIM_UNISTD_H
#define FY_SHIM_UNISTD_H
#include_next <unistd.h>
#include <sys/types.h>
#define _CS_DARWIN_USER_TEMP_DIR 65537
int setgroups(int ngroups, const gid_t *gidset);
#endif
