/* call-counter.c: see call-counter.h. Each interposed function counts the
 * call (when counting is active) and forwards it to the real one. */
#include "call-counter.h"
#include "../gpu/emu/emu-hooks.h"
#include "whisper-model.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* glibc's allocator entry points: the real malloc family without dlsym
 * (which may itself allocate). */
extern void *__libc_malloc (size_t size);
extern void *__libc_calloc (size_t n, size_t size);
extern void *__libc_realloc (void *ptr, size_t size);
extern void __libc_free (void *ptr);
extern void *__libc_memalign (size_t alignment, size_t size);
extern void *__libc_valloc (size_t size);

static gint active;
static guint64 counts[CALL_N_SLOTS];
static gpointer last_callers[CALL_N_SLOTS];

static WcEmuInRuntimeFunc emu_in_runtime;
static const char *const *emu_names;
static const uint64_t *emu_counts;
static int emu_n;

#define CALL_COUNTER_NAME(e, name, kind) [CALL_SLOT_##e] = name,
static const char *const slot_names[CALL_N_SLOTS] = { CALL_COUNTER_FUNCS (CALL_COUNTER_NAME) };
#undef CALL_COUNTER_NAME
#define CALL_COUNTER_KIND(e, name, kind) [CALL_SLOT_##e] = CALL_KIND_##kind,
static const CallKind slot_kinds[CALL_N_SLOTS] = { CALL_COUNTER_FUNCS (CALL_COUNTER_KIND) };
#undef CALL_COUNTER_KIND

/* Code of libc, GLib and this executable (the interposed functions): a
 * call from there is reported at the first frame outside them, so that a
 * malloc made by g_string_append names the engine's code, not GLib's. */
typedef struct {
  guintptr lo, hi;
} CodeRange;

#define MAX_SKIPPED 16
static CodeRange skipped[MAX_SKIPPED];
static int n_skipped;
static __thread gboolean in_backtrace;

