/* wt-util.h: helpers shared by the whispersink tests: shared speech clips,
 * the engine's own transcript of them, feeding PCM into a harness, and
 * reading output back. */
#pragma once

#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <whisper/whisper.h>

G_BEGIN_DECLS

#define WT_CAPS_F32 "audio/x-raw, format=F32LE, rate=16000, channels=1, layout=interleaved"
#define WT_CAPS_S16 "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved"

/* $WHISPER_SHARED_DATA/<name> (or ../shared/data next to the sources). */
gchar *wt_data_path (const gchar *name);
/* jfk.wav as the engine reads it (16 kHz mono float). */
float *wt_load_jfk (gsize *n_samples);

typedef struct {
  GstClockTime start, end;   /* relative to the start of the audio */
  gchar *text;               /* stripped */
} WtSegment;

/* The element tests check the element's plumbing against the engine's
 * greedy decoding (one temperature: words leave as their decode step
 * completes). whispersink decodes files with beam 5 and the temperature
 * fallback by default, so the elements the tests make are set to greedy
 * with these properties (wt_harness_new() sets them itself), except where a
 * test checks the default. */
#define WT_GREEDY "beam-size=1 temperatures=0"

/* The engine's own whole-input transcription of `pcm` on a fresh stream of
 * the default model (greedy, the engine's default options): segments (non-empty ones, times rounded to samples as
 * whispersink does) and the joined text. */
GArray *wt_engine_segments (const float *pcm, gsize n);
/* The same, and the number of decoder forward passes (decode steps) that
 * transcription ran (whisper_stream_get_stats ()). */
GArray *wt_engine_segments_full (const float *pcm, gsize n, guint64 *decode_steps);
/* The same with faster-whisper transcribe()'s search (beam 5, the
 * temperature fallback): what whispersink decodes files with by default. */
GArray *wt_engine_segments_search (const float *pcm, gsize n);
gchar *wt_join_segments (GArray *segments);
void wt_segments_free (GArray *segments);

/* Pushes `n` samples as F32LE buffers of `chunk` samples starting at `pts`;
 * the first buffer gets DISCONT when `discont`. Returns the first flow error. */
GstFlowReturn wt_push_pcm (GstHarness *h, const float *pcm, gsize n, GstClockTime pts,
    gsize chunk, gboolean discont);

/* Every buffer until EOS (events are left in the harness); each item's
 * text is in `texts` when not NULL. */
GPtrArray *wt_pull_until_eos (GstHarness *h, GPtrArray *texts);
gchar *wt_buffer_text (GstBuffer *buf);
/* Every buffer until EOS, their texts joined with single spaces. */
gchar *wt_pull_joined_text (GstHarness *h);

/* whispersink in a harness with F32 mono caps, live or not, with the
 * properties of `props` ("name=value name=value", may be NULL) set. */
GstHarness *wt_harness_new (gboolean live, const gchar *props);
/* A guint64 field of the element's stats property (fails the test when
 * missing). */
guint64 wt_stats_u64 (GstElement *element, const gchar *field);
/* Word error rate of `hypothesis` against `reference`: word-level
 * Levenshtein distance / reference words, after lowercasing and keeping
 * only letters, digits and apostrophes (tools/benchmark.py's wer()). */
double wt_wer (const gchar *reference, const gchar *hypothesis);

/* The element messages named whisper-text on `bus`, in order; every
 * element message is popped, the others are dropped. */
GPtrArray *wt_pop_text_messages (GstBus *bus);

/* Pushes a custom downstream event named `name` and pulls events until it
 * comes out of the element, so that everything the element made of the
 * data pushed before it is downstream. FALSE when it does not come out
 * (gst_harness_pull_event () gives up after 60 s). */
gboolean wt_barrier (GstHarness *h, const gchar *name);

/* The main () of a test that needs the default model and jfk.wav: 77
 * (skipped) without them, else the suite's result. */
int wt_run_suite_with_model (int argc, char **argv, Suite *(*make_suite) (void),
    const gchar *name, const gchar *file);

/* Resident set size of this process in KiB (after trimming the heap). */
glong wt_rss_kib (void);

G_END_DECLS
