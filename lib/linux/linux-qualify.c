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
 * only through the public API and the internal policy hooks.
 *
 * This file is the runner (linux_qualify_run: the suite's directory, the
 * report, the suite's own cleanup) and what the probe groups share, declared
 * in linux-qualify.h: the report's probe entries, the attempts (qa_*) and
 * the host-side observation of markers and state records. The groups are
 * linux-qualify-stages.c (baseline, stage-attribution.*),
 * linux-qualify-leakage.c, linux-qualify-escape.c and
 * linux-qualify-residue.c: they make their policies with qa_policy and
 * qa_inject_delay, over the seam's qualify_* hooks (backend.h). */
#include <jansson.h>

#include "backend.h"
#include "internal.h"

#include "linux-backend.h"
#include "linux-qualify.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define ATTEMPT_WALL_USEC   30000000u   /* no attempt of the suite may run longer */
#define ATTEMPT_GRACE_USEC  1000000u    /* SIGTERM to SIGKILL when the suite cancels */
#define WAIT_USEC           20000000u   /* how long the suite waits for one attempt */
#define GONE_USEC           2000000u    /* how long a killed marker process may take to vanish */
#define OUTPUT_MAX          (64u << 10)

static const char *const default_plant_dirs[] = {"/tmp", "/work/tmp", "/home/forgeyard", "/dev/shm", NULL};

/* ---- the run ---- */

uint64_t qa_rnd64(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = util_now_usec() ^ ((uint64_t)getpid() << 32);
    return v;
}

/* A process marker: a sleep duration whose digits are unique to one probe.
 * Scripts assemble it at run time ("$m.DIGITS"), so that only the sleep's
 * own command line ever holds it. */
void qa_make_marker(char digits[16], char marker[24]) {
    snprintf(digits, 16, "%09u", (unsigned)(qa_rnd64() % 1000000000u));
    snprintf(marker, 24, "59.%s", digits);
}

bool qa_safe_path(const char *s) {
    if (!s || s[0] != '/' || strlen(s) > 160)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '/' ||
              *c == '.' || *c == '_' || *c == '-'))
            return false;
    return true;
}

