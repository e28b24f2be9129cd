#!/usr/bin/env bash
# Boots the test guest and runs cgroup2-selftest in it (see run-in-guest.sh).
#   test/vm/selftest.sh [SELFTEST-BINARY]
# Without an argument the C file beside this script is compiled with cc.
# Exits 77 (skip, for meson) when qemu-system-x86_64 is not installed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

qemu=${FY_QEMU:-$(command -v qemu-system-x86_64 || true)}
if [ -z "$qemu" ] || [ ! -x "$qemu" ]; then
  echo "SKIP: qemu-system-x86_64 is not installed (scripts/deps.sh installs it)"
  exit 77
fi
export FY_QEMU=$qemu

bin=${1:-}
if [ -z "$bin" ]; then
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/fy-vm-selftest.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  "${CC:-cc}" -std=c11 -O2 -Wall -Wextra -o "$tmp/cgroup2-selftest" "$here/cgroup2-selftest.c"
  bin=$tmp/cgroup2-selftest
fi
"$here/run-in-guest.sh" --timeout "${FY_VM_TIMEOUT:-300}" -- "$bin"
