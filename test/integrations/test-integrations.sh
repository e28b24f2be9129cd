#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CI and remote-execution integrations, each driven the way the real
# system calls it (none of these systems is in Debian's archive, so the
# calling conventions are reproduced exactly; docs/integrations.md says so):
#   1. Buildfarm's executionWrapper: the wrapper gets the command as its
#      arguments, in the action's working directory, with the action's
#      environment; inputs are hard links into the worker's CAS.
#   2. NativeLink's entrypoint: the same, with platform properties as
#      environment variables.
#   3. GitLab Runner's custom executor: config, prepare, run SCRIPT STAGE,
#      cleanup, CUSTOM_ENV_* and the two failure exit codes.
#   4. A GitHub Actions step (`shell: forgeyard-step {0}`).
#   5. `forgeyard action run` on an action document, and `forgeyard action gc`.
# Usage: test-integrations.sh FORGEYARD INTEGRATIONS_DIR [--rootless]
set -u
fy=$1
idir=$2
mode=${3:-}
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$mode" = "--rootless" ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: the rootless pass starts as root"; exit 77; }
    # The library's objects must be readable by uid 65534: a copy of the CLI
    # and its library in a directory of its own.
    t=$(mktemp -d /tmp/fy-integ-rl-XXXXXX) || exit 1
    trap 'rm -rf "$t"' EXIT
    # (the CLI finds its library at $ORIGIN/../lib, as when installed)
    mkdir "$t/bin" "$t/lib" && cp "$fy" "$t/bin/forgeyard" && cp "$(dirname "$fy")/forgeyard-wrap" "$t/bin/" &&
        cp -P "$(dirname "$fy")"/../lib/libforgeyard-sandbox.so.0 "$(dirname "$fy")"/../lib/libforgeyard-sandbox.so.0.*[0-9] "$t/lib/" && cp -r "$idir" "$t/integrations" || exit 1
    chown -R 65534:65534 "$t" && chmod 0755 "$t"
    setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin \
        HOME="$t" TMPDIR="$t" sh "$0" "$t/bin/forgeyard" "$t/integrations" --as-user
    exit $?
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fy-integ-XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
export FORGEYARD_CACHE_DIR="$scratch/cache"
mkdir -m 0700 "$FORGEYARD_CACHE_DIR" || exit 1
root=0; [ "$(id -u)" -eq 0 ] && root=1

# A worker's content-addressed store and an execution root made from it by
# hard links, read-only, as Buildfarm and NativeLink materialise inputs.
mkdir -p "$scratch/cas" "$scratch/exec/src" "$scratch/exec/bazel-out/k8/bin" || exit 1
printf 'int main(void) { return 0; }\n' > "$scratch/cas/f1"
printf '#!/bin/sh\necho tool\n' > "$scratch/cas/f2"
chmod 0444 "$scratch/cas/f1"; chmod 0555 "$scratch/cas/f2"
ln "$scratch/cas/f1" "$scratch/exec/src/a.c" && ln "$scratch/cas/f2" "$scratch/exec/src/tool" || exit 1
cas_sum() { cat "$scratch/cas/f1" "$scratch/cas/f2" | sha256sum; stat -c "%a %u %g %s %Y" "$scratch/cas/f1" "$scratch/cas/f2"; }
before=$(cas_sum)

