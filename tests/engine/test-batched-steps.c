/* test-batched-steps.c: streams of one engine decoded at the same time, their
 * decode steps batched into shared forward passes
 * (engine/src/net/whisper-step-batcher.h), give exactly the tokens each gives alone.
 *
 * Each case transcribes a few real clips of tests/reference/clips, first
 * one after the other (each alone on the engine: no step is batched), then
 * on one thread per clip started together; every segment's tokens, times
 * and probabilities must be the same, and some steps must have run
 * batched (WhisperStreamStats.batched_steps; the engine's pass count shows
 * how many steps a pass ran).
 * - greedy with word timestamps (the per-step alignment capture runs in
 *   the batched pass): the token callbacks meet at a barrier at their
 *   first steps, so that the streams post their next steps together;
 * - beam search (several rows per stream: the batch holds several
 *   streams' beams);
 * - both at once (greedy and beam-search streams in the same passes).
 *
 * - a file in pieces (whisper_stream_transcribe_batched(), four pieces at a
 *   time, engine/src/core/whisper-batched.h) against the same pieces one at a time:
 *   the same segments, in the order of the input, within it.
 *
 * Paths: /batched-steps/cpu/{greedy,beam,mixed,file} (the CPU backend,
 * 30-s windows), /batched-steps/cpu/fast-beam (four beam-search streams in
 * precision=fast: 20 rows a pass on AMX; skipped without oneDNN) and /batched-steps/cuda-emu/mixed (the CUDA backend on the
 * CPU emulator of tests/gpu/emu/, module given by $WHISPER_CUDA_MODULE: the
 * first 3 s of two clips, 3-s windows, 12 tokens a window, as a 30-s window
 * takes the emulator minutes; skipped when no module is given). */
#include "whisper-engine-struct.h"
#include "whisper-step-batcher.h"

#include <string.h>

#define BARRIER_STEPS 6  /* first steps at which the greedy streams meet */

typedef struct {
  const char *clip;
  float *pcm;
  gsize n;
  WhisperStream *stream;
  GPtrArray *segments;  /* WhisperSegment */
  WhisperStreamStats stats;
  GError *error;
  /* the barrier of the greedy case (NULL: none) */
  struct Barrier *barrier;
  int steps_seen;
} Job;

struct Barrier {
  GMutex lock;
  GCond cond;
  int parties, arrived, generation;
};

/* Waits for every stream still transcribing to arrive. */
static void
barrier_wait (struct Barrier *b)
{
  g_mutex_lock (&b->lock);
  const int generation = b->generation;
  if (++b->arrived >= b->parties) {
    b->arrived = 0;
    b->generation++;
    g_cond_broadcast (&b->cond);
  } else {
    while (generation == b->generation)
      g_cond_wait (&b->cond, &b->lock);
  }
  g_mutex_unlock (&b->lock);
}

/* A stream done transcribing: the others no longer wait for it. */
static void
barrier_leave (struct Barrier *b)
{
  g_mutex_lock (&b->lock);
  if (--b->parties > 0 && b->arrived >= b->parties) {
    b->arrived = 0;
    b->generation++;
    g_cond_broadcast (&b->cond);
  }
  g_mutex_unlock (&b->lock);
}

static gboolean
on_token (const WhisperTokenEvent *event, gpointer data)
{
  Job *job = data;
  if (job->barrier && !event->is_timestamp && job->steps_seen++ < BARRIER_STEPS)
    barrier_wait (job->barrier);
  return TRUE;
}

static gboolean
on_segment (WhisperSegment *segment, gpointer data)
{
  Job *job = data;
  g_ptr_array_add (job->segments, segment);
  return TRUE;
}

static float *
load_clip (const char *name, gsize *n)
{
  const char *root = g_getenv ("WHISPER_SOURCE_ROOT");
  g_assert_nonnull (root);
  g_autofree char *path = g_build_filename (root, "tests", "reference", "clips", name, NULL);
  g_autoptr (GError) error = NULL;
  float *pcm = whisper_audio_load_file (path, -1, n, &error);
  g_assert_no_error (error);
  return pcm;
}

