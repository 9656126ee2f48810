/* call-counter.h: counts, inside a test executable, the calls that are not
 * arithmetic: model hyper-parameter lookups, environment reads, hashing,
 * memory allocation, thread creation.
 *
 * The libc and GLib functions are counted by interposition:
 * call-interpose-libc.c and call-interpose-glib.c define them in the
 * executable (linked with export_dynamic), where they win over the shared
 * libraries' own for every call made through the PLT or the GOT (from
 * libwhisper-engine, from the CUDA module, from GLib itself), and forward
 * each call to the real function (glibc's __libc_* allocator entry points,
 * or dlsym (RTLD_NEXT, ...)). Model lookups are read from
 * whisper_model_lookup_count(); the backend's own allocation ops are noted
 * by the caller (step-probe.c); on the CUDA emulator, calls made by the
 * emulator itself are left out and its resource calls are read from it
 * (tests/gpu/emu/emu-hooks.h).
 *
 * Counting is off until call_counter_set_active (TRUE); it then counts on
 * every thread (the CPU backend's workers too). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  CALL_KIND_LOOKUP,  /* whisper_model_lookup() */
  CALL_KIND_GETENV,  /* getenv, secure_getenv, g_getenv */
  CALL_KIND_HASH,    /* g_hash_table_*, g_*_hash, quarks */
  CALL_KIND_ALLOC,   /* libc and GLib allocators, ops->alloc/free, device memory */
  CALL_KIND_THREAD,  /* thread creation and join */
  CALL_N_KINDS
} CallKind;

/* One counter per function (slot). X (ENUM, "name", KIND) */
#define CALL_COUNTER_FUNCS(X)                                                                    \
  X (MODEL_LOOKUP, "whisper_model_lookup", LOOKUP)                                              \
  X (GETENV, "getenv", GETENV)                                                                  \
  X (SECURE_GETENV, "secure_getenv", GETENV)                                                    \
  X (G_GETENV, "g_getenv", GETENV)                                                              \
  X (G_HASH_TABLE_NEW, "g_hash_table_new", HASH)                                                \
  X (G_HASH_TABLE_NEW_FULL, "g_hash_table_new_full", HASH)                                      \
  X (G_HASH_TABLE_LOOKUP, "g_hash_table_lookup", HASH)                                          \
  X (G_HASH_TABLE_LOOKUP_EXTENDED, "g_hash_table_lookup_extended", HASH)                        \
  X (G_HASH_TABLE_CONTAINS, "g_hash_table_contains", HASH)                                      \
  X (G_HASH_TABLE_INSERT, "g_hash_table_insert", HASH)                                          \
  X (G_HASH_TABLE_REPLACE, "g_hash_table_replace", HASH)                                        \
  X (G_HASH_TABLE_ADD, "g_hash_table_add", HASH)                                                \
  X (G_HASH_TABLE_REMOVE, "g_hash_table_remove", HASH)                                          \
  X (G_HASH_TABLE_STEAL, "g_hash_table_steal", HASH)                                            \
  X (G_STR_HASH, "g_str_hash", HASH)                                                            \
  X (G_DIRECT_HASH, "g_direct_hash", HASH)                                                      \
  X (G_INT_HASH, "g_int_hash", HASH)                                                            \
  X (G_INT64_HASH, "g_int64_hash", HASH)                                                        \
  X (G_DOUBLE_HASH, "g_double_hash", HASH)                                                      \
  X (G_QUARK_FROM_STRING, "g_quark_from_string", HASH)                                          \
  X (G_QUARK_FROM_STATIC_STRING, "g_quark_from_static_string", HASH)                            \
  X (G_QUARK_TRY_STRING, "g_quark_try_string", HASH)                                            \
  X (MALLOC, "malloc", ALLOC)                                                                   \
  X (CALLOC, "calloc", ALLOC)                                                                   \
  X (REALLOC, "realloc", ALLOC)                                                                 \
  X (FREE, "free", ALLOC)                                                                       \
  X (POSIX_MEMALIGN, "posix_memalign", ALLOC)                                                   \
  X (ALIGNED_ALLOC, "aligned_alloc", ALLOC)                                                     \
  X (MEMALIGN, "memalign", ALLOC)                                                               \
  X (VALLOC, "valloc", ALLOC)                                                                   \
  X (G_MALLOC, "g_malloc", ALLOC)                                                               \
  X (G_MALLOC0, "g_malloc0", ALLOC)                                                             \
  X (G_REALLOC, "g_realloc", ALLOC)                                                             \
  X (G_TRY_MALLOC, "g_try_malloc", ALLOC)                                                       \
  X (G_TRY_MALLOC0, "g_try_malloc0", ALLOC)                                                     \
  X (G_TRY_REALLOC, "g_try_realloc", ALLOC)                                                     \
  X (G_MALLOC_N, "g_malloc_n", ALLOC)                                                           \
  X (G_MALLOC0_N, "g_malloc0_n", ALLOC)                                                         \
  X (G_REALLOC_N, "g_realloc_n", ALLOC)                                                         \
  X (G_FREE, "g_free", ALLOC)                                                                   \
  X (G_SLICE_ALLOC, "g_slice_alloc", ALLOC)                                                     \
  X (G_SLICE_ALLOC0, "g_slice_alloc0", ALLOC)                                                   \
  X (G_SLICE_FREE1, "g_slice_free1", ALLOC)                                                     \
  X (G_MEMDUP2, "g_memdup2", ALLOC)                                                             \
  X (G_STRDUP, "g_strdup", ALLOC)                                                               \
  X (G_STRNDUP, "g_strndup", ALLOC)                                                             \
  X (G_STRDUP_PRINTF, "g_strdup_printf", ALLOC)                                                 \
  X (G_STRDUP_VPRINTF, "g_strdup_vprintf", ALLOC)                                               \
  X (G_STRING_NEW, "g_string_new", ALLOC)                                                       \
  X (G_STRING_SIZED_NEW, "g_string_sized_new", ALLOC)                                           \
  X (G_STRING_FREE, "g_string_free", ALLOC)                                                     \
  X (G_ARRAY_NEW, "g_array_new", ALLOC)                                                         \
  X (G_PTR_ARRAY_NEW, "g_ptr_array_new", ALLOC)                                                 \
  X (G_BYTE_ARRAY_NEW, "g_byte_array_new", ALLOC)                                               \
  X (G_BYTES_NEW, "g_bytes_new", ALLOC)                                                         \
  X (OPS_ALLOC, "ops->alloc", ALLOC)                                                            \
  X (OPS_FREE, "ops->free", ALLOC)                                                              \
  X (PTHREAD_CREATE, "pthread_create", THREAD)                                                  \
  X (PTHREAD_JOIN, "pthread_join", THREAD)                                                      \
  X (G_THREAD_NEW, "g_thread_new", THREAD)                                                      \
  X (G_THREAD_TRY_NEW, "g_thread_try_new", THREAD)                                              \
  X (G_THREAD_JOIN, "g_thread_join", THREAD)

