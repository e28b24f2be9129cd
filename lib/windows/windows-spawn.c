/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Running an attempt on Windows. The workload is created suspended with a
 * restricted token, in a job object (PROC_THREAD_ATTRIBUTE_JOB_LIST, or
 * assigned before it is resumed where that attribute is missing), checked
 * to be in the job, and only then resumed. The job kills the whole tree
 * when its last handle closes (ours: also when the host dies), allows no
 * breakaway, and reports through an I/O completion port, which a monitor
 * thread turns into the handle's waitable event. Only the three standard
 * handles are inherited (PROC_THREAD_ATTRIBUTE_HANDLE_LIST). */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <sddl.h>

#include <jansson.h>

#include "windows-appcontainer.h"
#include "windows-backend.h"

#define KEY_JOB 1
#define KEY_QUIT 2
#define EXIT_KILLED 0xC000013Au /* STATUS_CONTROL_C_EXIT: what a killed tree exits with */
#define STREAM_BUFFER_MAX (1u << 20)
#define DRAIN_USEC 5000000u /* how long output may go on after the tree is gone */

struct wstream {
    HANDLE rd;          /* host end, read by the thread */
    HANDLE thread;
    char *buf;          /* read, not yet delivered (under lock) */
    size_t len;
    bool eof;           /* the thread saw the end (under lock) */
    bool done;          /* delivered everything and said so */
    bool lost;          /* output was dropped for want of memory (under lock) */
    HANDLE spool;       /* FY_STDIO_FILE: the file */
    struct wx *x;
    int index;
};

struct wx {
    HANDLE job, iocp, monitor, process, work, token;
    HANDLE cancel_wait; /* sets work when fy_handle_cancel sets the handle's wakeup */
    HANDLE deadline_timer; /* sets work at the wall-clock limit */
    volatile LONG timer_fired;
    HANDLE drain_timer;  /* wakes the handle when the output's grace is over */
    bool drain_cut;
    void *sid;
    wchar_t workspace[MAX_PATH];
    bool have_workspace;
    CRITICAL_SECTION lock;
    CONDITION_VARIABLE drained;
    bool lock_ready;
    /* What the monitor saw (under lock). */
    bool zero, mem_limit, proc_limit;
    uint32_t new_processes;
    struct wstream out[3];
    HANDLE child_std[3];
    int host_fd[3];     /* FY_STDIO_PIPE: the host's end, a CRT descriptor (-1: none) */
    /* The owner's view. */
    bool setup_failed;
    uint32_t setup_step;
    int setup_errno;
    char *setup_detail;
    bool main_ended, exit_seen, killed, finished;
    DWORD exit_code;
    uint64_t t_job, t_ws, t_exec, t_exit, t_ended, t_eof;
    uint64_t output_bytes, output_cap, stream_bytes[3];
    bool truncated;
    json_t *iso;        /* the isolation achieved, rendered at the end */
    char *lim_json;
    unsigned long integrity; /* the token's integrity rid, read back */
    unsigned long label_err; /* labelling the workspace low failed (requested only) */
    struct win_grant *grants; /* the plan's host paths ACL'd to the attempt */
    size_t ngrants;
    struct win_ac_api ac;     /* network deny: the AppContainer */
    wchar_t ac_name[WIN_AC_NAME_MAX + 1];
    void *ac_sid;             /* its SID (FreeSid); NULL: none */
    SECURITY_CAPABILITIES ac_caps;
    bool ac_deleted;
    void *record;             /* <workspace>.acl: what fy_gc would take back */
    /* Secrets: the files' directory (NULL: none), how many files were
     * written; stdin's writer thread and its end of the pipe. */
    wchar_t *secrets_dir;
    size_t secret_files;
    /* ... held open from its making to its removal, listing access shared
     * for reading and writing but not deleting: the workload, whose
     * workspace this is, cannot rename it away (a rename opens it for
     * DELETE) and put a junction to the caller's files in its place. The
     * cleanup also checks that the path still names this directory. */
    HANDLE secrets_dir_h;
    wchar_t **secret_names; /* the files written (secret_files of them) */
    HANDLE secret_thread, secret_wr;
    const struct plan_secret *stdin_secret;
};


static void close_h(HANDLE *hp) {
    if (*hp && *hp != INVALID_HANDLE_VALUE)
        CloseHandle(*hp);
    *hp = NULL;
}

static int errno_of(DWORD e) {
    switch (e) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: case ERROR_BAD_EXE_FORMAT: return ENOENT;
    case ERROR_ACCESS_DENIED: case ERROR_PRIVILEGE_NOT_HELD: return EACCES;
    case ERROR_NOT_ENOUGH_MEMORY: case ERROR_OUTOFMEMORY: case ERROR_COMMITMENT_LIMIT: return ENOMEM;
    case ERROR_NOT_ENOUGH_QUOTA: return EAGAIN;
    default: return EIO;
    }
}

static const struct fy_plan *neutral(const fy_handle *h) { return h->pr->neutral; }

/* ---- threads ---- */

static DWORD WINAPI monitor_main(LPVOID arg) {
    struct wx *x = arg;
    for (;;) {
        DWORD msg = 0;
        ULONG_PTR key = 0;
        LPOVERLAPPED ov = NULL;
        if (!GetQueuedCompletionStatus(x->iocp, &msg, &key, &ov, INFINITE)) {
            if (GetLastError() == ERROR_ABANDONED_WAIT_0 || GetLastError() == ERROR_INVALID_HANDLE)
                return 0;
            continue;
        }
        if (key == KEY_QUIT)
            return 0;
        if (key != KEY_JOB)
            continue;
        EnterCriticalSection(&x->lock);
        switch (msg) {
        case JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO: x->zero = true; break;
        case JOB_OBJECT_MSG_NEW_PROCESS: x->new_processes++; break;
        case JOB_OBJECT_MSG_ACTIVE_PROCESS_LIMIT: x->proc_limit = true; break;
        case JOB_OBJECT_MSG_JOB_MEMORY_LIMIT: case JOB_OBJECT_MSG_PROCESS_MEMORY_LIMIT: x->mem_limit = true; break;
        default: break;
        }
        LeaveCriticalSection(&x->lock);
        SetEvent(x->work);
    }
}

static DWORD WINAPI reader_main(LPVOID arg) {
    struct wstream *s = arg;
    struct wx *x = s->x;
    char tmp[65536];
    for (;;) {
        DWORD n = 0;
        BOOL ok = ReadFile(s->rd, tmp, sizeof(tmp), &n, NULL);
        EnterCriticalSection(&x->lock);
        if (!ok || n == 0) {
            s->eof = true;
            LeaveCriticalSection(&x->lock);
            SetEvent(x->work);
            return 0;
        }
        /* Back-pressure: the workload waits while the host is behind. */
        while (s->len > STREAM_BUFFER_MAX && !x->finished)
            SleepConditionVariableCS(&x->drained, &x->lock, 100);
        char *nb = realloc(s->buf, s->len + n);
        if (nb) {
            memcpy(nb + s->len, tmp, n);
            s->buf = nb;
            s->len += n;
        } else {
            s->lost = true; /* said by drain(), never dropped silently */
        }
        LeaveCriticalSection(&x->lock);
        SetEvent(x->work);
    }
}

/* ---- output ---- */

static void end_stream(fy_handle *h, struct wx *x, int i) {
    struct wstream *s = &x->out[i];
    if (s->done)
        return;
    s->done = true;
    const struct plan_stdio *ps = &neutral(h)->stdio[i];
    if (ps->mode == FY_STDIO_CALLBACK && ps->fn)
        ps->fn(ps->userdata, (uint32_t)i, NULL, 0);
}

