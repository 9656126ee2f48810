#!/usr/bin/env python3
"""An HTTP proxy for the remote engine's fault tests: forwards every request
to the transcription server at 127.0.0.1:UPSTREAM, or injects a fault.

GET /__fault?mode=MODE&count=N&delay=S sets the fault for the next N
requests (count=0: every request until changed):
  pass    forward (the default)
  500     answer 500 with an OpenAI-style error body
  garbage answer 200 with a body that is not JSON
  slow    forward, then hold the answer back for S seconds
  401     answer 401 with an OpenAI-style error body
  reset   close the connection without an answer
A request the server cannot take (it is down) closes the connection
without an answer, as a dead server's connection would end.
GET /__stats gives {"requests": N, "faults": N, "forwarded": N}.

Usage: fault-proxy.py --upstream PORT [--port PORT]; prints "listening on PORT".
"""

import argparse
import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

state = {"mode": "pass", "count": 0, "delay": 0.0}
stats = {"requests": 0, "faults": 0, "forwarded": 0}
lock = threading.Lock()


def take_fault():
    with lock:
        stats["requests"] += 1
        mode = state["mode"]
        if mode != "pass":
            stats["faults"] += 1
            if state["count"] > 0:
                state["count"] -= 1
                if state["count"] == 0:
                    state["mode"] = "pass"
        return mode, state["delay"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            sys.stderr.write("fault-proxy: " + (fmt % a) + "\n")

        def reply(self, status, body, ctype="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urlparse(self.path)
            if url.path == "/__fault":
                q = parse_qs(url.query)
                with lock:
                    state["mode"] = q.get("mode", ["pass"])[0]
                    state["count"] = int(q.get("count", ["0"])[0])
                    state["delay"] = float(q.get("delay", ["0"])[0])
                self.reply(200, b'{"ok": true}')
            elif url.path == "/__stats":
                with lock:
                    self.reply(200, json.dumps(stats).encode())
            else:
                self.reply(404, b'{"error": {"message": "not found"}}')

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            mode, delay = take_fault()
            if mode == "500":
                self.reply(500, b'{"error": {"message": "injected internal error"}}')
                return
            if mode == "garbage":
                self.reply(200, b'{"text": "unterminated')
                return
            if mode == "401":
                self.reply(401, b'{"error": {"message": "Incorrect API key provided (injected)", '
                                b'"type": "invalid_request_error"}}')
                return
            if mode == "reset":
                self.close_connection = True
                self.connection.close()
                return
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() in ("content-type", "authorization")}
            try:
                conn = http.client.HTTPConnection("127.0.0.1", args.upstream, timeout=600)
                conn.request("POST", self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
            except OSError:
                self.close_connection = True
                self.connection.close()
                return
            with lock:
                stats["forwarded"] += 1
            if mode == "slow":
                time.sleep(delay)  # the server answered; the answer is held back
            try:
                self.reply(resp.status, data, resp.getheader("Content-Type", "application/json"))
            except OSError:
                pass  # the client gave up (time-out)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
