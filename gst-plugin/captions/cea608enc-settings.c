/* cea608enc-settings.c: cea608enc's properties (cea608enc-settings.h). */
#include "cea608enc-settings.h"

#define DEFAULT_MODE GST_CEA608_ENC_MODE_AUTO
#define DEFAULT_CHANNEL GST_CEA608_ENC_CHANNEL_CC1
#define DEFAULT_ROLL_UP_ROWS 2
#define DEFAULT_POP_ON_ROWS 2
#define DEFAULT_MAX_DELAY_MS 3000
#define DEFAULT_ROLL_UP_TIMEOUT_MS 5000

GType
gst_cea608_enc_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_CEA608_ENC_MODE_AUTO, "Roll-up for live input, pop-on otherwise", "auto"},
    {GST_CEA608_ENC_MODE_POP_ON, "Pop-on: each caption shown whole at its start", "pop-on"},
    {GST_CEA608_ENC_MODE_ROLL_UP, "Roll-up: words shown as they come, rows scroll", "roll-up"},
    {GST_CEA608_ENC_MODE_PAINT_ON, "Paint-on: each caption painted from its start", "paint-on"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstCea608EncMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_cea608_enc_channel_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_CEA608_ENC_CHANNEL_CC1, "CC1 (field 1, data channel 1)", "cc1"},
    {GST_CEA608_ENC_CHANNEL_CC3, "CC3 (field 2, data channel 1)", "cc3"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstCea608EncChannel", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

void
cea608enc_settings_init (Cea608EncSettings *s)
{
  s->mode = DEFAULT_MODE;
  s->channel = DEFAULT_CHANNEL;
  s->roll_up_rows = DEFAULT_ROLL_UP_ROWS;
  s->pop_on_rows = DEFAULT_POP_ON_ROWS;
  s->max_delay_ms = DEFAULT_MAX_DELAY_MS;
  s->roll_up_timeout_ms = DEFAULT_ROLL_UP_TIMEOUT_MS;
  s->fps_n = 0;
  s->fps_d = 1;
  s->post_messages = FALSE;
}

void
cea608enc_settings_install (GObjectClass *klass)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  g_object_class_install_property (klass, CEA608ENC_PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Caption style: auto picks roll-up for live upstream (LATENCY query) and pop-on "
          "otherwise", gst_cea608_enc_mode_get_type (), DEFAULT_MODE, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_CHANNEL,
      g_param_spec_enum ("channel", "Channel",
          "Caption channel of the sink pad: cc1 (field 1) or cc3 (field 2, needs format=s334-1a); "
          "the sink_cc3 request pad adds CC3 beside CC1",
          gst_cea608_enc_channel_get_type (), DEFAULT_CHANNEL, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_ROLL_UP_ROWS,
      g_param_spec_uint ("roll-up-rows", "Roll-up rows", "Rows of the roll-up window (RU2, RU3, RU4)",
          2, 4, DEFAULT_ROLL_UP_ROWS, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_POP_ON_ROWS,
      g_param_spec_uint ("pop-on-rows", "Pop-on rows",
          "Rows of one pop-on caption; longer text becomes consecutive captions sharing its time",
          1, 4, DEFAULT_POP_ON_ROWS, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_MAX_DELAY,
      g_param_spec_uint ("max-delay", "Max delay",
          "Milliseconds text may be late for lack of channel bandwidth before its last words are "
          "left out (announced by a cea608enc-shortened element message); pop-on holds the "
          "output this much behind the input", 0, 60000, DEFAULT_MAX_DELAY_MS, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_ROLL_UP_TIMEOUT,
      g_param_spec_uint ("roll-up-timeout", "Roll-up timeout",
          "Milliseconds after the last roll-up text at which the rows are erased (EDM)",
          0, 600000, DEFAULT_ROLL_UP_TIMEOUT_MS, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_FRAMERATE,
      gst_param_spec_fraction ("framerate", "Frame rate",
          "Output frame rate (one byte pair per field per frame); 0/1: the one downstream "
          "wants, else 30000/1001", 0, 1, 120, 1, 0, 1, rw));
  g_object_class_install_property (klass, CEA608ENC_PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a cea608enc-caption element message when each text is on screen (pts, shown)",
          FALSE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
}

gboolean
cea608enc_settings_set (Cea608EncSettings *s, guint prop_id, const GValue *value)
{
  switch (prop_id) {
    case CEA608ENC_PROP_MODE:
      s->mode = g_value_get_enum (value);
      return TRUE;
    case CEA608ENC_PROP_CHANNEL:
      s->channel = g_value_get_enum (value);
      return TRUE;
    case CEA608ENC_PROP_ROLL_UP_ROWS:
      s->roll_up_rows = g_value_get_uint (value);
      return TRUE;
    case CEA608ENC_PROP_POP_ON_ROWS:
      s->pop_on_rows = g_value_get_uint (value);
      return TRUE;
    case CEA608ENC_PROP_MAX_DELAY:
      s->max_delay_ms = g_value_get_uint (value);
      return TRUE;
    case CEA608ENC_PROP_ROLL_UP_TIMEOUT:
      s->roll_up_timeout_ms = g_value_get_uint (value);
      return TRUE;
    case CEA608ENC_PROP_FRAMERATE:
      s->fps_n = gst_value_get_fraction_numerator (value);
      s->fps_d = gst_value_get_fraction_denominator (value);
      return TRUE;
    case CEA608ENC_PROP_POST_MESSAGES:
      s->post_messages = g_value_get_boolean (value);
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
cea608enc_settings_get (const Cea608EncSettings *s, guint prop_id, GValue *value)
{
  switch (prop_id) {
    case CEA608ENC_PROP_MODE:
      g_value_set_enum (value, s->mode);
      return TRUE;
    case CEA608ENC_PROP_CHANNEL:
      g_value_set_enum (value, s->channel);
      return TRUE;
    case CEA608ENC_PROP_ROLL_UP_ROWS:
      g_value_set_uint (value, s->roll_up_rows);
      return TRUE;
    case CEA608ENC_PROP_POP_ON_ROWS:
      g_value_set_uint (value, s->pop_on_rows);
      return TRUE;
    case CEA608ENC_PROP_MAX_DELAY:
      g_value_set_uint (value, s->max_delay_ms);
      return TRUE;
    case CEA608ENC_PROP_ROLL_UP_TIMEOUT:
      g_value_set_uint (value, s->roll_up_timeout_ms);
      return TRUE;
    case CEA608ENC_PROP_FRAMERATE:
      gst_value_set_fraction (value, s->fps_n, s->fps_d);
      return TRUE;
    case CEA608ENC_PROP_POST_MESSAGES:
      g_value_set_boolean (value, s->post_messages);
      return TRUE;
    default:
      return FALSE;
  }
}