static void drain(fy_handle *h, struct wx *x, int i) {
    struct wstream *s = &x->out[i];
    if (!s->thread || s->done)
        return;
    EnterCriticalSection(&x->lock);
    char *buf = s->buf;
    size_t len = s->len;
    bool eof = s->eof, lost = s->lost;
    s->buf = NULL;
    s->len = 0;
    WakeAllConditionVariable(&x->drained);
    LeaveCriticalSection(&x->lock);
    if (lost && h->end == END_NONE) {
        handle_end(h, END_INFRA, FY_STEP_OUTPUT, ENOMEM, "output lost: out of memory while reading it");
        win_terminate(h);
    }
    size_t keep = len;
    if (x->output_cap != FY_UNLIMITED && x->output_bytes + keep > x->output_cap) {
        keep = x->output_cap > x->output_bytes ? (size_t)(x->output_cap - x->output_bytes) : 0;
        if (!x->truncated) {
            x->truncated = true;
            handle_end(h, END_RESOURCE, FY_STEP_OUTPUT, 0, "output");
            win_terminate(h);
        }
    }
    const struct plan_stdio *ps = &neutral(h)->stdio[i];
    if (ps->mode == FY_STDIO_CALLBACK) {
        if (keep && ps->fn)
            ps->fn(ps->userdata, (uint32_t)i, buf, keep);
    } else if (keep) {
        DWORD w = 0;
        for (size_t off = 0; off < keep; off += w)
            if (!WriteFile(s->spool, buf + off, (DWORD)(keep - off), &w, NULL)) {
                handle_end(h, END_INFRA, FY_STEP_OUTPUT, (int64_t)GetLastError(), "writing captured output");
                win_terminate(h);
                break;
            }
    }
    x->output_bytes += keep;
    x->stream_bytes[i] += keep;
    free(buf);
    if (eof || (x->truncated && ps->mode == FY_STDIO_CALLBACK))
        end_stream(h, x, i);
}

/* ---- start ---- */

static int fail(fy_handle *h, struct wx *x, fy_error **reterr, int code, uint32_t step, DWORD e, const char *what) {
    int r = err_set(reterr, code, step, (int64_t)e, NULL, "%s: Windows error %lu", what, (unsigned long)e);
    h->b = x;
    win_destroy(h);
    return r;
}

/* The job's limits, set and read back. A limit the selection says is
 * enforced must read back as set, or the attempt does not start. */
