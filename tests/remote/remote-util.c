/* remote-util.c: see remote-util.h. */
#include "remote-util.h"

#include <string.h>

guint
remote_free_port (void)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, 0, NULL);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *a = g_inet_socket_address_new (lo, 0), *bound;
  guint port;

  g_assert (g_socket_bind (s, a, TRUE, NULL));
  bound = g_socket_get_local_address (s, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_object_unref (bound);
  g_object_unref (a);
  g_object_unref (lo);
  g_object_unref (s);
  return port;
}

GSubprocess *
remote_start_helper (const gchar *const *argv)
{
  GError *err = NULL;
  GSubprocess *p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &err);
  GDataInputStream *in;
  gchar *line;

  if (p == NULL) {
    g_printerr ("cannot start %s: %s\n", argv[1], err->message);
    g_error_free (err);
    return NULL;
  }
  in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p));
  line = g_data_input_stream_read_line (in, NULL, NULL, NULL);
  g_object_unref (in);
  if (line == NULL || !g_str_has_prefix (line, "listening on")) {
    g_printerr ("%s did not start (%s)\n", argv[1], line ? line : "no output");
    g_free (line);
    g_subprocess_force_exit (p);
    g_subprocess_wait (p, NULL, NULL);
    g_object_unref (p);
    return NULL;
  }
  g_free (line);
  return p;
}

gchar *
remote_wav_samples (const gchar *path, gsize *offset, gsize *size)
{
  gchar *wav;
  gsize len, off = 12;

  g_assert (g_file_get_contents (path, &wav, &len, NULL));
  g_assert (len >= 12 && memcmp (wav, "RIFF", 4) == 0 && memcmp (wav + 8, "WAVE", 4) == 0);
  while (off + 8 <= len) {
    const guint8 *p = (const guint8 *) wav + off + 4;
    guint32 n = p[0] | p[1] << 8 | p[2] << 16 | (guint32) p[3] << 24;
    if (memcmp (wav + off, "data", 4) == 0) {
      *offset = off + 8;
      *size = MIN ((gsize) n, len - off - 8);
      return wav;
    }
    off += 8 + (gsize) n + (n & 1);
  }
  g_error ("%s has no data chunk", path);
  return NULL;
}

static GPtrArray *
words_of (const gchar *text)
{
  GPtrArray *words = g_ptr_array_new_with_free_func (g_free);
  gchar *low = g_utf8_strdown (text, -1);
  gchar **parts;
  guint i;

  for (gchar *p = low; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '\'')
      *p = ' ';
  parts = g_strsplit (low, " ", -1);
  for (i = 0; parts[i]; i++)
    if (*parts[i])
      g_ptr_array_add (words, g_strdup (parts[i]));
  g_strfreev (parts);
  g_free (low);
  return words;
}

double
remote_wer (const gchar *ref, const gchar *hyp)
{
  GPtrArray *r = words_of (ref), *h = words_of (hyp);
  guint n = r->len, m = h->len, i, j;
  guint *d = g_new (guint, (n + 1) * (m + 1));
  double e;

  for (i = 0; i <= n; i++)
    d[i * (m + 1)] = i;
  for (j = 0; j <= m; j++)
    d[j] = j;
  for (i = 1; i <= n; i++)
    for (j = 1; j <= m; j++) {
      guint sub = d[(i - 1) * (m + 1) + j - 1]
          + (strcmp (r->pdata[i - 1], h->pdata[j - 1]) != 0);
      guint del = d[(i - 1) * (m + 1) + j] + 1, ins = d[i * (m + 1) + j - 1] + 1;
      d[i * (m + 1) + j] = MIN (sub, MIN (del, ins));
    }
  e = n ? d[n * (m + 1) + m] / (double) n : (m ? 1.0 : 0.0);
  g_free (d);
  g_ptr_array_unref (r);
  g_ptr_array_unref (h);
  return e;
}

const gchar *
remote_take_message (GstMessage *m, gchar **error, gboolean *eos)
{
  const GstStructure *details = NULL;
  GError *e = NULL;

  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &e, NULL);
      gst_message_parse_warning_details (m, &details);
      break;
    case GST_MESSAGE_INFO:
      gst_message_parse_info (m, &e, NULL);
      gst_message_parse_info_details (m, &details);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &e, NULL);
      if (*error == NULL)
        *error = g_strdup (e->message);
      break;
    case GST_MESSAGE_EOS:
      *eos = TRUE;
      return NULL;
    default:
      return NULL;
  }
  g_print ("  %s: %s\n", GST_MESSAGE_TYPE_NAME (m), e->message);
  g_error_free (e);
  return details ? gst_structure_get_string (details, "reason") : NULL;
}
