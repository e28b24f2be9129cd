/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forgeyard: the command-line client of libforgeyard-sandbox. A thin client
 * of the public API: nothing here is impossible for a host program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _WIN32
#include "cli-win.h" /* uname, geteuid, the console stop handling */
#else
#include <dirent.h>
#include <pwd.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#endif
#ifdef __linux__
#include <linux/magic.h> /* PROC_SUPER_MAGIC */
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#endif

#include <forgeyard/sandbox.h>

/* Exit statuses (documented in forgeyard(1)). */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2       /* usage error or invalid input */
#define EXIT_UNSUPPORTED 3 /* valid, but this host cannot satisfy it */

/* `forgeyard run`: the workload's own status when it exited; otherwise: */
#define RUN_TIMED_OUT 124          /* as timeout(1) */
#define RUN_CANCELLED 241
#define RUN_OUT_OF_MEMORY 242
#define RUN_RESOURCE_EXCEEDED 243
#define RUN_SANDBOX_VIOLATION 244
#define RUN_INFRASTRUCTURE 245
#define RUN_BAD_INVOCATION 246     /* bad option or invalid policy: nothing ran */
#define RUN_UNSUPPORTED 247        /* this host cannot give what the policy requires */
/* killed by a signal: 128 + the signal number */
#define SIGPIPE_NUMBER 13 /* (a result's signal: the POSIX hosts' number, on Windows too) */

static const char *prog = "forgeyard";

/* Which of fds 0, 1 and 2 were closed when we started (now /dev/null). */
static bool std_closed[3];

/* A closed standard stream (`forgeyard run ... >&-`) becomes /dev/null
 * before anything else is opened: no file of ours (a policy file, a pipe)
 * then takes fd 0, 1 or 2, and the command gets a stdout and a stderr. */
static void fill_std_fds(void) {
#ifndef _WIN32 /* (the CRT's standard streams: nothing takes their numbers) */
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int n = open("/dev/null", O_RDWR | O_NOCTTY); /* (the lowest free fd: this one) */
        if (n < 0)
            return;
        std_closed[fd] = true;
    }
#endif
}

#ifndef _WIN32
/* The CLI's own stdout and stderr are never handed to the sandbox (but
 * /dev/null): a descriptor shares its open file with the holder. Of a
 * terminal, it lets the workload read the operator's keystrokes and change
 * the terminal itself (termios, line discipline, flow control, window
 * size) after it is gone; of a file, truncate the log that earlier steps
 * wrote, clear O_APPEND or move the offset, so that the host's later
 * writes overwrite it; of a pipe or a socket, set O_NONBLOCK (the host's
 * next writer then fails with EAGAIN), shrink the pipe or shut the socket
 * down. The command writes into a pipe of ours instead, and a thread of
 * ours copies that to the real one (one pipe when stdout and stderr are
 * the same file, so that their order stays).
 *
 * When the real one fails, the relay's reading end is closed: the command's
 * next write fails with EPIPE (and SIGPIPE), as it would have written to
 * the real one itself (`forgeyard run -- yes | head -1` ran to the deadline,
 * its output read and dropped). A failure other than a reader gone (a
 * full disk, an I/O error) is kept, and the command is then not reported
 * as a success (out_relay_verdict). */
struct out_relay {
    int rd, wr, to;
    bool gone; /* the real one failed: the reading end is closed */
    int err;   /* why, when it was not EPIPE */
};
static struct out_relay out_relays[2] = {{-1, -1, -1, false, 0}, {-1, -1, -1, false, 0}};
static pthread_mutex_t out_relay_lock = PTHREAD_MUTEX_INITIALIZER;
static bool out_relay_started;

/* SIGPIPE held back on this thread around a write whose reader may be gone
 * (EPIPE instead), and one so raised taken back: never ignored process-wide,
 * since an ignored signal is inherited by what the library starts. */
static void sigpipe_hold(sigset_t *old) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, old);
}

static void sigpipe_release(const sigset_t *old) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    struct timespec none = {0, 0};
    while (sigtimedwait(&pipe, NULL, &none) == SIGPIPE)
        ;
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Copies what the pipes hold now; 0 when they were empty. Under the lock. */
static int out_relay_copy(void) {
    int moved = 0;
    for (int i = 0; i < 2; i++) {
        struct out_relay *t = &out_relays[i];
        if (t->rd < 0)
            continue;
        char buf[16384];
        ssize_t n = read(t->rd, buf, sizeof(buf));
        if (n <= 0)
            continue;
        moved = 1;
        for (ssize_t off = 0; off < n && !t->gone;) {
            ssize_t w = write(t->to, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && errno == EAGAIN) {
                struct pollfd pw = {.fd = t->to, .events = POLLOUT};
                poll(&pw, 1, 1000);
                continue;
            }
            if (w <= 0) {
                int e = w < 0 ? errno : EIO;
                t->gone = true;
                if (e != EPIPE)
                    t->err = e;
                close(t->rd); /* (the command's next write: EPIPE) */
                t->rd = -1;
                break;
            }
            off += w;
        }
    }
    return moved;
}

static void *out_relay_thread(void *unused) {
    (void)unused;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        struct pollfd pfd[2];
        nfds_t n = 0;
        pthread_mutex_lock(&out_relay_lock); /* (a drain may close one) */
        for (int i = 0; i < 2; i++)
            if (out_relays[i].rd >= 0)
                pfd[n++] = (struct pollfd){.fd = out_relays[i].rd, .events = POLLIN};
        pthread_mutex_unlock(&out_relay_lock);
        if (n == 0)
            return NULL; /* (both real ones failed: nothing more to copy) */
        /* (bounded: a descriptor a drain closed meanwhile is seen again) */
        if (poll(pfd, n, 1000) < 0 && errno != EINTR)
            return NULL;
        pthread_mutex_lock(&out_relay_lock);
        out_relay_copy();
        pthread_mutex_unlock(&out_relay_lock);
    }
}

/* Everything the sandboxes wrote so far reaches the terminal (called once
 * a handle is freed: its processes are gone, their bytes in the pipe). */
static void out_relay_drain(void) {
    if (!out_relay_started)
        return;
    /* (a reader gone: EPIPE, never SIGPIPE here, as on the relay's thread) */
    sigset_t old;
    sigpipe_hold(&old);
    pthread_mutex_lock(&out_relay_lock);
    while (out_relay_copy())
        ;
    pthread_mutex_unlock(&out_relay_lock);
    sigpipe_release(&old);
}

/* Whether fd (1 or 2) is relayed: anything but /dev/null (a descriptor
 * that fstat cannot see is not ours to relay either). */
static bool relayed(int fd, struct stat *st) {
    return fstat(fd, st) == 0 && !(S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3);
}

/* The descriptor to hand the sandbox for fd (1 or 2): fd itself when it is
 * /dev/null, else the write end of a relay's pipe; -1 on failure. */
static int sandbox_out_fd(int fd) {
    struct stat st;
    if (!relayed(fd, &st))
        return fd;
    if (!out_relay_started) {
        struct stat s1, s2;
        bool r1 = relayed(1, &s1), r2 = relayed(2, &s2);
        bool same = r1 && r2 && s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino && s1.st_rdev == s2.st_rdev;
        for (int i = 0; i < 2; i++) {
            if (!(i == 0 ? r1 : r2) || (i == 1 && same))
                continue;
            int fds[2];
            if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                return -1;
            /* (the command's end blocks, as a terminal would) */
            fcntl(fds[1], F_SETFL, 0);
            out_relays[i] = (struct out_relay){.rd = fds[0], .wr = fds[1], .to = i + 1};
        }
        pthread_t t;
        if (pthread_create(&t, NULL, out_relay_thread, NULL) != 0)
            return -1;
        pthread_detach(t);
        out_relay_started = true;
    }
    struct out_relay *t = &out_relays[fd - 1];
    if (t->wr < 0)
        t = &out_relays[0]; /* stderr the same file as stdout */
    return t->wr;
}

/* Whether a real stdout or stderr failed (its reader gone, say). */
static bool out_relay_gone(void) { return out_relays[0].gone || out_relays[1].gone; }

/* A command's exit status, unless the CLI could not write its output (other
 * than a reader gone, which the command met as EPIPE itself): then a
 * success is not one, and the status is RUN_INFRASTRUCTURE. */
static int out_relay_verdict(int status) {
    out_relay_drain();
    for (int i = 0; i < 2; i++) {
        int e = out_relays[i].err;
        if (!e)
            continue;
        if (out_relays[i].to != 2) /* (a message on a stderr that failed is lost, harmlessly) */
            fprintf(stderr, "%s: the command's %s could not be written: %s\n", prog, i ? "stderr" : "output",
                    strerror(e));
        if (status == 0)
            status = RUN_INFRASTRUCTURE;
    }
    return status;
}
#else
static void out_relay_drain(void) {}
static int out_relay_verdict(int status) { return status; }
static bool out_relay_gone(void) { return false; }
static int sandbox_out_fd(int fd) { return fd; }
#endif

static bool is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  version                      print the CLI and library versions\n"
            "  capabilities [--json|--platform-properties] [--fresh]\n"
            "                               what this host can enforce, and why not (--fresh:\n"
            "                               probe again instead of reading the saved probe;\n"
            "                               --platform-properties: key=value lines for schedulers)\n"
            "  doctor                       what works, what is missing, how to fix it\n"
            "  policy check FILE            validate a policy file and negotiate it here\n"
            "  policy show FILE|--profile NAME\n"
            "                               print the canonical JSON of a policy\n"
            "  gc [--state-dir DIR]         destroy what crashed host programs left behind\n"
            "  gc --images                  collect the image cache (as image gc)\n"
            "  image inspect REF            verify an image's manifest and config, print them as JSON\n"
            "  image unpack [--cache DIR] REF\n"
            "                               verify and unpack an image into the layer cache\n"
            "  image gc [--cache DIR] [--max-age DURATION] [--max-size SIZE]\n"
            "                               remove unused layers (default: unused for 30 days)\n"
            "  test [--json] [--profile NAME]\n"
            "                               qualify this host: probe the sandbox's boundary\n"
            "  run [OPTIONS] -- COMMAND [ARG...]\n"
            "                               run a command in a fresh sandbox (see forgeyard(1))\n"
            "  wrap [OPTIONS] -- COMMAND [ARG...]\n"
            "                               a remote-execution wrapper: COMMAND in a sandbox, in\n"
            "                               the current directory, with this environment exactly\n"
            "  action run ACTION.json [OPTIONS]\n"
            "                               run a hermetic action: declared inputs in, declared\n"
            "                               outputs out (see forgeyard-action(5))\n"
            "  action gc [--cache DIR] [--max-age DURATION] [--max-size SIZE]\n"
            "                               collect the cache of unpacked action input archives\n"
            "  job run JOB.json             run the members of one job on a private job network\n"
            "                               (see forgeyard(1))\n"
            "  help [COMMAND]               this summary, or a command's own usage\n"
            "\n"
            "See forgeyard(1), forgeyard-policy(5) and forgeyard-sandbox(7).\n",
            prog);
}

/* s for the operator's terminal: control characters (an image's entry
 * name, a workload's path, a guest's message may hold any) as \xNN, so
 * that none retitles the terminal, clears it or fakes a line; cut to the
 * buffer. */
static const char *term_safe(const char *s, char *buf, size_t size) {
    size_t n = 0;
    for (; s && *s && n + 5 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
        else
            buf[n++] = (char)c;
    }
    buf[n] = 0;
    return buf;
}

static int report(const char *what, fy_error *err, int code) {
    const char *loc = fy_error_location(err);
    static char sl[4096 + 64], sm[8192];
    if (loc)
        fprintf(stderr, "%s: %s: %s: %s\n", prog, what, term_safe(loc, sl, sizeof(sl)),
                term_safe(fy_error_message(err), sm, sizeof(sm)));
    else if (err)
        fprintf(stderr, "%s: %s: %s (%s, step %s)\n", prog, what, term_safe(fy_error_message(err), sm, sizeof(sm)),
                fy_error_name(fy_error_code(err)), fy_step_name(fy_error_step(err)));
    else
        fprintf(stderr, "%s: %s: %s\n", prog, what, fy_strerror(code));
    fy_error_free(err);
    return code;
}

/* Reads a whole file; a little more than the library accepts, so that the
 * library (not the CLI) rejects oversize input with its own error. */
static char *read_file(const char *path, size_t *ret_len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rbe");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s: is a directory, not a policy file\n", prog, path);
        if (f != stdin)
            fclose(f);
        return NULL;
    }
    size_t cap = (8u << 20) + 2, len = 0;
    char *buf = malloc(cap);
    if (buf) {
        size_t n;
        while (len < cap && (n = fread(buf + len, 1, cap - len, f)) > 0)
            len += n;
        if (ferror(f)) {
            fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
            free(buf);
            buf = NULL;
        }
    }
    if (f != stdin)
        fclose(f);
    *ret_len = len;
    return buf;
}

/* A policy file applied on top of p (reports its errors). */
static int load_policy_onto(fy_policy *p, const char *path) {
    size_t len;
    char *json = read_file(path, &len);
    if (!json)
        return -1;
    fy_error *err = NULL;
    int r = fy_policy_load_json(p, json, len, &err);
    free(json);
    if (r < 0)
        report(path, err, r);
    return r < 0 ? -1 : 0;
}

static int load_policy(const char *path, fy_policy **ret) {
    size_t len;
    char *json = read_file(path, &len);
    if (!json)
        return EXIT_FAIL;
    fy_policy *p = NULL;
    fy_error *err = NULL;
    int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &err);
    if (r >= 0)
        r = fy_policy_load_json(p, json, len, &err);
    free(json);
    if (r < 0) {
        fy_policy_free(p);
        report(path, err, r);
        return r == FY_E_POLICY ? EXIT_USAGE : EXIT_FAIL;
    }
    *ret = p;
    return EXIT_OK;
}

static int cmd_version(void) {
    printf("forgeyard %s (libforgeyard-sandbox %s)\n", FY_VERSION_STRING, fy_version_string());
    return EXIT_OK;
}

/* Where the CLI keeps its probe snapshot between runs: FORGEYARD_CACHE_DIR,
 * else the library's default (/run/forgeyard as root,
 * $XDG_RUNTIME_DIR/forgeyard otherwise). */
static const char *snapshot_dir(void) {
    const char *d = getenv("FORGEYARD_CACHE_DIR");
    return d && d[0] == '/' ? d : NULL;
}

/* The probe, from the persisted snapshot unless fresh. */
static int probe_flags(uint64_t flags, fy_caps **ret) {
    fy_error *err = NULL;
    int r = fy_probe_snapshot(flags, snapshot_dir(), ret, &err);
    if (r < 0)
        return report("probe", err, r), EXIT_FAIL;
    return EXIT_OK;
}

static int probe(fy_caps **ret) { return probe_flags(0, ret); }

/* After a refusal, or a failed start, on caps read from the saved probe:
 * probe again (which saves the fresh probe) and let the caller renegotiate
 * once. 1 when *caps is now a fresh probe, 0 when it already was one. */
static uint64_t run_vm_flag = FY_PROBE_NO_VM; /* 0 once a run needed the VM probes */

static int reprobe_once(fy_caps **caps) {
    if (!*caps || fy_caps_from_snapshot(*caps) != 1)
        return 0;
    fy_caps *fresh = NULL;
    if (probe_flags(run_vm_flag | FY_PROBE_FRESH, &fresh) != EXIT_OK)
        return 0;
    /* Which capabilities the fresh probe finds otherwise than the saved one
     * said: only then was the saved probe wrong about this host. (Where
     * they agree the retry may still differ: a mechanism's facts, such as
     * its cgroup directory, are not in the public capabilities.) */
    char changed[512] = "";
    size_t len = 0;
    for (uint32_t cap = 1; cap <= FY_CAP_MAX_; cap++) {
        int64_t was = 0, now = 0;
        int had = fy_caps_has(*caps, cap), has = fy_caps_has(fresh, cap);
        fy_caps_value(*caps, cap, &was);
        fy_caps_value(fresh, cap, &now);
        if (had == has && was == now)
            continue;
        const char *name = fy_cap_name(cap);
        int w = snprintf(changed + len, sizeof(changed) - len, "%s%s %s", len ? ", " : "", name ? name : "?",
                         has == 1 && had != 1 ? "present" : has != 1 && had == 1 ? "missing" : "changed");
        if (w < 0 || (size_t)w >= sizeof(changed) - len)
            break;
        len += (size_t)w;
    }
    if (len)
        fprintf(stderr, "%s: note: the saved probe of this host was stale (now %s); probed the host again\n", prog,
                changed);
    else
        fprintf(stderr, "%s: note: probed the host again to confirm the saved probe: every capability agrees\n",
                prog);
    fy_caps_free(*caps);
    *caps = fresh;
    return 1;
}

static bool asks_for_vm(const fy_policy *p);

/* Says that the run goes to a virtual machine although the policy did not
 * ask for one, and (with why, len bytes of it) what lighter backend fell
 * short. */
static void note_vm_start(const fy_prepared *pr, const char *why, int len) {
    fprintf(stderr, "%s: note: running in a virtual machine (%s), a slower start: nothing lighter here "
                    "enforces what the policy requires%s%.*s%s\n", prog, fy_prepared_backend(pr), why ? " (" : "",
            why ? len : 0, why ? why : "", why ? ")" : "");
}

/* Prepares again on the fresh probe reprobe_once made (a start failed on
 * the saved one); where nothing lighter fits the host as it is now, with
 * the VM probes too, as a start without a saved probe makes them (a stale
 * memory controller ended in "qemu: not probed"). */
static int renegotiate(fy_policy *p, fy_caps **caps, const char *const *cmd, fy_prepared **pr, fy_error **err) {
    int r = fy_prepare(p, *caps, cmd, pr, err);
    fy_caps *vm_caps = NULL;
    if (r != FY_E_UNSUPPORTED || !run_vm_flag || probe_flags(FY_PROBE_FRESH, &vm_caps) != EXIT_OK)
        return r;
    fy_error_free(*err);
    *err = NULL;
    fy_caps_free(*caps);
    *caps = vm_caps;
    run_vm_flag = 0;
    r = fy_prepare(p, *caps, cmd, pr, err);
    if (r == 0 && fy_prepared_level(*pr) == FY_LEVEL_VIRTUAL_MACHINE && !asks_for_vm(p))
        note_vm_start(*pr, NULL, 0);
    return r;
}

/* A setup step whose failure a stale probe can explain (a mechanism), as
 * opposed to the policy's own paths (mount) or the command (exec). */
static bool mechanism_step(uint32_t step) {
    switch (step) {
    case FY_STEP_SPAWN: case FY_STEP_USERNS: case FY_STEP_UID_MAP: case FY_STEP_PIVOT_ROOT: case FY_STEP_PROC:
    case FY_STEP_DEV: case FY_STEP_NETNS: case FY_STEP_CGROUP: case FY_STEP_CGROUP_LIMIT: case FY_STEP_SECCOMP:
    case FY_STEP_LANDLOCK: case FY_STEP_CAPS:
        return true;
    default:
        return false;
    }
}

