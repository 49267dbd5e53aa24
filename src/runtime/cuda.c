/* cuda.c — NVIDIA GPUs behind the device interface (tinygrad runtime/ops_cuda.py, support/compiler_cuda.py), with
 * the driver (libcuda.so.1) and NVRTC loaded by dlopen at run time: the build never needs CUDA, and a machine
 * without a GPU gets a clean "no CUDA device: ..." error from rt_device_open.
 *
 *   open      cuInit, the device's primary context (cuDevicePrimaryCtxRetain), one non-blocking stream, the compute
 *             capability as the arch: "sm_90a" for 9.0 (wgmma needs the a-target), "sm_XY" otherwise
 *   memory    cuMemAlloc/cuMemFree under the LRU pool of alloc.c; out of memory is a refusal, so the pool is
 *             flushed and the request tried again before TG_ERR_OUT_OF_MEMORY
 *   copy in   memcpy into pinned staging chunks (cuMemHostAlloc), cuMemcpyHtoDAsync on the stream; a chunk is reused
 *             once the stream has passed it (at synchronize, or when every chunk is in flight)
 *   copy out  waits for the stream, then cuMemcpyDtoHAsync + stream synchronize
 *   transfer  cuMemcpyDtoDAsync on one device; cuMemcpyPeerAsync between two (synchronous: the source's stream is
 *             drained before and the destination's after)
 *   compile   NVRTC to cubin (--gpu-architecture=<arch>, --minimal from NVRTC 12.4 as tinygrad), a batch on threads,
 *             cubins cached on disk by NVRTC version + options + name + source; cuModuleLoadData, cuModuleGetFunction
 *   launch    cuLaunchKernel with kernelParams (pointers, then values at their declared width) and the dynamic shared
 *             memory a source declares (`#define TG_DYNAMIC_SMEM_BYTES n`, the GEMM templates); with `seconds`, two
 *             events around it and their elapsed time (DEBUG=2's tm)
 *   graphs    cuGraph of kernel nodes (the JIT's replay): cuGraphAddKernelNode with the dependencies device.c found,
 *             cuGraphInstantiateWithFlags once, cuGraphExecKernelNodeSetParams per changed node, cuGraphLaunch on
 *             the stream; optional entry points (a driver without them: the JIT launches one by one)
 * tinygrad loads PTX (driver JIT at every load, 465 ms for a large module vs 0.06 ms for its cubin: measured). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

/* ---- the driver API, as far as it is used (cuda.h values) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CU_STREAM_NON_BLOCKING 1
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_MEMHOSTALLOC_PORTABLE 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

/* Every symbol is looked up as name_v2 first, then name (the driver keeps old ABIs under the plain names). */
#define CU_FUNCS(X)                                                                                               \
  X(cuInit, (unsigned flags))                                                                                    \
  X(cuDriverGetVersion, (int *v))                                                                                \
  X(cuDeviceGetCount, (int *n))                                                                                  \
  X(cuDeviceGet, (CUdevice * d, int ordinal))                                                                    \
  X(cuDeviceGetName, (char *name, int len, CUdevice d))                                                          \
  X(cuDeviceGetAttribute, (int *v, int attr, CUdevice d))                                                        \
  X(cuDevicePrimaryCtxRetain, (CUcontext * c, CUdevice d))                                                       \
  X(cuCtxSetCurrent, (CUcontext c))                                                                              \
  X(cuStreamCreate, (CUstream * s, unsigned flags))                                                              \
  X(cuStreamSynchronize, (CUstream s))                                                                           \
  X(cuMemAlloc, (CUdeviceptr * p, size_t n))                                                                     \
  X(cuMemFree, (CUdeviceptr p))                                                                                  \
  X(cuMemHostAlloc, (void **p, size_t n, unsigned flags))                                                        \
  X(cuMemFreeHost, (void *p))                                                                                    \
  X(cuMemcpyHtoDAsync, (CUdeviceptr dst, const void *src, size_t n, CUstream s))                                 \
  X(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr src, size_t n, CUstream s))                                       \
  X(cuMemcpyDtoDAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                                 \
  X(cuMemcpyPeerAsync, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s))     \
  X(cuModuleLoadData, (CUmodule * m, const void *image))                                                         \
  X(cuModuleGetFunction, (CUfunction * f, CUmodule m, const char *name))                                         \
  X(cuFuncSetAttribute, (CUfunction f, int attr, int value))                                                     \
  X(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
                     unsigned smem, CUstream s, void **params, void **extra))                                    \
  X(cuEventCreate, (CUevent * e, unsigned flags))                                                                \
  X(cuEventRecord, (CUevent e, CUstream s))                                                                      \
  X(cuEventSynchronize, (CUevent e))                                                                             \
  X(cuEventElapsedTime, (float *ms, CUevent a, CUevent b))                                                       \
  X(cuEventDestroy, (CUevent e))                                                                                 \
  X(cuGetErrorName, (CUresult r, const char **s))                                                                \
  X(cuGetErrorString, (CUresult r, const char **s))

