/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The neutral plan (plan.h) compiled for Windows: the command line quoted
 * by the MSVCRT rules, a UTF-16 environment, the working directory, the
 * job's limits. What the process level cannot give on Windows is refused
 * here, by name (FY_E_UNSUPPORTED), never dropped silently. */
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include <jansson.h>

#include "windows-backend.h"

wchar_t *win_wide(const char *s) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0)
        return NULL;
    wchar_t *w = malloc((size_t)n * sizeof(wchar_t));
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        free(w);
        return NULL;
    }
    return w;
}

char *win_host_path_utf8(const char *p) {
    bool drive = p[0] == '/' && ((p[1] >= 'A' && p[1] <= 'Z') || (p[1] >= 'a' && p[1] <= 'z')) && p[2] == ':' &&
                 (p[3] == '/' || p[3] == 0);
    char *r = util_strdup(drive ? p + 1 : p);
    for (char *c = r; c && *c; c++)
        if (*c == '/')
            *c = '\\';
    if (r && drive && !r[2]) {
        char *d = util_asprintf("%s\\", r); /* "C:" alone is the drive's current directory */
        free(r);
        r = d;
    }
    return r;
}

wchar_t *win_host_path(const char *p) {
    char *u = win_host_path_utf8(p);
    wchar_t *w = u ? win_wide(u) : NULL;
    free(u);
    return w;
}

/* CommandLineToArgvW / the MSVCRT parse it back to arg: quotes when
 * needed, backslashes doubled only before a quote (Bazel's
 * WindowsEscapeArg, the "Everyone quotes command line arguments the wrong
 * way" rules). */
void win_quote_arg(struct strbuf *sb, const char *arg) {
    if (*arg && !strpbrk(arg, " \t\n\v\"")) {
        strbuf_append(sb, arg);
        return;
    }
    strbuf_append(sb, "\"");
    for (const char *p = arg;; p++) {
        size_t bs = 0;
        while (*p == '\\') {
            p++;
            bs++;
        }
        if (!*p) {
            for (size_t i = 0; i < bs * 2; i++)
                strbuf_append(sb, "\\");
            break;
        }
        if (*p == '"') {
            for (size_t i = 0; i < bs * 2 + 1; i++)
                strbuf_append(sb, "\\");
        } else {
            for (size_t i = 0; i < bs; i++)
                strbuf_append(sb, "\\");
        }
        strbuf_appendn(sb, p, 1);
    }
    strbuf_append(sb, "\"");
}

void win_plan_free(void *plan) {
    struct win_plan *wp = plan;
    if (!wp)
        return;
    free(wp->app);
    free(wp->cmdline);
    for (size_t i = 0; i < wp->nvars; i++) {
        if (wp->vars[i]) /* secrets are among them: wiped, as sodium memory is */
            util_bzero(wp->vars[i], wcslen(wp->vars[i]) * sizeof(wchar_t));
        free(wp->vars[i]);
    }
    free(wp->vars);
    free(wp->cwd);
    free(wp->describe_json);
    free(wp);
}

const char *win_describe(const void *plan) {
    const struct win_plan *wp = plan;
    return wp->describe_json ? wp->describe_json : "{}";
}

/* A file name Windows takes for a device or changes (CON, NUL, COM1.txt,
 * a trailing dot): a secret written there would go to the console, be
 * lost, or land under another name. */
bool win_name_is_reserved(const char *name) {
    size_t n = strlen(name), base = strcspn(name, ".");
    if (n == 0 || name[n - 1] == '.' || name[n - 1] == ' ' || !strcmp(name, ".") || !strcmp(name, ".."))
        return true;
    static const char *const dev[] = {"CON", "PRN", "AUX", "NUL"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(dev); i++)
        if (base == 3 && !_strnicmp(name, dev[i], 3))
            return true;
    return base == 4 && (!_strnicmp(name, "COM", 3) || !_strnicmp(name, "LPT", 3)) && name[3] >= '0' &&
           name[3] <= '9';
}

static int unsupported(fy_error **reterr, uint32_t step, const char *loc, const char *what) {
    return err_set(reterr, FY_E_UNSUPPORTED, step, 0, loc, "%s", what);
}

