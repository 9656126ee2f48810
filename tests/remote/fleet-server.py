#!/usr/bin/env python3
"""A stand-in for one GPU server of a fleet, for the remote engine's fleet
tests: POST /v1/audio/transcriptions (multipart/form-data, as
whisper-server.py takes it) answers after a fixed service time, one request
at a time (others wait their turn, as on a GPU that decodes one window at
a time), with text that depends on the audio only: no model runs, so that
many of these behave like GPUs of known speed on a small machine.

The answer (verbose_json): the WAV's samples hashed (SHA-1, 8 hex digits),
two segments, [0, d/2) and [d/2, d) for d the audio's duration, with the
texts " <hash>a" and " <hash>b" (one word each when word timestamps are
asked for). The same audio gives the same answer on every server.

GET /stats: {"requests": answered, "busy_s": total service time}.

With --tls-cert and --tls-key it speaks HTTPS (Python's ssl) with that
certificate chain (PEM).

Usage: fleet-server.py --port N [--service SECONDS] [--api-key KEY]
                       [--tls-cert PEM --tls-key PEM]
Prints "listening on PORT" when ready.
"""

import argparse
import email.parser
import email.policy
import hashlib
import json
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def form_fields(content_type, body):
    """name -> first value (bytes) of a multipart/form-data body."""
    head = b"Content-Type: " + content_type.encode() + b"\r\n\r\n"
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not msg.is_multipart():
        raise ValueError("the body is not multipart/form-data")
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name is not None:
            out.setdefault(name, []).append(part.get_payload(decode=True) or b"")
    return out


def wav_samples(wav):
    """The data chunk of a 16-bit mono WAV and its rate."""
    if wav[:4] != b"RIFF" or wav[8:12] != b"WAVE":
        raise ValueError("the file is not a WAV")
    pos, rate, data = 12, None, None
    while pos + 8 <= len(wav):
        cid, size = wav[pos:pos + 4], struct.unpack("<I", wav[pos + 4:pos + 8])[0]
        if cid == b"fmt ":
            rate = struct.unpack("<I", wav[pos + 12:pos + 16])[0]
        elif cid == b"data":
            data = wav[pos + 8:pos + 8 + size]
            break
        pos += 8 + size + (size & 1)
    if rate is None or data is None:
        raise ValueError("the WAV has no fmt or data chunk")
    return data, rate


def answer_for(wav, words):
    data, rate = wav_samples(wav)
    d = len(data) / 2 / rate
    h = hashlib.sha1(data).hexdigest()[:8]
    half = round(d / 2, 2)
    segs = [(0.0, half, f" {h}a"), (half, round(d, 2), f" {h}b")]
    ans = {"task": "transcribe", "language": "en", "duration": d,
           "text": "".join(s[2] for s in segs),
           "segments": [{"id": i, "start": a, "end": b, "text": t, "avg_logprob": -0.1,
                         "no_speech_prob": 0.01, "compression_ratio": 1.0,
                         "temperature": 0.0}
                        for i, (a, b, t) in enumerate(segs)]}
    if words:
        ans["words"] = [{"word": t, "start": a, "end": b, "probability": 0.9}
                        for a, b, t in segs]
    return ans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--service", type=float, default=0.5,
                    help="seconds each request takes, one at a time")
    ap.add_argument("--api-key")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    args = ap.parse_args()
    gpu = threading.Lock()
    stats = {"requests": 0, "busy_s": 0.0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def setup(self):
            # TLS: the handshake runs here, in the connection's own thread
            # (bounded), not in accept() on the serving thread, where one
            # stalled handshake would hold up every other connection.
            if isinstance(self.request, ssl.SSLSocket):
                self.request.settimeout(10)
                self.request.do_handshake()
                self.request.settimeout(None)
            super().setup()

        def reply(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/stats":
                self.reply(200, stats)
            else:
                self.reply(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if args.api_key and self.headers.get("Authorization") != f"Bearer {args.api_key}":
                self.reply(401, {"error": {"message": "Incorrect API key provided"}})
                return
            try:
                f = form_fields(self.headers.get("Content-Type", ""), body)
                grans = [g.decode() for g in f.get("timestamp_granularities[]", [])]
                ans = answer_for(f["file"][0], "word" in grans)
            except (ValueError, KeyError) as e:
                self.reply(400, {"error": {"message": f"bad request: {e}"}})
                return
            with gpu:
                t0 = time.monotonic()
                time.sleep(args.service)
                stats["requests"] += 1
                stats["busy_s"] += time.monotonic() - t0
            self.reply(200, ans)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # a client that refuses the certificate ends its handshake: expected
            if not isinstance(sys.exc_info()[1], (ssl.SSLError, OSError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = tls.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
