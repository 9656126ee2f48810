/* whisper-error.h: the engine's error domain and codes, shared by every
 * layer (public API, model loaders, backends, the dlopen'd CUDA module).
 *
 * The domain is looked up by its name rather than registered by one
 * library's function, so that the CUDA module, which links no engine
 * library and may be unloaded after a failed start, names the same domain
 * without keeping a pointer into itself in GLib's quark table. Errors are
 * rare, so the lookup's cost does not matter. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

static inline GQuark
whisper_engine_error_quark (void)
{
  return g_quark_from_string ("whisper-engine-error-quark");
}

#define WHISPER_ENGINE_ERROR (whisper_engine_error_quark ())

typedef enum {
  WHISPER_ENGINE_ERROR_DEVICE,     /* requested device unavailable */
  WHISPER_ENGINE_ERROR_SETTING,    /* an option has an invalid value */
  WHISPER_ENGINE_ERROR_AUDIO,      /* audio cannot be read or is invalid */
  WHISPER_ENGINE_ERROR_CANCELLED,  /* whisper_stream_cancel() was called */
  WHISPER_ENGINE_ERROR_FAILED,     /* anything else */
} WhisperEngineError;

G_END_DECLS
