/* whisper-words.c: one window's words and times, as faster-whisper's
 * add_word_timestamps() and find_alignment() compute them, and its
 * hallucination_silence_threshold rule (faster_whisper/transcribe.py,
 * https://github.com/SYSTRAN/faster-whisper). See whisper-words.h. */
#include "whisper-words.h"
#include "whisper-alignment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS_PER_SECOND 50.0   /* 16000 / (2 * 160) */
#define FRAMES_PER_SECOND 100.0

/* Python's round(x, 2) on these sums (multiples of 0.01 up to rounding) */
static double
round2 (double x)
{
  return nearbyint (x * 100.0) / 100.0;
}

static int
compare_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* np.median */
static double
median (double *v, int n)
{
  qsort (v, n, sizeof (double), compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* find_alignment(): the words of text + [eot] with their times (seconds
 * from the window start) and probabilities. Empty when there are none. */
static GPtrArray *
find_alignment (const WhisperTimingModel *tm, const gint32 *text, int n_text, gboolean on_unicode,
                const WhisperAlignResult *ar)
{
  g_autofree gint32 *with_eot = g_new (gint32, n_text + 1);
  memcpy (with_eot, text, n_text * sizeof (gint32));
  with_eot[n_text] = tm->info->token_eot;
  GPtrArray *words = whisper_words_split (tm, with_eot, n_text + 1, on_unicode);
  if (words->len <= 1 || ar->n_path == 0) {
    g_ptr_array_set_size (words, 0);
    return words;
  }
  /* jump times: the frame where each text row starts */
  g_autofree double *jump_times = g_new0 (double, n_text + 2);
  int n_jumps = 0;
  for (int i = 0; i < ar->n_path; i++)
    if ((i == 0 || ar->path[i].text != ar->path[i - 1].text) && n_jumps < n_text + 2)
      jump_times[n_jumps++] = ar->path[i].frame / TOKENS_PER_SECOND;
  g_ptr_array_remove_index (words, words->len - 1);  /* the eot's own word */
  int boundary = 0;
  for (guint w = 0; w < words->len; w++) {
    WhisperAlignWord *word = g_ptr_array_index (words, w);
    const int b0 = boundary, b1 = boundary + word->n_tok;
    word->start = jump_times[MIN (b0, n_jumps - 1)];
    word->end = jump_times[MIN (b1, n_jumps - 1)];
    double sum = 0.0;
    for (int t = b0; t < b1 && t < ar->n_text; t++)
      sum += ar->text_token_probs[t];
    word->probability = b1 > b0 ? sum / (b1 - b0) : NAN;
    boundary = b1;
  }
  return words;
}

static gboolean
in_marks (const char *word)
{
  return strstr (".。!！?？", word) != NULL;
}

static void
segment_set_words (WhisperSegment *seg, GArray *words)
{
  seg->n_words = words->len;
  seg->words = (WhisperWord *) g_array_free (words, FALSE);
}

gboolean
whisper_words_add (WhisperDecoderState *st, const WhisperTimingModel *tm, GPtrArray *segments,
                   const gint32 *sot_sequence, int n_sot, const char *language, double time_offset,
                   int segment_size, const char *prepended, const char *appended,
                   double last_speech_timestamp, GError **error)
{
  const int eot = tm->info->token_eot;
  if (segments->len == 0)
    return TRUE;

  /* the window's text tokens, and where each segment's start */
  GArray *text = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autofree int *seg_text_len = g_new0 (int, segments->len);
  for (guint s = 0; s < segments->len; s++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, s);
    for (gsize i = 0; i < seg->n_tokens; i++)
      if (seg->tokens[i] < eot) {
        g_array_append_val (text, seg->tokens[i]);
        seg_text_len[s]++;
      }
  }
  const int n_text = text->len;
  const gint32 *tokens = (const gint32 *) text->data;

  WhisperAlignResult ar = { 0 };
  if (n_text > 0 &&
      !whisper_align_window (st, tm, sot_sequence, n_sot, tokens, n_text, segment_size, &ar,
                             error)) {
    g_array_unref (text);
    return FALSE;
  }
  GPtrArray *alignment =
      n_text > 0 ? find_alignment (tm, tokens, n_text, whisper_words_split_on_unicode (language),
                                   &ar)
                 : g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_align_word_free);
  whisper_align_result_clear (&ar);

  /* median and maximum word durations; long words at sentence boundaries */
  const int n_words = alignment->len;
  g_autofree double *durations = g_new (double, MAX (n_words, 1));
  int n_dur = 0;
  for (int i = 0; i < n_words; i++) {
    const WhisperAlignWord *w = g_ptr_array_index (alignment, i);
    if (w->end - w->start != 0)
      durations[n_dur++] = w->end - w->start;
  }
  double median_duration = n_dur > 0 ? median (durations, n_dur) : 0.0;
  median_duration = MIN (0.7, median_duration);
  const double max_duration = median_duration * 2;
  if (n_dur > 0)
    for (int i = 1; i < n_words; i++) {
      WhisperAlignWord *w = g_ptr_array_index (alignment, i);
      const WhisperAlignWord *prev = g_ptr_array_index (alignment, i - 1);
      if (w->end - w->start > max_duration) {
        if (in_marks (w->text->str))
          w->end = w->start + max_duration;
        else if (in_marks (prev->text->str))
          w->start = w->end - max_duration;
      }
    }
  whisper_words_merge_punctuations (alignment, prepended, appended);

  /* hand the words to the segments */
  int word_index = 0, text_offset = 0;
  for (guint s = 0; s < segments->len; s++) {
    WhisperSegment *seg = g_ptr_array_index (segments, s);
    GArray *words = g_array_new (FALSE, TRUE, sizeof (WhisperWord));
    int saved_tokens = 0;
    while (word_index < n_words && saved_tokens < seg_text_len[s]) {
      const WhisperAlignWord *t = g_ptr_array_index (alignment, word_index);
      if (t->text->len > 0) {
        WhisperWord w = { 0 };
        w.text = g_strdup (t->text->str);
        w.start = round2 (time_offset + t->start);
        w.end = round2 (time_offset + t->end);
        w.probability = t->probability;
        /* its first token as an index into seg->tokens */
        int local = t->tok_start - text_offset, k = 0;
        w.first_token = 0;
        for (gsize i = 0; i < seg->n_tokens; i++)
          if (seg->tokens[i] < eot && k++ == local) {
            w.first_token = (int) i;
            break;
          }
        w.n_tokens = MIN (t->n_tok, (int) seg->n_tokens - w.first_token);
        g_array_append_val (words, w);
      }
      saved_tokens += t->n_tok;
      word_index++;
    }
    text_offset += seg_text_len[s];

    WhisperWord *wd = (WhisperWord *) words->data;
    const int nw = words->len;
    if (nw > 0) {
      /* the first and second word after a pause */
      if (wd[0].end - last_speech_timestamp > median_duration * 4 &&
          (wd[0].end - wd[0].start > max_duration ||
           (nw > 1 && wd[1].end - wd[0].start > max_duration * 2))) {
        if (nw > 1 && wd[1].end - wd[1].start > max_duration) {
          const double boundary = MAX (wd[1].end / 2, wd[1].end - max_duration);
          wd[0].end = wd[1].start = boundary;
        }
        wd[0].start = MAX (0, wd[0].end - max_duration);
      }
      /* the segment's start when the first word is too long */
      if (seg->start < wd[0].end && seg->start - 0.5 > wd[0].start)
        wd[0].start = MAX (0, MIN (wd[0].end - median_duration, seg->start));
      else
        seg->start = wd[0].start;
      /* the segment's end when the last word is too long */
      if (seg->end > wd[nw - 1].start && seg->end + 0.5 < wd[nw - 1].end)
        wd[nw - 1].end = MAX (wd[nw - 1].start + median_duration, seg->end);
      else
        seg->end = wd[nw - 1].end;
      last_speech_timestamp = seg->end;
    }
    segment_set_words (seg, words);
  }
  g_ptr_array_unref (alignment);
  g_array_unref (text);
  return TRUE;
}

