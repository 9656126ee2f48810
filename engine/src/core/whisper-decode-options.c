/* whisper-options-parse.c: the decoding options that users write as text
 * (a temperature list, a token list), read the way faster-whisper's
 * command-line users write them: "0,0.2,0.4" and "-1,123". Shared by the
 * command-line program and the element. */
#include "whisper.h"

#include <math.h>

gboolean
whisper_decode_options_parse_temperatures (WhisperDecodeOptions *o, const char *text,
                                           GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text ? text : "", ",", -1);
  double values[WHISPER_MAX_TEMPERATURES];
  int n = 0;
  for (int i = 0; parts[i]; i++) {
    char *p = g_strstrip (parts[i]), *end = NULL;
    const double t = g_ascii_strtod (p, &end);
    if (!*p || !end || *end || !(t >= 0) || t > 10) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "temperatures \"%s\": \"%s\" is not a temperature from 0 to 10", text, p);
      return FALSE;
    }
    if (n == WHISPER_MAX_TEMPERATURES) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "temperatures \"%s\": more than %d", text, WHISPER_MAX_TEMPERATURES);
      return FALSE;
    }
    values[n++] = t;
  }
  if (n == 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "temperatures: the list is empty (give at least one, e.g. \"0\")");
    return FALSE;
  }
  for (int i = 0; i < n; i++)
    o->temperatures[i] = values[i];
  o->n_temperatures = n;
  return TRUE;
}

gboolean
whisper_decode_options_parse_suppress_tokens (WhisperDecodeOptions *o, const char *text,
                                              GArray *ids, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text ? text : "", ",", -1);
  gboolean non_speech = FALSE;
  g_array_set_size (ids, 0);
  for (int i = 0; parts[i]; i++) {
    char *p = g_strstrip (parts[i]), *end = NULL;
    if (!*p)
      continue;
    const gint64 id = g_ascii_strtoll (p, &end, 10);
    if (!end || *end || id < -1 || id > G_MAXINT32) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "suppressed tokens \"%s\": \"%s\" is not a token id or -1", text, p);
      return FALSE;
    }
    if (id == -1) {
      non_speech = TRUE;
    } else {
      const gint32 v = (gint32) id;
      g_array_append_val (ids, v);
    }
  }
  o->suppress_non_speech = non_speech;
  o->suppress_tokens = ids->len ? (const gint32 *) ids->data : NULL;
  o->n_suppress_tokens = (int) ids->len;
  return TRUE;
}
