/* cg_lower.c — the lowering passes of codegen after the opts (tinygrad codegen/__init__.py, gpudims.py,
 * late/gater.py, late/linearizer.py, uop/weak.py): REDUCE -> register accumulator, THREAD axis -> core_id, LOADs,
 * index dtype lowering (weakint -> int32 / int64 by bounds), the float-operand cast, gates moved from INDEX to
 * LOAD/STORE, split ENDs, Invalid removal, casted consts, control-flow edges between ranges and parameter numbering. */
#include "cg_internal.h"
#include "uop/shape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

UOp *cg_weak_const(const DType *like, Const v) {
  if (dt_is_bool(like)) return uop_const(DT_BOOL, v);
  return uop_const(dt_is_float(like) ? DT_WEAKFLOAT : DT_WEAKINT, v);
}

/* ================================================================================================================
 * remove reduces: REDUCE(x, ranges) -> acc[0] = identity; loop { acc[0] = acc[0] op x }; value acc[0] (a REDUCE over
 * GROUP_REDUCE ranges first splits into two through a LOCAL buffer: cg_gpu.c)
 * ================================================================================================================ */

typedef struct ReduceCtx {
  int64_t acc_num;
  UOpVec float_sums; /* the kernel's float ADD REDUCEs over ranges, for counting the ones that share a loop */
  int64_t chain_min; /* CHAIN_ACC_MIN: chain the terms into the accumulator where this many sums share the loop */
} ReduceCtx;

static UOp *index0(UOp *buf, const DType *dt) {
  UOp *src[2] = {buf, uop_const_int(DT_WEAKINT, 0)};
  return uop_new(TG_OP_INDEX, dt, src, 2, arg_none());
}

static UOp *after(UOp *buf, UOp *const *deps, size_t n) {
  if (n == 0) return buf;
  UOp **src = tg_malloc((n + 1) * sizeof(UOp *));
  src[0] = buf;
  memcpy(src + 1, deps, n * sizeof(UOp *));
  UOp *r = uop_new(TG_OP_AFTER, buf->dtype, src, n + 1, arg_none());
  tg_free(src);
  return r;
}

/* element 0 of a register accumulator, or all of a vector accumulator's lanes */
static UOp *acc_slot(UOp *buf, const DType *dt, uint32_t lanes) {
  if (lanes == 1) return index0(buf, dt);
  UOp *src[3] = {buf, uop_const_int(DT_WEAKINT, 0), uop_const_int(DT_WEAKINT, lanes)};
  return uop_new(TG_OP_SHRINK, dt, src, 3, arg_none());
}

/* the C lanes of the WMMA a reduce body is made of (WMMA, or a sum of WMMAs: an unrolled K), 0 for none */
static uint32_t wmma_lanes(const UOp *x) {
  if (x->op == TG_OP_WMMA) return x->src[2]->op == TG_OP_STACK ? x->src[2]->nsrc : 1;
  if (x->op == TG_OP_ADD) return wmma_lanes(x->src[0]);
  return 0;
}

/* acc + x where x is WMMAs (tinygrad's pm_wmma_add): the accumulator becomes the first WMMA's C */
static UOp *wmma_accumulate(UOp *acc, UOp *x) {
  UOp *f = cg_wmma_fold_add(x, acc);
  if (f) return f;
  if (x->op == TG_OP_ADD && wmma_lanes(x->src[0])) return wmma_accumulate(wmma_accumulate(acc, x->src[0]), x->src[1]);
  return uop_add(acc, x);
}

/* ---- chained accumulation (not tinygrad's IR, but tinygrad's rendered text: its C-style renderers drop the
 * parentheses of a right operand of the same op, so tinygrad's acc + (a + b) compiles as (acc + a) + b) ----
 * The expander folds a reduce's UNROLL lanes into one addend, acc + ((p0 + p1) + ...); with the accumulator first,
 * ((acc + p0) + p1) + ..., every product is one fused multiply-add into the accumulator instead of a multiply, the
 * adds of a separate sum, and one more add. That makes each accumulator one chain of dependent adds, which only
 * pays where enough accumulators share the loop to hide the add latency (a register tile); a lone accumulator (a
 * matrix-vector row) keeps the tree. */

static bool is_float_add(const UOp *u) { return u->op == TG_OP_ADD && dt_is_float(u->dtype->scalar); }

/* the float sums of ctx that loop over the same ranges as r */
static int64_t sums_sharing_loop(const ReduceCtx *ctx, const UOp *r) {
  int64_t n = 0;
  for (size_t i = 0; i < ctx->float_sums.len; i++) {
    const UOp *o = ctx->float_sums.data[i];
    bool same = o->nsrc == r->nsrc;
    for (uint32_t k = 1; same && k < r->nsrc; k++) same = o->src[k] == r->src[k];
    n += same;
  }
  return n;
}

/* the terms of x's left spine of float ADDs, first term first (at most max); their count */
static size_t left_spine(UOp *x, UOp **terms, size_t max) {
  size_t n = 0;
  while (is_float_add(x) && n + 1 < max) terms[n++] = x->src[1], x = x->src[0];
  terms[n++] = x;
  for (size_t i = 0; i < n / 2; i++) {
    UOp *t = terms[i];
    terms[i] = terms[n - 1 - i], terms[n - 1 - i] = t;
  }
  return n;
}

#define CHAIN_MAX_TERMS 64

/* The terms of x's left spine (the expander's fold of a reduce's UNROLL lanes) into t (at most max); a vector
 * accumulator's lane STACK splits lane by lane into STACKs of the lanes' terms when every lane has the same number.
 * 0 when x is not a sum of terms. */
