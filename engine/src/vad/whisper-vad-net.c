/* whisper-vad-net.c: the Silero VAD v6 network on the CPU (the graph is in
 * whisper-vad-private.h), the streaming state, and the probabilities of a
 * whole buffer as faster-whisper's SileroVADModel computes them
 * (faster_whisper/vad.py in faster-whisper 1.2.1,
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/vad.py).
 *
 * One thread, about 0.7 million multiply-adds per 32 ms chunk, in the
 * products of whisper-vad-kernel.c. Everything before the LSTM's recurrent
 * product depends on the chunk alone, so a whole buffer runs it for a batch
 * of chunks at a time (each weight read once per batch, not once per
 * chunk); the LSTM then steps through the batch in order. A chunk gives the
 * same bits alone (whisper_vad_state_push()) as in a batch. */
#include "whisper-vad-private.h"

#include <math.h>
#include <string.h>

/* Time steps of each layer's input (the STFT's frames, then each
 * convolution's output): 4 -> 4 -> 2 -> 1 -> 1. */
static const int layer_steps[VAD_N_CONV + 1] = { 4, 4, 2, 1, 1 };

/* Chunks per batch of whisper_vad_probabilities(). */
#define VAD_BATCH 32

/* The activations of up to `capacity` chunks. */
typedef struct {
  int capacity;
  float *input;     /* [chunk][576 + 64]: context, chunk, reflected samples */
  float *spectrum;  /* [chunk][frame][VAD_STFT_ROWS] */
  /* act[l]: the input of convolution l (act[4]: the LSTM's), per chunk
   * time-major [steps + 2][channels] with a row of zeros before and after:
   * the convolutions' padding */
  float *act[VAD_N_CONV + 1];
  float *gates;     /* [chunk][VAD_GATES]: biases + input product */
  float **y_rows;   /* [capacity * VAD_STFT_FRAMES] */
  const float **x_rows;
} VadBatch;

struct _WhisperVadState {
  const WhisperVad *vad;
  float context[VAD_CONTEXT_SAMPLES]; /* the last samples of the previous chunk */
  float h[VAD_HIDDEN];
  float c[VAD_HIDDEN];
  VadBatch batch; /* of one chunk, so that a push allocates nothing */
};

static int
layer_channels (const WhisperVad *vad, int l)
{
  return l == 0 ? VAD_STFT_BINS : vad->conv[l - 1].out_channels;
}

/* Floats of one chunk's padded activations of layer l. */
static gsize
act_floats (const WhisperVad *vad, int l)
{
  return (gsize) (layer_steps[l] + 2) * layer_channels (vad, l);
}

static void
batch_init (VadBatch *b, const WhisperVad *vad, int capacity)
{
  b->capacity = capacity;
  b->input = g_new0 (float, (gsize) capacity * (VAD_INPUT_SAMPLES + VAD_REFLECTED_SAMPLES));
  b->spectrum = g_new0 (float, (gsize) capacity * VAD_STFT_FRAMES * VAD_STFT_ROWS);
  for (int l = 0; l <= VAD_N_CONV; l++)
    b->act[l] = g_new0 (float, capacity * act_floats (vad, l));
  b->gates = g_new0 (float, (gsize) capacity * VAD_GATES);
  b->y_rows = g_new0 (float *, (gsize) capacity * VAD_STFT_FRAMES);
  b->x_rows = g_new0 (const float *, (gsize) capacity * VAD_STFT_FRAMES);
}

static void
batch_clear (VadBatch *b)
{
  g_free (b->input);
  g_free (b->spectrum);
  for (int l = 0; l <= VAD_N_CONV; l++)
    g_free (b->act[l]);
  g_free (b->gates);
  g_free (b->y_rows);
  g_free (b->x_rows);
}

/* Chunk j's input buffer: context + 512 samples, to be completed by
 * finish_input(). */
static float *
batch_input (VadBatch *b, int j)
{
  return b->input + (gsize) j * (VAD_INPUT_SAMPLES + VAD_REFLECTED_SAMPLES);
}

/* The graph's right reflection padding (numpy's "reflect": the edge sample
 * is not repeated) as far as the last frame reads it. */
static void
finish_input (float *x)
{
  for (int j = 0; j < VAD_REFLECTED_SAMPLES; j++)
    x[VAD_INPUT_SAMPLES + j] = x[VAD_INPUT_SAMPLES - 2 - j];
}

