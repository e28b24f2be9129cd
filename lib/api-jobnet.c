/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Job networks (fy_jobnet_new(3)): a host-owned object naming the job's
 * members. The rules that are the same for every backend live here: which
 * names exist and their addresses (member i is 100.80.0.(i+1) on the job's
 * /24 and fd66:7973:2::(i+1) on its /120), one running attempt per member name, the backend's network made
 * at the first member's start (the host's fy_start: nothing is made behind
 * its back) and removed, witnessed, once the host shut it down or freed it
 * and no member runs. The backend (ops.job_*) makes and removes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <forgeyard/fy-jobnet.h>

#include "backend.h"
#include "handle.h"
#include "internal.h"
#include "jobnet.h"

struct fy_jobnet {
    int origin_pid;
    pthread_mutex_t mu;
    int refs;                         /* the host's (until fy_jobnet_free) + one per plan */
    uint32_t n;
    char **names;
    bool *running;                    /* per member: an attempt holds its place */
    uint32_t nrunning;
    bool closed;                      /* shut down or freed by the host: no more starts */
    bool freed;                       /* the host let go */
    const struct fy_backend_ops *backend;
    void *b;                          /* the backend's network, or NULL */
    uint64_t joined, left;
    char *hosts;
};

int jobnet_index_of(const struct fy_jobnet *jn, const char *member) {
    for (uint32_t i = 0; member && i < jn->n; i++)
        if (strcmp(jn->names[i], member) == 0)
            return (int)i;
    return -1;
}

const char *jobnet_hosts(const struct fy_jobnet *jn) { return jn->hosts; }

static void destroy(fy_jobnet *jn) {
    for (uint32_t i = 0; i < jn->n; i++)
        free(jn->names[i]);
    free(jn->names);
    free(jn->running);
    free(jn->hosts);
    pthread_mutex_destroy(&jn->mu);
    free(jn);
}

struct fy_jobnet *jobnet_ref(struct fy_jobnet *jn) {
    pthread_mutex_lock(&jn->mu);
    jn->refs++;
    pthread_mutex_unlock(&jn->mu);
    return jn;
}

void jobnet_unref(struct fy_jobnet *jn) {
    if (!jn)
        return;
    pthread_mutex_lock(&jn->mu);
    bool last = --jn->refs == 0;
    pthread_mutex_unlock(&jn->mu);
    if (last)
        destroy(jn);
}

int fy_jobnet_new(const char *const *members, fy_jobnet **ret, fy_error **reterr) {
    if (!members || !ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JOBNET, 0, NULL, "members or ret is NULL");
    *ret = NULL;
    uint32_t n = 0;
    while (n <= FY_JOBNET_MAX_MEMBERS && members[n])
        n++;
    if (n == 0 || n > FY_JOBNET_MAX_MEMBERS)
        return err_set(reterr, FY_E_RANGE, FY_STEP_JOBNET, 0, NULL, "a job network has 1 to %u members%s",
                       FY_JOBNET_MAX_MEMBERS, n ? ", not more" : ", not none");
    for (uint32_t i = 0; i < n; i++) {
        char loc[48];
        snprintf(loc, sizeof(loc), "members[%u]", (unsigned)i);
        int r = check_job_member(members[i], loc, reterr);
        if (r < 0)
            return r;
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(members[k], members[i]) == 0)
                return err_set(reterr, FY_E_POLICY, FY_STEP_JOBNET, 0, loc,
                               "member \"%s\" is declared twice (members[%u] too): a name is one address",
                               members[i], (unsigned)k);
    }
    fy_jobnet *jn = calloc(1, sizeof(*jn));
    struct strbuf hosts;
    strbuf_init(&hosts);
    if (!jn || !(jn->names = calloc(n, sizeof(char *))) || !(jn->running = calloc(n, sizeof(bool)))) {
        strbuf_free(&hosts);
        if (jn) {
            free(jn->names);
            free(jn);
        }
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JOBNET, 0, NULL, "out of memory");
    }
    pthread_mutex_init(&jn->mu, NULL);
    jn->origin_pid = util_getpid();
    jn->refs = 1;
    bool oom = false;
    for (uint32_t i = 0; i < n; i++) {
        oom = oom || !(jn->names[i] = util_strdup(members[i]));
        jn->n = i + 1;
        strbuf_printf(&hosts, "100.80.0.%u\t%s\n", (unsigned)(i + 1), members[i]);
    }
    /* IPv6 after every IPv4 line (fd66:7973:2::(i+1), linux-jobnet.h):
     * glibc's getaddrinfo collects every line of a name and orders IPv4
     * first anyway (RFC 6724's default table ranks a ULA below IPv4);
     * gethostbyname and AF_INET lookups see the IPv4 line only. */
    for (uint32_t i = 0; i < n; i++)
        strbuf_printf(&hosts, "fd66:7973:2::%x\t%s\n", (unsigned)(i + 1), members[i]);
    jn->hosts = strbuf_steal(&hosts);
    if (oom || !jn->hosts) {
        destroy(jn);
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JOBNET, 0, NULL, "out of memory");
    }
    *ret = jn;
    return 0;
}

