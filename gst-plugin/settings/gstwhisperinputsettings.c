/* gstwhisperinputsettings.c: whispersink's input settings (see
 * gstwhisperinputsettings.h). */
#include "settings/gstwhisperinputsettings.h"

enum {
  P_CHANNEL,
  P_MAX_GAP,
  P_OFFLINE_MODE,
  P_BATCH_SIZE,
  N_PROPS
};

#define DEFAULT_MAX_GAP_MS 1000
#define MAX_MAX_GAP_MS 60000
#define DEFAULT_OFFLINE_MODE GST_WHISPER_OFFLINE_EXACT
#define DEFAULT_BATCH_SIZE 8

void
gst_whisper_input_settings_init (GstWhisperInputSettings *s)
{
  s->channel = -1;
  s->max_gap_ms = DEFAULT_MAX_GAP_MS;
  s->offline_mode = DEFAULT_OFFLINE_MODE;
  s->batch_size = DEFAULT_BATCH_SIZE;
}

guint
gst_whisper_input_settings_install (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

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
  g_object_class_install_property (klass, first + P_CHANNEL,
      g_param_spec_int ("channel", "Channel",
          "Channel to transcribe in a multi-channel stream (0 = first/left; -1 = the mean "
          "of all channels)", -1, 63, -1, rw | GST_PARAM_MUTABLE_PLAYING));
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
  g_object_class_install_property (klass, first + P_MAX_GAP,
      g_param_spec_uint ("max-gap", "Max gap",
          "Holes in the input timestamps up to this many ms are filled with silence "
          "instead of ending the run; overlaps up to it are dropped (0 = never)",
          0, MAX_MAX_GAP_MS, DEFAULT_MAX_GAP_MS, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (klass, first + P_OFFLINE_MODE,
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
   * (docs/benchmarks.md, "Long files in batches"). Each piece's segments go downstream once it and
   * the pieces before it are done; output=words takes its words from the
   * segments' word timestamps (turned on in this mode). The memory is one
   * decoder state per piece decoded at once.
   */
  g_object_class_install_property (klass, first + P_BATCH_SIZE,
      g_param_spec_int ("batch-size", "Batch size",
          "offline-mode=batched: pieces of the file decoded at once", 1, 64,
          DEFAULT_BATCH_SIZE, rw | GST_PARAM_MUTABLE_READY));
  return first + N_PROPS;
}

gboolean
gst_whisper_input_settings_set (GstWhisperInputSettings *s, guint prop_id, guint first, const GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_CHANNEL:
      s->channel = g_value_get_int (value);
      break;
    case P_MAX_GAP:
      s->max_gap_ms = g_value_get_uint (value);
      break;
    case P_OFFLINE_MODE:
      s->offline_mode = g_value_get_enum (value);
      break;
    case P_BATCH_SIZE:
      s->batch_size = g_value_get_int (value);
      break;
    default:
      break;
  }
  return TRUE;
}

gboolean
gst_whisper_input_settings_get (const GstWhisperInputSettings *s, guint prop_id, guint first, GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_CHANNEL:
      g_value_set_int (value, s->channel);
      break;
    case P_MAX_GAP:
      g_value_set_uint (value, s->max_gap_ms);
      break;
    case P_OFFLINE_MODE:
      g_value_set_enum (value, s->offline_mode);
      break;
    case P_BATCH_SIZE:
      g_value_set_int (value, s->batch_size);
      break;
    default:
      return FALSE;              /* read-only: the element answers */
  }
  return TRUE;
}

