#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Device leasing for an unprivileged runner (uid 65534) through the
# privileged helper (forgeyard-sandbox-helper(8)): without a helper a lease
# is refused at prepare (no device list can be enforced); with the test's
# own helper /dev/fuse is leased and opens in the sandbox, /dev/net/tun is
# not there; and the kernel enforces the list on the attempt's devices
# cgroup: while the sandbox runs, the test (root) checks that the
# sandbox's processes are in it, that its devices.list is exactly the
# standard nodes and the lease, and that a process of its own placed there
# is refused /dev/net/tun (EPERM, whatever its capabilities and the node's
# mode) but opens /dev/fuse. (A rootless sandbox cannot make a node, and
# its binds are nodev: the kernel's list is shown from outside.) Nothing
# is left.
#   Usage: test-helper-devices.sh FORGEYARD HELPER
set -u
fy=$1
helper=$2
hpid=
fail() {
    echo "FAIL: $*" >&2
    [ -d "$scratch/gate" ] && touch "$scratch/gate/go" # (a waiting sandbox ends)
    [ -n "$hpid" ] && kill "$hpid" 2>/dev/null && wait "$hpid"
    [ -f "$scratch/helper.log" ] && cat "$scratch/helper.log" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (the test starts the helper)"; exit 77; }
devcg=$(sed -n 's/^[0-9]*:devices://p' /proc/self/cgroup)
[ -n "$devcg" ] && [ -d "/sys/fs/cgroup/devices$devcg" ] || { echo "SKIP: no cgroup v1 devices hierarchy"; exit 77; }
[ "$devcg" = / ] && devcg=
[ -c /dev/fuse ] && [ -c /dev/net/tun ] || { echo "SKIP: no /dev/fuse or /dev/net/tun"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
scratch=$(mktemp -d /var/tmp/fy-helper-dev-XXXXXX) || exit 1
chmod 0755 "$scratch"
trap 'rm -rf "$scratch"' EXIT
subtree=fy-helper-dev-$$
sock=$scratch/sock/helper.sock
mkdir -m 0755 "$scratch/sock" || exit 1
mkdir -m 0700 "$scratch/home" && chown 65534:65534 "$scratch/home" || exit 1
mine=/sys/fs/cgroup/devices$devcg/$subtree
as_runner() {
    setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME="$scratch/home" \
        FORGEYARD_CACHE_DIR="$scratch/home/cache" FORGEYARD_HELPER_SOCKET="$sock" "$@"
}
# (opens each node read-write and says which opened; a missing node reads "missing")
probe='for n in /dev/fuse /dev/net/tun /dev/null; do
  if [ ! -e $n ]; then echo "$n missing"; elif (exec 3<>$n) 2>/dev/null; then echo "$n open"; else echo "$n refused"; fi
done'
run() { as_runner "$fy" run --profile standard-ci --memory 128M "$@"; }

# 1. No helper: a lease is refused at prepare, typed (never bound unenforced).
out=$(run --device /dev/fuse -- /bin/true 2>&1); rc=$?
[ $rc -eq 247 ] || fail "a lease without a helper gave $rc: $out"
case $out in *"devices required"*"a device cgroup needs root"*) ;; *) fail "lease without helper: $out" ;; esac

# 2. The helper, for uid 65534.
"$helper" --socket "$sock" --allow 65534:2:256M:8192 --subtree "$subtree" --verbose 2>"$scratch/helper.log" &
hpid=$!
i=0
while [ ! -S "$sock" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "the helper did not start"
    kill -0 "$hpid" 2>/dev/null || fail "the helper exited"
    sleep 0.02
done
grep -q "controllers:.* devices" "$scratch/helper.log" || fail "the helper offers no devices controller"

# 3. /dev/fuse leased: it is there and opens; tun is not there; null opens.
# (it stays until the checks below are done: they touch $scratch/gate/go;
# bounded at 60 s)
mkdir -m 0755 "$scratch/gate" || exit 1
run --device /dev/fuse --result "$scratch/home/r.json" --bind-ro "$scratch/gate:/gate" -- /bin/sh -c "$probe"'
  i=0; while [ ! -e /gate/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done' \
    >"$scratch/out" 2>&1 &
runner=$!
i=0
dir=
while [ -z "$dir" ]; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "no attempt devices cgroup appeared under $mine/uid-65534"
    dir=$(find "$mine/uid-65534" -mindepth 1 -maxdepth 1 -type d -name 'forgeyard-*' 2>/dev/null | head -1)
    [ -n "$dir" ] && grep -q . "$dir/tasks" 2>/dev/null || { dir=; sleep 0.05; }
done
# The sandbox is in it (its processes are uid 65534's), and the list is exactly the plan's.
for t in $(cat "$dir/tasks"); do
    [ "$(stat -c %u /proc/$t 2>/dev/null || echo 65534)" = 65534 ] || fail "task $t of $dir is not uid 65534's"
done
sort "$dir/devices.list" >"$scratch/list"
printf 'c 1:3 rw\nc 1:5 rw\nc 1:7 rw\nc 1:8 rw\nc 1:9 rw\nc 10:229 rw\n' | sort >"$scratch/want"
cmp -s "$scratch/list" "$scratch/want" || { diff "$scratch/want" "$scratch/list"; fail "devices.list is not the plan's"; }
# A process of the test (root) in that cgroup: the kernel refuses tun, allows fuse.
sh -c 'echo $$ >"$1/tasks" && exec 3<>/dev/net/tun' sh "$dir" 2>"$scratch/tun.err" &&
    fail "root in the attempt's devices cgroup opened /dev/net/tun"
grep -q "Operation not permitted" "$scratch/tun.err" || fail "tun refused, but not by the device list: $(cat "$scratch/tun.err")"
sh -c 'echo $$ >"$1/tasks" && exec 3<>/dev/fuse' sh "$dir" || fail "the leased /dev/fuse is refused in its cgroup"
touch "$scratch/gate/go"
wait $runner || fail "lease run: $(cat "$scratch/out")"
out=$(cat "$scratch/out")
echo "$out" | grep -qx "/dev/fuse open" || fail "the leased /dev/fuse does not open: $out"
echo "$out" | grep -qx "/dev/net/tun missing" || fail "the unleased tun is there: $out"
echo "$out" | grep -qx "/dev/null open" || fail "the standard null is refused: $out"
python3 - "$scratch/home/r.json" "$sock" <<'PY' || fail "result: $(cat "$scratch/home/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))["isolation"]["devices"]
assert d["allowlist"].startswith("cgroup v1 devices controller"), d
assert "privileged helper at " + sys.argv[2] in d["helper"], d
assert [x["node"] for x in d["leased"]] == ["c 10:229"], d
PY

# 5. Nothing left of any attempt; the helper stops and removes its subtree.
n=$(find "$mine" -mindepth 2 -maxdepth 2 -type d -name 'forgeyard-*' | wc -l)
[ "$n" -eq 0 ] || fail "$n attempt devices cgroup(s) left under $mine"
kill "$hpid"; wait "$hpid"; rc=$?; hpid=
[ $rc -eq 0 ] || fail "the helper ended with $rc"
[ -e "$mine" ] && fail "$mine left after the helper stopped"
echo "ok: helper-devices"
exit 0
