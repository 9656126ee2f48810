/* gstwhisperlivesettings.c: whispersink's live settings (see
 * gstwhisperlivesettings.h). */
#include "settings/gstwhisperlivesettings.h"

enum {
  P_LATENCY,
  P_LATENESS,
  P_TRANSLATE_LATENCY,
  P_LIVE_PROMPT,
  P_LIVE_COMMIT,
  P_LIVE_CONTEXT,
  P_LIVE_MIN_PROBABILITY,
  P_LIVE_ENCODER,
  P_OVERLOAD,
  N_PROPS
};

#include <math.h>

#define DEFAULT_LATENCY_MS 8000
/* Below this the live transcript is mostly wrong: refused. */
#define MIN_LATENCY_MS 1000
#define DEFAULT_LATENESS_MS 0
#define DEFAULT_LIVE_ENCODER GST_WHISPER_LIVE_ENCODER_FULL
#define DEFAULT_LIVE_CONTEXT_S 3.0
#define MAX_LIVE_CONTEXT_S 10.0
#define DEFAULT_LIVE_MIN_PROBABILITY 0.65

/* live-encoder=buffered: a live call's encoder window is its audio and
 * this much more (a word being said at its end), in steps of 0.5 s
 * (25 frames), at least LIVE_ENCODER_MIN_FRAMES: the shortest window found
 * as good as 30 s (see encoder-context). */
#define LIVE_ENCODER_MARGIN_S 1.0
#define LIVE_ENCODER_STEP_FRAMES 25
#define LIVE_ENCODER_MIN_FRAMES 375

void
gst_whisper_live_settings_init (GstWhisperLiveSettings *s)
{
  s->latency_ms = DEFAULT_LATENCY_MS;
  s->lateness_ms = DEFAULT_LATENESS_MS;
  s->translate_latency_ms = 0;
  s->prompt = FALSE;
  s->commit = GST_WHISPER_LIVE_COMMIT_AGREEMENT;
  s->context_s = DEFAULT_LIVE_CONTEXT_S;
  s->min_probability = DEFAULT_LIVE_MIN_PROBABILITY;
  s->encoder = DEFAULT_LIVE_ENCODER;
  s->overload = GST_WHISPER_OVERLOAD_DEGRADE;
  s->one_window = FALSE;
}

gboolean
gst_whisper_live_settings_too_short (const GstWhisperLiveSettings *s)
{
  return s->latency_ms < GST_WHISPER_USEFUL_LATENCY_MS;
}

