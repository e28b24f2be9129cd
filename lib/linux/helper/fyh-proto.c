/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper protocol's codec (fyh-proto.h has the format). */
#include <string.h>

#include "fyh-proto.h"

#define LIMIT_MAX (UINT64_C(1) << 60) /* bytes, pids, millis: anything above is nonsense */

struct rd {
    const uint8_t *p;
    size_t left;
    int bad;
};

static uint64_t get(struct rd *r, size_t n) {
    uint64_t v = 0;
    if (r->bad || r->left < n) {
        r->bad = 1;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    r->left -= n;
    return v;
}

/* A u16-prefixed printable-ASCII string of at most max bytes into out. */
static void get_str(struct rd *r, char *out, size_t max) {
    size_t n = (size_t)get(r, 2);
    out[0] = '\0';
    if (r->bad)
        return;
    if (n > max || n > r->left) {
        r->bad = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (r->p[i] < 0x20 || r->p[i] > 0x7e) {
            r->bad = 1;
            return;
        }
    memcpy(out, r->p, n);
    out[n] = '\0';
    r->p += n;
    r->left -= n;
}

struct wr {
    uint8_t *p;
    size_t left;
    int bad;
};

static void put(struct wr *w, uint64_t v, size_t n) {
    if (w->bad || w->left < n) {
        w->bad = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        w->p[i] = (uint8_t)(v >> (8 * i));
    w->p += n;
    w->left -= n;
}

static void put_str(struct wr *w, const char *s, size_t max) {
    size_t n = strlen(s);
    if (n > max) {
        w->bad = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            w->bad = 1;
    put(w, n, 2);
    if (w->bad || w->left < n) {
        w->bad = 1;
        return;
    }
    memcpy(w->p, s, n);
    w->p += n;
    w->left -= n;
}

int fyh_valid_name(const char *name) {
    static const char prefix[] = "forgeyard-";
    size_t n = strlen(name), i = sizeof(prefix) - 1, digits = 0, hex = 0;
    if (n > FYH_NAME_MAX || strncmp(name, prefix, i) != 0)
        return 0;
    for (; name[i] >= '0' && name[i] <= '9'; i++)
        digits++;
    if (digits == 0 || digits > 10 || name[i++] != '-')
        return 0;
    for (; (name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'); i++)
        hex++;
    return hex == 16 && name[i] == '\0';
}

int fyh_valid_link(const char *name) {
    if (strncmp(name, "fy", 2) != 0 || strlen(name) != 10)
        return 0;
    for (int i = 2; i < 10; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

int fyh_valid_dev_rule(const struct fyh_dev_rule *d) {
    return (d->type == 'c' || d->type == 'b') && d->access >= 1 && d->access <= 7;
}

static int nctl(uint16_t version) { return version >= 2 ? FYH_NCTL : FYH_NCTL_V1; }
static uint32_t ctl_mask(uint16_t version) { return version >= 2 ? FYH_CTL_ALL : FYH_CTL_MEMORY | FYH_CTL_PIDS | FYH_CTL_CPU; }

int fyh_valid_rule(const struct fyh_net_rule *r) {
    unsigned bytes = r->family == 4 ? 4 : r->family == 6 ? 16 : 0;
    if (!bytes || r->prefix > 8 * bytes || (r->proto != FYH_PROTO_TCP && r->proto != FYH_PROTO_UDP) ||
        r->port_min == 0 || r->port_min > r->port_max)
        return 0;
    for (unsigned i = 0; i < 16; i++) {
        /* bits of byte i beyond the prefix (all of it past the family's length) */
        unsigned keep = i >= bytes ? 0 : r->prefix >= 8 * (i + 1) ? 8 : r->prefix > 8 * i ? r->prefix - 8 * i : 0;
        if (r->addr[i] & (uint8_t)(0xffu >> keep))
            return 0;
    }
    return 1;
}

static int known_type(uint16_t t, uint16_t version) {
    switch (t) {
    case FYH_T_HELLO: case FYH_T_CREATE: case FYH_T_REMOVE: case FYH_T_WELCOME: case FYH_T_CREATED:
    case FYH_T_REMOVED: case FYH_T_ERROR:
        return 1;
    case FYH_T_NET_CREATE: case FYH_T_NET_REMOVE: case FYH_T_NET_CREATED: case FYH_T_NET_REMOVED:
        return version >= 2;
    case FYH_T_MOVE: case FYH_T_MOVED:
        return version >= 3;
    case FYH_T_NET_TAP: case FYH_T_NET_TAPPED:
    case FYH_T_JOB_CREATE: case FYH_T_JOB_ADD: case FYH_T_JOB_DEL: case FYH_T_JOB_DESTROY:
    case FYH_T_JOB_CREATED: case FYH_T_JOB_ADDED: case FYH_T_JOB_DELETED: case FYH_T_JOB_DESTROYED:
        return version >= 4;
    default:
        return 0;
    }
}

int fyh_decode_header(const uint8_t *buf, size_t len, struct fyh_header *h) {
    struct rd r = {buf, len, 0};
    h->magic = (uint32_t)get(&r, 4);
    h->version = (uint16_t)get(&r, 2);
    h->type = (uint16_t)get(&r, 2);
    h->length = (uint32_t)get(&r, 4);
    h->flags = (uint32_t)get(&r, 4);
    if (r.bad)
        return -FYH_E_MALFORMED;
    if (h->magic != FYH_MAGIC)
        return -FYH_E_MAGIC;
    if (h->version < FYH_VERSION_MIN || h->version > FYH_VERSION)
        return -FYH_E_VERSION;
    if (h->flags != 0)
        return -FYH_E_FLAGS;
    if (h->length > FYH_MAX_PAYLOAD)
        return -FYH_E_TOO_BIG;
    if (!known_type(h->type, h->version))
        return -FYH_E_TYPE;
    return 0;
}

static int limit_ok(uint64_t v) {
    return v <= LIMIT_MAX;
}

int fyh_decode(const uint8_t *buf, size_t len, struct fyh_msg *m) {
    struct fyh_header h;
    memset(m, 0, sizeof(*m));
    int e = fyh_decode_header(buf, len, &h);
    if (e < 0)
        return e;
    if (len != FYH_HEADER + (size_t)h.length)
        return -FYH_E_MALFORMED;
    struct rd r = {buf + FYH_HEADER, h.length, 0};
    m->type = h.type;
    m->version = h.version;
    switch (h.type) {
    case FYH_T_HELLO:
        break;
    case FYH_T_CREATE:
        get_str(&r, m->u.create.name, FYH_NAME_MAX);
        m->u.create.controllers = (uint32_t)get(&r, 4);
        m->u.create.memory = get(&r, 8);
        m->u.create.swap = get(&r, 8);
        m->u.create.pids = get(&r, 8);
        m->u.create.cpu_millis = get(&r, 8);
        if (h.version >= 2) {
            m->u.create.ndev = (uint32_t)get(&r, 2);
            if (!r.bad && m->u.create.ndev > FYH_DEV_RULES_MAX)
                return -FYH_E_MALFORMED;
            for (uint32_t i = 0; !r.bad && i < m->u.create.ndev; i++) {
                struct fyh_dev_rule *d = &m->u.create.dev[i];
                d->type = (uint8_t)get(&r, 1);
                d->access = (uint8_t)get(&r, 1);
                d->major = (uint32_t)get(&r, 4);
                d->minor = (uint32_t)get(&r, 4);
                if (!r.bad && !fyh_valid_dev_rule(d))
                    return -FYH_E_MALFORMED;
            }
        }
        if (r.bad)
            break;
        if (!fyh_valid_name(m->u.create.name))
            return -FYH_E_NAME;
        if (m->u.create.controllers == 0 || (m->u.create.controllers & ~ctl_mask(h.version)) ||
            !(m->u.create.controllers & FYH_CTL_DEVICES) != !m->u.create.ndev ||
            !limit_ok(m->u.create.memory) || !limit_ok(m->u.create.swap) || !limit_ok(m->u.create.pids) ||
            !limit_ok(m->u.create.cpu_millis) ||
            ((m->u.create.controllers & FYH_CTL_MEMORY) && m->u.create.memory == 0) ||
            ((m->u.create.controllers & FYH_CTL_PIDS) && m->u.create.pids == 0) ||
            ((m->u.create.controllers & FYH_CTL_CPU) && m->u.create.cpu_millis == 0))
            return -FYH_E_MALFORMED;
        break;
    case FYH_T_REMOVE:
        get_str(&r, m->u.remove.name, FYH_NAME_MAX);
        if (!r.bad && !fyh_valid_name(m->u.remove.name))
            return -FYH_E_NAME;
        break;
    case FYH_T_WELCOME:
        m->u.welcome.uid = (uint32_t)get(&r, 4);
        m->u.welcome.max_cgroups = (uint32_t)get(&r, 4);
        m->u.welcome.controllers = (uint32_t)get(&r, 4);
        m->u.welcome.max_memory = get(&r, 8);
        m->u.welcome.max_pids = get(&r, 8);
        for (int i = 0; i < nctl(h.version); i++)
            get_str(&r, m->u.welcome.parent[i], FYH_PATH_MAX);
        if (!r.bad && (m->u.welcome.controllers & ~ctl_mask(h.version)))
            return -FYH_E_MALFORMED;
        for (int i = 0; !r.bad && i < nctl(h.version); i++)
            if (!(m->u.welcome.controllers & (1u << i)) != !m->u.welcome.parent[i][0] ||
                (m->u.welcome.parent[i][0] && m->u.welcome.parent[i][0] != '/'))
                return -FYH_E_MALFORMED;
        if (h.version >= 2) {
            m->u.welcome.offers = (uint32_t)get(&r, 4);
            get_str(&r, m->u.welcome.uplink, FYH_UPLINK_MAX);
            if (!r.bad && ((m->u.welcome.offers & ~FYH_OFFER_ALL) ||
                           !(m->u.welcome.offers & FYH_OFFER_NET) != !m->u.welcome.uplink[0]))
                return -FYH_E_MALFORMED;
        }
        if (h.version >= 3) {
            m->u.welcome.cgroup = (uint32_t)get(&r, 1);
            if (!r.bad && (m->u.welcome.cgroup > FYH_CGROUP_V2 ||
                           !m->u.welcome.controllers != (m->u.welcome.cgroup == FYH_CGROUP_NONE)))
                return -FYH_E_MALFORMED;
            /* v2: one cgroup per attempt, so one parent for every controller */
            for (int i = 0; !r.bad && m->u.welcome.cgroup == FYH_CGROUP_V2 && i < FYH_NCTL; i++)
                if (m->u.welcome.parent[i][0] && strcmp(m->u.welcome.parent[i], m->u.welcome.parent[__builtin_ctz(m->u.welcome.controllers)]) != 0)
                    return -FYH_E_MALFORMED;
        } else if (m->u.welcome.controllers) {
            m->u.welcome.cgroup = FYH_CGROUP_V1; /* (what an older helper serves) */
        }
        break;
    case FYH_T_MOVE:
        get_str(&r, m->u.move.name, FYH_NAME_MAX);
        if (!r.bad && !fyh_valid_name(m->u.move.name))
            return -FYH_E_NAME;
        break;
    case FYH_T_MOVED:
        m->u.moved.pid = (uint32_t)get(&r, 4);
        if (!r.bad && (m->u.moved.pid == 0 || m->u.moved.pid > (1u << 22)))
            return -FYH_E_MALFORMED;
        break;
    case FYH_T_NET_CREATE:
    case FYH_T_NET_TAP:
        get_str(&r, m->u.net_create.name, FYH_NAME_MAX);
        m->u.net_create.nrules = (uint32_t)get(&r, 2);
        if (!r.bad && m->u.net_create.nrules > FYH_NET_RULES_MAX)
            return -FYH_E_MALFORMED;
        for (uint32_t i = 0; !r.bad && i < m->u.net_create.nrules; i++) {
            struct fyh_net_rule *x = &m->u.net_create.rule[i];
            x->family = (uint8_t)get(&r, 1);
            x->prefix = (uint8_t)get(&r, 1);
            x->proto = (uint8_t)get(&r, 1);
            x->port_min = (uint16_t)get(&r, 2);
            x->port_max = (uint16_t)get(&r, 2);
            for (int k = 0; k < 16; k++)
                x->addr[k] = (uint8_t)get(&r, 1);
            if (!r.bad && !fyh_valid_rule(x))
                return -FYH_E_MALFORMED;
        }
        if (!r.bad && !fyh_valid_name(m->u.net_create.name))
            return -FYH_E_NAME;
        break;
    case FYH_T_NET_REMOVE:
        get_str(&r, m->u.net_remove.name, FYH_NAME_MAX);
        if (!r.bad && !fyh_valid_name(m->u.net_remove.name))
            return -FYH_E_NAME;
        break;
    case FYH_T_NET_CREATED:
    case FYH_T_NET_TAPPED:
        get_str(&r, m->u.net_created.uplink, FYH_UPLINK_MAX);
        get_str(&r, m->u.net_created.link, sizeof(m->u.net_created.link) - 1);
        if (!r.bad && (!m->u.net_created.uplink[0] || !fyh_valid_link(m->u.net_created.link)))
            return -FYH_E_MALFORMED;
        break;
    case FYH_T_NET_REMOVED:
        m->u.net_removed.left = (uint32_t)get(&r, 4);
        break;
    case FYH_T_JOB_CREATE:
    case FYH_T_JOB_ADD:
    case FYH_T_JOB_DEL:
        get_str(&r, m->u.job.name, FYH_NAME_MAX);
        m->u.job.n = (uint32_t)get(&r, 2);
        if (!r.bad && (m->type == FYH_T_JOB_CREATE ? m->u.job.n == 0 || m->u.job.n > FYH_JOB_MEMBERS_MAX
                                                   : m->u.job.n >= FYH_JOB_MEMBERS_MAX))
            return -FYH_E_MALFORMED;
        if (!r.bad && !fyh_valid_name(m->u.job.name))
            return -FYH_E_NAME;
        break;
    case FYH_T_JOB_DESTROY:
        get_str(&r, m->u.job.name, FYH_NAME_MAX);
        if (!r.bad && !fyh_valid_name(m->u.job.name))
            return -FYH_E_NAME;
        break;
    case FYH_T_JOB_CREATED:
    case FYH_T_JOB_ADDED:
    case FYH_T_JOB_DELETED:
    case FYH_T_JOB_DESTROYED:
        m->u.job_done.left = (uint32_t)get(&r, 4);
        break;
    case FYH_T_CREATED:
        m->u.created.controllers = (uint32_t)get(&r, 4);
        for (int i = 0; i < nctl(h.version); i++)
            get_str(&r, m->u.created.dir[i], FYH_PATH_MAX);
        if (!r.bad && (m->u.created.controllers == 0 || (m->u.created.controllers & ~ctl_mask(h.version))))
            return -FYH_E_MALFORMED;
        for (int i = 0; !r.bad && i < nctl(h.version); i++)
            if (!(m->u.created.controllers & (1u << i)) != !m->u.created.dir[i][0] ||
                (m->u.created.dir[i][0] && m->u.created.dir[i][0] != '/') || strstr(m->u.created.dir[i], "/.."))
                return -FYH_E_MALFORMED;
        break;
    case FYH_T_REMOVED:
        m->u.removed.left = (uint32_t)get(&r, 4);
        break;
    case FYH_T_ERROR:
        m->u.error.code = (uint32_t)get(&r, 4);
        m->u.error.os_errno = (uint32_t)get(&r, 4);
        get_str(&r, m->u.error.text, FYH_MSG_MAX);
        if (!r.bad && (m->u.error.code == 0 || m->u.error.code > FYH_E__MAX || m->u.error.os_errno > 4095))
            return -FYH_E_MALFORMED;
        break;
    default:
        return -FYH_E_TYPE;
    }
    if (r.bad || r.left != 0)
        return -FYH_E_MALFORMED;
    return 0;
}

int fyh_encode(const struct fyh_msg *m, uint8_t *buf, size_t cap) {
    if (cap < FYH_HEADER)
        return -FYH_E_TOO_BIG;
    size_t room = cap - FYH_HEADER < FYH_MAX_PAYLOAD ? cap - FYH_HEADER : FYH_MAX_PAYLOAD;
    struct wr w = {buf + FYH_HEADER, room, 0};
    uint16_t version = m->version ? m->version : (uint16_t)FYH_VERSION;
    if (version < FYH_VERSION_MIN || version > FYH_VERSION)
        return -FYH_E_VERSION;
    if (!known_type(m->type, version))
        return -FYH_E_TYPE;
    switch (m->type) {
    case FYH_T_HELLO:
        break;
    case FYH_T_CREATE:
        put_str(&w, m->u.create.name, FYH_NAME_MAX);
        put(&w, m->u.create.controllers, 4);
        put(&w, m->u.create.memory, 8);
        put(&w, m->u.create.swap, 8);
        put(&w, m->u.create.pids, 8);
        put(&w, m->u.create.cpu_millis, 8);
        if (version >= 2) {
            if (m->u.create.ndev > FYH_DEV_RULES_MAX)
                return -FYH_E_TOO_BIG;
            put(&w, m->u.create.ndev, 2);
            for (uint32_t i = 0; i < m->u.create.ndev; i++) {
                put(&w, m->u.create.dev[i].type, 1);
                put(&w, m->u.create.dev[i].access, 1);
                put(&w, m->u.create.dev[i].major, 4);
                put(&w, m->u.create.dev[i].minor, 4);
            }
        }
        break;
    case FYH_T_REMOVE:
        put_str(&w, m->u.remove.name, FYH_NAME_MAX);
        break;
    case FYH_T_WELCOME:
        put(&w, m->u.welcome.uid, 4);
        put(&w, m->u.welcome.max_cgroups, 4);
        put(&w, m->u.welcome.controllers, 4);
        put(&w, m->u.welcome.max_memory, 8);
        put(&w, m->u.welcome.max_pids, 8);
        for (int i = 0; i < nctl(version); i++)
            put_str(&w, m->u.welcome.parent[i], FYH_PATH_MAX);
        if (version >= 2) {
            put(&w, m->u.welcome.offers, 4);
            put_str(&w, m->u.welcome.uplink, FYH_UPLINK_MAX);
        }
        if (version >= 3)
            put(&w, m->u.welcome.cgroup, 1);
        break;
    case FYH_T_MOVE:
        put_str(&w, m->u.move.name, FYH_NAME_MAX);
        break;
    case FYH_T_MOVED:
        put(&w, m->u.moved.pid, 4);
        break;
    case FYH_T_NET_CREATE:
    case FYH_T_NET_TAP:
        if (m->u.net_create.nrules > FYH_NET_RULES_MAX)
            return -FYH_E_TOO_BIG;
        put_str(&w, m->u.net_create.name, FYH_NAME_MAX);
        put(&w, m->u.net_create.nrules, 2);
        for (uint32_t i = 0; i < m->u.net_create.nrules; i++) {
            const struct fyh_net_rule *x = &m->u.net_create.rule[i];
            put(&w, x->family, 1);
            put(&w, x->prefix, 1);
            put(&w, x->proto, 1);
            put(&w, x->port_min, 2);
            put(&w, x->port_max, 2);
            for (int k = 0; k < 16; k++)
                put(&w, x->addr[k], 1);
        }
        break;
    case FYH_T_NET_REMOVE:
        put_str(&w, m->u.net_remove.name, FYH_NAME_MAX);
        break;
    case FYH_T_NET_CREATED:
    case FYH_T_NET_TAPPED:
        put_str(&w, m->u.net_created.uplink, FYH_UPLINK_MAX);
        put_str(&w, m->u.net_created.link, sizeof(m->u.net_created.link) - 1);
        break;
    case FYH_T_NET_REMOVED:
        put(&w, m->u.net_removed.left, 4);
        break;
    case FYH_T_JOB_CREATE:
    case FYH_T_JOB_ADD:
    case FYH_T_JOB_DEL:
        put_str(&w, m->u.job.name, FYH_NAME_MAX);
        put(&w, m->u.job.n, 2);
        break;
    case FYH_T_JOB_DESTROY:
        put_str(&w, m->u.job.name, FYH_NAME_MAX);
        break;
    case FYH_T_JOB_CREATED:
    case FYH_T_JOB_ADDED:
    case FYH_T_JOB_DELETED:
    case FYH_T_JOB_DESTROYED:
        put(&w, m->u.job_done.left, 4);
        break;
    case FYH_T_CREATED:
        put(&w, m->u.created.controllers, 4);
        for (int i = 0; i < nctl(version); i++)
            put_str(&w, m->u.created.dir[i], FYH_PATH_MAX);
        break;
    case FYH_T_REMOVED:
        put(&w, m->u.removed.left, 4);
        break;
    case FYH_T_ERROR:
        put(&w, m->u.error.code, 4);
        put(&w, m->u.error.os_errno, 4);
        put_str(&w, m->u.error.text, FYH_MSG_MAX);
        break;
    default:
        return -FYH_E_TYPE;
    }
    if (w.bad)
        return -FYH_E_TOO_BIG;
    size_t len = room - w.left;
    struct wr h = {buf, FYH_HEADER, 0};
    put(&h, FYH_MAGIC, 4);
    put(&h, version, 2);
    put(&h, m->type, 2);
    put(&h, len, 4);
    put(&h, 0, 4);
    /* What we send must be what the other end accepts. */
    struct fyh_msg check;
    int e = fyh_decode(buf, FYH_HEADER + len, &check);
    return e < 0 ? e : (int)(FYH_HEADER + len);
}

const char *fyh_err_name(uint32_t code) {
    static const char *const names[] = {
        [FYH_E_MALFORMED] = "malformed", [FYH_E_MAGIC] = "bad-magic", [FYH_E_VERSION] = "bad-version",
        [FYH_E_TOO_BIG] = "too-big", [FYH_E_TYPE] = "bad-type", [FYH_E_DENIED] = "denied",
        [FYH_E_BUDGET] = "over-budget", [FYH_E_NAME] = "bad-name", [FYH_E_EXISTS] = "exists",
        [FYH_E_NOT_FOUND] = "not-found", [FYH_E_BUSY] = "busy", [FYH_E_TIMEOUT] = "timeout",
        [FYH_E_SYSTEM] = "system", [FYH_E_FLAGS] = "bad-flags", [FYH_E_FD] = "bad-descriptor",
        [FYH_E_UNOFFERED] = "not-offered",
    };
    return code >= 1 && code <= FYH_E__MAX ? names[code] : "unknown";
}
