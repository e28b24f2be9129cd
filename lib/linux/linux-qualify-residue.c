/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The qualification suite's residue.* probes (QUALIFY_RESIDUE): nothing of
 * a cancelled attempt remains, and nothing of the sandbox of a host program
 * killed with SIGKILL remains after fy_gc, which leaves its state directory
 * reusable (the probe forks that host program). The runner and the shared
 * helpers: linux-qualify.c, linux-qualify.h. */
#include <jansson.h>

#include "internal.h"

#include "linux-qualify.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- 4. residue and reuse ---- */

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
        char *sub = util_asprintf("%s/%s", path, e->d_name);
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

static const char *residue_script(char *buf, size_t len, const char *digits) {
    snprintf(buf, len, "m=59; m=\"$m.%s\"\n" QA_SCRIPT_START_MARKER "echo ready\nsleep 30\n", digits);
    return buf;
}

static void probe_residue_cancel(struct qctx *q) {
    char state[340], digits[16], marker[24], script[1024];
    snprintf(state, sizeof(state), "%s/state-cancel", q->dir);
    qa_make_marker(digits, marker);
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, state, &a);
    json_t *ev = json_object(), *cgroups = json_array();
    int records = -1, host_during = -1;
    bool ready = false;
    if (qa_start(p, residue_script(script, sizeof(script), digits), &a, NULL) >= 0 &&
        (ready = qa_wait_output(&a, "ready"))) {
        records = qa_read_records(state, cgroups);
        host_during = qa_host_marker_count(marker);
        fy_handle_cancel(a.h, FY_CANCEL_USER, NULL);
    }
    qa_finish(&a);
    uint64_t gone_usec = 0;
    int host_after = qa_host_marker_gone(marker, &gone_usec);
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
    int records_after = qa_read_records(state, NULL), run_records = qa_read_records(q->state, NULL);
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
        qa_add_probe(q, "residue.after-cancel", "Nothing of a cancelled attempt remains", true, ev,
                     "cancelled with sleep %s running; its %zu cgroup(s), record and processes gone; witness 0/0/0/0",
                     marker, json_array_size(cgroups));
    else
        qa_add_probe(q, "residue.after-cancel", "Nothing of a cancelled attempt remains", false, ev,
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
    qa_make_marker(digits, marker);
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
        if (child > 0 && poll(&pf, 1, (int)(QA_READY_USEC / 1000) + 2000) == 1 && read(pfd[0], &c, 1) == 1) {
            ready = true;
            records = qa_read_records(state, cgroups);
            host_during = qa_host_marker_count(marker);
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
    int host_after_kill = qa_host_marker_gone(marker, &gone_usec);
    json_t *before_gc = existing(cgroups);
    int records_before_gc = qa_read_records(state, NULL);
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
    int records_after = qa_read_records(state, NULL);
    json_t *cg_left = existing(cgroups);
    json_t *named = child > 0 ? cg_find(prefix) : json_array();
    int host_after = qa_host_marker_count(marker);
    /* And the state directory is usable again. */
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, state, &a);
    qa_run_script(p, ":", &a);
    int records_reuse = qa_read_records(state, NULL);

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
        qa_add_probe(q, "residue.after-restart",
                     "Nothing remains of a SIGKILLed host program's sandbox after fy_gc; the state directory is reusable",
                     true, ev,
                     "host program %d killed: sandbox ended with it; gc destroyed %llu, removed %zu cgroup(s); 0 records, "
                     "0 forgeyard-%d-* cgroups; reuse succeeded",
                     (int)child, (unsigned long long)destroyed, n_before, (int)child);
    else
        qa_add_probe(q, "residue.after-restart",
                     "Nothing remains of a SIGKILLed host program's sandbox after fy_gc; the state directory is reusable",
                     false, ev,
                     "%s: %d record(s), %zu cgroup(s) (%zu named forgeyard-%d-*), %d marker process(es) left after gc",
                     ready ? "ran" : "the forked host program never got its sandbox ready", records_after,
                     json_array_size(cg_left), json_array_size(named), (int)child, host_after);
    json_decref(named);
    qa_free(&a);
}

/* The residue.* probes: after a cancel, then after the host program's
 * SIGKILL and restart. */
void qa_group_residue(struct qctx *q) {
    probe_residue_cancel(q);
    probe_residue_restart(q);
}
