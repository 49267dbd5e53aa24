/* helpers.c — node properties the scheduler asks about (tinygrad's UOp.device, base, buf_uop, ranges,
 * has_buffer_identity) and the small constructors shared by its passes. Properties that depend on the whole graph
 * below a node are computed over one toposort per query, so a DAG costs its size. */
#include "schedule/sched_internal.h"

#include <stdio.h>

UOp *sched_weak_int(int64_t v) { return uop_const_int(DT_WEAKINT, v); }

UOp *sched_rebuild(const UOp *u, TgOp op, const DType *dt, uint32_t i, UOp *s) {
  UOpVec v = {0};
  for (uint32_t k = 0; k < u->nsrc; k++) tg_vec_push(&v, k == i ? s : u->src[k]);
  UOp *r = uop_new_tagged(op, dt, v.data, v.len, u->arg, u->tag);
  tg_vec_free(&v);
  return r;
}

UOp *sched_index(UOp *buf, UOp *const *idx, size_t n) {
  UOp *src[1 + SCHED_MAX_IDX];
  TG_ASSERT(n <= SCHED_MAX_IDX, "");
  src[0] = buf;
  for (size_t i = 0; i < n; i++) src[1 + i] = idx[i];
  return uop_new(TG_OP_INDEX, buf->dtype, src, n + 1, arg_none());
}

UOp *sched_end(UOp *x, UOp *const *ranges, size_t n) {
  if (n == 0) return x;
  UOpVec v = {0};
  tg_vec_push(&v, x);
  for (size_t i = 0; i < n; i++) tg_vec_push(&v, ranges[i]);
  UOp *r = uop_new(TG_OP_END, DT_VOID, v.data, v.len, arg_none());
  tg_vec_free(&v);
  return r;
}

UOp *sched_stage(UOp *src, UOp *const *ranges, size_t n, const char *device, AddrSpace as, bool removable) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = removable ? 1 : 0;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = src->dtype;
  p.addrspace = (int32_t)as;
  if (device) snprintf(p.device, sizeof p.device, "%s", device);
  UOpVec v = {0};
  tg_vec_push(&v, src);
  for (size_t i = 0; i < n; i++) tg_vec_push(&v, ranges[i]);
  UOp *r = uop_new(TG_OP_STAGE, src->dtype, v.data, v.len, arg_param(&p));
  tg_vec_free(&v);
  return r;
}

bool sched_stage_removable(const UOp *stage) { return stage->arg.kind == ARG_PARAM && stage->arg.param->slot >= 1; }

/* slot 2: a removable stage that rangeify's row rule allows to recompute with its row reductions (kernelize.c) */
UOp *sched_stage_set_row(UOp *stage, bool row) {
  if (!sched_stage_removable(stage) || sched_stage_row(stage) == row) return stage;
  ParamArg p = *stage->arg.param;
  p.slot = row ? 2 : 1;
  return uop_new(TG_OP_STAGE, stage->dtype, stage->src, stage->nsrc, arg_param(&p));
}
bool sched_stage_row(const UOp *stage) { return stage->arg.kind == ARG_PARAM && stage->arg.param->slot == 2; }
AddrSpace sched_stage_addrspace(const UOp *stage) {
  return stage->arg.kind == ARG_PARAM ? (AddrSpace)stage->arg.param->addrspace : ADDR_GLOBAL;
}

int sched_range_cmp(const UOp *a, const UOp *b) {
  const RangeArg *x = a->arg.range, *y = b->arg.range;
  if (x->axis_id != y->axis_id) return x->axis_id < y->axis_id ? -1 : 1;
  for (int i = 0; i < x->nsub && i < y->nsub; i++)
    if (x->sub[i] != y->sub[i]) return x->sub[i] < y->sub[i] ? -1 : 1;
  if (x->nsub != y->nsub) return x->nsub < y->nsub ? -1 : 1;
  return x->axis_type < y->axis_type ? -1 : x->axis_type > y->axis_type;
}

bool sched_is_global_buffer(const UOp *u) {
  return u->op == TG_OP_BUFFER && u->arg.kind == ARG_PARAM && u->arg.param->addrspace == ADDR_GLOBAL;
}

static const char *own_device(const UOp *u) {
  switch (uop_op(u)) {
  case TG_OP_PARAM: case TG_OP_BUFFER: case TG_OP_STAGE:
    return u->arg.kind == ARG_PARAM && u->arg.param->device[0] ? u->arg.param->device : NULL;
  case TG_OP_COPY: return u->arg.kind == ARG_STR ? u->arg.str : NULL;
  default: return NULL;
  }
}

static bool has_own_device(const UOp *u) {
  return u->op == TG_OP_PARAM || u->op == TG_OP_BUFFER || u->op == TG_OP_STAGE || u->op == TG_OP_COPY;
}

/* A node's device: a buffer's (or a COPY's target) its own, an AFTER its first source's, anything else its first
 * source's that has one (constants have none). A depth-first walk in source order that stops at the first answer:
 * it usually reaches one buffer, where a toposort of the whole graph per call made callify quadratic. Results (NULL
 * ones too) are memoized per call, so a shared subgraph without a device is walked once. */
static char no_device; /* the memo's NULL */