/* latency, lateness, translate-latency: the budget */
static void
install_budget (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  /**
   * GstWhisperSink:latency:
   *
   * Live upstream: the latency budget in ms, added to upstream's in the
   * LATENCY answer (a LATENCY message is posted when it changes). Committed
   * text leaves within it after the words were spoken: the uncommitted
   * audio is decoded every sixth of it (at least 0.5 s), a word is
   * committed once two decodes agree on it, and at the latest when one
   * more decode would miss the budget (gstwhisperlive.c). The default 8000
   * leaves room for slower machines and larger models; measured figures
   * for 1500, 3000 and 4000 are in docs/benchmarks.md ("Live latency
   * and accuracy"). Below 1000 is refused (GObject keeps the old value and
   * logs a warning); below 2000 a warning is posted (details
   * reason=latency-too-short) when the property is set, or when the engine
   * is loaded with it if the element had no bus yet: with 0.5-s chunks
   * most words are committed by the deadline after one or two decodes.
   */
  g_object_class_install_property (klass, first + P_LATENCY,
      g_param_spec_uint ("latency", "Latency",
          "Live upstream: latency budget in ms, added to upstream's; committed text "
          "leaves within it after the words were spoken. At least 1000; below 2000 a "
          "warning (more words committed before two decodes agree)", MIN_LATENCY_MS,
          G_MAXUINT / 2, DEFAULT_LATENCY_MS, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (klass, first + P_LATENESS,
      g_param_spec_uint ("lateness", "Lateness",
          "Live upstream: extra ms by which output may be late before audio is dropped "
          "and a warning posted; the output segment is shifted by it",
          0, G_MAXUINT / 2, DEFAULT_LATENESS_MS, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:translate-latency:
   *
   * Added to the LATENCY answer of the translate_src_%u pads (as
   * transcriberbin sets it on transcribers that translate). The translation
   * is a second decode of each call's audio, run right after the first, so
   * its text is ready about as soon; raise it on a machine where the two
   * decodes of a call take longer than a chunk.
   */
  g_object_class_install_property (klass, first + P_TRANSLATE_LATENCY,
      g_param_spec_uint ("translate-latency", "Translate latency",
          "Live upstream: extra ms of latency of the translate_src_%u pads", 0, G_MAXUINT / 2,
          0, rw | GST_PARAM_MUTABLE_PLAYING));
}

/* live-*: the commit policy */
static void
install_commit (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  /**
   * GstWhisperSink:live-prompt:
   *
   * Live input: decode the buffer with the text committed before it (the
   * last 200 characters) as the prompt, as whisper_streaming does
   * (https://github.com/ufal/whisper_streaming). Off by default: a prompt
   * that ends in a sentence makes the model add a closing phrase to
   * trailing noise and skip words that repeat the prompt, so live
   * transcripts have more wrong words with it. The initial-prompt property, when
   * set, is the prompt of every live decode either way (before the
   * committed text).
   */
  g_object_class_install_property (klass, first + P_LIVE_PROMPT,
      g_param_spec_boolean ("live-prompt", "Live prompt",
          "Live input: decode with the text committed so far as the prompt", FALSE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:live-commit:
   *
   * Live input: when a decoded word becomes final (gstwhisperlive.c).
   * Either way the whole uncommitted buffer is decoded again every chunk,
   * each decode's words not final yet are an interim whisper-text message,
   * and a word that waiting for one more decode would bring later than
   * latency + lateness after its end is committed as it stands.
   *
   * "agreement" (the default) commits a word as soon as two consecutive
   * decodes agree on it (LocalAgreement-2 of
   * https://github.com/ufal/whisper_streaming). "deadline" commits nothing
   * earlier than it must: each word is taken from the last decode that
   * still meets the budget, the one that heard the most audio after it. A
   * synchronised consumer (textoverlay, a synced sink) shows a word latency
   * after its start whenever it came, so the later commit costs it no
   * delay, and with a budget of a few seconds it makes fewer errors; but
   * the words stay open longer, the buffer is cut later and more decodes
   * run on speech, so it needs more CPU, and with a short latency a slow
   * machine falls behind and drops audio (tests/element/live-commit.sh
   * compares the two; docs/benchmarks.md, "Live latency and accuracy").
   */
  g_object_class_install_property (klass, first + P_LIVE_COMMIT,
      g_param_spec_enum ("live-commit", "Live commit",
          "Live input: commit a word once two decodes agree on it, or at its deadline "
          "(more audio after it, more work)", GST_TYPE_WHISPER_LIVE_COMMIT,
          GST_WHISPER_LIVE_COMMIT_AGREEMENT, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:live-context:
   *
   * Live input: seconds of the last committed speech that each decode
   * hears before the audio it transcribes (gst-plugin/task/gstwhispercontext.h).
   * The buffer a live decode works on starts where the text before it was
   * committed, so without context an utterance that follows another is
   * heard from its first syllable with nothing before it, and that is
   * where a small model misreads the first words most. The context's own words are decoded again and
   * dropped; it makes each decode longer by as much audio. Needs the voice
   * activity detector (loaded with vad-gate, the default, or vad-filter):
   * the buffer's part starts at its first speech, or, after a finished
   * sentence and a pause, at the next sentence (the pause is left out, and
   * unsure words the decode reads in the noise just before that sentence,
   * up to one that ends a sentence, are dropped; a title's "." ends none).
   * Context older than 30 s
   * is not used, nor is any after a GAP, DISCONT or new segment. With
   * context the silence trim also keeps speech the detector found that has
   * no committed words yet, and committed speech leaves the buffer as
   * soon as nothing is pending. 3 s (the default) gives fewer wrong words
   * than none, more so with live-min-probability; much more context makes
   * each call longer, so more words are committed by their deadline
   * (tests/element/live-commit.sh measures it). 0 turns it off
   * (docs/element.md, "Live context").
   */
  g_object_class_install_property (klass, first + P_LIVE_CONTEXT,
      g_param_spec_double ("live-context", "Live context",
          "Live input: seconds of committed speech each decode hears before the new audio "
          "(0 = none)", 0.0, MAX_LIVE_CONTEXT_S, DEFAULT_LIVE_CONTEXT_S,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:live-min-probability:
   *
   * Live input: with live-commit=agreement, a word two decodes agree on
   * is committed only when the newer decode gives it at least this
   * probability (the mean of its tokens' probabilities, as in word
   * timestamps); a less certain word, and the words after it, wait for
   * more audio, at the latest until their deadline (latency) or until 3 s
   * of audio after the word has been decoded (heard in full with what
   * follows it: a larger lateness does not hold it back for longer), when
   * they are committed as the last decode has them
   * (gst-plugin/task/gstwhispercommit.h). Two decodes that both heard
   * too little of an utterance's first word often agree on the wrong one,
   * with a low probability, while words heard in full mostly come above
   * 0.7. 0.65 (the default) goes with live-context 3 (docs/element.md,
   * "Live context"); 0 commits every agreed word at once; higher values
   * wait more and cost more decodes.
   */
  g_object_class_install_property (klass, first + P_LIVE_MIN_PROBABILITY,
      g_param_spec_double ("live-min-probability", "Live minimum probability",
          "Live input: agreed words less probable than this wait for more audio (up to "
          "their deadline, or 3 s of audio after them)", 0.0, 1.0, DEFAULT_LIVE_MIN_PROBABILITY,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:live-encoder:
   *
   * The encoder window of a live call. Whisper's encoder reads a 30-s
   * window whatever the audio, and on live input most of it is padding: a
   * call decodes the few seconds not committed yet. "buffered" encodes a
   * window as long as the call's audio and a second more (at least 7.5 s,
   * 375 frames; 30 s when the audio is longer), through the engine's
   * per-call window (WhisperDecodeOptions.encoder_length): the encoder's
   * work falls with the window (its attention with its square), about 3x
   * for a 10-s buffer, which is what lets one machine hold more live
   * streams. The models were trained on 30-s windows only; the measured
   * cost in accuracy is in docs/benchmarks.md ("Many live streams"). No
   * effect on files.
   */
  g_object_class_install_property (klass, first + P_LIVE_ENCODER,
      g_param_spec_enum ("live-encoder", "Live encoder",
          "Live input: encode each call's audio in the model's 30-s window (full), or in one "
          "as long as the audio buffered plus a second (buffered: cheaper, more streams)",
          GST_TYPE_WHISPER_LIVE_ENCODER, DEFAULT_LIVE_ENCODER, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:overload:
   *
   * What live input gives up when inference falls behind (calls take
   * longer than the audio they cover, or more audio waits than latency +
   * lateness). "degrade": each call spends less first, one step at a time
   * (one window a decode, greedy search, live-encoder=buffered, a 1-s
   * live-context, no translate_src decode), each step posted on the bus
   * (whisper-overload)
   * and undone when calls are quick again; audio is dropped only once
   * every step is taken. "drop": the oldest audio is dropped at once. The
   * properties keep their values either way (task/gstwhisperoverload.c).
   */
  g_object_class_install_property (klass, first + P_OVERLOAD,
      g_param_spec_enum ("overload", "Overload",
          "Live input behind real time: spend less per call step by step before dropping "
          "audio (degrade), or drop audio at once (drop)",
          GST_TYPE_WHISPER_OVERLOAD_MODE, GST_WHISPER_OVERLOAD_DEGRADE,
          rw | GST_PARAM_MUTABLE_PLAYING));
}

guint
gst_whisper_live_settings_install (GObjectClass *klass, guint first)
{
  install_budget (klass, first);
  install_commit (klass, first);
  return first + N_PROPS;
}

gboolean
gst_whisper_live_settings_is_latency (guint prop_id, guint first)
{
  return prop_id == first + P_LATENCY;
}

gboolean
gst_whisper_live_settings_set (GstWhisperLiveSettings *s, guint prop_id, guint first, const GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_LATENCY:
      s->latency_ms = g_value_get_uint (value);
      break;
    case P_LATENESS:
      s->lateness_ms = g_value_get_uint (value);
      break;
    case P_TRANSLATE_LATENCY:
      s->translate_latency_ms = g_value_get_uint (value);
      break;
    case P_LIVE_PROMPT:
      s->prompt = g_value_get_boolean (value);
      break;
    case P_LIVE_COMMIT:
      s->commit = g_value_get_enum (value);
      break;
    case P_LIVE_CONTEXT:
      s->context_s = g_value_get_double (value);
      break;
    case P_LIVE_MIN_PROBABILITY:
      s->min_probability = g_value_get_double (value);
      break;
    case P_LIVE_ENCODER:
      s->encoder = g_value_get_enum (value);
      break;
    case P_OVERLOAD:
      s->overload = g_value_get_enum (value);
      break;
    default:
      break;
  }
  return TRUE;
}

gboolean
gst_whisper_live_settings_get (const GstWhisperLiveSettings *s, guint prop_id, guint first, GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_LATENCY:
      g_value_set_uint (value, s->latency_ms);
      break;
    case P_LATENESS:
      g_value_set_uint (value, s->lateness_ms);
      break;
    case P_TRANSLATE_LATENCY:
      g_value_set_uint (value, s->translate_latency_ms);
      break;
    case P_LIVE_PROMPT:
      g_value_set_boolean (value, s->prompt);
      break;
    case P_LIVE_COMMIT:
      g_value_set_enum (value, s->commit);
      break;
    case P_LIVE_CONTEXT:
      g_value_set_double (value, s->context_s);
      break;
    case P_LIVE_MIN_PROBABILITY:
      g_value_set_double (value, s->min_probability);
      break;
    case P_LIVE_ENCODER:
      g_value_set_enum (value, s->encoder);
      break;
    case P_OVERLOAD:
      g_value_set_enum (value, s->overload);
      break;
    default:
      return FALSE;              /* read-only: the element answers */
  }
  return TRUE;
}

/* Encoder frames (50 a second) of a live call of n_samples, at most the
 * engine's window. */
static int
call_encoder_length (gsize n_samples, int max_encoder_length)
{
  const double seconds = n_samples / (double) WHISPER_SAMPLE_RATE + LIVE_ENCODER_MARGIN_S;
  const int steps = (int) ceil (seconds * 50.0 / LIVE_ENCODER_STEP_FRAMES);
  return CLAMP (steps * LIVE_ENCODER_STEP_FRAMES,
      MIN (LIVE_ENCODER_MIN_FRAMES, max_encoder_length), max_encoder_length);
}

void
gst_whisper_live_settings_fill (const GstWhisperLiveSettings *s, gsize n_samples,
    int max_encoder_length, WhisperDecodeOptions *o)
{
  if (s->encoder == GST_WHISPER_LIVE_ENCODER_BUFFERED)
    o->encoder_length = call_encoder_length (n_samples, max_encoder_length);
}
