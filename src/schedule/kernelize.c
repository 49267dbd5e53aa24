/* kernelize.c — from the rangeified graph to kernels (tinygrad schedule/rangeify.py, after run_rangeify):
 *
 *   cleanup       symbolic + reduce simplification + const-buffer folding + the fusion cost rule (remove_bufferize:
 *                 a STAGE is recomputed inline unless its producer is forced contiguous, reads more than 3 buffers,
 *                 or reduces over a buffer);
 *   add_buffers   each surviving STAGE becomes a global BUFFER written by STORE under END(ranges), wrapped in AFTER;
 *   split_kernels each STORE/END with no open ranges is cut out: its BUFFERs become numbered PARAMs, its RANGEs are
 *                 renumbered from 0, and it becomes CALL(SINK(KernelInfo), buffers...). */
#include "schedule/sched_internal.h"

#include "uop/symbolic.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------------------------------------------------------
 * shapes of the nodes this stage sees (buffers, stages, views of them); the tensor-graph rule for the rest */

static bool kshape(UOp *u, Shape *s);

/* the same with symbolic sizes (views of buffers: SHRINKs to an expression) */
static bool kshape_sym(UOp *u, SymShape *s) {
  switch (uop_op(u)) {
  case TG_OP_AFTER: case TG_OP_CAST: return kshape_sym(u->src[0], s);
  case TG_OP_RESHAPE: return uop_as_symshape(u->src[1], s);
  case TG_OP_STAGE: case TG_OP_BUFFER: case TG_OP_PARAM: break;
  default: return uop_shape_sym(u, s) == SHAPE_OK;
  }
  Shape c; /* these are concrete */
  return kshape(u, &c) && (*s = shape_sym_from(&c), true);
}

static bool kshape(UOp *u, Shape *s) {
  switch (uop_op(u)) {
  case TG_OP_STAGE:
    s->ndim = 0;
    for (uint32_t i = 1; i < u->nsrc; i++) s->d[s->ndim++] = (int64_t)uop_vmax(u->src[i]) + 1;
    return true;
  case TG_OP_BUFFER: case TG_OP_PARAM:
    if (u->nsrc == 0) { s->ndim = 0; return true; }
    return uop_as_shape(u->src[0], s);
  case TG_OP_AFTER: case TG_OP_CAST: return kshape(u->src[0], s);
  case TG_OP_RESHAPE: return uop_as_shape(u->src[1], s);
  default: {
    ShapeResult r = uop_shape(u, s);
    return r == SHAPE_OK;
  }
  }
}

/* ---------------------------------------------------------------------------------------------------------------
 * cleanup: reduce simplification, const-buffer folding, remove_bufferize */

static bool vec_contains(const UOpVec *v, const UOp *x) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == x) return true;
  return false;
}

static bool red_gate(const UOp *x, void *ctx) {
  TG_UNUSED(ctx);
  if (x->op == TG_OP_AFTER || x->op == TG_OP_MSTACK || x->op == TG_OP_STORE) return false;
  if (x->op == TG_OP_STAGE && sched_stage_addrspace(x) == ADDR_GLOBAL) return false;
  return true;
}

static bool any_buffer_below(UOp *u) {
  UOpVec v = {0};
  uop_toposort(u, NULL, NULL, &v);
  bool r = false;
  for (size_t i = 0; i < v.len && !r; i++)
    r = v.data[i]->op == TG_OP_PARAM || v.data[i]->op == TG_OP_STAGE || v.data[i]->op == TG_OP_AFTER;
  tg_vec_free(&v);
  return r;
}

/* A row stage (rangeify.c's row rule) whose reductions read buffers may still be recomputed at the consumer's index
 * when each such reduction stays one computation per row there: it depends on some of the stage's axes (the rows),
 * not all (the rest is the row it is broadcast along), each row axis maps to a plain RANGE of the same size, and those
 * are older (outer loops) than every range the other axes map to. softmax: exp(x - max) feeds both the sum and the
 * store, and max stays one reduction per row in front of both loops. A reduction over the whole row axis (the
 * scores of attention, consumed by the softmax's reductions) is not recomputed per element. */
