/* bench-gpu.c: the CUDA backend against the CPU, side by side, in one run.
 *
 *   bench-gpu [AUDIO] [REPEATS]   (AUDIO default: $WHISPER_SHARED_DATA/jfk.wav)
 *
 * Default model (tiny.en unless $WHISPER_MODEL says otherwise). Prints one
 * summary table; every figure is a median over REPEATS (default 5) runs
 * after one warm-up run.
 *
 * - end to end: whisper_stream_transcribe() of AUDIO, wall time;
 * - encoder per 30-s window and decoder per pass: whisper_stream_get_stats()
 *   (encoder: window upload, encoder, cross-attention K/V, sync; decoder:
 *   every forward pass and token choice, divided by the passes);
 * - decode step, host overhead: a synthetic tiny.en-shaped decoder
 *   (tests/gpu/synthetic-decoder.c) straight on the backend table, ops run
 *   one by one ("eager") and as a patched CUDA graph: wall time per step and
 *   the host time spent issuing (eager) or recording (graph) a step.
 * Exits 77 where the machine has no NVIDIA driver or no CUDA device, 1
 * where it has one and the CUDA backend does not come up
 * (gpu-test-common.h).
 */
#include "gpu-test-common.h"
#include "synthetic-decoder.h"
#include "whisper.h"

#include <stdlib.h>
#include <string.h>

#define SYNTH_MAX_STEPS 200
/* fewer with WHISPER_BENCH_SYNTH_STEPS (a smoke test on the CPU emulator) */
static int SYNTH_STEPS = SYNTH_MAX_STEPS;

static double
now_s (void)
{
  return g_get_monotonic_time () / 1e6;
}

