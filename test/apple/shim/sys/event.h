/* Compile-check shim (Linux): the kqueue declarations of macOS's
 * <sys/event.h> that lib/apple/ uses. Never linked. */
#ifndef FY_SHIM_SYS_EVENT_H
#define FY_SHIM_SYS_EVENT_H
#include <stdint.h>
#include <time.h>
struct kevent {
    uintptr_t ident;
    int16_t filter;
    uint16_t flags;
    uint32_t fflags;
    intptr_t data;
    void *udata;
};
#define EVFILT_PROC (-5)
#define EV_ADD 0x0001
#define EV_DELETE 0x0002
#define EV_ONESHOT 0x0010
#define EV_ERROR 0x4000
#define NOTE_EXIT 0x80000000U
#define NOTE_EXITSTATUS 0x04000000U
#define EV_SET(kevp, a, b, c, d, e, f)        \
    do {                                      \
        struct kevent *__kevp__ = (kevp);     \
        __kevp__->ident = (a);                \
        __kevp__->filter = (int16_t)(b);      \
        __kevp__->flags = (uint16_t)(c);      \
        __kevp__->fflags = (uint32_t)(d);     \
        __kevp__->data = (e);                 \
        __kevp__->udata = (f);                \
    } while (0)
int kqueue(void);
int kevent(int kq, const struct kevent *changelist, int nchanges, struct kevent *eventlist, int nevents,
           const struct timespec *timeout);
#endif
