/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fetch-only proxy holds nothing of the host process (run as root by
 * test-fetch.sh, against its HTTP servers on 127.0.0.1): with canaries in
 * this host's memory (an environment variable of the host program, a
 * secret of the attempt's own policy, and a second prepared attempt's
 * credential for another destination), a fetch-only attempt runs and its
 * proxy's whole readable memory (/proc/PID/maps and /proc/PID/mem) is
 * searched for them: none may be there. The attempt's own credential must
 * be there (the proxy injects it): the search itself is witnessed. The
 * proxy's executable is the sealed memfd, not this program, and its
 * environment is empty. A quiet fork of the host, as the proxy was,
 * fails every one of these.
 *
 *   test-proxy-memory HOSTS_FILE PORT_MIRROR PORT_OTHER DIR
 * (FY_TEST_RUNNER_TOKEN in the environment: the host's canary) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#include "linux/linux-proxy-parse.h"
#include "net-check.h"

static fy_caps *caps;

static int write_creds(const char *path, const char *line) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, line, strlen(line));
    close(fd);
    return n == (ssize_t)strlen(line) ? 0 : -1;
}

static fy_prepared *prepare(const char *hosts, const char *dest, unsigned port, const char *creds,
                            const char *secret, const char *const *argv) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    fy_prepared *pr = NULL;
    int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
    if (r >= 0)
        r = fy_policy_add_destination(p, dest, FY_PROTO_TCP, port, port, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_FETCH_ONLY, &e);
    if (r >= 0)
        r = fy_policy_set_network_host(p, FY_NETHOST_HOSTS_FILE, hosts, &e);
    if (r >= 0 && creds)
        r = fy_policy_set_network_host(p, FY_NETHOST_CREDENTIALS, creds, &e);
    if (r >= 0)
        r = fy_policy_set_env(p, "FY_POLICY_SECRET", secret, &e);
    if (r >= 0)
        r = fy_prepare(p, caps, argv, &pr, &e);
    CHECK(r >= 0, "prepare %s: %s", dest, fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
    return pr;
}

