#!/usr/bin/python3
"""cclib.py: the captions tests' helpers. Text cues (an SRT file) ->
cea608enc -> an MP4 with a c608 track beside an MJPEG video track (or raw
608 bytes), FFmpeg's reading of the track (its eia_608 decoder) back to
cues, and the word comparison.

As a program: cclib.py IN.srt OUT.mp4 [--mode pop-on|roll-up|paint-on]
         [--fps N/D] [--words] [--raw OUT.bin] [--max-delay MS]
Each cue becomes one text/x-raw,format=utf8 buffer with the cue's PTS and
duration (--words: one buffer per word, the cue's time shared by characters).
Element messages of cea608enc are written to OUT.mp4.messages (one line each).
"""
import argparse
import re
import subprocess
import sys

import gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst, GLib  # noqa: E402


def parse_srt(path):
    cues = []
    text = open(path, encoding='utf-8').read().replace('\r', '')
    for block in re.split(r'\n\s*\n', text.strip()):
        lines = block.split('\n')
        for i, line in enumerate(lines):
            m = re.match(r'(\d+):(\d+):(\d+)[,.](\d+)\s*-->\s*(\d+):(\d+):(\d+)[,.](\d+)', line)
            if m:
                g = [int(x) for x in m.groups()]
                start = ((g[0] * 60 + g[1]) * 60 + g[2]) * 1000 + g[3]
                end = ((g[4] * 60 + g[5]) * 60 + g[6]) * 1000 + g[7]
                body = ' '.join(lines[i + 1:]).strip()
                cues.append((start, end, body))
                break
    return cues


def cue_buffers(cues, words=False):
    """(start ms, end ms, text) of each text buffer."""
    bufs = []
    for start, end, body in cues:
        if words:
            ws = body.split()
            total = sum(len(w) + 1 for w in ws) or 1
            t = 0
            for w in ws:
                s = start + (end - start) * t // total
                t += len(w) + 1
                e = start + (end - start) * t // total
                bufs.append((s, max(e, s + 1), w))
        else:
            bufs.append((start, end, body))
    return bufs


def push_cues(src, cues):
    """Pushes (start ms, end ms, text) into appsrc SRC as timed UTF-8
    buffers, then EOS."""
    for s, e, body in cues:
        b = Gst.Buffer.new_wrapped(body.encode('utf-8'))
        b.pts = s * Gst.MSECOND
        b.duration = (e - s) * Gst.MSECOND
        src.emit('push-buffer', b)
    src.emit('end-of-stream')


def encode(bufs, out, mode='pop-on', fps='30000/1001', max_delay=3000, raw=None,
           enc_props=''):
    """Runs appsrc ! cea608enc ... into the MP4 out (or raw 608 bytes into
    raw); returns (ok, element messages as Gst.Structure strings, errors)."""
    Gst.init(None)
    last_ms = max([e for _, e, _ in bufs] or [0]) + 8000
    fn, fd = [int(x) for x in fps.split('/')]
    nframes = last_ms * fn // (fd * 1000) + 1
    enc = ('cea608enc name=enc mode=%s max-delay=%d post-messages=true %s'
           % (mode, max_delay, enc_props))
    if raw:
        desc = ('appsrc name=src format=time caps="text/x-raw,format=utf8" ! %s ! '
                'closedcaption/x-cea-608,format=raw,framerate=%s ! '
                'filesink location=%s' % (enc, fps, raw))
    else:
        desc = ('appsrc name=src format=time caps="text/x-raw,format=utf8" ! '
                '%s framerate=%s ! ccconverter ! '
                'closedcaption/x-cea-608,format=s334-1a ! mux.caption_0 '
                'videotestsrc num-buffers=%d pattern=black ! '
                'video/x-raw,width=64,height=48,framerate=%s ! jpegenc ! mux.video_0 '
                'qtmux name=mux ! filesink location=%s'
                % (enc, fps, nframes, fps, out))
    pipe = Gst.parse_launch(desc)
    src = pipe.get_by_name('src')
    push_cues(src, bufs)

    msgs, errors = [], []
    bus = pipe.get_bus()
    pipe.set_state(Gst.State.PLAYING)
    ok = True
    while True:
        m = bus.timed_pop_filtered(300 * Gst.SECOND,
                                   Gst.MessageType.EOS | Gst.MessageType.ERROR |
                                   Gst.MessageType.ELEMENT | Gst.MessageType.WARNING)
        if m is None:
            errors.append('timeout')
            ok = False
            break
        if m.type == Gst.MessageType.EOS:
            break
        if m.type == Gst.MessageType.ERROR:
            err, dbg = m.parse_error()
            errors.append('ERROR %s %s' % (err.message, dbg))
            ok = False
            break
        if m.type == Gst.MessageType.WARNING:
            err, dbg = m.parse_warning()
            errors.append('WARNING %s %s' % (err.message, dbg))
        if m.type == Gst.MessageType.ELEMENT and m.src.get_name() == 'enc':
            msgs.append(m.get_structure().copy())
    msgs.append(pipe.get_by_name('enc').get_property('stats'))
    pipe.set_state(Gst.State.NULL)
    return ok, msgs, errors


