#!/usr/bin/env python3
"""Check the links between the project's Markdown files.

Usage: python3 tools/check-doc-links.py [ROOT]

Every relative link [text](path#anchor) in every *.md under ROOT (default:
the repository root) must name a file that exists, and an anchor must be a
heading of the target file, spelled as GitHub spells heading anchors (lower
case, punctuation other than '-' and '_' dropped, spaces as '-', repeats
numbered -1, -2, ...). http(s) links are not fetched. The picture
docs/architecture.png may be missing (it is added separately). Exits 1 when
a link is broken, printing each.
"""
import os
import re
import sys

ALLOWED_MISSING = {os.path.join("docs", "architecture.png")}


def slug(heading):
    heading = heading.strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found, seen, fence = set(), {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                if fence:
                    continue
                m = re.match(r"^(#{1,6})\s+(.*)", line)
                if m:
                    s = slug(m.group(2))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else f"{s}-{n}")
        _anchors[path] = found
    return _anchors[path]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    broken = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            p = os.path.join(d, name)
            with open(p, encoding="utf-8") as f:
                text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
            for m in re.finditer(r"\]\(([^)\s]+)\)", text):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target):
                    continue
                path, _, frag = target.partition("#")
                tgt = os.path.normpath(os.path.join(os.path.dirname(p), path)) if path else p
                if path and not os.path.exists(tgt):
                    if os.path.relpath(tgt, root) in ALLOWED_MISSING:
                        continue
                    print(f"{os.path.relpath(p, root)}: no file {target}")
                    broken += 1
                elif frag and tgt.endswith(".md") and frag not in anchors(tgt):
                    print(f"{os.path.relpath(p, root)}: no heading for {target}")
                    broken += 1
    print(f"{broken} broken link(s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