gboolean
whisper_words_get_end (GPtrArray *segments, double *end)
{
  if (segments->len == 0)
    return FALSE;
  for (guint s = segments->len; s-- > 0;) {
    const WhisperSegment *seg = g_ptr_array_index (segments, s);
    if (seg->n_words > 0) {
      *end = seg->words[seg->n_words - 1].end;
      return TRUE;
    }
  }
  *end = ((const WhisperSegment *) g_ptr_array_index (segments, segments->len - 1))->end;
  return TRUE;
}

/* faster-whisper's punctuation list of generate_segments() */
static const char hallucination_punctuation[] = "\"'“¿([{-\"'.。,，!！?？:：”)]}、";

static double
word_anomaly_score (const WhisperWord *w)
{
  const double probability = w->probability;
  const double duration = w->end - w->start;
  double score = 0.0;
  if (probability < 0.15)
    score += 1.0;
  if (duration < 0.133)
    score += (0.133 - duration) * 15;
  if (duration > 2.0)
    score += duration - 2.0;
  return score;
}

static gboolean
is_segment_anomaly (const WhisperSegment *seg)
{
  if (!seg || seg->n_words == 0)
    return FALSE;
  double score = 0.0;
  int n = 0;
  for (gsize i = 0; i < seg->n_words && n < 8; i++) {
    if (strstr (hallucination_punctuation, seg->words[i].text))
      continue;
    score += word_anomaly_score (&seg->words[i]);
    n++;
  }
  return score >= 3 || score + 0.01 >= n;
}

