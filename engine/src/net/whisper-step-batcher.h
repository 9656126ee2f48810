/* whisper-step-batcher.h: the decode steps of an engine's streams, run as
 * one forward pass where several streams are decoding at once.
 *
 * A decode step is bound by memory: it reads every decoder weight to
 * produce a few rows. Streams that share an engine
 * (gst-plugin/gstwhisperengines.c) decode on their own threads; each step
 * of each stream goes through the batcher, which runs the steps of every
 * stream that is ready as one whisper_decoder_forward_batch(): the weights
 * are read once for all of them, each stream's attention runs over its own
 * caches, and each stream chooses its tokens from its own logits on its own
 * thread, as continuous batching does (streams join and leave between
 * steps).
 *
 * How a batch forms (a group commit, as databases commit the log records
 * of concurrent transactions together): a stream posts its rows and lets
 * go of the compute lock. The streams of the last batch are expected back
 * (they are choosing their next tokens, or in their token callbacks); when
 * every one of them has posted its next rows or left (its window's steps
 * are over), or about as long as the last pass took has passed (at most
 * WHISPER_STEP_BATCHER_WAIT_US), one of the waiting streams takes every
 * posted step (up to the backend's max_exact_rows rows, in order of
 * posting), runs the pass under the compute lock and wakes the others. A
 * stream alone never waits for anyone: its step runs at once; a stream
 * slow to come back (a token callback that blocks) delays the others' steps
 * by about one pass each, not more.
 *
 * Token identity: on a backend whose linear gives each row the bits of its
 * one-row call up to max_exact_rows rows (the CPU's matrix-vector kernels,
 * the CUDA module's fused GEMV), a stream decoded in a batch gets exactly
 * the tokens it gets alone (tests/engine/test-batched-steps.c). */
#pragma once

#include "whisper-net.h"

G_BEGIN_DECLS

/* How long a ready step waits at most for the streams of the last batch
 * to post theirs: about the duration of the last pass (a stream that takes
 * longer than a pass to choose its next token is not worth the wait),
 * never more than this. Between two steps a stream chooses its tokens
 * (well under a millisecond on the CPU, longer on the CUDA emulator), runs
 * its token callback or waits for the compute lock, which the waiting
 * step needs too. */
#define WHISPER_STEP_BATCHER_WAIT_US 100000

typedef struct _WhisperStepBatcher WhisperStepBatcher;

/* For passes of up to the backend's max_exact_rows rows. */
WhisperStepBatcher *whisper_step_batcher_new (WhisperNet *net, GError **error);
void whisper_step_batcher_free (WhisperStepBatcher *batcher, WhisperNet *net);

/* A stream's place in the batcher (in the stream, zeroed at its creation). */
typedef struct {
  gboolean expected;  /* it ran in the last batch and has not posted or left since */
} WhisperStepMember;

/* Runs the decode step `rows` (of the calling stream, whose membership is
 * `member`), together with the steps other streams post meanwhile.
 * Called with the engine's compute lock held; lets go of it while the step
 * waits and runs, and holds it again on return, when the step's logits are
 * in rows->st->logits. Returns the number of streams whose steps ran in the
 * same pass (1: alone). */
int whisper_step_batcher_run (WhisperStepBatcher *batcher, WhisperNet *net,
                              const WhisperStepRows *rows, WhisperStepMember *member);

/* The stream will not post a step soon (its window's steps are over): the
 * next batch does not wait for it. Harmless when it is not expected. */
void whisper_step_batcher_leave (WhisperStepBatcher *batcher, WhisperStepMember *member);

/* Passes run and steps run in them, since the engine was made (for tests
 * and diagnostics). */
void whisper_step_batcher_counts (WhisperStepBatcher *batcher, guint64 *passes, guint64 *steps);

G_END_DECLS
