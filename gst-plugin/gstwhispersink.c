/* gstwhispersink.c: whispersink's pads, properties, state changes, sink-pad
 * chain and events, and the LATENCY query. The upstream streaming thread
 * only converts and queues audio (gstwhisperqueue.c); the engine runs in
 * the inference task (gstwhispertask.c), whose output the src pad task
 * (gstwhispersrc.c) pushes downstream from the output queue
 * (gstwhisperoutqueue.c).
 *
 * SECTION:element-whispersink
 *
 * Turns 16 kHz speech (mono, or several channels mixed or one of them
 * picked, see the channel property) into text with an OpenAI Whisper model.
 * The name is historical: it is a filter (audio in, text out) that can also
 * end a pipeline. Every
 * text buffer has a PTS and a DURATION in running time and GAP
 * events cover the time without text, so srtenc, webvttenc and textoverlay
 * work with their default settings. Each item is also posted on the bus as
 * a "whisper-text" element message. The src pad may stay unlinked.
 *
 * |[
 * gst-launch-1.0 filesrc location=speech.wav ! wavparse ! audioconvert ! \
 *     audioresample ! whispersink ! srtenc ! filesink location=speech.srt
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstwhispersink-private.h"
#include "gstwhisperengines.h"
#include "gstwhispervads.h"
#include "gstwhisperdecoding.h"
#include "whisper-languages.h"

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

#define DEFAULT_MODEL NULL
#define DEFAULT_DEVICE GST_WHISPER_DEVICE_AUTO
#define DEFAULT_PRECISION GST_WHISPER_PRECISION_EXACT
#define DEFAULT_THREADS 0
#define DEFAULT_LANGUAGE_CODE "auto"
#define DEFAULT_LATENCY_MS 8000
#define DEFAULT_LIVE_ENCODER GST_WHISPER_LIVE_ENCODER_FULL
/* Measured (gst-plugin/README.md, "Live context"). */
#define DEFAULT_LIVE_CONTEXT_S 3.0
#define MAX_LIVE_CONTEXT_S 10.0
#define DEFAULT_LIVE_MIN_PROBABILITY 0.65
#define DEFAULT_BATCH_SIZE 8
#define DEFAULT_LATENESS_MS 0
#define DEFAULT_OUTPUT GST_WHISPER_OUTPUT_SEGMENTS
#define DEFAULT_ENCODER_CONTEXT 0
/* Measured (gst-plugin/README.md, tests/element/live-wer.sh): below these the
 * live transcript is mostly wrong. */
#define MIN_LATENCY_MS 1000
#define USEFUL_ENCODER_CONTEXT 250
#define USEFUL_LATENCY_MS 2000
#define DEFAULT_NO_SPEECH_THRESHOLD 0.6
#define DEFAULT_OFFLINE_MODE GST_WHISPER_OFFLINE_EXACT
#define DEFAULT_MAX_GAP_MS 1000
#define MAX_MAX_GAP_MS 60000
/* Timestamp jitter taken as continuous audio (GstAudioStreamAlign's
 * alignment threshold as this element used it). */
#define ALIGN_TOLERANCE (40 * GST_MSECOND)

enum {
  PROP_0,
  PROP_MODEL,
  PROP_DEVICE,
  PROP_PRECISION,
  PROP_THREADS,
  PROP_ENGINE_GROUP,
  PROP_LANGUAGE_CODE,
  PROP_LATENCY,
  PROP_LATENESS,
  PROP_TRANSLATE_LATENCY,
  PROP_OUTPUT,
  PROP_ENCODER_CONTEXT,
  PROP_NO_SPEECH_THRESHOLD,
  PROP_OFFLINE_MODE,
  PROP_MAX_ENCODER_LENGTH,
  PROP_MAX_OBSERVED_DELAY,
  PROP_STATS,
  PROP_CONDITION_ON_PREVIOUS_TEXT,
  PROP_LIVE_PROMPT,
  PROP_LIVE_COMMIT,
  PROP_LIVE_CONTEXT,
  PROP_LIVE_MIN_PROBABILITY,
  PROP_LIVE_ENCODER,
  PROP_BATCH_SIZE,
  PROP_CHANNEL,
  PROP_SILENCE_THRESHOLD,
  PROP_STRICT_NO_SPEECH,
  PROP_VAD_GATE,
  PROP_VAD_MODEL,
  PROP_VAD_THRESHOLD,
  PROP_MAX_GAP,
  /* vad-filter block */
  PROP_VAD_FILTER,
  PROP_VAD_NEG_THRESHOLD,
  PROP_VAD_MIN_SPEECH_MS,
  PROP_VAD_MAX_SPEECH_S,
  PROP_VAD_MIN_SILENCE_MS,
  PROP_VAD_SPEECH_PAD_MS,
  PROP_WORD_TIMESTAMPS,
  /* device=remote: gstwhispersinkremote.c's, a block of their own (later
   * blocks start at PROP_REMOTE_END) */
  PROP_REMOTE_FIRST,
  PROP_REMOTE_END = PROP_REMOTE_FIRST + GST_WHISPER_SINK_REMOTE_N_PROPS,
  PROP_DECODING_FIRST = PROP_REMOTE_END,  /* the decoding properties, gstwhisperdecoding.c */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("audio/x-raw, format = (string) { F32LE, S16LE }, "
        "rate = (int) 16000, channels = (int) [ 1, 64 ], layout = (string) interleaved"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("text/x-raw, format = (string) utf8"));

#define gst_whisper_sink_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (GstWhisperSink, gst_whisper_sink, GST_TYPE_ELEMENT,
    gst_whisper_debug_init ());
GST_ELEMENT_REGISTER_DEFINE (whispersink, "whispersink", GST_RANK_NONE,
    GST_TYPE_WHISPER_SINK);

static void gst_whisper_sink_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec);
static void gst_whisper_sink_get_property (GObject *object, guint prop_id,
    GValue *value, GParamSpec *pspec);
static void gst_whisper_sink_finalize (GObject *object);
static GstStateChangeReturn gst_whisper_sink_change_state (GstElement *element,
    GstStateChange transition);
static GstFlowReturn gst_whisper_sink_chain (GstPad *pad, GstObject *parent,
    GstBuffer *buffer);
static gboolean gst_whisper_sink_sink_event (GstPad *pad, GstObject *parent,
    GstEvent *event);
static gboolean gst_whisper_sink_sink_query (GstPad *pad, GstObject *parent,
    GstQuery *query);
static gboolean gst_whisper_sink_src_query (GstPad *pad, GstObject *parent,
    GstQuery *query);
static gboolean gst_whisper_sink_src_activate_mode (GstPad *pad, GstObject *parent,
    GstPadMode mode, gboolean active);
static gboolean gst_whisper_sink_sink_activate_mode (GstPad *pad, GstObject *parent,
    GstPadMode mode, gboolean active);

/* ------------------------------------------------------------------------ */
/* vad-filter block: faster-whisper's vad_filter and its VadOptions */

#define DEFAULT_VAD_MAX_SPEECH_S INFINITY

static gboolean engine_property_writable (GstWhisperSink *self, GParamSpec *pspec,
    const gchar **ignored);

static void
install_vad_filter_properties (GObjectClass *gobject_class)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  /**
   * GstWhisperSink:vad-filter:
   *
   * faster-whisper's `vad_filter=True`: the voice activity detector (the
   * one of vad-model, loaded whatever vad-gate says) finds the speech
   * regions of each call's audio with the VadOptions below (defaults:
   * faster-whisper's VadOptions(), what WhisperModel.transcribe() uses), the
   * regions are cut out, joined and transcribed as one stream, and every
   * time is mapped back (to 0.01 s, as faster-whisper's SpeechTimestampsMap
   * does). Audio outside the regions costs no encoder work and gives GAP
   * events downstream, in files (offline-mode exact and windowed) and live.
   * The text differs from the unfiltered one where the model decodes joined
   * speech differently (there is no silence to condition across); without
   * the detector's weights the change to READY fails. Changes take effect
   * on the way to PAUSED, as the model's do.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_FILTER,
      g_param_spec_boolean ("vad-filter", "VAD filter",
          "Transcribe only the speech the voice activity detector finds (faster-whisper's "
          "vad_filter): the rest gives GAP events and costs no model run", FALSE,
          rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:vad-neg-threshold:
   *
   * VadOptions.neg_threshold: speech ends below this probability; negative
   * (the default) means max(vad-threshold - 0.15, 0.01), as its None.
   * Also used by vad-gate.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_NEG_THRESHOLD,
      g_param_spec_double ("vad-neg-threshold", "VAD negative threshold",
          "Speech probability below which speech ends; negative: vad-threshold - 0.15 "
          "(at least 0.01)", -1.0, 1.0, -1.0, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-min-speech-ms:
   *
   * VadOptions.min_speech_duration_ms: speech shorter than this is dropped.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_MIN_SPEECH_MS,
      g_param_spec_int ("vad-min-speech-ms", "VAD minimum speech",
          "Speech shorter than this (ms) is dropped", 0, G_MAXINT / 16, 0,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-max-speech-s:
   *
   * VadOptions.max_speech_duration_s: longer speech is split (at a pause of
   * more than 98 ms where there is one); the default is no limit.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_MAX_SPEECH_S,
      g_param_spec_double ("vad-max-speech-s", "VAD maximum speech",
          "Speech longer than this (s) is split; inf: no limit", 0.1, INFINITY,
          DEFAULT_VAD_MAX_SPEECH_S, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-min-silence-ms:
   *
   * VadOptions.min_silence_duration_ms: the silence that ends speech.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_MIN_SILENCE_MS,
      g_param_spec_int ("vad-min-silence-ms", "VAD minimum silence",
          "Silence (ms) that ends speech", 0, G_MAXINT / 16, 2000,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-speech-pad-ms:
   *
   * VadOptions.speech_pad_ms: audio kept on each side of speech.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_SPEECH_PAD_MS,
      g_param_spec_int ("vad-speech-pad-ms", "VAD speech padding",
          "Audio (ms) kept on each side of speech", 0, G_MAXINT / 16, 400,
          rw | GST_PARAM_MUTABLE_PLAYING));
}

static void
init_vad_filter_properties (GstWhisperSink *self)
{
  self->vad_filter = FALSE;
  self->vad_neg_threshold = -1.0;
  self->vad_min_speech_ms = 0;
  self->vad_max_speech_s = DEFAULT_VAD_MAX_SPEECH_S;
  self->vad_min_silence_ms = 2000;
  self->vad_speech_pad_ms = 400;
}

/* Object lock held. TRUE when prop_id is one of the block's. */
static gboolean
set_vad_filter_property (GstWhisperSink *self, guint prop_id, const GValue *value,
    GParamSpec *pspec, const gchar **ignored)
{
  switch (prop_id) {
    case PROP_VAD_FILTER:
      if (engine_property_writable (self, pspec, ignored))
        self->vad_filter = g_value_get_boolean (value);
      return TRUE;
    case PROP_VAD_NEG_THRESHOLD:
      self->vad_neg_threshold = g_value_get_double (value);
      return TRUE;
    case PROP_VAD_MIN_SPEECH_MS:
      self->vad_min_speech_ms = g_value_get_int (value);
      return TRUE;
    case PROP_VAD_MAX_SPEECH_S:
      self->vad_max_speech_s = g_value_get_double (value);
      return TRUE;
    case PROP_VAD_MIN_SILENCE_MS:
      self->vad_min_silence_ms = g_value_get_int (value);
      return TRUE;
    case PROP_VAD_SPEECH_PAD_MS:
      self->vad_speech_pad_ms = g_value_get_int (value);
      return TRUE;
    default:
      return FALSE;
  }
}

