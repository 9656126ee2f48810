/* gstwhisperagree.c: see gstwhisperagree.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhisperagree.h"
#include "task/gstwhispercommit.h"

#include <string.h>

void
gst_whisper_agreed_word_clear (gpointer word)
{
  g_free (((GstWhisperAgreedWord *) word)->text);
}

void
gst_whisper_agree_init (GstWhisperAgree *a)
{
  memset (a, 0, sizeof *a);
  a->prev = g_ptr_array_new_with_free_func (g_free);
}

void
gst_whisper_agree_clear (GstWhisperAgree *a)
{
  g_clear_pointer (&a->prev, g_ptr_array_unref);
}

void
gst_whisper_agree_reset (GstWhisperAgree *a)
{
  g_ptr_array_set_size (a->prev, 0);
  a->committed = 0;
  a->start = 0;
  a->cps = 0.0;
}

void
gst_whisper_agree_begin (GstWhisperAgree *a, guint64 start)
{
  if (start == a->start)
    return;
  g_ptr_array_set_size (a->prev, 0);
  a->committed = 0;
  a->start = start;
}

/* The words of `text`, each with the white space before it, and the byte
 * offsets of their ends (`ends`, may be NULL). */
static GPtrArray *
split_words (const gchar *text, GArray *ends)
{
  GPtrArray *words = g_ptr_array_new_with_free_func (g_free);
  const gchar *p = text;

  while (*p) {
    const gchar *w = p;
    while (*p && g_ascii_isspace (*p))
      p++;
    if (*p == '\0')
      break;
    while (*p && !g_ascii_isspace (*p))
      p++;
    g_ptr_array_add (words, g_strndup (w, p - w));
    if (ends) {
      gsize end = (gsize) (p - text);
      g_array_append_val (ends, end);
    }
  }
  return words;
}

static gboolean
same_word (const gchar *a, const gchar *b)
{
  g_autofree gchar *x = gst_whisper_commit_normalise (a);
  g_autofree gchar *y = gst_whisper_commit_normalise (b);

  return strcmp (x, y) == 0;
}

/* Word `i` of `words` (ending at byte `ends[i]` of the text) with its
 * estimated times. */
static GstWhisperAgreedWord
agreed_word (const GstWhisperAgree *a, GPtrArray *words, GArray *ends, guint i,
    double seconds)
{
  const gchar *w = words->pdata[i];
  gsize end = g_array_index (ends, gsize, i);
  gsize start = end - strlen (w) + strspn (w, " \t\r\n");
  double cps = a->cps > 0.0 ? a->cps : GST_WHISPER_AGREE_CPS;
  GstWhisperAgreedWord out;

  out.text = g_strstrip (g_strdup (w));
  out.from = start;
  out.to = end;
  out.start = CLAMP (start / cps, 0.0, seconds);
  out.end = CLAMP (end / cps, out.start, seconds);
  return out;
}

/* Commits words [a->committed, n) of `words`; returns how many. */
static guint
commit_words (GstWhisperAgree *a, GPtrArray *words, GArray *ends, guint n, double seconds,
    GArray *out)
{
  guint i;

  for (i = a->committed; i < n; i++) {
    GstWhisperAgreedWord w = agreed_word (a, words, ends, i, seconds);
    g_array_append_val (out, w);
  }
  if (n <= a->committed)
    return 0;
  i = n - a->committed;
  a->committed = n;
  return i;
}

guint
gst_whisper_agree_update (GstWhisperAgree *a, const gchar *text, gboolean complete,
    double seconds, GArray *out)
{
  g_autoptr (GArray) ends = g_array_new (FALSE, FALSE, sizeof (gsize));
  g_autoptr (GPtrArray) words = split_words (text, ends);
  /* the last word of a partial answer may still grow */
  guint usable = complete || words->len == 0 ? words->len : words->len - 1;
  guint n = 0;

  while (n < usable && n < a->prev->len && same_word (words->pdata[n], a->prev->pdata[n]))
    n++;
  return commit_words (a, words, ends, n, seconds, out);
}

void
gst_whisper_agree_finish (GstWhisperAgree *a, const gchar *text, double seconds, GArray *out,
    GString *gone)
{
  g_autoptr (GArray) ends = g_array_new (FALSE, FALSE, sizeof (gsize));
  g_autoptr (GPtrArray) words = split_words (text, ends);

  commit_words (a, words, ends, words->len, seconds, out);
  g_string_append (gone, text);
}

void
gst_whisper_agree_keep (GstWhisperAgree *a, const gchar *text, double seconds)
{
  g_autoptr (GPtrArray) words = split_words (text, NULL);
  gsize len = strlen (text);

  g_ptr_array_set_size (a->prev, 0);
  for (guint i = 0; i < words->len; i++)
    g_ptr_array_add (a->prev, g_strdup (words->pdata[i]));
  if (len > 0 && seconds > 0.0)
    a->cps = len / seconds;
}
