#!/usr/bin/env python3
"""make-set.py: the live evaluation set, a programme apart from the
development one of tests/element/programme.c.

    python3 tests/live-eval/make-set.py [--out DIR] [--net] [--check]

Writes, per half (dev, held-out) and language (en, de, fr, es), one
programme DIR/HALF-LANG.wav (16 kHz mono s16) and its manifest
DIR/HALF-LANG.tsv, one line per clip: name, voice, first sample, end
sample (exclusive), reference text. With --net also DIR/HALF-en-net.wav
(and .tsv): the English programme sent through RTP/Opus over UDP on this
machine with loss and jitter (see net_variant ()). The default DIR is
build/live-eval; a file is made again only when this script changed
(DIR/stamp holds its hash). --check only prints the split and checks that
no sentence and no voice is in both halves (exit 1 when one is).

The clips:
- synthetic speech: every sentence of SENTENCES, spoken by espeak-ng (voice
  variants of both sexes) or flite, at 130-200 words per minute (seeded);
  its reference is the text it was synthesised from;
- real read speech (English): the five LibriVox clips of Debian's
  pocketsphinx-testdata (one reader: dev), jfk.wav and both channels of
  stereo_diarization.wav from ../shared/data (three speakers: held-out),
  with their published transcripts.
The halves split by sentence (seeded shuffle) AND voice: the voices of a
half are listed in VOICES and no voice speaks in both.

Between clips: a pause of 0.3-8 s (PAUSES, seeded) holding a bed: quiet
white noise (-70 dBFS), pink or brown noise, or synthetic music (chords of
harmonic tones). Under about a third of the clips a bed too (noise at 20 dB
below the speech, music at 15 dB). Everything is seeded (--seed): the same
script gives the same samples, except --net, whose packet loss is random
(netsim has no seed).

Needs espeak-ng, flite, sox, numpy; --net: gst-launch-1.0 with opusenc,
rtpopuspay, netsim, udpsink/udpsrc, rtpjitterbuffer, opusdec.
"""
import argparse
import concurrent.futures
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
import wave

try:
    import numpy as np
except ImportError:   # --check needs none
    np = None

