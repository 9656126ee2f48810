#!/usr/bin/env python3
"""whisper-transcribe --vad-filter against faster-whisper's
transcribe(vad_filter=True): with --reference-rules --greedy, the segments
(tokens, and the restored times, which are multiples of 0.01 s: equal at
the JSON's three decimals) of the clips of
tests/vad/reference/vad-filter-reference.json; and the flags' errors (exit
status 2, the message naming the flag).

Usage: test-vad-filter-cli.py SOURCE_ROOT WHISPER_TRANSCRIBE
Skips (77) without the VAD weights (tools/fetch-model.sh silero-vad).
"""

import json
import os
import subprocess
import sys


def main():
    root, cli = sys.argv[1], sys.argv[2]
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    if not os.path.isfile(os.path.join(data, "gst-whisper", "models", "silero-vad",
                                       "silero_vad_v6.bin")):
        print("SKIP: no VAD weights (tools/fetch-model.sh silero-vad)")
        return 77
    shared = os.environ.get("WHISPER_SHARED_DATA", os.path.join(root, "..", "shared", "data"))
    roots = {"WHISPER_SOURCE_ROOT": root, "WHISPER_SHARED_DATA": shared}
    with open(os.path.join(root, "tests", "vad", "reference", "vad-filter-reference.json")) as f:
        ref = json.load(f)
    failures = 0
    for sig in ref["signals"]:
        if "path" not in sig:
            continue
        cmd = [cli, "--greedy", "--reference-rules", "--vad-filter", "--format", "json"]
        if sig["channel"] >= 0:
            cmd += ["--channel", str(sig["channel"])]
        cmd.append(os.path.join(roots[sig["root"]], sig["path"]))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: {' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
            failures += 1
            continue
        ours = json.loads(r.stdout)["segments"]
        want = sig["segments"]
        same = len(ours) == len(want) and all(
            o["tokens"] == w["tokens"] and abs(o["start"] - w["start"]) < 5e-4
            and abs(o["end"] - w["end"]) < 5e-4 for o, w in zip(ours, want))
        if not same:
            print(f"FAIL: {sig['name']}: ours {[(o['start'], o['end'], o['text']) for o in ours]}, "
                  f"faster-whisper {[(w['start'], w['end'], w['text']) for w in want]}")
            failures += 1
        else:
            print(f"{sig['name']}: {len(ours)} segments as faster-whisper's")
    clip = os.path.join(root, "tests", "reference", "clips", "pauses.wav")
    for flags, needle in [(["--vad-filter", "--no-vad"], "--no-vad"),
                          (["--vad-filter", "--vad-threshold", "2"], "threshold"),
                          (["--vad-min-silence-ms", "-5"], "min_silence_duration_ms"),
                          (["--vad-filter", "--vad-model", "/nonexistent/vad.bin"],
                           "/nonexistent/vad.bin")]:
        r = subprocess.run([cli, "--greedy", *flags, clip], capture_output=True, text=True)
        if r.returncode != 2 or needle not in r.stderr:
            print(f"FAIL: {' '.join(flags)}: exit {r.returncode}, {r.stderr.strip()!r} "
                  f"(want 2 and a message naming {needle})")
            failures += 1
        else:
            print(f"{' '.join(flags)}: {r.stderr.strip()}")
    if failures:
        print(f"{failures} failures")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
