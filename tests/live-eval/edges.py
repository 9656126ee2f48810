#!/usr/bin/env python3
"""edges.py: where in its sentence each word error of a live-commit run is.

    python3 tests/live-eval/edges.py LOG PROGRAMME.tsv

LOG is the output of `live-commit --verbose --programme PROGRAMME.wav`
(run.sh --verbose keeps it in build/live-eval/logs/). Each pass's items
(its "every item in commit order" list) go to the clip whose span, widened
by 0.5 s, holds their midpoint (as live-commit.c's clip_at ()); each clip's
words are aligned with its reference (edit distance, wer-util.c's words:
lower-cased, letters, digits and apostrophes) and every reference word
marked right or wrong (a substitution or a deletion; an insertion counts
against the reference word after it, or the last). Printed per pass: the
error rate of the FIRST and the LAST reference word of the clips (the words
after and before a pause), and of the words between; then the clips whose
first or last word is wrong live and right offline, with both texts.
"""
import re
import sys

ITEM = re.compile(r'^\s+item\s+([\d.]+)-\s*([\d.]+) s .*"(.*)"$')
MARGIN = 0.5


def words(text):
    return [w for w in re.split(r"[^a-z0-9']+", text.lower()) if w]


def items_of(log, name):
    out, on = [], False
    for line in log:
        if line.startswith(f"{name}: every item in commit order:"):
            on = True
            continue
        if on:
            m = ITEM.match(line)
            if not m:
                break
            out.append((float(m.group(1)), float(m.group(2)), m.group(3)))
    return sorted(out, key=lambda it: it[0])


def wrong_marks(ref, hyp):
    """For each reference word: True when the alignment gets it wrong."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]), d[i - 1][j] + 1,
                          d[i][j - 1] + 1)
    marks, i, j = [False] * n, n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            marks[i - 1] |= ref[i - 1] != hyp[j - 1]
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            marks[i - 1] = True
            i -= 1
        else:   # an insertion: against the reference word after it
            if n:
                marks[min(i, n - 1)] = True
            j -= 1
    return marks


def per_clip(clips, items):
    texts = [[] for _ in clips]
    for a, b, text in items:
        mid = (a + b) / 2
        for k, (_, start, end, _) in enumerate(clips):
            if start - MARGIN <= mid < end + MARGIN:
                texts[k].append(text)
                break
    return [" ".join(t) for t in texts]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: edges.py LOG PROGRAMME.tsv")
    with open(sys.argv[1]) as f:
        log = f.read().splitlines()
    clips = []
    with open(sys.argv[2]) as f:
        for line in f:
            name, _, start, end, text = line.rstrip("\n").split("\t")
            clips.append((name, int(start) / 16000, int(end) / 16000, text))
    got = {}
    for name in ("live", "offline"):
        items = items_of(log, name)
        if not items:
            continue
        hyps = per_clip(clips, items)
        marks = [wrong_marks(words(c[3]), words(h)) for c, h in zip(clips, hyps)]
        got[name] = (hyps, marks)
        first = sum(m[0] for m in marks if m)
        last = sum(m[-1] for m in marks if len(m) > 1)
        inner = sum(sum(m[1:-1]) for m in marks)
        n_inner = sum(max(0, len(m) - 2) for m in marks)
        print(f"{name}: first words wrong {first}/{len(marks)}, last words wrong "
              f"{last}/{len(marks)}, words between wrong {inner}/{n_inner} "
              f"({100.0 * inner / max(1, n_inner):.1f} %)")
    if "live" in got and "offline" in got:
        print("clips whose first (F) or last (L) word is wrong live and right offline:")
        for k, c in enumerate(clips):
            lm, om = got["live"][1][k], got["offline"][1][k]
            flags = ("F" if lm and lm[0] and not om[0] else "") + \
                    ("L" if len(lm) > 1 and lm[-1] and not om[-1] else "")
            if flags:
                print(f"  {flags:2} {c[0]:10} {c[1]:7.2f}-{c[2]:7.2f} s  ref: {c[3]}\n"
                      f"     live:    {got['live'][0][k]}\n"
                      f"     offline: {got['offline'][0][k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
