/* fy-bench: the peer benchmark. Not a test: it prints medians and ratios
 * measured side by side in one run (see README "Performance").
 *
 *   lifecycle   release-profile /bin/true: fy_prepare+fy_start+wait+free
 *   start       the same from one prepared plan (fy_start+wait+free)
 *   fork+exec   posix_spawn + waitpid of /usr/bin/true
 *   bwrap       bwrap --unshare-all --die-with-parent --new-session
 *               --ro-bind /usr /usr (+ the /lib, /lib64, /bin symlinks of a
 *               merged-/usr system) --proc /proc --dev /dev --tmpfs /tmp
 *               --cap-drop ALL /usr/bin/true
 *   runc        runc run of an OCI bundle whose rootfs is busybox-static
 *               (runc's default spec, terminal off, cgroupsPath relative to
 *               our own cgroups so nothing is created outside them)
 *   throughput  1,000 release-profile attempts at concurrency 4 vs bwrap
 *   file count  lifecycle with a 25,000-file source tree vs a 1-file tree
 *   capture     1 GiB of stdout: FY_STDIO_FILE (library spool) and
 *               FY_STDIO_PIPE vs a plain pipe drained by the host into a
 *               file (all three write the same file system)
 *   memory      host RSS and PSS per concurrently running sandbox, N sleeping
 *   host size   lifecycle in a host with 1 GiB resident vs the same host small
 *               (an embedding runner is rarely small)
 *   idle        lifecycle and bwrap each after 50 ms of idleness (a runner
 *               that is not busy: nothing warm)
 *   shells      the lifecycle in a pre-started shell (fy_shells_new), refilled
 *               between attempts, and refilled while the attempt runs; the
 *               same after 50 ms of idleness
 *   CLI         forgeyard run --profile release -- /usr/bin/true as whole
 *               processes, with the saved probe and probing each run, vs
 *               bwrap and the library lifecycle
 *   action      (also alone: fy-bench --action [RUNS]) a 10,000-file input
 *               root and 100 declared outputs vs the
 *               same command with binds; collecting them vs sha256sum
 *   container   (also alone: fy-bench --container [RUNS]) an OCI image of
 *               the runc bundle's rootfs, run by digest from the layer
 *               cache (/bin/true, release profile) vs runc run of the
 *               bundle; first unpack of a 100 MiB layer vs tar -x of it
 *               (also alone: fy-bench --unpack [PAIRS], default 9 pairs)
 *   restricted  (also alone: fy-bench --restricted [RUNS], root) network
 *               mode restricted against deny, interleaved, with the CPU of
 *               this process and its reaped children per attempt and the
 *               load average; then the same as uid 65534 (the rootless
 *               pasta path, in a namespace of ours), and the peers
 *   job networks (alone: fy-bench --jobnet [RUNS [HELPER]], root) a job of two
 *               deny members /bin/true made by root against the same made by
 *               uid 65534 through a privileged helper the run starts, each
 *               against the same two attempts without a job network,
 *               interleaved
 *   fetch-only  (also alone: fy-bench --fetch [RUNS]) 1 GiB over HTTP from
 *               a listener of its own on 127.0.0.1: curl in a fetch-only
 *               sandbox through the proxy (whole attempt) vs curl on the
 *               host straight to it, and through a bare splice relay (the
 *               floor of any relay: two connections, no sandbox); then (root)
 *               the same from the fake internet: the server in a namespace
 *               of ours behind a veth from another (the proxy's uplink)
 *   tput        (alone: fy-bench --tput [RUNS] [ROUNDS]) issue 18's rows only:
 *               RUNS interleaved lifecycles (cold, shell, bwrap; 0: none), then
 *               ROUNDS throughput alternations with load, CPU and busy CPUs;
 *               FY_BENCH_PEER=forgeyard|bwrap runs one peer's rounds only
 *   vm          (also alone: fy-bench --vm [RUNS]) /bin/true in vm-qemu:
 *               restored from a template (p50, p99, CPU), cold boots to the
 *               agent's hello vs a bare qemu -M microvm boot of the same
 *               kernel and initramfs, the namespace lifecycle and
 *               runsc --network=none do /bin/true
 *   vm-restricted (alone: fy-bench --vm-restricted [RUNS], root) /bin/true
 *               in vm-qemu under restricted (uplink: a namespace of ours)
 *               restored from its template vs booted cold, with a deny
 *               attempt from its template, interleaved in rotating order
 *
 * Everything it creates lives in one mkdtemp directory, removed at exit.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <forgeyard/sandbox.h>

extern char **environ;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_u64);
    return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e6;
}

static int spawn_wait(char *const argv[]) {
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return -1;
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static fy_policy *release_policy(void) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    if (fy_policy_new(FY_PROFILE_RELEASE, &p, &e) < 0) {
        fprintf(stderr, "policy: %s\n", fy_error_message(e));
        exit(1);
    }
    return p;
}

/* One attempt; with shells, in a pre-started shell of the set, which is
 * refilled while the attempt runs when refill_now (a busy runner agent: the
 * refill is part of what is timed), else by the caller afterwards (a runner
 * that refills between attempts). */
static int run_one_in(fy_prepared *pr, fy_shells *shells, bool refill_now) {
    fy_handle *h = NULL;
    fy_result *res = NULL;
    fy_error *e = NULL;
    if (fy_start_shell(pr, shells, &h, &e) < 0 || (shells && refill_now && fy_shells_fill(shells, &e) < 0) ||
        fy_handle_wait(h, FY_UNLIMITED, &res, &e) != 1) {
        fprintf(stderr, "run: %s\n", fy_error_message(e));
        exit(1);
    }
    int ok = fy_result_outcome(res) == FY_OUTCOME_SUCCEEDED && fy_result_prestarted(res) == (shells != NULL);
    if (!ok)
        fprintf(stderr, "fy-bench: attempt %s: exit %d, %s\n", fy_outcome_name((uint32_t)fy_result_outcome(res)),
                fy_result_exit_code(res), fy_result_detail(res) ? fy_result_detail(res) : "");
    fy_result_free(res);
    fy_handle_free(h);
    return ok ? 0 : -1;
}

static int run_one(fy_prepared *pr) { return run_one_in(pr, NULL, false); }


