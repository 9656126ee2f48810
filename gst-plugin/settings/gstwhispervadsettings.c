/* gstwhispervadsettings.c: whispersink's vad settings (see
 * gstwhispervadsettings.h). */
#include "settings/gstwhispervadsettings.h"

enum {
  P_VAD_GATE,
  P_VAD_MODEL,
  P_VAD_THRESHOLD,
  P_VAD_FILTER,
  P_VAD_NEG_THRESHOLD,
  P_VAD_MIN_SPEECH_MS,
  P_VAD_MAX_SPEECH_S,
  P_VAD_MIN_SILENCE_MS,
  P_VAD_SPEECH_PAD_MS,
  P_SILENCE_THRESHOLD,
  P_NO_SPEECH_THRESHOLD,
  P_STRICT_NO_SPEECH,
  N_PROPS
};

#include <math.h>
#include <string.h>

#define DEFAULT_VAD_MAX_SPEECH_S INFINITY
#define DEFAULT_NO_SPEECH_THRESHOLD 0.6

void
gst_whisper_vad_settings_init (GstWhisperVadSettings *s)
{
  memset (s, 0, sizeof *s);
  s->gate = TRUE;
  s->model = NULL;
  s->filter = FALSE;
  s->threshold = 0.5;
  s->neg_threshold = -1.0;
  s->min_speech_ms = 0;
  s->max_speech_s = DEFAULT_VAD_MAX_SPEECH_S;
  s->min_silence_ms = 2000;
  s->speech_pad_ms = 400;
  s->silence_threshold = WHISPER_DEFAULT_SILENCE_THRESHOLD_DB;
  s->no_speech_threshold = DEFAULT_NO_SPEECH_THRESHOLD;
  s->strict_no_speech = TRUE;
}

void
gst_whisper_vad_settings_clear (GstWhisperVadSettings *s)
{
  g_clear_pointer (&s->model, g_free);
}

void
gst_whisper_vad_settings_copy (GstWhisperVadSettings *dst, const GstWhisperVadSettings *src)
{
  *dst = *src;
  dst->model = g_strdup (src->model);
}

gchar *
gst_whisper_vad_settings_path (const GstWhisperVadSettings *s)
{
  return s->model ? g_strdup (s->model) : whisper_vad_default_path ();
}

