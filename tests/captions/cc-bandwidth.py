#!/usr/bin/python3
"""cc-bandwidth.py: the bandwidth rule on fast speech. reference/fast.srt
is whispersink's SRT of espeak-ng reading news at 200 words a minute.

1. At its own pace (roll-up, one buffer per word; pop-on, one per
   segment), with the default max-delay: prints the delay the 608 channel
   costs (caption shown minus the text's time) and what was shortened.
2. Squeezed to SQUEEZE times its pace (beyond what 2 bytes a frame carry)
   in roll-up with max-delay=1000: text must be shortened and announced by
   cea608enc-shortened messages, and FFmpeg must read back exactly the
   reference words less the announced ones, in order (nothing reordered,
   nothing dropped silently).

  cc-bandwidth.py [SQUEEZE]
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cclib  # noqa: E402


def pct(vals, p):
    if not vals:
        return 0.0
    v = sorted(vals)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    squeeze = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    here = os.path.dirname(os.path.abspath(__file__))
    cues = cclib.parse_srt(os.path.join(here, 'reference', 'fast.srt'))
    nwords = len(cclib.words(' '.join(b for _, _, b in cues)))
    span = (cues[-1][1] - cues[0][0]) / 1000.0
    print('fast.srt: %d words in %.1f s (%.0f words a minute)' % (nwords, span, nwords * 60 / span))
    tmp = tempfile.mkdtemp()

    for mode, per_word in (('roll-up', True), ('pop-on', False)):
        bufs = cclib.cue_buffers(cues, per_word)
        ok, msgs, errors = cclib.encode(bufs, os.path.join(tmp, mode + '.mp4'), mode)
        if not ok:
            print(errors)
            return 1
        shown = [m for m in msgs if m.get_name() == 'cea608enc-caption']
        ends = {b[0] * 1000000: b[1] for b in bufs}
        if mode == 'roll-up':
            # a word is on screen when its last byte is sent; its time is its end
            d = [(m.get_value('shown') / 1e6) - ends.get(m.get_value('pts'), 0) for m in shown]
        else:
            d = [(m.get_value('shown') - m.get_value('pts')) / 1e6 for m in shown]
        d = [max(0.0, x) for x in d]
        sh = [m for m in msgs if m.get_name() == 'cea608enc-shortened']
        print('%s at 200 wpm, max-delay 3000: %d captions, delay p50 %.0f ms, p95 %.0f ms, '
              'max %.0f ms; %d shortened' % (mode, len(shown), pct(d, 50), pct(d, 95),
                                             max(d or [0]), len(sh)))

    squeezed = [(int(s / squeeze), int(e / squeeze), b) for s, e, b in cues]
    bufs = cclib.cue_buffers(squeezed, True)
    mp4 = os.path.join(tmp, 'squeezed.mp4')
    ok, msgs, errors = cclib.encode(bufs, mp4, 'roll-up', max_delay=1000)
    if not ok:
        print(errors)
        return 1
    sh = [m for m in msgs if m.get_name() == 'cea608enc-shortened']
    left = []
    for m in sh:
        left += m.get_value('left-out').split()
    srt = os.path.join(tmp, 'squeezed.srt')
    cclib.ffmpeg_cues(mp4, srt)
    got = cclib.words(' '.join(cclib.ffmpeg_rows(srt)))
    ref = cclib.words(' '.join(b for _, _, b in squeezed))
    # the reference less the announced words, in order
    expect = list(ref)
    for w in left:
        for i, r in enumerate(expect):
            if r == w:
                del expect[i]
                break
    print('squeezed x%.1f (%.0f wpm), roll-up, max-delay 1000: %d words, %d shortened texts, '
          '%d words left out and announced, %d read back by FFmpeg'
          % (squeeze, nwords * 60 * squeeze / span, len(ref), len(sh), len(left), len(got)))
    if not sh:
        print('nothing was shortened: the rule was not exercised')
        return 1
    same, diff = cclib.compare_words(expect, got)
    if not same:
        print('FFmpeg read other words than the sent ones: ' + diff)
        return 1
    # the left-out words are the last words of their texts: sent + left = text
    for m in sh:
        if (m.get_value('sent') + ' ' + m.get_value('left-out')).strip() != m.get_value('text'):
            print('shortened text is not sent + left-out: %s' % m.to_string())
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