/* CUDA graphs (runtime.h graphs): optional, a driver without them replays launch by launch */
typedef void *CUgraph, *CUgraphNode, *CUgraphExec;
typedef struct CudaKernelNodeParams { /* CUDA_KERNEL_NODE_PARAMS_v2; a v1 driver reads the prefix it knows */
  CUfunction func;
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem;
  void **kernel_params, **extra;
  void *kern;  /* CUkernel: NULL, func is set */
  CUcontext ctx; /* NULL: the current context */
} CudaKernelNodeParams;
#define CU_GRAPH_FUNCS(X)                                                                                         \
  X(cuGraphCreate, (CUgraph * g, unsigned flags))                                                                \
  X(cuGraphAddKernelNode, (CUgraphNode * n, CUgraph g, const CUgraphNode *deps, size_t ndeps,                    \
                           const CudaKernelNodeParams *p))                                                       \
  X(cuGraphInstantiateWithFlags, (CUgraphExec * e, CUgraph g, unsigned long long flags))                         \
  X(cuGraphExecKernelNodeSetParams, (CUgraphExec e, CUgraphNode n, const CudaKernelNodeParams *p))               \
  X(cuGraphLaunch, (CUgraphExec e, CUstream s))                                                                  \
  X(cuGraphExecDestroy, (CUgraphExec e))                                                                         \
  X(cuGraphDestroy, (CUgraph g))

#define CU_DECLARE(name, args) static CUresult(*p_##name) args;
CU_FUNCS(CU_DECLARE)
CU_GRAPH_FUNCS(CU_DECLARE)
static bool graphs_loaded; /* every CU_GRAPH_FUNCS entry point was found */

/* ---- NVRTC ---- */
typedef int nvrtcResult;
typedef void *nvrtcProgram;
#define NVRTC_FUNCS(X)                                                                                            \
  X(nvrtcVersion, (int *major, int *minor))                                                                      \
  X(nvrtcCreateProgram, (nvrtcProgram * p, const char *src, const char *name, int nheaders, const char *const *h, \
                         const char *const *hnames))                                                             \
  X(nvrtcCompileProgram, (nvrtcProgram p, int nopts, const char *const *opts))                                   \
  X(nvrtcGetProgramLogSize, (nvrtcProgram p, size_t *n))                                                         \
  X(nvrtcGetProgramLog, (nvrtcProgram p, char *log))                                                             \
  X(nvrtcGetCUBINSize, (nvrtcProgram p, size_t *n))                                                              \
  X(nvrtcGetCUBIN, (nvrtcProgram p, char *cubin))                                                                \
  X(nvrtcDestroyProgram, (nvrtcProgram * p))
#define NVRTC_DECLARE(name, args) static nvrtcResult(*p_##name) args;
NVRTC_FUNCS(NVRTC_DECLARE)
static const char *(*p_nvrtcGetErrorString)(nvrtcResult r);

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int driver_state;        /* 0: not tried, 1: loaded and initialized, -1: failed (driver_why says why) */
static char driver_why[256];
static int nvrtc_state;
static char nvrtc_why[512];
static int nvrtc_major, nvrtc_minor;

