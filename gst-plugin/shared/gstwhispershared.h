/* gstwhispershared.h: objects of the process shared between elements,
 * loaded once per key and reference-counted: the engines and the voice
 * activity detectors (gstwhisperregistries.h).
 *
 * The first element to ask for a key loads the object; whoever asks for
 * the same key while it loads waits for that load instead of loading it
 * again (different keys load concurrently); the last element to release
 * it frees it. A failed load is not remembered: the next caller tries
 * again and gets its own error. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Makes the object of a key from `args` (the caller's), or NULL with
 * `error` set. Called without the registry's lock. */
typedef gpointer (*GstWhisperSharedLoad) (gconstpointer args, GError **error);

typedef struct {
  const gchar *what;           /* what the objects are, for messages */
  GDestroyNotify free_object;  /* frees an object, outside the lock */
  /* private: zeroed by GST_WHISPER_SHARED_INIT */
  GMutex lock;
  GCond loaded;
  GHashTable *by_key;     /* key -> entry (owned) */
  GHashTable *by_object;  /* object -> the same entry */
} GstWhisperShared;

/* For a static registry: GST_WHISPER_SHARED_INIT ("engine", whisper_engine_unref). */
#define GST_WHISPER_SHARED_INIT(what_, free_)                                                      \
  { .what = (what_), .free_object = (GDestroyNotify) (free_) }

/* The object of `key`: the one already loaded, or load (args, error). Give
 * it back with gst_whisper_shared_release (). */
gpointer gst_whisper_shared_acquire (GstWhisperShared *shared, const gchar *key,
                                     GstWhisperSharedLoad load, gconstpointer args,
                                     GError **error);

/* Gives back one gst_whisper_shared_acquire (); the last one frees the
 * object. NULL is ignored. */
void gst_whisper_shared_release (GstWhisperShared *shared, gpointer object);

/* How many acquisitions of `object` are not released (0 when it is not in
 * the registry). */
guint gst_whisper_shared_users (GstWhisperShared *shared, gpointer object);

/* `path` as the file system names it (symbolic links, "..", "." resolved),
 * so that two spellings of one file share a key; as given when it does not
 * exist (loading it will say so). */
gchar *gst_whisper_shared_canonical_path (const gchar *path);

G_END_DECLS
