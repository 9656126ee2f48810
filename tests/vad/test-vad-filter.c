/* test-vad-filter.c: WhisperDecodeOptions.vad_filter against faster-whisper's
 * transcribe(vad_filter=True) (tests/vad/reference/vad-filter-reference.json,
 * made by make-vad-filter-reference.py with faster-whisper 1.2.1 and the
 * reference's greedy options).
 *
 * For every signal of the reference (clips decoded by the engine, signals
 * assembled here from the stored parts list; both checked by SHA-256):
 *   - the speech chunks whisper_vad_speech_timestamps() finds with the
 *     default WhisperVadOptions (VadOptions()) are faster-whisper's;
 *   - with vad_filter and the reference's rules: the same segments, token
 *     for token, and the same restored start and end (1e-6), through the
 *     segment callback and through segments_out alike;
 *   - no word lost: where faster-whisper gives the same text with and
 *     without the filter, so does the engine;
 *   - the non-speech signals (digital silence, white noise, tones) give no
 *     text and no encoder window with the filter on, with the engine's
 *     default rules too;
 *   - token events come with restored times (within the input).
 * Then faster-whisper's SpeechTimestampsMap on the stored queries
 * (whisper-vad-filter.h, exact), and the error without a detector.
 *
 * Skips (77) without the converted VAD weights (tools/fetch-model.sh
 * silero-vad); fails without the default model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference-common.h"
#include "whisper.h"
#include "whisper-vad-filter.h"
#include "whisper-vad.h"

#define TIME_TOLERANCE 1e-6

static int failures;

static void fail (const char *format, ...) G_GNUC_PRINTF (1, 2);

static void
fail (const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *msg = g_strdup_vprintf (format, args);
  va_end (args);
  g_printerr ("FAIL: %s\n", msg);
  failures++;
}

/* make-vad-reference.py's xorshift32 noise (see test-vad.c). */
static void
append_noise (GArray *pcm, gsize n, guint32 seed, float level)
{
  guint32 state = seed;
  for (gsize i = 0; i < n; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const float v = ((float) (gint32) state * 0x1p-31f) * level;
    g_array_append_val (pcm, v);
  }
}

static GArray *
load_clip (const char *root, const char *rel, int channel)
{
  const char *dir = ref_root_dir (root);
  g_autofree char *path = g_build_filename (dir ? dir : "", rel, NULL);
  g_autoptr (GError) error = NULL;
  gsize n = 0;
  g_autofree float *samples = whisper_audio_load_file (path, channel, &n, &error);
  GArray *pcm = g_array_new (FALSE, TRUE, sizeof (float));
  if (!samples)
    fail ("%s: %s", path, error->message);
  else
    g_array_append_vals (pcm, samples, n);
  return pcm;
}

