/* programme.c: the real-speech programme of the live measurements
 * (programme.h). */
#include "programme.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include <whisper/whisper.h>

#define RATE PROGRAMME_RATE
#define NOISE_SIGMA PROGRAMME_NOISE_SIGMA

/* The published transcripts of jfk.wav and of the left channel of
 * stereo_diarization.wav. */
#define JFK_TEXT "And so my fellow Americans, ask not what your country can do for you, " \
  "ask what you can do for your country."
#define STEREO_LEFT_TEXT "He began a confused complaint against the wizard, who had " \
  "vanished behind the curtain on the left."

static Clip *
clip_load (const gchar *path, gint channel, const gchar *name, const gchar *text,
    GError **error)
{
  gsize n;
  float *pcm = whisper_audio_load_file (path, channel, &n, error);
  Clip *c;

  if (!pcm)
    return NULL;
  c = g_new0 (Clip, 1);
  c->name = g_strdup (name);
  c->text = g_strdup (text);
  c->pcm = pcm;
  c->n = n;
  return c;
}

void
programme_clip_free (gpointer data)
{
  Clip *c = data;

  g_free (c->name);
  g_free (c->text);
  g_free (c->pcm);
  g_free (c);
}

/* One line of a CMU Sphinx transcription file, "<s> words </s> (id)":
 * the words in `text`, the id in `id`. */
static gboolean
parse_transcription_line (const gchar *line, gchar **text, gchar **id)
{
  const gchar *open = strrchr (line, '('), *close = strrchr (line, ')');
  g_autofree gchar *words = NULL;
  g_autoptr (GString) s = NULL;

  if (!open || !close || close < open)
    return FALSE;
  *id = g_strstrip (g_strndup (open + 1, close - open - 1));
  words = g_strndup (line, open - line);
  s = g_string_new (words);
  g_string_replace (s, "<s>", " ", 0);
  g_string_replace (s, "</s>", " ", 0);
  *text = g_strstrip (g_strdup (s->str));
  return **id != '\0';
}

static gint
cmp_strings (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const gchar **) a, *(const gchar **) b);
}

/* The LibriVox clips of `dir`'s transcription file, in file (id) order. */
static gboolean
load_librivox (GPtrArray *clips, const gchar *dir, GError **error)
{
  g_autofree gchar *path = g_build_filename (dir, "transcription", NULL);
  g_autofree gchar *contents = NULL;
  g_auto (GStrv) lines = NULL;
  g_autoptr (GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) texts = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  guint i;

  if (!g_file_get_contents (path, &contents, NULL, error))
    return FALSE;
  lines = g_strsplit (contents, "\n", -1);
  for (i = 0; lines[i]; i++) {
    gchar *text, *id;
    if (!parse_transcription_line (lines[i], &text, &id))
      continue;
    g_ptr_array_add (ids, id);
    g_hash_table_replace (texts, id, text);
  }
  g_ptr_array_sort (ids, cmp_strings);
  for (i = 0; i < ids->len; i++) {
    const gchar *id = g_ptr_array_index (ids, i);
    g_autofree gchar *wav = g_strconcat (id, ".wav", NULL);
    g_autofree gchar *file = g_build_filename (dir, wav, NULL);
    const gchar *tail = strrchr (id, '-');
    Clip *c = clip_load (file, -1, tail ? tail + 1 : id, g_hash_table_lookup (texts, id),
        error);
    if (!c)
      return FALSE;
    g_ptr_array_add (clips, c);
  }
  if (ids->len == 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: no transcripts", path);
    return FALSE;
  }
  return TRUE;
}

gboolean
programme_load_clips (GPtrArray *clips, const gchar *data_dir, const gchar *librivox_dir,
    GError **error)
{
  g_autofree gchar *jfk = g_build_filename (data_dir, "jfk.wav", NULL);
  g_autofree gchar *stereo = g_build_filename (data_dir, "stereo_diarization.wav", NULL);
  Clip *c;

  if (!(c = clip_load (jfk, -1, "jfk", JFK_TEXT, error)))
    return FALSE;
  g_ptr_array_add (clips, c);
  if (!(c = clip_load (stereo, 0, "stereo-L", STEREO_LEFT_TEXT, error)))
    return FALSE;
  g_ptr_array_add (clips, c);
  return load_librivox (clips, librivox_dir, error);
}

/* One manifest line into a clip of `p` and its instance; FALSE (with the
 * reason) on a malformed line or a span outside the samples. */
