/* The qualification suite (fy_qualify, `forgeyard test`): it passes on this
 * host, its JSON report holds every probe with its evidence, and its probes
 * fail when the protection they check is taken away: a host-only directory
 * bound into the sandbox, the host network, a writable host directory
 * shared between attempts. */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include <forgeyard/sandbox.h>

#include "qualify.h" /* the internal entry point and its probe groups */

static const char *const all_ids[] = {
    "baseline",
    "stage-attribution.isolation", "stage-attribution.filesystem", "stage-attribution.exec",
    "stage-attribution.output", "stage-attribution.cleanup",
    "leakage.after-success", "leakage.after-failure", "leakage.after-cancel",
    "escape.host-path", "escape.loopback-listener", "escape.control-sockets",
    "escape.mount", "escape.mknod", "escape.ptrace", "escape.userns", "escape.module", "escape.kexec",
    "residue.after-cancel", "residue.after-restart",
};

static json_t *probe(json_t *report, const char *id) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(report, "probes"), i, p)
        if (strcmp(json_string_value(json_object_get(p, "id")), id) == 0)
            return p;
    return NULL;
}

static bool passed(json_t *report, const char *id) {
    json_t *p = probe(report, id);
    ck_assert_msg(p, "no probe %s in the report", id);
    return json_is_true(json_object_get(p, "passed"));
}

static char *dump(json_t *j) { return json_dumps(j, JSON_INDENT(1)); }

/* A directory of this test, readable by the sandbox's uid. */
static char *test_dir(void) {
    char *d = strdup("/tmp/fyq-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    ck_assert_int_eq(chmod(d, 0755), 0);
    return d;
}

static void remove_dir(const char *d) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    ck_assert_int_eq(system(cmd), 0);
}

static fy_policy *release(void) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    return p;
}

/* ---- the whole suite, through the public API ---- */

/* Whether every probe doc failed is a timing attribution (a stage's
 * injected delay seen elsewhere: a loaded host's noise, not a defect). */
static bool only_timing_failed(json_t *doc) {
    json_t *probes = json_object_get(doc, "probes"), *pr;
    size_t i;
    json_array_foreach(probes, i, pr) {
        const char *id = json_string_value(json_object_get(pr, "id"));
        if (!json_is_true(json_object_get(pr, "passed")) && (!id || strncmp(id, "stage-attribution.", 18) != 0))
            return false;
    }
    return true;
}

