/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The qualification suite's escape.* probes (QUALIFY_ESCAPE): a host file,
 * a listener on the host's 127.0.0.1 and the host's control sockets must be
 * out of reach, and each privileged operation denied, with the errno or the
 * violation that denied it. The runner and the shared helpers:
 * linux-qualify.c, linux-qualify.h. */
#include <jansson.h>

#include "internal.h"

#include "linux-qualify.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

/* errno names, and the C-locale messages shell tools print for them. The
 * numbers come from the sandbox, which runs on this kernel: same values. */
static const struct {
    int e;
    const char *name, *text;
} errnos[] = {
    {EPERM, "EPERM", "Operation not permitted"},
    {ENOENT, "ENOENT", "No such file or directory"},
    {ESRCH, "ESRCH", "No such process"},
    {EIO, "EIO", "Input/output error"},
    {ENXIO, "ENXIO", "No such device or address"},
    {EACCES, "EACCES", "Permission denied"},
    {EFAULT, "EFAULT", "Bad address"},
    {EBUSY, "EBUSY", "Device or resource busy"},
    {EEXIST, "EEXIST", "File exists"},
    {ENODEV, "ENODEV", "No such device"},
    {ENOTDIR, "ENOTDIR", "Not a directory"},
    {EINVAL, "EINVAL", "Invalid argument"},
    {ENOSPC, "ENOSPC", "No space left on device"},
    {EROFS, "EROFS", "Read-only file system"},
    {ENOSYS, "ENOSYS", "Function not implemented"},
    {ELOOP, "ELOOP", "Too many levels of symbolic links"},
    {EUSERS, "EUSERS", "Too many users"},
    {EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported"},
    {EAFNOSUPPORT, "EAFNOSUPPORT", "Address family not supported by protocol"},
    {ENETUNREACH, "ENETUNREACH", "Network is unreachable"},
    {ETIMEDOUT, "ETIMEDOUT", "Connection timed out"},
    {ECONNREFUSED, "ECONNREFUSED", "Connection refused"},
    {EHOSTUNREACH, "EHOSTUNREACH", "No route to host"},
};

static const char *errno_name(int e) {
    for (size_t i = 0; i < FY_ARRAY_SIZE(errnos); i++)
        if (errnos[i].e == e)
            return errnos[i].name;
    return NULL;
}

/* The errno a check line reports: "errno=N" from perl, else the message of
 * a shell tool. Returns 0 when it cannot tell. */
static int line_errno(const char *line) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    const char *p = memmem(line, n, "errno=", 6);
    if (p)
        return atoi(p + 6);
    for (size_t i = 0; i < FY_ARRAY_SIZE(errnos); i++)
        if (memmem(line, n, errnos[i].text, strlen(errnos[i].text)))
            return errnos[i].e;
    return 0;
}

static json_t *errno_json(int e) {
    const char *n = errno_name(e);
    if (n)
        return json_string(n);
    char buf[32];
    snprintf(buf, sizeof(buf), e ? "errno %d" : "unknown", e);
    return json_string(buf);
}

/* "PREFIX rc=N ...": N, or -1000 when the line is missing. */
static int line_rc(const char *line) {
    const char *p = line ? strstr(line, "rc=") : NULL;
    const char *e = line ? strchr(line, '\n') : NULL;
    if (!p || (e && p > e))
        return -1000;
    return atoi(p + 3);
}

/* ---- 3. escape and authority ---- */

static const char *const control_sockets[] = {
    "/run/systemd/private",       "/run/systemd/notify",          "/run/systemd/journal/stdout",
    "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket", "/run/docker.sock",
    "/var/run/docker.sock",       "/run/containerd/containerd.sock", "/run/crio/crio.sock",
    "/run/podman/podman.sock",    "/var/run/libvirt/libvirt-sock",   "/run/snapd.socket",
};

