#!/usr/bin/env python3
"""A small OpenAI-compatible transcription server on faster-whisper, for the
remote engine's tests: POST /v1/audio/transcriptions as in
https://platform.openai.com/docs/api-reference/audio/createTranscription
(multipart/form-data: file, model, language, prompt, temperature,
response_format json|text|verbose_json, timestamp_granularities[] segment
and/or word), GET /health. HTTP/1.1 with keep-alive, standard library only
besides faster-whisper, CPU only, offline (a local CTranslate2 model
directory).

Why not a server from PyPI: speaches is not on PyPI; faster-whisper-server
0.0.3 needs fastapi, uvicorn and python-multipart, names the model field
`model_name` instead of `model` and gives no word timestamps.

Decoding: faster-whisper's WhisperModel.transcribe with beam_size=1 (greedy,
as this project's engine), the given temperature (no fallback), the prompt
as initial_prompt, word_timestamps when words are asked for, no VAD.

Usage: whisper-server.py --model DIR --port N [--api-key KEY] [--threads N]
                         [--compute-type int8|float32|...]
Prints "listening on PORT" once the model is loaded.
"""

import argparse
import email.parser
import email.policy
import io
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from faster_whisper import WhisperModel


def parse_multipart(content_type, body):
    """Fields of a multipart/form-data body: name -> list of (value, filename)."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    if not msg.is_multipart():
        raise ValueError("not multipart/form-data")
    fields = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name is None:
            continue
        data = part.get_payload(decode=True) or b""
        fields.setdefault(name, []).append((data, part.get_filename()))
    return fields


def transcribe(model, lock, fields):
    def text(name, default=None):
        v = fields.get(name)
        return v[0][0].decode("utf-8") if v else default

    if "file" not in fields:
        return 400, {"error": {"message": "no file in the request", "type": "invalid_request_error"}}
    fmt = text("response_format", "json")
    if fmt not in ("json", "text", "verbose_json"):
        return 400, {"error": {"message": f"unsupported response_format: {fmt}",
                               "type": "invalid_request_error"}}
    granularities = [v[0].decode() for v in fields.get("timestamp_granularities[]", [])]
    words = "word" in granularities and fmt == "verbose_json"
    try:
        temperature = float(text("temperature", "0") or 0)
    except ValueError:
        return 400, {"error": {"message": "temperature is not a number",
                               "type": "invalid_request_error"}}
    language = text("language") or None
    prompt = text("prompt") or None
    audio = io.BytesIO(fields["file"][0][0])
    with lock:
        try:
            segments, info = model.transcribe(
                audio, language=language, initial_prompt=prompt, temperature=temperature,
                beam_size=1, word_timestamps=words, vad_filter=False)
            segments = list(segments)
        except Exception as e:  # undecodable audio and the like
            return 400, {"error": {"message": f"cannot transcribe the file: {e}",
                                   "type": "invalid_request_error"}}
    full = "".join(s.text for s in segments)
    if fmt != "verbose_json":
        return 200, {"text": full}
    answer = {
        "task": "transcribe", "language": info.language, "duration": info.duration,
        "text": full,
        "segments": [{
            "id": i, "seek": s.seek, "start": s.start, "end": s.end, "text": s.text,
            "tokens": s.tokens, "temperature": s.temperature, "avg_logprob": s.avg_logprob,
            "compression_ratio": s.compression_ratio, "no_speech_prob": s.no_speech_prob,
        } for i, s in enumerate(segments)],
    }
    if words:
        answer["words"] = [{"word": w.word, "start": w.start, "end": w.end,
                            "probability": w.probability}
                           for s in segments for w in (s.words or [])]
    return 200, answer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--api-key")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compute-type", default="int8")
    args = ap.parse_args()

    model = WhisperModel(args.model, device="cpu", compute_type=args.compute_type,
                         cpu_threads=args.threads, local_files_only=True)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            sys.stderr.write("whisper-server: " + (fmt % a) + "\n")

        def reply(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {"status": "ok"})
            else:
                self.reply(404, {"error": {"message": "not found"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path.split("?")[0] != "/v1/audio/transcriptions":
                self.reply(404, {"error": {"message": f"no endpoint {self.path}"}})
                return
            if args.api_key and self.headers.get("Authorization") != f"Bearer {args.api_key}":
                self.reply(401, {"error": {"message": "Incorrect API key provided",
                                           "type": "invalid_request_error"}})
                return
            try:
                fields = parse_multipart(self.headers.get("Content-Type", ""), body)
            except ValueError as e:
                self.reply(400, {"error": {"message": str(e)}})
                return
            status, obj = transcribe(model, lock, fields)
            self.reply(status, obj)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
