/* cea608enc-settings.h: cea608enc's properties, a typed settings struct
 * kept apart from the runtime state (as gst-plugin/settings/ does for
 * whispersink): installed on the class, set and read under the element's
 * object lock, copied by the element where it needs them.
 */
#ifndef __CEA608ENC_SETTINGS_H__
#define __CEA608ENC_SETTINGS_H__

#include <gst/gst.h>
#include "gstcea608enc.h"

G_BEGIN_DECLS

#define CEA608ENC_DEFAULT_FPS_N 30000
#define CEA608ENC_DEFAULT_FPS_D 1001

typedef struct {
  GstCea608EncMode mode;
  GstCea608EncChannel channel;
  guint roll_up_rows;
  guint pop_on_rows;
  guint max_delay_ms;
  guint roll_up_timeout_ms;
  gint fps_n, fps_d;            /* 0/1: downstream's */
  gboolean post_messages;
} Cea608EncSettings;

/* The property ids; CEA608ENC_PROP_STATS is the element's own (read only). */
enum {
  CEA608ENC_PROP_0,
  CEA608ENC_PROP_MODE,
  CEA608ENC_PROP_CHANNEL,
  CEA608ENC_PROP_ROLL_UP_ROWS,
  CEA608ENC_PROP_POP_ON_ROWS,
  CEA608ENC_PROP_MAX_DELAY,
  CEA608ENC_PROP_ROLL_UP_TIMEOUT,
  CEA608ENC_PROP_FRAMERATE,
  CEA608ENC_PROP_POST_MESSAGES,
  CEA608ENC_PROP_STATS,
};

void cea608enc_settings_init (Cea608EncSettings *s);
/* Installs the properties of Cea608EncSettings (not stats). */
void cea608enc_settings_install (GObjectClass *klass);
/* FALSE for a property id that is not a setting. */
gboolean cea608enc_settings_set (Cea608EncSettings *s, guint prop_id, const GValue *value);
gboolean cea608enc_settings_get (const Cea608EncSettings *s, guint prop_id, GValue *value);

G_END_DECLS

#endif /* __CEA608ENC_SETTINGS_H__ */
