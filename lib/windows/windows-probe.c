/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Windows probe: every control tested by what it does, not by whether
 * the call that asks for it succeeds (Wine accepts many it ignores). Each
 * verdict is a caps fact "report.windows.<control>" (shown by
 * fy_caps_to_json under "controls"): "enforced: ..." only when a check
 * that would fail without enforcement passed; "requested-unverified: ..."
 * when the host accepts the request but the check could not prove it;
 * "unavailable: ..." when the host refuses or lacks it. The probe's
 * children are created suspended and never run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <winsock2.h>
#include <windows.h>

#include "windows-appcontainer.h"
#include "windows-backend.h"

const char *win_wine_version(void) {
    HMODULE nt = GetModuleHandleW(L"ntdll.dll");
    FARPROC f = nt ? GetProcAddress(nt, "wine_get_version") : NULL;
    return f ? ((const char *(*)(void))(void (*)(void))f)() : NULL;
}

static int verdict(fy_caps *c, const char *key, const char *state, const char *fmt, ...) FY_PRINTF(4, 5);
static int verdict(fy_caps *c, const char *key, const char *state, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    char *v = util_asprintf("%s: %s", state, detail);
    int r = v ? caps_set_fact(c, key, v) : FY_E_NOMEM;
    free(v);
    return r;
}

/* A child that never runs: the system's cmd.exe, created suspended, in
 * job (by PROC_THREAD_ATTRIBUTE_JOB_LIST when use_list, else not). */
static HANDLE suspended_child(HANDLE job, bool use_list, DWORD *err) {
    wchar_t app[MAX_PATH + 16];
    UINT n = GetSystemDirectoryW(app, MAX_PATH);
    if (n == 0 || n >= MAX_PATH) {
        *err = GetLastError();
        return NULL;
    }
    wcscat(app, L"\\cmd.exe");
    wchar_t cmd[] = L"cmd.exe /c exit 0";
    SIZE_T asz = 0;
    LPPROC_THREAD_ATTRIBUTE_LIST al = NULL;
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof(si));
    si.StartupInfo.cb = sizeof(si);
    DWORD flags = CREATE_SUSPENDED | CREATE_NO_WINDOW;
    if (use_list) {
        InitializeProcThreadAttributeList(NULL, 1, 0, &asz);
        al = malloc(asz);
        if (!al || !InitializeProcThreadAttributeList(al, 1, 0, &asz) ||
            !UpdateProcThreadAttribute(al, 0, PROC_THREAD_ATTRIBUTE_JOB_LIST, &job, sizeof(job), NULL, NULL)) {
            *err = GetLastError();
            free(al);
            return NULL;
        }
        si.lpAttributeList = al;
        flags |= EXTENDED_STARTUPINFO_PRESENT;
    }
    PROCESS_INFORMATION pi;
    memset(&pi, 0, sizeof(pi));
    BOOL ok = CreateProcessW(app, cmd, NULL, NULL, FALSE, flags, NULL, NULL, &si.StartupInfo, &pi);
    *err = ok ? 0 : GetLastError();
    if (al) {
        DeleteProcThreadAttributeList(al);
        free(al);
    }
    if (!ok)
        return NULL;
    CloseHandle(pi.hThread);
    return pi.hProcess;
}

static void reap(HANDLE *p) {
    if (*p) {
        TerminateProcess(*p, 1);
        WaitForSingleObject(*p, 2000);
        CloseHandle(*p);
        *p = NULL;
    }
}

static HANDLE job_with(DWORD flags, DWORD procs, SIZE_T memory) {
    HANDLE job = CreateJobObjectW(NULL, NULL);
    if (!job)
        return NULL;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION li;
    memset(&li, 0, sizeof(li));
    li.BasicLimitInformation.LimitFlags = flags;
    li.BasicLimitInformation.ActiveProcessLimit = procs;
    li.JobMemoryLimit = memory;
    if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &li, sizeof(li))) {
        CloseHandle(job);
        return NULL;
    }
    return job;
}

/* Kill on close: a suspended child in the job dies when the job's only
 * handle is closed. Also whether the JOB_LIST attribute places it. */
