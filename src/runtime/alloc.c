/* alloc.c — device memory: tinygrad's LRUAllocator, one pool per device, above the device's raw_alloc/raw_free.
 *
 * A freed block goes into its device's pool keyed by its exact byte size and is handed out again for the next
 * request of that size on that device (the first touch of a fresh 4 KiB CPU page costs 11-14 us here; cuMemAlloc
 * costs far more). When the device (or the optional byte cap) refuses a block, the pool is released and the
 * request retried once. Buffers may be viewed at an offset; a block returns to the pool when its owner and all
 * views are gone. The CPU's raw blocks (mmap with huge pages, aligned_alloc) are in cpu.c. */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/rt_internal.h"

struct RtBuffer {
  RtBuffer *base;  /* the owner this views into, NULL for an owner */
  RtDevice *dev;
  size_t offset, nbytes;
  int refs;        /* owners: 1 for the owner handle + 1 per live view */
  bool owner_freed;
  RtBlock block;   /* owners only */
  void (*release)(void *ctx); /* a wrapped block (rt_buffer_wrap_host): given back through this, not to the pool */
  void *release_ctx;
};

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t raw_limit;       /* 0 = none; per device */
static int lru_enabled = -1;   /* LRU knob, read once */
static _Alignas(64) unsigned char empty_block[64]; /* the address of every 0-byte CPU buffer */

static size_t size_hash(size_t size) { return (size_t)tg_hash_mix(0x5bd1e995u, (uint64_t)size); }

static RtPoolSlot *pool_find(RtDevice *d, size_t size, bool create) {
  if (d->pool_cap == 0) {
    if (!create) return NULL;
    d->pool_cap = 64;
    d->pool_slots = tg_calloc(d->pool_cap, sizeof *d->pool_slots);
  }
  if (create && (d->pool_used_slots + 1) * 4 > d->pool_cap * 3) { /* grow at 75% load */
    RtPoolSlot *old = d->pool_slots;
    size_t old_cap = d->pool_cap;
    d->pool_cap *= 2;
    d->pool_slots = tg_calloc(d->pool_cap, sizeof *d->pool_slots);
    for (size_t i = 0; i < old_cap; i++) {
      if (!old[i].used) continue;
      size_t j = size_hash(old[i].size) & (d->pool_cap - 1);
      while (d->pool_slots[j].used) j = (j + 1) & (d->pool_cap - 1);
      d->pool_slots[j] = old[i];
    }
    tg_free(old);
  }
  size_t j = size_hash(size) & (d->pool_cap - 1);
  while (d->pool_slots[j].used) {
    if (d->pool_slots[j].size == size) return &d->pool_slots[j];
    j = (j + 1) & (d->pool_cap - 1);
  }
  if (!create) return NULL;
  d->pool_slots[j].used = true;
  d->pool_slots[j].size = size;
  d->pool_used_slots++;
  return &d->pool_slots[j];
}

/* Ask the device for a block; false when refused (or over the cap). */
static bool raw_alloc(RtDevice *d, size_t size, RtBlock *out) {
  if (raw_limit && (size > raw_limit || d->raw_bytes > raw_limit - size)) return false;
  out->size = size;
  if (!d->ops->raw_alloc(d, size, &out->addr, &out->extra)) return false;
  d->raw_bytes += size;
  return true;
}

static void raw_free(RtDevice *d, const RtBlock *b) {
  d->ops->raw_free(d, b->addr, b->size, b->extra);
  d->raw_bytes -= b->size;
}

static void free_cache_locked(RtDevice *d) {
  for (size_t i = 0; i < d->pool_cap; i++) {
    RtPoolSlot *s = &d->pool_slots[i];
    if (!s->used) continue;
    for (size_t k = 0; k < s->blocks.len; k++) raw_free(d, &s->blocks.data[k]);
    tg_vec_free(&s->blocks);
  }
  tg_free(d->pool_slots);
  d->pool_slots = NULL;
  d->pool_cap = d->pool_used_slots = d->pooled_bytes = d->pooled_blocks = 0;
}

/* tinygrad LRUAllocator.alloc: reuse a pooled block of the same size, else the device; on refusal flush and retry. */
static bool block_get(RtDevice *d, size_t size, RtBlock *out) {
  RtPoolSlot *s = pool_find(d, size, false);
  if (s && s->blocks.len) {
    *out = s->blocks.data[--s->blocks.len];
    d->pooled_bytes -= size;
    d->pooled_blocks--;
    return true;
  }
  if (raw_alloc(d, size, out)) return true;
  free_cache_locked(d);
  return raw_alloc(d, size, out);
}

