/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Wait statuses on Windows: a process has an exit code and no signals.
 * The Windows backend reports the exit code itself as the status, so the
 * one outcome logic (attempt.c) reads it unchanged (all 32 bits). */
#ifndef FY_WIN_SYS_WAIT_H
#define FY_WIN_SYS_WAIT_H
#define WIFEXITED(s) 1
#define WEXITSTATUS(s) ((int)(s))
#define WIFSIGNALED(s) 0
#define WTERMSIG(s) 0
#endif