static int probe_job(fy_caps *c) {
    DWORD e = 0;
    HANDLE job = job_with(JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, 0, 0);
    if (!job)
        return verdict(c, WIN_R_JOB, WIN_UNAVAILABLE, "CreateJobObject/SetInformationJobObject failed (error %lu)",
                       (unsigned long)GetLastError());
    HANDLE p = suspended_child(job, true, &e);
    bool via_list = p != NULL;
    BOOL in = FALSE;
    if (p && (!IsProcessInJob(p, job, &in) || !in))
        via_list = false;
    if (!via_list) {
        reap(&p);
        int r = verdict(c, WIN_R_JOB_LIST, WIN_UNAVAILABLE,
                        "PROC_THREAD_ATTRIBUTE_JOB_LIST did not place the child (error %lu); the backend assigns "
                        "the suspended child instead", (unsigned long)e);
        if (r < 0 || !(p = suspended_child(NULL, false, &e)) || !AssignProcessToJobObject(job, p)) {
            DWORD ae = e ? e : GetLastError();
            reap(&p);
            CloseHandle(job);
            return r < 0 ? r : verdict(c, WIN_R_JOB, WIN_UNAVAILABLE, "a suspended child could not be put in a job "
                                       "(error %lu)", (unsigned long)ae);
        }
    } else {
        int r = verdict(c, WIN_R_JOB_LIST, WIN_ENFORCED, "a child created with the attribute is in the job");
        if (r < 0) {
            reap(&p);
            CloseHandle(job);
            return r;
        }
    }
    CloseHandle(job);
    DWORD w = WaitForSingleObject(p, 3000);
    reap(&p);
    if (w == WAIT_OBJECT_0)
        return verdict(c, WIN_R_JOB, WIN_ENFORCED, "closing the job's last handle killed the process in it");
    return verdict(c, WIN_R_JOB, WIN_UNVERIFIED, "closing the job's last handle left its process running");
}

/* ActiveProcessLimit 1: a second process must not join. */
static int probe_processes(fy_caps *c) {
    DWORD e = 0;
    HANDLE job = job_with(JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_ACTIVE_PROCESS, 1, 0);
    if (!job)
        return verdict(c, WIN_R_PROCESSES, WIN_UNAVAILABLE, "the host refused JOB_OBJECT_LIMIT_ACTIVE_PROCESS (error %lu)",
                       (unsigned long)GetLastError());
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION back;
    memset(&back, 0, sizeof(back));
    QueryInformationJobObject(job, JobObjectExtendedLimitInformation, &back, sizeof(back), NULL);
    bool rb = (back.BasicLimitInformation.LimitFlags & JOB_OBJECT_LIMIT_ACTIVE_PROCESS) &&
              back.BasicLimitInformation.ActiveProcessLimit == 1;
    HANDLE a = suspended_child(NULL, false, &e), b = suspended_child(NULL, false, &e);
    bool a_in = a && AssignProcessToJobObject(job, a);
    bool b_in = b && AssignProcessToJobObject(job, b);
    DWORD be = b_in ? 0 : GetLastError();
    reap(&a);
    reap(&b);
    CloseHandle(job);
    if (!a_in)
        return verdict(c, WIN_R_PROCESSES, WIN_UNAVAILABLE, "no child could be put in a job (error %lu)", (unsigned long)e);
    if (!b_in)
        return verdict(c, WIN_R_PROCESSES, WIN_ENFORCED, "a second process was refused by a limit of 1 (error %lu)%s",
                       (unsigned long)be, rb ? "; the limit reads back" : "");
    return verdict(c, WIN_R_PROCESSES, WIN_UNVERIFIED,
                   "a limit of 1 was accepted but a second process joined the job; the limit %s",
                   rb ? "reads back" : "does not read back");
}

