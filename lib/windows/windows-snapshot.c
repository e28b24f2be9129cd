/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Persisted probe snapshots on Windows (fy_probe_snapshot): what the
 * Windows probe depends on (its part of the key), and the store: one file
 * per key in a directory that must be the caller's own (its owner is the
 * caller's user SID, it is no reparse point, and its DACL lets nobody but
 * the caller, SYSTEM and Administrators write it: the 0700 of the Linux
 * store), each file written whole (a temporary name, then a replacing
 * rename) and read only when it is a plain file of the caller's. A
 * snapshot whose key text is not byte for byte this one is ignored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <aclapi.h>
#include <bcrypt.h>
#include <sddl.h>

#include <sodium.h>

#include "windows-backend.h"

#define SNAPSHOT_MAX (1u << 20)

/* The caller's token: user, integrity, elevation, groups, privileges
 * (what every check of the probe runs as). */
static void add_token(struct strbuf *key) {
    HANDLE tok = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok)) {
        strbuf_printf(key, "token -\n");
        return;
    }
    static BYTE buf[16384];
    DWORD len = 0;
    LPSTR s = NULL;
    if (GetTokenInformation(tok, TokenUser, buf, sizeof(buf), &len) &&
        ConvertSidToStringSidA(((TOKEN_USER *)buf)->User.Sid, &s)) {
        strbuf_printf(key, "user %s\n", s);
        LocalFree(s);
    }
    unsigned long rid = 0;
    win_token_integrity(tok, &rid);
    DWORD elev = 0;
    GetTokenInformation(tok, TokenElevationType, &elev, sizeof(elev), &len);
    strbuf_printf(key, "integrity 0x%lx elevation %lu restricted %d\n", rid, (unsigned long)elev,
                  IsTokenRestricted(tok) ? 1 : 0);
    if (GetTokenInformation(tok, TokenGroups, buf, sizeof(buf), &len)) {
        const TOKEN_GROUPS *g = (const TOKEN_GROUPS *)buf;
        for (DWORD i = 0; i < g->GroupCount; i++)
            if (ConvertSidToStringSidA(g->Groups[i].Sid, &s)) {
                strbuf_printf(key, "group %s %lx\n", s, (unsigned long)g->Groups[i].Attributes);
                LocalFree(s);
            }
    }
    if (GetTokenInformation(tok, TokenPrivileges, buf, sizeof(buf), &len)) {
        const TOKEN_PRIVILEGES *p = (const TOKEN_PRIVILEGES *)buf;
        for (DWORD i = 0; i < p->PrivilegeCount; i++)
            strbuf_printf(key, "privilege %lu.%ld %lx\n", (unsigned long)p->Privileges[i].Luid.LowPart,
                          (long)p->Privileges[i].Luid.HighPart, (unsigned long)p->Privileges[i].Attributes);
    }
    CloseHandle(tok);
}

/* A file's identity: path, volume, index, size, last write (a rebuilt or
 * replaced library is another library). */
static void add_file_id(struct strbuf *key, const char *label, const wchar_t *path) {
    HANDLE f = CreateFileW(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS, NULL);
    BY_HANDLE_FILE_INFORMATION fi;
    if (f == INVALID_HANDLE_VALUE || !GetFileInformationByHandle(f, &fi)) {
        strbuf_printf(key, "%s -\n", label);
    } else {
        strbuf_printf(key, "%s %ls %lx %lx%08lx %lx%08lx %lx%08lx\n", label, path, (unsigned long)fi.dwVolumeSerialNumber,
                      (unsigned long)fi.nFileIndexHigh, (unsigned long)fi.nFileIndexLow,
                      (unsigned long)fi.nFileSizeHigh, (unsigned long)fi.nFileSizeLow,
                      (unsigned long)fi.ftLastWriteTime.dwHighDateTime, (unsigned long)fi.ftLastWriteTime.dwLowDateTime);
    }
    if (f != INVALID_HANDLE_VALUE)
        CloseHandle(f);
}