static int listen_tcp(uint16_t *ret_port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *ret_port = ntohs(sin.sin_port);
    return fd;
}

static int listen_unix(const char *path) {
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path))
        return -1;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 16) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    chmod(path, 0777); /* reachable by any uid, were it visible */
    return fd;
}

/* Connections a listener accepted (it never blocks): the sandbox's, which
 * sent the run's token (FYQ_TOKEN, in the workload's environment, which
 * no other user can read), and the others, counted apart in *others. The
 * listeners are the host's, reachable by every local user (that is the
 * point of the probe): one who read the port or the path in the probe's
 * command line (/proc/PID/cmdline is readable by all) and connected
 * turned the probe red, blaming the sandbox. What the workload reports
 * from inside stays the first evidence. */
static int drain_accepts(int fd, const char *token, int *others) {
    int n = 0, c;
    while (fd >= 0 && (c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
        char buf[64];
        ssize_t got = recv(c, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        close(c);
        if (got > 0 && (buf[got] = '\0', strncmp(buf, token, strlen(token)) == 0))
            n++;
        else
            (*others)++;
    }
    return n;
}

static bool write_file(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return false;
    bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    return ok && chmod(path, mode) == 0;
}

static void probe_reach(struct qctx *q) {
    char hostdir[320], secret[340], content[48], sockpath[320];
    snprintf(hostdir, sizeof(hostdir), "%s/host-only", q->dir);
    snprintf(secret, sizeof(secret), "%s/secret", hostdir);
    snprintf(content, sizeof(content), "fyq-secret-%016llx", (unsigned long long)qa_rnd64());
    snprintf(sockpath, sizeof(sockpath), "%s/control.sock", q->dir);
    char token[40];
    snprintf(token, sizeof(token), "fyq-%016llx", (unsigned long long)qa_rnd64());
    /* World-readable: only the sandbox's view of the filesystem may keep
     * the workload from reading it, not file permissions. */
    bool made = mkdir(hostdir, 0755) == 0 && chmod(hostdir, 0755) == 0 && write_file(secret, content, 0644);
    uint16_t port = 0;
    int tfd = listen_tcp(&port), ufd = listen_unix(sockpath);

    /* The sockets to try: the host's control sockets that exist (only
     * lstat-ed here, never connected to from the host), and our own. */
    json_t *probed = json_array(), *absent = json_array();
    struct strbuf socks;
    strbuf_init(&socks);
    for (size_t i = 0; i < FY_ARRAY_SIZE(control_sockets); i++) {
        struct stat st;
        if (lstat(control_sockets[i], &st) == 0 && S_ISSOCK(st.st_mode)) {
            strbuf_printf(&socks, " %s", control_sockets[i]);
            json_array_append_new(probed, json_pack("{s:s,s:s}", "path", control_sockets[i], "host", "socket"));
        } else {
            json_array_append_new(absent, json_string(control_sockets[i]));
        }
    }
    if (ufd >= 0) {
        strbuf_printf(&socks, " %s", sockpath);
        json_array_append_new(probed,
                              json_pack("{s:s,s:s}", "path", sockpath, "host", "socket listening, made by the probe"));
    }

    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb,
                  "p=%s\n"
                  "r=$(cat \"$p\" 2>&1); echo \"host-path rc=$? $r\"\n"
                  "r=$(cat \"/proc/1/root$p\" 2>&1); echo \"host-path-proc1 rc=$? $r\"\n"
                  "if command -v perl >/dev/null 2>&1; then\n"
                  "  perl -MSocket -e 'socket(S,PF_INET,SOCK_STREAM,0) or die \"socket: $!\"; "
                  "if (connect(S,pack_sockaddr_in($ARGV[0],inet_aton(\"127.0.0.1\")))) {syswrite(S,$ENV{FYQ_TOKEN}); print \"tcp rc=0\\n\"} "
                  "else {print \"tcp rc=1 errno=\".($!+0).\"\\n\"}' %u\n"
                  "  for s in%s; do perl -MSocket -e 'socket(S,PF_UNIX,SOCK_STREAM,0) or die \"socket: $!\"; "
                  "if (connect(S,pack_sockaddr_un($ARGV[0]))) {syswrite(S,$ENV{FYQ_TOKEN}); print \"unix $ARGV[0] rc=0\\n\"} "
                  "else {print \"unix $ARGV[0] rc=1 errno=\".($!+0).\"\\n\"}' \"$s\"; done\n"
                  "else\n"
                  "  r=$(bash -c 'exec 3<>/dev/tcp/127.0.0.1/%u && printf %%s \"$FYQ_TOKEN\" >&3' 2>&1); echo \"tcp rc=$? $r\"\n"
                  "  for s in%s; do r=$(ls -d \"$s\" 2>&1); echo \"unix $s rc=$? $r\"; done\n"
                  "fi\n"
                  "echo reach-done\n",
                  secret, (unsigned)port, socks.buf ? socks.buf : "", (unsigned)port, socks.buf ? socks.buf : "");
    strbuf_free(&socks);
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, NULL, &a);
    if (p && fy_policy_set_env(p, "FYQ_TOKEN", token, NULL) < 0)
        made = false;
    if (sb.oom || !made || tfd < 0) {
        fy_policy_free(p);
        a.error = util_strdup(!made ? "could not create the host-only file" : tfd < 0 ? "could not listen on 127.0.0.1"
                                                                                  : "out of memory");
    } else {
        qa_run_script(p, sb.buf, &a);
    }
    strbuf_free(&sb);
    const char *out = a.out ? a.out : "";
    bool ran = qa_find_line(out, "reach-done") != NULL;
    bool leaked_secret = strstr(out, content) != NULL;

    /* escape.host-path */
    const char *l1 = qa_find_line(out, "host-path rc="), *l2 = qa_find_line(out, "host-path-proc1 rc=");
    json_t *ev = json_object();
    json_object_set_new(ev, "path", json_string(secret));
    json_object_set_new(ev, "host_mode", json_string("0644 in a 0755 directory"));
    json_object_set_new(ev, "attempt", qa_json(&a));
    int e1 = l1 ? line_errno(l1) : 0, e2 = l2 ? line_errno(l2) : 0;
    json_object_set_new(ev, "inside", l1 && line_rc(l1) != 0 ? errno_json(e1) : json_string(l1 ? "read" : "not run"));
    json_object_set_new(ev, "via_proc_1_root",
                        l2 && line_rc(l2) != 0 ? errno_json(e2) : json_string(l2 ? "read" : "not run"));
    json_object_set_new(ev, "content_read", json_boolean(leaked_secret));
    bool ok = ran && l1 && l2 && line_rc(l1) != 0 && line_rc(l2) != 0 && !leaked_secret;
    if (ok)
        qa_add_probe(q, "escape.host-path", "A host file outside the declared paths cannot be read", true, ev,
                     "cat %s: %s; via /proc/1/root: %s", secret, errno_name(e1) ? errno_name(e1) : "denied",
                     errno_name(e2) ? errno_name(e2) : "denied");
    else
        qa_add_probe(q, "escape.host-path", "A host file outside the declared paths cannot be read", false, ev, "%s",
                     leaked_secret ? "the workload read the host-only file" : "the check did not run to the end");

    /* escape.loopback-listener */
    const char *lt = qa_find_line(out, "tcp rc=");
    int others = 0, accepted = drain_accepts(tfd, token, &others);
    int et = lt ? line_errno(lt) : 0;
    ev = json_object();
    json_object_set_new(ev, "listener", json_sprintf("127.0.0.1:%u (host, made by the probe)", (unsigned)port));
    json_object_set_new(ev, "inside", !lt ? json_string("not run") : line_rc(lt) == 0 ? json_string("connected")
                                                                                     : errno_json(et));
    json_object_set_new(ev, "accepted", json_integer(accepted));
    json_object_set_new(ev, "accepted_from_other_users", json_integer(others));
    ok = ran && lt && line_rc(lt) != 0 && accepted == 0;
    qa_add_probe(q, "escape.loopback-listener", "A listener on the host's 127.0.0.1 cannot be reached", ok, ev,
                 "connect 127.0.0.1:%u: %s; the listener accepted %d", (unsigned)port,
                 !lt ? "not run" : line_rc(lt) == 0 ? "connected" : errno_name(et) ? errno_name(et) : "failed",
                 accepted);

    /* escape.control-sockets */
    size_t i;
    json_t *v;
    ok = ran && json_array_size(probed) > 0;
    json_array_foreach(probed, i, v) {
        char pfx[360];
        snprintf(pfx, sizeof(pfx), "unix %s rc=", json_string_value(json_object_get(v, "path")));
        const char *l = qa_find_line(out, pfx);
        int e = l ? line_errno(l) : 0;
        json_object_set_new(v, "inside", !l ? json_string("not run") : line_rc(l) == 0 ? json_string("connected")
                                                                                         : errno_json(e));
        if (!l || line_rc(l) == 0 || e != ENOENT)
            ok = false;
    }
    int uothers = 0, uaccepted = drain_accepts(ufd, token, &uothers);
    ev = json_object();
    json_object_set_new(ev, "probed", probed);
    json_object_set_new(ev, "absent_on_host", absent);
    json_object_set_new(ev, "accepted_by_probe_socket", json_integer(uaccepted));
    json_object_set_new(ev, "accepted_from_other_users", json_integer(uothers));
    ok = ok && uaccepted == 0;
    qa_add_probe(q, "escape.control-sockets", "Host control sockets do not exist inside", ok, ev,
                 ok ? "%zu socket(s) tried from inside (%zu of the host's exist): all ENOENT"
                    : "%zu socket(s) tried from inside (%zu of the host's exist): some reachable or not ENOENT",
                 json_array_size(json_object_get(ev, "probed")),
                 json_array_size(json_object_get(ev, "probed")) - (ufd >= 0 ? 1 : 0));
    qa_free(&a);
    if (tfd >= 0)
        close(tfd);
    if (ufd >= 0)
        close(ufd);
}