# ---- 1. Buildfarm's executionWrapper ----
cd "$scratch/exec" || exit 1
out=$(env -i PATH=/usr/bin:/bin LANG=C.UTF-8 ACTION_VAR=1 "$fy" wrap -- /bin/sh -c '
    cat src/a.c > bazel-out/k8/bin/a.o && ./src/tool > bazel-out/k8/bin/tool.out &&
    env | sort > bazel-out/k8/bin/env.txt
    echo tamper >> src/a.c 2>/dev/null; chmod 666 src/a.c 2>/dev/null; rm -f src/tool; exit 0' 2>&1); rc=$?
[ $rc -eq 0 ] || fail "buildfarm: wrapper gave $rc: $out"
cmp -s bazel-out/k8/bin/a.o "$scratch/cas/f1" || fail "buildfarm: output a.o is wrong"
[ "$(cat bazel-out/k8/bin/tool.out)" = tool ] || fail "buildfarm: tool output is wrong"
# Exactly the action's environment (the shell adds PWD); nothing of ours.
exp=$(printf 'ACTION_VAR=1\nLANG=C.UTF-8\nPATH=/usr/bin:/bin\nPWD=/work/build\n')
[ "$(cat bazel-out/k8/bin/env.txt)" = "$exp" ] || fail "buildfarm: environment: $(cat bazel-out/k8/bin/env.txt)"
# As root the workload is an unprivileged uid that owns nothing of the
# worker's: the CAS cannot change. Rootless, the workload runs as the
# worker's own uid (the only one a user namespace can map), which owns the
# CAS files: that is the documented limit of `wrap` (docs/integrations.md;
# `forgeyard action run` copies such inputs instead).
if [ $root -eq 1 ]; then
    [ "$(cas_sum)" = "$before" ] || fail "buildfarm: the CAS changed"
else
    chmod 0644 "$scratch/cas/f1"; printf 'int main(void) { return 0; }\n' > "$scratch/cas/f1"; chmod 0444 "$scratch/cas/f1"
    before=$(cas_sum)
fi
ln -f "$scratch/cas/f2" "$scratch/exec/src/tool"
# The command's exit status, and a working directory below the root.
env -i PATH=/usr/bin:/bin "$fy" wrap -- /bin/sh -c 'exit 7'; rc=$?
[ $rc -eq 7 ] || fail "buildfarm: exit 7 gave $rc"
cd "$scratch/exec/src" || exit 1
out=$(env -i PATH=/usr/bin:/bin "$fy" wrap --root "$scratch/exec" -- /bin/sh -c 'pwd; cat a.c >/dev/null' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = /work/build/src ] || fail "buildfarm: working directory below the root: $rc $out"
cd / && out=$(env -i "$fy" wrap --root "$scratch/exec" -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "buildfarm: a working directory outside the root gave $rc: $out"
# As root, wrap never hands a system tree to the sandbox's uid, wherever it
# is run.
if [ $root -eq 1 ]; then
    etc_owner=$(stat -c %u:%g /etc)
    out=$(cd /etc && env -i PATH=/usr/bin:/bin "$fy" wrap -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "buildfarm: wrap in /etc gave $rc: $out"
    [ "$(stat -c %u:%g /etc)" = "$etc_owner" ] || fail "buildfarm: /etc changed owner"
    out=$(cd "$scratch" && env -i PATH=/usr/bin:/bin "$fy" wrap --root / -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "buildfarm: wrap --root / gave $rc: $out"
    # A directory others may write to (sticky, world-writable, as /var/tmp):
    # it holds their files too, so it is never handed over.
    mkdir -p "$scratch/shared/other" && chmod 1777 "$scratch/shared"
    out=$(cd "$scratch/shared" && env -i PATH=/usr/bin:/bin "$fy" wrap -- /bin/true 2>&1); rc=$?
    [ $rc -eq 246 ] || fail "buildfarm: wrap in a sticky world-writable directory gave $rc: $out"
    [ "$(stat -c %u:%a "$scratch/shared" "$scratch/shared/other" | tr '\n' ' ')" = "0:1777 0:755 " ] ||
        fail "buildfarm: the shared directory changed: $(stat -c %u:%a "$scratch/shared" "$scratch/shared/other")"
    rm -rf "$scratch/shared"
fi
cd "$scratch/exec" || exit 1
# The network stays the policy's: a listener this test started on the
# host's loopback is not reachable (the sandbox has a loopback of its own).
port_file="$scratch/port"
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20)
try: s.accept()
except OSError: pass' "$port_file" &
lpid=$!
i=0; while [ ! -s "$port_file" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$port_file")
out=$(env -i PATH=/usr/bin:/bin "$fy" wrap -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print("reached")
except OSError as e:
    print("blocked", e.errno)' "$port" 2>&1)
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
case $out in blocked*) ;; *) fail "buildfarm: the host's loopback listener was reached: $out" ;; esac

# Through forgeyard-wrap, the recipe's first hop: the action's environment,
# all of it the action's choice, reaches the workload exactly, and no
# dynamic loader on the host (LD_PRELOAD naming a library among the
# action's inputs ran its code in `forgeyard wrap` itself, as the worker's
# uid). A library of the action's, when there is a compiler; plain
# `forgeyard wrap` is the control that shows the check can fail.
fyw="$(dirname "$fy")/forgeyard-wrap"
[ -x "$fyw" ] || fail "no forgeyard-wrap beside $fy"
out=$(env -i PATH=/usr/bin:/bin ACTION_VAR='a b=c' "$fyw" --forgeyard "$fy" -- /bin/sh -c 'env | sort' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = "$(printf 'ACTION_VAR=a b=c\nPATH=/usr/bin:/bin\nPWD=/work/build\n')" ] ||
    fail "forgeyard-wrap: the environment: $rc $out"
out=$(env -i PATH=/usr/bin:/bin "$fyw" --forgeyard forgeyard -- /bin/true 2>&1); rc=$?
[ $rc -eq 246 ] || fail "forgeyard-wrap: a relative --forgeyard gave $rc: $out"
if command -v cc >/dev/null 2>&1; then
    printf '#include <stdio.h>\n__attribute__((constructor)) static void f(void) { FILE *o = fopen("%s/pwned", "w"); if (o) fclose(o); }\n' \
        "$scratch" > "$scratch/evil.c"
    cc -shared -fPIC -o src/evil.so "$scratch/evil.c" || fail "cannot build the action's library"
    env -i PATH=/usr/bin:/bin LD_PRELOAD="$scratch/exec/src/evil.so" "$fy" wrap -- /bin/true 2>/dev/null
    # (not under AddressSanitizer, whose runtime refuses to start after a
    # preloaded library)
    [ -e "$scratch/pwned" ] || grep -q __asan_init "$fy" ||
        fail "forgeyard-wrap: the control (plain wrap under LD_PRELOAD) ran nothing"
    rm -f "$scratch/pwned"
    out=$(env -i PATH=/usr/bin:/bin LD_PRELOAD="$scratch/exec/src/evil.so" "$fyw" --forgeyard "$fy" -- \
          /bin/sh -c 'echo "$LD_PRELOAD"' 2>/dev/null); rc=$?  # (ld.so inside: no such file there)
    [ ! -e "$scratch/pwned" ] || fail "forgeyard-wrap: the action's LD_PRELOAD ran on the host"
    [ $rc -eq 0 ] && [ "$out" = "$scratch/exec/src/evil.so" ] || fail "forgeyard-wrap: LD_PRELOAD inside: $rc $out"
    rm -f src/evil.so "$scratch/evil.c"
fi

# ---- 2. NativeLink's entrypoint: platform properties as environment ----
out=$(env -i PATH=/usr/bin:/bin FYP_OSFamily=linux FYP_sandbox_level=namespace FYP_network=deny FYP_Pool=x \
      "$fy" wrap --properties-from-env FYP_ -- /bin/sh -c 'env | grep -c ^FYP_ || true' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = 0 ] || fail "nativelink: properties: $rc $out"
out=$(env -i PATH=/usr/bin:/bin FYP_gpu=1 "$fy" wrap --properties-from-env FYP_ -- /bin/true 2>&1); rc=$?
[ $rc -eq 247 ] || fail "nativelink: an unknown property gave $rc: $out"
case $out in *'"gpu"'*) ;; *) fail "nativelink: the refusal does not name the property: $out" ;; esac
out=$(env -i PATH=/usr/bin:/bin FYP_network=allow "$fy" wrap --properties-from-env FYP_ -- /bin/true 2>&1); rc=$?
[ $rc -eq 247 ] || fail "nativelink: a wider network gave $rc: $out"
out=$(env -i PATH=/usr/bin:/bin FYP_sandbox_level=confidential-vm "$fy" wrap --properties-from-env FYP_ -- /bin/true 2>&1)
rc=$?
[ $rc -eq 247 ] || fail "nativelink: a level this host lacks gave $rc: $out"
# The same through forgeyard-wrap: the properties are the action's variables.
out=$(env -i PATH=/usr/bin:/bin FYP_network=allow "$fyw" --forgeyard "$fy" --properties-from-env FYP_ -- /bin/true 2>&1)
rc=$?
[ $rc -eq 247 ] || fail "nativelink: a wider network through forgeyard-wrap gave $rc: $out"
out=$(env -i PATH=/usr/bin:/bin FYP_OSFamily=linux "$fyw" --forgeyard "$fy" --properties-from-env FYP_ -- \
      /bin/sh -c 'env | grep -c ^FYP_ || true' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = 0 ] || fail "nativelink: properties through forgeyard-wrap: $rc $out"
[ "$(cas_sum)" = "$before" ] || fail "nativelink: the CAS changed"

# ---- 3. GitLab Runner's custom executor ----
gl="$idir/gitlab/forgeyard-gitlab-executor"
export FORGEYARD="$fy" FORGEYARD_GITLAB_BASE="$scratch/gitlab"
mkdir -p "$scratch/gitlab" "$scratch/runner-tmp"
export CUSTOM_ENV_CI_RUNNER_ID=7 CUSTOM_ENV_CI_JOB_ID=4242 CUSTOM_ENV_CI_PROJECT_PATH=group/project
# The job payload the runner writes for every stage (GitLab Runner 14+):
# the job's id as GitLab sent it, which no job variable overrides.
job_response() { printf '{"id": %s, "token": "t", "variables": []}' "$1" > "$scratch/runner-tmp/response-$1.json"
                 export JOB_RESPONSE_FILE="$scratch/runner-tmp/response-$1.json"; }
job_response 4242
cfg=$("$gl" config) || fail "gitlab: config failed"
bdir=$(printf '%s' "$cfg" | python3 -c 'import json,sys; c=json.load(sys.stdin); assert c["driver"]["name"] == "forgeyard"; assert not c["builds_dir_is_shared"]; print(c["builds_dir"])') ||
    fail "gitlab: config printed $cfg"
export BUILD_FAILURE_EXIT_CODE=91 SYSTEM_FAILURE_EXIT_CODE=92
"$gl" prepare || fail "gitlab: prepare failed"
[ -d "$bdir" ] || fail "gitlab: no builds directory $bdir"
cat > "$scratch/runner-tmp/script." <<EOF
#!/usr/bin/env bash
set -eo pipefail
mkdir -p "$bdir/group/project" && cd "$bdir/group/project"
echo built > artifact.txt
test ! -e "$scratch/cas/f1"   # nothing of the host's but the job's directories
EOF
"$gl" run "$scratch/runner-tmp/script." build_script; rc=$?
[ $rc -eq 0 ] || fail "gitlab: build_script gave $rc"
[ "$(cat "$bdir/group/project/artifact.txt")" = built ] || fail "gitlab: the artifact is missing"
# The stage scripts hold CI_JOB_TOKEN and every variable: no one but the
# sandbox's uid reads them (their directory 0750, group the sandbox's, as
# root; 0700 rootless).
sdir="$scratch/gitlab/job-4242/scripts"
if [ $root -eq 1 ]; then want="750 640"; else want="700 600"; fi
[ "$(stat -c %a "$sdir") $(stat -c %a "$sdir/build_script.sh")" = "$want" ] ||
    fail "gitlab: the stage scripts can be read by others: $(ls -ln "$sdir")"
if [ $root -eq 1 ] && setpriv --reuid 65534 --regid 65534 --clear-groups cat "$sdir/build_script.sh" >/dev/null 2>&1; then
    fail "gitlab: another local user read the stage script"
fi
printf '#!/usr/bin/env bash\nexit 3\n' > "$scratch/runner-tmp/fail."
"$gl" run "$scratch/runner-tmp/fail." step_script; rc=$?
[ $rc -eq 91 ] || fail "gitlab: a failing script gave $rc, not BUILD_FAILURE_EXIT_CODE"
# A script's own 245-247 is the job's failure, not the runner's (the
# result, not the status, tells the sandbox's own failures apart).
for s in 245 246 247; do
    printf '#!/usr/bin/env bash\nexit %s\n' $s > "$scratch/runner-tmp/fail."
    "$gl" run "$scratch/runner-tmp/fail." step_script; rc=$?
    [ $rc -eq 91 ] || fail "gitlab: a script exiting $s gave $rc, not BUILD_FAILURE_EXIT_CODE"
done
[ ! -e "$sdir/step_script.result.json" ] || fail "gitlab: the result file was left"
printf '{"version": 1, "bogus": true}' > "$scratch/bad-policy.json"
FORGEYARD_GITLAB_POLICY="$scratch/bad-policy.json" "$gl" run "$scratch/runner-tmp/script." build_script 2>/dev/null; rc=$?
[ $rc -eq 92 ] || fail "gitlab: an invalid policy gave $rc, not SYSTEM_FAILURE_EXIT_CODE"
"$gl" run "$scratch/runner-tmp/script." 'x/y' 2>/dev/null; rc=$?
[ $rc -eq 92 ] || fail "gitlab: a stage name with a slash gave $rc"
printf '{"id": "1;rm"}' > "$scratch/runner-tmp/bad-response.json"
JOB_RESPONSE_FILE="$scratch/runner-tmp/bad-response.json" "$gl" prepare 2>/dev/null; rc=$?
[ $rc -eq 92 ] || fail "gitlab: a job id that is not a number gave $rc"
JOB_RESPONSE_FILE= "$gl" prepare 2>/dev/null; rc=$?
[ $rc -eq 92 ] || fail "gitlab: no job response gave $rc"
# Another job whose variables say CI_JOB_ID=4242 (and the same runner id):
# its own directory, never job 4242's, which it can neither read nor empty.
echo "victim-secret" > "$bdir/secret.txt"
( job_response 5151; export CUSTOM_ENV_CI_JOB_ID=4242
  acfg=$("$gl" config) && abdir=$(printf '%s' "$acfg" | python3 -c 'import json,sys; print(json.load(sys.stdin)["builds_dir"])') &&
  [ "$abdir" != "$bdir" ] || { echo "gitlab: the attacker's builds_dir is the victim's: $abdir" >&2; exit 1; }
  "$gl" prepare || exit 1
  printf '#!/usr/bin/env bash\ncat "%s/secret.txt" 2>/dev/null && echo READ; echo x > "%s/secret.txt" 2>/dev/null && echo WROTE; exit 0\n' \
      "$bdir" "$bdir" > "$scratch/runner-tmp/attack."
  out=$("$gl" run "$scratch/runner-tmp/attack." build_script) || exit 1
  case $out in *READ* | *WROTE* | *victim*) echo "gitlab: the other job reached job 4242's files: $out" >&2; exit 1 ;; esac
  "$gl" cleanup ) || fail "gitlab: a job overriding CI_JOB_ID"