START_TEST(test_suite_passes_here) {
    fy_qualify_report *r = NULL;
    fy_error *e = NULL;
    char *text = NULL;
    json_t *doc = NULL;
    json_error_t jerr;
    /* (up to three runs where only the timing attribution failed: the
     * suite's three lanes load both CPUs) */
    for (int run = 0; run < 3; run++) {
        if (r) {
            json_decref(doc);
            fy_free(text);
            fy_qualify_report_free(r);
            r = NULL;
        }
        int rc = fy_qualify(NULL, 0, &r, &e);
        ck_assert_msg(rc == 0, "fy_qualify: %s", fy_error_message(e));
        ck_assert_int_eq(fy_qualify_to_json(r, &text, NULL), 0);
        doc = json_loads(text, 0, &jerr);
        ck_assert_msg(doc, "the report is not JSON: %s", jerr.text);
        if (fy_qualify_passed(r) || !only_timing_failed(doc))
            break;
    }
    if (!fy_qualify_passed(r))
        fprintf(stderr, "%s\n", text);
    ck_assert_int_eq(fy_qualify_passed(r), 1);
    ck_assert(json_is_true(json_object_get(doc, "passed")));
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "suite_version")), FY_QUALIFY_SUITE_VERSION);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "library")), fy_version_string());
    ck_assert_str_eq(json_string_value(json_object_get(doc, "backend")), "linux-namespace");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "level")), "namespace");
    ck_assert(json_is_object(json_object_get(doc, "isolation")));
    ck_assert(json_is_array(json_object_get(json_object_get(doc, "isolation"), "namespaces")));
    json_int_t usec = json_integer_value(json_object_get(doc, "duration_usec"));
    fprintf(stderr, "qualification: %zu probes in %lld ms\n", json_array_size(json_object_get(doc, "probes")),
            (long long)usec / 1000);
    ck_assert_int_gt(usec, 0);
    ck_assert_int_lt(usec, 60000000); /* not minutes (under ASan, on a loaded host, too) */
    /* Every probe, with evidence; the accessors agree with the JSON. */
    ck_assert_int_eq(fy_qualify_probe_count(r), (int)json_array_size(json_object_get(doc, "probes")));
    for (size_t i = 0; i < sizeof(all_ids) / sizeof(all_ids[0]); i++) {
        json_t *p = probe(doc, all_ids[i]);
        ck_assert_msg(p, "no probe %s", all_ids[i]);
        ck_assert_msg(json_object_size(json_object_get(p, "evidence")) > 0, "%s has no evidence", all_ids[i]);
        ck_assert(json_is_string(json_object_get(p, "name")));
    }
    for (uint32_t i = 0; i < (uint32_t)fy_qualify_probe_count(r); i++) {
        json_t *p = json_array_get(json_object_get(doc, "probes"), i);
        ck_assert_str_eq(fy_qualify_probe_id(r, i), json_string_value(json_object_get(p, "id")));
        ck_assert_str_eq(fy_qualify_probe_summary(r, i), json_string_value(json_object_get(p, "summary")));
        ck_assert_int_eq(fy_qualify_probe_passed(r, i), 1);
    }
    /* The evidence is the observation, not just a verdict. */
    json_t *ev = json_object_get(probe(doc, "escape.host-path"), "evidence");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "inside")), "ENOENT");
    ev = json_object_get(probe(doc, "escape.loopback-listener"), "evidence");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "inside")), "ECONNREFUSED");
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "accepted")), 0);
    ev = json_object_get(probe(doc, "escape.mount"), "evidence");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "denial")), "violation: syscall mount");
    ev = json_object_get(probe(doc, "escape.mknod"), "evidence");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "denial")), "EPERM");
    ev = json_object_get(probe(doc, "stage-attribution.filesystem"), "evidence");
    ck_assert_int_ge(json_integer_value(json_object_get(json_object_get(ev, "stage_usec"), "filesystem")),
                     json_integer_value(json_object_get(ev, "delay_usec")));
    ev = json_object_get(probe(doc, "residue.after-restart"), "evidence");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ev, "gc"), "destroyed")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ev, "after_gc"), "records")), 0);
    /* Nothing of its attempts needed cleaning up by the suite itself. */
    json_t *sc = json_object_get(doc, "suite_cleanup");
    ck_assert_int_eq(json_integer_value(json_object_get(sc, "records_left")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(sc, "cgroups_removed")), 0);
    /* It cleans up after itself: its directory is gone. */
    char dir[256];
    snprintf(dir, sizeof(dir), "%s", json_string_value(json_object_get(
                                        json_object_get(probe(doc, "escape.host-path"), "evidence"), "path")));
    *strstr(dir, "/host-only/") = '\0';
    ck_assert_int_eq(strncmp(dir, "/tmp/forgeyard-qualify-", 23), 0);
    ck_assert_int_eq(access(dir, F_OK), -1);
    json_decref(doc);
    fy_free(text);
    fy_qualify_report_free(r);
}
END_TEST

START_TEST(test_api_contract) {
    fy_qualify_report *r = (fy_qualify_report *)1;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_qualify(NULL, 1, &r, &e), FY_E_INVAL);
    ck_assert_ptr_null(r);
    fy_error_free(e);
    ck_assert_int_eq(fy_qualify(NULL, 0, NULL, NULL), FY_E_INVAL);
    /* A policy this host cannot satisfy (a confidential VM: no backend
     * gives one; high-assurance runs in a VM here now that fy_prepare
     * without capabilities probes the VM backends for it): refused,
     * nothing run. */
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_HIGH_ASSURANCE, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_isolation(p, FY_LEVEL_CONFIDENTIAL_VM, FY_LEVEL_CONFIDENTIAL_VM, NULL), 0);
    e = NULL;
    ck_assert_int_eq(fy_qualify(p, 0, &r, &e), FY_E_UNSUPPORTED);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(fy_error_code(e), FY_E_UNSUPPORTED);
    fy_error_free(e);
    fy_policy_free(p);
    /* A policy made in another process: refused by core before any
     * folder's suite runs (nothing made under /tmp, no attempt). */
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, NULL), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        fy_qualify_report *cr = (fy_qualify_report *)1;
        json_t *rep = (json_t *)1;
        _exit(fy_qualify(p, 0, &cr, NULL) == FY_E_FORKED && !cr &&
                      qualify_run(p, QUALIFY_ESCAPE, NULL, NULL, &rep, NULL) == FY_E_FORKED && !rep
                  ? 0
                  : 1);
    }
    int st = -1;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child's qualify was not refused (status %d)", st);
    fy_policy_free(p);
    /* NULL reports. */
    ck_assert_int_eq(fy_qualify_passed(NULL), 0);
    ck_assert_int_eq(fy_qualify_probe_count(NULL), FY_E_INVAL);
    ck_assert_ptr_null(fy_qualify_probe_id(NULL, 0));
    ck_assert_ptr_null(fy_qualify_probe_summary(NULL, 0));
    ck_assert_int_eq(fy_qualify_probe_passed(NULL, 0), FY_E_INVAL);
    char *json = NULL;
    ck_assert_int_eq(fy_qualify_to_json(NULL, &json, NULL), FY_E_INVAL);
    fy_qualify_report_free(NULL);
}
END_TEST

