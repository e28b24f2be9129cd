/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* inet_pton on Windows: Winsock's (ws2_32), which needs no WSAStartup. */
#ifndef FY_WIN_ARPA_INET_H
#define FY_WIN_ARPA_INET_H
#include <winsock2.h>
#include <ws2tcpip.h>
#endif
