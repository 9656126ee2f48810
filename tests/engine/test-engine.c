/* test-engine.c: the engine on the real default model (tiny.en):
 * tokenizer (multi-byte characters split across tokens, special and
 * timestamp tokens), the per-step callback (called without the engine's
 * compute lock, so that it may use another stream of the engine),
 * cancellation, the encoder-length setting. What every decode step does
 * (the attention key counts, nothing but arithmetic) is checked by
 * test-decode-steps.c. */
#include "whisper-engine-struct.h"
#include "whisper-engine-test-api.h"
#include "whisper-tokenizer.h"

#include <math.h>
#include <string.h>

static WhisperEngine *shared_engine;

static char *
shared_data_path (const char *name)
{
  const char *dir = g_getenv ("WHISPER_SHARED_DATA");
  if (!dir)
    g_error ("WHISPER_SHARED_DATA is not set (run the tests with meson test)");
  return g_build_filename (dir, name, NULL);
}

static WhisperEngine *
new_engine (int max_encoder_length)
{
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = WHISPER_DEVICE_CPU;
  options.max_encoder_length = max_encoder_length;
  g_autoptr (GError) error = NULL;
  WhisperEngine *engine = whisper_engine_new (&options, &error);
  if (!engine)
    g_error ("cannot create the engine on the default model (install it with "
             "tools/fetch-model.sh): %s", error->message);
  return engine;
}

static float *
load_jfk (gsize *n)
{
  g_autofree char *path = shared_data_path ("jfk.wav");
  g_autoptr (GError) error = NULL;
  float *pcm = whisper_audio_load_file (path, -1, n, &error);
  g_assert_no_error (error);
  return pcm;
}

/* The id of the single-byte token for `byte` (GPT-2 vocabularies hold one
 * for each of the 256 bytes). */
static gint32
byte_token (WhisperEngine *engine, guint8 byte)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  for (gint32 id = 0; id < info->token_eot; id++) {
    g_autoptr (GBytes) b = whisper_engine_token_bytes (engine, id);
    gsize size;
    const guint8 *data = b ? g_bytes_get_data (b, &size) : NULL;
    if (data && size == 1 && data[0] == byte)
      return id;
  }
  g_error ("no single-byte token for 0x%02x", byte);
  return -1;
}

static void
test_special_tokens (void)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (shared_engine);
  g_assert_false (info->is_multilingual);
  g_assert_cmpint (info->token_eot, ==, 50256);
  g_assert_cmpint (info->token_sot, ==, 50257);
  g_assert_cmpint (info->token_translate, ==, 50357);
  g_assert_cmpint (info->token_transcribe, ==, 50358);
  g_assert_cmpint (info->token_sot_lm, ==, 50359);
  g_assert_cmpint (info->token_sot_prev, ==, 50360);
  g_assert_cmpint (info->token_no_speech, ==, 50361);
  g_assert_cmpint (info->token_no_timestamps, ==, 50362);
  g_assert_cmpint (info->token_timestamp_begin, ==, 50363);

  g_autoptr (GBytes) sot = whisper_engine_token_bytes (shared_engine, info->token_sot);
  g_assert_cmpmem (g_bytes_get_data (sot, NULL), g_bytes_get_size (sot), "<|startoftranscript|>",
                   strlen ("<|startoftranscript|>"));
  g_autoptr (GBytes) ts = whisper_engine_token_bytes (shared_engine, info->token_timestamp_begin);
  g_assert_cmpmem (g_bytes_get_data (ts, NULL), g_bytes_get_size (ts), "<|0.00|>", 8);
  g_assert_null (whisper_engine_token_bytes (shared_engine, -1));
  g_assert_null (whisper_engine_token_bytes (shared_engine, info->n_vocab));
}