/* Object lock held. */
static gboolean
get_vad_filter_property (GstWhisperSink *self, guint prop_id, GValue *value)
{
  switch (prop_id) {
    case PROP_VAD_FILTER:
      g_value_set_boolean (value, self->vad_filter);
      return TRUE;
    case PROP_VAD_NEG_THRESHOLD:
      g_value_set_double (value, self->vad_neg_threshold);
      return TRUE;
    case PROP_VAD_MIN_SPEECH_MS:
      g_value_set_int (value, self->vad_min_speech_ms);
      return TRUE;
    case PROP_VAD_MAX_SPEECH_S:
      g_value_set_double (value, self->vad_max_speech_s);
      return TRUE;
    case PROP_VAD_MIN_SILENCE_MS:
      g_value_set_int (value, self->vad_min_silence_ms);
      return TRUE;
    case PROP_VAD_SPEECH_PAD_MS:
      g_value_set_int (value, self->vad_speech_pad_ms);
      return TRUE;
    default:
      return FALSE;
  }
}

/* end of the vad-filter block */
/* ------------------------------------------------------------------------ */

static void
gst_whisper_sink_class_init (GstWhisperSinkClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  gobject_class->set_property = gst_whisper_sink_set_property;
  gobject_class->get_property = gst_whisper_sink_get_property;
  gobject_class->finalize = gst_whisper_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model",
          "Whisper model: a CTranslate2 directory (model.bin, config.json, vocabulary) "
          "or a whisper.cpp ggml file. Unset: the default model ($WHISPER_MODEL, else "
          "$XDG_DATA_HOME/gst-whisper/models/tiny.en); reading it then gives that path",
          DEFAULT_MODEL, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_enum ("device", "Device", "Where inference runs",
          GST_TYPE_WHISPER_DEVICE, DEFAULT_DEVICE, rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:precision:
   *
   * How the CPU engine computes its matrix products. `exact` (the default)
   * computes in float32 and gives faster-whisper float32's tokens. `fast`
   * runs the encoder and the prompt passes in bfloat16 through oneDNN (AMX
   * tiles on Intel Sapphire Rapids and later, AVX512-BF16 on AMD Zen 4:
   * 2 to 4 times faster encoders), with float32 sums. On CPUs with AMX the
   * decode steps' linears run on the tiles too, with bfloat16 weights (up
   * to 64 rows a pass: the beams of many streams sharing the engine);
   * elsewhere decode steps stay as in `exact`. The text can differ from
   * `exact`'s in places (README.md, "Precision"). Needs a build with oneDNN and a CPU with AVX-512: going
   * to READY fails with an error saying which is missing. Elements share an
   * engine only with elements of the same precision. The CUDA engine has one
   * precision and ignores this.
   */
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "CPU matrix products: exact (float32) or fast (bfloat16, oneDNN)",
          GST_TYPE_WHISPER_PRECISION, DEFAULT_PRECISION, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_int ("threads", "Threads",
          "CPU threads for inference (0 = one per core)", 0, 1024, DEFAULT_THREADS,
          rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:engine-group:
   *
   * Elements of one process that load the same model (the same file,
   * however its path is spelled) on the same device with the same
   * `threads` and `encoder-context` share one engine: the weights are in
   * memory once and one thread pool, sized by `threads`, runs the
   * inference of all of them, one decode step or encoder window at a time
   * (gstwhisperengines.c). What stays per element is its stream: KV
   * caches, prompt, language and every decoding option. The engine is
   * freed when the last element sharing it goes to NULL.
   *
   * Unset (the default) or empty, an element shares with every other such
   * element. Set to a name, it shares only with elements of the same name:
   * a name of its own gives an element an engine of its own (its own
   * weights and thread pool), as every element had before engines were
   * shared.
   */
  g_object_class_install_property (gobject_class, PROP_ENGINE_GROUP,
      g_param_spec_string ("engine-group", "Engine group",
          "Elements with the same model, device, threads, encoder-context and engine group "
          "share one engine (weights and thread pool). Unset: the process's shared group; "
          "a name of its own gives this element its own engine",
          NULL, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_LANGUAGE_CODE,
      g_param_spec_string ("language-code", "Language code",
          "Language of the speech: a Whisper language as a BCP 47 tag, ISO 639 code or "
          "English name (\"de\", \"de-DE\", \"de_DE\", \"deu\", \"German\"), or \"auto\" to "
          "detect it (multilingual models; English-only ones decode English). A language the "
          "model lacks fails the change to READY, or posts a warning and is ignored when set "
          "later",
          DEFAULT_LANGUAGE_CODE, rw | GST_PARAM_MUTABLE_PLAYING));
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
   * for 1500, 3000 and 4000 are in gst-plugin/README.md ("Live latency:
   * measured"). Below 1000 is refused (GObject keeps the old value and
   * logs a warning); below 2000 a warning is posted (details
   * reason=latency-too-short) when the property is set, or when the engine
   * is loaded with it if the element had no bus yet: with 0.5-s chunks
   * most words are committed by the deadline after one or two decodes.
   */
  g_object_class_install_property (gobject_class, PROP_LATENCY,
      g_param_spec_uint ("latency", "Latency",
          "Live upstream: latency budget in ms, added to upstream's; committed text "
          "leaves within it after the words were spoken. At least 1000; below 2000 a "
          "warning (more words committed before two decodes agree)", MIN_LATENCY_MS,
          G_MAXUINT / 2, DEFAULT_LATENCY_MS, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_LATENESS,
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
  g_object_class_install_property (gobject_class, PROP_TRANSLATE_LATENCY,
      g_param_spec_uint ("translate-latency", "Translate latency",
          "Live upstream: extra ms of latency of the translate_src_%u pads", 0, G_MAXUINT / 2,
          0, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_OUTPUT,
      g_param_spec_enum ("output", "Output", "Granularity of the text buffers",
          GST_TYPE_WHISPER_OUTPUT_MODE, DEFAULT_OUTPUT, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:encoder-context:
   *
   * Encoder frames per window: 0 (the default) is the model's own, 1500
   * frames = 30 s (every Whisper model so far); each frame is 20 ms of
   * audio. A shorter window runs a cheaper encoder, but the models were
   * trained on 30-s windows only.
   *
   * Measured with tiny.en, live at latency 8000, on real speech
   * (tests/element/live-wer.sh encoder-context; word error rate, jfk.wav /
   * stereo_diarization.wav left / right): 1 to 50 frames take more than
   * 120 s for the 11 s of jfk.wav (a call per window of at most 1 s),
   * 50 frames 3335 / 5280 % on the stereo clips, 100 frames 5005 / 2576 /
   * 8300 % (a word repeated hundreds of times), 150 frames 59 / 24 / 0 %,
   * 200 frames 545 / 47 / 0 % (a loop), 250 frames 5 / 0 / 0 %, 375 to
   * 1500 frames 14 / 0 / 0 % (the same transcript as 1500). Below 250 frames
   * a warning is posted (details reason=encoder-context-too-short) when the
   * property is set, or when the engine is loaded with it if the element
   * had no bus yet.
   */
  g_object_class_install_property (gobject_class, PROP_ENCODER_CONTEXT,
      g_param_spec_int ("encoder-context", "Encoder context",
          "Encoder frames per window (0 = the model's, 1500 = 30 s; a frame is 20 ms). "
          "Shorter is faster; below 250 the transcript loops or is mostly wrong "
          "(measured), with a warning", 0, 1500, DEFAULT_ENCODER_CONTEXT,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_NO_SPEECH_THRESHOLD,
      g_param_spec_double ("no-speech-threshold", "No-speech threshold",
          "A window whose no-speech probability exceeds this (and whose average log "
          "probability is below -1) is treated as silence; negative disables the check",
          -1.0, 1.0, DEFAULT_NO_SPEECH_THRESHOLD, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:condition-on-previous-text:
   *
   * Whether each 30-s window of a file is decoded with the text of the
   * previous windows as its prompt (faster-whisper's
   * condition_on_previous_text, on by default there and here). The prompt
   * helps spelling and punctuation stay consistent, but once the model
   * falls into a repetition loop the loop is in the prompt of the next
   * window too, and on long files of repeated speech the conditioned
   * transcript skips sentences and repeats one for tens of seconds where the
   * unconditioned one does not (compare whisper-transcribe with and without
   * --no-condition). Live input: see live-prompt.
   */
  g_object_class_install_property (gobject_class, PROP_CONDITION_ON_PREVIOUS_TEXT,
      g_param_spec_boolean ("condition-on-previous-text", "Condition on previous text",
          "Decode each window with the previous windows' text as prompt; off stops "
          "repetition loops from carrying over (files only)", TRUE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:live-prompt:
   *
   * Live input: decode the buffer with the text committed before it (the
   * last 200 characters) as the prompt, as whisper_streaming does
   * (https://github.com/ufal/whisper_streaming). Off by default: on the
   * clips of tests/element/live-commit.c in real time (tiny.en, latency
   * 3000) it gave 9.8 % word errors against 6.1 % without, as a prompt that
   * ends in a sentence makes the model add "Thank you." to trailing noise
   * and skip words that repeat the prompt. The initial-prompt property, when
   * set, is the prompt of every live decode either way (before the
   * committed text).
   */
  g_object_class_install_property (gobject_class, PROP_LIVE_PROMPT,
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
   * delay, and at latency 3000 it makes fewer errors; but the words stay
   * open longer, the buffer is cut later and more decodes run on speech:
   * on tests/element/live-commit.sh (tiny.en, 10 minutes, a 0.3-s deadline
   * margin) it had 8.3 % of the words wrong at latency 3000 against 9.4 %
   * with agreement, and at 1500 it took 151 % of the two cores against 131 %,
   * fell behind and dropped 3.7 s of audio (gst-plugin/README.md, "Live
   * latency: measured").
   */
  g_object_class_install_property (gobject_class, PROP_LIVE_COMMIT,
      g_param_spec_enum ("live-commit", "Live commit",
          "Live input: commit a word once two decodes agree on it, or at its deadline "
          "(more audio after it, more work)", GST_TYPE_WHISPER_LIVE_COMMIT,
          GST_WHISPER_LIVE_COMMIT_AGREEMENT, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:live-context:
   *
   * Live input: seconds of the last committed speech that each decode
   * hears before the audio it transcribes (gst-plugin/gstwhispercontext.h).
   * The buffer a live decode works on starts where the text before it was
   * committed, so without context an utterance that follows another is
   * heard from its first syllable with nothing before it, and that is
   * where tiny.en errs most ("unless" as "I'd less", "Had he married" as
   * "How do you marry"). The context's own words are decoded again and
   * dropped; it makes each decode longer by as much audio. Needs the voice
   * activity detector (loaded with vad-gate, the default, or vad-filter):
   * the buffer's part starts at its first speech, or, after a finished
   * sentence and a pause, at the next sentence (the pause is left out, and
   * unsure words the decode reads in the noise just before that sentence,
   * up to one that ends a sentence, are dropped; "Mr." ends none).
   * Context older than 30 s
   * is not used, nor is any after a GAP, DISCONT or new segment. With
   * context the silence trim also keeps speech the detector found that has
   * no committed words yet, and committed speech leaves the buffer as
   * soon as nothing is pending. 3 s (the default) took tiny.en at latency
   * 3000 from 7.3 % to 5.7 % word errors on tests/element/live-commit.sh,
   * and to 3.2 % with live-min-probability 0.65; 5 s did worse (longer
   * calls, more words committed by their deadline). 0 turns it off
   * (gst-plugin/README.md, "Live context").
   */
  g_object_class_install_property (gobject_class, PROP_LIVE_CONTEXT,
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
   * they are committed as the last decode has them (2 s was too little:
   * gst-plugin/gstwhispercommit.h). Two decodes that both heard
   * too little of an utterance's first word often agree on the wrong one
   * (tiny.en gave "How do you marry" for "Had he married" at 0.34 to 0.59),
   * while words heard in full mostly come above 0.7. 0.65 (the default)
   * measured best with live-context 3 (gst-plugin/README.md, "Live
   * context"); 0 commits every agreed word at once; higher values wait
   * more and cost more decodes.
   */
  g_object_class_install_property (gobject_class, PROP_LIVE_MIN_PROBABILITY,
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
   * per-call window (WhisperDecodeOptions.encoder_frames): the encoder's
   * work falls with the window (its attention with its square), about 3x
   * for a 10-s buffer, which is what lets one machine hold more live
   * streams. The models were trained on 30-s windows only; the measured
   * cost in accuracy is in gst-plugin/README.md ("Many live streams"). No
   * effect on files.
   */
  g_object_class_install_property (gobject_class, PROP_LIVE_ENCODER,
      g_param_spec_enum ("live-encoder", "Live encoder",
          "Live input: encode each call's audio in the model's 30-s window (full), or in one "
          "as long as the audio buffered plus a second (buffered: cheaper, more streams)",
          GST_TYPE_WHISPER_LIVE_ENCODER, DEFAULT_LIVE_ENCODER, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:channel:
   *
   * Which channel of a multi-channel stream is transcribed: -1 (the
   * default) mixes them all with equal weights (their mean, as
   * whisper-transcribe does without --channel), 0 is the first channel
   * (the left one of a stereo stream). A stream with fewer channels than
   * asked for fails to negotiate, with an error naming both counts. Mono
   * streams ignore it. Changes apply from the next buffer.
   */
  g_object_class_install_property (gobject_class, PROP_CHANNEL,
      g_param_spec_int ("channel", "Channel",
          "Channel to transcribe in a multi-channel stream (0 = first/left; -1 = the mean "
          "of all channels)", -1, 63, -1, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:silence-threshold:
   *
   * Audio this quiet is not transcribed: a window (or, live, the audio of a
   * call) whose loudest 20-ms frame is below this level, in dB relative to
   * full scale, is skipped without running the model. Whisper writes text
   * into silence: conditioned on earlier text, ten minutes of digital
   * silence gave 82 segments of "you" before this gate, and 60 s of white
   * noise at -65 dBFS gave 40 segments of "." (the reference's no-speech
   * rule keeps both). The default, -60 dBFS, is far below speech at any
   * usable recording level (the loudest frames of the speech clips the tests
   * use are between -21 and -8 dBFS) and above 16-bit dither and a muted
   * microphone. -150 decodes every window. Counted in the stats property
   * (`windows-silent`).
   */
  g_object_class_install_property (gobject_class, PROP_SILENCE_THRESHOLD,
      g_param_spec_double ("silence-threshold", "Silence threshold",
          "Audio whose loudest 20-ms frame is below this level (dBFS) is not transcribed; "
          "-150 transcribes everything", WHISPER_SILENCE_THRESHOLD_OFF_DB, 0.0,
          WHISPER_DEFAULT_SILENCE_THRESHOLD_DB, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:strict-no-speech:
   *
   * The reference's no-speech rule (faster-whisper, openai-whisper) drops
   * a window when the model's no-speech probability is above
   * no-speech-threshold and its decode was not confident (average log
   * probability at most -1). Noise passes it with confident nonsense: 300 s
   * of white noise gave one sentence 15 times in a window at no-speech
   * probability 0.94 and average log probability -0.29, a tone sequence gave
   * " ." at 0.94. With this on (the default) such a window is also dropped
   * when its text is a loop (zlib compression ratio above 2.4, the
   * reference's test for a failed decode) or holds no letter or digit. Off
   * gives the reference's greedy results exactly. Counted in the stats
   * property (`windows-no-speech`, with the reference's own drops).
   */
  /**
   * GstWhisperSink:word-timestamps:
   *
   * Time every word as faster-whisper's word_timestamps=True does: after a
   * window is decoded, an alignment pass of the decoder over its text
   * (the alignment heads' cross-attention, dynamic time warping). The
   * whisper-text message of each segment then carries a `words` field (a
   * list of structures `word` with text, timestamp, duration, probability;
   * times as the message's own), and segment times come from the words. In
   * output=words, each word buffer still goes out as soon as the decode
   * step completes it, timed from that step's alignment-head attention
   * (0.16 s before the frame the heads attend to most; measured against the
   * final DTW starts on the parity clips: mean 0.12-0.17 s, p95 0.32-0.36 s
   * away). A beam search (beam-size above 1, the default for files) gives
   * its tokens only once the search ends, without that attention: its word
   * buffers go out with their segment, timed by the segment's DTW words.
   * Costs one extra decoder pass per window.
   */
  g_object_class_install_property (gobject_class, PROP_WORD_TIMESTAMPS,
      g_param_spec_boolean ("word-timestamps", "Word timestamps",
          "Time every word by the alignment heads' attention (faster-whisper's "
          "word_timestamps): words in the segment messages, word buffers timed by it",
          FALSE, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_STRICT_NO_SPEECH,
      g_param_spec_boolean ("strict-no-speech", "Strict no-speech rule",
          "Also drop a window the model finds likely silent when its text is a loop or "
          "has no letter or digit; off: the reference's rule only", TRUE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-gate:
   *
   * Whether a voice activity detector (Silero VAD v6, run on the CPU by the
   * engine, about 0.2 % of real time on one core) decides which windows are
   * worth decoding: a window (or, live, the audio of a call) in which it
   * finds no speech is skipped without running the model. Whisper writes
   * text into noise that no rule on its own output catches (a sequence of
   * tones gave "Thank you." at no-speech probability 0.90 and average log
   * probability -0.85). A window with any speech is decoded whole, so the
   * text of speech is the same with and without the gate. The detector's
   * weights come from vad-model; when the default file is not installed
   * (tools/fetch-model.sh silero-vad) the element posts a warning (reason
   * `vad-missing`) at the change to READY and goes on without the gate.
   * Counted in the stats property (`windows-no-voice`). Changes take effect
   * on the way to PAUSED, as the model's do.
   */
  g_object_class_install_property (gobject_class, PROP_VAD_GATE,
      g_param_spec_boolean ("vad-gate", "Voice activity gate",
          "Skip windows in which the voice activity detector finds no speech", TRUE,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_VAD_MODEL,
      g_param_spec_string ("vad-model", "VAD model",
          "Silero VAD weights for vad-gate. Unset: the installed file "
          "($XDG_DATA_HOME/gst-whisper/models/silero-vad/silero_vad_v6.bin, made by "
          "tools/fetch-model.sh silero-vad); a file set here that cannot be loaded fails "
          "the change to READY", NULL, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_VAD_THRESHOLD,
      g_param_spec_double ("vad-threshold", "VAD threshold",
          "Speech probability from which the voice activity detector counts a 32-ms chunk "
          "as speech (faster-whisper's VadOptions.threshold)", 0.0, 1.0, 0.5,
          rw | GST_PARAM_MUTABLE_PLAYING));
  install_vad_filter_properties (gobject_class);
  /**
   * GstWhisperSink:max-gap:
   *
   * The longest hole in the input timestamps, in ms, that is filled with
   * silence (zero samples) instead of ending the run. A lossy source (RTP
   * without concealment, `identity drop-probability`) misses a buffer now
   * and then; ending the run there would transcribe what came before and
   * start again, cutting the words on both sides of every hole. Filled,
   * the engine sees one continuous stream with a short silence and the
   * text times stay those of the timestamps. A larger hole ends the run as
   * a GAP does. Buffers that start before the end of what was received
   * (overlapping or backwards timestamps) lose their overlapping start; an
   * overlap larger than this starts a new run. Jitter up to 40 ms is taken
   * as continuous audio. 0 never fills: every hole or overlap beyond the
   * jitter starts a new run. The stats property counts the silence
   * (`audio-filled`, `gaps-filled`) and the dropped overlap
   * (`audio-overlap`). Changes apply from the next buffer.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_GAP,
      g_param_spec_uint ("max-gap", "Max gap",
          "Holes in the input timestamps up to this many ms are filled with silence "
          "instead of ending the run; overlaps up to it are dropped (0 = never)",
          0, MAX_MAX_GAP_MS, DEFAULT_MAX_GAP_MS, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_OFFLINE_MODE,
      g_param_spec_enum ("offline-mode", "Offline mode",
          "Non-live upstream: transcribe the whole stream at EOS like the engine does "
          "(exact), window by window as audio arrives (windowed), or at EOS in pieces cut "
          "at non-speech, batch-size at once (batched)",
          GST_TYPE_WHISPER_OFFLINE_MODE, DEFAULT_OFFLINE_MODE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:batch-size:
   *
   * offline-mode=batched: how many pieces of the file are decoded at once
   * (faster-whisper's BatchedInferencePipeline batch_size). At the drain
   * (EOS, a GAP, a new segment) the buffered run is cut where the voice
   * activity detector (vad-model; loaded for this mode) finds no speech,
   * the speech is joined into pieces of at most 30 s, and batch-size
   * streams of the engine decode them at once, their decode steps shared
   * (engine/whisper-step-batcher.h). No piece is conditioned on the text
   * before it, and the silence between speech regions is not decoded:
   * tools/bench-batched.py measures what that costs and gains
   * (gst-plugin/README.md). Each piece's segments go downstream once it and
   * the pieces before it are done; output=words takes its words from the
   * segments' word timestamps (turned on in this mode). The memory is one
   * decoder state per piece decoded at once.
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_int ("batch-size", "Batch size",
          "offline-mode=batched: pieces of the file decoded at once", 1, 64,
          DEFAULT_BATCH_SIZE, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_ENCODER_LENGTH,
      g_param_spec_int ("max-encoder-length", "Max encoder length",
          "Encoder frames per window the engine resolved when it was created "
          "(0 before READY)", 0, G_MAXINT, 0, ro));
  g_object_class_install_property (gobject_class, PROP_MAX_OBSERVED_DELAY,
      g_param_spec_uint ("max-observed-delay", "Max observed delay",
          "Live upstream: the largest delay in ms between audio and its text seen so "
          "far (without upstream latency)", 0, G_MAXUINT, 0, ro));
  /**
   * GstWhisperSink:stats:
   *
   * Counters since the element last went from READY to PAUSED, in a
   * "whispersink-stats" structure: `audio-received` (guint64, ns of audio
   * accepted on the sink pad), `audio-transcribed` (guint64, ns of that
   * audio the engine has been given), `audio-dropped` (guint64, ns of live
   * audio dropped before the engine saw it because inference fell behind;
   * each drop also posts a warning; at EOS, received = transcribed +
   * dropped), `text-dropped` (guint, live text buffers dropped because
   * downstream did not take them in time, each replaced by a GAP; a warning
   * is posted), `output-queued` (guint, items waiting for downstream now),
   * `samples-non-finite` and `samples-clipped` (guint64, F32 input samples
   * that were NaN or infinite, set to 0, or beyond full scale, clamped to
   * +-1; a warning is posted at the first and then at most every 10 s of
   * audio), `windows-silent`, `windows-no-voice` and `windows-no-speech`
   * (guint64, engine windows skipped by silence-threshold or by vad-gate
   * without decoding, and decoded but dropped by the no-speech rule),
   * `audio-filled` (guint64, ns of silence put into holes in the
   * input timestamps, see max-gap), `gaps-filled` (guint, such holes) and
   * `audio-overlap` (guint64, ns of input dropped because it overlapped
   * what was received already). The silence is transcribed like audio: at
   * EOS, received + filled - overlap = transcribed + dropped.
   * `engine-users` (guint) is how many elements share this element's
   * engine now (engine-group; 0 before READY and with device=remote); it
   * is not reset. `vad-users` (guint): elements sharing this element's
   * voice activity detector (one copy of the weights per file in the
   * process, whatever the engine group; 0 when it has none loaded).
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters since READY->PAUSED: audio-received, audio-transcribed and "
          "audio-dropped (ns), text-dropped and output-queued (items), "
          "samples-non-finite and samples-clipped (F32 samples fixed), windows-silent, "
          "windows-no-voice and windows-no-speech (engine windows skipped), audio-filled, "
          "gaps-filled and audio-overlap (max-gap), engine-users (elements sharing the engine), "
          "vad-users (elements sharing the voice activity detector)",
          GST_TYPE_STRUCTURE, ro));
  gst_whisper_decoding_install_properties (gobject_class, PROP_DECODING_FIRST);

  /* device=remote: server-url, server-model, server-api-key, server-timeout,
   * server-queue */
  gst_whisper_sink_remote_install_properties (gobject_class, PROP_REMOTE_FIRST);
  gst_whisper_translate_class_init (element_class);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  /* Audio in, text out: a filter, classified as the transcribers of
   * gst-plugins-rs are (awstranscriber, speechmatics, deepgram:
   * "Audio/Text/Filter"), so that applications looking for speech-to-text
   * find it. Not "Sink", though it can end a pipeline (the src pad may stay
   * unlinked, the text is on the bus): autoaudiosink picks elements whose
   * class has both "Sink" and "Audio". */
  gst_element_class_set_static_metadata (element_class,
      "Whisper speech-to-text transcriber",
      "Audio/Text/Filter",
      "Transcribes speech (16 kHz audio, any number of channels) into timestamped text "
      "with an OpenAI Whisper model, pushed on the src pad and posted on the bus; the src "
      "pad may stay unlinked (the 'sink' in the name is historical)",
      "gst-whisper project");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_whisper_sink_change_state);

  /* Register the engine's error domain from libwhisper-engine itself before
   * any CUDA module can: a module that registers it from its own static
   * string and is then unloaded (no GPU) would leave a dangling quark. */
  (void) whisper_engine_error_quark ();

  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_DEVICE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_OUTPUT_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_OFFLINE_MODE, 0);
}

static void
gst_whisper_sink_init (GstWhisperSink *self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, GST_DEBUG_FUNCPTR (gst_whisper_sink_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_sink_query));
  gst_pad_set_activatemode_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_sink_activate_mode));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_src_query));
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_src_activate_mode));
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  /* It ends pipelines (`... ! whispersink`): the bin waits for its EOS. */
  GST_OBJECT_FLAG_SET (self, GST_ELEMENT_FLAG_SINK);

  self->model = g_strdup (DEFAULT_MODEL);
  self->device = DEFAULT_DEVICE;
  self->precision = DEFAULT_PRECISION;
  self->threads = DEFAULT_THREADS;
  self->language_code = g_strdup (DEFAULT_LANGUAGE_CODE);
  self->latency_ms = DEFAULT_LATENCY_MS;
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->live_encoder = DEFAULT_LIVE_ENCODER;
  self->live_context = DEFAULT_LIVE_CONTEXT_S;
  self->live_min_probability = DEFAULT_LIVE_MIN_PROBABILITY;
  self->lateness_ms = DEFAULT_LATENESS_MS;
  self->output = DEFAULT_OUTPUT;
  self->encoder_context = DEFAULT_ENCODER_CONTEXT;
  self->no_speech_threshold = DEFAULT_NO_SPEECH_THRESHOLD;
  self->condition_on_previous_text = TRUE;
  self->channel = -1;
  self->silence_threshold = WHISPER_DEFAULT_SILENCE_THRESHOLD_DB;
  self->strict_no_speech = TRUE;
  self->vad_gate = TRUE;
  self->vad_threshold = 0.5;
  init_vad_filter_properties (self);
  self->offline_mode = DEFAULT_OFFLINE_MODE;

  self->max_gap_ms = DEFAULT_MAX_GAP_MS;
  gst_whisper_decoding_init (&self->decoding);
  gst_whisper_align_init (&self->align, WHISPER_SAMPLE_RATE, ALIGN_TOLERANCE);
  gst_segment_init (&self->sink_segment, GST_FORMAT_TIME);
  gst_whisper_queue_init (&self->queue);
  gst_whisper_out_queue_init (&self->outq, GST_ELEMENT (self));
  self->src.self = self;
  self->src.pad = self->srcpad;
  self->src.outq = &self->outq;
  self->src.post_eos = TRUE;
  gst_whisper_src_reset (&self->src);

  self->translate_lanes = g_ptr_array_new ();
  g_mutex_init (&self->translate_lock);
  gst_whisper_sink_task_init (self);
  gst_whisper_sink_remote_init (self);
}

static void
gst_whisper_sink_finalize (GObject *object)
{
  GstWhisperSink *self = GST_WHISPER_SINK (object);

  gst_whisper_sink_task_finalize (self);
  gst_whisper_sink_remote_finalize (self);
  gst_whisper_queue_clear (&self->queue);
  gst_whisper_out_queue_clear (&self->outq);
  g_clear_pointer (&self->translate_lanes, g_ptr_array_unref);
  g_mutex_clear (&self->translate_lock);
  g_clear_pointer (&self->stream, whisper_stream_free);
  g_clear_pointer (&self->engine, gst_whisper_engines_release);
  g_clear_pointer (&self->vad, gst_whisper_vads_release);
  g_free (self->vad_model);
  g_free (self->model);
  g_free (self->engine_group);
  g_free (self->language_code);
  gst_whisper_decoding_clear (&self->decoding);

  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ------------------------------------------------------------------------ */
/* Properties */

/* NULL when the engine can decode `code` (with `task`), else why not.
 * Without an engine, only whether it is a Whisper language at all. */
static gchar *
language_problem (WhisperEngine *engine, const gchar *code, WhisperTask task)
{
  g_autoptr (GError) error = NULL;
  if (engine) {
    WhisperDecodeOptions o;
    whisper_decode_options_init (&o);
    o.language = code;
    o.task = task;
    if (!whisper_decode_options_check (engine, &o, &error))
      return g_strdup (error->message);
    return NULL;
  }
  int index;
  if (!whisper_language_parse (code, WHISPER_N_LANGUAGES_MAX, &index, &error))
    return g_strdup (error->message);
  return NULL;
}

/* Posts the warnings about settings below their useful range
 * (encoder-context, latency) once each, as soon as the element has a bus
 * to post them on (when set before the element is in a pipeline: when the
 * engine is loaded). */
static void
post_setting_warnings (GstWhisperSink *self)
{
  gboolean context_warn, latency_warn;
  gint frames;
  guint ms;

  GST_OBJECT_LOCK (self);
  if (GST_ELEMENT_BUS (self) == NULL) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  context_warn = self->encoder_context_warn;
  latency_warn = self->latency_warn;
  self->encoder_context_warn = self->latency_warn = FALSE;
  frames = self->encoder_context;
  ms = self->latency_ms;
  GST_OBJECT_UNLOCK (self);

  if (context_warn)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("encoder-context=%d (%.2f s windows) is below %d frames: the transcript will be "
            "mostly wrong or loop", frames, frames * 0.02, USEFUL_ENCODER_CONTEXT),
        ("Whisper models are trained on 30-s windows (1500 frames); measured word error "
            "rates are in gst-plugin/README.md. Use 0 (the model's) or at least %d",
            USEFUL_ENCODER_CONTEXT),
        ("reason", G_TYPE_STRING, "encoder-context-too-short", "encoder-context",
            G_TYPE_INT, frames, "minimum", G_TYPE_INT, USEFUL_ENCODER_CONTEXT, NULL));
  if (latency_warn)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("latency=%u is below %u ms: live transcripts will have many wrong words", ms,
            USEFUL_LATENCY_MS),
        ("Most words are committed by the deadline before two decodes agree; measured "
            "word error rates are in gst-plugin/README.md"),
        ("reason", G_TYPE_STRING, "latency-too-short", "latency", G_TYPE_UINT, ms,
            "minimum", G_TYPE_UINT, (guint) USEFUL_LATENCY_MS, NULL));
}

/* Object lock held. Engine properties may change in NULL and READY only;
 * a change in PAUSED or PLAYING is ignored, and *ignored names the property
 * so that the caller posts a warning once the lock is released. */
static gboolean
engine_property_writable (GstWhisperSink *self, GParamSpec *pspec, const gchar **ignored)
{
  if (GST_STATE (self) > GST_STATE_READY || GST_STATE_PENDING (self) > GST_STATE_READY) {
    GST_WARNING_OBJECT (self, "'%s' can only be changed in the NULL or READY state; "
        "the change is ignored", pspec->name);
    *ignored = pspec->name;
    return FALSE;
  }
  if (self->engine || self->remote)
    self->engine_dirty = TRUE;    /* reloaded on the way to PAUSED */
  return TRUE;
}

static void
gst_whisper_sink_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstWhisperSink *self = GST_WHISPER_SINK (object);
  gboolean post_latency = FALSE, warn_language = FALSE;
  gchar *language = NULL;
  const gchar *ignored = NULL;

  if (gst_whisper_sink_remote_set_property (self, prop_id, value, pspec))
    return;                     /* device=remote's */
  GST_OBJECT_LOCK (self);
  if (prop_id >= PROP_DECODING_FIRST) {
    gchar *problem = NULL;
    gst_whisper_decoding_set_property (&self->decoding, prop_id, PROP_DECODING_FIRST, value,
        &problem);
    GST_OBJECT_UNLOCK (self);
    if (problem) {
      GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
          ("'%s' is ignored: %s", pspec->name, problem), ("the previous value stays"),
          ("reason", G_TYPE_STRING, "property-invalid", "property", G_TYPE_STRING, pspec->name,
              NULL));
      g_free (problem);
    }
    return;
  }
  switch (prop_id) {
    case PROP_MODEL:
      if (engine_property_writable (self, pspec, &ignored)) {
        g_free (self->model);
        self->model = g_value_dup_string (value);
      }
      break;
    case PROP_DEVICE:
      if (engine_property_writable (self, pspec, &ignored))
        self->device = g_value_get_enum (value);
      break;
    case PROP_PRECISION:
      if (engine_property_writable (self, pspec, &ignored))
        self->precision = g_value_get_enum (value);
      break;
    case PROP_THREADS:
      if (engine_property_writable (self, pspec, &ignored))
        self->threads = g_value_get_int (value);
      break;
    case PROP_ENGINE_GROUP:
      if (engine_property_writable (self, pspec, &ignored)) {
        g_free (self->engine_group);
        self->engine_group = g_value_dup_string (value);
      }
      break;
    case PROP_ENCODER_CONTEXT:
      if (engine_property_writable (self, pspec, &ignored)) {
        self->encoder_context = g_value_get_int (value);
        self->encoder_context_warn = self->encoder_context > 0
            && self->encoder_context < USEFUL_ENCODER_CONTEXT;
      }
      break;
    case PROP_VAD_GATE:
      if (engine_property_writable (self, pspec, &ignored))
        self->vad_gate = g_value_get_boolean (value);
      break;
    case PROP_VAD_MODEL:
      if (engine_property_writable (self, pspec, &ignored)) {
        g_free (self->vad_model);
        self->vad_model = g_value_dup_string (value);
      }
      break;
    case PROP_VAD_THRESHOLD:
      self->vad_threshold = g_value_get_double (value);
      break;
    case PROP_LANGUAGE_CODE: {
      /* transcriberbin sets it while PLAYING: checked now, against the
       * engine's model once there is one */
      const gchar *code = g_value_get_string (value);
      language = language_problem (self->engine, code, self->decoding.task);
      if (language) {
        warn_language = TRUE;
      } else {
        g_free (self->language_code);
        self->language_code = g_strdup (code);
      }
      break;
    }
    case PROP_LATENCY:
      self->latency_ms = g_value_get_uint (value);
      self->latency_warn = self->latency_ms < USEFUL_LATENCY_MS;
      post_latency = GST_STATE (self) >= GST_STATE_PAUSED;
      break;
    case PROP_LATENESS:
      self->lateness_ms = g_value_get_uint (value);
      break;
    case PROP_OUTPUT:
      self->output = g_value_get_enum (value);
      break;
    case PROP_NO_SPEECH_THRESHOLD:
      self->no_speech_threshold = g_value_get_double (value);
      break;
    case PROP_OFFLINE_MODE:
      self->offline_mode = g_value_get_enum (value);
      break;
    case PROP_LIVE_PROMPT:
      self->live_prompt = g_value_get_boolean (value);
      break;
    case PROP_LIVE_ENCODER:
      self->live_encoder = g_value_get_enum (value);
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_int (value);
      break;
    case PROP_LIVE_COMMIT:
      self->live_commit = g_value_get_enum (value);
      break;
    case PROP_LIVE_CONTEXT:
      self->live_context = g_value_get_double (value);
      break;
    case PROP_LIVE_MIN_PROBABILITY:
      self->live_min_probability = g_value_get_double (value);
      break;
    case PROP_TRANSLATE_LATENCY:
      self->translate_latency_ms = g_value_get_uint (value);
      break;
    case PROP_CONDITION_ON_PREVIOUS_TEXT:
      self->condition_on_previous_text = g_value_get_boolean (value);
      break;
    case PROP_CHANNEL:
      self->channel = g_value_get_int (value);
      break;
    case PROP_SILENCE_THRESHOLD:
      self->silence_threshold = g_value_get_double (value);
      break;
    case PROP_STRICT_NO_SPEECH:
      self->strict_no_speech = g_value_get_boolean (value);
      break;
    case PROP_WORD_TIMESTAMPS:
      self->word_timestamps = g_value_get_boolean (value);
      break;
    case PROP_MAX_GAP:
      self->max_gap_ms = g_value_get_uint (value);
      break;
    default:
      if (!set_vad_filter_property (self, prop_id, value, pspec, &ignored))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);

  if (prop_id == PROP_ENCODER_CONTEXT || prop_id == PROP_LATENCY)
    post_setting_warnings (self);
  if (warn_language) {
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("language-code \"%s\" is ignored: %s", g_value_get_string (value), language),
        ("the previous language stays"),
        ("reason", G_TYPE_STRING, "language-invalid", NULL));
    g_free (language);
  }
  if (post_latency)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
  if (ignored)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("The property '%s' cannot change while the element is PAUSED or PLAYING: the "
            "change is ignored", ignored),
        ("the engine is loaded with it; set it in the NULL or READY state"),
        ("reason", G_TYPE_STRING, "property-ignored", "property", G_TYPE_STRING, ignored,
            NULL));
}

static GstClockTime
samples_to_time (guint64 n)
{
  return gst_util_uint64_scale_int (n, GST_SECOND, WHISPER_SAMPLE_RATE);
}

static GstStructure *
get_stats (GstWhisperSink *self)
{
  GstStructure *s;
  guint queued, dropped;

  gst_whisper_out_queue_get_stats (&self->outq, &queued, &dropped);
  GST_OBJECT_LOCK (self);
  s = gst_structure_new ("whispersink-stats",
      "audio-received", G_TYPE_UINT64, samples_to_time (self->audio_received),
      "audio-transcribed", G_TYPE_UINT64, samples_to_time (self->audio_transcribed),
      "audio-dropped", G_TYPE_UINT64, samples_to_time (self->audio_dropped),
      "text-dropped", G_TYPE_UINT, dropped, "output-queued", G_TYPE_UINT, queued,
      "samples-non-finite", G_TYPE_UINT64, self->samples_non_finite,
      "samples-clipped", G_TYPE_UINT64, self->samples_clipped,
      "windows-silent", G_TYPE_UINT64, self->windows_silent,
      "windows-no-voice", G_TYPE_UINT64, self->windows_no_voice,
      "windows-no-speech", G_TYPE_UINT64, self->windows_no_speech,
      "audio-filled", G_TYPE_UINT64, samples_to_time (self->audio_filled),
      "gaps-filled", G_TYPE_UINT, self->gaps_filled,
      "audio-overlap", G_TYPE_UINT64, samples_to_time (self->audio_overlap),
      "engine-users", G_TYPE_UINT,
      self->engine ? gst_whisper_engines_users (self->engine) : 0,
      "vad-users", G_TYPE_UINT, self->vad ? gst_whisper_vads_users (self->vad) : 0, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

static void
gst_whisper_sink_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstWhisperSink *self = GST_WHISPER_SINK (object);

  if (prop_id == PROP_MAX_OBSERVED_DELAY) {
    GstClockTime d = gst_whisper_output_get_max_delay (&self->out);
    g_value_set_uint (value, (guint) MIN (d / GST_MSECOND, G_MAXUINT));
    return;
  }
  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, get_stats (self));
    return;
  }
  if (gst_whisper_sink_remote_get_property (self, prop_id, value))
    return;                     /* device=remote's */

  GST_OBJECT_LOCK (self);
  if (gst_whisper_decoding_get_property (&self->decoding, prop_id, PROP_DECODING_FIRST,
          value)) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  switch (prop_id) {
    case PROP_MODEL:
      if (self->model)
        g_value_set_string (value, self->model);
      else
        g_value_take_string (value, whisper_engine_default_model_path ());
      break;
    case PROP_DEVICE:
      g_value_set_enum (value, self->device);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, self->precision);
      break;
    case PROP_THREADS:
      g_value_set_int (value, self->threads);
      break;
    case PROP_ENGINE_GROUP:
      g_value_set_string (value, self->engine_group);
      break;
    case PROP_LANGUAGE_CODE:
      g_value_set_string (value, self->language_code);
      break;
    case PROP_LATENCY:
      g_value_set_uint (value, self->latency_ms);
      break;
    case PROP_LATENESS:
      g_value_set_uint (value, self->lateness_ms);
      break;
    case PROP_OUTPUT:
      g_value_set_enum (value, self->output);
      break;
    case PROP_ENCODER_CONTEXT:
      g_value_set_int (value, self->encoder_context);
      break;
    case PROP_VAD_GATE:
      g_value_set_boolean (value, self->vad_gate);
      break;
    case PROP_VAD_MODEL:
      g_value_set_string (value, self->vad_model);
      break;
    case PROP_VAD_THRESHOLD:
      g_value_set_double (value, self->vad_threshold);
      break;
    case PROP_NO_SPEECH_THRESHOLD:
      g_value_set_double (value, self->no_speech_threshold);
      break;
    case PROP_OFFLINE_MODE:
      g_value_set_enum (value, self->offline_mode);
      break;
    case PROP_LIVE_PROMPT:
      g_value_set_boolean (value, self->live_prompt);
      break;
    case PROP_LIVE_ENCODER:
      g_value_set_enum (value, self->live_encoder);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_int (value, self->batch_size);
      break;
    case PROP_LIVE_COMMIT:
      g_value_set_enum (value, self->live_commit);
      break;
    case PROP_LIVE_CONTEXT:
      g_value_set_double (value, self->live_context);
      break;
    case PROP_LIVE_MIN_PROBABILITY:
      g_value_set_double (value, self->live_min_probability);
      break;
    case PROP_TRANSLATE_LATENCY:
      g_value_set_uint (value, self->translate_latency_ms);
      break;
    case PROP_CONDITION_ON_PREVIOUS_TEXT:
      g_value_set_boolean (value, self->condition_on_previous_text);
      break;
    case PROP_CHANNEL:
      g_value_set_int (value, self->channel);
      break;
    case PROP_SILENCE_THRESHOLD:
      g_value_set_double (value, self->silence_threshold);
      break;
    case PROP_STRICT_NO_SPEECH:
      g_value_set_boolean (value, self->strict_no_speech);
      break;
    case PROP_WORD_TIMESTAMPS:
      g_value_set_boolean (value, self->word_timestamps);
      break;
    case PROP_MAX_GAP:
      g_value_set_uint (value, self->max_gap_ms);
      break;
    case PROP_MAX_ENCODER_LENGTH:
      g_value_set_int (value, self->max_encoder_length);
      break;
    default:
      if (!get_vad_filter_property (self, prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------------ */
/* Engine and stream */

static void
post_progress (GstWhisperSink *self, GstProgressType type, const gchar *text)
{
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_progress (GST_OBJECT (self), type, "load-model", text));
}

/* The voice activity detector of vad-gate, into *vad (NULL: no gate).
 * FALSE, with an error posted, when a vad-model set by the user cannot be
 * loaded; the default file missing only posts a warning. */
static gboolean
load_vad (GstWhisperSink *self, WhisperVad **vad)
{
  g_autoptr (GError) err = NULL;
  g_autofree gchar *path = NULL;
  gboolean gate, filter, explicit_path;

  GST_OBJECT_LOCK (self);
  gate = self->vad_gate;
  /* offline-mode=batched cuts files where the detector finds no speech */
  filter = self->vad_filter || self->offline_mode == GST_WHISPER_OFFLINE_BATCHED;
  explicit_path = self->vad_model != NULL;
  path = explicit_path ? g_strdup (self->vad_model) : whisper_vad_default_path ();
  GST_OBJECT_UNLOCK (self);

  *vad = NULL;
  if (!gate && !filter)
    return TRUE;
  *vad = gst_whisper_vads_acquire (path, &err);
  if (*vad) {
    GST_INFO_OBJECT (self, "voice activity detector %s", path);
    return TRUE;
  }
  if (explicit_path) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not load the voice activity detector \"%s\" (vad-model): %s", path,
            err->message), (NULL));
    return FALSE;
  }
  if (filter) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("vad-filter=true and offline-mode=batched need the voice activity detector "
            "\"%s\": %s "
            "(tools/fetch-model.sh silero-vad installs it; or set vad-model)", path,
            err->message), (NULL));
    return FALSE;
  }
  GST_ELEMENT_WARNING_WITH_DETAILS (self, RESOURCE, NOT_FOUND,
      ("No voice activity detector: %s; noise may give text (vad-gate=false: no "
          "detector, no warning)", err->message),
      (NULL), ("reason", G_TYPE_STRING, "vad-missing", "path", G_TYPE_STRING, path, NULL));
  return TRUE;
}

static gboolean
create_engine (GstWhisperSink *self)
{
  WhisperEngineOptions opts;
  WhisperEngine *engine, *old;
  WhisperVad *vad = NULL, *old_vad;
  g_autoptr (GError) err = NULL;
  g_autofree gchar *model = NULL, *language = NULL, *text = NULL, *group = NULL;
  const WhisperEngineInfo *info;

  /* device=remote: a server instead of a model (gstwhispersinkremote.c). */
  if (gst_whisper_sink_remote_is_selected (self))
    return gst_whisper_sink_remote_open (self);

  GST_OBJECT_LOCK (self);
  model = self->model ? g_strdup (self->model) : whisper_engine_default_model_path ();
  language = g_strdup (self->language_code);
  whisper_engine_options_init (&opts);
  opts.device = (WhisperDevice) self->device;
  opts.precision = (WhisperPrecision) self->precision;
  opts.n_threads = self->threads;
  opts.max_encoder_length = self->encoder_context;
  group = g_strdup (self->engine_group);
  GST_OBJECT_UNLOCK (self);
  opts.model_path = model;


  post_setting_warnings (self);
  text = g_strdup_printf ("Loading Whisper model %s", model);
  post_progress (self, GST_PROGRESS_TYPE_START, text);
  GST_INFO_OBJECT (self, "loading model %s (device %d, %d threads, encoder context %d)",
      model, opts.device, opts.n_threads, opts.max_encoder_length);

  engine = gst_whisper_engines_acquire (&opts, group, &err);
  if (engine == NULL) {
    post_progress (self, GST_PROGRESS_TYPE_ERROR, "Loading the Whisper model failed");
    if (g_error_matches (err, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Could not open the inference device for Whisper model \"%s\": %s", model,
              err->message), ("device property: %d", opts.device));
    } else if (g_error_matches (err, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING)) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("Invalid setting for Whisper model \"%s\": %s", model, err->message), (NULL));
    } else {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not load Whisper model \"%s\": %s", model,
              err ? err->message : "unknown error"), (NULL));
    }
    return FALSE;
  }

  info = whisper_engine_get_info (engine);
  GST_INFO_OBJECT (self, "model %s on %s: %d encoder frames per window, %d samples",
      info->model_path ? info->model_path : model, info->device_name,
      info->max_encoder_length, info->window_samples);
  {
    /* the language and the task against this model */
    WhisperTask task;
    GST_OBJECT_LOCK (self);
    task = self->decoding.task;
    GST_OBJECT_UNLOCK (self);
    g_autofree gchar *problem = language_problem (engine, language, task);
    if (problem) {
      gst_whisper_engines_release (engine);
      post_progress (self, GST_PROGRESS_TYPE_ERROR, "Loading the Whisper model failed");
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("Invalid language-code \"%s\" or task for Whisper model \"%s\": %s", language,
              model, problem), (NULL));
      return FALSE;
    }
  }

  if (!load_vad (self, &vad)) {
    gst_whisper_engines_release (engine);
    post_progress (self, GST_PROGRESS_TYPE_ERROR, "Loading the voice activity detector failed");
    return FALSE;
  }

  GST_OBJECT_LOCK (self);
  old_vad = self->vad;
  self->vad = vad;
  old = self->engine;
  self->engine = engine;
  self->max_encoder_length = info->max_encoder_length;
  self->engine_dirty = FALSE;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&old, gst_whisper_engines_release);
  g_clear_pointer (&old_vad, gst_whisper_vads_release);
  gst_whisper_sink_remote_close (self);  /* device was remote before */

  text = (g_free (text), g_strdup_printf ("Loaded Whisper model %s", model));
  post_progress (self, GST_PROGRESS_TYPE_COMPLETE, text);
  return TRUE;
}

static void
free_engine (GstWhisperSink *self)
{
  WhisperEngine *engine;
  WhisperVad *vad;

  GST_OBJECT_LOCK (self);
  engine = self->engine;
  self->engine = NULL;
  vad = self->vad;
  self->vad = NULL;
  self->max_encoder_length = 0;
  self->engine_dirty = FALSE;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&engine, gst_whisper_engines_release);
  g_clear_pointer (&vad, gst_whisper_vads_release);
  gst_whisper_sink_remote_close (self);
}

static gboolean
create_stream (GstWhisperSink *self)
{
  g_autoptr (GError) err = NULL;
  WhisperStream *stream;

  if (self->remote) {
    if (gst_whisper_translate_any (self))
      GST_ELEMENT_WARNING (self, STREAM, NOT_IMPLEMENTED,
          ("device=remote does not translate: the translate_src pads carry no text"),
          (NULL));
    return TRUE;                /* device=remote: no engine stream */
  }
  if (!gst_whisper_translate_open (self))
    return FALSE;
  stream = whisper_stream_new (self->engine, &err);
  if (stream == NULL) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not create a Whisper stream: %s",
            err ? err->message : "unknown error"), (NULL));
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->stream = stream;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static void
free_stream (GstWhisperSink *self)
{
  WhisperStream *stream;

  GST_OBJECT_LOCK (self);
  stream = self->stream;
  self->stream = NULL;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&stream, whisper_stream_free);
  gst_whisper_translate_close (self);
}

static void
reset_sink_side (GstWhisperSink *self)
{
  gst_whisper_align_mark_discont (&self->align);
  gst_segment_init (&self->sink_segment, GST_FORMAT_TIME);
  self->need_latency_query = TRUE;
}

static GstStateChangeReturn
gst_whisper_sink_change_state (GstElement *element, GstStateChange transition)
{
  GstWhisperSink *self = GST_WHISPER_SINK (element);
  GstStateChangeReturn ret;
  gboolean dirty;

  switch (transition) {
    case GST_STATE_CHANGE_NULL_TO_READY:
      if (!create_engine (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      GST_OBJECT_LOCK (self);
      dirty = self->engine_dirty;
      GST_OBJECT_UNLOCK (self);
      if (dirty && !create_engine (self))
        return GST_STATE_CHANGE_FAILURE;
      if (!create_stream (self))
        return GST_STATE_CHANGE_FAILURE;
      self->have_info = FALSE;
      reset_sink_side (self);
      gst_whisper_sink_task_reset (self);
      gst_whisper_src_reset (&self->src);
      gst_whisper_out_queue_reset_stats (&self->outq);
      GST_OBJECT_LOCK (self);
      self->audio_received = self->audio_transcribed = self->audio_dropped = 0;
      self->samples_non_finite = self->samples_clipped = 0;
      self->windows_silent = self->windows_no_voice = self->windows_no_speech = 0;
      self->audio_filled = self->audio_overlap = 0;
      self->gaps_filled = 0;
      self->sanitize_warned_at = G_MAXUINT64;
      GST_OBJECT_UNLOCK (self);
      break;
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      /* Sinks preroll again: without new audio (a branch beside this one
       * holds it back until every sink has prerolled) they would wait for
       * the next text, which may need all of the audio. */
      gst_whisper_out_queue_push_preroll (&self->outq);
      gst_whisper_translate_push_preroll (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      /* The pads are inactive and both tasks are stopped. */
      free_stream (self);
      gst_whisper_sink_task_reset (self);
      gst_whisper_src_reset (&self->src);
      break;
    case GST_STATE_CHANGE_READY_TO_NULL:
      free_engine (self);
      break;
    default:
      break;
  }
  return ret;
}

/* ------------------------------------------------------------------------ */
/* Hand-off to the task */

/* Refuses data, drops the queued text, wakes everyone, and stops a
 * running transcription (the inference task checks the queue's flushing
 * state after every decode step). */
static void
set_flushing (GstWhisperSink *self)
{
  gst_whisper_queue_set_flushing (&self->queue, TRUE);
  gst_whisper_out_queue_set_flushing (&self->outq, TRUE);
  gst_whisper_translate_set_flushing (self, TRUE);
  GST_OBJECT_LOCK (self);
  if (self->stream)
    whisper_stream_cancel (self->stream);
  GST_OBJECT_UNLOCK (self);
}

static void
unset_flushing (GstWhisperSink *self)
{
  gst_whisper_out_queue_set_flushing (&self->outq, FALSE);
  gst_whisper_translate_set_flushing (self, FALSE);
  gst_whisper_queue_set_flushing (&self->queue, FALSE);
}

/* Both tasks, the src pad's first: it takes what inference produces. */
static gboolean
start_tasks (GstWhisperSink *self)
{
  if (!gst_pad_start_task (self->srcpad, gst_whisper_src_loop, &self->src, NULL)) {
    GST_ELEMENT_ERROR (self, CORE, THREAD, ("Could not start the src pad task"),
        (NULL));
    return FALSE;
  }
  if (!gst_whisper_sink_task_start (self)) {
    GST_ELEMENT_ERROR (self, CORE, THREAD, ("Could not start the inference task"),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_whisper_sink_src_activate_mode (GstPad *pad, GstObject *parent, GstPadMode mode,
    gboolean active)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (active) {
    unset_flushing (self);
    return start_tasks (self);
  }
  set_flushing (self);
  gst_whisper_sink_task_stop (self);
  return gst_pad_stop_task (pad);
}

static gboolean
gst_whisper_sink_sink_activate_mode (GstPad *pad, GstObject *parent, GstPadMode mode,
    gboolean active)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  (void) pad;
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (!active)
    set_flushing (self);   /* wakes a chain waiting for room */
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Sink pad */

static void
query_upstream_latency (GstWhisperSink *self)
{
  GstQuery *q = gst_query_new_latency ();
  gboolean live = FALSE;
  GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;

  if (gst_pad_peer_query (self->sinkpad, q))
    gst_query_parse_latency (q, &live, &min, &max);
  gst_query_unref (q);

  GST_DEBUG_OBJECT (self, "upstream live %d, min latency %" GST_TIME_FORMAT, live,
      GST_TIME_ARGS (min));
  gst_whisper_queue_set_upstream (&self->queue, live, min);
}

/* Sample i of an interleaved buffer as float. The memory of a buffer need
 * not be aligned to its sample size (GST_READ_UINT16_LE and friends then
 * read through a misaligned pointer, undefined behaviour): memcpy. */
static inline float
sample_at (const guint8 *data, gboolean s16, gsize i)
{
  if (s16) {
    guint16 v;
    memcpy (&v, data + 2 * i, sizeof v);
    return (gint16) GUINT16_FROM_LE (v) / 32768.0f;
  } else {
    guint32 bits;
    float f;
    memcpy (&bits, data + 4 * i, sizeof bits);
    bits = GUINT32_FROM_LE (bits);
    memcpy (&f, &bits, sizeof f);
    return f;
  }
}

/* The buffer's frames as mono float: one channel (channel >= 0) or the mean
 * of all of them. */
static GArray *
buffer_to_float (GstWhisperSink *self, GstBuffer *buffer, gint channel)
{
  const gboolean s16 = GST_AUDIO_INFO_FORMAT (&self->info) == GST_AUDIO_FORMAT_S16LE;
  const gint channels = GST_AUDIO_INFO_CHANNELS (&self->info);
  GstMapInfo map;
  GArray *pcm;
  gsize n, i;
  gint c;

  if (!gst_buffer_map (buffer, &map, GST_MAP_READ))
    return NULL;
  n = map.size / GST_AUDIO_INFO_BPF (&self->info);
  pcm = g_array_sized_new (FALSE, FALSE, sizeof (float), n);
  g_array_set_size (pcm, n);
  if (channels == 1 || channel >= 0) {
    const gint take = channels == 1 ? 0 : channel;
    for (i = 0; i < n; i++)
      g_array_index (pcm, float, i) = sample_at (map.data, s16, i * channels + take);
  } else {
    for (i = 0; i < n; i++) {
      float sum = 0.0f;
      for (c = 0; c < channels; c++)
        sum += sample_at (map.data, s16, i * channels + c);
      g_array_index (pcm, float, i) = sum / channels;
    }
  }
  gst_buffer_unmap (buffer, &map);
  return pcm;
}

/* Warn again about bad samples after this much more audio at the most. */
#define SANITIZE_WARN_INTERVAL (10 * WHISPER_SAMPLE_RATE)

/* F32 input: NaN/Inf samples to 0, samples beyond full scale clamped to
 * +-1 (whisper-pcm.h), counted in the stats property; a warning at the
 * first such buffer, then at most once per 10 s of audio. S16 needs
 * nothing: every value is within range. */
static void
sanitize_samples (GstWhisperSink *self, GArray *pcm, GstClockTime ts)
{
  WhisperPcmFixes fixes = { 0, 0 };
  guint64 received, non_finite, clipped;

  if (GST_AUDIO_INFO_FORMAT (&self->info) != GST_AUDIO_FORMAT_F32LE)
    return;
  whisper_pcm_sanitize_in_place ((float *) pcm->data, pcm->len, &fixes);
  if (fixes.non_finite == 0 && fixes.clipped == 0)
    return;
  GST_OBJECT_LOCK (self);
  self->samples_non_finite += fixes.non_finite;
  self->samples_clipped += fixes.clipped;
  received = self->audio_received;
  non_finite = self->samples_non_finite;
  clipped = self->samples_clipped;
  GST_OBJECT_UNLOCK (self);
  if (self->sanitize_warned_at != G_MAXUINT64
      && received < self->sanitize_warned_at + SANITIZE_WARN_INTERVAL)
    return;
  self->sanitize_warned_at = received;
  GST_ELEMENT_WARNING_WITH_DETAILS (self, STREAM, FORMAT,
      ("Invalid audio samples: %" G_GUINT64_FORMAT " not finite (set to 0) and %"
          G_GUINT64_FORMAT " beyond full scale (clamped to +-1) so far, the latest in the "
          "buffer at %" GST_TIME_FORMAT, non_finite, clipped, GST_TIME_ARGS (ts)),
      ("F32 input must be finite and within [-1, 1]; a single bad sample would otherwise "
          "ruin the transcription of its whole window"),
      ("reason", G_TYPE_STRING, "invalid-samples", "timestamp", G_TYPE_UINT64, ts,
          "non-finite", G_TYPE_UINT64, non_finite, "clipped", G_TYPE_UINT64, clipped, NULL));
}

/* `fill` zero samples before the samples of `pcm` from `skip` on. */
static GArray *
fill_and_skip (GArray *pcm, gsize fill, gsize skip)
{
  gsize keep = pcm->len - MIN (skip, pcm->len);
  GArray *out;

  if (fill == 0) {
    g_array_remove_range (pcm, 0, pcm->len - keep);
    return pcm;
  }
  out = g_array_sized_new (FALSE, TRUE, sizeof (float), fill + keep);
  g_array_set_size (out, fill);
  g_array_append_vals (out, (const float *) pcm->data + (pcm->len - keep), keep);
  g_array_unref (pcm);
  return out;
}

static GstFlowReturn
gst_whisper_sink_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);
  GstWhisperAlignResult placed;
  GstClockTime pts;
  GArray *pcm;
  guint n;
  gint channel;
  guint max_gap_ms;
  GstFlowReturn ret = GST_FLOW_OK;

  (void) pad;
  if (!self->have_info) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL), ("audio before caps"));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (self->need_latency_query) {
    self->need_latency_query = FALSE;
    query_upstream_latency (self);
  }

  GST_OBJECT_LOCK (self);
  channel = self->channel;
  max_gap_ms = self->max_gap_ms;
  GST_OBJECT_UNLOCK (self);
  if (channel >= GST_AUDIO_INFO_CHANNELS (&self->info)
      && GST_AUDIO_INFO_CHANNELS (&self->info) > 1) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("channel=%d, but the stream has %d channels",
            channel, GST_AUDIO_INFO_CHANNELS (&self->info)), (NULL));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  pcm = buffer_to_float (self, buffer, channel);
  if (pcm == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, (NULL), ("cannot map buffer"));
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }

  pts = GST_BUFFER_PTS (buffer);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    pts = gst_whisper_align_next_pts (&self->align);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    pts = self->sink_segment.start;
  gst_buffer_unref (buffer);

  /* Audio that ends past the largest valid timestamp cannot be timed: its
   * text's PTS + DURATION would wrap around. Dropped (found by
   * tests/fuzz/element-fuzz.c with timestamps near G_MAXUINT64); the next
   * buffer starts a new run, as the dropped one may have. */
  if (GST_CLOCK_TIME_IS_VALID (pts)
      && samples_to_time (pcm->len) > GST_CLOCK_TIME_NONE - 1 - pts) {
    GST_WARNING_OBJECT (self, "dropping %u samples at %" G_GUINT64_FORMAT
        " ns: they end past the largest timestamp", pcm->len, pts);
    gst_whisper_align_mark_discont (&self->align);
    g_array_unref (pcm);
    return GST_FLOW_OK;
  }

  n = pcm->len;
  gst_whisper_align_process (&self->align, pts, n, (GstClockTime) max_gap_ms * GST_MSECOND,
      &placed);
  if (placed.fill > 0 || placed.skip > 0) {
    GST_DEBUG_OBJECT (self, "buffer at %" GST_TIME_FORMAT ": %" G_GSIZE_FORMAT
        " samples of silence before it, %" G_GSIZE_FORMAT " overlapping samples dropped",
        GST_TIME_ARGS (pts), placed.fill, placed.skip);
    pcm = fill_and_skip (pcm, placed.fill, placed.skip);
    GST_OBJECT_LOCK (self);
    self->audio_filled += placed.fill;
    self->gaps_filled += placed.fill > 0;
    self->audio_overlap += placed.skip;
    GST_OBJECT_UNLOCK (self);
  }

  sanitize_samples (self, pcm, placed.pts);
  if (pcm->len == 0 && !placed.resync) {
    /* All of it was received already. */
    g_array_unref (pcm);
  } else {
    ret = gst_whisper_queue_push_audio (&self->queue, pcm, placed.resync, placed.pts);
    if (ret != GST_FLOW_OK) {
      GST_DEBUG_OBJECT (self, "refusing buffer: %s", gst_flow_get_name (ret));
      return ret;
    }
  }
  GST_OBJECT_LOCK (self);
  self->audio_received += n;
  GST_OBJECT_UNLOCK (self);
  return GST_FLOW_OK;
}

static gboolean
handle_caps (GstWhisperSink *self, GstCaps *caps)
{
  GstAudioInfo info;

  if (!gst_audio_info_from_caps (&info, caps)
      || GST_AUDIO_INFO_RATE (&info) != WHISPER_SAMPLE_RATE
      || GST_AUDIO_INFO_CHANNELS (&info) < 1
      || (GST_AUDIO_INFO_FORMAT (&info) != GST_AUDIO_FORMAT_F32LE
          && GST_AUDIO_INFO_FORMAT (&info) != GST_AUDIO_FORMAT_S16LE)) {
    GST_WARNING_OBJECT (self, "unsupported caps %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  self->info = info;
  self->have_info = TRUE;
  return TRUE;
}

/* One sticky event of the sink pad onto the src pad (see
 * restore_sticky_events ()). */
static gboolean
restore_sticky_event (GstPad *pad, GstEvent **event, gpointer user_data)
{
  GstWhisperSink *self = user_data;
  GstEvent *ev = *event;

  (void) pad;
  switch (GST_EVENT_TYPE (ev)) {
    case GST_EVENT_SEGMENT:
    case GST_EVENT_EOS:
      break;                    /* upstream sends a new SEGMENT after a flush */
    case GST_EVENT_CAPS:{
      if (!gst_pad_has_current_caps (self->srcpad)) {
        GstCaps *caps = gst_pad_get_pad_template_caps (self->srcpad);
        GstEvent *text_caps = gst_event_new_caps (caps);
        gst_pad_store_sticky_event (self->srcpad, text_caps);
        gst_event_unref (text_caps);
        gst_caps_unref (caps);
      }
      break;
    }
    default:
      /* Replaces an older one of its type (the sink pad's is the latest);
       * the same event again changes nothing. */
      gst_pad_store_sticky_event (self->srcpad, ev);
      break;
  }
  return TRUE;
}

/* A flush drops the queued events that had not gone out yet, among them
 * sticky ones upstream sends only once (STREAM_START, CAPS, TAG): the sink
 * pad's are stored on the src pad (CAPS as the text caps, when it has
 * none), so they go out before the next output, as GStreamer's queue
 * element keeps them (gst_queue_locked_flush () in
 * plugins/elements/gstqueue.c). Found by tests/fuzz/element-fuzz.c: text
 * after a flush came without STREAM_START. */
static void
restore_sticky_events (GstWhisperSink *self)
{
  gst_pad_sticky_events_foreach (self->sinkpad, restore_sticky_event, self);
}

static gboolean
gst_whisper_sink_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      /* Never blocks: cancel the engine, wake everyone, let the task pause itself. */
      set_flushing (self);
      gst_whisper_translate_flush_start (self, event);
      return gst_pad_push_event (self->srcpad, event);

    case GST_EVENT_FLUSH_STOP:{
      gboolean ret;

      /* Serialized: upstream holds the stream lock; wait for both tasks to
       * stop (flushing again in case no FLUSH_START came first). */
      set_flushing (self);
      gst_whisper_sink_task_pause (self);
      gst_pad_pause_task (self->srcpad);
      gst_whisper_sink_task_reset (self);
      gst_whisper_src_reset (&self->src);
      reset_sink_side (self);
      gst_whisper_translate_flush_stop (self, event);
      ret = gst_pad_push_event (self->srcpad, event);
      restore_sticky_events (self);
      unset_flushing (self);
      /* Both tasks are paused: nothing else uses the stream. */
      GST_OBJECT_LOCK (self);
      if (self->stream)
        whisper_stream_reset (self->stream);
      if (self->remote)
        gst_whisper_remote_reset (self->remote);
      GST_OBJECT_UNLOCK (self);
      start_tasks (self);
      return ret;
    }

    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      if (!handle_caps (self, caps)) {
        gst_event_unref (event);
        return FALSE;
      }
      return gst_whisper_queue_push_event (&self->queue, event);
    }

    case GST_EVENT_SEGMENT:{
      const GstSegment *segment;
      gst_event_parse_segment (event, &segment);
      if (segment->format != GST_FORMAT_TIME) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
            ("only TIME segments are supported, got %s",
                gst_format_get_name (segment->format)));
        gst_event_unref (event);
        return FALSE;
      }
      if (segment->rate < 0.0) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("Reverse playback is not supported (segment rate %g)", segment->rate),
            ("speech is transcribed forwards only"));
        gst_event_unref (event);
        return FALSE;
      }
      self->sink_segment = *segment;
      gst_whisper_align_mark_discont (&self->align);
      return gst_whisper_queue_push_event (&self->queue, event);
    }

    case GST_EVENT_GAP:
      gst_whisper_align_mark_discont (&self->align);
      return gst_whisper_queue_push_event (&self->queue, event);

    case GST_EVENT_STREAM_START:
      self->need_latency_query = TRUE;
      return gst_whisper_queue_push_event (&self->queue, event);

    default:
      if (GST_EVENT_IS_SERIALIZED (event))
        return gst_whisper_queue_push_event (&self->queue, event);
      return gst_pad_event_default (pad, parent, event);
  }
}

static gboolean
gst_whisper_sink_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_ALLOCATION:
      return FALSE;             /* audio in, text out: nothing to share */
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* Src pad */

static gboolean
gst_whisper_sink_src_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_LATENCY:
      return gst_whisper_sink_answer_latency (self, query, 0);
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

