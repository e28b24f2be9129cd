/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The guest's images (vm-image.h). The Debian kernel boots fastest as the
 * uncompressed PVH vmlinux (microvm with ACPI on: SeaBIOS, no bzImage
 * decompression under TCG), which is the ELF that the bzImage carries
 * XZ-compressed: found by the XZ magic, decompressed with liblzma, checked
 * for the XEN_ELFNOTE_PHYS32_ENTRY note. Debian builds virtio as modules
 * (and has no virtio-mmio command-line devices), so the initramfs carries
 * the modules the agent loads, in dependency order. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lazy.h"

#include "vm-image.h"

extern const unsigned char vm_agent_blob[];
extern const size_t vm_agent_blob_len;

/* The agent: the embedded one, or (tests of a misbehaving guest) the
 * static program $FORGEYARD_VM_AGENT names. */
struct agent {
    const unsigned char *data;
    size_t len;
    char *owned;
};

static int agent_get(struct agent *a) {
    const char *o = getenv("FORGEYARD_VM_AGENT");
    a->owned = NULL;
    a->data = vm_agent_blob;
    a->len = vm_agent_blob_len;
    if (!o || o[0] != '/')
        return 0;
    int fd = open(o, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return -e;
    }
    a->owned = util_read_fd(fd, 64u << 20);
    close(fd);
    if (!a->owned)
        return -EIO;
    a->data = (const unsigned char *)a->owned;
    a->len = (size_t)st.st_size;
    return 0;
}

/* Loaded in this order by the agent (each after what it needs). */
static const char *const guest_modules[] = {
    "drivers/virtio/virtio_ring.ko", "drivers/virtio/virtio.ko", "drivers/virtio/virtio_mmio.ko",
    "net/core/failover.ko", "drivers/net/net_failover.ko", "drivers/net/virtio_net.ko",
    "drivers/char/virtio_console.ko", "fs/netfs/netfs.ko", "fs/fscache/fscache.ko",
    "net/9p/9pnet.ko", "net/9p/9pnet_virtio.ko", "fs/9p/9p.ko",
};

int vm_cache_root(char *buf, size_t len) {
    char *d = util_cache_dir("FORGEYARD_VM_CACHE", "vm");
    if (!d)
        return errno == EPERM ? FY_E_UNSAFE : FY_E_NOTFOUND;
    int n = snprintf(buf, len, "%s", d);
    free(d);
    return n > 0 && (size_t)n < len ? 0 : FY_E_RANGE;
}

static int mkdirs(const char *path, mode_t mode) {
    int r = util_mkdir_parents(path, 0755);
    return r < 0 ? r : mkdir(path, mode) < 0 && errno != EEXIST ? -errno : 0;
}

