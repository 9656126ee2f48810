/* whisper-vad-net.c: the Silero VAD v6 network on the CPU, one 512-sample
 * chunk at a time (the graph is in whisper-vad-private.h), the streaming
 * state, and the probabilities of a whole buffer as faster-whisper's
 * SileroVADModel computes them (faster_whisper/vad.py in faster-whisper
 * 1.2.1, https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/vad.py).
 *
 * Plain C loops, one thread: about 0.7 million multiply-adds per 32 ms chunk. */
#include "whisper-vad-private.h"

#include <math.h>
#include <string.h>

/* The largest activation: the STFT's 4 frames of 258 values. */
#define VAD_SCRATCH_FLOATS (VAD_STFT_FRAMES * VAD_STFT_ROWS)

struct _WhisperVadState {
  const WhisperVad *vad;
  float context[VAD_CONTEXT_SAMPLES]; /* the last samples of the previous chunk */
  float h[VAD_HIDDEN];
  float c[VAD_HIDDEN];
  /* scratch, kept here so that a push allocates nothing */
  float input[VAD_INPUT_SAMPLES + VAD_REFLECTED_SAMPLES];
  float act_a[VAD_SCRATCH_FLOATS];
  float act_b[VAD_SCRATCH_FLOATS];
  float gates[VAD_GATES];
};

char *
whisper_vad_default_path (void)
{
  return g_build_filename (g_get_user_data_dir (), "gst-whisper", "models", "silero-vad",
                           "silero_vad_v6.bin", NULL);
}

WhisperVad *
whisper_vad_new (const char *path, GError **error)
{
  g_autofree char *default_path = NULL;
  if (path == NULL)
    path = default_path = whisper_vad_default_path ();
  return whisper_vad_load_file (path, error);
}

void
whisper_vad_free (WhisperVad *vad)
{
  if (vad == NULL)
    return;
  g_free (vad->path);
  g_free (vad->basis_t);
  for (int l = 0; l < VAD_N_CONV; l++) {
    g_free (vad->conv[l].weight_t);
    g_free (vad->conv[l].bias);
  }
  g_free (vad->lstm_w_t);
  g_free (vad->lstm_r_t);
  g_free (vad->lstm_bias);
  g_free (vad->out_weight);
  g_free (vad);
}

WhisperVadState *
whisper_vad_state_new (const WhisperVad *vad)
{
  g_return_val_if_fail (vad != NULL, NULL);
  WhisperVadState *state = g_new0 (WhisperVadState, 1);
  state->vad = vad;
  return state;
}

void
whisper_vad_state_reset (WhisperVadState *state)
{
  g_return_if_fail (state != NULL);
  memset (state->context, 0, sizeof state->context);
  memset (state->h, 0, sizeof state->h);
  memset (state->c, 0, sizeof state->c);
}

void
whisper_vad_state_free (WhisperVadState *state)
{
  g_free (state);
}

/* y[0..n_out) += sum over i of x[i] * wt[i][0..n_out): a matrix product
 * with the matrix stored [in][out]. Inputs that are zero (most of the
 * ReLU outputs) are skipped: they add nothing. */
static void
add_weighted_rows (float *restrict y, const float *restrict wt, const float *restrict x,
                   int n_in, int n_out)
{
  for (int i = 0; i < n_in; i++) {
    const float xi = x[i];
    if (xi == 0.0f)
      continue;
    const float *restrict row = wt + (gsize) i * n_out;
    for (int o = 0; o < n_out; o++)
      y[o] += xi * row[o];
  }
}

/* The STFT magnitudes of state->input (576 samples + 64 reflected):
 * out[t][bin] for the 4 frames, 129 bins each. */
static void
stft_magnitudes (const WhisperVad *vad, const float *input, float *spectrum, float *out)
{
  memset (spectrum, 0, sizeof (float) * VAD_STFT_FRAMES * VAD_STFT_ROWS);
  for (int k = 0; k < VAD_STFT_WINDOW; k++) {
    const float *restrict row = vad->basis_t + (gsize) k * VAD_STFT_ROWS;
    for (int t = 0; t < VAD_STFT_FRAMES; t++) {
      const float xk = input[t * VAD_STFT_HOP + k];
      float *restrict y = spectrum + t * VAD_STFT_ROWS;
      for (int r = 0; r < VAD_STFT_ROWS; r++)
        y[r] += xk * row[r];
    }
  }
  for (int t = 0; t < VAD_STFT_FRAMES; t++) {
    const float *re = spectrum + t * VAD_STFT_ROWS, *im = re + VAD_STFT_BINS;
    for (int b = 0; b < VAD_STFT_BINS; b++)
      out[t * VAD_STFT_BINS + b] = sqrtf (re[b] * re[b] + im[b] * im[b]);
  }
}

/* One Conv1d (kernel 3, padding 1) + ReLU on time-major activations:
 * in[t][in_channels] (n_in steps) -> out[t][out_channels]; returns the
 * number of output steps. */