static bool row_reduces_stay(UOp *src, UOp *buf, UOp *idx) {
  if (!sched_stage_row(buf)) return false;
  UOpVec topo = {0}, rs = {0}, fr = {0};
  uop_toposort(src, red_gate, NULL, &topo);
  bool ok = true;
  for (size_t i = 0; i < topo.len && ok; i++) {
    UOp *x = topo.data[i];
    if (x->op != TG_OP_REDUCE || !any_buffer_below(x->src[0])) continue;
    sched_ranges(x, &rs);
    int64_t newest_row = INT64_MIN;
    UOp *free_idx[SCHED_MAX_IDX];
    size_t nfree = 0;
    for (uint32_t k = 1; k < buf->nsrc && ok; k++) {
      UOp *r = buf->src[k], *v = idx->src[k];
      if (r->op != TG_OP_RANGE) continue;
      if (!vec_contains(&rs, r)) { free_idx[nfree++] = v; continue; }
      ok = v->op == TG_OP_RANGE && v->src[0] == r->src[0];
      if (ok) newest_row = TG_MAX(newest_row, v->arg.range->axis_id);
    }
    ok &= nfree > 0;
    if (ok) sched_ranges(uop_sink(free_idx, nfree), &fr);
    for (size_t k = 0; k < fr.len && ok; k++) ok = fr.data[k]->arg.range->axis_id > newest_row;
    fr.len = 0;
  }
  tg_vec_free(&topo);
  tg_vec_free(&rs);
  tg_vec_free(&fr);
  return ok;
}

/* the fusion cost rule: recompute `src` at the consumer's index instead of keeping the buffer, when cheap */
static UOp *remove_bufferize(UOp *src, UOp *buf, UOp *idx) {
  if (buf->nsrc != idx->nsrc) return NULL;
  if (src->op == TG_OP_CONTIGUOUS || src->op == TG_OP_NOOP || !sched_stage_removable(buf)) return NULL;
  UOpVec topo = {0}, accessed = {0};
  uop_toposort(src, red_gate, NULL, &topo);
  bool buffer_in_reduce = false;
  for (size_t i = 0; i < topo.len; i++) {
    UOp *x = topo.data[i], *b = NULL;
    if (x->op == TG_OP_AFTER) b = sched_buf_uop(x);
    else if ((x->op == TG_OP_STAGE && sched_stage_addrspace(x) == ADDR_GLOBAL) || x->op == TG_OP_MSTACK || x->op == TG_OP_PARAM) b = x;
    if (b && !vec_contains(&accessed, b)) tg_vec_push(&accessed, b);
    if (x->op == TG_OP_REDUCE && !buffer_in_reduce) buffer_in_reduce = any_buffer_below(x->src[0]);
  }
  size_t naccessed = accessed.len;
  tg_vec_free(&topo);
  tg_vec_free(&accessed);
  if (naccessed > 3 || (buffer_in_reduce && !row_reduces_stay(src, buf, idx))) return NULL;
  UOpVec from = {0}, to = {0};
  for (uint32_t i = 1; i < buf->nsrc; i++) {
    UOp *k = buf->src[i], *v = idx->src[i];
    if (k->op == TG_OP_CONST || uop_is_invalid(v)) continue;
    tg_vec_push(&from, k);
    tg_vec_push(&to, v);
  }
  UOp *ret = uop_substitute(src, from.data, to.data, from.len);
  tg_vec_free(&from);
  tg_vec_free(&to);
  return ret;
}