const char *sched_device(UOp *u) {
  if (has_own_device(u)) return own_device(u);
  typedef struct Frame { UOp *x; uint32_t next; } Frame;
  TG_VEC(Frame) stack = {0};
  UOpMap memo;
  uopmap_init(&memo);
  Frame root = {u, 0};
  tg_vec_push(&stack, root);
  const char *last = NULL; /* the answer of the frame just finished */
  bool returned = false;
  while (stack.len) {
    Frame *f = &stack.data[stack.len - 1];
    UOp *x = f->x;
    bool done = false;
    if (returned && last) done = true; /* the first source with a device decides */
    returned = false;
    if (!done && has_own_device(x)) last = own_device(x), done = true;
    if (!done) {
      uint32_t lim = x->op == TG_OP_AFTER ? TG_MIN(x->nsrc, 1u) : x->nsrc;
      if (f->next >= lim) {
        last = NULL, done = true;
      } else {
        UOp *c = x->src[f->next++];
        void **m = uopmap_get(&memo, c);
        if (m) {
          last = *m == (void *)&no_device ? NULL : (const char *)*m;
          returned = true;
        } else {
          Frame child = {c, 0};
          tg_vec_push(&stack, child);
        }
        continue;
      }
    }
    uopmap_put(&memo, x, last ? (void *)last : (void *)&no_device);
    stack.len--;
    returned = true;
  }
  uopmap_free(&memo);
  tg_vec_free(&stack);
  return last;
}

UOp *sched_base(UOp *u) {
  while (op_has(uop_op(u), OPP_MOVEMENT) || u->op == TG_OP_DETACH || u->op == TG_OP_CONTIGUOUS_BACKWARD ||
         u->op == TG_OP_CUSTOM_GRAD)
    u = u->src[0];
  return u;
}

UOp *sched_buf_uop(UOp *u) {
  if (u->op == TG_OP_BUFFER || u->op == TG_OP_PARAM) return u;
  UOp *b = sched_base(u);
  if (b->op == TG_OP_AFTER) return sched_base(sched_buf_uop(b->src[0]));
  UOp *s = u;
  while (s->nsrc && s->op != TG_OP_BUFFER && s->op != TG_OP_PARAM && s->op != TG_OP_STAGE && s->op != TG_OP_MSTACK)
    s = s->src[0];
  return s;
}

/* ---- open ranges ---- */

static size_t range_start(TgOp op) {
  switch (op) {
  case TG_OP_STAGE: case TG_OP_REDUCE: case TG_OP_END: case TG_OP_CALL: case TG_OP_FUNCTION: return 1;
  case TG_OP_WMMA: return 3;
  case TG_OP_LINEAR: return 0;
  default: return SIZE_MAX;
  }
}

static bool vec_has(const UOpVec *v, const UOp *x) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == x) return true;
  return false;
}

static void vec_remove(UOpVec *v, const UOp *x) {
  size_t k = 0;
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] != x) v->data[k++] = v->data[i];
  v->len = k;
}

/* CALL/FUNCTION bodies are separate programs: their ranges never leak out. */
static bool not_a_body(const UOp *u, void *ctx) {
  TG_UNUSED(ctx);
  return !(u->op == TG_OP_SINK && u->arg.kind == ARG_KERNEL);
}

void sched_ranges(UOp *u, UOpVec *out) {
  UOpVec topo = {0};
  uop_toposort(u, not_a_body, NULL, &topo);
  UOpMap idx;
  uopmap_init(&idx);
  UOpVec *lists = tg_calloc(topo.len, sizeof(UOpVec));
  for (size_t i = 0; i < topo.len; i++) {
    UOp *x = topo.data[i];
    uopmap_put(&idx, x, (void *)(uintptr_t)i);
    UOpVec *l = &lists[i];
    if (x->op == TG_OP_RANGE) tg_vec_push(l, x);
    if (!not_a_body(x, NULL)) continue;
    for (uint32_t k = 0; k < x->nsrc; k++) {
      void **p = uopmap_get(&idx, x->src[k]);
      if (!p) continue;
      UOpVec *sl = &lists[(uintptr_t)*p];
      for (size_t j = 0; j < sl->len; j++)
        if (!vec_has(l, sl->data[j])) tg_vec_push(l, sl->data[j]);
    }
    /* ended ranges: the sources after range_start (and, for AFTER, what its sources end) */
    size_t rs = range_start(uop_op(x));
    UOpVec ended = {0};
    if (rs != SIZE_MAX)
      for (size_t k = rs; k < x->nsrc; k++) tg_vec_push(&ended, x->src[k]);
    if (x->op == TG_OP_AFTER)
      for (uint32_t k = 1; k < x->nsrc; k++) {
        UOp *s = x->src[k];
        size_t srs = range_start(uop_op(s));
        if (srs != SIZE_MAX)
          for (size_t j = srs; j < s->nsrc; j++) tg_vec_push(&ended, s->src[j]);
      }
    for (size_t k = 0; k < ended.len; k++) {
      UOp *er = ended.data[k];
      if (er->op == TG_OP_RANGE) { vec_remove(l, er); continue; }
      void **p = uopmap_get(&idx, er);
      if (!p) continue;
      UOpVec *sl = &lists[(uintptr_t)*p];
      for (size_t j = 0; j < sl->len; j++) vec_remove(l, sl->data[j]);
    }
    tg_vec_free(&ended);
    if (x->op == TG_OP_RANGE && !vec_has(l, x)) tg_vec_push(l, x); /* a RANGE is always in its own set */
  }
  void **p = uopmap_get(&idx, u);
  out->len = 0;
  if (p) {
    UOpVec *l = &lists[(uintptr_t)*p];
    for (size_t j = 0; j < l->len; j++) tg_vec_push(out, l->data[j]);
  }
  for (size_t i = 0; i < topo.len; i++) tg_vec_free(&lists[i]);
  tg_free(lists);
  uopmap_free(&idx);
  tg_vec_free(&topo);
}

bool sched_in_ranges(UOp *u, const UOp *range) {
  UOpVec v = {0};
  sched_ranges(u, &v);
  bool r = vec_has(&v, range);
  tg_vec_free(&v);
  return r;
}

