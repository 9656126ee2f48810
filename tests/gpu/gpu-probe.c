/* gpu-probe.c: see gpu-probe.h. */
#include "gpu-probe.h"

#include <dlfcn.h>
#include <string.h>

/* CUresult values, from
 * https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html */
enum {
  CU_SUCCESS = 0,
  CU_ERROR_STUB_LIBRARY = 34,
  CU_ERROR_NO_DEVICE = 100,
};

typedef int (*CuInitFunc) (unsigned int flags);
typedef int (*CuDeviceGetCountFunc) (int *count);

/* " (/proc/driver/nvidia/version: <first line>)" or "" */
static char *
driver_version_note (void)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents ("/proc/driver/nvidia/version", &text, NULL, NULL))
    return g_strdup ("");
  char *nl = strchr (text, '\n');
  if (nl)
    *nl = '\0';
  return g_strdup_printf (" (/proc/driver/nvidia/version: %s)", g_strstrip (text));
}

static GpuProbeResult
answer (GpuProbeResult result, int n, int *n_devices, char **reason, char *text)
{
  if (n_devices)
    *n_devices = result == GPU_PROBE_DEVICE ? n : 0;
  if (reason) {
    g_autofree char *note = driver_version_note ();
    *reason = g_strconcat (text, note, NULL);
  }
  g_free (text);
  return result;
}

GpuProbeResult
gpu_probe_library (const char *library, int *n_devices, char **reason)
{
  /* Local binding: the driver's symbols stay out of the global scope, and
   * the handle is never closed once cuInit ran (the driver keeps state). */
  void *driver = dlopen (library, RTLD_NOW | RTLD_LOCAL);
  if (!driver)
    return answer (GPU_PROBE_NO_DRIVER, 0, n_devices, reason,
                   g_strdup_printf ("no NVIDIA driver: %s cannot be loaded (%s)", library,
                                    dlerror ()));
  CuInitFunc cu_init = (CuInitFunc) dlsym (driver, "cuInit");
  CuDeviceGetCountFunc cu_device_get_count =
      (CuDeviceGetCountFunc) dlsym (driver, "cuDeviceGetCount");
  if (!cu_init || !cu_device_get_count) {
    dlclose (driver);
    return answer (GPU_PROBE_BROKEN, 0, n_devices, reason,
                   g_strdup_printf ("the driver library %s has no %s: not a CUDA driver",
                                    library, cu_init ? "cuDeviceGetCount" : "cuInit"));
  }
  const int rc = cu_init (0);
  if (rc == CU_ERROR_STUB_LIBRARY)
    return answer (GPU_PROBE_NO_DRIVER, 0, n_devices, reason,
                   g_strdup_printf ("no NVIDIA driver: %s is the CUDA toolkit's stub "
                                    "(cuInit: CUDA_ERROR_STUB_LIBRARY)",
                                    library));
  if (rc == CU_ERROR_NO_DEVICE)
    return answer (GPU_PROBE_NO_DEVICE, 0, n_devices, reason,
                   g_strdup_printf ("no CUDA device: the NVIDIA driver (%s) sees none "
                                    "(cuInit: CUDA_ERROR_NO_DEVICE)",
                                    library));
  if (rc != CU_SUCCESS)
    return answer (GPU_PROBE_BROKEN, 0, n_devices, reason,
                   g_strdup_printf ("the NVIDIA driver (%s) is installed but fails: cuInit "
                                    "gives CUresult %d",
                                    library, rc));
  int count = -1;
  const int rc_count = cu_device_get_count (&count);
  if (rc_count != CU_SUCCESS)
    return answer (GPU_PROBE_BROKEN, 0, n_devices, reason,
                   g_strdup_printf ("the NVIDIA driver (%s) is installed but fails: "
                                    "cuDeviceGetCount gives CUresult %d",
                                    library, rc_count));
  if (count < 1)
    return answer (GPU_PROBE_NO_DEVICE, 0, n_devices, reason,
                   g_strdup_printf ("no CUDA device: the NVIDIA driver (%s) counts %d "
                                    "(cuDeviceGetCount)",
                                    library, count));
  return answer (GPU_PROBE_DEVICE, count, n_devices, reason,
                 g_strdup_printf ("the NVIDIA driver (%s) sees %d CUDA device%s", library, count,
                                  count == 1 ? "" : "s"));
}

const char *
gpu_probe_driver_library (void)
{
  const char *env = g_getenv ("WHISPER_GPU_TEST_DRIVER");
  return env && *env ? env : GPU_PROBE_DRIVER_LIBRARY;
}

GpuProbeResult
gpu_probe (int *n_devices, char **reason)
{
  return gpu_probe_library (gpu_probe_driver_library (), n_devices, reason);
}

gboolean
gpu_probe_is_skip (GpuProbeResult result)
{
  return result == GPU_PROBE_NO_DRIVER || result == GPU_PROBE_NO_DEVICE;
}

gboolean
gpu_probe_require_cuda (void)
{
  return g_strcmp0 (g_getenv ("WHISPER_REQUIRE_CUDA"), "1") == 0;
}