/* One privileged operation, alone in an attempt (a violation ends it). The
 * script prints "op rc=N ..." unless the attempt is ended first. */
static void probe_privileged(struct qctx *q, const char *id, const char *name, const char *what, const char *script,
                             const int *denials) {
    struct qa_attempt a;
    fy_policy *p = qa_policy(q, NULL, &a);
    qa_run_script(p, script, &a);
    const char *out = a.out ? a.out : "";
    json_t *ev = json_object();
    json_object_set_new(ev, "operation", json_string(what));
    json_object_set_new(ev, "attempt", qa_json(&a));
    const char *l = qa_find_line(out, "op ");
    bool ok = false;
    if (a.outcome == FY_OUTCOME_SANDBOX_VIOLATION) {
        const char *d = fy_result_detail(a.res);
        json_object_set_new(ev, "denial", json_sprintf("violation: %s", d ? d : "unnamed"));
        ok = true;
        qa_add_probe(q, id, name, true, ev, "%s: violation: %s", what, d ? d : "unnamed");
    } else if (l && strncmp(l, "op untested", 11) == 0) {
        char *s = qa_line_dup(l + 3);
        json_object_set_new(ev, "denial", json_string(s ? s : "untested"));
        qa_add_probe(q, id, name, false, ev, "%s: %s", what, s ? s : "untested");
        free(s);
    } else if (!l || line_rc(l) == -1000) {
        json_object_set_new(ev, "denial", json_null());
        json_object_set_new(ev, "output", json_stringn(out, strnlen(out, 512)));
        qa_add_probe(q, id, name, false, ev, "%s: no result (%s)", what,
                     a.error ? a.error : a.outcome ? fy_outcome_name((uint32_t)a.outcome) : "did not run");
    } else if (line_rc(l) == 0) {
        json_object_set_new(ev, "denial", json_string("none: the operation succeeded"));
        qa_add_probe(q, id, name, false, ev, "%s: succeeded", what);
    } else {
        int e = line_errno(l);
        for (size_t i = 0; denials[i]; i++)
            ok = ok || e == denials[i];
        json_object_set_new(ev, "denial", errno_json(e));
        if (ok)
            qa_add_probe(q, id, name, true, ev, "%s: %s", what, errno_name(e));
        else
            qa_add_probe(q, id, name, false, ev, "%s: not denied, the kernel processed it (%s)", what,
                         errno_name(e) ? errno_name(e) : "unknown error");
    }
    qa_free(&a);
}

