/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The privileged helper's wire protocol (forgeyard-sandbox-helper(8)).
 *
 * One request per connection, one reply. Every message is a 16-byte header
 * followed by at most FYH_MAX_PAYLOAD bytes:
 *
 *   u32 magic   FYH_MAGIC ("FYH1" as little-endian bytes)
 *   u16 version FYH_VERSION_MIN..FYH_VERSION (a reply carries its request's)
 *   u16 type    FYH_T_* (requests < 0x8000, replies >= 0x8000)
 *   u32 length  payload bytes, <= FYH_MAX_PAYLOAD
 *   u32 flags   0 (anything else is refused)
 *
 * Integers are little-endian; strings are u16 length + bytes (no NUL,
 * printable ASCII only). A decoder never trusts a length: every field is
 * bounds-checked against the bytes received, a payload must be consumed
 * exactly, and each type has its own value rules (fyh_decode). Both ends
 * decode with the same code; the helper validates every request again on
 * receipt, whatever the client library checked before sending it.
 *
 * No libc beyond memcpy/strlen: this file is compiled into the library, the
 * helper and the fuzz target. */
#ifndef FY_HELPER_PROTO_H
#define FY_HELPER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define FYH_MAGIC 0x31485946u /* "FYH1" */
/* Version 1: HELLO, CREATE, REMOVE. Version 2 adds the network requests
 * (NET_CREATE, NET_REMOVE), two fields at the end of WELCOME (what else
 * the helper offers, and its uplink), and the devices controller: a fourth
 * directory in WELCOME and CREATED, and CREATE's device rules at its end.
 * A version-1 message decodes as it always did; a version-2 type in a
 * version-1 header is FYH_E_TYPE, the devices bit there FYH_E_MALFORMED.
 * Version 3 adds cgroup v2: WELCOME's last field says which cgroup version
 * the helper's controllers are (a helper serving cgroup v2 offers no
 * controllers to an older peer, and refuses its CREATE: FYH_E_UNOFFERED, or
 * FYH_E_SYSTEM in version 1), and MOVE/MOVED: the helper moves one process
 * of the peer, named by a pidfd, into the peer's attempt cgroup (a v2
 * cgroup cannot be entered by the peer itself: fyh-main.c says why).
 * Version 4 adds NET_TAP/NET_TAPPED: the router of NET_CREATE whose
 * sandbox-side link is a tap device in the router namespace; the helper
 * hands the peer the tap's descriptor with NET_TAPPED's first bytes (a VMM
 * holds it: the VM backend's restricted network). NET_REMOVE removes it as
 * it removes a router. Version 4 also adds job networks (JOB_*): the
 * helper owns a job's namespace, bridge and rules for the peer, and links
 * a member's network namespace (a descriptor, checked as NET_CREATE's) to
 * it. The messages of versions 1-3 are unchanged. */
#define FYH_VERSION 4u
#define FYH_VERSION_MIN 1u
#define FYH_HEADER 16u
#define FYH_MAX_PAYLOAD 2048u
#define FYH_MAX_MESSAGE (FYH_HEADER + FYH_MAX_PAYLOAD)
#define FYH_NAME_MAX 64u  /* an attempt cgroup's name */
#define FYH_PATH_MAX 400u /* a directory in a reply */
#define FYH_MSG_MAX 200u  /* an error reply's text */
#define FYH_NET_RULES_MAX 64u /* allowed tuples of one NET_CREATE */
#define FYH_UPLINK_MAX 120u   /* the uplink's description in WELCOME / NET_CREATED */
#define FYH_JOB_MEMBERS_MAX 254u /* members of one job network (one /24) */

/* The default socket (forgeyard-sandbox-helper(8)); FORGEYARD_HELPER_SOCKET
 * overrides it for the library. */
#define FYH_DEFAULT_SOCKET "/run/forgeyard-helper/helper.sock"

enum fyh_type {
    FYH_T_HELLO = 1,  /* -> FYH_T_WELCOME: the peer's budget and parents */
    FYH_T_CREATE = 2, /* -> FYH_T_CREATED: an attempt cgroup with limits */
    FYH_T_REMOVE = 3, /* -> FYH_T_REMOVED: kill what is left, rmdir, witnessed */
    /* Version 2. NET_CREATE carries one descriptor (SCM_RIGHTS, with the
     * message's first bytes): the sandbox's network namespace, which must
     * be owned by a user namespace the peer's uid owns. */
    FYH_T_NET_CREATE = 4, /* -> FYH_T_NET_CREATED: router namespace, veths, nft allowlist */
    FYH_T_NET_REMOVE = 5, /* -> FYH_T_NET_REMOVED: the uplink veth deleted, witnessed */
    /* Version 3. MOVE carries one descriptor (SCM_RIGHTS, with the first
     * bytes): a pidfd of a process of the peer's uid that descends from the
     * peer; the helper writes it to the attempt's cgroup v2 cgroup.procs. */
    FYH_T_MOVE = 6, /* -> FYH_T_MOVED */
    /* Version 4. NET_TAP carries no descriptor: NET_CREATE's payload (a
     * name and the tuples); its reply NET_TAPPED (NET_CREATED's payload)
     * carries one, the tap "sb" of the router namespace, with its first
     * bytes. */
    FYH_T_NET_TAP = 7, /* -> FYH_T_NET_TAPPED */
    /* Version 4, job networks (u.job): JOB_CREATE names the job and its
     * member count; JOB_ADD carries one descriptor (the member's network
     * namespace, owned by a user namespace the peer's uid owns) and its
     * index; JOB_DEL unlinks an index; JOB_DESTROY removes the job. */
    FYH_T_JOB_CREATE = 8,  /* -> FYH_T_JOB_CREATED */
    FYH_T_JOB_ADD = 9,     /* -> FYH_T_JOB_ADDED */
    FYH_T_JOB_DEL = 10,    /* -> FYH_T_JOB_DELETED (u.job_done.left) */
    FYH_T_JOB_DESTROY = 11, /* -> FYH_T_JOB_DESTROYED (u.job_done.left) */
    FYH_T_WELCOME = 0x8001,
    FYH_T_CREATED = 0x8002,
    FYH_T_REMOVED = 0x8003,
    FYH_T_NET_CREATED = 0x8004,
    FYH_T_NET_REMOVED = 0x8005,
    FYH_T_MOVED = 0x8006,
    FYH_T_NET_TAPPED = 0x8007,
    FYH_T_JOB_CREATED = 0x8008,
    FYH_T_JOB_ADDED = 0x8009,
    FYH_T_JOB_DELETED = 0x800a,
    FYH_T_JOB_DESTROYED = 0x800b,
    FYH_T_ERROR = 0x80ff,
};

/* Typed refusals (FYH_T_ERROR's code). Never renumbered. */
enum fyh_err {
    FYH_E_MALFORMED = 1, /* payload does not decode (truncated, trailing bytes, bad string) */
    FYH_E_MAGIC = 2,
    FYH_E_VERSION = 3,
    FYH_E_TOO_BIG = 4,   /* length over FYH_MAX_PAYLOAD */
    FYH_E_TYPE = 5,      /* unknown or reply type sent as a request */
    FYH_E_DENIED = 6,    /* the peer's uid is not in the allowlist */
    FYH_E_BUDGET = 7,    /* over the peer's budget (count, memory, pids) */
    FYH_E_NAME = 8,      /* a name outside what the peer may touch */
    FYH_E_EXISTS = 9,
    FYH_E_NOT_FOUND = 10,
    FYH_E_BUSY = 11,     /* too many connections at once */
    FYH_E_TIMEOUT = 12,  /* the request did not arrive in time */
    FYH_E_SYSTEM = 13,   /* the kernel refused (os_errno says why) */
    FYH_E_FLAGS = 14,
    FYH_E_FD = 15,       /* a descriptor missing, extra, of the wrong kind or not the peer's to name */
    FYH_E_UNOFFERED = 16, /* this helper was not started to do that (no --net-uplink) */
    FYH_E__MAX = 16,
};

/* Controllers (bit masks; devices from version 2). */
#define FYH_CTL_MEMORY 1u
#define FYH_CTL_PIDS 2u
#define FYH_CTL_CPU 4u
#define FYH_CTL_DEVICES 8u
#define FYH_CTL_ALL 15u
#define FYH_NCTL 4     /* directories per message (version 2) */
#define FYH_NCTL_V1 3  /* ... in version 1 */
#define FYH_DEV_RULES_MAX 128u

/* A device rule of CREATE (version 2): what the attempt's devices cgroup
 * allows after "a" is denied. Access bits as the kernel's BPF_DEVCG_ACC_*
 * (mknod 1, read 2, write 4); FYH_DEV_ANY for any major or minor. */
#define FYH_DEV_ANY 0xffffffffu
struct fyh_dev_rule {
    uint8_t type;   /* 'c' or 'b' */
    uint8_t access; /* 1..7 */
    uint32_t major, minor;
};

/* Which cgroups a helper's controllers are (WELCOME, version 3). */
#define FYH_CGROUP_NONE 0u
#define FYH_CGROUP_V1 1u
#define FYH_CGROUP_V2 2u

/* What else a helper offers (WELCOME, version 2). */
#define FYH_OFFER_NET 1u
#define FYH_OFFER_ALL 1u

/* A rule of NET_CREATE: new flows to addr/prefix, proto, ports. */
#define FYH_PROTO_TCP 6u
#define FYH_PROTO_UDP 17u
struct fyh_net_rule {
    uint8_t family; /* 4 or 6 */
    uint8_t prefix; /* <= 32 or 128; the address has no bits beyond it */
    uint8_t proto;  /* FYH_PROTO_* */
    uint16_t port_min, port_max; /* 1 <= min <= max */
    uint8_t addr[16];            /* IPv4 in the first 4 bytes, the rest 0 */
};

struct fyh_header {
    uint32_t magic;
    uint16_t version, type;
    uint32_t length, flags;
};

/* Decoded messages: strings point into a copy owned by the struct. */
struct fyh_msg {
    uint16_t type;
    uint16_t version; /* decoded: the header's; to encode: 0 means FYH_VERSION */
    union {
        struct { /* CREATE */
            char name[FYH_NAME_MAX + 1];
            uint32_t controllers;
            uint64_t memory, swap, pids, cpu_millis; /* 0: not asked */
            uint32_t ndev;                           /* version 2: with FYH_CTL_DEVICES, >= 1 */
            struct fyh_dev_rule dev[FYH_DEV_RULES_MAX];
        } create;
        struct { /* REMOVE */
            char name[FYH_NAME_MAX + 1];
        } remove;
        struct { /* WELCOME */
            uint32_t uid, max_cgroups, controllers;
            uint64_t max_memory, max_pids;
            char parent[FYH_NCTL][FYH_PATH_MAX + 1]; /* per controller bit, "" if absent */
            uint32_t offers;                 /* version 2: FYH_OFFER_* */
            char uplink[FYH_UPLINK_MAX + 1]; /* version 2: with FYH_OFFER_NET, where traffic goes */
            uint32_t cgroup; /* version 3: FYH_CGROUP_*, NONE exactly when no controllers; with V2
                              * every parent is the same directory */
        } welcome;
        struct { /* MOVE (+ the process's pidfd) */
            char name[FYH_NAME_MAX + 1];
        } move;
        struct { /* MOVED */
            uint32_t pid; /* the process moved, as the helper's pid namespace numbers it */
        } moved;
        struct { /* NET_CREATE (+ the namespace's descriptor); NET_TAP (none) */
            char name[FYH_NAME_MAX + 1];
            uint32_t nrules;
            struct fyh_net_rule rule[FYH_NET_RULES_MAX];
        } net_create;
        struct { /* NET_REMOVE */
            char name[FYH_NAME_MAX + 1];
        } net_remove;
        struct { /* JOB_CREATE (n: members, 1..254), JOB_ADD (+ the member's namespace) and JOB_DEL (n: the
                  * member's index, < 254), JOB_DESTROY (n unused: 0) */
            char name[FYH_NAME_MAX + 1];
            uint32_t n;
        } job;
        struct { /* JOB_CREATED, JOB_ADDED, JOB_DELETED, JOB_DESTROYED */
            uint32_t left; /* objects that could not be removed (0 for CREATED and ADDED) */
        } job_done;
        struct { /* NET_CREATED; NET_TAPPED (+ the tap's descriptor) */
            char uplink[FYH_UPLINK_MAX + 1]; /* the uplink namespace, in words */
            char link[16];                   /* the uplink's veth: fyXXXXXXXX */
        } net_created;
        struct { /* NET_REMOVED */
            uint32_t left; /* objects that could not be removed */
        } net_removed;
        struct { /* CREATED */
            uint32_t controllers;
            char dir[FYH_NCTL][FYH_PATH_MAX + 1];
        } created;
        struct { /* REMOVED */
            uint32_t left; /* directories that could not be removed */
        } removed;
        struct { /* ERROR */
            uint32_t code, os_errno;
            char text[FYH_MSG_MAX + 1];
        } error;
    } u;
};

/* Header: 0, or -FYH_E_* (magic, version, flags, too big, type unknown). */
int fyh_decode_header(const uint8_t *buf, size_t len, struct fyh_header *h);
/* A whole message (header + payload, exactly len bytes): 0 or -FYH_E_*.
 * Every value rule is checked here (names, masks, ranges). */
int fyh_decode(const uint8_t *buf, size_t len, struct fyh_msg *m);
/* Encodes m into buf (FYH_MAX_MESSAGE bytes): the length, or -FYH_E_* when a
 * field breaks the rules (the encoder refuses what the decoder would). */
int fyh_encode(const struct fyh_msg *m, uint8_t *buf, size_t cap);
/* An attempt cgroup's name: forgeyard-<digits>-<16 hex digits>. */
int fyh_valid_name(const char *name);
/* A rule's own consistency (family, prefix, host bits, proto, ports): 1/0. */
int fyh_valid_rule(const struct fyh_net_rule *r);
/* A device rule's own consistency: 1/0. */
int fyh_valid_dev_rule(const struct fyh_dev_rule *d);
/* A link name of NET_CREATED: fy + 8 hex digits. */
int fyh_valid_link(const char *name);
const char *fyh_err_name(uint32_t code);

/* A CPU limit of millis thousandths of a CPU as a CFS quota and period in
 * microseconds (cpu.max, cpu.cfs_quota_us): 100 ms periods, or 1 s ones
 * below 10 millis, so that the quota never falls under the kernel's 1 ms
 * minimum. */
static inline void fyh_cpu_quota(uint64_t millis, uint64_t *quota_us, uint64_t *period_us) {
    *period_us = millis < 10 ? 1000000u : 100000u;
    *quota_us = millis * (*period_us / 1000u);
}

#endif