static int make_job(fy_handle *h, struct wx *x, const struct win_plan *wp, fy_error **reterr) {
    const struct fy_plan *np = neutral(h);
    if (!(x->job = CreateJobObjectW(NULL, NULL)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP, GetLastError(), "CreateJobObject");
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION li;
    memset(&li, 0, sizeof(li));
    li.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    if (wp->want_pids) {
        li.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_ACTIVE_PROCESS;
        li.BasicLimitInformation.ActiveProcessLimit = wp->pids > 0xffffffffu ? 0xffffffffu : (DWORD)wp->pids;
    }
    if (wp->want_memory) {
        li.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_JOB_MEMORY;
        li.JobMemoryLimit = (SIZE_T)wp->memory;
    }
    if (!SetInformationJobObject(x->job, JobObjectExtendedLimitInformation, &li, sizeof(li)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP_LIMIT, GetLastError(), "SetInformationJobObject (limits)");
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION back;
    memset(&back, 0, sizeof(back));
    bool got = QueryInformationJobObject(x->job, JobObjectExtendedLimitInformation, &back, sizeof(back), NULL);
    DWORD bf = got ? back.BasicLimitInformation.LimitFlags : 0;
    bool rb_kill = (bf & JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE) && !(bf & (JOB_OBJECT_LIMIT_BREAKAWAY_OK |
                                                                        JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK));
    bool rb_pids = (bf & JOB_OBJECT_LIMIT_ACTIVE_PROCESS) &&
                   back.BasicLimitInformation.ActiveProcessLimit == li.BasicLimitInformation.ActiveProcessLimit;
    bool rb_mem = (bf & JOB_OBJECT_LIMIT_JOB_MEMORY) && back.JobMemoryLimit == li.JobMemoryLimit;
    if (wp->want_pids && np->control[FY_CONTROL_PIDS_LIMIT] == FY_CONTROL_STATE_ENFORCED && !rb_pids)
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP_LIMIT, 0, "the job did not keep its active-process limit");
    if (wp->want_memory && np->control[FY_CONTROL_MEMORY_LIMIT] == FY_CONTROL_STATE_ENFORCED && !rb_mem)
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP_LIMIT, 0, "the job did not keep its memory limit");
    bool cpu_set = false, rb_cpu = false;
    if (wp->want_cpu) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        JOBOBJECT_CPU_RATE_CONTROL_INFORMATION cr;
        memset(&cr, 0, sizeof(cr));
        cr.ControlFlags = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
        /* CpuRate: 1/100 of a percent of all processors. */
        uint64_t rate = wp->cpu_millis * 10u / (si.dwNumberOfProcessors ? si.dwNumberOfProcessors : 1);
        cr.CpuRate = rate < 1 ? 1 : rate > 10000 ? 10000 : (DWORD)rate;
        cpu_set = SetInformationJobObject(x->job, JobObjectCpuRateControlInformation, &cr, sizeof(cr));
        JOBOBJECT_CPU_RATE_CONTROL_INFORMATION cb;
        memset(&cb, 0, sizeof(cb));
        rb_cpu = cpu_set && QueryInformationJobObject(x->job, JobObjectCpuRateControlInformation, &cb, sizeof(cb), NULL) &&
                 cb.CpuRate == cr.CpuRate && (cb.ControlFlags & JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP);
        if (np->control[FY_CONTROL_CPU_LIMIT] == FY_CONTROL_STATE_ENFORCED && !rb_cpu)
            return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP_LIMIT, cpu_set ? 0 : GetLastError(),
                        "the job did not keep its CPU rate cap");
    }
    /* No desktop, clipboard, global atoms or handles of other processes'
     * windows (UI restrictions; not claimed: reported as requested). */
    JOBOBJECT_BASIC_UI_RESTRICTIONS ui = {JOB_OBJECT_UILIMIT_DESKTOP | JOB_OBJECT_UILIMIT_DISPLAYSETTINGS |
                                          JOB_OBJECT_UILIMIT_EXITWINDOWS | JOB_OBJECT_UILIMIT_GLOBALATOMS |
                                          JOB_OBJECT_UILIMIT_HANDLES | JOB_OBJECT_UILIMIT_READCLIPBOARD |
                                          JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS | JOB_OBJECT_UILIMIT_WRITECLIPBOARD};
    bool ui_set = SetInformationJobObject(x->job, JobObjectBasicUIRestrictions, &ui, sizeof(ui));
    if (!(x->iocp = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP, GetLastError(), "CreateIoCompletionPort");
    JOBOBJECT_ASSOCIATE_COMPLETION_PORT port = {(PVOID)(ULONG_PTR)KEY_JOB, x->iocp};
    if (!SetInformationJobObject(x->job, JobObjectAssociateCompletionPortInformation, &port, sizeof(port)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP, GetLastError(), "associating the job's completion port");

    /* What this attempt's job holds, per limit: enforced (the probe proved
     * it on this host and it read back), else requested-unverified. */
    json_t *o = json_object();
    const char *wine = win_wine_version();
    json_object_set_new(o, "job", json_pack("{sbsbss}", "kill_on_close_read_back", rb_kill, "ui_restrictions_accepted",
                                            ui_set, "host", wine ? "wine" : "windows"));
#define LIMIT(key, want, value, rb, ctl, mech)                                                                   \
    json_object_set_new(o, key, !(want) ? json_null()                                                           \
                                        : json_pack("{sIsssssb}", "value", (json_int_t)(value), "mechanism", mech, \
                                                    "state", np->control[ctl] == FY_CONTROL_STATE_ENFORCED       \
                                                                 ? WIN_ENFORCED : WIN_UNVERIFIED,               \
                                                    "read_back", rb))
    LIMIT("memory", wp->want_memory, wp->memory, rb_mem, FY_CONTROL_MEMORY_LIMIT, "job memory limit");
    LIMIT("processes", wp->want_pids, wp->pids, rb_pids, FY_CONTROL_PIDS_LIMIT, "job active-process limit");
    LIMIT("cpu_millis", wp->want_cpu, wp->cpu_millis, rb_cpu, FY_CONTROL_CPU_LIMIT,
          cpu_set ? "job CPU rate hard cap" : "job CPU rate hard cap (rejected by this host)");
#undef LIMIT
    json_object_set_new(o, "wall_time", json_string("library timer, TerminateJobObject"));
    win_unenforced_limits(np, o);
    x->lim_json = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return 0;
}

static HANDLE inheritable_dup(HANDLE src) {
    HANDLE d = NULL;
    if (!src || src == INVALID_HANDLE_VALUE ||
        !DuplicateHandle(GetCurrentProcess(), src, GetCurrentProcess(), &d, 0, TRUE, DUPLICATE_SAME_ACCESS))
        return NULL;
    return d;
}

/* The stdin secret, written by a thread of its own (a pipe's buffer is
 * not the secret's size), then its end closed: end of file. */
static DWORD WINAPI secret_writer(LPVOID arg) {
    struct wx *x = arg;
    const unsigned char *p = x->stdin_secret->value;
    size_t left = x->stdin_secret->len;
    while (left) {
        DWORD w = 0;
        if (!WriteFile(x->secret_wr, p, left > 65536 ? 65536 : (DWORD)left, &w, NULL))
            break; /* the workload closed its stdin, or the attempt ended */
        p += w;
        left -= w;
    }
    CloseHandle(x->secret_wr);
    return 0;
}

/* The child's end of stream i (inheritable), and the host's side. */
static DWORD make_stdio(fy_handle *h, struct wx *x, int i) {
    const struct plan_stdio *ps = &neutral(h)->stdio[i];
    SECURITY_ATTRIBUTES inherit = {sizeof(inherit), NULL, TRUE};
    if (i == 0 && x->stdin_secret) {
        HANDLE rd, wr;
        if (!CreatePipe(&rd, &wr, &inherit, 0))
            return GetLastError();
        SetHandleInformation(wr, HANDLE_FLAG_INHERIT, 0);
        x->child_std[0] = rd;
        x->secret_wr = wr;
        if (!(x->secret_thread = CreateThread(NULL, 0, secret_writer, x, 0, NULL))) {
            DWORD e = GetLastError();
            close_h(&x->secret_wr);
            return e;
        }
        return 0;
    }
    switch (ps->mode) {
    case FY_STDIO_FD:
        x->child_std[i] = inheritable_dup((HANDLE)_get_osfhandle(ps->fd));
        return x->child_std[i] ? 0 : ERROR_INVALID_HANDLE;
    case FY_STDIO_FILE: case FY_STDIO_CALLBACK: {
        if (ps->mode == FY_STDIO_FILE) {
            wchar_t *wpath = win_host_path(ps->path);
            if (!wpath)
                return ERROR_INVALID_PARAMETER;
            x->out[i].spool = CreateFileW(wpath, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
            free(wpath);
            if (x->out[i].spool == INVALID_HANDLE_VALUE) {
                x->out[i].spool = NULL;
                return GetLastError();
            }
        }
        HANDLE rd, wr;
        if (!CreatePipe(&rd, &wr, &inherit, 0))
            return GetLastError();
        SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
        x->out[i].rd = rd;
        x->child_std[i] = wr;
        return 0;
    }
    case FY_STDIO_PIPE: {
        HANDLE rd, wr;
        if (!CreatePipe(&rd, &wr, &inherit, 0))
            return GetLastError();
        HANDLE mine = i == 0 ? wr : rd;
        SetHandleInformation(mine, HANDLE_FLAG_INHERIT, 0);
        x->child_std[i] = i == 0 ? rd : wr;
        if ((x->host_fd[i] = _open_osfhandle((intptr_t)mine, i == 0 ? 0 : _O_RDONLY)) < 0) {
            CloseHandle(mine);
            return ERROR_TOO_MANY_OPEN_FILES;
        }
        return 0;
    }
    default: /* FY_STDIO_NULL */
        x->child_std[i] = CreateFileW(L"NUL", i == 0 ? GENERIC_READ : GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
                                      &inherit, OPEN_EXISTING, 0, NULL);
        if (x->child_std[i] == INVALID_HANDLE_VALUE) {
            x->child_std[i] = NULL;
            return GetLastError();
        }
        return 0;
    }
}

/* The UTF-16 environment block, sorted as Windows expects (case-blind). */
static int cmp_var(const void *a, const void *b) { return _wcsicmp(*(wchar_t *const *)a, *(wchar_t *const *)b); }

static wchar_t *env_block(const struct win_plan *wp, const wchar_t *ws) {
    size_t n = wp->nvars + 7;
    wchar_t **all = calloc(n, sizeof(*all));
    wchar_t extra[7][MAX_PATH + 24];
    /* FORGEYARD_SECRETS: where the secret files are (the process level
     * cannot put them at /run/secrets). */
    static const wchar_t *const fmt[] = {L"HOME=%ls", L"USERPROFILE=%ls", L"TEMP=%ls\\tmp", L"TMP=%ls\\tmp",
                                         L"TMPDIR=%ls\\tmp", L"FORGEYARD_WORKSPACE=%ls", L"FORGEYARD_SECRETS=%ls\\secrets"};
    size_t nextra = wp->file_secrets ? 7 : 6;
    if (!all)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < wp->nvars; i++)
        all[k++] = wp->vars[i];
    for (size_t i = 0; i < nextra; i++) {
        _snwprintf(extra[i], MAX_PATH + 24, fmt[i], ws);
        extra[i][MAX_PATH + 23] = 0;
        all[k++] = extra[i];
    }
    qsort(all, k, sizeof(*all), cmp_var);
    size_t total = 1;
    for (size_t i = 0; i < k; i++)
        total += wcslen(all[i]) + 1;
    wchar_t *blk = malloc(total * sizeof(wchar_t)), *p = blk;
    if (blk) {
        for (size_t i = 0; i < k; i++) {
            size_t l = wcslen(all[i]) + 1;
            memcpy(p, all[i], l * sizeof(wchar_t));
            p += l;
        }
        *p = 0;
    }
    free(all);
    return blk;
}

/* A cancel from another thread. */
static VOID CALLBACK on_cancel(PVOID arg, BOOLEAN timed_out) {
    (void)timed_out;
    SetEvent(((struct wx *)arg)->work);
}

static VOID CALLBACK on_deadline(PVOID arg, BOOLEAN timed_out) {
    (void)timed_out;
    struct wx *x = arg;
    InterlockedExchange(&x->timer_fired, 1);
    SetEvent(x->work);
}

/* A one-shot timer at h->deadline (again when one fired early: the timer
 * queue's clock is not util_now_usec's). 0 or a Win32 error. */
static DWORD arm_deadline(fy_handle *h, struct wx *x) {
    if (x->deadline_timer)
        DeleteTimerQueueTimer(NULL, x->deadline_timer, INVALID_HANDLE_VALUE); /* its callback is over */
    x->deadline_timer = NULL;
    InterlockedExchange(&x->timer_fired, 0);
    uint64_t now = util_now_usec(), ms = h->deadline > now ? (h->deadline - now + 999) / 1000 + 1 : 0;
    if (!CreateTimerQueueTimer(&x->deadline_timer, NULL, on_deadline, x, ms > 0xfffffff0u ? 0xfffffff0u : (DWORD)ms, 0,
                               WT_EXECUTEONLYONCE)) {
        x->deadline_timer = NULL;
        return GetLastError();
    }
    return 0;
}

static void setup_failure(struct wx *x, uint32_t step, DWORD e, char *detail) {
    x->setup_failed = true;
    x->setup_step = step;
    x->setup_errno = errno_of(e);
    x->setup_detail = detail;
}

/* Secret files: <workspace>\secrets, a directory whose protected DACL
 * gives the caller full control and the attempt's SID (and its
 * AppContainer's) read and list only, inherited by the files written in
 * it before the workload runs. 0 or a Win32 error. */
static DWORD write_secret_files(fy_handle *h, struct wx *x) {
    const struct fy_plan *np = neutral(h);
    const struct win_plan *wp = h->pr->plan;
    if (!wp->file_secrets)
        return 0;
    size_t n = wcslen(x->workspace) + 16;
    if (!(x->secrets_dir = malloc(n * sizeof(wchar_t))))
        return ERROR_NOT_ENOUGH_MEMORY;
    _snwprintf(x->secrets_dir, n, L"%ls\\secrets", x->workspace);
    x->secrets_dir[n - 1] = 0;
    DWORD e = win_make_secret_dir(x->secrets_dir, x->sid, x->ac_sid);
    if (e)
        return e;
    x->secrets_dir_h = CreateFileW(x->secrets_dir, FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES,
                                   FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING,
                                   FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (x->secrets_dir_h == INVALID_HANDLE_VALUE) {
        x->secrets_dir_h = NULL;
        return GetLastError();
    }
    if (!(x->secret_names = calloc(np->nsecrets ? np->nsecrets : 1, sizeof(wchar_t *))))
        return ERROR_NOT_ENOUGH_MEMORY;
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *s = &np->secrets[i];
        if (s->delivery != FY_SECRET_FILE)
            continue;
        wchar_t *name = win_wide(s->target), path[MAX_PATH + 300];
        if (!name)
            return ERROR_NOT_ENOUGH_MEMORY;
        _snwprintf(path, FY_ARRAY_SIZE(path), L"%ls\\%ls", x->secrets_dir, name);
        path[FY_ARRAY_SIZE(path) - 1] = 0;
        HANDLE f = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        if (f == INVALID_HANDLE_VALUE) {
            free(name);
            return GetLastError();
        }
        x->secret_names[x->secret_files++] = name;
        DWORD w = 0;
        for (size_t off = 0; off < s->len; off += w)
            if (!WriteFile(f, s->value + off, s->len - off > 65536 ? 65536 : (DWORD)(s->len - off), &w, NULL)) {
                e = GetLastError();
                CloseHandle(f);
                return e;
            }
        CloseHandle(f);
    }
    return 0;
}

/* Whether path names the object that h holds (the same volume and file
 * index), opened without following a reparse point. */
static bool same_object(const wchar_t *path, HANDLE h) {
    BY_HANDLE_FILE_INFORMATION a, b;
    HANDLE p = CreateFileW(path, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (p == INVALID_HANDLE_VALUE)
        return false;
    bool same = GetFileInformationByHandle(p, &a) && GetFileInformationByHandle(h, &b) &&
                !(a.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) &&
                a.dwVolumeSerialNumber == b.dwVolumeSerialNumber && a.nFileIndexHigh == b.nFileIndexHigh &&
                a.nFileIndexLow == b.nFileIndexLow;
    CloseHandle(p);
    return same;
}

/* Each secret file written overwritten with zeros and deleted, then the
 * directory removed; only while the path still names the directory held
 * since it was made, and only a file that is no reparse point and has no
 * other name (never through what the workload may have put there). The
 * witness: nothing of them is left. How many are. */
static uint64_t remove_secret_files(struct wx *x) {
    if (!x->secrets_dir)
        return 0;
    uint64_t left = 0;
    wchar_t path[MAX_PATH + 300];
    bool ours = x->secrets_dir_h && same_object(x->secrets_dir, x->secrets_dir_h);
    for (size_t i = 0; x->secret_names && i < x->secret_files; i++) {
        if (!x->secret_names[i])
            continue;
        if (!ours) {
            left++;
            continue;
        }
        _snwprintf(path, FY_ARRAY_SIZE(path), L"%ls\\%ls", x->secrets_dir, x->secret_names[i]);
        path[FY_ARRAY_SIZE(path) - 1] = 0;
        HANDLE f = CreateFileW(path, GENERIC_WRITE | DELETE | FILE_READ_ATTRIBUTES,
                               FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                               FILE_FLAG_OPEN_REPARSE_POINT, NULL);
        BY_HANDLE_FILE_INFORMATION bi;
        if (f == INVALID_HANDLE_VALUE) {
            if (GetLastError() == ERROR_FILE_NOT_FOUND) {
                free(x->secret_names[i]);
                x->secret_names[i] = NULL;
            } else {
                left++;
            }
            continue;
        }
        if (GetFileInformationByHandle(f, &bi) &&
            !(bi.dwFileAttributes & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY)) &&
            bi.nNumberOfLinks == 1) {
            static const char zero[4096];
            uint64_t size = ((uint64_t)bi.nFileSizeHigh << 32) | bi.nFileSizeLow;
            DWORD w = 0;
            for (uint64_t off = 0; off < size; off += w)
                if (!WriteFile(f, zero, size - off > sizeof(zero) ? sizeof(zero) : (DWORD)(size - off), &w, NULL) || !w)
                    break;
            FlushFileBuffers(f);
        }
        /* (Deleted by the handle: a link is unlinked, never its target.) */
        FILE_DISPOSITION_INFO del = {TRUE};
        bool gone = SetFileInformationByHandle(f, FileDispositionInfo, &del, sizeof(del));
        CloseHandle(f);
        if (!gone && !DeleteFileW(path))
            left++;
        else {
            free(x->secret_names[i]);
            x->secret_names[i] = NULL;
        }
    }
    close_h(&x->secrets_dir_h);
    if (ours && !left && !RemoveDirectoryW(x->secrets_dir) && GetLastError() != ERROR_FILE_NOT_FOUND)
        left++;
    if (!ours && !left)
        left++; /* the directory itself: not where it was */
    if (!left) {
        free(x->secret_names);
        x->secret_names = NULL;
        free(x->secrets_dir);
        x->secrets_dir = NULL;
    }
    return left;
}

static char *utf8_of(const wchar_t *w) {
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    char *s = n > 0 ? malloc((size_t)n) : NULL;
    if (s && WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL) != n) {
        free(s);
        s = NULL;
    }
    return s;
}