static void
test_decode_words_and_specials (void)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (shared_engine);
  /* " And so my fellow Americans" from the reference's tokens for jfk.wav,
   * surrounded by special and timestamp tokens, which decode to nothing */
  const gint32 ids[] = { info->token_sot, info->token_timestamp_begin, 843, 523, 616, 5891, 3399,
                         info->token_timestamp_begin + 387, info->token_eot };
  g_autofree char *text = whisper_engine_decode_tokens (shared_engine, ids, G_N_ELEMENTS (ids));
  g_assert_cmpstr (text, ==, " And so my fellow Americans");
}

static void
test_decode_split_utf8 (void)
{
  /* "é" (C3 A9) and "♪" (E2 99 AA) spelled with single-byte tokens, so each
   * character is split across tokens */
  const gint32 ids[] = { byte_token (shared_engine, 'a'), byte_token (shared_engine, 0xC3),
                         byte_token (shared_engine, 0xA9), byte_token (shared_engine, 0xE2),
                         byte_token (shared_engine, 0x99), byte_token (shared_engine, 0xAA) };
  g_autofree char *text = whisper_engine_decode_tokens (shared_engine, ids, G_N_ELEMENTS (ids));
  g_assert_cmpstr (text, ==, "a\xC3\xA9\xE2\x99\xAA");

  /* a truncated character decodes to one U+FFFD, as Python's "replace" */
  const gint32 cut[] = { ids[3], ids[4], ids[0] };
  g_autofree char *bad = whisper_engine_decode_tokens (shared_engine, cut, 3);
  g_assert_cmpstr (bad, ==, "\xEF\xBF\xBD" "a");

  /* the incremental decoder emits each character when its last byte comes */
  WhisperPieceDecoder dec;
  whisper_piece_decoder_init (&dec, 1);
  const guint8 bytes[] = { 'a', 0xC3, 0xA9, 0xE2, 0x99, 0xAA };
  const char *expect[] = { "a", "", "\xC3\xA9", "", "", "\xE2\x99\xAA" };
  for (int i = 0; i < 6; i++)
    g_assert_cmpstr (whisper_piece_decoder_push (&dec, bytes + i, 1), ==, expect[i]);
  whisper_piece_decoder_clear (&dec);
}

static void
test_utf8_decoder_edge_cases (void)
{
  struct { const char *in; gsize len; const char *out; } cases[] = {
    { "\xC0\xAF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD" },            /* overlong lead, then lone continuation */
    { "\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" }, /* surrogate */
    { "\xF0\x9F\x8E\xB5x", 5, "\xF0\x9F\x8E\xB5x" },            /* 4-byte character */
    { "\xF0\x9F\x8E", 3, "\xEF\xBF\xBD" },                      /* truncated at the end */
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GString) s = g_string_new (NULL);
    whisper_utf8_decode_append (s, (const guint8 *) cases[i].in, cases[i].len, TRUE);
    g_assert_cmpstr (s->str, ==, cases[i].out);
  }
}

typedef struct {
  GString *text;
  int steps;
  int text_steps;
  int stop_after;
  double last_time;
  gboolean times_monotonic;
  /* set to check the callback's freedom: the engine's compute lock is
   * free, and at token `nested_at` another stream transcribes `pcm` */
  WhisperEngine *engine;
  gboolean lock_held;
  int nested_at;
  const float *pcm;
  gsize n_samples;
  char *nested_text;
} TokenLog;

static char *
join_segments (GPtrArray *segments)
{
  GString *joined = g_string_new (NULL);
  for (guint i = 0; i < segments->len; i++)
    g_string_append (joined, ((WhisperSegment *) g_ptr_array_index (segments, i))->text);
  return g_string_free (joined, FALSE);
}

static void
check_callback_freedom (TokenLog *log)
{
  if (whisper_turn_lock_try (&log->engine->net.compute_lock))
    whisper_turn_lock_release (&log->engine->net.compute_lock);
  else
    log->lock_held = TRUE;
  if (log->steps != log->nested_at || log->lock_held)
    return;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperStream) other = whisper_stream_new (log->engine, &error);
  g_assert_no_error (error);
  g_autoptr (GPtrArray) segments = NULL;
  g_assert_true (whisper_stream_transcribe (other, log->pcm, log->n_samples, NULL, NULL,
                                            &segments, &error));
  g_assert_no_error (error);
  log->nested_text = join_segments (segments);
}

