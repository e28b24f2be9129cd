#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Compile every public header on its own, as C (c89, c99, c11) and as C++
# (c++98, c++11, c++17), with -pedantic -Werror -Wall -Wextra: each in a
# translation unit that includes only that header (twice, to test the include
# guard). sandbox.h's helper macros are expanded in each standard too
# (FY_DEFINE_CLEANUP defines a static inline function: __inline__ in GNU C89).
#
#   CC=... CXX=... test-headers.sh INCLUDE_SRC_DIR HEADER...
#
# HEADERs are the installed public headers (including the generated
# fy-version.h). They are copied into DIR/forgeyard/ and used with -I DIR
# only, like an installed copy. INCLUDE_SRC_DIR is include/forgeyard in the
# source tree: every header there must be installed and reachable from the
# umbrella header sandbox.h.
set -eu

CC=${CC:-cc}
CXX=${CXX:-c++}
if [ $# -lt 2 ]; then
    echo "usage: CC=... CXX=... $0 INCLUDE_SRC_DIR HEADER..." >&2
    exit 2
fi
srcdir=$1
shift

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fy-headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/forgeyard"
for h in "$@"; do
    cp "$h" "$tmp/forgeyard/"
done

fail=0
note() { printf '%s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*" >&2; fail=1; }

# Every header of the source tree is installed, and sandbox.h includes it.
for src in "$srcdir"/*.h "$srcdir"/*.h.in; do
    [ -e "$src" ] || continue
    base=$(basename "$src" .in)
    [ -e "$tmp/forgeyard/$base" ] || bad "$base is in include/forgeyard but not in the installed header list (fy_public_headers)"
    if [ "$base" != sandbox.h ] && ! grep -q "^#include \"$base\"" "$tmp/forgeyard/sandbox.h"; then
        bad "sandbox.h does not include $base"
    fi
done

cwarn="-pedantic -Werror -Wall -Wextra -Wundef -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wcast-qual"
cxxwarn="-pedantic -Werror -Wall -Wextra -Wundef -Wshadow -Wcast-qual"

compile() { # lang std tu
    if [ "$1" = c ]; then
        # shellcheck disable=SC2086
        $CC -std="$2" $cwarn -I"$tmp" -c "$3" -o "$tmp/out.o" 2> "$tmp/err" && return 0
    else
        # shellcheck disable=SC2086
        $CXX -std="$2" $cxxwarn -I"$tmp" -c "$3" -o "$tmp/out.o" 2> "$tmp/err" && return 0
    fi
    cat "$tmp/err" >&2
    return 1
}

n=0
for hdr in "$tmp"/forgeyard/*.h; do
    h=$(basename "$hdr")
    for lang in c cxx; do
        if [ $lang = c ]; then ext=c; stds="c89 c99 c11"; else ext=cc; stds="c++98 c++11 c++17"; fi
        tu="$tmp/tu-$h.$ext"
        {
            echo "#include <forgeyard/$h>"
            echo "#include <forgeyard/$h>"
            echo "int main(void) { return 0; }"
        } > "$tu"
        for std in $stds; do
            n=$((n + 1))
            if compile $lang "$std" "$tu"; then
                note "ok   $h alone as $std"
            else
                bad "$h does not compile alone as $std"
            fi
        done
    done
done

# The umbrella header with its helper macros actually expanded.
for lang in c cxx; do
    if [ $lang = c ]; then ext=c; stds="c89 c99 c11"; else ext=cc; stds="c++98 c++11 c++17"; fi
    tu="$tmp/umbrella.$ext"
    cat > "$tu" <<'TU'
#include <forgeyard/sandbox.h>
FY_DEFINE_CLEANUP(fy_error)
FY_DEFINE_CLEANUP(fy_caps)
FY_DEFINE_CLEANUP(fy_policy)
FY_DEFINE_CLEANUP(fy_prepared)
#if FY_VERSION_MAJOR < 0 || FY_VERSION_MINOR < 0 || FY_VERSION_MICRO < 0
#error bad version macros
#endif
int main(void) {
    const char *s = FY_VERSION_STRING;
    uint64_t unlimited = FY_UNLIMITED;
    (void)s;
    (void)unlimited;
    return FY_CHECK_VERSION(0, 0, 0) ? 0 : 1;
}
TU
    for std in $stds; do
        n=$((n + 1))
        if compile $lang "$std" "$tu"; then
            note "ok   sandbox.h with FY_DEFINE_CLEANUP and version macros as $std"
        else
            bad "sandbox.h helper macros do not compile as $std"
        fi
    done
done

# C++ users must link against the C symbols: every FY_API function is
# declared inside FY_BEGIN_DECLS/FY_END_DECLS (extern "C"). Reference each
# one from C++ and check that no mangled fy_ symbol is left undefined.
funcs=$(cat "$tmp"/forgeyard/*.h | sed -n 's/^FY_API[^(]*[ *]\(fy_[A-Za-z0-9_]*\)(.*/\1/p' | sort -u)
if [ -z "$funcs" ]; then
    bad "found no FY_API functions in the headers"
else
    {
        echo "#include <forgeyard/sandbox.h>"
        echo "typedef void (*fn)(void);"
        echo "extern const fn fy_all_functions[];"
        echo "const fn fy_all_functions[] = {"
        for f in $funcs; do echo "    reinterpret_cast<fn>(&$f),"; done
        echo "};"
    } > "$tmp/linkage.cc"
    n=$((n + 1))
    if compile cxx c++11 "$tmp/linkage.cc"; then
        mangled=$(nm -u "$tmp/out.o" | awk '{print $NF}' | grep '^_Z.*fy_' || true)
        if [ -n "$mangled" ]; then
            bad "declared without extern \"C\" (missing FY_BEGIN_DECLS?): $(echo "$mangled" | tr '\n' ' ')"
        else
            note "ok   every FY_API function has C linkage in C++ ($(echo "$funcs" | wc -l) functions)"
        fi
    else
        bad "could not reference every FY_API function from C++"
    fi
fi

if [ "$fail" -ne 0 ]; then
    echo "test-headers: FAILED (see above). Public headers must compile on their own," >&2
    echo "in C89, C99 and C++98, C++11, with -pedantic -Werror -Wall -Wextra." >&2
    exit 1
fi
echo "test-headers: $n compilations passed"