/* INDEX(STAGE(...), idx...): constant stages fold, dead axes drop (cleanup_dead_axes), then the cost rule */
static UOp *index_of_stage(RwCtx *rw, UOp *idx, UOp **m) {
  TG_UNUSED(rw);
  UOp *b = m[0], *src = b->src[0];
  if (src->op == TG_OP_CONST) return uop_const(b->dtype, src->arg.c);
  if (b->nsrc != idx->nsrc) return NULL;
  if (sched_stage_removable(b) && src->op != TG_OP_CONTIGUOUS && src->op != TG_OP_NOOP && src->op != TG_OP_AFTER) {
    bool hit = false, symbolic_size = false;
    UOpVec rs = {0};
    sched_ranges(src, &rs);
    UOp *live_r[SCHED_MAX_IDX], *live_i[SCHED_MAX_IDX];
    size_t nl = 0;
    for (uint32_t i = 1; i < b->nsrc; i++) {
      UOp *r = b->src[i];
      if (r->op == TG_OP_RANGE && r->src[0]->op != TG_OP_CONST) symbolic_size = true;
      if (r->op == TG_OP_CONST || (r->op == TG_OP_RANGE && !vec_contains(&rs, r))) { hit = true; continue; }
      live_r[nl] = r;
      live_i[nl++] = idx->src[i];
    }
    tg_vec_free(&rs);
    if (hit && !symbolic_size) {
      const ParamArg *pa = b->arg.param;
      UOp *nb = sched_stage(src, live_r, nl, pa->device[0] ? pa->device : NULL, (AddrSpace)pa->addrspace, true);
      nb = sched_stage_set_row(nb, sched_stage_row(b));
      return sched_index(nb, live_i, nl);
    }
  }
  return remove_bufferize(src, b, idx);
}

static UOp *index_of_const(RwCtx *rw, UOp *idx, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(idx);
  return m[0];
}

static UOp *store_to_self(RwCtx *rw, UOp *st, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(st);
  TG_UNUSED(m);
  return uop_new(TG_OP_NOOP, DT_VOID, NULL, 0, arg_none());
}

static UOp *end_of_noop(RwCtx *rw, UOp *e, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(e);
  return m[0];
}

static const Rule cleanup_rules[] = {
  RULE("(INDEX b:STAGE ...)", index_of_stage, NULL),
  RULE("(INDEX c:CONST ...)", index_of_const, NULL),
  RULE("(NOOP c:CONST)", index_of_const, NULL),
  RULE("(STORE x x)", store_to_self, NULL),
  RULE("(END x:NOOP ...)", end_of_noop, NULL),
};

UOp *sched_cleanup(UOp *sink) {
  static const RuleSet *pm;
  static RuleSet *mine; /* kept in a static: the concatenation does not own its parts */
  if (!mine) mine = PM_NEW("schedule cleanup", cleanup_rules);
  if (!pm) pm = pm_concat(pm_concat(sym_symbolic(), sched_pm_reduce_simplify()), mine);
  return pm_graph_rewrite(sink, pm, NULL, 0, NULL, "symbolic+reduce_collapse+debuf");
}

/* ---------------------------------------------------------------------------------------------------------------
 * limit_bufs: a kernel may read at most DEVICE_MAX_BUFS-1 buffers (CPU 31, or MAX_KERNEL_BUFFERS); past that, the
 * elementwise sources of the binary/ternary op that crosses the limit are materialized */

typedef struct LimitCtx {
  int64_t next_range, max_bufs;
  UOpMap sets;            /* node -> UOpVec* of the buffer-like nodes it reads (sorted by address), memoized */
  TG_VEC(UOpVec *) owned;
} LimitCtx;

static bool is_buffer_like(const UOp *u) {
  return u->op == TG_OP_STAGE || u->op == TG_OP_AFTER || u->op == TG_OP_PARAM || u->op == TG_OP_MSELECT || u->op == TG_OP_MSTACK;
}

static bool stop_at_known(const UOp *u, void *ctx) {
  LimitCtx *c = ctx;
  return !is_buffer_like(u) && uopmap_get(&c->sets, u) == NULL;
}

