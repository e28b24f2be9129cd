/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Job networks through the API (run by test-jobnet.sh inside a network
 * namespace of the test's, GW, whose default route leads to a fake
 * internet, NET: a member linked to the host's namespace would reach it).
 *
 *   test-jobnet root PROBE_DIR OUT_DIR [UPLINK]
 *                                          everything below, as root (with UPLINK, the
 *                                          fake internet's namespace file: a restricted
 *                                          member too)
 *   test-jobnet rootless PROBE_DIR OUT_DIR the typed refusal (uid 65534)
 *   test-jobnet helper PROBE_DIR OUT_DIR   uid 65534 through the privileged helper
 *                                          (test-net-helper.sh, section 5g): db and a
 *                                          fetch-only member, another job's fetch-only
 *                                          member, the host program's namespace
 *
 * PROBE_DIR holds fy-netprobe and serve.py (a TCP echo on 8080 and a UDP
 * echo on 9090 that writes OUT/ready); OUT_DIR is the server's output. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

#include "net-check.h"
#define OK(...) (printf("ok: "), printf(__VA_ARGS__), printf("\n"))

static const char *probe_dir, *out_dir, *uplink;
static bool helper_mode; /* through the privileged helper: its budget caps memory */
static fy_caps *caps;

static fy_policy *member_policy(const char *member, const char *out) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_DENY, &e);
    if (r >= 0 && member)
        r = fy_policy_set_job_member(p, member, &e);
    if (r >= 0)
        r = fy_policy_add_bind(p, probe_dir, "/opt/fyprobe", FY_BIND_READ_ONLY, &e);
    if (r >= 0 && out)
        r = fy_policy_set_output(p, out, &e);
    if (r >= 0 && helper_mode)
        r = fy_policy_set_limit(p, FY_LIMIT_MEMORY, 128ull << 20, &e);
    /* (A terminal is never handed to a sandbox: run by hand on one, the
     * members' output is dropped.) */
    if (r >= 0)
        r = isatty(1) ? fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_NULL, -1, NULL, &e)
                      : fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, 1, NULL, &e);
    if (r >= 0)
        r = isatty(2) ? fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_NULL, -1, NULL, &e)
                      : fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FD, 2, NULL, &e);
    CHECK(r >= 0, "policy: %s", fy_error_message(e));
    fy_error_free(e);
    return p;
}

