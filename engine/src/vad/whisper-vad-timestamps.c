/* whisper-vad-timestamps.c: speech regions from the VAD's probabilities,
 * step for step as get_speech_timestamps in faster-whisper 1.2.1's
 * faster_whisper/vad.py
 * (https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/vad.py),
 * with its VadOptions defaults.
 *
 * Numbers are kept in the types Python gives them there: sample positions
 * are integers, the limits derived from milliseconds and seconds are
 * floating point (16000 * ms / 1000 is a float in Python 3), and a
 * probability is compared with a threshold in float32 (NumPy >= 2 turns the
 * Python float into the float32 of the probability, NEP 50). */
#include "whisper-vad-private.h"

#include <math.h>

void
whisper_vad_options_init (WhisperVadOptions *options)
{
  g_return_if_fail (options != NULL);
  options->threshold = 0.5;
  options->neg_threshold = -1.0;
  options->min_speech_duration_ms = 0;
  options->max_speech_duration_s = INFINITY;
  options->min_silence_duration_ms = 2000;
  options->speech_pad_ms = 400;
}

/* FALSE with WHISPER_VAD_ERROR_SETTING naming the first invalid field. */
static gboolean
check_options (const WhisperVadOptions *o, GError **error)
{
  const char *field = NULL, *why = NULL;
  if (!(o->threshold >= 0.0 && o->threshold <= 1.0))
    field = "threshold", why = "must be in [0, 1]";
  else if (isnan (o->neg_threshold) || o->neg_threshold > 1.0)
    field = "neg_threshold", why = "must be at most 1 (negative: derived from threshold)";
  else if (o->min_speech_duration_ms < 0)
    field = "min_speech_duration_ms", why = "must not be negative";
  else if (!(o->max_speech_duration_s > 0.0))
    field = "max_speech_duration_s", why = "must be positive (INFINITY: no limit)";
  else if (o->min_silence_duration_ms < 0)
    field = "min_silence_duration_ms", why = "must not be negative";
  else if (o->speech_pad_ms < 0)
    field = "speech_pad_ms", why = "must not be negative";
  if (field == NULL)
    return TRUE;
  g_set_error (error, WHISPER_VAD_ERROR, WHISPER_VAD_ERROR_SETTING,
               "VAD option %s %s", field, why);
  return FALSE;
}

/* A region under construction: get_speech_timestamps' current_speech dict,
 * empty or holding "start" (and "end" only once it is appended). */
typedef struct {
  gboolean has_start;
  gint64 start;
} Current;

static void
append (GArray *out, gint64 start, gint64 end)
{
  WhisperVadSpeech s = { start, end };
  g_array_append_val (out, s);
}

