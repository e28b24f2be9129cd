/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pre-started shells (fy_shells_new(3)): a host-owned set of sandboxes
 * made before they are asked for, holding nothing of any attempt; the
 * backend makes, claims and discards them (struct fy_backend_ops,
 * shell_*). This file keeps the rules that are the same for every backend:
 * a shell serves at most one attempt and is discarded, witnessed, when it
 * passed its idle limit, ended, does not fit the claiming plan, when the set
 * is freed, in a forked copy of the host (only forgotten there) and when
 * the library is unloaded. Nothing here starts a process except
 * fy_shells_fill, which the host calls. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "handle.h"
#include "internal.h"

#define SHELLS_MAX 64u
#define SHELLS_IDLE_MIN_USEC 1000ull
#define SHELLS_IDLE_MAX_USEC (3600ull * 1000000ull)
/* A shell leaves by itself this long after the host would discard it: the
 * host discards first, so a claim never races the shell's own exit. */
#define SHELL_SELF_EXIT_SLACK_MS 2000u

struct ready_shell {
    void *b;            /* the backend's shell */
    uint64_t expires;   /* CLOCK_MONOTONIC usec */
};

struct fy_shells {
    int origin_pid;
    fy_prepared *shape;
    const struct fy_backend_ops *backend;
    uint32_t want;
    uint64_t idle_usec;
    pthread_mutex_t mu;
    struct ready_shell ready[SHELLS_MAX];
    uint32_t nready;
    uint32_t making;    /* shells fills are making now, outside the lock */
    uint64_t made, claimed, discarded, left;
    struct fy_shells *prev, *next; /* every live set, for the library's unload */
};

static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fy_shells *all_sets;

/* Under s->mu, in a forked copy of the host: the shells are the parent's;
 * let go of our copies of their fds without touching them. */
static void forget_all(fy_shells *s) {
    for (uint32_t i = 0; i < s->nready; i++)
        s->backend->shell_forget(s->ready[i].b);
    s->nready = 0;
}

/* A fork while another thread held a set's lock (filling it, claiming):
 * the child's copy of the set only ever forgets its shells (lock_set), so
 * its lock is freed for that. The list is walked only if no thread was
 * changing it. */
static void shells_fork_child(void) {
    if (util_mutex_reclaim(&all_mu))
        return;
    /* The copies of the ready shells' sockets and pidfds are let go at
     * once, not at the child's next call into the set (which may never
     * come): a shell sees its host's end of the socket close when the host
     * dies, and a forked child that lives on must not keep it waiting. A
     * set another thread was changing at the fork is left to lock_set. */
    for (fy_shells *s = all_sets; s; s = s->next)
        if (!util_mutex_reclaim(&s->mu))
            forget_all(s);
}

__attribute__((constructor)) static void shells_register_fork(void) { util_on_fork_child(shells_fork_child); }

static void registry_add(fy_shells *s) {
    pthread_mutex_lock(&all_mu);
    s->next = all_sets;
    if (all_sets)
        all_sets->prev = s;
    all_sets = s;
    pthread_mutex_unlock(&all_mu);
}

static void registry_remove(fy_shells *s) {
    pthread_mutex_lock(&all_mu);
    if (s->prev)
        s->prev->next = s->next;
    else if (all_sets == s)
        all_sets = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    pthread_mutex_unlock(&all_mu);
}

/* Under s->mu: discards ready shell i (the last one takes its place). */
static void discard_at(fy_shells *s, uint32_t i) {
    s->left += s->backend->shell_discard(s->ready[i].b);
    s->discarded++;
    s->ready[i] = s->ready[--s->nready];
}

/* Under s->mu: discards what ended or passed its idle limit. */
static void discard_stale(fy_shells *s, uint64_t now) {
    for (uint32_t i = 0; i < s->nready;) {
        if (now >= s->ready[i].expires || s->backend->shell_gone(s->ready[i].b))
            discard_at(s, i);
        else
            i++;
    }
}

/* Locks the set; FY_E_FORKED (the shells forgotten) in a forked copy. */
static int lock_set(fy_shells *s, uint32_t step, fy_error **reterr) {
    pthread_mutex_lock(&s->mu);
    if (s->origin_pid != util_getpid()) {
        forget_all(s);
        pthread_mutex_unlock(&s->mu);
        return err_set(reterr, FY_E_FORKED, step, 0, NULL, "the shells were made by another process");
    }
    return 0;
}

int fy_shells_new(const fy_prepared *prepared, uint32_t count, uint64_t idle_usec, fy_shells **ret,
                  fy_error **reterr) {
    if (!prepared || !ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SPAWN, 0, NULL, "prepared or ret is NULL");
    *ret = NULL;
    if (count < 1 || count > SHELLS_MAX)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, 0, NULL, "count must be 1..%u, not %u", SHELLS_MAX, count);
    if (idle_usec < SHELLS_IDLE_MIN_USEC || idle_usec > SHELLS_IDLE_MAX_USEC)
        return err_set(reterr, FY_E_RANGE, FY_STEP_SPAWN, 0, NULL, "idle_usec must be 1 ms to 1 hour");
    if (prepared->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_SPAWN, 0, NULL, "plan was prepared in another process");
    const struct fy_backend_ops *b = prepared->sel.backend;
    if (!b->shell_make || !b->start_shell || !prepared->plan)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SPAWN, 0, NULL,
                       "the %s backend cannot make pre-started shells", b->name);
    /* Whether this plan's sandbox can be made in advance at all is the
     * backend's to say: it refuses a shape it cannot make (fits is false
     * for a shell it would refuse to make). */
    fy_shells *s = calloc(1, sizeof(*s));
    if (!s)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    s->origin_pid = util_getpid();
    s->shape = prepared_ref(prepared);
    s->backend = b;
    s->want = count;
    s->idle_usec = idle_usec;
    pthread_mutex_init(&s->mu, NULL);
    registry_add(s);
    *ret = s;
    return 0;
}