/* JobMemoryLimit 32 MiB: committing 256 MiB in a process of the job must fail. */
static int probe_memory(fy_caps *c) {
    DWORD e = 0;
    const SIZE_T limit = 32u << 20, ask = 256u << 20;
    HANDLE job = job_with(JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_JOB_MEMORY, 0, limit);
    if (!job)
        return verdict(c, WIN_R_MEMORY, WIN_UNAVAILABLE, "the host refused JOB_OBJECT_LIMIT_JOB_MEMORY (error %lu)",
                       (unsigned long)GetLastError());
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION back;
    memset(&back, 0, sizeof(back));
    QueryInformationJobObject(job, JobObjectExtendedLimitInformation, &back, sizeof(back), NULL);
    bool rb = (back.BasicLimitInformation.LimitFlags & JOB_OBJECT_LIMIT_JOB_MEMORY) && back.JobMemoryLimit == limit;
    HANDLE p = suspended_child(NULL, false, &e);
    bool in = p && AssignProcessToJobObject(job, p);
    void *mem = in ? VirtualAllocEx(p, NULL, ask, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE) : NULL;
    DWORD me = mem ? 0 : GetLastError();
    reap(&p);
    CloseHandle(job);
    if (!in)
        return verdict(c, WIN_R_MEMORY, WIN_UNAVAILABLE, "no child could be put in a job (error %lu)", (unsigned long)e);
    if (!mem)
        return verdict(c, WIN_R_MEMORY, WIN_ENFORCED, "committing 256 MiB under a 32 MiB job limit failed (error %lu)%s",
                       (unsigned long)me, rb ? "; the limit reads back" : "");
    return verdict(c, WIN_R_MEMORY, WIN_UNVERIFIED,
                   "a 32 MiB job limit was accepted but 256 MiB were committed in the job; the limit %s",
                   rb ? "reads back" : "does not read back");
}

/* The CPU rate hard cap: its effect is not measured (no timed probe); it
 * is enforced when Windows (not Wine) accepts it and reads it back. */
static int probe_cpu(fy_caps *c) {
    HANDLE job = CreateJobObjectW(NULL, NULL);
    if (!job)
        return verdict(c, WIN_R_CPU, WIN_UNAVAILABLE, "CreateJobObject failed (error %lu)", (unsigned long)GetLastError());
    JOBOBJECT_CPU_RATE_CONTROL_INFORMATION cr, cb;
    memset(&cr, 0, sizeof(cr));
    memset(&cb, 0, sizeof(cb));
    cr.ControlFlags = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
    cr.CpuRate = 5000;
    bool set = SetInformationJobObject(job, JobObjectCpuRateControlInformation, &cr, sizeof(cr));
    DWORD e = set ? 0 : GetLastError();
    bool rb = set && QueryInformationJobObject(job, JobObjectCpuRateControlInformation, &cb, sizeof(cb), NULL) &&
              cb.CpuRate == cr.CpuRate && (cb.ControlFlags & JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP);
    CloseHandle(job);
    if (!set)
        return verdict(c, WIN_R_CPU, WIN_UNAVAILABLE, "the host rejected a CPU rate hard cap (error %lu)", (unsigned long)e);
    if (rb && !win_wine_version())
        return verdict(c, WIN_R_CPU, WIN_ENFORCED, "a hard cap was accepted and reads back (its effect is not timed)");
    return verdict(c, WIN_R_CPU, WIN_UNVERIFIED, "a hard cap was accepted but %s",
                   rb ? "this is Wine, which does not schedule by it" : "does not read back");
}

/* The restricted token: what the token says about itself, and what an
 * access check under it does. */
static bool token_is_restricted(HANDLE tok, DWORD *nprivs, bool *admin_deny_only) {
    BYTE buf[4096];
    DWORD len = 0;
    *nprivs = 0xffffffffu;
    *admin_deny_only = false;
    if (GetTokenInformation(tok, TokenPrivileges, buf, sizeof(buf), &len))
        *nprivs = ((TOKEN_PRIVILEGES *)buf)->PrivilegeCount;
    BYTE asid[SECURITY_MAX_SID_SIZE];
    DWORD alen = sizeof(asid);
    if (CreateWellKnownSid(WinBuiltinAdministratorsSid, NULL, asid, &alen) &&
        GetTokenInformation(tok, TokenGroups, buf, sizeof(buf), &len)) {
        const TOKEN_GROUPS *g = (const TOKEN_GROUPS *)buf;
        bool member = false;
        for (DWORD i = 0; i < g->GroupCount; i++)
            if (EqualSid(g->Groups[i].Sid, asid)) {
                member = true;
                *admin_deny_only = (g->Groups[i].Attributes & SE_GROUP_USE_FOR_DENY_ONLY) != 0;
            }
        if (!member)
            *admin_deny_only = true; /* not an administrator at all */
    }
    return IsTokenRestricted(tok) != 0;
}

