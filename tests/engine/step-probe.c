/* step-probe.c: see step-probe.h. The wrappers run inside decode steps, so
 * they call nothing that is counted: the records are preallocated. */
#include "step-probe.h"

#include <string.h>

struct _StepProbe {
  WhisperBackend *be;
  const WhisperBackendOps *orig;
  WhisperBackendOps ops;
  gboolean armed, paused, open, in_graph, overflow;
  int n_windows;
  int n_steps;
  ProbeStep *steps;      /* PROBE_MAX_STEPS */
  ProbeStep *cur;
  CallSnapshot begin;    /* counters when the open step began */
  CallSnapshot last_op;  /* ... when the last op returned */
};

static StepProbe *probe;  /* the attached one */

/* Counted while armed (a step's host work before its first op is counted
 * before the step is known to begin); steps take their share from the
 * snapshots. */
static void
update_active (StepProbe *p)
{
  call_counter_set_active (p->armed && !p->paused);
}

static void
close_step (StepProbe *p, const CallSnapshot *end)
{
  for (int i = 0; i < CALL_N_SLOTS; i++) {
    p->cur->calls[i] = end->count[i] - p->begin.count[i];
    p->cur->callers[i] = p->cur->calls[i] ? end->last_caller[i] : NULL;
  }
  p->open = FALSE;
}

/* At a step's first op: the step began when the op before it returned
 * (the last op of the step before, or of the window's prompt pass). */
static void
begin_step (StepProbe *p)
{
  if (!p->armed)
    return;
  if (p->open)
    close_step (p, &p->last_op);
  if (p->n_steps == PROBE_MAX_STEPS) {
    p->overflow = TRUE;
    return;
  }
  p->cur = &p->steps[p->n_steps++];
  p->cur->window = p->n_windows - 1;
  p->cur->position = -1;
  p->begin = p->last_op;
  p->open = TRUE;
}

/* An op that no decode step issues: the window's steps are over. */
static void
window_op (StepProbe *p)
{
  if (p->open)
    close_step (p, &p->last_op);
}

/* After every op a step or a prompt pass may issue. */
static void
op_done (StepProbe *p)
{
  if (p->armed)
    call_counter_snapshot (&p->last_op);
}

/* ---- the wrappers ------------------------------------------------------ */

static float *
probe_alloc (WhisperBackend *be, size_t n_floats, GError **error)
{
  call_counter_note (CALL_SLOT_OPS_ALLOC, __builtin_return_address (0));
  float *ptr = probe->orig->alloc (be, n_floats, error);
  op_done (probe);
  return ptr;
}

static void
probe_free (WhisperBackend *be, void *ptr)
{
  call_counter_note (CALL_SLOT_OPS_FREE, __builtin_return_address (0));
  probe->orig->free (be, ptr);
  op_done (probe);
}

static void
probe_upload (WhisperBackend *be, void *dst, const void *src, size_t bytes)
{
  window_op (probe);
  probe->orig->upload (be, dst, src, bytes);
}

static void
probe_download (WhisperBackend *be, void *dst, const void *src, size_t bytes)
{
  probe->orig->download (be, dst, src, bytes);
  op_done (probe);
}

static void
probe_sync (WhisperBackend *be)
{
  probe->orig->sync (be);
  op_done (probe);
}

static gboolean
probe_weight_upload (WhisperBackend *be, WhisperWeight *w, const WhisperTensor *t, GError **error)
{
  window_op (probe);
  return probe->orig->weight_upload (be, w, t, error);
}

static void
probe_weight_free (WhisperBackend *be, WhisperWeight *w)
{
  window_op (probe);
  probe->orig->weight_free (be, w);
}

static void
probe_linear (WhisperBackend *be, float *y, int y_stride, const float *x, int x_stride,
              const WhisperWeight *w, const float *bias, int n, WhisperLinearFlags flags)
{
  if (n != 1)
    window_op (probe);
  probe->orig->linear (be, y, y_stride, x, x_stride, w, bias, n, flags);
  op_done (probe);
}

static void
probe_layer_norm (WhisperBackend *be, float *y, const float *x, const float *gamma,
                  const float *beta, int n, int d, float eps)
{
  if (n != 1)
    window_op (probe);
  probe->orig->layer_norm (be, y, x, gamma, beta, n, d, eps);
  op_done (probe);
}

static void
probe_conv1d_gelu (WhisperBackend *be, float *y, const float *x, int n_in_frames, int c_in,
                   const WhisperWeight *w, const float *bias, int stride, float *scratch)
{
  window_op (probe);
  probe->orig->conv1d_gelu (be, y, x, n_in_frames, c_in, w, bias, stride, scratch);
}

static void
probe_add (WhisperBackend *be, float *y, const float *x, size_t n)
{
  window_op (probe);
  probe->orig->add (be, y, x, n);
}

static void
probe_embed (WhisperBackend *be, float *x, const WhisperWeight *embedding,
             const float *positional, const int32_t *tokens, int n, int pos0, int d)
{
  StepProbe *p = probe;
  if (n == 1 && pos0 > 0) {
    if (!p->in_graph)
      begin_step (p);
    if (p->open) {
      p->cur->position = pos0;
      p->cur->n_embed++;
    }
  } else {
    window_op (p);
    if (pos0 == 0 && p->armed)
      p->n_windows++;  /* a prompt pass: a new window */
  }
  p->orig->embed (be, x, embedding, positional, tokens, n, pos0, d);
  op_done (p);
}

