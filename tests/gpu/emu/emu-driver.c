/* emu-driver.c: a stand-in for the NVIDIA driver library (libcuda.so.1)
 * that answers the two driver-API calls the tests' probe makes
 * (tests/gpu/gpu-probe.c), as the emulated machine would: a driver with
 * WHISPER_EMU_DEVICE_COUNT devices (default 1), the setting the emulated
 * CUDA runtime reads too (emu-runtime.cc). The meson tests name it in
 * WHISPER_GPU_TEST_DRIVER, so that "this machine has a CUDA device" can be
 * simulated where there is no GPU.
 *
 *   WHISPER_EMU_NO_DEVICE=1     cuInit gives CUDA_ERROR_NO_DEVICE (100), as
 *                               a driver without a device (the emulated
 *                               runtime then fails cudaGetDeviceCount)
 *   WHISPER_EMU_DRIVER_ERROR=N  cuInit gives CUresult N: a driver that is
 *                               installed but broken
 *
 * Signatures and codes as in
 * https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html,
 * group__CUDA__DEVICE.html and group__CUDA__TYPES.html (CUresult is an
 * enum, passed as int). */
#include <stdlib.h>

#define EXPORT __attribute__ ((visibility ("default")))

enum { CU_SUCCESS = 0, CU_ERROR_NOT_INITIALIZED = 3, CU_ERROR_NO_DEVICE = 100 };

static int initialised;

static int
env_int (const char *name, int fallback)
{
  const char *v = getenv (name);
  return v && *v ? atoi (v) : fallback;
}

EXPORT int
cuInit (unsigned int flags)
{
  if (flags != 0)
    return 1; /* CUDA_ERROR_INVALID_VALUE: flags must be 0 */
  const int error = env_int ("WHISPER_EMU_DRIVER_ERROR", 0);
  if (error != 0)
    return error;
  if (env_int ("WHISPER_EMU_NO_DEVICE", 0) == 1)
    return CU_ERROR_NO_DEVICE;
  initialised = 1;
  return CU_SUCCESS;
}

EXPORT int
cuDeviceGetCount (int *count)
{
  if (!initialised)
    return CU_ERROR_NOT_INITIALIZED;
  const int n = env_int ("WHISPER_EMU_DEVICE_COUNT", 1);
  *count = n > 0 ? n : 1;
  return CU_SUCCESS;
}
