/* runtime.h — the devices (DESIGN.md decisions 5 and 6; tinygrad device.py, runtime/ops_cpu.py, ops_cuda.py,
 * helpers.py cache): a registry of devices by name, each one implementation of one device interface (allocate,
 * copy in/out, transfer, compile a batch, launch, synchronize, timing), with a reusing allocator above it.
 *   CPU ("CPU", "CPU:n"): memory from mmap/aligned_alloc, kernels compiled in batches by the system C compiler and
 *     loaded with dlopen, a persistent thread pool that runs a kernel's core_id pieces.
 *   CUDA ("CUDA", "CUDA:n"): libcuda.so.1 and NVRTC loaded with dlopen at run time (the build never needs CUDA), the
 *     primary context and one stream per device, NVRTC to cubin for the device's arch, pinned staging for copies.
 * Both share the disk cache of compiled code.
 *
 * Independent of the IR: it takes source strings and device addresses. Thread-safe (one lock per part); a launch
 * from several threads at once is serialized on the pool.
 *
 * Knobs (tinygrad's names): CC (compiler, default clang, else gcc, else cc), CACHELEVEL (0: no disk cache),
 * CACHEDB (the sqlite file, default $XDG_CACHE_HOME or ~/.cache, then tinygrad.c/cache.db), NUM_CPU_THREADS (pool
 * size, default the online CPUs), LRU (0: freed buffers go straight back to the OS). */
#ifndef TG_RT_RUNTIME_H
#define TG_RT_RUNTIME_H

#include "base/base.h"

/* ============================================================================================== buffers
 * tinygrad's LRUAllocator: a freed block is kept in a pool keyed by its size and handed out again for the next
 * request of exactly that size; when the system refuses memory, the pool is released and the request retried.
 * Blocks of RT_HUGE_THRESHOLD bytes or more are mmap'ed 2 MiB-aligned with madvise(MADV_HUGEPAGE) (first touch of a
 * 4 KiB page costs 11-14 us on these machines); smaller ones come from aligned_alloc (64-byte aligned). */
typedef struct RtBuffer RtBuffer;
#define RT_HUGE_THRESHOLD ((size_t)1 << 21)

/* A buffer of nbytes on `device` (a name rt_device_open takes; NULL means the default device). nbytes 0 is allowed
 * (a valid, empty buffer). Contents are unspecified (a reused block keeps old bytes). Errors: unknown device
 * (TG_ERR_UNSUPPORTED), a device that cannot be opened (its error), out of memory after flushing the pool
 * (TG_ERR_OUT_OF_MEMORY; nothing else is lost); *out is NULL then. */
tg_status rt_buffer_new(const char *device, size_t nbytes, RtBuffer **out);
typedef struct RtDevice RtDevice;
tg_status rt_buffer_new_on(RtDevice *device, size_t nbytes, RtBuffer **out);
/* A buffer on memory the caller owns (a mapped file, tg_gguf): `nbytes` at `host` on a host-memory device (the CPU),
 * never pooled and not counted by rt_mem_used; when its last reference (owner or view) goes, release(ctx) is called
 * instead. host must be RT_HOST_WRAP_ALIGN-aligned, like every block the CPU allocator gives (generated kernels may
 * use aligned vector accesses). Errors: a device that is not host memory (TG_ERR_UNSUPPORTED), a misaligned address;
 * release is not called then. */
#define RT_HOST_WRAP_ALIGN 64
tg_status rt_buffer_wrap_host(RtDevice *device, void *host, size_t nbytes, void (*release)(void *ctx), void *ctx,
                              RtBuffer **out);
/* A view of `nbytes` bytes at `offset` inside `base` (tinygrad Buffer views). It keeps the base alive; freeing the
 * base first is fine. Errors: the range exceeds the base. */
tg_status rt_buffer_view(RtBuffer *base, size_t offset, size_t nbytes, RtBuffer **out);
/* Drop the caller's reference; the block goes back to the pool when no view holds it. NULL is a no-op. */
void rt_buffer_free(RtBuffer *buf);
/* The host pointer of a buffer on a host-memory device (the CPU); NULL on others (a CUdeviceptr is no pointer). */
void *rt_buffer_ptr(const RtBuffer *buf);
/* The device address (base + offset for views): what a launch takes. */
uint64_t rt_buffer_addr(const RtBuffer *buf);
size_t rt_buffer_nbytes(const RtBuffer *buf);
RtDevice *rt_buffer_device(const RtBuffer *buf);
/* Copy host bytes in / out. nbytes + offset must fit the buffer (error otherwise, nothing copied). A copy in may
 * still be in flight when it returns (CUDA: from pinned staging, the source may be reused at once); a copy out
 * waits for the device's queued work first. */
