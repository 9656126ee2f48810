/* call-interpose-glib.c: GLib's environment, thread, hashing and
 * allocation functions, counted (call-counter.h) and forwarded through
 * dlsym (RTLD_NEXT). */
#include "call-interpose.h"

#include <stdarg.h>

/* ---- GLib: environment, threads -------------------------------------- */

const gchar *
g_getenv (const gchar *name)
{
  call_counter_count (CALL_SLOT_G_GETENV, CALLER ());
  REAL (g_getenv);
  return real_ptr (name);
}

GThread *
g_thread_new (const gchar *name, GThreadFunc func, gpointer data)
{
  call_counter_count (CALL_SLOT_G_THREAD_NEW, CALLER ());
  REAL (g_thread_new);
  return real_ptr (name, func, data);
}

GThread *
g_thread_try_new (const gchar *name, GThreadFunc func, gpointer data, GError **error)
{
  call_counter_count (CALL_SLOT_G_THREAD_TRY_NEW, CALLER ());
  REAL (g_thread_try_new);
  return real_ptr (name, func, data, error);
}

gpointer
g_thread_join (GThread *thread)
{
  call_counter_count (CALL_SLOT_G_THREAD_JOIN, CALLER ());
  REAL (g_thread_join);
  return real_ptr (thread);
}

/* ---- GLib: hashing ---------------------------------------------------- */

GHashTable *
g_hash_table_new (GHashFunc hash, GEqualFunc equal)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_NEW, CALLER ());
  REAL (g_hash_table_new);
  return real_ptr (hash, equal);
}

GHashTable *
g_hash_table_new_full (GHashFunc hash, GEqualFunc equal, GDestroyNotify key_free,
                       GDestroyNotify value_free)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_NEW_FULL, CALLER ());
  REAL (g_hash_table_new_full);
  return real_ptr (hash, equal, key_free, value_free);
}

gpointer
g_hash_table_lookup (GHashTable *table, gconstpointer key)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_LOOKUP, CALLER ());
  REAL (g_hash_table_lookup);
  return real_ptr (table, key);
}

gboolean
g_hash_table_lookup_extended (GHashTable *table, gconstpointer key, gpointer *orig_key,
                              gpointer *value)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_LOOKUP_EXTENDED, CALLER ());
  REAL (g_hash_table_lookup_extended);
  return real_ptr (table, key, orig_key, value);
}

gboolean
g_hash_table_contains (GHashTable *table, gconstpointer key)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_CONTAINS, CALLER ());
  REAL (g_hash_table_contains);
  return real_ptr (table, key);
}

gboolean
g_hash_table_insert (GHashTable *table, gpointer key, gpointer value)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_INSERT, CALLER ());
  REAL (g_hash_table_insert);
  return real_ptr (table, key, value);
}

gboolean
g_hash_table_replace (GHashTable *table, gpointer key, gpointer value)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_REPLACE, CALLER ());
  REAL (g_hash_table_replace);
  return real_ptr (table, key, value);
}

gboolean
g_hash_table_add (GHashTable *table, gpointer key)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_ADD, CALLER ());
  REAL (g_hash_table_add);
  return real_ptr (table, key);
}

gboolean
g_hash_table_remove (GHashTable *table, gconstpointer key)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_REMOVE, CALLER ());
  REAL (g_hash_table_remove);
  return real_ptr (table, key);
}

gboolean
g_hash_table_steal (GHashTable *table, gconstpointer key)
{
  call_counter_count (CALL_SLOT_G_HASH_TABLE_STEAL, CALLER ());
  REAL (g_hash_table_steal);
  return real_ptr (table, key);
}

guint
g_str_hash (gconstpointer v)
{
  call_counter_count (CALL_SLOT_G_STR_HASH, CALLER ());
  REAL (g_str_hash);
  return real_ptr (v);
}

guint
g_direct_hash (gconstpointer v)
{
  call_counter_count (CALL_SLOT_G_DIRECT_HASH, CALLER ());
  REAL (g_direct_hash);
  return real_ptr (v);
}

guint
g_int_hash (gconstpointer v)
{
  call_counter_count (CALL_SLOT_G_INT_HASH, CALLER ());
  REAL (g_int_hash);
  return real_ptr (v);
}

guint
g_int64_hash (gconstpointer v)
{
  call_counter_count (CALL_SLOT_G_INT64_HASH, CALLER ());
  REAL (g_int64_hash);
  return real_ptr (v);
}

guint
g_double_hash (gconstpointer v)
{
  call_counter_count (CALL_SLOT_G_DOUBLE_HASH, CALLER ());
  REAL (g_double_hash);
  return real_ptr (v);
}

GQuark
g_quark_from_string (const gchar *string)
{
  call_counter_count (CALL_SLOT_G_QUARK_FROM_STRING, CALLER ());
  REAL (g_quark_from_string);
  return real_ptr (string);
}

GQuark
g_quark_from_static_string (const gchar *string)
{
  call_counter_count (CALL_SLOT_G_QUARK_FROM_STATIC_STRING, CALLER ());
  REAL (g_quark_from_static_string);
  return real_ptr (string);
}

GQuark
g_quark_try_string (const gchar *string)
{
  call_counter_count (CALL_SLOT_G_QUARK_TRY_STRING, CALLER ());
  REAL (g_quark_try_string);
  return real_ptr (string);
}

/* ---- GLib: allocation ------------------------------------------------- */

gpointer
g_malloc (gsize n)
{
  call_counter_count (CALL_SLOT_G_MALLOC, CALLER ());
  REAL (g_malloc);
  return real_ptr (n);
}

