/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <net/if.h> on Windows: the interface flags plan-net.c reads. */
#ifndef FY_WIN_NET_IF_H
#define FY_WIN_NET_IF_H
#include <winsock2.h>
#include <ws2tcpip.h>
#ifndef IFF_BROADCAST
#define IFF_BROADCAST 0x2
#endif
#ifndef IFF_LOOPBACK
#define IFF_LOOPBACK 0x8
#endif
#endif
