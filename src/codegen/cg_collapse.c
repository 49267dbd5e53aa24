/* cg_collapse.c — pm_load_collapse (tinygrad codegen/simplify.py): a REDUCE over a range r that only selects one
 * element (indexing a tensor by another tensor: sum over r of (idx != r ? 0 : x[r])) becomes a gated load x[idx]
 * with no loop. The reduce body's parts that do not depend on r are swapped for placeholder Variables, the body is
 * rewritten by the collapse rules until no range is left, and the placeholders are swapped back. */
#include "cg_internal.h"

#include <stdio.h>

static bool no_range(UOp *u) { return !uop_op_in_backward_slice_with_self(u, TG_OP_RANGE); }
static bool no_load(UOp *u) { return !uop_op_in_backward_slice_with_self(u, TG_OP_INDEX); }

static bool reduce_add0(const UOp *r) {
  return r->arg.kind == ARG_REDUCE && r->arg.red.op == TG_OP_ADD && r->arg.red.naxes == 0;
}

static UOp *reduce_of(UOp *x, UOp *const *ranges, size_t n, const UOp *like) {
  UOp **src = tg_malloc((n + 1) * sizeof(UOp *));
  src[0] = x;
  memcpy(src + 1, ranges, n * sizeof(UOp *));
  UOp *r = uop_new(TG_OP_REDUCE, x->dtype, src, n + 1, like->arg);
  tg_free(src);
  return r;
}

static UOp *zero_of(const DType *d) {
  return uop_const(d, dt_is_float(d) ? const_float(0.0) : dt_is_bool(d) ? const_bool(false) : const_int(0));
}

/* ---- pm_reduce_collapse ---- */

