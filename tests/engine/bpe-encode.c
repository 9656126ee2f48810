/* bpe-encode.c: the engine's encoder as a filter, for
 * test-tokenizer-recompute.py: reads NUL-terminated UTF-8 strings from
 * INPUT and writes one line per string to OUTPUT: its token ids separated
 * by spaces, or "ERROR message".
 *
 * Usage: bpe-encode MODEL INPUT OUTPUT */
#include "whisper.h"

#include <stdio.h>
#include <string.h>

int
main (int argc, char **argv)
{
  if (argc != 4) {
    fprintf (stderr, "usage: %s MODEL INPUT OUTPUT\n", argv[0]);
    return 2;
  }
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = argv[1];
  options.device = WHISPER_DEVICE_CPU;
  options.n_threads = 1;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  if (!engine) {
    fprintf (stderr, "bpe-encode: cannot load %s: %s\n", argv[1], error->message);
    return 1;
  }
  g_autofree char *input = NULL;
  gsize len;
  if (!g_file_get_contents (argv[2], &input, &len, &error)) {
    fprintf (stderr, "bpe-encode: %s\n", error->message);
    return 1;
  }
  FILE *out = fopen (argv[3], "w");
  if (!out) {
    fprintf (stderr, "bpe-encode: cannot write %s\n", argv[3]);
    return 1;
  }
  for (gsize pos = 0; pos < len;) {
    const char *text = input + pos;
    gsize n;
    g_autoptr (GError) encode_error = NULL;
    g_autofree gint32 *ids = whisper_engine_encode_text (engine, text, &n, &encode_error);
    if (!ids) {
      fprintf (out, "ERROR %s\n", encode_error->message);
    } else {
      for (gsize i = 0; i < n; i++)
        fprintf (out, "%s%d", i ? " " : "", ids[i]);
      fputc ('\n', out);
    }
    pos += strlen (text) + 1;
  }
  if (fclose (out) != 0) {
    fprintf (stderr, "bpe-encode: cannot write %s\n", argv[3]);
    return 1;
  }
  return 0;
}
