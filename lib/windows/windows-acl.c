/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Access control on the files an attempt may touch: the low mandatory
 * label of a workspace (for a low-integrity workload), and the explicit
 * ACE of the attempt's SID on the host directories of the plan (--build,
 * --output, binds), granted for the attempt's duration, removed at its end
 * and witnessed removed (read back). */
#include <stdlib.h>
#include <windows.h>
#include <aclapi.h>

#include "windows-backend.h"

unsigned long win_token_integrity(void *token, unsigned long *rid) {
    BYTE buf[256];
    DWORD len = 0;
    *rid = 0;
    if (!GetTokenInformation(token, TokenIntegrityLevel, buf, sizeof(buf), &len))
        return GetLastError();
    PSID s = ((TOKEN_MANDATORY_LABEL *)buf)->Label.Sid;
    if (!s || !IsValidSid(s) || *GetSidSubAuthorityCount(s) == 0)
        return ERROR_INVALID_SID;
    *rid = *GetSidSubAuthority(s, *GetSidSubAuthorityCount(s) - 1);
    return 0;
}

/* The label SACL: one mandatory label ACE of integrity rid, no-write-up,
 * inherited by everything below when inherit. */
static DWORD label_acl(DWORD rid, bool inherit, PACL *ret) {
    SID_IDENTIFIER_AUTHORITY ml = SECURITY_MANDATORY_LABEL_AUTHORITY;
    PSID il = NULL;
    if (!AllocateAndInitializeSid(&ml, 1, rid, 0, 0, 0, 0, 0, 0, 0, &il))
        return GetLastError();
    DWORD size = sizeof(ACL) + sizeof(SYSTEM_MANDATORY_LABEL_ACE) + GetLengthSid(il);
    PACL acl = LocalAlloc(LPTR, size);
    DWORD e = 0;
    if (!acl)
        e = ERROR_NOT_ENOUGH_MEMORY;
    else if (!InitializeAcl(acl, size, ACL_REVISION) ||
             !AddMandatoryAce(acl, ACL_REVISION, inherit ? OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE : 0,
                              SYSTEM_MANDATORY_LABEL_NO_WRITE_UP, il))
        e = GetLastError();
    FreeSid(il);
    if (e) {
        LocalFree(acl);
        return e;
    }
    *ret = acl;
    return 0;
}

unsigned long win_set_label(const wchar_t *path, unsigned long rid) {
    PACL sacl = NULL;
    DWORD e = label_acl(rid, true, &sacl);
    if (e)
        return e;
    e = SetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT, LABEL_SECURITY_INFORMATION, NULL, NULL, NULL, sacl);
    LocalFree(sacl);
    return e;
}

unsigned long win_clear_label(const wchar_t *path) {
    ACL empty; /* none before: an empty label list removes ours */
    if (!InitializeAcl(&empty, sizeof(empty), ACL_REVISION))
        return GetLastError();
    return SetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT, LABEL_SECURITY_INFORMATION, NULL, NULL, NULL, &empty);
}

unsigned long win_label_of(const wchar_t *path, unsigned long *rid) {
    PACL sacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    *rid = 0;
    DWORD e = GetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT, LABEL_SECURITY_INFORMATION, NULL, NULL, NULL, &sacl,
                                    &sd);
    if (e)
        return e;
    for (DWORD i = 0; sacl && i < sacl->AceCount; i++) {
        ACE_HEADER *a = NULL;
        if (!GetAce(sacl, i, (void **)&a) || a->AceType != SYSTEM_MANDATORY_LABEL_ACE_TYPE)
            continue;
        PSID s = (PSID)&((SYSTEM_MANDATORY_LABEL_ACE *)a)->SidStart;
        if (IsValidSid(s) && *GetSidSubAuthorityCount(s))
            *rid = *GetSidSubAuthority(s, *GetSidSubAuthorityCount(s) - 1);
    }
    LocalFree(sd);
    return 0;
}

/* The SID an access ACE names, or NULL for other kinds. */
static PSID ace_sid(ACE_HEADER *a) {
    switch (a->AceType) {
    case ACCESS_ALLOWED_ACE_TYPE: return (PSID)&((ACCESS_ALLOWED_ACE *)a)->SidStart;
    case ACCESS_DENIED_ACE_TYPE: return (PSID)&((ACCESS_DENIED_ACE *)a)->SidStart;
    default: return NULL;
    }
}

int win_sid_aces(const wchar_t *path, void *sid, unsigned long *mask) {
    PACL dacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    if (mask)
        *mask = 0;
    if (GetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &dacl, NULL, &sd))
        return -1;
    int n = 0;
    for (DWORD i = 0; dacl && i < dacl->AceCount; i++) {
        ACE_HEADER *a = NULL;
        PSID s = GetAce(dacl, i, (void **)&a) ? ace_sid(a) : NULL;
        if (s && EqualSid(s, sid)) {
            n++;
            if (mask && a->AceType == ACCESS_ALLOWED_ACE_TYPE)
                *mask |= ((ACCESS_ALLOWED_ACE *)a)->Mask;
        }
    }
    LocalFree(sd);
    return n;
}

