/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names of enumerated values, shared by the JSON codec, messages and the CLI. */
#include <string.h>

#include "policy.h"

#define NAME_FN(fn, table)                                        \
    const char *fn(uint32_t v) {                                  \
        return v < FY_ARRAY_SIZE(table) ? table[v] : NULL;        \
    }

const char *const limit_keys[FY_LIMIT_MAX_ + 1] = {
    [FY_LIMIT_CPU_MILLIS] = "cpu_millis",   [FY_LIMIT_MEMORY] = "memory",
    [FY_LIMIT_MEMORY_SWAP] = "memory_swap", [FY_LIMIT_PIDS] = "pids",
    [FY_LIMIT_DISK] = "disk",               [FY_LIMIT_FILES] = "files",
    [FY_LIMIT_NOFILE] = "nofile",           [FY_LIMIT_FSIZE] = "fsize",
    [FY_LIMIT_STACK] = "stack",             [FY_LIMIT_CORE] = "core",
    [FY_LIMIT_WALL_TIME] = "wall_time",     [FY_LIMIT_GRACE] = "grace",
    [FY_LIMIT_OUTPUT] = "output",           [FY_LIMIT_TMP_SIZE] = "tmp_size",
    [FY_LIMIT_WORK_TMP_SIZE] = "work_tmp_size", [FY_LIMIT_HOME_SIZE] = "home_size",
    [FY_LIMIT_SHM_SIZE] = "shm_size",       [FY_LIMIT_IO_BPS] = "io_bps",
};
NAME_FN(limit_key, limit_keys)

const char *const control_keys[FY_CONTROL_MAX_ + 1] = {
    [FY_CONTROL_USERNS] = "userns",     [FY_CONTROL_MOUNTNS] = "mountns",
    [FY_CONTROL_PIDNS] = "pidns",       [FY_CONTROL_NETNS] = "netns",
    [FY_CONTROL_IPCNS] = "ipcns",       [FY_CONTROL_UTSNS] = "utsns",
    [FY_CONTROL_CGROUPNS] = "cgroupns", [FY_CONTROL_SECCOMP] = "seccomp",
    [FY_CONTROL_LANDLOCK] = "landlock", [FY_CONTROL_MEMORY_LIMIT] = "memory-limit",
    [FY_CONTROL_PIDS_LIMIT] = "pids-limit", [FY_CONTROL_CPU_LIMIT] = "cpu-limit",
    [FY_CONTROL_IO_LIMIT] = "io-limit", [FY_CONTROL_UID_RANGE] = "uid-range",
    [FY_CONTROL_HW_VIRT] = "hardware-virtualization", [FY_CONTROL_DEVICES] = "devices",
    [FY_CONTROL_COLD_BOOT] = "cold-boot",
    [FY_CONTROL_LOW_INTEGRITY] = "low-integrity",
};
NAME_FN(control_key, control_keys)

const char *const mode_names[] = {
    [FY_MODE_OFF] = "off", [FY_MODE_PREFER] = "prefer", [FY_MODE_REQUIRE] = "require",
};
NAME_FN(mode_name, mode_names)

const char *const net_mode_names[] = {
    [FY_NET_DENY] = "deny", [FY_NET_FETCH_ONLY] = "fetch-only",
    [FY_NET_RESTRICTED] = "restricted", [FY_NET_ALLOW] = "allow",
};
NAME_FN(net_mode_name, net_mode_names)

const char *const dns_names[] = {[FY_DNS_NONE] = "none", [FY_DNS_HOST] = "host"};
NAME_FN(dns_name, dns_names)

const char *const proto_names[] = {[FY_PROTO_TCP] = "tcp", [FY_PROTO_UDP] = "udp"};
NAME_FN(proto_name, proto_names)

const char *const user_names[] = {[FY_USER_SANDBOX] = "sandbox", [FY_USER_FAKE_ROOT] = "fake-root"};
NAME_FN(user_name, user_names)

const char *const seccomp_class_names[] = {
    [FY_SECCOMP_GENERAL_BUILD] = "general-build", [FY_SECCOMP_NETWORKED_TEST] = "networked-test",
};
NAME_FN(seccomp_class_name, seccomp_class_names)

const char *const delivery_names[] = {
    [FY_SECRET_ENV] = "env", [FY_SECRET_FILE] = "file", [FY_SECRET_STDIN] = "stdin",
};
NAME_FN(delivery_name, delivery_names)

const char *const devices_mode_names[] = {[FY_DEVICES_DENY] = "deny", [FY_DEVICES_LEASED] = "leased"};
NAME_FN(devices_mode_name, devices_mode_names)

const char *const pty_mode_names[4] = {[FY_DEVICES_DENY] = "deny", [FY_DEVICES_PRIVATE] = "private"};
NAME_FN(pty_mode_name, pty_mode_names)

const char *const level_names[FY_LEVEL_CONFIDENTIAL_VM + 1] = {
    [FY_LEVEL_NONE] = "none",           [FY_LEVEL_PROCESS] = "process",
    [FY_LEVEL_NAMESPACE] = "namespace", [FY_LEVEL_CONTAINER] = "container",
    [FY_LEVEL_VIRTUAL_MACHINE] = "virtual-machine", [FY_LEVEL_CONFIDENTIAL_VM] = "confidential-vm",
};

const char *const profile_names[FY_PROFILE_HIGH_ASSURANCE + 1] = {
    [FY_PROFILE_DEVELOPMENT] = "development", [FY_PROFILE_STANDARD_CI] = "standard-ci",
    [FY_PROFILE_RELEASE] = "release",         [FY_PROFILE_HIGH_ASSURANCE] = "high-assurance",
};

int name_lookup(const char *const *table, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (table[i] && strcmp(table[i], name) == 0)
            return (int)i;
    return -1;
}
