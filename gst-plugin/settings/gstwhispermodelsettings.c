/* gstwhispermodelsettings.c: whispersink's model settings (see
 * gstwhispermodelsettings.h). */
#include "settings/gstwhispermodelsettings.h"

enum {
  P_MODEL,
  P_DEVICE,
  P_PRECISION,
  P_THREADS,
  P_ENGINE_GROUP,
  P_ENCODER_CONTEXT,
  P_MAX_ENCODER_LENGTH,
  N_PROPS
};

#include <string.h>

#define DEFAULT_DEVICE GST_WHISPER_DEVICE_AUTO
#define DEFAULT_PRECISION GST_WHISPER_PRECISION_EXACT
#define DEFAULT_THREADS 0
#define DEFAULT_MODEL NULL
#define DEFAULT_ENCODER_CONTEXT 0

void
gst_whisper_model_settings_init (GstWhisperModelSettings *s)
{
  memset (s, 0, sizeof *s);
  s->model = NULL;
  s->device = DEFAULT_DEVICE;
  s->precision = DEFAULT_PRECISION;
  s->threads = DEFAULT_THREADS;
  s->engine_group = NULL;
  s->max_encoder_length = DEFAULT_ENCODER_CONTEXT;
}

void
gst_whisper_model_settings_clear (GstWhisperModelSettings *s)
{
  g_clear_pointer (&s->model, g_free);
  g_clear_pointer (&s->engine_group, g_free);
}

void
gst_whisper_model_settings_copy (GstWhisperModelSettings *dst, const GstWhisperModelSettings *src)
{
  *dst = *src;
  dst->model = g_strdup (src->model);
  dst->engine_group = g_strdup (src->engine_group);
}

gboolean
gst_whisper_model_settings_too_short (const GstWhisperModelSettings *s)
{
  return s->max_encoder_length > 0
      && s->max_encoder_length < GST_WHISPER_USEFUL_MAX_ENCODER_LENGTH;
}