static fy_prepared *prepare(fy_jobnet *jn, const char *member, const char *out, const char *script) {
    fy_policy *p = member_policy(member, out);
    fy_error *e = NULL;
    fy_prepared *pr = NULL;
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    int r = fy_prepare_member(p, caps, argv, jn, &pr, &e);
    CHECK(r >= 0, "prepare %s: %s", member, fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
    return pr;
}

static fy_handle *start(fy_prepared *pr, const char *what) {
    fy_handle *h = NULL;
    fy_error *e = NULL;
    int r = pr ? fy_start(pr, &h, &e) : FY_E_INVAL;
    CHECK(r >= 0, "start %s: %s", what, fy_error_message(e));
    fy_error_free(e);
    return h;
}

/* Waits; the result's JSON in *json (caller frees) when asked. */
static int finish(fy_handle *h, char **json) {
    fy_result *res = NULL;
    fy_error *e = NULL;
    if (!h)
        return -1;
    int r = fy_handle_wait(h, 120ull * 1000000ull, &res, &e);
    CHECK(r >= 0, "wait: %s", fy_error_message(e));
    fy_error_free(e);
    int code = res ? fy_result_exit_code(res) : -1;
    if (res && json)
        fy_result_to_json(res, json, NULL);
    fy_result_free(res);
    fy_handle_free(h);
    return code;
}

/* ---- bad input ---- */

static void expect_(int r, fy_error **ep, int code, const char *path, const char *what) {
    fy_error *e = *ep;
    CHECK(r == code, "%s: %d (%s), expected %d", what, r, e ? fy_error_message(e) : "", code);
    if (path)
        CHECK(e && fy_error_location(e) && strcmp(fy_error_location(e), path) == 0, "%s: path %s, expected %s",
              what, e && fy_error_location(e) ? fy_error_location(e) : "(none)", path);
    if (r == code)
        OK("%s refused: %s", what, e ? fy_error_message(e) : "");
    fy_error_free(e);
    *ep = NULL;
}
/* (the call first: its error is read after it) */
#define expect(call, e, code, path, what)         \
    do {                                          \
        int r_ = (call);                          \
        expect_(r_, &(e), code, path, what);      \
    } while (0)

static void bad_input(void) {
    fy_jobnet *jn = NULL;
    fy_error *e = NULL;
    /* (forgeyard: the default host name, and ip6-localhost, ip6-loopback:
     * names of ::1; each comes before the job's lines in /etc/hosts, so a
     * member of that name would resolve to the loopback in its peers) */
    /* (and names inet_aton(3) reads as an IPv4 address, which glibc
     * answers before /etc/hosts: 0x7f000001, 2130706433 and 017 are
     * 127.0.0.1 in every peer, 0 is 0.0.0.0) */
    const char *bad_names[] = {"Db", "-db", "db-", "d_b", "", "localhost", "forgeyard", "ip6-localhost",
                               "ip6-loopback", "a123456789012345678901234567890123456789012345678901234567890123",
                               "0x7f000001", "2130706433", "017", "0", "1234"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        const char *m[] = {"ok", bad_names[i], NULL};
        char what[128];
        snprintf(what, sizeof(what), "member name \"%.20s\"", bad_names[i]);
        expect(fy_jobnet_new(m, &jn, &e), e, FY_E_POLICY, "members[1]", what);
        e = NULL;
    }
    const char *dup[] = {"db", "runner", "db", NULL};
    expect(fy_jobnet_new(dup, &jn, &e), e, FY_E_POLICY, "members[2]", "a duplicate member name");
    e = NULL;
    const char *none[] = {NULL};
    expect(fy_jobnet_new(none, &jn, &e), e, FY_E_RANGE, NULL, "no member");
    e = NULL;
    static char names[256][8];
    const char *many[257];
    for (int i = 0; i < 255; i++) {
        snprintf(names[i], sizeof(names[i]), "m%d", i);
        many[i] = names[i];
    }
    many[255] = NULL;
    expect(fy_jobnet_new(many, &jn, &e), e, FY_E_RANGE, NULL, "255 members");
    e = NULL;
    many[254] = NULL;
    int r = fy_jobnet_new(many, &jn, &e);
    CHECK(r == 0, "254 members: %s", fy_error_message(e));
    fy_error_free(e);
    e = NULL;
    uint64_t v = 0;
    CHECK(jn && fy_jobnet_stat(jn, FY_JOBNET_MEMBERS, &v) == 0 && v == 254, "members: %llu", (unsigned long long)v);
    CHECK(jn && fy_jobnet_stat(jn, FY_JOBNET_UP, &v) == 0 && v == 0, "made before any start");
    fy_jobnet_free(jn);

    /* The policy's side. */
    fy_policy *p = NULL;
    fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL);
    /* Membership is in the canonical policy (so the evidence and contract
     * id) only when asked for, and round-trips. */
    char *js = NULL;
    fy_policy_to_json(p, &js, NULL);
    CHECK(js && !strstr(js, "\"job\""), "a policy that did not ask has a job: %s", js ? js : "");
    free(js);
    js = NULL;
    fy_policy_set_job_member(p, "db", NULL);
    fy_policy_to_json(p, &js, NULL);
    fy_policy *q = NULL;
    fy_policy_new(FY_PROFILE_STANDARD_CI, &q, NULL);
    char *js2 = NULL;
    CHECK(js && strstr(js, "\"job\"") && fy_policy_load_json(q, js, strlen(js), NULL) == 0 &&
              fy_policy_to_json(q, &js2, NULL) == 0 && strcmp(js, js2) == 0,
          "network.job does not round-trip: %s", js ? js : "");
    free(js);
    free(js2);
    fy_policy_free(q);
    fy_policy_set_job_member(p, NULL, NULL);
    expect(fy_policy_set_job_member(p, "No Name", &e), e, FY_E_POLICY, "$.network.job.member", "setter, bad name");
    e = NULL;
    expect(fy_policy_set_job_member(p, "forgeyard", &e), e, FY_E_POLICY, "$.network.job.member",
           "setter, the default host name");
    e = NULL;
    const char *j1 = "{\"network\": {\"job\": {\"member\": \"A\"}}}";
    expect(fy_policy_load_json(p, j1, strlen(j1), &e), e, FY_E_POLICY, "$.network.job.member", "JSON, bad name");
    e = NULL;
    const char *j2 = "{\"network\": {\"job\": {\"name\": \"a\"}}}";
    expect(fy_policy_load_json(p, j2, strlen(j2), &e), e, FY_E_POLICY, "$.network.job.name", "JSON, unknown key");
    e = NULL;
    /* network.job.ports: TCP ports 1..65535, at most 64, only a member's;
     * sorted and deduplicated in the canonical form, which round-trips. */
    const char *jp0 = "{\"network\": {\"job\": {\"member\": \"db\", \"ports\": [8080, 0]}}}";
    expect(fy_policy_load_json(p, jp0, strlen(jp0), &e), e, FY_E_POLICY, "$.network.job.ports[1]", "JSON, port 0");
    e = NULL;
    const char *jp1 = "{\"network\": {\"job\": {\"ports\": [\"8080\"]}}}";
    expect(fy_policy_load_json(p, jp1, strlen(jp1), &e), e, FY_E_POLICY, "$.network.job.ports[0]", "JSON, a port as a string");
    e = NULL;
    {
        char many_ports[1024] = "{\"network\": {\"job\": {\"ports\": [";
        for (int i = 0; i < 65; i++)
            snprintf(many_ports + strlen(many_ports), sizeof(many_ports) - strlen(many_ports), "%s%d", i ? "," : "",
                     1000 + i);
        strcat(many_ports, "]}}}");
        expect(fy_policy_load_json(p, many_ports, strlen(many_ports), &e), e, FY_E_POLICY, "$.network.job.ports",
               "JSON, 65 ports");
        e = NULL;
    }
    const char *jp2 = "{\"network\": {\"job\": {\"ports\": [8080]}}}";
    {
        fy_prepared *prx = NULL;
        const char *av0[] = {"/bin/true", NULL};
        r = fy_policy_load_json(p, jp2, strlen(jp2), &e);
        if (r >= 0)
            r = fy_prepare(p, caps, av0, &prx, &e);
        expect(r, e, FY_E_POLICY, "$.network.job.ports", "ports without a member");
        fy_prepared_free(prx);
    }
    e = NULL;
    {
        const char *jp3 = "{\"network\": {\"job\": {\"member\": \"db\", \"ports\": [9090, 8080, 9090]}}}";
        fy_policy *q3 = NULL, *q4 = NULL;
        fy_policy_new(FY_PROFILE_STANDARD_CI, &q3, NULL);
        fy_policy_new(FY_PROFILE_STANDARD_CI, &q4, NULL);
        char *a = NULL, *b2 = NULL;
        CHECK(fy_policy_load_json(q3, jp3, strlen(jp3), NULL) == 0 && fy_policy_to_json(q3, &a, NULL) == 0 &&
                  fy_policy_load_json(q4, a, strlen(a), NULL) == 0 && fy_policy_to_json(q4, &b2, NULL) == 0 &&
                  strcmp(a, b2) == 0,
              "network.job.ports does not round-trip: %s", a ? a : "");
        char *flat = a ? strdup(a) : NULL;
        size_t w = 0;
        for (size_t i = 0; flat && flat[i]; i++)
            if (flat[i] != ' ' && flat[i] != '\n')
                flat[w++] = flat[i];
        if (flat)
            flat[w] = 0;
        CHECK(flat && strstr(flat, "\"ports\":[8080,9090]"), "network.job.ports not canonical: %s", a ? a : "");
        if (flat && strstr(flat, "\"ports\":[8080,9090]"))
            OK("network.job.ports round-trips, sorted and deduplicated");
        free(flat);
        free(a);
        free(b2);
        fy_policy_free(q3);
        fy_policy_free(q4);
    }
    fy_policy_set_job_member(p, NULL, NULL);
    const char *j3 = "{\"isolation\": {\"controls\": {\"netns\": \"prefer\"}}, "
                     "\"network\": {\"mode\": \"allow\", \"job\": {\"member\": \"db\"}}}";
    r = fy_policy_load_json(p, j3, strlen(j3), &e);
    if (r >= 0)
        r = fy_policy_validate(p, &e);
    expect(r, e, FY_E_UNSUPPORTED, "$.network.mode", "a job network with allow");
    e = NULL;
    fy_policy_free(p);

    const char *m[] = {"db", "runner", NULL};
    fy_jobnet_new(m, &jn, NULL);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    p = member_policy("cache", NULL);
    expect(fy_prepare_member(p, caps, argv, jn, &pr, &e), e, FY_E_POLICY, "$.network.job.member",
           "a member the job did not declare");
    e = NULL;
    fy_policy_set_job_member(p, NULL, NULL);
    expect(fy_prepare_member(p, caps, argv, jn, &pr, &e), e, FY_E_POLICY, "$.network.job.member",
           "a policy that did not ask to join");
    e = NULL;
    fy_policy_set_job_member(p, "db", NULL);
    expect(fy_prepare(p, caps, argv, &pr, &e), e, FY_E_POLICY, "$.network.job.member",
           "a member's policy prepared without its job network");
    e = NULL;
    fy_policy_free(p);
    /* A member whose host name is another member's name: its own
     * "127.0.0.1 localhost NAME" line comes first in its /etc/hosts, so it
     * would resolve that member to itself. Its own name is its host name's
     * to take. */
    p = member_policy("runner", NULL);
    fy_policy_set_hostname(p, "db", NULL);
    expect(fy_prepare_member(p, caps, argv, jn, &pr, &e), e, FY_E_POLICY, "$.filesystem.hostname",
           "a member whose host name is another member's name");
    e = NULL;
    fy_policy_set_hostname(p, "runner", NULL);
    r = fy_prepare_member(p, caps, argv, jn, &pr, &e);
    CHECK(r == 0, "a member whose host name is its own name: %s", fy_error_message(e));
    if (r == 0)
        OK("a member's host name may be its own name");
    fy_error_free(e);
    e = NULL;
    fy_prepared_free(pr);
    pr = NULL;
    fy_policy_free(p);

    /* A member joining a network that was shut down, then freed. */
    fy_prepared *db = prepare(jn, "db", NULL, "exit 0");
    CHECK(fy_jobnet_shutdown(jn, NULL) == 0, "shutdown of an unused network");
    fy_handle *h = NULL;
    expect(fy_start(db, &h, &e), e, FY_E_STATE, NULL, "a member joining a network that was shut down");
    e = NULL;
    fy_jobnet_free(jn); /* (db's plan keeps the object) */
    expect(fy_start(db, &h, &e), e, FY_E_STATE, NULL, "a member joining a freed network");
    e = NULL;
    fy_prepared_free(db);
}

