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
# The CLI's saved probe goes to the scratch directory, never the host's /run.
export FORGEYARD_CACHE_DIR="$scratch/cache"
mkdir -m 0700 "$FORGEYARD_CACHE_DIR" || exit 1

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

# 1e. The host's own streams are never the workload's to change: a pipe it
# set O_NONBLOCK on made the host's next writer fail (EAGAIN); a log the
# host appends to was truncated, or had O_APPEND cleared and its offset
# moved; with --stdin, the host's stdin was left O_NONBLOCK.
py_nb='import fcntl, os, sys; fd = int(sys.argv[1]); fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)'
out=$( { "$fy" run -- python3 -c "$py_nb" 1 2>/dev/null; head -c 300000 /dev/zero; echo " rc=$?"; } | { sleep 1; wc -c; } )
[ "$(echo $out)" = 300006 ] || fail "a workload's O_NONBLOCK on the host's stdout pipe broke the host's next writer: $out"
printf 'earlier step IMPORTANT\n' >"$scratch/log"
"$fy" run -- python3 -c 'import os; os.ftruncate(1, 0); os.lseek(1, 0, 0); os.write(1, b"all good\n")' >>"$scratch/log" 2>/dev/null
"$fy" run -- python3 -c 'import fcntl, os; fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) & ~os.O_APPEND); os.lseek(1, 0, 0)' >>"$scratch/log" 2>/dev/null
echo host >>"$scratch/log"
[ "$(head -n 1 "$scratch/log")" = "earlier step IMPORTANT" ] && [ "$(tail -n 1 "$scratch/log")" = host ] ||
    fail "a workload rewrote the host's log: $(cat "$scratch/log")"
"$fy" run -- sh -c 'echo one; echo two >&2; echo three' >"$scratch/both" 2>&1
[ "$(cat "$scratch/both" | tr '\n' ' ')" = "one two three " ] || fail "stdout and stderr to one file, out of order: $(cat "$scratch/both")"
out=$( { sleep 1; echo more; } | { "$fy" run --stdin -- python3 -c "$py_nb" 0; cat; echo " rc=$?"; } 2>&1)
[ "$(echo $out)" = "more rc=0" ] || fail "a workload's O_NONBLOCK on the host's stdin broke the host's next reader: $out"

# 1f. A caller under a small file size limit (ulimit -f, systemd's
# LimitFSIZE=): the library never raises SIGXFSZ in it (it died, 153,
# writing forgeyard-init into a memfd), and a probe made then is not saved
# with exec-init missing (later runs' inits would be forks of the host).
( ulimit -f 40; "$fy" run -- /bin/true ) >/dev/null 2>&1; rc=$?
[ $rc -ne 153 ] || fail "a run under ulimit -f 40 was killed by SIGXFSZ"
"$fy" run --result "$scratch/init.json" -- /bin/true || fail "a run after one under ulimit -f 40"
grep -q 'forgeyard-init (executed' "$scratch/init.json" ||
    fail "after a run under ulimit -f 40, the init is not executed: $(grep -o '"init": *"[^"]*"' "$scratch/init.json")"

# 1a. A command given without the "--" before it: the message says so
# (not "make needs a value" nor "unknown option make"), status 246, and
# nothing runs.
for cmd in run wrap; do
    for args in "true" "make all"; do
        # shellcheck disable=SC2086
        out=$("$fy" $cmd $args 2>&1 </dev/null); rc=$?
        [ $rc -eq 246 ] || fail "$cmd $args gave $rc: $out"
        case $out in *"\"${args%% *}\" is not an option; the command goes after --"*) ;;
            *) fail "$cmd $args: the message does not point at --: $out" ;; esac
    done
done
out=$("$fy" run --timeout 5s ls -la 2>&1 </dev/null); rc=$?
[ $rc -eq 246 ] || fail "run --timeout 5s ls gave $rc: $out"
case $out in *'"ls" is not an option'*) ;; *) fail "run --timeout 5s ls: $out" ;; esac

# 1c. A command killed by a signal the library did not send: 128+n, and the
# message names the signal (not a bare "signaled").
out=$("$fy" run -- /bin/sh -c 'kill -SEGV $$' 2>&1 </dev/null); rc=$?
[ $rc -eq 139 ] || fail "SIGSEGV gave $rc: $out"
case $out in *"signaled: signal 11 ("*")"*) ;; *) fail "the message does not name the signal: $out" ;; esac

# 1d. --result in a directory that does not exist (or that is a directory):
# refused before the command runs (status 246), not after a whole run that
# then loses its evidence.
for res in "$scratch/no-such-dir/r.json" "$scratch"; do
    out=$("$fy" run --result "$res" -- /bin/sh -c 'echo RAN-$$' 2>&1 </dev/null); rc=$?
    [ $rc -eq 246 ] || fail "--result $res gave $rc: $out"
    case $out in *RAN-*) fail "--result $res: the command ran: $out" ;; esac
    case $out in *"--result $res: cannot be written"*) ;; *) fail "--result $res: $out" ;; esac
