/* whisper-batched.c: pieces of a long recording decoded at the same time
 * (whisper-batched.h). The calling thread finds the pieces and hands out
 * their segments in order; batch_size worker threads, one stream each,
 * take the next piece in turn. The hand-off is in the run_locked_*
 * helpers, called with run->lock held. */
#include "whisper-batched.h"

#include "whisper-engine-struct.h"
#include "whisper-vad-filter.h"

#include <string.h>

/* How often the calling thread looks at the caller's cancel flag while it
 * waits for a piece. */
#define CANCEL_POLL_US 50000

typedef struct {
  WhisperVadFilter *map;  /* the piece's speech regions, joined, and their times */
  GPtrArray *segments;    /* its segments (input times), once done */
  const char *language;   /* its language (static), or NULL */
  double language_probability;
  gboolean done;
} Piece;

typedef struct _BatchedRun BatchedRun;

typedef struct {
  BatchedRun *run;
  WhisperStream *stream;
  GThread *thread;
} Worker;

struct _BatchedRun {
  GMutex lock;
  GCond cond;
  Piece *pieces;
  int n_pieces, next;
  gboolean stop;   /* no piece is started any more */
  GError *error;   /* the first failure of a piece */
  Worker *workers;
  int n_workers;
  double duration;  /* of the input, s */
};

/* ---- the pieces ------------------------------------------------------ */

/* collect_chunks(max_duration): consecutive regions joined while their
 * samples stay within max_samples (a longer region is a piece alone). */
static GPtrArray *
group_regions (const GArray *speech, gsize max_samples)
{
  GPtrArray *groups = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  GArray *current = NULL;
  gsize current_samples = 0;
  for (guint i = 0; i < speech->len; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    const gsize len = (gsize) (r->end_sample - r->start_sample);
    if (!current || current_samples + len > max_samples) {
      current = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
      g_ptr_array_add (groups, current);
      current_samples = 0;
    }
    g_array_append_val (current, *r);
    current_samples += len;
  }
  return groups;
}

/* ---- the hand-off ---------------------------------------------------- */

/* The next piece to decode, or -1 when there is none or the run stops. */
static int
run_locked_take (BatchedRun *run)
{
  if (run->stop || run->next >= run->n_pieces)
    return -1;
  return run->next++;
}

/* No piece is started any more, and those being decoded stop. */
static void
run_locked_stop (BatchedRun *run)
{
  run->stop = TRUE;
  for (int w = 0; w < run->n_workers; w++)
    whisper_stream_cancel (run->workers[w].stream);
  g_cond_broadcast (&run->cond);
}

/* Piece i is decoded (segments), or failed (error; the run stops). */
static void
run_locked_finish (BatchedRun *run, int i, GPtrArray *segments, GError *error)
{
  Piece *p = &run->pieces[i];
  p->segments = segments;
  p->done = TRUE;
  if (error) {
    /* the first failure is the one to report: the pieces stopped after it
     * fail with "cancelled" */
    if (!run->error && !run->stop)
      run->error = error;
    else
      g_error_free (error);
    run_locked_stop (run);
  }
  g_cond_broadcast (&run->cond);
}

/* A piece's segment in the input's times (restore_speech_timestamps()),
 * none past the input's end (a last timestamp token may point past the
 * end of the speech). */
static void
restore_times (const WhisperVadFilter *map, WhisperSegment *seg, double duration)
{
  whisper_vad_filter_restore_segment (map, seg);
  seg->start = MIN (seg->start, duration);
  seg->end = MIN (seg->end, duration);
  for (gsize i = 0; i < seg->n_words; i++) {
    seg->words[i].start = MIN (seg->words[i].start, duration);
    seg->words[i].end = MIN (seg->words[i].end, duration);
  }
}

static gpointer
worker_main (gpointer data)
{
  Worker *w = data;
  BatchedRun *run = w->run;
  for (;;) {
    g_mutex_lock (&run->lock);
    const int i = run_locked_take (run);
    g_mutex_unlock (&run->lock);
    if (i < 0)
      break;
    Piece *p = &run->pieces[i];
    gsize n;
    const float *pcm = whisper_vad_filter_pcm (p->map, &n);
    GPtrArray *segments = NULL;
    GError *error = NULL;
    /* each piece on its own: no text before it, the language found again */
    whisper_stream_reset (w->stream);
    if (whisper_stream_transcribe (w->stream, pcm, n, NULL, NULL, &segments, &error))
      for (guint k = 0; k < segments->len; k++)
        restore_times (p->map, g_ptr_array_index (segments, k), run->duration);
    double probability = 0.0;
    const char *language = whisper_stream_get_language (w->stream, &probability);
    g_mutex_lock (&run->lock);
    p->language = language;
    p->language_probability = probability;
    run_locked_finish (run, i, segments, error);
    g_mutex_unlock (&run->lock);
  }
  return NULL;
}

