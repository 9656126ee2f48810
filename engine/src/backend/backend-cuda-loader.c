/* backend-cuda-loader.c: finds and loads the CUDA backend module
 * (libwhisper-engine-cuda.so) at run time, so that libwhisper-engine itself
 * links no CUDA library and loads on machines without a driver.
 *
 * Where the module is looked for, in order:
 *   1. $WHISPER_CUDA_MODULE (a file path; when set, nothing else is tried);
 *   2. next to libwhisper-engine.so (its directory, found with dladdr);
 *   3. in the build tree: <that directory>/../kernels/ (meson builds the
 *      module in build/kernels/ and the engine in build/engine/);
 *   4. WHISPER_CUDA_MODULE_DIR, the install directory (libdir/gst-whisper).
 *
 * Unless $WHISPER_CUDA_MODULE names the module (tests use it for the CPU
 * emulator of CUDA, which has no driver), the NVIDIA driver is asked first
 * whether it sees a device (cuda-driver-probe.c): without one the module is
 * not loaded at all, so device=auto on a machine without a GPU costs
 * nothing (loading the module maps the CUDA runtime and cuBLAS, a large
 * resident cost, only to find no device).
 */
#include "backend.h"
#include "cuda-driver-probe.h"
#include "whisper.h"

#include <dlfcn.h>
#include <gmodule.h>

#define MODULE_FILE "libwhisper-engine-cuda.so"
#define MODULE_ENTRY "whisper_backend_cuda_module_new"

#ifndef WHISPER_CUDA_MODULE_DIR
#define WHISPER_CUDA_MODULE_DIR "/usr/local/lib/gst-whisper"
#endif

static char *
engine_library_dir (void)
{
  Dl_info info;
  if (dladdr ((void *) whisper_backend_cuda_new, &info) == 0 || !info.dli_fname)
    return NULL;
  return g_path_get_dirname (info.dli_fname);
}

/* Every candidate path, in the order they are tried. */
static GPtrArray *
module_candidates (gboolean *from_env)
{
  GPtrArray *paths = g_ptr_array_new_with_free_func (g_free);
  const char *env = g_getenv ("WHISPER_CUDA_MODULE");

  *from_env = env && *env;
  if (*from_env) {
    g_ptr_array_add (paths, g_strdup (env));
    return paths;
  }
  g_autofree char *libdir = engine_library_dir ();
  if (libdir) {
    g_autofree char *next = g_build_filename (libdir, MODULE_FILE, NULL);
    g_autofree char *build = g_build_filename (libdir, "..", "kernels", MODULE_FILE, NULL);
    g_ptr_array_add (paths, g_canonicalize_filename (next, NULL));
    g_ptr_array_add (paths, g_canonicalize_filename (build, NULL));
  }
  g_ptr_array_add (paths, g_build_filename (WHISPER_CUDA_MODULE_DIR, MODULE_FILE, NULL));
  return paths;
}

static char *
find_module (GError **error)
{
  gboolean from_env;
  g_autoptr (GPtrArray) paths = module_candidates (&from_env);

  for (guint i = 0; i < paths->len; i++) {
    const char *p = g_ptr_array_index (paths, i);
    if (g_file_test (p, G_FILE_TEST_IS_REGULAR))
      return g_strdup (p);
  }
  if (from_env) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA module not found: WHISPER_CUDA_MODULE=%s is not a file",
                 (const char *) g_ptr_array_index (paths, 0));
    return NULL;
  }
  g_autoptr (GString) tried = g_string_new (NULL);
  for (guint i = 0; i < paths->len; i++)
    g_string_append_printf (tried, "%s%s", i ? ", " : "", (char *) g_ptr_array_index (paths, i));
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
               "CUDA module " MODULE_FILE " not found (not built: configure with "
               "-Dcuda=enabled and nvcc installed; or set WHISPER_CUDA_MODULE); tried %s",
               tried->str);
  return NULL;
}

WhisperBackend *
whisper_backend_cuda_new (GError **error)
{
  if (!g_module_supported ()) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA module cannot be loaded: this platform has no dynamic loading");
    return NULL;
  }
  const char *from_env = g_getenv ("WHISPER_CUDA_MODULE");
  int n_devices;
  if (!(from_env && *from_env) && !whisper_cuda_driver_probe (&n_devices, error))
    return NULL;
  g_autofree char *path = find_module (error);
  if (!path)
    return NULL;

  /* Local binding: the module's CUDA symbols stay out of the global scope. */
  GModule *module = g_module_open (path, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
  if (!module) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA module %s failed to load (is the CUDA runtime, cuBLAS or the NVIDIA "
                 "driver missing?): %s",
                 path, g_module_error ());
    return NULL;
  }
  /* Keep the module (and the CUDA runtime and libstdc++ it brings) loaded
   * for the life of the process, also when no device is found: loading and
   * unloading it on every engine creation leaked about 130 KiB each time
   * (device=auto on a machine without a GPU). */
  g_module_make_resident (module);

  WhisperBackendModuleNewFunc module_new = NULL;
  if (!g_module_symbol (module, MODULE_ENTRY, (gpointer *) &module_new) || !module_new) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA module %s has no entry point " MODULE_ENTRY ": %s", path,
                 g_module_error ());
    g_module_close (module);
    return NULL;
  }

  GError *module_error = NULL;
  WhisperBackend *be = module_new (WHISPER_BACKEND_ABI_VERSION, &module_error);
  if (!be) {
    if (module_error)
      g_propagate_prefixed_error (error, module_error, "CUDA backend (%s): ", path);
    else
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                   "CUDA backend (%s) failed without saying why", path);
    g_module_close (module);
    return NULL;
  }
  if (!be->ops || be->ops->abi_version != WHISPER_BACKEND_ABI_VERSION) {
    const int got = be->ops ? be->ops->abi_version : -1;
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA module %s has backend ABI version %d, this engine needs %d: rebuild "
                 "the module with the engine",
                 path, got, WHISPER_BACKEND_ABI_VERSION);
    if (be->ops && be->ops->destroy)
      be->ops->destroy (be);
    g_module_close (module);
    return NULL;
  }
  g_debug ("CUDA backend loaded from %s", path);
  return be;
}
