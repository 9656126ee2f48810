/* gstwhisperremoterequest.c: the remote engine's request and answer
 * (see gstwhisperremote.h). The request is the OpenAI transcription API's
 * (https://platform.openai.com/docs/api-reference/audio/createTranscription):
 * multipart/form-data with `file`, `model`, `language`, `prompt`,
 * `temperature`, `response_format=verbose_json` and
 * `timestamp_granularities[]` (or, streamed, `response_format=json`,
 * `stream=true` and `stream_include_usage=true`, as vLLM takes them); the answer's `segments` (and `words`, at the
 * top level as OpenAI puts them or inside each segment as whisper.cpp's
 * server does) carry times in seconds from the start of the file sent.
 * The request is made here (a WAV in a multipart message) and the answer
 * read here (the server's message of a refusal; a transcription handed to
 * the callbacks); nothing is sent here: see gstwhisperremoteclient.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "remote/gstwhisperremote-private.h"
#include "io/gstwhisperdebug.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Server messages quoted in errors at most this long. */
#define MESSAGE_MAX 300

/* ------------------------------------------------------------------------ */
/* The request */

/* 16-bit PCM WAV, 16 kHz mono: what every server reads. */
GBytes *
gst_whisper_remote_make_wav (const float *pcm, gsize n)
{
  const guint32 data_bytes = (guint32) (n * 2);
  guint8 *buf = g_malloc (44 + (gsize) data_bytes);
  guint8 *p = buf;
  gsize i;

#define PUT4(s) (memcpy (p, s, 4), p += 4)
#define PUT32(v) (GST_WRITE_UINT32_LE (p, v), p += 4)
#define PUT16(v) (GST_WRITE_UINT16_LE (p, v), p += 2)
  PUT4 ("RIFF");
  PUT32 (36 + data_bytes);
  PUT4 ("WAVE");
  PUT4 ("fmt ");
  PUT32 (16);
  PUT16 (1);                    /* PCM */
  PUT16 (1);                    /* mono */
  PUT32 (WHISPER_SAMPLE_RATE);
  PUT32 (WHISPER_SAMPLE_RATE * 2);
  PUT16 (2);
  PUT16 (16);
  PUT4 ("data");
  PUT32 (data_bytes);
  for (i = 0; i < n; i++) {
    /* S16 input came in as v / 32768: this gives back the same v. */
    float v = pcm[i] * 32768.0f;
    gint16 s = (gint16) (v >= 32767.0f ? 32767 : v <= -32768.0f ? -32768 : lrintf (v));
    PUT16 ((guint16) s);
  }
#undef PUT4
#undef PUT32
#undef PUT16
  return g_bytes_new_take (buf, 44 + (gsize) data_bytes);
}

/* "en-US", "en_GB", "eng"... -> "en"; NULL when it is no language code. */
static gchar *
language_field (const gchar *code)
{
  gsize len;

  if (code == NULL || *code == '\0')
    return NULL;
  len = strcspn (code, "-_");
  if (len < 2 || len > 3)
    return NULL;
  if (len == 3 && g_ascii_strncasecmp (code, "eng", 3) == 0)
    return g_strdup ("en");
  return g_ascii_strdown (code, (gssize) len);
}

SoupMessage *
gst_whisper_remote_make_message (GstWhisperRemote *r, const gchar *url, GBytes *wav,
    const GstWhisperRemoteRequest *req, const gchar *prompt)
{
  SoupMultipart *mp = soup_multipart_new (SOUP_FORM_MIME_TYPE_MULTIPART);
  g_autofree gchar *language = language_field (req->language);
  gchar temperature[G_ASCII_DTOSTR_BUF_SIZE];
  SoupMessage *msg;

  soup_multipart_append_form_file (mp, "file", "audio.wav", "audio/wav", wav);
  soup_multipart_append_form_string (mp, "model", r->model);
  if (language)
    soup_multipart_append_form_string (mp, "language", language);
  if (prompt && *prompt)
    soup_multipart_append_form_string (mp, "prompt", prompt);
  g_ascii_dtostr (temperature, sizeof temperature, req->temperature);
  soup_multipart_append_form_string (mp, "temperature", temperature);
  if (req->stream) {
    /* vLLM refuses verbose_json with stream=true: its deltas carry no
     * times; stream_include_usage asks for its closing usage chunk */
    soup_multipart_append_form_string (mp, "response_format", "json");
    soup_multipart_append_form_string (mp, "stream", "true");
    soup_multipart_append_form_string (mp, "stream_include_usage", "true");
  } else {
    soup_multipart_append_form_string (mp, "response_format", "verbose_json");
    soup_multipart_append_form_string (mp, "timestamp_granularities[]", "segment");
    if (req->words)
      soup_multipart_append_form_string (mp, "timestamp_granularities[]", "word");
  }
  msg = soup_message_new_from_multipart (url, mp);
  soup_multipart_free (mp);
  if (msg && r->api_key) {
    g_autofree gchar *auth = g_strconcat ("Bearer ", r->api_key, NULL);
    soup_message_headers_replace (soup_message_get_request_headers (msg), "Authorization",
        auth);
    memset (auth, 0, strlen (auth));
  }
  return msg;
}

