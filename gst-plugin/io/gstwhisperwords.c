/* gstwhisperwords.c: words from token events (see gstwhisperwords.h). */
#include "io/gstwhisperwords.h"

#include <string.h>

#define MIN_WORD_SECONDS 0.02

void
gst_whisper_words_init (GstWhisperWords *w, gint32 token_eot)
{
  memset (w, 0, sizeof (*w));
  w->token_eot = token_eot;
  w->text = g_string_new (NULL);
  w->sec_per_word = GST_WHISPER_WORDS_INITIAL_SEC_PER_WORD;
  gst_whisper_words_begin_call (w);
}

void
gst_whisper_words_clear (GstWhisperWords *w)
{
  if (w->text)
    g_string_free (w->text, TRUE);
  w->text = NULL;
}

static void
reset_partial (GstWhisperWords *w)
{
  g_string_truncate (w->text, 0);
  w->logprob_sum = 0.0;
  w->n_tokens = 0;
  w->aligned_start = -1.0;
}

void
gst_whisper_words_begin_call (GstWhisperWords *w)
{
  reset_partial (w);
  w->seg_start = 0.0;
  w->seg_has_text = FALSE;
  w->seg_words = 0;
  w->last_end = 0.0;
  w->window_start = 0.0;
  w->window_seen = FALSE;
  w->attempt_words = 0;
  w->emitted_words = 0;
}

void
gst_whisper_word_clear (GstWhisperWord *word)
{
  g_clear_pointer (&word->text, g_free);
}

static void
start_window_or_attempt (GstWhisperWords *w, const WhisperTokenEvent *ev)
{
  if (w->window_seen && ev->window_start == w->window_start) {
    /* The same window again: a fallback decode. */
    w->attempt_words = 0;
  } else {
    w->window_start = ev->window_start;
    w->window_seen = TRUE;
    w->attempt_words = 0;
    w->emitted_words = 0;
  }
  reset_partial (w);
  w->seg_has_text = FALSE;
  w->seg_words = 0;
  w->seg_start = ev->window_start;
}

/* Completes the word being assembled; `closing_time` >= 0 when the segment's
 * closing timestamp completed it. Returns FALSE when there is no word or it
 * must not be given out again. */
static gboolean
complete_word (GstWhisperWords *w, const WhisperTokenEvent *ev, double closing_time,
    GstWhisperWord *word)
{
  gchar *text = g_strstrip (g_strdup (w->text->str));
  double start, end;
  gboolean give;

  if (*text == '\0') {
    g_free (text);
    reset_partial (w);
    return FALSE;
  }

  if (w->aligned_start >= 0.0) {
    /* word timestamps: the alignment heads' attention of the step that
     * chose the word's first token, and of the one that ended it */
    start = MAX (w->aligned_start - GST_WHISPER_WORDS_ALIGNED_SHIFT, 0.0);
    start = MAX (start, w->last_end);
    if (closing_time >= 0.0)
      end = MAX (closing_time, start + MIN_WORD_SECONDS);
    else if (ev->aligned_time - GST_WHISPER_WORDS_ALIGNED_SHIFT > start)
      end = ev->aligned_time - GST_WHISPER_WORDS_ALIGNED_SHIFT;
    else
      end = start + MIN_WORD_SECONDS;
  } else {
    start = w->seg_start + w->seg_words * w->sec_per_word;
    start = MAX (start, w->last_end);
    if (closing_time >= 0.0)
      end = MAX (closing_time, start + MIN_WORD_SECONDS);
    else
      end = start + w->sec_per_word;
  }

  w->seg_words++;
  w->last_end = end;
  w->attempt_words++;
  give = w->attempt_words > w->emitted_words;
  if (give) {
    w->emitted_words = w->attempt_words;
    word->text = text;
    word->start = start;
    word->end = end;
    word->avg_logprob = w->n_tokens ? w->logprob_sum / w->n_tokens : 0.0;
    word->step = ev->step;
    word->segment_start = w->seg_start;
  } else {
    g_free (text);
  }
  reset_partial (w);
  return give;
}

gboolean
gst_whisper_words_feed (GstWhisperWords *w, const WhisperTokenEvent *ev,
    GstWhisperWord *word)
{
  gboolean is_text = !ev->is_timestamp && ev->id < w->token_eot;
  const char *piece = ev->piece ? ev->piece : "";
  gboolean boundary = !is_text || piece[0] == ' ';
  gboolean closing = ev->is_timestamp && w->seg_has_text;
  gboolean completed = FALSE;

  memset (word, 0, sizeof (*word));
  if (ev->step == 0)
    start_window_or_attempt (w, ev);

  if (boundary && w->text->len > 0)
    completed = complete_word (w, ev, closing ? ev->time : -1.0, word);

  if (closing) {
    double seg_len = ev->time - w->seg_start;

    if (w->seg_words > 0 && seg_len > 0.0)
      w->sec_per_word = 0.7 * w->sec_per_word + 0.3 * (seg_len / w->seg_words);
    w->seg_has_text = FALSE;
  } else if (is_text) {
    if (!w->seg_has_text || ev->time != w->seg_start) {
      if (ev->time != w->seg_start)
        w->seg_words = 0;
      w->seg_start = ev->time;
      w->seg_has_text = TRUE;
    }
    if (w->text->len == 0 || (w->n_tokens == 0 && w->aligned_start < 0.0))
      w->aligned_start = ev->aligned_time;
    g_string_append (w->text, piece);
    w->logprob_sum += ev->logprob;
    w->n_tokens++;
  } else if (!ev->is_timestamp) {
    w->seg_has_text = FALSE;   /* EOT or another special token */
  }
  return completed;
}
