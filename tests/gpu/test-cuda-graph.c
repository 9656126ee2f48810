/* test-cuda-graph.c: decode-step graphs (ops->graph_begin/graph_end) give
 * bit for bit the results of the same ops run one by one.
 *
 * A small decoder (synthetic-decoder.c: random weights, the op sequence of
 * whisper_decoder_forward for one token, then logits_select) runs 24
 * greedy steps three ways: ops
 * run at once; recorded and replayed as a graph (captured at the first
 * step, patched at every later one: token, position, KV write row, KV
 * length and logit state change); and with WHISPER_CUDA_GRAPHS=0. The chosen
 * tokens, their log probabilities, the KV caches and the last logits must be
 * identical. Further tests: a graph holding cuBLAS GEMMs (captured, then
 * replayed, then captured again when a GEMM's pointers change), a download
 * inside a graph, and the misuse errors. Exits 77 only without an NVIDIA
 * driver or CUDA device; with one, a backend that does not come up fails
 * (gpu-test-common.h).
 */
#include "gpu-test-common.h"
#include "synthetic-decoder.h"
#include "whisper-logits.h"

#include <gmodule.h>
#include <string.h>

/* WHISPER_GPU_TEST_QUICK=1 (the CPU emulator, emu/): one layer, fewer steps */
static SynthShape shape = {
  .d = 384, .n_head = 6, .n_layer = 2, .n_vocab = 2000, .n_ctx = 64, .n_cross = 300,
};
enum { MAX_STEPS = 24, D = 384 };
static int STEPS = MAX_STEPS;

typedef enum { RUN_EAGER, RUN_GRAPH } RunMode;

typedef struct {
  int32_t tokens[MAX_STEPS];
  float logprobs[MAX_STEPS];
  float *kv[2];
  float *logits;
} Run;

static void
decode (SynthModel *m, WhisperBackend *be, RunMode mode, WhisperGraph *graph, Run *out)
{
  SynthState *s = synth_state_new (m);
  WhisperLogitState st = { 0, FALSE, TRUE, -1 };
  int32_t token = 1000; /* "sot" */
  for (int step = 0; step < STEPS; step++) {
    WhisperLogitChoice c;
    g_autoptr (GError) error = NULL;
    if (mode == RUN_GRAPH && !be->ops->graph_begin (be, graph, &error))
      g_error ("graph_begin: %s", error->message);
    synth_forward (s, token, step);
    synth_select (s, &st, &c);
    if (mode == RUN_GRAPH && !be->ops->graph_end (be, &error))
      g_error ("graph_end: %s", error->message);
    out->tokens[step] = c.token;
    out->logprobs[step] = c.logprob;
    /* keep decoding past EOT: the test wants every step */
    whisper_logit_state_push (&st, synth_logit_config (s), c.token);
    /* random weights repeat one token: feed other ones, so that the
     * token argument changes at every step too */
    token = (c.token + step * 7919) % shape.n_vocab;
  }
  for (int l = 0; l < shape.n_layer; l++)
    out->kv[l] = gpu_test_get (be, synth_state_self_kv (s, l), (size_t) shape.n_ctx * 2 * D);
  /* logits are modified in place by logits_select: compare after it */
  out->logits = gpu_test_get (be, synth_state_logits (s), shape.n_vocab);
  synth_state_free (s);
}

static void
run_clear (Run *r)
{
  for (int l = 0; l < shape.n_layer; l++)
    g_free (r->kv[l]);
  g_free (r->logits);
}

static void
assert_same_run (const char *what, const Run *a, const Run *b)
{
  for (int i = 0; i < STEPS; i++)
    if (a->tokens[i] != b->tokens[i] || memcmp (&a->logprobs[i], &b->logprobs[i], 4) != 0) {
      g_printerr ("%s: step %d: token %d (%.9g) vs %d (%.9g)\n", what, i, a->tokens[i],
                  a->logprobs[i], b->tokens[i], b->logprobs[i]);
      g_test_fail ();
      return;
    }
  for (int l = 0; l < shape.n_layer; l++)
    if (memcmp (a->kv[l], b->kv[l], (size_t) shape.n_ctx * 2 * D * sizeof (float)) != 0) {
      g_printerr ("%s: KV cache of layer %d differs\n", what, l);
      g_test_fail ();
    }
  if (memcmp (a->logits, b->logits, shape.n_vocab * sizeof (float)) != 0) {
    g_printerr ("%s: last logits differ\n", what);
    g_test_fail ();
  }
}

/* whisper_backend_cuda_graph_stats() of the module, if it can be found
 * (argv[1], WHISPER_CUDA_MODULE): a test hook, not part of backend.h. */
