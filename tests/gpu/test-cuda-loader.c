/* test-cuda-loader.c: whisper_backend_cuda_new() fails cleanly, with a clear
 * GError, wherever the CUDA backend cannot run (no module, a broken module,
 * no driver, no device), and works where it can. Runs everywhere: never
 * skipped.
 *
 * Arguments: the path of the built CUDA module, or "" when the build has
 * none (meson passes it).
 */
#include "backend.h"
#include "whisper-engine.h"

#include <glib/gstdio.h>

static const char *module_path = "";

static void
assert_device_error (const GError *error, const char *expect)
{
  g_assert_nonnull (error);
  g_test_message ("error: %s", error->message);
  g_assert_true (error->domain == WHISPER_ENGINE_ERROR);
  g_assert_cmpint (error->code, ==, WHISPER_ENGINE_ERROR_DEVICE);
  g_assert_true (strlen (error->message) > 10);
  if (expect && !strstr (error->message, expect))
    g_error ("error message \"%s\" does not mention \"%s\"", error->message, expect);
}

/* Whatever the machine: a backend, or NULL with a device error. */
static void
test_default (void)
{
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  if (be) {
    g_test_message ("CUDA backend available: %s", be->ops->name);
    g_assert_no_error (error);
    g_assert_cmpstr (be->ops->name, ==, "cuda");
    g_assert_cmpint (be->ops->abi_version, ==, WHISPER_BACKEND_ABI_VERSION);
    g_assert_nonnull (be->ops->logits_select);
    g_assert_nonnull (be->ops->graph_new);
    g_assert_nonnull (be->ops->graph_begin);
    g_assert_nonnull (be->ops->logits_prepare);
    whisper_backend_destroy (be);
  } else {
    assert_device_error (error, "CUDA");
  }
}

static void
test_env_missing_file (void)
{
  g_setenv ("WHISPER_CUDA_MODULE", "/nonexistent/libwhisper-engine-cuda.so", TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_assert_null (be);
  assert_device_error (error, "/nonexistent/libwhisper-engine-cuda.so");
  g_assert_nonnull (strstr (error->message, "not found"));
}

static void
test_env_not_a_module (void)
{
  g_autofree char *path = NULL;
  g_autoptr (GError) error = NULL;
  int fd = g_file_open_tmp ("not-a-module-XXXXXX.so", &path, &error);
  g_assert_no_error (error);
  g_assert_true (write (fd, "this is not an ELF file\n", 24) == 24);
  close (fd);
  g_setenv ("WHISPER_CUDA_MODULE", path, TRUE);
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_unlink (path);
  g_assert_null (be);
  /* the loader's own words, then g_module_error()'s */
  assert_device_error (error, "failed to load");
  g_assert_nonnull (strstr (error->message, path));
}

/* A shared library without the entry point. */
static void
test_env_no_entry (void)
{
  /* libglib is loaded in this process and surely has no such symbol */
  g_autofree char *glib = NULL;
  const char *candidates[] = { "/lib/x86_64-linux-gnu/libglib-2.0.so.0",
                               "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0",
                               "/usr/lib64/libglib-2.0.so.0", "/usr/lib/libglib-2.0.so.0" };
  for (gsize i = 0; i < G_N_ELEMENTS (candidates) && !glib; i++)
    if (g_file_test (candidates[i], G_FILE_TEST_EXISTS))
      glib = g_strdup (candidates[i]);
  if (!glib) {
    g_test_skip ("no libglib-2.0.so.0 at a known path");
    return;
  }
  g_setenv ("WHISPER_CUDA_MODULE", glib, TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_assert_null (be);
  assert_device_error (error, "whisper_backend_cuda_module_new");
}

/* The module this build made: loads; without a GPU it says why. */
static void
test_built_module (void)
{
  if (!*module_path) {
    g_test_skip ("this build has no CUDA module (option cuda)");
    return;
  }
  g_setenv ("WHISPER_CUDA_MODULE", module_path, TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  g_unsetenv ("WHISPER_CUDA_MODULE");
  if (be) {
    g_test_message ("the built module runs here");
    whisper_backend_destroy (be);
    return;
  }
  /* no driver, no device, or a module that cannot load: a device error
   * naming the module, with the CUDA runtime's own words after it */
  assert_device_error (error, module_path);
  g_assert_true (strstr (error->message, "cudaGetDeviceCount") ||
                 strstr (error->message, "no CUDA device") ||
                 strstr (error->message, "failed to load") ||
                 strstr (error->message, "compute capability"));
  /* and asking again gives the same answer (nothing left half-loaded) */
  g_setenv ("WHISPER_CUDA_MODULE", module_path, TRUE);
  g_autoptr (GError) again = NULL;
  g_assert_null (whisper_backend_cuda_new (&again));
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_assert_cmpstr (again->message, ==, error->message);
}

/* The engine with device=cuda reports the backend's error; with auto it
 * must not fail for the GPU's sake (it may fail for a missing model). */
static void
test_engine_device (void)
{
  g_autoptr (GError) probe_error = NULL;
  WhisperBackend *probe = whisper_backend_cuda_new (&probe_error);
  if (probe) {
    whisper_backend_destroy (probe);
    g_test_skip ("a GPU is present: the no-GPU path cannot be checked here");
    return;
  }
  WhisperEngineOptions o;
  whisper_engine_options_init (&o);
  o.device = WHISPER_DEVICE_CUDA;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) e = whisper_engine_new (&o, &error);
  g_assert_null (e);
  g_assert_nonnull (error);
  g_test_message ("device=cuda: %s", error->message);
  /* a missing model may be reported first; otherwise the device */
  if (error->domain == WHISPER_ENGINE_ERROR && error->code == WHISPER_ENGINE_ERROR_DEVICE)
    g_assert_nonnull (strstr (error->message, "CUDA") ? error->message : NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (argc > 1)
    module_path = argv[1];
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_test_add_func ("/cuda-loader/default", test_default);
  g_test_add_func ("/cuda-loader/env-missing-file", test_env_missing_file);
  g_test_add_func ("/cuda-loader/env-not-a-module", test_env_not_a_module);
  g_test_add_func ("/cuda-loader/env-no-entry-point", test_env_no_entry);
  g_test_add_func ("/cuda-loader/built-module", test_built_module);
  g_test_add_func ("/cuda-loader/engine-device-cuda", test_engine_device);
  return g_test_run ();
}
