/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The workload's principal: a restricted copy of the caller's token, and
 * the per-attempt workspace it may write, by an explicit DACL. */
#include <stdlib.h>
#include <windows.h>
#include <aclapi.h>
#include <bcrypt.h>
#include <sddl.h>

#include "windows-backend.h"

/* A random SID of the attempt (S-1-5-21-r-r-r), as Chromium's
 * unique_restricted_sid: it names this attempt's workload in ACLs. */
static DWORD attempt_sid(PSID *ret) {
    SID_IDENTIFIER_AUTHORITY nt = SECURITY_NT_AUTHORITY;
    DWORD r[3];
    if (BCryptGenRandom(NULL, (PUCHAR)r, sizeof(r), BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
        return ERROR_GEN_FAILURE;
    PSID sid;
    if (!AllocateAndInitializeSid(&nt, 4, SECURITY_NT_NON_UNIQUE, r[0], r[1], r[2], 0, 0, 0, 0, &sid))
        return GetLastError();
    /* Into LocalAlloc'd memory, so that the caller frees it one way. */
    DWORD len = GetLengthSid(sid);
    PSID copy = LocalAlloc(LMEM_FIXED, len);
    if (!copy || !CopySid(len, copy, sid)) {
        DWORD e = copy ? GetLastError() : ERROR_NOT_ENOUGH_MEMORY;
        LocalFree(copy);
        FreeSid(sid);
        return e;
    }
    FreeSid(sid);
    *ret = copy;
    return 0;
}

static DWORD well_known(WELL_KNOWN_SID_TYPE type, PSID *ret) {
    DWORD len = SECURITY_MAX_SID_SIZE;
    PSID sid = LocalAlloc(LMEM_FIXED, len);
    if (!sid)
        return ERROR_NOT_ENOUGH_MEMORY;
    if (!CreateWellKnownSid(type, NULL, sid, &len)) {
        DWORD e = GetLastError();
        LocalFree(sid);
        return e;
    }
    *ret = sid;
    return 0;
}

static DWORD grant_default_dacl(HANDLE token, PSID sid) {
    DWORD len = 0;
    GetTokenInformation(token, TokenDefaultDacl, NULL, 0, &len);
    TOKEN_DEFAULT_DACL *dd = len ? malloc(len) : NULL;
    if (!dd)
        return len ? ERROR_NOT_ENOUGH_MEMORY : GetLastError();
    DWORD e = 0;
    PACL acl = NULL;
    if (!GetTokenInformation(token, TokenDefaultDacl, dd, len, &len)) {
        e = GetLastError();
    } else {
        EXPLICIT_ACCESS_W ea = {0};
        ea.grfAccessPermissions = GENERIC_ALL;
        ea.grfAccessMode = GRANT_ACCESS;
        ea.Trustee.TrusteeForm = TRUSTEE_IS_SID;
        ea.Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
        ea.Trustee.ptstrName = (LPWSTR)sid;
        if ((e = SetEntriesInAclW(1, &ea, dd->DefaultDacl, &acl)) == ERROR_SUCCESS) {
            TOKEN_DEFAULT_DACL nd = {acl};
            if (!SetTokenInformation(token, TokenDefaultDacl, &nd, sizeof(nd)))
                e = GetLastError();
        }
    }
    LocalFree(acl);
    free(dd);
    return e;
}

unsigned long win_restricted_token(void **ret_token, void **ret_sid, unsigned long integrity_rid) {
    HANDLE self = NULL, token = NULL;
    PSID admins = NULL, me = NULL, restrict_sids[5] = {0};
    DWORD e = 0;
    if (!OpenProcessToken(GetCurrentProcess(),
                          TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT, &self))
        return GetLastError();
    if ((e = well_known(WinBuiltinAdministratorsSid, &admins)) || (e = attempt_sid(&me)))
        goto out;
    restrict_sids[0] = me;
    static const WELL_KNOWN_SID_TYPE kinds[] = {WinWorldSid, WinBuiltinUsersSid, WinAuthenticatedUserSid,
                                               WinRestrictedCodeSid};
    for (int i = 0; i < 4; i++)
        if ((e = well_known(kinds[i], &restrict_sids[i + 1])))
            goto out;
    SID_AND_ATTRIBUTES deny[1] = {{admins, 0}};
    SID_AND_ATTRIBUTES restricting[5];
    for (int i = 0; i < 5; i++)
        restricting[i] = (SID_AND_ATTRIBUTES){restrict_sids[i], 0};
    if (!CreateRestrictedToken(self, DISABLE_MAX_PRIVILEGE, 1, deny, 0, NULL, 5, restricting, &token)) {
        e = GetLastError();
        goto out;
    }
    /* The objects the workload creates (its process, threads, files
     * without an explicit DACL) get the token's default DACL; with
     * restricting SIDs each access is checked twice, so it must grant the
     * attempt's SID and RESTRICTED too, or the workload cannot open what
     * it made (as Chromium's AddSidToDefaultDacl). */
    if ((e = grant_default_dacl(token, me)) || (e = grant_default_dacl(token, restrict_sids[4])))
        goto out;
    if (integrity_rid) {
        SID_IDENTIFIER_AUTHORITY ml = SECURITY_MANDATORY_LABEL_AUTHORITY;
        PSID il = NULL;
        if (!AllocateAndInitializeSid(&ml, 1, integrity_rid, 0, 0, 0, 0, 0, 0, 0, &il)) {
            e = GetLastError();
            goto out;
        }
        TOKEN_MANDATORY_LABEL tml = {{il, SE_GROUP_INTEGRITY}};
        BOOL ok = SetTokenInformation(token, TokenIntegrityLevel, &tml, sizeof(tml) + GetLengthSid(il));
        if (!ok)
            e = GetLastError();
        FreeSid(il);
        if (!ok)
            goto out;
    }
    *ret_token = token;
    *ret_sid = me;
    token = NULL;
    restrict_sids[0] = me = NULL; /* the caller's now */
out:
    if (token)
        CloseHandle(token);
    CloseHandle(self);
    LocalFree(admins);
    for (int i = 1; i < 5; i++)
        LocalFree(restrict_sids[i]);
    LocalFree(me); /* restrict_sids[0], unless returned */
    return e;
}

unsigned long win_make_private_dir(const wchar_t *path, void *sid, unsigned long label_rid) {
    HANDLE self = NULL;
    BYTE ubuf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
    DWORD len = 0, e = 0;
    PSID system = NULL;
    PACL acl = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &self))
        return GetLastError();
    if (!GetTokenInformation(self, TokenUser, ubuf, sizeof(ubuf), &len)) {
        e = GetLastError();
        CloseHandle(self);
        return e;
    }
    CloseHandle(self);
    if ((e = well_known(WinLocalSystemSid, &system)))
        return e;
    EXPLICIT_ACCESS_W ea[3];
    PSID who[3] = {((TOKEN_USER *)ubuf)->User.Sid, system, sid};
    DWORD nwho = sid ? 3 : 2;
    for (DWORD i = 0; i < nwho; i++) {
        ea[i] = (EXPLICIT_ACCESS_W){0};
        ea[i].grfAccessPermissions = GENERIC_ALL;
        ea[i].grfAccessMode = SET_ACCESS;
        ea[i].grfInheritance = SUB_CONTAINERS_AND_OBJECTS_INHERIT;
        ea[i].Trustee.TrusteeForm = TRUSTEE_IS_SID;
        ea[i].Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
        ea[i].Trustee.ptstrName = (LPWSTR)who[i];
    }
    if ((e = SetEntriesInAclW(nwho, ea, NULL, &acl)) != ERROR_SUCCESS)
        goto out;
    SECURITY_DESCRIPTOR sd;
    if (!InitializeSecurityDescriptor(&sd, SECURITY_DESCRIPTOR_REVISION) ||
        !SetSecurityDescriptorDacl(&sd, TRUE, acl, FALSE) ||
        !SetSecurityDescriptorControl(&sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED)) {
        e = GetLastError();
        goto out;
    }
    SECURITY_ATTRIBUTES sa = {sizeof(sa), &sd, FALSE};
    if (!CreateDirectoryW(path, &sa)) {
        e = GetLastError();
        goto out;
    }
    /* Set again by name: a directory created with a descriptor may still
     * merge inheritable ACEs on some file systems; this one is exact. */
    e = SetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT,
                              DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, NULL, NULL, acl, NULL);
    if (!e && label_rid)
        e = win_set_label(path, label_rid);
