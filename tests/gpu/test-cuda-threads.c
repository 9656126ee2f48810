/* test-cuda-threads.c: the backend used from another thread than the one
 * that created it, as the element does (the engine is made on the
 * application's thread, inference runs on the streaming thread).
 *
 * The CUDA device is per thread: a thread that never chose one works on
 * device 0. With WHISPER_CUDA_DEVICE=1 on a machine (or the emulator,
 * WHISPER_EMU_DEVICE_COUNT=2) with two devices, a backend that does not make
 * its device current at every entry launches its kernels into a stream of
 * another device, which fails. Here a worker thread runs a few decode steps
 * of the synthetic decoder (synthetic-decoder.c: eager, then recorded as a
 * graph), a cuBLAS linear and the allocations, uploads, downloads and frees
 * around them; the results must be bit for bit those of the same work on the
 * creating thread. Exits 77 only without an NVIDIA driver or CUDA device;
 * with one, a backend that does not come up fails (gpu-test-common.h).
 */
#include "gpu-test-common.h"
#include "synthetic-decoder.h"
#include "whisper-logits.h"

#include <string.h>

enum { STEPS = 4, D = 64, N_GEMM = 16 };

static const SynthShape shape = {
  .d = D, .n_head = 2, .n_layer = 1, .n_vocab = 300, .n_ctx = 16, .n_cross = 24,
};

typedef struct {
  WhisperBackend *be;
  SynthModel *model;
  const WhisperWeight *w;
  const float *host_x;
  int32_t tokens[2][STEPS]; /* eager, graph */
  float logprobs[2][STEPS];
  float *y;                 /* [N_GEMM, D], host */
} Work;

static void
decode (Work *work, WhisperGraph *graph, int run)
{
  WhisperBackend *be = work->be;
  SynthState *s = synth_state_new (work->model);
  WhisperLogitState st = { 0, FALSE, TRUE, -1 };
  int32_t token = 7;
  for (int step = 0; step < STEPS; step++) {
    g_autoptr (GError) error = NULL;
    WhisperLogitChoice c;
    if (graph && !be->ops->graph_begin (be, graph, &error))
      g_error ("graph_begin: %s", error->message);
    synth_forward (s, token, step);
    synth_select (s, &st, &c);
    if (graph && !be->ops->graph_end (be, &error))
      g_error ("graph_end: %s", error->message);
    work->tokens[run][step] = c.token;
    work->logprobs[run][step] = c.logprob;
    whisper_logit_state_push (&st, synth_logit_config (s), c.token);
    token = (c.token + step * 31) % shape.n_vocab;
  }
  synth_state_free (s);
}

/* Everything the engine does on its inference thread. */
static gpointer
work_run (gpointer data)
{
  Work *work = data;
  WhisperBackend *be = work->be;
  decode (work, NULL, 0);
  WhisperGraph *graph = be->ops->graph_new (be);
  decode (work, graph, 1);
  be->ops->graph_free (be, graph);

  /* more rows than the fused GEMV takes: cuBLAS */
  float *x = gpu_test_put (be, work->host_x, (size_t) N_GEMM * D);
  g_autoptr (GError) error = NULL;
  float *y = be->ops->alloc (be, (size_t) N_GEMM * D, &error);
  if (!y)
    g_error ("alloc: %s", error->message);
  be->ops->linear (be, y, D, x, D, work->w, NULL, N_GEMM, WHISPER_LINEAR_GELU);
  work->y = gpu_test_get (be, y, (size_t) N_GEMM * D);
  be->ops->free (be, x);
  be->ops->free (be, y);
  if (!be->ops->check (be, &error))
    g_error ("backend failed on the worker thread: %s", error->message);
  return NULL;
}

static void
test_other_thread (void)
{
  WhisperBackend *be = gpu_test_cuda_or_skip ();
  g_autoptr (GError) error = NULL;
  g_autofree float *hw = gpu_test_random_half ((size_t) D * D, 0.125f);
  g_autofree float *hx = gpu_test_random ((size_t) N_GEMM * D, -1.0f, 1.0f);
  WhisperWeight w = { 0 };
  if (!gt_weight_upload_f32 (be, &w, hw, D, D, &error))
    g_error ("weight_upload: %s", error->message);
  Work here = { .be = be, .model = synth_model_new (be, &shape, 99), .w = &w, .host_x = hx };
  Work there = here;

  work_run (&here);
  GThread *t = g_thread_new ("inference", work_run, &there);
  g_thread_join (t);

  for (int run = 0; run < 2; run++)
    for (int i = 0; i < STEPS; i++)
      if (here.tokens[run][i] != there.tokens[run][i] ||
          memcmp (&here.logprobs[run][i], &there.logprobs[run][i], sizeof (float)) != 0) {
        g_printerr ("%s step %d: token %d (%.9g) here, %d (%.9g) on the worker thread\n",
                    run ? "graph" : "eager", i, here.tokens[run][i], here.logprobs[run][i],
                    there.tokens[run][i], there.logprobs[run][i]);
        g_test_fail ();
      }
  if (memcmp (here.y, there.y, (size_t) N_GEMM * D * sizeof (float)) != 0) {
    g_printerr ("cuBLAS linear: other results on the worker thread\n");
    g_test_fail ();
  }
  g_free (here.y);
  g_free (there.y);
  synth_model_free (here.model);
  be->ops->weight_free (be, &w);
  if (!be->ops->check (be, &error))
    g_error ("backend failed: %s", error->message);
  whisper_backend_destroy (be);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  whisper_backend_destroy (gpu_test_cuda_or_skip ());
  g_test_add_func ("/cuda/threads/other-thread", test_other_thread);
  return g_test_run ();
}
