// emu-runtime.cc: a CPU emulation of the part of the CUDA runtime, cuBLAS
// and CUDA graphs that the CUDA backend module uses, so that the module's
// host code and its kernels (built as C++, see emu-device.h) run on a
// machine without a GPU. For tests of logic, not of speed:
//
// - kernels: every block runs on the calling thread, its GPU threads as
//   fibers (ucontext) scheduled round-robin; __syncthreads waits for every
//   live thread of the block, a warp shuffle for every live lane of the
//   warp; a barrier that can never be met (divergent barriers) aborts;
// - memory: each allocation ends at a guard page (PROT_NONE), so a kernel
//   or copy that runs past the end crashes at once (16-byte alignment);
// - streams are synchronous; stream capture records kernels, GEMMs and
//   copies as nodes; graph instantiation copies them; kernel nodes can be
//   patched (cudaGraphExecKernelNodeSetParams) and the graph replayed;
// - cublasGemmEx: fp16 A and B, fp32 C, fp32 accumulation, column-major,
//   transpose flags, alpha and beta (beta 0 does not read C);
// - WHISPER_EMU_NO_DEVICE=1 makes cudaGetDeviceCount fail, as without a
//   driver;
// - WHISPER_EMU_DEVICE_COUNT=N emulates N devices (default 1), all the same
//   CPU. The current device is per thread (0 until cudaSetDevice), a stream
//   belongs to the device current when it was created, and as on a GPU "a
//   kernel launch will fail if it is issued to a stream that is not
//   associated to the current device" (kernels, graph launches, cuBLAS
//   GEMMs; copies succeed)
//   (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#stream-and-event-behavior),
//   so that a backend used from a thread where its device is not current
//   fails here too.
// - for tests that count what a decode step calls (emu-hooks.h): whether
//   the calling thread is inside the emulator, and how often each runtime
//   function that acquires or releases resources was called.
//
// Built against the real CUDA headers, so the module's host code compiles
// unchanged; linked instead of libcudart and libcublas.
#include "emu-hooks.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

struct EmuDim3 {
  unsigned x, y, z;
};
typedef void (*WcEmuCall) (const void *fn, const void *args);

