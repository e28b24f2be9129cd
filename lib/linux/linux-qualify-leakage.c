/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The qualification suite's leakage.* probes (QUALIFY_LEAKAGE): files and a
 * daemon left by an attempt that succeeds, fails or is cancelled must be
 * invisible to a later attempt and gone from the host. The runner and the
 * shared helpers: linux-qualify.c, linux-qualify.h. */
#include <jansson.h>

#include "internal.h"

#include "linux-qualify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- 2. leakage ---- */

/* A script fragment (the other, QA_SCRIPT_START_MARKER, is shared with the
 * residue probes: linux-qualify.h). $m is assembled at run time:
 * "59.<digits>". */
#define SCRIPT_FIND_MARKER                                                                         \
    "for f in /proc/[0-9]*/cmdline; do\n"                                                          \
    "  case \"$(tr '\\000' ' ' < \"$f\" 2>/dev/null)\" in *\"$m\"*) echo \"proc-seen ${f#/proc/}\";; esac\n" \
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
    for (const char *l = qa_find_line(out, prefix); l;
         l = strchr(l, '\n') ? qa_find_line(strchr(l, '\n') + 1, prefix) : NULL) {
        char *v = qa_line_dup(l + strlen(prefix));
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
    qa_make_marker(digits, marker);
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
                       "done\n" QA_SCRIPT_START_MARKER
                       "for d in $seen; do [ -e \"$d/$n\" ] && echo \"file-seen $d\"; done\n");
    strbuf_append(&sb, endings[variant]);
    struct qa_attempt a, b;
    fy_policy *p = qa_policy(q, NULL, &a);
    int host_during = -1;
    if (sb.oom) {
        fy_policy_free(p);
        a.error = util_strdup("out of memory");
    } else if (qa_start(p, sb.buf, &a, NULL) >= 0 && variant == AFTER_CANCEL && qa_wait_output(&a, "ready")) {
        host_during = qa_host_marker_count(marker);
        fy_handle_cancel(a.h, FY_CANCEL_USER, NULL);
    }
    strbuf_free(&sb);
    qa_finish(&a);
    uint64_t gone_usec = 0;
    int host_after = qa_host_marker_gone(marker, &gone_usec);
    const char *out = a.out ? a.out : "";
    json_t *pa = qa_json(&a), *planted = lines_with(out, "planted ");
    size_t i, nplanted = json_array_size(planted), nseen = 0;
    json_t *v;
    bool paths_ok = true;
    json_array_foreach(planted, i, v) {
        nseen += has_line(out, "file-seen ", json_string_value(v));
        paths_ok = paths_ok && qa_safe_path(json_string_value(v));
    }
    bool proc_inside = qa_find_line(out, "proc-seen ") != NULL;
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
        if (qa_safe_path(json_string_value(v)))
            strbuf_printf(&sb, " %s", json_string_value(v));
    strbuf_append(&sb, "; do if [ -e \"$d/$n\" ]; then echo \"file-seen $d\"; else echo \"file-absent $d\"; fi; done\n"
                       SCRIPT_FIND_MARKER "echo \"visible-processes $(ls -d /proc/[0-9]* | wc -l)\"\necho observed\n");
    p = qa_policy(q, NULL, &b);
    if (sb.oom) {
        fy_policy_free(p);
        b.error = util_strdup("out of memory");
    } else {
        qa_run_script(p, sb.buf, &b);
    }
    strbuf_free(&sb);
    out = b.out ? b.out : "";
    json_t *la = qa_json(&b), *lseen = lines_with(out, "file-seen ");
    json_t *lp = lines_with(out, "proc-seen ");
    size_t nprocs = json_array_size(lp);
    json_decref(lp);
    const char *vis = qa_find_line(out, "visible-processes ");
    json_object_set_new(la, "files_seen", lseen);
    json_object_set_new(la, "marker_processes_seen", json_integer((json_int_t)nprocs));
    if (vis)
        json_object_set_new(la, "processes_visible", json_integer(atoi(vis + 18)));
    bool observed = b.outcome == FY_OUTCOME_SUCCEEDED && qa_find_line(out, "observed") != NULL;
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
        qa_add_probe(q, ids[variant], names[variant], true, ev,
                     "planted in %zu dir(s) and sleep %s (seen inside%s); later attempt saw 0 files, 0 marker processes; "
                     "host: none left",
                     nplanted, marker, variant == AFTER_CANCEL ? " and from the host" : "");
    else if (!planting_ok)
        qa_add_probe(q, ids[variant], names[variant], false, ev,
                     "the planting attempt did not plant and see its markers as expected (%zu planted, %zu seen, process %s)",
                     nplanted, nseen, proc_inside ? "seen" : "not seen");
    else
        qa_add_probe(q, ids[variant], names[variant], false, ev,
                     "leaked: later attempt saw %zu file(s) and %zu marker process(es)%s; host has %zu file(s), %d process(es)",
                     later_files, nprocs, observed ? "" : " (it did not run to the end)", host_files, host_after);
}

/* The leakage.* probes: after success, failure and cancellation. */
void qa_group_leakage(struct qctx *q) {
    for (int v = AFTER_SUCCESS; v <= AFTER_CANCEL; v++)
        probe_leakage(q, v);
}