static size_t chain_terms(UOp *x, UOp **t, size_t max) {
  if (x->op == TG_OP_STACK && x->tag == CG_TAG_VECTOR_LANES) {
    uint32_t lanes = x->nsrc;
    size_t m = left_spine(x->src[0], t, max);
    if (m < 2 || m >= max) return 0;
    /* lane l's terms at lt + l*m; a lane with one more term than m (it stops the split) writes one past its row */
    UOp **lt = tg_malloc(((size_t)lanes * m + 1) * sizeof(UOp *)), **col = tg_malloc(lanes * sizeof(UOp *));
    bool even = true;
    for (uint32_t l = 0; l < lanes && even; l++) even = left_spine(x->src[l], lt + (size_t)l * m, m + 1) == m;
    for (size_t j = 0; even && j < m; j++) {
      for (uint32_t l = 0; l < lanes; l++) col[l] = lt[(size_t)l * m + j];
      t[j] = uop_new_tagged(TG_OP_STACK, x->dtype, col, lanes, arg_none(), CG_TAG_VECTOR_LANES);
    }
    tg_free(lt);
    tg_free(col);
    return even ? m : 0;
  }
  size_t m = left_spine(x, t, max);
  return m >= 2 && m < max ? m : 0;
}

static UOp *reduce_to_acc(RwCtx *rw, UOp *r, UOp **m) {
  TG_UNUSED(m);
  ReduceCtx *ctx = rw->ctx;
  if (r->nsrc < 2 || r->arg.kind != ARG_REDUCE) return NULL;
  if (r->arg.red.naxes != 0) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: horizontal (vector) REDUCE not supported yet");
    return NULL;
  }
  TgOp op = (TgOp)r->arg.red.op;
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = ctx->acc_num++;
  p.multiple_of = 1;
  p.axis = -1;
  p.dtype = r->dtype;
  p.addrspace = ADDR_REG;
  /* a vector accumulator (cg_expand): a register buffer of its lanes, read and written whole */
  uint32_t lanes = r->src[0]->op == TG_OP_STACK && r->src[0]->tag == CG_TAG_VECTOR_LANES ? r->src[0]->nsrc : 1;
  uint32_t wlanes = op == TG_OP_ADD ? wmma_lanes(r->src[0]) : 0; /* a tensor core's accumulator: its C fragment */
  if (wlanes > 1) lanes = wlanes;
  UOp *size = uop_const_int(DT_WEAKINT, lanes);
  UOp *acc = uop_new(TG_OP_BUFFER, r->dtype, &size, 1, arg_param(&p));
  /* ranges the value lives in that this reduce does not loop over (and that no inner END closed) */
  UOpVec topo = {0}, ended = {0}, input_ranges = {0};
  uop_toposort(r->src[0], NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_END) cg_ended_ranges(topo.data[i], &ended);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *x = topo.data[i];
    bool mine = false;
    for (uint32_t k = 1; k < r->nsrc; k++) mine |= r->src[k] == x;
    if (x->op == TG_OP_RANGE && !mine && !cg_vec_has(&ended, x)) tg_vec_push(&input_ranges, x);
  }
  UOp *ident = lanes > 1 ? uop_const(r->dtype, uop_identity_element(op, r->dtype))
                         : cg_weak_const(r->dtype, uop_identity_element(op, r->dtype));
  if (lanes > 1) {
    UOp *ids[64];
    for (uint32_t k = 0; k < lanes; k++) ids[k] = ident;
    ident = uop_new(TG_OP_STACK, r->dtype, ids, lanes, arg_none());
  }
  UOp *st[2] = {acc_slot(after(acc, input_ranges.data, input_ranges.len), r->dtype, lanes), ident};
  UOp *acc_init = uop_new(TG_OP_STORE, DT_VOID, st, 2, arg_none());
  UOpVec deps = {0};
  tg_vec_push(&deps, acc_init);
  for (uint32_t k = 1; k < r->nsrc; k++) tg_vec_push(&deps, r->src[k]);
  UOp *acc_initted = after(acc, deps.data, deps.len);
  UOp *slot = acc_slot(acc_initted, r->dtype, lanes);
  UOp *cur = lanes > 1 ? uop_new(TG_OP_LOAD, r->dtype, &slot, 1, arg_none()) : slot;
  UOp *terms[CHAIN_MAX_TERMS];
  size_t nterms = 0;
  if (!wlanes && op == TG_OP_ADD && dt_is_float(r->dtype->scalar) && ctx->chain_min > 0 &&
      sums_sharing_loop(ctx, r) >= ctx->chain_min)
    nterms = chain_terms(r->src[0], terms, CHAIN_MAX_TERMS);
  UOp *sum = cur;
  for (size_t j = 0; j < nterms; j++) sum = uop_add(sum, terms[j]);
  UOp *upd[2] = {slot, wlanes ? wmma_accumulate(cur, r->src[0]) : nterms ? sum : uop_alu2(op, cur, r->src[0])};
  UOp *update = uop_new(TG_OP_STORE, DT_VOID, upd, 2, arg_none());
  deps.data[0] = update;
  UOp *end = cg_end_mergeable(deps.data, deps.len);
  /* a lane's accumulator is read after its own init too: when a later pass finds the lane's update never runs (a
   * gate that is false for this lane) and drops it, the init store must stay (the lanes share one END) */
  UOp *fin[2] = {acc_init, end};
  UOp *ret = acc_slot(cg_reduce_is_lane(r) ? after(acc, fin, 2) : after(acc, &end, 1), r->dtype, lanes);
  if (lanes > 1) ret = uop_new(TG_OP_LOAD, r->dtype, &ret, 1, arg_none()); /* lanes are read by INDEX(value, lane) */
  tg_vec_free(&topo); tg_vec_free(&ended); tg_vec_free(&input_ranges); tg_vec_free(&deps);
  return ret;
}

static const Rule reduce_rules[] = {
    /* a REDUCE over ranges becomes a register accumulator: init store, update store inside the loop, END */
    RULE("r:(REDUCE _ _ ...)", reduce_to_acc, NULL),
};

