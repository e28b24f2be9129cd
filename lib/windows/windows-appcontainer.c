/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* AppContainer: a profile per attempt (userenv!CreateAppContainerProfile,
 * loaded at run time: older Windows and Wine lack it), the workload created
 * with SECURITY_CAPABILITIES naming the container's SID and no capability,
 * so that Windows gives it no network (no internetClient, no
 * privateNetworkClientServer, no loopback exemption) and only the objects
 * granted to that SID or to ALL APPLICATION PACKAGES. The pure parts (the
 * profile's name, the attribute) are unit-tested under Wine
 * (test/windows/test-windows-unit.c); the launch is not, Wine has no
 * AppContainer: the probe says unavailable there and network deny is
 * refused. */
#include <stdio.h>
#include <windows.h>

#include "windows-appcontainer.h"

bool win_ac_load(struct win_ac_api *api) {
    memset(api, 0, sizeof(*api));
    api->userenv = LoadLibraryExW(L"userenv.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32);
    if (!api->userenv)
        return false;
    api->create = (win_ac_create_fn)(void (*)(void))GetProcAddress(api->userenv, "CreateAppContainerProfile");
    api->remove = (win_ac_delete_fn)(void (*)(void))GetProcAddress(api->userenv, "DeleteAppContainerProfile");
    api->derive = (win_ac_derive_fn)(void (*)(void))GetProcAddress(api->userenv,
                                                                   "DeriveAppContainerSidFromAppContainerName");
    if (api->create && api->remove && api->derive)
        return true;
    win_ac_unload(api);
    return false;
}

void win_ac_unload(struct win_ac_api *api) {
    if (api->userenv)
        FreeLibrary(api->userenv);
    memset(api, 0, sizeof(*api));
}

/* "forgeyard.<pid>.<n>.<usec, hex>": unique per attempt on a host, at most
 * 64 characters, of the characters a profile name may have (letters,
 * digits, '.'), so that a dead host's profiles can be found by prefix. */
int win_ac_name(wchar_t *out, size_t size, unsigned long pid, unsigned long n, unsigned long long t) {
    int r = _snwprintf(out, size, WIN_AC_PREFIX L"%lu.%lu.%llx", pid, n, t);
    if (r < 0 || (size_t)r >= size || r > WIN_AC_NAME_MAX) {
        if (size)
            out[0] = 0;
        return -1;
    }
    return r;
}

unsigned long win_ac_attribute(void *attr_list, SECURITY_CAPABILITIES *sc, void *container_sid) {
    memset(sc, 0, sizeof(*sc));
    sc->AppContainerSid = container_sid;
    sc->Capabilities = NULL; /* none: no network, no library, no device */
    sc->CapabilityCount = 0;
    if (!UpdateProcThreadAttribute(attr_list, 0, PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES, sc, sizeof(*sc), NULL,
                                   NULL))
        return GetLastError();
    return 0;
}

unsigned long win_ac_create(const struct win_ac_api *api, const wchar_t *name, void **ret_sid) {
    PSID sid = NULL;
    HRESULT hr = api->create(name, name, L"forgeyard-sandbox attempt", NULL, 0, &sid);
    if (hr == HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS))
        return ERROR_ALREADY_EXISTS; /* never reuse one: the name is the attempt's */
    if (FAILED(hr))
        return HRESULT_CODE(hr) ? (unsigned long)HRESULT_CODE(hr) : ERROR_GEN_FAILURE;
    *ret_sid = sid;
    return 0;
}

unsigned long win_ac_delete(const struct win_ac_api *api, const wchar_t *name) {
    HRESULT hr = api->remove(name);
    return FAILED(hr) ? (HRESULT_CODE(hr) ? (unsigned long)HRESULT_CODE(hr) : ERROR_GEN_FAILURE) : 0;
}

/* Whether a process's token is an AppContainer token of sid, with no
 * capability. */
bool win_ac_token_is(void *process, void *sid) {
    HANDLE tok = NULL;
    if (!OpenProcessToken(process, TOKEN_QUERY, &tok))
        return false;
    DWORD is = 0, len = 0;
    BYTE buf[512];
    bool ok = GetTokenInformation(tok, TokenIsAppContainer, &is, sizeof(is), &len) && is &&
              GetTokenInformation(tok, TokenAppContainerSid, buf, sizeof(buf), &len) &&
              ((TOKEN_APPCONTAINER_INFORMATION *)buf)->TokenAppContainer &&
              EqualSid(((TOKEN_APPCONTAINER_INFORMATION *)buf)->TokenAppContainer, sid);
    if (ok && GetTokenInformation(tok, TokenCapabilities, buf, sizeof(buf), &len))
        ok = ((TOKEN_GROUPS *)buf)->GroupCount == 0;
    CloseHandle(tok);
    return ok;
}
