/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Windows backend (process level): a job object around the workload's
 * whole process tree, a restricted token, a per-attempt workspace with an
 * explicit ACL. Internal to lib/windows/. */
#ifndef FY_WINDOWS_BACKEND_H
#define FY_WINDOWS_BACKEND_H

#include <wchar.h>

#include "backend.h"

/* The probe's verdicts, one per control, as caps facts "report.<name>"
 * (fy_caps_to_json shows them under "controls"): one of these words, then
 * ": " and what was seen. */
#define WIN_ENFORCED "enforced"
#define WIN_UNVERIFIED "requested-unverified"
#define WIN_UNAVAILABLE "unavailable"

#define WIN_R_JOB "report.windows.job-kill-on-close"
#define WIN_R_JOB_LIST "report.windows.job-list"
#define WIN_R_PROCESSES "report.windows.job-process-limit"
#define WIN_R_MEMORY "report.windows.job-memory-limit"
#define WIN_R_CPU "report.windows.job-cpu-rate"
#define WIN_R_TOKEN "report.windows.restricted-token"
#define WIN_R_INTEGRITY "report.windows.integrity-level"
#define WIN_R_ACL "report.windows.workspace-acl"
#define WIN_R_HOST_ACL "report.windows.host-path-acl"
#define WIN_R_APPCONTAINER "report.windows.appcontainer"
#define WIN_R_NETWORK "report.windows.network"
#define WIN_R_FILESYSTEM "report.windows.filesystem"
#define WIN_F_WINE "windows.wine"  /* the Wine version when running under Wine */

/* Whether the fact key says "enforced" (the verdict's first word). */
bool win_verdict_enforced(const fy_caps *c, const char *key);

/* windows-probe.c: the family's probe (functional checks). */
int win_probe(fy_caps *c, uint64_t flags, fy_error **reterr);
/* The Wine version, or NULL on Windows (ntdll!wine_get_version). */
const char *win_wine_version(void);

/* windows-token.c: a restricted copy of the caller's primary token
 * (DISABLE_MAX_PRIVILEGE, Administrators deny-only, restricting SIDs: the
 * attempt's own SID, Everyone, Users, Authenticated Users, RESTRICTED),
 * at integrity rid (0: unchanged; SECURITY_MANDATORY_LOW_RID...). The
 * attempt's SID is returned in *ret_sid (LocalFree). 0 or a Win32 error. */
unsigned long win_restricted_token(void **ret_token, void **ret_sid, unsigned long integrity_rid);
/* A directory whose DACL is protected (nothing inherited) and grants full
 * control to the caller, SYSTEM and sid only; labelled at integrity
 * label_rid (inherited below it) unless 0. 0 or a Win32 error. */
unsigned long win_make_private_dir(const wchar_t *path, void *sid, unsigned long label_rid);
/* Removes a directory tree (best effort); 0 when nothing is left. */
int win_remove_tree(const wchar_t *path);

/* windows-acl.c */
/* The token's integrity rid (SECURITY_MANDATORY_*_RID). 0 or a Win32 error. */
unsigned long win_token_integrity(void *token, unsigned long *rid);
/* A no-write-up mandatory label of integrity rid on path, inherited below
 * it; the label's rid read back (0: none). 0 or a Win32 error. */
unsigned long win_set_label(const wchar_t *path, unsigned long rid);
unsigned long win_label_of(const wchar_t *path, unsigned long *rid);
/* How many access ACEs of path's DACL name sid (-1: unreadable); the
 * rights they allow in *mask (may be NULL). */
int win_sid_aces(const wchar_t *path, void *sid, unsigned long *mask);
/* A host path of the plan ACL'd to the attempt's SID for its duration:
 * read and execute, or also write and delete when writable (inherited by
 * everything below a directory); a writable one is also labelled at
 * label_rid when that is not 0 (a low-integrity workload), its old label
 * kept (a label that cannot be set is said in label_err, not returned). win_revoke removes the attempt's ACEs and puts the label back,
 * then reads the DACL back: 0 only when it names the SID no more. */
struct win_grant {
    wchar_t *path;
    const char *target;     /* the plan's name for it (the policy path) */
    void *sid;              /* whom it grants: the attempt's SID or its AppContainer's */
    uint32_t role;          /* PR_* */
    bool writable, granted, relabelled;
    bool read_back;         /* the ACE was read back after it was set */
    bool no_dacl;           /* the path had no DACL (open to all): left alone */
    unsigned long old_label;
    unsigned long label_err; /* the low label could not be set (0: set or not asked) */
};
unsigned long win_grant(struct win_grant *g, void *sid, unsigned long label_rid);
unsigned long win_revoke(struct win_grant *g, void *sid);