/* ---- errors ---- */
static const char *cu_name(CUresult r) {
  const char *s = NULL;
  if (p_cuGetErrorName && p_cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR";
}
static tg_status cu_fail(const char *what, CUresult r) {
  const char *desc = NULL;
  if (p_cuGetErrorString) p_cuGetErrorString(r, &desc);
  return tg_set_error(r == CUDA_ERROR_OUT_OF_MEMORY ? TG_ERR_OUT_OF_MEMORY : TG_ERR_RUNTIME, "CUDA: %s failed: %s (%d)%s%s",
                      what, cu_name(r), r, desc ? ": " : "", desc ? desc : "");
}
#define CU_CHECK(call, what)                 \
  do {                                       \
    CUresult cu_r_ = (call);                 \
    if (cu_r_ != CUDA_SUCCESS) return cu_fail(what, cu_r_); \
  } while (0)

static void *sym(void *lib, const char *name) {
  char v2[96];
  snprintf(v2, sizeof v2, "%s_v2", name);
  void *f = dlsym(lib, v2);
  return f ? f : dlsym(lib, name);
}

/* dlopen libcuda.so.1 and cuInit. Under load_lock. */
static bool driver_load(void) {
  if (driver_state) return driver_state > 0;
  driver_state = -1;
  static const char *const paths[] = {"libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
                                      "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1"};
  void *lib = NULL;
  for (size_t i = 0; i < TG_ARRAY_LEN(paths) && !lib; i++) lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(driver_why, sizeof driver_why, "libcuda.so.1 not found");
    return false;
  }
  const char *missing = NULL;
#define CU_RESOLVE(name, args)                                 \
  {                                                            \
    void *f_ = sym(lib, #name);                                \
    if (!f_ && !missing) missing = #name;                      \
    memcpy(&p_##name, &f_, sizeof f_);                         \
  }
  CU_FUNCS(CU_RESOLVE)
  if (missing) {
    snprintf(driver_why, sizeof driver_why, "libcuda.so.1 has no %s", missing);
    return false;
  }
  CU_GRAPH_FUNCS(CU_RESOLVE)
  graphs_loaded = !missing;
#undef CU_RESOLVE
  CUresult r = p_cuInit(0);
  if (r != CUDA_SUCCESS) {
    /* 34 CUDA_ERROR_STUB_LIBRARY: the toolkit's stub, not a driver; 100 CUDA_ERROR_NO_DEVICE */
    snprintf(driver_why, sizeof driver_why, "cuInit failed: %s (%d)", cu_name(r), r);
    return false;
  }
  int n = 0;
  if (p_cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
    snprintf(driver_why, sizeof driver_why, "no CUDA device found");
    return false;
  }
  driver_state = 1;
  return true;
}

static bool nvrtc_load(void) {
  if (nvrtc_state) return nvrtc_state > 0;
  nvrtc_state = -1;
  static const char *const paths[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                      "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so"};
  void *lib = NULL;
  for (size_t i = 0; i < TG_ARRAY_LEN(paths) && !lib; i++) lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(nvrtc_why, sizeof nvrtc_why, "libnvrtc.so not found (also tried /usr/local/cuda/lib64)");
    return false;
  }
  const char *missing = NULL;
#define NVRTC_RESOLVE(name, args)               \
  {                                             \
    void *f_ = dlsym(lib, #name);               \
    if (!f_ && !missing) missing = #name;       \
    memcpy(&p_##name, &f_, sizeof f_);          \
  }
  NVRTC_FUNCS(NVRTC_RESOLVE)
#undef NVRTC_RESOLVE
  void *es = dlsym(lib, "nvrtcGetErrorString");
  memcpy(&p_nvrtcGetErrorString, &es, sizeof es);
  if (missing) {
    snprintf(nvrtc_why, sizeof nvrtc_why, "libnvrtc has no %s", missing);
    return false;
  }
  if (p_nvrtcVersion(&nvrtc_major, &nvrtc_minor) != 0) {
    snprintf(nvrtc_why, sizeof nvrtc_why, "nvrtcVersion failed");
    return false;
  }
  nvrtc_state = 1;
  return true;
}

bool rt_nvrtc_available(const char **why) {
  pthread_mutex_lock(&load_lock);
  bool ok = nvrtc_load();
  pthread_mutex_unlock(&load_lock);
  if (why) *why = ok ? "" : nvrtc_why;
  return ok;
}

bool rt_cuda_available(const char **why) {
  RtDevice *d;
  if (rt_device_open("CUDA", &d) == TG_OK) {
    if (why) *why = "";
    return true;
  }
  if (why) *why = driver_why[0] ? driver_why : "the CUDA device could not be opened";
  return false;
}

/* ---- per-device state ---- */
#define STAGING_CHUNK ((size_t)16 << 20) /* pinned staging block size (copies are cut into chunks of it) */
#define STAGING_MAX 8                    /* blocks at most; all in flight -> wait for the stream */

typedef struct CudaProg { uint64_t hash; RtProgram *prog; } CudaProg;
typedef struct CudaDev {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  char gpu_name[128];
  CUevent ev_start, ev_end;    /* a timed launch's pair (under lock) */
  pthread_mutex_t lock;        /* staging and the program table */
  void *staging_free[STAGING_MAX], *staging_busy[STAGING_MAX];
  int nfree, nbusy, nstaging;
  TG_VEC(CudaProg) progs;
} CudaDev;

static CUresult use_ctx(CudaDev *c) { return p_cuCtxSetCurrent(c->ctx); }

static tg_status cuda_open(RtDevice *d) {
  pthread_mutex_lock(&load_lock);
  bool ok = driver_load();
  pthread_mutex_unlock(&load_lock);
  if (!ok) return tg_set_error(TG_ERR_RUNTIME, "no CUDA device: %s", driver_why);
  int n = 0;
  CU_CHECK(p_cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (d->index >= n)
    return tg_set_error(TG_ERR_RUNTIME, "no CUDA device %s: this machine has %d CUDA device%s", d->name, n,
                        n == 1 ? "" : "s");
  CudaDev *c = tg_calloc(1, sizeof *c);
  CUresult r = p_cuDeviceGet(&c->dev, d->index);
  int major = 0, minor = 0;
  if (r == CUDA_SUCCESS) r = p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev);
  if (r == CUDA_SUCCESS) r = p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev);
  if (r == CUDA_SUCCESS) r = p_cuDeviceGetName(c->gpu_name, (int)sizeof c->gpu_name, c->dev);
  if (r == CUDA_SUCCESS) r = p_cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
  if (r == CUDA_SUCCESS) r = use_ctx(c);
  if (r == CUDA_SUCCESS) r = p_cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
  if (r == CUDA_SUCCESS) r = p_cuEventCreate(&c->ev_start, 0);
  if (r == CUDA_SUCCESS) r = p_cuEventCreate(&c->ev_end, 0);
  if (r != CUDA_SUCCESS) {
    tg_free(c);
    return cu_fail("opening the device", r);
  }
  /* sm_90a: the Hopper a-target (wgmma, setmaxnreg); harmless for other code, and cubins need an exact arch anyway */
  snprintf(d->arch, sizeof d->arch, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
  pthread_mutex_init(&c->lock, NULL);
  d->impl = c;
  if (tg_debug_level() >= 1) printf("CUDA: %s is %s (%s)\n", d->name, c->gpu_name, d->arch);
  return TG_OK;
}

static bool cuda_raw_alloc(RtDevice *d, size_t size, uint64_t *addr, size_t *extra) {
  CudaDev *c = d->impl;
  CUdeviceptr p = 0;
  *extra = 0;
  if (use_ctx(c) != CUDA_SUCCESS || p_cuMemAlloc(&p, size) != CUDA_SUCCESS) return false;
  *addr = p;
  return true;
}

static void cuda_raw_free(RtDevice *d, uint64_t addr, size_t size, size_t extra) {
  TG_UNUSED(size);
  TG_UNUSED(extra);
  CudaDev *c = d->impl;
  /* the stream may still use the block (a kernel queued before its buffer died): wait for it */
  use_ctx(c);
  p_cuStreamSynchronize(c->stream);
  p_cuMemFree(addr);
}

/* Every busy staging block is free again once the stream has drained. Under c->lock. */
static tg_status drain_locked(CudaDev *c) {
  CU_CHECK(p_cuStreamSynchronize(c->stream), "cuStreamSynchronize");
  while (c->nbusy) c->staging_free[c->nfree++] = c->staging_busy[--c->nbusy];
  return TG_OK;
}

static tg_status cuda_synchronize(RtDevice *d) {
  CudaDev *c = d->impl;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  pthread_mutex_lock(&c->lock);
  tg_status st = drain_locked(c);
  pthread_mutex_unlock(&c->lock);
  return st;
}

/* A staging block for the next chunk (under c->lock): a free one, a new one, or (all in flight) the oldest after
 * the stream has drained. */
static tg_status staging_get(CudaDev *c, void **out) {
  if (!c->nfree && c->nstaging < STAGING_MAX) {
    void *p = NULL;
    CUresult r = p_cuMemHostAlloc(&p, STAGING_CHUNK, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_SUCCESS) {
      c->nstaging++;
      c->staging_free[c->nfree++] = p;
    } else if (!c->nstaging) {
      return cu_fail("cuMemHostAlloc (pinned staging)", r);
    }
  }
  if (!c->nfree) {
    tg_status st = drain_locked(c);
    if (st != TG_OK) return st;
  }
  *out = c->staging_free[--c->nfree];
  return TG_OK;
}

static tg_status cuda_copyin(RtDevice *d, uint64_t dst, const void *src, size_t nbytes) {
  CudaDev *c = d->impl;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  pthread_mutex_lock(&c->lock);
  tg_status st = TG_OK;
  for (size_t done = 0; done < nbytes && st == TG_OK;) {
    size_t n = TG_MIN(STAGING_CHUNK, nbytes - done);
    void *stage = NULL;
    st = staging_get(c, &stage);
    if (st != TG_OK) break;
    memcpy(stage, (const unsigned char *)src + done, n);
    CUresult r = p_cuMemcpyHtoDAsync(dst + done, stage, n, c->stream);
    c->staging_busy[c->nbusy++] = stage;
    if (r != CUDA_SUCCESS) st = cu_fail("cuMemcpyHtoDAsync", r);
    done += n;
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

static tg_status cuda_copyout(RtDevice *d, void *dst, uint64_t src, size_t nbytes) {
  CudaDev *c = d->impl;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  pthread_mutex_lock(&c->lock);
  tg_status st = drain_locked(c);
  pthread_mutex_unlock(&c->lock);
  if (st != TG_OK) return st;
  CU_CHECK(p_cuMemcpyDtoHAsync(dst, src, nbytes, c->stream), "cuMemcpyDtoHAsync");
  CU_CHECK(p_cuStreamSynchronize(c->stream), "cuStreamSynchronize");
  return TG_OK;
}

static tg_status cuda_transfer(RtDevice *d, uint64_t dst, RtDevice *src_dev, uint64_t src, size_t nbytes) {
  CudaDev *c = d->impl, *sc = src_dev->impl;
  if (sc == c) {
    CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
    CU_CHECK(p_cuMemcpyDtoDAsync(dst, src, nbytes, c->stream), "cuMemcpyDtoDAsync");
    return TG_OK;
  }
  /* the source's queued writes first; the destination's stream orders the rest */
  CU_CHECK(use_ctx(sc), "cuCtxSetCurrent");
  CU_CHECK(p_cuStreamSynchronize(sc->stream), "cuStreamSynchronize");
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  CU_CHECK(p_cuMemcpyPeerAsync(dst, c->ctx, src, sc->ctx, nbytes, c->stream), "cuMemcpyPeerAsync");
  /* and done before returning: the source's stream knows nothing of this copy, so a later kernel there must not
   * overwrite the source (a reused block) while it is still read */
  CU_CHECK(p_cuStreamSynchronize(c->stream), "cuStreamSynchronize");
  return TG_OK;
}

/* ---- NVRTC compile ---- */
typedef struct NvrtcJob {
  const char *name, *src, *arch;
  unsigned char *cubin;
  size_t len;
  char *log;          /* on failure: the NVRTC log (heap) */
  nvrtcResult err;
  const char *stage;  /* which call failed */
} NvrtcJob;

static const char *nvrtc_err(nvrtcResult r) { return p_nvrtcGetErrorString ? p_nvrtcGetErrorString(r) : "NVRTC error"; }

/* The options: the arch, and --minimal (no default headers: the renderer is header-free) from NVRTC 12.4. */
static int nvrtc_options(const char *arch, char arch_opt[64], const char *opts[4]) {
  snprintf(arch_opt, 64, "--gpu-architecture=%s", arch);
  int n = 0;
  opts[n++] = arch_opt;
  if (nvrtc_major > 12 || (nvrtc_major == 12 && nvrtc_minor >= 4)) opts[n++] = "--minimal";
  return n;
}

static char *nvrtc_key(const char *arch, const char *name, const char *src) {
  char arch_opt[64];
  const char *opts[4];
  int n = nvrtc_options(arch, arch_opt, opts);
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "cuda1\nnvrtc %d.%d\n", nvrtc_major, nvrtc_minor);
  for (int i = 0; i < n; i++) sb_printf(&b, "%s%s", i ? " " : "", opts[i]);
  sb_printf(&b, "\n%s\n%s", name, src);
  return sb_take(&b);
}

static void nvrtc_run(NvrtcJob *j) {
  char arch_opt[64];
  const char *opts[4];
  int nopts = nvrtc_options(j->arch, arch_opt, opts);
  nvrtcProgram prog = NULL;
  char file[300];
  snprintf(file, sizeof file, "%s.cu", j->name);
  j->stage = "nvrtcCreateProgram";
  if ((j->err = p_nvrtcCreateProgram(&prog, j->src, file, 0, NULL, NULL)) != 0) return;
  j->stage = "nvrtcCompileProgram";
  j->err = p_nvrtcCompileProgram(prog, nopts, opts);
  if (j->err != 0) {
    size_t n = 0;
    if (p_nvrtcGetProgramLogSize(prog, &n) == 0 && n) {
      j->log = tg_malloc(n + 1);
      if (p_nvrtcGetProgramLog(prog, j->log) != 0) j->log[0] = 0;
      j->log[n] = 0;
    }
  } else {
    j->stage = "nvrtcGetCUBIN";
    size_t n = 0;
    if ((j->err = p_nvrtcGetCUBINSize(prog, &n)) == 0) {
      j->cubin = tg_malloc(n ? n : 1);
      if ((j->err = p_nvrtcGetCUBIN(prog, (char *)j->cubin)) == 0) j->len = n;
      else tg_free(j->cubin), j->cubin = NULL;
    }
  }
  p_nvrtcDestroyProgram(&prog);
}

typedef struct Pool { NvrtcJob *jobs; size_t n; size_t next; pthread_mutex_t lock; } Pool;
static void *pool_worker(void *arg) {
  Pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    size_t i = p->next++;
    pthread_mutex_unlock(&p->lock);
    if (i >= p->n) return NULL;
    nvrtc_run(&p->jobs[i]);
  }
}

/* Compile the jobs on up to one thread per core (NVRTC programs are independent). */
static void nvrtc_run_all(NvrtcJob *jobs, size_t n) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nthreads = (size_t)TG_MAX(1, TG_MIN((long)n, TG_MIN(cores, 32))) - 1;
  Pool p = {jobs, n, 0, PTHREAD_MUTEX_INITIALIZER};
  pthread_t th[32];
  size_t started = 0;
  for (; started < nthreads; started++)
    if (pthread_create(&th[started], NULL, pool_worker, &p) != 0) break;
  pool_worker(&p);
  for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* Cached cubin, or NVRTC; the failure message carries the NVRTC log and the source. */
static tg_status nvrtc_get(NvrtcJob *jobs, size_t n, char **keys) {
  NvrtcJob **miss = tg_calloc(n ? n : 1, sizeof *miss);
  size_t nmiss = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t lib_id;
    char *symbol = NULL;
    if (rt_diskcache_lookup(keys[i], &lib_id, &symbol)) {
      jobs[i].cubin = rt_diskcache_load_lib(lib_id, &jobs[i].len);
      tg_free(symbol);
      if (jobs[i].cubin) continue;
    }
    miss[nmiss++] = &jobs[i];
  }
  if (nmiss) {
    NvrtcJob *todo = tg_calloc(nmiss, sizeof *todo);
    for (size_t i = 0; i < nmiss; i++) todo[i] = *miss[i];
    nvrtc_run_all(todo, nmiss);
    for (size_t i = 0; i < nmiss; i++) *miss[i] = todo[i];
    tg_free(todo);
  }
  tg_status st = TG_OK;
  StrBuf m;
  sb_init(&m);
  for (size_t i = 0; i < n; i++) {
    NvrtcJob *j = &jobs[i];
    if (j->cubin) continue;
    if (st == TG_OK) sb_printf(&m, "rt_compile: NVRTC %d.%d (%s) failed on", nvrtc_major, nvrtc_minor, j->arch);
    sb_printf(&m, " %s", j->name);
    st = TG_ERR_RUNTIME;
  }
  if (st != TG_OK) {
    sb_puts(&m, ":\n");
    for (size_t i = 0; i < n; i++) {
      NvrtcJob *j = &jobs[i];
      if (j->cubin) continue;
      sb_printf(&m, "%s: %s: %s\n%s\n--- source of %s ---\n%s\n", j->name, j->stage, nvrtc_err(j->err),
                j->log && *j->log ? j->log : "(no log)", j->name, j->src);
    }
    char *log = sb_take(&m);
    tg_set_error(TG_ERR_RUNTIME, "%s", log);
    rt_set_compile_log(log);
  } else {
    sb_free(&m);
    for (size_t i = 0; i < nmiss; i++) {
      const char *sym_name = miss[i]->name;
      size_t k = (size_t)(miss[i] - jobs);
      rt_diskcache_store(miss[i]->cubin, miss[i]->len, (const char *const *)&keys[k], &sym_name, 1);
    }
  }
  tg_free(miss);
  return st;
}

static void jobs_free(NvrtcJob *jobs, char **keys, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tg_free(jobs[i].cubin);
    tg_free(jobs[i].log);
    tg_free(keys[i]);
  }
  tg_free(jobs);
  tg_free(keys);
}

tg_status rt_nvrtc_compile(const char *name, const char *src, const char *arch, unsigned char **cubin, size_t *len) {
  *cubin = NULL;
  *len = 0;
  if (!rt_is_identifier(name) || !src || !arch || !*arch)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_nvrtc_compile: a C identifier, a source and an arch are needed");
  const char *why;
  if (!rt_nvrtc_available(&why)) return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: NVRTC not available: %s", why);
  NvrtcJob *jobs = tg_calloc(1, sizeof *jobs);
  char **keys = tg_calloc(1, sizeof *keys);
  jobs[0] = (NvrtcJob){.name = name, .src = src, .arch = arch};
  keys[0] = nvrtc_key(arch, name, src);
  tg_status st = nvrtc_get(jobs, 1, keys);
  if (st == TG_OK) {
    *cubin = jobs[0].cubin;
    *len = jobs[0].len;
    jobs[0].cubin = NULL;
  }
  jobs_free(jobs, keys, 1);
  return st;
}

/* ---- programs ---- */
static RtProgram *prog_find(CudaDev *c, const char *key, uint64_t h) {
  for (size_t i = 0; i < c->progs.len; i++)
    if (c->progs.data[i].hash == h && strcmp(c->progs.data[i].prog->key, key) == 0) return c->progs.data[i].prog;
  return NULL;
}

static tg_status program_load(RtDevice *d, const NvrtcJob *j, const char *key, RtProgram **out) {
  CudaDev *c = d->impl;
  RtParsedParams ps = {0};
  tg_status st = rt_parse_signature(j->name, j->src, &ps);
  if (st != TG_OK) return st;
  for (size_t i = 0; i < ps.len && st == TG_OK; i++)
    if (!ps.data[i].is_pointer && !rt_scalar_type_bytes(ps.data[i].type))
      st = tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: CUDA kernel %s: parameter type '%s' not supported yet", j->name,
                        ps.data[i].type);
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUresult r = CUDA_SUCCESS;
  if (st == TG_OK && (r = p_cuModuleLoadData(&mod, j->cubin)) != CUDA_SUCCESS) st = cu_fail("cuModuleLoadData", r);
  if (st == TG_OK && (r = p_cuModuleGetFunction(&fn, mod, j->name)) != CUDA_SUCCESS)
    st = cu_fail("cuModuleGetFunction (is the kernel extern \"C\" __global__?)", r);
  /* dynamic shared memory: a source that declares `#define TG_DYNAMIC_SMEM_BYTES n` (the GEMM templates) is launched
   * with n bytes, allowed past the 48 KiB default by the function attribute */
  int dyn_smem = 0;
  const char *ds = strstr(j->src, "#define TG_DYNAMIC_SMEM_BYTES ");
  if (ds) dyn_smem = atoi(ds + strlen("#define TG_DYNAMIC_SMEM_BYTES "));
  if (st == TG_OK && dyn_smem > 0 &&
      (r = p_cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn_smem)) != CUDA_SUCCESS)
    st = cu_fail("cuFuncSetAttribute (dynamic shared memory)", r);
  if (st != TG_OK) {
    rt_parsed_free(&ps);
    return st;
  }
  RtProgram *p = tg_calloc(1, sizeof *p);
  p->key = tg_strdup(key);
  p->name = tg_strdup(j->name);
  p->ops = &rt_cuda_ops;
  p->device = d;
  p->module = mod;
  p->function = fn;
  p->dyn_smem = dyn_smem;
  p->nparams = (int)ps.len;
  p->params = tg_calloc(ps.len ? ps.len : 1, sizeof *p->params);
  p->core_id_param = -1;
  for (size_t i = 0; i < ps.len; i++) {
    p->params[i].is_pointer = ps.data[i].is_pointer;
    p->params[i].value_bytes = ps.data[i].is_pointer ? 8 : rt_scalar_type_bytes(ps.data[i].type);
    snprintf(p->params[i].name, sizeof p->params[i].name, "%s", ps.data[i].name);
  }
  rt_parsed_free(&ps);
  CudaProg cp = {tg_hash_bytes(key, strlen(key), 0xc0da), p};
  tg_vec_push(&c->progs, cp);
  *out = p;
  return TG_OK;
}

