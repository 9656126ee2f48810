/* gstwhisperengines.c: the engines of the process, shared between elements
 * (gstwhisperengines.h).
 *
 * One lock guards the registry: a table from the key of an engine's
 * settings to its entry, and one from the engine to the same entry. The
 * lock is not held while a model loads: the entry is marked loading and
 * whoever asks for it meanwhile waits on the condition, so an engine is
 * loaded once however many elements go to READY together. */
#include "gstwhisperengines.h"

#include <limits.h>
#include <stdlib.h>

typedef struct {
  gchar *key;
  WhisperEngine *engine;  /* NULL while loading */
  guint users;            /* acquired and not released */
  gboolean loading;
} EngineEntry;

static GMutex registry_lock;
static GCond registry_loaded;
static GHashTable *by_key;     /* key -> EngineEntry (owned) */
static GHashTable *by_engine;  /* WhisperEngine -> EngineEntry */

static void
entry_free (gpointer data)
{
  EngineEntry *entry = data;

  g_free (entry->key);
  g_free (entry);
}

static void
registry_init_locked (void)
{
  if (by_key)
    return;
  by_key = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, entry_free);
  by_engine = g_hash_table_new (g_direct_hash, g_direct_equal);
}

/* The model file as the file system names it (symbolic links, "..", "."
 * resolved), so that two spellings of one path share; as given when it
 * does not exist (loading it will say so). */
static gchar *
canonical_model_path (const char *path)
{
  char resolved[PATH_MAX];
  g_autofree gchar *owned = NULL;

  if (path == NULL)
    path = owned = whisper_engine_default_model_path ();
  if (realpath (path, resolved))
    return g_strdup (resolved);
  return g_strdup (path);
}

/* Every setting that makes two engines differ, and the group. */
static gchar *
engine_key (const WhisperEngineOptions *options, const gchar *group)
{
  g_autofree gchar *model = canonical_model_path (options->model_path);

  return g_strdup_printf ("group=%s\nmodel=%s\ndevice=%d\nprecision=%d\nthreads=%d\n"
      "context=%d\nheads=%s", group ? group : "", model, (int) options->device,
      (int) options->precision, options->n_threads,
      options->encoder_context, options->alignment_heads ? options->alignment_heads : "");
}

WhisperEngine *
gst_whisper_engines_acquire (const WhisperEngineOptions *options, const gchar *group,
    GError **error)
{
  g_autofree gchar *key = engine_key (options, group);
  EngineEntry *entry;
  WhisperEngine *engine;

  g_mutex_lock (&registry_lock);
  registry_init_locked ();
  for (;;) {
    entry = g_hash_table_lookup (by_key, key);
    if (entry == NULL || !entry->loading)
      break;
    g_cond_wait (&registry_loaded, &registry_lock);
  }
  if (entry) {
    entry->users++;
    engine = entry->engine;
    g_mutex_unlock (&registry_lock);
    return engine;
  }
  entry = g_new0 (EngineEntry, 1);
  entry->key = g_strdup (key);
  entry->loading = TRUE;
  g_hash_table_insert (by_key, entry->key, entry);
  g_mutex_unlock (&registry_lock);

  engine = whisper_engine_new (options, error);

  g_mutex_lock (&registry_lock);
  entry->loading = FALSE;
  if (engine) {
    entry->engine = engine;
    entry->users = 1;
    g_hash_table_insert (by_engine, engine, entry);
  } else {
    /* the waiters try for themselves (and say why it fails) */
    g_hash_table_remove (by_key, key);
  }
  g_cond_broadcast (&registry_loaded);
  g_mutex_unlock (&registry_lock);
  return engine;
}

void
gst_whisper_engines_release (WhisperEngine *engine)
{
  EngineEntry *entry;
  WhisperEngine *last = NULL;

  if (engine == NULL)
    return;
  g_mutex_lock (&registry_lock);
  entry = by_engine ? g_hash_table_lookup (by_engine, engine) : NULL;
  if (entry == NULL) {
    g_mutex_unlock (&registry_lock);
    g_critical ("gst_whisper_engines_release: engine %p was not acquired", (void *) engine);
    return;
  }
  if (--entry->users == 0) {
    last = entry->engine;
    g_hash_table_remove (by_engine, engine);
    g_hash_table_remove (by_key, entry->key);
  }
  g_mutex_unlock (&registry_lock);
  /* the weights are freed outside the lock: others may load meanwhile */
  g_clear_pointer (&last, whisper_engine_unref);
}

guint
gst_whisper_engines_users (WhisperEngine *engine)
{
  EngineEntry *entry;
  guint users = 0;

  g_mutex_lock (&registry_lock);
  entry = by_engine ? g_hash_table_lookup (by_engine, engine) : NULL;
  if (entry)
    users = entry->users;
  g_mutex_unlock (&registry_lock);
  return users;
}
