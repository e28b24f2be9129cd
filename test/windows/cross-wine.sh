#!/usr/bin/env bash
# The Windows cross build and its tests under wine64, from the native
# build's suite (suite 'windows'):
#   cross-wine.sh SOURCE_ROOT BUILD_DIR
# Skips (77) only when the mingw-w64 compiler or wine64 is missing
# (scripts/deps.sh installs both); a cross build that breaks fails.
set -euo pipefail
src=$1 dir=$2
if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
  echo "SKIP: x86_64-w64-mingw32-gcc is not installed (apt-get install gcc-mingw-w64-x86-64)"
  exit 77
fi
if ! command -v wine64 >/dev/null 2>&1 && [ ! -x /usr/lib/wine/wine64 ]; then
  echo "SKIP: wine64 is not installed (apt-get install wine64)"
  exit 77
fi
if [ ! -d "$dir/meson-private" ]; then
  meson setup "$dir" "$src" --cross-file "$src/cross/x86_64-w64-mingw32.txt" >"$dir.setup.log" 2>&1 ||
    { cat "$dir.setup.log"; exit 1; }
fi
ninja -C "$dir" -j2 >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; exit 1; }
echo "cross build: $(ls "$dir"/lib/*.dll "$dir"/lib/*.dll.a "$dir"/examples/*.exe | xargs -n1 basename | tr '\n' ' ')"
# The DLL exports exactly the public API of the version script (the same
# symbol set as on Linux; functions without a Windows meaning are there
# and return FY_E_UNSUPPORTED).
exports=$(x86_64-w64-mingw32-objdump -p "$dir"/lib/libforgeyard-sandbox-0.dll |
  sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | grep -oE '\] [A-Za-z_0-9]+' | awk '$2 != "Table" {print $2}' | sort)
expected=$(grep -oE 'fy_[a-z0-9_]+' "$src"/lib/forgeyard-sandbox.sym | sort -u)
if [ "$exports" != "$expected" ]; then
  echo "FAIL: the DLL's exports differ from lib/forgeyard-sandbox.sym:"
  diff <(echo "$expected") <(echo "$exports") || true
  exit 1
fi
echo "exports: $(echo "$exports" | wc -l) functions, as lib/forgeyard-sandbox.sym"
rc=0
meson test -C "$dir" --no-rebuild --suite windows --print-errorlogs || rc=$?
grep -E '^(ok|not ok|#)' "$dir/meson-logs/testlog.txt" || true
exit $rc
