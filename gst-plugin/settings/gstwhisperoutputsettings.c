/* gstwhisperoutputsettings.c: whispersink's output settings (see
 * gstwhisperoutputsettings.h). */
#include "settings/gstwhisperoutputsettings.h"

enum {
  P_OUTPUT,
  P_WORD_TIMESTAMPS,
  P_MAX_OBSERVED_DELAY,
  P_STATS,
  N_PROPS
};

#define DEFAULT_OUTPUT GST_WHISPER_OUTPUT_SEGMENTS

void
gst_whisper_output_settings_init (GstWhisperOutputSettings *s)
{
  s->output = DEFAULT_OUTPUT;
  s->word_timestamps = FALSE;
}

guint
gst_whisper_output_settings_install (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  g_object_class_install_property (klass, first + P_OUTPUT,
      g_param_spec_enum ("output", "Output", "Granularity of the text buffers",
          GST_TYPE_WHISPER_OUTPUT_MODE, DEFAULT_OUTPUT, rw | GST_PARAM_MUTABLE_PLAYING));
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
   * (0.16 s before the frame the heads attend to most; a fraction of a
   * second from the final DTW start). A beam search (beam-size above 1, the default for files) gives
   * its tokens only once the search ends, without that attention: its word
   * buffers go out with their segment, timed by the segment's DTW words.
   * Costs one extra decoder pass per window.
   */
  g_object_class_install_property (klass, first + P_WORD_TIMESTAMPS,
      g_param_spec_boolean ("word-timestamps", "Word timestamps",
          "Time every word by the alignment heads' attention (faster-whisper's "
          "word_timestamps): words in the segment messages, word buffers timed by it",
          FALSE, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (klass, first + P_MAX_OBSERVED_DELAY,
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
   * `encoder-passes` (guint64): encoder windows run, the translate_src
   * pads' included; `encoder-shared` (guint64): windows of the
   * translate_src pads that took the transcript's encoder output instead
   * of a pass of their own (one pass per live call with any number of
   * pads).
   * `engine-users` (guint) is how many elements share this element's
   * engine now (engine-group; 0 before READY and with device=remote); it
   * is not reset. `vad-users` (guint): elements sharing this element's
   * voice activity detector (one copy of the weights per file in the
   * process, whatever the engine group; 0 when it has none loaded).
   */
  g_object_class_install_property (klass, first + P_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters since READY->PAUSED: audio-received, audio-transcribed and "
          "audio-dropped (ns), text-dropped and output-queued (items), "
          "samples-non-finite and samples-clipped (F32 samples fixed), windows-silent, "
          "windows-no-voice and windows-no-speech (engine windows skipped), audio-filled, "
          "gaps-filled and audio-overlap (max-gap), encoder-passes and encoder-shared "
          "(encoder windows run, and taken from the transcript by translations), engine-users (elements sharing the engine), "
          "vad-users (elements sharing the voice activity detector)",
          GST_TYPE_STRUCTURE, ro));
  return first + N_PROPS;
}

gboolean
gst_whisper_output_settings_set (GstWhisperOutputSettings *s, guint prop_id, guint first, const GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_OUTPUT:
      s->output = g_value_get_enum (value);
      break;
    case P_WORD_TIMESTAMPS:
      s->word_timestamps = g_value_get_boolean (value);
      break;
    default:
      break;
  }
  return TRUE;
}

gboolean
gst_whisper_output_settings_get (const GstWhisperOutputSettings *s, guint prop_id, guint first, GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_OUTPUT:
      g_value_set_enum (value, s->output);
      break;
    case P_WORD_TIMESTAMPS:
      g_value_set_boolean (value, s->word_timestamps);
      break;
    default:
      return FALSE;              /* read-only: the element answers */
  }
  return TRUE;
}

void
gst_whisper_output_settings_fill (const GstWhisperOutputSettings *s, WhisperDecodeOptions *o)
{
  o->word_timestamps = s->word_timestamps;
}