/* This process's child named fy-proxy, or -1. */
static pid_t find_proxy(void) {
    DIR *d = opendir("/proc");
    pid_t found = -1;
    struct dirent *de;
    while (d && found < 0 && (de = readdir(d))) {
        char path[64], buf[512];
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        char *close_paren = strrchr(buf, ')');
        int ppid = 0;
        if (strstr(buf, "(fy-proxy)") && close_paren && sscanf(close_paren + 2, "%*c %d", &ppid) == 1 &&
            ppid == getpid())
            found = atoi(de->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

#define NCANARY 4
struct scan {
    const char *needle[NCANARY];
    bool found[NCANARY];
    size_t regions, bytes;
};

/* Searches every readable mapping of pid for the needles. */
static int scan_memory(pid_t pid, struct scan *s) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(path, "re");
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
    int mem = open(path, O_RDONLY | O_CLOEXEC);
    if (!maps || mem < 0) {
        if (maps)
            fclose(maps);
        if (mem >= 0)
            close(mem);
        return -1;
    }
    enum { CHUNK = 1 << 20, KEEP = 256 };
    char *buf = malloc(CHUNK + KEEP);
    char line[512];
    while (buf && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r')
            continue;
        s->regions++;
        size_t kept = 0;
        for (unsigned long at = lo; at < hi;) {
            size_t want = hi - at < CHUNK ? hi - at : CHUNK;
            ssize_t n = pread(mem, buf + kept, want, (off_t)at);
            if (n <= 0)
                break; /* [vvar] and the like */
            s->bytes += (size_t)n;
            size_t len = kept + (size_t)n;
            for (int i = 0; i < NCANARY; i++)
                if (memmem(buf, len, s->needle[i], strlen(s->needle[i])))
                    s->found[i] = true;
            kept = len < KEEP ? len : KEEP;
            memmove(buf, buf + len - kept, kept);
            at += (unsigned long)n;
        }
    }
    free(buf);
    fclose(maps);
    close(mem);
    return s->regions ? 0 : -1;
}

/* The audit's reader of a destination's status line (lxp_status_feed):
 * every vector fed whole and byte by byte. */
static int status_lines(void) {
    static const struct { const char *in; int want; } v[] = {
        {"HTTP/1.1 200 OK\r\n\r\n", 200},
        {"HTTP/1.0 404 Not Found\r\n", 404},
        {"HTTP/1.1 204\r\n\r\n", 204},
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n", 201},
        {"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 500 Oops\r\n", 500},
        {"HTTP/1.1 100\n\nHTTP/1.1 302 Found\n", 302},
        {"HTTP/1.1 101 Switching Protocols\r\n\r\n", 101},
        {"HTTP/1.1 999 Odd\r\n", 0},
        {"HTTP/2 200\r\n\r\n", 0},
        {"SSH-2.0-OpenSSH_9.2\r\n", 0},
        {"HTTP/1.1 2000 OK\r\n", 0},
        {"HTTP/1.1 20", -1},
        {"HTTP/1.1 100 Continue\r\n\r\n", -1},
        {"HTTP/1.1 100 Continue\r\n", -1},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        struct lxp_status_scan whole = {0}, bytes = {0};
        int w = lxp_status_feed(&whole, v[i].in, strlen(v[i].in)), b = -1;
        for (size_t k = 0; k < strlen(v[i].in) && b < 0; k++)
            b = lxp_status_feed(&bytes, v[i].in + k, 1);
        CHECK(w == v[i].want && b == v[i].want, "status of %zu: whole %d, byte by byte %d, want %d", i, w, b,
              v[i].want);
    }
    /* nine interim responses: past the bound, no answer (0), not a search */
    char many[1024] = "";
    for (int i = 0; i < 9; i++)
        strcat(many, "HTTP/1.1 100 Continue\r\n\r\n");
    strcat(many, "HTTP/1.1 200 OK\r\n\r\n");
    struct lxp_status_scan s = {0};
    CHECK(lxp_status_feed(&s, many, strlen(many)) == 0, "more than 8 interim responses");
    if (!failed)
        printf("ok: the audit reads a destination's final status line, whole or byte by byte, past interim 1xx\n");
    return failed;
}

/* The TLS server name a file's bytes carry as a tunnel's first client
 * bytes (lxp_tls_sni), whole and at every shorter length: "CODE NAME". */
static int tls_name(const char *path) {
    static uint8_t buf[LXP_TLS_HELLO_MAX + 4096];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f)
        fclose(f);
    char name[254];
    int k = lxp_tls_sni(buf, n, name);
    for (size_t i = 0; i < n; i++) {
        char pn[254];
        int pk = lxp_tls_sni(buf, i, pn);
        CHECK(pk == -1 || (pk == k && (k != 1 || strcmp(pn, name) == 0)), "%s: %zu bytes gave %d, all %d", path, i,
              pk, k);
    }
    printf("%d %s\n", k, k == 1 ? name : "-");
    return failed;
}

/* A host that forked a child which lives on without exec (a runner agent's
 * worker), then was killed: its proxy must end with it. The forked child
 * judges, once its parent is gone: "ok: ..." or "FAIL: ...". */
static int forked_host(const char *hosts, unsigned port) {
    fy_error *e = NULL;
    if (fy_probe(FY_PROBE_NO_VM, &caps, &e) < 0) {
        printf("FAIL: probe: %s\n", fy_error_message(e));
        return 1;
    }
    const char *idle[] = {"/bin/sleep", "30", NULL};
    fy_prepared *pr = prepare(hosts, "mirror.test", port, NULL, "x", idle);
    fy_handle *h = NULL;
    if (!pr || fy_start(pr, &h, &e) < 0) {
        printf("FAIL: start: %s\n", e ? fy_error_message(e) : "not prepared");
        return 1;
    }
    pid_t proxy = find_proxy();
    if (proxy <= 0) {
        printf("FAIL: no fy-proxy child of this host\n");
        return 1;
    }
    fflush(stdout);
    pid_t host = getpid(), child = fork();
    if (child < 0) {
        printf("FAIL: fork: %s\n", strerror(errno));
        return 1;
    }
    if (child > 0) {
        (void)kill(host, SIGKILL);
        pause();
    }
    /* The child: everything of its parent's copied, nothing freed. */
    for (int i = 0; i < 200 && getppid() == host; i++)
        usleep(50000);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) {
        char path[64], comm[32] = "";
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)proxy);
        FILE *f = fopen(path, "re");
        gone = !f || !fgets(comm, sizeof(comm), f) || strcmp(comm, "fy-proxy\n") != 0;
        if (f)
            fclose(f);
        if (!gone)
            usleep(50000);
    }
    if (gone)
        printf("ok: the proxy (pid %d) ended with its killed host, whose forked child lives on\n", (int)proxy);
    else {
        printf("FAIL: the proxy (pid %d) outlived its killed host while the host's forked child lives\n", (int)proxy);
        (void)kill(proxy, SIGKILL);
    }
    fflush(stdout);
    _exit(gone ? 0 : 1);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--forked-host") == 0)
        return forked_host(argv[2], (unsigned)atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "--status-lines") == 0)
        return status_lines();
    if (argc == 3 && strcmp(argv[1], "--tls-name") == 0)
        return tls_name(argv[2]);
    if (argc != 5)
        return 2;
    if (geteuid() != 0) {
        printf("SKIP: reading another process's memory needs root\n");
        return 77;
    }
    const char *hosts = argv[1], *dir = argv[4];
    unsigned p_mirror = (unsigned)atoi(argv[2]), p_other = (unsigned)atoi(argv[3]);
    const char *env_canary = getenv("FY_TEST_RUNNER_TOKEN");
    if (!env_canary || strlen(env_canary) < 16) {
        printf("FAIL: FY_TEST_RUNNER_TOKEN (the host's canary) is not set\n");
        return 1;
    }
    fy_error *e = NULL;
    if (fy_probe(FY_PROBE_NO_VM, &caps, &e) < 0) {
        printf("probe: %s\n", fy_error_message(e));
        return 1;
    }
    char policy_canary[64], other_cred[64], own_cred[64], line[256], creds_a[512], creds_b[512];
    unsigned long salt = (unsigned long)getpid() * 2654435761UL ^ (unsigned long)time(NULL);
    snprintf(policy_canary, sizeof(policy_canary), "fyc-policy-secret-%lx", salt);
    snprintf(other_cred, sizeof(other_cred), "fyc-other-attempt-cred-%lx", salt);
    snprintf(own_cred, sizeof(own_cred), "fyc-own-cred-%lx", salt);
    snprintf(creds_a, sizeof(creds_a), "%s/creds-other", dir);
    snprintf(creds_b, sizeof(creds_b), "%s/creds-own", dir);
    snprintf(line, sizeof(line), "other.test:%u X-Token: %s\n", p_other, other_cred);
    CHECK(write_creds(creds_a, line) == 0, "%s: %s", creds_a, strerror(errno));
    snprintf(line, sizeof(line), "mirror.test:%u Authorization: Bearer %s\n", p_mirror, own_cred);
    CHECK(write_creds(creds_b, line) == 0, "%s: %s", creds_b, strerror(errno));

    /* A second attempt's plan, prepared and held by this host: its
     * credential for another destination is in this process's memory. */
    const char *idle[] = {"/bin/sleep", "30", NULL};
    fy_prepared *other = prepare(hosts, "other.test", p_other, creds_a, policy_canary, idle);
    fy_prepared *pr = prepare(hosts, "mirror.test", p_mirror, creds_b, policy_canary, idle);
    fy_handle *h = NULL;
    if (!other || !pr || fy_start(pr, &h, &e) < 0) {
        printf("FAIL: start: %s\n", e ? fy_error_message(e) : "not prepared");
        return 1;
    }
    pid_t proxy = find_proxy();
    CHECK(proxy > 0, "no fy-proxy child of this host");
    if (proxy > 0) {
        char path[64], exe[256] = "";
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)proxy);
        ssize_t n = readlink(path, exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = 0;
        char self[256] = "";
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = 0;
        bool memfd = strncmp(exe, "/memfd:fy-proxy", 15) == 0 && strcmp(exe, self) != 0;
        CHECK(memfd, "the proxy's executable is %s, not the memfd program", exe);
        if (memfd)
            printf("ok: the proxy (pid %d) runs %s, not the host's %s\n", (int)proxy, exe, self);
        snprintf(path, sizeof(path), "/proc/%d/environ", (int)proxy);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char env[64];
        n = fd >= 0 ? read(fd, env, sizeof(env)) : -1;
        if (fd >= 0)
            close(fd);
        CHECK(n == 0, "the proxy's environment is not empty (%zd bytes)", n);
        if (n == 0)
            printf("ok: the proxy's environment is empty\n");

        struct scan s = {.needle = {env_canary, policy_canary, other_cred, own_cred}};
        CHECK(scan_memory(proxy, &s) == 0, "cannot read the proxy's memory: %s", strerror(errno));
        static const char *what[NCANARY] = {"the host program's environment variable", "the policy's secret",
                                            "another attempt's credential for another destination"};
        for (int i = 0; i < NCANARY - 1; i++) {
            CHECK(!s.found[i], "%s is in the proxy's memory", what[i]);
            if (!s.found[i])
                printf("ok: %s is nowhere in the proxy's memory\n", what[i]);
        }
        CHECK(s.found[NCANARY - 1], "the attempt's own credential is not in the proxy's memory: the search is blind");
        if (s.found[NCANARY - 1])
            printf("ok: the attempt's own credential is (the search sees the proxy's memory: %zu regions, %zu bytes)\n",
                   s.regions, s.bytes);
    }
    fy_handle_cancel(h, FY_CANCEL_RUN_CANCELLED, NULL);
    fy_result *res = NULL;
    CHECK(fy_handle_wait(h, 60000000, &res, &e) == 1, "wait: %s", fy_error_message(e));
    fy_error_free(e);
    fy_handle_free(h);
    uint64_t left = 99;
    CHECK(res && fy_result_cleanup(res, FY_LEFT_NETWORK, &left) == 0 && left == 0, "network objects left");
    CHECK(proxy <= 0 || kill(proxy, 0) < 0, "the proxy (pid %d) is still there", (int)proxy);
    fy_result_free(res);
    fy_prepared_free(pr);
    fy_prepared_free(other);
    fy_caps_free(caps);
    unlink(creds_a);
    unlink(creds_b);
    return failed;
}
