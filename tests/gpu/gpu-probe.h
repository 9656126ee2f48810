/* gpu-probe.h: does this machine have an NVIDIA driver that sees a CUDA
 * device? Asked by the tests themselves, independently of the engine (its
 * loader, engine/src/backend/backend-cuda-loader.c, and its driver probe,
 * engine/src/backend/cuda-driver-probe.c, are what the tests check), so that a
 * GPU test skips only where there is no driver or no device, and fails
 * wherever a device exists but the CUDA backend does not come up.
 *
 * How it decides: it dlopen()s the driver library (libcuda.so.1, installed
 * with the NVIDIA driver, not with the toolkit) and calls two functions of
 * the CUDA driver API, cuInit (0) and cuDeviceGetCount (&n)
 * (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html,
 * https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html),
 * whose CUresult codes are listed in
 * https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html:
 *
 *   the library cannot be loaded, or cuInit gives
 *   CUDA_ERROR_STUB_LIBRARY (34, the toolkit's stub)   -> GPU_PROBE_NO_DRIVER
 *   cuInit gives CUDA_ERROR_NO_DEVICE (100), or the
 *   driver counts 0 devices                            -> GPU_PROBE_NO_DEVICE
 *   both succeed with n >= 1                            -> GPU_PROBE_DEVICE
 *   anything else (a library without those functions,
 *   any other cuInit or cuDeviceGetCount error)         -> GPU_PROBE_BROKEN
 *
 * Device files (/dev/nvidia0, /proc/driver/nvidia/version) are not the
 * criterion: containers can show them without a usable device, and device
 * numbering need not start at 0. /proc/driver/nvidia/version is quoted in
 * the reason when present, for the log.
 *
 * Only GPU_PROBE_NO_DRIVER and GPU_PROBE_NO_DEVICE are reasons to skip;
 * GPU_PROBE_BROKEN is a failure (a driver is installed and does not work).
 *
 * Test-only setting: $WHISPER_GPU_TEST_DRIVER names another library to ask
 * instead of libcuda.so.1. The meson tests point it at the CPU emulator's
 * stand-in driver (emu/emu-driver.c), which answers like the emulated CUDA
 * module (WHISPER_EMU_NO_DEVICE, WHISPER_EMU_DEVICE_COUNT), so that "a
 * device exists" can be simulated on a machine without a GPU.
 *
 * Plain C and GLib, no other file of the project: other test folders can
 * build it too (meson: files('../gpu/gpu-probe.c')). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GPU_PROBE_DEVICE,
  GPU_PROBE_NO_DRIVER,
  GPU_PROBE_NO_DEVICE,
  GPU_PROBE_BROKEN,
} GpuProbeResult;

#define GPU_PROBE_DRIVER_LIBRARY "libcuda.so.1"

/* Asks the driver library `library` (a file name for the dynamic linker or
 * a path). Sets *n_devices (0 unless GPU_PROBE_DEVICE) and *reason (a
 * sentence naming the library and what it answered; free with g_free) when
 * not NULL. Not cached: each call asks again. */
GpuProbeResult gpu_probe_library (const char *library, int *n_devices, char **reason);

/* The library the tests ask: $WHISPER_GPU_TEST_DRIVER when set and not
 * empty, else libcuda.so.1. */
const char *gpu_probe_driver_library (void);

/* gpu_probe_library (gpu_probe_driver_library (), ...). */
GpuProbeResult gpu_probe (int *n_devices, char **reason);

/* TRUE where the probe's answer is a reason to skip (no driver, no
 * device). */
gboolean gpu_probe_is_skip (GpuProbeResult result);

/* TRUE when $WHISPER_REQUIRE_CUDA is "1": every reason to skip is then a
 * failure (tests/gpu/run-checks.sh sets it on the GPU machine). */
gboolean gpu_probe_require_cuda (void);

G_END_DECLS
