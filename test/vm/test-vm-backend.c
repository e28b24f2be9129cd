/* The virtual-machine backend (lib/vm), end to end under TCG: every test
 * boots a real QEMU microvm with the Debian kernel and the guest agent, and
 * asserts the typed result. Skipped (77) only where QEMU or the guest
 * kernel is absent, and says so.
 *
 *   test-vm-backend BAD_AGENT     (a static agent built with misbehaviours)
 *
 * The kernel/initramfs cache is a directory of this run (FORGEYARD_VM_CACHE),
 * removed at the end. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>
#include <jansson.h>

static char scratch[64];
static char cache[128];
static const char *bad_agent;
static const char *attack; /* fy-attack (test/linux), or NULL */
static fy_caps *caps;

/* ---- helpers ---- */

struct cap {
    char buf[2][65536];
    size_t len[2];
    bool ended[2];
    fy_handle *cancel_on; /* cancel once "started" was printed */
};

static void on_output(void *ud, uint32_t stream, const void *data, size_t len) {
    struct cap *c = ud;
    int i = stream == FY_STDOUT ? 0 : 1;
    if (!data) {
        c->ended[i] = true;
        return;
    }
    size_t room = sizeof(c->buf[i]) - 1 - c->len[i];
    if (len > room)
        len = room;
    memcpy(c->buf[i] + c->len[i], data, len);
    c->len[i] += len;
    c->buf[i][c->len[i]] = '\0';
}

static fy_policy *vm_policy(void) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_HIGH_ASSURANCE, &p, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 256u << 20, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 120 * 1000000ull, &e), 0);
    return p;
}

/* run() starts in a pre-started clone (fy_shells_new, one made for the
 * attempt) when set: a test's same assertions through a clone (root). */
static bool run_in_clone;

static fy_result *run(fy_policy *p, const char *const *argv, struct cap *c, fy_handle **hp, int *prep_rc) {
    fy_error *e = NULL;
    if (c) {
        memset(c, 0, sizeof(*c));
        ck_assert_int_eq(fy_policy_set_stdio_callback(p, FY_STDOUT, on_output, c, &e), 0);
        ck_assert_int_eq(fy_policy_set_stdio_callback(p, FY_STDERR, on_output, c, &e), 0);
    }
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, caps, argv, &pr, &e);
    if (prep_rc) {
        *prep_rc = r;
        if (r < 0) {
            fy_error_free(e);
            return NULL;
        }
    }
    if (r < 0)
        ck_abort_msg("prepare: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "vm-qemu");
    fy_handle *h = NULL;
    fy_shells *sh = NULL;
    if (run_in_clone) {
        ck_assert_int_eq(fy_shells_new(pr, 1, 60 * 1000000ull, &sh, &e), 0);
        if (fy_shells_fill(sh, &e) != 1)
            ck_abort_msg("fill: %s", fy_error_message(e));
    }
    if (fy_start_shell(pr, sh, &h, &e) < 0)
        ck_abort_msg("start: %s", fy_error_message(e));
    fy_shells_free(sh);
    fy_prepared_free(pr);
    if (hp)
        *hp = h;
    fy_result *res = NULL;
    for (;;) {
        int w = fy_handle_wait(h, 200000, &res, &e);
        if (w < 0)
            ck_abort_msg("wait: %s", fy_error_message(e));
        if (w == 1)
            break;
        if (c && c->cancel_on && strstr(c->buf[0], "started")) {
            fy_handle_cancel(h, FY_CANCEL_USER, NULL);
            c->cancel_on = NULL;
        }
    }
    fy_handle_free(h);
    return res;
}

static const char *detail(const fy_result *r) {
    const char *d = fy_result_detail(r);
    return d ? d : "(none)";
}

/* The result's "isolation" object (a new reference). */
static json_t *isolation(const fy_result *r) {
    char *j = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_result_to_json(r, &j, &e), 0);
    json_t *root = json_loads(j, 0, NULL);
    ck_assert_ptr_nonnull(root);
    fy_free(j);
    json_t *iso = json_incref(json_object_get(root, "isolation"));
    json_decref(root);
    ck_assert_ptr_nonnull(iso);
    return iso;
}

