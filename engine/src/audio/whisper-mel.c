/* whisper-mel.c: log-mel front end (see whisper-mel.h). FFT by FFTW. */
#include "whisper-mel.h"
#include "thread-pool.h"
#include "whisper.h"

#include <fftw3.h>
#include <math.h>
#include <string.h>

#define SAMPLE_RATE 16000.0

struct _WhisperMel {
  int n_mels;
  float *filters;            /* [n_mels, N_FREQ] */
  /* filter m is zero outside [band_lo[m], band_hi[m]): the sums skip the
   * zeros (a triangle spans a few to 30 of the 201 bins), which leaves them
   * bit-identical (+0 terms) and skips most of the work */
  int *band_lo, *band_hi;
  float window[WHISPER_N_FFT];
  fftwf_plan plan;

  /* One pool for the life of the front end (the engine's), not one
   * created and joined by every call, with each thread's FFT buffers and
   * running maximum. `lock`: one computation at a time (streams of one
   * engine may call from several threads). */
  GMutex lock;
  WhisperThreadPool *pool;
  int n_threads;
  float **frames;            /* per thread [N_FFT] */
  fftwf_complex **spectra;   /* per thread [N_FREQ] */
  float *thread_max;         /* per thread */
};

/* FFTW's planner is not thread-safe; execution with new-array functions is. */
static GMutex plan_lock;

/* Slaney-scale, Slaney-normalised filters, computed in double like
 * faster-whisper's get_mel_filters (librosa's formula), then rounded to float. */
static void
compute_filters (float *filters, int n_mels)
{
  const double f_sp = 200.0 / 3.0;
  const double min_log_hz = 1000.0;
  const double min_log_mel = min_log_hz / f_sp;
  const double logstep = log (6.4) / 27.0;
  const double max_mel = 45.245640471924965;
  g_autofree double *freqs = g_new (double, n_mels + 2);

  for (int i = 0; i < n_mels + 2; i++) {
    const double mel = max_mel * i / (n_mels + 1);
    freqs[i] = mel >= min_log_mel ? min_log_hz * exp (logstep * (mel - min_log_mel)) : f_sp * mel;
  }
  for (int m = 0; m < n_mels; m++) {
    const double lower_width = freqs[m + 1] - freqs[m];
    const double upper_width = freqs[m + 2] - freqs[m + 1];
    const double enorm = 2.0 / (freqs[m + 2] - freqs[m]);
    for (int k = 0; k < WHISPER_N_FREQ; k++) {
      const double f = k * SAMPLE_RATE / WHISPER_N_FFT;
      const double lower = -(freqs[m] - f) / lower_width;
      const double upper = (freqs[m + 2] - f) / upper_width;
      const double w = MAX (0.0, MIN (lower, upper));
      filters[(size_t) m * WHISPER_N_FREQ + k] = (float) (w * enorm);
    }
  }
}

WhisperMel *
whisper_mel_new (int n_mels, int n_threads, GError **error)
{
  if (n_mels <= 0 || n_mels > 512) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "log-mel: %d mel bands is not a valid count", n_mels);
    return NULL;
  }
  if (n_threads < 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "log-mel: thread count %d is negative", n_threads);
    return NULL;
  }
  WhisperMel *mel = g_new0 (WhisperMel, 1);
  mel->n_mels = n_mels;
  g_mutex_init (&mel->lock);
  mel->filters = g_new (float, (size_t) n_mels * WHISPER_N_FREQ);
  compute_filters (mel->filters, n_mels);
  mel->band_lo = g_new (int, n_mels);
  mel->band_hi = g_new (int, n_mels);
  for (int m = 0; m < n_mels; m++) {
    const float *f = mel->filters + (size_t) m * WHISPER_N_FREQ;
    int lo = 0, hi = WHISPER_N_FREQ;
    while (lo < hi && f[lo] == 0.0f)
      lo++;
    while (hi > lo && f[hi - 1] == 0.0f)
      hi--;
    mel->band_lo[m] = lo;
    mel->band_hi[m] = hi;
  }

  /* Periodic Hann: np.hanning(401)[:-1], rounded to float. */
  for (int i = 0; i < WHISPER_N_FFT; i++)
    mel->window[i] = (float) (0.5 - 0.5 * cos (2.0 * G_PI * i / WHISPER_N_FFT));

  float *in = fftwf_alloc_real (WHISPER_N_FFT);
  fftwf_complex *out = fftwf_alloc_complex (WHISPER_N_FREQ);
  g_mutex_lock (&plan_lock);
  mel->plan = fftwf_plan_dft_r2c_1d (WHISPER_N_FFT, in, out, FFTW_ESTIMATE | FFTW_UNALIGNED);
  g_mutex_unlock (&plan_lock);
  fftwf_free (in);
  fftwf_free (out);
  if (!mel->plan) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED, "log-mel: FFTW could not plan a %d-point FFT",
                 WHISPER_N_FFT);
    whisper_mel_free (mel);
    return NULL;
  }

  mel->n_threads = n_threads > 0 ? n_threads : (int) g_get_num_processors ();
  mel->pool = whisper_thread_pool_new (mel->n_threads);
  mel->frames = g_new0 (float *, mel->n_threads);
  mel->spectra = g_new0 (fftwf_complex *, mel->n_threads);
  mel->thread_max = g_new (float, mel->n_threads);
  for (int i = 0; i < mel->n_threads; i++) {
    mel->frames[i] = fftwf_alloc_real (WHISPER_N_FFT);
    mel->spectra[i] = fftwf_alloc_complex (WHISPER_N_FREQ);
    if (!mel->frames[i] || !mel->spectra[i]) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                   "log-mel: cannot allocate FFT buffers");
      whisper_mel_free (mel);
      return NULL;
    }
  }
  return mel;
}