done

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
    # --hand-over gives the directory and its files to that user, never
    # through a link; a shallow or system directory is refused.
    mkdir -p "$scratch/handed/sub" && echo old > "$scratch/handed/sub/f" && ln -s /etc/hostname "$scratch/handed/link"
    out=$("$fy" run --hand-over --build "$scratch/handed" -- /bin/sh -c 'echo new > sub/f && touch made && echo done' 2>&1)
    [ "$out" = done ] || fail "--hand-over: $out"
    [ "$(stat -c %u:%g "$scratch/handed" "$scratch/handed/sub" "$scratch/handed/sub/f" "$scratch/handed/made" | sort -u)" = 100001:100001 ] ||
        fail "--hand-over left owners: $(stat -c '%n %u:%g' "$scratch/handed" "$scratch/handed/sub/f" "$scratch/handed/made")"
    [ "$(stat -c %u /etc/hostname)" = 0 ] || fail "--hand-over followed a link out of the directory"
    [ "$(stat -c %u "$scratch/handed/link")" = 0 ] || fail "--hand-over changed a link's owner"
    # A file with another hard link (cp -al) stays as it is, with a note:
    # its other name may be outside, and the sandbox would write it there.
    echo outside > "$scratch/outside-file" && ln "$scratch/outside-file" "$scratch/handed/linked"
    out=$("$fy" run --hand-over --build "$scratch/handed" -- /bin/sh -c 'echo new > linked || echo refused' 2>&1)
    case $out in *"note: 1 file in $scratch/handed has other hard links"*refused*) ;;
        *) fail "--hand-over of a hard-linked file: $out" ;; esac
    [ "$(stat -c %u "$scratch/outside-file")" = 0 ] && [ "$(cat "$scratch/outside-file")" = outside ] ||
        fail "--hand-over gave a file outside the directory to the sandbox: $(stat -c '%u' "$scratch/outside-file")"
    # --result inside a directory the command writes: a symbolic link or a
    # FIFO it leaves under that name is replaced, never written through
    # (root once wrote the result into the link's target).
    echo precious > "$scratch/victim"
    "$fy" run --build "$scratch/theirs" --result "$scratch/theirs/r.json" -- \
        ln -s "$scratch/victim" /work/build/r.json || fail "--result through a planted link: status $?"
    [ "$(cat "$scratch/victim")" = precious ] || fail "--result wrote through a link the command planted"
    [ -f "$scratch/theirs/r.json" ] && [ ! -L "$scratch/theirs/r.json" ] &&
        grep -q '"outcome": "succeeded"' "$scratch/theirs/r.json" || fail "--result: no result file in the link's place"
    # ... and a link a previous run left there (CI reuses build
    # directories) is replaced too, not opened before the run and written
    # through at its end (root truncated the link's target, any file).
    echo precious > "$scratch/victim"
    "$fy" run --build "$scratch/theirs" -- ln -s "$scratch/victim" /work/build/left.json ||
        fail "planting a link in the build directory: status $?"
    [ -L "$scratch/theirs/left.json" ] || fail "the first run left no link"
    "$fy" run --build "$scratch/theirs" --result "$scratch/theirs/left.json" -- /bin/true ||
        fail "--result over a link a previous run left: status $?"
    [ "$(cat "$scratch/victim")" = precious ] || fail "--result wrote through a link a previous run left"
    [ -f "$scratch/theirs/left.json" ] && [ ! -L "$scratch/theirs/left.json" ] &&
        grep -q '"outcome": "succeeded"' "$scratch/theirs/left.json" ||
        fail "--result: no result file in the left link's place: $(ls -l "$scratch/theirs/left.json")"
    # Likewise a link to a character device or a FIFO left there: replaced,
    # never written through (as root, a link to /dev/kmsg or /dev/port).
    mkfifo "$scratch/their-fifo"
    "$fy" run --build "$scratch/theirs" -- ln -s "$scratch/their-fifo" /work/build/dev.json ||
        fail "planting a link to a FIFO: status $?"
    (timeout 20 cat "$scratch/their-fifo" >/dev/null &) # (a reader: the FIFO would be written through)
    timeout 60 "$fy" run --build "$scratch/theirs" --result "$scratch/theirs/dev.json" -- /bin/true ||
        fail "--result over a left link to a FIFO: status $?"
    [ -f "$scratch/theirs/dev.json" ] && [ ! -L "$scratch/theirs/dev.json" ] ||
        fail "--result wrote through a left link to a FIFO: $(ls -l "$scratch/theirs/dev.json")"
    timeout 60 "$fy" run --build "$scratch/theirs" --result "$scratch/theirs/f.json" -- mkfifo /work/build/f.json ||
        fail "--result over a planted FIFO: status $? (124: it waited for a reader)"
    [ -f "$scratch/theirs/f.json" ] || fail "--result: no result file in the FIFO's place"
    out=$("$fy" run --hand-over --build /tmp -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "--hand-over of /tmp: status $rc: $out"
    case $out in *"not a directory that can be handed"*) ;; *) fail "--hand-over of /tmp: $out" ;; esac
    # --hand-over never through a symbolic link on the directory's path
    # (planted by a checked-out tree or an earlier attempt): the link's
    # target was handed over for good, even when the run was then refused,
    # and given relative, the run went ahead in it. Nor across a bind
    # mount of the same file system (its device number is the tree's).
    mkdir -p "$scratch/hv/victim/d" "$scratch/hv/ws" && echo secret > "$scratch/hv/victim/d/f" &&
        chmod 700 "$scratch/hv/victim" && ln -s "$scratch/hv/victim" "$scratch/hv/ws/build" &&
        ln -s "$scratch/hv" "$scratch/hv-link" || fail "cannot make the linked build directory"
    hv_owners() { stat -c %u "$scratch/hv/victim" "$scratch/hv/victim/d" "$scratch/hv/victim/d/f" | sort -u; }
    for b in "$scratch/hv/ws/build" "$scratch/hv-link/ws/build/d"; do
        out=$("$fy" run --hand-over --build "$b" -- /bin/sh -c 'touch pwned' 2>&1); rc=$?
        [ $rc -ne 0 ] && [ "$(hv_owners)" = 0 ] && [ ! -e "$scratch/hv/victim/pwned" ] && [ ! -e "$scratch/hv/victim/d/pwned" ] ||
            fail "--hand-over --build $b (a link on its path): status $rc, owners $(hv_owners): $out"
    done
    out=$(cd "$scratch/hv/ws" && "$fy" run --hand-over --build build -- /bin/sh -c 'touch pwned' 2>&1); rc=$?
    [ $rc -eq 246 ] && [ "$(hv_owners)" = 0 ] && [ ! -e "$scratch/hv/victim/pwned" ] ||
        fail "--hand-over --build build (relative, a link): status $rc, owners $(hv_owners): $out"
    case $out in *"symbolic link on its path"*) ;; *) fail "--hand-over of a link: $out" ;; esac
    # (relative, without --hand-over: the library refuses the link, which
    # the CLI no longer resolves away)
    chmod 777 "$scratch/hv/victim"
    out=$(cd "$scratch/hv/ws" && "$fy" run --build build -- /bin/sh -c 'touch pwned' 2>&1); rc=$?
    [ $rc -ne 0 ] && [ ! -e "$scratch/hv/victim/pwned" ] || fail "--build build (relative, a link): status $rc: $out"
    mkdir -p "$scratch/hv/tree/cache" "$scratch/hv/other/sub" && echo k > "$scratch/hv/other/sub/k"
    out=$(unshare -m --propagation private sh -c 'mount --bind "$1/hv/other" "$1/hv/tree/cache" &&
          "$2" run --hand-over --build "$1/hv/tree" -- /bin/true' sh "$scratch" "$fy" 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "--hand-over over a bind mount: status $rc: $out"
    [ "$(stat -c %u "$scratch/hv/other/sub" "$scratch/hv/other/sub/k" | sort -u)" = 0 ] ||
        fail "--hand-over crossed a bind mount of the same file system: $(ls -lnR "$scratch/hv/other")"
    [ "$(stat -c %u "$scratch/hv/tree")" = 100001 ] || fail "--hand-over over a bind mount handed nothing over"
fi

# 2c. Clear errors (no parser internals, the JSON path, the option's own
# words): numbers out of range and \u0000 in a policy file ...
printf '{"resources": {"memory": 1e400}}' > "$scratch/big.json"
out=$("$fy" policy show "$scratch/big.json" 2>&1) && fail "1e400 accepted: $out"
case $out in *'$.resources.memory: number 1e400 is out of range (line 1, column 26)'*) ;;
    *) fail "1e400: $out" ;; esac
printf '{"environment": {"set": {"A": "a\\u0000b"}}}' > "$scratch/nul.json"
out=$("$fy" policy show "$scratch/nul.json" 2>&1) && fail "\\u0000 accepted: $out"
case $out in *'$.environment.set.A: \u0000 (NUL) is not allowed in a string'*) ;; *) fail "\\u0000: $out" ;; esac
case $out in *JSON_*|*near*) fail "parser internals: $out" ;; esac
# ... a secret file that cannot be opened ...
out=$("$fy" run --secret-env TOKEN="$scratch/no-token" -- /bin/true 2>&1) && fail "missing secret file: $out"
case $out in *'$.secrets[0].file: '*"$scratch/no-token"*) ;; *) fail "missing secret file: $out" ;; esac
# ... numbers the CLI reads itself: plain decimal only ...
for v in nan 0x1 inf 1e999 '' -1 0 1025; do
    out=$("$fy" run --cpus "$v" -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "--cpus '$v' gave $rc: $out"
    case $out in *"expects a decimal number of CPUs"*) ;; *) fail "--cpus '$v': $out" ;; esac
