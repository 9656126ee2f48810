/* backend-cuda-core.c: what every other file of the CUDA module uses and
 * that uses none of them: entering the backend from a thread (its lock and
 * its device), the sticky error, device memory release (deferred while a
 * graph is recorded) and the workspaces that grow on demand.
 *
 * Dependencies between the module's files point one way:
 *   backend-cuda.c (entry point, op table)
 *     -> backend-cuda-ops.c, backend-cuda-logits.c (ops)
 *       -> backend-cuda-graph.c (submission, recording, CUDA graphs)
 *         -> backend-cuda-core.c (this file) */
#include "backend-cuda-private.h"
#include "whisper-error.h"

#include <stdarg.h>

/* ---- entering the backend ---------------------------------------------- */

/* The device is per thread in the CUDA runtime: a thread that never called
 * cudaSetDevice() works on device 0. The engine creates the backend on one
 * thread and runs inference on others (the element's streaming thread), so
 * every entry makes the backend's device current first: cudaSetDevice()
 * "should only take significant time when it initializes the runtime's
 * context state", which happens once per thread
 * (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html). */
void
wc_enter (WcBackend *self)
{
  g_mutex_lock (&self->lock);
  wc_fail (self, cudaSetDevice (self->device), "cudaSetDevice (making the backend's device "
                                               "current on this thread)");
}

void
wc_leave (WcBackend *self)
{
  g_mutex_unlock (&self->lock);
}

/* ---- errors ------------------------------------------------------------ */

static void
set_sticky (WcBackend *self, char *message)
{
  if (!self->error) {
    /* a message, not a warning: the error also reaches the engine (check(),
     * graph_end()), and tests of failure paths must not abort on it */
    g_message ("CUDA backend failed: %s", message);
    self->error = g_error_new_literal (WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE, message);
  }
  g_free (message);
}

gboolean
wc_fail (WcBackend *self, cudaError_t err, const char *what)
{
  if (err == cudaSuccess)
    return FALSE;
  set_sticky (self, g_strdup_printf ("%s: %s (%s)", what, cudaGetErrorString (err),
                                     cudaGetErrorName (err)));
  return TRUE;
}

gboolean
wc_fail_cublas (WcBackend *self, cublasStatus_t st, const char *what)
{
  if (st == CUBLAS_STATUS_SUCCESS)
    return FALSE;
  set_sticky (self, g_strdup_printf ("%s: cuBLAS %s (%s)", what, cublasGetStatusString (st),
                                     cublasGetStatusName (st)));
  return TRUE;
}

void
wc_fail_msg (WcBackend *self, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  set_sticky (self, g_strdup_vprintf (format, ap));
  va_end (ap);
}

/* ---- device memory ----------------------------------------------------- */

void
wc_device_free (WcBackend *self, void *ptr)
{
  if (!ptr)
    return;
  if (self->recording)
    g_ptr_array_add (self->deferred_free, ptr);
  else
    wc_fail (self, cudaFree (ptr), "cudaFree");
}

void
wc_run_deferred_frees (WcBackend *self)
{
  for (guint i = 0; i < self->deferred_free->len; i++)
    wc_fail (self, cudaFree (g_ptr_array_index (self->deferred_free, i)), "cudaFree");
  g_ptr_array_set_size (self->deferred_free, 0);
}

void *
wc_buffer_reserve (WcBackend *self, WcBuffer *buf, size_t bytes)
{
  if (bytes <= buf->size)
    return buf->ptr;
  void *p = NULL;
  /* grow by half again, so that slowly growing shapes settle quickly */
  size_t size = MAX (bytes, buf->size + buf->size / 2);
  if (wc_fail (self, cudaMalloc (&p, size), "cudaMalloc (workspace)"))
    return NULL;
  wc_device_free (self, buf->ptr);
  buf->ptr = p;
  buf->size = size;
  return p;
}
