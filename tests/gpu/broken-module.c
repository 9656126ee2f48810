/* broken-module.c: small stand-ins for a CUDA module gone wrong, one per
 * way engine/src/backend/backend-cuda-loader.c can refuse a module, so that the
 * GPU tests are shown to fail (not skip) when a device exists and the
 * module is broken (tests/gpu/meson.build, check-no-skip.sh). Built once
 * per kind, with -DBROKEN_KIND=<n>:
 *
 *   BROKEN_UNLOADABLE  needs a symbol nobody defines (a data reference,
 *                      resolved when the file is loaded, as a module whose
 *                      CUDA runtime is missing): "failed to load"
 *   BROKEN_NO_ENTRY    exports a near-miss of the entry point's name:
 *                      "has no entry point"
 *   BROKEN_ABI         the entry point hands back a backend of another ABI
 *                      version: "has backend ABI version"
 *   BROKEN_REFUSES     the entry point fails with an error, as a module
 *                      that finds no usable device
 */
#include "backend.h"
#include "whisper-error.h"

#define BROKEN_UNLOADABLE 1
#define BROKEN_NO_ENTRY 2
#define BROKEN_ABI 3
#define BROKEN_REFUSES 4

#ifndef BROKEN_KIND
#error "tests/gpu/meson.build defines BROKEN_KIND"
#endif

#define EXPORT __attribute__ ((visibility ("default")))

#if BROKEN_KIND == BROKEN_UNLOADABLE
extern int whisper_broken_module_undefined_symbol;
EXPORT int *whisper_broken_module_reference = &whisper_broken_module_undefined_symbol;
#endif

#if BROKEN_KIND == BROKEN_ABI
static void
broken_destroy (WhisperBackend *be)
{
  g_free (be);
}

static const WhisperBackendOps broken_ops = {
  .abi_version = WHISPER_BACKEND_ABI_VERSION + 1,
  .name = "cuda",
  .destroy = broken_destroy,
};
#endif

#if BROKEN_KIND == BROKEN_NO_ENTRY
EXPORT WhisperBackend *whisper_backend_cuda_module_create (int abi_version, GError **error);

WhisperBackend *
whisper_backend_cuda_module_create (int abi_version, GError **error)
#else
EXPORT WhisperBackend *whisper_backend_cuda_module_new (int abi_version, GError **error);

WhisperBackend *
whisper_backend_cuda_module_new (int abi_version, GError **error)
#endif
{
  (void) abi_version;
#if BROKEN_KIND == BROKEN_ABI
  (void) error;
  WhisperBackend *be = g_new0 (WhisperBackend, 1);
  be->ops = &broken_ops;
  be->n_threads = 1;
  return be;
#else
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
               "broken-module.c (kind %d): this test module refuses to create a backend",
               BROKEN_KIND);
  return NULL;
#endif
}