done
out=$("$fy" run --timeout 5 -- /bin/true 2>&1) && fail "--timeout 5 accepted"
case $out in *"--timeout 5: a unit is needed"*) ;; *) fail "--timeout 5: $out" ;; esac
out=$("$fy" run --timeout 1.5 -- /bin/true 2>&1) && fail "--timeout 1.5 accepted"
case $out in *"--timeout 1.5: a unit is needed"*) ;; *) fail "--timeout 1.5: $out" ;; esac
# a decimal fraction is a duration too (the policy's own syntax)
"$fy" run --timeout 0.5s -- /bin/sleep 5 >/dev/null 2>&1; rc=$?
[ $rc -eq 124 ] || fail "--timeout 0.5s sleep 5 gave $rc"
"$fy" run --timeout 1.5s -- /bin/true || fail "--timeout 1.5s refused"
for v in 0x10 '' 5x -1 99999999999999999999999; do
    out=$("$fy" run --pids "$v" -- /bin/true 2>&1) && fail "--pids '$v' accepted"
    case $out in *"--pids "*": expects a whole number"*|*"--pids "*": too large"*) ;; *) fail "--pids '$v': $out" ;; esac
done
out=$("$fy" run --memory 0x10 -- /bin/true 2>&1) && fail "--memory 0x10 accepted"
case $out in *'unknown unit "x10" (units: '*) ;; *) fail "--memory 0x10: $out" ;; esac
"$fy" run --cpus 0.5 --pids 064 -- /bin/true || fail "--cpus 0.5 --pids 064 refused"
# ... policy commands ...
out=$("$fy" policy check "$scratch" 2>&1) && fail "policy check of a directory succeeded"
case $out in *"$scratch: is a directory"*) ;; *) fail "policy check DIR: $out" ;; esac
out=$("$fy" policy check 2>&1); rc=$?
[ $rc -eq 2 ] || fail "policy check without a file gave $rc"
case $out in *"usage: forgeyard policy check FILE"*) ;; *) fail "policy check without a file: $out" ;; esac
out=$("$fy" policy show 2>&1); rc=$?
[ $rc -eq 2 ] || fail "policy show without arguments gave $rc"
case $out in *"usage: forgeyard policy show FILE|--profile NAME"*) ;; *) fail "policy show: $out" ;; esac
# ... workspace paths that are not directories: the CLI's option, and the
# library's check at prepare for a policy file ...
mkfifo "$scratch/fifo"
for o in --source --build --output; do
    out=$("$fy" run $o "$scratch/fifo" -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "$o FIFO gave $rc: $out"
    case $out in *"$o $scratch/fifo: not a directory"*) ;; *) fail "$o FIFO: $out" ;; esac
done
printf '{"filesystem": {"source": {"path": "%s"}}}' "$scratch/fifo" > "$scratch/fifo.json"
out=$("$fy" policy check "$scratch/fifo.json" 2>&1) && fail "a FIFO as the source passed policy check"
case $out in *"\$.filesystem.source.path: $scratch/fifo is a FIFO, not a directory"*) ;; *) fail "policy FIFO: $out" ;; esac
# ... relative host paths, taken from the current directory (the policy
# itself takes absolute ones only) ...
chmod a+x "$scratch" && mkdir -p "$scratch/rel/src" && echo relative > "$scratch/rel/src/mark" && chmod -R a+rX "$scratch/rel" || fail "mkdir rel"
out=$(cd "$scratch/rel" && "$fy" run --profile development --source src --bind-ro ./src:/x -- /bin/sh -c 'cat /work/source/mark /x/mark' 2>&1); rc=$?
[ $rc -eq 0 ] || fail "relative --source and --bind-ro gave $rc: $out"
[ "$out" = "relative
relative" ] || fail "relative paths: $out"
out=$(cd "$scratch/rel" && "$fy" run --source missing -- /bin/true 2>&1) && fail "a missing relative source ran"
case $out in *"$scratch/rel/missing"*) ;; *) fail "a missing relative source is not named in full: $out" ;; esac
# ... standard output whose reader goes away: the command meets EPIPE (and
# SIGPIPE) as it would without the sandbox, at once, not at the deadline
# (its output was read and dropped until then), and nothing is said of it;
# one that cannot be written (a full device) fails the run, said on stderr
out=$( (timeout 60 "$fy" run --timeout 50s -- /usr/bin/yes 2>"$scratch/pipe.err"; echo "rc=$?" >"$scratch/pipe.rc") | head -1)
[ "$out" = y ] && [ "$(cat "$scratch/pipe.rc")" = rc=141 ] && [ ! -s "$scratch/pipe.err" ] ||
    fail "yes | head -1: $out, $(cat "$scratch/pipe.rc"), $(cat "$scratch/pipe.err")"
if [ -w /dev/full ]; then
    out=$("$fy" run -- /bin/echo hi 2>&1 >/dev/full); rc=$?
    [ $rc -eq 245 ] || fail "output to a full device gave $rc: $out"
    case $out in *"could not be written"*"No space left"*) ;; *) fail "output to a full device: $out" ;; esac
fi
# ... a tree killed at its deadline past the grace still has its process
# count (pid 1 sends it as it changes; only its final report had it)
"$fy" run --timeout 1s --grace 300ms --result "$scratch/killed.json" -- /bin/sh -c 'trap "" TERM; sleep 30 & sleep 30 & wait' 2>/dev/null
n=$(grep -o '"processes": *[0-9]*' "$scratch/killed.json" | grep -o '[0-9]*$')
[ -n "$n" ] && [ "$n" -ge 3 ] || fail "usage.processes of a hard-killed tree: $(grep -o '"processes": *[0-9a-z]*' "$scratch/killed.json")"
# ... a message never carries a control character to the terminal (an
# image's entry names, a path: an escape sequence retitled or cleared it)
out=$("$fy" image inspect "$(printf 'oci:/nonexistent/a\033]0;x\007b')" 2>&1)
esc=$(printf '\033')
case $out in *"$esc"*) fail "a raw escape reached the terminal: $out" ;; *'\x1b]0;x\x07b'*) ;; *) fail "the escaped name: $out" ;; esac
# ... wrap's messages say wrap (they said run)
mkdir -p "$scratch/wraproot"
out=$(cd "$scratch/wraproot" && "$fy" wrap --root "$scratch/wraproot" -- /bin/sh -c 'kill -USR1 $$' 2>&1); rc=$?
[ $rc -eq 138 ] || fail "wrap, a command killed by SIGUSR1: $rc: $out"
case $out in *"forgeyard: wrap: signaled"*) ;; *) fail "wrap's message: $out" ;; esac
# ... /dev/stdout, /dev/stderr and /dev/stdin open again what the command
# was given (a root host's pipes were 0600 and root's, /dev/null the host's,
# outside every Landlock rule: EACCES)
out=$("$fy" run -- /bin/sh -c 'echo o > /dev/stdout && echo e > /dev/stderr && cat /dev/stdin && echo done' 2>&1 </dev/null); rc=$?
[ $rc -eq 0 ] && [ "$out" = "o
e
done" ] || fail "/dev/stdout, /dev/stderr, /dev/stdin: $rc: $out"
out=$(echo piped | "$fy" run --stdin -- /bin/sh -c 'cat /dev/stdin' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = piped ] || fail "/dev/stdin of --stdin: $rc: $out"
# ... standard input: /dev/null unless --stdin, which takes a pipe or a file
# but never a terminal ...
out=$(echo piped | "$fy" run -- /bin/cat 2>/dev/null); rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || fail "stdin without --stdin: $rc: $out"
# (the data left behind is pointed out, on stderr; none left: no note)
out=$(echo piped | "$fy" run -- /bin/cat 2>&1 >/dev/null)
case $out in *"standard input holds data the command was not given"*"--stdin"*) ;; *) fail "no note of stdin left unread: $out" ;; esac
out=$("$fy" run -- /bin/true 2>&1 < "$scratch/rel/src/mark")
case $out in *"standard input holds data"*) ;; *) fail "no note of a stdin file left unread: $out" ;; esac
out=$("$fy" run -- /bin/true 2>&1 </dev/null)
case $out in *"standard input"*) fail "a note without data on stdin: $out" ;; esac
out=$(: | "$fy" run -- /bin/true 2>&1)
case $out in *"standard input"*) fail "a note for an empty pipe: $out" ;; esac
out=$(echo piped | "$fy" run --stdin -- /bin/cat 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = piped ] || fail "--stdin from a pipe: $rc: $out"
out=$("$fy" run --stdin -- /bin/cat < "$scratch/rel/src/mark" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = relative ] || fail "--stdin from a file: $rc: $out"
if command -v script >/dev/null 2>&1; then
    out=$(script -qec "$fy run --stdin -- /bin/true" /dev/null 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "--stdin from a terminal gave $rc: $out"
    case $out in *"is a terminal"*) ;; *) fail "--stdin from a terminal: $out" ;; esac
