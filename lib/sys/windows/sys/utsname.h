/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* uname on Windows (policy-platform.c matches platform properties
 * against the host): the system name, version and machine. */
#ifndef FY_WIN_SYS_UTSNAME_H
#define FY_WIN_SYS_UTSNAME_H
#include <stdio.h>
#include <windows.h>

struct utsname {
    char sysname[32], nodename[64], release[64], version[64], machine[32];
};

static inline int uname(struct utsname *u) {
    OSVERSIONINFOW v = {sizeof(v)};
    GetVersionExW(&v);
    SYSTEM_INFO si;
    GetNativeSystemInfo(&si);
    snprintf(u->sysname, sizeof(u->sysname), "Windows");
    DWORD n = sizeof(u->nodename);
    if (!GetComputerNameA(u->nodename, &n))
        u->nodename[0] = 0;
    snprintf(u->release, sizeof(u->release), "%lu.%lu.%lu", (unsigned long)v.dwMajorVersion,
             (unsigned long)v.dwMinorVersion, (unsigned long)v.dwBuildNumber);
    snprintf(u->version, sizeof(u->version), "%s", u->release);
    snprintf(u->machine, sizeof(u->machine), "%s",
             si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64 ? "x86_64"
             : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64 ? "aarch64" : "unknown");
    return 0;
}
#endif