static tg_status cuda_compile_many(RtDevice *d, const RtKernelSource *ks, size_t n, RtProgram **out) {
  CudaDev *c = d->impl;
  for (size_t i = 0; i < n; i++)
    if (!rt_is_identifier(ks[i].name) || !ks[i].src)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_compile: kernel %zu: the name must be a C identifier and the "
                          "source non-NULL (name '%s')", i, ks[i].name ? ks[i].name : "(null)");
  const char *why;
  if (!rt_nvrtc_available(&why))
    return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: compiling for %s needs NVRTC: %s", d->name, why);
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  NvrtcJob *jobs = tg_calloc(n ? n : 1, sizeof *jobs);
  char **keys = tg_calloc(n ? n : 1, sizeof *keys);
  RtProgram **found = tg_calloc(n ? n : 1, sizeof *found);
  size_t nnew = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < n; i++) {
    char *key = nvrtc_key(d->arch, ks[i].name, ks[i].src);
    if ((found[i] = prog_find(c, key, tg_hash_bytes(key, strlen(key), 0xc0da)))) {
      tg_free(key);
      continue;
    }
    jobs[nnew] = (NvrtcJob){.name = ks[i].name, .src = ks[i].src, .arch = d->arch};
    keys[nnew++] = key;
  }
  pthread_mutex_unlock(&c->lock);
  tg_status st = nnew ? nvrtc_get(jobs, nnew, keys) : TG_OK;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0, k = 0; i < n && st == TG_OK; i++) {
    if (found[i]) continue;
    /* the same kernel twice in the batch, or loaded by another thread meanwhile */
    uint64_t h = tg_hash_bytes(keys[k], strlen(keys[k]), 0xc0da);
    if (!(found[i] = prog_find(c, keys[k], h))) st = program_load(d, &jobs[k], keys[k], &found[i]);
    k++;
  }
  pthread_mutex_unlock(&c->lock);
  if (st == TG_OK) memcpy(out, found, n * sizeof *out);
  jobs_free(jobs, keys, nnew);
  tg_free(found);
  return st;
}

