/* test-cuda-loader.c: whisper_backend_cuda_new() fails cleanly, with a clear
 * GError, wherever the CUDA backend cannot run (no module, a broken module,
 * no driver, no device), and works where it can. Runs everywhere.
 *
 * What to expect is decided by the tests' own driver probe (gpu-probe.h),
 * never by the loader under test: where the probe sees a CUDA device, the
 * default backend and the module this build made must come up, and any
 * error fails the test with the loader's message; where it sees none, each
 * case expects one exact message (the engine's driver probe's, or the
 * module's own). A case that cannot be checked here is skipped, or fails
 * under WHISPER_REQUIRE_CUDA=1.
 *
 * Arguments: the path of the built CUDA module, or "" when the build has
 * none (meson passes it).
 */
#include "backend.h"
#include "gpu-probe.h"
#include "whisper.h"

#include <glib/gstdio.h>

static const char *module_path = "";

/* g_test_skip (), or a failure naming the reason under WHISPER_REQUIRE_CUDA=1 */
static void
skip_or_fail (const char *reason)
{
  if (gpu_probe_require_cuda ()) {
    g_printerr ("WHISPER_REQUIRE_CUDA=1, but this case would skip: %s\n", reason);
    g_test_fail ();
  } else {
    g_test_skip (reason);
  }
}

/* The message of `error` starts with `prefix`; else a failure showing both. */
static void
assert_message_starts (const GError *error, const char *prefix)
{
  if (!g_str_has_prefix (error->message, prefix))
    g_error ("error message \"%s\" does not start with \"%s\"", error->message, prefix);
}

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

static void
assert_backend_ok (WhisperBackend *be)
{
  g_assert_cmpstr (be->ops->name, ==, "cuda");
  g_assert_cmpint (be->ops->abi_version, ==, WHISPER_BACKEND_ABI_VERSION);
  g_assert_nonnull (be->ops->logits_select);
  g_assert_nonnull (be->ops->graph_new);
  g_assert_nonnull (be->ops->graph_begin);
  g_assert_nonnull (be->ops->logits_prepare);
}

/* The default search (no WHISPER_CUDA_MODULE): the loader first asks the
 * NVIDIA driver itself (engine/src/backend/cuda-driver-probe.c), so the
 * expectation comes from asking the real driver library, libcuda.so.1 (not
 * $WHISPER_GPU_TEST_DRIVER, a stand-in the engine never sees). */
