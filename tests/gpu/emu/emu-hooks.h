/* emu-hooks.h: what the CUDA emulator (emu-runtime.cc) tells a test that
 * counts the calls a decode step makes (tests/engine/call-counter.c).
 *
 * The emulator's own work (C++ containers, fiber stacks, the guard-page
 * mappings of device memory) is not the module's: while the calling thread
 * is inside an emulated runtime or cuBLAS function, wc_emu_in_runtime()
 * returns nonzero, and the test leaves the calls made then out. What would
 * acquire or release resources on a real GPU (device and pinned memory,
 * streams, graph capture and instantiation, cuBLAS handles) is counted by
 * the emulator itself, per runtime function.
 *
 * Both are exported from the emulated module (default visibility); a test
 * finds them with dlsym() on the module that holds the backend's ops. */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WC_EMU_IN_RUNTIME_SYMBOL "wc_emu_in_runtime"
#define WC_EMU_RESOURCE_COUNTERS_SYMBOL "wc_emu_resource_counters"

/* Nonzero while the calling thread runs emulated runtime code. */
typedef int (*WcEmuInRuntimeFunc) (void);

/* Points *names and *counts at the emulator's tables (one entry per counted
 * runtime function: its name and how often it was called so far) and
 * returns the number of entries. The counts are updated atomically. */
typedef int (*WcEmuResourceCountersFunc) (const char *const **names, const uint64_t **counts);

#ifdef __cplusplus
}
#endif
