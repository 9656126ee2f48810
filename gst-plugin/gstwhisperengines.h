/* gstwhisperengines.h: the engines of the process, shared between elements.
 *
 * Elements that ask for the same model (the same file, however it is
 * spelled), device, thread count, encoder context and engine group get the
 * same WhisperEngine: its weights are loaded once and its one thread pool
 * serves them all, while each element keeps its own WhisperStream (KV
 * caches, prompt, options). The engine is freed when the last element
 * releases it. */
#pragma once

#include <glib.h>

#include <whisper/whisper.h>

G_BEGIN_DECLS

/* The engine for `options` in `group` (NULL or "": the process's shared
 * group): the one already loaded, or a new one. An element calling this
 * while another loads the same engine waits for that load instead of
 * loading it again; different engines load concurrently. Give the result
 * back with gst_whisper_engines_release(). Fails as whisper_engine_new(). */
WhisperEngine *gst_whisper_engines_acquire (const WhisperEngineOptions *options,
                                            const gchar *group, GError **error);

/* Gives back one gst_whisper_engines_acquire(); the last one frees the
 * engine. NULL is ignored. */
void gst_whisper_engines_release (WhisperEngine *engine);

/* How many elements use `engine` (0 when it is not in the registry). */
guint gst_whisper_engines_users (WhisperEngine *engine);

G_END_DECLS
