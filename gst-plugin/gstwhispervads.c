/* gstwhispervads.c: the voice activity detectors of the process, shared
 * between elements (see gstwhispervads.h). The registry lock is held while
 * a detector loads: its file is 1.2 MB, read in milliseconds, and holding
 * the lock means two elements never load the same file twice. */
#include "gstwhispervads.h"

#include <limits.h>
#include <stdlib.h>

typedef struct {
  gchar *path;      /* canonical */
  WhisperVad *vad;
  guint users;
} VadEntry;

static GMutex registry_lock;
static GHashTable *by_path;  /* canonical path -> VadEntry (owned) */
static GHashTable *by_vad;   /* WhisperVad -> VadEntry */

static void
entry_free (gpointer data)
{
  VadEntry *entry = data;

  g_free (entry->path);
  g_free (entry);
}

static gchar *
canonical_path (const gchar *path)
{
  char resolved[PATH_MAX];

  if (realpath (path, resolved))
    return g_strdup (resolved);
  return g_strdup (path);
}

WhisperVad *
gst_whisper_vads_acquire (const gchar *path, GError **error)
{
  g_autofree gchar *key = NULL;
  VadEntry *entry;
  WhisperVad *vad;

  g_return_val_if_fail (path != NULL, NULL);
  key = canonical_path (path);
  g_mutex_lock (&registry_lock);
  if (!by_path) {
    by_path = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, entry_free);
    by_vad = g_hash_table_new (g_direct_hash, g_direct_equal);
  }
  entry = g_hash_table_lookup (by_path, key);
  if (entry) {
    entry->users++;
    vad = entry->vad;
    g_mutex_unlock (&registry_lock);
    return vad;
  }
  /* the path as given: errors name the file the user wrote */
  vad = whisper_vad_new (path, error);
  if (vad) {
    entry = g_new0 (VadEntry, 1);
    entry->path = g_steal_pointer (&key);
    entry->vad = vad;
    entry->users = 1;
    g_hash_table_insert (by_path, entry->path, entry);
    g_hash_table_insert (by_vad, vad, entry);
  }
  g_mutex_unlock (&registry_lock);
  return vad;
}

void
gst_whisper_vads_release (WhisperVad *vad)
{
  VadEntry *entry;
  WhisperVad *last = NULL;

  if (vad == NULL)
    return;
  g_mutex_lock (&registry_lock);
  entry = by_vad ? g_hash_table_lookup (by_vad, vad) : NULL;
  if (entry == NULL) {
    g_mutex_unlock (&registry_lock);
    g_critical ("gst_whisper_vads_release: detector %p was not acquired", (void *) vad);
    return;
  }
  if (--entry->users == 0) {
    last = entry->vad;
    g_hash_table_remove (by_vad, vad);
    g_hash_table_remove (by_path, entry->path);
  }
  g_mutex_unlock (&registry_lock);
  g_clear_pointer (&last, whisper_vad_free);
}

guint
gst_whisper_vads_users (WhisperVad *vad)
{
  VadEntry *entry;
  guint users = 0;

  g_mutex_lock (&registry_lock);
  entry = by_vad ? g_hash_table_lookup (by_vad, vad) : NULL;
  if (entry)
    users = entry->users;
  g_mutex_unlock (&registry_lock);
  return users;
}
