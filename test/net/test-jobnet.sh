#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Job networks, end to end (root; the rootless refusal as uid 65534). The
# test makes two network namespaces of its own (lib.sh):
#   GW   where the host program runs (the library's "host" namespace): one
#        veth (192.0.2.1/24) with the default route to NET. A member linked
#        to the host's namespace, or routed through it, would reach NET.
#   NET  the fake internet: 192.0.2.2 and, on its loopback, 198.51.100.1-2
#        with TCP and UDP echo servers.
# Then test-jobnet (the API: members by name over TCP and UDP, another job,
# the host, the fake internet, bad input, 100 job networks) and the CLI
# (forgeyard job run). After each, GW and NET must be as before and nothing
# of ours (a link, a namespace) anywhere. No packet goes anywhere else.
#
#   test-jobnet.sh FORGEYARD FY-NETPROBE SERVE.PY TEST-JOBNET
set -u
FY=$1 PROBE=$2 SERVE=$3 API=$4
if [ "$(id -u)" != 0 ]; then echo "SKIP: job networks need root (the test makes namespaces)"; exit 77; fi
command -v nft >/dev/null || { echo "SKIP: nft missing (apt install nftables)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

GW=fyt-jn-gw-$$-$RANDOM NET=fyt-jn-net-$$-$RANDOM
. "$(dirname "$0")/lib.sh"
net_init fy-jobnet
chmod 755 "$TMP"
ECHO=$(dirname "$0")/echo-server.py
net_netns "$GW"
ip -n "$GW" link add g0 type veth peer name n0 || exit 1
net_fake_internet "$NET" "$ECHO" 32 128
ip -n "$GW" link set n0 netns "$NET" || exit 1
ip -n "$GW" addr add 192.0.2.1/24 dev g0
ip -n "$NET" addr add 192.0.2.2/24 dev n0
ip -n "$GW" link set g0 up
ip -n "$NET" link set n0 up
ip -n "$GW" route add default via 192.0.2.2 dev g0
# IPv6 too (2001:db8:2::1 in GW, ::2 in NET; GW's default route to NET).
ip -n "$GW" addr add 2001:db8:2::1/64 dev g0 nodad
ip -n "$NET" addr add 2001:db8:2::2/64 dev n0 nodad
ip -n "$GW" -6 route add default via 2001:db8:2::2 dev g0
# (From GW the fake internet must answer, or nothing below means anything.)
for a in 198.51.100.1 2001:db8::1; do
    ip netns exec "$GW" python3 -c '
import socket, sys; s = socket.create_connection((sys.argv[1], 8080), 3); s.send(b"hi"); assert s.recv(16) == b"echo:hi"' "$a" ||
        { echo "the fake internet ($a) does not answer from the host program's namespace"; exit 1; }
done
# A listener in GW too (192.0.2.1: TCP 8080, UDP 9090), answering the fake
# internet, so that the members' "! tcp 192.0.2.1 8080" checks can fail: a
# member reaching the host program's namespace would be answered.
net_bg ip netns exec "$GW" timeout 300 python3 "$(dirname "$0")/serve.py" "$TMP/gw.ready" 280
for _ in $(seq 50); do [ -s "$TMP/gw.ready" ] && break; sleep 0.1; done
for a in 192.0.2.1 2001:db8:2::1; do
    ip netns exec "$NET" python3 -c '
import socket, sys; s = socket.create_connection((sys.argv[1], 8080), 3); s.send(b"hi"); assert s.recv(16) == b"echo:hi"' "$a" ||
        { echo "GW's listener ($a) does not answer from the fake internet"; exit 1; }
done

# (fe80:: comes and goes with the veths' own address configuration.)
state() { { net_ns_state "$GW"; net_ns_state "$NET"; } | grep -v fe80; ip netns exec "$GW" nft list ruleset 2>&1; }
state >"$TMP/before"
# Links of our names in the real host's namespace: the library makes none there.
host_links() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(jb|job0|m[0-9]+)$' | sort; }
host_links >"$TMP/host.before"
nothing_left() {
    state >"$TMP/after"
    host_links >"$TMP/host.after"
    nothing_left_cmp "$1" "the host program's namespace or the fake internet" "$TMP/before" "$TMP/after" &&
        nothing_left_cmp "$1" "the host's namespace" "$TMP/host.before" "$TMP/host.after" &&
        ok "$1: nothing left (no link, route, address or rule in GW, NET or the host)"
}

mkdir -m 755 "$TMP/probe" "$TMP/out" "$TMP/out2" && cp "$PROBE" "$SERVE" "$TMP/probe/" && chmod 755 "$TMP/probe/"*
chown 65534:65534 "$TMP/out" "$TMP/out2" 2>/dev/null
chmod 777 "$TMP/out" "$TMP/out2"

# 1. The API: members, other jobs, the host, bad input, 100 job networks.
ip netns exec "$GW" timeout 500 "$API" root "$TMP/probe" "$TMP/out" "/run/netns/$NET" >"$TMP/api.log" 2>&1
rc=$?
grep -E '^(ok|FAIL|timing)' "$TMP/api.log"
[ $rc = 0 ] && ok "test-jobnet (API) passed" || { bad "test-jobnet exited $rc"; tail -40 "$TMP/api.log"; }
nothing_left "API"

# 2. The fake internet and GW never reach a member's listener either: a
#    member serves, then the outside tries it (NET routes 100.80.0.0/24 to
#    GW for this check, so a leak through GW would answer).
cat >"$TMP/job.json" <<JOB
{"members": [
  {"name": "db", "service": true, "argv": ["python3", "/opt/fyprobe/serve.py", "/work/output/ready", "60"],
   "policy": {"profile": "standard-ci", "network": {"mode": "deny"},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}],
                             "output": "$TMP/out2"}}},
  {"name": "runner", "argv": ["/bin/sh", "-c",
     "A=\$(/opt/fyprobe/fy-netprobe resolve db) || exit 9; for i in \$(seq 100); do /opt/fyprobe/fy-netprobe tcp \$A 8080 >/dev/null 2>&1 && break; sleep 0.1; done; /opt/fyprobe/fy-netprobe tcp \$A 8080 && /opt/fyprobe/fy-netprobe udp \$A 9090 && ! /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 && B=\$(/opt/fyprobe/fy-netprobe resolve6 db) && /opt/fyprobe/fy-netprobe tcp \$B 8080 && /opt/fyprobe/fy-netprobe udp \$B 9090 && ! /opt/fyprobe/fy-netprobe tcp 2001:db8::1 8080 && ! /opt/fyprobe/fy-netprobe tcp 2001:db8:2::1 8080"],
   "policy": {"profile": "standard-ci", "network": {"mode": "deny"},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}]}}},
  {"name": "fetch", "argv": ["/bin/sh", "-c",
     "for i in \$(seq 100); do /opt/fyprobe/fy-netprobe tcp 100.80.0.1 8080 2>/dev/null && break; sleep 0.1; done; /opt/fyprobe/fy-netprobe proxy 198.51.100.1 8080 && ! /opt/fyprobe/fy-netprobe proxy 198.51.100.2 8080 && ! /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080"],
   "policy": {"profile": "standard-ci",
              "network": {"mode": "fetch-only", "destinations": [{"host": "198.51.100.1", "ports": [8080, 8080]}]},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}]}}}
]}
JOB
ip -n "$NET" route add 100.80.0.0/24 via 192.0.2.1 dev n0
ip -n "$NET" -6 route add fd66:7973:2::/64 via 2001:db8:2::1 dev n0
ip netns exec "$GW" timeout 120 "$FY" job run "$TMP/job.json" >"$TMP/cli.out" 2>"$TMP/cli.err" &
CLI=$!
for _ in $(seq 100); do [ -s "$TMP/out2/ready" ] && break; sleep 0.1; done
if [ -s "$TMP/out2/ready" ]; then
    for where in "$GW" "$NET"; do
        for a in 100.80.0.1 fd66:7973:2::1; do
            ip netns exec "$where" python3 -c '
