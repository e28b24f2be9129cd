#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The privileged helper on a pure cgroup v2 kernel: runs test-helper-cg2 (a
# program of test/vm) in the QEMU guest with the forgeyard CLI, the helper
# and libbpf (which the helper opens on first use, so no ldd finds it), and
# the fuse and tun modules of the guest's own kernel package, taken from the
# apt cache the guest kernel came from (the guest loads no other module).
#   Usage: test-helper-cg2.sh RUN-IN-GUEST PROGRAM FORGEYARD HELPER
set -u
run_in_guest=$1 prog=$2 fy=$3 helper=$4
libbpf=$(ldconfig -p 2>/dev/null | awk '/libbpf\.so\.[0-9]+ .*x86-64/ { print $NF; exit }')
[ -n "$libbpf" ] || { echo "SKIP: no libbpf shared library"; exit 77; }
cache=${FY_VM_CACHE:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/forgeyard-vm}}
cache=${cache:-/var/tmp/forgeyard-vm}
tmp=$(mktemp -d /tmp/fy-helper-cg2-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mods=
if [ -s "$cache/current" ] && [ -s "$cache/$(cat "$cache/current")/source-deb" ]; then
    deb=/var/cache/apt/archives/$(cat "$cache/$(cat "$cache/current")/source-deb")
    if [ -f "$deb" ]; then
        dpkg-deb --fsys-tarfile "$deb" |
            tar -x -C "$tmp" --wildcards './lib/modules/*/kernel/fs/fuse/fuse.ko' \
                './lib/modules/*/kernel/drivers/net/tun.ko' 2>/dev/null
        for m in "$tmp"/lib/modules/*/kernel/fs/fuse/fuse.ko "$tmp"/lib/modules/*/kernel/drivers/net/tun.ko; do
            [ -f "$m" ] && cp "$m" "$tmp/" && mods="$mods $tmp/$(basename "$m")"
        done
        rm -rf "$tmp/lib"
    fi
fi
# (without the modules the guest has no /dev/fuse or /dev/net/tun: the test fails, saying so)
FY_VM_FILES="$fy $helper $libbpf $tmp ${FY_VM_FILES:-}" "$run_in_guest" --skip-missing --timeout 600 -- \
    "$prog" "$fy" "$helper" $mods