fi
# ... nor a socket, which the command could shut down for the host
out=$(python3 -c 'import socket, subprocess, sys
a, b = socket.socketpair()
r = subprocess.run([sys.argv[1], "run", "--stdin", "--", "/bin/true"], stdin=b, capture_output=True, text=True)
print(r.returncode, r.stderr)' "$fy"); case $out in "246 "*"is a socket"*) ;; *) fail "--stdin from a socket: $out" ;; esac
# ... and from a file, a lock the command takes on its stdin goes with it
# (it held the host's own open file: another process could not lock the
# file after the run), and the shell's offset is where the command left it.
if command -v flock >/dev/null 2>&1; then
    printf 'one\ntwo\nthree\n' >"$scratch/stdin-lock"
    out=$( { "$fy" run --stdin -- /bin/sh -c 'read x && flock -x 0' && read y &&
        flock -n -x "$scratch/stdin-lock" -c "echo free $y"; } <"$scratch/stdin-lock" 2>&1)
    [ "$out" = "free two" ] || fail "--stdin: the command's lock outlived it, or the offset is not its: $out"
fi
# ... nor on stdout or stderr: a terminal's descriptor lets whoever holds it
# read the operator's keys and change the terminal (termios, line
# discipline) with no controlling terminal; the command gets a pipe, whose
# bytes the CLI copies to the terminal, in order. (On the pty script makes.)
if command -v script >/dev/null 2>&1; then
    mkdir "$scratch/ttyroot" || exit 1
    for sub in run wrap; do
        cat > "$scratch/tty.sh" <<EOT
cd "$scratch/ttyroot" && "$fy" $sub -- /bin/sh -c 'for fd in 0 1 2; do test -t \$fd && echo TTY\$fd; done; stty -echo <&1 2>/dev/null && echo ECHO-OFF1; stty -echo <&2 2>/dev/null && echo ECHO-OFF2; echo out1; echo err1 >&2; echo out2'
echo "rc=\$?"
stty -a
EOT
        out=$(script -qec "sh $scratch/tty.sh" /dev/null 2>&1)
        case $out in *rc=0*) ;; *) fail "$sub on a terminal: $out" ;; esac
        case $out in *TTY*|*ECHO-OFF*) fail "$sub handed the command the terminal: $out" ;; esac
        printf '%s\n' "$out" | grep -qw -- -echo && fail "$sub: the command turned the terminal's echo off: $out"
        printf '%s\n' "$out" | tr -d '\r' | grep -v '^rc=' | head -3 | tr '\n' ' ' | grep -qx 'out1 err1 out2 ' ||
            fail "$sub: the command's output did not reach the terminal in order: $out"
    done
fi
# ... and closed standard streams: /dev/null instead, with a note.
out=$("$fy" run -- /bin/sh -c 'echo out || exit 9; exit 5' 2>&1 >&-); rc=$?
[ $rc -eq 5 ] || fail "closed stdout gave $rc: $out"
case $out in *"note: stdout is closed"*) ;; *) fail "no note for a closed stdout: $out" ;; esac
"$fy" run -- /bin/sh -c 'echo out || exit 9; echo err >&2 || exit 8; exit 5' >&- 2>&-; rc=$?
[ $rc -eq 5 ] || fail "closed stdout and stderr gave $rc"

# 2d. Option parsing: a profile named as another option's value is that
# option's value; every profile named is checked; a runtime name is never
# cut; an unknown action option is named as one; a mistyped action cache is
# refused; an unreadable job file is 1; a --result directory where no file
# can be made (root: /proc) is refused before anything runs; the summary
# lists action gc and help.
out=$("$fy" run --env --profile -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] && case $out in *"--env expects"*) true ;; *) false ;; esac || fail "--env --profile: $rc $out"
out=$("$fy" run --profile bogus --profile development -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "an unknown profile before a known one ran ($rc): $out"
out=$("$fy" run --runtime "$(printf 'r%.0s' $(seq 70))" -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "a 70-byte runtime name: $rc $out"
out=$("$fy" action run "$scratch/none.json" --bogus 2>&1)
case $out in *"unknown option --bogus"*) ;; *) fail "action run --bogus: $out" ;; esac
"$fy" action gc --cache "fy-no-such-cache-$$" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "action gc of a missing cache directory gave $rc"
"$fy" job run "$scratch/no-such-job.json" >/dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || fail "job run of an unreadable file gave $rc"
if [ "$(id -u)" -eq 0 ]; then
    out=$("$fy" run --result /proc/fy-result -- /bin/sh -c "echo fy-cmd-ran" 2>&1); rc=$?
    [ $rc -eq 246 ] && case $out in *fy-cmd-ran*) false ;; *) true ;; esac || fail "--result /proc/x: $rc $out"
fi
out=$("$fy" help 2>&1)
case $out in *"action gc"*"help [COMMAND]"*) ;; *) fail "the summary lacks action gc or help" ;; esac

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

# 5a. A stop signal when the reader of forgeyard's output is gone (a dead
# CI runner's log pipe): the note it writes must not end it with SIGPIPE
# (exit 141, no result, the sandbox left to gc); it cancels (241) and
# writes --result. A second signal kills the sandbox at once and leaves no
# result: never an earlier run's file at that name (it kept "succeeded").
# --result - with standard output closed is refused, not lost.
python3 - "$fy" "$scratch" "$mark" <<'PY' || fail "stop signals with a gone reader or twice (above)"
import json, os, signal, subprocess, sys, time
fy, d, mark = sys.argv[1:4]
def running():
    for _ in range(500):
        for pid in os.listdir("/proc"):
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read() if pid.isdigit() else b""
            except OSError:
                continue
            if cmd.startswith(b"/bin/sh") and mark.encode() in cmd:
                return True
        time.sleep(0.02)
    return False
bad = []
r, w = os.pipe()
p = subprocess.Popen([fy, "run", "--result", d + "/gone.json", "--", "/bin/sh", "-c", "sleep 30; : " + mark],
                     stdout=w, stderr=w)
os.close(w)
os.close(r)
if not running():
    bad.append("the sandbox never started")
p.send_signal(signal.SIGTERM)
rc = p.wait(60)
if rc != 241:
    bad.append("a SIGTERM with the output's reader gone gave %d (not 241)" % rc)