tg_status rt_copyin(RtBuffer *dst, size_t offset, const void *src, size_t nbytes);
tg_status rt_copyout(const RtBuffer *src, size_t offset, void *dst, size_t nbytes);
/* Device to device (tinygrad Allocator._transfer, or through the host between kinds): nbytes from src+src_off to
 * dst+dst_off. Both ranges must fit. */
tg_status rt_transfer(RtBuffer *dst, size_t dst_off, const RtBuffer *src, size_t src_off, size_t nbytes);

/* Bytes of live (non-view) buffers on every device: tinygrad GlobalCounters.mem_used. */
size_t rt_mem_used(void);
/* Bytes held in the reuse pool, and the number of blocks there. */
size_t rt_mem_cached(void);
size_t rt_mem_cached_blocks(void);
/* The same for one device. */
size_t rt_device_mem_used(RtDevice *d);
size_t rt_device_mem_cached(RtDevice *d);
/* Release every pooled block of every device (tinygrad LRUAllocator.free_cache). */
void rt_free_cache(void);
/* Cap on bytes each device obtains from its backend (live + pooled); 0 = no cap (default). Beyond it a raw
 * allocation fails as if the device had refused, which triggers the flush-and-retry path. For memory budgets and
 * for tests. */
void rt_set_mem_limit(size_t bytes);

/* ============================================================================================== compiler
 * One request per kernel. `src` is a complete C translation unit defining `void <name>(...)` (tinygrad's rendered
 * kernel: vector typedefs + the function). Every kernel is called through a fixed ABI:
 *     void entry(void *const *bufs, const long long *vals)
 * where parameter i of the kernel receives bufs[i] when it is a pointer and (its type)vals[i] otherwise; both arrays
 * are indexed by parameter position (unused entries are ignored). `entry` names such a function defined in `src`
 * (render_c_entry writes one); NULL lets the runtime write it from the parsed signature of <name>. */
typedef struct RtKernelSource {
  const char *name;   /* the kernel function, e.g. "E_4_4" */
  const char *src;
  const char *entry;  /* fixed-ABI entry symbol in src, or NULL */
  /* CPU: the scalar parameter that receives the piece index of a split launch (tinygrad's core_id Variable, which
   * the renderer names like any Variable, "data3_"); NULL: the one named core_id. Ignored by CUDA. */
  const char *core_param;
} RtKernelSource;

/* A compiled kernel. Owned by the runtime and interned by (compiler, flags, name, src, entry): compiling the same
 * source again returns the same pointer. Valid for the life of the process. */
typedef struct RtProgram RtProgram;

#define RT_MAX_PARAMS 128
/* The kernel's parameters as parsed from its signature. */
typedef struct RtParam {
  bool is_pointer;
  int value_bytes;    /* a scalar's width as the signature declares it (4 for "const int"); 8 for a pointer */
  char name[64];      /* the parameter's name in the source ("data0_16", "core_id") */
} RtParam;

const char *rt_program_name(const RtProgram *p);
int rt_program_nparams(const RtProgram *p);
const RtParam *rt_program_param(const RtProgram *p, int i);
/* Index of the core_id parameter (RtKernelSource.core_param, else the one named "core_id"), or -1. */
int rt_program_core_id_param(const RtProgram *p);

/* Compile n kernels: those not in the in-process table or the disk cache go to ONE compiler process (one file per
 * kernel, one shared object), which is then dlopen'ed; cached ones are loaded from the cache's shared objects.
 * out[i] receives kernel i's program. On failure nothing is returned (out untouched) and the error names the
 * kernel(s), their source and the compiler's message (TG_ERR_RUNTIME), or the bad request (INVALID_ARGUMENT). */
tg_status rt_compile_many(const RtKernelSource *kernels, size_t n, RtProgram **out);
/* One kernel: rt_compile_many with n = 1. */
tg_status rt_compile(const RtKernelSource *kernel, RtProgram **out);

/* The full text of the last compile failure (compiler output + sources; tg_last_error() holds its first 1 KiB).
 * Valid until the next compile call. */
const char *rt_compile_log(void);

