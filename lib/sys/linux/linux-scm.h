/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One message on a unix socket with at most one descriptor along
 * (SCM_RIGHTS): the form every descriptor hand-off in the tree takes (the
 * helper's replies and its disposer, the library's helper requests, QMP's
 * getfd, the helper tests). Header-only, so that the helper program and
 * the tests, which do not link the library, share it too. */
#ifndef FY_LINUX_SCM_H
#define FY_LINUX_SCM_H

#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* len bytes of buf on sock with fd (when >= 0) as SCM_RIGHTS; flags are
 * sendmsg's (MSG_NOSIGNAL is always added). What sendmsg returns. */
static inline ssize_t scm_send_one(int sock, const void *buf, size_t len, int fd, int flags) {
    struct iovec iov = {(void *)buf, len};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        mh.msg_control = u.b;
        mh.msg_controllen = sizeof(u.b);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
}

#endif