/* What a writable grant allows: everything but changing the ACL, the
 * owner or the label (the workload must not be able to keep the directory
 * after its attempt, or to open it to others). */
#define GRANT_RW (FILE_GENERIC_READ | FILE_GENERIC_WRITE | FILE_GENERIC_EXECUTE | DELETE | FILE_DELETE_CHILD)
#define GRANT_RO (FILE_GENERIC_READ | FILE_GENERIC_EXECUTE)

unsigned long win_grant(struct win_grant *g, void *sid, unsigned long label_rid) {
    PACL dacl = NULL, nacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    DWORD attrs = GetFileAttributesW(g->path);
    if (attrs == INVALID_FILE_ATTRIBUTES)
        return GetLastError();
    bool dir = (attrs & FILE_ATTRIBUTE_DIRECTORY) != 0;
    DWORD e = GetNamedSecurityInfoW(g->path, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &dacl, NULL, &sd);
    if (e)
        return e;
    if (!dacl) {
        /* No DACL at all: everyone may do everything already. An ACE
         * added to it would make a DACL that lets only the attempt in (and
         * nobody once it is removed): left alone. */
        LocalFree(sd);
        g->read_back = true;
        g->no_dacl = true;
        goto label;
    }
    EXPLICIT_ACCESS_W ea = {0};
    ea.grfAccessPermissions = g->writable ? GRANT_RW : GRANT_RO;
    ea.grfAccessMode = GRANT_ACCESS;
    ea.grfInheritance = dir ? SUB_CONTAINERS_AND_OBJECTS_INHERIT : NO_INHERITANCE;
    ea.Trustee.TrusteeForm = TRUSTEE_IS_SID;
    ea.Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
    ea.Trustee.ptstrName = (LPWSTR)sid;
    if ((e = SetEntriesInAclW(1, &ea, dacl, &nacl)) == ERROR_SUCCESS) {
        /* By name: the ACE is propagated to what is below (each file's
         * inherited copy), so the workload can change existing files too.
         * Granted once asked: a propagation that fails part-way has set
         * the directory's DACL and some files', all to be taken back (and
         * kept in the record for fy_gc until they are). */
        e = SetNamedSecurityInfoW(g->path, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, nacl, NULL);
        g->granted = true;
    }
    LocalFree(nacl);
    LocalFree(sd);
    if (e)
        return e;
    /* Read back: does the DACL name the attempt now? (Wine's does not: it
     * derives a file's DACL from its mode bits and keeps no ACE.) */
    unsigned long mask = 0;
    g->read_back = win_sid_aces(g->path, sid, &mask) >= 1 &&
                   (mask & ea.grfAccessPermissions) == ea.grfAccessPermissions;
label:
    /* A low-integrity workload writes only below a low label: the old
     * label is kept, to be put back at the end. */
    if (g->writable && label_rid) {
        if (!(g->label_err = win_label_of(g->path, &g->old_label)) && !(g->label_err = win_set_label(g->path, label_rid)))
            g->relabelled = true;
    }
    return 0;
}

unsigned long win_revoke(struct win_grant *g, void *sid) {
    DWORD e = 0;
    /* Gone already (the workspace, removed first): nothing names it. */
    if (GetFileAttributesW(g->path) == INVALID_FILE_ATTRIBUTES &&
        (GetLastError() == ERROR_FILE_NOT_FOUND || GetLastError() == ERROR_PATH_NOT_FOUND)) {
        g->granted = g->relabelled = false;
        return 0;
    }
    if (g->relabelled) {
        e = g->old_label ? win_set_label(g->path, g->old_label) : win_clear_label(g->path);
        if (!e)
            g->relabelled = false;
    }
    if (!g->granted)
        return e;
    PACL dacl = NULL, nacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    DWORD e2 = GetNamedSecurityInfoW(g->path, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &dacl, NULL, &sd);
    if (!e2 && !dacl) { /* no DACL: nothing names the attempt (and an empty one would lock everyone out) */
        LocalFree(sd);
    } else if (!e2) {
        /* A copy without the attempt's explicit ACEs (inherited copies are
         * recomputed from the parent by SetNamedSecurityInfo). */
        ACL_SIZE_INFORMATION si = {0};
        DWORD size = sizeof(ACL);
        if (dacl && GetAclInformation(dacl, &si, sizeof(si), AclSizeInformation))
            size = si.AclBytesInUse;
        nacl = LocalAlloc(LPTR, size);
        if (!nacl || !InitializeAcl(nacl, size, ACL_REVISION))
            e2 = nacl ? GetLastError() : ERROR_NOT_ENOUGH_MEMORY;
        for (DWORD i = 0; !e2 && dacl && i < dacl->AceCount; i++) {
            ACE_HEADER *a = NULL;
            if (!GetAce(dacl, i, (void **)&a)) { /* never drop an ACE of someone else's unread */
                e2 = GetLastError() ? GetLastError() : ERROR_INVALID_ACL;
                break;
            }
            PSID s = ace_sid(a);
            if (s && EqualSid(s, sid) && !(a->AceFlags & INHERITED_ACE))
                continue;
            if (!AddAce(nacl, ACL_REVISION, MAXDWORD, a, a->AceSize))
                e2 = GetLastError();
        }
        if (!e2)
            e2 = SetNamedSecurityInfoW(g->path, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, nacl, NULL);
        LocalFree(nacl);
        LocalFree(sd);
    }
    /* The witness: the directory's DACL names the attempt no more. */
    if (!e2 && win_sid_aces(g->path, sid, NULL) != 0)
        e2 = ERROR_INVALID_ACL;
    if (!e2)
        g->granted = false;
    return e ? e : e2;
}

