# SPDX-License-Identifier: LGPL-2.1-or-later
# A job member's server (test-jobnet.sh): TCP echo on 8080 and 8081 and UDP
# echo on 9090 on every address of the member's namespace, IPv4 and IPv6
# (one dual-stack socket each; IPv4 only where the namespace has no IPv6),
# each answering "echo:" + what it got; writes READY once all are bound;
# exits after SECONDS. (8081: a port the job's rules let through and a
# member's Landlock layer does not.)
#   serve.py READY SECONDS
import socket, sys, threading

def bound(kind, port):
    try:
        s = socket.socket(socket.AF_INET6, kind)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        addr = ("::", port)
    except OSError:
        s = socket.socket(socket.AF_INET, kind)
        addr = ("0.0.0.0", port)
    if kind == socket.SOCK_STREAM:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr)
    if kind == socket.SOCK_STREAM:
        s.listen(16)
    return s

ts = [bound(socket.SOCK_STREAM, 8080), bound(socket.SOCK_STREAM, 8081)]
u = bound(socket.SOCK_DGRAM, 9090)

def tcp(t):
    while True:
        c, _ = t.accept()
        c.settimeout(5)
        try:
            d = c.recv(256)
            if d:
                c.sendall(b"echo:" + d)
        except OSError:
            pass
        c.close()

def udp():
    while True:
        d, a = u.recvfrom(256)
        u.sendto(b"echo:" + d, a)

for t in ts:
    threading.Thread(target=tcp, args=(t,), daemon=True).start()
threading.Thread(target=udp, daemon=True).start()
open(sys.argv[1], "w").write("ready")
threading.Event().wait(float(sys.argv[2]))
