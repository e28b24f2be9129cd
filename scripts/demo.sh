#!/usr/bin/env bash
# Builds libforgeyard-sandbox and the forgeyard CLI, then walks the CLI
# through the lifecycle on the bundled example (examples/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
if [ -d build-demo/meson-private ]; then meson setup --reconfigure build-demo >/dev/null; else meson setup build-demo >/dev/null; fi
meson compile -C build-demo examples/forgeyard >/dev/null
fy=./build-demo/examples/forgeyard
set -x
$fy version
$fy doctor || true
$fy policy check examples/policies/release-build.json
$fy policy show --profile release >/dev/null
