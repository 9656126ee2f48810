#!/usr/bin/python3
"""cc-overlay.py: cea608enc's native 708 drawn by cc708overlay. Timed text
goes through cea608enc with closedcaption/x-cea-708 caps (format=cc_data,
or cdp with --cdp) into cc708overlay's cc_sink beside a black test
picture; appsink takes the frames as GRAY8. A frame shows caption pixels
(bright pixels in the bottom part of the picture) when a caption is on
screen and none otherwise; a frame of the plain picture has none.

cc708overlay stamps what a caption buffer changes with the time of the
caption buffer before it (it takes the buffer's PTS after decoding it),
so it draws every change one frame before the frame cea608enc sent it in;
the checks allow that frame.

--roundtrip: the 608 part instead: cea608enc's cc_data through
ccconverter back to closedcaption/x-cea-608, format=raw must be the bytes
cea608enc writes with format=raw.

  cc-overlay.py [--mode pop-on|roll-up|paint-on] [--cdp]
  cc-overlay.py --roundtrip [--mode MODE]
  cc-overlay.py --png OUT.png --at S [--srt CUES.srt] [--size WxH] [--pattern P]
                (the frame at S seconds, in colour, no checks)
"""
import argparse
import os
import sys

import gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cclib  # noqa: E402

W, H = 640, 360
FPS_N, FPS_D = 30000, 1001
# (start ms, end ms, text): the captions of the test
CUES = [(1000, 3000, 'Hello from native CEA-708'),
        (4000, 5500, 'A second caption, two rows long when it is broken')]
BRIGHT = 128


def frame_index(ms):
    return ms * FPS_N // (FPS_D * 1000)


