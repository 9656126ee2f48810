/* whisper-net.h: the network on a backend (net/): the engine's resolved
 * network (WhisperNet), one stream's decoder state, the encoder and the
 * decoder passes. Everything here takes the WhisperNet it runs on; nothing
 * here sees the engine. */
#pragma once

#include "backend.h"
#include "whisper-error.h"
#include "turn-lock.h"
#include "whisper-weights.h"

G_BEGIN_DECLS

/* The decoder's work buffers of a forward pass over one state (backend
 * memory: [n_text_ctx, d | 3d | 4d], sel [2, d]), sized once from the
 * cached constants. Nothing in them outlives a pass (a pass's results are
 * the state's caches and logits), and passes run under the compute lock,
 * so one set serves every decoder state of the engine. */
typedef struct {
  float *x, *h, *qkv, *attn, *q, *ffn, *sel;
} WhisperDecoderWork;

/* Encoder work buffers (backend memory), sized once from the cached
 * maximum encoder length. Used under the engine's compute lock. One block
 * holds them all: the convolutions' buffers (conv1, scratch) and the
 * layers' (qkv, attn, ffn) are never in use at the same time, so they
 * share its last part (whisper-encoder.c). */
typedef struct {
  float *block;     /* the one allocation (freed by whisper_encoder_buffers_clear ()) */
  /* L = max_encoder_length rows; a call uses its first encoder_length */
  float *mel;       /* [2L, n_mels] time-major input window */
  float *x;         /* [L, d] residual stream */
  float *h;         /* [L, d] normed / output (read by the decoder after the pass) */
  /* the convolutions only */
  float *conv1;     /* [2L, d] */
  float *scratch;   /* im2col: [2L, 3 n_mels] for conv1, [L, 3d] for conv2 */
  /* the layers only, where conv1 and scratch were */
  float *qkv;       /* [L, 3d] */
  float *attn;      /* [L, d] */
  float *ffn;       /* [L, 4d] */
} WhisperEncoderBuffers;

/* The network on a backend, as the engine resolved it once: its
 * constants, the uploaded weights, the encoder's and the decoder's work
 * buffers and the lock under which passes run. The engine (core/) owns one
 * and hands it to every part that runs the network. */
typedef struct {
  int d, n_mels, max_encoder_length, n_text_ctx, n_vocab;
  int n_audio_head, n_text_head, n_audio_layer, n_text_layer;

  WhisperBackend *backend;
  WhisperDeviceWeights *weights;

  /* one stream computes on the backend at a time, in the order they ask
   * (turn-lock.h) */
  WhisperTurnLock compute_lock;
  WhisperEncoderBuffers enc;
  WhisperDecoderWork dec_work;  /* the decoder's work buffers, shared by every state */
} WhisperNet;

typedef struct _WhisperDecoderState WhisperDecoderState;

/* Work buffers of the network (whisper-net.c): each plan[i].p gets
 * plan[i].n floats of backend memory; FALSE at the first that fails (the
 * ones made before stay set, for whisper_net_free_buffers()). */
typedef struct {
  float **p;
  size_t n;
} WhisperNetBuffer;
gboolean whisper_net_alloc_buffers (WhisperNet *net, const WhisperNetBuffer *plan, gsize n_plan,
                                    GError **error);
/* Frees the buffers of plan (those set) and clears their pointers. */
void whisper_net_free_buffers (WhisperNet *net, const WhisperNetBuffer *plan, gsize n_plan);

/* Word timestamps (timing/whisper-alignment.h) see the decoder's
 * cross-attention queries through a capture: an object whose first member
 * is this hook; the decoder calls hook->layer() for every layer of a pass.
 * The decoder knows nothing else of it. */
typedef struct _WhisperAlignCapture WhisperAlignCapture;
typedef struct {
  void (*layer) (WhisperAlignCapture *c, WhisperNet *net, const WhisperDecoderState *st,
                 int layer, const float *q, int n);
} WhisperCaptureHook;

/* Decoder state of one stream: KV caches and logits, backend memory,
 * sized from the engine's cached constants when the stream is created. */
struct _WhisperDecoderState {
  int n_layers;
  int self_len;              /* rows of each self-attention cache (n_text_ctx) */
  int encoder_length;        /* keys of the window's cross-attention: its encoder frames
                                (whisper_decoder_set_audio()), at most the
                                max_encoder_length rows of each cache */
  int n_slots;               /* self-attention caches per layer: one per sequence decoded
                                together (beams, best-of samples); at least 1 */
  float **self_kv;           /* per layer [n_slots, self_len, 2d]: k | v of each slot */
  float **cross_kv;          /* per layer [max_encoder_length, 2d]: k | v, shared by every slot */
  /* per layer the same K/V in float16, head-major (backend.h's half_kv_write()),
   * read by the decode steps; NULL unless the backend offers it (CPU,
   * precision=fast and int8). In fast the float32 copy stays for the
   * prompt passes and the word timestamps; with the backend's half_kv_only
   * (int8) the prompt passes read the float16 copy too, and the float32
   * one is computed only where keep_cross_f32 was set at
   * whisper_decoder_set_audio() (cross_f32_valid): cross_kv[0] is then the
   * scratch of each layer's K/V on its way to float16. */
  uint16_t **cross_half;
  gboolean keep_cross_f32;   /* word timestamps: their alignment reads cross_kv */
  gboolean cross_f32_valid;  /* cross_kv holds the window's K/V */
  float *logits;             /* [max(2, n_slots), n_vocab] */
  int last_cross_key_length;
  /* Word timestamps: when set, the decoder hands every layer's
   * cross-attention queries to its hook (WhisperCaptureHook), i.e.
   * whisper_align_capture_layer() (whisper-alignment.h). NULL by default. */
  WhisperAlignCapture *capture;
};

