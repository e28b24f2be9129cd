/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure parts of the AppContainer launch (lib/windows/
 * windows-appcontainer.c, compiled in as is): the profile's name and the
 * SECURITY_CAPABILITIES attribute; and what the host says about the
 * profile API (Wine: absent). TAP, under wine64. */
#include <stdio.h>
#include <wchar.h>

#include "../../lib/windows/windows-appcontainer.c"

static int n, failed;
static void ok(int cond, const char *what) {
    n++;
    failed += !cond;
    printf("%s %d - %s\n", cond ? "ok" : "not ok", n, what);
}

int main(void) {
    wchar_t name[WIN_AC_NAME_MAX + 1];
    int len = win_ac_name(name, WIN_AC_NAME_MAX + 1, 4294967295ul, 4294967295ul, 0xffffffffffffffffull);
    ok(len > 0 && len <= WIN_AC_NAME_MAX && (size_t)len == wcslen(name), "the longest name fits in 64 characters");
    ok(!wcsncmp(name, WIN_AC_PREFIX, wcslen(WIN_AC_PREFIX)), "it starts with forgeyard.");
    int clean = 1;
    for (const wchar_t *c = name; *c; c++)
        clean &= (*c >= L'a' && *c <= L'z') || (*c >= L'0' && *c <= L'9') || *c == L'.';
    ok(clean, "only letters, digits and dots");
    wchar_t a[WIN_AC_NAME_MAX + 1], b[WIN_AC_NAME_MAX + 1];
    win_ac_name(a, WIN_AC_NAME_MAX + 1, 100, 1, 5);
    win_ac_name(b, WIN_AC_NAME_MAX + 1, 100, 2, 5);
    ok(wcscmp(a, b) != 0, "two attempts of one host get two names");
    ok(!wcscmp(a, L"forgeyard.100.1.5"), "the name's form");
    wchar_t small[8];
    ok(win_ac_name(small, 8, 1, 1, 1) == -1 && small[0] == 0, "a name that does not fit is refused, not cut");

    /* The attribute: the container's SID, no capability. */
    SIZE_T asz = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &asz);
    LPPROC_THREAD_ATTRIBUTE_LIST al = malloc(asz);
    SID_IDENTIFIER_AUTHORITY pkg = SECURITY_APP_PACKAGE_AUTHORITY;
    PSID sid = NULL;
    AllocateAndInitializeSid(&pkg, SECURITY_APP_PACKAGE_RID_COUNT, SECURITY_APP_PACKAGE_BASE_RID, 1, 2, 3, 4, 5, 6, 7,
                             &sid);
    SECURITY_CAPABILITIES sc;
    memset(&sc, 0xa5, sizeof(sc));
    DWORD e = al && InitializeProcThreadAttributeList(al, 1, 0, &asz) ? win_ac_attribute(al, &sc, sid) : 1;
    printf("# UpdateProcThreadAttribute(SECURITY_CAPABILITIES): %lu\n", (unsigned long)e);
    ok(sc.AppContainerSid == sid && sc.CapabilityCount == 0 && sc.Capabilities == NULL && sc.Reserved == 0,
       "SECURITY_CAPABILITIES: the container's SID, no capability");
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    if (ntdll && GetProcAddress(ntdll, "wine_get_version"))
        ok(e == ERROR_NOT_SUPPORTED, "Wine refuses the attribute (ERROR_NOT_SUPPORTED): no AppContainer there");
    else
        ok(e == 0, "the attribute list takes SECURITY_CAPABILITIES");
    if (al)
        DeleteProcThreadAttributeList(al);
    free(al);
    FreeSid(sid);

    struct win_ac_api api;
    bool have = win_ac_load(&api);
    HMODULE nt = GetModuleHandleW(L"ntdll.dll");
    bool wine = nt && GetProcAddress(nt, "wine_get_version");
    printf("# userenv's profile API: %s\n", have ? "present" : "absent");
    ok(wine ? !have : 1, "under Wine the profile API is absent (so the probe says unavailable)");
    if (have)
        win_ac_unload(&api);
    ok(api.userenv == NULL && api.create == NULL, "unloading forgets the functions");
    printf("1..%d\n", n);
    return failed ? 1 : 0;
}
