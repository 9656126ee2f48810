/* gstwhispersinkproperties.h: whispersink's GObject set_property and
 * get_property (gstwhispersinkproperties.c): the values go to and come from
 * the settings (settings/gstwhispersettings.h) under the object lock. */
#pragma once

#include "task/gstwhispersink-private.h"

G_BEGIN_DECLS

void gst_whisper_sink_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec);
void gst_whisper_sink_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec);

G_END_DECLS
