/* alloc.c — CPU device memory: tinygrad's LRUAllocator over mmap/aligned_alloc.
 *
 * A freed block goes into a pool keyed by its exact byte size and is handed out again for the next request of that
 * size (the first touch of a fresh 4 KiB page costs 11-14 us here, so reuse matters). When the OS (or the optional
 * byte cap) refuses a block, the pool is released and the request retried once. Large blocks are mmap'ed on a
 * 2 MiB boundary and marked MADV_HUGEPAGE so the kernel backs them with huge pages. Buffers may be viewed at an
 * offset; a block returns to the pool when its owner and all views are gone. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

#define HUGE_PAGE ((size_t)1 << 21)
#define SMALL_ALIGN ((size_t)64)

/* One block obtained from the OS. */
typedef struct Block {
  void *ptr;
  size_t size;     /* the requested size: the pool key */
  size_t map_len;  /* bytes mapped (mmap'ed blocks), 0 for aligned_alloc ones */
} Block;

struct RtBuffer {
  RtBuffer *base;  /* the owner this views into, NULL for an owner */
  size_t offset, nbytes;
  int refs;        /* owners: 1 for the owner handle + 1 per live view */
  bool owner_freed;
  Block block;     /* owners only */
};

/* The pool: open addressing over sizes, each slot a stack of blocks of that size. */
typedef TG_VEC(Block) BlockVec;
typedef struct PoolSlot { size_t size; bool used; BlockVec blocks; } PoolSlot;

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static PoolSlot *pool_slots;
static size_t pool_cap, pool_used_slots;
static size_t pooled_bytes, pooled_blocks;
static size_t live_bytes;      /* GlobalCounters.mem_used */
static size_t os_bytes;        /* obtained from the OS and not yet returned: live + pooled */
static size_t os_limit;        /* 0 = none */
static int lru_enabled = -1;   /* LRU knob, read once */
static _Alignas(64) unsigned char empty_block[64]; /* the address of every 0-byte buffer */

static size_t size_hash(size_t size) { return (size_t)tg_hash_mix(0x5bd1e995u, (uint64_t)size); }

static PoolSlot *pool_find(size_t size, bool create) {
  if (pool_cap == 0) {
    if (!create) return NULL;
    pool_cap = 64;
    pool_slots = tg_calloc(pool_cap, sizeof *pool_slots);
  }
  if (create && (pool_used_slots + 1) * 4 > pool_cap * 3) { /* grow at 75% load */
    PoolSlot *old = pool_slots;
    size_t old_cap = pool_cap;
    pool_cap *= 2;
    pool_slots = tg_calloc(pool_cap, sizeof *pool_slots);
    for (size_t i = 0; i < old_cap; i++) {
      if (!old[i].used) continue;
      size_t j = size_hash(old[i].size) & (pool_cap - 1);
      while (pool_slots[j].used) j = (j + 1) & (pool_cap - 1);
      pool_slots[j] = old[i];
    }
    tg_free(old);
  }
  size_t j = size_hash(size) & (pool_cap - 1);
  while (pool_slots[j].used) {
    if (pool_slots[j].size == size) return &pool_slots[j];
    j = (j + 1) & (pool_cap - 1);
  }
  if (!create) return NULL;
  pool_slots[j].used = true;
  pool_slots[j].size = size;
  pool_used_slots++;
  return &pool_slots[j];
}

/* Ask the OS for a block; false when refused (or over the cap). */
static bool os_alloc(size_t size, Block *out) {
  if (os_limit && (size > os_limit || os_bytes > os_limit - size)) return false;
  out->size = size;
  if (size >= RT_HUGE_THRESHOLD) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (size + page - 1) / page * page;
    if (len < size) return false; /* overflow */
    /* over-map by one huge page, then trim both ends so the block starts on a 2 MiB boundary */
    size_t span = len + HUGE_PAGE;
    if (span < len) return false;
    unsigned char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return false;
    uintptr_t start = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    size_t head = start - (uintptr_t)raw, tail = span - head - len;
    if (head) munmap(raw, head);
    if (tail) munmap((unsigned char *)start + len, tail);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, len, MADV_HUGEPAGE); /* advisory: without THP the block still works */
#endif
    out->ptr = (void *)start;
    out->map_len = len;
  } else {
    size_t len = (size + SMALL_ALIGN - 1) / SMALL_ALIGN * SMALL_ALIGN; /* aligned_alloc wants a multiple */
    if (len < size) return false;
    out->ptr = aligned_alloc(SMALL_ALIGN, len);
    if (!out->ptr) return false;
    out->map_len = 0;
  }
  os_bytes += size;
  return true;
}

static void os_free(const Block *b) {
  if (b->map_len) munmap(b->ptr, b->map_len);
  else free(b->ptr);
  os_bytes -= b->size;
}

static void free_cache_locked(void) {
  for (size_t i = 0; i < pool_cap; i++) {
    PoolSlot *s = &pool_slots[i];
    if (!s->used) continue;
    for (size_t k = 0; k < s->blocks.len; k++) os_free(&s->blocks.data[k]);
    tg_vec_free(&s->blocks);
  }
  tg_free(pool_slots);
  pool_slots = NULL;
  pool_cap = pool_used_slots = pooled_bytes = pooled_blocks = 0;
}

/* tinygrad LRUAllocator.alloc: reuse a pooled block of the same size, else the OS; on refusal flush and retry. */
static bool block_get(size_t size, Block *out) {
  PoolSlot *s = pool_find(size, false);
  if (s && s->blocks.len) {
    *out = s->blocks.data[--s->blocks.len];
    pooled_bytes -= size;
    pooled_blocks--;
    return true;
  }
  if (os_alloc(size, out)) return true;
  free_cache_locked();
  return os_alloc(size, out);
}

