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

typedef struct Event { int64_t t; int open; size_t buf; } Event;

static int event_cmp(const void *a, const void *b) {
  const Event *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->open != y->open) return x->open - y->open; /* frees first */
  return x->buf < y->buf ? -1 : x->buf > y->buf;
}

static bool plan_is_global(const UOp *u) {
  return u->op == TG_OP_BUFFER && u->arg.kind == ARG_PARAM && u->arg.param->addrspace == ADDR_GLOBAL;
}

void sched_plan_free(SchedPlan *p) {
  tg_free(p->bufs);
  tg_free(p->lane);
  tg_free(p->off);
  tg_free(p->nbytes);
  memset(p, 0, sizeof *p);
}

bool sched_plan_layout(UOp *lin, const UOpMap *inter, SchedPlan *p) {
  memset(p, 0, sizeof *p);
  TG_VEC(int64_t) first = {0}, last = {0}, rounded = {0};
  UOpMap index;
  uopmap_init(&index);
  for (uint32_t i = 0; i < lin->nsrc; i++) {
    UOp *call = lin->src[i];
    for (uint32_t k = 1; k < call->nsrc; k++) {
      UOp *b = call->src[k];
      if (inter ? !uopmap_get(inter, b) : !plan_is_global(b)) continue;
      void **at = uopmap_get(&index, b);
      if (at) { last.data[(uintptr_t)*at - 1] = i; continue; }
      Shape s;
      int64_t numel = b->nsrc && uop_as_shape(b->src[0], &s) ? shape_numel(&s) : 1, nbytes = numel * dt_itemsize(b->dtype);
      p->bufs = tg_realloc(p->bufs, (p->n + 1) * sizeof *p->bufs);
      p->nbytes = tg_realloc(p->nbytes, (p->n + 1) * sizeof *p->nbytes);
      p->bufs[p->n] = b;
      p->nbytes[p->n++] = nbytes;
      tg_vec_push(&first, (int64_t)i);
      tg_vec_push(&last, (int64_t)i);
      tg_vec_push(&rounded, (nbytes + PLAN_BLOCK - 1) / PLAN_BLOCK * PLAN_BLOCK);
      uopmap_put(&index, b, (void *)(uintptr_t)p->n);
    }
  }
  uopmap_free(&index);
  bool ok = p->n > 0;
  /* one lane per device (its name as the buffer has it; "" is the default device at resolution) */
  p->lane = tg_calloc(p->n + 1, sizeof *p->lane);
  p->off = tg_calloc(p->n + 1, sizeof *p->off);
  for (size_t i = 0; i < p->n && ok; i++) {
    const char *dev = p->bufs[i]->arg.param->device;
    int d = 0;
    while (d < p->nlanes && strcmp(p->device[d], dev) != 0) d++;
    if (d == p->nlanes) {
      if (p->nlanes == SCHED_PLAN_LANES) ok = false; /* too many devices to plan: left as is */
      else p->device[p->nlanes++] = dev;
    }
    p->lane[i] = d;
    p->before += rounded.data[i];
  }
  if (ok) {
    Event *ev = tg_malloc(2 * p->n * sizeof *ev);
    for (size_t i = 0; i < p->n; i++) {
      ev[2 * i] = (Event){first.data[i], 1, i};
      ev[2 * i + 1] = (Event){last.data[i] + 1, 0, i};
    }
    qsort(ev, 2 * p->n, sizeof *ev, event_cmp);
    SpanVec free_lists[SCHED_PLAN_LANES] = {{0}};
    int64_t ends[SCHED_PLAN_LANES] = {0};
    for (size_t e = 0; e < 2 * p->n; e++) {
      size_t b = ev[e].buf;
      int l = p->lane[b];
      if (ev[e].open) {
        p->off[b] = plan_alloc(&free_lists[l], &ends[l], rounded.data[b]);
        p->size[l] = TG_MAX(p->size[l], p->off[b] + p->nbytes[b]);
      } else {
        plan_free(&free_lists[l], p->off[b], rounded.data[b]);
      }
    }
    for (int d = 0; d < SCHED_PLAN_LANES; d++) tg_vec_free(&free_lists[d]);
    for (int d = 0; d < p->nlanes; d++) p->size[d] = (p->size[d] + PLAN_BLOCK - 1) / PLAN_BLOCK * PLAN_BLOCK;
    tg_free(ev);
  }
  tg_vec_free(&first);
  tg_vec_free(&last);
  tg_vec_free(&rounded);
  if (!ok) sched_plan_free(p);
  return ok;
}

