#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Network mode restricted for an unprivileged runner (uid 65534) through
# the privileged helper (forgeyard-sandbox-helper(8) --net-uplink). The
# test, as root, makes a fake "internet" in a network namespace of its own
# (198.51.100.0/24 and 2001:db8::/32 on its loopback, TCP and UDP echo
# servers) and starts its own helper with that namespace as the uplink; the
# runner then runs sandboxes through it. No packet goes anywhere else. At
# the end nothing of any attempt is left in the uplink or the host, the
# helper holds no more descriptors than before (its router namespaces are
# gone), and hostile NET_CREATE requests (another uid's namespace, the
# host's, a file, none, two) were refused, typed, with nothing made. The
# VM's request (NET_TAP, protocol 4) is tested raw: its tap descriptor,
# frames through it against the rules, refusals, budget, removal, gc.
#
#   test-net-helper.sh FORGEYARD HELPER FY-NETPROBE ECHO-SERVER.PY TEST-JOBNET
set -u
FY=$1 HELPER=$2 PROBE=$3 ECHO=$4 API=$5 NETAPI=${6:-}
if [ "$(id -u)" != 0 ]; then echo "SKIP: the test starts the helper as root"; exit 77; fi
command -v nft >/dev/null || { echo "SKIP: nft missing (apt install nftables)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
command -v nsenter >/dev/null || { echo "SKIP: no nsenter"; exit 77; }

NS=fyt-neth-$$-$RANDOM
. "$(dirname "$0")/lib.sh"
net_init fy-net-helper
chmod 0755 "$TMP"
HPID=
# (The helper first: its router namespaces go before the uplink does.)
net_cleanup_extra() { [ -n "$HPID" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null; }
net_fake_internet "$NS" "$ECHO"
# The helper's uplink: a namespace of the test's that routes to the fake
# internet (203.0.113.0/30, 2001:db8:ff::/64 between them), not the fake
# internet itself: the helper refuses every tuple that covers an address
# its uplink delivers to itself (the uplink's own services), and the fake
# internet's addresses are NS's own. UPL's own address 203.0.113.1 (a
# service listens there) and its link's broadcast are such addresses.
UPL=fyt-nethu-$$-$RANDOM
net_netns "$UPL"
ip -n "$UPL" link add u0 type veth peer name u1 && ip -n "$UPL" link set u1 netns "$NS" || exit 1
ip -n "$UPL" addr add 203.0.113.1/30 dev u0 && ip -n "$NS" addr add 203.0.113.2/30 dev u1 || exit 1
ip -n "$UPL" addr add 2001:db8:ff::1/64 dev u0 nodad && ip -n "$NS" addr add 2001:db8:ff::2/64 dev u1 nodad || exit 1
# (their link-local addresses at once, without duplicate address detection:
# not later, changing the state compared before and after)
ip netns exec "$UPL" sh -c 'echo 0 >/proc/sys/net/ipv6/conf/u0/accept_dad' || exit 1
ip netns exec "$NS" sh -c 'echo 0 >/proc/sys/net/ipv6/conf/u1/accept_dad' || exit 1
ip -n "$UPL" link set u0 up && ip -n "$NS" link set u1 up || exit 1
ip -n "$UPL" route add default via 203.0.113.2 && ip -n "$UPL" -6 route add default via 2001:db8:ff::2 || exit 1
ip -n "$NS" route add 100.127.0.0/16 via 203.0.113.1 && ip -n "$NS" -6 route add fd66:7973:1::/48 via 2001:db8:ff::1 || exit 1
ip netns exec "$UPL" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward && echo 1 >/proc/sys/net/ipv6/conf/all/forwarding' || exit 1
net_bg ip netns exec "$UPL" timeout 600 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("203.0.113.1", 8080)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"the uplink itself\n"); c.close()'

host_state() {
    ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(fy[0-9a-f]{8}|sb|up)$' | sort
    cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding
    ip route show table all 2>/dev/null | grep -E '100\.(64|127)\.|fd66:7973|dev fy[0-9a-f]{8}' | sort
}
uplink_state() { net_ns_state "$UPL"; }
host_state >"$TMP/host.before"
uplink_state >"$TMP/uplink.before"

mkdir -m 0755 "$TMP/sock" "$TMP/probe" && cp "$PROBE" "$TMP/probe/fy-netprobe" && chmod 755 "$TMP/probe/fy-netprobe"
mkdir -m 0700 "$TMP/home" && chown 65534:65534 "$TMP/home" || exit 1
SOCK=$TMP/sock/helper.sock
"$HELPER" --socket "$SOCK" --allow 65534:4:256M:8192 --subtree "fyt-neth-$$" --net-uplink "/run/netns/$UPL" \
    --verbose 2>"$TMP/helper.log" &
HPID=$!
for _ in $(seq 300); do [ -S "$SOCK" ] && break; kill -0 $HPID 2>/dev/null || break; sleep 0.02; done
[ -S "$SOCK" ] || { echo "FAIL: the helper did not start"; cat "$TMP/helper.log"; exit 1; }
fds_before=$(ls /proc/$HPID/fd | wc -l)

as_runner() {
    setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME="$TMP/home" \
        FORGEYARD_CACHE_DIR="$TMP/home/cache" FORGEYARD_HELPER_SOCKET="$SOCK" "$@"
}
nothing_left() {
    host_state >"$TMP/host.after"
    uplink_state >"$TMP/uplink.after"
    # (a job's link deletions finish on a detached thread of the helper's,
    # which holds a socket and a namespace descriptor until then: bounded)
    local fds
    for _ in $(seq 30); do fds=$(ls /proc/$HPID/fd | wc -l); [ "$fds" = "$fds_before" ] && break; sleep 0.1; done
    if ! nothing_left_cmp "$1" "the host" "$TMP/host.before" "$TMP/host.after" ||
        ! nothing_left_cmp "$1" "the uplink namespace" "$TMP/uplink.before" "$TMP/uplink.after"; then
        :
    elif [ "$fds" != "$fds_before" ]; then
        bad "$1: the helper holds $fds descriptors, $fds_before before (a router namespace left?)"
        ls -l /proc/$HPID/fd
    else
        ok "$1: nothing left (uplink veth, routes, addresses; the helper's router namespace; host unchanged)"
    fi
}

# 0. The probe, as the runner: restricted networking through the helper.
caps=$(as_runner "$FY" capabilities --json --fresh) || bad "capabilities: $caps"
echo "$caps" | python3 -c '
import json, sys
c = json.load(sys.stdin)["capabilities"]["nftables"]
assert c["available"] and "through the privileged helper at " + sys.argv[1] in c["reason"], c
' "$SOCK" && ok "the probe offers nftables through the helper" || bad "probe: $caps"

run() {
    timeout 120 setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME="$TMP/home" \
        FORGEYARD_CACHE_DIR="$TMP/home/cache" FORGEYARD_HELPER_SOCKET="$SOCK" \
        "$FY" run --profile standard-ci --memory 128M --network restricted --bind-ro "$TMP/probe:/opt/fyprobe" "$@"
}

# 1. One sandbox, every probe: the allowed tuples answer, nothing else does.
net_probes "$TMP/probe/probes.sh" 't router-itself tcp 100.64.0.1 8080' 't router6-itself tcp fd66:7973::1 8080'
run --allow 198.51.100.1:8080 --allow 198.51.100.1:9090/udp --allow '[2001:db8::1]:8080' \
    --allow 198.51.100.2:9090 --result "$TMP/home/r.json" -- /bin/sh /opt/fyprobe/probes.sh >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 0 ] || { bad "probe sandbox exited $rc"; cat "$TMP/err"; }
