/* gstwhisperremotestream.c: a streamed answer of the remote engine
 * (server-stream; see gstwhisperremote.h), read as its bytes arrive.
 *
 * The body is server-sent events
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation:
 * lines ended by CR, LF or CRLF; `data:` lines joined by LF; a blank line
 * ends an event; lines starting with ':' are comments; other fields are
 * left alone) in vLLM's transcription stream format
 * (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html,
 * vllm/entrypoints/openai/speech_to_text.py): each event's data is a JSON
 * object of object "transcription.chunk" whose `choices` hold one choice
 * with `delta.content`, a piece of the text, and, on the last, a
 * `finish_reason`; with stream_include_usage a last chunk with no choices
 * and `usage`; then the data `[DONE]`. An error while decoding comes as an
 * event whose object has `error` (its `message`).
 *
 * Anything else is a malformed stream: the error says which event and what
 * was wrong, and the request fails as any other bad answer does (the audio
 * is kept and sent again). Calls no other file of remote/. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "remote/gstwhisperremote-private.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* A line longer than this is no event stream of text deltas. */
#define LINE_MAX_BYTES (1 << 20)
/* Quoted from a bad event at most this long. */
#define QUOTE_MAX 80

struct _GstWhisperRemoteStream {
  GstWhisperRemoteDeltaFunc delta_func;
  gpointer user_data;
  GString *line;            /* the line not ended yet */
  gboolean after_cr;        /* the last byte was a CR (a LF after it ends nothing) */
  GString *data;            /* the event's data lines */
  gboolean has_data;
  GString *text;            /* the deltas so far */
  guint events, deltas;
  gboolean finished;        /* a choice had a finish_reason */
  gboolean done;            /* data: [DONE] */
  gboolean given_up;        /* delta_func said stop */
  gchar *error;             /* what was wrong; NULL: nothing yet */
};

GstWhisperRemoteStream *
gst_whisper_remote_stream_new (GstWhisperRemoteDeltaFunc delta_func, gpointer user_data)
{
  GstWhisperRemoteStream *s = g_new0 (GstWhisperRemoteStream, 1);

  s->delta_func = delta_func;
  s->user_data = user_data;
  s->line = g_string_new (NULL);
  s->data = g_string_new (NULL);
  s->text = g_string_new (NULL);
  return s;
}

void
gst_whisper_remote_stream_free (GstWhisperRemoteStream *s)
{
  if (s == NULL)
    return;
  g_string_free (s->line, TRUE);
  g_string_free (s->data, TRUE);
  g_string_free (s->text, TRUE);
  g_free (s->error);
  g_free (s);
}

static gboolean
fail (GstWhisperRemoteStream *s, const gchar *format, ...) G_GNUC_PRINTF (2, 3);

static gboolean
fail (GstWhisperRemoteStream *s, const gchar *format, ...)
{
  va_list args;

  if (s->error == NULL) {
    va_start (args, format);
    s->error = g_strdup_vprintf (format, args);
    va_end (args);
  }
  return FALSE;
}

/* The start of an event's data, for messages. */
static gchar *
quote (const gchar *data)
{
  gchar *q = g_utf8_make_valid (data, (gssize) MIN (strlen (data), (gsize) QUOTE_MAX));

  g_strdelimit (q, "\r\n", ' ');
  return q;
}

/* One choice of a chunk: its delta's content, and whether it is the last. */
static gboolean
take_choice (GstWhisperRemoteStream *s, JsonNode *node)
{
  JsonObject *choice, *delta;
  JsonNode *content, *finish;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    return fail (s, "event %u: a choice is not an object", s->events);
  choice = json_node_get_object (node);
  finish = json_object_get_member (choice, "finish_reason");
  if (finish && !JSON_NODE_HOLDS_NULL (finish))
    s->finished = TRUE;
  if (!json_object_has_member (choice, "delta"))
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (json_object_get_member (choice, "delta")))
    return fail (s, "event %u: choices[].delta is not an object", s->events);
  delta = json_node_get_object (json_object_get_member (choice, "delta"));
  content = json_object_get_member (delta, "content");
  if (content == NULL || JSON_NODE_HOLDS_NULL (content))
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (content) || json_node_get_value_type (content) != G_TYPE_STRING)
    return fail (s, "event %u: choices[].delta.content is not a string", s->events);
  if (*json_node_get_string (content) == '\0')
    return TRUE;
  g_string_append (s->text, json_node_get_string (content));
  s->deltas++;
  if (s->delta_func && !s->delta_func (s->text->str, json_node_get_string (content),
          s->user_data)) {
    s->given_up = TRUE;
    return FALSE;
  }
  return TRUE;
}

