/* whisper-weights.h: the model's weights as the backend holds them,
 * uploaded once when the engine is created. */
#pragma once

#include "backend.h"
#include "whisper-model.h"

G_BEGIN_DECLS

typedef struct {
  WhisperWeight w;
  float *bias;  /* backend memory, NULL when the layer has no bias */
} WhisperDeviceLinear;

typedef struct {
  float *gamma;
  float *beta;
} WhisperDeviceLayerNorm;

typedef struct {
  WhisperDeviceLayerNorm attn_ln;
  WhisperDeviceLinear attn_qkv, attn_out;
  WhisperDeviceLayerNorm cross_ln;
  WhisperDeviceLinear cross_q, cross_kv, cross_out;
  WhisperDeviceLayerNorm mlp_ln;
  WhisperDeviceLinear mlp_fc1, mlp_fc2;
} WhisperDeviceLayer;

typedef struct {
  WhisperBackend *backend;
  int n_encoder_layers, n_decoder_layers;
  /* encoder */
  WhisperWeight conv1, conv2;   /* [d, n_mels*3], [d, d*3] */
  float *conv1_bias, *conv2_bias;
  float *encoder_positional;    /* [max_encoder_length, d] */
  WhisperDeviceLayer *encoder_layers;
  WhisperDeviceLayerNorm ln_post;
  /* decoder */
  WhisperWeight token_embedding; /* [n_vocab, d], also the output projection */
  float *decoder_positional;     /* [n_text_ctx, d] */
  WhisperDeviceLayer *decoder_layers;
  WhisperDeviceLayerNorm ln;
} WhisperDeviceWeights;

/* Dimensions are passed in (the engine's cached values), never looked up. */
WhisperDeviceWeights *whisper_device_weights_new (WhisperBackend *be, const WhisperModel *model,
                                                  int n_encoder_layers, int n_decoder_layers,
                                                  int d, int n_mels, int max_encoder_length,
                                                  int n_text_ctx, int n_vocab, GError **error);
void whisper_device_weights_free (WhisperDeviceWeights *weights);

G_END_DECLS