/* Under jn->mu: the backend's network removed (none runs). */
static void remove_network(fy_jobnet *jn) {
    if (!jn->b)
        return;
    if (jn->origin_pid == util_getpid())
        jn->left += jn->backend->job_free(jn->b);
    else
        jn->backend->job_forget(jn->b); /* a forked copy: the parent's to remove */
    jn->b = NULL;
}

int jobnet_join(fy_handle *h, fy_error **reterr) {
    const fy_prepared *pr = h->pr;
    fy_jobnet *jn = pr->jobnet;
    pthread_mutex_lock(&jn->mu);
    int r = 0;
    if (jn->origin_pid != util_getpid())
        r = err_set(reterr, FY_E_FORKED, FY_STEP_JOBNET, 0, NULL, "the job network was made by another process");
    else if (jn->closed)
        r = err_set(reterr, FY_E_STATE, FY_STEP_JOBNET, 0, NULL,
                    "the job network was %s: no member joins it any more", jn->freed ? "freed" : "shut down");
    else if (jn->running[pr->job_index])
        r = err_set(reterr, FY_E_STATE, FY_STEP_JOBNET, 0, "$.network.job.member",
                    "member \"%s\" runs already on this job network (one attempt per member at a time)",
                    jn->names[pr->job_index]);
    else if (jn->b && jn->backend != pr->sel.backend && jn->backend->job_make != pr->sel.backend->job_make)
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_JOBNET, 0, NULL,
                    "the job network runs on the %s backend, this member on %s", jn->backend->name,
                    pr->sel.backend->name);
    else if (!jn->b && (r = pr->sel.backend->job_make(jn->n, &jn->b, reterr)) == 0)
        jn->backend = pr->sel.backend;
    if (r == 0) {
        jn->running[pr->job_index] = true;
        jn->nrunning++;
        jn->joined++;
        jn->refs++; /* (the handle's) */
        h->job = jn->b;
        h->jobnet = jn;
        h->job_index = pr->job_index;
    }
    pthread_mutex_unlock(&jn->mu);
    return r;
}

void jobnet_leave(fy_handle *h, uint64_t left) {
    fy_jobnet *jn = h->jobnet;
    if (!jn)
        return;
    h->jobnet = NULL;
    h->job = NULL;
    pthread_mutex_lock(&jn->mu);
    jn->running[h->job_index] = false;
    jn->nrunning--;
    jn->left += left;
    if (jn->closed && jn->nrunning == 0)
        remove_network(jn);
    pthread_mutex_unlock(&jn->mu);
    jobnet_unref(jn);
}

int fy_jobnet_shutdown(fy_jobnet *jn, fy_error **reterr) {
    if (!jn)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JOBNET, 0, NULL, "jobnet is NULL");
    pthread_mutex_lock(&jn->mu);
    int r;
    if (jn->origin_pid != util_getpid()) {
        r = err_set(reterr, FY_E_FORKED, FY_STEP_JOBNET, 0, NULL, "the job network was made by another process");
    } else if (jn->nrunning) {
        r = err_set(reterr, FY_E_STATE, FY_STEP_JOBNET, 0, NULL, "%u member(s) of the job network still run",
                    (unsigned)jn->nrunning);
    } else {
        jn->closed = true;
        uint64_t before = jn->left;
        remove_network(jn);
        r = (int)(jn->left - before);
    }
    pthread_mutex_unlock(&jn->mu);
    return r;
}

int fy_jobnet_stat(fy_jobnet *jn, uint32_t what, uint64_t *ret_value) {
    if (!jn || !ret_value)
        return FY_E_INVAL;
    pthread_mutex_lock(&jn->mu);
    int r = 0;
    switch (what) {
    case FY_JOBNET_MEMBERS: *ret_value = jn->n; break;
    case FY_JOBNET_RUNNING: *ret_value = jn->nrunning; break;
    case FY_JOBNET_JOINED: *ret_value = jn->joined; break;
    case FY_JOBNET_UP: *ret_value = jn->b != NULL; break;
    case FY_JOBNET_LEFT: *ret_value = jn->left; break;
    default: r = FY_E_UNSUPPORTED; break;
    }
    pthread_mutex_unlock(&jn->mu);
    return r;
}

void fy_jobnet_free(fy_jobnet *jn) {
    if (!jn)
        return;
    pthread_mutex_lock(&jn->mu);
    jn->closed = jn->freed = true;
    if (jn->nrunning == 0)
        remove_network(jn);
    pthread_mutex_unlock(&jn->mu);
    jobnet_unref(jn);
}