static gpointer
run_job (gpointer data)
{
  Job *job = data;
  job->steps_seen = 0;
  g_ptr_array_set_size (job->segments, 0);
  whisper_stream_reset (job->stream);
  WhisperStreamStats before;
  whisper_stream_get_stats (job->stream, &before);
  whisper_stream_transcribe (job->stream, job->pcm, job->n, on_segment, job, NULL, &job->error);
  if (job->barrier)
    barrier_leave (job->barrier);
  whisper_stream_get_stats (job->stream, &job->stats);
  job->stats.batched_steps -= before.batched_steps;
  job->stats.decode_steps -= before.decode_steps;
  return NULL;
}

static void
assert_same_segments (const Job *job, GPtrArray *alone)
{
  GPtrArray *together = job->segments;
  if (together->len != alone->len)
    g_error ("%s: %u segments decoded together, %u alone", job->clip, together->len, alone->len);
  for (guint i = 0; i < alone->len; i++) {
    const WhisperSegment *a = g_ptr_array_index (alone, i);
    const WhisperSegment *t = g_ptr_array_index (together, i);
    if (a->n_tokens != t->n_tokens ||
        memcmp (a->tokens, t->tokens, a->n_tokens * sizeof (gint32)) != 0)
      g_error ("%s segment %u: together \"%s\", alone \"%s\"", job->clip, i, t->text, a->text);
    /* the same logits give the same scores and word times, to the bit */
    g_assert_cmpfloat (a->avg_logprob, ==, t->avg_logprob);
    g_assert_cmpfloat (a->start, ==, t->start);
    g_assert_cmpfloat (a->end, ==, t->end);
    g_assert_cmpuint (a->n_words, ==, t->n_words);
    for (gsize w = 0; w < a->n_words; w++) {
      g_assert_cmpfloat (a->words[w].start, ==, t->words[w].start);
      g_assert_cmpfloat (a->words[w].end, ==, t->words[w].end);
      g_assert_cmpfloat (a->words[w].probability, ==, t->words[w].probability);
    }
  }
}

typedef enum {
  MODE_GREEDY,
  MODE_BEAM,
  MODE_MIXED,  /* greedy and beam-search streams in the same passes */
} Mode;

