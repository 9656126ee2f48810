/* whisper-engine-struct.h: struct _WhisperEngine, the engine's state
 * (core/ only: whisper-engine.c, whisper-stream.c, whisper-batched.c). The
 * parts below core/ get what they need of it as arguments: the network
 * (WhisperNet, net/whisper-net.h), the word-timing model
 * (WhisperTimingModel, timing/whisper-alignment.h), the token table. */
#pragma once

#include "whisper.h"
#include "whisper-alignment.h"
#include "whisper-bpe.h"
#include "whisper-decoder-pool.h"
#include "whisper-mel.h"
#include "whisper-net.h"
#include "whisper-step-batcher.h"

G_BEGIN_DECLS

struct _WhisperEngine {
  gint ref_count;
  WhisperEngineInfo info;  /* every per-model constant, resolved once */
  char *model_path;
  char *device_name;

  /* the network on its backend: cached copies of the info fields the hot
   * paths use, the weights, the work buffers and the compute lock */
  WhisperNet net;
  WhisperMel *mel;

  GBytes **tokens;   /* n_vocab entries (NULL where the vocabulary has none) */
  int n_tokens;
  gsize max_token_bytes;  /* longest text token (below EOT): sizes the piece decoders */
  WhisperBpe *bpe;        /* text -> ids of the tokens below EOT */

  WhisperLogitConfig logit_config;
  gint32 *suppress_ids;
  int n_suppress_ids;

  /* streams waiting for a decoder state, in turn (whisper-stream.c's
   * lease_decoder_locked(); taken before net.compute_lock, never while
   * holding it) */
  WhisperTurnLock lease_turn;

  WhisperAlignmentHeads align_heads;  /* word timestamps (whisper-alignment.h) */
  WhisperTimingModel timing;          /* what word timing reads: net, info, heads, tokens */

  WhisperDecoderPool *decoders;  /* decoder states lent to streams (whisper-decoder-pool.h) */
  WhisperStepBatcher *steps;     /* the streams' decode steps, batched (whisper-step-batcher.h) */

  /* The window whose encoder output net.enc.h holds (whisper-stream-window.c's
   * encode_window(), under net.compute_lock): its encoder input
   * [2 * max_encoder_length, n_mels] and encoder length (0: none known). A
   * stream that shares encoder output (whisper_stream_set_share_encoder)
   * and encodes the same input again uses it instead. */
  float *encoded_window;
  int encoded_length;
};

G_END_DECLS