while read -r name res; do
    case $name in
    *-allowed) [ "$res" = 0 ] && ok "$name answers" || { bad "$name: no answer (rc $res)"; grep "^$name:" "$TMP/err"; };;
    *) [ "$res" = 1 ] && ok "$name blocked" || bad "$name: expected blocked, got rc $res";;
    esac
done <"$TMP/out"
[ "$(wc -l <"$TMP/out")" = 15 ] || bad "expected 15 probe results, got $(wc -l <"$TMP/out")"
# The evidence says where the network control came from.
python3 - "$TMP/home/r.json" "$SOCK" "/run/netns/$UPL" <<'PY' && ok "the result names the helper and its uplink" || bad "result: $(cat "$TMP/home/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "succeeded", r["outcome"]
n = r["isolation"]["network"]
assert n["mode"] == "restricted", n
assert "privileged helper at " + sys.argv[2] in n["helper"], n
assert n["uplink"] == sys.argv[3], n
PY
nothing_left "probe sandbox"

# 2. A workload that rewrites its own namespace reaches nothing more: the
#    rules are in the helper's router, out of its reach.
cat >"$TMP/probe/rewire.sh" <<'IN'
P=/opt/fyprobe/fy-netprobe
for ip in /sbin/ip /usr/sbin/ip /bin/ip /usr/bin/ip; do [ -x $ip ] && break; done
$ip addr add 198.51.100.50/24 dev eth0 2>/dev/null
$ip route add 198.51.100.0/24 dev eth0 2>/dev/null
"$P" tcp 198.51.100.1 9090 >/dev/null 2>&1; echo "tcp-other-port $?"
"$P" tcp 198.51.100.2 8080 >/dev/null 2>&1; echo "tcp-other-addr $?"
IN
run --allow 198.51.100.1:8080 --allow 198.51.100.2:9090 -- /bin/sh /opt/fyprobe/rewire.sh >"$TMP/out" 2>"$TMP/err"
grep -q "^tcp-other-port 1$" "$TMP/out" && grep -q "^tcp-other-addr 1$" "$TMP/out" &&
    ok "rewired sandbox: still blocked" || { bad "rewired sandbox reached more"; cat "$TMP/out" "$TMP/err"; }
nothing_left "rewired sandbox"

# 3. An unprivileged caller cannot name another uplink (the operator's choice).
out=$(run --network-uplink "/run/netns/$NS" --allow 198.51.100.1:8080 -- /bin/true 2>&1); st=$?
[ $st = 247 ] && case $out in *"privileged helper"*"needs root"*) true;; *) false;; esac &&
    ok "another uplink is refused at prepare (247)" || bad "another uplink: status $st: $out"

# 4. The host process killed mid-run: the helper's gc removes the router
#    (its creator's pidfd), the uplink veth with it.
# (setpriv, env and forgeyard: one pid, exec after exec)
setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin HOME="$TMP/home" \
    FORGEYARD_CACHE_DIR="$TMP/home/cache" FORGEYARD_HELPER_SOCKET="$SOCK" "$FY" run --profile standard-ci \
    --memory 128M --network restricted --allow 198.51.100.1:8080 -- /bin/sleep 60 >/dev/null 2>&1 &
host=$!
for _ in $(seq 100); do ip -n "$UPL" -o link show | grep -q ' fy[0-9a-f]\{8\}@' && break; sleep 0.1; done
ip -n "$UPL" -o link show | grep -q ' fy[0-9a-f]\{8\}@' || bad "the attempt's uplink veth never appeared"
kill -KILL $host 2>/dev/null; wait $host 2>/dev/null
for _ in $(seq 60); do ip -n "$UPL" -o link show | grep -q ' fy[0-9a-f]\{8\}@' || break; sleep 0.1; done
sleep 0.3
nothing_left "host killed mid-run (the helper's gc)"

# 5. Hostile NET_CREATE requests, as the allowed uid: each refused with a
#    typed reply (bad-descriptor 15), nothing made, the helper still serves.
cat >"$TMP/hostile.py" <<'PY'
import os, socket, struct, sys
sock = sys.argv[1]
def msg(typ, payload, version=2):
    return struct.pack("<IHHII", 0x31485946, version, typ, len(payload), 0) + payload
def net_create(name=b"forgeyard-1-0123456789abcdef"):
    rule = struct.pack("<BBBHH", 4, 32, 6, 8080, 8080) + bytes([198, 51, 100, 1]) + bytes(12)
    return msg(4, struct.pack("<H", len(name)) + name + struct.pack("<H", 1) + rule)