/* ---- the job's members, another job, the host ---- */

static bool wait_file(const char *path, int seconds) {
    for (int i = 0; i < seconds * 20; i++) {
        if (access(path, F_OK) == 0)
            return true;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Whether the host's namespace reaches addr:port over TCP. */
static bool host_reaches(const char *addr, int port) {
    bool v6 = strchr(addr, ':') != NULL;
    int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    inet_pton(AF_INET6, addr, &a6.sin6_addr);
    struct timeval tv = {2, 0};
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    bool ok = v6 ? connect(s, (struct sockaddr *)&a6, sizeof(a6)) == 0 : connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(s);
    return ok;
}

#define P "/opt/fyprobe/fy-netprobe"

/* A member's IPv6 checks (db is fd66:7973:2::1 on the job's /120): db by
 * name (AAAA from /etc/hosts; a plain lookup still gives IPv4 first) over
 * TCP and UDP; the fake internet (2001:db8::1, echo servers of the test's)
 * and the host program's namespace (GW: 2001:db8:2::1, a listener of the
 * test's) not over IPv6; the member's own address on a /120 (0x78), not a
 * /64, whose every address a member sent to took an entry of the kernel's
 * neighbour table, which all namespaces share. */
#define V6_CHECKS                                                                                        \
    "B=$(" P " resolve6 db) || exit 40; [ \"$B\" = fd66:7973:2::1 ] || exit 41; "                          \
    P " tcp \"$B\" 8080 || exit 42; " P " udp \"$B\" 9090 || exit 43; "                                    \
    "! " P " tcp 2001:db8::1 8080 || exit 44; ! " P " udp 2001:db8::1 9090 || exit 45; "                  \
    "! " P " tcp 2001:db8:2::1 8080 || exit 46; ! " P " icmp 2001:db8::1 || exit 47; "                    \
    "grep -Eq '^fd6679730002[0-9a-f]{20} [0-9a-f]+ 78 ' /proc/net/if_inet6 || exit 48; "
/* A member whose policy declares network.job.ports [8080] (Landlock ABI
 * 4+): db:8080 over IPv4 and IPv6 answers, db:8081 (db listens there too,
 * and the job's rules let it through: the deny runner reaches it) is
 * refused at once by Landlock (EACCES), not by the network (a timeout or a
 * reset). */
#define LL_CHECKS                                                                                         \
    "o=$(" P " tcp \"$A\" 8081) && exit 50; case \"$o\" in *'Permission denied'*) ;; *) echo \"$o\"; exit 51;; esac; " \
    "o=$(" P " tcp \"$B\" 8081) && exit 52; case \"$o\" in *'Permission denied'*) ;; *) echo \"$o\"; exit 53;; esac; " \
    P " tcp \"$A\" 8080 || exit 54; " P " tcp \"$B\" 8080 || exit 55; "
#define LL_EXITS "50-53: db:8081 not refused by Landlock (EACCES); 54-55: db:8080 (declared) refused"
/* Whether the Landlock TCP layer can be had here, and a member's policy
 * declaring the ports it connects to on the others (network.job.ports). */
static bool ll_tcp(void) {
    int64_t abi = 0;
    return fy_caps_value(caps, FY_CAP_LANDLOCK, &abi) == 0 && abi >= 4;
}
static void declare_job_ports(fy_policy *p, const char *ports) {
    char js[128];
    fy_error *e = NULL;
    snprintf(js, sizeof(js), "{\"network\": {\"job\": {\"ports\": %s}}}", ports);
    CHECK(fy_policy_load_json(p, js, strlen(js), &e) == 0, "network.job.ports: %s", fy_error_message(e));
    fy_error_free(e);
}
/* The plan's evidence says exactly which ports the layer allows: want (a
 * JSON array's text, no spaces), or none when the host has no ABI 4. */
static void check_ll_evidence(fy_prepared *pr, const char *who, const char *want) {
    char *ev = NULL;
    fy_prepared_to_json(pr, &ev, NULL);
    size_t w = 0;
    for (size_t i = 0; ev && ev[i]; i++)
        if (ev[i] != ' ' && ev[i] != '\n')
            ev[w++] = ev[i];
    if (ev)
        ev[w] = 0;
    char key[160];
    snprintf(key, sizeof(key), "\"landlock_tcp_ports\":%s", want);
    if (ll_tcp())
        CHECK(ev && strstr(ev, key) && strstr(ev, "\"landlock_tcp\":\"connect(2)overTCPonlytotheports"),
              "%s's evidence has no Landlock layer %s: %s", who, want, ev ? ev : "(none)");
    else
        CHECK(ev && !strstr(ev, "landlock_tcp_ports") && strstr(ev, "needsLandlockABI4"),
              "%s's evidence claims a Landlock layer without ABI 4: %s", who, ev ? ev : "(none)");
    free(ev);
}
#define V6_EXITS                                                                                          \
    "40-43: db over IPv6 not reached; 44-47: the fake internet or GW reached over IPv6; 48: job0's IPv6 " \
    "address not on a /120"

/* A fetch-only member of job a ("proxied", db at 100.80.0.1 serving):
 * db by name directly on the job's link, the allowlist only through its
 * proxy (on its own loopback, 127.0.0.1:3128; the proxy in the host
 * program's namespace, GW, whose route leads to the fake internet),
 * nothing of the fake internet or GW directly; every CONNECT in the audit
 * log; its proxy reaped. With helper (uid 65534 through the privileged
 * helper), the evidence names the helper too. */
static void fetch_member(fy_jobnet *a, bool helper) {
    fy_policy *p = member_policy("proxied", NULL);
    fy_error *e2 = NULL;
    int r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e2);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_FETCH_ONLY, &e2);
    declare_job_ports(p, "[8080]");
    if (ll_tcp())
        fy_policy_set_env(p, "LL", "1", NULL);
    const char *av[] = {"/bin/sh", "-c",
                        "A=$(" P " resolve db) || exit 10; [ \"$A\" = 100.80.0.1 ] || exit 11; "
                        P " tcp \"$A\" 8080 || exit 12; " P " udp \"$A\" 9090 || exit 13; "
                        V6_CHECKS "[ -z \"$LL\" ] || { " LL_CHECKS "}; "
                        P " proxy 198.51.100.1 8080 || exit 15; "
                        "! " P " proxy 198.51.100.2 8080 || exit 16; ! " P " proxy 198.51.100.1 9090 || exit 17; "
                        "! " P " proxy db 8080 || exit 18; "
                        "! " P " tcp 198.51.100.1 8080 || exit 20; ! " P " udp 198.51.100.1 9090 || exit 21; "
                        "! " P " icmp 198.51.100.1 || exit 22; ! " P " tcp 192.0.2.1 8080 || exit 23; "
                        "! " P " tcp 192.0.2.2 8080 || exit 24; ! " P " tcp 100.80.0.254 3128 || exit 25; "
                        "[ \"$HTTPS_PROXY\" = http://127.0.0.1:3128 ] || exit 30; "
                        "case \",$NO_PROXY,\" in *,db,100.80.0.1,*) ;; *) exit 31;; esac; "
                        "case \",$NO_PROXY,\" in *,fd66:7973:2::1,*) ;; *) exit 33;; esac; "
                        "[ \"$no_proxy\" = \"$NO_PROXY\" ] || exit 32; exit 0", NULL};
    fy_prepared *pf = NULL;
    if (r >= 0)
        r = fy_prepare_member(p, caps, av, a, &pf, &e2);
    CHECK(r >= 0, "prepare proxied: %s", fy_error_message(e2));
    fy_error_free(e2);
    fy_policy_free(p);
    check_ll_evidence(pf, "proxied", "[3128,53,8080]");
    char *json = NULL;
    int code = finish(start(pf, "proxied"), &json);
    CHECK(code == 0,
          "proxied (fetch-only) exited %d (10-13: db; 15: the allowed destination through the proxy; 16-18: "
          "another allowed by the proxy; 20-25: something reached without it; 30-33: its environment; " V6_EXITS
          "; " LL_EXITS ")",
          code);
    /* Its result: the proxy's record and the job's witness, in one. */
    char *flat = json ? strdup(json) : NULL;
    size_t w = 0;
    for (size_t i = 0; flat && flat[i]; i++)
        if (flat[i] != ' ' && flat[i] != '\n')
            flat[w++] = flat[i];
    if (flat)
        flat[w] = 0;
    CHECK(flat && strstr(flat, "\"link_left\":0") && strstr(flat, "\"mode\":\"fetch-only\"") &&
              strstr(flat, "\"member\":\"proxied\"") && strstr(flat, "\"network_left\":0"),
          "proxied's network record: %s", json ? json : "");
    /* The audit log: each CONNECT a record, allowed or refused. */
    const char *want[][2] = {{"\"host\":\"198.51.100.1\"", "\"port\":8080"},
                             {"\"host\":\"198.51.100.2\"", "\"port\":8080"},
                             {"\"host\":\"198.51.100.1\"", "\"port\":9090"},
                             {"\"host\":\"db\"", "\"port\":8080"}};
    const char *reqs = flat ? strstr(flat, "\"requests\":[") : NULL;
    int found[4] = {0, 0, 0, 0}, nrec = 0;
    const char *end = reqs ? strchr(reqs, ']') : NULL;
    for (const char *o = end ? strchr(reqs, '{') : NULL; o && o < end; o = strchr(o + 1, '{')) {
        const char *c = strchr(o, '}');
        if (!c || c > end)
            break;
        char rec[512];
        snprintf(rec, sizeof(rec), "%.*s", (int)(c - o + 1), o);
        nrec++;
        for (int k = 0; k < 4; k++)
            if (strstr(rec, want[k][0]) && strstr(rec, want[k][1]) &&
                strstr(rec, k == 0 ? "\"decision\":\"allowed\"" : "\"decision\":\"refused\""))
                found[k]++;
    }
    CHECK(found[0] == 1 && found[1] == 1 && found[2] == 1 && found[3] == 1 && nrec == 4,
          "proxied's audit log (%d records; allowed %d, refused %d %d %d): %s", nrec, found[0], found[1],
          found[2], found[3], reqs ? reqs : "(no requests)");
    /* The proxy ended (reaped at cleanup): its pid is gone. */
    const char *pp = flat ? strstr(flat, "\"proxy\":{") : NULL;
    const char *pid = pp ? strstr(pp, "\"pid\":") : NULL;
    long ppid = pid ? strtol(pid + 6, NULL, 10) : 0;
    CHECK(ppid > 0 && kill((pid_t)ppid, 0) < 0 && errno == ESRCH && strstr(pp, "\"ended\":true"),
          "proxied's proxy (pid %ld) not witnessed gone: %s", ppid, pp ? pp : "(no proxy record)");
    /* Through the privileged helper (uid 65534): the evidence says whose
     * the job's network is (isolation.network.job.helper). */
    if (helper) {
        char *ev = NULL;
        fy_prepared_to_json(pf, &ev, NULL);
        CHECK(ev && strstr(ev, "\"mode\": \"fetch-only\"") && strstr(ev, "\"member\": \"proxied\"") &&
                  strstr(ev, "\"helper\": \"the job's namespace, bridge, rules and links made and removed by the privileged helper at "),
              "proxied's evidence does not name the helper: %s", ev ? ev : "(none)");
        free(ev);
    }
    if (code == 0)
        OK("a fetch-only member reaches db directly by name and its allowlist only through its proxy (audited: "
           "1 allowed, 3 refused), nothing of the fake internet directly; its proxy (pid %ld) reaped; %s",
           ppid, ll_tcp() ? "its Landlock layer (3128, 53 and its declared 8080) refuses db:8081 with EACCES"
                          : "no Landlock TCP layer here (ABI < 4), and its evidence says so");
    free(flat);
    free(json);
    fy_prepared_free(pf);
    }

