#!/usr/bin/env python3
"""The engine's and the element's files call each other one way only, and
the engine's layers point down: core -> decode, timing -> net -> backend
-> util; audio, text, model and vad under core and above util;
backend/cpu/ implements backend/ (the table); so do the element's folders:
element/ -> task/ -> remote/ -> io/ -> settings/, and shared/ below task/
(PLUGIN_LAYERS).

From the symbols each object file defines and needs (`nm`), every "file A
calls file B" edge of one library; fails on a loop of files (two files that
call each other included) and, for the engine, on an edge that points up a
layer. Object files are named as meson names them: a file of
engine/src/net/ is src_net_<name>.c.o in libwhisper-engine-internal.a.p/.

Usage: check-layers.py ENGINE_OBJECT_DIR PLUGIN_OBJECT_DIR
"""

import glob
import os
import subprocess
import sys

# engine folder -> the folders its files may call (besides their own)
ENGINE_LAYERS = {
    "util": set(),
    "backend": {"util"},
    "backend/cpu": {"util", "backend"},
    "model": {"util"},
    "audio": {"util"},
    "text": {"util"},
    "vad": {"util"},
    "net": {"util", "backend", "model"},
    # (the logit rules run on the host with the CPU backend's vector reductions)
    "decode": {"util", "backend", "backend/cpu", "net", "text"},
    "timing": {"util", "backend", "net", "text"},
    "core": {"util", "backend", "backend/cpu", "model", "audio", "text", "vad", "net",
             "decode", "timing"},
}


# The element's folders (gst-plugin/): folder -> the folders its files may
# call (besides their own). Object files are named <folder>_<name>.c.o.
PLUGIN_LAYERS = {
    "settings": set(),
    "shared": set(),
    "io": {"settings"},
    "remote": {"io", "settings"},
    "task": {"remote", "io", "settings", "shared"},
    "element": {"task", "remote", "io", "settings", "shared", "captions"},
    # cea608enc: an element of its own, registered by element/plugin.c
    "captions": set(),
}


def plugin_layer_failures(edges):
    """The element's calls that point up a folder, or from a file in none."""
    found = 0
    for (a, b), syms in sorted(edges.items()):
        fa, fb = a.split("_", 1)[0], b.split("_", 1)[0]
        if fa not in PLUGIN_LAYERS or fb not in PLUGIN_LAYERS:
            print(f"FAIL: element: {a} -> {b}: a file in no folder of gst-plugin/ "
                  f"({', '.join(sorted(PLUGIN_LAYERS))})")
            found += 1
        elif fa != fb and fb not in PLUGIN_LAYERS[fa]:
            print(f"FAIL: element: {a} ({fa}/) calls {b} ({fb}/), a folder it must not "
                  f"call: {', '.join(sorted(syms))}")
            found += 1
    return found


def symbols(obj, flags):
    out = subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def edges_of(obj_dir):
    objects = sorted(glob.glob(os.path.join(obj_dir, "*.c.o")))
    if len(objects) < 2:
        sys.exit(f"check-layers: no object files in {obj_dir} (is it built?)")
    name = {o: os.path.basename(o)[:-len(".c.o")] for o in objects}
    defined = {}
    for o in objects:
        for sym in symbols(o, ["-g", "--defined-only"]):
            defined[sym] = name[o]
    edges = {}
    for o in objects:
        for sym in symbols(o, ["-u"]):
            target = defined.get(sym)
            if target and target != name[o]:
                edges.setdefault((name[o], target), []).append(sym)
    return sorted(name.values()), edges


def find_loop(nodes, edges):
    """A loop of files as a list, or None (depth-first search)."""
    succ = {n: sorted({b for (a, b) in edges if a == n}) for n in nodes}
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in succ[n]:
            if state.get(m) == "open":
                return stack[stack.index(m):] + [m]
            if m not in state:
                loop = visit(m)
                if loop:
                    return loop
        stack.pop()
        state[n] = "done"
        return None

    for n in nodes:
        if n not in state:
            loop = visit(n)
            if loop:
                return loop
    return None


def folder(obj_name):
    """The engine folder of an object file (src_backend_cpu_x.c.o -> backend/cpu);
    the element's files have no folder."""
    if not obj_name.startswith("src_"):
        return "top"
    parts = obj_name.split("_")
    if parts[1] == "backend" and parts[2] == "cpu":
        return "backend/cpu"
    return parts[1] if parts[1] in ENGINE_LAYERS else "top"


failures = 0
checks = 0
for label, obj_dir, layered in (("engine", sys.argv[1], True), ("element", sys.argv[2], False)):
    nodes, edges = edges_of(obj_dir)
    print(f"{label}: {len(nodes)} files, {len(edges)} calls between them")
    for (a, b), syms in sorted(edges.items()):
        print(f"  {a} -> {b}: {', '.join(sorted(syms)[:4])}{' ...' if len(syms) > 4 else ''}")
    loop = find_loop(nodes, edges)
    checks += 1
    if loop:
        print(f"FAIL: {label}: these files call each other in a loop: {' -> '.join(loop)}")
        failures += 1
    if layered:
        checks += 1
        for (a, b), syms in sorted(edges.items()):
            fa, fb = folder(a), folder(b)
            if fa != fb and fb not in ENGINE_LAYERS.get(fa, set()):
                print(f"FAIL: engine: {a} ({fa}/) calls {b} ({fb}/), a layer it must not "
                      f"call: {', '.join(sorted(syms))}")
                failures += 1
    else:
        checks += 1
        failures += plugin_layer_failures(edges)

print(f"{checks - min(failures, checks)} passed, {min(failures, checks)} failed")
sys.exit(1 if failures else 0)