/* Whether path (a directory when want_dir) is the caller's own: owned by
 * the caller's user SID, no reparse point, and no ACE that lets anyone but
 * the caller, SYSTEM or Administrators write it. */
bool win_callers_own(const wchar_t *path, bool want_dir);
/* Removes path's mandatory label (an empty label list). 0 or a Win32 error. */
unsigned long win_clear_label(const wchar_t *path);

/* windows-record.c: what an attempt changed outside its workspace (ACEs
 * on host paths, their old labels, its AppContainer profile), recorded
 * before each change in <workspace>.acl, a file the caller's alone, so
 * that fy_gc can take it back after a host died mid-attempt. */
void *win_record_open(const wchar_t *workspace);
void win_record_line(void *record, const char *fmt, ...) FY_PRINTF(2, 3);
/* Closes it; deletes it when remove (everything was taken back). */
void win_record_close(void **record, const wchar_t *workspace, bool remove);
/* fy_gc: undoes what the record at path lists. 0 when all was undone. */
int win_record_undo(const wchar_t *path);

/* The secret files' directory: a protected DACL that gives the caller full
 * control and sid (and ac_sid, when not NULL) read and list only,
 * inherited by the files made in it. 0 or a Win32 error. */
unsigned long win_make_secret_dir(const wchar_t *path, void *sid, void *ac_sid);
/* The roles of the host paths an attempt is granted (source, build,
 * output, toolchains, binds; a Linux plan's runtime paths name nothing on
 * Windows). */
bool win_granted_role(uint32_t role);
/* The limits the policy sets that Windows has no mechanism for, into lim
 * (a json_t object: the plan's and the result's "limits"), each saying
 * "unenforced" and why. */
void win_unenforced_limits(const struct fy_plan *np, struct json_t *lim);

/* windows-snapshot.c: persisted probe snapshots (the family's fingerprint,
 * load and store; see backend.h). */
int win_snapshot_fingerprint(struct strbuf *key);
char *win_snapshot_load(const char *dir, const char *key, fy_error **reterr);
int win_snapshot_store(const char *dir, const char *key, const char *snapshot);

/* windows-plan.c */
struct win_plan {
    wchar_t *app;        /* resolved program (NULL: not found) */
    wchar_t *cmdline;    /* the argv, quoted by the MSVCRT rules */
    wchar_t **vars;      /* "NAME=value" (workspace-dependent ones added at start) */
    size_t nvars;
    wchar_t *cwd;        /* a host directory, or NULL: the attempt's workspace */
    uint64_t memory, pids, cpu_millis, output;
    bool want_memory, want_pids, want_cpu; /* asked (any mode) */
    bool want_low;       /* low integrity asked (any mode) */
    bool appcontainer;   /* run in a per-attempt AppContainer (network deny) */
    size_t file_secrets; /* secrets delivered as files (FORGEYARD_SECRETS) */
    char *describe_json;
};
int win_compile(const struct fy_plan *plan, const fy_caps *caps, void **ret, fy_error **reterr);
void win_plan_free(void *plan);
const char *win_describe(const void *plan);
/* UTF-8 to UTF-16 (malloc'd), NULL on bad input or OOM. */
wchar_t *win_wide(const char *s);
/* A policy's host path on Windows: "/C:/dir/sub" (the form core's path
 * checks accept: absolute, with the drive as first component) is
 * "C:\\dir\\sub"; other paths keep their form, with '\\' separators. */
char *win_host_path_utf8(const char *path);
wchar_t *win_host_path(const char *path);
/* Whether a file name is one Windows takes for a device (CON, NUL, COM1,
 * also with an extension) or alters (a trailing dot or space, "." and ".."). */
bool win_name_is_reserved(const char *name);
/* Quotes one argument by the MSVCRT rules into sb (UTF-8). */
void win_quote_arg(struct strbuf *sb, const char *arg);

/* windows-spawn.c */
int win_start(fy_handle *h, fy_error **reterr);
int win_process(fy_handle *h, fy_error **reterr);
void win_terminate(fy_handle *h);
void win_destroy(fy_handle *h);
void win_forget(fy_handle *h);
int win_get_fd(fy_handle *h);
int win_stdio_fd(fy_handle *h, uint32_t stream);
uint64_t win_next_deadline(fy_handle *h);
/* Where workspaces are made: state_dir (a policy host path) or %TEMP%,
 * with a trailing '\\'. 0 or a Win32 error. */
#define WIN_WORKSPACE_PREFIX L"forgeyard-"
unsigned long win_workspace_parent(const char *state_dir, wchar_t out[260]);
/* fy_gc: the workspaces of dead hosts. */
int win_gc(const char *state_dir, uint64_t *destroyed, fy_error **reterr);

#endif