[ "$(cat "$bdir/secret.txt" 2>/dev/null)" = victim-secret ] || fail "gitlab: job 4242's files changed or went"
# A second prepare of a job directory that exists is refused (not emptied).
"$gl" prepare 2>/dev/null; rc=$?
[ $rc -eq 92 ] && [ -s "$bdir/secret.txt" ] || fail "gitlab: a second prepare of job 4242 gave $rc or emptied it"
"$gl" cleanup || fail "gitlab: cleanup failed"
[ ! -e "$scratch/gitlab/job-4242" ] || fail "gitlab: cleanup left the job directory"
# A job policy with its own id range: prepare hands the job's directories to
# the uid that run then uses (as root; rootless the uid is the caller's).
printf '{"process": {"id_range": {"first": 300000, "count": 65536}}}' > "$scratch/range-policy.json"
export FORGEYARD_GITLAB_POLICY="$scratch/range-policy.json" CUSTOM_ENV_CI_JOB_ID=4243
job_response 4243
"$gl" prepare || fail "gitlab: prepare with an id range failed"
"$gl" run "$scratch/runner-tmp/script." build_script; rc=$?
[ $rc -eq 0 ] || fail "gitlab: a policy with its own id range gave $rc"
# The runner's own stages write the builds directory as the job's scripts
# do (they ran under the development profile's ids: Permission denied).
printf 'cd "%s" && echo src > cloned.txt\n' "$scratch/gitlab/job-4243/builds" > "$scratch/runner-tmp/gs."
"$gl" run "$scratch/runner-tmp/gs." get_sources; rc=$?
[ $rc -eq 0 ] && [ -s "$scratch/gitlab/job-4243/builds/cloned.txt" ] ||
    fail "gitlab: get_sources under a policy with its own id range gave $rc"