/* The STFT magnitudes of chunks [0, n) into act[0]: for each, 4 frames
 * (frame t starts at input sample 128 t) of 129 bins. */
static void
stft_magnitudes (const WhisperVad *vad, VadBatch *b, int n)
{
  const gsize act_stride = act_floats (vad, 0);
  memset (b->spectrum, 0, sizeof (float) * n * VAD_STFT_FRAMES * VAD_STFT_ROWS);
  for (int j = 0; j < n; j++)
    for (int t = 0; t < VAD_STFT_FRAMES; t++) {
      b->y_rows[j * VAD_STFT_FRAMES + t] =
        b->spectrum + ((gsize) j * VAD_STFT_FRAMES + t) * VAD_STFT_ROWS;
      b->x_rows[j * VAD_STFT_FRAMES + t] = batch_input (b, j) + t * VAD_STFT_HOP;
    }
  vad->accumulate (n * VAD_STFT_FRAMES, b->y_rows, b->x_rows, VAD_STFT_ROWS, VAD_STFT_WINDOW,
                   vad->basis_t);
  for (int j = 0; j < n; j++)
    for (int t = 0; t < VAD_STFT_FRAMES; t++) {
      const float *re = b->y_rows[j * VAD_STFT_FRAMES + t], *im = re + VAD_STFT_BINS;
      float *out = b->act[0] + j * act_stride + (gsize) (1 + t) * VAD_STFT_BINS;
      for (int k = 0; k < VAD_STFT_BINS; k++)
        out[k] = sqrtf (re[k] * re[k] + im[k] * im[k]);
    }
}

/* Convolution l (kernel 3, padding 1) + ReLU of chunks [0, n): act[l] ->
 * act[l + 1]. Output step t, tap k reads row t * stride + k of the input's
 * padded buffer. */
static void
conv_relu (const WhisperVad *vad, VadBatch *b, int l, int n)
{
  const VadConv *conv = &vad->conv[l];
  const int ci = conv->in_channels, co = conv->out_channels, steps = layer_steps[l + 1];
  const gsize in_stride = act_floats (vad, l), out_stride = act_floats (vad, l + 1);
  for (int j = 0; j < n; j++)
    for (int t = 0; t < steps; t++) {
      float *y = b->act[l + 1] + j * out_stride + (gsize) (1 + t) * co;
      memcpy (y, conv->bias, sizeof (float) * co);
      b->y_rows[j * steps + t] = y;
    }
  for (int k = 0; k < VAD_CONV_KERNEL; k++) {
    for (int j = 0; j < n; j++)
      for (int t = 0; t < steps; t++)
        b->x_rows[j * steps + t] =
          b->act[l] + j * in_stride + (gsize) (t * conv->stride + k) * ci;
    vad->accumulate (n * steps, b->y_rows, b->x_rows, co, ci,
                     conv->weight_t + (gsize) k * ci * co);
  }
  for (int r = 0; r < n * steps; r++)
    for (int o = 0; o < co; o++)
      b->y_rows[r][o] = b->y_rows[r][o] > 0.0f ? b->y_rows[r][o] : 0.0f;
}

/* Everything before the LSTM's recurrent product, for chunks [0, n) whose
 * inputs are in place: gates[j] = LSTM biases + input weights x features. */
static void
encode_batch (const WhisperVad *vad, VadBatch *b, int n)
{
  stft_magnitudes (vad, b, n);
  for (int l = 0; l < VAD_N_CONV; l++)
    conv_relu (vad, b, l, n);
  const gsize feature_stride = act_floats (vad, VAD_N_CONV);
  for (int j = 0; j < n; j++) {
    b->y_rows[j] = b->gates + (gsize) j * VAD_GATES;
    memcpy (b->y_rows[j], vad->lstm_bias, sizeof (float) * VAD_GATES);
    b->x_rows[j] = b->act[VAD_N_CONV] + j * feature_stride + VAD_HIDDEN; /* past the zero row */
  }
  vad->accumulate (n, b->y_rows, b->x_rows, VAD_GATES, VAD_HIDDEN, vad->lstm_w_t);
}

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
  batch_init (&state->batch, vad, 1);
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
  batch_clear (&state->batch);
  g_free (state);
}

