/* gstwhispersettings.c: whispersink's settings, group by group (see
 * gstwhispersettings.h). Each group installs its properties from the id
 * after the previous group's; these ids are the same for every instance,
 * so they are kept here once, at class initialisation. */
#include "settings/gstwhispersettings.h"

enum {
  GROUP_MODEL,
  GROUP_DECODING,
  GROUP_LIVE,
  GROUP_VAD,
  GROUP_INPUT,
  GROUP_OUTPUT,
  GROUP_REMOTE,
  N_GROUPS
};

/* first[g]: the first property id of group g; first[N_GROUPS]: the id
 * after the last. */
static guint first[N_GROUPS + 1];

void
gst_whisper_settings_install (GObjectClass *klass, guint first_prop_id)
{
  first[GROUP_MODEL] = first_prop_id;
  first[GROUP_DECODING] = gst_whisper_model_settings_install (klass, first[GROUP_MODEL]);
  first[GROUP_LIVE] = gst_whisper_decoding_install_properties (klass, first[GROUP_DECODING]);
  first[GROUP_VAD] = gst_whisper_live_settings_install (klass, first[GROUP_LIVE]);
  first[GROUP_INPUT] = gst_whisper_vad_settings_install (klass, first[GROUP_VAD]);
  first[GROUP_OUTPUT] = gst_whisper_input_settings_install (klass, first[GROUP_INPUT]);
  first[GROUP_REMOTE] = gst_whisper_output_settings_install (klass, first[GROUP_OUTPUT]);
  first[N_GROUPS] = gst_whisper_remote_settings_install (klass, first[GROUP_REMOTE]);
}

void
gst_whisper_settings_init (GstWhisperSettings *s)
{
  gst_whisper_model_settings_init (&s->model);
  gst_whisper_decoding_init (&s->decoding);
  gst_whisper_live_settings_init (&s->live);
  gst_whisper_vad_settings_init (&s->vad);
  gst_whisper_input_settings_init (&s->input);
  gst_whisper_output_settings_init (&s->output);
  gst_whisper_remote_settings_init (&s->remote);
}

void
gst_whisper_settings_clear (GstWhisperSettings *s)
{
  gst_whisper_model_settings_clear (&s->model);
  gst_whisper_decoding_clear (&s->decoding);
  gst_whisper_vad_settings_clear (&s->vad);
  gst_whisper_remote_settings_clear (&s->remote);
}

void
gst_whisper_settings_copy (GstWhisperSettings *dst, const GstWhisperSettings *src)
{
  gst_whisper_model_settings_copy (&dst->model, &src->model);
  gst_whisper_decoding_copy (&dst->decoding, &src->decoding);
  dst->live = src->live;
  gst_whisper_vad_settings_copy (&dst->vad, &src->vad);
  dst->input = src->input;
  dst->output = src->output;
  gst_whisper_remote_settings_copy (&dst->remote, &src->remote);
}

static int
group_of (guint prop_id)
{
  int g;

  for (g = 0; g < N_GROUPS; g++)
    if (prop_id >= first[g] && prop_id < first[g + 1])
      return g;
  return N_GROUPS;
}

GstWhisperSettingLoads
gst_whisper_settings_loads (guint prop_id)
{
  switch (group_of (prop_id)) {
    case GROUP_MODEL:
      return gst_whisper_model_settings_loads_engine (prop_id, first[GROUP_MODEL])
          ? GST_WHISPER_SETTING_LOADS_ENGINE : GST_WHISPER_SETTING_LOADS_NOTHING;
    case GROUP_VAD:
      return gst_whisper_vad_settings_loads_engine (prop_id, first[GROUP_VAD])
          ? GST_WHISPER_SETTING_LOADS_ENGINE : GST_WHISPER_SETTING_LOADS_NOTHING;
    case GROUP_REMOTE:
      return GST_WHISPER_SETTING_LOADS_REMOTE;
    default:
      return GST_WHISPER_SETTING_LOADS_NOTHING;
  }
}

GstWhisperSettingChange
gst_whisper_settings_set_property (GstWhisperSettings *s, guint prop_id, const GValue *value,
    WhisperEngine *engine, gchar **problem)
{
  const int g = group_of (prop_id);
  GstWhisperSettingChange change = GST_WHISPER_SETTING_SET;

  *problem = NULL;
  switch (g) {
    case GROUP_MODEL:
      gst_whisper_model_settings_set (&s->model, prop_id, first[g], value);
      if (gst_whisper_model_settings_is_max_encoder_length (prop_id, first[g])) {
        change |= GST_WHISPER_SETTING_MAX_ENCODER_LENGTH;
        if (gst_whisper_model_settings_too_short (&s->model))
          change |= GST_WHISPER_SETTING_TOO_SMALL;
      }
      break;
    case GROUP_DECODING:
      gst_whisper_decoding_set_property (&s->decoding, prop_id, first[g], value, engine,
          problem);
      break;
    case GROUP_LIVE:
      gst_whisper_live_settings_set (&s->live, prop_id, first[g], value);
      if (gst_whisper_live_settings_is_latency (prop_id, first[g])) {
        change |= GST_WHISPER_SETTING_LATENCY;
        if (gst_whisper_live_settings_too_short (&s->live))
          change |= GST_WHISPER_SETTING_TOO_SMALL;
      }
      break;
    case GROUP_VAD:
      gst_whisper_vad_settings_set (&s->vad, prop_id, first[g], value);
      break;
    case GROUP_INPUT:
      gst_whisper_input_settings_set (&s->input, prop_id, first[g], value);
      break;
    case GROUP_OUTPUT:
      gst_whisper_output_settings_set (&s->output, prop_id, first[g], value);
      break;
    case GROUP_REMOTE:
      gst_whisper_remote_settings_set (&s->remote, prop_id, first[g], value);
      break;
    default:
      return GST_WHISPER_SETTING_UNKNOWN;
  }
  if (*problem)
    change |= GST_WHISPER_SETTING_REFUSED;
  return change;
}

gboolean
gst_whisper_settings_get_property (const GstWhisperSettings *s, guint prop_id, GValue *value)
{
  const int g = group_of (prop_id);

  switch (g) {
    case GROUP_MODEL:
      return gst_whisper_model_settings_get (&s->model, prop_id, first[g], value);
    case GROUP_DECODING:
      return gst_whisper_decoding_get_property (&s->decoding, prop_id, first[g], value);
    case GROUP_LIVE:
      return gst_whisper_live_settings_get (&s->live, prop_id, first[g], value);
    case GROUP_VAD:
      return gst_whisper_vad_settings_get (&s->vad, prop_id, first[g], value);
    case GROUP_INPUT:
      return gst_whisper_input_settings_get (&s->input, prop_id, first[g], value);
    case GROUP_OUTPUT:
      return gst_whisper_output_settings_get (&s->output, prop_id, first[g], value);
    case GROUP_REMOTE:
      return gst_whisper_remote_settings_get (&s->remote, prop_id, first[g], value);
    default:
      return FALSE;
  }
}
