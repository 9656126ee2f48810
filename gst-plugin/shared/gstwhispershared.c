/* gstwhispershared.c: objects shared between elements (gstwhispershared.h).
 *
 * One lock guards a registry: a table from the key to its entry, and one
 * from the object to the same entry. The lock is not held while an object
 * loads: the entry is marked loading and whoever asks for it meanwhile
 * waits on the condition. */
#include "shared/gstwhispershared.h"

#include <limits.h>
#include <stdlib.h>

typedef struct {
  gchar *key;
  gpointer object;   /* NULL while loading */
  guint users;       /* acquired and not released */
  gboolean loading;
} SharedEntry;

static void
entry_free (gpointer data)
{
  SharedEntry *entry = data;

  g_free (entry->key);
  g_free (entry);
}

static void
init_locked (GstWhisperShared *shared)
{
  if (shared->by_key)
    return;
  shared->by_key = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, entry_free);
  shared->by_object = g_hash_table_new (g_direct_hash, g_direct_equal);
}

gpointer
gst_whisper_shared_acquire (GstWhisperShared *shared, const gchar *key,
    GstWhisperSharedLoad load, gconstpointer args, GError **error)
{
  SharedEntry *entry;
  gpointer object;

  g_mutex_lock (&shared->lock);
  init_locked (shared);
  for (;;) {
    entry = g_hash_table_lookup (shared->by_key, key);
    if (entry == NULL || !entry->loading)
      break;
    g_cond_wait (&shared->loaded, &shared->lock);
  }
  if (entry) {
    entry->users++;
    object = entry->object;
    g_mutex_unlock (&shared->lock);
    return object;
  }
  entry = g_new0 (SharedEntry, 1);
  entry->key = g_strdup (key);
  entry->loading = TRUE;
  g_hash_table_insert (shared->by_key, entry->key, entry);
  g_mutex_unlock (&shared->lock);

  object = load (args, error);

  g_mutex_lock (&shared->lock);
  entry->loading = FALSE;
  if (object) {
    entry->object = object;
    entry->users = 1;
    g_hash_table_insert (shared->by_object, object, entry);
  } else {
    /* the waiters try for themselves (and say why it fails) */
    g_hash_table_remove (shared->by_key, key);
  }
  g_cond_broadcast (&shared->loaded);
  g_mutex_unlock (&shared->lock);
  return object;
}

void
gst_whisper_shared_release (GstWhisperShared *shared, gpointer object)
{
  SharedEntry *entry;
  gpointer last = NULL;

  if (object == NULL)
    return;
  g_mutex_lock (&shared->lock);
  entry = shared->by_object ? g_hash_table_lookup (shared->by_object, object) : NULL;
  if (entry == NULL) {
    g_mutex_unlock (&shared->lock);
    g_critical ("%s %p released but not acquired", shared->what, object);
    return;
  }
  if (--entry->users == 0) {
    last = entry->object;
    g_hash_table_remove (shared->by_object, object);
    g_hash_table_remove (shared->by_key, entry->key);
  }
  g_mutex_unlock (&shared->lock);
  /* freed outside the lock: others may load meanwhile */
  if (last)
    shared->free_object (last);
}

guint
gst_whisper_shared_users (GstWhisperShared *shared, gpointer object)
{
  SharedEntry *entry;
  guint users = 0;

  g_mutex_lock (&shared->lock);
  entry = shared->by_object ? g_hash_table_lookup (shared->by_object, object) : NULL;
  if (entry)
    users = entry->users;
  g_mutex_unlock (&shared->lock);
  return users;
}

gchar *
gst_whisper_shared_canonical_path (const gchar *path)
{
  char resolved[PATH_MAX];

  if (realpath (path, resolved))
    return g_strdup (resolved);
  return g_strdup (path);
}
