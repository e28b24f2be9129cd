#!/usr/bin/env bash
# Runs a Windows test program under wine64 in a throwaway WINEPREFIX:
#   run-wine.sh PROGRAM.exe DLL_DIR CLI.exe [ARGS...]
# Skips (77) when wine64 is absent. The prefix is made once per run
# (wineboot takes most of the time) and removed with every Wine process
# of it (wineserver -k) at the end.
# The program, the DLLs and the CLI are copied into a directory of this
# run's own: the Windows tests run in parallel, and copying over a DLL that
# another run has mapped pulls its pages away (a page fault on its own
# import table, seen as an intermittent crash).
set -euo pipefail
exe=$1 dlldir=$2 cli=$3
shift 3
wine=""
for w in "${WINE64:-}" wine64 /usr/lib/wine/wine64; do
  if [ -n "$w" ] && command -v "$w" >/dev/null 2>&1; then wine=$(command -v "$w"); break; fi
done
if [ -z "$wine" ]; then
  echo "1..0 # SKIP wine64 is not installed (apt-get install wine64)"
  exit 77
fi
wineserver="$(dirname "$wine")/wineserver"
command -v "$wineserver" >/dev/null 2>&1 || wineserver=wineserver
prefix=$(mktemp -d "${TMPDIR:-/tmp}/fy-wine.XXXXXX")
cleanup() {
  WINEPREFIX="$prefix" "$wineserver" -k >/dev/null 2>&1 || true
  # wineserver's socket directory for this prefix (server-DEV-INODE, in a
  # wine-XXXXXX directory of TMPDIR) is not removed by Wine itself.
  local server d
  server=$(printf 'server-%s-%x' "$(stat -c %D "$prefix")" "$(stat -c %i "$prefix")") || server=
  for d in "${TMPDIR:-/tmp}"/wine-*/; do
    if [ -n "$server" ] && [ -d "$d$server" ]; then rm -rf "$d"; fi
  done
  rm -rf "$prefix" "$prefix.boot.log"
}
trap cleanup EXIT
export WINEPREFIX="$prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY=
# wineboot can fail on a loaded host (seen in CI with the whole suite running:
# the program then died with "could not load kernel32.dll"): the prefix must
# hold kernel32.dll before the program runs, else it is made again, twice at
# most, and a prefix that never becomes usable fails the test with its reason.
ready() { [ -f "$prefix/drive_c/windows/system32/kernel32.dll" ]; }
for attempt in 1 2 3; do
  "$wine" wineboot -i >"$prefix.boot.log" 2>&1 || true
  ready && break
  echo "# wineboot attempt $attempt left no kernel32.dll in the prefix; again" >&2
  "$wineserver" -k >/dev/null 2>&1 || true
  sleep 1
done
if ! ready; then
  echo "# wineboot never made a usable prefix:" >&2
  sed 's/^/#   /' "$prefix.boot.log" >&2 || true
  rm -f "$prefix.boot.log"
  exit 1
fi
rm -f "$prefix.boot.log"
# The library's DLL and the CLI next to the program, as installed.
bin="$prefix/run"
mkdir "$bin"
cp "$exe" "$dlldir"/*.dll "$cli" "$bin/"
"$wine" "$bin/$(basename "$exe")" "$@" 2>&1 | tr -d '\r'
exit "${PIPESTATUS[0]}"