static int cmd_platform_properties(const fy_caps *c);

/* What a backend folder's probe verified per control (the "controls" of
 * fy_caps_to_json, where there are any: Windows), one per line. */
static void print_controls(const fy_caps *c) {
    char *s = NULL;
    if (fy_caps_to_json(c, &s, NULL) < 0)
        return;
    const char *p = strstr(s, "\"controls\": {");
    if (p) {
        printf("\n%-34s %s\n", "CONTROL", "VERDICT");
        for (p = strchr(p, '{') + 1; (p = strpbrk(p, "\"}")) && *p == '"';) {
            const char *k = p + 1, *ke = strchr(k, '"');
            const char *v = ke ? strstr(ke, ": \"") : NULL;
            if (!v)
                break;
            v += 3;
            const char *ve = v;
            while (*ve && !(*ve == '"' && ve[-1] != '\\'))
                ve++;
            printf("%-34.*s %.*s\n", (int)(ke - k), k, (int)(ve - v), v);
            p = *ve ? ve + 1 : ve;
        }
    }
    fy_free(s);
}

static int cmd_capabilities(int json, bool fresh) {
    fy_caps *c = NULL;
    if (probe_flags(fresh ? FY_PROBE_FRESH : 0, &c) != EXIT_OK)
        return EXIT_FAIL;
    if (json == 2) {
        int r = cmd_platform_properties(c);
        fy_caps_free(c);
        return r;
    }
    if (json) {
        char *s = NULL;
        fy_error *err = NULL;
        int r = fy_caps_to_json(c, &s, &err);
        fy_caps_free(c);
        if (r < 0)
            return report("capabilities", err, r), EXIT_FAIL;
        printf("%s\n", s);
        fy_free(s);
        return EXIT_OK;
    }
    printf("%-18s %-9s %-6s %s\n", "CAPABILITY", "STATE", "VALUE", "DETAIL");
    for (uint32_t cap = 1; fy_cap_name(cap); cap++) {
        int64_t v = 0;
        fy_caps_value(c, cap, &v);
        printf("%-18s %-9s %-6lld %s\n", fy_cap_name(cap), fy_caps_has(c, cap) == 1 ? "yes" : "no",
               (long long)v, fy_caps_reason(c, cap));
    }
    print_controls(c);
    printf("\nstrongest isolation here: %s\n", fy_level_name((uint32_t)fy_caps_max_level(c)));
    fy_caps_free(c);
    return EXIT_OK;
}

/* ---- capabilities --platform-properties ---- */

/* Whether a policy of profile, changed by tweak, negotiates on this host
 * (fy_prepare of /bin/true; nothing runs). 1 and *backend (a static name),
 * 0 when refused, negative when the policy cannot be made. */
struct tweak {
    uint32_t level; /* 0: the profile's own isolation; else min = preferred = level */
    uint32_t net;   /* 0: the profile's own network mode */
};

static int negotiates(const fy_caps *c, uint32_t profile, struct tweak t, const char **backend,
                      fy_prepared **keep) {
    fy_policy *p = NULL;
    fy_prepared *pr = NULL;
    fy_error *err = NULL;
    const char *const argv[] = {"/bin/true", NULL};
    int r = fy_policy_new(profile, &p, &err);
    if (r >= 0 && t.level)
        r = fy_policy_set_isolation(p, t.level, t.level, &err);
    if (r >= 0 && t.net) {
        r = fy_policy_set_network(p, t.net, &err);
        /* Restricted egress needs a destination; none is contacted here. */
        if (r >= 0 && t.net != FY_NET_DENY && t.net != FY_NET_ALLOW)
            r = fy_policy_add_destination(p, "192.0.2.1", FY_PROTO_TCP, 443, 443, &err);
    }
    if (r < 0) {
        fy_policy_free(p);
        fy_error_free(err);
        return r;
    }
    r = fy_prepare(p, c, argv, &pr, &err);
    fy_policy_free(p);
    fy_error_free(err);
    if (r < 0)
        return 0;
    if (backend)
        *backend = fy_prepared_backend(pr);
    if (keep)
        *keep = pr;
    else
        fy_prepared_free(pr);
    return 1;
}

/* Appends name to a comma-separated list (bounded). */
static void list_add(char *buf, size_t len, const char *name) {
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", n ? "," : "", name);
}

/* What a scheduler matches on (Bazel's exec_properties, a runner's labels):
 * each value is what this host negotiates, never what a probe merely saw
 * (QEMU installed is not a VM backend that runs). */
static int cmd_platform_properties(const fy_caps *c) {
    struct utsname u;
    if (uname(&u) < 0)
        return perror("uname"), EXIT_FAIL;
    char levels[256] = "", profiles[256] = "", nets[128] = "", controls[512] = "";
    const char *vm = "none", *container = "none";
    for (uint32_t l = FY_LEVEL_PROCESS; l <= FY_LEVEL_CONFIDENTIAL_VM; l++) {
        const char *b = NULL;
        fy_prepared *pr = NULL;
        if (negotiates(c, FY_PROFILE_STANDARD_CI, (struct tweak){l, 0}, &b, &pr) == 1) {
            list_add(levels, sizeof(levels), fy_level_name(l));
            /* The backend that gives that very level: a VM satisfies a
             * container minimum too, but is no container backend. */
            bool exact = fy_prepared_level(pr) == (int)l;
            if (l == FY_LEVEL_VIRTUAL_MACHINE && exact)
                vm = b;
            if (l == FY_LEVEL_CONTAINER && exact)
                container = b;
            fy_prepared_free(pr);
        }
    }
    for (uint32_t prof = 1; fy_profile_name(prof); prof++)
        if (negotiates(c, prof, (struct tweak){0, 0}, NULL, NULL) == 1)
            list_add(profiles, sizeof(profiles), fy_profile_name(prof));
    /* Egress modes that are enforced (host network is not enforcement),
     * under standard-ci: release denies every other mode by design, so
     * asking it would hide what the host can enforce. */
    static const struct { uint32_t mode; const char *name; } modes[] = {
        {FY_NET_DENY, "deny"}, {FY_NET_RESTRICTED, "restricted"}, {FY_NET_FETCH_ONLY, "fetch-only"},
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (negotiates(c, FY_PROFILE_STANDARD_CI, (struct tweak){0, modes[i].mode}, NULL, NULL) == 1)
            list_add(nets, sizeof(nets), modes[i].name);
    fy_prepared *rel = NULL;
    if (negotiates(c, FY_PROFILE_RELEASE, (struct tweak){0, 0}, NULL, &rel) == 1) {
        for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++)
            if (fy_prepared_control(rel, ctl) == FY_CONTROL_STATE_ENFORCED)
                list_add(controls, sizeof(controls), fy_control_name(ctl));
        fy_prepared_free(rel);
    }
    printf("OSFamily=%s\n", u.sysname);
    printf("cpu=%s\n", u.machine);
    printf("forgeyard-version=%s\n", fy_version_string());
    printf("sandbox-level=%s\n", fy_level_name((uint32_t)fy_caps_max_level(c)));
    printf("sandbox-levels=%s\n", levels[0] ? levels : "none");
    printf("sandbox-profiles=%s\n", profiles[0] ? profiles : "none");
    printf("container=%s\n", container);
    printf("vm=%s\n", vm);
    printf("network=%s\n", nets[0] ? nets : "none");
    printf("release-controls=%s\n", controls[0] ? controls : "none");
    return EXIT_OK;
}

/* Groups for the doctor's table: what each feature is for. */
static const struct {
    const char *title;
    uint32_t caps[12];
} groups[] = {
    {"Namespaces", {FY_CAP_USERNS, FY_CAP_MOUNTNS, FY_CAP_PIDNS, FY_CAP_NETNS, FY_CAP_IPCNS, FY_CAP_UTSNS,
                    FY_CAP_CGROUPNS, FY_CAP_UID_RANGE, 0}},
    {"Kernel interfaces", {FY_CAP_PIDFD, FY_CAP_CLONE3, FY_CAP_OPENAT2, FY_CAP_MOUNT_API, FY_CAP_EXEC_INIT, 0}},
    {"Hardening", {FY_CAP_NO_NEW_PRIVS, FY_CAP_SECCOMP, FY_CAP_SECCOMP_NOTIFY, FY_CAP_LANDLOCK, 0}},
    {"Resource control", {FY_CAP_CGROUP_V2, FY_CAP_CGROUP_V1, FY_CAP_CGROUP_MEMORY, FY_CAP_CGROUP_PIDS,
                          FY_CAP_CGROUP_CPU, FY_CAP_CGROUP_IO, FY_CAP_CGROUP_FREEZE, FY_CAP_CGROUP_KILL,
                          FY_CAP_CLONE_INTO_CGROUP, 0}},
    {"Network enforcement", {FY_CAP_NFTABLES, FY_CAP_PASTA, 0}},
    {"Virtual machines", {FY_CAP_KVM, FY_CAP_QEMU, FY_CAP_QEMU_TCG, FY_CAP_QEMU_MICROVM, FY_CAP_FIRECRACKER,
                          FY_CAP_CLOUD_HYPERVISOR, FY_CAP_CONFIDENTIAL_VM, 0}},
    {"Containers", {FY_CAP_OCI_RUNTIME, 0}},
};

/* Negotiates a profile against this host; prints the outcome. Returns the
 * level reached, or a negative code. */
static int doctor_profile(const fy_caps *c, uint32_t profile) {
    fy_policy *p = NULL;
    fy_prepared *pr = NULL;
    fy_error *err = NULL;
    const char *const argv[] = {"/bin/true", NULL};
    int r = fy_policy_new(profile, &p, &err);
    if (r >= 0)
        r = fy_prepare(p, c, argv, &pr, &err);
    fy_policy_free(p);
    printf("  %-15s ", fy_profile_name(profile));
    if (r < 0) {
        printf("NO   %s\n", fy_error_message(err));
        fy_error_free(err);
        return r;
    }
    int level = fy_prepared_level(pr);
    printf("ok   %s isolation via %s", fy_level_name((uint32_t)level), fy_prepared_backend(pr));
    int first = 1;
    for (uint32_t ctl = 1; ctl <= FY_CONTROL_MAX_; ctl++)
        if (fy_prepared_control(pr, ctl) == FY_CONTROL_STATE_DROPPED) {
            printf("%s", first ? "; preferred but unavailable: " : ", ");
            first = 0;
            printf("%s", fy_control_name(ctl));
        }
    printf("\n");
    fy_prepared_free(pr);
    return level;
}

/* 1 when the sysctl file reads "1", 0 when "0", -1 when unreadable. */
static int read_flag(const char *path) {
    char b[8] = "";
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(b, 1, sizeof(b) - 1, f);
    fclose(f);
    return n ? b[0] == '1' : -1;
}

/* The network modes: whether each prepares here (standard-ci), and what
 * restricted needs of the host that the library never sets itself. */
static void doctor_network(const fy_caps *c) {
    static const struct { uint32_t mode; const char *name; } modes[] = {
        {FY_NET_DENY, "deny"}, {FY_NET_RESTRICTED, "restricted"}, {FY_NET_FETCH_ONLY, "fetch-only"},
    };
    printf("\nNetwork modes on this host (standard-ci)\n");
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        fy_policy *p = NULL;
        fy_prepared *pr = NULL;
        fy_error *err = NULL;
        const char *const argv[] = {"/bin/true", NULL};
        int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &err);
        if (r >= 0 && modes[i].mode != FY_NET_DENY)
            r = fy_policy_add_destination(p, "192.0.2.1", FY_PROTO_TCP, 443, 443, &err); /* (never contacted) */
        if (r >= 0)
            r = fy_policy_set_network(p, modes[i].mode, &err);
        if (r >= 0)
            r = fy_prepare(p, c, argv, &pr, &err);
        printf("  %-15s %s  %s\n", modes[i].name, r >= 0 ? "ok " : "NO ", r >= 0 ? "enforced" : fy_error_message(err));
        fy_error_free(err);
        fy_prepared_free(pr);
        fy_policy_free(p);
    }
    int f4 = read_flag("/proc/sys/net/ipv4/ip_forward"), f6 = read_flag("/proc/sys/net/ipv6/conf/all/forwarding");
    printf("  restricted, uplink the host's namespace (the default): the host must forward and masquerade\n"
           "  100.127.0.0/16 (or the link subnet set) towards its network; this host forwards IPv4: %s, IPv6: %s.\n"
           "  The library never changes that; --network-uplink names another namespace.\n",
           f4 < 0 ? "unknown" : f4 ? "yes" : "no", f6 < 0 ? "unknown" : f6 ? "yes" : "no");
    printf("  fetch-only: the proxy connects from the host's own namespace (or, as root, --network-uplink);\n"
           "  it needs no host setting and no package.\n");
}

static int cmd_doctor(void) {
    fy_caps *c = NULL;
    if (probe(&c) != EXIT_OK)
        return EXIT_FAIL;
    printf("forgeyard doctor (libforgeyard-sandbox %s)\n", fy_version_string());
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        printf("\n%s\n", groups[g].title);
        for (size_t i = 0; groups[g].caps[i]; i++) {
            uint32_t cap = groups[g].caps[i];
            int has = fy_caps_has(c, cap) == 1;
            printf("  %-4s %-18s %s\n", has ? "ok" : "--", fy_cap_name(cap), fy_caps_reason(c, cap));
            const char *hint = fy_caps_hint(c, cap);
            if (!has && hint)
                printf("       %-18s fix: %s\n", "", hint);
        }
    }
    print_controls(c);
    printf("\nProfiles on this host\n");
    int ci = doctor_profile(c, FY_PROFILE_STANDARD_CI);
    doctor_profile(c, FY_PROFILE_RELEASE);
    doctor_profile(c, FY_PROFILE_DEVELOPMENT);
    doctor_profile(c, FY_PROFILE_HIGH_ASSURANCE);
    doctor_network(c);
    printf("\nStrongest isolation available: %s\n", fy_level_name((uint32_t)fy_caps_max_level(c)));
    fy_caps_free(c);
    return ci >= FY_LEVEL_NAMESPACE ? EXIT_OK : EXIT_FAIL;
}

/* `forgeyard policy` with a missing or extra argument: its own usage. */
/* The usage of policy SUB ("" for both) on f: EXIT_USAGE on stderr (a
 * mistake), EXIT_OK on stdout (asked for with --help). */
static int policy_usage_to(FILE *f, const char *sub) {
    if (strcmp(sub, "show") != 0)
        fprintf(f, "usage: %s policy check FILE\n", prog);
    if (strcmp(sub, "check") != 0)
        fprintf(f, "usage: %s policy show FILE|--profile NAME\n", prog);
    fprintf(f, "(FILE is a policy file, or - for the standard input; see forgeyard-policy(5))\n");
    return f == stdout ? EXIT_OK : EXIT_USAGE;
}

static int policy_usage(const char *sub) { return policy_usage_to(stderr, sub); }