elif json.load(open(d + "/gone.json"))["outcome"] != "cancelled":
    bad.append("no cancelled result after a SIGTERM with the output's reader gone")
subprocess.run([fy, "run", "--result", d + "/twice.json", "--", "/bin/true"], check=True)
p = subprocess.Popen([fy, "run", "--result", d + "/twice.json", "--", "/bin/sh", "-c",
                      "trap '' TERM; sleep 30; : " + mark], stderr=subprocess.DEVNULL)
if not running():
    bad.append("the second sandbox never started")
p.send_signal(signal.SIGTERM)
time.sleep(0.3)
p.send_signal(signal.SIGTERM)
rc = p.wait(60)
if rc != 241:
    bad.append("two SIGTERMs gave %d (not 241)" % rc)
if os.path.exists(d + "/twice.json") and json.load(open(d + "/twice.json"))["outcome"] == "succeeded":
    bad.append("after two SIGTERMs, the earlier run's 'succeeded' result stands")
rc = subprocess.run([fy, "run", "--result", "-", "--", "/bin/true"], preexec_fn=lambda: os.close(1),
                    stderr=subprocess.DEVNULL).returncode
if rc != 246:
    bad.append("--result - with stdout closed gave %d (not 246)" % rc)
for b in bad:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# (Under a seccomp filter of the test's own, a container's, no snapshot is
# ever read or written: what a filter denies is in no file.)
if grep -qE '^Seccomp:[[:space:]]+[12]' /proc/self/status; then
    echo "skip: section 9: this test runs under a seccomp filter, so no probe is saved"
    "$fy" capabilities --json | grep -q '"snapshot": false' || fail "a snapshot was read under a seccomp filter"
else
# 9. The saved probe: a second run reads it, --fresh does not; a planted
# snapshot that claims too little or too much is caught by a fresh probe
# (one note on stderr) and the run goes on as it should.
"$fy" capabilities --json | grep -q '"snapshot": true' || fail "capabilities did not read the saved probe"
"$fy" capabilities --fresh --json | grep -q '"snapshot": false' || fail "--fresh read the saved probe"
"$fy" run -- /bin/true || fail "plain run failed"
# A probe made while the CLI is short of descriptors (ulimit -n 5 to 14)
# never says a mechanism is missing that a normal probe finds: it is
# inconclusive (never saved), or right. (At 8-9 it said user, mount, pid
# and network namespaces missing, was saved, and ran later runs of a
# policy that accepts the process level without namespaces.)
full=$("$fy" capabilities --fresh --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["capabilities"]; print(" ".join(k for k in sorted(c) if c[k]["available"]))')
for n in 5 6 7 8 9 10 11 12 13 14; do
    got=$( (ulimit -n $n; FORGEYARD_CACHE_DIR="$scratch/cache-n" "$fy" capabilities --fresh --json 2>/dev/null) |
        python3 -c 'import json,sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("error"); sys.exit()
c = d["capabilities"]
print("inconclusive" if d["inconclusive"] else " ".join(k for k in sorted(c) if c[k]["available"]))')
    case $got in inconclusive|error|"$full") ;; *) fail "ulimit -n $n: a conclusive probe that differs: [$got] against [$full]" ;; esac
done
# A policy no backend here can satisfy (a Windows control required): the
# CLI probes again before it gives up, and the fresh probe agrees with the
# saved one: it says it confirmed the saved probe, instead of blaming it.
printf '%s\n' '{"profile":"standard-ci","isolation":{"controls":{"low-integrity":"require"}}}' >"$scratch/lowint.json"
out=$("$fy" run --policy "$scratch/lowint.json" -- /bin/true 2>&1); rc=$?
[ $rc -eq 247 ] || fail "an unsatisfiable policy gave $rc: $out"
case $out in *"promised"*|*"stale"*) fail "a stale-probe note where the fresh probe agrees: $out" ;; esac
case $out in *"to confirm the saved probe: every capability agrees"*) ;; *) fail "no note that the fresh probe agrees: $out" ;; esac
# rewrite PYTHON [ARG...]: runs PYTHON on every saved snapshot's document
# (`doc`: `entries`, a list of [state, value, reason, hint], and `facts`, a
# dict; with `args`), then writes it back whole in the snapshot's own line
# form (lib/caps.c), as the library would.
rewrite() {
    code=$1; shift
    for f in "$FORGEYARD_CACHE_DIR"/caps-*.json; do
        python3 - "$f" "$code" "$@" <<'PY' || return 1
import os, re, sys
path, code, args = sys.argv[1], sys.argv[2], sys.argv[3:]
key, snap = open(path).read().split("--\n", 1)
def dec(t):
    return None if t == "-" else re.sub("%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), t[1:])
def enc(v):
    return "-" if v is None else "=" + "".join("%%%02X" % ord(ch) if ord(ch) < 0x21 or ch in "%\x7f" else ch for ch in v)
head, entries, facts = [], [], {}
for line in snap.splitlines():
    f = line.split(" ")
    if f[0] == "e":
        entries.append([int(f[1]), int(f[2]), dec(f[3]), dec(f[4])])
    elif f[0] == "f":
        facts[dec(f[1])] = dec(f[2])
    elif f[0] != "end":
        head.append(line)
doc = {"entries": entries, "facts": facts}
exec(code)
out = head + ["e %d %d %s %s" % (e[0], e[1], enc(e[2]), enc(e[3])) for e in doc["entries"]]
out += ["f %s %s" % (enc(k), enc(v)) for k, v in doc["facts"].items()] + ["end"]
tmp = path + ".new"
fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, (key + "--\n" + "\n".join(out) + "\n").encode())
os.close(fd)
os.rename(tmp, path)
PY
    done
}
plant() { # CAP-INDEX STATE [FACT VALUE]: rewrite every saved snapshot
    rewrite '
doc["entries"][int(args[0]) - 1][0] = int(args[1])
if len(args) > 3:
    doc["facts"][args[2]] = args[3]' "$@" || exit 1
}
plant 1 1   # user namespaces "missing": release would be refused
out=$("$fy" run -- /bin/sh -c 'echo ran' 2>&1); rc=$?
[ $rc -eq 0 ] || fail "a snapshot claiming too little refused the run ($rc): $out"
case $out in *"was stale (now "*"present"*"probed the host again"*ran*) ;; *) fail "no note naming the stale capability, or no run, after a stale snapshot: $out" ;; esac
out=$("$fy" run -- /bin/sh -c 'echo ran' 2>&1); rc=$?
case $out in *"probed the host again"*) fail "the fresh probe was not saved: $out" ;; esac
if [ -d /sys/fs/cgroup/unified ] && [ "$(id -u)" -eq 0 ]; then
    # cgroup-kill (25) "present" in a v2 directory that does not exist: the
    # start fails before the command runs, a fresh probe renegotiates.
    plant 25 2 linux.cg2_dir /sys/fs/cgroup/unified/fy-no-such-cgroup-$$
    out=$("$fy" run -- /bin/sh -c 'echo ran' 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "a snapshot claiming too much failed the run ($rc): $out"
    case $out in *"probed the host again"*ran*) ;; *) fail "no note, or no run, after an overclaiming snapshot: $out" ;; esac