int fy_shells_fill(fy_shells *s, fy_error **reterr) {
    if (!s)
        return err_set(reterr, FY_E_INVAL, FY_STEP_SPAWN, 0, NULL, "shells is NULL");
    int r = lock_set(s, FY_STEP_SPAWN, reterr);
    if (r < 0)
        return r;
    uint32_t idle_ms = (uint32_t)(s->idle_usec / 1000) + SHELL_SELF_EXIT_SLACK_MS;
    discard_stale(s, util_now_usec());
    /* Made outside the lock (a VM clone takes a restore and a warm-up): a
     * claim in another thread never waits for one; fills in several
     * threads make no more than the set keeps (making counts those under
     * way, so the set's array always has their room). */
    while (s->nready + s->making < s->want) {
        s->making++;
        pthread_mutex_unlock(&s->mu);
        void *b = NULL;
        r = s->backend->shell_make(s->shape->plan, idle_ms, &b, reterr);
        pthread_mutex_lock(&s->mu);
        s->making--;
        if (r < 0)
            break;
        s->ready[s->nready++] = (struct ready_shell){b, util_now_usec() + s->idle_usec};
        s->made++;
    }
    int n = (int)s->nready;
    pthread_mutex_unlock(&s->mu);
    return r < 0 ? r : n;
}

int fy_start_shell(const fy_prepared *prepared, fy_shells *s, fy_handle **ret, fy_error **reterr) {
    if (!s || !prepared || !ret)
        return s ? err_set(reterr, FY_E_INVAL, FY_STEP_SPAWN, 0, NULL, "prepared or ret is NULL")
                 : fy_start(prepared, ret, reterr);
    if (prepared->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_SPAWN, 0, NULL, "plan was prepared in another process");
    uint64_t t0 = util_now_usec();
    int r = lock_set(s, FY_STEP_SPAWN, reterr);
    if (r < 0)
        return r;
    void *taken = NULL;
    uint64_t now = util_now_usec();
    discard_stale(s, now);
    /* The newest first: the furthest from its idle limit. A shell that does
     * not fit this plan is discarded, never kept for another. */
    while (s->nready && !taken) {
        struct ready_shell *rs = &s->ready[s->nready - 1];
        if (prepared->sel.backend == s->backend && s->backend->shell_fits(rs->b, prepared->plan)) {
            taken = rs->b;
            s->nready--;
            s->claimed++;
        } else {
            discard_at(s, s->nready - 1);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (!taken)
        return fy_start(prepared, ret, reterr);
    uint64_t claim = util_now_usec() - t0;
    r = handle_start(prepared, taken, &claim, ret, reterr);
    if (r != BACKEND_SHELL_LOST)
        return r;
    /* It ended between its last look and its claim (killed, its idle
     * limit): discarded, never handed out; the attempt starts cold. */
    pthread_mutex_lock(&s->mu);
    s->claimed--;
    s->discarded++;
    pthread_mutex_unlock(&s->mu);
    return fy_start(prepared, ret, reterr);
}

int fy_shells_stat(fy_shells *s, uint32_t what, uint64_t *ret_value) {
    if (!s || !ret_value)
        return FY_E_INVAL;
    int r = lock_set(s, FY_STEP_SPAWN, NULL);
    if (r < 0)
        return r;
    discard_stale(s, util_now_usec());
    r = 0;
    switch (what) {
    case FY_SHELLS_READY: *ret_value = s->nready; break;
    case FY_SHELLS_MADE: *ret_value = s->made; break;
    case FY_SHELLS_CLAIMED: *ret_value = s->claimed; break;
    case FY_SHELLS_DISCARDED: *ret_value = s->discarded; break;
    case FY_SHELLS_LEFT: *ret_value = s->left; break;
    default: r = FY_E_UNSUPPORTED; break;
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* Every shell of the set discarded (forgotten in a forked copy). */
static void discard_all(fy_shells *s) {
    pthread_mutex_lock(&s->mu);
    if (s->origin_pid != util_getpid())
        forget_all(s);
    while (s->nready)
        discard_at(s, s->nready - 1);
    pthread_mutex_unlock(&s->mu);
}

void fy_shells_free(fy_shells *s) {
    if (!s)
        return;
    registry_remove(s);
    discard_all(s);
    pthread_mutex_destroy(&s->mu);
    prepared_unref(s->shape);
    free(s);
}

/* The library is being unloaded (dlclose, or the host's exit): no shell
 * outlives the code that owns it. The sets stay allocated: a host that
 * frees one later finds it empty. */
__attribute__((destructor)) static void shells_unload(void) {
    pthread_mutex_lock(&all_mu);
    for (fy_shells *s = all_sets; s; s = s->next)
        discard_all(s);
    pthread_mutex_unlock(&all_mu);
}
