/* whisper-alignment.h: word-level alignment (internal).
 *
 * The alignment heads (whisper-alignment-heads.c): the decoder's
 * cross-attention heads whose attention follows the speech in time.
 *
 * The alignment pass (whisper-alignment.c): CTranslate2's
 * WhisperReplica::align() and compute_alignments() (src/models/whisper.cc in
 * https://github.com/OpenNMT/CTranslate2) and its negative DTW (src/dtw.cc):
 * the decoder over [sot sequence, no_timestamps, text tokens, eot] with the
 * window's cross K/V, the alignment heads' cross-attention probabilities over
 * the window's frames, standardised over tokens, median-filtered (width 7),
 * averaged over heads, then the DTW path through text tokens x frames. */
#pragma once

#include "whisper-net.h"
#include "whisper.h"

G_BEGIN_DECLS

typedef struct _WhisperModel WhisperModel;

/* Alignment heads of the decoder : n pairs, sorted by
 * layer, with where they came from. */
typedef struct {
  int n;
  int *layer;
  int *head;
  char *source;
} WhisperAlignmentHeads;

/* What word timing reads of the engine's model, handed down by the engine
 * (core/), which fills one in when it loads: the network, its token ids
 * and dimensions, the alignment heads and the token table (raw bytes of
 * n_tokens ids, text/whisper-tokenizer.h). */
typedef struct {
  WhisperNet *net;
  const WhisperEngineInfo *info;
  const WhisperAlignmentHeads *heads;
  GBytes *const *tokens;
  int n_tokens;
} WhisperTimingModel;

/* Resolves `out`: from `option` ("layer,head;layer,head...")
 * when given, else the model's config.json list, else (ggml files) the set
 * OpenAI publishes for the model the dimensions identify, else every head of
 * the last half of the decoder layers (as CTranslate2's converter does).
 * Fails on a malformed option or a head out of range. */
gboolean whisper_alignment_heads_resolve (WhisperAlignmentHeads *out, const WhisperModel *model,
                                          const WhisperEngineInfo *info, const char *option,
                                          GError **error);
void whisper_alignment_heads_clear (WhisperAlignmentHeads *heads);
/* FALSE, with a message saying where heads were looked for, when the
 * engine has none (a config.json with an empty list). */
gboolean whisper_alignment_heads_check (const WhisperAlignmentHeads *heads, const char *model_path,
                                        GError **error);
/* Parses "3,1;4,2" into pairs (g_free), checking layer < n_layer and
 * head < n_head. `what` names the setting in messages. */
gboolean whisper_alignment_heads_parse (const char *text, int n_layer, int n_head, const char *what,
                                        int **pairs_out, int *n_out, GError **error);

/* Capture of the alignment heads' cross-attention during decoder forward
 * passes (WhisperDecoderState.capture). */
struct _WhisperAlignCapture {
  /* first: hook.layer = whisper_align_capture_layer(), called by the
   * decoder through it (net/whisper-net.h: the decoder does not call up
   * into timing/) */
  WhisperCaptureHook hook;
  const WhisperAlignmentHeads *heads;
  int n_frames;       /* keys the softmax runs over (num_frames / 2) */
  int n_rows;         /* query rows of the pass being captured (set by the capture
                         when `per_step`) */
  gboolean per_step;  /* rows follow each forward pass (per-step capture) */
  float *device;      /* backend memory [n_text_ctx, encoder_length]: one head's probabilities */
  float *host;        /* [n_heads][n_rows][n_frames] */
  gsize host_size;
};

/* Called by the decoder after layer `layer`'s cross-attention of n query rows
 * (q: [n, d] backend memory; kv: the layer's cross K/V). */
void whisper_align_capture_layer (WhisperAlignCapture *c, WhisperNet *net,
                                  const WhisperDecoderState *st, int layer, const float *q, int n);

/* One pair of the DTW path: text row and frame. */
typedef struct {
  int text;
  int frame;
} WhisperAlignStep;

typedef struct {
  WhisperAlignStep *path;     /* g_free */
  int n_path;
  float *text_token_probs;    /* [n_text]: softmax over the text vocabulary at each
                                 text position, taken at the text token */
  int n_text;
} WhisperAlignResult;

void whisper_align_result_clear (WhisperAlignResult *r);

/* The alignment pass of one window whose cross K/V is in st. sot_sequence:
 * the window's start sequence (sot[, language, task]); text: its text tokens;
 * n_frames: the window's mel frames (segment_size). Caller holds the
 * compute lock. */
gboolean whisper_align_window (WhisperDecoderState *st, const WhisperTimingModel *tm,
                               const gint32 *sot_sequence, int n_sot, const gint32 *text,
                               int n_text, int n_frames, WhisperAlignResult *result,
                               GError **error);

/* The post-processing on host probabilities probs[n_heads][n_rows][n_frames]
 * (softmax already applied): standardise over rows, median filter, mean over
 * heads, DTW over rows first_row .. first_row + n_text. Exposed for tests. */
void whisper_align_postprocess (const float *probs, int n_heads, int n_rows, int n_frames,
                                int first_row, int n_text, int median_width,
                                WhisperAlignResult *result);

/* CTranslate2's negative_dtw() on x[n, m]; path (g_free) and its length. */
WhisperAlignStep *whisper_negative_dtw (const float *x, int n, int m, int *n_path);

/* Per decode step: argmax frame of the mean over alignment heads of the
 * captured probabilities of query row `row`; -1 when none were captured. */
int whisper_align_capture_argmax (const WhisperAlignCapture *c, int n_heads, int row);

/* Per decode step capture (WhisperTokenEvent.aligned_time): buffers for
 * every query row of a window's passes, sized once from the engine. */
WhisperAlignCapture *whisper_align_step_capture_new (const WhisperTimingModel *tm, GError **error);
void whisper_align_step_capture_free (WhisperAlignCapture *c, const WhisperTimingModel *tm);
/* Starts a window of n_frames mel frames. */
void whisper_align_step_capture_start (WhisperAlignCapture *c, int n_frames);
/* Seconds of the frame the last captured pass's last query row attends to
 * most (mean over the alignment heads). */
double whisper_align_step_time (const WhisperAlignCapture *c, const WhisperTimingModel *tm,
                                double window_start);

G_END_DECLS
