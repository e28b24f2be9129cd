/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OS layer (os.h) on Windows: a waitable is a HANDLE's value; the
 * wakeup is a manual-reset event; waiting is WaitForMultipleObjects. */
#include <errno.h>
#include <io.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <windows.h>

#include "os.h"
#include "sys/utsname.h"

int os_open_no_links(const char *path, int flags) {
    int fd = open(path, flags); /* (no symbolic links a policy's path could name here) */
    return fd >= 0 ? fd : -errno;
}

bool os_fd_on_kernel_fs(int fd) {
    (void)fd;
    return false;
}

/* (no personalities here) */
int os_uname(struct utsname *u) { return uname(u); }

static HANDLE as_handle(int w) { return (HANDLE)(intptr_t)w; }

void os_on_fork_child(void (*fn)(void)) { (void)fn; /* no fork on Windows */ }

/* (Nothing that caches runs on Windows: actions, images and VMs are
 * POSIX-only.) */
char *os_cache_dir(const char *override, const char *leaf) {
    (void)override;
    (void)leaf;
    errno = ENOSYS;
    return NULL;
}

int os_mkdir_parents(const char *path, mode_t mode) {
    (void)path;
    (void)mode;
    return -ENOSYS;
}

/* (No signals to keep from the thread; the scheduler places it.) */
int os_thread_start(void *th, bool detached, bool beside, void *(*fn)(void *), void *arg) {
    (void)beside;
    pthread_t t;
    int e = pthread_create(&t, NULL, fn, arg);
    if (e)
        return e;
    if (detached)
        pthread_detach(t);
    else
        *(pthread_t *)th = t;
    return 0;
}

int os_wake_open(void) {
    HANDLE ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (!ev)
        return -EIO;
    return (int)(intptr_t)ev;
}

void os_wake_signal(int w) { SetEvent(as_handle(w)); }
void os_wake_drain(int w) { ResetEvent(as_handle(w)); }

void os_wake_close(int w) {
    if (w >= 0)
        CloseHandle(as_handle(w));
}

int os_wait2(int a, int b, int ms) {
    HANDLE hs[2];
    DWORD n = 0;
    if (a >= 0)
        hs[n++] = as_handle(a);
    if (b >= 0)
        hs[n++] = as_handle(b);
    DWORD r = n ? WaitForMultipleObjects(n, hs, FALSE, ms < 0 ? INFINITE : (DWORD)ms)
                : (Sleep(ms < 0 ? INFINITE : (DWORD)ms), WAIT_TIMEOUT);
    return r == WAIT_FAILED ? -EIO : 0;
}

/* CRT descriptors: _dup makes a non-inheritable copy only through the OS
 * handle, so the duplicate is made there and wrapped again. */
int os_dup_cloexec(int fd) {
    intptr_t oh = _get_osfhandle(fd);
    HANDLE dup;
    if (oh == -1)
        return -EBADF;
    if (!DuplicateHandle(GetCurrentProcess(), (HANDLE)oh, GetCurrentProcess(), &dup, 0, FALSE,
                         DUPLICATE_SAME_ACCESS))
        return -EIO;
    int d = _open_osfhandle((intptr_t)dup, 0);
    if (d < 0) {
        CloseHandle(dup);
        return -EMFILE;
    }
    return d;
}

char **os_environ(void) { return _environ; }