/* ---- each protection removed: its probe fails ---- */

/* The probe's host-only file lives under tmp_parent; binding tmp_parent at
 * the same path makes it visible, and the probe must say so. */
START_TEST(test_escape_detects_a_visible_host_path) {
    char *d = test_dir();
    fy_policy *p = release();
    ck_assert_int_eq(fy_policy_add_bind(p, d, d, FY_BIND_READ_ONLY, NULL), 0);
    json_t *rep = NULL;
    fy_error *e = NULL;
    int rc = qualify_run(p, QUALIFY_ESCAPE, d, NULL, &rep, &e);
    ck_assert_msg(rc == 0, "qualify: %s", fy_error_message(e));
    char *s = dump(rep);
    ck_assert_msg(!passed(rep, "escape.host-path"), "escape.host-path passed with the directory bound: %s", s);
    json_t *ev = json_object_get(probe(rep, "escape.host-path"), "evidence");
    ck_assert(json_is_true(json_object_get(ev, "content_read")));
    ck_assert_str_eq(json_string_value(json_object_get(ev, "inside")), "read");
    ck_assert(json_is_false(json_object_get(rep, "passed")));
    /* The others still hold, so the failure is this probe's own finding. */
    ck_assert_msg(passed(rep, "escape.loopback-listener"), "%s", s);
    ck_assert_msg(passed(rep, "escape.mount") && passed(rep, "escape.ptrace"), "%s", s);
    free(s);
    json_decref(rep);
    fy_policy_free(p);
    remove_dir(d);
    free(d);
}
END_TEST

/* The host network: the probe's own 127.0.0.1 listener gets a connection. */
START_TEST(test_escape_detects_the_host_network) {
    fy_policy *p = NULL; /* release forbids the host network: standard-ci */
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    const char *allow = "{\"network\": {\"mode\": \"allow\", \"destinations\": []}, "
                        "\"isolation\": {\"controls\": {\"netns\": \"off\"}}}";
    fy_error *e = NULL;
    ck_assert_msg(fy_policy_load_json(p, allow, strlen(allow), &e) == 0, "%s", fy_error_message(e));
    json_t *rep = NULL;
    ck_assert_int_eq(qualify_run(p, QUALIFY_ESCAPE, NULL, NULL, &rep, NULL), 0);
    char *s = dump(rep);
    ck_assert_msg(!passed(rep, "escape.loopback-listener"), "passed on the host network: %s", s);
    json_t *ev = json_object_get(probe(rep, "escape.loopback-listener"), "evidence");
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "accepted")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "inside")), "connected");
    ck_assert_msg(passed(rep, "escape.host-path"), "%s", s);
    free(s);
    json_decref(rep);
    fy_policy_free(p);
}
END_TEST

/* Another local user (uid 65534) who reads the probe's command line
 * (/proc/PID/cmdline is readable by all) and connects to its host
 * listeners itself turned both probes red, blaming the sandbox: those
 * connections are told apart by their peer's uid, and the probes pass. */
