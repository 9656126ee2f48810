#!/usr/bin/python3
"""live-captions.py: live captions at real time, for DURATION seconds (not
part of the suite; tests/captions/live-captions.sh runs it).

A live appsrc plays a speech programme (a 16-kHz mono WAV, looped) in
100-ms buffers at real time into whispersink (output=words, latency L),
cea608enc (mode auto: roll-up for this live input; native 708 cc_data, the
608 pairs in its first triplets) into cccombiner beside a live 29.97-fps
videotestsrc, then ccextractor (meta kept) and cc708overlay into a synced
fakesink; cc708overlay renders the caption stream ccextractor takes off the
frames (its cc_sink pad).

Reported and checked:
  - caption data lost: the byte pairs cea608enc sent (a tee) against those
    ccextractor finds on the video frames after cccombiner, frame by frame;
    words whispersink gave against words cea608enc sent (cea608enc-caption
    messages) and left out (cea608enc-shortened);
  - frames: video frames at the sink against the frames the duration holds,
    PTS holes, QoS drops;
  - caption delay: for each word, the running time its last byte is on the
    video (cea608enc-caption "shown") minus the word's PTS, plus the
    pipeline latency (the video, and so the caption, is rendered latency
    after its running time): p50, p95, max, against L + 1 s.

  live-captions.py PROGRAMME.wav DURATION_S [--latency MS] [--model DIR]
"""
import argparse
import sys
import threading
import time
import wave

import gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst, GLib  # noqa: E402

BUF_MS = 100