/* Adds a probe to the report. Takes the evidence reference. */
void FY_PRINTF(6, 7) qa_add_probe(struct qctx *q, const char *id, const char *name, bool passed,
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

void qa_free(struct qa_attempt *a) {
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
fy_policy *qa_policy(struct qctx *q, const char *state_dir, struct qa_attempt *a) {
    memset(a, 0, sizeof(*a));
    a->exit_code = -1;
    snprintf(a->out_path, sizeof(a->out_path), "%s/out-%u", q->dir, ++q->seq);
    fy_policy *p = qualify_policy_copy(q->base);
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

/* The stage probes' controlled delay. */
void qa_inject_delay(fy_policy *p, uint32_t stage, uint64_t usec) { qualify_inject_delay(p, stage, usec); }

void qa_fail(struct qa_attempt *a, const char *what, int r, fy_error *e) {
    free(a->error);
    a->error = util_asprintf("%s: %s: %s", what, fy_error_name(r), e ? fy_error_message(e) : fy_strerror(r));
    fy_error_free(e);
}

/* Prepares and starts /bin/sh -c script. Frees p. On failure the attempt
 * records why; the return value is the FY_E_* code. */
int qa_start(fy_policy *p, const char *script, struct qa_attempt *a, fy_prepared **ret_prepared) {
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    if (!p) {
        a->error = util_strdup("out of memory");
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
        a->out = util_strdup("");
}

/* Waits for the end of a started attempt (cancelling it when it overruns)
 * and collects its output. */
void qa_finish(struct qa_attempt *a) {
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
            a->error = util_strdup("the attempt overran the suite's wait and was cancelled");
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
bool qa_wait_output(struct qa_attempt *a, const char *needle) {
    uint64_t end = util_now_usec() + QA_READY_USEC;
    while (a->h && !a->res && util_now_usec() < end) {
        if (file_contains(a->out_path, needle))
            return true;
        if (fy_handle_wait(a->h, 10000, &a->res, NULL) < 0)
            return false;
    }
    return a->h && !a->res && file_contains(a->out_path, needle);
}

int qa_run_script(fy_policy *p, const char *script, struct qa_attempt *a) {
    int r = qa_start(p, script, a, NULL);
    if (r >= 0)
        qa_finish(a);
    return r;
}

/* The attempt's ending, for evidence. */
json_t *qa_json(const struct qa_attempt *a) {
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
const char *qa_find_line(const char *out, const char *prefix) {
    size_t n = strlen(prefix);
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, prefix, n) == 0)
            return l;
    return NULL;
}

char *qa_line_dup(const char *line) {
    const char *e = strchr(line, '\n');
    return e ? strndup(line, (size_t)(e - line)) : strdup(line);
}

/* ---- host-side observation ---- */

/* Host processes whose command line contains marker. */
int qa_host_marker_count(const char *marker) {
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
int qa_host_marker_gone(const char *marker, uint64_t *ret_usec) {
    uint64_t t0 = util_now_usec();
    int n;
    while ((n = qa_host_marker_count(marker)) > 0 && util_now_usec() - t0 < GONE_USEC)
        usleep(5000);
    *ret_usec = util_now_usec() - t0;
    return n;
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
        char *path = util_asprintf("%s/%s", dir, e->d_name);
        char *text = path ? read_text(path) : NULL;
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            json_t *to = strncmp(line, "cgroup ", 7) == 0 ? cgroups : strncmp(line, "scratch ", 8) == 0 ? scratch : NULL;
            if (!to)
                continue;
            char *c = qa_line_dup(strchr(line, ' ') + 1);
            json_array_append_new(to, json_string(c ? c : ""));
            free(c);
        }
        free(text);
        free(path);
    }
    closedir(d);
    return n;
}

int qa_read_records(const char *dir, json_t *cgroups) { return read_records_full(dir, cgroups, NULL); }

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
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
    /* (a policy made in another process was refused by core: qualify_run) */
    if (!tmp_parent)
        tmp_parent = "/tmp";
    if (!qa_safe_path(tmp_parent))
        return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "unusable directory for the suite: %s", tmp_parent);
    if (!plant_dirs)
        plant_dirs = default_plant_dirs;
    for (size_t i = 0; plant_dirs[i]; i++)
        if (!qa_safe_path(plant_dirs[i]) || i > 16)
            return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "unusable plant directory");
    if (!groups)
        groups = QUALIFY_STAGES | QUALIFY_LEAKAGE | QUALIFY_ESCAPE | QUALIFY_RESIDUE;
    uint64_t t0 = util_now_usec();
    fy_policy *release = NULL;
    if (!policy) {
        int r = fy_policy_new(FY_PROFILE_RELEASE, &release, reterr);
        if (r < 0)
            return r;
        policy = release;
    }
    struct qctx q = {.base = policy, .plant_dirs = plant_dirs};
    snprintf(q.token, sizeof(q.token), "%012llx", (unsigned long long)(qa_rnd64() & 0xffffffffffffull));
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
    json_object_set_new(root, "profile", json_string(qualify_profile_name(policy)));
    struct utsname u;
    json_object_set_new(root, "host", json_pack("{s:s,s:s}", "kernel", util_uname(&u) == 0 ? u.release : "unknown",
                                                "caller", geteuid() == 0 ? "root" : "unprivileged"));
    int r = qa_run_baseline(&q, root, reterr);
    if (r >= 0) {
        if (groups & QUALIFY_STAGES)
            qa_group_stages(&q);
        if (groups & QUALIFY_LEAKAGE)
            qa_group_leakage(&q);
        if (groups & QUALIFY_ESCAPE)
            qa_group_escape(&q);
        if (groups & QUALIFY_RESIDUE)
            qa_group_residue(&q);
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
    json_object_set_new(root, "duration_usec", json_integer((json_int_t)(util_now_usec() - t0)));
    *ret = root;
    return 0;
}
