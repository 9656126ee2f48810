/* cuda-driver-probe.h: is there an NVIDIA driver with a CUDA device, asked
 * of the driver alone, before the CUDA module (which maps the CUDA runtime
 * and cuBLAS, a large resident cost once loaded) is loaded. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE with the number of CUDA devices (>= 1), or FALSE with an error
 * (WHISPER_ENGINE_ERROR_DEVICE) saying that the driver library is missing,
 * fails to initialise, or sees no device. The driver library
 * (libcuda.so.1, installed with the NVIDIA driver, not with the toolkit)
 * stays loaded after a successful probe: the module uses it next. */
gboolean whisper_cuda_driver_probe (int *n_devices, GError **error);

G_END_DECLS
