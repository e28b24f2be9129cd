/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Persisted probe snapshots (fy_probe_snapshot): the host settings the
 * Linux probe depends on (its part of the key), and the store: one file per
 * key in a directory that must be the caller's own with mode 0700, each
 * file the caller's with mode 0600, written whole (a temporary name, then
 * rename), read without following symbolic links. A snapshot whose key text
 * is not byte for byte this one is ignored. */
#include <dirent.h>
#include <stdbool.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "linux-backend.h"
#include "linux-helper.h"
#include "linux-probe-util.h"

#define SNAPSHOT_MAX (1u << 20)

/* Appends "label: <first max bytes of path>" (or "label: -" when unreadable). */
static void add_file(struct strbuf *key, const char *label, const char *path, size_t max) {
    char buf[8192];
    if (max > sizeof(buf) - 1)
        max = sizeof(buf) - 1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    ssize_t n = fd >= 0 ? read(fd, buf, max) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0) {
        strbuf_printf(key, "%s: -\n", label);
        return;
    }
    buf[n] = '\0';
    strbuf_printf(key, "%s: %s\n", label, buf);
}

/* Lines of /proc/self/status that say what the caller may do. false when
 * the caller runs under a seccomp filter (or strict mode): what a filter
 * denies is in no file (two processes under one filter each, the same
 * count, may be denied different calls), so such a caller neither reads
 * nor writes a snapshot and probes in its process. */
static bool add_status(struct strbuf *key) {
    bool filtered = false;
    static const char *const fields[] = {"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:",
                                         "CapAmb:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:"};
    FILE *f = fopen("/proc/self/status", "re");
    char line[512];
    while (f && fgets(line, sizeof(line), f))
        for (size_t i = 0; i < FY_ARRAY_SIZE(fields); i++)
            if (strncmp(line, fields[i], strlen(fields[i])) == 0) {
                strbuf_printf(key, "status %s", line);
                filtered |= strcmp(fields[i], "Seccomp:") == 0 && atoi(line + strlen(fields[i])) != 0;
            }
    if (f)
        fclose(f);
    return !filtered;
}

/* The cgroup and tmpfs-relevant mounts (what the cgroup probe reads). */
static void add_mounts(struct strbuf *key) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    while (f && fgets(line, sizeof(line), f)) {
        const char *dash = strstr(line, " - ");
        if (dash && (strncmp(dash + 3, "cgroup", 6) == 0))
            strbuf_printf(key, "mount %s", line);
    }
    if (f)
        fclose(f);
}

