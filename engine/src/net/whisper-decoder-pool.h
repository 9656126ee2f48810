/* whisper-decoder-pool.h: the engine's decoder states, lent to its streams
 * one window at a time.
 *
 * A decoder state (whisper-net.h: the self- and cross-attention KV caches
 * and logits, with its decode-step graph; the work buffers of its passes
 * are the network's) holds nothing a stream needs between two windows: a window's
 * audio overwrites the cross K/V and its prompt pass every self-attention
 * row a later step reads. So the engine keeps the states and a stream
 * borrows one for each window (and for language detection): an idle stream
 * holds no KV cache, and the engine holds as many states as streams
 * decode at the same time, not as many as it has streams. How many may
 * decode at once is whisper-stream.c's choice (lease_decoder_locked(): as
 * many as one batch of decode steps takes, whisper-step-batcher.h); a
 * state is never refused, only waited for. On the CPU backend a state's
 * caches (n_text_ctx rows per self-attention slot, max_encoder_length rows
 * of cross-attention, per layer) are sparse memory (backend.h,
 * alloc_sparse): only the rows a window writes take room, a small part of
 * them for a live decode of a few dozen tokens in a buffered window. */
#pragma once

#include "whisper-net.h"

G_BEGIN_DECLS

typedef struct {
  WhisperDecoderState dec;
  WhisperGraph *step_graph;  /* its decode-step graph (backends with graphs), or NULL */
  gboolean warmed;           /* a step has run on it (whisper-stream.c's warm-up) */
  gboolean discarded;        /* unlent, its caches handed back (whisper_decoder_state_discard) */
} WhisperPooledDecoder;

typedef struct _WhisperDecoderPool WhisperDecoderPool;

WhisperDecoderPool *whisper_decoder_pool_new (void);
/* Frees every state; none may be lent. */
void whisper_decoder_pool_free (WhisperDecoderPool *pool, WhisperNet *net);

/* A state with at least `n_slots` self-attention caches: a free one (grown
 * when it has fewer), else a new one. Never waits, so that a token
 * callback may run another stream of the engine. whisper-stream.c calls it
 * with the compute lock held, so that streams waiting for the engine hold
 * no state. */
WhisperPooledDecoder *whisper_decoder_pool_acquire (WhisperDecoderPool *pool, WhisperNet *net,
                                                    int n_slots, GError **error);
/* Gives a state back (its capture cleared). It is the next one lent; the
 * free state it goes in front of, if any, has its caches discarded
 * (whisper_decoder_state_discard ()): of the unlent states only the most
 * recently returned keeps its memory, so that one stream decoding window
 * after window finds its pages, and states that many streams needed at
 * once take no memory while fewer decode. */
void whisper_decoder_pool_release (WhisperDecoderPool *pool, WhisperNet *net,
                                   WhisperPooledDecoder *decoder);

/* Frees a lent state instead of giving it back (one that failed its
 * first step is not kept). */
void whisper_decoder_pool_discard (WhisperDecoderPool *pool, WhisperNet *net,
                                   WhisperPooledDecoder *decoder);

/* Waits until fewer than `limit` states are lent, or until `deadline`
 * (monotonic time); TRUE when fewer are. */
gboolean whisper_decoder_pool_wait_below (WhisperDecoderPool *pool, guint limit, gint64 deadline);

/* States made so far, and of them lent now (for tests and diagnostics). */
void whisper_decoder_pool_counts (WhisperDecoderPool *pool, guint *total, guint *lent);

G_END_DECLS
