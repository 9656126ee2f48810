/* reference-common.c: see reference-common.h. */
#include "reference-common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "whisper.h"

#ifndef WHISPER_TEST_SOURCE_ROOT
#error "meson passes -DWHISPER_TEST_SOURCE_ROOT"
#endif

static G_NORETURN void
ref_die (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

static void
ref_die (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_printerr ("FAIL: %s\n", msg);
  exit (1);
}

const char *
ref_source_root (void)
{
  const char *v = g_getenv ("WHISPER_SOURCE_ROOT");
  return v && *v ? v : WHISPER_TEST_SOURCE_ROOT;
}

const char *
ref_shared_data (void)
{
  static char *fallback;
  const char *v = g_getenv ("WHISPER_SHARED_DATA");
  if (v && *v)
    return v;
  if (!fallback)
    fallback = g_build_filename (ref_source_root (), "..", "shared", "data", NULL);
  return fallback;
}

const char *
ref_root_dir (const char *root_variable)
{
  if (g_strcmp0 (root_variable, "WHISPER_SOURCE_ROOT") == 0)
    return ref_source_root ();
  if (g_strcmp0 (root_variable, "WHISPER_SHARED_DATA") == 0)
    return ref_shared_data ();
  return NULL;
}

char *
ref_fixture_path (const char *name)
{
  return g_build_filename (ref_source_root (), "tests", "reference", "fixtures", name, NULL);
}

JsonParser *
ref_load_json (const char *path)
{
  g_autoptr (GError) error = NULL;
  JsonParser *parser = json_parser_new_immutable ();
  if (!json_parser_load_from_file (parser, path, &error))
    ref_die ("cannot read fixture %s: %s (regenerate with tests/reference/make-reference.py)",
             path, error->message);
  JsonNode *root = json_parser_get_root (parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT (root))
    ref_die ("fixture %s: the top level is not a JSON object", path);
  return parser;
}

static JsonNode *
ref_member (JsonObject *obj, const char *member)
{
  JsonNode *node = json_object_get_member (obj, member);
  if (!node)
    ref_die ("fixture: member \"%s\" is missing", member);
  return node;
}

JsonObject *
ref_object (JsonObject *obj, const char *member)
{
  JsonNode *node = ref_member (obj, member);
  if (!JSON_NODE_HOLDS_OBJECT (node))
    ref_die ("fixture: member \"%s\" is not an object", member);
  return json_node_get_object (node);
}

JsonArray *
ref_array (JsonObject *obj, const char *member)
{
  JsonNode *node = ref_member (obj, member);
  if (!JSON_NODE_HOLDS_ARRAY (node))
    ref_die ("fixture: member \"%s\" is not an array", member);
  return json_node_get_array (node);
}

static gboolean
ref_node_number (JsonNode *node, double *out)
{
  if (!JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  GType t = json_node_get_value_type (node);
  if (t == G_TYPE_INT64)
    *out = (double) json_node_get_int (node);
  else if (t == G_TYPE_DOUBLE)
    *out = json_node_get_double (node);
  else
    return FALSE;
  return TRUE;
}

double
ref_double (JsonObject *obj, const char *member)
{
  double v;
  if (!ref_node_number (ref_member (obj, member), &v))
    ref_die ("fixture: member \"%s\" is not a number", member);
  return v;
}

gint64
ref_int (JsonObject *obj, const char *member)
{
  JsonNode *node = ref_member (obj, member);
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_INT64)
    ref_die ("fixture: member \"%s\" is not an integer", member);
  return json_node_get_int (node);
}

const char *
ref_string (JsonObject *obj, const char *member)
{
  JsonNode *node = ref_member (obj, member);
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    ref_die ("fixture: member \"%s\" is not a string", member);
  return json_node_get_string (node);
}

float *
ref_float_array (JsonArray *array, gsize *n_out)
{
  guint n = json_array_get_length (array);
  float *out = g_new (float, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    double v;
    if (!ref_node_number (json_array_get_element (array, i), &v))
      ref_die ("fixture: element %u of a number array is not a number", i);
    out[i] = (float) v;
  }
  *n_out = n;
  return out;
}

gint32 *
ref_int32_array (JsonArray *array, gsize *n_out)
{
  guint n = json_array_get_length (array);
  gint32 *out = g_new (gint32, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    JsonNode *node = json_array_get_element (array, i);
    if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_INT64)
      ref_die ("fixture: element %u of an integer array is not an integer", i);
    out[i] = (gint32) json_node_get_int (node);
  }
  *n_out = n;
  return out;
}

char *
ref_sha256_f32 (const float *data, gsize n)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
  g_checksum_update (sum, (const guchar *) data, n * sizeof (float));
#else
  for (gsize i = 0; i < n; i++) {
    guint32 u;
    memcpy (&u, &data[i], 4);
    u = GUINT32_TO_LE (u);
    g_checksum_update (sum, (const guchar *) &u, 4);
  }
#endif
  return g_strdup (g_checksum_get_string (sum));
}