namespace {

[[noreturn]] void
die (const char *what)
{
  fprintf (stderr, "CUDA emulator: %s\n", what);
  abort ();
}

// ---- kernel registry ------------------------------------------------------

struct KernelInfo {
  size_t args_size;
  WcEmuCall call;
};

std::map<const void *, KernelInfo> &
registry ()
{
  static std::map<const void *, KernelInfo> r;
  return r;
}

// ---- fibers ---------------------------------------------------------------
//
// On x86-64 a fiber switch is a few instructions (callee-saved registers
// and the stack pointer; swapcontext would make two system calls per
// switch, and a warp shuffle is two switches per thread); elsewhere
// ucontext.

#if defined(__x86_64__)
#define EMU_FAST_SWITCH 1
extern "C" void wc_emu_switch (void **save_sp, void *load_sp);
asm (R"(
  .text
  .globl wc_emu_switch
  .type wc_emu_switch, @function
wc_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size wc_emu_switch, .-wc_emu_switch
)");
#endif

enum FiberState { RUNNABLE, AT_BLOCK, AT_WARP, DONE };

struct Fiber {
#ifdef EMU_FAST_SWITCH
  void *sp;
#else
  ucontext_t ctx;
#endif
  FiberState state;
  EmuDim3 tid;
  int linear;
  void *stack;
};

const size_t STACK_SIZE = 256 * 1024;

struct Launch {
  const void *fn;
  const void *args;
  WcEmuCall call;
  EmuDim3 grid, block, block_idx;
  std::vector<Fiber> fibers;
#ifdef EMU_FAST_SWITCH
  void *sched_sp;
#else
  ucontext_t sched;
#endif
  Fiber *cur;
  uint64_t slots[32][32]; // warp shuffle mailboxes
};

Launch *L; // the launch being run (launches do not nest)
std::vector<void *> stacks;

void
to_scheduler (Fiber *f)
{
#ifdef EMU_FAST_SWITCH
  wc_emu_switch (&f->sp, L->sched_sp);
#else
  swapcontext (&f->ctx, &L->sched);
#endif
}

void
fiber_main ()
{
  Fiber *f = L->cur;
  L->call (L->fn, L->args);
  f->state = DONE;
#ifdef EMU_FAST_SWITCH
  to_scheduler (f); // never resumed
  abort ();
#endif
  // (ucontext: uc_link returns to the scheduler)
}

void
yield (FiberState s)
{
  Fiber *f = L->cur;
  f->state = s;
  to_scheduler (f);
}

// Releases the warps whose live lanes all wait at the warp barrier, else
// the block when every live thread waits at the block barrier.
bool
release ()
{
  bool any = false;
  const int n = (int) L->fibers.size ();
  for (int w0 = 0; w0 < n; w0 += 32) {
    bool all = true, some = false;
    for (int i = w0; i < n && i < w0 + 32; i++) {
      if (L->fibers[i].state == DONE)
        continue;
      some = true;
      all = all && L->fibers[i].state == AT_WARP;
    }
    if (some && all) {
      for (int i = w0; i < n && i < w0 + 32; i++)
        if (L->fibers[i].state == AT_WARP)
          L->fibers[i].state = RUNNABLE;
      any = true;
    }
  }
  if (any)
    return true;
  bool all = true, some = false;
  for (auto &f : L->fibers) {
    if (f.state == DONE)
      continue;
    some = true;
    all = all && f.state == AT_BLOCK;
  }
  if (some && all) {
    for (auto &f : L->fibers)
      f.state = RUNNABLE;
    return true;
  }
  return false;
}

void
run_block ()
{
  const int n = (int) L->fibers.size ();
  while ((int) stacks.size () < n)
    stacks.push_back (aligned_alloc (64, STACK_SIZE));
  for (int i = 0; i < n; i++) {
    Fiber &f = L->fibers[i];
    f.state = RUNNABLE;
    f.linear = i;
    f.tid.x = i % L->block.x;
    f.tid.y = (i / L->block.x) % L->block.y;
    f.tid.z = i / (L->block.x * L->block.y);
    f.stack = stacks[i];
#ifdef EMU_FAST_SWITCH
    // what wc_emu_switch pops: six registers, then the address it returns
    // to; the padding word leaves the stack as a call would (16n + 8)
    uintptr_t *sp = (uintptr_t *) ((uint8_t *) f.stack + STACK_SIZE);
    *--sp = 0;
    *--sp = (uintptr_t) fiber_main;
    for (int r = 0; r < 6; r++)
      *--sp = 0;
    f.sp = sp;
#else
    getcontext (&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = STACK_SIZE;
    f.ctx.uc_link = &L->sched;
    makecontext (&f.ctx, fiber_main, 0);
#endif
  }
  for (;;) {
    bool ran = false, live = false;
    for (int i = 0; i < n; i++) {
      Fiber &f = L->fibers[i];
      if (f.state != DONE)
        live = true;
      if (f.state != RUNNABLE)
        continue;
      L->cur = &f;
#ifdef EMU_FAST_SWITCH
      wc_emu_switch (&L->sched_sp, f.sp);
#else
      swapcontext (&L->sched, &f.ctx);
#endif
      L->cur = nullptr;
      ran = true;
    }
    if (!live)
      break;
    if (!ran && !release ())
      die ("deadlock: threads wait at barriers that cannot all be reached (divergent "
           "__syncthreads or shuffle)");
  }
}

void
run_kernel (const void *fn, EmuDim3 grid, EmuDim3 block, const void *args)
{
  auto it = registry ().find (fn);
  if (it == registry ().end ())
    die ("launch of a kernel that was never planned (unknown function)");
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.y > 65535 || grid.z > 65535)
    die ("invalid launch shape");
  static std::mutex lock;
  std::lock_guard<std::mutex> guard (lock);
  Launch launch;
  launch.fn = fn;
  launch.args = args;
  launch.call = it->second.call;
  launch.grid = grid;
  launch.block = block;
  launch.fibers.resize (threads);
  launch.cur = nullptr;
  L = &launch;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        launch.block_idx = { x, y, z };
        run_block ();
      }
  L = nullptr;
}