static void hex(const unsigned char *h, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[h[i] >> 4];
        out[2 * i + 1] = d[h[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---- cpio newc ---- */

void cpio_begin(struct cpio *c, int fd, void *hash) {
    c->fd = fd;
    c->bytes = 0;
    c->ino = 1000;
    c->uid = c->gid = 0;
    c->mtime = c->mtime_ns = 0;
    c->hash = hash;
    c->err = 0;
}

static void put(struct cpio *c, const void *p, size_t n) {
    const char *b = p;
    c->bytes += n;
    if (c->hash)
        crypto_hash_sha256_update(c->hash, p, n);
    while (n && !c->err && c->fd >= 0) {
        ssize_t w = write(c->fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            c->err = w < 0 ? errno : EIO;
            return;
        }
        b += w;
        n -= (size_t)w;
    }
}

static void pad4(struct cpio *c, uint64_t len) {
    static const char z[4];
    if (len % 4)
        put(c, z, 4 - len % 4);
}

static void header(struct cpio *c, const char *name, uint32_t mode, uint64_t size) {
    char h[111];
    size_t nl = strlen(name) + 1;
    if (size > 0xffffffffu) {
        c->err = EFBIG;
        return;
    }
    snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", c->ino++, mode, c->uid,
             c->gid, 1u, c->mtime, (unsigned)size, 0u, 0u, 0u, 0u, (unsigned)nl, c->mtime_ns);
    put(c, h, 110);
    put(c, name, nl);
    pad4(c, 110 + nl);
}

void cpio_add(struct cpio *c, const char *name, uint32_t mode, const void *data, uint64_t len) {
    header(c, name, mode, len);
    if (len)
        put(c, data, (size_t)len);
    pad4(c, len);
}

void cpio_add_fd(struct cpio *c, const char *name, uint32_t mode, int fd, uint64_t len) {
    header(c, name, mode, len);
    char buf[65536];
    uint64_t left = len;
    while (left && !c->err) {
        ssize_t n = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            c->err = n < 0 ? errno : EIO; /* the file shrank: the archive would lie */
            return;
        }
        put(c, buf, (size_t)n);
        left -= (uint64_t)n;
    }
    pad4(c, len);
}

int cpio_end(struct cpio *c) {
    cpio_add(c, "TRAILER!!!", 0, NULL, 0);
    return c->err ? -c->err : 0;
}

/* ---- the kernel ---- */

/* The newest /boot/vmlinuz-R that has /lib/modules/R (or the override). */
static int find_vmlinuz(char *path, size_t plen, char *release, size_t rlen) {
    const char *o = getenv("FORGEYARD_VM_KERNEL");
    if (o && o[0] == '/') {
        const char *b = strrchr(o, '/') + 1;
        if (strncmp(b, "vmlinuz-", 8) != 0)
            return -EINVAL;
        snprintf(path, plen, "%s", o);
        snprintf(release, rlen, "%s", b + 8);
        return 0;
    }
    DIR *d = opendir("/boot");
    if (!d)
        return -ENOENT;
    struct dirent *e;
    char best[256] = "";
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "vmlinuz-", 8) != 0 || strlen(e->d_name) >= sizeof(best))
            continue;
        char mods[512];
        struct stat st;
        snprintf(mods, sizeof(mods), "/lib/modules/%s/kernel", e->d_name + 8);
        if (stat(mods, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (!best[0] || strverscmp(e->d_name, best) > 0)
            snprintf(best, sizeof(best), "%s", e->d_name);
    }
    closedir(d);
    if (!best[0])
        return -ENOENT;
    snprintf(path, plen, "/boot/%s", best);
    snprintf(release, rlen, "%s", best + 8);
    return 0;
}

/* Whether an ELF64 image carries the PVH entry note (Xen, type 18). */
static bool has_pvh_note(const unsigned char *p, size_t len) {
    if (len < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0 || p[EI_CLASS] != ELFCLASS64)
        return false;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > len ||
        (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
        return false;
    for (size_t i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, p + eh->e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_NOTE || ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
            continue;
        size_t off = ph.p_offset, end = ph.p_offset + ph.p_filesz;
        while (end - off >= 12) {
            uint32_t nsz, dsz, type;
            memcpy(&nsz, p + off, 4);
            memcpy(&dsz, p + off + 4, 4);
            memcpy(&type, p + off + 8, 4);
            size_t adv = 12 + ((nsz + 3u) & ~3u) + ((dsz + 3u) & ~3u);
            if (adv > end - off)
                break;
            if (nsz == 4 && memcmp(p + off + 12, "Xen", 4) == 0 && type == 18)
                return true;
            off += adv;
        }
    }
    return false;
}

/* Decompresses the first XZ stream of z that yields an ELF with the PVH
 * note; writes it to fd. */
static int extract_vmlinux(const unsigned char *z, size_t zlen, int fd, char digest[65]) {
    if (lazy_open(&lazy_lzma) < 0)
        return -ELIBACC; /* liblzma cannot be loaded: lazy_lzma.why */
    static const unsigned char magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};
    for (size_t off = 0; off + 6 <= zlen; off++) {
        if (memcmp(z + off, magic, 6) != 0)
            continue;
        size_t cap = 128u << 20, outlen = 0;
        unsigned char *out = malloc(cap);
        if (!out)
            return -ENOMEM;
        lzma_stream s = LZMA_STREAM_INIT;
        if (lzma_stream_decoder(&s, UINT64_MAX, 0) != LZMA_OK) {
            free(out);
            return -ENOMEM;
        }
        s.next_in = z + off;
        s.avail_in = zlen - off;
        lzma_ret lr;
        do {
            if (outlen == cap) {
                if (cap >= (512u << 20))
                    break;
                unsigned char *n = realloc(out, cap * 2);
                if (!n)
                    break;
                out = n;
                cap *= 2;
            }
            s.next_out = out + outlen;
            s.avail_out = cap - outlen;
            lr = lzma_code(&s, LZMA_FINISH);
            outlen = cap - s.avail_out;
        } while (lr == LZMA_OK);
        lzma_end(&s);
        if (lr == LZMA_STREAM_END && has_pvh_note(out, outlen)) {
            unsigned char h[crypto_hash_sha256_BYTES];
            crypto_hash_sha256(h, out, outlen);
            hex(h, sizeof(h), digest);
            size_t done = 0;
            while (done < outlen) {
                ssize_t w = write(fd, out + done, outlen - done);
                if (w <= 0) {
                    free(out);
                    return -EIO;
                }
                done += (size_t)w;
            }
            free(out);
            return 0;
        }
        free(out);
    }
    return -ENOEXEC;
}

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