static inline float
sigmoid (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

/* One LSTM step from gates = biases + input product (encode_batch()):
 * adds the recurrent product, updates h and c, and returns the speech
 * probability (https://onnx.ai/onnx/operators/onnx__LSTM.html, default
 * activations, gates in the order input, output, forget, cell; then ReLU(h),
 * the 1x1 convolution and a sigmoid). */
static float
lstm_step (const WhisperVad *vad, float *gates, float *h, float *c)
{
  float *y_rows[1] = { gates };
  const float *x_rows[1] = { h };
  vad->accumulate (1, y_rows, x_rows, VAD_GATES, VAD_HIDDEN, vad->lstm_r_t);
  float logit = vad->out_bias;
  for (int j = 0; j < VAD_HIDDEN; j++) {
    const float in_gate = sigmoid (gates[j]);
    const float out_gate = sigmoid (gates[VAD_HIDDEN + j]);
    const float forget_gate = sigmoid (gates[2 * VAD_HIDDEN + j]);
    const float cell = tanhf (gates[3 * VAD_HIDDEN + j]);
    c[j] = forget_gate * c[j] + in_gate * cell;
    h[j] = out_gate * tanhf (c[j]);
    if (h[j] > 0.0f)
      logit += vad->out_weight[j] * h[j];
  }
  return sigmoid (logit);
}

float
whisper_vad_state_push (WhisperVadState *state, const float chunk[WHISPER_VAD_CHUNK_SAMPLES])
{
  g_return_val_if_fail (state != NULL && chunk != NULL, 0.0f);
  float *x = batch_input (&state->batch, 0);
  memcpy (x, state->context, sizeof state->context);
  memcpy (x + VAD_CONTEXT_SAMPLES, chunk, sizeof (float) * WHISPER_VAD_CHUNK_SAMPLES);
  finish_input (x);
  memcpy (state->context, chunk + WHISPER_VAD_CHUNK_SAMPLES - VAD_CONTEXT_SAMPLES,
          sizeof state->context);
  encode_batch (state->vad, &state->batch, 1);
  return lstm_step (state->vad, state->batch.gates, state->h, state->c);
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
  float h[VAD_HIDDEN] = { 0 }, c[VAD_HIDDEN] = { 0 };
  VadBatch b;
  batch_init (&b, vad, VAD_BATCH);

  for (gsize first = 0; first < n_chunks; first += VAD_BATCH) {
    const int count = (int) MIN ((gsize) VAD_BATCH, n_chunks - first);
    for (int j = 0; j < count; j++) {
      const gsize i = first + j;
      float *x = batch_input (&b, j);
      /* context: the last 64 samples of the previous chunk, zeros for the
       * first (SileroVADModel.__call__'s np.roll of the chunks' ends) */
      if (i == 0)
        memset (x, 0, sizeof (float) * VAD_CONTEXT_SAMPLES);
      else
        memcpy (x, pcm + i * WHISPER_VAD_CHUNK_SAMPLES - VAD_CONTEXT_SAMPLES,
                sizeof (float) * VAD_CONTEXT_SAMPLES);
      float *chunk = x + VAD_CONTEXT_SAMPLES;
      if (i + 1 < n_chunks) {
        memcpy (chunk, pcm + i * WHISPER_VAD_CHUNK_SAMPLES,
                sizeof (float) * WHISPER_VAD_CHUNK_SAMPLES);
      } else {
        /* The last chunk: the rest of the buffer padded with zeros
         * (get_speech_timestamps' np.pad), and its last 64 samples zero, as
         * SileroVADModel.__call__ writes zeros there through its view
         * `context = batched_audio[..., -64:]; context[-1] = 0`. */
        const gsize rest = n - i * WHISPER_VAD_CHUNK_SAMPLES;
        const gsize kept = MIN (rest, (gsize) (WHISPER_VAD_CHUNK_SAMPLES - VAD_CONTEXT_SAMPLES));
        memset (chunk, 0, sizeof (float) * WHISPER_VAD_CHUNK_SAMPLES);
        if (kept > 0)
          memcpy (chunk, pcm + i * WHISPER_VAD_CHUNK_SAMPLES, sizeof (float) * kept);
      }
      finish_input (x);
    }
    encode_batch (vad, &b, count);
    for (int j = 0; j < count; j++)
      probs[first + j] = lstm_step (vad, b.gates + (gsize) j * VAD_GATES, h, c);
  }
  batch_clear (&b);
}