/* Into the record, before the change: an ACE of sid on path (and the
 * label it had, when it is to be labelled). */
static void record_grant(struct wx *x, const wchar_t *path, void *sid, bool label) {
    char *p = utf8_of(path);
    LPSTR s = NULL;
    if (p && label) {
        unsigned long old = 0;
        if (!win_label_of(path, &old))
            win_record_line(x->record, "label 0x%lx %s", old, p);
    }
    if (p && ConvertSidToStringSidA(sid, &s))
        win_record_line(x->record, "grant %s %s", s, p);
    LocalFree(s);
    free(p);
}

/* The plan's host paths (source, build, output, toolchains, binds): an
 * explicit ACE for the attempt's SID on each, writable or read-only as the
 * plan says, for the attempt's duration. The runtime paths of a Linux
 * plan name nothing on Windows and are left alone. 0 or a Win32 error. */
static DWORD grant_host_paths(fy_handle *h, struct wx *x, unsigned long label_rid) {
    const struct fy_plan *np = neutral(h);
    if (!(x->grants = calloc(2 * np->nentries + 1, sizeof(*x->grants))))
        return ERROR_NOT_ENOUGH_MEMORY;
    /* In an AppContainer the workload's access checks name the container's
     * SID: its workspace is granted to it too. */
    if (x->ac_sid) {
        struct win_grant *g = &x->grants[x->ngrants];
        if (!(g->path = _wcsdup(x->workspace)))
            return ERROR_NOT_ENOUGH_MEMORY;
        g->target = "(workspace)";
        g->role = PR_SCRATCH;
        g->writable = true;
        g->sid = x->ac_sid;
        x->ngrants++;
        record_grant(x, g->path, g->sid, false);
        DWORD e = win_grant(g, g->sid, 0);
        if (e)
            return e;
    }
    for (size_t k = 0; k < 2 * np->nentries; k++) {
        size_t i = k % (np->nentries ? np->nentries : 1);
        void *sid = k < np->nentries ? x->sid : x->ac_sid;
        if (!sid)
            break;
        const struct plan_entry *en = &np->entries[i];
        if (en->kind != PE_HOST || !en->host || !win_granted_role(en->role))
            continue;
        struct win_grant *g = &x->grants[x->ngrants];
        if (!(g->path = win_host_path(en->host)))
            return ERROR_NOT_ENOUGH_MEMORY;
        if (GetFileAttributesW(g->path) == INVALID_FILE_ATTRIBUTES && (en->flags & PLAN_OPTIONAL)) {
            free(g->path);
            g->path = NULL;
            continue;
        }
        g->target = en->host;
        g->role = en->role;
        g->writable = !(en->flags & PLAN_RO);
        g->sid = sid;
        x->ngrants++;
        record_grant(x, g->path, sid, g->writable && label_rid);
        DWORD e = win_grant(g, sid, label_rid);
        if (e)
            return e;
        /* Where the probe saw ACEs kept, one that does not read back ends
         * the start; elsewhere (Wine) the record says so. */
        if (!g->read_back && win_verdict_enforced(h->pr->caps, WIN_R_HOST_ACL))
            return ERROR_INVALID_ACL;
    }
    return 0;
}

