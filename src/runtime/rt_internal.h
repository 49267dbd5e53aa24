/* rt_internal.h — what the runtime's files share and nobody else calls: the device table every backend fills in
 * (device.c dispatches through it; cpu.c and cuda.c implement it), the disk cache of compiled kernels (diskcache.c,
 * sqlite), the kernel signature parser (compile.c) and the thread pool's teardown (launch.c). */
#ifndef TG_RT_INTERNAL_H
#define TG_RT_INTERNAL_H

#include "runtime/runtime.h"

/* ---- disk cache (tinygrad helpers.diskcache over CACHEDB) ----
 * Two tables: shared objects (one per compiler invocation) and kernels (key -> shared object id + entry symbol).
 * The key is the full text "compiler command + kernel name + entry + source", so a hit can never be a collision.
 * Any sqlite failure disables the cache for the rest of the process (a warning at DEBUG>=1): compiling still works. */
bool rt_diskcache_enabled(void);
/* Found: true, with the library id and a heap copy of the entry symbol in *symbol. */
bool rt_diskcache_lookup(const char *key, int64_t *lib_id, char **symbol);
/* The shared object's bytes (heap, caller frees), or NULL. */
unsigned char *rt_diskcache_load_lib(int64_t lib_id, size_t *len);
/* Store one shared object and the kernels it holds; returns false when the cache is off or the write failed. */
bool rt_diskcache_store(const unsigned char *lib, size_t len, const char *const *keys, const char *const *symbols,
                        size_t n);
void rt_diskcache_close(void);

/* ---- the device table (tinygrad's Compiled + Allocator + Compiler + Program, one per backend) ----
 * Device memory is an address (uint64_t): a host pointer on the CPU, a CUdeviceptr on CUDA. The reusing allocator
 * (alloc.c) sits above raw_alloc/raw_free, one pool per device. */
typedef struct RtDeviceOps {
  const char *kind;           /* "CPU", "CUDA": the name before ':' */
  bool host_memory;           /* addresses are host pointers (rt_buffer_ptr works) */
  /* Open device `index` (d->name is already set); TG_OK or an error naming what is missing. */
  tg_status (*open)(RtDevice *d);
  /* A block of `size` bytes (size > 0); false when the device refuses (out of memory): the allocator then flushes
   * its pool and asks once more. *extra is the backend's bookkeeping, handed back to raw_free. */
  bool (*raw_alloc)(RtDevice *d, size_t size, uint64_t *addr, size_t *extra);
  void (*raw_free)(RtDevice *d, uint64_t addr, size_t size, size_t extra);
  tg_status (*copyin)(RtDevice *d, uint64_t dst, const void *src, size_t nbytes);
  tg_status (*copyout)(RtDevice *d, void *dst, uint64_t src, size_t nbytes);
  /* Device to device of the same kind (src_dev may be d itself). */
  tg_status (*transfer)(RtDevice *d, uint64_t dst, RtDevice *src_dev, uint64_t src, size_t nbytes);
  tg_status (*compile_many)(RtDevice *d, const RtKernelSource *ks, size_t n, RtProgram **out);
  tg_status (*launch)(RtDevice *d, const RtProgram *p, const uint64_t *bufs, const long long *vals, int nargs,
                      const int64_t grid[3], const int64_t block[3], double *seconds);
  tg_status (*synchronize)(RtDevice *d);
  /* Graphs (runtime.h), NULL where the device has none. graph_available says whether this device can make them
   * (the driver may lack the entry points); node i waits for deps[start[i]..start[i+1]). */
  bool (*graph_available)(RtDevice *d);
  tg_status (*graph_new)(RtDevice *d, const RtGraphNode *nodes, size_t n, const uint32_t *start, const uint32_t *deps,
                         void **graph);
  tg_status (*graph_set)(RtDevice *d, void *graph, size_t i, const RtGraphNode *node);
  tg_status (*graph_launch)(RtDevice *d, void *graph, double *seconds);
  void (*graph_free)(RtDevice *d, void *graph);
  /* Timing marks (tg_mark_record), NULL where the device's work is done when its calls return (the CPU: the host
   * clock is the mark): a marker queued on the device's stream; elapsed waits for `end`, then the device's seconds
   * from start to end. */
  tg_status (*mark_new)(RtDevice *d, void **mark);
  tg_status (*mark_elapsed)(RtDevice *d, void *start, void *end, double *seconds);
  void (*mark_free)(RtDevice *d, void *mark);
} RtDeviceOps;