if [ $root -eq 1 ]; then
    [ "$(stat -c %u "$scratch/gitlab/job-4243/builds")" = 300001 ] ||
        fail "gitlab: the builds directory is not the range's uid: $(ls -ln "$scratch/gitlab/job-4243")"
fi
"$gl" cleanup || fail "gitlab: cleanup (id range) failed"
unset FORGEYARD_GITLAB_POLICY
unset CUSTOM_ENV_CI_RUNNER_ID CUSTOM_ENV_CI_JOB_ID CUSTOM_ENV_CI_PROJECT_PATH BUILD_FAILURE_EXIT_CODE SYSTEM_FAILURE_EXIT_CODE JOB_RESPONSE_FILE

# ---- 4. A GitHub Actions step ----
# (paths with a space: the runner's may hold one)
ws="$scratch/_work/re po/re po" cmds="$scratch/_work/_temp/_runner_file_commands"
mkdir -p "$ws" "$cmds" || exit 1
printf 'checked out\n' > "$ws/README"
: > "$cmds/set_output_1"; : > "$cmds/set_env_1"; : > "$cmds/add_path_1"; : > "$cmds/step_summary_1"
: > "$cmds/set_env_other"
cat > "$scratch/_work/_temp/step1.sh" <<'EOF'
echo "result=42" >> "$GITHUB_OUTPUT"
echo "## done" >> "$GITHUB_STEP_SUMMARY"
echo more >> README
echo built > out.txt
test -z "${HOST_ONLY:-}"
test "$(pwd)" = "$GITHUB_WORKSPACE"
# Programming the job's later steps, the unsandboxed ones included:
# through GITHUB_ENV and GITHUB_PATH (kept back), or the runner's
# directory of file commands (not there).
echo "BASH_ENV=$GITHUB_WORKSPACE/evil" >> "$GITHUB_ENV"
echo "$GITHUB_WORKSPACE" >> "$GITHUB_PATH"
# (what programs the next step's wrapper or the host's loader, never
# passed on; the rest is)
printf 'BUILD_FLAVOR=release\nLD_PRELOAD=%s/evil.so\nFORGEYARD_STEP_PROFILE=development\nTMPDIR=%s\n' \
    "$GITHUB_WORKSPACE" "$GITHUB_WORKSPACE" >> "$GITHUB_ENV"