static void job_networks(void) {
    char ready[4096];
    snprintf(ready, sizeof(ready), "%s/ready", out_dir);
    unlink(ready);
    const char *ma[] = {"db", "runner", "fetcher", "proxied", NULL}, *mb[] = {"x", "intruder", NULL};
    fy_jobnet *a = NULL, *b = NULL;
    CHECK(fy_jobnet_new(ma, &a, NULL) == 0 && fy_jobnet_new(mb, &b, NULL) == 0, "jobnet_new");
    /* db serves (TCP 8080, UDP 9090) until cancelled. */
    fy_prepared *db = prepare(a, "db", out_dir, "exec python3 /opt/fyprobe/serve.py /work/output/ready 100");
    fy_handle *hdb = start(db, "db");
    CHECK(wait_file(ready, 30), "db's server did not start");
    uint64_t v = 0;
    CHECK(fy_jobnet_stat(a, FY_JOBNET_UP, &v) == 0 && v == 1, "the network is up with its first member");
    /* The runner: db by name over TCP and UDP; nothing outside. */
    fy_prepared *runner = prepare(a, "runner", NULL,
                                  "A=$(" P " resolve db) || exit 10; [ \"$A\" = 100.80.0.1 ] || exit 11; "
                                  P " tcp \"$A\" 8080 || exit 12; " P " udp \"$A\" 9090 || exit 13; "
                                  P " tcp \"$A\" 8081 || exit 14; "
                                  V6_CHECKS
                                  "! " P " tcp 198.51.100.1 8080 || exit 20; ! " P " udp 198.51.100.1 9090 || exit 21; "
                                  "! " P " icmp 198.51.100.1 || exit 22; ! " P " tcp 192.0.2.1 8080 || exit 23; "
                                  "! " P " tcp 192.0.2.2 8080 || exit 24; ! " P " resolve example.org || exit 25; "
                                  "ip route 2>/dev/null; exit 0");
    {
        /* No network.job.ports: no layer, and the evidence says why. */
        char *ev = NULL;
        fy_prepared_to_json(runner, &ev, NULL);
        CHECK(ev && strstr(ev, "\"landlock_tcp\": \"none: the member declares no network.job.ports") &&
                  !strstr(ev, "landlock_tcp_ports"),
              "runner's evidence: %s", ev ? ev : "(none)");
        free(ev);
    }
    int code = finish(start(runner, "runner"), NULL);
    CHECK(code == 0,
          "runner exited %d (10-13: db by name not reached; 14: db:8081 not reached by a member without a Landlock "
          "layer; 20-25: something outside reached; " V6_EXITS ")",
          code);
    if (code == 0)
        OK("members talk by name over TCP and UDP, IPv4 and IPv6; under deny nothing outside (fake internet, "
           "gateway, DNS; IPv4 and IPv6)");
    /* Restricted and a member: db by name, the allowlist through its
     * router (the fake internet as the uplink), nothing else. */
    if (uplink) {
        fy_policy *p = member_policy("fetcher", NULL);
        fy_error *e2 = NULL;
        int r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e2);
        if (r >= 0)
            r = fy_policy_set_network(p, FY_NET_RESTRICTED, &e2);
        if (r >= 0)
            r = fy_policy_set_network_host(p, FY_NETHOST_UPLINK, uplink, &e2);
        declare_job_ports(p, "[9999,8080]");
        if (ll_tcp())
            fy_policy_set_env(p, "LL", "1", NULL);
        const char *av[] = {"/bin/sh", "-c",
                            "A=$(" P " resolve db) || exit 10; " P " tcp \"$A\" 8080 || exit 12; "
                            P " udp \"$A\" 9090 || exit 13; " P " tcp 198.51.100.1 8080 || exit 15; "
                            "! " P " tcp 198.51.100.2 8080 || exit 26; ! " P " udp 198.51.100.1 9090 || exit 27; "
                            "! " P " tcp 192.0.2.1 8080 || exit 28; " V6_CHECKS
                            "[ -z \"$LL\" ] || { " LL_CHECKS "}; exit 0", NULL};
        fy_prepared *pf = NULL;
        if (r >= 0)
            r = fy_prepare_member(p, caps, av, a, &pf, &e2);
        CHECK(r >= 0, "prepare fetcher: %s", fy_error_message(e2));
        fy_error_free(e2);
        fy_policy_free(p);
        check_ll_evidence(pf, "fetcher", "[53,8080,9999]");
        char *json = NULL;
        code = finish(start(pf, "fetcher"), &json);
        CHECK(code == 0,
              "fetcher (restricted) exited %d (10-13: db; 15: the allowed destination; 26-28: another; " V6_EXITS
              "; " LL_EXITS ")",
              code);
        CHECK(json && strstr(json, "\"link_left\": 0") && strstr(json, "\"mode\": \"restricted\""),
              "fetcher's network record: %s", json ? json : "");
        if (code == 0)
            OK("a restricted member reaches db by name and its allowlist through its router, nothing else; %s",
               ll_tcp() ? "its Landlock layer (the allowlist's 8080, 53, its declared 8080 and 9999) refuses db:8081 "
                          "with EACCES"
                        : "no Landlock TCP layer here (ABI < 4)");
        free(json);
        fy_prepared_free(pf);
    }
    if (uplink)
        fetch_member(a, false);
    /* Two runners at once under one name: refused. */
    fy_handle *h2 = NULL;
    fy_error *e = NULL;
    expect(fy_start(db, &h2, &e), e, FY_E_STATE, "$.network.job.member", "a second db while db runs");
    e = NULL;
    CHECK(fy_jobnet_shutdown(a, &e) == FY_E_STATE, "shutdown while db runs");
    fy_error_free(e);
    e = NULL;
    /* Another job: its intruder (100.80.0.2, the address and port index
     * of job A's runner, which has ended: were the jobs on one segment, its
     * frames would pass) tries db's address (100.80.0.1, x in its own job,
     * which does not run). */
    fy_prepared *intr = prepare(b, "intruder", NULL,
                                "! " P " tcp 100.80.0.1 8080 || exit 30; ! " P " udp 100.80.0.1 9090 || exit 31; "
                                "! " P " icmp 100.80.0.1 || exit 32; "
                                "! " P " tcp fd66:7973:2::1 8080 || exit 35; ! " P " udp fd66:7973:2::1 9090 || exit 36; "
                                "! " P " resolve db || exit 34; ! " P " resolve6 db || exit 37; exit 0");
    code = finish(start(intr, "intruder"), NULL);
    CHECK(code == 0, "intruder (another job) exited %d: it reached job A (30-32, 35-36: IPv6) or resolved its name (34, 37)",
          code);
    if (code == 0)
        OK("a member of another job reaches nothing of this one (TCP, UDP, IPv4 and IPv6, by address or name)");
    /* The host's namespace reaches no member's listener. */
    CHECK(!host_reaches("100.80.0.1", 8080) && !host_reaches("fd66:7973:2::1", 8080), "the host reached db's listener");
    if (!host_reaches("100.80.0.1", 8080) && !host_reaches("fd66:7973:2::1", 8080))
        OK("the host's namespace does not reach db's listener (100.80.0.1:8080, [fd66:7973:2::1]:8080)");
    /* The end: db cancelled; its link witnessed gone, then the network. */
    fy_handle_cancel(hdb, FY_CANCEL_USER, NULL);
    char *json = NULL;
    finish(hdb, &json);
    CHECK(json && strstr(json, "\"link_left\": 0") && strstr(json, "\"member\": \"db\""),
          "db's result has no job witness: %s", json ? json : "(none)");
    CHECK(json && strstr(json, "\"network_left\": 0"), "db's cleanup left network objects: %s", json ? json : "");
    free(json);
    CHECK(fy_jobnet_stat(a, FY_JOBNET_RUNNING, &v) == 0 && v == 0, "running after the end: %llu",
          (unsigned long long)v);
    int left = fy_jobnet_shutdown(a, NULL);
    CHECK(left == 0, "shutdown left %d", left);
    CHECK(fy_jobnet_stat(a, FY_JOBNET_UP, &v) == 0 && v == 0, "still up after shutdown");
    if (left == 0)
        OK("the job's namespace, bridge and rules removed, witnessed");
    CHECK(fy_jobnet_stat(a, FY_JOBNET_JOINED, &v) == 0 && v == (uplink ? 4u : 2u), "joined %llu", (unsigned long long)v);
    fy_prepared_free(db);
    fy_prepared_free(runner);
    fy_prepared_free(intr);
    fy_jobnet_free(a);
    fy_jobnet_free(b); /* (its member ended: removed at once) */
}

