/* whisper-model-walk.h: the one walk over the model's weights that both
 * loaders share. The table (whisper-model-walk.c) lists every weight of the
 * encoder and the decoder once: where it goes in WhisperModel, its shape
 * from the hyper-parameters, and its name in each format; a loader says
 * how it reads each kind of weight (WhisperWeightReader). The walk's order
 * is the tables': a part's own weights, then its layers. */
#pragma once

#include "whisper-model.h"

G_BEGIN_DECLS

typedef enum {
  WHISPER_WEIGHT_LAYER_NORM,  /* gamma and beta, [d] each */
  WHISPER_WEIGHT_LINEAR,      /* weight [n_out, n_in], bias [n_out] */
  WHISPER_WEIGHT_FUSED,       /* n_parts projections [d, d] as one linear: [q; k; v] or [k; v] */
  WHISPER_WEIGHT_CONV,        /* conv1d weight [d, c_in, 3], kept as [d, c_in * 3] */
  WHISPER_WEIGHT_CONV_BIAS,   /* conv1d bias [d] */
  WHISPER_WEIGHT_TABLE,       /* [rows, d]: positional encodings, token embeddings */
} WhisperWeightKind;

/* How one format reads each kind of weight. `name` is the format's name of
 * the weight (a layer's weights: the layer's prefix and the weight's
 * suffix); each returns FALSE with an error naming the file and the
 * weight. */
typedef struct {
  WhisperModelFormat format;  /* whose names the walk hands over */
  const char *layer_infix;    /* a layer's prefix is part, infix, index: "/layer_" makes
                                 "encoder/layer_0" */
  /* before the weights of the encoder (decoder FALSE) and of the decoder;
   * may be NULL */
  gboolean (*part) (gpointer reader, gboolean decoder, GError **error);
  gboolean (*layer_norm) (gpointer reader, const char *name, int d,
                          WhisperLayerNormWeights *ln, GError **error);
  gboolean (*linear) (gpointer reader, const char *name, int n_out, int n_in,
                      WhisperLinearWeights *linear, GError **error);
  gboolean (*fused) (gpointer reader, const char *name, int n_parts, int d,
                     WhisperLinearWeights *linear, GError **error);
  /* CONV, CONV_BIAS and TABLE: dims[0..rank) is the weight's shape in
   * PyTorch's order, kept as the tensor [rows, cols] */
  gboolean (*tensor) (gpointer reader, WhisperWeightKind kind, const char *name, guint rank,
                      const gint64 *dims, int rows, int cols, WhisperTensor *t,
                      GError **error);
} WhisperWeightReader;

/* Walks every weight of the model (its hyper-parameters set) through
 * `ops`, allocating the layer arrays; FALSE at the first weight that
 * fails. */
gboolean whisper_model_walk_weights (WhisperModel *model, const WhisperWeightReader *ops,
                                     gpointer reader, GError **error);

G_END_DECLS