/* Waits for piece i; FALSE when the run stopped before it was done (or the
 * caller cancelled: the run is stopped then). */
static gboolean
run_locked_wait_piece (BatchedRun *run, int i, const gint *cancelled)
{
  while (!run->pieces[i].done) {
    if (g_atomic_int_get (cancelled)) {
      run_locked_stop (run);
      return FALSE;
    }
    if (run->stop && run->next <= i)
      return FALSE;  /* never started */
    g_cond_wait_until (&run->cond, &run->lock, g_get_monotonic_time () + CANCEL_POLL_US);
  }
  return run->pieces[i].segments != NULL;
}

/* Adds the cumulative counters of s to sum. */
static void
add_stats (WhisperStreamStats *sum, const WhisperStreamStats *s)
{
  sum->windows += s->windows;
  sum->decode_steps += s->decode_steps;
  sum->mel_seconds += s->mel_seconds;
  sum->encoder_seconds += s->encoder_seconds;
  sum->decoder_seconds += s->decoder_seconds;
  sum->samples_non_finite += s->samples_non_finite;
  sum->samples_clipped += s->samples_clipped;
  sum->windows_silent += s->windows_silent;
  sum->windows_no_voice += s->windows_no_voice;
  sum->windows_no_speech += s->windows_no_speech;
  sum->windows_fallback += s->windows_fallback;
  sum->batched_steps += s->batched_steps;
}