/* ---- nothing left after 100 job networks ---- */

/* Our own descriptors of network namespaces, and all of ours. */
static void count_fds(int *netns, int *all) {
    *netns = *all = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[64], l[128];
        snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(p, l, sizeof(l) - 1);
        l[n > 0 ? n : 0] = 0;
        (*all)++;
        if (strncmp(l, "net:[", 5) == 0)
            (*netns)++;
    }
    if (d)
        closedir(d);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void hundred(void) {
    int ns0, all0, ns1, all1;
    /* What two plain deny attempts cost here, for the timing below. */
    double t0 = now_ms();
    for (int i = 0; i < 20; i++) {
        fy_policy *p = member_policy(NULL, NULL);
        const char *av[] = {"/bin/sh", "-c", "exit 0", NULL};
        fy_prepared *pr = NULL;
        for (int k = 0; k < 2; k++) {
            if (fy_prepare(p, caps, av, &pr, NULL) == 0)
                finish(start(pr, "plain"), NULL);
            fy_prepared_free(pr);
            pr = NULL;
        }
        fy_policy_free(p);
    }
    double plain = (now_ms() - t0) / 20;
    count_fds(&ns0, &all0);
    t0 = now_ms();
    const char *m[] = {"a", "b", NULL};
    int bad = 0;
    for (int i = 0; i < 100; i++) {
        fy_jobnet *jn = NULL;
        if (fy_jobnet_new(m, &jn, NULL) < 0) {
            bad++;
            continue;
        }
        fy_prepared *pa = prepare(jn, "a", NULL, P " icmp 100.80.0.2 >/dev/null 2>&1; exit 0");
        fy_prepared *pb = prepare(jn, "b", NULL, "exit 0");
        fy_handle *ha = start(pa, "a"), *hb = start(pb, "b");
        char *ja = NULL, *jb = NULL;
        finish(ha, &ja);
        finish(hb, &jb);
        if (!ja || !jb || !strstr(ja, "\"link_left\": 0") || !strstr(jb, "\"link_left\": 0"))
            bad++;
        free(ja);
        free(jb);
        uint64_t left = 1;
        fy_jobnet_free(jn); /* (removes it: nothing runs) */
        (void)left;
        fy_prepared_free(pa);
        fy_prepared_free(pb);
    }
    double job = (now_ms() - t0) / 100;
    printf("timing: a job network of two members (new, 2 prepares, 2 starts and waits, free) %.1f ms; "
           "two plain deny attempts (2 prepares, starts and waits) %.1f ms\n", job, plain);
    /* (The last deletions' threads close their own socket and namespace fd
     * once the kernel has returned: tens of ms after the witness.) */
    for (int k = 0; k < 500; k++) { /* (10 s: the kernel's lock may be busy) */
        count_fds(&ns1, &all1);
        if (ns1 == ns0 && all1 == all0)
            break;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    CHECK(bad == 0, "%d of 100 job networks failed or left a link", bad);
    CHECK(ns1 == ns0 && all1 == all0, "after 100 job networks: %d network namespaces held (%d before), %d fds (%d)",
          ns1, ns0, all1, all0);
    if (bad == 0 && ns1 == ns0 && all1 == all0)
        OK("100 job networks of 2 members: every link witnessed gone, no namespace or fd held");
}

/* Shutdown witnessed for a network that was used: the count a host sees. */
static void witnessed(void) {
    const char *m[] = {"a", NULL};
    fy_jobnet *jn = NULL;
    fy_jobnet_new(m, &jn, NULL);
    fy_prepared *pr = prepare(jn, "a", NULL, "exit 0");
    finish(start(pr, "a"), NULL);
    fy_prepared_free(pr);
    uint64_t v = 1;
    int left = fy_jobnet_shutdown(jn, NULL);
    CHECK(left == 0 && fy_jobnet_stat(jn, FY_JOBNET_LEFT, &v) == 0 && v == 0, "left %d / %llu", left,
          (unsigned long long)v);
    fy_jobnet_free(jn);
}

/* ---- a restricted member's allowlist and the job's own addresses ---- */

/* A destination inside the job's 100.80.0.0/24 would never reach the
 * allowlisted host: job0's connected route wins over the router's default
 * route, so the member's connection goes to the member of that address.
 * Refused at prepare, where it is (root's router and the helper's alike);
 * a sandbox that is no member may name it. */
static void overlap(void) {
    const char *m[] = {"fetcher", "runner", NULL};
    fy_jobnet *jn = NULL;
    CHECK(fy_jobnet_new(m, &jn, NULL) == 0, "jobnet_new");
    /* (Addresses of the job's network, and a member's name, which the
     * member's /etc/hosts gives its job address: under fetch-only too,
     * whose proxy, outside the job, would reach what the host has there.
     * Fetch-only takes no CIDR blocks.) */
    const char *hosts[] = {"100.80.0.2", "runner", "RUNNER", "100.80.0.0/16", "100.80.0.0/25"};
    const char *argv[] = {"/bin/true", NULL};
    for (int fetch = 0; fetch < 2; fetch++)
        for (size_t i = 0; jn && i < sizeof(hosts) / sizeof(hosts[0]) - (fetch ? 2 : 0); i++) {
            fy_policy *p = member_policy("fetcher", NULL);
            fy_error *e = NULL;
            fy_prepared *pr = NULL;
            int r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e);
            if (r >= 0)
                r = fy_policy_add_destination(p, hosts[i], FY_PROTO_TCP, 8080, 8080, &e);
            if (r >= 0)
                r = fy_policy_set_network(p, fetch ? FY_NET_FETCH_ONLY : FY_NET_RESTRICTED, &e);
            if (r >= 0)
                r = fy_prepare_member(p, caps, argv, jn, &pr, &e);
            char what[128];
            snprintf(what, sizeof(what), "a %s member's destination %s (the job's network)",
                     fetch ? "fetch-only" : "restricted", hosts[i]);
            CHECK(!e || strstr(fy_error_message(e), "job network"), "%s: refused for another reason: %s", what,
                  fy_error_message(e));
            expect(r, e, FY_E_POLICY, "$.network.destinations[1].host", what);
            fy_prepared_free(pr);
            fy_policy_free(p);
        }
    fy_policy *p = member_policy(NULL, NULL);
    fy_error *e = NULL;
    fy_prepared *pr = NULL;
    int r = fy_policy_add_destination(p, "100.80.0.2", FY_PROTO_TCP, 8080, 8080, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_RESTRICTED, &e);
    if (r >= 0)
        r = fy_prepare(p, caps, argv, &pr, &e);
    CHECK(r == 0, "a sandbox that is no member, destination 100.80.0.2: %s", fy_error_message(e));
    if (r == 0)
        OK("a sandbox that is no job member may name 100.80.0.2");
    fy_error_free(e);
    fy_prepared_free(pr);
    fy_policy_free(p);
    fy_jobnet_free(jn);
}