import socket, sys
try:
    socket.create_connection((sys.argv[1], 8080), 2); sys.exit(1)
except OSError:
    sys.exit(0)' "$a" && ok "no inbound: $where does not reach the member's listener at $a" ||
                bad "$where reached a job member's listener at $a"
        done
    done
else
    bad "forgeyard job run: db's server never started"; cat "$TMP/cli.err"
fi
wait $CLI
rc=$?
ip -n "$NET" route del 100.80.0.0/24 via 192.0.2.1 dev n0
ip -n "$NET" -6 route del fd66:7973:2::/64 via 2001:db8:2::1 dev n0
if [ $rc = 0 ] && grep -q '^runner: succeeded' "$TMP/cli.out" && grep -q '^db: cancelled' "$TMP/cli.out" &&
    grep -q '^fetch: succeeded' "$TMP/cli.out"; then
    ok "forgeyard job run: the runner reached db by name (IPv4 and IPv6, nothing outside over either); a fetch-only member db and its allowlist (through its proxy only); db (a service) cancelled at the end"
else
    bad "forgeyard job run exited $rc"; cat "$TMP/cli.out" "$TMP/cli.err"
fi
nothing_left "CLI"

# 3. A host killed mid-job leaves nothing: its members end (their inits
#    see the host gone), and nothing holds the job's namespace (found by
#    its inode among the killed process's descriptors) any more.
TOKEN=fyt-jn-kill-$$-$RANDOM
rm -f "$TMP/out2/ready"
sed -e 's|"60"\]|"60", "'"$TOKEN"'"]|' -e 's|"/bin/sh", "-c",|"/bin/sh", "-c", "sleep 60; : '"$TOKEN"'", "-c",|' \
    "$TMP/job.json" >"$TMP/kill.json"
