/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <netinet/in.h> on Windows: Winsock's names (plan-net.c, policy checks). */
#ifndef FY_WIN_NETINET_IN_H
#define FY_WIN_NETINET_IN_H
#include <winsock2.h>
#include <ws2tcpip.h>
#endif