/* ---- a member started again while its peer runs ---- */

/* srv is cancelled and started again while cli runs; cli, which reached
 * srv before (so its neighbour entries for srv's IPv4 and IPv6 addresses
 * are fresh), must reach the new attempt at once. Each attempt's job0 has
 * the MAC address of its member index, so those entries stay right; with a
 * new MAC per attempt the peer kept sending to the old one for 15-45 s. */
static void restart(void) {
    char sdir[4096], cdir[4096], ready1[4200], ready2[4200], phase[4200], go[4200];
    snprintf(sdir, sizeof(sdir), "%s/restart-srv", out_dir);
    snprintf(cdir, sizeof(cdir), "%s/restart-cli", out_dir);
    mkdir(sdir, 0777);
    mkdir(cdir, 0777);
    chmod(sdir, 0777); /* (whatever the umask: the sandbox's uid writes there) */
    chmod(cdir, 0777);
    snprintf(ready1, sizeof(ready1), "%s/ready1", sdir);
    snprintf(ready2, sizeof(ready2), "%s/ready2", sdir);
    snprintf(phase, sizeof(phase), "%s/phase1", cdir);
    snprintf(go, sizeof(go), "%s/go", cdir);
    unlink(ready1);
    unlink(ready2);
    unlink(phase);
    unlink(go);
    const char *m[] = {"srv", "cli", NULL};
    fy_jobnet *jn = NULL;
    CHECK(fy_jobnet_new(m, &jn, NULL) == 0, "jobnet_new");
    if (!jn)
        return;
    fy_prepared *s1 = prepare(jn, "srv", sdir, "exec python3 /opt/fyprobe/serve.py /work/output/ready1 100");
    fy_handle *hs1 = start(s1, "srv");
    CHECK(wait_file(ready1, 30), "srv's server did not start");
    /* cli: srv over IPv4 and IPv6 (bounded); then, once told srv was
     * started again, the same within 5 s of being told (every wait of its
     * own bounded). */
    fy_prepared *c = prepare(jn, "cli", cdir,
                             "A=$(" P " resolve srv) || exit 10; B=$(" P " resolve6 srv) || exit 10; i=0; "
                             "until " P " tcp \"$A\" 8080 >/dev/null && " P " tcp \"$B\" 8080 >/dev/null; do "
                             "i=$((i + 1)); [ $i -lt 20 ] || exit 11; sleep 0.1; done; "
                             ": >/work/output/phase1; i=0; "
                             "until [ -e /work/output/go ]; do i=$((i + 1)); [ $i -lt 600 ] || exit 12; sleep 0.1; "
                             "done; t0=$(date +%s%N); "
                             "until " P " tcp \"$A\" 8080 >/dev/null && " P " tcp \"$B\" 8080 >/dev/null; do "
                             "[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000 ] || exit 13; sleep 0.1; done; "
                             "echo \"cli: srv reached $(( ($(date +%s%N) - t0) / 1000000 )) ms after its restart\"");
    fy_handle *hc = start(c, "cli");
    CHECK(wait_file(phase, 30), "cli did not reach srv before its restart");
    if (hs1)
        fy_handle_cancel(hs1, FY_CANCEL_USER, NULL);
    finish(hs1, NULL);
    fy_prepared *s2 = prepare(jn, "srv", sdir, "exec python3 /opt/fyprobe/serve.py /work/output/ready2 100");
    fy_handle *hs2 = start(s2, "srv (again)");
    CHECK(wait_file(ready2, 30), "srv's server did not start again");
    int fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    int code = finish(hc, NULL);
    CHECK(code == 0,
          "cli exited %d (10: srv's names; 11: srv not reached before its restart; 12: never told; 13: srv not "
          "reached within 5 s of its restart)",
          code);
    if (code == 0)
        OK("a member started again is reached by a running peer at once (IPv4 and IPv6): same MAC per member");
    if (hs2)
        fy_handle_cancel(hs2, FY_CANCEL_USER, NULL);
    finish(hs2, NULL);
    int left = fy_jobnet_shutdown(jn, NULL);
    CHECK(left == 0, "restart: shutdown left %d", left);
    fy_prepared_free(s1);
    fy_prepared_free(s2);
    fy_prepared_free(c);
    fy_jobnet_free(jn);
}

