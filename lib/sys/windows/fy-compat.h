/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Included first in every core and backend file of the Windows build (the
 * -include of lib/meson.build): the POSIX names core uses whose Windows
 * meaning is fixed, so core compiles unchanged. Anything with a different
 * form goes through os.h instead. */
#ifndef FY_WIN_COMPAT_H
#define FY_WIN_COMPAT_H

#include <fcntl.h>
#include <sys/stat.h>
#include <errno.h>

/* Descriptors of the CRT are never inherited unless asked (the backend
 * lists the handles a child gets: PROC_THREAD_ATTRIBUTE_HANDLE_LIST). */
#ifndef O_CLOEXEC
#define O_CLOEXEC _O_NOINHERIT
#endif
#define O_NOCTTY 0
/* (no FIFO to wait on an open of: the CRT's files never block there) */
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
/* The CRT's stat sees no symbolic links or reparse points as such: a link
 * reads as what it points to (docs/windows.md). */
#define O_NOFOLLOW 0
#define lstat stat
#define S_ISLNK(m) 0
#define S_ISSOCK(m) 0
#ifndef S_ISFIFO
#define S_ISFIFO(m) (((m) & _S_IFMT) == _S_IFIFO)
#endif
#ifndef S_ISBLK
#define S_ISBLK(m) 0
#endif
/* No POSIX ids on Windows; the types exist for the headers that name them. */
typedef unsigned int uid_t;
typedef unsigned int gid_t;
/* No signals end a Windows process (attempt.c names SIGSYS). */
#define SIGSYS 31
/* readlink: never reached (S_ISLNK is 0); fails as on a non-link. */
#define readlink(p, b, n) ((void)(p), (void)(b), (void)(n), errno = EINVAL, -1)

#endif
