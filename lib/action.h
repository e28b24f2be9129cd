/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hermetic actions (fy-action.h): the model and its JSON form (action.c),
 * the execution root and the collected outputs (action-tree.c), the
 * attempt (action-run.c). Core only: an action is run through the public
 * lifecycle (fy_prepare, fy_start) of whichever backend the policy gets. */
#ifndef FY_ACTION_H
#define FY_ACTION_H

#include <sys/stat.h>
#include <sys/types.h>

#include "policy.h"

#define ACTION_JSON_MAX (4u << 20)   /* bytes of an action document */
#define ACTION_ARGS_MAX 65536        /* arguments */
#define ACTION_ITEMS_MAX 100000      /* environment, properties, outputs */
#define ACTION_PATH_MAX 4096         /* bytes of a relative path */

struct act_kv { char *name, *value; };
struct act_output { char *path; uint32_t kind; };

struct fy_action {
    int origin_pid;
    char **argv;                /* NULL-terminated, or NULL */
    size_t argc;
    struct vec env;             /* struct act_kv, sorted by name */
    struct vec props;           /* struct act_kv, sorted by name */
    char *input; uint32_t input_kind;
    char *workdir;              /* relative, normalised; "" for the root */
    struct vec outputs;         /* struct act_output, sorted by path */
    char *output_dir, *stdio_path[3], *scratch;
    uint64_t limit[FY_ACTION_LIMIT_MAX_ + 1];
};

/* action.c */
int action_check_relpath(const char *path, bool allow_empty, const char *loc, fy_error **reterr);
/* The index of the declared output that is exactly key[0..len) (the
 * outputs are sorted by path: a binary search), or (size_t)-1. */
size_t action_output_find(const fy_action *a, const char *key, size_t len);
/* Removes dir's attempt directories whose owner process is gone (a killed
 * host's); *removed (may be NULL) counts them. (A no-op where actions are
 * not run.) */
void action_sweep(const char *dir, uint64_t *removed);
int action_parse_json(fy_action *a, const char *json, size_t len, fy_error **reterr);
char *action_canonical_json(const fy_action *a); /* malloc'd; NULL on OOM */
/* "sha256:<64 hex>" of len bytes; out has room for 72. */
void action_sha256_name(const unsigned char digest[32], char out[72]);

/* action-tree.c: the execution root of one attempt and what comes out. */
struct tree_stats { uint64_t entries, linked, copied, bytes; };
/* The input root's paths (files and links), sorted once filled. */
struct pathset { char **v; size_t n, cap; };
void pathset_free(struct pathset *s);
/* Sorted in place (a parent before its children); whether a and b hold
 * the same paths (both sorted). */
void pathset_sort(struct pathset *s);
/* Whether a and b hold the same paths (both sorted in place). */
bool pathset_same(struct pathset *a, struct pathset *b);

/* Fills the empty directory dst (an fd) from the action's input root:
 * directories made writable, files hard-linked when the sandbox's ids can
 * neither write nor re-mode them (ids_first/ids_count: the host ids the
 * sandbox maps; ids_count 0: hard links refused), copied read-only
 * otherwise; symbolic links as links; anything else refused. Then the
 * working directory and the parents of the declared outputs. Directories
 * are made as own says. */
/* Who owns the directories made for the workload, and their mode. */
struct tree_owner { bool chown; uid_t uid; gid_t gid; mode_t dir_mode; };
/* from >= 0: a directory to materialise instead of the action's input
 * root (the archive's unpacked cache entry). */
int tree_materialise(const fy_action *a, int from, int dst, uid_t ids_first, uint32_t ids_count, const struct tree_owner *own,
                     struct tree_stats *st, struct pathset *inputs, fy_error **reterr);

/* Unpacks the archive (fd, at offset 0) of the action into the empty
 * directory dst, refusing what tree_materialise refuses, and checks that
 * the bytes read were the file whose SHA-256 is digest (FY_E_STATE). */
