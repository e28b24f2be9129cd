/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The qualification suite behind fy_qualify and `forgeyard test` (suite
 * version FY_QUALIFY_SUITE_VERSION). Every probe runs real sandboxes,
 * negotiated from the caller's policy, that do what a hostile workload
 * would do, and records what was observed: the errno of each denial, the
 * syscall a violation names, the stage timings, what a later attempt and
 * the host could still see.
 *
 * Benign by construction: the suite only creates things of its own (a
 * directory TMP/forgeyard-qualify-XXXXXX holding the state directory of its
 * attempts, a host-only file and a Unix socket; a TCP listener on an
 * ephemeral 127.0.0.1 port), only stats the host's control sockets, and the
 * privileged operations it attempts from inside are chosen to be harmless
 * even where they are not denied (a mount onto a path that does not exist,
 * kexec_load with an invalid flag, init_module of nothing, PTRACE_SEIZE,
 * which does not stop the tracee).
 *
 * Observation inside a sandbox needs no helper binary: /bin/sh snippets
 * print one line per check, and perl (perl-base, essential on Debian) issues
 * the raw syscalls that have no shell tool and prints the numeric errno.
 *
 * The probes are Linux-specific (/proc, /sys/fs/cgroup, syscall numbers);
 * other builds return FY_E_UNSUPPORTED. Linux specifics reach the sandbox
 * only through the public API and the internal policy hooks. */
#include "config.h"

#include <jansson.h>

#include "internal.h"
#include "policy.h"

#include "qualify.h"
#include "linux-backend.h"


#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define DELAY_USEC          150000u     /* the controlled delay of the stage probes */
#define ATTEMPT_WALL_USEC   30000000u   /* no attempt of the suite may run longer */
#define ATTEMPT_GRACE_USEC  1000000u    /* SIGTERM to SIGKILL when the suite cancels */
#define WAIT_USEC           20000000u   /* how long the suite waits for one attempt */
#define READY_USEC          10000000u   /* how long a workload may take to get ready */
#define GONE_USEC           2000000u    /* how long a killed marker process may take to vanish */
#define OUTPUT_MAX          (64u << 10)

static const char *const default_plant_dirs[] = {"/tmp", "/work/tmp", "/home/forgeyard", "/dev/shm", NULL};

static const char *const stage_key[FY_STAGE_CLEANUP + 1] = {
    [FY_STAGE_PREPARE] = "prepare", [FY_STAGE_ISOLATION] = "isolation", [FY_STAGE_FILESYSTEM] = "filesystem",
    [FY_STAGE_EXEC] = "exec",       [FY_STAGE_RUN] = "run",             [FY_STAGE_OUTPUT] = "output",
    [FY_STAGE_CLEANUP] = "cleanup",
};

/* errno names, and the C-locale messages shell tools print for them. The
 * numbers come from the sandbox, which runs on this kernel: same values. */
static const struct {
    int e;
    const char *name, *text;
} errnos[] = {
    {EPERM, "EPERM", "Operation not permitted"},
    {ENOENT, "ENOENT", "No such file or directory"},
    {ESRCH, "ESRCH", "No such process"},
    {EIO, "EIO", "Input/output error"},
    {ENXIO, "ENXIO", "No such device or address"},
    {EACCES, "EACCES", "Permission denied"},
    {EFAULT, "EFAULT", "Bad address"},
    {EBUSY, "EBUSY", "Device or resource busy"},
    {EEXIST, "EEXIST", "File exists"},
    {ENODEV, "ENODEV", "No such device"},
    {ENOTDIR, "ENOTDIR", "Not a directory"},
    {EINVAL, "EINVAL", "Invalid argument"},
    {ENOSPC, "ENOSPC", "No space left on device"},
    {EROFS, "EROFS", "Read-only file system"},
    {ENOSYS, "ENOSYS", "Function not implemented"},
    {ELOOP, "ELOOP", "Too many levels of symbolic links"},
    {EUSERS, "EUSERS", "Too many users"},
    {EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported"},
    {EAFNOSUPPORT, "EAFNOSUPPORT", "Address family not supported by protocol"},
    {ENETUNREACH, "ENETUNREACH", "Network is unreachable"},
    {ETIMEDOUT, "ETIMEDOUT", "Connection timed out"},
    {ECONNREFUSED, "ECONNREFUSED", "Connection refused"},
    {EHOSTUNREACH, "EHOSTUNREACH", "No route to host"},
};

static const char *errno_name(int e) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(errnos); i++)
        if (errnos[i].e == e)
            return errnos[i].name;
    return NULL;
}

/* The errno a check line reports: "errno=N" from perl, else the message of
 * a shell tool. Returns 0 when it cannot tell. */
static int line_errno(const char *line) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    const char *p = memmem(line, n, "errno=", 6);
    if (p)
        return atoi(p + 6);
    for (size_t i = 0; i < FY_ARRAY_SIZE(errnos); i++)
        if (memmem(line, n, errnos[i].text, strlen(errnos[i].text)))
            return errnos[i].e;
    return 0;
}

static json_t *errno_json(int e) {
    const char *n = errno_name(e);
    if (n)
        return json_string(n);
    char buf[32];
    snprintf(buf, sizeof(buf), e ? "errno %d" : "unknown", e);
    return json_string(buf);
}

/* ---- the run ---- */

struct qctx {
    const fy_policy *base;
    const char *const *plant_dirs;
    char dir[256];      /* TMP/forgeyard-qualify-XXXXXX */
    char state[300];    /* dir/state: the state directory of every attempt */
    char token[24];     /* unique to this run */
    unsigned seq;       /* attempt counter: output file names */
    json_t *probes;     /* the report's probe array */
    uint64_t base_stage[FY_STAGE_CLEANUP + 1];
    bool have_base;
};

static uint64_t rnd64(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = fy_now_usec() ^ ((uint64_t)getpid() << 32);
    return v;
}

/* A process marker: a sleep duration whose digits are unique to one probe.
 * Scripts assemble it at run time ("$m.DIGITS"), so that only the sleep's
 * own command line ever holds it. */
static void make_marker(char digits[16], char marker[24]) {
    snprintf(digits, 16, "%09u", (unsigned)(rnd64() % 1000000000u));
    snprintf(marker, 24, "59.%s", digits);
}

static bool safe_path(const char *s) {
    if (!s || s[0] != '/' || strlen(s) > 160)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '/' ||
              *c == '.' || *c == '_' || *c == '-'))
            return false;
    return true;
}

/* Adds a probe to the report. Takes the evidence reference. */
static void FY_PRINTF(6, 7) add_probe(struct qctx *q, const char *id, const char *name, bool passed,
                                      json_t *evidence, const char *fmt, ...) {
    char *summary = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&summary, fmt, ap) < 0)
        summary = NULL;
    va_end(ap);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "passed", json_boolean(passed));
    json_object_set_new(o, "summary", json_string(summary ? summary : ""));
    json_object_set_new(o, "evidence", evidence ? evidence : json_object());
    json_array_append_new(q->probes, o);
    free(summary);
}

/* ---- attempts ---- */

struct qa_attempt {
    char out_path[320];
    fy_handle *h;
    fy_result *res;
    char *out;          /* stdout and stderr, NUL-terminated */
    int outcome;        /* 0: it never ran */
    int exit_code;      /* -1: none */
    char *error;        /* why it could not be prepared, started or waited for */
};

static void qa_free(struct qa_attempt *a) {
    fy_handle_free(a->h);
    fy_result_free(a->res);
    free(a->out);
    free(a->error);
    if (a->out_path[0])
        unlink(a->out_path);
    memset(a, 0, sizeof(*a));
}

/* A copy of the caller's policy for one attempt: our stdio, our state
 * directory, bounded duration. state_dir NULL: the run's. */