static const WhisperSegment *
next_words_segment (GPtrArray *segments, guint from)
{
  for (guint i = from; i < segments->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, i);
    if (seg->n_words > 0)
      return seg;
  }
  return NULL;
}

gboolean
whisper_words_hallucination_skip (GPtrArray *segments, double threshold, double time_offset,
                                  double segment_duration, double window_end_time,
                                  double content_duration, gsize content_frames,
                                  gsize previous_seek, double last_speech_timestamp, gsize *seek)
{
  /* a first segment that may be a hallucination: skip the silence before it */
  const WhisperSegment *first = next_words_segment (segments, 0);
  if (first && is_segment_anomaly (first)) {
    const double gap = first->start - time_offset;
    if (gap > threshold) {
      *seek = previous_seek + (gsize) nearbyint (gap * FRAMES_PER_SECOND);
      return TRUE;
    }
  }
  /* skip the silence before a possible hallucination surrounded by silence
   * or more hallucinations */
  double hal_last_end = last_speech_timestamp;
  for (guint si = 0; si < segments->len; si++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, si);
    if (seg->n_words == 0)
      continue;
    if (is_segment_anomaly (seg)) {
      const WhisperSegment *next = next_words_segment (segments, si + 1);
      const double hal_next_start = next ? next->words[0].start : time_offset + segment_duration;
      const gboolean silence_before = seg->start - hal_last_end > threshold ||
                                      seg->start < threshold || seg->start - time_offset < 2.0;
      const gboolean silence_after = hal_next_start - seg->end > threshold ||
                                     is_segment_anomaly (next) ||
                                     window_end_time - seg->end < 2.0;
      if (silence_before && silence_after) {
        *seek = (gsize) nearbyint (MAX (time_offset + 1, seg->start) * FRAMES_PER_SECOND);
        if (content_duration - seg->end < threshold)
          *seek = content_frames;
        g_ptr_array_remove_range (segments, si, segments->len - si);
        break;
      }
    }
    hal_last_end = seg->end;
  }
  return FALSE;
}

gboolean
whisper_words_window (WhisperDecoderState *st, const WhisperTimingModel *tm, GPtrArray *window,
                      const gint32 *sampled, int n_sampled, const gint32 *sot_sequence, int n_sot,
                      const char *language, double time_offset, int segment_size,
                      gsize previous_seek, gsize content_frames, const char *prepended,
                      const char *appended, double hallucination_silence_threshold,
                      double *last_speech_timestamp, gsize *seek, gboolean *skip_window,
                      guint *n_keep, GError **error)
{
  const int begin = tm->info->token_timestamp_begin;
  const gboolean single_ending =
      n_sampled >= 2 && sampled[n_sampled - 2] < begin && sampled[n_sampled - 1] >= begin;

  *skip_window = FALSE;
  *n_keep = window->len;
  whisper_turn_lock_acquire (&tm->net->compute_lock);
  gboolean ok = whisper_words_add (st, tm, window, sot_sequence, n_sot, language, time_offset,
                                   segment_size, prepended, appended, *last_speech_timestamp,
                                   error);
  whisper_turn_lock_release (&tm->net->compute_lock);
  if (!ok)
    return FALSE;
  double last_word_end;
  if (!single_ending && whisper_words_get_end (window, &last_word_end) &&
      last_word_end > time_offset)
    *seek = (gsize) nearbyint (last_word_end * FRAMES_PER_SECOND);

  const double threshold = hallucination_silence_threshold;
  if (threshold >= 0) {
    const double segment_duration = segment_size / FRAMES_PER_SECOND;
    const double window_end_time =
        (previous_seek + 2 * tm->net->max_encoder_length) / FRAMES_PER_SECOND;
    const double content_duration = content_frames / FRAMES_PER_SECOND;
    const guint before = window->len;
    g_autoptr (GPtrArray) kept = g_ptr_array_new ();
    for (guint i = 0; i < window->len; i++)
      g_ptr_array_add (kept, g_ptr_array_index (window, i));
    if (whisper_words_hallucination_skip (kept, threshold, time_offset, segment_duration,
                                          window_end_time, content_duration, content_frames,
                                          previous_seek, *last_speech_timestamp, seek)) {
      *skip_window = TRUE;
      return TRUE;
    }
    *n_keep = kept->len;
    if (kept->len < before && whisper_words_get_end (kept, &last_word_end))
      *last_speech_timestamp = last_word_end;
    if (kept->len < before)
      return TRUE;
  }
  if (whisper_words_get_end (window, &last_word_end))
    *last_speech_timestamp = last_word_end;
  return TRUE;
}