static const char *role_name(uint32_t role) {
    switch (role) {
    case PR_SOURCE: return "source";
    case PR_BUILD: return "build";
    case PR_OUTPUT: return "output";
    case PR_TOOLCHAIN: return "toolchain";
    case PR_SCRATCH: return "workspace";
    default: return "bind";
    }
}

/* Removes what grant_host_paths gave, each witnessed; into the isolation
 * record as "host_paths". How many could not be taken back. */
static uint64_t revoke_host_paths(struct wx *x) {
    uint64_t left = 0;
    json_t *arr = x->iso && x->ngrants ? json_array() : NULL;
    for (size_t i = 0; i < x->ngrants; i++) {
        struct win_grant *g = &x->grants[i];
        char sid_text[192] = "";
        LPSTR s = NULL;
        if (arr && ConvertSidToStringSidA(g->sid, &s)) {
            snprintf(sid_text, sizeof(sid_text), "%s", s);
            LocalFree(s);
        }
        bool was = g->granted;
        DWORD e = g->granted || g->relabelled ? win_revoke(g, g->sid) : 0;
        left += e != 0;
        if (arr && was)
            json_array_append_new(arr, json_pack("{ss ss ss ss sb sb si}", "path", g->target, "role",
                                                 role_name(g->role), "access", g->writable ? "read-write" : "read-only",
                                                 "sid", sid_text, "read_back", g->read_back, "removed", e == 0,
                                                 "error", (int)e));
    }
    if (arr)
        json_object_set_new(x->iso, "host_paths", arr);
    return left;
}

/* Everything outside the workspace taken back (ACEs and labels, the
 * AppContainer profile), then the record removed, if it all was (else it
 * stays for fy_gc). How many things are left. Idempotent. */
static uint64_t undo_outside(struct wx *x) {
    uint64_t left = revoke_host_paths(x);
    if (x->ac_sid && !x->ac_deleted) {
        if (win_ac_delete(&x->ac, x->ac_name) == 0)
            x->ac_deleted = true;
        else
            left++;
    }
    if (x->record)
        win_record_close(&x->record, x->workspace, left == 0);
    return left;
}