/* The clips the parts lists name (make-vad-filter-reference.py CLIPS). */
static GArray *
named_clip (const char *name)
{
  static const struct { const char *name, *root, *path; int channel; } clips[] = {
    { "pauses", "WHISPER_SOURCE_ROOT", "tests/reference/clips/pauses.wav", -1 },
    { "stereo_diarization", "WHISPER_SHARED_DATA", "stereo_diarization.wav", -1 },
    { "stereo_diarization_left", "WHISPER_SHARED_DATA", "stereo_diarization.wav", 0 },
    { "jfk", "WHISPER_SHARED_DATA", "jfk.wav", -1 },
    { "numbers", "WHISPER_SOURCE_ROOT", "tests/reference/clips/numbers.wav", -1 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (clips); i++)
    if (strcmp (clips[i].name, name) == 0)
      return load_clip (clips[i].root, clips[i].path, clips[i].channel);
  fail ("parts list: unknown clip '%s'", name);
  return g_array_new (FALSE, TRUE, sizeof (float));
}

static GArray *
make_signal (JsonObject *entry)
{
  if (!json_object_has_member (entry, "parts"))
    return load_clip (ref_string (entry, "root"), ref_string (entry, "path"),
                      (int) ref_int (entry, "channel"));
  GArray *pcm = g_array_new (FALSE, TRUE, sizeof (float));
  JsonArray *parts = ref_array (entry, "parts");
  for (guint i = 0; i < json_array_get_length (parts); i++) {
    JsonObject *p = json_array_get_object_element (parts, i);
    const char *kind = ref_string (p, "kind");
    if (strcmp (kind, "clip") == 0) {
      g_autoptr (GArray) clip = named_clip (ref_string (p, "clip"));
      g_array_append_vals (pcm, clip->data, clip->len);
    } else if (strcmp (kind, "zeros") == 0) {
      g_array_set_size (pcm, pcm->len + (guint) ref_int (p, "n_samples"));
    } else if (strcmp (kind, "noise") == 0) {
      append_noise (pcm, (gsize) ref_int (p, "n_samples"), (guint32) ref_int (p, "seed"),
                    (float) ref_double (p, "level"));
    } else if (strcmp (kind, "sine") == 0) {
      const double f = ref_double (p, "frequency"), a = ref_double (p, "amplitude");
      const gint64 n = ref_int (p, "n_samples");
      for (gint64 k = 0; k < n; k++) {
        const float v = (float) (a * sin (2.0 * G_PI * f * (double) k / 16000.0));
        g_array_append_val (pcm, v);
      }
    } else {
      fail ("parts list: unknown kind '%s'", kind);
    }
  }
  return pcm;
}

typedef struct {
  GPtrArray *called;     /* segments handed to the callback */
  double first_time;     /* time of the first token event */
  double min_time;       /* smallest token event time seen */
  guint64 events;
} Seen;

static gboolean
on_segment (WhisperSegment *segment, gpointer user_data)
{
  Seen *seen = user_data;
  g_ptr_array_add (seen->called, segment);
  return TRUE;
}

static gboolean
on_token (const WhisperTokenEvent *event, gpointer user_data)
{
  Seen *seen = user_data;
  if (seen->events++ == 0)
    seen->first_time = event->time;
  seen->min_time = MIN (seen->min_time, MIN (event->time, event->window_start));
  return TRUE;
}

/* Transcribes with fresh options; returns the segments (NULL on error,
 * which is reported). `windows` gets the encoder windows run. */
static GPtrArray *
run (WhisperStream *stream, const WhisperVad *vad, gboolean filter, gboolean reference_rules,
     const float *pcm, gsize n, Seen *seen, guint64 *windows, const char *name)
{
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  if (reference_rules) {
    o.silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;
    o.strict_no_speech = FALSE;
  } else {
    o.vad = vad;
  }
  if (filter) {
    o.vad = vad;
    o.vad_filter = TRUE;
  }
  whisper_stream_reset (stream);
  whisper_stream_set_options (stream, &o);
  whisper_stream_set_token_callback (stream, seen ? on_token : NULL, seen);
  WhisperStreamStats before, after;
  whisper_stream_get_stats (stream, &before);
  g_autoptr (GError) error = NULL;
  GPtrArray *segments = NULL;
  if (!whisper_stream_transcribe (stream, pcm, n, seen ? on_segment : NULL, seen, &segments,
                                  &error)) {
    fail ("%s: transcription (vad_filter %d) failed: %s", name, filter, error->message);
    return NULL;
  }
  whisper_stream_set_token_callback (stream, NULL, NULL);
  whisper_stream_get_stats (stream, &after);
  if (windows)
    *windows = after.windows - before.windows;
  return segments;
}

static char *
joined_text (GPtrArray *segments)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; segments && i < segments->len; i++)
    g_string_append (s, ((WhisperSegment *) g_ptr_array_index (segments, i))->text);
  return g_string_free (s, FALSE);
}

static void
compare_segments (const char *name, const char *path_name, GPtrArray *ours, JsonArray *want)
{
  const guint n_want = json_array_get_length (want);
  if (ours->len != n_want) {
    fail ("%s (%s): %u segments, faster-whisper %u", name, path_name, ours->len, n_want);
    return;
  }
  for (guint i = 0; i < n_want; i++) {
    JsonObject *w = json_array_get_object_element (want, i);
    const WhisperSegment *s = g_ptr_array_index (ours, i);
    gsize n_tok;
    g_autofree gint32 *tokens = ref_int32_array (ref_array (w, "tokens"), &n_tok);
    if (ref_first_difference (s->tokens, s->n_tokens, tokens, n_tok) >= 0)
      fail ("%s (%s): segment %u: tokens differ: ours '%s', faster-whisper '%s'", name,
            path_name, i, s->text, ref_string (w, "text"));
    if (fabs (s->start - ref_double (w, "start")) > TIME_TOLERANCE ||
        fabs (s->end - ref_double (w, "end")) > TIME_TOLERANCE)
      fail ("%s (%s): segment %u: %.6f-%.6f, faster-whisper %.6f-%.6f", name, path_name, i,
            s->start, s->end, ref_double (w, "start"), ref_double (w, "end"));
  }
}