static void
check_batched (WhisperDevice device, WhisperPrecision precision, int max_encoder_length,
               Mode mode)
{
  static const char *cpu_clips[] = { "names.wav", "numbers.wav", "contact.wav", "question.wav" };
  /* the emulator: the first 3 s of two clips, 3-s windows, 12 tokens a
   * window (the text does not matter, only that it is the same) */
  static const char *emu_clips[] = { "short.wav", "question.wav" };
  const gboolean cuda = device == WHISPER_DEVICE_CUDA;
  const char **clips = cuda ? emu_clips : cpu_clips;
  /* beam search: three streams of five beams fill the CPU's 16 rows; the
   * CUDA module batches up to 8 rows, so two streams of three beams there;
   * precision=fast on AMX takes 64 rows, so four streams (20 rows) */
  const gboolean fast = precision == WHISPER_PRECISION_BFLOAT16;
  const int n_jobs = cuda ? 2 : mode == MODE_BEAM && !fast ? 3 : 4;
  const int beam_size = cuda ? 3 : 5;

  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = device;
  options.precision = precision;
  options.max_encoder_length = max_encoder_length;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  if (fast && !engine) {
    g_test_skip (error->message);  /* no oneDNN, or no AVX-512 */
    return;
  }
  g_assert_no_error (error);

  /* greedy streams with word timestamps (their steps capture attention),
   * beam search without */
  WhisperDecodeOptions greedy, search;
  whisper_decode_options_init (&greedy);
  greedy.word_timestamps = TRUE;
  whisper_decode_options_init (&search);
  whisper_decode_options_set_search_defaults (&search);
  search.beam_size = beam_size;
  if (cuda)
    greedy.max_new_tokens = search.max_new_tokens = 12;

  gboolean is_beam[4];
  int n_greedy = 0;
  for (int i = 0; i < n_jobs; i++) {
    is_beam[i] = mode == MODE_BEAM || (mode == MODE_MIXED && i % 2 == 1);
    n_greedy += !is_beam[i];
  }
  struct Barrier barrier = { .parties = n_greedy };
  g_mutex_init (&barrier.lock);
  g_cond_init (&barrier.cond);
  Job jobs[4] = { 0 };
  GPtrArray *alone[4] = { NULL };
  for (int i = 0; i < n_jobs; i++) {
    jobs[i].clip = clips[i];
    jobs[i].pcm = load_clip (clips[i], &jobs[i].n);
    if (cuda)
      jobs[i].n = MIN (jobs[i].n, 3 * WHISPER_SAMPLE_RATE);
    jobs[i].stream = whisper_stream_new (engine, &error);
    g_assert_no_error (error);
    whisper_stream_set_options (jobs[i].stream, is_beam[i] ? &search : &greedy);
    whisper_stream_set_token_callback (jobs[i].stream, on_token, &jobs[i]);
    jobs[i].segments = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);
  }

  /* alone: one after the other */
  for (int i = 0; i < n_jobs; i++) {
    run_job (&jobs[i]);
    g_assert_no_error (jobs[i].error);
    g_assert_cmpuint (jobs[i].stats.batched_steps, ==, 0);
    g_assert_cmpuint (jobs[i].segments->len, >, 0);
    alone[i] = jobs[i].segments;
    jobs[i].segments = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);
  }

  /* together: one thread each */
  guint64 passes0, steps0, passes1, steps1;
  whisper_step_batcher_counts (engine->steps, &passes0, &steps0);
  GThread *threads[4];
  for (int i = 0; i < n_jobs; i++) {
    jobs[i].barrier = is_beam[i] ? NULL : &barrier;
    threads[i] = g_thread_new ("batched-steps", run_job, &jobs[i]);
  }
  guint64 batched = 0;
  for (int i = 0; i < n_jobs; i++) {
    g_thread_join (threads[i]);
    g_assert_no_error (jobs[i].error);
    assert_same_segments (&jobs[i], alone[i]);
    batched += jobs[i].stats.batched_steps;
    g_test_message ("%s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " steps batched",
                    jobs[i].clip, jobs[i].stats.batched_steps, jobs[i].stats.decode_steps);
  }
  whisper_step_batcher_counts (engine->steps, &passes1, &steps1);
  g_test_message ("%" G_GUINT64_FORMAT " steps in %" G_GUINT64_FORMAT " passes",
                  steps1 - steps0, passes1 - passes0);
  g_assert_cmpuint (batched, >, 0);
  g_assert_cmpuint (passes1 - passes0, <, steps1 - steps0);

  for (int i = 0; i < n_jobs; i++) {
    g_free (jobs[i].pcm);
    whisper_stream_free (jobs[i].stream);
    g_ptr_array_unref (jobs[i].segments);
    g_ptr_array_unref (alone[i]);
  }
  g_mutex_clear (&barrier.lock);
  g_cond_clear (&barrier.cond);
}

/* Three clips with 2 s of silence between them (about 58 s: a few pieces). */
static float *
load_file (gsize *n)
{
  static const char *parts[] = { "numbers.wav", "pauses.wav", "long.wav" };
  GArray *pcm = g_array_new (FALSE, TRUE, sizeof (float));
  for (gsize i = 0; i < G_N_ELEMENTS (parts); i++) {
    gsize m;
    g_autofree float *clip = load_clip (parts[i], &m);
    g_array_set_size (pcm, pcm->len + 2 * WHISPER_SAMPLE_RATE);
    g_array_append_vals (pcm, clip, (guint) m);
  }
  *n = pcm->len;
  return (float *) g_array_free (pcm, FALSE);
}

static GPtrArray *
transcribe_batched (WhisperStream *stream, const float *pcm, gsize n, int batch_size)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *segments = NULL;
  g_assert_true (whisper_stream_transcribe_batched (stream, batch_size, pcm, n, NULL, NULL,
                                                    &segments, &error));
  g_assert_no_error (error);
  return segments;
}