static int
cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
median (double *v, int n)
{
  qsort (v, n, sizeof (double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
  const char *label;
  double wall_ms, encoder_ms, decoder_us, spread_ms;
  guint64 windows, passes;
  GArray *tokens;
} E2E;

static WhisperEngine *
engine_new (WhisperDevice device, const char *precision)
{
  WhisperEngineOptions o;
  whisper_engine_options_init (&o);
  o.device = device;
  if (precision)
    g_setenv ("WHISPER_CUDA_PRECISION", precision, TRUE);
  g_autoptr (GError) error = NULL;
  WhisperEngine *e = whisper_engine_new (&o, &error);
  g_unsetenv ("WHISPER_CUDA_PRECISION");
  if (!e)
    g_error ("engine: %s", error->message);
  return e;
}

static E2E
run_e2e (const char *label, WhisperEngine *e, const float *pcm, gsize n, int repeats)
{
  E2E r = { .label = label, .tokens = g_array_new (FALSE, FALSE, sizeof (gint32)) };
  double *wall = g_new (double, repeats), *enc = g_new (double, repeats),
         *dec = g_new (double, repeats);
  for (int i = -1; i < repeats; i++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (WhisperStream) s = whisper_stream_new (e, &error);
    if (!s)
      g_error ("stream: %s", error->message);
    g_autoptr (GPtrArray) segments = NULL;
    const double t0 = now_s ();
    if (!whisper_stream_transcribe (s, pcm, n, NULL, NULL, &segments, &error))
      g_error ("%s: transcribe: %s", label, error->message);
    const double t = now_s () - t0;
    WhisperStreamStats st;
    whisper_stream_get_stats (s, &st);
    if (i < 0) { /* warm-up; keep its tokens */
      for (guint k = 0; k < segments->len; k++) {
        WhisperSegment *seg = g_ptr_array_index (segments, k);
        g_array_append_vals (r.tokens, seg->tokens, seg->n_tokens);
      }
      continue;
    }
    wall[i] = t * 1e3;
    enc[i] = st.windows ? st.encoder_seconds / st.windows * 1e3 : 0;
    dec[i] = st.decode_steps ? st.decoder_seconds / st.decode_steps * 1e6 : 0;
    r.windows = st.windows;
    r.passes = st.decode_steps;
  }
  r.wall_ms = median (wall, repeats);
  r.spread_ms = wall[repeats - 1] - wall[0]; /* sorted by median() */
  r.encoder_ms = median (enc, repeats);
  r.decoder_us = median (dec, repeats);
  g_free (wall);
  g_free (enc);
  g_free (dec);
  return r;
}

typedef struct {
  double eager_wall_us, eager_host_us, graph_wall_us, graph_host_us;
  gboolean same_tokens;
} Synth;

static double
synth_run (WhisperBackend *be, SynthState *s, WhisperGraph *graph, double *host_us,
           int32_t *tokens)
{
  WhisperLogitState st = { 0, FALSE, TRUE, -1 };
  int32_t token = 1;
  double host = 0.0, t_start = 0.0;
  const int warm = MIN (10, SYNTH_STEPS);
  for (int step = -warm; step < SYNTH_STEPS; step++) {
    const int pos = step < 0 ? step + warm : step;
    if (step == 0) {
      t_start = now_s ();
      host = 0.0;
    }
    g_autoptr (GError) error = NULL;
    WhisperLogitChoice c;
    const double t0 = now_s ();
    if (graph && !be->ops->graph_begin (be, graph, &error))
      g_error ("graph_begin: %s", error->message);
    synth_forward (s, token, pos);
    if (!graph)
      host += now_s () - t0; /* issuing the step's kernels */
    synth_select (s, &st, &c);
    if (graph) {
      host += now_s () - t0; /* recording the step */
      if (!be->ops->graph_end (be, &error))
        g_error ("graph_end: %s", error->message);
    }
    if (step >= 0)
      tokens[step] = c.token;
    token = c.token;
    if (step < 0)
      st = (WhisperLogitState) { 0, FALSE, TRUE, -1 };
    else
      st.n_sampled = 1; /* plain text steps: no first-step rules */
  }
  *host_us = host / SYNTH_STEPS * 1e6;
  return (now_s () - t_start) / SYNTH_STEPS * 1e6;
}

static Synth
run_synth (WhisperBackend *be)
{
  const SynthShape tiny = { .d = 384, .n_head = 6, .n_layer = 4, .n_vocab = 51864,
                            .n_ctx = 448, .n_cross = 1500 };
  SynthModel *m = synth_model_new (be, &tiny, 1234);
  SynthState *s = synth_state_new (m);
  Synth r;
  int32_t a[SYNTH_MAX_STEPS], b[SYNTH_MAX_STEPS];
  WhisperGraph *graph = be->ops->graph_new (be);
  r.eager_wall_us = synth_run (be, s, NULL, &r.eager_host_us, a);
  r.graph_wall_us = synth_run (be, s, graph, &r.graph_host_us, b);
  be->ops->graph_free (be, graph);
  r.same_tokens = memcmp (a, b, SYNTH_STEPS * sizeof (int32_t)) == 0;
  synth_state_free (s);
  synth_model_free (m);
  return r;
}

static gboolean
same_tokens (const E2E *a, const E2E *b)
{
  return a->tokens->len == b->tokens->len &&
         memcmp (a->tokens->data, b->tokens->data, a->tokens->len * sizeof (gint32)) == 0;
}

int
main (int argc, char **argv)
{
  /* exit 77 without a device, 1 when a device exists and the backend
   * does not come up (gpu-test-common.h) */
  WhisperBackend *gpu_be = gpu_test_cuda_or_skip ();
  g_autoptr (GError) error = NULL;
  const char *shared = g_getenv ("WHISPER_SHARED_DATA");
  g_autofree char *default_audio =
      g_build_filename (shared ? shared : "../shared/data", "jfk.wav", NULL);
  const char *audio = argc > 1 ? argv[1] : default_audio;
  const int repeats = argc > 2 ? MAX (atoi (argv[2]), 1) : 5;
  const char *steps = g_getenv ("WHISPER_BENCH_SYNTH_STEPS");
  if (steps)
    SYNTH_STEPS = CLAMP (atoi (steps), 1, SYNTH_MAX_STEPS);

  gsize n = 0;
  g_autofree float *pcm = whisper_audio_load_file (audio, -1, &n, &error);
  if (!pcm)
    g_error ("%s", error->message);

  g_autoptr (WhisperEngine) cpu = engine_new (WHISPER_DEVICE_CPU, NULL);
  g_autoptr (WhisperEngine) gpu = engine_new (WHISPER_DEVICE_CUDA, NULL);
  g_autoptr (WhisperEngine) fast = engine_new (WHISPER_DEVICE_CUDA, "fast");
  g_print ("model %s, audio %s (%.2f s), %d runs each, CPU threads: all (%u)\n",
           whisper_engine_get_info (cpu)->model_path, audio, n / 16000.0, repeats,
           g_get_num_processors ());

  E2E rc = run_e2e ("cpu", cpu, pcm, n, repeats);
  E2E rg = run_e2e ("cuda", gpu, pcm, n, repeats);
  E2E rf = run_e2e ("cuda fast", fast, pcm, n, repeats);
  Synth sy = run_synth (gpu_be);
  whisper_backend_destroy (gpu_be);

  g_print ("\n%-44s %12s %12s %12s %10s\n", "", "cpu", "cuda", "cuda fast", "cpu/cuda");
  g_print ("%-44s %12.2f %12.2f %12.2f %10.1f\n", "end to end, ms (median)", rc.wall_ms,
           rg.wall_ms, rf.wall_ms, rc.wall_ms / rg.wall_ms);
  g_print ("%-44s %12.2f %12.2f %12.2f %10s\n", "  spread (max - min), ms", rc.spread_ms,
           rg.spread_ms, rf.spread_ms, "");
  g_print ("%-44s %12.3f %12.3f %12.3f %10.1f\n", "encoder per 30-s window, ms", rc.encoder_ms,
           rg.encoder_ms, rf.encoder_ms, rc.encoder_ms / rg.encoder_ms);
  g_print ("%-44s %12.1f %12.1f %12.1f %10.1f\n", "decoder per pass (token), us", rc.decoder_us,
           rg.decoder_us, rf.decoder_us, rc.decoder_us / rg.decoder_us);
  g_autofree char *wp_c = g_strdup_printf ("%" G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT,
                                            rc.windows, rc.passes);
  g_autofree char *wp_g = g_strdup_printf ("%" G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT,
                                            rg.windows, rg.passes);
  g_autofree char *wp_f = g_strdup_printf ("%" G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT,
                                            rf.windows, rf.passes);
  g_print ("%-44s %12s %12s %12s\n", "windows / decoder passes per run", wp_c, wp_g, wp_f);
  g_print ("%-44s %12s %12s %12s\n", "tokens equal to the CPU's", "-",
           same_tokens (&rg, &rc) ? "yes" : "NO", same_tokens (&rf, &rc) ? "yes" : "no");
  g_print ("\nsynthetic tiny.en decode step on the CUDA backend (%d steps):\n", SYNTH_STEPS);
  g_print ("%-44s %12s %12s %10s\n", "", "eager", "graph", "eager/graph");
  g_print ("%-44s %12.1f %12.1f %10.2f\n", "wall per step, us", sy.eager_wall_us,
           sy.graph_wall_us, sy.eager_wall_us / sy.graph_wall_us);
  g_print ("%-44s %12.1f %12.1f %10.2f\n", "host time issuing / recording a step, us",
           sy.eager_host_us, sy.graph_host_us, sy.eager_host_us / sy.graph_host_us);
  g_print ("%-44s %25s\n", "graph tokens equal to eager tokens", sy.same_tokens ? "yes" : "NO");

  const gboolean ok = same_tokens (&rg, &rc) && sy.same_tokens;
  g_array_unref (rc.tokens);
  g_array_unref (rg.tokens);
  g_array_unref (rf.tokens);
  return ok ? 0 : 1;
}
