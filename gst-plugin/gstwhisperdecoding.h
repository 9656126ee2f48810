/* gstwhisperdecoding.h: whispersink's decoding properties (task, search,
 * temperature fallback, prompts, language detection): their GParamSpecs,
 * their values, and the WhisperDecodeOptions they make for one call of the
 * engine, files and live input alike. The element keeps one
 * GstWhisperDecoding under its object lock and hands its property ids from
 * `first_prop_id` on to these functions. */
#pragma once

#include <gst/gst.h>
#include <whisper/whisper.h>

G_BEGIN_DECLS

#define GST_TYPE_WHISPER_TASK (gst_whisper_task_get_type ())
GType gst_whisper_task_get_type (void);

typedef struct {
  WhisperTask task;
  gint beam_size;              /* 0: 5 for files, 1 live */
  gint best_of;
  gdouble patience, length_penalty, repetition_penalty;
  gint no_repeat_ngram_size;
  gchar *temperatures;         /* NULL: the fallback list for files, "0" live */
  gdouble compression_ratio_threshold, log_prob_threshold, prompt_reset_on_temperature;
  gchar *initial_prompt, *hotwords, *prefix;
  gboolean suppress_blank;
  gchar *suppress_tokens;      /* "-1,id,..." */
  gboolean without_timestamps;
  gdouble max_initial_timestamp;
  gint max_new_tokens;
  gboolean language_per_window;
  gdouble language_detection_threshold;
  gint language_detection_segments;
  guint seed;
} GstWhisperDecoding;

void gst_whisper_decoding_init (GstWhisperDecoding *d);
void gst_whisper_decoding_clear (GstWhisperDecoding *d);

/* Installs the properties with ids first_prop_id.. and returns the id
 * after the last. */
guint gst_whisper_decoding_install_properties (GObjectClass *klass, guint first_prop_id);
/* FALSE when prop_id is not one of them. A bad string value (a temperature
 * list or a token list that does not parse) keeps the old value and
 * returns the reason in *problem (free it). Object lock held. */
gboolean gst_whisper_decoding_set_property (GstWhisperDecoding *d, guint prop_id,
    guint first_prop_id, const GValue *value, gchar **problem);
gboolean gst_whisper_decoding_get_property (const GstWhisperDecoding *d, guint prop_id,
    guint first_prop_id, GValue *value);

/* Fills the search, prompt and language fields of `o` (the rest is left as
 * it is): beam 5 and the fallback list for files, greedy at temperature 0
 * live, unless set. Strings and `suppress` (which holds the token ids) are
 * borrowed: keep them until whisper_stream_set_options() copied them.
 * Object lock held. */
void gst_whisper_decoding_fill (const GstWhisperDecoding *d, gboolean live,
    WhisperDecodeOptions *o, GArray *suppress);

G_END_DECLS