static int cmd_policy_check(const char *path) {
    fy_policy *p = NULL;
    int rc = load_policy(path, &p);
    if (rc != EXIT_OK)
        return rc;
    fy_caps *c = NULL;
    if (probe(&c) != EXIT_OK) {
        fy_policy_free(p);
        return EXIT_FAIL;
    }
    const char *const argv[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    fy_error *err = NULL;
    int r = fy_prepare(p, c, argv, &pr, &err);
    fy_policy_free(p);
    fy_caps_free(c);
    if (r == FY_E_UNSUPPORTED) {
        printf("valid, but this host cannot satisfy it: %s\n", fy_error_message(err));
        fy_error_free(err);
        return EXIT_UNSUPPORTED;
    }
    if (r < 0)
        return report(path, err, r), r == FY_E_POLICY ? EXIT_USAGE : EXIT_FAIL;
    char *json = NULL;
    r = fy_prepared_to_json(pr, &json, &err);
    printf("ok: %s isolation via %s%s\n", fy_level_name((uint32_t)fy_prepared_level(pr)), fy_prepared_backend(pr),
           fy_prepared_is_impure(pr) ? " (impure)" : "");
    fy_prepared_free(pr);
    if (r < 0)
        return report("plan", err, r), EXIT_FAIL;
    printf("%s\n", json);
    fy_free(json);
    return EXIT_OK;
}

static int cmd_policy_show(int argc, char **argv) {
    fy_policy *p = NULL;
    fy_error *err = NULL;
    if (argc == 2 && strcmp(argv[0], "--profile") == 0) {
        int prof = fy_profile_from_name(argv[1]);
        if (prof < 0) {
            fprintf(stderr, "%s: unknown profile \"%s\" (development, standard-ci, release, high-assurance)\n", prog,
                    argv[1]);
            return EXIT_USAGE;
        }
        int r = fy_policy_new((uint32_t)prof, &p, &err);
        if (r < 0)
            return report("policy", err, r), EXIT_FAIL;
    } else if (argc == 1 && (argv[0][0] != '-' || !argv[0][1])) {
        /* (A file; "-" is standard input. "--profile" without its name,
         * "--help": the usage, not a file of that name.) */
        int rc = load_policy(argv[0], &p);
        if (rc != EXIT_OK)
            return rc;
    } else {
        return policy_usage("show");
    }
    char *json = NULL;
    int r = fy_policy_to_json(p, &json, &err);
    fy_policy_free(p);
    if (r < 0)
        return report("policy", err, r), EXIT_FAIL;
    printf("%s\n", json);
    fy_free(json);
    return EXIT_OK;
}

/* ---- forgeyard run ---- */

struct run_opts {
    const char *profile, *policy, *result;
    fy_policy *p;
};

/* Applies one JSON fragment through the library's own parser, so sizes and
 * durations are read exactly as in policy files. */
/* fmt holds exactly one %s, replaced by value. */
static int apply_json(fy_policy *p, const char *opt, const char *fmt, const char *value) {
    char *json = NULL;
    /* value is embedded as a JSON string: refuse characters that need escaping. */
    for (const char *c = value; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
            fprintf(stderr, "%s: %s: invalid value \"%s\"\n", prog, opt, value);
            return -1;
        }
    const char *at = strstr(fmt, "%s");
    if (!at || asprintf(&json, "%.*s%s%s", (int)(at - fmt), fmt, value, at + 2) < 0)
        return -1;
    fy_error *err = NULL;
    int r = fy_policy_load_json(p, json, strlen(json), &err);
    free(json);
    if (r < 0) {
        fprintf(stderr, "%s: %s %s: %s\n", prog, opt, *value ? value : "''", fy_error_message(err));
        fy_error_free(err);
        return -1;
    }
    return 0;
}

/* (err is read only after the call that fills it has run: argument
 * evaluation order is unspecified, so the caller passes its address.) */
static int check(int r, const char *opt, fy_error **errp) {
    fy_error *err = *errp;
    *errp = NULL;
    if (r >= 0)
        return 0;
    fprintf(stderr, "%s: %s: %s%s%s\n", prog, opt, fy_error_location(err) ? fy_error_location(err) : "",
            fy_error_location(err) ? ": " : "", fy_error_message(err));
    fy_error_free(err);
    return -1;
}

/* A host path given relative to the current directory, made absolute
 * (the policy takes absolute paths only) by joining it to the current
 * directory (which the kernel names without links) and removing "." and
 * ".." textually: no symbolic link in it is followed here, so the library
 * refuses one on a workspace path as it does on an absolute path (a
 * checked-out tree's `src -> /etc`, given as --source src, was resolved
 * here and the host's /etc became the source). Kept until the process
 * ends. */
static char *abs_kept[256];
static size_t abs_nkept;
static void abs_free(void) {
    for (size_t i = 0; i < abs_nkept; i++)
        free(abs_kept[i]);
    abs_nkept = 0;
}
static const char *host_abs(const char *path) {
#ifdef _WIN32
    return path;
#else
    if (!path[0] || path[0] == '/' || abs_nkept == sizeof(abs_kept) / sizeof(abs_kept[0]))
        return path;
    char cwd[PATH_MAX], *joined = NULL;
    if (!getcwd(cwd, sizeof(cwd)) || asprintf(&joined, "%s/%s", cwd, path) < 0)
        return path;
    char *r = malloc(strlen(joined) + 2);
    if (!r) {
        free(joined);
        return path;
    }
    size_t n = 0;
    for (char *c = joined; *c;) {
        while (*c == '/')
            c++;
        size_t len = strcspn(c, "/");
        if (len == 0 || (len == 1 && c[0] == '.')) {
        } else if (len == 2 && c[0] == '.' && c[1] == '.') {
            while (n > 0 && r[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* (the slash; never above the root) */
        } else {
            r[n++] = '/';
            memcpy(r + n, c, len);
            n += len;
        }
        c += len;
    }
    if (n == 0)
        r[n++] = '/';
    r[n] = '\0';
    free(joined);
    if (abs_nkept == 0)
        atexit(abs_free);
    abs_kept[abs_nkept++] = r;
    return r;
#endif
}

/* A copy of s kept until the process ends (NULL when out of room or
 * memory): for a name taken from a buffer the caller frees. */
static const char *kept_copy(const char *s) {
    if (abs_nkept == sizeof(abs_kept) / sizeof(abs_kept[0]))
        return NULL;
    char *c = strdup(s);
    if (!c)
        return NULL;
    if (abs_nkept == 0)
        atexit(abs_free);
    abs_kept[abs_nkept++] = c;
    return c;
}

/* --source, --build, --output: a directory. One that is there as anything
 * else (a file, a FIFO) is refused here; a missing one is left to the run,
 * which names it and where it was to go. */
static int want_directory(const char *opt, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s %s: not a directory (source, build and output are directories)\n", prog, opt, path);
        return -1;
    }
    return 0;
}

/* An option's value the CLI refuses itself. */
static int bad_value(const char *opt, const char *value, const char *why) {
    fprintf(stderr, "%s: %s %s: %s\n", prog, opt, *value ? value : "''", why);
    return -1;
}

/* --cpus: plain decimal (digits, at most one '.'; no sign, exponent, hex,
 * inf or nan), above 0 and at most 1024, in thousandths rounded to the
 * nearest; -1 when it is not that. */
static long cpus_millis(const char *v) {
    size_t ni = strspn(v, "0123456789"), nf = 0;
    const char *f = v + ni;
    if (*f == '.')
        nf = strspn(++f, "0123456789");
    if (ni + nf == 0 || f[nf] != '\0' || ni > 4)
        return -1;
    long m = ni ? strtol(v, NULL, 10) * 1000 : 0;
    for (size_t k = 0; k < 3 && k < nf; k++)
        m += (f[k] - '0') * (k == 0 ? 100 : k == 1 ? 10 : 1);
    if (nf > 3 && f[3] >= '5')
        m++;
    return m >= 1 && m <= 1024000 ? m : -1;
}

static int split_eq(const char *arg, char sep, char **left, const char **right) {
    const char *e = strchr(arg, sep);
    if (!e || e == arg || !e[1])
        return -1;
    *left = strndup(arg, (size_t)(e - arg));
    *right = e + 1;
    return *left ? 0 : -1;
}

/* --allow HOST[:PORT[-PORT]][/udp|/tcp]: HOST a name, an IPv4 address or
 * block, or an IPv6 address or block in brackets. */
static int add_allow(fy_policy *p, const char *v) {
    char host[300];
    const char *rest;
    uint32_t proto = FY_PROTO_TCP;
    size_t n = strlen(v);
    if (n > 4 && (strcmp(v + n - 4, "/udp") == 0 || strcmp(v + n - 4, "/tcp") == 0)) {
        proto = strcmp(v + n - 4, "/udp") == 0 ? FY_PROTO_UDP : FY_PROTO_TCP;
        n -= 4;
    }
    if (v[0] == '[') {
        const char *e = memchr(v, ']', n);
        if (!e || (size_t)(e - v - 1) >= sizeof(host))
            return bad_value("--allow", v, "an IPv6 address goes in brackets: [2001:db8::1]:443");
        snprintf(host, sizeof(host), "%.*s", (int)(e - v - 1), v + 1);
        rest = e + 1;
    } else {
        size_t h = strcspn(v, ":");
        if (h > n)
            h = n;
        if (h >= sizeof(host))
            return bad_value("--allow", v, "host too long");
        snprintf(host, sizeof(host), "%.*s", (int)h, v);
        rest = v + h;
    }
    unsigned long lo = 1, hi = 65535;
    size_t left = n - (size_t)(rest - v);
    if (left && rest[0] != ':')
        return bad_value("--allow", v, "expects HOST[:PORT[-PORT]][/udp]");
    if (left) {
        char ports[32], *end = NULL;
        if (left - 1 == 0 || left - 1 >= sizeof(ports))
            return bad_value("--allow", v, "bad port");
        snprintf(ports, sizeof(ports), "%.*s", (int)(left - 1), rest + 1);
        if (strspn(ports, "0123456789-") != strlen(ports))
            return bad_value("--allow", v, "a port is a number from 1 to 65535 (or a range LO-HI)");
        lo = hi = strtoul(ports, &end, 10);
        if (*end == '-')
            hi = strtoul(end + 1, &end, 10);
        if (*end)
            return bad_value("--allow", v, "bad port range");
    }
    fy_error *err = NULL;
    return check(fy_policy_add_destination(p, host, proto, (uint32_t)(lo > 65535 ? 65536 : lo),
                                           (uint32_t)(hi > 65535 ? 65536 : hi), &err), "--allow", &err);
}

static int run_outcome_status(const fy_result *res) {
    switch (fy_result_outcome(res)) {
    case FY_OUTCOME_SUCCEEDED:
    case FY_OUTCOME_FAILED: return fy_result_exit_code(res);
    case FY_OUTCOME_SIGNALED: return 128 + fy_result_signal(res);
    case FY_OUTCOME_TIMED_OUT: return RUN_TIMED_OUT;
    case FY_OUTCOME_CANCELLED: return RUN_CANCELLED;
    case FY_OUTCOME_OUT_OF_MEMORY: return RUN_OUT_OF_MEMORY;
    case FY_OUTCOME_RESOURCE_EXCEEDED: return RUN_RESOURCE_EXCEEDED;
    case FY_OUTCOME_SANDBOX_VIOLATION: return RUN_SANDBOX_VIOLATION;
    default: return RUN_INFRASTRUCTURE;
    }
}

/* A signal's description for a message ("Broken pipe"), or "" where the
 * platform has none. */
#ifndef _WIN32
#define SIGNAME_OPEN " ("
#define SIGNAME_CLOSE ")"
static const char *signal_name(int sig) {
    const char *d = sig > 0 && sig < NSIG ? strsignal(sig) : NULL;
    return d ? d : "unknown";
}
#else
#define SIGNAME_OPEN ""
#define SIGNAME_CLOSE ""
static const char *signal_name(int sig) {
    (void)sig;
    return "";
}
#endif

/* A note on stderr that never raises SIGPIPE here (its reader may be gone
 * when a supervisor stops a whole job; Windows has no SIGPIPE). */
__attribute__((format(printf, 1, 2))) static void note_nopipe(const char *fmt, ...) {
#ifndef _WIN32
    sigset_t old;
    sigpipe_hold(&old);
#endif
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
#ifndef _WIN32
    sigpipe_release(&old);
#endif
}

/* The command named in the message a stop signal prints. */
static const char *stop_what = "run";

/* An operator's ^C (or a SIGTERM/SIGHUP from a supervisor) cancels the
 * run instead of killing this process: the library then ends the sandbox
 * and removes everything it made, and the result says CANCELLED. The
 * handler only writes the signal's number to a pipe the wait loop polls. */
#ifndef _WIN32
static int stop_pipe[2] = {-1, -1};
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop_signal(int sig) {
    int e = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t n = write(stop_pipe[1], &c, 1);
    (void)n;
    errno = e;
}

static int catch_stop_signals(void) {
    if (pipe(stop_pipe) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(stop_pipe[i], F_SETFD, FD_CLOEXEC);
        fcntl(stop_pipe[i], F_SETFL, O_NONBLOCK);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
        /* One ignored on arrival stays ignored (nohup, a shell's
         * background job): whoever started us asked for that. */
        struct sigaction old;
        if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        if (sigaction(stop_signals[i], &sa, NULL) < 0)
            return -1;
    }
    return 0;
}

/* Drives the handle to its end, cancelling it at the first stop signal and
 * freeing it (which kills and cleans up at once) at the second. 1 and the
 * result; 0 when a second signal ended it without one; -1 on an error. */
static bool stop_seen; /* a stop signal came (the CLI makes no attempt again after one) */
static int wait_or_cancel(fy_handle *h, fy_result **res, fy_error **err) {
    int stops = 0;
    for (;;) {
        int r = fy_handle_process(h, res, err);
        if (r != 0)
            return r;
        uint64_t usec = FY_UNLIMITED;
        fy_handle_get_timeout_usec(h, &usec);
        int ms = usec == FY_UNLIMITED ? -1 : (int)(usec > 60000000 ? 60000 : (usec + 999) / 1000);
        struct pollfd pfd[2] = {{.fd = fy_handle_get_fd(h), .events = POLLIN}, {.fd = stop_pipe[0], .events = POLLIN}};
        if (poll(pfd, 2, ms) < 0 && errno != EINTR)
            return -1;
        unsigned char sig;
        while (read(stop_pipe[0], &sig, 1) == 1) {
            stop_seen = true;
            if (stops++ == 0) {
                /* (cancelled first: a note to a stderr whose reader is gone
                 * must not end us with SIGPIPE before the result is made) */
                fy_handle_cancel(h, FY_CANCEL_USER, NULL);
                note_nopipe("%s: %s: %s: cancelling the sandbox (again to kill it at once)\n", prog, stop_what,
                            strsignal(sig));
            } else {
                return 0;
            }
        }
    }
}
#endif

/* The host uid the command runs as when we are root (forgeyard(1)): an
 * unprivileged one of the policy's id range, read from its canonical JSON;
 * -1 when we are not root or it cannot be told. */
static long sandbox_host_uid(const fy_policy *p) {
    char *json = NULL;
    if (geteuid() != 0 || fy_policy_to_json(p, &json, NULL) < 0)
        return -1;
    const char *range = strstr(json, "\"id_range\"");
    const char *first = range ? strstr(range, "\"first\": ") : NULL;
    long id = first ? (long)strtoul(first + strlen("\"first\": "), NULL, 10) : -1;
    if (id >= 0 && !strstr(json, "\"user\": \"fake-root\""))
        id += 1;
    fy_free(json);
    return id;
}

/* The host uid the prepared plan runs the workload as when we are root:
 * its isolation record's workload_uid through its uid_map (a container
 * maps the whole range from 0: the image's user 1000 is the range's first
 * id + 1000, a root User its first id), or workload_uid itself where there
 * is no map (linux-process: a host uid already); the policy's reading
 * (sandbox_host_uid) for a backend whose record says neither. -1 when we
 * are not root. */
static long prepared_host_uid(const fy_prepared *pr, const fy_policy *p) {
    char *json = NULL;
    if (geteuid() != 0)
        return -1;
    if (fy_prepared_to_json(pr, &json, NULL) < 0)
        return sandbox_host_uid(p);
    long id = -1;
    /* (keys of the isolation object itself; the policy, argv and the
     * environment's names come as values or after it) */
    const char *iso = strstr(json, "\"isolation\": {");
    const char *wu = iso ? strstr(iso, "\"workload_uid\": ") : NULL;
    const char *map = iso ? strstr(iso, "\"uid_map\": ") : NULL;
    if (wu) {
        unsigned long inside = strtoul(wu + strlen("\"workload_uid\": "), NULL, 10);
        map = map ? map + strlen("\"uid_map\": ") : NULL;
        if (map && *map == '"') {
            /* "inside outside count\n..." (the newline escaped in JSON) */
            const char *c = map + 1;
            while (*c && *c != '"' && id < 0) {
                char *e;
                unsigned long in = strtoul(c, &e, 10), out = strtoul(e, &e, 10), n = strtoul(e, &e, 10);
                if (e == c || strncmp(e, "\\n", 2) != 0)
                    break;
                if (inside >= in && inside - in < n)
                    id = (long)(out + (inside - in));
                c = e + 2;
            }
        } else if (map && strncmp(map, "null", 4) == 0 && strstr(json, "\"backend\": \"linux-process\"")) {
            id = (long)inside;
        }
    }
    fy_free(json);
    return id >= 0 ? id : sandbox_host_uid(p);
}

#ifndef _WIN32
static int hand_over(long uid, const char *opt, const char *dir);
#endif

/* A directory the command is to write but cannot would only show up as
 * its own "Permission denied": say so first, with the fix. */
static void note_unwritable(long id, const char *opt, const char *dir) {
    struct stat st;
    if (id < 0 || !dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    bool can = ((long)st.st_uid == id && (st.st_mode & S_IWUSR)) || ((long)st.st_gid == id && (st.st_mode & S_IWGRP)) ||
               (st.st_mode & S_IWOTH);
    if (!can)
        fprintf(stderr,
                "%s: note: %s %s is not writable by host user %ld, which the command runs as "
                "(chown %ld:%ld it; see forgeyard(1))\n",
                prog, opt, dir, id, id, id);
}

/* ---- images ---- */

static void progress_bar(void *userdata, uint32_t layer, uint32_t nlayers, uint64_t done, uint64_t total) {
    bool *drawn = userdata;
    int pct = total ? (int)(done * 100 / total) : 100, fill = pct / 4;
    char bar[26];
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(25 - fill));
    bar[25] = '\0';
    fprintf(stderr, "\rlayer %u/%u [%s] %3d%% %.1f/%.1f MB", layer + 1, nlayers, bar, pct, (double)done / 1e6,
            (double)total / 1e6);
    *drawn = true;
}

/* Verifies and unpacks ref; a progress bar only when stderr is a terminal. */
static int image_unpack(const char *ref, const char *cache, char **json) {
    bool drawn = false, tty = isatty(2);
    fy_error *err = NULL;
    int r = fy_image_unpack(ref, cache, tty ? progress_bar : NULL, &drawn, json, &err);
    if (drawn)
        fputc('\n', stderr);
    if (r < 0) {
        report("image", err, r);
        return r == FY_E_INVAL ? EXIT_USAGE : EXIT_FAIL; /* (a malformed reference or image: invalid input) */
    }
    return EXIT_OK;
}

/* "30s", "10m", "2h", "30d" -> seconds; -1 when malformed. */
static long long parse_age(const char *v) {
    if (v[0] < '0' || v[0] > '9')
        return -1; /* (no sign, no space) */
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || n < 0)
        return -1;
    if (n == 0 && !*end)
        return 0; /* "0": every entry */
    long long mul = !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : !strcmp(end, "d") ? 86400 : -1;
    /* Bounded so that the age in microseconds fits as well. */
    long long most = (long long)(UINT64_MAX / 1000000u < (uint64_t)LLONG_MAX ? UINT64_MAX / 1000000u : LLONG_MAX);
    return mul < 0 || n > most / mul ? -1 : n * mul;
}

/* "500M", "2G", "1024" -> bytes; -1 when malformed. */
static long long parse_size(const char *v) {
    if (v[0] < '0' || v[0] > '9')
        return -1; /* (no sign, no space) */
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || n < 0)
        return -1;
    long long mul = !*end ? 1 : !strcmp(end, "K") ? 1LL << 10 : !strcmp(end, "M") ? 1LL << 20 : !strcmp(end, "G") ? 1LL << 30 : -1;
    return mul < 0 || n > LLONG_MAX / mul ? -1 : n * mul;
}

static int image_usage(void) {
    fprintf(stderr, "usage: %s image inspect REF\n"
                    "       %s image unpack [--cache DIR] REF\n"
                    "       %s image gc [--cache DIR] [--max-age DURATION] [--max-size SIZE]\n", prog, prog, prog);
    return EXIT_USAGE;
}

/* The options of a cache's gc (image gc, action gc) at argv[*k]: 1 when one
 * was taken (*k moved past its value), 0 when argv[*k] is none of them,
 * -1 after a usage error was printed. */
static int cache_gc_option(int argc, char **argv, int *k, const char **cache, uint64_t *max_age,
                           uint64_t *max_size) {
    if (strcmp(argv[*k], "--cache") == 0 && *k + 1 < argc) {
        *cache = argv[++*k];
    } else if (strcmp(argv[*k], "--max-age") == 0 && *k + 1 < argc) {
        long long s = parse_age(argv[++*k]);
        if (s < 0)
            return (void)bad_value("--max-age", argv[*k], "expects a duration (30s, 10m, 2h, 30d)"), -1;
        *max_age = (uint64_t)s * 1000000;
    } else if (strcmp(argv[*k], "--max-size") == 0 && *k + 1 < argc) {
        long long b = parse_size(argv[++*k]);
        if (b < 0)
            return (void)bad_value("--max-size", argv[*k], "expects a size (500M, 2G)"), -1;
        *max_size = (uint64_t)b;
    } else {
        return 0;
    }
    return 1;
}

static int cmd_image(int argc, char **argv) {
    const char *sub = argc ? argv[0] : "", *cache = NULL, *ref = NULL;
    uint64_t max_age = 30ull * 86400 * 1000000, max_size = FY_UNLIMITED;
    for (int k = 1; k < argc; k++) {
        int o = cache_gc_option(argc, argv, &k, &cache, &max_age, &max_size);
        if (o < 0)
            return EXIT_USAGE;
        if (o > 0)
            continue;
        if (argv[k][0] != '-' && !ref) {
            ref = argv[k];
        } else {
            return image_usage();
        }
    }
    fy_error *err = NULL;
    char *json = NULL;
    int r;
    if (strcmp(sub, "inspect") == 0 && ref && !cache) {
        if ((r = fy_image_inspect(ref, &json, &err)) < 0)
            return report("image inspect", err, r), r == FY_E_INVAL ? EXIT_USAGE : EXIT_FAIL;
    } else if (strcmp(sub, "unpack") == 0 && ref) {
        if ((r = image_unpack(ref, cache, &json)) != EXIT_OK)
            return r;
    } else if (strcmp(sub, "gc") == 0 && !ref) {
        uint64_t n = 0;
        if ((r = fy_image_gc(cache, max_size, max_age, &n, &err)) < 0)
            return report("image gc", err, r), EXIT_FAIL;
        printf("removed %llu image layer%s\n", (unsigned long long)n, n == 1 ? "" : "s");
        return EXIT_OK;
    } else {
        return image_usage();
    }
    printf("%s\n", json);
    fy_free(json);
    return EXIT_OK;
}

