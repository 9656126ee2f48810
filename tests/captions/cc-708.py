#!/usr/bin/python3
"""cc-708.py: CEA-708 through ccconverter, two channels at once. The
English of reference/jfk.srt goes to cea608enc's sink pad (CC1, field 1)
and the German of reference/german.srt to its sink_cc3 pad (CC3, field 2);
ccconverter wraps the 608 pairs into 708 cc_data, cccombiner attaches them
to the video frames, x264enc writes them as A/53 SEI and mpegtsmux into a
transport stream. FFmpeg (its lavfi movie source with subcc, then eia_608
on each field) must read back both languages' words.

  cc-708.py [MODE]
"""
import os
import subprocess
import sys
import tempfile

import gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cclib  # noqa: E402


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else 'pop-on'
    here = os.path.dirname(os.path.abspath(__file__))
    en = cclib.parse_srt(os.path.join(here, 'reference', 'jfk.srt'))
    de = cclib.parse_srt(os.path.join(here, 'reference', 'german.srt'))
    Gst.init(None)
    last_ms = max(e for _, e, _ in en + de) + 8000
    nframes = last_ms * 30000 // 1001000 + 1
    tmp = tempfile.mkdtemp()
    ts = os.path.join(tmp, 'out.ts')
    desc = ('appsrc name=en format=time caps="text/x-raw,format=utf8" ! enc.sink '
            'appsrc name=de format=time caps="text/x-raw,format=utf8" ! enc.sink_cc3 '
            'cea608enc name=enc mode=%s ! ccconverter ! '
            'closedcaption/x-cea-708,format=cc_data,framerate=30000/1001 ! comb.caption '
            'videotestsrc num-buffers=%d ! video/x-raw,width=320,height=240,'
            'framerate=30000/1001 ! cccombiner name=comb ! x264enc speed-preset=ultrafast '
            'tune=zerolatency key-int-max=30 ! h264parse ! mpegtsmux ! filesink location=%s'
            % (mode, nframes, ts))
    pipe = Gst.parse_launch(desc)
    for name, cues in (('en', en), ('de', de)):
        src = pipe.get_by_name(name)
        cclib.push_cues(src, cues)
    pipe.set_state(Gst.State.PLAYING)
    m = pipe.get_bus().timed_pop_filtered(300 * Gst.SECOND,
                                          Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipe.set_state(Gst.State.NULL)
    if m is None or m.type == Gst.MessageType.ERROR:
        print('pipeline failed:', m.parse_error() if m else 'timeout')
        return 1
    rc = 0
    for field, cues in (('first', en), ('second', de)):
        srt = os.path.join(tmp, field + '.srt')
        subprocess.run(['ffmpeg', '-v', 'error', '-y', '-data_field', field, '-f', 'lavfi',
                        '-i', 'movie=%s[out0+subcc]' % ts, '-map', '0:1', srt], check=True)
        if mode == 'roll-up':
            got = cclib.words(' '.join(cclib.ffmpeg_rows(srt)))
        else:
            got = cclib.words(' '.join(
                b for _, _, b in cclib.ffmpeg_cues_file(srt)))
        ref = cclib.words(' '.join(b for _, _, b in cues))
        same, diff = cclib.compare_words(ref, got)
        print('%s field (%s): %d reference words, %d read back by FFmpeg from the SEI%s'
              % (field, 'CC1' if field == 'first' else 'CC3', len(ref), len(got),
                 '' if same else '; differ: ' + diff))
        if not same:
            rc = 1
    return rc


if __name__ == '__main__':
    sys.exit(main())
