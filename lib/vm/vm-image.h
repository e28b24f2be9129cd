/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The guest's images: the PVH vmlinux extracted from the host's Debian
 * kernel package and the agent's initramfs, both cached by digest under the
 * cache root, and the per-attempt initramfs (vm-image.c). */
#ifndef FY_VM_IMAGE_H
#define FY_VM_IMAGE_H

#include "internal.h"

struct vm_kernel {
    char release[128];
    char dir[4096];            /* cache directory holding vmlinux */
    char vmlinux[4096];        /* its path */
    char vmlinuz_path[4096];   /* where it came from */
    char digest[65];           /* sha256 of vmlinux (vm_kernel_get only) */
    char vmlinuz_digest[65];   /* sha256 of the vmlinuz it comes from */
    char initrd[4096];         /* the cached agent initramfs */
    char initrd_digest[65];    /* sha256 of it */
};

/* The cache root: $FORGEYARD_VM_CACHE (tests), /var/cache/forgeyard/vm as
 * root, else $XDG_CACHE_HOME/forgeyard/vm, ~/.cache/forgeyard/vm, or a
 * directory of this user's own in TMPDIR or /var/tmp (util_cache_dir);
 * FY_E_UNSAFE when that one is another user's. */
int vm_cache_root(char *buf, size_t len);
/* The guest kernel's and the agent initramfs's identity (the vmlinuz's
 * and the initramfs's SHA-256, the release), for the contract id, without
 * writing anything: read from the cache when it has the entry, computed in
 * memory otherwise. FY_E_UNSUPPORTED when there is no guest kernel. */
int vm_kernel_identify(struct vm_kernel *k, fy_error **reterr);
/* Finds the guest kernel (/boot/vmlinuz-R with /lib/modules/R, or
 * $FORGEYARD_VM_KERNEL), extracts and caches its vmlinux and modules, and
 * builds and caches the agent initramfs. FY_E_UNSUPPORTED when there is no
 * usable kernel. */
int vm_kernel_get(struct vm_kernel *k, fy_error **reterr);
/* vm_kernel_get, then FY_E_INFRA unless the vmlinuz and the initramfs are
 * the ones `named` (the plan's, from fy_prepare) names: what the plan
 * named must be what boots. */
int vm_kernel_get_named(struct vm_kernel *k, const struct vm_kernel *named, fy_error **reterr);

/* Removes the cache entries whose source kernel is gone or changed (a
 * kernel package upgraded or removed); returns how many. */
int vm_cache_prune(void);

/* A cpio (newc) archive being written to an fd. */
struct cpio {
    int fd;
    uint64_t bytes;
    uint32_t ino;
    uint32_t uid, gid;         /* of the entries added from now on */
    /* The modification time of the next entry (0: none, the epoch): whole
     * seconds in newc's field, the nanoseconds in its "check" field, which
     * a 070701 archive leaves unused (the kernel's unpacker ignores it; the
     * guest agent's applies it). */
    uint32_t mtime, mtime_ns;
    void *hash;                /* crypto_hash_sha256_state, when hashing */
    int err;                   /* sticky errno */
};
void cpio_begin(struct cpio *c, int fd, void *hash);
void cpio_add(struct cpio *c, const char *name, uint32_t mode, const void *data, uint64_t len);
/* A regular file's content from an fd (len bytes). */
void cpio_add_fd(struct cpio *c, const char *name, uint32_t mode, int fd, uint64_t len);
int cpio_end(struct cpio *c);

#endif