static void
test_cpu_file (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (NULL, &error);
  g_assert_no_error (error);
  g_autoptr (WhisperVad) vad = whisper_vad_new (NULL, &error);
  g_assert_no_error (error);
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, &error);
  g_assert_no_error (error);
  WhisperDecodeOptions decode;
  whisper_decode_options_init (&decode);
  whisper_decode_options_set_search_defaults (&decode);
  decode.vad = vad;
  whisper_stream_set_options (stream, &decode);
  gsize n;
  g_autofree float *pcm = load_file (&n);

  g_autoptr (GPtrArray) alone = transcribe_batched (stream, pcm, n, 1);
  WhisperStreamStats before, after;
  whisper_stream_get_stats (stream, &before);
  g_assert_cmpuint (before.batched_steps, ==, 0);
  g_assert_cmpuint (before.windows, >=, 2);
  Job job = { .clip = "numbers.wav + pauses.wav + long.wav", .segments = transcribe_batched (stream, pcm, n, 4) };
  whisper_stream_get_stats (stream, &after);
  g_test_message ("%" G_GUINT64_FORMAT " windows, %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                  " steps batched", after.windows - before.windows,
                  after.batched_steps, after.decode_steps - before.decode_steps);
  g_assert_cmpuint (after.batched_steps, >, 0);
  assert_same_segments (&job, alone);
  double last_start = 0.0;
  for (guint i = 0; i < alone->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (alone, i);
    g_assert_cmpfloat (seg->start, >=, last_start);
    g_assert_cmpfloat (seg->start, <, seg->end);
    g_assert_cmpfloat (seg->end, <=, n / (double) WHISPER_SAMPLE_RATE + 0.02);
    last_start = seg->start;
  }
  g_ptr_array_unref (job.segments);

  /* no detector: a clear error */
  decode.vad = NULL;
  whisper_stream_set_options (stream, &decode);
  GPtrArray *none = NULL;
  g_assert_false (whisper_stream_transcribe_batched (stream, 4, pcm, n, NULL, NULL, &none, &error));
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
  g_assert_nonnull (strstr (error->message, "voice activity detector"));
  g_assert_null (none);
}

static gboolean
have_cuda_module (void)
{
  if (g_getenv ("WHISPER_CUDA_MODULE"))
    return TRUE;
  g_test_skip ("WHISPER_CUDA_MODULE is not set (the CUDA emulator's cases run in the gpu-emu suite)");
  return FALSE;
}

static void
test_cpu_greedy (void)
{
  check_batched (WHISPER_DEVICE_CPU, WHISPER_PRECISION_EXACT, 0, MODE_GREEDY);
}

static void
test_cpu_beam (void)
{
  check_batched (WHISPER_DEVICE_CPU, WHISPER_PRECISION_EXACT, 0, MODE_BEAM);
}

static void
test_cpu_mixed (void)
{
  check_batched (WHISPER_DEVICE_CPU, WHISPER_PRECISION_EXACT, 0, MODE_MIXED);
}

/* precision=fast: on AMX the steps' linears run on the tiles, 64 rows a
 * pass (engine/src/backend/cpu/cpu-amx-linear.h), elsewhere on the exact kernels */
static void
test_cpu_fast_beam (void)
{
  check_batched (WHISPER_DEVICE_CPU, WHISPER_PRECISION_BFLOAT16, 0, MODE_BEAM);
}

static void
test_cuda_emu_mixed (void)
{
  if (have_cuda_module ())
    check_batched (WHISPER_DEVICE_CUDA, WHISPER_PRECISION_EXACT, 150, MODE_MIXED);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/batched-steps/cpu/greedy", test_cpu_greedy);
  g_test_add_func ("/batched-steps/cpu/beam", test_cpu_beam);
  g_test_add_func ("/batched-steps/cpu/mixed", test_cpu_mixed);
  g_test_add_func ("/batched-steps/cpu/file", test_cpu_file);
  g_test_add_func ("/batched-steps/cpu/fast-beam", test_cpu_fast_beam);
  g_test_add_func ("/batched-steps/cuda-emu/mixed", test_cuda_emu_mixed);
  return g_test_run ();
}
