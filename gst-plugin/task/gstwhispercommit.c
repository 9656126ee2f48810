/* gstwhispercommit.c: LocalAgreement over timed words (see
 * gstwhispercommit.h). */
#include "task/gstwhispercommit.h"

#include <math.h>
#include <string.h>

/* A decode's word that starts before the committed end less this is audio
 * already committed (whisper_streaming's HypothesisBuffer.insert: 0.1 s). */
#define COMMITTED_OVERLAP_S 0.1
/* The n-gram check applies when the decode's first word is this close to
 * the committed end (the same code: 1 s). */
#define NGRAM_WINDOW_S 1.0
/* Two decodes' words agree when their texts match and their starts are
 * at most this far apart (a repeated word elsewhere does not agree). */
#define AGREE_WINDOW_S 1.0
/* Two decodes' readings of the audio the deadline commits cover the same
 * audio when their last words end at most this far apart. */
#define ALTERNATIVE_END_S 0.3
/* A decode's word that starts at most this far from the last committed
 * word's start reads that word's audio again, whatever its text and end
 * (two steps of the word alignment), when the alignment gave that word at
 * least REREAD_MIN_S: a word squeezed to nothing says nothing of where
 * its audio is. */
#define REREAD_START_S 0.04
#define REREAD_MIN_S 0.1

void
gst_whisper_timed_word_clear (GstWhisperTimedWord *word)
{
  g_clear_pointer (&word->text, g_free);
}

static void
timed_word_clear_func (gpointer data)
{
  gst_whisper_timed_word_clear (data);
}

GArray *
gst_whisper_timed_words_new (void)
{
  GArray *a = g_array_new (FALSE, TRUE, sizeof (GstWhisperTimedWord));

  g_array_set_clear_func (a, timed_word_clear_func);
  return a;
}

void
gst_whisper_commit_init (GstWhisperCommit *c, gint rate)
{
  memset (c, 0, sizeof (*c));
  c->rate = rate;
  c->agree_before = G_MAXUINT64;
  c->pending = gst_whisper_timed_words_new ();
  c->in_buffer = gst_whisper_timed_words_new ();
  c->text = g_string_new (NULL);
  c->speech = g_array_new (FALSE, FALSE, sizeof (GstWhisperCommitSpan));
}

static void
clear_tail (GstWhisperCommit *c)
{
  for (guint i = 0; i < GST_WHISPER_COMMIT_NGRAM; i++)
    g_clear_pointer (&c->tail[i], g_free);
}

void
gst_whisper_commit_clear (GstWhisperCommit *c)
{
  clear_tail (c);
  g_clear_pointer (&c->pending, g_array_unref);
  g_clear_pointer (&c->in_buffer, g_array_unref);
  g_clear_pointer (&c->speech, g_array_unref);
  if (c->text)
    g_string_free (c->text, TRUE);
  c->text = NULL;
}

void
gst_whisper_commit_reset (GstWhisperCommit *c)
{
  clear_tail (c);
  g_array_set_size (c->pending, 0);
  g_array_set_size (c->in_buffer, 0);
  g_string_truncate (c->text, 0);
  c->committed_end = 0;
  c->any_committed = FALSE;
  c->n_committed = c->n_forced = 0;
  c->agree_before = G_MAXUINT64;
  c->decoded_end = 0;
  c->context_end = 0;
  c->context_words = 0;
  c->pending_decoded_end = 0;
  c->pending_unread = FALSE;
  g_array_set_size (c->speech, 0);
}

gchar *
gst_whisper_commit_normalise (const gchar *text)
{
  GString *s = g_string_new (NULL);

  for (const gchar *p = text; p && *p; p = g_utf8_next_char (p)) {
    gunichar ch = g_utf8_get_char_validated (p, -1);
    if (ch == (gunichar) -1 || ch == (gunichar) -2)
      break;
    if (g_unichar_isalnum (ch))
      g_string_append_unichar (s, g_unichar_tolower (ch));
  }
  return g_string_free (s, FALSE);
}