/* --result FILE's directory, checked before anything runs: a missing or
 * unwritable one would otherwise lose the evidence of a whole run at its
 * end (status 1). false after saying why. */
#ifndef _WIN32
/* --result's directory, opened by result_path_ok before the run; or,
 * when the name is there already and is no regular file (/dev/null, a
 * terminal, /dev/stdout's link to a pipe), what it names, opened then. */
static int result_dir = -1;
static int result_fd = -1;
static bool result_stdout; /* result_fd is "-": written at its offset, never truncated */
#endif

/* Writes text to file as a new file renamed over the name: never through
 * what the name holds when we get there. The result may be asked for
 * inside a directory the command can write (--build build --result
 * build/r.json): a symbolic link it leaves there must not have root write
 * the file it points to, nor a FIFO hold us. */
#ifndef _WIN32
/* All of text to fd: whether it was all written (errno when not). */
static bool write_text(int fd, const char *text) {
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    return done == len;
}
#endif

static int write_result_file(const char *file, const char *text) {
#ifndef _WIN32
    if (result_fd >= 0) {
        /* Written through what the operator named: a device or a pipe is
         * never replaced by a file (as root, /dev/null would be). */
        struct stat st;
        if (!result_stdout && fstat(result_fd, &st) == 0 && S_ISREG(st.st_mode) &&
            (ftruncate(result_fd, 0) < 0 || lseek(result_fd, 0, SEEK_SET) < 0))
            return -1;
        int r = write_text(result_fd, text) ? 0 : -1, e = errno;
        close(result_fd);
        result_fd = -1;
        errno = e;
        return r;
    }
    const char *slash = strrchr(file, '/');
    const char *base = slash ? slash + 1 : file;
    int dfd = result_dir;
    if (dfd < 0) {
        errno = EBADF;
        return -1;
    }
    char tmp[NAME_MAX + 1];
    int fd = -1;
    for (int i = 0; fd < 0 && i < 16; i++) {
        unsigned long long n = ((unsigned long long)getpid() << 20) ^ (unsigned long long)i ^
                               ((unsigned long long)(uintptr_t)&fd >> 4) ^ (unsigned long long)time(NULL) * 2654435761u;
        snprintf(tmp, sizeof(tmp), ".forgeyard-result-%llx", n);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int r = -1, e = 0;
    if (fd >= 0) {
        bool whole = write_text(fd, text);
        r = whole && close(fd) == 0 ? 0 : -1;
        if (!whole)
            close(fd);
        e = errno;
        if (r == 0 && renameat(dfd, tmp, dfd, base) < 0) {
            e = errno;
            r = -1;
        }
        if (r < 0)
            (void)unlinkat(dfd, tmp, 0);
    } else {
        e = errno;
    }
    errno = e;
    return r;
#else
    if (strcmp(file, "-") == 0)
        return fputs(text, stdout) < 0 || fflush(stdout) != 0 ? -1 : 0;
    FILE *f = fopen(file, "we");
    if (!f || fputs(text, f) < 0) {
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
#endif
}

#ifndef _WIN32
/* Whether --result may follow the symbolic link at file: only when every
 * link met on the way to what it names lies in a directory no one but
 * root can change (owned by root, writable by no group or other: /dev,
 * /etc, root's 0700 directories) or in /proc, whose links the kernel makes
 * (/dev/stdout's /proc/self/fd/1 names our open standard output itself,
 * not a path). A link anywhere else may be one a sandboxed command left
 * (in --build, reused; in a directory of a rootless caller's, which its
 * workload writes as the caller): it is replaced like a file, never
 * followed, whatever it points to (as root, a file, /dev/kmsg or
 * /dev/port). */
static bool result_link_trusted(const char *file) {
    char cur[PATH_MAX], dir[PATH_MAX], target[PATH_MAX], next[PATH_MAX];
    if (snprintf(cur, sizeof(cur), "%s", file) >= (int)sizeof(cur))
        return false;
    for (int hop = 0; hop < 16; hop++) {
        struct stat st;
        if (lstat(cur, &st) < 0)
            return false;
        if (!S_ISLNK(st.st_mode))
            return true;
        const char *slash = strrchr(cur, '/');
        if (!slash)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == cur)
            snprintf(dir, sizeof(dir), "/");
        else
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - cur), cur);
        int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return false;
        bool proc = false;
#ifdef __linux__
        struct statfs sfs;
        proc = fstatfs(dfd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
#endif
        struct stat ds;
        bool root_only = fstat(dfd, &ds) == 0 && ds.st_uid == 0 && !(ds.st_mode & 022);
        close(dfd);
        if (proc)
            return true;
        if (!root_only)
            return false;
        ssize_t n = readlink(cur, target, sizeof(target) - 1);
        if (n <= 0)
            return false;
        target[n] = '\0';
        int len = target[0] == '/' ? snprintf(next, sizeof(next), "%s", target)
                                   : snprintf(next, sizeof(next), "%s/%s", dir, target);
        if (len < 0 || len >= (int)sizeof(next))
            return false;
        memcpy(cur, next, (size_t)len + 1);
    }
    return false;
}
#endif