/* The program: a path as given, or found by the Windows search order
 * (the application directory, system directories, PATH). */
static wchar_t *resolve_program(const char *argv0) {
    wchar_t *w = win_wide(argv0);
    if (!w)
        return NULL;
    wchar_t buf[MAX_PATH * 4];
    DWORD n = SearchPathW(NULL, w, L".exe", (DWORD)FY_ARRAY_SIZE(buf), buf, NULL);
    free(w);
    if (n == 0 || n >= FY_ARRAY_SIZE(buf))
        return NULL;
    wchar_t *r = malloc((n + 1) * sizeof(wchar_t));
    if (r)
        memcpy(r, buf, (n + 1) * sizeof(wchar_t));
    return r;
}

/* The host directory the sandbox path workdir is in, when a PE_HOST entry
 * covers it (the process level cannot remap paths). */
static char *host_workdir(const struct fy_plan *np) {
    if (!np->workdir)
        return NULL;
    for (size_t i = np->nentries; i-- > 0;) {
        const struct plan_entry *e = &np->entries[i];
        size_t n = e->target ? strlen(e->target) : 0;
        if (e->kind != PE_HOST || (e->flags & PLAN_FILE) || !n || strncmp(np->workdir, e->target, n) != 0 ||
            (np->workdir[n] != 0 && np->workdir[n] != '/'))
            continue;
        char *host = win_host_path_utf8(e->host);
        char *r = host ? util_asprintf("%s%s", host, np->workdir + n) : NULL;
        free(host);
        return r;
    }
    return NULL;
}

static json_t *limit_json(bool want, uint64_t value, uint8_t state, const char *mechanism) {
    if (!want)
        return json_null();
    return json_pack("{sIssss}", "value", (json_int_t)value, "mechanism", mechanism, "state",
                     state == FY_CONTROL_STATE_ENFORCED ? WIN_ENFORCED : WIN_UNVERIFIED);
}

bool win_granted_role(uint32_t role) {
    return role == PR_SOURCE || role == PR_BUILD || role == PR_OUTPUT || role == PR_TOOLCHAIN || role == PR_BIND;
}

/* The limits the policy sets that Windows has no mechanism for, into lim
 * (the plan's and the result's "limits"), each saying so. */
void win_unenforced_limits(const struct fy_plan *np, json_t *lim) {
    static const struct {
        int limit;
        const char *key, *why;
    } none[] = {
        {FY_LIMIT_NOFILE, "nofile", "unenforced (Windows has no per-process handle limit)"},
        {FY_LIMIT_STACK, "stack", "unenforced (each program's PE header sets its stack)"},
        {FY_LIMIT_CORE, "core", "unenforced (Windows Error Reporting's settings are the host's)"},
        {FY_LIMIT_MEMORY_SWAP, "memory_swap", "unenforced (the job memory limit counts committed memory)"},
        {FY_LIMIT_TMP_SIZE, "tmp_size", "unenforced (a plain directory in the workspace)"},
        {FY_LIMIT_WORK_TMP_SIZE, "work_tmp_size", "unenforced (a plain directory in the workspace)"},
        {FY_LIMIT_HOME_SIZE, "home_size", "unenforced (a plain directory in the workspace)"},
        {FY_LIMIT_SHM_SIZE, "shm_size", "unenforced (Windows has no /dev/shm)"},
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(none); i++)
        if (np->limit[none[i].limit] != FY_UNLIMITED)
            json_object_set_new(lim, none[i].key, json_string(none[i].why));
}

