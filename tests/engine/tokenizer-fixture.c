/* tokenizer-fixture.c: see tokenizer-fixture.h. */
#include "tokenizer-fixture.h"

#include <stdio.h>
#include <stdlib.h>

G_GNUC_PRINTF (1, 2) G_GNUC_NORETURN static void
die (const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  fprintf (stderr, "FATAL: %s\n", message);
  exit (1);
}

JsonObject *
tf_fixture (void)
{
  static JsonParser *parser;
  if (!parser) {
    const char *root = g_getenv ("WHISPER_SOURCE_ROOT");
    if (!root)
      die ("WHISPER_SOURCE_ROOT is not set (run the tests with meson test)");
    g_autofree char *path =
        g_build_filename (root, "tests", "engine", "fixtures", "tokenizer-reference.json", NULL);
    g_autoptr (GError) error = NULL;
    parser = json_parser_new_immutable ();
    if (!json_parser_load_from_file (parser, path, &error))
      die ("cannot read %s: %s (regenerate it with tests/reference/make-tokenizer-reference.py)",
           path, error->message);
    if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
      die ("%s: the top level is not a JSON object", path);
  }
  return json_node_get_object (json_parser_get_root (parser));
}

static JsonNode *
member (JsonObject *obj, const char *name)
{
  JsonNode *node = json_object_get_member (obj, name);
  if (!node)
    die ("tokenizer fixture: member \"%s\" is missing", name);
  return node;
}

JsonArray *
tf_array (JsonObject *obj, const char *name)
{
  JsonNode *node = member (obj, name);
  if (!JSON_NODE_HOLDS_ARRAY (node))
    die ("tokenizer fixture: member \"%s\" is not an array", name);
  return json_node_get_array (node);
}

JsonObject *
tf_object (JsonObject *obj, const char *name)
{
  JsonNode *node = member (obj, name);
  if (!JSON_NODE_HOLDS_OBJECT (node))
    die ("tokenizer fixture: member \"%s\" is not an object", name);
  return json_node_get_object (node);
}

gint32 *
tf_int32_array (JsonArray *array, gsize *n_out)
{
  const guint n = json_array_get_length (array);
  gint32 *out = g_new (gint32, n + 1);
  for (guint i = 0; i < n; i++) {
    JsonNode *node = json_array_get_element (array, i);
    if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_INT64)
      die ("tokenizer fixture: element %u of an id array is not an integer", i);
    out[i] = (gint32) json_node_get_int (node);
  }
  *n_out = n;
  return out;
}

WhisperEngine *
tf_engine (const char *name)
{
  static GHashTable *engines;
  if (!engines)
    engines = g_hash_table_new (g_str_hash, g_str_equal);
  WhisperEngine *engine = g_hash_table_lookup (engines, name);
  if (engine)
    return engine;
  g_autofree char *path =
      g_build_filename (g_get_user_data_dir (), "gst-whisper", "models", name, NULL);
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = path;
  options.device = WHISPER_DEVICE_CPU;
  options.n_threads = 1;
  g_autoptr (GError) error = NULL;
  engine = whisper_engine_new (&options, &error);
  if (!engine)
    die ("cannot load the %s model from %s (install it with tools/fetch-model.sh): %s", name,
         path, error->message);
  g_hash_table_insert (engines, (gpointer) g_intern_string (name), engine);
  return engine;
}

char *
tf_ids_string (const gint32 *ids, gsize n)
{
  GString *s = g_string_new ("[");
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (s, "%s%d", i ? ", " : "", ids[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}