static int read_text(const char *path, char *buf, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* The agent's initramfs: /init, the module list and the modules. */
static int build_initrd(const char *release, const struct agent *ag, const char *tmpdir, char digest[65],
                        fy_error **reterr) {
    char path[4200] = "(memory)";
    if (tmpdir)
        snprintf(path, sizeof(path), "%s/initrd.cpio", tmpdir);
    int fd = tmpdir ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
    if (tmpdir && fd < 0)
        return err_set(reterr, err_from_errno(errno), FY_STEP_PREPARE, errno, NULL, "create %s: %s", path,
                       strerror(errno));
    crypto_hash_sha256_state hs;
    crypto_hash_sha256_init(&hs);
    struct cpio c;
    cpio_begin(&c, fd, &hs);
    static const char *const dirs[] = {"dev", "proc", "sys", ".fy", ".fy/modules"};
    for (size_t i = 0; i < FY_ARRAY_SIZE(dirs); i++)
        cpio_add(&c, dirs[i], 040755, NULL, 0);
    cpio_add(&c, "init", 0100755, ag->data, ag->len);
    struct strbuf order;
    strbuf_init(&order);
    int r = 0;
    for (size_t i = 0; i < FY_ARRAY_SIZE(guest_modules) && !r; i++) {
        char mp[512], name[256];
        snprintf(mp, sizeof(mp), "/lib/modules/%s/kernel/%s", release, guest_modules[i]);
        int mfd = open(mp, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (mfd < 0 || fstat(mfd, &st) < 0) {
            /* Built in? Then there is nothing to load. */
            char bl[512], *text = NULL;
            snprintf(bl, sizeof(bl), "/lib/modules/%s/modules.builtin", release);
            int bfd = open(bl, O_RDONLY | O_CLOEXEC);
            if (bfd >= 0) {
                text = util_read_fd(bfd, 1u << 20);
                close(bfd);
            }
            char want[300];
            snprintf(want, sizeof(want), "kernel/%s\n", guest_modules[i]);
            bool builtin = text && strstr(text, want);
            free(text);
            if (mfd >= 0)
                close(mfd);
            if (!builtin)
                r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, ENOENT, NULL,
                            "the guest kernel %s has no module %s (install the matching linux-image package)",
                            release, guest_modules[i]);
            continue;
        }
        const char *b = strrchr(guest_modules[i], '/') + 1;
        snprintf(name, sizeof(name), ".fy/modules/%s", b);
        cpio_add_fd(&c, name, 0100644, mfd, (uint64_t)st.st_size);
        close(mfd);
        strbuf_printf(&order, "%s\n", b);
    }
    if (!r) {
        if (order.oom)
            r = err_set(reterr, FY_E_NOMEM, FY_STEP_PREPARE, 0, NULL, "out of memory");
        else
            cpio_add(&c, ".fy/modules/order", 0100644, order.buf ? order.buf : "", order.len);
    }
    strbuf_free(&order);
    int e = cpio_end(&c);
    if (fd >= 0 && close(fd) < 0 && !e)
        e = -errno;
    if (!r && e < 0)
        r = err_set(reterr, err_from_errno(-e), FY_STEP_PREPARE, -e, NULL, "write %s: %s", path, strerror(-e));
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&hs, h);
    hex(h, sizeof(h), digest);
    return r;
}