int win_start(fy_handle *h, fy_error **reterr) {
    const struct win_plan *wp = h->pr->plan;
    const struct fy_plan *np = neutral(h);
    struct wx *x = calloc(1, sizeof(*x));
    if (!x)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    for (int i = 0; i < 3; i++)
        x->host_fd[i] = -1;
    InitializeCriticalSection(&x->lock);
    InitializeConditionVariable(&x->drained);
    x->lock_ready = true;
    x->output_cap = wp->output;
    if (!(x->work = CreateEventW(NULL, TRUE, TRUE, NULL)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_SPAWN, GetLastError(), "CreateEvent");
    /* The handle's own waitable (fy_handle_get_fd) also wakes at a cancel
     * from another thread: core sets its wakeup event (once per handle). */
    if (!RegisterWaitForSingleObject(&x->cancel_wait, (HANDLE)(intptr_t)h->wake_fd, on_cancel, x, INFINITE,
                                     WT_EXECUTEONLYONCE)) {
        x->cancel_wait = NULL;
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_SPAWN, GetLastError(), "RegisterWaitForSingleObject");
    }
    DWORD e = h->deadline ? arm_deadline(h, x) : 0;
    if (e)
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_SPAWN, e, "CreateTimerQueueTimer");

    /* The principal, then its workspace (ACL'd to it), then the job. */
    unsigned long want_rid = wp->want_low ? SECURITY_MANDATORY_LOW_RID : 0;
    e = win_restricted_token(&x->token, &x->sid, want_rid);
    if (e)
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CAPS, e, "CreateRestrictedToken");
    /* Low integrity, read back: where the selection says enforced, a
     * token that does not say low never runs anything. */
    e = win_token_integrity(x->token, &x->integrity);
    if (wp->want_low && np->control[FY_CONTROL_LOW_INTEGRITY] == FY_CONTROL_STATE_ENFORCED &&
        (e || x->integrity != SECURITY_MANDATORY_LOW_RID))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CAPS, e, "the token did not keep its low integrity level");
    wchar_t tmp[MAX_PATH];
    static LONG counter;
    if ((e = win_workspace_parent(np->state_dir, tmp)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, e, "the workspaces' directory");
    _snwprintf(x->workspace, MAX_PATH, L"%ls" WIN_WORKSPACE_PREFIX L"%lu-%ld-%llu", tmp,
               (unsigned long)GetCurrentProcessId(), (long)InterlockedIncrement(&counter),
               (unsigned long long)util_now_usec());
    x->workspace[MAX_PATH - 1] = 0;
    if ((e = win_make_private_dir(x->workspace, x->sid, 0)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, e, "creating the attempt's workspace");
    x->have_workspace = true;
    /* A low-integrity workload writes only below a low label (and an
     * AppContainer's token is always at low integrity). Where low integrity
     * is enforced a label that cannot be set ends the start; where it is
     * only requested (Wine refuses labels: error 5) the record says so. */
    bool low_enforced = (wp->want_low && np->control[FY_CONTROL_LOW_INTEGRITY] == FY_CONTROL_STATE_ENFORCED) ||
                        wp->appcontainer;
    unsigned long label_rid = want_rid || wp->appcontainer ? SECURITY_MANDATORY_LOW_RID : 0;
    if (label_rid && (x->label_err = win_set_label(x->workspace, label_rid)) && low_enforced)
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, x->label_err, "labelling the workspace low");
    wchar_t sub[MAX_PATH + 8];
    _snwprintf(sub, MAX_PATH + 8, L"%ls\\tmp", x->workspace);
    sub[MAX_PATH + 7] = 0;
    if (!CreateDirectoryW(sub, NULL))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, GetLastError(), "creating the workspace's tmp");
    bool outside = wp->appcontainer;
    for (size_t i = 0; i < np->nentries && !outside; i++)
        outside = np->entries[i].kind == PE_HOST && win_granted_role(np->entries[i].role);
    if (outside && !(x->record = win_record_open(x->workspace)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, GetLastError(),
                    "the attempt's record of what it changes outside its workspace");
    if (wp->appcontainer) {
        static LONG ac_counter;
        if (!win_ac_load(&x->ac))
            return fail(h, x, reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, ERROR_PROC_NOT_FOUND,
                        "userenv.dll has no AppContainer profile functions");
        if (win_ac_name(x->ac_name, FY_ARRAY_SIZE(x->ac_name), GetCurrentProcessId(),
                        (unsigned long)InterlockedIncrement(&ac_counter), util_now_usec()) < 0)
            return fail(h, x, reterr, FY_E_INTERNAL, FY_STEP_NETNS, ERROR_BUFFER_OVERFLOW, "AppContainer profile name");
        win_record_line(x->record, "ac %ls", x->ac_name);
        if ((e = win_ac_create(&x->ac, x->ac_name, &x->ac_sid)))
            return fail(h, x, reterr, FY_E_INFRA, FY_STEP_NETNS, e, "CreateAppContainerProfile");
    }
    if ((e = grant_host_paths(h, x, label_rid)))
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, e, "giving the attempt access to its host directories");
    for (size_t i = 0; i < x->ngrants; i++)
        if (x->grants[i].label_err && low_enforced)
            return fail(h, x, reterr, FY_E_INFRA, FY_STEP_MOUNT, x->grants[i].label_err,
                        "labelling a writable host directory low");
    for (size_t i = 0; i < np->nsecrets; i++)
        if (np->secrets[i].delivery == FY_SECRET_STDIN)
            x->stdin_secret = &np->secrets[i];
    if ((e = write_secret_files(h, x)))
        return fail(h, x, reterr, FY_E_IO, FY_STEP_SECRET, e, "writing the secret files");
    x->t_ws = util_now_usec();
    int r = make_job(h, x, wp, reterr);
    if (r < 0)
        return r;
    x->t_job = util_now_usec();
    for (int i = 0; i < 3; i++)
        if ((e = make_stdio(h, x, i)))
            return fail(h, x, reterr, FY_E_IO, FY_STEP_SPAWN, e, "setting up the standard streams");

    const char *tokv = caps_fact(h->pr->caps, WIN_R_TOKEN), *aclv = caps_fact(h->pr->caps, WIN_R_ACL);
    char rid_text[32];
    snprintf(rid_text, sizeof(rid_text), "0x%lx", x->integrity);
    const char *rid_name = x->integrity == SECURITY_MANDATORY_UNTRUSTED_RID ? "untrusted"
                           : x->integrity == SECURITY_MANDATORY_LOW_RID ? "low"
                           : x->integrity == SECURITY_MANDATORY_MEDIUM_RID ? "medium"
                           : x->integrity == SECURITY_MANDATORY_HIGH_RID ? "high"
                           : x->integrity == SECURITY_MANDATORY_SYSTEM_RID ? "system" : rid_text;
    char label_text[64];
    snprintf(label_text, sizeof(label_text), "not set (Windows error %lu)", x->label_err);
    x->iso = json_pack("{ss ss ss ss ss ss ss sb s{ss ss ss ss}}",
        "tree", "job object: kill on close, no breakaway, created suspended and assigned before it runs",
        "handles", "only the standard streams are inherited (PROC_THREAD_ATTRIBUTE_HANDLE_LIST)",
        "identity", tokv ? tokv : "not probed", "workspace", aclv ? aclv : "not probed",
        "network", x->ac_sid ? "none: an AppContainer without capabilities" : "host network (no firewall rule)",
        "filesystem", "host view with the restricted token's access (paths are not remapped)",
        "namespaces", "unavailable: Windows has none", "impure", np->impure,
        "integrity", "requested", wp->want_low ? "low" : "unchanged", "read_back", rid_name,
        "state", !wp->want_low ? "off"
                 : np->control[FY_CONTROL_LOW_INTEGRITY] == FY_CONTROL_STATE_ENFORCED ? WIN_ENFORCED : WIN_UNVERIFIED,
        "workspace_label", !label_rid ? "none" : x->label_err ? label_text : "low");

    if (!wp->app) {
        setup_failure(x, FY_STEP_EXEC, ERROR_FILE_NOT_FOUND,
                      util_asprintf("cannot execute %s: not found", np->argv[0]));
        SetEvent(x->work);
        h->b = x;
        return 0;
    }

    /* The attribute list: the handles to inherit, and the job. */
    SIZE_T asz = 0;
    InitializeProcThreadAttributeList(NULL, 3, 0, &asz);
    LPPROC_THREAD_ATTRIBUTE_LIST al = malloc(asz);
    if (!al || !InitializeProcThreadAttributeList(al, 3, 0, &asz)) {
        free(al);
        return fail(h, x, reterr, FY_E_NOMEM, FY_STEP_SPAWN, GetLastError(), "InitializeProcThreadAttributeList");
    }
    HANDLE inherit[3] = {x->child_std[0], x->child_std[1], x->child_std[2]};
    bool ok = UpdateProcThreadAttribute(al, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit, sizeof(inherit), NULL, NULL);
    if (!ok) {
        e = GetLastError();
        DeleteProcThreadAttributeList(al);
        free(al);
        return fail(h, x, reterr, FY_E_UNSUPPORTED, FY_STEP_SPAWN, e, "PROC_THREAD_ATTRIBUTE_HANDLE_LIST");
    }
    bool job_list = UpdateProcThreadAttribute(al, 0, PROC_THREAD_ATTRIBUTE_JOB_LIST, &x->job, sizeof(x->job), NULL, NULL);
    /* Network deny: the workload in its AppContainer, no capability. */
    if (x->ac_sid && (e = win_ac_attribute(al, &x->ac_caps, x->ac_sid))) {
        DeleteProcThreadAttributeList(al);
        free(al);
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_NETNS, e, "PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES");
    }
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof(si));
    si.StartupInfo.cb = sizeof(si);
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = x->child_std[0];
    si.StartupInfo.hStdOutput = x->child_std[1];
    si.StartupInfo.hStdError = x->child_std[2];
    si.lpAttributeList = al;
    wchar_t *blk = env_block(wp, x->workspace);
    wchar_t *cmd = _wcsdup(wp->cmdline);
    PROCESS_INFORMATION pi;
    memset(&pi, 0, sizeof(pi));
    ok = blk && cmd &&
         CreateProcessAsUserW(x->token, wp->app, cmd, NULL, NULL, TRUE,
                              CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT |
                                  CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW,
                              blk, wp->cwd ? wp->cwd : x->workspace, &si.StartupInfo, &pi);
    e = ok ? 0 : (blk && cmd) ? GetLastError() : ERROR_NOT_ENOUGH_MEMORY;
    if (blk) { /* it holds the secrets delivered in the environment */
        size_t n = 0;
        while (blk[n] || blk[n + 1])
            n++;
        util_bzero(blk, (n + 2) * sizeof(wchar_t));
    }
    free(blk);
    free(cmd);
    DeleteProcThreadAttributeList(al);
    free(al);
    for (int i = 0; i < 3; i++)
        close_h(&x->child_std[i]); /* the child has its own now */
    if (!ok) {
        setup_failure(x, FY_STEP_EXEC, e, util_asprintf("cannot execute %s: Windows error %lu", np->argv[0],
                                                        (unsigned long)e));
        for (int i = 1; i < 3; i++)
            close_h(&x->out[i].rd);
        SetEvent(x->work);
        h->b = x;
        return 0;
    }
    x->process = pi.hProcess;
    /* Before it runs: in the job, or it never runs. */
    BOOL in_job = FALSE;
    if (!job_list && !AssignProcessToJobObject(x->job, pi.hProcess))
        e = GetLastError();
    if (!IsProcessInJob(pi.hProcess, x->job, &in_job) || !in_job) {
        TerminateProcess(pi.hProcess, EXIT_KILLED);
        CloseHandle(pi.hThread);
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_CGROUP, e ? e : GetLastError(),
                    "the workload could not be put in its job before it ran");
    }
    if (x->ac_sid && !win_ac_token_is(pi.hProcess, x->ac_sid)) {
        TerminateProcess(pi.hProcess, EXIT_KILLED);
        CloseHandle(pi.hThread);
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_NETNS, 0, "the workload is not in its AppContainer");
    }
    h->b = x;
    if (!(x->monitor = CreateThread(NULL, 0, monitor_main, x, 0, NULL))) {
        e = GetLastError();
        TerminateProcess(pi.hProcess, EXIT_KILLED);
        CloseHandle(pi.hThread);
        return fail(h, x, reterr, FY_E_INFRA, FY_STEP_SPAWN, e, "CreateThread");
    }
    for (int i = 1; i < 3; i++) {
        struct wstream *s = &x->out[i];
        s->x = x;
        s->index = i;
        if (s->rd && !(s->thread = CreateThread(NULL, 0, reader_main, s, 0, NULL))) {
            e = GetLastError();
            TerminateProcess(pi.hProcess, EXIT_KILLED);
            CloseHandle(pi.hThread);
            return fail(h, x, reterr, FY_E_INFRA, FY_STEP_SPAWN, e, "CreateThread");
        }
    }
    ResumeThread(pi.hThread);
    CloseHandle(pi.hThread);
    x->t_exec = util_now_usec();
    return 0;
}

/* ---- running ---- */

static void kill_tree(struct wx *x) {
    if (x->job && !x->killed) {
        x->killed = true;
        TerminateJobObject(x->job, EXIT_KILLED);
    }
}

void win_terminate(fy_handle *h) {
    struct wx *x = h->b;
    if (!h->cancel_started)
        h->cancel_started = util_now_usec();
    /* No soft stage: a console program has no signal to ask it to stop
     * that reaches it without a shared console; the grace is not used. */
    kill_tree(x);
}

static uint32_t active_processes(struct wx *x) {
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION ba;
    if (!x->job || !QueryInformationJobObject(x->job, JobObjectBasicAccountingInformation, &ba, sizeof(ba), NULL))
        return 0;
    return ba.ActiveProcesses;
}