/* The compiler command's identity: "clang -O2 ..." (what the cache key holds). */
const char *rt_compiler_command(void);
/* Which compiler CC names (its words, resolved through PATH and symlinks): the C renderer writes the dialect that
 * compiler accepts (render.h RenderCDialect). OTHER for a wrapper script or an unknown name, and when no compiler
 * is found (the compile then fails with its own error). */
typedef enum RtCompilerFamily { RT_COMPILER_OTHER, RT_COMPILER_CLANG, RT_COMPILER_GCC } RtCompilerFamily;
RtCompilerFamily rt_compiler_family(void);

/* ============================================================================================== launch
 * Run a kernel. bufs/vals are indexed by parameter position (rt_compile_many's ABI); nargs must equal the
 * program's parameter count. With core_param >= 0 the kernel is split over cores: it runs once for every core id
 * 0..ncores-1 with vals[core_param] = core id, in parallel on the thread pool, and rt_launch returns when all are
 * done; core_param = -1 requires ncores = 1 (one call on the calling thread). *seconds (if not NULL) receives the
 * wall time of the whole launch (DEBUG=2's "tm"). */
tg_status rt_launch(const RtProgram *p, void *const *bufs, const long long *vals, int nargs, int core_param,
                    int ncores, double *seconds);

/* Threads of the pool including the caller (NUM_CPU_THREADS, default the online CPUs). */
int rt_num_threads(void);

/* ============================================================================================== devices
 * tinygrad's Device registry. Names are canonicalized as tinygrad does ("cuda:1" -> "CUDA:1", "CUDA:0" -> "CUDA");
 * "CPU" and "CPU:n" are the CPU (each its own memory pool), "CUDA" and "CUDA:n" the n-th NVIDIA GPU. A device is
 * opened once, on first use, and lives for the process. Errors: an unknown name (TG_ERR_UNSUPPORTED), a device
 * that cannot be opened (TG_ERR_RUNTIME: "no CUDA device: libcuda.so.1 not found", no GPU, index out of range). */
tg_status rt_device_open(const char *name, RtDevice **out);
const char *rt_device_name(const RtDevice *d);
/* The canonical name into out (size n); false (with the error) for a name no backend takes. */
bool rt_device_canonical(const char *name, char *out, size_t n);
/* Whether the device's memory is host memory (rt_buffer_ptr works). */
bool rt_device_is_host(const RtDevice *d);
/* CUDA: "sm_90a" on Hopper (compute capability 9.0), "sm_XY" otherwise; "" elsewhere. */
const char *rt_device_arch(const RtDevice *d);

/* Compile a batch for the device: the CPU compiles C (rt_compile_many); CUDA compiles CUDA C with NVRTC to cubin on
 * several threads, cached on disk by NVRTC version + arch + options + source, and loads it into the device's
 * context. A CUDA kernel is `extern "C" __global__ void <name>(...)`; its parameters are read from that signature
 * (pointers are device buffers, scalars are passed by value at their declared width). NVRTC failures carry the
 * NVRTC log (rt_compile_log). */
tg_status rt_device_compile_many(RtDevice *d, const RtKernelSource *kernels, size_t n, RtProgram **out);
/* Launch on the device: bufs[i] is the device address of pointer parameter i, vals[i] the value of scalar
 * parameter i (both indexed by parameter position). grid counts blocks, block threads per block (CUDA); on the CPU
 * block must be {1,1,1} and grid[0] is the number of core_id pieces (1 without a core_id parameter). Asynchronous
 * where the device is (CUDA), unless `seconds` is given: then it waits and stores the kernel's time (CUDA: events
 * around the launch; CPU: the wall time). */
tg_status rt_device_launch(RtDevice *d, const RtProgram *p, const uint64_t *bufs, const long long *vals, int nargs,
                           const int64_t grid[3], const int64_t block[3], double *seconds);
/* Wait for every queued copy and kernel of the device. */
tg_status rt_device_synchronize(RtDevice *d);

/* ============================================================================================== graphs
 * tinygrad's GraphRunner (runtime/graph/cuda.py CUDAGraph): a fixed list of kernel launches on one device, recorded
 * once and then launched as one unit; between launches the arguments of single nodes may change. A node waits for
 * the earlier nodes whose memory accesses conflict with its own (tinygrad's DepsTracker, here over byte ranges: a
 * read waits for the last writers of its range, a write also for the readers since); the rest may run concurrently.
 * CUDA: one cuGraph of kernel nodes, instantiated once, cuGraphExecKernelNodeSetParams for a changed node,
 * cuGraphLaunch on the device's stream. The CPU has none (rt_device_has_graph is false): launch one by one there. */