def ask(data, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    socket.send_fds(s, [data], list(fds)) if fds else s.sendall(data)
    got = b""
    while True:
        b = s.recv(4096)
        if not b: break
        got += b
    s.close()
    magic, ver, typ, length, flags = struct.unpack("<IHHII", got[:16])
    if typ == 0x80ff:
        code, err = struct.unpack("<II", got[16:24])
        return code
    return typ
results = []
null = os.open("/dev/null", os.O_RDONLY)
host_ns = os.open("/proc/self/ns/net", os.O_RDONLY)   # the host's: not ours to configure
other = os.open(sys.argv[2], os.O_RDONLY)            # root's fake internet: another owner
results.append(("no descriptor", ask(net_create())))
results.append(("a file", ask(net_create(), [null])))
results.append(("the host's namespace", ask(net_create(), [host_ns])))
results.append(("root's namespace", ask(net_create(), [other])))
results.append(("two descriptors", ask(net_create(), [null, null])))
results.append(("a descriptor with HELLO", ask(msg(1, b""), [null])))
results.append(("version 1 NET_CREATE", ask(net_create()[:4] + b"\x01\x00" + net_create()[6:])))
bad = 0
for name, code in results:
    want = 5 if name == "version 1 NET_CREATE" else 15
    print(f"{name}: {code} (want {want})")
    bad |= code != want
print("hello after:", hex(ask(msg(1, b""))))
sys.exit(1 if bad or ask(msg(1, b"")) != 0x8001 else 0)
PY
as_runner python3 "$TMP/hostile.py" "$SOCK" "/run/netns/$UPL" >"$TMP/hostile.out" 2>&1 &&
    ok "hostile NET_CREATE requests refused (typed), the helper still serves" ||
    { bad "hostile requests"; cat "$TMP/hostile.out"; }
nothing_left "hostile requests"

# 5b. The raw protocol from a user namespace of the runner's own (unshare
#     -Urn): its own network namespaces are accepted (eth0 appears there
#     with the sandbox's address), the same name twice is "exists" (9), the
#     fifth router over the budget of 4 is "over-budget" (7), each removal
#     says 0 left, a second removal "not-found" (10).
cat >"$TMP/budget.py" <<'PY'
import ctypes, os, socket, struct, subprocess, sys
sock = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def msg(typ, payload):
    return struct.pack("<IHHII", 0x31485946, 2, typ, len(payload), 0) + payload
def name(i):
    return ("forgeyard-%d-%016x" % (os.getpid(), i)).encode()
def net_create(n):
    rule = struct.pack("<BBBHH", 4, 32, 6, 8080, 8080) + bytes([198, 51, 100, 1]) + bytes(12)
    return msg(4, struct.pack("<H", len(n)) + n + struct.pack("<H", 1) + rule)
def net_remove(n):
    return msg(5, struct.pack("<H", len(n)) + n)
def ask(data, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    socket.send_fds(s, [data], list(fds)) if fds else s.sendall(data)
    got = b""
    while True:
        b = s.recv(4096)
        if not b: break
        got += b
    s.close()
    typ = struct.unpack("<H", got[6:8])[0]
    if typ == 0x80ff:
        return ("error", struct.unpack("<I", got[16:20])[0])
    if typ == 0x8005:
        return ("removed", struct.unpack("<I", got[16:20])[0])
    return ("ok", typ)
if len(sys.argv) > 2 and sys.argv[2] == "nested":
    # A network namespace whose user namespace is nested below another one
    # of ours: its owner maps to our uid, yet our uid holds no capability
    # in it from the host; the helper must refuse it (bad-descriptor, 15).
    if libc.unshare(0x40000000) != 0:
        sys.exit("unshare: %d" % ctypes.get_errno())
    fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    got = ask(net_create(name(9)), [fd])
    print(f"nested: {got} (want ('error', 15))")
    sys.exit(0 if got == ("error", 15) else 1)
nss = []
for i in range(5):
    if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET, in our own user namespace
        sys.exit("unshare: %d" % ctypes.get_errno())
    nss.append(os.open("/proc/self/ns/net", os.O_RDONLY))
bad = 0
def want(what, got, exp):
    global bad
    print(f"{what}: {got} (want {exp})")
    bad |= got != exp
want("router 0", ask(net_create(name(0)), [nss[0]]), ("ok", 0x8004))
want("same name again", ask(net_create(name(0)), [nss[4]]), ("error", 9))
for i in range(1, 4):
    want(f"router {i}", ask(net_create(name(i)), [nss[i]]), ("ok", 0x8004))
want("fifth router", ask(net_create(name(4)), [nss[4]]), ("error", 7))
# router 3's namespace: its eth0 is the sandbox side of the link
libc.setns(nss[3], 0x40000000)
addrs = subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", "eth0"], capture_output=True, text=True).stdout
want("eth0 in our namespace has the sandbox's address", "100.64.0.2/30" in addrs, True)
for i in range(4):
    want(f"remove {i}", ask(net_remove(name(i))), ("removed", 0))
want("remove again", ask(net_remove(name(0))), ("error", 10))
# A rule covering an address of the helper's own (the host's) namespace:
# the library refuses it at fy_prepare, and a peer speaking the protocol
# itself is refused too (malformed, 1), nothing made.
# A named uplink (neither the helper's namespace nor the host's): rules
# covering its link's broadcast address (alone or in a block) are refused
# (malformed, 1), a packet there reaching whoever listens on the link; its
# own address is a destination the operator put there, as on the library's
# root path, and is accepted.
for i, (a, p, refused) in enumerate((("203.0.113.3", 32, True), ("203.0.113.0", 24, True),
                                     ("203.0.113.1", 32, False))):
    rule = struct.pack("<BBBHH", 4, p, 6, 8080, 8080) + socket.inet_aton(a) + bytes(12)
    req = msg(4, struct.pack("<H", len(name(6 + i))) + name(6 + i) + struct.pack("<H", 1) + rule)
    got = ask(req, [nss[4]])
    if refused:
        want(f"a rule covering the uplink's {a}/{p}", got, ("error", 1))
    else:
        want(f"a rule for the named uplink's own {a}/{p}", got[0], "ok")
    if got[0] == "ok":
        ask(net_remove(name(6 + i)))
host = os.environ.get("FY_HOST_ADDR4", "")
if host:
    rule = struct.pack("<BBBHH", 4, 32, 6, 22, 22) + socket.inet_aton(host) + bytes(12)
    req = msg(4, struct.pack("<H", len(name(5))) + name(5) + struct.pack("<H", 1) + rule)
    want(f"a rule covering the host's {host}", ask(req, [nss[4]]), ("error", 1))
sys.exit(1 if bad else 0)
PY
command -v unshare >/dev/null && command -v ip >/dev/null || bad "unshare or ip missing"
# (the host's first global IPv4 address, for the own-address refusal)
host4=$(ip -o -4 addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -1)
as_runner env FY_HOST_ADDR4="$host4" unshare -Urn python3 "$TMP/budget.py" "$SOCK" >"$TMP/budget.out" 2>&1 &&
    ok "the runner's own namespaces: routers made, exists, over budget, removed witnessed; rules covering the uplink's own addresses and the host's ($host4) refused" ||
    { bad "routers through the raw protocol"; cat "$TMP/budget.out"; }
nothing_left "routers through the raw protocol"
# 5c. A user namespace nested inside one of the runner's (its owner maps to
#     the runner's uid, but the runner has no capability in it from the
#     host): refused.
as_runner unshare -Ur unshare -Urn python3 "$TMP/budget.py" "$SOCK" nested >"$TMP/nested.out" 2>&1 &&
    ok "a nested user namespace's network namespace is refused" ||
    { bad "a nested user namespace's network namespace"; cat "$TMP/nested.out"; }
nothing_left "the nested namespace"
# 5c2. A peer that sets its own end of the sandbox's link dormant (an
#      rtnetlink listener in its namespace: IFLA_LINKMODE dormant when the
#      link appears, IFLA_OPERSTATE dormant when it comes up) can fail only
#      its own request, fast: the helper serves every uid from one loop,
#      and waited 10 s per such request for a link the peer controls. Each
#      NET_CREATE is answered within 1 s (ok, or system naming the link),
#      and at least one attack took (the reply says not running).
cat >"$TMP/dormant.py" <<'PY'
import ctypes, os, select, socket, struct, sys, time
sock = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def msg(typ, payload):
    return struct.pack("<IHHII", 0x31485946, 2, typ, len(payload), 0) + payload
def name(i):
    return ("forgeyard-%d-%016x" % (os.getpid(), i)).encode()
def ask(data, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    socket.send_fds(s, [data], list(fds)) if fds else s.sendall(data)
    got = b""
    while True:
        b = s.recv(4096)
        if not b: break
        got += b
    s.close()
    typ = struct.unpack("<H", got[6:8])[0]
    if typ == 0x80ff:
        code, os_errno = struct.unpack("<Ii", got[16:24])
        tl = struct.unpack("<H", got[24:26])[0]
        return ("error", code, got[26:26 + tl].decode(errors="replace"))
    return ("ok", typ)
def listener(ready):
    # In the namespace about to be handed over: every link that appears
    # goes dormant, and again whenever it is announced up.
    mon = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    mon.bind((0, 1))  # RTMGRP_LINK
    req = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    os.write(ready, b"x")
    end = time.time() + 20
    while time.time() < end:
        if not select.select([mon], [], [], 0.2)[0]:
            continue
        data = mon.recv(65536)
        off = 0
        while off + 32 <= len(data):
            ln, typ = struct.unpack_from("<IH", data, off)
            if typ == 16:  # RTM_NEWLINK
                _, _, index, flags, _ = struct.unpack_from("<BxHiII", data, off + 16)
                if index > 1:
                    attrs = struct.pack("<HHB3x", 5, 17, 1)  # IFLA_LINKMODE dormant
                    if flags & 1:  # IFF_UP
                        attrs += struct.pack("<HHB3x", 5, 16, 5)  # IFLA_OPERSTATE dormant
                    body = struct.pack("<BxHiII", 0, 0, index, 0, 0) + attrs
                    req.send(struct.pack("<IHHII", 16 + len(body), 16, 1, 0, 0) + body)
            off += (ln + 3) & ~3
            if ln < 16: break
    os._exit(0)
rule = struct.pack("<BBBHH", 4, 32, 6, 8080, 8080) + bytes([198, 51, 100, 1]) + bytes(12)
bad = took = 0
for i in range(12):
    if libc.unshare(0x40000000) != 0:
        sys.exit("unshare: %d" % ctypes.get_errno())
    fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        listener(w)
    os.read(r, 1)
    n = name(100 + i)
    t = time.monotonic()
    got = ask(msg(4, struct.pack("<H", len(n)) + n + struct.pack("<H", 1) + rule), [fd])
    dt = time.monotonic() - t
    print(f"attack {i}: {got} in {dt:.2f} s")
    os.kill(pid, 9); os.waitpid(pid, 0); os.close(fd); os.close(r); os.close(w)
    if dt >= 1.0:
        print(f"FAIL: the helper took {dt:.1f} s on a link its peer holds dormant")
        bad = 1
        break
    if got[0] == "ok":
        rem = ask(msg(5, struct.pack("<H", len(n)) + n))
        if rem != ("ok", 0x8005):
            print(f"remove: {rem}")
    elif got[1] == 13 and "running" in got[2]:
        took += 1
        if took >= 2:
            break
    else:
        print(f"FAIL: unexpected reply {got}")
        bad = 1
if not bad and not took:
    print("FAIL: no attack took (the listener never won the race): nothing shown")
    bad = 1
sys.exit(bad)
PY
as_runner unshare -Urn python3 "$TMP/dormant.py" "$SOCK" >"$TMP/dormant.out" 2>&1 &&
    ok "a peer holding its link dormant fails only its own NET_CREATE, fast (< 1 s each)" ||
    { bad "a peer holding its link dormant"; cat "$TMP/dormant.out"; }
nothing_left "the dormant links"

# 5d. NET_TAP (protocol 4, the VM backend's router), raw, as the runner:
#     the reply carries exactly one descriptor, a tap named sb (the
#     router's sandbox-side link); frames written to it meet the router's
#     rules: an allowed UDP tuple is echoed back through the tap, another
#     port and another address are not. NET_TAP with a descriptor is
#     bad-descriptor (15), in a version-3 header bad-type (5); the routers
#     count against the budget of 4 with NET_CREATE's; NET_REMOVE witnesses
#     removal (0 left); a peer that exits without removing has its router
#     removed by the gc.
cat >"$TMP/tap.py" <<'PY'
import array, fcntl, os, select, socket, struct, sys, time
sock = sys.argv[1]
def msg(typ, payload, version=4):
    return struct.pack("<IHHII", 0x31485946, version, typ, len(payload), 0) + payload
def name(i):
    return ("forgeyard-%d-%016x" % (os.getpid(), i)).encode()
def net_tap(n, version=4):
    rule = struct.pack("<BBBHH", 4, 32, 17, 9090, 9090) + bytes([198, 51, 100, 1]) + bytes(12)
    return msg(7, struct.pack("<H", len(n)) + n + struct.pack("<H", 1) + rule, version)
def net_remove(n):
    return msg(5, struct.pack("<H", len(n)) + n)
def ask(data, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    socket.send_fds(s, [data], list(fds)) if fds else s.sendall(data)
    got, fds_in = b"", []
    while True:
        b, f, _, _ = socket.recv_fds(s, 4096, 4)
        fds_in += f
        if not b: break
        got += b
    s.close()
    typ = struct.unpack("<H", got[6:8])[0]
    if typ == 0x80ff:
        return ("error", struct.unpack("<I", got[16:20])[0]), fds_in
    if typ == 0x8005:
        return ("removed", struct.unpack("<I", got[16:20])[0]), fds_in
    return ("ok", typ), fds_in
bad = 0
def want(what, got, exp):
    global bad
    print(f"{what}: {got} (want {exp})")
    bad |= got != exp
if len(sys.argv) > 2 and sys.argv[2] == "leave":
    got, fds = ask(net_tap(name(7)))
    want("a tap to leave behind", (got, len(fds)), (("ok", 0x8007), 1))
    sys.exit(1 if bad else 0)   # exits holding it: the gc's
null = os.open("/dev/null", os.O_RDONLY)
want("NET_TAP with a descriptor", ask(net_tap(name(0)), [null])[0], ("error", 15))
want("NET_TAP in a version-3 header", ask(net_tap(name(0), 3))[0], ("error", 5))
got, fds = ask(net_tap(name(0)))
want("NET_TAP", (got, len(fds)), (("ok", 0x8007), 1))
if len(fds) != 1:
    sys.exit(1)
tap = fds[0]
ifr = bytearray(40)
fcntl.ioctl(tap, 0x800454d2, ifr)          # TUNGETIFF
want("the descriptor is the tap sb", (ifr[:ifr.index(0)].decode(), struct.unpack("<H", ifr[16:18])[0] & 0x0002), ("sb", 2))
want("the same name again", ask(net_tap(name(0)))[0], ("error", 9))
more = [ask(net_tap(name(i)))[0] for i in (1, 2, 3)]
want("three more", more, [("ok", 0x8007)] * 3)
want("a fifth over the budget", ask(net_tap(name(4)))[0], ("error", 7))
for i in (1, 2, 3):
    want(f"remove {i}", ask(net_remove(name(i)))[0], ("removed", 0))
# Frames through the tap: we are 100.64.0.2 behind the router's 100.64.0.1.
os.set_blocking(tap, False)
me = bytes([0x02, 0, 0, 0, 0, 0x42])
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(array.array("H", b)) if sys.byteorder == "little" else sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
def frames(secs):
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([tap], [], [], max(0, end - time.time()))
        if not r: return
        try:
            yield os.read(tap, 2048)
        except BlockingIOError:
            pass
arp = (b"\xff" * 6 + me + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + me + bytes([100, 64, 0, 2])
       + bytes(6) + bytes([100, 64, 0, 1]))
router = None
for _ in range(3):
    os.write(tap, arp)
    for f in frames(2):
        if f[12:14] == b"\x08\x06" and struct.unpack("!H", f[20:22])[0] == 2 and f[28:32] == bytes([100, 64, 0, 1]):
            router = f[22:28]
            break
    if router: break
want("the router answers ARP on the tap", router is not None, True)
def udp(dst, port, data):
    u = struct.pack("!HHHH", 40000 + port % 1000, port, 8 + len(data), 0) + data
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(u), 1, 0, 64, 17, 0, bytes([100, 64, 0, 2]), bytes(dst))
    ip = ip[:10] + struct.pack("<H" if sys.byteorder == "little" else "!H", csum(ip)) + ip[12:]
    return router + me + b"\x08\x00" + ip + u
def echoed(dst, port):
    data = b"tap-%d" % port
    for _ in range(3):
        os.write(tap, udp(dst, port, data))
        for f in frames(1.5):
            if f[12:14] == b"\x08\x00" and f[23] == 17 and f[26:30] == bytes(dst) and f[42:].startswith(b"echo:" + data):
                return True
    return False
if router:
    want("udp 198.51.100.1:9090 (allowed) echoed through the tap", echoed([198, 51, 100, 1], 9090), True)
    want("udp 198.51.100.1:8080 (another port) blocked", echoed([198, 51, 100, 1], 8080), False)
    want("udp 198.51.100.2:9090 (another address) blocked", echoed([198, 51, 100, 2], 9090), False)
want("remove", ask(net_remove(name(0)))[0], ("removed", 0))
want("remove again", ask(net_remove(name(0)))[0], ("error", 10))
os.close(tap)
sys.exit(1 if bad else 0)
PY
as_runner python3 "$TMP/tap.py" "$SOCK" >"$TMP/tap.out" 2>&1 &&
    ok "NET_TAP: one tap descriptor, its frames meet the rules, refusals typed, budget, removal witnessed" ||
    { bad "NET_TAP through the raw protocol"; cat "$TMP/tap.out"; }
nothing_left "NET_TAP routers"
as_runner python3 "$TMP/tap.py" "$SOCK" leave >"$TMP/tap-leave.out" 2>&1 || { bad "NET_TAP to leave"; cat "$TMP/tap-leave.out"; }
for _ in $(seq 60); do ip -n "$UPL" -o link show | grep -q ' fy[0-9a-f]\{8\}@' || break; sleep 0.1; done
sleep 0.3
nothing_left "a NET_TAP peer that exited (the helper's gc)"

# 5e. Job networks through the helper (protocol 4, issue 13), as the
#     runner: `forgeyard job run` with two members, db under deny, the
#     runner restricted (its own router from the helper too: eth0 and
#     job0); the runner reaches db by name over TCP and UDP (IPv4 and
#     IPv6) and its one allowed destination, not another port or address
#     of the fake internet (nor over IPv6); it declares network.job.ports
#     [8080], so its Landlock layer refuses db:8081 (which db serves and
#     the job's rules pass) with EACCES; nothing left, the helper's
#     descriptors as before.
SERVE=$(dirname "$0")/serve.py
cp "$SERVE" "$TMP/probe/serve.py" && chmod 755 "$TMP/probe/serve.py"
mkdir -m 0777 "$TMP/jobout"
cat >"$TMP/job.json" <<JOB
{"members": [
  {"name": "db", "service": true, "argv": ["python3", "/opt/fyprobe/serve.py", "/work/output/ready", "60"],
   "policy": {"profile": "standard-ci", "network": {"mode": "deny"}, "resources": {"memory": 134217728},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}],
                             "output": "$TMP/jobout"}}},
  {"name": "runner", "argv": ["/bin/sh", "-c",
     "A=\$(/opt/fyprobe/fy-netprobe resolve db) || exit 9; for i in \$(seq 100); do /opt/fyprobe/fy-netprobe tcp \$A 8080 >/dev/null 2>&1 && break; sleep 0.1; done; /opt/fyprobe/fy-netprobe tcp \$A 8080 && /opt/fyprobe/fy-netprobe udp \$A 9090 && /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 && ! /opt/fyprobe/fy-netprobe tcp 198.51.100.1 9090 && ! /opt/fyprobe/fy-netprobe tcp 198.51.100.2 8080 && B=\$(/opt/fyprobe/fy-netprobe resolve6 db) && [ \"\$B\" = fd66:7973:2::1 ] && /opt/fyprobe/fy-netprobe tcp \$B 8080 && /opt/fyprobe/fy-netprobe udp \$B 9090 && ! /opt/fyprobe/fy-netprobe tcp 2001:db8::1 8080 && ! /opt/fyprobe/fy-netprobe udp 2001:db8::1 9090 && o=\$(/opt/fyprobe/fy-netprobe tcp \$B 8081); test \$? = 1 && case \"\$o\" in *'Permission denied'*) true;; *) echo \"db:8081: \$o\"; false;; esac"],
   "policy": {"profile": "standard-ci", "resources": {"memory": 134217728},
              "network": {"mode": "restricted", "destinations": [{"host": "198.51.100.1", "proto": "tcp", "ports": [8080, 8080]}],
                          "job": {"ports": [8080]}},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}]}}}
]}
JOB
chmod 644 "$TMP/job.json"
as_runner timeout 120 "$FY" job run "$TMP/job.json" >"$TMP/job.out" 2>"$TMP/job.err"
rc=$?
if [ $rc = 0 ] && grep -q '^runner: succeeded' "$TMP/job.out" && grep -q '^db: cancelled' "$TMP/job.out"; then
    ok "job network through the helper: the restricted runner reached db by name (TCP, UDP; IPv4 and IPv6) and its allowed destination only (not the fake internet over IPv6); its Landlock layer (network.job.ports [8080]) refused db:8081 with EACCES"
