/* gstwhisperremotehost.c: see gstwhisperremotehost.h. */
#include "remote/gstwhisperremotehost.h"

#include <gio/gio.h>
#include <string.h>

gboolean
gst_whisper_remote_host_is_local (const gchar *host)
{
  g_autofree gchar *name = NULL;
  g_autoptr (GInetAddress) addr = NULL;
  gsize len;

  if (host == NULL || *host == '\0')
    return FALSE;
  len = strlen (host);
  if (host[0] == '[' && len > 2 && host[len - 1] == ']')
    name = g_strndup (host + 1, len - 2);
  else
    name = g_ascii_strdown (host, -1);
  len = strlen (name);
  if (len > 1 && name[len - 1] == '.')
    name[--len] = '\0';
  if (strcmp (name, "localhost") == 0 || g_str_has_suffix (name, ".localhost"))
    return TRUE;
  /* an IPv6 zone ("fe80::1%eth0") is never loopback */
  addr = g_inet_address_new_from_string (name);
  if (addr == NULL)
    return FALSE;
  if (g_inet_address_get_is_loopback (addr))
    return TRUE;
  if (g_inet_address_get_family (addr) == G_SOCKET_FAMILY_IPV6) {
    /* IPv4-mapped ::ffff:a.b.c.d: loopback when a is 127 */
    const guint8 *b = g_inet_address_to_bytes (addr);
    static const guint8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    return memcmp (b, mapped, 12) == 0 && b[12] == 127;
  }
  return FALSE;
}