static fy_policy *qa_policy(struct qctx *q, const char *state_dir, struct qa_attempt *a) {
    memset(a, 0, sizeof(*a));
    a->exit_code = -1;
    snprintf(a->out_path, sizeof(a->out_path), "%s/out-%u", q->dir, ++q->seq);
    fy_policy *p = policy_dup(q->base);
    if (!p)
        return NULL;
    if (fy_policy_set_stdio(p, FY_STDIN, FY_STDIO_NULL, -1, NULL, NULL) < 0 ||
        fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FILE, -1, a->out_path, NULL) < 0 ||
        fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FILE, -1, a->out_path, NULL) < 0 ||
        fy_policy_set_state_dir(p, state_dir ? state_dir : q->state, NULL) < 0 ||
        fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, ATTEMPT_WALL_USEC, NULL) < 0 ||
        fy_policy_set_limit(p, FY_LIMIT_GRACE, ATTEMPT_GRACE_USEC, NULL) < 0) {
        fy_policy_free(p);
        return NULL;
    }
    return p;
}

static void qa_fail(struct qa_attempt *a, const char *what, int r, fy_error *e) {
    free(a->error);
    a->error = fy_asprintf("%s: %s: %s", what, fy_error_name(r), e ? fy_error_message(e) : fy_strerror(r));
    fy_error_free(e);
}

/* Prepares and starts /bin/sh -c script. Frees p. On failure the attempt
 * records why; the return value is the FY_E_* code. */
static int qa_start(fy_policy *p, const char *script, struct qa_attempt *a, fy_prepared **ret_prepared) {
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    if (!p) {
        a->error = fy_strdup("out of memory");
        return FY_E_NOMEM;
    }
    int r = fy_prepare(p, NULL, argv, &pr, &e);
    fy_policy_free(p);
    if (r < 0) {
        qa_fail(a, "prepare", r, e);
        return r;
    }
    r = fy_start(pr, &a->h, &e);
    if (ret_prepared)
        *ret_prepared = pr;
    else
        fy_prepared_free(pr);
    if (r < 0) {
        qa_fail(a, "start", r, e);
        a->h = NULL;
    }
    return r;
}

static char *read_text(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *buf = malloc(OUTPUT_MAX + 1);
    size_t len = 0;
    ssize_t n;
    while (buf && len < OUTPUT_MAX && (n = read(fd, buf + len, OUTPUT_MAX - len)) > 0)
        len += (size_t)n;
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static void qa_collect(struct qa_attempt *a) {
    fy_handle_free(a->h);
    a->h = NULL;
    a->outcome = fy_result_outcome(a->res);
    int ec = fy_result_exit_code(a->res);
    a->exit_code = ec >= 0 ? ec : -1;
    free(a->out);
    a->out = read_text(a->out_path);
    if (!a->out)
        a->out = fy_strdup("");
}

/* Waits for the end of a started attempt (cancelling it when it overruns)
 * and collects its output. */
static void qa_finish(struct qa_attempt *a) {
    if (!a->h || a->res) {
        if (a->res)
            qa_collect(a);
        return;
    }
    fy_error *e = NULL;
    int r = fy_handle_wait(a->h, WAIT_USEC, &a->res, &e);
    if (r == 0) {
        fy_handle_cancel(a->h, FY_CANCEL_USER, NULL);
        r = fy_handle_wait(a->h, WAIT_USEC, &a->res, &e);
        if (!a->error)
            a->error = fy_strdup("the attempt overran the suite's wait and was cancelled");
    }
    if (r != 1) {
        qa_fail(a, "wait", r < 0 ? r : FY_E_TIMEOUT, e);
        fy_handle_free(a->h);
        a->h = NULL;
        return;
    }
    qa_collect(a);
}

static bool file_contains(const char *path, const char *needle) {
    char *t = read_text(path);
    bool found = t && strstr(t, needle);
    free(t);
    return found;
}

/* Drives a running attempt until its output holds needle. false when it
 * ended first (its result is kept) or took too long. */
static bool qa_wait_output(struct qa_attempt *a, const char *needle) {
    uint64_t end = fy_now_usec() + READY_USEC;
    while (a->h && !a->res && fy_now_usec() < end) {
        if (file_contains(a->out_path, needle))
            return true;
        if (fy_handle_wait(a->h, 10000, &a->res, NULL) < 0)
            return false;
    }
    return a->h && !a->res && file_contains(a->out_path, needle);
}

static int run_script(fy_policy *p, const char *script, struct qa_attempt *a) {
    int r = qa_start(p, script, a, NULL);
    if (r >= 0)
        qa_finish(a);
    return r;
}

/* The attempt's ending, for evidence. */
static json_t *qa_json(const struct qa_attempt *a) {
    json_t *o = json_object();
    json_object_set_new(o, "outcome", a->outcome ? json_string(fy_outcome_name((uint32_t)a->outcome)) : json_null());
    json_object_set_new(o, "exit_code", a->exit_code >= 0 ? json_integer(a->exit_code) : json_null());
    const char *detail = a->res ? fy_result_detail(a->res) : NULL;
    if (detail)
        json_object_set_new(o, "detail", json_string(detail));
    if (a->error)
        json_object_set_new(o, "error", json_string(a->error));
    return o;
}

/* The line of the output that starts with prefix, or NULL. Borrowed; the
 * line ends at '\n'. */
static const char *find_line(const char *out, const char *prefix) {
    size_t n = strlen(prefix);
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, prefix, n) == 0)
            return l;
    return NULL;
}

static char *line_dup(const char *line) {
    const char *e = strchr(line, '\n');
    return e ? strndup(line, (size_t)(e - line)) : strdup(line);
}

/* "PREFIX rc=N ...": N, or -1000 when the line is missing. */
static int line_rc(const char *line) {
    const char *p = line ? strstr(line, "rc=") : NULL;
    const char *e = line ? strchr(line, '\n') : NULL;
    if (!p || (e && p > e))
        return -1000;
    return atoi(p + 3);
}

/* ---- host-side observation ---- */

/* Host processes whose command line contains marker. */
static int host_marker_count(const char *marker) {
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    char path[64], buf[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (len <= 0)
            continue;
        for (ssize_t i = 0; i < len; i++)
            if (!buf[i])
                buf[i] = ' ';
        buf[len] = '\0';
        n += strstr(buf, marker) != NULL;
    }
    closedir(d);
    return n;
}

/* Waits up to GONE_USEC for the marker to vanish from the host; returns
 * the count left and the time it took. */
static int host_marker_gone(const char *marker, uint64_t *ret_usec) {
    uint64_t t0 = fy_now_usec();
    int n;
    while ((n = host_marker_count(marker)) > 0 && fy_now_usec() - t0 < GONE_USEC)
        usleep(5000);
    *ret_usec = fy_now_usec() - t0;
    return n;
}

/* Directories under /sys/fs/cgroup whose name starts with prefix (every
 * hierarchy, bounded walk, never following links). */
static void cg_walk(int dfd, const char *path, const char *prefix, int depth, unsigned *budget, json_t *found) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    size_t pl = strlen(prefix);
    while ((e = readdir(d)) && *budget > 0) {
        (*budget)--;
        if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
            continue;
        char *sub = fy_asprintf("%s/%s", path, e->d_name);
        if (!sub)
            break;
        if (strncmp(e->d_name, prefix, pl) == 0)
            json_array_append_new(found, json_string(sub));
        int fd = depth < 16 ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (fd >= 0)
            cg_walk(fd, sub, prefix, depth + 1, budget, found);
        free(sub);
    }
    closedir(d);
}

static json_t *cg_find(const char *prefix) {
    json_t *found = json_array();
    unsigned budget = 200000;
    int fd = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        cg_walk(fd, "/sys/fs/cgroup", prefix, 0, &budget, found);
    return found;
}

/* The records of a state directory: how many, and (when the arrays are
 * given) the cgroups and scratch directories they name. */
