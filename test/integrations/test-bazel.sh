#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The real Bazel (Debian's bazel-bootstrap 4.2.3), not a reproduction of its
# calling convention: `bazel test --run_under=WRAPPER` runs every test
# binary as `WRAPPER TEST [ARGS]` in the test's runfiles directory with the
# test's environment (TEST_TMPDIR, TEST_SRCDIR, XML_OUTPUT_FILE, and bash
# functions exported by Bazel's test-setup.sh as BASH_FUNC_NAME%%), which
# is the executionWrapper/entrypoint convention `forgeyard wrap` serves.
#   - a genrule's output read through the runfiles tree passes;
#   - a test that passes only inside a sandbox (a host file it is told
#     about is invisible, a loopback listener of this script unreachable,
#     its own source file unwritable, its own pid namespace) passes under
#     the wrapper, and the same test run without the wrapper FAILS (the
#     control: the test can tell);
#   - each wrapped test wrote its result: outcome succeeded, a contract id.
# Bazel runs as uid 65534 (started from root) or as the caller: a worker's
# own user, the way developers and CI run Bazel; as root, `forgeyard wrap`
# would hand the output base's directories to the sandbox's uid, which
# Bazel refuses afterwards (docs/integrations.md).
# Usage: test-bazel.sh FORGEYARD
set -u
fy=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v bazel >/dev/null 2>&1 ||
    { echo "SKIP: bazel is not installed (Debian's bazel-bootstrap; scripts/deps.sh installs it)"; exit 77; }
[ -d /usr/share/bazel/rules/java ] ||
    { echo "SKIP: Debian's bazel-rules-java is not installed (scripts/deps.sh installs it)"; exit 77; }

if [ "$(id -u)" -eq 0 ] && [ "${2:-}" != "--as-user" ]; then
    t=$(mktemp -d /tmp/fy-bazel-XXXXXX) || exit 1
    trap 'rm -rf "$t"' EXIT
    # (the CLI finds its library at $ORIGIN/../lib, as when installed)
    mkdir "$t/bin" "$t/lib" && cp "$fy" "$t/bin/forgeyard" &&
        cp -P "$(dirname "$fy")"/../lib/libforgeyard-sandbox.so.0 "$(dirname "$fy")"/../lib/libforgeyard-sandbox.so.0.*[0-9] "$t/lib/" ||
        exit 1
    chown -R 65534:65534 "$t" && chmod 0755 "$t"
    setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME="$t" TMPDIR="$t" \
        sh "$0" "$t/bin/forgeyard" --as-user
    exit $?
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fy-bazel-run-XXXXXX") || exit 1
listener=
cleanup() {
    [ -n "$listener" ] && kill "$listener" 2>/dev/null
    chmod -R u+w "$scratch" 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT
ws=$scratch/ws
out=$scratch/out
res=$scratch/results
mkdir -p "$ws/third_party/coverage" "$ws/third_party/rules_cc/cc" "$out" "$res" "$scratch/home" || exit 1

# ---- the workspace: offline, on Debian's packaged rules ----
# Bazel's own tools load @rules_cc and @rules_java; Debian's rules_cc is
# newer than this Bazel, so the native rules stand in for it; coverage is
# never used but its repository must resolve without a download.
cat > "$ws/WORKSPACE" <<'EOF'
local_repository(name = "remote_coverage_tools", path = "third_party/coverage")
local_repository(name = "rules_cc", path = "third_party/rules_cc")
local_repository(name = "rules_java", path = "/usr/share/bazel/rules/java")
EOF
: > "$ws/third_party/coverage/WORKSPACE"
printf '#!/bin/sh\nexit 1\n' > "$ws/third_party/coverage/none.sh"
cat > "$ws/third_party/coverage/BUILD" <<'EOF'
sh_binary(name = "coverage_report_generator", srcs = ["none.sh"], visibility = ["//visibility:public"])
EOF
: > "$ws/third_party/rules_cc/WORKSPACE"
: > "$ws/third_party/rules_cc/BUILD"
: > "$ws/third_party/rules_cc/cc/BUILD"
for r in cc_binary cc_library cc_test cc_toolchain cc_toolchain_suite cc_proto_library objc_library; do
    printf 'def %s(**kwargs):\n    native.%s(**kwargs)\n\n' "$r" "$r"
done > "$ws/third_party/rules_cc/cc/defs.bzl"

cat > "$ws/BUILD" <<'EOF'
sh_binary(name = "hello", srcs = ["hello.sh"])
genrule(name = "greeting", outs = ["greeting.txt"], cmd = "$(location :hello) > $@", tools = [":hello"])
sh_test(name = "runfiles_test", srcs = ["runfiles_test.sh"], data = [":greeting"])
sh_test(name = "isolation_test", srcs = ["isolation_test.sh"])
EOF
printf '#!/bin/sh\necho "hello from bazel"\n' > "$ws/hello.sh"
cat > "$ws/runfiles_test.sh" <<'EOF'
#!/bin/sh
grep -q "hello from bazel" greeting.txt && [ -n "$TEST_TMPDIR" ] && touch "$TEST_TMPDIR/written"
EOF
# Passes only in a sandbox: each check would pass on the bare host.
cat > "$ws/isolation_test.sh" <<'EOF'
#!/bin/sh
bad=0
for v in FY_HOST_FILE FY_HOST_PORT FY_HOST_PIDNS; do
    eval "[ -n \"\${$v:-}\" ]" || { echo "$v is not set"; exit 1; }
done
if [ -e "$FY_HOST_FILE" ]; then echo "the host's file $FY_HOST_FILE is visible"; bad=1; fi
if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)' "$FY_HOST_PORT" 2>/dev/null; then
    echo "the host's loopback listener on port $FY_HOST_PORT answered"; bad=1