def pct(v, p):
    if not v:
        return float('nan')
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('wav')
    ap.add_argument('duration', type=float)
    ap.add_argument('--latency', type=int, default=3000)
    ap.add_argument('--model', default='')
    a = ap.parse_args()

    w = wave.open(a.wav)
    assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
    pcm = w.readframes(w.getnframes())
    Gst.init(None)
    model = ('model=%s' % a.model) if a.model else ''
    desc = (
        'appsrc name=audio is-live=true format=time min-latency=%d '
        'caps="audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved" ! '
        'queue ! whispersink name=w %s latency=%d output=words ! '
        'cea608enc name=enc post-messages=true ! closedcaption/x-cea-708,format=cc_data ! tee name=t '
        't. ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! ccconverter ! closedcaption/x-cea-608,format=raw ! '
        'appsink name=encout sync=false async=false emit-signals=true '
        't. ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! comb.caption '
        'videotestsrc name=vsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,'
        'framerate=30000/1001 ! queue ! cccombiner name=comb ! '
        'ccextractor name=ex remove-caption-meta=false ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! '
        'cc708overlay name=ov ! fakesink name=vsink sync=true qos=true '
        'ex.caption ! tee name=et '
        'et. ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! ov.cc_sink '
        'et. ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! ccconverter ! closedcaption/x-cea-608,format=raw ! '
        'appsink name=ccout sync=false async=false emit-signals=true'
        % (BUF_MS * Gst.MSECOND, model, a.latency))
    pipe = Gst.parse_launch(desc)
    src = pipe.get_by_name('audio')

    lock = threading.Lock()
    enc_pairs, cc_pairs = [], []
    text_words = []
    shown, shortened, errors, qos = [], [], [], []
    vframes = {'n': 0, 'holes': 0, 'last': None}

    def on_sample(sink, store):
        s = sink.emit('pull-sample')
        b = s.get_buffer()
        ok, info = b.map(Gst.MapFlags.READ)
        data = bytes(info.data)
        b.unmap(info)
        with lock:
            # raw 608: the field 1 pair of each frame, in order
            store.append(data[1:3] if len(data) % 3 == 0 else data[:2])
        return Gst.FlowReturn.OK

    pipe.get_by_name('encout').connect('new-sample', on_sample, enc_pairs)
    pipe.get_by_name('ccout').connect('new-sample', on_sample, cc_pairs)

    def text_probe(pad, info):
        b = info.get_buffer()
        if b is not None:
            ok, m = b.map(Gst.MapFlags.READ)
            t = bytes(m.data).decode('utf-8', 'replace')
            b.unmap(m)
            with lock:
                text_words.append((b.pts, t))
        return Gst.PadProbeReturn.OK

    pipe.get_by_name('enc').get_static_pad('sink').add_probe(Gst.PadProbeType.BUFFER, text_probe)
    frame_ns = 1001 * Gst.SECOND // 30000

    def video_probe(pad, info):
        b = info.get_buffer()
        with lock:
            vframes['n'] += 1
            if vframes['last'] is not None and b.pts - vframes['last'] > frame_ns * 3 // 2:
                vframes['holes'] += 1
            vframes['last'] = b.pts
        return Gst.PadProbeReturn.OK

    pipe.get_by_name('vsink').get_static_pad('sink').add_probe(Gst.PadProbeType.BUFFER, video_probe)

    stop = threading.Event()

    def feeder():
        clock = None
        while not stop.is_set() and clock is None:
            clock = pipe.get_clock()
            time.sleep(0.01)
        base = pipe.get_base_time()
        n = BUF_MS * 16
        k, pos = 0, 0
        total = int(a.duration * 1000 / BUF_MS)
        while not stop.is_set() and k < total:
            pts = k * BUF_MS * Gst.MSECOND
            dur = BUF_MS * Gst.MSECOND
            cid = clock.new_single_shot_id(base + pts + dur)
            clock.id_wait(cid)
            chunk = b''
            while len(chunk) < n * 2:
                take = min(n * 2 - len(chunk), len(pcm) - pos)
                chunk += pcm[pos:pos + take]
                pos = (pos + take) % len(pcm)
            buf = Gst.Buffer.new_wrapped(chunk)
            buf.pts = pts
            buf.duration = dur
            if src.emit('push-buffer', buf) != Gst.FlowReturn.OK:
                break
            k += 1
        # the audio ends; once cea608enc has sent its last erase and EOS, the
        # live video source ends too
        src.emit('end-of-stream')
        encout = pipe.get_by_name('encout')
        deadline = time.time() + a.latency / 1000.0 + 30
        while not encout.get_property('eos') and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(a.latency / 1000.0 + 1)
        pipe.get_by_name('vsrc').send_event(Gst.Event.new_eos())

    loop = GLib.MainLoop()
    bus = pipe.get_bus()
    bus.add_signal_watch()
    latency = {'ns': None}

    def on_msg(bus, m):
        t = m.type
        if t == Gst.MessageType.EOS:
            loop.quit()
        elif t == Gst.MessageType.ERROR:
            errors.append(str(m.parse_error()))
            loop.quit()
        elif t == Gst.MessageType.WARNING:
            errors.append('warning: ' + str(m.parse_warning()[0].message))
        elif t == Gst.MessageType.QOS:
            qos.append(m.parse_qos_stats())
        elif t == Gst.MessageType.ELEMENT and m.src.get_name() == 'enc':
            s = m.get_structure()
            if s.get_name() == 'cea608enc-caption':
                shown.append((s.get_value('pts'), s.get_value('shown'), s.get_value('text')))
            elif s.get_name() == 'cea608enc-shortened':
                shortened.append(s.to_string())
        elif t == Gst.MessageType.LATENCY:
            pipe.recalculate_latency()
        return True

    bus.connect('message', on_msg)
    pipe.set_state(Gst.State.PLAYING)
    th = threading.Thread(target=feeder, daemon=True)
    th.start()
    t0 = time.time()

    def report():
        q = Gst.Query.new_latency()
        if pipe.query(q):
            latency['ns'] = q.parse_latency()[1]
        with lock:
            print('# %5.0f s: video frames %d, caption words %d, text buffers %d, pipeline '
                  'latency %s ms' % (time.time() - t0, vframes['n'], len(shown), len(text_words),
                                    latency['ns'] // 1000000 if latency['ns'] else '?'),
                  flush=True)
        return True

    GLib.timeout_add_seconds(30, report)
    GLib.timeout_add_seconds(int(a.duration + a.latency / 1000 + 120), loop.quit)
    loop.run()
    stop.set()
    report()
    pipe.set_state(Gst.State.NULL)
    wall = time.time() - t0

    # caption bytes: the non-padding pairs cea608enc sent, in order, are
    # those on the video frames after cccombiner (none lost, none changed)
    sent = [d for d in enc_pairs if d != b'\x80\x80']
    back = [d for d in cc_pairs if d != b'\x80\x80']
    lost = sent if sent != back else []
    if len(sys.argv) and __import__('os').environ.get('CC_DUMP'):
        with open(__import__('os').environ['CC_DUMP'], 'w') as f:
            f.write(' '.join(x.hex() for x in sent) + '\n' + ' '.join(x.hex() for x in back) + '\n')
    if lost:
        import difflib
        sm = difflib.SequenceMatcher(a=sent, b=back, autojunk=False)
        lost = [x for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != 'equal'
                for x in sent[i1:i2]]
    # words
    in_words = sum(len(t.split()) for _, t in text_words)
    out_words = sum(len(t.split()) for _, _, t in shown)
    left = sum(1 for _ in shortened)
    expected_frames = int(a.duration * 30000 / 1001)
    drops = sum(q[2] for q in qos) if qos else 0
    lat_ms = (latency['ns'] or 0) / 1e6
    d = [(s - p) / 1e6 + lat_ms for p, s, _ in shown]
    d_stream = [(s - p) / 1e6 for p, s, _ in shown]
    print('wall %.0f s for %.0f s of audio' % (wall, a.duration))
    print('video: %d frames at the sink (%d expected for the duration), %d PTS holes, '
          '%d QoS drops' % (vframes['n'], expected_frames, vframes['holes'], drops))
    print('caption bytes: %d non-padding pairs from cea608enc, %d on the video frames after '
          'cccombiner; %d lost or changed' % (len(sent), len(back), len(lost)))
    print('words: %d from whispersink, %d sent by cea608enc, %d shortened texts'
          % (in_words, out_words, left))
    print('caption delay (shown - word PTS + pipeline latency %.0f ms): p50 %.0f ms, p95 %.0f ms, '
          'max %.0f ms; channel part (shown - PTS) p95 %.0f ms, max %.0f ms'
          % (lat_ms, pct(d, 50), pct(d, 95), max(d or [0]), pct(d_stream, 95),
             max(d_stream or [0])))
    for e in errors[:10]:
        print(e)
    ok = (not lost and out_words == in_words and not left and vframes['holes'] == 0
          and drops == 0 and vframes['n'] >= expected_frames - 30 and
          pct(d, 95) <= a.latency + 1000 and not [e for e in errors if 'warning' not in e])
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
