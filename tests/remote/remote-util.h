/* remote-util.h: what the remote engine's tests share: a free port on
 * 127.0.0.1 and a helper server started and waited for. */
#pragma once

#include <gio/gio.h>

/* A TCP port on 127.0.0.1 that nothing listens on now. */
guint remote_free_port (void);

/* Starts argv (argv[1] names the helper in messages) and waits for its
 * "listening on" line; NULL, with the reason printed, when it does not
 * start (the process is then gone). */
GSubprocess *remote_start_helper (const gchar *const *argv);
