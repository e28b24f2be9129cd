#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The static library links into a host that has functions of its own with
# the names of library internals, using only what pkg-config says.
#
#   CC=... NM=... [PKG_CONFIG=...] [CONSUMER_CFLAGS=...] static-link.sh ARCHIVE SYM CONSUMER_C \
#       CONSTANTS_JSON PC_FILE HEADER...
#
# 1. The archive's defined global symbols are exactly the global: names of
#    the version script SYM (so all start with fy_); nothing else leaks.
# 2. The .pc file (the one meson installs) names only what the library
#    links: no libarchive/libcap unless the archive references them, no
#    -lforgeyard-sandbox in Libs.private; it has a 'constants' variable.
# 3. ARCHIVE, the headers, CONSTANTS_JSON and PC_FILE are laid out as an
#    installed, static-only prefix (no .so); CONSUMER_C (which defines
#    strbuf_init, vec_push, err_set, caps_new) is compiled and linked with
#    `pkg-config --static --cflags --libs forgeyard-sandbox` and run.
# 4. Where static libjansson/libsodium/libseccomp exist, the same program is
#    also linked fully static (-static) and run.
set -eu

CC=${CC:-cc}
NM=${NM:-nm}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
CONSUMER_CFLAGS=${CONSUMER_CFLAGS:-}
if [ $# -lt 6 ]; then
    echo "usage: CC=... NM=... $0 ARCHIVE SYM CONSUMER_C CONSTANTS_JSON PC_FILE HEADER..." >&2
    exit 2
fi
archive=$1 sym=$2 consumer=$3 constants=$4 pcfile=$5
shift 5

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fy-static.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
note() { printf '%s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*" >&2; fail=1; }

# 1. Defined globals == the version script's global: names.
sed -e 's,/\*.*\*/,,g' "$sym" |
    awk '/^[[:space:]]*global[[:space:]]*:/ { g = 1; next }
         /^[[:space:]]*local[[:space:]]*:/ || /}/ { g = 0; next }
         g && match($0, /^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*;/) {
             s = substr($0, RSTART, RLENGTH); gsub(/[[:space:];]/, "", s); print s }' |
    LC_ALL=C sort -u > "$tmp/exports"
# shellcheck disable=SC2086
$NM -g --defined-only "$archive" | awk 'NF == 3 { print $3 }' | LC_ALL=C sort > "$tmp/defined-all"
LC_ALL=C sort -u "$tmp/defined-all" > "$tmp/defined"
# shellcheck disable=SC2086
$NM -u "$archive" | awk 'NF == 2 && $1 == "U" { print $2 }' | LC_ALL=C sort -u > "$tmp/undefined"
nexp=$(wc -l < "$tmp/exports")
ndef=$(wc -l < "$tmp/defined")
nund=$(wc -l < "$tmp/undefined")
if [ "$nexp" -eq 0 ]; then
    bad "no global: names found in $sym"
fi
internal=$(grep -v '^fy_' "$tmp/defined" || true)
if [ -n "$internal" ]; then
    bad "$(echo "$internal" | wc -l) global symbols without the fy_ prefix are defined by $(basename "$archive")" \
        "(a host defining one of these fails to link): $(echo "$internal" | head -20 | tr '\n' ' ')"
fi
extra=$(LC_ALL=C comm -13 "$tmp/exports" "$tmp/defined")
if [ -n "$extra" ]; then
    bad "defined globals that the version script does not export: $(echo "$extra" | tr '\n' ' ')"
fi
missing=$(LC_ALL=C comm -23 "$tmp/exports" "$tmp/defined")
if [ -n "$missing" ]; then
    bad "exported by the version script but not defined by the archive: $(echo "$missing" | tr '\n' ' ')"
fi
dups=$(uniq -d "$tmp/defined-all")
if [ -n "$dups" ]; then
    bad "defined more than once in the archive: $(echo "$dups" | tr '\n' ' ')"
fi
unres=$(LC_ALL=C comm -23 "$tmp/undefined" "$tmp/defined" | grep '^fy_' || true)
if [ -n "$unres" ]; then
    bad "the archive references fy_ symbols it does not define: $(echo "$unres" | tr '\n' ' ')"
fi
[ "$fail" -eq 0 ] && note "ok   $(basename "$archive"): $ndef defined globals, all exported by $(basename "$sym") ($nexp names); $nund undefined references left to the linker"

# 2. The .pc file names exactly what is linked.
requires=$(sed -n 's/^Requires\(\.private\)\{0,1\}:[[:space:]]*//p' "$pcfile" | tr '\n' ' ')
libs_private=$(sed -n 's/^Libs\.private:[[:space:]]*//p' "$pcfile")
for pair in libarchive:archive_ libcap:cap_; do
    pkg=${pair%%:*} prefix=${pair#*:}
    if printf '%s\n' "$requires" | grep -qw "$pkg" && ! grep -q "^$prefix" "$tmp/undefined"; then
        bad "$(basename "$pcfile") requires $pkg, but the library references no ${prefix}* symbol"
    fi
done
for pair in jansson:json_ libsodium:sodium_ libseccomp:seccomp_; do
    pkg=${pair%%:*} prefix=${pair#*:}
    if grep -q "^$prefix" "$tmp/undefined" && ! printf '%s\n' "$requires" | grep -qw "$pkg"; then
        bad "the library calls ${prefix}* functions, but $(basename "$pcfile") does not require $pkg"
    fi
done
case " $libs_private " in
    *-lforgeyard-sandbox*) bad "Libs.private repeats -lforgeyard-sandbox: $libs_private" ;;
esac
grep -q '^constants=' "$pcfile" || bad "$(basename "$pcfile") has no 'constants' variable"
[ "$fail" -eq 0 ] && note "ok   $(basename "$pcfile"): Requires: $requires| Libs.private: $libs_private"

# 3. An installed, static-only prefix, and a host program linked from it.
# (prefix= rewritten in the copy: --define-variable would move the
# dependencies' .pc prefixes too.)
mkdir "$tmp/pc"
sed "s|^prefix=.*|prefix=$tmp/prefix|" "$pcfile" > "$tmp/pc/forgeyard-sandbox.pc"
pc() { PKG_CONFIG_PATH="$tmp/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" "$PKG_CONFIG" "$@" forgeyard-sandbox; }
libdir=$(pc --variable=libdir)
includedir=$(pc --variable=includedir)
constdir=$(dirname "$(pc --variable=constants)")
mkdir -p "$libdir" "$includedir/forgeyard" "$constdir"
cp "$archive" "$libdir/libforgeyard-sandbox.a"
for h in "$@"; do cp "$h" "$includedir/forgeyard/"; done
cp "$constants" "$(pc --variable=constants)"
cflags=$(pc --static --cflags)
libs=$(pc --static --libs)
note "     pkg-config --static --libs: $libs"

link() { # output extra-ldflags...
    out=$1
    shift
    # shellcheck disable=SC2086
    $CC -std=c99 -Wall -Wextra -Werror $CONSUMER_CFLAGS $cflags "$consumer" -o "$out" "$@" $libs 2> "$tmp/err" && return 0
    cat "$tmp/err" >&2
    return 1
}
if link "$tmp/consumer"; then
    if ! $NM "$tmp/consumer" | grep -q ' T fy_policy_new$'; then
        bad "the consumer did not take fy_policy_new from the static library"
    elif "$tmp/consumer"; then
        note "ok   a host with its own strbuf_init/vec_push/err_set/caps_new links the static library and runs"
    else
        bad "the statically linked consumer failed"
    fi
else
    bad "a host with its own strbuf_init/vec_push/err_set/caps_new does not link with libforgeyard-sandbox.a"
fi

# 4. Fully static, where the dependencies have static libraries.
have_static=1
for l in libjansson.a libsodium.a libseccomp.a libc.a; do
    p=$($CC -print-file-name=$l)
    [ "$p" != "$l" ] && [ -e "$p" ] || have_static=0
done
if [ "$have_static" -eq 1 ] && [ -z "$CONSUMER_CFLAGS" ]; then
    if link "$tmp/consumer-static" -static; then
        if "$tmp/consumer-static"; then
            note "ok   the same host linked with -static runs"
        else
            bad "the fully static consumer failed"
        fi
    else
        bad "the consumer does not link with -static and 'pkg-config --static --libs'"
    fi
else
    note "skip -static link (static libjansson/libsodium/libseccomp/libc not all installed, or a sanitizer build)"
fi

if [ "$fail" -ne 0 ]; then
    echo "static-link: FAILED (see above)" >&2
    exit 1
fi
echo "static-link: passed"