out:
    LocalFree(acl);
    LocalFree(system);
    return e;
}

int win_remove_tree(const wchar_t *path) {
    size_t n = wcslen(path);
    wchar_t *pat = malloc((n + 3) * sizeof(wchar_t));
    if (!pat)
        return -1;
    wcscpy(pat, path);
    wcscpy(pat + n, L"\\*");
    int left = 0;
    WIN32_FIND_DATAW fd;
    HANDLE f = FindFirstFileW(pat, &fd);
    if (f != INVALID_HANDLE_VALUE) {
        do {
            if (!wcscmp(fd.cFileName, L".") || !wcscmp(fd.cFileName, L".."))
                continue;
            size_t m = wcslen(fd.cFileName);
            wchar_t *child = malloc((n + m + 2) * sizeof(wchar_t));
            if (!child) {
                left = -1;
                continue;
            }
            wcscpy(child, path);
            child[n] = L'\\';
            wcscpy(child + n + 1, fd.cFileName);
            if (fd.dwFileAttributes & FILE_ATTRIBUTE_READONLY)
                SetFileAttributesW(child, fd.dwFileAttributes & ~(DWORD)FILE_ATTRIBUTE_READONLY);
            /* A reparse point (junction, link) is removed, never followed. */
            if ((fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !(fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
                if (win_remove_tree(child) < 0)
                    left = -1;
            } else if ((fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) ? !RemoveDirectoryW(child) : !DeleteFileW(child)) {
                left = -1;
            }
            free(child);
        } while (FindNextFileW(f, &fd));
        FindClose(f);
    }
    free(pat);
    if (!RemoveDirectoryW(path) && GetLastError() != ERROR_FILE_NOT_FOUND)
        left = -1;
    return left;
}
