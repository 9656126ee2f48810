/* reference-common.h: helpers shared by the tests that compare the engine
 * with the faster-whisper fixtures of tests/reference/fixtures/. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "whisper.h"

G_BEGIN_DECLS

/* $WHISPER_SOURCE_ROOT, else the source root meson compiled in. */
const char *ref_source_root (void);
/* $WHISPER_SHARED_DATA, else <source root>/../shared/data. */
const char *ref_shared_data (void);
/* The folder a clip's "root" names ("WHISPER_SOURCE_ROOT" or
 * "WHISPER_SHARED_DATA"); NULL for anything else. */
const char *ref_root_dir (const char *root_variable);

/* <source root>/tests/reference/fixtures/<name> (g_free). */
char *ref_fixture_path (const char *name);

/* Parses a JSON file; aborts the test program with a message when it cannot.
 * The returned parser owns the tree. */
JsonParser *ref_load_json (const char *path);

/* Member accessors that abort with a message naming the member when it is
 * missing or has the wrong type. */
JsonObject *ref_object (JsonObject *obj, const char *member);
JsonArray *ref_array (JsonObject *obj, const char *member);
double ref_double (JsonObject *obj, const char *member);
gint64 ref_int (JsonObject *obj, const char *member);
const char *ref_string (JsonObject *obj, const char *member);

/* A JSON array of numbers as floats / doubles / int32 (g_free). */
float *ref_float_array (JsonArray *array, gsize *n_out);
gint32 *ref_int32_array (JsonArray *array, gsize *n_out);

/* Reads a little-endian float32 file of exactly `n_expected` values and
 * checks its SHA-256 against `sha256_hex` (may be NULL). Aborts on mismatch. */
float *ref_read_f32_file (const char *path, gsize n_expected, const char *sha256_hex);

/* SHA-256 (hex, g_free) of float32 samples as little-endian bytes. */
char *ref_sha256_f32 (const float *data, gsize n);

/* The default model directory the engine uses (model_path NULL). When it has
 * no model.bin, prints how to install it and returns FALSE: the caller must
 * then fail (CI installs the model, so a missing model is an error, not a
 * skip). */
gboolean ref_default_model_present (void);

/* max |a - b| over n values; *argmax_out (may be NULL) gets its index. NaN
 * in either array counts as an infinite difference. */
double ref_max_abs_diff (const float *a, const float *b, gsize n, gsize *argmax_out);

/* One transcription of a clip with a fresh stream and the default
 * WhisperDecodeOptions. */
typedef struct {
  GPtrArray *segments;      /* WhisperSegment *, owned */
  gint32 *tokens;           /* every segment's tokens, concatenated */
  gsize n_tokens;
  guint64 windows;          /* encoder windows the stream ran */
  double seconds;           /* wall time of whisper_stream_transcribe() */
  GError *error;            /* set when the transcription failed */
} RefTranscript;

/* The texts of a fixture's "segments" array, concatenated (g_free). */
char *ref_joined_text (JsonArray *segments);
/* The texts of the engine's segments (WhisperSegment *), concatenated (g_free). */
char *ref_joined_segments (GPtrArray *segments);

RefTranscript *ref_transcribe (WhisperEngine *engine, const float *pcm, gsize n_samples);
/* The same with faster-whisper's word_timestamps (which moves its seeking,
 * and so can change the text) on or off. */
RefTranscript *ref_transcribe_words (WhisperEngine *engine, const float *pcm, gsize n_samples,
                                     gboolean word_timestamps);
void ref_transcript_free (RefTranscript *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (RefTranscript, ref_transcript_free)

/* Index of the first position where the two sequences differ (the shorter
 * length when one is a prefix of the other); -1 when they are identical. */
gssize ref_first_difference (const gint32 *a, gsize n_a, const gint32 *b, gsize n_b);

/* "id 'piece'" for each token of ids[from, to) (g_free). */
char *ref_describe_tokens (const WhisperEngine *engine, const gint32 *ids, gsize n,
                           gssize from, gssize to);

G_END_DECLS
