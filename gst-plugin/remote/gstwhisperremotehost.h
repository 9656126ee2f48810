/* gstwhisperremotehost.h: whether a server-url host is this machine, for
 * the rule that the API key goes over plain http to this machine only
 * (server-allow-insecure-key). GIO only, so that a unit test builds it
 * alone (tests/remote/test-remote-host.c). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE for "localhost" and names under ".localhost" (RFC 6761 6.3, any
 * case, a trailing dot allowed), IPv4 127.0.0.0/8, IPv6 ::1 and
 * ::ffff:127.0.0.0/104 (IPv6 in brackets or not). Any other name, even one
 * that resolves to a loopback address, is not: nothing is resolved. */
gboolean gst_whisper_remote_host_is_local (const gchar *host);

G_END_DECLS
