#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The image commands of the forgeyard CLI: inspect, unpack (no progress bar
# when stderr is not a terminal), run --image (the command's status, the
# image's Cmd when none is given, a tag refused by the release profile, a
# hostile image refused naming the entry, --hand-over and the unwritable
# note naming the workload's host uid), image gc and gc --images.
#   test-cli-image.sh FORGEYARD MKIMAGE.PY
set -u
fy=$1 mk=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
scratch=$(mktemp -d /tmp/fy-cli-image-XXXXXX) || exit 1
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"   # as root, the sandbox's ids open the layers below it
export FORGEYARD_CACHE_DIR="$scratch/probe" FORGEYARD_IMAGE_CACHE="$scratch/cache"
mkdir -m 0700 "$FORGEYARD_CACHE_DIR" || exit 1

cat >"$scratch/spec.json" <<'JSON'
{"layers": [{"busybox": true}], "config": {"Cmd": ["/bin/echo", "from-cmd"], "User": "0"}}
JSON
digest=$(python3 "$mk" "$scratch/img" "$scratch/spec.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])') ||
    fail "mkimage"
ref="oci:$scratch/img@$digest"

"$fy" image inspect "$ref" >"$scratch/inspect.json" || fail "image inspect"
grep -q "$digest" "$scratch/inspect.json" || fail "inspect does not name the manifest"
"$fy" image unpack "$ref" >"$scratch/unpack.json" 2>"$scratch/unpack.err" || fail "image unpack"
[ -s "$scratch/unpack.err" ] && fail "a progress bar on a non-terminal: $(cat "$scratch/unpack.err")"
grep -q '"dir"' "$scratch/unpack.json" || fail "unpack prints no layer directory"
# A malformed reference is invalid input (2), a missing image a failure (1).
"$fy" image inspect bogus 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "image inspect of a malformed reference gave $rc"
"$fy" image inspect "oci:$scratch/none" 2>/dev/null; rc=$?
[ $rc -eq 1 ] || fail "image inspect of a missing image gave $rc"

if [ "$(id -u)" = 0 ]; then
    # As root the sandbox's ids open the layers: a cache they cannot reach is refused, typed.
    chmod 0700 "$scratch"
    "$fy" run --image "$ref" -- /bin/true 2>"$scratch/reach.err" && fail "an unreachable cache was used"
    grep -q 'not reachable' "$scratch/reach.err" || fail "the refusal says: $(cat "$scratch/reach.err")"
    chmod 0755 "$scratch"
fi
out=$("$fy" run --image "$ref") || fail "run --image (Cmd) failed"
[ "$out" = "from-cmd" ] || fail "the image's Cmd printed '$out'"
"$fy" run --image "$ref" -- /bin/sh -c 'exit 5'; rc=$?
[ $rc -eq 5 ] || fail "exit 5 gave $rc"
"$fy" run --image "oci:$scratch/img:latest" -- /bin/true 2>"$scratch/tag.err"; rc=$?
[ $rc -eq 0 ] && fail "the release profile ran an image by tag"
grep -q 'digest only' "$scratch/tag.err" || fail "the tag refusal says: $(cat "$scratch/tag.err")"
"$fy" run --profile development --image "oci:$scratch/img:latest" -- /bin/true || fail "development refused a tag"

if [ "$(id -u)" = 0 ]; then
    # As root, a container maps the whole id range from 0: the workload is
    # the range's first id + its uid inside (1000 without a User, 0 for
    # User "0"). The note and --hand-over name that uid (they named the
    # namespace level's first+1, and the command then could not write).
    cat >"$scratch/nouser.json" <<'JSON'
{"layers": [{"busybox": true}]}
JSON
    nu=$(python3 "$mk" "$scratch/img-nouser" "$scratch/nouser.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])') ||
        fail "mkimage"
    for r in "oci:$scratch/img-nouser@$nu" "$ref"; do
        b="$scratch/hand/build"
        rm -rf "$scratch/hand"; mkdir -p "$b"
        "$fy" run --image "$r" --build "$b" -- /bin/sh -c 'id -u' >"$scratch/hand.id" 2>"$scratch/hand.err"
        note=$(sed -n 's/.*not writable by host user \([0-9]*\),.*/\1/p' "$scratch/hand.err")
        [ -n "$note" ] || fail "$r: no note for an unwritable --build: $(cat "$scratch/hand.err")"
        "$fy" run --image "$r" --build "$b" --hand-over -- /bin/sh -c 'touch /work/build/y' 2>"$scratch/hand.err" ||
            fail "$r: --hand-over, then the command could not write /work/build: $(cat "$scratch/hand.err")"
        [ -e "$b/y" ] || fail "$r: nothing written"
        owner=$(stat -c %u "$b/y")
        [ "$(stat -c %u "$b")" = "$owner" ] || fail "$r: handed to $(stat -c %u "$b"), the command wrote as $owner"
        [ "$note" = "$owner" ] || fail "$r: the note named host user $note, the command ran as $owner"
    done
fi

cat >"$scratch/bad.json" <<'JSON'
{"layers": [{"entries": [{"name": "../escape", "data": "x"}]}]}
JSON
bad=$(python3 "$mk" "$scratch/img-bad" "$scratch/bad.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])')
"$fy" image unpack "oci:$scratch/img-bad@$bad" >/dev/null 2>"$scratch/bad.err"; rc=$?
[ $rc -eq 0 ] && fail "a traversal layer was unpacked"
grep -q 'traversal' "$scratch/bad.err" || fail "the refusal says: $(cat "$scratch/bad.err")"
[ -e "$scratch/escape" ] && fail "the traversal wrote outside the cache"

n=$("$fy" image gc --max-age 0s) || fail "image gc"
[ "$n" = "removed 1 image layer" ] || fail "image gc printed '$n'"
"$fy" gc --images >/dev/null || fail "gc --images"
echo "ok"