/* The server's own words about a refusal: error.message (OpenAI, vLLM),
 * detail (FastAPI), message, else the start of the body. */
gchar *
gst_whisper_remote_server_message (GBytes *body)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  gsize len = 0;
  const gchar *data = body ? g_bytes_get_data (body, &len) : NULL;
  gchar *msg = NULL;

  if (data == NULL || len == 0)
    return g_strdup ("(empty answer)");
  if (json_parser_load_from_data (parser, data, (gssize) len, NULL)
      && JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    JsonObject *o = json_node_get_object (json_parser_get_root (parser));
    JsonNode *n = NULL;
    if (json_object_has_member (o, "error")) {
      JsonNode *e = json_object_get_member (o, "error");
      if (JSON_NODE_HOLDS_OBJECT (e) && json_object_has_member (json_node_get_object (e),
              "message"))
        n = json_object_get_member (json_node_get_object (e), "message");
      else
        n = e;
    } else if (json_object_has_member (o, "detail")) {
      n = json_object_get_member (o, "detail");
    } else if (json_object_has_member (o, "message")) {
      n = json_object_get_member (o, "message");
    }
    if (n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING)
      msg = g_strdup (json_node_get_string (n));
    else if (n)
      msg = json_to_string (n, FALSE);
  }
  if (msg == NULL)
    msg = g_utf8_make_valid (data, (gssize) MIN (len, (gsize) MESSAGE_MAX));
  if (strlen (msg) > MESSAGE_MAX)
    strcpy (msg + MESSAGE_MAX - 3, "...");
  return msg;
}

static double
member_double (JsonObject *o, const gchar *name, double fallback)
{
  JsonNode *n = json_object_get_member (o, name);

  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n))
    return fallback;
  switch (json_node_get_value_type (n)) {
    case G_TYPE_DOUBLE:
    case G_TYPE_INT64:
      return json_node_get_double (n);
    default:
      return fallback;
  }
}

static const gchar *
member_string (JsonObject *o, const gchar *name)
{
  JsonNode *n = json_object_get_member (o, name);

  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (n);
}

static JsonArray *
member_array (JsonObject *o, const gchar *name)
{
  JsonNode *n = json_object_get_member (o, name);

  return n && JSON_NODE_HOLDS_ARRAY (n) ? json_node_get_array (n) : NULL;
}

typedef struct {
  double start, end, probability;
  const gchar *text;
} AnswerWord;

static void
collect_words (JsonArray *a, GArray *out)
{
  guint i;

  for (i = 0; a && i < json_array_get_length (a); i++) {
    JsonNode *n = json_array_get_element (a, i);
    JsonObject *o;
    AnswerWord w;
    if (!JSON_NODE_HOLDS_OBJECT (n))
      continue;
    o = json_node_get_object (n);
    w.text = member_string (o, "word");
    if (w.text == NULL)
      w.text = member_string (o, "text");
    w.start = member_double (o, "start", NAN);
    w.end = member_double (o, "end", NAN);
    w.probability = member_double (o, "probability", NAN);
    if (w.text && isfinite (w.start) && isfinite (w.end))
      g_array_append_val (out, w);
  }
}

/* A text-only answer (a streamed one): one segment over all of the audio. */
void
gst_whisper_remote_deliver_text (G_GNUC_UNUSED GstWhisperRemote *r, const gchar *text,
    double duration, WhisperSegmentFunc segment_func, gpointer user_data)
{
  WhisperSegment *seg = g_new0 (WhisperSegment, 1);

  seg->start = 0.0;
  seg->end = duration;
  seg->text = g_strdup (text);
  if (segment_func)
    segment_func (seg, user_data);
  else
    whisper_segment_free (seg);
}

/* Hands the answer to the callbacks; FALSE (with *error) when it is not a
 * transcription. */
