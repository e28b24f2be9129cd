/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the files of the Linux backend's run operations (the parent side)
 * share: the per-attempt state, struct lx, and the helpers more than one of
 * them calls. linux-spawn.c is the start pipeline, destroy and the ops
 * glue; linux-spawn-io.c stdio, live output draining, secrets and the
 * per-start environment; linux-spawn-init.c forgeyard-init in a sealed
 * memfd, the clone/exec of the sandbox and the exec-init probe;
 * linux-spawn-supervise.c the supervision loop, deadlines, terminate, hard
 * kill and reap, and the report to attempt_finish. Private to lib/linux/. */
#ifndef FY_LINUX_SPAWN_H
#define FY_LINUX_SPAWN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "handle.h"
#include "linux-plan.h"
#include "linux-net.h"

enum kill_stage { KS_NONE, KS_SOFT, KS_HARD };

/* The middle process that is the sandbox's pid 1's parent when the host's
 * SIGCHLD is not at its default (linux-spawn-init.c): a quiet fork of the
 * host (no exit signal, executes nothing), so that pid 1's exit, a SIGCHLD
 * (it executed forgeyard-init), reaches the middle and never the host's
 * disposition or handlers. */
struct lx_reaper {
    pid_t pid;
    int pidfd;   /* of the middle (ours to reap) */
    int rd;      /* its report: pid 1's start, then its end (status, rusage) */
    int go;      /* a byte (or EOF): we hold pid 1's pidfd, it may reap */
};

struct lx {
    pid_t pid;
    int pidfd, epfd, timerfd;
    int sync_wr, status_rd;
    int notify_sock, notify_fd;
    int child_stdio[3];     /* closed in the parent after clone */
    int stdin_own, stdin_host; /* FY_STDIO_FD stdin from a regular file: the workload's own open
                                  file description of it and the host's, whose offset it gets at
                                  the end (lx_stdin_settle) */
    int host_pipe[3];       /* FY_STDIO_PIPE: the host's end */
    int drain_rd[3];        /* FY_STDIO_FILE, FY_STDIO_CALLBACK: the pipe we drain ... */
    int spool_fd[3];        /* ... into this file (FY_STDIO_FILE), or to the callback */
    uint64_t stream_bytes[3]; /* what was delivered of each drained stream */
    char **envp;            /* plan envp + secret variables (secret strings in sodium memory) */
    unsigned char **secret_env;
    size_t nsecret_env;
    struct child_secret *secrets;
    struct child_args args;
    /* progress */
    bool reaped, status_eof, exec_seen, exit_seen, child_error;
    uint32_t err_step;
    int err_errno;
    uint32_t err_op; /* the failed mount operation + 1, or 0 */
    int wstatus;
    uint32_t landlock_abi;
    uint64_t ptrace_denied;   /* ptrace-family calls the profile only noted (sc_is_noted) */
    uint32_t idmap_planned, idmap_mapped; /* read-only workspace binds idmapped (linux-idmap.c) */
    uint64_t tasks;             /* CM_TASKS: tasks created in the pid namespace */
    struct lx_reaper reaper;    /* pid.. -1 / fds -1: pid 1 is our child */
    struct rusage ru;
    struct rusage init_ru;      /* what pid 1 reaped, as it reported it (CM_RUSAGE) */
    bool have_init_ru;           /* handed over when the sandbox was reaped */
    bool have_ru;
    bool have_tasks;
    enum kill_stage kill;
    uint64_t grace_deadline;
    uint64_t hard_deadline;     /* process mode: SIGKILL the supervisor after this */
    uint64_t t_go, t_isolation, t_fs, t_exec, t_exit, t_reaped, t_eof;
    uint64_t t_alive;           /* the last time the sandbox was seen not yet ended */
    uint64_t output_bytes, output_cap;
    bool truncated;
    bool init_forked;           /* pid 1 is the fallback: a fork of the host */
    char *state_path;           /* our record in the state directory */
    char *state_dir;            /* ... and the directory, swept for orphans when we are freed */
    int state_fd;               /* ... open for appending the sandbox's pid */
    struct cg_run cg;
    uint64_t next_poll;         /* cgroup events are polled while limits apply */
    uint64_t next_watch;        /* the disk watchdog's next walk */
    struct cg_usage usage;
    int procs_left, cgroups_left;
    /* process mode: the per-attempt directory on the host */
    char *attempt_dir, *attempt_home, *attempt_tmp, *attempt_secrets;
    char *env_home, *env_tmpdir;
    const char *spool_created[3]; /* spool files this start created (unlinked if it fails) */
    bool scratch_left; /* cleanup could not remove it all */
    struct lxn_run net;  /* restricted: the router and its links (linux-net.c) */
    unsigned net_left;   /* ... what its teardown could not remove */
};

