/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The control protocol between the host and the guest agent, over one
 * virtio-serial port: framed, versioned, length-prefixed. Shared by the
 * library (vm-run.c, which decodes what an untrusted guest sends) and the
 * guest agent (guest/vm-agent.c); it depends on nothing but libc's string
 * functions, so that both can link it.
 *
 * A frame is a 12-byte header, little-endian:
 *   u32 magic "FYVM", u8 version, u8 type, u16 flags, u32 length
 * followed by length bytes of payload (at most VMP_MAX_FRAME). A decoder
 * refuses any other magic, version, unknown type or larger length: the
 * stream is then dead (a protocol error is never resynchronised). */
#ifndef FY_VM_PROTO_H
#define FY_VM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMP_MAGIC 0x4d565946u /* "FYVM" little-endian */
#define VMP_VERSION 1
#define VMP_HDR 12
#define VMP_MAX_FRAME (64u << 10)
/* The agent's hello text, the only one the host accepts. */
#define VMP_HELLO_TEXT "forgeyard-vm-agent 1"

/* Guest to host. */
enum {
    VMP_HELLO = 1,      /* the agent is up: text "forgeyard-vm-agent <version>" */
    VMP_STDOUT = 2,     /* a chunk of the workload's stdout */
    VMP_STDERR = 3,
    VMP_EXIT = 4,       /* struct vmp_exit (vmp_put_exit / vmp_get_exit) */
    VMP_TAR = 5,        /* a chunk of a tar stream of a writable workspace dir; flags: VMP_DIR_* */
    VMP_TAR_END = 6,    /* that stream ended (flags: VMP_DIR_*) */
    VMP_SETUP_FAIL = 7, /* u32 errno, then text: the command never ran */
    VMP_DONE = 8,       /* nothing follows; the host then ends the VMM */
    VMP_LOG = 9,        /* diagnostic text of the agent (what it enforced) */
    /* Both ways, under fetch-only (flags: the connection's id, below
     * VMP_NET_CONNS): a connection the workload made to the agent's
     * listener on 127.0.0.1:3128 in the guest, carried to the host, which
     * connects it to the attempt's proxy. Ids are the guest's. At most
     * VMP_NET_WINDOW bytes of a connection's DATA are unacknowledged each
     * way: the receiver ACKs what it delivered onward, so neither side
     * ever buffers more. */
    VMP_NET_OPEN = 10,  /* guest: a new connection */
    VMP_NET_DATA = 11,  /* its bytes */
    VMP_NET_EOF = 12,   /* no more bytes this way (a half close; from the host also "refused") */
    VMP_NET_ACK = 13,   /* u32: bytes of DATA delivered onward */
    VMP_NET_CLOSE = 14, /* guest: done, nothing more from it; host: acknowledged, the id is free */
    /* Under restricted and fetch-only when the plan has a DNS stub: a
     * datagram the workload sent to the agent's socket on 127.0.0.53:53 in
     * the guest (flags: the agent's slot for its sender, below
     * VMP_DNS_SLOTS; VMP_DNS_MIN..VMP_DNS_MAX bytes), carried to the stub
     * on the host (vmp_dns_check). */
    VMP_DNS_QUERY = 15,
    /* Host to guest. */
    VMP_RUN = 32,       /* the command: records (vmp_rec_*) */
    VMP_STDIN = 33,
    VMP_STDIN_EOF = 34,
    VMP_SIGNAL = 35,    /* u32 signal for the workload's process group */
    /* After a template restore (vm-template.c), before anything of the
     * attempt: u64 the host's CLOCK_REALTIME in usec, then VMP_SEED_LEN
     * bytes of fresh host randomness. The agent mixes them into the guest
     * kernel's pool, forces a CRNG reseed, sets the clock, and answers with
     * its HELLO again. */
    VMP_RESEED = 36,
    VMP_FILES = 37,     /* a chunk of the attempt's files: a cpio (newc) stream */
    VMP_FILES_END = 38, /* that stream ended: the agent has unpacked it all */
    VMP_DNS_ANSWER = 39, /* the stub's answer to the query of slot flags */
    /* A pre-started clone (vm-shell.c), after its restore and before any
     * claim: u32 milliseconds. The agent warms up, answers HELLO (ready),
     * and powers the guest off unless a RESEED (the claim) arrives within
     * them. */
    VMP_IDLE = 40,
};
#define VMP_TYPE_MAX 40
#define VMP_G2H_MAX VMP_DNS_QUERY
#define VMP_DNS_SLOTS 64
#define VMP_DNS_MIN 12
#define VMP_DNS_MAX 512
#define VMP_NET_CONNS 64
#define VMP_NET_WINDOW (256u << 10)
#define VMP_SEED_LEN 64