ip netns exec "$GW" "$FY" job run "$TMP/kill.json" >/dev/null 2>&1 &
KPID=$!
for _ in $(seq 100); do [ -s "$TMP/out2/ready" ] && break; sleep 0.1; done
sleep 0.5
jns=$(for f in /proc/$KPID/fd/*; do readlink "$f"; done 2>/dev/null | grep '^net:' | sort -u)
members=$(pgrep -f "$TOKEN" | wc -l)
kill -9 $KPID; wait $KPID 2>/dev/null
for _ in $(seq 50); do [ "$(pgrep -f "$TOKEN" | wc -l)" = 0 ] && break; sleep 0.1; done
held=0
for n in $jns; do
    for f in /proc/[0-9]*/ns/net /proc/[0-9]*/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" = "$n" ] && held=$((held + 1))
    done
done
if [ -z "$jns" ] || [ "$members" = 0 ]; then
    bad "killed host: the job did not run (namespaces: $jns, members: $members)"
elif [ "$(pgrep -f "$TOKEN" | wc -l)" != 0 ]; then
    bad "killed host: $(pgrep -f "$TOKEN" | wc -l) member process(es) left"
elif [ $held != 0 ]; then
    bad "killed host: the job's namespace ($jns) is still held $held time(s)"
else
    ok "killed host: its $members member processes ended, nothing holds the job's namespace $jns"
fi
nothing_left "killed host"

# 3a. SIGTERM (a supervisor stopping the job): every member cancelled, one
#     line each, the network removed, exit 1; no member, cgroup or state
#     record left for gc (the signal killed forgeyard itself, and left the
#     members' cgroups and records).
rm -f "$TMP/out2/ready"
ip netns exec "$GW" "$FY" job run "$TMP/kill.json" >"$TMP/term.out" 2>"$TMP/term.err" &
KPID=$!
for _ in $(seq 100); do [ -s "$TMP/out2/ready" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM $KPID
rc=124
for _ in $(seq 300); do
    if ! kill -0 $KPID 2>/dev/null; then wait $KPID; rc=$?; break; fi
    sleep 0.1
done
[ $rc = 124 ] && kill -9 $KPID 2>/dev/null
left=$(pgrep -f "$TOKEN" | wc -l)
for c in /sys/fs/cgroup/*/forgeyard-$KPID-* /sys/fs/cgroup/*/*/forgeyard-$KPID-* /run/forgeyard-sandbox/forgeyard-$KPID-*.state; do
    [ -e "$c" ] && left=$((left + 1))
done
if [ $rc = 1 ] && [ "$(grep -c ': cancelled' "$TMP/term.out")" = 3 ] && [ $left = 0 ]; then
    ok "SIGTERM: the three members cancelled, one line each, nothing left"
else
    bad "SIGTERM: exit $rc, $left left, lines: [$(cat "$TMP/term.out")] [$(cat "$TMP/term.err")]"
fi
nothing_left "SIGTERM"

# 3b. A member that fails ends neither the members after it nor their
#     results (it cancelled them: "b: cancelled", b's output lost); the
#     job's status says a member failed.
echo '{"members": [{"name": "a", "argv": ["/bin/sh", "-c", "sleep 1; exit 3"]},
 {"name": "b", "argv": ["/bin/sh", "-c", "sleep 2; echo b-done"]}]}' >"$TMP/fail.json"
out=$(ip netns exec "$GW" timeout 60 "$FY" job run "$TMP/fail.json" 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q '^a: failed exit 3$' && echo "$out" | grep -q '^b: succeeded exit 0$' &&
    echo "$out" | grep -q '^b-done$'; then
    ok "a failing member leaves the later ones to end by themselves (status 1)"
else
    bad "a failing member: rc $rc: $out"
fi
nothing_left "a failing member"

# 4. Bad job files: typed, nothing started.
echo '{"members": [{"name": "a", "argv": ["/bin/true"]}, {"name": "a", "argv": ["/bin/true"]}]}' >"$TMP/dup.json"
out=$(ip netns exec "$GW" "$FY" job run "$TMP/dup.json" 2>&1); rc=$?
[ $rc != 0 ] && echo "$out" | grep -q 'declared twice' && ok "a job file with a duplicate member refused: $out" ||
    bad "duplicate member: rc $rc: $out"
echo '{"members": [{"name": "Bad_Name", "argv": ["/bin/true"]}]}' >"$TMP/bad.json"
out=$(ip netns exec "$GW" "$FY" job run "$TMP/bad.json" 2>&1); rc=$?
[ $rc != 0 ] && echo "$out" | grep -q 'host name label' && ok "a bad member name refused: $out" ||
    bad "bad member name: rc $rc: $out"

# 5. Without root: refused, typed, saying what is missing.
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME=/tmp \
    "$API" rootless "$TMP/probe" "$TMP/out" 2>&1); rc=$?
echo "$out" | grep -E '^(ok|FAIL)'
[ $rc = 0 ] && ok "uid 65534: job networks refused, typed" || bad "rootless: $out"
nothing_left "rootless"

[ $fail = 0 ] && echo PASS || echo FAILED
exit $fail