UOp *cg_remove_reduces(UOp *sink) {
  sink = cg_group_reduces(sink); /* GROUP_REDUCE: partials through LOCAL memory first (cg_gpu.c) */
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("remove reduces", reduce_rules);
  ReduceCtx ctx = {0};
  ctx.chain_min = tg_getenv_int("CHAIN_ACC_MIN", 8);
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op == TG_OP_REDUCE && u->nsrc >= 2 && u->arg.kind == ARG_REDUCE && u->arg.red.op == TG_OP_ADD &&
        dt_is_float(u->dtype->scalar))
      tg_vec_push(&ctx.float_sums, u);
  }
  tg_vec_free(&topo);
  UOp *ret = pm_graph_rewrite(sink, pm, &ctx, 0, NULL, "remove reduces");
  tg_vec_free(&ctx.float_sums);
  return ret ? cg_merge_reduce_ends(ret) : NULL;
}

/* ================================================================================================================
 * add loads: a value read from GLOBAL / LOCAL / REG memory is LOADed where it is used
 * ================================================================================================================ */

/* tinygrad UOp.addrspace (-1 for None) */
/* a memory operand (tinygrad's addrspace, memoized in the rewrite's cache: uop/shape.h) is read through a LOAD */
static UOp *maybe_load(ShapeCache *c, UOp *u) {
  AddrSpace a = uop_addrspace(c, u);
  if (a == ADDR_GLOBAL || a == ADDR_LOCAL || a == ADDR_REG) return uop_new(TG_OP_LOAD, u->dtype, &u, 1, arg_none());
  return u;
}

static UOp *load_srcs(RwCtx *rw, UOp *x, UOp **m) {
  TG_UNUSED(m);
  if (x->op == TG_OP_BITCAST && x->dtype->count != x->src[0]->dtype->count) return NULL; /* shape-changing bitcast */
  UOp **src = tg_malloc(x->nsrc * sizeof(UOp *));
  bool changed = false;
  for (uint32_t i = 0; i < x->nsrc; i++) {
    src[i] = (x->op == TG_OP_STORE && i != 1) ? x->src[i] : maybe_load(rw->ctx, x->src[i]);
    changed |= src[i] != x->src[i];
  }
  UOp *r = changed ? uop_new_tagged(uop_op(x), x->dtype, src, x->nsrc, x->arg, x->tag) : NULL;
  tg_free(src);
  return r;
}

static const Rule add_loads_rules[] = {
    /* an elementwise op / reduce / stack reads memory operands through a LOAD; a STORE loads its value */
    RULE("x:Elementwise|REDUCE|WMMA|STACK|STORE", load_srcs, NULL),
};

UOp *cg_add_loads(UOp *sink) {
  static RuleSet *set;
  static const RuleSet *pm;
  if (!set || !pm) { /* the part set is the guard: a static that is only written would be optimized away */
    set = PM_NEW("pm_add_loads", add_loads_rules);
    pm = pm_concat(sym_symbolic_simple(), set);
  }
  ShapeCache c; /* only its addrspace memo is used; nodes it holds are sources of the graph being rewritten */
  shape_cache_init(&c);
  UOp *r = pm_graph_rewrite(sink, pm, &c, 0, NULL, "expand broadcast / add loads");
  shape_cache_free(&c);
  return r;
}

/* ================================================================================================================
 * weak dtypes: pm_commit_weak and the index dtype lowering (tinygrad uop/weak.py)
 * ================================================================================================================ */

static const DType *default_dtype(UOp *u) {
  if (u->dtype->scalar == DT_WEAKFLOAT) return dt_default_float();
  i128 lo = uop_vmin(u), hi = uop_vmax(u);
  return lo < INT32_MIN || hi > INT32_MAX ? DT_INT64 : DT_INT32;
}

static UOp *commit_srcs_at(UOp *u, const DType *dt, size_t start) {
  UOp **src = tg_malloc((u->nsrc + 1) * sizeof(UOp *));
  for (uint32_t i = 0; i < u->nsrc; i++)
    src[i] = i >= start && dt_is_weak(u->src[i]->dtype) && !uop_is_invalid(u->src[i]) ? uop_commit_weak(u->src[i], dt)
                                                                                        : u->src[i];
  UOp *r = uop_new_tagged(uop_op(u), NULL, src, u->nsrc, u->arg, u->tag);
  tg_free(src);
  return r;
}

static UOp *commit_weak_srcs(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  bool any_weak = false;
  const DType *dt = NULL;
  for (uint32_t i = 0; i < u->nsrc; i++) {
    if (uop_is_invalid(u->src[i])) continue;
    any_weak |= dt_is_weak(u->src[i]->dtype);
    dt = dt ? dt_least_upper(dt, u->src[i]->dtype) : u->src[i]->dtype;
  }
  if (!any_weak || !dt || dt_is_weak(dt)) return NULL;
  return commit_srcs_at(u, dt, 0);
}

static UOp *commit_store_value(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (uop_is_invalid(u->src[1])) return NULL;
  UOp **src = tg_malloc(u->nsrc * sizeof(UOp *));
  memcpy(src, u->src, u->nsrc * sizeof(UOp *));
  src[1] = uop_commit_weak(u->src[1], u->src[0]->dtype->scalar);
  UOp *r = uop_new_tagged(TG_OP_STORE, u->dtype, src, u->nsrc, u->arg, u->tag);
  tg_free(src);
  return r;
}

static const Rule commit_weak_rules[] = {
    /* a binary / ternary op with weak and concrete operands commits the weak ones at the common dtype */
    RULE("u:Binary|Ternary", commit_weak_srcs, NULL),
    /* demand from the destination: a STORE's weak value commits at the destination's dtype */
    RULE("u:(STORE _ _.weaks ...)", commit_store_value, NULL),
};

