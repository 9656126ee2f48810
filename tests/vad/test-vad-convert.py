#!/usr/bin/env python3
"""tools/silero-vad-convert.py on faster-whisper's own ONNX file and on others.

- faster-whisper's silero_vad_v6.onnx converts to the file whose SHA-256
  tools/fetch-model.sh pins (bin_sha256): the conversion is deterministic
  and the pinned value is the converter's output;
- the file it writes has the layout the script's header documents, read
  back here with struct (magic, version, tensor table, no bytes left over);
- an ONNX file with one byte changed, and a missing file, are refused with
  exit status 1 and a message that says why, and no output file is left.

Usage: test-vad-convert.py SOURCE_ROOT. Skips (77) where faster_whisper or
onnx is not installed.
"""

import hashlib
import os
import re
import struct
import subprocess
import sys
import tempfile


def main():
    root = sys.argv[1]
    try:
        import faster_whisper
        import onnx  # noqa: F401  (the converter needs it)
    except ImportError as e:
        print(f"SKIP: {e} (tools/install-deps.sh installs faster-whisper and onnx)")
        return 77
    converter = os.path.join(root, "tools", "silero-vad-convert.py")
    onnx_path = os.path.join(os.path.dirname(faster_whisper.__file__), "assets",
                             "silero_vad_v6.onnx")
    with open(os.path.join(root, "tools", "fetch-model.sh")) as f:
        pinned = re.search(r"bin_sha256=([0-9a-f]{64})", f.read()).group(1)

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "vad.bin")
        res = subprocess.run([sys.executable, converter, onnx_path, out],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(f"FAIL: converting {onnx_path}: {res.stderr}")
            return 1
        with open(out, "rb") as f:
            data = f.read()
        have = hashlib.sha256(data).hexdigest()
        if have != pinned:
            print(f"FAIL: converted file has SHA-256 {have}, fetch-model.sh pins {pinned}")
            failures += 1

        # the documented layout
        assert data[:8] == b"GWSILVAD", data[:8]
        version, n_tensors = struct.unpack_from("<II", data, 8)
        with open(onnx_path, "rb") as f:
            source_sha = hashlib.sha256(f.read()).digest()
        if (version, n_tensors) != (1, 14) or data[16:48] != source_sha:
            print(f"FAIL: header: version {version}, {n_tensors} tensors, source SHA-256 "
                  f"{data[16:48].hex()}")
            failures += 1
        pos, names = 48, []
        for _ in range(n_tensors):
            (name_len,) = struct.unpack_from("<I", data, pos)
            names.append(data[pos + 4:pos + 4 + name_len].decode())
            pos += 4 + name_len
            dtype, n_dims = struct.unpack_from("<II", data, pos)
            dims = struct.unpack_from(f"<{n_dims}I", data, pos + 8)
            count = 1
            for d in dims:
                count *= d
            pos += 8 + 4 * n_dims + 4 * count
            if dtype != 0:
                print(f"FAIL: tensor {names[-1]} has dtype {dtype}")
                failures += 1
        if pos != len(data):
            print(f"FAIL: the tensor table ends at {pos}, the file at {len(data)}")
            failures += 1
        print(f"converted: {len(data)} bytes, SHA-256 {have}, tensors: {', '.join(names)}")

        # refusals
        changed = os.path.join(tmp, "changed.onnx")
        with open(onnx_path, "rb") as f:
            onnx_bytes = bytearray(f.read())
        onnx_bytes[len(onnx_bytes) // 2] ^= 0x01
        with open(changed, "wb") as f:
            f.write(onnx_bytes)
        for label, src, reason in (("one byte changed", changed, "is not the pinned"),
                                   ("missing", os.path.join(tmp, "none.onnx"), "no such file")):
            refused_out = os.path.join(tmp, "refused.bin")
            res = subprocess.run([sys.executable, converter, src, refused_out],
                                 capture_output=True, text=True)
            print(f"{label}: exit {res.returncode}: {res.stderr.strip()}")
            if res.returncode != 1 or reason not in res.stderr or os.path.exists(refused_out):
                print(f"FAIL: {label}: expected exit 1, '{reason}' and no output file")
                failures += 1
    print("PASS" if failures == 0 else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