RATE = 16000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("WHISPER_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
LIBRIVOX = os.environ.get("LIBRIVOX", "/usr/share/pocketsphinx/test/data/librivox")
HALVES = ("dev", "held-out")

# Sentences written for this set: numbers, names, places, times.
SENTENCES = {
    "en": [
        "The train to Manchester leaves platform four at seven forty five.",
        "Doctor Patel will see you on Thursday the twelfth of May.",
        "We sold three hundred and twenty tickets before noon.",
        "Please turn left after the second traffic light.",
        "Margaret bought a blue bicycle from her neighbour Oliver.",
        "The museum opens at nine and closes at half past five.",
        "Our office moved to 18 Baker Street last spring.",
        "The temperature dropped to minus six degrees overnight.",
        "Can you send the report to Hannah before Friday?",
        "A small boat crossed the lake while the children watched.",
        "The meeting with the board lasted almost two hours.",
        "Victor scored the winning goal in the final minute.",
        "The library keeps more than forty thousand old books.",
        "She planted tomatoes, beans and carrots in the garden.",
        "The flight from Lisbon landed twenty minutes early.",
        "My brother Daniel works as a nurse in Edinburgh.",
        "The recipe needs two eggs and a cup of warm milk.",
        "Thomas forgot his umbrella on the bus this morning.",
        "The bridge was built in 1932 and repaired in 1990.",
        "Everyone in the village knew the old baker by name.",
        "The company hired fifteen new engineers this year.",
        "Rachel and Steven are getting married in October.",
        "The storm knocked down several trees along the river.",
        "Call the front desk if you need more towels.",
        "The price of coffee rose by eight percent in March.",
        "Our team meets every Monday at ten in room three.",
        "The dog chased a red ball across the wet grass.",
        "Professor Nakamura explained the theory in simple words.",
        "The bakery sells fresh bread from six in the morning.",
        "I will be back in about fifteen minutes.",
        "The concert in Vienna was sold out within a day.",
        "Lucy painted the kitchen walls a pale shade of green.",
        "There are twelve months and fifty two weeks in a year.",
        "The farmer counted ninety sheep on the northern hill.",
        "Peter lost his keys somewhere between home and work.",
        "The hospital opened a new wing for children last week.",
    ],
    "de": [
        "Der Zug nach Berlin fährt um acht Uhr ab.",
        "Meine Schwester wohnt seit drei Jahren in Hamburg.",
        "Wir treffen uns morgen vor dem alten Rathaus.",
        "Das Wetter ist heute kalt und windig.",
        "Thomas kauft jeden Samstag frisches Brot beim Bäcker.",
        "Die Kinder spielen im Garten mit dem Hund.",
        "Der Arzt hat am Montag keine Termine mehr frei.",
        "Im Sommer fahren wir mit dem Fahrrad an den See.",
        "Das Museum ist dienstags bis zwanzig Uhr geöffnet.",
        "Anna hat ihren Schlüssel im Büro vergessen.",
        "Die Suppe schmeckt besser mit etwas Salz.",
        "Unser Nachbar repariert sein Auto in der Garage.",
    ],
    "fr": [
        "Le train pour Lyon part à huit heures du matin.",
        "Ma sœur habite à Marseille depuis trois ans.",
        "Nous allons au marché tous les samedis.",
        "Il fait froid et il pleut depuis ce matin.",
        "Pierre a oublié son parapluie dans le bus.",
        "Les enfants jouent dans le jardin avec le chien.",
        "Le musée ferme à six heures le dimanche.",
        "Elle prépare une tarte aux pommes pour ses amis.",
        "Le médecin arrive dans vingt minutes.",
        "Nous avons visité le château pendant les vacances.",
        "La bibliothèque est fermée le lundi.",
        "Mon voisin répare son vélo dans la cour.",
    ],
    "es": [
        "El tren a Madrid sale a las ocho de la mañana.",
        "Mi hermana vive en Sevilla desde hace tres años.",
        "Vamos al mercado todos los sábados.",
        "Hoy hace frío y llueve mucho.",
        "Carlos olvidó su paraguas en el autobús.",
        "Los niños juegan en el parque con el perro.",
        "El museo cierra a las seis los domingos.",
        "Ella prepara una tarta de manzana para sus amigos.",
        "El médico llega en veinte minutos.",
        "Visitamos el castillo durante las vacaciones.",
        "La biblioteca está cerrada los lunes.",
        "Mi vecino repara su bicicleta en el patio.",
    ],
}

# The voices of each half: (engine, voice); espeak-ng variants +fN are
# female, +mN male; flite's slt is female, kal, awb and rms male.
VOICES = {
    "en": {
        "dev": [("espeak", "en-us+m3"), ("espeak", "en-gb+f2"), ("espeak", "en-gb-scotland+m1"),
                ("flite", "kal"), ("flite", "slt")],
        "held-out": [("espeak", "en-gb-x-rp+f4"), ("espeak", "en-029+m5"), ("espeak", "en-us+f1"),
                     ("flite", "awb"), ("flite", "rms")],
    },
    "de": {"dev": [("espeak", "de+m2"), ("espeak", "de+f3")],
           "held-out": [("espeak", "de+f1"), ("espeak", "de+m4")]},
    "fr": {"dev": [("espeak", "fr-fr+m2"), ("espeak", "fr-fr+f3")],
           "held-out": [("espeak", "fr-be+f1"), ("espeak", "fr-fr+m4")]},
    "es": {"dev": [("espeak", "es+m2"), ("espeak", "es+f3")],
           "held-out": [("espeak", "es-419+f1"), ("espeak", "es+m4")]},
}

JFK = ("And so my fellow Americans, ask not what your country can do for you, "
       "ask what you can do for your country.")
STEREO_L = ("He began a confused complaint against the wizard, who had vanished behind "
            "the curtain on the left.")
STEREO_R = "The horizon seems extremely distant."

PAUSES = [0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0, 8.0]
BEDS = ["quiet", "pink", "brown", "music"]


def read_wav(path, channel=None):
    """Float samples of a 16-kHz s16 WAV file (one channel, or the mix)."""
    with wave.open(path) as w:
        if w.getframerate() != RATE or w.getsampwidth() != 2:
            sys.exit(f"make-set: {path}: not 16-kHz 16-bit PCM")
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)
        x = x.reshape(-1, w.getnchannels()) / 32768.0
    return x[:, channel] if channel is not None else x.mean(axis=1)