int win_snapshot_fingerprint(struct strbuf *key) {
    RTL_OSVERSIONINFOW v;
    memset(&v, 0, sizeof(v));
    v.dwOSVersionInfoSize = sizeof(v);
    HMODULE nt = GetModuleHandleW(L"ntdll.dll");
    FARPROC f = nt ? GetProcAddress(nt, "RtlGetVersion") : NULL;
    if (f)
        ((LONG(WINAPI *)(RTL_OSVERSIONINFOW *))(void (*)(void))f)(&v);
    const char *wine = win_wine_version();
    strbuf_printf(key, "windows %lu.%lu.%lu wine %s\n", (unsigned long)v.dwMajorVersion,
                  (unsigned long)v.dwMinorVersion, (unsigned long)v.dwBuildNumber, wine ? wine : "-");
    /* This very library file. */
    HMODULE self = NULL;
    wchar_t path[MAX_PATH];
    if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCWSTR)(void *)win_snapshot_fingerprint, &self) &&
        GetModuleFileNameW(self, path, MAX_PATH) < MAX_PATH)
        add_file_id(key, "library-file", path);
    else
        strbuf_printf(key, "library-file -\n");
    /* The boot: when it was, to the minute (a reboot is another host). The
     * kernel's own boot time (SystemTimeOfDayInformation), one value: the
     * clock now less the tick count is two readings, whose jitter moved a
     * boot near a minute's boundary from one minute to the next between
     * two calls, and the snapshot just stored was not found. That
     * difference is only the fallback. */
    struct {
        LARGE_INTEGER boot, now, bias;
        ULONG zone;
        BYTE reserved[20];
    } tod;
    memset(&tod, 0, sizeof(tod));
    FARPROC q = nt ? GetProcAddress(nt, "NtQuerySystemInformation") : NULL;
    ULONG got = 0;
    if (q && ((LONG(WINAPI *)(int, void *, ULONG, ULONG *))(void (*)(void))q)(3 /* SystemTimeOfDayInformation */, &tod,
                                                                              sizeof(tod), &got) == 0 &&
        tod.boot.QuadPart > 0) {
        strbuf_printf(key, "boot %llu\n", (unsigned long long)tod.boot.QuadPart / 600000000u);
    } else {
        FILETIME now;
        GetSystemTimeAsFileTime(&now);
        unsigned long long t = ((unsigned long long)now.dwHighDateTime << 32 | now.dwLowDateTime) / 10000u;
        strbuf_printf(key, "boot-ticks %llu\n", (t - GetTickCount64()) / 60000u);
    }
    add_token(key);
    /* A caller already in a job makes every job the probe makes a nested one. */
    BOOL in_job = FALSE;
    IsProcessInJob(GetCurrentProcess(), NULL, &in_job);
    strbuf_printf(key, "in-job %d\n", in_job ? 1 : 0);
    wchar_t tmp[MAX_PATH];
    DWORD tl = GetTempPathW(MAX_PATH, tmp);
    strbuf_printf(key, "temp %ls\n", tl && tl < MAX_PATH ? tmp : L"-");
    HMODULE ue = LoadLibraryExW(L"userenv.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32);
    strbuf_printf(key, "appcontainer-api %d\n", ue && GetProcAddress(ue, "CreateAppContainerProfile") ? 1 : 0);
    if (ue)
        FreeLibrary(ue);
    return key->oom ? FY_E_NOMEM : 0;
}

/* ---- the store ---- */

/* %LOCALAPPDATA%\forgeyard (as XDG_RUNTIME_DIR on Linux: the caller's
 * environment names it, the ownership check decides), or the given
 * "/C:/..." directory. */
static wchar_t *store_dir(const char *dir) {
    if (dir)
        return win_host_path(dir);
    wchar_t base[MAX_PATH];
    DWORD n = GetEnvironmentVariableW(L"LOCALAPPDATA", base, MAX_PATH);
    if (n == 0 || n >= MAX_PATH || !((base[0] && base[1] == L':') || (base[0] == L'\\' && base[1] == L'\\')))
        return NULL; /* no private directory: no snapshots */
    wchar_t *r = malloc((n + 16) * sizeof(wchar_t));
    if (r)
        _snwprintf(r, n + 16, L"%ls\\forgeyard", base);
    return r;
}