/* the union of two address-sorted sets */
static void set_union(const UOpVec *a, const UOpVec *b, UOpVec *out) {
  size_t i = 0, j = 0;
  while (i < a->len || j < b->len) {
    UOp *x = i < a->len ? a->data[i] : NULL, *y = j < b->len ? b->data[j] : NULL;
    if (y == NULL || (x != NULL && (uintptr_t)x < (uintptr_t)y)) { tg_vec_push(out, x); i++; }
    else if (x == NULL || (uintptr_t)y < (uintptr_t)x) { tg_vec_push(out, y); j++; }
    else { tg_vec_push(out, x); i++; j++; }
  }
}

/* how many buffers root reads (tinygrad topovisit with a cache shared by the whole rewrite) */
static size_t count_buffers(LimitCtx *c, UOp *root) {
  UOpVec topo = {0};
  uop_toposort(root, stop_at_known, c, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (uopmap_get(&c->sets, u)) continue;
    UOpVec *set = tg_calloc(1, sizeof(UOpVec));
    tg_vec_push(&c->owned, set);
    if (is_buffer_like(u)) {
      tg_vec_push(set, u);
    } else {
      for (uint32_t k = 0; k < u->nsrc; k++) {
        void **p = uopmap_get(&c->sets, u->src[k]);
        if (!p) continue;
        UOpVec merged = {0};
        set_union(set, *p, &merged);
        tg_vec_free(set);
        *set = merged;
      }
    }
    uopmap_put(&c->sets, u, set);
  }
  tg_vec_free(&topo);
  void **p = uopmap_get(&c->sets, root);
  return p ? ((UOpVec *)*p)->len : 0;
}

static UOp *limit_bufs(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  LimitCtx *c = rw->ctx;
  if (count_buffers(c, root) <= (size_t)(c->max_bufs - 1) || !sched_device(root)) return NULL;
  UOp *src[3];
  bool changed = false;
  for (uint32_t i = 0; i < root->nsrc; i++) {
    UOp *s = root->src[i];
    src[i] = s;
    if (!op_is_elementwise(uop_op(s)) || !sched_device(s)) continue;
    UOpVec orig = {0}, ended = {0};
    sched_ranges(s, &orig);
    for (size_t k = 0; k < orig.len; k++) {
      UOp *r = orig.data[k];
      if (r->op == TG_OP_RANGE && r->arg.range->axis_type != AXIS_DEVICE) {
        RangeArg ra;
        memset(&ra, 0, sizeof ra);
        ra.axis_id = c->next_range++;
        ra.axis_type = AXIS_WEAK;
        r = uop_new(TG_OP_RANGE, r->dtype, r->src, r->nsrc, arg_range(&ra));
      }
      tg_vec_push(&ended, r);
    }
    UOp *body = uop_substitute(s, orig.data, ended.data, orig.len);
    src[i] = sched_index(sched_stage(body, ended.data, ended.len, sched_device(s), ADDR_GLOBAL, true), orig.data, orig.len);
    changed = true;
    tg_vec_free(&orig);
    tg_vec_free(&ended);
  }
  return changed ? uop_replace_src(root, src, root->nsrc) : NULL;
}

static const Rule limit_rules[] = {RULE("Binary|Ternary", limit_bufs, NULL)};

UOp *sched_limit_bufs(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("limit buffers", limit_rules);
  const char *dev = sched_device(sink);
  int64_t max_bufs = tg_getenv_int("MAX_KERNEL_BUFFERS", 0);
  if (!max_bufs && sched_device_is_cpu(dev)) max_bufs = 31;
  if (!max_bufs) return sink;
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  LimitCtx c;
  memset(&c, 0, sizeof c);
  c.max_bufs = max_bufs;
  size_t nbuf = 0;
  for (size_t i = 0; i < topo.len; i++) {
    if (topo.data[i]->op == TG_OP_RANGE) c.next_range = TG_MAX(c.next_range, topo.data[i]->arg.range->axis_id + 1);
    nbuf += is_buffer_like(topo.data[i]);
  }
  tg_vec_free(&topo);
  if (nbuf <= (size_t)(max_bufs - 1)) return sink; /* no kernel can cross the limit */
  uopmap_init(&c.sets);
  UOp *r = pm_graph_rewrite(sink, pm, &c, 0, NULL, "limit buffers");
  for (size_t i = 0; i < c.owned.len; i++) {
    tg_vec_free(c.owned.data[i]);
    tg_free(c.owned.data[i]);
  }
  tg_vec_free(&c.owned);
  uopmap_free(&c.sets);
  return r;
}