static bool result_path_ok(const char *what, const char *file) {
#ifndef _WIN32
    if (!file)
        return true;
    char dir[PATH_MAX];
    const char *slash = strrchr(file, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == file)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
    struct stat st;
    const char *why = NULL, *where = dir;
    if (!*file || file[strlen(file) - 1] == '/') {
        fprintf(stderr, "%s: %s--result \"%s\": names no file; nothing ran\n", prog, what, file);
        return false;
    }
    if (strcmp(file, "-") == 0) {
        /* Standard output, as it is before the run (the command's own
         * output goes there too unless redirected); one that was closed
         * (now /dev/null) would lose the result without a word. */
        if (result_fd >= 0)
            close(result_fd);
        result_stdout = true;
        if (std_closed[1] || (result_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)) < 0) {
            if (std_closed[1])
                errno = EBADF;
            fprintf(stderr, "%s: %s--result -: standard output is not open (%s); nothing ran\n", prog, what,
                    strerror(errno));
            return false;
        }
        return true;
    }
    if (lstat(file, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
        (!S_ISLNK(st.st_mode) || result_link_trusted(file))) {
        /* There before the command runs and no regular file: written
         * through, never renamed over. A FIFO without a reader is never
         * waited on; a block device, a socket or a directory is refused.
         * A link only where result_link_trusted says so: any other is
         * replaced below, as a file is. */
        if (result_fd >= 0)
            close(result_fd);
        result_stdout = false;
        result_fd = open(file, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        struct stat ft;
        if (result_fd < 0)
            why = strerror(errno);
        else if (fstat(result_fd, &ft) < 0)
            why = strerror(errno);
        else if (!S_ISCHR(ft.st_mode) && !S_ISFIFO(ft.st_mode) && !S_ISREG(ft.st_mode))
            why = "neither a file, a character device nor a pipe";
        else if (fcntl(result_fd, F_SETFL, fcntl(result_fd, F_GETFL) & ~O_NONBLOCK) < 0)
            why = strerror(errno);
        if (why) {
            if (result_fd >= 0)
                close(result_fd);
            result_fd = -1;
            fprintf(stderr, "%s: %s--result %s: cannot be written (%s); nothing ran\n", prog, what, file, why);
            return false;
        }
        return true;
    }
    if (stat(dir, &st) < 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (access(dir, W_OK | X_OK) < 0)
        why = strerror(errno);
    else if (lstat(file, &st) == 0 && S_ISDIR(st.st_mode)) { /* (a link to one: replaced) */
        why = "a directory";
        where = file;
    }
    /* The directory as it is before the command runs: where the result
     * goes whatever the command does to the paths it can write. */
    if (!why) {
        if (result_dir >= 0)
            close(result_dir);
        if ((result_dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
            why = strerror(errno);
    }
    /* Whether a file can be made there at all (access(2) says yes to root
     * for /proc or a read-only mount): one is made and removed now, so that
     * the whole run is not lost at its end. */
    if (!why) {
        char probe[64];
        snprintf(probe, sizeof(probe), ".forgeyard-result-check-%d", (int)getpid());
        int pfd = openat(result_dir, probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (pfd < 0) {
            why = strerror(errno);
        } else {
            close(pfd);
            (void)unlinkat(result_dir, probe, 0);
        }
    }
    /* A result an earlier run left at the name is removed now: a run that
     * ends without one (a second stop signal kills the sandbox at once, or
     * forgeyard itself is killed) must not leave the earlier run's outcome
     * standing for its own. */
    if (!why && unlinkat(result_dir, slash ? slash + 1 : file, 0) < 0 && errno != ENOENT) {
        why = strerror(errno);
        where = file;
    }
    if (why) {
        fprintf(stderr, "%s: %s--result %s: cannot be written (%s: %s); nothing ran\n", prog, what, file, where,
                why);
        return false;
    }
#else
    (void)what;
    (void)file;
#endif
    return true;
}

/* Runs cmd under p (taken: freed here) to its end, as `run` does: the saved
 * probe, one renegotiation when the host changed, ^C cancels; writes the
 * result to result_file (optional). Returns run's exit status. */
/* Whether bytes wait on our standard input that the command was not given
 * (it reads /dev/null without --stdin): piped data or a file not read to
 * its end. Asked after the run, when a pipe's writer has had its time. */
static bool stdin_left_unread(void) {
#ifdef _WIN32
    return false;
#else
    struct stat st;
    if (fstat(0, &st) < 0)
        return false;
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
        int n = 0;
        return ioctl(0, FIONREAD, &n) == 0 && n > 0;
    }
    if (S_ISREG(st.st_mode)) {
        off_t at = lseek(0, 0, SEEK_CUR);
        return at >= 0 && at < st.st_size;
    }
    return false;
#endif
}

/* Whether the policy itself asks for virtual-machine isolation (its
 * canonical JSON, forgeyard-policy(5)). */
static bool asks_for_vm(const fy_policy *p) {
    char *j = NULL;
    if (fy_policy_to_json(p, &j, NULL) < 0)
        return true; /* (no note rather than a wrong one) */
    bool vm = strstr(j, "\"min_level\": \"virtual-machine\"") || strstr(j, "\"preferred_level\": \"virtual-machine\"");
    fy_free(j);
    return vm;
}

/* The seccomp class general-build answers the ptrace family with EPERM
 * and, where violations are notified, counts those calls in the result
 * (isolation.seccomp.ptrace_denied): said after a command that did not
 * succeed, because what it printed (LeakSanitizer's "fatal error", a
 * debugger's refusal) does not say why. */
static void note_ptrace_denied(const fy_result *res) {
    char *json = NULL;
    if (fy_result_to_json(res, &json, NULL) < 0)
        return;
    const char *k = strstr(json, "\"ptrace_denied\"");
    unsigned long long n = 0;
    if (k) {
        k += strlen("\"ptrace_denied\"");
        while (*k == ' ' || *k == ':')
            k++;
        n = strtoull(k, NULL, 10);
    }
    if (n)
        fprintf(stderr, "%s: %s: note: the command was refused ptrace(2) %llu time%s (seccomp class "
                        "general-build); LeakSanitizer's leak check, gdb and strace need it: --seccomp "
                        "networked-test allows it among the sandbox's own processes\n", prog, stop_what, n, n == 1 ? "" : "s");
    fy_free(json);
}

/* What a command does once the plan is prepared, before it starts (run's
 * --hand-over and notes, wrap's execution root), given the host uid the
 * plan runs the workload as (prepared_host_uid): 0, or the status to exit
 * with. */
struct before_start {
    int (*fn)(void *ctx, long host_uid);
    void *ctx;
};

static int run_policy(fy_policy *p, const char *const *cmd, const char *result_file, bool stdin_passed,
                      const struct before_start *before) {
    if (!result_path_ok("", result_file)) {
        fy_policy_free(p);
        return RUN_BAD_INVOCATION;
    }
    fy_error *err = NULL;
    /* The host's probe comes from the snapshot an earlier run saved (a
     * probe costs more than a start); a snapshot is never trusted further
     * than a fresh probe: a refusal, or a setup that failed before the
     * command ran, is tried once more after a fresh probe when the host
     * turned out to have changed. */
    fy_caps *caps = NULL;
    if (probe_flags(FY_PROBE_NO_VM, &caps) != EXIT_OK) {
        fy_policy_free(p);
        return RUN_INFRASTRUCTURE;
    }
    fy_prepared *pr = NULL;
    int r = fy_prepare(p, caps, cmd, &pr, &err);
    fy_caps *full = NULL;
    if (r == FY_E_UNSUPPORTED && probe_flags(0, &full) == EXIT_OK) {
        /* The VM probes are skipped to keep a start fast; a policy that
         * needs a virtual machine (high-assurance) gets them (from their
         * own saved probe), and so does a fresh probe below. */
        char *why = strdup(fy_error_message(err));
        fy_error_free(err);
        err = NULL;
        fy_caps_free(caps);
        caps = full;
        run_vm_flag = 0;
        r = fy_prepare(p, caps, cmd, &pr, &err);
        /* A policy that did not ask for a virtual machine but gets one
         * because nothing lighter enforces what it requires according to
         * the saved probe: a saved probe that wrongly says a mechanism is
         * missing would send every run to a VM, so the host is probed again
         * first, and a lighter backend that then fits is taken. */
        if (r == 0 && fy_prepared_level(pr) == FY_LEVEL_VIRTUAL_MACHINE && !asks_for_vm(p) && reprobe_once(&caps)) {
            fy_prepared_free(pr);
            pr = NULL;
            r = fy_prepare(p, caps, cmd, &pr, &err);
        }
        /* Still a VM: said, since its start is slower by far. */
        if (r == 0 && why && fy_prepared_level(pr) == FY_LEVEL_VIRTUAL_MACHINE && !asks_for_vm(p)) {
            /* The namespace backend's own reason, from the refusal's list. */
            const char *ns = strstr(why, "linux-namespace: ");
            int len = (int)strlen(why), depth = 0;
            if (ns) {
                const char *e = ns;
                for (; *e && !(depth == 0 && e[0] == ';' && e[1] == ' '); e++)
                    depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
                len = (int)(e - ns);
            }
            note_vm_start(pr, ns ? ns : why, len);
        }
        free(why);
    }
    if (r == FY_E_UNSUPPORTED && reprobe_once(&caps)) {
        fy_error_free(err);
        err = NULL;
        r = fy_prepare(p, caps, cmd, &pr, &err);
    }
    if (r < 0) {
        fy_policy_free(p);
        fy_caps_free(caps);
        report("run", err, r);
        return r == FY_E_UNSUPPORTED ? RUN_UNSUPPORTED : RUN_BAD_INVOCATION;
    }
    if (before && before->fn && (r = before->fn(before->ctx, prepared_host_uid(pr, p))) != 0) {
        fy_prepared_free(pr);
        fy_policy_free(p);
        fy_caps_free(caps);
        return r;
    }
    if (catch_stop_signals() < 0) {
        fprintf(stderr, "%s: run: cannot catch signals: %s\n", prog, strerror(errno));
        fy_prepared_free(pr);
        fy_policy_free(p);
        fy_caps_free(caps);
        return RUN_INFRASTRUCTURE;
    }
    fy_result *res = NULL;
    for (int attempt = 0;; attempt++) {
        fy_handle *h = NULL;
        r = fy_start(pr, &h, &err);
        fy_prepared_free(pr);
        pr = NULL;
        if (r < 0 && r != FY_E_NOMEM && r != FY_E_INVAL && attempt == 0 && mechanism_step(fy_error_step(err)) &&
            reprobe_once(&caps)) {
            /* A mechanism the snapshot promised is not there: renegotiate
             * (never for what the caller gave wrong: FY_E_INVAL). */
            fy_error_free(err);
            err = NULL;
            if ((r = renegotiate(p, &caps, cmd, &pr, &err)) == 0)
                continue;
        }
        if (r < 0) {
            fy_policy_free(p);
            fy_caps_free(caps);
            report("run", err, r);
            /* (an option the start found wrong, such as an uplink that is no
             * network namespace: nothing ran) */
            return r == FY_E_UNSUPPORTED ? RUN_UNSUPPORTED : r == FY_E_INVAL ? RUN_BAD_INVOCATION : RUN_INFRASTRUCTURE;
        }
        r = wait_or_cancel(h, &res, &err);
        fy_handle_free(h); /* (after a second signal: kills, reaps and cleans up) */
        out_relay_drain();
        if (r == 0) {
            fy_policy_free(p);
            fy_caps_free(caps);
            note_nopipe("%s: %s: cancelled: the sandbox was killed\n", prog, stop_what);
            return RUN_CANCELLED;
        }
        if (r < 0) {
            fy_policy_free(p);
            fy_caps_free(caps);
            report("run", err, r);
            return RUN_INFRASTRUCTURE;
        }
        /* Retried once, after a fresh probe, only when nothing of the
         * command ran (a mechanism's setup step failed, the run stage never
         * began) and the caps were the saved probe's. */
        uint64_t ran = 1;
        bool before_exec = fy_result_outcome(res) == FY_OUTCOME_INFRASTRUCTURE_FAILURE &&
                           mechanism_step(fy_result_error_step(res)) &&
                           fy_result_stage_usec(res, FY_STAGE_RUN, &ran) == 0 && ran == 0;
        if (attempt > 0 || !before_exec || !reprobe_once(&caps))
            break;
        r = renegotiate(p, &caps, cmd, &pr, &err);
        if (r == FY_E_UNSUPPORTED) {
            /* The fresh probe's refusal is the host's answer: the typed
             * one, naming what is missing (the stale probe's failure was
             * reported as an infrastructure failure). */
            fy_result_free(res);
            fy_policy_free(p);
            fy_caps_free(caps);
            report("run", err, r);
            return RUN_UNSUPPORTED;
        }
        if (r < 0) {
            fy_error_free(err);
            err = NULL;
            break; /* the first result stands */
        }
        fy_result_free(res);
        res = NULL;
    }
    fy_policy_free(p);
    fy_caps_free(caps);
    /* The notes below go to a stderr whose reader may be gone: the result
     * file is written all the same (nothing is started after this). */
#ifdef SIGPIPE
    signal(SIGPIPE, SIG_IGN);
#endif
    if (!stdin_passed && stdin_left_unread())
        fprintf(stderr, "%s: %s: note: standard input holds data the command was not given (it read /dev/null); "
                        "--stdin passes it\n", prog, stop_what);
    int status = run_outcome_status(res);
    int outcome = fy_result_outcome(res);
    if (outcome != FY_OUTCOME_SUCCEEDED)
        note_ptrace_denied(res);
    if (outcome == FY_OUTCOME_SIGNALED && fy_result_signal(res) == SIGPIPE_NUMBER && out_relay_gone())
        ; /* (its reader went away, as `yes | head -1`'s: shells say nothing either) */
    else if (outcome == FY_OUTCOME_SIGNALED && !fy_result_detail(res))
        /* which signal: "signaled" alone left the operator to decode 128+n */
        fprintf(stderr, "%s: %s: %s: signal %d%s%s%s\n", prog, stop_what, fy_outcome_name((uint32_t)outcome),
                fy_result_signal(res), SIGNAME_OPEN, signal_name(fy_result_signal(res)), SIGNAME_CLOSE);
    else if (outcome != FY_OUTCOME_SUCCEEDED && outcome != FY_OUTCOME_FAILED) {
        static char sd[8192];
        fprintf(stderr, "%s: %s: %s%s%s\n", prog, stop_what, fy_outcome_name((uint32_t)outcome),
                fy_result_detail(res) ? ": " : "",
                fy_result_detail(res) ? term_safe(fy_result_detail(res), sd, sizeof(sd)) : "");
    }
    if (result_file) {
        char *json = NULL;
        if (fy_result_to_json(res, &json, NULL) == 0) {
            size_t n = strlen(json);
            char *line = malloc(n + 2);
            if (line) {
                memcpy(line, json, n);
                memcpy(line + n, "\n", 2);
            }
            if (!line || write_result_file(result_file, line) < 0) {
                fprintf(stderr, "%s: cannot write %s: %s\n", prog, result_file, strerror(line ? errno : ENOMEM));
                status = status ? status : EXIT_FAIL;
            }
            free(line);
            fy_free(json);
        }
    }
    fy_result_free(res);
    return status;
}

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: %s run [OPTIONS] -- COMMAND [ARG...]\n"
            "\n"
            "  --profile NAME          development, standard-ci, release (default), high-assurance\n"
            "  --policy FILE           a policy file (forgeyard-policy(5)) on top of the profile\n"
            "  --source DIR            the source tree, read-only at /work/source\n"
            "  --build DIR             read-write at /work/build (the working directory)\n"
            "  --output DIR            read-write at /work/output\n"
            "  --bind HOST:PATH        a writable bind; --bind-ro HOST:PATH a read-only one\n"
            "  --workdir PATH          the working directory inside\n"
            "  --image REF             run in a container image (oci:DIR@sha256:..., oci-archive:FILE@...,\n"
            "                          docker-archive:FILE@...); the command may then be empty (its Cmd)\n"
            "  --runtime NAME[,accept-known-issues]\n"
            "                          run the image through an external OCI runtime (runc), only if the\n"
            "                          probe found it usable; known unfixed CVEs must be accepted\n"
            "  --env NAME=VALUE        an environment variable (nothing is inherited)\n"
            "  --secret-env NAME=FILE  a secret as an environment variable\n"
            "  --secret-file NAME=FILE a secret as /run/secrets/NAME\n"
            "  --network deny|allow|restricted|fetch-only\n"
            "                          the network (allow is the host's, impure; restricted: only\n"
            "                          the --allow destinations (rootless through pasta); not\n"
            "                          under release;\n"
            "                          fetch-only: only through a per-attempt HTTP(S) proxy at\n"
            "                          $HTTP_PROXY to the --allow HOST:PORT destinations)\n"
            "  --allow DEST            restricted: HOST[:PORT[-PORT]][/udp] (HOST a name, an IPv4\n"
            "                          address or block, or [IPv6] in brackets; no port: all)\n"
            "  --network-uplink PATH   restricted: the network namespace the router's uplink goes\n"
            "                          into (/run/netns/NAME; default: the host's)\n"
            "  --network-hosts FILE    restricted, fetch-only: resolve --allow names with this hosts file\n"
            "  --network-credentials FILE\n"
            "                          fetch-only: lines \"HOST:PORT Name: value\" (mode 0600); the\n"
            "                          proxy adds the header to plain-HTTP requests to HOST:PORT\n"
            "  --pty private|deny      pseudo-terminals of the sandbox's own\n"
            "  --seccomp CLASS         general-build (default: ptrace denied) or networked-test\n"
            "                          (ptrace allowed inside: LeakSanitizer, gdb, strace)\n"
            "  --device PATH           lease a host device node (/dev/fuse), read-write; the kernel's\n"
            "                          device cgroup enforces the list (root only); --device-ro PATH\n"
            "  --gpu PATH              lease a GPU node (/dev/nvidia0, /dev/dri/renderD128): --device\n"
            "                          and the GPU class set to leased\n"
            "  --timeout DURATION      wall-clock limit (30s, 1.5s, 10m, 1h)\n"
            "  --grace DURATION        between the soft terminate and the kill (default 10s)\n"
            "  --memory SIZE           memory limit (512M, 2G); --pids N; --cpus N (1.5)\n"
            "  --tmp-size SIZE         size of /tmp\n"
            "  --result FILE           write the result (evidence) as JSON\n"
            "  --hand-over             as root, give --build, --output and --bind directories (and\n"
            "                          their files) to the sandbox's host uid before the run\n"
            "  --stdin                 pass forgeyard's standard input (a pipe or a file, never a\n"
            "                          terminal) to the command; without it, /dev/null\n"
            "  --help                  this text\n"
            "\n"
            "The exit status is the command's, or 240-249 for what the sandbox did (forgeyard(1)).\n",
            prog);
}

/* A word where an option was expected: most often a command given without
 * the "--" before it ("forgeyard run make all"), which would otherwise read
 * as "make needs a value" or "unknown option make". */
static bool not_an_option(const char *cmd, const char *o) {
    if (o[0] == '-')
        return false;
    fprintf(stderr, "%s: %s: \"%s\" is not an option; the command goes after -- (forgeyard %s [OPTIONS] -- COMMAND [ARG...])\n",
            prog, cmd, o, cmd);
    return true;
}

/* run's writable directories, handed over (--hand-over, as root) or
 * checked once the plan says which host uid the command runs as. */
struct run_hand {
    bool hand, vm;
    const char *build_dir, *output_dir;
    const char *const *writable;
    size_t nwritable;
};

static int run_before_start(void *ctx, long uid) {
    const struct run_hand *rh = ctx;
    if (rh->hand && geteuid() == 0) {
#ifndef _WIN32
        /* As root, --hand-over gives the writable directories to the
         * workload's host uid before the run (a rootless sandbox writes as
         * the caller: nothing to hand over). */
        int hr = hand_over(uid, "--build", rh->build_dir);
        if (hr == 0)
            hr = hand_over(uid, "--output", rh->output_dir);
        for (size_t k = 0; hr == 0 && k < rh->nwritable; k++)
            hr = hand_over(uid, "--bind", rh->writable[k]);
        return hr;
#endif
    } else if ((rh->build_dir || rh->output_dir) && !rh->vm) {
        /* (a virtual machine's host copies the build and output trees in
         * and back itself: the sandbox's uid never writes them) */
        note_unwritable(uid, "--build", rh->build_dir);
        note_unwritable(uid, "--output", rh->output_dir);
    }
    return 0;
}

static int cmd_run(int argc, char **argv) {
    for (int k = 0; k < argc && strcmp(argv[k], "--") != 0; k++)
        if (is_help(argv[k])) {
            run_usage(stdout);
            return EXIT_OK;
        }
    const char *profile = NULL, *policy_file = NULL, *result_file = NULL;
    const char *build_dir = NULL, *output_dir = NULL; /* (as given: for note_unwritable) */
    bool hand = false;             /* --hand-over */
    const char *writable[64];      /* --bind hosts (absolute; host_abs keeps them) */
    size_t nwritable = 0;
    const char *image = NULL;
    const char *allows[2048];
    size_t nallow = 0;
    uint32_t restricted = 0; /* FY_NET_RESTRICTED or FY_NET_FETCH_ONLY, applied after the options */
    bool pass_stdin = false;
    int i = 0;
    /* First pass: the base (profile or policy file). Every option but
     * --stdin and --hand-over takes a value, skipped here as the second
     * pass takes it ("--env --profile" is --env's value, not a profile);
     * each profile named must be one, the last one given is the base. */
    for (int k = 0; k < argc && strcmp(argv[k], "--") != 0; k++) {
        if (strcmp(argv[k], "--stdin") == 0 || strcmp(argv[k], "--hand-over") == 0)
            continue;
        if (strcmp(argv[k], "--profile") == 0 && k + 1 < argc) {
            profile = argv[++k];
            if (fy_profile_from_name(profile) < 0) {
                fprintf(stderr, "%s: unknown profile \"%s\"\n", prog, profile);
                return RUN_BAD_INVOCATION;
            }
        } else if (strcmp(argv[k], "--policy") == 0 && k + 1 < argc) {
            if (policy_file) {
                /* (One base: a second file would silently replace the first.) */
                fprintf(stderr, "%s: --policy given twice (%s, %s): one policy file is the base\n", prog,
                        policy_file, argv[k + 1]);
                return RUN_BAD_INVOCATION;
            }
            policy_file = argv[++k];
        } else if (strncmp(argv[k], "--", 2) == 0) {
            k++; /* (its value; the second pass says what is wrong with either) */
        }
    }
    fy_policy *p = NULL;
    fy_error *err = NULL;
    int prof = FY_PROFILE_RELEASE;
    if (profile && (prof = fy_profile_from_name(profile)) < 0) {
        fprintf(stderr, "%s: unknown profile \"%s\"\n", prog, profile);
        return RUN_BAD_INVOCATION;
    }
    /* The profile is the base; a policy file applies on top of it (a
     * "profile" key inside the file resets to that profile first). */
    if (check(fy_policy_new((uint32_t)prof, &p, &err), "--profile", &err) < 0)
        return RUN_BAD_INVOCATION;
    if (policy_file && load_policy_onto(p, policy_file) < 0)
        goto bad;
    for (i = 0; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(o, "--stdin") == 0) {
            pass_stdin = true;
            continue;
        }
        if (strcmp(o, "--hand-over") == 0) {
            hand = true;
            continue;
        }
        if (not_an_option("run", o))
            goto bad;
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, o);
            goto bad;
        }
        const char *v = argv[++i];
        char *left = NULL;
        const char *right = NULL;
        int r = 0;
        err = NULL;
        if (strcmp(o, "--profile") == 0 || strcmp(o, "--policy") == 0) {
            continue;
        } else if (strcmp(o, "--result") == 0) {
            result_file = v;
        } else if (strcmp(o, "--source") == 0) {
            v = host_abs(v);
            if ((r = want_directory(o, v)) == 0)
                r = check(fy_policy_set_source(p, v, 0, &err), o, &err);
        } else if (strcmp(o, "--build") == 0) {
            v = host_abs(v);
            if ((r = want_directory(o, v)) == 0 && (r = check(fy_policy_set_build(p, v, &err), o, &err)) == 0)
                build_dir = v;
        } else if (strcmp(o, "--output") == 0) {
            v = host_abs(v);
            if ((r = want_directory(o, v)) == 0 && (r = check(fy_policy_set_output(p, v, &err), o, &err)) == 0)
                output_dir = v;
        } else if (strcmp(o, "--bind") == 0 || strcmp(o, "--bind-ro") == 0) {
            if (split_eq(v, ':', &left, &right) < 0) {
                fprintf(stderr, "%s: %s expects HOST:PATH\n", prog, o);
                r = -1;
            } else {
                const char *host = host_abs(left);
                r = check(fy_policy_add_bind(p, host, right, strcmp(o, "--bind") == 0 ? FY_BIND_WRITABLE : 0, &err),
                          o, &err);
                /* (host is left itself when it was absolute: left is freed
                 * below, the name is needed until the hand-over.) */
                if (r == 0 && strcmp(o, "--bind") == 0 && nwritable < sizeof(writable) / sizeof(writable[0]))
                    writable[nwritable++] = host[0] == '/' ? (host == left ? kept_copy(left) : host) : NULL;
            }
        } else if (strcmp(o, "--workdir") == 0) {
            r = check(fy_policy_set_workdir(p, v, &err), o, &err);
        } else if (strcmp(o, "--image") == 0) {
            if ((r = check(fy_policy_set_image(p, v, &err), o, &err)) == 0)
                image = v;
        } else if (strcmp(o, "--runtime") == 0) {
            const char *comma = strchr(v, ',');
            uint32_t rflags = 0;
            if (comma && strcmp(comma + 1, "accept-known-issues") == 0)
                rflags = FY_RUNTIME_ACCEPT_KNOWN_ISSUES;
            else if (comma)
                r = bad_value(o, v, "NAME or NAME,accept-known-issues");
            char name[65];
            size_t nlen = comma ? (size_t)(comma - v) : strlen(v);
            if (r == 0 && nlen >= sizeof(name))
                r = bad_value(o, v, "a runtime name of at most 64 bytes"); /* (was cut to 64, silently) */
            snprintf(name, sizeof(name), "%.*s", (int)nlen, v);
            if (r == 0)
                r = check(fy_policy_set_runtime(p, name, rflags, &err), o, &err);
        } else if (strcmp(o, "--tmp-size") == 0) {
            r = apply_json(p, o, "{\"resources\": {\"tmp_size\": \"%s\"}}", v);
        } else if (strcmp(o, "--allow") == 0) {
            r = nallow < sizeof(allows) / sizeof(allows[0]) ? 0 : bad_value(o, v, "too many destinations");
            if (r == 0)
                allows[nallow++] = v;
        } else if (strcmp(o, "--network-uplink") == 0) {
            r = check(fy_policy_set_network_host(p, FY_NETHOST_UPLINK, host_abs(v), &err), o, &err);
        } else if (strcmp(o, "--network-hosts") == 0) {
            r = check(fy_policy_set_network_host(p, FY_NETHOST_HOSTS_FILE, host_abs(v), &err), o, &err);
        } else if (strcmp(o, "--network-credentials") == 0) {
            r = check(fy_policy_set_network_host(p, FY_NETHOST_CREDENTIALS, host_abs(v), &err), o, &err);
        } else if (strcmp(o, "--network") == 0 && strcmp(v, "restricted") == 0) {
            restricted = FY_NET_RESTRICTED; /* applied with the --allow destinations, after the options */
        } else if (strcmp(o, "--network") == 0 && strcmp(v, "fetch-only") == 0) {
            restricted = FY_NET_FETCH_ONLY;
        } else if (strcmp(o, "--network") == 0) {
            restricted = 0;
            /* (deny needs the network namespace an earlier --network allow
             * turned off: a later option overrides an earlier one.) */
            if (strcmp(v, "deny") == 0)
                r = apply_json(p, o, "{\"network\": {\"mode\": \"%s\", \"dns\": \"none\", \"destinations\": []}, "
                                     "\"isolation\": {\"controls\": {\"netns\": \"require\"}}}", v);
            else if (strcmp(v, "allow") == 0)
                r = apply_json(p, o, "{\"network\": {\"mode\": \"%s\", \"destinations\": []}, "
                                     "\"isolation\": {\"controls\": {\"netns\": \"off\"}}}", v);
            else {
                fprintf(stderr, "%s: --network is deny, allow, restricted or fetch-only\n", prog);
                r = -1;
            }
        } else if (strcmp(o, "--device") == 0 || strcmp(o, "--device-ro") == 0 || strcmp(o, "--gpu") == 0) {
            r = check(fy_policy_add_device(p, v, strcmp(o, "--device-ro") != 0, &err), o, &err);
            if (r == 0 && strcmp(o, "--gpu") == 0)
                r = check(fy_policy_set_gpu(p, FY_DEVICES_LEASED, &err), o, &err);
        } else if (strcmp(o, "--pty") == 0) {
            if (strcmp(v, "private") != 0 && strcmp(v, "deny") != 0) {
                fprintf(stderr, "%s: --pty is private or deny\n", prog);
                r = -1;
            } else {
                r = check(fy_policy_set_pty(p, strcmp(v, "private") == 0 ? FY_DEVICES_PRIVATE : FY_DEVICES_DENY, &err),
                          o, &err);
            }
        } else if (strcmp(o, "--seccomp") == 0) {
            if (strcmp(v, "general-build") != 0 && strcmp(v, "networked-test") != 0)
                r = bad_value(o, v, "expects general-build or networked-test");
            else
                r = apply_json(p, o, "{\"process\": {\"seccomp\": \"%s\"}}", v);
        } else if (strcmp(o, "--env") == 0) {
            if (split_eq(v, '=', &left, &right) < 0 && !(strchr(v, '=') && (left = strndup(v, (size_t)(strchr(v, '=') - v))) &&
                                                          (right = strchr(v, '=') + 1))) {
                fprintf(stderr, "%s: --env expects NAME=VALUE\n", prog);
                r = -1;
            } else {
                r = check(fy_policy_set_env(p, left, right, &err), o, &err);
            }
        } else if (strcmp(o, "--secret-env") == 0 || strcmp(o, "--secret-file") == 0) {
            bool env = strcmp(o, "--secret-env") == 0;
            if (split_eq(v, '=', &left, &right) < 0) {
                fprintf(stderr, "%s: %s expects NAME=FILE\n", prog, o);
                r = -1;
            } else {
                /* (A relative file is taken from the current directory, as
                 * --source, --build and --bind are.) */
                r = check(fy_policy_add_secret_file(p, left, env ? FY_SECRET_ENV : FY_SECRET_FILE, left,
                                                    host_abs(right), &err),
                          o, &err);
            }
        } else if (strcmp(o, "--timeout") == 0) {
            if (!*v)
                r = bad_value(o, v, "expects a duration (e.g. 30s, 10m, 1h)");
            else if (strspn(v, "0123456789.") == strlen(v))
                r = bad_value(o, v, "a unit is needed (e.g. 5s, 10m, 1h; us, ms, s, m, h or d)");
            else
                r = apply_json(p, o, "{\"resources\": {\"wall_time\": \"%s\"}}", v);
        } else if (strcmp(o, "--grace") == 0) {
            if (!*v)
                r = bad_value(o, v, "expects a duration (e.g. 2s, 500ms)");
            else if (strspn(v, "0123456789.") == strlen(v))
                r = bad_value(o, v, "a unit is needed (e.g. 2s, 500ms; us, ms, s, m, h or d)");
            else
                r = apply_json(p, o, "{\"resources\": {\"grace\": \"%s\"}}", v);
        } else if (strcmp(o, "--memory") == 0) {
            r = apply_json(p, o, "{\"resources\": {\"memory\": \"%s\"}, \"isolation\": {\"controls\": "
                                 "{\"memory-limit\": \"require\"}}}", v);
        } else if (strcmp(o, "--pids") == 0) {
            char n[24];
            if (!*v || strspn(v, "0123456789") != strlen(v)) {
                r = bad_value(o, v, "expects a whole number of processes (e.g. 512)");
            } else if (strlen(v) > 12) {
                r = bad_value(o, v, "too large");
            } else {
                snprintf(n, sizeof(n), "%llu", strtoull(v, NULL, 10)); /* (JSON has no leading zeros) */
                r = apply_json(p, o, "{\"resources\": {\"pids\": %s}, \"isolation\": {\"controls\": "
                                     "{\"pids-limit\": \"require\"}}}", n);
            }
        } else if (strcmp(o, "--cpus") == 0) {
            long millis = cpus_millis(v);
            char n[24];
            if (millis < 0) {
                r = bad_value(o, v, "expects a decimal number of CPUs above 0 and at most 1024 (e.g. 1.5)");
            } else {
                snprintf(n, sizeof(n), "%ld", millis);
                r = apply_json(p, o, "{\"resources\": {\"cpu_millis\": %s}, \"isolation\": {\"controls\": "
                                     "{\"cpu-limit\": \"require\"}}}", n);
            }
        } else {
            fprintf(stderr, "%s: unknown option %s\n", prog, o);
            r = -1;
        }
        free(left);
        if (r < 0)
            goto bad;
    }
    if (i >= argc && !image) {
        fprintf(stderr, "%s: run: no command (forgeyard run [OPTIONS] -- COMMAND [ARG...])\n", prog);
        goto bad;
    }
    /* The image first, with a progress bar on a terminal (fy_prepare then
     * finds its layers in the cache). */
    if (image && image_unpack(image, NULL, NULL) != EXIT_OK) {
        fy_policy_free(p);
        return RUN_BAD_INVOCATION;
    }
    if (nallow && !restricted) {
        fprintf(stderr, "%s: --allow needs --network restricted or fetch-only\n", prog);
        goto bad;
    }
    if (restricted) {
        if (apply_json(p, "--network", "{\"network\": {\"mode\": \"deny\", \"dns\": \"none\", \"destinations\": []}, "
                                       "\"isolation\": {\"controls\": {\"netns\": \"%s\"}}}", "require") < 0)
            goto bad;
        for (size_t k = 0; k < nallow; k++)
            if (add_allow(p, allows[k]) < 0)
                goto bad;
        err = NULL;
        if (check(fy_policy_set_network(p, restricted, &err), "--network", &err) < 0)
            goto bad;
    }
    struct run_hand rh = {.hand = hand, .build_dir = build_dir, .output_dir = output_dir, .writable = writable,
                          .nwritable = nwritable, .vm = asks_for_vm(p)};
    struct before_start before = {run_before_start, &rh};
    if (std_closed[1] && !std_closed[2])
        fprintf(stderr, "%s: note: stdout is closed: the command's output goes to /dev/null\n", prog);
    err = NULL;
    if (check(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, sandbox_out_fd(1), NULL, &err), "stdout", &err) < 0)
        goto bad;
    if (check(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FD, sandbox_out_fd(2), NULL, &err), "stderr", &err) < 0)
        goto bad;
    if (pass_stdin) {
#ifndef _WIN32
        /* A pipe or a file; never the host's terminal (its ioctls reach
         * the host session: --pty private gives the sandbox its own). */
        if (isatty(0)) {
            fprintf(stderr, "%s: --stdin: standard input is a terminal; a host terminal is never handed to a "
                            "sandbox (pipe or redirect a file)\n", prog);
            goto bad;
        }
        /* Nor a socket: the library gives the command a description of its
         * own of a file or pipe, but a socket is one, whose shutdown or
         * options the command would set for the host. */
        struct stat in_st;
        if (fstat(0, &in_st) == 0 && S_ISSOCK(in_st.st_mode)) {
            fprintf(stderr, "%s: --stdin: standard input is a socket, which is never handed to a sandbox (the "
                            "command could shut it down for the host); relay it through a pipe: "
                            "... | cat | %s run --stdin ...\n", prog, prog);
            goto bad;
        }
#endif
        if (check(fy_policy_set_stdio(p, FY_STDIN, FY_STDIO_FD, 0, NULL, &err), "stdin", &err) < 0)
            goto bad;
    }