const RuleSet *cg_pm_commit_weak(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_commit_weak", commit_weak_rules);
  return pm;
}

/* pm_lower_weak: a weak CONST lives at the default width */
static UOp *lower_weak_const(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (uop_is_invalid(u)) return NULL;
  return uop_cast(uop_const(default_dtype(u), u->arg.c), u->dtype);
}

/* a weakint Variable / PARAM in the ALU address space takes its default width */
static UOp *lower_weak_param(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (u->arg.kind != ARG_PARAM || u->arg.param->addrspace != ADDR_ALU) return NULL;
  ParamArg p = *u->arg.param;
  p.dtype = default_dtype(u);
  UOp *n = uop_new_tagged(uop_op(u), p.dtype, u->src, u->nsrc, arg_param(&p), u->tag);
  return uop_cast(n, DT_WEAKINT);
}

/* an op whose sources all became concrete computes at their common width, then casts back to its weak dtype */
static UOp *lower_weak_node(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  size_t start = u->op == TG_OP_WHERE ? 1 : 0;
  UOp **src = tg_malloc((u->nsrc + 1) * sizeof(UOp *));
  bool changed = false, still_weak = false;
  for (uint32_t i = 0; i < u->nsrc; i++) {
    UOp *s = u->src[i];
    src[i] = s->op == TG_OP_CAST && dt_is_weak(s->dtype) ? s->src[0] : s;
    changed |= src[i] != s;
    if (i >= start && dt_is_weak(src[i]->dtype) && !uop_is_invalid(src[i])) still_weak = true;
  }
  UOp *ret = NULL;
  if (changed && !still_weak) {
    const DType *dt;
    if (op_has(uop_op(u), OPP_BINARY)) {
      dt = default_dtype(u);
      for (uint32_t i = start; i < u->nsrc; i++)
        if (!uop_is_invalid(src[i])) dt = dt_least_upper(dt, src[i]->dtype);
      dt = dt_strong(dt);
    } else {
      dt = uop_derive_dtype(uop_op(u), src, u->nsrc, &u->arg);
      if (!dt) dt = dt_strong(u->dtype);
      dt = dt_strong(dt);
    }
    for (uint32_t i = start; i < u->nsrc; i++)
      if (!uop_is_invalid(src[i])) src[i] = uop_commit_weak(src[i], dt);
    UOp *n = uop_new_tagged(uop_op(u), NULL, src, u->nsrc, u->arg, u->tag);
    ret = uop_cast(n, u->dtype);
  }
  tg_free(src);
  return ret;
}

static const Rule lower_weak_rules[] = {
    RULE("u:CONST.weaks", lower_weak_const, NULL),
    RULE("u:PARAM|BUFFER.weakint", lower_weak_param, NULL),
    RULE("u:Binary|Unary|WHERE|RANGE|STACK|SPECIAL", lower_weak_node, NULL),
};

static const RuleSet *pm_lower_weak(void) {
  static RuleSet *set;
  static const RuleSet *pm;
  if (!set || !pm) { /* the part set is the guard: a static that is only written would be optimized away */
    set = PM_NEW("pm_lower_weak", lower_weak_rules);
    pm = pm_concat(sym_lower_weak_casts(), set);
  }
  return pm;
}

static UOp *lower_one(UOp *s) {
  UOp *r = pm_graph_rewrite(s, pm_lower_weak(), NULL, 0, NULL, "lower weak");
  if (!r) return NULL;
  /* the consumer absorbs the cast on its own edge */
  return r->op == TG_OP_CAST && dt_is_weak(r->dtype) ? r->src[0] : r;
}

/* a concrete node with weak sources: lower the sources (a comparison is lowered whole, to unify its operands) */
static UOp *lower_weak_srcs(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (dt_is_weak(u->dtype)) return NULL;
  bool any = false;
  for (uint32_t i = 0; i < u->nsrc; i++) any |= dt_is_weak(u->src[i]->dtype) && !uop_is_invalid(u->src[i]);
  if (!any) return NULL;
  if (op_has(uop_op(u), OPP_COMPARISON)) {
    UOp *r = lower_one(u);
    return r == u ? NULL : r;
  }
  UOp **src = tg_malloc(u->nsrc * sizeof(UOp *));
  bool changed = false;
  for (uint32_t i = 0; i < u->nsrc; i++) {
    src[i] = dt_is_weak(u->src[i]->dtype) && !uop_is_invalid(u->src[i]) ? lower_one(u->src[i]) : u->src[i];
    if (!src[i]) { tg_free(src); return NULL; }
    changed |= src[i] != u->src[i];
  }
  UOp *r = changed ? uop_new_tagged(uop_op(u), u->dtype, src, u->nsrc, u->arg, u->tag) : NULL;
  tg_free(src);
  return r;
}

static int64_t buffer_numel(UOp *buf) {
  while (buf->op == TG_OP_AFTER) buf = buf->src[0];
  int64_t n;
  if ((buf->op == TG_OP_PARAM || buf->op == TG_OP_BUFFER) && buf->nsrc >= 1 && uop_ssimplify_int(buf->src[0], &n))
    return n;
  return -1;
}

/* a valid index into an n-element buffer lives in [0,n): a gated long index narrows when n-1 fits int32 */
static UOp *narrow_gated_long(RwCtx *rw, UOp *u, UOp **m) { /* u buf gate idx */
  TG_UNUSED(rw);
  int64_t n = buffer_numel(m[1]);
  if (n < 0 || n - 1 > INT32_MAX) return NULL;
  UOp *w[3] = {m[2], uop_cast(m[3], DT_INT32), u->src[1]->src[2]};
  UOp *valid = uop_new(TG_OP_WHERE, DT_INT32, w, 3, arg_none());
  UOp **src = tg_malloc(u->nsrc * sizeof(UOp *));
  memcpy(src, u->src, u->nsrc * sizeof(UOp *));
  src[1] = valid;
  UOp *r = uop_new_tagged(uop_op(u), u->dtype, src, u->nsrc, u->arg, u->tag);
  tg_free(src);
  return r;
}

