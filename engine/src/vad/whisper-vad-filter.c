/* whisper-vad-filter.c: faster-whisper's vad_filter: collect_chunks(),
 * SpeechTimestampsMap and restore_speech_timestamps() of faster-whisper
 * 1.2.1 (faster_whisper/vad.py and faster_whisper/transcribe.py,
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/vad.py,
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py),
 * step for step. See whisper-vad-filter.h. */
#include "whisper-vad-filter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct _WhisperVadFilter {
  GArray *speech;            /* WhisperVadSpeech */
  float *pcm;                /* the concatenation */
  gsize n_pcm;
  /* SpeechTimestampsMap */
  gint64 *chunk_end_sample;  /* [speech->len]: end of each region in the concatenation */
  double *total_silence_before;  /* [speech->len]: seconds removed before each region */
};

double
whisper_vad_filter_round2 (double x)
{
  /* glibc's printf rounds the exact binary value correctly (ties to even),
   * as Python's round() does through its own correctly rounded dtoa; the
   * g_ascii_ pair keeps the locale's decimal separator out. */
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isfinite (x))
    return x;
  g_ascii_formatd (buf, sizeof buf, "%.2f", x);
  return g_ascii_strtod (buf, NULL);
}

static WhisperVadFilter *
filter_build (const float *pcm, gsize n, GArray *speech)
{
  WhisperVadFilter *f = g_new0 (WhisperVadFilter, 1);
  f->speech = speech;
  const guint n_chunks = speech->len;
  f->chunk_end_sample = g_new0 (gint64, MAX (n_chunks, 1));
  f->total_silence_before = g_new0 (double, MAX (n_chunks, 1));

  /* collect_chunks(): audio[start:end] of every region, in order (Python's
   * slice clamps to the buffer) */
  gsize total = 0;
  for (guint i = 0; i < n_chunks; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    const gint64 a = CLAMP (r->start_sample, 0, (gint64) n), b = CLAMP (r->end_sample, 0, (gint64) n);
    if (b > a)
      total += (gsize) (b - a);
  }
  f->pcm = total > 0 ? g_new (float, total) : NULL;
  for (guint i = 0; i < n_chunks; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    const gint64 a = CLAMP (r->start_sample, 0, (gint64) n), b = CLAMP (r->end_sample, 0, (gint64) n);
    if (b > a) {
      memcpy (f->pcm + f->n_pcm, pcm + a, (gsize) (b - a) * sizeof (float));
      f->n_pcm += (gsize) (b - a);
    }
  }

  /* SpeechTimestampsMap.__init__ */
  gint64 previous_end = 0, silent_samples = 0;
  for (guint i = 0; i < n_chunks; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    silent_samples += r->start_sample - previous_end;
    previous_end = r->end_sample;
    f->chunk_end_sample[i] = r->end_sample - silent_samples;
    f->total_silence_before[i] = (double) silent_samples / WHISPER_VAD_SAMPLE_RATE;
  }
  return f;
}

WhisperVadFilter *
whisper_vad_filter_new (const WhisperVad *vad, const WhisperVadOptions *options, const float *pcm,
                        gsize n, GError **error)
{
  g_return_val_if_fail (vad != NULL, NULL);
  GArray *speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  if (!whisper_vad_speech_timestamps (vad, pcm, n, options, speech, error)) {
    g_array_unref (speech);
    return NULL;
  }
  return filter_build (pcm, n, speech);
}

WhisperVadFilter *
whisper_vad_filter_new_from_speech (const float *pcm, gsize n, const GArray *speech)
{
  g_return_val_if_fail (speech != NULL, NULL);
  GArray *copy = g_array_sized_new (FALSE, FALSE, sizeof (WhisperVadSpeech), speech->len);
  g_array_append_vals (copy, speech->data, speech->len);
  return filter_build (pcm, n, copy);
}

void
whisper_vad_filter_free (WhisperVadFilter *f)
{
  if (!f)
    return;
  g_array_unref (f->speech);
  g_free (f->pcm);
  g_free (f->chunk_end_sample);
  g_free (f->total_silence_before);
  g_free (f);
}

const GArray *
whisper_vad_filter_speech (const WhisperVadFilter *f)
{
  return f->speech;
}

const float *
whisper_vad_filter_pcm (const WhisperVadFilter *f, gsize *n_samples)
{
  *n_samples = f->n_pcm;
  return f->pcm;
}