static long read_kb(const char *path, const char *key) {
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[256];
    long v = 0;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0) {
            v = strtol(line + kl, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static char workdir[] = "/tmp/fy-bench-XXXXXX";

static void die(const char *what, fy_error *e) {
    fprintf(stderr, "fy-bench: %s: %s\n", what, e ? fy_error_message(e) : strerror(errno));
    exit(1);
}

/* ---- runc: an OCI bundle with a busybox-static rootfs ---- */

static int copy_file(const char *from, const char *to, mode_t mode) {
    int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    char buf[65536];
    ssize_t k = 0;
    while (in >= 0 && out >= 0 && (k = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)k) != k) {
            k = -1;
            break;
        }
    int ok = in >= 0 && out >= 0 && k == 0;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return ok ? 0 : -1;
}

static int replace_once(char **buf, const char *from, const char *to) {
    char *at = strstr(*buf, from);
    if (!at)
        return -1;
    size_t head = (size_t)(at - *buf), fl = strlen(from), tl = strlen(to), total = strlen(*buf);
    char *n = malloc(total - fl + tl + 1);
    if (!n)
        return -1;
    memcpy(n, *buf, head);
    memcpy(n + head, to, tl);
    memcpy(n + head + tl, at + fl, total - head - fl + 1);
    free(*buf);
    *buf = n;
    return 0;
}

/* Returns 0 and fills bundle/state, or -1 when runc or busybox is missing. */
static int runc_setup(const char *runc, char *bundle, char *state, size_t n) {
    char path[512], *cfg = NULL;
    snprintf(bundle, n, "%s/bundle", workdir);
    snprintf(state, n, "%s/runc-state", workdir);
    snprintf(path, sizeof(path), "%s/rootfs", bundle);
    if (mkdir(bundle, 0700) < 0 || mkdir(path, 0755) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/rootfs/bin", bundle);
    if (mkdir(path, 0755) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/rootfs/bin/busybox", bundle);
    if (copy_file("/bin/busybox", path, 0755) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/rootfs/bin/true", bundle);
    if (symlink("busybox", path) < 0)
        return -1;
    char *spec_argv[] = {(char *)runc, "spec", "-b", bundle, NULL};
    if (spawn_wait(spec_argv) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/config.json", bundle);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    cfg = calloc(1, 1 << 16);
    size_t len = cfg ? fread(cfg, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (!cfg || len == 0)
        return -1;
    /* Not interactive; run /bin/true; cgroups relative to our own (a
     * relative cgroupsPath is created under the caller's cgroup in each
     * hierarchy, never next to it). */
    char cg[128];
    snprintf(cg, sizeof(cg), "\"linux\": {\n\t\t\"cgroupsPath\": \"fy-bench-runc-%d\",", (int)getpid());
    if (replace_once(&cfg, "\"terminal\": true", "\"terminal\": false") < 0 ||
        replace_once(&cfg, "\"sh\"\n", "\"/bin/true\"\n") < 0 || replace_once(&cfg, "\"linux\": {", cg) < 0) {
        free(cfg);
        return -1;
    }
    f = fopen(path, "we");
    int ok = f && fputs(cfg, f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(cfg);
    return ok ? 0 : -1;
}

/* ---- throughput: attempts per second at a fixed concurrency ---- */

struct tp_filler {
    fy_shells *shells;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int wanted;          /* claims since the last fill */
    bool stop;
};

struct tp {
    int count, failed, prestarted;
    char **bwrap_argv;        /* NULL: forgeyard */
    struct tp_filler *filler; /* forgeyard in pre-started shells, refilled by a thread of the runner's */
};

static void *tp_thread(void *arg) {
    struct tp *t = arg;
    const char *argv_true[] = {"/bin/true", NULL};
    fy_policy *p = t->bwrap_argv ? NULL : release_policy();
    for (int i = 0; i < t->count; i++) {
        if (t->bwrap_argv) {
            if (spawn_wait(t->bwrap_argv) != 0)
                t->failed++;
            continue;
        }
        fy_prepared *pr = NULL;
        if (fy_prepare(p, NULL, argv_true, &pr, NULL) < 0) {
            t->failed++;
            continue;
        }
        if (!t->filler) {
            if (run_one(pr) < 0)
                t->failed++;
            fy_prepared_free(pr);
            continue;
        }
        /* a claim (a cold start when no shell is ready), then the filler is told */
        fy_handle *h = NULL;
        fy_result *res = NULL;
        if (fy_start_shell(pr, t->filler->shells, &h, NULL) < 0 || fy_handle_wait(h, FY_UNLIMITED, &res, NULL) != 1 ||
            fy_result_outcome(res) != FY_OUTCOME_SUCCEEDED)
            t->failed++;
        t->prestarted += res && fy_result_prestarted(res);
        fy_result_free(res);
        fy_handle_free(h);
        fy_prepared_free(pr);
        pthread_mutex_lock(&t->filler->lock);
        t->filler->wanted++;
        pthread_cond_signal(&t->filler->cond);
        pthread_mutex_unlock(&t->filler->lock);
    }
    fy_policy_free(p);
    return NULL;
}

static void *tp_fill_thread(void *arg) {
    struct tp_filler *f = arg;
    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        while (!f->stop && !f->wanted)
            pthread_cond_wait(&f->cond, &f->lock);
        f->wanted = 0;
        pthread_mutex_unlock(&f->lock);
        (void)fy_shells_fill(f->shells, NULL);
        pthread_mutex_lock(&f->lock);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* Attempts per second; with shells (forgeyard only), each attempt claims a
 * pre-started shell and one more thread of the runner keeps the set full
 * (*prestarted: how many attempts had one). */
static double throughput_in(int total, int conc, char **bwrap_argv, fy_shells *shells, int *prestarted) {
    pthread_t th[16], fill_th;
    struct tp t[16];
    struct tp_filler filler = {.shells = shells, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    if (shells && (fy_shells_fill(shells, NULL) < 0 || pthread_create(&fill_th, NULL, tp_fill_thread, &filler) != 0))
        die("shells", NULL);
    uint64_t t0 = now_ns();
    for (int i = 0; i < conc; i++) {
        t[i] = (struct tp){total / conc + (i < total % conc), 0, 0, bwrap_argv, shells ? &filler : NULL};
        if (pthread_create(&th[i], NULL, tp_thread, &t[i]) != 0)
            die("pthread_create", NULL);
    }
    int failed = 0, pre = 0;
    for (int i = 0; i < conc; i++) {
        pthread_join(th[i], NULL);
        failed += t[i].failed;
        pre += t[i].prestarted;
    }
    double rate = total / ((now_ns() - t0) / 1e9);
    if (shells) {
        pthread_mutex_lock(&filler.lock);
        filler.stop = true;
        pthread_cond_signal(&filler.cond);
        pthread_mutex_unlock(&filler.lock);
        pthread_join(fill_th, NULL);
    }
    if (prestarted)
        *prestarted = pre;
    if (failed)
        fprintf(stderr, "fy-bench: %d of %d attempts failed\n", failed, total);
    return rate;
}

static double throughput(int total, int conc, char **bwrap_argv) {
    return throughput_in(total, conc, bwrap_argv, NULL, NULL);
}

/* ---- file count: a source tree of N files ---- */

static void make_tree(const char *root, int files) {
    char path[512];
    if (mkdir(root, 0755) < 0)
        die(root, NULL);
    for (int d = 0; d * 100 < files; d++) {
        snprintf(path, sizeof(path), "%s/d%03d", root, d);
        if (mkdir(path, 0755) < 0)
            die(path, NULL);
        for (int i = d * 100; i < files && i < (d + 1) * 100; i++) {
            snprintf(path, sizeof(path), "%s/d%03d/f%05d.c", root, d, i);
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 || write(fd, "int x;\n", 7) != 7)
                die(path, NULL);
            close(fd);
        }
    }
}

static fy_policy *source_policy(const char *src) {
    fy_policy *p = release_policy();
    fy_error *e = NULL;
    if (fy_policy_set_source(p, src, 0, &e) < 0)
        die("fy_policy_set_source", e);
    return p;
}

/* prepare + start in a shell + wait + free; the refill as run_one_in. */
static uint64_t shell_lifecycle_ns(fy_policy *p, const char *const *argv, fy_shells *shells, bool refill_now) {
    uint64_t t0 = now_ns();
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    if (fy_prepare(p, NULL, argv, &pr, &e) < 0)
        die("fy_prepare", e);
    if (run_one_in(pr, shells, refill_now) < 0)
        exit(1);
    fy_prepared_free(pr);
    uint64_t t = now_ns() - t0;
    if (!refill_now && fy_shells_fill(shells, &e) < 0)
        die("fy_shells_fill", e);
    return t;
}

static uint64_t lifecycle_ns(fy_policy *p, const char *const *argv) {
    uint64_t t0 = now_ns();
    fy_prepared *pr = NULL;
    fy_error *e = NULL;
    if (fy_prepare(p, NULL, argv, &pr, &e) < 0)
        die("fy_prepare", e);
    if (run_one(pr) < 0)
        exit(1);
    fy_prepared_free(pr);
    return now_ns() - t0;
}

/* ---- capture: 1 GiB of stdout ---- */

#define CAPTURE_BYTES "1073741824"

static uint64_t drain(int from, const char *to) {
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0)
        die(to, NULL);
    static char buf[1 << 16];
    uint64_t total = 0;
    ssize_t k;
    while ((k = read(from, buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR)) {
        if (k < 0)
            continue;
        if (write(out, buf, (size_t)k) != k)
            die("write", NULL);
        total += (uint64_t)k;
    }
    close(out);
    return total;
}

static uint64_t capture_plain(const char *file) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        die("pipe", NULL);
    char *argv[] = {"/usr/bin/head", "-c", CAPTURE_BYTES, "/dev/zero", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    uint64_t t0 = now_ns();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
        die("posix_spawn", NULL);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    uint64_t got = drain(fds[0], file);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    uint64_t t = now_ns() - t0;
    unlink(file);
    if (got != 1073741824u)
        die("plain pipe: short read", NULL);
    return t;
}

static uint64_t capture_fy(uint32_t mode, const char *file) {
    const char *argv[] = {"/usr/bin/head", "-c", CAPTURE_BYTES, "/dev/zero", NULL};
    fy_policy *p = release_policy();
    fy_error *e = NULL;
    if (fy_policy_set_limit(p, FY_LIMIT_OUTPUT, 2ull << 30, &e) < 0 ||
        fy_policy_set_stdio(p, FY_STDOUT, mode, -1, mode == FY_STDIO_FILE ? file : NULL, &e) < 0)
        die("capture policy", e);
    uint64_t t0 = now_ns();
    fy_prepared *pr = NULL;
    fy_handle *h = NULL;
    fy_result *res = NULL;
    if (fy_prepare(p, NULL, argv, &pr, &e) < 0 || fy_start(pr, &h, &e) < 0)
        die("capture start", e);
    if (mode == FY_STDIO_PIPE && drain(fy_handle_get_stdio_fd(h, FY_STDOUT), file) != 1073741824u)
        die("capture: short pipe read", NULL);
    if (fy_handle_wait(h, FY_UNLIMITED, &res, &e) != 1)
        die("capture wait", e);
    uint64_t t = now_ns() - t0;
    struct stat sb;
    if (fy_result_outcome(res) != FY_OUTCOME_SUCCEEDED || fy_result_output_truncated(res) ||
        stat(file, &sb) < 0 || sb.st_size != 1073741824)
        die("capture: the sandbox did not deliver 1 GiB", NULL);
    unlink(file);
    fy_result_free(res);
    fy_handle_free(h);
    fy_prepared_free(pr);
    fy_policy_free(p);
    return t;
}

static void cleanup_dirs(void) {
    char *rm1[] = {"/bin/rm", "-rf", "--one-file-system", workdir, NULL};
    spawn_wait(rm1);
}


/* ---- container: an OCI image of the runc bundle's rootfs ---- */

static int file_digest(const char *file, char out[72]) {
    char cmd[600], hex[80] = "";
    snprintf(cmd, sizeof(cmd), "sha256sum '%s'", file);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%64s", hex) == 1 && strlen(hex) == 64;
    if (pclose(f) != 0 || !ok)
        return -1;
    snprintf(out, 72, "sha256:%s", hex);
    return 0;
}

/* Moves file (or writes text) into layout's blobs; its digest into d, size into sz. */
static int add_blob(const char *layout, const char *file, const char *text, char d[72], long long *sz) {
    char tmp[600], dst[700];
    snprintf(tmp, sizeof(tmp), "%s/blob.tmp", layout);
    if (text) {
        FILE *f = fopen(tmp, "we");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
            return -1;
        file = tmp;
    }
    struct stat st;
    if (stat(file, &st) < 0 || file_digest(file, d) < 0)
        return -1;
    *sz = (long long)st.st_size;
    snprintf(dst, sizeof(dst), "%s/blobs/sha256/%s", layout, d + 7);
    return rename(file, dst);
}

/* An image layout at layout with one uncompressed layer (the tar file,
 * moved in) whose command is /bin/true; its reference into ref. */
static int make_layout(const char *layout, const char *tar, char *ref, size_t n) {
    char p[600], ld[72], cd[72], md[72], json[2048];
    long long lsz, csz, msz;
    snprintf(p, sizeof(p), "%s/blobs/sha256", layout);
    if (mkdir(layout, 0755) < 0 || snprintf(p, sizeof(p), "%s/blobs", layout) < 0 || mkdir(p, 0755) < 0 ||
        snprintf(p, sizeof(p), "%s/blobs/sha256", layout) < 0 || mkdir(p, 0755) < 0)
        return -1;
    if (add_blob(layout, tar, NULL, ld, &lsz) < 0)
        return -1;
#if defined(__aarch64__)
    const char *arch = "arm64";
#else
    const char *arch = "amd64";
#endif
    snprintf(json, sizeof(json), "{\"architecture\":\"%s\",\"os\":\"linux\",\"config\":{\"Cmd\":[\"/bin/true\"]},"
             "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}", arch, ld);
    if (add_blob(layout, NULL, json, cd, &csz) < 0)
        return -1;
    snprintf(json, sizeof(json), "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
             "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%lld},"
             "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\",\"size\":%lld}]}",
             cd, csz, ld, lsz);
    if (add_blob(layout, NULL, json, md, &msz) < 0)
        return -1;
    snprintf(p, sizeof(p), "%s/index.json", layout);
    FILE *f = fopen(p, "we");
    if (!f)
        return -1;
    fprintf(f, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
               "\"digest\":\"%s\",\"size\":%lld}]}", md, msz);
    if (fclose(f) != 0)
        return -1;
    snprintf(ref, n, "oci:%s@%s", layout, md);
    return 0;
}

/* fmt is one of this file's constants with two %s. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int sh(const char *fmt, const char *a, const char *b) {
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), fmt, a, b);
    return system(cmd) == 0 ? 0 : -1;
}
#pragma GCC diagnostic pop

/* First unpack of a 100 MiB layer (100 files of 1 MiB, uncompressed tar)
 * against tar -x of the same tar, in pairs whose order alternates (the
 * page cache's writeback of one run must not land on the other's clock
 * always on the same side); before each run the work directory is
 * synced. The unpack verifies both digests and makes the layer durable
 * before it is trusted, so tar -x + sync -f is shown too. Ratios are
 * medians of the per-pair ratios (the host's drift cancels in a pair). */
enum { UNPACK_RUNS = 9 };

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_d(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* CPU time (ns) of this process's threads and of its reaped children: on
 * a host whose other work takes the CPUs, what a step costs, whatever it
 * waited for. */
static uint64_t cpu_ns(void) {
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    return ((uint64_t)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec)) * 1000000000u +
           (uint64_t)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec) * 1000u;
}

static void bench_unpack(int runs) {
    char big[300], bigtar[300], layout2[300], cache2[300], out[300], ref[700];
    fy_error *e = NULL;
    snprintf(big, sizeof(big), "%s/big", workdir);
    snprintf(bigtar, sizeof(bigtar), "%s/big.tar", workdir);
    snprintf(layout2, sizeof(layout2), "%s/img-big", workdir);
    snprintf(cache2, sizeof(cache2), "%s/img-big-cache", workdir);
    snprintf(out, sizeof(out), "%s/big-out", workdir);
    if (sh("mkdir -p '%s' && for i in $(seq 1 100); do head -c 1048576 /dev/urandom > '%s'/f$i; done", big, big) < 0 ||
        sh("tar --numeric-owner -C '%s' -cf '%s' .", big, bigtar) < 0 || sh("cp '%s' '%s.keep'", bigtar, bigtar) < 0 ||
        make_layout(layout2, bigtar, ref, sizeof(ref)) < 0)
        die("building the 100 MiB image", NULL);
    char keep[320];
    snprintf(keep, sizeof(keep), "%s.keep", bigtar);
    uint64_t *t_fy = calloc((size_t)runs, 8), *t_tar = calloc((size_t)runs, 8), *t_tar_sync = calloc((size_t)runs, 8),
             *t_sha = calloc((size_t)runs, 8), *c_fy = calloc((size_t)runs, 8), *c_tar = calloc((size_t)runs, 8);
    double *r_tar = calloc((size_t)runs, sizeof(double)), *r_sync = calloc((size_t)runs, sizeof(double));
    char *sha_argv[] = {"/usr/bin/sha256sum", keep, NULL};
    if (spawn_wait(sha_argv) != 0) /* both blobs in the page cache, as a layer just pulled would be */
        die("sha256sum", NULL);
    for (int i = 0; i < runs; i++) {
        for (int side = 0; side < 2; side++) {
            if (sh("rm -rf '%s' '%s'", cache2, out) < 0 || sh("sync -f '%s' %s", workdir, "") < 0)
                die("rm", NULL);
            if ((side == 0) == (i % 2 == 0)) {
                uint64_t c0 = cpu_ns(), t0 = now_ns();
                if (fy_image_unpack(ref, cache2, NULL, NULL, NULL, &e) < 0)
                    die("fy_image_unpack", e);
                t_fy[i] = now_ns() - t0;
                c_fy[i] = cpu_ns() - c0;
            } else {
                if (mkdir(out, 0755) < 0)
                    die("mkdir", NULL);
                uint64_t c1 = cpu_ns(), t1 = now_ns();
                char *tar_argv[] = {"/usr/bin/tar", "-xf", keep, "-C", out, NULL};
                if (spawn_wait(tar_argv) != 0)
                    die("tar -x", NULL);
                uint64_t t2 = now_ns();
                c_tar[i] = cpu_ns() - c1;
                char *sync_argv[] = {"/usr/bin/sync", "-f", out, NULL};
                if (spawn_wait(sync_argv) != 0)
                    die("sync", NULL);
                t_tar[i] = t2 - t1;
                t_tar_sync[i] = now_ns() - t1;
            }
        }
        uint64_t t3 = now_ns();
        if (spawn_wait(sha_argv) != 0)
            die("sha256sum", NULL);
        t_sha[i] = now_ns() - t3;
        r_tar[i] = (double)t_fy[i] / (double)t_tar[i];
        r_sync[i] = (double)t_fy[i] / (double)t_tar_sync[i];
    }
    double fy = median_ms(t_fy, runs), tx = median_ms(t_tar, runs), txs = median_ms(t_tar_sync, runs);
    printf("  %-40s %9.3f ms\n", "tar -x (100 MiB layer)", tx);
    printf("  %-40s %9.3f ms\n", "tar -x + sync -f", txs);
    printf("  %-40s %9.3f ms   (coreutils: no SHA extensions)\n", "sha256sum of the layer", median_ms(t_sha, runs));
    printf("  %-40s %9.3f ms   ratio to tar -x %.2fx (target <= 1.2x), to tar -x + sync %.2fx\n",
           "first unpack (verified, durable)", fy, median_d(r_tar, runs), median_d(r_sync, runs));
    printf("  %-40s", "  per-pair ratios to tar -x, sorted:");
    for (int i = 0; i < runs; i++)
        printf(" %.2f", r_tar[i]);
    printf("\n");
    double cf = median_ms(c_fy, runs), ct = median_ms(c_tar, runs);
    printf("  %-40s %9.3f ms   tar -x %.3f ms: %.2fx (both threads; the hash overlaps only on a free CPU)\n",
           "CPU of the first unpack", cf, ct, cf / ct);
    free(t_fy);
    free(t_tar);
    free(t_tar_sync);
    free(t_sha);
    free(c_fy);
    free(c_tar);
    free(r_tar);
    free(r_sync);
    sh("rm -rf '%s' '%s'", cache2, out);
}

static void bench_container(const char *runc, const char *bundle, const char *runc_state, int n) {
    if (!runc) {
        printf("  container: runc (root, busybox-static) not available: no container rows\n");
        return;
    }
    char layout[300], cache[300], tar[300], ref[800], rootfs[300];
    snprintf(layout, sizeof(layout), "%s/img", workdir);
    snprintf(cache, sizeof(cache), "%s/img-cache", workdir);
    snprintf(tar, sizeof(tar), "%s/rootfs.tar", workdir);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
    if (sh("tar --numeric-owner -C '%s' -cf '%s' .", rootfs, tar) < 0 || make_layout(layout, tar, ref, sizeof(ref)) < 0)
        die("building the image", NULL);
    setenv("FORGEYARD_IMAGE_CACHE", cache, 1);
    fy_policy *p = release_policy();
    fy_error *e = NULL;
    if (fy_policy_set_image(p, ref, &e) < 0)
        die("fy_policy_set_image", e);
    const char *argv_true[] = {"/bin/true", NULL};
    fy_prepared *shared = NULL;
    if (fy_prepare(p, NULL, argv_true, &shared, &e) < 0) /* the first unpack, outside the timings */
        die("fy_prepare (container)", e);
    /* The same image through the runc adapter (oci-runc: named, its known
     * CVEs accepted, seccomp and Landlock preferred since it enforces
     * neither): what the library's bundle, cgroups and cleanup add to runc. */
    fy_policy *pa = release_policy();
    fy_prepared *adapter = NULL;
    if (fy_policy_set_image(pa, ref, &e) < 0 ||
        fy_policy_set_runtime(pa, "runc", FY_RUNTIME_ACCEPT_KNOWN_ISSUES, &e) < 0 ||
        fy_policy_set_control(pa, FY_CONTROL_SECCOMP, FY_MODE_PREFER, &e) < 0 ||
        fy_policy_set_control(pa, FY_CONTROL_LANDLOCK, FY_MODE_PREFER, &e) < 0)
        die("the runc adapter's policy", e);
    if (fy_prepare(pa, NULL, argv_true, &adapter, &e) < 0) {
        printf("  oci-runc adapter: not usable here: %s\n", fy_error_message(e));
        fy_error_free(e);
        e = NULL;
    }
    uint64_t *t_life = calloc((size_t)n, 8), *t_start = calloc((size_t)n, 8), *t_runc = calloc((size_t)n, 8);
    uint64_t *t_adapter = calloc((size_t)n, 8);
    char runc_id[64];
    char *runc_argv[] = {(char *)runc, "--root", (char *)runc_state, "run", "-b", (char *)bundle, runc_id, NULL};
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        fy_prepared *pr = NULL;
        if (fy_prepare(p, NULL, argv_true, &pr, &e) < 0 || run_one(pr) < 0)
            die("container run", e);
        fy_prepared_free(pr);
        uint64_t t1 = now_ns();
        if (run_one(shared) < 0)
            die("container run (shared plan)", NULL);
        uint64_t t2 = now_ns();
        snprintf(runc_id, sizeof(runc_id), "fy-bench-ctr-%d-%d", (int)getpid(), i);
        if (spawn_wait(runc_argv) != 0)
            die("runc run", NULL);
        uint64_t t3 = now_ns();
        if (adapter && run_one(adapter) < 0)
            die("container run (oci-runc)", NULL);
        uint64_t t4 = now_ns();
        t_life[i] = t1 - t0;
        t_start[i] = t2 - t1;
        t_runc[i] = t3 - t2;
        t_adapter[i] = t4 - t3;
    }
    fy_prepared_free(shared);
    fy_prepared_free(adapter);
    fy_policy_free(p);
    fy_policy_free(pa);
    double rc = median_ms(t_runc, n), life = median_ms(t_life, n), start = median_ms(t_start, n);
    printf("  %-40s %9.3f ms\n", "runc run (busybox bundle)", rc);
    printf("  %-40s %9.3f ms   ratio to runc %.2fx (target <= 0.25x)\n", "container lifecycle (cached image)", life,
           life / rc);
    printf("  %-40s %9.3f ms   ratio to runc %.2fx\n", "container start+wait (shared plan)", start, start / rc);
    if (adapter) {
        double ad = median_ms(t_adapter, n);
        printf("  %-40s %9.3f ms   ratio to runc %.2fx\n", "oci-runc adapter start+wait (shared plan)", ad, ad / rc);
    }
    free(t_adapter);
    free(t_life);
    free(t_start);
    free(t_runc);

    bench_unpack(UNPACK_RUNS);
    unsetenv("FORGEYARD_IMAGE_CACHE");
}

/* ---- network mode restricted (root): its lifecycle against deny's ---- */


/* Lifecycles of a and b interleaved, runs of each: medians (ms), CPU of
 * this process and its reaped children for each (ns), and the load average
 * before and after. */
struct pair_run {
    double median_a, median_b, load_before, load_after;
    uint64_t cpu_a, cpu_b;
};
static struct pair_run pair_lifecycles(fy_policy *a, fy_policy *b, const char *const *argv, int runs) {
    struct pair_run pr = {0};
    uint64_t *ta = calloc((size_t)runs, 8), *tb = calloc((size_t)runs, 8);
    double la[3] = {0};
    (void)getloadavg(la, 3);
    pr.load_before = la[0];
    for (int i = 0; ta && tb && i < runs; i++) {
        uint64_t c0 = cpu_ns();
        ta[i] = lifecycle_ns(a, argv);
        uint64_t c1 = cpu_ns();
        tb[i] = lifecycle_ns(b, argv);
        pr.cpu_b += cpu_ns() - c1;
        pr.cpu_a += c1 - c0;
    }
    (void)getloadavg(la, 3);
    pr.load_after = la[0];
    if (ta && tb) {
        pr.median_a = median_ms(ta, runs);
        pr.median_b = median_ms(tb, runs);
    }
    free(ta);
    free(tb);
    return pr;
}

/* The rootless row: this program again as uid 65534 (--rootless-row RUNS)
 * inside a namespace of ours whose only way out is a veth pair with both
 * ends in it and a default route (pasta, the rootless path's uplink, wants
 * one; whatever goes there arrives at the other end and is dropped): never
 * the host's network. */
static void bench_restricted_rootless(int runs) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0 || access("/usr/bin/pasta", X_OK) != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
        printf("  restricted rootless: needs pasta and setpriv: no row\n");
        return;
    }
    self[n] = 0;
    char name[64], rs[16];
    snprintf(name, sizeof(name), "fy-bench-rl-%d", (int)getpid());
    snprintf(rs, sizeof(rs), "%d", runs);
    char *add[] = {"/usr/sbin/ip", "netns", "add", name, NULL};
    char *lo[] = {"/usr/sbin/ip", "-n", name, "link", "set", "lo", "up", NULL};
    char *dummy[] = {"/usr/sbin/ip", "-n", name, "link", "add", "d0", "type", "veth", "peer", "name", "d1", NULL};
    char *addr[] = {"/usr/sbin/ip", "-n", name, "addr", "add", "192.0.2.1/24", "dev", "d0", NULL};
    char *up[] = {"/usr/sbin/ip", "-n", name, "link", "set", "d0", "up", NULL};
    char *up1[] = {"/usr/sbin/ip", "-n", name, "link", "set", "d1", "up", NULL};
    char *route[] = {"/usr/sbin/ip", "-n", name, "route", "add", "default", "via", "192.0.2.2", "dev", "d0", NULL};
    char *del[] = {"/usr/sbin/ip", "netns", "del", name, NULL};
    char *argv[] = {"/usr/sbin/ip", "netns", "exec", name, "/usr/bin/setpriv", "--reuid", "65534",
                    "--regid", "65534", "--clear-groups", "/usr/bin/env", "HOME=/tmp", self, "--rootless-row", rs,
                    NULL};
    if (spawn_wait(add) != 0 || spawn_wait(lo) != 0 || spawn_wait(dummy) != 0 || spawn_wait(addr) != 0 ||
        spawn_wait(up) != 0 || spawn_wait(up1) != 0 || spawn_wait(route) != 0) {
        printf("  restricted rootless: could not make its namespace: no row\n");
    } else {
        fflush(stdout);
        pid_t pid;
        int st = -1;
        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 || waitpid(pid, &st, 0) < 0 ||
            !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            printf("  restricted rootless: uid 65534 could not run %s: no row\n", self);
    }
    spawn_wait(del);
}

/* As uid 65534: restricted (pasta path) against deny, interleaved. */
static void rootless_row(int runs) {
    fy_policy *deny = NULL, *restricted = NULL;
    fy_error *e = NULL;
    if (fy_policy_new(FY_PROFILE_STANDARD_CI, &deny, &e) < 0 || fy_policy_new(FY_PROFILE_STANDARD_CI, &restricted, &e) < 0 ||
        fy_policy_add_destination(restricted, "198.51.100.1", FY_PROTO_TCP, 80, 80, &e) < 0 ||
        fy_policy_set_network(restricted, FY_NET_RESTRICTED, &e) < 0) {
        printf("  restricted rootless: %s: no row\n", e ? fy_error_message(e) : "policy");
        return;
    }
    const char *argv_true[] = {"/bin/true", NULL};
    fy_prepared *pr = NULL;
    if (fy_prepare(restricted, NULL, argv_true, &pr, &e) < 0) {
        printf("  restricted rootless: %s: no row\n", fy_error_message(e));
        return;
    }
    fy_prepared_free(pr);
    struct pair_run pl = pair_lifecycles(deny, restricted, argv_true, runs);
    double md = pl.median_a, mr = pl.median_b, la0[1] = {pl.load_before}, la1[1] = {pl.load_after};
    uint64_t cpu_deny = pl.cpu_a, cpu_res = pl.cpu_b;
    printf("  %-40s %9.3f ms   deny (standard-ci, uid 65534) %.3f ms, ratio %.2fx\n",
           "lifecycle, restricted rootless (pasta)", mr, md, mr / md);
    printf("  %-40s %9.3f ms   deny %.3f ms; load %.1f -> %.1f\n", "  CPU per attempt, rootless",
           cpu_res / 1e6 / runs, cpu_deny / 1e6 / runs, la0[0], la1[0]);
    fy_policy_free(deny);
    fy_policy_free(restricted);
}

/* The forgeyard CLI built next to this program (../examples/forgeyard):
 * true with its path in buf. */
static bool cli_path(char *buf, size_t len) {
    ssize_t cl = readlink("/proc/self/exe", buf, len - 64);
    char *slash = cl > 0 ? (buf[cl] = '\0', strrchr(buf, '/')) : NULL;
    if (!slash)
        return false;
    snprintf(slash, len - (size_t)(slash - buf), "/../examples/forgeyard");
    return access(buf, X_OK) == 0;
}

/* A namespace of our own as the router's uplink (198.51.100.1 on its
 * loopback): never the host's, never a packet out. */
static void bench_restricted(int runs) {
    if (getuid() != 0 || access("/usr/sbin/ip", X_OK) != 0) {
        printf("  restricted: needs root and ip(8): no row\n");
        return;
    }
    char name[64], path[128];
    snprintf(name, sizeof(name), "fy-bench-%d", (int)getpid());
    snprintf(path, sizeof(path), "/run/netns/%s", name);
    char *add[] = {"/usr/sbin/ip", "netns", "add", name, NULL};
    char *lo[] = {"/usr/sbin/ip", "-n", name, "link", "set", "lo", "up", NULL};
    char *addr[] = {"/usr/sbin/ip", "-n", name, "addr", "add", "198.51.100.1/24", "dev", "lo", NULL};
    char *del[] = {"/usr/sbin/ip", "netns", "del", name, NULL};
    if (spawn_wait(add) != 0 || spawn_wait(lo) != 0 || spawn_wait(addr) != 0) {
        printf("  restricted: could not make the uplink namespace: no row\n");
        spawn_wait(del);
        return;
    }
    fy_policy *deny = NULL, *restricted = NULL;
    fy_error *e = NULL;
    if (fy_policy_new(FY_PROFILE_STANDARD_CI, &deny, &e) < 0 || fy_policy_new(FY_PROFILE_STANDARD_CI, &restricted, &e) < 0 ||
        fy_policy_add_destination(restricted, "198.51.100.1", FY_PROTO_TCP, 80, 80, &e) < 0 ||
        fy_policy_set_network(restricted, FY_NET_RESTRICTED, &e) < 0 ||
        fy_policy_set_network_host(restricted, FY_NETHOST_UPLINK, path, &e) < 0) {
        spawn_wait(del);
        die("restricted policy", e);
    }
    const char *argv_true[] = {"/bin/true", NULL};
    struct pair_run pl = pair_lifecycles(deny, restricted, argv_true, runs);
    double md = pl.median_a, mr = pl.median_b, la0[1] = {pl.load_before}, la1[1] = {pl.load_after};
    uint64_t cpu_deny = pl.cpu_a, cpu_res = pl.cpu_b;
    printf("  %-40s %9.3f ms   deny (standard-ci) %.3f ms, ratio %.2fx (target <= 1.50x)\n",
           "lifecycle, network restricted (nft)", mr, md, mr / md);
    printf("  %-40s %9.3f ms   deny %.3f ms (this process and its reaped children); load %.1f -> %.1f\n",
           "  CPU per attempt, restricted", cpu_res / 1e6 / runs, cpu_deny / 1e6 / runs, la0[0], la1[0]);
    /* Restricted in a pre-started shell (its empty network namespace made
     * with it), refilled off the timing, against a cold deny attempt. */
    {
        fy_prepared *shape = NULL;
        fy_shells *shells = NULL;
        if (fy_prepare(restricted, NULL, argv_true, &shape, &e) < 0 ||
            fy_shells_new(shape, 1, 60000000, &shells, &e) < 0 || fy_shells_fill(shells, &e) < 0) {
            printf("  restricted in a pre-started shell: %s: no row\n", e ? fy_error_message(e) : "?");
            fy_error_free(e);
            e = NULL;
        } else {
            uint64_t *t_sh = calloc((size_t)runs + 1, 8), *t_deny = calloc((size_t)runs + 1, 8);
            if (!t_sh || !t_deny)
                die("calloc", NULL);
            for (int i = 0; i < runs; i++) {
                t_sh[i] = shell_lifecycle_ns(restricted, argv_true, shells, false);
                t_deny[i] = lifecycle_ns(deny, argv_true);
            }
            double sh = median_ms(t_sh, runs), dn = median_ms(t_deny, runs);
            printf("  %-40s %9.3f ms   deny (standard-ci, cold) %.3f ms, ratio %.2fx\n",
                   "lifecycle, restricted in a shell", sh, dn, dn > 0 ? sh / dn : 0);
            free(t_sh);
            free(t_deny);
        }
        fy_shells_free(shells);
        fy_prepared_free(shape);
    }
    /* The same through the CLI, as an operator or a CI system runs it
     * (whole processes, the saved probe), against a deny run of the CLI. */
    char cli[4096];
    if (cli_path(cli, sizeof(cli))) {
        char cache[600];
        snprintf(cache, sizeof(cache), "%s/cli-restricted-cache", workdir);
        if (mkdir(cache, 0700) < 0 && errno != EEXIST)
            die("mkdir", NULL);
        setenv("FORGEYARD_CACHE_DIR", cache, 1);
        char *cli_deny[] = {cli, "run", "--profile", "standard-ci", "--", "/bin/true", NULL};
        char *cli_res[] = {cli, "run", "--profile", "standard-ci", "--network", "restricted", "--allow",
                           "198.51.100.1:80", "--network-uplink", path, "--", "/bin/true", NULL};
        int cn = runs < 60 ? runs : 60;
        uint64_t *t_d = calloc((size_t)cn + 1, 8), *t_r = calloc((size_t)cn + 1, 8);
        if (!t_d || !t_r)
            die("calloc", NULL);
        bool ok = spawn_wait(cli_deny) == 0 && spawn_wait(cli_res) == 0; /* (the saved probes) */
        for (int i = 0; ok && i < cn; i++) {
            uint64_t a = now_ns();
            ok = spawn_wait(cli_res) == 0;
            uint64_t b = now_ns();
            ok = ok && spawn_wait(cli_deny) == 0;
            t_r[i] = b - a;
            t_d[i] = now_ns() - b;
        }
        unsetenv("FORGEYARD_CACHE_DIR");
        if (ok) {
            double r = median_ms(t_r, cn), d = median_ms(t_d, cn);
            printf("  %-40s %9.3f ms   deny through the CLI %.3f ms, ratio %.2fx\n",
                   "forgeyard run --network restricted", r, d, d > 0 ? r / d : 0);
        } else {
            printf("  forgeyard run --network restricted: a run failed: no row\n");
        }
        free(t_d);
        free(t_r);
    }
    bench_restricted_rootless(runs);
    /* The peer: what a user would assemble by hand, bwrap --share-net in a
     * network namespace with the same allowlist in nftables (output: only
     * 198.51.100.1:80/tcp and established traffic), made and removed per
     * job (ip netns add, nft -f, ip netns exec ... bwrap, ip netns del),
     * and with the namespace and rules made once. Namespaces of our own
     * only; nothing of the host changes. */
    const char *bwrap = access("/usr/bin/bwrap", X_OK) == 0 ? "/usr/bin/bwrap" : NULL;
    const char *nft = access("/usr/sbin/nft", X_OK) == 0 ? "/usr/sbin/nft" : NULL;
    if (bwrap && nft) {
        char rules[128], pname[64];
        snprintf(rules, sizeof(rules), "/tmp/fy-bench-nft-%d", (int)getpid());
        snprintf(pname, sizeof(pname), "fy-bench-p-%d", (int)getpid());
        FILE *f = fopen(rules, "we");
        if (f) {
            fputs("table inet fy-peer {\n chain output {\n  type filter hook output priority 0; policy drop;\n"
                  "  oifname \"lo\" accept\n  ct state established,related accept\n"
                  "  ip daddr 198.51.100.1 tcp dport 80 accept\n }\n}\n", f);
            fclose(f);
        }
        char *padd[] = {"/usr/sbin/ip", "netns", "add", pname, NULL};
        char *pnft[] = {"/usr/sbin/ip", "netns", "exec", pname, (char *)nft, "-f", rules, NULL};
        char *pdel[] = {"/usr/sbin/ip", "netns", "del", pname, NULL};
        char *pbw[] = {"/usr/sbin/ip", "netns", "exec", pname, (char *)bwrap, "--share-net", "--unshare-user",
                       "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
                       "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                       "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                       "--cap-drop", "ALL", "/usr/bin/true", NULL};
        uint64_t *t_pj = calloc((size_t)runs, 8), *t_ps = calloc((size_t)runs, 8);
        bool okp = f != NULL;
        for (int i = 0; i < runs && okp; i++) {
            uint64_t t0 = now_ns();
            okp = spawn_wait(padd) == 0 && spawn_wait(pnft) == 0 && spawn_wait(pbw) == 0 && spawn_wait(pdel) == 0;
            t_pj[i] = now_ns() - t0;
        }
        if (okp && spawn_wait(padd) == 0 && spawn_wait(pnft) == 0) {
            for (int i = 0; i < runs && okp; i++) {
                uint64_t t0 = now_ns();
                okp = spawn_wait(pbw) == 0;
                t_ps[i] = now_ns() - t0;
            }
        } else {
            okp = false;
        }
        spawn_wait(pdel);
        unlink(rules);
        if (okp) {
            double pj = median_ms(t_pj, runs), ps = median_ms(t_ps, runs);
            printf("  %-40s %9.3f ms   netns + nft -f + bwrap --share-net + netns del per job; "
                   "restricted is %.2fx of it\n", "peer: bwrap --share-net + nft, per job", pj, mr / pj);
            printf("  %-40s %9.3f ms   namespace and rules made once; restricted is %.2fx of it\n",
                   "peer: bwrap --share-net + nft, shared", ps, mr / ps);
        } else {
            printf("  peer (bwrap --share-net + nft): could not run: no row\n");
        }
        free(t_pj);
        free(t_ps);
    }
    fy_policy_free(deny);
    fy_policy_free(restricted);
    spawn_wait(del);
}

/* ---- job networks: root's against the privileged helper's ---- */

/* One job of two members under deny running /bin/true (fy_jobnet_new, two
 * prepares, two starts, two waits, the witnessed shutdown, free) when job,
 * else the same two attempts without a job network (started together,
 * then waited): ns, 0 on failure (said on stderr). */
static uint64_t jobnet_pair_ns(fy_policy *const pol[2], bool job) {
    const char *names[] = {"a", "b", NULL}, *argv_true[] = {"/bin/true", NULL};
    uint64_t t0 = now_ns();
    fy_jobnet *jn = NULL;
    fy_prepared *pr[2] = {0};
    fy_handle *h[2] = {0};
    fy_error *e = NULL;
    bool ok = !job || fy_jobnet_new(names, &jn, &e) == 0;
    for (int i = 0; ok && i < 2; i++)
        ok = (job ? fy_prepare_member(pol[i], NULL, argv_true, jn, &pr[i], &e)
                  : fy_prepare(pol[i], NULL, argv_true, &pr[i], &e)) >= 0 &&
             fy_start(pr[i], &h[i], &e) >= 0;
    for (int i = 0; i < 2; i++) {
        fy_result *res = NULL;
        if (h[i] && (fy_handle_wait(h[i], FY_UNLIMITED, &res, ok ? &e : NULL) < 0 || !res ||
                     fy_result_outcome(res) != FY_OUTCOME_SUCCEEDED))
            ok = false;
        fy_result_free(res);
        fy_handle_free(h[i]);
        fy_prepared_free(pr[i]);
    }
    if (jn && fy_jobnet_shutdown(jn, ok ? &e : NULL) != 0)
        ok = false;
    fy_jobnet_free(jn);
    uint64_t t = now_ns() - t0;
    if (!ok)
        fprintf(stderr, "fy-bench --jobnet (uid %d): %s\n", (int)getuid(), e ? fy_error_message(e) : "a member failed");
    fy_error_free(e);
    return ok ? t : 0;
}

/* Two deny policies (standard-ci, 128 MiB: within the helper's budget),
 * members "a" and "b" of a job when job. */
static void jobnet_policies(fy_policy *pol[2], bool job) {
    const char *names[] = {"a", "b"};
    for (int i = 0; i < 2; i++) {
        fy_error *e = NULL;
        pol[i] = NULL;
        if (fy_policy_new(FY_PROFILE_STANDARD_CI, &pol[i], &e) < 0 || fy_policy_set_network(pol[i], FY_NET_DENY, &e) < 0 ||
            fy_policy_set_limit(pol[i], FY_LIMIT_MEMORY, 128ull << 20, &e) < 0 ||
            (job && fy_policy_set_job_member(pol[i], names[i], &e) < 0))
            die("job network policy", e);
    }
}

/* As uid 65534 (bench_jobnet spawns it): one line per command read on
 * stdin, 'j' a job through the helper, 'p' the plain pair; the ns taken. */
static int jobnet_child(void) {
    fy_policy *job[2], *plain[2];
    jobnet_policies(job, true);
    jobnet_policies(plain, false);
    int c;
    while ((c = getchar()) != EOF && c != 'q') {
        if (c != 'j' && c != 'p')
            continue;
        printf("%llu\n", (unsigned long long)jobnet_pair_ns(c == 'j' ? job : plain, c == 'j'));
        fflush(stdout);
    }
    for (int i = 0; i < 2; i++) {
        fy_policy_free(job[i]);
        fy_policy_free(plain[i]);
    }
    return 0;
}

/* fy-bench --jobnet RUNS HELPER (root): a job of two deny members made by
 * root (linux-jobnet.c) against the same job made by uid 65534 through a
 * privileged helper this run starts (HELPER, with an empty namespace of
 * ours as its uplink), each against the same two attempts without a job
 * network (root's, and uid 65534's through the same helper: its cgroups
 * too), all four interleaved in one run, their order alternating. */
static void bench_jobnet(int runs, const char *helper) {
    if (getuid() != 0 || access("/usr/sbin/ip", X_OK) != 0 || access("/usr/bin/setpriv", X_OK) != 0 ||
        access(helper, X_OK) != 0) {
        printf("  job networks: need root, ip(8), setpriv and the helper (%s): no row\n", helper);
        return;
    }
    char self[4096];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sn <= 0)
        die("readlink /proc/self/exe", NULL);
    self[sn] = 0;
    char name[64], path[128], sock[600], cache[600], subtree[64];
    snprintf(name, sizeof(name), "fy-bench-jn-%d", (int)getpid());
    snprintf(path, sizeof(path), "/run/netns/%s", name);
    snprintf(subtree, sizeof(subtree), "fy-bench-jn-%d", (int)getpid());
    snprintf(sock, sizeof(sock), "%s/helper.sock", workdir);
    snprintf(cache, sizeof(cache), "%s/cache", workdir);
    char *add[] = {"/usr/sbin/ip", "netns", "add", name, NULL};
    char *del[] = {"/usr/sbin/ip", "netns", "del", name, NULL};
    if (spawn_wait(add) != 0) {
        printf("  job networks: could not make the helper's uplink namespace: no row\n");
        return;
    }
    if (mkdir(cache, 0700) < 0 || chown(cache, 65534, 65534) < 0)
        die("the child's cache directory", NULL);
    char *hargv[] = {(char *)helper, "--socket", sock, "--allow", "65534:4:256M:8192", "--subtree", subtree,
                     "--net-uplink", path, NULL};
    pid_t hpid = -1, cpid = -1;
    if (posix_spawn(&hpid, helper, NULL, NULL, hargv, environ) != 0) {
        printf("  job networks: could not start %s: no row\n", helper);
        spawn_wait(del);
        return;
    }
    struct stat st;
    for (int i = 0; i < 300 && stat(sock, &st) != 0; i++)
        usleep(20000);
    char env_sock[700], env_cache[700];
    snprintf(env_sock, sizeof(env_sock), "FORGEYARD_HELPER_SOCKET=%s", sock);
    snprintf(env_cache, sizeof(env_cache), "FORGEYARD_CACHE_DIR=%s", cache);
    char *cargv[] = {"/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/env", "-i",
                     "PATH=/usr/bin:/bin", "HOME=/tmp", env_sock, env_cache, self, "--jobnet-child", NULL};
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    FILE *cin = NULL, *cout = NULL;
    if (stat(sock, &st) == 0 && pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, to[0], 0);
        posix_spawn_file_actions_adddup2(&fa, from[1], 1);
        if (posix_spawn(&cpid, cargv[0], &fa, NULL, cargv, environ) != 0)
            cpid = -1;
        posix_spawn_file_actions_destroy(&fa);
        close(to[0]);
        close(from[1]);
        cin = fdopen(to[1], "w");
        cout = fdopen(from[0], "r");
    }
    fy_policy *job[2], *plain[2];
    jobnet_policies(job, true);
    jobnet_policies(plain, false);
    uint64_t *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = calloc((size_t)runs, 8);
    /* (one of each first, untimed: the probe caches on both sides) */
    double l0 = -1, l1 = -1;
    bool ok = cpid > 0 && cin && cout && t[0] && t[1] && t[2] && t[3];
    for (int i = -1; ok && i < runs; i++) {
        if (i == 0)
            (void)getloadavg(&l0, 1);
        uint64_t v[4] = {0};
        for (int s = 0; s < 4 && ok; s++) {
            int k = i % 2 ? 3 - s : s; /* 0 root job, 1 helper job, 2 root plain, 3 helper plain */
            if (k == 0 || k == 2) {
                v[k] = jobnet_pair_ns(k == 0 ? job : plain, k == 0);
            } else {
                unsigned long long x = 0;
                fputc(k == 1 ? 'j' : 'p', cin);
                fflush(cin);
                ok = fscanf(cout, "%llu", &x) == 1;
                v[k] = x;
            }
            ok = ok && v[k] > 0;
        }
        for (int k = 0; ok && i >= 0 && k < 4; k++)
            t[k][i] = v[k];
    }
    (void)getloadavg(&l1, 1);
    if (cin) {
        fputc('q', cin);
        fclose(cin);
    } else if (to[1] >= 0) {
        close(to[1]);
    }
    if (cout)
        fclose(cout);
    else if (from[0] >= 0)
        close(from[0]);
    if (cpid > 0)
        waitpid(cpid, NULL, 0);
    kill(hpid, SIGTERM);
    waitpid(hpid, NULL, 0);
    spawn_wait(del);
    if (ok) {
        double rj = median_ms(t[0], runs), hj = median_ms(t[1], runs), rp = median_ms(t[2], runs),
               hp = median_ms(t[3], runs);
        printf("  %-40s %9.3f ms   2 deny attempts (root) %.3f ms, ratio %.2fx\n", "job of 2 deny members, root", rj, rp,
               rj / rp);
        printf("  %-40s %9.3f ms   2 deny attempts (uid 65534, helper) %.3f ms, ratio %.2fx\n",
               "job of 2 deny members, helper", hj, hp, hj / hp);
        printf("  %-40s %9.2fx    (job network alone: +%.1f ms root, +%.1f ms helper); load %.1f -> %.1f\n",
               "  helper's job / root's job", hj / rj, rj - rp, hj - hp, l0, l1);
    } else {
        printf("  job networks: the runs failed (see stderr): no row\n");
    }
    for (int k = 0; k < 4; k++)
        free(t[k]);
    for (int i = 0; i < 2; i++) {
        fy_policy_free(job[i]);
        fy_policy_free(plain[i]);
    }
}

/* Actions (issue 19): a 10,000-file input root (in the work directory)
 * and 100 declared outputs of 100 KiB, against the same command in the
 * namespace sandbox with the tree bound read-only and an empty writable
 * build directory. The target: at most 1.3x. And hashing the outputs: the
 * action's collect step against sha256sum over the same files in the same
 * run (target: at least 0.9x sha256sum's speed). where: the file system of
 * the action's scratch and output directories and of the binds' build
 * directory (the work directory's, or a tmpfs), alike for both. */
static void bench_action(fy_policy *p, int an, const char *where, const char *label) {
    {
        char in[600], bdir[600], odir[600], sh[1200];
        snprintf(in, sizeof(in), "%s/action-in", workdir);
        struct stat ist;
        if (stat(in, &ist) < 0)
            make_tree(in, 10000);
        const char *script = "mkdir -p out && head -c 10240000 /dev/urandom > blob && split -b 102400 -a 3 blob out/o "
                             "&& rm -f blob";
        const char *act_argv[] = {"/bin/sh", "-c", script, NULL};
        char *doc = NULL;
        if (asprintf(&doc, "{\"version\": 1, \"arguments\": [\"/bin/sh\", \"-c\", \"%s\"], \"environment\": "
                           "{\"PATH\": \"/usr/bin:/bin\"}, \"input_root\": {\"directory\": \"%s\"}, "
                           "\"outputs\": {\"directories\": [\"out\"]}, \"scratch_directory\": \"%s\"}",
                     script, in, where) < 0)
            die("asprintf", NULL);
        fy_action *act = NULL, *aact = NULL;
        fy_error *e = NULL;
        if (fy_action_from_json(doc, strlen(doc), &act, &e) < 0)
            die("fy_action_from_json", e);
        free(doc);
        /* The same tree as a tar archive, from the action cache (warmed
         * once, outside the timings; the cache is the run's own). */
        char tarp[700], cache[700];
        snprintf(tarp, sizeof(tarp), "%s/action-in.tar", workdir);
        snprintf(cache, sizeof(cache), "%s/action-cache", workdir);
        setenv("FORGEYARD_ACTION_CACHE", cache, 1);
        if (stat(tarp, &ist) < 0) {
            snprintf(sh, sizeof(sh), "tar -cf '%s' -C '%s' .", tarp, in);
            if (system(sh) != 0)
                die("tar", NULL);
        }
        if (asprintf(&doc, "{\"version\": 1, \"arguments\": [\"/bin/sh\", \"-c\", \"%s\"], \"environment\": "
                           "{\"PATH\": \"/usr/bin:/bin\"}, \"input_root\": {\"archive\": \"%s\"}, "
                           "\"outputs\": {\"directories\": [\"out\"]}, \"scratch_directory\": \"%s\"}",
                     script, tarp, where) < 0)
            die("asprintf", NULL);
        if (fy_action_from_json(doc, strlen(doc), &aact, &e) < 0)
            die("fy_action_from_json", e);
        free(doc);
        {
            fy_action_result *res = NULL;
            if (fy_action_run(aact, p, NULL, &res, &e) < 0 || fy_action_result_outcome(res) != FY_OUTCOME_SUCCEEDED)
                die("fy_action_run (archive)", e);
            fy_action_result_free(res);
        }
        uint64_t *t_arc = calloc((size_t)an, 8);
        char aroot[32] = "?", acache[32] = "?";
        uint64_t *t_act = calloc((size_t)an, 8), *t_bind = calloc((size_t)an, 8), *t_col = calloc((size_t)an, 8),
                 *t_sha = calloc((size_t)an, 8), *t_in = calloc((size_t)an, 8), *t_clean = calloc((size_t)an, 8),
                 *c_act = calloc((size_t)an, 8), *c_bind = calloc((size_t)an, 8);
        char root[32] = "?";
        for (int i = 0; i < an; i++) {
            snprintf(odir, sizeof(odir), "%s/action-out-%d", where, i);
            if (fy_action_set_output_directory(act, odir, &e) < 0)
                die("fy_action_set_output_directory", e);
            uint64_t cpu_a = cpu_ns(), a = now_ns();
            fy_action_result *res = NULL;
            if (fy_action_run(act, p, NULL, &res, &e) < 0 || fy_action_result_outcome(res) != FY_OUTCOME_SUCCEEDED)
                die("fy_action_run", e);
            uint64_t b = now_ns();
            c_act[i] = cpu_ns() - cpu_a;
            char *rj = NULL;
            if (fy_action_result_to_json(res, &rj, NULL) == 0) {
                const char *c = strstr(rj, "\"collect\": "), *ip = strstr(rj, "\"timings_usec\""),
                           *cl = ip ? strstr(ip, "\"cleanup\": ") : NULL, *rt = strstr(rj, "\"root\": \"");
                t_col[i] = c ? strtoull(c + 11, NULL, 10) * 1000 : 0;
                ip = ip ? strstr(ip, "\"input\": ") : NULL;
                t_in[i] = ip ? strtoull(ip + 9, NULL, 10) * 1000 : 0;
                t_clean[i] = cl ? strtoull(cl + 11, NULL, 10) * 1000 : 0;
                if (rt)
                    snprintf(root, sizeof(root), "%.*s", (int)strcspn(rt + 9, "\""), rt + 9);
                fy_free(rj);
            }
            fy_action_result_free(res);
            /* the same tree as an archive, from the cache */
            uint64_t a2 = now_ns();
            res = NULL;
            if (fy_action_run(aact, p, NULL, &res, &e) < 0 || fy_action_result_outcome(res) != FY_OUTCOME_SUCCEEDED)
                die("fy_action_run (archive)", e);
            t_arc[i] = now_ns() - a2;
            if (fy_action_result_to_json(res, &rj, NULL) == 0) {
                const char *rt = strstr(rj, "\"root\": \""), *ca = strstr(rj, "\"cache\": \"");
                if (rt)
                    snprintf(aroot, sizeof(aroot), "%.*s", (int)strcspn(rt + 9, "\""), rt + 9);
                if (ca)
                    snprintf(acache, sizeof(acache), "%.*s", (int)strcspn(ca + 10, "\""), ca + 10);
                fy_free(rj);
            }
            fy_action_result_free(res);
            /* the same command with binds: the tree read-only, a fresh build directory */
            snprintf(bdir, sizeof(bdir), "%s/bind-build-%d", where, i);
            if (mkdir(bdir, 0755) < 0 || (getuid() == 0 && chown(bdir, 100001, 100001) < 0))
                die("mkdir", NULL);
            fy_policy *q = fy_policy_new(FY_PROFILE_RELEASE, &q, NULL) == 0 ? q : NULL;
            if (!q || fy_policy_set_source(q, in, 0, NULL) < 0 || fy_policy_set_build(q, bdir, NULL) < 0)
                die("policy", NULL);
            uint64_t cb = cpu_ns(), c0 = now_ns();
            (void)lifecycle_ns(q, act_argv);
            t_bind[i] = now_ns() - c0;
            c_bind[i] = cpu_ns() - cb;
            fy_policy_free(q);
            /* sha256sum over the action's outputs */
            snprintf(sh, sizeof(sh), "%s/out", odir);
            char *sha_argv[] = {"/bin/sh", "-c", "cd \"$0\" && exec sha256sum o* > /dev/null", sh, NULL};
            uint64_t d = now_ns();
            if (spawn_wait(sha_argv) != 0)
                die("sha256sum", NULL);
            t_sha[i] = now_ns() - d;
            t_act[i] = b - a;
            snprintf(sh, sizeof(sh), "rm -rf -- '%s' '%s'", odir, bdir);
            if (system(sh) != 0)
                die("rm", NULL);
        }
        double m_act = median_ms(t_act, an), m_bind = median_ms(t_bind, an), m_col = median_ms(t_col, an),
               m_sha = median_ms(t_sha, an);
        printf("  action, scratch and build on %s:\n", label);
        printf("  %-40s %9.3f ms   binds %.3f ms, ratio %.2fx (target <= 1.3x)\n",
               "action: 10,000 inputs, 100 outputs", m_act, m_bind, m_act / m_bind);
        printf("  %-40s              execution root: %s; making it %.3f ms, removing it %.3f ms (medians)\n", "",
               root, median_ms(t_in, an), median_ms(t_clean, an));
        double m_cact = median_ms(c_act, an), m_cbind = median_ms(c_bind, an);
        printf("  %-40s %9.3f ms   binds %.3f ms, ratio %.2fx (host, sandbox and workload; the host's\n"
               "  %-40s              work overlaps the sandbox's only on a free CPU)\n",
               "action: CPU per attempt", m_cact, m_cbind, m_cact / m_cbind, "");
        double m_arc = median_ms(t_arc, an);
        printf("  %-40s %9.3f ms   binds %.3f ms, ratio %.2fx (target <= 1.3x; root: %s, cache: %s)\n",
               "action: the same tree as a tar", m_arc, m_bind, m_arc / m_bind, aroot, acache);
        printf("  %-40s %9.3f ms   sha256sum %.3f ms: speed %.2fx sha256sum's (target >= 0.9x; collect also\n"
               "  %-40s              copies the outputs and lists the undeclared files)\n",
               "action: collect 10 MB of outputs", m_col, m_sha, m_sha / m_col, "");
        free(t_act); free(t_bind); free(t_col); free(t_sha); free(t_in); free(t_clean); free(t_arc);
        free(c_act); free(c_bind);
        fy_action_free(act);
        fy_action_free(aact);
    }

}

/* The action rows on the work directory's file system, then (as root) on
 * a tmpfs mounted in a mount namespace of the benchmark's own: a file
 * system that discards freed blocks at once (this project's test host)
 * makes every directory made and removed cost a device round trip. */
static void bench_actions(fy_policy *p, int an) {
    bench_action(p, an, workdir, "the work directory's file system");
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s/tmpfs", workdir);
    if (getuid() != 0 || mkdir(tmp, 0755) < 0 || unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("fy-bench", tmp, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1g") < 0) {
        printf("  (no tmpfs rows: %s)\n", getuid() != 0 ? "not root" : strerror(errno));
        return;
    }
    bench_action(p, an, tmp, "a tmpfs (the benchmark's own mount namespace)");
    umount2(tmp, MNT_DETACH);
}

/* ---- network mode fetch-only: the proxy's throughput ---- */

/* A listening TCP socket on addr (network order; 127.0.0.1 when 0) at a
 * port the kernel picks (in *port), in the calling thread's network
 * namespace: the fd, or -1. */
static int listen_on(uint32_t addr, unsigned *port) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = addr ? addr : htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0 ||
                    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)) {
        close(fd);
        fd = -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* An HTTP server (this process's own listener, nothing else is contacted)
 * that answers every request with FETCH_BYTES. */
#define FETCH_BYTES (1024LL << 20)
struct fetch_srv { int fd; };
/* A request head from fd into req (NUL-terminated; at most cap - 1
 * bytes, up to its blank line or the peer's end): its length. */
static size_t read_head(int fd, char *req, size_t cap) {
    size_t n = 0;
    req[0] = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, req + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    return n;
}
static void *fetch_server(void *arg) {
    struct fetch_srv *s = arg;
    static char buf[1 << 20];
    memset(buf, 'x', sizeof(buf));
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char req[4096];
        (void)read_head(c, req, sizeof(req));
        char head[128];
        int hl = snprintf(head, sizeof(head), "HTTP/1.0 200 OK\r\nContent-Length: %lld\r\n\r\n", FETCH_BYTES);
        bool ok = write(c, head, (size_t)hl) == hl;
        for (long long left = FETCH_BYTES; ok && left > 0;) {
            ssize_t w = write(c, buf, (size_t)(left < (long long)sizeof(buf) ? left : (long long)sizeof(buf)));
            ok = w > 0;
            left -= w > 0 ? w : 0;
        }
        close(c);
    }
}

/* The floor any relay stands on: a relay of the fewest moving parts this
 * benchmark can think of, on 127.0.0.1 beside the client, with no sandbox,
 * policy or audit: one blocking thread per connection, the request head
 * copied up, then the response spliced down through a 1 MiB pipe until the
 * server closes. A download through it crosses two TCP connections, as
 * through the fetch-only proxy (which cannot have fewer: it runs outside
 * the sandbox and never terminates TLS). */
struct relay { int lfd; uint32_t up_addr; unsigned up_port; };
struct relay_conn { int c; uint32_t up_addr; unsigned up_port; };
static void *relay_one(void *arg) {
    struct relay_conn *rc = arg;
    int c = rc->c, u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), pp[2] = {-1, -1};
    struct sockaddr_in up = {.sin_family = AF_INET, .sin_port = htons((uint16_t)rc->up_port),
                             .sin_addr.s_addr = rc->up_addr};
    free(rc);
    char req[4096];
    bool ok = u >= 0 && connect(u, (struct sockaddr *)&up, sizeof(up)) == 0 && pipe2(pp, O_CLOEXEC) == 0;
    if (ok)
        (void)fcntl(pp[1], F_SETPIPE_SZ, 1 << 20);
    size_t n = ok ? read_head(c, req, sizeof(req)) : 0;
    ok = ok && n > 0 && write(u, req, n) == (ssize_t)n;
    for (;;) {
        ssize_t k = ok ? splice(u, NULL, pp[1], NULL, 1 << 20, SPLICE_F_MOVE) : 0;
        if (k <= 0)
            break;
        while (k > 0) {
            ssize_t m = splice(pp[0], NULL, c, NULL, (size_t)k, SPLICE_F_MOVE);
            if (m <= 0) {
                ok = false;
                break;
            }
            k -= m;
        }
    }
    for (int i = 0; i < 2; i++)
        if (pp[i] >= 0)
            close(pp[i]);
    if (u >= 0)
        close(u);
    close(c);
    return NULL;
}
static void *relay_main(void *arg) {
    struct relay *r = arg;
    for (;;) {
        int c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            return NULL;
        struct relay_conn *rc = malloc(sizeof(*rc));
        pthread_t t;
        if (!rc) {
            close(c);
            continue;
        }
        *rc = (struct relay_conn){c, r->up_addr, r->up_port};
        if (pthread_create(&t, NULL, relay_one, rc) != 0) {
            free(rc);
            close(c);
            continue;
        }
        pthread_detach(t);
    }
}

/* argv with the calling process in the network namespace nsfd (-1: this
 * one), stdout and stderr to /dev/null: its exit status, or -1. */
static int spawn_wait_in(int nsfd, char *const argv[]) {
    if (nsfd < 0)
        return spawn_wait(argv);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || setns(nsfd, CLONE_NEWNET) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Where a fetch row's server, relay and direct client live: the server in
 * server_ns at server_ip, the direct curl and the relay in client_ns, the
 * proxy's uplink client_ns (uplink, its /run/netns path) — each -1/NULL
 * for this process's own namespace. */
struct fetch_where {
    const char *label, *server_ip, *uplink;
    int server_ns, client_ns;
};

/* Runs fn's socket setup with the calling thread in ns (-1: as it is);
 * threads it creates stay there. 0, or -1 if the namespace could not be
 * entered or left. */
static int in_netns(int ns, int (*fn)(void *), void *arg) {
    if (ns < 0)
        return fn(arg);
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0 || setns(ns, CLONE_NEWNET) < 0) {
        if (self >= 0)
            close(self);
        return -1;
    }
    int r = fn(arg);
    if (setns(self, CLONE_NEWNET) < 0)
        die("setns back", NULL);
    close(self);
    return r;
}
struct fetch_start { uint32_t addr; unsigned port; struct fetch_srv *srv; struct relay *rl; };
static int start_server(void *arg) {
    struct fetch_start *fs = arg;
    pthread_t th;
    fs->srv->fd = listen_on(fs->addr, &fs->port);
    if (fs->srv->fd < 0 || pthread_create(&th, NULL, fetch_server, fs->srv) != 0)
        return -1;
    pthread_detach(th);
    return 0;
}
static int start_relay(void *arg) {
    struct fetch_start *fs = arg;
    pthread_t th;
    fs->rl->lfd = listen_on(0, &fs->port);
    if (fs->rl->lfd < 0 || pthread_create(&th, NULL, relay_main, fs->rl) != 0)
        return -1;
    pthread_detach(th);
    return 0;
}

/* 1 GiB over HTTP: curl in a fetch-only sandbox through the proxy (the
 * whole attempt, start and cleanup included) against the same curl
 * straight to the server, and through the bare relay, interleaved. */
static void fetch_rows(const struct fetch_where *w, int runs) {
    struct fetch_srv s = {-1};
    struct fetch_start fs = {.srv = &s};
    if (inet_pton(AF_INET, w->server_ip, &fs.addr) != 1 || in_netns(w->server_ns, start_server, &fs) < 0)
        die("fetch server", NULL);
    unsigned port = fs.port;
    char url[96];
    snprintf(url, sizeof(url), "http://%s:%u/", w->server_ip, port);
    fy_policy *p = NULL;
    fy_error *e = NULL;
    if (fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e) < 0 ||
        fy_policy_add_destination(p, w->server_ip, FY_PROTO_TCP, port, port, &e) < 0 ||
        fy_policy_set_network(p, FY_NET_FETCH_ONLY, &e) < 0 ||
        (w->uplink && fy_policy_set_network_host(p, FY_NETHOST_UPLINK, w->uplink, &e) < 0))
        die("fetch-only policy", e);
    const char *argv_fetch[] = {"/usr/bin/curl", "-sSf", "-o", "/dev/null", url, NULL};
    char *argv_direct[] = {"/usr/bin/curl", "-sSf", "--noproxy", "*", "-o", "/dev/null", url, NULL};
    /* the floor: the same download through the bare splice relay */
    struct relay rl = {-1, fs.addr, port};
    struct fetch_start rs = {.rl = &rl};
    if (in_netns(w->client_ns, start_relay, &rs) < 0)
        die("relay", NULL);
    char url_relay[64];
    snprintf(url_relay, sizeof(url_relay), "http://127.0.0.1:%u/", rs.port);
    char *argv_relay[] = {"/usr/bin/curl", "-sSf", "--noproxy", "*", "-o", "/dev/null", url_relay, NULL};
    /* The download's share of an attempt: the same attempt fetching nothing
     * (curl of a URL no destination allows: the proxy's 403) is taken off. */
    char url_none[96];
    snprintf(url_none, sizeof(url_none), "http://%s:%u/", w->server_ip, port == 65535 ? 1 : port + 1);
    const char *argv_none[] = {"/usr/bin/curl", "-sS", "-o", "/dev/null", url_none, NULL};
    uint64_t *t_proxy = calloc((size_t)runs, 8), *t_direct = calloc((size_t)runs, 8), *t_none = calloc((size_t)runs, 8),
             *t_relay = calloc((size_t)runs, 8);
    for (int i = 0; i < runs; i++) {
        uint64_t t0 = now_ns();
        if (spawn_wait_in(w->client_ns, argv_direct) != 0)
            die("curl (direct)", NULL);
        t_direct[i] = now_ns() - t0;
        t0 = now_ns();
        if (spawn_wait_in(w->client_ns, argv_relay) != 0)
            die("curl (relay)", NULL);
        t_relay[i] = now_ns() - t0;
        t_proxy[i] = lifecycle_ns(p, argv_fetch);
        t_none[i] = lifecycle_ns(p, argv_none);
    }
    double mp = median_ms(t_proxy, runs), md = median_ms(t_direct, runs), mn = median_ms(t_none, runs);
    printf("  %s\n", w->label);
    printf("  %-40s %9.3f ms   %.0f MiB/s; direct %.3f ms (%.0f MiB/s): %.2fx (target >= 0.80x)\n",
           "fetch-only: 1 GiB through the proxy", mp, 1024 / (mp / 1000), md, 1024 / (md / 1000), md / mp);
    printf("  %-40s %9.3f ms   %.0f MiB/s: %.2fx direct (the attempt without a download, %.3f ms, taken off)\n",
           "fetch-only: the download alone", mp - mn, 1024 / ((mp - mn) / 1000), md / (mp - mn), mn);
    double mr = median_ms(t_relay, runs);
    printf("  %-40s %9.3f ms   %.0f MiB/s: %.2fx direct; the proxy's download alone %.2fx this floor's speed\n",
           "  the floor: a bare splice relay, no sandbox", mr, 1024 / (mr / 1000), md / mr, mr / (mp - mn));
    free(t_relay);
    close(rl.lfd); /* (the relay thread ends at its next accept) */
    free(t_proxy);
    free(t_direct);
    free(t_none);
    fy_policy_free(p);
    close(s.fd); /* (the server thread ends at its next accept) */
}

