/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pre-started shells of the VM backend (fy_shells_new(3)): clones
 * restored from the plan's template before anything asks for them, so
 * that a claim skips QEMU's start, the VMM sandbox's and the restore.
 *
 * A clone is a fresh QEMU in its namespace sandbox that restored the
 * template (its digest checked as for any restore) and was told only its
 * idle limit. It holds nothing of any attempt: its 9p exports are one
 * empty stub directory, no host path; the guest has not been reseeded and
 * runs nothing but the template's agent, waiting. At the claim
 * (vm_start_shell, vm-run.c) the attempt's read-only directories are
 * attached under the stubs in the VMM sandbox's mount namespace alone (the
 * Linux folder's sandbox_attach: root only), then the guest is reseeded,
 * its clock set, and it gets the attempt's files and command like any
 * restore. Under network restricted its NIC waits on a hub port leading
 * nowhere, and the claim joins the attempt's router tap to that hub over
 * the clone's monitor (vm_qmp_plug_tap). A clone is used once; one
 * unclaimed past its idle limit powers
 * itself off (VMP_IDLE) and is discarded, killed and reaped by its
 * sandbox, its stub removed: witnessed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "forgeyard/sandbox.h"
#include "vm-backend.h"
#include "vm-shell.h"

#define SEC UINT64_C(1000000)
#define READY_TIMEOUT (60 * SEC) /* a restore and warm-up under TCG on a loaded host */

static int refuse(fy_error **reterr, const char *why) {
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_SPAWN, 0, NULL, "no pre-started VM clones for this plan: %s",
                   why);
}

/* Why this plan's attempts cannot start in a clone, or NULL. */
static const char *unfit(const struct vm_plan *pl) {
    if (!pl->use_template)
        return "it boots cold (FY_CONTROL_COLD_BOOT, or FORGEYARD_VM_TEMPLATE=off)";
    for (size_t i = 0; i < pl->nmounts; i++)
        if (pl->mounts[i].writable)
            return "a writable bind (its VMM's ids are the attempt's)";
    const struct fy_backend_family *f = backend_proxy_family();
    if (!f || !f->sandbox_attach)
        return "no folder attaches directories into a running sandbox (the Linux one)";
    if (pl->nmounts && geteuid() != 0)
        return "without root (the attempt's directories are attached at the claim into the VMM sandbox's mount "
               "namespace: open_tree of the host's)";
    return NULL;
}

static uint64_t covered_wall(const struct vm_plan *pl, uint32_t idle_ms) {
    uint64_t w = pl->np->limit[FY_LIMIT_WALL_TIME];
    return w == FY_UNLIMITED ? FY_UNLIMITED : w + (uint64_t)idle_ms * 1000u;
}

static void shell_free(struct vm_shell *sh) {
    if (sh->qmp >= 0)
        close(sh->qmp);
    if (sh->sock >= 0)
        close(sh->sock);
    if (sh->console_fd >= 0)
        close(sh->console_fd);
    if (sh->tmpl.fd >= 0)
        close(sh->tmpl.fd);
    free(sh->state_dir);
    free(sh);
}

/* The clone's one frame before a claim: its agent's HELLO once it is
 * restored and warmed up, within READY_TIMEOUT; anything else refused. */
static int wait_ready(struct vm_shell *sh, fy_error **reterr) {
    struct vmp_dec *dec = malloc(sizeof(*dec));
    if (!dec)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    vmp_dec_init(dec);
    uint64_t deadline = util_now_usec() + READY_TIMEOUT;
    int r = 0;
    for (;;) {
        struct vmp_frame f;
        int k = vmp_next(dec, &f);
        if (k < 0) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL, "the clone's agent: %s", dec->error);
            break;
        }
        if (k == 1) {
            if (!vmp_is_hello(&f))
                r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL,
                            "the clone's agent sent frame %u before its claim", f.type);
            else if (dec->have != dec->consumed)
                r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL,
                            "the clone's agent sent more than its hello before its claim");
            break;
        }
        uint64_t now = util_now_usec();
        struct pollfd p = {sh->sock, POLLIN, 0};
        int pr = now >= deadline ? 0 : poll(&p, 1, (int)((deadline - now + 999) / 1000));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, pr < 0 ? errno : ETIMEDOUT, NULL,
                        "the clone's agent did not answer within %llu s",
                        (unsigned long long)(READY_TIMEOUT / SEC));
            break;
        }
        ssize_t n = read(sh->sock, dec->buf + dec->have, vmp_room(dec));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, n < 0 ? errno : 0, NULL,
                        "the clone ended before it was ready");
            break;
        }
        vmp_added(dec, (size_t)n);
    }
    free(dec);
    return r;
}