/* ---- launch ---- */
typedef struct CudaArgs { _Alignas(8) unsigned char store[RT_MAX_PARAMS][8]; void *params[RT_MAX_PARAMS]; } CudaArgs;

/* Check a launch's arguments and lay them out as kernelParams: one pointer per parameter to its value, stored at the
 * parameter's width. */
static tg_status encode_args(const RtProgram *p, const uint64_t *bufs, const long long *vals, int nargs,
                             const int64_t grid[3], const int64_t block[3], CudaArgs *a) {
  if (nargs != p->nparams)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: %s takes %d arguments, got %d", p->name, p->nparams,
                        nargs);
  for (int k = 0; k < 3; k++)
    if (grid[k] < 1 || grid[k] > (k ? 65535 : 2147483647) || block[k] < 1 || block[k] > 1024)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: %s: grid {%lld,%lld,%lld} block {%lld,%lld,%lld} "
                          "out of range", p->name, (long long)grid[0], (long long)grid[1], (long long)grid[2],
                          (long long)block[0], (long long)block[1], (long long)block[2]);
  for (int i = 0; i < nargs; i++) {
    const RtParam *pa = &p->params[i];
    if (pa->is_pointer) {
      if (!bufs || !bufs[i])
        return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: %s: buffer argument %d is NULL", p->name, i);
      memcpy(a->store[i], &bufs[i], 8);
    } else {
      if (!vals)
        return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_device_launch: %s: argument %d is a value but vals is NULL",
                            p->name, i);
      long long v = vals[i];
      int8_t v1 = (int8_t)v;
      int16_t v2 = (int16_t)v;
      int32_t v4 = (int32_t)v;
      if (pa->value_bytes == 1) memcpy(a->store[i], &v1, 1);
      else if (pa->value_bytes == 2) memcpy(a->store[i], &v2, 2);
      else if (pa->value_bytes == 4) memcpy(a->store[i], &v4, 4);
      else memcpy(a->store[i], &v, 8);
    }
    a->params[i] = a->store[i];
  }
  return TG_OK;
}