typedef struct RtGraph RtGraph;
/* One range a node touches. `any`: it may be any memory (a JIT input, rebound per launch): it conflicts with every
 * access that is a write, or every access when it is one. */
typedef struct RtGraphAccess { uint64_t addr; size_t nbytes; bool write, any; } RtGraphAccess;
typedef struct RtGraphNode {
  const RtProgram *prog;
  const uint64_t *bufs;        /* as rt_device_launch */
  const long long *vals;
  int nargs;
  int64_t grid[3], block[3];
  const RtGraphAccess *access; /* what it reads and writes */
  int naccess;
} RtGraphNode;
bool rt_device_has_graph(RtDevice *d);
/* A graph of the n nodes (n >= 1), all programs of device d. Errors: a device without graphs (TG_ERR_UNSUPPORTED),
 * bad launch arguments (as rt_device_launch), the driver's. */
tg_status rt_graph_new(RtDevice *d, const RtGraphNode *nodes, size_t n, RtGraph **out);
/* Node i's buffers and values from the next launch on (its program and block stay; its grid too unless grid is given:
 * a kernel whose grid follows a Variable's value, every dim at least 1). */
tg_status rt_graph_set(RtGraph *g, size_t i, const uint64_t *bufs, const long long *vals, const int64_t *grid);
/* Queue the whole graph (asynchronous, as a launch), or with `seconds`: wait and store its time. */
tg_status rt_graph_launch(RtGraph *g, double *seconds);
void rt_graph_free(RtGraph *g);
/* The dependencies rt_graph_new gives the nodes: node i waits for deps[start[i]] .. deps[start[i+1]-1] (earlier
 * nodes, latest first). *start has n+1 entries, both heap (caller frees). */
void rt_graph_deps(const RtGraphNode *nodes, size_t n, uint32_t **start, uint32_t **deps);

/* Can CUDA be used here? false with the reason (a static string: "libcuda.so.1 not found", "no CUDA device found",
 * the driver's error) when not. Opens "CUDA" to find out. */
bool rt_cuda_available(const char **why);
/* Can NVRTC be loaded? false with the reason. Independent of the driver: a machine without a GPU may compile. */
bool rt_nvrtc_available(const char **why);
/* Compile one CUDA C kernel to cubin for `arch` ("sm_90a") without a device (tinygrad DEV=NULL:CUDA): the cubin's
 * bytes into *cubin (heap, caller frees). The disk cache is used as for rt_device_compile_many. Errors:
 * NVRTC absent (TG_ERR_UNSUPPORTED), a compile failure (TG_ERR_RUNTIME, the NVRTC log in the message). */
tg_status rt_nvrtc_compile(const char *name, const char *src, const char *arch, unsigned char **cubin, size_t *len);

/* ============================================================================================== key/value cache
 * Small text values kept in the compile cache's database (tinygrad diskcache_get / diskcache_put), e.g. BEAM results:
 * table "<table>" + key -> value, in a table of their own (the compiled-code tables are not touched). Off when the
 * cache is off (CACHELEVEL=0, a database that cannot be opened). */
/* The stored value (heap copy, caller frees), or NULL when absent or the cache is off. */
char *rt_cache_get(const char *table, const char *key);
/* Store (replacing any old value); false when the cache is off or the write failed. */
bool rt_cache_put(const char *table, const char *key, const char *value);

/* ============================================================================================== stats, teardown */
typedef struct RtStats {
  long compiler_processes;  /* compiler invocations (each is one process started) */
  long kernels_compiled;    /* kernels built by those invocations */
  long disk_hits;           /* kernels loaded from the disk cache */
  long memory_hits;         /* kernels found already loaded in this process */
  double compile_seconds;   /* wall time spent in compiler processes */
  long launches;            /* kernel launches through the device interface, every device (a graph: one per node) */
  long programs_requested;  /* kernels asked of rt_device_compile_many on any device (built, cached or loaded) */
} RtStats;
RtStats rt_stats(void);

/* Start over: forget the interned programs (the next compile looks at the disk cache again), stop the thread pool,
 * release pooled memory, close the cache database. Live buffers and programs returned earlier stay valid (compiled
 * code is never unloaded). The runtime restarts lazily on the next call and reads CC, CACHELEVEL, CACHEDB,
 * NUM_CPU_THREADS again. */
void rt_shutdown(void);
/* Counts rt_shutdown calls. */
uint64_t rt_generation(void);

#endif