static void
check_signal (WhisperStream *stream, const WhisperVad *vad, JsonObject *entry)
{
  const char *name = ref_string (entry, "name");
  g_autoptr (GArray) pcm = make_signal (entry);
  const float *x = (const float *) pcm->data;
  const gsize n = pcm->len;
  g_autofree char *sha = ref_sha256_f32 (x, n);
  if (n != (gsize) ref_int (entry, "n_samples") || strcmp (sha, ref_string (entry, "pcm_sha256")))
    fail ("%s: samples differ from the reference's (%zu, %s; want %" G_GINT64_FORMAT ", %s)",
          name, n, sha, ref_int (entry, "n_samples"), ref_string (entry, "pcm_sha256"));

  /* the speech chunks, exactly */
  g_autoptr (GArray) speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  g_autoptr (GError) error = NULL;
  if (!whisper_vad_speech_timestamps (vad, x, n, NULL, speech, &error))
    fail ("%s: speech timestamps: %s", name, error->message);
  JsonArray *want_speech = ref_array (entry, "speech");
  gboolean same = speech->len == json_array_get_length (want_speech);
  for (guint i = 0; same && i < speech->len; i++) {
    JsonArray *r = json_array_get_array_element (want_speech, i);
    const WhisperVadSpeech *s = &g_array_index (speech, WhisperVadSpeech, i);
    same = s->start_sample == json_array_get_int_element (r, 0)
           && s->end_sample == json_array_get_int_element (r, 1);
  }
  if (!same)
    fail ("%s: speech chunks differ from get_speech_timestamps' (%u, want %u)", name,
          speech->len, json_array_get_length (want_speech));

  /* the filter with the reference's rules: faster-whisper's segments */
  Seen seen = { g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free), 0.0,
                G_MAXDOUBLE, 0 };
  guint64 windows_filtered = 0, windows_plain = 0;
  g_autoptr (GPtrArray) ours = run (stream, vad, TRUE, TRUE, x, n, &seen, &windows_filtered, name);
  if (ours) {
    compare_segments (name, "segments_out", ours, ref_array (entry, "segments"));
    compare_segments (name, "callback", seen.called, ref_array (entry, "segments"));
  }
  const double duration = n / 16000.0;
  /* restored: nothing before the first speech chunk (0.01 s: the rounding) */
  const double first_speech =
      speech->len ? g_array_index (speech, WhisperVadSpeech, 0).start_sample / 16000.0 : 0.0;
  if (seen.events > 0 && (seen.min_time < 0.0 || seen.first_time < first_speech - 0.01))
    fail ("%s: token events from %.3f s (first %.3f s), before the first speech at %.3f s",
          name, seen.min_time, seen.first_time, first_speech);
  g_ptr_array_unref (seen.called);
  g_autofree char *text = joined_text (ours);

  if (json_object_get_boolean_member (entry, "non_speech")) {
    /* no text, no encoder work, with the engine's default rules as well */
    guint64 windows_default = 0;
    g_autoptr (GPtrArray) dflt = run (stream, vad, TRUE, FALSE, x, n, NULL, &windows_default, name);
    g_autofree char *dflt_text = joined_text (dflt);
    if (*text || *dflt_text)
      fail ("%s: text from a signal without speech: '%s' / default rules '%s'", name, text,
            dflt_text);
    if (windows_filtered || windows_default)
      fail ("%s: %" G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT " encoder windows on a signal "
            "without speech", name, windows_filtered, windows_default);
    g_print ("%s: %.1f s, %u speech chunks, no text, no window\n", name, duration, speech->len);
    return;
  }

  /* no word lost */
  g_autoptr (GPtrArray) plain = run (stream, vad, FALSE, TRUE, x, n, NULL, &windows_plain, name);
  g_autofree char *plain_text = joined_text (plain);
  const char *want_plain = ref_string (entry, "text_without_filter");
  if (strcmp (plain_text, want_plain) != 0)
    fail ("%s: without the filter: '%s', faster-whisper '%s'", name, plain_text, want_plain);
  if (strcmp (ref_string (entry, "text"), want_plain) == 0 && strcmp (text, plain_text) != 0)
    fail ("%s: the filter changed the text: '%s', without it '%s'", name, text, plain_text);
  g_print ("%s: %.1f s, %u speech chunks (%.0f %% kept), %u segments as faster-whisper's, "
           "%" G_GUINT64_FORMAT " encoder windows (%" G_GUINT64_FORMAT " without the filter)%s\n",
           name, duration, speech->len, 100 * ref_double (entry, "speech_fraction"),
           ours ? ours->len : 0, windows_filtered, windows_plain,
           strcmp (text, plain_text) == 0 ? ", same text as without" : "");
}

