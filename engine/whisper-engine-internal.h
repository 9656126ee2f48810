/* whisper-engine-internal.h: the engine's and the stream's state, shared by
 * whisper-engine.c, whisper-stream.c, whisper-encoder.c and whisper-decoder.c. */
#pragma once

#include "backend.h"
#include "turn-lock.h"
#include "whisper-bpe.h"
#include "whisper-engine.h"
#include "whisper-mel.h"
#include "whisper-weights.h"

G_BEGIN_DECLS

/* Alignment heads of the decoder (whisper-alignment.h): n pairs, sorted by
 * layer, with where they came from. */
typedef struct {
  int n;
  int *layer;
  int *head;
  char *source;
} WhisperAlignmentHeads;

typedef struct _WhisperAlignCapture WhisperAlignCapture;
typedef struct _WhisperDecoderPool WhisperDecoderPool;
typedef struct _WhisperStepBatcher WhisperStepBatcher;

/* The decoder's work buffers of a forward pass over one state (backend
 * memory: [n_text_ctx, d | 3d | 4d], sel [2, d]), sized once from the
 * cached constants. Nothing in them outlives a pass (a pass's results are
 * the state's caches and logits), and passes run under the compute lock,
 * so one set serves every decoder state of the engine. */
typedef struct {
  float *x, *h, *qkv, *attn, *q, *ffn, *sel;
} WhisperDecoderWork;

/* Encoder work buffers (backend memory), sized once from the cached
 * maximum encoder length. Used under the engine's compute lock. */
typedef struct {
  float *mel;       /* [2T, n_mels] time-major input window */
  float *conv1;     /* [2T, d] */
  float *scratch;   /* im2col: [2T, max(n_mels, d) * 3] */
  float *x;         /* [T, d] residual stream */
  float *h;         /* [T, d] normed / output */
  float *qkv;       /* [T, 3d] */
  float *attn;      /* [T, d] */
  float *ffn;       /* [T, 4d] */
} WhisperEncoderBuffers;

struct _WhisperEngine {
  gint ref_count;
  WhisperEngineInfo info;  /* every per-model constant, resolved once */
  char *model_path;
  char *device_name;

  /* Cached copies of info fields the hot paths use. */
  int d, n_mels, max_encoder_length, n_text_ctx, n_vocab;
  int n_audio_head, n_text_head, n_audio_layer, n_text_layer;

  WhisperBackend *backend;
  WhisperDeviceWeights *weights;
  WhisperMel *mel;

  GBytes **tokens;   /* n_vocab entries (NULL where the vocabulary has none) */
  int n_tokens;
  gsize max_token_bytes;  /* longest text token (below EOT): sizes the piece decoders */
  WhisperBpe *bpe;        /* text -> ids of the tokens below EOT */

  WhisperLogitConfig logit_config;
  gint32 *suppress_ids;
  int n_suppress_ids;

  /* one stream computes on the backend at a time, in the order they ask
   * (turn-lock.h) */
  WhisperTurnLock compute_lock;
  /* streams waiting for a decoder state, in turn (whisper-stream.c's
   * lease_decoder_locked(); taken before compute_lock, never while holding it) */
  WhisperTurnLock lease_turn;
  WhisperEncoderBuffers enc;

  WhisperAlignmentHeads align_heads;  /* word timestamps (whisper-alignment.h) */

  WhisperDecoderPool *decoders;  /* decoder states lent to streams (whisper-decoder-pool.h) */
  WhisperDecoderWork dec_work;   /* the decoder's work buffers, shared by every state */
  WhisperStepBatcher *steps;     /* the streams' decode steps, batched (whisper-step-batcher.h) */
};

/* Decoder state of one stream: KV caches and logits, backend memory,
 * sized from the engine's cached constants when the stream is created. */
typedef struct {
  int n_layers;
  int self_len;              /* rows of each self-attention cache (n_text_ctx) */
  int cross_len;             /* keys of the window's cross-attention: its encoder frames
                                (whisper_decoder_set_audio()), at most the
                                max_encoder_length rows of each cache */
  int n_slots;               /* self-attention caches per layer: one per sequence decoded
                                together (beams, best-of samples); at least 1 */
  float **self_kv;           /* per layer [n_slots, self_len, 2d]: k | v of each slot */
  float **cross_kv;          /* per layer [cross_len, 2d]: k | v, shared by every slot */
  /* per layer the same K/V in float16, head-major (backend.h's half_kv_write()),
   * read by the decode steps; NULL unless the backend offers it (CPU,
   * precision=fast). The float32 copy stays for the prompt passes and the
   * word timestamps. */
  uint16_t **cross_half;
  float *logits;             /* [max(2, n_slots), n_vocab] */
  int last_cross_key_length;
  /* Word timestamps: when set, the decoder hands every layer's
   * cross-attention queries to capture->layer(), i.e.
   * whisper_align_capture_layer() (whisper-alignment.h). NULL by default. */
  WhisperAlignCapture *capture;
} WhisperDecoderState;