printf 'NOTES<<EOF_1\nline one\nLD_PRELOAD=inside-a-value\nEOF_1\nGLIBC_TUNABLES<<X\nglibc.malloc.check=3\nX\n' >> "$GITHUB_ENV"
printf '/opt/tool/bin\n%s/.bin\nrelative/bin\n/opt/../%s\n/%s/bin\n/proc/self/cwd/bin\n' \
    "$GITHUB_WORKSPACE" "$GITHUB_WORKSPACE" "$GITHUB_WORKSPACE" >> "$GITHUB_PATH"
ln -s "$GITHUB_WORKSPACE" "$GITHUB_WORKSPACE/.ws-link" 2>/dev/null
! ls "$(dirname "$GITHUB_WORKSPACE")/../_temp/_runner_file_commands" 2>/dev/null
EOF
cd "$ws" || exit 1
HOST_ONLY=secret
step() {
    env -i PATH=/usr/bin:/bin HOME="$scratch" GITHUB_WORKSPACE="$ws" GITHUB_OUTPUT="$cmds/set_output_1" \
        GITHUB_ENV="$cmds/set_env_1" GITHUB_PATH="$cmds/add_path_1" GITHUB_STEP_SUMMARY="$cmds/step_summary_1" \
        FORGEYARD="$fy" ${pass:+FORGEYARD_STEP_FILE_COMMANDS=pass} sh "$idir/github/forgeyard-step" "$1"
}
pass=""
out=$(step "$scratch/_work/_temp/step1.sh" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "github: the step gave $rc: $out"
grep -qx 'result=42' "$cmds/set_output_1" || fail "github: GITHUB_OUTPUT: $(cat "$cmds/set_output_1")"
grep -qx '## done' "$cmds/step_summary_1" || fail "github: the step summary is missing"
[ "$(cat "$ws/out.txt")" = built ] && grep -qx more "$ws/README" || fail "github: the workspace was not written"
[ ! -s "$cmds/set_env_1" ] && [ ! -s "$cmds/add_path_1" ] ||
    fail "github: GITHUB_ENV or GITHUB_PATH passed on without FORGEYARD_STEP_FILE_COMMANDS=pass"
case $out in *"12 line(s) to GITHUB_ENV: not passed on"*) ;; *) fail "github: no word of what was kept back: $out" ;; esac
[ "$(ls -A "$cmds" | tr '\n' ' ')" = "add_path_1 set_env_1 set_env_other set_output_1 step_summary_1 " ] ||
    fail "github: the step left something in the runner's directory: $(ls -A "$cmds")"