static int read_records_full(const char *dir, json_t *cgroups, json_t *scratch) {
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 7 || strcmp(e->d_name + l - 6, ".state") != 0)
            continue;
        n++;
        char *path = fy_asprintf("%s/%s", dir, e->d_name);
        char *text = path ? read_text(path) : NULL;
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            json_t *to = strncmp(line, "cgroup ", 7) == 0 ? cgroups : strncmp(line, "scratch ", 8) == 0 ? scratch : NULL;
            if (!to)
                continue;
            char *c = line_dup(strchr(line, ' ') + 1);
            json_array_append_new(to, json_string(c ? c : ""));
            free(c);
        }
        free(text);
        free(path);
    }
    closedir(d);
    return n;
}

static int read_records(const char *dir, json_t *cgroups) { return read_records_full(dir, cgroups, NULL); }

/* Of these cgroup paths, the ones that still exist. */
static json_t *existing(const json_t *paths) {
    json_t *left = json_array();
    size_t i;
    json_t *v;
    struct stat st;
    json_array_foreach(paths, i, v)
        if (lstat(json_string_value(v), &st) == 0)
            json_array_append(left, v);
    return left;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* ---- baseline ---- */

static json_t *stage_json(const fy_result *res, uint64_t *stage) {
    json_t *o = json_object();
    for (uint32_t s = FY_STAGE_ISOLATION; s <= FY_STAGE_CLEANUP; s++) {
        uint64_t us = 0;
        if (res)
            fy_result_stage_usec(res, s, &us);
        if (stage)
            stage[s] = us;
        json_object_set_new(o, stage_key[s], json_integer((json_int_t)us));
    }
    return o;
}

/* A plain attempt: what the policy negotiates here, the isolation an
 * attempt achieves, and the stage times the stage probes compare with.
 * Fails the run when the policy cannot be prepared at all. */
static int run_baseline(struct qctx *q, json_t *root, fy_error **reterr) {
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, NULL, &a);
    if (!p)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    const char *argv[] = {"/bin/sh", "-c", ":", NULL};
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, NULL, argv, &pr, reterr);
    fy_policy_free(p);
    if (r < 0)
        return r;
    json_object_set_new(root, "backend", json_string(fy_prepared_backend(pr)));
    json_object_set_new(root, "level", json_string(fy_level_name((uint32_t)fy_prepared_level(pr))));
    fy_error *e = NULL;
    r = fy_start(pr, &a.h, &e);
    fy_prepared_free(pr);
    if (r < 0)
        qa_fail(&a, "start", r, e);
    else
        qa_finish(&a);
    json_t *ev = json_object();
    json_object_set_new(ev, "attempt", qa_json(&a));
    json_object_set_new(ev, "stage_usec", stage_json(a.res, q->base_stage));
    char *rj = NULL;
    if (a.res && fy_result_to_json(a.res, &rj, NULL) == 0) {
        json_t *doc = json_loads(rj, 0, NULL);
        json_t *iso = json_object_get(doc, "isolation");
        json_object_set(root, "isolation", iso ? iso : json_object());
        json_t *cid = json_object_get(doc, "contract_id");
        if (json_is_string(cid))
            json_object_set(root, "contract_id", cid);
        json_decref(doc);
        fy_free(rj);
    } else {
        json_object_set_new(root, "isolation", json_object());
    }
    bool ok = a.outcome == FY_OUTCOME_SUCCEEDED;
    q->have_base = ok;
    add_probe(q, "baseline", "A plain attempt succeeds (the control for every other probe)", ok, ev,
              ok ? "%s; isolation %llu us, filesystem %llu us, exec %llu us, run %llu us, cleanup %llu us"
                 : "%s: the policy cannot run a plain command here",
              a.outcome ? fy_outcome_name((uint32_t)a.outcome) : (a.error ? a.error : "did not run"),
              (unsigned long long)q->base_stage[FY_STAGE_ISOLATION],
              (unsigned long long)q->base_stage[FY_STAGE_FILESYSTEM], (unsigned long long)q->base_stage[FY_STAGE_EXEC],
              (unsigned long long)q->base_stage[FY_STAGE_RUN], (unsigned long long)q->base_stage[FY_STAGE_CLEANUP]);
    qa_free(&a);
    return 0;
}

/* ---- 1. stage attribution ---- */

static void probe_stage(struct qctx *q, uint32_t stage) {
    char id[64], name[96];
    snprintf(id, sizeof(id), "stage-attribution.%s", stage_key[stage]);
    snprintf(name, sizeof(name), "A %u ms delay injected into the %s stage is attributed to it", DELAY_USEC / 1000,
             stage_key[stage]);
    json_t *ev = json_object();
    json_object_set_new(ev, "stage", json_string(stage_key[stage]));
    json_object_set_new(ev, "delay_usec", json_integer(DELAY_USEC));
    json_t *bj = json_object();
    for (uint32_t s = FY_STAGE_ISOLATION; s <= FY_STAGE_CLEANUP; s++)
        json_object_set_new(bj, stage_key[s], json_integer((json_int_t)q->base_stage[s]));
    json_object_set_new(ev, "baseline_usec", bj);
    bool ok = false;
    uint64_t got[FY_STAGE_CLEANUP + 1] = {0};
    json_t *mis = NULL;
    struct qa_attempt a = {0};
    int tries;
    /* Timing on a shared host is noisy: one re-measurement is allowed, and
     * the evidence says how many were needed. */
    for (tries = 1; tries <= 2 && !ok; tries++) {
        qa_free(&a);
        json_decref(mis);
        mis = json_array();
        fy_policy *p = qa_policy(q, NULL, &a);
        if (p)
            policy_inject_delay(p, stage, DELAY_USEC);
        run_script(p, ":", &a);
        json_object_set_new(ev, "stage_usec", stage_json(a.res, got));
        ok = a.outcome == FY_OUTCOME_SUCCEEDED && q->have_base && got[stage] >= DELAY_USEC;
        for (uint32_t s = FY_STAGE_ISOLATION; s <= FY_STAGE_CLEANUP; s++)
            if (s != stage && got[s] >= q->base_stage[s] + DELAY_USEC / 2) {
                json_array_append_new(mis, json_string(stage_key[s]));
                ok = false;
            }
    }
    json_object_set_new(ev, "attempt", qa_json(&a));
    json_object_set_new(ev, "misattributed_to", mis);
    json_object_set_new(ev, "measurements", json_integer(tries - 1));
    json_object_set_new(ev, "tolerance_usec", json_integer(DELAY_USEC / 2));
    if (ok)
        add_probe(q, id, name, true, ev,
                  "%s %llu us with the delay (baseline %llu us); run %llu us, other stages within %u ms of baseline",
                  stage_key[stage], (unsigned long long)got[stage], (unsigned long long)q->base_stage[stage],
                  (unsigned long long)got[FY_STAGE_RUN], DELAY_USEC / 2000);
    else if (a.outcome != FY_OUTCOME_SUCCEEDED)
        add_probe(q, id, name, false, ev, "the delayed attempt did not succeed: %s",
                  a.outcome ? fy_outcome_name((uint32_t)a.outcome) : (a.error ? a.error : "did not run"));
    else
        add_probe(q, id, name, false, ev, "%s %llu us with a %u us delay; delay seen in %zu other stage(s)",
                  stage_key[stage], (unsigned long long)got[stage], DELAY_USEC,
                  json_array_size(json_object_get(ev, "misattributed_to")));
    qa_free(&a);
}

/* ---- 2. leakage ---- */

/* Script fragments. $m is assembled at run time: "59.<digits>". */
#define SCRIPT_FIND_MARKER                                                                         \
    "for f in /proc/[0-9]*/cmdline; do\n"                                                          \
    "  case \"$(tr '\\000' ' ' < \"$f\" 2>/dev/null)\" in *\"$m\"*) echo \"proc-seen ${f#/proc/}\";; esac\n" \
    "done\n"