int vm_shell_make(const void *plan, uint32_t idle_ms, void **ret, fy_error **reterr) {
    const struct vm_plan *pl = plan;
    *ret = NULL;
    const char *why = unfit(pl);
    if (why)
        return refuse(reterr, why);
    struct vm_shell *sh = calloc(1, sizeof(*sh));
    if (!sh)
        return err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
    sh->sock = sh->console_fd = sh->tmpl.fd = sh->qmp = -1;
    int sp[2] = {-1, -1}, cp[2] = {-1, -1}, lfd = -1;
    char mondir[4096] = "", token[33] = "";
    int r;
    fy_error *te = NULL;
    if (pl->np->state_dir && !(sh->state_dir = util_strdup(pl->np->state_dir))) {
        r = err_set(reterr, FY_E_NOMEM, FY_STEP_SPAWN, 0, NULL, "out of memory");
        goto fail;
    }
    if ((r = vm_kernel_get_named(&sh->k, &pl->k, reterr)) < 0)
        goto fail;
    r = vm_template_get(pl, &sh->k, pl->caps, pl->np->state_dir, true, 0, &sh->tmpl, &te);
    if (r < 0) {
        /* A clone is a restore or nothing: no cold boot is pre-started. */
        r = err_set(reterr, r, fy_error_step(te), fy_error_os_code(te), NULL, "the VM template: %s",
                    te ? fy_error_message(te) : "?");
        fy_error_free(te);
        goto fail;
    }
    memcpy(sh->key, pl->template_key, sizeof(sh->key));
    sh->nmounts = pl->nmounts;
    sh->wall = covered_wall(pl, idle_ms);
    /* The stub: an empty directory holding an empty VMP_SHARE_SUB, bound
     * read-only at every /fy/mN (0755: QEMU's sandbox runs as another id). */
    if ((r = vm_make_dir_in_attempts(sh->dir, sizeof(sh->dir), 0755, reterr)) < 0)
        goto fail;
    char sub[4200];
    snprintf(sub, sizeof(sub), "%s/" VMP_SHARE_SUB, sh->dir);
    if (mkdir(sub, 0755) < 0 || chmod(sub, 0755) < 0) {
        r = err_set(reterr, err_from_errno(errno), FY_STEP_SPAWN, errno, NULL, "mkdir %s: %s", sub, strerror(errno));
        goto fail;
    }
    if ((r = vm_control_open(&sh->sock, &sp[1], &sh->console_fd, &cp[1], reterr)) < 0)
        goto fail;
    if (pl->nic) {
        /* restricted: a monitor socket in a directory of its own (this
         * process listening, the peer proven by a random -name), over which
         * the claim hands QEMU the router's tap; removed once accepted */
        if ((r = vm_make_dir_in_attempts(mondir, sizeof(mondir), 0755, reterr)) < 0 ||
            (r = vm_monitor_listen(mondir, &lfd, token, "the clone's monitor socket", reterr)) < 0)
            goto fail;
    }
    struct vm_vmm_spec spec = {
        .pl = pl, .caps = pl->caps, .state_dir = pl->np->state_dir, .mode = VM_BOOT_SHELL,
        .attempt_dir = mondir[0] ? mondir : NULL, .token = token,
        .kernel_dir = sh->k.dir, .mount_stub = sh->dir, .wall = sh->wall, .in = sh->tmpl.fd, .out = sp[1],
        .err = cp[1],
    };
    r = vm_vmm_start(&spec, &sh->vmm, reterr);
    close(sp[1]);
    close(cp[1]);
    sp[1] = cp[1] = -1;
    if (r < 0)
        goto fail;
    if (lfd >= 0) {
        char mwhy[256] = "";
        if ((sh->qmp = vm_qmp_accept(pl, lfd, sh->vmm, token, mwhy, sizeof(mwhy))) < 0) {
            r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, 0, NULL, "the clone's monitor: %s", mwhy);
            goto fail;
        }
        close(lfd);
        lfd = -1;
        vm_remove_dir(mondir); /* the connection stays; nothing else may connect */
        mondir[0] = '\0';
    }
    if (vm_template_check(&sh->tmpl) < 0) {
        /* Made again by the next fill (or attempt). */
        vm_template_discard(pl);
        r = err_set(reterr, FY_E_INTEGRITY, FY_STEP_SPAWN, 0, NULL, "the VM template fails its check: %s",
                    sh->tmpl.refused);
        goto fail;
    }
    close(sh->tmpl.fd);
    sh->tmpl.fd = -1;
    /* Its idle limit, the one thing it is told before a claim. */
    uint8_t fr[VMP_HDR + 4];
    vmp_header(fr, VMP_IDLE, 0, 4);
    vmp_put_u32(fr + VMP_HDR, idle_ms);
    if (send(sh->sock, fr, sizeof(fr), MSG_NOSIGNAL) != (ssize_t)sizeof(fr)) {
        r = err_set(reterr, FY_E_INFRA, FY_STEP_SPAWN, errno, NULL, "the clone's control port: %s", strerror(errno));
        goto fail;
    }
    /* Ready when its agent says so (warmed up): a clone counted ready by
     * the set is one a claim finds answering. */
    if ((r = wait_ready(sh, reterr)) < 0)
        goto fail;
    sh->made_usec = util_now_usec();
    *ret = sh;
    return 0;