/* The server's message of an error event. */
static gboolean
take_error (GstWhisperRemoteStream *s, JsonNode *node)
{
  JsonNode *m = NULL;

  if (JSON_NODE_HOLDS_OBJECT (node))
    m = json_object_get_member (json_node_get_object (node), "message");
  if (m && JSON_NODE_HOLDS_VALUE (m) && json_node_get_value_type (m) == G_TYPE_STRING)
    return fail (s, "the server reported an error in event %u: %s", s->events,
        json_node_get_string (m));
  return fail (s, "the server reported an error in event %u", s->events);
}

/* One event's data: a chunk, or [DONE]. */
static gboolean
take_event (GstWhisperRemoteStream *s, const gchar *data)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) err = NULL;
  JsonObject *o;
  JsonNode *choices;

  s->events++;
  if (s->done)
    return TRUE;                /* nothing counts after [DONE] */
  if (strcmp (data, "[DONE]") == 0) {
    s->done = TRUE;
    return TRUE;
  }
  if (!json_parser_load_from_data (parser, data, -1, &err)) {
    g_autofree gchar *q = quote (data);
    return fail (s, "event %u is not JSON (%s): \"%s\"", s->events, err->message, q);
  }
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    return fail (s, "event %u is not a JSON object", s->events);
  o = json_node_get_object (json_parser_get_root (parser));
  if (json_object_has_member (o, "error"))
    return take_error (s, json_object_get_member (o, "error"));
  choices = json_object_get_member (o, "choices");
  if (choices == NULL || !JSON_NODE_HOLDS_ARRAY (choices))
    return fail (s, "event %u has no \"choices\" array (not a transcription.chunk)",
        s->events);
  for (guint i = 0; i < json_array_get_length (json_node_get_array (choices)); i++)
    if (!take_choice (s, json_array_get_element (json_node_get_array (choices), i)))
      return FALSE;
  return TRUE;
}

/* One line of the stream (without its end). */
static gboolean
take_line (GstWhisperRemoteStream *s, const gchar *line)
{
  const gchar *colon, *value;

  if (*line == '\0') {
    gboolean ok = TRUE;
    if (s->has_data) {
      if (s->data->len > 0 && s->data->str[s->data->len - 1] == '\n')
        g_string_truncate (s->data, s->data->len - 1);
      ok = take_event (s, s->data->str);
    }
    g_string_truncate (s->data, 0);
    s->has_data = FALSE;
    return ok;
  }
  if (*line == ':')
    return TRUE;                /* a comment (a keep-alive) */
  colon = strchr (line, ':');
  if (colon == NULL || (gsize) (colon - line) != 4 || strncmp (line, "data", 4) != 0)
    return TRUE;                /* event, id, retry and unknown fields */
  value = colon + 1;
  if (*value == ' ')
    value++;
  g_string_append (s->data, value);
  g_string_append_c (s->data, '\n');
  s->has_data = TRUE;
  return TRUE;
}

gboolean
gst_whisper_remote_stream_feed (const guint8 *data, gsize len, gpointer stream)
{
  GstWhisperRemoteStream *s = stream;

  for (gsize i = 0; i < len && s->error == NULL && !s->given_up; i++) {
    gchar c = (gchar) data[i];
    if (c == '\n' && s->after_cr) {
      s->after_cr = FALSE;
      continue;
    }
    s->after_cr = c == '\r';
    if (c == '\r' || c == '\n') {
      take_line (s, s->line->str);
      g_string_truncate (s->line, 0);
    } else if (c == '\0') {
      fail (s, "a NUL byte after event %u: not an event stream", s->events);
    } else if (s->line->len >= LINE_MAX_BYTES) {
      fail (s, "a line of more than %d bytes after event %u", LINE_MAX_BYTES, s->events);
    } else {
      g_string_append_c (s->line, c);
    }
  }
  return s->error == NULL && !s->given_up;
}

const gchar *
gst_whisper_remote_stream_finish (GstWhisperRemoteStream *s, GError **error)
{
  /* The end of the body ends the last line and event. */
  if (s->error == NULL && s->line->len > 0) {
    take_line (s, s->line->str);
    g_string_truncate (s->line, 0);
  }
  if (s->error == NULL && s->has_data)
    take_line (s, "");
  if (s->error == NULL && !s->done)
    fail (s, "the event stream ended after %u event%s without \"data: [DONE]\"%s",
        s->events, s->events == 1 ? "" : "s", s->finished ? "" : " or a finish_reason");
  if (s->error) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "the answer's event stream is no transcription: %s", s->error);
    return NULL;
  }
  return s->text->str;
}

guint
gst_whisper_remote_stream_deltas (const GstWhisperRemoteStream *s)
{
  return s->deltas;
}

gboolean
gst_whisper_remote_stream_given_up (const GstWhisperRemoteStream *s)
{
  return s->given_up;
}