/* Under the restricted token (impersonated), creating a file in dir. */
static DWORD write_as(HANDLE tok, const wchar_t *dir) {
    HANDLE imp = NULL;
    if (!DuplicateTokenEx(tok, TOKEN_IMPERSONATE | TOKEN_QUERY, NULL, SecurityImpersonation, TokenImpersonation, &imp))
        return GetLastError();
    wchar_t path[MAX_PATH + 16];
    _snwprintf(path, MAX_PATH + 16, L"%ls\\probe", dir);
    path[MAX_PATH + 15] = 0;
    DWORD e = 0;
    if (!SetThreadToken(NULL, imp)) {
        e = GetLastError();
    } else {
        HANDLE f = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_FLAG_DELETE_ON_CLOSE, NULL);
        e = f == INVALID_HANDLE_VALUE ? GetLastError() : 0;
        if (f != INVALID_HANDLE_VALUE)
            CloseHandle(f);
        RevertToSelf();
    }
    CloseHandle(imp);
    DeleteFileW(path);
    return e;
}

/* Low integrity (FY_CONTROL_LOW_INTEGRITY): a low-integrity restricted
 * token must read back low, and, impersonated, must fail to write a
 * directory that grants the attempt's SID full control but carries no
 * label (medium, implicitly) while it can write one labelled low: the
 * mandatory check, not the DACL, made the difference. */