gboolean
gst_whisper_remote_deliver (G_GNUC_UNUSED GstWhisperRemote *r, GBytes *body, double duration,
    const GstWhisperRemoteRequest *req, WhisperSegmentFunc segment_func,
    GstWhisperRemoteWordFunc word_func, gpointer user_data, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GArray) words = g_array_new (FALSE, FALSE, sizeof (AnswerWord));
  gsize len = 0;
  const gchar *data = g_bytes_get_data (body, &len);
  GError *err = NULL;
  JsonObject *root;
  JsonArray *segments;
  const gchar *text;
  guint i, n_seg, w = 0;
  gboolean go_on = TRUE;

  if (data == NULL || !json_parser_load_from_data (parser, data, (gssize) len, &err)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "the answer is not JSON: %s",
        err ? err->message : "empty");
    g_clear_error (&err);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "the answer is not a JSON object");
    return FALSE;
  }
  root = json_node_get_object (json_parser_get_root (parser));
  segments = member_array (root, "segments");
  text = member_string (root, "text");
  if (segments == NULL && text == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "the answer has neither \"segments\" nor \"text\"");
    return FALSE;
  }
  n_seg = segments ? json_array_get_length (segments) : 0;
  for (i = 0; i < n_seg; i++) {
    JsonNode *n = json_array_get_element (segments, i);
    if (!JSON_NODE_HOLDS_OBJECT (n) || member_string (json_node_get_object (n), "text") == NULL
        || !isfinite (member_double (json_node_get_object (n), "start", NAN))
        || !isfinite (member_double (json_node_get_object (n), "end", NAN))) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
          "segment %u of the answer has no text, start or end", i);
      return FALSE;
    }
  }
  if (req->words) {
    collect_words (member_array (root, "words"), words);
    for (i = 0; words->len == 0 && i < n_seg; i++)
      collect_words (member_array (json_node_get_object (json_array_get_element (segments, i)),
              "words"), words);
  }

  for (i = 0; go_on && i < MAX (n_seg, 1u); i++) {
    WhisperSegment *seg = g_new0 (WhisperSegment, 1);
    if (n_seg > 0) {
      JsonObject *o = json_node_get_object (json_array_get_element (segments, i));
      seg->start = member_double (o, "start", 0.0);
      seg->end = member_double (o, "end", 0.0);
      seg->text = g_strdup (member_string (o, "text"));
      seg->avg_logprob = member_double (o, "avg_logprob", 0.0);
      seg->no_speech_prob = member_double (o, "no_speech_prob", 0.0);
      seg->compression_ratio = member_double (o, "compression_ratio", 0.0);
      seg->temperature = member_double (o, "temperature", req->temperature);
    } else {
      /* A plain "text" answer: one segment over all of the audio. */
      seg->start = 0.0;
      seg->end = duration;
      seg->text = g_strdup (text);
    }
    seg->start = CLAMP (seg->start, 0.0, duration);
    seg->end = CLAMP (seg->end, seg->start, duration);
    /* Words of this segment: those that start before its end (the last
     * segment takes the rest). */
    while (go_on && w < words->len && (i + 1 >= MAX (n_seg, 1u)
            || g_array_index (words, AnswerWord, w).start < seg->end - TIME_EPSILON)) {
      AnswerWord *aw = &g_array_index (words, AnswerWord, w++);
      GstWhisperWord word = { 0, };
      word.text = g_strstrip (g_strdup (aw->text));
      word.start = CLAMP (aw->start, 0.0, duration);
      word.end = CLAMP (aw->end, word.start, duration);
      word.avg_logprob = isfinite (aw->probability) && aw->probability > 0.0
          ? log (aw->probability) : 0.0;
      word.step = -1;
      word.segment_start = seg->start;
      if (*word.text == '\0' || word_func == NULL) {
        g_free (word.text);
        continue;
      }
      go_on = word_func (&word, user_data);
    }
    if (go_on && req->words && words->len == 0 && word_func && seg->text) {
      /* no word timestamps in the answer (faster-whisper-server): the
       * segment is one "word", so that output=words still has its text */
      GstWhisperWord word = { 0, };
      word.text = g_strstrip (g_strdup (seg->text));
      word.start = seg->start;
      word.end = seg->end;
      word.step = -1;
      word.segment_start = seg->start;
      if (*word.text == '\0')
        g_free (word.text);
      else
        go_on = word_func (&word, user_data);
    }
    if (go_on && segment_func)
      go_on = segment_func (seg, user_data);
    else
      whisper_segment_free (seg);
  }
  return TRUE;
}