#define SCRIPT_START_MARKER                                                                        \
    "setsid sleep \"$m\" </dev/null >/dev/null 2>&1 &\n"                                           \
    "i=0\n"                                                                                        \
    "while [ $i -lt 300 ]; do\n"                                                                   \
    "  for f in /proc/[0-9]*/cmdline; do\n"                                                        \
    "    case \"$(tr '\\000' ' ' < \"$f\" 2>/dev/null)\" in *\"$m\"*) echo \"proc-seen ${f#/proc/}\"; i=1000; break;; esac\n" \
    "  done\n"                                                                                     \
    "  [ $i -ge 1000 ] && break\n"                                                                 \
    "  sleep 0.01; i=$((i+1))\n"                                                                   \
    "done\n"

static void append_dirs(struct strbuf *sb, const char *const *dirs) {
    for (size_t i = 0; dirs[i]; i++) {
        strbuf_append(sb, " ");
        strbuf_append(sb, dirs[i]);
    }
}

/* Whether out has exactly this line. */
static bool has_line(const char *out, const char *prefix, const char *rest) {
    size_t pl = strlen(prefix), rl = strlen(rest);
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, prefix, pl) == 0 && strncmp(l + pl, rest, rl) == 0 && (l[pl + rl] == '\n' || !l[pl + rl]))
            return true;
    return false;
}

/* The rest of every line that starts with prefix, as a JSON array. */
static json_t *lines_with(const char *out, const char *prefix) {
    json_t *a = json_array();
    for (const char *l = find_line(out, prefix); l;
         l = strchr(l, '\n') ? find_line(strchr(l, '\n') + 1, prefix) : NULL) {
        char *v = line_dup(l + strlen(prefix));
        json_array_append_new(a, json_string(v ? v : ""));
        free(v);
    }
    return a;
}

static json_t *output_json(const char *out) { return json_stringn(out ? out : "", strnlen(out ? out : "", 2048)); }

enum { AFTER_SUCCESS, AFTER_FAILURE, AFTER_CANCEL };

/* Plants a file in each directory (the fixed list, plus the workload's own
 * $HOME and $TMPDIR, which at the process level are per-attempt host
 * directories) and a daemon, checks inside that they exist, and ends as the
 * variant says. A later attempt then looks for them at the same absolute
 * paths, and so does the host. */
static void probe_leakage(struct qctx *q, int variant) {
    static const char *const ids[] = {"leakage.after-success", "leakage.after-failure", "leakage.after-cancel"};
    static const char *const names[] = {
        "Files and a daemon left by a succeeding attempt are invisible to a later attempt and gone from the host",
        "Files and a daemon left by a failing attempt (exit 1) are invisible to a later attempt and gone from the host",
        "Files and a daemon left by a cancelled attempt are invisible to a later attempt and gone from the host",
    };
    static const char *const endings[] = {"exit 0\n", "exit 1\n", "echo ready\nsleep 30\n"};
    char digits[16], marker[24], fname[64];
    make_marker(digits, marker);
    snprintf(fname, sizeof(fname), "fyq-%s-%d", q->token, variant);
    json_t *ev = json_object();
    json_object_set_new(ev, "marker_file", json_string(fname));
    json_object_set_new(ev, "marker_process", json_sprintf("setsid sleep %s", marker));

    /* The planting attempt. */
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb, "n=%s; m=59; m=\"$m.%s\"; seen=\n for d in", fname, digits);
    append_dirs(&sb, q->plant_dirs);
    strbuf_append(&sb, " \"$HOME\" \"$TMPDIR\"; do\n"
                       "  [ -n \"$d\" ] || continue\n"
                       "  case \" $seen \" in *\" $d \"*) continue;; esac\n"
                       "  seen=\"$seen $d\"\n"
                       "  if (echo fyq > \"$d/$n\") 2>/dev/null; then echo \"planted $d\"; else echo \"not-planted $d\"; fi\n"
                       "done\n" SCRIPT_START_MARKER
                       "for d in $seen; do [ -e \"$d/$n\" ] && echo \"file-seen $d\"; done\n");
    strbuf_append(&sb, endings[variant]);
    struct qa_attempt a, b;
    fy_policy *p = qa_policy(q, NULL, &a);
    int host_during = -1;
    if (sb.oom) {
        fy_policy_free(p);
        a.error = fy_strdup("out of memory");
    } else if (qa_start(p, sb.buf, &a, NULL) >= 0 && variant == AFTER_CANCEL && qa_wait_output(&a, "ready")) {
        host_during = host_marker_count(marker);
        fy_handle_cancel(a.h, FY_CANCEL_USER, NULL);
    }
    strbuf_free(&sb);
    qa_finish(&a);
    uint64_t gone_usec = 0;
    int host_after = host_marker_gone(marker, &gone_usec);
    const char *out = a.out ? a.out : "";
    json_t *pa = qa_json(&a), *planted = lines_with(out, "planted ");
    size_t i, nplanted = json_array_size(planted), nseen = 0;
    json_t *v;
    bool paths_ok = true;
    json_array_foreach(planted, i, v) {
        nseen += has_line(out, "file-seen ", json_string_value(v));
        paths_ok = paths_ok && safe_path(json_string_value(v));
    }
    bool proc_inside = find_line(out, "proc-seen ") != NULL;
    json_object_set_new(pa, "planted", planted);
    json_object_set_new(pa, "not_planted", lines_with(out, "not-planted "));
    json_object_set_new(pa, "files_seen_inside", lines_with(out, "file-seen "));
    json_object_set_new(pa, "process_seen_inside", json_boolean(proc_inside));
    int want = variant == AFTER_SUCCESS ? FY_OUTCOME_SUCCEEDED
               : variant == AFTER_FAILURE ? FY_OUTCOME_FAILED : FY_OUTCOME_CANCELLED;
    bool planting_ok = a.outcome == want && (variant != AFTER_FAILURE || a.exit_code == 1) && nplanted > 0 &&
                       paths_ok && nseen == nplanted && proc_inside && (variant != AFTER_CANCEL || host_during > 0);
    if (!planting_ok)
        json_object_set_new(pa, "output", output_json(out));
    json_object_set_new(ev, "planting_attempt", pa);
    if (variant == AFTER_CANCEL)
        json_object_set_new(ev, "host_processes_while_running", json_integer(host_during));
    qa_free(&a);

    /* The later attempt looks for both, where they were planted. */
    strbuf_init(&sb);
    strbuf_printf(&sb, "n=%s; m=59; m=\"$m.%s\"\nfor d in", fname, digits);
    json_array_foreach(planted, i, v)
        if (safe_path(json_string_value(v)))
            strbuf_printf(&sb, " %s", json_string_value(v));
    strbuf_append(&sb, "; do if [ -e \"$d/$n\" ]; then echo \"file-seen $d\"; else echo \"file-absent $d\"; fi; done\n"
                       SCRIPT_FIND_MARKER "echo \"visible-processes $(ls -d /proc/[0-9]* | wc -l)\"\necho observed\n");
    p = qa_policy(q, NULL, &b);
    if (sb.oom) {
        fy_policy_free(p);
        b.error = fy_strdup("out of memory");
    } else {
        run_script(p, sb.buf, &b);
    }
    strbuf_free(&sb);
    out = b.out ? b.out : "";
    json_t *la = qa_json(&b), *lseen = lines_with(out, "file-seen ");
    json_t *lp = lines_with(out, "proc-seen ");
    size_t nprocs = json_array_size(lp);
    json_decref(lp);
    const char *vis = find_line(out, "visible-processes ");
    json_object_set_new(la, "files_seen", lseen);
    json_object_set_new(la, "marker_processes_seen", json_integer((json_int_t)nprocs));
    if (vis)
        json_object_set_new(la, "processes_visible", json_integer(atoi(vis + 18)));
    bool observed = b.outcome == FY_OUTCOME_SUCCEEDED && find_line(out, "observed") != NULL;
    if (!observed)
        json_object_set_new(la, "output", output_json(out));
    size_t later_files = json_array_size(lseen);
    json_object_set_new(ev, "later_attempt", la);
    qa_free(&b);

    /* And the host, at the same paths. */
    json_t *hf = json_array();
    json_array_foreach(planted, i, v) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", json_string_value(v), fname);
        if (lstat(path, &st) == 0) {
            json_array_append_new(hf, json_string(path));
            if (S_ISREG(st.st_mode))
                unlink(path); /* ours: named with this run's token */
        }
    }
    json_t *host = json_object();
    json_object_set_new(host, "files", hf);
    json_object_set_new(host, "marker_processes", json_integer(host_after));
    json_object_set_new(host, "waited_usec", json_integer((json_int_t)gone_usec));
    size_t host_files = json_array_size(hf);
    json_object_set_new(ev, "host_after", host);

    bool ok = planting_ok && observed && later_files == 0 && nprocs == 0 && host_after == 0 && host_files == 0;
    if (ok)
        add_probe(q, ids[variant], names[variant], true, ev,
                  "planted in %zu dir(s) and sleep %s (seen inside%s); later attempt saw 0 files, 0 marker processes; "
                  "host: none left",
                  nplanted, marker, variant == AFTER_CANCEL ? " and from the host" : "");
    else if (!planting_ok)
        add_probe(q, ids[variant], names[variant], false, ev,
                  "the planting attempt did not plant and see its markers as expected (%zu planted, %zu seen, process %s)",
                  nplanted, nseen, proc_inside ? "seen" : "not seen");
    else
        add_probe(q, ids[variant], names[variant], false, ev,
                  "leaked: later attempt saw %zu file(s) and %zu marker process(es)%s; host has %zu file(s), %d process(es)",
                  later_files, nprocs, observed ? "" : " (it did not run to the end)", host_files, host_after);
}