static void add_link(struct strbuf *key, const char *label, const char *path) {
    char buf[256];
    ssize_t n = readlink(path, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    strbuf_printf(key, "%s: %s\n", label, n > 0 ? buf : "-");
}

int linux_snapshot_fingerprint(struct strbuf *key) {
    struct utsname u;
    if (util_uname(&u) == 0)
        strbuf_printf(key, "kernel %s %s %s\n", u.release, u.version, u.machine);
    /* This very library file (a rebuild is another library). */
    Dl_info info;
    struct stat st;
    if (dladdr((void *)linux_snapshot_fingerprint, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
        strbuf_printf(key, "library-file %s %llu %lld %lld\n", info.dli_fname, (unsigned long long)st.st_ino,
                      (long long)st.st_size, (long long)st.st_mtime);
    else
        strbuf_printf(key, "library-file -\n");
    add_file(key, "boot", "/proc/sys/kernel/random/boot_id", 64);
    strbuf_printf(key, "ids %u %u %u %u\n", (unsigned)getuid(), (unsigned)geteuid(), (unsigned)getgid(),
                  (unsigned)getegid());
    if (!add_status(key))
        return -1;
    add_link(key, "ns-user", "/proc/self/ns/user");
    add_link(key, "ns-pid", "/proc/self/ns/pid");
    add_link(key, "ns-mnt", "/proc/self/ns/mnt");
    add_link(key, "ns-cgroup", "/proc/self/ns/cgroup");
    add_link(key, "ns-net", "/proc/self/ns/net");
    add_file(key, "cgroup", "/proc/self/cgroup", 4096);
    add_mounts(key);
    add_file(key, "lsm", "/proc/self/attr/current", 256);
    static const char *const sysctls[] = {
        "/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
        "/proc/sys/user/max_net_namespaces", "/proc/sys/user/max_mnt_namespaces", "/proc/sys/user/max_pid_namespaces",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_unconfined", "/proc/sys/kernel/yama/ptrace_scope",
        "/proc/sys/kernel/unprivileged_bpf_disabled", "/proc/sys/kernel/seccomp/actions_avail",
        "/proc/sys/fs/cgroup", "/sys/kernel/security/lsm",
    };
    for (size_t i = 0; i < FY_ARRAY_SIZE(sysctls); i++)
        add_file(key, sysctls[i], sysctls[i], 256);
    long abi = syscall(444 /* landlock_create_ruleset */, NULL, 0, 1u);
    strbuf_printf(key, "landlock %ld %d\n", abi, abi < 0 ? errno : 0); /* (disabled or absent: the reason differs) */
    /* The privileged helper's socket (a restarted helper is a new socket). */
    const char *helper = lx_helper_socket();
    struct stat hst;
    if (lx_helper_stat(helper, &hst) == 0)
        strbuf_printf(key, "helper %s %llu %lld\n", helper, (unsigned long long)hst.st_ino, (long long)hst.st_mtime);
    else
        strbuf_printf(key, "helper %s -\n", helper);
    /* The programs the probes look for: the search directories here, which
     * build of each in the saved file (pu_programs_key). */
    static const char *const programs[] = {"crun", "runc", "nft", "pasta", "bwrap"};
    return pu_programs_key(key, programs, FY_ARRAY_SIZE(programs));
}

/* ---- the store ---- */

static int default_dir(char *buf, size_t len) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (geteuid() == 0) {
        n = snprintf(buf, len, "/run/forgeyard");
    } else if (xdg && xdg[0] == '/') {
        n = snprintf(buf, len, "%s/forgeyard", xdg);
    } else {
        /* No runtime directory (a service user, cron, su): the user's cache
         * directory (util_cache_dir: never one another user made). Keyed by
         * the boot like every snapshot, so surviving a reboot is harmless. */
        char *d = util_cache_dir(NULL, "probe");
        if (!d)
            return FY_E_NOTFOUND;
        n = snprintf(buf, len, "%s", d);
        free(d);
    }
    return n > 0 && (size_t)n < len ? 0 : FY_E_RANGE;
}

/* The directory, made when missing; refused unless it is a directory owned
 * by us with no group or other permission. An fd, or negative. */
static int open_dir(const char *dir, bool create) {
    char def[4096];
    if (!dir) {
        if (default_dir(def, sizeof(def)) < 0)
            return -1;
        dir = def;
    }
    if (create && mkdir(dir, 0700) < 0) {
        if (errno == ENOENT) {
            /* (0700: the XDG base directory specification's mode for ~/.cache) */
            if (util_mkdir_parents(dir, 0700) < 0 || (mkdir(dir, 0700) < 0 && errno != EEXIST))
                return -1;
        } else if (errno != EEXIST) {
            return -1;
        }
    }
    int fd = util_open_own_dir(AT_FDCWD, dir, 0, 077);
    return fd < 0 ? -1 : fd;
}

/* caps-<first 32 hex digits of the key's SHA-256>.json */
static int file_name(const char *key, char *name, size_t len) {
    unsigned char h[crypto_hash_sha256_BYTES];
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    if (sodium_init() < 0)
        return -1;
    crypto_hash_sha256(h, (const unsigned char *)key, strlen(key));
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    return snprintf(name, len, "caps-%.32s.json", hex) < (int)len ? 0 : -1;
}

char *linux_snapshot_load(const char *dir, const char *key, fy_error **reterr) {
    (void)reterr;
    char name[64];
    int dfd = file_name(key, name, sizeof(name)) < 0 ? -1 : open_dir(dir, false);
    if (dfd < 0)
        return NULL;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); /* (a FIFO: refused below) */
    close(dfd);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077))
        buf = util_read_fd(fd, SNAPSHOT_MAX);
    close(fd);
    if (!buf)
        return NULL;
    /* The file is the key, the programs' verify lines, a line "--", then
     * the snapshot. */
    size_t kl = strlen(key);
    char *snap = NULL, *sep = NULL;
    if (strncmp(buf, key, kl) == 0) {
        char *table = buf + kl;
        sep = strncmp(table, "--\n", 3) == 0 ? table : strstr(table, "\n--\n");
        if (sep && sep != table)
            sep++;
        if (sep && pu_programs_verify(key, table, (size_t)(sep - table)))
            snap = util_strdup(sep + 3);
    }
    free(buf);
    return snap;
}

/* Snapshots kept per directory: every library build, kernel and host
 * setting makes a new key and a new file, and nothing else removes the old
 * ones (a developer's rebuilds, a runner's upgrades). Storing one removes
 * the oldest beyond this many, and temporary files a writer that died left
 * over a minute ago. Removing another build's snapshot costs it one probe. */
#define SNAPSHOT_KEEP 8

