# SPDX-License-Identifier: LGPL-2.1-or-later
# The fake internet's echo servers (test-net.sh runs this inside its own
# network namespace): TCP and UDP on every address of the namespace, IPv4
# and IPv6, ports given; each answers "echo:" + what it got. Every socket
# is bound before the ready file is written. Exits after the given number
# of seconds at the latest.
import socket, sys, threading

UDP_ADDRS = {socket.AF_INET: ("198.51.100.1", "198.51.100.2"), socket.AF_INET6: ("2001:db8::1", "2001:db8::2")}

def tcp_socket(fam, port):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", port))
    s.listen(64)
    return s

def udp_socket(fam, addr, port):
    # One socket per address: a reply leaves from the address asked.
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((addr, port))
    return s

def serve_tcp(s):
    while True:
        c, _ = s.accept()
        c.settimeout(5)
        try:
            c.sendall(b"echo:" + c.recv(100))
        except OSError:
            pass
        c.close()

def serve_udp(s):
    while True:
        d, a = s.recvfrom(100)
        if d.startswith(b"mark:"):  # (a test's marked datagram: logged with its source)
            print("udp", s.getsockname()[0], d.decode(errors="replace"), "from", a[0], flush=True)
        s.sendto(b"echo:" + d, a)

ready, seconds = sys.argv[1], float(sys.argv[2])
servers = []
for fam in (socket.AF_INET, socket.AF_INET6):
    for port in (int(p) for p in sys.argv[3:]):
        servers.append((serve_tcp, tcp_socket(fam, port)))
        for addr in UDP_ADDRS[fam]:
            servers.append((serve_udp, udp_socket(fam, addr, port)))
for fn, s in servers:
    threading.Thread(target=fn, args=(s,), daemon=True).start()
open(ready, "w").write("ready\n")
threading.Event().wait(seconds)