/* The fake internet of issue 13, as root: a namespace of ours holding the
 * server at 198.51.100.1 behind a veth from a second namespace of ours,
 * the uplink (198.51.100.2), where the direct curl and the relay run and
 * from which the proxy connects. Nothing in the host's namespace. */
static char fetch_ns[2][64];
static pid_t fetch_ns_owner;
static void fetch_ns_del(void) {
    for (int i = 0; i < 2 && getpid() == fetch_ns_owner; i++) /* (not in a forked child that exits) */
        if (fetch_ns[i][0]) {
            char *del[] = {"/usr/sbin/ip", "netns", "del", fetch_ns[i], NULL};
            spawn_wait(del);
            fetch_ns[i][0] = '\0';
        }
}
static void fetch_rows_veth(int runs) {
    if (getuid() != 0 || access("/usr/sbin/ip", X_OK) != 0) {
        printf("  fetch-only from the fake internet: needs root and ip(8): no row\n");
        return;
    }
    char *up = fetch_ns[0], *net = fetch_ns[1], up_path[128], net_path[128];
    snprintf(up, sizeof(fetch_ns[0]), "fy-bench-up-%d", (int)getpid());
    snprintf(net, sizeof(fetch_ns[1]), "fy-bench-inet-%d", (int)getpid());
    fetch_ns_owner = getpid();
    atexit(fetch_ns_del); /* (also when a row dies half-way) */
    snprintf(up_path, sizeof(up_path), "/run/netns/%s", up);
    snprintf(net_path, sizeof(net_path), "/run/netns/%s", net);
    char *cmds[][16] = {
        {"/usr/sbin/ip", "netns", "add", up, NULL},
        {"/usr/sbin/ip", "netns", "add", net, NULL},
        {"/usr/sbin/ip", "-n", up, "link", "set", "lo", "up", NULL},
        {"/usr/sbin/ip", "-n", net, "link", "set", "lo", "up", NULL},
        {"/usr/sbin/ip", "-n", up, "link", "add", "u0", "type", "veth", "peer", "name", "i0", "netns", net, NULL},
        {"/usr/sbin/ip", "-n", up, "addr", "add", "198.51.100.2/24", "dev", "u0", NULL},
        {"/usr/sbin/ip", "-n", net, "addr", "add", "198.51.100.1/24", "dev", "i0", NULL},
        {"/usr/sbin/ip", "-n", up, "link", "set", "u0", "up", NULL},
        {"/usr/sbin/ip", "-n", net, "link", "set", "i0", "up", NULL},
    };
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof(cmds) / sizeof(cmds[0]); i++)
        ok = spawn_wait(cmds[i]) == 0;
    int up_fd = ok ? open(up_path, O_RDONLY | O_CLOEXEC) : -1, net_fd = ok ? open(net_path, O_RDONLY | O_CLOEXEC) : -1;
    if (up_fd >= 0 && net_fd >= 0) {
        struct fetch_where w = {"from the fake internet: a veth between two namespaces of ours (server 198.51.100.1)",
                                "198.51.100.1", up_path, net_fd, up_fd};
        fetch_rows(&w, runs);
    } else {
        printf("  fetch-only from the fake internet: could not make its namespaces: no row\n");
    }
    if (up_fd >= 0)
        close(up_fd);
    if (net_fd >= 0)
        close(net_fd);
    fetch_ns_del();
}