gboolean
gst_whisper_commit_same_word (const gchar *a, const gchar *b)
{
  gsize i = 0;

  if (!a || !b || !*a || !*b)
    return FALSE;
  while (a[i] && a[i] == b[i])
    i++;
  return a[i] == '\0' || b[i] == '\0' || i >= 3;
}

static guint64
seconds_to_samples (const GstWhisperCommit *c, double s)
{
  return (guint64) (s * c->rate + 0.5);
}

/* The number of tail entries (the last committed words kept). */
static guint
tail_length (const GstWhisperCommit *c)
{
  guint n = 0;

  while (n < GST_WHISPER_COMMIT_NGRAM && c->tail[GST_WHISPER_COMMIT_NGRAM - 1 - n])
    n++;
  return n;
}

static void
remember_committed (GstWhisperCommit *c, const GstWhisperTimedWord *w)
{
  g_free (c->tail[0]);
  memmove (c->tail, c->tail + 1, (GST_WHISPER_COMMIT_NGRAM - 1) * sizeof (gchar *));
  c->tail[GST_WHISPER_COMMIT_NGRAM - 1] = gst_whisper_commit_normalise (w->text);

  GstWhisperTimedWord copy = *w;
  copy.text = g_strdup (w->text);
  g_array_append_val (c->in_buffer, copy);
}

void
gst_whisper_commit_trim (GstWhisperCommit *c, guint64 buffer_start)
{
  guint64 overlap = seconds_to_samples (c, COMMITTED_OVERLAP_S);
  guint64 limit = buffer_start > G_MAXUINT64 - overlap ? G_MAXUINT64 : buffer_start + overlap;
  guint n = 0;

  while (n < c->in_buffer->len
      && g_array_index (c->in_buffer, GstWhisperTimedWord, n).end <= limit) {
    g_string_append (c->text, g_array_index (c->in_buffer, GstWhisperTimedWord, n).text);
    n++;
  }
  g_array_remove_range (c->in_buffer, 0, n);
  /* Keep the prompt's characters and a margin; cut at a character. */
  if (c->text->len > 4 * GST_WHISPER_COMMIT_PROMPT_CHARS) {
    const gchar *keep = g_utf8_find_next_char (c->text->str + c->text->len
        - 2 * GST_WHISPER_COMMIT_PROMPT_CHARS - 1, NULL);
    g_string_erase (c->text, 0, keep - c->text->str);
  }
}

/* Moves word `w` (taken) to the committed words in `out`. */
static void
commit_word (GstWhisperCommit *c, GstWhisperTimedWord *w, gboolean forced, GArray *out)
{
  if (c->any_committed && w->start < c->committed_end)
    w->start = c->committed_end;
  if (w->end < w->start)
    w->end = w->start;
  remember_committed (c, w);
  c->committed_end = w->end;
  c->any_committed = TRUE;
  c->n_committed++;
  if (forced)
    c->n_forced++;
  g_array_append_vals (out, w, 1);
  w->text = NULL;
}

/* Whether `w`, a decode's word that ends well after the committed end
 * (normalised text `t`), is the last committed word read again: the same
 * word, or one that starts where that word starts (REREAD_START_S), which
 * the alignment gave REREAD_MIN_S or more. The end of a re-read word moves
 * with every decode ("1919." came back as "1990.", its end later each
 * time, until it was committed again as new speech, late; see
 * test_last_word_read_again). New speech has its start drawn back over
 * the pause before it, after the committed word's start ("ask" after
 * "Americans,", test_new_word_after_pause), or over a word read in the
 * noise before it, to well before that word's start ("And" over "were"). */
static gboolean
rereads_last (const GstWhisperCommit *c, const GstWhisperTimedWord *w, const gchar *t)
{
  const GstWhisperTimedWord *last;

  if (gst_whisper_commit_same_word (t, c->tail[GST_WHISPER_COMMIT_NGRAM - 1]))
    return TRUE;
  if (c->in_buffer->len == 0)
    return FALSE;
  last = &g_array_index (c->in_buffer, GstWhisperTimedWord, c->in_buffer->len - 1);
  return last->end >= last->start + seconds_to_samples (c, REREAD_MIN_S)
      && w->start + seconds_to_samples (c, REREAD_START_S) >= last->start
      && w->start <= last->start + seconds_to_samples (c, REREAD_START_S);
}

