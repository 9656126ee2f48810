/* synthetic-decoder.h: a Whisper-shaped text decoder with random weights,
 * written against the backend table with the op sequence of
 * whisper_decoder_forward() for one token, then ops->logits_select. Used by
 * the graph test (small shapes) and the benchmark (tiny.en shapes). */
#pragma once

#include "backend.h"

G_BEGIN_DECLS

typedef struct {
  int d, n_head, n_layer, n_vocab, n_ctx, n_cross;
} SynthShape;

typedef struct _SynthModel SynthModel;
typedef struct _SynthState SynthState;

/* Weights from a fixed seed: two backends (or two calls) get the same. */
SynthModel *synth_model_new (WhisperBackend *be, const SynthShape *shape, guint32 seed);
void synth_model_free (SynthModel *m);

SynthState *synth_state_new (SynthModel *m);
void synth_state_free (SynthState *s);

/* One decode step: the forward pass of `token` at position `pos`. */
void synth_forward (SynthState *s, int32_t token, int pos);
/* Picks the next token from the step's logits (ops->logits_select). */
void synth_select (SynthState *s, const WhisperLogitState *state, WhisperLogitChoice *choice);
const WhisperLogitConfig *synth_logit_config (SynthState *s);

/* Backend memory of the state, for comparisons. */
float *synth_state_self_kv (SynthState *s, int layer); /* [n_ctx, 2d] */
float *synth_state_logits (SynthState *s);             /* [n_vocab] */

G_END_DECLS
