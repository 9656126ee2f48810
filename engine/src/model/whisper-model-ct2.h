/* whisper-model-ct2.h: the CTranslate2 loader's files (model/):
 * whisper-model-ct2-reader.c reads model.bin's variables,
 * whisper-model-ct2.c derives the hyper-parameters and walks the weights,
 * whisper-model-ct2-files.c reads the side files of the model directory. */
#pragma once

#include "whisper-model.h"

G_BEGIN_DECLS

#define CT2_BINARY_VERSION 6
#define CT2_WHISPER_SPEC "WhisperSpec"
#define CT2_WHISPER_MAX_REVISION 3
#define CT2_MAX_RANK 4
#define CT2_MAX_LAYERS 256
/* A Whisper model with 256 + 256 layers and int8 scales has about 17000
 * variables; more is a corrupt count, refused before allocating for it. */
#define CT2_MAX_VARIABLES 100000
#define CT2_INT16_DEFAULT_SCALE 1000.0f

typedef enum {
  CT2_DTYPE_FLOAT32 = 0,
  CT2_DTYPE_INT8 = 1,
  CT2_DTYPE_INT16 = 2,
  CT2_DTYPE_INT32 = 3,
  CT2_DTYPE_FLOAT16 = 4,
  CT2_DTYPE_BFLOAT16 = 5,
  CT2_DTYPE_COUNT
} Ct2DType;

typedef struct {
  const char *name; /* NUL-terminated, inside the mapped file */
  guint rank;
  guint32 dims[CT2_MAX_RANK];
  guint64 n_elements;
  Ct2DType dtype;
  const guint8 *data; /* n_bytes, inside the mapped file */
  gsize n_bytes;
  gsize offset; /* of data, for messages */
} Ct2Variable;

typedef struct {
  char *dir;
  char *file; /* dir/model.bin: named in every message about it */
  GMappedFile *mapped;
  const guint8 *bytes;
  gsize size;
  gsize pos;

  Ct2Variable *variables;
  guint n_variables;
  GHashTable *by_name; /* name -> Ct2Variable * */
  GHashTable *aliases; /* alias name -> target name */

  WhisperModel *model;
} Ct2Reader;

void whisper_ct2_reader_free (Ct2Reader *r);
gboolean whisper_ct2_read_header (Ct2Reader *r, GError **error);
gboolean whisper_ct2_read_variables (Ct2Reader *r, GError **error);
gboolean whisper_ct2_read_aliases (Ct2Reader *r, GError **error);
const Ct2Variable *whisper_ct2_find (Ct2Reader *r, const char *name);
const Ct2Variable *whisper_ct2_require (Ct2Reader *r, const char *name, GError **error);
gboolean whisper_ct2_read_int_scalar (Ct2Reader *r, const Ct2Variable *var, gint64 *value,
                                      GError **error);
gboolean whisper_ct2_optional_int (Ct2Reader *r, const char *name, gint64 *value, gboolean *present,
                                   GError **error);
gboolean whisper_ct2_tensor (Ct2Reader *r, const char *name, guint rank, const guint64 *dims,
                             int rows, int cols, WhisperTensor *t, GError **error);
gboolean whisper_ct2_linear (Ct2Reader *r, const char *prefix, int n_out, int n_in,
                             WhisperLinearWeights *linear, GError **error);
gboolean whisper_ct2_layer_norm (Ct2Reader *r, const char *prefix, int d,
                                 WhisperLayerNormWeights *ln, GError **error);
Ct2Reader *whisper_ct2_reader_open (const char *dir, GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Ct2Reader, whisper_ct2_reader_free)

/* whisper-model-ct2-files.c */

/* config.json (optional): suppress_ids, suppress_ids_begin and
 * alignment_heads into the model (its n_vocab set). */
gboolean whisper_model_ct2_read_config (WhisperModel *model, const char *dir, GError **error);
/* vocabulary.json, else vocabulary.txt: the model's tokens. */
gboolean whisper_model_ct2_read_vocabulary (WhisperModel *model, const char *dir, GError **error);

G_END_DECLS
