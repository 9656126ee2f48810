/* gstwhisperregistries.h: what the elements of a process share, each in a
 * registry of gstwhispershared.h (loaded once per key, reference-counted,
 * freed when the last element gives it back):
 *
 *  - the engines: elements that ask for the same model (the same file,
 *    however it is spelled), device, precision, thread count, maximum
 *    encoder length and engine group get the same WhisperEngine: its
 *    weights are loaded once and its one thread pool serves them all,
 *    while each element keeps its own WhisperStream (KV caches, prompt,
 *    options);
 *  - the voice activity detectors: a WhisperVad is read-only weights (any
 *    number of threads may use one, each stream with its own
 *    WhisperVadState), so elements that load the same detector file share
 *    one copy, whatever their engine group.
 *
 * Give an object back with gst_whisper_shared_release (&gst_whisper_engines,
 * engine) or (&gst_whisper_vads, vad); gst_whisper_shared_users () counts
 * the elements that hold it. */
#pragma once

#include <glib.h>

#include <whisper/whisper.h>

#include "shared/gstwhispershared.h"

G_BEGIN_DECLS

extern GstWhisperShared gst_whisper_engines;
extern GstWhisperShared gst_whisper_vads;

/* The engine for `options` in `group` (NULL or "": the process's shared
 * group): the one already loaded, or a new one. An element calling this
 * while another loads the same engine waits for that load instead of
 * loading it again; different engines load concurrently. Fails as
 * whisper_engine_new(). */
WhisperEngine *gst_whisper_engines_acquire (const WhisperEngineOptions *options,
                                            const gchar *group, GError **error);

/* The detector in the file at `path`: the one already loaded, or a new one
 * (whisper_vad_new(), whose errors it returns). */
WhisperVad *gst_whisper_vads_acquire (const gchar *path, GError **error);

G_END_DECLS