/* ---- 3. escape and authority ---- */

static const char *const control_sockets[] = {
    "/run/systemd/private",       "/run/systemd/notify",          "/run/systemd/journal/stdout",
    "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket", "/run/docker.sock",
    "/var/run/docker.sock",       "/run/containerd/containerd.sock", "/run/crio/crio.sock",
    "/run/podman/podman.sock",    "/var/run/libvirt/libvirt-sock",   "/run/snapd.socket",
};

static int listen_tcp(uint16_t *ret_port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *ret_port = ntohs(sin.sin_port);
    return fd;
}

static int listen_unix(const char *path) {
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path))
        return -1;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 16) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    chmod(path, 0777); /* reachable by any uid, were it visible */
    return fd;
}

/* Connections a listener accepted (it never blocks). */
static int drain_accepts(int fd) {
    int n = 0, c;
    while (fd >= 0 && (c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
        close(c);
        n++;
    }
    return n;
}

static bool write_file(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return false;
    bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    return ok && chmod(path, mode) == 0;
}

static void probe_reach(struct qctx *q) {
    char hostdir[320], secret[340], content[48], sockpath[320];
    snprintf(hostdir, sizeof(hostdir), "%s/host-only", q->dir);
    snprintf(secret, sizeof(secret), "%s/secret", hostdir);
    snprintf(content, sizeof(content), "fyq-secret-%016llx", (unsigned long long)rnd64());
    snprintf(sockpath, sizeof(sockpath), "%s/control.sock", q->dir);
    /* World-readable: only the sandbox's view of the filesystem may keep
     * the workload from reading it, not file permissions. */
    bool made = mkdir(hostdir, 0755) == 0 && chmod(hostdir, 0755) == 0 && write_file(secret, content, 0644);
    uint16_t port = 0;
    int tfd = listen_tcp(&port), ufd = listen_unix(sockpath);

    /* The sockets to try: the host's control sockets that exist (only
     * lstat-ed here, never connected to from the host), and our own. */
    json_t *probed = json_array(), *absent = json_array();
    struct strbuf socks;
    strbuf_init(&socks);
    for (size_t i = 0; i < FY_ARRAY_SIZE(control_sockets); i++) {
        struct stat st;
        if (lstat(control_sockets[i], &st) == 0 && S_ISSOCK(st.st_mode)) {
            strbuf_printf(&socks, " %s", control_sockets[i]);
            json_array_append_new(probed, json_pack("{s:s,s:s}", "path", control_sockets[i], "host", "socket"));
        } else {
            json_array_append_new(absent, json_string(control_sockets[i]));
        }
    }
    if (ufd >= 0) {
        strbuf_printf(&socks, " %s", sockpath);
        json_array_append_new(probed,
                              json_pack("{s:s,s:s}", "path", sockpath, "host", "socket listening, made by the probe"));
    }

    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb,
                  "p=%s\n"
                  "r=$(cat \"$p\" 2>&1); echo \"host-path rc=$? $r\"\n"
                  "r=$(cat \"/proc/1/root$p\" 2>&1); echo \"host-path-proc1 rc=$? $r\"\n"
                  "if command -v perl >/dev/null 2>&1; then\n"
                  "  perl -MSocket -e 'socket(S,PF_INET,SOCK_STREAM,0) or die \"socket: $!\"; "
                  "if (connect(S,pack_sockaddr_in($ARGV[0],inet_aton(\"127.0.0.1\")))) {print \"tcp rc=0\\n\"} "
                  "else {print \"tcp rc=1 errno=\".($!+0).\"\\n\"}' %u\n"
                  "  for s in%s; do perl -MSocket -e 'socket(S,PF_UNIX,SOCK_STREAM,0) or die \"socket: $!\"; "
                  "if (connect(S,pack_sockaddr_un($ARGV[0]))) {print \"unix $ARGV[0] rc=0\\n\"} "
                  "else {print \"unix $ARGV[0] rc=1 errno=\".($!+0).\"\\n\"}' \"$s\"; done\n"
                  "else\n"
                  "  r=$(bash -c 'exec 3<>/dev/tcp/127.0.0.1/%u' 2>&1); echo \"tcp rc=$? $r\"\n"
                  "  for s in%s; do r=$(ls -d \"$s\" 2>&1); echo \"unix $s rc=$? $r\"; done\n"
                  "fi\n"
                  "echo reach-done\n",
                  secret, (unsigned)port, socks.buf ? socks.buf : "", (unsigned)port, socks.buf ? socks.buf : "");
    strbuf_free(&socks);
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, NULL, &a);
    if (sb.oom || !made || tfd < 0) {
        fy_policy_free(p);
        a.error = fy_strdup(!made ? "could not create the host-only file" : tfd < 0 ? "could not listen on 127.0.0.1"
                                                                                  : "out of memory");
    } else {
        run_script(p, sb.buf, &a);
    }
    strbuf_free(&sb);
    const char *out = a.out ? a.out : "";
    bool ran = find_line(out, "reach-done") != NULL;
    bool leaked_secret = strstr(out, content) != NULL;

    /* escape.host-path */
    const char *l1 = find_line(out, "host-path rc="), *l2 = find_line(out, "host-path-proc1 rc=");
    json_t *ev = json_object();
    json_object_set_new(ev, "path", json_string(secret));
    json_object_set_new(ev, "host_mode", json_string("0644 in a 0755 directory"));
    json_object_set_new(ev, "attempt", qa_json(&a));
    int e1 = l1 ? line_errno(l1) : 0, e2 = l2 ? line_errno(l2) : 0;
    json_object_set_new(ev, "inside", l1 && line_rc(l1) != 0 ? errno_json(e1) : json_string(l1 ? "read" : "not run"));
    json_object_set_new(ev, "via_proc_1_root",
                        l2 && line_rc(l2) != 0 ? errno_json(e2) : json_string(l2 ? "read" : "not run"));
    json_object_set_new(ev, "content_read", json_boolean(leaked_secret));
    bool ok = ran && l1 && l2 && line_rc(l1) != 0 && line_rc(l2) != 0 && !leaked_secret;
    if (ok)
        add_probe(q, "escape.host-path", "A host file outside the declared paths cannot be read", true, ev,
                  "cat %s: %s; via /proc/1/root: %s", secret, errno_name(e1) ? errno_name(e1) : "denied",
                  errno_name(e2) ? errno_name(e2) : "denied");
    else
        add_probe(q, "escape.host-path", "A host file outside the declared paths cannot be read", false, ev, "%s",
                  leaked_secret ? "the workload read the host-only file" : "the check did not run to the end");

    /* escape.loopback-listener */
    const char *lt = find_line(out, "tcp rc=");
    int accepted = drain_accepts(tfd);
    int et = lt ? line_errno(lt) : 0;
    ev = json_object();
    json_object_set_new(ev, "listener", json_sprintf("127.0.0.1:%u (host, made by the probe)", (unsigned)port));
    json_object_set_new(ev, "inside", !lt ? json_string("not run") : line_rc(lt) == 0 ? json_string("connected")
                                                                                     : errno_json(et));
    json_object_set_new(ev, "accepted", json_integer(accepted));
    ok = ran && lt && line_rc(lt) != 0 && accepted == 0;
    add_probe(q, "escape.loopback-listener", "A listener on the host's 127.0.0.1 cannot be reached", ok, ev,
              "connect 127.0.0.1:%u: %s; the listener accepted %d", (unsigned)port,
              !lt ? "not run" : line_rc(lt) == 0 ? "connected" : errno_name(et) ? errno_name(et) : "failed",
              accepted);

    /* escape.control-sockets */
    size_t i;
    json_t *v;
    ok = ran && json_array_size(probed) > 0;
    json_array_foreach(probed, i, v) {
        char pfx[360];
        snprintf(pfx, sizeof(pfx), "unix %s rc=", json_string_value(json_object_get(v, "path")));
        const char *l = find_line(out, pfx);
        int e = l ? line_errno(l) : 0;
        json_object_set_new(v, "inside", !l ? json_string("not run") : line_rc(l) == 0 ? json_string("connected")
                                                                                         : errno_json(e));
        if (!l || line_rc(l) == 0 || e != ENOENT)
            ok = false;
    }
    int uaccepted = drain_accepts(ufd);
    ev = json_object();
    json_object_set_new(ev, "probed", probed);
    json_object_set_new(ev, "absent_on_host", absent);
    json_object_set_new(ev, "accepted_by_probe_socket", json_integer(uaccepted));
    ok = ok && uaccepted == 0;
    add_probe(q, "escape.control-sockets", "Host control sockets do not exist inside", ok, ev,
              ok ? "%zu socket(s) tried from inside (%zu of the host's exist): all ENOENT"
                 : "%zu socket(s) tried from inside (%zu of the host's exist): some reachable or not ENOENT",
              json_array_size(json_object_get(ev, "probed")),
              json_array_size(json_object_get(ev, "probed")) - (ufd >= 0 ? 1 : 0));
    qa_free(&a);
    if (tfd >= 0)
        close(tfd);
    if (ufd >= 0)
        close(ufd);
}

