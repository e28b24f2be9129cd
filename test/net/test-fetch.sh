#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Network mode fetch-only, end to end: the destinations are HTTP servers
# this test starts on 127.0.0.1 (the proxy runs in the host's namespace and
# connects to them); every other address the sandbox could name is its own
# loopback. Nothing else is contacted. Root for the whole test (the rootless
# part runs as uid 65534 through setpriv).
#
#   test-fetch.sh FORGEYARD HTTP-SERVER.PY TEST-PROXY-MEMORY
set -u
FY=$1 HTTPD=$2 MEMTEST=$3
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fetch-only test switches to uid 65534, which needs root"; exit 77; fi
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }

TMP=$(mktemp -d /tmp/fy-fetch.XXXXXX)
chmod 755 "$TMP"
SRV=
fail=0
cleanup() {
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# (below 32768, where the kernel never hands out an ephemeral port)
P1=$((20000 + RANDOM % 12000)); P2=$((P1 + 1)); P3=$((P1 + 2))
mkdir "$TMP/log"
timeout 580 python3 "$HTTPD" "$TMP/ready" 570 "$TMP/log" $P1 $P2 $P3 >"$TMP/server.out" 2>&1 &
SRV=$!
for _ in $(seq 50); do [ -s "$TMP/ready" ] && break; sleep 0.1; done
[ -s "$TMP/ready" ] || { echo "http server did not start"; cat "$TMP/server.out"; exit 1; }
printf '127.0.0.1 mirror.test\n127.0.0.1 other.test\n' >"$TMP/hosts"
TOKEN="fy-cred-$RANDOM$RANDOM-$$"
TOKEN2="fy-key-$RANDOM$RANDOM-$$"
printf '# test credentials\nmirror.test:%s Authorization: Bearer %s\nmirror.test:%s X-Api-Key: %s\n' \
    $P1 "$TOKEN" $P1 "$TOKEN2" >"$TMP/creds"
chmod 600 "$TMP/creds"

json() { python3 - "$@"; }
run() { # RESULT ARGS... -- COMMAND
    local res=$1; shift
    timeout 120 "$FY" run --profile standard-ci --network fetch-only --network-hosts "$TMP/hosts" \
        --result "$res" "$@"
}
proxy_gone() { # RESULT WHAT
    local pid
    pid=$(json "$1" <<'PY'
import json, sys
print(json.load(open(sys.argv[1]))["network"]["proxy"]["pid"])
PY
)
    if [ -z "$pid" ] || [ "$pid" = None ]; then bad "$2: no proxy pid in the result"; return; fi
    if [ -e "/proc/$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = fy-proxy ]; then
        bad "$2: the proxy (pid $pid) is still there after the attempt"
    else
        ok "$2: the proxy (pid $pid) is gone after the attempt"
    fi
}

# 1. Allowed and refused, plain HTTP and CONNECT, names, credentials.
# A tunnel's TLS ClientHello must name the tunnel's host (no domain
# fronting through an allowed name): tls.py sends one through a CONNECT.
cat >"$TMP/tls.py" <<'IN'
import socket, ssl, sys
host, port, sni = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
head = b""
while b"\r\n\r\n" not in head:
    d = s.recv(1)
    if not d:
        break
    head += d
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    ctx.wrap_socket(s, server_hostname=sni).close()
    print(head.split(b"\r\n")[0].decode(), "handshake")
except (ssl.SSLError, OSError) as e:  # the destination speaks HTTP, not TLS
    print(head.split(b"\r\n")[0].decode(), type(e).__name__)
IN
cat >"$TMP/w1.sh" <<IN
set -u
echo "env:"; env | grep -i proxy | sort
echo "get1: \$(curl -sS -m 10 http://mirror.test:$P1/a 2>&1)"
echo "get-literal: \$(curl -sS -m 10 'http://127.0.0.1:$P3/lit?status=404&interim=103' 2>&1)"
echo "get2: \$(curl -sS -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:$P2/never 2>&1)"
echo "other-name: \$(curl -sS -m 10 -o /dev/null -w '%{http_code}' http://other.test:$P1/never 2>&1)"
echo "tunnel: \$(curl -sS -m 10 -p http://mirror.test:$P1/t 2>&1)"
echo "tunnel2: \$(curl -sS -m 10 -p -o /dev/null -w '%{http_code}' http://127.0.0.1:$P2/never 2>&1; echo " rc=\$?")"
echo "tls-same: \$(python3 /opt/tls.py mirror.test $P1 Mirror.Test. 2>&1)"
echo "tls-other: \$(python3 /opt/tls.py mirror.test $P1 other.test 2>&1)"
echo "own-auth: \$(curl -sS -m 10 -H 'Authorization: Bearer from-the-workload' -H 'X-Api-Key: from-the-workload' http://mirror.test:$P1/own 2>&1)"
echo "trace: \$(curl -sS -m 10 -X TRACE -o /dev/null -w '%{http_code}' http://mirror.test:$P1/trace 2>&1)"
echo "big: \$(curl -sS -m 60 -o /dev/null -w '%{size_download}' http://mirror.test:$P1/big 2>&1)"
echo "big-tunnel: \$(curl -sS -m 60 -p -o /dev/null -w '%{size_download}' http://mirror.test:$P1/big 2>&1)"
echo "direct: \$(curl -sS -m 5 --noproxy '*' http://127.0.0.1:$P1/direct 2>&1 | head -c 200; echo " rc=\$?")"
echo "resolve: \$(getent hosts mirror.test || echo none)"
echo "resolve-other: \$(getent hosts aGVsbG8gc2VjcmV0.exfil.test || echo none)"
# Everything the workload can read that could hold the credential: its
# environment, every visible process's environment and command line,
# and the small files of the writable and configuration trees.
echo "---dump"
env
for p in /proc/[0-9]*; do cat \$p/environ \$p/cmdline 2>/dev/null | tr '\0' '\n'; done
find /etc /run /tmp /home /var /work -xdev -type f -size -1000k 2>/dev/null | head -3000 | xargs -r cat 2>/dev/null | head -c 20000000
IN
run "$TMP/r1.json" --network-credentials "$TMP/creds" --allow "mirror.test:$P1" --allow "127.0.0.1:$P3" \
    --bind-ro "$TMP/w1.sh:/opt/w1.sh" --bind-ro "$TMP/tls.py:/opt/tls.py" -- sh /opt/w1.sh >"$TMP/w1.out" 2>&1
rc=$?
[ $rc = 0 ] || { bad "fetch-only run exited $rc"; head -c 3000 "$TMP/w1.out"; }
sed -n '/^---dump/q;p' "$TMP/w1.out"
grep -qx "HTTP_PROXY=http://127.0.0.1:3128" "$TMP/w1.out" && grep -qx "https_proxy=http://127.0.0.1:3128" "$TMP/w1.out" \
    && ok "HTTP_PROXY and HTTPS_PROXY point at the proxy" || bad "no proxy environment"
[ "$(grep -ci '^[a-z_]*proxy=' <(sed -n '/^---dump/q;p' "$TMP/w1.out"))" = 4 ] \
    && ok "exactly the four proxy variables" || bad "other proxy variables"
grep -q "^get1: ok $P1 /a body=0" "$TMP/w1.out" && ok "an allowed name:port answers through the proxy" \
    || bad "allowed GET failed"
grep -q "^get-literal: ok $P3 /lit" "$TMP/w1.out" && ok "an allowed address:port answers" || bad "allowed literal failed"
grep -q "^big: 8388608$" "$TMP/w1.out" && grep -q "^big-tunnel: 8388608$" "$TMP/w1.out" \
    && ok "8 MiB arrive whole, forwarded and tunnelled" || bad "a large download was cut short"
grep -q "^get2: 403" "$TMP/w1.out" && ok "another port is refused (403)" || bad "the other port was not refused"
grep -q "^other-name: 403" "$TMP/w1.out" && ok "another name for the same address is refused" || bad "other name not refused"
grep -q "^tunnel: ok $P1 /t" "$TMP/w1.out" && ok "CONNECT to an allowed host:port tunnels" || bad "CONNECT failed"
grep -q "^tunnel2: .*403\|^tunnel2: .*rc=56" "$TMP/w1.out" && ok "CONNECT to a port not in the allowlist is refused" \
    || bad "CONNECT to another port not refused"
grep -q "^direct: .*rc=0" "$TMP/w1.out" && grep -q "^direct: ok" "$TMP/w1.out" && bad "a direct connection reached the host" \
    || ok "without the proxy nothing is reachable (the sandbox's loopback only)"
grep -q "^resolve: 127.0.0.1 *mirror.test" "$TMP/w1.out" && grep -q "^resolve-other: none" "$TMP/w1.out" &&
    ok "inside, the DNS stub resolves the allowed name only (no destination name in /etc/hosts)" ||
    bad "resolution inside: $(grep '^resolve' "$TMP/w1.out")"
[ ! -s "$TMP/log/$P2.log" ] && ok "the refused destination was never contacted" || bad "port $P2 saw a request"
grep -c "^GET /" "$TMP/log/$P1.log" | grep -qx 5 && ok "the allowed destination saw exactly the 5 allowed requests" \
    || { bad "the allowed destination saw other requests"; cat "$TMP/log/$P1.log"; }
[ "$(grep -c "Authorization: Bearer $TOKEN" "$TMP/log/$P1.log")" = 3 ] \
    && ok "the credential was injected into the plain-HTTP requests to mirror.test:$P1" \
    || { bad "credential not injected"; cat "$TMP/log/$P1.log"; }
[ "$(grep -c "X-Api-Key: $TOKEN2" "$TMP/log/$P1.log")" = 3 ] \
    && ok "every credential line of mirror.test:$P1 was injected (a second header)" \
    || { bad "the second credential line was not injected"; cat "$TMP/log/$P1.log"; }
grep -q "from-the-workload" "$TMP/log/$P1.log" && bad "the workload's own Authorization went through" \
    || ok "the workload's own header of the credential's name is replaced"
grep -qi "proxy-\|^Via" "$TMP/log/$P1.log" && bad "proxy headers reached the destination" || ok "no proxy header upstream"
grep -q "^trace: 405" "$TMP/w1.out" && ! grep -q "^TRACE" "$TMP/log/$P1.log" &&
    ok "TRACE is refused (405) before the destination, which could echo an injected credential" ||
    bad "TRACE: $(grep '^trace' "$TMP/w1.out")"
! grep -q "Authorization" "$TMP/log/$P3.log" && ok "no credential to the other destination" || bad "credential leaked to $P3"
grep -q -e "$TOKEN" -e "$TOKEN2" "$TMP/w1.out" && bad "the credential is visible inside the sandbox" \
    || ok "the credential is nowhere in the sandbox (environment, /proc, files: $(wc -c <"$TMP/w1.out") bytes)"
json "$TMP/r1.json" $P1 $P2 $P3 <<'PY' || bad "the audit log is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
p1, p2, p3 = map(int, sys.argv[2:5])
net = r["network"]
reqs = net["requests"]
def find(**kw):
    return [q for q in reqs if all(q.get(k) == v for k, v in kw.items())]
assert net["mode"] == "fetch-only"
assert len(find(method="GET", host="mirror.test", port=p1, decision="allowed", credential_injected=True)) == 3, reqs
assert len(find(method="GET", host="127.0.0.1", port=p3, decision="allowed", credential_injected=False,
                status=None, response_status=404)) == 1, reqs
# the destination's own code for what was forwarded; none for a tunnel
# (TLS is not terminated) or a refusal (the proxy's own status instead)
assert all(q["response_status"] == 200 for q in find(method="GET", host="mirror.test", decision="allowed")), reqs
assert all(q["response_status"] is None for q in find(method="CONNECT")), reqs
assert all(q["response_status"] is None for q in find(decision="refused")), reqs
assert len(find(method="GET", host="127.0.0.1", port=p2, decision="refused", status=403)) == 1
assert len(find(method="GET", host="other.test", port=p1, decision="refused", status=403)) == 1
assert len(find(method="CONNECT", host="mirror.test", port=p1, decision="allowed")) == 3, reqs
# the tunnels' TLS server names: curl's plain-HTTP tunnels send none; a
# ClientHello naming the tunnel's host (case and final dot aside) goes up;
# one naming another host is refused before a byte of it goes up
assert len(find(method="CONNECT", decision="allowed", tls_server_name=None)) == 2, reqs
same = find(method="CONNECT", host="mirror.test", decision="allowed", tls_server_name="mirror.test")
assert len(same) == 1 and same[0]["bytes_up"] > 0, reqs
other = find(method="CONNECT", host="mirror.test", decision="refused", tls_server_name="other.test")
assert len(other) == 1 and other[0]["bytes_up"] == 0 and "not the tunnel's host" in other[0]["reason"], reqs
assert max(q["bytes_down"] for q in reqs) > 8 << 20, reqs
assert len(find(method="CONNECT", host="127.0.0.1", port=p2, decision="refused", status=403)) == 1
assert all(q["bytes_down"] > 0 for q in find(decision="allowed")), reqs
assert len(find(method="TRACE", host="mirror.test", port=p1, decision="refused", status=405)) == 1, reqs
assert len(reqs) == 12 and net["requests_dropped"] == 0, reqs
assert net["proxy"]["ended"] is True
assert net["proxy"]["end"] == "killed at cleanup", net["proxy"]  # it never died under its own filter
conf = net["proxy"]["confinement"]
for c in ("unprivileged-uid-no-capabilities", "no-new-privileges", "seccomp-allowlist", "landlock-no-filesystem"):
    assert c in conf, conf
# (the policy's id range's last id: never the host's shared nobody, whose
# every process could stop or kill it, nor the first, which owns every
# sandbox's user namespace of the range)
assert net["proxy"]["uid"] == 165535, net["proxy"]
iso = r["isolation"]["network"]
assert iso["mode"] == "fetch-only" and iso["credentials"] == 2, iso
assert "Bearer" not in json.dumps(r), "a credential in the result"
assert r["cleanup"]["network_left"] == 0 and r["cleanup"]["processes_left"] == 0
print("ok: the audit log has every request, allowed and refused, with status, the destination's status, bytes and credential flag")
PY
proxy_gone "$TMP/r1.json" "fetch-only as root"

"$MEMTEST" --status-lines >"$TMP/st.out" 2>&1 && cat "$TMP/st.out" \
    || { bad "the status-line reader"; cat "$TMP/st.out"; }
corpus=$(cd "$(dirname "$0")/../../fuzz/corpus/proxy" && pwd)
got=$(for f in tls-hello-sni tls-hello-two-records tls-hello-sni-twice tls-hello-no-sni bad-lf \
        tls-alert-then-hello tls-ccs-then-hello tls-hello-ech; do
    "$MEMTEST" --tls-name "$corpus/$f" || echo "FAILED $f"; done 2>&1)
[ "$got" = "$(printf '1 mirror.test\n1 mirror.test\n-2 -\n0 -\n0 -\n-2 -\n-2 -\n-2 -')" ] \
    && ok "the TLS server name: read across records, lower case, no final dot; twice refused; none; not TLS; another TLS record before the hello refused; an ECH hello naming the allowed host outside refused" \
    || bad "the TLS server-name reader: $got"

# 1b. The proxy holds nothing of the host process: canaries in the host's
# memory (its environment, a policy secret, another prepared attempt's
# credential for another destination) are nowhere in the proxy's readable
# memory, its executable is the sealed memfd, its environment empty.
FY_TEST_RUNNER_TOKEN="fyc-runner-token-$RANDOM$RANDOM-$$" timeout 120 "$MEMTEST" "$TMP/hosts" $P1 $P3 "$TMP" \
    >"$TMP/mem.out" 2>&1
rc=$?
cat "$TMP/mem.out"
[ $rc = 0 ] && ok "the proxy's memory holds none of the host's secrets" || bad "proxy memory test exited $rc"

# 2. Hostile requests to the proxy: each refused with its status, none
# forwarded, a smuggled second request never reaches anyone.
cat >"$TMP/w2.py" <<IN
import socket, sys
P1, P2 = $P1, $P2
def ask(raw, read=True):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(raw)
    out = b""
    try:
        while read:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except Exception as e:
        out += b" EXC " + str(e).encode()
    s.close()
    return out.split(b"\r\n", 1)[0].decode(errors="replace")
g = "GET http://mirror.test:%d/h HTTP/1.1\r\n" % P1
cases = {
    "oversized": (g + "X-Big: " + "a" * 9000 + "\r\n\r\n").encode(),
    "many-headers": (g + "".join("X-%d: 1\r\n" % i for i in range(70)) + "\r\n").encode(),
    "cl-te": (g + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").encode(),
    "te": (g + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n").encode(),
    "double-cl": (g + "Content-Length: 0\r\nContent-Length: 5\r\n\r\n").encode(),
    "obs-fold": (g + "X-A: 1\r\n  folded\r\n\r\n").encode(),
    "bare-lf": ("GET http://mirror.test:%d/h HTTP/1.1\nHost: x\n\n" % P1).encode(),
    "space-before-colon": (g + "Content-Length : 5\r\n\r\n").encode(),
    "https-absolute": ("GET https://mirror.test:%d/h HTTP/1.1\r\n\r\n" % P1).encode(),
    "userinfo": ("GET http://u:p@mirror.test:%d/h HTTP/1.1\r\n\r\n" % P1).encode(),
    "origin-form": b"GET /h HTTP/1.1\r\nHost: mirror.test\r\n\r\n",
    "connect-no-port": b"CONNECT mirror.test HTTP/1.1\r\n\r\n",
    "http2": ("GET http://mirror.test:%d/h HTTP/2.0\r\n\r\n" % P1).encode(),
    "nul": (g + "X-A: a\x00b\r\n\r\n").encode(),
}
for name, raw in cases.items():
    print(name, ask(raw))
# Smuggling: a second request behind a Content-Length body, to a refused port.
print("smuggle", ask(("GET http://mirror.test:%d/first HTTP/1.1\r\nContent-Length: 4\r\n\r\nbodyGET http://127.0.0.1:%d/smuggled HTTP/1.1\r\n\r\n" % (P1, P2)).encode()))
# Clients that reset their connection before the answer: the proxy's write
# fails (EPIPE), which must not end it (SIGPIPE ignored in the proxy).
import struct
for i in range(30):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.sendall(("GET http://mirror.test:%d/reset%d HTTP/1.1\r\n" % (P1, i)).encode() + b"X: " + b"y" * 5000)
    s.sendall(b"\r\n\r\n")
    s.close()
for i in range(5):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.sendall(("CONNECT mirror.test:%d HTTP/1.1\r\n\r\n" % P1).encode())
    s.recv(1000)
    s.sendall(("GET /big%d HTTP/1.0\r\n\r\n" % i).encode())
    s.recv(1000)
    s.close()
import time
time.sleep(0.5)
print("after-reset", ask(("GET http://127.0.0.1:%d/x HTTP/1.1\r\n\r\n" % P2).encode()))
# Too many connections at once: the ones beyond the proxy's bound get 503.
held = [socket.create_connection(("127.0.0.1", 3128), timeout=10) for _ in range(70)]
busy = 0
for s in held:
    s.settimeout(0.5)
    try:
        if s.recv(100).startswith(b"HTTP/1.1 503"):
            busy += 1
    except Exception:
        pass
for s in held:
    s.close()
print("busy", busy)
# 800 refused requests: the audit log keeps its bound for refusals...
for i in range(800):
    ask(("GET http://127.0.0.1:%d/n%d HTTP/1.1\r\n\r\n" % (P2, i)).encode())
# ...and still records the allowed requests after them; those beyond the
# whole log are counted with their bytes.
for i in range(300):
    ask(("GET http://mirror.test:%d/after-flood%d HTTP/1.1\r\nConnection: close\r\n\r\n" % (P1, i)).encode())
print("done")
IN
: >"$TMP/log/$P1.log"
run "$TMP/r2.json" --allow "mirror.test:$P1" --bind-ro "$TMP/w2.py:/opt/w2.py" -- python3 /opt/w2.py >"$TMP/w2.out" 2>&1
cat "$TMP/w2.out" | head -30
for c in "oversized 431" "many-headers 431" "cl-te 411" "te 411" "double-cl 400" "obs-fold 400" "bare-lf 400" \
         "space-before-colon 400" "https-absolute 400" "userinfo 400" "origin-form 400" "connect-no-port 400" \
         "http2 505" "nul 400"; do
    set -- $c
    grep -q "^$1 HTTP/1.1 $2 " "$TMP/w2.out" && ok "hostile request $1 refused with $2" || bad "hostile request $1 not refused with $2"
done
grep -q "^smuggle HTTP/1.[01] 200" "$TMP/w2.out" && ok "the request in front of the smuggled one is answered" || bad "smuggle case: no answer"
[ ! -s "$TMP/log/$P2.log" ] && ok "the smuggled request reached no one" || bad "the smuggled request reached port $P2"
[ "$(grep -c '^GET /first' "$TMP/log/$P1.log")" = 1 ] && ! grep -q smuggled "$TMP/log/$P1.log" \
    && ok "the allowed destination saw only the first request" || bad "the allowed destination saw the smuggled request"
grep -q "^after-reset HTTP/1.1 403" "$TMP/w2.out" && ok "clients that reset before the answer do not end the proxy" \
    || bad "the proxy did not survive clients that reset"
busy=$(sed -n 's/^busy //p' "$TMP/w2.out")
[ "${busy:-0}" -ge 6 ] && ok "connections beyond the bound get 503 ($busy of 70)" || bad "no connection bound (busy=$busy)"
grep -q "^done" "$TMP/w2.out" || bad "the hostile workload did not finish"
json "$TMP/r2.json" <<'PY' || bad "the hostile requests' audit log is wrong"
import json, sys
net = json.load(open(sys.argv[1]))["network"]
reqs = net["requests"]
assert net["proxy"]["end"] == "killed at cleanup", net["proxy"]
assert len(reqs) == 1024, len(reqs)
refused = [q for q in reqs if q["decision"] == "refused"]
allowed = [q for q in reqs if q["decision"] == "allowed"]
assert len(refused) == 768, len(refused)
assert net["requests_dropped"] > 0, net["requests_dropped"]
statuses = {q["status"] for q in refused}
assert {400, 411, 431, 505, 503, 403} <= statuses, statuses
assert not any(q["decision"] == "allowed" and "smuggled" in q.get("reason", "") for q in reqs)
# the flood of refusals crowded out no allowed request: 256 records were
# left for them, the rest of the 300 are counted, bytes included
flood = [q for q in allowed if q["method"] == "GET" and q["host"] == "mirror.test"]
assert len(flood) >= 200, len(flood)
assert net["requests_dropped_allowed"] > 0, net
assert net["dropped_bytes_down"] > 0 and net["dropped_bytes_up"] > 0, net
assert sum(q["bytes_down"] for q in flood) > 0
print("ok: the audit log keeps 768 refusals and 1024 records in all; %d dropped (%d allowed, %d bytes down counted)"
      % (net["requests_dropped"], net["requests_dropped_allowed"], net["dropped_bytes_down"]))
PY
proxy_gone "$TMP/r2.json" "hostile requests"

# 2a. Sides that cannot move do not keep the proxy turning: a tunnel whose
# client half-closed and stopped reading behind 8 MiB, a forwarded request
# whose client reset before a slow destination answered, and one reset
# while its destination is still to answer, each held for seconds. The
# proxy (outside the sandbox's CPU limit) reports its CPU time; a busy
# loop would be about a whole core for the ~5 s held (it was).
cat >"$TMP/w2a.py" <<IN
import socket, struct, time
held = []
t = socket.create_connection(("127.0.0.1", 3128), timeout=10)
t.sendall(b"CONNECT mirror.test:$P1 HTTP/1.1\r\n\r\n")
t.recv(1000)
t.sendall(b"GET /big-a HTTP/1.0\r\n\r\n")
t.shutdown(socket.SHUT_WR)
held.append(t)
for path in ("/slow-a?delay=4", "/slow-b?delay=4"):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(("GET http://mirror.test:$P1%s HTTP/1.1\r\n\r\n" % path).encode())
    time.sleep(0.3)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
time.sleep(5)
print("held")
IN
run "$TMP/r2a.json" --allow "mirror.test:$P1" --cpus 0.5 --bind-ro "$TMP/w2a.py:/opt/w2a.py" \
    -- python3 /opt/w2a.py >"$TMP/w2a.out" 2>&1
grep -q "^held" "$TMP/w2a.out" || bad "the stalled-sides workload did not finish: $(head -5 "$TMP/w2a.out")"
json "$TMP/r2a.json" <<'PY' || bad "the proxy turned while no side could move"
import json, sys
px = json.load(open(sys.argv[1]))["network"]["proxy"]
cpu = px["cpu_usec"]
assert isinstance(cpu, int), px
assert cpu < 1500000, "the proxy used %d us of CPU in about 5.6 s of stalled sides" % cpu
print("ok: the proxy used %d ms of CPU while its stalled sides were held (a busy loop: seconds)" % (cpu // 1000))
PY

# 2b. The proxy's pipes: a workload holding many tunnels open gets no more
# than the proxy's pipe budget (pipe pages are charged to uid 65534, which
# every attempt's proxy and the host's "nobody" daemons share).
mkdir -m 777 "$TMP/hold"
cat >"$TMP/w3.py" <<IN
import socket, time
held = []
for i in range(16):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT mirror.test:$P1 HTTP/1.1\r\n\r\n")
    s.recv(1000)
    held.append(s)
open("/hold/holding", "w").write("%d\n" % len(held))
# held until the test has looked (it writes /hold/go; bounded: 60 s)
import os
for _ in range(600):
    if os.path.exists("/hold/go"):
        break
    time.sleep(0.1)
IN
run "$TMP/r3.json" --allow "mirror.test:$P1" --bind-ro "$TMP/w3.py:/opt/w3.py" --bind "$TMP/hold:/hold" \
    -- python3 /opt/w3.py >"$TMP/w3.out" 2>&1 &
W3=$!
for _ in $(seq 100); do [ -s "$TMP/hold/holding" ] && break; sleep 0.1; done
if [ -s "$TMP/hold/holding" ]; then
    python3 - <<'PY' && ok "every proxy's pipes stay within its budget with 16 tunnels held" || bad "a proxy's pipes exceed its budget"
import os, fcntl
F_GETPIPE_SZ = 1032
worst = 0
for pid in os.listdir("/proc"):
    try:
        if not pid.isdigit() or open("/proc/%s/comm" % pid).read().strip() != "fy-proxy":
            continue
        seen, total = set(), 0
        for fd in os.listdir("/proc/%s/fd" % pid):
            link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
            if not link.startswith("pipe:") or link in seen:
                continue
            seen.add(link)
            f = os.open("/proc/%s/fd/%s" % (pid, fd), os.O_RDONLY | os.O_NONBLOCK)
            total += fcntl.fcntl(f, F_GETPIPE_SZ)
            os.close(f)
        print("proxy %s: %d pipes, %d bytes" % (pid, len(seen), total))
        worst = max(worst, total)
    except (FileNotFoundError, ProcessLookupError):
        pass
# 4 MiB of budget beyond the default 64 KiB pipes (at most 64 connections)
assert 0 < worst <= (4 << 20) + 64 * 65536, worst
PY
else
    bad "the tunnel-holding workload did not start: $(cat "$TMP/w3.out")"
fi
touch "$TMP/hold/go"
wait $W3 || bad "the tunnel-holding workload failed: $(cat "$TMP/w3.out")"
proxy_gone "$TMP/r3.json" "many tunnels"

# 3. Nothing survives: 20 attempts in a row, every proxy gone; a host
# killed mid-attempt takes its proxy with it (the proxy's liveness pipe).
pids=
for i in $(seq 20); do
    run "$TMP/loop.json" --allow "mirror.test:$P1" -- curl -sS -m 10 -o /dev/null http://mirror.test:$P1/loop$i \
        >/dev/null 2>&1 || bad "attempt $i of the loop failed"
    pids="$pids $(json "$TMP/loop.json" <<'PY'
import json, sys
print(json.load(open(sys.argv[1]))["network"]["proxy"]["pid"])
PY
)"
done
left=0
for pid in $pids; do
    [ -e "/proc/$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = fy-proxy ] && left=$((left + 1))
done
[ $left = 0 ] && [ "$(echo $pids | wc -w)" = 20 ] && ok "20 attempts: every proxy gone" || bad "$left proxies left after 20 attempts"
# 6 at once: each its own proxy and listener, each answered.
par=
for i in $(seq 6); do
    run "$TMP/par$i.json" --allow "mirror.test:$P1" -- curl -sS -m 20 http://mirror.test:$P1/par$i >"$TMP/par$i.out" 2>&1 &
    par="$par $!"
done
wait $par
okpar=0
for i in $(seq 6); do grep -q "^ok $P1 /par$i " "$TMP/par$i.out" && okpar=$((okpar + 1)); done
[ $okpar = 6 ] && ok "6 concurrent attempts each reach the destination through their own proxy" \
    || bad "concurrent attempts: $okpar of 6 answered"
# (no timeout(1) in between: the proxy's parent must be this process; the
# workload's sleep bounds it)
"$FY" run --profile standard-ci --network fetch-only --network-hosts "$TMP/hosts" --allow "mirror.test:$P1" \
    -- sleep 60 >/dev/null 2>&1 &
host=$!
proxy=
for _ in $(seq 100); do
    proxy=$(pgrep -P $host -x fy-proxy) && break
    sleep 0.1
done
if [ -z "$proxy" ]; then
    bad "no proxy under the host process"
    kill $host 2>/dev/null
else
    kill -9 $host
    wait $host 2>/dev/null
    gone=no
    for _ in $(seq 50); do
        if [ ! -e "/proc/$proxy" ] || [ "$(cat /proc/$proxy/comm 2>/dev/null)" != fy-proxy ]; then gone=yes; break; fi
        sleep 0.1
    done
    [ $gone = yes ] && ok "a host killed mid-attempt takes its proxy (pid $proxy) with it" \
        || { bad "the proxy (pid $proxy) outlived its killed host"; kill -9 "$proxy" 2>/dev/null; }
fi
# The same for a host that forked a child living on without exec (its
# copies of every descriptor of the host's): the child judges.
out=$(timeout 60 "$MEMTEST" --forked-host "$TMP/hosts" $P1 2>&1)
case "$out" in
*"ok: the proxy"*"ended with its killed host"*) ok "${out#ok: }" ;;
*) bad "a killed host with a forked child: $out" ;;
esac

# 4. Bad input: typed errors, nothing started.
expect_err() { # WHAT PATTERN ARGS...
    local what=$1 pat=$2; shift 2
    timeout 60 "$FY" run --profile standard-ci --network fetch-only --network-hosts "$TMP/hosts" "$@" -- true \
        >"$TMP/err.out" 2>&1
    local rc=$?
    if [ $rc != 0 ] && grep -q "$pat" "$TMP/err.out"; then ok "$what refused"; else bad "$what: rc=$rc $(cat "$TMP/err.out")"; fi
}
expect_err "a UDP destination" "TCP only" --allow "mirror.test:$P1/udp"
expect_err "a CIDR destination" "CIDR block" --allow "127.0.0.0/8:$P1"
chmod 644 "$TMP/creds"
expect_err "a credentials file others can read" "chmod 600" --allow "mirror.test:$P1" --network-credentials "$TMP/creds"
chmod 600 "$TMP/creds"
printf 'elsewhere.test:80 Authorization: x\n' >"$TMP/creds2"; chmod 600 "$TMP/creds2"
expect_err "a credential for no destination" "not one of the fetch-only destinations" --allow "mirror.test:$P1" \
    --network-credentials "$TMP/creds2"
printf 'mirror.test:%s Bad Name: x\n' $P1 >"$TMP/creds2"
expect_err "a credential with a bad header name" "bad header name" --allow "mirror.test:$P1" --network-credentials "$TMP/creds2"
# Headers the proxy frames the request with are not credentials: a
# "Content-Length: 0" one smuggled a POST's body upstream as a request.
for h in Host content-length Transfer-Encoding Connection Proxy-Authorization Upgrade TE; do
    printf 'mirror.test:%s %s: 0\n' $P1 $h >"$TMP/creds2"
    expect_err "a credential named $h" "not a credential" --allow "mirror.test:$P1" --network-credentials "$TMP/creds2"
done
printf 'mirror.test:%s X-Key: a\nmirror.test:%s x-key: b\n' $P1 $P1 >"$TMP/creds2"
expect_err "two credentials for one header" "the same header" --allow "mirror.test:$P1" --network-credentials "$TMP/creds2"
# "X:" and a value making 1023 bytes: 1024 as "X: value", one more than a
# credential holds (it was cut short by a byte, silently).
printf 'mirror.test:%s X:%s\n' $P1 "$(head -c 1021 /dev/zero | tr '\0' v)" >"$TMP/creds2"
expect_err "a credential one byte too long once sent" "credential too long" --allow "mirror.test:$P1" \
    --network-credentials "$TMP/creds2"
expect_err "an unresolvable name" "does not resolve" --allow "nowhere.test:$P1"

# 5. Rootless, as uid 65534: the same proxy, without the uid switch.
if setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$FY" 2>/dev/null; then
    mkdir "$TMP/nobody" && chown 65534:65534 "$TMP/nobody"
    cp "$TMP/creds" "$TMP/nobody/creds" && chown 65534:65534 "$TMP/nobody/creds"
    : >"$TMP/log/$P1.log"
    HOME=/tmp setpriv --reuid 65534 --regid 65534 --clear-groups timeout 120 "$FY" run --profile standard-ci \
        --network fetch-only --network-hosts "$TMP/hosts" --network-credentials "$TMP/nobody/creds" \
        --allow "mirror.test:$P1" --result "$TMP/nobody/r.json" --bind-ro "$TMP/tls.py:/opt/tls.py" -- \
        sh -c "id -u; curl -sS -m 10 http://mirror.test:$P1/rootless; curl -sS -m 10 -o /dev/null -w '%{http_code}\n' http://127.0.0.1:$P2/; echo tls-other: \$(python3 /opt/tls.py mirror.test $P1 other.test 2>&1); curl -sS -m 10 -o /dev/null -w 'status:%{http_code}\n' 'http://mirror.test:$P1/gone?status=410'; env; cat /proc/[0-9]*/environ | tr '\0' '\n'" \
        >"$TMP/w4.out" 2>&1
    rc=$?
    [ $rc = 0 ] && grep -q "^ok $P1 /rootless" "$TMP/w4.out" && ok "rootless (uid 65534): an allowed destination answers" \
        || { bad "rootless fetch-only failed (rc=$rc)"; head -20 "$TMP/w4.out"; }
    grep -qx 403 "$TMP/w4.out" && ok "rootless: another port is refused" || bad "rootless: other port not refused"
    grep -q "Authorization: Bearer $TOKEN" "$TMP/log/$P1.log" && ok "rootless: the credential is injected" || bad "rootless: no credential"
    grep -q "$TOKEN" "$TMP/w4.out" && bad "rootless: the credential is visible inside" || ok "rootless: the credential is not visible inside"
    [ ! -s "$TMP/log/$P2.log" ] && ok "rootless: the refused destination was never contacted" || bad "rootless: $P2 contacted"
    json "$TMP/nobody/r.json" <<'PY' && proxy_gone "$TMP/nobody/r.json" "rootless" || bad "rootless evidence is wrong"
import json, sys
net = json.load(open(sys.argv[1]))["network"]
conf = net["proxy"]["confinement"]
assert "unprivileged-uid-no-capabilities" not in conf and "no-new-privileges" in conf and "seccomp-allowlist" in conf, conf
reqs = net["requests"]
assert [q["decision"] for q in reqs] == ["allowed", "refused", "refused", "allowed"], reqs
assert reqs[0]["response_status"] == 200 and reqs[3]["response_status"] == 410, reqs
# the same SNI check without root: another name in the ClientHello is
# refused before a byte of it goes up
assert reqs[2]["method"] == "CONNECT" and reqs[2]["tls_server_name"] == "other.test", reqs
assert reqs[2]["bytes_up"] == 0 and "not the tunnel's host" in reqs[2]["reason"], reqs
PY
else
    echo "note: uid 65534 cannot run $FY here; the rootless run is not checked"
fi

exit $fail
