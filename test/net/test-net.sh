#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Network mode restricted, end to end, as root: a fake "internet" in a
# network namespace this test makes (198.51.100.0/24, 2001:db8::/32 on its
# loopback, TCP and UDP echo servers it starts) is the router's uplink
# (--network-uplink). No packet goes anywhere else: every destination a
# sandbox tries is an address of that namespace or of the sandbox's own
# links. Removed at the end, even on failure (trap).
#
#   test-net.sh FORGEYARD FY-NETPROBE ECHO-SERVER.PY [TEST-NET-API]
set -u
FY=$1 PROBE=$2 ECHO=$3 API=${4:-}
if [ "$(id -u)" != 0 ]; then echo "SKIP: network mode restricted needs root"; exit 77; fi
command -v nft >/dev/null || { echo "SKIP: nft missing (apt install nftables)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

NS=fyt-net-$$-$RANDOM
. "$(dirname "$0")/lib.sh"
net_init fy-net
net_fake_internet "$NS" "$ECHO"

# What the host has before: nothing of it may change. (Only what could be
# ours is compared, links and routes of the library's names and subnets:
# other programs on a shared host may add their own meanwhile.)
host_state() {
    ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(fy[0-9a-f]{8}|sb|up)$' | sort
    nft list ruleset 2>&1
    cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding
    ip route show table all 2>/dev/null | grep -E '100\.(64|127)\.|fd66:7973|dev fy[0-9a-f]{8}' | sort
    ip -6 route show table all 2>/dev/null | grep -E 'fd66:7973|dev fy[0-9a-f]{8}' | sort
}
host_state >"$TMP/host.before"
uplink_state() { net_ns_state "$NS"; }
uplink_state >"$TMP/uplink.before"
nothing_left() {
    host_state >"$TMP/host.after"
    uplink_state >"$TMP/uplink.after"
    nothing_left_cmp "$1" "the host" "$TMP/host.before" "$TMP/host.after" &&
        nothing_left_cmp "$1" "the uplink namespace" "$TMP/uplink.before" "$TMP/uplink.after" &&
        ok "$1: nothing left (no veth, route, address, namespace or rule; host unchanged)"
}

mkdir "$TMP/probe" && cp "$PROBE" "$TMP/probe/fy-netprobe" && chmod 755 "$TMP" "$TMP/probe"
run() {
    timeout 120 "$FY" run --profile standard-ci --network restricted --network-uplink "/run/netns/$NS" \
        --bind-ro "$TMP/probe:/opt/fyprobe" "$@"
}

# 0. The first attempt on an uplink nobody used yet, whose first packet is a
#    single UDP datagram (no retransmission to hide a loss): answered. (On a
#    fresh uplink the router's end ran only up to a second after it was up,
#    before the library asked the kernel to settle it: lnl_links_running.
#    This kernel transmitted meanwhile, so this check passed then too; it
#    keeps the first packet's delivery checked, whatever the kernel.)
run --allow 198.51.100.1:9090/udp -- /opt/fyprobe/fy-netprobe udp 198.51.100.1 9090 >"$TMP/out" 2>&1 &&
    ok "a fresh uplink's first attempt: its first datagram is answered" ||
    { bad "a fresh uplink's first attempt lost its first datagram"; cat "$TMP/out"; }

# 1. One sandbox, every probe: the allowed tuples answer, nothing else does.
net_probes "$TMP/probe/probes.sh" 't router-itself tcp 100.64.0.1 8080' 't router6-itself tcp fd66:7973::1 8080' \
    't gateway-itself tcp $(ip -4 route show default | cut -d" " -f3) 8080' \
    't gateway6-itself tcp $(ip -6 route show default | cut -d" " -f3) 8080' 't loopback-allowed loopback 8080' 't loopback-landlock loopback 7070' \
    't loopback-landlock-mptcp loopback 7070 mptcp' 't loopback-landlock-tfo loopback 7070 tfo' \
    't loopback-allowed-tfo-refused loopback 8080 tfo'
# (198.51.100.2:9090 is allowed so that Landlock, which only knows ports,
# lets TCP to port 9090 through: the router alone must stop the others.)
run --allow 198.51.100.1:8080 --allow 198.51.100.1:9090/udp --allow '[2001:db8::1]:8080' \
    --allow 198.51.100.2:9090 -- /bin/sh /opt/fyprobe/probes.sh >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 0 ] || { bad "probe sandbox exited $rc"; cat "$TMP/err"; }
while read -r name res; do
    case $name in
    *-allowed) [ "$res" = 0 ] && ok "$name answers" || { bad "$name: no answer (rc $res)"; grep "^$name:" "$TMP/err"; };;
    *) [ "$res" = 1 ] && ok "$name blocked" || bad "$name: expected blocked, got rc $res";;
    esac
done <"$TMP/out"
[ "$(wc -l <"$TMP/out")" = 22 ] || bad "expected 22 probe results, got $(wc -l <"$TMP/out")"
nothing_left "probe sandbox"

# 1b. The host's loopback stays out of reach (a listener of this test on
#     the host's 127.0.0.1, allowed port or not: the sandbox's 127.0.0.1 is
#     its own).
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(30)
try:
    s.accept(); open(sys.argv[1] + ".hit", "w").write("x")