static tg_status cuda_launch(RtDevice *d, const RtProgram *p, const uint64_t *bufs, const long long *vals, int nargs,
                             const int64_t grid[3], const int64_t block[3], double *seconds) {
  CudaDev *c = d->impl;
  CudaArgs args;
  tg_status est = encode_args(p, bufs, vals, nargs, grid, block, &args);
  if (est != TG_OK) return est;
  void **params = args.params;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  if (!seconds) {
    CUresult r = p_cuLaunchKernel(p->function, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                                  (unsigned)block[0], (unsigned)block[1], (unsigned)block[2], (unsigned)p->dyn_smem, c->stream,
                                  params, NULL);
    return r == CUDA_SUCCESS ? TG_OK : cu_fail("cuLaunchKernel", r);
  }
  /* timed: events around the launch on the stream, then wait for the second (tinygrad cu_time_execution) */
  pthread_mutex_lock(&c->lock);
  float ms = 0;
  tg_status st = TG_OK;
  CUresult r = p_cuEventRecord(c->ev_start, c->stream);
  if (r != CUDA_SUCCESS) st = cu_fail("cuEventRecord", r);
  if (st == TG_OK && (r = p_cuLaunchKernel(p->function, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                                           (unsigned)block[0], (unsigned)block[1], (unsigned)block[2],
                                           (unsigned)p->dyn_smem, c->stream, params, NULL)) != CUDA_SUCCESS)
    st = cu_fail("cuLaunchKernel", r);
  if (st == TG_OK && (r = p_cuEventRecord(c->ev_end, c->stream)) != CUDA_SUCCESS) st = cu_fail("cuEventRecord", r);
  if (st == TG_OK && (r = p_cuEventSynchronize(c->ev_end)) != CUDA_SUCCESS) st = cu_fail("kernel execution", r);
  if (st == TG_OK && (r = p_cuEventElapsedTime(&ms, c->ev_start, c->ev_end)) != CUDA_SUCCESS)
    st = cu_fail("cuEventElapsedTime", r);
  pthread_mutex_unlock(&c->lock);
  *seconds = ms * 1e-3;
  return st;
}