static int fill(struct vm_kernel *k, const char *dir) {
    snprintf(k->dir, sizeof(k->dir), "%s", dir);
    snprintf(k->vmlinux, sizeof(k->vmlinux), "%s/vmlinux", dir);
    snprintf(k->initrd, sizeof(k->initrd), "%s/initrd.cpio", dir);
    char p[4200];
    snprintf(p, sizeof(p), "%s/vmlinux.sha256", dir);
    if (read_text(p, k->digest, sizeof(k->digest)) < 0 || strlen(k->digest) != 64)
        return -1;
    snprintf(p, sizeof(p), "%s/initrd.sha256", dir);
    if (read_text(p, k->initrd_digest, sizeof(k->initrd_digest)) < 0 || strlen(k->initrd_digest) != 64)
        return -1;
    snprintf(p, sizeof(p), "%s/vmlinuz.sha256", dir);
    if (read_text(p, k->vmlinuz_digest, sizeof(k->vmlinuz_digest)) < 0 || strlen(k->vmlinuz_digest) != 64)
        return -1;
    struct stat st;
    if (stat(k->vmlinux, &st) < 0 || stat(k->initrd, &st) < 0)
        return -1;
    return 0;
}

static int kernel_get(struct vm_kernel *k, const struct agent *ag, fy_error **reterr);

/* Whether an entry's recorded source ("PATH INO SIZE MTIME RELEASE") still
 * names the same file. */
static bool source_current(const char *text) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", text);
    char *f[4];
    for (int i = 3; i >= 0; i--) {
        char *sp = strrchr(buf, ' ');
        if (!sp)
            return false;
        *sp = '\0';
        f[i] = sp + 1;
    }
    struct stat st;
    if (stat(buf, &st) < 0)
        return false;
    char now[128];
    snprintf(now, sizeof(now), "%llu %lld %lld.%09ld", (unsigned long long)st.st_ino, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    char was[128];
    snprintf(was, sizeof(was), "%s %s %s", f[0], f[1], f[2]);
    return strcmp(now, was) == 0;
}

int vm_cache_prune(void) {
    char root[4096];
    if (vm_cache_root(root, sizeof(root)) < 0)
        return 0;
    DIR *d = opendir(root);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "kernel-", 7) != 0)
            continue;
        char p[4400], text[1024];
        snprintf(p, sizeof(p), "%s/%s/source", root, e->d_name);
        if (read_text(p, text, sizeof(text)) == 0 && source_current(text))
            continue;
        if (read_text(p, text, sizeof(text)) < 0) {
            /* no record: an entry being built (renamed into place complete) */
            continue;
        }
        if (util_remove_tree_at(dirfd(d), e->d_name, UTIL_RM_ONE_FS) > 0)
            n++;
    }
    closedir(d);
    return n;
}

/* The SHA-256 of a file (hex). */
static int hash_file(const char *path, char out[65]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    crypto_hash_sha256_state hs;
    crypto_hash_sha256_init(&hs);
    unsigned char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        crypto_hash_sha256_update(&hs, buf, (unsigned long long)n);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return -1;
    }
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&hs, h);
    hex(h, sizeof(h), out);
    return 0;
}

/* The cache entry's directory for a kernel and an agent (kernel_get's key). */
static int entry_dir(struct vm_kernel *k, const struct agent *ag, char *dir, size_t dlen, char kkey[65],
                     char *key, size_t klen, fy_error **reterr) {
    int r = find_vmlinuz(k->vmlinuz_path, sizeof(k->vmlinuz_path), k->release, sizeof(k->release));
    if (r < 0)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, -r, NULL,
                       "no guest kernel: /boot/vmlinuz-R with /lib/modules/R (Debian: apt-get install "
                       "linux-image-amd64)");
    struct stat st;
    if (stat(k->vmlinuz_path, &st) < 0)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, errno, NULL, "guest kernel %s: %s",
                       k->vmlinuz_path, strerror(errno));
    unsigned char h[crypto_hash_sha256_BYTES];
    char ah[65], root[4096], keyhex[65];
    crypto_hash_sha256(h, ag->data, ag->len);
    hex(h, sizeof(h), ah);
    snprintf(key, klen, "%s %llu %lld %lld.%09ld %s", k->vmlinuz_path, (unsigned long long)st.st_ino,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, k->release);
    crypto_hash_sha256(h, (const unsigned char *)key, strlen(key));
    hex(h, 12, kkey);
    snprintf(keyhex, sizeof(keyhex), "%s-%.16s", kkey, ah);
    if ((r = vm_cache_root(root, sizeof(root))) < 0)
        return err_set(reterr, r, FY_STEP_PREPARE, 0, NULL, "cache root path too long");
    snprintf(dir, dlen, "%s/kernel-%s", root, keyhex);
    return 0;
}

