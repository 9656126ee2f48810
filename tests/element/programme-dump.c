/* programme-dump.c: writes the live measurements' real-speech programme
 * (programme.h) to files, for tools that are not written in C
 * (tools/bench-batched.py): its samples as raw float32 (16 kHz mono,
 * little-endian, as the host writes them) and its published text.
 *
 *   programme-dump [--minutes M] [--seed S] SHARED_DATA_DIR LIBRIVOX_DIR PCM_OUT TEXT_OUT */
#include "programme.h"

#include <string.h>

int
main (int argc, char **argv)
{
  gdouble minutes = 10.0;
  gint seed = 1;
  GOptionEntry entries[] = {
    { "minutes", 0, 0, G_OPTION_ARG_DOUBLE, &minutes, "length of the programme (default 10)", "M" },
    { "seed", 0, 0, G_OPTION_ARG_INT, &seed, "seed of the pauses between clips (default 1)", "S" },
    { NULL }
  };
  g_autoptr (GError) err = NULL;
  g_autoptr (GOptionContext) ctx =
      g_option_context_new ("SHARED_DATA_DIR LIBRIVOX_DIR PCM_OUT TEXT_OUT");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("programme-dump: %s\n", err->message);
    return 2;
  }
  if (argc != 5 || !(minutes > 0.0)) {
    g_printerr ("usage: programme-dump [--minutes M>0] [--seed S] SHARED_DATA_DIR LIBRIVOX_DIR "
                "PCM_OUT TEXT_OUT\n");
    return 2;
  }
  Programme prog = { 0 };
  prog.clips = g_ptr_array_new_with_free_func (programme_clip_free);
  if (!programme_load_clips (prog.clips, argv[1], argv[2], &err)) {
    g_printerr ("programme-dump: %s\n", err->message);
    return 1;
  }
  programme_build (&prog, minutes, seed, 0);
  g_autofree gchar *text = programme_text (&prog, 0);
  if (!g_file_set_contents (argv[3], (const gchar *) prog.pcm, (gssize) (prog.n * sizeof (float)),
                            &err) ||
      !g_file_set_contents (argv[4], text, -1, &err)) {
    g_printerr ("programme-dump: %s\n", err->message);
    return 1;
  }
  g_print ("%s: %.1f s, %u clip instances; %s: %zu bytes\n", argv[3],
           prog.n / (double) PROGRAMME_RATE, prog.spans->len, argv[4], strlen (text));
  programme_clear (&prog);
  return 0;
}