static gboolean
on_token (const WhisperTokenEvent *ev, gpointer user_data)
{
  TokenLog *log = user_data;
  g_assert_cmpint (ev->step, ==, log->steps);
  if (log->engine)
    check_callback_freedom (log);
  log->steps++;
  if (ev->time < log->last_time)
    log->times_monotonic = FALSE;
  log->last_time = ev->time;
  if (!ev->is_timestamp) {
    g_string_append (log->text, ev->piece);
    log->text_steps++;
  }
  return log->stop_after == 0 || log->steps < log->stop_after;
}

#define JFK_TEXT                                                                                 \
  " And so my fellow Americans ask not what your country can do for you ask what you can do " \
  "for your country"

static void
test_token_callback (void)
{
  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  g_autoptr (WhisperStream) stream = whisper_stream_new (shared_engine, NULL);
  TokenLog log = { .text = g_string_new (NULL), .times_monotonic = TRUE,
                   .engine = shared_engine, .nested_at = 5, .pcm = pcm, .n_samples = n };
  whisper_stream_set_token_callback (stream, on_token, &log);

  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) segments = NULL;
  g_assert_true (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segments, &error));
  g_assert_no_error (error);

  g_autofree char *joined = join_segments (segments);
  g_assert_cmpstr (joined, ==, JFK_TEXT);
  /* every text piece came through the per-step callback, in order */
  g_assert_cmpstr (log.text->str, ==, joined);
  g_assert_true (log.times_monotonic);
  g_assert_cmpint (log.text_steps, ==, 22);
  g_string_free (log.text, TRUE);
  /* the callback ran without the compute lock, and a whole transcription
   * on another stream in the middle of this one changed neither */
  g_assert_false (log.lock_held);
  g_assert_cmpstr (log.nested_text, ==, JFK_TEXT);
  g_free (log.nested_text);

  WhisperStreamStats stats;
  whisper_stream_get_stats (stream, &stats);
  g_assert_cmpuint (stats.windows, ==, 1);
  /* the prompt pass, then one pass per sampled token (26); EOT ends it */
  g_assert_cmpuint (stats.decode_steps, ==, 27);
}

/* Every token of `segments`, in order. */
static GArray *
all_tokens (GPtrArray *segments)
{
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (guint i = 0; i < segments->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, i);
    g_array_append_vals (ids, seg->tokens, seg->n_tokens);
  }
  return ids;
}

static GArray *
transcribe_tokens (WhisperStream *stream, const float *pcm, gsize n)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) segments = NULL;
  whisper_stream_reset (stream);
  g_assert_true (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segments, &error));
  g_assert_no_error (error);
  return all_tokens (segments);
}

static void
assert_same_tokens (const GArray *a, const GArray *b)
{
  g_assert_cmpuint (a->len, >, 0);
  g_assert_cmpmem (a->data, a->len * sizeof (gint32), b->data, b->len * sizeof (gint32));
}

/* whisper_stream_set_share_encoder(): a stream decoding the audio another
 * stream just encoded takes its encoder output (no encoder pass) and gives
 * the same tokens; after an encoder pass on other audio it encodes again. */
static void
test_share_encoder (void)
{
  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  g_autoptr (WhisperStream) first = whisper_stream_new (shared_engine, NULL);
  g_autoptr (WhisperStream) second = whisper_stream_new (shared_engine, NULL);
  WhisperStreamStats st;
  whisper_stream_set_share_encoder (second, TRUE);

  g_autoptr (GArray) unshared = transcribe_tokens (first, pcm, n);
  g_autoptr (GArray) shared = transcribe_tokens (second, pcm, n);
  whisper_stream_get_stats (second, &st);
  g_assert_cmpuint (st.windows, ==, 1);
  g_assert_cmpuint (st.encoder_shared, ==, 1);
  assert_same_tokens (unshared, shared);

  /* the engine's last pass was on the first 5 s: jfk.wav is encoded again */
  g_autoptr (GArray) part = transcribe_tokens (first, pcm, 5 * WHISPER_SAMPLE_RATE);
  g_autoptr (GArray) again = transcribe_tokens (second, pcm, n);
  whisper_stream_get_stats (second, &st);
  g_assert_cmpuint (st.windows, ==, 2);
  g_assert_cmpuint (st.encoder_shared, ==, 1);
  assert_same_tokens (unshared, again);
  whisper_stream_get_stats (first, &st);
  g_assert_cmpuint (st.encoder_shared, ==, 0);
}