/* Drops the words of `hyp` that are audio already committed: by time, then
 * the first 1..GST_WHISPER_COMMIT_NGRAM words when they repeat the last
 * committed ones. */
static void
drop_committed (GstWhisperCommit *c, GArray *hyp)
{
  guint64 overlap = seconds_to_samples (c, COMMITTED_OVERLAP_S);
  guint64 from = c->committed_end > overlap ? c->committed_end - overlap : 0;
  guint n_tail, i = 0;

  if (!c->any_committed)
    return;
  /* a word starting before the committed end less the overlap, or whose
   * middle lies before the committed end (a re-decode split a committed
   * word: "my" became "am I", "I" squeezed against the committed end);
   * not one that ends well after the committed end, unless it is the last
   * committed word again (its end moved, rereads_last): new speech, its
   * start drawn back over the pause before it */
  const guint64 new_after = c->committed_end + seconds_to_samples (c,
      GST_WHISPER_COMMIT_NEW_AFTER_S);
  while (i < hyp->len) {
    const GstWhisperTimedWord *w = &g_array_index (hyp, GstWhisperTimedWord, i);
    if (w->start >= from && w->start + (w->end - w->start) / 2 >= c->committed_end)
      break;
    if (w->end > new_after) {
      g_autofree gchar *t = gst_whisper_commit_normalise (w->text);
      if (!rereads_last (c, w, t))
        break;
    }
    i++;
  }
  g_array_remove_range (hyp, 0, i);
  if (hyp->len == 0)
    return;

  /* near where this decode's committed audio ends: the committed end, or
   * the splice after its context of committed speech */
  GstWhisperTimedWord *first = &g_array_index (hyp, GstWhisperTimedWord, 0);
  guint64 near = seconds_to_samples (c, NGRAM_WINDOW_S);
  if (first->start > MAX (c->committed_end, c->context_end) + near)
    return;
  n_tail = tail_length (c);
  for (guint n = MIN (n_tail, hyp->len); n >= 1; n--) {
    gboolean same = TRUE;
    for (guint k = 0; k < n && same; k++) {
      g_autofree gchar *a = gst_whisper_commit_normalise (g_array_index (hyp,
              GstWhisperTimedWord, k).text);
      same = g_strcmp0 (a, c->tail[GST_WHISPER_COMMIT_NGRAM - n + k]) == 0;
    }
    if (same) {
      g_array_remove_range (hyp, 0, n);
      return;
    }
  }
}

static gboolean
words_agree (const GstWhisperCommit *c, const GstWhisperTimedWord *a,
    const GstWhisperTimedWord *b)
{
  guint64 apart = a->start > b->start ? a->start - b->start : b->start - a->start;
  g_autofree gchar *na = NULL, *nb = NULL;

  if (apart > seconds_to_samples (c, AGREE_WINDOW_S))
    return FALSE;
  na = gst_whisper_commit_normalise (a->text);
  nb = gst_whisper_commit_normalise (b->text);
  return strcmp (na, nb) == 0;
}

/* Whether `w`, the first word of a decode after the committed ones,
 * starts a sentence after a pause (GstWhisperCommit's start_hold). */
static gboolean
starts_after_pause (const GstWhisperCommit *c, const GstWhisperTimedWord *w)
{
  return !c->any_committed || gst_whisper_commit_ends_sentence (c)
      || w->start >= c->committed_end + seconds_to_samples (c, GST_WHISPER_COMMIT_PAUSE_S);
}

/* Whether word `i` of `hyp` (the first `agreed` of which the last decode
 * gave too) may be committed now, the words before it committed. */
