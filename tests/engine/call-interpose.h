/* call-interpose.h: what the interposed functions (call-interpose-libc.c,
 * call-interpose-glib.c) share with the counters (call-counter.c). */
#pragma once

#include "call-counter.h"

#include <dlfcn.h>
#include <stdlib.h>

G_BEGIN_DECLS

/* Counts one call of `slot` made from `caller` when counting is active.
 * Safe inside malloc, on any thread. */
void call_counter_count (CallSlot slot, gpointer caller);

#define CALLER() __builtin_return_address (0)

/* The next definition of `fn` after the executable's (libc's, GLib's),
 * looked up once, in real_ptr. */
#define REAL(fn)                                                                                \
  static __typeof__ (fn) *real_ptr;                                                             \
  if (G_UNLIKELY (!real_ptr))                                                                   \
    real_ptr = (__typeof__ (fn) *) dlsym (RTLD_NEXT, #fn);                                      \
  if (G_UNLIKELY (!real_ptr))                                                                   \
    abort ()

G_END_DECLS
