/* whisper-model-ct2-files.c: the side files of a CTranslate2 model
 * directory: config.json (suppressed tokens, alignment heads) and the
 * vocabulary (vocabulary.json or vocabulary.txt). */
#include "whisper-model-ct2.h"
#include "whisper-vocab.h"

#include <string.h>

#include <json-glib/json-glib.h>

/* Real side files are far smaller (config.json: a few KiB; a vocabulary:
 * 1-2 MiB); the limits keep a hostile file from costing gigabytes of parse
 * trees. */
#define CT2_MAX_CONFIG_BYTES (4u << 20)
#define CT2_MAX_VOCABULARY_BYTES (8u << 20)

static GMappedFile *
map_side_file (const char *file, gsize max_bytes, GError **error)
{
  g_autoptr (GError) io_error = NULL;
  g_autoptr (GMappedFile) mapped = g_mapped_file_new (file, FALSE, &io_error);
  if (mapped == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: cannot read the file: %s", file, io_error->message);
    return NULL;
  }
  if (g_mapped_file_get_length (mapped) > max_bytes) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %" G_GSIZE_FORMAT " bytes is too large for this file "
                 "(at most %" G_GSIZE_FORMAT ")", file,
                 g_mapped_file_get_length (mapped), max_bytes);
    return NULL;
  }
  return g_steal_pointer (&mapped);
}

static JsonParser *
parse_json_file (const char *file, gsize max_bytes, GError **error)
{
  g_autoptr (GMappedFile) mapped = map_side_file (file, max_bytes, error);
  if (mapped == NULL)
    return NULL;

  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) json_error = NULL;
  gsize length = g_mapped_file_get_length (mapped);
  const char *text = length > 0 ? g_mapped_file_get_contents (mapped) : "";
  if (!json_parser_load_from_data (parser, text, length, &json_error)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: not valid JSON: %s", file, json_error->message);
    return NULL;
  }
  if (json_parser_get_root (parser) == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: not valid JSON: the file is empty", file);
    return NULL;
  }
  return g_steal_pointer (&parser);
}

static gboolean
read_id_list (JsonObject *root, const char *member, const char *file,
              int n_vocab, int **ids_out, int *n_out, GError **error)
{
  if (!json_object_has_member (root, member))
    return TRUE;

  JsonNode *node = json_object_get_member (root, member);
  if (!JSON_NODE_HOLDS_ARRAY (node)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: '%s' is not a list", file, member);
    return FALSE;
  }
  JsonArray *array = json_node_get_array (node);
  guint n = json_array_get_length (array);
  g_autofree int *ids = g_new (int, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    JsonNode *element = json_array_get_element (array, i);
    gint64 id = -1;
    gboolean is_int = JSON_NODE_HOLDS_VALUE (element) &&
                      json_node_get_value_type (element) == G_TYPE_INT64;
    if (is_int)
      id = json_node_get_int (element);
    if (!is_int || id < 0 || id >= n_vocab) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: %s[%u] is not a token id in [0, %d)", file, member, i,
                   n_vocab);
      return FALSE;
    }
    ids[i] = (int) id;
  }
  *ids_out = g_steal_pointer (&ids);
  *n_out = (int) n;
  return TRUE;
}

/* "alignment_heads": [[layer, head], ...] (CTranslate2's converter writes
 * it: python/ctranslate2/converters/transformers.py in
 * https://github.com/OpenNMT/CTranslate2). Ranges are checked by the engine,
 * which knows the layer and head counts. */
static gboolean
read_alignment_heads (JsonObject *root, const char *file, WhisperModel *m, GError **error)
{
  const char *member = "alignment_heads";
  if (!json_object_has_member (root, member))
    return TRUE;
  JsonNode *node = json_object_get_member (root, member);
  if (!JSON_NODE_HOLDS_ARRAY (node)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: '%s' is not a list", file, member);
    return FALSE;
  }
  JsonArray *array = json_node_get_array (node);
  guint n = json_array_get_length (array);
  g_autofree int *pairs = g_new (int, 2 * MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    JsonNode *element = json_array_get_element (array, i);
    JsonArray *pair = JSON_NODE_HOLDS_ARRAY (element) ? json_node_get_array (element) : NULL;
    gboolean ok = pair && json_array_get_length (pair) == 2;
    for (guint k = 0; ok && k < 2; k++) {
      JsonNode *v = json_array_get_element (pair, k);
      ok = JSON_NODE_HOLDS_VALUE (v) && json_node_get_value_type (v) == G_TYPE_INT64 &&
           json_node_get_int (v) >= 0 && json_node_get_int (v) < G_MAXINT;
      if (ok)
        pairs[2 * i + k] = (int) json_node_get_int (v);
    }
    if (!ok) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: %s[%u] is not a pair [layer, head] of non-negative integers", file,
                   member, i);
      return FALSE;
    }
  }
  m->alignment_heads = g_steal_pointer (&pairs);
  m->n_alignment_heads = (int) n;
  return TRUE;
}