/* One LRU pool slot: the blocks of one exact size. */
typedef struct RtBlock { uint64_t addr; size_t size, extra; } RtBlock;
typedef TG_VEC(RtBlock) RtBlockVec;
typedef struct RtPoolSlot { size_t size; bool used; RtBlockVec blocks; } RtPoolSlot;

struct RtDevice {
  char name[32];              /* canonical: "CPU", "CPU:1", "CUDA", "CUDA:1" */
  int index;                  /* the number after ':' (0 without one) */
  char arch[16];              /* CUDA: "sm_90a"; "" for the CPU */
  const RtDeviceOps *ops;
  void *impl;                 /* the backend's state */
  /* allocator state (alloc.c, under its lock) */
  RtPoolSlot *pool_slots;
  size_t pool_cap, pool_used_slots, pooled_bytes, pooled_blocks, live_bytes, raw_bytes;
};

extern const RtDeviceOps rt_cpu_ops, rt_cuda_ops;
/* Calls fn on every opened device (under the registry's lock; alloc.c calls it with its own lock held). */
void rt_device_each(void (*fn)(RtDevice *d, void *ctx), void *ctx);
/* Release one device's pooled blocks (the CUDA backend before it reports out of memory). */
void rt_device_free_cache(RtDevice *d);

/* ---- programs ---- */
typedef void (*RtEntryFn)(void *const *bufs, const long long *vals);
struct RtProgram {
  char *key;          /* CPU: "rt<abi>\n<compiler command>\n<name>\n<entry>\n<src>"; CUDA: device + NVRTC key */
  char *name;
  const RtDeviceOps *ops; /* the backend that compiled it */
  RtDevice *device;   /* CUDA: the device whose context loaded it; NULL for the CPU (any CPU device runs it) */
  RtEntryFn entry;    /* CPU */
  void *module, *function; /* CUDA: CUmodule, CUfunction */
  int dyn_smem;       /* CUDA: dynamic shared memory bytes per block (the source's TG_DYNAMIC_SMEM_BYTES), else 0 */
  int nparams;
  RtParam *params;
  int core_id_param;  /* the scalar parameter named core_id, or -1 */
};

/* ---- kernel signatures (compile.c): the parameters of `name(...)` in src ---- */
typedef struct RtParsedParam { bool is_pointer; char *type, *name; } RtParsedParam;
typedef TG_VEC(RtParsedParam) RtParsedParams;
tg_status rt_parse_signature(const char *name, const char *src, RtParsedParams *out);
void rt_parsed_free(RtParsedParams *ps);
/* The byte width of a scalar C type as the renderers spell them ("const int" 4, "long long" 8, "unsigned char" 1),
 * 0 for one this code does not know. */
int rt_scalar_type_bytes(const char *type);
bool rt_is_identifier(const char *s);
/* Replace the text rt_compile_log returns (takes the heap string). */
void rt_set_compile_log(char *log);

/* ---- allocator: read the LRU knob again on next use (rt_shutdown) ---- */
void rt_alloc_reread_knobs(void);

/* ---- thread pool ---- */
void rt_pool_shutdown(void);

/* ---- device.c counters ---- */
long rt_device_launch_count(void);       /* kernels launched on any device (graph nodes included) */
long rt_device_programs_requested(void); /* device.c: kernels asked of rt_device_compile_many */

#endif