static void
test_lookups_counted_at_creation (void)
{
  /* the counter is live: creating an engine resolves the constants */
  const guint64 before = whisper_model_lookup_count ();
  g_autoptr (WhisperEngine) engine = new_engine (0);
  g_assert_cmpuint (whisper_model_lookup_count (), >, before);
}

static void
check_one_encoder_length (WhisperEngine *engine, int expected)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_assert_cmpint (info->max_encoder_length, ==, expected);
  g_assert_cmpint (info->window_samples, ==, expected * 2 * 160);

  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, NULL);
  WhisperStreamStats stats;
  whisper_stream_get_stats (stream, &stats);
  /* the cache is sized from the cached value (the key count each step's
   * attention reads: test-decode-steps.c) */
  g_assert_cmpint (stats.cross_cache_length, ==, expected);

  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) segments = NULL;
  g_assert_true (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segments, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (segments->len, >, 0);
}

static void
test_encoder_length_default (void)
{
  check_one_encoder_length (shared_engine, 1500);
}

static void
test_encoder_length_override (void)
{
  g_autoptr (WhisperEngine) engine = new_engine (500);
  check_one_encoder_length (engine, 500);
  /* a 10-s window on an 11-s clip: two windows */
  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, NULL);
  g_assert_true (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, NULL, NULL));
  WhisperStreamStats stats;
  whisper_stream_get_stats (stream, &stats);
  g_assert_cmpuint (stats.windows, >=, 2);
}

/* jfk.wav, a second of silence, then jfk.wav again cut after `seconds`,
 * with word timestamps (as live calls decode): the windows encoded, and
 * the text. */
static guint64
decode_cut_by (gboolean once, gint64 last_window_by, double seconds, char **text,
               guint64 *past_deadline)
{
  gsize n;
  g_autofree float *jfk = load_jfk (&n);
  const gsize cut = MIN (n, (gsize) (seconds * 16000)), total = n + 16000 + cut;
  g_autofree float *pcm = g_new0 (float, total);
  memcpy (pcm, jfk, n * sizeof *pcm);
  memcpy (pcm + n + 16000, jfk, cut * sizeof *pcm);
  g_autoptr (WhisperStream) stream = whisper_stream_new (shared_engine, NULL);
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  o.word_timestamps = TRUE;
  o.last_window_once = once;
  o.last_window_by = last_window_by;
  whisper_stream_set_options (stream, &o);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) segments = NULL;
  g_assert_true (whisper_stream_transcribe (stream, pcm, total, NULL, NULL, &segments, &error));
  g_assert_no_error (error);
  GString *all = g_string_new (NULL);
  for (guint i = 0; i < segments->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, i);
    g_assert_cmpfloat (seg->end, <=, total / 16000.0 + 0.02);
    g_string_append (all, seg->text);
  }
  *text = g_string_free (all, FALSE);
  WhisperStreamStats stats;
  whisper_stream_get_stats (stream, &stats);
  if (past_deadline)
    *past_deadline = stats.windows_past_deadline;
  return stats.windows;
}

/* jfk.wav's words with word timestamps, greedy, on `engine` */
static GPtrArray *
jfk_words (WhisperEngine *engine)
{
  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, NULL);
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  o.word_timestamps = TRUE;
  o.beam_size = 1;
  whisper_stream_set_options (stream, &o);
  g_autoptr (GError) error = NULL;
  GPtrArray *segments = NULL;
  g_assert_true (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segments, &error));
  g_assert_no_error (error);
  return segments;
}

