/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <netdb.h> on Windows: Winsock's names (plan-net.c, policy checks). */
#ifndef FY_WIN_NETDB_H
#define FY_WIN_NETDB_H
#include <winsock2.h>
#include <ws2tcpip.h>
#endif