static gboolean
made_line (Programme *p, const gchar *tsv, guint lineno, const gchar *line, GError **error)
{
  g_auto (GStrv) f = g_strsplit (line, "\t", 5);
  guint64 start = 0, end = 0;
  ClipSpan sp;
  Clip *c;

  if (g_strv_length (f) != 5 || !g_ascii_string_to_unsigned (f[2], 10, 0, p->n, &start, NULL)
      || !g_ascii_string_to_unsigned (f[3], 10, 0, p->n, &end, NULL) || end <= start) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s:%u: not \"name\tvoice\tstart\t"
        "end\ttext\" with 0 <= start < end <= %" G_GSIZE_FORMAT " samples", tsv, lineno, p->n);
    return FALSE;
  }
  c = g_new0 (Clip, 1);
  c->name = g_strdup (f[0]);
  c->text = g_strdup (f[4]);
  c->n = end - start;
  sp.clip = p->clips->len;
  sp.start = start;
  sp.end = end;
  g_ptr_array_add (p->clips, c);
  g_array_append_val (p->spans, sp);
  return TRUE;
}

gboolean
programme_load_made (Programme *p, const gchar *wav, GError **error)
{
  g_autofree gchar *stem = g_str_has_suffix (wav, ".wav")
      ? g_strndup (wav, strlen (wav) - 4) : g_strdup (wav);
  g_autofree gchar *tsv = g_strconcat (stem, ".tsv", NULL);
  g_autofree gchar *contents = NULL;
  g_auto (GStrv) lines = NULL;
  guint i;

  if (!g_file_get_contents (tsv, &contents, NULL, error))
    return FALSE;
  if (!(p->pcm = whisper_audio_load_file (wav, -1, &p->n, error)))
    return FALSE;
  p->clips = g_ptr_array_new_with_free_func (programme_clip_free);
  p->spans = g_array_new (FALSE, FALSE, sizeof (ClipSpan));
  lines = g_strsplit (contents, "\n", -1);
  for (i = 0; lines[i]; i++)
    if (*lines[i] && !made_line (p, tsv, i + 1, lines[i], error))
      return FALSE;
  if (p->spans->len == 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: no clips", tsv);
    return FALSE;
  }
  return TRUE;
}

/* A standard normal deviate (Box-Muller). */
static double
gaussian (GRand *r)
{
  double u = g_rand_double_range (r, DBL_MIN, 1.0), v = g_rand_double (r);
  return sqrt (-2.0 * log (u)) * cos (2.0 * G_PI * v);
}

void
programme_build (Programme *p, gdouble minutes, gint seed, guint first_clip)
{
  GArray *pcm = g_array_new (FALSE, FALSE, sizeof (float));
  GRand *r = g_rand_new_with_seed ((guint32) seed);
  const gsize want = (gsize) (minutes * 60 * RATE);
  guint k = 0;

  p->spans = g_array_new (FALSE, FALSE, sizeof (ClipSpan));
  while (pcm->len < want || k == 0) {
    const guint ci = (first_clip + k) % p->clips->len;
    const Clip *c = g_ptr_array_index (p->clips, ci);
    ClipSpan sp = { ci, pcm->len, pcm->len + c->n };
    gsize gap = (gsize) (g_rand_double_range (r, 1.0, 2.0) * RATE), i;

    g_array_append_vals (pcm, c->pcm, c->n);
    g_array_append_val (p->spans, sp);
    for (i = 0; i < gap; i++) {
      float x = (float) (NOISE_SIGMA * gaussian (r));
      g_array_append_val (pcm, x);
    }
    k++;
  }
  g_rand_free (r);
  p->n = pcm->len;
  p->pcm = (float *) g_array_free (pcm, FALSE);
}

gchar *
programme_text (const Programme *p, guint first_span)
{
  GString *s = g_string_new (NULL);
  guint k;

  for (k = 0; k < p->spans->len; k++) {
    const ClipSpan *sp = &g_array_index (p->spans, ClipSpan, (first_span + k) % p->spans->len);
    const Clip *c = g_ptr_array_index (p->clips, sp->clip);
    if (s->len)
      g_string_append_c (s, ' ');
    g_string_append (s, c->text);
  }
  return g_string_free (s, FALSE);
}

GstClockTime
programme_sample_time (gsize n)
{
  return gst_util_uint64_scale_int (n, GST_SECOND, RATE);
}

double
programme_secs (GstClockTime t)
{
  return (double) t / GST_SECOND;
}

void
programme_clear (Programme *p)
{
  g_clear_pointer (&p->clips, g_ptr_array_unref);
  if (p->spans)
    g_array_free (p->spans, TRUE);
  p->spans = NULL;
  g_clear_pointer (&p->pcm, g_free);
  p->n = 0;
}
