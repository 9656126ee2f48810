/* test-remote-host: gst_whisper_remote_host_is_local (), the rule of which
 * hosts the API key may go to over plain http (server-allow-insecure-key);
 * no name is resolved and nothing is sent. */
#include "remote/gstwhisperremotehost.h"

static void
test_local (void)
{
  const gchar *local[] = { "localhost", "LOCALHOST", "localhost.", "api.localhost",
    "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]", "0:0:0:0:0:0:0:1",
    "::ffff:127.0.0.1", "[::ffff:127.1.2.3]", NULL
  };
  const gchar *remote[] = { "example.com", "localhost.example.com", "mylocalhost",
    "10.0.0.1", "192.168.1.1", "128.0.0.1", "126.255.255.255", "0.0.0.0", "::", "::2",
    "[2001:db8::1]", "::ffff:10.0.0.1", "fe80::1", "", "[", "[]", NULL
  };

  for (guint i = 0; local[i]; i++)
    if (!gst_whisper_remote_host_is_local (local[i]))
      g_error ("\"%s\" is this machine, but was not taken for it", local[i]);
  for (guint i = 0; remote[i]; i++)
    if (gst_whisper_remote_host_is_local (remote[i]))
      g_error ("\"%s\" is not this machine, but was taken for it", remote[i]);
  g_assert_false (gst_whisper_remote_host_is_local (NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/remote/host-is-local", test_local);
  return g_test_run ();
}
