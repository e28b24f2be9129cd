# SPDX-License-Identifier: LGPL-2.1-or-later
# The fake internet's echo servers (test-net.sh runs this inside its own
# network namespace): TCP and UDP on every address of the namespace, IPv4
# and IPv6, ports given; each answers "echo:" + what it got. Exits after
# the given number of seconds at the latest.
import socket, sys, threading

def tcp(fam, port):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        c.settimeout(5)
        try:
            c.sendall(b"echo:" + c.recv(100))
        except OSError:
            pass
        c.close()

def udp(fam, addr, port):
    # One socket per address: a reply leaves from the address asked.
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        d, a = s.recvfrom(100)
        s.sendto(b"echo:" + d, a)

UDP_ADDRS = {socket.AF_INET: ("198.51.100.1", "198.51.100.2"), socket.AF_INET6: ("2001:db8::1", "2001:db8::2")}
ready, seconds = sys.argv[1], float(sys.argv[2])
for fam in (socket.AF_INET, socket.AF_INET6):
    for port in (int(p) for p in sys.argv[3:]):
        threading.Thread(target=tcp, args=(fam, port), daemon=True).start()
        for addr in UDP_ADDRS[fam]:
            threading.Thread(target=udp, args=(fam, addr, port), daemon=True).start()
open(ready, "w").write("ready\n")
threading.Event().wait(seconds)