else
    bad "forgeyard job run as the runner exited $rc"; cat "$TMP/job.out" "$TMP/job.err"
fi
grep -q "request 8 -> ok" "$TMP/helper.log" && grep -q "request 11 -> ok" "$TMP/helper.log" &&
    ok "the job network was the helper's (JOB_CREATE, JOB_DESTROY served)" || bad "no JOB_CREATE/JOB_DESTROY served"
nothing_left "job network through the helper"

# 5f2. The helper's job rules are enforced, not only made: as uid 65534,
#      two member namespaces of a user namespace of the test program's
#      own on a job network the helper makes; member 0 given a second
#      address (what a workload that gained CAP_NET_ADMIN could do) is
#      dropped by the bridge from it, IPv4 and IPv6, and passes from its
#      own.
if [ -n "$NETAPI" ]; then
    cp "$NETAPI" "$TMP/probe/test-net-api" && chmod 755 "$TMP/probe/test-net-api"
    if as_runner timeout 60 "$TMP/probe/test-net-api" --helper-job "$SOCK" >"$TMP/hjob.out" 2>&1 &&
        grep -q "^ok: through the helper" "$TMP/hjob.out"; then
        ok "the helper's job rules drop a member's datagrams from a second address (IPv4, IPv6), pass its own"
    else
        bad "the helper's job rules:"; cat "$TMP/hjob.out"
    fi
    nothing_left "the helper's job rules"
