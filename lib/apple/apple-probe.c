/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The apple folder's probe (Darwin only): whether Seatbelt enforces a
 * deny-default profile here (functionally, in a child), whether a
 * dedicated uid is possible (root), and which VM tool is installed. The
 * Linux capabilities are all missing on macOS, and said so. */
#include <errno.h>
#include <fcntl.h>
#include <sandbox.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apple-darwin.h"

/* Any read must be denied under it; the child only exits. */
static const char probe_profile[] = "(version 1)\n(deny default)\n";
#define PROBE_FILE "/private/etc/hosts"
#define PROBE_WAIT_USEC (2 * 1000 * 1000)

/* 0: a read was denied with EPERM under the profile; 1: the read
 * succeeded (not enforced); 2: sandbox_init failed; 3: another error. */
static int probe_seatbelt(char *why, size_t whylen) {
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        char *err = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        if (sandbox_init(probe_profile, 0, &err) != 0)
            _exit(2);
#pragma GCC diagnostic pop
        int fd = open(PROBE_FILE, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            _exit(1);
        _exit(errno == EPERM ? 0 : 3);
    }
    int st = 0;
    uint64_t until = util_now_usec() + PROBE_WAIT_USEC;
    pid_t r;
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && util_now_usec() < until)
        usleep(2000);
    if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        snprintf(why, whylen, "the probe child did not finish within %d ms", PROBE_WAIT_USEC / 1000);
        return -1;
    }
    if (r < 0 || !WIFEXITED(st)) {
        snprintf(why, whylen, "the probe child ended abnormally");
        return -1;
    }
    static const char *const what[] = {
        "a deny-default profile applied with sandbox_init denied a read (EPERM)",
        "sandbox_init succeeded but a read of " PROBE_FILE " was not denied: not enforced",
        "sandbox_init refused a deny-default profile",
        "a read under the profile failed with an error other than EPERM",
    };
    int code = WEXITSTATUS(st);
    snprintf(why, whylen, "%s", code <= 3 ? what[code] : "the probe child failed");
    return code;
}

/* The first executable of name on PATH (malloc'd), or NULL. */
static char *find_tool(const char *name) {
    const char *path = getenv("PATH");
    char *copy = util_strdup(path && *path ? path : "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin");
    char *found = NULL;
    for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *p = util_asprintf("%s/%s", dir, name);
        struct stat st;
        if (p && dir[0] == '/' && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

int apple_probe(fy_caps *c, uint64_t flags, fy_error **reterr) {
    for (uint32_t cap = 1; cap <= FY_CAP_MAX_; cap++)
        caps_set(c, cap, false, 0, "macOS has no %s (a Linux mechanism)", fy_cap_name(cap));
    char why[256];
    int r = probe_seatbelt(why, sizeof(why));
    if (r == 0 && caps_set_fact(c, APPLE_FACT_SEATBELT, why) < 0)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
    if (geteuid() == 0 && caps_set_fact(c, APPLE_FACT_ROOT, "the host process is root") < 0)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
    if (flags & FY_PROBE_NO_VM)
        return 0;
    static const char *const tools[] = {"tart", "lume"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(tools); i++) {
        char *p = find_tool(tools[i]);
        if (!p)
            continue;
        char *fact = util_asprintf("%s %s", tools[i], p);
        free(p);
        int sr = fact ? caps_set_fact(c, APPLE_FACT_VM_TOOL, fact) : FY_E_NOMEM;
        free(fact);
        if (sr < 0)
            return err_set(reterr, FY_E_NOMEM, FY_STEP_PROBE, 0, NULL, "out of memory");
        break;
    }
    return 0;
}

/* What the probe depends on: the kernel's build, the effective uid, and
 * which VM tools are installed. */
int apple_fingerprint(struct strbuf *key) {
    struct utsname u;
    if (uname(&u) == 0)
        strbuf_printf(key, "darwin %s %s\n", u.release, u.version);
    strbuf_printf(key, "euid %u\n", (unsigned)geteuid());
    static const char *const tools[] = {"tart", "lume"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(tools); i++) {
        char *p = find_tool(tools[i]);
        struct stat st;
        if (p && stat(p, &st) == 0)
            strbuf_printf(key, "vm-tool %s %s %llu %lld\n", tools[i], p, (unsigned long long)st.st_ino,
                          (long long)st.st_mtime);
        else
            strbuf_printf(key, "vm-tool %s -\n", tools[i]);
        free(p);
    }
    return key->oom ? FY_E_NOMEM : 0;
}
