#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Compare the ABI of the built library with the committed baseline.
#
#   abi-check.sh [--update] ABIDW ABIDIFF LIBRARY BASELINE HEADER...
#
# HEADERs are the public headers as installed (including the generated
# fy-version.h); they are copied into one directory so that abidw sees the
# same set a user of the installed library sees. Without --update, any
# non-zero abidiff status fails: abidiff's "only additions" status (4) is
# not safe either (a uint64_t parameter narrowed to uint32_t also gives 4).
# With --update the baseline is rewritten (meson compile -C BUILD update-abi).
set -eu

update=0
if [ "${1:-}" = "--update" ]; then
    update=1
    shift
fi
if [ $# -lt 5 ]; then
    echo "usage: $0 [--update] ABIDW ABIDIFF LIBRARY BASELINE HEADER..." >&2
    exit 2
fi
abidw=$1 abidiff=$2 lib=$3 baseline=$4
shift 4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fy-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/headers"
for h in "$@"; do
    cp "$h" "$tmp/headers/"
done

# abidw needs DWARF; a build without -g cannot be compared meaningfully.
if ! readelf -S "$lib" 2>/dev/null | grep -q '\.debug_info'; then
    echo "abi-check: $lib has no debug information (build with -g, e.g. buildtype=debugoptimized);" >&2
    echo "abi-check: skipping the ABI comparison." >&2
    exit 77
fi

"$abidw" --headers-dir "$tmp/headers" --drop-private-types --no-show-locs \
    --no-corpus-path --no-comp-dir-path --type-id-style hash \
    --out-file "$tmp/raw.abi" "$lib"
# Translation-unit paths are relative to the build directory
# ("../../src/forgeyard/lib/api-caps.c"); keep them from "lib/" on so the
# baseline does not depend on where the tree and the build directory live.
sed -E "s|(<abi-instr [^>]*path=')[^']*/(lib/[^']*')|\1\2|" "$tmp/raw.abi" > "$tmp/current.abi"

if [ "$update" = 1 ]; then
    if [ -f "$baseline" ] && cmp -s "$tmp/current.abi" "$baseline"; then
        echo "abi-check: $baseline is already up to date"
    else
        cp "$tmp/current.abi" "$baseline"
        echo "abi-check: wrote $baseline; review the diff and commit it with the ABI change"
    fi
    exit 0
fi

if [ ! -f "$baseline" ]; then
    echo "abi-check: no baseline at $baseline" >&2
    echo "abi-check: create it with: meson compile -C <builddir> update-abi" >&2
    exit 1
fi

status=0
"$abidiff" --no-show-locs "$baseline" "$tmp/current.abi" > "$tmp/report" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
    cat "$tmp/report" >&2
    cat >&2 <<MSG

abi-check: FAILED (abidiff status $status): the ABI of $(basename "$lib")
differs from the committed baseline $baseline.
abidiff's status is a bit mask:
  1  abidiff itself failed
  2  usage error
  4  the ABI changed (this includes added functions and changed parameter
     types, which abidiff does not call incompatible)
  8  the change is incompatible (e.g. a function was removed)
If the change is intended (an addition in a new FORGEYARD_SANDBOX_x.y node,
or a deliberate break with a SONAME bump), regenerate the baseline with
    meson compile -C <builddir> update-abi
and commit test/abi/forgeyard-sandbox.abi in the same change: the XML diff
is the ABI review. Otherwise fix the change that altered the ABI.
MSG
    exit 1
fi
echo "abi-check: ABI matches $baseline"