pass=1
out=$(step "$scratch/_work/_temp/step1.sh" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "github: the step (pass) gave $rc: $out"
[ "$(cat "$cmds/set_env_1")" = "$(printf 'BUILD_FLAVOR=release\nNOTES<<EOF_1\nline one\nLD_PRELOAD=inside-a-value\nEOF_1')" ] ||
    fail "github: FORGEYARD_STEP_FILE_COMMANDS=pass passed on GITHUB_ENV as: $(cat "$cmds/set_env_1")"
[ "$(cat "$cmds/add_path_1")" = /opt/tool/bin ] ||
    fail "github: FORGEYARD_STEP_FILE_COMMANDS=pass passed on GITHUB_PATH as: $(cat "$cmds/add_path_1")"
case $out in *"5 GITHUB_ENV entries not passed on"*"GITHUB_PATH entry '$ws/.bin' not passed on (in the workspace)"*) ;;
    *) fail "github: no word of what pass kept back: $out" ;; esac
[ ! -s "$cmds/set_env_other" ] || fail "github: the step wrote another step's file command"
# Bytes the runner reads otherwise (a delimiter that is not UTF-8, which
# it decodes to U+FFFD, ending the block on another line than the filter;
# a carriage return, which it takes for a line's end): nothing passed on.
: > "$cmds/set_env_1"; : > "$cmds/add_path_1"
printf 'printf "X<<A=\\377\\nA=\\376\\nLD_PRELOAD=/tmp/evil.so\\nA=\\377\\n" >> "$GITHUB_ENV"\n' > "$scratch/_work/_temp/step3.sh"
printf 'printf "/opt/tools\\r%%s/bin\\n" "$GITHUB_WORKSPACE" >> "$GITHUB_PATH"\n' >> "$scratch/_work/_temp/step3.sh"
out=$(step "$scratch/_work/_temp/step3.sh" 2>&1); rc=$?
[ $rc -eq 0 ] && [ ! -s "$cmds/set_env_1" ] && [ ! -s "$cmds/add_path_1" ] ||
    fail "github: pass with bytes the runner reads otherwise: $rc: env $(od -c "$cmds/set_env_1" | head -3), path $(cat "$cmds/add_path_1"): $out"
case $out in *"to GITHUB_ENV: none of it passed on"*"to GITHUB_PATH: none of it passed on"*) ;;
    *) fail "github: no word of the refused file commands: $out" ;; esac
pass=""
printf 'false\necho not-reached > "$GITHUB_WORKSPACE/after"\n' > "$scratch/_work/_temp/step2.sh"
step "$scratch/_work/_temp/step2.sh" >/dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || fail "github: a failing step gave $rc (bash -e)"
[ ! -e "$ws/after" ] || fail "github: the step went on after a failing command"

