/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard.exe: what the CLI does differently on Windows. Included by
 * forgeyard.c in place of its POSIX headers; defines the few POSIX names
 * it uses whose Windows meaning is plain, and the stop handling: a
 * console ^C or ^Break (SetConsoleCtrlHandler) instead of signals, and a
 * wait on the handle's waitable (fy_handle_get_fd is a HANDLE's value on
 * Windows) instead of poll. */
#ifndef FORGEYARD_CLI_WIN_H
#define FORGEYARD_CLI_WIN_H

#include <errno.h>
#include <io.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include <forgeyard/sandbox.h>

struct utsname {
    char sysname[32], release[64], machine[32];
};

static inline int uname(struct utsname *u) {
    OSVERSIONINFOW v = {sizeof(v)};
    GetVersionExW(&v);
    snprintf(u->sysname, sizeof(u->sysname), "Windows");
    snprintf(u->release, sizeof(u->release), "%lu.%lu.%lu", (unsigned long)v.dwMajorVersion,
             (unsigned long)v.dwMinorVersion, (unsigned long)v.dwBuildNumber);
    SYSTEM_INFO si;
    GetNativeSystemInfo(&si);
    snprintf(u->machine, sizeof(u->machine), "%s",
             si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64 ? "x86_64"
             : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64 ? "aarch64" : "unknown");
    return 0;
}

static inline char *strndup(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}

/* Never root: the CLI's notes about the host uid a root run maps to do
 * not apply. */
static inline int geteuid(void) { return 1; }

/* ^C, ^Break, closing the console: counted; the wait loop cancels. */
static HANDLE stop_event;
static volatile LONG stop_count;

static BOOL WINAPI on_console_stop(DWORD type) {
    (void)type;
    InterlockedIncrement(&stop_count);
    SetEvent(stop_event);
    return TRUE;
}

static int catch_stop_signals(void) {
    if (!(stop_event = CreateEventW(NULL, FALSE, FALSE, NULL)))
        return -1;
    return SetConsoleCtrlHandler(on_console_stop, TRUE) ? 0 : -1;
}

static const char *prog;
static bool stop_seen; /* a stop came (the CLI makes no attempt again after one) */

static int wait_or_cancel(fy_handle *h, fy_result **res, fy_error **err) {
    LONG seen = 0;
    for (;;) {
        int r = fy_handle_process(h, res, err);
        if (r != 0)
            return r;
        uint64_t usec = FY_UNLIMITED;
        fy_handle_get_timeout_usec(h, &usec);
        DWORD ms = usec == FY_UNLIMITED ? INFINITE : (DWORD)(usec > 60000000 ? 60000 : (usec + 999) / 1000);
        HANDLE hs[2] = {(HANDLE)(intptr_t)fy_handle_get_fd(h), stop_event};
        if (WaitForMultipleObjects(2, hs, FALSE, ms) == WAIT_FAILED)
            return -1;
        LONG now = stop_count;
        if (now != seen)
            stop_seen = true;
        if (now != seen && seen++ == 0) {
            fprintf(stderr, "%s: run: interrupted: cancelling the sandbox (again to kill it at once)\n", prog);
            fy_handle_cancel(h, FY_CANCEL_USER, NULL);
        } else if (now > 1) {
            return 0;
        }
    }
}

#endif