unsigned long win_make_secret_dir(const wchar_t *path, void *sid, void *ac_sid) {
    HANDLE self = NULL;
    BYTE ubuf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
    DWORD len = 0, e = 0;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &self))
        return GetLastError();
    BOOL got = GetTokenInformation(self, TokenUser, ubuf, sizeof(ubuf), &len);
    e = got ? 0 : GetLastError();
    CloseHandle(self);
    if (e)
        return e;
    EXPLICIT_ACCESS_W ea[3];
    PSID who[3] = {((TOKEN_USER *)ubuf)->User.Sid, sid, ac_sid};
    DWORD nwho = ac_sid ? 3 : 2;
    for (DWORD i = 0; i < nwho; i++) {
        ea[i] = (EXPLICIT_ACCESS_W){0};
        /* The caller may do anything (it removes them); the attempt reads. */
        ea[i].grfAccessPermissions = i == 0 ? GENERIC_ALL : FILE_GENERIC_READ | FILE_GENERIC_EXECUTE;
        ea[i].grfAccessMode = SET_ACCESS;
        ea[i].grfInheritance = SUB_CONTAINERS_AND_OBJECTS_INHERIT;
        ea[i].Trustee.TrusteeForm = TRUSTEE_IS_SID;
        ea[i].Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
        ea[i].Trustee.ptstrName = (LPWSTR)who[i];
    }
    PACL acl = NULL;
    if ((e = SetEntriesInAclW(nwho, ea, NULL, &acl)) != ERROR_SUCCESS)
        return e;
    SECURITY_DESCRIPTOR sd;
    if (!InitializeSecurityDescriptor(&sd, SECURITY_DESCRIPTOR_REVISION) ||
        !SetSecurityDescriptorDacl(&sd, TRUE, acl, FALSE) ||
        !SetSecurityDescriptorControl(&sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED)) {
        e = GetLastError();
    } else {
        SECURITY_ATTRIBUTES sa = {sizeof(sa), &sd, FALSE};
        if (!CreateDirectoryW(path, &sa))
            e = GetLastError();
        else
            e = SetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT,
                                      DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, NULL, NULL, acl,
                                      NULL);
    }
    LocalFree(acl);
    return e;
}

static bool caller_sid(BYTE *buf, DWORD size) {
    HANDLE tok = NULL;
    DWORD len = 0;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
        return false;
    BOOL ok = GetTokenInformation(tok, TokenUser, buf, size, &len);
    CloseHandle(tok);
    return ok != 0;
}

/* The caller's own: owned by the caller, no reparse point, and no ACE that
 * lets anyone but the caller, SYSTEM or Administrators change it. */
bool win_callers_own(const wchar_t *path, bool want_dir) {
    DWORD attrs = GetFileAttributesW(path);
    if (attrs == INVALID_FILE_ATTRIBUTES || (attrs & FILE_ATTRIBUTE_REPARSE_POINT) ||
        !!(attrs & FILE_ATTRIBUTE_DIRECTORY) != want_dir)
        return false;
    BYTE ubuf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE], sys[SECURITY_MAX_SID_SIZE], adm[SECURITY_MAX_SID_SIZE];
    DWORD sl = sizeof(sys), al = sizeof(adm);
    if (!caller_sid(ubuf, sizeof(ubuf)) || !CreateWellKnownSid(WinLocalSystemSid, NULL, sys, &sl) ||
        !CreateWellKnownSid(WinBuiltinAdministratorsSid, NULL, adm, &al))
        return false;
    PSID me = ((TOKEN_USER *)ubuf)->User.Sid, owner = NULL;
    PACL dacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    if (GetNamedSecurityInfoW((LPWSTR)path, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                              &owner, NULL, &dacl, NULL, &sd))
        return false;
    bool ok = owner && EqualSid(owner, me) && dacl;
    const DWORD writes = FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES | DELETE |
                         FILE_DELETE_CHILD | WRITE_DAC | WRITE_OWNER | GENERIC_WRITE | GENERIC_ALL;
    for (DWORD i = 0; ok && i < dacl->AceCount; i++) {
        ACCESS_ALLOWED_ACE *a = NULL;
        if (!GetAce(dacl, i, (void **)&a) || a->Header.AceType != ACCESS_ALLOWED_ACE_TYPE)
            continue;
        PSID s = (PSID)&a->SidStart;
        if ((a->Mask & writes) && !EqualSid(s, me) && !EqualSid(s, sys) && !EqualSid(s, adm))
            ok = false;
    }
    LocalFree(sd);
    return ok;
}

