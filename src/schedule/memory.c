/* memory.c — the memory planner (tinygrad schedule/memory.py): the schedule's intermediate buffers share one int8
 * arena per device. Each intermediate lives from its first to its last use in the LINEAR; sizes are rounded to 256
 * bytes and offsets are assigned in event order (frees before allocations at the same step) by a best-fit allocator
 * over the arena (tinygrad uses a TLSF allocator: the same policy family, offsets may differ). Each buffer is then
 * replaced by BITCAST(SHRINK(arena, offset, nbytes)) to its dtype. NO_MEMORY_PLANNER=1 disables it. */
#include "schedule/sched_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define PLAN_BLOCK 256

typedef struct Span { int64_t off, size; } Span;
typedef TG_VEC(Span) SpanVec;

/* best fit in the free list (kept sorted by offset, coalesced); grows the arena end when nothing fits */
static int64_t plan_alloc(SpanVec *free_list, int64_t *end, int64_t size) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < free_list->len; i++)
    if (free_list->data[i].size >= size && (best == SIZE_MAX || free_list->data[i].size < free_list->data[best].size)) best = i;
  if (best == SIZE_MAX) {
    /* extend: a free span touching the end is used first */
    if (free_list->len && free_list->data[free_list->len - 1].off + free_list->data[free_list->len - 1].size == *end) {
      Span last = free_list->data[--free_list->len];
      *end = last.off + size;
      return last.off;
    }
    int64_t off = *end;
    *end += size;
    return off;
  }
  Span *s = &free_list->data[best];
  int64_t off = s->off;
  s->off += size;
  s->size -= size;
  if (s->size == 0) {
    memmove(s, s + 1, (free_list->len - best - 1) * sizeof *s);
    free_list->len--;
  }
  return off;
}

static void plan_free(SpanVec *free_list, int64_t off, int64_t size) {
  size_t i = 0;
  while (i < free_list->len && free_list->data[i].off < off) i++;
  Span sp = {off, size};
  tg_vec_push(free_list, sp);
  memmove(&free_list->data[i + 1], &free_list->data[i], (free_list->len - 1 - i) * sizeof sp);
  free_list->data[i] = sp;
  /* coalesce with the neighbours */
  if (i + 1 < free_list->len && free_list->data[i].off + free_list->data[i].size == free_list->data[i + 1].off) {
    free_list->data[i].size += free_list->data[i + 1].size;
    memmove(&free_list->data[i + 1], &free_list->data[i + 2], (free_list->len - i - 2) * sizeof sp);
    free_list->len--;
  }
  if (i > 0 && free_list->data[i - 1].off + free_list->data[i - 1].size == free_list->data[i].off) {
    free_list->data[i - 1].size += free_list->data[i].size;
    memmove(&free_list->data[i], &free_list->data[i + 1], (free_list->len - i - 1) * sizeof sp);
    free_list->len--;
  }
}

typedef struct PlanBuf {
  UOp *buf;
  const char *device;
  int64_t first, last, nbytes, rounded, off;
  int lane; /* index into the device list */
} PlanBuf;

typedef struct Event { int64_t t; int open; size_t buf; } Event;

static int event_cmp(const void *a, const void *b) {
  const Event *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->open != y->open) return x->open - y->open; /* frees first */
  return x->buf < y->buf ? -1 : x->buf > y->buf;
}

/* the intermediates as a set: looked up for every CALL argument (a train step: ~100 of them in ~120 kernels) */
static void intermediate_set(const SchedResult *r, UOpMap *set) {
  uopmap_init(set);
  for (size_t i = 0; i < r->nintermediate; i++) uopmap_put(set, r->intermediates[i], r->intermediates[i]);
}