except OSError:
    pass
' "$TMP/hostport" &
HL=$!
for _ in $(seq 50); do [ -s "$TMP/hostport" ] && break; sleep 0.1; done
hp=$(cat "$TMP/hostport")
run --allow "198.51.100.1:$hp" -- /opt/fyprobe/fy-netprobe tcp 127.0.0.1 "$hp" >/dev/null 2>&1
st=$?
kill $HL 2>/dev/null; wait $HL 2>/dev/null
[ $st = 1 ] && [ ! -e "$TMP/hostport.hit" ] && ok "the host's loopback is out of reach" ||
    bad "the host's loopback listener was reached (status $st)"
# Even with the loopback allowed by name: the sandbox's 127.0.0.1 is its own.
python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20)
try:
    c, _ = s.accept(); open(sys.argv[1] + ".hit", "w").write("hit")
except OSError:
    pass' "$TMP/hostport2" &
HL=$!
for _ in $(seq 50); do [ -s "$TMP/hostport2" ] && break; sleep 0.1; done
hp2=$(cat "$TMP/hostport2")
run --allow "127.0.0.1:$hp2" -- /opt/fyprobe/fy-netprobe tcp 127.0.0.1 "$hp2" >/dev/null 2>&1
st=$?
kill $HL 2>/dev/null; wait $HL 2>/dev/null
[ $st = 1 ] && [ ! -e "$TMP/hostport2.hit" ] && ok "an allowed 127.0.0.1 still never reaches the host's loopback" ||
    bad "an allowed 127.0.0.1 reached the host's loopback listener (status $st)"
# ... and so are the host's abstract unix sockets.
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind("\0" + sys.argv[1]); s.listen(4)
open(sys.argv[2], "w").write("ready")
s.settimeout(30)
try:
    s.accept(); open(sys.argv[2] + ".hit", "w").write("x")
except OSError:
    pass
' "fy-net-test-$$" "$TMP/abstract" &
HL=$!
for _ in $(seq 50); do [ -s "$TMP/abstract" ] && break; sleep 0.1; done
run --allow 198.51.100.1:8080 -- /opt/fyprobe/fy-netprobe abstract "fy-net-test-$$" >/dev/null 2>&1
st=$?
kill $HL 2>/dev/null; wait $HL 2>/dev/null
[ $st = 1 ] && [ ! -e "$TMP/abstract.hit" ] && ok "the host's abstract unix sockets are out of reach" ||
    bad "the host's abstract socket was reached (status $st)"

# 2. A workload that tries to rewrite its namespace's addresses and routes
#    reaches nothing more (as root the namespace is the host's: 2b).
cat >"$TMP/probe/rewire.sh" <<'IN'
P=/opt/fyprobe/fy-netprobe
for ip in /sbin/ip /usr/sbin/ip /bin/ip /usr/bin/ip; do [ -x $ip ] && break; done
$ip addr add 198.51.100.50/24 dev eth0 2>/dev/null
$ip addr add 100.64.0.2/32 dev lo 2>/dev/null
$ip route add 198.51.100.0/24 dev eth0 2>/dev/null
$ip route replace default dev eth0 2>/dev/null
"$P" tcp 198.51.100.1 9090 >/dev/null 2>&1; echo "tcp-other-port $?"
"$P" tcp 198.51.100.2 8080 >/dev/null 2>&1; echo "tcp-other-addr $?"
"$P" tcp 198.51.100.1 8080 >/dev/null 2>&1; echo "tcp-allowed $?"
IN
run --allow 198.51.100.1:8080 --allow 198.51.100.2:9090 -- /bin/sh /opt/fyprobe/rewire.sh >"$TMP/out" 2>"$TMP/err"
grep -q "^tcp-other-port 1$" "$TMP/out" && grep -q "^tcp-other-addr 1$" "$TMP/out" &&
    ok "rewired sandbox: still blocked" || { bad "rewired sandbox reached more"; cat "$TMP/out" "$TMP/err"; }
nothing_left "rewired sandbox"

# 2b. The sandbox's namespace is the host's (its user namespace owns it),
#     and holds the rules: the workload can change nothing of it, and
#     what it sends from any address but its own is dropped.
#     (i) Every change refused: addresses, routes, links, rules, raw and
#     packet sockets; the allowed tuple still answers, nothing else.
#     (ii) A source of its choosing needs no privilege (IP_FREEBIND): such
#     datagrams to an allowed UDP tuple never arrive, its own do.
#     (iii) With the host's full privilege inside that namespace (this
#     test, root, through nsenter): ICMP echo to an allowed address is
#     dropped by the rules, and so is UDP from an address added to eth0.
cat >"$TMP/probe/owned.py" <<'IN'
import os, socket, subprocess, sys, time
P = "/opt/fyprobe/fy-netprobe"
def probe(*a):
    return subprocess.run([P] + list(a), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
ip = next(p for p in ("/sbin/ip", "/usr/sbin/ip", "/bin/ip", "/usr/bin/ip") if os.path.exists(p))
nft = next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.path.exists(p)), None)
changes = [[ip, "addr", "add", "198.51.100.50/24", "dev", "eth0"], [ip, "route", "replace", "default", "dev", "eth0"],
           [ip, "link", "set", "eth0", "down"], [ip, "link", "add", "x0", "type", "dummy"]]
