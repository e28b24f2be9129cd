#!/usr/bin/env bash
# The peer benchmark (README "Performance"): builds fy-bench with an
# optimised build and runs it once. Arguments go to fy-bench:
# [RUNS (default 200)] [SLEEPERS (default 200)]. Needs root for the runc and
# bubblewrap peers to be comparable (runc as root; bwrap as the same user).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
if [ -d build-bench/meson-private ]; then meson setup --reconfigure build-bench --buildtype=release >/dev/null
else meson setup build-bench --buildtype=release >/dev/null; fi
meson compile -C build-bench bench/fy-bench examples/forgeyard >/dev/null
exec ./build-bench/bench/fy-bench "$@"