/* One privileged operation, alone in an attempt (a violation ends it). The
 * script prints "op rc=N ..." unless the attempt is ended first. */
static void probe_privileged(struct qctx *q, const char *id, const char *name, const char *what, const char *script,
                             const int *denials) {
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, NULL, &a);
    run_script(p, script, &a);
    const char *out = a.out ? a.out : "";
    json_t *ev = json_object();
    json_object_set_new(ev, "operation", json_string(what));
    json_object_set_new(ev, "attempt", qa_json(&a));
    const char *l = find_line(out, "op ");
    bool ok = false;
    if (a.outcome == FY_OUTCOME_SANDBOX_VIOLATION) {
        const char *d = fy_result_detail(a.res);
        json_object_set_new(ev, "denial", json_sprintf("violation: %s", d ? d : "unnamed"));
        ok = true;
        add_probe(q, id, name, true, ev, "%s: violation: %s", what, d ? d : "unnamed");
    } else if (l && strncmp(l, "op untested", 11) == 0) {
        char *s = line_dup(l + 3);
        json_object_set_new(ev, "denial", json_string(s ? s : "untested"));
        add_probe(q, id, name, false, ev, "%s: %s", what, s ? s : "untested");
        free(s);
    } else if (!l || line_rc(l) == -1000) {
        json_object_set_new(ev, "denial", json_null());
        json_object_set_new(ev, "output", json_stringn(out, strnlen(out, 512)));
        add_probe(q, id, name, false, ev, "%s: no result (%s)", what,
                  a.error ? a.error : a.outcome ? fy_outcome_name((uint32_t)a.outcome) : "did not run");
    } else if (line_rc(l) == 0) {
        json_object_set_new(ev, "denial", json_string("none: the operation succeeded"));
        add_probe(q, id, name, false, ev, "%s: succeeded", what);
    } else {
        int e = line_errno(l);
        for (size_t i = 0; denials[i]; i++)
            ok = ok || e == denials[i];
        json_object_set_new(ev, "denial", errno_json(e));
        if (ok)
            add_probe(q, id, name, true, ev, "%s: %s", what, errno_name(e));
        else
            add_probe(q, id, name, false, ev, "%s: not denied, the kernel processed it (%s)", what,
                      errno_name(e) ? errno_name(e) : "unknown error");
    }
    qa_free(&a);
}

#define NEED_PERL                                                                                 \
    "command -v perl >/dev/null 2>&1 || { echo 'op untested: perl is not available in the sandbox'; exit 0; }\n"
/* String arguments go through variables: perl refuses to pass literals. */
#define PERL_SYSCALL(pre, args) "perl -e '" pre "$r = syscall(" args "); print \"op rc=$r errno=\".($!+0).\"\\n\"'"

static void probe_escape_privileged(struct qctx *q) {
    static const int eperm[] = {EPERM, EACCES, ENOSYS, 0};
    char script[1024];
    /* A mount onto a path that does not exist: harmless even if allowed. */
    snprintf(script, sizeof(script),
             NEED_PERL PERL_SYSCALL("my @s = (\"none\", \"/fyq-absent-%s\", \"tmpfs\"); ",
                                    "%d, $s[0], $s[1], $s[2], 0, 0") "\n",
             q->token, (int)SYS_mount);
    probe_privileged(q, "escape.mount", "Mounting is denied", "mount(tmpfs)", script, eperm);
    snprintf(script, sizeof(script), "r=$(mknod /tmp/fyq-node-%s c 1 3 2>&1); echo \"op rc=$? $r\"\n", q->token);
    probe_privileged(q, "escape.mknod", "Creating a device node is denied", "mknod(c 1 3)", script, eperm);
    /* PTRACE_SEIZE: does not stop the tracee even where it is allowed. */
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("", "%d, 0x4206, 1, 0, 0") "\n", (int)SYS_ptrace);
    probe_privileged(q, "escape.ptrace", "Tracing pid 1 is denied", "ptrace(PTRACE_SEIZE, 1)", script, eperm);
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("", "%d, 0x10000000") "\n", (int)SYS_unshare);
    probe_privileged(q, "escape.userns", "Creating a user namespace is denied", "unshare(CLONE_NEWUSER)", script,
                     eperm);
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("my $s = \"\"; ", "%d, 0, 0, $s") "\n",
             (int)SYS_init_module);
    probe_privileged(q, "escape.module", "Loading a kernel module is denied", "init_module(NULL, 0)", script, eperm);
    /* An invalid flag: EINVAL before anything happens where it is allowed. */
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("", "%d, 0, 0, 0, 0x8000") "\n", (int)SYS_kexec_load);
    probe_privileged(q, "escape.kexec", "Loading a new kernel is denied", "kexec_load(0 segments)", script, eperm);
    char node[128];
    struct stat st;
    snprintf(node, sizeof(node), "/tmp/fyq-node-%s", q->token);
    if (lstat(node, &st) == 0 && !S_ISDIR(st.st_mode))
        unlink(node); /* ours, should it ever have been created on the host */
}

/* ---- 4. residue and reuse ---- */

static const char *residue_script(char *buf, size_t len, const char *digits) {
    snprintf(buf, len, "m=59; m=\"$m.%s\"\n" SCRIPT_START_MARKER "echo ready\nsleep 30\n", digits);
    return buf;
}