static const char *jstr(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static pid_t parent_of(pid_t pid) {
    char p[64], buf[1024];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    char *c = strrchr(buf, ')');
    int pp = 0;
    if (!c || sscanf(c + 2, "%*c %d", &pp) != 1)
        return 0;
    return pp;
}

/* How many QEMUs of this backend run below process `root` (their command
 * line names the control port fy.ctl and the kernel as the VMM's sandbox
 * sees it; QEMUs of other programs on this machine do not count), and
 * (attached, when not NULL) how many of them have something mounted at a
 * clone's /fy/mN/x stub in their mount namespace; (one, when not NULL) the
 * pid of one of them. */
static int qemus_below(pid_t root, int *attached, pid_t *one) {
    int n = 0;
    if (attached)
        *attached = 0;
    DIR *proc = opendir("/proc");
    struct dirent *de;
    while (proc && (de = readdir(proc))) {
        char p[300], buf[4096];
        snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t k = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (k <= 0 || !memmem(buf, (size_t)k, "name=fy.ctl", 11) || !memmem(buf, (size_t)k, "/fy/k/vmlinux", 13))
            continue;
        bool below = false;
        for (pid_t a = (pid_t)atoi(de->d_name); a > 1; a = parent_of(a))
            below |= a == root;
        if (!below)
            continue;
        n++;
        if (one)
            *one = (pid_t)atoi(de->d_name);
        if (attached) {
            snprintf(p, sizeof(p), "/proc/%s/mountinfo", de->d_name);
            FILE *f = fopen(p, "re");
            char line[1024];
            bool seen = false;
            while (f && fgets(line, sizeof(line), f))
                seen |= strstr(line, "/x ") != NULL;
            if (f)
                fclose(f);
            *attached += seen;
        }
    }
    if (proc)
        closedir(proc);
    return n;
}

static bool our_qemu_running(void) { return qemus_below(getpid(), NULL, NULL) > 0; }

/* Nothing of an attempt is left: no attempt directory, no QEMU. */
static void assert_nothing_left(const fy_result *r) {
    for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_FILES; k++) {
        uint64_t n = 99;
        ck_assert_int_eq(fy_result_cleanup(r, k, &n), 0);
        ck_assert_msg(n == 0, "left %u: %llu", k, (unsigned long long)n);
    }
    char d[256];
    snprintf(d, sizeof(d), "%s/attempts", cache);
    DIR *dir = opendir(d);
    ck_assert_msg(dir || errno == ENOENT, "%s: %s", d, strerror(errno)); /* none made yet: none left */
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        ck_assert_msg(e->d_name[0] == '.', "attempt directory left: %s", e->d_name);
    if (dir)
        closedir(dir);
    ck_assert_msg(!our_qemu_running(), "a QEMU microvm of this backend is still running");
    /* No half-made template and no copy of one: the templates directory
     * holds its lock and complete entries only; this process holds no
     * attempt file (memfd) and no socket of an attempt. */
    snprintf(d, sizeof(d), "%s/templates", cache);
    dir = opendir(d);
    while (dir && (e = readdir(dir)))
        ck_assert_msg(strncmp(e->d_name, ".build-", 7) && strncmp(e->d_name, ".state-", 7),
                      "template build left: %s", e->d_name);
    if (dir)
        closedir(dir);
    dir = opendir("/proc/self/fd");
    while ((e = readdir(dir))) {
        char l[256], t[256];
        snprintf(l, sizeof(l), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(l, t, sizeof(t) - 1);
        t[n > 0 ? n : 0] = '\0';
        ck_assert_msg(!strstr(t, "fy-vm-files") && !strstr(t, "templates/"), "an attempt's file is still open: %s", t);
    }
    closedir(dir);
}

/* The fd of this process's sealed template copy (vm-template.h; kept for
 * the process's life, at most two), or -1. */
static int sealed_copy_fd(int after) {
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    int fd = -1;
    while ((e = readdir(dir))) {
        char l[256], t[256];
        snprintf(l, sizeof(l), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(l, t, sizeof(t) - 1);
        t[n > 0 ? n : 0] = '\0';
        if (!strncmp(t, "/memfd:fy-vm-template", 21) && atoi(e->d_name) > after && atoi(e->d_name) != dirfd(dir)) {
            fd = atoi(e->d_name);
            break;
        }
    }
    closedir(dir);
    return fd;
}

static int count_fds(void) {
    int n = 0;
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(dir))) {
        char l[256], t[256];
        snprintf(l, sizeof(l), "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(l, t, sizeof(t) - 1);
        t[k > 0 ? k : 0] = '\0';
        n += e->d_name[0] != '.' && strncmp(t, "/memfd:fy-vm-template", 21) != 0;
    }
    closedir(dir);
    return n;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* ---- tests ---- */

static char template_key[65], template_sha[65];

/* The contract, cold or restored from a template: the same results. */
static void exit_streams_env_net(bool cold) {
    if (cold)
        setenv("FORGEYARD_VM_TEMPLATE", "off", 1);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    char in[128];
    snprintf(in, sizeof(in), "%s/stdin", scratch);
    FILE *f = fopen(in, "we");
    fputs("from-stdin\n", f);
    fclose(f);
    int fd = open(in, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDIN, FY_STDIO_FD, fd, NULL, &e), 0);
    close(fd);
    ck_assert_int_eq(fy_policy_set_env(p, "GREETING", "hi there", &e), 0);
    /* A host file outside every approved path, and the host's processes:
     * neither is visible in the guest. */
    char secret[128];
    snprintf(secret, sizeof(secret), "%s/secret", scratch);
    close(open(secret, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ck_assert_int_eq(fy_policy_set_env(p, "SECRET", secret, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_NOFILE, 123, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "cat; echo \"out $GREETING uid=$(id -u) pwd=$PWD host=$(hostname)\"; "
                          "echo \"net: $(ls /sys/class/net | tr '\\n' ' ')\"; "
                          "for f in /etc/shadow \"$SECRET\"; do [ -e \"$f\" ] && echo \"HOST-FILE-VISIBLE $f\"; done; "
                          "echo \"pid1: $(tr '\\0' ' ' </proc/1/cmdline) host-procs: "
                          "$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'test-vm-backen[d]')\"; "
                          "echo \"nofile=$(ulimit -n)\"; echo to-stderr >&2; "
                          "(sleep 1000 &) ; exit 7",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    unsetenv("FORGEYARD_VM_TEMPLATE");
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_FAILED, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r));
    ck_assert_int_eq(fy_result_exit_code(r), 7);
    ck_assert_msg(strstr(c.buf[0], "from-stdin\n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "out hi there uid=1000 pwd=/work/build host=forgeyard"), "stdout: %s", c.buf[0]);
    /* Network deny: the guest has no device but the loopback. */
    ck_assert_msg(strstr(c.buf[0], "net: lo \n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "nofile=123\n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(!strstr(c.buf[0], "HOST-FILE-VISIBLE"), "stdout: %s", c.buf[0]);
    /* pid 1 is the agent; no process of the host (this test) is seen. */
    ck_assert_msg(strstr(c.buf[0], "pid1: /init  host-procs: 0\n"), "stdout: %s", c.buf[0]);
    ck_assert_str_eq(c.buf[1], "to-stderr\n");
    ck_assert(c.ended[0] && c.ended[1]);
    ck_assert_int_eq(fy_result_level(r), FY_LEVEL_VIRTUAL_MACHINE);
    json_t *iso = isolation(r);
    ck_assert(!strcmp(jstr(iso, "accelerator"), "tcg") || !strcmp(jstr(iso, "accelerator"), "kvm"));
    ck_assert_int_eq(strlen(jstr(json_object_get(iso, "kernel"), "vmlinux_sha256")), 64);
    ck_assert_int_eq(strlen(jstr(iso, "initramfs_sha256")), 64);
    ck_assert_msg(strstr(jstr(iso, "vmm_confinement"), "namespace sandbox"), "%s", jstr(iso, "vmm_confinement"));
    /* The agent's report of what it enforced in the guest. */
    ck_assert_msg(strstr(jstr(iso, "guest_report"), "uid=1000 gid=1000 cgroup=/w memory.max=268435456 "),
                  "%s", jstr(iso, "guest_report"));
    ck_assert_msg(strstr(jstr(iso, "guest_report"), "network-devices=lo "), "%s", jstr(iso, "guest_report"));
    /* Which boot it was, said plainly. */
    json_t *tm = json_object_get(iso, "template");
    if (cold) {
        ck_assert(json_is_null(tm));
        ck_assert_msg(!strncmp(jstr(iso, "boot"), "cold boot", 9), "%s", jstr(iso, "boot"));
    } else {
        ck_assert_msg(!strncmp(jstr(iso, "boot"), "template restore", 16), "%s", jstr(iso, "boot"));
        ck_assert_int_eq(strlen(jstr(tm, "key")), 64);
        ck_assert_int_eq(strlen(jstr(tm, "state_sha256")), 64);
        ck_assert(json_is_true(json_object_get(tm, "reseeded")));
        ck_assert_msg(strstr(jstr(tm, "inputs"), jstr(iso, "initramfs_sha256")), "%s", jstr(tm, "inputs"));
        ck_assert_msg(strstr(jstr(iso, "guest_report"), "RNG reseeded"), "%s", jstr(iso, "guest_report"));
    }
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}

START_TEST(test_exit_streams_env_net_cold) { exit_streams_env_net(true); }
END_TEST

START_TEST(test_exit_streams_env_net) { exit_streams_env_net(false); }
END_TEST

/* One template attempt; *out its stdout, the template's key and state
 * digest in the globals. */
static fy_result *template_run(const char *script, struct cap *c) {
    fy_policy *p = vm_policy();
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    fy_result *r = run(p, argv, c, NULL, NULL);
    fy_policy_free(p);
    json_t *iso = isolation(r);
    json_t *tm = json_object_get(iso, "template");
    ck_assert_msg(json_is_object(tm), "boot: %s", jstr(iso, "boot"));
    snprintf(template_key, sizeof(template_key), "%s", jstr(tm, "key"));
    snprintf(template_sha, sizeof(template_sha), "%s", jstr(tm, "state_sha256"));
    json_decref(iso);
    return r;
}

static const char *template_refused(const fy_result *r, bool *made) {
    static char why[512];
    json_t *iso = isolation(r);
    json_t *tm = json_object_get(iso, "template");
    snprintf(why, sizeof(why), "%s", json_string_value(json_object_get(tm, "refused_before")) ?
                                         json_string_value(json_object_get(tm, "refused_before")) : "");
    *made = json_is_true(json_object_get(tm, "made_by_this_attempt"));
    json_decref(iso);
    return why;
}

START_TEST(test_template_attempts_apart) {
    /* Two attempts restored from one template: neither sees the other's
     * files, their random bytes differ (the RNG was reseeded), the guest
     * clock is the host's, and nothing is left (no QEMU, no file, no fd). */
    const char *script = "for f in /tmp/mark /home/forgeyard/mark /work/build/mark; do [ -e $f ] && echo SEEN $f; done; "
                         "touch /tmp/mark /home/forgeyard/mark /work/build/mark; "
                         "echo rnd $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'); echo now $(date +%s)";
    struct cap c1, c2;
    fy_result *r1 = template_run(script, &c1);
    char key1[65], sha1[65];
    memcpy(key1, template_key, sizeof(key1));
    memcpy(sha1, template_sha, sizeof(sha1));
    int fds = count_fds();
    fy_result *r2 = template_run(script, &c2);
    ck_assert_int_eq(count_fds(), fds);
    ck_assert_msg(fy_result_outcome(r1) == FY_OUTCOME_SUCCEEDED && fy_result_outcome(r2) == FY_OUTCOME_SUCCEEDED,
                  "%s / %s", detail(r1), detail(r2));
    ck_assert_str_eq(key1, template_key);
    ck_assert_str_eq(sha1, template_sha);
    ck_assert_msg(!strstr(c1.buf[0], "SEEN") && !strstr(c2.buf[0], "SEEN"), "%s\n%s", c1.buf[0], c2.buf[0]);
    const char *a = strstr(c1.buf[0], "rnd "), *b = strstr(c2.buf[0], "rnd ");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_ge(strcspn(a, "\n"), 4 + 64);
    ck_assert_msg(strncmp(a, b, 4 + 64) != 0, "the same random bytes in two attempts: %s", a);
    for (int i = 0; i < 2; i++) {
        const char *n = strstr(i ? c2.buf[0] : c1.buf[0], "now ");
        ck_assert_ptr_nonnull(n);
        long long t = atoll(n + 4), host = (long long)time(NULL);
        ck_assert_msg(t > host - 120 && t <= host + 5, "guest clock %lld, host %lld", t, host);
    }
    assert_nothing_left(r1);
    assert_nothing_left(r2);
    fy_result_free(r1);
    fy_result_free(r2);
}
END_TEST

static void template_entry(char *buf, size_t len, const char *file) {
    snprintf(buf, len, "%s/templates/%s/%s", cache, template_key, file);
}

static const char *state_checked(const fy_result *r, uint64_t *verify_usec) {
    static char how[512];
    json_t *iso = isolation(r);
    json_t *tm = json_object_get(iso, "template");
    snprintf(how, sizeof(how), "%s", jstr(tm, "state_checked"));
    *verify_usec = (uint64_t)json_integer_value(json_object_get(tm, "verify_usec"));
    json_decref(iso);
    return how;
}

START_TEST(test_template_sealed_copy) {
    /* From the second check of a template in a process on, the bytes
     * hashed are kept in a memfd sealed against writing, growing and
     * shrinking; later attempts restore that copy without hashing the file
     * again, but only while the state file is the one it was checked
     * against: a file touched since (its change time) is hashed anew. */
    struct cap c;
    uint64_t us = 0;
    const char *how = NULL;
    for (int i = 0; i < 3; i++) {
        fy_result *r = template_run("echo ran", &c);
        ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s", detail(r));
        ck_assert_str_eq(c.buf[0], "ran\n");
        how = state_checked(r, &us);
        assert_nothing_left(r);
        fy_result_free(r);
    }
    ck_assert_msg(strstr(how, "sealed copy") && us == 0, "third attempt: %s (%llu us)", how, (unsigned long long)us);
    /* The copy cannot be changed, not even by this process. */
    int fd = sealed_copy_fd(-1);
    ck_assert_int_ge(fd, 0);
    int seals = fcntl(fd, F_GET_SEALS);
    ck_assert_int_eq(seals & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
                     F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    char p[64];
    snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
    int w = open(p, O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(w, 0);
    errno = 0;
    ck_assert_int_eq(pwrite(w, "x", 1, 4096), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(ftruncate(w, 4096), -1);
    ck_assert_int_eq(fcntl(w, F_ADD_SEALS, 0), -1); /* F_SEAL_SEAL: the seals stay */
    close(w);
    /* The file touched (same bytes, a new change time): hashed again. */
    char state[512];
    template_entry(state, sizeof(state), "state");
    struct stat st;
    ck_assert_int_eq(stat(state, &st), 0);
    ck_assert_int_eq(chmod(state, st.st_mode & 07777), 0);
    fy_result *r = template_run("echo ran", &c);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s", detail(r));
    how = state_checked(r, &us);
    ck_assert_msg(strstr(how, "recomputed by this attempt") && us > 0, "after a touch: %s", how);
    assert_nothing_left(r);
    fy_result_free(r);
}
END_TEST

START_TEST(test_template_corrupt_refused) {
    /* A template whose state was changed (one byte), truncated or
     * replaced under a manifest naming another key is refused by its
     * check, removed and made again; the attempt runs from the new one. */
    struct cap c;
    fy_result *r = template_run("true", &c);
    fy_result_free(r);
    char state[512], man[512];
    template_entry(state, sizeof(state), "state");
    template_entry(man, sizeof(man), "manifest");
    static const char *const want[] = {"state digest mismatch", "state: wrong size", "another key"};
    for (int how = 0; how < 3; how++) {
        if (how == 0) {
            int fd = open(state, O_WRONLY | O_CLOEXEC);
            ck_assert_int_ge(fd, 0);
            ck_assert_int_eq(pwrite(fd, "\x5a\xa5", 2, 4096), 2);
            close(fd);
        } else if (how == 1) {
            ck_assert_int_eq(truncate(state, 100000), 0);
        } else {
            char *t = slurp(man);
            ck_assert_ptr_nonnull(t);
            memcpy(t + 4, "0000", 4); /* "key 0000..." */
            FILE *f = fopen(man, "we");
            fputs(t, f);
            fclose(f);
            free(t);
        }
        r = template_run("echo ran", &c);
        ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s", detail(r));
        ck_assert_str_eq(c.buf[0], "ran\n");
        bool made = false;
        const char *why = template_refused(r, &made);
        ck_assert_msg(strstr(why, want[how]), "refused: \"%s\", wanted \"%s\"", why, want[how]);
        ck_assert(made);
        assert_nothing_left(r);
        fy_result_free(r);
    }
}
END_TEST

START_TEST(test_template_cache_refused) {
    /* A templates directory with the wrong mode or owner is refused: the
     * attempt does not start (typed), and nothing was used from it. */
    char d[256];
    snprintf(d, sizeof(d), "%s/templates", cache);
    mkdir(d, 0700);
    for (int how = 0; how < 2; how++) {
        if (how == 0)
            ck_assert_int_eq(chmod(d, 0755), 0);
        else
            ck_assert_int_eq(chown(d, 65534, 65534), 0);
        fy_policy *p = vm_policy();
        fy_error *e = NULL;
        const char *argv[] = {"/bin/true", NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        ck_assert_int_eq(fy_prepare(p, caps, argv, &pr, &e), 0);
        int rc = fy_start(pr, &h, &e);
        if (how == 0)
            chmod(d, 0700);
        else
            ck_assert_int_eq(chown(d, getuid(), getgid()), 0);
        ck_assert_int_eq(rc, FY_E_UNSAFE);
        ck_assert_ptr_null(h);
        ck_assert_msg(strstr(fy_error_message(e), how ? "wrong owner" : "wrong mode"), "%s", fy_error_message(e));
        fy_error_free(e);
        fy_prepared_free(pr);
        fy_policy_free(p);
        ck_assert_msg(!our_qemu_running(), "a QEMU runs after a refused start");
    }
}
END_TEST

START_TEST(test_secrets) {
    /* Environment and file secrets reach the guest; the value is nowhere in
     * the result, the attempt directory never holds it. */
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_secret(p, "token", FY_SECRET_ENV, "TOKEN", "s3cr3t-env", 10, &e), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "key", FY_SECRET_FILE, "key.txt", "s3cr3t-file", 11, &e), 0);
    ck_assert_int_eq(fy_policy_add_secret(p, "in", FY_SECRET_STDIN, NULL, "s3cr3t-stdin\n", 13, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "echo \"env=$TOKEN\"; echo \"file=$(cat /run/secrets/key.txt)\"; echo \"stdin=$(cat)\"; "
                          "stat -c '%a %u' /run/secrets/key.txt /run/secrets",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    ck_assert_str_eq(c.buf[0], "env=s3cr3t-env\nfile=s3cr3t-file\nstdin=s3cr3t-stdin\n400 1000\n500 1000\n");
    char *j = NULL;
    ck_assert_int_eq(fy_result_to_json(r, &j, &e), 0);
    ck_assert_ptr_null(strstr(j, "s3cr3t"));
    fy_free(j);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_attack_probes) {
    /* The attack suite's probes that matter for a VM, run in the guest as
     * the workload (uid 1000): each must be denied, with the exact error. */
    if (!attack)
        return;
    /* Listeners on the host's loopback that the guest must not reach. */
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(tcp, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(tcp, 4), 0);
    socklen_t al = sizeof(a);
    getsockname(tcp, (struct sockaddr *)&a, &al);
    int ab = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    const char *abname = "fy-vm-test-abstract";
    memcpy(u.sun_path + 1, abname, strlen(abname));
    ck_assert_int_eq(bind(ab, (struct sockaddr *)&u, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(abname))), 0);
    ck_assert_int_eq(listen(ab, 4), 0);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    /* The helper reaches the guest as a runtime path: a copy in a directory
     * of its own outside /tmp (the guest's /tmp is its own tmpfs, and the
     * build tree may be anywhere, /tmp included). */
    char dir[512], copy[600], script[2048];
    snprintf(dir, sizeof(dir), "/var/tmp/fy-vm-attack-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, 0755), 0);
    snprintf(copy, sizeof(copy), "%s/fy-attack", dir);
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", attack, copy, copy);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(fy_policy_add_runtime_path(p, dir, &e), 0);
    snprintf(script, sizeof(script),
             "A=%s; for t in 'read /etc/shadow' 'write /usr/fy-vm-probe' 'mount' 'remount' 'init_module' "
             "'finit_module' 'kexec' 'ptrace-init' 'settime' 'kill 1' 'tcp %d' 'abstract %s' "
             "'read /proc/1/mem' 'read /proc/1/environ' 'write /.fy-ctl' 'read /.fy-ctl' 'read /proc/kcore' "
             "'write /proc/sysrq-trigger' 'mknod' 'bpf' 'perf' 'userfaultfd' 'open_by_handle'; do "
             "$A $t; done; $A fds; "
             /* A module loaded on demand (a socket of a rare family): none. */
             "python3 -c 'import socket; socket.socket(5, socket.SOCK_DGRAM)' 2>/dev/null; "
             "grep -q '^appletalk ' /proc/modules && echo 'ok autoload appletalk' || echo 'denied autoload'; "
             "echo \"modules_disabled $(cat /proc/sys/kernel/modules_disabled)\"",
             copy, ntohs(a.sin_port), abname);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    close(tcp);
    close(ab);
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    static const char *const want[] = {
        "denied ENOENT /etc/shadow", "denied EROFS /usr/fy-vm-probe", "denied EPERM mount",
        "denied EPERM remount rw", "denied EPERM init_module", "denied EPERM finit_module",
        "denied EPERM kexec_load", "denied EPERM ptrace pid 1", "denied EPERM clock_settime",
        "denied EPERM kill", "denied ECONNREFUSED connect 127.0.0.1", "denied ECONNREFUSED",
        /* The agent (the guest's pid 1) and its control port, which the
         * workload must never reach: it would speak for the agent. */
        "denied EACCES /proc/1/mem", "denied EACCES /proc/1/environ", "denied EACCES /.fy-ctl",
        "denied ENOENT /.fy-ctl",
        /* The guest kernel's own surfaces that its sysctls close to uid 1000. */
        "denied EACCES /proc/kcore", "denied EACCES /proc/sysrq-trigger", "mknod block", "denied EPERM bpf",
        "perf_event_open", "denied EPERM userfaultfd", "denied EPERM open_by_handle_at",
        "fds 0 1 2\n", "denied autoload", "modules_disabled 1",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ck_assert_msg(strstr(c.buf[0], want[i]), "no \"%s\" in:\n%s", want[i], c.buf[0]);
    ck_assert_msg(!strstr(c.buf[0], "ok "), "a probe succeeded:\n%s", c.buf[0]);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* Source read-only in the guest (and untouched on the host); build and
 * output writable and returned, with digests; restored from a template or
 * booted cold, the same. */
static void workspace(bool cold) {
    char src[128], bld[128], out[128], path[256];
    const char *sfx = cold ? "-cold" : "";
    snprintf(src, sizeof(src), "%s/src%s", scratch, sfx);
    snprintf(bld, sizeof(bld), "%s/build%s", scratch, sfx);
    snprintf(out, sizeof(out), "%s/out%s", scratch, sfx);
    mkdir(src, 0755);
    mkdir(bld, 0755);
    mkdir(out, 0755);
    snprintf(path, sizeof(path), "%s/input.txt", src);
    FILE *f = fopen(path, "we");
    fputs("source-data\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/prev.txt", bld);
    f = fopen(path, "we");
    fputs("previous-build\n", f);
    fclose(f);
    /* The copy in keeps the host's modification time, nanoseconds
     * included (a copy stamped "now" made a stale object look newer than
     * its edited source to make in the guest). */
    struct timespec stamp[2] = {{1500000000, 123456789}, {1500000000, 123456789}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, stamp, 0), 0);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, &e), 0);
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    ck_assert_int_eq(fy_policy_set_output(p, out, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "cat /work/source/input.txt; cat /work/build/prev.txt; "
                          "stat -c 'mtime %Y %y' /work/build/prev.txt; "
                          "if touch /work/source/new 2>/dev/null; then echo SOURCE-WRITABLE; fi; "
                          "mkdir -p /work/output/sub && echo result > /work/output/sub/r.txt && "
                          "echo built > /work/build/obj.o && ln -s /etc/passwd /work/output/link && "
                          "echo old > /work/build/old.o && touch -d @1000000000.5 /work/build/old.o && "
                          "echo hard > /work/build/h1 && ln /work/build/h1 /work/build/h2 && "
                          "echo tabbed > \"$(printf '/work/build/a\\tb')\"",
                          NULL};
    struct cap c;
    if (cold)
        setenv("FORGEYARD_VM_TEMPLATE", "off", 1);
    fy_result *r = run(p, argv, &c, NULL, NULL);
    unsetenv("FORGEYARD_VM_TEMPLATE");
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    ck_assert_msg(strstr(c.buf[0], "source-data\nprevious-build\n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "mtime 1500000000 ") && strstr(c.buf[0], ".123456789"), "stdout: %s", c.buf[0]);
    ck_assert_msg(!strstr(c.buf[0], "SOURCE-WRITABLE"), "the source was writable in the guest");
    snprintf(path, sizeof(path), "%s/new", src);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/sub/r.txt", out);
    char *t = slurp(path);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t, "result\n");
    free(t);
    struct stat st;
    snprintf(path, sizeof(path), "%s/obj.o", bld);
    t = slurp(path);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t, "built\n");
    free(t);
    /* A name with a control character comes back (it refused the tree). */
    snprintf(path, sizeof(path), "%s/a\tb", bld);
    t = slurp(path);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t, "tabbed\n");
    free(t);
    /* Two names of one file in the guest are two names of one file here. */
    struct stat h1, h2;
    snprintf(path, sizeof(path), "%s/h1", bld);
    ck_assert_int_eq(stat(path, &h1), 0);
    snprintf(path, sizeof(path), "%s/h2", bld);
    ck_assert_int_eq(stat(path, &h2), 0);
    ck_assert_msg(h1.st_ino == h2.st_ino && h1.st_nlink == 2, "h1 and h2 came back as separate files");
    /* A file keeps the guest's modification time (not the host's "now"),
     * nanoseconds included (not whole seconds: make compares them). */
    snprintf(path, sizeof(path), "%s/old.o", bld);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mtim.tv_sec, 1000000000);
    ck_assert_int_eq(st.st_mtim.tv_nsec, 500000000);
    /* A symbolic link comes back as one, its target as the guest made it
     * (never followed by the host's reader). */
    snprintf(path, sizeof(path), "%s/link", out);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    char target[64];
    ssize_t tl = readlink(path, target, sizeof(target) - 1);
    ck_assert_int_eq(tl, 11);
    target[tl] = '\0';
    ck_assert_str_eq(target, "/etc/passwd");
    /* As root, what the guest made is the workload uid's of the namespace
     * backend (the range's second id), so that a later namespace attempt
     * may change it; what was there keeps its owner (it was all root's). */
    if (geteuid() == 0) {
        const char *made[] = {"build/obj.o", "out/sub", "out/sub/r.txt", "out/link"};
        for (size_t k = 0; k < sizeof(made) / sizeof(made[0]); k++) {
            snprintf(path, sizeof(path), "%s/%.*s%s%s", scratch, (int)strcspn(made[k], "/"), made[k], sfx,
                     made[k] + strcspn(made[k], "/"));
            ck_assert_int_eq(lstat(path, &st), 0);
            ck_assert_msg(st.st_uid == 100001 && st.st_gid == 100001, "%s is %u:%u", path, (unsigned)st.st_uid,
                          (unsigned)st.st_gid);
        }
        snprintf(path, sizeof(path), "%s/prev.txt", bld);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(st.st_uid, 0);
    }
    json_t *iso = isolation(r);
    json_t *files = json_object_get(iso, "returned_files"), *it;
    size_t i;
    bool found = false;
    json_array_foreach(files, i, it) {
        if (!strcmp(jstr(it, "path"), "sub/r.txt")) {
            found = true;
            ck_assert_str_eq(jstr(it, "dir"), "output");
            /* sha256("result\n"), as the host computed it from what it wrote */
            ck_assert_str_eq(jstr(it, "sha256"), "5656fafa00d4f294bcb606cf4f7d4fa877390e46f583e8b3c8744ace104a31d1");
            ck_assert_int_eq(json_integer_value(json_object_get(it, "size")), 7);
        }
    }
    ck_assert_msg(found, "sub/r.txt is not among the returned files");
    ck_assert_msg(!strncmp(jstr(iso, "boot"), "cold boot", 9) == cold, "%s", jstr(iso, "boot"));
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}

START_TEST(test_workspace) { workspace(false); }
END_TEST

START_TEST(test_workspace_cold) { workspace(true); }
END_TEST

/* What the host's build directory already holds under a name the guest
 * writes is replaced, never written through: a FIFO a previous attempt
 * made there (opening it for writing would wait for a reader, past every
 * deadline: the attempt hung), and hard links, one of them to a file
 * outside the tree (as `cp -al` and ccache make them), which the guest
 * would otherwise have rewritten. */
START_TEST(test_workspace_names_replaced) {
    char bld[128], path[256], outside[256], shared[256];
    snprintf(bld, sizeof(bld), "%s/build-names", scratch);
    snprintf(outside, sizeof(outside), "%s/outside.txt", scratch);
    ck_assert_int_eq(mkdir(bld, 0755), 0);
    FILE *f = fopen(outside, "we");
    fputs("outside\n", f);
    fclose(f);
    snprintf(shared, sizeof(shared), "%s/shared.txt", bld);
    f = fopen(shared, "we");
    fputs("original\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/out-link.o", bld);
    ck_assert_int_eq(link(outside, path), 0);
    snprintf(path, sizeof(path), "%s/obj2.o", bld);
    ck_assert_int_eq(link(shared, path), 0);
    snprintf(path, sizeof(path), "%s/obj.o", bld);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 60 * 1000000ull, &e), 0);
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "echo built > /work/build/obj.o && echo new > /work/build/obj2.o && "
                          "echo guest > /work/build/out-link.o",
                          NULL};
    struct cap c;
    alarm(200); /* a host blocked in open(2) never reaches the deadline */
    fy_result *r = run(p, argv, &c, NULL, NULL);
    alarm(0);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    static const struct {
        const char *name, *want;
    } files[] = {{"obj.o", "built\n"}, {"obj2.o", "new\n"}, {"out-link.o", "guest\n"}, {"shared.txt", "original\n"}};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", bld, files[i].name);
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert_msg(S_ISREG(st.st_mode) && st.st_nlink == 1, "%s: mode %o, %lu links", files[i].name,
                      (unsigned)st.st_mode, (unsigned long)st.st_nlink);
        char *t = slurp(path);
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(!strcmp(t, files[i].want), "%s: %s", files[i].name, t);
        free(t);
    }
    char *t = slurp(outside);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(!strcmp(t, "outside\n"), "the file outside the build tree was rewritten: %s", t);
    free(t);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* Every file of a large build tree comes back. The guest's last writes
 * to its port return once queued, not once QEMU passed them on, and the
 * guest powered off right after its "done": with more than the host's
 * socket could hold in flight, the end of the tar stream was lost and the
 * attempt read as a success with part of the files (about 600 to 2,200
 * of these 3,000). */
START_TEST(test_workspace_many_files) {
    char bld[128], path[256];
    snprintf(bld, sizeof(bld), "%s/build-many", scratch);
    ck_assert_int_eq(mkdir(bld, 0755), 0);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "mkdir -p a/b && i=0; while [ $i -lt 3000 ]; do echo $i > a/b/f$i; i=$((i+1)); done",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    for (int i = 0; i < 3000; i++) {
        snprintf(path, sizeof(path), "%s/a/b/f%d", bld, i);
        char *t = slurp(path);
        ck_assert_msg(t != NULL, "f%d did not come back", i);
        ck_assert_int_eq(atoi(t), i);
        free(t);
    }
    /* The result lists the first VMT_LISTED files with digests and counts
     * the rest (it dropped them without a word). */
    json_t *iso = isolation(r);
    size_t listed = json_array_size(json_object_get(iso, "returned_files"));
    json_int_t unlisted = json_integer_value(json_object_get(iso, "returned_files_unlisted"));
    ck_assert_msg(listed == 256 && unlisted == 3000 - 256, "returned_files %zu, unlisted %lld", listed,
                  (long long)unlisted);
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* A tree the stream cannot carry (more than 64 levels deep) ends the
 * attempt as resource-exceeded, naming the first such entry; before, it
 * was a "guest agent protocol error" (and a path over PATH_MAX was not
 * returned at all, the attempt a success). What did come back is kept. */
START_TEST(test_workspace_too_deep) {
    char bld[128], path[512];
    snprintf(bld, sizeof(bld), "%s/build-deep", scratch);
    ck_assert_int_eq(mkdir(bld, 0755), 0);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "echo top > top.txt; d=.; i=0; while [ $i -lt 70 ]; do d=$d/d; i=$((i+1)); done; "
                          "mkdir -p $d && echo bottom > $d/bottom.txt",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_RESOURCE_EXCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    ck_assert_msg(strstr(detail(r), "deeper than 64 levels: d/d/d/"), "%s", detail(r));
    snprintf(path, sizeof(path), "%s/top.txt", bld);
    char *t = slurp(path);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t, "top\n");
    free(t);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", bld);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A read-only bind of one file reaches the guest (copied into its
 * archive: 9p shares directories); before, the attempt failed at its
 * start, QEMU refusing the file as a share. */
START_TEST(test_file_bind) {
    char path[256];
    snprintf(path, sizeof(path), "%s/one-file.txt", scratch);
    FILE *f = fopen(path, "we");
    fputs("file-bind-data\n", f);
    fclose(f);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_bind(p, path, "/opt/one.txt", 0, &e), 0);
    const char *argv[] = {"/bin/sh", "-c", "cat /opt/one.txt; if (echo more >> /opt/one.txt) 2>/dev/null; then echo WRITABLE; fi",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    ck_assert_msg(!strcmp(c.buf[0], "file-bind-data\n"), "stdout: %s", c.buf[0]);
    char *t = slurp(path);
    ck_assert_str_eq(t, "file-bind-data\n");
    free(t);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* What the guest removes from the build tree is removed on the host, as
 * under a bind mount (before, `rm` and `mv` in the guest left the host's
 * old files in place: a `make clean` cleaned nothing). Only what was copied
 * in: a FIFO the guest never saw stays. Links come back as links, and
 * names longer than ustar's fields come back whole (before, a last
 * component over 100 bytes or a path over 255 was silently dropped: the
 * build's change to it lost, the attempt still a success). */
START_TEST(test_workspace_removals) {
    char bld[128], path[1024];
    snprintf(bld, sizeof(bld), "%s/build-rm", scratch);
    static const char *const dirs[] = {"", "/sub", "/sub/deep", "/kept"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", bld, dirs[i]);
        ck_assert_int_eq(mkdir(path, 0755), 0);
    }
    static const char *const files[] = {"old.o", "keep.c", "sub/deep/x", "kept/y"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", bld, files[i]);
        FILE *f = fopen(path, "we");
        fputs("data\n", f);
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/link", bld);
    ck_assert_int_eq(symlink("keep.c", path), 0);
    snprintf(path, sizeof(path), "%s/gone-link", bld);
    ck_assert_int_eq(symlink("old.o", path), 0);
    snprintf(path, sizeof(path), "%s/fifo", bld);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    /* A name of 150 bytes, which ustar's name field cannot carry. */
    char longname[151];
    memset(longname, 'n', 150);
    longname[150] = '\0';
    snprintf(path, sizeof(path), "%s/kept/%s", bld, longname);
    FILE *lf = fopen(path, "we");
    ck_assert_ptr_nonnull(lf);
    fputs("long\n", lf);
    fclose(lf);
    /* A path of more than 255 bytes, made by the guest. */
    char deep[400] = "";
    for (int i = 0; i < 6; i++)
        snprintf(deep + strlen(deep), sizeof(deep) - strlen(deep), "%s%.60s", i ? "/" : "",
                 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    char script[2048];
    snprintf(script, sizeof(script),
             "rm old.o gone-link && mv keep.c renamed.c && rm -r sub && ln -s renamed.c new-link && "
             "echo changed > kept/%s && mkdir -p %s && echo deep > %s/f",
             longname, deep, deep);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    static const struct {
        const char *name;
        bool there;
    } want[] = {{"old.o", false}, {"keep.c", false}, {"sub", false}, {"gone-link", false}, {"new-link", true},
                {"renamed.c", true}, {"kept/y", true}, {"link", true}, {"fifo", true}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", bld, want[i].name);
        ck_assert_msg((lstat(path, &st) == 0) == want[i].there, "%s: %s on the host", want[i].name,
                      want[i].there ? "missing" : "still");
    }
    char target[64];
    snprintf(path, sizeof(path), "%s/new-link", bld);
    ssize_t tl = readlink(path, target, sizeof(target) - 1);
    ck_assert_int_eq(tl, 9);
    target[tl] = '\0';
    ck_assert_str_eq(target, "renamed.c");
    snprintf(path, sizeof(path), "%s/kept/%s", bld, longname);
    char *t = slurp(path);
    ck_assert_msg(t && !strcmp(t, "changed\n"), "the long-named file: %s", t ? t : "missing");
    free(t);
    snprintf(path, sizeof(path), "%s/%s/f", bld, deep);
    t = slurp(path);
    ck_assert_msg(t && !strcmp(t, "deep\n"), "the deep file: %s", t ? t : "missing");
    free(t);
    json_t *iso = isolation(r);
    json_t *rm = json_object_get(iso, "removed_as_in_guest");
    ck_assert_int_eq(json_integer_value(json_object_get(rm, "build")), 4);
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* A file the command did not touch is not sent back (the host has it):
 * a build tree larger than the output limit comes back when the build
 * changed little of it. What it changed comes back whole, including what
 * it moved: a file renamed over another, a directory renamed (its files
 * keep their change times), two directories swapped, a mode changed. */
static void put_file(const char *dir, const char *rel, const char *text, size_t size) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    FILE *f = fopen(path, "we");
    ck_assert_ptr_nonnull(f);
    if (text)
        fputs(text, f);
    for (size_t i = 0; i < size; i++)
        fputc((int)('a' + (i * 7 + strlen(rel)) % 26), f);
    fclose(f);
}

START_TEST(test_workspace_unchanged) {
    char bld[128], path[512];
    snprintf(bld, sizeof(bld), "%s/build-unch", scratch);
    static const char *const dirs[] = {"", "/keep", "/dir-a", "/d1", "/d2"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", bld, dirs[i]);
        ck_assert_int_eq(mkdir(path, 0755), 0);
    }
    ino_t inos[40];
    for (int i = 0; i < 40; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "keep/f%02d.o", i);
        put_file(bld, rel, NULL, 64 << 10);
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", bld, rel);
        ck_assert_int_eq(stat(path, &st), 0);
        inos[i] = st.st_ino;
    }
    put_file(bld, "mod.c", "orig\n", 0);
    put_file(bld, "mv-src.o", "src\n", 0);
    put_file(bld, "mv-dst.o", "dst\n", 0);
    put_file(bld, "dir-a/inner.o", "inner\n", 0);
    put_file(bld, "d1/f", "one\n", 0);
    put_file(bld, "d2/f", "two\n", 0);
    put_file(bld, "run.sh", "#!/bin/sh\n", 0);
    struct stat lst;
    snprintf(path, sizeof(path), "%s/keep/link", bld);
    ck_assert_int_eq(symlink("f00.o", path), 0);
    ck_assert_int_eq(lstat(path, &lst), 0);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_OUTPUT, 1u << 20, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "echo more >> mod.c && mv mv-src.o mv-dst.o && mv dir-a dir-b && mv d1 tmp && mv d2 d1 && "
                          "mv tmp d2 && chmod 0755 run.sh",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s / %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    static const struct {
        const char *rel, *text;
    } want[] = {{"mod.c", "orig\nmore\n"}, {"mv-dst.o", "src\n"}, {"dir-b/inner.o", "inner\n"},
                {"d1/f", "two\n"},         {"d2/f", "one\n"},     {"run.sh", "#!/bin/sh\n"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", bld, want[i].rel);
        char *t = slurp(path);
        ck_assert_msg(t && !strcmp(t, want[i].text), "%s: %s", want[i].rel, t ? t : "missing");
        free(t);
    }
    static const char *const gone[] = {"mv-src.o", "dir-a", "tmp"};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", bld, gone[i]);
        ck_assert_msg(access(path, F_OK) != 0, "%s is still on the host", gone[i]);
    }
    struct stat st;
    snprintf(path, sizeof(path), "%s/run.sh", bld);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg(st.st_mode & 0100, "the mode the command set did not come back");
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof(path), "%s/keep/f%02d.o", bld, i);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_msg(st.st_ino == inos[i] && st.st_size == 64 << 10, "keep/f%02d.o was rewritten", i);
    }
    snprintf(path, sizeof(path), "%s/keep/link", bld);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode) && st.st_ino == lst.st_ino, "keep/link was made anew");
    json_t *iso = isolation(r);
    json_t *kept = json_object_get(iso, "kept_unchanged");
    ck_assert_int_eq(json_integer_value(json_object_get(kept, "build")), 41);
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* A tree past what the backend copies into a guest is refused at the
 * start, typed as a range error that names the bound (was FY_E_IO, "File
 * too large"); nothing is left. */
START_TEST(test_workspace_too_large) {
    char bld[128], path[256];
    snprintf(bld, sizeof(bld), "%s/build-big", scratch);
    ck_assert_int_eq(mkdir(bld, 0755), 0);
    snprintf(path, sizeof(path), "%s/sparse.bin", bld);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)600 << 20), 0);
    close(fd);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    ck_assert_int_eq(fy_prepare(p, caps, argv, &pr, &e), 0);
    fy_handle *h = NULL;
    int r = fy_start(pr, &h, &e);
    fy_prepared_free(pr);
    ck_assert_int_eq(r, FY_E_RANGE);
    ck_assert_msg(strstr(fy_error_message(e), "512 MiB"), "%s", fy_error_message(e));
    fy_error_free(e);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(bld), 0);
    fy_policy_free(p);
}
END_TEST

/* The disk and files quotas bind what the build and output trees bring
 * back to the host's directories (they were accepted and not enforced). */
START_TEST(test_disk_files_quotas) {
    static const struct { uint32_t limit; uint64_t value; const char *cmd, *want; } cases[] = {
        {FY_LIMIT_DISK, 1u << 20, "head -c 3000000 /dev/zero > big", "disk"},
        {FY_LIMIT_FILES, 5, "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo $i > f$i; done", "files"},
    };
    for (size_t i = 0; i < 2; i++) {
        char bld[128];
        snprintf(bld, sizeof(bld), "%s/build-quota%zu", scratch, i);
        ck_assert_int_eq(mkdir(bld, 0777), 0);
        ck_assert_int_eq(chmod(bld, 0777), 0);
        fy_policy *p = vm_policy();
        fy_error *e = NULL;
        ck_assert_int_eq(fy_policy_set_build(p, bld, &e), 0);
        ck_assert_int_eq(fy_policy_set_limit(p, cases[i].limit, cases[i].value, &e), 0);
        const char *argv[] = {"/bin/sh", "-c", cases[i].cmd, NULL};
        fy_result *r = run(p, argv, NULL, NULL, NULL);
        ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_RESOURCE_EXCEEDED, "%s: outcome %s: %s", cases[i].want,
                      fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r));
        ck_assert_str_eq(detail(r), cases[i].want);
        assert_nothing_left(r);
        fy_result_free(r);
        fy_policy_free(p);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", bld);
        ck_assert_int_eq(system(cmd), 0);
    }
}
END_TEST