/* ---- graphs (tinygrad runtime/graph/cuda.py CUDAGraph) ---- */
typedef struct CudaGraph { CUgraph graph; CUgraphExec exec; CUgraphNode *nodes; size_t n; } CudaGraph;

static bool cuda_graph_available(RtDevice *d) {
  TG_UNUSED(d);
  return graphs_loaded;
}

static tg_status kernel_node_params(const RtGraphNode *node, CudaArgs *a, CudaKernelNodeParams *kp) {
  tg_status st = encode_args(node->prog, node->bufs, node->vals, node->nargs, node->grid, node->block, a);
  if (st != TG_OK) return st;
  memset(kp, 0, sizeof *kp);
  kp->func = node->prog->function;
  kp->grid_x = (unsigned)node->grid[0], kp->grid_y = (unsigned)node->grid[1], kp->grid_z = (unsigned)node->grid[2];
  kp->block_x = (unsigned)node->block[0], kp->block_y = (unsigned)node->block[1], kp->block_z = (unsigned)node->block[2];
  kp->kernel_params = a->params;
  return TG_OK;
}

static void graph_destroy(CudaGraph *g) {
  if (g->exec) p_cuGraphExecDestroy(g->exec);
  if (g->graph) p_cuGraphDestroy(g->graph);
  tg_free(g->nodes);
  tg_free(g);
}

