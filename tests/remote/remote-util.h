/* remote-util.h: what the remote engine's tests share: a free port on
 * 127.0.0.1, a helper server started and waited for, a WAV file's samples,
 * the word error rate and the bus messages of a run. */
#pragma once

#include <gio/gio.h>
#include <gst/gst.h>

/* A TCP port on 127.0.0.1 that nothing listens on now. */
guint remote_free_port (void);

/* Starts argv (argv[1] names the helper in messages) and waits for its
 * "listening on" line; NULL, with the reason printed, when it does not
 * start (the process is then gone). */
GSubprocess *remote_start_helper (const gchar *const *argv);

/* The samples of a 16-bit WAV file: the contents of its data chunk (other
 * chunks, such as jfk.wav's LIST, skipped); the file's bytes, to free. */
gchar *remote_wav_samples (const gchar *path, gsize *offset, gsize *size);

/* Word error rate of `hyp` against `ref` (Levenshtein on words, lower
 * case, punctuation but apostrophes left out). */
double remote_wer (const gchar *ref, const gchar *hyp);

/* A bus message of a run: a warning or info message is printed
 * ("  warning: TEXT") and its details' "reason" returned (NULL: none;
 * valid while `m` is); an error is printed and the first one kept in
 * *error (to free); EOS sets *eos. */
const gchar *remote_take_message (GstMessage *m, gchar **error, gboolean *eos);