fi
# Every saved probe (the VM one too) says the pids controller is missing:
# a pids limit would send the run to a virtual machine, so the host is
# probed again first and the namespace backend takes it (it ran in a VM,
# on every run, with a note blaming the host).
if "$fy" capabilities --fresh --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["capabilities"]["cgroup-pids"]["available"] else 1)' 2>/dev/null; then
    "$fy" capabilities >/dev/null
    rewrite '
doc["entries"][20][0:2] = [1, 0]
for k in [k for k in doc["facts"] if k.startswith("linux.cg1_pids") or k.startswith("linux.cg2")]:
    del doc["facts"][k]' || fail "planting a snapshot without the pids controller"
    out=$("$fy" run --pids 10 --result "$scratch/pids.json" -- /bin/sh -c 'echo ran' 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "a snapshot without the pids controller failed the run ($rc): $out"
    case $out in *"probed the host again"*ran*) ;; *) fail "no fresh probe, or no run, after a snapshot without pids: $out" ;; esac
    case $out in *"virtual machine"*) fail "a stale snapshot sent the run to a virtual machine: $out" ;; esac
    grep -q '"backend": *"linux-namespace"' "$scratch/pids.json" || fail "not the namespace backend: $(head -c 600 "$scratch/pids.json")"
fi
# The compiled seccomp programs the snapshot carries are held to the
# contract before use: planted programs that allow everything are dropped
# (the profile is compiled again) and a forbidden call is still refused.
"$fy" run -- /bin/true || fail "plain run failed"
rewrite '
facts = doc["facts"]
names = [k for k in facts if k.startswith("linux.seccomp.")]
if not names:
    sys.exit("no saved seccomp program")
for k in names:
    facts[k] = facts[k][:12] + "BgAAAAAA/38="  # one instruction: RET ALLOW' || fail "planting seccomp programs"
"$fy" capabilities --json | grep -q '"snapshot": true' || fail "the planted snapshot was not read"
out=$("$fy" run -- python3 -c 'import ctypes; ctypes.CDLL(None).syscall(246, 0, 0, 0, 0); print("returned")' 2>&1); rc=$?
# (x86-64 numbers; the violation ends the attempt, whatever the call answered)
if [ "$(uname -m)" = x86_64 ]; then
    [ $rc -ne 0 ] || fail "a planted allow-all seccomp program was used ($rc): $out"
    case $out in *kexec_load*) ;; *) fail "kexec_load was not reported as a violation ($rc): $out" ;; esac
fi

fi

# A host changed in a way no key sees (here, in a private mount namespace,
# a tmpfs over this process's memory cgroup): the saved probe promises the
# memory controller, the start fails before the command runs, and the fresh
# probe renegotiates as a start without a saved probe would: a virtual
# machine where QEMU runs here (it ended in "qemu: not probed"), else the
# typed refusal, 247 (the first failure, 245, stood).
mc=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
if [ "$(id -u)" = 0 ] && [ -n "$mc" ] && [ -d "/sys/fs/cgroup/memory$mc" ] && command -v unshare >/dev/null; then
    # (the probe is saved in that mount namespace first: it is in the key)
    out=$(unshare -m --propagation private sh -c '"$2" run --memory 64M -- /bin/true >/dev/null 2>&1 &&
        mount -t tmpfs -o size=1m,mode=0555 fy-cli-hide "$1" &&
        exec "$2" run --memory 64M --result "$3" -- /bin/true' sh "/sys/fs/cgroup/memory$mc" "$fy" "$scratch/stale.json" 2>&1); rc=$?
    case $rc:$out in
        0:*"was stale (now cgroup-memory missing)"*)
            grep -q '"backend": *"vm-qemu"' "$scratch/stale.json" || fail "a stale memory controller: not in a VM: $out" ;;
        247:*"not probed (FY_PROBE_NO_VM)"*) fail "a stale memory controller: the VM was never probed: $out" ;;
        247:*"was stale (now cgroup-memory missing)"*"memory-limit required"*) ;;
        *) fail "a stale memory controller: $rc: $out: $(head -c 3000 "$scratch/stale.json")" ;;
    esac
    "$fy" capabilities --fresh >/dev/null # (the saved probe of this host again)
fi
# A saved probe in a directory others may write is never used.
chmod 0755 "$FORGEYARD_CACHE_DIR"
"$fy" capabilities --json | grep -q '"snapshot": false' || fail "a 0755 cache directory was trusted"
chmod 0700 "$FORGEYARD_CACHE_DIR"

# 11. capabilities --platform-properties: key=value lines a scheduler matches
# on, each what this host negotiates: a profile is listed exactly when a run
# of it works, the level is the one `capabilities` reports.
# (--fresh: section 9 left a planted snapshot under the capabilities' key)
props=$("$fy" capabilities --platform-properties --fresh) || fail "--platform-properties failed"
printf '%s\n' "$props" | grep -qvE '^[A-Za-z-]+=[A-Za-z0-9_.,-]+$' && fail "a malformed property line: $props"
prop() { printf '%s\n' "$props" | sed -n "s/^$1=//p"; }
[ "$(prop OSFamily)" = "$(uname -s)" ] || fail "OSFamily: $props"
[ "$(prop cpu)" = "$(uname -m)" ] || fail "cpu: $props"
strongest=$("$fy" capabilities --fresh | sed -n 's/^strongest isolation here: //p')
[ -n "$strongest" ] && [ "$(prop sandbox-level)" = "$strongest" ] || fail "sandbox-level $(prop sandbox-level) vs $strongest"
case ",$(prop sandbox-levels)," in *",$strongest,"*) ;; *) fail "sandbox-levels lacks $strongest: $props" ;; esac
for profile in development standard-ci release high-assurance; do
    listed=no
    case ",$(prop sandbox-profiles)," in *",$profile,"*) listed=yes ;; esac
    ran=no
    "$fy" run --profile "$profile" -- /bin/true >/dev/null 2>&1 && ran=yes
    [ $listed = $ran ] || fail "profile $profile: listed $listed, ran $ran: $props"
done
case ",$(prop network)," in *",deny,"*) ;; *) fail "network deny not listed: $props" ;; esac
# each egress mode listed exactly when a standard-ci policy of it negotiates
# here (release denies all but deny: asking it would list deny alone)
for mode in restricted fetch-only; do
    listed=no
    case ",$(prop network)," in *",$mode,"*) listed=yes ;; esac
    printf '{"version": 1, "profile": "standard-ci", "network": {"mode": "%s", "destinations": [{"host": "192.0.2.1", "ports": [443, 443]}]}}\n' \
        "$mode" >"$scratch/net-$mode.json"
    ok=no
    "$fy" policy check "$scratch/net-$mode.json" >/dev/null 2>&1 && ok=yes
    [ $listed = $ok ] || fail "network $mode: listed $listed, negotiates $ok: $props"
done
[ "$(prop vm)" = none ] || case ",$(prop sandbox-levels)," in *",virtual-machine,"*) ;; *) fail "vm without the level: $props" ;; esac
# container names a container backend, never the VM that also satisfies a
# container minimum
case "$(prop container)" in vm-*) fail "container names a VM backend: $props" ;; esac
"$fy" capabilities --json --platform-properties >/dev/null 2>&1 && fail "--json with --platform-properties was accepted"