int vm_kernel_identify(struct vm_kernel *k, fy_error **reterr) {
    memset(k, 0, sizeof(*k));
    if (sodium_init() < 0)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_PREPARE, 0, NULL, "libsodium failed to initialise");
    struct agent ag;
    int r = agent_get(&ag);
    if (r < 0)
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_PREPARE, -r, NULL, "FORGEYARD_VM_AGENT: %s", strerror(-r));
    if (!ag.len) {
        free(ag.owned);
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                       "this build has no guest agent (unsupported architecture)");
    }
    char dir[4200], kkey[65], key[512];
    if ((r = entry_dir(k, &ag, dir, sizeof(dir), kkey, key, sizeof(key), reterr)) == 0 && fill(k, dir) != 0) {
        /* Not cached: computed in memory, nothing written (fy_prepare
         * has no side effect on the host; the first start caches it). */
        struct vm_kernel id = *k;
        memset(k, 0, sizeof(*k));
        memcpy(k->release, id.release, sizeof(k->release));
        memcpy(k->vmlinuz_path, id.vmlinuz_path, sizeof(k->vmlinuz_path));
        if (hash_file(k->vmlinuz_path, k->vmlinuz_digest) < 0)
            r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, errno, NULL, "read the guest kernel %s: %s",
                        k->vmlinuz_path, strerror(errno));
        else
            r = build_initrd(k->release, &ag, NULL, k->initrd_digest, reterr);
    }
    free(ag.owned);
    return r;
}

int vm_kernel_get(struct vm_kernel *k, fy_error **reterr) {
    struct agent ag;
    int r = agent_get(&ag);
    if (r < 0)
        return err_set(reterr, FY_E_NOTFOUND, FY_STEP_PREPARE, -r, NULL, "FORGEYARD_VM_AGENT: %s", strerror(-r));
    r = kernel_get(k, &ag, reterr);
    free(ag.owned);
    return r;
}

int vm_kernel_get_named(struct vm_kernel *k, const struct vm_kernel *named, fy_error **reterr) {
    int r = vm_kernel_get(k, reterr);
    if (r < 0)
        return r;
    if (strcmp(k->initrd_digest, named->initrd_digest) != 0 || strcmp(k->vmlinuz_digest, named->vmlinuz_digest) != 0)
        return err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL,
                       "the guest kernel or agent changed since fy_prepare (prepare again)");
    return 0;
}

/* An entry of the same kernel made for another agent: its vmlinux is
 * linked, not extracted again. */
static int reuse_vmlinux(const char *root, const char *kkey, const char *tmp, char digest[65]) {
    DIR *d = opendir(root);
    if (!d)
        return -1;
    struct dirent *e;
    char prefix[80];
    snprintf(prefix, sizeof(prefix), "kernel-%s-", kkey);
    int r = -1;
    while (r < 0 && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char from[4400], to[4400], dg[4400];
        snprintf(dg, sizeof(dg), "%s/%s/vmlinux.sha256", root, e->d_name);
        snprintf(from, sizeof(from), "%s/%s/vmlinux", root, e->d_name);
        snprintf(to, sizeof(to), "%s/vmlinux", tmp);
        if (read_text(dg, digest, 65) == 0 && strlen(digest) == 64 && link(from, to) == 0)
            r = 0;
    }
    closedir(d);
    return r;
}

