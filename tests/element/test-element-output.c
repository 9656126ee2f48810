/* test-element-output: the text whispersink's output stage
 * (gst-plugin/io/gstwhisperoutput.c) puts into the text buffer and into the
 * whisper-text bus message, without a model. A transcript with characters
 * that pango markup and GstStructure serialisation treat specially (& < >
 * quotes, backslash, non-ASCII) reaches both byte for byte: the buffers are
 * text/x-raw,format=utf8, which textoverlay escapes itself, and the bus
 * message holds the raw string (only its serialisation, what
 * `gst-launch-1.0 -m` prints, escapes it, and parses back to it). */
#include <gst/check/gstcheck.h>
#include <string.h>

#include "io/gstwhisperoutput.h"

#define TEXT "Tom & Jerry <i>said</i> \"hi\", it's 5 > 3 \\ caf\xc3\xa9"

GST_START_TEST (test_text_not_escaped)
{
  GstElement *element = gst_bin_new ("out");
  GstBus *bus = gst_bus_new ();
  GstWhisperOutQueue q;
  GstWhisperOutput o;
  GstWhisperItem item = { 0, };
  GstWhisperOutItem *out;
  GstMessage *m;
  const gchar *text;
  gchar *serialised;
  GstStructure *parsed;
  GstMapInfo map;
  gboolean buffer_seen = FALSE;

  gst_element_set_bus (element, bus);
  gst_whisper_out_queue_init (&q, element);
  gst_whisper_out_queue_set_flushing (&q, FALSE);
  gst_whisper_out_queue_set_limits (&q, FALSE, GST_CLOCK_TIME_NONE);
  gst_whisper_output_init (&o, element, &q);
  gst_whisper_output_start_at (&o, 0);

  item.text = TEXT;
  item.pts = 0;
  item.duration = GST_SECOND;
  item.final = TRUE;
  item.granularity = "segment";
  item.decode_step = -1;
  item.push = TRUE;
  fail_unless_equals_int (gst_whisper_output_push_item (&o, &item), GST_FLOW_OK);

  while (!buffer_seen && (out = gst_whisper_out_queue_pop (&q))) {
    if (out->type == GST_WHISPER_OUT_BUFFER) {
      GstBuffer *buf = GST_BUFFER (out->object);
      fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
      fail_unless_equals_int (map.size, strlen (TEXT));
      fail_unless (memcmp (map.data, TEXT, map.size) == 0);
      gst_buffer_unmap (buf, &map);
      buffer_seen = TRUE;
    }
    gst_whisper_out_item_free (out);
  }
  fail_unless (buffer_seen);

  m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT);
  fail_unless (m != NULL && gst_message_has_name (m, "whisper-text"));
  text = gst_structure_get_string (gst_message_get_structure (m), "text");
  fail_unless_equals_string (text, TEXT);
  serialised = gst_structure_to_string (gst_message_get_structure (m));
  GST_INFO ("%s", serialised);
  fail_unless (strstr (serialised, "Tom\\ \\&") != NULL, "%s", serialised);
  parsed = gst_structure_from_string (serialised, NULL);
  fail_unless (parsed != NULL);
  fail_unless_equals_string (gst_structure_get_string (parsed, "text"), TEXT);
  gst_structure_free (parsed);
  g_free (serialised);
  gst_message_unref (m);

  gst_whisper_out_queue_clear (&q);
  gst_element_set_bus (element, NULL);
  gst_object_unref (bus);
  gst_object_unref (element);
}
GST_END_TEST;

static Suite *
output_suite (void)
{
  Suite *s = suite_create ("whispersink-output");
  TCase *tc = tcase_create ("output");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_text_not_escaped);
  return s;
}

GST_CHECK_MAIN (output);
