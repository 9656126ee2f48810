#!/usr/bin/env python3
"""Draws the folders of the shipped code and the includes between them.

Each box is a source folder (engine/src/core, gst-plugin/task, ...), each arrow
"a file of folder A includes a header of folder B", labelled with how many
such includes there are. Headers are matched by the path the include writes,
against the headers of the tree (quoted includes; <whisper/...> is the engine's
public include folder). Boxes are stacked by the one-way rules of
docs/architecture.md: an arrow that points up (to a folder with a lower rank
below it in the same library) is drawn red and makes the script exit 1.

Usage: tools/draw-architecture.py [OUT.png]   (default docs/architecture.png;
needs Graphviz's `dot`, Debian package graphviz)
"""

import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHIPPED = ("engine", "gst-plugin", "kernels")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)

# Rank of each folder inside its library: a folder may include its own
# headers and those of folders with a greater rank (further down).
# Folders not listed take the rank of their nearest listed parent.
RANKS = {
    "engine/cli": 0,
    "engine/src/core": 2,
    "engine/src/decode": 3, "engine/src/timing": 3,
    "engine/src/net": 4,
    "engine/src/audio": 5, "engine/src/text": 5, "engine/src/model": 5, "engine/src/vad": 5,
    "engine/src/backend": 6, "engine/src/backend/cpu": 6,
    "engine/src/util": 7,
    # declarations only (types, the error domain, the exported functions,
    # defined in core, audio, text and vad): every layer may include them
    "engine/include/whisper": 8,
    "gst-plugin/example": 0,
    "gst-plugin/element": 1,
    "gst-plugin/task": 2, "gst-plugin/captions": 2,
    "gst-plugin/remote": 3, "gst-plugin/shared": 3,
    "gst-plugin/io": 4,
    "gst-plugin/settings": 5,
    "kernels/host": 0,
    "kernels": 1,
}


def library(folder):
    return folder.split("/", 1)[0]


def rank(folder):
    f = folder
    while f:
        if f in RANKS:
            return RANKS[f]
        f = os.path.dirname(f)
    return None


def sources():
    for top in SHIPPED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".c", ".h", ".cu", ".cuh")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def main():
    out_png = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "architecture.png")
    files = sorted(sources())
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    edges = {}
    for f in files:
        src_dir = os.path.dirname(f)
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for kind, inc in INCLUDE.findall(text):
            if kind == "<" and not inc.startswith("whisper/"):
                continue  # system and library headers
            if kind == "<":
                target = os.path.join("engine/include", inc)
            else:
                local = os.path.normpath(os.path.join(src_dir, inc))
                if local in files:
                    target = local
                else:
                    found = [c for c in by_name.get(os.path.basename(inc), [])
                             if c.endswith(inc)]
                    if len(found) != 1:
                        continue  # generated (config.h) or outside the tree
                    target = found[0]
            a, b = src_dir, os.path.dirname(target)
            if a != b:
                edges[(a, b)] = edges.get((a, b), 0) + 1
    folders = sorted({os.path.dirname(f) for f in files})
    upward = []
    lines = ["digraph architecture {", "  rankdir=TB; compound=true; newrank=true;",
             '  node [shape=box, style="rounded,filled", fillcolor="#f4f4f4", fontname="Helvetica"];',
             '  edge [color="#555555", fontname="Helvetica", fontsize=9];']
    for lib in SHIPPED:
        lines.append(f'  subgraph "cluster_{lib}" {{ label="{lib}/"; fontname="Helvetica-Bold"; '
                     'style=rounded; color="#999999";')
        for f in folders:
            if library(f) == lib:
                label = f[len(lib) + 1:] or f
                lines.append(f'    "{f}" [label="{label}"];')
        lines.append("  }")
    for (a, b), n in sorted(edges.items()):
        ra, rb = rank(a), rank(b)
        up = library(a) == library(b) and ra is not None and rb is not None and rb < ra
        if up:
            upward.append((a, b, n))
        color = ', color="#d00000", fontcolor="#d00000", penwidth=2' if up else ""
        lines.append(f'  "{a}" -> "{b}" [label="{n}"{color}];')
    lines.append("}")
    dot_path = os.path.splitext(out_png)[0] + ".dot"
    with open(dot_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    try:
        subprocess.run(["dot", "-Tpng", "-Gdpi=110", dot_path, "-o", out_png], check=True)
    finally:
        os.unlink(dot_path)
    print(f"{out_png}: {len(folders)} folders, {len(edges)} arrows, {len(upward)} pointing up")
    for a, b, n in upward:
        print(f"  up: {a} -> {b} ({n} includes)")
    return 1 if upward else 0


if __name__ == "__main__":
    sys.exit(main())