def write_wav(path, x):
    y = np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(y.tobytes())


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"make-set: {cmd[0]} failed ({' '.join(cmd)}): {r.stderr.strip()}")


def speak(engine, voice, wpm, text, tmp):
    """The sentence spoken by espeak-ng or flite, 16 kHz, silence trimmed."""
    raw, out = os.path.join(tmp, "raw.wav"), os.path.join(tmp, "speech.wav")
    if engine == "espeak":
        run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", raw, "--", text])
    else:  # flite speaks about 170 words a minute at stretch 1
        run(["flite", "-voice", voice, "--setf", f"duration_stretch={170.0 / wpm:.3f}",
             "-t", text, "-o", raw])
    run(["sox", "-D", raw, "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", out,
         "silence", "1", "0.02", "0.1%", "reverse", "silence", "1", "0.02", "0.1%", "reverse"])
    return read_wav(out)


def bed(kind, n, rng):
    """n samples of a bed, unit-free (scaled by the caller)."""
    if kind in ("quiet", "white"):
        return rng.standard_normal(n)
    if kind == "brown":
        x = np.cumsum(rng.standard_normal(n))
        x -= np.convolve(x, np.ones(801) / 801, mode="same")   # no drift
        return x / (np.std(x) + 1e-9)
    if kind == "pink":
        f = np.fft.rfft(rng.standard_normal(n))
        f[1:] /= np.sqrt(np.arange(1, len(f)))
        f[0] = 0
        x = np.fft.irfft(f, n)
        return x / (np.std(x) + 1e-9)
    # music: a chord of harmonic tones every 0.5 s, with a soft attack
    x, t, step = np.zeros(n), np.arange(n) / RATE, RATE // 2
    roots = [220.0, 246.9, 261.6, 293.7, 329.6, 349.2, 392.0]
    for k in range(0, n, step):
        seg = slice(k, min(n, k + step))
        root = roots[rng.integers(len(roots))]
        env = 1.0 - np.exp(-np.arange(seg.stop - k) / 400.0)
        env *= np.exp(-np.arange(seg.stop - k) / (0.4 * RATE))
        for ratio in (1.0, 1.26, 1.5):
            for h in (1, 2, 3):
                x[seg] += env * np.sin(2 * np.pi * root * ratio * h * t[seg]) / h
    return x / (np.std(x) + 1e-9)


def dbfs(x):
    return 20 * np.log10(np.sqrt(np.mean(x ** 2)) + 1e-12)


def scaled(x, level_db):
    return x * 10 ** ((level_db - dbfs(x)) / 20)


