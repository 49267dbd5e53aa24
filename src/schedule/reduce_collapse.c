/* reduce_collapse.c — tinygrad's pm_reduce_simplify (codegen/simplify.py), run in the scheduler's cleanup:
 *
 *   reduce_unparented  a REDUCE over ranges its source does not use: ADD multiplies by their sizes, MAX drops them;
 *   reduce_collapse    an ADD REDUCE whose range only feeds comparisons and gates is summed in closed form: the part
 *                      of the source that depends on the range is cut out (everything else becomes an ALU Variable),
 *                      rewritten by the collapse rules below, and kept only if no RANGE is left. This is what makes
 *                      arange-style index math (gather, argmax, one-hot) free: sum_r [r < n] is min(n, N). */
#include "schedule/sched_internal.h"

#include "uop/symbolic.h"

#include <stdio.h>

static bool vec_has(const UOpVec *v, const UOp *x) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == x) return true;
  return false;
}

/* a binary op as tinygrad's Tensor mixin builds it: both sides promoted to the common dtype, a weak constant stays
 * a (re-typed) weak constant, anything else is CAST */
static UOp *promoted(UOp *t, const DType *out) {
  if (uop_is_invalid(t)) return t;
  if (dt_is_weak(t->dtype) && t->op == TG_OP_CONST) return uop_const(dt_weak(out), t->arg.c);
  return uop_cast(t, out);
}

static UOp *mix(TgOp op, UOp *a, UOp *b) {
  const DType *out = dt_least_upper(a->dtype, b->dtype);
  return uop_alu2(op, promoted(a, out), promoted(b, out));
}
static UOp *mix_sub(UOp *a, UOp *b) {
  const DType *out = dt_least_upper(a->dtype, b->dtype);
  return uop_add(promoted(a, out), uop_neg(promoted(b, out)));
}
static UOp *mix_int(int64_t v) { return uop_const_int(DT_WEAKINT, v); }
/* tinygrad minimum: -max(-a, -b) */
static UOp *mix_min(UOp *a, UOp *b) {
  const DType *out = dt_least_upper(a->dtype, b->dtype);
  return uop_neg(uop_max(uop_neg(promoted(a, out)), uop_neg(promoted(b, out))));
}

static bool no_range(UOp *u) { return !uop_op_in_backward_slice_with_self(u, TG_OP_RANGE); }

static UOp *reduce_of(UOp *x, UOp *const *ranges, size_t n, const UOp *like) {
  UOp *src[SCHED_MAX_IDX + 1];
  TG_ASSERT(n <= SCHED_MAX_IDX, "");
  src[0] = x;
  for (size_t i = 0; i < n; i++) src[1 + i] = ranges[i];
  return uop_new(TG_OP_REDUCE, x->dtype, src, n + 1, like->arg);
}

/* ---- reduce_unparented ---- */

static UOp *reduce_unparented(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (red->arg.kind != ARG_REDUCE) return NULL;
  TgOp rop = (TgOp)red->arg.red.op;
  if (rop != TG_OP_ADD && rop != TG_OP_MAX) return NULL; /* MUL would need POW */
  UOpVec rs = {0}, parented = {0}, unparented = {0};
  sched_ranges(red->src[0], &rs);
  for (uint32_t i = 1; i < red->nsrc; i++) {
    if (vec_has(&rs, red->src[i])) tg_vec_push(&parented, red->src[i]);
    else tg_vec_push(&unparented, red->src[i]);
  }
  UOp *ret = NULL;
  if (unparented.len) {
    ret = parented.len || red->dtype != red->src[0]->dtype ? reduce_of(red->src[0], parented.data, parented.len, red)
                                                            : red->src[0];
    if (rop == TG_OP_ADD)
      for (size_t i = 0; i < unparented.len; i++) ret = mix(TG_OP_MUL, ret, unparented.data[i]->src[0]);
  }
  tg_vec_free(&rs);
  tg_vec_free(&parented);
  tg_vec_free(&unparented);
  return ret;
}

/* ---- the collapse rules ---- */

/* (x+y) < c  ->  x < c-y, when y and c do not depend on a range */
static UOp *lift_add_lt(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(root);
  UOp *x = m[0], *y = m[1], *c = m[2];
  if (!no_range(y) || !no_range(c)) return NULL;
  return mix(TG_OP_CMPLT, x, mix_sub(c, y));
}

/* (x*y) < c  ->  x < (c+y-1)//y, for a positive integer y */
static UOp *lift_mul_lt(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(root);
  UOp *x = m[0], *y = m[1], *c = m[2];
  if (!no_range(y) || !no_range(c) || !dt_is_int(y->dtype) || uop_vmin(y) <= 0) return NULL;
  return mix(TG_OP_CMPLT, x, mix(TG_OP_FLOORDIV, mix_sub(mix(TG_OP_ADD, c, y), mix_int(1)), y));
}