static tg_status cuda_graph_new(RtDevice *d, const RtGraphNode *nodes, size_t n, const uint32_t *start,
                                const uint32_t *deps, void **out) {
  CudaDev *c = d->impl;
  if (!graphs_loaded) return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: this CUDA driver has no graph entry points");
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  CudaGraph *g = tg_calloc(1, sizeof *g);
  g->nodes = tg_calloc(n, sizeof *g->nodes);
  g->n = n;
  CUresult r = p_cuGraphCreate(&g->graph, 0);
  tg_status st = r == CUDA_SUCCESS ? TG_OK : cu_fail("cuGraphCreate", r);
  CUgraphNode *dep_nodes = tg_calloc(n + 1, sizeof *dep_nodes);
  for (size_t i = 0; i < n && st == TG_OK; i++) {
    CudaArgs a;
    CudaKernelNodeParams kp;
    st = kernel_node_params(&nodes[i], &a, &kp);
    if (st != TG_OK) break;
    size_t nd = 0;
    for (uint32_t k = start[i]; k < start[i + 1]; k++) dep_nodes[nd++] = g->nodes[deps[k]];
    r = p_cuGraphAddKernelNode(&g->nodes[i], g->graph, nd ? dep_nodes : NULL, nd, &kp);
    if (r != CUDA_SUCCESS) st = cu_fail("cuGraphAddKernelNode", r);
  }
  tg_free(dep_nodes);
  if (st == TG_OK && (r = p_cuGraphInstantiateWithFlags(&g->exec, g->graph, 0)) != CUDA_SUCCESS)
    st = cu_fail("cuGraphInstantiateWithFlags", r);
  if (st != TG_OK) {
    graph_destroy(g);
    return st;
  }
  *out = g;
  return TG_OK;
}

static tg_status cuda_graph_set(RtDevice *d, void *graph, size_t i, const RtGraphNode *node) {
  CudaDev *c = d->impl;
  CudaGraph *g = graph;
  CudaArgs a;
  CudaKernelNodeParams kp;
  tg_status st = kernel_node_params(node, &a, &kp);
  if (st != TG_OK) return st;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  CU_CHECK(p_cuGraphExecKernelNodeSetParams(g->exec, g->nodes[i], &kp), "cuGraphExecKernelNodeSetParams");
  return TG_OK;
}

static tg_status cuda_graph_launch(RtDevice *d, void *graph, double *seconds) {
  CudaDev *c = d->impl;
  CudaGraph *g = graph;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  if (!seconds) {
    CU_CHECK(p_cuGraphLaunch(g->exec, c->stream), "cuGraphLaunch");
    return TG_OK;
  }
  pthread_mutex_lock(&c->lock);
  float ms = 0;
  tg_status st = TG_OK;
  CUresult r = p_cuEventRecord(c->ev_start, c->stream);
  if (r != CUDA_SUCCESS) st = cu_fail("cuEventRecord", r);
  if (st == TG_OK && (r = p_cuGraphLaunch(g->exec, c->stream)) != CUDA_SUCCESS) st = cu_fail("cuGraphLaunch", r);
  if (st == TG_OK && (r = p_cuEventRecord(c->ev_end, c->stream)) != CUDA_SUCCESS) st = cu_fail("cuEventRecord", r);
  if (st == TG_OK && (r = p_cuEventSynchronize(c->ev_end)) != CUDA_SUCCESS) st = cu_fail("graph execution", r);
  if (st == TG_OK && (r = p_cuEventElapsedTime(&ms, c->ev_start, c->ev_end)) != CUDA_SUCCESS)
    st = cu_fail("cuEventElapsedTime", r);
  pthread_mutex_unlock(&c->lock);
  *seconds = ms * 1e-3;
  return st;
}

static void cuda_graph_free(RtDevice *d, void *graph) {
  CudaDev *c = d->impl;
  use_ctx(c);
  p_cuStreamSynchronize(c->stream); /* a launch of it may still be queued */
  graph_destroy(graph);
}

/* ---- timing marks (tg_mark_record): a CUDA event recorded on the device's stream (torch.cuda.Event) ---- */
static tg_status cuda_mark_new(RtDevice *d, void **mark) {
  CudaDev *c = d->impl;
  CUevent e = NULL;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  CU_CHECK(p_cuEventCreate(&e, 0), "cuEventCreate");
  CUresult r = p_cuEventRecord(e, c->stream);
  if (r != CUDA_SUCCESS) {
    p_cuEventDestroy(e);
    return cu_fail("cuEventRecord", r);
  }
  *mark = e;
  return TG_OK;
}

static tg_status cuda_mark_elapsed(RtDevice *d, void *start, void *end, double *seconds) {
  CudaDev *c = d->impl;
  float ms = 0;
  CU_CHECK(use_ctx(c), "cuCtxSetCurrent");
  CU_CHECK(p_cuEventSynchronize((CUevent)end), "waiting for a mark");
  CU_CHECK(p_cuEventElapsedTime(&ms, (CUevent)start, (CUevent)end), "cuEventElapsedTime");
  *seconds = ms * 1e-3;
  return TG_OK;
}

static void cuda_mark_free(RtDevice *d, void *mark) {
  CudaDev *c = d->impl;
  if (use_ctx(c) == CUDA_SUCCESS) p_cuEventDestroy((CUevent)mark);
}

const RtDeviceOps rt_cuda_ops = {
    .kind = "CUDA",
    .host_memory = false,
    .open = cuda_open,
    .raw_alloc = cuda_raw_alloc,
    .raw_free = cuda_raw_free,
    .copyin = cuda_copyin,
    .copyout = cuda_copyout,
    .transfer = cuda_transfer,
    .compile_many = cuda_compile_many,
    .launch = cuda_launch,
    .synchronize = cuda_synchronize,
    .graph_available = cuda_graph_available,
    .graph_new = cuda_graph_new,
    .graph_set = cuda_graph_set,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
    .mark_new = cuda_mark_new,
    .mark_elapsed = cuda_mark_elapsed,
    .mark_free = cuda_mark_free,
};
