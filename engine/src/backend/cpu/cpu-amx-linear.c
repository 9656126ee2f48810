/* cpu-amx-linear.c: a few rows times a packed bfloat16 weight on AMX tiles
 * (see cpu-amx-linear.h).
 *
 * Tiles (palette 1, every tile 16 rows of 64 bytes):
 *   tmm0..tmm3  C: 16 input rows x 16 output rows each, float32 sums of
 *               one group's four 16-row blocks
 *   tmm4        A: 16 input rows x 32 columns of x, bfloat16
 *   tmm5..tmm7  B: one 16-row block's 32 columns, in pairs
 * For each group of 64 output rows and each 16 input rows: C = 0, then for
 * every chunk of 32 columns in order, one A load and four B loads and
 * TDPBF16PS into the four C tiles; the C tiles go through a stack buffer
 * to y (only the real rows and columns).
 *
 * Linux hands out the 8 KB of tile state only to a process that asks
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA: the kernel's
 * Documentation/arch/x86/xstate.rst,
 * https://docs.kernel.org/arch/x86/xstate.html); the permission covers all
 * of its threads. */
#include "cpu-amx-linear.h"

#include "cpu-bf16-matmul.h"
#include "cpu-features.h"
#include "cpu-simd.h"

#include <string.h>

#define GROUP_ROWS WHISPER_CPU_AMX_GROUP_ROWS
#define BLOCK_ROWS 16                       /* output rows per B and C tile */
#define CHUNK_COLS 32                       /* bfloat16 columns per A and B tile */
#define TILE_ELEMENTS (16 * CHUNK_COLS)     /* bfloat16 values in one A or B tile */