if nft:
    changes += [[nft, "flush", "ruleset"], [nft, "list", "ruleset"]]
for c in changes:
    r = subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    print("change", " ".join(c[1:]), "refused" if r != 0 else "DONE")
for name, fam, typ, proto in (("raw4", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                              ("raw6", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
                              ("packet", socket.AF_PACKET, socket.SOCK_RAW, 0)):
    try:
        socket.socket(fam, typ, proto).close()
        print("socket", name, "OPENED")
    except OSError:
        print("socket", name, "refused")
print("allowed", probe("tcp", "198.51.100.1", "8080"))
print("tcp-other-port", probe("tcp", "198.51.100.1", "9090"))
print("tcp-other-addr", probe("tcp", "198.51.100.2", "8080"))
print("udp-other", probe("udp", "198.51.100.1", "9090"))
print("tcp6-other", probe("tcp", "2001:db8::1", "9090"))
# Its own addresses (the source a connected socket gets), then others.
own = {}
for fam, dst in ((socket.AF_INET, "198.51.100.2"), (socket.AF_INET6, "2001:db8::2")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((dst, 9090))
    own[fam] = s.getsockname()[0]
    s.close()
def link_neighbour4(a):  # the uplink's side of its /30
    b = bytearray(socket.inet_pton(socket.AF_INET, a)); b[3] ^= 3
    return socket.inet_ntop(socket.AF_INET, bytes(b))
sends = ((socket.AF_INET, own[socket.AF_INET], "own4", "198.51.100.2"),
         (socket.AF_INET6, own[socket.AF_INET6], "own6", "2001:db8::2"),
         (socket.AF_INET, "198.51.100.77", "spoof4-internet", "198.51.100.2"),
         (socket.AF_INET, link_neighbour4(own[socket.AF_INET]), "spoof4-link", "198.51.100.2"),
         (socket.AF_INET, "100.127.200.9", "spoof4-subnet", "198.51.100.2"),
         (socket.AF_INET6, "2001:db8::77", "spoof6-internet", "2001:db8::2"))
for fam, src, mark, dst in sends:
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP if fam == socket.AF_INET else socket.IPPROTO_IPV6, 15 if fam == socket.AF_INET else 78, 1)
    try:
        s.bind((src, 0))
        for _ in range(3):
            s.sendto(("mark:" + mark).encode(), (dst, 9090))
        print("sent", mark)
    except PermissionError:
        print("sent", mark, "dropped")  # (the rules drop a locally made packet with EPERM)
    except OSError as e:
        print("sent", mark, "refused", e.errno)
    s.close()
print("phase1", flush=True)
for _ in range(300):
    if os.path.exists("/opt/fyprobe/go"):
        break
    time.sleep(0.1)
IN
rm -f "$TMP/probe/go"
run --allow 198.51.100.1:8080 --allow 198.51.100.2:9090 --allow 198.51.100.2:9090/udp \
    --allow '[2001:db8::2]:9090/udp' -- python3 /opt/fyprobe/owned.py >"$TMP/out" 2>"$TMP/err" &
owner=$!
for _ in $(seq 300); do grep -q phase1 "$TMP/out" && break; sleep 0.1; done
wl=$(pgrep -f "^python3 /opt/fyprobe/owned.py" | head -1)
: >"$TMP/nsenter.err" >"$TMP/icmp.out"
if [ -n "$wl" ]; then
    nsenter -t "$wl" -n sh -c "
        '$TMP/probe/fy-netprobe' icmp 198.51.100.1 >/dev/null 2>&1; echo icmp4 \$?
        '$TMP/probe/fy-netprobe' icmp 2001:db8::1 >/dev/null 2>&1; echo icmp6 \$?" >"$TMP/icmp.out" 2>>"$TMP/nsenter.err"
    nsenter -t "$wl" -n sh -c "ip addr add 198.51.100.78/32 dev eth0 && ip -6 addr add 2001:db8::78/128 dev eth0 nodad" \
        2>>"$TMP/nsenter.err"
    # (A send the rules drop fails with EPERM: a locally made packet.)
    nsenter -t "$wl" -n python3 -c '
import socket
for fam, src, dst in ((socket.AF_INET, "198.51.100.78", "198.51.100.2"), (socket.AF_INET6, "2001:db8::78", "2001:db8::2")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((src, 0))
    for _ in range(3):
        try:
            s.sendto(("mark:spoof-privileged-" + src).encode(), (dst, 9090))
        except PermissionError:
            pass
' 2>>"$TMP/nsenter.err"
fi
ip netns exec "$NS" "$TMP/probe/fy-netprobe" icmp 198.51.100.1 >/dev/null 2>&1 && echo "control4 0" >>"$TMP/icmp.out"
touch "$TMP/probe/go"
wait $owner
refusals=$(grep -c "refused$" "$TMP/out")
if [ -s "$TMP/nsenter.err" ] || [ -z "$wl" ]; then
    bad "could not enter the sandbox's namespace (pid '$wl'): $(cat "$TMP/nsenter.err")"
elif ! grep -q "DONE\|OPENED" "$TMP/out" && [ "$refusals" -ge 7 ] && grep -q "^allowed 0$" "$TMP/out" &&
    grep -q "^tcp-other-port 1$" "$TMP/out" && grep -q "^tcp-other-addr 1$" "$TMP/out" &&
    grep -q "^udp-other 1$" "$TMP/out" && grep -q "^tcp6-other 1$" "$TMP/out"; then
    ok "the workload can change nothing of its network namespace (addresses, routes, links, rules, raw and packet sockets refused)"
else
    bad "the workload's own namespace"; cat "$TMP/out" "$TMP/err"
fi
grep -qx "icmp4 1" "$TMP/icmp.out" && grep -qx "icmp6 1" "$TMP/icmp.out" && grep -qx "control4 0" "$TMP/icmp.out" &&
    ok "ICMP echo with the host's privilege in the sandbox's namespace is dropped by its rules (IPv4, IPv6)" ||
    bad "privileged ICMP: $(tr '\n' ' ' <"$TMP/icmp.out")"
for _ in $(seq 30); do grep -q "mark:own6 " "$TMP/server.log" && break; sleep 0.1; done
if grep -q "mark:own4 from" "$TMP/server.log" && grep -q "mark:own6 from" "$TMP/server.log" &&
    ! grep -q "mark:spoof" "$TMP/server.log" && [ "$(grep -c '^sent spoof' "$TMP/out")" = 4 ]; then
    ok "UDP from the sandbox's own addresses arrives; from any other source (IP_FREEBIND; an address added with privilege; IPv4, IPv6) it is dropped"
else
    bad "spoofed UDP: $(grep 'mark:' "$TMP/server.log") / $(grep '^sent' "$TMP/out")"
fi
nothing_left "the namespace the workload cannot change"

# 2b. An IPv6 routing header, which a socket may carry without privilege
#     (segment routing, type 4): the packet's destination is its first
#     segment, an allowed address, its last segment a refused one. The
#     allowed host routes segments here (seg6 on in the fake internet's own
#     namespace), so only the rules keep the datagram from the last one.
for c in all default lo; do ip netns exec "$NS" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$c/seg6_enabled"; done
cat >"$TMP/probe/srh.py" <<'IN'
import socket, struct
a6 = lambda a: socket.inet_pton(socket.AF_INET6, a)
# next header, length (8-octet units after the first 8), type 4, segments left 1, last entry 1;
# segments[0] is the final destination, segments[1] the first hop
srh = struct.pack("!BBBBBBH", 0, 4, 4, 1, 1, 0, 0) + a6("2001:db8::2") + a6("2001:db8::1")
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try:
    s.setsockopt(socket.IPPROTO_IPV6, 57, srh)  # IPV6_RTHDR
    print("rthdr set")
except OSError as e:
    print("rthdr refused", e.errno)
s.connect(("2001:db8::2", 9090))
for _ in range(3):
    try:
        s.send(b"mark:srh-udp")
    except OSError as e:
        print("send", e.errno)
plain = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
plain.connect(("2001:db8::1", 9090))
plain.send(b"mark:srh-control")
IN
run --allow '[2001:db8::1]:9090/udp' -- python3 /opt/fyprobe/srh.py >"$TMP/out" 2>&1
for _ in $(seq 30); do grep -q "mark:srh-control " "$TMP/server.log" && break; sleep 0.1; done
sleep 0.5
if grep -q "mark:srh-control from" "$TMP/server.log" && ! grep -q "mark:srh-udp" "$TMP/server.log"; then
    ok "an IPv6 routing header whose first segment is allowed reaches nothing ($(head -1 "$TMP/out"))"
else
    bad "IPv6 routing header: $(grep 'mark:srh' "$TMP/server.log") / $(cat "$TMP/out")"
fi
nothing_left "the routing header"

# 2c. A loopback destination out of the link: a flow to 127.0.0.1 made
#     established over the sandbox's own loopback, then the same socket
#     bound to eth0 (no privilege), and a loopback rule of the policy. The
#     uplink here has route_localnet=1 (kube-proxy sets it on nodes), so
#     what left would reach its loopback services.
ip netns exec "$NS" sh -c 'echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet'
: >"$TMP/lo.log"
ip netns exec "$NS" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 9191))
open(sys.argv[2], "w").write("ready\n")
s.settimeout(20)
try:
    while True:
        d, a = s.recvfrom(100)
        open(sys.argv[1], "a").write("%s from %s\n" % (d.decode(errors="replace"), a[0]))
except OSError:
    pass
' "$TMP/lo.log" "$TMP/lo.ready" &
lo_listener=$!
# (bound before anything is sent: a loaded host started Python in more than
# the 0.3 s this once slept, and the control's datagram found no socket)
for _ in $(seq 100); do [ -s "$TMP/lo.ready" ] && break; sleep 0.1; done
run --allow 198.51.100.1:8080 --allow 127.0.0.1:9191/udp -- /opt/fyprobe/fy-netprobe lo-link 9191 >"$TMP/out" 2>&1
rc=$?
ip netns exec "$NS" "$TMP/probe/fy-netprobe" udp 127.0.0.1 9191 >/dev/null 2>&1 # (the listener's own control)
sleep 0.5
kill $lo_listener 2>/dev/null; wait $lo_listener 2>/dev/null
ip netns exec "$NS" sh -c 'echo 0 > /proc/sys/net/ipv4/conf/all/route_localnet'
if [ $rc = 0 ] && [ "$(grep -c '^refused' "$TMP/out")" = 2 ] && ! grep -q "mark:lo-link" "$TMP/lo.log" &&
    grep -q "hi" "$TMP/lo.log"; then
    ok "a loopback destination never leaves on the link (a flow established over the loopback, a loopback rule)"
else
    bad "loopback destination out of eth0 (rc $rc): $(tr '\n' ' ' <"$TMP/out") / uplink loopback got: $(tr '\n' ' ' <"$TMP/lo.log")"
fi
nothing_left "the loopback destination"

# 3. Names: resolved at prepare through the host program's hosts file, in
#    the sandbox's /etc/hosts; the only resolver inside is the attempt's
#    stub (127.0.0.53), which answers the allowed name and refuses others.
printf '198.51.100.1 echo.fake.test\n198.51.100.2 other.fake.test\n' >"$TMP/hosts"
cat >"$TMP/probe/names.sh" <<'IN'
P=/opt/fyprobe/fy-netprobe
echo "resolve $("$P" resolve echo.fake.test)"
"$P" resolve other.fake.test >/dev/null 2>&1; echo "other $?"
grep nameserver /etc/resolv.conf
"$P" tcp 198.51.100.1 8080 >/dev/null 2>&1; echo "tcp $?"
echo "stub $("$P" dnsq 127.0.0.53 echo.fake.test 1)"
echo "stub-other $("$P" dnsq 127.0.0.53 other.fake.test 1)"
IN
run --network-hosts "$TMP/hosts" --allow echo.fake.test:8080 --result "$TMP/names.json" -- /bin/sh /opt/fyprobe/names.sh >"$TMP/out" 2>"$TMP/err"
if grep -q "^resolve 198.51.100.1$" "$TMP/out" && grep -q "^other 1$" "$TMP/out" &&
    [ "$(grep -c nameserver "$TMP/out")" = 1 ] && grep -qx "nameserver 127.0.0.53" "$TMP/out" &&
    grep -q "^tcp 0$" "$TMP/out" && grep -qx "stub rcode=0 an=1 198.51.100.1" "$TMP/out" &&
    grep -qx "stub-other rcode=5 an=0" "$TMP/out"; then
    ok "names: the allowed one resolves in the sandbox (hosts file, stub), others do not (stub: REFUSED)"
else
    bad "names"; cat "$TMP/out" "$TMP/err"
fi
# The stub starts on the first query: the attempt above queried it (both
# queries recorded); one that resolves nothing starts no stub at all.
run --network-hosts "$TMP/hosts" --allow echo.fake.test:8080 --result "$TMP/nodns.json" -- /bin/true
if python3 - "$TMP/names.json" "$TMP/nodns.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["network"]["dns"]
assert d["started"] is True and d["start"] == "on the first query" and d["ended"] is True, d
hosts = [q["host"] for q in d["queries"]]
assert "echo.fake.test" in hosts and "other.fake.test" in hosts, d["queries"]
n = json.load(open(sys.argv[2]))["network"]
assert n["dns"]["started"] is False and n["dns"]["queries"] == [] and "pid" not in n["dns"], n["dns"]
assert "error" not in n["dns"], n["dns"]
PY
then
    ok "the DNS stub starts on the first query (answered, recorded); an attempt with none starts no stub"
else
    bad "stub on demand"; cat "$TMP/names.json"; echo; cat "$TMP/nodns.json"
fi
nothing_left "stub on demand"
# A flood of refused names (a workload trying to tunnel data out through
# DNS) never hides an allowed lookup from the record: refusals keep at most
# 768 of the 1,024 records.
cat >"$TMP/probe/flood.py" <<'IN'
import socket, struct
def q(name, i):
    return struct.pack("!HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for i in range(900):
    s.sendto(q("x%d.exfil.test" % i, i), ("127.0.0.53", 53))
    try:
        s.recv(512)
    except OSError:
        pass
s.sendto(q("echo.fake.test", 999), ("127.0.0.53", 53))
print("allowed", len(s.recv(512)) > 12)
IN
run --network-hosts "$TMP/hosts" --allow echo.fake.test:8080 --result "$TMP/flood.json" -- python3 /opt/fyprobe/flood.py >"$TMP/out" 2>"$TMP/err"
if grep -qx "allowed True" "$TMP/out" && python3 - "$TMP/flood.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["network"]["dns"]
qs = d["queries"]
assert any(q["host"] == "echo.fake.test" and q["decision"] == "allowed" for q in qs), len(qs)
assert sum(1 for q in qs if q["decision"] == "refused") == 768 and d["queries_dropped"] == 900 - 768, (len(qs), d["queries_dropped"])
assert d["queries_dropped_allowed"] == 0, d
PY
then
    ok "a flood of 900 refused names keeps 768 records; the allowed lookup after it is recorded"
else
    bad "DNS flood record"; cat "$TMP/out" "$TMP/err"
fi
# UDP only: Landlock refuses every TCP connect (the loopback too); UDP goes.
run --allow 198.51.100.1:9090/udp -- /bin/sh -c '/opt/fyprobe/fy-netprobe udp 198.51.100.1 9090 >/dev/null; echo "udp $?";
    /opt/fyprobe/fy-netprobe loopback 8080 >/dev/null; echo "loopback $?"' >"$TMP/out" 2>"$TMP/err"
grep -q "^udp 0$" "$TMP/out" && grep -q "^loopback 1$" "$TMP/out" && ok "UDP-only plan: UDP answers, no TCP connect" ||
    { bad "UDP-only plan"; cat "$TMP/out" "$TMP/err"; }
# The resolved rules are in the evidence (describe, contract id).
run --network-hosts "$TMP/hosts" --allow echo.fake.test:8080 --result "$TMP/result.json" -- /bin/true
grep -q '198.51.100.1/32 tcp 8080-8080' "$TMP/result.json" && ok "evidence names the resolved rule" ||
    { bad "evidence lacks the rule"; head -c 2000 "$TMP/result.json"; }
# The same policy whose name resolves elsewhere is another contract.
printf '198.51.100.2 echo.fake.test\n' >"$TMP/hosts2"
run --network-hosts "$TMP/hosts2" --allow echo.fake.test:8080 --result "$TMP/result2.json" -- /bin/true
run --network-hosts "$TMP/hosts" --allow echo.fake.test:8080 --result "$TMP/result3.json" -- /bin/true
cid() { grep -o '"contract_id": *"[0-9a-f]*"' "$1"; }
if [ -n "$(cid "$TMP/result.json")" ] && [ "$(cid "$TMP/result.json")" != "$(cid "$TMP/result2.json")" ] &&
    [ "$(cid "$TMP/result.json")" = "$(cid "$TMP/result3.json")" ]; then
    ok "the contract id follows the resolved rules"
else
    bad "contract ids: $(cid "$TMP/result.json") / $(cid "$TMP/result2.json") / $(cid "$TMP/result3.json")"
fi
grep -q '"network_left": *0' "$TMP/result.json" && ok "the cleanup witness counts no network object left" ||
    { bad "no network_left 0 in the result"; grep -o '"cleanup":{[^}]*}' "$TMP/result.json"; }
grep -q 'connect(2) over TCP only to the allowed ports' "$TMP/result.json" && ok "evidence reports the Landlock TCP layer" ||
    echo "note: no Landlock TCP layer reported (kernel without Landlock ABI 4?)"

# 4. Bad input: each refused before anything runs, typed, named.
expect_refused() { # what, status, message part, options...
    local what=$1 want=$2 msg=$3; shift 3
    run "$@" -- /bin/true >/dev/null 2>"$TMP/err"
    local st=$?
    if [ "$st" = "$want" ] && grep -q -- "$msg" "$TMP/err"; then ok "$what refused ($st)"
    else bad "$what: status $st, wanted $want with \"$msg\""; cat "$TMP/err"; fi
}
expect_refused "port 0" 246 "ports must be within" --allow 198.51.100.1:0
expect_refused "0.0.0.0/0" 246 "matches every address" --allow 0.0.0.0/0:80
expect_refused "::/0" 246 "matches every address" --allow '[::/0]:80'
# An address of one of the host's own interfaces is refused; loopback is not
# the host's from inside (see above: allowing it reaches only the sandbox's own).
hostaddr=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
if [ -n "$hostaddr" ]; then
    expect_refused "the host's own address" 246 "an address of this host" --allow "$hostaddr:80"
fi
expect_refused "an unresolvable name" 246 "does not resolve" --network-hosts "$TMP/hosts" --allow nosuch.fake.test:80
expect_refused "the router's link subnet" 246 "overlaps the sandbox's links" --allow 100.127.0.0/24:80
expect_refused "the IPv6 links" 246 "overlaps the sandbox's IPv6 links" --allow '[fd66:7973:1::/48]:80'
expect_refused "the broadcast address" 246 "whoever listens on the link" --allow 255.255.255.255:5399/udp
expect_refused "an IPv4 multicast group" 246 "IPv4 multicast" --allow 224.0.0.1:5399/udp
expect_refused "a block covering multicast" 246 "IPv4 multicast" --allow 224.0.0.0/3:80
expect_refused "an IPv6 multicast group" 246 "IPv6 multicast" --allow '[ff02::1]:5399/udp'
# Addresses the uplink delivers to itself other than its interfaces' own,
# in an uplink namespace of the test's own (not the host's: the core check
# there would refuse them for another reason): a veth with 198.19.251.1/24
# (broadcast 198.19.251.255) and 2001:db8:77:1::5/64 with IPv6 forwarding
# on (the kernel adds the subnet-router anycast 2001:db8:77:1::), and AnyIP
# routes (local 198.19.252.0/24 and 2001:db8:99::/64 on lo). A datagram to
# any of them is delivered to the uplink's wildcard-bound services. As the
# named uplink (--network-uplink) its broadcast and anycast entries are
# refused at prepare, naming the local table's entry (its own addresses are
# a network of the host's choosing, as the fake internet's are); as the
# caller's own namespace (forgeyard run in it, the default uplink: "the
# host") its AnyIP blocks too, under restricted and fetch-only. Loopback
# entries are not refused (explicit loopback rules stay allowed), nor an
# address merely on the veth's subnet.
local_routes_checks() {
    LNS=$NS-local
    net_netns "$LNS"
    ip netns exec "$LNS" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/forwarding' &&
        ip -n "$LNS" link add fyb0 type veth peer name fyb1 &&
        ip -n "$LNS" addr add 198.19.251.1/24 brd + dev fyb0 &&
        ip -n "$LNS" addr add 2001:db8:77:1::5/64 dev fyb0 nodad &&
        ip -n "$LNS" link set fyb0 up && ip -n "$LNS" link set fyb1 up &&
        ip -n "$LNS" route add local 198.19.252.0/24 dev lo &&
        ip -n "$LNS" -6 route add local 2001:db8:99::/64 dev lo || bad "setting up the local-routes uplink"
    for _ in $(seq 50); do
        ip -n "$LNS" -6 route show table local | grep -q '^anycast 2001:db8:77:1:: ' && break
        sleep 0.1
    done
    ip -n "$LNS" -6 route show table local | grep -q '^anycast 2001:db8:77:1:: ' ||
        { bad "no anycast route for 2001:db8:77:1::/64"; ip -n "$LNS" -6 route show table local; }
    expect_local() { # what, message part, how (uplink: named; in: run in it), mode, options...
        local what=$1 msg=$2 how=$3 mode=$4; shift 4
        if [ "$how" = uplink ]; then
            timeout 60 "$FY" run --profile standard-ci --network "$mode" --network-uplink "/run/netns/$LNS" "$@" \
                -- /bin/true >/dev/null 2>"$TMP/err"
        else
            timeout 60 ip netns exec "$LNS" "$FY" run --profile standard-ci --network "$mode" "$@" \
                -- /bin/true >/dev/null 2>"$TMP/err"
        fi
        local st=$?
        if [ "$st" = 246 ] && grep -q -- "$msg" "$TMP/err" && grep -q 'destinations\[0\].host' "$TMP/err"; then
            ok "$mode ($how): $what refused ($st)"
        else bad "$mode ($how): $what: status $st, wanted 246 with \"$msg\""; cat "$TMP/err"; fi
    }
    local u="which the uplink /run/netns/$LNS delivers to itself" h="which the uplink (the host's network namespace)"
    expect_local "the uplink's broadcast address" "covers 198.19.251.255/32, $u (broadcast route" uplink \
        restricted --allow 198.19.251.255:514/udp
    expect_local "a block over the uplink's broadcast address" "covers 198.19.251.255/32, $u (broadcast route" \
        uplink restricted --allow 198.19.251.128/25:514/udp
    expect_local "the uplink's subnet-router anycast address" "covers 2001:db8:77:1::/128, $u (anycast route" \
        uplink restricted --allow '[2001:db8:77:1::/112]:514/udp'
    expect_local "an address of the host's AnyIP block" "covers 198.19.252.0/24, $h delivers to itself (local route" \
        in restricted --allow 198.19.252.7:80
    expect_local "an IPv6 address of the host's AnyIP block" "covers 2001:db8:99::/64, $h delivers to itself (local" \
        in restricted --allow '[2001:db8:99::7]:80'
    expect_local "an address of the host's AnyIP block" "covers 198.19.252.0/24, $h delivers to itself (local route" \
        in fetch-only --allow 198.19.252.7:80
    expect_local "the host's broadcast address" "covers 198.19.251.255, the broadcast address of this host's fyb0" \
        in fetch-only --allow 198.19.251.255:80
    expect_local "an IPv4-mapped address of the host's AnyIP block" "covers 198.19.252.0/24, $h delivers to itself" \
        in fetch-only --allow '[::ffff:198.19.252.7]:80'
    timeout 60 "$FY" run --profile standard-ci --network restricted --network-uplink "/run/netns/$LNS" \
        --allow 198.19.251.77:514/udp --allow '[2001:db8:77:1::77]:514/udp' --allow 127.0.0.1:80 --allow '[::1]:80' \
        -- /bin/true >/dev/null 2>"$TMP/err" && ok "the uplink's other neighbours and loopback stay allowed" ||
        { bad "the uplink's neighbours or loopback refused"; cat "$TMP/err"; }
}
# (on a host that has one of these addresses itself the core check would
# refuse them first, for the host's own: not what this checks)
if ip -o addr show | grep -qE ' (198\.19\.25[12]\.|2001:db8:77:1:|2001:db8:99:)'; then
    echo "note: this host has an address of 198.19.251-252.0/24, 2001:db8:77:1::/64 or 2001:db8:99::/64:" \
        "the uplink's local routes are not checked"
else
    local_routes_checks
fi
many=()
for i in $(seq 1 1030); do many+=(--allow "198.51.$((i / 250)).$((i % 250 + 1)):80"); done
expect_refused "1,030 destinations" 246 "network.destinations" "${many[@]}"
# An uplink that is no network namespace, for both modes that have one: a
# FIFO is never opened waiting for a writer (the timeout here bounds it),
# a plain file is refused as what it is.
mkfifo "$TMP/uplink.fifo" && echo x >"$TMP/uplink.file"
for u in fifo file; do
    for mode in restricted fetch-only; do
        timeout 30 "$FY" run --profile standard-ci --network $mode --network-uplink "$TMP/uplink.$u" \
            --allow 198.51.100.1:8080 -- /bin/true >/dev/null 2>"$TMP/err"
        st=$?
        if [ "$st" = 246 ] && grep -q "not a network namespace" "$TMP/err" && ! grep -q "probed the host again" "$TMP/err"; then
            ok "$mode: an uplink that is a $u refused ($st)"
        else
            bad "$mode: an uplink that is a $u: status $st"; cat "$TMP/err"
        fi
    done
done
# fetch-only through the same uplink: the proxy joins it (as root) and
# tunnels to the fake internet's echo server; another address is refused
# by the proxy itself (test/net/test-fetch.sh covers the rest).
cat >"$TMP/probe/fetch.py" <<'IN'
import socket
def tunnel(host):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT %s:8080 HTTP/1.1\r\n\r\n" % host.encode())
    head = s.recv(200)
    if not head.startswith(b"HTTP/1.1 200"):
        return head.split(b"\r\n")[0].decode()
    s.sendall(b"ping")
    return s.recv(100).decode()
print("allowed", tunnel("198.51.100.1"))
print("other", tunnel("198.51.100.2"))
IN
timeout 60 "$FY" run --profile standard-ci --network fetch-only --allow 198.51.100.1:8080 \
    --network-uplink "/run/netns/$NS" --bind-ro "$TMP/probe:/opt/fyprobe" -- python3 /opt/fyprobe/fetch.py \
    >"$TMP/fetch.out" 2>&1
st=$?
[ $st = 0 ] && grep -qx "allowed echo:ping" "$TMP/fetch.out" && grep -qx "other HTTP/1.1 403 Forbidden" "$TMP/fetch.out" &&
    ok "fetch-only through the uplink: the allowed destination tunnels, another address is refused" ||
    { bad "fetch-only through the uplink: status $st"; cat "$TMP/fetch.out"; }
# Rootless with an uplink namespace: refused, never weaker (where uid 65534
# can run the program; rootless restricted itself, through pasta, is
# test-net-rootless.sh's).
if command -v setpriv >/dev/null && setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$FY" 2>/dev/null; then
    HOME=/tmp setpriv --reuid 65534 --regid 65534 --clear-groups timeout 60 "$FY" run --profile standard-ci \
        --network restricted --network-uplink "/run/netns/$NS" --allow 198.51.100.1:8080 -- /bin/true >/dev/null 2>"$TMP/err"
    st=$?
    [ $st = 247 ] && grep -q "needs root" "$TMP/err" && ok "rootless restricted with an uplink namespace refused as unsupported" ||
        { bad "rootless: status $st"; cat "$TMP/err"; }
else
    echo "note: uid 65534 cannot run $FY here; the rootless refusal is not checked"
fi
nothing_left "refusals"

# 5. A host process killed mid-attempt leaves nothing either: the router
#    namespace is held by its fd only, and the kernel removes it and its
#    veths (the uplink's end with them) when the process is gone.
"$FY" run --profile standard-ci --network restricted --network-uplink "/run/netns/$NS" \
    --allow 198.51.100.1:8080 -- /bin/sleep 60 >/dev/null 2>&1 &
host=$!
for _ in $(seq 100); do ip -n "$NS" -o link show | grep -q ': fy' && break; sleep 0.1; done
if ip -n "$NS" -o link show | grep -q ': fy'; then
    kill -9 $host
    wait $host 2>/dev/null
    for _ in $(seq 100); do ip -n "$NS" -o link show | grep -q ': fy' || break; sleep 0.1; done
    "$FY" gc >/dev/null 2>&1
    nothing_left "host killed mid-attempt"
else
    bad "the attempt's uplink veth never appeared"; kill -9 $host; wait $host 2>/dev/null
fi

# 6. Concurrent attempts on one uplink each get a link of their own.
pids=()
for i in $(seq 8); do
    run --allow 198.51.100.1:8080 -- /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 >"$TMP/par.$i" 2>&1 &
    pids+=($!)
done
okp=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" && okp=$((okp + 1)); done
[ $okp = 8 ] && ok "8 concurrent attempts reached the allowed destination" ||
    { bad "only $okp of 8 concurrent attempts got through"; cat "$TMP"/par.*; }
nothing_left "8 concurrent attempts"

# 7. Through the API: cancel, a forked copy, unusable uplinks.
if [ -n "$API" ]; then
    timeout 300 "$API" "/run/netns/$NS" "$TMP/probe" >"$TMP/api.out" 2>&1
    st=$?
    cat "$TMP/api.out"
    [ $st = 0 ] || bad "the API test failed ($st)"
    nothing_left "API attempts"
fi

# 8. Many attempts leave nothing.
N=${FY_NET_ATTEMPTS:-50}
okn=0
for i in $(seq "$N"); do
    run --allow 198.51.100.1:8080 -- /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 >/dev/null 2>&1 && okn=$((okn + 1))
done
[ $okn = "$N" ] && ok "$N attempts reached the allowed destination" || bad "only $okn of $N attempts got through"
nothing_left "$N attempts"

exit $fail