guint
gst_whisper_model_settings_install (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  g_object_class_install_property (klass, first + P_MODEL,
      g_param_spec_string ("model", "Model",
          "Whisper model: a CTranslate2 directory (model.bin, config.json, vocabulary) "
          "or a whisper.cpp ggml file. Unset: the default model ($WHISPER_MODEL, else "
          "$XDG_DATA_HOME/gst-whisper/models/tiny.en); reading it then gives that path",
          DEFAULT_MODEL, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, first + P_DEVICE,
      g_param_spec_enum ("device", "Device", "Where inference runs",
          GST_TYPE_WHISPER_DEVICE, DEFAULT_DEVICE, rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:precision:
   *
   * How the CPU engine computes its matrix products. `exact` (the default)
   * computes in float32 and gives faster-whisper float32's tokens. `int8`
   * quantizes the weights to int8 at load and each linear's input rows per
   * call, with CTranslate2's rule (faster-whisper's compute_type "int8"):
   * any CPU, AVX2 and VNNI kernels where present. `fast` is the fastest the
   * CPU has: `bfloat16` where oneDNN has it, else `int8`; it never fails on
   * x86-64. `bfloat16`
   * runs the encoder and the prompt passes in bfloat16 through oneDNN (AMX
   * tiles on Intel Sapphire Rapids and later, AVX512-BF16 on AMD Zen 4:
   * 2 to 4 times faster encoders), with float32 sums. On CPUs with AMX the
   * decode steps' linears run on the tiles too, with bfloat16 weights (up
   * to 64 rows a pass: the beams of many streams sharing the engine);
   * elsewhere decode steps stay as in `exact`. The text can differ from
   * `exact`'s in places (docs/models.md, "Precision"). `bfloat16` needs a build with oneDNN and a CPU with AVX-512: going
   * to READY fails with an error saying which is missing. Elements share an
   * engine only with elements of the same precision. The CUDA engine has one
   * precision and ignores this.
   */
  g_object_class_install_property (klass, first + P_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "CPU matrix products: exact (float32), int8, bfloat16 (oneDNN) or fast "
          "(bfloat16 where the CPU has it, else int8)",
          GST_TYPE_WHISPER_PRECISION, DEFAULT_PRECISION, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, first + P_THREADS,
      g_param_spec_int ("threads", "Threads",
          "CPU threads for inference (0 = one per core)", 0, 1024, DEFAULT_THREADS,
          rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:engine-group:
   *
   * Elements of one process that load the same model (the same file,
   * however its path is spelled) on the same device with the same
   * `threads` and `encoder-context` share one engine: the weights are in
   * memory once and one thread pool, sized by `threads`, runs the
   * inference of all of them, one decode step or encoder window at a time
   * (shared/gstwhisperregistries.c). What stays per element is its stream: KV
   * caches, prompt, language and every decoding option. The engine is
   * freed when the last element sharing it goes to NULL.
   *
   * Unset (the default) or empty, an element shares with every other such
   * element. Set to a name, it shares only with elements of the same name:
   * a name of its own gives an element an engine of its own (its own
   * weights and thread pool), as every element had before engines were
   * shared.
   */
  g_object_class_install_property (klass, first + P_ENGINE_GROUP,
      g_param_spec_string ("engine-group", "Engine group",
          "Elements with the same model, device, threads, encoder-context and engine group "
          "share one engine (weights and thread pool). Unset: the process's shared group; "
          "a name of its own gives this element its own engine",
          NULL, rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:encoder-context:
   *
   * Encoder frames per window: 0 (the default) is the model's own, 1500
   * frames = 30 s (every Whisper model so far); each frame is 20 ms of
   * audio. A shorter window runs a cheaper encoder, but the models were
   * trained on 30-s windows only: below 250 frames the transcript repeats
   * words or loops and is mostly wrong, and below 50 frames each call
   * covers at most 1 s of audio and runs far slower than real time; from
   * 375 frames on the transcript is the one of 1500 frames
   * (tests/element/live-wer.sh encoder-context measures it, docs/benchmarks.md
   * has the figures). Below 250 frames a warning is posted (details reason=encoder-context-too-short) when the
   * property is set, or when the engine is loaded with it if the element
   * had no bus yet.
   */
  g_object_class_install_property (klass, first + P_ENCODER_CONTEXT,
      g_param_spec_int ("encoder-context", "Encoder context",
          "Encoder frames per window (0 = the model's, 1500 = 30 s; a frame is 20 ms). "
          "Shorter is faster; below 250 the transcript loops or is mostly wrong, "
          "with a warning", 0, 1500, DEFAULT_ENCODER_CONTEXT,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, first + P_MAX_ENCODER_LENGTH,
      g_param_spec_int ("max-encoder-length", "Max encoder length",
          "Encoder frames per window the engine resolved when it was created "
          "(0 before READY)", 0, G_MAXINT, 0, ro));
  return first + N_PROPS;
}

gboolean
gst_whisper_model_settings_loads_engine (guint prop_id, guint first)
{
  return prop_id >= first && prop_id < first + P_MAX_ENCODER_LENGTH;
}

gboolean
gst_whisper_model_settings_is_max_encoder_length (guint prop_id, guint first)
{
  return prop_id == first + P_ENCODER_CONTEXT;
}

gboolean
gst_whisper_model_settings_set (GstWhisperModelSettings *s, guint prop_id, guint first, const GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_MODEL:
      g_free (s->model);
      s->model = g_value_dup_string (value);
      break;
    case P_DEVICE:
      s->device = g_value_get_enum (value);
      break;
    case P_PRECISION:
      s->precision = g_value_get_enum (value);
      break;
    case P_THREADS:
      s->threads = g_value_get_int (value);
      break;
    case P_ENGINE_GROUP:
      g_free (s->engine_group);
      s->engine_group = g_value_dup_string (value);
      break;
    case P_ENCODER_CONTEXT:
      s->max_encoder_length = g_value_get_int (value);
      break;
    default:
      break;
  }
  return TRUE;
}

gboolean
gst_whisper_model_settings_get (const GstWhisperModelSettings *s, guint prop_id, guint first, GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_MODEL:               /* unset: the default model's path */
      if (s->model)
        g_value_set_string (value, s->model);
      else
        g_value_take_string (value, whisper_engine_default_model_path ());
      break;
    case P_DEVICE:
      g_value_set_enum (value, s->device);
      break;
    case P_PRECISION:
      g_value_set_enum (value, s->precision);
      break;
    case P_THREADS:
      g_value_set_int (value, s->threads);
      break;
    case P_ENGINE_GROUP:
      g_value_set_string (value, s->engine_group);
      break;
    case P_ENCODER_CONTEXT:
      g_value_set_int (value, s->max_encoder_length);
      break;
    default:
      return FALSE;              /* read-only: the element answers */
  }
  return TRUE;
}

void
gst_whisper_model_settings_fill (const GstWhisperModelSettings *s, WhisperEngineOptions *o,
    gchar **model_path)
{
  *model_path = s->model ? g_strdup (s->model) : whisper_engine_default_model_path ();
  whisper_engine_options_init (o);
  o->model_path = *model_path;
  o->device = (WhisperDevice) s->device;
  o->precision = (WhisperPrecision) s->precision;
  o->n_threads = s->threads;
  o->max_encoder_length = s->max_encoder_length;
}