/* A pre-started shell (linux-shell.c): forgeyard-init in fresh namespaces,
 * ids mapped, in a bare v2 cgroup of its own (when the plan has one) and
 * recorded in the state directory, waiting for one claim; it holds
 * nothing of any attempt. Its key is what it was made with. */
struct lx_shell {
    pid_t pid;
    int pidfd;
    int sync;                   /* our end of its socket */
    struct lx_reaper reaper;    /* pid 1's parent when the host's SIGCHLD is not at its default */
    struct cg_run cg;           /* its name, and its v2 cgroup when the plan has one */
    char *state_dir, *state_path;
    int state_fd;
    char *key;
    int netns;                  /* a plan that is restricted as root (lxn_direct): the network
                                   namespace it was cloned into, made by us and empty (no link,
                                   no rule), the attempt's at the claim; -1: none */
};
/* The shell's process, socket, cgroup, record and network namespace become
 * the attempt's x; the shell is freed. */
void lx_shell_adopt(struct lx_shell *sh, struct lx *x);

/* linux-spawn.c */
void lx_close_fd(int *fd);
/* At the attempt's end: the host's stdin offset where the workload left its
 * own (as a shared description would have it), both closed. */
void lx_stdin_settle(struct lx *x);
/* The attempt's (or a shell's) record in the state directory, so that
 * fy_gc can destroy what a crashed host process left: created before the
 * cgroups exist, naming the directories about to be made (cgroups named
 * name, the scratch directory) and no process; the sandbox's pid is
 * appended once it is placed (state_record_sandbox). */
int lx_record_state(const struct linux_plan *pl, const char *name, const char *scratch, char **ret_dir,
                    char **ret_path, int *ret_fd, fy_error **reterr);
/* Writes the plan's id maps for pid (setgroups deny first when rootless). */
int lx_map_ids(const struct linux_plan *pl, pid_t pid, fy_error **reterr);
/* Places pid in the v2 cgroup dir (when clone3 could not). */
int lx_write_proc_cgroup(const char *dir, pid_t pid, fy_error **reterr);
/* Removes the per-attempt directory (process mode), noting what was left. */
void lx_remove_attempt_dir(struct lx *x);
/* Closes and removes the attempt's record in the state directory. */
void lx_forget_state(struct lx *x);
/* The platform-neutral plan the handle's sandbox was compiled from. */
const struct fy_plan *lx_neutral(const fy_handle *h);
/* A running namespace sandbox's pid 1: its pid and pidfd (borrowed: valid
 * while h is), or -1 when h is not such a sandbox or pid 1 is gone. */
int lx_running_init(const fy_handle *h, pid_t *pid, int *pidfd);
/* err_set for a failed system call (errno) at step. */
int lx_sys_err(fy_error **reterr, uint32_t step, const char *what);
int lx_epoll_watch(struct lx *x, int fd);
int lx_set_nonblock(int fd);

/* linux-spawn-io.c: set up before the clone (lx_start) */
int lx_setup_stdio(struct lx *x, const struct fy_plan *np, int stdin_secret, fy_error **reterr);
/* As root: the workload's standard streams that are anonymous pipes (the
 * library's capture, a relay's, a secret's) become the workload's uid's,
 * so that it may open them again through /proc/self/fd (/dev/stdout,
 * /dev/stderr, /dev/stdin): a root-owned pipe is mode 0600, and `echo x >
 * /dev/stderr`, `tee /dev/stdout` failed with EACCES (the sixth
 * exploration). What else holds the pipe is unchanged; runc does the same
 * for a container's. Not at the process level (one uid for every attempt,
 * the host's /proc). */
void lx_stdio_for_workload(struct lx *x, const struct linux_plan *pl);
/* The scratch directories: a name is chosen (lx_plan_*), recorded
 * (lx_record_state), and only then made (lx_setup_*: 0 made, 1 it exists or
 * cannot be made there, choose again; x->attempt_dir only once made), so
 * that a crash in between leaves nothing that no record names. */
