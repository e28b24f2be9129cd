/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one rule for a process-wide lock in the child of a fork, header-only
 * because the privileged helper builds lazy.c without util.c or an OS
 * layer: whether *mu was held in the parent by a thread the child does not
 * have (or by the forking thread itself); either way it is free afterwards.
 * util_mutex_reclaim (internal.h) is this for the library's folders. */
#ifndef FY_RECLAIM_H
#define FY_RECLAIM_H

#include <pthread.h>
#include <stdbool.h>

static inline bool mutex_reclaim(pthread_mutex_t *mu) {
    if (pthread_mutex_trylock(mu) == 0) {
        pthread_mutex_unlock(mu);
        return false;
    }
    /* its owner does not exist here: a fresh lock in its place */
    pthread_mutex_init(mu, NULL);
    return true;
}

#endif