#define CALL_COUNTER_ENUM(e, name, kind) CALL_SLOT_##e,
typedef enum {
  CALL_COUNTER_FUNCS (CALL_COUNTER_ENUM)
  CALL_SLOT_EMU_FIRST,                        /* the CUDA emulator's resource calls */
  CALL_N_SLOTS = CALL_SLOT_EMU_FIRST + 24
} CallSlot;
#undef CALL_COUNTER_ENUM

/* Every counter at one moment, with the return address of the last counted
 * call of each slot (NULL where none was counted yet). */
typedef struct {
  guint64 count[CALL_N_SLOTS];
  gpointer last_caller[CALL_N_SLOTS];
} CallSnapshot;

/* Call once before counting (it may allocate): finds the code of libc,
 * GLib and the executable, so that a counted call made from there is
 * reported at the first caller outside them. */
void call_counter_prepare (void);
void call_counter_set_active (gboolean active);
/* Counts one call of `slot` (for what is not interposed: the backend's
 * alloc and free ops), when counting is active. */
void call_counter_note (CallSlot slot, gpointer caller);
void call_counter_snapshot (CallSnapshot *snapshot);

/* When the backend runs on the CUDA emulator: `module` is a dlopen()
 * handle of the emulated module. FALSE (and nothing changes) when the
 * module is not the emulator. */
gboolean call_counter_attach_emulator (gpointer module);
void call_counter_detach_emulator (void);

const char *call_counter_slot_name (int slot);  /* NULL for an unused slot */
CallKind call_counter_slot_kind (int slot);
const char *call_counter_kind_name (CallKind kind);

G_END_DECLS