static int kernel_get(struct vm_kernel *k, const struct agent *ag, fy_error **reterr) {
    memset(k, 0, sizeof(*k));
    if (sodium_init() < 0)
        return err_set(reterr, FY_E_INTERNAL, FY_STEP_PREPARE, 0, NULL, "libsodium failed to initialise");
    if (!ag->len)
        return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                       "this build has no guest agent (unsupported architecture)");
    /* The cache entry is named by the source's identity and by this
     * build's agent: a new kernel or a new agent is a new entry. */
    char key[512], kkey[65], root[4096], dir[4200];
    int r = entry_dir(k, ag, dir, sizeof(dir), kkey, key, sizeof(key), reterr);
    if (r < 0)
        return r;
    if ((r = vm_cache_root(root, sizeof(root))) < 0)
        return err_set(reterr, r, FY_STEP_PREPARE, 0, NULL, "cache root path too long");
    if (fill(k, dir) == 0)
        return 0;
    if ((r = mkdirs(root, 0711)) < 0)
        return err_set(reterr, err_from_errno(-r), FY_STEP_PREPARE, -r, NULL, "create the cache %s: %s", root,
                       strerror(-r));
    /* Build under a lock, in a temporary directory renamed into place. */
    char lock[4200];
    snprintf(lock, sizeof(lock), "%s/.lock", root);
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        return err_set(reterr, err_from_errno(e), FY_STEP_PREPARE, e, NULL, "lock %s: %s", lock, strerror(e));
    }
    if (fill(k, dir) == 0) {
        close(lfd);
        return 0;
    }
    /* An entry of an older format (or a half-removed one): rebuilt. */
    util_remove_tree_at(AT_FDCWD, dir, UTIL_RM_ONE_FS);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s/.build-%d", root, (int)getpid());
    /* A stale build of ours (a pid used again) */
    util_remove_tree_at(AT_FDCWD, tmp, UTIL_RM_ONE_FS);
    if (mkdir(tmp, 0755) < 0) {
        int e = errno;
        close(lfd);
        return err_set(reterr, err_from_errno(e), FY_STEP_PREPARE, e, NULL, "mkdir %s: %s", tmp, strerror(e));
    }
    struct stat st;
    int zfd = reuse_vmlinux(root, kkey, tmp, k->digest) == 0 ? -2 : open(k->vmlinuz_path, O_RDONLY | O_CLOEXEC);
    unsigned char *z = MAP_FAILED;
    if (zfd == -2) {
        /* linked from an entry of the same kernel */
    } else if (zfd >= 0 && fstat(zfd, &st) == 0 && st.st_size > 0)
        z = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, zfd, 0);
    if (zfd >= 0)
        close(zfd);
    char p[4300];
    snprintf(p, sizeof(p), "%s/vmlinux", tmp);
    int ofd = zfd == -2 ? -2 : z == MAP_FAILED ? -1 : open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (ofd == -2) {
        /* nothing to extract */
    } else if (ofd < 0) {
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, errno, NULL, "read the guest kernel %s: %s",
                    k->vmlinuz_path, strerror(errno));
    } else {
        int x = extract_vmlinux(z, (size_t)st.st_size, ofd, k->digest);
        if (close(ofd) < 0 && !x)
            x = -EIO;
        if (x < 0)
            r = x == -ELIBACC
                    ? err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, 0, NULL,
                              "extracting the vmlinux of %s needs liblzma, which cannot be loaded: %s", k->vmlinuz_path,
                              lazy_lzma.why)
                    : err_set(reterr, x == -ENOEXEC ? FY_E_UNSUPPORTED : err_from_errno(-x), FY_STEP_PREPARE, -x, NULL,
                              x == -ENOEXEC ? "%s holds no XZ-compressed PVH vmlinux (XEN_ELFNOTE_PHYS32_ENTRY)"
                                            : "extracting the vmlinux of %s failed",
                              k->vmlinuz_path);
    }
    if (z != MAP_FAILED)
        munmap(z, (size_t)st.st_size);
    if (!r)
        r = build_initrd(k->release, ag, tmp, k->initrd_digest, reterr);
    if (!r && hash_file(k->vmlinuz_path, k->vmlinuz_digest) < 0)
        r = err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_PREPARE, errno, NULL, "read the guest kernel %s: %s",
                    k->vmlinuz_path, strerror(errno));
    if (!r) {
        snprintf(p, sizeof(p), "%s/vmlinuz.sha256", tmp);
        int z2 = write_text(p, k->vmlinuz_digest);
        snprintf(p, sizeof(p), "%s/vmlinux.sha256", tmp);
        int a = write_text(p, k->digest) | z2;
        snprintf(p, sizeof(p), "%s/initrd.sha256", tmp);
        int b = write_text(p, k->initrd_digest);
        snprintf(p, sizeof(p), "%s/source", tmp);
        int c = write_text(p, key);
        if (a < 0 || b < 0 || c < 0 || rename(tmp, dir) < 0)
            r = err_set(reterr, FY_E_IO, FY_STEP_PREPARE, errno, NULL, "store the guest kernel in %s", dir);
    }
    if (r)
        util_remove_tree_at(AT_FDCWD, tmp, UTIL_RM_ONE_FS);
    close(lfd);
    if (r)
        return r;
    if (fill(k, dir) < 0)
        return err_set(reterr, FY_E_IO, FY_STEP_PREPARE, 0, NULL, "the guest kernel cache %s is incomplete", dir);
    return 0;
}