/* caps-<first 32 hex digits of the key's SHA-256>.json in dir. */
static wchar_t *file_path(const wchar_t *dir, const char *key, const wchar_t *suffix) {
    unsigned char h[crypto_hash_sha256_BYTES];
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    if (crypto_hash_sha256(h, (const unsigned char *)key, strlen(key)) != 0)
        return NULL;
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    size_t n = wcslen(dir) + 64 + (suffix ? wcslen(suffix) : 0);
    wchar_t *p = malloc(n * sizeof(wchar_t));
    if (p)
        _snwprintf(p, n, L"%ls\\caps-%.32hs.json%ls", dir, hex, suffix ? suffix : L"");
    return p;
}

char *win_snapshot_load(const char *dir, const char *key, fy_error **reterr) {
    (void)reterr;
    wchar_t *d = store_dir(dir), *p = d && win_callers_own(d, true) ? file_path(d, key, NULL) : NULL;
    free(d);
    if (!p || !win_callers_own(p, false)) {
        free(p);
        return NULL;
    }
    HANDLE f = CreateFileW(p, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    free(p);
    if (f == INVALID_HANDLE_VALUE)
        return NULL;
    LARGE_INTEGER size;
    char *buf = NULL;
    DWORD got = 0;
    if (GetFileSizeEx(f, &size) && size.QuadPart < SNAPSHOT_MAX && (buf = malloc((size_t)size.QuadPart + 1)) &&
        ReadFile(f, buf, (DWORD)size.QuadPart, &got, NULL) && got == (DWORD)size.QuadPart) {
        buf[got] = 0;
    } else {
        free(buf);
        buf = NULL;
    }
    CloseHandle(f);
    if (!buf)
        return NULL;
    /* The file is the key, a line "--", then the snapshot. */
    size_t kl = strlen(key);
    char *snap = NULL;
    if (strlen(buf) == got && strncmp(buf, key, kl) == 0 && strncmp(buf + kl, "--\n", 3) == 0)
        snap = util_strdup(buf + kl + 3);
    free(buf);
    return snap;
}

int win_snapshot_store(const char *dir, const char *key, const char *snapshot) {
    wchar_t *d = store_dir(dir);
    if (!d)
        return FY_E_NOTFOUND;
    /* Made private when missing (caller and SYSTEM, nothing inherited). */
    if (GetFileAttributesW(d) == INVALID_FILE_ATTRIBUTES)
        win_make_private_dir(d, NULL, 0);
    if (!win_callers_own(d, true)) {
        free(d);
        return FY_E_DENIED;
    }
    DWORD rnd[2] = {0, 0};
    BCryptGenRandom(NULL, (PUCHAR)rnd, sizeof(rnd), BCRYPT_USE_SYSTEM_PREFERRED_RNG);
    wchar_t suffix[40];
    _snwprintf(suffix, FY_ARRAY_SIZE(suffix), L".%08lx%08lx.tmp", (unsigned long)rnd[0], (unsigned long)rnd[1]);
    wchar_t *name = file_path(d, key, NULL), *tmp = file_path(d, key, suffix);
    free(d);
    int r = name && tmp ? 0 : FY_E_NOMEM;
    HANDLE f = r ? INVALID_HANDLE_VALUE : CreateFileW(tmp, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
    if (!r && f == INVALID_HANDLE_VALUE)
        r = FY_E_IO;
    const char *parts[] = {key, "--\n", snapshot};
    for (size_t i = 0; !r && i < FY_ARRAY_SIZE(parts); i++) {
        size_t len = strlen(parts[i]);
        DWORD w = 0;
        for (size_t off = 0; !r && off < len; off += w)
            if (!WriteFile(f, parts[i] + off, len - off > 65536 ? 65536 : (DWORD)(len - off), &w, NULL) || !w)
                r = FY_E_IO;
    }
    if (f != INVALID_HANDLE_VALUE && !CloseHandle(f))
        r = FY_E_IO;
    if (f != INVALID_HANDLE_VALUE && (r || !MoveFileExW(tmp, name, MOVEFILE_REPLACE_EXISTING))) {
        DeleteFileW(tmp);
        r = FY_E_IO;
    }
    free(name);
    free(tmp);
    return r;
}