static gboolean
may_commit (const GstWhisperCommit *c, const GstWhisperTimedWord *w, guint i, gboolean agreed,
    guint64 force_before, gboolean final)
{
  const guint64 heard_after = seconds_to_samples (c, GST_WHISPER_COMMIT_UNSURE_WAIT_S);

  if (final || w->end < force_before)
    return TRUE;
  if (!agreed || w->end > c->agree_before)
    return FALSE;
  if (w->probability < c->min_probability && c->decoded_end < w->end + heard_after)
    return FALSE;
  /* a sentence's first word after a pause: both decodes heard enough
   * after it (the earlier of the two heard less) */
  if (i == 0 && c->start_hold > 0 && starts_after_pause (c, w)
      && MIN (c->pending_decoded_end, c->decoded_end) < w->end + c->start_hold)
    return FALSE;
  return TRUE;
}

/* The mean log probability of words [from, to) of `words`. */
static double
mean_log_probability (const GArray *words, guint from, guint to)
{
  double sum = 0;

  for (guint i = from; i < to; i++)
    sum += log (MAX (g_array_index (words, GstWhisperTimedWord, i).probability, 1e-6));
  return sum / (to - from);
}

/* The deadline commits hyp's words [agreed, k), on which the last decode
 * (c->pending) disagreed. When the last decode's words for the same audio
 * (ending within ALTERNATIVE_END_S of hyp's word k-1, and followed by a
 * word that agrees with hyp's word k, or by none where hyp has none) are
 * more probable on average, they replace hyp's: of two readings of a
 * word heard too briefly ("my" at 0.52, "am I" at 0.15 and 0.93), the
 * newer is not the surer. Returns the new k. */
static guint
prefer_surer_reading (const GstWhisperCommit *c, GArray *hyp, guint agreed, guint k)
{
  const GArray *prev = c->pending;
  const guint64 end = g_array_index (hyp, GstWhisperTimedWord, k - 1).end;
  const guint64 tolerance = seconds_to_samples (c, ALTERNATIVE_END_S);

  for (guint j = agreed + 1; j <= prev->len; j++) {
    const GstWhisperTimedWord *last = &g_array_index (prev, GstWhisperTimedWord, j - 1);
    gboolean anchored = k < hyp->len
        ? j < prev->len && words_agree (c, &g_array_index (prev, GstWhisperTimedWord, j),
        &g_array_index (hyp, GstWhisperTimedWord, k))
        : j == prev->len;
    if (last->end > end + tolerance)
      break;
    if (!anchored || last->end + tolerance < end)
      continue;
    if (mean_log_probability (prev, agreed, j) <= mean_log_probability (hyp, agreed, k))
      return k;
    g_array_remove_range (hyp, agreed, k - agreed);
    for (guint i = agreed; i < j; i++) {
      GstWhisperTimedWord copy = g_array_index (prev, GstWhisperTimedWord, i);
      copy.text = g_strdup (copy.text);
      g_array_insert_val (hyp, i, copy);
    }
    return j;
  }
  return k;
}

/* Whether the detector heard speech at the middle of `w`. */
static gboolean
in_speech (const GstWhisperCommit *c, const GstWhisperTimedWord *w)
{
  const guint64 middle = w->start + (w->end - w->start) / 2;

  for (guint i = 0; i < c->speech->len; i++) {
    const GstWhisperCommitSpan *s = &g_array_index (c->speech, GstWhisperCommitSpan, i);
    if (middle >= s->start && middle < s->end)
      return TRUE;
  }
  return FALSE;
}

/* A decode that read committed words again and nothing after them
 * (`hyp` empty now, `n_read` words before drop_committed, or words of its
 * context only) though the last
 * decode read words where the detector hears speech did not read that
 * speech: after a committed sentence and a pause, Whisper often ends its
 * transcript with the committed words (the next sentence, read by one
 * decode and not by the next ones, came when a later decode read it
 * again, past its deadline; see test_unread_words_kept). The last
 * decode's words there stay pending as
 * it read them, up to the first one outside the detector's speech (their
 * deadline commits them; the next decode that reads them replaces or
 * agrees with them). A decode that gave no word at all is not such a
 * reading, and leaves nothing pending as before. Returns whether any were
 * kept. */
