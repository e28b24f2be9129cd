/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the files of the qualification suite share: linux-qualify.c (the
 * runner, the report, the attempts and the host-side observation) and the
 * probe groups, linux-qualify-stages.c, linux-qualify-leakage.c,
 * linux-qualify-escape.c and linux-qualify-residue.c. Private to
 * lib/linux/; the functions are documented where they are defined. */
#ifndef FY_LINUX_QUALIFY_H
#define FY_LINUX_QUALIFY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "internal.h"

#define QA_READY_USEC 10000000u /* how long a workload may take to get ready */

/* A script fragment (the leakage and residue probes): starts the marker
 * process and waits until /proc shows it ("proc-seen PID"). $m is
 * assembled at run time: "59.<digits>". */
#define QA_SCRIPT_START_MARKER                                                                     \
    "setsid sleep \"$m\" </dev/null >/dev/null 2>&1 &\n"                                           \
    "i=0\n"                                                                                        \
    "while [ $i -lt 300 ]; do\n"                                                                   \
    "  for f in /proc/[0-9]*/cmdline; do\n"                                                        \
    "    case \"$(tr '\\000' ' ' < \"$f\" 2>/dev/null)\" in *\"$m\"*) echo \"proc-seen ${f#/proc/}\"; i=1000; break;; esac\n" \
    "  done\n"                                                                                     \
    "  [ $i -ge 1000 ] && break\n"                                                                 \
    "  sleep 0.01; i=$((i+1))\n"                                                                   \
    "done\n"

/* One run of the suite. */
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

/* One attempt of a probe. */
struct qa_attempt {
    char out_path[320];
    fy_handle *h;
    fy_result *res;
    char *out;          /* stdout and stderr, NUL-terminated */
    int outcome;        /* 0: it never ran */
    int exit_code;      /* -1: none */
    char *error;        /* why it could not be prepared, started or waited for */
};

/* The report (linux-qualify.c). */
uint64_t qa_rnd64(void);
void qa_make_marker(char digits[16], char marker[24]);
bool qa_safe_path(const char *s);
void FY_PRINTF(6, 7) qa_add_probe(struct qctx *q, const char *id, const char *name, bool passed, json_t *evidence,
                                  const char *fmt, ...);

/* Attempts (linux-qualify.c). */
void qa_free(struct qa_attempt *a);
fy_policy *qa_policy(struct qctx *q, const char *state_dir, struct qa_attempt *a);
void qa_inject_delay(fy_policy *p, uint32_t stage, uint64_t usec);
void qa_fail(struct qa_attempt *a, const char *what, int r, fy_error *e);
int qa_start(fy_policy *p, const char *script, struct qa_attempt *a, fy_prepared **ret_prepared);
void qa_finish(struct qa_attempt *a);
bool qa_wait_output(struct qa_attempt *a, const char *needle);
int qa_run_script(fy_policy *p, const char *script, struct qa_attempt *a);
json_t *qa_json(const struct qa_attempt *a);
const char *qa_find_line(const char *out, const char *prefix);
char *qa_line_dup(const char *line);

/* Host-side observation (linux-qualify.c). */
int qa_host_marker_count(const char *marker);
int qa_host_marker_gone(const char *marker, uint64_t *ret_usec);
int qa_read_records(const char *dir, json_t *cgroups);

/* The probe groups, in the order linux_qualify_run calls them. */
int qa_run_baseline(struct qctx *q, json_t *root, fy_error **reterr); /* linux-qualify-stages.c */
void qa_group_stages(struct qctx *q);                                 /* linux-qualify-stages.c */
void qa_group_leakage(struct qctx *q);                                /* linux-qualify-leakage.c */
void qa_group_escape(struct qctx *q);                                 /* linux-qualify-escape.c */
void qa_group_residue(struct qctx *q);                                /* linux-qualify-residue.c */

#endif