static int probe_integrity(fy_caps *c) {
    void *tok = NULL, *sid = NULL;
    DWORD e = win_restricted_token(&tok, &sid, SECURITY_MANDATORY_LOW_RID);
    if (e)
        return verdict(c, WIN_R_INTEGRITY, WIN_UNAVAILABLE, "a low-integrity token could not be made (error %lu)",
                       (unsigned long)e);
    unsigned long rid = 0;
    win_token_integrity(tok, &rid);
    wchar_t tmp[MAX_PATH], medium[MAX_PATH + 64], low[MAX_PATH + 64];
    DWORD tl = GetTempPathW(MAX_PATH, tmp);
    int r;
    if (tl == 0 || tl > MAX_PATH - 64) {
        r = verdict(c, WIN_R_INTEGRITY, WIN_UNAVAILABLE, "no temporary directory (error %lu)",
                    (unsigned long)GetLastError());
    } else {
        unsigned long long t = util_now_usec();
        _snwprintf(medium, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-m", tmp, (unsigned long)GetCurrentProcessId(), t);
        _snwprintf(low, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-l", tmp, (unsigned long)GetCurrentProcessId(), t);
        DWORD e1 = win_make_private_dir(medium, sid, 0), e2 = win_make_private_dir(low, sid, SECURITY_MANDATORY_LOW_RID);
        unsigned long label = 0;
        if (!e2)
            win_label_of(low, &label);
        DWORD up = e1 ? e1 : write_as(tok, medium), down = e2 ? e2 : write_as(tok, low);
        win_remove_tree(medium);
        win_remove_tree(low);
        if (e1 || e2)
            /* The token took the request; what it does cannot be checked. */
            r = verdict(c, WIN_R_INTEGRITY, WIN_UNVERIFIED, "low integrity was set and the token reads back 0x%lx, "
                        "but a directory could not be made or labelled low to check it (errors %lu, %lu)", rid,
                        (unsigned long)e1, (unsigned long)e2);
        else if (rid == SECURITY_MANDATORY_LOW_RID && label == SECURITY_MANDATORY_LOW_RID && up == ERROR_ACCESS_DENIED &&
                 down == 0)
            r = verdict(c, WIN_R_INTEGRITY, WIN_ENFORCED, "a low-integrity token reads back low; it cannot write a "
                        "medium directory that grants it full control, and can write one labelled low");
        else
            r = verdict(c, WIN_R_INTEGRITY, WIN_UNVERIFIED, "low integrity was set, but the token reads back 0x%lx, "
                        "a low label reads back 0x%lx, and under it a medium directory granting it full control %s "
                        "(error %lu), a low one %s (error %lu)", rid, label,
                        up ? "refused a write" : "took a write", (unsigned long)up,
                        down ? "refused a write" : "took a write", (unsigned long)down);
    }
    CloseHandle(tok);
    LocalFree(sid);
    return r;
}

static int probe_token(fy_caps *c) {
    void *tok = NULL, *sid = NULL;
    DWORD e = win_restricted_token(&tok, &sid, 0);
    if (e)
        return verdict(c, WIN_R_TOKEN, WIN_UNAVAILABLE, "CreateRestrictedToken failed (error %lu)", (unsigned long)e);
    DWORD nprivs;
    bool deny;
    bool restricted = token_is_restricted(tok, &nprivs, &deny);
    /* Two directories: one granted to the caller only (the restricting
     * SIDs must keep the workload out), one granted to the attempt's SID
     * too (the workspace: it must get in). */
    wchar_t tmp[MAX_PATH], mine[MAX_PATH + 64], ws[MAX_PATH + 64];
    DWORD tl = GetTempPathW(MAX_PATH, tmp);
    int r = 0;
    if (tl == 0 || tl > MAX_PATH - 64) {
        r = verdict(c, WIN_R_ACL, WIN_UNAVAILABLE, "no temporary directory (error %lu)", (unsigned long)GetLastError());
    } else {
        unsigned long long t = util_now_usec();
        _snwprintf(mine, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-a", tmp, (unsigned long)GetCurrentProcessId(), t);
        _snwprintf(ws, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-b", tmp, (unsigned long)GetCurrentProcessId(), t);
        DWORD e1 = win_make_private_dir(mine, NULL, 0), e2 = win_make_private_dir(ws, sid, 0);
        DWORD denied = e1 ? e1 : write_as(tok, mine), allowed = e2 ? e2 : write_as(tok, ws);
        if (!e1)
            win_remove_tree(mine);
        if (!e2)
            win_remove_tree(ws);
        if (e1 || e2)
            r = verdict(c, WIN_R_ACL, WIN_UNAVAILABLE, "a directory with an explicit DACL could not be made (errors "
                        "%lu, %lu)", (unsigned long)e1, (unsigned long)e2);
        else if (denied == ERROR_ACCESS_DENIED && allowed == 0)
            r = verdict(c, WIN_R_ACL, WIN_ENFORCED, "the restricted workload can write its workspace and not a directory "
                        "granted to the caller only");
        else
            r = verdict(c, WIN_R_ACL, WIN_UNVERIFIED, "explicit DACLs are set, but under the restricted token a "
                        "directory granted to the caller only %s (error %lu) and the workspace %s (error %lu)",
                        denied ? "refused a write" : "took a write", (unsigned long)denied,
                        allowed ? "refused a write" : "took a write", (unsigned long)allowed);
    }
    if (r >= 0) {
        if (restricted && nprivs <= 1 && deny)
            r = verdict(c, WIN_R_TOKEN, WIN_ENFORCED, "restricted (restricting SIDs), %lu privilege(s) left, "
                        "Administrators deny-only", (unsigned long)nprivs);
        else
            r = verdict(c, WIN_R_TOKEN, WIN_UNVERIFIED, "CreateRestrictedToken succeeded but the token says: "
                        "restricted %s, %lu privilege(s) left, Administrators %s", restricted ? "yes" : "no",
                        (unsigned long)nprivs, deny ? "deny-only or absent" : "enabled");
    }
    CloseHandle(tok);
    LocalFree(sid);
    if (r < 0)
        return r;

    return probe_integrity(c);
}

/* Host paths ACL'd to an attempt: an ACE of a fresh SID granted on a
 * directory reads back, lets the restricted token write there (the
 * directory otherwise grants the caller only), and is gone, read back,
 * after it is revoked, when the write fails again. */
static int probe_host_acl(fy_caps *c) {
    void *tok = NULL, *sid = NULL;
    DWORD e = win_restricted_token(&tok, &sid, 0);
    if (e)
        return verdict(c, WIN_R_HOST_ACL, WIN_UNAVAILABLE, "no restricted token (error %lu)", (unsigned long)e);
    wchar_t tmp[MAX_PATH], dir[MAX_PATH + 64];
    DWORD tl = GetTempPathW(MAX_PATH, tmp);
    int r;
    if (tl == 0 || tl > MAX_PATH - 64 ||
        (_snwprintf(dir, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-h", tmp, (unsigned long)GetCurrentProcessId(),
                    (unsigned long long)util_now_usec()),
         (e = win_make_private_dir(dir, NULL, 0)))) {
        r = verdict(c, WIN_R_HOST_ACL, WIN_UNAVAILABLE, "no directory to check it in (error %lu)",
                    (unsigned long)(e ? e : GetLastError()));
    } else {
        struct win_grant g = {.path = dir, .writable = true};
        DWORD ge = win_grant(&g, sid, 0);
        DWORD during = ge ? ge : write_as(tok, dir);
        DWORD re = win_revoke(&g, sid);
        DWORD after = write_as(tok, dir);
        int left = win_sid_aces(dir, sid, NULL);
        win_remove_tree(dir);
        if (ge || re)
            r = verdict(c, WIN_R_HOST_ACL, WIN_UNAVAILABLE, "an ACE could not be %s (error %lu)",
                        ge ? "granted" : "removed", (unsigned long)(ge ? ge : re));
        else if (g.read_back && left == 0 && during == 0 && after == ERROR_ACCESS_DENIED)
            r = verdict(c, WIN_R_HOST_ACL, WIN_ENFORCED, "an attempt's ACE reads back, lets the restricted token "
                        "write a directory of the caller's, and is gone (read back) after it is removed");
        else
            r = verdict(c, WIN_R_HOST_ACL, WIN_UNVERIFIED, "the ACE was accepted but %s; under the restricted token "
                        "the directory %s while granted (error %lu) and %s after (error %lu)",
                        g.read_back ? "read back" : "does not read back (the DACL does not keep it)",
                        during ? "refused a write" : "took a write", (unsigned long)during,
                        after ? "refused a write" : "took a write", (unsigned long)after);
    }
    CloseHandle(tok);
    LocalFree(sid);
    return r;
}

/* A loopback connection to a listener of ours: made as the caller, then
 * under tok (impersonated). 0: connected; else the Winsock error. */
static int connect_as(HANDLE tok, int *self_err) {
    WSADATA wd;
    if (WSAStartup(MAKEWORD(2, 2), &wd) != 0)
        return *self_err = -1;
    SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int alen = sizeof(a), r = -1;
    *self_err = -1;
    if (l != INVALID_SOCKET && bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(l, (struct sockaddr *)&a, &alen) == 0 && listen(l, 4) == 0) {
        SOCKET s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
        *self_err = s != INVALID_SOCKET && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : WSAGetLastError();
        if (s != INVALID_SOCKET)
            closesocket(s);
        HANDLE imp = NULL;
        if (DuplicateTokenEx(tok, TOKEN_IMPERSONATE | TOKEN_QUERY, NULL, SecurityImpersonation, TokenImpersonation,
                             &imp) &&
            SetThreadToken(NULL, imp)) {
            s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
            r = s != INVALID_SOCKET && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : WSAGetLastError();
            if (s != INVALID_SOCKET)
                closesocket(s);
            RevertToSelf();
        }
        if (imp)
            CloseHandle(imp);
    }
    if (l != INVALID_SOCKET)
        closesocket(l);
    WSACleanup();
    return r;
}

/* AppContainer: a profile, a suspended child in it (its token must say
 * AppContainer, of that SID, no capability), and under that token a
 * directory not granted to the container refuses a write while one
 * granted to it takes one; the network verdict: a loopback connection the
 * caller can make is refused (WSAEACCES) under the container's token. */
static int probe_appcontainer(fy_caps *c) {
    struct win_ac_api api;
    if (!win_ac_load(&api)) {
        int r = verdict(c, WIN_R_APPCONTAINER, WIN_UNAVAILABLE, "userenv.dll has no CreateAppContainerProfile");
        return r < 0 ? r : verdict(c, WIN_R_NETWORK, WIN_UNAVAILABLE, "no AppContainer: the workload has the host's "
                                   "network, and network deny is refused");
    }
    wchar_t name[WIN_AC_NAME_MAX + 1];
    void *sid = NULL;
    win_ac_name(name, FY_ARRAY_SIZE(name), GetCurrentProcessId(), 0, util_now_usec());
    DWORD e = win_ac_create(&api, name, &sid);
    if (e) {
        win_ac_unload(&api);
        int r = verdict(c, WIN_R_APPCONTAINER, WIN_UNAVAILABLE, "CreateAppContainerProfile failed (error %lu)",
                        (unsigned long)e);
        return r < 0 ? r : verdict(c, WIN_R_NETWORK, WIN_UNAVAILABLE, "no AppContainer profile could be made");
    }
    /* As the backend launches: a restricted token (the attempt's), from
     * which Windows makes the container's token. */
    void *rtok = NULL, *rsid = NULL;
    e = win_restricted_token(&rtok, &rsid, 0);
    wchar_t app[MAX_PATH + 16], cmd[] = L"cmd.exe /c exit 0";
    UINT n = GetSystemDirectoryW(app, MAX_PATH);
    if (n && n < MAX_PATH)
        wcscat(app, L"\\cmd.exe");
    SIZE_T asz = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &asz);
    LPPROC_THREAD_ATTRIBUTE_LIST al = malloc(asz);
    SECURITY_CAPABILITIES sc;
    PROCESS_INFORMATION pi;
    memset(&pi, 0, sizeof(pi));
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof(si));
    si.StartupInfo.cb = sizeof(si);
    bool made = false;
    if (!e && al && InitializeProcThreadAttributeList(al, 1, 0, &asz)) {
        e = win_ac_attribute(al, &sc, sid);
        si.lpAttributeList = al;
        made = !e && CreateProcessAsUserW(rtok, app, cmd, NULL, NULL, FALSE,
                                          CREATE_SUSPENDED | CREATE_NO_WINDOW | EXTENDED_STARTUPINFO_PRESENT, NULL,
                                          NULL, &si.StartupInfo, &pi);
        if (!e && !made)
            e = GetLastError();
        DeleteProcThreadAttributeList(al);
    }
    free(al);
    int r;
    if (!made) {
        r = verdict(c, WIN_R_APPCONTAINER, WIN_UNAVAILABLE, "no process could be created in a profile (error %lu)",
                    (unsigned long)e);
        if (r >= 0)
            r = verdict(c, WIN_R_NETWORK, WIN_UNAVAILABLE, "no process could be created in an AppContainer");
    } else {
        bool is = win_ac_token_is(pi.hProcess, sid);
        HANDLE tok = NULL;
        OpenProcessToken(pi.hProcess, TOKEN_DUPLICATE | TOKEN_QUERY, &tok);
        wchar_t tmp[MAX_PATH], outside[MAX_PATH + 64], inside[MAX_PATH + 64];
        DWORD tl = GetTempPathW(MAX_PATH, tmp), denied = 1, allowed = 1;
        if (tok && tl && tl < MAX_PATH - 64) {
            unsigned long long t = util_now_usec();
            _snwprintf(outside, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-o", tmp, (unsigned long)GetCurrentProcessId(), t);
            _snwprintf(inside, MAX_PATH + 64, L"%lsforgeyard-probe-%lu-%llu-i", tmp, (unsigned long)GetCurrentProcessId(), t);
            /* Both granted to the attempt's SID and labelled low (what the
             * restricted token and the container's low integrity need);
             * only the second to the container's SID: the difference is
             * the container's own check. */
            DWORD e1 = win_make_private_dir(outside, rsid, SECURITY_MANDATORY_LOW_RID),
                  e2 = win_make_private_dir(inside, rsid, SECURITY_MANDATORY_LOW_RID);
            struct win_grant g = {.path = inside, .writable = true};
            if (!e2)
                e2 = win_grant(&g, sid, 0);
            denied = e1 ? e1 : write_as(tok, outside);
            allowed = e2 ? e2 : write_as(tok, inside);
            win_remove_tree(outside);
            win_remove_tree(inside);
        }
        int self_err = -1, net = tok ? connect_as(tok, &self_err) : -1;
        if (tok)
            CloseHandle(tok);
        TerminateProcess(pi.hProcess, 0);
        CloseHandle(pi.hThread);
        CloseHandle(pi.hProcess);
        if (is && denied == ERROR_ACCESS_DENIED && allowed == 0)
            r = verdict(c, WIN_R_APPCONTAINER, WIN_ENFORCED, "a process in a per-attempt profile has its container's "
                        "token, no capability, and writes only where the container SID is granted");
        else
            r = verdict(c, WIN_R_APPCONTAINER, WIN_UNVERIFIED, "a process was created in a profile, but its token %s "
                        "and a directory not granted to it %s (error %lu), one granted %s (error %lu)",
                        is ? "is the container's" : "is not the container's",
                        denied ? "refused a write" : "took a write", (unsigned long)denied,
                        allowed ? "refused a write" : "took a write", (unsigned long)allowed);
        if (r >= 0) {
            if (is && self_err == 0 && net == WSAEACCES)
                r = verdict(c, WIN_R_NETWORK, WIN_ENFORCED, "deny through an AppContainer without capabilities: a "
                            "loopback connection the host can make is refused under the container's token");
            else
                r = verdict(c, WIN_R_NETWORK, WIN_UNVERIFIED, "an AppContainer without capabilities should have no "
                            "network, but the check saw: the host's connection %d, the container's %d", self_err, net);
        }
    }
    win_ac_delete(&api, name);
    FreeSid(sid);
    win_ac_unload(&api);
    if (rtok)
        CloseHandle(rtok);
    LocalFree(rsid);
    return r;
}

static void host_facts(fy_caps *c) {
    RTL_OSVERSIONINFOW v;
    memset(&v, 0, sizeof(v));
    v.dwOSVersionInfoSize = sizeof(v);
    HMODULE nt = GetModuleHandleW(L"ntdll.dll");
    FARPROC f = nt ? GetProcAddress(nt, "RtlGetVersion") : NULL;
    if (f)
        ((LONG(WINAPI *)(RTL_OSVERSIONINFOW *))(void (*)(void))f)(&v);
    const char *wine = win_wine_version();
    free(c->host.kernel_release);
    c->host.kernel_release = util_asprintf("Windows %lu.%lu.%lu%s%s%s", (unsigned long)v.dwMajorVersion,
                                           (unsigned long)v.dwMinorVersion, (unsigned long)v.dwBuildNumber,
                                           wine ? " (Wine " : "", wine ? wine : "", wine ? ")" : "");
    free(c->host.cgroup_mode);
    c->host.cgroup_mode = util_strdup("none");
    c->host.is_root = false;
    if (wine)
        caps_set_fact(c, WIN_F_WINE, wine);
}

int win_probe(fy_caps *c, uint64_t flags, fy_error **reterr) {
    host_facts(c);
    int r = probe_job(c);
    if (r >= 0)
        r = probe_processes(c);
    if (r >= 0)
        r = probe_memory(c);
    if (r >= 0)
        r = probe_cpu(c);
    if (r >= 0)
        r = probe_token(c);
    if (r >= 0)
        r = probe_host_acl(c);
    if (r >= 0)
        r = probe_appcontainer(c);
    if (r >= 0)
        r = verdict(c, WIN_R_FILESYSTEM, WIN_UNAVAILABLE, "the process level sees the host's files; writes are "
                    "limited only by the restricted token's access checks (restricted-token, workspace-acl)");
    if (r < 0)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
    return 0;
}