static void bench_fetch(int runs) {
    if (access("/usr/bin/curl", X_OK) != 0) {
        printf("  fetch-only: needs curl: no row\n");
        return;
    }
    struct fetch_where lo = {"on this namespace's loopback (server 127.0.0.1)", "127.0.0.1", NULL, -1, -1};
    fetch_rows(&lo, runs);
    fetch_rows_veth(runs);
}

/* The CLI, as CI systems call it per action (whole processes): with the
 * probe snapshot it saves (FORGEYARD_CACHE_DIR, 0700), and with a cache
 * directory it must refuse (0755: a fresh probe every run), against bwrap
 * and the library lifecycle in the same interleaved run. The target: the CLI
 * costs at most 0.10 of a bwrap run more than the library lifecycle. Also
 * alone: fy-bench --cli [RUNS]. */
static void bench_cli(fy_policy *p, const char **argv_true, char **bwrap_argv, int n) {
    const char *bwrap = bwrap_argv ? bwrap_argv[0] : NULL;
    char cli[4096];
    if (cli_path(cli, sizeof(cli))) {
        char cache[600], nocache[600];
        snprintf(cache, sizeof(cache), "%s/cli-cache", workdir);
        snprintf(nocache, sizeof(nocache), "%s/cli-open", workdir);
        if (mkdir(cache, 0700) < 0 || mkdir(nocache, 0700) < 0 || chmod(nocache, 0755) < 0)
            die("mkdir", NULL);
        char *cli_argv[] = {cli, "run", "--profile", "release", "--", "/usr/bin/true", NULL};
        int cn = n < 100 ? n : 100;
        uint64_t *t_cli = calloc((size_t)cn, 8), *t_cold = calloc((size_t)cn, 8), *t_lib = calloc((size_t)cn, 8),
                 *t_bw = calloc((size_t)cn, 8);
        setenv("FORGEYARD_CACHE_DIR", cache, 1);
        spawn_wait(cli_argv); /* saves the snapshot */
        for (int i = 0; i < cn; i++) {
            uint64_t a = now_ns();
            setenv("FORGEYARD_CACHE_DIR", cache, 1);
            if (spawn_wait(cli_argv) != 0)
                die("forgeyard run", NULL);
            uint64_t b = now_ns();
            setenv("FORGEYARD_CACHE_DIR", nocache, 1);
            if (spawn_wait(cli_argv) != 0)
                die("forgeyard run", NULL);
            uint64_t c = now_ns();
            t_lib[i] = lifecycle_ns(p, argv_true);
            uint64_t d = now_ns();
            if (bwrap && spawn_wait(bwrap_argv) != 0)
                die("bwrap", NULL);
            uint64_t e = now_ns();
            t_cli[i] = b - a;
            t_cold[i] = c - b;
            t_bw[i] = e - d;
        }
        unsetenv("FORGEYARD_CACHE_DIR");
        double m_cli = median_ms(t_cli, cn), m_cold = median_ms(t_cold, cn), m_lib = median_ms(t_lib, cn),
               m_bw = bwrap ? median_ms(t_bw, cn) : 0;
        if (m_bw > 0) {
            printf("  %-40s %9.3f ms   ratio to bwrap %.2fx; above the library lifecycle (%.2fx): %.2f of a bwrap "
                   "run (target <= 0.10)\n", "forgeyard run (CLI, saved probe)", m_cli, m_cli / m_bw, m_lib / m_bw,
                   (m_cli - m_lib) / m_bw);
            printf("  %-40s %9.3f ms   ratio to bwrap %.2fx\n", "forgeyard run (CLI, probing each run)", m_cold,
                   m_cold / m_bw);
        } else {
            printf("  %-40s %9.3f ms   probing each run %.3f ms, library lifecycle %.3f ms\n",
                   "forgeyard run (CLI, saved probe)", m_cli, m_cold, m_lib);
        }
        free(t_cli);
        free(t_cold);
        free(t_lib);
        free(t_bw);
    } else {
        printf("  forgeyard CLI not built next to fy-bench (../examples/forgeyard): no CLI rows\n");
    }
}