static const Rule lower_index_rules[] = {
    /* a concrete node with weak sources lowers them (bounds pick int32 or int64) */
    RULE("u:All", lower_weak_srcs, NULL),
    RULE("u:(INDEX|SHRINK buf (WHERE gate idx.int64 invalid) ...)", narrow_gated_long, NULL),
};

const RuleSet *cg_pm_lower_index_dtype(void) {
  static RuleSet *set;
  static const RuleSet *pm;
  if (!set || !pm) { /* the part set is the guard: a static that is only written would be optimized away */
    set = PM_NEW("pm_lower_index_dtype", lower_index_rules);
    pm = pm_concat(pm_concat(cg_pm_commit_weak(), sym_cast_weak()), set);
  }
  return pm;
}

/* ================================================================================================================
 * float ALUs take a float operand
 * ================================================================================================================ */

static UOp *cast_float_operand(RwCtx *rw, UOp *u, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (u->src[0]->dtype == u->dtype) return NULL;
  UOp *c = uop_cast(u->src[0], u->dtype);
  return uop_new(uop_op(u), u->dtype, &c, 1, u->arg);
}

static const Rule cast_float_alu_rules[] = {
    RULE("u:(SIN|LOG2|EXP2|SQRT|RECIPROCAL _)", cast_float_operand, NULL),
};

const RuleSet *cg_pm_cast_float_alu(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_cast_float_alu", cast_float_alu_rules);
  return pm;
}

/* ================================================================================================================
 * move gates from INDEX to LOAD / STORE (tinygrad late/gater.py)
 * ================================================================================================================ */

static UOp *zero_like(const DType *d) { return uop_const(d, dt_is_float(d) ? const_float(0.0) : dt_is_bool(d) ? const_bool(false) : const_int(0)); }

static UOp *with_idx(UOp *mop, UOp *idx) {
  UOp **src = tg_malloc(mop->nsrc * sizeof(UOp *));
  memcpy(src, mop->src, mop->nsrc * sizeof(UOp *));
  src[1] = idx;
  UOp *r = uop_new_tagged(uop_op(mop), mop->dtype, src, mop->nsrc, mop->arg, mop->tag);
  tg_free(src);
  return r;
}

static UOp *gate_load(RwCtx *rw, UOp *l, UOp **m) { /* l mop gate idx */
  TG_UNUSED(rw);
  if (l->nsrc != 1) return NULL;
  UOp *alt = zero_like(l->dtype);
  int64_t lanes;
  if (m[1]->op == TG_OP_SHRINK && uop_ssimplify_int(m[1]->src[2], &lanes) && lanes > 1 && lanes <= 64) {
    UOp *z[64]; /* a vector load's alt value is a vector of zeros (tinygrad vconst_like) */
    for (int64_t k = 0; k < lanes; k++) z[k] = alt;
    alt = uop_new(TG_OP_STACK, l->dtype, z, (size_t)lanes, arg_none());
  }
  UOp *src[3] = {with_idx(m[1], m[3]), alt, m[2]};
  return uop_new(TG_OP_LOAD, l->dtype, src, 3, arg_none());
}

static UOp *gate_store(RwCtx *rw, UOp *s, UOp **m) { /* s mop gate idx data */
  TG_UNUSED(rw);
  if (s->nsrc != 2) return NULL;
  UOp *src[3] = {with_idx(m[1], m[3]), m[4], m[2]};
  return uop_new(TG_OP_STORE, DT_VOID, src, 3, arg_none());
}

/* where after a gated load with the same gate: the load's alt value is the where's other branch */
static UOp *move_where_load(UOp *l, UOp *a, UOp *w) {
  UOp *alt;
  if (uop_is_invalid(a)) alt = zero_like(l->dtype);
  else if (a->op == TG_OP_CONST) alt = uop_const(l->dtype, a->arg.c);
  else if (a->op == TG_OP_CAST && a->src[0]->dtype == l->dtype) alt = a->src[0];
  else alt = uop_cast(a, l->dtype);
  UOp *src[3] = {l->src[0], alt, l->src[2]};
  return uop_cast(uop_new(TG_OP_LOAD, l->dtype, src, 3, arg_none()), w->dtype);
}

static UOp *unwrap_cast_load(UOp *x) { return x->op == TG_OP_CAST ? x->src[0] : x; }

static UOp *where_gated_load_t(RwCtx *rw, UOp *w, UOp **m) { /* w gate lt a */
  TG_UNUSED(rw);
  UOp *l = unwrap_cast_load(m[2]);
  if (l->op != TG_OP_LOAD || l->nsrc != 3 || l->src[2] != m[1]) return NULL;
  return move_where_load(l, m[3], w);
}

static UOp *where_gated_load_f(RwCtx *rw, UOp *w, UOp **m) { /* w gate a lf */
  TG_UNUSED(rw);
  UOp *l = unwrap_cast_load(m[3]);
  if (l->op != TG_OP_LOAD || l->nsrc != 3) return NULL;
  UOp *g = l->src[2]; /* the load's gate must be NOT gate: (gate != true) */
  if (!(g->op == TG_OP_CMPNE && g->src[0] == m[1] && g->src[1]->op == TG_OP_CONST && g->src[1]->arg.c.kind == CK_BOOL &&
        g->src[1]->arg.c.b))
    return NULL;
  return move_where_load(l, m[2], w);
}

