#!/usr/bin/python3
"""cc-line21.py: cea608enc's bytes through line 21 and back. The captions
of reference/NAME.srt go from cea608enc (format=raw) both to a file and,
through cccombiner, into the VBI line 21 of 720x525 NTSC video with
line21encoder; line21decoder reads them back from the picture, ccextractor
and ccconverter turn them into raw byte pairs again. The two byte streams
must be the same, frame for frame.

  cc-line21.py NAME [MODE]
"""
import os
import sys

import gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cclib  # noqa: E402


def main():
    name = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else 'pop-on'
    here = os.path.dirname(os.path.abspath(__file__))
    bufs = cclib.cue_buffers(cclib.parse_srt(os.path.join(here, 'reference', name + '.srt')))
    Gst.init(None)
    last_ms = max(e for _, e, _ in bufs) + 8000
    nframes = last_ms * 30000 // 1001000 + 1
    desc = ('appsrc name=src format=time caps="text/x-raw,format=utf8" ! '
            'cea608enc name=enc mode=%s ! closedcaption/x-cea-608,format=raw,framerate=30000/1001 ! '
            'tee name=t ! queue ! appsink name=direct sync=false '
            't. ! queue ! ccconverter ! closedcaption/x-cea-608,format=s334-1a ! comb.caption '
            'videotestsrc num-buffers=%d pattern=black ! video/x-raw,format=I420,width=720,'
            'height=525,interlace-mode=interleaved,framerate=30000/1001 ! '
            'cccombiner name=comb ! line21encoder ! line21decoder ! ccextractor name=ex '
            'ex.src ! queue ! fakesink sync=false '
            'ex.caption ! queue ! ccconverter ! closedcaption/x-cea-608,format=raw ! '
            'appsink name=back sync=false' % (mode, nframes))
    pipe = Gst.parse_launch(desc)
    src = pipe.get_by_name('src')
    cclib.push_cues(src, bufs)

    got = {'direct': {}, 'back': {}}

    def on_sample(sink, key):
        smp = sink.emit('pull-sample')
        buf = smp.get_buffer()
        ok, info = buf.map(Gst.MapFlags.READ)
        got[key][buf.pts] = bytes(info.data)
        buf.unmap(info)
        return Gst.FlowReturn.OK

    for key in ('direct', 'back'):
        sink = pipe.get_by_name(key)
        sink.set_property('emit-signals', True)
        sink.connect('new-sample', on_sample, key)
    bus = pipe.get_bus()
    pipe.set_state(Gst.State.PLAYING)
    m = bus.timed_pop_filtered(600 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipe.set_state(Gst.State.NULL)
    if m is None or m.type == Gst.MessageType.ERROR:
        print('pipeline failed:', m.parse_error() if m else 'timeout')
        return 1
    direct, back = got['direct'], got['back']
    nonpad = [t for t, d in direct.items() if d != b'\x80\x80']
    missing = [t for t in nonpad if back.get(t) != direct[t]]
    extra = [t for t, d in back.items() if d != b'\x80\x80' and direct.get(t) != d]
    print('%s %s: %d frames from cea608enc (%d with caption bytes), %d frames read back '
          'from line 21; %d caption pairs lost or changed, %d spurious'
          % (name, mode, len(direct), len(nonpad), len(back), len(missing), len(extra)))
    for t in (missing + extra)[:5]:
        print('  at %d ns: sent %r, read %r' % (t, direct.get(t), back.get(t)))
    return 0 if nonpad and not missing and not extra else 1


if __name__ == '__main__':
    sys.exit(main())