fi
src=$(readlink -f "$0")
if (echo tamper >> "$src") 2>/dev/null; then echo "the test's source $src is writable"; bad=1; fi
if [ "$(readlink /proc/self/ns/pid)" = "$FY_HOST_PIDNS" ]; then echo "the host's pid namespace"; bad=1; fi
exit $bad
EOF
chmod 0755 "$ws"/*.sh "$ws/third_party/coverage/none.sh"

# ---- what the sandbox must hide ----
echo "host-only" > "$scratch/host-file"
python3 -c '
import socket, sys, os
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept(); c.close()' "$scratch/port" &
listener=$!
for _ in $(seq 50); do [ -s "$scratch/port" ] && break; sleep 0.1; done
[ -s "$scratch/port" ] || fail "the loopback listener did not start"
port=$(cat "$scratch/port")
python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)' "$port" ||
    fail "the listener does not answer on the host"

# ---- the wrapper Bazel runs every test under ----
cat > "$scratch/wrap.sh" <<EOF
#!/bin/sh
# run_under: the test's command line is "\$@", in its runfiles directory.
exec "$fy" wrap --profile release --same-path --root "$out" --bind-ro "$ws:$ws" \\
    --result "$res/\${TEST_TARGET##*:}.json" -- "\$@"
EOF
chmod 0755 "$scratch/wrap.sh"

cd "$ws" || exit 1
bz() {
    HOME="$scratch/home" bazel --output_user_root="$out" --batch "$@" --spawn_strategy=standalone \
        --nocache_test_results --color=no --curses=no --noshow_progress --test_output=errors \
        --test_env=FY_HOST_FILE="$scratch/host-file" --test_env=FY_HOST_PORT="$port" \
        --test_env=FY_HOST_PIDNS="$(readlink /proc/self/ns/pid)"
}

log=$scratch/bazel.log
bz test --run_under="$scratch/wrap.sh" //... > "$log" 2>&1; rc=$?
[ $rc -eq 0 ] || { cat "$log" >&2; fail "bazel test under forgeyard wrap exited $rc"; }
for t in runfiles_test isolation_test; do
    grep -q "//:$t .*PASSED" "$log" || { cat "$log" >&2; fail "$t did not pass under the wrapper"; }
    [ -s "$res/$t.json" ] || fail "no result from forgeyard for $t"
    python3 - "$res/$t.json" <<'EOF' || fail "$t: the result is not a sandboxed success"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "succeeded", r["outcome"]
assert r["exit_code"] == 0, r["exit_code"]
assert r["contract_id"], "no contract id"
assert r["isolation"], "no isolation record"
EOF
done

# The control: the isolation test without the wrapper must fail, or it
# proved nothing.
rm -f "$res"/*.json
bz test //:isolation_test > "$log" 2>&1; rc=$?
[ $rc -eq 3 ] || { cat "$log" >&2; fail "the control (no wrapper) gave $rc, not bazel's 3 (tests failed)"; }
grep -q "//:isolation_test .*FAILED" "$log" || { cat "$log" >&2; fail "the control did not fail the isolation test"; }
for m in "is visible" "listener on port $port answered" "is writable" "the host's pid namespace"; do
    grep -q "$m" "$log" || { cat "$log" >&2; fail "the control's isolation test did not see: $m"; }
done
[ -z "$(ls "$res")" ] || fail "forgeyard ran in the control"
echo "PASS: bazel test --run_under forgeyard wrap (as uid $(id -u))"

# ---- Bazel itself in the sandbox: a CI job that runs `bazel build` ----
# Debian's client finds its install base (/usr/share/bazel) only through
# /etc/bazel/bazelrc, part of the toolchain configuration a sandbox gets
# (plan.c etc_toolchain); without it the client tries to unpack itself from
# /proc/self/exe and stops ("Failed to open '/proc/self/exe' as a zip file").
job=$scratch/job
cp -R "$ws" "$job" || fail "copying the workspace"
"$fy" run --profile standard-ci --build "$job" --env HOME=/work/build/.home --env PATH=/usr/bin:/bin \
    --result "$res/in-sandbox.json" -- \
    bazel --output_user_root=/work/build/.out --batch build --color=no --curses=no --noshow_progress \
    //:greeting > "$log" 2>&1; rc=$?
[ $rc -eq 0 ] || { cat "$log" >&2; fail "bazel build in the sandbox exited $rc"; }
grep -q "hello from bazel" "$job/bazel-bin/greeting.txt" 2>/dev/null ||
    grep -rqs "hello from bazel" "$job/.out" || { cat "$log" >&2; fail "bazel in the sandbox built no greeting"; }
echo "PASS: bazel build inside forgeyard run (as uid $(id -u))"