// ---- memory with guard pages ---------------------------------------------

struct Alloc {
  void *base;
  size_t map_size;
};
std::map<void *, Alloc> &
allocs ()
{
  static std::map<void *, Alloc> a;
  return a;
}
std::mutex alloc_lock;

void *
guarded_alloc (size_t size)
{
  const size_t page = (size_t) sysconf (_SC_PAGESIZE);
  const size_t data = (size + 15) & ~(size_t) 15;
  const size_t pages = (data + page - 1) / page + 1;
  uint8_t *base = (uint8_t *) mmap (nullptr, pages * page, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return nullptr;
  mprotect (base + (pages - 1) * page, page, PROT_NONE);
  uint8_t *p = base + (pages - 1) * page - data;
  // poison: cudaMalloc gives no zeros either; all ones bits are a NaN as
  // float32 and as fp16, so a kernel that reads what nobody wrote spreads
  // NaNs into the results the tests compare
  memset (p, 0xFF, data);
  std::lock_guard<std::mutex> g (alloc_lock);
  allocs ()[p] = { base, pages * page };
  return p;
}

bool
guarded_free (void *p)
{
  std::lock_guard<std::mutex> g (alloc_lock);
  auto it = allocs ().find (p);
  if (it == allocs ().end ())
    return false;
  munmap (it->second.base, it->second.map_size);
  allocs ().erase (it);
  return true;
}

// ---- streams, graphs ------------------------------------------------------

enum NodeKind { N_KERNEL, N_GEMM, N_COPY, N_MEMSET };

struct Gemm {
  cublasOperation_t ta, tb;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
  const void *a, *b;
  void *c;
};

struct Node {
  NodeKind kind;
  const void *fn;
  EmuDim3 grid, block;
  std::vector<uint8_t> args;
  Gemm gemm;
  void *dst;
  const void *src;
  size_t bytes;
  int value;
};

int
device_count ()
{
  const char *n = getenv ("WHISPER_EMU_DEVICE_COUNT");
  return n && atoi (n) > 0 ? atoi (n) : 1;
}

thread_local int current_device = 0;

struct Stream {
  int device = -1; // -1: the default stream, on whatever device is current
  bool capturing = false;
  std::vector<Node *> captured;
  bool invalidated = false;
};

struct Graph {
  std::vector<Node *> nodes;
};

struct Exec {
  std::vector<Node> nodes;
  std::map<const Node *, size_t> index;
};

Stream default_stream;

Stream *
stream_of (cudaStream_t s)
{
  return s ? (Stream *) s : &default_stream;
}

// Whether work that runs on the device (a kernel) may go to stream s from
// this thread.
bool
launch_allowed (cudaStream_t s)
{
  const Stream *st = stream_of (s);
  return st->device < 0 || st->device == current_device;
}

void
gemm_run (const Gemm &g)
{
  auto half = [] (const void *p, size_t i) {
    _Float16 h;
    memcpy (&h, (const uint8_t *) p + 2 * i, 2);
    return (float) h;
  };
  // op(A) as [m][k] and op(B) as [n][k], so that every dot product runs
  // over contiguous memory
  std::vector<float> a ((size_t) g.m * g.k), b ((size_t) g.n * g.k);
  for (int i = 0; i < g.m; i++)
    for (int l = 0; l < g.k; l++)
      a[(size_t) i * g.k + l] = g.ta == CUBLAS_OP_N ? half (g.a, i + (size_t) l * g.lda)
                                                    : half (g.a, l + (size_t) i * g.lda);
  for (int j = 0; j < g.n; j++)
    for (int l = 0; l < g.k; l++)
      b[(size_t) j * g.k + l] = g.tb == CUBLAS_OP_N ? half (g.b, l + (size_t) j * g.ldb)
                                                    : half (g.b, j + (size_t) l * g.ldb);
  float *c = (float *) g.c;
  for (int j = 0; j < g.n; j++) {
    const float *bj = &b[(size_t) j * g.k];
    for (int i = 0; i < g.m; i++) {
      const float *ai = &a[(size_t) i * g.k];
      float s[4] = { 0, 0, 0, 0 };
      int l = 0;
      for (; l + 4 <= g.k; l += 4)
        for (int t = 0; t < 4; t++)
          s[t] += ai[l + t] * bj[l + t];
      for (; l < g.k; l++)
        s[0] += ai[l] * bj[l];
      const float sum = (s[0] + s[1]) + (s[2] + s[3]);
      float &out = c[i + (size_t) j * g.ldc];
      out = g.beta == 0.0f ? g.alpha * sum : g.alpha * sum + g.beta * out;
    }
  }
}

void
node_run (const Node &n)
{
  switch (n.kind) {
  case N_KERNEL:
    run_kernel (n.fn, n.grid, n.block, n.args.data ());
    break;
  case N_GEMM:
    gemm_run (n.gemm);
    break;
  case N_COPY:
    memmove (n.dst, n.src, n.bytes);
    break;
  case N_MEMSET:
    memset (n.dst, n.value, n.bytes);
    break;
  }
}

// Runs a node now, or adds it to the stream's capture.
void
submit (cudaStream_t s, Node *n)
{
  Stream *st = stream_of (s);
  if (st->capturing) {
    st->captured.push_back (n);
    return;
  }
  node_run (*n);
  delete n;
}

cudaError_t last_error = cudaSuccess;

// ---- what a counting test sees (emu-hooks.h) --------------------------------

// Depth of emulated runtime calls on this thread (initial-exec: reading it
// from inside an interposed malloc must not allocate).
thread_local int runtime_depth __attribute__ ((tls_model ("initial-exec")));

struct RuntimeCall {
  RuntimeCall () { runtime_depth++; }
  ~RuntimeCall () { runtime_depth--; }
  RuntimeCall (const RuntimeCall &) = delete;
  RuntimeCall &operator= (const RuntimeCall &) = delete;
};

enum ResourceCall {
  R_MALLOC, R_FREE, R_HOST_ALLOC, R_FREE_HOST, R_STREAM_CREATE, R_STREAM_DESTROY,
  R_BEGIN_CAPTURE, R_END_CAPTURE, R_INSTANTIATE, R_EXEC_DESTROY, R_GRAPH_DESTROY,
  R_BLAS_CREATE, R_BLAS_DESTROY, R_COUNT
};

const char *const resource_names[R_COUNT] = {
  "cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaFreeHost", "cudaStreamCreateWithFlags",
  "cudaStreamDestroy", "cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate",
  "cudaGraphExecDestroy", "cudaGraphDestroy", "cublasCreate", "cublasDestroy",
};
uint64_t resource_counts[R_COUNT];

void
count_resource (ResourceCall r)
{
  __atomic_fetch_add (&resource_counts[r], 1, __ATOMIC_RELAXED);
}

} // namespace

