/* remote-util.c: see remote-util.h. */
#include "remote-util.h"

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