fail:
    if (lfd >= 0)
        close(lfd);
    if (sp[1] >= 0)
        close(sp[1]);
    if (cp[1] >= 0)
        close(cp[1]);
    vm_shell_discard(sh);
    if (mondir[0])
        vm_remove_dir(mondir);
    return r;
}

bool vm_shell_fits(const void *shell, const void *plan) {
    const struct vm_shell *sh = shell;
    const struct vm_plan *pl = plan;
    if (unfit(pl) || strcmp(sh->key, pl->template_key) != 0 || sh->nmounts != pl->nmounts)
        return false;
    if ((sh->state_dir == NULL) != (pl->np->state_dir == NULL) ||
        (sh->state_dir && strcmp(sh->state_dir, pl->np->state_dir) != 0))
        return false;
    /* Its sandbox's wall-clock limit must cover the attempt's. */
    uint64_t w = pl->np->limit[FY_LIMIT_WALL_TIME], age = util_now_usec() - sh->made_usec;
    return sh->wall == FY_UNLIMITED || (w != FY_UNLIMITED && age < sh->wall && w <= sh->wall - age);
}

bool vm_shell_gone(void *shell) {
    struct vm_shell *sh = shell;
    if (!sh->vmm || sh->sock < 0)
        return true;
    /* A waiting clone says nothing before its claim: anything readable
     * (its end, or bytes it should not send) and it is done. */
    struct pollfd p = {sh->sock, POLLIN, 0};
    return poll(&p, 1, 0) != 0;
}

uint32_t vm_shell_discard(void *shell) {
    struct vm_shell *sh = shell;
    if (!sh)
        return 0;
    uint32_t left = 0;
    if (sh->vmm) {
        /* Its sandbox killed and reaped, what it left counted. */
        fy_handle *vmm = sh->vmm;
        sh->vmm = NULL;
        fy_handle_cancel(vmm, FY_CANCEL_USER, NULL);
        fy_result *res = NULL;
        if (fy_handle_wait(vmm, 30 * SEC, &res, NULL) == 1 && res) {
            for (uint32_t k = FY_LEFT_PROCESSES; k <= FY_LEFT_NETWORK; k++) {
                uint64_t n = 0;
                if (fy_result_cleanup(res, k, &n) >= 0)
                    left += (uint32_t)n;
            }
            fy_result_free(res);
        } else {
            left++;
        }
        fy_handle_free(vmm);
    }
    if (sh->dir[0] && vm_remove_dir(sh->dir) < 0)
        left++;
    sh->dir[0] = '\0';
    shell_free(sh);
    return left;
}

void vm_shell_forget(void *shell) {
    struct vm_shell *sh = shell;
    if (!sh)
        return;
    if (sh->vmm)
        fy_handle_free(sh->vmm); /* in a forked copy: memory only */
    sh->vmm = NULL;
    shell_free(sh);
}