fi

# 5g. A fetch-only member of a job network through the helper, as the
#     runner. The runner's program runs in GW, a namespace of the test's
#     whose default route leads to the fake internet (a veth into NS,
#     192.0.2.1 -> 192.0.2.2), so that its proxy (outside the sandbox, in
#     the host program's namespace) has somewhere to go, and so would a
#     member linked or routed through the host program's namespace. The
#     API (test-jobnet helper): db under deny and a fetch-only member in one
#     job, db by name directly (TCP, UDP), 198.51.100.1:8080 only through
#     its own proxy at 127.0.0.1:3128 (CONNECT allowed and audited; another
#     address, port and db refused by the proxy, each audited), nothing of
#     the fake internet or GW directly (TCP, UDP, ICMP), NO_PROXY naming db,
#     GW's own listener (192.0.2.1:8080, answering the fake internet) not
#     reached, its proxy witnessed ended and its pid gone, the evidence naming the
#     helper; a fetch-only member of another job reaches nothing of the
#     first (directly, through its proxy, by name); GW does not reach db;
#     both jobs removed by the helper (0 left). Then `forgeyard job run`
#     with the same shape. Nothing left; 5f's four jobs then prove the
#     helper's budget was given back.
GW=fyt-nethgw-$$-$RANDOM
net_netns "$GW"
ip -n "$GW" link add g0 type veth peer name n0 && ip -n "$GW" link set n0 netns "$NS" || exit 1
ip -n "$GW" addr add 192.0.2.1/24 dev g0
ip -n "$NS" addr add 192.0.2.2/24 dev n0
ip -n "$GW" link set g0 up
ip -n "$NS" link set n0 up
ip -n "$GW" route add default via 192.0.2.2 dev g0
ip -n "$GW" addr add 2001:db8:2::1/64 dev g0 nodad
ip -n "$NS" addr add 2001:db8:2::2/64 dev n0 nodad
ip -n "$GW" -6 route add default via 2001:db8:2::2 dev g0
for a in 198.51.100.1 2001:db8::1; do
    ip netns exec "$GW" python3 -c '