void rt_alloc_reread_knobs(void) {
  pthread_mutex_lock(&alloc_lock);
  lru_enabled = -1;
  pthread_mutex_unlock(&alloc_lock);
}

static void block_put(RtDevice *d, const RtBlock *b) {
  if (lru_enabled < 0) lru_enabled = tg_getenv_int("LRU", 1) != 0;
  if (!lru_enabled) {
    raw_free(d, b);
    return;
  }
  RtPoolSlot *s = pool_find(d, b->size, true);
  tg_vec_push(&s->blocks, *b);
  d->pooled_bytes += b->size;
  d->pooled_blocks++;
}

tg_status rt_buffer_new(const char *device, size_t nbytes, RtBuffer **out) {
  *out = NULL;
  RtDevice *d;
  tg_status st = rt_device_open(device ? device : tg_default_device(), &d);
  if (st != TG_OK) return st;
  return rt_buffer_new_on(d, nbytes, out);
}

tg_status rt_buffer_new_on(RtDevice *d, size_t nbytes, RtBuffer **out) {
  *out = NULL;
  if (!d) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_buffer_new: NULL device");
  RtBuffer *b = tg_calloc(1, sizeof *b);
  b->dev = d;
  b->nbytes = nbytes;
  b->refs = 1;
  if (nbytes == 0) {
    b->block.addr = d->ops->host_memory ? (uint64_t)(uintptr_t)empty_block : 0;
  } else {
    pthread_mutex_lock(&alloc_lock);
    bool ok = block_get(d, nbytes, &b->block);
    if (ok) d->live_bytes += nbytes;
    size_t in_use = d->live_bytes;
    pthread_mutex_unlock(&alloc_lock);
    if (!ok) {
      tg_free(b);
      return tg_set_error(TG_ERR_OUT_OF_MEMORY, "rt_buffer_new: allocation of %zu bytes failed on %s (used: %zu bytes)",
                          nbytes, d->name, in_use);
    }
  }
  *out = b;
  return TG_OK;
}

tg_status rt_buffer_wrap_host(RtDevice *d, void *host, size_t nbytes, void (*release)(void *ctx), void *ctx,
                              RtBuffer **out) {
  *out = NULL;
  if (!d || !release || (!host && nbytes))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_buffer_wrap_host: NULL device, memory or release function");
  if (!d->ops->host_memory)
    return tg_set_error(TG_ERR_UNSUPPORTED, "rt_buffer_wrap_host: %s does not use host memory", d->name);
  if ((uintptr_t)host % RT_HOST_WRAP_ALIGN)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_buffer_wrap_host: address %p is not %d-byte aligned", host,
                        RT_HOST_WRAP_ALIGN);
  RtBuffer *b = tg_calloc(1, sizeof *b);
  b->dev = d;
  b->nbytes = nbytes;
  b->refs = 1;
  b->block.addr = (uint64_t)(uintptr_t)host;
  b->block.size = nbytes;
  b->release = release;
  b->release_ctx = ctx;
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
  v->dev = owner->dev;
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
  if (owner->release) owner->release(owner->release_ctx);
  else if (owner->nbytes) {
    owner->dev->live_bytes -= owner->nbytes;
    block_put(owner->dev, &owner->block);
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

uint64_t rt_buffer_addr(const RtBuffer *buf) {
  if (buf->base) return buf->base->block.addr + buf->offset;
  return buf->block.addr;
}
void *rt_buffer_ptr(const RtBuffer *buf) {
  return buf->dev->ops->host_memory ? (void *)(uintptr_t)rt_buffer_addr(buf) : NULL;
}
size_t rt_buffer_nbytes(const RtBuffer *buf) { return buf->nbytes; }
RtDevice *rt_buffer_device(const RtBuffer *buf) { return buf->dev; }

static tg_status check_range(const char *what, const RtBuffer *b, size_t offset, size_t nbytes) {
  if (offset > b->nbytes || nbytes > b->nbytes - offset)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: %zu bytes at offset %zu exceed the buffer's %zu bytes", what,
                        nbytes, offset, b->nbytes);
  return TG_OK;
}