/* sum over r in [0,N) of [lower <= r < upper] * val  ->  clamp(min(upper,N) - max(lower,0), 0, N) * val */
static UOp *bounded_sum(UOp *r, UOp *val, UOp *lower, UOp *upper) {
  if (!no_range(val)) return NULL;
  UOp *n = r->src[0];
  UOp *hi = upper ? mix_min(upper, n) : n;
  UOp *lo = lower ? mix(TG_OP_MAX, lower, mix_int(0)) : uop_const_like_int(r, 0);
  UOp *d = mix_sub(hi, lo);
  d = mix_min(mix(TG_OP_MAX, d, mix_int(0)), n);
  return mix(TG_OP_MUL, d, val);
}

static bool is_zero(const UOp *u) {
  return u->op == TG_OP_CONST && ((u->arg.c.kind == CK_INT && u->arg.c.i == 0) || (u->arg.c.kind == CK_FLOAT && u->arg.c.f == 0) ||
                                  (u->arg.c.kind == CK_BOOL && !u->arg.c.b));
}

static UOp *sum_of_range_gate(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(m);
  if (red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD || red->nsrc != 2) return NULL;
  UOp *w = red->src[0], *r = red->src[1];
  if (w->op != TG_OP_WHERE || r->op != TG_OP_RANGE) return NULL;
  UOp *cond = w->src[0], *t = w->src[1], *f = w->src[2];
  /* (r < upper).where(val, 0) and (r < lower).where(0, val) */
  if (cond->op == TG_OP_CMPLT && cond->src[0] == r) {
    if (is_zero(f)) return bounded_sum(r, t, NULL, cond->src[1]);
    if (is_zero(t)) return bounded_sum(r, f, cond->src[1], NULL);
  }
  /* ((r < lower) != true) & (r < upper) */
  if (cond->op == TG_OP_AND && is_zero(f)) {
    UOp *a = cond->src[0], *b = cond->src[1];
    for (int k = 0; k < 2; k++) {
      UOp *nl = k ? b : a, *up = k ? a : b;
      if (nl->op == TG_OP_CMPNE && nl->src[1]->op == TG_OP_CONST && nl->src[1]->arg.c.kind == CK_BOOL && nl->src[1]->arg.c.b &&
          nl->src[0]->op == TG_OP_CMPLT && nl->src[0]->src[0] == r && up->op == TG_OP_CMPLT && up->src[0] == r)
        return bounded_sum(r, t, nl->src[0]->src[1], up->src[1]);
    }
  }
  return NULL;
}

/* cond.where(x, Invalid) summed: the gate moves out */
static UOp *sum_of_invalid_gate(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  UOp *cond = m[0], *x = m[1], *inv = m[2];
  if (red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD || !no_range(cond)) return NULL;
  return uop_where(cond, reduce_of(x, red->src + 1, red->nsrc - 1, red), inv);
}

/* sum(x+y) -> sum(x) + sum(y) */
static UOp *sum_of_add(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  if (red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD) return NULL;
  return mix(TG_OP_ADD, reduce_of(m[0], red->src + 1, red->nsrc - 1, red), reduce_of(m[1], red->src + 1, red->nsrc - 1, red));
}

/* sum((PARAM x & y).where(c, 0)) -> sum(y.where(c, 0)) * x */
static UOp *sum_of_param_and(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  UOp *x = m[0], *y = m[1], *c = m[2];
  if (red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD) return NULL;
  UOp *w = uop_where(y, c, promoted(mix_int(0), dt_least_upper(c->dtype, DT_WEAKINT)));
  return mix(TG_OP_MUL, reduce_of(w, red->src + 1, red->nsrc - 1, red), x);
}

/* x * CAST(bool gate) -> gate.where(x, 0) */
static UOp *mul_casted_bool(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  TG_UNUSED(root);
  return uop_where(m[1], m[0], promoted(mix_int(0), dt_least_upper(m[0]->dtype, DT_WEAKINT)));
}

static const Rule collapse_rules[] = {
  RULE("(CMPLT {(ADD x y)|(CAST (ADD x y))} c)", lift_add_lt, NULL),
  RULE("(CMPLT (MUL x y) c)", lift_mul_lt, NULL),
  RULE("(REDUCE WHERE RANGE)", sum_of_range_gate, NULL),
  RULE("(REDUCE (WHERE cond x i:invalid) ...)", sum_of_invalid_gate, NULL),
  RULE("(REDUCE (ADD x y) ...)", sum_of_add, NULL),
  RULE("(REDUCE (WHERE (AND x:PARAM y) c 0) ...)", sum_of_param_and, NULL),
  RULE("(MUL x (CAST gate.bool))", mul_casted_bool, NULL),
};

static const Rule unparented_rules[] = {RULE("REDUCE", reduce_unparented, NULL)};

static const RuleSet *pm_reduce_collapse(void) {
  static const RuleSet *pm;
  static RuleSet *unparented, *collapse; /* kept in statics: the concatenation does not own its parts */
  if (!unparented) unparented = PM_NEW("reduce unparented", unparented_rules);
  if (!collapse) collapse = PM_NEW("reduce collapse", collapse_rules);
  if (!pm) pm = pm_concat(pm_concat(unparented, collapse), sym_symbolic());
  return pm;
}