gboolean
whisper_model_ct2_read_config (WhisperModel *m, const char *dir, GError **error)
{
  g_autofree char *file = g_build_filename (dir, "config.json", NULL);
  if (!g_file_test (file, G_FILE_TEST_EXISTS))
    return TRUE;

  g_autoptr (JsonParser) parser = parse_json_file (file, CT2_MAX_CONFIG_BYTES, error);
  if (parser == NULL)
    return FALSE;
  JsonNode *root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the top level is not a JSON object", file);
    return FALSE;
  }

  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);
  JsonObject *object = json_node_get_object (root);
  return read_id_list (object, "suppress_ids", file, n_vocab, &m->suppress_ids,
                       &m->n_suppress_ids, error) &&
         read_id_list (object, "suppress_ids_begin", file, n_vocab,
                       &m->suppress_ids_begin, &m->n_suppress_ids_begin, error) &&
         read_alignment_heads (object, file, m, error);
}

/* Maps one vocabulary string to the token's raw bytes. */
static GBytes *
token_from_text (const char *file, guint id, const char *text, gsize len,
                 GError **error)
{
  if (whisper_vocab_is_special_name (text, len))
    return g_bytes_new (text, len);

  gunichar bad = 0;
  GBytes *bytes = whisper_vocab_bytes_from_byte_level (text, len, &bad);
  if (bytes != NULL)
    return bytes;
  if (bad == (gunichar) -1)
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: token %u is not valid UTF-8", file, id);
  else
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: token %u holds U+%04X, which is not a GPT-2 byte-level "
                 "character", file, id, bad);
  return NULL;
}

static gboolean
check_token_count (const char *file, guint count, int n_vocab, GError **error)
{
  if (count == (guint) n_vocab)
    return TRUE;
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: has %u tokens but the model has %d (rows of "
               "decoder/embeddings/weight)", file, count, n_vocab);
  return FALSE;
}

static GPtrArray *
read_vocabulary_json (const char *file, int n_vocab, GError **error)
{
  g_autoptr (JsonParser) parser = parse_json_file (file, CT2_MAX_VOCABULARY_BYTES, error);
  if (parser == NULL)
    return NULL;
  JsonNode *root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_ARRAY (root)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the top level is not a JSON list of strings", file);
    return NULL;
  }

  JsonArray *array = json_node_get_array (root);
  guint n = json_array_get_length (array);
  if (!check_token_count (file, n, n_vocab, error))
    return NULL;

  g_autoptr (GPtrArray) tokens =
    g_ptr_array_new_full (n, (GDestroyNotify) g_bytes_unref);
  for (guint i = 0; i < n; i++) {
    JsonNode *element = json_array_get_element (array, i);
    if (!JSON_NODE_HOLDS_VALUE (element) ||
        json_node_get_value_type (element) != G_TYPE_STRING) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: token %u is not a string", file, i);
      return NULL;
    }
    const char *text = json_node_get_string (element);
    GBytes *token = token_from_text (file, i, text, strlen (text), error);
    if (token == NULL)
      return NULL;
    g_ptr_array_add (tokens, token);
  }
  return g_steal_pointer (&tokens);
}

/* One token per line; a trailing '\r' is stripped only when every line
 * has one (as CTranslate2 does); an empty line is the empty token. */
static GPtrArray *
read_vocabulary_txt (const char *file, int n_vocab, GError **error)
{
  g_autoptr (GMappedFile) mapped = map_side_file (file, CT2_MAX_VOCABULARY_BYTES, error);
  if (mapped == NULL)
    return NULL;
  const char *text = g_mapped_file_get_contents (mapped);
  gsize size = g_mapped_file_get_length (mapped);

  /* First pass: count lines and check the '\r' convention. */
  guint n_lines = 0;
  gboolean all_cr = TRUE;
  for (gsize start = 0; start < size;) {
    const char *nl = memchr (text + start, '\n', size - start);
    gsize end = nl ? (gsize) (nl - text) : size;
    if (end == start || text[end - 1] != '\r')
      all_cr = FALSE;
    n_lines++;
    start = end + 1;
  }
  if (n_lines == 0)
    all_cr = FALSE;
  if (!check_token_count (file, n_lines, n_vocab, error))
    return NULL;

  g_autoptr (GPtrArray) tokens =
    g_ptr_array_new_full (n_lines, (GDestroyNotify) g_bytes_unref);
  for (gsize start = 0; start < size;) {
    const char *nl = memchr (text + start, '\n', size - start);
    gsize end = nl ? (gsize) (nl - text) : size;
    gsize len = end - start - (all_cr ? 1 : 0);
    GBytes *token = token_from_text (file, tokens->len, text + start, len, error);
    if (token == NULL)
      return NULL;
    g_ptr_array_add (tokens, token);
    start = end + 1;
  }
  return g_steal_pointer (&tokens);
}

gboolean
whisper_model_ct2_read_vocabulary (WhisperModel *m, const char *dir, GError **error)
{
  g_autofree char *json_file = g_build_filename (dir, "vocabulary.json", NULL);
  g_autofree char *txt_file = g_build_filename (dir, "vocabulary.txt", NULL);
  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);
  g_autoptr (GPtrArray) tokens = NULL;

  if (g_file_test (json_file, G_FILE_TEST_EXISTS)) {
    tokens = read_vocabulary_json (json_file, n_vocab, error);
  } else if (g_file_test (txt_file, G_FILE_TEST_EXISTS)) {
    tokens = read_vocabulary_txt (txt_file, n_vocab, error);
  } else {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: the model has no vocabulary.json or vocabulary.txt", dir);
    return FALSE;
  }
  if (tokens == NULL)
    return FALSE;

  m->n_tokens = (int) tokens->len;
  g_ptr_array_set_free_func (tokens, NULL);
  m->tokens = (GBytes **) g_ptr_array_free (g_steal_pointer (&tokens), FALSE);
  return TRUE;
}