START_TEST(test_timeout) {
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 8 * 1000000ull, &e), 0);
    const char *argv[] = {"/bin/sleep", "1000", NULL};
    time_t t0 = time(NULL);
    fy_result *r = run(p, argv, NULL, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_TIMED_OUT, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r));
    ck_assert_int_le(time(NULL) - t0, 20);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_cancel) {
    fy_policy *p = vm_policy();
    const char *argv[] = {"/bin/sh", "-c", "echo started; exec sleep 1000", NULL};
    struct cap c;
    memset(&c, 0, sizeof(c));
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_stdio_callback(p, FY_STDOUT, on_output, &c, &e), 0);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(fy_prepare(p, caps, argv, &pr, &e), 0);
    fy_handle *h = NULL;
    ck_assert_int_eq(fy_start(pr, &h, &e), 0);
    fy_prepared_free(pr);
    fy_result *r = NULL;
    bool cancelled = false;
    for (;;) {
        int w = fy_handle_wait(h, 100000, &r, &e);
        ck_assert_int_ge(w, 0);
        if (w == 1)
            break;
        if (!cancelled && strstr(c.buf[0], "started")) {
            ck_assert_int_eq(fy_handle_cancel(h, FY_CANCEL_USER, &e), 0);
            cancelled = true;
        }
    }
    fy_handle_free(h);
    ck_assert(cancelled);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_CANCELLED, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r));
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_oom) {
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 64u << 20, &e), 0);
    /* 200 MiB of distinct pages in the guest, over its 64 MiB limit. */
    const char *argv[] = {"/usr/bin/python3", "-c", "b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1",
                          NULL};
    fy_result *r = run(p, argv, NULL, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_OUT_OF_MEMORY, "outcome %s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r));
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* The pid of one QEMU of this backend below this process, or 0. */
static pid_t our_qemu_pid(void) {
    pid_t one = 0;
    qemus_below(getpid(), NULL, &one);
    return one;
}

/* The CPU quota of pid's host cgroup or the nearest ancestor that has one,
 * in millis of a CPU (v1 cpu.cfs_quota_us/cfs_period_us, v2 cpu.max); 0
 * when none. */
static uint64_t cpu_quota_millis(pid_t pid) {
    char p[64], text[4096] = {0};
    snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t k = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    char dir[4096] = "";
    bool v1 = false;
    for (char *l = text, *nl; k > 0 && l && *l; l = nl ? nl + 1 : NULL) {
        nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        char *ctl = c1 + 1;
        bool cpu = false;
        for (char *t = strtok(ctl, ","); t; t = strtok(NULL, ","))
            cpu |= !strcmp(t, "cpu");
        if (cpu) {
            snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu%s", c2 + 1);
            v1 = true;
        } else if (!*ctl && !dir[0] && access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
            snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", c2 + 1);
        }
    }
    for (char *slash; dir[0]; (slash = strrchr(dir, '/')) ? (void)(*slash = '\0') : (void)(dir[0] = '\0')) {
        char f[4200], v[64] = {0};
        long long q = -1, per = 0;
        snprintf(f, sizeof(f), "%s/%s", dir, v1 ? "cpu.cfs_quota_us" : "cpu.max");
        fd = open(f, O_RDONLY | O_CLOEXEC);
        k = fd >= 0 ? read(fd, v, sizeof(v) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (k <= 0)
            continue;
        if (v1) {
            q = atoll(v);
            snprintf(f, sizeof(f), "%s/cpu.cfs_period_us", dir);
            fd = open(f, O_RDONLY | O_CLOEXEC);
            memset(v, 0, sizeof(v));
            k = fd >= 0 ? read(fd, v, sizeof(v) - 1) : -1;
            if (fd >= 0)
                close(fd);
            per = k > 0 ? atoll(v) : 0;
        } else if (strncmp(v, "max", 3) != 0) {
            sscanf(v, "%lld %lld", &q, &per);
        }
        if (q > 0 && per > 0)
            return (uint64_t)(q * 1000 / per);
        if (!strcmp(dir, v1 ? "/sys/fs/cgroup/cpu" : "/sys/fs/cgroup"))
            break;
    }
    return 0;
}

/* Landlock confines the VMM, so a VM enforces it only where the host has
 * Landlock: on a host whose own filter refuses Landlock's calls, a policy
 * that requires it was met by vm-qemu with "landlock: enforced" while QEMU
 * ran without it (its sandbox only preferred it). The host is a forked
 * child of the test under such a filter, probing afresh. */
START_TEST(test_landlock_needs_the_host) {
    pid_t host = fork();
    ck_assert_int_ge(host, 0);
    if (host == 0) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 444 /* landlock_create_ruleset */, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
            _exit(2);
        fy_caps *c = NULL;
        if (fy_probe(FY_PROBE_FRESH, &c, NULL) < 0)
            _exit(3);
        if (fy_caps_has(c, FY_CAP_LANDLOCK) == 1)
            _exit(4); /* the filter did not take */
        fy_policy *p = vm_policy();
        fy_policy_set_control(p, FY_CONTROL_LANDLOCK, FY_MODE_REQUIRE, NULL);
        const char *argv[] = {"/bin/true", NULL};
        fy_prepared *pr = NULL;
        fy_error *e = NULL;
        int r = fy_prepare(p, c, argv, &pr, &e);
        if (r == 0) {
            fprintf(stderr, "prepared on %s with Landlock required and none on the host\n", fy_prepared_backend(pr));
            _exit(5);
        }
        _exit(r == FY_E_UNSUPPORTED ? 0 : 6);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(host, &st, 0), host);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host child status %d", st);
}
END_TEST

/* The policy's CPU limit binds the VMM on the host, where a guest root (who
 * controls the guest's own cgroups) cannot lift it: it was on the guest's
 * cgroup alone, and a guest root took whole host CPUs. */
/* An attempt of p that sleeps 30 s, started: its QEMU's pid. */
static pid_t start_sleeping(fy_policy *p, fy_prepared **pr, fy_handle **h) {
    fy_error *e = NULL;
    const char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
    if (fy_prepare(p, caps, argv, pr, &e) < 0)
        ck_abort_msg("prepare: %s", fy_error_message(e));
    if (fy_start(*pr, h, &e) < 0)
        ck_abort_msg("start: %s", fy_error_message(e));
    pid_t q = 0;
    for (int i = 0; i < 600 && !(q = our_qemu_pid()); i++)
        usleep(100000);
    ck_assert_msg(q > 0, "no QEMU of this attempt found");
    return q;
}

START_TEST(test_vmm_cpu_bound) {
    if (!fy_caps_has(caps, FY_CAP_CGROUP_CPU))
        return; /* (no CPU limit can be enforced on this host at all) */
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_CPU_MILLIS, 500, &e), 0);
    fy_prepared *pr = NULL;
    fy_handle *h = NULL;
    pid_t q = start_sleeping(p, &pr, &h);
    uint64_t m = cpu_quota_millis(q);
    fy_handle_cancel(h, FY_CANCEL_USER, NULL);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    ck_assert_msg(m > 0 && m <= 500, "the VMM's host cgroup CPU quota: %llu millis (want at most 500)",
                  (unsigned long long)m);
    json_t *iso = isolation(res);
    json_t *hb = json_object_get(iso, "host_bounds");
    ck_assert_msg(hb && json_integer_value(json_object_get(hb, "cpu_millis")) == 500, "host_bounds missing or wrong");
    json_decref(iso);
    fy_handle_free(h);
    fy_prepared_free(pr);
    assert_nothing_left(res);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