static void
test_default (void)
{
  g_autofree char *reason = NULL;
  const GpuProbeResult probe = gpu_probe_library (GPU_PROBE_DRIVER_LIBRARY, NULL, &reason);
  g_test_message ("probe: %s", reason);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  switch (probe) {
  case GPU_PROBE_DEVICE:
    if (!be && !*module_path) {
      g_autofree char *why = g_strdup_printf ("%s, but this build made no CUDA module (meson "
                                              "option cuda): %s",
                                              reason, error->message);
      skip_or_fail (why);
      return;
    }
    if (!be)
      g_error ("%s, but the CUDA backend does not come up: %s", reason, error->message);
    g_test_message ("CUDA backend available: %s", be->ops->name);
    g_assert_no_error (error);
    assert_backend_ok (be);
    whisper_backend_destroy (be);
    return;
  case GPU_PROBE_NO_DRIVER:
    g_assert_null (be);
    assert_device_error (error, NULL);
    /* the engine's driver probe's words (cuda-driver-probe.c) */
    if (strstr (reason, "stub"))
      assert_message_starts (error, "no CUDA device: the NVIDIA driver fails to initialise "
                                    "(cuInit: error 34)");
    else
      assert_message_starts (error, "no CUDA device: no NVIDIA driver (libcuda.so.1 cannot be "
                                    "loaded: ");
    break;
  case GPU_PROBE_NO_DEVICE:
    g_assert_null (be);
    assert_device_error (error, NULL);
    assert_message_starts (error, "no CUDA device: the NVIDIA driver sees none (");
    break;
  case GPU_PROBE_BROKEN:
  default:
    g_error ("%s (the loader %s)", reason,
             be ? "made a backend all the same" : error->message);
  }
  /* and no module was loaded for the answer: no CUDA runtime is mapped */
  g_autofree char *maps = NULL;
  g_assert_true (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  g_assert_null (strstr (maps, "libwhisper-engine-cuda"));
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

/* The module this build made, named in WHISPER_CUDA_MODULE (the loader
 * then asks no driver and loads it at once): where the tests' probe
 * ($WHISPER_GPU_TEST_DRIVER, else libcuda.so.1) sees a device it must come
 * up; where it sees none, the module loads and says so itself ("failed to
 * load" is never accepted: a module this build made must load). */
static void
test_built_module (void)
{
  if (!*module_path) {
    skip_or_fail ("this build made no CUDA module (meson option cuda)");
    return;
  }
  g_autofree char *reason = NULL;
  const GpuProbeResult probe = gpu_probe (NULL, &reason);
  g_test_message ("probe: %s", reason);
  g_setenv ("WHISPER_CUDA_MODULE", module_path, TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  g_unsetenv ("WHISPER_CUDA_MODULE");
  if (probe == GPU_PROBE_DEVICE) {
    if (!be)
      g_error ("%s, but the module this build made (%s) does not come up: %s", reason,
               module_path, error->message);
    g_test_message ("the built module runs here");
    assert_backend_ok (be);
    whisper_backend_destroy (be);
    return;
  }
  if (probe == GPU_PROBE_BROKEN) {
    whisper_backend_destroy (be);
    g_error ("%s", reason);
  }
  if (be)
    g_error ("the probe says \"%s\", but the module %s made a backend", reason, module_path);
  /* the module's own words (kernels/host/backend-cuda.c, open_device):
   * the CUDA runtime's error (no driver: cudaErrorInsufficientDriver; the
   * emulator with WHISPER_EMU_NO_DEVICE=1 gives the same), or a driver
   * that counts no device */
  assert_device_error (error, NULL);
  g_autofree char *prefix = g_strdup_printf ("CUDA backend (%s): ", module_path);
  assert_message_starts (error, prefix);
  const char *own = error->message + strlen (prefix);
  if (!g_str_has_prefix (own, "no usable CUDA device (cudaGetDeviceCount): ") &&
      !g_str_equal (own, "no CUDA device: the driver reports none"))
    g_error ("the module %s, without a device (%s), says \"%s\", not its no-device message",
             module_path, reason, own);
  /* and asking again gives the same answer (nothing left half-loaded) */
  g_setenv ("WHISPER_CUDA_MODULE", module_path, TRUE);
  g_autoptr (GError) again = NULL;
  g_assert_null (whisper_backend_cuda_new (&again));
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_assert_cmpstr (again->message, ==, error->message);
}

/* The engine with device=cuda reports the loader's error word for word;
 * with auto it falls back to the CPU. A module that is not there
 * (WHISPER_CUDA_MODULE names a missing file) makes the loader fail on any
 * machine, GPU or not. The model loads first: a missing model is reported
 * before the device. */
static void
test_engine_device (void)
{
  const char *missing = "/nonexistent/engine-device/libwhisper-engine-cuda.so";
  g_setenv ("WHISPER_CUDA_MODULE", missing, TRUE);
  WhisperEngineOptions o;
  whisper_engine_options_init (&o);
  o.device = WHISPER_DEVICE_CUDA;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) e = whisper_engine_new (&o, &error);
  g_assert_null (e);
  g_assert_nonnull (error);
  g_test_message ("device=cuda: %s", error->message);
  if (!(error->domain == WHISPER_ENGINE_ERROR && error->code == WHISPER_ENGINE_ERROR_DEVICE)) {
    g_unsetenv ("WHISPER_CUDA_MODULE");
    g_autofree char *why = g_strdup_printf ("the engine fails before the device (is the model "
                                            "installed? tools/fetch-model.sh): %s",
                                            error->message);
    skip_or_fail (why);
    return;
  }
  g_autofree char *expect = g_strdup_printf ("device 'cuda' is not available: CUDA module not "
                                             "found: WHISPER_CUDA_MODULE=%s is not a file",
                                             missing);
  g_assert_cmpstr (error->message, ==, expect);

  o.device = WHISPER_DEVICE_AUTO;
  g_autoptr (GError) auto_error = NULL;
  g_autoptr (WhisperEngine) on_cpu = whisper_engine_new (&o, &auto_error);
  g_unsetenv ("WHISPER_CUDA_MODULE");
  g_assert_no_error (auto_error);
  g_assert_cmpstr (whisper_engine_get_info (on_cpu)->device_name, ==, "cpu");
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