/* ---------------------------------------------------------------------------------------------------------------
 * add_buffers: STAGE -> BUFFER + STORE + END under AFTER; movement ops on INDEX become index math */

typedef struct AddBufCtx { int64_t next_slot; bool failed; } AddBufCtx;

/* INDEX(mop(x), idx...) -> INDEX(x, mop applied to idx) */
static UOp *mop_index(RwCtx *rw, UOp *idx, UOp **m) {
  TG_UNUSED(rw);
  UOp *r = m[0];
  SymShape rs, ps;
  if (!kshape_sym(r, &rs) || !kshape_sym(r->src[0], &ps)) return NULL;
  if ((int)idx->nsrc - 1 != rs.max.ndim) return NULL;
  UOp *out[SCHED_MAX_IDX];
  size_t nout = 0;
  if (!sched_apply_movement(r, &ps, idx->src + 1, idx->nsrc - 1, out, &nout)) return NULL;
  return sched_index(r->src[0], out, nout);
}

static UOp *after_mop(RwCtx *rw, UOp *a, UOp **m) {
  TG_UNUSED(rw);
  UOp *r = m[0];
  UOp *na = sched_rebuild(a, TG_OP_AFTER, r->src[0]->dtype, 0, r->src[0]);
  return sched_rebuild(r, uop_op(r), r->op == TG_OP_INDEX ? na->dtype : r->dtype, 0, na);
}

static UOp *end_mop(RwCtx *rw, UOp *e, UOp **m) {
  TG_UNUSED(rw);
  return sched_rebuild(e, TG_OP_END, e->dtype, 0, m[0]->src[0]);
}

/* STAGE(x, r0, r1, ...) -> RESHAPE(STAGE(x, r0*s1+r1...), shape): one flat index per buffer */
static UOp *flatten_stage(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (x->nsrc == 2) return NULL;
  Shape sh, flat;
  if (!kshape(x, &sh)) return NULL;
  flat.ndim = 1;
  flat.d[0] = shape_numel(&sh);
  UOp *one[1];
  sched_apply_reshape(&flat, &sh, x->src + 1, x->nsrc - 1, one);
  const ParamArg *pa = x->arg.param;
  UOp *st = sched_stage(x->src[0], one, 1, pa->device[0] ? pa->device : NULL, (AddrSpace)pa->addrspace,
                        sched_stage_removable(x));
  st = sched_stage_set_row(st, sched_stage_row(x));
  UOp *src[2] = {st, shape_to_uop(sh.d, sh.ndim)};
  return uop_new(TG_OP_RESHAPE, st->dtype, src, 2, arg_none());
}

static int cmp_range_ptr(const void *a, const void *b) { return sched_range_cmp(*(UOp *const *)a, *(UOp *const *)b); }

