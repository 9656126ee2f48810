/* model-load.c: finds a model's format from its path (a CTranslate2
 * directory or a whisper.cpp ggml file) and calls that format's loader. */
#include "whisper-model.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#define GGML_FILE_MAGIC 0x67676d6cu /* "lmgg" on disk */

/* Format detection. */

static WhisperModel *
load_directory (const char *path, GError **error)
{
  g_autofree char *model_bin = g_build_filename (path, "model.bin", NULL);
  if (g_file_test (model_bin, G_FILE_TEST_EXISTS))
    return whisper_model_load_ct2 (path, error);

  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
               "%s: is a directory without model.bin (expected a CTranslate2 "
               "model directory or a whisper.cpp ggml file)",
               path);
  return NULL;
}

static WhisperModel *
load_regular_file (const char *path, GError **error)
{
  FILE *file = g_fopen (path, "rb");
  if (file == NULL) {
    int saved_errno = errno;
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: cannot open the model: %s", path, g_strerror (saved_errno));
    return NULL;
  }
  guint8 head[4] = { 0 };
  size_t n = fread (head, 1, sizeof head, file);
  fclose (file);

  guint32 magic = (guint32) head[0] | (guint32) head[1] << 8 |
                  (guint32) head[2] << 16 | (guint32) head[3] << 24;
  if (n == sizeof head && magic == GGML_FILE_MAGIC)
    return whisper_model_load_ggml (path, error);

  g_autofree char *basename = g_path_get_basename (path);
  if (g_strcmp0 (basename, "model.bin") == 0) {
    /* The model.bin of a CTranslate2 directory: load the directory. */
    g_autofree char *dir = g_path_get_dirname (path);
    return whisper_model_load_ct2 (dir, error);
  }

  if (n == 0) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the file is empty (expected a whisper.cpp ggml file or a "
                 "CTranslate2 model directory)", path);
    return NULL;
  }
  if (n < sizeof head) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the file has only %zu bytes (expected a whisper.cpp ggml "
                 "file or a CTranslate2 model directory)", path, n);
    return NULL;
  }

  if (memcmp (head, "GGUF", 4) == 0) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: GGUF files are not supported; use a whisper.cpp ggml .bin "
                 "file or a CTranslate2 model directory", path);
    return NULL;
  }

  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: not a Whisper model: the file starts with bytes "
               "%02x %02x %02x %02x, not the ggml magic 6c 6d 67 67 (for a "
               "CTranslate2 model give its directory)",
               path, head[0], head[1], head[2], head[3]);
  return NULL;
}

WhisperModel *
whisper_model_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  GStatBuf st;
  if (g_stat (path, &st) != 0) {
    int saved_errno = errno;
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: cannot open the model: %s", path, g_strerror (saved_errno));
    return NULL;
  }

  if (S_ISDIR (st.st_mode))
    return load_directory (path, error);
  if (S_ISREG (st.st_mode))
    return load_regular_file (path, error);

  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: not a regular file or directory", path);
  return NULL;
}
