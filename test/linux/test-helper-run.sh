#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# An unprivileged runner (uid 65534) and the privileged helper
# (forgeyard-sandbox-helper(8)): without a helper the probe says no memory
# limit and why; with the test's own helper (its own socket directory and
# cgroup subtree) the probe offers the limits through it, `forgeyard run
# --memory 64M` runs in the namespace backend with a real cgroup limit, a
# memory hog ends out-of-memory, a limit over the uid's budget is refused
# at prepare (typed), and nothing is left: no attempt cgroup, and once the helper is
# stopped, no subtree and no socket.   Usage: test-helper-run.sh FORGEYARD HELPER
set -u
fy=$1
helper=$2
hpid=
fail() {
    echo "FAIL: $*" >&2
    [ -n "$hpid" ] && kill "$hpid" 2>/dev/null && wait "$hpid"
    [ -f "$scratch/helper.log" ] && cat "$scratch/helper.log" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (the test starts the helper)"; exit 77; }
memcg=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
[ -n "$memcg" ] && [ -w "/sys/fs/cgroup/memory$memcg" ] || { echo "SKIP: no cgroup v1 memory hierarchy"; exit 77; }
[ "$memcg" = / ] && memcg=
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
scratch=$(mktemp -d /tmp/fy-helper-run-XXXXXX) || exit 1
chmod 0755 "$scratch"
trap 'rm -rf "$scratch"' EXIT
subtree=fy-helper-run-$$
sock=$scratch/helper.sock
mine=/sys/fs/cgroup/memory$memcg/$subtree
mkdir -m 0700 "$scratch/home" "$scratch/home/cache" && chown -R 65534:65534 "$scratch/home" || exit 1
as_runner() {
    setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME="$scratch/home" \
        FORGEYARD_CACHE_DIR="$scratch/home/cache" FORGEYARD_HELPER_SOCKET="$sock" "$@"
}
caps() { as_runner "$fy" capabilities --json --fresh; }
cap_field() { # JSON capability field
    python3 -c 'import json,sys; c=json.load(sys.stdin)["capabilities"][sys.argv[1]]; print(c.get(sys.argv[2]))' "$1" "$2"
}

# 1. No helper: no memory limit for uid 65534 here, and the hint names the helper.
out=$(caps) || fail "capabilities: $out"
[ "$(echo "$out" | cap_field cgroup-memory available)" = False ] ||
    fail "uid 65534 has a memory limit without the helper: is a cgroup delegated here?"
case $(echo "$out" | cap_field cgroup-memory hint) in
    *"forgeyard-sandbox-helper(8)"*"$sock does not exist"*) ;;
    *) fail "the hint does not say the helper is missing: $(echo "$out" | cap_field cgroup-memory hint)" ;;
esac

# 2. The helper, for uid 65534 only.
"$helper" --socket "$sock" --allow 65534:2:256M:8192 --subtree "$subtree" 2>"$scratch/helper.log" &
hpid=$!
i=0
while [ ! -S "$sock" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "the helper did not start"
    kill -0 "$hpid" 2>/dev/null || fail "the helper exited"
    sleep 0.02
done
out=$(caps) || fail "capabilities: $out"
[ "$(echo "$out" | cap_field cgroup-memory available)" = True ] || fail "no memory limit with the helper: $out"
case $(echo "$out" | cap_field cgroup-memory reason) in
    *"through the privileged helper at $sock"*) ;;
    *) fail "reason: $(echo "$out" | cap_field cgroup-memory reason)" ;;
esac
[ "$(echo "$out" | cap_field cgroup-pids available)" = True ] || fail "no pids limit with the helper"

# 3. A memory hog (bounded: 40 doublings of a string) under --memory 64M: out-of-memory (242).
as_runner "$fy" run --memory 64M --result "$scratch/home/hog.json" -- \
    /bin/sh -c 'x=a; i=0; while [ $i -lt 40 ]; do x=$x$x; i=$((i + 1)); done; echo survived' \
    >"$scratch/hog.out" 2>&1
rc=$?
[ $rc -eq 242 ] || fail "the hog gave $rc, not out-of-memory (242): $(cat "$scratch/hog.out")"
grep -q survived "$scratch/hog.out" && fail "the hog survived"
python3 - "$scratch/home/hog.json" <<'PY' || fail "result: $(cat "$scratch/home/hog.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "out-of-memory", r["outcome"]
assert r["backend"] == "linux-namespace", r["backend"]
lim = r["limits"]
assert lim["memory"] == "cgroup v1 (privileged helper)", lim
assert "privileged helper" in lim["helper"], lim
PY

# 4. A well-behaved command under the same limit succeeds.
out=$(as_runner "$fy" run --memory 64M --pids 100 -- /bin/sh -c 'echo fine' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = fine ] || fail "a normal run gave $rc: $out"

# 5. Over the uid's budget (256M per attempt): refused at prepare (247), typed and
# located, before anything is asked of the helper.
out=$(as_runner "$fy" run --memory 512M -- /bin/true 2>&1); rc=$?
[ $rc -eq 247 ] || fail "over budget gave $rc: $out"
case $out in *'$.resources.memory: memory '*"over this uid's budget at the privileged helper"*) ;;
    *) fail "over budget: $out" ;; esac

# 6. Nothing left of any attempt; then the helper stops and removes its subtree.
n=$(find "$mine" -mindepth 2 -maxdepth 2 -type d -name 'forgeyard-*' | wc -l)
[ "$n" -eq 0 ] || fail "$n attempt cgroup(s) left under $mine"
kill "$hpid"; wait "$hpid"; rc=$?; hpid=
[ $rc -eq 0 ] || fail "the helper ended with $rc"
[ -e "$mine" ] && fail "$mine left after the helper stopped"
[ -e "$sock" ] && fail "the socket is left"
echo "ok: helper-rootless"
exit 0