// Every runtime and cuBLAS function the module calls starts with one of
// these: the emulator's own allocations inside it are not the module's.
#define EMU_API RuntimeCall emu_runtime_call_
#define EMU_RESOURCE(r) EMU_API; count_resource (r)

extern "C" {

// ---- device side hooks (emu-device.h) --------------------------------------

const EmuDim3 *
wc_emu_thread_idx (void)
{
  return &L->cur->tid;
}

const EmuDim3 *
wc_emu_block_idx (void)
{
  return &L->block_idx;
}

const EmuDim3 *
wc_emu_block_dim (void)
{
  return &L->block;
}

const EmuDim3 *
wc_emu_grid_dim (void)
{
  return &L->grid;
}

void
wc_emu_syncthreads (void)
{
  yield (AT_BLOCK);
}

uint64_t
wc_emu_shfl_xor (uint64_t v, int offset)
{
  Fiber *f = L->cur;
  const int warp = f->linear / 32, lane = f->linear % 32;
  const int other = lane ^ offset;
  if (other >= 32 || warp * 32 + other >= (int) L->fibers.size ())
    die ("shuffle with a lane outside the block");
  L->slots[warp][lane] = v;
  yield (AT_WARP);
  if (L->fibers[warp * 32 + other].state == DONE)
    die ("shuffle with a lane that has exited");
  const uint64_t r = L->slots[warp][other];
  yield (AT_WARP);
  return r;
}

void
wc_emu_register_kernel (const void *fn, size_t args_size, WcEmuCall call)
{
  static std::mutex lock;
  std::lock_guard<std::mutex> g (lock);
  registry ()[fn] = { args_size, call };
}

// ---- runtime ---------------------------------------------------------------

const char *
cudaGetErrorString (cudaError_t e)
{
  EMU_API;
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorMemoryAllocation: return "out of memory (emulated)";
  case cudaErrorInvalidValue: return "invalid argument (emulated)";
  case cudaErrorInsufficientDriver: return "no driver (emulated)";
  case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle (emulated: a stream of another device than the thread's "
           "current one)";
  case cudaErrorInvalidDevice: return "invalid device ordinal (emulated)";
  default: return "error (emulated)";
  }
}

const char *
cudaGetErrorName (cudaError_t e)
{
  EMU_API;
  return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated";
}

cudaError_t
cudaGetLastError (void)
{
  EMU_API;
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t
cudaGetDeviceCount (int *count)
{
  EMU_API;
  const char *no = getenv ("WHISPER_EMU_NO_DEVICE");
  if (no && *no == '1') {
    *count = 0;
    return cudaErrorInsufficientDriver;
  }
  *count = device_count ();
  return cudaSuccess;
}

cudaError_t
cudaSetDevice (int device)
{
  EMU_API;
  if (device < 0 || device >= device_count ())
    return cudaErrorInvalidDevice;
  current_device = device;
  return cudaSuccess;
}

cudaError_t
cudaGetDeviceProperties (struct cudaDeviceProp *prop, int device)
{
  EMU_API;
  if (device < 0 || device >= device_count ())
    return cudaErrorInvalidDevice;
  memset (prop, 0, sizeof *prop);
  snprintf (prop->name, sizeof prop->name, "CUDA emulator (CPU)");
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t
cudaFuncGetAttributes (struct cudaFuncAttributes *attr, const void *func)
{
  EMU_API;
  memset (attr, 0, sizeof *attr);
  return registry ().count (func) ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

cudaError_t
cudaMalloc (void **p, size_t size)
{
  EMU_RESOURCE (R_MALLOC);
  *p = guarded_alloc (size ? size : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaFree (void *p)
{
  EMU_RESOURCE (R_FREE);
  if (!p)
    return cudaSuccess;
  return guarded_free (p) ? cudaSuccess : cudaErrorInvalidDevicePointer;
}

cudaError_t
cudaHostAlloc (void **p, size_t size, unsigned int flags)
{
  EMU_RESOURCE (R_HOST_ALLOC);
  (void) flags;
  *p = guarded_alloc (size ? size : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaHostGetDevicePointer (void **dev, void *host, unsigned int flags)
{
  EMU_API;
  (void) flags;
  *dev = host;
  return cudaSuccess;
}

cudaError_t
cudaFreeHost (void *p)
{
  EMU_RESOURCE (R_FREE_HOST);
  if (!p)
    return cudaSuccess;
  return guarded_free (p) ? cudaSuccess : cudaErrorInvalidDevicePointer;
}

cudaError_t
cudaMemsetAsync (void *p, int value, size_t bytes, cudaStream_t s)
{
  EMU_API;
  Node *n = new Node ();
  n->kind = N_MEMSET;
  n->dst = p;
  n->value = value;
  n->bytes = bytes;
  submit (s, n);
  return cudaSuccess;
}

cudaError_t
cudaMemcpyAsync (void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                 cudaStream_t s)
{
  EMU_API;
  (void) kind;
  Node *n = new Node ();
  n->kind = N_COPY;
  n->dst = dst;
  n->src = src;
  n->bytes = bytes;
  submit (s, n);
  return cudaSuccess;
}

cudaError_t
cudaStreamCreateWithFlags (cudaStream_t *s, unsigned int flags)
{
  EMU_RESOURCE (R_STREAM_CREATE);
  (void) flags;
  Stream *st = new Stream ();
  st->device = current_device;
  *s = (cudaStream_t) st;
  return cudaSuccess;
}

cudaError_t
cudaStreamDestroy (cudaStream_t s)
{
  EMU_RESOURCE (R_STREAM_DESTROY);
  delete (Stream *) s;
  return cudaSuccess;
}

cudaError_t
cudaStreamSynchronize (cudaStream_t s)
{
  EMU_API;
  return stream_of (s)->capturing ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t
cudaStreamQuery (cudaStream_t s)
{
  EMU_API;
  return stream_of (s)->capturing ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t
cudaLaunchKernel (const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                  cudaStream_t s)
{
  EMU_API;
  (void) smem;
  auto it = registry ().find (func);
  if (it == registry ().end ())
    return last_error = cudaErrorInvalidDeviceFunction;
  if (!launch_allowed (s))
    return last_error = cudaErrorInvalidResourceHandle;
  Node *n = new Node ();
  n->kind = N_KERNEL;
  n->fn = func;
  n->grid = { grid.x, grid.y, grid.z };
  n->block = { block.x, block.y, block.z };
  n->args.assign ((const uint8_t *) args[0], (const uint8_t *) args[0] + it->second.args_size);
  submit (s, n);
  return cudaSuccess;
}

cudaError_t
cudaStreamBeginCapture (cudaStream_t s, enum cudaStreamCaptureMode mode)
{
  EMU_RESOURCE (R_BEGIN_CAPTURE);
  (void) mode;
  Stream *st = stream_of (s);
  if (st->capturing)
    return cudaErrorIllegalState;
  st->capturing = true;
  st->captured.clear ();
  return cudaSuccess;
}

// The signature of the headers it is built against: CUDA 13's takes the
// edge data; CUDA 12's does not (its header maps the name to
// cudaStreamGetCaptureInfo_v2).
#if CUDART_VERSION >= 13000
cudaError_t
cudaStreamGetCaptureInfo (cudaStream_t s, enum cudaStreamCaptureStatus *status,
                          unsigned long long *id, cudaGraph_t *graph,
                          const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                          size_t *n_deps)
#else
cudaError_t
cudaStreamGetCaptureInfo (cudaStream_t s, enum cudaStreamCaptureStatus *status,
                          unsigned long long *id, cudaGraph_t *graph,
                          const cudaGraphNode_t **deps, size_t *n_deps)
#endif
{
  EMU_API;
#if CUDART_VERSION < 13000
  const cudaGraphEdgeData **edges = nullptr;
#endif
  static thread_local cudaGraphNode_t last;
  Stream *st = stream_of (s);
  if (status)
    *status = st->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  if (id)
    *id = 1;
  if (graph)
    *graph = nullptr;
  if (edges)
    *edges = nullptr;
  last = st->captured.empty () ? nullptr : (cudaGraphNode_t) st->captured.back ();
  if (deps)
    *deps = &last;
  if (n_deps)
    *n_deps = st->captured.empty () ? 0 : 1;
  return cudaSuccess;
}

cudaError_t
cudaStreamEndCapture (cudaStream_t s, cudaGraph_t *graph)
{
  EMU_RESOURCE (R_END_CAPTURE);
  Stream *st = stream_of (s);
  if (!st->capturing)
    return cudaErrorIllegalState;
  Graph *g = new Graph ();
  g->nodes = st->captured;
  st->captured.clear ();
  st->capturing = false;
  *graph = (cudaGraph_t) g;
  return cudaSuccess;
}

cudaError_t
cudaGraphInstantiate (cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
  EMU_RESOURCE (R_INSTANTIATE);
  (void) flags;
  Graph *g = (Graph *) graph;
  Exec *e = new Exec ();
  for (size_t i = 0; i < g->nodes.size (); i++) {
    e->nodes.push_back (*g->nodes[i]);
    e->index[g->nodes[i]] = i;
  }
  *exec = (cudaGraphExec_t) e;
  return cudaSuccess;
}

cudaError_t
cudaGraphExecKernelNodeSetParams (cudaGraphExec_t exec, cudaGraphNode_t node,
                                  const struct cudaKernelNodeParams *p)
{
  EMU_API;
  Exec *e = (Exec *) exec;
  auto it = e->index.find ((const Node *) node);
  if (it == e->index.end ())
    return cudaErrorInvalidValue;
  Node &n = e->nodes[it->second];
  if (n.kind != N_KERNEL || n.fn != p->func)
    return cudaErrorInvalidValue;
  n.grid = { p->gridDim.x, p->gridDim.y, p->gridDim.z };
  n.block = { p->blockDim.x, p->blockDim.y, p->blockDim.z };
  const size_t size = registry ()[p->func].args_size;
  n.args.assign ((const uint8_t *) p->kernelParams[0],
                 (const uint8_t *) p->kernelParams[0] + size);
  return cudaSuccess;
}

cudaError_t
cudaGraphLaunch (cudaGraphExec_t exec, cudaStream_t s)
{
  EMU_API;
  if (stream_of (s)->capturing)
    return cudaErrorStreamCaptureUnsupported;
  if (!launch_allowed (s))
    return last_error = cudaErrorInvalidResourceHandle;
  for (const Node &n : ((Exec *) exec)->nodes)
    node_run (n);
  return cudaSuccess;
}

cudaError_t
cudaGraphExecDestroy (cudaGraphExec_t exec)
{
  EMU_RESOURCE (R_EXEC_DESTROY);
  delete (Exec *) exec;
  return cudaSuccess;
}

cudaError_t
cudaGraphDestroy (cudaGraph_t graph)
{
  EMU_RESOURCE (R_GRAPH_DESTROY);
  Graph *g = (Graph *) graph;
  for (Node *n : g->nodes)
    delete n;
  delete g;
  return cudaSuccess;
}

// ---- cuBLAS ----------------------------------------------------------------

struct EmuBlas {
  cudaStream_t stream;
};

cublasStatus_t
cublasCreate_v2 (cublasHandle_t *h)
{
  EMU_RESOURCE (R_BLAS_CREATE);
  *h = (cublasHandle_t) new EmuBlas ();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasDestroy_v2 (cublasHandle_t h)
{
  EMU_RESOURCE (R_BLAS_DESTROY);
  delete (EmuBlas *) h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetStream_v2 (cublasHandle_t h, cudaStream_t s)
{
  EMU_API;
  ((EmuBlas *) h)->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetWorkspace_v2 (cublasHandle_t h, void *ws, size_t size)
{
  EMU_API;
  (void) h, (void) ws, (void) size;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetMathMode (cublasHandle_t h, cublasMath_t mode)
{
  EMU_API;
  (void) h, (void) mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char *
cublasGetStatusString (cublasStatus_t s)
{
  EMU_API;
  return s == CUBLAS_STATUS_SUCCESS ? "success" : "error (emulated)";
}

const char *
cublasGetStatusName (cublasStatus_t s)
{
  EMU_API;
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_EMULATED_ERROR";
}

cublasStatus_t
cublasGemmEx (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
              const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
              cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
              cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
  EMU_API;
  (void) algo;
  if (at != CUDA_R_16F || bt != CUDA_R_16F || ct != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const int a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
  if (m < 0 || n < 0 || k < 0 || lda < a_rows || ldb < b_rows || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!launch_allowed (((EmuBlas *) h)->stream))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  Node *node = new Node ();
  node->kind = N_GEMM;
  node->gemm = { ta, tb, m, n, k, lda, ldb, ldc, *(const float *) alpha, *(const float *) beta,
                 A, B, C };
  submit (((EmuBlas *) h)->stream, node);
  return CUBLAS_STATUS_SUCCESS;
}

// ---- hooks (emu-hooks.h) ---------------------------------------------------

__attribute__ ((visibility ("default"))) int
wc_emu_in_runtime (void)
{
  return runtime_depth;
}

__attribute__ ((visibility ("default"))) int
wc_emu_resource_counters (const char *const **names, const uint64_t **counts)
{
  *names = resource_names;
  *counts = resource_counts;
  return R_COUNT;
}

} // extern "C"
