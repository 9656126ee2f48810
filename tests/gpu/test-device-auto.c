/* test-device-auto: device=auto on a machine where the engine ends up on
 * the CPU must not have loaded the CUDA runtime or cuBLAS (the CUDA module
 * maps about 155 MB of them). Checked from outside the engine's own
 * decision: whatever device the engine chose, the process's memory map
 * (/proc/self/maps) must hold no libcudart or libcublas unless that device
 * is CUDA. Runs everywhere (a GPU machine passes with device CUDA).
 *
 * WHISPER_CUDA_MODULE must not be set: it names a module to load without
 * asking the driver first (the tests' CPU emulator of CUDA). */
#include "whisper.h"

#include <string.h>

/* The mapped files whose path contains `name`, or NULL. */
static char *
mapped (const char *name)
{
  g_autofree char *maps = NULL;
  g_assert_true (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  g_auto (GStrv) lines = g_strsplit (maps, "\n", -1);
  for (char **l = lines; *l; l++)
    if (strstr (*l, name))
      return g_strdup (*l);
  return NULL;
}

static void
test_auto (void)
{
  g_assert_null (g_getenv ("WHISPER_CUDA_MODULE"));
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = WHISPER_DEVICE_AUTO;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  g_assert_no_error (error);
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_test_message ("device=auto chose %s", info->device_name);
  if (g_str_equal (info->device_name, "cpu")) {
    g_autofree char *cudart = mapped ("libcudart");
    g_autofree char *cublas = mapped ("libcublas");
    if (cudart || cublas)
      g_error ("device=auto chose the CPU but the CUDA libraries are mapped: %s",
               cudart ? cudart : cublas);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/device-auto/nothing-heavy-without-gpu", test_auto);
  return g_test_run ();
}
