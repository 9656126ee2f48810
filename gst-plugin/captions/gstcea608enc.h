/* gstcea608enc.h: cea608enc, timed text to CEA-608 closed captions. */
#ifndef __GST_CEA608_ENC_H__
#define __GST_CEA608_ENC_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_CEA608_ENC (gst_cea608_enc_get_type ())
G_DECLARE_FINAL_TYPE (GstCea608Enc, gst_cea608_enc, GST, CEA608_ENC, GstElement)

typedef enum {
  GST_CEA608_ENC_MODE_AUTO,
  GST_CEA608_ENC_MODE_POP_ON,
  GST_CEA608_ENC_MODE_ROLL_UP,
  GST_CEA608_ENC_MODE_PAINT_ON,
} GstCea608EncMode;

typedef enum {
  GST_CEA608_ENC_CHANNEL_CC1 = 1,
  GST_CEA608_ENC_CHANNEL_CC3 = 3,
} GstCea608EncChannel;

GType gst_cea608_enc_mode_get_type (void);
GType gst_cea608_enc_channel_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (cea608enc);

G_END_DECLS

#endif /* __GST_CEA608_ENC_H__ */