int tree_unpack(const fy_action *a, int fd, const unsigned char digest[32], int dst, const struct tree_owner *own,
                struct tree_stats *st, fy_error **reterr);

/* Whom the readability verdict is for: the sandbox's workload on the host.
 * As root (range): any id of [first, first + count), which the sandbox
 * maps, judged conservatively over them all; rootless: the caller (uid,
 * its gid, and its supplementary groups whether the sandbox keeps them or
 * not). A file with a POSIX ACL (system.posix_acl_access) is judged by
 * its ACL, as the kernel would. */
struct tree_ids {
    bool range;
    uint32_t first, count;
    uid_t uid;
    gid_t gid;
    gid_t *groups;
    size_t ngroups;
};
/* As root: the range; else the caller. 0, or FY_E_NOMEM. */
int tree_ids_init(struct tree_ids *ids, uint32_t first, uint32_t count);
void tree_ids_free(struct tree_ids *ids);
/* The workload's own host ids (uid, gid), once the backend says them: as
 * root it keeps no supplementary groups; rootless, the caller's may stay. */
void tree_ids_exact(struct tree_ids *ids, uid_t uid, gid_t gid);
/* Whether ids get want (4 read, 2 write, 1 execute or search, OR'd) on the
 * entry name of the directory fd dir (name NULL: dir itself), whose lstat
 * is st: its ACL read when it has one (an ACL that cannot be read: no). */
bool tree_ids_grant(const struct tree_ids *ids, int dir, const char *name, const struct stat *st, unsigned want);
void tree_noacl_forget(void);

/* The overlay path (the backend mounts the input directory as the
 * read-only lower of an overlay whose upper is the execution root):
 * tree_scan_lower walks the input directory (fd src) as tree_materialise
 * would, refusing what it refuses, counting entries, listing its
 * directories (parents first) into dirs, and says whether the sandbox's
 * ids reach every entry as they would reach its materialised form
 * (*overlayable; false: materialise instead). tree_skeleton then makes
 * every directory of dirs in the empty upper (fd), owned as own says, the
 * working directory and the outputs' parents, and copies into the upper
 * the declared outputs the lower already has. */
/* With seal, also the SHA-256 of every entry's path, type, mode, owner,
 * size, inode, link count, mtime and ctime, in directory order. threads:
 * how many threads walk (at most TREE_SCAN_THREADS; 0 means that many). */
#define TREE_SCAN_THREADS 2
/* Set by a thread whose walks run beside an attempt: they then call
 * sched_yield every 64 entries. A walk is one system call after another;
 * a CPU that runs nothing else passes through the scheduler too seldom to
 * report an RCU quiescent state promptly, and the sandbox's start waits
 * for grace periods (the v1 cgroup moves through its tasks files): with
 * the walk beside, the start's exec stage took 1.7-3.4 ms instead of 0.3
 * (fourteenth session, docs/performance.md). */
extern _Thread_local bool tree_scan_yields;
int tree_scan_lower(const fy_action *a, int src, const struct tree_ids *ids, unsigned threads, struct tree_stats *st,
                    struct pathset *dirs, bool *overlayable, unsigned char seal[32], fy_error **reterr);
/* The directories of the input directory src alone (dirs, parents
 * first), from the types getdents gives (a stat only where it gives none):
 * the skeleton's list, made before the sandbox starts while the verdict's
 * walk (tree_scan_lower) runs beside it. Refuses the special files it
 * sees, and more entries than the limit. Directories whose link count
 * says they have no subdirectory are not listed: the verdict's walk must
 * then find exactly these directories (pathset_same). */
int tree_scan_dirs(const fy_action *a, int src, struct pathset *dirs, fy_error **reterr);
int tree_skeleton(const fy_action *a, int lower, int upper, const struct pathset *dirs, const struct tree_owner *own,
                  struct tree_stats *st, fy_error **reterr);

/* action-cache.c: archive input roots unpacked once, per user, into a
 * content-addressed cache (the rules are at the top of action-cache.c). */
