/* gstwhispervads.h: the voice activity detectors of the process, shared
 * between elements.
 *
 * A WhisperVad is read-only weights (engine/vad/whisper-vad.h: any number
 * of threads may use one, each stream with its own WhisperVadState), so
 * elements that load the same detector file (however its path is spelled)
 * share one copy, as they share engines (gstwhisperengines.h); it is freed
 * when the last element releases it. */
#pragma once

#include <glib.h>

#include <whisper/whisper.h>

G_BEGIN_DECLS

/* The detector in the file at `path`: the one already loaded, or a new one
 * (whisper_vad_new(), whose errors it returns). Give it back with
 * gst_whisper_vads_release(). */
WhisperVad *gst_whisper_vads_acquire (const gchar *path, GError **error);

/* Gives back one gst_whisper_vads_acquire(); the last one frees the
 * detector. NULL is ignored. */
void gst_whisper_vads_release (WhisperVad *vad);

/* How many elements use `vad` (0 when it is not in the registry). */
guint gst_whisper_vads_users (WhisperVad *vad);

G_END_DECLS
