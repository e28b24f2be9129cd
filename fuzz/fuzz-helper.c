/* Fuzz target: the privileged helper's message decoder (fyh-proto.c), the
 * first code that reads what an unprivileged peer sends to a root process.
 * Aborts when the decoder accepts a message that breaks a rule the helper
 * relies on (a name outside forgeyard-<pid>-<16 hex>, a mask beyond the
 * controllers, a length that is not the bytes given, a string with a control
 * character or a relative or dot-dot directory, a network rule with host
 * bits, a bad family, protocol or port range, a device rule that is not a
 * devices.allow line, a version-2 message in a version-1 header, a MOVE or
 * MOVED below version 3 or naming another name, a MOVED pid of 0, a WELCOME
 * whose cgroup version disagrees with its controllers or whose cgroup v2
 * parents differ, a NET_TAP or NET_TAPPED below version 4 or with a bad
 * name, tuple or link, a JOB_* below version 4, with a bad name, a member
 * count outside 1..254 or an index beyond 253), when the header decoder and
 * the whole-message decoder disagree, or when an accepted message does not
 * encode back to the very same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linux/helper/fyh-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int printable(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct fyh_msg m;
    struct fyh_header h;
    int e = fyh_decode(data, size, &m);
    int eh = fyh_decode_header(data, size, &h);
    if (e < 0) {
        if (e < -FYH_E__MAX || (eh < 0 && e != eh))
            abort();
        return 0;
    }
    if (eh < 0 || size != FYH_HEADER + h.length || h.length > FYH_MAX_PAYLOAD || m.type != h.type)
        abort();
    switch (m.type) {
    case FYH_T_CREATE:
        if (!fyh_valid_name(m.u.create.name) || !m.u.create.controllers || (m.u.create.controllers & ~FYH_CTL_ALL))
            abort();
        if ((m.u.create.controllers & FYH_CTL_MEMORY) && !m.u.create.memory)
            abort();
        /* devices (version 2 only): a list exactly when asked, each rule a valid devices.allow line */
        if ((m.u.create.controllers & FYH_CTL_DEVICES) && (m.version < 2 || !m.u.create.ndev))
            abort();
        if (m.u.create.ndev > FYH_DEV_RULES_MAX || (!(m.u.create.controllers & FYH_CTL_DEVICES) && m.u.create.ndev))
            abort();
        for (uint32_t i = 0; i < m.u.create.ndev; i++)
            if (!fyh_valid_dev_rule(&m.u.create.dev[i]))
                abort();
        break;
    case FYH_T_REMOVE:
        if (!fyh_valid_name(m.u.remove.name))
            abort();
        break;
    case FYH_T_NET_CREATE: /* version 2: the helper builds nft text from these */
    case FYH_T_NET_TAP:    /* version 4: the same, the sandbox-side link a tap */
        if (m.version < (m.type == FYH_T_NET_TAP ? 4 : 2) || !fyh_valid_name(m.u.net_create.name) || m.u.net_create.nrules > FYH_NET_RULES_MAX)
            abort();
        for (uint32_t i = 0; i < m.u.net_create.nrules; i++)
            if (!fyh_valid_rule(&m.u.net_create.rule[i]))
                abort();
        break;
    case FYH_T_NET_REMOVE:
        if (m.version < 2 || !fyh_valid_name(m.u.net_remove.name))
            abort();
        break;
    case FYH_T_JOB_CREATE: /* version 4: a job network's member count */
        if (m.version < 4 || !fyh_valid_name(m.u.job.name) || m.u.job.n == 0 || m.u.job.n > FYH_JOB_MEMBERS_MAX)
            abort();
        break;
    case FYH_T_JOB_ADD: /* ... a member's index (its port and address) */
    case FYH_T_JOB_DEL:
        if (m.version < 4 || !fyh_valid_name(m.u.job.name) || m.u.job.n >= FYH_JOB_MEMBERS_MAX)
            abort();
        break;
    case FYH_T_JOB_DESTROY:
        if (m.version < 4 || !fyh_valid_name(m.u.job.name) || m.u.job.n)
            abort();
        break;
    case FYH_T_JOB_CREATED: case FYH_T_JOB_ADDED: case FYH_T_JOB_DELETED: case FYH_T_JOB_DESTROYED:
        if (m.version < 4)
            abort();
        break;
    case FYH_T_MOVE: /* version 3: the helper moves a pidfd's process into this name's cgroup */
        if (m.version < 3 || !fyh_valid_name(m.u.move.name))
            abort();
        break;
    case FYH_T_MOVED:
        if (m.version < 3 || m.u.moved.pid == 0)
            abort();
        break;
    case FYH_T_WELCOME:
        if (m.u.welcome.cgroup > FYH_CGROUP_V2 || !m.u.welcome.controllers != (m.u.welcome.cgroup == FYH_CGROUP_NONE) ||
            (m.u.welcome.cgroup == FYH_CGROUP_V2 && m.version < 3))
            abort();
        for (int i = 0; i < FYH_NCTL; i++) {
            if (!(m.u.welcome.controllers & (1u << i)) != !m.u.welcome.parent[i][0] ||
                (m.u.welcome.parent[i][0] && (m.u.welcome.parent[i][0] != '/' || !printable(m.u.welcome.parent[i]))))
                abort();
            /* cgroup v2: one cgroup per attempt, below one parent */
            for (int k = 0; m.u.welcome.cgroup == FYH_CGROUP_V2 && k < i; k++)
                if (m.u.welcome.parent[i][0] && m.u.welcome.parent[k][0] &&
                    strcmp(m.u.welcome.parent[i], m.u.welcome.parent[k]) != 0)
                    abort();
        }
        break;
    case FYH_T_NET_CREATED:
    case FYH_T_NET_TAPPED:
        if ((m.type == FYH_T_NET_TAPPED && m.version < 4) || !fyh_valid_link(m.u.net_created.link) || !printable(m.u.net_created.uplink))
            abort();
        break;
    case FYH_T_CREATED:
        for (int i = 0; i < FYH_NCTL; i++)
            if (m.u.created.dir[i][0] && (m.u.created.dir[i][0] != '/' || strstr(m.u.created.dir[i], "/..") ||
                                          !printable(m.u.created.dir[i])))
                abort();
        break;
    case FYH_T_ERROR:
        if (!m.u.error.code || m.u.error.code > FYH_E__MAX || !printable(m.u.error.text))
            abort();
        break;
    default:
        break;
    }
    /* Accepted: the canonical encoding is these bytes. */
    uint8_t out[FYH_MAX_MESSAGE];
    int n = fyh_encode(&m, out, sizeof(out));
    if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
        abort();
    return 0;
}