# 10. run --help prints the run usage; --grace is a duration with a unit.
"$fy" run --help | grep -q -- '--grace DURATION' || fail "run --help"
# (action run and job run too: --help was taken for the file's name)
"$fy" action run --help | grep -q 'action run ACTION.json' || fail "action run --help"
"$fy" job run --help | grep -q 'job run JOB.json' || fail "job run --help"
out=$("$fy" run --grace 5 -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "--grace 5 gave $rc: $out"
case $out in *"unit is needed"*) ;; *) fail "--grace 5: $out" ;; esac
# A workload that ignores SIGTERM is killed 200 ms after its deadline, not
# after the release profile's 10 s grace.
"$fy" run --grace 200ms --timeout 1s --result "$scratch/grace.json" -- /bin/sh -c 'trap "" TERM; sleep 30'; rc=$?
[ $rc -eq 124 ] || fail "--grace/--timeout run gave $rc"
python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["usage"]["wall_usec"]; sys.exit(0 if w < 6000000 else 1)' \
    "$scratch/grace.json" || fail "--grace was not applied: $(cat "$scratch/grace.json")"

# 11. --seccomp: the default class denies the ptrace family inside the
# sandbox; networked-test allows it (LeakSanitizer, gdb, strace need it).
# Where violations are notified, the default class counts those denials
# (isolation.seccomp.ptrace_denied) and the CLI says what to do.
traceme='import ctypes; print("TRACEME", ctypes.CDLL(None).ptrace(0, 0, 0, 0))'
out=$("$fy" run --result "$scratch/gb.json" -- python3 -c "$traceme" 2>"$scratch/gb.err"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "TRACEME -1" ] || fail "ptrace under the default class ($rc): $out $(cat "$scratch/gb.err")"
if grep -q '"violations": "reported (user notification)"' "$scratch/gb.json"; then
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["isolation"]["seccomp"]; sys.exit(0 if s.get("ptrace_denied") == 1 else 1)' \
        "$scratch/gb.json" || fail "the denial was not counted: $(cat "$scratch/gb.json")"
    # The note comes after a command that did not succeed (as LeakSanitizer's).
    case $(cat "$scratch/gb.err") in *"refused ptrace"*) fail "a note after a command that succeeded" ;; esac
    out=$("$fy" run -- python3 -c 'import ctypes, sys; ctypes.CDLL(None).ptrace(0, 0, 0, 0); sys.exit(3)' 2>&1); rc=$?
    [ $rc -eq 3 ] || fail "the failing ptrace caller gave $rc: $out"
    case $out in *"refused ptrace(2) 1 time"*"--seccomp networked-test"*) ;;
        *) fail "no note on the refused ptrace: $out" ;; esac
    # Eight threads refused ptrace without end (each answer brings the next
    # call): the attempt still ends at its deadline, counted, not a violation.
    flood='import ctypes, threading
libc = ctypes.CDLL(None)
def spin():
    while True:
        libc.ptrace(16, 1, 0, 0)
for _ in range(8):
    threading.Thread(target=spin, daemon=True).start()
threading.Event().wait()'
    timeout 120 "$fy" run --timeout 2s --grace 1s --result "$scratch/flood.json" -- python3 -c "$flood" \
        >/dev/null 2>&1
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r["isolation"]["seccomp"]
sys.exit(0 if r["outcome"] == "timed-out" and r["usage"]["wall_usec"] < 30000000 and s["ptrace_denied"] > 8 else 1)' \
        "$scratch/flood.json" || fail "a ptrace flood held the deadline back: $(cat "$scratch/flood.json")"
fi
out=$("$fy" run --seccomp networked-test --result "$scratch/nt.json" -- python3 -c "$traceme" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = "TRACEME 0" ] || fail "ptrace under --seccomp networked-test ($rc): $out"
case $out in *"refused ptrace"*) fail "a note under networked-test: $out" ;; esac
grep -q '"profile": "networked-test"' "$scratch/nt.json" || fail "the result does not name networked-test"
out=$("$fy" run --seccomp none -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "--seccomp none gave $rc: $out"
# A leak-checked test program built with AddressSanitizer, as C and C++
# projects run their tests: its leak check works only with ptrace.
mkdir "$scratch/san" && printf '#include <stdlib.h>\nint main(void){ void *volatile p = malloc(64); p = 0; return 0; }\n' \
    >"$scratch/san/leak.c"
if cc -fsanitize=address -g -o "$scratch/san/leak" "$scratch/san/leak.c" 2>/dev/null; then
    out=$("$fy" run --source "$scratch/san" -- /work/source/leak 2>&1); rc=$?
    case $out in *"LeakSanitizer has encountered a fatal error"*) ;; *) fail "LSan under the default class ($rc): $out" ;; esac
    out=$("$fy" run --seccomp networked-test --source "$scratch/san" -- /work/source/leak 2>&1); rc=$?
    case $out in *"detected memory leaks"*"64 byte(s) leaked"*) ;; *) fail "LSan under networked-test ($rc): $out" ;; esac
    [ $rc -ne 0 ] || fail "the leak did not fail the program"
else
    echo "cli: skipped the AddressSanitizer run (cc -fsanitize=address does not link here)"
fi
# A reader of stderr that is gone (a pipe into a program that quit) costs
# the notes, never the --result file or the status.
rm -f "$scratch/gone.json"
{ "$fy" run --result "$scratch/gone.json" -- /bin/sh -c 'sleep 0.2; kill -KILL $$' 2>&1 </dev/null; echo $? >"$scratch/gone.rc"; } | true
rc=$(cat "$scratch/gone.rc")
[ $rc -eq 137 ] && [ -s "$scratch/gone.json" ] || fail "stderr's reader gone: status $rc, result file: $(ls -l "$scratch/gone.json" 2>&1)"
# --result naming what is there and no regular file (a character device, a
# link to one): written through, never replaced by a file (as root, the
# host's /dev/null would be); a FIFO without a reader and an empty name:
# refused before anything runs.
mknod "$scratch/null" c 1 3 2>/dev/null && {
    "$fy" run --result "$scratch/null" -- /bin/true || fail "--result to a character device failed"
    [ -c "$scratch/null" ] || fail "--result replaced a character device: $(ls -l "$scratch/null")"
}
# A link is written through only where no one but root can have made it
# (the scratch directory is root's, 0700, when we are root); elsewhere it
# is replaced. /dev/stdout redirected to a file by the shell is written
# through (its links are in /dev and /proc).
: >"$scratch/through.json" && ln -s "$scratch/through.json" "$scratch/link.json"
"$fy" run --result "$scratch/link.json" -- /bin/true || fail "--result through a link failed"
if [ "$(id -u)" -eq 0 ]; then
    [ -L "$scratch/link.json" ] && grep -q '"outcome": "succeeded"' "$scratch/through.json" ||
        fail "--result replaced root's link or did not write through it: $(ls -l "$scratch/link.json")"
else
    [ ! -L "$scratch/link.json" ] && [ ! -s "$scratch/through.json" ] &&
        grep -q '"outcome": "succeeded"' "$scratch/link.json" ||
        fail "--result wrote through a link in a directory not root's: $(ls -l "$scratch/link.json")"
fi
"$fy" run --result /dev/stdout -- /bin/true >"$scratch/stdout.json" || fail "--result /dev/stdout to a file failed"
grep -q '"outcome": "succeeded"' "$scratch/stdout.json" || fail "--result /dev/stdout: $(cat "$scratch/stdout.json")"
mkfifo "$scratch/rfifo"
out=$("$fy" run --result "$scratch/rfifo" -- /bin/sh -c 'echo RAN-$$' 2>&1 </dev/null); rc=$?
[ $rc -eq 246 ] || fail "--result to a FIFO without a reader gave $rc: $out"
case $out in *RAN-*) fail "--result to a FIFO: the command ran" ;; esac
out=$("$fy" run --result "" -- /bin/sh -c 'echo RAN-$$' 2>&1 </dev/null); rc=$?
[ $rc -eq 246 ] || fail "--result \"\" gave $rc: $out"
# "-" is standard output, after the command's own; no file named "-".
(cd "$scratch" && "$fy" run --result - -- /bin/echo FIRST >"$scratch/dash.out" 2>&1) || fail "--result - failed"
[ -e "$scratch/-" ] && fail "--result - wrote a file named -"
head -n 1 "$scratch/dash.out" | grep -qx FIRST && grep -q '"outcome": "succeeded"' "$scratch/dash.out" ||
    fail "--result -: $(cat "$scratch/dash.out")"
