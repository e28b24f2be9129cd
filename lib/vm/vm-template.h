/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Templates of the VM backend (vm-template.c): a guest booted until its
 * agent is up, before anything of an attempt exists, saved once (QEMU's
 * migration stream, the guest RAM included) and restored by every attempt
 * into a fresh QEMU with RAM of its own. */
#ifndef FY_VM_TEMPLATE_H
#define FY_VM_TEMPLATE_H

#include <sys/stat.h>

#include "vm-run.h"

struct vm_template {
    int fd;                  /* the verified state, read-only, at offset 0; -1 when none */
    char state_sha256[65];
    uint64_t state_size;
    bool made;               /* made by this start */
    bool digest_pending;     /* owner, mode and size checked; the SHA-256 not yet (vm_template_check) */
    char refused[256];       /* why a cached one was refused and remade, or "" */
    uint64_t verify_usec, make_usec;
    /* The process's sealed copy (vm_template_check makes one while it
     * hashes; later attempts restore from it when the file is unchanged). */
    bool from_sealed;        /* fd reads a sealed copy whose SHA-256 matched */
    uint64_t sealed_at;      /* when that copy was checked (CLOCK_REALTIME usec) */
    char key[65];
    struct stat st;          /* the state file as verify() opened it */
};

/* The plan's template key and the text it hashes (vm_compile). */
int vm_template_key(struct vm_plan *pl);
/* The template for the plan's machine, from the per-user cache (a 0700
 * directory of this user, else FY_E_UNSAFE) with its digest checked, or
 * made now (under a lock, written then renamed). until (0: none): the
 * attempt's deadline, which bounds the wait for another maker's lock and
 * the making (FY_E_TIMEOUT, or the making's failure, past it). */
int vm_template_get(const struct vm_plan *pl, const struct vm_kernel *k, const fy_caps *caps, const char *state_dir,
                    bool defer_digest, uint64_t until, struct vm_template *t, fy_error **reterr);
/* With defer_digest, a cached template comes back with only its owner,
 * mode, size and manifest checked: the caller starts QEMU reading it and
 * checks the SHA-256 meanwhile (vm_template_check), before the restored
 * guest is sent anything. */
int vm_template_check(struct vm_template *t);
/* A cached template comes back reading a sealed in-memory copy (a memfd
 * that cannot be written, grown or shrunk, made by vm_template_check of an
 * earlier attempt of this process while it hashed the file) when the state
 * file is the one that copy was checked against (device, inode, size,
 * modification and change times): the copy's SHA-256 matched and its
 * bytes cannot have changed since, so its digest is not recomputed. At
 * most two copies per process. */
/* restricted's restore: a listening unix socket VM_QMP_SOCK in dir (mode
 * 0666: QEMU runs under another id), *lfd; -errno. */
int vm_qmp_listen(const char *dir, int *lfd);
/* The peer of the accepted monitor connection fd is the QEMU started for
 * this attempt: a descendant of this process, "-name fy-TOKEN" on its
 * command line and, where readable, qemu as its executable. */
bool vm_qmp_peer_is_vmm(int fd, const char *qemu, const char *token);
/* restricted's restore: accepts the monitor connection of vmm's QEMU (the
 * peer's command line carries -name fy-TOKEN and, where readable, its
 * executable is the plan's QEMU; anyone else is closed unspoken to), hands
 * it the state (t->fd, getfd) and starts the incoming migration from it,
 * then closes the monitor. 0, or -1 and why. */
int vm_template_restore(const struct vm_plan *pl, const struct vm_template *t, int lfd, fy_handle *vmm,
                        const char *token, char *why, size_t wlen);
/* A restricted clone's monitor (vm-shell.c): accepted (peer proven as
 * above) and negotiated, kept open until the claim: the fd, or -1 and why.
 * At the claim, the router's tap is handed over it (getfd) and joined to
 * the hub the guest's NIC is on (netdev_add tap, then hubport): 0, or -1
 * and why. */
int vm_qmp_accept(const struct vm_plan *pl, int lfd, fy_handle *vmm, const char *token, char *why, size_t wlen);
int vm_qmp_plug_tap(int mon, int tap, char *why, size_t wlen);
/* Removes the plan's template (it failed its check). */
void vm_template_discard(const struct vm_plan *pl);
/* The templates directory under the cache root. */
int vm_template_dir(char *buf, size_t len);
/* Removes the templates made from a kernel and initramfs the cache no
 * longer holds (vm_cache_prune removed them: a package upgrade replaced
 * the kernel, and nothing can use those templates again; about 138 MB
 * each); skipped while a template is being made. How many. */
int vm_template_prune(void);

#endif