static int
note_code_ranges (struct dl_phdr_info *info, size_t size, void *data)
{
  (void) size, (void) data;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  const gboolean self = name[0] == '\0';
  if (!self && !strstr (name, "/libc.so") && !strstr (name, "/libglib-2.0.so"))
    return 0;
  for (int i = 0; i < info->dlpi_phnum && n_skipped < MAX_SKIPPED; i++) {
    const ElfW (Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
      skipped[n_skipped++] = (CodeRange) { info->dlpi_addr + ph->p_vaddr,
                                           info->dlpi_addr + ph->p_vaddr + ph->p_memsz };
  }
  return 0;
}

static gboolean
is_skipped (gpointer address)
{
  for (int i = 0; i < n_skipped; i++)
    if ((guintptr) address >= skipped[i].lo && (guintptr) address < skipped[i].hi)
      return TRUE;
  return FALSE;
}

static gpointer
outer_caller (gpointer caller)
{
  if (!is_skipped (caller) || in_backtrace)
    return caller;
  void *frames[24];
  in_backtrace = TRUE;
  const int n = backtrace (frames, G_N_ELEMENTS (frames));
  in_backtrace = FALSE;
  for (int i = 0; i < n; i++)
    if (!is_skipped (frames[i]))
      return frames[i];
  return caller;
}

/* Only atomics here, and a backtrace when a counted call is found: this
 * runs inside malloc, on any thread. */
static inline void
count (CallSlot slot, gpointer caller)
{
  if (!__atomic_load_n (&active, __ATOMIC_RELAXED))
    return;
  if (emu_in_runtime && emu_in_runtime ())
    return; /* the CUDA emulator's own work (emu-hooks.h) */
  __atomic_fetch_add (&counts[slot], 1, __ATOMIC_RELAXED);
  __atomic_store_n (&last_callers[slot], outer_caller (caller), __ATOMIC_RELAXED);
}

#define CALLER() __builtin_return_address (0)

/* The next definition of `fn` after the executable's (libc's, GLib's),
 * looked up once. */
#define REAL(fn)                                                                                \
  static __typeof__ (fn) *real_ptr;                                                             \
  if (G_UNLIKELY (!real_ptr))                                                                   \
    real_ptr = (__typeof__ (fn) *) dlsym (RTLD_NEXT, #fn);                                      \
  if (G_UNLIKELY (!real_ptr))                                                                   \
    abort ()

void
call_counter_prepare (void)
{
  if (n_skipped > 0)
    return;
  dl_iterate_phdr (note_code_ranges, NULL);
  void *frames[4];
  backtrace (frames, G_N_ELEMENTS (frames)); /* its first call loads the unwinder */
}

void
call_counter_set_active (gboolean on)
{
  __atomic_store_n (&active, on ? 1 : 0, __ATOMIC_SEQ_CST);
}

void
call_counter_note (CallSlot slot, gpointer caller)
{
  count (slot, caller);
}

void
call_counter_snapshot (CallSnapshot *s)
{
  for (int i = 0; i < CALL_N_SLOTS; i++) {
    s->count[i] = __atomic_load_n (&counts[i], __ATOMIC_RELAXED);
    s->last_caller[i] = __atomic_load_n (&last_callers[i], __ATOMIC_RELAXED);
  }
  s->count[CALL_SLOT_MODEL_LOOKUP] = whisper_model_lookup_count ();
  for (int i = 0; i < emu_n; i++)
    s->count[CALL_SLOT_EMU_FIRST + i] = __atomic_load_n (&emu_counts[i], __ATOMIC_RELAXED);
}

gboolean
call_counter_attach_emulator (gpointer module)
{
  WcEmuInRuntimeFunc in_runtime = (WcEmuInRuntimeFunc) dlsym (module, WC_EMU_IN_RUNTIME_SYMBOL);
  WcEmuResourceCountersFunc counters =
      (WcEmuResourceCountersFunc) dlsym (module, WC_EMU_RESOURCE_COUNTERS_SYMBOL);
  if (!in_runtime || !counters)
    return FALSE;
  const int n = counters (&emu_names, &emu_counts);
  emu_n = MIN (n, CALL_N_SLOTS - CALL_SLOT_EMU_FIRST);
  emu_in_runtime = in_runtime;
  return TRUE;
}

void
call_counter_detach_emulator (void)
{
  emu_in_runtime = NULL;
  emu_n = 0;
  emu_names = NULL;
  emu_counts = NULL;
}

const char *
call_counter_slot_name (int slot)
{
  if (slot >= CALL_SLOT_EMU_FIRST)
    return slot - CALL_SLOT_EMU_FIRST < emu_n ? emu_names[slot - CALL_SLOT_EMU_FIRST] : NULL;
  return slot_names[slot];
}

CallKind
call_counter_slot_kind (int slot)
{
  return slot >= CALL_SLOT_EMU_FIRST ? CALL_KIND_ALLOC : slot_kinds[slot];
}

const char *
call_counter_kind_name (CallKind kind)
{
  static const char *const names[CALL_N_KINDS] = {
    [CALL_KIND_LOOKUP] = "model hyper-parameter lookup",
    [CALL_KIND_GETENV] = "environment read",
    [CALL_KIND_HASH] = "hashing",
    [CALL_KIND_ALLOC] = "allocation",
    [CALL_KIND_THREAD] = "thread creation or join",
  };
  return names[kind];
}

/* ---- libc ------------------------------------------------------------ */

void *
malloc (size_t size)
{
  count (CALL_SLOT_MALLOC, CALLER ());
  return __libc_malloc (size);
}

void *
calloc (size_t n, size_t size)
{
  count (CALL_SLOT_CALLOC, CALLER ());
  return __libc_calloc (n, size);
}

void *
realloc (void *ptr, size_t size)
{
  count (CALL_SLOT_REALLOC, CALLER ());
  return __libc_realloc (ptr, size);
}

void
free (void *ptr)
{
  count (CALL_SLOT_FREE, CALLER ());
  __libc_free (ptr);
}

int
posix_memalign (void **out, size_t alignment, size_t size)
{
  count (CALL_SLOT_POSIX_MEMALIGN, CALLER ());
  if (alignment % sizeof (void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0)
    return EINVAL;
  void *p = __libc_memalign (alignment, size);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void *
aligned_alloc (size_t alignment, size_t size)
{
  count (CALL_SLOT_ALIGNED_ALLOC, CALLER ());
  return __libc_memalign (alignment, size);
}

void *
memalign (size_t alignment, size_t size)
{
  count (CALL_SLOT_MEMALIGN, CALLER ());
  return __libc_memalign (alignment, size);
}

void *
valloc (size_t size)
{
  count (CALL_SLOT_VALLOC, CALLER ());
  return __libc_valloc (size);
}

char *
getenv (const char *name)
{
  count (CALL_SLOT_GETENV, CALLER ());
  REAL (getenv);
  return real_ptr (name);
}

char *
secure_getenv (const char *name)
{
  count (CALL_SLOT_SECURE_GETENV, CALLER ());
  REAL (secure_getenv);
  return real_ptr (name);
}

int
pthread_create (pthread_t *thread, const pthread_attr_t *attr, void *(*start) (void *), void *arg)
{
  count (CALL_SLOT_PTHREAD_CREATE, CALLER ());
  REAL (pthread_create);
  return real_ptr (thread, attr, start, arg);
}

int
pthread_join (pthread_t thread, void **result)
{
  count (CALL_SLOT_PTHREAD_JOIN, CALLER ());
  REAL (pthread_join);
  return real_ptr (thread, result);
}

/* ---- GLib: environment, threads -------------------------------------- */

const gchar *
g_getenv (const gchar *name)
{
  count (CALL_SLOT_G_GETENV, CALLER ());
  REAL (g_getenv);
  return real_ptr (name);
}

GThread *
g_thread_new (const gchar *name, GThreadFunc func, gpointer data)
{
  count (CALL_SLOT_G_THREAD_NEW, CALLER ());
  REAL (g_thread_new);
  return real_ptr (name, func, data);
}

GThread *
g_thread_try_new (const gchar *name, GThreadFunc func, gpointer data, GError **error)
{
  count (CALL_SLOT_G_THREAD_TRY_NEW, CALLER ());
  REAL (g_thread_try_new);
  return real_ptr (name, func, data, error);
}

gpointer
g_thread_join (GThread *thread)
{
  count (CALL_SLOT_G_THREAD_JOIN, CALLER ());
  REAL (g_thread_join);
  return real_ptr (thread);
}

/* ---- GLib: hashing ---------------------------------------------------- */

GHashTable *
g_hash_table_new (GHashFunc hash, GEqualFunc equal)
{
  count (CALL_SLOT_G_HASH_TABLE_NEW, CALLER ());
  REAL (g_hash_table_new);
  return real_ptr (hash, equal);
}

GHashTable *
g_hash_table_new_full (GHashFunc hash, GEqualFunc equal, GDestroyNotify key_free,
                       GDestroyNotify value_free)
{
  count (CALL_SLOT_G_HASH_TABLE_NEW_FULL, CALLER ());
  REAL (g_hash_table_new_full);
  return real_ptr (hash, equal, key_free, value_free);
}

gpointer
g_hash_table_lookup (GHashTable *table, gconstpointer key)
{
  count (CALL_SLOT_G_HASH_TABLE_LOOKUP, CALLER ());
  REAL (g_hash_table_lookup);
  return real_ptr (table, key);
}

gboolean
g_hash_table_lookup_extended (GHashTable *table, gconstpointer key, gpointer *orig_key,
                              gpointer *value)
{
  count (CALL_SLOT_G_HASH_TABLE_LOOKUP_EXTENDED, CALLER ());
  REAL (g_hash_table_lookup_extended);
  return real_ptr (table, key, orig_key, value);
}

gboolean
g_hash_table_contains (GHashTable *table, gconstpointer key)
{
  count (CALL_SLOT_G_HASH_TABLE_CONTAINS, CALLER ());
  REAL (g_hash_table_contains);
  return real_ptr (table, key);
}

gboolean
g_hash_table_insert (GHashTable *table, gpointer key, gpointer value)
{
  count (CALL_SLOT_G_HASH_TABLE_INSERT, CALLER ());
  REAL (g_hash_table_insert);
  return real_ptr (table, key, value);
}

gboolean
g_hash_table_replace (GHashTable *table, gpointer key, gpointer value)
{
  count (CALL_SLOT_G_HASH_TABLE_REPLACE, CALLER ());
  REAL (g_hash_table_replace);
  return real_ptr (table, key, value);
}

gboolean
g_hash_table_add (GHashTable *table, gpointer key)
{
  count (CALL_SLOT_G_HASH_TABLE_ADD, CALLER ());
  REAL (g_hash_table_add);
  return real_ptr (table, key);
}

gboolean
g_hash_table_remove (GHashTable *table, gconstpointer key)
{
  count (CALL_SLOT_G_HASH_TABLE_REMOVE, CALLER ());
  REAL (g_hash_table_remove);
  return real_ptr (table, key);
}

gboolean
g_hash_table_steal (GHashTable *table, gconstpointer key)
{
  count (CALL_SLOT_G_HASH_TABLE_STEAL, CALLER ());
  REAL (g_hash_table_steal);
  return real_ptr (table, key);
}

guint
g_str_hash (gconstpointer v)
{
  count (CALL_SLOT_G_STR_HASH, CALLER ());
  REAL (g_str_hash);
  return real_ptr (v);
}

guint
g_direct_hash (gconstpointer v)
{
  count (CALL_SLOT_G_DIRECT_HASH, CALLER ());
  REAL (g_direct_hash);
  return real_ptr (v);
}

guint
g_int_hash (gconstpointer v)
{
  count (CALL_SLOT_G_INT_HASH, CALLER ());
  REAL (g_int_hash);
  return real_ptr (v);
}

guint
g_int64_hash (gconstpointer v)
{
  count (CALL_SLOT_G_INT64_HASH, CALLER ());
  REAL (g_int64_hash);
  return real_ptr (v);
}

guint
g_double_hash (gconstpointer v)
{
  count (CALL_SLOT_G_DOUBLE_HASH, CALLER ());
  REAL (g_double_hash);
  return real_ptr (v);
}

GQuark
g_quark_from_string (const gchar *string)
{
  count (CALL_SLOT_G_QUARK_FROM_STRING, CALLER ());
  REAL (g_quark_from_string);
  return real_ptr (string);
}

GQuark
g_quark_from_static_string (const gchar *string)
{
  count (CALL_SLOT_G_QUARK_FROM_STATIC_STRING, CALLER ());
  REAL (g_quark_from_static_string);
  return real_ptr (string);
}

GQuark
g_quark_try_string (const gchar *string)
{
  count (CALL_SLOT_G_QUARK_TRY_STRING, CALLER ());
  REAL (g_quark_try_string);
  return real_ptr (string);
}

/* ---- GLib: allocation ------------------------------------------------- */

gpointer
g_malloc (gsize n)
{
  count (CALL_SLOT_G_MALLOC, CALLER ());
  REAL (g_malloc);
  return real_ptr (n);
}

gpointer
g_malloc0 (gsize n)
{
  count (CALL_SLOT_G_MALLOC0, CALLER ());
  REAL (g_malloc0);
  return real_ptr (n);
}

gpointer
g_realloc (gpointer mem, gsize n)
{
  count (CALL_SLOT_G_REALLOC, CALLER ());
  REAL (g_realloc);
  return real_ptr (mem, n);
}

gpointer
g_try_malloc (gsize n)
{
  count (CALL_SLOT_G_TRY_MALLOC, CALLER ());
  REAL (g_try_malloc);
  return real_ptr (n);
}

gpointer
g_try_malloc0 (gsize n)
{
  count (CALL_SLOT_G_TRY_MALLOC0, CALLER ());
  REAL (g_try_malloc0);
  return real_ptr (n);
}

gpointer
g_try_realloc (gpointer mem, gsize n)
{
  count (CALL_SLOT_G_TRY_REALLOC, CALLER ());
  REAL (g_try_realloc);
  return real_ptr (mem, n);
}

gpointer
g_malloc_n (gsize n_blocks, gsize block_size)
{
  count (CALL_SLOT_G_MALLOC_N, CALLER ());
  REAL (g_malloc_n);
  return real_ptr (n_blocks, block_size);
}

gpointer
g_malloc0_n (gsize n_blocks, gsize block_size)
{
  count (CALL_SLOT_G_MALLOC0_N, CALLER ());
  REAL (g_malloc0_n);
  return real_ptr (n_blocks, block_size);
}

gpointer
g_realloc_n (gpointer mem, gsize n_blocks, gsize block_size)
{
  count (CALL_SLOT_G_REALLOC_N, CALLER ());
  REAL (g_realloc_n);
  return real_ptr (mem, n_blocks, block_size);
}

void
g_free (gpointer mem)
{
  count (CALL_SLOT_G_FREE, CALLER ());
  REAL (g_free);
  real_ptr (mem);
}

gpointer
g_slice_alloc (gsize size)
{
  count (CALL_SLOT_G_SLICE_ALLOC, CALLER ());
  REAL (g_slice_alloc);
  return real_ptr (size);
}

gpointer
g_slice_alloc0 (gsize size)
{
  count (CALL_SLOT_G_SLICE_ALLOC0, CALLER ());
  REAL (g_slice_alloc0);
  return real_ptr (size);
}

void
g_slice_free1 (gsize size, gpointer mem)
{
  count (CALL_SLOT_G_SLICE_FREE1, CALLER ());
  REAL (g_slice_free1);
  real_ptr (size, mem);
}

gpointer
g_memdup2 (gconstpointer mem, gsize size)
{
  count (CALL_SLOT_G_MEMDUP2, CALLER ());
  REAL (g_memdup2);
  return real_ptr (mem, size);
}

gchar *
g_strdup (const gchar *str)
{
  count (CALL_SLOT_G_STRDUP, CALLER ());
  REAL (g_strdup);
  return real_ptr (str);
}

gchar *
g_strndup (const gchar *str, gsize n)
{
  count (CALL_SLOT_G_STRNDUP, CALLER ());
  REAL (g_strndup);
  return real_ptr (str, n);
}

gchar *
g_strdup_vprintf (const gchar *format, va_list args)
{
  count (CALL_SLOT_G_STRDUP_VPRINTF, CALLER ());
  REAL (g_strdup_vprintf);
  return real_ptr (format, args);
}

gchar *
g_strdup_printf (const gchar *format, ...)
{
  count (CALL_SLOT_G_STRDUP_PRINTF, CALLER ());
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
  count (CALL_SLOT_G_STRING_NEW, CALLER ());
  REAL (g_string_new);
  return real_ptr (init);
}

GString *
g_string_sized_new (gsize size)
{
  count (CALL_SLOT_G_STRING_SIZED_NEW, CALLER ());
  REAL (g_string_sized_new);
  return real_ptr (size);
}

gchar *
g_string_free (GString *string, gboolean free_segment)
{
  count (CALL_SLOT_G_STRING_FREE, CALLER ());
  REAL (g_string_free);
  return real_ptr (string, free_segment);
}

GArray *
g_array_new (gboolean zero_terminated, gboolean clear, guint element_size)
{
  count (CALL_SLOT_G_ARRAY_NEW, CALLER ());
  REAL (g_array_new);
  return real_ptr (zero_terminated, clear, element_size);
}

GPtrArray *
g_ptr_array_new (void)
{
  count (CALL_SLOT_G_PTR_ARRAY_NEW, CALLER ());
  REAL (g_ptr_array_new);
  return real_ptr ();
}

GByteArray *
g_byte_array_new (void)
{
  count (CALL_SLOT_G_BYTE_ARRAY_NEW, CALLER ());
  REAL (g_byte_array_new);
  return real_ptr ();
}

GBytes *
g_bytes_new (gconstpointer data, gsize size)
{
  count (CALL_SLOT_G_BYTES_NEW, CALLER ());
  REAL (g_bytes_new);
  return real_ptr (data, size);
}