/* precision=int8 keeps the window's cross K/V in float16 alone unless word
 * timestamps are on, whose alignment reads the float32 ones
 * (net/whisper-decoder.c): its words and their times against exact's on
 * jfk.wav: as many words, and at least 90 % of them with both times within
 * 0.1 s of exact's (int8 ends one segment after "for you", where exact
 * runs on: that word's end moves). Without the float32 K/V the alignment
 * heads would attend over a stale buffer. */
static void
test_int8_word_timestamps (void)
{
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = WHISPER_DEVICE_CPU;
  options.precision = WHISPER_PRECISION_INT8;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) int8 = whisper_engine_new (&options, &error);
  g_assert_no_error (error);
  g_autoptr (GPtrArray) want = jfk_words (shared_engine);
  g_autoptr (GPtrArray) got = jfk_words (int8);
  g_assert_cmpuint (got->len, ==, want->len);
  g_autoptr (GArray) a = g_array_new (FALSE, FALSE, sizeof (WhisperWord));
  g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (WhisperWord));
  for (guint i = 0; i < want->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (want, i);
    g_array_append_vals (a, seg->words, seg->n_words);
  }
  for (guint i = 0; i < got->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (got, i);
    g_array_append_vals (b, seg->words, seg->n_words);
  }
  g_assert_cmpuint (a->len, >=, 20);
  g_assert_cmpuint (b->len, ==, a->len);
  guint close = 0;
  for (guint w = 0; w < a->len; w++) {
    const WhisperWord *x = &g_array_index (a, WhisperWord, w), *y = &g_array_index (b, WhisperWord, w);
    g_test_message ("%s %.2f-%.2f | %s %.2f-%.2f", x->text, x->start, x->end, y->text, y->start,
                    y->end);
    close += fabs (x->start - y->start) <= 0.1 && fabs (x->end - y->end) <= 0.1;
  }
  g_assert_cmpuint (10 * close, >=, 9 * a->len);
}

static guint64
decode_cut (gboolean once, double seconds, char **text)
{
  return decode_cut_by (once, 0, seconds, text, NULL);
}

/* last_window_once: audio that ends inside the window is one window;
 * Whisper's rule decodes a second window from the last word's end. Here
 * the first window's text stops after "for you" (a closed segment); the
 * rule's second window reads the words after it, which a live caller gets
 * from its next call. */
static void
test_last_window_once (void)
{
  g_autofree char *rule = NULL, *once = NULL;
  g_assert_cmpuint (decode_cut (FALSE, 9.0, &rule), ==, 2);
  g_assert_cmpuint (decode_cut (TRUE, 9.0, &once), ==, 1);
  g_test_message ("seek rule: %s\nonce: %s", rule, once);
  g_assert_true (g_str_has_prefix (rule, once));
  g_assert_true (g_str_has_suffix (once, "ask not what your country can do for you"));
  g_assert_true (g_str_has_suffix (rule, "for you ask what you"));
}

/* last_window_by: the rule's second window is decoded when it would end
 * by then (counted as long as the first), left out as last_window_once
 * leaves it when it would not. */
static void
test_last_window_by (void)
{
  g_autofree char *rule = NULL, *late = NULL, *once = NULL;
  guint64 past = 0;
  g_assert_cmpuint (decode_cut (TRUE, 9.0, &once), ==, 1);
  /* an hour from now: the rule's window */
  g_assert_cmpuint (decode_cut_by (FALSE, g_get_monotonic_time () + 3600 * G_TIME_SPAN_SECOND,
                                   9.0, &rule, &past), ==, 2);
  g_assert_cmpuint (past, ==, 0);
  g_assert_true (g_str_has_suffix (rule, "for you ask what you"));
  /* now: no time for a second window */
  g_assert_cmpuint (decode_cut_by (FALSE, g_get_monotonic_time (), 9.0, &late, &past), ==, 1);
  g_assert_cmpuint (past, ==, 1);
  g_assert_cmpstr (late, ==, once);
}