/* ---- the virtual-machine backend (issue 12) ----
 * Attempts of /bin/true restored from a template (the issue's target: p50
 * <= 179 ms, p99 <= 203 ms under TCG), each a fresh QEMU microvm, with the
 * CPU this process spends on each (QEMU is reaped inside its sandbox and
 * not counted); cold boots to the agent's hello against a bare QEMU booting the
 * same vmlinux and agent initramfs to the same hello (target <= 1.1x); the
 * namespace lifecycle and `runsc --network=none do /bin/true` side by side.
 * The template is made by a first attempt outside the timings. */

static uint64_t cpu_ns_all(void) {
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    uint64_t us = (uint64_t)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) * 1000000u +
                  (uint64_t)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec);
    return us * 1000u;
}

static double loadavg1(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "re");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* The JSON string value of "key" in j (no escapes expected), into buf. */
static int json_str(const char *j, const char *key, char *buf, size_t len) {
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = j ? strstr(j, pat) : NULL;
    if (!p)
        return -1;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p++ != '"')
        return -1;
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < len) {
        buf[i] = p[i];
        i++;
    }
    buf[i] = '\0';
    return 0;
}

static int file_is(const char *dir, const char *name, const char *want) {
    char p[4200], got[80] = "";
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "re");
    if (!f)
        return 0;
    if (!fgets(got, sizeof(got), f))
        got[0] = '\0';
    fclose(f);
    got[strcspn(got, "\n")] = '\0';
    return strcmp(got, want) == 0;
}