static void finish(fy_handle *h, struct wx *x) {
    fy_result *r = result_new();
    if (!r)
        return;
    struct attempt_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.t_cleanup_begin = util_now_usec();
    const struct win_plan *wp = h->pr->plan;
    rep.limits_json = x->lim_json;
    x->lim_json = NULL;
    rep.exit_seen = x->exit_seen;
    rep.wstatus = (int)x->exit_code;
    if (x->setup_failed) {
        rep.setup_failed = true;
        rep.setup_step = x->setup_step;
        rep.setup_errno = x->setup_errno;
        rep.setup_detail = x->setup_detail;
        x->setup_detail = NULL;
    }
    EnterCriticalSection(&x->lock);
    rep.oom_killed = x->mem_limit;
    rep.pids_limit_hit = x->proc_limit;
    LeaveCriticalSection(&x->lock);
    rep.memory_limit = wp->memory;
    rep.t_isolation = x->t_job;
    rep.t_filesystem = x->t_job;
    rep.t_exec = x->t_exec;
    rep.t_exit = x->t_exit;
    rep.t_ended = x->t_ended;
    rep.t_output_eof = x->t_eof;
    rep.output_bytes = x->output_bytes;
    rep.output_truncated = x->truncated;
    rep.output_limit = x->output_cap;
    for (int i = 1; i < 3; i++) {
        uint32_t mode = neutral(h)->stdio[i].mode;
        rep.stream_counted[i] = mode == FY_STDIO_FILE || mode == FY_STDIO_CALLBACK;
        rep.stream_bytes[i] = x->stream_bytes[i];
    }
    /* Usage from the job's accounting. Wine counts processes but reports
     * zero times and no peak: those are left unknown there, not 0. */
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION ba;
    if (x->job && QueryInformationJobObject(x->job, JobObjectBasicAccountingInformation, &ba, sizeof(ba), NULL)) {
        rep.usage[FY_USAGE_PROCESSES] = ba.TotalProcesses;
        rep.usage_known |= 1u << FY_USAGE_PROCESSES;
        if (!win_wine_version()) {
            rep.usage[FY_USAGE_CPU_USER_USEC] = (uint64_t)ba.TotalUserTime.QuadPart / 10u;
            rep.usage[FY_USAGE_CPU_SYSTEM_USEC] = (uint64_t)ba.TotalKernelTime.QuadPart / 10u;
            rep.usage_known |= (1u << FY_USAGE_CPU_USER_USEC) | (1u << FY_USAGE_CPU_SYSTEM_USEC);
            JOBOBJECT_EXTENDED_LIMIT_INFORMATION li;
            if (QueryInformationJobObject(x->job, JobObjectExtendedLimitInformation, &li, sizeof(li), NULL)) {
                rep.usage[FY_USAGE_MEMORY_PEAK] = li.PeakJobMemoryUsed;
                rep.usage_known |= 1u << FY_USAGE_MEMORY_PEAK;
            }
        }
        rep.usage_source = "job object";
    }
    /* Cleanup, witnessed: nothing left in the job, the workspace gone. */
    rep.left[FY_LEFT_PROCESSES] = active_processes(x);
    for (int i = 0; i < 3; i++)
        close_h(&x->out[i].spool);
    /* Secret files first, witnessed: wiped, deleted, gone. */
    uint64_t secrets_left = remove_secret_files(x);
    rep.left[FY_LEFT_FILES] += secrets_left;
    if (x->iso && (x->secret_files || x->stdin_secret))
        json_object_set_new(x->iso, "secrets", json_pack("{sI sI sb ss}", "files", (json_int_t)x->secret_files,
                                                         "files_left", (json_int_t)secrets_left, "stdin",
                                                         x->stdin_secret != NULL, "files_acl",
                                                         "set: the caller full control, the attempt read and list "
                                                         "only (enforced where workspace-acl is)"));
    if (x->have_workspace) {
        rep.left[FY_LEFT_FILES] += win_remove_tree(x->workspace) < 0 ? 1 : 0;
        x->have_workspace = GetFileAttributesW(x->workspace) != INVALID_FILE_ATTRIBUTES;
    }
    /* The host paths' ACEs removed, witnessed (a DACL that still names
     * the attempt counts as a file left). */
    rep.left[FY_LEFT_FILES] += undo_outside(x);
    rep.isolation_json = x->iso ? json_dumps(x->iso, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    rep.t_cleanup_end = util_now_usec();
    attempt_finish(h, &rep, r);
    x->finished = true;
}

int win_process(fy_handle *h, fy_error **reterr) {
    struct wx *x = h->b;
    if (h->result)
        return 1;
    ResetEvent(x->work); /* first: whatever happens from here on sets it again */
    for (int i = 1; i < 3; i++)
        drain(h, x, i);
    uint64_t now = util_now_usec();
    if (x->setup_failed) {
        kill_tree(x);
        finish(h, x);
        return h->result ? 1 : err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    }
    EnterCriticalSection(&x->lock);
    bool zero = x->zero, mem = x->mem_limit, procs = x->proc_limit;
    LeaveCriticalSection(&x->lock);
    if (mem && h->end == END_NONE) {
        handle_end(h, END_OOM, FY_STEP_CGROUP_LIMIT, 0, "memory limit of %llu bytes (job memory limit)",
                   (unsigned long long)((const struct win_plan *)h->pr->plan)->memory);
        kill_tree(x);
    } else if (procs && h->end == END_NONE) {
        handle_end(h, END_RESOURCE, FY_STEP_CGROUP_LIMIT, 0, "pids");
        kill_tree(x);
    }
    if (!x->main_ended && WaitForSingleObject(x->process, 0) == WAIT_OBJECT_0) {
        x->main_ended = true;
        x->t_exit = util_now_usec();
        /* Its own exit code, unless we killed it (the ending says why:
         * a timeout, a cancel, a limit; a killed process has no status of
         * its own, as a signalled one on Linux). */
        if (!x->killed)
            x->exit_seen = GetExitCodeProcess(x->process, &x->exit_code) != 0;
        /* Nothing outlives the workload's main process. */
        kill_tree(x);
    }
    if (h->end == END_NONE && h->deadline && now < h->deadline && x->timer_fired) {
        DWORD te = arm_deadline(h, x);
        if (te) {
            handle_end(h, END_INFRA, FY_STEP_WAIT, (int64_t)te, "the wall-clock timer could not be set again");
            win_terminate(h);
        }
    }
    if (h->end == END_NONE && h->deadline && now >= h->deadline) {
        handle_end(h, END_TIMEOUT, FY_STEP_WAIT, 0, "wall-clock limit of %llu ms reached",
                   (unsigned long long)(neutral(h)->limit[FY_LIMIT_WALL_TIME] / 1000));
        win_terminate(h);
    }
    /* The tree is gone when the port said so (or the job counts none:
     * a message can only be late, never wrong). */
    if (!zero && x->main_ended && active_processes(x) == 0)
        zero = true;
    if (!zero || !x->main_ended)
        return 0;
    if (!x->t_ended) {
        x->t_ended = util_now_usec();
        /* The pipes end when every writer is gone; one held outside the
         * tree (a handle duplicated into another process) must not keep
         * the attempt alive: a bounded wait, then the readers stop. */
        if (!CreateTimerQueueTimer(&x->drain_timer, NULL, on_cancel, x, (DWORD)(DRAIN_USEC / 1000) + 1, 0,
                                   WT_EXECUTEONLYONCE))
            x->drain_timer = NULL;
    }
    bool open = false;
    for (int i = 1; i < 3; i++)
        open |= x->out[i].thread && !x->out[i].done;
    /* (the timer's clock is not ours: 100 ms of slack, or an early tick
     * would leave nothing to wake us again) */
    if (open && now + 100000 >= x->t_ended + DRAIN_USEC && !x->drain_cut) {
        x->drain_cut = true;
        for (int i = 1; i < 3; i++)
            if (x->out[i].thread)
                CancelSynchronousIo(x->out[i].thread);
        handle_end(h, END_INFRA, FY_STEP_OUTPUT, 0, "output pipes held open after the sandbox ended; reading stopped");
    }
    if (open)
        return 0;
    if (!x->t_eof)
        x->t_eof = util_now_usec();
    finish(h, x);
    if (!h->result)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_WAIT, 0, NULL, "out of memory");
    return 1;
}

int win_get_fd(fy_handle *h) {
    struct wx *x = h->b;
    return (int)(intptr_t)x->work;
}

int win_stdio_fd(fy_handle *h, uint32_t stream) {
    struct wx *x = h->b;
    int fd = x->host_fd[stream];
    if (fd < 0)
        return FY_E_STATE;
    /* stdin's write end is handed over (the caller closes it to send
     * end-of-file); stdout's and stderr's stay the handle's. */
    if (stream == FY_STDIN)
        x->host_fd[FY_STDIN] = -1;
    return fd;
}