/* The policy's id range is the VMM's too, with or without a writable
 * bind: tenants given ranges of their own share no host uid, and with it
 * no per-user kernel budget (descriptors in flight, epoll watches). QEMU
 * ran as the default range's second id unless a bind was writable. */
START_TEST(test_vmm_in_the_id_range) {
    if (geteuid() != 0)
        return; /* (a caller without root has one id to give) */
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    const uint32_t first = 3100000, count = 65536;
    ck_assert_int_eq(fy_policy_set_id_range(p, first, count, &e), 0);
    fy_prepared *pr = NULL;
    fy_handle *h = NULL;
    pid_t q = start_sleeping(p, &pr, &h);
    char path[64], text[4096] = {0};
    snprintf(path, sizeof(path), "/proc/%d/status", (int)q);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t k = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    unsigned long ruid = 0, euid = 0;
    const char *u = k > 0 ? strstr(text, "\nUid:") : NULL;
    int got = u ? sscanf(u, "\nUid: %lu %lu", &ruid, &euid) : 0;
    fy_handle_cancel(h, FY_CANCEL_USER, NULL);
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, NULL), 1);
    ck_assert_msg(got == 2 && ruid >= first && ruid < first + count && euid == ruid,
                  "the VMM runs as uid %lu, outside the policy's range %u+%u", ruid, first, count);
    fy_handle_free(h);
    fy_prepared_free(pr);
    assert_nothing_left(res);
    fy_result_free(res);
    fy_policy_free(p);
}
END_TEST