struct act_cache {
    char *dir, *entry_path;   /* the cache (NULL: none here), the entry in use */
    int root, entries, seals, locks, tmp, memos, archive, lock, entry;
    unsigned char digest[32]; /* the archive's SHA-256 */
    char key[65];
    const char *state;        /* "hit", "built", "rebuilt" */
    unsigned char seal[32];   /* the entry's seal (action_cache_entry_unchecked) */
    bool remembered;          /* the digest was the one remembered for the file, not hashed */
};
/* Opens the cache (refused unless the caller's and written by nobody
 * else: FY_E_DENIED), hashes the archive, holds the entry's lock shared.
 * With no cache directory here, c->dir stays NULL. */
int action_cache_open(const fy_action *a, struct act_cache *c, fy_error **reterr);
/* The entry of the archive, walked as tree_scan_lower walks (dirs, st,
 * *overlayable as it fills them) and checked against its seal; made (or
 * made again, when refused) from the archive. Then c->entry (an fd) and
 * c->entry_path name it, and the lock held shared keeps it until
 * action_cache_close. */
int action_cache_entry(struct act_cache *c, const fy_action *a, const struct tree_ids *ids, struct pathset *dirs,
                       struct tree_stats *st, bool *overlayable, fy_error **reterr);
/* The entry of the archive opened as action_cache_entry opens it but not
 * yet walked (for an attempt that runs beside its check; c->state "hit"):
 * 0, 1 when there is no published and sealed entry of the caller's (then
 * action_cache_entry), -ENOMEM. */
int action_cache_entry_unchecked(struct act_cache *c);
/* The check action_cache_entry makes of an entry, for one opened by
 * action_cache_entry_unchecked (any thread; threads as tree_scan_lower's):
 * whether the walk gives its seal again (dirs, st, *overlayable filled). A
 * refused entry is removed and made again by the next action_cache_entry. */
bool action_cache_check(const struct act_cache *c, const fy_action *a, const struct tree_ids *ids, unsigned threads,
                        struct tree_stats *st, struct pathset *dirs, bool *overlayable);
void action_cache_close(struct act_cache *c);

struct collected;
/* Collects the declared outputs of the finished attempt from the execution
 * root (fd root) into the output directory (when the action names one).
 * inputs (tree_materialise's) makes the undeclared-file listing; with
 * lower >= 0 the root is an overlay's upper over that lower instead:
 * whiteouts are removed entries, and a file the lower has is an input.
 * survivors: how many processes of the attempt its cleanup found still
 * there; with any, nothing is collected, listed or made (one could still
 * change a file as it is hashed or handed out): *ret carries an
 * infrastructure failure. Returns 0 with *ret (which may carry an outcome:
 * violation, limit or that), or a negative FY_E_* for an infrastructure
 * failure. */
int tree_collect(const fy_action *a, int root, int lower, const struct pathset *inputs, uint64_t survivors,
                 struct collected **ret, fy_error **reterr);
/* 0 when path is missing or an empty directory; FY_E_STATE when it is not
 * empty (checked before an attempt starts). */
int tree_check_output_dir(const char *path, fy_error **reterr);
void collected_free(struct collected *c);
/* The ActionResult members of c (output_files, output_symlinks,
 * output_directories, missing_outputs, undeclared) into obj (a json_t *). */
int collected_to_json(const struct collected *c, void *obj);
int collected_outcome(const struct collected *c, const char **detail);
/* Removes the tree below the directory fd dir (then the caller removes
 * dir itself); 0, or 1 when something could not be removed. */
uint64_t tree_remove_below(int dir);
/* Empties the action's output directory (a collection whose result was
 * not made: nothing is handed out). */
void tree_discard_outputs(const fy_action *a);
/* Copies size bytes from src to dst (both at offset 0): a reflink where the
 * file system can, else copy_file_range, else reads; 0 or a negative errno. */
int tree_copy_data(int src, int dst, uint64_t size);
/* SHA-256 of a whole file (fd), its size into *size; negative errno. */
int tree_hash_fd(int fd, unsigned char digest[32], uint64_t *size);

#endif