static void
test_bad_encoder_context (void)
{
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = WHISPER_DEVICE_CPU;
  options.max_encoder_length = 1501;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  g_assert_null (engine);
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
  g_assert_nonnull (strstr (error->message, "1501"));
}

static void
test_cancel_from_callback (void)
{
  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  g_autoptr (WhisperStream) stream = whisper_stream_new (shared_engine, NULL);
  TokenLog log = { .text = g_string_new (NULL), .stop_after = 3, .times_monotonic = TRUE };
  whisper_stream_set_token_callback (stream, on_token, &log);
  g_autoptr (GError) error = NULL;
  g_assert_false (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, NULL, &error));
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED);
  g_assert_cmpint (log.steps, ==, 3);
  g_string_free (log.text, TRUE);
}

static void
test_empty_and_silent_audio (void)
{
  g_autoptr (WhisperStream) stream = whisper_stream_new (shared_engine, NULL);
  g_autoptr (GPtrArray) none = NULL;
  g_assert_true (whisper_stream_transcribe (stream, NULL, 0, NULL, NULL, &none, NULL));
  g_assert_cmpuint (none->len, ==, 0);

  /* 5 s of digital silence: no text */
  g_autofree float *zeros = g_new0 (float, 5 * WHISPER_SAMPLE_RATE);
  g_autoptr (GPtrArray) segments = NULL;
  g_assert_true (whisper_stream_transcribe (stream, zeros, 5 * WHISPER_SAMPLE_RATE, NULL, NULL,
                                            &segments, NULL));
  g_assert_cmpuint (segments->len, ==, 0);
}

/* The text of a transcription, its segments checked for finite scores. */
static char *
transcribe_text (WhisperStream *stream, const float *pcm, gsize n)
{
  g_autoptr (GPtrArray) segments = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segments, &error));
  g_assert_no_error (error);
  GString *text = g_string_new (NULL);
  for (guint i = 0; i < segments->len; i++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, i);
    g_assert_true (isfinite (seg->avg_logprob) && isfinite (seg->no_speech_prob) &&
                   isfinite (seg->compression_ratio));
    g_string_append (text, seg->text);
  }
  return g_string_free (text, FALSE);
}

/* One +Inf, one NaN and one huge sample in real speech: before the input
 * was sanitised, 11 s of speech came out as one "!!!!..." segment with NaN
 * scores. Now the text is the clean input's and the fixes are counted. */
static void
test_hostile_samples (void)
{
  gsize n;
  g_autofree float *clean = load_jfk (&n);
  g_autofree float *hostile = g_memdup2 (clean, n * sizeof (float));
  hostile[16000] = INFINITY;
  hostile[48000] = NAN;
  hostile[80000] = 3e19f;
  hostile[80001] = -1.5f;

  g_autoptr (WhisperStream) stream = whisper_stream_new (shared_engine, NULL);
  g_autofree char *want = transcribe_text (stream, clean, n);
  WhisperStreamStats before;
  whisper_stream_get_stats (stream, &before);
  g_assert_cmpuint (before.samples_non_finite, ==, 0);
  g_assert_cmpuint (before.samples_clipped, ==, 0);

  whisper_stream_reset (stream);
  g_autofree char *got = transcribe_text (stream, hostile, n);
  g_assert_cmpstr (got, ==, want);
  WhisperStreamStats after;
  whisper_stream_get_stats (stream, &after);
  g_assert_cmpuint (after.samples_non_finite, ==, 2);
  g_assert_cmpuint (after.samples_clipped, ==, 2);
  /* the caller's buffer is left as it was */
  g_assert_true (isinf (hostile[16000]) && isnan (hostile[48000]));
}

/* Sampling at temperature > 0 repeats with the same seed (the seed property
 * the issue of reproducible fallback asks for) and moves with another;
 * invalid decoding options are refused with their names. */
