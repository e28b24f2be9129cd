/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The record of what an attempt changed outside its workspace, so that a
 * host that dies mid-attempt leaves nothing fy_gc cannot take back: the
 * job dies with the host and the workspace is found by name, but an ACE
 * on a host directory, the label it had and an AppContainer profile are
 * found only here. <workspace>.acl, next to the workspace (out of the
 * workload's reach: the workspaces' parent is not granted to it), made
 * with a protected DACL (the caller and SYSTEM), one line per change,
 * written and flushed before the change is made:
 *   ac NAME          an AppContainer profile (forgeyard.*)
 *   grant SID PATH   an ACE of SID on PATH (the attempt's or its container's SID)
 *   label RID PATH   PATH's label before ours (0: none)
 * Removed when everything was taken back. fy_gc trusts a record only when
 * it is the caller's own (win_callers_own), and a SID only of the two
 * forms an attempt uses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include "windows-appcontainer.h"
#include "windows-backend.h"

static wchar_t *record_path(const wchar_t *workspace) {
    size_t n = wcslen(workspace) + 8;
    wchar_t *p = malloc(n * sizeof(wchar_t));
    if (p)
        _snwprintf(p, n, L"%ls.acl", workspace);
    return p;
}

void *win_record_open(const wchar_t *workspace) {
    wchar_t *path = record_path(workspace);
    if (!path)
        return NULL;
    /* The caller and SYSTEM only, nothing inherited. */
    PSECURITY_DESCRIPTOR sd = NULL;
    HANDLE f = INVALID_HANDLE_VALUE;
    HANDLE tok = NULL;
    BYTE ubuf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
    DWORD len = 0;
    LPWSTR me = NULL;
    if (OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok) &&
        GetTokenInformation(tok, TokenUser, ubuf, sizeof(ubuf), &len) &&
        ConvertSidToStringSidW(((TOKEN_USER *)ubuf)->User.Sid, &me)) {
        wchar_t sddl[256];
        _snwprintf(sddl, FY_ARRAY_SIZE(sddl), L"D:P(A;;FA;;;%ls)(A;;FA;;;SY)", me);
        sddl[FY_ARRAY_SIZE(sddl) - 1] = 0;
        if (ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, &sd, NULL)) {
            SECURITY_ATTRIBUTES sa = {sizeof(sa), sd, FALSE};
            f = CreateFileW(path, GENERIC_WRITE, FILE_SHARE_READ, &sa, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        }
    }
    if (tok)
        CloseHandle(tok);
    LocalFree(me);
    LocalFree(sd);
    free(path);
    return f == INVALID_HANDLE_VALUE ? NULL : f;
}

void win_record_line(void *record, const char *fmt, ...) {
    if (!record)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line) - 1)
        return; /* never a cut line: undo would read another path */
    line[n++] = '\n';
    DWORD w = 0;
    if (WriteFile(record, line, (DWORD)n, &w, NULL))
        FlushFileBuffers(record);
}

void win_record_close(void **record, const wchar_t *workspace, bool remove) {
    if (*record)
        CloseHandle(*record);
    *record = NULL;
    if (!remove)
        return;
    wchar_t *path = record_path(workspace);
    if (path)
        DeleteFileW(path);
    free(path);
}

/* A SID an attempt grants: its own (S-1-5-21-r-r-r) or its container's
 * (S-1-15-2-...); never another (the caller's own user SID has five
 * sub-authorities). */
static PSID attempt_sid(const char *text) {
    PSID s = NULL;
    if (!ConvertStringSidToSidA(text, &s))
        return NULL;
    PSID_IDENTIFIER_AUTHORITY a = GetSidIdentifierAuthority(s);
    BYTE n = *GetSidSubAuthorityCount(s);
    bool ours = (a->Value[5] == 5 && n == 4 && *GetSidSubAuthority(s, 0) == SECURITY_NT_NON_UNIQUE) ||
                (a->Value[5] == 15 && n >= 2 && *GetSidSubAuthority(s, 0) == SECURITY_APP_PACKAGE_BASE_RID);
    if (!ours || a->Value[0] || a->Value[1] || a->Value[2] || a->Value[3] || a->Value[4]) {
        LocalFree(s);
        return NULL;
    }
    return s;
}

int win_record_undo(const wchar_t *path) {
    if (!win_callers_own(path, false))
        return -1;
    HANDLE f = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (f == INVALID_HANDLE_VALUE)
        return -1;
    LARGE_INTEGER size;
    char *buf = NULL;
    DWORD got = 0;
    bool ok = GetFileSizeEx(f, &size) && size.QuadPart < (1 << 20) && (buf = malloc((size_t)size.QuadPart + 1)) &&
              ReadFile(f, buf, (DWORD)size.QuadPart, &got, NULL);
    CloseHandle(f);
    if (!ok) {
        free(buf);
        return -1;
    }
    buf[got] = 0;
    int r = 0;
    struct win_ac_api api;
    bool have_api = false;
    /* Labels first (the old one back), then the ACEs, then the profile. */
    for (int pass = 0; pass < 3; pass++) {
        for (char *line = buf, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            if (!next)
                break; /* an unfinished last line: written, not acted on */
            *next = 0;
            char word[8] = "", arg[200] = "";
            int off = 0;
            if (sscanf(line, "%7s %199s %n", word, arg, &off) >= 2) {
                wchar_t *wpath = off ? win_wide(line + off) : NULL;
                if (pass == 0 && !strcmp(word, "label") && wpath) {
                    unsigned long rid = strtoul(arg, NULL, 0);
                    if ((rid ? win_set_label(wpath, rid) : win_clear_label(wpath)) &&
                        GetFileAttributesW(wpath) != INVALID_FILE_ATTRIBUTES)
                        r = -1;
                } else if (pass == 1 && !strcmp(word, "grant") && wpath) {
                    PSID sid = attempt_sid(arg);
                    struct win_grant g = {.path = wpath, .granted = true};
                    if (!sid || win_revoke(&g, sid))
                        r = -1;
                    LocalFree(sid);
                } else if (pass == 2 && !strcmp(word, "ac") && !strncmp(arg, "forgeyard.", 10)) {
                    wchar_t *name = win_wide(arg);
                    if (!have_api)
                        have_api = win_ac_load(&api);
                    /* Gone already is fine; no API means none was made here. */
                    if (name && have_api)
                        win_ac_delete(&api, name);
                    free(name);
                }
                free(wpath);
            }
            *next = '\n';
            next++;
        }
    }
    if (have_api)
        win_ac_unload(&api);
    free(buf);
    return r;
}