/* devices.pty: deny (the default) leaves the guest no terminal at all,
 * as the namespace backend; private gives it a devpts instance of its own.
 * The guest had /dev/pts, /dev/ptmx and /dev/tty whatever the policy. */
START_TEST(test_terminals) {
    const char *argv[] = {"/bin/sh", "-c",
                          "for f in /dev/pts /dev/ptmx /dev/tty; do [ -e $f ] && echo HAS $f; done; echo done", NULL};
    for (int priv = 0; priv < 2; priv++) {
        fy_policy *p = vm_policy();
        fy_error *e = NULL;
        if (priv)
            ck_assert_int_eq(fy_policy_set_pty(p, FY_DEVICES_PRIVATE, &e), 0);
        struct cap c;
        fy_result *r = run(p, argv, &c, NULL, NULL);
        ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED && strstr(c.buf[0], "done"), "outcome %s: %s %s",
                      fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
        if (priv)
            ck_assert_msg(strstr(c.buf[0], "HAS /dev/pts\n") && strstr(c.buf[0], "HAS /dev/ptmx\n"), "private: %s",
                          c.buf[0]);
        else
            ck_assert_msg(!strstr(c.buf[0], "HAS"), "deny: %s", c.buf[0]);
        json_t *iso = isolation(r);
        const char *t = json_string_value(json_object_get(iso, "terminals"));
        ck_assert_msg(t && (priv ? strncmp(t, "private", 7) == 0 : strcmp(t, "none") == 0), "terminals: %s",
                      t ? t : "(none)");
        json_decref(iso);
        assert_nothing_left(r);
        fy_result_free(r);
        fy_policy_free(p);
    }
}
END_TEST

/* fy_prepare with no capabilities of the caller's probes the VM backends
 * itself for a policy only a VM satisfies: a high-assurance policy was
 * refused ("qemu: not probed") on a host that runs VMs. A policy the
 * namespace backend satisfies still gets it. */
START_TEST(test_prepare_without_caps) {
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    if (fy_prepare(p, NULL, argv, &pr, &e) < 0)
        ck_abort_msg("prepare without caps: %s", fy_error_message(e));
    ck_assert_str_eq(fy_prepared_backend(pr), "vm-qemu");
    fy_prepared_free(pr);
    fy_policy_free(p);
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_RELEASE, &p, &e), 0);
    ck_assert_int_eq(fy_prepare(p, NULL, argv, &pr, &e), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "linux-namespace");
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

/* The guest's usage is its cgroup's: a command that leaves a busy orphan
 * behind (never waited for by it) still accounts for its CPU time (the command's own
 * rusage reported 32 ms of 3 s) and its memory (memory.peak). */
START_TEST(test_usage_counts_orphans) {
    fy_policy *p = vm_policy();
    const char *argv[] = {"/bin/sh", "-c",
                          "mkfifo /tmp/spun && (sh -c 'i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done; "
                          "echo done > /tmp/spun' &) && read x < /tmp/spun; exit 0", NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[1]);
    uint64_t user = 0, sys = 0, peak = 0;
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_CPU_USER_USEC, &user), 0);
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_CPU_SYSTEM_USEC, &sys), 0);
    ck_assert_int_eq(fy_result_usage(r, FY_USAGE_MEMORY_PEAK, &peak), 0);
    fprintf(stderr, "test_usage_counts_orphans: CPU %llu + %llu us, memory peak %llu\n", (unsigned long long)user,
            (unsigned long long)sys, (unsigned long long)peak);
    ck_assert_msg(user + sys >= 1000000, "CPU %llu + %llu us: the unwaited child's time is missing",
                  (unsigned long long)user, (unsigned long long)sys);
    char *j = NULL;
    ck_assert_int_eq(fy_result_to_json(r, &j, NULL), 0);
    ck_assert_msg(strstr(j, "\"guest cgroup\""), "usage source: %.200s", strstr(j, "\"usage\"") ? strstr(j, "\"usage\"") : j);
    free(j);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_exec_failure) {
    fy_policy *p = vm_policy();
    const char *argv[] = {"/no/such/program", NULL};
    fy_result *r = run(p, argv, NULL, NULL, NULL);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_int_eq(fy_result_error_step(r), FY_STEP_EXEC);
    ck_assert_int_eq(fy_result_error_os_code(r), ENOENT);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_attempts_leave_nothing) {
    /* A few attempts in a row: each a fresh VM, nothing left after any. */
    for (int i = 0; i < 4; i++) {
        fy_policy *p = vm_policy();
        const char *argv[] = {"/bin/true", NULL};
        fy_result *r = run(p, argv, NULL, NULL, NULL);
        ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "attempt %d: %s", i, detail(r));
        assert_nothing_left(r);
        fy_result_free(r);
        fy_policy_free(p);
    }
}
END_TEST

/* ---- pre-started clones (fy_shells_new(3)) ---- */

static fy_prepared *clone_prepare(const char *src, const char *mark, struct cap *c) {
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    memset(c, 0, sizeof(*c));
    ck_assert_int_eq(fy_policy_set_stdio_callback(p, FY_STDOUT, on_output, c, &e), 0);
    ck_assert_int_eq(fy_policy_set_stdio_callback(p, FY_STDERR, on_output, c, &e), 0);
    char f[256];
    mkdir(src, 0755);
    snprintf(f, sizeof(f), "%s/mark", src);
    FILE *fp = fopen(f, "we");
    fputs(mark, fp);
    fclose(fp);
    chmod(f, 0644);
    ck_assert_int_eq(fy_policy_set_source(p, src, 0, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "cat /work/source/mark; echo; echo rnd $(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
                          "echo now $(date +%s); touch /work/source/w 2>/dev/null && echo SOURCE-WRITABLE; "
                          "ls -a / | tr '\\n' ' '",
                          NULL};
    fy_prepared *pr = NULL;
    if (fy_prepare(p, caps, argv, &pr, &e) < 0)
        ck_abort_msg("prepare: %s", fy_error_message(e));
    fy_policy_free(p);
    return pr;
}

static fy_result *clone_run(fy_prepared *pr, fy_shells *s) {
    fy_error *e = NULL;
    fy_handle *h = NULL;
    if (fy_start_shell(pr, s, &h, &e) < 0)
        ck_abort_msg("start: %s", fy_error_message(e));
    fy_result *res = NULL;
    ck_assert_int_eq(fy_handle_wait(h, FY_UNLIMITED, &res, &e), 1);
    fy_handle_free(h);
    return res;
}

START_TEST(test_prestarted_clones) {
    /* Clones restored before their claim: they hold nothing of any attempt
     * (no directory attached in the VMM's mount namespace, nothing in the
     * stub), each attempt sees its own source attached at its claim,
     * read-only, its guest reseeded with the host's clock; the result says
     * prestarted; a plan of another shape starts from nothing; an idle
     * clone is discarded; freeing the set leaves no QEMU, no directory,
     * no descriptor. */
    int fds = count_fds();
    fy_error *e = NULL;
    fy_shells *s = NULL;
    uint64_t v = 0;
    {
        /* A plan that boots cold has no clone: refused, typed, at the fill,
         * and nothing is started. */
        setenv("FORGEYARD_VM_TEMPLATE", "off", 1);
        fy_policy *cp = vm_policy();
        const char *targv[] = {"/bin/true", NULL};
        fy_prepared *cold = NULL;
        ck_assert_int_eq(fy_prepare(cp, caps, targv, &cold, &e), 0);
        unsetenv("FORGEYARD_VM_TEMPLATE");
        fy_policy_free(cp);
        ck_assert_int_eq(fy_shells_new(cold, 1, 1000000ull, &s, &e), 0);
        ck_assert_int_eq(fy_shells_fill(s, &e), FY_E_UNSUPPORTED);
        ck_assert_msg(strstr(fy_error_message(e), "boots cold"), "%s", fy_error_message(e));
        fy_error_free(e);
        e = NULL;
        ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_MADE, &v), 0);
        ck_assert_int_eq(v, 0);
        fy_shells_free(s);
        fy_prepared_free(cold);
    }
    if (geteuid() != 0)
        return; /* attaching a plan's directories needs root (refused, typed, without it) */
    char src1[128], src2[128];
    snprintf(src1, sizeof(src1), "%s/clone-src1", scratch);
    snprintf(src2, sizeof(src2), "%s/clone-src2", scratch);
    static struct cap c[2];
    fy_prepared *p1 = clone_prepare(src1, "first-mark", &c[0]), *p2 = clone_prepare(src2, "second-mark", &c[1]);
    ck_assert_int_eq(fy_shells_new(p1, 2, 120 * 1000000ull, &s, &e), 0);
    int ready = fy_shells_fill(s, &e);
    ck_assert_msg(ready == 2, "fill: %d %s", ready, ready < 0 ? fy_error_message(e) : "");
    int attached = -1;
    for (int i = 0; i < 50 && qemus_below(getpid(), &attached, NULL) < 2; i++)
        usleep(20000); /* (their sandboxes may still be executing QEMU) */
    ck_assert_int_eq(qemus_below(getpid(), &attached, NULL), 2);
    ck_assert_int_eq(attached, 0);
    fy_result *r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = clone_run(i ? p2 : p1, s);
        ck_assert_msg(fy_result_outcome(r[i]) == FY_OUTCOME_SUCCEEDED, "%d: %s", i, detail(r[i]));
        /* its own source, attached at its claim, read-only; its own
         * randomness; the host's clock */
        ck_assert_msg(!strncmp(c[i].buf[0], i ? "second-mark\n" : "first-mark\n", i ? 12 : 11), "%s / %s", c[i].buf[0], c[i].buf[1]);
        ck_assert_msg(!strstr(c[i].buf[0], "SOURCE-WRITABLE") && !strstr(c[i].buf[0], ".fy9p") &&
                          !strstr(c[i].buf[0], ".warm"), "%s", c[i].buf[0]);
        const char *n = strstr(c[i].buf[0], "now ");
        ck_assert_ptr_nonnull(n);
        long long t = atoll(n + 4), host = (long long)time(NULL);
        ck_assert_msg(t > host - 120 && t <= host + 5, "guest clock %lld, host %lld", t, host);
        ck_assert_int_eq(fy_result_prestarted(r[i]), 1);
        json_t *iso = isolation(r[i]);
        json_t *tm = json_object_get(iso, "template");
        ck_assert_msg(json_is_object(json_object_get(tm, "prestarted_clone")), "%s", jstr(iso, "boot"));
        ck_assert(json_is_true(json_object_get(tm, "reseeded")));
        ck_assert_msg(strstr(jstr(iso, "guest_report"), "RNG reseeded"), "%s", jstr(iso, "guest_report"));
        json_decref(iso);
        for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_FILES; k++) {
            uint64_t left = 99;
            ck_assert_int_eq(fy_result_cleanup(r[i], k, &left), 0);
            ck_assert_msg(left == 0, "left %u: %llu", k, (unsigned long long)left);
        }
        fy_result_free(r[i]);
    }
    const char *a = strstr(c[0].buf[0], "rnd "), *b = strstr(c[1].buf[0], "rnd ");
    ck_assert(a && b && strcspn(a, "\n") >= 4 + 32);
    ck_assert_msg(strncmp(a, b, 4 + 32) != 0, "the same random bytes in two clones: %s", a);
    v = 0;
    ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_CLAIMED, &v), 0);
    ck_assert_int_eq(v, 2);
    /* Another shape (a larger guest: another template) starts from
     * nothing, and takes no clone: those it found are discarded (a shell
     * that does not fit is never kept for another). */
    ck_assert_int_eq(fy_shells_fill(s, &e), 2);
    fy_policy *p = vm_policy();
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 300u << 20, &e), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *p3 = NULL;
    ck_assert_int_eq(fy_prepare(p, caps, argv, &p3, &e), 0);
    fy_policy_free(p);
    fy_result *r3 = clone_run(p3, s);
    ck_assert_msg(fy_result_outcome(r3) == FY_OUTCOME_SUCCEEDED, "%s", detail(r3));
    ck_assert_int_eq(fy_result_prestarted(r3), 0);
    fy_result_free(r3);
    fy_prepared_free(p3);
    ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_READY, &v), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_DISCARDED, &v), 0);
    ck_assert_int_eq(v, 2);
    ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_LEFT, &v), 0);
    ck_assert_int_eq(v, 0);
    fy_shells_free(s);
    ck_assert_int_eq(qemus_below(getpid(), &attached, NULL), 0);
    /* Idle: the clone powers itself off after its limit (and the slack
     * that lets the host discard first), unclaimed and unasked; the next
     * fill discards it, witnessed, and makes a new one. */
    /* (3 s: seen running first on a loaded host too) */
    ck_assert_int_eq(fy_shells_new(p1, 1, 3000000ull, &s, &e), 0);
    ck_assert_int_eq(fy_shells_fill(s, &e), 1);
    for (int i = 0; i < 500 && qemus_below(getpid(), &attached, NULL) == 0; i++)
        usleep(20000); /* (its sandbox may still be executing QEMU) */
    ck_assert_int_eq(qemus_below(getpid(), &attached, NULL), 1);
    for (int i = 0; i < 200 && qemus_below(getpid(), &attached, NULL); i++)
        usleep(100000);
    ck_assert_msg(qemus_below(getpid(), &attached, NULL) == 0, "an idle clone did not end by itself");
    ck_assert_int_eq(fy_shells_fill(s, &e), 1);
    ck_assert_int_eq(fy_shells_stat(s, FY_SHELLS_DISCARDED, &v), 0);
    ck_assert_int_eq(v, 1);
    fy_shells_free(s);
    ck_assert_int_eq(qemus_below(getpid(), &attached, NULL), 0);
    fy_prepared_free(p1);
    fy_prepared_free(p2);
    char d[256];
    snprintf(d, sizeof(d), "%s/attempts", cache);
    DIR *dir = opendir(d);
    struct dirent *de;
    while (dir && (de = readdir(dir)))
        ck_assert_msg(de->d_name[0] == '.', "a clone's directory left: %s", de->d_name);
    if (dir)
        closedir(dir);
    ck_assert_int_eq(count_fds(), fds);
}
END_TEST

