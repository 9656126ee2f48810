/* whisper-vad-private.h: the loaded Silero VAD v6 network, shared by the
 * weight-file loader (whisper-vad-file.c) and the network
 * (whisper-vad-net.c). Not installed.
 *
 * The network, per chunk of 64 context + 512 new samples (the graph of
 * faster-whisper's silero_vad_v6.onnx, tools/silero-vad-convert.py):
 *
 *   576 samples -> reflection padding -> STFT as a convolution (kernel 256,
 *   hop 128, the first frame dropped: 4 frames of 129 magnitudes) ->
 *   4 x (Conv1d k=3 pad 1 + ReLU; strides 1, 2, 2, 1: 129x4 -> 128x4 ->
 *   64x2 -> 64x1 -> 128x1) -> LSTM (128 -> 128, one step) -> ReLU(h) ->
 *   1x1 Conv1d -> sigmoid.
 *
 * The weights are kept transposed from the file's [out][in] layouts to
 * [in][out]: every layer is then one kind of product (vad_accumulate_fn),
 * whose vector versions load contiguous weights for a block of outputs. */
#pragma once

#include "whisper-vad.h"

G_BEGIN_DECLS

#define VAD_CONTEXT_SAMPLES 64
#define VAD_INPUT_SAMPLES (VAD_CONTEXT_SAMPLES + WHISPER_VAD_CHUNK_SAMPLES) /* 576 */
#define VAD_STFT_WINDOW 256
#define VAD_STFT_HOP 128
/* The ONNX graph pads the 576 samples by 128 on each side (reflect) and
 * drops the first of the 5 frames; the 4 kept start at 0, 128, 256, 384 of
 * the input and the last one reads 64 reflected samples past its end. */
#define VAD_STFT_FRAMES 4
#define VAD_REFLECTED_SAMPLES 64
#define VAD_STFT_BINS 129
#define VAD_STFT_ROWS (2 * VAD_STFT_BINS) /* real parts, then imaginary */
#define VAD_HIDDEN 128
#define VAD_GATES (4 * VAD_HIDDEN) /* ONNX order: input, output, forget, cell */
#define VAD_N_CONV 4
#define VAD_CONV_KERNEL 3

/* y[r][o] += sum over i = 0, 1, ... of x[r][i] * wt[i][o], for the n_rows
 * rows r and o < n_out: row r reads n_in values at x_rows[r] and adds into
 * n_out values at y_rows[r]; wt is [n_in][n_out]. Input rows may overlap
 * (the STFT's frames do). Every output sums its inputs in the same order
 * whatever the number of rows, so a row gives the same bits alone or in a
 * batch. */
typedef void (*vad_accumulate_fn) (int n_rows, float *const *y_rows, const float *const *x_rows,
                                   int n_out, int n_in, const float *wt);

/* The fastest version this CPU has (whisper-vad-kernel.c). */
vad_accumulate_fn vad_pick_accumulate (void);

typedef struct {
  int in_channels;
  int out_channels;
  int stride;
  float *weight_t; /* [kernel][in][out] */
  float *bias;     /* [out] */
} VadConv;

struct _WhisperVad {
  char *path;
  vad_accumulate_fn accumulate;
  float *basis_t;                /* [VAD_STFT_WINDOW][VAD_STFT_ROWS] */
  VadConv conv[VAD_N_CONV];
  float *lstm_w_t;               /* [VAD_HIDDEN (input)][VAD_GATES] */
  float *lstm_r_t;               /* [VAD_HIDDEN (h)][VAD_GATES] */
  float *lstm_bias;              /* [VAD_GATES]: input + recurrent biases */
  float *out_weight;             /* [VAD_HIDDEN] */
  float out_bias;
};

/* Reads and checks the weight file into a new WhisperVad (whisper-vad-file.c). */
WhisperVad *whisper_vad_load_file (const char *path, GError **error);

G_END_DECLS
