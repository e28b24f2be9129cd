#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# The fetch-only test's destinations: HTTP servers on 127.0.0.1 (only
# there), one per port, each logging every request it receives (request
# line and headers) to LOGDIR/PORT.log; the answer never echoes a header
# back. Ends by itself after LIFETIME seconds.
#   http-server.py READYFILE LIFETIME LOGDIR PORT...
import http.server
import os
import sys
import threading
import time
import urllib.parse

ready, lifetime, logdir = sys.argv[1], float(sys.argv[2]), sys.argv[3]
ports = [int(p) for p in sys.argv[4:]]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def handle_one(self):
        port = self.server.server_address[1]
        with lock, open(os.path.join(logdir, "%d.log" % port), "a") as f:
            f.write("%s\n%s\n" % (self.requestline, str(self.headers).strip()))
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        out = ("ok %d %s body=%d\n" % (port, self.path, len(body))).encode()
        if self.path.startswith("/big"):
            out = b"x" * (8 << 20)  # more than any socket buffer holds
        # "?status=N" answers N (the audit log records the destination's
        # code), after an interim "103 Early Hints" with "&interim=103"
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        # "?delay=S" answers after S seconds (at most 10): a slow destination
        if "delay" in q:
            time.sleep(min(float(q["delay"][0]), 10.0))
        if "interim" in q:
            self.wfile.write(b"HTTP/1.1 %d Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" % int(q["interim"][0]))
        self.send_response(int(q["status"][0]) if "status" in q else 200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        try:
            self.wfile.write(out)
        except OSError:
            pass

    do_GET = do_POST = do_PUT = do_HEAD = handle_one


for p in ports:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", p), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
with open(ready, "w") as f:
    f.write("ready\n")
time.sleep(lifetime)