# ---- 5. forgeyard action run ----
cd "$scratch" || exit 1
cat > action.json <<EOF
{"version": 1, "arguments": ["/bin/sh", "-c", "mkdir -p out && cat src/a.c > out/a.o && echo stray > junk"],
 "environment": {"PATH": "/usr/bin:/bin"}, "platform": {"OSFamily": "linux"},
 "input_root": {"directory": "$scratch/exec"}, "outputs": {"files": ["out/a.o"]}}
EOF
"$fy" action run action.json --output-dir "$scratch/action-out" --result "$scratch/ar.json"; rc=$?
[ $rc -eq 0 ] || fail "action run gave $rc"
cmp -s "$scratch/action-out/out/a.o" "$scratch/cas/f1" || fail "action run: the output is wrong"
python3 - "$scratch/ar.json" "$scratch/cas/f1" <<'EOF' || fail "action run: the ActionResult is wrong"
import hashlib, json, sys
r = json.load(open(sys.argv[1]))
d = "sha256:" + hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert r["outcome"] == "succeeded" and r["exit_code"] == 0, r
assert [f["digest"] for f in r["output_files"]] == [d], r["output_files"]
assert r["undeclared"]["paths"] == ["junk"], r["undeclared"]
assert r["cleanup"]["files_left"] == 0
assert r["sandbox"]["contract_id"]
# the input walk's verdict ran beside the attempt, as in fy_action_run
if r["input"]["root"] == "overlay":
    assert r["timings_usec"]["input_walk_beside"] is not None, r["timings_usec"]
EOF
# A relative output directory written as at a shell, "out/": the directory
# out of the working directory (it was refused, "path must not end with '/'").
"$fy" action run action.json --output-dir action-out2/ >/dev/null; rc=$?
[ $rc -eq 0 ] && cmp -s "$scratch/action-out2/out/a.o" "$scratch/cas/f1" || fail "action run --output-dir action-out2/ gave $rc"
# An input the workload's uid cannot read (root's, 0600): the walk beside
# refuses the overlay, the running attempt is superseded and made again
# walk-first (materialised: a readable copy), and only that one is reported.
if [ $root -eq 1 ]; then
    mkdir -p "$scratch/secret-in" && printf 'secret\n' > "$scratch/secret-in/s.txt" && chmod 0600 "$scratch/secret-in/s.txt"
    cat > secret.json <<EOF
{"version": 1, "arguments": ["/bin/sh", "-c", "cat s.txt > got"], "environment": {"PATH": "/usr/bin:/bin"},
 "input_root": {"directory": "$scratch/secret-in"}, "outputs": {"files": ["got"]}}
EOF
    "$fy" action run secret.json --output-dir "$scratch/secret-out" --result "$scratch/sr.json"; rc=$?
    [ $rc -eq 0 ] || fail "action run (an unreadable input) gave $rc"
    [ "$(cat "$scratch/secret-out/got" 2>/dev/null)" = secret ] || fail "action run (an unreadable input): no output"
    python3 - "$scratch/sr.json" <<'EOF' || fail "action run (an unreadable input): the ActionResult is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "succeeded", r
assert r["input"]["root"] == "materialised", r["input"]
assert r["timings_usec"]["input_walk_beside"] is None, r["timings_usec"]
EOF
fi
printf '{"version": 1, "arguments": ["x"], "input_root": {"directory": "%s"}, "outputs": {"files": ["../x"]}}' \
    "$scratch/exec" > bad.json
out=$("$fy" action run bad.json 2>&1); rc=$?
[ $rc -eq 246 ] || fail "action run: a bad document gave $rc"
case $out in *'$.outputs.files[0]'*) ;; *) fail "action run: the error does not name the path: $out" ;; esac
# An input archive beyond limits.input_bytes (an entry's header claims 20
# GiB), refused before the start: the document's fault (246), as every
# other hostile archive and as the same refusal after the start; it was an
# infrastructure failure (245), which workers retry elsewhere.
python3 - "$scratch" <<'EOF' || fail "cannot write the big archive"
import json, sys, tarfile
t = tarfile.TarInfo("big"); t.size = 20 << 30
open(sys.argv[1] + "/big.tar", "wb").write(t.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 1024)
json.dump({"version": 1, "arguments": ["true"], "environment": {"PATH": "/usr/bin:/bin"},
           "input_root": {"archive": sys.argv[1] + "/big.tar"}, "outputs": {"files": ["f"]}},
          open(sys.argv[1] + "/big.json", "w"))
