/* rt_internal.h — what the runtime's files share and nobody else calls: the disk cache of compiled kernels
 * (diskcache.c, sqlite) and the thread pool's teardown (launch.c). */
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

/* ---- programs (compile.c) ---- */
typedef void (*RtEntryFn)(void *const *bufs, const long long *vals);
struct RtProgram {
  char *key;          /* "rt<abi>\n<compiler command>\n<name>\n<entry>\n<src>": the interning and disk cache key */
  char *name;
  RtEntryFn entry;
  int nparams;
  RtParam *params;
  int core_id_param;  /* the scalar parameter named core_id, or -1 */
};

/* ---- allocator: read the LRU knob again on next use (rt_shutdown) ---- */
void rt_alloc_reread_knobs(void);

/* ---- thread pool ---- */
void rt_pool_shutdown(void);
long rt_launch_count(void);

#endif