static int
conv_relu (const VadConv *conv, const float *in, int n_in, float *out)
{
  const int ci = conv->in_channels, co = conv->out_channels;
  const int n_out = (n_in + 2 - VAD_CONV_KERNEL) / conv->stride + 1;
  for (int t = 0; t < n_out; t++) {
    float *y = out + (gsize) t * co;
    memcpy (y, conv->bias, sizeof (float) * co);
    for (int k = 0; k < VAD_CONV_KERNEL; k++) {
      const int src = t * conv->stride + k - 1;
      if (src < 0 || src >= n_in)
        continue;
      add_weighted_rows (y, conv->weight_t + (gsize) k * ci * co, in + (gsize) src * ci, ci, co);
    }
    for (int o = 0; o < co; o++)
      y[o] = y[o] > 0.0f ? y[o] : 0.0f;
  }
  return n_out;
}

static inline float
sigmoid (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

float
whisper_vad_state_push (WhisperVadState *state, const float chunk[WHISPER_VAD_CHUNK_SAMPLES])
{
  g_return_val_if_fail (state != NULL && chunk != NULL, 0.0f);
  const WhisperVad *vad = state->vad;

  /* context + chunk, then the graph's right reflection padding (numpy's
   * "reflect": the edge sample is not repeated) as far as the last frame
   * reads it */
  float *x = state->input;
  memcpy (x, state->context, sizeof state->context);
  memcpy (x + VAD_CONTEXT_SAMPLES, chunk, sizeof (float) * WHISPER_VAD_CHUNK_SAMPLES);
  for (int j = 0; j < VAD_REFLECTED_SAMPLES; j++)
    x[VAD_INPUT_SAMPLES + j] = x[VAD_INPUT_SAMPLES - 2 - j];
  memcpy (state->context, chunk + WHISPER_VAD_CHUNK_SAMPLES - VAD_CONTEXT_SAMPLES,
          sizeof state->context);

  float *a = state->act_a, *b = state->act_b;
  stft_magnitudes (vad, x, a, b);
  int steps = VAD_STFT_FRAMES;
  for (int l = 0; l < VAD_N_CONV; l++) {
    float *in = (l % 2 == 0) ? b : a, *out = (l % 2 == 0) ? a : b;
    steps = conv_relu (&vad->conv[l], in, steps, out);
  }
  g_assert (steps == 1);
  const float *features = b; /* after 4 layers the output is back in b */

  /* one LSTM step (https://onnx.ai/onnx/operators/onnx__LSTM.html, default
   * activations, gates in the order input, output, forget, cell) */
  float *g = state->gates;
  memcpy (g, vad->lstm_bias, sizeof (float) * VAD_GATES);
  add_weighted_rows (g, vad->lstm_w_t, features, VAD_HIDDEN, VAD_GATES);
  add_weighted_rows (g, vad->lstm_r_t, state->h, VAD_HIDDEN, VAD_GATES);
  float logit = vad->out_bias;
  for (int j = 0; j < VAD_HIDDEN; j++) {
    const float in_gate = sigmoid (g[j]);
    const float out_gate = sigmoid (g[VAD_HIDDEN + j]);
    const float forget_gate = sigmoid (g[2 * VAD_HIDDEN + j]);
    const float cell = tanhf (g[3 * VAD_HIDDEN + j]);
    state->c[j] = forget_gate * state->c[j] + in_gate * cell;
    state->h[j] = out_gate * tanhf (state->c[j]);
    /* the decoder: ReLU(h), then the 1x1 convolution */
    if (state->h[j] > 0.0f)
      logit += vad->out_weight[j] * state->h[j];
  }
  return sigmoid (logit);
}

gsize
whisper_vad_n_chunks (gsize n_samples)
{
  return n_samples / WHISPER_VAD_CHUNK_SAMPLES + 1;
}

void
whisper_vad_probabilities (const WhisperVad *vad, const float *pcm, gsize n, GArray *out)
{
  g_return_if_fail (vad != NULL && (pcm != NULL || n == 0) && out != NULL);
  g_return_if_fail (g_array_get_element_size (out) == sizeof (float));

  const gsize n_chunks = whisper_vad_n_chunks (n);
  g_array_set_size (out, n_chunks);
  float *probs = (float *) out->data;
  WhisperVadState *state = whisper_vad_state_new (vad);
  for (gsize i = 0; i + 1 < n_chunks; i++)
    probs[i] = whisper_vad_state_push (state, pcm + i * WHISPER_VAD_CHUNK_SAMPLES);

  /* The last chunk: the rest of the buffer padded with zeros
   * (get_speech_timestamps' np.pad), and its last 64 samples zero, as
   * SileroVADModel.__call__ writes zeros there through its view
   * `context = batched_audio[..., -64:]; context[-1] = 0`. */
  float last[WHISPER_VAD_CHUNK_SAMPLES] = { 0 };
  const gsize rest = n - (n_chunks - 1) * WHISPER_VAD_CHUNK_SAMPLES;
  const gsize kept = MIN (rest, (gsize) (WHISPER_VAD_CHUNK_SAMPLES - VAD_CONTEXT_SAMPLES));
  if (kept > 0)
    memcpy (last, pcm + (n_chunks - 1) * WHISPER_VAD_CHUNK_SAMPLES, sizeof (float) * kept);
  probs[n_chunks - 1] = whisper_vad_state_push (state, last);
  whisper_vad_state_free (state);
}