EOF
out=$("$fy" action run "$scratch/big.json" 2>&1); rc=$?
[ $rc -eq 246 ] || fail "action run: an archive over limits.input_bytes gave $rc: $out"
case $out in *limits.input_bytes*) ;; *) fail "action run: the big archive's refusal: $out" ;; esac
# Run again into the same (now not empty) output directory, or keeping its
# stdout in a file that exists: refused before anything runs, status 246
# (the caller's to fix), the message naming what.
out=$("$fy" action run action.json --output-dir "$scratch/action-out" 2>&1); rc=$?
[ $rc -eq 246 ] || fail "action run into a full output directory gave $rc: $out"
case $out in *"$scratch/action-out: the output directory is not empty"*) ;; *) fail "action run: $out" ;; esac
: > "$scratch/kept-stdout"
out=$("$fy" action run action.json --stdout "$scratch/kept-stdout" 2>&1); rc=$?
[ $rc -eq 246 ] || fail "action run keeping stdout in an existing file gave $rc: $out"
case $out in *"the file exists"*) ;; *) fail "action run --stdout: $out" ;; esac
# SIGTERM while the action runs: cancelled (241), the message naming
# "action run", not "run".
cat > sleep.json <<EOF
{"version": 1, "arguments": ["/bin/sleep", "2718$$"],
 "environment": {"PATH": "/usr/bin:/bin"}, "input_root": {"directory": "$scratch/exec"}, "outputs": {"files": ["x"]}}
EOF
"$fy" action run sleep.json --result "$scratch/sleep-ar.json" 2>"$scratch/sleep.err" &
apid=$!
i=0
while ! pgrep -x -f "/bin/sleep 2718$$" >/dev/null; do
    i=$((i + 1)); [ $i -gt 500 ] && { kill -9 $apid; fail "action run: the sandbox never started"; }
    sleep 0.02
done
kill -TERM $apid; wait $apid; rc=$?
[ $rc -eq 241 ] || fail "action run cancelled gave $rc: $(cat "$scratch/sleep.err")"
grep -q "^forgeyard: action run: Terminated: cancelling the sandbox" "$scratch/sleep.err" ||
    fail "action run: the stop message: $(cat "$scratch/sleep.err")"
# An archive input, from the cache; `forgeyard action gc` collects it.
mkdir -p "$scratch/arin" && printf 'archived\n' > "$scratch/arin/in.txt" && chmod 0644 "$scratch/arin/in.txt" || exit 1
tar -C "$scratch/arin" -cf "$scratch/in.tar" in.txt || fail "tar"
cat > archive.json <<EOF
{"version": 1, "arguments": ["/bin/sh", "-c", "cat in.txt > got"], "environment": {"PATH": "/usr/bin:/bin"},
 "input_root": {"archive": "$scratch/in.tar"}, "outputs": {"files": ["got"]}}
EOF
export FORGEYARD_ACTION_CACHE="$scratch/acache"
"$fy" action run archive.json --result "$scratch/ar2.json" || fail "action run (archive) gave $?"
grep -q '"cache": "built"' "$scratch/ar2.json" || fail "action run: the archive was not cached"
[ "$(ls "$scratch/acache/entries" | wc -l)" -eq 1 ] || fail "action gc: no entry to collect"
out=$("$fy" action gc --max-age 1d) || fail "action gc gave $?"
[ "$out" = "removed 0 action cache entries" ] || fail "action gc: a fresh entry was collected: $out"
out=$("$fy" action gc --cache "$scratch/acache" --max-age 0s) || fail "action gc gave $?"
[ "$out" = "removed 1 action cache entry" ] || fail "action gc: $out"
[ -z "$(ls "$scratch/acache/entries")" ] && [ -z "$(ls "$scratch/acache/seals")" ] || fail "action gc left the entry"
"$fy" action gc --max-age soon >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] || fail "action gc: a bad duration was accepted"
unset FORGEYARD_ACTION_CACHE
if [ "$mode" = "--as-user" ]; then
    # A service user (HOME=/nonexistent, no XDG_CACHE_HOME): its cache in a
    # 0700 directory of its own in TMPDIR, not a failure to make ~/.cache.
    mkdir "$scratch/svc" || exit 1
    env -u XDG_CACHE_HOME HOME=/nonexistent TMPDIR="$scratch/svc" "$fy" action run archive.json \
        --result "$scratch/ar3.json" || fail "action run as a service user gave $?"
    grep -q '"cache": "built"' "$scratch/ar3.json" || fail "action run as a service user: not cached"
    [ -d "$scratch/svc/forgeyard-$(id -u)/actions/entries" ] &&
        [ "$(stat -c %a "$scratch/svc/forgeyard-$(id -u)")" = 700 ] || fail "service user: no cache of its own"
fi
[ "$(cas_sum)" = "$before" ] || fail "the CAS changed"
echo "integrations: all passed ($( [ $root -eq 1 ] && echo root || echo "uid $(id -u)" ))"