/* An uplink namespace of this test's own (198.51.100.1 on its loopback)
 * with a one-line HTTP server on port; its name in ns (removed by
 * uplink_del). The server's pid. */
static pid_t uplink_make(char *ns, size_t nl, int port) {
    snprintf(ns, nl, "fy-vmtest-%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "ip netns add %s && ip -n %s link set lo up && ip -n %s addr add 198.51.100.1/24 dev lo", ns, ns, ns);
    if (system(cmd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char path[128];
        snprintf(path, sizeof(path), "/run/netns/%s", ns);
        int nfd = open(path, O_RDONLY | O_CLOEXEC);
        if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0)
            _exit(1);
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, "198.51.100.1", &a.sin_addr);
        int one = 1;
        setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 8) < 0)
            _exit(1);
        alarm(300);
        for (int i = 0; i < 16; i++) {
            int c = accept(l, NULL, NULL);
            if (c < 0)
                continue;
            char buf[1024];
            if (read(c, buf, sizeof(buf)) < 0) {
            }
            static const char resp[] = "HTTP/1.0 200 OK\r\nContent-Length: 18\r\n\r\nhello-from-uplink\n";
            if (write(c, resp, sizeof(resp) - 1) < 0) {
            }
            close(c);
        }
        _exit(0);
    }
    return pid;
}

static void uplink_del(const char *ns, pid_t srv) {
    if (srv > 0) {
        kill(srv, SIGKILL);
        waitpid(srv, NULL, 0);
    }
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns);
    if (system(cmd) != 0) {
    }
}

START_TEST(test_restricted_clone) {
    /* Network restricted in a pre-started clone: the clone's NIC is on a
     * hub port leading nowhere until its claim, which makes the attempt's
     * router and joins its tap to that hub over the clone's monitor; the
     * allowed destination answers, another port of it does not. */
    if (geteuid() != 0 || access("/usr/sbin/ip", X_OK) != 0)
        return;
    char ns[64], path[128];
    pid_t srv = uplink_make(ns, sizeof(ns), 8080);
    ck_assert_int_gt(srv, 0);
    snprintf(path, sizeof(path), "/run/netns/%s", ns);
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e), 0);
    ck_assert_int_eq(fy_policy_set_isolation(p, FY_LEVEL_VIRTUAL_MACHINE, FY_LEVEL_VIRTUAL_MACHINE, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 256u << 20, &e), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, &e), 0);
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_UPLINK, path, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "echo \"net: $(ls /sys/class/net | tr '\\n' ' ')\"; "
                          "echo \"got: $(curl -sS -m 20 http://198.51.100.1:8080/ 2>&1)\"; "
                          "curl -sS -m 5 -o /dev/null http://198.51.100.1:8081/ 2>/dev/null; echo \"other-rc=$?\"",
                          NULL};
    struct cap c;
    run_in_clone = true;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    run_in_clone = false;
    uplink_del(ns, srv);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s: %s / %s", detail(r), c.buf[0], c.buf[1]);
    ck_assert_int_eq(fy_result_prestarted(r), 1);
    ck_assert_msg(strstr(c.buf[0], "net: eth0 lo \n"), "%s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "got: hello-from-uplink\n"), "%s / %s", c.buf[0], c.buf[1]);
    ck_assert_msg(!strstr(c.buf[0], "other-rc=0\n"), "%s", c.buf[0]);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

/* ---- a guest agent that misbehaves ---- */

static fy_result *run_bad(const char *how, uint64_t wall_sec) {
    setenv("FORGEYARD_VM_AGENT", bad_agent, 1);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, wall_sec * 1000000ull, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_OUTPUT, 1u << 20, &e), 0);
    char out[128];
    snprintf(out, sizeof(out), "%s/bad-out-%s", scratch, how);
    mkdir(out, 0755);
    ck_assert_int_eq(fy_policy_set_output(p, out, &e), 0);
    const char *argv[] = {how, NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    unsetenv("FORGEYARD_VM_AGENT");
    fy_policy_free(p);
    assert_nothing_left(r);
    return r;
}

START_TEST(test_bad_netframe) {
    /* Network frames under network deny: a protocol error, never carried. */
    fy_result *r = run_bad("netframe", 60);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "protocol error: a network frame without a network"), "%s", detail(r));
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_dnsframe) {
    /* A DNS frame under network deny (no stub): a protocol error, never
     * handed to anything. */
    fy_result *r = run_bad("dnsframe", 60);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "protocol error: a DNS frame without a DNS stub"), "%s", detail(r));
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_garbage) {
    fy_result *r = run_bad("garbage", 60);
    /* Another agent (initramfs) is another template. */
    json_t *iso = isolation(r);
    const char *k = jstr(json_object_get(iso, "template"), "key");
    ck_assert_int_eq(strlen(k), 64);
    ck_assert_msg(!template_key[0] || strcmp(k, template_key) != 0, "the same template for another initramfs");
    json_decref(iso);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "protocol error"), "%s", detail(r));
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_hugeframe) {
    fy_result *r = run_bad("hugeframe", 60);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "frame too large"), "%s", detail(r));
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_flood) {
    fy_result *r = run_bad("flood", 60);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_RESOURCE_EXCEEDED, "%s: %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r));
    ck_assert_int_eq(fy_result_output_truncated(r), 1);
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_silent) {
    time_t t0 = time(NULL);
    fy_result *r = run_bad("silent", 10);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_TIMED_OUT);
    ck_assert_int_le(time(NULL) - t0, 25);
    fy_result_free(r);
}
END_TEST

/* A guest that stops reading while its standard input is forwarded: the
 * host's sends to it never block past the wall-clock limit (each held the
 * event loop up to 5 s: a 3 s limit took 10.6 s). */
START_TEST(test_bad_silent_stdin) {
    char in[128];
    snprintf(in, sizeof(in), "%s/big-stdin", scratch);
    int fd = open(in, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 30 << 20), 0);
    setenv("FORGEYARD_VM_AGENT", bad_agent, 1);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 3 * 1000000ull, &e), 0);
    ck_assert_int_eq(fy_policy_set_stdio(p, FY_STDIN, FY_STDIO_FD, fd, NULL, &e), 0);
    const char *argv[] = {"silent", NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    unsetenv("FORGEYARD_VM_AGENT");
    close(fd);
    unlink(in);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_TIMED_OUT);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("a 3 s limit took %.1f s\n", secs);
    ck_assert_msg(secs < 3 + 4, "a 3 s limit took %.1f s (the sends to a deaf guest held it)", secs);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_bad_exit_record) {
    fy_result *r = run_bad("badexit", 60);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "bad exit record"), "%s", detail(r));
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_escape) {
    fy_result *r = run_bad("escape", 60);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "refused path"), "%s", detail(r));
    char p[160];
    snprintf(p, sizeof(p), "%s/escaped", scratch);
    ck_assert_int_ne(access(p, F_OK), 0);
    fy_result_free(r);
}
END_TEST

START_TEST(test_bad_panic) {
    fy_result *r = run_bad("panic", 60);
    ck_assert_int_eq(fy_result_outcome(r), FY_OUTCOME_INFRASTRUCTURE_FAILURE);
    ck_assert_msg(strstr(detail(r), "guest kernel panic"), "%s", detail(r));
    fy_result_free(r);
}
END_TEST

/* ---- no VM needed ---- */

START_TEST(test_gc) {
    /* (attempts/ made as the backend makes it: no earlier test need have) */
    char d[256];
    snprintf(d, sizeof(d), "%s/attempts", cache);
    ck_assert(mkdir(d, 0711) == 0 || errno == EEXIST);
    snprintf(d, sizeof(d), "%s/attempts/a-999999999-1-0000000000000000", cache);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    char f[300];
    snprintf(f, sizeof(f), "%s/initrd", d);
    close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    uint64_t n = 0;
    fy_error *e = NULL;
    char state[128];
    snprintf(state, sizeof(state), "%s/state", scratch);
    mkdir(state, 0700);
    /* A cached kernel whose package is gone is pruned; the current one stays. */
    char old[256], src[300];
    snprintf(old, sizeof(old), "%s/kernel-000000000000000000000000-0000000000000000", cache);
    ck_assert_int_eq(mkdir(old, 0755), 0);
    snprintf(src, sizeof(src), "%s/source", old);
    FILE *f2 = fopen(src, "we");
    fputs("/boot/vmlinuz-0.0-removed 12 34 56.000000000 0.0-removed", f2);
    fclose(f2);
    size_t kernels_before = 0;
    DIR *cd = opendir(cache);
    struct dirent *ce;
    while ((ce = readdir(cd)))
        kernels_before += strncmp(ce->d_name, "kernel-", 7) == 0;
    closedir(cd);
    /* A template made from a kernel the cache no longer holds goes too
     * (138 MB each, kept for ever before); the templates of the kernels
     * it holds stay. */
    char tdir[256], orphan[400], man[500];
    snprintf(tdir, sizeof(tdir), "%s/templates", cache);
    ck_assert(mkdir(tdir, 0700) == 0 || errno == EEXIST);
    size_t templates_before = 0;
    cd = opendir(tdir);
    while ((ce = readdir(cd)))
        templates_before += strlen(ce->d_name) == 64;
    closedir(cd);
    snprintf(orphan, sizeof(orphan), "%s/%064d", tdir, 0);
    ck_assert_int_eq(mkdir(orphan, 0700), 0);
    snprintf(man, sizeof(man), "%s/manifest", orphan);
    f2 = fopen(man, "we");
    fprintf(f2, "key %064d\nstate_sha256 %064d\nstate_size 1\nforgeyard-vm-template\nvmlinuz_sha256 %064d\n"
                "initrd_sha256 %064d\n", 0, 0, 1, 2);
    fclose(f2);
    ck_assert_int_eq(fy_gc(state, 0, &n, &e), 0);
    ck_assert_msg(access(orphan, F_OK) != 0, "the template of a kernel that is gone was kept");
    size_t templates_after = 0;
    cd = opendir(tdir);
    while ((ce = readdir(cd)))
        templates_after += strlen(ce->d_name) == 64;
    closedir(cd);
    ck_assert_uint_eq(templates_after, templates_before);
    ck_assert_uint_ge(n, 1);
    ck_assert_int_ne(access(d, F_OK), 0);
    ck_assert_int_ne(access(old, F_OK), 0);
    size_t kernels_after = 0;
    cd = opendir(cache);
    while ((ce = readdir(cd)))
        kernels_after += strncmp(ce->d_name, "kernel-", 7) == 0;
    closedir(cd);
    ck_assert_uint_eq(kernels_after, kernels_before - 1);
    ck_assert_uint_ge(kernels_after, 1);
}
END_TEST