struct snap_file {
    char name[64];
    struct timespec mtime;
};

static int older_first(const void *a, const void *b) {
    const struct snap_file *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec > y->mtime.tv_nsec;
}

/* n lowercase hex digits at s (what sodium_bin2hex and %02x write). */
static bool lower_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Exactly a name file_name makes: caps-<32 hex>.json (42 characters). */
#define SNAP_NAME_LEN 42
static bool snapshot_name(const char *s, size_t len) {
    return len == SNAP_NAME_LEN && strncmp(s, "caps-", 5) == 0 && lower_hex(s + 5, 32) &&
           strncmp(s + 37, ".json", 5) == 0;
}

/* Exactly a temporary name linux_snapshot_store makes:
 * .<snapshot name>.<16 hex>.tmp (64 characters). */
static bool snapshot_tmp_name(const char *s, size_t len) {
    return len == 1 + SNAP_NAME_LEN + 1 + 16 + 4 && s[0] == '.' && snapshot_name(s + 1, SNAP_NAME_LEN) &&
           s[1 + SNAP_NAME_LEN] == '.' && lower_hex(s + SNAP_NAME_LEN + 2, 16) && strcmp(s + len - 4, ".tmp") == 0;
}

/* Only the names this library writes are its own: the directory may be a
 * cache the caller keeps other files in (FORGEYARD_CACHE_DIR), and a
 * caps-notes.json or .caps-draft.tmp of theirs is never removed. */
static void prune(int dfd, const char *stored) {
    enum { MAX = 1024 }; /* (more are left for the next store) */
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct snap_file *files = d ? calloc(MAX, sizeof(*files)) : NULL;
    if (!files) {
        if (d)
            closedir(d);
        else if (fd >= 0)
            close(fd);
        return;
    }
    size_t n = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct dirent *de;
    while (n < MAX && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        bool snap = snapshot_name(de->d_name, len), tmp = snapshot_tmp_name(de->d_name, len);
        struct stat st;
        if ((!snap && !tmp) || strcmp(de->d_name, stored) == 0 ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (tmp) {
            if (st.st_mtim.tv_sec + 60 < now.tv_sec)
                (void)unlinkat(dfd, de->d_name, 0);
            continue;
        }
        memcpy(files[n].name, de->d_name, len + 1);
        files[n++].mtime = st.st_mtim;
    }
    closedir(d);
    /* The newest SNAPSHOT_KEEP - 1 stay beside the one just stored. */
    if (n > SNAPSHOT_KEEP - 1) {
        qsort(files, n, sizeof(*files), older_first);
        for (size_t i = 0; i < n - (SNAPSHOT_KEEP - 1); i++)
            (void)unlinkat(dfd, files[i].name, 0);
    }
    free(files);
}

int linux_snapshot_store(const char *dir, const char *key, const char *snapshot) {
    char name[64], tmp[96];
    /* Which build of each program, as found now: saved only when none of
     * it, and none of the search directories, changed since shortly before
     * the key was made (else a later load could not tell). */
    struct strbuf table;
    strbuf_init(&table);
    int pr = pu_programs_record(key, &table);
    if (pr != 0) {
        strbuf_free(&table);
        return pr < 0 ? pr : 0; /* a snapshot is an optimisation */
    }
    int dfd = file_name(key, name, sizeof(name)) < 0 ? -1 : open_dir(dir, true);
    if (dfd < 0) {
        strbuf_free(&table);
        return FY_E_DENIED;
    }
    unsigned char rnd[8];
    randombytes_buf(rnd, sizeof(rnd));
    snprintf(tmp, sizeof(tmp), ".%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", name, rnd[0], rnd[1], rnd[2], rnd[3],
             rnd[4], rnd[5], rnd[6], rnd[7]);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int r = fd < 0 ? FY_E_IO : 0;
    const char *parts[] = {key, table.buf ? table.buf : "", "--\n", snapshot};
    for (size_t i = 0; r == 0 && i < FY_ARRAY_SIZE(parts); i++) {
        size_t len = strlen(parts[i]), off = 0;
        while (off < len) {
            ssize_t w = write(fd, parts[i] + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                r = FY_E_IO;
                break;
            }
            off += (size_t)w;
        }
    }
    if (fd >= 0 && close(fd) < 0)
        r = FY_E_IO;
    if (fd >= 0 && (r < 0 || renameat(dfd, tmp, dfd, name) < 0)) {
        unlinkat(dfd, tmp, 0);
        r = FY_E_IO;
    }
    if (r == 0)
        prune(dfd, name);
    close(dfd);
    strbuf_free(&table);
    return r;
}