/* vad-gate, vad-model, vad-threshold, vad-filter: the detector */
static void
install_detector (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  /**
   * GstWhisperSink:vad-gate:
   *
   * Whether a voice activity detector (Silero VAD v6, run on the CPU by the
   * engine, a small fraction of real time on one core) decides which
   * windows are worth decoding: a window (or, live, the audio of a call) in
   * which it finds no speech is skipped without running the model. Whisper
   * writes text into noise that no rule on its own output catches (tones
   * can be read as a short phrase with a high no-speech probability and a
   * confident decode). A window with any speech is decoded whole, so the
   * text of speech is the same with and without the gate. The detector's
   * weights come from vad-model; when the default file is not installed
   * (tools/fetch-model.sh silero-vad) the element posts a warning (reason
   * `vad-missing`) at the change to READY and goes on without the gate.
   * Counted in the stats property (`windows-no-voice`). Changes take effect
   * on the way to PAUSED, as the model's do.
   */
  g_object_class_install_property (klass, first + P_VAD_GATE,
      g_param_spec_boolean ("vad-gate", "Voice activity gate",
          "Skip windows in which the voice activity detector finds no speech", TRUE,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, first + P_VAD_MODEL,
      g_param_spec_string ("vad-model", "VAD model",
          "Silero VAD weights for vad-gate. Unset: the installed file "
          "($XDG_DATA_HOME/gst-whisper/models/silero-vad/silero_vad_v6.bin, made by "
          "tools/fetch-model.sh silero-vad); a file set here that cannot be loaded fails "
          "the change to READY", NULL, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, first + P_VAD_THRESHOLD,
      g_param_spec_double ("vad-threshold", "VAD threshold",
          "Speech probability from which the voice activity detector counts a 32-ms chunk "
          "as speech (faster-whisper's VadOptions.threshold)", 0.0, 1.0, 0.5,
          rw | GST_PARAM_MUTABLE_PLAYING));
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
  g_object_class_install_property (klass, first + P_VAD_FILTER,
      g_param_spec_boolean ("vad-filter", "VAD filter",
          "Transcribe only the speech the voice activity detector finds (faster-whisper's "
          "vad_filter): the rest gives GAP events and costs no model run", FALSE,
          rw | GST_PARAM_MUTABLE_READY));
}

/* the VadOptions, the silence gate and the no-speech rule */
static void
install_gates (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  /**
   * GstWhisperSink:vad-neg-threshold:
   *
   * VadOptions.neg_threshold: speech ends below this probability; negative
   * (the default) means max(vad-threshold - 0.15, 0.01), as its None.
   * Also used by vad-gate.
   */
  g_object_class_install_property (klass, first + P_VAD_NEG_THRESHOLD,
      g_param_spec_double ("vad-neg-threshold", "VAD negative threshold",
          "Speech probability below which speech ends; negative: vad-threshold - 0.15 "
          "(at least 0.01)", -1.0, 1.0, -1.0, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-min-speech-ms:
   *
   * VadOptions.min_speech_duration_ms: speech shorter than this is dropped.
   */
  g_object_class_install_property (klass, first + P_VAD_MIN_SPEECH_MS,
      g_param_spec_int ("vad-min-speech-ms", "VAD minimum speech",
          "Speech shorter than this (ms) is dropped", 0, G_MAXINT / 16, 0,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-max-speech-s:
   *
   * VadOptions.max_speech_duration_s: longer speech is split (at a pause of
   * more than 98 ms where there is one); the default is no limit.
   */
  g_object_class_install_property (klass, first + P_VAD_MAX_SPEECH_S,
      g_param_spec_double ("vad-max-speech-s", "VAD maximum speech",
          "Speech longer than this (s) is split; inf: no limit", 0.1, INFINITY,
          DEFAULT_VAD_MAX_SPEECH_S, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-min-silence-ms:
   *
   * VadOptions.min_silence_duration_ms: the silence that ends speech.
   */
  g_object_class_install_property (klass, first + P_VAD_MIN_SILENCE_MS,
      g_param_spec_int ("vad-min-silence-ms", "VAD minimum silence",
          "Silence (ms) that ends speech", 0, G_MAXINT / 16, 2000,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:vad-speech-pad-ms:
   *
   * VadOptions.speech_pad_ms: audio kept on each side of speech.
   */
  g_object_class_install_property (klass, first + P_VAD_SPEECH_PAD_MS,
      g_param_spec_int ("vad-speech-pad-ms", "VAD speech padding",
          "Audio (ms) kept on each side of speech", 0, G_MAXINT / 16, 400,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:silence-threshold:
   *
   * Audio this quiet is not transcribed: a window (or, live, the audio of a
   * call) whose loudest 20-ms frame is below this level, in dB relative to
   * full scale, is skipped without running the model. Whisper writes text
   * into silence and faint noise (conditioned on earlier text, it repeats
   * short words or punctuation there), and the reference's no-speech rule
   * keeps that text. The default, -60 dBFS, is far below speech at any
   * usable recording level and above 16-bit dither and a muted
   * microphone. -150 decodes every window. Counted in the stats property
   * (`windows-silent`).
   */
  g_object_class_install_property (klass, first + P_SILENCE_THRESHOLD,
      g_param_spec_double ("silence-threshold", "Silence threshold",
          "Audio whose loudest 20-ms frame is below this level (dBFS) is not transcribed; "
          "-150 transcribes everything", WHISPER_SILENCE_THRESHOLD_OFF_DB, 0.0,
          WHISPER_DEFAULT_SILENCE_THRESHOLD_DB, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (klass, first + P_NO_SPEECH_THRESHOLD,
      g_param_spec_double ("no-speech-threshold", "No-speech threshold",
          "A window whose no-speech probability exceeds this (and whose average log "
          "probability is below -1) is treated as silence; negative disables the check",
          -1.0, 1.0, DEFAULT_NO_SPEECH_THRESHOLD, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstWhisperSink:strict-no-speech:
   *
   * The reference's no-speech rule (faster-whisper, openai-whisper) drops
   * a window when the model's no-speech probability is above
   * no-speech-threshold and its decode was not confident (average log
   * probability at most -1). Noise passes it with confident nonsense (a
   * sentence repeated through a window of white noise, or punctuation
   * alone for tones, both at a high no-speech probability). With this on (the default) such a window is also dropped
   * when its text is a loop (zlib compression ratio above 2.4, the
   * reference's test for a failed decode) or holds no letter or digit. Off
   * gives the reference's greedy results exactly. Counted in the stats
   * property (`windows-no-speech`, with the reference's own drops).
   */
  g_object_class_install_property (klass, first + P_STRICT_NO_SPEECH,
      g_param_spec_boolean ("strict-no-speech", "Strict no-speech rule",
          "Also drop a window the model finds likely silent when its text is a loop or "
          "has no letter or digit; off: the reference's rule only", TRUE,
          rw | GST_PARAM_MUTABLE_PLAYING));
}

guint
gst_whisper_vad_settings_install (GObjectClass *klass, guint first)
{
  install_detector (klass, first);
  install_gates (klass, first);
  return first + N_PROPS;
}

gboolean
gst_whisper_vad_settings_loads_engine (guint prop_id, guint first)
{
  return prop_id == first + P_VAD_GATE || prop_id == first + P_VAD_MODEL
      || prop_id == first + P_VAD_FILTER;
}

gboolean
gst_whisper_vad_settings_set (GstWhisperVadSettings *s, guint prop_id, guint first, const GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_VAD_GATE:
      s->gate = g_value_get_boolean (value);
      break;
    case P_VAD_MODEL:
      g_free (s->model);
      s->model = g_value_dup_string (value);
      break;
    case P_VAD_THRESHOLD:
      s->threshold = g_value_get_double (value);
      break;
    case P_VAD_FILTER:
      s->filter = g_value_get_boolean (value);
      break;
    case P_VAD_NEG_THRESHOLD:
      s->neg_threshold = g_value_get_double (value);
      break;
    case P_VAD_MIN_SPEECH_MS:
      s->min_speech_ms = g_value_get_int (value);
      break;
    case P_VAD_MAX_SPEECH_S:
      s->max_speech_s = g_value_get_double (value);
      break;
    case P_VAD_MIN_SILENCE_MS:
      s->min_silence_ms = g_value_get_int (value);
      break;
    case P_VAD_SPEECH_PAD_MS:
      s->speech_pad_ms = g_value_get_int (value);
      break;
    case P_SILENCE_THRESHOLD:
      s->silence_threshold = g_value_get_double (value);
      break;
    case P_NO_SPEECH_THRESHOLD:
      s->no_speech_threshold = g_value_get_double (value);
      break;
    case P_STRICT_NO_SPEECH:
      s->strict_no_speech = g_value_get_boolean (value);
      break;
    default:
      break;
  }
  return TRUE;
}

gboolean
gst_whisper_vad_settings_get (const GstWhisperVadSettings *s, guint prop_id, guint first, GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_VAD_GATE:
      g_value_set_boolean (value, s->gate);
      break;
    case P_VAD_MODEL:
      g_value_set_string (value, s->model);
      break;
    case P_VAD_THRESHOLD:
      g_value_set_double (value, s->threshold);
      break;
    case P_VAD_FILTER:
      g_value_set_boolean (value, s->filter);
      break;
    case P_VAD_NEG_THRESHOLD:
      g_value_set_double (value, s->neg_threshold);
      break;
    case P_VAD_MIN_SPEECH_MS:
      g_value_set_int (value, s->min_speech_ms);
      break;
    case P_VAD_MAX_SPEECH_S:
      g_value_set_double (value, s->max_speech_s);
      break;
    case P_VAD_MIN_SILENCE_MS:
      g_value_set_int (value, s->min_silence_ms);
      break;
    case P_VAD_SPEECH_PAD_MS:
      g_value_set_int (value, s->speech_pad_ms);
      break;
    case P_SILENCE_THRESHOLD:
      g_value_set_double (value, s->silence_threshold);
      break;
    case P_NO_SPEECH_THRESHOLD:
      g_value_set_double (value, s->no_speech_threshold);
      break;
    case P_STRICT_NO_SPEECH:
      g_value_set_boolean (value, s->strict_no_speech);
      break;
    default:
      return FALSE;              /* read-only: the element answers */
  }
  return TRUE;
}

void
gst_whisper_vad_settings_fill_vad (const GstWhisperVadSettings *s, WhisperVadOptions *vo)
{
  whisper_vad_options_init (vo);
  vo->threshold = s->threshold;
  vo->neg_threshold = s->neg_threshold;
  vo->min_speech_duration_ms = s->min_speech_ms;
  vo->max_speech_duration_s = s->max_speech_s;
  vo->min_silence_duration_ms = s->min_silence_ms;
  vo->speech_pad_ms = s->speech_pad_ms;
}

void
gst_whisper_vad_settings_fill (const GstWhisperVadSettings *s, WhisperVad *vad,
    WhisperDecodeOptions *o)
{
  o->no_speech_threshold = s->no_speech_threshold;
  o->silence_threshold_db = s->silence_threshold;
  o->strict_no_speech = s->strict_no_speech;
  o->vad = s->gate ? vad : NULL;
  gst_whisper_vad_settings_fill_vad (s, &o->vad_options);
  /* vad-filter: the engine transcribes the speech only */
  if (s->filter && vad) {
    o->vad = vad;
    o->vad_filter = TRUE;
  }
}