#ifndef _WIN32
    /* The host's stdin is the command's (its bytes are consumed as it
     * reads them): what it changes of the open file's status flags
     * (O_NONBLOCK, which the host's next reader would trip on) is set back
     * once it is gone. */
    int in_flags = pass_stdin ? fcntl(0, F_GETFL) : -1;
    int status = run_policy(p, (const char *const *)(argv + i), result_file, pass_stdin, &before);
    if (in_flags >= 0)
        (void)fcntl(0, F_SETFL, in_flags);
    return status;
#else
    return run_policy(p, (const char *const *)(argv + i), result_file, pass_stdin, &before);
#endif
bad:
    fy_policy_free(p);
    return RUN_BAD_INVOCATION;
}

/* ---- forgeyard wrap: the executionWrapper / entrypoint convention ---- */

static void wrap_usage(FILE *f) {
    fprintf(f,
            "usage: %s wrap [OPTIONS] -- COMMAND [ARG...]\n"
            "\n"
            "Runs COMMAND in a fresh sandbox the way remote-execution workers call a\n"
            "wrapper (Buildfarm's executionWrapper, NativeLink's entrypoint): in the\n"
            "current directory, with exactly this process's environment.\n"
            "\n"
            "  --profile NAME          development, standard-ci, release (default), high-assurance\n"
            "  --policy FILE           a policy file (forgeyard-policy(5)) on top of the profile\n"
            "  --root DIR              the action's execution root (default: the current\n"
            "                          directory, which must be inside it); read-write at\n"
            "                          /work/build, the command runs in the same place below it\n"
            "  --same-path             the root at its own host path instead of /work/build\n"
            "                          (for scripts that name absolute host paths)\n"
            "  --bind HOST:PATH        a writable bind; --bind-ro HOST:PATH a read-only one\n"
            "  --hand-over             as root, hand the root's files, and whatever --bind\n"
            "                          names, to the sandbox's uid too (a job's workspace;\n"
            "                          without it only the root's directories)\n"
            "  --properties-from-env PREFIX\n"
            "                          variables PREFIX<name> are platform properties (name with\n"
            "                          '_' for '-'), applied as requirements, not passed on\n"
            "  --env-fd N              the environment from descriptor N (NUL-terminated\n"
            "                          entries), as forgeyard-wrap hands the action's over\n"
            "  --result FILE           write the result (evidence) as JSON\n"
            "  --help                  this text\n"
            "\n"
            "A worker that starts the wrapper with the action's environment runs\n"
            "forgeyard-wrap instead (docs/integrations.md): no dynamic loader on the host\n"
            "then reads it (LD_PRELOAD).\n"
            "The exit status is the command's, or 240-249 for what the sandbox did (forgeyard(1)).\n",
            prog);
}

static const char *const known_properties[] = {"OSFamily", "ISA", "sandbox-level", "network", "dockerNetwork",
                                               "Pool"};

/* The property an environment variable's suffix names ('_' for '-'). */
static const char *property_from_env(const char *suffix, size_t len) {
    for (size_t k = 0; k < sizeof(known_properties) / sizeof(known_properties[0]); k++) {
        const char *n = known_properties[k];
        if (strlen(n) != len)
            continue;
        size_t i = 0;
        while (i < len && (n[i] == suffix[i] || (n[i] == '-' && suffix[i] == '_')))
            i++;
        if (i == len)
            return n;
    }
    return NULL;
}

#ifndef _WIN32 /* wrap: the remote-execution workers it serves run on Linux */
/* As root, the workload (an unprivileged host uid) must be able to write
 * its outputs into the execution root the worker made: its directories
 * (never its files, never through a link, never across a mount) are handed
 * to that uid. The worker removes the directory after the action. */
static long wrap_uid = -1;
static unsigned long wrap_entries, wrap_linked;
static bool wrap_files;

/* What of an entry hand_at looks at: type, owner, links, file system and
 * mount (statx's mount id, 0 where the kernel has none: before 5.8). A
 * bind mount of the same file system has its device number, so only the
 * mount id tells that the walk would cross it. */
struct hand_stat {
    mode_t mode;
    uid_t uid;
    nlink_t nlink;
    dev_t dev;
    uint64_t mnt;
};

static int hand_stat_at(int dfd, const char *name, struct hand_stat *hs) {
#ifndef __linux__
    struct stat st;
    if (fstatat(dfd, name[0] ? name : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    *hs = (struct hand_stat){st.st_mode, st.st_uid, st.st_nlink, st.st_dev, 0};
    return 0;
#else
    struct statx sx;
    if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH), STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
        return -1;
    hs->mode = sx.stx_mode;
    hs->uid = sx.stx_uid;
    hs->nlink = sx.stx_nlink;
    hs->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    hs->mnt = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
    return 0;
#endif
}

/* One directory (dfd, shown as path) and what is below it on the same file
 * system and mount (mnt: 0, not known), walked by file descriptor: no path is resolved twice, so a
 * directory of the tree swapped for a symbolic link while we walk (by a
 * sandbox still writing there) redirects nothing to the host's files. A
 * file with other hard links is left alone: its other names may be
 * outside the tree, and the sandbox could then write them (cp -al). */
static int hand_at(int dfd, dev_t dev, uint64_t mnt, const char *path, int depth) {
    struct stat st;
    if (fstat(dfd, &st) < 0 || ((long)st.st_uid != wrap_uid && fchown(dfd, (uid_t)wrap_uid, (gid_t)wrap_uid) < 0)) {
        fprintf(stderr, "%s: cannot hand %s to uid %ld: %s\n", prog, path, wrap_uid, strerror(errno));
        return 1;
    }
    if (depth >= 256) {
        fprintf(stderr, "%s: the directory to hand over is more than 256 levels deep at %s\n", prog, path);
        return 1;
    }
    int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
    DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        return 1;
    }
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (++wrap_entries > 1000000) {
            fprintf(stderr, "%s: the directory to hand over has more than 1,000,000 entries\n", prog);
            r = 1;
            break;
        }
        char sub[PATH_MAX];
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name); /* (for messages only) */
        struct hand_stat es;
        if (hand_stat_at(dfd, e->d_name, &es) < 0 || es.dev != dev || (mnt && es.mnt != mnt))
            continue; /* gone, or another file system or mount: never across a mount */
        if (S_ISDIR(es.mode)) {
            int sfd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct hand_stat ds;
            if (sfd >= 0 && (hand_stat_at(sfd, "", &ds) < 0 || ds.dev != dev || (mnt && ds.mnt != mnt))) {
                close(sfd); /* (mounted there since) */
                continue;
            }
            if (sfd < 0)
                continue; /* gone, or no longer a directory */
            r = hand_at(sfd, dev, mnt, sub, depth + 1);
            close(sfd);
        } else if (wrap_files && S_ISREG(es.mode) && (long)es.uid != wrap_uid) {
            if (es.nlink > 1) {
                wrap_linked++;
                continue;
            }
            if (fchownat(dfd, e->d_name, (uid_t)wrap_uid, (gid_t)wrap_uid, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
                fprintf(stderr, "%s: cannot hand %s to uid %ld: %s\n", prog, sub, wrap_uid, strerror(errno));
                r = 1;
            }
        }
    }
    closedir(d);
    return r;
}

/* A directory at path, reached through no symbolic link at any component
 * (ELOOP; openat2, or one component at a time before 5.6): a descriptor,
 * or -1 with errno. */
static int open_dir_no_links(const char *path, int flags) {
    int fd;
#ifdef __linux__
    struct open_how how = {.flags = (uint64_t)(flags | O_DIRECTORY | O_CLOEXEC),
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
    if (fd >= 0 || errno != ENOSYS)
        return fd;
#endif
    if (path[0] != '/') {
        errno = EINVAL;
        return -1;
    }
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (const char *p = path + 1; dir >= 0;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0)
            break;
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            close(dir);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        p += n;
        int next = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(dir);
        if (next < 0) {
            errno = e == ENOTDIR ? ELOOP : e;
            return -1;
        }
        dir = next;
    }
    if (dir < 0)
        return -1;
    fd = openat(dir, ".", flags | O_DIRECTORY | O_CLOEXEC);
    close(dir);
    return fd;
}

/* The tree at path (a directory, reached through no symbolic link at any
 * component) to wrap_uid: 0, or 1 after saying why. */
static int hand_tree(const char *path) {
    int fd = open_dir_no_links(path, O_RDONLY);
    struct hand_stat st;
    if (fd < 0 || hand_stat_at(fd, "", &st) < 0) {
        fprintf(stderr, "%s: cannot hand %s to uid %ld: %s%s\n", prog, path, wrap_uid, strerror(errno),
                errno == ELOOP ? " (a symbolic link on its path: refused)" : "");
        if (fd >= 0)
            close(fd);
        return 1;
    }
    wrap_linked = 0;
    int r = hand_at(fd, st.dev, st.mnt, path, 0);
    close(fd);
    if (r == 0 && wrap_linked == 1)
        fprintf(stderr, "%s: note: 1 file in %s has other hard links and stays as it is (its other names may be "
                        "outside the directory)\n", prog, path);
    else if (r == 0 && wrap_linked)
        fprintf(stderr, "%s: note: %lu files in %s have other hard links and stay as they are (their other names "
                        "may be outside the directory)\n", prog, wrap_linked, path);
    return r;
}

/* As root, wrap hands the execution root's directories to the sandbox's
 * uid: never a system tree or a home, whatever directory it is run in. */
static bool disposable_root(const char *root) {
    static const char *const system_trees[] = {"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                               "/libx32", "/boot", "/dev", "/proc", "/sys", "/run", "/root",
                                               "/var/lib", "/var/log", "/var/spool", "/var/mail", "/snap",
                                               "/var/cache", "/var/backups", "/var/www", "/var/opt", "/var/local",
                                               "/var/db", "/var/games", "/var/empty", "/var/yp", "/nix", "/gnu"};
    for (size_t i = 0; i < sizeof(system_trees) / sizeof(system_trees[0]); i++) {
        size_t n = strlen(system_trees[i]);
        if (strncmp(root, system_trees[i], n) == 0 && (root[n] == '\0' || root[n] == '/'))
            return false;
    }
    int depth = 0;
    for (const char *c = root; *c; c++)
        depth += *c == '/' && c[1] && c[1] != '/';
    if (depth < 2)
        return false;
    /* The directories right below these are shared ones (/var/tmp, /opt/X,
     * /srv/X, a mount point, a user's home), never a build's own. */
    static const char *const shared_parents[] = {"/var/", "/opt/", "/srv/", "/mnt/", "/media/", "/home/"};
    for (size_t i = 0; depth == 2 && i < sizeof(shared_parents) / sizeof(shared_parents[0]); i++)
        if (strncmp(root, shared_parents[i], strlen(shared_parents[i])) == 0)
            return false;
    /* A directory others may write to (sticky or world-writable: /var/tmp,
     * /tmp/.X11-unix, a shared drop box) holds their files too. */
    struct stat st;
    if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_mode & (S_ISVTX | S_IWOTH)))
        return false;
    /* The caller's home, from the environment and from the user database
     * (behind forgeyard-wrap the environment is the operator's, no HOME). */
    const char *home = getenv("HOME");
    if (home && strcmp(home, root) == 0)
        return false;
    struct passwd *pw = getpwuid(geteuid());
    return !pw || !pw->pw_dir || strcmp(pw->pw_dir, root) != 0;
}

/* run --hand-over: a writable directory (its files too, never through a
 * link or across a mount) handed to the sandbox's host uid for good, as
 * `chown -R` would, under the same refusals as wrap's execution root. 0, or
 * the status to exit with. */
static int hand_over(long uid, const char *opt, const char *dir) {
    if (!dir || uid < 0)
        return dir ? RUN_INFRASTRUCTURE : 0;
    /* (dir is absolute and without "." or ".." (host_abs, the policy's
     * checks): with no link on it, it is its own real path) */
    int dfd = open_dir_no_links(dir, O_PATH);
    char *real = dfd >= 0 ? strdup(dir) : NULL;
    if (!real) {
        fprintf(stderr, "%s: --hand-over: %s %s: %s%s\n", prog, opt, dir, strerror(errno),
                errno == ELOOP ? " (a symbolic link on its path: never handed over)" : "");
        if (dfd >= 0)
            close(dfd);
        return RUN_BAD_INVOCATION;
    }
    close(dfd);
    if (!disposable_root(real)) {
        fprintf(stderr, "%s: --hand-over: %s %s is not a directory that can be handed to the sandbox's uid "
                        "(a system directory, a home, or fewer than two levels deep)\n",
                prog, opt, real);
        free(real);
        return RUN_BAD_INVOCATION;
    }
    wrap_uid = uid;
    wrap_files = true;
    wrap_entries = 0;
    int hr = hand_tree(real);
    free(real);
    return hr == 0 ? 0 : RUN_INFRASTRUCTURE;
}

/* wrap's execution root (and with --hand-over its writable binds),
 * handed to the host uid the prepared plan runs the workload as. */
struct wrap_hand {
    const char *root;
    char **argv;
    int nopts; /* argv[0, nopts): the options */
};

static int wrap_before_start(void *ctx, long uid) {
    const struct wrap_hand *wh = ctx;
    const char *root = wh->root;
    char **argv = wh->argv;
    int i = wh->nopts;
    if (geteuid() != 0 || (wrap_uid = uid) < 0)
        return 0;
    /* The root, and with --hand-over the writable binds too (a runner's
     * file-command directory). */
    wrap_entries = 0;
    /* Every --bind to hand over passes the execution root's refusals
     * (never a system tree, a home, a shared or world-writable
     * directory) before anything is handed over. */
    char *handed[64];
    size_t nhanded = 0;
    int hr = 0;
    for (int k = 0; wrap_files && k < i - 1; k++) {
        if (strcmp(argv[k], "--bind") != 0)
            continue;
        char *host = strndup(argv[k + 1], strcspn(argv[k + 1], ":"));
        /* (as the bind was given to the policy: made absolute, no link
         * followed; one on its path is refused, never handed over) */
        const char *abs = host ? host_abs(host) : NULL;
        int dfd = abs ? open_dir_no_links(abs, O_PATH) : -1;
        char *real = dfd >= 0 ? strdup(abs) : NULL;
        int e = errno;
        if (dfd >= 0)
            close(dfd);
        if (!real || !disposable_root(real) || nhanded == sizeof(handed) / sizeof(handed[0])) {
            fprintf(stderr, "%s: wrap: --hand-over: --bind %s %s%s\n", prog, host ? host : argv[k + 1],
                    !real ? strerror(e)
                          : "is not a directory that can be handed to the sandbox's uid (a system directory, "
                            "a home, a directory others may write to, or fewer than two levels deep)",
                    !real && e == ELOOP ? " (a symbolic link on its path: never handed over)" : "");
            free(real);
            hr = RUN_BAD_INVOCATION;
        } else {
            handed[nhanded++] = real;
        }
        free(host);
        k++;
    }
    if (hr == 0 && hand_tree(root) != 0)
        hr = RUN_INFRASTRUCTURE;
    for (size_t k = 0; k < nhanded; k++) {
        if (hr == 0 && hand_tree(handed[k]) != 0)
            hr = RUN_INFRASTRUCTURE;
        free(handed[k]);
    }
    return hr;
}

