#!/usr/bin/python3
"""cc_pipeline.py: text cues (an SRT file) -> cea608enc -> an MP4 with a c608
track beside an MJPEG video track (or raw 608 bytes), for the captions tests.

Usage: cc_pipeline.py IN.srt OUT.mp4 [--mode pop-on|roll-up|paint-on]
         [--fps N/D] [--words] [--raw OUT.bin] [--max-delay MS]
Each cue becomes one text/x-raw,format=utf8 buffer with the cue's PTS and
duration (--words: one buffer per word, the cue's time shared by characters).
Element messages of cea608enc are written to OUT.mp4.messages (one line each).
"""
import argparse
import re
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

    Gst.init(None)
    cues = parse_srt(a.srt)
    bufs = []
    for start, end, body in cues:
        if a.words:
            words = body.split()
            total = sum(len(w) + 1 for w in words) or 1
            t = 0
            for w in words:
                s = start + (end - start) * t // total
                t += len(w) + 1
                e = start + (end - start) * t // total
                bufs.append((s, max(e, s + 1), w))
        else:
            bufs.append((start, end, body))
    last_ms = max([e for _, e, _ in bufs] or [0]) + 6000
    fn, fd = [int(x) for x in a.fps.split('/')]
    nframes = last_ms * fn // (fd * 1000) + 1

    if a.raw:
        desc = ('appsrc name=src format=time caps="text/x-raw,format=utf8" ! '
                'cea608enc name=enc mode=%s max-delay=%d ! '
                'closedcaption/x-cea-608,format=raw,framerate=%s ! '
                'filesink location=%s' % (a.mode, a.max_delay, a.fps, a.raw))
    else:
        desc = ('appsrc name=src format=time caps="text/x-raw,format=utf8" ! '
                'cea608enc name=enc mode=%s max-delay=%d framerate=%s ! ccconverter ! '
                'closedcaption/x-cea-608,format=s334-1a ! mux.caption_0 '
                'videotestsrc num-buffers=%d pattern=black ! '
                'video/x-raw,width=64,height=48,framerate=%s ! jpegenc ! mux.video_0 '
                'qtmux name=mux ! filesink location=%s'
                % (a.mode, a.max_delay, a.fps, nframes, a.fps, a.out))
    pipe = Gst.parse_launch(desc)
    src = pipe.get_by_name('src')
    for s, e, body in bufs:
        b = Gst.Buffer.new_wrapped(body.encode('utf-8'))
        b.pts = s * Gst.MSECOND
        b.duration = (e - s) * Gst.MSECOND
        src.emit('push-buffer', b)
    src.emit('end-of-stream')

    msgs = open((a.raw or a.out) + '.messages', 'w', encoding='utf-8')
    bus = pipe.get_bus()
    pipe.set_state(Gst.State.PLAYING)
    rc = 0
    while True:
        m = bus.timed_pop_filtered(120 * Gst.SECOND,
                                   Gst.MessageType.EOS | Gst.MessageType.ERROR |
                                   Gst.MessageType.ELEMENT | Gst.MessageType.WARNING)
        if m is None:
            print('timeout', file=sys.stderr)
            rc = 1
            break
        if m.type == Gst.MessageType.EOS:
            break
        if m.type == Gst.MessageType.ERROR:
            err, dbg = m.parse_error()
            print('ERROR', err.message, dbg, file=sys.stderr)
            rc = 1
            break
        if m.type == Gst.MessageType.WARNING:
            err, dbg = m.parse_warning()
            print('WARNING', err.message, dbg, file=sys.stderr)
        if m.type == Gst.MessageType.ELEMENT and m.src.get_name() == 'enc':
            msgs.write(m.get_structure().to_string() + '\n')
    stats = pipe.get_by_name('enc').get_property('stats')
    msgs.write(stats.to_string() + '\n')
    pipe.set_state(Gst.State.NULL)
    msgs.close()
    return rc


if __name__ == '__main__':
    sys.exit(main())