import socket, sys; s = socket.create_connection((sys.argv[1], 8080), 3); s.send(b"hi"); assert s.recv(16) == b"echo:hi"' "$a" ||
        { bad "the fake internet ($a) does not answer from GW"; }
done
# A listener in GW too (192.0.2.1: TCP 8080, UDP 9090), answering NS, so
# that a member reaching the host program's namespace would be seen.
net_bg ip netns exec "$GW" timeout 300 python3 "$TMP/probe/serve.py" "$TMP/gw.ready" 280
GWSRV=$NET_LAST_PID
for _ in $(seq 50); do [ -s "$TMP/gw.ready" ] && break; sleep 0.1; done
for a in 192.0.2.1 2001:db8:2::1; do
    ip netns exec "$NS" python3 -c '
import socket, sys; s = socket.create_connection((sys.argv[1], 8080), 3); s.send(b"hi"); assert s.recv(16) == b"echo:hi"' "$a" ||
        bad "GW's listener ($a) does not answer from the fake internet"
done
# (nsenter, not ip netns exec: that one remounts /sys, the helper's
# cgroups with it.)
in_gw() {
    nsenter --net="/run/netns/$GW" timeout 300 setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH=/usr/bin:/bin \
        HOME="$TMP/home" FORGEYARD_CACHE_DIR="$TMP/home/cache" FORGEYARD_HELPER_SOCKET="$SOCK" "$@"
}
adds_before=$(grep -c "request 9 -> ok" "$TMP/helper.log")
in_gw "$API" helper "$TMP/probe" "$TMP/jobout" >"$TMP/jobapi.log" 2>&1
rc=$?
grep -E '^(ok|FAIL)' "$TMP/jobapi.log"
[ $rc = 0 ] && grep -q '^PASSED' "$TMP/jobapi.log" && ok "test-jobnet helper (uid 65534, a fetch-only member) passed" ||
    { bad "test-jobnet helper exited $rc"; tail -40 "$TMP/jobapi.log"; }
