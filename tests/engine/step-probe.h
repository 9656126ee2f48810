/* step-probe.h: a test-only wrapper around a backend's operation table
 * (WhisperBackendOps, engine/src/backend/backend.h) that cuts a transcription
 * into decode steps and records, for each step, the key count of every
 * attention call and every counted call that is not arithmetic
 * (call-counter.h).
 *
 * One decode step, as the engine issues it (decode_window() and
 * decode_step() in engine/src/core/whisper-stream-window.c), is everything the engine does
 * from the choice of one token to the choice of the next:
 *
 *   begins  when the op before the step's first op returns: the last op
 *           of the step before, or of the window's prompt pass (its logit
 *           choice); so a step holds the host's work between two forward
 *           passes (the logit choice on the host, the token's bookkeeping
 *           and text piece, the cancellation check, the step's set-up);
 *   its first op is its graph_begin when the backend records decode graphs
 *           (CUDA), else its embed of one token at a position > 0 (a prompt
 *           pass embeds at position 0);
 *   ends    when its last op returns: the op before the next step's first
 *           op, or the last op before the window ends (the engine then
 *           leaves the decode loop; what it does with the window's tokens
 *           is per window, not per step).
 *
 * The window ends at the first op that no decode step issues: the upload
 * of the next window's log-mel, an encoder op, the next prompt pass (an
 * embed at position 0 or of several tokens, a linear, layer norm,
 * attention or row copy over several rows), or step_probe_arm (FALSE).
 * The application's token callback is not the engine's work: the test
 * brackets its own callback with step_probe_pause(). Only armed time is
 * recorded. One probe at a time. */
#pragma once

#include "backend.h"
#include "call-counter.h"

G_BEGIN_DECLS

#define PROBE_MAX_STEPS 2048
#define PROBE_MAX_LAYERS 64

typedef struct {
  int window;                      /* 0 for the first window of the transcription */
  int position;                    /* decoder position of the step's input token */
  int n_embed;                     /* single-token embed ops in the step (1) */
  int n_self, n_cross;             /* attention calls: causal (self) and not (cross) */
  int self_keys[PROBE_MAX_LAYERS];  /* n_kv of each self-attention call */
  int cross_keys[PROBE_MAX_LAYERS]; /* n_kv of each cross-attention call */
  guint64 calls[CALL_N_SLOTS];     /* counted calls inside the step */
  gpointer callers[CALL_N_SLOTS];  /* return address of the last one, per slot */
} ProbeStep;

typedef struct _StepProbe StepProbe;

/* Swaps be->ops for the wrapper table (every op the backend has forwards
 * to it; the ones it lacks stay NULL). */
StepProbe *step_probe_attach (WhisperBackend *be);
/* Puts the backend's own table back and frees the probe. */
void step_probe_detach (StepProbe *probe);

/* Records from now on (TRUE) or no longer (FALSE: the open step ends at
 * its last op). */
void step_probe_arm (StepProbe *probe, gboolean armed);
/* Counted calls are not counted while paused (the test's own callback). */
void step_probe_pause (StepProbe *probe, gboolean paused);

int step_probe_n_steps (const StepProbe *probe);
const ProbeStep *step_probe_step (const StepProbe *probe, int i);
/* Prompt passes seen while armed (one per window). */
int step_probe_n_windows (const StepProbe *probe);
/* More steps than PROBE_MAX_STEPS, or more attention calls in one step than
 * PROBE_MAX_LAYERS: the records are incomplete. */
gboolean step_probe_overflowed (const StepProbe *probe);

G_END_DECLS
