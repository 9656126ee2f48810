/* test-remote-sse: the reader of streamed answers (server-stream,
 * gst-plugin/remote/gstwhisperremotestream.c) on byte streams written by
 * hand, with no server: vLLM's transcription chunks give their deltas in
 * order and the whole text at [DONE], whatever the pieces the bytes come
 * in (one byte at a time too) and whether lines end in LF, CRLF or CR;
 * comments, other fields and a usage chunk with no choices are left alone;
 * what comes after [DONE] does not count. Not JSON, no choices, a content
 * that is not a string, an error event and an end without [DONE] are
 * errors that say which event and what was wrong; a delta function that
 * gives up stops the reading. */
#include <glib.h>
#include <string.h>

#include "remote/gstwhisperremote-private.h"

static int failures;

#define CHECK(cond, ...) G_STMT_START { if (!(cond)) { failures++; \
  g_printerr ("FAIL %s:%d: ", __FILE__, __LINE__); g_printerr (__VA_ARGS__); \
  g_printerr ("\n"); } } G_STMT_END

#define CHUNK(text) "data: {\"id\":\"trsc-1\",\"object\":\"transcription.chunk\"," \
  "\"created\":1,\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"" text "\"}}]}"

static const gchar *good =
    ": keep-alive\n"
    CHUNK (" And") "\n\n"
    "event: message\nid: 2\n" CHUNK (" so") "\n\n"
    "data: {\"object\":\"transcription.chunk\",\"choices\":[{\"delta\":{\"content\":"
    "\" my\"},\"finish_reason\":\"stop\",\"stop_reason\":null}]}\n\n"
    "data: {\"object\":\"transcription.chunk\",\"choices\":[],\"usage\":"
    "{\"prompt_tokens\":1,\"completion_tokens\":3,\"total_tokens\":4}}\n\n"
    "data: [DONE]\n\n"
    CHUNK (" ignored") "\n\n";

static gboolean
count_delta (const gchar *text, const gchar *delta, gpointer data)
{
  GString *seen = data;

  g_string_append_printf (seen, "[%s|%s]", delta, text);
  return TRUE;
}

static gboolean
give_up (G_GNUC_UNUSED const gchar *text, G_GNUC_UNUSED const gchar *delta,
    G_GNUC_UNUSED gpointer data)
{
  return FALSE;
}

/* Feeds `bytes` in pieces of `step` bytes; the text at the end, or NULL with
 * *error. */
static gchar *
read_all (const gchar *bytes, gsize step, GstWhisperRemoteDeltaFunc func, GString *seen,
    GError **error)
{
  GstWhisperRemoteStream *s = gst_whisper_remote_stream_new (func, seen);
  gsize len = strlen (bytes), off;
  const gchar *text;
  gchar *out;

  for (off = 0; off < len; off += step)
    if (!gst_whisper_remote_stream_feed ((const guint8 *) bytes + off, MIN (step, len - off), s))
      break;
  text = gst_whisper_remote_stream_finish (s, error);
  out = g_strdup (text);
  gst_whisper_remote_stream_free (s);
  return out;
}

static gchar *
with_line_ends (const gchar *text, const gchar *end)
{
  gchar **lines = g_strsplit (text, "\n", -1);
  gchar *out = g_strjoinv (end, lines);

  g_strfreev (lines);
  return out;
}

static void
check_good (void)
{
  const gchar *ends[] = { "\n", "\r\n", "\r" };
  gsize steps[] = { 1, 7, 4096 };

  for (guint e = 0; e < G_N_ELEMENTS (ends); e++)
    for (guint k = 0; k < G_N_ELEMENTS (steps); k++) {
      gchar *bytes = with_line_ends (good, ends[e]);
      GString *seen = g_string_new (NULL);
      GError *err = NULL;
      gchar *text = read_all (bytes, steps[k], count_delta, seen, &err);
      CHECK (g_strcmp0 (text, " And so my") == 0, "line end %u, pieces of %zu: text \"%s\" "
          "(%s)", e, steps[k], text, err ? err->message : "no error");
      CHECK (strcmp (seen->str, "[ And| And][ so| And so][ my| And so my]") == 0,
          "line end %u, pieces of %zu: deltas %s", e, steps[k], seen->str);
      g_clear_error (&err);
      g_free (text);
      g_string_free (seen, TRUE);
      g_free (bytes);
    }
}

static void
check_bad (const gchar *bytes, const gchar *want)
{
  GError *err = NULL;
  gchar *text = read_all (bytes, 5, NULL, NULL, &err);

  CHECK (text == NULL && err && strstr (err->message, want), "\"%.40s...\": %s, not \"%s\"",
      bytes, err ? err->message : "no error", want);
  g_clear_error (&err);
  g_free (text);
}

int
main (void)
{
  GError *err = NULL;
  gchar *text;

  check_good ();
  check_bad (CHUNK (" And") "\n\ndata: {not json\n\ndata: [DONE]\n\n", "event 2 is not JSON");
  check_bad ("data: {\"object\":\"x\"}\n\ndata: [DONE]\n\n",
      "event 1 has no \"choices\" array");
  check_bad ("data: {\"choices\":[{\"delta\":{\"content\":3}}]}\n\ndata: [DONE]\n\n",
      "event 1: choices[].delta.content is not a string");
  check_bad (CHUNK (" And") "\n\ndata: {\"error\":{\"message\":\"engine died\"}}\n\n",
      "the server reported an error in event 2: engine died");
  check_bad (CHUNK (" And") "\n\n", "ended after 1 event without \"data: [DONE]\"");
  check_bad ("{\"text\": \"plain JSON\"}", "without \"data: [DONE]\"");
  text = read_all (good, 3, give_up, NULL, &err);
  CHECK (text == NULL && err, "a delta function that gives up: the reading goes on");
  g_clear_error (&err);
  g_free (text);
  g_print ("%s\n", failures ? "FAILED" : "PASS");
  return failures ? 1 : 0;
}