typedef void (*GraphStatsFunc) (WhisperBackend *be, WhisperGraph *graph, guint64 *launches,
                                guint64 *captures, guint64 *patches);
static GraphStatsFunc graph_stats;

static void
find_graph_stats (const char *path)
{
  if (!path || !*path)
    path = g_getenv ("WHISPER_CUDA_MODULE");
  GModule *m = path ? g_module_open (path, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL) : NULL;
  if (!m || !g_module_symbol (m, "whisper_backend_cuda_graph_stats", (gpointer *) &graph_stats))
    graph_stats = NULL;
}

/* Captured once, then patched: the point of the graphs. */
static void
assert_graph_counts (WhisperBackend *be, WhisperGraph *graph, guint64 launches, guint64 captures)
{
  guint64 l = 0, c = 0, p = 0;
  if (!graph_stats) {
    g_test_message ("no graph statistics (module path unknown)");
    return;
  }
  graph_stats (be, graph, &l, &c, &p);
  g_test_message ("graph: %" G_GUINT64_FORMAT " launches, %" G_GUINT64_FORMAT " captures, %"
                  G_GUINT64_FORMAT " kernel nodes patched",
                  l, c, p);
  g_assert_cmpuint (l, ==, launches);
  g_assert_cmpuint (c, ==, captures);
  g_assert_cmpuint (p, >, 0);
}

static void
test_decode_steps (void)
{
  WhisperBackend *be = gpu_test_cuda_or_skip ();
  SynthModel *m = synth_model_new (be, &shape, 777);
  Run eager, graph, again;
  WhisperGraph *g = be->ops->graph_new (be);
  decode (m, be, RUN_EAGER, NULL, &eager);
  decode (m, be, RUN_GRAPH, g, &graph);
  assert_graph_counts (be, g, STEPS, 1);
  /* other buffers, same graph: every pointer argument is patched */
  decode (m, be, RUN_GRAPH, g, &again);
  assert_graph_counts (be, g, 2 * STEPS, 1);
  be->ops->graph_free (be, g);
  g_autoptr (GString) toks = g_string_new (NULL);
  for (int i = 0; i < STEPS; i++)
    g_string_append_printf (toks, " %d", eager.tokens[i]);
  g_test_message ("tokens:%s", toks->str);
  assert_same_run ("graph vs eager", &graph, &eager);
  assert_same_run ("graph (new buffers) vs eager", &again, &eager);
  int32_t eager_tokens[MAX_STEPS];
  memcpy (eager_tokens, eager.tokens, sizeof eager_tokens);
  run_clear (&eager);
  run_clear (&graph);
  run_clear (&again);
  g_autoptr (GError) error = NULL;
  if (!be->ops->check (be, &error))
    g_error ("backend failed: %s", error->message);
  synth_model_free (m);
  whisper_backend_destroy (be);

  /* graphs disabled: graph_begin/graph_end still work, ops run at once */
  g_setenv ("WHISPER_CUDA_GRAPHS", "0", TRUE);
  be = gpu_test_cuda_or_skip ();
  g_unsetenv ("WHISPER_CUDA_GRAPHS");
  SynthModel *m2 = synth_model_new (be, &shape, 777);
  Run plain, passthrough;
  WhisperGraph *g2 = be->ops->graph_new (be);
  decode (m2, be, RUN_EAGER, NULL, &plain);
  decode (m2, be, RUN_GRAPH, g2, &passthrough);
  be->ops->graph_free (be, g2);
  assert_same_run ("WHISPER_CUDA_GRAPHS=0", &passthrough, &plain);
  /* and the same tokens as the first backend */
  for (int i = 0; i < STEPS; i++)
    if (plain.tokens[i] != eager_tokens[i]) {
      g_printerr ("second backend: step %d token %d vs %d\n", i, plain.tokens[i], eager_tokens[i]);
      g_test_fail ();
      break;
    }
  run_clear (&plain);
  run_clear (&passthrough);
  synth_model_free (m2);
  whisper_backend_destroy (be);
}

/* A graph with cuBLAS GEMMs (n > the GEMV limit), an upload and a download. */
static void
gemm_step (WhisperBackend *be, WhisperWeight *w, float *x, float *y, const float *host_x,
           float *host_y, WhisperGraph *graph)
{
  g_autoptr (GError) error = NULL;
  if (graph && !be->ops->graph_begin (be, graph, &error))
    g_error ("graph_begin: %s", error->message);
  be->ops->upload (be, x, host_x, 16 * D * sizeof (float));
  be->ops->linear (be, y, 3 * D, x, D, w, NULL, 16, WHISPER_LINEAR_GELU);
  be->ops->download (be, host_y, y, 16 * 3 * D * sizeof (float));
  if (graph && !be->ops->graph_end (be, &error))
    g_error ("graph_end: %s", error->message);
  be->ops->sync (be);
}