static const char poker[] =
    "import os, re, socket, sys, time\n"
    "deadline, done = time.time() + 60, set()\n"
    "while time.time() < deadline and len(done) < 2:\n"
    "    for pid in os.listdir('/proc'):\n"
    "        try: cmd = open('/proc/%s/cmdline' % pid, 'rb').read().decode('utf-8', 'replace')\n"
    "        except OSError: continue\n"
    "        if 'host-path-proc1' not in cmd: continue\n"
    "        m = re.search(r\"\\}' (\\d+)\\n\", cmd)\n"
    "        if m and 'tcp' not in done:\n"
    "            try: socket.create_connection(('127.0.0.1', int(m.group(1))), 1); done.add('tcp')\n"
    "            except OSError: pass\n"
    "        for p in re.findall(r'(/\\S*forgeyard-qualify-\\w+/control\\.sock)', cmd):\n"
    "            try: s = socket.socket(socket.AF_UNIX); s.connect(p); done.add('unix')\n"
    "            except OSError: pass\n"
    "    time.sleep(0.005)\n"
    "time.sleep(60)\n";

START_TEST(test_escape_not_failed_by_other_users) {
    if (geteuid() != 0 || access("/usr/bin/python3", X_OK) != 0)
        return;
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            _exit(1);
        execl("/usr/bin/python3", "python3", "-c", poker, (char *)NULL);
        _exit(1);
    }
    usleep(300000); /* (python's start) */
    json_t *rep = NULL;
    fy_policy *p = release();
    ck_assert_int_eq(qualify_run(p, QUALIFY_ESCAPE, NULL, NULL, &rep, NULL), 0);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    json_t *ev = json_object_get(probe(rep, "escape.loopback-listener"), "evidence");
    json_t *uev = json_object_get(probe(rep, "escape.control-sockets"), "evidence");
    char *s = json_dumps(ev, JSON_COMPACT), *us = json_dumps(json_object_get(uev, "accepted_by_probe_socket"), 0);
    ck_assert_msg(passed(rep, "escape.loopback-listener") && passed(rep, "escape.control-sockets"), "%.300s / %s",
                  s, us);
    /* (the other user did connect: the check is not empty) */
    ck_assert_msg(json_integer_value(json_object_get(ev, "accepted_from_other_users")) +
                          json_integer_value(json_object_get(uev, "accepted_from_other_users")) >= 1,
                  "the other user reached neither listener: %.300s", s);
    free(s);
    free(us);
    json_decref(rep);
    fy_policy_free(p);
}
END_TEST

/* A writable host directory shared by every attempt: what one attempt
 * plants there, the next one sees. The probe plants there too (besides
 * /tmp, which stays private) and must report the leak. */
START_TEST(test_leakage_detects_a_shared_directory) {
    char *d = test_dir();
    if (getuid() == 0)
        ck_assert_int_eq(chown(d, 100001, 100001), 0); /* the workload's host uid */
    fy_policy *p = release();
    ck_assert_int_eq(fy_policy_add_bind(p, d, "/opt/shared", FY_BIND_WRITABLE, NULL), 0);
    const char *const dirs[] = {"/tmp", "/opt/shared", NULL};
    json_t *rep = NULL;
    fy_error *e = NULL;
    int rc = qualify_run(p, QUALIFY_LEAKAGE, NULL, dirs, &rep, &e);
    ck_assert_msg(rc == 0, "qualify: %s", fy_error_message(e));
    char *s = dump(rep);
    static const char *const ids[] = {"leakage.after-success", "leakage.after-failure", "leakage.after-cancel"};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_msg(!passed(rep, ids[i]), "%s passed with a shared directory: %s", ids[i], s);
        json_t *ev = json_object_get(probe(rep, ids[i]), "evidence");
        json_t *seen = json_object_get(json_object_get(ev, "later_attempt"), "files_seen");
        ck_assert_int_eq(json_array_size(seen), 1);
        ck_assert_str_eq(json_string_value(json_array_get(seen, 0)), "/opt/shared");
        /* The daemon did not survive: the verdict names the file only. */
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ev, "later_attempt"),
                                                            "marker_processes_seen")), 0);
    }
    free(s);
    json_decref(rep);
    fy_policy_free(p);
    remove_dir(d);
    free(d);
}
END_TEST

int main(void) {
    Suite *s = suite_create("qualify");
    TCase *tc = tcase_create("qualify");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_suite_passes_here);
    tcase_add_test(tc, test_api_contract);
    tcase_add_test(tc, test_escape_detects_a_visible_host_path);
    tcase_add_test(tc, test_escape_detects_the_host_network);
    tcase_add_test(tc, test_escape_not_failed_by_other_users);
    tcase_add_test(tc, test_leakage_detects_a_shared_directory);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