/* A bare QEMU (no sandbox, no 9p) booting the cached vmlinux and agent
 * initramfs, from spawn to the agent's hello on the control port. */
static uint64_t bare_boot_ns(const char *kdir, const char *cmdline_in, const char *mem) {
    char k[4200], i[4200], cmdline[1200];
    /* as the library's plan does (vm-plan.c): the host's TSC rate spares
     * the guest its calibration (the template's key leaves it out) */
    double mhz = 0;
    FILE *ci = fopen("/proc/cpuinfo", "re");
    char line[512];
    while (ci && fgets(line, sizeof(line), ci))
        if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
            break;
    if (ci)
        fclose(ci);
    if (mhz > 100)
        snprintf(cmdline, sizeof(cmdline), "%s tsc_early_khz=%lu", cmdline_in, (unsigned long)(mhz * 1000 + 0.5));
    else
        snprintf(cmdline, sizeof(cmdline), "%s", cmdline_in);
    snprintf(k, sizeof(k), "%s/vmlinux", kdir);
    snprintf(i, sizeof(i), "%s/initrd.cpio", kdir);
    char *argv[] = {"/usr/bin/qemu-system-x86_64", "-M", "microvm,acpi=on", "-accel", "tcg,tb-size=64", "-m",
                    (char *)mem, "-smp", "1", "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                    "-kernel", k, "-initrd", i, "-append", (char *)cmdline, "-serial", "null", "-device",
                    "virtio-serial-device", "-chardev", "stdio,id=ctl,signal=off", "-device",
                    "virtserialport,chardev=ctl,name=fy.ctl", NULL};
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 0;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    uint64_t a = now_ns();
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    uint64_t dt = 0;
    if (r == 0) {
        /* the hello frame: a header then "forgeyard-vm-agent 1" */
        char buf[256];
        size_t have = 0;
        struct timeval tv = {.tv_sec = 30};
        setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        while (have < sizeof(buf) - 1) {
            ssize_t n = read(sv[0], buf + have, sizeof(buf) - 1 - have);
            if (n <= 0)
                break;
            have += (size_t)n;
            if (memmem(buf, have, "forgeyard-vm-agent 1", 20)) {
                dt = now_ns() - a;
                break;
            }
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    close(sv[0]);
    return dt;
}

static void bench_vm(fy_policy *p, int n) {
    static const char *const argv_true[] = {"/bin/true", NULL};
    fy_policy *vp = NULL;
    fy_caps *vc = NULL;
    fy_prepared *vpr = NULL, *cold = NULL;
    if (fy_probe(0, &vc, NULL) != 0 || fy_policy_new(FY_PROFILE_HIGH_ASSURANCE, &vp, NULL) != 0 ||
        fy_policy_set_limit(vp, FY_LIMIT_MEMORY, 256u << 20, NULL) != 0 ||
        fy_prepare(vp, vc, argv_true, &vpr, NULL) != 0) {
        printf("  the virtual-machine backend does not run here (QEMU or a guest kernel missing): no VM row\n");
        goto out;
    }
    setenv("FORGEYARD_VM_TEMPLATE", "off", 1);
    int cr = fy_prepare(vp, vc, argv_true, &cold, NULL);
    unsetenv("FORGEYARD_VM_TEMPLATE");
    if (cr < 0)
        die("vm cold prepare", NULL);
    double load0 = loadavg1();
    int cn = n < 5 ? n : 5, tn = n < 100 ? n : 100;
    uint64_t *t_cold = calloc((size_t)cn, 8), *t_cold_hello = calloc((size_t)cn, 8), *t_tm = calloc((size_t)tn, 8),
             *t_ns = calloc((size_t)tn, 8), *t_verify = calloc((size_t)tn, 8), *t_cpu = calloc((size_t)tn, 8),
             *t_bare = calloc((size_t)cn, 8);
    if (!t_cold || !t_cold_hello || !t_tm || !t_ns || !t_verify || !t_cpu || !t_bare)
        die("calloc", NULL);
    uint64_t made_ms = 0;
    int bn = 0;
    char kdir[4200] = "", cmdline[1024] = "", memarg[32] = "";
    /* Pre-started clones (fy_shells_new(3)): one kept ready, refilled
     * after each attempt (a fill returns once the clone's agent answered,
     * restored and warmed up; a runner refills while it waits for work);
     * the attempt timed from the claim, the fill apart. */
    fy_shells *vsh = NULL;
    fy_error *she = NULL;
    uint64_t *t_cl = calloc((size_t)tn, 8), *t_fill = calloc((size_t)tn, 8);
    int cln = 0;
    char cl_why[256] = "";
    if (!t_cl || !t_fill)
        die("calloc", NULL);
    if (fy_shells_new(vpr, 1, 60 * 1000000ull, &vsh, &she) < 0) {
        snprintf(cl_why, sizeof(cl_why), "%s", fy_error_message(she));
        fy_error_free(she);
        vsh = NULL;
    }
    for (int i = -1; i < tn + cn; i++) {
        bool is_cold = i >= tn;
        uint64_t c0 = cpu_ns_all(), a = now_ns();
        fy_handle *h = NULL;
        fy_result *r = NULL;
        fy_error *e = NULL;
        if (fy_start(is_cold ? cold : vpr, &h, &e) < 0 || fy_handle_wait(h, FY_UNLIMITED, &r, &e) != 1 ||
            fy_result_outcome(r) != FY_OUTCOME_SUCCEEDED)
            die("vm attempt", e);
        uint64_t dt = now_ns() - a, dc = cpu_ns_all() - c0;
        char *j = NULL;
        fy_result_to_json(r, &j, NULL);
        if (i < 0)
            made_ms = dt / 1000000;
        if (!kdir[0] && !is_cold) {
            /* the kernel, initramfs and command line the template booted */
            char vsha[80], isha[80], inputs[2048];
            const char *cm = j ? strstr(j, "\\ncmdline ") : NULL;
            if (cm && json_str(j, "vmlinux_sha256", vsha, sizeof(vsha)) == 0 &&
                json_str(j, "initramfs_sha256", isha, sizeof(isha)) == 0 &&
                json_str(j, "inputs", inputs, sizeof(inputs)) == 0) {
                cm += 10;
                size_t l = 0;
                while (cm[l] && cm[l] != '\\' && l + 1 < sizeof(cmdline))
                    l++;
                memcpy(cmdline, cm, l);
                cmdline[l] = '\0';
                const char *mm = strstr(inputs, " memory=");
                if (mm)
                    sscanf(mm + 8, "%31[0-9M]", memarg);
                const char *root = "/var/cache/forgeyard/vm";
                DIR *d = getuid() == 0 ? opendir(root) : NULL;
                struct dirent *de;
                while (d && (de = readdir(d))) {
                    char kd[4200];
                    snprintf(kd, sizeof(kd), "%s/%s", root, de->d_name);
                    if (!strncmp(de->d_name, "kernel-", 7) && file_is(kd, "vmlinux.sha256", vsha) &&
                        file_is(kd, "initrd.sha256", isha)) {
                        snprintf(kdir, sizeof(kdir), "%s", kd);
                        break;
                    }
                }
                if (d)
                    closedir(d);
            }
        }
        if (i < 0) {
        } else if (is_cold) {
            t_cold[i - tn] = dt;
            uint64_t s1 = 0, s2 = 0;
            fy_result_stage_usec(r, FY_STAGE_ISOLATION, &s1);
            fy_result_stage_usec(r, FY_STAGE_FILESYSTEM, &s2);
            t_cold_hello[i - tn] = (s1 + s2) * 1000;
        } else {
            t_tm[i] = dt;
            t_cpu[i] = dc;
            const char *v = j ? strstr(j, "\"verify_usec\":") : NULL;
            t_verify[i] = v ? strtoull(v + 14, NULL, 10) * 1000 : 0;
        }
        fy_free(j);
        fy_result_free(r);
        fy_handle_free(h);
        if (i >= 0 && !is_cold)
            t_ns[i] = lifecycle_ns(p, argv_true);
        /* each cold boot and a bare one side by side: the same host state */
        if (is_cold && kdir[0] && cmdline[0] && memarg[0] && (t_bare[bn] = bare_boot_ns(kdir, cmdline, memarg)))
            bn++;
        if (i >= 0 && !is_cold && vsh) {
            uint64_t f0 = now_ns();
            fy_error *fe = NULL;
            if (fy_shells_fill(vsh, &fe) != 1) {
                snprintf(cl_why, sizeof(cl_why), "fill: %s", fe ? fy_error_message(fe) : "no clone");
                fy_error_free(fe);
                fy_shells_free(vsh);
                vsh = NULL;
                continue;
            }
            t_fill[cln] = now_ns() - f0;
            uint64_t c = now_ns();
            fy_handle *ch = NULL;
            fy_result *cr2 = NULL;
            if (fy_start_shell(vpr, vsh, &ch, &fe) < 0 || fy_handle_wait(ch, FY_UNLIMITED, &cr2, &fe) != 1 ||
                fy_result_outcome(cr2) != FY_OUTCOME_SUCCEEDED || fy_result_prestarted(cr2) != 1)
                die("vm attempt in a clone", fe);
            t_cl[cln++] = now_ns() - c;
            fy_result_free(cr2);
            fy_handle_free(ch);
        }
    }
    if (vsh)
        fy_shells_free(vsh);
    double m_ns = median_ms(t_ns, tn), m_cold = median_ms(t_cold, cn), m_cold_hello = median_ms(t_cold_hello, cn);
    double p50 = median_ms(t_tm, tn); /* sorts t_tm */
    double p99 = t_tm[(size_t)((tn - 1) * 99 / 100)] / 1e6, pmin = t_tm[0] / 1e6, pmax = t_tm[tn - 1] / 1e6;
    double cpu50 = median_ms(t_cpu, tn);
    const char *acc = fy_caps_has(vc, FY_CAP_KVM) == 1 ? "kvm" : "tcg";
    printf("  %-40s %9.3f ms   p99 %.3f ms over %d (%s; min %.0f, max %.0f; target p50 <= 179 ms, p99 <= 203 ms: %s);\n"
           "  %-40s              CPU of this process per attempt %.0f ms (p50; QEMU's is not counted here);\n"
           "  %-40s              %.1fx faster than a cold boot (%.3f ms, p50 of %d), %.1fx the namespace\n"
           "  %-40s              lifecycle (%.3f ms); digest check of the state %.0f ms (p50);\n"
           "  %-40s              making the template took %llu ms (once)\n",
           "vm-qemu attempt from a template (p50)", p50, p99, tn, acc, pmin, pmax,
           p50 <= 179 && p99 <= 203 ? "met" : "missed", "", cpu50, "", m_cold / p50, m_cold, cn, p50 / m_ns, "",
           m_ns, median_ms(t_verify, tn), "", (unsigned long long)made_ms);
    if (cln) {
        double c50 = median_ms(t_cl, cln); /* sorts t_cl */
        double c99 = t_cl[(size_t)((cln - 1) * 99 / 100)] / 1e6;
        printf("  %-40s %9.3f ms   p99 %.3f ms over %d (min %.0f, max %.0f; target p50 <= 179 ms, p99 <= 203 ms\n"
               "  %-40s              from the claim: %s); making one (fy_shells_fill) %.0f ms (p50), off the attempt\n",
               "vm-qemu attempt in a pre-started clone", c50, c99, cln, t_cl[0] / 1e6, t_cl[cln - 1] / 1e6, "",
               c50 <= 179 && c99 <= 203 ? "met" : "missed", median_ms(t_fill, cln));
    } else {
        printf("  no pre-started clone row: %s\n", cl_why[0] ? cl_why : "?");
    }
    free(t_cl);
    free(t_fill);
    if (bn) {
        double bare = median_ms(t_bare, bn);
        printf("  %-40s %9.3f ms   bare qemu -M microvm PVH boot of the same vmlinux and initramfs to the\n"
               "  %-40s              agent's hello %.3f ms (p50 of %d): %.2fx (target <= 1.1x: %s)\n",
               "vm-qemu cold boot to the agent's hello", m_cold_hello, "", bare, bn, m_cold_hello / bare,
               m_cold_hello / bare <= 1.1 ? "met" : "missed");
    } else {
        printf("  no bare QEMU boot row (root's kernel cache not found: dir \"%s\" cmdline \"%s\" memory \"%s\")\n",
               kdir, cmdline, memarg);
    }
    const char *runsc = access("/usr/bin/runsc", X_OK) == 0 ? "/usr/bin/runsc"
                        : access("/usr/sbin/runsc", X_OK) == 0 ? "/usr/sbin/runsc" : NULL;
    if (runsc && getuid() == 0) {
        int rn = n < 20 ? n : 20, ok = 0;
        uint64_t *t_rs = calloc((size_t)rn, 8);
        char *rs_argv[] = {(char *)runsc, "--network=none", "do", "/bin/true", NULL};
        for (int i = 0; t_rs && i < rn; i++) {
            uint64_t a = now_ns();
            if (spawn_wait(rs_argv) == 0)
                t_rs[ok++] = now_ns() - a;
        }
        if (ok) {
            double rs = median_ms(t_rs, ok);
            printf("  %-40s %9.3f ms   (p50 of %d): the VM attempt from a template is %.2fx runsc, the namespace\n"
                   "  %-40s              lifecycle %.3fx runsc\n",
                   "runsc --network=none do /bin/true", rs, ok, p50 / rs, "", m_ns / rs);
        } else {
            printf("  runsc --network=none do /bin/true failed here: no gVisor row\n");
        }
        free(t_rs);
    } else {
        printf("  runsc not installed (Debian: runsc) or not root: no gVisor row\n");
    }
    printf("  %-40s              load average %.2f before the VM rows, %.2f after\n", "", load0, loadavg1());
    free(t_cold); free(t_cold_hello); free(t_tm); free(t_ns); free(t_verify); free(t_cpu); free(t_bare);
out:
    fy_prepared_free(cold);
    fy_prepared_free(vpr);
    fy_policy_free(vp);
    fy_caps_free(vc);
}

/* ---- vm-qemu under network restricted (root): from its template vs cold ---- */

/* One VM attempt of pr, its wall time; boot: whether isolation.boot began
 * with want (a row that is not what it says dies). */
static uint64_t vm_attempt_ns(fy_prepared *pr, const char *want) {
    fy_handle *h = NULL;
    fy_result *r = NULL;
    fy_error *e = NULL;
    uint64_t a = now_ns();
    if (fy_start(pr, &h, &e) < 0 || fy_handle_wait(h, FY_UNLIMITED, &r, &e) != 1 ||
        fy_result_outcome(r) != FY_OUTCOME_SUCCEEDED)
        die("vm attempt", e);
    uint64_t dt = now_ns() - a;
    char *j = NULL, boot[64] = "";
    fy_result_to_json(r, &j, NULL);
    const char *b = j ? strstr(j, "\"boot\":") : NULL;
    if (b) {
        b += 7;
        while (*b == ' ' || *b == '"')
            b++;
        snprintf(boot, sizeof(boot), "%s", b);
    }
    if (strncmp(boot, want, strlen(want)) != 0) {
        fprintf(stderr, "fy-bench: a VM row booted \"%.40s\", not \"%s\"\n", boot, want);
        exit(1);
    }
    fy_free(j);
    fy_result_free(r);
    fy_handle_free(h);
    return dt;
}

/* The uplink namespace of --vm-restricted, removed at exit too (a row that
 * dies on the way must not leave it). */
static char vm_uplink_ns[64];
static pid_t vm_uplink_owner;

static void vm_uplink_ns_del(void) {
    if (!vm_uplink_ns[0] || getpid() != vm_uplink_owner)
        return; /* (not in a forked child that exits) */
    char *del[] = {"/usr/sbin/ip", "netns", "del", vm_uplink_ns, NULL};
    spawn_wait(del);
    vm_uplink_ns[0] = '\0';
}

/* fy-bench --vm-restricted [RUNS]: /bin/true in vm-qemu under restricted
 * (the uplink a namespace of ours), restored from its template and booted
 * cold, with a deny attempt from its template, interleaved in rotating
 * order. */
static void bench_vm_restricted(int runs) {
    if (getuid() != 0 || access("/usr/sbin/ip", X_OK) != 0) {
        printf("  vm restricted: needs root and ip(8): no row\n");
        return;
    }
    static const char *const argv_true[] = {"/bin/true", NULL};
    char name[64], path[128];
    snprintf(name, sizeof(name), "fy-bench-vm-%d", (int)getpid());
    snprintf(path, sizeof(path), "/run/netns/%s", name);
    snprintf(vm_uplink_ns, sizeof(vm_uplink_ns), "%s", name);
    vm_uplink_owner = getpid();
    atexit(vm_uplink_ns_del);
    char *add[] = {"/usr/sbin/ip", "netns", "add", name, NULL};
    char *lo[] = {"/usr/sbin/ip", "-n", name, "link", "set", "lo", "up", NULL};
    char *addr[] = {"/usr/sbin/ip", "-n", name, "addr", "add", "198.51.100.1/24", "dev", "lo", NULL};
    if (spawn_wait(add) != 0 || spawn_wait(lo) != 0 || spawn_wait(addr) != 0) {
        printf("  vm restricted: could not make the uplink namespace: no row\n");
        vm_uplink_ns_del();
        return;
    }
    fy_caps *vc = NULL;
    fy_policy *dp = NULL, *rp = NULL;
    fy_prepared *deny = NULL, *tm = NULL, *cold = NULL;
    fy_error *e = NULL;
    if (fy_probe(0, &vc, NULL) != 0 || fy_policy_new(FY_PROFILE_STANDARD_CI, &dp, NULL) != 0 ||
        fy_policy_set_isolation(dp, FY_LEVEL_VIRTUAL_MACHINE, FY_LEVEL_VIRTUAL_MACHINE, NULL) != 0 ||
        fy_policy_set_limit(dp, FY_LIMIT_MEMORY, 256u << 20, NULL) != 0 ||
        fy_prepare(dp, vc, argv_true, &deny, NULL) != 0) {
        printf("  vm restricted: the virtual-machine backend does not run here: no row\n");
        goto out;
    }
    /* (high-assurance denies networks: standard-ci with the VM level required) */
    if (fy_policy_new(FY_PROFILE_STANDARD_CI, &rp, &e) < 0 ||
        fy_policy_set_isolation(rp, FY_LEVEL_VIRTUAL_MACHINE, FY_LEVEL_VIRTUAL_MACHINE, &e) < 0 ||
        fy_policy_set_limit(rp, FY_LIMIT_MEMORY, 256u << 20, &e) < 0 ||
        fy_policy_add_destination(rp, "198.51.100.1", FY_PROTO_TCP, 80, 80, &e) < 0 ||
        fy_policy_set_network(rp, FY_NET_RESTRICTED, &e) < 0 ||
        fy_policy_set_network_host(rp, FY_NETHOST_UPLINK, path, &e) < 0 || fy_prepare(rp, vc, argv_true, &tm, &e) < 0) {
        vm_uplink_ns_del();
        die("vm restricted policy", e);
    }
    setenv("FORGEYARD_VM_TEMPLATE", "off", 1);
    int cr = fy_prepare(rp, vc, argv_true, &cold, &e);
    unsetenv("FORGEYARD_VM_TEMPLATE");
    if (cr < 0) {
        vm_uplink_ns_del();
        die("vm restricted cold prepare", e);
    }
    /* the templates made outside the count */
    uint64_t made_r = vm_attempt_ns(tm, "template restore"), made_d = vm_attempt_ns(deny, "template restore");
    uint64_t *t_tm = calloc((size_t)runs, 8), *t_cold = calloc((size_t)runs, 8), *t_deny = calloc((size_t)runs, 8);
    if (!t_tm || !t_cold || !t_deny)
        die("calloc", NULL);
    double load0 = loadavg1();
    /* a fourth row: restricted in a pre-started clone, refilled before
     * each attempt (the fill returns once it is ready), timed from the
     * claim */
    fy_shells *rsh = NULL;
    uint64_t *t_cl = calloc((size_t)runs, 8);
    int cln = 0;
    if (!t_cl || fy_shells_new(tm, 1, 60 * 1000000ull, &rsh, NULL) < 0)
        rsh = NULL;
    for (int i = 0; i < runs; i++)
        for (int k = 0; k < 4; k++) {
            int row = (i + k) % 4;
            if (row == 0)
                t_tm[i] = vm_attempt_ns(tm, "template restore");
            else if (row == 1)
                t_cold[i] = vm_attempt_ns(cold, "cold boot");
            else if (row == 2)
                t_deny[i] = vm_attempt_ns(deny, "template restore");
            else if (rsh && fy_shells_fill(rsh, NULL) == 1) {
                fy_handle *ch = NULL;
                fy_result *cres = NULL;
                uint64_t a = now_ns();
                if (fy_start_shell(tm, rsh, &ch, &e) < 0 || fy_handle_wait(ch, FY_UNLIMITED, &cres, &e) != 1 ||
                    fy_result_outcome(cres) != FY_OUTCOME_SUCCEEDED || fy_result_prestarted(cres) != 1)
                    die("vm restricted attempt in a clone", e);
                t_cl[cln++] = now_ns() - a;
                fy_result_free(cres);
                fy_handle_free(ch);
            }
        }
    fy_shells_free(rsh);
    double load1 = loadavg1();
    if (cln) {
        double mc = median_ms(t_cl, cln);
        printf("  %-40s %9.3f ms   min %.0f, max %.0f over %d, from the claim (fill apart)\n",
               "vm-qemu restricted in a pre-started clone", mc, t_cl[0] / 1e6, t_cl[cln - 1] / 1e6, cln);
    } else {
        printf("  no restricted clone row (fy_shells refused or failed)\n");
    }
    free(t_cl);
    double m_tm = median_ms(t_tm, runs), m_cold = median_ms(t_cold, runs), m_deny = median_ms(t_deny, runs);
    printf("  %-40s %9.3f ms   min %.0f, max %.0f over %d; cold boot %.3f ms (min %.0f, max %.0f): %.1fx faster;\n"
           "  %-40s              a deny attempt from its template %.3f ms: %.2fx; templates made in %llu / %llu ms\n"
           "  %-40s              (restricted / deny, once); load %.1f -> %.1f\n",
           "vm-qemu restricted from its template", m_tm, t_tm[0] / 1e6, t_tm[runs - 1] / 1e6, runs, m_cold,
           t_cold[0] / 1e6, t_cold[runs - 1] / 1e6, m_cold / m_tm, "", m_deny, m_tm / m_deny,
           (unsigned long long)(made_r / 1000000), (unsigned long long)(made_d / 1000000), "", load0, load1);
    free(t_tm);
    free(t_cold);
    free(t_deny);
out:
    vm_uplink_ns_del();
    fy_prepared_free(deny);
    fy_prepared_free(tm);
    fy_prepared_free(cold);
    fy_policy_free(dp);
    fy_policy_free(rp);
    fy_caps_free(vc);
}

/* ---- fy-bench --tput [RUNS] [ROUNDS]: only the rows of issue 18 ----
 *
 * RUNS interleaved lifecycles (cold, in a pre-started shell refilled between
 * attempts, bwrap), then ROUNDS alternations of the throughput row (1,000
 * attempts at concurrency 4, forgeyard then bwrap), each with the load, the
 * CPU of this process and its reaped children per attempt, and how busy the
 * machine's CPUs were (from /proc/stat, kernel workers included). */

static void cpu_stat(uint64_t *busy, uint64_t *total) {
    unsigned long long v[10] = {0};
    FILE *f = fopen("/proc/stat", "re");
    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 8)
        memset(v, 0, sizeof(v));
    if (f)
        fclose(f);
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    *busy = *total - v[3] - v[4];
}

static void bench_tput(char **bwrap_argv, int n, int rounds) {
    fy_policy *p = release_policy();
    const char *argv_true[] = {"/bin/true", NULL};
    fy_prepared *shared = NULL;
    fy_shells *shells = NULL;
    fy_error *e = NULL;
    if (fy_prepare(p, NULL, argv_true, &shared, &e) < 0)
        die("fy_prepare", e);
    if (fy_shells_new(shared, 1, 60000000, &shells, &e) < 0 || fy_shells_fill(shells, &e) < 0) {
        fprintf(stderr, "fy-bench: no pre-started shells here: %s\n", fy_error_message(e));
        fy_shells_free(shells);
        shells = NULL;
    }
    uint64_t *t_life = calloc((size_t)n + 1, 8), *t_shell = calloc((size_t)n + 1, 8), *t_bw = calloc((size_t)n + 1, 8);
    double l0 = loadavg1();
    for (int i = 0; i < n; i++) {
        t_life[i] = lifecycle_ns(p, argv_true);
        if (shells)
            t_shell[i] = shell_lifecycle_ns(p, argv_true, shells, false);
        uint64_t t0 = now_ns();
        if (bwrap_argv && spawn_wait(bwrap_argv) != 0)
            die("bwrap", NULL);
        t_bw[i] = now_ns() - t0;
    }
    double life = n ? median_ms(t_life, n) : 0, bw = bwrap_argv && n ? median_ms(t_bw, n) : 0;
    if (n) {
        printf("  %-40s %9.3f ms   load %.2f -> %.2f\n", "bwrap (strict flags)", bw, l0, loadavg1());
        printf("  %-40s %9.3f ms   ratio to bwrap %.2fx (target <= 0.75x)\n", "forgeyard lifecycle (release)", life,
               bw > 0 ? life / bw : 0);
    }
    if (shells && n) {
        double sh = median_ms(t_shell, n);
        printf("  %-40s %9.3f ms   ratio to bwrap %.2fx (target <= 0.50x)\n", "lifecycle, pre-started shell", sh,
               bw > 0 ? sh / bw : 0);
    }
    fy_shells_free(shells);
    /* For the throughput in shells: a set of 4 (one per runner thread). */
    shells = NULL;
    if (fy_shells_new(shared, 4, 60000000, &shells, &e) < 0) {
        fy_error_free(e);
        e = NULL;
        shells = NULL;
    }
    free(t_life);
    free(t_shell);
    free(t_bw);
    for (int r = 0; r < rounds; r++) {
        double rate[3] = {0, 0, 0}, cpu[3] = {0, 0, 0}, used[3] = {0, 0, 0}, la = loadavg1();
        int pre = 0;
        /* FY_BENCH_PEER=forgeyard, shells or bwrap: that peer's rounds only
         * (for a profiler wrapped around this process). */
        const char *only = getenv("FY_BENCH_PEER");
        static const char *const peer[] = {"forgeyard", "bwrap", "shells"};
        for (int k = 0; k < 3; k++) {
            if ((k == 1 && !bwrap_argv) || (k == 2 && !shells) || (only && strcmp(only, peer[k]) != 0))
                continue;
            uint64_t c0 = cpu_ns_all(), b0, s0, b1, s1;
            cpu_stat(&b0, &s0);
            rate[k] = throughput_in(1000, 4, k == 1 ? bwrap_argv : NULL, k == 2 ? shells : NULL, &pre);
            cpu_stat(&b1, &s1);
            cpu[k] = (double)(cpu_ns_all() - c0) / 1e6 / 1000;
            used[k] = s1 > s0 ? (double)(b1 - b0) / (double)(s1 - s0) : 0;
        }
        printf("  throughput round %d: forgeyard %.1f /s (CPU %.2f ms/attempt, CPUs %.0f%% busy), bwrap %.1f /s "
               "(%.2f ms, %.0f%%), ratio %.2fx (target >= 1.5x), load %.2f\n",
               r + 1, rate[0], cpu[0], used[0] * 100, rate[1], cpu[1], used[1] * 100,
               rate[1] > 0 ? rate[0] / rate[1] : 0, la);
        if (shells)
            printf("    in pre-started shells (4, refilled by a fifth thread): %.1f /s (CPU %.2f ms/attempt, CPUs "
                   "%.0f%% busy, %d of 1000 in a shell), ratio %.2fx bwrap\n",
                   rate[2], cpu[2], used[2] * 100, pre, rate[1] > 0 ? rate[2] / rate[1] : 0);
    }
    fy_shells_free(shells);
    fy_prepared_free(shared);
    fy_policy_free(p);
}

/* Named network namespaces (/run/netns/fy-bench-...-PID) that a run
 * killed before its own removal left: removed when that PID is gone. A
 * signal handler could not run ip(8) safely, and SIGKILL runs none, so
 * every run sweeps for the ones before it. */
static void sweep_dead_runs(void) {
    DIR *d = getuid() == 0 ? opendir("/run/netns") : NULL;
    if (!d)
        return;
    struct dirent *de;
    int removed = 0;
    while ((de = readdir(d))) {
        const char *dash = strrchr(de->d_name, '-');
        char *end = NULL;
        long pid = dash ? strtol(dash + 1, &end, 10) : 0;
        if (strncmp(de->d_name, "fy-bench-", 9) != 0 || !end || *end || pid <= 0 || pid == getpid() ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char *del[] = {"/usr/sbin/ip", "netns", "del", de->d_name, NULL};
        removed += spawn_wait(del) == 0;
    }
    closedir(d);
    if (removed)
        printf("(removed %d network namespace(s) left by killed fy-bench runs)\n", removed);
}

int main(int argc, char **argv) {
    sweep_dead_runs();
    if (argc > 1 && strcmp(argv[1], "--restricted") == 0) {
        /* The restricted row alone (root): its lifecycle against deny's. */
        if (!mkdtemp(workdir) || chmod(workdir, 0755) < 0)
            die("mkdtemp", NULL);
        atexit(cleanup_dirs);
        bench_restricted(argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 100);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--rootless-row") == 0) {
        /* (bench_restricted runs this as uid 65534 in its namespace) */
        rootless_row(argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 100);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--jobnet") == 0) {
        /* Only the job network rows (root): fy-bench --jobnet [RUNS [HELPER]] */
        if (!mkdtemp(workdir) || chmod(workdir, 0755) < 0)
            die("mkdtemp", NULL);
        atexit(cleanup_dirs);
        int runs = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 30;
        printf("fy-bench --jobnet: %d runs of each, interleaved, medians\n", runs);
        bench_jobnet(runs, argc > 3 ? argv[3] : "/usr/sbin/forgeyard-sandbox-helper");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--jobnet-child") == 0)
        return jobnet_child(); /* (bench_jobnet runs this as uid 65534) */
    if (argc > 1 && strcmp(argv[1], "--fetch") == 0) {
        /* Only the fetch-only row: fy-bench --fetch [RUNS] */
        bench_fetch(argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 5);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--vm-restricted") == 0) {
        /* Only the restricted VM rows (root): fy-bench --vm-restricted [RUNS] */
        bench_vm_restricted(argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 10);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--vm") == 0) {
        /* Only the VM rows: fy-bench --vm [RUNS] */
        fy_policy *p = release_policy();
        bench_vm(p, argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 100);
        fy_policy_free(p);
        return 0;
    }
    bool container_only = argc > 1 && strcmp(argv[1], "--container") == 0;
    bool action_only = argc > 1 && strcmp(argv[1], "--action") == 0;
    bool cli_only = argc > 1 && strcmp(argv[1], "--cli") == 0;
    bool unpack_only = argc > 1 && strcmp(argv[1], "--unpack") == 0;
    bool tput_only = argc > 1 && strcmp(argv[1], "--tput") == 0;
    if (container_only || action_only || cli_only || unpack_only || tput_only) {
        argv++;
        argc--;
    }
    int n = argc > 1 ? atoi(argv[1]) : unpack_only ? UNPACK_RUNS : 200;
    int sleepers = argc > 2 ? atoi(argv[2]) : 200;
    if ((n < 1 && !(tput_only && n == 0 && argc > 1)) || sleepers < 0) {
        fprintf(stderr, "usage: fy-bench [RUNS] [SLEEPERS]\n");
        return 2;
    }
    if (!mkdtemp(workdir))
        die("mkdtemp", NULL);
    atexit(cleanup_dirs);
    /* The sandbox's identity is an unprivileged mapped uid: it must be able
     * to traverse to the source trees. */
    if (chmod(workdir, 0755) < 0)
        die("chmod", NULL);
    const char *bwrap = access("/usr/bin/bwrap", X_OK) == 0 ? "/usr/bin/bwrap" : NULL;
    const char *runc = access("/usr/sbin/runc", X_OK) == 0 ? "/usr/sbin/runc"
                       : access("/usr/bin/runc", X_OK) == 0 ? "/usr/bin/runc" : NULL;
    char bundle[256], runc_state[256];
    if (runc && (getuid() != 0 || runc_setup(runc, bundle, runc_state, sizeof(bundle)) < 0)) {
        fprintf(stderr, "fy-bench: runc needs root and /bin/busybox (busybox-static); skipping it\n");
        runc = NULL;
    }
    if (action_only) {
        printf("fy-bench --action: %d runs each, interleaved, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
        fy_caps *ac = NULL;
        fy_probe(FY_PROBE_NO_VM, &ac, NULL); /* warm the probe cache outside the timings */
        fy_caps_free(ac);
        fy_policy *ap = release_policy();
        bench_actions(ap, n);
        fy_policy_free(ap);
        return 0;
    }
    if (cli_only) {
        printf("fy-bench --cli: %d runs each, interleaved, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
        fy_caps *cc = NULL;
        fy_probe(FY_PROBE_NO_VM, &cc, NULL);
        fy_caps_free(cc);
        fy_policy *cp = release_policy();
        char *bw_argv[] = {(char *)bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr",
                           "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink",
                           "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--cap-drop",
                           "ALL", "/usr/bin/true", NULL};
        const char *at[] = {"/bin/true", NULL};
        bench_cli(cp, at, bwrap ? bw_argv : NULL, n);
        fy_policy_free(cp);
        return 0;
    }
    if (tput_only) {
        printf("fy-bench --tput: %d runs each, interleaved, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
        fy_caps *tc = NULL;
        fy_probe(FY_PROBE_NO_VM, &tc, NULL);
        fy_caps_free(tc);
        char *bw_argv[] = {(char *)bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr",
                           "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink",
                           "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--cap-drop",
                           "ALL", "/usr/bin/true", NULL};
        bench_tput(bwrap ? bw_argv : NULL, n, argc > 2 && sleepers < 50 ? sleepers : 3);
        return 0;
    }
    if (unpack_only) {
        printf("fy-bench --unpack: %d pairs, alternating order, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
        bench_unpack(n);
        return 0;
    }
    if (container_only) {
        printf("fy-bench --container: %d runs each, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
        bench_container(runc, bundle, runc_state, n);
        return 0;
    }
    uint64_t *t_life = calloc((size_t)n, 8), *t_start = calloc((size_t)n, 8), *t_fork = calloc((size_t)n, 8),
             *t_bwrap = calloc((size_t)n, 8), *t_runc = calloc((size_t)n, 8), *t_shell = calloc((size_t)n, 8),
             *t_shell_busy = calloc((size_t)n, 8);
    const char *argv_true[] = {"/bin/true", NULL};
    char *fork_argv[] = {"/usr/bin/true", NULL};
    /* The issue's flags, plus the merged-/usr symlinks the dynamic loader needs. */
    char *bwrap_argv[] = {(char *)bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr",
                          "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink",
                          "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                          "/usr/bin/true", NULL};
    char runc_id[64];
    char *runc_argv[] = {(char *)runc, "--root", runc_state, "run", "-b", bundle, runc_id, NULL};
    fy_caps *caps = NULL;
    fy_probe(FY_PROBE_NO_VM, &caps, NULL); /* warm the probe cache outside the timings */
    fy_caps_free(caps);
    fy_policy *p = release_policy();
    fy_prepared *shared = NULL;
    if (fy_prepare(p, NULL, argv_true, &shared, NULL) < 0)
        return 1;
    /* Pre-started shells (fy_shells_new): one kept ready, refilled by each
     * attempt while it runs. */
    fy_shells *shells = NULL;
    fy_error *se = NULL;
    if (fy_shells_new(shared, 1, 60000000, &shells, &se) < 0 || fy_shells_fill(shells, &se) < 0) {
        fprintf(stderr, "fy-bench: no pre-started shells here: %s\n", fy_error_message(se));
        fy_shells_free(shells);
        shells = NULL;
    }
    /* Interleave the contenders so that drift hits all of them alike. */
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        fy_prepared *pr = NULL;
        if (fy_prepare(p, NULL, argv_true, &pr, NULL) < 0 || run_one(pr) < 0)
            return 1;
        fy_prepared_free(pr);
        uint64_t t1 = now_ns();
        /* The shells right after the cold lifecycle, in the same conditions
         * (not after runc, whose teardown work lingers). */
        if (shells) {
            t_shell[i] = shell_lifecycle_ns(p, argv_true, shells, false);
            t_shell_busy[i] = shell_lifecycle_ns(p, argv_true, shells, true);
        }
        uint64_t t1s = now_ns();
        if (run_one(shared) < 0)
            return 1;
        uint64_t t2 = now_ns();
        if (spawn_wait(fork_argv) != 0)
            return 1;
        uint64_t t3 = now_ns();
        if (bwrap && spawn_wait(bwrap_argv) != 0) {
            fprintf(stderr, "bwrap failed; skipping it\n");
            bwrap = NULL;
        }
        uint64_t t4 = now_ns();
        snprintf(runc_id, sizeof(runc_id), "fy-bench-%d-%d", (int)getpid(), i);
        if (runc && spawn_wait(runc_argv) != 0) {
            fprintf(stderr, "runc failed; skipping it\n");
            runc = NULL;
        }
        uint64_t t5 = now_ns();
        t_life[i] = t1 - t0;
        t_start[i] = t2 - t1s;
        t_fork[i] = t3 - t2;
        t_bwrap[i] = t4 - t3;
        t_runc[i] = t5 - t4;
    }
    double life = median_ms(t_life, n), start = median_ms(t_start, n), fork = median_ms(t_fork, n);
    double bw = bwrap ? median_ms(t_bwrap, n) : 0;
    printf("fy-bench: %d runs each, medians, %s\n", n, getuid() == 0 ? "as root" : "rootless");
    printf("  %-40s %9.3f ms\n", "bare fork+exec /usr/bin/true", fork);
    if (bwrap)
        printf("  %-40s %9.3f ms\n", "bwrap (strict flags)", bw);
    else
        printf("  bwrap not installed: no peer ratios\n");
    if (runc)
        printf("  %-40s %9.3f ms   ratio to bwrap %.2fx\n", "runc run (busybox bundle)", median_ms(t_runc, n),
               bw > 0 ? median_ms(t_runc, n) / bw : 0);
    printf("  %-40s %9.3f ms   ratio to bwrap %.2fx (target <= 0.50x)\n", "forgeyard lifecycle (release)", life,
           bw > 0 ? life / bw : 0);
    printf("  %-40s %9.3f ms   ratio to bwrap %.2fx\n", "forgeyard start+wait (shared plan)", start,
           bw > 0 ? start / bw : 0);
    if (shells) {
        double sh = median_ms(t_shell, n), shb = median_ms(t_shell_busy, n);
        printf("  %-40s %9.3f ms   ratio to bwrap %.2fx (target <= 0.50x)\n", "lifecycle, pre-started shell",
               sh, bw > 0 ? sh / bw : 0);
        printf("  %-40s %9.3f ms   ratio to bwrap %.2fx\n", "  the same, refilled while it runs", shb,
               bw > 0 ? shb / bw : 0);
        uint64_t made = 0, claimed = 0, discarded = 0, left = 0;
        fy_shells_stat(shells, FY_SHELLS_MADE, &made);
        fy_shells_stat(shells, FY_SHELLS_CLAIMED, &claimed);
        fy_shells_stat(shells, FY_SHELLS_DISCARDED, &discarded);
        fy_shells_stat(shells, FY_SHELLS_LEFT, &left);
        printf("  %-40s made %llu, claimed %llu, discarded %llu, left %llu\n", "  shells",
               (unsigned long long)made, (unsigned long long)claimed, (unsigned long long)discarded,
               (unsigned long long)left);
    }

    /* The same after 50 ms of idleness each, as a runner that is not busy
     * sees it: nothing is warm (RCU grace periods, caches, CPU idle states). */
    enum { IDLE_RUNS = 30 };
    uint64_t t_idle_fy[IDLE_RUNS], t_idle_bw[IDLE_RUNS], t_idle_sh[IDLE_RUNS];
    for (int i = 0; i < IDLE_RUNS; i++) {
        usleep(50000);
        uint64_t t0 = now_ns();
        fy_prepared *pr = NULL;
        if (fy_prepare(p, NULL, argv_true, &pr, NULL) < 0 || run_one(pr) < 0)
            return 1;
        fy_prepared_free(pr);
        t_idle_fy[i] = now_ns() - t0;
        usleep(50000);
        t0 = now_ns();
        if (bwrap)
            spawn_wait(bwrap_argv);
        t_idle_bw[i] = now_ns() - t0;
        if (shells) {
            usleep(50000);
            t_idle_sh[i] = shell_lifecycle_ns(p, argv_true, shells, false);
        }
    }
    double idle_fy = median_ms(t_idle_fy, IDLE_RUNS), idle_bw = median_ms(t_idle_bw, IDLE_RUNS);
    if (bwrap)
        printf("  %-40s %9.3f ms   bwrap %.3f ms, ratio %.2fx\n", "lifecycle after 50 ms idle", idle_fy, idle_bw,
               idle_fy / idle_bw);
    else
        printf("  %-40s %9.3f ms\n", "lifecycle after 50 ms idle", idle_fy);
    if (shells) {
        double idle_sh = median_ms(t_idle_sh, IDLE_RUNS);
        printf("  %-40s %9.3f ms   ratio to bwrap %.2fx\n", "  in a pre-started shell", idle_sh,
               idle_bw > 0 ? idle_sh / idle_bw : 0);
    }

    fy_shells_free(shells); /* every shell discarded, witnessed */
    shells = NULL;

    /* Throughput: 1,000 attempts at concurrency 4. */
    double fy_tp = throughput(1000, 4, NULL);
    if (bwrap) {
        double bw_tp = throughput(1000, 4, bwrap_argv);
        printf("  %-40s %9.1f /s   bwrap %.1f /s, ratio %.2fx (target >= 1.5x, 2x long-term)\n",
               "throughput, 1000 attempts, 4 at once", fy_tp, bw_tp, fy_tp / bw_tp);
    } else {
        printf("  %-40s %9.1f /s\n", "throughput, 1000 attempts, 4 at once", fy_tp);
    }

    /* File count: cost must not grow with the source tree. */
    char small[300], big[300];
    snprintf(small, sizeof(small), "%s/src-1", workdir);
    snprintf(big, sizeof(big), "%s/src-25000", workdir);
    make_tree(small, 1);
    make_tree(big, 25000);
    fy_policy *p_small = source_policy(small), *p_big = source_policy(big);
    int fn = n < 100 ? n : 100;
    uint64_t *t_small = calloc((size_t)fn, 8), *t_big = calloc((size_t)fn, 8);
    const char *argv_ls[] = {"/bin/ls", "/work/source", NULL};
    for (int i = 0; i < fn; i++) {
        t_small[i] = lifecycle_ns(p_small, argv_ls);
        t_big[i] = lifecycle_ns(p_big, argv_ls);
    }
    double ms_small = median_ms(t_small, fn), ms_big = median_ms(t_big, fn);
    printf("  %-40s %9.3f ms   1-file tree %.3f ms, ratio %.2f (target <= 1.10)\n",
           "lifecycle, 25,000-file source tree", ms_big, ms_small, ms_big / ms_small);
    fy_policy_free(p_small);
    fy_policy_free(p_big);

    /* Capture: 1 GiB of stdout, three times each, interleaved. */
    enum { CAP_RUNS = 3 };
    uint64_t c_plain[CAP_RUNS], c_file[CAP_RUNS], c_pipe[CAP_RUNS];
    char cap[300];
    snprintf(cap, sizeof(cap), "%s/out", workdir);
    for (int i = 0; i < CAP_RUNS; i++) {
        c_plain[i] = capture_plain(cap);
        c_file[i] = capture_fy(FY_STDIO_FILE, cap);
        c_pipe[i] = capture_fy(FY_STDIO_PIPE, cap);
    }
    double m_plain = median_ms(c_plain, CAP_RUNS), m_file = median_ms(c_file, CAP_RUNS),
           m_pipe = median_ms(c_pipe, CAP_RUNS);
    printf("  %-40s %9.1f MiB/s   (the host drains it into a file)\n", "1 GiB stdout, plain pipe", 1024 / (m_plain / 1e3));
    printf("  %-40s %9.1f MiB/s   ratio %.2fx (target >= 0.80x)\n", "1 GiB stdout, FY_STDIO_FILE capture",
           1024 / (m_file / 1e3), m_plain / m_file);
    printf("  %-40s %9.1f MiB/s   ratio %.2fx\n", "1 GiB stdout, FY_STDIO_PIPE", 1024 / (m_pipe / 1e3),
           m_plain / m_pipe);
    fflush(stdout);

    /* Memory: N sandboxes sleeping at once. */
    const char *argv_sleep[] = {"/bin/sleep", "60", NULL};
    fy_prepared *sleep_plan = NULL;
    if (fy_prepare(p, NULL, argv_sleep, &sleep_plan, NULL) < 0)
        return 1;
    long self_before = read_kb("/proc/self/status", "VmRSS:");
    fy_handle **hs = calloc((size_t)sleepers, sizeof(*hs));
    for (int i = 0; i < sleepers; i++)
        if (fy_start(sleep_plan, &hs[i], NULL) < 0) {
            fprintf(stderr, "could not start sleeper %d\n", i);
            sleepers = i;
            break;
        }
    usleep(1500000); /* let every sandbox reach its workload */
    for (int i = 0; i < sleepers; i++)
        fy_handle_process(hs[i], NULL, NULL);
    /* Sum over every process whose parent chain leads to us, except us. */
    long rss = 0, pss = 0;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ps -o pid= --ppid %d", (int)getpid());
    FILE *ps = popen(cmd, "re");
    int inits = 0;
    char line[64];
    while (ps && fgets(line, sizeof(line), ps)) {
        int pid = atoi(line);
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
        rss += read_kb(path, "Rss:");
        pss += read_kb(path, "Pss:");
        inits++;
        /* the sandbox's workload is the init's child (pid 2 inside) */
        char c2[96];
        snprintf(c2, sizeof(c2), "ps -o pid= --ppid %d", pid);
        FILE *ps2 = popen(c2, "re");
        char l2[64];
        while (ps2 && fgets(l2, sizeof(l2), ps2)) {
            snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", atoi(l2));
            rss += read_kb(path, "Rss:");
            pss += read_kb(path, "Pss:");
        }
        if (ps2)
            pclose(ps2);
    }
    if (ps)
        pclose(ps);
    long self_after = read_kb("/proc/self/status", "VmRSS:");
    printf("  %d sleeping sandboxes (%d inits found): per sandbox RSS %.0f KiB, PSS %.0f KiB; "
           "library process grew %.1f KiB per sandbox\n",
           sleepers, inits, sleepers ? (double)rss / sleepers : 0, sleepers ? (double)pss / sleepers : 0,
           sleepers ? (double)(self_after - self_before) / sleepers : 0);
    for (int i = 0; i < sleepers; i++)
        fy_handle_free(hs[i]);
    fy_prepared_free(sleep_plan);

    /* Host size: the same lifecycle with 1 GiB resident in this process. */
    int hn = n < 50 ? n : 50;
    uint64_t *t_lean = calloc((size_t)hn, 8), *t_fat = calloc((size_t)hn, 8);
    for (int i = 0; i < hn; i++)
        t_lean[i] = lifecycle_ns(p, argv_true);
    size_t ballast_len = (size_t)1 << 30;
    char *ballast = malloc(ballast_len);
    if (ballast) {
        for (size_t off = 0; off < ballast_len; off += 4096)
            ballast[off] = (char)off;
        for (int i = 0; i < hn; i++)
            t_fat[i] = lifecycle_ns(p, argv_true);
        double lean = median_ms(t_lean, hn), fat = median_ms(t_fat, hn);
        printf("  %-40s %9.3f ms   small host %.3f ms, ratio %.2f\n", "lifecycle, host with 1 GiB resident", fat,
               lean, fat / lean);
        free(ballast);
    }
    free(t_lean);
    free(t_fat);

    bench_cli(p, argv_true, bwrap ? bwrap_argv : NULL, n);
    bench_actions(p, n < 30 ? n : 30);

    bench_container(runc, bundle, runc_state, n < 50 ? n : 50);
    bench_restricted(n < 100 ? n : 100);
    bench_fetch(n < 5 ? n : 5);

    bench_vm(p, n);

    fy_prepared_free(shared);
    fy_policy_free(p);
    return 0;
}
