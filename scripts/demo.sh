#!/usr/bin/env bash
# Builds libforgeyard-sandbox and the forgeyard CLI, then walks the CLI
# through a full sandboxed lifecycle on the bundled example (examples/hello):
# probe the host, check the policy, compile the example inside a fresh
# release-profile sandbox (read-only source, writable build and output,
# no network), read the typed result, and show a sandbox violation.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
if [ -d build-demo/meson-private ]; then meson setup --reconfigure build-demo >/dev/null
else meson setup build-demo >/dev/null; fi
meson compile -C build-demo examples/forgeyard >/dev/null
fy=$PWD/build-demo/examples/forgeyard

work=$(mktemp -d /tmp/forgeyard-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
mkdir -p "$work/source" "$work/build" "$work/output"
cp examples/hello/hello.c examples/hello/build.sh "$work/source/"
chmod -R a+rX "$work/source"
if [ "$(id -u)" -eq 0 ]; then
  # As root the workload runs as an unprivileged host uid (id_range.first + 1).
  chown 100001:100001 "$work/build" "$work/output"
fi

step() { printf '\n== %s\n' "$*"; }
step "forgeyard version"; $fy version
step "forgeyard doctor"; $fy doctor || true
step "forgeyard policy check examples/policies/release-build.json"
# (the whole output, then its first line: a "| head" would SIGPIPE the CLI under pipefail)
check=$($fy policy check examples/policies/release-build.json)
printf '%s\n' "${check%%$'\n'*}"
step "forgeyard run: compile the example in a release-profile sandbox"
$fy run --policy examples/policies/release-build.json \
  --source "$work/source" --build "$work/build" --output "$work/output" \
  --result "$work/result.json" -- /bin/sh /work/source/build.sh
step "the typed result"
python3 - "$work/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
iso = r["isolation"]
print(f"outcome {r['outcome']}, exit {r['exit_code']}, level {r['level']} via {r['backend']}")
print(f"namespaces {', '.join(iso['namespaces'])}; seccomp {iso['seccomp']['profile']} v{iso['seccomp']['version']}; "
      f"landlock ABI {iso['landlock_abi']}; {iso['mode']}")
print("stages (us):", ", ".join(f"{k} {v}" for k, v in r["stage_usec"].items()))
PY
ls -l "$work/output/hello"
step "a denied dangerous call ends the attempt as a violation (exit 244)"
set +e
$fy run -- /bin/sh -c 'echo trying to mount; mount -t tmpfs none /tmp; echo not reached'
echo "forgeyard run exited with $?"