# A CPU limit below 10 millis (a quota under the kernel's 1 ms minimum with
# the usual 100 ms period) runs, with a longer period.
if [ "$(id -u)" = 0 ]; then
    out=$("$fy" run --cpus 0.005 -- /bin/true 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "--cpus 0.005 gave $rc: $out"
fi
# Cache ages: 0 is every entry; one too large for microseconds is refused,
# never wrapped to a tiny age that empties the cache.
mkdir -m 0700 "$scratch/acache"
"$fy" action gc --cache "$scratch/acache" --max-age 0 >/dev/null || fail "action gc --max-age 0 refused"
out=$("$fy" action gc --cache "$scratch/acache" --max-age 18446744073710s 2>&1); rc=$?
[ $rc -eq 2 ] || fail "an age that overflows gave $rc: $out"
# Job files: an unknown key (a misspelled "policy") is refused, never
# ignored; as root, an argv of 300 arguments reaches the member whole.
printf '{"members":[{"name":"a","argv":["/bin/true"],"polcy":{}}]}' >"$scratch/job-typo.json"
out=$("$fy" job run "$scratch/job-typo.json" 2>&1); rc=$?
[ $rc -eq 2 ] && case $out in *'$.members[0].polcy: unknown key'*) true ;; *) false ;; esac ||
    fail "a misspelled member key gave $rc: $out"
if [ "$(id -u)" = 0 ]; then
    python3 -c 'import json,sys; json.dump({"members":[{"name":"a","argv":["/bin/sh","-c","echo nargs=$#","x"]+[str(i) for i in range(300)]}]}, open(sys.argv[1],"w"))' \
        "$scratch/job-long.json"
    out=$("$fy" job run "$scratch/job-long.json" 2>&1); rc=$?
    case $out in *nargs=300*) ;; *) fail "a member's 300 arguments ($rc): $out" ;; esac
    # --hand-over with an absolute --bind hands that directory over (its
    # name was read after it was freed); wrap refuses to hand over a
    # directory others may write to.
    mkdir -p "$scratch/hand/given" "$scratch/wraproot/r" "$scratch/shared"
    chmod 1777 "$scratch/shared"
    "$fy" run --hand-over --bind "$scratch/hand/given:/x" -- /bin/true || fail "run --hand-over --bind ABSOLUTE failed"
    [ "$(stat -c %u "$scratch/hand/given")" != 0 ] || fail "run --hand-over --bind ABSOLUTE handed nothing over"
    out=$(cd "$scratch/wraproot/r" && "$fy" wrap --hand-over --bind "$scratch/shared:/x" -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "wrap --hand-over of a sticky shared directory gave $rc: $out"
    [ "$(stat -c %u "$scratch/shared")" = 0 ] || fail "wrap handed a shared directory over"
fi
# A later --network overrides an earlier one, allow included; one --policy.
out=$("$fy" run --profile standard-ci --network allow --network deny -- /bin/true 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--network allow then deny gave $rc: $out"
echo '{}' >"$scratch/empty-policy.json"
out=$("$fy" run --policy "$scratch/empty-policy.json" --policy "$scratch/empty-policy.json" -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "--policy twice gave $rc: $out"
# Below a directory only root may search (anything under /root): a missing
# optional bind is skipped, and a missing source is named missing (the
# sandbox, walking it itself, met "Permission denied").
mkdir -m 0700 "$scratch/closed"
printf '{"filesystem":{"binds":[{"host":"%s/closed/none","target":"/opt/cache","optional":true}]}}' "$scratch" \
    >"$scratch/optional.json"
if [ "$(id -u)" = 0 ]; then
    out=$("$fy" run --profile standard-ci --policy "$scratch/optional.json" -- /bin/true 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "a missing optional bind below a closed directory gave $rc: $out"
    out=$("$fy" run --source "$scratch/closed/none" -- /bin/true 2>&1); rc=$?
    case $out in *"No such file or directory"*) ;; *) fail "a missing source below a closed directory ($rc): $out" ;; esac
fi
# A hosts file or credentials the network mode never reads: refused, not
# ignored.
echo "192.0.2.1 mirror.test" >"$scratch/nethosts" && chmod 600 "$scratch/nethosts"
out=$("$fy" run --profile standard-ci --network-hosts "$scratch/nethosts" -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "--network-hosts under deny gave $rc: $out"
# (a relative file is the working directory's, as for every other file option)
out=$(cd "$scratch" && "$fy" run --profile standard-ci --network-hosts nethosts -- /bin/true 2>&1); rc=$?
case $rc:$out in *"not deny"*) ;; *) fail "a relative --network-hosts: $rc: $out" ;; esac
out=$("$fy" run --profile standard-ci --network restricted --allow 192.0.2.1:443 \
    --network-credentials "$scratch/nethosts" -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "--network-credentials under restricted gave $rc: $out"
# COMMAND --help and help COMMAND: a usage on stdout and status 0, for
# every command (never "unknown command", never a file named --help).
for a in "doctor --help" "gc --help" "policy --help" "policy check --help" "policy show --help" "image --help" \
    "version --help" "capabilities --help" "help run" "help job" "help policy"; do
    # shellcheck disable=SC2086
    out=$("$fy" $a 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "$a gave $rc: $out"
    case $out in *usage*) ;; *) fail "$a printed no usage: $out" ;; esac
done
# help COMMAND is COMMAND --help (its own usage, not the general one); help
# of a command there is not, or of two, is a usage error (2) that says so.
for c in run wrap action job policy; do
    [ "$("$fy" help $c 2>&1 | head -n 1)" = "$("$fy" $c --help 2>&1 | head -n 1)" ] ||
        fail "help $c is not $c --help: $("$fy" help $c 2>&1 | head -n 1)"
done
"$fy" help run | head -n 1 | grep -q 'usage: .* run ' || fail "help run: $("$fy" help run 2>&1 | head -n 1)"
"$fy" help | head -n 1 | grep -q 'usage: .* COMMAND' || fail "help: $("$fy" help 2>&1 | head -n 1)"
for a in "help nonsense" "help run wrap"; do
    # shellcheck disable=SC2086
    out=$("$fy" $a 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] || fail "$a gave $rc: $out"
    case $out in *"help: "*) ;; *) fail "$a: no message: $out" ;; esac
done
# A relative secret file is taken from the current directory, as a
# relative --source is.
printf 's3cret' >"$scratch/relsecret" && chmod 600 "$scratch/relsecret"
out=$(cd "$scratch" && "$fy" run --secret-env TOK=relsecret -- /bin/sh -c 'test "$TOK" = s3cret && echo SECRET-OK' 2>&1); rc=$?
[ $rc -eq 0 ] && case $out in *SECRET-OK*) true ;; *) false ;; esac || fail "a relative --secret-env file ($rc): $out"
echo "cli: ok"