#define NEED_PERL                                                                                 \
    "command -v perl >/dev/null 2>&1 || { echo 'op untested: perl is not available in the sandbox'; exit 0; }\n"
/* String arguments go through variables: perl refuses to pass literals. */
#define PERL_SYSCALL(pre, args) "perl -e '" pre "$r = syscall(" args "); print \"op rc=$r errno=\".($!+0).\"\\n\"'"

static void probe_escape_privileged(struct qctx *q) {
    static const int eperm[] = {EPERM, EACCES, ENOSYS, 0};
    char script[1024];
    /* A mount onto a path that does not exist: harmless even if allowed. */
    snprintf(script, sizeof(script),
             NEED_PERL PERL_SYSCALL("my @s = (\"none\", \"/fyq-absent-%s\", \"tmpfs\"); ",
                                    "%d, $s[0], $s[1], $s[2], 0, 0") "\n",
             q->token, (int)SYS_mount);
    probe_privileged(q, "escape.mount", "Mounting is denied", "mount(tmpfs)", script, eperm);
    snprintf(script, sizeof(script), "r=$(mknod /tmp/fyq-node-%s c 1 3 2>&1); echo \"op rc=$? $r\"\n", q->token);
    probe_privileged(q, "escape.mknod", "Creating a device node is denied", "mknod(c 1 3)", script, eperm);
    /* PTRACE_SEIZE: does not stop the tracee even where it is allowed. */
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("", "%d, 0x4206, 1, 0, 0") "\n", (int)SYS_ptrace);
    probe_privileged(q, "escape.ptrace", "Tracing pid 1 is denied", "ptrace(PTRACE_SEIZE, 1)", script, eperm);
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("", "%d, 0x10000000") "\n", (int)SYS_unshare);
    probe_privileged(q, "escape.userns", "Creating a user namespace is denied", "unshare(CLONE_NEWUSER)", script,
                     eperm);
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("my $s = \"\"; ", "%d, 0, 0, $s") "\n",
             (int)SYS_init_module);
    probe_privileged(q, "escape.module", "Loading a kernel module is denied", "init_module(NULL, 0)", script, eperm);
    /* An invalid flag: EINVAL before anything happens where it is allowed. */
    snprintf(script, sizeof(script), NEED_PERL PERL_SYSCALL("", "%d, 0, 0, 0, 0x8000") "\n", (int)SYS_kexec_load);
    probe_privileged(q, "escape.kexec", "Loading a new kernel is denied", "kexec_load(0 segments)", script, eperm);
    char node[128];
    struct stat st;
    snprintf(node, sizeof(node), "/tmp/fyq-node-%s", q->token);
    if (lstat(node, &st) == 0 && !S_ISDIR(st.st_mode))
        unlink(node); /* ours, should it ever have been created on the host */
}

/* The escape.* probes: reach (host path, loopback listener, control
 * sockets), then the privileged operations one by one. */
void qa_group_escape(struct qctx *q) {
    probe_reach(q);
    probe_escape_privileged(q);
}