tg_status rt_copyin(RtBuffer *dst, size_t offset, const void *src, size_t nbytes) {
  if (!dst || (!src && nbytes)) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_copyin: NULL buffer or source");
  tg_status st = check_range("rt_copyin", dst, offset, nbytes);
  if (st != TG_OK || !nbytes) return st;
  return dst->dev->ops->copyin(dst->dev, rt_buffer_addr(dst) + offset, src, nbytes);
}

tg_status rt_copyout(const RtBuffer *src, size_t offset, void *dst, size_t nbytes) {
  if (!src || (!dst && nbytes)) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_copyout: NULL buffer or destination");
  tg_status st = check_range("rt_copyout", src, offset, nbytes);
  if (st != TG_OK || !nbytes) return st;
  return src->dev->ops->copyout(src->dev, dst, rt_buffer_addr(src) + offset, nbytes);
}

/* tinygrad exec_copy: the device's own transfer between devices of one kind, else through host memory (a CPU side
 * is host memory already; between two non-host kinds a bounce buffer). */
tg_status rt_transfer(RtBuffer *dst, size_t dst_off, const RtBuffer *src, size_t src_off, size_t nbytes) {
  if (!dst || !src) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "rt_transfer: NULL buffer");
  tg_status st = check_range("rt_transfer (destination)", dst, dst_off, nbytes);
  if (st == TG_OK) st = check_range("rt_transfer (source)", src, src_off, nbytes);
  if (st != TG_OK || !nbytes) return st;
  RtDevice *dd = dst->dev, *sd = src->dev;
  uint64_t da = rt_buffer_addr(dst) + dst_off, sa = rt_buffer_addr(src) + src_off;
  if (dd->ops == sd->ops) return dd->ops->transfer(dd, da, sd, sa, nbytes);
  if (sd->ops->host_memory) return dd->ops->copyin(dd, da, (const void *)(uintptr_t)sa, nbytes);
  if (dd->ops->host_memory) return sd->ops->copyout(sd, (void *)(uintptr_t)da, sa, nbytes);
  void *bounce = malloc(nbytes);
  if (!bounce) return tg_set_error(TG_ERR_OUT_OF_MEMORY, "rt_transfer: no host memory for %zu bytes", nbytes);
  st = sd->ops->copyout(sd, bounce, sa, nbytes);
  if (st == TG_OK) st = dd->ops->copyin(dd, da, bounce, nbytes);
  if (st == TG_OK) st = dd->ops->synchronize(dd); /* the copy in may still read the bounce buffer */
  free(bounce);
  return st;
}

/* ---- accounting over every opened device (rt_device_each in device.c) ---- */
typedef struct Sums { size_t live, pooled, blocks; } Sums;
static void add_sums(RtDevice *d, void *ctx) {
  Sums *s = ctx;
  s->live += d->live_bytes;
  s->pooled += d->pooled_bytes;
  s->blocks += d->pooled_blocks;
}
static Sums sums(void) {
  Sums s = {0, 0, 0};
  pthread_mutex_lock(&alloc_lock);
  rt_device_each(add_sums, &s);
  pthread_mutex_unlock(&alloc_lock);
  return s;
}
size_t rt_mem_used(void) { return sums().live; }
size_t rt_mem_cached(void) { return sums().pooled; }
size_t rt_mem_cached_blocks(void) { return sums().blocks; }
size_t rt_device_mem_used(RtDevice *d) {
  pthread_mutex_lock(&alloc_lock);
  size_t r = d->live_bytes;
  pthread_mutex_unlock(&alloc_lock);
  return r;
}
size_t rt_device_mem_cached(RtDevice *d) {
  pthread_mutex_lock(&alloc_lock);
  size_t r = d->pooled_bytes;
  pthread_mutex_unlock(&alloc_lock);
  return r;
}
static void flush_one(RtDevice *d, void *ctx) {
  TG_UNUSED(ctx);
  free_cache_locked(d);
}
void rt_free_cache(void) {
  pthread_mutex_lock(&alloc_lock);
  rt_device_each(flush_one, NULL);
  pthread_mutex_unlock(&alloc_lock);
}
void rt_device_free_cache(RtDevice *d) {
  pthread_mutex_lock(&alloc_lock);
  free_cache_locked(d);
  pthread_mutex_unlock(&alloc_lock);
}
void rt_set_mem_limit(size_t bytes) {
  pthread_mutex_lock(&alloc_lock);
  raw_limit = bytes;
  pthread_mutex_unlock(&alloc_lock);
}
