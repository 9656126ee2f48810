/* gstwhisperenums.c: GTypes of whispersink's enumerated properties. */
#include "settings/gstwhisperenums.h"

/* Registers enum `name` with `values` once, thread-safe; its GType. */
static GType
enum_type_once (GType *type, const gchar *name, const GEnumValue *values)
{
  if (g_once_init_enter (type)) {
    GType t = g_enum_register_static (name, values);
    g_once_init_leave (type, t);
  }
  return *type;
}

GType
gst_whisper_device_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_DEVICE_AUTO, "CUDA when a GPU and the CUDA module are available, else CPU",
        "auto"},
    {GST_WHISPER_DEVICE_CPU, "CPU (BLAS)", "cpu"},
    {GST_WHISPER_DEVICE_CUDA, "NVIDIA GPU (CUDA); fails when none is available", "cuda"},
    {GST_WHISPER_DEVICE_REMOTE, "An OpenAI-compatible transcription server (server-url)",
        "remote"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperDevice", values);
}

GType
gst_whisper_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_PRECISION_EXACT,
        "float32 products: faster-whisper float32's tokens", "exact"},
    {GST_WHISPER_PRECISION_FAST,
        "the fastest this CPU has: bfloat16 where oneDNN has it, else int8", "fast"},
    {GST_WHISPER_PRECISION_INT8,
        "int8 weights (quantized at load) and products, as faster-whisper's int8", "int8"},
    {GST_WHISPER_PRECISION_BFLOAT16,
        "encoder and prompt passes in bfloat16 on the CPU (AMX or AVX512-BF16, oneDNN); "
        "with AMX, decode steps too",
        "bfloat16"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperPrecision", values);
}

GType
gst_whisper_output_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_OUTPUT_SEGMENTS,
        "One buffer per segment, pushed when the segment is complete (subtitles)",
        "segments"},
    {GST_WHISPER_OUTPUT_WORDS,
        "One buffer per word, pushed as soon as the decode step that completes it returns "
          "(live captions)", "words"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperOutputMode", values);
}

GType
gst_whisper_offline_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_OFFLINE_EXACT,
        "Buffer the stream and transcribe it whole at EOS (or any drain): text identical "
          "to the engine's whole-file transcription", "exact"},
    {GST_WHISPER_OFFLINE_WINDOWED,
        "Transcribe each 30-s window as soon as it is buffered: early output and bounded "
          "memory, text can differ slightly at window edges", "windowed"},
    {GST_WHISPER_OFFLINE_BATCHED,
        "Buffer the stream; at EOS (or any drain) cut it where the voice activity detector "
          "finds no speech and decode batch-size pieces of up to 30 s at once: faster on "
          "long files, no piece conditioned on the text before it", "batched"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperOfflineMode", values);
}

GType
gst_whisper_live_commit_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_LIVE_COMMIT_AGREEMENT,
        "Commit a word once two consecutive decodes agree on it (LocalAgreement-2)",
        "agreement"},
    {GST_WHISPER_LIVE_COMMIT_DEADLINE,
        "Commit each word at the last decode that still meets latency + lateness: more "
          "audio after it, more decoding work", "deadline"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperLiveCommit", values);
}

GType
gst_whisper_live_encoder_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_LIVE_ENCODER_FULL,
        "Encode each call's audio in the model's full window (30 s, as it was trained)",
          "full"},
    {GST_WHISPER_LIVE_ENCODER_BUFFERED,
        "Encode a window as long as the audio buffered plus a second (at least 7.5 s): "
          "a cheaper encoder, more streams per machine", "buffered"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperLiveEncoder", values);
}

GType
gst_whisper_overload_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_WHISPER_OVERLOAD_DEGRADE,
        "Spend less per call before dropping audio: greedy search, the buffered encoder, "
          "a shorter live context, no translation, undone when calls are quick again",
          "degrade"},
    {GST_WHISPER_OVERLOAD_DROP, "Drop the oldest audio at once, the settings as they are",
          "drop"},
    {0, NULL, NULL},
  };

  return enum_type_once (&type, "GstWhisperOverloadMode", values);
}