uint64_t win_next_deadline(fy_handle *h) {
    struct wx *x = h->b;
    if (h->result)
        return 0;
    if (x->t_ended && !x->drain_cut)
        return x->t_ended + DRAIN_USEC;
    return h->end == END_NONE ? h->deadline : 0;
}

/* ---- the end ---- */

/* Waits for a thread of the attempt (ms, then cancelling its synchronous
 * I/O, ms again); true, with its handle closed, once it ended. A thread
 * that is still alive keeps its handle, and release() then keeps the
 * memory it may touch (a leak on a pathological path, never a use after
 * free). */
static bool joined(HANDLE *thread, DWORD ms) {
    if (!*thread)
        return true;
    if (WaitForSingleObject(*thread, ms) != WAIT_OBJECT_0) {
        CancelSynchronousIo(*thread);
        if (WaitForSingleObject(*thread, ms) != WAIT_OBJECT_0)
            return false;
    }
    close_h(thread);
    return true;
}

static void release(struct wx *x, bool kill) {
    bool alive = false; /* a thread of ours did not end: x stays */
    if (kill)
        kill_tree(x);
    if (x->lock_ready) {
        EnterCriticalSection(&x->lock);
        x->finished = true; /* no reader waits for the host any more */
        WakeAllConditionVariable(&x->drained);
        LeaveCriticalSection(&x->lock);
    }
    if (x->process && kill)
        WaitForSingleObject(x->process, 5000);
    for (int i = 1; i < 3; i++) {
        struct wstream *s = &x->out[i];
        close_h(&s->spool);
        if (!joined(&s->thread, 5000)) {
            alive = true; /* its pipe and buffer stay with it */
            continue;
        }
        close_h(&s->rd);
        free(s->buf);
        s->buf = NULL;
    }
    close_h(&x->child_std[0]); /* a writer blocked on a pipe nobody reads: broken now */
    /* (the writer closes its end of the pipe itself) */
    alive |= !joined(&x->secret_thread, 5000);
    remove_secret_files(x);
    for (size_t i = 0; x->secret_names && i < x->secret_files; i++)
        free(x->secret_names[i]);
    free(x->secret_names);
    x->secret_names = NULL;
    close_h(&x->secrets_dir_h);
    free(x->secrets_dir);
    x->secrets_dir = NULL;
    if (x->deadline_timer)
        DeleteTimerQueueTimer(NULL, x->deadline_timer, INVALID_HANDLE_VALUE);
    x->deadline_timer = NULL;
    if (x->drain_timer)
        DeleteTimerQueueTimer(NULL, x->drain_timer, INVALID_HANDLE_VALUE);
    x->drain_timer = NULL;
    if (x->cancel_wait)
        UnregisterWaitEx(x->cancel_wait, INVALID_HANDLE_VALUE); /* and its callback is over */
    x->cancel_wait = NULL;
    if (x->monitor) {
        PostQueuedCompletionStatus(x->iocp, 0, KEY_QUIT, NULL);
        if (WaitForSingleObject(x->monitor, 5000) == WAIT_OBJECT_0)
            close_h(&x->monitor);
        else
            alive = true;
    }
    for (int i = 0; i < 3; i++) {
        close_h(&x->child_std[i]);
        if (x->host_fd[i] >= 0)
            _close(x->host_fd[i]);
        x->host_fd[i] = -1;
    }
    close_h(&x->process);
    close_h(&x->job); /* kill on close: the last word, whatever happened before */
    if (!alive) { /* (a live thread still waits on the port or sets the event) */
        close_h(&x->iocp);
        close_h(&x->work);
    }
    close_h(&x->token);
    if (x->have_workspace)
        win_remove_tree(x->workspace);
    undo_outside(x);
    for (size_t i = 0; i < x->ngrants; i++)
        free(x->grants[i].path);
    free(x->grants);
    if (x->ac_sid)
        FreeSid(x->ac_sid);
    win_ac_unload(&x->ac);
    LocalFree(x->sid);
    free(x->setup_detail);
    json_decref(x->iso);
    x->iso = NULL;
    free(x->lim_json);
    x->lim_json = NULL;
    if (alive)
        return; /* x, its lock, port and event stay for the thread that did not end */
    if (x->lock_ready)
        DeleteCriticalSection(&x->lock);
    free(x);
}

void win_destroy(fy_handle *h) {
    struct wx *x = h->b;
    if (!x)
        return;
    h->b = NULL;
    release(x, true);
}

void win_forget(fy_handle *h) { win_destroy(h); }

/* ---- the orphans of dead hosts ---- */

unsigned long win_workspace_parent(const char *state_dir, wchar_t out[MAX_PATH]) {
    if (state_dir) {
        wchar_t *w = win_host_path(state_dir);
        size_t n = w ? wcslen(w) : 0;
        if (!w || n > MAX_PATH - 80) {
            free(w);
            return w ? ERROR_FILENAME_EXCED_RANGE : ERROR_NOT_ENOUGH_MEMORY;
        }
        wcscpy(out, w);
        if (n && out[n - 1] != L'\\')
            wcscat(out, L"\\");
        free(w);
        return 0;
    }
    DWORD tl = GetTempPathW(MAX_PATH, out);
    return tl == 0 || tl > MAX_PATH - 80 ? (GetLastError() ? GetLastError() : ERROR_FILENAME_EXCED_RANGE) : 0;
}

/* Nothing of an attempt outlives its host but its workspace (the job
 * dies with the host's handle): the workspaces of hosts that are gone
 * are removed. A host is gone when its pid names no process, or an ended
 * one; a pid in use (even reused by another program) keeps the directory. */
int win_gc(const char *state_dir, uint64_t *destroyed, fy_error **reterr) {
    wchar_t parent[MAX_PATH], pat[MAX_PATH + 32];
    DWORD e = win_workspace_parent(state_dir, parent);
    if (e)
        return err_set(reterr, FY_E_IO, FY_STEP_CLEANUP, (int64_t)e, NULL, "the workspaces' directory");
    _snwprintf(pat, MAX_PATH + 32, L"%ls" WIN_WORKSPACE_PREFIX L"*", parent);
    pat[MAX_PATH + 31] = 0;
    WIN32_FIND_DATAW fd;
    HANDLE f = FindFirstFileW(pat, &fd);
    if (f == INVALID_HANDLE_VALUE)
        return 0;
    int r = 0;
    size_t plen = wcslen(WIN_WORKSPACE_PREFIX);
    do {
        wchar_t *end = NULL;
        unsigned long pid = wcstoul(fd.cFileName + plen, &end, 10);
        size_t nl = wcslen(fd.cFileName);
        bool record = !(fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && nl > 4 &&
                      !wcscmp(fd.cFileName + nl - 4, L".acl");
        if ((!(fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !record) || end == fd.cFileName + plen ||
            *end != L'-' || pid == GetCurrentProcessId())
            continue;
        HANDLE p = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)pid);
        bool gone = !p ? GetLastError() == ERROR_INVALID_PARAMETER : WaitForSingleObject(p, 0) == WAIT_OBJECT_0;
        if (p)
            CloseHandle(p);
        if (!gone)
            continue;
        wchar_t dir[MAX_PATH + 32];
        _snwprintf(dir, MAX_PATH + 32, L"%ls%ls", parent, fd.cFileName);
        dir[MAX_PATH + 31] = 0;
        if (record) { /* what the dead attempt changed outside its workspace */
            if (win_record_undo(dir) == 0 && DeleteFileW(dir))
                (*destroyed)++;
            else if (r == 0)
                r = err_set(reterr, FY_E_IO, FY_STEP_CLEANUP, (int64_t)GetLastError(), NULL,
                            "what a dead host's attempt changed outside its workspace could not all be taken back");
            continue;
        }
        if (win_remove_tree(dir) == 0)
            (*destroyed)++;
        else if (r == 0)
            r = err_set(reterr, FY_E_IO, FY_STEP_CLEANUP, (int64_t)GetLastError(), NULL,
                        "a dead host's workspace could not be removed completely");
    } while (FindNextFileW(f, &fd));
    FindClose(f);
    return r;
}
