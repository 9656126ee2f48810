#!/usr/bin/python3
"""cc-roundtrip.py: whispersink's stored SRT (reference/NAME.srt) through
cea608enc into an MP4's c608 track, read back by FFmpeg's eia_608 decoder
(an independent implementation); the words must be the reference's words,
and in pop-on each caption must start within 2 frames of its text's PTS
(unless the channel's bandwidth delayed it, which the element announces
and which must stay within max-delay).

  cc-roundtrip.py NAME MODE [--fps N/D] [--words] [--max-delay MS]
Exit 0 when it holds, 1 with the first difference otherwise.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cclib  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('name')
    ap.add_argument('mode')
    ap.add_argument('--fps', default='30000/1001')
    ap.add_argument('--words', action='store_true')
    ap.add_argument('--max-delay', type=int, default=3000)
    a = ap.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    ref_cues = cclib.parse_srt(os.path.join(here, 'reference', a.name + '.srt'))
    bufs = cclib.cue_buffers(ref_cues, a.words)
    fn, fd = [int(x) for x in a.fps.split('/')]
    frame_ms = 1000.0 * fd / fn

    with tempfile.TemporaryDirectory() as tmp:
        mp4 = os.path.join(tmp, 'out.mp4')
        srt = os.path.join(tmp, 'out.srt')
        ok, msgs, errors = cclib.encode(bufs, mp4, a.mode, a.fps, a.max_delay)
        for e in errors:
            print(e)
        if not ok:
            return 1
        cues = cclib.ffmpeg_cues(mp4, srt)
        if a.mode == 'roll-up':
            got_text = ' '.join(cclib.ffmpeg_rows(srt))
        else:
            got_text = ' '.join(b for _, _, b in cues)
        ref = cclib.words(' '.join(b for _, _, b in ref_cues))
        got = cclib.words(got_text)
        shortened = [m for m in msgs if m.get_name() == 'cea608enc-shortened']
        stats = msgs[-1]
        print('%s %s: %d reference words, %d read back by FFmpeg, %d cues; %s'
              % (a.name, a.mode, len(ref), len(got), len(cues), stats.to_string()))
        if shortened:
            print('shortened: %d texts' % len(shortened))
            return 1
        same, diff = cclib.compare_words(ref, got)
        if not same:
            print('words differ: ' + diff)
            return 1
        if a.mode != 'pop-on':
            return 0

        shown = [m for m in msgs if m.get_name() == 'cea608enc-caption']
        if len(shown) != len(cues):
            print('%d captions shown by cea608enc, %d cues read by FFmpeg' % (len(shown), len(cues)))
            return 1
        late = []
        worst = 0.0
        prev_start = 0.0
        for m, (s, e, body) in zip(shown, cues):
            pts_ms = m.get_value('pts') / 1e6
            shown_ms = m.get_value('shown') / 1e6
            if abs(s - shown_ms) > frame_ms + 1:
                print('cue at %d ms, cea608enc showed it at %.0f ms' % (s, shown_ms))
                return 1
            d = s - pts_ms
            worst = max(worst, d)
            if d > 2 * frame_ms + 1:
                late.append((pts_ms, d, body, prev_start))
            prev_start = s
        print('pop-on: %d captions, start minus text PTS at most %.0f ms (%.1f frames); '
              '%d later than 2 frames' % (len(cues), worst, worst / frame_ms, len(late)))
        for pts_ms, d, body, prev in late:
            # late only as the channel forces it: the load (one pair a frame)
            # starts after the previous caption's EOC (or the stream start),
            # an EDM of the shown caption may come between
            load = cclib.popon_load_frames(body)
            earliest = prev + (2 + load + 2 + 2) * frame_ms if prev > 0 else (load + 2) * frame_ms
            print('  late by %.0f ms (%.1f frames) at %.0f ms: its load takes %d frames after '
                  '%.0f ms: %s' % (d, d / frame_ms, pts_ms, load, prev, body))
            if pts_ms + d > earliest + frame_ms + 1 or d > a.max_delay + frame_ms:
                print('  later than the channel forces')
                return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