float *
ref_read_f32_file (const char *path, gsize n_expected, const char *sha256_hex)
{
  g_autoptr (GError) error = NULL;
  gchar *contents = NULL;
  gsize length = 0;
  if (!g_file_get_contents (path, &contents, &length, &error))
    ref_die ("cannot read fixture %s: %s", path, error->message);
  if (length != n_expected * sizeof (float))
    ref_die ("fixture %s: %" G_GSIZE_FORMAT " bytes, expected %" G_GSIZE_FORMAT
             " (float32 [%" G_GSIZE_FORMAT "])", path, length, n_expected * sizeof (float),
             n_expected);
  float *out = g_new (float, MAX (n_expected, 1));
  for (gsize i = 0; i < n_expected; i++) {
    guint32 u;
    memcpy (&u, contents + 4 * i, 4);
    u = GUINT32_FROM_LE (u);
    memcpy (&out[i], &u, 4);
  }
  g_free (contents);
  if (sha256_hex) {
    g_autofree char *sum = ref_sha256_f32 (out, n_expected);
    if (g_ascii_strcasecmp (sum, sha256_hex) != 0)
      ref_die ("fixture %s: SHA-256 %s, the JSON header says %s", path, sum, sha256_hex);
  }
  return out;
}

gboolean
ref_default_model_present (void)
{
  g_autofree char *dir = whisper_engine_default_model_path ();
  g_autofree char *bin = dir ? g_build_filename (dir, "model.bin", NULL) : NULL;
  if (bin && g_file_test (bin, G_FILE_TEST_IS_REGULAR))
    return TRUE;
  g_printerr ("FAIL: the default model is missing: no %s.\n"
              "      Install it with tools/fetch-model.sh (CI does), or point $WHISPER_MODEL "
              "at a CTranslate2 tiny.en directory.\n",
              bin ? bin : "(no default model path)");
  return FALSE;
}

double
ref_max_abs_diff (const float *a, const float *b, gsize n, gsize *argmax_out)
{
  double worst = 0.0;
  gsize where = 0;
  for (gsize i = 0; i < n; i++) {
    double d = fabs ((double) a[i] - (double) b[i]);
    if (isnan (d))
      d = INFINITY;
    if (d > worst) {
      worst = d;
      where = i;
    }
  }
  if (argmax_out)
    *argmax_out = where;
  return worst;
}

RefTranscript *
ref_transcribe (WhisperEngine *engine, const float *pcm, gsize n_samples)
{
  return ref_transcribe_words (engine, pcm, n_samples, FALSE);
}

RefTranscript *
ref_transcribe_words (WhisperEngine *engine, const float *pcm, gsize n_samples,
                      gboolean word_timestamps)
{
  RefTranscript *t = g_new0 (RefTranscript, 1);
  GError *error = NULL;
  WhisperStream *stream = whisper_stream_new (engine, &error);
  if (!stream) {
    t->error = error;
    return t;
  }
  WhisperDecodeOptions options;
  whisper_decode_options_init (&options);
  /* the reference's rules only: no silence gate, the plain no-speech rule */
  options.silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;
  options.strict_no_speech = FALSE;
  options.word_timestamps = word_timestamps;
  whisper_stream_set_options (stream, &options);

  GPtrArray *segments = NULL;
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok = whisper_stream_transcribe (stream, pcm, n_samples, NULL, NULL, &segments, &error);
  t->seconds = (g_get_monotonic_time () - t0) / 1e6;
  WhisperStreamStats stats;
  whisper_stream_get_stats (stream, &stats);
  t->windows = stats.windows;
  whisper_stream_free (stream);
  if (!ok) {
    t->error = error;
    if (segments)
      g_ptr_array_unref (segments);
    return t;
  }
  if (!segments)
    segments = g_ptr_array_new ();
  t->segments = segments;

  GArray *all = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (guint i = 0; i < segments->len; i++) {
    const WhisperSegment *s = g_ptr_array_index (segments, i);
    g_array_append_vals (all, s->tokens, s->n_tokens);
  }
  t->n_tokens = all->len;
  t->tokens = (gint32 *) g_array_free (all, FALSE);
  return t;
}

void
ref_transcript_free (RefTranscript *t)
{
  if (!t)
    return;
  /* The array whisper_stream_transcribe() returns frees its segments. */
  if (t->segments)
    g_ptr_array_unref (t->segments);
  g_free (t->tokens);
  g_clear_error (&t->error);
  g_free (t);
}

gssize
ref_first_difference (const gint32 *a, gsize n_a, const gint32 *b, gsize n_b)
{
  gsize n = MIN (n_a, n_b);
  for (gsize i = 0; i < n; i++)
    if (a[i] != b[i])
      return (gssize) i;
  return n_a == n_b ? -1 : (gssize) n;
}

char *
ref_describe_tokens (const WhisperEngine *engine, const gint32 *ids, gsize n, gssize from,
                     gssize to)
{
  GString *s = g_string_new (NULL);
  from = MAX (from, 0);
  to = MIN (to, (gssize) n);
  for (gssize i = from; i < to; i++) {
    g_autoptr (GBytes) bytes = whisper_engine_token_bytes (engine, ids[i]);
    gsize len = 0;
    const char *data = bytes ? g_bytes_get_data (bytes, &len) : NULL;
    g_autofree char *raw = data ? g_strndup (data, len) : NULL;
    g_autofree char *piece = raw ? g_strescape (raw, NULL) : g_strdup ("?");
    g_string_append_printf (s, "%s%d:'%s'", i > from ? " " : "", ids[i], piece);
  }
  if (from >= to)
    g_string_append (s, "(end)");
  return g_string_free (s, FALSE);
}

char *
ref_joined_text (JsonArray *segments)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < json_array_get_length (segments); i++)
    g_string_append (s, ref_string (json_array_get_object_element (segments, i), "text"));
  return g_string_free (s, FALSE);
}

char *
ref_joined_segments (GPtrArray *segments)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; segments && i < segments->len; i++)
    g_string_append (s, ((WhisperSegment *) g_ptr_array_index (segments, i))->text);
  return g_string_free (s, FALSE);
}