/* The resource limits a RUN may set (not the guest's RLIMIT_* numbers). */
#define VMP_RLIMIT_NOFILE 1
#define VMP_RLIMIT_FSIZE 2
#define VMP_RLIMIT_STACK 3
#define VMP_RLIMIT_CORE 4

/* Which workspace directory a tar stream carries. */
#define VMP_DIR_BUILD 1
#define VMP_DIR_OUTPUT 2

/* In a VMP_TAR stream's ustar headers, the modification time's nanoseconds:
 * nine decimal digits from this offset, in the padding every other reader
 * skips (a pax "mtime" record would cost 1 KiB more per file; whole
 * seconds would make a file written later in the same second as another
 * look no newer to make). */
#define VMP_TAR_NSEC_AT 500
/* The most components an entry's path has in a stream (the host's reader
 * has the same bound), and the most the host takes of guest text for a
 * detail (a VMP_TAR_END's "skip REASON: PATH" of the first entry the
 * stream could not carry, a VMP_SETUP_FAIL's message). */
#define VMP_TAR_DEPTH 64
#define VMP_GUEST_TEXT_MAX 512

/* RUN records: u8 tag, u32 length, bytes. */
enum {
    VMR_ARG = 1,      /* one argv string */
    VMR_ENV = 2,      /* NAME=value */
    VMR_CWD = 3,
    VMR_PATH = 4,     /* PATH that finds argv[0] */
    VMR_UID = 5,      /* u32 */
    VMR_GID = 6,      /* u32 */
    VMR_MEMORY = 7,   /* u64 bytes (memory.max), 0: none */
    VMR_PIDS = 8,     /* u64 (pids.max), 0: none */
    VMR_CPU = 9,      /* u64 millicpus (cpu.max), 0: none */
    VMR_HOSTNAME = 10,
    VMR_MOUNT9P = 11, /* "tag\0target": a read-only host runtime directory */
    VMR_TMPFS = 12,   /* u32 mode, u32 owned, u64 size, target */
    VMR_RO = 13,      /* a directory made read-only (bind remount) */
    VMR_COLLECT = 14, /* u32 VMP_DIR_*, then the directory to send back as tar */
    VMR_OUTPUT_MAX = 15, /* u64: bytes of tar the agent may send at most */
    VMR_RLIMIT = 16,  /* u32 VMP_RLIMIT_*, u64 value: set in the workload before exec */
    VMR_SECRET_FILE = 17, /* "name\0value": a file (0400, the workload's) in /run/secrets */
    VMR_MOUNT9P_RW = 19, /* "tag\0target": a host directory the policy binds writable */
    VMR_NET_PROXY = 18, /* u32 port: fetch-only, listen on 127.0.0.1:port and carry (VMP_NET_*) */
    /* restricted: the guest's eth0 (struct vmp_iface, VMP_IFACE_LEN bytes):
     * its addresses and default routes; nothing else is configured. */
    VMR_NET_IFACE = 20,
    VMR_DNS = 21,      /* empty: listen on 127.0.0.53:53/udp and carry (VMP_DNS_*) */
    /* empty: a pre-started clone's 9p exports are stubs, each attempt
     * directory attached at the claim in their subdirectory VMP_SHARE_SUB:
     * that subdirectory is what a VMR_MOUNT9P mounts at its target. */
    VMR_SHARES_SUB = 22,
    /* empty: the workload has pseudo-terminals of its own (devices.pty
     * private): /dev/pts, /dev/ptmx and /dev/tty stay; without it the agent
     * removes them before the workload starts (deny, the default). */
    VMR_PTYS = 23,
};
#define VMP_SHARE_SUB "x"