int
whisper_vad_filter_chunk_index (const WhisperVadFilter *f, double time, gboolean is_end)
{
  const int n = (int) f->speech->len;
  if (n == 0)
    return -1;
  /* int(time * sampling_rate): truncation toward zero */
  const gint64 sample = (gint64) (time * WHISPER_VAD_SAMPLE_RATE);
  if (is_end)
    for (int i = 0; i < n; i++)
      if (f->chunk_end_sample[i] == sample)
        return i;  /* list.index(): the first equal one */
  /* bisect.bisect (bisect_right): the first end greater than sample */
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (sample < f->chunk_end_sample[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  return MIN (lo, n - 1);
}

double
whisper_vad_filter_original_time (const WhisperVadFilter *f, double time, int chunk_index,
                                  gboolean is_end)
{
  if (f->speech->len == 0)
    return time;
  if (chunk_index < 0 || chunk_index >= (int) f->speech->len)
    chunk_index = whisper_vad_filter_chunk_index (f, time, is_end);
  return whisper_vad_filter_round2 (f->total_silence_before[chunk_index] + time);
}

/* faster-whisper's restore_speech_timestamps(): a segment with words takes
 * its start and end from its first and last word, each word mapped by the
 * chunk of its midpoint; without words its own times are mapped. */
void
whisper_vad_filter_restore_segment (const WhisperVadFilter *f, WhisperSegment *segment)
{
  if (segment->words && segment->n_words > 0) {
    for (gsize i = 0; i < segment->n_words; i++)
      whisper_vad_filter_restore_word (f, &segment->words[i].start, &segment->words[i].end);
    segment->start = segment->words[0].start;
    segment->end = segment->words[segment->n_words - 1].end;
    return;
  }
  segment->start = whisper_vad_filter_original_time (f, segment->start, -1, FALSE);
  segment->end = whisper_vad_filter_original_time (f, segment->end, -1, TRUE);
}

void
whisper_vad_filter_restore_word (const WhisperVadFilter *f, double *start, double *end)
{
  /* "Ensure the word start and end times are resolved to the same chunk." */
  const double middle = (*start + *end) / 2;
  const int chunk = whisper_vad_filter_chunk_index (f, middle, FALSE);
  *start = whisper_vad_filter_original_time (f, *start, chunk, FALSE);
  *end = whisper_vad_filter_original_time (f, *end, chunk, FALSE);
}

void
whisper_vad_filter_restore_token (const WhisperVadFilter *f, WhisperTokenEvent *event)
{
  event->time = whisper_vad_filter_original_time (f, event->time, -1, FALSE);
  event->window_start = whisper_vad_filter_original_time (f, event->window_start, -1, FALSE);
}

/* ---------------------------------------------------------------------- */

typedef struct {
  const WhisperVadFilter *filter;
  WhisperSegmentFunc segment_func;
  gpointer segment_data;
  WhisperTokenFunc token_func;
  gpointer token_data;
} Relay;

static gboolean
relay_segment (WhisperSegment *segment, gpointer user_data)
{
  Relay *r = user_data;
  whisper_vad_filter_restore_segment (r->filter, segment);
  return r->segment_func (segment, r->segment_data);
}

static gboolean
relay_token (const WhisperTokenEvent *event, gpointer user_data)
{
  Relay *r = user_data;
  WhisperTokenEvent mapped = *event;
  whisper_vad_filter_restore_token (r->filter, &mapped);
  return r->token_func (&mapped, r->token_data);
}

gboolean
whisper_vad_filter_transcribe (WhisperStream *stream, WhisperDecodeOptions *options,
                               WhisperTokenFunc *token_func, gpointer *token_data,
                               WhisperVadFilterTranscribeFunc transcribe, const float *pcm,
                               gsize n_samples, WhisperSegmentFunc segment_func,
                               gpointer user_data, GPtrArray **segments_out, GError **error)
{
  if (!options->vad) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "vad_filter is on but no voice activity detector is set (the vad option: "
                 "load one with whisper_vad_new(), by default from %s)",
                 "$XDG_DATA_HOME/gst-whisper/models/silero-vad/silero_vad_v6.bin");
    return FALSE;
  }
  g_autoptr (WhisperVadFilter) f =
      whisper_vad_filter_new (options->vad, &options->vad_options, pcm, n_samples, error);
  if (!f)
    return FALSE;

  Relay relay = { f, segment_func, user_data, *token_func, *token_data };
  const WhisperVad *vad = options->vad;
  options->vad_filter = FALSE;
  options->vad = NULL;
  if (relay.token_func) {
    *token_func = relay_token;
    *token_data = &relay;
  }
  gsize n_speech;
  const float *speech = whisper_vad_filter_pcm (f, &n_speech);
  GPtrArray *out = NULL;
  const gboolean ok = transcribe (stream, speech, n_speech, segment_func ? relay_segment : NULL,
                                  &relay, segments_out ? &out : NULL, error);
  *token_func = relay.token_func;
  *token_data = relay.token_data;
  options->vad = vad;
  options->vad_filter = TRUE;
  if (!ok)
    return FALSE;
  /* the copies the stream keeps for segments_out (the callback had its own) */
  if (out) {
    for (guint i = 0; i < out->len; i++)
      whisper_vad_filter_restore_segment (f, g_ptr_array_index (out, i));
    *segments_out = out;
  }
  return TRUE;
}