/* The environment forgeyard-wrap hands over (--env-fd N): its entries,
 * each NUL-terminated, read to the end (16 MiB at most), the descriptor
 * closed. An array into *buf, or NULL (said on stderr). */
static char **env_from_fd(const char *num, char **buf) {
    char *end = NULL;
    errno = 0;
    long fd = strtol(num, &end, 10);
    if (errno || !end || *end || end == num || fd < 3 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0) {
        fprintf(stderr, "%s: wrap: --env-fd %s is not an open descriptor above 2\n", prog, num);
        return NULL;
    }
    size_t len = 0, cap = 1 << 16, max = 16u << 20;
    char *b = malloc(cap + 1);
    while (b) {
        if (len == cap) {
            char *nb = cap < max ? realloc(b, (cap *= 2) + 1) : NULL;
            if (!nb)
                break; /* (len == cap: refused below) */
            b = nb;
        }
        ssize_t n = read((int)fd, b + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0) {
                free(b);
                b = NULL;
            }
            break;
        }
        len += (size_t)n;
    }
    close((int)fd);
    if (!b || len == cap) {
        fprintf(stderr, "%s: wrap: --env-fd %s: %s\n", prog, num, b ? "more than 16 MiB" : "cannot be read");
        free(b);
        return NULL;
    }
    b[len] = '\0';
    size_t n = 0;
    for (size_t k = 0; k < len; k += strlen(b + k) + 1)
        n++;
    char **v = calloc(n + 1, sizeof(char *));
    if (!v) {
        free(b);
        return NULL;
    }
    n = 0;
    for (size_t k = 0; k < len; k += strlen(b + k) + 1)
        v[n++] = b + k;
    *buf = b;
    return v;
}

static int cmd_wrap(int argc, char **argv) {
    stop_what = "wrap"; /* (its messages said "run:") */
    const char *profile = NULL, *policy_file = NULL, *result_file = NULL, *root_opt = NULL, *prefix = NULL;
    const char *env_fd_opt = NULL;
    char *env_buf = NULL, **envv = NULL;
    bool same_path = false;
    int i = 0, nbinds = 0;
    for (; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--") == 0) {
            i++;
            break;
        }
        if (is_help(o)) {
            wrap_usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(o, "--same-path") == 0 || strcmp(o, "--hand-over") == 0) {
            if (o[2] == 's')
                same_path = true;
            else
                wrap_files = true;
            continue;
        }
        if (not_an_option("wrap", o))
            return RUN_BAD_INVOCATION;
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, o);
            return RUN_BAD_INVOCATION;
        }
        const char *v = argv[++i];
        if (strcmp(o, "--profile") == 0)
            profile = v;
        else if (strcmp(o, "--policy") == 0)
            policy_file = v;
        else if (strcmp(o, "--result") == 0)
            result_file = v;
        else if (strcmp(o, "--root") == 0)
            root_opt = v;
        else if (strcmp(o, "--properties-from-env") == 0)
            prefix = v;
        else if (strcmp(o, "--env-fd") == 0)
            env_fd_opt = v;
        else if (strcmp(o, "--bind") == 0 || strcmp(o, "--bind-ro") == 0)
            nbinds++; /* (applied below, on the policy) */
        else {
            fprintf(stderr, "%s: wrap: unknown option %s\n", prog, o);
            return RUN_BAD_INVOCATION;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "%s: wrap: no command (forgeyard wrap [OPTIONS] -- COMMAND [ARG...])\n", prog);
        return RUN_BAD_INVOCATION;
    }
    char cwd[4096], root[4096];
    if (!getcwd(cwd, sizeof(cwd)) || !realpath(root_opt ? root_opt : ".", root)) {
        fprintf(stderr, "%s: wrap: %s: %s\n", prog, root_opt ? root_opt : "the current directory", strerror(errno));
        return RUN_BAD_INVOCATION;
    }
    size_t rl = strlen(root);
    const char *rel = NULL;
    if (strcmp(root, "/") != 0 && strncmp(cwd, root, rl) == 0 && (cwd[rl] == '\0' || cwd[rl] == '/'))
        rel = cwd + rl + (cwd[rl] == '/');
    if (!rel) {
        fprintf(stderr, "%s: wrap: the current directory %s is not inside the execution root %s\n", prog, cwd, root);
        return RUN_BAD_INVOCATION;
    }
    int prof = FY_PROFILE_RELEASE;
    if (profile && (prof = fy_profile_from_name(profile)) < 0) {
        fprintf(stderr, "%s: unknown profile \"%s\"\n", prog, profile);
        return RUN_BAD_INVOCATION;
    }
    fy_policy *p = NULL;
    fy_error *err = NULL;
    if (check(fy_policy_new((uint32_t)prof, &p, &err), "--profile", &err) < 0 ||
        (policy_file && load_policy_onto(p, policy_file) < 0))
        goto bad;
    /* Exactly this process's environment (the action's), nothing added;
     * or the one forgeyard-wrap read for us (--env-fd). */
    if (apply_json(p, "wrap", "{\"environment\": {\"set\": {}, \"allow\": [], \"defaults\": %s}}", "false") < 0)
        goto bad;
    extern char **environ;
    if (env_fd_opt && !(envv = env_from_fd(env_fd_opt, &env_buf)))
        goto bad;
    size_t plen = prefix ? strlen(prefix) : 0;
    for (char **e = envv ? envv : environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char *name = strndup(*e, (size_t)(eq - *e));
        if (!name)
            goto bad;
        int r = 0;
        if (prefix && strncmp(name, prefix, plen) == 0) {
            const char *prop = property_from_env(name + plen, strlen(name + plen));
            if (!prop) {
                fprintf(stderr, "%s: wrap: %s: platform property \"%s\" is not one this library honours "
                                "(forgeyard-action(5)); refused rather than ignored\n", prog, name, name + plen);
                free(name);
                fy_policy_free(p);
                free(envv);
                free(env_buf);
                return RUN_UNSUPPORTED;
            }
            r = fy_policy_set_platform_property(p, prop, eq + 1, &err);
            if (r < 0) {
                report(name, err, r);
                free(name);
                fy_policy_free(p);
                free(envv);
                free(env_buf);
                return RUN_UNSUPPORTED;
            }
        } else {
            r = check(fy_policy_set_env(p, name, eq + 1, &err), name, &err);
        }
        free(name);
        if (r < 0)
            goto bad;
    }
    free(envv);
    free(env_buf);
    envv = NULL;
    env_buf = NULL;
    for (int k = 0; nbinds && k < i - 1; k++) {
        if (strcmp(argv[k], "--bind") != 0 && strcmp(argv[k], "--bind-ro") != 0)
            continue;
        char *left = NULL;
        const char *right = NULL;
        if (split_eq(argv[k + 1], ':', &left, &right) < 0) {
            fprintf(stderr, "%s: %s expects HOST:PATH\n", prog, argv[k]);
            goto bad;
        }
        int br = check(
            fy_policy_add_bind(p, host_abs(left), right, strcmp(argv[k], "--bind") == 0 ? FY_BIND_WRITABLE : 0, &err),
            argv[k], &err);
        free(left);
        if (br < 0)
            goto bad;
        k++;
    }
    char *workdir = NULL;
    if (same_path ? !(workdir = strdup(cwd)) : asprintf(&workdir, "/work/build%s%s", rel[0] ? "/" : "", rel) < 0)
        goto bad;
    int r = same_path ? check(fy_policy_add_bind(p, root, root, FY_BIND_WRITABLE, &err), "--root", &err)
                      : check(fy_policy_set_build(p, root, &err), "--root", &err);
    if (r == 0)
        r = check(fy_policy_set_workdir(p, workdir, &err), "the working directory", &err);
    free(workdir);
    if (r < 0)
        goto bad;
    if (geteuid() == 0 && !disposable_root(root)) {
        fprintf(stderr, "%s: wrap: %s is not an execution root that can be handed to the sandbox's uid "
                        "(a system directory, a home, or fewer than two levels deep)\n", prog, root);
        goto bad;
    }
    struct wrap_hand wh = {root, argv, i};
    struct before_start before = {wrap_before_start, &wh};
    if (check(fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, sandbox_out_fd(1), NULL, &err), "stdout", &err) < 0 ||
        check(fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FD, sandbox_out_fd(2), NULL, &err), "stderr", &err) < 0)
        goto bad;
    return run_policy(p, (const char *const *)(argv + i), result_file, false, &before);
bad:
    fy_policy_free(p);
    free(envv);
    free(env_buf);
    return RUN_BAD_INVOCATION;
}
#else
static int cmd_wrap(int argc, char **argv) {
    fprintf(stderr, "%s: wrap: not available on Windows\n", prog);
    return RUN_UNSUPPORTED;
}
#endif

/* ---- forgeyard action run ---- */

static void action_usage(FILE *f) {
    fprintf(f,
            "usage: %s action run ACTION.json [OPTIONS]\n"
            "       %s action gc [--cache DIR] [--max-age DURATION] [--max-size SIZE]\n"
            "\n"
            "  --profile NAME          development, standard-ci, release (default), high-assurance\n"
            "  --policy FILE           a policy file (forgeyard-policy(5)) on top of the profile\n"
            "  --output-dir DIR        where the declared outputs go (overrides the action's)\n"
            "  --stdout FILE           keep the action's stdout there (a new file); --stderr FILE\n"
            "  --result FILE           write the ActionResult record there instead of stdout\n"
            "  --help                  this text\n"
            "\n"
            "The action format is forgeyard-action(5). The exit status is the command's, or\n"
            "240-249 for what the sandbox did (forgeyard(1)).\n"
            "\n"
            "gc removes the unpacked archive inputs not used for --max-age (default 14d),\n"
            "then the least recently used down to --max-size; never one in use.\n",
            prog, prog);
}

static int action_status(const fy_action_result *res) {
    switch (fy_action_result_outcome(res)) {
    case FY_OUTCOME_SANDBOX_VIOLATION: return RUN_SANDBOX_VIOLATION;
    case FY_OUTCOME_RESOURCE_EXCEEDED: return RUN_RESOURCE_EXCEEDED;
    default: return run_outcome_status(fy_action_result_sandbox(res));
    }
}

/* forgeyard action gc: the cache of unpacked archive inputs. */
static int action_gc(int argc, char **argv) {
    const char *cache = NULL;
    uint64_t max_age = 14ull * 86400 * 1000000, max_size = FY_UNLIMITED;
    for (int k = 1; k < argc; k++) {
        int o = cache_gc_option(argc, argv, &k, &cache, &max_age, &max_size);
        if (o < 0)
            return EXIT_USAGE;
        if (o == 0) {
            action_usage(stderr);
            return EXIT_USAGE;
        }
    }
    /* (a typo must not read as "nothing to collect", as for gc) */
    struct stat cst;
    const char *why = !cache ? NULL : stat(cache, &cst) < 0 ? strerror(errno)
                                    : !S_ISDIR(cst.st_mode) ? "not a directory" : NULL;
    if (why) {
        fprintf(stderr, "%s: action gc: --cache %s: %s\n", prog, cache, why);
        return EXIT_USAGE;
    }
    char *abs = NULL;
    if (cache && cache[0] != '/') {
        char cwd[4096];
        if (!getcwd(cwd, sizeof(cwd)) || asprintf(&abs, "%s/%s", cwd, cache) < 0)
            abs = NULL;
        cache = abs ? abs : cache;
    }
    fy_error *err = NULL;
    uint64_t n = 0;
    int r = fy_action_cache_gc(cache, max_size, max_age, &n, &err);
    free(abs);
    if (r < 0)
        return report("action gc", err, r), EXIT_FAIL;
    printf("removed %llu action cache entr%s\n", (unsigned long long)n, n == 1 ? "y" : "ies");
    return EXIT_OK;
}

static int cmd_action(int argc, char **argv) {
    if (argc < 1 || is_help(argv[0])) {
        action_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? RUN_BAD_INVOCATION : EXIT_OK;
    }
    if (strcmp(argv[0], "gc") == 0)
        return action_gc(argc, argv);
    if (strcmp(argv[0], "run") != 0 || argc < 2) {
        action_usage(stderr);
        return RUN_BAD_INVOCATION;
    }
    if (is_help(argv[1])) {
        action_usage(stdout);
        return EXIT_OK;
    }
    const char *file = argv[1], *profile = NULL, *policy_file = NULL, *result_file = NULL, *outdir = NULL;
    const char *streams[3] = {NULL, NULL, NULL};
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (is_help(o)) {
            action_usage(stdout);
            return EXIT_OK;
        }
        static const char *const known[] = {"--profile", "--policy", "--result", "--output-dir", "--stdout",
                                            "--stderr"};
        bool is_known = false;
        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
            is_known = is_known || strcmp(o, known[k]) == 0;
        if (!is_known) {
            fprintf(stderr, "%s: action run: unknown option %s\n", prog, o);
            return RUN_BAD_INVOCATION;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, o);
            return RUN_BAD_INVOCATION;
        }
        const char *v = argv[++i];
        if (strcmp(o, "--profile") == 0)
            profile = v;
        else if (strcmp(o, "--policy") == 0)
            policy_file = v;
        else if (strcmp(o, "--result") == 0)
            result_file = v;
        else if (strcmp(o, "--output-dir") == 0)
            outdir = v;
        else if (strcmp(o, "--stdout") == 0)
            streams[1] = v;
        else if (strcmp(o, "--stderr") == 0)
            streams[2] = v;
        else {
            fprintf(stderr, "%s: action run: unknown option %s\n", prog, o);
            return RUN_BAD_INVOCATION;
        }
    }
    size_t len;
    char *json = read_file(file, &len);
    if (!json)
        return RUN_BAD_INVOCATION;
    fy_action *a = NULL;
    fy_policy *p = NULL;
    fy_caps *caps = NULL;
    fy_error *err = NULL;
    int r = fy_action_from_json(json, len, &a, &err);
    free(json);
    if (r < 0) {
        report(file, err, r);
        return RUN_BAD_INVOCATION;
    }
    /* (relative paths joined to the working directory textually: "out/"
     * is the directory out, as at a shell) */
    const char *paths[4] = {outdir ? host_abs(outdir) : NULL, NULL, streams[1] ? host_abs(streams[1]) : NULL,
                            streams[2] ? host_abs(streams[2]) : NULL};
    if ((paths[0] && (r = fy_action_set_output_directory(a, paths[0], &err)) < 0) ||
        (paths[2] && (r = fy_action_set_stdio_path(a, 1, paths[2], &err)) < 0) ||
        (paths[3] && (r = fy_action_set_stdio_path(a, 2, paths[3], &err)) < 0)) {
        fy_action_free(a);
        report("action run", err, r);
        return RUN_BAD_INVOCATION;
    }
    int prof = FY_PROFILE_RELEASE;
    if (profile && (prof = fy_profile_from_name(profile)) < 0) {
        fprintf(stderr, "%s: unknown profile \"%s\"\n", prog, profile);
        fy_action_free(a);
        return RUN_BAD_INVOCATION;
    }
    if (check(fy_policy_new((uint32_t)prof, &p, &err), "--profile", &err) < 0 ||
        (policy_file && load_policy_onto(p, policy_file) < 0)) {
        fy_policy_free(p);
        fy_action_free(a);
        return RUN_BAD_INVOCATION;
    }
    if (!result_path_ok("action run: ", result_file)) {
        fy_policy_free(p);
        fy_action_free(a);
        return RUN_BAD_INVOCATION;
    }
    if (probe(&caps) != EXIT_OK || catch_stop_signals() < 0) {
        fy_policy_free(p);
        fy_action_free(a);
        fy_caps_free(caps);
        return RUN_INFRASTRUCTURE;
    }
    /* The input walk's verdict beside the attempt, as fy_action_run does
     * (fy_action_run(3)); an attempt it supersedes (FY_E_AGAIN, nothing of
     * it kept) is made again walk-first, unless a stop signal came. */
    fy_action_result *res = NULL;
    for (uint32_t flags = FY_ACTION_START_SPECULATIVE;; flags = 0) {
        fy_action_attempt *t = NULL;
        r = fy_action_start_ex(a, p, caps, flags, &t, &err);
        if (r == FY_E_UNSUPPORTED && reprobe_once(&caps)) {
            fy_error_free(err);
            err = NULL;
            r = fy_action_start_ex(a, p, caps, flags, &t, &err);
        }
        if (r < 0) {
            /* Refused before anything ran: a bad document, an input root
             * beyond its limits or holding what is refused (FY_E_RANGE,
             * FY_E_UNSAFE at the input step, as after the start), or
             * (FY_E_STATE at the prepare step) an output directory that is
             * not empty or a --stdout/--stderr file that exists: the
             * caller's to fix. */
            fy_policy_free(p);
            fy_caps_free(caps);
            fy_action_free(a);
            int step = err ? (int)fy_error_step(err) : -1;
            bool caller = r == FY_E_INVAL || (r == FY_E_STATE && step == FY_STEP_PREPARE) ||
                          ((r == FY_E_RANGE || r == FY_E_UNSAFE) && step == FY_STEP_INPUT);
            report("action run", err, r);
            return r == FY_E_UNSUPPORTED ? RUN_UNSUPPORTED : caller ? RUN_BAD_INVOCATION : RUN_INFRASTRUCTURE;
        }
        fy_result *sres = NULL;
        stop_what = "action run";
        int w = wait_or_cancel(fy_action_attempt_handle(t), &sres, &err);
        fy_result_free(sres);
        if (w <= 0) {
            fy_action_attempt_free(t);
            fy_policy_free(p);
            fy_caps_free(caps);
            fy_action_free(a);
            if (w == 0) {
                note_nopipe("%s: action run: cancelled: the sandbox was killed\n", prog);
                return RUN_CANCELLED;
            }
            report("action run", err, FY_E_IO);
            return RUN_INFRASTRUCTURE;
        }
        r = fy_action_finish(t, &res, &err);
        fy_action_attempt_free(t);
        if (r == FY_E_AGAIN && flags && !stop_seen) {
            fy_error_free(err);
            err = NULL;
            continue;
        }
        break;
    }
    fy_policy_free(p);
    fy_caps_free(caps);
    fy_action_free(a);
    if (r < 0) {
        report("action run", err, r);
        /* An input the walk beside the attempt refused (a FIFO, an archive
         * over its limit) is the document's fault, as before the start. */
        return stop_seen && r == FY_E_AGAIN                  ? RUN_CANCELLED
               : r == FY_E_INVAL || r == FY_E_RANGE || r == FY_E_UNSAFE ? RUN_BAD_INVOCATION
                                                                          : RUN_INFRASTRUCTURE;
    }
#ifdef SIGPIPE
    signal(SIGPIPE, SIG_IGN); /* (as in run: the result file is written even if stderr's reader is gone) */