/* (x + y) < c -> x < c - y, y and c outside the loop */
static UOp *lift_add_lt(RwCtx *rw, UOp *root, UOp **m) { /* x y c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (!no_range(m[1]) || !no_range(m[2])) return NULL;
  return uop_lt(m[0], uop_sub(m[2], m[1]));
}

/* x*y < c -> x < ceil(c/y) for a positive int y */
static UOp *lift_mul_lt(RwCtx *rw, UOp *root, UOp **m) { /* x y c */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *y = m[1], *c = m[2];
  if (!no_range(y) || !no_range(c) || !dt_is_int(y->dtype) || uop_vmin(y) <= 0) return NULL;
  return uop_lt(m[0], uop_idiv(uop_add(c, uop_add_int(y, -1)), y));
}

/* sum over r in [0,N) of [lower <= r < upper] * val -> clamp(min(upper,N) - max(lower,0), 0, N) * val */
static UOp *range_sum(UOp *r, UOp *val, UOp *lower, UOp *upper) {
  if (!no_range(val)) return NULL;
  UOp *n = r->src[0];
  UOp *hi = upper ? uop_min(upper, n) : n;
  UOp *lo = lower ? uop_max(lower, uop_const_like_int(r, 0)) : uop_const_like_int(r, 0);
  UOp *cnt = uop_min(uop_max(uop_sub(hi, lo), uop_const_like_int(r, 0)), n);
  return uop_mul(uop_cast(cnt, val->dtype), val);
}
static UOp *sum_lt_upper(RwCtx *rw, UOp *red, UOp **m) { /* red r upper val */
  TG_UNUSED(rw);
  return reduce_add0(red) ? range_sum(m[1], m[3], NULL, m[2]) : NULL;
}
static UOp *sum_ge_lower(RwCtx *rw, UOp *red, UOp **m) { /* red r lower val */
  TG_UNUSED(rw);
  return reduce_add0(red) ? range_sum(m[1], m[3], m[2], NULL) : NULL;
}
static UOp *sum_between(RwCtx *rw, UOp *red, UOp **m) { /* red r lower upper val */
  TG_UNUSED(rw);
  return reduce_add0(red) ? range_sum(m[1], m[4], m[2], m[3]) : NULL;
}

/* an Invalid gate outside the loop moves out of the reduce */
static UOp *gate_out_of_reduce(RwCtx *rw, UOp *red, UOp **m) { /* red cond x i */
  TG_UNUSED(rw);
  if (!reduce_add0(red) || !no_range(m[1])) return NULL;
  return uop_where(m[1], reduce_of(m[2], red->src + 1, red->nsrc - 1, red), m[3]);
}

/* sum of x + y is the sum of x plus the sum of y */
static UOp *split_sum(RwCtx *rw, UOp *red, UOp **m) { /* red x y */
  TG_UNUSED(rw);
  if (!reduce_add0(red)) return NULL;
  return uop_add(reduce_of(m[1], red->src + 1, red->nsrc - 1, red), reduce_of(m[2], red->src + 1, red->nsrc - 1, red));
}

/* (bool PARAM & y).where(c, 0) summed: the PARAM factor leaves the sum */
static UOp *param_and_out(RwCtx *rw, UOp *red, UOp **m) { /* red x y c */
  TG_UNUSED(rw);
  if (!reduce_add0(red)) return NULL;
  UOp *inner = uop_where(m[2], m[3], zero_of(m[3]->dtype));
  return uop_mul(reduce_of(inner, red->src + 1, red->nsrc - 1, red), uop_cast(m[1], red->dtype));
}

/* x * cast(bool gate) -> gate ? x : 0 */
static UOp *mul_casted_bool(RwCtx *rw, UOp *root, UOp **m) { /* x gate */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_where(m[1], m[0], zero_of(m[0]->dtype));
}

/* ---- pm_reduce_load_collapse ---- */

/* (x + y) != c -> x != c - y, y and c outside the loop */
static UOp *lift_add_ne(RwCtx *rw, UOp *root, UOp **m) { /* x y c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (!no_range(m[1]) || !no_range(m[2])) return NULL;
  return uop_ne(m[0], uop_sub(uop_cast(m[2], m[1]->dtype), m[1]));
}

/* sum over r of (idx != r ? 0 : expr) -> (0 <= idx < N) ? expr[r := idx] : 0 */
static UOp *select_one(RwCtx *rw, UOp *red, UOp **m) { /* red idx rc expr r */
  TG_UNUSED(rw);
  UOp *r = m[4], *rc = m[2];
  if (!reduce_add0(red) || red->nsrc != 2 || red->src[1] != r) return NULL;
  if (!(rc == r || (rc->op == TG_OP_CAST && rc->src[0] == r))) return NULL;
  UOp *ic = uop_cast(m[1], r->dtype);
  UOp *v = uop_and(uop_not(uop_lt(ic, uop_const_like_int(r, 0))), uop_lt(ic, r->src[0]));
  UOp *w[3] = {v, ic, uop_invalid()};
  UOp *valid_idx = uop_new(TG_OP_WHERE, r->dtype, w, 3, arg_none());
  UOp *e = uop_substitute(m[3], &r, &valid_idx, 1);
  return uop_where(v, e, zero_of(e->dtype));
}

static const Rule reduce_collapse_rules[] = {
    RULE("(CMPLT {(ADD x y)|(CAST (ADD x y))} c)", lift_add_lt, NULL),
    RULE("(CMPLT (MUL x y) c)", lift_mul_lt, NULL),
    RULE("red:(REDUCE (WHERE (CMPLT r:RANGE upper) val 0) r)", sum_lt_upper, NULL),
    RULE("red:(REDUCE (WHERE (CMPLT r:RANGE lower) 0 val) r)", sum_ge_lower, NULL),
    RULE("red:(REDUCE (WHERE (AND (CMPNE (CMPLT r:RANGE lower) true) (CMPLT r upper)) val 0) r)", sum_between, NULL),
    RULE("red:(REDUCE (WHERE cond x i:invalid) ...)", gate_out_of_reduce, NULL),
    RULE("red:(REDUCE (ADD x y) ...)", split_sum, NULL),
    RULE("red:(REDUCE (WHERE (AND x:PARAM y) c 0) ...)", param_and_out, NULL),
    RULE("(MUL x (CAST gate.bool))", mul_casted_bool, NULL),
};

static const Rule reduce_load_collapse_rules[] = {
    RULE("(CMPNE {(ADD x y)|(CAST (ADD x y))} c)", lift_add_ne, NULL),
    RULE("red:(REDUCE (WHERE (CMPNE idx rc) 0 expr) r:RANGE)", select_one, NULL),
};

static const RuleSet *load_collapse_pm(void) {
  static RuleSet *collapse_set, *load_set;
  static const RuleSet *pm;
  if (!collapse_set || !load_set || !pm) {
    collapse_set = PM_NEW("pm_reduce_collapse", reduce_collapse_rules);
    load_set = PM_NEW("pm_reduce_load_collapse", reduce_load_collapse_rules);
    pm = pm_concat(pm_concat(pm_concat(cg_pm_reduce_unparented(), collapse_set), sym_symbolic()), load_set);
  }
  return pm;
}

typedef struct GateCtx { CgRanges *rr; UOp *r; } GateCtx;

/* REDUCE(ADD)(u, r) -> u with r collapsed, or NULL */
static UOp *reduce_load_collapse(RwCtx *rw, UOp *red, UOp **m) { /* red u */
  TG_UNUSED(rw);
  if (!reduce_add0(red) || red->nsrc != 2 || red->src[1]->op != TG_OP_RANGE) return NULL;
  UOp *r = red->src[1], *u = m[1];
  CgRanges rr;
  cg_ranges_init(&rr);
  UOpVec topo = {0}, included = {0}, from = {0}, to = {0};
  uop_toposort(u, NULL, NULL, &topo);
  /* the part of the body that depends on r (a node outside it ends the walk, as tinygrad's gated toposort) */
  for (size_t i = 0; i < topo.len; i++)
    if (cg_vec_has(cg_ranges_of(&rr, topo.data[i]), r)) tg_vec_push(&included, topo.data[i]);
  UOp *ret = NULL;
  bool ok = true;
  for (size_t i = 0; i < included.len && ok; i++)
    ok = included.data[i]->op != TG_OP_STORE && included.data[i]->op != TG_OP_REDUCE;
  if (ok) {
    for (size_t i = 0; i < included.len; i++) {
      UOp *x = included.data[i];
      for (uint32_t k = 0; k < x->nsrc; k++) {
        UOp *s = x->src[k];
        if (cg_vec_has(&included, s) || cg_vec_has(&from, s) || s->op == TG_OP_CONST || s->op == TG_OP_PARAM ||
            s->op == TG_OP_BUFFER)
          continue;
        ParamArg p;
        memset(&p, 0, sizeof p);
        p.slot = -1;
        p.multiple_of = 1;
        p.axis = -1;
        p.vmin = uop_vmin(s);
        p.vmax = uop_vmax(s);
        p.dtype = s->dtype->scalar;
        p.addrspace = ADDR_ALU;
        snprintf(p.name, sizeof p.name, "in%zu", from.len);
        tg_vec_push(&from, s);
        tg_vec_push(&to, uop_new(TG_OP_PARAM, s->dtype, NULL, 0, arg_param(&p)));
      }
    }
    UOp *body = from.len ? uop_substitute(u, from.data, to.data, from.len) : u;
    UOp *fx = reduce_of(body, &r, 1, red);
    UOp *sink = pm_graph_rewrite(fx, load_collapse_pm(), NULL, 0, NULL, "reduce_collapse");
    if (sink && no_range(sink)) ret = to.len ? uop_substitute(sink, to.data, from.data, to.len) : sink;
    if (!sink) tg_clear_error(); /* a collapse that does not work out leaves the REDUCE as it is */
  }
  cg_ranges_free(&rr);
  tg_vec_free(&topo);
  tg_vec_free(&included);
  tg_vec_free(&from);
  tg_vec_free(&to);
  return ret;
}

/* keep math off a loaded index (it could overflow): undo the lift above once the load collapsed */
static UOp *unlift_loaded(RwCtx *rw, UOp *root, UOp **m) { /* x y c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (!no_load(m[1]) || !no_load(m[2]) || no_load(m[0])) return NULL;
  return uop_lt(m[0], uop_sub(m[2], m[1]));
}

static const Rule load_collapse_rules[] = {
    RULE("red:(REDUCE u _)", reduce_load_collapse, NULL),
    RULE("(CMPLT (ADD x.weakint y) c)", unlift_loaded, NULL),
};

UOp *cg_load_collapse(UOp *sink) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_load_collapse", load_collapse_rules);
  return pm_graph_rewrite(sink, pm, NULL, 0, NULL, "load collapse");
}