gboolean
whisper_vad_speech_from_probabilities (const float *probs, gsize n_probs, gsize n_samples,
                                       const WhisperVadOptions *options, GArray *out,
                                       GError **error)
{
  g_return_val_if_fail (probs != NULL || n_probs == 0, FALSE);
  g_return_val_if_fail (out != NULL && g_array_get_element_size (out) == sizeof (WhisperVadSpeech),
                        FALSE);
  WhisperVadOptions defaults;
  if (options == NULL) {
    whisper_vad_options_init (&defaults);
    options = &defaults;
  }
  if (!check_options (options, error))
    return FALSE;
  g_array_set_size (out, 0);

  const double rate = WHISPER_VAD_SAMPLE_RATE;
  const gint64 window = WHISPER_VAD_CHUNK_SAMPLES;
  const double min_speech_samples = rate * options->min_speech_duration_ms / 1000;
  const double speech_pad_samples = rate * options->speech_pad_ms / 1000;
  const double max_speech_samples =
    rate * options->max_speech_duration_s - window - 2 * speech_pad_samples;
  const double min_silence_samples = rate * options->min_silence_duration_ms / 1000;
  const double min_silence_samples_at_max_speech = rate * 98 / 1000;
  const gint64 audio_length_samples = (gint64) n_samples;

  double neg = options->neg_threshold;
  if (neg < 0.0)
    neg = MAX (options->threshold - 0.15, 0.01);
  const float threshold = (float) options->threshold, neg_threshold = (float) neg;

  gboolean triggered = FALSE;
  Current current = { FALSE, 0 };
  gint64 temp_end = 0, prev_end = 0, next_start = 0;

  for (gsize idx = 0; idx < n_probs; idx++) {
    const float p = probs[idx];
    const gint64 pos = window * (gint64) idx;

    if (p >= threshold && temp_end) {
      temp_end = 0;
      if (next_start < prev_end)
        next_start = pos;
    }

    if (p >= threshold && !triggered) {
      triggered = TRUE;
      current.has_start = TRUE;
      current.start = pos;
      continue;
    }

    if (triggered && (double) (pos - current.start) > max_speech_samples) {
      if (prev_end) {
        append (out, current.start, prev_end);
        current.has_start = FALSE;
        /* previously reached silence (< neg_threshold) and is still not
         * speech (< threshold) */
        if (next_start < prev_end) {
          triggered = FALSE;
        } else {
          current.has_start = TRUE;
          current.start = next_start;
        }
        prev_end = next_start = temp_end = 0;
      } else {
        append (out, current.start, pos);
        current.has_start = FALSE;
        prev_end = next_start = temp_end = 0;
        triggered = FALSE;
        continue;
      }
    }

    if (p < neg_threshold && triggered) {
      if (!temp_end)
        temp_end = pos;
      /* condition to avoid cutting in very short silence */
      if ((double) (pos - temp_end) > min_silence_samples_at_max_speech)
        prev_end = temp_end;
      if ((double) (pos - temp_end) < min_silence_samples)
        continue;
      if ((double) (temp_end - current.start) > min_speech_samples)
        append (out, current.start, temp_end);
      current.has_start = FALSE;
      prev_end = next_start = temp_end = 0;
      triggered = FALSE;
      continue;
    }
  }

  if (current.has_start && (double) (audio_length_samples - current.start) > min_speech_samples)
    append (out, current.start, audio_length_samples);

  /* the padding, in place and in order as the Python loop does it (region
   * i + 1's start is moved before region i + 1 is looked at) */
  WhisperVadSpeech *s = (WhisperVadSpeech *) out->data;
  const gsize n = out->len;
  for (gsize i = 0; i < n; i++) {
    if (i == 0)
      s[i].start_sample = (gint64) MAX (0.0, (double) s[i].start_sample - speech_pad_samples);
    if (i != n - 1) {
      const gint64 silence_duration = s[i + 1].start_sample - s[i].end_sample;
      if ((double) silence_duration < 2 * speech_pad_samples) {
        /* Python's // floors; the silence is never negative here */
        const gint64 half = silence_duration >= 0 ? silence_duration / 2
                                                  : -((-silence_duration + 1) / 2);
        s[i].end_sample += half;
        s[i + 1].start_sample = MAX ((gint64) 0, s[i + 1].start_sample - half);
      } else {
        s[i].end_sample = (gint64) MIN ((double) audio_length_samples,
                                        (double) s[i].end_sample + speech_pad_samples);
        s[i + 1].start_sample = (gint64) MAX (0.0, (double) s[i + 1].start_sample
                                                   - speech_pad_samples);
      }
    } else {
      s[i].end_sample = (gint64) MIN ((double) audio_length_samples,
                                      (double) s[i].end_sample + speech_pad_samples);
    }
  }
  return TRUE;
}

gboolean
whisper_vad_speech_timestamps (const WhisperVad *vad, const float *pcm, gsize n,
                               const WhisperVadOptions *options, GArray *out, GError **error)
{
  g_return_val_if_fail (vad != NULL, FALSE);
  g_autoptr (GArray) probs = g_array_new (FALSE, FALSE, sizeof (float));
  whisper_vad_probabilities (vad, pcm, n, probs);
  return whisper_vad_speech_from_probabilities ((const float *) probs->data, probs->len, n,
                                                options, out, error);
}