void
whisper_mel_free (WhisperMel *mel)
{
  if (!mel)
    return;
  if (mel->plan) {
    g_mutex_lock (&plan_lock);
    fftwf_destroy_plan (mel->plan);
    g_mutex_unlock (&plan_lock);
  }
  whisper_thread_pool_free (mel->pool);
  for (int i = 0; i < mel->n_threads && mel->frames; i++) {
    fftwf_free (mel->frames[i]);
    fftwf_free (mel->spectra[i]);
  }
  g_free (mel->frames);
  g_free (mel->spectra);
  g_free (mel->thread_max);
  g_free (mel->filters);
  g_free (mel->band_lo);
  g_free (mel->band_hi);
  g_mutex_clear (&mel->lock);
  g_free (mel);
}

const float *
whisper_mel_filters (const WhisperMel *mel)
{
  return mel->filters;
}

/* Sample j of the signal pcm + `n_zeros` zeros, reflect-padded (numpy
 * "reflect": mirror without repeating the edge, repeated as needed). */
static inline float
padded_sample (const float *pcm, gsize n, gsize len, gint64 j)
{
  if (len == 1)
    j = 0;
  else {
    const gint64 period = 2 * ((gint64) len - 1);
    j %= period;
    if (j < 0)
      j += period;
    if (j >= (gint64) len)
      j = period - j;
  }
  return (gsize) j < n ? pcm[j] : 0.0f;
}

typedef struct {
  WhisperMel *mel;
  const float *pcm;
  gsize n_samples, len, n_frames;
  float *out;
} MelJob;

#define FRAMES_PER_TASK 256

static void
mel_task (int task, int thread, gpointer data)
{
  MelJob *job = data;
  WhisperMel *mel = job->mel;
  const int n_mels = mel->n_mels;
  float *frame = mel->frames[thread];
  fftwf_complex *spec = mel->spectra[thread];
  float power[WHISPER_N_FREQ];
  float local_max = mel->thread_max[thread];
  const gsize t1 = MIN ((gsize) (task + 1) * FRAMES_PER_TASK, job->n_frames);

  for (gsize t = (gsize) task * FRAMES_PER_TASK; t < t1; t++) {
    const gint64 start = (gint64) t * WHISPER_HOP_LENGTH - WHISPER_N_FFT / 2;
    for (int i = 0; i < WHISPER_N_FFT; i++)
      frame[i] = padded_sample (job->pcm, job->n_samples, job->len, start + i) * mel->window[i];
    fftwf_execute_dft_r2c (mel->plan, frame, spec);
    for (int k = 0; k < WHISPER_N_FREQ; k++) {
      const float mag = hypotf (spec[k][0], spec[k][1]);
      power[k] = mag * mag;
    }
    for (int m = 0; m < n_mels; m++) {
      const float *f = mel->filters + (size_t) m * WHISPER_N_FREQ;
      float acc = 0.0f;
      for (int k = mel->band_lo[m]; k < mel->band_hi[m]; k++)
        acc += f[k] * power[k];
      const float v = log10f (MAX (acc, 1e-10f));
      job->out[(size_t) m * job->n_frames + t] = v;
      local_max = MAX (local_max, v);
    }
  }
  mel->thread_max[thread] = local_max;
}

float *
whisper_mel_compute (WhisperMel *mel, const float *pcm, gsize n_samples, gsize *n_frames_out)
{
  const int n_mels = mel->n_mels;
  MelJob job = { mel, pcm, n_samples, 0, 0, NULL };
  job.len = n_samples + WHISPER_HOP_LENGTH;       /* faster-whisper's 160-zero padding */
  job.n_frames = job.len / WHISPER_HOP_LENGTH;    /* STFT frames minus the dropped last one */
  job.out = g_new (float, (size_t) n_mels * job.n_frames);

  const int n_tasks = (int) ((job.n_frames + FRAMES_PER_TASK - 1) / FRAMES_PER_TASK);
  g_mutex_lock (&mel->lock);
  for (int i = 0; i < mel->n_threads; i++)
    mel->thread_max[i] = -INFINITY;
  whisper_thread_pool_run (mel->pool, n_tasks, mel_task, &job);
  float global_max = -INFINITY;
  for (int i = 0; i < mel->n_threads; i++)
    global_max = MAX (global_max, mel->thread_max[i]);
  g_mutex_unlock (&mel->lock);

  const float floor_value = global_max - 8.0f;
  const size_t total = (size_t) n_mels * job.n_frames;
  for (size_t i = 0; i < total; i++)
    job.out[i] = (MAX (job.out[i], floor_value) + 4.0f) / 4.0f;

  *n_frames_out = job.n_frames;
  return job.out;
}