tg_status sched_memory_plan(SchedResult *r, SchedNewBuffer nb, void *ctx) {
  if (!r->linear || r->nintermediate == 0 || tg_getenv_int("NO_MEMORY_PLANNER", 0)) return TG_OK;
  TG_VEC(PlanBuf) bufs = {0};
  UOpMap index, inter;
  uopmap_init(&index);
  intermediate_set(r, &inter);
  for (uint32_t i = 0; i < r->linear->nsrc; i++) {
    UOp *call = r->linear->src[i];
    for (uint32_t k = 1; k < call->nsrc; k++) {
      UOp *b = call->src[k];
      if (!uopmap_get(&inter, b)) continue;
      void **p = uopmap_get(&index, b);
      if (p) { bufs.data[(uintptr_t)*p - 1].last = i; continue; }
      Shape s;
      int64_t numel = b->nsrc && uop_as_shape(b->src[0], &s) ? shape_numel(&s) : 1;
      PlanBuf pb = {b, b->arg.param->device, i, i, numel * dt_itemsize(b->dtype), 0, 0, 0};
      pb.rounded = (pb.nbytes + PLAN_BLOCK - 1) / PLAN_BLOCK * PLAN_BLOCK;
      tg_vec_push(&bufs, pb);
      uopmap_put(&index, b, (void *)(uintptr_t)bufs.len);
    }
  }
  uopmap_free(&index);
  if (bufs.len == 0) { tg_vec_free(&bufs); uopmap_free(&inter); return TG_OK; }
  /* one lane per device (CPU only has compute lanes: there are no copy kernels yet) */
  const char *devices[16];
  int ndev = 0;
  for (size_t i = 0; i < bufs.len; i++) {
    int d = 0;
    while (d < ndev && strcmp(devices[d], bufs.data[i].device) != 0) d++;
    if (d == ndev) {
      if (ndev == 16) { tg_vec_free(&bufs); uopmap_free(&inter); return TG_OK; } /* too many devices: left as is */
      devices[ndev++] = bufs.data[i].device;
    }
    bufs.data[i].lane = d;
  }
  Event *ev = tg_malloc(2 * bufs.len * sizeof *ev);
  for (size_t i = 0; i < bufs.len; i++) {
    ev[2 * i] = (Event){bufs.data[i].first, 1, i};
    ev[2 * i + 1] = (Event){bufs.data[i].last + 1, 0, i};
  }
  qsort(ev, 2 * bufs.len, sizeof *ev, event_cmp);
  SpanVec free_lists[16] = {{0}};
  int64_t ends[16] = {0}, peaks[16] = {0};
  for (size_t e = 0; e < 2 * bufs.len; e++) {
    PlanBuf *b = &bufs.data[ev[e].buf];
    if (ev[e].open) {
      b->off = plan_alloc(&free_lists[b->lane], &ends[b->lane], b->rounded);
      peaks[b->lane] = TG_MAX(peaks[b->lane], b->off + b->nbytes);
    } else {
      plan_free(&free_lists[b->lane], b->off, b->rounded);
    }
  }
  tg_free(ev);
  tg_status st = TG_OK;
  UOp *arenas[16];
  for (int d = 0; d < ndev && st == TG_OK; d++) {
    int64_t size = (peaks[d] + PLAN_BLOCK - 1) / PLAN_BLOCK * PLAN_BLOCK;
    arenas[d] = nb(devices[d], DT_INT8, size, ctx);
    if (!arenas[d]) st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "memory planner: could not create an arena of %lld bytes", (long long)size);
  }
  for (int d = 0; d < 16; d++) tg_vec_free(&free_lists[d]);
  if (st != TG_OK) { tg_vec_free(&bufs); uopmap_free(&inter); return st; }
  UOpScope sc = uop_scope_begin();
  UOpMap to; /* intermediate -> its view of the arena */
  uopmap_init(&to);
  for (size_t i = 0; i < bufs.len; i++) {
    PlanBuf *b = &bufs.data[i];
    UOp *ss[3] = {arenas[b->lane], sched_weak_int(b->off), sched_weak_int(b->nbytes)};
    UOp *view = uop_new(TG_OP_SHRINK, DT_INT8, ss, 3, arg_none());
    uopmap_put(&to, b->buf, uop_new(TG_OP_BITCAST, b->buf->dtype, &view, 1, arg_none()));
  }
  /* the kernel SINKs are not entered: only the CALL arguments change */
  UOpVec calls = {0};
  for (uint32_t i = 0; i < r->linear->nsrc; i++) {
    UOp *call = r->linear->src[i];
    UOpVec src = {0};
    for (uint32_t k = 0; k < call->nsrc; k++) {
      void **v = k > 0 ? uopmap_get(&to, call->src[k]) : NULL;
      tg_vec_push(&src, v ? (UOp *)*v : call->src[k]);
    }
    tg_vec_push(&calls, uop_replace_src(call, src.data, src.len));
    tg_vec_free(&src);
  }
  UOp *lin = uop_keep(uop_new(TG_OP_LINEAR, DT_VOID, calls.data, calls.len, arg_none()));
  tg_vec_free(&calls);
  uop_scope_end(sc);
  if (tg_debug_level() >= 1) {
    int64_t before = 0, after = 0;
    for (size_t i = 0; i < bufs.len; i++) before += bufs.data[i].rounded;
    for (int d = 0; d < ndev; d++) after += arenas[d]->src[0]->arg.c.i;
    if (before != after)
      printf("memory reduced from %.2f MB -> %.2f MB, %zu -> %d bufs\n", (double)before / 1e6, (double)after / 1e6, bufs.len, ndev);
  }
  uop_drop(r->linear);
  r->linear = lin;
  /* the arenas replace the planned intermediates in the result's buffer lists */
  size_t k = 0;
  for (size_t i = 0; i < r->nnew; i++) {
    if (uopmap_get(&inter, r->new_buffers[i])) uop_drop(r->new_buffers[i]);
    else r->new_buffers[k++] = r->new_buffers[i];
  }
  r->nnew = k;
  for (size_t i = 0; i < r->nintermediate; i++) r->intermediates[i] = NULL;
  r->new_buffers = tg_realloc(r->new_buffers, (r->nnew + (size_t)ndev + 1) * sizeof(UOp *));
  r->intermediates = tg_realloc(r->intermediates, ((size_t)ndev + 1) * sizeof(UOp *));
  for (int d = 0; d < ndev; d++) {
    r->new_buffers[r->nnew++] = uop_keep(arenas[d]);
    r->intermediates[d] = arenas[d];
  }
  r->nintermediate = (size_t)ndev;
  r->planned = true;
  uopmap_free(&to);
  uopmap_free(&inter);
  tg_vec_free(&bufs);
  return TG_OK;
}
