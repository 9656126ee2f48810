/* programme.h: the real-speech programme of the live measurements
 * (live-commit.c, multi-stream.c): clips with published transcripts, each
 * followed by 1.0-2.0 s (seeded random) of white noise at about -70 dBFS,
 * looped to a length.
 *
 * The clips: jfk.wav and the left channel of stereo_diarization.wav from
 * the shared data directory, then the LibriVox clips of a directory's CMU
 * Sphinx `transcription` file (Debian's pocketsphinx-testdata), in id
 * order. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define PROGRAMME_RATE 16000
#define PROGRAMME_NOISE_SIGMA 3e-4   /* about -70 dBFS */

typedef struct {
  gchar *name;   /* short, for the tables */
  gchar *text;   /* published */
  float *pcm;
  gsize n;
} Clip;

/* One clip instance of the programme. */
typedef struct {
  guint clip;           /* index into Programme.clips */
  gsize start, end;     /* samples */
} ClipSpan;

typedef struct {
  GPtrArray *clips;     /* Clip */
  GArray *spans;        /* ClipSpan, in programme order */
  float *pcm;
  gsize n;
} Programme;

/* Appends the clips of `data_dir` (jfk.wav, stereo_diarization.wav) and
 * `librivox_dir` to `clips` (free function: programme_clip_free). */
gboolean programme_load_clips (GPtrArray *clips, const gchar *data_dir,
                               const gchar *librivox_dir, GError **error);
void programme_clip_free (gpointer clip);

/* A programme made beforehand (tests/live-eval/make-set.py): the samples of
 * `wav` and, from the manifest beside it (`wav` with .tsv for .wav), one
 * clip and one clip instance per line "name\tvoice\tstart\tend\ttext"
 * (samples, end exclusive). The clips hold no samples of their own. */
gboolean programme_load_made (Programme *p, const gchar *wav, GError **error);

/* Every clip in turn from clip `first_clip`, each followed by 1.0-2.0 s of
 * quiet white noise (seeded with `seed`), until the programme holds at
 * least `minutes` of audio. p->clips must be loaded. */
void programme_build (Programme *p, gdouble minutes, gint seed, guint first_clip);

/* The published text of the whole programme, clip after clip, from clip
 * instance `first_span` on and then those before it (0: in order). */
gchar *programme_text (const Programme *p, guint first_span);

/* The time of `n` samples, and a time in seconds. */
GstClockTime programme_sample_time (gsize n);
double programme_secs (GstClockTime t);

/* Frees the spans, the samples and the clips. */
void programme_clear (Programme *p);

G_END_DECLS