static void probe_residue_cancel(struct qctx *q) {
    char state[340], digits[16], marker[24], script[1024];
    snprintf(state, sizeof(state), "%s/state-cancel", q->dir);
    make_marker(digits, marker);
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, state, &a);
    json_t *ev = json_object(), *cgroups = json_array();
    int records = -1, host_during = -1;
    bool ready = false;
    if (qa_start(p, residue_script(script, sizeof(script), digits), &a, NULL) >= 0 &&
        (ready = qa_wait_output(&a, "ready"))) {
        records = read_records(state, cgroups);
        host_during = host_marker_count(marker);
        fy_handle_cancel(a.h, FY_CANCEL_USER, NULL);
    }
    qa_finish(&a);
    uint64_t gone_usec = 0;
    int host_after = host_marker_gone(marker, &gone_usec);
    json_t *during = json_object(), *after = json_object(), *witness = json_object();
    json_object_set_new(during, "records", json_integer(records));
    json_object_set_new(during, "cgroups", cgroups);
    json_object_set_new(during, "marker_processes", json_integer(host_during));
    uint64_t left[FY_LEFT_FILES + 1] = {0};
    static const char *const left_key[] = {NULL, "processes", "mounts", "cgroups", "files"};
    for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_FILES; k++) {
        if (a.res)
            fy_result_cleanup(a.res, k, &left[k]);
        json_object_set_new(witness, left_key[k], json_integer((json_int_t)left[k]));
    }
    int records_after = read_records(state, NULL), run_records = read_records(q->state, NULL);
    json_t *cg_left = existing(cgroups);
    json_object_set_new(after, "records", json_integer(records_after));
    json_object_set_new(after, "cgroups_left", cg_left);
    json_object_set_new(after, "marker_processes", json_integer(host_after));
    json_object_set_new(after, "waited_usec", json_integer((json_int_t)gone_usec));
    json_object_set_new(ev, "attempt", qa_json(&a));
    json_object_set_new(ev, "during", during);
    json_object_set_new(ev, "cleanup_witness", witness);
    json_object_set_new(ev, "after", after);
    json_object_set_new(ev, "suite_state_dir_records", json_integer(run_records));
    bool ok = ready && a.outcome == FY_OUTCOME_CANCELLED && records == 1 && host_during > 0 && host_after == 0 &&
              records_after == 0 && json_array_size(cg_left) == 0 && run_records == 0 &&
              !left[FY_LEFT_PROCESSES] && !left[FY_LEFT_MOUNTS] && !left[FY_LEFT_CGROUPS] && !left[FY_LEFT_FILES];
    if (ok)
        add_probe(q, "residue.after-cancel", "Nothing of a cancelled attempt remains", true, ev,
                  "cancelled with sleep %s running; its %zu cgroup(s), record and processes gone; witness 0/0/0/0",
                  marker, json_array_size(cgroups));
    else
        add_probe(q, "residue.after-cancel", "Nothing of a cancelled attempt remains", false, ev,
                  "%s: %d record(s), %zu cgroup(s), %d marker process(es) left (witness %llu/%llu/%llu/%llu)",
                  a.outcome ? fy_outcome_name((uint32_t)a.outcome) : "did not run", records_after,
                  json_array_size(cg_left), host_after, (unsigned long long)left[1], (unsigned long long)left[2],
                  (unsigned long long)left[3], (unsigned long long)left[4]);
    qa_free(&a);
}

/* The forked "host program": starts a sandbox, says so, waits for SIGKILL. */
__attribute__((noreturn)) static void restart_child(struct qctx *q, const char *state, const char *digits,
                                                   pid_t parent, int ready_fd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    signal(SIGALRM, SIG_DFL);
    alarm(60); /* the parent kills us long before; this only bounds a lost child */
    char script[1024];
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, state, &a);
    if (qa_start(p, residue_script(script, sizeof(script), digits), &a, NULL) < 0 ||
        !qa_wait_output(&a, "ready"))
        _exit(2);
    if (write(ready_fd, "r", 1) != 1)
        _exit(3);
    for (;;)
        pause();
}

static void probe_residue_restart(struct qctx *q) {
    char state[340], digits[16], marker[24];
    snprintf(state, sizeof(state), "%s/state-restart", q->dir);
    make_marker(digits, marker);
    json_t *ev = json_object(), *cgroups = json_array();
    int pfd[2];
    pid_t parent = getpid(), child = -1;
    int records = -1, host_during = -1;
    bool ready = false;
    if (pipe2(pfd, O_CLOEXEC) == 0) {
        child = fork();
        if (child == 0) {
            close(pfd[0]);
            restart_child(q, state, digits, parent, pfd[1]);
        }
        q->seq++; /* the child's output file took this number */
        close(pfd[1]);
        struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
        char c;
        if (child > 0 && poll(&pf, 1, (int)(READY_USEC / 1000) + 2000) == 1 && read(pfd[0], &c, 1) == 1) {
            ready = true;
            records = read_records(state, cgroups);
            host_during = host_marker_count(marker);
        }
        close(pfd[0]);
    }
    /* The host program dies without any cleanup. */
    int status = 0;
    if (child > 0) {
        kill(child, SIGKILL);
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
    }
    uint64_t gone_usec = 0;
    int host_after_kill = host_marker_gone(marker, &gone_usec);
    json_t *before_gc = existing(cgroups);
    int records_before_gc = read_records(state, NULL);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "forgeyard-%d-", (int)child);
    /* The scan below must see what is there: its positive control. */
    json_t *named_before = child > 0 ? cg_find(prefix) : json_array();
    /* The restarted host program collects the orphans. */
    uint64_t destroyed = 0;
    fy_error *e = NULL;
    int gr = fy_gc(state, 0, &destroyed, &e);
    json_t *gc = json_object();
    json_object_set_new(gc, "result", json_string(gr < 0 ? fy_error_name(gr) : "ok"));
    if (gr < 0)
        json_object_set_new(gc, "error", json_string(fy_error_message(e)));
    fy_error_free(e);
    json_object_set_new(gc, "destroyed", json_integer((json_int_t)destroyed));
    int records_after = read_records(state, NULL);
    json_t *cg_left = existing(cgroups);
    json_t *named = child > 0 ? cg_find(prefix) : json_array();
    int host_after = host_marker_count(marker);
    /* And the state directory is usable again. */
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, state, &a);
    run_script(p, ":", &a);
    int records_reuse = read_records(state, NULL);

    json_t *during = json_object(), *after = json_object();
    json_object_set_new(ev, "host_program_pid", json_integer(child));
    json_object_set_new(during, "records", json_integer(records));
    json_object_set_new(during, "cgroups", cgroups);
    json_object_set_new(during, "marker_processes", json_integer(host_during));
    json_object_set_new(ev, "before_kill", during);
    json_object_set_new(ev, "sandbox_ended_with_owner",
                        json_pack("{s:i,s:I}", "marker_processes", host_after_kill, "waited_usec", (json_int_t)gone_usec));
    size_t n_before = json_array_size(before_gc), n_named_before = json_array_size(named_before);
    json_object_set_new(ev, "before_gc",
                        json_pack("{s:i,s:o,s:o}", "records", records_before_gc, "cgroups_present", before_gc,
                                  "cgroups_found_by_name", named_before));
    json_object_set_new(ev, "gc", gc);
    json_object_set_new(after, "records", json_integer(records_after));
    json_object_set_new(after, "cgroups_left", cg_left);
    json_object_set_new(after, "cgroups_found_by_name", json_pack("{s:s+,s:O}", "pattern", prefix, "*", "found", named));
    json_object_set_new(after, "marker_processes", json_integer(host_after));
    json_object_set_new(ev, "after_gc", after);
    json_object_set_new(ev, "reuse", json_pack("{s:o,s:i}", "attempt", qa_json(&a), "records_after", records_reuse));
    bool ok = ready && records == 1 && host_during > 0 && host_after_kill == 0 && gr >= 0 && records_after == 0 &&
              json_array_size(cg_left) == 0 && json_array_size(named) == 0 && n_named_before >= n_before &&
              host_after == 0 &&
              a.outcome == FY_OUTCOME_SUCCEEDED && records_reuse == 0;
    if (ok)
        add_probe(q, "residue.after-restart",
                  "Nothing remains of a SIGKILLed host program's sandbox after fy_gc; the state directory is reusable",
                  true, ev,
                  "host program %d killed: sandbox ended with it; gc destroyed %llu, removed %zu cgroup(s); 0 records, "
                  "0 forgeyard-%d-* cgroups; reuse succeeded",
                  (int)child, (unsigned long long)destroyed, n_before, (int)child);
    else
        add_probe(q, "residue.after-restart",
                  "Nothing remains of a SIGKILLed host program's sandbox after fy_gc; the state directory is reusable",
                  false, ev,
                  "%s: %d record(s), %zu cgroup(s) (%zu named forgeyard-%d-*), %d marker process(es) left after gc",
                  ready ? "ran" : "the forked host program never got its sandbox ready", records_after,
                  json_array_size(cg_left), json_array_size(named), (int)child, host_after);
    json_decref(named);
    qa_free(&a);
}

