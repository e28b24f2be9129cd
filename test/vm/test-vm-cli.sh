#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# `forgeyard run --profile high-assurance` on this host: a real microvm
# (KVM when usable, else TCG), exit statuses and output through the CLI.
# Skipped (77) only where QEMU or the guest kernel is absent.
#   test-vm-cli.sh FORGEYARD
set -eu
cli=$1
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 is not installed"; exit 77; }
ls /boot/vmlinuz-* >/dev/null 2>&1 || { echo "SKIP: no guest kernel (/boot/vmlinuz-*; Debian: linux-image-amd64)"; exit 77; }
tmp=$(mktemp -d /tmp/fy-vm-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
export FORGEYARD_VM_CACHE="$tmp/cache" XDG_RUNTIME_DIR="$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

# A first attempt on an empty cache makes the template: within its own
# wall-clock limit (it took 19 s against a 2 s limit), timed out, nothing
# of the template left half-made.
set +e
t0=$(date +%s)
FORGEYARD_VM_CACHE="$tmp/cache-short" "$cli" run --profile high-assurance --timeout 2s --result "$tmp/short.json" \
    -- /bin/true 2>"$tmp/short.err"
rc=$? t1=$(date +%s)
set -e
grep -q '"outcome": "timed-out"' "$tmp/short.json" || fail "a 2 s attempt making the template: status $rc: $(cat "$tmp/short.err")"
[ $((t1 - t0)) -le 12 ] || fail "a 2 s attempt making the template took $((t1 - t0)) s"
[ -z "$(ls -A "$tmp/cache-short/templates" 2>/dev/null | grep -v '^\.lock$')" ] ||
    fail "a template left by the timed-out attempt: $(ls -A "$tmp/cache-short/templates")"
rm -rf "$tmp/cache-short"

"$cli" run --profile high-assurance --result "$tmp/true.json" -- /bin/true || fail "/bin/true exited $?"
grep -q '"level": "virtual-machine"' "$tmp/true.json" || fail "not a VM: $(cat "$tmp/true.json")"
grep -q '"backend": "vm-qemu"' "$tmp/true.json" || fail "not vm-qemu"
grep -q '"accelerator": "\(tcg\|kvm\)"' "$tmp/true.json" || fail "no accelerator in the result"
# Restored from a template (made by this first run), in a 0700 cache of its own.
grep -q '"boot": "template restore' "$tmp/true.json" || fail "not restored from a template: $(grep '"boot"' "$tmp/true.json")"
[ "$(stat -c %a "$tmp/cache/templates")" = 700 ] || fail "templates directory mode $(stat -c %a "$tmp/cache/templates")"

set +e
out=$("$cli" run --profile high-assurance -- /bin/sh -c 'echo in-guest $(uname -r); exit 3' 2>"$tmp/err")
rc=$?
set -e
[ "$rc" = 3 ] || fail "exit status $rc, not 3: $(cat "$tmp/err")"
case $out in "in-guest "*) ;; *) fail "stdout: $out" ;; esac
[ -z "$(ls -A "$tmp/cache/attempts")" ] || fail "attempt directories left: $(ls "$tmp/cache/attempts")"
kver=${out#in-guest }

# The reader of the CLI's standard output goes away (| head): the VM
# backend writes the guest's output into it itself, and a SIGPIPE killed
# the CLI (status 141, no result, cgroups left); the run goes on, its
# result written.
set +e
("$cli" run --profile high-assurance --result "$tmp/pipe.json" -- \
   /bin/sh -c 'i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done; echo finished >&2' \
   2>"$tmp/pipe.err"; echo $? >"$tmp/pipe.rc") | head -n 1 >/dev/null
set -e
[ "$(cat "$tmp/pipe.rc")" = 0 ] || fail "the CLI with its reader gone: status $(cat "$tmp/pipe.rc"): $(cat "$tmp/pipe.err")"
grep -q '"outcome": "succeeded"' "$tmp/pipe.json" || fail "no result with the reader gone: $(cat "$tmp/pipe.json" 2>&1)"
grep -q finished "$tmp/pipe.err" || fail "the workload did not run to its end: $(cat "$tmp/pipe.err")"

# Unprivileged: the VMM's namespace sandbox is rootless, the cache the user's.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  mkdir "$tmp/u"
  chown 65534:65534 "$tmp/u"
  out=$(setpriv --reuid 65534 --regid 65534 --clear-groups env -u FORGEYARD_VM_CACHE HOME="$tmp/u" \
        XDG_CACHE_HOME="$tmp/u/.cache" XDG_RUNTIME_DIR="$tmp/u" \
        "$cli" run --profile high-assurance --result "$tmp/u/r.json" -- /bin/sh -c 'echo rootless $(id -u)' \
        2>"$tmp/ha.err") || fail "rootless run: $?"
  [ "$out" = "rootless 1000" ] || fail "rootless stdout: $out"
  ! grep -q "note: running in a virtual machine" "$tmp/ha.err" || fail "a note for a policy that asked for a VM"
  grep -q '"boot": "template restore' "$tmp/u/r.json" || fail "rootless: not restored from a template"
  [ "$(stat -c %u:%a "$tmp/u/.cache/forgeyard/vm/templates")" = 65534:700 ] || fail "rootless templates directory"
  [ -z "$(ls -A "$tmp/u/.cache/forgeyard/vm/attempts")" ] || fail "rootless attempt directories left"
  # The VMM's host bounds are claimed only where this caller's sandbox has
  # the cgroup controller (a rootless VMM without one ran in the host's
  # root cgroups while the result named a 1 GiB, 256-process bound).
  setpriv --reuid 65534 --regid 65534 --clear-groups env HOME="$tmp/u" XDG_RUNTIME_DIR="$tmp/u" \
        "$cli" capabilities --json >"$tmp/u/caps.json" 2>/dev/null || fail "rootless capabilities"
  python3 - "$tmp/u/caps.json" "$tmp/u/r.json" <<'PY' || fail "rootless host_bounds claim what the caller's cgroups cannot enforce"
import json, sys
caps = json.load(open(sys.argv[1]))["capabilities"]
hb = json.load(open(sys.argv[2]))["isolation"]["host_bounds"]
for cap, key in (("cgroup-memory", "vmm_memory"), ("cgroup-pids", "pids")):
    if (hb[key] is not None) != bool(caps[cap]["available"]):
        sys.exit("%s is %r with %s available=%r" % (key, hb[key], cap, caps[cap]["available"]))
PY

  # A service user (HOME=/nonexistent, no XDG_CACHE_HOME) whose policy
  # requires a memory limit: where nothing lighter than the VM enforces it
  # for this user (no cgroup it may write: a hybrid host), the CLI says so;
  # the VM's cache is a 0700 directory of the user's own in TMPDIR.
  mkdir "$tmp/svc" && chown 65534:65534 "$tmp/svc"
  out=$(setpriv --reuid 65534 --regid 65534 --clear-groups env -u FORGEYARD_VM_CACHE -u XDG_CACHE_HOME \
        HOME=/nonexistent TMPDIR="$tmp/svc" XDG_RUNTIME_DIR="$tmp/svc" \
        "$cli" run --memory 256M --result "$tmp/svc/m.json" -- /bin/sh -c 'echo service-user' 2>"$tmp/svc.err") ||
    fail "service user: $?: $(cat "$tmp/svc.err")"
  [ "$out" = service-user ] || fail "service user stdout: $out"
  if grep -q '"backend": "vm-qemu"' "$tmp/svc/m.json"; then
    grep -q "note: running in a virtual machine (vm-qemu), a slower start: .*memory-limit required" "$tmp/svc.err" ||
      fail "service user: no note for the VM: $(cat "$tmp/svc.err")"
    [ "$(stat -c %u:%a "$tmp/svc/forgeyard-65534")" = 65534:700 ] || fail "service user: its cache directory"
    [ -z "$(ls -A "$tmp/svc/forgeyard-65534/vm/attempts")" ] || fail "service user: attempt directories left"
  else
    ! grep -q "note: running in a virtual machine" "$tmp/svc.err" || fail "service user: a note without a VM"
  fi

  # A writable bind, rootless: the guest's file lands on the host, the user's.
  mkdir "$tmp/u/rw" && chown 65534:65534 "$tmp/u/rw"
  setpriv --reuid 65534 --regid 65534 --clear-groups env -u FORGEYARD_VM_CACHE HOME="$tmp/u" \
      XDG_CACHE_HOME="$tmp/u/.cache" XDG_RUNTIME_DIR="$tmp/u" \
      "$cli" run --profile high-assurance --bind "$tmp/u/rw:/work/extra" -- /bin/sh -c 'echo rootless-rw >/work/extra/f' ||
    fail "rootless writable bind: $?"
  [ "$(cat "$tmp/u/rw/f" 2>/dev/null)" = rootless-rw ] || fail "rootless writable bind: the file is not on the host"
  [ "$(stat -c %u "$tmp/u/rw/f")" = 65534 ] || fail "rootless writable bind: owner $(stat -c %u "$tmp/u/rw/f")"

  # fetch-only, rootless: the guest reaches an HTTP server this test starts
  # on 127.0.0.1 through the attempt's proxy, and only the allowed port.
  if command -v python3 >/dev/null && command -v curl >/dev/null; then
    mkdir "$tmp/www" && echo served-to-the-guest >"$tmp/www/f"
    port=$((20000 + $$ % 12000)) # (below 32768: never an ephemeral port)
    timeout 250 python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$port" >/dev/null 2>&1 &
    srv=$!
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/f" && break; sleep 0.1; done
    printf '127.0.0.1 mirror.test\n' >"$tmp/u/hosts"
    printf '{"version": 1, "profile": "standard-ci", "isolation": {"min_level": "virtual-machine", "preferred_level": "virtual-machine"}}\n' >"$tmp/u/vm.json"
    chown -R 65534:65534 "$tmp/u"
    out=$(setpriv --reuid 65534 --regid 65534 --clear-groups env -u FORGEYARD_VM_CACHE HOME="$tmp/u" \
          XDG_CACHE_HOME="$tmp/u/.cache" XDG_RUNTIME_DIR="$tmp/u" \
          "$cli" run --policy "$tmp/u/vm.json" --network fetch-only --network-hosts "$tmp/u/hosts" \
          --allow "mirror.test:$port" --result "$tmp/u/f.json" -- /bin/sh -c \
          "curl -sS -m 60 http://mirror.test:$port/f; curl -sS -m 60 -o /dev/null -w '%{http_code}\n' http://127.0.0.1:$((port + 1))/x; ls /sys/class/net") ||
      { kill $srv; fail "rootless fetch-only run: $?"; }
    kill $srv 2>/dev/null; wait $srv 2>/dev/null || :
    [ "$out" = "$(printf 'served-to-the-guest\n403\nlo')" ] || fail "rootless fetch-only stdout: $out"
    grep -q '"backend": "vm-qemu"' "$tmp/u/f.json" || fail "rootless fetch-only: not vm-qemu"
    grep -q '"decision": "refused"' "$tmp/u/f.json" || fail "rootless fetch-only: no refusal in the audit log"
    grep -q '"ended": true' "$tmp/u/f.json" || fail "rootless fetch-only: the proxy's end not witnessed"
    [ -z "$(ls -A "$tmp/u/.cache/forgeyard/vm/attempts")" ] || fail "rootless fetch-only: attempt directories left"
  fi
fi
echo "ok: forgeyard run --profile high-assurance (guest kernel $kver)"