void lx_scratch_letters(char out[7]);
char *lx_plan_attempt_dir(bool use_tmp);
int lx_setup_attempt_dir(struct lx *x, const struct linux_plan *pl, const char *path, bool *ret_shm_failed,
                         fy_error **reterr);
/* linux-upper.c: a container's upper and work directories on disk (as
 * x->attempt_dir, removed with it), in the image cache's uppers/. */
int lx_plan_upper_dir(const struct linux_plan *pl, char **ret_path, fy_error **reterr);
int lx_setup_upper_dir(struct lx *x, const struct linux_plan *pl, const char *path, fy_error **reterr);
int lx_setup_secrets(struct lx *x, const struct fy_plan *np, const struct linux_plan *pl, int *stdin_secret,
                     fy_error **reterr);
/* ... and driven by lx_process */
void lx_drain_output(fy_handle *h, struct lx *x, int i);
bool lx_outputs_open(const struct lx *x);

/* linux-spawn-init.c: the sandbox cloned executing forgeyard-init; 1 it
 * runs, 0 not possible here (clone a copy of the host), -1 clone failed. */
/* The reaper middle's end (linux-spawn-init.c): pid 1's rusage into *ru
 * when the middle reaped it (true); the middle is reaped, its fds closed
 * (idempotent). */
bool lx_reaper_finish(struct lx_reaper *rp, struct rusage *ru);
/* reaper: when not NULL, pid 1 is started by a middle process (struct
 * lx_reaper) whose state goes there; *pidfd is then pid 1's pidfd opened
 * from here. */
int lx_clone_exec_init(const struct child_args *a, const struct fy_clone_args *ca, struct lx_reaper *reaper,
                       int *pidfd, pid_t *ret_pid,
                       bool *ret_clone3);

/* The packed arguments (linux-pack.h) in a sealed memfd (they hold the
 * secrets: the copy in our memory is wiped), or -errno. */
int lx_packed_memfd(const struct child_args *a);
/* A pre-started shell (linux-shell.c): forgeyard-init executed as ca's
 * child in its shell mode, holding only sync_fd (its socket to us), which
 * it leaves by itself after idle_ms without a claim; with netns it makes
 * the sandbox's network namespace in advance. 1: it runs (*ret_pid,
 * *pidfd; through the reaper middle when the host's SIGCHLD is not at its
 * default); -1 and errno. */
int lx_clone_exec_shell(const struct fy_clone_args *ca, int sync_fd, int owner_pidfd, uint32_t idle_ms, bool netns,
                        uint32_t owner,
                        struct lx_reaper *reaper, int *pidfd, pid_t *ret_pid, bool *ret_clone3);
/* As root, the calling thread's ids for a clone whose new user namespace
 * `owner` must own (pl->userns_owner): 0 switched (lx_owner_leave after
 * the clone), 1 nothing to do, -errno. Only the calling thread changes;
 * in_host: the process's dumpability and the thread's parent-death signal
 * are kept in sv and put back by lx_owner_leave (host threads take turns). */
struct lx_owner_save {
    int dumpable, pdeath;
    bool locked;
};
int lx_owner_enter(uint32_t owner, bool in_host, struct lx_owner_save *sv);
void lx_owner_leave(struct lx_owner_save *sv);

/* linux-spawn-supervise.c */
void lx_hard_kill(struct lx *x, const struct linux_plan *pl);
void lx_reap_blocking(struct lx *x, const struct linux_plan *pl);
/* Arms the timerfd for lx_next_deadline. */
void lx_arm_timer(fy_handle *h, struct lx *x);

/* linux-idmap.c: a user namespace mapping uid -> huid and gid -> hgid
 * only (an fd or -errno); and, for each MF_HOST_TREE bind of pl in order,
 * one message on sock: 'T' with its tree (idmapped where read-only and the
 * file system allows), or 'P' (none); how many read-only ones there were
 * and how many of them were idmapped. */
int lx_idmap_userns(uid_t uid, gid_t gid, uid_t huid, gid_t hgid);
int lx_send_trees(const struct linux_plan *pl, int sock, uint32_t *ret_mapped, uint32_t *ret_read_only);

#endif
