#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The forgeyard CLI as an operator uses it: exit statuses, a failed mount's
# message, and ^C (SIGINT), which must cancel the run and leave nothing
# behind (no process, cgroup or state record), once gracefully and once,
# at a second signal, at once.  Usage: test-cli.sh FORGEYARD
set -u
fy=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
scratch=$(mktemp -d /tmp/fy-cli-XXXXXX) || exit 1
trap 'rm -rf "$scratch"' EXIT
mark="fy-cli-$$"   # unique in the workload's shell's command line

# What a CLI run left behind: processes with our mark, cgroups and state
# records named after the CLI's pid.
residue() {
    n=$(pgrep -f "$mark" | wc -l)
    for d in /sys/fs/cgroup/*/ /sys/fs/cgroup/*/*/ /sys/fs/cgroup/memory/*/*/; do
        for c in "$d"forgeyard-"$1"-*; do [ -d "$c" ] && n=$((n + 1)); done
    done
    for s in /run/forgeyard-sandbox/forgeyard-"$1"-*.state; do [ -e "$s" ] && n=$((n + 1)); done
    echo "$n"
}

# Waits (bounded) until the CLI's sandbox runs the marked shell (the CLI's
# own command line holds the mark too, after its path).
wait_running() {
    i=0
    while [ "$(pgrep -f "^/bin/sh -c .*$mark" | wc -l)" -eq 0 ]; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the sandbox never started"
        sleep 0.02
    done
}

# 1. The workload's own status.
"$fy" run -- /bin/sh -c 'exit 3'; rc=$?
[ $rc -eq 3 ] || fail "exit 3 gave $rc"

# 2. A workspace path that does not exist: an infrastructure failure (245)
# whose message names the path and where it was to go.
out=$("$fy" run --build "$scratch/missing" -- /bin/true 2>&1); rc=$?
[ $rc -eq 245 ] || fail "missing build directory gave $rc: $out"
case $out in *"$scratch/missing at /work/build"*) ;; *) fail "message does not name the path: $out" ;; esac

# 1b. Secrets from files: the command gets them, the result never holds them.
printf 'S3CRET-%s' "$$" > "$scratch/token"
out=$("$fy" run --secret-env TOKEN="$scratch/token" --secret-file tok="$scratch/token" --result "$scratch/r.json" \
      -- /bin/sh -c 'printf "%s|" "$TOKEN"; cat /run/secrets/tok' 2>&1); rc=$?
[ $rc -eq 0 ] || fail "secrets run gave $rc: $out"
[ "$out" = "S3CRET-$$|S3CRET-$$" ] || fail "the command did not get its secrets: $out"
[ -s "$scratch/r.json" ] || fail "no result file"
grep -q "S3CRET" "$scratch/r.json" && fail "a secret is in the result"
grep -q '"outcome": "succeeded"' "$scratch/r.json" || fail "result: $(cat "$scratch/r.json")"

# 2a. --pty private: a terminal of the sandbox's own; none without it.
out=$("$fy" run --pty private -- /usr/bin/script -qc tty /dev/null 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--pty private gave $rc: $out"
case $out in */dev/pts/0*) ;; *) fail "no terminal with --pty private: $out" ;; esac
out=$("$fy" run -- /usr/bin/script -qc tty /dev/null 2>&1) && fail "a terminal without --pty: $out"

# 2b. As root, a build directory the sandbox's host user cannot write gets
# a note with the fix before the run; a writable one gets none.
if [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$scratch/rootdir" "$scratch/theirs"
    chown 100001:100001 "$scratch/theirs"
    out=$("$fy" run --build "$scratch/rootdir" -- /bin/true 2>&1)
    case $out in *"note: --build $scratch/rootdir is not writable by host user 100001"*"chown 100001:100001"*) ;;
        *) fail "no note for an unwritable build directory: $out" ;; esac
    out=$("$fy" run --build "$scratch/theirs" -- /bin/true 2>&1)
    case $out in *note:*) fail "a note for a writable build directory: $out" ;; esac
fi

# 3. ^C: cancelled (241), the tree ended, nothing left. (A background job
# of this shell would start with SIGINT ignored, which the CLI respects:
# env gives it the default disposition, as a terminal's foreground job has.)
env --default-signal=INT "$fy" run -- /bin/sh -c "sleep 30; : $mark" 2>"$scratch/err" &
cli=$!
wait_running
kill -INT $cli
wait $cli; rc=$?
[ $rc -eq 241 ] || fail "SIGINT gave $rc: $(cat "$scratch/err")"
grep -q "cancelled" "$scratch/err" || fail "no cancellation message: $(cat "$scratch/err")"
[ "$(residue $cli)" -eq 0 ] || fail "SIGINT left $(residue $cli) things behind"

# 4. A workload that ignores SIGTERM: a second ^C kills it at once, well
# before the policy's grace period (10 s), and cleans up all the same.
env --default-signal=INT "$fy" run -- /bin/sh -c "trap '' TERM INT HUP; sleep 30; : $mark" 2>"$scratch/err" &
cli=$!
wait_running
start=$(date +%s)
kill -INT $cli
sleep 0.3
kill -INT $cli
wait $cli; rc=$?
end=$(date +%s)
[ $rc -eq 241 ] || fail "two SIGINTs gave $rc: $(cat "$scratch/err")"
[ $((end - start)) -lt 5 ] || fail "the second SIGINT did not kill at once ($((end - start)) s)"
[ "$(residue $cli)" -eq 0 ] || fail "two SIGINTs left $(residue $cli) things behind"

# 5. SIGTERM (a supervisor stopping the CLI) cancels the same way.
"$fy" run -- /bin/sh -c "sleep 30; : $mark" 2>"$scratch/err" &
cli=$!
wait_running
kill -TERM $cli
wait $cli; rc=$?
[ $rc -eq 241 ] || fail "SIGTERM gave $rc: $(cat "$scratch/err")"
[ "$(residue $cli)" -eq 0 ] || fail "SIGTERM left $(residue $cli) things behind"
echo "cli: ok"