static void
record_keys (StepProbe *p, int *keys, int *n_calls, int n_kv)
{
  if (*n_calls == PROBE_MAX_LAYERS) {
    p->overflow = TRUE;
    return;
  }
  keys[(*n_calls)++] = n_kv;
}

static void
probe_attention (WhisperBackend *be, float *out, int out_stride, const float *q, int q_stride,
                 const float *k, const float *v, int kv_stride, int n_q, int n_kv, int n_head,
                 int d_head, int causal)
{
  StepProbe *p = probe;
  if (n_q != 1)
    window_op (p);
  else if (p->open && causal >= 0)
    record_keys (p, p->cur->self_keys, &p->cur->n_self, n_kv);
  else if (p->open)
    record_keys (p, p->cur->cross_keys, &p->cur->n_cross, n_kv);
  p->orig->attention (be, out, out_stride, q, q_stride, k, v, kv_stride, n_q, n_kv, n_head,
                      d_head, causal);
  op_done (p);
}

static void
probe_copy_rows (WhisperBackend *be, float *dst, int dst_stride, const float *src,
                 int src_stride, int n_rows, int n_cols)
{
  if (n_rows != 1)
    window_op (probe);
  probe->orig->copy_rows (be, dst, dst_stride, src, src_stride, n_rows, n_cols);
  op_done (probe);
}

static void
probe_logits_select (WhisperBackend *be, float *logits, WhisperLogitConfig *config,
                     const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  probe->orig->logits_select (be, logits, config, state, choice);
  op_done (probe);
}

static void
probe_logits_release (WhisperBackend *be, WhisperLogitConfig *config)
{
  window_op (probe);
  probe->orig->logits_release (be, config);
}

static gboolean
probe_check (WhisperBackend *be, GError **error)
{
  const gboolean ok = probe->orig->check (be, error);
  op_done (probe);
  return ok;
}

static WhisperGraph *
probe_graph_new (WhisperBackend *be)
{
  window_op (probe);
  return probe->orig->graph_new (be);
}

static gboolean
probe_graph_begin (WhisperBackend *be, WhisperGraph *graph, GError **error)
{
  StepProbe *p = probe;
  begin_step (p);
  p->in_graph = TRUE;
  const gboolean ok = p->orig->graph_begin (be, graph, error);
  op_done (p);
  return ok;
}

static gboolean
probe_graph_end (WhisperBackend *be, GError **error)
{
  StepProbe *p = probe;
  const gboolean ok = p->orig->graph_end (be, error);
  p->in_graph = FALSE;
  op_done (p);
  return ok;
}

static void
probe_graph_free (WhisperBackend *be, WhisperGraph *graph)
{
  window_op (probe);
  probe->orig->graph_free (be, graph);
}

static void
probe_logits_prepare (WhisperBackend *be, WhisperLogitConfig *config)
{
  window_op (probe);
  probe->orig->logits_prepare (be, config);
}

/* ---- the probe -------------------------------------------------------- */

StepProbe *
step_probe_attach (WhisperBackend *be)
{
  g_assert_null (probe);
  call_counter_prepare ();
  StepProbe *p = g_new0 (StepProbe, 1);
  p->be = be;
  p->orig = be->ops;
  p->steps = g_new0 (ProbeStep, PROBE_MAX_STEPS);
  p->ops = *be->ops;
  /* wrap what the backend has; what it lacks stays NULL (the engine
   * behaves differently without an optional op) */
#define WRAP(op) if (p->ops.op) p->ops.op = probe_##op
  WRAP (alloc);
  WRAP (free);
  WRAP (upload);
  WRAP (download);
  WRAP (sync);
  WRAP (weight_upload);
  WRAP (weight_free);
  WRAP (linear);
  WRAP (layer_norm);
  WRAP (conv1d_gelu);
  WRAP (add);
  WRAP (embed);
  WRAP (attention);
  WRAP (copy_rows);
  WRAP (logits_select);
  WRAP (logits_prepare);
  WRAP (logits_release);
  WRAP (check);
  WRAP (graph_new);
  WRAP (graph_begin);
  WRAP (graph_end);
  WRAP (graph_free);
#undef WRAP
  probe = p;
  be->ops = &p->ops;
  return p;
}

void
step_probe_detach (StepProbe *p)
{
  g_assert_true (probe == p);
  step_probe_arm (p, FALSE);
  p->be->ops = p->orig;
  probe = NULL;
  g_free (p->steps);
  g_free (p);
}

void
step_probe_arm (StepProbe *p, gboolean armed)
{
  if (!armed && p->open)
    close_step (p, &p->last_op);
  if (armed)
    call_counter_snapshot (&p->last_op);
  p->armed = armed;
  update_active (p);
}

void
step_probe_pause (StepProbe *p, gboolean paused)
{
  p->paused = paused;
  update_active (p);
}

int
step_probe_n_steps (const StepProbe *p)
{
  return p->n_steps;
}

const ProbeStep *
step_probe_step (const StepProbe *p, int i)
{
  g_assert_cmpint (i, >=, 0);
  g_assert_cmpint (i, <, p->n_steps);
  return &p->steps[i];
}

int
step_probe_n_windows (const StepProbe *p)
{
  return p->n_windows;
}

gboolean
step_probe_overflowed (const StepProbe *p)
{
  return p->overflow;
}