adds=$(( $(grep -c "request 9 -> ok" "$TMP/helper.log") - adds_before ))
[ "$adds" = 3 ] && ok "the helper linked the three members (JOB_ADD served 3 times)" ||
    bad "JOB_ADD served $adds times, expected 3 (db, proxied, intruder)"
cat >"$TMP/jobf.json" <<JOB
{"members": [
  {"name": "db", "service": true, "argv": ["python3", "/opt/fyprobe/serve.py", "/work/output/ready", "60"],
   "policy": {"profile": "standard-ci", "network": {"mode": "deny"}, "resources": {"memory": 134217728},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}],
                             "output": "$TMP/jobout"}}},
  {"name": "fetch", "argv": ["/bin/sh", "-c",
     "A=\$(/opt/fyprobe/fy-netprobe resolve db) || exit 9; for i in \$(seq 100); do /opt/fyprobe/fy-netprobe tcp \$A 8080 >/dev/null 2>&1 && break; sleep 0.1; done; /opt/fyprobe/fy-netprobe tcp \$A 8080 && /opt/fyprobe/fy-netprobe udp \$A 9090 && /opt/fyprobe/fy-netprobe proxy 198.51.100.1 8080 && ! /opt/fyprobe/fy-netprobe proxy 198.51.100.2 8080 && ! /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080 && ! /opt/fyprobe/fy-netprobe tcp 192.0.2.1 8080 && B=\$(/opt/fyprobe/fy-netprobe resolve6 db) && /opt/fyprobe/fy-netprobe tcp \$B 8080 && /opt/fyprobe/fy-netprobe udp \$B 9090 && ! /opt/fyprobe/fy-netprobe tcp 2001:db8::1 8080 && ! /opt/fyprobe/fy-netprobe tcp 2001:db8:2::1 8080"],
   "policy": {"profile": "standard-ci", "resources": {"memory": 134217728},
              "network": {"mode": "fetch-only", "destinations": [{"host": "198.51.100.1", "ports": [8080, 8080]}]},
              "filesystem": {"binds": [{"host": "$TMP/probe", "target": "/opt/fyprobe"}]}}}
]}
JOB
chmod 644 "$TMP/jobf.json"
rm -f "$TMP/jobout/ready"
in_gw "$FY" job run "$TMP/jobf.json" >"$TMP/jobf.out" 2>"$TMP/jobf.err"
rc=$?
if [ $rc = 0 ] && grep -q '^fetch: succeeded' "$TMP/jobf.out" && grep -q '^db: cancelled' "$TMP/jobf.out"; then
    ok "forgeyard job run through the helper: a fetch-only member reached db by name and its allowlist only through its proxy"
else
    bad "forgeyard job run (fetch-only member) as the runner exited $rc"; cat "$TMP/jobf.out" "$TMP/jobf.err"
fi
kill "$GWSRV" 2>/dev/null; wait "$GWSRV" 2>/dev/null
ip -n "$GW" link del g0
ip netns del "$GW"
nothing_left "job networks with a fetch-only member through the helper"

# 5f. JOB_* raw, as the runner (from a user namespace of its own, whose
#     network namespaces it owns): its namespace accepted and linked (job0
#     has member 0's address), the same index twice `exists` (naming the
#     job's port), the same namespace as another index or to another job
#     `exists` (naming job0 in the member's namespace); the host's
#     namespace, root's, a file, no descriptor, two, a nested user
#     namespace's: bad-descriptor (15); an index beyond the members
#     malformed (1); an unknown job not-found (10); a fifth job over the
#     budget of 4 (7); removals witnessed (0 left); a peer that exits with
#     a job has it removed by the gc.
cat >"$TMP/job.py" <<'PY'
import ctypes, os, socket, struct, subprocess, sys
sock = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def msg(typ, payload, version=4):
    return struct.pack("<IHHII", 0x31485946, version, typ, len(payload), 0) + payload
def name(i):
    return ("forgeyard-%d-%016x" % (os.getpid(), i)).encode()
def job(typ, n, k=None):
    p = struct.pack("<H", len(n)) + n
    return msg(typ, p + (struct.pack("<H", k) if k is not None else b""))