static const Rule gate_rules[] = {
    /* the gate of an INDEX moves to the LOAD (alt value 0) or the STORE */
    RULE("l:(LOAD mop:(INDEX|SHRINK _ (WHERE gate idx invalid) ...))", gate_load, NULL),
    RULE("s:(STORE mop:(INDEX|SHRINK _ (WHERE gate idx invalid) ...) data)", gate_store, NULL),
    /* a where around a gated load becomes the load's alt value */
    RULE("w:(WHERE gate lt a)", where_gated_load_t, NULL),
    RULE("w:(WHERE gate a lf)", where_gated_load_f, NULL),
};

const RuleSet *cg_pm_move_gates_from_index(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_move_gates_from_index", gate_rules);
  return pm;
}

/* ================================================================================================================
 * split ENDs (one range each, innermost first) and remove Invalid
 * ================================================================================================================ */

static int range_ptr_cmp_desc(const void *pa, const void *pb) {
  const UOp *a = *(UOp *const *)pa, *b = *(UOp *const *)pb;
  return -cg_range_arg_cmp(a->arg.range, b->arg.range);
}

static UOp *split_end(RwCtx *rw, UOp *e, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  UOpVec rngs = {0}, backedge = {0};
  CgRanges rr;
  cg_ranges_init(&rr);
  for (uint32_t i = 1; i < e->nsrc; i++) {
    UOp *x = e->src[i];
    if (x->dtype == DT_VOID || x->dtype == DT_BOOL) { tg_vec_push(&backedge, x); continue; }
    const UOpVec *s = cg_ranges_of(&rr, x);
    for (size_t k = 0; k < s->len; k++)
      if (!cg_vec_has(&rngs, s->data[k])) tg_vec_push(&rngs, s->data[k]);
  }
  cg_ranges_free(&rr);
  if (rngs.len > 1) qsort(rngs.data, rngs.len, sizeof(UOp *), range_ptr_cmp_desc);
  UOp *ret = e->src[0];
  for (size_t i = 0; i < rngs.len; i++) {
    UOp *src[2] = {ret, rngs.data[i]};
    ret = uop_new(TG_OP_END, DT_VOID, src, 2, arg_none());
  }
  if (backedge.len) {
    tg_vec_reserve(&backedge, backedge.len + 1);
    memmove(backedge.data + 1, backedge.data, backedge.len * sizeof(UOp *));
    backedge.data[0] = ret;
    backedge.len++;
    ret = uop_new(TG_OP_END, DT_VOID, backedge.data, backedge.len, arg_none());
  }
  tg_vec_free(&rngs); tg_vec_free(&backedge);
  return ret == e ? NULL : ret;
}

static const Rule split_ends_rules[] = {
    RULE("e:END", split_end, NULL),
};

const RuleSet *cg_pm_split_ends(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_split_ends", split_ends_rules);
  return pm;
}

static UOp *invalid_gate_to_zero(RwCtx *rw, UOp *w, UOp **m) { /* w cond x */
  TG_UNUSED(rw);
  UOp *src[3] = {m[1], m[2], zero_like(w->dtype)};
  return uop_new(TG_OP_WHERE, w->dtype, src, 3, arg_none());
}

static UOp *stack_invalid_to_zero(RwCtx *rw, UOp *s, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  bool any = false;
  UOp **src = tg_malloc(s->nsrc * sizeof(UOp *));
  for (uint32_t i = 0; i < s->nsrc; i++) {
    any |= uop_is_invalid(s->src[i]);
    src[i] = uop_is_invalid(s->src[i]) ? zero_like(s->dtype->scalar) : s->src[i];
  }
  UOp *r = any ? uop_new(TG_OP_STACK, s->dtype, src, s->nsrc, s->arg) : NULL;
  tg_free(src);
  return r;
}

static const Rule remove_invalid_rules[] = {
    /* what is left of an Invalid gate computes 0 where the gate is false (the value is unused there) */
    RULE("w:(WHERE cond x invalid)", invalid_gate_to_zero, NULL),
    RULE("s:STACK", stack_invalid_to_zero, NULL),
};

const RuleSet *cg_pm_remove_invalid(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_remove_invalid", remove_invalid_rules);
  return pm;
}

/* ================================================================================================================
 * casted consts: every literal is spelled CAST(dt, CONST(python value)) (tinygrad UOp.cconst)
 * ================================================================================================================ */

static UOp *casted_const(RwCtx *rw, UOp *c, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (dt_is_weak(c->dtype) || c->dtype == DT_VOID || c->dtype->count > 1 || uop_is_invalid(c)) return NULL;
  UOp *w;
  switch (c->arg.c.kind) {
  case CK_BOOL: w = uop_const(DT_BOOL, c->arg.c); break;
  case CK_INT:
    /* a uint64 above int64's range is spelled by its two's complement value (CAST makes it the same number) */
    w = uop_const(DT_WEAKINT, c->arg.c);
    break;
  case CK_FLOAT: w = uop_const(DT_WEAKFLOAT, c->arg.c); break;
  default: return NULL;
  }
  return uop_new(TG_OP_CAST, c->dtype, &w, 1, arg_none());
}

static const Rule casted_const_rules[] = {
    RULE("c:CONST", casted_const, NULL),
};

UOp *cg_casted_consts(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_casted_consts", casted_const_rules);
  return pm_graph_rewrite(sink, pm, NULL, RW_WALK, NULL, "casted consts");
}

/* ================================================================================================================
 * control flow: a RANGE that must run after another loop (a sibling) or inside another (nesting) gets it as a source
 * ================================================================================================================ */

/* f(u): u with f applied to its sources; a RANGE with an edge also gets f(edge target) as its last source */
typedef struct CfgMap { const UOpVec *from, *to; UOpMap done; bool cycle; } CfgMap;