#if defined(HAVE_X86) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static gboolean
amx_probe (void)
{
  if (!whisper_cpu_have_avx512 () || g_getenv ("WHISPER_CPU_NO_AMX"))
    return FALSE;
  unsigned int a, b, c, d;
  if (!__get_cpuid_count (7, 0, &a, &b, &c, &d))
    return FALSE;
  const gboolean amx_bf16 = (d >> 22) & 1u, amx_tile = (d >> 24) & 1u;
  if (!amx_bf16 || !amx_tile)
    return FALSE;
  /* fails where the kernel is older than 5.16 or the OS keeps the tile
   * state off (XCR0) */
  return syscall (SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#else
static gboolean
amx_probe (void)
{
  return FALSE;
}
#endif

gboolean
whisper_cpu_amx_available (void)
{
  static gsize checked;
  static gboolean available;
  if (g_once_init_enter (&checked)) {
    available = amx_probe ();
    g_once_init_leave (&checked, 1);
  }
  return available;
}

gboolean
whisper_cpu_amx_packable (int rows, int cols)
{
  return rows > 0 && cols > 0 && cols % CHUNK_COLS == 0;
}

size_t
whisper_cpu_amx_packed_elements (int rows, int cols)
{
  const size_t groups = ((size_t) rows + GROUP_ROWS - 1) / GROUP_ROWS;
  return groups * GROUP_ROWS * (size_t) cols;
}

void
whisper_cpu_amx_pack_rows (uint16_t *dst, const float *w_rows, int r0, int r1, int cols)
{
  g_return_if_fail (r0 >= 0 && r0 <= r1 && whisper_cpu_amx_packable (MAX (r1, 1), cols));
  uint16_t *row = g_new (uint16_t, cols);
  for (int r = r0; r < r1; r++) {
    whisper_bf16_from_f32 (row, w_rows + (size_t) (r - r0) * cols, cols);
    uint16_t *group = dst + (size_t) (r / GROUP_ROWS) * GROUP_ROWS * cols;
    const int j = (r % GROUP_ROWS) / BLOCK_ROWS, jj = r % BLOCK_ROWS;
    for (int k = 0; k < cols; k++) {
      const int chunk = k / CHUNK_COLS, p = (k % CHUNK_COLS) / 2, t = k % 2;
      group[(size_t) (chunk * 4 + j) * TILE_ELEMENTS + p * CHUNK_COLS + jj * 2 + t] = row[k];
    }
  }
  g_free (row);
}

size_t
whisper_cpu_amx_staged_elements (int n, int cols)
{
  return 2 * (size_t) ((n + BLOCK_ROWS - 1) / BLOCK_ROWS * BLOCK_ROWS) * cols;
}

static float
from_bf16 (uint16_t h)
{
  const uint32_t u = (uint32_t) h << 16;
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

/* Residuals are rounded this many columns at a time, from the stack: the
 * staging runs for every linear of a decode step. */
#define STAGE_CHUNK 256

void
whisper_cpu_amx_stage (uint16_t *dst, const float *x, int x_stride, int n, int cols)
{
  const size_t half = whisper_cpu_amx_staged_elements (n, cols) / 2;
  uint16_t *hi = dst, *lo = dst + half;
  float rest[STAGE_CHUNK];
  for (int i = 0; i < n; i++) {
    const float *xr = x + (size_t) i * x_stride;
    uint16_t *h = hi + (size_t) i * cols, *l = lo + (size_t) i * cols;
    whisper_bf16_from_f32 (h, xr, cols);
    for (int k0 = 0; k0 < cols; k0 += STAGE_CHUNK) {
      const int m = MIN (STAGE_CHUNK, cols - k0);
      for (int k = 0; k < m; k++)
        rest[k] = xr[k0 + k] - from_bf16 (h[k0 + k]);  /* exact: within 2^-8 of each other */
      whisper_bf16_from_f32 (l + k0, rest, m);
    }
  }
  const size_t used = (size_t) n * cols;
  memset (hi + used, 0, (half - used) * sizeof (uint16_t));
  memset (lo + used, 0, (half - used) * sizeof (uint16_t));
}

#if defined(HAVE_X86) && defined(__linux__)
typedef struct __attribute__ ((packed)) {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} TileConfig;

#define AMX_TARGET __attribute__ ((target ("amx-tile,amx-bf16,avx512f")))

/* C tiles 0..3 -> out [16][64] (row stride 256 bytes) -> the real part of y */
AMX_TARGET static void
store_block (float *y, int y_stride, int m, int n_cols, gboolean accumulate)
{
  float out[BLOCK_ROWS][GROUP_ROWS] __attribute__ ((aligned (64)));
  _tile_stored (0, &out[0][0], sizeof out[0]);
  _tile_stored (1, &out[0][16], sizeof out[0]);
  _tile_stored (2, &out[0][32], sizeof out[0]);
  _tile_stored (3, &out[0][48], sizeof out[0]);
  for (int i = 0; i < m; i++) {
    float *yr = y + (size_t) i * y_stride;
    if (accumulate)
      for (int q = 0; q < n_cols; q++)
        yr[q] += out[i][q];
    else
      memcpy (yr, out[i], (size_t) n_cols * sizeof (float));
  }
}

AMX_TARGET static void
linear_rows_amx (float *y, int y_stride, const uint16_t *w, const uint16_t *xb, int n, int r0,
                 int r1, int cols, gboolean accumulate)
{
  const uint16_t *xl = xb + whisper_cpu_amx_staged_elements (n, cols) / 2;
  TileConfig cfg;
  memset (&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 8; t++) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig (&cfg);

  const int n_chunks = cols / CHUNK_COLS;
  const size_t a_stride = (size_t) cols * sizeof (uint16_t);
  for (int r = r0; r < r1; r += GROUP_ROWS) {
    const uint16_t *group = w + (size_t) r * cols;
    const int n_cols = MIN (GROUP_ROWS, r1 - r);
    for (int i0 = 0; i0 < n; i0 += BLOCK_ROWS) {
      const uint16_t *ah = xb + (size_t) i0 * cols, *al = xl + (size_t) i0 * cols;
      const uint16_t *b = group;
      _tile_zero (0);
      _tile_zero (1);
      _tile_zero (2);
      _tile_zero (3);
      for (int c = 0; c < n_chunks; c++, b += 4 * TILE_ELEMENTS) {
        _tile_loadd (4, ah + (size_t) c * CHUNK_COLS, a_stride);
        _tile_loadd (5, al + (size_t) c * CHUNK_COLS, a_stride);
        _tile_loadd (6, b, 64);
        _tile_dpbf16ps (0, 4, 6);
        _tile_dpbf16ps (0, 5, 6);
        _tile_loadd (7, b + TILE_ELEMENTS, 64);
        _tile_dpbf16ps (1, 4, 7);
        _tile_dpbf16ps (1, 5, 7);
        _tile_loadd (6, b + 2 * TILE_ELEMENTS, 64);
        _tile_dpbf16ps (2, 4, 6);
        _tile_dpbf16ps (2, 5, 6);
        _tile_loadd (7, b + 3 * TILE_ELEMENTS, 64);
        _tile_dpbf16ps (3, 4, 7);
        _tile_dpbf16ps (3, 5, 7);
      }
      store_block (y + (size_t) i0 * y_stride + r, y_stride, MIN (BLOCK_ROWS, n - i0), n_cols,
                   accumulate);
    }
  }
  _tile_release ();
}
#endif

void
whisper_cpu_amx_linear_rows (float *y, int y_stride, const uint16_t *w, const uint16_t *xb,
                             int n, int r0, int r1, int cols, gboolean accumulate)
{
  g_return_if_fail (r0 % GROUP_ROWS == 0 && r0 <= r1 && cols % CHUNK_COLS == 0);
  g_return_if_fail (n >= 1 && n <= WHISPER_CPU_AMX_MAX_ROWS);
#if defined(HAVE_X86) && defined(__linux__)
  g_return_if_fail (whisper_cpu_amx_available ());
  linear_rows_amx (y, y_stride, w, xb, n, r0, r1, cols, accumulate);
#else
  (void) y, (void) y_stride, (void) w, (void) xb;
  g_return_if_reached ();
#endif
}