static void
test_gemm_graph (void)
{
  WhisperBackend *be = gpu_test_cuda_or_skip ();
  g_autoptr (GError) error = NULL;
  WhisperWeight w = { 0 };
  {
    g_autofree float *h = gpu_test_random_half ((size_t) 3 * D * D, 0.0625f);
    if (!gt_weight_upload_f32 (be, &w, h, 3 * D, D, &error))
      g_error ("weight_upload: %s", error->message);
  }
  float *x = be->ops->alloc (be, 16 * D, &error);
  float *y1 = be->ops->alloc (be, 16 * 3 * D, &error);
  float *y2 = be->ops->alloc (be, 16 * 3 * D, &error);
  g_autofree float *want = g_new (float, 16 * 3 * D), *got = g_new (float, 16 * 3 * D);
  WhisperGraph *graph = be->ops->graph_new (be);
  for (int round = 0; round < 4; round++) {
    g_autofree float *hx = gpu_test_random (16 * D, -1.0f, 1.0f);
    float *y = round == 3 ? y2 : y1; /* round 3: other output, capture again */
    gemm_step (be, &w, x, y, hx, want, NULL);
    memset (got, 0, 16 * 3 * D * sizeof (float));
    gemm_step (be, &w, x, y, hx, got, graph);
    /* the same kernels on the same data; cuBLAS is allowed another
     * summation order under capture, so not necessarily bit for bit */
    g_autofree char *what = g_strdup_printf ("graph with GEMMs, round %d", round);
    g_test_message ("%s: %s", what,
                    memcmp (want, got, 16 * 3 * D * sizeof (float)) == 0 ? "bit for bit"
                                                                         : "not bit for bit");
    gpu_test_assert_close (what, got, want, NULL, 16 * 3 * D, 1.0, 1e-5);
  }
  be->ops->graph_free (be, graph);
  be->ops->free (be, x);
  be->ops->free (be, y1);
  be->ops->free (be, y2);
  be->ops->weight_free (be, &w);
  if (!be->ops->check (be, &error))
    g_error ("backend failed: %s", error->message);
  whisper_backend_destroy (be);
}

static void
test_misuse (void)
{
  WhisperBackend *be = gpu_test_cuda_or_skip ();
  g_autoptr (GError) error = NULL;

  g_assert_false (be->ops->graph_end (be, &error));
  g_assert_nonnull (error);
  g_test_message ("graph_end alone: %s", error->message);
  g_clear_error (&error);

  WhisperGraph *g1 = be->ops->graph_new (be), *g2 = be->ops->graph_new (be);
  g_assert_false (be->ops->graph_begin (be, NULL, &error));
  g_test_message ("graph_begin without a graph: %s", error->message);
  g_clear_error (&error);
  g_assert_true (be->ops->graph_begin (be, g1, &error));
  g_assert_false (be->ops->graph_begin (be, g2, &error));
  g_test_message ("nested graph_begin: %s", error->message);
  g_clear_error (&error);
  /* free while recording is deferred, not a crash */
  float *p = be->ops->alloc (be, 100, &error);
  g_assert_nonnull (p);
  be->ops->free (be, p);
  g_assert_true (be->ops->graph_end (be, &error));

  /* g2 is left to the backend: freed with it */
  be->ops->graph_free (be, g1);

  /* weight_upload while recording is refused; the error sticks */
  g_assert_true (be->ops->graph_begin (be, g2, &error));
  WhisperWeight w = { 0 };
  float host[8] = { 0 };
  g_assert_false (gt_weight_upload_f32 (be, &w, host, 2, 4, &error));
  g_test_message ("weight_upload while recording: %s", error->message);
  g_clear_error (&error);
  g_assert_false (be->ops->graph_end (be, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_false (be->ops->check (be, &error));
  g_assert_nonnull (error);
  whisper_backend_destroy (be);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (g_strcmp0 (g_getenv ("WHISPER_GPU_TEST_QUICK"), "1") == 0) {
    shape.n_layer = 1;
    shape.n_cross = 64;
    STEPS = 6;
  }
  /* skip (77) or fail before registering anything (gpu-test-common.h) */
  whisper_backend_destroy (gpu_test_cuda_or_skip ());
  find_graph_stats (argc > 1 ? argv[1] : NULL);
  g_test_add_func ("/cuda/graph/decode-steps", test_decode_steps);
  g_test_add_func ("/cuda/graph/gemm", test_gemm_graph);
  g_test_add_func ("/cuda/graph/misuse", test_misuse);
  return g_test_run ();
}
