/* gstwhisperenums.h: enumerations used by whispersink's properties. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* Mirrors WhisperDevice (engine/whisper-engine.h) value for value; REMOTE
 * has no engine counterpart (a server instead, gstwhisperremote.h). */
typedef enum {
  GST_WHISPER_DEVICE_AUTO,
  GST_WHISPER_DEVICE_CPU,
  GST_WHISPER_DEVICE_CUDA,
  GST_WHISPER_DEVICE_REMOTE = 100,
} GstWhisperDevice;

/* Mirrors WhisperPrecision (engine/whisper-engine.h) value for value. */
typedef enum {
  GST_WHISPER_PRECISION_EXACT,
  GST_WHISPER_PRECISION_FAST,
  GST_WHISPER_PRECISION_INT8,
  GST_WHISPER_PRECISION_BFLOAT16,
} GstWhisperPrecision;

typedef enum {
  GST_WHISPER_OUTPUT_SEGMENTS,
  GST_WHISPER_OUTPUT_WORDS,
} GstWhisperOutputMode;

/* How audio from a non-live upstream is cut into engine calls. */
typedef enum {
  GST_WHISPER_OFFLINE_EXACT,     /* one call per drain: the engine's own whole-stream result */
  GST_WHISPER_OFFLINE_WINDOWED,  /* one 30-s window per call as soon as it is buffered */
  GST_WHISPER_OFFLINE_BATCHED,   /* at the drain, cut at non-speech, pieces decoded at once */
} GstWhisperOfflineMode;

/* When a live word is committed (gstwhisperlive.c). */
typedef enum {
  GST_WHISPER_LIVE_COMMIT_AGREEMENT,  /* once two decodes agree (LocalAgreement-2) */
  GST_WHISPER_LIVE_COMMIT_DEADLINE,   /* at the last decode that still meets the budget */
} GstWhisperLiveCommit;

/* The encoder window of a live call (gstwhispertask.c). */
typedef enum {
  GST_WHISPER_LIVE_ENCODER_FULL,      /* the model's window (30 s), as trained */
  GST_WHISPER_LIVE_ENCODER_BUFFERED,  /* the audio buffered and a second, at least 7.5 s */
} GstWhisperLiveEncoder;

/* What live input gives up when inference falls behind
 * (task/gstwhisperoverload.c). */
typedef enum {
  GST_WHISPER_OVERLOAD_DEGRADE,  /* cheaper calls first, step by step; then drop audio */
  GST_WHISPER_OVERLOAD_DROP,     /* drop audio at once, the settings as they are */
} GstWhisperOverloadMode;

#define GST_TYPE_WHISPER_DEVICE (gst_whisper_device_get_type ())
#define GST_TYPE_WHISPER_PRECISION (gst_whisper_precision_get_type ())
#define GST_TYPE_WHISPER_OUTPUT_MODE (gst_whisper_output_mode_get_type ())
#define GST_TYPE_WHISPER_OFFLINE_MODE (gst_whisper_offline_mode_get_type ())
#define GST_TYPE_WHISPER_LIVE_COMMIT (gst_whisper_live_commit_get_type ())
#define GST_TYPE_WHISPER_LIVE_ENCODER (gst_whisper_live_encoder_get_type ())
#define GST_TYPE_WHISPER_OVERLOAD_MODE (gst_whisper_overload_mode_get_type ())

GType gst_whisper_device_get_type (void);
GType gst_whisper_precision_get_type (void);
GType gst_whisper_output_mode_get_type (void);
GType gst_whisper_offline_mode_get_type (void);
GType gst_whisper_live_commit_get_type (void);
GType gst_whisper_live_encoder_get_type (void);
GType gst_whisper_overload_mode_get_type (void);

G_END_DECLS
