/* whisper-vad-net.c: the Silero VAD v6 network on the CPU, one 512-sample
 * chunk at a time (the graph is in whisper-vad-private.h), the streaming
 * state, and the probabilities of a whole buffer as faster-whisper's
 * SileroVADModel computes them (faster_whisper/vad.py in faster-whisper
 * 1.2.1, https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/vad.py).
 *
 * One thread, about 0.7 million multiply-adds per 32 ms chunk, in the
 * products of whisper-vad-kernel.c. */
#include "whisper-vad-private.h"

#include <math.h>
#include <string.h>

/* Time steps of each layer's input (the STFT's frames, then each
 * convolution's output): 4 -> 4 -> 2 -> 1 -> 1. */
static const int layer_steps[VAD_N_CONV + 1] = { 4, 4, 2, 1, 1 };

struct _WhisperVadState {
  const WhisperVad *vad;
  float context[VAD_CONTEXT_SAMPLES]; /* the last samples of the previous chunk */
  float h[VAD_HIDDEN];
  float c[VAD_HIDDEN];
  /* scratch, kept here so that a push allocates nothing */
  float input[VAD_INPUT_SAMPLES + VAD_REFLECTED_SAMPLES];
  float spectrum[VAD_STFT_FRAMES * VAD_STFT_ROWS];
  /* act[l]: the input of convolution l (act[4]: the LSTM's), time-major
   * [steps + 2][channels] with a row of zeros before and after: the
   * convolutions' padding */
  float *act[VAD_N_CONV + 1];
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
  for (int l = 0; l <= VAD_N_CONV; l++) {
    const int channels = l == 0 ? VAD_STFT_BINS : vad->conv[l - 1].out_channels;
    state->act[l] = g_new0 (float, (gsize) (layer_steps[l] + 2) * channels);
  }
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
  if (state == NULL)
    return;
  for (int l = 0; l <= VAD_N_CONV; l++)
    g_free (state->act[l]);
  g_free (state);
}

/* The STFT magnitudes of the 576 + 64 reflected input samples: out[t][bin]
 * for the 4 frames (frame t starts at sample 128 t), 129 bins each. */
static void
stft_magnitudes (const WhisperVad *vad, const float *input, float *spectrum, float *out)
{
  memset (spectrum, 0, sizeof (float) * VAD_STFT_FRAMES * VAD_STFT_ROWS);
  vad->accumulate (spectrum, VAD_STFT_FRAMES, VAD_STFT_ROWS, input, VAD_STFT_HOP,
                   VAD_STFT_WINDOW, vad->basis_t);
  for (int t = 0; t < VAD_STFT_FRAMES; t++) {
    const float *re = spectrum + t * VAD_STFT_ROWS, *im = re + VAD_STFT_BINS;
    for (int b = 0; b < VAD_STFT_BINS; b++)
      out[t * VAD_STFT_BINS + b] = sqrtf (re[b] * re[b] + im[b] * im[b]);
  }
}

/* One Conv1d (kernel 3, padding 1) + ReLU on time-major activations with a
 * zero row on each side: in[1 + t][in_channels] for t < n_in steps ->
 * out[1 + t][out_channels] for the output steps. Output step t, tap k reads
 * input row t * stride + k of the padded buffer. */
static void
conv_relu (const WhisperVad *vad, const VadConv *conv, const float *in, int n_in, float *out)
{
  const int ci = conv->in_channels, co = conv->out_channels;
  const int n_out = (n_in + 2 - VAD_CONV_KERNEL) / conv->stride + 1;
  float *y = out + co; /* past the zero row */
  for (int t = 0; t < n_out; t++)
    memcpy (y + (gsize) t * co, conv->bias, sizeof (float) * co);
  for (int k = 0; k < VAD_CONV_KERNEL; k++)
    vad->accumulate (y, n_out, co, in + (gsize) k * ci, conv->stride * ci, ci,
                     conv->weight_t + (gsize) k * ci * co);
  for (int i = 0; i < n_out * co; i++)
    y[i] = y[i] > 0.0f ? y[i] : 0.0f;
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

  stft_magnitudes (vad, x, state->spectrum, state->act[0] + VAD_STFT_BINS);
  for (int l = 0; l < VAD_N_CONV; l++)
    conv_relu (vad, &vad->conv[l], state->act[l], layer_steps[l], state->act[l + 1]);
  const float *features = state->act[VAD_N_CONV] + VAD_HIDDEN; /* past the zero row */

  /* one LSTM step (https://onnx.ai/onnx/operators/onnx__LSTM.html, default
   * activations, gates in the order input, output, forget, cell) */
  float *g = state->gates;
  memcpy (g, vad->lstm_bias, sizeof (float) * VAD_GATES);
  vad->accumulate (g, 1, VAD_GATES, features, VAD_HIDDEN, VAD_HIDDEN, vad->lstm_w_t);
  vad->accumulate (g, 1, VAD_GATES, state->h, VAD_HIDDEN, VAD_HIDDEN, vad->lstm_r_t);
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
