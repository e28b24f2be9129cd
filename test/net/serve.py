# SPDX-License-Identifier: LGPL-2.1-or-later
# A job member's server (test-jobnet.sh): TCP echo on 8080 and UDP echo on
# 9090 on every address of the member's namespace, each answering "echo:" +
# what it got; writes READY once both are bound; exits after SECONDS.
#   serve.py READY SECONDS
import socket, sys, threading

t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("0.0.0.0", 8080))
t.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", 9090))

def tcp():
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

for f in (tcp, udp):
    threading.Thread(target=f, daemon=True).start()
open(sys.argv[1], "w").write("ready")
threading.Event().wait(float(sys.argv[2]))