/* ---- reduce_collapse ---- */

static UOp *alu_param(const char *name, UOp *like) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = -1;
  p.multiple_of = 1;
  p.axis = -1;
  p.vmin = uop_vmin(like);
  p.vmax = uop_vmax(like);
  p.dtype = like->dtype;
  p.addrspace = ADDR_ALU;
  snprintf(p.name, sizeof p.name, "%s", name);
  return uop_new(TG_OP_PARAM, like->dtype, NULL, 0, arg_param(&p));
}

/* the nodes of u's graph that r flows into (tinygrad: u.toposort(gate=lambda x: r in x.ranges)) */
static void nodes_with_range(UOp *u, UOp *r, UOpVec *out) {
  UOpVec topo = {0};
  uop_toposort(u, NULL, NULL, &topo);
  UOpMap has;
  uopmap_init(&has);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *x = topo.data[i];
    bool h = x == r;
    for (uint32_t k = 0; k < x->nsrc && !h; k++) h = uopmap_get(&has, x->src[k]) != NULL;
    if (h && (x->op == TG_OP_END || x->op == TG_OP_REDUCE || x->op == TG_OP_STAGE))
      for (uint32_t k = 1; k < x->nsrc; k++)
        if (x->src[k] == r || (x->src[k]->op != TG_OP_RANGE && uopmap_get(&has, x->src[k]))) h = false;
    if (h) uopmap_put(&has, x, x);
  }
  /* the same nodes in the order tinygrad's gated toposort lists them */
  UOpVec stack = {0};
  UOpMap done;
  uopmap_init(&done);
  if (uopmap_get(&has, u)) tg_vec_push(&stack, u);
  TG_VEC(bool) visited = {0};
  tg_vec_push(&visited, false);
  while (stack.len) {
    UOp *x = stack.data[stack.len - 1];
    bool v = visited.data[visited.len - 1];
    stack.len--;
    visited.len--;
    if (uopmap_get(&done, x)) continue;
    if (!v) {
      tg_vec_push(&stack, x);
      tg_vec_push(&visited, true);
      for (uint32_t k = x->nsrc; k-- > 0;)
        if (uopmap_get(&has, x->src[k])) {
          tg_vec_push(&stack, x->src[k]);
          tg_vec_push(&visited, false);
        }
    } else {
      uopmap_put(&done, x, x);
      tg_vec_push(out, x);
    }
  }
  tg_vec_free(&stack);
  tg_vec_free(&visited);
  uopmap_free(&done);
  uopmap_free(&has);
  tg_vec_free(&topo);
}

static UOp *reduce_collapse(RwCtx *rw, UOp *red, UOp **m) {
  TG_UNUSED(rw);
  if (red->arg.kind != ARG_REDUCE || red->arg.red.op != TG_OP_ADD || red->arg.red.naxes != 0) return NULL;
  UOp *u = m[0];
  for (uint32_t ri = 1; ri < red->nsrc; ri++) {
    UOp *r = red->src[ri];
    UOpVec inc = {0}, from = {0}, to = {0};
    nodes_with_range(u, r, &inc);
    bool bad = false;
    for (size_t i = 0; i < inc.len; i++) bad |= inc.data[i]->op == TG_OP_STORE || inc.data[i]->op == TG_OP_REDUCE;
    for (size_t i = 0; i < inc.len && !bad; i++) {
      UOp *x = inc.data[i];
      for (uint32_t k = 0; k < x->nsrc; k++) {
        UOp *s = x->src[k];
        if (vec_has(&inc, s) || vec_has(&from, s) || s->op == TG_OP_CONST || s->op == TG_OP_PARAM || s->op == TG_OP_BUFFER)
          continue;
        char name[32];
        snprintf(name, sizeof name, "in%zu", from.len);
        tg_vec_push(&from, s);
        tg_vec_push(&to, alu_param(name, s));
      }
    }
    UOp *res = NULL;
    if (!bad) {
      UOp *fxn = uop_substitute(u, from.data, to.data, from.len);
      UOp *rsrc[2] = {fxn, r};
      fxn = uop_new(TG_OP_REDUCE, fxn->dtype, rsrc, 2, arg_reduce(TG_OP_ADD, 0));
      UOp *sink = pm_graph_rewrite(fxn, pm_reduce_collapse(), NULL, 0, NULL, "reduce_collapse");
      if (sink && no_range(sink)) res = uop_substitute(sink, to.data, from.data, to.len);
    }
    tg_vec_free(&inc);
    tg_vec_free(&from);
    tg_vec_free(&to);
    if (!res) return NULL;
    u = res;
  }
  return u;
}

static const Rule simplify_rules[] = {
  RULE("REDUCE", reduce_unparented, NULL),
  RULE("(REDUCE u ...)", reduce_collapse, NULL),
};

const RuleSet *sched_pm_reduce_simplify(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("reduce simplify", simplify_rules);
  return pm;
}