def split_sentences(lang, seed):
    s = list(SENTENCES[lang])
    random.Random(f"{seed}-{lang}").shuffle(s)
    return {"dev": s[: len(s) // 2], "held-out": s[len(s) // 2:]}


def real_clips(half):
    """(name, voice, samples, published text) of the real read speech."""
    if half == "dev":
        out = []
        with open(os.path.join(LIBRIVOX, "transcription")) as f:
            lines = sorted(line for line in f if "(" in line)
        for line in lines:
            words, ident = line.rsplit("(", 1)
            ident = ident.strip().rstrip(")")
            text = words.replace("<s>", " ").replace("</s>", " ").strip()
            out.append((ident.rsplit("-", 1)[-1], "librivox",
                        read_wav(os.path.join(LIBRIVOX, ident + ".wav")), text))
        return out
    stereo = os.path.join(SHARED, "stereo_diarization.wav")
    return [("jfk", "jfk", read_wav(os.path.join(SHARED, "jfk.wav")), JFK),
            ("stereo-L", "stereo-L", read_wav(stereo, 0), STEREO_L),
            ("stereo-R", "stereo-R", read_wav(stereo, 1), STEREO_R)]


def clips_of(lang, half, seed, tmp):
    """The clips of one half in programme order."""
    rng = random.Random(f"{seed}-{lang}-{half}-voices")
    voices = VOICES[lang][half]
    clips = []
    for i, text in enumerate(split_sentences(lang, seed)[half]):
        engine, voice = voices[i % len(voices)]
        wpm = rng.randrange(130, 201, 10)
        name = f"{lang}{'d' if half == 'dev' else 'h'}{i:02d}"
        clips.append((name, f"{engine}:{voice}@{wpm}", speak(engine, voice, wpm, text, tmp),
                      text))
    if lang == "en":
        clips += real_clips(half)
    rng.shuffle(clips)
    return clips


def build(lang, half, seed, tmp):
    """The programme's samples and manifest lines."""
    rng = np.random.default_rng(int(hashlib.sha256(f"{seed}-{lang}-{half}".encode())
                                    .hexdigest()[:8], 16))
    parts, lines, pos = [], [], 0
    lead = scaled(bed("quiet", RATE, rng), -70)
    parts.append(lead)
    pos += len(lead)
    for k, (name, voice, x, text) in enumerate(clips_of(lang, half, seed, tmp)):
        x = scaled(x, -22)
        if k % 3 == 1:   # a bed under the speech
            kind = BEDS[1 + (k // 3) % 3]
            x = x + scaled(bed(kind, len(x), rng), -22 - (15 if kind == "music" else 20))
            voice += f"+{kind}"
        lines.append(f"{name}\t{voice}\t{pos}\t{pos + len(x)}\t{text}")
        parts.append(x)
        pos += len(x)
        pause = PAUSES[int(rng.integers(len(PAUSES)))]
        kind = BEDS[int(rng.integers(len(BEDS)))]
        level = {"quiet": -70, "pink": -50, "brown": -50, "music": -40}[kind]
        gap = scaled(bed(kind, int(pause * RATE), rng), level)
        parts.append(gap)
        pos += len(gap)
    return np.concatenate(parts), lines


def net_variant(src, dst, port, tmp):
    """src sent at real time as RTP/Opus (20-ms frames, 32 kbit/s) over UDP
    on 127.0.0.1 through netsim (2 % of the packets dropped, 30 % delayed
    by 0-60 ms and reordered), received by rtpjitterbuffer (latency 50 ms:
    packets later than that are lost too, do-lost) and opusdec (plc: lost
    frames concealed); the received audio is aligned to src (cross-
    correlation of the first 20 s) and cut to its length."""
    got = os.path.join(tmp, f"net-{port}.wav")
    n = len(read_wav(src))
    caps = "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=96"
    # the receiver first, stopped (EOS: -e, SIGINT) 3 s after the sender ends
    recv = subprocess.Popen(
        ["timeout", "-s", "INT", str(int(n / RATE) + 5), "gst-launch-1.0", "-q", "-e",
         "udpsrc", "address=127.0.0.1", f"port={port}", f"caps={caps}", "!",
         "rtpjitterbuffer", "latency=50", "do-lost=true", "!", "rtpopusdepay", "!",
         "opusdec", "plc=true", "!", "audioconvert", "!", "audioresample", "!",
         "audio/x-raw,format=S16LE,rate=16000,channels=1", "!", "wavenc", "!",
         "filesink", f"location={got}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    time.sleep(1.0)
    run(["gst-launch-1.0", "-q", "filesrc", f"location={src}", "!", "wavparse", "!",
         "audioconvert", "!", "audioresample", "!", "audio/x-raw,rate=48000", "!", "opusenc",
         "bitrate=32000", "frame-size=20", "!", "rtpopuspay", "pt=96", "!", "netsim",
         "drop-probability=0.02", "delay-probability=0.3", "min-delay=0", "max-delay=60",
         "allow-reordering=true", "!", "udpsink", "host=127.0.0.1", f"port={port}", "sync=true"])
    log = recv.communicate()[0]
    if not os.path.exists(got) or os.path.getsize(got) < 1000:
        sys.exit(f"make-set: the RTP/Opus receiver on port {port} got no audio "
                 f"(exit {recv.returncode}): {log.strip()}")
    x, y = read_wav(src), read_wav(got)
    m = min(len(x), len(y), 20 * RATE)
    c = np.fft.irfft(np.fft.rfft(y[:m], 2 * m) * np.conj(np.fft.rfft(x[:m], 2 * m)), 2 * m)
    lag = int(np.argmax(c[: RATE]))     # the received audio starts late, not early
    y = y[lag:]
    y = np.concatenate([y, np.zeros(max(0, len(x) - len(y)))])[: len(x)]
    write_wav(dst, y)
    return lag


def net_half(out, half, port, tmp):
    base = os.path.join(out, f"{half}-en")
    lag = net_variant(base + ".wav", base + "-net.wav", port, tmp)
    with open(base + ".tsv") as f, open(base + "-net.tsv", "w") as g:
        g.write(f.read())
    return lag


def stamp_of():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check(seed):
    """Prints the split; 1 when a sentence or a voice is in both halves."""
    bad = 0
    for lang in SENTENCES:
        s = split_sentences(lang, seed)
        v = {h: {voice for _, voice in VOICES[lang][h]} for h in HALVES}
        both = set(s["dev"]) & set(s["held-out"])
        shared = v["dev"] & v["held-out"]
        print(f"{lang}: {len(s['dev'])} + {len(s['held-out'])} sentences, voices dev "
              f"{sorted(v['dev'])}, held-out {sorted(v['held-out'])}")
        for x in sorted(both | shared):
            print(f"make-set: {lang}: in both halves: {x}", file=sys.stderr)
        bad += len(both) + len(shared)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "live-eval"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--net", action="store_true", help="also the RTP/Opus network variant")
    ap.add_argument("--check", action="store_true", help="only check the split")
    a = ap.parse_args()
    if a.check:
        return check(a.seed)
    if np is None:
        sys.exit("make-set: needs numpy (pip install numpy)")
    os.makedirs(a.out, exist_ok=True)
    stamp_path, stamp = os.path.join(a.out, "stamp"), f"{stamp_of()} seed={a.seed}"
    fresh = os.path.exists(stamp_path) and open(stamp_path).read() == stamp
    with tempfile.TemporaryDirectory() as tmp:
        for lang in SENTENCES:
            for half in HALVES:
                base = os.path.join(a.out, f"{half}-{lang}")
                if fresh and os.path.exists(base + ".tsv"):
                    continue
                x, lines = build(lang, half, a.seed, tmp)
                write_wav(base + ".wav", x)
                with open(base + ".tsv", "w") as f:
                    f.write("\n".join(lines) + "\n")
                print(f"make-set: {base}.wav ({len(x) / RATE:.1f} s, {len(lines)} clips)")
        with open(stamp_path, "w") as f:
            f.write(stamp)
        if a.net:   # both halves at once: each takes its length in real time
            todo = [h for h in HALVES
                    if not (fresh and os.path.exists(os.path.join(a.out, f"{h}-en-net.tsv")))]
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                lags = list(pool.map(lambda hp: net_half(a.out, hp[0], hp[1], tmp),
                                     zip(todo, (47811, 47813))))
            for half, lag in zip(todo, lags):
                print(f"make-set: {a.out}/{half}-en-net.wav (received {lag / RATE * 1000:.0f} ms "
                      f"late)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