static void
check_time_map (JsonObject *map)
{
  JsonArray *speech_json = ref_array (map, "speech");
  g_autoptr (GArray) speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  gint64 end = 0;
  for (guint i = 0; i < json_array_get_length (speech_json); i++) {
    JsonArray *r = json_array_get_array_element (speech_json, i);
    WhisperVadSpeech s = { json_array_get_int_element (r, 0), json_array_get_int_element (r, 1) };
    g_array_append_val (speech, s);
    end = s.end_sample;
  }
  g_autofree float *zeros = g_new0 (float, end + 1);
  g_autoptr (WhisperVadFilter) f = whisper_vad_filter_new_from_speech (zeros, end, speech);
  gsize n_concat;
  whisper_vad_filter_pcm (f, &n_concat);
  gsize want_concat = 0;
  for (guint i = 0; i < speech->len; i++)
    want_concat += g_array_index (speech, WhisperVadSpeech, i).end_sample
                   - g_array_index (speech, WhisperVadSpeech, i).start_sample;
  if (n_concat != want_concat)
    fail ("time map: concatenation of %zu samples, want %zu", n_concat, want_concat);
  JsonArray *queries = ref_array (map, "queries");
  int bad = 0;
  for (guint i = 0; i < json_array_get_length (queries); i++) {
    JsonObject *q = json_array_get_object_element (queries, i);
    const double t = ref_double (q, "time");
    const gboolean is_end = json_object_get_boolean_member (q, "is_end");
    const int index = whisper_vad_filter_chunk_index (f, t, is_end);
    const double orig = whisper_vad_filter_original_time (f, t, -1, is_end);
    if (index != ref_int (q, "chunk_index") || orig != ref_double (q, "original")) {
      if (bad++ < 10)
        fail ("time map: time %.17g is_end %d: chunk %d, %.17g; faster-whisper %d, %.17g", t,
              is_end, index, orig, (int) ref_int (q, "chunk_index"), ref_double (q, "original"));
    }
  }
  JsonArray *words = ref_array (map, "words");
  for (guint i = 0; i < json_array_get_length (words); i++) {
    JsonObject *w = json_array_get_object_element (words, i);
    double a = ref_double (w, "start"), b = ref_double (w, "end");
    whisper_vad_filter_restore_word (f, &a, &b);
    if (a != ref_double (w, "restored_start") || b != ref_double (w, "restored_end")) {
      if (bad++ < 10)
        fail ("time map: word %.6f-%.6f restored to %.17g-%.17g, faster-whisper %.17g-%.17g",
              ref_double (w, "start"), ref_double (w, "end"), a, b,
              ref_double (w, "restored_start"), ref_double (w, "restored_end"));
    }
  }
  g_print ("time map of %u chunks: %u queries, %u words as SpeechTimestampsMap's\n", speech->len,
           json_array_get_length (queries), json_array_get_length (words));
}

int
main (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperVad) vad = whisper_vad_new (NULL, &error);
  if (!vad) {
    g_print ("SKIP: no VAD weights (tools/fetch-model.sh silero-vad): %s\n", error->message);
    return 77;
  }
  if (!ref_default_model_present ())
    return 1;
  WhisperEngineOptions eo;
  whisper_engine_options_init (&eo);
  eo.device = WHISPER_DEVICE_CPU;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&eo, &error);
  if (!engine) {
    g_printerr ("FAIL: engine: %s\n", error->message);
    return 1;
  }
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, &error);
  if (!stream) {
    g_printerr ("FAIL: stream: %s\n", error->message);
    return 1;
  }

  /* Python's round(x, 2): ties of the exact binary value go to even */
  const struct { double x, want; } rounds[] = {
    { 0.125, 0.12 }, { 0.375, 0.38 }, { 2.675, 2.67 }, { 1.005, 1.0 }, { -0.125, -0.12 },
    { 10.0, 10.0 }, { 3.14159, 3.14 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (rounds); i++)
    if (whisper_vad_filter_round2 (rounds[i].x) != rounds[i].want)
      fail ("round2(%.17g) = %.17g, Python's round() %.17g", rounds[i].x,
            whisper_vad_filter_round2 (rounds[i].x), rounds[i].want);

  /* vad_filter without a detector: a clear error */
  {
    WhisperDecodeOptions o;
    whisper_decode_options_init (&o);
    o.vad_filter = TRUE;
    whisper_stream_set_options (stream, &o);
    float one[1600] = { 0 };
    g_autoptr (GError) e = NULL;
    if (whisper_stream_transcribe (stream, one, G_N_ELEMENTS (one), NULL, NULL, NULL, &e)
        || !e || !strstr (e->message, "vad_filter"))
      fail ("vad_filter without a detector: %s", e ? e->message : "no error");
    else
      g_print ("without a detector: %s\n", e->message);
  }

  g_autofree char *path = g_build_filename (ref_source_root (), "tests", "vad", "reference",
                                            "vad-filter-reference.json", NULL);
  g_autoptr (JsonParser) parser = ref_load_json (path);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonArray *signals = ref_array (root, "signals");
  for (guint i = 0; i < json_array_get_length (signals); i++)
    check_signal (stream, vad, json_array_get_object_element (signals, i));
  JsonArray *maps = ref_array (root, "time_maps");
  for (guint i = 0; i < json_array_get_length (maps); i++)
    check_time_map (json_array_get_object_element (maps, i));

  if (failures) {
    g_printerr ("%d failures\n", failures);
    return 1;
  }
  g_print ("OK\n");
  return 0;
}
