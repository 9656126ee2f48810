/* whisper-net.c: the network's work buffers (whisper-net.h). */
#include "whisper-net.h"

gboolean
whisper_net_alloc_buffers (WhisperNet *net, const WhisperNetBuffer *plan, gsize n_plan,
                           GError **error)
{
  WhisperBackend *be = net->backend;
  for (gsize i = 0; i < n_plan; i++) {
    *plan[i].p = be->ops->alloc (be, plan[i].n, error);
    if (!*plan[i].p)
      return FALSE;
  }
  return TRUE;
}

void
whisper_net_free_buffers (WhisperNet *net, const WhisperNetBuffer *plan, gsize n_plan)
{
  for (gsize i = 0; i < n_plan; i++) {
    if (*plan[i].p)
      net->backend->ops->free (net->backend, *plan[i].p);
    *plan[i].p = NULL;
  }
}
