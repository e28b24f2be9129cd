/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <sys/socket.h> on Windows: Winsock's names (plan-net.c, policy checks). */
#ifndef FY_WIN_SYS_SOCKET_H
#define FY_WIN_SYS_SOCKET_H
#include <winsock2.h>
#include <ws2tcpip.h>
#endif
