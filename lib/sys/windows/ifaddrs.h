/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <ifaddrs.h> on Windows: not implemented. plan-net.c lists the host's
 * addresses only for network mode restricted, which no Windows backend
 * enforces: the listing fails with ENOSYS, so such a policy is refused at
 * fy_prepare (FY_E_UNSUPPORTED), never planned half-checked. */
#ifndef FY_WIN_IFADDRS_H
#define FY_WIN_IFADDRS_H
#include <errno.h>
#include <winsock2.h>

struct ifaddrs {
    struct ifaddrs *ifa_next;
    char *ifa_name;
    unsigned int ifa_flags;
    struct sockaddr *ifa_addr;
    struct sockaddr *ifa_netmask;
    struct sockaddr *ifa_broadaddr;
};

static inline int getifaddrs(struct ifaddrs **ifap) {
    *ifap = NULL;
    errno = ENOSYS;
    return -1;
}

static inline void freeifaddrs(struct ifaddrs *ifa) { (void)ifa; }
#endif
