/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the helper's peer has: parsing and comparing (fyh-peer.h). */
#include "fyh-peer.h"

#include <string.h>

static bool copy(char *out, size_t len, const char *s, size_t n) {
    if (n >= len)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

int fyh_proc_cgroup_path(const char *text, const char *ctl, char *out, size_t len) {
    int found = 0;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c2) {
            bool match = false;
            if (!ctl) {
                match = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
            } else {
                size_t cl = strlen(ctl);
                for (const char *p = c1 + 1; p < c2 && !match;) {
                    const char *comma = memchr(p, ',', (size_t)(c2 - p)), *e = comma ? comma : c2;
                    match = (size_t)(e - p) == cl && memcmp(p, ctl, cl) == 0;
                    p = e + 1;
                }
            }
            if (match) {
                if (found++ || !copy(out, len, c2 + 1, (size_t)(end - c2 - 1)))
                    return -1;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return found == 1 && out[0] == '/' ? 0 : -1;
}

int fyh_cg_dir(const char *mnt_root, const char *mnt_point, const char *path, char *out, size_t len) {
    if (path[0] != '/' || mnt_root[0] != '/')
        return -1;
    for (const char *p = path; *p;) {
        const char *s = strchr(p + 1, '/'), *e = s ? s : p + strlen(p);
        size_t n = (size_t)(e - p - 1);
        if ((n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
            return -1;
        p = e;
    }
    size_t rl = strcmp(mnt_root, "/") == 0 ? 0 : strlen(mnt_root);
    if (rl && (strncmp(path, mnt_root, rl) != 0 || (path[rl] && path[rl] != '/')))
        return -1;
    const char *rest = path + rl;
    if (strcmp(rest, "/") == 0)
        rest = "";
    size_t ml = strlen(mnt_point), sl = strlen(rest);
    if (ml + sl >= len)
        return -1;
    memcpy(out, mnt_point, ml);
    memcpy(out + ml, rest, sl + 1);
    return 0;
}

bool fyh_path_within(const char *anc, const char *path) {
    size_t n = strlen(anc);
    while (n > 1 && anc[n - 1] == '/')
        n--;
    if (strncmp(anc, path, n) != 0)
        return false;
    return path[n] == '\0' || path[n] == '/' || (n == 1 && anc[0] == '/');
}

static bool parse_u64(const char **s, uint64_t *out) {
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *s = p;
    *out = v;
    return true;
}

static bool only_space(const char *p) {
    for (; *p; p++)
        if (*p != ' ' && *p != '\n' && *p != '\t')
            return false;
    return true;
}

int fyh_parse_limit(const char *text, uint64_t *out) {
    const char *p = text;
    if (strncmp(p, "max", 3) == 0 || strncmp(p, "-1", 2) == 0) {
        *out = FYH_UNLIMITED;
        p += p[0] == 'm' ? 3 : 2;
    } else if (!parse_u64(&p, out)) {
        return -1;
    }
    return only_space(p) ? 0 : -1;
}

int fyh_parse_cpu_max(const char *text, uint64_t *quota, uint64_t *period) {
    const char *p = text;
    if (strncmp(p, "max", 3) == 0) {
        *quota = FYH_UNLIMITED;
        p += 3;
    } else if (!parse_u64(&p, quota)) {
        return -1;
    }
    if (*p++ != ' ' || !parse_u64(&p, period) || *period == 0)
        return -1;
    return only_space(p) ? 0 : -1;
}

bool fyh_cpu_within(uint64_t quota_a, uint64_t period_a, uint64_t quota_b, uint64_t period_b) {
    if (quota_b == FYH_UNLIMITED)
        return true;
    if (quota_a == FYH_UNLIMITED || period_a == 0 || period_b == 0)
        return false;
    return (unsigned __int128)quota_a * period_b <= (unsigned __int128)quota_b * period_a;
}

static bool parse_majmin(const char **s, uint32_t *out) {
    if (**s == '*') {
        (*s)++;
        *out = FYH_DEV_ANY;
        return true;
    }
    uint64_t v;
    if (!parse_u64(s, &v) || v >= FYH_DEV_ANY)
        return false;
    *out = (uint32_t)v;
    return true;
}

int fyh_devlist_parse(const char *text, struct fyh_dev_rule *out, size_t max) {
    size_t n = 0;
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            p++;
            continue;
        }
        struct fyh_dev_rule r = {0};
        if ((*p != 'a' && *p != 'b' && *p != 'c') || p[1] != ' ')
            return -1;
        r.type = (uint8_t)*p;
        p += 2;
        if (!parse_majmin(&p, &r.major) || *p++ != ':' || !parse_majmin(&p, &r.minor) || *p++ != ' ')
            return -1;
        for (; *p == 'r' || *p == 'w' || *p == 'm'; p++)
            r.access |= *p == 'r' ? 2 : *p == 'w' ? 4 : 1;
        if (!r.access || (*p && *p != '\n') || n >= max)
            return -1;
        out[n++] = r;
    }
    return (int)n;
}

bool fyh_devlist_default_allow(const struct fyh_dev_rule *list, size_t n) {
    return n == 1 && list[0].type == 'a' && list[0].major == FYH_DEV_ANY && list[0].minor == FYH_DEV_ANY &&
           list[0].access == 7;
}

bool fyh_dev_covered(const struct fyh_dev_rule *rule, const struct fyh_dev_rule *list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const struct fyh_dev_rule *e = &list[i];
        if (e->type != 'a' && e->type != rule->type)
            continue;
        if (e->major != FYH_DEV_ANY && e->major != rule->major)
            continue;
        if (e->minor != FYH_DEV_ANY && e->minor != rule->minor)
            continue;
        if ((rule->access & e->access) != rule->access)
            continue;
        return true;
    }
    return false;
}

bool fyh_ids_subset(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
    for (size_t i = 0; i < na; i++) {
        bool in = false;
        for (size_t k = 0; k < nb && !in; k++)
            in = a[i] == b[k];
        if (!in)
            return false;
    }
    return true;
}

uint64_t fyh_retry_delay_ms(uint32_t tries) {
    if (tries == 0)
        return 0;
    if (tries > 6)
        return FYH_RETRY_MAX_MS;
    uint64_t d = 1000u << (tries - 1);
    return d < FYH_RETRY_MAX_MS ? d : FYH_RETRY_MAX_MS;
}