static gboolean
keep_unread (GstWhisperCommit *c, GArray *hyp, guint n_read)
{
  guint n = 0;

  if (c->speech->len == 0 || n_read + c->context_words == 0 || hyp->len > 0)
    return FALSE;
  while (n < c->pending->len && in_speech (c, &g_array_index (c->pending,
              GstWhisperTimedWord, n)))
    n++;
  for (guint i = 0; i < n; i++) {
    GstWhisperTimedWord copy = g_array_index (c->pending, GstWhisperTimedWord, i);
    copy.text = g_strdup (copy.text);
    g_array_append_val (hyp, copy);
  }
  return n > 0;
}

guint
gst_whisper_commit_update (GstWhisperCommit *c, GArray *hyp, guint64 force_before,
    gboolean final, GArray *out)
{
  guint agreed = 0, n = 0, i, k = 0;
  const guint n_read = hyp->len;
  gboolean kept;

  drop_committed (c, hyp);
  kept = keep_unread (c, hyp, n_read);
  /* (kept words are the last decode's own: no agreement) */
  while (!kept && agreed < hyp->len && agreed < c->pending->len
      && words_agree (c, &g_array_index (c->pending, GstWhisperTimedWord, agreed),
          &g_array_index (hyp, GstWhisperTimedWord, agreed)))
    agreed++;
  while (k < hyp->len && may_commit (c, &g_array_index (hyp, GstWhisperTimedWord, k), k,
          k < agreed, force_before, final))
    k++;
  if (!final && k > agreed)
    k = prefer_surer_reading (c, hyp, agreed, k);

  for (i = 0; i < k; i++) {
    commit_word (c, &g_array_index (hyp, GstWhisperTimedWord, i), i >= agreed, out);
    n++;
  }
  /* The rest waits for the next decode to agree (kept unread: as the
   * decode that read it heard it). */
  g_array_set_size (c->pending, 0);
  if (!kept)
    c->pending_decoded_end = c->decoded_end;
  c->pending_unread = kept;
  for (; i < hyp->len; i++) {
    GstWhisperTimedWord *w = &g_array_index (hyp, GstWhisperTimedWord, i);
    g_array_append_vals (c->pending, w, 1);
    w->text = NULL;
  }
  g_array_set_size (hyp, 0);
  return n;
}

guint
gst_whisper_commit_flush (GstWhisperCommit *c, GArray *out)
{
  guint n = c->pending->len;

  for (guint i = 0; i < n; i++)
    commit_word (c, &g_array_index (c->pending, GstWhisperTimedWord, i), TRUE, out);
  g_array_set_size (c->pending, 0);
  c->pending_unread = FALSE;
  return n;
}

const gchar *
gst_whisper_commit_prompt (const GstWhisperCommit *c)
{
  const gchar *p = c->text->str;

  if (c->text->len > GST_WHISPER_COMMIT_PROMPT_CHARS) {
    p = c->text->str + c->text->len - GST_WHISPER_COMMIT_PROMPT_CHARS;
    /* from the next word start (a space), else the next character */
    const gchar *space = strchr (p, ' ');
    p = space ? space : g_utf8_find_next_char (p - 1, NULL);
  }
  return p;
}

/* Whether the word that ends at `dot` (a '.') in `text` is an
 * abbreviation that does not end a sentence: a title ("Mr.", which a
 * model may write for "mister" in the middle of a sentence) or an
 * initial ("John F. Kennedy"; "I." is a word). */
static gboolean
is_abbreviation (const gchar *text, const gchar *dot)
{
  static const gchar *const titles[] = { "Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr",
    "Prof", "Rev", "Gen", "Col", "Capt", "Lt", "Sgt", "Gov", "Sen", "Rep", "Hon", "Mt",
  };
  const gchar *start = dot;

  while (start > text && g_ascii_isalpha (start[-1]))
    start--;
  if (start > text && !g_ascii_isspace (start[-1]))
    return FALSE;
  if (dot - start == 1)
    return g_ascii_isupper (*start) && *start != 'I';
  for (guint i = 0; i < G_N_ELEMENTS (titles); i++)
    if ((gsize) (dot - start) == strlen (titles[i])
        && strncmp (start, titles[i], dot - start) == 0)
      return TRUE;
  return FALSE;
}

