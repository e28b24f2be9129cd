#!/usr/bin/env bash
# The whole test suite: installs missing Debian packages, builds, runs every
# meson test (unit, linux, vm, net, oci, abi, lint, docs, windows, fuzz
# replay), the unit, linux, apple, oci, vm, net and fuzz suites again in an
# ASan+UBSan build, the unit, fuzz and json suites in a build with the
# in-tree JSON library, and the demo (scripts/demo.sh) end to end; in three
# lanes at once (see "lane" below).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

# setup_build DIR SETUP-ARGS...: configure and compile everything (a target
# that does not build, the CLI say, must not go unnoticed: meson test builds
# only what the chosen suites need).
setup_build() {
  local dir=$1; shift
  if [ -d "$dir/meson-private" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
  meson compile -C "$dir" || { echo "$dir: build FAILED" >>"$failures"; return 1; }
}

# run_tests DIR LOGBASE MESON-TEST-ARGS...: one `meson test` over a built
# directory, its log in DIR/meson-logs/LOGBASE.{txt,json} (two lanes test one
# directory at once), its failures kept for the closing summary.
run_tests() {
  local dir=$1 base=$2; shift 2
  local rc=0
  meson test -C "$dir" --no-rebuild --logbase "$base" --print-errorlogs --num-processes 2 "$@" || rc=$?
  python3 - "$dir/meson-logs/$base.json" "$dir ($base)" "$failures" <<'PY'
import json, re, sys
ok = bad = skip = 0
failed = []
try:
    lines = open(sys.argv[1]).readlines()
except OSError:
    lines = []
for line in lines:
    t = json.loads(line)
    if t["result"] in ("OK", "EXPECTEDFAIL"): ok += 1
    elif t["result"] == "SKIP": skip += 1
    else: bad += 1; failed.append(t)
print(f"{sys.argv[2]}: {ok} passed, {bad} failed, {skip} skipped")
# Kept for the closing summary: a CI record may hold only the end of the output.
with open(sys.argv[3], "a") as out:
    for t in failed:
        out.write(f"{sys.argv[2]}: FAILED {t['name']} ({t['result']}, {t['duration']:.1f} s)\n")
        lines = ((t.get("stdout") or "") + "\n" + (t.get("stderr") or "")).splitlines()
        said = [l for l in lines if re.search(r"fail|not ok|error|assert", l, re.I)][:12]
        for l in said + ["  ..."] + lines[-10:]:
            out.write(f"    {l[:300]}\n")
PY
  return $rc
}

failures=$(mktemp)
lanes=$(mktemp -d)
# check's per-test timeouts (4 s unless a case sets its own) bound hangs, not
# speed: three lanes on two CPUs, one of them sanitized, need room.
export CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-3}"
trap 'rm -rf "$failures" "$lanes"' EXIT

# The suite spends most of its time waiting (namespaces torn down, deadlines,
# guests booting), not computing: serially it took 45-50 minutes here for
# under 15 of CPU. So it runs in three lanes at once, each serial as meson
# schedules it (a test marked is_parallel: false still runs alone in its
# lane), every test in directories, namespaces and cgroups of its own:
#   vm     the QEMU-bound suite (a TCG guest keeps a core busy): plain, then
#          under ASan+UBSan; one guest at a time on the machine;
#   plain  everything else in the plain build, then the demo;
#   asan   the ASan+UBSan build, its unit, linux, apple, oci, fuzz and net
#          suites, then the build with the in-tree JSON library (lib/sys/json,
#          what the Windows cross build uses) in place of jansson.
# Each lane's lines carry its name; the failures are summed up at the end.
lane() { # NAME FUNCTION: runs FUNCTION in the background, its status kept
  local name=$1 fn=$2
  { (set +e; "$fn"; r=$?; echo $r >"$lanes/$name.rc"; echo "lane $name ended at $(date +%T), exit $r") 2>&1 |
      sed -u "s/^/[$name] /"; } &
}
lane_plain() {
  local rc=0
  run_tests build-test plain --no-suite vm || rc=1
  # The README's other command must keep working too: the demo, end to end.
  # (Its saved probe goes to the build directory, not the host's /run.)
  if FORGEYARD_CACHE_DIR="$PWD/build-test/fy-cache" bash scripts/demo.sh >build-test/demo.log 2>&1; then
    echo "demo: passed"
  else
    echo "demo: FAILED (build-test/demo.log):"; tail -n 20 build-test/demo.log; rc=1
    echo "demo: FAILED (build-test/demo.log)" >>"$failures"
  fi
  return $rc
}
lane_asan() {
  local rc=0
  if setup_build build-asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false; then
    touch "$lanes/asan.built"
    run_tests build-asan asan --suite unit --suite linux --suite apple --suite oci --suite fuzz --suite net \
      --no-suite vm || rc=1
  else
    touch "$lanes/asan.failed"; rc=1
  fi
  setup_build build-bundled -Dbundled_json=true && run_tests build-bundled bundled --suite unit --suite fuzz \
    --suite json || rc=1
  return $rc
}
lane_vm() {
  local rc=0
  run_tests build-test vm --suite vm || rc=1
  # (the sanitized build is the asan lane's: wait for it, bounded)
  for _ in $(seq 3600); do
    [ -e "$lanes/asan.built" ] || [ -e "$lanes/asan.failed" ] && break
    sleep 1
  done
  if [ -e "$lanes/asan.built" ]; then
    run_tests build-asan asan-vm --suite vm || rc=1
  else
    echo "build-asan: not built, its vm suite not run"; rc=1
  fi
  return $rc
}

rc=0
echo "started at $(date +%T)"
setup_build build-test -Dbuildtype=debugoptimized || rc=1
if [ $rc -eq 0 ]; then
  lane vm lane_vm
  lane plain lane_plain
  lane asan lane_asan
  wait
  for name in vm plain asan; do
    r=$(cat "$lanes/$name.rc" 2>/dev/null || echo 1)
    echo "lane $name: exit $r"
    [ "$r" = 0 ] || rc=1
  done
fi
if [ -s "$failures" ]; then
  echo "== failed tests (their last lines; the whole logs are in each build's meson-logs/)"
  cat "$failures"
fi
exit $rc