/* ---- as uid 65534 through the privileged helper (test-net-helper.sh) ---- */

/* db (deny) and a fetch-only member in one job whose network is the
 * helper's; a fetch-only member of another job (its own proxy working)
 * reaches nothing of the first, directly or through its proxy; the host
 * program's namespace does not reach db; everything removed, witnessed. */
static void helper_job(void) {
    char ready[4096];
    snprintf(ready, sizeof(ready), "%s/ready", out_dir);
    unlink(ready);
    const char *ma[] = {"db", "proxied", NULL}, *mb[] = {"x", "intruder", NULL};
    fy_jobnet *a = NULL, *b = NULL;
    CHECK(fy_jobnet_new(ma, &a, NULL) == 0 && fy_jobnet_new(mb, &b, NULL) == 0, "jobnet_new");
    fy_prepared *db = prepare(a, "db", out_dir, "exec python3 /opt/fyprobe/serve.py /work/output/ready 100");
    fy_handle *hdb = start(db, "db");
    CHECK(wait_file(ready, 30), "db's server did not start");
    fetch_member(a, true);
    /* Another job's fetch-only member: its proxy answers for its own
     * allowlist (so what fails below fails for the job's separation, not a
     * broken network), and nothing of job A answers it, directly or
     * through the proxy. */
    fy_policy *p = member_policy("intruder", NULL);
    fy_error *e = NULL;
    int r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_FETCH_ONLY, &e);
    const char *av[] = {"/bin/sh", "-c",
                        P " proxy 198.51.100.1 8080 || exit 29; "
                        "! " P " tcp 100.80.0.1 8080 || exit 30; ! " P " udp 100.80.0.1 9090 || exit 31; "
                        "! " P " proxy 100.80.0.1 8080 || exit 33; ! " P " resolve db || exit 34; "
                        "! " P " tcp fd66:7973:2::1 8080 || exit 35; ! " P " udp fd66:7973:2::1 9090 || exit 36; "
                        "! " P " resolve6 db || exit 37; exit 0",
                        NULL};
    fy_prepared *intr = NULL;
    if (r >= 0)
        r = fy_prepare_member(p, caps, av, b, &intr, &e);
    CHECK(r >= 0, "prepare intruder: %s", fy_error_message(e));
    fy_error_free(e);
    fy_policy_free(p);
    int code = finish(start(intr, "intruder"), NULL);
    CHECK(code == 0,
          "intruder (fetch-only, another job) exited %d: its own proxy failed (29), it reached job A directly (30-31, "
          "35-36: IPv6), through its proxy (33) or resolved its name (34, 37)",
          code);
    if (code == 0)
        OK("a fetch-only member of another job reaches nothing of this one (TCP, UDP, through its proxy, by name)");
    CHECK(!host_reaches("100.80.0.1", 8080) && !host_reaches("fd66:7973:2::1", 8080),
          "the host program's namespace reached db's listener");
    if (!host_reaches("100.80.0.1", 8080) && !host_reaches("fd66:7973:2::1", 8080))
        OK("the host program's namespace does not reach db's listener (100.80.0.1:8080, [fd66:7973:2::1]:8080)");
    fy_handle_cancel(hdb, FY_CANCEL_USER, NULL);
    char *json = NULL;
    finish(hdb, &json);
    CHECK(json && strstr(json, "\"link_left\": 0") && strstr(json, "\"network_left\": 0"),
          "db's result has no job witness: %s", json ? json : "(none)");
    free(json);
    int left = fy_jobnet_shutdown(a, NULL), left_b = fy_jobnet_shutdown(b, NULL);
    CHECK(left == 0 && left_b == 0, "the helper's removal left %d and %d", left, left_b);
    if (left == 0 && left_b == 0)
        OK("both jobs' networks removed by the helper, witnessed (0 left)");
    fy_prepared_free(db);
    fy_prepared_free(intr);
    fy_jobnet_free(a);
    fy_jobnet_free(b);
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: test-jobnet root|rootless|helper PROBE_DIR OUT_DIR [UPLINK]\n");
        return 2;
    }
    probe_dir = argv[2];
    out_dir = argv[3];
    uplink = argc == 5 ? argv[4] : NULL;
    fy_error *e = NULL;
    if (fy_probe(0, &caps, &e) < 0) {
        printf("FAIL: probe: %s\n", fy_error_message(e));
        return 1;
    }
    if (strcmp(argv[1], "rootless") == 0) {
        const char *m[] = {"db", NULL};
        fy_jobnet *jn = NULL;
        fy_jobnet_new(m, &jn, NULL);
        fy_policy *p = member_policy("db", NULL);
        const char *av[] = {"/bin/true", NULL};
        fy_prepared *pr = NULL;
        expect(fy_prepare_member(p, caps, av, jn, &pr, &e), e, FY_E_UNSUPPORTED, "$.network.job",
               "a job network without root");
        fy_policy_free(p);
        fy_jobnet_free(jn);
    } else if (strcmp(argv[1], "helper") == 0) {
        helper_mode = true;
        overlap();
        helper_job();
    } else {
        bad_input();
        overlap();
        restart();
        job_networks();
        witnessed();
        hundred();
    }
    fy_caps_free(caps);
    printf(failed ? "FAILED\n" : "PASSED\n");
    return failed;
}