gboolean whisper_encoder_buffers_init (WhisperNet *net, GError **error);
void whisper_encoder_buffers_clear (WhisperNet *net);
/* Runs the encoder over its first encoder_length frames
 * (1..max_encoder_length: the positional embedding's first encoder_length
 * rows) on the first 2 * encoder_length mel frames of net->enc.mel; the
 * output [encoder_length, d] is left in net->enc.h. Caller holds
 * the compute lock. */
void whisper_encoder_run (WhisperNet *net, int encoder_length);

/* Copies mel[:, first:first+n_frames] (mel is [n_mels, stride] row-major)
 * into the encoder's time-major input window of 2 * encoder_length frames
 * (encoder_length at most max_encoder_length; n_frames <= 2 * encoder_length),
 * through host_window
 * (2 * max_encoder_length * n_mels floats), zero-padded in the log-mel
 * domain. Caller holds the compute lock. */
void whisper_encoder_load_window (WhisperNet *net, const float *mel, gsize stride, gsize first,
                                  int n_frames, int encoder_length, float *host_window);
/* Its two halves: the copy into host_window alone, and the upload of the
 * copy to the encoder's input (a caller that already holds the encoder
 * output of the same window skips the upload and the run). */
void whisper_encoder_fill_window (WhisperNet *net, const float *mel, gsize stride, gsize first,
                                  int n_frames, int encoder_length, float *host_window);
void whisper_encoder_upload_window (WhisperNet *net, int encoder_length,
                                    const float *host_window);

gboolean whisper_decoder_work_init (WhisperNet *net, GError **error);
void whisper_decoder_work_clear (WhisperNet *net);
gboolean whisper_decoder_state_init (WhisperDecoderState *st, WhisperNet *net, GError **error);
void whisper_decoder_state_clear (WhisperDecoderState *st, WhisperNet *net);
/* The state's caches are not needed until its next window (which writes
 * what it reads): their memory goes back to the system where the backend
 * can hand it back (backend.h, discard). */
void whisper_decoder_state_discard (WhisperDecoderState *st, WhisperNet *net);
/* Cross-attention K/V of every layer from the encoder output of
 * encoder_length frames in net->enc.h; the window's steps attend over those
 * keys (st->encoder_length). Caller holds the compute lock. */
void whisper_decoder_set_audio (WhisperDecoderState *st, WhisperNet *net, int encoder_length);
/* Forward pass of n tokens at positions pos0.. (appends to the self-attention
 * caches). Logits of rows `rows[0..n_rows)` (n_rows <= 2, indices into
 * tokens) are left in st->logits. Caller holds the compute lock. */
void whisper_decoder_forward (WhisperDecoderState *st, WhisperNet *net, const gint32 *tokens, int n,
                              int pos0, const int *rows, int n_rows);

/* Grows the state to `n_slots` self-attention caches (the contents of
 * every cache are lost when it grows; nothing happens when it has that
 * many already). Not for the decode path: call it before a transcription. */
gboolean whisper_decoder_state_ensure_slots (WhisperDecoderState *st, WhisperNet *net, int n_slots,
                                             GError **error);
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
 * states at their own positions) as one forward pass in the network's work
 * buffers (at most n_text_ctx rows): every linear layer reads its weight
 * once for all the rows, the attention of each part runs over its own
 * caches. The logits of part p's row i are left in
 * parts[p].st->logits + i * n_vocab. A single part writes them there
 * directly; several go through batch_logits ([batch_rows, n_vocab], room for
 * all their rows; unused, may be NULL, for one part). On a backend whose
 * linear gives every row the bits of its one-row call for up to
 * max_exact_rows rows (WhisperBackend), every part then gets the logits it
 * gets alone. Caller holds the compute lock. */
void whisper_decoder_forward_batch (WhisperNet *net, float *batch_logits, int batch_rows,
                                    const WhisperStepRows *parts, int n_parts);
/* Copies the first n_positions rows of slot src's self-attention caches
 * into slot dst (a beam that takes over another beam's history). */
void whisper_decoder_copy_slot (WhisperDecoderState *st, WhisperNet *net, int dst, int src,
                                int n_positions);

G_END_DECLS
