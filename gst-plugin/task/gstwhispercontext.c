/* gstwhispercontext.c: the left context of live decodes (see
 * gstwhispercontext.h). */
#include "task/gstwhispercontext.h"

#include <string.h>

static guint64
seconds_to_samples (const GstWhisperContext *ctx, double s)
{
  return (guint64) (s * ctx->rate + 0.5);
}

void
gst_whisper_context_init (GstWhisperContext *ctx, gint rate)
{
  memset (ctx, 0, sizeof (*ctx));
  ctx->rate = rate;
  ctx->audio = g_array_new (FALSE, FALSE, sizeof (float));
  ctx->input = g_array_new (FALSE, FALSE, sizeof (float));
}

void
gst_whisper_context_clear (GstWhisperContext *ctx)
{
  g_clear_pointer (&ctx->audio, g_array_unref);
  g_clear_pointer (&ctx->input, g_array_unref);
}

void
gst_whisper_context_reset (GstWhisperContext *ctx)
{
  g_array_set_size (ctx->audio, 0);
  g_array_set_size (ctx->input, 0);
  ctx->through = 0;
  ctx->newest_end = 0;
}

void
gst_whisper_context_keep (GstWhisperContext *ctx, const float *window, guint64 window_start,
    guint64 to, guint64 committed_end, gboolean any_committed, double max_s)
{
  const guint64 from = MAX (window_start, ctx->through);
  const guint64 max = max_s > 0 ? seconds_to_samples (ctx, max_s) : 0;
  guint64 upto = MIN (to, committed_end + seconds_to_samples (ctx,
          GST_WHISPER_CONTEXT_AFTER_WORD_S));

  ctx->through = MAX (ctx->through, to);
  if (max == 0) {
    g_array_set_size (ctx->audio, 0);
    return;
  }
  if (!any_committed || upto <= from)
    return;
  g_array_append_vals (ctx->audio, window + (from - window_start), (guint) (upto - from));
  ctx->newest_end = upto;
  if (ctx->audio->len > max)
    g_array_remove_range (ctx->audio, 0, ctx->audio->len - (guint) max);
}

void
gst_whisper_context_input (GstWhisperContext *ctx, const float *window, guint64 window_start,
    gsize n, guint64 speech_start, GstWhisperLiveInput *in)
{
  const guint64 pad = seconds_to_samples (ctx, GST_WHISPER_CONTEXT_SPLICE_PAD_S);
  gsize skip = 0;

  in->pcm = in->window = window;
  in->n = in->window_n = n;
  in->start = in->splice = in->window_start = window_start;
  if (ctx->audio->len == 0 || speech_start == G_MAXUINT64
      || ctx->newest_end + seconds_to_samples (ctx, GST_WHISPER_CONTEXT_MAX_AGE_S)
      < window_start + n)
    return;
  if (speech_start > window_start + pad)
    skip = (gsize) MIN (speech_start - pad - window_start, (guint64) n);
  /* (the context came before the buffer: never true, but start is unsigned) */
  if (window_start + skip < ctx->audio->len)
    return;
  g_array_set_size (ctx->input, 0);
  g_array_append_vals (ctx->input, ctx->audio->data, ctx->audio->len);
  g_array_append_vals (ctx->input, window + skip, (guint) (n - skip));
  in->pcm = (const float *) ctx->input->data;
  in->n = ctx->input->len;
  in->splice = window_start + skip;
  in->start = in->splice - ctx->audio->len;
}

guint64
gst_whisper_live_speech_from (const GArray *speech, guint64 window_start,
    guint64 committed_end, guint64 margin)
{
  for (guint i = 0; speech && i < speech->len; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    if (window_start + (guint64) r->end_sample > committed_end + margin)
      return MAX (window_start + (guint64) r->start_sample, committed_end);
  }
  return G_MAXUINT64;
}
