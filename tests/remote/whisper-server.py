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

Streaming (form field stream=true) as vLLM's /v1/audio/transcriptions does
it (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html;
vllm/entrypoints/openai/speech_to_text.py, _speech_to_text_stream_generator):
Content-Type text/event-stream, one `data: {...}` event per text delta, an
object "transcription.chunk" with choices[0].delta.content, the last delta's
choice with finish_reason "stop" and stop_reason null, with
stream_include_usage=true a chunk with no choices and `usage`, then
`data: [DONE]`; verbose_json with stream=true is refused (400) as vLLM
refuses it. --word-time S stands for a decoder that gives a word every S
seconds (a GPU server's pace, so that a client can see text before the
end): a streamed answer sends a word per delta S seconds apart, any other
answer comes S seconds per word of it after the decode (default 0: at
once). --ignore-stream answers JSON as if stream were not asked (a server
without streaming); --bad-stream N makes the first N streamed answers
malformed (an event that is not JSON after two good ones).

Usage: whisper-server.py --model DIR --port N [--api-key KEY] [--threads N]
                         [--compute-type int8|float32|...] [--word-time S]
                         [--ignore-stream] [--bad-stream N]
Prints "listening on PORT" once the model is loaded.
"""

import argparse
import email.parser
import email.policy
import io
import json
import re
import sys
import threading
import time
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


def field_text(fields, name, default=None):
    v = fields.get(name)
    return v[0][0].decode("utf-8") if v else default


def wants_stream(fields, args):
    """Whether the request asks for a streamed answer that this server gives."""
    return (field_text(fields, "stream", "false").lower() == "true"
            and not args.ignore_stream)


def stream_events(answer, fields, bad):
    """The data of each event of a streamed answer, as vLLM sends them."""
    head = {"id": "trsc-test", "object": "transcription.chunk", "created": int(time.time()),
            "model": field_text(fields, "model", "whisper-1")}
    words = re.findall(r"\s*\S+", answer["text"]) or [""]
    for i, w in enumerate(words):
        if bad and i == 2:
            yield "{not json"
            break
        choice = {"delta": {"content": w}}
        if i == len(words) - 1:
            choice.update(finish_reason="stop", stop_reason=None)
        yield json.dumps(dict(head, choices=[choice]))
    if field_text(fields, "stream_include_usage", "false").lower() == "true":
        tokens = answer.get("n_tokens", 0)
        yield json.dumps(dict(head, choices=[], usage={
            "prompt_tokens": 1, "completion_tokens": tokens, "total_tokens": 1 + tokens}))
    yield "[DONE]"


def transcribe(model, lock, fields):
    def text(name, default=None):
        return field_text(fields, name, default)

    if "file" not in fields:
        return 400, {"error": {"message": "no file in the request", "type": "invalid_request_error"}}
    fmt = text("response_format", "json")
    if fmt not in ("json", "text", "verbose_json"):
        return 400, {"error": {"message": f"unsupported response_format: {fmt}",
                               "type": "invalid_request_error"}}
    if text("stream", "false").lower() == "true" and fmt == "verbose_json":
        return 400, {"error": {"message": "verbose_json format doesn't support streaming case",
                               "type": "BadRequestError"}}
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
        return 200, {"text": full, "n_tokens": sum(len(s.tokens) for s in segments)}
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
    ap.add_argument("--word-time", type=float, default=0.0)
    ap.add_argument("--ignore-stream", action="store_true")
    ap.add_argument("--bad-stream", type=int, default=0)
    args = ap.parse_args()
    bad_left = [args.bad_stream]

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

        def reply_stream(self, answer, fields):
            """Server-sent events, chunked, a delta every --word-time s."""
            with lock:
                bad = bad_left[0] > 0
                bad_left[0] -= bad
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for i, data in enumerate(stream_events(answer, fields, bad)):
                    if i > 0:
                        time.sleep(args.word_time)
                    event = f"data: {data}\n\n".encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                # the client stopped reading (a bad event, a flush)
                self.close_connection = True

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
            if status == 200 and wants_stream(fields, args):
                self.reply_stream(obj, fields)
                return
            obj.pop("n_tokens", None)
            if status == 200 and args.word_time > 0:
                time.sleep(args.word_time * len(obj.get("text", "").split()))
            self.reply(status, obj)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
