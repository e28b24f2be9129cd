#!/usr/bin/env bash
# The whole test suite: installs missing Debian packages, builds, runs every
# meson test (unit, linux, abi, docs, fuzz replay), then rebuilds with
# ASan+UBSan and runs the unit, Linux, apple, VM and fuzz suites under the sanitizers, and
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
  # (inside `run_suite ... || rc=1` set -e does not stop at a failed build,
  # and meson test builds only what the chosen suites need: a target that
  # does not build, the CLI say, would go unnoticed)
  meson compile -C "$dir" || { echo "$dir: build FAILED" >>"$failures"; return 1; }
  local rc=0
  meson test -C "$dir" --print-errorlogs --num-processes 2 "${testargs[@]}" || rc=$?
  python3 - "$dir/meson-logs/testlog.json" "$dir" "$failures" <<'PY'
import json, re, sys
ok = bad = skip = 0
failed = []
for line in open(sys.argv[1]):
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
trap 'rm -f "$failures"' EXIT

rc=0
run_suite build-test -Dbuildtype=debugoptimized || rc=1
run_suite build-asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  -- --suite unit --suite linux --suite apple --suite oci --suite vm --suite fuzz --suite net || rc=1
# The in-tree JSON library (lib/sys/json, what the Windows cross build uses) in place of jansson.
run_suite build-bundled -Dbundled_json=true -- --suite unit --suite fuzz --suite json || rc=1
# The README's other command must keep working too: the demo, end to end.
# (Its saved probe goes to the build directory, not the host's /run.)
if FORGEYARD_CACHE_DIR="$PWD/build-test/fy-cache" bash scripts/demo.sh >build-test/demo.log 2>&1; then
  echo "demo: passed"
else
  echo "demo: FAILED (build-test/demo.log):"; tail -n 20 build-test/demo.log; rc=1
fi
if [ -s "$failures" ]; then
  echo "== failed tests (their last lines; the whole logs are in each build's meson-logs/testlog.txt)"
  cat "$failures"
fi
exit $rc