def ffmpeg_cues(mp4, srt_out, data_field=None):
    """FFmpeg's reading of the MP4's first subtitle track (eia_608) as cues,
    the Monospace font tags and the {\\an7} position taken out."""
    cmd = ['ffmpeg', '-v', 'error', '-y']
    if data_field is not None:
        cmd += ['-data_field', data_field]
    cmd += ['-i', mp4, '-map', '0:s:0', srt_out]
    subprocess.run(cmd, check=True)
    return ffmpeg_cues_file(srt_out)


def ffmpeg_cues_file(srt_out):
    """The cues of an SRT file FFmpeg wrote, its tags taken out."""
    cues = parse_srt(srt_out)
    clean = []
    for s, e, body in cues:
        body = re.sub(r'<[^>]*>', '', body)
        body = re.sub(r'\{[^}]*\}', '', body)
        clean.append((s, e, body))
    return clean


def ffmpeg_rows(srt_out):
    """The last row of each cue (roll-up: each cue FFmpeg writes is the
    window after a new row), a row that grew replacing its prefix."""
    text = open(srt_out, encoding='utf-8').read().replace('\r', '')
    rows = []
    for block in re.split(r'\n\s*\n', text.strip()):
        lines = [l for l in block.split('\n') if l.strip()]
        if len(lines) < 3:
            continue
        last = re.sub(r'<[^>]*>', '', lines[-1])
        last = re.sub(r'\{[^}]*\}', '', last).strip()
        if rows and last.startswith(rows[-1]):
            rows[-1] = last
        elif not rows or rows[-1] != last:
            rows.append(last)
    return rows


BASIC_NON_ASCII = set('\u00e1\u00e9\u00ed\u00f3\u00fa\u00e7\u00f7\u00d1\u00f1\u2019\u25a0')
SPECIAL = set('\u00ae\u00b0\u00bd\u00bf\u2122\u00a2\u00a3\u266a\u00e0\u00e8\u00e2\u00ea\u00ee\u00f4\u00fb')
NOT_BASIC_ASCII = set('*\\^_`{|}~')


def row_pairs(row):
    """Byte pairs a row of text takes in 608 (47 CFR 79.101: two basic
    characters a pair; special characters twice; extended characters
    after a fallback character, twice), counted independently of the
    element."""
    pairs, pending = 0, False
    for ch in row:
        if (ord(ch) < 0x7f and ch not in NOT_BASIC_ASCII) or ch in BASIC_NON_ASCII:
            if pending:
                pairs += 1
            pending = not pending
        elif ch in SPECIAL:
            pairs += 2 + (1 if pending else 0)
            pending = False
        else:
            pairs += 3
            pending = False
    return pairs + (1 if pending else 0)


def rows_of(text, width=32):
    rows, cur = [], ''
    for w in text.split():
        if cur and len(cur) + 1 + len(w) <= width:
            cur += ' ' + w
        else:
            if cur:
                rows.append(cur)
            while len(w) > width:
                rows.append(w[:width])
                w = w[width:]
            cur = w
    if cur:
        rows.append(cur)
    return rows


def popon_load_frames(text):
    """Frames a pop-on caption's load takes: RCL and ENM twice, a PAC twice
    and the characters of each row."""
    return 4 + sum(2 + row_pairs(r) for r in rows_of(text))


FOLD = {'\u2019': "'", '\u2018': "'", '\u201c': '"', '\u201d': '"', '\u2014': '-',
        '\u2013': '-'}


def words(text):
    """Words for the comparison: typographic quotes and dashes folded."""
    for k, v in FOLD.items():
        text = text.replace(k, v)
    return text.split()


def compare_words(ref, got):
    """(equal, first difference as a string)."""
    if ref == got:
        return True, ''
    import difflib
    sm = difflib.SequenceMatcher(a=ref, b=got, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != 'equal':
            return False, '%s ref[%d:%d]=%r got[%d:%d]=%r' % (
                tag, i1, i2, ref[i1:i2][:8], j1, j2, got[j1:j2][:8])
    return False, 'differ'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('srt')
    ap.add_argument('out')
    ap.add_argument('--mode', default='pop-on')
    ap.add_argument('--fps', default='30000/1001')
    ap.add_argument('--words', action='store_true')
    ap.add_argument('--raw')
    ap.add_argument('--max-delay', type=int, default=3000)
    a = ap.parse_args()
    ok, msgs, errors = encode(cue_buffers(parse_srt(a.srt), a.words), a.out, a.mode,
                              a.fps, a.max_delay, a.raw)
    with open((a.raw or a.out) + '.messages', 'w', encoding='utf-8') as f:
        for m in msgs:
            f.write(m.to_string() + '\n')
    for e in errors:
        print(e, file=sys.stderr)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