#endif
    int status = action_status(res);
    int outcome = fy_action_result_outcome(res);
    if (outcome != FY_OUTCOME_SUCCEEDED && outcome != FY_OUTCOME_FAILED)
        fprintf(stderr, "%s: action run: %s%s%s\n", prog, fy_outcome_name((uint32_t)outcome),
                fy_action_result_detail(res) ? ": " : "", fy_action_result_detail(res) ? fy_action_result_detail(res) : "");
    char *rj = NULL;
    if (fy_action_result_to_json(res, &rj, NULL) == 0) {
        int wr;
        if (result_file) {
            size_t n = strlen(rj);
            char *line = malloc(n + 2);
            if (line) {
                memcpy(line, rj, n);
                memcpy(line + n, "\n", 2);
            }
            wr = line ? write_result_file(result_file, line) : (errno = ENOMEM, -1);
            free(line);
        } else {
            wr = printf("%s\n", rj) < 0 || fflush(stdout) != 0 ? -1 : 0;
        }
        if (wr < 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, result_file ? result_file : "the result", strerror(errno));
            status = status ? status : EXIT_FAIL;
        }
        fy_free(rj);
    }
    fy_action_result_free(res);
    return status;
}

/* ---- forgeyard test ---- */

#ifdef FY_CLI_JOB
#include <jansson.h>

/* forgeyard job run JOB.json: the members of one job, each in its own
 * sandbox, on one job network (fy_jobnet_new(3)) in this process. JOB.json:
 *   {"members": [{"name": N, "argv": [...], "policy": {POLICY} | "policy_file": PATH,
 *                 "service": true|false}, ...]}
 * Members start in order; once every member that is not a service has
 * ended, the services are cancelled. Prints "NAME: OUTCOME [exit N]" per
 * member; exits 0 when every non-service member succeeded. */
#define JOB_MAX FY_JOBNET_MAX_MEMBERS
/* Drives member i to its end while watching the stop signals: the first
 * cancels every live member, a second returns 0 (the caller kills). */
static int job_wait(fy_handle *const *h, size_t n, size_t i, int *stops, fy_result **res, fy_error **err) {
    for (;;) {
        int r = fy_handle_process(h[i], res, err);
        if (r != 0)
            return r;
        uint64_t usec = FY_UNLIMITED;
        fy_handle_get_timeout_usec(h[i], &usec);
        int ms = usec == FY_UNLIMITED ? -1 : (int)(usec > 60000000 ? 60000 : (usec + 999) / 1000);
        struct pollfd pfd[2] = {{.fd = fy_handle_get_fd(h[i]), .events = POLLIN},
                                {.fd = stop_pipe[0], .events = POLLIN}};
        if (poll(pfd, 2, ms) < 0 && errno != EINTR)
            return -1;
        unsigned char sig;
        while (read(stop_pipe[0], &sig, 1) == 1) {
            stop_seen = true;
            if ((*stops)++ > 0)
                return 0;
            for (size_t k = 0; k < n; k++)
                if (h[k])
                    fy_handle_cancel(h[k], FY_CANCEL_USER, NULL);
            note_nopipe("%s: job run: %s: cancelling every member (again to kill them at once)\n", prog,
                        strsignal(sig));
        }
    }
}

static int cmd_job(int argc, char **argv) {
    if ((argc == 1 || argc == 2) && (is_help(argv[0]) || (argc == 2 && is_help(argv[1])))) {
        printf("usage: %s job run JOB.json\n", prog);
        return EXIT_OK;
    }
    if (argc != 2 || strcmp(argv[0], "run") != 0) {
        fprintf(stderr, "usage: %s job run JOB.json\n", prog);
        return EXIT_USAGE;
    }
    json_error_t je;
    size_t jlen = 0;
    char *jtext = read_file(argv[1], &jlen);
    if (!jtext)
        return EXIT_FAIL; /* (a file that cannot be read: 1, as forgeyard(1) maps it) */
    json_t *doc = json_loadb(jtext, jlen, JSON_REJECT_DUPLICATES, &je);
    free(jtext);
    json_t *members = doc ? json_object_get(doc, "members") : NULL;
    if (!doc) {
        fprintf(stderr, "%s: %s:%d: %s\n", prog, argv[1], je.line, je.text);
        return EXIT_USAGE;
    }
    size_t n = json_is_array(members) ? json_array_size(members) : 0;
    if (n == 0 || n > JOB_MAX) {
        fprintf(stderr, "%s: %s: $.members: 1 to %d members expected\n", prog, argv[1], JOB_MAX);
        json_decref(doc);
        return EXIT_USAGE;
    }
    /* Every key is one this command knows: a misspelled "polcy" must not
     * run its member without the limits it asked for. */
    const char *key;
    json_t *val;
    json_object_foreach(doc, key, val) {
        if (strcmp(key, "members") != 0) {
            fprintf(stderr, "%s: %s: $.%s: unknown key\n", prog, argv[1], key);
            json_decref(doc);
            return EXIT_USAGE;
        }
    }
    const char *names[JOB_MAX + 1] = {0};
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(members, i);
        names[i] = json_string_value(json_object_get(m, "name"));
        json_t *av = json_object_get(m, "argv");
        if (!names[i] || !json_is_array(av) || json_array_size(av) == 0) {
            fprintf(stderr, "%s: %s: $.members[%zu]: needs \"name\" (a string) and \"argv\" (a non-empty array)\n",
                    prog, argv[1], i);
            json_decref(doc);
            return EXIT_USAGE;
        }
        const char *why = NULL, *where = "";
        json_object_foreach(m, key, val) {
            if (!why && strcmp(key, "name") && strcmp(key, "argv") && strcmp(key, "policy") &&
                strcmp(key, "policy_file") && strcmp(key, "service")) {
                why = "unknown key";
                where = key;
            }
        }
        json_t *pol = json_object_get(m, "policy"), *pf = json_object_get(m, "policy_file"),
               *sv = json_object_get(m, "service");
        for (size_t k = 0; !why && k < json_array_size(av); k++)
            if (!json_is_string(json_array_get(av, k)))
                why = "argv: an array of strings expected", where = "argv";
        if (!why && pol && pf)
            why = "give policy or policy_file, not both", where = "policy";
        else if (!why && pol && !json_is_object(pol))
            why = "an object expected", where = "policy";
        else if (!why && pf && !json_is_string(pf))
            why = "a path expected", where = "policy_file";
        else if (!why && sv && !json_is_boolean(sv))
            why = "true or false expected", where = "service";
        if (why) {
            fprintf(stderr, "%s: %s: $.members[%zu].%s: %s\n", prog, argv[1], i, where, why);
            json_decref(doc);
            return EXIT_USAGE;
        }
    }
    fy_jobnet *jn = NULL;
    fy_error *err = NULL;
    int r = fy_jobnet_new(names, &jn, &err);
    if (r < 0) {
        report(argv[1], err, r);
        json_decref(doc);
        return EXIT_USAGE;
    }
    fy_prepared *pr[JOB_MAX] = {0};
    fy_handle *h[JOB_MAX] = {0};
    bool service[JOB_MAX] = {0};
    int status = EXIT_OK, stops = 0;
    /* ^C, SIGTERM, SIGHUP: every member cancelled, then at a second one
     * killed at once (as run does); the lines and the network's removal
     * still follow. (They killed this process: no line, the members'
     * cgroups and records left to gc.) */
    stop_what = "job run";
    if (catch_stop_signals() < 0) {
        fprintf(stderr, "%s: job run: cannot catch signals: %s\n", prog, strerror(errno));
        fy_jobnet_free(jn);
        json_decref(doc);
        return EXIT_FAIL;
    }
    for (size_t i = 0; i < n && status == EXIT_OK; i++) {
        json_t *m = json_array_get(members, i);
        json_t *pol = json_object_get(m, "policy"), *pf = json_object_get(m, "policy_file"), *av = json_object_get(m, "argv");
        service[i] = json_is_true(json_object_get(m, "service"));
        fy_policy *p = NULL;
        err = NULL;
        r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &err);
        if (r >= 0 && json_is_string(pf)) {
            r = load_policy_onto(p, json_string_value(pf)) < 0 ? FY_E_POLICY : 0; /* (it said why) */
            err = NULL;
        } else if (r >= 0 && json_is_object(pol)) {
            char *text = json_dumps(pol, JSON_COMPACT);
            r = text ? fy_policy_load_json(p, text, strlen(text), &err) : FY_E_NOMEM;
            free(text);
        }
        if (r >= 0)
            r = fy_policy_set_job_member(p, names[i], &err);
        if (r >= 0)
            r = fy_policy_set_stdio(p, FY_STDOUT, FY_STDIO_FD, sandbox_out_fd(1), NULL, &err);
        if (r >= 0)
            r = fy_policy_set_stdio(p, FY_STDERR, FY_STDIO_FD, sandbox_out_fd(2), NULL, &err);
        size_t na = json_array_size(av);
        const char **args = calloc(na + 1, sizeof(*args));
        if (!args && r >= 0)
            r = FY_E_NOMEM;
        for (size_t k = 0; r >= 0 && k < na; k++)
            args[k] = json_string_value(json_array_get(av, k)); /* (strings: checked above) */
        if (r >= 0)
            r = fy_prepare_member(p, NULL, args, jn, &pr[i], &err);
        free(args);
        if (r >= 0)
            r = fy_start(pr[i], &h[i], &err);
        fy_policy_free(p);
        if (r < 0) {
            if (err)
                report(names[i], err, r);
            else
                fprintf(stderr, "%s: member %s: %s\n", prog, names[i], fy_strerror(r));
            status = r == FY_E_UNSUPPORTED ? EXIT_UNSUPPORTED : r == FY_E_POLICY ? EXIT_USAGE : EXIT_FAIL;
        }
    }
    /* Every member that is not a service ends by itself; then the services
     * are cancelled (and anything left when a start failed). A member that
     * ends without success does not end the others (it cancelled every
     * later one: their results were lost). */
    bool start_failed = status != EXIT_OK;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            if (!h[i] || (pass == 0 && (service[i] || start_failed)))
                continue;
            if (pass == 1)
                fy_handle_cancel(h[i], FY_CANCEL_USER, NULL);
            fy_result *res = NULL;
            err = NULL;
            r = stops >= 2 ? 0 : job_wait(h, n, i, &stops, &res, &err);
            if (r == 0) {
                fy_handle_free(h[i]); /* (kills, reaps and cleans up) */
                h[i] = NULL;
                out_relay_drain();
                printf("%s: cancelled: the sandbox was killed\n", names[i]);
                status = EXIT_FAIL;
                fflush(stdout);
                continue;
            }
            out_relay_drain();
            if (stops && status == EXIT_OK)
                status = EXIT_FAIL;
            if (r < 0) {
                report(names[i], err, r);
                status = EXIT_FAIL;
            } else {
                uint32_t o = (uint32_t)fy_result_outcome(res);
                if (fy_result_exit_code(res) >= 0)
                    printf("%s: %s exit %d\n", names[i], fy_outcome_name(o), fy_result_exit_code(res));
                else
                    printf("%s: %s\n", names[i], fy_outcome_name(o));
                if (!service[i] && o != FY_OUTCOME_SUCCEEDED && status == EXIT_OK)
                    status = EXIT_FAIL;
            }
            fflush(stdout);
            fy_result_free(res);
            fy_handle_free(h[i]);
            h[i] = NULL;
        }
    for (size_t i = 0; i < n; i++)
        fy_prepared_free(pr[i]);
    err = NULL;
    r = fy_jobnet_shutdown(jn, &err);
    if (r != 0) {
        if (r < 0)
            report("job network", err, r);
        else
            fprintf(stderr, "%s: the job network's removal left %d object(s)\n", prog, r);
        status = EXIT_FAIL;
    }
    fy_jobnet_free(jn);
    json_decref(doc);
    return status;
}
#else
static int cmd_job(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "%s: job networks are not built on this platform (Linux only)\n", prog);
    return EXIT_UNSUPPORTED;
}
#endif

static int cmd_test(int argc, char **argv) {
    int json = 0;
    const char *profile = "release";
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
            profile = argv[++i];
        else {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    int prof = fy_profile_from_name(profile);
    if (prof < 0) {
        fprintf(stderr, "%s: unknown profile \"%s\" (development, standard-ci, release, high-assurance)\n", prog,
                profile);
        return EXIT_USAGE;
    }
    fy_policy *p = NULL;
    fy_qualify_report *rep = NULL;
    fy_error *err = NULL;
    int r = fy_policy_new((uint32_t)prof, &p, &err);
    if (r >= 0)
        r = fy_qualify(p, 0, &rep, &err);
    fy_policy_free(p);
    if (r < 0) {
        report("test", err, r);
        return r == FY_E_UNSUPPORTED ? EXIT_UNSUPPORTED : EXIT_FAIL;
    }
    int passed = fy_qualify_passed(rep);
    if (json) {
        char *s = NULL;
        r = fy_qualify_to_json(rep, &s, &err);
        fy_qualify_report_free(rep);
        if (r < 0)
            return report("test", err, r), EXIT_FAIL;
        printf("%s\n", s);
        fy_free(s);
        return passed ? EXIT_OK : EXIT_FAIL;
    }
    int n = fy_qualify_probe_count(rep), failed = 0;
    printf("%-28s %-6s %s\n", "PROBE", "RESULT", "EVIDENCE");
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        int ok = fy_qualify_probe_passed(rep, i) == 1;
        failed += !ok;
        printf("%-28s %-6s %s\n", fy_qualify_probe_id(rep, i), ok ? "PASS" : "FAIL", fy_qualify_probe_summary(rep, i));
    }
    printf("\nqualification suite %d, profile %s: %d of %d probes passed%s\n", FY_QUALIFY_SUITE_VERSION, profile,
           n - failed, n, passed ? "" : " (see --json for the evidence)");
    fy_qualify_report_free(rep);
    return passed ? EXIT_OK : EXIT_FAIL;
}

int main(int argc, char **argv) {
    fill_std_fds();
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (is_help(cmd) || (strcmp(cmd, "help") == 0 && argc == 2)) {
        usage(stdout);
        return EXIT_OK;
    }
    /* COMMAND --help, help COMMAND: the usage on stdout, status 0, for
     * every command (run, wrap, action and job print their own). */
    static const char *const own_help[] = {"run", "wrap", "action", "job"};
    const char *asked = strcmp(cmd, "help") == 0 && argc == 3 ? argv[2] : argc == 3 && is_help(argv[2]) ? cmd : NULL;
    if (asked) {
        for (size_t k = 0; k < sizeof(own_help) / sizeof(own_help[0]); k++)
            if (strcmp(asked, own_help[k]) == 0 && asked != cmd) {
                char *help_argv[] = {(char *)"--help", NULL};
                return strcmp(asked, "run") == 0      ? cmd_run(1, help_argv)
                       : strcmp(asked, "wrap") == 0   ? cmd_wrap(1, help_argv)
                       : strcmp(asked, "action") == 0 ? cmd_action(1, help_argv)
                                                      : cmd_job(1, help_argv);
            }
        if (strcmp(asked, "policy") == 0)
            return policy_usage_to(stdout, "");
        if (strcmp(asked, "image") == 0 || strcmp(asked, "version") == 0 || strcmp(asked, "capabilities") == 0 ||
            strcmp(asked, "doctor") == 0 || strcmp(asked, "gc") == 0 || strcmp(asked, "test") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
    }
    /* help of a command there is not (or of two): a usage error, said. */
    if (strcmp(cmd, "help") == 0) {
        if (argc == 3)
            fprintf(stderr, "%s: help: no command \"%s\"\n", prog, argv[2]);
        else
            fprintf(stderr, "%s: help: one command at most\n", prog);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "policy") == 0 && argc == 4 && is_help(argv[3]) &&
        (strcmp(argv[2], "check") == 0 || strcmp(argv[2], "show") == 0))
        return policy_usage_to(stdout, argv[2]);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
        return argc == 2 ? cmd_version() : (usage(stderr), EXIT_USAGE);
    if (strcmp(cmd, "capabilities") == 0) {
        int json = 0;
        bool fresh = false, bad = false;
        for (int k = 2; k < argc; k++) {
            /* json: 1 for --json, 2 for --platform-properties; not both. */
            int want = strcmp(argv[k], "--json") == 0                  ? 1
                       : strcmp(argv[k], "--platform-properties") == 0 ? 2
                                                                        : 0;
            if (want) {
                bad |= json && json != want;
                json = want;
            } else if (strcmp(argv[k], "--fresh") == 0)
                fresh = true;
            else
                bad = true;
        }
        if (!bad)
            return cmd_capabilities(json, fresh);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "doctor") == 0)
        return argc == 2 ? cmd_doctor() : (usage(stderr), EXIT_USAGE);
    if (strcmp(cmd, "run") == 0)
        return out_relay_verdict(cmd_run(argc - 2, argv + 2));
    if (strcmp(cmd, "wrap") == 0)
        return out_relay_verdict(cmd_wrap(argc - 2, argv + 2));
    if (strcmp(cmd, "action") == 0)
        return cmd_action(argc - 2, argv + 2);
    if (strcmp(cmd, "test") == 0)
        return cmd_test(argc - 2, argv + 2);
    if (strcmp(cmd, "image") == 0)
        return cmd_image(argc - 2, argv + 2);
    if (strcmp(cmd, "job") == 0)
        return out_relay_verdict(cmd_job(argc - 2, argv + 2));
    if (strcmp(cmd, "gc") == 0 && argc == 3 && strcmp(argv[2], "--images") == 0) {
        char *gcargv[] = {(char *)"gc", NULL};
        return cmd_image(1, gcargv);
    }
    if (strcmp(cmd, "gc") == 0 && (argc == 2 || (argc == 4 && strcmp(argv[2], "--state-dir") == 0))) {
        uint64_t n = 0;
        fy_error *err = NULL;
        const char *dir = argc == 4 ? argv[3] : NULL;
        struct stat st;
        const char *why = NULL; /* (a typo must not read as "nothing to collect") */
        if (dir && dir[0] != '/')
            why = "must be absolute";
        else if (dir && stat(dir, &st) < 0)
            why = strerror(errno);
        else if (dir && !S_ISDIR(st.st_mode))
            why = "not a directory";
        if (why) {
            fprintf(stderr, "%s: gc: --state-dir %s: %s\n", prog, dir, why);
            return EXIT_USAGE;
        }
        int r = fy_gc(dir, 0, &n, &err);
        if (r < 0)
            return report("gc", err, r), EXIT_FAIL;
        /* (fy_gc counts an orphaned action's attempt directory as one too) */
        printf("destroyed %llu orphaned sandbox%s or action attempt%s\n", (unsigned long long)n, n == 1 ? "" : "es",
               n == 1 ? "" : "s");
        return EXIT_OK;
    }
    if (strcmp(cmd, "policy") == 0) {
        const char *sub = argc >= 3 ? argv[2] : "";
        if (strcmp(sub, "check") == 0 && argc == 4)
            return cmd_policy_check(argv[3]);
        if (strcmp(sub, "show") == 0 && argc >= 4)
            return cmd_policy_show(argc - 3, argv + 3);
        if (strcmp(sub, "check") == 0 || strcmp(sub, "show") == 0 || argc == 2)
            return policy_usage(sub);
    }
    fprintf(stderr, "%s: unknown command or arguments: %s\n", prog, cmd);
    usage(stderr);
    return EXIT_USAGE;
}