static UOp *stage_to_store(RwCtx *rw, UOp *x, UOp **m) {
  AddBufCtx *c = rw->ctx;
  UOp *idx = m[0];
  if (x->src[0]->op == TG_OP_AFTER) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: schedule: a STAGE of an AFTER (assign inside a fused graph) is not supported yet");
    c->failed = true;
    return NULL;
  }
  if (sched_stage_addrspace(x) != ADDR_GLOBAL) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: schedule: partial (LOCAL) realization is not supported yet");
    c->failed = true;
    return NULL;
  }
  int64_t size = (int64_t)uop_vmax(idx) + 1;
  const DType *dt = dt_strong(x->dtype);
  UOpVec rs = {0};
  sched_ranges(idx, &rs);
  if (rs.len > 1) qsort(rs.data, rs.len, sizeof(UOp *), cmp_range_ptr);
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = c->next_slot++;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = dt;
  p.addrspace = ADDR_GLOBAL;
  snprintf(p.device, sizeof p.device, "%s", x->arg.param->device);
  UOp *sz = sched_weak_int(size);
  UOp *buf = uop_new(TG_OP_BUFFER, dt, &sz, 1, arg_param(&p));
  UOp *ss[2] = {sched_index(buf, &idx, 1), uop_cast(x->src[0], dt)};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, ss, 2, arg_none());
  UOp *as[2] = {buf, sched_end(store, rs.data, rs.len)};
  tg_vec_free(&rs);
  return uop_cast(uop_new(TG_OP_AFTER, buf->dtype, as, 2, arg_none()), x->dtype);
}

static UOp *store_invalid(RwCtx *rw, UOp *st, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(st);
  TG_UNUSED(m);
  return uop_new(TG_OP_NOOP, DT_VOID, NULL, 0, arg_none());
}

static bool is_noop_dep(const UOp *x) {
  if (x->op == TG_OP_NOOP && x->nsrc == 0) return true;
  return x->op == TG_OP_END && is_noop_dep(x->src[0]);
}

static UOp *remove_noop_afters(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOpVec src = {0};
  tg_vec_push(&src, x->src[0]);
  for (uint32_t i = 1; i < x->nsrc; i++)
    if (!is_noop_dep(x->src[i])) tg_vec_push(&src, x->src[i]);
  UOp *r = NULL;
  if (src.len != x->nsrc) r = src.len == 1 ? src.data[0] : uop_replace_src(x, src.data, src.len);
  tg_vec_free(&src);
  return r;
}

/* mark the PARAMs and RANGEs that exist now: split_kernels renumbers exactly these */
static UOp *tag_param_range(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  return x->tag ? NULL : uop_with_tag(x, 1);
}

static const Rule add_buffer_rules[] = {
  RULE("(INDEX r:Movement ...)", mop_index, NULL),
  RULE("(AFTER r:Movement|INDEX ...)", after_mop, NULL),
  RULE("(END r:Movement ...)", end_mop, NULL),
  RULE("STAGE", flatten_stage, NULL),
  RULE("(STAGE _ idx)", stage_to_store, NULL),
  RULE("(STORE _ invalid)", store_invalid, NULL),
  RULE("AFTER", remove_noop_afters, NULL),
  RULE("PARAM|RANGE", tag_param_range, NULL),
};

UOp *sched_add_buffers(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("stage to store", add_buffer_rules);
  AddBufCtx c = {0, false};
  UOp *r = pm_graph_rewrite(sink, pm, &c, RW_BOTTOM_UP, NULL, "stage to store");
  if (c.failed || !r) return NULL;
  if (uop_op_in_backward_slice_with_self(r, TG_OP_STAGE)) {
    tg_set_error(TG_ERR_RUNTIME, "schedule: a STAGE survived add_buffers (internal error)");
    return NULL;
  }
  return r;
}

/* ---------------------------------------------------------------------------------------------------------------
 * split_kernels */

typedef struct LocalCtx {
  int64_t dg, range;
  UOpVec keys, vals; /* the kernel's buffers -> what the CALL passes for them (the buffer, or its AFTER state) */
} LocalCtx;

static void lmap_put_new(LocalCtx *c, UOp *k, UOp *v) {
  if (vec_contains(&c->keys, k)) return;
  tg_vec_push(&c->keys, k);
  tg_vec_push(&c->vals, v);
}