def run(mode, fmt, png=None, at_s=None, cues=None, size=(W, H), pattern='black'):
    cues = cues or CUES
    w, h = size
    nframes = frame_index(max(e for _, e, _ in cues) + 1500)
    desc = ('appsrc name=text format=time caps="text/x-raw,format=utf8" ! '
            'cea608enc mode=%s ! closedcaption/x-cea-708,format=%s ! ov.cc_sink '
            'videotestsrc pattern=%s num-buffers=%d ! '
            'video/x-raw,width=%d,height=%d,framerate=%d/%d ! ov.video_sink '
            'cc708overlay name=ov ! videoconvert ! video/x-raw,format=%s ! '
            'appsink name=out sync=true emit-signals=false'
            % (mode, fmt, pattern, nframes, w, h, FPS_N, FPS_D, 'RGB' if png else 'GRAY8'))
    pipe = Gst.parse_launch(desc)
    src = pipe.get_by_name('text')
    cclib.push_cues(src, cues)
    sink = pipe.get_by_name('out')
    pipe.set_state(Gst.State.PLAYING)
    lit = []
    while True:
        sample = sink.emit('try-pull-sample', 10 * Gst.SECOND)
        if sample is None:
            break
        buf = sample.get_buffer()
        ok, m = buf.map(Gst.MapFlags.READ)
        data = m.data
        n = 0
        if png is not None:
            if abs(buf.pts - at_s * Gst.SECOND) * FPS_N < Gst.SECOND * FPS_D // 2:
                save_png(png, data, (3 * w + 3) // 4 * 4, w, h)
        else:
            stride = (w + 3) // 4 * 4
            for y in range(h // 2, h):
                row = data[y * stride:y * stride + w]
                n += sum(1 for v in row if v >= BRIGHT)
        buf.unmap(m)
        lit.append((buf.pts, n))
    msg = pipe.get_bus().pop_filtered(Gst.MessageType.ERROR)
    pipe.set_state(Gst.State.NULL)
    if msg:
        print('pipeline error:', msg.parse_error())
        return None
    return lit


def raw_bytes(mode, via_708):
    """cea608enc's 608 bytes of CUES, straight (format=raw) or through
    cc_data and ccconverter."""
    conv = ('closedcaption/x-cea-708,format=cc_data ! ccconverter ! '
            if via_708 else '')
    pipe = Gst.parse_launch(
        'appsrc name=text format=time caps="text/x-raw,format=utf8" ! '
        'cea608enc mode=%s ! %sclosedcaption/x-cea-608,format=raw,framerate=%d/%d ! '
        'appsink name=out sync=false' % (mode, conv, FPS_N, FPS_D))
    src = pipe.get_by_name('text')
    cclib.push_cues(src, CUES)
    sink = pipe.get_by_name('out')
    pipe.set_state(Gst.State.PLAYING)
    out = []
    while True:
        sample = sink.emit('try-pull-sample', 10 * Gst.SECOND)
        if sample is None:
            break
        buf = sample.get_buffer()
        out.append((buf.pts, bytes(buf.map(Gst.MapFlags.READ)[1].data)))
    pipe.set_state(Gst.State.NULL)
    return out


def roundtrip(mode):
    straight = raw_bytes(mode, False)
    back = raw_bytes(mode, True)
    data = [d for _, d in straight if d != b'\x80\x80']
    print('%s: %d frames straight, %d through cc_data and ccconverter, %d byte pairs '
          'other than padding' % (mode, len(straight), len(back), len(data)))
    if not data or straight != back[:len(straight)] or \
            any(d != b'\x80\x80' for _, d in back[len(straight):]):
        for i, (a, b) in enumerate(zip(straight, back)):
            if a != b:
                print('first difference at frame %d: %r %r' % (i, a, b))
                break
        return 1
    return 0


def save_png(path, data, stride, w, h):
    """An RGB frame as a PNG (zlib, no filter)."""
    import struct
    import zlib
    raw = b''.join(b'\x00' + bytes(data[y * stride:y * stride + 3 * w]) for y in range(h))

    def chunk(kind, body):
        c = struct.pack('>I', len(body)) + kind + body
        return c + struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n')
        f.write(chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b'IDAT', zlib.compress(raw, 9)))
        f.write(chunk(b'IEND', b''))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--mode', default='pop-on')
    ap.add_argument('--cdp', action='store_true')
    ap.add_argument('--png')
    ap.add_argument('--at', type=float, default=2.0)
    ap.add_argument('--roundtrip', action='store_true')
    ap.add_argument('--first-at-zero', action='store_true',
                    help='pop-on: the first caption at 0 s (painted: it cannot be loaded '
                    'before it), the next one right after it')
    ap.add_argument('--srt', help='--png: the cues of an SRT file')
    ap.add_argument('--size', default='1280x720', help='--png: the picture size')
    ap.add_argument('--pattern', default='smpte', help='--png: the videotestsrc pattern')
    a = ap.parse_args()
    Gst.init(None)
    if a.roundtrip:
        return roundtrip(a.mode)
    if a.png:
        cues = cclib.parse_srt(a.srt) if a.srt else CUES
        size = tuple(int(x) for x in a.size.split('x'))
        run(a.mode, 'cdp' if a.cdp else 'cc_data', a.png, a.at, cues, size, a.pattern)
        return 0 if os.path.exists(a.png) else 1
    if a.first_at_zero:
        CUES[:] = [(0, 2000, 'Painted from the first frame on'),
                   (2000, 3500, 'Then loaded and shown whole')]
    lit = run(a.mode, 'cdp' if a.cdp else 'cc_data')
    if not lit:
        print('no frames')
        return 1
    rc = 0
    fms = FPS_D * 1000 / FPS_N
    for k, (s, e, body) in enumerate(CUES):
        # a pop-on caption at 0 s is painted as it is sent
        popon = a.mode == 'pop-on' and not (a.first_at_zero and k == 0)
        first, last = frame_index(s), frame_index(e)
        # pop-on: every frame from the caption's start to its end, but for
        # the frame each end may move by (the renderer's)
        lo, hi = (first + 1, last - 2) if popon else (first + 3, last - 3)
        inside = [n for pts, n in lit if lo <= round(pts / Gst.MSECOND / fms) <= hi]
        shown = sum(1 for n in inside if n > 0)
        print('"%s" %d-%d ms: %d of %d frames inside show caption pixels (at most %d)'
              % (body, s, e, shown, len(inside), max(inside or [0])))
        # pop-on shows the whole caption from its start; roll-up and
        # paint-on paint it as it is sent
        need = len(inside) if popon else len(inside) // 2
        if shown < need:
            rc = 1
    # outside every caption (and before the first): the plain black picture
    popon = a.mode == 'pop-on'
    spans = [(frame_index(s) - 2, frame_index(e) + (1 if popon else 3) +
              (frame_index(5000) if a.mode == 'roll-up' else 0)) for s, e, _ in CUES]
    outside = [(pts, n) for pts, n in lit
               if not any(a0 <= round(pts / Gst.MSECOND / fms) <= b0 for a0, b0 in spans)]
    bad = [(pts // Gst.MSECOND, n) for pts, n in outside if n > 0]
    print('%d frames outside the captions, %d with caption pixels%s'
          % (len(outside), len(bad), (': ' + str(bad[:5])) if bad else ''))
    if bad:
        rc = 1
    return rc


if __name__ == '__main__':
    sys.exit(main())