UOp *sched_plan_view(UOp *arena, const SchedPlan *p, size_t i) {
  UOp *ss[3] = {arena, sched_weak_int(p->off[i]), sched_weak_int(p->nbytes[i])};
  UOp *view = uop_new(TG_OP_SHRINK, DT_INT8, ss, 3, arg_none());
  return uop_new(TG_OP_BITCAST, p->bufs[i]->dtype, &view, 1, arg_none());
}

void sched_plan_print(const SchedPlan *p, UOp *const *arenas) {
  if (tg_debug_level() < 1) return;
  int64_t after = 0;
  for (int d = 0; d < p->nlanes; d++) after += arenas[d]->src[0]->arg.c.i;
  if (p->before != after)
    printf("memory reduced from %.2f MB -> %.2f MB, %zu -> %d bufs\n", (double)p->before / 1e6, (double)after / 1e6, p->n,
           p->nlanes);
}

/* the intermediates as a set: looked up for every CALL argument (a train step: ~100 of them in ~120 kernels) */
static void intermediate_set(const SchedResult *r, UOpMap *set) {
  uopmap_init(set);
  for (size_t i = 0; i < r->nintermediate; i++) uopmap_put(set, r->intermediates[i], r->intermediates[i]);
}

tg_status sched_memory_plan(SchedResult *r, SchedNewBuffer nb, void *ctx) {
  if (!r->linear || r->nintermediate == 0 || r->planned || tg_getenv_int("NO_MEMORY_PLANNER", 0)) return TG_OK;
  UOpMap inter;
  intermediate_set(r, &inter);
  SchedPlan p;
  if (!sched_plan_layout(r->linear, &inter, &p)) {
    uopmap_free(&inter);
    return TG_OK;
  }
  tg_status st = TG_OK;
  UOp *arenas[SCHED_PLAN_LANES];
  for (int d = 0; d < p.nlanes && st == TG_OK; d++) {
    arenas[d] = nb(p.device[d], DT_INT8, p.size[d], ctx);
    if (!arenas[d])
      st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "memory planner: could not create an arena of %lld bytes", (long long)p.size[d]);
  }
  if (st != TG_OK) {
    sched_plan_free(&p);
    uopmap_free(&inter);
    return st;
  }
  UOpScope sc = uop_scope_begin();
  UOpMap to; /* intermediate -> its view of the arena */
  uopmap_init(&to);
  for (size_t i = 0; i < p.n; i++) uopmap_put(&to, p.bufs[i], sched_plan_view(arenas[p.lane[i]], &p, i));
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
  sched_plan_print(&p, arenas);
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
  r->new_buffers = tg_realloc(r->new_buffers, (r->nnew + (size_t)p.nlanes + 1) * sizeof(UOp *));
  r->intermediates = tg_realloc(r->intermediates, ((size_t)p.nlanes + 1) * sizeof(UOp *));
  for (int d = 0; d < p.nlanes; d++) {
    r->new_buffers[r->nnew++] = uop_keep(arenas[d]);
    r->intermediates[d] = arenas[d];
  }
  r->nintermediate = (size_t)p.nlanes;
  r->planned = true;
  uopmap_free(&to);
  uopmap_free(&inter);
  sched_plan_free(&p);
  return TG_OK;
}