START_TEST(test_unsupported) {
    /* What the backend cannot give is refused, never approximated. */
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    char wdir[160];
    snprintf(wdir, sizeof(wdir), "%s/writable-bind", scratch);
    mkdir(wdir, 0755);
    ck_assert_int_eq(fy_policy_add_bind(p, wdir, "/work/extra", FY_BIND_WRITABLE, &e), 0);
    /* A writable bind under a disk limit: the VMM's writes are counted by nothing. */
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_DISK, 1u << 20, &e), 0);
    const char *argv[] = {"/bin/true", NULL};
    int rc = 0;
    fy_result *r = run(p, argv, NULL, NULL, &rc);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(rc, FY_E_UNSUPPORTED);
    fy_policy_free(p);
    /* A writable bind of a single file (9p shares directories). */
    p = vm_policy();
    char wfile[192];
    snprintf(wfile, sizeof(wfile), "%s/writable-file", scratch);
    close(open(wfile, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ck_assert_int_eq(fy_policy_add_bind(p, wfile, "/work/extra-file", FY_BIND_WRITABLE, &e), 0);
    ck_assert_ptr_null(run(p, argv, NULL, NULL, &rc));
    ck_assert_int_eq(rc, FY_E_UNSUPPORTED);
    fy_policy_free(p);
}
END_TEST

/* ---- fetch-only: the guest reaches the attempt's proxy and nothing else ---- */

/* A bounded HTTP/1.0 server on 127.0.0.1 in a child: port a answers
 * ("ok PATH", or 4 MiB for /big), port b is never to be reached; every
 * request line (and every connection to b) is appended to log. */
static pid_t http_server(int *port_a, int *port_b, const char *log) {
    int l[2];
    for (int i = 0; i < 2; i++) {
        l[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        ck_assert_int_eq(bind(l[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(l[i], 16), 0);
        socklen_t sl = sizeof(sa);
        getsockname(l[i], (struct sockaddr *)&sa, &sl);
        *(i ? port_b : port_a) = ntohs(sa.sin_port);
    }
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid > 0) {
        close(l[0]);
        close(l[1]);
        return pid;
    }
    alarm(290); /* bounded whatever happens */
    static char big[4 << 20];
    memset(big, 'x', sizeof(big));
    for (int served = 0; served < 64; served++) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(l[0], &rd);
        FD_SET(l[1], &rd);
        if (select((l[0] > l[1] ? l[0] : l[1]) + 1, &rd, NULL, NULL, NULL) <= 0)
            continue;
        int which = FD_ISSET(l[0], &rd) ? 0 : 1;
        int c = accept4(l[which], NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        FILE *lf = fopen(log, "ae");
        if (which == 1) {
            fprintf(lf, "CONNECTION TO THE REFUSED PORT\n");
            fclose(lf);
            close(c);
            continue;
        }
        char req[4096];
        size_t n = 0;
        ssize_t k;
        while (n < sizeof(req) - 1 && (k = read(c, req + n, sizeof(req) - 1 - n)) > 0) {
            n += (size_t)k;
            req[n] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[n] = '\0';
        char path[256] = "?";
        sscanf(req, "%*s %255s", path);
        fprintf(lf, "%.*s\n", (int)strcspn(req, "\r\n"), req);
        fclose(lf);
        bool isbig = !strncmp(path, "/big", 4);
        char head[512], body[300];
        snprintf(body, sizeof(body), "ok %s\n", path);
        size_t blen = isbig ? sizeof(big) : strlen(body);
        int hl = snprintf(head, sizeof(head), "HTTP/1.0 200 OK\r\nContent-Length: %zu\r\n\r\n", blen);
        if (write(c, head, (size_t)hl) == hl) {
            const char *p = isbig ? big : body;
            for (size_t off = 0; off < blen;) {
                ssize_t w = write(c, p + off, blen - off);
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
        }
        close(c);
    }
    _exit(0);
}

static fy_policy *vm_fetch_policy(const char *hosts, int port) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e), 0);
    ck_assert_int_eq(fy_policy_set_isolation(p, FY_LEVEL_VIRTUAL_MACHINE, FY_LEVEL_VIRTUAL_MACHINE, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 256u << 20, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_WALL_TIME, 200 * 1000000ull, &e), 0);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_FETCH_ONLY, &e), 0);
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_HOSTS_FILE, hosts, &e), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "mirror.test", FY_PROTO_TCP, (uint32_t)port, (uint32_t)port, &e),
                     0);
    return p;
}

static void fetch_only(bool clone);
START_TEST(test_fetch_only) { fetch_only(false); }
END_TEST

START_TEST(test_fetch_only_clone) {
    /* The same through a pre-started clone: the proxy is the attempt's,
     * started at the claim (root: the clone's directories). */
    if (geteuid() == 0)
        fetch_only(true);
}
END_TEST

static void fetch_only(bool clone) {
    char log[160], hosts[160];
    snprintf(log, sizeof(log), "%s/http.log", scratch);
    snprintf(hosts, sizeof(hosts), "%s/hosts", scratch);
    unlink(log);
    FILE *f = fopen(hosts, "we");
    fputs("127.0.0.1 mirror.test\n", f);
    fclose(f);
    int pa = 0, pb = 0;
    pid_t srv = http_server(&pa, &pb, log);
    fy_policy *p = vm_fetch_policy(hosts, pa);
    char script[2048];
    snprintf(script, sizeof(script),
             "echo \"proxy=$HTTP_PROXY net: $(ls /sys/class/net | tr '\\n' ' ')\"; "
             "echo \"get: $(curl -sS -m 30 http://mirror.test:%d/a 2>&1)\"; "
             "echo \"tunnel: $(curl -sS -m 30 -p http://mirror.test:%d/t 2>&1)\"; "
             "echo \"big: $(curl -sS -m 90 -o /dev/null -w '%%{size_download}' http://mirror.test:%d/big 2>&1)\"; "
             "echo \"refused: $(curl -sS -m 30 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/never 2>&1)\"; "
             "curl -sS -m 5 --noproxy '*' -o /dev/null http://127.0.0.1:%d/direct 2>/dev/null; echo \"direct-rc=$?\"; "
             "curl -sS -m 5 --noproxy '*' -o /dev/null http://10.0.2.2:%d/direct 2>/dev/null; echo \"gw-rc=$?\"",
             pa, pa, pa, pb, pa, pa);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct cap c;
    run_in_clone = clone;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    run_in_clone = false;
    kill(srv, SIGKILL);
    waitpid(srv, NULL, 0);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s stdout %s stderr %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[0], c.buf[1]);
    /* The guest still has no network device but its loopback. */
    ck_assert_msg(strstr(c.buf[0], "proxy=http://127.0.0.1:3128 net: lo \n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "get: ok /a\n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "tunnel: ok /t\n"), "stdout: %s", c.buf[0]);
    /* More than every window and buffer on the way: flow control works. */
    ck_assert_msg(strstr(c.buf[0], "big: 4194304\n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "refused: 403\n"), "stdout: %s", c.buf[0]);
    /* Nothing but the proxy: no direct way to the host's listener. */
    ck_assert_msg(!strstr(c.buf[0], "direct-rc=0\n") && !strstr(c.buf[0], "gw-rc=0\n"), "stdout: %s", c.buf[0]);
    char *seen = slurp(log);
    ck_assert_ptr_nonnull(seen);
    ck_assert_msg(strstr(seen, "GET /a HTTP/1.1") && strstr(seen, "GET /t HTTP/1.1"), "server saw: %s", seen);
    ck_assert_msg(!strstr(seen, "/direct") && !strstr(seen, "REFUSED PORT") && !strstr(seen, "/never"),
                  "server saw: %s", seen);
    free(seen);
    /* The result: the proxy's audit log, the proxy ended (and gone), the
     * connections carried. */
    char *ev = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_result_to_json(r, &ev, &e), 0);
    json_t *doc = json_loads(ev, 0, NULL);
    ck_assert_ptr_nonnull(doc);
    json_t *net = json_object_get(doc, "network");
    ck_assert_msg(json_is_object(net), "no network record: %s", ev);
    ck_assert_str_eq(jstr(net, "mode"), "fetch-only");
    json_t *px = json_object_get(net, "proxy");
    ck_assert(json_is_true(json_object_get(px, "ended")));
    pid_t ppid = (pid_t)json_integer_value(json_object_get(px, "pid"));
    ck_assert_int_gt(ppid, 0);
    char comm[64], cp[64];
    snprintf(cp, sizeof(cp), "/proc/%d/comm", (int)ppid);
    char *cm = slurp(cp);
    snprintf(comm, sizeof(comm), "%s", cm ? cm : "");
    free(cm);
    ck_assert_msg(strncmp(comm, "fy-proxy", 8) != 0, "the proxy %d outlived the attempt", (int)ppid);
    json_t *reqs = json_object_get(net, "requests");
    size_t allowed = 0, refused = 0, i;
    json_t *q;
    json_array_foreach(reqs, i, q) {
        if (!strcmp(jstr(q, "decision"), "allowed"))
            allowed++;
        else
            refused++;
    }
    ck_assert_msg(allowed == 3 && refused == 1, "requests: %s", ev);
    ck_assert_int_ge(json_integer_value(json_object_get(json_object_get(net, "connections"), "carried")), 4);
    json_t *iso = isolation(r);
    ck_assert_str_eq(jstr(json_object_get(iso, "network"), "mode"), "fetch-only");
    ck_assert_msg(strstr(jstr(iso, "guest_report"), "network-devices=lo ") &&
                  strstr(jstr(iso, "guest_report"), "fetch-only-listener=127.0.0.1:3128"),
                  "%s", jstr(iso, "guest_report"));
    ck_assert_int_eq(fy_result_prestarted(r), clone ? 1 : 0);
    json_decref(iso);
    json_decref(doc);
    fy_free(ev);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}