gpointer
g_malloc0 (gsize n)
{
  call_counter_count (CALL_SLOT_G_MALLOC0, CALLER ());
  REAL (g_malloc0);
  return real_ptr (n);
}

gpointer
g_realloc (gpointer mem, gsize n)
{
  call_counter_count (CALL_SLOT_G_REALLOC, CALLER ());
  REAL (g_realloc);
  return real_ptr (mem, n);
}

gpointer
g_try_malloc (gsize n)
{
  call_counter_count (CALL_SLOT_G_TRY_MALLOC, CALLER ());
  REAL (g_try_malloc);
  return real_ptr (n);
}

gpointer
g_try_malloc0 (gsize n)
{
  call_counter_count (CALL_SLOT_G_TRY_MALLOC0, CALLER ());
  REAL (g_try_malloc0);
  return real_ptr (n);
}

gpointer
g_try_realloc (gpointer mem, gsize n)
{
  call_counter_count (CALL_SLOT_G_TRY_REALLOC, CALLER ());
  REAL (g_try_realloc);
  return real_ptr (mem, n);
}

gpointer
g_malloc_n (gsize n_blocks, gsize block_size)
{
  call_counter_count (CALL_SLOT_G_MALLOC_N, CALLER ());
  REAL (g_malloc_n);
  return real_ptr (n_blocks, block_size);
}

gpointer
g_malloc0_n (gsize n_blocks, gsize block_size)
{
  call_counter_count (CALL_SLOT_G_MALLOC0_N, CALLER ());
  REAL (g_malloc0_n);
  return real_ptr (n_blocks, block_size);
}

gpointer
g_realloc_n (gpointer mem, gsize n_blocks, gsize block_size)
{
  call_counter_count (CALL_SLOT_G_REALLOC_N, CALLER ());
  REAL (g_realloc_n);
  return real_ptr (mem, n_blocks, block_size);
}

void
g_free (gpointer mem)
{
  call_counter_count (CALL_SLOT_G_FREE, CALLER ());
  REAL (g_free);
  real_ptr (mem);
}

gpointer
g_slice_alloc (gsize size)
{
  call_counter_count (CALL_SLOT_G_SLICE_ALLOC, CALLER ());
  REAL (g_slice_alloc);
  return real_ptr (size);
}

gpointer
g_slice_alloc0 (gsize size)
{
  call_counter_count (CALL_SLOT_G_SLICE_ALLOC0, CALLER ());
  REAL (g_slice_alloc0);
  return real_ptr (size);
}

void
g_slice_free1 (gsize size, gpointer mem)
{
  call_counter_count (CALL_SLOT_G_SLICE_FREE1, CALLER ());
  REAL (g_slice_free1);
  real_ptr (size, mem);
}

gpointer
g_memdup2 (gconstpointer mem, gsize size)
{
  call_counter_count (CALL_SLOT_G_MEMDUP2, CALLER ());
  REAL (g_memdup2);
  return real_ptr (mem, size);
}

gchar *
g_strdup (const gchar *str)
{
  call_counter_count (CALL_SLOT_G_STRDUP, CALLER ());
  REAL (g_strdup);
  return real_ptr (str);
}

gchar *
g_strndup (const gchar *str, gsize n)
{
  call_counter_count (CALL_SLOT_G_STRNDUP, CALLER ());
  REAL (g_strndup);
  return real_ptr (str, n);
}

gchar *
g_strdup_vprintf (const gchar *format, va_list args)
{
  call_counter_count (CALL_SLOT_G_STRDUP_VPRINTF, CALLER ());
  REAL (g_strdup_vprintf);
  return real_ptr (format, args);
}

gchar *
g_strdup_printf (const gchar *format, ...)
{
  call_counter_count (CALL_SLOT_G_STRDUP_PRINTF, CALLER ());
  REAL (g_strdup_vprintf);
  va_list args;
  va_start (args, format);
  gchar *s = real_ptr (format, args);
  va_end (args);
  return s;
}

GString *
g_string_new (const gchar *init)
{
  call_counter_count (CALL_SLOT_G_STRING_NEW, CALLER ());
  REAL (g_string_new);
  return real_ptr (init);
}

GString *
g_string_sized_new (gsize size)
{
  call_counter_count (CALL_SLOT_G_STRING_SIZED_NEW, CALLER ());
  REAL (g_string_sized_new);
  return real_ptr (size);
}

gchar *
g_string_free (GString *string, gboolean free_segment)
{
  call_counter_count (CALL_SLOT_G_STRING_FREE, CALLER ());
  REAL (g_string_free);
  return real_ptr (string, free_segment);
}

GArray *
g_array_new (gboolean zero_terminated, gboolean clear, guint element_size)
{
  call_counter_count (CALL_SLOT_G_ARRAY_NEW, CALLER ());
  REAL (g_array_new);
  return real_ptr (zero_terminated, clear, element_size);
}

GPtrArray *
g_ptr_array_new (void)
{
  call_counter_count (CALL_SLOT_G_PTR_ARRAY_NEW, CALLER ());
  REAL (g_ptr_array_new);
  return real_ptr ();
}

GByteArray *
g_byte_array_new (void)
{
  call_counter_count (CALL_SLOT_G_BYTE_ARRAY_NEW, CALLER ());
  REAL (g_byte_array_new);
  return real_ptr ();
}

GBytes *
g_bytes_new (gconstpointer data, gsize size)
{
  call_counter_count (CALL_SLOT_G_BYTES_NEW, CALLER ());
  REAL (g_bytes_new);
  return real_ptr (data, size);
}