static UOp *debuf(LocalCtx *c, UOp *buf) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  const ParamArg *src = buf->arg.param;
  p.slot = c->dg++;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = src->dtype;
  p.addrspace = src->addrspace;
  memcpy(p.device, src->device, sizeof p.device);
  Shape s;
  int64_t numel = 1;
  if (buf->nsrc && uop_as_shape(buf->src[0], &s)) numel = shape_numel(&s);
  UOp *n = sched_weak_int(numel);
  lmap_put_new(c, buf, buf);
  return uop_new(TG_OP_PARAM, buf->dtype, &n, 1, arg_param(&p));
}

static UOp *debuf_buffer(RwCtx *rw, UOp *b, UOp **m) {
  TG_UNUSED(m);
  if (uop_is_variable(b)) return uop_new(TG_OP_PARAM, b->dtype, NULL, 0, b->arg); /* a scalar value, no slot */
  if (!sched_is_global_buffer(b)) return NULL;
  return debuf(rw->ctx, b);
}

static UOp *debuf_param(RwCtx *rw, UOp *p, UOp **m) {
  TG_UNUSED(m);
  if (p->tag != 1 || p->arg.kind != ARG_PARAM || p->arg.param->name[0] || p->nsrc == 0) return NULL;
  return debuf(rw->ctx, p);
}

/* a bound Variable's body PARAM p<slot> (callify) is a value inside the kernel: slot -1, named again at resolution */
static UOp *value_param(RwCtx *rw, UOp *p, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (p->arg.kind != ARG_PARAM || p->arg.param->addrspace != ADDR_ALU || p->arg.param->slot == -1) return NULL;
  ParamArg a = *p->arg.param;
  a.slot = -1;
  return uop_new(TG_OP_PARAM, p->dtype, p->src, p->nsrc, arg_param(&a));
}

/* an ALU PARAM is a scalar, not a buffer: indexing it is the value itself */
static UOp *index_value_param(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOp *p = x->src[0];
  return p->op == TG_OP_PARAM && p->arg.kind == ARG_PARAM && p->arg.param->addrspace == ADDR_ALU ? p : NULL;
}

static UOp *handle_after(RwCtx *rw, UOp *a, UOp **m) {
  TG_UNUSED(m);
  LocalCtx *c = rw->ctx;
  UOp *buf = sched_buf_uop(a);
  if (buf->op == TG_OP_BUFFER && buf->arg.kind == ARG_PARAM && buf->arg.param->addrspace == ADDR_LOCAL) return NULL;
  lmap_put_new(c, buf, a);
  return buf;
}

static UOp *renumber_range(RwCtx *rw, UOp *r, UOp **m) {
  TG_UNUSED(m);
  LocalCtx *c = rw->ctx;
  if (r->tag != 1) return NULL;
  RangeArg ra = *r->arg.range;
  ra.axis_id = c->range++;
  return uop_new_tagged(TG_OP_RANGE, r->dtype, r->src, r->nsrc, arg_range(&ra), 0);
}

/* END/REDUCE close the RANGEs found in their range sources, in order */
static UOp *flatten_range(RwCtx *rw, UOp *r, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (r->nsrc <= 1) return NULL;
  UOpVec rngs = {0}, back = {0}, found = {0};
  for (uint32_t i = 1; i < r->nsrc; i++) {
    UOp *x = r->src[i];
    if (x->dtype == DT_VOID || x->dtype == DT_BOOL) tg_vec_push(&back, x);
    else tg_vec_push(&rngs, x);
  }
  if (rngs.len) sched_ranges(uop_sink(rngs.data, rngs.len), &found);
  UOpVec src = {0};
  tg_vec_push(&src, r->src[0]);
  for (size_t i = 0; i < found.len; i++) tg_vec_push(&src, found.data[i]);
  for (size_t i = 0; i < back.len; i++) tg_vec_push(&src, back.data[i]);
  UOp *ret = uop_replace_src(r, src.data, src.len);
  tg_vec_free(&rngs);
  tg_vec_free(&back);
  tg_vec_free(&found);
  tg_vec_free(&src);
  return ret == r ? NULL : ret;
}