static void
test_sampling_seed (void)
{
  gsize n;
  g_autofree float *pcm = load_jfk (&n);
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  o.temperatures[0] = 1.0;
  o.n_temperatures = 1;
  o.best_of = 2;
  g_autofree char *texts[6] = { NULL };
  for (int i = 0; i < 6; i++) {
    g_autoptr (WhisperStream) stream = whisper_stream_new (shared_engine, NULL);
    o.seed = i < 2 ? 7 : (guint32) (100 + i);
    whisper_stream_set_options (stream, &o);
    texts[i] = transcribe_text (stream, pcm, n);
  }
  g_assert_cmpstr (texts[0], ==, texts[1]);
  gboolean moved = FALSE;
  for (int i = 2; i < 6; i++)
    moved |= g_strcmp0 (texts[i], texts[0]) != 0;
  g_assert_true (moved);

  g_autoptr (GError) error = NULL;
  whisper_decode_options_init (&o);
  o.beam_size = 0;
  g_assert_false (whisper_decode_options_check (shared_engine, &o, &error));
  g_assert_nonnull (strstr (error->message, "beam size"));
  g_clear_error (&error);
  whisper_decode_options_init (&o);
  o.language = "de";
  g_assert_false (whisper_decode_options_check (shared_engine, &o, &error));
  g_assert_nonnull (strstr (error->message, "English-only"));
  g_clear_error (&error);
  whisper_decode_options_init (&o);
  o.clip_timestamps = "1,x";
  g_assert_false (whisper_decode_options_check (shared_engine, &o, &error));
  g_assert_nonnull (strstr (error->message, "clip timestamps"));
  g_clear_error (&error);
  whisper_decode_options_init (&o);
  g_assert_false (whisper_decode_options_parse_temperatures (&o, "0,hot", &error));
  g_assert_nonnull (strstr (error->message, "hot"));
}

static void
test_missing_model (void)
{
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = "/nonexistent/whisper-model";
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  g_assert_null (engine);
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "/nonexistent/whisper-model"));
}

static void
test_audio_errors (void)
{
  g_autoptr (GError) error = NULL;
  gsize n;
  g_assert_null (whisper_audio_load_file ("/nonexistent.wav", -1, &n, &error));
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO);
  g_assert_nonnull (strstr (error->message, "/nonexistent.wav"));
  g_clear_error (&error);

  g_autofree char *path = shared_data_path ("jfk.wav");
  g_assert_null (whisper_audio_load_file (path, 1, &n, &error)); /* mono file */
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  shared_engine = new_engine (0);
  g_test_add_func ("/engine/special-tokens", test_special_tokens);
  g_test_add_func ("/engine/decode-words", test_decode_words_and_specials);
  g_test_add_func ("/engine/decode-split-utf8", test_decode_split_utf8);
  g_test_add_func ("/engine/utf8-edge-cases", test_utf8_decoder_edge_cases);
  g_test_add_func ("/engine/token-callback", test_token_callback);
  g_test_add_func ("/engine/sampling-seed", test_sampling_seed);
  g_test_add_func ("/engine/share-encoder", test_share_encoder);
  g_test_add_func ("/engine/lookups-at-creation", test_lookups_counted_at_creation);
  g_test_add_func ("/engine/encoder-length-default", test_encoder_length_default);
  g_test_add_func ("/engine/encoder-length-override", test_encoder_length_override);
  g_test_add_func ("/engine/int8-word-timestamps", test_int8_word_timestamps);
  g_test_add_func ("/engine/last-window-once", test_last_window_once);
  g_test_add_func ("/engine/last-window-by", test_last_window_by);
  g_test_add_func ("/engine/bad-encoder-context", test_bad_encoder_context);
  g_test_add_func ("/engine/cancel", test_cancel_from_callback);
  g_test_add_func ("/engine/empty-and-silence", test_empty_and_silent_audio);
  g_test_add_func ("/engine/hostile-samples", test_hostile_samples);
  g_test_add_func ("/engine/missing-model", test_missing_model);
  g_test_add_func ("/engine/audio-errors", test_audio_errors);
  const int rc = g_test_run ();
  whisper_engine_unref (shared_engine);
  return rc;
}
