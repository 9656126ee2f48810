/* call-counter.c: the counters (see call-counter.h); the interposed
 * functions that feed them are in call-interpose-libc.c and
 * call-interpose-glib.c. */
#include "call-interpose.h"
#include "../gpu/emu/emu-hooks.h"
#include "whisper-model.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <string.h>

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
void
call_counter_count (CallSlot slot, gpointer caller)
{
  if (!__atomic_load_n (&active, __ATOMIC_RELAXED))
    return;
  if (emu_in_runtime && emu_in_runtime ())
    return; /* the CUDA emulator's own work (emu-hooks.h) */
  __atomic_fetch_add (&counts[slot], 1, __ATOMIC_RELAXED);
  __atomic_store_n (&last_callers[slot], outer_caller (caller), __ATOMIC_RELAXED);
}


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
  call_counter_count (slot, caller);
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
