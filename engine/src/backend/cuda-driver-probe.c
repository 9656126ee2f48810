/* cuda-driver-probe.c: see cuda-driver-probe.h.
 *
 * Uses two functions of the CUDA driver API
 * (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html
 * and group__CUDA__DEVICE.html): cuInit (0) and cuDeviceGetCount (&n), both
 * returning a CUresult, 0 on success. They are looked up in libcuda.so.1 at
 * run time, so nothing here needs the CUDA headers or links a CUDA library. */
#include "cuda-driver-probe.h"

#include <gmodule.h>

#include "whisper-error.h"

#define DRIVER_LIBRARY "libcuda.so.1"

typedef int (*CuInitFunc) (unsigned int flags);
typedef int (*CuDeviceGetCountFunc) (int *count);

gboolean
whisper_cuda_driver_probe (int *n_devices, GError **error)
{
  *n_devices = 0;
  GModule *driver = g_module_open (DRIVER_LIBRARY, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
  if (!driver) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "no CUDA device: no NVIDIA driver (%s cannot be loaded: %s)", DRIVER_LIBRARY, g_module_error ());
    return FALSE;
  }
  CuInitFunc cu_init = NULL;
  CuDeviceGetCountFunc cu_device_get_count = NULL;
  if (!g_module_symbol (driver, "cuInit", (gpointer *) &cu_init) ||
      !g_module_symbol (driver, "cuDeviceGetCount", (gpointer *) &cu_device_get_count)) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "no CUDA device: the NVIDIA driver library %s has no cuInit or cuDeviceGetCount: %s", DRIVER_LIBRARY, g_module_error ());
    g_module_close (driver);
    return FALSE;
  }
  int rc = cu_init (0);
  if (rc != 0) {
    /* 100 is CUDA_ERROR_NO_DEVICE */
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 rc == 100 ? "no CUDA device: the NVIDIA driver sees none (cuInit: error %d)"
                           : "no CUDA device: the NVIDIA driver fails to initialise (cuInit: "
                             "error %d)",
                 rc);
    g_module_close (driver);
    return FALSE;
  }
  int count = 0;
  if ((rc = cu_device_get_count (&count)) != 0 || count < 1) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "no CUDA device: the NVIDIA driver sees none (cuDeviceGetCount: error %d, "
                 "%d devices)",
                 rc, count);
    g_module_close (driver);
    return FALSE;
  }
  g_module_make_resident (driver);
  *n_devices = count;
  return TRUE;
}