static UOp *drop_contiguous(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  return x->src[0];
}

static const Rule local_rules[] = {
  RULE("BUFFER", debuf_buffer, NULL),
  RULE("PARAM", value_param, NULL),
  RULE("PARAM", debuf_param, NULL),
  RULE("(INDEX PARAM ...)", index_value_param, NULL),
  RULE("AFTER", handle_after, NULL),
  RULE("RANGE", renumber_range, NULL),
  RULE("REDUCE|END", flatten_range, NULL),
  RULE("CONTIGUOUS", drop_contiguous, NULL),
  RULE("(NOOP _)", drop_contiguous, NULL),
};

static UOp *split_store(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  TG_UNUSED(rw);
  static RuleSet *local;
  if (!local) local = PM_NEW("kernel split", local_rules);
  UOpVec rs = {0};
  sched_ranges(x, &rs);
  bool open = false;
  for (size_t i = 0; i < rs.len; i++) open |= rs.data[i]->arg.range->axis_type != AXIS_DEVICE;
  tg_vec_free(&rs);
  if (open) return NULL;
  UOp *st = x->op == TG_OP_END ? x->src[0] : x;
  if (st->op == TG_OP_STORE && uop_is_variable(st->src[0])) return NULL;
  LocalCtx c;
  memset(&c, 0, sizeof c);
  UOp *ret = pm_graph_rewrite(x, local, &c, RW_BOTTOM_UP, NULL, "kernel split");
  UOp *call = NULL;
  if (ret) {
    KernelInfo ki;
    memset(&ki, 0, sizeof ki);
    snprintf(ki.name, sizeof ki.name, "test");
    UOp *ksink = uop_new(TG_OP_SINK, DT_VOID, &ret, 1, arg_kernel(&ki));
    UOpVec src = {0};
    tg_vec_push(&src, ksink);
    for (size_t i = 0; i < c.vals.len; i++) tg_vec_push(&src, c.vals.data[i]);
    call = uop_new(TG_OP_CALL, DT_VOID, src.data, src.len, arg_none());
    tg_vec_free(&src);
  }
  tg_vec_free(&c.keys);
  tg_vec_free(&c.vals);
  return call;
}

/* a CALL's buffer arguments are buffers, not indexes into them (tinygrad pm_no_indexing_calls) */
static UOp *no_indexing_calls(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  UOpVec src = {0};
  bool changed = false;
  for (uint32_t i = 0; i < u->nsrc; i++) {
    UOp *s = u->src[i];
    if (i > 0 && s->op == TG_OP_INDEX) { s = s->src[0]; changed = true; }
    tg_vec_push(&src, s);
  }
  UOp *r = changed ? uop_replace_src(u, src.data, src.len) : NULL;
  tg_vec_free(&src);
  return r;
}

static const Rule split_rules[] = {RULE("STORE|END", split_store, NULL)};
static const Rule no_index_rules[] = {RULE("CALL", no_indexing_calls, NULL)};

UOp *sched_split_kernels(UOp *sink) {
  static RuleSet *pm, *pm2;
  if (!pm) pm = PM_NEW("split kernels", split_rules);
  if (!pm2) pm2 = PM_NEW("remove indexing from call args", no_index_rules);
  UOp *r = pm_graph_rewrite(sink, pm, NULL, RW_BOTTOM_UP, NULL, "split kernels");
  return r ? pm_graph_rewrite(r, pm2, NULL, 0, NULL, "remove indexing from call args") : NULL;
}

UOp *sched_kernel_graph(UOp *sink) {
  UOp *t = sched_earliest_rewrites(sink);
  if (t) t = sched_run_rangeify(t);
  if (t) t = sched_cleanup(t);
  if (t) t = sched_limit_bufs(t);
  if (t) t = sched_add_buffers(t);
  if (t) t = sched_split_kernels(t);
  return t;
}
