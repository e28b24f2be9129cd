/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* AppContainer launch (windows-appcontainer.c). Self-contained (Win32
 * only), so that test/windows/test-windows-unit.c can compile it as is. */
#ifndef FY_WINDOWS_APPCONTAINER_H
#define FY_WINDOWS_APPCONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <windows.h>

#define WIN_AC_PREFIX L"forgeyard."
#define WIN_AC_NAME_MAX 64 /* CreateAppContainerProfile's limit */

typedef HRESULT(WINAPI *win_ac_create_fn)(PCWSTR, PCWSTR, PCWSTR, PSID_AND_ATTRIBUTES, DWORD, PSID *);
typedef HRESULT(WINAPI *win_ac_delete_fn)(PCWSTR);
typedef HRESULT(WINAPI *win_ac_derive_fn)(PCWSTR, PSID *);

struct win_ac_api {
    HMODULE userenv;
    win_ac_create_fn create;
    win_ac_delete_fn remove;
    win_ac_derive_fn derive;
};

/* userenv's profile functions, loaded from System32; false where any is
 * missing (Wine, Windows before 8). */
bool win_ac_load(struct win_ac_api *api);
void win_ac_unload(struct win_ac_api *api);
/* The attempt's profile name into out; its length, or -1 when it would
 * not fit (size, or the 64 characters of a profile name). */
int win_ac_name(wchar_t *out, size_t size, unsigned long pid, unsigned long n, unsigned long long t);
/* PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES in attr_list: the container
 * sid, no capability; sc must live until the process is created. 0 or a
 * Win32 error. */
unsigned long win_ac_attribute(void *attr_list, SECURITY_CAPABILITIES *sc, void *container_sid);
/* A new profile (never an existing one: ERROR_ALREADY_EXISTS); its SID
 * (FreeSid). Its removal. 0 or a Win32 error. */
unsigned long win_ac_create(const struct win_ac_api *api, const wchar_t *name, void **ret_sid);
unsigned long win_ac_delete(const struct win_ac_api *api, const wchar_t *name);
/* Whether process runs with an AppContainer token of sid and no capability. */
bool win_ac_token_is(void *process, void *sid);

#endif