struct vmp_iface {
    uint8_t addr4[4], gw4[4], addr6[16], gw6[16];
    uint8_t prefix4, prefix6;
};
#define VMP_IFACE_LEN 42
void vmp_put_iface(uint8_t out[VMP_IFACE_LEN], const struct vmp_iface *i);
/* 0, or -1 when the payload is not a valid interface record. */
int vmp_get_iface(const uint8_t *p, size_t len, struct vmp_iface *i);
/* A guest's VMP_DNS_QUERY frame: 0 when its slot and length are valid
 * (what the host then hands to the stub), -1 otherwise. */
int vmp_dns_check(uint8_t type, uint16_t flags, uint32_t len);

struct vmp_exit {
    uint32_t kind;          /* 1 exited, 2 killed by a signal */
    uint32_t code;          /* exit status or signal */
    uint32_t oom_kills;     /* the guest cgroup's memory.events oom_kill */
    uint32_t pids_max;      /* its pids.events max */
    uint64_t utime_usec, stime_usec, maxrss_kb;
    uint64_t run_usec;      /* guest time from exec to exit */
    uint64_t memory_peak;   /* bytes (memory.peak when the guest kernel has it, else 0) */
};
#define VMP_EXIT_LEN 56

/* ---- the stream decoder ---- */
struct vmp_frame {
    uint8_t type;
    uint16_t flags;
    uint32_t len;
    const uint8_t *data;    /* borrowed until the next vmp_next */
};

/* Whether f is the agent's hello (VMP_HELLO carrying VMP_HELLO_TEXT exactly). */
bool vmp_is_hello(const struct vmp_frame *f);

struct vmp_dec {
    uint8_t buf[VMP_HDR + VMP_MAX_FRAME];
    size_t have;            /* bytes buffered */
    size_t consumed;        /* bytes of buf already handed out */
    uint64_t total;         /* bytes fed so far */
    uint64_t frames;
    const char *error;      /* sticky: static text */
};

void vmp_dec_init(struct vmp_dec *d);
/* Room left for raw bytes: fill buf + have up to this many, then call
 * vmp_added. Compacts first. */
size_t vmp_room(struct vmp_dec *d);
void vmp_added(struct vmp_dec *d, size_t n);
/* Copies up to n bytes in (vmp_room, then vmp_added); returns how many. */
size_t vmp_feed(struct vmp_dec *d, const void *p, size_t n);
/* 1: *f is the next complete frame; 0: more bytes needed; -1: protocol
 * error (d->error says which; sticky). */
int vmp_next(struct vmp_dec *d, struct vmp_frame *f);

/* ---- encoding ---- */
void vmp_header(uint8_t out[VMP_HDR], uint8_t type, uint16_t flags, uint32_t len);
void vmp_put_u32(uint8_t *p, uint32_t v);
void vmp_put_u64(uint8_t *p, uint64_t v);
uint32_t vmp_get_u32(const uint8_t *p);
uint64_t vmp_get_u64(const uint8_t *p);
void vmp_put_exit(uint8_t out[VMP_EXIT_LEN], const struct vmp_exit *e);
/* 0, or -1 when the payload is not a valid exit record. */
int vmp_get_exit(const uint8_t *p, size_t len, struct vmp_exit *e);

/* ---- RUN records ---- */
struct vmp_rec_iter {
    const uint8_t *p;
    size_t len, off;
};
/* 1: a record (*tag, *data, *dlen); 0: the end; -1: malformed. */
int vmp_rec_next(struct vmp_rec_iter *it, uint8_t *tag, const uint8_t **data, uint32_t *dlen);

#endif