gboolean whisper_encoder_buffers_init (WhisperEngine *engine, GError **error);
void whisper_encoder_buffers_clear (WhisperEngine *engine);
/* Runs the encoder over its first T frames (1..max_encoder_length: the
 * positional embedding's first T rows) on the first 2T mel frames of
 * engine->enc.mel; the output [T, d] is left in engine->enc.h. Caller holds
 * the compute lock. */
void whisper_encoder_run (WhisperEngine *engine, int T);

/* Copies mel[:, first:first+n_frames] (mel is [n_mels, stride] row-major)
 * into the encoder's time-major input window of 2T frames (T encoder
 * frames, at most max_encoder_length; n_frames <= 2T), through host_window
 * (2 * max_encoder_length * n_mels floats), zero-padded in the log-mel
 * domain. Caller holds the compute lock. */
void whisper_engine_load_window (WhisperEngine *e, const float *mel, gsize stride, gsize first,
                                 int n_frames, int T, float *host_window);

gboolean whisper_decoder_work_init (WhisperEngine *engine, GError **error);
void whisper_decoder_work_clear (WhisperEngine *engine);
gboolean whisper_decoder_state_init (WhisperDecoderState *st, WhisperEngine *engine,
                                     GError **error);
void whisper_decoder_state_clear (WhisperDecoderState *st, WhisperEngine *engine);
/* The state's caches are not needed until its next window (which writes
 * what it reads): their memory goes back to the system where the backend
 * can hand it back (backend.h, discard). */
void whisper_decoder_state_discard (WhisperDecoderState *st, WhisperEngine *engine);
/* Cross-attention K/V of every layer from the encoder output of T frames
 * in engine->enc.h; the window's steps attend over those T keys
 * (st->cross_len). Caller holds the compute lock. */
void whisper_decoder_set_audio (WhisperDecoderState *st, WhisperEngine *engine, int T);
/* Forward pass of n tokens at positions pos0.. (appends to the self-attention
 * caches). Logits of rows `rows[0..n_rows)` (n_rows <= 2, indices into
 * tokens) are left in st->logits. Caller holds the compute lock. */
void whisper_decoder_forward (WhisperDecoderState *st, WhisperEngine *engine,
                              const gint32 *tokens, int n, int pos0, const int *rows,
                              int n_rows);

/* Grows the state to `n_slots` self-attention caches (the contents of
 * every cache are lost when it grows; nothing happens when it has that
 * many already). Not for the decode path: call it before a transcription. */
gboolean whisper_decoder_state_ensure_slots (WhisperDecoderState *st, WhisperEngine *engine,
                                             int n_slots, GError **error);
/* One stream's share of a decode step: row i feeds tokens[i] at position
 * `pos` and reads and extends the self-attention cache of slot slots[i] of
 * `st` (all slots distinct, < st->n_slots); the rows read st's cross K/V.
 * With `capture`, st's alignment capture (when set) sees the rows'
 * cross-attention queries (word timestamps of greedy steps). */
typedef struct {
  WhisperDecoderState *st;
  const gint32 *tokens;
  const int *slots;
  int n_rows;
  int pos;
  gboolean capture;
} WhisperStepRows;

/* One decode step of the rows of parts[0..n_parts) (several streams'
 * states at their own positions) as one forward pass in the engine's work
 * buffers (at most n_text_ctx rows): every linear layer reads its weight
 * once for all the rows, the attention of each part runs over its own
 * caches. The logits of part p's row i are left in
 * parts[p].st->logits + i * n_vocab. A single part writes them there
 * directly; several go through batch_logits ([batch_rows, n_vocab], room for
 * all their rows; unused, may be NULL, for one part). On a backend whose
 * linear gives every row the bits of its one-row call for up to
 * max_exact_rows rows (WhisperBackend), every part then gets the logits it
 * gets alone. Caller holds the compute lock. */
void whisper_decoder_forward_batch (WhisperEngine *engine, float *batch_logits, int batch_rows,
                                    const WhisperStepRows *parts, int n_parts);
/* Copies the first n_positions rows of slot src's self-attention caches
 * into slot dst (a beam that takes over another beam's history). */
void whisper_decoder_copy_slot (WhisperDecoderState *st, WhisperEngine *engine, int dst, int src,
                                int n_positions);

G_END_DECLS