gboolean
whisper_batched_transcribe (WhisperEngine *e, const WhisperDecodeOptions *options,
                            int batch_size, const gint *cancelled, const float *pcm, gsize n,
                            WhisperSegmentFunc segment_func, gpointer user_data,
                            GPtrArray **segments_out, WhisperBatchedResult *result,
                            GError **error)
{
  memset (result, 0, sizeof *result);
  if (batch_size < 1 || batch_size > WHISPER_MAX_BATCH_SIZE) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "batch size %d is not from 1 to %d", batch_size, WHISPER_MAX_BATCH_SIZE);
    return FALSE;
  }
  if (!options->vad) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "batched transcription cuts the audio where the voice activity detector "
                 "finds no speech, and no detector is set (the vad option: load one with "
                 "whisper_vad_new(), by default from %s)",
                 "$XDG_DATA_HOME/gst-whisper/models/silero-vad/silero_vad_v6.bin");
    return FALSE;
  }

  /* the speech regions, none longer than a window (max_speech_duration_s =
   * chunk_length), and the pieces */
  const WhisperEngineInfo *info = whisper_engine_get_info (e);
  WhisperVadOptions vad_options = options->vad_options;
  const double window_s = info->window_samples / (double) WHISPER_SAMPLE_RATE;
  vad_options.max_speech_duration_s = MIN (vad_options.max_speech_duration_s, window_s);
  g_autoptr (GArray) speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  if (!whisper_vad_speech_timestamps (options->vad, pcm, n, &vad_options, speech, error))
    return FALSE;
  g_autoptr (GPtrArray) groups = group_regions (speech, (gsize) info->window_samples);

  BatchedRun run = { 0 };
  g_mutex_init (&run.lock);
  g_cond_init (&run.cond);
  run.n_pieces = (int) groups->len;
  run.duration = n / (double) WHISPER_SAMPLE_RATE;
  run.pieces = g_new0 (Piece, MAX (1, run.n_pieces));
  for (int i = 0; i < run.n_pieces; i++)
    run.pieces[i].map = whisper_vad_filter_new_from_speech (pcm, n, g_ptr_array_index (groups, i));

  /* the workers' options: each piece alone, all of it speech */
  WhisperDecodeOptions piece_options = *options;
  piece_options.condition_on_previous_text = FALSE;
  piece_options.vad_filter = FALSE;
  piece_options.vad = NULL;
  piece_options.clip_timestamps = NULL;
  run.n_workers = MIN (batch_size, run.n_pieces);
  run.workers = g_new0 (Worker, MAX (1, run.n_workers));
  gboolean ok = TRUE;
  for (int w = 0; w < run.n_workers; w++) {
    run.workers[w].run = &run;
    run.workers[w].stream = whisper_stream_new (e, error);
    if (!run.workers[w].stream) {
      run.n_workers = w;
      ok = FALSE;
      break;
    }
    whisper_stream_set_options (run.workers[w].stream, &piece_options);
  }
  for (int w = 0; ok && w < run.n_workers; w++)
    run.workers[w].thread = g_thread_new ("whisper-batched", worker_main, &run.workers[w]);

  /* the pieces' segments, in order */
  GPtrArray *out = segments_out ? g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free)
                                : NULL;
  gboolean stopped_by_callback = FALSE;
  for (int i = 0; ok && i < run.n_pieces && !stopped_by_callback; i++) {
    g_mutex_lock (&run.lock);
    const gboolean have = run_locked_wait_piece (&run, i, cancelled);
    GPtrArray *segments = run.pieces[i].segments;
    run.pieces[i].segments = NULL;
    g_mutex_unlock (&run.lock);
    if (!have)
      break;
    if (!result->language && run.pieces[i].language) {
      result->language = run.pieces[i].language;
      result->language_probability = run.pieces[i].language_probability;
    }
    /* the segments are handed on, one by one */
    g_ptr_array_set_free_func (segments, NULL);
    for (guint k = 0; k < segments->len; k++) {
      WhisperSegment *seg = g_ptr_array_index (segments, k);
      if (stopped_by_callback) {
        whisper_segment_free (seg);
        continue;
      }
      if (segment_func && !segment_func (out ? whisper_segment_copy (seg) : seg, user_data))
        stopped_by_callback = TRUE;
      if (out)
        g_ptr_array_add (out, seg);
      else if (!segment_func)
        whisper_segment_free (seg);
    }
    g_ptr_array_unref (segments);
  }

  g_mutex_lock (&run.lock);
  run_locked_stop (&run);
  g_mutex_unlock (&run.lock);
  for (int w = 0; w < run.n_workers; w++) {
    if (run.workers[w].thread)
      g_thread_join (run.workers[w].thread);
    WhisperStreamStats st;
    whisper_stream_get_stats (run.workers[w].stream, &st);
    add_stats (&result->stats, &st);
    whisper_stream_free (run.workers[w].stream);
  }
  if (ok && run.error) {
    g_propagate_error (error, run.error);
    run.error = NULL;
    ok = FALSE;
  } else if (ok && !stopped_by_callback && g_atomic_int_get (cancelled)) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED,
                 "transcription cancelled");
    ok = FALSE;
  }
  g_clear_error (&run.error);
  for (int i = 0; i < run.n_pieces; i++) {
    whisper_vad_filter_free (run.pieces[i].map);
    if (run.pieces[i].segments)
      g_ptr_array_unref (run.pieces[i].segments);
  }
  g_free (run.pieces);
  g_free (run.workers);
  g_mutex_clear (&run.lock);
  g_cond_clear (&run.cond);
  if (ok && out)
    *segments_out = out;
  else if (out)
    g_ptr_array_unref (out);
  return ok;
}

gboolean
whisper_stream_transcribe_batched (WhisperStream *s, int batch_size, const float *pcm,
                                   gsize n_samples, WhisperSegmentFunc segment_func,
                                   gpointer user_data, GPtrArray **segments_out, GError **error)
{
  WhisperEngine *e;
  const gint *cancelled;
  g_autofree float *fixed = NULL;
  gboolean quiet;
  const WhisperDecodeOptions *options =
      whisper_stream_begin_batched (s, &pcm, n_samples, &fixed, segments_out, &quiet, &e,
                                    &cancelled, error);
  if (!options)
    return FALSE;
  if (quiet)
    return TRUE;
  WhisperBatchedResult result;
  const gboolean ok = whisper_batched_transcribe (e, options, batch_size, cancelled, pcm,
                                                  n_samples, segment_func, user_data,
                                                  segments_out, &result, error);
  add_stats (whisper_stream_batched_stats (s), &result.stats);
  whisper_stream_set_batched_language (s, result.language, result.language_probability);
  return ok;
}