int win_compile(const struct fy_plan *np, const fy_caps *caps, void **ret, fy_error **reterr) {
    /* Network deny is an AppContainer without capabilities, where the
     * probe proved both the container and its missing network; restricted
     * and fetch-only would need firewall rules: refused. */
    bool appcontainer = false;
    if (np->net_mode == FY_NET_DENY) {
        const char *why = caps_fact(caps, WIN_R_NETWORK);
        if (!win_verdict_enforced(caps, WIN_R_NETWORK) || !win_verdict_enforced(caps, WIN_R_APPCONTAINER))
            return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NETNS, 0, "$.network.mode",
                           "network deny on Windows needs an AppContainer whose missing network the probe proved; "
                           "network: %s", why ? why : "not probed");
        appcontainer = true;
    } else if (np->net_mode != FY_NET_ALLOW) {
        return unsupported(reterr, FY_STEP_NETNS, "$.network.mode",
                           "the windows-job backend cannot restrict the network to destinations (that needs firewall "
                           "rules, which it does not set up): only network modes allow and deny (an AppContainer) "
                           "run on Windows");
    }
    if (np->fake_root)
        return unsupported(reterr, FY_STEP_USERNS, "$.process.user", "fake-root has no meaning on Windows");
    if (np->pty == FY_DEVICES_PRIVATE)
        return unsupported(reterr, FY_STEP_DEV, "$.devices.pty", "private pseudo-terminals are not given on Windows");
    if ((np->gpu && np->gpu != FY_DEVICES_DENY) || (np->usb && np->usb != FY_DEVICES_DENY))
        return unsupported(reterr, FY_STEP_DEV, "$.devices", "device leases are not given on Windows");
    if (np->limit[FY_LIMIT_DISK] != FY_UNLIMITED || np->limit[FY_LIMIT_FILES] != FY_UNLIMITED)
        return unsupported(reterr, FY_STEP_PREPARE, "$.resources.disk", "disk and file quotas are not enforced on Windows");
    if (np->limit[FY_LIMIT_IO_BPS] != FY_UNLIMITED)
        return unsupported(reterr, FY_STEP_PREPARE, "$.resources.io", "I/O limits are not enforced on Windows");
    if (np->limit[FY_LIMIT_FSIZE] != FY_UNLIMITED)
        return unsupported(reterr, FY_STEP_PREPARE, "$.resources.fsize",
                           "a file size limit is not enforced on Windows (it has no RLIMIT_FSIZE)");
    /* A host path is a directory or file on a drive: never a drive's root
     * (as "/" is refused: every file of it would get the attempt's ACE,
     * inherited), a share (\\server\share) or a device (\\.\, \\?\). */
    for (size_t i = 0; i < np->nentries; i++) {
        const struct plan_entry *e = &np->entries[i];
        /* (the roles the attempt is granted; a Linux plan's runtime paths
         * name nothing on Windows and are left alone) */
        if (e->kind != PE_HOST || !e->host || !win_granted_role(e->role))
            continue;
        char *h = win_host_path_utf8(e->host);
        if (!h)
            return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
        bool drive = ((h[0] >= 'A' && h[0] <= 'Z') || (h[0] >= 'a' && h[0] <= 'z')) && h[1] == ':' && h[2] == '\\';
        bool root = drive && (!h[3] || strspn(h + 3, "\\") == strlen(h + 3));
        free(h);
        if (!drive || root)
            return err_set(reterr, FY_E_POLICY, FY_STEP_PREPARE, 0, "$.filesystem",
                           "host path %s: %s", e->host,
                           root ? "a whole drive is never exposed (as \"/\" is not): name a directory on it"
                                : "a Windows host path names a drive and a directory on it (/C:/dir); shares, "
                                  "devices and paths without a drive are refused");
    }
    if (!np->argc)
        return err_set(reterr, FY_E_INVAL, FY_STEP_PREPARE, 0, NULL, "empty command");

    struct win_plan *wp = calloc(1, sizeof(*wp));
    if (!wp)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
    int r = 0;
    wp->appcontainer = appcontainer;
    /* Not found: the attempt ends as a setup failure (FY_STEP_EXEC), as
     * on Linux, where exec fails inside the sandbox. */
    wp->app = resolve_program(np->argv[0]);
    /* A batch file runs under cmd.exe, which parses the command line again
     * by rules of its own (&, |, ^, %): its arguments cannot be passed
     * faithfully; cmd.exe /c, asked for explicitly, is the caller's. */
    size_t applen = wp->app ? wcslen(wp->app) : 0;
    if (applen > 4 && (!_wcsicmp(wp->app + applen - 4, L".bat") || !_wcsicmp(wp->app + applen - 4, L".cmd"))) {
        free(wp);
        return unsupported(reterr, FY_STEP_PREPARE, "$.process.argv",
                           "a batch file (.bat, .cmd) runs under cmd.exe, which parses its arguments again by its own "
                           "rules (&, |, ^, %): they cannot be passed faithfully; run cmd.exe /c explicitly");
    }
    struct strbuf cl;
    strbuf_init(&cl);
    for (size_t i = 0; i < np->argc; i++) {
        if (i)
            strbuf_append(&cl, " ");
        win_quote_arg(&cl, np->argv[i]);
    }
    char *cls = strbuf_steal(&cl);
    wp->cmdline = cls ? win_wide(cls) : NULL;
    size_t cllen = wp->cmdline ? wcslen(wp->cmdline) : 0;
    free(cls);
    if (!wp->cmdline || cllen >= 32767) {
        r = err_set(reterr, wp->cmdline ? FY_E_INVAL : FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL,
                    wp->cmdline ? "the command line is longer than Windows' 32767 characters" : "out of memory");
        goto fail;
    }

    /* The environment: the plan's, where Windows reads it; HOME, TMPDIR,
     * TEMP, TMP and USERPROFILE point into the workspace (added at start),
     * PATH is the system's (the plan's PATH names sandbox paths), and the
     * loader's SystemRoot and windir come from the host. */
    wp->vars = calloc(np->nenv + np->nsecrets + 4, sizeof(*wp->vars));
    if (!wp->vars)
        goto oom;
    static const char *const replaced[] = {"PATH=", "HOME=", "TMPDIR=", "TEMP=", "TMP=", "USERPROFILE=",
                                           "SYSTEMROOT=", "WINDIR="};
    for (size_t i = 0; i < np->nenv; i++) {
        bool skip = false;
        for (size_t k = 0; k < FY_ARRAY_SIZE(replaced); k++)
            skip |= _strnicmp(np->envp[i], replaced[k], strlen(replaced[k])) == 0;
        if (skip)
            continue;
        if (!(wp->vars[wp->nvars] = win_wide(np->envp[i])))
            goto oom;
        wp->nvars++;
    }
    for (size_t i = 0; i < np->nsecrets; i++) {
        const struct plan_secret *s = &np->secrets[i];
        if (s->delivery == FY_SECRET_FILE && win_name_is_reserved(s->target)) {
            r = err_set(reterr, FY_E_POLICY, FY_STEP_SECRET, 0, "$.secrets",
                        "secret %s: %s is a device or altered name on Windows, not a file name", s->name, s->target);
            goto fail;
        }
        if (s->delivery == FY_SECRET_FILE)
            wp->file_secrets++;
        if (s->delivery != FY_SECRET_ENV)
            continue; /* files and stdin: written at start (windows-spawn.c) */
        if (memchr(s->value, 0, s->len)) {
            r = err_set(reterr, FY_E_INVAL, FY_STEP_SECRET, 0, NULL,
                        "secret %s contains a NUL byte and cannot be an environment variable", s->name);
            goto fail;
        }
        char *kv = malloc(strlen(s->target) + s->len + 2);
        if (!kv)
            goto oom;
        sprintf(kv, "%s=", s->target);
        memcpy(kv + strlen(kv), s->value, s->len);
        kv[strlen(s->target) + 1 + s->len] = 0;
        wp->vars[wp->nvars] = win_wide(kv);
        util_bzero(kv, strlen(s->target) + 1 + s->len);
        free(kv);
        if (!wp->vars[wp->nvars])
            goto oom;
        wp->nvars++;
    }
    wchar_t sysroot[MAX_PATH];
    UINT n = GetSystemWindowsDirectoryW(sysroot, MAX_PATH);
    if (n == 0 || n >= MAX_PATH) {
        r = err_set(reterr, FY_E_INTERNAL, FY_STEP_PREPARE, (int64_t)GetLastError(), NULL, "GetSystemWindowsDirectory");
        goto fail;
    }
    static const wchar_t *const sysfmt[] = {L"SystemRoot=%ls", L"windir=%ls", L"PATH=%ls\\system32;%ls"};
    for (size_t k = 0; k < 3; k++) {
        wchar_t buf[3 * MAX_PATH];
        _snwprintf(buf, FY_ARRAY_SIZE(buf), sysfmt[k], sysroot, sysroot);
        buf[FY_ARRAY_SIZE(buf) - 1] = 0;
        if (!(wp->vars[wp->nvars] = _wcsdup(buf)))
            goto oom;
        wp->nvars++;
    }

    char *wd = host_workdir(np);
    if (wd) {
        for (char *p = wd; *p; p++)
            if (*p == '/')
                *p = '\\';
        wp->cwd = win_wide(wd);
        free(wd);
        if (!wp->cwd)
            goto oom;
    }

    /* Limits: requested whenever the policy sets them; the selection says
     * whether this host enforces them (the probe's functional verdict). */
    wp->memory = np->limit[FY_LIMIT_MEMORY];
    wp->pids = np->limit[FY_LIMIT_PIDS];
    wp->cpu_millis = np->limit[FY_LIMIT_CPU_MILLIS];
    wp->output = np->limit[FY_LIMIT_OUTPUT];
    wp->want_memory = wp->memory != FY_UNLIMITED && np->control_mode[FY_CONTROL_MEMORY_LIMIT] != FY_MODE_OFF;
    wp->want_pids = wp->pids != FY_UNLIMITED && np->control_mode[FY_CONTROL_PIDS_LIMIT] != FY_MODE_OFF;
    wp->want_cpu = wp->cpu_millis != FY_UNLIMITED && np->control_mode[FY_CONTROL_CPU_LIMIT] != FY_MODE_OFF;
    /* Low integrity: applied whenever asked; enforced where the probe
     * proved it (np->control), else labelled requested-unverified. */
    wp->want_low = np->control_mode[FY_CONTROL_LOW_INTEGRITY] != FY_MODE_OFF;

    const char *tok = caps_fact(caps, WIN_R_TOKEN), *acl = caps_fact(caps, WIN_R_ACL);
    const char *il = caps_fact(caps, WIN_R_INTEGRITY);
    json_t *iso = json_pack("{ss ss ss ss ss ss ss ss sb ss}",
        "tree", "job object: kill on close, no breakaway, created suspended and assigned before it runs",
        "handles", "only the standard streams are inherited (PROC_THREAD_ATTRIBUTE_HANDLE_LIST)",
        "identity", tok ? tok : "not probed",
        "workspace", acl ? acl : "not probed",
        "network", appcontainer ? "none: an AppContainer without capabilities" : "host network (no firewall rule)",
        "filesystem", "host view with the restricted token's access (paths are not remapped)",
        "namespaces", "unavailable: Windows has none",
        "appcontainer", appcontainer ? "a profile per attempt" : "not used",
        "impure", np->impure,
        "integrity", !wp->want_low ? "unchanged (the caller's)"
                     : np->control[FY_CONTROL_LOW_INTEGRITY] == FY_CONTROL_STATE_ENFORCED ? "low (enforced)"
                     : il ? il : "low (not probed)");
    json_t *lim = json_pack("{so so so ss}",
        "memory", limit_json(wp->want_memory, wp->memory, np->control[FY_CONTROL_MEMORY_LIMIT], "job memory limit"),
        "processes", limit_json(wp->want_pids, wp->pids, np->control[FY_CONTROL_PIDS_LIMIT], "job active-process limit"),
        "cpu_millis", limit_json(wp->want_cpu, wp->cpu_millis, np->control[FY_CONTROL_CPU_LIMIT], "job CPU rate hard cap"),
        "wall_time", "library timer, TerminateJobObject");
    if (lim)
        win_unenforced_limits(np, lim);
    char *si = iso ? json_dumps(iso, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *sl = lim ? json_dumps(lim, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(iso);
    json_decref(lim);
    wp->describe_json = si && sl ? util_asprintf("{\"isolation\":%s,\"limits\":%s}", si, sl) : NULL;
    free(si);
    free(sl);
    if (!wp->describe_json)
        goto oom;
    *ret = wp;
    return 0;
oom:
    r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
fail:
    win_plan_free(wp);
    return r;
}