def ask(data, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    socket.send_fds(s, [data], list(fds)) if fds else s.sendall(data)
    got = b""
    while True:
        b = s.recv(4096)
        if not b: break
        got += b
    s.close()
    typ = struct.unpack("<H", got[6:8])[0]
    global text
    text = ""
    if typ == 0x80ff:
        text = got[26:26 + struct.unpack("<H", got[24:26])[0]].decode()
        return ("error", struct.unpack("<I", got[16:20])[0])
    return (hex(typ), struct.unpack("<I", got[16:20])[0])
bad = 0
text = ""  # the last refusal's text
def want(what, got, exp):
    global bad
    print(f"{what}: {got} (want {exp})")
    bad |= got != exp
mode = sys.argv[2]
if mode == "leave":
    want("a job to leave behind", ask(job(8, name(7), 2)), ("0x8008", 0))
    sys.exit(1 if bad else 0)
if mode == "nested":
    want("job", ask(job(8, name(8), 2)), ("0x8008", 0))
    libc.unshare(0x40000000)
    fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    want("a nested user namespace's namespace", ask(job(9, name(8), 0), [fd]), ("error", 15))
    want("destroy", ask(job(11, name(8))), ("0x800b", 0))
    sys.exit(1 if bad else 0)
# mode "own": in a user namespace of our own (unshare -Ur)
host_ns = os.open(sys.argv[3], os.O_RDONLY)  # opened by the test before: the host's
other = os.open(sys.argv[4], os.O_RDONLY)    # root's fake internet
null = os.open("/dev/null", os.O_RDONLY)
if libc.unshare(0x40000000) != 0:
    sys.exit("unshare: %d" % ctypes.get_errno())
mine = os.open("/proc/self/ns/net", os.O_RDONLY)
want("JOB_CREATE", ask(job(8, name(0), 2)), ("0x8008", 0))
want("the same job again", ask(job(8, name(0), 2)), ("error", 9))
want("JOB_ADD without a descriptor", ask(job(9, name(0), 0)), ("error", 15))
want("JOB_ADD with a file", ask(job(9, name(0), 0), [null]), ("error", 15))
want("JOB_ADD with the host's namespace", ask(job(9, name(0), 0), [host_ns]), ("error", 15))
want("JOB_ADD with root's namespace", ask(job(9, name(0), 0), [other]), ("error", 15))
want("JOB_ADD with two descriptors", ask(job(9, name(0), 0), [mine, mine]), ("error", 15))
want("JOB_CREATE with a descriptor", ask(job(8, name(5), 2), [mine]), ("error", 15))
want("JOB_ADD in a version-3 header", ask(job(9, name(0), 0)[:4] + b"\x03\x00" + job(9, name(0), 0)[6:], [mine]), ("error", 5))
want("JOB_ADD beyond the members", ask(job(9, name(0), 2), [mine]), ("error", 1))
want("JOB_ADD to an unknown job", ask(job(9, name(6), 0), [mine]), ("error", 10))
want("JOB_ADD our own namespace", ask(job(9, name(0), 0), [mine]), ("0x8009", 0))
addrs = subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", "job0"], capture_output=True, text=True).stdout
want("job0 has member 0's address", "100.80.0.1/24" in addrs, True)
addrs6 = subprocess.run(["ip", "-o", "-6", "addr", "show", "dev", "job0"], capture_output=True, text=True).stdout
want("job0 has member 0's IPv6 address, no link-local", ("fd66:7973:2::1/120" in addrs6, "fe80" in addrs6), (True, False))
want("the same index again", ask(job(9, name(0), 0), [mine]), ("error", 9))
want("... names the job's port", "this index is linked already" in text, True)
# What exists then is job0 in our namespace, not the port: the refusal says so.
want("our namespace again as another index", ask(job(9, name(0), 1), [mine]), ("error", 9))
want("... names job0 in the member's namespace", "job0 in the member's namespace" in text, True)
for i in (1, 2, 3):
    want(f"job {i}", ask(job(8, name(i), 1)), ("0x8008", 0))
want("our namespace to another job", ask(job(9, name(1), 0), [mine]), ("error", 9))
want("... names job0 in the member's namespace", "job0 in the member's namespace" in text, True)
want("a fifth job", ask(job(8, name(4), 1)), ("error", 7))
want("JOB_DEL", ask(job(10, name(0), 0)), ("0x800a", 0))
gone = subprocess.run(["ip", "-o", "link", "show", "dev", "job0"], capture_output=True, text=True).returncode
want("job0 gone from our namespace", gone != 0, True)
want("JOB_ADD again after JOB_DEL", ask(job(9, name(0), 0), [mine]), ("0x8009", 0))
for i in range(4):
    want(f"destroy {i}", ask(job(11, name(i))), ("0x800b", 0))
want("destroy again", ask(job(11, name(0))), ("error", 10))
gone = subprocess.run(["ip", "-o", "link", "show", "dev", "job0"], capture_output=True, text=True).returncode
want("job0 gone with the job", gone != 0, True)
sys.exit(1 if bad else 0)
PY
exec {HOSTNS}</proc/self/ns/net
as_runner unshare -Ur python3 "$TMP/job.py" "$SOCK" own /proc/self/fd/$HOSTNS "/run/netns/$UPL" >"$TMP/jobraw.out" 2>&1 &&
    ok "JOB_*: own namespace linked and unlinked, hostile descriptors refused typed, budget, removal witnessed" ||
    { bad "JOB_* through the raw protocol"; cat "$TMP/jobraw.out"; }
exec {HOSTNS}<&-
nothing_left "JOB_* raw"
as_runner unshare -Ur unshare -Ur python3 "$TMP/job.py" "$SOCK" nested >"$TMP/jobnested.out" 2>&1 &&
    ok "JOB_ADD: a nested user namespace's network namespace is refused" ||
    { bad "JOB_ADD nested"; cat "$TMP/jobnested.out"; }
as_runner python3 "$TMP/job.py" "$SOCK" leave >"$TMP/jobleave.out" 2>&1 || { bad "a job to leave"; cat "$TMP/jobleave.out"; }
for _ in $(seq 30); do [ "$(ls /proc/$HPID/fd | wc -l)" = "$fds_before" ] && break; sleep 0.1; done
grep -q "gc: uid 65534 forgeyard-[0-9]*-0000000000000007 job network (creator exited): 0 left" "$TMP/helper.log" &&
    ok "a job whose creator exited is removed by the gc (0 left)" || { bad "no gc of the left job"; tail "$TMP/helper.log"; }
nothing_left "a JOB_* peer that exited (the helper's gc)"

# 6. The helper stops: nothing of it left.
kill $HPID; wait $HPID; st=$?; HPID=
[ $st = 0 ] || bad "the helper ended with $st"
[ -e "$SOCK" ] && bad "the socket is left"
host_state >"$TMP/host.after"; uplink_state >"$TMP/uplink.after"
cmp -s "$TMP/host.before" "$TMP/host.after" && cmp -s "$TMP/uplink.before" "$TMP/uplink.after" &&
    ok "after the helper stopped: nothing left" || bad "something left after the helper stopped"
[ $fail = 0 ] || { echo "--- helper log"; cat "$TMP/helper.log"; }
exit $fail