START_TEST(test_fetch_only_refusals) {
    /* What fetch-only refuses is refused here as in the namespace backend
     * (the same checks): a CIDR destination; and restricted refuses what
     * the namespace backend's router refuses (a destination on its links:
     * the same compile; test vm-net runs restricted itself). */
    char hosts[160];
    snprintf(hosts, sizeof(hosts), "%s/hosts", scratch);
    FILE *f = fopen(hosts, "we");
    fputs("127.0.0.1 mirror.test\n", f);
    fclose(f);
    fy_policy *p = vm_fetch_policy(hosts, 8080);
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_destination(p, "127.0.0.0/8", FY_PROTO_TCP, 80, 80, &e), 0);
    const char *argv[] = {"/bin/true", NULL};
    int rc = 0;
    ck_assert_ptr_null(run(p, argv, NULL, NULL, &rc));
    ck_assert_int_lt(rc, 0);
    fy_policy_free(p);
    p = vm_fetch_policy(hosts, 8080);
    ck_assert_int_eq(fy_policy_set_network(p, FY_NET_RESTRICTED, &e), 0);
    ck_assert_int_eq(fy_policy_add_destination(p, "100.64.0.1", FY_PROTO_TCP, 80, 80, &e), 0);
    ck_assert_ptr_null(run(p, argv, NULL, NULL, &rc));
    ck_assert_int_eq(rc, FY_E_POLICY);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_cold_boot_control) {
    /* The policy, not the environment, asks for a fresh kernel per
     * attempt: only a VM can give it, so requiring it selects the VM
     * backend even from standard-ci; preferring it on the namespace level
     * drops it visibly there. */
    fy_error *e = NULL;
    const char *argv[] = {"/bin/sh", "-c", "cat /proc/uptime", NULL};
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e), 0);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_COLD_BOOT, FY_MODE_PREFER, &e), 0);
    fy_prepared *pr = NULL;
    ck_assert_int_eq(fy_prepare(p, caps, argv, &pr, &e), 0);
    ck_assert_str_ne(fy_prepared_backend(pr), "vm-qemu");
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_COLD_BOOT), FY_CONTROL_STATE_DROPPED);
    fy_prepared_free(pr);
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_COLD_BOOT, FY_MODE_REQUIRE, &e), 0);
    ck_assert_int_eq(fy_policy_set_limit(p, FY_LIMIT_MEMORY, 256u << 20, &e), 0);
    ck_assert_int_eq(fy_prepare(p, caps, argv, &pr, &e), 0);
    ck_assert_str_eq(fy_prepared_backend(pr), "vm-qemu");
    ck_assert_int_eq(fy_prepared_control(pr, FY_CONTROL_COLD_BOOT), FY_CONTROL_STATE_ENFORCED);
    fy_prepared_free(pr);
    /* An unnamed control number is refused. */
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_COLD_BOOT - 1, FY_MODE_REQUIRE, NULL),
                     fy_control_name(FY_CONTROL_COLD_BOOT - 1) ? 0 : FY_E_UNSUPPORTED);
    fy_policy_free(p);

    /* A run: its own kernel booted (the agent reports no restore), even
     * where a template of the same machine exists (other tests made it). */
    p = vm_policy();
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_COLD_BOOT, FY_MODE_REQUIRE, &e), 0);
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "%s", detail(r));
    json_t *iso = isolation(r);
    ck_assert(json_is_null(json_object_get(iso, "template")));
    ck_assert_msg(strstr(jstr(iso, "boot"), "cold boot per attempt (the policy's control cold-boot"), "%s",
                  jstr(iso, "boot"));
    ck_assert_msg(!strstr(jstr(iso, "guest_report"), "restored from a template"), "%s", jstr(iso, "guest_report"));
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_writable_bind) {
    /* A directory the policy binds writable: the guest's writes land in it
     * on the host; nothing outside it is written, whatever the symbolic
     * links planted in it point at (the guest resolves them in its own
     * tree; the VMM's sandbox binds only this directory writable). */
    char dir[192], outside[192], link[256], t[256];
    snprintf(dir, sizeof(dir), "%s/rw", scratch);
    snprintf(outside, sizeof(outside), "%s/outside", scratch);
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    ck_assert_int_eq(chmod(dir, 0777), 0); /* the VMM's sandbox runs under ids of its own */
    ck_assert_int_eq(mkdir(outside, 0777), 0);
    ck_assert_int_eq(chmod(outside, 0777), 0);
    snprintf(link, sizeof(link), "%s/abs", dir);
    ck_assert_int_eq(symlink(outside, link), 0);
    snprintf(link, sizeof(link), "%s/rel", dir);
    ck_assert_int_eq(symlink("../outside", link), 0);
    snprintf(t, sizeof(t), "%s/old", dir);
    FILE *f = fopen(t, "we");
    fputs("from-the-host\n", f);
    fclose(f);
    chmod(t, 0666);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_add_bind(p, dir, "/work/extra", FY_BIND_WRITABLE, &e), 0);
    const char *argv[] = {"/bin/sh", "-c",
                          "cd /work/extra && cat old && echo written-in-the-guest > new && mkdir -p sub && "
                          "echo deep > sub/file && echo appended >> old; "
                          "echo x > abs/pwned 2>/dev/null; echo x > rel/pwned 2>/dev/null; "
                          "echo y > /usr/pwned 2>/dev/null && echo USR-WRITABLE; "
                          "grep ' /work/extra ' /proc/mounts",
                          NULL};
    struct cap c;
    fy_result *r = run(p, argv, &c, NULL, NULL);
    ck_assert_msg(fy_result_outcome(r) == FY_OUTCOME_SUCCEEDED, "outcome %s: %s stdout %s stderr %s",
                  fy_outcome_name((uint32_t)fy_result_outcome(r)), detail(r), c.buf[0], c.buf[1]);
    ck_assert_msg(strstr(c.buf[0], "from-the-host\n"), "stdout: %s", c.buf[0]);
    ck_assert_msg(strstr(c.buf[0], "9p rw,"), "stdout: %s", c.buf[0]);
    ck_assert_msg(!strstr(c.buf[0], "USR-WRITABLE"), "stdout: %s", c.buf[0]);
    /* On the host, at once (the attempt is over). */
    snprintf(t, sizeof(t), "%s/new", dir);
    char *s = slurp(t);
    ck_assert_msg(s && !strcmp(s, "written-in-the-guest\n"), "%s: %s", t, s ? s : "(missing)");
    free(s);
    snprintf(t, sizeof(t), "%s/sub/file", dir);
    s = slurp(t);
    ck_assert_msg(s && !strcmp(s, "deep\n"), "%s: %s", t, s ? s : "(missing)");
    free(s);
    snprintf(t, sizeof(t), "%s/old", dir);
    s = slurp(t);
    ck_assert_msg(s && !strcmp(s, "from-the-host\nappended\n"), "%s: %s", t, s ? s : "(missing)");
    free(s);
    /* Nothing outside the bind. */
    DIR *d = opendir(outside);
    struct dirent *de;
    while ((de = readdir(d)))
        ck_assert_msg(de->d_name[0] == '.', "written outside the bind: %s/%s", outside, de->d_name);
    closedir(d);
    struct stat st;
    ck_assert_int_ne(lstat("/usr/pwned", &st), 0);
    json_t *iso = isolation(r);
    json_t *wm = json_object_get(iso, "writable_mounts");
    ck_assert_int_eq(json_array_size(wm), 1);
    ck_assert_str_eq(json_string_value(json_array_get(wm, 0)), "/work/extra");
    json_decref(iso);
    assert_nothing_left(r);
    fy_result_free(r);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_dead_host_gc) {
    /* The host program dies (SIGKILL) while its VM runs: fy_gc destroys
     * the VMM's sandbox and removes the attempt directory. */
    char state[160], ready[160];
    snprintf(state, sizeof(state), "%s/state-dead", scratch);
    snprintf(ready, sizeof(ready), "%s/ready", scratch);
    mkdir(state, 0700);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        fy_policy *p = vm_policy();
        fy_error *e = NULL;
        fy_caps *c2 = NULL;
        int out = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fy_probe(0, &c2, &e) < 0 || fy_policy_set_state_dir(p, state, &e) < 0 ||
            fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, out, NULL, &e) < 0)
            _exit(2);
        const char *argv[] = {"/bin/sh", "-c", "echo started; exec sleep 1000", NULL};
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        if (fy_prepare(p, c2, argv, &pr, &e) < 0 || fy_start(pr, &h, &e) < 0)
            _exit(3);
        fy_result *r = NULL;
        fy_handle_wait(h, FY_UNLIMITED, &r, &e);
        _exit(4);
    }
    /* Wait until the command runs in the guest, then kill the host. */
    bool started = false;
    for (int i = 0; i < 1200 && !started; i++) {
        char *t = slurp(ready);
        started = t && strstr(t, "started");
        free(t);
        if (!started)
            usleep(100000);
    }
    ck_assert_msg(started, "the guest never ran the command");
    ck_assert(qemus_below(pid, NULL, NULL) > 0);
    /* QEMU's pids, to follow them once their host is dead */
    pid_t qemus[16];
    int nq = 0;
    DIR *pd = opendir("/proc");
    struct dirent *pe;
    while (pd && (pe = readdir(pd)) && nq < 16) {
        pid_t q = (pid_t)atoi(pe->d_name);
        char cp[300], cb[4096];
        snprintf(cp, sizeof(cp), "/proc/%d/cmdline", (int)q);
        int cfd = q > 0 ? open(cp, O_RDONLY | O_CLOEXEC) : -1;
        if (cfd < 0)
            continue;
        ssize_t k = read(cfd, cb, sizeof(cb) - 1);
        close(cfd);
        if (k <= 0 || !memmem(cb, (size_t)k, "name=fy.ctl", 11))
            continue;
        for (pid_t a = q; a > 1; a = parent_of(a))
            if (a == pid) {
                qemus[nq++] = q;
                break;
            }
    }
    if (pd)
        closedir(pd);
    ck_assert_int_ge(nq, 1);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    uint64_t n = 0;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_gc(state, 0, &n, &e), 0);
    ck_assert_uint_ge(n, 1); /* the VMM's sandbox (and a restricted restore's attempt directory) */
    /* QEMU is gone (its sandbox was killed) and so is every attempt directory. */
    bool qemu = true;
    for (int i = 0; i < 100 && qemu; i++) {
        qemu = false;
        for (int k = 0; k < nq; k++) {
            char sp[64], sb[512] = "";
            snprintf(sp, sizeof(sp), "/proc/%d/stat", (int)qemus[k]);
            int sfd = open(sp, O_RDONLY | O_CLOEXEC);
            ssize_t m = sfd >= 0 ? read(sfd, sb, sizeof(sb) - 1) : 0;
            if (sfd >= 0)
                close(sfd);
            sb[m > 0 ? m : 0] = '\0';
            char *c = strrchr(sb, ')');
            if (c && c[2] != 'Z' && c[2] != 'X')
                qemu = true; /* still running (a zombie is dead) */
        }
        if (qemu)
            usleep(100000);
    }
    ck_assert_msg(!qemu, "a QEMU of the dead host is still running");
    char d[256];
    snprintf(d, sizeof(d), "%s/attempts", cache);
    DIR *dir = opendir(d);
    struct dirent *de;
    while (dir && (de = readdir(dir)))
        ck_assert_msg(de->d_name[0] == '.', "attempt directory left: %s", de->d_name);
    if (dir)
        closedir(dir);
}
END_TEST

START_TEST(test_bad_kernel) {
    /* A missing guest kernel is refused at prepare; a corrupt one (with
     * its release's modules present) at start, which extracts it; both
     * typed and named. */
    const char *argv[] = {"/bin/true", NULL};
    char release[128] = "";
    DIR *bd = opendir("/boot");
    struct dirent *be;
    while (bd && (be = readdir(bd)))
        if (!strncmp(be->d_name, "vmlinuz-", 8) && !release[0])
            snprintf(release, sizeof(release), "%s", be->d_name + 8);
    if (bd)
        closedir(bd);
    ck_assert(release[0]);
    for (int corrupt = 0; corrupt < 2; corrupt++) {
        char bogus[300];
        snprintf(bogus, sizeof(bogus), "%s/%s/vmlinuz-%s", scratch, corrupt ? "corrupt" : "missing", release);
        if (corrupt) {
            char d[200];
            snprintf(d, sizeof(d), "%s/corrupt", scratch);
            mkdir(d, 0755);
            FILE *f = fopen(bogus, "we");
            for (int i = 0; i < 4096; i++)
                fputc(i * 31 % 251, f);
            fputs("\xfd" "7zXZ", f); /* a magic without a stream */
            fclose(f);
        }
        setenv("FORGEYARD_VM_KERNEL", bogus, 1);
        fy_policy *p = vm_policy();
        fy_error *e = NULL;
        fy_prepared *pr = NULL;
        fy_handle *h = NULL;
        int r = fy_prepare(p, caps, argv, &pr, &e);
        int rp = r;
        if (corrupt && r == 0)
            r = fy_start(pr, &h, &e);
        unsetenv("FORGEYARD_VM_KERNEL");
        fy_prepared_free(pr);
        ck_assert_int_eq(rp, corrupt ? 0 : FY_E_UNSUPPORTED);
        ck_assert_ptr_null(h);
        ck_assert_int_eq(r, FY_E_UNSUPPORTED);
        ck_assert_msg(strstr(fy_error_message(e), bogus), "%s", fy_error_message(e));
        fy_error_free(e);
        fy_policy_free(p);
    }
}
END_TEST

START_TEST(test_prepare_writes_nothing) {
    /* fy_prepare (and so forgeyard doctor) names the kernel and initramfs
     * by digest without writing the cache: the first start does. */
    char fresh[160];
    snprintf(fresh, sizeof(fresh), "%s/fresh-cache", scratch);
    setenv("FORGEYARD_VM_CACHE", fresh, 1);
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, caps, argv, &pr, &e);
    setenv("FORGEYARD_VM_CACHE", cache, 1);
    ck_assert_msg(r == 0, "%s", e ? fy_error_message(e) : "");
    ck_assert_int_ne(access(fresh, F_OK), 0);
    fy_prepared_free(pr);
    fy_policy_free(p);
}
END_TEST

START_TEST(test_hw_virt_required) {
    /* A policy that requires hardware virtualization is refused where KVM
     * is not usable, naming it; where it is, the guest runs under KVM. */
    fy_policy *p = vm_policy();
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_set_control(p, FY_CONTROL_HW_VIRT, FY_MODE_REQUIRE, &e), 0);
    const char *argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, caps, argv, &pr, &e);
    if (fy_caps_has(caps, FY_CAP_KVM) == 1) {
        ck_assert_int_eq(r, 0);
        fy_prepared_free(pr);
    } else {
        ck_assert_int_eq(r, FY_E_UNSUPPORTED);
        ck_assert_msg(strstr(fy_error_message(e), "hardware-virtualization"), "%s", fy_error_message(e));
        fy_error_free(e);
    }
    fy_policy_free(p);
}
END_TEST

static void rm_rf(const char *path) {
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/rm", "rm", "-rf", "--one-file-system", path, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BAD_AGENT [FY_ATTACK]\n", argv[0]);
        return 2;
    }
    bad_agent = argv[1];
    attack = argc > 2 ? argv[2] : NULL;
    if (access("/usr/bin/qemu-system-x86_64", X_OK) != 0) {
        printf("SKIP: qemu-system-x86_64 is not installed (Debian: qemu-system-x86)\n");
        return 77;
    }
    strcpy(scratch, "/tmp/fy-vm-test.XXXXXX");
    if (!mkdtemp(scratch))
        return 1;
    chmod(scratch, 0755);
    snprintf(cache, sizeof(cache), "%s/cache", scratch);
    setenv("FORGEYARD_VM_CACHE", cache, 1);
    fy_error *e = NULL;
    if (fy_probe(0, &caps, &e) < 0) {
        fprintf(stderr, "probe: %s\n", fy_error_message(e));
        return 1;
    }
    /* The guest kernel: absent, the backend refuses (its own test). */
    fy_policy *p = NULL;
    fy_policy_new(FY_PROFILE_HIGH_ASSURANCE, &p, NULL);
    const char *probe_argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, caps, probe_argv, &pr, &e);
    fy_policy_free(p);
    if (r < 0) {
        const char *m = fy_error_message(e);
        if (strstr(m, "no guest kernel") || strstr(m, "qemu")) {
            printf("SKIP: %s\n", m);
            rm_rf(scratch);
            return 77;
        }
        fprintf(stderr, "prepare: %s\n", m);
        return 1;
    }
    fy_prepared_free(pr);

    /* FY_VM_ONLY=name,name: only those tests (a developer's shortcut: a
     * full run is long under TCG). */
    const char *only = getenv("FY_VM_ONLY");
#define ADD(t) do { if (!only || strstr(only, #t + 5)) tcase_add_test(tc, t); } while (0)
    Suite *s = suite_create("vm");
    TCase *tc = tcase_create("vm");
    tcase_set_timeout(tc, 300);
    ADD(test_unsupported);
    ADD(test_hw_virt_required);
    ADD(test_prepare_writes_nothing);
    ADD(test_bad_kernel);
    ADD(test_exit_streams_env_net_cold);
    ADD(test_exit_streams_env_net);
    ADD(test_template_attempts_apart);
    ADD(test_template_sealed_copy);
    ADD(test_template_corrupt_refused);
    ADD(test_template_cache_refused);
    ADD(test_workspace);
    ADD(test_workspace_cold);
    ADD(test_workspace_names_replaced);
    ADD(test_workspace_many_files);
    ADD(test_file_bind);
    ADD(test_workspace_removals);
    ADD(test_disk_files_quotas);
    ADD(test_workspace_unchanged);
    ADD(test_workspace_too_large);
    ADD(test_workspace_too_deep);
    ADD(test_secrets);
    ADD(test_fetch_only);
    ADD(test_fetch_only_clone);
    ADD(test_restricted_clone);
    ADD(test_writable_bind);
    ADD(test_cold_boot_control);
    ADD(test_fetch_only_refusals);
    ADD(test_attack_probes);
    ADD(test_exec_failure);
    ADD(test_timeout);
    ADD(test_cancel);
    ADD(test_oom);
    ADD(test_vmm_cpu_bound);
    ADD(test_vmm_in_the_id_range);
    ADD(test_terminals);
    ADD(test_prepare_without_caps);
    ADD(test_usage_counts_orphans);
    ADD(test_landlock_needs_the_host);
    ADD(test_attempts_leave_nothing);
    ADD(test_prestarted_clones);
    ADD(test_bad_garbage);
    ADD(test_bad_netframe);
    ADD(test_bad_dnsframe);
    ADD(test_bad_hugeframe);
    ADD(test_bad_flood);
    ADD(test_bad_silent);
    ADD(test_bad_silent_stdin);
    ADD(test_bad_exit_record);
    ADD(test_bad_escape);
    ADD(test_bad_panic);
    ADD(test_gc);
    ADD(test_dead_host_gc);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* the probe belongs to this process */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    fy_caps_free(caps);
    rm_rf(scratch);
    return failed ? 1 : 0;
}