static UOp *cfg_apply(CfgMap *cm, UOp *u) {
  static int in_progress; /* address used as the "being rebuilt" marker */
  void **hit = uopmap_get(&cm->done, u);
  if (hit) {
    if (*hit == &in_progress) { /* an edge closed a cycle: the loop order cannot be expressed */
      cm->cycle = true;
      return u;
    }
    return *hit;
  }
  uopmap_put(&cm->done, u, &in_progress);
  UOp *edge = NULL;
  if (u->op == TG_OP_RANGE)
    for (size_t i = 0; i < cm->from->len; i++)
      if (cm->from->data[i] == u) edge = cm->to->data[i];
  UOp **src = tg_malloc((u->nsrc + 1) * sizeof(UOp *));
  bool changed = edge != NULL;
  for (uint32_t i = 0; i < u->nsrc; i++) {
    src[i] = cfg_apply(cm, u->src[i]);
    changed |= src[i] != u->src[i];
  }
  size_t n = u->nsrc;
  if (edge) src[n++] = cfg_apply(cm, edge);
  UOp *r = changed ? uop_new_tagged(uop_op(u), u->dtype, src, n, u->arg, u->tag) : u;
  tg_free(src);
  uopmap_put(&cm->done, u, r);
  return r;
}

UOp *cg_add_control_flow(UOp *sink) {
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  UOpMap index;
  uopmap_init(&index);
  for (size_t i = 0; i < topo.len; i++) uopmap_put(&index, topo.data[i], (void *)(uintptr_t)(i + 1));
  UOpVec *deps = tg_calloc(topo.len, sizeof(UOpVec));
  UOpVec nest_key = {0}, nest_val = {0}; /* nesting: END -> its parent END / SINK, in insertion order */
#define IDX(u) ((size_t)(uintptr_t)*uopmap_get(&index, (u)) - 1)
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    UOpVec *d = &deps[i];
    for (uint32_t k = 0; k < u->nsrc; k++) {
      UOpVec *sd = &deps[IDX(u->src[k])];
      for (size_t j = 0; j < sd->len; j++)
        if (!cg_vec_has(d, sd->data[j])) tg_vec_push(d, sd->data[j]);
    }
    if (u->op == TG_OP_END || u->op == TG_OP_SINK) {
      for (size_t j = 0; j < d->len; j++) {
        UOp *x = d->data[j];
        if (x->op != TG_OP_END || cg_vec_has(&nest_key, x)) continue;
        if (u->op == TG_OP_SINK || cg_vec_has(&deps[IDX(x)], u->src[1])) {
          tg_vec_push(&nest_key, x);
          tg_vec_push(&nest_val, u);
        }
      }
    }
    if (u->op == TG_OP_RANGE || u->op == TG_OP_END) tg_vec_push(d, u);
  }
  /* siblings: per parent, its children in nesting order */
  UOpVec parents = {0}, edge_from = {0}, edge_to = {0};
  for (size_t i = 0; i < nest_val.len; i++)
    if (!cg_vec_has(&parents, nest_val.data[i])) tg_vec_push(&parents, nest_val.data[i]);
  for (size_t p = 0; p < parents.len; p++) {
    UOp *k = parents.data[p];
    UOpVec v = {0};
    for (size_t i = 0; i < nest_key.len; i++)
      if (nest_val.data[i] == k) tg_vec_push(&v, nest_key.data[i]);
    /* stable sort by how many siblings each depends on */
    size_t *cnt = tg_calloc(v.len, sizeof(size_t));
    for (size_t a = 0; a < v.len; a++)
      for (size_t b = 0; b < v.len; b++) cnt[a] += cg_vec_has(&deps[IDX(v.data[a])], v.data[b]);
    for (size_t a = 1; a < v.len; a++) /* insertion sort: stable */
      for (size_t b = a; b > 0 && cnt[b - 1] > cnt[b]; b--) {
        size_t tc = cnt[b]; cnt[b] = cnt[b - 1]; cnt[b - 1] = tc;
        UOp *tu = v.data[b]; v.data[b] = v.data[b - 1]; v.data[b - 1] = tu;
      }
    tg_free(cnt);
    UOpVec order = {0};
    if (k->op != TG_OP_SINK) tg_vec_push(&order, k->src[1]);
    for (size_t i = 0; i < v.len; i++) tg_vec_push(&order, v.data[i]);
    for (size_t i = 0; i + 1 < order.len; i++) {
      UOp *x = order.data[i], *y = order.data[i + 1];
      tg_vec_push(&edge_from, y->src[1]);
      tg_vec_push(&edge_to, x);
    }
    tg_vec_free(&order);
    tg_vec_free(&v);
  }
#undef IDX
  UOp *ret = sink;
  if (edge_from.len) {
    CfgMap cm = {&edge_from, &edge_to, {0}, false};
    uopmap_init(&cm.done);
    ret = cfg_apply(&cm, sink);
    uopmap_free(&cm.done);
    if (cm.cycle) {
      tg_set_error(TG_ERR_RUNTIME, "codegen: add control flow: the loop order has a cycle (two ENDs of one RANGE?)");
      ret = NULL;
    }
  }
  for (size_t i = 0; i < topo.len; i++) tg_vec_free(&deps[i]);
  tg_free(deps);
  uopmap_free(&index);
  tg_vec_free(&topo); tg_vec_free(&nest_key); tg_vec_free(&nest_val); tg_vec_free(&parents);
  tg_vec_free(&edge_from); tg_vec_free(&edge_to);
  return ret;
}

/* ================================================================================================================
 * number params: Variable PARAMs (slot -1, e.g. core_id) take the slots after the buffers
 * ================================================================================================================ */

UOp *cg_number_params(UOp *sink) {
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  int64_t next = 0;
  for (size_t i = 0; i < topo.len; i++)
    if (topo.data[i]->op == TG_OP_PARAM && topo.data[i]->arg.kind == ARG_PARAM && topo.data[i]->arg.param->slot != -1) next++;
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_PARAM || u->arg.kind != ARG_PARAM || u->arg.param->slot != -1) continue;
    ParamArg p = *u->arg.param;
    p.slot = next++;
    tg_vec_push(&from, u);
    tg_vec_push(&to, uop_new_tagged(TG_OP_PARAM, u->dtype, u->src, u->nsrc, arg_param(&p), u->tag));
  }
  UOp *ret = from.len ? uop_substitute(sink, from.data, to.data, from.len) : sink;
  tg_vec_free(&topo); tg_vec_free(&from); tg_vec_free(&to);
  return ret;
}