void rt_alloc_reread_knobs(void) {
  pthread_mutex_lock(&alloc_lock);
  lru_enabled = -1;
  pthread_mutex_unlock(&alloc_lock);
}

static void block_put(const Block *b) {
  if (lru_enabled < 0) lru_enabled = tg_getenv_int("LRU", 1) != 0;
  if (!lru_enabled) {
    os_free(b);
    return;
  }
  PoolSlot *s = pool_find(b->size, true);
  tg_vec_push(&s->blocks, *b);
  pooled_bytes += b->size;
  pooled_blocks++;
}

tg_status rt_buffer_new(const char *device, size_t nbytes, RtBuffer **out) {
  *out = NULL;
  if (device && strcmp(device, "CPU") != 0 && strncmp(device, "CPU:", 4) != 0)
    return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: device '%s' not supported yet (only CPU)", device);
  RtBuffer *b = tg_calloc(1, sizeof *b);
  b->nbytes = nbytes;
  b->refs = 1;
  if (nbytes == 0) {
    b->block.ptr = empty_block;
  } else {
    pthread_mutex_lock(&alloc_lock);
    bool ok = block_get(nbytes, &b->block);
    if (ok) live_bytes += nbytes;
    size_t in_use = live_bytes;
    pthread_mutex_unlock(&alloc_lock);
    if (!ok) {
      tg_free(b);
      return tg_set_error(TG_ERR_OUT_OF_MEMORY, "rt_buffer_new: allocation of %zu bytes failed on CPU (used: %zu bytes)",
                          nbytes, in_use);
    }
  }
  *out = b;
  return TG_OK;
}

tg_status rt_buffer_view(RtBuffer *base, size_t offset, size_t nbytes, RtBuffer **out) {
  *out = NULL;
  if (!base) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_buffer_view: NULL base buffer");
  if (offset > base->nbytes || nbytes > base->nbytes - offset)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_buffer_view: range [%zu, %zu) exceeds the buffer's %zu bytes",
                        offset, offset + nbytes, base->nbytes);
  RtBuffer *owner = base->base ? base->base : base;
  RtBuffer *v = tg_calloc(1, sizeof *v);
  v->base = owner;
  v->offset = (base->base ? base->offset : 0) + offset;
  v->nbytes = nbytes;
  pthread_mutex_lock(&alloc_lock);
  owner->refs++;
  pthread_mutex_unlock(&alloc_lock);
  *out = v;
  return TG_OK;
}

/* Drop one reference of an owner; the last one returns its block. Called with the lock held. */
static void owner_unref_locked(RtBuffer *owner) {
  if (--owner->refs > 0) return;
  if (owner->nbytes) {
    live_bytes -= owner->nbytes;
    block_put(&owner->block);
  }
  tg_free(owner);
}

void rt_buffer_free(RtBuffer *buf) {
  if (!buf) return;
  pthread_mutex_lock(&alloc_lock);
  if (buf->base) {
    owner_unref_locked(buf->base);
    tg_free(buf);
  } else {
    TG_ASSERT(!buf->owner_freed, "rt_buffer_free: buffer freed twice");
    buf->owner_freed = true;
    owner_unref_locked(buf);
  }
  pthread_mutex_unlock(&alloc_lock);
}

void *rt_buffer_ptr(const RtBuffer *buf) {
  if (buf->base) return (unsigned char *)buf->base->block.ptr + buf->offset;
  return buf->block.ptr;
}
size_t rt_buffer_nbytes(const RtBuffer *buf) { return buf->nbytes; }

tg_status rt_copyin(RtBuffer *dst, size_t offset, const void *src, size_t nbytes) {
  if (!dst || (!src && nbytes)) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_copyin: NULL buffer or source");
  if (offset > dst->nbytes || nbytes > dst->nbytes - offset)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_copyin: %zu bytes at offset %zu exceed the buffer's %zu bytes",
                        nbytes, offset, dst->nbytes);
  if (nbytes) memcpy((unsigned char *)rt_buffer_ptr(dst) + offset, src, nbytes);
  return TG_OK;
}

tg_status rt_copyout(const RtBuffer *src, size_t offset, void *dst, size_t nbytes) {
  if (!src || (!dst && nbytes)) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_copyout: NULL buffer or destination");
  if (offset > src->nbytes || nbytes > src->nbytes - offset)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_copyout: %zu bytes at offset %zu exceed the buffer's %zu bytes",
                        nbytes, offset, src->nbytes);
  if (nbytes) memcpy(dst, (const unsigned char *)rt_buffer_ptr(src) + offset, nbytes);
  return TG_OK;
}

size_t rt_mem_used(void) {
  pthread_mutex_lock(&alloc_lock);
  size_t r = live_bytes;
  pthread_mutex_unlock(&alloc_lock);
  return r;
}
size_t rt_mem_cached(void) {
  pthread_mutex_lock(&alloc_lock);
  size_t r = pooled_bytes;
  pthread_mutex_unlock(&alloc_lock);
  return r;
}
size_t rt_mem_cached_blocks(void) {
  pthread_mutex_lock(&alloc_lock);
  size_t r = pooled_blocks;
  pthread_mutex_unlock(&alloc_lock);
  return r;
}
void rt_free_cache(void) {
  pthread_mutex_lock(&alloc_lock);
  free_cache_locked();
  pthread_mutex_unlock(&alloc_lock);
}
void rt_set_mem_limit(size_t bytes) {
  pthread_mutex_lock(&alloc_lock);
  os_limit = bytes;
  pthread_mutex_unlock(&alloc_lock);
}
