/* A backend that runs nothing, written the way a real one is: only
 * backend.h, compile from the platform-neutral plan, a state per handle in
 * h->b, and a report to the one outcome logic (attempt_finish). It proves
 * that a backend is a folder and a table entry, and lets the unit tests
 * drive the whole public lifecycle without a sandbox.
 *
 * argv scripts the workload: {"exit", "N"} exits with N at once;
 * {"hang"} runs until the library terminates it (cancel, timeout). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-backend.h"

struct fake_plan {
    const struct fy_plan *np;
    char describe[256];
};

struct fake_run {
    bool hang, terminated;
    int exit_code;
    uint64_t t_begin;
};

static int fr_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    (void)caps;
    /* What it refuses, it refuses from the plan, with the plan's words. */
    if (np->net_mode != FY_NET_DENY)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode", "fake-run only denies networks");
    struct fake_plan *fp = calloc(1, sizeof(*fp));
    if (!fp)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    fp->np = np;
    const struct plan_entry *build = plan_find_role(np, PR_BUILD);
    snprintf(fp->describe, sizeof(fp->describe),
             "{\"isolation\":{\"entries\":%zu,\"build\":\"%s\",\"workdir\":\"%s\"},\"limits\":{}}", np->nentries,
             build ? build->host : "tmpfs", np->workdir);
    *ret = fp;
    return 0;
}

static void fr_plan_free(void *plan) { free(plan); }

static int fr_start(fy_handle *h, fy_error **reterr) {
    const struct fake_plan *fp = h->pr->plan;
    struct fake_run *fr = calloc(1, sizeof(*fr));
    if (!fr)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    const char *const *argv = (const char *const *)fp->np->argv;
    fr->hang = strcmp(argv[0], "hang") == 0;
    fr->exit_code = argv[1] ? atoi(argv[1]) : 0;
    fr->t_begin = util_now_usec();
    h->b = fr;
    return 0;
}

static int fr_process(fy_handle *h, fy_error **reterr) {
    (void)reterr;
    struct fake_run *fr = h->b;
    const struct fake_plan *fp = h->pr->plan;
    if (fr->hang && !fr->terminated)
        return 0;
    fy_result *r = result_new();
    if (!r)
        return 0; /* retried on the next call */
    struct attempt_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.exit_seen = true;
    rep.wstatus = fr->hang ? SIGKILL : (fr->exit_code & 0xff) << 8;
    rep.t_isolation = rep.t_filesystem = rep.t_exec = fr->t_begin;
    rep.t_exit = rep.t_ended = rep.t_cleanup_begin = rep.t_cleanup_end = util_now_usec();
    rep.isolation_json = util_asprintf("{\"backend\":\"fake-run\",\"entries\":%zu}", fp->np->nentries);
    rep.limits_json = util_strdup("{}");
    attempt_finish(h, &rep, r);
    return 1;
}

static void fr_terminate(fy_handle *h) { ((struct fake_run *)h->b)->terminated = true; }

static void fr_destroy(fy_handle *h) {
    free(h->b);
    h->b = NULL;
}

static int fr_get_fd(fy_handle *h) { return h->wake_fd; }
static int fr_stdio_fd(fy_handle *h, uint32_t stream) { return FY_E_STATE; }
static uint64_t fr_next_deadline(fy_handle *h) { return h->deadline; }
static const char *fr_describe(const void *plan) { return ((const struct fake_plan *)plan)->describe; }
static bool fr_usable(const fy_caps *c, struct strbuf *why) { return true; }
static bool fr_enforce(const fy_caps *c, uint32_t control, const char **why) { return true; }

const struct fy_backend_ops fake_run = {
    .version = FY_BACKEND_OPS_VERSION,
    .name = "fake-run",
    .level = FY_LEVEL_CONTAINER,
    .cost = 30,
    .usable = fr_usable,
    .can_enforce = fr_enforce,
    .compile = fr_compile,
    .plan_free = fr_plan_free,
    .start = fr_start,
    .process = fr_process,
    .terminate = fr_terminate,
    .destroy = fr_destroy,
    .forget = fr_destroy,
    .get_fd = fr_get_fd,
    .stdio_fd = fr_stdio_fd,
    .next_deadline = fr_next_deadline,
    .describe = fr_describe,
};
