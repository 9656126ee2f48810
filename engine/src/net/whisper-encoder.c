/* whisper-encoder.c: the audio encoder, written against the backend table
 * (AudioEncoder in https://github.com/openai/whisper/blob/main/whisper/model.py): conv1+GELU, conv2(stride 2)+GELU, positional add,
 * pre-LN transformer layers, final LayerNorm. */
#include "whisper-net.h"

#include <string.h>

#define LN_EPS 1e-5f

/* n floats rounded up to whole 64-byte lines */
static size_t
encoder_part (size_t n)
{
  return (n + 15) / 16 * 16;
}

/* The encoder's work buffers (WhisperEncoderBuffers), L =
 * max_encoder_length rows, carved from one block: mel, x and h each
 * their own part, then one part that the convolutions use for conv1 and
 * the im2col scratch and the layers for qkv, attn and ffn (whichever
 * needs more). */
gboolean
whisper_encoder_buffers_init (WhisperNet *net, GError **error)
{
  WhisperEncoderBuffers *b = &net->enc;
  const size_t L = net->max_encoder_length, d = net->d, n_mels = net->n_mels;
  /* im2col rows of the two convolutions: 2L rows of 3 n_mels (stride 1),
   * then L rows of 3d (stride 2) */
  const size_t scratch = MAX (2 * L * 3 * n_mels, L * 3 * d);
  const size_t convs = encoder_part (2 * L * d) + encoder_part (scratch);
  const size_t layers = encoder_part (3 * L * d) + encoder_part (L * d) + encoder_part (4 * L * d);
  const size_t mel = encoder_part (2 * L * n_mels), row = encoder_part (L * d);

  memset (b, 0, sizeof *b);
  b->block = net->backend->ops->alloc (net->backend, mel + 2 * row + MAX (convs, layers), error);
  if (!b->block)
    return FALSE;
  b->mel = b->block;
  b->x = b->mel + mel;
  b->h = b->x + row;
  float *shared = b->h + row;
  b->conv1 = shared;
  b->scratch = b->conv1 + encoder_part (2 * L * d);
  b->qkv = shared;
  b->attn = b->qkv + encoder_part (3 * L * d);
  b->ffn = b->attn + encoder_part (L * d);
  return TRUE;
}

void
whisper_encoder_buffers_clear (WhisperNet *net)
{
  WhisperEncoderBuffers *b = &net->enc;
  if (b->block)
    net->backend->ops->free (net->backend, b->block);
  memset (b, 0, sizeof *b);
}

void
whisper_encoder_run (WhisperNet *net, int encoder_length)
{
  WhisperBackend *be = net->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceWeights *w = net->weights;
  WhisperEncoderBuffers *b = &net->enc;
  const int d = net->d;
  const int n_head = net->n_audio_head, d_head = d / n_head;
  const int n = encoder_length;

  op->conv1d_gelu (be, b->conv1, b->mel, 2 * n, net->n_mels, &w->conv1, w->conv1_bias, 1,
                   b->scratch);
  op->conv1d_gelu (be, b->x, b->conv1, 2 * n, d, &w->conv2, w->conv2_bias, 2, b->scratch);
  op->add (be, b->x, w->encoder_positional, (size_t) n * d);

  for (int l = 0; l < net->n_audio_layer; l++) {
    const WhisperDeviceLayer *L = &w->encoder_layers[l];
    op->layer_norm (be, b->h, b->x, L->attn_ln.gamma, L->attn_ln.beta, n, d, LN_EPS);
    op->linear (be, b->qkv, 3 * d, b->h, d, &L->attn_qkv.w, L->attn_qkv.bias, n,
                WHISPER_LINEAR_DEFAULT);
    op->attention (be, b->attn, d, b->qkv, 3 * d, b->qkv + d, b->qkv + 2 * d, 3 * d, n, n,
                   n_head, d_head, -1);
    op->linear (be, b->x, d, b->attn, d, &L->attn_out.w, L->attn_out.bias, n,
                WHISPER_LINEAR_ACCUMULATE);
    op->layer_norm (be, b->h, b->x, L->mlp_ln.gamma, L->mlp_ln.beta, n, d, LN_EPS);
    op->linear (be, b->ffn, 4 * d, b->h, d, &L->mlp_fc1.w, L->mlp_fc1.bias, n,
                WHISPER_LINEAR_GELU);
    op->linear (be, b->x, d, b->ffn, 4 * d, &L->mlp_fc2.w, L->mlp_fc2.bias, n,
                WHISPER_LINEAR_ACCUMULATE);
  }
  op->layer_norm (be, b->h, b->x, w->ln_post.gamma, w->ln_post.beta, n, d, LN_EPS);
}

void
whisper_encoder_fill_window (WhisperNet *net, const float *mel, gsize stride, gsize first,
                             int n_frames, int encoder_length, float *host_window)
{
  const int frames = 2 * encoder_length;
  g_return_if_fail (encoder_length >= 1 && encoder_length <= net->max_encoder_length &&
                    n_frames <= frames);
  memset (host_window, 0, (size_t) frames * net->n_mels * sizeof (float));
  for (int m = 0; m < net->n_mels; m++) {
    const float *src = mel + (size_t) m * stride + first;
    for (int t = 0; t < n_frames; t++)
      host_window[(size_t) t * net->n_mels + m] = src[t];
  }
}

void
whisper_encoder_upload_window (WhisperNet *net, int encoder_length, const float *host_window)
{
  net->backend->ops->upload (net->backend, net->enc.mel, host_window,
                             (size_t) 2 * encoder_length * net->n_mels * sizeof (float));
}

void
whisper_encoder_load_window (WhisperNet *net, const float *mel, gsize stride, gsize first,
                             int n_frames, int encoder_length, float *host_window)
{
  whisper_encoder_fill_window (net, mel, stride, first, n_frames, encoder_length, host_window);
  whisper_encoder_upload_window (net, encoder_length, host_window);
}
