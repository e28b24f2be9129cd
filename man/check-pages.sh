#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Checks the man pages beyond what "mandoc -T lint" of the real pages does:
#   - every page file in MAN_DIR is in the meson list (so it is installed
#     and linted), and every listed file exists;
#   - every alias page is exactly one ".so man3/<page>.3" line whose target
#     is a real page, and resolves as it will once installed (mandoc follows
#     .so relative to the man root, so the check runs in a directory where
#     man3/ points at MAN_DIR). mandoc's own warning that .so is "fragile" is
#     the reason aliases are not part of the -W warning lint.
#
#   check-pages.sh MANDOC MAN_DIR PAGE...
set -eu

if [ $# -lt 3 ]; then
    echo "usage: $0 MANDOC MAN_DIR PAGE..." >&2
    exit 2
fi
mandoc=$1 mandir=$(cd "$2" && pwd)
shift 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fy-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
ln -s "$mandir" "$tmp/man3"

fail=0
bad() { printf 'FAIL: %s\n' "$*" >&2; fail=1; }

listed=" "
for p in "$@"; do
    listed="$listed$(basename "$p") "
    [ -f "$p" ] || bad "$p is listed in man/meson.build but does not exist"
done
for f in "$mandir"/*.[1-8]; do
    [ -e "$f" ] || continue
    b=$(basename "$f")
    case "$listed" in
    *" $b "*) ;;
    *) bad "man/$b is not listed in man/meson.build (it would be neither installed nor linted)" ;;
    esac
done

aliases=0
for p in "$@"; do
    [ -f "$p" ] || continue
    b=$(basename "$p")
    first=$(sed -n '1p' "$p")
    case "$first" in
    .so*) ;;
    *) continue ;;
    esac
    aliases=$((aliases + 1))
    if [ "$(grep -c . "$p")" -ne 1 ]; then
        bad "man/$b: an alias page must contain exactly one line"
        continue
    fi
    target=$(printf '%s\n' "$first" | sed -n 's|^\.so man3/\([A-Za-z0-9_]*\.3\)$|\1|p')
    if [ -z "$target" ]; then
        bad "man/$b: expected \".so man3/<page>.3\", found \"$first\""
        continue
    fi
    if [ ! -f "$mandir/$target" ]; then
        bad "man/$b: alias target man/$target does not exist"
        continue
    fi
    if sed -n '1p' "$mandir/$target" | grep -q '^\.so'; then
        bad "man/$b: alias target man/$target is itself an alias"
        continue
    fi
    name=${b%.3}
    if ! sed -n '/^\.SH NAME/,/^\.SH SYNOPSIS/p' "$mandir/$target" | grep -qw "$name"; then
        bad "man/$b: man/$target does not list $name in its NAME section"
    fi
    if ! (cd "$tmp" && "$mandoc" -T lint -W error "$mandir/$b") >&2; then
        bad "man/$b: mandoc cannot resolve the alias"
    fi
done

if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "check-pages: $# pages listed, $aliases aliases resolve"