/* ---- the run ---- */

/* What the suite's own attempts left despite the library's cleanup (a
 * failing probe may mean exactly that): records still in its state
 * directories, which would be lost with the directory. The cgroups they
 * name are removed when empty (named forgeyard-* only) and their scratch
 * directories (forgeyard-attempt-* in /dev/shm or /tmp) without following
 * links. Reported, never hidden: the probes have already judged. */
static json_t *suite_cleanup(struct qctx *q) {
    static const char *const subdirs[] = {"state", "state-cancel", "state-restart"};
    json_t *cgroups = json_array(), *scratch = json_array();
    int records = 0;
    for (size_t i = 0; i < FY_ARRAY_SIZE(subdirs); i++) {
        char dir[320];
        snprintf(dir, sizeof(dir), "%s/%s", q->dir, subdirs[i]);
        int n = read_records_full(dir, cgroups, scratch);
        records += n > 0 ? n : 0;
    }
    int cg_removed = 0, cg_kept = 0, sc_removed = 0;
    size_t i;
    json_t *v;
    json_array_foreach(cgroups, i, v) {
        const char *c = json_string_value(v);
        const char *base = c ? strrchr(c, '/') : NULL;
        if (!c || strncmp(c, "/sys/fs/cgroup/", 15) != 0 || !base || strncmp(base + 1, "forgeyard-", 10) != 0 ||
            strstr(c, "/../"))
            continue;
        if (rmdir(c) == 0)
            cg_removed++;
        else if (errno != ENOENT)
            cg_kept++;
    }
    json_array_foreach(scratch, i, v) {
        const char *sdir = json_string_value(v);
        const char *base = sdir ? strrchr(sdir, '/') : NULL;
        struct stat st;
        if (!sdir || !base || strncmp(base + 1, "forgeyard-attempt-", 18) != 0 || strstr(sdir, "/..") ||
            !((strncmp(sdir, "/dev/shm/", 9) == 0 && base == sdir + 8) ||
              (strncmp(sdir, "/tmp/", 5) == 0 && base == sdir + 4)) ||
            lstat(sdir, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        nftw(sdir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        sc_removed += lstat(sdir, &st) < 0;
    }
    json_decref(cgroups);
    json_decref(scratch);
    return json_pack("{s:i,s:i,s:i,s:i}", "records_left", records, "cgroups_removed", cg_removed,
                     "cgroups_not_removable", cg_kept, "scratch_removed", sc_removed);
}

int linux_qualify_run(const fy_policy *policy, uint32_t groups, const char *tmp_parent, const char *const *plant_dirs,
                json_t **ret, fy_error **reterr) {
    if (!ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "ret is NULL");
    *ret = NULL;
    if (policy && policy->origin_pid != fy_getpid_cached())
        return err_set(reterr, FY_E_FORKED, FY_STEP_NONE, 0, NULL, "policy was created in another process");
    if (!tmp_parent)
        tmp_parent = "/tmp";
    if (!safe_path(tmp_parent))
        return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "unusable directory for the suite: %s", tmp_parent);
    if (!plant_dirs)
        plant_dirs = default_plant_dirs;
    for (size_t i = 0; plant_dirs[i]; i++)
        if (!safe_path(plant_dirs[i]) || i > 16)
            return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "unusable plant directory");
    if (!groups)
        groups = QUALIFY_STAGES | QUALIFY_LEAKAGE | QUALIFY_ESCAPE | QUALIFY_RESIDUE;
    uint64_t t0 = fy_now_usec();
    fy_policy *release = NULL;
    if (!policy) {
        int r = fy_policy_new(FY_PROFILE_RELEASE, &release, reterr);
        if (r < 0)
            return r;
        policy = release;
    }
    struct qctx q = {.base = policy, .plant_dirs = plant_dirs};
    snprintf(q.token, sizeof(q.token), "%012llx", (unsigned long long)(rnd64() & 0xffffffffffffull));
    snprintf(q.dir, sizeof(q.dir), "%s/forgeyard-qualify-XXXXXX", tmp_parent);
    if (!mkdtemp(q.dir)) {
        int e = errno;
        fy_policy_free(release);
        return err_set(reterr, err_from_errno(e), FY_STEP_NONE, e, NULL, "creating the suite's directory under %s: %s",
                       tmp_parent, strerror(e));
    }
    /* Traversable by the workload's uid: only the sandbox's view may hide
     * what is in here (the escape probes rely on it). */
    chmod(q.dir, 0755);
    snprintf(q.state, sizeof(q.state), "%s/state", q.dir);
    json_t *root = json_object();
    q.probes = json_array();
    json_object_set_new(root, "suite_version", json_integer(FY_QUALIFY_SUITE_VERSION));
    json_object_set_new(root, "library", json_string(fy_version_string()));
    json_object_set_new(root, "profile", json_string(fy_profile_name(policy->profile)));
    struct utsname u;
    json_object_set_new(root, "host", json_pack("{s:s,s:s}", "kernel", uname(&u) == 0 ? u.release : "unknown",
                                                "caller", geteuid() == 0 ? "root" : "unprivileged"));
    int r = run_baseline(&q, root, reterr);
    if (r >= 0) {
        if (groups & QUALIFY_STAGES) {
            static const uint32_t stages[] = {FY_STAGE_ISOLATION, FY_STAGE_FILESYSTEM, FY_STAGE_EXEC, FY_STAGE_OUTPUT,
                                              FY_STAGE_CLEANUP};
            for (size_t i = 0; i < FY_ARRAY_SIZE(stages); i++)
                probe_stage(&q, stages[i]);
        }
        if (groups & QUALIFY_LEAKAGE)
            for (int v = AFTER_SUCCESS; v <= AFTER_CANCEL; v++)
                probe_leakage(&q, v);
        if (groups & QUALIFY_ESCAPE) {
            probe_reach(&q);
            probe_escape_privileged(&q);
        }
        if (groups & QUALIFY_RESIDUE) {
            probe_residue_cancel(&q);
            probe_residue_restart(&q);
        }
    }
    json_t *cleanup = suite_cleanup(&q);
    nftw(q.dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    fy_policy_free(release);
    if (r < 0) {
        json_decref(cleanup);
        json_decref(root);
        json_decref(q.probes);
        return r;
    }
    bool passed = json_array_size(q.probes) > 0;
    size_t i;
    json_t *v;
    json_array_foreach(q.probes, i, v)
        passed = passed && json_is_true(json_object_get(v, "passed"));
    json_object_set_new(root, "passed", json_boolean(passed));
    json_object_set_new(root, "probes", q.probes);
    json_object_set_new(root, "suite_cleanup", cleanup);
    json_object_set_new(root, "duration_usec", json_integer((json_int_t)(fy_now_usec() - t0)));
    *ret = root;
    return 0;
}
