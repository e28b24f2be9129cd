#!/usr/bin/env bash
# The whole test suite: installs missing Debian packages, builds, runs every
# meson test (unit, linux, abi, docs, fuzz replay), then rebuilds with
# ASan+UBSan and runs the unit and Linux suites under the sanitizers, and
# finally runs the demo (scripts/demo.sh) end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

run_suite() { # builddir, meson setup args..., -- meson test args...
  local dir=$1; shift
  local setup=() testargs=()
  while (($#)) && [ "$1" != "--" ]; do setup+=("$1"); shift; done
  (($#)) && shift
  testargs=("$@")
  if [ -d "$dir/meson-private" ]; then
    meson setup --reconfigure "$dir" "${setup[@]}" >/dev/null
  else
    meson setup "$dir" "${setup[@]}" >/dev/null
  fi
  meson compile -C "$dir"
  local rc=0
  meson test -C "$dir" --print-errorlogs --num-processes 2 "${testargs[@]}" || rc=$?
  python3 - "$dir/meson-logs/testlog.json" "$dir" <<'PY'
import json, sys
ok = bad = skip = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r == "SKIP": skip += 1
    else: bad += 1
print(f"{sys.argv[2]}: {ok} passed, {bad} failed, {skip} skipped")
PY
  return $rc
}

rc=0
run_suite build-test -Dbuildtype=debugoptimized || rc=1
run_suite build-asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  -- --suite unit --suite linux --suite apple --suite oci --suite fuzz --suite net || rc=1
# The in-tree JSON library (lib/sys/json, what the Windows cross build uses) in place of jansson.
run_suite build-bundled -Dbundled_json=true -- --suite unit --suite fuzz --suite json || rc=1
# The README's other command must keep working too: the demo, end to end.
# (Its saved probe goes to the build directory, not the host's /run.)
if FORGEYARD_CACHE_DIR="$PWD/build-test/fy-cache" bash scripts/demo.sh >build-test/demo.log 2>&1; then
  echo "demo: passed"
else
  echo "demo: FAILED (build-test/demo.log):"; tail -n 20 build-test/demo.log; rc=1
fi
exit $rc