/* Whether `text` ends in ".", "?", "!" or "…", before any closing quotes
 * or brackets and white space, and not in an abbreviation's "."
 * (is_abbreviation). */
static gboolean
text_ends_sentence (const gchar *text)
{
  const gchar *p = text + strlen (text);

  /* back over white space and what may close a sentence after its mark */
  while (p > text) {
    const gchar *prev = g_utf8_find_prev_char (text, p);
    gunichar ch = g_utf8_get_char (prev);
    gboolean closing = ch < 0x80 ? strchr ("\"')]", (int) ch) != NULL
        : ch == 0x201D || ch == 0x2019 || ch == 0xBB;     /* ” ’ » */
    if (!g_unichar_isspace (ch) && !closing)
      break;
    p = prev;
  }
  if (p == text)
    return FALSE;
  switch (g_utf8_get_char (g_utf8_find_prev_char (text, p))) {
    case '.':
      return !is_abbreviation (text, p - 1);
    case '?':
    case '!':
    case 0x2026:               /* … */
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
gst_whisper_commit_ends_sentence (const GstWhisperCommit *c)
{
  if (!c->any_committed)
    return FALSE;
  return text_ends_sentence (c->in_buffer->len > 0
      ? g_array_index (c->in_buffer, GstWhisperTimedWord, c->in_buffer->len - 1).text
      : c->text->str);
}

/* Whether word `tw`, ending by the onset's slack, may be noise: unsure and
 * after the committed words. */
static gboolean
noise_candidate (const GstWhisperCommit *c, const GstWhisperTimedWord *tw)
{
  return tw->end > c->committed_end && tw->probability < c->min_probability;
}

guint
gst_whisper_commit_drop_before_onset (const GstWhisperCommit *c, GArray *hyp, guint64 onset,
    GArray *dropped)
{
  const guint64 last_end = onset + (guint64) (GST_WHISPER_COMMIT_ONSET_SLACK_S * c->rate);
  const guint64 pad = (guint64) (GST_WHISPER_COMMIT_ONSET_PAD_S * c->rate);
  const guint64 pad_end = onset > pad ? onset - pad : 0;
  guint n = 0, upto = 0;

  /* the candidates up to the last one that ends a sentence or that ends
   * in the pad before the onset */
  for (guint i = 0; i < hyp->len; i++) {
    const GstWhisperTimedWord *tw = &g_array_index (hyp, GstWhisperTimedWord, i);
    if (tw->end > last_end)
      break;
    if (noise_candidate (c, tw) && (text_ends_sentence (tw->text) || tw->end <= pad_end))
      upto = i + 1;
  }
  for (guint i = 0; i < upto - n;) {
    GstWhisperTimedWord *tw = &g_array_index (hyp, GstWhisperTimedWord, i);
    if (noise_candidate (c, tw)) {
      g_array_append_val (dropped, *tw);
      tw->text = NULL;          /* moved */
      g_array_remove_index (hyp, i);
      n++;
    } else
      i++;
  }
  return n;
}

double
gst_whisper_commit_pending_slack (const GstWhisperCommit *c, guint64 call_end,
    double lag_s, double budget_s, double margin_s)
{
  guint64 oldest_end;
  double used;

  if (c->pending->len == 0)
    return NAN;
  /* at the decode's end the oldest pending word is lag_s + the decode's
   * duration later than the decode's audio end, which is this much after
   * the word's end */
  oldest_end = MIN (g_array_index (c->pending, GstWhisperTimedWord, 0).end, call_end);
  used = lag_s + (call_end - oldest_end) / (double) c->rate + margin_s;
  return MAX (budget_s - used, 0.0);
}