/* ================================================================================================================
 * pm_move_where_on_load: a where around a load moves its conditions into the load's valid (tinygrad symbolic.py)
 * ================================================================================================================ */

static UOp *index_valid_of(UOp *idx) {
  return idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2]) ? idx->src[0] : uop_const_bool(true);
}
static UOp *index_expr_of(UOp *idx) { return idx->op == TG_OP_WHERE && uop_is_invalid(idx->src[2]) ? idx->src[1] : idx; }

static UOp *where_on_load(UOp *cond, UOp *load_like) {
  UOp *ind = load_like->op == TG_OP_CAST ? load_like->src[0] : load_like;
  if (ind->op != TG_OP_INDEX || ind->nsrc != 2) return NULL;
  UOp *buf = ind->src[0], *idx = ind->src[1];
  UOpVec clauses = {0}, in_load = {0}, idx_slice = {0}, moved = {0}, keep = {0};
  uop_split(cond, TG_OP_AND, &clauses);
  UOp *load_valid = index_valid_of(idx);
  uop_split(load_valid, TG_OP_AND, &in_load);
  uop_toposort(idx, NULL, NULL, &idx_slice);
  CgRanges rr;
  cg_ranges_init(&rr);
  const UOpVec *idx_ranges = cg_ranges_of(&rr, idx);
  for (size_t i = 0; i < clauses.len; i++) {
    UOp *c = clauses.data[i];
    if (cg_vec_has(&in_load, c)) continue;
    /* movable: the clause's ranges are the index's, and it reads no memory the index does not */
    bool ok = true;
    const UOpVec *cr = cg_ranges_of(&rr, c);
    for (size_t k = 0; k < cr->len && ok; k++) ok = cg_vec_has(idx_ranges, cr->data[k]);
    UOpVec cs = {0};
    uop_toposort(c, NULL, NULL, &cs);
    for (size_t k = 0; k < cs.len && ok; k++)
      if (cs.data[k]->op == TG_OP_INDEX && !cg_vec_has(&idx_slice, cs.data[k])) ok = false;
    tg_vec_free(&cs);
    tg_vec_push(ok ? &moved : &keep, c);
  }
  UOp *ret = NULL;
  if (keep.len != clauses.len) {
    UOp *v = load_valid;
    for (size_t i = 0; i < moved.len; i++) v = uop_and(v, moved.data[i]);
    UOp *e = index_expr_of(idx);
    UOp *w[3] = {v, e, uop_invalid()};
    UOp *src[2] = {buf, uop_new(TG_OP_WHERE, e->dtype, w, 3, arg_none())};
    UOp *nidx = uop_new(TG_OP_INDEX, ind->dtype, src, 2, arg_none());
    if (load_like->op == TG_OP_CAST) nidx = uop_cast(nidx, load_like->dtype);
    UOp *k = uop_const_bool(true);
    for (size_t i = 0; i < keep.len; i++) k = uop_and(k, keep.data[i]);
    ret = uop_where(k, nidx, zero_like(nidx->dtype));
  }
  cg_ranges_free(&rr);
  tg_vec_free(&clauses); tg_vec_free(&in_load); tg_vec_free(&idx_slice); tg_vec_free(&moved); tg_vec_free(&keep);
  return ret;
}

static bool is_load_like(const UOp *x) {
  const UOp *i = x->op == TG_OP_CAST ? x->src[0] : x;
  return i->op == TG_OP_INDEX;
}

static UOp *where_load_zero(RwCtx *rw, UOp *w, UOp **m) { /* w cond x */
  TG_UNUSED(rw), TG_UNUSED(w);
  return is_load_like(m[2]) ? where_on_load(m[1], m[2]) : NULL;
}

static UOp *where_zero_load(RwCtx *rw, UOp *w, UOp **m) { /* w cond x */
  TG_UNUSED(rw), TG_UNUSED(w);
  return is_load_like(m[2]) ? where_on_load(uop_not(m[1]), m[2]) : NULL;
}

static const Rule where_on_load_rules[] = {
    RULE("w:(WHERE cond x 0)", where_load_zero, NULL),
    RULE("w:(WHERE cond 0 x)", where_zero_load, NULL),
};

const RuleSet *cg_pm_move_where_on_load(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_move_where_on_load", where_on_load_rules);
  return pm;
}

/* ================================================================================================================
 * indexing_simplify (tinygrad late/coalesce.py, the non-image part): an index simplified under its own valid
 * ================================================================================================================ */

static UOp *simplify_valid_index(RwCtx *rw, UOp *root, UOp **m) { /* buf cond x i */
  TG_UNUSED(rw);
  if (root->nsrc != 2) return NULL;
  UOp *idx = uop_given_valid(m[1], m[2]);
  if (!idx || idx == m[2] || idx == uop_simplify(m[2])) return NULL;
  UOp *w[3] = {m[1], idx, m[3]};
  UOp *src[2] = {m[0], uop_new(TG_OP_WHERE, idx->dtype, w, 3, arg_none())};
  return uop_new(TG_OP_INDEX, root->dtype, src, 2, root->arg);
}

static const Rule indexing_simplify_rules[] = {
    /* the index under its valid: what the valid implies simplifies the index math */
    RULE("(INDEX buf (WHERE cond x i:invalid))", simplify_valid_index, NULL),
};

const RuleSet *cg_pm_indexing_simplify(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("indexing_simplify", indexing_simplify_rules);
  return pm;
}
